//! The Plan's locality options (issue #22).
//!
//! `PlanOptions::reorder`: a reordered plan prepares its method on PAPᵀ and still computes
//! y = αAx + βy in the matrix's own numbering, on the CPU and (gated) on the GPU, for β = 0 and
//! β ≠ 0; new values given in the matrix's order reach the reordered layout; `auto` keeps RCM on
//! a shuffled mesh and declines it on random columns; the ordering's time is preprocessing; a
//! rectangular matrix is refused with its shape; CG and PageRank run in the permuted space
//! (no call permutes vectors, the answer permuted back once).
//!
//! `PlanOptions::windows`: the column panels add up to the matrix; a windowed plan computes
//! y = αAx + βy (β applied once, by the first panel), alone and with a reordering; values can be
//! updated; bad counts are refused with the range.
//!
//! GPU tests are skipped with a `skipped:` line without a GPU (`spmvkit::testing`); with
//! `SPMVKIT_REQUIRE_GPU=1` a missing GPU fails.

mod common;

use spmvkit::cpu::{check, oracle_spmv};
use spmvkit::gen::generate_f64;
use spmvkit::methods::windows::column_panels;
use spmvkit::reorder::{Ordering, Reorder};
use spmvkit::{Backend, Csr, Plan, PlanOptions};

fn opts(backend: Backend, reorder: Reorder) -> PlanOptions {
    PlanOptions {
        backend: Some(backend),
        reorder,
        ..PlanOptions::default()
    }
}

fn vectors(n: usize) -> (Vec<f64>, Vec<f64>) {
    let x = (0..n).map(|j| 1.0 - (j % 7) as f64 * 0.25).collect();
    let y = (0..n).map(|i| 0.5 + (i % 3) as f64 * 0.75).collect();
    (x, y)
}

/// One apply for β = 0 and one for β ≠ 0, each against the oracle on `a`.
fn assert_matches_oracle(plan: &mut Plan<f64>, a: &Csr<f64>, what: &str) {
    let (x, y0) = vectors(a.nrows());
    for (alpha, beta) in [(1.0, 0.0), (-1.5, 0.75)] {
        let mut y = y0.clone();
        plan.apply(alpha, &x, beta, &mut y).unwrap();
        let reference = oracle_spmv(a, alpha, &x, beta, &y0).unwrap();
        let c = check(&reference, &y);
        assert!(
            c.ok,
            "{what} (α = {alpha}, β = {beta}): differs from the oracle at row {}",
            c.worst_row
        );
    }
}

const MATRICES: [&str; 3] = [
    "rgg:3000,order=shuffled",
    "poisson2d:24,renumber=random",
    "powerlaw:2000,6",
];

#[test]
fn a_reordered_plan_computes_ax_in_the_matrix_numbering() {
    for spec in MATRICES {
        let a = generate_f64(spec).unwrap();
        for method in ["csr", "csr-packed", "merge"] {
            for how in [Reorder::By(Ordering::Rcm), Reorder::By(Ordering::Bisection)] {
                let mut plan = Plan::new(method, &a, &opts(Backend::Cpu, how)).unwrap();
                assert_eq!(plan.ordering(), how_ordering(how));
                assert_matches_oracle(&mut plan, &a, &format!("{method}, {how}, {spec}"));
            }
        }
    }
}

fn how_ordering(how: Reorder) -> Option<Ordering> {
    match how {
        Reorder::By(o) => Some(o),
        _ => None,
    }
}

#[test]
fn values_updated_in_the_matrix_order_reach_the_reordered_layout() {
    let a = generate_f64("rgg:2000,order=shuffled").unwrap();
    let vals: Vec<f64> = a
        .vals()
        .iter()
        .enumerate()
        .map(|(k, v)| v * -2.0 + (k % 5) as f64)
        .collect();
    let b = Csr::with_pattern(a.pattern().clone(), vals.clone()).unwrap();
    for method in ["csr", "csr-packed"] {
        let mut plan =
            Plan::new(method, &a, &opts(Backend::Cpu, Reorder::By(Ordering::Rcm))).unwrap();
        plan.update_values(&vals).unwrap();
        assert_matches_oracle(&mut plan, &b, &format!("{method} after update_values"));
    }
}

#[test]
fn auto_keeps_rcm_on_a_shuffled_mesh_and_declines_on_random_columns() {
    let shuffled = generate_f64("rgg:4000,order=shuffled").unwrap();
    let plan = Plan::new("csr", &shuffled, &opts(Backend::Cpu, Reorder::Auto)).unwrap();
    assert_eq!(plan.ordering(), Some(Ordering::Rcm));
    assert!(plan.reorder_note().unwrap().contains("kept"));
    let random = generate_f64("uniform:4000,16").unwrap();
    let mut plan = Plan::new("csr", &random, &opts(Backend::Cpu, Reorder::Auto)).unwrap();
    assert_eq!(plan.ordering(), None);
    assert!(plan.reorder_note().unwrap().contains("declined"));
    assert_matches_oracle(&mut plan, &random, "auto, declined");
}

#[test]
fn the_ordering_time_is_preprocessing() {
    let a = generate_f64("rgg:2000,order=shuffled").unwrap();
    let none = Plan::new("csr", &a, &opts(Backend::Cpu, Reorder::None)).unwrap();
    assert!(none.prep_times().reorder.is_zero());
    assert_eq!(none.reorder_note(), None);
    let rcm = Plan::new("csr", &a, &opts(Backend::Cpu, Reorder::By(Ordering::Rcm))).unwrap();
    let t = rcm.prep_times();
    assert!(!t.reorder.is_zero());
    assert_eq!(t.total(), t.reorder + t.prepare + t.upload);
}

#[test]
fn a_rectangular_matrix_is_refused_with_its_shape() {
    let a = Csr::<f64>::new(2, 3, vec![0, 1, 2], vec![0, 2], vec![1.0, 2.0]).unwrap();
    let e = Plan::new("csr", &a, &opts(Backend::Cpu, Reorder::Auto))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("square") && e.contains("2x3"), "{e}");
    // without the option the same matrix plans as before
    assert!(Plan::new("csr", &a, &opts(Backend::Cpu, Reorder::None)).is_ok());
}

#[test]
fn reorder_names_parse_and_unknown_ones_list_the_choices() {
    for r in Reorder::ALL {
        assert_eq!(r.name().parse::<Reorder>().unwrap(), r);
    }
    let e = "metis".parse::<Reorder>().unwrap_err().to_string();
    assert!(e.contains("none, rcm, bisection, auto"), "{e}");
}

#[test]
fn gpu_a_reordered_plan_computes_ax_in_the_matrix_numbering() {
    let Some((gpu, _g)) =
        common::gpu_or_skip("gpu_a_reordered_plan_computes_ax_in_the_matrix_numbering")
    else {
        return;
    };
    for spec in MATRICES {
        let a = generate_f64(spec).unwrap();
        for method in ["csr-vector", "csr-packed", "cusparse", "auto"] {
            let mut plan = Plan::new(
                method,
                &a,
                &opts(Backend::Gpu, Reorder::By(Ordering::Bisection)),
            )
            .unwrap();
            assert_eq!(plan.backend(), Backend::Gpu);
            assert_matches_oracle(&mut plan, &a, &format!("{method} on the GPU, {spec}"));
            // apply_device takes and returns device vectors in the matrix's numbering too
            let (x, y0) = vectors(a.nrows());
            let dx = gpu.upload(&x).unwrap();
            let mut dy = gpu.upload(&y0).unwrap();
            plan.apply_device(2.0, &dx, -1.0, &mut dy).unwrap();
            let mut y = vec![0.0; a.nrows()];
            gpu.download(&dy, &mut y).unwrap();
            let reference = oracle_spmv(&a, 2.0, &x, -1.0, &y0).unwrap();
            let c = check(&reference, &y);
            assert!(c.ok, "{method} apply_device on {spec}: row {}", c.worst_row);
            // the permuted-space call has apply_device's checks and error text
            let short = gpu.upload(&x[..x.len() - 1]).unwrap();
            let e = plan
                .apply_device_permuted(1.0, &short, 0.0, &mut dy)
                .unwrap_err()
                .to_string();
            let n = a.nrows();
            let says = format!("apply_device_permuted ({method}, a {n}x{n} matrix)");
            assert!(e.contains(&says), "{e}");
        }
    }
}

#[test]
fn a_variant_sets_the_reordering_of_its_plan() {
    let a = generate_f64("rgg:2000,order=shuffled").unwrap();
    let cpu = opts(Backend::Cpu, Reorder::None);
    let mut plan = Plan::new("csr-packed[reorder=rcm]", &a, &cpu).unwrap();
    assert_eq!(plan.ordering(), Some(Ordering::Rcm));
    assert_matches_oracle(&mut plan, &a, "csr-packed[reorder=rcm]");
    // the variant wins over the option, as a variant's parameters do
    let by_option = opts(Backend::Cpu, Reorder::By(Ordering::Bisection));
    let plan = Plan::new("csr[reorder=none]", &a, &by_option).unwrap();
    assert_eq!(plan.ordering(), None);
    let e = Plan::new("csr[reorder=metis]", &a, &cpu)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("unknown reordering 'metis'"), "{e}");
}

#[test]
fn gpu_auto_reorder_times_both_numberings_and_stays_correct() {
    let Some((_gpu, _g)) =
        common::gpu_or_skip("gpu_auto_reorder_times_both_numberings_and_stays_correct")
    else {
        return;
    };
    for spec in MATRICES {
        let a = generate_f64(spec).unwrap();
        for method in ["csr-packed", "auto[calls=1000]"] {
            let mut plan = Plan::new(method, &a, &opts(Backend::Gpu, Reorder::Auto)).unwrap();
            let note = plan.reorder_note().unwrap().to_string();
            assert!(
                note.contains("µs reordered") && note.contains("as given"),
                "{note}"
            );
            assert_eq!(plan.ordering().is_some(), note.contains("kept"), "{note}");
            assert!(!plan.prep_times().reorder.is_zero());
            assert_matches_oracle(&mut plan, &a, &format!("{method}, reorder=auto, {spec}"));
        }
    }
}

/// CG and single-reduction CG through a reordered plan run in the permuted space (from Pb, no
/// call permutes vectors, the answer permuted back once) and reach the same solution in about
/// as many iterations as without the reordering. The exact solution is not constant, so an
/// answer left in the new numbering is wrong.
fn cg_with_and_without_reordering(backend: Backend) {
    use spmvkit::solve::{cg, cg_single_reduction, SolveOptions, Stop};
    let a = generate_f64("poisson3d:14,renumber=random").unwrap();
    let want: Vec<f64> = (0..a.nrows()).map(|i| 1.0 + (i % 7) as f64 * 0.1).collect();
    let b = oracle_spmv(&a, 1.0, &want, 0.0, &vec![0.0; a.nrows()])
        .unwrap()
        .y;
    for single in [false, true] {
        let run = |method: &str| {
            let mut plan = Plan::new(method, &a, &opts(backend, Reorder::None)).unwrap();
            let solve = if single { cg_single_reduction } else { cg };
            let (x, report) = solve(&mut plan, &b, &SolveOptions::default()).unwrap();
            let what = format!("{method}, single reduction {single}, {backend:?}");
            assert_eq!(report.stop, Stop::Converged, "{what}");
            let err = x
                .iter()
                .zip(&want)
                .map(|(p, q)| (p - q).abs())
                .fold(0.0, f64::max);
            assert!(err < 1e-6, "{what}: max error {err}");
            assert_eq!(plan.permuting_calls(), 0, "{what}: a call permuted x and y");
            (plan.ordering(), report.iterations)
        };
        let (none, plain) = run("csr-packed");
        let (rcm, reordered) = run("csr-packed[reorder=rcm]");
        assert_eq!((none, rcm), (None, Some(Ordering::Rcm)));
        assert!(
            plain.abs_diff(reordered) <= 2,
            "{plain} against {reordered}"
        );
    }
}

#[test]
fn cg_through_a_reordered_plan_converges_to_the_same_solution() {
    cg_with_and_without_reordering(Backend::Cpu);
}

#[test]
fn gpu_cg_runs_in_the_permuted_space_and_converges_to_the_same_solution() {
    let Some((_gpu, _g)) =
        common::gpu_or_skip("gpu_cg_runs_in_the_permuted_space_and_converges_to_the_same_solution")
    else {
        return;
    };
    cg_with_and_without_reordering(Backend::Gpu);
}

/// PageRank through a reordered plan iterates on QPQᵀ (dangling nodes renumbered once, no call
/// permutes vectors) and gives the ranks of the plain plan, in the graph's numbering, within the
/// tolerance; on the GPU with graph and stream launches.
fn pagerank_with_and_without_reordering(backend: Backend) {
    use spmvkit::solve::{pagerank, PageRankGraph, PageRankOptions, SolveOptions, Stop};
    let adj = generate_f64("kron:10").unwrap();
    let g = PageRankGraph::from_adjacency(&adj).unwrap();
    assert!(
        !g.dangling.is_empty(),
        "the test graph needs dangling nodes"
    );
    for graph in [true, false] {
        let opts_pr = PageRankOptions {
            solve: SolveOptions {
                tol: 1e-10,
                graph,
                check_every: 5,
                ..PageRankOptions::default().solve
            },
            ..PageRankOptions::default()
        };
        let run = |method: &str| {
            let mut plan = Plan::new(method, &g.transition, &opts(backend, Reorder::None)).unwrap();
            let (x, report) = pagerank(&mut plan, &g.dangling, &opts_pr).unwrap();
            let what = format!("{method}, graph {graph}, {backend:?}");
            assert_eq!(report.stop, Stop::Converged, "{what}");
            assert_eq!(plan.permuting_calls(), 0, "{what}: a call permuted x and y");
            let moved = plan.permutation().map_or(0, |p| {
                p.new_of_old()
                    .iter()
                    .enumerate()
                    .filter(|&(i, &k)| i != k as usize)
                    .count()
            });
            (x, report.iterations, moved)
        };
        let (plain, it0, _) = run("csr-vector");
        let (reordered, it1, moved) = run("csr-vector[reorder=rcm]");
        assert!(moved > adj.nrows() / 2, "RCM moved only {moved} nodes");
        assert!(it0.abs_diff(it1) <= 1, "{it0} against {it1} iterations");
        let l1: f64 = plain
            .iter()
            .zip(&reordered)
            .map(|(p, q)| (p - q).abs())
            .sum();
        assert!(l1 < 1e-8, "graph {graph}, {backend:?}: L1 difference {l1}");
        if backend == Backend::Cpu {
            break;
        }
    }
}

#[test]
fn pagerank_through_a_reordered_plan_gives_the_same_ranks() {
    pagerank_with_and_without_reordering(Backend::Cpu);
}

#[test]
fn gpu_pagerank_runs_in_the_permuted_space_and_gives_the_same_ranks() {
    let Some((_gpu, _g)) =
        common::gpu_or_skip("gpu_pagerank_runs_in_the_permuted_space_and_gives_the_same_ranks")
    else {
        return;
    };
    pagerank_with_and_without_reordering(Backend::Gpu);
}

fn windowed(backend: Backend, windows: usize) -> PlanOptions {
    PlanOptions {
        windows,
        ..opts(backend, Reorder::None)
    }
}

#[test]
fn the_panels_hold_every_entry_once_inside_their_windows() {
    let a = generate_f64("uniform:1000,9").unwrap();
    for k in [1, 2, 3, 7] {
        let panels = column_panels(&a, k).unwrap();
        assert_eq!(panels.len(), k);
        assert_eq!(panels.iter().map(Csr::nnz).sum::<usize>(), a.nnz());
        let width = a.ncols().div_ceil(k);
        for (j, p) in panels.iter().enumerate() {
            assert_eq!((p.nrows(), p.ncols()), (a.nrows(), a.ncols()));
            assert!(p
                .col_idx()
                .iter()
                .all(|&c| (j * width..(j + 1) * width).contains(&(c as usize))));
        }
    }
}

#[test]
fn a_windowed_plan_computes_ax() {
    for spec in ["uniform:3000,8", "poisson2d:30", "powerlaw:2000,6"] {
        let a = generate_f64(spec).unwrap();
        for method in ["csr", "csr-packed", "merge"] {
            for k in [2, 5] {
                let mut plan = Plan::new(method, &a, &windowed(Backend::Cpu, k)).unwrap();
                let notes = plan.layout().notes();
                assert!(notes
                    .iter()
                    .any(|(n, v)| n == "x windows" && v.starts_with(&format!("{k} panels"))));
                assert_matches_oracle(&mut plan, &a, &format!("{method}, {k} windows, {spec}"));
            }
        }
    }
}

#[test]
fn windows_combine_with_a_reordering_and_with_value_updates() {
    let a = generate_f64("rgg:3000,order=shuffled").unwrap();
    let mut plan = Plan::new(
        "csr-packed[windows=3;reorder=rcm]",
        &a,
        &windowed(Backend::Cpu, 0),
    )
    .unwrap();
    assert!(plan.ordering().is_some());
    assert_matches_oracle(&mut plan, &a, "windows=3 with rcm");
    let vals: Vec<f64> = a.vals().iter().map(|v| v * 3.0 - 1.0).collect();
    let b = Csr::with_pattern(a.pattern().clone(), vals.clone()).unwrap();
    plan.update_values(&vals).unwrap();
    assert_matches_oracle(&mut plan, &b, "windows=3 with rcm, updated values");
}

#[test]
fn a_bad_window_count_is_refused_with_the_range() {
    let a = generate_f64("poisson2d:8").unwrap();
    for (spec, want) in [
        ("csr[windows=65]", "must be 1..=64"),
        ("csr[windows=two]", "must be a whole number"),
    ] {
        let e = Plan::new(spec, &a, &windowed(Backend::Cpu, 0))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains(want), "{spec}: {e}");
    }
    // 0 and 1 are no windows
    for k in [0, 1] {
        let plan = Plan::new("csr", &a, &windowed(Backend::Cpu, k)).unwrap();
        assert!(plan.layout().notes().iter().all(|(n, _)| n != "x windows"));
    }
}

#[test]
fn gpu_a_windowed_plan_computes_ax() {
    let Some((_gpu, _g)) = common::gpu_or_skip("gpu_a_windowed_plan_computes_ax") else {
        return;
    };
    for spec in ["uniform:20000,8", "rgg:5000,order=shuffled"] {
        let a = generate_f64(spec).unwrap();
        for method in ["csr-packed", "cusparse", "csr-vector[reorder=rcm]"] {
            let mut plan = Plan::new(method, &a, &windowed(Backend::Gpu, 3)).unwrap();
            assert_eq!(plan.backend(), Backend::Gpu);
            assert_matches_oracle(&mut plan, &a, &format!("{method}, 3 windows, {spec} (GPU)"));
        }
    }
}
