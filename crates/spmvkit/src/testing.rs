//! Test support (hidden from the docs), shared by the unit tests and the integration tests of
//! both crates: the one gate that decides whether a test that needs a GPU, several GPUs,
//! libnvrtc or the shared test matrices runs, is skipped, or fails.
//!
//! A test that lacks what it needs is skipped visibly: [`skip`] writes one line
//! `skipped: <test>: <reason>` to the process's stderr (straight to the stream, past libtest's
//! output capture, so that a plain `cargo test` shows it) and appends the same line to the file
//! named by `SPMVKIT_SKIP_LOG` when that is set; `.ci/run` and `scripts/run-gpu-tests.sh` count
//! the skips from that file. A run that asks for the missing thing fails instead, with a panic
//! naming the test and the reason:
//!
//! | variable                  | a missing … is a failure                                     |
//! |---------------------------|--------------------------------------------------------------|
//! | `SPMVKIT_REQUIRE_GPU=1`   | GPU, libnvrtc, shared test matrices                          |
//! | `SPMVKIT_REQUIRE_GPUS=n`  | as above, and GPUs up to n (a test needing more still skips) |
//! | `SPMVKIT_REQUIRE_NVRTC=1` | libnvrtc                                                     |
//!
//! So `SPMVKIT_REQUIRE_GPU=1` alone does not fail a two-GPU test on a one-GPU machine (it skips
//! with "needs 2 GPUs (found 1)"), while `SPMVKIT_REQUIRE_GPUS=2` does. The decisions are pure
//! functions ([`Requirements::parse`], [`verdict`]) that the tests check without touching the
//! process environment.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::gpu::Gpu;

/// The variable naming the file every skip line is appended to.
pub const SKIP_LOG: &str = "SPMVKIT_SKIP_LOG";
/// `1`: a missing GPU, libnvrtc or shared test matrices is a failure.
pub const REQUIRE_GPU: &str = "SPMVKIT_REQUIRE_GPU";
/// `n`: fewer than n GPUs (for a test that needs them) is a failure; implies [`REQUIRE_GPU`].
pub const REQUIRE_GPUS: &str = "SPMVKIT_REQUIRE_GPUS";
/// `1`: a missing libnvrtc is a failure (the CI NVRTC check sets it).
pub const REQUIRE_NVRTC: &str = "SPMVKIT_REQUIRE_NVRTC";

/// What a test needs that a machine may lack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// `needed` GPUs, of which `found` are visible.
    Gpus { needed: usize, found: usize },
    /// libnvrtc (compiling kernels, no GPU needed).
    Nvrtc,
    /// The shared SuiteSparse test matrices (`SPMVKIT_MATRICES`, or `shared/matrices` beside
    /// the checkout).
    Matrices,
    /// Something of the GPU present that the test needs (free memory, a feature of its
    /// architecture): insisted on wherever a GPU is.
    Device,
}

impl fmt::Display for Need {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Need::Gpus { needed: 1, .. } => write!(f, "a GPU"),
            Need::Gpus { needed, .. } => write!(f, "{needed} GPUs"),
            Need::Nvrtc => write!(f, "libnvrtc"),
            Need::Matrices => write!(f, "the shared test matrices"),
            Need::Device => write!(f, "a GPU able to run it"),
        }
    }
}

/// What the run insists on, from the `SPMVKIT_REQUIRE_*` variables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Requirements {
    /// `SPMVKIT_REQUIRE_GPU=1`.
    pub gpu: bool,
    /// `SPMVKIT_REQUIRE_GPUS=n` (0 when unset).
    pub gpus: usize,
    /// `SPMVKIT_REQUIRE_NVRTC=1`.
    pub nvrtc: bool,
}

impl Requirements {
    /// Reads the variables through `var` (the process environment in
    /// [`Requirements::from_env`]). A flag is `1` or `0` (unset or empty: `0`); a count is a
    /// non-negative integer; anything else is an error naming the variable.
    pub fn parse(var: impl Fn(&str) -> Option<String>) -> Result<Requirements, String> {
        let flag = |name: &str| match var(name).as_deref().map(str::trim) {
            None | Some("") | Some("0") => Ok(false),
            Some("1") => Ok(true),
            Some(other) => Err(format!("{name}={other}: expected 1 or 0")),
        };
        let gpus = match var(REQUIRE_GPUS).as_deref().map(str::trim) {
            None | Some("") => 0,
            Some(v) => v
                .parse::<usize>()
                .map_err(|_| format!("{REQUIRE_GPUS}={v}: expected a number of GPUs"))?,
        };
        Ok(Requirements {
            gpu: flag(REQUIRE_GPU)?,
            gpus,
            nvrtc: flag(REQUIRE_NVRTC)?,
        })
    }

    /// The requirements of this process; panics on a malformed variable (a misconfigured run
    /// must not pass as skips).
    #[track_caller]
    pub fn from_env() -> Requirements {
        match Requirements::parse(|name| std::env::var(name).ok()) {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        }
    }

    /// The GPUs the run insists on: at least one under `SPMVKIT_REQUIRE_GPU=1`.
    pub fn min_gpus(&self) -> usize {
        self.gpus.max(usize::from(self.gpu))
    }

    /// Whether the run insists on `need`, i.e. its absence is a failure rather than a skip.
    /// GPUs: when the machine falls short of both the test's need and the run's requirement.
    pub fn insists_on(&self, need: Need) -> bool {
        match need {
            Need::Gpus { needed, found } => found < needed && found < self.min_gpus(),
            Need::Nvrtc => self.nvrtc || self.min_gpus() > 0,
            Need::Matrices | Need::Device => self.min_gpus() > 0,
        }
    }
}

impl fmt::Display for Requirements {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut set = Vec::new();
        if self.gpu {
            set.push(format!("{REQUIRE_GPU}=1"));
        }
        if self.gpus > 0 {
            set.push(format!("{REQUIRE_GPUS}={}", self.gpus));
        }
        if self.nvrtc {
            set.push(format!("{REQUIRE_NVRTC}=1"));
        }
        if set.is_empty() {
            write!(f, "no SPMVKIT_REQUIRE_* variable")
        } else {
            write!(f, "{}", set.join(", "))
        }
    }
}

/// What becomes of a test that cannot run: a skip with its line, or a failure with its message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Skip(String),
    Fail(String),
}

/// The line a skip prints and logs: `skipped: <test>: <reason>`, on one line.
pub fn skip_line(test: &str, reason: &str) -> String {
    let one_line = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    format!("skipped: {}: {}", one_line(test), one_line(reason))
}

/// The verdict on `test`, which cannot run because `need` is missing (`reason` says how),
/// under the requirements `req`.
pub fn verdict(req: &Requirements, test: &str, need: Need, reason: &str) -> Verdict {
    if req.insists_on(need) {
        Verdict::Fail(format!("{test}: {reason}; the run requires {need} ({req})"))
    } else {
        Verdict::Skip(skip_line(test, reason))
    }
}

/// The name a skip is reported under: the running test's full name (libtest names each test's
/// thread after its path, e.g. `methods::csr::tests::gpu_matches`) when it ends with `test`,
/// else `test` as given.
fn report_name(test: &str) -> String {
    match std::thread::current().name() {
        Some(t) if t == test || t.ends_with(&format!("::{test}")) => t.to_string(),
        _ => test.to_string(),
    }
}

/// The running test's full name, when this runs on a libtest test thread.
pub fn current_test() -> Option<String> {
    std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .map(str::to_string)
}

/// Records a skip of `test`: one line on stderr (not captured by libtest) and, when
/// `SPMVKIT_SKIP_LOG` names a file, the same line appended to it; once per test and process (a
/// test that checks several things and lacks a GPU for each is one skip). Panics when the log
/// cannot be written (the count would be wrong).
pub fn skip(test: &str, reason: &str) {
    let name = report_name(test);
    record(&name, &skip_line(&name, reason));
}

fn record(name: &str, line: &str) {
    static RECORDED: Mutex<Vec<String>> = Mutex::new(Vec::new());
    {
        let mut seen = RECORDED.lock().unwrap_or_else(|p| p.into_inner());
        if seen.iter().any(|n| n == name) {
            return;
        }
        seen.push(name.to_string());
    }
    let _ = std::io::stderr()
        .lock()
        .write_all(format!("{line}\n").as_bytes());
    if let Some(path) = std::env::var_os(SKIP_LOG).filter(|p| !p.is_empty()) {
        if let Err(e) = append_line(Path::new(&path), line) {
            panic!(
                "{SKIP_LOG}={}: cannot append: {e}",
                Path::new(&path).display()
            );
        }
    }
}

/// Appends `line` and a newline to the file at `path` in one write (concurrent test processes
/// append to the same log; O_APPEND keeps each line whole).
fn append_line(path: &Path, line: &str) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(format!("{line}\n").as_bytes())
}

/// `test` cannot run because `need` is missing (`reason` says how): a failure (panic) when the
/// run insists on it, else a recorded [`skip`]. The caller returns afterwards.
#[track_caller]
pub fn require_or_skip(test: &str, need: Need, reason: &str) {
    require_or_skip_under(&Requirements::from_env(), test, need, reason);
}

/// [`require_or_skip`] under explicit requirements.
#[track_caller]
pub fn require_or_skip_under(req: &Requirements, test: &str, need: Need, reason: &str) {
    let name = report_name(test);
    match verdict(req, &name, need, reason) {
        Verdict::Fail(msg) => panic!("{msg}"),
        Verdict::Skip(line) => record(&name, &line),
    }
}

/// The process-wide GPU for `test`, or `None` after a recorded skip; without a GPU under
/// `SPMVKIT_REQUIRE_GPU=1` (or `SPMVKIT_REQUIRE_GPUS`) it panics.
#[track_caller]
pub fn gpu_or_skip(test: &str) -> Option<Arc<Gpu>> {
    match Gpu::get() {
        Ok(g) => Some(g),
        Err(e) => {
            let need = Need::Gpus {
                needed: 1,
                found: 0,
            };
            require_or_skip(test, need, &e.to_string());
            None
        }
    }
}

/// Whether `needed` GPUs are visible ([`crate::gpu::device_count`]); if not, `test` is skipped
/// with "needs N GPUs (found M)", or fails when `SPMVKIT_REQUIRE_GPUS` asks for them.
#[track_caller]
pub fn gpus_or_skip(test: &str, needed: usize) -> bool {
    let found = crate::gpu::device_count();
    if found >= needed {
        return true;
    }
    require_or_skip(
        test,
        Need::Gpus { needed, found },
        &format!("needs {needed} GPUs (found {found})"),
    );
    false
}

/// Whether libnvrtc can be loaded; if not, `test` is skipped, or fails under
/// `SPMVKIT_REQUIRE_NVRTC=1` or `SPMVKIT_REQUIRE_GPU=1`.
#[track_caller]
pub fn nvrtc_or_skip(test: &str) -> bool {
    if crate::gpu::nvrtc_present() {
        return true;
    }
    require_or_skip(test, Need::Nvrtc, "libnvrtc not found");
    false
}

/// The shared test matrices' folder ([`crate::bench::suites::shared_matrices_dir`]), if it
/// exists.
fn shared_dir() -> Result<PathBuf, String> {
    match crate::bench::suites::shared_matrices_dir() {
        Some(d) if d.is_dir() => Ok(d),
        Some(d) => Err(format!("no folder {} (SPMVKIT_MATRICES)", d.display())),
        None => Err("no shared matrices folder (set SPMVKIT_MATRICES)".to_string()),
    }
}

/// `relative` under `dir`, if that file exists.
pub fn matrix_in(dir: Result<PathBuf, String>, relative: &str) -> Result<PathBuf, String> {
    let path = dir?.join(relative);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!("{} not found", path.display()))
    }
}

/// The shared test matrices' folder for `test`, or `None` after a recorded skip; missing under
/// `SPMVKIT_REQUIRE_GPU=1` it panics.
#[track_caller]
pub fn matrices_or_skip(test: &str) -> Option<PathBuf> {
    match shared_dir() {
        Ok(d) => Some(d),
        Err(reason) => {
            require_or_skip(test, Need::Matrices, &reason);
            None
        }
    }
}

/// One shared test matrix (`relative` to the folder, e.g. `HB/jgl009.mtx.gz`) for `test`, or
/// `None` after a recorded skip; missing under `SPMVKIT_REQUIRE_GPU=1` it panics.
#[track_caller]
pub fn matrix_or_skip(test: &str, relative: &str) -> Option<PathBuf> {
    matrix_or_skip_under(&Requirements::from_env(), shared_dir(), test, relative)
}

/// [`matrix_or_skip`] under explicit requirements and folder.
#[track_caller]
pub fn matrix_or_skip_under(
    req: &Requirements,
    dir: Result<PathBuf, String>,
    test: &str,
    relative: &str,
) -> Option<PathBuf> {
    match matrix_in(dir, relative) {
        Ok(path) => Some(path),
        Err(reason) => {
            require_or_skip_under(req, test, Need::Matrices, &reason);
            None
        }
    }
}

/// Serialises the GPU tests of one test binary: they share one stream, and a CUDA-graph capture
/// or a free-memory check must not take in another test's work. Every GPU test takes it first.
pub fn gpu_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(vars: &[(&str, &str)]) -> Result<Requirements, String> {
        Requirements::parse(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

    /// Whether a test missing `need` fails (rather than skips) under the variables `vars`.
    fn fails(vars: &[(&str, &str)], need: Need) -> bool {
        matches!(
            verdict(&req(vars).unwrap(), "t", need, "-"),
            Verdict::Fail(_)
        )
    }

    const NO_GPU: Need = Need::Gpus {
        needed: 1,
        found: 0,
    };

    #[test]
    fn variables_parse_and_bad_values_are_errors() {
        assert_eq!(req(&[]).unwrap(), Requirements::default());
        assert_eq!(req(&[(REQUIRE_GPU, "0")]).unwrap(), Requirements::default());
        let r = req(&[
            (REQUIRE_GPU, "1"),
            (REQUIRE_GPUS, "2"),
            (REQUIRE_NVRTC, "1"),
        ])
        .unwrap();
        assert_eq!((r.gpu, r.gpus, r.nvrtc), (true, 2, true));
        assert_eq!(r.min_gpus(), 2);
        assert_eq!(req(&[(REQUIRE_GPU, "1")]).unwrap().min_gpus(), 1);
        assert_eq!(req(&[(REQUIRE_GPUS, "2")]).unwrap().min_gpus(), 2);
        let e = req(&[(REQUIRE_GPU, "yes")]).unwrap_err();
        assert!(e.contains("SPMVKIT_REQUIRE_GPU=yes"), "{e}");
        let e = req(&[(REQUIRE_GPUS, "two")]).unwrap_err();
        assert!(e.contains("SPMVKIT_REQUIRE_GPUS=two"), "{e}");
    }

    #[test]
    fn a_missing_gpu_skips_unless_required() {
        let v = verdict(&req(&[]).unwrap(), "t", NO_GPU, "no CUDA device found");
        assert_eq!(v, Verdict::Skip("skipped: t: no CUDA device found".into()));
        for vars in [
            [(REQUIRE_GPU, "1")],
            [(REQUIRE_GPUS, "1")],
            [(REQUIRE_GPUS, "2")],
        ] {
            let r = req(&vars).unwrap();
            let Verdict::Fail(msg) = verdict(&r, "t", NO_GPU, "no CUDA device found") else {
                panic!("{vars:?}: a missing GPU must fail");
            };
            assert!(msg.starts_with("t: no CUDA device found") && msg.contains(vars[0].0));
        }
        assert!(!fails(&[(REQUIRE_NVRTC, "1")], NO_GPU));
    }

    #[test]
    fn a_two_gpu_test_on_one_gpu_fails_only_under_require_gpus() {
        let one = Need::Gpus {
            needed: 2,
            found: 1,
        };
        let why = "needs 2 GPUs (found 1)";
        assert_eq!(
            verdict(&req(&[]).unwrap(), "two", one, why),
            Verdict::Skip("skipped: two: needs 2 GPUs (found 1)".into())
        );
        assert!(!fails(&[(REQUIRE_GPU, "1")], one));
        assert!(!fails(&[(REQUIRE_GPUS, "1")], one));
        for vars in [
            &[(REQUIRE_GPUS, "2")][..],
            &[(REQUIRE_GPU, "1"), (REQUIRE_GPUS, "2")],
        ] {
            assert!(fails(vars, one), "{vars:?}");
        }
        // no GPU at all where one is required: a failure whatever the test needs
        let none = Need::Gpus {
            needed: 2,
            found: 0,
        };
        assert!(fails(&[(REQUIRE_GPU, "1")], none));
    }

    #[test]
    fn missing_nvrtc_fails_under_either_flag() {
        assert!(!fails(&[], Need::Nvrtc));
        for vars in [
            [(REQUIRE_NVRTC, "1")],
            [(REQUIRE_GPU, "1")],
            [(REQUIRE_GPUS, "2")],
        ] {
            assert!(fails(&vars, Need::Nvrtc), "{vars:?}");
        }
    }

    #[test]
    fn missing_matrices_fail_under_the_gpu_flag_only() {
        assert!(!fails(&[], Need::Matrices));
        assert!(!fails(&[(REQUIRE_NVRTC, "1")], Need::Matrices));
        assert!(fails(&[(REQUIRE_GPU, "1")], Need::Matrices));
    }

    #[test]
    #[should_panic(expected = "the run requires the shared test matrices (SPMVKIT_REQUIRE_GPU=1)")]
    fn a_missing_matrix_folder_panics_under_the_gpu_flag() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("matrices");
        let r = req(&[(REQUIRE_GPU, "1")]).unwrap();
        matrix_or_skip_under(&r, Ok(gone), "t", "HB/jgl009.mtx.gz");
    }

    #[test]
    #[should_panic(expected = "no shared matrices folder")]
    fn no_matrix_folder_at_all_panics_under_the_gpu_flag() {
        let r = req(&[(REQUIRE_GPU, "1")]).unwrap();
        let none = Err("no shared matrices folder (set SPMVKIT_MATRICES)".to_string());
        matrix_or_skip_under(&r, none, "t", "HB/jgl009.mtx.gz");
    }

    #[test]
    fn a_present_matrix_is_found() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("HB")).unwrap();
        std::fs::write(dir.path().join("HB/a.mtx.gz"), b"").unwrap();
        let r = req(&[(REQUIRE_GPU, "1")]).unwrap();
        let got = matrix_or_skip_under(&r, Ok(dir.path().to_path_buf()), "t", "HB/a.mtx.gz");
        assert_eq!(got, Some(dir.path().join("HB/a.mtx.gz")));
    }

    #[test]
    fn the_skip_log_gets_one_line_per_skip() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("skips");
        append_line(&log, &skip_line("a", "no GPU")).unwrap();
        append_line(&log, &skip_line("b", "needs 2 GPUs (found 1)")).unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            text,
            "skipped: a: no GPU\nskipped: b: needs 2 GPUs (found 1)\n"
        );
    }

    #[test]
    fn skip_lines_are_one_line_and_name_the_test() {
        assert_eq!(
            skip_line("m::t", "cannot load\n  libcuda.so"),
            "skipped: m::t: cannot load libcuda.so"
        );
        assert_eq!(
            report_name("skip_lines_are_one_line_and_name_the_test"),
            "testing::tests::skip_lines_are_one_line_and_name_the_test"
        );
        assert_eq!(report_name("other label"), "other label");
        assert_eq!(
            current_test().as_deref(),
            Some("testing::tests::skip_lines_are_one_line_and_name_the_test")
        );
    }
}
