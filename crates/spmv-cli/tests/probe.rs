//! `spmv probe` (issue #19): its help explains the figures; without a GPU it fails with a clear
//! message and exit status 1; on a GPU it prints the table and writes JSON that loads as a
//! `Probe`. The GPU part is skipped visibly without a GPU (`spmvkit::testing`), and the failure
//! part is skipped where a GPU is present.

mod common;

use std::process::Command;

use common::{binary, spmv};
use spmvkit::gpu::{
    probe::{GATHER_TABLE_BYTES, ROW_BYTES},
    Probe,
};

#[test]
fn probe_help_explains_the_figures_and_their_use() {
    let (ok, out, err) = spmv(&["probe", "--help"]);
    assert!(ok, "{err}");
    for needle in [
        "copy bandwidth",
        "read bandwidth",
        "gathers",
        "t_limit = max(bytes / read bandwidth, x gathers / gather rate at x's size)",
        "distinct 32-byte sectors",
        "row gathers",
        "16, 32, 64, 128, 256, 512 and 1024 bytes",
        "rows/s x row bytes",
        "--json <FILE>",
        "docs/limits.md",
    ] {
        assert!(out.contains(needle), "no '{needle}' in:\n{out}");
    }
    let (ok, out, _) = spmv(&["--help"]);
    assert!(ok && out.contains("spmv probe"), "{out}");
}

#[test]
fn probe_without_a_gpu_fails_with_a_clear_message() {
    let test = "probe_without_a_gpu_fails_with_a_clear_message";
    if spmvkit::gpu::Gpu::get().is_ok() {
        spmvkit::testing::skip(test, "a GPU is present, so the probe runs");
        return;
    }
    let out = Command::new(binary())
        .args(["probe", "--json", "unused.json"])
        .output()
        .expect("running spmv");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("error: spmv probe measures the GPU and needs one; none is usable here ("),
        "{err}"
    );
    assert!(err.contains("GPU unavailable"), "{err}");
    assert!(out.stdout.is_empty());
    assert!(!std::path::Path::new("unused.json").exists());
}

#[test]
fn gpu_probe_prints_the_table_and_writes_json() {
    let test = "gpu_probe_prints_the_table_and_writes_json";
    if spmvkit::testing::gpu_or_skip(test).is_none() {
        return;
    }
    let json = std::env::temp_dir().join(format!("spmv-probe-{}.json", std::process::id()));
    let (ok, out, err) = spmv(&["probe", "--json", json.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(
        out.contains("read bandwidth") && out.contains("1 GiB"),
        "{out}"
    );
    assert!(
        out.contains("random row gathers, 10^9 rows/s") && out.contains("1024 B"),
        "{out}"
    );
    let p: Probe = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).unwrap();
    assert!(p.read_gbs > 0.0 && p.copy_gbs > 0.0, "{p:?}");
    assert!(!p.gather.is_empty() && p.gather.len() <= 2 * GATHER_TABLE_BYTES.len());
    assert_eq!(p.rows.len(), ROW_BYTES.len() * p.gather.len() / 2, "{p:?}");
    let (ok, out, err) = spmv(&["probe", "--json", "-"]);
    assert!(ok, "{err}");
    let again: Probe = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(again.gather.len(), p.gather.len());
    assert_eq!(again.rows.len(), p.rows.len());
}
