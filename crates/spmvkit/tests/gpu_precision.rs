//! Precision modes on the GPU (issue #25, docs/precision.md): every GPU method that reads values
//! stored narrower than x and y (f16 and bf16 under f32, f32 under f64), on the edge corpus and a
//! matrix of thirds, with β = 0 over a y of NaN and β ≠ 0, against the oracle of the stored
//! values; methods with a CPU mirror also bit for bit against it (the kernels widen each stored
//! value exactly, as the mirror's values are). cuSPARSE either computes the mode correctly or
//! refuses it as unsupported (the test prints which).
//!
//! Without a GPU the tests are skipped with a `skipped:` line; with `SPMVKIT_REQUIRE_GPU=1` a
//! missing GPU fails.

mod common;

use spmvkit::cpu::{check, oracle_spmv};
use spmvkit::matrix::round_values;
use spmvkit::methods::registry;
use spmvkit::{Backend, Csr, Error, Plan, PlanOptions, PrepareFor, ValueStorage};

fn opts(backend: Backend, values: ValueStorage) -> PlanOptions {
    PlanOptions {
        backend: Some(backend),
        values,
        ..Default::default()
    }
}

fn cases() -> Vec<(String, Csr<f64>)> {
    let u = spmvkit::gen::generate::<f64>("poisson3d:24").unwrap();
    let thirds = u.vals().iter().map(|v| v / 3.0 + 0.1).collect();
    let mut v = spmvkit::gen::corpus::edge_cases();
    v.push((
        "poisson3d:24 / 3 + 0.1".into(),
        Csr::with_pattern(u.pattern().clone(), thirds).unwrap(),
    ));
    v
}

/// `method` on the GPU in the mode of `storage` over every case; returns false when the method
/// refused the mode as unsupported (cuSPARSE), after printing why.
fn method_in_mode<T: PrepareFor>(method: &str, storage: ValueStorage) -> bool {
    let info = spmvkit::methods::find(method).unwrap().info();
    for (case, a) in cases() {
        let a: Csr<T> = a.cast();
        let what = format!("{method} {storage}-{} on {case}", T::PRECISION);
        let Ok((stored, _)) = round_values(&a, storage) else {
            continue; // refused on the host (tests/precision.rs)
        };
        let mut plan = match Plan::new(method, &a, &opts(Backend::Gpu, storage)) {
            Ok(p) => p,
            Err(Error::MethodUnsupported { reason, .. }) if method.starts_with("cusparse") => {
                eprintln!("{what}: unsupported: {reason}");
                return false;
            }
            Err(e) => panic!("{what}: {e}"),
        };
        let mut mirror = info
            .cpu
            .then(|| Plan::new(method, &a, &opts(Backend::Cpu, storage)).unwrap());
        let twin = mirror.as_mut().filter(|_| info.deterministic);
        common::check_calls(&what, &mut plan, twin, &stored);
    }
    true
}

#[test]
fn gpu_every_reader_in_every_narrow_mode() {
    let Some((_gpu, _guard)) = common::gpu_or_skip("gpu_every_reader_in_every_narrow_mode") else {
        return;
    };
    let mut refused = Vec::new();
    for storage in ValueStorage::NARROW {
        let methods: Vec<&str> = registry()
            .iter()
            .map(|m| m.info())
            .filter(|i| i.gpu && i.name != "auto" && i.values.contains(&storage))
            .map(|i| i.name)
            .collect();
        for must in ["csr-vector", "csr-scalar", "merge"] {
            assert!(methods.contains(&must), "{storage}: {methods:?}");
        }
        // cuSPARSE declares (and must run) f32 values under f64 vectors only
        assert_eq!(
            methods.contains(&"cusparse"),
            storage == ValueStorage::F32,
            "{storage}: {methods:?}"
        );
        for method in methods {
            let ran = match storage {
                ValueStorage::F32 => method_in_mode::<f64>(method, storage),
                _ => method_in_mode::<f32>(method, storage),
            };
            if !ran {
                refused.push(format!("{method} {storage}"));
            }
        }
    }
    eprintln!("cuSPARSE refused: {refused:?}");
    assert!(
        refused.iter().all(|r| r.starts_with("cusparse")),
        "{refused:?}"
    );
}

/// `auto` on the GPU in a narrower mode chooses (and times, in its trial) only methods that
/// read the storage, and its result is the stored values' product.
#[test]
fn gpu_auto_chooses_a_reader() {
    let Some((_gpu, _guard)) = common::gpu_or_skip("gpu_auto_chooses_a_reader") else {
        return;
    };
    let a = spmvkit::gen::generate::<f32>("powerlaw:20000,8").unwrap();
    let mut plan = Plan::new("auto", &a, &opts(Backend::Gpu, ValueStorage::Bf16)).unwrap();
    let chose = plan.chosen().expect("auto's choice").info();
    assert!(chose.supports(ValueStorage::Bf16), "{}", chose.name);
    let (stored, _) = round_values(&a, ValueStorage::Bf16).unwrap();
    let x: Vec<f32> = (0..a.ncols()).map(|j| (j % 5) as f32 - 2.0).collect();
    let mut y = vec![0.0f32; a.nrows()];
    plan.apply(1.0, &x, 0.0, &mut y).unwrap();
    let want = oracle_spmv(&stored, 1.0, &x, 0.0, &y.clone()).unwrap();
    assert!(check(&want, &y).ok, "auto chose {}", chose.name);
}
