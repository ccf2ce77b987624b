//! `spmv dist run`, `spmv dist solve cg` and `spmv dist pagerank` end to end (issue #12): the CPU
//! simulation always; on a machine with two GPUs, two NCCL ranks checked against the oracle with
//! β ≠ 0 for both exchange strategies, and the distributed solvers against the CPU reference.
//! The GPU parts are skipped with fewer than two GPUs ("skipped: <test>: needs 2 GPUs (found N)",
//! `spmvkit::testing`), and fail only when `SPMVKIT_REQUIRE_GPUS=2` asks for two GPUs.

mod common;

use common::{assert_pagerank_close, spmv_fails, spmv_json, spmv_prints_line};
use serde_json::Value;

#[test]
fn simulated_ranks_match_the_oracle() {
    for strategy in ["auto", "halo", "allgather"] {
        let v = dist_json(
            &["run", "poisson3d:12"],
            "3",
            &["--sim", "--method", "csr", "--strategy", strategy],
        );
        assert_eq!(v["check_ok"], true, "{v}");
    }
    spmv_fails(
        &["dist", "run", "poisson3d:4", "--gpus", "0", "--sim"],
        "at least 1",
    );
    spmv_fails(&["dist", "rank", "poisson3d:4"], "SPMVKIT_DIST_RANK");
}

/// Simulated ranks read only their rows (issue #26) from a cache file by byte range and from a
/// row-range generator, and load the whole matrix under `--whole` or for `kron`; every way
/// matches the oracle.
#[test]
fn simulated_ranks_read_only_their_rows() {
    let dir = std::env::temp_dir().join(format!("spmv-dist-rows-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cache = dir.join("a.spmvkit");
    let cache = cache.to_str().unwrap();
    common::spmv_ok(&["gen", "powerlaw:2000,6", "-o", cache]);
    for (matrix, extra, input) in [
        (cache, None, "rows"),
        (cache, Some("--whole"), "whole"),
        ("poisson3d:10", None, "rows"),
        ("uniform:2000,5", Some("--whole"), "whole"),
        ("kron:8", None, "whole"),
    ] {
        let mut flags = vec!["--sim", "--strategy", "halo", "--precision", "f32"];
        flags.extend(extra);
        let v = dist_json(&["run", matrix], "3", &flags);
        assert_eq!(v["check_ok"], true, "{matrix} {v}");
        assert_eq!(v["sim"]["input"], input, "{matrix} {extra:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `spmv ARGS` with `vars` set and every launcher's variables removed: (success, stderr).
fn spmv_with_env(args: &[&str], vars: &[(&str, &str)]) -> (bool, String) {
    let mut cmd = std::process::Command::new(common::binary());
    cmd.args(args);
    for k in [
        "SPMVKIT_DIST_RANK",
        "SPMVKIT_DIST_WORLD",
        "SPMVKIT_DIST_ROOT",
        "SPMVKIT_DIST_TOKEN",
        "RANK",
        "WORLD_SIZE",
        "LOCAL_RANK",
        "MASTER_ADDR",
        "MASTER_PORT",
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_SIZE",
        "SLURM_PROCID",
        "SLURM_NTASKS",
    ] {
        cmd.env_remove(k);
    }
    cmd.envs(vars.iter().copied());
    let out = cmd.output().expect("running spmv");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A rank started by a standard launcher reads its place from the launcher's variables: a
/// partial or inconsistent environment is refused naming the variables, before any GPU work;
/// a complete one gets as far as the GPU (here: none, or it runs).
#[test]
fn ranks_take_their_place_from_standard_launchers() {
    let rank = ["dist", "rank", "poisson2d:8"];
    let (ok, err) = spmv_with_env(&rank, &[("RANK", "0")]);
    assert!(!ok && err.contains("WORLD_SIZE"), "{err}");
    let (ok, err) = spmv_with_env(
        &rank,
        &[("OMPI_COMM_WORLD_RANK", "2"), ("OMPI_COMM_WORLD_SIZE", "2")],
    );
    assert!(
        !ok && err.contains("OMPI_COMM_WORLD_RANK=2") || err.contains("rank 2 of a world of 2"),
        "{err}"
    );
    let (ok, err) = spmv_with_env(&rank, &[("SLURM_PROCID", "1"), ("SLURM_NTASKS", "2")]);
    assert!(!ok && err.contains("MASTER_ADDR"), "{err}");
    let (ok, err) = spmv_with_env(
        &rank,
        &[
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("MASTER_ADDR", "127.0.0.1"),
            ("MASTER_PORT", "1"),
        ],
    );
    assert!(!ok && err.contains("SPMVKIT_DIST_TOKEN"), "{err}");
    // one complete torchrun rank of a world of one: past the environment, to the GPU
    let (ok, err) = spmv_with_env(
        &rank,
        &[("RANK", "0"), ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0")],
    );
    if spmvkit::gpu::device_count() == 0 {
        assert!(!ok && !err.contains("WORLD_SIZE"), "{err}");
    } else {
        assert!(ok, "{err}");
    }
    let token = common::spmv_ok(&["dist", "token"]);
    assert_eq!(token.trim().len(), 32, "{token}");
}

/// `spmv dist solve cg --single-reduction` converges like CG on simulated ranks.
#[test]
fn simulated_single_reduction_cg_matches_cg() {
    let plain = dist_json(&["solve", "cg", "poisson3d:12"], "3", &["--sim"]);
    let one = dist_json(
        &["solve", "cg", "poisson3d:12"],
        "3",
        &["--sim", "--single-reduction"],
    );
    let (a, b) = (&plain["runs"][0], &one["runs"][0]);
    assert_eq!(b["stop"], "converged", "{one}");
    let (ia, ib) = (
        a["iterations"].as_u64().unwrap(),
        b["iterations"].as_u64().unwrap(),
    );
    assert!(ia.abs_diff(ib) <= 2, "{ia} vs {ib}");
    assert!(b["err_exact"].as_f64().unwrap() < 1e-6, "{one}");
    spmv_fails(
        &["dist", "pagerank", "kron:6", "--sim", "--single-reduction"],
        "CG option",
    );
}

/// `spmv dist solve cg` and `spmv dist pagerank` with `--reorder` on simulated ranks (issue #22):
/// the same answer as without (against the reference, in the matrix's numbering), the halo
/// volume of a randomly numbered mesh and of a shuffled geometric graph smaller after RCM, and
/// ranks that would read only their rows refused with the flag to use.
#[test]
fn simulated_solvers_reorder_once_and_shrink_the_halo() {
    let cases: [(&[&str], &[&str]); 3] = [
        (&["solve", "cg", "poisson2d:40,renumber=random"], &[]),
        (
            &["solve", "cg", "poisson3d:10"],
            &["--whole", "--single-reduction"],
        ),
        (&["pagerank", "rgg:5000,order=shuffled"], &[]),
    ];
    for (args, extra) in cases {
        let mut flags = vec!["--sim", "--reorder", "rcm"];
        flags.extend_from_slice(extra);
        let v = dist_json(args, "3", &flags);
        let r = &v["runs"][0];
        if args[0] == "pagerank" {
            assert_eq!(r["stop"], "converged", "{r}");
            assert_pagerank_close(r, 1e-6);
        } else {
            assert_cg_converged(r, 1e-6);
        }
        let (before, after) = (
            r["reorder"]["halo_before"]["total"].as_u64().unwrap(),
            r["reorder"]["halo_after"]["total"].as_u64().unwrap(),
        );
        assert_eq!(r["reorder"]["ordering"], "rcm", "{r}");
        if extra.is_empty() {
            assert!(after * 4 < before, "{args:?}: halo {before} → {after}");
        }
        let notes = r["notes"].to_string();
        assert!(notes.contains("halo volume"), "{notes}");
    }
    for (ordering, says) in [("rcm", "add --whole"), ("metis", "rcm, bisection")] {
        let args = [
            "dist",
            "solve",
            "cg",
            "poisson3d:8",
            "--sim",
            "--reorder",
            ordering,
        ];
        spmv_fails(&args, says);
    }
}

/// The same on one GPU rank (skipped without a GPU): the rank orders the whole matrix it
/// loaded, solves on its rows of PAPᵀ and names the matrix rows of its answer, which the
/// launcher puts back in place (PageRank's ranks differ from node to node, so a value in the
/// wrong place fails the reference check).
#[test]
fn gpu_one_rank_solvers_reorder_once() {
    if !spmvkit::testing::gpus_or_skip("gpu_one_rank_solvers_reorder_once", 1) {
        return;
    }
    let cases: [(&[&str], &[&str]); 3] = [
        (&["pagerank", "rgg:5000,order=shuffled"], &[]),
        (&["solve", "cg", "poisson2d:40,renumber=random"], &[]),
        (
            &["solve", "cg", "poisson3d:16"],
            &["--whole", "--single-reduction"],
        ),
    ];
    for (args, extra) in cases {
        let mut flags = vec!["--reorder", "rcm"];
        flags.extend_from_slice(extra);
        let v = dist_json(args, "1", &flags);
        let r = &v["runs"][0];
        assert_eq!(r["simulated"], false, "{r}");
        if args[0] == "pagerank" {
            assert_eq!(r["stop"], "converged", "{r}");
            assert_pagerank_close(r, 1e-6);
        } else {
            assert_cg_converged(r, 1e-6);
        }
        assert_eq!(r["reorder"]["ordering"], "rcm", "{r}");
        assert!(
            r["ranks"][0]["reorder"]["seconds"].as_f64().is_some(),
            "{r}"
        );
    }
}

/// `spmv dist ARGS --gpus GPUS --json EXTRA...`, its JSON.
fn dist_json(args: &[&str], gpus: &str, extra: &[&str]) -> Value {
    let mut all = vec!["dist"];
    all.extend_from_slice(args);
    all.extend(["--gpus", gpus, "--json"]);
    all.extend_from_slice(extra);
    spmv_json(&all)
}

/// Whether two GPUs are visible; without them the test is skipped, or fails under
/// `SPMVKIT_REQUIRE_GPUS=2`.
fn two_gpus(test: &str) -> bool {
    spmvkit::testing::gpus_or_skip(test, 2)
}

/// A converged CG run record whose errors against the reference and the exact solution are
/// below `bound`.
fn assert_cg_converged(r: &Value, bound: f64) {
    assert_eq!(r["stop"], "converged", "{r}");
    assert!(r["err_ref"].as_f64().unwrap() < bound, "{r}");
    assert!(r["err_exact"].as_f64().unwrap() < bound, "{r}");
}

/// A run record's (iterations, launched iterations).
fn iterations(r: &Value) -> (u64, u64) {
    (
        r["iterations"].as_u64().unwrap(),
        r["launched"].as_u64().unwrap(),
    )
}

#[test]
fn simulated_solvers_match_the_reference() {
    let v = dist_json(
        &["solve", "cg", "poisson3d:10"],
        "1,2,3",
        &["--sim", "--method", "csr"],
    );
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3, "{v}");
    for r in runs {
        assert_cg_converged(r, 1e-6);
        assert_eq!(r["simulated"], true, "{r}");
    }
    for precision in ["f64", "f32"] {
        let v = dist_json(
            &["pagerank", "kron:10"],
            "4",
            &["--sim", "--precision", precision, "--strategy", "halo"],
        );
        let r = &v["runs"][0];
        assert_eq!(r["stop"], "converged", "{r}");
        assert_eq!(r["strategy"], "halo", "{r}");
        assert_pagerank_close(r, 1e-4);
    }
    // the text summary and clear errors
    spmv_prints_line(
        &[
            "dist",
            "solve",
            "cg",
            "poisson2d:12",
            "--gpus",
            "2",
            "--sim",
        ],
        "dist cg poisson2d:12 f64 gpus=2(sim) strategy=",
    );
    spmv_fails(&["dist", "solve", "cg", "tall:30,20,3", "--sim"], "square");
    spmv_fails(
        &["dist", "pagerank", "kron:6", "--damping", "1", "--sim"],
        "damping",
    );
    spmv_fails(
        &["dist", "pagerank", "kron:6", "--gpus", "0", "--sim"],
        "at least 1",
    );
}

#[test]
fn two_gpu_solvers_match_the_reference() {
    if !two_gpus("two_gpu_solvers_match_the_reference") {
        return;
    }
    for precision in ["f64", "f32"] {
        let v = dist_json(
            &["solve", "cg", "poisson3d:32"],
            "1,2",
            &["--precision", precision],
        );
        let bound = if precision == "f64" { 1e-6 } else { 1e-3 };
        for (r, gpus) in v["runs"].as_array().unwrap().iter().zip([1, 2]) {
            assert_eq!(r["gpus"], gpus, "{r}");
            assert_eq!(r["simulated"], false, "{r}");
            assert_cg_converged(r, bound);
            let (it, launched) = iterations(r);
            assert!(launched >= it && launched % 10 == 0, "{r}");
        }
        // single-reduction CG: one all-reduce per iteration on every rank (plain CG: two), and
        // ranks that read only their rows (the default) against --whole
        for (flag, per_iter) in [("--single-reduction", 1.0), ("--whole", 2.0)] {
            let v = dist_json(
                &["solve", "cg", "poisson3d:32"],
                "2",
                &["--precision", precision, flag],
            );
            let r = &v["runs"][0];
            assert_cg_converged(r, bound);
            for rank in r["ranks"].as_array().unwrap() {
                assert_eq!(
                    rank["allreduces_per_iter"].as_f64(),
                    Some(per_iter),
                    "{rank}"
                );
            }
        }
        // both exchange strategies, and a convergence check after every iteration
        for (strategy, every) in [("halo", 1), ("allgather", 3)] {
            let v = dist_json(
                &["solve", "cg", "poisson3d:24"],
                "2",
                &[
                    "--precision",
                    precision,
                    "--strategy",
                    strategy,
                    "--check-every",
                    &every.to_string(),
                ],
            );
            let r = &v["runs"][0];
            assert_eq!(
                (&r["strategy"], &r["stop"]),
                (&strategy.into(), &"converged".into()),
                "{r}"
            );
            assert!(r["err_ref"].as_f64().unwrap() < bound, "{r}");
            let (it, launched) = iterations(r);
            assert!(
                launched >= it && launched < it + every && launched % every == 0,
                "{r}"
            );
        }
        for strategy in ["halo", "allgather"] {
            let v = dist_json(
                &["pagerank", "kron:12"],
                "2",
                &["--precision", precision, "--strategy", strategy],
            );
            let r = &v["runs"][0];
            assert_eq!(r["gpus"], 2, "{r}");
            assert_eq!(r["strategy"], strategy, "{r}");
            assert_eq!(r["stop"], "converged", "{r}");
            assert_pagerank_close(r, if precision == "f64" { 1e-5 } else { 1e-3 });
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
                let v = dist_json(
                    &["run", m],
                    "2",
                    &[
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
                    ],
                );
                assert_eq!(v["check_ok"], true, "{v}");
                assert_eq!(v["gpus"], 2, "{v}");
                assert_eq!(v["strategy"], strategy, "{v}");
                // kron is generated whole; the others read only their rows (issue #26)
                let input = if m.starts_with("kron") {
                    "whole"
                } else {
                    "rows"
                };
                for r in v["ranks"].as_array().unwrap() {
                    assert_eq!(r["input"], input, "{r}");
                }
            }
        }
    }
    // the whole-matrix path, and a cache file read by byte range
    let dir = std::env::temp_dir().join(format!("spmv-dist-2gpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cache = dir.join("p.spmvkit");
    let cache = cache.to_str().unwrap();
    common::spmv_ok(&["gen", "powerlaw:200000,9", "-o", cache]);
    for (m, extra, input) in [
        ("poisson3d:64", "--whole", "whole"),
        (cache, "--beta=0.25", "rows"),
    ] {
        let v = dist_json(&["run", m], "2", &[extra, "--reps", "3", "--samples", "2"]);
        assert_eq!(v["check_ok"], true, "{v}");
        for r in v["ranks"].as_array().unwrap() {
            assert_eq!(r["input"], input, "{r}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
