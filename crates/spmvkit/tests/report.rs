//! End-to-end test of the report writer through the public API: synthetic runs of a few dozen
//! matrices, saved as `run-*.json`, loaded back with `load_runs`, merged and reported with
//! `write_report`. Set `SPMVKIT_REPORT_DEMO_DIR` to keep the report there for inspection.

use std::fs;
use std::path::PathBuf;

use spmvkit::bench::report::fixtures;
use spmvkit::bench::{
    byte_model, load_runs, write_report, BenchRun, MatrixResult, RunRecord, Status,
};
use spmvkit::matrix::LengthStats;
use spmvkit::scalar::Precision;

/// A small deterministic generator (SplitMix64) for synthetic timings.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A record with three stream samples around `t_us` and a graph time 15 % below.
fn record(method: &str, p: Precision, n: usize, nnz: usize, t_us: f64, prep_ms: f64) -> RunRecord {
    let stream = vec![t_us, t_us * 1.01, t_us * 0.99];
    RunRecord {
        device: "NVIDIA H100 80GB HBM3".into(),
        upload_ms: 0.1,
        max_rel_err: 1e-14,
        ..fixtures::record(method, p, n, nnz, stream, t_us * 0.85, prep_ms)
    }
}

const METHODS: [(&str, f64, f64); 10] = [
    // name, speed factor relative to the best cuSPARSE algorithm, sensitivity to variation
    ("cusparse-alg1", 1.0, 0.05),
    ("cusparse-alg2", 1.05, 0.0),
    ("csr", 0.8, 0.25),
    ("csr-vector", 1.1, 0.1),
    ("merge-path", 1.15, -0.02),
    ("fastload", 1.4, 0.02),
    ("fastload[height=2]", 1.3, 0.02),
    // CSR-Overlap and the two times with a host-to-device copy (Eq. 2).
    ("csr-overlap", 1.3, 0.05),
    ("csr-full-overlap", 0.3, 0.0),
    ("cusparse-e2e", 0.2, 0.0),
];

fn synthetic(seed: u64, count: usize, started: &str) -> BenchRun {
    let mut rng = Rng(seed);
    let mut matrices = Vec::new();
    for i in 0..count {
        let nnz = (10f64.powf(3.5 + 4.0 * rng.next())) as usize;
        let n = (nnz as f64 / (2.0 + 40.0 * rng.next())) as usize + 1;
        let variation = 10f64.powf(-1.5 + 2.5 * rng.next());
        let fits_l2 = nnz * 12 < (50 << 20) / 2;
        let mut results = Vec::new();
        for p in Precision::ALL {
            let bytes = byte_model(n, n, nnz, p.bytes()) as f64;
            let floor = bytes / 2500e3 + 3.0; // µs at 2.5 TB/s plus launch overhead
            for (j, (name, speed, sens)) in METHODS.iter().enumerate() {
                let t = floor / speed * (1.0 + sens * variation) * (0.9 + 0.2 * rng.next());
                let prep = if j < 2 {
                    0.02
                } else {
                    0.05 + nnz as f64 * 2e-6 * (j as f64)
                };
                let failing = *name == "fastload" && i % 7 == 3;
                let unsupported = *name == "csr-vector" && p == Precision::F32 && i % 5 == 0;
                results.push(if failing {
                    fixtures::not_ok(
                        name,
                        p,
                        Status::Failed,
                        "CUDA error in launch: out of shared memory",
                    )
                } else if unsupported {
                    fixtures::not_ok(name, p, Status::Unsupported, "no f32 kernel")
                } else {
                    fixtures::ok(record(name, p, n, nnz, t, prep))
                });
            }
        }
        matrices.push(MatrixResult {
            name: format!("m{i:02}"),
            source: format!("suite/m{i:02}.mtx"),
            stats: fixtures::stats(
                n,
                nnz,
                LengthStats {
                    min: 1,
                    max: 100,
                    mean: nnz as f64 / n as f64,
                    std: variation * nnz as f64 / n as f64,
                },
                variation,
                (10, 10),
            ),
            fits_l2,
            results,
            multi: Vec::new(),
        });
    }
    BenchRun {
        skipped: Vec::new(),
        machine: fixtures::machine(started),
        suite: Some("demo".into()),
        matrices,
    }
}

#[test]
fn report_from_saved_runs() {
    let keep = std::env::var_os("SPMVKIT_REPORT_DEMO_DIR").map(PathBuf::from);
    let dir = keep.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("spmvkit-report-e2e-{}", std::process::id()))
    });
    let runs_dir = dir.join("runs");
    fs::create_dir_all(&runs_dir).unwrap();
    let first = synthetic(7, 30, "2026-11-21T20:00:00Z");
    // A later rerun of the first five matrices: its results replace the first run's.
    let mut second = synthetic(99, 30, "2026-11-21T21:00:00Z");
    second.matrices.truncate(5);
    for (name, run) in [("run-1.json", &first), ("run-2.json", &second)] {
        fs::write(
            runs_dir.join(name),
            serde_json::to_string_pretty(run).unwrap(),
        )
        .unwrap();
    }
    let runs = load_runs(std::slice::from_ref(&runs_dir)).unwrap();
    assert_eq!(runs.len(), 2);
    let out = dir.join("report");
    let files = write_report(&runs, &out).unwrap();
    assert!(files.notes.is_empty(), "{:?}", files.notes);
    assert_eq!(files.plots.len(), 16);
    let summary = fs::read_to_string(&files.summary).unwrap();
    assert!(summary.contains("Merged from 2 runs"));
    assert!(summary.contains("out of shared memory"));
    assert!(summary.contains("| unsupported |"));
    assert!(summary.contains("## CSR-Full-Overlap against cuSPARSE with upload (Eq. 2)"));
    assert!(summary.contains("### Eq. 2, f32"));
    assert!(
        summary.contains("| **geometric mean** (n=30) |"),
        "{summary}"
    );
    assert!(summary.contains("## Speedup over cusparse by mean row length"));
    assert!(summary.contains("| fastload[height=2] |"));
    assert!(summary.contains("## Paper claims, measured in this run"));
    assert!(summary.contains("| csr-overlap | cusparse | 1.4× average |"));
    assert!(summary.contains("| fastload | cusparse | 2.98× |"));
    // 30 matrices × 10 methods × 2 precisions, plus the header.
    let csv = fs::read_to_string(&files.csv).unwrap();
    assert_eq!(csv.lines().count(), 1 + 30 * 10 * 2);
    if keep.is_none() {
        fs::remove_dir_all(&dir).unwrap();
    }
}
