//! SpMM on the CPU (issue #24): every path of [`Plan::apply_multi`] (the row-split and
//! merge-path mirrors, the latter with shares small enough that most rows span teams, and the
//! single-vector fallback) against the oracle for k vectors on the edge corpus, k ∈ {1, 2, 3,
//! 8, 33, 256}, both orders, β = 0 and β ≠ 0, f32 and f64; the row-split mirror bit for bit
//! against single-vector runs where the orders agree; the merge path's teams; and the
//! validation errors.

use super::cpu::{check_multi, column, oracle_multi};
use super::{DenseOrder, MultiKernel, MultiPath, MultiShape, SpmmTune};
use crate::bench::test_vector;
use crate::error::Error;
use crate::matrix::Csr;
use crate::methods::{Backend, Plan, PlanOptions, PrepareFor};
use crate::reorder::{Ordering, Reorder};
use crate::scalar::Scalar;

const KS: [usize; 6] = [1, 2, 3, 8, 33, 256];
/// The path of a block of one vector.
const SPMV: MultiPath = MultiPath::Kernel(MultiKernel::Spmv);
/// Multiply-adds per (matrix, k) above which a case is left to the smaller k (debug builds).
const BUDGET: usize = 1 << 17;

fn cpu() -> PlanOptions {
    PlanOptions {
        backend: Some(Backend::Cpu),
        ..Default::default()
    }
}

/// (X, Y0) for `a` and `shape`, deterministic, entries in [-1, 1].
fn blocks<T: Scalar>(a: &Csr<T>, shape: MultiShape) -> (Vec<T>, Vec<T>) {
    let x = test_vector::<T>(shape.len(a.ncols()).unwrap(), 11 + shape.k as u64);
    let y = test_vector::<T>(shape.len(a.nrows()).unwrap(), 12 + shape.k as u64);
    (x, y)
}

/// Runs every plan of `plans` (with the path it must take) on every k and order within the
/// budget, with α = 1.5 and β ∈ {0, −0.5}, against one oracle answer per case; returns the
/// cases run.
fn check_plans<T: PrepareFor>(name: &str, a: &Csr<T>, plans: &mut [(Plan<T>, MultiPath)]) -> usize {
    let mut cases = 0;
    for k in KS {
        if k > 1 && a.nnz().max(a.nrows()) * k > BUDGET {
            continue;
        }
        for order in DenseOrder::ALL {
            let shape = MultiShape { k, order };
            let (x, y0) = blocks(a, shape);
            for beta in [0.0, -0.5] {
                let (alpha, beta) = (T::from_f64(1.5), T::from_f64(beta));
                let refs = oracle_multi(a, alpha, &x, beta, &y0, shape).unwrap();
                for (plan, want) in plans.iter_mut() {
                    // β = 0 must not read Y: NaN there would show
                    let mut y = if beta == T::zero() {
                        vec![T::from_f64(f64::NAN); y0.len()]
                    } else {
                        y0.clone()
                    };
                    let path = plan.apply_multi(alpha, &x, beta, &mut y, shape).unwrap();
                    // one vector is the plan's SpMV call on every plan
                    let want = if k == 1 { SPMV } else { *want };
                    assert_eq!(path, want, "{name} k={k} {order}");
                    let c = check_multi(&refs, &y, shape);
                    assert!(
                        c.check.ok,
                        "{name} {} {} k={k} {order} β={beta:?}: vector {} row {} off by {:.3e}",
                        plan.info().name,
                        T::PRECISION,
                        c.worst_vector,
                        c.check.worst_row,
                        c.check.max_rel_err
                    );
                    cases += 1;
                }
            }
        }
    }
    cases
}

fn corpus_paths<T: PrepareFor>() {
    let rcm = PlanOptions {
        reorder: Reorder::By(Ordering::Rcm),
        ..cpu()
    };
    let mut cases = 0;
    for (name, a) in crate::gen::corpus::edge_cases() {
        let a = a.cast::<T>();
        let row_split = MultiPath::Kernel(MultiKernel::RowSplit);
        let merge = MultiPath::Kernel(MultiKernel::Merge);
        let mut plans = Vec::new();
        for (method, opts, want) in [
            ("csr", cpu(), row_split),
            ("csr-vector", cpu(), row_split),
            ("merge", cpu(), merge),
            // shares of 3 and 7 steps: most rows span teams (the carries and their fix-up)
            ("merge[spmm_share=3]", cpu(), merge),
            ("merge[spmm_share=7]", cpu(), merge),
            ("csr-scalar", cpu(), MultiPath::Columns),
            ("csr", rcm.clone(), MultiPath::Columns),
            // auto on the CPU: the row-split mirror on the chosen layout's CSR or its copy
            ("auto", cpu(), row_split),
        ] {
            if opts.reorder == Reorder::None || a.nrows() == a.ncols() {
                plans.push((Plan::new(method, &a, &opts).unwrap(), want));
            }
        }
        cases += check_plans(&name, &a, &mut plans);
    }
    assert!(cases > 500, "only {cases} cases ran");
}

#[test]
fn every_path_matches_the_oracle_on_the_corpus_f64() {
    corpus_paths::<f64>();
}

#[test]
fn every_path_matches_the_oracle_on_the_corpus_f32() {
    corpus_paths::<f32>();
}

/// A block of one vector, in either order, is the plan's own SpMV call on it (no SpMM kernel,
/// no copy): the path says so, the result is bitwise the plan's `apply` and within the
/// oracle's tolerance, with β ≠ 0, on plans whose SpMM kernel sums differently (the row-split
/// mirror's fma chain against csr-vector's warp sum, merge's SpMM against its SpMV), on `auto`
/// (no trial to run) and on a reordered plan.
#[test]
fn one_vector_is_the_plans_spmv_call() {
    let a = crate::gen::generate::<f64>("powerlaw:3000,9").unwrap();
    let rcm = PlanOptions {
        reorder: Reorder::By(Ordering::Rcm),
        ..cpu()
    };
    for (method, opts) in [
        ("csr-vector", cpu()),
        ("merge", cpu()),
        ("merge[spmm_share=3]", cpu()),
        ("csr-packed", cpu()),
        ("csr-scalar", cpu()),
        ("auto", cpu()),
        ("csr", rcm),
    ] {
        let mut plan = Plan::new(method, &a, &opts).unwrap();
        for order in DenseOrder::ALL {
            let shape = MultiShape { k: 1, order };
            assert_eq!(plan.multi_path(shape), SPMV, "{method} {order}");
            let (x, y0) = blocks(&a, shape);
            let refs = oracle_multi(&a, 1.5, &x, -0.5, &y0, shape).unwrap();
            let (mut y, mut want) = (y0.clone(), y0.clone());
            let path = plan.apply_multi(1.5, &x, -0.5, &mut y, shape).unwrap();
            assert_eq!(path, SPMV, "{method} {order}");
            plan.apply(1.5, &x, -0.5, &mut want).unwrap();
            assert!(
                y.iter().zip(&want).all(|(p, q)| p.to_bits() == q.to_bits()),
                "{method} {order}: k = 1 differs from the plan's SpMV"
            );
            let c = check_multi(&refs, &y, shape);
            assert!(c.check.ok, "{method} {order}: row {}", c.check.worst_row);
        }
    }
}

/// `auto[deterministic=1]`'s SpMM trial keeps to deterministic candidates: cuSPARSE SpMM only
/// with ALG3, the one CSR algorithm cuSPARSE documents as bitwise deterministic, the other
/// candidates as without the flag (spmvkit's kernels and k calls of the deterministic SpMV it
/// chose); without the flag cuSPARSE tries every algorithm.
#[test]
fn deterministic_auto_trials_only_deterministic_candidates() {
    use super::auto_candidates;
    use crate::gpu::cusparse::SpmmAlg;
    let a = crate::gen::generate::<f64>("powerlaw:2000,6").unwrap();
    let free = Plan::new("auto", &a, &cpu()).unwrap();
    let det = Plan::new("auto[deterministic=1]", &a, &cpu()).unwrap();
    let (f, d) = (
        auto_candidates(free.layout()),
        auto_candidates(det.layout()),
    );
    assert_eq!(f.cusparse_algs, SpmmAlg::ALL);
    assert_eq!(d.cusparse_algs, [SpmmAlg::CsrAlg3]);
    assert!(d.cusparse_algs.iter().all(|alg| alg.deterministic()));
    for alg in [SpmmAlg::CsrAlg1, SpmmAlg::CsrAlg2] {
        assert!(
            !alg.deterministic() && !d.cusparse_algs.contains(&alg),
            "{alg:?}"
        );
    }
    let kernel = MultiPath::Kernel;
    let want = [
        kernel(MultiKernel::RowSplit),
        kernel(MultiKernel::Merge),
        kernel(MultiKernel::Cusparse),
        MultiPath::Columns,
    ];
    // csr-packed's kernel may follow (deterministic too), as without the flag
    assert_eq!(d.paths[..4], want);
    assert_eq!(d.paths, f.paths);
    assert!(det.deterministic(), "the SpMV of the columns candidate");
}

/// The column-major mirror is csr-vector's SpMV per vector, bit for bit; the row-major one is
/// the serial fma chain per (row, vector), so each of its columns equals the mirror run on
/// that column alone (k = 1 through the plan is the SpMV itself).
#[test]
fn the_mirror_orders_are_the_kernels() {
    let a = crate::gen::generate::<f64>("powerlaw:3000,9").unwrap();
    let mut multi = Plan::new("csr-vector", &a, &cpu()).unwrap();
    let mut single = Plan::new("csr-vector", &a, &cpu()).unwrap();
    let (m, n) = (a.nrows(), a.ncols());
    for k in [2, 5, 40] {
        let col = MultiShape::col_major(k);
        let (x, y0) = blocks(&a, col);
        let mut y = y0.clone();
        multi.apply_multi(1.5, &x, -0.5, &mut y, col).unwrap();
        let row = MultiShape::row_major(k);
        let (xr, yr0) = (transpose(&x, n, k), transpose(&y0, m, k));
        let mut yr = yr0.clone();
        multi.apply_multi(1.5, &xr, -0.5, &mut yr, row).unwrap();
        for c in 0..k {
            let mut yc = column(&y0, m, col, c);
            single
                .apply(1.5, &column(&x, n, col, c), -0.5, &mut yc)
                .unwrap();
            let got = column(&y, m, col, c);
            assert!(
                got.iter().zip(&yc).all(|(p, q)| p.to_bits() == q.to_bits()),
                "k={k} vector {c}: column-major is not csr-vector's bits"
            );
            // the mirror on one vector is the fma chain of that vector: the same for every c
            let mut y1 = column(&yr0, m, row, c);
            let x1 = column(&xr, n, row, c);
            let one = MultiShape::row_major(1);
            super::cpu::run_row_split(&a, 1.5, &x1, -0.5, &mut y1, one, SpmmTune::default());
            assert!(
                column(&yr, m, row, c)
                    .iter()
                    .zip(&y1)
                    .all(|(p, q)| p.to_bits() == q.to_bits()),
                "k={k} vector {c}: row-major differs from its one-vector call"
            );
        }
    }
}

/// After `update_values`, every path's multi-vector call uses the new values (`auto`'s SpMM
/// copy included).
#[test]
fn multi_calls_see_updated_values() {
    let a = crate::gen::generate::<f64>("powerlaw:1500,7").unwrap();
    let doubled: Vec<f64> = a.vals().iter().map(|v| 2.0 * v).collect();
    let a2 = Csr::with_pattern(a.pattern().clone(), doubled.clone()).unwrap();
    let shape = MultiShape::row_major(5);
    let (x, y0) = blocks(&a, shape);
    let refs = oracle_multi(&a2, 1.0, &x, 0.5, &y0, shape).unwrap();
    for method in ["csr", "csr-vector", "merge", "csr-scalar", "auto"] {
        let mut plan = Plan::new(method, &a, &cpu()).unwrap();
        let mut y = y0.clone();
        plan.apply_multi(1.0, &x, 0.5, &mut y, shape).unwrap();
        plan.update_values(&doubled).unwrap();
        let mut y = y0.clone();
        plan.apply_multi(1.0, &x, 0.5, &mut y, shape).unwrap();
        let c = check_multi(&refs, &y, shape);
        assert!(
            c.check.ok,
            "{method}: vector {} row {}",
            c.worst_vector, c.check.worst_row
        );
    }
}

/// A column-major block `b` of `n` rows and `k` vectors, row-major.
fn transpose(b: &[f64], n: usize, k: usize) -> Vec<f64> {
    let mut out = vec![0.0; b.len()];
    for c in 0..k {
        for j in 0..n {
            out[j * k + c] = b[c * n + j];
        }
    }
    out
}

/// Wrong lengths, k = 0 and a CPU plan's device calls are errors naming the problem.
#[test]
fn bad_blocks_are_clear_errors() {
    let a = crate::gen::generate::<f64>("poisson2d:5").unwrap(); // 25 x 25
    let mut plan = Plan::new("csr", &a, &cpu()).unwrap();
    let (x, mut y) = (vec![1.0; 25 * 3], vec![0.0; 25 * 3]);
    match plan.apply_multi(1.0, &x[1..], 0.0, &mut y, MultiShape::row_major(3)) {
        Err(Error::DimensionMismatch {
            what,
            expected,
            got,
        }) => {
            assert!(
                what.contains("x block") && what.contains("row-major"),
                "{what}"
            );
            assert_eq!((expected, got), (75, 74));
        }
        other => panic!("short x: {other:?}"),
    }
    match plan.apply_multi(1.0, &x, 0.0, &mut y[..50], MultiShape::col_major(3)) {
        Err(Error::DimensionMismatch { what, .. }) => {
            assert!(
                what.contains("y block") && what.contains("col-major"),
                "{what}"
            )
        }
        other => panic!("short y: {other:?}"),
    }
    match plan.apply_multi(1.0, &[], 0.0, &mut [], MultiShape::row_major(0)) {
        Err(Error::InvalidArgument(msg)) => assert!(msg.contains("k = 0"), "{msg}"),
        other => panic!("k = 0: {other:?}"),
    }
    let mut yy = vec![0.0; 25 * 3];
    assert!(plan
        .apply_multi(1.0, &x, 0.0, &mut yy, MultiShape::col_major(3))
        .is_ok());
    assert!(matches!(
        plan.set_multi_vectors(MultiShape::col_major(3), Some(&x), None),
        Err(Error::MethodUnsupported { .. })
    ));
    assert!(matches!(
        plan.time_multi(
            crate::gpu::TimingMode::Stream,
            &crate::gpu::TimingConfig::default(),
            1.0,
            0.0
        ),
        Err(Error::MethodUnsupported { .. })
    ));
    assert!("diagonal".parse::<DenseOrder>().is_err());
    assert_eq!("col".parse::<DenseOrder>().unwrap(), DenseOrder::Col);
}

/// The checker catches one wrong entry in one vector of a block (so the tests above can fail).
#[test]
fn check_multi_catches_one_wrong_entry() {
    let a = crate::gen::generate::<f64>("powerlaw:500,6").unwrap();
    for order in DenseOrder::ALL {
        let shape = MultiShape { k: 4, order };
        let (x, y0) = blocks(&a, shape);
        let refs = oracle_multi(&a, 1.0, &x, 0.5, &y0, shape).unwrap();
        let mut y = y0.clone();
        let mut plan = Plan::new("csr", &a, &cpu()).unwrap();
        plan.apply_multi(1.0, &x, 0.5, &mut y, shape).unwrap();
        assert!(check_multi(&refs, &y, shape).check.ok);
        let at = order.index(a.nrows(), 4, 17, 2);
        y[at] += 1e-6 * (1.0 + y[at].abs());
        let c = check_multi(&refs, &y, shape);
        assert!(!c.check.ok, "{order}: a wrong entry passed");
        assert_eq!((c.worst_vector, c.check.worst_row), (2, 17));
    }
}

/// The long rows' pieces, as the GPU takes them: consecutive, `limit` long but the last, and
/// covering each long row exactly; short rows have none.
#[test]
fn long_rows_are_cut_into_consecutive_pieces() {
    use super::cpu::LongRows;
    let lens = [3u32, 2500, 1024, 1025];
    let mut rp = vec![0u32];
    let mut cols = Vec::new();
    for &l in &lens {
        cols.extend(0..l);
        rp.push(cols.len() as u32);
    }
    let vals = vec![1.0; cols.len()];
    let a = Csr::from_parts_unchecked(4, 3000, rp, cols, vals);
    let l = LongRows::of(&a, 1024);
    let rp = a.row_ptr();
    assert_eq!(l.rows, [1, 3]);
    assert_eq!(l.first, [0, 3, 5]);
    let (s1, s3) = (rp[1], rp[3]);
    assert_eq!(l.start, [s1, s1 + 1024, s1 + 2048, s3, s3 + 1024]);
    assert_eq!(l.end, [s1 + 1024, s1 + 2048, rp[2], s3 + 1024, rp[4]]);
    assert_eq!(LongRows::of(&a, 4000).npieces(), 0);
}

/// The merge path's teams cover every nonzero once, in order, and close every row once (rows
/// that span teams have one run of consecutive teams), for shares from 1 step to the rule's.
#[test]
fn merge_teams_cover_each_nonzero_and_close_each_row_once() {
    use super::merge::MergeTeams;
    use super::{merge_share, SpmmTune};
    for (name, a) in crate::gen::corpus::edge_cases() {
        let rp = a.row_ptr();
        let rule = merge_share(a.nrows(), a.nnz(), SpmmTune::default());
        for share in [1, 2, 5, 32, rule] {
            let t = MergeTeams::of(rp, share);
            let (mut next_nz, mut next_row) = (0usize, 0usize);
            let mut spans = Vec::new();
            for i in 0..t.nteams() {
                let (r0, r1) = (t.row[i] as usize, t.row[i + 1] as usize);
                let (z0, z1) = (t.nz[i] as usize, t.nz[i + 1] as usize);
                assert_eq!(
                    (r0, z0),
                    (next_row, next_nz),
                    "{name} share {share} team {i}"
                );
                assert!(r1 - r0 + z1 - z0 <= share, "{name} share {share} team {i}");
                // the closed rows' parts, then the carry
                let mut s = z0;
                for r in r0..r1 {
                    s = rp[r + 1] as usize;
                }
                if s < z1 {
                    spans.push((r1, i));
                }
                (next_row, next_nz) = (r1, z1);
            }
            assert_eq!(
                (next_row, next_nz),
                (a.nrows(), a.nnz()),
                "{name} share {share}"
            );
            let mut runs = Vec::new();
            for (r, i) in spans {
                match runs.last_mut() {
                    Some((row, _, end)) if *row == r && *end == i => *end += 1,
                    _ => runs.push((r, i, i + 1)),
                }
            }
            let got: Vec<_> = (0..t.nruns())
                .map(|i| {
                    let f = |v: &[u32]| v[i] as usize;
                    (f(&t.run_row), f(&t.run_first), f(&t.run_end))
                })
                .collect();
            assert_eq!(got, runs, "{name} share {share}");
        }
    }
}

/// The merge-path mirror: its two orders give the same bits (the same chains and fix-up), and
/// with no row spanning teams it is the row-split mirror's bits where that cuts no row.
#[test]
fn the_merge_mirror_orders_agree_and_match_row_split_without_spans() {
    let a = crate::gen::generate::<f64>("powerlaw:3000,9").unwrap();
    let (m, n) = (a.nrows(), a.ncols());
    for (spec, vs_row_split) in [
        ("merge[spmm_share=5]", false),
        ("merge[spmm_share=65536]", true),
    ] {
        let mut merge = Plan::new(spec, &a, &cpu()).unwrap();
        let mut csr = Plan::new("csr-vector[spmm_piece=65536]", &a, &cpu()).unwrap();
        for k in [2, 6, 33] {
            let col = MultiShape::col_major(k);
            let (x, y0) = blocks(&a, col);
            let mut y = y0.clone();
            merge.apply_multi(1.5, &x, -0.5, &mut y, col).unwrap();
            let row = MultiShape::row_major(k);
            let (xr, yr0) = (transpose(&x, n, k), transpose(&y0, m, k));
            let (mut yr, mut ys) = (yr0.clone(), yr0.clone());
            merge.apply_multi(1.5, &xr, -0.5, &mut yr, row).unwrap();
            let same =
                |p: &[f64], q: &[f64]| p.iter().zip(q).all(|(p, q)| p.to_bits() == q.to_bits());
            assert!(
                same(&transpose(&y, m, k), &yr),
                "{spec} k={k}: the orders differ"
            );
            csr.apply_multi(1.5, &xr, -0.5, &mut ys, row).unwrap();
            assert_eq!(
                same(&yr, &ys),
                vs_row_split,
                "{spec} k={k}: against row-split"
            );
        }
    }
}
