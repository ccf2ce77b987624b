//! Chooses the shipped defaults on the TUNING split and reports them on the TEST split
//! (`docs/results/tuning-split.md`): the split (`auto::model::split_of`, by matrix family), then
//! - `auto`'s model settings (k, the distance-weight offset, the features) and its trial count
//!   and trial budget, from the training table (`auto/table.csv`): each tuning matrix predicted
//!   from the tuning matrices of other families;
//! - cb-spmv's owner-epilogue cut (`cb_spmv::GRID_MAX_NNZ`) from the H200 runs that timed both
//!   epilogues on every matrix (`2026-11-22c/owner/*-owner-everywhere`: `cb-spmv` with the owner
//!   epilogue everywhere, and `cb-spmv[epilogue=atomic]`);
//! - fastload's one-launch cut (`fastload::GRID_MAX_NNZ`) from the run that timed both launch
//!   modes on every matrix (`2026-11-22b/explore5`: `fastload` with the grid mode up to 2M
//!   nonzeros, and `fastload[fuse=two]`);
//! - the SpMM row-major tile default per k (`spmm::RmConfig::choose`: vectors per lane, and at
//!   k = 32 the matrix size below which a lane takes one vector) and the long rows' piece
//!   length (`spmm::piece_nnz`), from the run that timed the tile variants on the shared suite
//!   (`2026-11-25/spmm-second/shared-row-f64`: `csr-vector`, `csr-vector[spmm_cols=1]`,
//!   `csr-vector[spmm_cols=4]`, `csr-vector[spmm_piece=1024]`, f64 row-major, k = 8 and 32;
//!   issue #24), each against cuSPARSE SpMM in the same run (graph timing).
//!
//! A value other than the current one is chosen only when it is strictly better on the tuning
//! split. Prints markdown; needs no GPU. Run: `cargo bench -p spmvkit --bench tuning_split`
//! (from the repository root or the crate folder; `SPMVKIT_RESULTS` = the `docs/results/h200`
//! folder otherwise).

use std::path::{Path, PathBuf};

use spmvkit::bench::auto::eval::{
    calls_label, outcomes, summarize, Outcome, Scope, Setup, CALLS_INF,
};
use spmvkit::bench::auto::table::load_committed_runs;
use spmvkit::bench::report::{merge_runs, method_time_us, MergedRuns};
use spmvkit::gpu::TimingMode;
use spmvkit::matrix::DenseOrder;
use spmvkit::methods::auto::model::{split_of, Knobs, Model, Split, FEATURE_NAMES, NFEATURES};
use spmvkit::methods::auto::{DEFAULT_TRIAL, TRIAL_BUDGET};
use spmvkit::methods::spmm::SMALL_SHARE;
use spmvkit::methods::{cb_spmv, fastload};
use spmvkit::scalar::Precision;

const PRECISIONS: [Precision; 2] = [Precision::F64, Precision::F32];

/// The model settings chosen on all the data before the split, for comparison.
const BEFORE: Knobs = Knobs {
    k: 5,
    offset: 0.3,
    feature_weights: [1.0; NFEATURES],
};
/// The trial count chosen on all the data before the split.
const BEFORE_TRIAL: usize = 4;
const CALLS: [f64; 3] = [CALLS_INF, 1000.0, 1.0];

/// The score of model settings on a scope: matrices within 10 % of the best, summed over both
/// precisions and calls ∈ {∞, 1000, 1} (model mode), and the mean log of auto / best.
fn score(m: &Model, knobs: Knobs, scope: Scope) -> (usize, f64) {
    let (mut within, mut log, mut n) = (0, 0.0, 0);
    for p in PRECISIONS {
        for calls in CALLS {
            let su = Setup {
                knobs,
                ..Setup::model(p, calls, scope)
            };
            let outs = outcomes(m, &su);
            let s = summarize(&m.methods, &outs);
            within += s.within10;
            log += s.gm_over_best.ln() * s.n as f64;
            n += s.n;
        }
    }
    (within, log / n.max(1) as f64)
}

/// Whether score `a` beats `b`: more matrices within 10 %, then a lower mean log.
fn better(a: (usize, f64), b: (usize, f64)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 < b.1 - 1e-12)
}

fn fmt_score(s: (usize, f64)) -> String {
    format!("{} ({:.3}×)", s.0, s.1.exp())
}

/// Summary of one setting as a table cell: "within / n (geomean)".
fn cell(m: &Model, su: &Setup, filter: impl Fn(&Outcome) -> bool) -> String {
    let outs = outcomes(m, su);
    let s = summarize(&m.methods, outs.iter().filter(|o| filter(o)));
    format!(
        "{} / {} ({:.0} %), {:.3}×",
        s.within10,
        s.n,
        s.within10_pct(),
        s.gm_over_best
    )
}

fn results_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("SPMVKIT_RESULTS") {
        return PathBuf::from(d);
    }
    for c in ["docs/results/h200", "../../docs/results/h200"] {
        if Path::new(c).is_dir() {
            return PathBuf::from(c);
        }
    }
    PathBuf::from("docs/results/h200")
}

/// The committed runs `files` merged by matrix, or None (said on stdout) when they cannot be read.
fn merged_runs(files: &[PathBuf]) -> Option<MergedRuns> {
    match load_committed_runs(files) {
        Ok(runs) => Some(merge_runs(&runs)),
        Err(e) => {
            println!("(runs not readable: {e})\n");
            None
        }
    }
}

/// Per matrix of runs: (name, nnz, cuSPARSE µs, small-side µs, large-side µs), stream timing,
/// for a cut between two timings of one method.
fn cut_data(files: &[PathBuf], small: &str, large: &str) -> Vec<(String, usize, f64, f64, f64)> {
    let Some(merged) = merged_runs(files) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for mm in &merged.matrices {
        let m = &mm.matrix;
        let t = |name: &str| method_time_us(&m.results, name, Precision::F64, TimingMode::Stream);
        if let (Some(c), Some(s), Some(l)) = (t("cusparse"), t(small), t(large)) {
            out.push((m.name.clone(), m.stats.nnz, c, s, l));
        }
    }
    out
}

/// Geomean over cuSPARSE of a method that takes the small-side timing up to `cut` nonzeros.
fn cut_geomean(data: &[&(String, usize, f64, f64, f64)], cut: usize) -> f64 {
    let logs: f64 = data
        .iter()
        .map(|(_, nnz, c, s, l)| (c / if *nnz <= cut { *s } else { *l }).ln())
        .sum();
    (logs / data.len().max(1) as f64).exp()
}

fn fmt_cut(c: usize) -> String {
    match c {
        0 => "0 (never)".into(),
        usize::MAX => "∞ (always)".into(),
        c if c >= 1_000_000 => format!("{}M", c as f64 / 1e6),
        c => format!("{}k", c / 1000),
    }
}

/// Chooses a cut on the tuning split and reports it on the test split.
fn choose_cut(
    what: &str,
    data: &[(String, usize, f64, f64, f64)],
    current: usize,
    grid: &[usize],
) -> usize {
    let tune: Vec<_> = data
        .iter()
        .filter(|d| split_of(&d.0) == Split::Tune)
        .collect();
    let test: Vec<_> = data
        .iter()
        .filter(|d| split_of(&d.0) == Split::Test)
        .collect();
    println!(
        "{what}: {} matrices timed both ways, {} tune, {} test. Geomean over cuSPARSE (stream) of the default that takes the one-launch mode up to the cut:\n",
        data.len(),
        tune.len(),
        test.len()
    );
    println!("| cut (nnz) | tune | test |\n|---|---|---|");
    let mut best = current;
    for &c in grid {
        let mark = if c == current { " (current)" } else { "" };
        println!(
            "| {}{mark} | {:.3}× | {:.3}× |",
            fmt_cut(c),
            cut_geomean(&tune, c),
            cut_geomean(&test, c)
        );
        if cut_geomean(&tune, c) > cut_geomean(&tune, best) + 1e-12 {
            best = c;
        }
    }
    println!(
        "\nChosen on tune: **{}** (tune {:.3}×; current {} {:.3}×). On test: **{:.3}×** (current cut {:.3}×).\n",
        fmt_cut(best),
        cut_geomean(&tune, best),
        fmt_cut(current),
        cut_geomean(&tune, current),
        cut_geomean(&test, best),
        cut_geomean(&test, current)
    );
    best
}

/// Per matrix of the SpMM runs `files` (f64, row-major, `k` vectors): (name, rows, graph µs of
/// cuSPARSE SpMM, graph µs of each of `methods`), for the matrices where every one is recorded.
fn spmm_data(files: &[PathBuf], k: usize, methods: &[&str]) -> Vec<(String, usize, f64, Vec<f64>)> {
    let Some(merged) = merged_runs(files) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for mm in &merged.matrices {
        let m = &mm.matrix;
        let t = |name: &str| {
            let r = m.multi.iter().find(|r| {
                r.method == name
                    && r.k == k
                    && r.order == DenseOrder::Row
                    && r.precision == Precision::F64
            })?;
            let rec = r.record.as_ref().filter(|rec| rec.verified)?;
            Some(rec.graph_time.as_ref().unwrap_or(&rec.time).median_us)
        };
        let ts: Option<Vec<f64>> = methods.iter().map(|n| t(n)).collect();
        if let (Some(c), Some(ts)) = (t("cusparse"), ts) {
            out.push((m.name.clone(), m.stats.nrows, c, ts));
        }
    }
    out
}

/// Geomean over cuSPARSE SpMM on the matrices of `split`, each timed by `pick` (its entry of
/// the method times, given its rows).
fn spmm_geomean(
    data: &[(String, usize, f64, Vec<f64>)],
    split: Split,
    pick: impl Fn(usize, &[f64]) -> f64,
) -> (f64, usize) {
    let sel: Vec<_> = data.iter().filter(|d| split_of(&d.0) == split).collect();
    let logs: f64 = sel
        .iter()
        .map(|(_, r, c, ts)| (c / pick(*r, ts)).ln())
        .sum();
    ((logs / sel.len().max(1) as f64).exp(), sel.len())
}

/// An SpMM candidate default: its label and its time on a matrix (rows, the method times).
type Candidate = (String, Box<dyn Fn(usize, &[f64]) -> f64>);

/// Resident threads of the H200 the run was on (132 SMs × 2048), for the small-matrix switch.
const H200_FILL: usize = 132 * 2048;

/// One SpMM default on the tuning split: the candidates, the first the current one, printed
/// with tune and test geomeans; another is chosen only when strictly better on tune. Returns
/// the chosen index.
fn choose_spmm(data: &[(String, usize, f64, Vec<f64>)], cands: &[Candidate]) -> usize {
    println!("| candidate | tune | test |\n|---|---|---|");
    let mut best = 0;
    let mut best_tune = spmm_geomean(data, Split::Tune, &cands[0].1).0;
    for (i, (label, pick)) in cands.iter().enumerate() {
        let ((tune, nt), (test, ns)) = (
            spmm_geomean(data, Split::Tune, pick),
            spmm_geomean(data, Split::Test, pick),
        );
        let mark = if i == 0 { " (current)" } else { "" };
        println!("| {label}{mark} | {tune:.3}× ({nt}) | {test:.3}× ({ns}) |");
        if tune > best_tune + 1e-12 {
            best = i;
            best_tune = tune;
        }
    }
    let test = |i: usize| spmm_geomean(data, Split::Test, &cands[i].1).0;
    println!(
        "\nChosen on tune: **{}** (tune {best_tune:.3}×). On test: **{:.3}×** (current {:.3}×).\n",
        cands[best].0,
        test(best),
        test(0)
    );
    best
}

/// The SpMM defaults (issue #24) chosen on the tuning split from the tile A/B run.
fn spmm_defaults(dir: &Path) {
    let files = [dir.join("2026-11-25/spmm-second/shared-row-f64")];
    let methods = [
        "csr-vector",
        "csr-vector[spmm_cols=1]",
        "csr-vector[spmm_cols=4]",
        "csr-vector[spmm_piece=1024]",
    ];
    println!("## SpMM: the row-major tile and the piece length (issue #24)\n");
    println!("From `2026-11-25/spmm-second/shared-row-f64` (the shared suite, f64 row-major, graph timing): geomean of cuSPARSE SpMM's time over the candidate's, matrices in parentheses. The current rule (`RmConfig::choose`): k / 8 vectors per lane (at least 2 in f64), but one when the rows would fill less than half the device (nrows · lanes < 132 · 2048 / 2; at k = 32 in f64 that is fewer than 16,896 rows: 8 lanes of 4 vectors a row above, `spmm_cols=4`, a warp of one vector each below, `spmm_cols=1`).\n");
    for k in [8, 32] {
        let data = spmm_data(&files, k, &methods);
        if data.is_empty() {
            continue;
        }
        println!("### k = {k}: vectors per lane\n");
        let mut cands: Vec<Candidate> = vec![
            ("the rule (`csr-vector`)".into(), Box::new(|_, t| t[0])),
            (
                "one vector per lane (`spmm_cols=1`)".into(),
                Box::new(|_, t| t[1]),
            ),
            (
                "4 vectors per lane (`spmm_cols=4`)".into(),
                Box::new(|_, t| t[2]),
            ),
        ];
        // the small-matrix switch as data: one vector per lane when nrows · lanes < share ·
        // the H200's resident threads, each side timed by its own records. At k = 32 the wide
        // side is `spmm_cols=4` (8 lanes), timed on every matrix, so any share can be judged;
        // at k = 8 it is the rule's 2 vectors per lane (4 lanes), timed only above the current
        // cut, so only larger shares can
        let (lanes, shares): (usize, &[f64]) = match k {
            32 => (8, &[0.5, 1.0, 0.25, 0.125, 0.0625, 0.03125]),
            _ => (4, &[0.5, 1.0, 2.0, 4.0]),
        };
        for &share in shares {
            let cut = (share * H200_FILL as f64) as usize / lanes;
            let wide = if k == 32 { 2 } else { 0 };
            let label = format!(
                "one vector per lane below share {share} of the device ({cut} rows){}",
                if share == 0.5 {
                    " (the rule, from the variants' records)"
                } else {
                    ""
                }
            );
            cands.push((
                label,
                Box::new(move |r, t| if r < cut { t[1] } else { t[wide] }),
            ));
        }
        let chosen = choose_spmm(&data, &cands);
        let shipped = SMALL_SHARE.iter().rev().find(|(from, _)| k >= *from);
        println!(
            "Shipped (`spmm::SMALL_SHARE`): one vector per lane below share {} of the device; the run's `csr-vector` used 0.5 (the rule before the split). Chosen above: {}.\n",
            shipped.map_or(0.5, |s| s.1),
            cands[chosen].0
        );
        println!("### k = {k}: the piece length\n");
        let cands: Vec<Candidate> = vec![
            (
                "the rule (`csr-vector`: 4 × the mean row, ≥ nnz / 2^16, 64..1024)".into(),
                Box::new(|_, t| t[0]),
            ),
            ("1024 (`spmm_piece=1024`)".into(), Box::new(|_, t| t[3])),
        ];
        choose_spmm(&data, &cands);
    }
}

fn main() {
    if std::env::args().any(|a| a == "--spmm") {
        spmm_defaults(&results_dir());
        return;
    }
    let m = Model::shipped().unwrap_or_else(|e| {
        eprintln!("tuning_split: {e}");
        std::process::exit(1)
    });

    // ---- the split
    println!("## The split\n");
    for sp in [Split::Tune, Split::Test] {
        let (names, fams) = m.split_members(sp);
        let large = names
            .iter()
            .filter(|n| m.samples.iter().any(|s| s.matrix == **n && !s.fits_l2()))
            .count();
        println!(
            "- **{sp:?}:** {} matrices ({} larger than L2), {} families: {}\n",
            names.len(),
            large,
            fams.len(),
            names.join(", ")
        );
    }

    // ---- auto: k and the weight offset
    println!("## auto's model: k and the distance weights 1/(d + offset)\n");
    println!("Score on the tuning split (each family held out, model fitted on the other tuning families): matrices within 10 % of the best, summed over f64 and f32 and calls ∈ {{∞, 1000, 1}} (model mode), and the geomean of auto / best.\n");
    let ks = [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16];
    let offsets = [0.03, 0.1, 0.3, 1.0, 3.0, 1e9];
    // the search starts from all features; ties keep the shipped k and offset
    let current = Knobs {
        feature_weights: [1.0; NFEATURES],
        ..Knobs::SHIPPED
    };
    let mut best = current;
    let mut best_score = score(m, current, Scope::Tune);
    print!("| k \\ offset |");
    for o in offsets {
        print!(
            " {} |",
            if o >= 1e9 {
                "∞ (equal)".into()
            } else {
                format!("{o}")
            }
        );
    }
    println!("\n|---|{}", "---|".repeat(offsets.len()));
    for k in ks {
        print!("| {k} |");
        for offset in offsets {
            let kn = Knobs {
                k,
                offset,
                ..current
            };
            let s = score(m, kn, Scope::Tune);
            print!(" {} |", fmt_score(s));
            if better(s, best_score) {
                best = kn;
                best_score = s;
            }
        }
        println!();
    }
    println!(
        "\nChosen on tune: k = **{}**, offset = **{}** ({}); current k = {}, offset = {} ({}).\n",
        best.k,
        best.offset,
        fmt_score(best_score),
        current.k,
        current.offset,
        fmt_score(score(m, current, Scope::Tune))
    );

    // ---- auto: features, by backward elimination
    println!("## auto's model: the features\n");
    println!("Backward elimination on the tuning split from all features: each step drops the feature whose removal improves the score most; it stops when no removal improves it.\n");
    loop {
        let mut step: Option<(usize, (usize, f64))> = None;
        for (f, name) in FEATURE_NAMES.iter().enumerate() {
            if best.feature_weights[f] == 0.0 {
                continue;
            }
            let mut kn = best;
            kn.feature_weights[f] = 0.0;
            let s = score(m, kn, Scope::Tune);
            println!("- without {name}: {}", fmt_score(s));
            if better(s, step.map_or(best_score, |x| x.1)) {
                step = Some((f, s));
            }
        }
        match step {
            Some((f, s)) => {
                println!(
                    "\n  → drop **{}** ({} against {})\n",
                    FEATURE_NAMES[f],
                    fmt_score(s),
                    fmt_score(best_score)
                );
                best.feature_weights[f] = 0.0;
                best_score = s;
            }
            None => {
                println!("\n  → no removal improves on {}\n", fmt_score(best_score));
                break;
            }
        }
    }
    let used: Vec<&str> = (0..NFEATURES)
        .filter(|&f| best.feature_weights[f] > 0.0)
        .map(|f| FEATURE_NAMES[f])
        .collect();
    println!(
        "Chosen on tune: k = {}, offset = {}, features: {}.\n",
        best.k,
        best.offset,
        used.join(", ")
    );

    // ---- auto: trial count
    println!("## auto's trial count\n");
    println!("Trial mode at calls = ∞ on the tuning split, all methods: the smallest count that puts at least 90 % of the tuning matrices within 10 % of the best in both precisions (the bar of issue #11); if none does, the count with the most.\n");
    println!("| trial | f64 tune | f32 tune |\n|---|---|---|");
    let trial_setup = |p, trial, calls, budget| Setup {
        trial,
        budget,
        knobs: best,
        ..Setup::model(p, calls, Scope::Tune)
    };
    let mut chosen_trial = None;
    let mut most = (0, 0);
    for trial in 1..=6 {
        let mut ok = true;
        let mut tot = 0;
        let mut cells = Vec::new();
        for p in PRECISIONS {
            let su = trial_setup(p, trial, CALLS_INF, TRIAL_BUDGET);
            let outs = outcomes(m, &su);
            let s = summarize(&m.methods, &outs);
            ok &= 10 * s.within10 >= 9 * s.n;
            tot += s.within10;
            cells.push(cell(m, &su, |_| true));
        }
        println!("| {trial} | {} | {} |", cells[0], cells[1]);
        if ok && chosen_trial.is_none() {
            chosen_trial = Some(trial);
        }
        if tot > most.1 {
            most = (trial, tot);
        }
    }
    let trial = chosen_trial.unwrap_or(most.0);
    println!("\nChosen on tune: trial = **{trial}** (current {DEFAULT_TRIAL}).\n");

    // ---- auto: trial budget
    println!("## auto's trial budget\n");
    println!("The share of the predicted run that the extra candidates may cost, with trial = {trial}: matrices within 10 % of the best on the tuning split, summed over f64 and f32, at calls ∈ {{1000, 10⁴, 10⁵}} (at ∞ every budget admits the trial, and at 1 none does).\n");
    println!("| budget | within 10 % (tune) |\n|---|---|");
    let budgets = [0.005, 0.01, 0.02, 0.05, 0.1];
    let mut chosen_budget = TRIAL_BUDGET;
    let mut best_b = (0usize, f64::INFINITY);
    let budget_score = |b: f64| {
        let (mut w, mut log, mut n) = (0, 0.0, 0);
        for p in PRECISIONS {
            for calls in [1000.0, 1e4, 1e5] {
                let outs = outcomes(m, &trial_setup(p, trial, calls, b));
                let s = summarize(&m.methods, &outs);
                w += s.within10;
                log += s.gm_over_best.ln() * s.n as f64;
                n += s.n;
            }
        }
        (w, log / n.max(1) as f64)
    };
    let cur_b = budget_score(TRIAL_BUDGET);
    best_b = if better(cur_b, best_b) { cur_b } else { best_b };
    for b in budgets {
        let s = budget_score(b);
        println!("| {} % | {} |", b * 100.0, fmt_score(s));
        if better(s, best_b) {
            best_b = s;
            chosen_budget = b;
        }
    }
    println!(
        "\nChosen on tune: budget = **{} %** (current {} %).\n",
        chosen_budget * 100.0,
        TRIAL_BUDGET * 100.0
    );

    // ---- the chosen settings against the old ones, tune and test
    println!("## auto on the test split\n");
    println!("Model fitted on the tuning split only; the test matrices were never seen when choosing. \"before\": the settings chosen on all the data before the split (k = {}, offset = {}, all features, trial = {BEFORE_TRIAL}); \"chosen\": the values chosen above on the tuning split. Shipped now: k = {}, offset = {}, trial = {DEFAULT_TRIAL}.\n", BEFORE.k, BEFORE.offset, Knobs::SHIPPED.k, Knobs::SHIPPED.offset);
    println!("| precision | calls | mode | before, tune | before, test | chosen, tune | chosen, test |\n|---|---|---|---|---|---|---|");
    for p in PRECISIONS {
        for calls in CALLS {
            for tr in [1, BEFORE_TRIAL] {
                if tr > 1 && calls < CALLS_INF {
                    continue;
                }
                let su = |knobs, trial, budget, scope| Setup {
                    knobs,
                    trial,
                    budget,
                    ..Setup::model(p, calls, scope)
                };
                let ctr = if tr == 1 { 1 } else { trial };
                println!(
                    "| {p} | {} | {} | {} | {} | {} | {} |",
                    calls_label(calls),
                    if tr == 1 {
                        "model".to_string()
                    } else {
                        format!("trial={tr} / {ctr}")
                    },
                    cell(m, &su(BEFORE, tr, TRIAL_BUDGET, Scope::Tune), |_| true),
                    cell(m, &su(BEFORE, tr, TRIAL_BUDGET, Scope::Test), |_| true),
                    cell(m, &su(best, ctr, chosen_budget, Scope::Tune), |_| true),
                    cell(m, &su(best, ctr, chosen_budget, Scope::Test), |_| true),
                );
            }
        }
    }
    println!();

    // ---- cut points
    let dir = results_dir();
    println!("## cb-spmv: the owner-epilogue cut (`cb_spmv::GRID_MAX_NNZ`)\n");
    let cb = cut_data(
        &[
            dir.join("2026-11-22c/owner/shared-owner-everywhere.csv.gz"),
            dir.join("2026-11-22c/owner/mid-owner-everywhere.csv.gz"),
        ],
        "cb-spmv",
        "cb-spmv[epilogue=atomic]",
    );
    let grid = [
        0,
        10_000,
        20_000,
        50_000,
        100_000,
        150_000,
        200_000,
        300_000,
        500_000,
        1_000_000,
        2_000_000,
        usize::MAX,
    ];
    if !cb.is_empty() {
        choose_cut(
            "cb-spmv, owner (small side) against atomic (large side)",
            &cb,
            cb_spmv::GRID_MAX_NNZ,
            &grid,
        );
    }
    println!("## fastload: the one-launch cut (`fastload::GRID_MAX_NNZ`)\n");
    let fl = cut_data(
        &[
            dir.join("2026-11-22b/explore5/shared"),
            dir.join("2026-11-22b/explore5/large"),
        ],
        "fastload",
        "fastload[fuse=two]",
    );
    // `fastload` ran the grid mode up to 2M nonzeros there, so cuts above 2M mean 2M
    let grid: Vec<usize> = grid.iter().copied().filter(|&c| c <= 2_000_000).collect();
    if !fl.is_empty() {
        choose_cut(
            "fastload, grid (small side) against two launches (large side)",
            &fl,
            fastload::GRID_MAX_NNZ,
            &grid,
        );
    }
    spmm_defaults(&dir);
}
