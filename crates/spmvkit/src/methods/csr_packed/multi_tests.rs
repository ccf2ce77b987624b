//! `csr-packed` with k vectors (issue #24): the CPU mirror through `Plan::apply_multi` against
//! the oracle for k vectors on the edge corpus and on matrices with long rows, k ∈ {1, 2, 3, 8,
//! 33, 256}, both orders, β = 0 (Y of NaN) and β ≠ 0, f32 and f64, every value mode; the pass
//! and load rules; the parameter; `update_values`. On a GPU (skipped without one, failing under
//! `SPMVKIT_REQUIRE_GPU=1`): the kernel bit for bit against the mirror and against csr-packed's
//! own SpMV per column, within the oracle's tolerance, for every `spmm_cols`, with an X aligned
//! only to its elements, and after `update_values`.

use super::{pass_cols, x_load, PASS_COLS};
use crate::bench::test_vector;
use crate::matrix::{Csr, DenseOrder, MultiShape};
use crate::methods::csr_packed::encode::ValueCodes;
use crate::methods::csr_packed::gpu::mm_entry;
use crate::methods::csr_packed::KERNEL;
use crate::methods::spmm::cpu::column;
use crate::methods::spmm::{check_multi, oracle_multi, MultiKernel, MultiPath};
use crate::methods::{Backend, Plan, PlanOptions, PrepareFor, ValueUpdate};
use crate::scalar::Scalar;

const KS: [usize; 6] = [1, 2, 3, 8, 33, 256];
const PACKED: MultiPath = MultiPath::Kernel(MultiKernel::Packed);

fn opts(backend: Backend) -> PlanOptions {
    PlanOptions {
        backend: Some(backend),
        ..Default::default()
    }
}

/// `a`'s pattern with its values drawn from `distinct` values (entry k takes value
/// 1 + (7919·k mod distinct) / 8), so that the layout takes the matching value codes.
fn with_distinct<T: Scalar>(a: &Csr<T>, distinct: usize) -> Csr<T> {
    let vals = (0..a.nnz())
        .map(|k| T::from_f64(1.0 + (k * 7919 % distinct) as f64 / 8.0))
        .collect();
    Csr::with_pattern(a.pattern().clone(), vals).unwrap()
}

/// The value modes: (label, distinct values or the matrix's own, extra parameter).
const KINDS: [(&str, Option<usize>, &str); 8] = [
    ("own values", None, ""),
    ("constant", Some(1), ""),
    ("1-bit", Some(2), ""),
    ("2-bit", Some(3), ""),
    ("4-bit", Some(5), ""),
    ("8-bit", Some(17), ""),
    ("16-bit", Some(300), ""),
    ("raw", None, "values=raw"),
];

/// The matrices: the edge corpus, a power-law matrix (rows over `long`: the block-per-row path)
/// and rows of one distant column (32-bit codes).
fn matrices<T: Scalar>() -> Vec<(String, Csr<T>)> {
    let mut m: Vec<(String, Csr<T>)> = crate::gen::corpus::edge_cases()
        .into_iter()
        .map(|(n, a)| (n, a.cast()))
        .collect();
    for spec in ["powerlaw:1500,9", "hugerow:200,3,600,ncols=70000"] {
        m.push((spec.into(), crate::gen::generate::<T>(spec).unwrap()));
    }
    m
}

/// (X, Y0) for `a` and `shape`, deterministic, entries in [-1, 1].
fn blocks<T: Scalar>(a: &Csr<T>, shape: MultiShape) -> (Vec<T>, Vec<T>) {
    let x = test_vector::<T>(shape.len(a.ncols()).unwrap(), 31 + shape.k as u64);
    let y = test_vector::<T>(shape.len(a.nrows()).unwrap(), 32 + shape.k as u64);
    (x, y)
}

/// What a case runs: (what, the plans made for its matrix, the matrix, shape, α, X, β, Y0),
/// returning its failures.
type Case<'a, T, P> = &'a mut dyn FnMut(&str, &mut P, &Csr<T>, MultiShape, T, &[T], T, &[T]) -> Vec<String>;

/// Every value mode of `csr-packed` (with `params` added) on every matrix, k, order and β
/// within `budget` multiply-adds per (matrix, k): `make` makes the plans of a (matrix, spec)
/// once, `run` runs a case on them; the cases run and the failures. The matrix's own values
/// and raw values take every k and β; the dictionary modes (whose decoding is the SpMV
/// kernel's) k = 3 (one partial pass) and 33 (passes and a partial one) with β ≠ 0.
fn each_case<T: PrepareFor, P>(
    params: &str,
    budget: usize,
    make: impl Fn(&str, &Csr<T>) -> P,
    run: Case<'_, T, P>,
) -> (usize, Vec<String>) {
    let (mut cases, mut failures) = (0, Vec::new());
    for (name, a) in matrices::<T>() {
        for (kind, distinct, extra) in KINDS {
            let a = distinct.map_or_else(|| a.clone(), |d| with_distinct(&a, d));
            let items: Vec<&str> = [params, extra].into_iter().filter(|s| !s.is_empty()).collect();
            let spec = match items.is_empty() {
                true => "csr-packed".to_string(),
                false => format!("csr-packed[{}]", items.join(";")),
            };
            let mut plans = make(&spec, &a);
            let every = distinct.is_none();
            for k in KS {
                if (k > 1 && a.nnz().max(a.nrows()) * k > budget) || !(every || k == 3 || k == 33)
                {
                    continue;
                }
                for order in DenseOrder::ALL {
                    let shape = MultiShape { k, order };
                    let (x, y0) = blocks(&a, shape);
                    for beta in [0.0, -0.5].into_iter().filter(|&b| every || b != 0.0) {
                        let (alpha, beta) = (T::from_f64(1.5), T::from_f64(beta));
                        let what = format!(
                            "{name} {kind} {spec} {} k={k} {order} β={beta:?}",
                            T::PRECISION
                        );
                        failures.extend(run(&what, &mut plans, &a, shape, alpha, &x, beta, &y0));
                        cases += 1;
                    }
                }
            }
        }
    }
    (cases, failures)
}

/// `apply_multi` of `plan` from Y0 (NaN when β = 0, which must not be read); its path must be
/// the packed kernel (k = 1: the SpMV call).
fn call<T: PrepareFor>(
    plan: &mut Plan<T>,
    shape: MultiShape,
    alpha: T,
    x: &[T],
    beta: T,
    y0: &[T],
) -> Result<Vec<T>, String> {
    let mut y = if beta == T::zero() {
        vec![T::from_f64(f64::NAN); y0.len()]
    } else {
        y0.to_vec()
    };
    // one vector is the plan's SpMV call (the same bits: each vector of the kernel is its SpMV)
    let want = match shape.k {
        1 => MultiPath::Kernel(MultiKernel::Spmv),
        _ => PACKED,
    };
    match plan.apply_multi(alpha, x, beta, &mut y, shape) {
        Ok(p) if p == want => Ok(y),
        Ok(p) => Err(format!("path {p}, want {want}")),
        Err(e) => Err(e.to_string()),
    }
}

/// The worst vector of `y` against the oracle, as a failure.
fn against_oracle<T: Scalar>(
    what: &str,
    a: &Csr<T>,
    shape: MultiShape,
    (alpha, beta): (T, T),
    x: &[T],
    y0: &[T],
    y: &[T],
) -> Option<String> {
    let refs = oracle_multi(a, alpha, x, beta, y0, shape).unwrap();
    let c = check_multi(&refs, y, shape);
    (!c.check.ok).then(|| {
        format!(
            "{what}: vector {} row {} off by {:.3e}",
            c.worst_vector, c.check.worst_row, c.check.max_rel_err
        )
    })
}

/// The first entry where `got` and `want` differ in bits.
fn bitwise<T: Scalar>(what: &str, got: &[T], want: &[T], whose: &str) -> Option<String> {
    (0..got.len())
        .find(|&i| got[i].to_bits_u64() != want[i].to_bits_u64())
        .map(|i| {
            format!(
                "{what}: entry {i} {} against {} ({whose})",
                got[i].to_f64(),
                want[i].to_f64()
            )
        })
}

fn cpu_corpus<T: PrepareFor>() {
    let make = |spec: &str, a: &Csr<T>| Plan::new(spec, a, &opts(Backend::Cpu)).unwrap();
    let mut run = |what: &str, plan: &mut Plan<T>, a: &Csr<T>, shape, al, x: &[T], be, y0: &[T]| {
        match call(plan, shape, al, x, be, y0) {
            Ok(y) => against_oracle(what, a, shape, (al, be), x, y0, &y)
                .into_iter()
                .collect(),
            Err(e) => vec![format!("{what}: {e}")],
        }
    };
    let (cases, failures) = each_case::<T, _>("", 1 << 16, make, &mut run);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(cases > 500, "only {cases} cases ran");
}

#[test]
fn mirror_matches_the_oracle_for_k_vectors_f64() {
    cpu_corpus::<f64>();
}

#[test]
fn mirror_matches_the_oracle_for_k_vectors_f32() {
    cpu_corpus::<f32>();
}

/// The value modes the cases claim are the ones the layouts take.
#[test]
fn the_cases_cover_every_value_mode() {
    let a = crate::gen::generate::<f64>("powerlaw:1500,9").unwrap();
    for ((kind, distinct, extra), want) in KINDS.iter().skip(1).zip([
        "none",
        "1-bit",
        "2-bit",
        "4-bit",
        "8-bit",
        "16-bit",
        "raw",
    ]) {
        let a = distinct.map_or_else(|| a.clone(), |d| with_distinct(&a, d));
        let spec = match extra.is_empty() {
            true => "csr-packed".to_string(),
            false => format!("csr-packed[{extra}]"),
        };
        let plan = Plan::new(&spec, &a, &opts(Backend::Cpu)).unwrap();
        let notes = plan.layout().notes();
        let values = notes.iter().find(|(k, _)| k == "values").unwrap();
        assert!(values.1.contains(want), "{kind}: {}", values.1);
    }
}

/// The pass rule: 32 bytes of an X row per nonzero by default, never more than k rounded up,
/// `spmm_cols` overriding; the load rule: row-major only, as wide as 16 bytes, C, k and the
/// alignment allow.
#[test]
fn passes_and_loads_follow_their_rules() {
    assert_eq!(pass_cols(8, 8, None), 4);
    assert_eq!(pass_cols(32, 4, None), 8);
    assert_eq!(pass_cols(3, 8, None), 4);
    assert_eq!(pass_cols(1, 4, None), 1);
    assert_eq!(pass_cols(256, 8, Some(8)), 8);
    assert_eq!(pass_cols(2, 8, Some(8)), 2);
    for k in 1..=300 {
        for eb in [4, 8] {
            for p in [None, Some(1), Some(2), Some(4), Some(8)] {
                assert!(PASS_COLS.contains(&pass_cols(k, eb, p)), "k={k} {p:?}");
            }
        }
    }
    let row = MultiShape::row_major;
    assert_eq!(x_load(row(8), 4, 8, 256), 2);
    assert_eq!(x_load(row(8), 8, 4, 256), 4);
    assert_eq!(x_load(row(6), 4, 4, 256), 2);
    assert_eq!(x_load(row(8), 4, 8, 8), 1);
    assert_eq!(x_load(row(3), 4, 8, 256), 1);
    assert_eq!(x_load(row(8), 1, 8, 256), 1);
    assert_eq!(x_load(MultiShape::col_major(8), 4, 8, 256), 1);
}

/// Every (value mode, vectors per pass) has its entry in the kernel's list.
#[test]
fn every_k_vector_entry_is_declared() {
    for v in ValueCodes::ALL {
        for c in PASS_COLS {
            assert!(KERNEL.entry(&mm_entry(v, c)).is_some(), "{v:?} C={c}");
        }
    }
}

/// `spmm_cols` takes 1, 2, 4, 8 and refuses the rest naming the key; the path is the packed
/// kernel on the CPU, and k vectors through columns when the plan reorders.
#[test]
fn the_parameter_and_the_paths() {
    let a = crate::gen::generate::<f64>("poisson2d:30").unwrap();
    let cpu = opts(Backend::Cpu);
    for c in [1, 2, 4, 8] {
        let plan = Plan::new(&format!("csr-packed[spmm_cols={c}]"), &a, &cpu).unwrap();
        assert_eq!(plan.multi_path(MultiShape::row_major(8)), PACKED);
    }
    for bad in ["3", "16", "x"] {
        let Err(e) = Plan::new(&format!("csr-packed[spmm_cols={bad}]"), &a, &cpu) else {
            panic!("spmm_cols={bad} was taken");
        };
        assert!(e.to_string().contains("spmm_cols"), "{e}");
    }
    let rcm = Plan::new("csr-packed[reorder=rcm]", &a, &cpu).unwrap();
    assert_eq!(rcm.multi_path(MultiShape::col_major(3)), MultiPath::Columns);
}

/// After `update_values` (re-encoded in place, or prepared again when the codes no longer
/// hold the values) the k-vector path computes with the new values.
fn update_values_case<T: PrepareFor>(backend: Backend) -> Vec<String> {
    let a = with_distinct(&crate::gen::generate::<T>("poisson2d:40").unwrap(), 3);
    let mut plan = Plan::new("csr-packed", &a, &opts(backend)).unwrap();
    let shape = MultiShape::row_major(8);
    let (x, y0) = blocks(&a, shape);
    let (alpha, beta) = (T::from_f64(1.5), T::from_f64(-0.5));
    let mut failures = Vec::new();
    let doubled: Vec<T> = a.vals().iter().map(|&v| v + v).collect();
    let many = with_distinct(&a, 1000);
    for (vals, want) in [
        (doubled, ValueUpdate::Reencoded),
        (many.vals().to_vec(), ValueUpdate::Reprepared),
    ] {
        call(&mut plan, shape, alpha, &x, beta, &y0).unwrap();
        let got = plan.update_values(&vals).unwrap();
        if got != want {
            failures.push(format!("{backend:?}: update {got:?}, want {want:?}"));
        }
        let b = Csr::with_pattern(a.pattern().clone(), vals).unwrap();
        match call(&mut plan, shape, alpha, &x, beta, &y0) {
            Ok(y) => failures.extend(against_oracle(
                &format!("{backend:?} after {want:?}"),
                &b,
                shape,
                (alpha, beta),
                &x,
                &y0,
                &y,
            )),
            Err(e) => failures.push(format!("{backend:?} after {want:?}: {e}")),
        }
    }
    failures
}

#[test]
fn update_values_reaches_the_k_vector_path() {
    let mut failures = update_values_case::<f64>(Backend::Cpu);
    failures.extend(update_values_case::<f32>(Backend::Cpu));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// On the GPU: the kernel against the mirror (bitwise) and the oracle for `params`.
fn gpu_against_mirror<T: PrepareFor>(params: &str) -> (usize, Vec<String>) {
    let make = |spec: &str, a: &Csr<T>| {
        let gpu = Plan::new(spec, a, &opts(Backend::Gpu)).unwrap();
        (gpu, Plan::new(spec, a, &opts(Backend::Cpu)).unwrap())
    };
    let mut run = |what: &str,
                   (gpu, cpu): &mut (Plan<T>, Plan<T>),
                   a: &Csr<T>,
                   shape,
                   al,
                   x: &[T],
                   be,
                   y0: &[T]| {
        let (yg, yc) = match (
            call(gpu, shape, al, x, be, y0),
            call(cpu, shape, al, x, be, y0),
        ) {
            (Ok(g), Ok(c)) => (g, c),
            (g, c) => return vec![format!("{what}: GPU {:?}, CPU {:?}", g.err(), c.err())],
        };
        let mut f: Vec<String> = bitwise(what, &yg, &yc, "the CPU mirror")
            .into_iter()
            .collect();
        f.extend(against_oracle(what, a, shape, (al, be), x, y0, &yg));
        f
    };
    each_case::<T, _>(params, 1 << 22, make, &mut run)
}

#[test]
fn gpu_k_vectors_match_the_mirror_bitwise_and_the_oracle() {
    let _guard = crate::methods::testmats::gpu_test_lock();
    let test = "gpu_k_vectors_match_the_mirror_bitwise_and_the_oracle";
    let Some(_gpu) = crate::testing::gpu_or_skip(test) else {
        return;
    };
    let (mut cases, mut failures) = (0, Vec::new());
    for params in ["", "spmm_cols=1", "spmm_cols=2", "spmm_cols=8", "prefetch=off;long=16"] {
        for (c, f) in [
            gpu_against_mirror::<f64>(params),
            gpu_against_mirror::<f32>(params),
        ] {
            cases += c;
            failures.extend(f);
        }
    }
    assert!(failures.is_empty(), "{} of {cases}:\n{}", failures.len(), failures.join("\n"));
}

/// On the GPU, each vector of a k-vector call is csr-packed's own SpMV of that vector, bit for
/// bit (the device plans of both, column by column).
#[test]
fn gpu_each_vector_is_the_spmv_of_that_vector() {
    let _guard = crate::methods::testmats::gpu_test_lock();
    let test = "gpu_each_vector_is_the_spmv_of_that_vector";
    let Some(_gpu) = crate::testing::gpu_or_skip(test) else {
        return;
    };
    let mut failures = Vec::new();
    for spec in ["poisson3d:12", "powerlaw:1500,9"] {
        let a = crate::gen::generate::<f64>(spec).unwrap();
        let mut plan = Plan::new("csr-packed", &a, &opts(Backend::Gpu)).unwrap();
        let (m, n) = (a.nrows(), a.ncols());
        for shape in [MultiShape::row_major(33), MultiShape::col_major(5)] {
            let (x, y0) = blocks(&a, shape);
            let y = call(&mut plan, shape, 1.5, &x, -0.5, &y0).unwrap();
            for c in 0..shape.k {
                let mut yc = column(&y0, m, shape, c);
                plan.apply(1.5, &column(&x, n, shape, c), -0.5, &mut yc)
                    .unwrap();
                let what = format!("{spec} {shape:?} vector {c}");
                failures.extend(bitwise(&what, &column(&y, m, shape, c), &yc, "its SpMV"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A row-major X aligned only to its elements (one element into an allocation) takes loads of
/// one value and still gives the mirror's bits.
fn unaligned_x<T: PrepareFor>(gpu: &std::sync::Arc<crate::gpu::Gpu>) -> Vec<String> {
    use cudarc::driver::DevicePtr;
    let a = crate::gen::generate::<T>("powerlaw:1500,9").unwrap();
    let mut failures = Vec::new();
    for spec in ["csr-packed", "csr-packed[spmm_cols=8]"] {
        let mut plan = Plan::new(spec, &a, &opts(Backend::Gpu)).unwrap();
        let mut cpu = Plan::new(spec, &a, &opts(Backend::Cpu)).unwrap();
        for k in [8, 32] {
            let shape = MultiShape::row_major(k);
            let (x, y0) = blocks(&a, shape);
            let mut padded = vec![T::zero()];
            padded.extend_from_slice(&x);
            let dx = gpu.upload(&padded).unwrap();
            let mut dy = gpu.upload(&y0).unwrap();
            gpu.synchronize().unwrap();
            let stream = gpu.stream();
            let xp = dx.device_ptr(stream).0 + T::BYTES as u64;
            // SAFETY: dx is a live buffer of x.len() + 1 elements on this context, dropped
            // after the synchronisation below.
            let ran = unsafe {
                let bx = crate::gpu::Borrowed::<T>::new(stream, xp, x.len()).unwrap();
                plan.apply_multi_device(T::from_f64(1.5), &bx, T::from_f64(-0.5), &mut dy, shape)
            };
            if let Err(e) = ran {
                failures.push(format!("{spec} k={k}: unaligned X: {e}"));
                continue;
            }
            let mut yg = vec![T::zero(); y0.len()];
            stream.memcpy_dtoh(&dy, &mut yg).unwrap();
            gpu.synchronize().unwrap();
            let yc = call(&mut cpu, shape, T::from_f64(1.5), &x, T::from_f64(-0.5), &y0).unwrap();
            let what = format!("{spec} {} k={k} unaligned X", T::PRECISION);
            failures.extend(bitwise(&what, &yg, &yc, "the CPU mirror"));
        }
    }
    failures
}

#[test]
fn gpu_unaligned_x_takes_narrower_loads() {
    let _guard = crate::methods::testmats::gpu_test_lock();
    let Some(gpu) = crate::testing::gpu_or_skip("gpu_unaligned_x_takes_narrower_loads") else {
        return;
    };
    let mut failures = unaligned_x::<f64>(&gpu);
    failures.extend(unaligned_x::<f32>(&gpu));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn gpu_update_values_reaches_the_k_vector_kernel() {
    let _guard = crate::methods::testmats::gpu_test_lock();
    let test = "gpu_update_values_reaches_the_k_vector_kernel";
    let Some(_gpu) = crate::testing::gpu_or_skip(test) else {
        return;
    };
    let mut failures = update_values_case::<f64>(Backend::Gpu);
    failures.extend(update_values_case::<f32>(Backend::Gpu));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
