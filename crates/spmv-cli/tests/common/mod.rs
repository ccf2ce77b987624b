//! Shared by the CLI integration tests: finding the `spmv` binary, running it, and reading its
//! JSON output.

/// The spmv binary: `SPMV_BIN`, cargo's build of it, or `.gpu/bin/spmv` of a GPU pack (test
/// executables run from the package root there, where cargo's build path does not exist).
pub fn binary() -> std::path::PathBuf {
    let candidates = [
        std::env::var("SPMV_BIN").ok(),
        Some(env!("CARGO_BIN_EXE_spmv").to_string()),
        Some("../../.gpu/bin/spmv".to_string()),
    ];
    candidates
        .into_iter()
        .flatten()
        .map(std::path::PathBuf::from)
        .find(|p| p.is_file())
        .expect("no spmv binary: set SPMV_BIN")
}

#[allow(dead_code)]
pub fn spmv(args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(binary())
        .args(args)
        .output()
        .expect("running spmv");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs spmv and returns its stdout, failing the test (with the arguments, stdout and stderr) when
/// the command fails.
#[allow(dead_code)]
pub fn spmv_ok(args: &[&str]) -> String {
    let (ok, out, err) = spmv(args);
    assert!(ok, "{args:?}: {out}\n{err}");
    out
}

/// Runs spmv, which must succeed and print a line starting with `prefix`; returns its stdout.
#[allow(dead_code)]
pub fn spmv_prints_line(args: &[&str], prefix: &str) -> String {
    let out = spmv_ok(args);
    assert!(out.lines().any(|l| l.starts_with(prefix)), "{out}");
    out
}

/// Runs spmv, which must succeed, and parses its stdout as JSON.
#[allow(dead_code)]
pub fn spmv_json(args: &[&str]) -> serde_json::Value {
    let out = spmv_ok(args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

/// Runs spmv, which must fail with an error message containing `says`.
#[allow(dead_code)]
pub fn spmv_fails(args: &[&str], says: &str) {
    let (ok, _, err) = spmv(args);
    assert!(!ok, "{args:?} was accepted");
    assert!(err.contains(says), "{args:?}: {err}");
}

/// The checks of a converged PageRank run record: the L1 distance to the reference and the
/// ranks' sum (1) within `bound`.
#[allow(dead_code)]
pub fn assert_pagerank_close(r: &serde_json::Value, bound: f64) {
    assert!(r["err_ref_l1"].as_f64().unwrap() < bound, "{r}");
    assert!((r["rank_sum"].as_f64().unwrap() - 1.0).abs() < bound, "{r}");
}
