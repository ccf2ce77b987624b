//! `spmv report --claims SECTION`: the per-paper tables of saved runs, printed and not written.

mod common;

use common::spmv;

#[test]
fn claims_tables_are_printed_from_saved_runs_and_nothing_is_written() {
    let dir = std::env::temp_dir().join(format!("spmv-report-claims-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = dir.to_str().unwrap();
    let (ok, _, err) = spmv(&[
        "bench",
        "poisson2d:10",
        "--methods",
        "teb,csr-scalar,csr5",
        "--reps",
        "1",
        "--samples",
        "1",
        "--warmup",
        "0",
        "--no-cache",
        "--out",
        out,
    ]);
    assert!(ok, "{err}");
    std::fs::remove_file(dir.join("summary.md")).unwrap();

    let (ok, tables, err) = spmv(&["report", out, "--claims", "teb"]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = tables.lines().collect();
    assert_eq!(
        lines[0],
        "| precision | matrices | method | × over amf-csr | × over pbc | × over csr-scalar | × over csr5 | × over cusparse |",
        "{tables}"
    );
    // on the CPU: no cusparse; amf-csr and pbc were not asked for
    let row = lines
        .iter()
        .find(|l| l.starts_with("| f64 | all | `teb` |"));
    assert!(
        row.is_some_and(|r| r.starts_with("| f64 | all | `teb` | – | – | ")
            && r.ends_with(" | – |")
            && r.matches("(n=1)").count() == 2),
        "{tables}"
    );
    assert!(
        !dir.join("summary.md").exists(),
        "--claims wrote the report"
    );

    let (ok, all, _) = spmv(&["report", out, "--claims", "all"]);
    assert!(ok && all.starts_with("## fastload\n\n") && all.contains("\n## teb\n\n"));
    assert!(all.contains(&tables), "{all}");

    // the tables are printed, not written: --out makes no sense with them
    let (ok, _, err) = spmv(&["report", out, "--claims", "teb", "--out", out]);
    assert!(!ok && err.contains("--out"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
