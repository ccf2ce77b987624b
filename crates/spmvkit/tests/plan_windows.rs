//! `PlanOptions::windows` (issue #22, x windows): the column panels add up to the matrix; a
//! windowed plan computes y = αAx + βy (β applied once, by the first panel) on the CPU and
//! (gated) on the GPU, alone and with a reordering; values can be updated; bad counts are
//! refused with the range.
//!
//! GPU tests are skipped with a `skipped:` line without a GPU (`spmvkit::testing`); with
//! `SPMVKIT_REQUIRE_GPU=1` a missing GPU fails.

mod common;

use spmvkit::cpu::{check, oracle_spmv};
use spmvkit::gen::generate_f64;
use spmvkit::methods::windows::column_panels;
use spmvkit::{Backend, Csr, Plan, PlanOptions};

fn opts(backend: Backend, windows: usize) -> PlanOptions {
    PlanOptions {
        backend: Some(backend),
        windows,
        ..PlanOptions::default()
    }
}

fn assert_matches_oracle(plan: &mut Plan<f64>, a: &Csr<f64>, what: &str) {
    let x: Vec<f64> = (0..a.ncols())
        .map(|j| 1.0 - (j % 7) as f64 * 0.25)
        .collect();
    let y0: Vec<f64> = (0..a.nrows())
        .map(|i| 0.5 + (i % 3) as f64 * 0.75)
        .collect();
    for (alpha, beta) in [(1.0, 0.0), (-1.5, 0.75)] {
        let mut y = y0.clone();
        plan.apply(alpha, &x, beta, &mut y).unwrap();
        let reference = oracle_spmv(a, alpha, &x, beta, &y0).unwrap();
        let c = check(&reference, &y);
        assert!(
            c.ok,
            "{what} (α = {alpha}, β = {beta}): row {}",
            c.worst_row
        );
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
                let mut plan = Plan::new(method, &a, &opts(Backend::Cpu, k)).unwrap();
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
        &opts(Backend::Cpu, 0),
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
        let e = Plan::new(spec, &a, &opts(Backend::Cpu, 0))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains(want), "{spec}: {e}");
    }
    // 0 and 1 are no windows
    for k in [0, 1] {
        let plan = Plan::new("csr", &a, &opts(Backend::Cpu, k)).unwrap();
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
            let mut plan = Plan::new(method, &a, &opts(Backend::Gpu, 3)).unwrap();
            assert_eq!(plan.backend(), Backend::Gpu);
            assert_matches_oracle(&mut plan, &a, &format!("{method}, 3 windows, {spec} (GPU)"));
        }
    }
}
