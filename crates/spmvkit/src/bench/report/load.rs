//! Loading saved runs (`run-*.json`, gzipped or not, or folders of them) and merging them into
//! one set of results, later runs replacing earlier results for the same (matrix, method,
//! precision).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::bench::{BenchRun, MachineInfo, MatrixResult};
use crate::error::{Error, Result};
use crate::scalar::Precision;

/// One matrix after merging, with the run each result came from.
#[derive(Clone, Debug)]
pub struct MergedMatrix {
    pub matrix: MatrixResult,
    /// `run_of[i]`: index into the runs of `matrix.results[i]`.
    pub run_of: Vec<usize>,
}

/// Several runs merged into one set of results.
#[derive(Clone, Debug, Default)]
pub struct MergedRuns {
    /// The machine and suite of each run, in the order given.
    pub runs: Vec<(MachineInfo, Option<String>)>,
    /// Matrices in order of first appearance.
    pub matrices: Vec<MergedMatrix>,
    /// Inputs a run could not load, with the reason (the last reason per input), unless a
    /// later run measured them.
    pub skipped: Vec<(String, String)>,
}

impl MergedRuns {
    pub fn matrix_refs(&self) -> Vec<&MatrixResult> {
        self.matrices.iter().map(|m| &m.matrix).collect()
    }

    /// Precisions with at least one result.
    pub fn precisions(&self) -> Vec<Precision> {
        Precision::ALL
            .into_iter()
            .filter(|p| {
                self.matrices
                    .iter()
                    .any(|m| m.matrix.results.iter().any(|r| r.precision == *p))
            })
            .collect()
    }

    /// Methods with a result in `precision`, in order of first appearance.
    pub fn methods(&self, precision: Precision) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in self.matrices.iter().flat_map(|m| &m.matrix.results) {
            if r.precision == precision && !out.contains(&r.method) {
                out.push(r.method.clone());
            }
        }
        out
    }

    /// Methods with a result in any precision, in order of first appearance.
    pub fn all_methods(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in self.matrices.iter().flat_map(|m| &m.matrix.results) {
            if !out.contains(&r.method) {
                out.push(r.method.clone());
            }
        }
        out
    }

    /// The copy bandwidth of the machine result `i` of matrix `m` was measured on.
    pub(super) fn copy_bandwidth(&self, m: &MergedMatrix, i: usize) -> Option<f64> {
        m.run_of
            .get(i)
            .and_then(|&r| self.runs.get(r))
            .and_then(|(machine, _)| machine.copy_bandwidth_gbs)
    }
}

/// Merges runs in the order given: matrices are matched by name, and a result for the same
/// (matrix, method, precision) in a later run replaces the earlier one. A matrix's statistics
/// and L2 flag are those of the last run that measured it, but for x-sector counts that run did
/// not make: an earlier run's of the same shape stand.
pub fn merge_runs(runs: &[BenchRun]) -> MergedRuns {
    let mut merged = MergedRuns::default();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    for (ri, run) in runs.iter().enumerate() {
        merged.runs.push((run.machine.clone(), run.suite.clone()));
        for m in &run.matrices {
            let idx = *by_name.entry(m.name.clone()).or_insert_with(|| {
                merged.matrices.push(MergedMatrix {
                    matrix: MatrixResult {
                        results: Vec::new(),
                        ..m.clone()
                    },
                    run_of: Vec::new(),
                });
                merged.matrices.len() - 1
            });
            let slot = &mut merged.matrices[idx];
            slot.matrix.source.clone_from(&m.source);
            // the x-sector counts are structural: a run that did not count them keeps an
            // earlier run's for the same shape
            let old = std::mem::replace(&mut slot.matrix.stats, m.stats.clone());
            let st = &mut slot.matrix.stats;
            if (old.nrows, old.ncols, old.nnz) == (st.nrows, st.ncols, st.nnz) {
                st.x_sectors_f32 = st.x_sectors_f32.or(old.x_sectors_f32);
                st.x_sectors_f64 = st.x_sectors_f64.or(old.x_sectors_f64);
            }
            slot.matrix.fits_l2 = m.fits_l2;
            if !m.multi.is_empty() {
                slot.matrix.multi.clone_from(&m.multi);
            }
            for r in &m.results {
                let existing = slot
                    .matrix
                    .results
                    .iter()
                    .position(|e| e.method == r.method && e.precision == r.precision);
                match existing {
                    Some(i) => {
                        slot.matrix.results[i] = r.clone();
                        slot.run_of[i] = ri;
                    }
                    None => {
                        slot.matrix.results.push(r.clone());
                        slot.run_of.push(ri);
                    }
                }
            }
        }
    }
    for run in runs {
        for (source, why) in &run.skipped {
            merged.skipped.retain(|(s, _)| s != source);
            merged.skipped.push((source.clone(), why.clone()));
        }
    }
    merged
        .skipped
        .retain(|(s, _)| !merged.matrices.iter().any(|m| &m.matrix.source == s));
    merged
}

/// Whether every measured result ran on the CPU (no GPU took part); with no measurement at
/// all, whether every run's machine had no GPU.
pub fn cpu_only(merged: &MergedRuns) -> bool {
    let mut backends = merged
        .matrices
        .iter()
        .flat_map(|m| &m.matrix.results)
        .filter_map(|r| r.record.as_ref().map(|rec| rec.backend))
        .peekable();
    if backends.peek().is_none() {
        return merged.runs.iter().all(|(m, _)| m.gpu == "none");
    }
    backends.all(|b| b == crate::methods::Backend::Cpu)
}

/// Reads run files: each path is a `run-*.json` file (gzip-compressed too, as the committed
/// `run-*.json.gz`) or a directory whose `run-*.json` and `run-*.json.gz` files are read in name
/// order. Paths are taken in the order given (later runs win when merged).
pub fn load_runs(paths: &[PathBuf]) -> Result<Vec<BenchRun>> {
    if paths.is_empty() {
        return Err(Error::InvalidArgument(
            "no run files or directories given".into(),
        ));
    }
    let mut files = Vec::new();
    for p in paths {
        let meta = fs::metadata(p).map_err(|e| Error::io(p, e))?;
        if meta.is_dir() {
            let mut found = Vec::new();
            for entry in fs::read_dir(p).map_err(|e| Error::io(p, e))? {
                let path = entry.map_err(|e| Error::io(p, e))?.path();
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let json = name.ends_with(".json") || name.ends_with(".json.gz");
                if name.starts_with("run-") && json && path.is_file() {
                    found.push(path);
                }
            }
            if found.is_empty() {
                return Err(Error::InvalidArgument(format!(
                    "{}: no run-*.json(.gz) files in this directory",
                    p.display()
                )));
            }
            found.sort();
            files.extend(found);
        } else {
            files.push(p.clone());
        }
    }
    files.iter().map(|f| read_run(f)).collect()
}

fn read_run(path: &Path) -> Result<BenchRun> {
    let text = read_text_maybe_gz(path)?;
    serde_json::from_str(&text).map_err(|e| Error::Parse {
        path: Some(path.to_path_buf()),
        line: e.line() as u64,
        msg: format!("not a spmvkit run file: {e}"),
    })
}

/// The text of a file, gunzipped when it starts with the gzip magic bytes.
pub fn read_text_maybe_gz(path: &Path) -> Result<String> {
    use std::io::Read as _;
    let bytes = fs::read(path).map_err(|e| Error::io(path, e))?;
    let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .map_err(|e| Error::io(path, e))?;
        out
    } else {
        bytes
    };
    String::from_utf8(bytes).map_err(|_| Error::Parse {
        path: Some(path.to_path_buf()),
        line: 0,
        msg: "not UTF-8 text".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::report::tests::*;
    use crate::bench::report::{method_time_us, write_report};
    use crate::bench::Status;
    use crate::gpu::TimingMode;

    #[test]
    fn merging_replaces_earlier_results() {
        let run1 = BenchRun {
            skipped: Vec::new(),
            machine: machine(),
            suite: Some("one".into()),
            matrices: vec![matrix(
                "a",
                100,
                0.1,
                true,
                vec![
                    ok("m1", F64, 100, 10.0, 0.0),
                    failed("m2", F64, "first try failed"),
                ],
            )],
        };
        let mut m2 = machine();
        m2.started = "2026-11-21T23:00:00Z".into();
        let run2 = BenchRun {
            skipped: Vec::new(),
            machine: m2,
            suite: None,
            matrices: vec![
                matrix(
                    "a",
                    100,
                    0.5,
                    true,
                    vec![
                        ok("m2", F64, 100, 5.0, 0.0),
                        ok("m2", Precision::F32, 100, 4.0, 0.0),
                    ],
                ),
                matrix("b", 200, 0.1, false, vec![ok("m1", F64, 200, 3.0, 0.0)]),
            ],
        };
        let merged = merge_runs(&[run1, run2]);
        assert_eq!(merged.runs.len(), 2);
        assert_eq!(merged.matrices.len(), 2);
        let a = &merged.matrices[0];
        assert_eq!(a.matrix.name, "a");
        assert_eq!(a.matrix.results.len(), 3);
        assert_eq!(a.run_of, vec![0, 1, 1]);
        assert_eq!(a.matrix.results[1].status, Status::Ok);
        assert_eq!(
            method_time_us(&a.matrix.results, "m2", F64, TimingMode::Stream),
            Some(5.0)
        );
        assert_eq!(a.matrix.stats.row_variation, 0.5);
        assert_eq!(merged.matrices[1].matrix.name, "b");
        assert_eq!(
            merged.methods(F64),
            vec!["m1".to_string(), "m2".to_string()]
        );
        assert_eq!(merged.precisions(), vec![Precision::F32, Precision::F64]);
    }

    #[test]
    fn load_runs_reads_files_and_directories() {
        let dir = std::env::temp_dir().join(format!("spmvkit-load-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let run = synthetic_run();
        let text = serde_json::to_string(&run).unwrap();
        fs::write(dir.join("run-2.json"), &text).unwrap();
        fs::write(dir.join("run-1.json"), &text).unwrap();
        fs::write(dir.join("other.json"), "not json").unwrap();
        let runs = load_runs(std::slice::from_ref(&dir)).unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].matrices.len(), 3);
        let one = load_runs(&[dir.join("run-1.json")]).unwrap();
        assert_eq!(one.len(), 1);
        assert!(matches!(
            load_runs(&[dir.join("other.json")]),
            Err(Error::Parse { .. })
        ));
        assert!(matches!(
            load_runs(&[dir.join("missing.json")]),
            Err(Error::Io { .. })
        ));
        assert!(matches!(load_runs(&[]), Err(Error::InvalidArgument(_))));
        let empty = dir.join("empty");
        fs::create_dir_all(&empty).unwrap();
        assert!(matches!(
            load_runs(&[empty]),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            write_report(&[], &dir),
            Err(Error::InvalidArgument(_))
        ));
        fs::remove_dir_all(&dir).unwrap();
    }
}
