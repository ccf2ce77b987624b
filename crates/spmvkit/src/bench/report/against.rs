//! A run set against an earlier one on the same inputs (issue #20: a refactor shows that behaviour
//! is unchanged): for every (matrix, method, precision) measured correctly in both, whether y is
//! the same bit for bit (the records' [`crate::hash::y_digest`]), and the new time over the old,
//! stream and CUDA graph. `spmv report NEW --against OLD` prints the tables.
//!
//! Per method: the matrices compared; for a bitwise-deterministic method how many gave the same
//! y (a digest missing on either side counts as not compared), for any other method how many the
//! oracle accepted in the new run; the geometric mean and the worst of new/old time.

use std::collections::HashMap;
use std::fmt::Write;

use super::MergedRuns;
use crate::bench::{MethodResult, Status};
use crate::scalar::Precision;
use crate::stats::geomean;

/// One (matrix, method, precision) measured correctly in both run sets.
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    pub matrix: String,
    pub method: String,
    pub precision: Precision,
    /// The method is bitwise deterministic (in the new run's record).
    pub deterministic: bool,
    /// Both records hold a digest of y and they match (None: a digest is missing).
    pub same_y: Option<bool>,
    /// New stream time over old.
    pub stream_ratio: f64,
    /// New graph time over old, where both have one.
    pub graph_ratio: Option<f64>,
}

/// The results of `runs` by (matrix, method, precision).
fn index(runs: &MergedRuns) -> HashMap<(&str, &str, Precision), &MethodResult> {
    runs.matrices
        .iter()
        .flat_map(|m| {
            m.matrix
                .results
                .iter()
                .map(move |r| ((m.matrix.name.as_str(), r.method.as_str(), r.precision), r))
        })
        .collect()
}

fn ok(r: &MethodResult) -> Option<&crate::bench::RunRecord> {
    (r.status == Status::Ok)
        .then_some(r.record.as_ref())
        .flatten()
}

/// The pairs of `new` and `old`, in `new`'s order; results that failed or disagreed with the
/// oracle in either run are left out (they are counted by [`against_tables`]).
pub fn pairs(old: &MergedRuns, new: &MergedRuns) -> Vec<Pair> {
    let before = index(old);
    let mut out = Vec::new();
    for m in &new.matrices {
        for r in &m.matrix.results {
            let Some(o) = before.get(&(m.matrix.name.as_str(), r.method.as_str(), r.precision))
            else {
                continue;
            };
            let (Some(n), Some(o)) = (ok(r), ok(o)) else {
                continue;
            };
            let same_y = match (&n.y_digest, &o.y_digest) {
                (Some(a), Some(b)) => Some(a == b),
                _ => None,
            };
            let graph_ratio = match (&n.graph_time, &o.graph_time) {
                (Some(a), Some(b)) if b.median_us > 0.0 => Some(a.median_us / b.median_us),
                _ => None,
            };
            out.push(Pair {
                matrix: m.matrix.name.clone(),
                method: r.method.clone(),
                precision: r.precision,
                deterministic: n.deterministic,
                same_y,
                stream_ratio: n.time.median_us / o.time.median_us,
                graph_ratio,
            });
        }
    }
    out
}

/// Results measured in both run sets that were not `ok` in one of them: (matrix, method,
/// precision, old status, new status).
fn not_ok(old: &MergedRuns, new: &MergedRuns) -> Vec<(String, String, Precision, Status, Status)> {
    let before = index(old);
    let mut out = Vec::new();
    for m in &new.matrices {
        for r in &m.matrix.results {
            let key = (m.matrix.name.as_str(), r.method.as_str(), r.precision);
            if let Some(o) = before.get(&key).map(|o| o.status) {
                if o != Status::Ok || r.status != Status::Ok {
                    out.push((
                        m.matrix.name.clone(),
                        r.method.clone(),
                        r.precision,
                        o,
                        r.status,
                    ));
                }
            }
        }
    }
    out
}

fn ratio_cell(v: &[f64]) -> String {
    match geomean(v) {
        Some(g) => {
            let worst = v.iter().copied().fold(f64::MIN, f64::max);
            format!("{g:.3} (worst {worst:.3})")
        }
        None => "–".into(),
    }
}

/// The markdown tables: per precision and method, the pairs, y bit for bit (or the oracle),
/// and new/old time; then a line for all methods, and the results not `ok` in one of the runs.
pub fn against_tables(old: &MergedRuns, new: &MergedRuns) -> String {
    let pairs = pairs(old, new);
    let mut s = String::new();
    s.push_str(
        "| precision | method | matrices | y bit for bit (deterministic) / oracle (other) | \
         new/old stream, geomean | new/old graph, geomean |\n|---|---|---|---|---|---|\n",
    );
    let mut keys: Vec<(Precision, &str)> = Vec::new();
    for p in &pairs {
        if !keys.contains(&(p.precision, p.method.as_str())) {
            keys.push((p.precision, p.method.as_str()));
        }
    }
    keys.sort();
    let row = |s: &mut String, prec: &str, method: &str, ps: &[&Pair]| {
        let det: Vec<&&Pair> = ps.iter().filter(|p| p.deterministic).collect();
        let same = det.iter().filter(|p| p.same_y == Some(true)).count();
        let bits = if det.is_empty() {
            format!("oracle {0} / {0}", ps.len())
        } else if det.len() == ps.len() {
            format!("{same} / {}", det.len())
        } else {
            format!(
                "{same} / {} (+ oracle {} / {})",
                det.len(),
                ps.len() - det.len(),
                ps.len() - det.len()
            )
        };
        let stream: Vec<f64> = ps.iter().map(|p| p.stream_ratio).collect();
        let graph: Vec<f64> = ps.iter().filter_map(|p| p.graph_ratio).collect();
        let _ = writeln!(
            s,
            "| {prec} | {method} | {} | {bits} | {} | {} |",
            ps.len(),
            ratio_cell(&stream),
            ratio_cell(&graph)
        );
    };
    for (prec, method) in &keys {
        let ps: Vec<&Pair> = pairs
            .iter()
            .filter(|p| p.precision == *prec && p.method == *method)
            .collect();
        row(&mut s, prec.name(), &format!("`{method}`"), &ps);
    }
    let all: Vec<&Pair> = pairs.iter().collect();
    row(&mut s, "all", "**all methods**", &all);
    let differ: Vec<&Pair> = pairs
        .iter()
        .filter(|p| p.deterministic && p.same_y != Some(true))
        .collect();
    if differ.is_empty() {
        s.push_str("\nEvery deterministic result is the same bit for bit.\n");
    } else {
        s.push_str("\nDeterministic results whose y differs (or was not digested):\n\n");
        for p in differ {
            let _ = writeln!(
                s,
                "- {} `{}` {}: {}",
                p.matrix,
                p.method,
                p.precision,
                match p.same_y {
                    Some(false) => "different y",
                    _ => "no digest",
                }
            );
        }
    }
    let bad = not_ok(old, new);
    if !bad.is_empty() {
        s.push_str("\nNot ok in one of the runs (old → new):\n\n");
        for (m, method, p, o, n) in bad {
            let _ = writeln!(s, "- {m} `{method}` {p}: {} → {}", o.name(), n.name());
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::report::merge_runs;
    use crate::bench::report::tests::{machine, matrix, ok, F64};
    use crate::bench::BenchRun;

    fn one(us: f64, digest: &str) -> MergedRuns {
        let mut r = ok("csr-scalar", F64, 1000, us, 1.0);
        if let Some(rec) = r.record.as_mut() {
            rec.y_digest = Some(digest.into());
        }
        merge_runs(&[BenchRun {
            machine: machine(),
            suite: None,
            matrices: vec![matrix("m1", 1000, 0.5, true, vec![r])],
            skipped: Vec::new(),
        }])
    }

    #[test]
    fn a_changed_digest_or_time_shows() {
        let old = one(10.0, "aa");
        let p = pairs(&old, &one(11.0, "aa"));
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].same_y, Some(true));
        assert!((p[0].stream_ratio - 1.1).abs() < 1e-12);
        assert!(against_tables(&old, &one(11.0, "aa"))
            .contains("Every deterministic result is the same bit for bit"));
        let new = one(10.0, "ab");
        assert_eq!(pairs(&old, &new)[0].same_y, Some(false));
        assert!(against_tables(&old, &new).contains("m1 `csr-scalar` f64: different y"));
    }
}
