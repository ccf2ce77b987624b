//! Building `auto`'s training table (`table.csv`, parsed by [`crate::methods::auto::model::Model::parse`]) from
//! committed benchmark runs: `spmv auto table RUN... -o crates/spmvkit/src/methods/auto/table.csv`.
//!
//! - **Input:** run records (`run-*.json`, `run-*.json.gz`, read by
//!   [`crate::bench::report::load_runs`]) and, for runs whose record was not committed, the
//!   `results.csv` mirror that `spmv bench` writes beside it ([`read_results_csv`], `.csv` or
//!   `.csv.gz`). A folder is searched recursively: in each folder its run records, or when it
//!   holds none its results CSVs (other CSVs, such as Nsight tables, are passed over).
//! - **Newest wins:** the runs are ordered by the time they started and merged
//!   ([`crate::bench::report::merge_runs`]), so each (matrix, method, precision) comes from the
//!   newest run that measured it, whichever folder it is in.
//! - **Kept:** plain registered methods (no `NAME[...]` variants) on the GPU whose result matched
//!   the oracle, except [`SKIP`]. A (matrix, precision) row is kept when at least half of the
//!   table's methods have a time there: a matrix measured by a few methods only would make its
//!   fastest look slower than it is. The matrices of the `large-test` suite
//!   ([`crate::bench::suites::LARGE_TEST`]) are never kept: they are held out to judge `auto`.
//! - **Columns:** `matrix` (commas of GEN-SPECs written as `;`), `precision`, the 9 statistics
//!   the model's features come from, then per method `METHOD:us` (median µs per call, stream
//!   timing), `METHOD:prep_ms` (prepare + upload) and `METHOD:commit` (the commit of the binary
//!   that measured it: the run's `machine.commit`, its first word).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::bench::report::{load_runs, merge_runs, read_text_maybe_gz, MergedRuns};
use crate::bench::{BenchRun, MachineInfo, MatrixResult, MethodResult, RunRecord, Status, Timing};
use crate::error::{Error, Result};
use crate::matrix::{LengthStats, MatrixStats};
pub use crate::methods::auto::model::STAT_COLUMNS;
use crate::methods::Backend;
use crate::scalar::Precision;

/// Methods left out of the table: their timed call means something else (`cusparse-e2e` and
/// `csr-full-overlap` include the host-to-device copy), `csr` is the CPU production path, and
/// `auto` is the chooser itself.
pub const SKIP: &[&str] = &["cusparse-e2e", "csr-full-overlap", "csr", "auto"];

/// One method's measurement in the table.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// Median µs per call (stream timing).
    pub us: f64,
    /// Preprocessing: prepare + upload, ms.
    pub prep_ms: f64,
    /// The commit of the binary that measured it.
    pub commit: String,
}

/// One (matrix, precision) of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The matrix name, commas written as `;`.
    pub matrix: String,
    pub precision: Precision,
    pub stats: MatrixStats,
    pub fits_l2: bool,
    /// Per method of [`Table::methods`].
    pub cells: Vec<Option<Cell>>,
}

/// The training table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// In registry order.
    pub methods: Vec<String>,
    /// Sorted by matrix, then precision.
    pub rows: Vec<Row>,
}

/// The commit of a run as the table writes it: the first word of `machine.commit` (older runs
/// appended a remark), without commas.
fn short_commit(machine: &MachineInfo) -> String {
    machine
        .commit
        .split_whitespace()
        .next()
        .unwrap_or("")
        .replace(',', "")
}

/// Whether a result may train the model: a plain, registered, not skipped method that ran on the
/// GPU and matched the oracle.
fn usable(r: &MethodResult) -> Option<&RunRecord> {
    if r.status != Status::Ok || r.method.contains('[') || SKIP.contains(&r.method.as_str()) {
        return None;
    }
    crate::methods::find(&r.method).ok()?;
    r.record.as_ref().filter(|rec| {
        rec.backend == Backend::Gpu && rec.time.median_us.is_finite() && rec.time.median_us > 0.0
    })
}

impl Table {
    /// The table of these runs, in any order: each (matrix, method, precision) from the newest
    /// run (by `machine.started`) that measured it.
    pub fn from_runs(runs: &[BenchRun]) -> Table {
        let mut runs: Vec<BenchRun> = runs.to_vec();
        for r in &mut runs {
            for m in &mut r.matrices {
                m.name = m.name.replace(',', ";");
            }
        }
        let merged = merge_newest(&runs);
        let present: Vec<&str> = merged
            .matrices
            .iter()
            .flat_map(|m| &m.matrix.results)
            .filter(|r| usable(r).is_some())
            .map(|r| r.method.as_str())
            .collect();
        let methods: Vec<String> = crate::methods::names()
            .into_iter()
            .filter(|n| present.contains(n))
            .map(str::to_string)
            .collect();
        let held_out: Vec<String> = crate::bench::suites::LARGE_TEST
            .iter()
            .map(|s| s.replace(',', ";"))
            .collect();
        let mut rows: BTreeMap<(String, Precision), Row> = BTreeMap::new();
        for mm in &merged.matrices {
            let m = &mm.matrix;
            if held_out.contains(&m.name) {
                continue;
            }
            for (i, r) in m.results.iter().enumerate() {
                let Some(rec) = usable(r) else { continue };
                let Some(col) = methods.iter().position(|x| *x == r.method) else {
                    continue;
                };
                let commit = mm
                    .run_of
                    .get(i)
                    .and_then(|&ri| merged.runs.get(ri))
                    .map(|(machine, _)| short_commit(machine))
                    .unwrap_or_default();
                let row = rows
                    .entry((m.name.clone(), r.precision))
                    .or_insert_with(|| Row {
                        matrix: m.name.clone(),
                        precision: r.precision,
                        stats: m.stats.clone(),
                        fits_l2: m.fits_l2,
                        cells: vec![None; methods.len()],
                    });
                row.cells[col] = Some(Cell {
                    us: rec.time.median_us,
                    prep_ms: rec.prep_ms + rec.upload_ms,
                    commit,
                });
            }
        }
        let need = methods.len().div_ceil(2);
        let rows = rows
            .into_values()
            .filter(|r| r.cells.iter().flatten().count() >= need)
            .collect();
        Table { methods, rows }
    }

    /// The CSV text (see the module docs for its columns).
    pub fn to_csv(&self) -> String {
        let mut header: Vec<String> = ["matrix", "precision"]
            .iter()
            .chain(STAT_COLUMNS.iter())
            .map(|s| s.to_string())
            .collect();
        for m in &self.methods {
            header.extend(["us", "prep_ms", "commit"].map(|f| format!("{m}:{f}")));
        }
        let mut out = header.join(",");
        out.push('\n');
        for r in &self.rows {
            let s = &r.stats;
            let mut f: Vec<String> = vec![
                r.matrix.replace(',', ";"),
                r.precision.to_string(),
                s.nrows.to_string(),
                s.ncols.to_string(),
                s.nnz.to_string(),
                s.row_len.mean.to_string(),
                s.row_len.std.to_string(),
                s.row_len.max.to_string(),
                s.empty_rows.to_string(),
                s.bandwidth.to_string(),
                r.fits_l2.to_string(),
                s.x_sectors_f32.map_or_else(String::new, |v| v.to_string()),
                s.x_sectors_f64.map_or_else(String::new, |v| v.to_string()),
            ];
            for c in &r.cells {
                match c {
                    Some(c) => f.extend([
                        format!("{:.3}", c.us),
                        format!("{:.3}", c.prep_ms),
                        c.commit.clone(),
                    ]),
                    None => f.extend([String::new(), String::new(), String::new()]),
                }
            }
            out.push_str(&f.join(","));
            out.push('\n');
        }
        out
    }

    /// How many rows each commit contributed cells to, for the build's summary.
    pub fn commits(&self) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        for c in self.rows.iter().flat_map(|r| r.cells.iter().flatten()) {
            *out.entry(c.commit.clone()).or_insert(0) += 1;
        }
        out
    }
}

/// Merges runs given in any order so that each (matrix, method, precision) comes from the newest
/// run (by `machine.started`) that measured it.
pub fn merge_newest(runs: &[BenchRun]) -> MergedRuns {
    let mut order: Vec<&BenchRun> = runs.iter().collect();
    order.sort_by(|a, b| a.machine.started.cmp(&b.machine.started));
    let sorted: Vec<BenchRun> = order.into_iter().cloned().collect();
    merge_runs(&sorted)
}

/// Reads committed runs from files and folders (see the module docs): run records through
/// [`load_runs`], results CSVs through [`read_results_csv`]. The order does not matter to
/// [`Table::from_runs`].
pub fn load_committed_runs(paths: &[PathBuf]) -> Result<Vec<BenchRun>> {
    if paths.is_empty() {
        return Err(Error::InvalidArgument(
            "no run files or folders given".into(),
        ));
    }
    let mut runs = Vec::new();
    for p in paths {
        let meta = fs::metadata(p).map_err(|e| Error::io(p, e))?;
        if meta.is_dir() {
            collect_dir(p, &mut runs)?;
        } else if is_results_csv_name(p) {
            runs.extend(read_results_csv_file(p)?);
        } else {
            runs.extend(load_runs(std::slice::from_ref(p))?);
        }
    }
    Ok(runs)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn is_run_record_name(p: &Path) -> bool {
    let n = file_name(p);
    n.starts_with("run-") && (n.ends_with(".json") || n.ends_with(".json.gz"))
}

fn is_results_csv_name(p: &Path) -> bool {
    let n = file_name(p);
    n.ends_with(".csv") || n.ends_with(".csv.gz")
}

/// The first line of a results CSV.
const RESULTS_CSV_START: &str = "matrix,source,fits_l2,";

fn collect_dir(dir: &Path, runs: &mut Vec<BenchRun>) -> Result<()> {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .map(|e| e.map(|e| e.path()).map_err(|e| Error::io(dir, e)))
        .collect::<Result<_>>()?;
    entries.sort();
    let records: Vec<PathBuf> = entries
        .iter()
        .filter(|p| p.is_file() && is_run_record_name(p))
        .cloned()
        .collect();
    if records.is_empty() {
        for p in entries
            .iter()
            .filter(|p| p.is_file() && is_results_csv_name(p))
        {
            let text = read_text_maybe_gz(p)?;
            if text.starts_with(RESULTS_CSV_START) {
                runs.extend(read_results_csv(&text, Some(p))?);
            }
        }
    } else {
        runs.extend(load_runs(&records)?);
    }
    for d in entries.iter().filter(|p| p.is_dir()) {
        collect_dir(d, runs)?;
    }
    Ok(())
}

fn read_results_csv_file(path: &Path) -> Result<Vec<BenchRun>> {
    read_results_csv(&read_text_maybe_gz(path)?, Some(path))
}

/// One CSV record: the line it starts on and its fields.
type CsvRecord = (u64, Vec<String>);

/// Splits CSV text into records (RFC 4180: quoted fields may hold commas, doubled quotes and
/// line breaks), each with the line it starts on.
fn csv_records(text: &str) -> std::result::Result<Vec<CsvRecord>, (u64, String)> {
    let mut out = Vec::new();
    let (mut rec, mut field) = (Vec::new(), String::new());
    let (mut line, mut start) = (1u64, 1u64);
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                '\n' => {
                    line += 1;
                    field.push(c);
                }
                _ => field.push(c),
            }
            continue;
        }
        match c {
            '"' if field.is_empty() => quoted = true,
            ',' => rec.push(std::mem::take(&mut field)),
            '\r' => {}
            '\n' => {
                rec.push(std::mem::take(&mut field));
                out.push((start, std::mem::take(&mut rec)));
                line += 1;
                start = line;
            }
            _ => field.push(c),
        }
    }
    if quoted {
        return Err((start, "a quoted field is not closed".into()));
    }
    if !field.is_empty() || !rec.is_empty() {
        rec.push(field);
        out.push((start, rec));
    }
    Ok(out)
}

/// Reads a `results.csv` written by `spmv bench` / `spmv report` back into runs, one per value
/// of its `run` column (machine: the device, `run_started` and `run_commit`). The statistics and
/// the records' fields are those the CSV holds; notes are split at `;` and `=`, which loses
/// separators inside a note's value.
pub fn read_results_csv(text: &str, path: Option<&Path>) -> Result<Vec<BenchRun>> {
    let perr = |line: u64, msg: String| Error::Parse {
        path: path.map(Path::to_path_buf),
        line,
        msg,
    };
    let records = csv_records(text).map_err(|(l, m)| perr(l, m))?;
    let mut it = records.into_iter();
    let (_, header) = it
        .next()
        .ok_or_else(|| perr(1, "empty results CSV".into()))?;
    let col = |name: &str| -> Result<usize> {
        header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| perr(1, format!("no '{name}' column: not a spmvkit results CSV")))
    };
    let c = Cols::new(&col)?;
    // runs by their `run` column, in order of first appearance
    let mut runs: Vec<(String, BenchRun)> = Vec::new();
    for (line, f) in it {
        if f.len() == 1 && f[0].is_empty() {
            continue;
        }
        if f.len() != header.len() {
            return Err(perr(
                line,
                format!("{} fields, header has {}", f.len(), header.len()),
            ));
        }
        let row = RowReader {
            f: &f,
            line,
            perr: &perr,
        };
        let run_key = f[c.run].clone();
        let ri = match runs.iter().position(|(k, _)| *k == run_key) {
            Some(i) => i,
            None => {
                let machine = MachineInfo {
                    gpu: f[c.device].clone(),
                    commit: f[c.run_commit].clone(),
                    started: f[c.run_started].clone(),
                    command: format!(
                        "read back from {}",
                        path.map_or("a results CSV".into(), |p| p.display().to_string())
                    ),
                    ..MachineInfo::default()
                };
                runs.push((
                    run_key,
                    BenchRun {
                        machine,
                        ..BenchRun::default()
                    },
                ));
                runs.len() - 1
            }
        };
        let run = &mut runs[ri].1;
        if run.machine.gpu.is_empty() {
            run.machine.gpu.clone_from(&f[c.device]);
        }
        let name = &f[c.matrix];
        let mi = match run.matrices.iter().position(|m| m.name == *name) {
            Some(i) => i,
            None => {
                run.matrices.push(MatrixResult {
                    name: name.clone(),
                    source: f[c.source].clone(),
                    stats: row.stats(&c)?,
                    fits_l2: row.boolean(c.fits_l2)?,
                    results: Vec::new(),
                    multi: Vec::new(),
                });
                run.matrices.len() - 1
            }
        };
        let result = row.result(&c)?;
        run.matrices[mi].results.push(result);
    }
    Ok(runs.into_iter().map(|(_, r)| r).collect())
}

/// Column positions of a results CSV.
struct Cols {
    matrix: usize,
    source: usize,
    fits_l2: usize,
    stats: [usize; 19],
    method: usize,
    precision: usize,
    status: usize,
    error: usize,
    run: usize,
    run_started: usize,
    run_commit: usize,
    backend: usize,
    device: usize,
    deterministic: usize,
    prep_ms: usize,
    upload_ms: usize,
    prep_stages_ms: usize,
    time: [usize; 4],
    graph: [usize; 4],
    gflops: usize,
    gbs: usize,
    bytes_model: usize,
    max_rel_err: usize,
    verified: usize,
    footprint_bytes: usize,
    notes: usize,
    fallback_note: usize,
}

impl Cols {
    fn new(col: &dyn Fn(&str) -> Result<usize>) -> Result<Self> {
        let many =
            |names: &[&str]| -> Result<Vec<usize>> { names.iter().map(|n| col(n)).collect() };
        let stats = many(&crate::bench::report::STATS_COLUMNS)?;
        let time = many(&[
            "time_median_us",
            "time_min_us",
            "time_max_us",
            "time_samples_us",
        ])?;
        let graph = many(&[
            "graph_median_us",
            "graph_min_us",
            "graph_max_us",
            "graph_samples_us",
        ])?;
        let arr = |v: Vec<usize>| -> [usize; 4] { [v[0], v[1], v[2], v[3]] };
        let mut st = [0usize; 19];
        st.copy_from_slice(&stats);
        Ok(Cols {
            matrix: col("matrix")?,
            source: col("source")?,
            fits_l2: col("fits_l2")?,
            stats: st,
            method: col("method")?,
            precision: col("precision")?,
            status: col("status")?,
            error: col("error")?,
            run: col("run")?,
            run_started: col("run_started")?,
            run_commit: col("run_commit")?,
            backend: col("backend")?,
            device: col("device")?,
            deterministic: col("deterministic")?,
            prep_ms: col("prep_ms")?,
            upload_ms: col("upload_ms")?,
            prep_stages_ms: col("prep_stages_ms")?,
            time: arr(time),
            graph: arr(graph),
            gflops: col("gflops")?,
            gbs: col("gbs")?,
            bytes_model: col("bytes_model")?,
            max_rel_err: col("max_rel_err")?,
            verified: col("verified")?,
            footprint_bytes: col("footprint_bytes")?,
            notes: col("notes")?,
            fallback_note: col("fallback_note")?,
        })
    }
}

/// One CSV row being read, with its line for errors.
struct RowReader<'a> {
    f: &'a [String],
    line: u64,
    perr: &'a dyn Fn(u64, String) -> Error,
}

impl RowReader<'_> {
    fn err(&self, col: usize, what: &str) -> Error {
        (self.perr)(
            self.line,
            format!("field {} '{}' is not {what}", col + 1, self.f[col]),
        )
    }
    fn float(&self, col: usize) -> Result<f64> {
        self.f[col]
            .parse::<f64>()
            .map_err(|_| self.err(col, "a number"))
    }
    fn int<N: std::str::FromStr>(&self, col: usize) -> Result<N> {
        self.f[col]
            .parse::<N>()
            .map_err(|_| self.err(col, "a whole number"))
    }
    fn boolean(&self, col: usize) -> Result<bool> {
        match self.f[col].as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(self.err(col, "true or false")),
        }
    }
    fn opt_float(&self, col: usize) -> Result<Option<f64>> {
        if self.f[col].is_empty() {
            Ok(None)
        } else {
            self.float(col).map(Some)
        }
    }
    fn samples(&self, col: usize) -> Result<Vec<f64>> {
        self.f[col]
            .split_whitespace()
            .map(|v| {
                v.parse::<f64>()
                    .map_err(|_| self.err(col, "a list of numbers"))
            })
            .collect()
    }
    fn pairs(&self, col: usize) -> Vec<(String, String)> {
        self.f[col]
            .split(';')
            .filter(|s| !s.is_empty())
            .map(|kv| match kv.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => (kv.to_string(), String::new()),
            })
            .collect()
    }
    fn timing(&self, cols: &[usize; 4]) -> Result<Option<Timing>> {
        let Some(median_us) = self.opt_float(cols[0])? else {
            return Ok(None);
        };
        Ok(Some(Timing {
            median_us,
            min_us: self.opt_float(cols[1])?.unwrap_or(median_us),
            max_us: self.opt_float(cols[2])?.unwrap_or(median_us),
            samples_us: self.samples(cols[3])?,
        }))
    }

    fn stats(&self, c: &Cols) -> Result<MatrixStats> {
        let s = &c.stats;
        let lengths = |min: usize, max: usize, mean: usize, std: usize| -> Result<LengthStats> {
            Ok(LengthStats {
                min: self.int(min)?,
                max: self.int(max)?,
                mean: self.float(mean)?,
                std: self.float(std)?,
            })
        };
        Ok(MatrixStats {
            nrows: self.int(s[0])?,
            ncols: self.int(s[1])?,
            nnz: self.int(s[2])?,
            density: self.float(s[3])?,
            empty_rows: self.int(s[4])?,
            empty_cols: self.int(s[5])?,
            row_len: lengths(s[6], s[7], s[8], s[9])?,
            col_len: lengths(s[11], s[12], s[13], s[14])?,
            row_variation: self.float(s[10])?,
            lower_bandwidth: self.int(s[15])?,
            upper_bandwidth: self.int(s[16])?,
            bandwidth: self.int(s[17])?,
            csr_bytes: self.int(s[18])?,
            x_sectors_f32: None,
            x_sectors_f64: None,
        })
    }

    fn result(&self, c: &Cols) -> Result<MethodResult> {
        let f = self.f;
        let precision: Precision = f[c.precision]
            .parse()
            .map_err(|_| self.err(c.precision, "f32 or f64"))?;
        let status = match f[c.status].as_str() {
            "ok" => Status::Ok,
            "wrong" => Status::Wrong,
            "unsupported" => Status::Unsupported,
            "failed" => Status::Failed,
            _ => return Err(self.err(c.status, "ok, wrong, unsupported or failed")),
        };
        let record = match f[c.backend].as_str() {
            "" => None,
            b => {
                let backend = match b {
                    "gpu" => Backend::Gpu,
                    "cpu" => Backend::Cpu,
                    _ => return Err(self.err(c.backend, "gpu or cpu")),
                };
                let time = self.timing(&c.time)?.unwrap_or_default();
                Some(RunRecord {
                    method: f[c.method].clone(),
                    precision,
                    backend,
                    device: f[c.device].clone(),
                    nrows: self.int(c.stats[0])?,
                    ncols: self.int(c.stats[1])?,
                    nnz: self.int(c.stats[2])?,
                    deterministic: self.boolean(c.deterministic)?,
                    prep_ms: self.float(c.prep_ms)?,
                    upload_ms: self.float(c.upload_ms)?,
                    prep_stages_ms: self
                        .pairs(c.prep_stages_ms)
                        .into_iter()
                        .map(|(k, v)| (k, v.parse().unwrap_or(f64::NAN)))
                        .collect(),
                    time,
                    graph_time: self.timing(&c.graph)?,
                    gflops: self.opt_float(c.gflops)?.unwrap_or(0.0),
                    gbs: self.opt_float(c.gbs)?.unwrap_or(0.0),
                    bytes_model: self.int(c.bytes_model).unwrap_or(0),
                    max_rel_err: self.opt_float(c.max_rel_err)?.unwrap_or(f64::NAN),
                    verified: self.boolean(c.verified)?,
                    footprint_bytes: self.int(c.footprint_bytes).unwrap_or(0),
                    notes: self.pairs(c.notes),
                    fallback_note: Some(f[c.fallback_note].clone()).filter(|s| !s.is_empty()),
                    later_checks: Vec::new(),
                    y_digest: None,
                })
            }
        };
        Ok(MethodResult {
            method: f[c.method].clone(),
            precision,
            status,
            error: Some(f[c.error].clone()).filter(|s| !s.is_empty()),
            record,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::bench::report::{results_csv, ReportOptions};
    use crate::methods::auto::model::{Model, X_SHARE};

    fn stats(nnz: usize) -> MatrixStats {
        let len = LengthStats {
            min: 1,
            max: 9,
            mean: nnz as f64 / 100.0,
            std: 0.5,
        };
        MatrixStats {
            nrows: 100,
            ncols: 100,
            nnz,
            density: nnz as f64 / 1e4,
            empty_rows: 0,
            empty_cols: 0,
            row_len: len,
            col_len: len,
            row_variation: 0.1,
            lower_bandwidth: 7,
            upper_bandwidth: 9,
            bandwidth: 9,
            csr_bytes: 1234,
            x_sectors_f32: None,
            x_sectors_f64: None,
        }
    }

    /// A result with a GPU record of `us` per call and 0.75 ms of preprocessing.
    pub(crate) fn result(method: &str, p: Precision, us: f64, status: Status) -> MethodResult {
        MethodResult {
            method: method.into(),
            precision: p,
            status,
            error: (status != Status::Ok).then(|| "no, \"quoted\"".to_string()),
            record: Some(RunRecord {
                method: method.into(),
                precision: p,
                backend: Backend::Gpu,
                device: "NVIDIA H200".into(),
                nrows: 100,
                ncols: 100,
                nnz: 500,
                deterministic: false,
                prep_ms: 0.5,
                upload_ms: 0.25,
                prep_stages_ms: vec![("sort".into(), 0.5)],
                time: Timing {
                    median_us: us,
                    min_us: us,
                    max_us: us,
                    samples_us: vec![us, us],
                },
                graph_time: None,
                gflops: 1.0,
                gbs: 2.0,
                bytes_model: 6000,
                max_rel_err: 1e-16,
                verified: true,
                footprint_bytes: 6000,
                notes: vec![("auto chose".into(), "csr-vector".into())],
                fallback_note: None,
                later_checks: Vec::new(),
                y_digest: None,
            }),
        }
    }

    /// A run of matrices with 500 nonzeros each.
    pub(crate) fn run(
        started: &str,
        commit: &str,
        matrices: Vec<(&str, Vec<MethodResult>)>,
    ) -> BenchRun {
        BenchRun {
            machine: MachineInfo {
                gpu: "NVIDIA H200".into(),
                commit: commit.into(),
                started: started.into(),
                ..MachineInfo::default()
            },
            suite: None,
            matrices: matrices
                .into_iter()
                .map(|(name, results)| MatrixResult {
                    name: name.into(),
                    source: name.into(),
                    stats: stats(500),
                    fits_l2: true,
                    results,
                    multi: Vec::new(),
                })
                .collect(),
            skipped: Vec::new(),
        }
    }

    /// An older run of four methods and a newer one re-measuring one of them.
    fn two_runs() -> (BenchRun, BenchRun) {
        use Precision::F64;
        let ok = Status::Ok;
        let old = run(
            "2026-01-01T00:00:00Z",
            "aaaa111 (spmvkit 0.1.0); remark, with a comma",
            vec![
                (
                    "uniform:1000,5",
                    vec![
                        result("csr-vector", F64, 10.0, ok),
                        result("csr-scalar", F64, 12.0, ok),
                        result("cusparse", F64, 9.0, ok),
                        result("cb-spmv", F64, 20.0, ok),
                        result("cb-spmv[format=off]", F64, 1.0, ok),
                        result("csr", F64, 1.0, ok),
                        result("auto", F64, 1.0, ok),
                    ],
                ),
                ("lonely", vec![result("csr-vector", F64, 3.0, ok)]),
                (
                    "poisson2d:1250",
                    vec![
                        result("csr-vector", F64, 10.0, ok),
                        result("cusparse", F64, 9.0, ok),
                        result("cb-spmv", F64, 20.0, ok),
                    ],
                ),
            ],
        );
        let new = run(
            "2026-02-01T00:00:00Z",
            "bbbb222",
            vec![(
                "uniform:1000,5",
                vec![
                    result("cb-spmv", F64, 8.0, ok),
                    result("csr-scalar", F64, 99.0, Status::Wrong),
                ],
            )],
        );
        (old, new)
    }

    #[test]
    fn the_newest_run_wins_whatever_the_order_and_each_cell_keeps_its_commit() {
        let (old, new) = two_runs();
        for runs in [vec![old.clone(), new.clone()], vec![new, old]] {
            let t = Table::from_runs(&runs);
            // registry order; variants, csr and auto left out, and csr-scalar, whose newest
            // result was wrong
            assert_eq!(t.methods, ["csr-vector", "cusparse", "cb-spmv"]);
            // "lonely" has 1 of 3 methods, and poisson2d:1250 is held out (large-test)
            assert_eq!(t.rows.len(), 1);
            let r = &t.rows[0];
            assert_eq!(r.matrix, "uniform:1000;5");
            let cb = r.cells[2].as_ref().unwrap();
            assert_eq!((cb.us, cb.commit.as_str()), (8.0, "bbbb222"));
            let cv = r.cells[0].as_ref().unwrap();
            assert_eq!(
                (cv.us, cv.prep_ms, cv.commit.as_str()),
                (10.0, 0.75, "aaaa111")
            );
        }
    }

    #[test]
    fn the_table_round_trips_through_the_model_loader() {
        let (old, new) = two_runs();
        let t = Table::from_runs(&[old, new]);
        let text = t.to_csv();
        assert!(text.lines().next().unwrap().contains("cb-spmv:commit"));
        let m = Model::parse(&text).unwrap();
        assert_eq!(m.methods, t.methods);
        assert_eq!(m.samples.len(), 1);
        let s = &m.samples[0];
        assert_eq!(s.matrix, "uniform:1000;5");
        assert_eq!(s.nnz, 500.0);
        let want: Vec<Option<(f64, f64)>> = t.rows[0]
            .cells
            .iter()
            .map(|c| c.as_ref().map(|c| (c.us, c.prep_ms)))
            .collect();
        assert_eq!(s.times, want);
        assert!(s.fits_l2());
    }

    #[test]
    fn the_model_loader_ignores_commit_and_other_provenance_columns() {
        let stats = "m,f64,10,10,50,5,1,9,0,3,true,,";
        let plain = format!(
            "matrix,precision,{},a:us,a:prep_ms\n{stats},2.0,0.1",
            STAT_COLUMNS.join(",")
        );
        let with = format!(
            "matrix,precision,{},a:us,a:prep_ms,a:commit,a:note\n{stats},2.0,0.1,abc1234,x",
            STAT_COLUMNS.join(",")
        );
        let (p, w) = (Model::parse(&plain).unwrap(), Model::parse(&with).unwrap());
        assert_eq!(p.methods, w.methods);
        assert_eq!(p.samples[0].times, w.samples[0].times);
        assert_eq!(p.samples[0].features, w.samples[0].features);
        // a method without its time column is an error
        let bad = format!(
            "matrix,precision,{},a:prep_ms,a:commit\n{stats},0.1,x",
            STAT_COLUMNS.join(",")
        );
        assert!(Model::parse(&bad).is_err());
    }

    #[test]
    fn a_newer_run_without_x_sectors_keeps_an_older_count_of_the_same_shape() {
        let r = |started: &str| {
            run(
                started,
                "c",
                vec![(
                    "m",
                    vec![result("csr-scalar", Precision::F64, 2.0, Status::Ok)],
                )],
            )
        };
        let (mut old, new) = (r("2026-01-01T00:00:00Z"), r("2026-02-01T00:00:00Z"));
        old.matrices[0].stats.x_sectors_f64 = Some(123);
        let table = Table::from_runs(&[new.clone(), old.clone()]);
        assert_eq!(table.rows[0].stats.x_sectors_f64, Some(123));
        assert!(table
            .to_csv()
            .lines()
            .nth(1)
            .unwrap()
            .contains(",true,,123,"));
        // another shape under the same name: the count is not carried over
        old.matrices[0].stats.nnz += 1;
        let table = Table::from_runs(&[new, old]);
        assert_eq!(table.rows[0].stats.x_sectors_f64, None);
    }

    #[test]
    fn the_model_loader_reads_x_sectors_by_name_and_tables_without_them() {
        // a table written before the x-sector columns: nine statistics
        let old = "matrix,precision,nrows,ncols,nnz,row_len_mean,row_len_std,row_len_max,empty_rows,bandwidth,fits_l2,a:us,a:prep_ms\nm,f64,10,10,50,5,1,9,0,3,false,2.0,0.1";
        let m = Model::parse(old).unwrap();
        assert!(m.samples[0].features.0[X_SHARE].is_nan());
        // with them: the precision's count over nnz; an empty cell is unknown
        let new = format!(
            "matrix,precision,{},a:us,a:prep_ms\nm,f64,10,10,50,5,1,9,0,3,false,10,25,2.0,0.1\nm,f32,10,10,50,5,1,9,0,3,false,,25,2.0,0.1",
            STAT_COLUMNS.join(",")
        );
        let m = Model::parse(&new).unwrap();
        let x = m.samples[0].features.0[X_SHARE];
        assert!((x - (0.5f64 * 100.0 + 1.0).ln()).abs() < 1e-12, "{x}");
        assert!(m.samples[1].features.0[X_SHARE].is_nan());
        // a missing statistic is named
        let e = Model::parse("matrix,precision,nrows,a:us,a:prep_ms\nm,f64,1,1,1")
            .unwrap_err()
            .to_string();
        assert!(e.contains("'ncols'"), "{e}");
    }

    #[test]
    fn a_results_csv_reads_back_into_the_runs_it_came_from() {
        let (old, new) = two_runs();
        let merged = merge_runs(&[old.clone(), new]);
        let text = results_csv(&merged, &ReportOptions::default());
        let runs = read_results_csv(&text, None).unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].machine.started, "2026-01-01T00:00:00Z");
        assert_eq!(runs[1].machine.commit, "bbbb222");
        let m = &runs[0].matrices[0];
        assert_eq!(m.name, "uniform:1000,5");
        assert_eq!(m.stats, old.matrices[0].stats);
        assert!(m.fits_l2);
        let r = m.results.iter().find(|r| r.method == "csr-vector").unwrap();
        let rec = r.record.as_ref().unwrap();
        assert_eq!(
            (rec.time.median_us, rec.prep_ms, rec.upload_ms),
            (10.0, 0.5, 0.25)
        );
        assert_eq!(rec.time.samples_us, vec![10.0, 10.0]);
        assert_eq!(
            rec.notes,
            vec![("auto chose".to_string(), "csr-vector".to_string())]
        );
        let wrong = runs[1].matrices[0]
            .results
            .iter()
            .find(|r| r.method == "csr-scalar")
            .unwrap();
        assert_eq!(wrong.status, Status::Wrong);
        assert_eq!(wrong.error.as_deref(), Some("no, \"quoted\""));
        // the same table from the CSV as from the records
        assert_eq!(
            Table::from_runs(&runs),
            Table::from_runs(&[old, two_runs().1])
        );
        assert!(read_results_csv("a,b\n1,2\n", None).is_err());
        assert!(read_results_csv(&text[..text.len() / 2], None).is_err());
    }

    #[test]
    fn csv_records_handle_quotes_commas_and_line_breaks() {
        let r = csv_records("a,\"b,c\",\"d\"\"e\"\n\"multi\nline\",x\r\nlast").unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].1, ["a", "b,c", "d\"e"]);
        assert_eq!(
            (r[1].0, r[1].1.clone()),
            (2, vec!["multi\nline".to_string(), "x".into()])
        );
        assert_eq!((r[2].0, r[2].1.clone()), (4, vec!["last".to_string()]));
        assert!(csv_records("\"open").is_err());
    }
}
