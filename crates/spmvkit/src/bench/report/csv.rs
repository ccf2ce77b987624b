//! The text of `results.csv`: one row per (matrix, method, precision) with the matrix
//! statistics, every record field and the derived columns (speedups, break-even calls, share of
//! copy bandwidth).

use super::compare::{
    break_even_calls, copy_bandwidth_pct, effective_gbs, result_time_us, speedup,
};
use super::load::MergedRuns;
use super::ReportOptions;
use crate::gpu::TimingMode;

/// One CSV field, quoted when needed (RFC 4180).
fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

fn opt_num(x: Option<f64>) -> String {
    x.map_or_else(String::new, |v| format!("{v}"))
}

/// `key=value` pairs joined by `;`.
fn join_pairs<V: std::fmt::Display>(pairs: &[(String, V)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(";")
}

fn join_samples(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The matrix-statistics columns of `results.csv`, in order (the auto table's CSV reader takes
/// them by these names).
pub const STATS_COLUMNS: [&str; 19] = [
    "nrows",
    "ncols",
    "nnz",
    "density",
    "empty_rows",
    "empty_cols",
    "row_len_min",
    "row_len_max",
    "row_len_mean",
    "row_len_std",
    "row_variation",
    "col_len_min",
    "col_len_max",
    "col_len_mean",
    "col_len_std",
    "lower_bandwidth",
    "upper_bandwidth",
    "bandwidth",
    "csr_bytes",
];

/// The text of `results.csv`: one row per (matrix, method, precision) with the matrix
/// statistics, every record field (empty when the method did not run) and derived columns.
pub fn results_csv(merged: &MergedRuns, opts: &ReportOptions) -> String {
    let mut header: Vec<String> = ["matrix", "source", "fits_l2"]
        .into_iter()
        .chain(STATS_COLUMNS)
        .chain([
            "method",
            "precision",
            "status",
            "error",
            "run",
            "run_started",
            "run_commit",
            "backend",
            "device",
            "deterministic",
            "prep_ms",
            "upload_ms",
            "prep_stages_ms",
            "time_median_us",
            "time_min_us",
            "time_max_us",
            "time_samples_us",
            "graph_median_us",
            "graph_min_us",
            "graph_max_us",
            "graph_samples_us",
            "gflops",
            "gbs",
            "bytes_model",
            "max_rel_err",
            "verified",
            "footprint_bytes",
            "notes",
            "fallback_note",
            "copy_bw_pct",
        ])
        .map(str::to_string)
        .collect();
    for b in &opts.baselines {
        header.push(format!("speedup_vs_{}", b.name));
        header.push(format!("graph_speedup_vs_{}", b.name));
        header.push(format!("break_even_calls_vs_{}", b.name));
    }
    let mut out = header.join(",");
    out.push('\n');
    for mm in &merged.matrices {
        let m = &mm.matrix;
        let st = &m.stats;
        let lead = [
            m.name.clone(),
            m.source.clone(),
            m.fits_l2.to_string(),
            st.nrows.to_string(),
            st.ncols.to_string(),
            st.nnz.to_string(),
            st.density.to_string(),
            st.empty_rows.to_string(),
            st.empty_cols.to_string(),
            st.row_len.min.to_string(),
            st.row_len.max.to_string(),
            st.row_len.mean.to_string(),
            st.row_len.std.to_string(),
            st.row_variation.to_string(),
            st.col_len.min.to_string(),
            st.col_len.max.to_string(),
            st.col_len.mean.to_string(),
            st.col_len.std.to_string(),
            st.lower_bandwidth.to_string(),
            st.upper_bandwidth.to_string(),
            st.bandwidth.to_string(),
            st.csr_bytes.to_string(),
        ];
        for (i, r) in m.results.iter().enumerate() {
            let mut row: Vec<String> = lead.to_vec();
            let run = mm.run_of.get(i).copied().unwrap_or(0);
            let machine = merged.runs.get(run).map(|(mi, _)| mi);
            row.extend([
                r.method.clone(),
                r.precision.to_string(),
                r.status.name().to_string(),
                r.error.clone().unwrap_or_default(),
                (run + 1).to_string(),
                machine.map(|mi| mi.started.clone()).unwrap_or_default(),
                machine.map(|mi| mi.commit.clone()).unwrap_or_default(),
            ]);
            match &r.record {
                Some(rec) => {
                    let g = rec.graph_time.as_ref();
                    row.extend([
                        rec.backend.to_string(),
                        rec.device.clone(),
                        rec.deterministic.to_string(),
                        rec.prep_ms.to_string(),
                        rec.upload_ms.to_string(),
                        join_pairs(&rec.prep_stages_ms),
                        rec.time.median_us.to_string(),
                        rec.time.min_us.to_string(),
                        rec.time.max_us.to_string(),
                        join_samples(&rec.time.samples_us),
                        opt_num(g.map(|g| g.median_us)),
                        opt_num(g.map(|g| g.min_us)),
                        opt_num(g.map(|g| g.max_us)),
                        g.map(|g| join_samples(&g.samples_us)).unwrap_or_default(),
                        rec.gflops.to_string(),
                        rec.gbs.to_string(),
                        rec.bytes_model.to_string(),
                        rec.max_rel_err.to_string(),
                        rec.verified.to_string(),
                        rec.footprint_bytes.to_string(),
                        join_pairs(&rec.notes),
                        rec.fallback_note.clone().unwrap_or_default(),
                        opt_num(effective_gbs(rec, TimingMode::Stream).and_then(|g| {
                            copy_bandwidth_pct(g, machine.and_then(|mi| mi.copy_bandwidth_gbs))
                        })),
                    ]);
                }
                None => row.extend(std::iter::repeat_n(String::new(), 23)),
            }
            let t = result_time_us(r, TimingMode::Stream);
            let tg = result_time_us(r, TimingMode::Graph);
            for b in &opts.baselines {
                let bt = b.time_us(&m.results, r.precision, TimingMode::Stream);
                let bg = b.time_us(&m.results, r.precision, TimingMode::Graph);
                let prep = r
                    .record
                    .as_ref()
                    .map_or(0.0, |rec| rec.prep_ms + rec.upload_ms);
                let be = match (bt, t) {
                    (Some(bt), Some(t)) => break_even_calls(prep, bt, t),
                    _ => None,
                };
                row.push(opt_num(speedup(bt, t)));
                row.push(opt_num(speedup(bg, tg)));
                row.push(opt_num(be));
            }
            out.push_str(
                &row.iter()
                    .map(|f| csv_field(f))
                    .collect::<Vec<_>>()
                    .join(","),
            );
            out.push('\n');
        }
    }
    out
}
