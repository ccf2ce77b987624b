//! Every registered method's CPU executor against the serial f64 oracle, on the whole edge-case
//! corpus, in f32 and f64, with β = 0 (y filled with NaN, which must not leak) and β ≠ 0, and on
//! each corpus pattern's exact problem (small integers: the answer must match bit for bit).

use spmvkit::cpu::{check, check_exact, oracle_spmv, ExactProblem};
use spmvkit::methods::{registry, Backend, Plan, PlanOptions};
use spmvkit::{Csr, PrepareFor};

fn run_case<T: PrepareFor>(name: &str, a: &Csr<T>, method: &'static dyn spmvkit::methods::Method) {
    let info = method.info();
    let opts = PlanOptions {
        backend: Some(Backend::Cpu),
        ..Default::default()
    };
    let mut plan = Plan::with_method(method, a, &opts).unwrap_or_else(|e| {
        panic!(
            "{} on {name} ({}): prepare failed: {e}",
            info.name,
            std::any::type_name::<T>()
        )
    });
    let x = spmvkit::bench::test_vector::<T>(a.ncols(), 11);
    for &(alpha, beta) in &[(1.0, 0.0), (1.5, -0.5), (-2.0, 1.0)] {
        let y0: Vec<T> = if beta == 0.0 {
            vec![T::from_f64(f64::NAN); a.nrows()]
        } else {
            spmvkit::bench::test_vector::<T>(a.nrows(), 12)
        };
        let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
        let reference = oracle_spmv(a, alpha, &x, beta, &y0).expect("oracle");
        let mut y = y0.clone();
        plan.apply(alpha, &x, beta, &mut y).expect("apply");
        let c = check(&reference, &y);
        assert!(
            c.ok,
            "{} on {name} ({}), alpha={alpha}, beta={beta}: row {} off by {:.3e} (relative)",
            info.name,
            std::any::type_name::<T>(),
            c.worst_row,
            c.max_rel_err
        );
        // Repeated applies reuse the plan.
        let mut y2 = y0.clone();
        plan.apply(alpha, &x, beta, &mut y2).expect("apply again");
        assert!(
            check(&reference, &y2).ok,
            "{} second apply on {name}",
            info.name
        );
    }
    let p = ExactProblem::new(a, 5).expect("exact problem");
    let mut plan = Plan::with_method(method, &p.a, &opts).expect("prepare the exact problem");
    let mut y = p.y0.clone();
    plan.apply(p.alpha, &p.x, p.beta, &mut y).expect("apply");
    let c = check_exact(&p.reference, &y);
    assert!(
        c.ok,
        "{} on {name}'s exact problem ({}): row {} off by {:.3e} (relative)",
        info.name,
        std::any::type_name::<T>(),
        c.worst_row,
        c.max_rel_err
    );
}

#[test]
fn every_cpu_executor_matches_the_oracle_on_the_corpus() {
    let corpus = spmvkit::gen::corpus::edge_cases();
    assert!(corpus.len() >= 10, "corpus too small");
    for m in registry().iter().copied().filter(|m| m.info().cpu) {
        for (name, a) in &corpus {
            run_case::<f64>(name, a, m);
            run_case::<f32>(name, &a.cast::<f32>(), m);
        }
    }
}

#[test]
fn wrong_vector_lengths_are_errors() {
    let a = Csr::<f64>::identity(4).unwrap();
    for m in registry().iter().copied().filter(|m| m.info().cpu) {
        let opts = PlanOptions {
            backend: Some(Backend::Cpu),
            ..Default::default()
        };
        let mut plan = Plan::with_method(m, &a, &opts).unwrap();
        let mut y = vec![0.0; 4];
        let e = plan.apply(1.0, &[1.0; 3], 0.0, &mut y).unwrap_err();
        assert!(
            matches!(e, spmvkit::Error::DimensionMismatch { .. }),
            "{}: {e}",
            m.info().name
        );
        let mut y = vec![0.0; 5];
        let e = plan.apply(1.0, &[1.0; 4], 0.0, &mut y).unwrap_err();
        assert!(
            matches!(e, spmvkit::Error::DimensionMismatch { .. }),
            "{}: {e}",
            m.info().name
        );
    }
}

#[test]
fn unknown_method_and_parameter_are_errors() {
    let a = Csr::<f64>::identity(2).unwrap();
    let e = Plan::new("no-such-method", &a, &PlanOptions::default())
        .err()
        .unwrap();
    assert!(e.to_string().contains("unknown method"), "{e}");
    let opts = PlanOptions {
        params: spmvkit::methods::Params::parse(["bogus=1"]).unwrap(),
        backend: Some(Backend::Cpu),
        ..Default::default()
    };
    let e = Plan::new("csr", &a, &opts).err().unwrap();
    assert!(e.to_string().contains("bogus"), "{e}");
}
