//! The text of `summary.md`: the machine, the matrices, per precision the speedup tables, the
//! performance profile and the best method per matrix (or, when every result ran on the CPU, the
//! fastest method with ties), then Eq. 2, the speedup by mean row length, `auto`'s evaluation,
//! the papers' claims, skipped inputs and failures.

use std::fmt::Write as _;

use super::claims::{eq2_rows, ClaimMeasure, Eq2Row, PaperClaim, PAPER_CLAIMS};
use super::compare::{
    auto_choice, copy_bandwidth_pct, effective_gbs, fastest, find_result, is_auto, method_display,
    method_time_us, only_repeats, performance_profile, quartiles, ranking, result_time_us,
    same_code_ratios, speedup, speedup_summary, tie, time_table, Baseline, Ranked, SpeedupSummary,
    Subset, LARGE_NNZ,
};
use super::load::{cpu_only, MergedMatrix, MergedRuns};
use super::ReportOptions;
use crate::bench::{MatrixResult, Status, Timing};
use crate::gpu::TimingMode;
use crate::scalar::Precision;
use crate::stats::{geomean, mean, median};

fn fmt_speedup(x: Option<f64>) -> String {
    x.map_or_else(|| "–".into(), |x| format!("{x:.2}×"))
}

fn fmt_opt(x: Option<f64>, digits: usize) -> String {
    x.map_or_else(|| "–".into(), |x| format!("{x:.digits$}"))
}

fn fmt_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn fmt_count(n: usize) -> String {
    if n >= 1_000_000 {
        format!("{:.2}M", n as f64 / 1e6)
    } else if n >= 10_000 {
        format!("{:.1}k", n as f64 / 1e3)
    } else {
        n.to_string()
    }
}

/// Markdown table cell text: no newlines, pipes escaped.
pub(crate) fn cell(s: &str) -> String {
    s.replace('\r', "").replace('\n', " ").replace('|', "\\|")
}

/// The caveat that opens a report whose every result ran on the CPU.
pub const CPU_CAVEAT: &str = "**No GPU: these are CPU times.** Every method ran its CPU mirror, \
which walks the data layout its GPU kernel reads, and the GPU-only methods (cuSPARSE) did not \
run. The times compare the mirrors on this CPU; they say nothing about the GPU kernels, so the \
papers' GPU speedup claims are not set against them. Times are wall clock per call: the median \
of the samples with their interquartile range (IQR); where two ranges overlap, the difference is \
within the noise and the two are reported as a tie.";

/// The text of `summary.md`. `plots` lists `(precision, title, relative PNG path)`.
pub fn summary_markdown(
    merged: &MergedRuns,
    opts: &ReportOptions,
    plots: &[(Precision, String, String)],
    notes: &[String],
) -> String {
    let mut s = String::new();
    let matrices = merged.matrix_refs();
    let cpu = cpu_only(merged);
    let _ = writeln!(
        s,
        "# spmvkit benchmark report
"
    );
    if cpu {
        let _ = writeln!(s, "{CPU_CAVEAT}\n");
    }
    if merged.runs.len() > 1 {
        let _ = writeln!(
            s,
            "Merged from {} runs, in the order given: where runs overlap, the later run's result for a \
             (matrix, method, precision) replaces the earlier one.\n",
            merged.runs.len()
        );
    }
    machine_section(&mut s, merged, cpu);

    let l2 = matrices.iter().filter(|m| m.fits_l2).count();
    let large = matrices.iter().filter(|m| m.stats.nnz > LARGE_NNZ).count();
    let _ = writeln!(s, "## Matrices\n");
    if cpu {
        let _ = writeln!(
            s,
            "{} matrices, {} with nnz > 1M{}.\n",
            matrices.len(),
            large,
            if merged.skipped.is_empty() {
                String::new()
            } else {
                format!("; {} inputs skipped (listed below)", merged.skipped.len())
            }
        );
    } else {
        let _ = writeln!(
            s,
            "{} matrices: {} bandwidth-bound, {} whose working set fits in L2 (reported apart: they \
             measure launch overhead more than memory bandwidth), {} with nnz > 1M.\n",
            matrices.len(),
            matrices.len() - l2,
            l2,
            large
        );
    }

    for p in merged.precisions() {
        if cpu {
            cpu_precision_section(&mut s, merged, opts, p);
        } else {
            precision_section(&mut s, merged, opts, p);
        }
        let mine: Vec<_> = plots.iter().filter(|(q, _, _)| *q == p).collect();
        if !mine.is_empty() {
            let _ = writeln!(s, "### Plots ({p})\n");
            for (_, title, path) in mine {
                let svg = path.replace(".png", ".svg");
                let _ = writeln!(s, "![{title}]({path})  \n[{title} (SVG)]({svg})\n");
            }
        }
    }

    if !cpu {
        eq2_section(&mut s, merged);
        row_length_section(&mut s, merged);
        s.push_str(&crate::bench::auto::eval::report_section(merged));
        claims_section(&mut s, merged);
    }
    skipped_section(&mut s, merged);
    problems_section(&mut s, merged);
    if !notes.is_empty() {
        let _ = writeln!(s, "## Notes\n");
        for n in notes {
            let _ = writeln!(s, "- {n}");
        }
        s.push('\n');
    }
    s
}

fn skipped_section(s: &mut String, merged: &MergedRuns) {
    if merged.skipped.is_empty() {
        return;
    }
    let _ = writeln!(s, "## Skipped inputs\n");
    let _ = writeln!(s, "| input | reason |\n|---|---|");
    for (source, why) in &merged.skipped {
        let _ = writeln!(s, "| {} | {} |", cell(source), cell(why));
    }
    s.push('\n');
}

fn machine_section(s: &mut String, merged: &MergedRuns, cpu: bool) {
    let _ = writeln!(s, "## Machine\n");
    for (i, (m, suite)) in merged.runs.iter().enumerate() {
        if merged.runs.len() > 1 {
            let _ = writeln!(
                s,
                "### Run {} ({})\n",
                i + 1,
                if m.started.is_empty() {
                    "start time unknown"
                } else {
                    &m.started
                }
            );
        }
        let mut gpu = m.gpu.clone();
        let mut extra = Vec::new();
        if let Some(n) = m.sm_count {
            extra.push(format!("{n} SMs"));
        }
        if let Some(b) = m.gpu_memory_bytes {
            extra.push(format!("{} memory", fmt_bytes(b)));
        }
        if let Some(b) = m.l2_bytes {
            extra.push(format!("{} L2", fmt_bytes(b)));
        }
        if !extra.is_empty() {
            let _ = write!(gpu, " ({})", extra.join(", "));
        }
        if cpu && m.gpu == "none" {
            gpu = "none (every method ran on the CPU)".into();
        }
        let rows = [
            ("GPU", gpu),
            (
                "Driver / CUDA",
                format!(
                    "{} / {}",
                    m.driver_version.as_deref().unwrap_or("unknown"),
                    m.cuda_version.as_deref().unwrap_or("unknown")
                ),
            ),
            ("CPU threads", m.cpu_threads.to_string()),
            (
                "Copy bandwidth",
                m.copy_bandwidth_gbs.map_or_else(
                    || "not measured".into(),
                    |g| format!("{g:.1} GB/s (device-to-device, read + write)"),
                ),
            ),
            ("Limits probe", crate::bench::limits::probe_line(m)),
            (
                "Commit",
                if m.commit.is_empty() {
                    "unknown".into()
                } else {
                    m.commit.clone()
                },
            ),
            (
                "Command",
                if m.command.is_empty() {
                    "unknown".into()
                } else {
                    format!("`{}`", m.command.replace('`', "'"))
                },
            ),
            (
                "Started",
                if m.started.is_empty() {
                    "unknown".into()
                } else {
                    m.started.clone()
                },
            ),
            ("Suite", suite.clone().unwrap_or_else(|| "–".into())),
        ];
        let _ = writeln!(s, "| | |\n|---|---|");
        for (k, v) in rows {
            if cpu && matches!(k, "Driver / CUDA" | "Copy bandwidth" | "Limits probe") {
                continue;
            }
            let _ = writeln!(s, "| {k} | {} |", cell(&v));
        }
        s.push('\n');
    }
}

/// The heading of a precision's section and its count of results by status.
fn precision_header(s: &mut String, matrices: &[&MatrixResult], p: Precision) {
    let _ = writeln!(s, "## Precision {p}\n");
    let mut counts = [0usize; 4];
    for r in matrices
        .iter()
        .flat_map(|m| &m.results)
        .filter(|r| r.precision == p)
    {
        counts[r.status as usize] += 1;
    }
    let _ = writeln!(
        s,
        "Results: {} ok, {} wrong, {} unsupported, {} failed (listed under Failures).\n",
        counts[Status::Ok as usize],
        counts[Status::Wrong as usize],
        counts[Status::Unsupported as usize],
        counts[Status::Failed as usize]
    );
}

/// A performance-profile table: one row per method label, the share of matrices within each τ.
fn profile_table(
    s: &mut String,
    taus: &[f64],
    labels: impl Iterator<Item = String>,
    profile: &[Vec<f64>],
) {
    let _ = write!(s, "| method |");
    for t in taus {
        let _ = write!(s, " τ = {t} |");
    }
    let _ = writeln!(s, "\n|---|{}", "---|".repeat(taus.len()));
    for (label, fr) in labels.zip(profile) {
        let _ = write!(s, "| {} |", cell(&label));
        for f in fr {
            let _ = write!(s, " {:.0}% |", 100.0 * f);
        }
        s.push('\n');
    }
    s.push('\n');
}

fn precision_section(s: &mut String, merged: &MergedRuns, opts: &ReportOptions, p: Precision) {
    let matrices = merged.matrix_refs();
    let methods = merged.methods(p);
    precision_header(s, &matrices, p);

    let has_kind = |kind: TimingMode| {
        matrices.iter().any(|m| {
            m.results
                .iter()
                .any(|r| r.precision == p && result_time_us(r, kind).is_some())
        })
    };
    // CUDA-graph timing leads: on L2-resident matrices stream timing measures the host's launch
    // overhead more than the kernel.
    for kind in [TimingMode::Graph, TimingMode::Stream] {
        if !has_kind(kind) {
            continue;
        }
        for base in &opts.baselines {
            let present = matrices
                .iter()
                .any(|m| base.time_us(&m.results, p, kind).is_some());
            if !present {
                if kind == TimingMode::Stream {
                    let _ = writeln!(
                        s,
                        "No {} results in {p}: no speedups over it.\n",
                        base.describe()
                    );
                }
                continue;
            }
            let _ = writeln!(
                s,
                "### Speedup over {}, {} timing\n",
                base.describe(),
                kind.label()
            );
            let _ = writeln!(
                s,
                "Geometric mean of t_baseline / t_method over the matrices where both ran (n); wins / \
                 ties / losses over all matrices (a tie: the interquartile ranges of the samples \
                 overlap); break-even: median calls for the method's preprocessing to pay off where \
                 it is faster.\n"
            );
            if let Some(note) = host_baseline_note(&matrices, base, p) {
                let _ = writeln!(s, "{note}\n");
            }
            let _ = writeln!(
                s,
                "| method | all | nnz > 1M | bandwidth-bound | wins / ties / losses | method failed | no baseline | break-even calls |"
            );
            let _ = writeln!(s, "|---|---|---|---|---|---|---|---|");
            // A one-method baseline against itself says nothing; the members of a composite
            // baseline stay (which cuSPARSE algorithm wins is worth seeing).
            for me in methods
                .iter()
                .filter(|me| base.members.len() > 1 || !base.is_member(me))
            {
                let sums: Vec<SpeedupSummary> = Subset::ALL
                    .iter()
                    .map(|sub| speedup_summary(&matrices, me, base, p, kind, *sub))
                    .collect();
                let all = &sums[0];
                let be = if kind == TimingMode::Stream {
                    let never = all.compared - all.break_even.len();
                    match median(&all.break_even) {
                        Some(n) => format!("{} (never: {never})", fmt_count(n.ceil() as usize)),
                        None if all.compared > 0 => format!("never ({never})"),
                        None => "–".into(),
                    }
                } else {
                    "–".into()
                };
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} / {} / {} | {} | {} | {} |",
                    cell(&method_display(&matrices, p, me)),
                    speedup_cell(&sums[0]),
                    speedup_cell(&sums[1]),
                    speedup_cell(&sums[2]),
                    all.wins,
                    all.ties,
                    all.losses,
                    all.method_failed,
                    all.baseline_missing,
                    be
                );
            }
            s.push('\n');
        }
    }

    // Profile at a few τ.
    let kind = TimingMode::Stream;
    let taus = [1.0, 1.1, 1.25, 1.5, 2.0, 4.0];
    let times = time_table(&matrices, &methods, p, kind);
    let profile = performance_profile(&times, &taus);
    if times.iter().any(|row| row.iter().any(Option::is_some)) {
        let _ = writeln!(s, "### Performance profile, stream timing\n");
        let _ = writeln!(
            s,
            "Fraction of matrices on which the method is within τ of the fastest method.\n"
        );
        profile_table(
            s,
            &taus,
            methods.iter().map(|me| method_display(&matrices, p, me)),
            &profile,
        );
    }

    let bw: Vec<&MergedMatrix> = merged
        .matrices
        .iter()
        .filter(|m| !m.matrix.fits_l2)
        .collect();
    let l2: Vec<&MergedMatrix> = merged
        .matrices
        .iter()
        .filter(|m| m.matrix.fits_l2)
        .collect();
    let l2_kind = if has_kind(TimingMode::Graph) {
        TimingMode::Graph
    } else {
        TimingMode::Stream
    };
    for (title, set, kind) in [
        (
            "Best method per matrix: bandwidth-bound",
            bw,
            TimingMode::Stream,
        ),
        (
            "Best method per matrix: working set fits in L2, launch-bound",
            l2,
            l2_kind,
        ),
    ] {
        if set.is_empty() {
            continue;
        }
        best_table(s, merged, opts, p, title, &set, kind);
    }
    crate::bench::limits::section(s, merged, p);
}

/// `12.34 (12.10–12.90)`: the median and the interquartile range of a timing, µs.
/// The first cells of a per-matrix table row: name, rows, nnz and row variation.
fn matrix_lead(m: &MatrixResult) -> String {
    format!(
        "| {} | {} | {} | {:.2} |",
        cell(&m.name),
        fmt_count(m.stats.nrows),
        fmt_count(m.stats.nnz),
        m.stats.row_variation
    )
}

/// The row of a matrix without a fastest method in `p`: why (no method ran correctly, or none
/// was measured in `p`), then `blanks` empty cells.
fn no_winner_row(lead: &str, m: &MatrixResult, p: Precision, blanks: usize) -> String {
    let why = if m.results.iter().any(|r| r.precision == p) {
        "no method ran correctly"
    } else {
        "not measured"
    };
    format!("{lead} {why} |{}", " – |".repeat(blanks))
}

/// One row per item of a fastest-method table: the matrix's lead cells (`matrix` finds it in
/// the item), then `cells(item, first, ties)` for its fastest result in `p` by `kind` and the
/// ones tied with it; a matrix without one gets [`no_winner_row`] with `blanks` empty cells.
fn fastest_rows<I>(
    s: &mut String,
    items: &[I],
    matrix: impl Fn(&I) -> &MatrixResult,
    p: Precision,
    kind: TimingMode,
    blanks: usize,
    mut cells: impl FnMut(&I, &Ranked, &[&Ranked]) -> String,
) {
    for item in items {
        let m = matrix(item);
        let lead = matrix_lead(m);
        let ranked = ranking(&m.results, p, kind);
        let row = match fastest(&ranked) {
            Some((first, ties)) => format!("{lead} {}", cells(item, first, &ties)),
            None => no_winner_row(&lead, m, p, blanks),
        };
        let _ = writeln!(s, "{row}");
    }
}

fn fmt_spread(t: &Timing) -> String {
    let (q1, q3) = quartiles(t);
    format!("{:.2} ({q1:.2}–{q3:.2})", t.median_us)
}

/// The section of one precision when every method ran on the CPU: no GPU vocabulary (no
/// stream, graph or L2), `auto` shown as the method it ran, and differences within the spread
/// of the samples reported as ties.
fn cpu_precision_section(s: &mut String, merged: &MergedRuns, opts: &ReportOptions, p: Precision) {
    let kind = TimingMode::Stream;
    let matrices = merged.matrix_refs();
    let methods = merged.methods(p);
    precision_header(s, &matrices, p);
    let ran = |me: &str| {
        matrices
            .iter()
            .any(|m| method_time_us(&m.results, me, p, kind).is_some())
    };
    let (timed, never): (Vec<&String>, Vec<&String>) = methods.iter().partition(|me| ran(me));
    if !never.is_empty() {
        let names: Vec<String> = never.iter().map(|m| format!("`{m}`")).collect();
        let _ = writeln!(
            s,
            "Not run on this machine (no result on any matrix; the reasons are under Failures): {}.\n",
            names.join(", ")
        );
    }
    for me in timed.iter().filter(|me| is_auto(me)) {
        let mut chosen: Vec<(String, usize)> = Vec::new();
        for m in &matrices {
            let choice = find_result(&m.results, me, p)
                .and_then(|r| r.record.as_ref())
                .and_then(auto_choice);
            if let Some(c) = choice {
                match chosen.iter_mut().find(|(x, _)| x == c) {
                    Some((_, n)) => *n += 1,
                    None => chosen.push((c.to_string(), 1)),
                }
            }
        }
        if chosen.is_empty() {
            continue;
        }
        let list: Vec<String> = chosen
            .iter()
            .map(|(c, n)| format!("`{c}` on {n}"))
            .collect();
        let _ = writeln!(
            s,
            "`{me}` chose {} of {} matrices. It is shown with the method it ran (`{me} (→ csr)`), \
             and where that method has its own entry the two are one contender (`csr (= {me})`), \
             not two.\n",
            list.join(", "),
            matrices.len()
        );
    }
    let twice = same_code_ratios(&matrices, p, kind);
    if let (Some(mid), Some(max)) = (median(&twice), twice.iter().copied().max_by(f64::total_cmp)) {
        let _ = writeln!(
            s,
            "**Noise in this run:** `auto` and the method it chose are the same code measured \
             twice; on {} matrices their medians differ by {:.2}× (median) and up to {:.2}×. \
             Differences between methods of that size are noise on this machine, whatever the \
             IQRs say.\n",
            twice.len(),
            mid,
            max
        );
    }

    // Fastest per matrix, with ties.
    let base = opts.baselines.iter().find(|b| {
        matrices
            .iter()
            .any(|m| b.time_us(&m.results, p, kind).is_some())
    });
    let _ = writeln!(s, "### Fastest method per matrix ({p}, wall clock)\n");
    let _ = writeln!(
        s,
        "µs per call: the median of the samples (IQR in brackets). \"tied\" lists the methods whose \
         IQR overlaps the fastest one's: on this run they cannot be told apart.\n"
    );
    let base_col = base.map_or_else(String::new, |b| format!(" vs {} |", b.name));
    let _ = writeln!(
        s,
        "| matrix | rows | nnz | row variation | fastest | µs (IQR) | tied |{base_col}\n|---|---|---|---|---|---|---|{}",
        if base.is_some() { "---|" } else { "" }
    );
    let blanks = 2 + base.is_some() as usize;
    fastest_rows(
        s,
        &matrices,
        |m| m,
        p,
        kind,
        blanks,
        |m, first, ties| {
            let tied = if ties.is_empty() {
                "–".to_string()
            } else {
                ties.iter()
                    .map(|r| r.label.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let vs = base.map_or_else(String::new, |b| {
                let cell_text = if b.is_member(&first.method) {
                    "–".to_string()
                } else {
                    match b.timing(&m.results, p, kind) {
                        Some(bt) if tie(bt, &first.timing) => "tie".to_string(),
                        Some(bt) => {
                            fmt_speedup(speedup(Some(bt.median_us), Some(first.timing.median_us)))
                        }
                        None => "–".to_string(),
                    }
                };
                format!(" {cell_text} |")
            });
            format!(
                "{} | {} | {} |{vs}",
                cell(&first.label),
                fmt_spread(&first.timing),
                cell(&tied)
            )
        },
    );
    s.push('\n');

    // Speedups over the baseline, with ties.
    if let Some(base) = base {
        let _ = writeln!(s, "### Against {} ({p}, wall clock)\n", base.describe());
        let _ = writeln!(
            s,
            "Geometric mean of t_{0} / t_method over the matrices where both ran (n), and on how \
             many matrices the method was faster than {0}, tied with it (IQRs overlap) or slower.\n",
            base.name
        );
        let _ = writeln!(
            s,
            "| method | t_{} / t_method (n) | faster / tie / slower | failed |\n|---|---|---|---|",
            base.name
        );
        let mut left_out = Vec::new();
        for me in timed.iter().filter(|me| !base.is_member(me)) {
            if only_repeats(&matrices, p, me) {
                left_out.push(format!("`{}`", method_display(&matrices, p, me)));
                continue;
            }
            let x = speedup_summary(&matrices, me, base, p, kind, Subset::All);
            let _ = writeln!(
                s,
                "| {} | {} | {} / {} / {} | {} |",
                cell(&method_display(&matrices, p, me)),
                speedup_cell(&x),
                x.wins,
                x.ties,
                x.losses,
                x.method_failed
            );
        }
        s.push('\n');
        if !left_out.is_empty() {
            let _ = writeln!(
                s,
                "Left out: {} (on every matrix it ran a method listed here).\n",
                left_out.join(", ")
            );
        }
    }

    // Profile at a few τ, over the methods that ran, each contender once (an `auto` entry that
    // only repeated listed methods would split their matrices with them).
    let (repeats, profiled): (Vec<&String>, Vec<&String>) = timed
        .iter()
        .copied()
        .partition(|me| only_repeats(&matrices, p, me));
    let taus = [1.0, 1.1, 1.25, 1.5, 2.0, 4.0];
    let times = time_table(&matrices, &profiled, p, kind);
    if profiled.is_empty() {
        return;
    }
    let profile = performance_profile(&times, &taus);
    let _ = writeln!(s, "### Performance profile ({p}, wall clock)\n");
    let _ = writeln!(
        s,
        "Fraction of matrices on which the method's median is within τ of the fastest median \
         (medians only: ties are not resolved here).\n"
    );
    profile_table(
        s,
        &taus,
        profiled.iter().map(|me| method_display(&matrices, p, me)),
        &profile,
    );
    if !repeats.is_empty() {
        let names: Vec<String> = repeats
            .iter()
            .map(|me| format!("`{}`", method_display(&matrices, p, me)))
            .collect();
        let _ = writeln!(
            s,
            "Left out: {} (on every matrix it ran a method listed here).\n",
            names.join(", ")
        );
    }
}

/// A line for a speedup table whose baseline ran on the CPU while compared methods ran on the
/// GPU: the ratio then sets the host's wall clock against CUDA events.
fn host_baseline_note(matrices: &[&MatrixResult], base: &Baseline, p: Precision) -> Option<String> {
    let backend_of = |want_member: bool| {
        matrices
            .iter()
            .flat_map(|m| &m.results)
            .filter(|r| r.precision == p && base.is_member(&r.method) == want_member)
            .filter_map(|r| r.record.as_ref().map(|rec| rec.backend))
            .collect::<Vec<_>>()
    };
    let base_on_cpu = backend_of(true).contains(&crate::methods::Backend::Cpu);
    let others_on_gpu = backend_of(false).contains(&crate::methods::Backend::Gpu);
    (base_on_cpu && others_on_gpu).then(|| {
        format!(
            "`{}` ran on the CPU: these ratios set its host wall-clock time against the GPU \
             methods' CUDA-event times (a device-against-host comparison, not kernel against \
             kernel).",
            base.name
        )
    })
}

fn speedup_cell(x: &SpeedupSummary) -> String {
    if x.compared == 0 {
        "–".into()
    } else {
        format!("{} (n={})", fmt_speedup(x.geomean), x.compared)
    }
}

fn best_table(
    s: &mut String,
    merged: &MergedRuns,
    opts: &ReportOptions,
    p: Precision,
    title: &str,
    set: &[&MergedMatrix],
    kind: TimingMode,
) {
    let base = opts.baselines.first();
    let _ = writeln!(s, "### {title} ({p}, {} timing)\n", kind.label());
    let base_col = base.map_or_else(String::new, |b| format!(" vs {} |", b.name));
    let _ = writeln!(
        s,
        "| matrix | rows | nnz | row variation | best method | µs | GB/s | % copy BW |{base_col}"
    );
    let _ = writeln!(
        s,
        "|---|---|---|---|---|---|---|---|{}",
        if base.is_some() { "---|" } else { "" }
    );
    let blanks = 3 + base.is_some() as usize;
    fastest_rows(
        s,
        set,
        |mm| &mm.matrix,
        p,
        kind,
        blanks,
        |mm, first, ties| {
            let m = &mm.matrix;
            let (best, t) = (first.method.as_str(), first.timing.median_us);
            let label = if ties.is_empty() {
                first.label.clone()
            } else {
                let others: Vec<&str> = ties.iter().map(|r| r.label.as_str()).collect();
                format!("{} (tie: {})", first.label, others.join(", "))
            };
            let idx = m
                .results
                .iter()
                .rposition(|r| r.method == best && r.precision == p)
                .unwrap_or(0);
            let rec = m.results.get(idx).and_then(|r| r.record.as_ref());
            let gbs = rec.and_then(|r| effective_gbs(r, kind));
            let pct = gbs.and_then(|g| copy_bandwidth_pct(g, merged.copy_bandwidth(mm, idx)));
            let vs = base.map_or_else(String::new, |b| {
                format!(
                    " {} |",
                    fmt_speedup(speedup(b.time_us(&m.results, p, kind), Some(t)))
                )
            });
            format!(
                "{} | {t:.2} | {} | {} |{vs}",
                cell(&label),
                fmt_opt(gbs, 1),
                pct.map_or_else(|| "–".into(), |x| format!("{x:.0}%"))
            )
        },
    );
    s.push('\n');
}

fn eq2_section(s: &mut String, merged: &MergedRuns) {
    let matrices = merged.matrix_refs();
    let kind = TimingMode::Stream;
    let per_p: Vec<(Precision, Vec<Eq2Row>)> = merged
        .precisions()
        .into_iter()
        .map(|p| (p, eq2_rows(&matrices, p, kind)))
        .filter(|(_, rows)| !rows.is_empty())
        .collect();
    if per_p.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "## CSR-Full-Overlap against cuSPARSE with upload (Eq. 2)\n"
    );
    let _ = writeln!(
        s,
        "CSR-Overlap §5.5, Eq. 2: speedup = (t_cusparse_e2e − t_full) / t_partial + 1, the number \
         of CSR-Full-Overlap SpMVs done in the time of one cuSPARSE SpMV with its upload. \
         t_cusparse_e2e: `cusparse-e2e` (host-to-device copy of column indices and values from \
         pinned memory, then cuSPARSE SpMV); t_full: `csr-full-overlap` (the same copy overlapped \
         with its kernel); t_partial: `csr-overlap` (kernel only). Also the plain ratio \
         t_cusparse_e2e / t_full. Stream timing, µs per call, matrices where all three ran \
         correctly. The paper reports 2.03× on average, up to 2.67× (f32, A40, Fig. 9).\n"
    );
    for (p, rows) in per_p {
        let _ = writeln!(s, "### Eq. 2, {p}\n");
        let _ = writeln!(
            s,
            "| matrix | t_cusparse_e2e µs | t_full µs | t_partial µs | Eq. 2 | t_cusparse_e2e / t_full |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|---|");
        for r in &rows {
            let _ = writeln!(
                s,
                "| {} | {:.2} | {:.2} | {:.2} | {:.2}× | {:.2}× |",
                cell(&r.matrix),
                r.t_cusparse_e2e,
                r.t_full,
                r.t_partial,
                r.eq2,
                r.ratio
            );
        }
        let col = |f: fn(&Eq2Row) -> f64| rows.iter().map(f).collect::<Vec<f64>>();
        let cols = [
            col(|r| r.t_cusparse_e2e),
            col(|r| r.t_full),
            col(|r| r.t_partial),
        ];
        let (eq2, ratio) = (col(|r| r.eq2), col(|r| r.ratio));
        let n = rows.len();
        for (label, f) in [
            ("arithmetic mean", mean as fn(&[f64]) -> Option<f64>),
            ("geometric mean", geomean),
        ] {
            let _ = writeln!(
                s,
                "| **{label}** (n={n}) | {} | {} | {} | {} | {} |",
                fmt_opt(f(&cols[0]), 2),
                fmt_opt(f(&cols[1]), 2),
                fmt_opt(f(&cols[2]), 2),
                fmt_speedup(f(&eq2)),
                fmt_speedup(f(&ratio))
            );
        }
        s.push('\n');
        if eq2.iter().any(|x| *x <= 0.0) {
            let _ = writeln!(
                s,
                "Eq. 2 is ≤ 0 on some matrices (CSR-Full-Overlap slower than cuSPARSE with upload \
                 by more than one csr-overlap call), so its geometric mean is undefined (–).\n"
            );
        }
    }
}

fn row_length_section(s: &mut String, merged: &MergedRuns) {
    let matrices = merged.matrix_refs();
    let base = Baseline::cusparse();
    let mut body = String::new();
    for p in merged.precisions() {
        let methods: Vec<String> = merged
            .methods(p)
            .into_iter()
            .filter(|me| !base.is_member(me))
            .collect();
        for kind in [TimingMode::Stream, TimingMode::Graph] {
            let rows: Vec<(String, Vec<SpeedupSummary>)> = methods
                .iter()
                .map(|me| {
                    let sums = Subset::ROW_LENGTH
                        .iter()
                        .map(|sub| speedup_summary(&matrices, me, &base, p, kind, *sub))
                        .collect::<Vec<_>>();
                    (me.clone(), sums)
                })
                .filter(|(_, sums)| sums.iter().any(|x| x.compared > 0))
                .collect();
            if rows.is_empty() {
                continue;
            }
            let counts: Vec<usize> = Subset::ROW_LENGTH
                .iter()
                .map(|sub| matrices.iter().filter(|m| sub.contains(m)).count())
                .collect();
            let _ = writeln!(body, "### {p}, {} timing\n", kind.label());
            let _ = writeln!(
                body,
                "| method | < 16 ({} matrices) | 16–64 ({} matrices) | ≥ 64 ({} matrices) |\n|---|---|---|---|",
                counts[0], counts[1], counts[2]
            );
            for (me, sums) in rows {
                let _ = writeln!(
                    body,
                    "| {} | {} | {} | {} |",
                    cell(&me),
                    speedup_cell(&sums[0]),
                    speedup_cell(&sums[1]),
                    speedup_cell(&sums[2])
                );
            }
            body.push('\n');
        }
    }
    if body.is_empty() {
        return;
    }
    let _ = writeln!(s, "## Speedup over cusparse by mean row length\n");
    let _ = writeln!(
        s,
        "Geometric mean of t_cusparse / t_method ({}) over the matrices of each bucket of mean \
         row length nnz / rows where both ran (n). CSR-Overlap claims to be far ahead of cuSPARSE \
         below 16.{}\n",
        base.describe(),
        if body.contains("| cusparse-e2e |") || body.contains("| csr-full-overlap") {
            " The times of `cusparse-e2e` and `csr-full-overlap` include the host-to-device copy \
             of column indices and values: against plain cuSPARSE they say how much the copy \
             costs, and are compared fairly only by Eq. 2."
        } else {
            ""
        }
    );
    s.push_str(&body);
}

fn claims_section(s: &mut String, merged: &MergedRuns) {
    let matrices = merged.matrix_refs();
    let mut body = String::new();
    for p in merged.precisions() {
        let claims: Vec<&PaperClaim> = PAPER_CLAIMS
            .iter()
            .filter(|c| c.present(&matrices, p))
            .collect();
        if claims.is_empty() {
            continue;
        }
        let _ = writeln!(body, "### {p}\n");
        let _ = writeln!(
            body,
            "| method | over | claimed | measured geomean, stream (n) | max, stream | measured geomean, CUDA graph (n) | source |\n|---|---|---|---|---|---|---|"
        );
        for c in claims {
            let st = c.measure(&matrices, p, TimingMode::Stream);
            let gr = c.measure(&matrices, p, TimingMode::Graph);
            let with_n = |m: &ClaimMeasure| {
                if m.n == 0 {
                    "– (n=0)".to_string()
                } else {
                    format!("{} (n={})", fmt_speedup(m.geomean), m.n)
                }
            };
            let _ = writeln!(
                body,
                "| {} | {} | {} | {} | {} | {} | {} |",
                cell(c.seed),
                cell(c.peer),
                if c.factor.is_some() {
                    cell(c.claim)
                } else {
                    "–".into()
                },
                with_n(&st),
                fmt_speedup(st.max),
                with_n(&gr),
                cell(c.source)
            );
        }
        body.push('\n');
    }
    if body.is_empty() {
        return;
    }
    let _ = writeln!(s, "## Paper claims, measured in this run\n");
    let _ = writeln!(
        s,
        "Each claim: the paper's speedup of a method over a peer, next to the geometric mean and \
         the maximum of t_peer / t_method over the matrices where both ran correctly here (n). \
         `cusparse` is {}. Claims were measured on the papers' GPUs and matrix sets; claims whose \
         methods are not in this run are left out; \"–\" under claimed: the paper gives no \
         figure.\n",
        Baseline::cusparse().describe()
    );
    s.push_str(&body);
}

fn problems_section(s: &mut String, merged: &MergedRuns) {
    let _ = writeln!(s, "## Failures, wrong results and unsupported\n");
    // (precision, method, status, reason) -> matrices, in order of first appearance: a method
    // that fails the same way everywhere (a GPU-only method without a GPU) is one row.
    type Problem = (Precision, String, Status, String);
    let mut groups: Vec<(Problem, Vec<String>)> = Vec::new();
    for m in &merged.matrices {
        for r in &m.matrix.results {
            let issue = match r.status {
                Status::Ok if r.record.is_none() => {
                    Some("ok but no measurement recorded".to_string())
                }
                Status::Ok => None,
                _ => Some(
                    r.error
                        .clone()
                        .unwrap_or_else(|| "no reason recorded".into()),
                ),
            };
            if let Some(why) = issue {
                let key = (r.precision, r.method.clone(), r.status, why);
                match groups.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, ms)) => ms.push(m.matrix.name.clone()),
                    None => groups.push((key, vec![m.matrix.name.clone()])),
                }
            }
        }
    }
    if groups.is_empty() {
        let _ = writeln!(s, "None: every result ran and matched the oracle.\n");
        return;
    }
    let _ = writeln!(
        s,
        "| matrix | precision | method | status | reason |\n|---|---|---|---|---|"
    );
    let total = merged.matrices.len();
    for ((p, method, status, why), ms) in groups {
        let which = match ms.as_slice() {
            [one] => one.clone(),
            _ if ms.len() == total => format!("all {total} matrices"),
            _ => format!("{} matrices: {}", ms.len(), ms.join(", ")),
        };
        let _ = writeln!(
            s,
            "| {} | {p} | {} | {} | {} |",
            cell(&which),
            cell(&method),
            status.name(),
            cell(&why)
        );
    }
    s.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::report::tests::*;
    use crate::bench::report::{charts_for, merge_runs};
    use crate::methods::Backend;

    #[test]
    fn summary_has_eq2_row_length_and_claims_sections() {
        let merged = merge_runs(&[eq2_run()]);
        let md = summary_markdown(&merged, &ReportOptions::default(), &[], &[]);
        for want in [
            "## CSR-Full-Overlap against cuSPARSE with upload (Eq. 2)",
            "2.03× on average, up to 2.67× (f32, A40",
            "| a | 30.00 | 20.00 | 5.00 | 3.00× | 1.50× |",
            "| **arithmetic mean** (n=2) | 27.00 | 18.00 | 6.50 | 2.50× | 1.50× |",
            "| **geometric mean** (n=2) |",
            "## Speedup over cusparse by mean row length",
            "| method | < 16 (1 matrices) | 16–64 (1 matrices) | ≥ 64 (1 matrices) |",
            "| fastload | 2.00× (n=1) | 8.00× (n=1) | – |",
            // the variant is its own row
            "| csr-full-overlap[stream_num=4] | 10.00× (n=1) | – | – |",
            "## Paper claims, measured in this run",
            "| fastload | cusparse | 2.98× | 4.00× (n=2) | 8.00× | 4.00× (n=2) |",
        ] {
            assert!(md.contains(want), "missing {want:?} in\n{md}");
        }
        assert!(!md.contains("| teb | csr5 |"), "{md}");
        assert!(!md.contains("| hbp |"), "{md}");
        assert!(!md.contains("### f64\n"), "{md}");
        // Nothing to say without the methods: no sections at all.
        let bare = merge_runs(&[synthetic_run()]);
        let md = summary_markdown(&bare, &ReportOptions::default(), &[], &[]);
        assert!(!md.contains("Eq. 2"), "{md}");
        assert!(
            md.contains("## Speedup over cusparse by mean row length"),
            "{md}"
        );
        assert!(md.contains("| fastload | cusparse | 2.98× |"), "{md}");
        if let Ok(path) = std::env::var("SPMVKIT_REPORT_SAMPLE") {
            let merged = merge_runs(&[eq2_run()]);
            let sample = summary_markdown(&merged, &ReportOptions::default(), &[], &[]);
            std::fs::write(path, sample).unwrap();
        }
    }

    /// Graph timing leads, the L2-resident best-method table is on graph timing, and a CPU
    /// baseline set against GPU methods is labelled as host against device.
    #[test]
    fn summaries_lead_with_graph_timing_and_label_host_baselines() {
        let mut run = synthetic_run();
        for m in &mut run.matrices {
            let mut cpu = ok("csr", F64, m.stats.nnz, 500.0, 0.0);
            if let Some(rec) = cpu.record.as_mut() {
                rec.backend = Backend::Cpu;
                rec.graph_time = None;
            }
            m.results.push(cpu);
        }
        let md = summary_markdown(&merge_runs(&[run]), &ReportOptions::default(), &[], &[]);
        let graph = md.find("### Speedup over cusparse (best of").unwrap();
        assert!(md[graph..].starts_with("### Speedup over cusparse (best of cusparse-alg1, cusparse-alg2, cusparse), CUDA graph timing"), "{md}");
        assert!(md.contains("launch-bound (f64, CUDA graph timing)"), "{md}");
        assert!(md.contains("bandwidth-bound (f64, stream timing)"), "{md}");
        assert!(
            md.contains("`csr` ran on the CPU: these ratios set its host wall-clock time"),
            "{md}"
        );
        // an all-GPU run has no such label
        let md = summary_markdown(
            &merge_runs(&[synthetic_run()]),
            &ReportOptions::default(),
            &[],
            &[],
        );
        assert!(!md.contains("ran on the CPU: these ratios"), "{md}");
    }

    #[test]
    fn cpu_reports_leave_out_gpu_claims_and_report_ties() {
        let merged = merge_runs(&[cpu_run()]);
        assert!(cpu_only(&merged));
        let md = summary_markdown(&merged, &ReportOptions::default(), &[], &[]);
        assert!(md.contains(CPU_CAVEAT), "{md}");
        for absent in [
            "Paper claims",
            "stream",
            "CUDA graph",
            "L2",
            "bandwidth-bound",
            "Copy bandwidth",
        ] {
            assert!(!md.contains(absent), "{absent:?} in\n{md}");
        }
        for want in [
            "| a | 100 | 1000 | 0.10 | csr (= auto) | 10.20 (10.10–10.30) | csc | – |",
            "| b | 100 | 1000 | 0.10 | csc | 5.10 (5.05–5.15) | – | 2.00× |",
            "| csc | 1.40× (n=2) | 1 / 1 / 0 | 0 |",
            "Left out: `auto (→ csr)`",
            "**Noise in this run:**",
            "| all 2 matrices | f64 | cusparse-alg1 | unsupported | GPU unavailable |",
            "## Skipped inputs",
            "| broken.mtx | broken.mtx: line 3: bad value |",
        ] {
            assert!(md.contains(want), "missing {want:?} in\n{md}");
        }
        let (charts, _) = charts_for(&merged, &ReportOptions::default(), F64);
        for (_, c) in &charts {
            assert!(!c.title.contains("stream"), "{}", c.title);
            assert!(c.series.iter().all(|s| s.label != "cusparse-alg1"));
            assert!(c.series.iter().all(|s| !s.points.is_empty()));
        }
        // a GPU run keeps its claims and its vocabulary
        let gpu = merge_runs(&[synthetic_run()]);
        assert!(!cpu_only(&gpu));
        let md = summary_markdown(&gpu, &ReportOptions::default(), &[], &[]);
        assert!(!md.contains(CPU_CAVEAT));
        assert!(md.contains("Paper claims"));
    }
}
