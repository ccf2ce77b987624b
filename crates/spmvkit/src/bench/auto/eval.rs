//! How good `auto`'s choices are, needing no GPU.
//!
//! - **On the training table** ([`outcomes`]): each matrix of a [`Scope`] is predicted by the
//!   model fitted on the matrices the scope allows (the tuning split only, for the reported
//!   figures), and the chosen method's measured time is compared with the best measured method
//!   on that matrix and with the cheapest cuSPARSE ([`cheapest_cusparse`]). Model mode costs the
//!   choice's time plus its preprocessing over `calls`; trial mode is simulated exactly: the
//!   candidates [`crate::methods::auto::trial_candidates`] admits, the least measured time among them, and every
//!   candidate's preprocessing plus [`crate::methods::auto::TRIAL_CALLS`] calls spread over `calls`.
//! - **On measured runs** ([`evaluate_runs`], [`runs_markdown`]): for each matrix of the runs,
//!   what the shipped model picks (model mode, at each `calls`) against the best measured method
//!   of the same runs, and every measured `auto` entry against the same best. This is how a
//!   held-out set (the `large-test` suite) is judged: `spmv auto eval RUN...`, and the `auto`
//!   section of `spmv bench`'s summary.
//!
//! The best method pays its own preprocessing over `calls` too; `calls` = ∞ ([`CALLS_INF`])
//! ignores preprocessing.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::table::SKIP;
use crate::bench::report::{auto_choice, MergedRuns};
use crate::bench::{MethodResult, RunRecord, Status};
use crate::error::Result;
use crate::methods::auto::model::{family, split_of, Knobs, Model, Sample, Split};
use crate::methods::auto::{
    allowed_methods, model_choice, trial_candidates_within, TRIAL_BUDGET, TRIAL_CALLS,
};
use crate::methods::{find_variant, Backend, Params};
use crate::scalar::Precision;

/// Calls standing for "many": preprocessing spread over this many calls is negligible.
pub const CALLS_INF: f64 = 1e12;

/// The cuSPARSE setups a user can pick: ALG1 alone, ALG2 alone, or `cusparse`, which times both
/// when it is set up and keeps the faster.
pub const CUSPARSE_CHOICES: [&str; 3] = ["cusparse-alg1", "cusparse-alg2", "cusparse"];

/// The cheapest cuSPARSE for `calls` calls: the least, over [`CUSPARSE_CHOICES`] measured on the
/// matrix, of µs per call plus preprocessing spread over `calls`. `methods[i]` names
/// `times[i]` = (µs per call, preprocessing ms). Comparing with `cusparse` alone would charge
/// cuSPARSE its upload-time trial of both algorithms (about 2 ms against 0.13 ms for ALG1 alone),
/// which no user needs to pay.
pub fn cheapest_cusparse(
    methods: &[String],
    times: &[Option<(f64, f64)>],
    calls: f64,
) -> Option<f64> {
    methods
        .iter()
        .zip(times)
        .filter(|(m, _)| CUSPARSE_CHOICES.contains(&m.as_str()))
        .filter_map(|(_, t)| t.map(|(us, prep_ms)| us + prep_ms * 1e3 / calls.max(1.0)))
        .min_by(f64::total_cmp)
}

/// Which matrices are evaluated, and which the model may learn from for each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The test split, predicted from the tuning split only: the reported figures.
    Test,
    /// The tuning split, each matrix predicted from the tuning matrices of other families: where
    /// the defaults are chosen.
    Tune,
    /// Every matrix, predicted from the other families.
    AllFamilies,
    /// Every matrix, predicted from all other matrices.
    AllMatrices,
}

impl Scope {
    /// Whether `s` is evaluated.
    pub fn evaluates(self, s: &Sample) -> bool {
        match self {
            Scope::Test => split_of(&s.matrix) == Split::Test,
            Scope::Tune => split_of(&s.matrix) == Split::Tune,
            Scope::AllFamilies | Scope::AllMatrices => true,
        }
    }

    /// Whether the model may learn from `other` when predicting `target`.
    pub fn trains_on(self, target: &Sample, other: &Sample) -> bool {
        let other_family = family(&other.matrix) != family(&target.matrix);
        match self {
            Scope::Test => split_of(&other.matrix) == Split::Tune,
            Scope::Tune => split_of(&other.matrix) == Split::Tune && other_family,
            Scope::AllFamilies => other_family,
            Scope::AllMatrices => other.matrix != target.matrix,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Scope::Test => "test split, model fitted on the tuning split",
            Scope::Tune => "tuning split, each family held out",
            Scope::AllFamilies => "all matrices, each family held out",
            Scope::AllMatrices => "all matrices, each matrix held out",
        }
    }
}

/// One evaluation setting.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    pub precision: Precision,
    /// Expected calls ([`CALLS_INF`]: many).
    pub calls: f64,
    pub deterministic: bool,
    /// 1: model mode; N > 1: a trial of up to N candidates.
    pub trial: usize,
    /// The trial's budget ([`TRIAL_BUDGET`] in `auto`).
    pub budget: f64,
    pub knobs: Knobs,
    pub scope: Scope,
}

impl Setup {
    /// Model mode with the shipped settings, on `scope`.
    pub fn model(precision: Precision, calls: f64, scope: Scope) -> Self {
        Setup {
            precision,
            calls,
            deterministic: false,
            trial: 1,
            budget: TRIAL_BUDGET,
            knobs: Knobs::SHIPPED,
            scope,
        }
    }
}

/// What `auto` did on one evaluated matrix.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub matrix: String,
    pub fits_l2: bool,
    /// Index into the model's methods.
    pub pick: usize,
    /// µs per call of auto's choice, preprocessing (and trial) spread over `calls`.
    pub cost: f64,
    /// The best measured method's µs per call, its preprocessing spread over `calls`.
    pub best: f64,
    /// The cheapest cuSPARSE ([`cheapest_cusparse`]).
    pub cusparse: Option<f64>,
    /// Whether a trial of several candidates ran.
    pub tried: bool,
}

/// `auto`'s outcome on every matrix the setup's scope evaluates.
pub fn outcomes(m: &Model, su: &Setup) -> Vec<Outcome> {
    let base = allowed_methods(m, su.deterministic);
    let mut out = Vec::new();
    for s in m
        .samples
        .iter()
        .filter(|s| s.precision == su.precision && su.scope.evaluates(s))
    {
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
        let ranked = m.rank(
            &s.features,
            s.nnz,
            su.precision,
            &allowed,
            su.calls,
            &su.knobs,
            |o| su.scope.trains_on(s, o),
        );
        let cands: Vec<usize> = trial_candidates_within(&ranked, su.trial, su.calls, su.budget)
            .into_iter()
            .map(|i| ranked[i].method)
            .collect();
        let measured = |i: usize| s.times[i].map_or(f64::INFINITY, |(us, _)| us);
        let (pick, t, tried) = match cands.as_slice() {
            [] => continue,
            [one] => match cost(*one) {
                Some(t) => (*one, t, false),
                None => continue,
            },
            many => {
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
                (pick, measured(pick) + spent / su.calls, true)
            }
        };
        out.push(Outcome {
            matrix: s.matrix.clone(),
            fits_l2: s.fits_l2(),
            pick,
            cost: t,
            best,
            cusparse: cheapest_cusparse(&m.methods, &s.times, su.calls),
            tried,
        });
    }
    out
}

/// A summary of outcomes.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub n: usize,
    /// Geometric mean of auto's cost over the best's.
    pub gm_over_best: f64,
    /// Matrices where auto's cost is within 10 % of the best's.
    pub within10: usize,
    /// Geometric mean of the cheapest cuSPARSE's cost over auto's (where cuSPARSE ran).
    pub gm_over_cusparse: Option<f64>,
    /// Picks, most frequent first.
    pub picks: Vec<(String, usize)>,
    /// Matrices where a trial ran.
    pub trials: usize,
}

impl Summary {
    /// The share within 10 % of the best, in percent.
    pub fn within10_pct(&self) -> f64 {
        100.0 * self.within10 as f64 / self.n.max(1) as f64
    }
}

/// Summarises outcomes; `methods` names the picks.
pub fn summarize<'a>(methods: &[String], outs: impl IntoIterator<Item = &'a Outcome>) -> Summary {
    let (mut n, mut lb, mut within, mut lc, mut nc, mut trials) = (0, 0.0, 0, 0.0, 0, 0);
    let mut picks: BTreeMap<&str, usize> = BTreeMap::new();
    for o in outs {
        n += 1;
        lb += (o.cost / o.best).ln();
        if o.cost <= 1.1 * o.best {
            within += 1;
        }
        if let Some(c) = o.cusparse {
            lc += (c / o.cost).ln();
            nc += 1;
        }
        if o.tried {
            trials += 1;
        }
        *picks.entry(methods[o.pick].as_str()).or_insert(0) += 1;
    }
    let mut picks: Vec<(String, usize)> = picks.into_iter().map(|(k, v)| (k.into(), v)).collect();
    picks.sort_by_key(|p| std::cmp::Reverse(p.1));
    Summary {
        n,
        gm_over_best: (lb / n.max(1) as f64).exp(),
        within10: within,
        gm_over_cusparse: (nc > 0).then(|| (lc / nc as f64).exp()),
        picks,
        trials,
    }
}

/// `calls` as the tables write it.
pub fn calls_label(calls: f64) -> String {
    if calls >= CALLS_INF {
        "∞".into()
    } else {
        format!("{calls}")
    }
}

/// Whether a method of a run may be the best one: a plain registered method with a GPU
/// executor, not in [`SKIP`], not `auto` itself.
fn candidate(method: &str) -> bool {
    !method.contains('[')
        && !SKIP.contains(&method)
        && crate::methods::find(method).is_ok_and(|m| m.info().gpu)
}

/// A result's µs per call with its preprocessing spread over `calls`, if it ran correctly on
/// the GPU.
fn run_cost(r: &MethodResult, calls: f64) -> Option<f64> {
    let rec: &RunRecord = r.record.as_ref()?;
    let t = rec.time.median_us;
    (r.status == Status::Ok && rec.backend == Backend::Gpu && t.is_finite() && t > 0.0)
        .then(|| t + (rec.prep_ms + rec.upload_ms) * 1e3 / calls.max(1.0))
}

/// One measured `auto` entry of a run.
#[derive(Clone, Debug)]
pub struct MeasuredAuto {
    /// Its label (`auto`, `auto[calls=...]`).
    pub label: String,
    /// What its notes say it chose.
    pub chose: String,
    /// µs per call, its preprocessing (model, trial, the choice's own) spread over `calls`.
    pub cost: f64,
}

/// `auto` against the best on one matrix of a run, for one `calls`.
#[derive(Clone, Debug)]
pub struct RunPoint {
    pub matrix: String,
    pub nnz: usize,
    pub precision: Precision,
    pub calls: f64,
    /// Whether the shipped table holds this matrix (then the model's pick is in-sample).
    pub in_table: bool,
    /// The best measured method and its cost.
    pub best: (String, f64),
    /// The shipped model's pick (model mode) and its measured cost in the run, if it was
    /// measured.
    pub model: Option<(String, Option<f64>)>,
    /// The measured `auto` entries whose `calls` is this one.
    pub measured: Vec<MeasuredAuto>,
}

/// The `calls` an `auto` label runs with (its default when not given).
fn auto_calls(label: &str) -> Option<f64> {
    let (m, params) = find_variant(label).ok()?;
    if m.info().name != crate::methods::auto::NAME {
        return None;
    }
    crate::methods::auto::calls_of(&params)
}

/// For each matrix and precision of the merged runs and each of `calls`: the best measured
/// method, the shipped model's pick (model mode), and the measured `auto` entries run with that
/// `calls` (`auto` is 1000 by default; an entry with `calls` ≥ 10⁹ counts as ∞).
pub fn evaluate_runs(merged: &MergedRuns, calls: &[f64]) -> Result<Vec<RunPoint>> {
    let model = Model::shipped()?;
    let mut out = Vec::new();
    for mm in &merged.matrices {
        let m = &mm.matrix;
        for p in Precision::ALL {
            let results: Vec<&MethodResult> =
                m.results.iter().filter(|r| r.precision == p).collect();
            if results.is_empty() {
                continue;
            }
            let in_table = model
                .samples
                .iter()
                .any(|s| s.precision == p && s.matrix == m.name.replace(',', ";"));
            for &c in calls {
                let Some(best) = results
                    .iter()
                    .filter(|r| candidate(&r.method))
                    .filter_map(|r| run_cost(r, c).map(|t| (r.method.clone(), t)))
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                else {
                    continue;
                };
                let params = Params::parse([format!("calls={c}").as_str()])?;
                let pick = model_choice(&m.stats, m.fits_l2, p, &params)
                    .ok()
                    .map(|ch| {
                        let t = results
                            .iter()
                            .find(|r| r.method == ch.method)
                            .and_then(|r| run_cost(r, c));
                        (ch.method.to_string(), t)
                    });
                let measured = results
                    .iter()
                    .filter(|r| {
                        auto_calls(&r.method)
                            .is_some_and(|ac| ac == c || (ac >= 1e9 && c >= CALLS_INF))
                    })
                    .filter_map(|r| {
                        let cost = run_cost(r, c)?;
                        let chose = auto_choice(r.record.as_ref()?).unwrap_or("?").to_string();
                        Some(MeasuredAuto {
                            label: r.method.clone(),
                            chose,
                            cost,
                        })
                    })
                    .collect();
                out.push(RunPoint {
                    matrix: m.name.clone(),
                    nnz: m.stats.nnz,
                    precision: p,
                    calls: c,
                    in_table,
                    best,
                    model: pick,
                    measured,
                });
            }
        }
    }
    Ok(out)
}

/// The markdown of [`evaluate_runs`]: per precision and `calls`, one line per matrix and a
/// closing count, "within 10 % of the best on N / M", for the model's pick and for each measured
/// `auto` entry.
pub fn runs_markdown(points: &[RunPoint]) -> String {
    let mut s = String::new();
    let mut keys: Vec<(Precision, u64)> = points
        .iter()
        .map(|p| (p.precision, p.calls.to_bits()))
        .collect();
    keys.sort_by(|a, b| {
        (a.0 as u8)
            .cmp(&(b.0 as u8))
            .then(f64::from_bits(a.1).total_cmp(&f64::from_bits(b.1)))
    });
    keys.dedup();
    for (prec, bits) in keys {
        let calls = f64::from_bits(bits);
        let pts: Vec<&RunPoint> = points
            .iter()
            .filter(|p| p.precision == prec && p.calls.to_bits() == bits)
            .collect();
        let _ = writeln!(
            s,
            "### auto against the best measured method: {prec}, calls = {}\n",
            calls_label(calls)
        );
        let _ = writeln!(
            s,
            "Cost: µs per call with the preprocessing spread over the calls. The model's pick is the shipped model's choice (model mode), costed at its measured time in this run; \"in table\": the matrix is in the training table, so the pick is in-sample.\n"
        );
        let _ = writeln!(
            s,
            "| matrix | nnz | in table | best | µs | model pick | µs | pick / best | measured auto (choice): µs, / best |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|");
        let mut model_n = (0usize, 0usize);
        let mut measured_n: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for p in &pts {
            let (pick, pick_us, ratio) = match &p.model {
                Some((m, Some(t))) => {
                    model_n.1 += 1;
                    if *t <= 1.1 * p.best.1 {
                        model_n.0 += 1;
                    }
                    (
                        m.clone(),
                        format!("{t:.1}"),
                        format!("{:.2}×", t / p.best.1),
                    )
                }
                Some((m, None)) => (m.clone(), "not measured".into(), "–".into()),
                None => ("–".into(), "–".into(), "–".into()),
            };
            let measured: Vec<String> = p
                .measured
                .iter()
                .map(|a| {
                    let e = measured_n.entry(a.label.as_str()).or_insert((0, 0));
                    e.1 += 1;
                    if a.cost <= 1.1 * p.best.1 {
                        e.0 += 1;
                    }
                    format!(
                        "{} ({}): {:.1}, {:.2}×",
                        a.label,
                        a.chose,
                        a.cost,
                        a.cost / p.best.1
                    )
                })
                .collect();
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {:.1} | {pick} | {pick_us} | {ratio} | {} |",
                p.matrix,
                p.nnz,
                if p.in_table { "yes" } else { "no" },
                p.best.0,
                p.best.1,
                if measured.is_empty() {
                    "–".into()
                } else {
                    measured.join("; ")
                }
            );
        }
        let _ = writeln!(
            s,
            "\n- model pick: within 10 % of the best on **{} / {}**",
            model_n.0, model_n.1
        );
        for (label, (w, n)) in &measured_n {
            let _ = writeln!(
                s,
                "- measured `{label}`: within 10 % of the best on **{w} / {n}**"
            );
        }
        s.push('\n');
    }
    s
}

/// The `auto` section of a bench summary: [`runs_markdown`] at 1000 calls and at ∞, when the
/// runs hold an `auto` entry; empty otherwise.
pub fn report_section(merged: &MergedRuns) -> String {
    let has_auto = merged
        .matrices
        .iter()
        .flat_map(|m| &m.matrix.results)
        .any(|r| auto_calls(&r.method).is_some());
    if !has_auto {
        return String::new();
    }
    match evaluate_runs(merged, &[1000.0, CALLS_INF]) {
        Ok(points) if points.is_empty() => {
            "## auto against the best\n\nNo GPU results to judge auto by: it is compared with the methods that ran on the GPU.\n\n".into()
        }
        Ok(points) => format!("## auto against the best\n\n{}", runs_markdown(&points)),
        Err(e) => format!("## auto against the best\n\nnot evaluated: {e}\n\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cheapest_cusparse_is_the_least_time_plus_setup_over_calls() {
        let methods: Vec<String> = ["csr-vector", "cusparse-alg1", "cusparse-alg2", "cusparse"]
            .map(String::from)
            .to_vec();
        // (µs per call, preprocessing ms): ALG2 is faster per call, cusparse pays its trial
        let times = [
            Some((1.0, 0.0)),
            Some((10.0, 0.13)),
            Some((8.0, 1.0)),
            Some((8.0, 2.17)),
        ];
        // one call: ALG1's cheap setup wins (10 + 130 against 8 + 1000 and 8 + 2170)
        assert_eq!(cheapest_cusparse(&methods, &times, 1.0), Some(140.0));
        // 1000 calls: ALG2 alone, 8 + 1 (cusparse would be 8 + 2.17)
        assert_eq!(cheapest_cusparse(&methods, &times, 1000.0), Some(9.0));
        // many calls: the least time per call
        let many = cheapest_cusparse(&methods, &times, CALLS_INF).unwrap();
        assert!((many - 8.0).abs() < 1e-6);
        // a missing member is passed over; none at all gives None
        let some = [None, None, None, Some((8.0, 2.17))];
        assert_eq!(cheapest_cusparse(&methods, &some, 1000.0), Some(10.17));
        assert_eq!(cheapest_cusparse(&methods, &[None; 4], 1.0), None);
    }

    #[test]
    fn test_scope_learns_only_from_the_tuning_split() {
        let m = Model::shipped().unwrap();
        let test: Vec<&Sample> = m
            .samples
            .iter()
            .filter(|s| Scope::Test.evaluates(s))
            .collect();
        assert!(!test.is_empty());
        for t in &test {
            for o in &m.samples {
                if Scope::Test.trains_on(t, o) {
                    assert_eq!(split_of(&o.matrix), Split::Tune);
                    assert_ne!(family(&o.matrix), family(&t.matrix));
                }
            }
        }
    }

    #[test]
    fn a_run_with_auto_entries_is_judged_against_its_best_method() {
        use crate::bench::auto::table::tests::{result, run};
        use crate::bench::report::merge_runs;
        let ok = Status::Ok;
        let p = Precision::F64;
        let r = run(
            "2026-01-01T00:00:00Z",
            "abc",
            vec![(
                "held-out",
                vec![
                    result("csr-vector", p, 10.0, ok),
                    result("cusparse-alg1", p, 12.0, ok),
                    result("cb-spmv[format=off]", p, 1.0, ok),
                    result("auto", p, 10.5, ok),
                    result("auto[calls=1000000000]", p, 20.0, ok),
                ],
            )],
        );
        let points = evaluate_runs(&merge_runs(&[r]), &[1000.0, CALLS_INF]).unwrap();
        assert_eq!(points.len(), 2);
        // variants never count as the best; preprocessing (0.75 ms) spread over 1000 calls
        let at1000 = &points[0];
        assert_eq!(at1000.best.0, "csr-vector");
        assert!((at1000.best.1 - 10.75).abs() < 1e-9);
        assert!(!at1000.in_table);
        // `auto` runs with calls = 1000, `auto[calls=1e9]` counts as ∞
        assert_eq!(at1000.measured.len(), 1);
        assert_eq!(at1000.measured[0].chose, "csr-vector");
        assert_eq!(points[1].measured[0].label, "auto[calls=1000000000]");
        let md = runs_markdown(&points);
        assert!(
            md.contains("measured `auto`: within 10 % of the best on **1 / 1**"),
            "{md}"
        );
        assert!(md.contains("within 10 % of the best on **0 / 1**"), "{md}");
        assert!(report_section(&merge_runs(&[])).is_empty());
    }

    #[test]
    fn auto_labels_give_their_calls() {
        assert_eq!(auto_calls("auto"), Some(1000.0));
        assert_eq!(auto_calls("auto[calls=1000000000]"), Some(1e9));
        assert_eq!(auto_calls("cusparse"), None);
    }
}
