use super::model::{Features, Model};
use super::*;
use crate::methods::testmats::{check_layout, suite};

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
            .choose(f, nnz, Precision::F64, allowed, calls, 3, |_| true)
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
        .choose(&small, 1000.0, Precision::F32, &all, 1.0, 3, |_| true)
        .is_none());
    // leave-one-out filter: without the small cluster the nearest are the large matrices
    let only_large = |s: &model::Sample| s.matrix.starts_with('l');
    let i = m.choose(&small, 1002.0, Precision::F64, &no_c, 1e12, 3, only_large);
    assert_eq!(m.methods[i.unwrap().0], "b");
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
        "mode=trial",
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

#[test]
fn without_a_gpu_auto_takes_csr_and_matches_the_oracle() {
    if Gpu::get().is_ok() {
        return; // the GPU suite checks `auto` through the registry
    }
    for (name, a) in suite() {
        let c = choose(&a, &Params::new()).unwrap();
        assert_eq!(c.method, "csr");
        let l = Auto.prepare_f64(&a, &Params::new()).unwrap();
        check_layout(&format!("auto on {name}"), &a, l.as_ref());
        assert!(l
            .notes()
            .iter()
            .any(|(k, v)| k == "auto chose" && v == "csr"));
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
        choice: Choice {
            method: "cusparse",
            predicted_us: Some(1.0),
            reason: "test".into(),
        },
    };
    check_layout("auto -> cusparse on the CPU", &a, &l);
    assert!(l.notes().iter().any(|(k, _)| k == "auto CPU path"));
}
