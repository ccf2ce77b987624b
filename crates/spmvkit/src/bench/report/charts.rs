//! Which plots a report draws for one precision (performance profile, speedup against nnz and
//! against row-length variation, preprocessing time, time against the limit) and the data of
//! each; [`crate::bench::plots`] renders them.

use super::compare::{
    best_method, find_result, method_display, method_time_us, only_repeats, performance_profile,
    result_time_us, speedup, tau_grid, time_table,
};
use super::load::{cpu_only, MergedRuns};
use super::ReportOptions;
use crate::bench::plots::{auto_range, Chart, Series, Style};
use crate::gpu::TimingMode;
use crate::scalar::Precision;

/// The plot set of one precision: `(file stem, chart)`, and notes on plots left out.
pub fn charts_for(
    merged: &MergedRuns,
    opts: &ReportOptions,
    p: Precision,
) -> (Vec<(String, Chart)>, Vec<String>) {
    let kind = TimingMode::Stream;
    let cpu = cpu_only(merged);
    let timing = if cpu {
        "CPU wall clock (no GPU)"
    } else {
        "stream timing"
    };
    let on_cpu = if cpu { ", CPU (no GPU)" } else { "" };
    let mut charts = Vec::new();
    let mut notes = Vec::new();
    let matrices = merged.matrix_refs();
    // Only methods with at least one correct timed result are drawn: a method that never ran
    // would be a flat line at zero. Colours and markers follow the order of the methods that
    // ran in any precision, so a method looks the same in every plot.
    let ran = |me: &str, q: Precision| {
        matrices
            .iter()
            .any(|m| method_time_us(&m.results, me, q, kind).is_some())
    };
    // On the CPU an `auto` entry that only repeated listed methods is left out too (the summary
    // says so): it would split the profile's matrices with the method it ran.
    let methods: Vec<String> = merged
        .methods(p)
        .into_iter()
        .filter(|me| ran(me, p) && !(cpu && only_repeats(&matrices, p, me)))
        .collect();
    let every: Vec<String> = merged
        .all_methods()
        .into_iter()
        .filter(|me| merged.precisions().into_iter().any(|q| ran(me, q)))
        .collect();
    let style_of = |me: &str| every.iter().position(|x| x == me).unwrap_or(0);
    let label_of = |me: &str| method_display(&matrices, p, me);
    let series_of = |me: &str, points: Vec<(f64, f64)>| Series {
        label: label_of(me),
        style: style_of(me),
        points,
    };
    let any_ok = matrices
        .iter()
        .any(|m| best_method(&m.results, p, kind).is_some());
    if !any_ok {
        notes.push(format!(
            "{p}: no plots, no method ran correctly in this precision"
        ));
        return (charts, notes);
    }

    // Performance profile.
    let taus = tau_grid(300);
    let times = time_table(&matrices, &methods, p, kind);
    let profile = performance_profile(&times, &taus);
    let n_profiled = times
        .iter()
        .filter(|row| row.iter().any(Option::is_some))
        .count();
    charts.push((
        format!("profile-{p}"),
        Chart {
            title: format!("Performance profile, {p}, {timing} ({n_profiled} matrices)"),
            x_label: "τ (time ≤ τ × fastest method's time)".into(),
            y_label: "fraction of matrices".into(),
            x_log: false,
            y_log: false,
            x_range: (1.0, 4.0),
            y_range: (0.0, 1.04),
            style: Style::Lines,
            series: methods
                .iter()
                .zip(&profile)
                .map(|(me, fr)| {
                    series_of(me, taus.iter().copied().zip(fr.iter().copied()).collect())
                })
                .collect(),
            hline: None,
            diagonal: None,
        },
    ));

    // Speedup over the first baseline against nnz and against row-length variation.
    // On the CPU the GPU baseline (cuSPARSE) never runs: the first baseline that ran stands in.
    let base = if cpu {
        opts.baselines.iter().find(|b| {
            matrices
                .iter()
                .any(|m| b.time_us(&m.results, p, kind).is_some())
        })
    } else {
        opts.baselines.first()
    };
    if let Some(base) = base {
        let mut by_nnz = Vec::new();
        let mut by_var = Vec::new();
        for me in methods.iter().filter(|me| !base.is_member(me)) {
            let mut a = Vec::new();
            let mut v = Vec::new();
            for m in &matrices {
                let b = base.time_us(&m.results, p, kind);
                if let Some(x) = speedup(b, method_time_us(&m.results, me, p, kind)) {
                    a.push((m.stats.nnz as f64, x));
                    v.push((m.stats.row_variation, x));
                }
            }
            if !a.is_empty() {
                by_nnz.push(series_of(me, a));
                by_var.push(series_of(me, v));
            }
        }
        if by_nnz.is_empty() {
            notes.push(format!(
                "{p}: no speedup plots, no matrix has both a {} result and another method's",
                base.name
            ));
        } else {
            let ys = || by_nnz.iter().flat_map(|s| s.points.iter().map(|q| q.1));
            let y_hi = ys().fold(1.0f64, f64::max);
            let y_range = (0.0, (y_hi * 1.08).max(1.25));
            let x_range = auto_range(
                by_nnz.iter().flat_map(|s| s.points.iter().map(|q| q.0)),
                true,
                (1.0, 1e6),
            );
            let y_label = format!("speedup over {} (t_{} / t_method)", base.name, base.name);
            charts.push((
                format!("speedup-nnz-{p}"),
                Chart {
                    title: format!("Speedup over {} against nnz, {p}, {timing}", base.name),
                    x_label: "nonzeros (log scale)".into(),
                    y_label: y_label.clone(),
                    x_log: true,
                    y_log: false,
                    x_range,
                    y_range,
                    style: Style::Points,
                    series: by_nnz,
                    hline: Some((1.0, format!("equal to {}", base.name))),
                    diagonal: None,
                },
            ));
            let xs: Vec<f64> = by_var
                .iter()
                .flat_map(|s| s.points.iter().map(|q| q.0))
                .collect();
            let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = xs.iter().copied().fold(0.0f64, f64::max);
            let x_log = lo > 0.0 && hi / lo > 30.0;
            let x_range = if x_log {
                auto_range(xs.iter().copied(), true, (0.01, 10.0))
            } else {
                (0.0, (hi * 1.06).max(0.1))
            };
            charts.push((
                format!("speedup-variation-{p}"),
                Chart {
                    title: format!(
                        "Speedup over {} against row-length variation, {p}{on_cpu}",
                        base.name
                    ),
                    x_label: format!(
                        "row-length variation (std / mean of row lengths{})",
                        if x_log { ", log scale" } else { "" }
                    ),
                    y_label,
                    x_log,
                    y_log: false,
                    x_range,
                    y_range,
                    style: Style::Points,
                    series: by_var,
                    hline: Some((1.0, format!("equal to {}", base.name))),
                    diagonal: None,
                },
            ));
        }
    }

    // Preprocessing time against nnz (log-log); a zero time is drawn at the floor.
    const PREP_FLOOR_MS: f64 = 1e-3;
    let prep: Vec<Series> = methods
        .iter()
        .filter_map(|me| {
            let points: Vec<(f64, f64)> = matrices
                .iter()
                .filter_map(|m| {
                    let r = find_result(&m.results, me, p)?;
                    result_time_us(r, kind)?;
                    let rec = r.record.as_ref()?;
                    (m.stats.nnz > 0).then(|| (m.stats.nnz as f64, rec.prep_ms.max(PREP_FLOOR_MS)))
                })
                .collect();
            (!points.is_empty()).then(|| series_of(me, points))
        })
        .collect();
    if !prep.is_empty() {
        let x_range = auto_range(
            prep.iter().flat_map(|s| s.points.iter().map(|q| q.0)),
            true,
            (1.0, 1e6),
        );
        let y_range = auto_range(
            prep.iter().flat_map(|s| s.points.iter().map(|q| q.1)),
            true,
            (1e-3, 1e3),
        );
        charts.push((
            format!("prep-nnz-{p}"),
            Chart {
                title: format!("Preprocessing time against nnz, {p}{on_cpu}"),
                x_label: "nonzeros (log scale)".into(),
                y_label: "host preprocessing time, ms (log scale; 0 drawn at 0.001)".into(),
                x_log: true,
                y_log: true,
                x_range,
                y_range,
                style: Style::Points,
                series: prep,
                hline: None,
                diagonal: None,
            },
        ));
    }

    // Time against the limit (GPU runs with a probe).
    if !cpu {
        if let Some(chart) = crate::bench::limits::chart(merged, p, &methods, &series_of) {
            charts.push((format!("limit-{p}"), chart));
        }
    }
    (charts, notes)
}
