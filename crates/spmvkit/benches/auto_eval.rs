//! Evaluation of `auto` (issue #11) on the committed H200 results, in model mode and in trial
//! mode (simulated exactly), with [`spmvkit::bench::auto::eval`]. By default on the TEST split:
//! each test matrix is predicted by the model fitted on the tuning split only
//! (`model::split_of`, by matrix family), so neither the matrix nor its near-duplicates were
//! seen, and nothing about the test matrices went into choosing the model's settings
//! (`docs/results/tuning-split.md`). The chosen method's measured time is compared with the
//! fastest measured method on that matrix (the oracle) and with the cheapest cuSPARSE
//! (`eval::cheapest_cusparse`: ALG1 alone, ALG2 alone or `cusparse`, each with its own setup
//! over `calls`). Prints markdown; needs no GPU.
//!
//! Run: `cargo bench -p spmvkit --bench auto_eval`. `SPMVKIT_AUTO_SCOPE` = `test` (default),
//! `tune`, `families` (every matrix, its family held out) or `matrices` (every matrix, itself held
//! out); `SPMVKIT_AUTO_K` = neighbours (default: the shipped k).

use spmvkit::bench::auto::eval::{
    calls_label, outcomes, summarize, Outcome, Scope, Setup, CALLS_INF,
};
use spmvkit::methods::auto::model::{Knobs, Model, Split};
use spmvkit::methods::auto::{DEFAULT_TRIAL, TRIAL_BUDGET};
use spmvkit::scalar::Precision;

fn print_row(m: &Model, label: &str, su: &Setup, outs: &[&Outcome]) {
    let r = summarize(&m.methods, outs.iter().copied());
    if r.n == 0 || (su.trial > 1 && r.trials == 0) {
        // a trial row where the budget let no trial run repeats the model row
        return;
    }
    let picks: Vec<String> = r
        .picks
        .iter()
        .take(4)
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    println!(
        "| {} | {label} | {} | {} | {} | {} | {:.3}× | {} / {} ({:.0} %) | {} | {} |",
        su.precision,
        calls_label(su.calls),
        if su.deterministic {
            "deterministic"
        } else {
            "all"
        },
        if su.trial == 1 {
            "model".to_string()
        } else {
            format!("trial={} ({} tried)", su.trial, r.trials)
        },
        r.n,
        r.gm_over_best,
        r.within10,
        r.n,
        r.within10_pct(),
        r.gm_over_cusparse
            .map_or_else(|| "–".into(), |g| format!("{g:.2}×")),
        picks.join(", ")
    );
}

fn main() {
    let m = Model::shipped().unwrap_or_else(|e| {
        eprintln!("auto_eval: {e}");
        std::process::exit(1)
    });
    let scope = match std::env::var("SPMVKIT_AUTO_SCOPE").as_deref() {
        Ok("tune") => Scope::Tune,
        Ok("families") => Scope::AllFamilies,
        Ok("matrices") => Scope::AllMatrices,
        _ => Scope::Test,
    };
    let knobs = std::env::var("SPMVKIT_AUTO_K")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(Knobs::SHIPPED, Knobs::with_k);
    let count = |sp: Split| {
        let (names, fams) = m.split_members(sp);
        (names.len(), fams.len())
    };
    let ((tn, tf), (sn, sf)) = (count(Split::Tune), count(Split::Test));
    println!(
        "Scope: {}. Split: tune {tn} matrices ({tf} families), test {sn} matrices ({sf} families). Table: {} (matrix, precision) rows of {} methods. k = {}, weights 1/(d + {}), trial budget {} %.\n",
        scope.label(),
        m.samples.len(),
        m.methods.len(),
        knobs.k,
        knobs.offset,
        TRIAL_BUDGET * 100.0
    );
    println!(
        "Trial rows appear only where the budget let a trial run (\"n tried\"); elsewhere trial mode is model mode. cuSPARSE: the cheapest of ALG1 alone, ALG2 alone and `cusparse` (which tries both at setup), each with its own setup spread over the calls.\n"
    );
    let header = "| precision | matrices | calls | methods | mode | n | auto / oracle-best (geomean) | within 10 % of best | auto over cheapest cuSPARSE (geomean) | picks |\n|---|---|---|---|---|---|---|---|---|---|";
    println!("{header}");
    let mut trials = vec![1, 2, 3, 4];
    if !trials.contains(&DEFAULT_TRIAL) {
        trials.push(DEFAULT_TRIAL);
    }
    let setup = |precision, calls, deterministic, trial| Setup {
        precision,
        calls,
        deterministic,
        trial,
        budget: TRIAL_BUDGET,
        knobs,
        scope,
    };
    for precision in [Precision::F64, Precision::F32] {
        for calls in [CALLS_INF, 1000.0, 1.0] {
            for det in [false, true] {
                for &trial in &trials {
                    let su = setup(precision, calls, det, trial);
                    let outs = outcomes(m, &su);
                    print_row(m, "all", &su, &outs.iter().collect::<Vec<_>>());
                }
            }
        }
    }
    println!("\nBy regime (all methods):\n\n{header}");
    for precision in [Precision::F64, Precision::F32] {
        for (label, fits) in [("fit L2", true), ("larger than L2", false)] {
            for calls in [CALLS_INF, 1000.0] {
                for trial in [1, DEFAULT_TRIAL] {
                    let su = setup(precision, calls, false, trial);
                    let outs = outcomes(m, &su);
                    let sub: Vec<&Outcome> = outs.iter().filter(|o| o.fits_l2 == fits).collect();
                    print_row(m, label, &su, &sub);
                }
            }
        }
    }
}
