//! `spmv solve cg` and `spmv pagerank` end to end: the binary converges to the CPU reference on
//! small generated inputs (on the GPU when one is present, else on the CPU), prints JSON that
//! parses, and refuses a non-square matrix with a clear error.

mod common;

use common::{assert_pagerank_close, spmv_fails, spmv_json, spmv_ok, spmv_prints_line};

use serde_json::Value;

/// Runs spmv, which must succeed, and returns the run records of its JSON output.
fn runs(args: &[&str]) -> Vec<Value> {
    spmv_json(args)["runs"].as_array().expect("runs").clone()
}

#[test]
fn cg_converges_to_the_reference_and_prints_a_summary() {
    let runs = runs(&["solve", "cg", "poisson3d:10", "--no-cache", "--json"]);
    assert!(!runs.is_empty());
    for r in &runs {
        assert_eq!(r["report"]["stop"], "converged", "{r}");
        assert!(r["err_ref"].as_f64().unwrap() < 1e-6, "{r}");
        assert!(r["err_exact"].as_f64().unwrap() < 1e-6, "{r}");
    }
    let out = spmv_prints_line(
        &[
            "solve",
            "cg",
            "poisson2d:12",
            "--no-cache",
            "--graph",
            "both",
        ],
        "cg poisson2d:12 f64 method=",
    );
    assert!(out.contains("iters/s="), "{out}");
}

#[test]
fn pagerank_converges_to_the_reference() {
    for r in runs(&[
        "pagerank",
        "kron:9",
        "--no-cache",
        "--precision",
        "f32",
        "--json",
    ]) {
        assert_eq!(r["report"]["stop"], "converged", "{r}");
        assert_pagerank_close(&r, 1e-4);
    }
}

#[test]
fn cg_refuses_a_non_square_matrix() {
    let dir = std::env::temp_dir().join(format!("spmv-cli-solve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("wide.mtx");
    std::fs::write(
        &path,
        "%%MatrixMarket matrix coordinate real general\n2 3 2\n1 1 1.0\n2 3 2.0\n",
    )
    .unwrap();
    let p = path.to_str().unwrap();
    spmv_fails(&["solve", "cg", p, "--no-cache"], "square");
    spmv_fails(&["pagerank", p, "--no-cache"], "square");
    std::fs::remove_dir_all(&dir).ok();
}

/// `spmv solve`, like `spmv run` and `spmv bench`, takes a method variant `name[key=value;...]`
/// (one resolution, `Plan::new`), and a bad one is an error that names the problem.
#[test]
fn solve_and_run_take_method_variants() {
    for r in runs(&[
        "solve",
        "cg",
        "poisson2d:12",
        "--no-cache",
        "--cpu",
        "--method",
        "merge[items=3]",
        "--json",
    ]) {
        assert_eq!(r["report"]["stop"], "converged", "{r}");
    }
    let out = spmv_ok(&[
        "run",
        "poisson2d:12",
        "--no-cache",
        "--method",
        "merge[items=3]",
    ]);
    assert!(out.contains("merge[items=3]"), "{out}");
    for (spec, says) in [
        ("merge[items=3", "unbalanced brackets"),
        ("nosuch[a=b]", "unknown method 'nosuch'"),
        ("merge[nokey=1]", "nokey"),
    ] {
        for cmd in [&["solve", "cg"][..], &["run"]] {
            let mut args = cmd.to_vec();
            args.extend(["poisson2d:8", "--no-cache", "--cpu", "--method", spec]);
            spmv_fails(&args, says);
        }
    }
}
