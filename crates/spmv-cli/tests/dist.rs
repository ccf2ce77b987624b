//! `spmv dist run`, `spmv dist solve cg` and `spmv dist pagerank` end to end (issue #12): the CPU
//! simulation always; on a machine with two GPUs, two NCCL ranks checked against the oracle with
//! β ≠ 0 for both exchange strategies, and the distributed solvers against the CPU reference.
//! The GPU parts are skipped with fewer than two GPUs ("skipped: <test>: needs 2 GPUs (found N)",
//! `spmvkit::testing`), and fail only when `SPMVKIT_REQUIRE_GPUS=2` asks for two GPUs.

mod common;

use common::spmv;

#[test]
fn simulated_ranks_match_the_oracle() {
    for strategy in ["auto", "halo", "allgather"] {
        let (ok, out, err) = spmv(&[
            "dist",
            "run",
            "poisson3d:12",
            "--gpus",
            "3",
            "--sim",
            "--json",
            "--method",
            "csr",
            "--strategy",
            strategy,
        ]);
        assert!(ok, "{strategy}: {out}\n{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["check_ok"], true, "{out}");
    }
    let (ok, _, err) = spmv(&["dist", "run", "poisson3d:4", "--gpus", "0", "--sim"]);
    assert!(!ok && err.contains("at least 1"), "{err}");
    let (ok, _, err) = spmv(&["dist", "rank", "poisson3d:4"]);
    assert!(!ok && err.contains("SPMVKIT_DIST_RANK"), "{err}");
}

/// Whether two GPUs are visible; without them the test is skipped, or fails under
/// `SPMVKIT_REQUIRE_GPUS=2`.
fn two_gpus(test: &str) -> bool {
    spmvkit::testing::gpus_or_skip(test, 2)
}

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn simulated_solvers_match_the_reference() {
    let (ok, out, err) = spmv(&[
        "dist",
        "solve",
        "cg",
        "poisson3d:10",
        "--gpus",
        "1,2,3",
        "--sim",
        "--json",
        "--method",
        "csr",
    ]);
    assert!(ok, "{out}\n{err}");
    let v = json(&out);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3, "{out}");
    for r in runs {
        assert_eq!(r["stop"], "converged", "{r}");
        assert_eq!(r["simulated"], true, "{r}");
        assert!(r["err_ref"].as_f64().unwrap() < 1e-6, "{r}");
        assert!(r["err_exact"].as_f64().unwrap() < 1e-6, "{r}");
    }
    for precision in ["f64", "f32"] {
        let (ok, out, err) = spmv(&[
            "dist",
            "pagerank",
            "kron:10",
            "--gpus",
            "4",
            "--sim",
            "--json",
            "--precision",
            precision,
            "--strategy",
            "halo",
        ]);
        assert!(ok, "{precision}: {out}\n{err}");
        let v = json(&out);
        let r = &v["runs"][0];
        assert_eq!(r["stop"], "converged", "{r}");
        assert_eq!(r["strategy"], "halo", "{r}");
        assert!(r["err_ref_l1"].as_f64().unwrap() < 1e-4, "{r}");
        assert!((r["rank_sum"].as_f64().unwrap() - 1.0).abs() < 1e-4, "{r}");
    }
    // the text summary and clear errors
    let (ok, out, err) = spmv(&[
        "dist",
        "solve",
        "cg",
        "poisson2d:12",
        "--gpus",
        "2",
        "--sim",
    ]);
    assert!(ok, "{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("dist cg poisson2d:12 f64 gpus=2(sim) strategy=")),
        "{out}"
    );
    let (ok, _, err) = spmv(&["dist", "solve", "cg", "tall:30,20,3", "--sim"]);
    assert!(!ok && err.contains("square"), "{err}");
    let (ok, _, err) = spmv(&["dist", "pagerank", "kron:6", "--damping", "1", "--sim"]);
    assert!(!ok && err.contains("damping"), "{err}");
    let (ok, _, err) = spmv(&["dist", "pagerank", "kron:6", "--gpus", "0", "--sim"]);
    assert!(!ok && err.contains("at least 1"), "{err}");
}

#[test]
fn two_gpu_solvers_match_the_reference() {
    if !two_gpus("two_gpu_solvers_match_the_reference") {
        return;
    }
    for precision in ["f64", "f32"] {
        let (ok, out, err) = spmv(&[
            "dist",
            "solve",
            "cg",
            "poisson3d:32",
            "--gpus",
            "1,2",
            "--json",
            "--precision",
            precision,
        ]);
        assert!(ok, "cg {precision}: {out}\n{err}");
        let v = json(&out);
        let bound = if precision == "f64" { 1e-6 } else { 1e-3 };
        for (r, gpus) in v["runs"].as_array().unwrap().iter().zip([1, 2]) {
            assert_eq!(r["gpus"], gpus, "{r}");
            assert_eq!(r["simulated"], false, "{r}");
            assert_eq!(r["stop"], "converged", "{r}");
            assert!(r["err_ref"].as_f64().unwrap() < bound, "{r}");
            assert!(r["err_exact"].as_f64().unwrap() < bound, "{r}");
            let (it, launched) = (
                r["iterations"].as_u64().unwrap(),
                r["launched"].as_u64().unwrap(),
            );
            assert!(launched >= it && launched % 10 == 0, "{r}");
        }
        // both exchange strategies, and a convergence check after every iteration
        for (strategy, every) in [("halo", "1"), ("allgather", "3")] {
            let (ok, out, err) = spmv(&[
                "dist",
                "solve",
                "cg",
                "poisson3d:24",
                "--gpus",
                "2",
                "--json",
                "--precision",
                precision,
                "--strategy",
                strategy,
                "--check-every",
                every,
            ]);
            assert!(ok, "cg {precision} {strategy}: {out}\n{err}");
            let v = json(&out);
            let r = &v["runs"][0];
            assert_eq!(
                (&r["strategy"], &r["stop"]),
                (&strategy.into(), &"converged".into()),
                "{r}"
            );
            assert!(r["err_ref"].as_f64().unwrap() < bound, "{r}");
            let (it, launched) = (
                r["iterations"].as_u64().unwrap(),
                r["launched"].as_u64().unwrap(),
            );
            let every: u64 = every.parse().unwrap();
            assert!(
                launched >= it && launched < it + every && launched % every == 0,
                "{r}"
            );
        }
        for strategy in ["halo", "allgather"] {
            let (ok, out, err) = spmv(&[
                "dist",
                "pagerank",
                "kron:12",
                "--gpus",
                "2",
                "--json",
                "--precision",
                precision,
                "--strategy",
                strategy,
            ]);
            assert!(ok, "pagerank {precision} {strategy}: {out}\n{err}");
            let v = json(&out);
            let r = &v["runs"][0];
            assert_eq!(r["gpus"], 2, "{r}");
            assert_eq!(r["strategy"], strategy, "{r}");
            assert_eq!(r["stop"], "converged", "{r}");
            let bound = if precision == "f64" { 1e-5 } else { 1e-3 };
            assert!(r["err_ref_l1"].as_f64().unwrap() < bound, "{r}");
            assert!((r["rank_sum"].as_f64().unwrap() - 1.0).abs() < bound, "{r}");
            assert_eq!(r["ranks"].as_array().unwrap().len(), 2, "{r}");
        }
    }
}

#[test]
fn two_gpus_match_the_oracle() {
    if !two_gpus("two_gpus_match_the_oracle") {
        return;
    }
    for (m, method) in [
        ("kron:16", "auto"),
        ("poisson3d:64", "csr-vector"),
        ("tall:40000,10000,8", "merge"),
    ] {
        for strategy in ["halo", "allgather"] {
            for precision in ["f64", "f32"] {
                let (ok, out, err) = spmv(&[
                    "dist",
                    "run",
                    m,
                    "--gpus",
                    "2",
                    "--json",
                    "--method",
                    method,
                    "--strategy",
                    strategy,
                    "--precision",
                    precision,
                    "--beta",
                    "-0.75",
                    "--reps",
                    "3",
                    "--samples",
                    "2",
                ]);
                assert!(ok, "{m} {strategy} {precision}: {out}\n{err}");
                let v: serde_json::Value = serde_json::from_str(&out).unwrap();
                assert_eq!(v["check_ok"], true, "{out}");
                assert_eq!(v["gpus"], 2, "{out}");
                assert_eq!(v["strategy"], strategy, "{out}");
            }
        }
    }
}
