//! Held-out evaluation of `auto --auto=model` (issue #11) on the committed H200 results: each
//! training matrix is predicted by the model fitted on all the OTHER matrices (leave one out),
//! and the chosen method's measured time is compared with the fastest measured method on that
//! matrix (the oracle) and with cuSPARSE. Prints markdown; needs no GPU.
//!
//! Run: `cargo bench -p spmvkit --bench auto_eval` (`SPMVKIT_AUTO_K` = neighbours, default 5, the
//! `auto` default).

use spmvkit::methods::auto::model::{Model, Sample};
use spmvkit::methods::find;
use spmvkit::scalar::Precision;

/// Which training rows a line of the table covers.
type Subset<'a> = dyn Fn(&Sample) -> bool + 'a;

struct Row {
    n: usize,
    gm_over_best: f64,
    within10: usize,
    gm_over_cusparse: f64,
    picks: std::collections::BTreeMap<String, usize>,
}

fn evaluate(
    m: &Model,
    precision: Precision,
    subset: &Subset<'_>,
    calls: f64,
    det: bool,
    k: usize,
) -> Row {
    let base: Vec<bool> = m
        .methods
        .iter()
        .map(|x| find(x).is_ok_and(|f| !det || f.info().deterministic))
        .collect();
    let cus = m.methods.iter().position(|x| x == "cusparse");
    let (mut lb, mut lc, mut n, mut within) = (0.0, 0.0, 0usize, 0usize);
    let mut picks = std::collections::BTreeMap::new();
    for s in m
        .samples
        .iter()
        .filter(|s| s.precision == precision && subset(s))
    {
        // cost per call with the preprocessing spread over `calls`
        let cost = |i: usize| s.times[i].map(|(us, prep)| us + prep * 1e3 / calls);
        // only methods measured on this matrix can be scored
        let allowed: Vec<bool> = base
            .iter()
            .enumerate()
            .map(|(i, b)| *b && cost(i).is_some())
            .collect();
        let Some(best) = (0..m.methods.len())
            .filter(|i| allowed[*i])
            .filter_map(cost)
            .min_by(f64::total_cmp)
        else {
            continue;
        };
        let Some((pick, _)) = m.choose(&s.features, s.nnz, precision, &allowed, calls, k, |o| {
            o.matrix != s.matrix
        }) else {
            continue;
        };
        let Some(t) = cost(pick) else { continue };
        n += 1;
        lb += (t / best).ln();
        if t <= 1.1 * best {
            within += 1;
        }
        if let Some(c) = cus.and_then(|c| s.times[c].map(|(us, prep)| us + prep * 1e3 / calls)) {
            lc += (c / t).ln();
        }
        *picks.entry(m.methods[pick].clone()).or_insert(0) += 1;
    }
    Row {
        n,
        gm_over_best: (lb / n.max(1) as f64).exp(),
        within10: within,
        gm_over_cusparse: (lc / n.max(1) as f64).exp(),
        picks,
    }
}

fn main() {
    let m = match Model::shipped() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("auto_eval: {e}");
            std::process::exit(1);
        }
    };
    let k: usize = std::env::var("SPMVKIT_AUTO_K")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    println!(
        "Leave-one-out over {} (matrix, precision) rows of {} methods; k = {k}.\n",
        m.samples.len(),
        m.methods.len()
    );
    println!("| precision | matrices | calls | methods | n | auto / oracle-best (geomean) | within 10 % of best | auto over cusparse (geomean) | picks |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let fits = |s: &Sample| s.features.0[6] > 0.0;
    let subsets: [(&str, &Subset<'_>); 3] = [
        ("all", &|_| true),
        ("fit L2", &fits),
        ("larger than L2", &|s| !fits(s)),
    ];
    for precision in [Precision::F64, Precision::F32] {
        for (label, sub) in subsets.iter() {
            for calls in [1e12, 1000.0, 1.0] {
                for det in [false, true] {
                    let r = evaluate(m, precision, *sub, calls, det, k);
                    if r.n == 0 {
                        continue;
                    }
                    let mut picks: Vec<_> = r.picks.iter().collect();
                    picks.sort_by(|a, b| b.1.cmp(a.1));
                    let picks: Vec<String> = picks
                        .iter()
                        .take(4)
                        .map(|(k, v)| format!("{k} {v}"))
                        .collect();
                    println!(
                        "| {precision} | {label} | {} | {} | {} | {:.3}× | {} / {} ({:.0} %) | {:.2}× | {} |",
                        if calls > 1e11 { "∞".to_string() } else { format!("{calls}") },
                        if det { "deterministic" } else { "all" },
                        r.n,
                        r.gm_over_best,
                        r.within10,
                        r.n,
                        100.0 * r.within10 as f64 / r.n as f64,
                        r.gm_over_cusparse,
                        picks.join(", ")
                    );
                }
            }
        }
    }
}
