//! Fixtures shared by the report's tests (and the limits tests): records, results, matrices and
//! whole runs; and the end-to-end tests of [`super::write_report`].

use std::fs;

use super::*;
use crate::bench::{MachineInfo, MatrixResult, MethodResult, RunRecord, Status, Timing};
use crate::matrix::LengthStats;
use crate::methods::Backend;

pub(crate) fn record(method: &str, p: Precision, nnz: usize, t_us: f64, prep_ms: f64) -> RunRecord {
    let n = (nnz / 10).max(1);
    let mut rec = fixtures::record(method, p, n, nnz, vec![t_us], t_us * 0.9, prep_ms);
    rec.prep_stages_ms = vec![("sort".into(), prep_ms)];
    rec.notes = vec![("k".into(), "a,b".into())];
    rec
}

pub(crate) fn ok(method: &str, p: Precision, nnz: usize, t_us: f64, prep_ms: f64) -> MethodResult {
    fixtures::ok(record(method, p, nnz, t_us, prep_ms))
}

pub(crate) fn failed(method: &str, p: Precision, why: &str) -> MethodResult {
    fixtures::not_ok(method, p, Status::Failed, why)
}

pub(crate) fn matrix(
    name: &str,
    nnz: usize,
    variation: f64,
    fits_l2: bool,
    results: Vec<MethodResult>,
) -> MatrixResult {
    let n = (nnz / 10).max(1);
    MatrixResult {
        name: name.into(),
        source: format!("{name}.mtx"),
        stats: fixtures::stats(
            n,
            nnz,
            LengthStats {
                min: 1,
                max: 40,
                mean: 10.0,
                std: 10.0 * variation,
            },
            variation,
            (3, 4),
        ),
        fits_l2,
        results,
        multi: Vec::new(),
    }
}

pub(crate) fn machine() -> MachineInfo {
    fixtures::machine("2026-11-21T22:00:00Z")
}

pub(crate) const F64: Precision = Precision::F64;

/// A matrix with `nrows` rows (mean row length nnz / nrows).
pub(crate) fn matrix_rows(
    name: &str,
    nnz: usize,
    nrows: usize,
    results: Vec<MethodResult>,
) -> MatrixResult {
    let mut m = matrix(name, nnz, 0.5, false, results);
    m.stats.nrows = nrows;
    m
}

pub(crate) const F32: Precision = Precision::F32;

/// Three matrices with the Eq. 2 trio in f32 (one also with a variant of csr-full-overlap,
/// one without csr-overlap), plus claims' methods.
pub(crate) fn eq2_run() -> BenchRun {
    let trio = |e2e: f64, full: f64, partial: f64| {
        vec![
            ok("cusparse", F32, 1000, 10.0, 0.0),
            ok("cusparse-e2e", F32, 1000, e2e, 0.0),
            ok("csr-full-overlap", F32, 1000, full, 0.0),
            ok("csr-overlap", F32, 1000, partial, 0.0),
        ]
    };
    let mut a = trio(30.0, 20.0, 5.0); // Eq. 2 = 3, ratio 1.5
    a.push(ok("csr-full-overlap[stream_num=4]", F32, 1000, 1.0, 0.0));
    a.push(ok("fastload", F32, 1000, 5.0, 0.0)); // 2× over cusparse
    a.push(ok("teb", F32, 1000, 4.0, 0.0));
    let mut b = trio(24.0, 16.0, 8.0); // Eq. 2 = 2, ratio 1.5
    b.push(ok("fastload", F32, 1000, 1.25, 0.0)); // 8× over cusparse
    b.push(failed("teb", F32, "boom"));
    let mut c = trio(24.0, 16.0, 8.0);
    c.retain(|r| r.method != "csr-overlap");
    BenchRun {
        skipped: Vec::new(),
        machine: machine(),
        suite: None,
        matrices: vec![
            matrix_rows("a", 1000, 100, a), // mean row length 10
            matrix_rows("b", 1000, 20, b),  // 50
            matrix_rows("c", 1000, 10, c),  // 100
        ],
    }
}

/// Splits one CSV line into fields (quotes honoured).
pub(crate) fn csv_split(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                out.last_mut().unwrap().push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out
}

pub(crate) fn synthetic_run() -> BenchRun {
    let mut matrices = Vec::new();
    for (i, (name, nnz, var, l2)) in [
        ("small", 20_000usize, 0.2, true),
        ("mid", 600_000, 1.5, false),
        ("big", 3_000_000, 4.0, false),
    ]
    .into_iter()
    .enumerate()
    {
        let base = nnz as f64 * 12.0 / 2500.0 * 1e-3 + 4.0;
        let mut results = vec![
            ok("cusparse-alg1", F64, nnz, base * 1.1, 0.01),
            ok("cusparse-alg2", F64, nnz, base, 0.05),
        ];
        if i == 1 {
            results.push(failed(
                "fastload",
                F64,
                "CUDA error in launch: too many resources requested",
            ));
        } else {
            results.push(ok(
                "fastload",
                F64,
                nnz,
                base / (1.2 + i as f64 * 0.3),
                2.0 + nnz as f64 * 1e-5,
            ));
        }
        matrices.push(matrix(name, nnz, var, l2, results));
    }
    BenchRun {
        skipped: Vec::new(),
        machine: machine(),
        suite: Some("synthetic".into()),
        matrices,
    }
}

/// A CPU result with the given per-call samples (and auto's choice in the notes).
pub(crate) fn cpu_ok(method: &str, samples: &[f64], chose: Option<&str>) -> MethodResult {
    let mut r = ok(method, F64, 1000, 1.0, 0.1);
    if let Some(rec) = r.record.as_mut() {
        rec.backend = Backend::Cpu;
        rec.graph_time = None;
        rec.set_stream_timing(Timing::from_samples(samples.to_vec()));
        rec.notes = chose
            .map(|c| vec![("auto chose".to_string(), c.to_string())])
            .unwrap_or_default();
    }
    r
}

pub(crate) fn cpu_run() -> BenchRun {
    let unsupported = || MethodResult {
        status: Status::Unsupported,
        ..failed("cusparse-alg1", F64, "GPU unavailable")
    };
    let a = vec![
        cpu_ok("csr", &[10.0, 10.1, 10.2, 10.3, 10.4], None),
        cpu_ok("csc", &[10.2, 10.3, 10.4, 10.5, 10.6], None),
        cpu_ok("fastload", &[20.0, 20.1, 20.2, 20.3, 20.4], None),
        cpu_ok("auto", &[9.9, 10.0, 10.1, 10.2, 10.3], Some("csr")),
        unsupported(),
    ];
    let b = vec![
        cpu_ok("csr", &[10.0, 10.1, 10.2, 10.3, 10.4], None),
        cpu_ok("csc", &[5.0, 5.05, 5.1, 5.15, 5.2], None),
        cpu_ok("fastload", &[20.0, 20.1, 20.2, 20.3, 20.4], None),
        cpu_ok("auto", &[12.0, 12.2, 12.4, 12.6, 12.8], Some("csr")),
        unsupported(),
    ];
    BenchRun {
        skipped: vec![("broken.mtx".into(), "broken.mtx: line 3: bad value".into())],
        machine: MachineInfo {
            gpu: "none".into(),
            ..MachineInfo::default()
        },
        suite: Some("quick".into()),
        matrices: vec![
            matrix("a", 1000, 0.1, false, a),
            matrix("b", 1000, 0.1, false, b),
        ],
    }
}

#[test]
fn writes_full_report_with_failure_listed() {
    let dir = std::env::temp_dir().join(format!("spmvkit-report-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let files = write_report(&[synthetic_run()], &dir).unwrap();
    let summary = fs::read_to_string(&files.summary).unwrap();
    assert!(
        summary.contains("too many resources requested"),
        "{summary}"
    );
    assert!(
        summary.contains("| big | f64 |") || summary.contains("| mid | f64 | fastload | failed |"),
        "{summary}"
    );
    assert!(summary.contains("NVIDIA Test GPU (132 SMs, 80.0 GiB memory, 50.0 MiB L2)"));
    assert!(summary.contains("3000.0 GB/s"));
    assert!(summary.contains("fits in L2"));
    assert!(summary.contains("No csr results in f64"));
    let csv = fs::read_to_string(&files.csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 9);
    let width = csv_split(lines[0]).len();
    for l in &lines {
        assert_eq!(csv_split(l).len(), width, "{l}");
    }
    assert!(csv.contains("mid,mid.mtx,false"));
    assert!(
        csv.contains(",fastload,f64,failed,CUDA error in launch: too many resources requested,")
    );
    assert_eq!(files.plots.len(), 8, "{:?} {:?}", files.plots, files.notes);
    for stem in [
        "profile-f64",
        "speedup-nnz-f64",
        "speedup-variation-f64",
        "prep-nnz-f64",
    ] {
        for ext in ["svg", "png"] {
            let f = dir.join("plots").join(format!("{stem}.{ext}"));
            assert!(
                fs::metadata(&f).map(|m| m.len() > 1000).unwrap_or(false),
                "{}",
                f.display()
            );
        }
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn report_when_nothing_ran() {
    let dir = std::env::temp_dir().join(format!("spmvkit-report-none-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let run = BenchRun {
        skipped: Vec::new(),
        machine: MachineInfo::default(),
        suite: None,
        matrices: vec![matrix(
            "only",
            0,
            0.0,
            true,
            vec![
                failed("cusparse-alg1", F64, "no GPU"),
                failed("fast", F64, "no GPU"),
            ],
        )],
    };
    let files = write_report(&[run, BenchRun::default()], &dir).unwrap();
    assert!(files.plots.is_empty());
    assert_eq!(files.notes.len(), 1, "{:?}", files.notes);
    let summary = fs::read_to_string(&files.summary).unwrap();
    assert!(
        summary.contains("| only | f64 | fast | failed | no GPU |"),
        "{summary}"
    );
    assert!(summary.contains("no method ran correctly"), "{summary}");
    assert!(summary.contains("not measured"), "{summary}");
    fs::remove_dir_all(&dir).unwrap();
}
