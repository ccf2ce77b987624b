//! The `Plan` API (issue #11 point 2): `update_values` against a fresh plan for every registered
//! method on the edge-case corpus, in f32 and f64, on the CPU and (gated) on the GPU; which
//! methods take the gather fast path; `apply_many` against single applies; `apply_device`.
//!
//! GPU tests are skipped with a `skipped:` line without a GPU (`spmvkit::testing`); with
//! `SPMVKIT_REQUIRE_GPU=1` a missing GPU fails.
//! They share the one GPU stream, so they take a lock.

mod common;

use spmvkit::cpu::{check, oracle_spmv};
use spmvkit::gen::corpus::edge_cases;
use spmvkit::methods::{registry, Method};
use spmvkit::{Backend, Csr, Plan, PlanOptions, PrepareFor, Scalar, ValueUpdate};

/// New values for the same pattern: a fixed, entry-dependent change of every value.
fn new_values<T: Scalar>(a: &Csr<T>) -> Vec<T> {
    a.vals()
        .iter()
        .enumerate()
        .map(|(k, v)| T::from_f64(v.to_f64() * -1.25 + 0.5 + (k % 7) as f64 * 0.125))
        .collect()
}

fn vectors<T: Scalar>(a: &Csr<T>) -> (Vec<T>, Vec<T>) {
    let x = (0..a.ncols())
        .map(|j| T::from_f64(1.0 - (j % 5) as f64 * 0.375))
        .collect();
    let y = (0..a.nrows())
        .map(|i| T::from_f64(0.25 + (i % 3) as f64 * 0.5))
        .collect();
    (x, y)
}

/// Updates values in a plan and compares one apply with a fresh plan on the new values and with
/// the oracle. Returns how the update went (`None`: the method does not fit the backend).
fn check_update<T: PrepareFor>(
    m: &'static dyn Method,
    name: &str,
    a64: &Csr<f64>,
    backend: Backend,
) -> Option<ValueUpdate> {
    let info = m.info();
    let a: Csr<T> = a64.cast();
    let opts = PlanOptions {
        backend: Some(backend),
        ..PlanOptions::default()
    };
    let mut plan = match Plan::<T>::with_method(m, &a, &opts) {
        Ok(p) => p,
        Err(spmvkit::Error::MethodUnsupported { .. }) => return None,
        Err(e) => panic!("{} on {name}: {e}", info.name),
    };
    let vals = new_values(&a);
    let how = plan
        .update_values(&vals)
        .unwrap_or_else(|e| panic!("{} on {name}: update_values: {e}", info.name));
    let b = Csr::with_pattern(a.pattern().clone(), vals).unwrap();
    let mut fresh = Plan::<T>::with_method(m, &b, &opts).unwrap();
    let (x, y0) = vectors(&b);
    let (alpha, beta) = (T::from_f64(1.5), T::from_f64(-0.5));
    let (mut y_up, mut y_fresh) = (y0.clone(), y0.clone());
    plan.apply(alpha, &x, beta, &mut y_up).unwrap();
    fresh.apply(alpha, &x, beta, &mut y_fresh).unwrap();
    let reference = oracle_spmv(&b, alpha, &x, beta, &y0).unwrap();
    let c = check(&reference, &y_up);
    assert!(
        c.ok,
        "{} on {name} ({}, {backend}, {how:?}): updated plan differs from the oracle at row {}",
        info.name,
        T::PRECISION,
        c.worst_row
    );
    if backend == Backend::Cpu || info.deterministic {
        let same = y_up
            .iter()
            .zip(&y_fresh)
            .all(|(u, f)| u.to_bits_u64() == f.to_bits_u64());
        assert!(
            same,
            "{} on {name} ({}, {backend}, {how:?}): updated plan differs from a fresh plan",
            info.name,
            T::PRECISION
        );
    }
    // A second update (the map is built now) goes the same way, except that a layout which
    // prepared again because its value codes could not hold the new values may re-encode the
    // old ones in place (csr-packed).
    let second = plan.update_values(a.vals()).unwrap();
    if !(how == ValueUpdate::Reprepared && second == ValueUpdate::Reencoded) {
        assert_eq!(second, how, "{} on {name}: second update", info.name);
    }
    Some(how)
}

/// Methods whose layout keeps values in one flat array must take the gather path.
const GATHERING: &[&str] = &[
    "csr",
    "csr-scalar",
    "csr-vector",
    "csr-light",
    "merge",
    "csc",
    "csr-overlap",
    "csr-full-overlap",
    "amf-csr",
    "fastload",
    "fastload-atomic",
    "teb",
    "teb-vector",
];

fn update_every_method(backend: Backend) {
    for m in registry() {
        let info = m.info();
        for (name, a) in edge_cases() {
            let h32 = check_update::<f32>(*m, &name, &a, backend);
            let h64 = check_update::<f64>(*m, &name, &a, backend);
            if GATHERING.contains(&info.name) {
                for h in [h32, h64].into_iter().flatten() {
                    assert_eq!(h, ValueUpdate::Gathered, "{} on {name}", info.name);
                }
            }
        }
    }
}

#[test]
fn update_values_matches_a_fresh_plan_for_every_method_on_the_cpu() {
    update_every_method(Backend::Cpu);
}

#[test]
fn gpu_update_values_matches_a_fresh_plan_for_every_method() {
    let Some(_g) = common::gpu_or_skip("gpu_update_values_matches_a_fresh_plan_for_every_method")
    else {
        return;
    };
    update_every_method(Backend::Gpu);
}

#[test]
fn update_values_rejects_a_wrong_length_and_notes_reprepare() {
    let a = spmvkit::gen::generate_f64("poisson2d:6").unwrap();
    let opts = PlanOptions {
        backend: Some(Backend::Cpu),
        ..PlanOptions::default()
    };
    let mut plan = Plan::new("csr", &a, &opts).unwrap();
    assert!(plan.update_values(&[1.0]).is_err());
    assert!(plan.value_update_note().is_none());
    let mut pbc = Plan::new("pbc", &a, &opts).unwrap();
    let how = pbc.update_values(&new_values(&a)).unwrap();
    if how == ValueUpdate::Reprepared {
        assert!(pbc.value_update_note().is_some());
    }
}

fn apply_many_on(backend: Backend) {
    let a = spmvkit::gen::generate_f64("poisson2d:9").unwrap();
    let opts = PlanOptions {
        backend: Some(backend),
        ..PlanOptions::default()
    };
    let mut plan = Plan::new("csr-vector", &a, &opts).unwrap();
    let xs: Vec<Vec<f64>> = (0..3)
        .map(|k| {
            (0..a.ncols())
                .map(|j| (j * (k + 1)) as f64 * 0.01)
                .collect()
        })
        .collect();
    let mut ys: Vec<Vec<f64>> = (0..3).map(|k| vec![k as f64; a.nrows()]).collect();
    let mut singles = ys.clone();
    for (x, y) in xs.iter().zip(singles.iter_mut()) {
        plan.apply(2.0, x, 0.5, y).unwrap();
    }
    let xr: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
    let mut yr: Vec<&mut [f64]> = ys.iter_mut().map(Vec::as_mut_slice).collect();
    plan.apply_many(2.0, &xr, 0.5, &mut yr).unwrap();
    assert_eq!(ys, singles);
    let mut short: Vec<&mut [f64]> = Vec::new();
    assert!(plan.apply_many(2.0, &xr, 0.5, &mut short).is_err());
}

#[test]
fn apply_many_equals_single_applies_on_the_cpu() {
    apply_many_on(Backend::Cpu);
}

#[test]
fn gpu_apply_many_and_apply_device() {
    let Some((gpu, _g)) = common::gpu_or_skip("gpu_apply_many_and_apply_device") else {
        return;
    };
    apply_many_on(Backend::Gpu);
    let a = spmvkit::gen::generate_f64("poisson3d:12").unwrap();
    let plan = Plan::new("merge", &a, &PlanOptions::default()).unwrap();
    assert_eq!(plan.backend(), Backend::Gpu);
    assert!(plan.gpu().is_some());
    let x: Vec<f64> = (0..a.ncols()).map(|j| (j % 11) as f64 - 5.0).collect();
    let dx = gpu.upload(&x).unwrap();
    let mut dy = gpu.upload(&vec![1.0; a.nrows()]).unwrap();
    plan.apply_device(1.0, &dx, 2.0, &mut dy).unwrap();
    let mut y = vec![0.0; a.nrows()];
    gpu.download(&dy, &mut y).unwrap();
    let reference = oracle_spmv(&a, 1.0, &x, 2.0, &vec![1.0; a.nrows()]).unwrap();
    assert!(check(&reference, &y).ok);
    let short = gpu.upload(&[0.0f64; 3]).unwrap();
    assert!(plan.apply_device(1.0, &short, 0.0, &mut dy).is_err());
}

#[test]
fn a_cpu_plan_has_no_gpu() {
    let a = Csr::<f64>::identity(4).unwrap();
    let opts = PlanOptions {
        backend: Some(Backend::Cpu),
        ..PlanOptions::default()
    };
    let plan = Plan::new("csr", &a, &opts).unwrap();
    assert!(plan.gpu().is_none());
}
