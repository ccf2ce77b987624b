use super::model::{Features, Knobs, Model};
use super::*;
use crate::methods::testmats::{check_layout, suite};
use crate::testing::gpu_or_skip;

fn feat(nnz: f64, mean: f64) -> Features {
    Features::new(
        nnz / mean,
        nnz / mean,
        nnz,
        mean,
        1.0,
        mean * 2.0,
        0.0,
        10.0,
        false,
        None,
    )
}

/// Two clusters: small short-row matrices where `a` wins, large long-row ones where `b` wins;
/// `c` is fast everywhere but costs a lot to prepare.
fn synthetic() -> Model {
    let header = "matrix,precision,nrows,ncols,nnz,row_len_mean,row_len_std,row_len_max,empty_rows,bandwidth,fits_l2,a:us,a:prep_ms,b:us,b:prep_ms,c:us,c:prep_ms";
    let mut t = String::from(header);
    for i in 0..6 {
        let nnz = 1000.0 + i as f64;
        t += &format!("\ns{i},f64,250,250,{nnz},4,1,8,0,10,true,1.0,0.1,2.0,0.1,0.9,1000");
        let nnz = 1e7 + i as f64;
        t += &format!("\nl{i},f64,50000,50000,{nnz},200,1,400,0,10,false,300,1,100,1,90,100000");
    }
    Model::parse(&t).unwrap()
}

#[test]
fn nearest_neighbours_pick_the_clusters_winner_and_count_preprocessing() {
    let m = synthetic();
    assert_eq!(m.methods, vec!["a", "b", "c"]);
    let all = [true, true, true];
    let no_c = [true, true, false];
    let small = feat(1002.0, 4.0);
    let large = feat(1.1e7, 200.0);
    let pick = |f: &Features, nnz: f64, allowed: &[bool], calls: f64| {
        m.methods[m
            .choose(
                f,
                nnz,
                Precision::F64,
                allowed,
                calls,
                &Knobs::with_k(3),
                |_| true,
            )
            .unwrap()
            .0]
            .clone()
    };
    assert_eq!(pick(&small, 1002.0, &no_c, 1e12), "a");
    assert_eq!(pick(&large, 1.1e7, &no_c, 1e12), "b");
    // c is the fastest per call, but its preprocessing only pays off over many calls
    assert_eq!(pick(&large, 1.1e7, &all, 1e12), "c");
    assert_eq!(pick(&large, 1.1e7, &all, 1.0), "b");
    // no training data of this precision
    assert!(m
        .choose(
            &small,
            1000.0,
            Precision::F32,
            &all,
            1.0,
            &Knobs::with_k(3),
            |_| true
        )
        .is_none());
    // leave-one-out filter: without the small cluster the nearest are the large matrices
    let only_large = |s: &model::Sample| s.matrix.starts_with('l');
    let i = m.choose(
        &small,
        1002.0,
        Precision::F64,
        &no_c,
        1e12,
        &Knobs::with_k(3),
        only_large,
    );
    assert_eq!(m.methods[i.unwrap().0], "b");
}

/// Large matrices alike in every statistic but how scattered their columns are: `a` wins where
/// x is gathered from few sectors (share 0.1), `b` where every nonzero gathers its own (share 1).
#[test]
fn the_x_share_tells_scattered_columns_from_local_ones_in_matrices_larger_than_l2() {
    let header = format!(
        "matrix,precision,{},a:us,a:prep_ms,b:us,b:prep_ms",
        super::model::STAT_COLUMNS.join(",")
    );
    let mut t = header;
    for i in 0..4 {
        let nnz = 40_000_000u64;
        let (local, random) = (nnz / 10, nnz);
        t += &format!(
            "\nlocal{i},f64,4000000,4000000,{nnz},10,0,10,0,4000000,false,,{local},100,1,300,1"
        );
        t += &format!(
            "\nrandom{i},f64,4000000,4000000,{nnz},10,0,10,0,4000000,false,,{random},500,1,400,1"
        );
    }
    let m = Model::parse(&t).unwrap();
    let f =
        |share: Option<f64>| Features::new(4e6, 4e6, 4e7, 10.0, 0.0, 10.0, 0.0, 4e6, false, share);
    let pick = |share: Option<f64>| {
        let i = m
            .choose(
                &f(share),
                4e7,
                Precision::F64,
                &[true, true],
                1e12,
                &Knobs::with_k(4),
                |_| true,
            )
            .unwrap()
            .0;
        m.methods[i].clone()
    };
    assert_eq!(pick(Some(0.1)), "a");
    assert_eq!(pick(Some(0.98)), "b");
    // unknown: the share adds nothing to any distance, so all eight are equally near
    let near = m.nearest(&f(None), Precision::F64, &Knobs::with_k(8), |_| true);
    assert!(near.iter().all(|(d, _)| *d == near[0].0), "{near:?}");
    // a matrix that fits L2 has share 0 whatever its columns
    let small = Features::new(1e3, 1e3, 1e4, 10.0, 0.0, 10.0, 0.0, 1e3, true, Some(1.0));
    assert_eq!(small.0[model::X_SHARE], 0.0);
}

#[test]
fn the_shipped_table_parses_and_names_registered_methods() {
    let m = Model::shipped().unwrap();
    assert!(m.samples.len() >= 200, "{}", m.samples.len());
    assert!(m.methods.iter().any(|x| x == "cusparse"));
    for name in &m.methods {
        assert!(find(name).is_ok(), "{name} is not registered");
    }
    assert!(m.samples.iter().any(|s| s.precision == Precision::F32));
}

#[test]
fn bad_tables_and_params_are_errors() {
    assert!(Model::parse("").is_err());
    assert!(Model::parse("a,b\n1,2").is_err());
    let header = "matrix,precision,nrows,ncols,nnz,row_len_mean,row_len_std,row_len_max,empty_rows,bandwidth,fits_l2,a:us,a:prep_ms";
    assert!(Model::parse(&format!("{header}\nm,f64,1,1,x,1,1,1,0,0,true,1,1")).is_err());
    assert!(Model::parse(&format!("{header}\nm,f16,1,1,1,1,1,1,0,0,true,1,1")).is_err());
    assert!(Model::parse(&format!("{header}\nm,f64,1,1,1,1,1,1,0,0,true,1")).is_err());
    let a = suite().remove(0).1;
    for bad in [
        "mode=bogus",
        "trial=0",
        "trial=11",
        "calls=0",
        "deterministic=2",
        "k=0",
        "k=51",
        "bogus=1",
    ] {
        assert!(
            Auto.prepare_f64(&a, &Params::parse([bad]).unwrap())
                .is_err(),
            "{bad}"
        );
    }
}

/// Whether a GPU is present, which skips `test` (a test of the path without one), visibly.
fn gpu_present_skips(test: &str) -> bool {
    let present = Gpu::get().is_ok();
    if present {
        crate::testing::skip(
            test,
            "a GPU is present (this test checks the path without one)",
        );
    }
    present
}

#[test]
fn without_a_gpu_auto_takes_csr_and_matches_the_oracle() {
    // with a GPU, the GPU suite checks `auto` through the registry
    if gpu_present_skips("without_a_gpu_auto_takes_csr_and_matches_the_oracle") {
        return;
    }
    for (name, a) in suite() {
        let c = choose(&a, &Params::new()).unwrap();
        assert_eq!(c.method, "csr");
        let l = Auto.prepare_f64(&a, &Params::new()).unwrap();
        check_layout(&format!("auto on {name}"), &a, l.as_ref());
        assert_eq!(l.chosen().map(|m| m.info().name), Some("csr"));
        assert!(l.notes().iter().any(|(k, v)| k == CHOSE_NOTE && v == "csr"));
        let a32: Csr<f32> = a.cast();
        let l = Auto.prepare_f32(&a32, &Params::new()).unwrap();
        check_layout(&format!("auto on {name} (f32)"), &a32, l.as_ref());
    }
}

#[test]
fn a_gpu_only_choice_runs_on_the_cpu_through_csr() {
    let a = suite().remove(0).1;
    // as `prepare` builds it when the model picks cuSPARSE
    let chosen = find("cusparse").unwrap();
    assert!(!chosen.info().cpu);
    let l = AutoLayout {
        inner: chosen.prepare_f64(&a, &Params::new()).unwrap(),
        cpu_fallback: Some(
            find("csr")
                .unwrap()
                .prepare_f64(&a, &Params::new())
                .unwrap(),
        ),
        spmm_csr: None,
        spmm: SpmmOffer::default(),
        packed: OnceLock::new(),
        chosen,
        choice: Choice {
            method: "cusparse",
            predicted_us: Some(1.0),
            reason: "test".into(),
            candidates: vec!["cusparse"],
        },
        trial: None,
        device: Mutex::new(None),
    };
    check_layout("auto -> cusparse on the CPU", &a, &l);
    assert!(l.notes().iter().any(|(k, _)| k == "auto CPU path"));
}

fn pred(method: usize, call_us: f64, prep_us: f64) -> model::Prediction {
    model::Prediction {
        method,
        call_us,
        prep_us,
        us: call_us,
    }
}

#[test]
fn a_trial_takes_candidates_while_they_fit_the_budget() {
    let ranked = [
        pred(0, 10.0, 100.0),
        pred(1, 11.0, 200.0),
        pred(2, 12.0, 5e5),
    ];
    // many calls: every candidate up to n
    assert_eq!(trial_candidates(&ranked, 3, 1e9), vec![0, 1, 2]);
    assert_eq!(trial_candidates(&ranked, 2, 1e9), vec![0, 1]);
    assert_eq!(trial_candidates(&ranked, 1, 1e9), vec![0]);
    // the budget is 5 % of calls × 10 µs; the second costs 200 + 18·11 = 398 µs, the third 5e5
    // 10⁴ calls: 5000 µs hold the second, not the third
    assert_eq!(trial_candidates(&ranked, 3, 1e4), vec![0, 1]);
    // 1000 calls: 500 µs still hold the second
    assert_eq!(trial_candidates(&ranked, 3, 1000.0), vec![0, 1]);
    // 500 calls: 250 µs hold neither
    assert_eq!(trial_candidates(&ranked, 3, 500.0), vec![0]);
    // one call: no trial
    assert_eq!(trial_candidates(&ranked, 3, 1.0), vec![0]);
    assert!(trial_candidates(&[], 3, 1.0).is_empty());
}

/// A timer that reports fixed times per method and counts what it timed.
struct FakeTimer {
    us: Vec<(&'static str, f64)>,
    timed: Vec<&'static str>,
}

impl<T: Scalar> TrialTimer<T> for FakeTimer {
    fn time(&mut self, method: &'static str, layout: &dyn Layout<T>) -> Result<f64> {
        assert!(layout.footprint_bytes() > 0);
        self.timed.push(method);
        self.us
            .iter()
            .find(|(m, _)| *m == method)
            .map(|(_, us)| *us)
            .ok_or_else(|| Error::InvalidArgument(format!("{method} cannot run here")))
    }
    fn take_device(&mut self, _: &'static str) -> Option<Box<dyn DeviceLayout<T>>> {
        None
    }
}

#[test]
fn a_trial_keeps_the_fastest_measured_layout_without_preparing_it_again() {
    let a = suite().remove(0).1;
    let prepared = std::cell::RefCell::new(Vec::new());
    let prep = |m: &'static dyn Method| {
        prepared.borrow_mut().push(m.info().name);
        m.prepare_f64(&a, &Params::new())
    };
    let mut timer = FakeTimer {
        us: vec![("csr-vector", 5.0), ("csr-scalar", 4.0), ("merge", 6.0)],
        timed: Vec::new(),
    };
    let out = run_trial(&["csr-vector", "csr-scalar", "merge"], prep, &mut timer).unwrap();
    assert_eq!(out.winner, "csr-scalar");
    assert_eq!(
        *prepared.borrow(),
        vec!["csr-vector", "csr-scalar", "merge"]
    );
    assert_eq!(timer.timed, vec!["csr-vector", "csr-scalar", "merge"]);
    assert_eq!(out.entries.len(), 3);
    assert!(out.entries.iter().all(|e| e.outcome.is_ok()));
    // the winner's layout is the one kept: it computes A·x
    check_layout("trial winner", &a, out.layout.as_ref());
    assert!(out
        .layout
        .notes()
        .iter()
        .all(|(k, _)| !k.starts_with("auto")));
    // wrapped as `prepare` wraps it, the notes tell the trial
    let l = AutoLayout {
        inner: out.layout,
        cpu_fallback: None,
        spmm_csr: None,
        spmm: SpmmOffer::default(),
        packed: OnceLock::new(),
        chosen: find(out.winner).unwrap(),
        choice: Choice {
            method: out.winner,
            predicted_us: Some(5.0),
            reason: "test".into(),
            candidates: vec!["csr-vector", "csr-scalar", "merge"],
        },
        trial: Some((out.entries, out.elapsed)),
        device: Mutex::new(None),
    };
    let notes = l.notes();
    let trial = notes.iter().find(|(k, _)| k == "auto trial").unwrap();
    assert!(trial.1.contains("csr-scalar 4.00 µs"), "{}", trial.1);
    assert!(l.prep_stages().iter().any(|(s, _)| *s == "auto trial"));
    check_layout("auto after a trial", &a, &l);
}

#[test]
fn a_candidate_that_fails_is_passed_over_and_all_failing_is_an_error() {
    let a = suite().remove(0).1;
    let prep = |m: &'static dyn Method| m.prepare_f64(&a, &Params::new());
    let mut timer = FakeTimer {
        us: vec![("merge", 9.0)],
        timed: Vec::new(),
    };
    let out = run_trial(&["csr-vector", "merge"], prep, &mut timer).unwrap();
    assert_eq!(out.winner, "merge");
    assert!(out.entries[0].outcome.is_err());
    let mut none = FakeTimer {
        us: vec![],
        timed: Vec::new(),
    };
    let err = run_trial(&["csr-vector"], prep, &mut none).err().unwrap();
    assert!(
        err.to_string().contains("csr-vector cannot run here"),
        "{err}"
    );
    let mut t = FakeTimer {
        us: vec![],
        timed: Vec::new(),
    };
    assert!(run_trial::<f64>(&[], prep, &mut t).is_err());
}

#[test]
fn trial_mode_without_a_gpu_is_model_mode_with_a_note() {
    if gpu_present_skips("trial_mode_without_a_gpu_is_model_mode_with_a_note") {
        return;
    }
    let a = suite().remove(0).1;
    let p = Params::parse(["mode=trial", "trial=3"]).unwrap();
    let c = choose(&a, &p).unwrap();
    assert_eq!(c.method, "csr");
    assert_eq!(c.candidates, vec!["csr"]);
    assert!(c.reason.contains("trial needs a GPU"), "{}", c.reason);
    let l = Auto.prepare_f64(&a, &p).unwrap();
    check_layout("auto mode=trial without a GPU", &a, l.as_ref());
}

#[test]
fn deterministic_auto_admits_only_deterministic_methods() {
    let m = Model::shipped().unwrap();
    let all = allowed_methods(m, false);
    let det = allowed_methods(m, true);
    assert!(det.iter().filter(|b| **b).count() < all.iter().filter(|b| **b).count());
    for (name, ok) in m.methods.iter().zip(&det) {
        let info = find(name).unwrap().info();
        assert_eq!(*ok, info.gpu && info.deterministic, "{name}");
    }
    // the model's ranking under the restriction names only deterministic methods
    for s in m.samples.iter().take(20) {
        for p in m.rank(
            &s.features,
            s.nnz,
            s.precision,
            &det,
            1000.0,
            &Knobs::with_k(5),
            |_| true,
        ) {
            assert!(find(&m.methods[p.method]).unwrap().info().deterministic);
        }
    }
}

#[test]
fn families_group_near_duplicates() {
    assert_eq!(model::family("bcspwr01"), model::family("bcspwr10"));
    assert_eq!(model::family("delaunay_n10"), "delaunay_n");
    assert_eq!(model::family("kron:21"), "kron");
    assert_ne!(model::family("ct2010"), model::family("vt2010"));
    assert_eq!(model::family("3elt"), "3elt");
}

#[test]
fn ranking_is_sorted_and_its_first_is_the_choice() {
    let m = synthetic();
    let all = [true, true, true];
    let f = feat(1.1e7, 200.0);
    let r = m.rank(
        &f,
        1.1e7,
        Precision::F64,
        &all,
        1.0,
        &Knobs::with_k(3),
        |_| true,
    );
    assert_eq!(r.len(), 3);
    assert!(r.windows(2).all(|w| w[0].us <= w[1].us));
    let c = m.choose(
        &f,
        1.1e7,
        Precision::F64,
        &all,
        1.0,
        &Knobs::with_k(3),
        |_| true,
    );
    assert_eq!(c, Some((r[0].method, r[0].us)));
    // prep is spread over the calls
    assert!((r[0].us - (r[0].call_us + r[0].prep_us)).abs() < 1e-9 * r[0].us);
}

fn gpu_matrices() -> Vec<(String, Csr<f64>)> {
    let mut m: Vec<(String, Csr<f64>)> = suite()
        .into_iter()
        .map(|(n, a)| (n.to_string(), a))
        .collect();
    for spec in ["poisson2d:200", "powerlaw:20000,8", "banded:30000,16"] {
        m.push((spec.to_string(), crate::gen::generate::<f64>(spec).unwrap()));
    }
    m
}

fn check_against_oracle<T: Scalar>(what: &str, a: &Csr<T>, got: &[T], x: &[T], y0: &[T]) {
    let r = crate::cpu::oracle_spmv(a, T::from_f64(1.5), x, T::from_f64(-0.5), y0).unwrap();
    let c = crate::cpu::check(&r, got);
    assert!(c.ok, "{what}: row {} off", c.worst_row);
}

/// The device timer on real candidates: every candidate is timed, the kept device copy is the
/// winner's and computes A·x.
#[test]
fn gpu_trial_times_each_candidate_and_keeps_the_winners_device_copy() {
    let _guard = crate::methods::testmats::gpu_test_lock();
    let Some(gpu) = gpu_or_skip("gpu_trial_times_each_candidate_and_keeps_the_winners_device_copy")
    else {
        return;
    };
    for (name, a) in gpu_matrices() {
        let cands = ["csr-vector", "csr-scalar", "merge"];
        let mut timer = GpuTimer::<f64>::new(gpu.clone(), a.nrows(), a.ncols()).unwrap();
        let out = run_trial(&cands, |m| m.prepare_f64(&a, &Params::new()), &mut timer).unwrap();
        let times: Vec<(&str, f64)> = out
            .entries
            .iter()
            .map(|e| (e.method, e.outcome.as_ref().unwrap().1))
            .collect();
        assert_eq!(times.len(), 3, "{name}");
        assert!(
            times.iter().all(|(_, us)| *us > 0.0 && us.is_finite()),
            "{name}: {times:?}"
        );
        let fastest = times.iter().min_by(|a, b| a.1.total_cmp(&b.1)).unwrap().0;
        assert_eq!(out.winner, fastest, "{name}");
        let dl = out.device.expect("the winner's device copy is kept");
        let (x, y0) = crate::methods::testmats::vectors::<f64>(a.nrows(), a.ncols(), 5);
        let dx = gpu.upload(&x).unwrap();
        let mut dy = gpu.upload(&y0).unwrap();
        dl.run(&gpu, 1.5, &dx, -0.5, &mut dy).unwrap();
        let mut got = vec![0.0; a.nrows()];
        gpu.download(&dy, &mut got).unwrap();
        check_against_oracle(&format!("trial winner on {name}"), &a, &got, &x, &y0);
    }
}

/// `auto` through a plan, model and trial, all methods and deterministic ones, f64 and f32:
/// the result matches the oracle, a trial is reported when it ran, and a deterministic choice
/// repeats bit for bit.
#[test]
fn gpu_auto_plans_in_both_modes_match_the_oracle() {
    let _guard = crate::methods::testmats::gpu_test_lock();
    if gpu_or_skip("gpu_auto_plans_in_both_modes_match_the_oracle").is_none() {
        return;
    }
    for (name, a) in gpu_matrices() {
        for mode in ["model", "trial"] {
            for det in ["0", "1"] {
                let params = Params::parse([
                    format!("mode={mode}").as_str(),
                    format!("deterministic={det}").as_str(),
                    "calls=1000000000",
                    "trial=3",
                ])
                .unwrap();
                plan_case(&format!("{name} {mode} det={det}"), &a, &params);
                plan_case(
                    &format!("{name} {mode} det={det} f32"),
                    &a.cast::<f32>(),
                    &params,
                );
            }
        }
    }
}

fn plan_case<T: crate::methods::PrepareFor>(what: &str, a: &Csr<T>, params: &Params) {
    let opts = crate::methods::PlanOptions {
        params: params.clone(),
        backend: Some(crate::methods::Backend::Gpu),
        ..Default::default()
    };
    let mut plan = crate::methods::Plan::new("auto", a, &opts).unwrap();
    let notes = plan.layout().notes();
    let info = plan.chosen().expect("auto's typed choice").info();
    let chosen = info.name.to_string();
    assert!(
        notes.iter().any(|(k, v)| k == CHOSE_NOTE && *v == chosen),
        "{what}: the note does not name the typed choice {chosen}: {notes:?}"
    );
    assert_eq!(plan.deterministic(), info.deterministic, "{what}");
    let trial = notes.iter().find(|(k, _)| k == "auto trial");
    let mode_trial = params.iter().any(|(k, v)| k == "mode" && v == "trial");
    if !mode_trial {
        assert!(trial.is_none(), "{what}");
    } else if let Some((_, t)) = trial {
        assert!(t.contains(&chosen), "{what}: {t}");
        assert!(
            plan.layout()
                .prep_stages()
                .iter()
                .any(|(s, _)| *s == "auto trial"),
            "{what}"
        );
    }
    let det = params.iter().any(|(k, v)| k == "deterministic" && v == "1");
    if det {
        assert!(info.deterministic, "{what}: chose {chosen}");
    }
    let (x, y0) = crate::methods::testmats::vectors::<T>(a.nrows(), a.ncols(), 9);
    let mut y = y0.clone();
    plan.apply(T::from_f64(1.5), &x, T::from_f64(-0.5), &mut y)
        .unwrap();
    check_against_oracle(&format!("{what} ({chosen})"), a, &y, &x, &y0);
    if det {
        let mut again = y0.clone();
        plan.apply(T::from_f64(1.5), &x, T::from_f64(-0.5), &mut again)
            .unwrap();
        assert!(
            y.iter()
                .zip(&again)
                .all(|(p, q)| p.to_bits_u64() == q.to_bits_u64()),
            "{what}: {chosen} did not repeat bit for bit"
        );
    }
}

#[test]
fn the_split_is_by_family_stable_and_near_half() {
    use model::{family, split_of, Split};
    // near-duplicates fall on one side
    for (a, b) in [
        ("bcspwr01", "bcspwr10"),
        ("delaunay_n10", "delaunay_n15"),
        ("uniform:4000000,16", "uniform:30000000;2"),
        ("poisson3d:160", "poisson3d:20"),
    ] {
        assert_eq!(family(a), family(b));
        assert_eq!(split_of(a), split_of(b), "{a} / {b}");
    }
    // fixed by the name alone (docs/results/tuning-split.md lists the split): the hash and the
    // share must not drift
    for (m, s) in [
        ("kron:21", Split::Tune),
        ("powerlaw:4000000,8", Split::Tune),
        ("poisson3d:160", Split::Test),
        ("uniform:4000000,16", Split::Test),
        ("poisson2d:1250", Split::Tune),
        ("bcsstk33", Split::Tune),
        ("copter2", Split::Tune),
        ("G3_circuit", Split::Test),
    ] {
        assert_eq!(split_of(m), s, "{m}");
    }
    // the shipped table's families: neither side below a third
    let m = Model::shipped().unwrap();
    let mut fams: Vec<String> = m.samples.iter().map(|s| family(&s.matrix)).collect();
    fams.sort();
    fams.dedup();
    let tune = fams.iter().filter(|f| split_of(f) == Split::Tune).count();
    assert!(
        3 * tune >= fams.len() && 3 * (fams.len() - tune) >= fams.len(),
        "{tune} of {}",
        fams.len()
    );
}

#[test]
fn the_parameter_defaults_are_the_tuned_constants() {
    let default = |key: &str| PARAMS.iter().find(|p| p.key == key).unwrap().default;
    assert_eq!(default("k"), model::Knobs::SHIPPED.k.to_string());
    assert_eq!(default("trial"), DEFAULT_TRIAL.to_string());
}

#[test]
fn the_large_test_suite_is_held_out_from_the_training_table() {
    let m = Model::shipped().unwrap();
    for spec in crate::bench::suites::LARGE_TEST {
        let name = spec.replace(',', ";");
        assert!(
            m.samples.iter().all(|s| s.matrix != name),
            "{spec} is in the training table"
        );
    }
}

#[test]
fn the_large_train_and_large_test_suites_are_disjoint_and_valid() {
    use crate::bench::suites::{GPU_LARGE, LARGE_TEST, LARGE_TRAIN};
    for spec in LARGE_TRAIN {
        assert!(
            !LARGE_TEST.contains(spec) && !GPU_LARGE.contains(spec),
            "{spec}"
        );
        crate::gen::parse_spec(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    }
}

/// A GPU-only choice gets a `csr` (or, on 64-bit offsets, csr-vector) layout for the CPU path
/// only when `cpu_fallback` asks for it
/// (a GPU plan turns it off and saves a copy of the matrix); without it the CPU path is the chosen
/// method's own refusal, never a wrong answer.
#[test]
fn the_cpu_fallback_is_built_only_when_asked() {
    let a = crate::gen::generate::<f64>("poisson2d:30").unwrap();
    // the methods prepared, in order, so the fallback's name is checked, not only its answer
    let asked = std::cell::RefCell::new(Vec::new());
    let delegate = |m: &'static dyn Method| {
        asked.borrow_mut().push(m.info().name);
        m.prepare_f64(&a, &Params::new())
    };
    let choice = || Choice {
        method: "cusparse-alg1",
        predicted_us: None,
        reason: "test".into(),
        candidates: vec!["cusparse-alg1"],
    };
    let inner = || delegate(find("cusparse-alg1").unwrap()).unwrap();
    let x = vec![1.0; a.ncols()];
    let mut y = vec![0.0; a.nrows()];
    let r = crate::cpu::oracle_spmv(&a, 1.0, &x, 0.0, &vec![0.0; a.nrows()]).unwrap();
    // `csr` on 32-bit offsets, csr-vector's mirror on 64-bit ones (prepare_wide)
    for fallback in ["csr", "csr-vector"] {
        let inner = inner();
        asked.borrow_mut().clear();
        let with = finish(choice(), inner, None, None, (Some(fallback), SpmmOffer::default()), &delegate);
        let with = with.unwrap();
        assert_eq!(*asked.borrow(), [fallback], "the fallback prepared");
        y.fill(f64::NAN);
        with.run_cpu(1.0, &x, 0.0, &mut y).unwrap();
        assert!(crate::cpu::check(&r, &y).ok, "{fallback}");
    }
    let without = finish(choice(), inner(), None, None, (None, SpmmOffer::default()), &delegate).unwrap();
    assert!(matches!(
        without.run_cpu(1.0, &x, 0.0, &mut y),
        Err(Error::MethodUnsupported { .. })
    ));
    assert!(parse(&Params::parse(["cpu_fallback=maybe"]).unwrap()).is_err());
}

/// `spmm=1` with the other defaults.
fn spmm_on() -> SpmmOffer {
    SpmmOffer {
        on: true,
        ..Default::default()
    }
}

/// With `spmm=1` auto offers the multi-vector choice ([`MultiKernel::Auto`]) on the chosen
/// layout's CSR, or on a kept `csr` copy when the choice has none (the copy takes new values
/// through `reencode_values`, which `update_values` calls first, and the chosen layout keeps
/// its own update path); with `spmm=0` only the chosen layout's own kernel, and no copy.
#[test]
fn the_spmm_copy_is_kept_only_when_needed_and_asked() {
    use crate::methods::spmm::MultiKernel;
    let a = crate::gen::generate::<f64>("powerlaw:2000,6").unwrap();
    let delegate = |m: &'static dyn Method| m.prepare_f64(&a, &Params::new());
    for (name, own) in [
        ("csr-scalar", None),
        ("merge", Some(MultiKernel::Merge)),
        ("csr-vector", Some(MultiKernel::RowSplit)),
    ] {
        let choice = || Choice {
            method: find(name).unwrap().info().name,
            predicted_us: None,
            reason: "test".into(),
            candidates: vec![],
        };
        let inner = || delegate(find(name).unwrap()).unwrap();
        let mut on = finish(choice(), inner(), None, None, (None, spmm_on()), &delegate).unwrap();
        let src = on.multi().expect("spmm=1 offers the choice");
        assert_eq!(src.kernel, MultiKernel::Auto);
        assert_eq!((src.a.nnz(), src.a.vals()), (a.nnz(), a.vals()));
        assert!(on.values_mut().is_some(), "{name}: the chosen layout's update path");
        let doubled: Vec<f64> = a.vals().iter().map(|v| 2.0 * v).collect();
        assert!(on.reencode_values(a.pattern(), &doubled).is_none());
        let src = on.multi().unwrap();
        if own.is_none() {
            assert_eq!(src.a.vals(), &doubled[..], "{name}: the copy took the new values");
        }
        let off = finish(choice(), inner(), None, None, (None, SpmmOffer::default()), &delegate).unwrap();
        assert_eq!(off.multi().map(|s| s.kernel), own, "{name}");
    }
}

/// `auto` (`spmm=1`) offers csr-packed's k-vector kernel to its SpMM trial whatever method it
/// chose when the matrix packs well ([`packs_well`]): the packed layout is made on the first
/// ask (the trial's), its time is a prep stage and counted by `late_prep` (and so by
/// `Plan::prep_times`), and its note says what was found. A matrix that packs poorly (random
/// columns, distinct values) gets no candidate; `spmm=0` makes nothing; when auto chose
/// `csr-packed` its own kernel is the candidate and nothing more is made.
#[test]
fn the_packed_spmm_candidate_is_offered_when_the_matrix_packs_well() {
    use crate::methods::spmm::{auto_candidates, MultiKernel, MultiPath};
    let packed = MultiPath::Kernel(MultiKernel::Packed);
    let stage = |l: &dyn Layout<f32>| l.prep_stages().iter().any(|(s, _)| *s == PACKED_NOTE);
    let note = |l: &dyn Layout<f32>| {
        l.notes()
            .into_iter()
            .find(|(k, _)| k == PACKED_NOTE)
            .map(|(_, v)| v)
    };
    for (spec, chosen, well) in [
        ("stencil27:12", "csr-vector", true),
        ("poisson2d:40", "merge", true),
        ("uniform:3000,8", "csr-vector", false),
        ("stencil27:12", "csr-packed", true),
    ] {
        let a = crate::gen::generate::<f32>(spec).unwrap();
        let delegate = |m: &'static dyn Method| m.prepare_f32(&a, &Params::new());
        let choice = || Choice {
            method: find(chosen).unwrap().info().name,
            predicted_us: None,
            reason: "test".into(),
            candidates: vec![],
        };
        let what = format!("{spec} {chosen}");
        let inner = delegate(find(chosen).unwrap()).unwrap();
        let off = SpmmOffer::default();
        let l = finish(choice(), inner, None, None, (None, off), &delegate).unwrap();
        assert!(l.multi_extra().is_none() && l.late_prep().is_zero(), "{what} spmm=0");
        let inner = delegate(find(chosen).unwrap()).unwrap();
        let l = finish(choice(), inner, None, None, (None, spmm_on()), &delegate).unwrap();
        assert!(!stage(l.as_ref()) && l.late_prep().is_zero(), "{what}: made ahead");
        let c = auto_candidates(l.as_ref());
        assert_eq!(c.paths.contains(&packed), well, "{what}: {:?}", c.paths);
        if chosen == "csr-packed" {
            assert!(l.multi_extra().is_none() && !stage(l.as_ref()), "{what}: made twice");
            continue;
        }
        assert!(stage(l.as_ref()), "{what}: no prep stage");
        let n = note(l.as_ref()).unwrap_or_else(|| panic!("{what}: no note"));
        assert_eq!(n.contains("not a candidate"), !well, "{what}: {n}");
        assert_eq!(l.multi_extra().is_some(), well, "{what}");
    }
    // the plan counts it as preparation
    let a = crate::gen::generate::<f32>("stencil27:12").unwrap();
    let opts = crate::methods::PlanOptions {
        backend: Some(crate::methods::Backend::Cpu),
        ..Default::default()
    };
    let plan = crate::methods::Plan::new("auto", &a, &opts).unwrap();
    let before = plan.prep_times().prepare;
    let _ = auto_candidates(plan.layout());
    assert_eq!(plan.prep_times().prepare, before + plan.layout().late_prep());
}

/// On the GPU: `auto`'s SpMM trial times csr-packed's kernel on a stencil in f32 whatever its
/// SpMV choice, the kept path's answer is the oracle's, and the packed layout's device copy is
/// gone when no shape kept it.
#[test]
fn gpu_autos_spmm_trial_offers_the_packed_kernel() {
    use crate::methods::spmm::{check_multi, oracle_multi, MultiKernel, MultiPath, MultiShape};
    let Some(_gpu) = gpu_or_skip("gpu_autos_spmm_trial_offers_the_packed_kernel") else {
        return;
    };
    let _lock = crate::testing::gpu_lock();
    let a = crate::gen::generate::<f32>("stencil27:40").unwrap();
    let mut plan = crate::methods::Plan::new("auto", &a, &Default::default()).unwrap();
    let packed = MultiPath::Kernel(MultiKernel::Packed);
    let mut kept = Vec::new();
    for shape in [MultiShape::row_major(8), MultiShape::col_major(4)] {
        let chosen = plan.prepare_multi(shape).unwrap();
        kept.push(chosen);
        let key = format!("spmm auto k={} {}", shape.k, shape.order);
        let notes = plan.multi_notes();
        let note = notes.iter().find(|(k, _)| *k == key).map(|(_, v)| v);
        let note = note.unwrap_or_else(|| panic!("no note {key}: {notes:?}"));
        assert!(note.contains("csr-packed"), "{note}");
        let x: Vec<f32> = (0..a.ncols() * shape.k).map(|i| (i % 7) as f32 - 3.0).collect();
        let y0: Vec<f32> = (0..a.nrows() * shape.k).map(|i| (i % 5) as f32).collect();
        let refs = oracle_multi(&a, 1.5, &x, -0.5, &y0, shape).unwrap();
        let mut y = y0.clone();
        assert_eq!(plan.apply_multi(1.5, &x, -0.5, &mut y, shape).unwrap(), chosen);
        let c = check_multi(&refs, &y, shape);
        assert!(c.check.ok, "{shape:?} {chosen}: row {}", c.check.worst_row);
    }
    let held = plan.with_multi(|_, st| st.held());
    assert_eq!(
        held.contains(&MultiKernel::Packed),
        kept.contains(&packed),
        "{held:?} held, {kept:?} kept"
    );
}

/// When auto chose `csr-packed`, its layout's own k-vector kernel is offered
/// ([`Layout::multi_layout`]): the path with `spmm=0`, one more candidate of the trial with
/// `spmm=1`; a choice without one offers none.
#[test]
fn the_chosen_layouts_own_spmm_kernel_is_offered() {
    use crate::methods::spmm::MultiKernel;
    let a = crate::gen::generate::<f64>("poisson2d:30").unwrap();
    let delegate = |m: &'static dyn Method| m.prepare_f64(&a, &Params::new());
    for (name, own) in [("csr-packed", Some(MultiKernel::Packed)), ("merge", None)] {
        let choice = || Choice {
            method: find(name).unwrap().info().name,
            predicted_us: None,
            reason: "test".into(),
            candidates: vec![],
        };
        for spmm in [false, true] {
            let inner = delegate(find(name).unwrap()).unwrap();
            let l = finish(choice(), inner, None, None, (None, SpmmOffer { on: spmm, ..Default::default() }), &delegate).unwrap();
            assert_eq!(l.multi_layout().map(|o| o.kernel()), own, "{name} spmm={spmm}");
        }
    }
}

/// The method `auto` chose is a typed value ([`Layout::chosen`], [`crate::Plan::chosen`]) that
/// agrees with the `auto chose` note people read, for choices the model can make on any machine
/// (built as `prepare` builds them, through `finish`), and through a CPU plan, whose
/// determinism is the chosen method's.
#[test]
fn autos_typed_choice_is_present_and_matches_the_note() {
    let a = crate::gen::generate::<f64>("powerlaw:2000,6").unwrap();
    let delegate = |m: &'static dyn Method| m.prepare_f64(&a, &Params::new());
    for name in ["csr-vector", "merge", "csr-packed", "cusparse-alg2", "csr"] {
        let choice = Choice {
            method: find(name).unwrap().info().name,
            predicted_us: None,
            reason: "test".into(),
            candidates: vec![],
        };
        let inner = delegate(find(name).unwrap()).unwrap();
        let l = finish(choice, inner, None, None, (Some("csr"), SpmmOffer::default()), &delegate).unwrap();
        let typed = l.chosen().expect("auto reports its choice").info().name;
        assert_eq!(typed, name);
        let noted: Vec<_> = l
            .notes()
            .into_iter()
            .filter(|(k, _)| k == CHOSE_NOTE)
            .collect();
        assert_eq!(noted, [(CHOSE_NOTE.to_string(), name.to_string())]);
    }
    let cpu = crate::methods::PlanOptions {
        params: Params::new(),
        backend: Some(crate::methods::Backend::Cpu),
        ..Default::default()
    };
    let plan = crate::methods::Plan::new("auto", &a, &cpu).unwrap();
    let chosen = plan
        .chosen()
        .expect("auto's plan reports its choice")
        .info();
    assert!(plan
        .layout()
        .notes()
        .iter()
        .any(|(k, v)| k == CHOSE_NOTE && v == chosen.name));
    assert_eq!(plan.deterministic(), chosen.deterministic);
    // a method that is its own reports no choice
    let csr = crate::methods::Plan::new("csr", &a, &cpu).unwrap();
    assert!(csr.chosen().is_none() && csr.deterministic());
}

#[test]
fn auto_samples_the_x_share_only_where_x_is_larger_than_l2() {
    let a = crate::gen::generate::<f64>("poisson2d:64").unwrap();
    assert_eq!(sampled_x_share(&a, Precision::F64, true), None);
    let s = sampled_x_share(&a, Precision::F64, false).unwrap();
    let exact = MatrixStats::of(&a).with_x_sectors(&a).x_share(8).unwrap();
    assert_eq!(s, exact, "128 chunks are all sampled");
    let s32 = sampled_x_share(&a, Precision::F32, false).unwrap();
    assert!(s32 < s, "f32 packs 8 entries a sector: {s32} vs {s}");
}

#[test]
fn features_from_the_row_statistics_equal_those_of_the_full_statistics() {
    for spec in [
        "poisson3d:12",
        "kron:10",
        "powerlaw:3000,6",
        "uniform:2000,9",
        "tall:900,300,3",
    ] {
        let a = crate::gen::generate::<f64>(spec).unwrap();
        let rows = crate::matrix::RowStats::of(&a);
        let full = MatrixStats::of(&a);
        assert_eq!(rows.bandwidth(), full.bandwidth, "{spec}");
        for (fits, share) in [(true, None), (false, Some(0.4)), (false, None)] {
            let r = Features::from_rows(&rows, fits, share);
            let f = Features::from_stats(&full, fits, Precision::F64, share);
            let bits = |x: &Features| x.0.map(f64::to_bits);
            assert_eq!(bits(&r), bits(&f), "{spec} fits={fits} share={share:?}");
        }
    }
}

/// A layout that may run on the CPU (`cpu_fallback=1`: a Plan on the CPU, a direct prepare)
/// keeps the model's choice, so two such plans of one matrix choose alike; a GPU layout
/// (`cpu_fallback=0`, as a GPU Plan sets) is trialled.
#[test]
fn gpu_a_layout_that_may_run_on_the_cpu_is_not_trialled() {
    let _guard = crate::methods::testmats::gpu_test_lock();
    if gpu_or_skip("gpu_a_layout_that_may_run_on_the_cpu_is_not_trialled").is_none() {
        return;
    }
    let a = crate::gen::generate::<f64>("poisson3d:40").unwrap();
    let cpu = choose(&a, &Params::parse(["calls=1000000000"]).unwrap()).unwrap();
    assert_eq!(cpu.candidates.len(), 1, "{:?}", cpu.candidates);
    assert!(cpu.reason.contains("no trial"), "{}", cpu.reason);
    let gpu = choose(
        &a,
        &Params::parse(["calls=1000000000", "cpu_fallback=0"]).unwrap(),
    )
    .unwrap();
    assert!(gpu.candidates.len() > 1, "{:?}", gpu.candidates);
}

/// cuSPARSE declares only f32 values under f64 vectors (it refuses bf16 A under f32 x at setup,
/// which made an all-cuSPARSE trial fail on the H200), and the model ranks only the methods
/// that read the plan's storage, so a narrow mode always gets a method that runs it.
#[test]
fn narrow_modes_choose_among_methods_that_run_them() {
    use crate::scalar::ValueStorage;
    let reads = |m: &str, s| find(m).unwrap().info().supports(s);
    // cuSPARSE declares only f32 values under f64 vectors: 13.0 refuses 16-bit A under f32 x
    for lib in ["cusparse-alg1", "cusparse-alg2", "cusparse"] {
        for storage in [ValueStorage::Bf16, ValueStorage::F16] {
            assert!(!reads(lib, storage), "{lib} {storage}");
        }
        for storage in [ValueStorage::F32, ValueStorage::Same] {
            assert!(reads(lib, storage), "{lib} {storage}");
        }
    }
    assert!(reads("merge", ValueStorage::Bf16) && !reads("teb", ValueStorage::Bf16));
    // the model ranks only the readers, in every narrow storage
    let a = crate::gen::generate::<f64>("powerlaw:3000,8").unwrap();
    let stats = crate::matrix::MatrixStats::of(&a);
    for storage in ["bf16", "f16", "f32"] {
        let kv = format!("storage={storage}");
        let params = Params::parse(["mode=model", kv.as_str()]);
        let e = model_explain(&stats, None, false, Precision::F32, &params.unwrap()).unwrap();
        let s: ValueStorage = storage.parse().unwrap();
        assert!(e.ranking.iter().all(|(n, _)| reads(n, s)), "{storage}");
        assert!(reads(e.choice.method, s), "{storage}: {}", e.choice.method);
    }
}

/// In a narrow value storage the model ranks only the methods that read it, so `auto` takes the
/// best predicted reader, not a fixed substitute for a non-reader (the H200 run of f32-f64 on
/// gpu-large: teb and csr-packed predicted first, csr-vector's warp per row taken instead at
/// 2.5-3.6x cuSPARSE's time).
#[test]
fn a_narrow_storage_ranks_only_its_readers() {
    use crate::matrix::MatrixStats;
    use crate::scalar::ValueStorage;
    let mut non_reader_first = 0;
    for spec in ["stencil27:24", "banded:60000,16", "blockdiag:2000,64", "poisson2d:300"] {
        let a = crate::gen::generate::<f64>(spec).unwrap();
        let stats = MatrixStats::of(&a);
        let explain = |p: &[&str]| {
            let params = Params::parse(p.iter().copied()).unwrap();
            model_explain(&stats, None, false, Precision::F64, &params).unwrap()
        };
        let free = explain(&["mode=model"]);
        let reads = |m: &str| find(m).unwrap().info().supports(ValueStorage::F32);
        let best_reader = free.ranking.iter().map(|(n, _)| *n).find(|n| reads(n));
        non_reader_first += usize::from(!reads(free.choice.method));
        let narrow = explain(&["mode=model", "storage=f32"]);
        assert!(narrow.ranking.iter().all(|(n, _)| reads(n)), "{spec}");
        assert_eq!(Some(narrow.choice.method), best_reader, "{spec}");
    }
    assert!(non_reader_first > 0, "no case where the model's first pick reads no f32 storage");
}
