//! 64-bit row offsets on the GPU (issue #25, docs/offsets.md): every GPU method that declares
//! them, forced to 64 bits on the edge corpus and a stencil, in f32 and f64 and a narrower value
//! storage, with β = 0 over a y of NaN and β ≠ 0, against the oracle; csr-vector and csr-scalar
//! also bit for bit against their 32-bit plans (the same arithmetic in another index width).
//! cuSPARSE prints which index types it accepted.
//!
//! Without a GPU the tests are skipped with a `skipped:` line; with `SPMVKIT_REQUIRE_GPU=1` a
//! missing GPU fails.

mod common;

use spmvkit::matrix::round_values;
use spmvkit::methods::registry;
use spmvkit::{Backend, Csr, OffsetWidth, Offsets, Plan, PlanOptions, PrepareFor, ValueStorage};

fn opts(w: OffsetWidth, values: ValueStorage) -> PlanOptions {
    PlanOptions {
        backend: Some(Backend::Gpu),
        offsets: Offsets::Forced(w),
        values,
        ..Default::default()
    }
}

fn cases() -> Vec<(String, Csr<f64>)> {
    let mut v = spmvkit::gen::corpus::edge_cases();
    v.push((
        "poisson3d:20".into(),
        spmvkit::gen::generate::<f64>("poisson3d:20").unwrap(),
    ));
    v
}

/// `method` with 64-bit offsets in the mode (`T`, `values`) over every case.
fn wide<T: PrepareFor>(method: &str, values: ValueStorage) {
    let bitwise = matches!(method, "csr-vector" | "csr-scalar");
    for (case, a) in cases() {
        let a: Csr<T> = a.cast();
        let what = format!("{method} {values}-{} on {case}", T::PRECISION);
        let Ok((stored, _)) = round_values(&a, values) else {
            continue;
        };
        let mut p64 = Plan::new(method, &a, &opts(OffsetWidth::W64, values))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(p64.offsets(), OffsetWidth::W64, "{what}");
        if case == "poisson3d:20" {
            if let Some((_, v)) = p64
                .layout()
                .notes()
                .iter()
                .find(|(k, _)| k == "index types")
            {
                eprintln!("{what}: cuSPARSE index types: {v}");
            }
        }
        let mut p32 =
            bitwise.then(|| Plan::new(method, &a, &opts(OffsetWidth::W32, values)).unwrap());
        common::check_calls(&what, &mut p64, p32.as_mut(), &stored);
    }
}

#[test]
fn gpu_every_method_with_64_bit_offsets() {
    let Some((_gpu, _guard)) = common::gpu_or_skip("gpu_every_method_with_64_bit_offsets") else {
        return;
    };
    let methods: Vec<&str> = registry()
        .iter()
        .map(|m| m.info())
        .filter(|i| i.gpu && i.offsets64)
        .map(|i| i.name)
        .collect();
    for must in [
        "csr-vector",
        "csr-scalar",
        "cusparse-alg1",
        "cusparse-alg2",
        "auto",
    ] {
        assert!(methods.contains(&must), "{methods:?}");
    }
    for m in &methods {
        wide::<f32>(m, ValueStorage::Same);
        wide::<f64>(m, ValueStorage::Same);
    }
    for m in ["csr-vector", "csr-scalar", "auto"] {
        wide::<f32>(m, ValueStorage::Bf16);
        wide::<f32>(m, ValueStorage::F16);
        wide::<f64>(m, ValueStorage::F32);
    }
}
