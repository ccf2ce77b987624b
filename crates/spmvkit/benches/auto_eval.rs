//! Held-out evaluation of `auto` (issue #11) on the committed H200 results, in model mode and in
//! trial mode, simulated exactly: each training matrix is predicted by the model fitted on the
//! OTHER matrices, its near-duplicates left out as well (`model::family`: `bcspwr01`..`bcspwr10`
//! are held out together). The chosen method's measured time is compared with the fastest
//! measured method on that matrix (the oracle) and with cuSPARSE. Prints markdown; needs no GPU.
//!
//! - Model mode: the first of the model's ranking; it costs its time per call plus its
//!   preprocessing spread over `calls`.
//! - Trial mode (`trial=N`): the candidates `auto::trial_candidates` admits (the first N, within
//!   the trial budget); the pick is the one with the least measured time per call, and the trial
//!   costs the preprocessing of every candidate plus `auto::TRIAL_CALLS` calls of each, spread
//!   over `calls`. The simulation assumes the trial measures as the committed runs did.
//! - The oracle pays its own preprocessing over `calls`; `calls = ∞` ignores preprocessing.
//!
//! Run: `cargo bench -p spmvkit --bench auto_eval`. `SPMVKIT_AUTO_K` = neighbours (default 5, the
//! `auto` default); `SPMVKIT_AUTO_HOLDOUT=matrix` leaves out only the matrix itself.

use std::collections::BTreeMap;

use spmvkit::methods::auto::model::{family, Model, Sample};
use spmvkit::methods::auto::{allowed_methods, trial_candidates, TRIAL_CALLS};
use spmvkit::scalar::Precision;

/// Which training rows a line of the table covers.
type Subset<'a> = dyn Fn(&Sample) -> bool + 'a;

struct Row {
    n: usize,
    gm_over_best: f64,
    within10: usize,
    gm_over_cusparse: f64,
    picks: BTreeMap<String, usize>,
    /// Matrices where a trial ran (more than one candidate).
    trials: usize,
}

struct Setup {
    precision: Precision,
    calls: f64,
    det: bool,
    /// 1: model mode; N > 1: trial of up to N candidates.
    trial: usize,
    k: usize,
    by_family: bool,
}

fn evaluate(m: &Model, subset: &Subset<'_>, su: &Setup) -> Row {
    let base = allowed_methods(m, su.det);
    let cus = m.methods.iter().position(|x| x == "cusparse");
    let (mut lb, mut lc, mut n, mut within, mut trials) = (0.0, 0.0, 0usize, 0usize, 0usize);
    let mut picks = BTreeMap::new();
    for s in m
        .samples
        .iter()
        .filter(|s| s.precision == su.precision && subset(s))
    {
        // cost per call with the preprocessing spread over `calls`
        let cost = |i: usize| s.times[i].map(|(us, prep)| us + prep * 1e3 / su.calls);
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
        let fam = family(&s.matrix);
        let held_out =
            |o: &Sample| o.matrix != s.matrix && (!su.by_family || family(&o.matrix) != fam);
        let ranked = m.rank(
            &s.features,
            s.nnz,
            su.precision,
            &allowed,
            su.calls,
            su.k,
            held_out,
        );
        let cands: Vec<usize> = trial_candidates(&ranked, su.trial, su.calls)
            .into_iter()
            .map(|i| ranked[i].method)
            .collect();
        let measured = |i: usize| s.times[i].map_or(f64::INFINITY, |(us, _)| us);
        let (pick, t) = match cands.as_slice() {
            [] => continue,
            [one] => match cost(*one) {
                Some(t) => (*one, t),
                None => continue,
            },
            many => {
                trials += 1;
                let Some(&pick) = many
                    .iter()
                    .min_by(|a, b| measured(**a).total_cmp(&measured(**b)))
                else {
                    continue;
                };
                let spent: f64 = many
                    .iter()
                    .filter_map(|i| s.times[*i])
                    .map(|(us, prep)| prep * 1e3 + TRIAL_CALLS as f64 * us)
                    .sum();
                (pick, measured(pick) + spent / su.calls)
            }
        };
        n += 1;
        lb += (t / best).ln();
        if t <= 1.1 * best {
            within += 1;
        }
        if let Some(c) = cus.and_then(|c| s.times[c].map(|(us, prep)| us + prep * 1e3 / su.calls)) {
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
        trials,
    }
}

fn print_row(label: &str, su: &Setup, r: &Row) {
    let mut picks: Vec<_> = r.picks.iter().collect();
    picks.sort_by(|a, b| b.1.cmp(a.1));
    let picks: Vec<String> = picks
        .iter()
        .take(4)
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    println!(
        "| {} | {label} | {} | {} | {} | {} | {:.3}× | {} / {} ({:.0} %) | {:.2}× | {} |",
        su.precision,
        if su.calls > 1e11 {
            "∞".to_string()
        } else {
            format!("{}", su.calls)
        },
        if su.det { "deterministic" } else { "all" },
        if su.trial == 1 {
            "model".to_string()
        } else {
            format!("trial={} ({} tried)", su.trial, r.trials)
        },
        r.n,
        r.gm_over_best,
        r.within10,
        r.n,
        100.0 * r.within10 as f64 / r.n.max(1) as f64,
        r.gm_over_cusparse,
        picks.join(", ")
    );
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
    let by_family = std::env::var("SPMVKIT_AUTO_HOLDOUT").map_or(true, |v| v != "matrix");
    println!(
        "Held out: each matrix{}; {} (matrix, precision) rows of {} methods; k = {k}.\n",
        if by_family {
            " with its near-duplicates (same family)"
        } else {
            " alone"
        },
        m.samples.len(),
        m.methods.len()
    );
    println!(
        "Trial rows appear only where the budget let a trial run (\"n tried\"); elsewhere trial mode is model mode.\n"
    );
    let header = "| precision | matrices | calls | methods | mode | n | auto / oracle-best (geomean) | within 10 % of best | auto over cusparse (geomean) | picks |\n|---|---|---|---|---|---|---|---|---|---|";
    println!("{header}");
    let all: &Subset<'_> = &|_| true;
    for precision in [Precision::F64, Precision::F32] {
        for calls in [1e12, 1000.0, 1.0] {
            for det in [false, true] {
                for trial in [1, 2, 3, 4] {
                    let su = Setup {
                        precision,
                        calls,
                        det,
                        trial,
                        k,
                        by_family,
                    };
                    let r = evaluate(m, all, &su);
                    // a trial row where the budget let no trial run repeats the model row
                    if r.n > 0 && (trial == 1 || r.trials > 0) {
                        print_row("all", &su, &r);
                    }
                }
            }
        }
    }
    println!("\nBy regime (all methods):\n\n{header}");
    let fits = |s: &Sample| s.fits_l2();
    let subsets: [(&str, &Subset<'_>); 2] = [("fit L2", &fits), ("larger than L2", &|s| !fits(s))];
    for precision in [Precision::F64, Precision::F32] {
        for (label, sub) in subsets.iter() {
            for calls in [1e12, 1000.0] {
                for trial in [1, 4] {
                    let su = Setup {
                        precision,
                        calls,
                        det: false,
                        trial,
                        k,
                        by_family,
                    };
                    let r = evaluate(m, *sub, &su);
                    if r.n > 0 && (trial == 1 || r.trials > 0) {
                        print_row(label, &su, &r);
                    }
                }
            }
        }
    }
}
