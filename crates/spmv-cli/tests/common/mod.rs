//! Shared by the CLI integration tests: finding the `spmv` binary and running it.

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
