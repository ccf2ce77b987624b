//! What a new user hits in the first ten minutes (issue 21): refusals instead of aborts, usage
//! errors up front, progress when piped, exit statuses scripts can tell apart, and messages that
//! say what is true once.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{binary, spmv};

/// Runs spmv with extra environment variables; stdout and stderr are pipes (not terminals).
fn spmv_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(binary());
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("running spmv")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A fresh temporary directory for one test.
fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("spmv-first-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(dir: &Path, name: &str, body: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn a_generator_beyond_memory_is_refused_before_allocating() {
    // Within the index limit, beyond the (capped) memory: an error naming both sizes, exit 1,
    // no abort, and fast (the check comes before any allocation).
    let t = std::time::Instant::now();
    let out = spmv_env(
        &["info", "dense:40000,40000", "--no-cache"],
        &[("SPMVKIT_MEMORY_LIMIT", "1G")],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("needs about 19.2 GB"), "{err}");
    assert!(err.contains("is available (SPMVKIT_MEMORY_LIMIT)"), "{err}");
    assert!(
        t.elapsed().as_secs() < 20,
        "the refusal took {:?}",
        t.elapsed()
    );
    for spec in ["uniform:2000000000,1", "diag:2000000000"] {
        let out = spmv_env(
            &["info", spec, "--no-cache"],
            &[("SPMVKIT_MEMORY_LIMIT", "4G")],
        );
        assert_eq!(out.status.code(), Some(1), "{spec}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains("of memory"), "{spec}");
    }
    // Beyond the index limits: refused by them, just as fast (2^31-1 nonzeros with 32-bit row
    // offsets, 2^40 with 64-bit ones; `info` reads a matrix in the width it needs).
    let (ok, _, err) = spmv(&[
        "run",
        "dense:400000,400000",
        "--no-cache",
        "--offsets",
        "32",
        "--method",
        "csr-vector",
        "--cpu",
    ]);
    assert!(!ok);
    assert!(err.contains("exceeds the 32-bit index limit"), "{err}");
    let (ok, _, err) = spmv(&["info", "dense:2000000,2000000", "--no-cache"]);
    assert!(!ok);
    assert!(err.contains("exceeds the limit of 2^40"), "{err}");
}

#[test]
fn a_non_finite_scalar_is_a_usage_error_not_a_wrong_result() {
    for args in [
        &["run", "poisson2d:8", "--method", "csr", "--alpha", "nan"][..],
        &["run", "poisson2d:8", "--method", "csr", "--beta", "inf"],
        &["run", "poisson2d:8", "--method", "csr", "--reps", "0"],
        &["bench", "poisson2d:8", "--samples", "0"],
        &["solve", "cg", "poisson2d:8", "--tol", "nan"],
        &["pagerank", "kron:6", "--damping", "1"],
    ] {
        let out = spmv_env(args, &[]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(!err.contains("wrong result"), "{args:?}: {err}");
    }
}

#[test]
fn piped_bench_prints_a_line_per_matrix_and_the_skipped_inputs() {
    let dir = temp_dir("bench");
    let bad = write(
        &dir,
        "bad.mtx",
        "%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1.0\n",
    );
    let out_dir = dir.join("out");
    let out = spmv_env(
        &[
            "bench",
            "poisson2d:10",
            &bad,
            "kron:6",
            "--methods",
            "csr,auto",
            "--reps",
            "2",
            "--samples",
            "3",
            "--warmup",
            "0",
            "--no-cache",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &[],
    );
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{err}");
    let progress: Vec<&str> = err.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(progress.len(), 3, "{err}");
    assert!(
        progress[0].starts_with("[1/3] poisson2d:10: 2 results"),
        "{err}"
    );
    assert!(
        progress[1].starts_with("[2/3] skipped") && progress[1].contains("line 3"),
        "{err}"
    );
    assert!(progress[2].starts_with("[3/3] kron:6"), "{err}");
    assert!(
        stdout.contains("skipped") && stdout.contains("bad.mtx"),
        "{stdout}"
    );
    let summary = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(summary.contains("## Skipped inputs"), "{summary}");
    assert!(summary.contains("row index 3 out of range"), "{summary}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn exit_statuses_tell_breakdown_usage_and_errors_apart() {
    // diag:N has values of both signs: symmetric but indefinite, so CG breaks down.
    let out = spmv_env(&["solve", "cg", "diag:50", "--no-cache", "--cpu"], &[]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("breakdown"));
    assert!(text(&out.stderr).contains("stopped by breakdown"));
    let out = spmv_env(
        &["solve", "cg", "poisson2d:10", "--max-iter", "2", "--cpu"],
        &[],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let out = spmv_env(&["solve", "cg", "poisson2d:10", "--cpu"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = spmv_env(&["run", "no-such-file.mtx", "--method", "csr"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let out = spmv_env(
        &["run", "poisson2d:8", "--method", "csr", "--auto", "trial"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let help = text(&spmv_env(&["--help"], &[]).stdout);
    assert!(
        help.contains("Exit status:") && help.contains("3  a solver"),
        "{help}"
    );
    let help = text(&spmv_env(&["solve", "cg", "--help"], &[]).stdout);
    assert!(help.contains("Exit status:"), "{help}");
    assert!(!help.contains("see above"), "{help}");
}

#[test]
fn an_unknown_output_extension_is_refused_before_generating() {
    let dir = temp_dir("ext");
    for name in ["out.txt", "x.spmvkit.gz", "noext"] {
        let path = dir.join(name);
        let out = spmv_env(&["gen", "poisson2d:4", "-o", path.to_str().unwrap()], &[]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(".mtx, .mtx.gz, .spmvkit"), "{err}");
        assert!(!path.exists(), "{name} was written");
    }
    for name in ["a.mtx", "a.mtx.gz", "a.spmvkit"] {
        let path = dir.join(name);
        let out = spmv_env(&["gen", "poisson2d:4", "-o", path.to_str().unwrap()], &[]);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        assert!(path.exists());
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn messages_say_what_is_true_once() {
    let dir = temp_dir("msg");
    // A directory is "a directory".
    let (ok, _, err) = spmv(&["info", dir.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("is a directory"), "{err}");
    assert_eq!(err.matches("is a directory").count(), 1, "{err}");
    // An unwritable path: the path and the OS error once each.
    let (ok, _, err) = spmv(&["gen", "poisson2d:4", "-o", "/nonexistent/dir/a.mtx"]);
    assert!(!ok);
    assert_eq!(err.matches("/nonexistent/dir/a.mtx").count(), 1, "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
    // A size line beyond the index limit: the file and the line.
    let big = write(
        &dir,
        "big.mtx",
        "%%MatrixMarket matrix coordinate real general\n3 3 2147483648\n1 1 1.0\n",
    );
    let (ok, _, err) = spmv(&["info", &big, "--no-cache"]);
    assert!(!ok);
    assert!(err.contains("big.mtx: line 2:"), "{err}");
    // Symmetric expansion is mentioned for symmetric files only.
    let general = write(
        &dir,
        "g.mtx",
        "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n2 1 2.0\n",
    );
    let symmetric = write(
        &dir,
        "s.mtx",
        "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 1 1.0\n2 1 2.0\n",
    );
    let (_, out, _) = spmv(&["info", &general, "--no-cache"]);
    assert!(!out.contains("symmetric"), "{out}");
    let (_, out, _) = spmv(&["info", &symmetric, "--no-cache"]);
    assert!(out.contains("3 (after symmetric expansion)"), "{out}");
    let (_, out, _) = spmv(&["info", "poisson2d:4"]);
    assert!(!out.contains("symmetric"), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn cpu_runs_print_only_what_is_true() {
    let (ok, out, err) = spmv(&[
        "run",
        "poisson2d:16",
        "--method",
        "cb-spmv",
        "--cpu",
        "--reps",
        "2",
        "--samples",
        "2",
    ]);
    assert!(ok, "{err}");
    let first = out.lines().next().unwrap_or_default();
    assert!(
        first.contains("on CPU") && !first.contains("(cpu)"),
        "{out}"
    );
    assert!(!out.contains("upload"), "{out}");
    assert!(!out.contains(" / "), "{out}");
    assert!(out.contains("    accumulation: "), "{out}");
    // --graph on the CPU is noted, as --compare is.
    let (ok, _, err) = spmv(&["solve", "cg", "poisson2d:8", "--cpu", "--graph", "both"]);
    assert!(ok, "{err}");
    assert!(
        err.contains("--graph both has no effect on the CPU"),
        "{err}"
    );
}

#[test]
fn methods_fit_80_columns_when_piped_and_verbose_explains_parameters() {
    let (ok, out, _) = spmv(&["methods"]);
    assert!(ok);
    for l in out.lines() {
        let long_word = l.split_whitespace().any(|w| w.chars().count() > 60);
        assert!(l.chars().count() <= 80 || long_word, "{l}");
    }
    assert!(
        !out.contains("blocks with at most this many nonzeros"),
        "{out}"
    );
    let (ok, out, _) = spmv(&["methods", "--verbose"]);
    assert!(ok);
    assert!(
        out.contains("blocks with at most this many nonzeros"),
        "{out}"
    );
    assert!(out.contains("the nnz threshold of balance=auto"), "{out}");
}

#[test]
fn help_tables_keep_their_indent_and_examples_stay_whole() {
    let (_, out, _) = spmv(&["gen", "--help"]);
    assert!(!out.contains("Kinds:\n\nUsage"), "{out}");
    assert!(
        out.contains("  kron       SCALE[,EF]\n      Graph500"),
        "{out}"
    );
    let (_, out, _) = spmv(&["bench", "--help"]);
    for l in out.lines().filter(|l| l.contains("--methods '")) {
        assert_eq!(l.matches('\'').count(), 2, "split example: {l}");
    }
}
