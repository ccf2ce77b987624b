//! GPU SpMM tests (issue #24): every multi-vector path on the GPU against the oracle for k
//! vectors (`spmvkit::methods::spmm::oracle_multi`): the row-split kernels (`csr-vector`), the
//! merge-path kernels (`merge`, also with shares of 3 steps: most rows span teams), cuSPARSE
//! SpMM (`cusparse`), the single-vector fallback (`csr-scalar`, and `csr-vector` reordered),
//! `auto`'s choice per shape,
//! on the edge corpus with k ∈ {1, 2, 3, 8, 33, 256}, both orders, β = 0 and β ≠ 0, f32 and f64;
//! the row-split and merge-path kernels bit for bit against their CPU mirror (every row-major
//! tile shape: variants of `csr-vector`'s `spmm_*` parameters; the merge path's tiles and shares
//! in both orders; and an X aligned only to its elements);
//! device blocks, the timing loop checked after it, and the device length errors.
//!
//! Without a GPU every test is skipped with a `skipped:` line (`spmvkit::testing`); with
//! `SPMVKIT_REQUIRE_GPU=1` a missing GPU fails. The tests share one GPU stream, so they take a
//! lock and run one at a time.

use spmvkit::bench::test_vector;
use spmvkit::gpu::{TimingConfig, TimingMode};
use spmvkit::matrix::{DenseOrder, MultiShape};
use spmvkit::methods::spmm::{check_multi, oracle_multi, MultiKernel, MultiPath};
use spmvkit::methods::PrepareFor;
use spmvkit::reorder::{Ordering, Reorder};
use spmvkit::testing::{gpu_lock, gpu_or_skip};
use spmvkit::{Backend, Csr, Error, Plan, PlanOptions, Scalar};

const KS: [usize; 6] = [1, 2, 3, 8, 33, 256];
/// The path of a block of one vector.
const SPMV: MultiPath = MultiPath::Kernel(MultiKernel::Spmv);
/// Multiply-adds per (matrix, k) above which a case is left to the smaller k.
const BUDGET: usize = 1 << 22;

fn opts(backend: Backend) -> PlanOptions {
    PlanOptions {
        backend: Some(backend),
        ..Default::default()
    }
}

fn blocks<T: Scalar>(a: &Csr<T>, shape: MultiShape) -> (Vec<T>, Vec<T>) {
    let x = test_vector::<T>(shape.len(a.ncols()).unwrap(), 21 + shape.k as u64);
    let y = test_vector::<T>(shape.len(a.nrows()).unwrap(), 22 + shape.k as u64);
    (x, y)
}

/// Every GPU path on the corpus in precision T; returns the failures.
fn corpus_on_gpu<T: PrepareFor>() -> (usize, Vec<String>) {
    let rcm = PlanOptions {
        reorder: Reorder::By(Ordering::Rcm),
        ..opts(Backend::Gpu)
    };
    let (mut passed, mut failures) = (0, Vec::new());
    for (name, a) in spmvkit::gen::corpus::edge_cases() {
        let a = a.cast::<T>();
        let mut plans = Vec::new();
        for (method, o, want) in [
            (
                "csr-vector",
                opts(Backend::Gpu),
                Some(MultiPath::Kernel(MultiKernel::RowSplit)),
            ),
            (
                "cusparse",
                opts(Backend::Gpu),
                Some(MultiPath::Kernel(MultiKernel::Cusparse)),
            ),
            (
                "merge",
                opts(Backend::Gpu),
                Some(MultiPath::Kernel(MultiKernel::Merge)),
            ),
            (
                "merge[spmm_share=3]",
                opts(Backend::Gpu),
                Some(MultiPath::Kernel(MultiKernel::Merge)),
            ),
            ("csr-scalar", opts(Backend::Gpu), Some(MultiPath::Columns)),
            ("csr-vector", rcm.clone(), Some(MultiPath::Columns)),
            // auto: whichever its trial keeps for the shape (never `auto` itself)
            ("auto[mode=model]", opts(Backend::Gpu), None),
        ] {
            if o.reorder != Reorder::None && a.nrows() != a.ncols() {
                continue;
            }
            match Plan::new(method, &a, &o) {
                Ok(p) => plans.push((method, p, want)),
                Err(e) => failures.push(format!("{name} {method}: plan: {e}")),
            }
        }
        for k in KS {
            if k > 1 && a.nnz().max(a.nrows()) * k > BUDGET {
                continue;
            }
            for order in DenseOrder::ALL {
                let shape = MultiShape { k, order };
                let (x, y0) = blocks(&a, shape);
                for beta in [0.0, -0.5] {
                    let (alpha, beta) = (T::from_f64(1.5), T::from_f64(beta));
                    let refs = oracle_multi(&a, alpha, &x, beta, &y0, shape).unwrap();
                    for (method, plan, want) in plans.iter_mut() {
                        let what =
                            format!("{name} {method} {} k={k} {order} β={beta:?}", T::PRECISION);
                        // β = 0 must not read Y: NaN there would show
                        let mut y = if beta == T::zero() {
                            vec![T::from_f64(f64::NAN); y0.len()]
                        } else {
                            y0.clone()
                        };
                        // one vector is the plan's SpMV call on every plan
                        let want = if k == 1 { Some(SPMV) } else { *want };
                        match plan.apply_multi(alpha, &x, beta, &mut y, shape) {
                            Ok(p)
                                if want
                                    .map_or(p != MultiPath::Kernel(MultiKernel::Auto), |w| {
                                        p == w
                                    }) => {}
                            Ok(p) => {
                                failures.push(format!("{what}: path {p}, want {want:?}"));
                                continue;
                            }
                            Err(e) => {
                                failures.push(format!("{what}: {e}"));
                                continue;
                            }
                        }
                        let c = check_multi(&refs, &y, shape);
                        if c.check.ok {
                            passed += 1;
                        } else {
                            failures.push(format!(
                                "{what}: vector {} row {} off by {:.3e}",
                                c.worst_vector, c.check.worst_row, c.check.max_rel_err
                            ));
                        }
                    }
                }
            }
        }
    }
    (passed, failures)
}

#[test]
fn gpu_spmm_every_path_matches_the_oracle_on_the_corpus() {
    let test = "gpu_spmm_every_path_matches_the_oracle_on_the_corpus";
    let Some(_gpu) = gpu_or_skip(test) else {
        return;
    };
    let _lock = gpu_lock();
    let (p64, f64s) = corpus_on_gpu::<f64>();
    let (p32, f32s) = corpus_on_gpu::<f32>();
    let failures: Vec<_> = f64s.into_iter().chain(f32s).collect();
    assert!(
        failures.is_empty(),
        "{} failures ({} passed):\n{}",
        failures.len(),
        p64 + p32,
        failures.join("\n")
    );
    assert!(p64 + p32 > 1000, "only {} cases ran", p64 + p32);
}

/// The row-major tiles the bitwise test runs: the rule's choice, and variants that take every
/// vector width, 1 to 8 loads per lane, each unroll, and short pieces (many long rows, a piece
/// length that is not a power of two).
const TILES: [&str; 7] = [
    "csr-vector",
    "csr-vector[spmm_cols=1;spmm_unroll=8]",
    "csr-vector[spmm_cols=8;spmm_vec=8]",
    "csr-vector[spmm_cols=4;spmm_unroll=2]",
    "csr-vector[spmm_cols=8;spmm_vec=16;spmm_unroll=4]",
    "csr-vector[spmm_piece=16]",
    "csr-vector[spmm_piece=100;spmm_cols=1]",
];

/// The merge-path variants the bitwise test runs, each in both orders: the rules' choice, short
/// shares (most rows span teams, long carry runs through the long rows), and each vectors per
/// lane.
const MERGE: [&str; 5] = [
    "merge",
    "merge[spmm_share=3]",
    "merge[spmm_share=7;spmm_cols=1]",
    "merge[spmm_cols=8]",
    "merge[spmm_cols=2;spmm_share=100]",
];

/// The kernels of `methods` give their CPU mirror's bits (several k, β ≠ 0; row-major, and
/// column-major for the first method and every merge-path one).
fn kernels_bitwise<T: PrepareFor>(methods: &'static [&'static str]) -> Vec<String> {
    let mut failures = Vec::new();
    for (spec, method) in [
        "powerlaw:4000,12",
        "hugerow:300,3,1500,ncols=1500",
        "kron:10",
    ]
    .into_iter()
    .flat_map(|s| methods.iter().map(move |m| (s, *m)))
    {
        let a = spmvkit::gen::generate::<T>(spec).unwrap();
        let mut gpu = Plan::new(method, &a, &opts(Backend::Gpu)).unwrap();
        let mut cpu = Plan::new(method, &a, &opts(Backend::Cpu)).unwrap();
        // k = 1 is the SpMV call, not these kernels
        for k in [2, 3, 8, 32, 40, 257] {
            for order in DenseOrder::ALL {
                if order == DenseOrder::Col && method != methods[0] && !method.starts_with("merge")
                {
                    continue;
                }
                let shape = MultiShape { k, order };
                let (x, y0) = blocks(&a, shape);
                let (alpha, beta) = (T::from_f64(1.5), T::from_f64(-0.5));
                let (mut yg, mut yc) = (y0.clone(), y0.clone());
                gpu.apply_multi(alpha, &x, beta, &mut yg, shape).unwrap();
                cpu.apply_multi(alpha, &x, beta, &mut yc, shape).unwrap();
                if let Some(i) = (0..yg.len()).find(|&i| yg[i].to_bits_u64() != yc[i].to_bits_u64())
                {
                    failures.push(format!(
                        "{spec} {method} {} k={k} {order}: entry {i} {} on the GPU, {} on the CPU",
                        T::PRECISION,
                        yg[i].to_f64(),
                        yc[i].to_f64()
                    ));
                }
            }
        }
    }
    failures
}

#[test]
fn gpu_spmm_row_split_matches_its_cpu_mirror_bitwise() {
    let test = "gpu_spmm_row_split_matches_its_cpu_mirror_bitwise";
    let Some(_gpu) = gpu_or_skip(test) else {
        return;
    };
    let _lock = gpu_lock();
    let mut failures = kernels_bitwise::<f64>(&TILES);
    failures.extend(kernels_bitwise::<f32>(&TILES));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn gpu_spmm_merge_path_matches_its_cpu_mirror_bitwise() {
    let test = "gpu_spmm_merge_path_matches_its_cpu_mirror_bitwise";
    let Some(_gpu) = gpu_or_skip(test) else {
        return;
    };
    let _lock = gpu_lock();
    let mut failures = kernels_bitwise::<f64>(&MERGE);
    failures.extend(kernels_bitwise::<f32>(&MERGE));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A row-major X whose address is aligned only to its elements (a caller's block one element
/// into an allocation) takes narrower loads and still gives the mirror's bits.
fn unaligned_x<T: PrepareFor>(gpu: &std::sync::Arc<spmvkit::gpu::Gpu>) -> Vec<String> {
    use cudarc::driver::DevicePtr;
    let mut failures = Vec::new();
    let a = spmvkit::gen::generate::<T>("powerlaw:3000,10").unwrap();
    for method in ["csr-vector", "csr-vector[spmm_cols=8]", "merge"] {
        let mut plan = Plan::new(method, &a, &opts(Backend::Gpu)).unwrap();
        let mut cpu = Plan::new(method, &a, &opts(Backend::Cpu)).unwrap();
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
                let bx = spmvkit::gpu::Borrowed::<T>::new(stream, xp, x.len()).unwrap();
                plan.apply_multi_device(T::from_f64(1.5), &bx, T::from_f64(-0.5), &mut dy, shape)
            };
            if let Err(e) = ran {
                failures.push(format!("{method} k={k}: unaligned X: {e}"));
                continue;
            }
            let mut yg = vec![T::zero(); y0.len()];
            stream.memcpy_dtoh(&dy, &mut yg).unwrap();
            gpu.synchronize().unwrap();
            let mut yc = y0.clone();
            cpu.apply_multi(T::from_f64(1.5), &x, T::from_f64(-0.5), &mut yc, shape)
                .unwrap();
            if let Some(i) = (0..yg.len()).find(|&i| yg[i].to_bits_u64() != yc[i].to_bits_u64()) {
                failures.push(format!(
                    "{method} {} k={k}: unaligned X: entry {i} {} on the GPU, {} on the CPU",
                    T::PRECISION,
                    yg[i].to_f64(),
                    yc[i].to_f64()
                ));
            }
        }
    }
    failures
}

#[test]
fn gpu_spmm_unaligned_x_takes_narrower_loads() {
    let test = "gpu_spmm_unaligned_x_takes_narrower_loads";
    let Some(gpu) = gpu_or_skip(test) else {
        return;
    };
    let _lock = gpu_lock();
    let mut failures = unaligned_x::<f64>(&gpu);
    failures.extend(unaligned_x::<f32>(&gpu));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `Gpu::filled` puts the value in every element, across its upload pieces (`FILL_PIECE`) and
/// for an empty request (one element): `auto`'s SpMM trial and cuSPARSE SpMM's algorithm race
/// time on an X of ones made by it.
#[test]
fn gpu_filled_buffers_hold_the_value_in_every_piece() {
    let test = "gpu_filled_buffers_hold_the_value_in_every_piece";
    let Some(gpu) = gpu_or_skip(test) else {
        return;
    };
    let _lock = gpu_lock();
    let piece = spmvkit::gpu::FILL_PIECE;
    for len in [0, 1, piece - 1, piece, 2 * piece + 3] {
        let b = gpu.filled::<f64>(len, 1.5).unwrap();
        let mut h = vec![0.0; len.max(1)];
        gpu.download(&b, &mut h).unwrap();
        let bad = h.iter().position(|&v| v != 1.5);
        assert_eq!(bad, None, "len {len}: element {bad:?} is not 1.5");
    }
}

/// `auto` chooses per shape on the first call of a shape (or `prepare_multi`): before it the
/// path says `auto`, after it a candidate's path with every candidate's time in the notes, the
/// same path on later calls, and the answer the oracle's.
#[test]
fn gpu_spmm_auto_chooses_per_shape_and_keeps_it() {
    let test = "gpu_spmm_auto_chooses_per_shape_and_keeps_it";
    let Some(_gpu) = gpu_or_skip(test) else {
        return;
    };
    let _lock = gpu_lock();
    let a = spmvkit::gen::generate::<f64>("powerlaw:20000,12").unwrap();
    let mut plan = Plan::new("auto", &a, &opts(Backend::Gpu)).unwrap();
    for shape in [MultiShape::row_major(8), MultiShape::col_major(3)] {
        assert_eq!(plan.multi_path(shape), MultiPath::Kernel(MultiKernel::Auto));
        let chosen = plan.prepare_multi(shape).unwrap();
        assert_ne!(chosen, MultiPath::Kernel(MultiKernel::Auto));
        assert_eq!(plan.multi_path(shape), chosen);
        let key = format!("spmm auto k={} {}", shape.k, shape.order);
        let notes = plan.multi_notes();
        let note = notes
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.clone());
        let note = note.unwrap_or_else(|| panic!("no note {key}: {notes:?}"));
        for cand in ["row-split", "merge-path", "cusparse-spmm", "columns"] {
            assert!(note.contains(cand), "{note}");
        }
        let (x, y0) = blocks(&a, shape);
        let refs = oracle_multi(&a, 1.5, &x, -0.5, &y0, shape).unwrap();
        for _ in 0..2 {
            let mut y = y0.clone();
            let p = plan.apply_multi(1.5, &x, -0.5, &mut y, shape).unwrap();
            assert_eq!(p, chosen);
            let c = check_multi(&refs, &y, shape);
            assert!(
                c.check.ok,
                "{shape:?}: vector {} row {}",
                c.worst_vector, c.check.worst_row
            );
        }
    }
}

/// A block of one vector is the plan's own SpMV call (path `spmv`, no SpMM kernel) on every
/// GPU plan, both orders, β ≠ 0: host blocks give the bits of the plan's `apply` (deterministic
/// methods) and the oracle's answer; device blocks longer than the vector (NaN past X's
/// `ncols`, a sentinel past Y's `nrows`) leave Y's tail alone, also for `cusparse-bsr`, whose
/// padded vectors would otherwise be used in place; and the timed loops run it, checked after.
#[test]
fn gpu_spmm_one_vector_is_the_spmv_call() {
    let test = "gpu_spmm_one_vector_is_the_spmv_call";
    let Some(gpu) = gpu_or_skip(test) else {
        return;
    };
    let _lock = gpu_lock();
    // 3001 rows: not whole blocks of 4 (cusparse-bsr pads)
    let a = spmvkit::gen::generate::<f64>("powerlaw:3001,9").unwrap();
    let rcm = PlanOptions {
        reorder: Reorder::By(Ordering::Rcm),
        ..opts(Backend::Gpu)
    };
    let cfg = TimingConfig {
        warmup: 1,
        calls: 3,
        samples: 2,
    };
    let m = a.nrows();
    for (method, o) in [
        ("csr-vector", opts(Backend::Gpu)),
        ("merge", opts(Backend::Gpu)),
        ("cusparse", opts(Backend::Gpu)),
        ("csr-packed", opts(Backend::Gpu)),
        ("csr-scalar", opts(Backend::Gpu)),
        ("cusparse-bsr", opts(Backend::Gpu)),
        ("auto", opts(Backend::Gpu)),
        ("csr-vector", rcm),
    ] {
        let mut plan = Plan::new(method, &a, &o).unwrap();
        for order in DenseOrder::ALL {
            let shape = MultiShape { k: 1, order };
            let what = format!("{method} {order}");
            assert_eq!(plan.multi_path(shape), SPMV, "{what}");
            let (x, y0) = blocks(&a, shape);
            let refs = oracle_multi(&a, 1.5, &x, -0.5, &y0, shape).unwrap();
            let (mut y, mut want) = (y0.clone(), y0.clone());
            let p = plan.apply_multi(1.5, &x, -0.5, &mut y, shape).unwrap();
            assert_eq!(p, SPMV, "{what}");
            plan.apply(1.5, &x, -0.5, &mut want).unwrap();
            if plan.deterministic() {
                assert!(
                    y.iter().zip(&want).all(|(p, q)| p.to_bits() == q.to_bits()),
                    "{what}: k = 1 differs from the plan's SpMV"
                );
            }
            let c = check_multi(&refs, &y, shape);
            assert!(c.check.ok, "{what}: row {}", c.check.worst_row);
            // device blocks with a tail that is not the block's
            let tail = 64;
            let mut xl = x.clone();
            xl.extend(std::iter::repeat_n(f64::NAN, tail));
            let mut yl = y0.clone();
            yl.extend(std::iter::repeat_n(7.0, tail));
            let dx = gpu.upload(&xl).unwrap();
            let mut dy = gpu.upload(&yl).unwrap();
            let p = plan
                .apply_multi_device(1.5, &dx, -0.5, &mut dy, shape)
                .unwrap();
            assert_eq!(p, SPMV, "{what}");
            let mut got = vec![0.0; yl.len()];
            gpu.stream().memcpy_dtoh(&dy, &mut got).unwrap();
            gpu.synchronize().unwrap();
            assert!(
                got[m..].iter().all(|&v| v == 7.0),
                "{what}: Y's tail written"
            );
            let c = check_multi(&refs, &got[..m], shape);
            assert!(c.check.ok, "{what}: device row {}", c.check.worst_row);
            for mode in [TimingMode::Stream, TimingMode::Graph] {
                plan.set_multi_vectors(shape, Some(&x), Some(&y0)).unwrap();
                let t = match plan.time_multi(mode, &cfg, 1.5, -0.5) {
                    Ok(t) => t,
                    Err(e) if mode == TimingMode::Graph && method.starts_with("cusparse") => {
                        eprintln!("note: {what} {mode}: graph capture refused: {e}");
                        continue;
                    }
                    Err(e) => panic!("{what} {mode}: {e}"),
                };
                assert_eq!(t.path, SPMV, "{what} {mode}");
                let mut yt = vec![0.0; m];
                plan.read_multi_y(&mut yt).unwrap();
                let after = refs[0]
                    .after_calls(-0.5, &y0, t.timing.executions())
                    .unwrap();
                let c = check_multi(&[after], &yt, shape);
                assert!(c.check.ok, "{what} {mode}: row {}", c.check.worst_row);
            }
        }
    }
}

/// `auto[deterministic=1]`: its SpMM trial tries cuSPARSE SpMM with ALG3 only (the notes name
/// no other algorithm), and the path it keeps gives the same bits call after call.
#[test]
fn gpu_spmm_deterministic_auto_keeps_to_deterministic_candidates() {
    let test = "gpu_spmm_deterministic_auto_keeps_to_deterministic_candidates";
    let Some(_gpu) = gpu_or_skip(test) else {
        return;
    };
    let _lock = gpu_lock();
    let a = spmvkit::gen::generate::<f64>("powerlaw:20000,12").unwrap();
    let mut plan = Plan::new("auto[deterministic=1]", &a, &opts(Backend::Gpu)).unwrap();
    assert!(plan.deterministic());
    for shape in [MultiShape::row_major(8), MultiShape::col_major(3)] {
        let chosen = plan.prepare_multi(shape).unwrap();
        let notes = plan.multi_notes();
        for (k, v) in notes
            .iter()
            .filter(|(k, _)| k.contains("cusparse") || k.contains("auto"))
        {
            assert!(!v.contains("ALG1") && !v.contains("ALG2"), "{k}: {v}");
        }
        let (x, y0) = blocks(&a, shape);
        let runs: Vec<Vec<f64>> = (0..3)
            .map(|_| {
                let mut y = y0.clone();
                assert_eq!(
                    plan.apply_multi(1.5, &x, -0.5, &mut y, shape).unwrap(),
                    chosen
                );
                y
            })
            .collect();
        for r in &runs[1..] {
            assert!(
                r.iter()
                    .zip(&runs[0])
                    .all(|(p, q)| p.to_bits() == q.to_bits()),
                "{shape:?}: {chosen} differs between calls"
            );
        }
    }
}

/// `apply_many` on a GPU plan with an SpMM kernel goes through one column-major block: the
/// multi-vector state exists after it, `csr-vector` keeps each vector's SpMV bits, `cusparse`
/// and `merge` (its SpMM sums differently from its SpMV) are within the oracle's tolerance;
/// `csr-scalar` (no kernel) makes no block state and keeps its SpMV bits.
#[test]
fn gpu_spmm_apply_many_takes_the_block_path() {
    let test = "gpu_spmm_apply_many_takes_the_block_path";
    let Some(_gpu) = gpu_or_skip(test) else {
        return;
    };
    let _lock = gpu_lock();
    let a = spmvkit::gen::generate::<f64>("powerlaw:5000,9").unwrap();
    let shape = MultiShape::col_major(3);
    let (x, y0) = blocks(&a, shape);
    let (m, n) = (a.nrows(), a.ncols());
    let refs = oracle_multi(&a, 1.5, &x, -0.5, &y0, shape).unwrap();
    for (method, block) in [
        ("csr-vector", true),
        ("cusparse", true),
        ("merge", true),
        ("csr-scalar", false),
    ] {
        let mut plan = Plan::new(method, &a, &opts(Backend::Gpu)).unwrap();
        let mut singles = y0.clone();
        for c in 0..3 {
            let yc = &mut singles[c * m..(c + 1) * m];
            plan.apply(1.5, &x[c * n..(c + 1) * n], -0.5, yc).unwrap();
        }
        let xs: Vec<&[f64]> = x.chunks(n).collect();
        let mut ys: Vec<Vec<f64>> = y0.chunks(m).map(<[f64]>::to_vec).collect();
        let mut yr: Vec<&mut [f64]> = ys.iter_mut().map(Vec::as_mut_slice).collect();
        plan.apply_many(1.5, &xs, -0.5, &mut yr).unwrap();
        let y = ys.concat();
        assert_eq!(plan.multi_footprint_bytes() > 0, block, "{method}");
        let c = check_multi(&refs, &y, shape);
        assert!(
            c.check.ok,
            "{method}: vector {} row {}",
            c.worst_vector, c.check.worst_row
        );
        if !["cusparse", "merge"].contains(&method) {
            assert!(
                y.iter()
                    .zip(&singles)
                    .all(|(p, q)| p.to_bits() == q.to_bits()),
                "{method}: apply_many differs from single applies"
            );
        }
    }
}

/// Device blocks and the timing loop: `time_multi` in both modes on each path, Y checked
/// after the loop against the oracle's expectation after that many calls; `apply_multi_device`
/// refuses short blocks before launching.
#[test]
fn gpu_spmm_timed_loops_are_checked_and_short_blocks_refused() {
    let test = "gpu_spmm_timed_loops_are_checked_and_short_blocks_refused";
    let Some(gpu) = gpu_or_skip(test) else {
        return;
    };
    let _lock = gpu_lock();
    let a = spmvkit::gen::generate::<f64>("powerlaw:3000,8").unwrap();
    let cfg = TimingConfig {
        warmup: 1,
        calls: 3,
        samples: 2,
    };
    for method in ["csr-vector", "cusparse", "merge", "csr-scalar"] {
        let mut plan = Plan::new(method, &a, &opts(Backend::Gpu)).unwrap();
        for shape in [MultiShape::row_major(8), MultiShape::col_major(5)] {
            let (x, y0) = blocks(&a, shape);
            let (alpha, beta) = (1.5, -0.5);
            let refs = oracle_multi(&a, alpha, &x, beta, &y0, shape).unwrap();
            for mode in [TimingMode::Stream, TimingMode::Graph] {
                plan.set_multi_vectors(shape, Some(&x), Some(&y0)).unwrap();
                let t = match plan.time_multi(mode, &cfg, alpha, beta) {
                    Ok(t) => t,
                    // the harness records a graph that cannot be captured as a note; the
                    // library's own calls must capture
                    Err(e) if mode == TimingMode::Graph && method == "cusparse" => {
                        eprintln!("note: {method} {mode}: graph capture refused: {e}");
                        continue;
                    }
                    Err(e) => panic!("{method} {mode} {shape:?}: {e}"),
                };
                assert!(t.timing.median_us > 0.0, "{method} {mode}");
                let mut y = vec![0.0; y0.len()];
                plan.read_multi_y(&mut y).unwrap();
                let calls = t.timing.executions();
                let m = a.nrows();
                let after: Vec<_> = refs
                    .iter()
                    .enumerate()
                    .map(|(c, r)| {
                        let y0c = spmvkit::methods::spmm::cpu::column(&y0, m, shape, c);
                        r.after_calls(beta, &y0c, calls).unwrap()
                    })
                    .collect();
                let c = check_multi(&after, &y, shape);
                assert!(
                    c.check.ok,
                    "{method} {mode} k={} {}: after {calls} calls vector {} row {} off by {:.3e}",
                    shape.k, shape.order, c.worst_vector, c.check.worst_row, c.check.max_rel_err
                );
            }
            // device blocks one entry short are refused, naming the block
            let xs = gpu.upload(&x[1..]).unwrap();
            let mut ys = gpu.upload(&y0).unwrap();
            match plan.apply_multi_device(alpha, &xs, beta, &mut ys, shape) {
                Err(Error::DimensionMismatch { what, .. }) => {
                    assert!(what.contains("x block"), "{what}")
                }
                other => panic!("{method}: short X: {other:?}"),
            }
        }
    }
}
