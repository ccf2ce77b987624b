//! Test support for method rooms (compiled in tests only): a suite of awkward matrices (empty
//! shapes, 1×1, empty rows, tall, wide, a row longer than 2^16, power-law rows) and a checker
//! that runs a method's CPU mirror against the oracle in both precisions with several (α, β),
//! including β = 0 over a y full of NaN (which must not leak).

use crate::cpu::{check, oracle_spmv};
use crate::matrix::{Coo, Csr};
use crate::methods::{GenericMethod, Layout, Params};
use crate::scalar::Scalar;

/// A small deterministic generator (64-bit LCG, high bits).
pub(crate) struct Lcg(u64);

impl Lcg {
    pub(crate) fn new(seed: u64) -> Self {
        Lcg(seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407))
    }
    pub(crate) fn next_u32(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
    pub(crate) fn below(&mut self, n: u32) -> u32 {
        if n == 0 {
            0
        } else {
            self.next_u32() % n
        }
    }
    /// Uniform in [-1, 1).
    pub(crate) fn value(&mut self) -> f64 {
        self.next_u32() as f64 / (1u64 << 30) as f64 - 1.0
    }
}

/// A random matrix whose row lengths come from `len(rng, row)` (duplicates are summed).
pub(crate) fn random_rows(
    nrows: usize,
    ncols: usize,
    seed: u64,
    mut len: impl FnMut(&mut Lcg, usize) -> usize,
) -> Csr<f64> {
    let mut rng = Lcg::new(seed);
    let mut coo = Coo::new(nrows, ncols).expect("test shape");
    for r in 0..nrows {
        let n = if ncols == 0 { 0 } else { len(&mut rng, r) };
        for _ in 0..n {
            let c = rng.below(ncols as u32) as usize;
            let v = rng.value();
            coo.push(r, c, v).expect("in range");
        }
    }
    coo.to_csr()
}

/// The awkward-matrix suite, in f64.
pub(crate) fn suite() -> Vec<(&'static str, Csr<f64>)> {
    let mut out = vec![
        ("0x0", Csr::new(0, 0, vec![0], vec![], vec![]).expect("0x0")),
        ("0x5", Csr::new(0, 5, vec![0], vec![], vec![]).expect("0x5")),
        (
            "5x0",
            Csr::new(5, 0, vec![0; 6], vec![], vec![]).expect("5x0"),
        ),
        (
            "4x4 no entries",
            Csr::new(4, 4, vec![0; 5], vec![], vec![]).expect("empty"),
        ),
        (
            "1x1",
            Csr::new(1, 1, vec![0, 1], vec![0], vec![1.5]).expect("1x1"),
        ),
        (
            "1x1 empty",
            Csr::new(1, 1, vec![0, 0], vec![], vec![]).expect("1x1"),
        ),
    ];
    out.push((
        "empty rows",
        random_rows(300, 200, 1, |g, r| {
            if r % 3 == 0 || r % 7 == 0 {
                0
            } else {
                1 + g.below(9) as usize
            }
        }),
    ));
    out.push(("tall", random_rows(3000, 3, 2, |g, _| g.below(4) as usize)));
    out.push((
        "wide",
        random_rows(3, 5000, 3, |g, _| 100 + g.below(3000) as usize),
    ));
    out.push((
        "huge row",
        random_rows(40, 150_000, 4, |g, r| {
            if r == 17 {
                120_000
            } else {
                g.below(5) as usize
            }
        }),
    ));
    out.push((
        "power law",
        random_rows(2000, 1500, 5, |g, _| {
            let u = (g.next_u32() as f64 + 1.0) / (u32::MAX as f64 + 2.0);
            ((1.0 / u.powf(0.8)) as usize).min(1500)
        }),
    ));
    out.push((
        "medium rows",
        random_rows(500, 700, 6, |g, _| 20 + g.below(60) as usize),
    ));
    out.push((
        "long rows",
        random_rows(64, 4000, 7, |g, _| 200 + g.below(900) as usize),
    ));
    out.push((
        "short rows",
        random_rows(5000, 5000, 8, |g, _| 1 + g.below(3) as usize),
    ));
    out.push(("identity", Csr::identity(777).expect("identity")));
    out
}

/// The 8×8 matrix A of the TEB paper (teb.md, Fig. 1), the worked example of the `teb`, `pbc`
/// and `amf-csr` tests.
pub(crate) fn matrix_a() -> Csr<f64> {
    let rows: [&[(u32, f64)]; 8] = [
        &[(2, 2.0), (6, 1.0), (7, 8.0)],
        &[(0, 3.0)],
        &[(3, 6.0), (7, 9.0)],
        &[(0, 6.0), (1, 7.0)],
        &[(6, 2.0)],
        &[(4, 5.0), (5, 8.0)],
        &[(4, 6.0)],
        &[(0, 5.0), (5, 4.0), (6, 2.0), (7, 1.0)],
    ];
    let mut rp = vec![0u32];
    let (mut ci, mut v) = (Vec::new(), Vec::new());
    for r in rows {
        for &(c, x) in r {
            ci.push(c);
            v.push(x);
        }
        rp.push(ci.len() as u32);
    }
    Csr::new(8, 8, rp, ci, v).unwrap()
}

/// The 3×3 worked example of the small rooms, exactly: [1 0 2; 0 0 0; 3 4 5] · [1, 2, 3] =
/// [7, 0, 26], so y = 2·Ax + 0.5·[2, 4, 6] = [15, 2, 55]; with β = 0 the y of NaN is not read.
pub(crate) fn check_small_worked_example<M: GenericMethod>(m: &M) {
    let a = Csr::<f64>::new(
        3,
        3,
        vec![0, 2, 2, 5],
        vec![0, 2, 0, 1, 2],
        vec![1.0, 2.0, 3.0, 4.0, 5.0],
    )
    .expect("3x3");
    let l = m.prepare(&a, &Params::new()).expect("prepare");
    let mut y = [2.0, 4.0, 6.0];
    l.run_cpu(2.0, &[1.0, 2.0, 3.0], 0.5, &mut y).expect("run");
    assert_eq!(y, [15.0, 2.0, 55.0]);
    let mut y = [f64::NAN; 3];
    l.run_cpu(1.0, &[1.0, 2.0, 3.0], 0.0, &mut y).expect("run");
    assert_eq!(y, [7.0, 0.0, 26.0]);
}

/// x and y for a matrix: values in [-1, 1), reproducible.
pub(crate) fn vectors<T: Scalar>(nrows: usize, ncols: usize, seed: u64) -> (Vec<T>, Vec<T>) {
    let mut g = Lcg::new(seed);
    let x = (0..ncols).map(|_| T::from_f64(g.value())).collect();
    let y = (0..nrows).map(|_| T::from_f64(g.value())).collect();
    (x, y)
}

/// Runs `layout` (built from `a`) against the oracle with several (α, β); panics with `what`
/// and the case on a mismatch. β = 0 starts from a y full of NaN.
pub(crate) fn check_layout<T: Scalar>(what: &str, a: &Csr<T>, layout: &dyn Layout<T>) {
    let (x, y0) = vectors::<T>(a.nrows(), a.ncols(), 99);
    for &(alpha, beta) in &[(1.0, 0.0), (2.5, 0.0), (1.0, 1.0), (-0.75, 0.5), (0.0, 2.0)] {
        let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
        let start: Vec<T> = if beta == T::zero() {
            vec![T::from_f64(f64::NAN); a.nrows()]
        } else {
            y0.clone()
        };
        let r = oracle_spmv(a, alpha, &x, beta, &start).expect("oracle");
        let mut y = start.clone();
        layout
            .run_cpu(alpha, &x, beta, &mut y)
            .unwrap_or_else(|e| panic!("{what}: run_cpu failed: {e}"));
        let c = check(&r, &y);
        assert!(
            c.ok,
            "{what} ({}) α={alpha} β={beta}: row {} off by {:.3e} (got {}, want {})",
            T::PRECISION,
            c.worst_row,
            c.max_rel_err,
            y.get(c.worst_row).copied().unwrap_or_default(),
            r.y.get(c.worst_row).copied().unwrap_or_default()
        );
    }
}

/// Checks a method over the whole suite in f32 and f64 with the given parameters.
pub(crate) fn check_method<M: GenericMethod>(m: &M, params: &Params) {
    let name = m.info().name;
    for (case, a) in suite() {
        let what = format!("{name} [{}] on {case}", params_text(params));
        let l = m.prepare(&a, params).expect("prepare f64");
        check_layout(&what, &a, l.as_ref());
        let a32: Csr<f32> = a.cast();
        let l = m.prepare(&a32, params).expect("prepare f32");
        check_layout(&what, &a32, l.as_ref());
    }
}

/// Checks a method over the shared edge-case corpus (`gen::corpus::edge_cases`) in f32 and f64.
pub(crate) fn check_method_on_corpus<M: GenericMethod>(m: &M, params: &Params) {
    check_method_on_corpus_where(m, params, |_| true);
}

/// [`check_method_on_corpus`] on the corpus matrices `keep` accepts.
pub(crate) fn check_method_on_corpus_where<M: GenericMethod>(
    m: &M,
    params: &Params,
    keep: impl Fn(&Csr<f64>) -> bool,
) {
    let name = m.info().name;
    for (case, a) in crate::gen::corpus::edge_cases() {
        if !keep(&a) {
            continue;
        }
        let what = format!("{name} [{}] on corpus {case}", params_text(params));
        let l = m.prepare(&a, params).expect("prepare f64");
        check_layout(&what, &a, l.as_ref());
        let a32: Csr<f32> = a.cast();
        let l = m.prepare(&a32, params).expect("prepare f32");
        check_layout(&what, &a32, l.as_ref());
    }
}

/// `Params` from `key=value` items (test input: a bad item panics).
pub(crate) fn params(items: &[&str]) -> Params {
    Params::parse(items.iter().copied()).unwrap_or_else(|e| panic!("params {items:?}: {e}"))
}

/// The suite's matrix called `name`.
pub(crate) fn suite_case(name: &str) -> Csr<f64> {
    suite()
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no suite matrix {name}"))
        .1
}

/// Prepares the method with `params` on every suite matrix and runs each layout twice
/// ([`assert_repeatable`]).
pub(crate) fn check_repeatable<M: GenericMethod>(m: &M, params: &Params) {
    for (_, a) in suite() {
        let l = m.prepare(&a, params).expect("prepare");
        assert_repeatable(&a, l.as_ref());
    }
}

/// Asserts that the method refuses to prepare the 4×4 identity with `bad`, naming it on a
/// failure.
pub(crate) fn assert_rejects<M: GenericMethod>(m: &M, bad: &[&str]) {
    let a = Csr::<f64>::identity(4).expect("identity");
    assert!(m.prepare(&a, &params(bad)).is_err(), "{bad:?}");
}

/// Runs a layout twice on the same input and asserts bitwise identical results.
pub(crate) fn assert_repeatable<T: Scalar>(a: &Csr<T>, layout: &dyn Layout<T>) {
    let (x, y0) = vectors::<T>(a.nrows(), a.ncols(), 7);
    let (mut y1, mut y2) = (y0.clone(), y0);
    let (alpha, beta) = (T::from_f64(1.25), T::from_f64(-0.5));
    layout.run_cpu(alpha, &x, beta, &mut y1).expect("run 1");
    layout.run_cpu(alpha, &x, beta, &mut y2).expect("run 2");
    assert!(y1
        .iter()
        .zip(&y2)
        .all(|(a, b)| a.to_bits_u64() == b.to_bits_u64()));
}

/// The tests every room writes alike, generated: `kernel_args_match_the_kernel`
/// ([`check_kernel_args`]) and, for each section given, `matches_oracle_on_suite`
/// ([`check_method`] with each parameter set), `matches_oracle_on_corpus`
/// ([`check_method_on_corpus`]), `gpu_matches_the_mirror` ([`check_gpu_against_mirror`]),
/// `repeatable` ([`check_repeatable`] with one set) and `rejects_bad_params` ([`assert_rejects`]
/// with each set). A parameter set is a list of `key=value` items; the sections keep this order:
///
/// ```ignore
/// crate::methods::testmats::room_tests! {
///     method: Merge,
///     kernel: KERNEL,
///     oracle: [[], ["threads=32", "items=1"]],
///     corpus: [[]],
///     gpu: [[]],
///     repeatable: [],
///     rejects: [["items=0"], ["threads=1024", "items=8"]],
/// }
/// ```
macro_rules! room_tests {
    (
        method: $m:expr
        $(, kernel: $k:expr)?
        $(, oracle: [$([$($op:literal),*]),* $(,)?])?
        $(, corpus: [$([$($cp:literal),*]),* $(,)?])?
        $(, gpu: [$([$($gp:literal),*]),* $(,)?])?
        $(, repeatable: [$($rp:literal),*])?
        $(, rejects: [$([$($bad:literal),*]),* $(,)?])?
        $(,)?
    ) => {
        $(
            #[test]
            fn kernel_args_match_the_kernel() {
                $crate::methods::testmats::check_kernel_args(&$k);
            }
        )?
        $(
            #[test]
            fn matches_oracle_on_suite() {
                $($crate::methods::testmats::check_method(
                    &$m,
                    &$crate::methods::testmats::params(&[$($op),*]),
                );)*
            }
        )?
        $(
            #[test]
            fn matches_oracle_on_corpus() {
                $($crate::methods::testmats::check_method_on_corpus(
                    &$m,
                    &$crate::methods::testmats::params(&[$($cp),*]),
                );)*
            }
        )?
        $(
            #[test]
            fn gpu_matches_the_mirror() {
                $($crate::methods::testmats::check_gpu_against_mirror(
                    &$m,
                    &$crate::methods::testmats::params(&[$($gp),*]),
                );)*
            }
        )?
        $(
            #[test]
            fn repeatable() {
                $crate::methods::testmats::check_repeatable(
                    &$m,
                    &$crate::methods::testmats::params(&[$($rp),*]),
                );
            }
        )?
        $(
            #[test]
            fn rejects_bad_params() {
                $($crate::methods::testmats::assert_rejects(&$m, &[$($bad),*]);)*
            }
        )?
    };
}
pub(crate) use room_tests;

fn params_text(p: &Params) -> String {
    p.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Checks a room's [`Kernels`](crate::gpu::Kernels) for the launch layer: the source compiles
/// for sm_90 in both precisions with the layout checks of its argument structs appended (see
/// `gpu::launch`), and in the PTX every declared entry has one parameter of its struct's size
/// (`Abi::Struct`) or one parameter per field, of the field's size (`Abi::Params`). Without
/// libnvrtc the calling test is skipped (a failure under `SPMVKIT_REQUIRE_GPU=1` or
/// `SPMVKIT_REQUIRE_NVRTC=1`).
pub(crate) fn check_kernel_args(k: &crate::gpu::Kernels) {
    use crate::gpu::launch::{Abi, FieldKind};
    use crate::scalar::Precision;
    let test = crate::testing::current_test()
        .unwrap_or_else(|| format!("{} argument structs", k.source.name));
    if !crate::testing::nvrtc_or_skip(&test) {
        return;
    }
    assert!(
        !k.entries.is_empty(),
        "{}: no entries declared",
        k.source.name
    );
    for p in Precision::ALL {
        let ptx = crate::gpu::compile_checked_ptx(k, p, "sm_90").unwrap_or_else(|e| panic!("{e}"));
        for e in k.entries {
            let head = format!(".entry {}(", e.name);
            let at = ptx
                .find(&head)
                .unwrap_or_else(|| panic!("{} {p}: no entry {}", k.source.name, e.name));
            let params = &ptx[at + head.len()..];
            let params = &params[..params.find(')').unwrap_or(params.len())];
            let params: Vec<&str> = params.split(',').filter(|s| s.contains(".param")).collect();
            let l = (e.args.layout)(p);
            let sizes: Vec<usize> = match e.abi {
                Abi::Struct => vec![l.size],
                Abi::Params => l
                    .fields
                    .iter()
                    .map(|f| match f.kind {
                        FieldKind::Int | FieldKind::Unsigned => 4,
                        FieldKind::Real => p.bytes(),
                        FieldKind::U64 | FieldKind::Double | FieldKind::Ptr { .. } => 8,
                        FieldKind::Struct(_) => f.nested.as_ref().map_or(0, |n| n.size),
                    })
                    .collect(),
            };
            assert_eq!(
                params.len(),
                sizes.len(),
                "{} {p}: {} parameters",
                k.source.name,
                e.name
            );
            for (param, size) in params.iter().zip(sizes) {
                let bits = format!("{}", size * 8);
                let fits = param.trim_end().ends_with(&format!("[{size}]"))
                    || param.contains(&format!(".b{bits} "))
                    || param.contains(&format!(".u{bits} "))
                    || param.contains(&format!(".s{bits} "))
                    || param.contains(&format!(".f{bits} "));
                assert!(
                    fits,
                    "{} {p}: {} takes `{}` where the Rust {} has {size} bytes",
                    k.source.name,
                    e.name,
                    param.trim(),
                    e.args.name
                );
            }
        }
    }
}

/// Serialises the library's GPU tests: they share one stream, and a CUDA-graph capture on it
/// must not take in another test's work. Every GPU test takes this first.
pub(crate) fn gpu_test_lock() -> std::sync::MutexGuard<'static, ()> {
    crate::testing::gpu_lock()
}

/// On a GPU (the calling test is skipped without one, a failure under `SPMVKIT_REQUIRE_GPU=1`),
/// runs the method's device layout on the suite in f32 and f64 with (α, β) = (1.5, 0) over a y
/// of NaN and (−0.75, 0.5), and compares with the CPU mirror: bit for bit when the method is
/// deterministic (the mirrors reproduce the kernels' arithmetic), else within the oracle
/// tolerance.
pub(crate) fn check_gpu_against_mirror<M: GenericMethod>(m: &M, params: &Params) {
    let _guard = gpu_test_lock();
    let test = crate::testing::current_test()
        .unwrap_or_else(|| format!("{} against its mirror", m.info().name));
    let Some(gpu) = crate::testing::gpu_or_skip(&test) else {
        return;
    };
    for (case, a) in suite() {
        gpu_case(m, params, &gpu, case, &a);
        gpu_case(m, params, &gpu, case, &a.cast::<f32>());
    }
}

/// One call of a layout on the GPU next to its CPU mirror, as [`for_each_gpu_run`] hands it on.
pub(crate) struct GpuRun<'a, T> {
    pub alpha: T,
    pub beta: T,
    pub x: &'a [T],
    /// y before the call.
    pub start: &'a [T],
    /// The CPU mirror's y.
    pub want: Vec<T>,
    /// The GPU's y.
    pub got: Vec<T>,
}

impl<T: Scalar> GpuRun<'_, T> {
    /// The first row where the GPU's y and the mirror's differ in their bits.
    pub(crate) fn first_bit_difference(&self) -> Option<usize> {
        (0..self.got.len()).find(|&i| self.got[i].to_bits_u64() != self.want[i].to_bits_u64())
    }

    /// The GPU's y against the oracle's for `a`.
    pub(crate) fn against_oracle(&self, a: &Csr<T>) -> crate::cpu::Check {
        let r = oracle_spmv(a, self.alpha, self.x, self.beta, self.start).expect("oracle");
        check(&r, &self.got)
    }
}

/// Uploads `l` (built from `a`) and runs it on the GPU and its mirror on the CPU with
/// (α, β) = (1.5, 0) over a y of NaN and (−0.75, 0.5), handing each pair of results to
/// `compare`; panics with `what` where the GPU fails.
pub(crate) fn for_each_gpu_run<T: Scalar>(
    gpu: &std::sync::Arc<crate::gpu::Gpu>,
    what: &str,
    a: &Csr<T>,
    l: &dyn Layout<T>,
    mut compare: impl FnMut(&GpuRun<T>),
) {
    let dl = l
        .upload(gpu)
        .unwrap_or_else(|e| panic!("{what}: upload: {e}"));
    let (x, y0) = vectors::<T>(a.nrows(), a.ncols(), 11);
    for &(alpha, beta) in &[(1.5, 0.0), (-0.75, 0.5)] {
        let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
        let start: Vec<T> = if beta == T::zero() {
            vec![T::from_f64(f64::NAN); a.nrows()]
        } else {
            y0.clone()
        };
        let mut want = start.clone();
        l.run_cpu(alpha, &x, beta, &mut want).expect("mirror");
        let dx = gpu.upload(&x).expect("upload x");
        let mut dy = gpu.upload(&start).expect("upload y");
        dl.run(gpu, alpha, &dx, beta, &mut dy)
            .unwrap_or_else(|e| panic!("{what}: run: {e}"));
        let mut got = vec![T::zero(); a.nrows()];
        gpu.download(&dy, &mut got)
            .unwrap_or_else(|e| panic!("{what}: download: {e}"));
        compare(&GpuRun {
            alpha,
            beta,
            x: &x,
            start: &start,
            want,
            got,
        });
    }
}

pub(crate) fn gpu_case<M: GenericMethod, T: Scalar>(
    m: &M,
    params: &Params,
    gpu: &std::sync::Arc<crate::gpu::Gpu>,
    case: &str,
    a: &Csr<T>,
) {
    let info = m.info();
    let what = format!("{} on {case} ({})", info.name, T::PRECISION);
    let l = m.prepare(a, params).expect("prepare");
    for_each_gpu_run(gpu, &what, a, l.as_ref(), |r| {
        if info.deterministic {
            if let Some(i) = r.first_bit_difference() {
                panic!(
                    "{what} α={} β={}: row {i}: GPU {} but CPU mirror {}",
                    r.alpha, r.beta, r.got[i], r.want[i]
                );
            }
        } else {
            let c = r.against_oracle(a);
            assert!(
                c.ok,
                "{what} α={} β={}: row {} off",
                r.alpha, r.beta, c.worst_row
            );
        }
    });
    // The exact problem on the same pattern: every correct order gives the oracle's y exactly.
    let p = crate::cpu::ExactProblem::new(a, 5).expect("exact problem");
    let dl = m
        .prepare(&p.a, params)
        .and_then(|l| l.upload(gpu))
        .unwrap_or_else(|e| panic!("{what}: exact problem: {e}"));
    let dx = gpu.upload(&p.x).expect("upload x");
    let mut dy = gpu.upload(&p.y0).expect("upload y");
    dl.run(gpu, p.alpha, &dx, p.beta, &mut dy)
        .unwrap_or_else(|e| panic!("{what}: exact problem: run: {e}"));
    let mut got = vec![T::zero(); a.nrows()];
    gpu.download(&dy, &mut got)
        .unwrap_or_else(|e| panic!("{what}: download: {e}"));
    let c = crate::cpu::check_exact(&p.reference, &got);
    assert!(
        c.ok,
        "{what}: exact problem: row {} off by {:.3e}",
        c.worst_row, c.max_rel_err
    );
}
