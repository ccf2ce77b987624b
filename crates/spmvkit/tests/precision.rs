//! Precision modes (issue #25, docs/precision.md) on the CPU: values stored in f16 or bf16 under
//! f32 vectors, or f32 under f64, through `Plan` and the harness. Every method that reads a
//! narrower storage runs its CPU mirror on the edge corpus with β ≠ 0 in every mode it supports
//! and is checked against the oracle of the stored (rounded) values; the rounding is shown to
//! matter (the oracle of the given values disagrees on some matrix); methods that do not read a
//! storage refuse it as unsupported; values beyond f16's range are refused naming the entry,
//! values below its subnormals become zero and are counted.

use spmvkit::bench::harness::{run_matrix, with_storage, HarnessConfig, Silent};
use spmvkit::bench::{MeasureOptions, Status};
use spmvkit::cpu::{check, oracle_spmv};
use spmvkit::matrix::round_values;
use spmvkit::methods::registry;
use spmvkit::{
    Backend, Csr, Error, Plan, PlanOptions, Precision, PrecisionMode, PrepareFor, Scalar,
    ValueStorage,
};

fn cpu(values: ValueStorage) -> PlanOptions {
    PlanOptions {
        backend: Some(Backend::Cpu),
        values,
        ..Default::default()
    }
}

/// x and y0 in [-1, 1] from a fixed stream.
fn vectors<T: Scalar>(n: usize, m: usize) -> (Vec<T>, Vec<T>) {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        T::from_f64((s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0)
    };
    let x = (0..m).map(|_| next()).collect();
    let y = (0..n).map(|_| next()).collect();
    (x, y)
}

/// The methods with a CPU mirror that read values stored as `storage`.
fn readers(storage: ValueStorage) -> Vec<&'static str> {
    registry()
        .iter()
        .map(|m| m.info())
        .filter(|i| i.cpu && i.name != "auto" && i.values.contains(&storage))
        .map(|i| i.name)
        .collect()
}

/// `method` in the narrower mode of `storage` on every corpus matrix that fits it, with
/// (α, β) = (1.5, −0.75): y against the oracle of the stored values (tight), and whether any
/// matrix's y disagrees with the oracle of the given values (the rounding is seen). A matrix
/// that does not fit is refused naming its entry.
fn corpus_in_mode<T: PrepareFor>(method: &str, storage: ValueStorage) -> bool {
    let mut rounding_seen = false;
    // the corpus, and a matrix whose values no binary format holds exactly (thirds)
    let u = spmvkit::gen::generate::<f64>("uniform:500,400,6").unwrap();
    let thirds = u.vals().iter().map(|v| v / 3.0).collect();
    let thirds = Csr::with_pattern(u.pattern().clone(), thirds).unwrap();
    let mut cases = spmvkit::gen::corpus::edge_cases();
    cases.push(("uniform:500,400,6 / 3".into(), thirds));
    for (case, a) in cases {
        let a: Csr<T> = a.cast();
        let what = format!("{method} {storage}-{} on {case}", T::PRECISION);
        let stored = match round_values(&a, storage) {
            Ok((s, _)) => s,
            Err(e) => {
                let refused = Plan::new(method, &a, &cpu(storage));
                assert!(
                    matches!(&refused, Err(Error::InvalidArgument(m)) if m.contains("row")),
                    "{what}: {e}, but the plan said {:?}",
                    refused.err()
                );
                continue;
            }
        };
        let mut plan =
            Plan::new(method, &a, &cpu(storage)).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(plan.precision_mode().values, storage, "{what}");
        let (x, y0) = vectors::<T>(a.nrows(), a.ncols());
        let (alpha, beta) = (T::from_f64(1.5), T::from_f64(-0.75));
        let mut y = y0.clone();
        plan.apply(alpha, &x, beta, &mut y)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let want = oracle_spmv(&stored, alpha, &x, beta, &y0).expect("oracle");
        let c = check(&want, &y);
        assert!(
            c.ok,
            "{what}: row {} off by {:.3e} against the stored values' oracle",
            c.worst_row, c.max_rel_err
        );
        let given = oracle_spmv(&a, alpha, &x, beta, &y0).expect("oracle");
        rounding_seen |= !check(&given, &y).ok;
    }
    rounding_seen
}

#[test]
fn every_mode_on_the_edge_corpus() {
    for storage in ValueStorage::NARROW {
        let methods = readers(storage);
        assert!(
            ["csr-vector", "csr-scalar", "merge"]
                .iter()
                .all(|m| methods.contains(m)),
            "{storage}: {methods:?}"
        );
        for method in methods {
            let seen = match storage {
                ValueStorage::F32 => corpus_in_mode::<f64>(method, storage),
                _ => corpus_in_mode::<f32>(method, storage),
            };
            assert!(
                seen,
                "{method} {storage}: y matched the given values' oracle on every matrix: \
                 the values were not stored rounded"
            );
        }
    }
}

#[test]
fn modes_parse_and_print() {
    for m in PrecisionMode::ALL {
        assert_eq!(m.to_string().parse::<PrecisionMode>().unwrap(), m);
    }
    let bf: PrecisionMode = "bf16-f32".parse().unwrap();
    assert_eq!(
        (bf.vectors, bf.values),
        (Precision::F32, ValueStorage::Bf16)
    );
    assert_eq!(
        "f32-f32".parse::<PrecisionMode>().unwrap(),
        PrecisionMode::same(Precision::F32)
    );
    for bad in ["f16-f64", "bf16", "f64-f32", "bf16-f16", "x-f32", "f16-"] {
        let e = bad.parse::<PrecisionMode>();
        assert!(e.is_err(), "{bad}: {e:?}");
    }
    assert_eq!(
        with_storage("merge[items=3]", ValueStorage::F16),
        "merge[items=3;storage=f16]"
    );
    assert_eq!(
        with_storage("csr-vector", ValueStorage::Bf16),
        "csr-vector[storage=bf16]"
    );
    assert_eq!(with_storage("csr5", ValueStorage::Same), "csr5");
}

/// A method that does not read a storage refuses it as unsupported, naming the mode; a storage
/// that does not go with the vectors is refused; `auto` takes a method that reads it; the
/// variant spelling is the option's.
#[test]
fn unsupported_methods_refuse_and_auto_chooses_a_reader() {
    let a = spmvkit::gen::generate::<f32>("poisson2d:20").unwrap();
    for m in registry() {
        let info = m.info();
        if info.supports(ValueStorage::Bf16) || !info.cpu {
            continue;
        }
        match Plan::new(info.name, &a, &cpu(ValueStorage::Bf16)) {
            Err(Error::MethodUnsupported { method, reason }) => {
                assert_eq!(method, info.name);
                assert!(
                    reason.contains("unsupported precision mode bf16-f32")
                        && reason.contains("csr-vector"),
                    "{reason}"
                );
            }
            Err(e) => panic!("{}: {e}", info.name),
            Ok(_) => panic!("{}: accepted bf16 values", info.name),
        }
    }
    assert!(matches!(
        Plan::new("csr-vector", &a.cast::<f64>(), &cpu(ValueStorage::F16)),
        Err(Error::InvalidArgument(_))
    ));
    let auto = Plan::new("auto", &a, &cpu(ValueStorage::F16)).unwrap();
    let chose = auto.chosen().expect("auto's choice").info();
    assert!(chose.supports(ValueStorage::F16), "{}", chose.name);
    let v = Plan::new("csr-vector[storage=bf16]", &a, &cpu(ValueStorage::Same)).unwrap();
    assert_eq!(v.precision_mode().to_string(), "bf16-f32");
}

/// f16 overflow is refused naming the entry (bf16 takes it); underflow becomes zero, counted,
/// and the plan computes from the zero; new values go through the same rounding.
#[test]
fn overflow_underflow_and_updates_follow_the_rule() {
    let a = Csr::<f32>::new(
        2,
        3,
        vec![0, 2, 3],
        vec![0, 2, 1],
        vec![1.0, 70000.0, 1.0e-9],
    )
    .unwrap();
    match Plan::new("csr-vector", &a, &cpu(ValueStorage::F16)) {
        Err(Error::InvalidArgument(m)) => {
            assert!(
                m.contains("row 0, column 2") && m.contains("70000") && m.contains("f16"),
                "{m}"
            )
        }
        other => panic!("f16 overflow: {:?}", other.err()),
    }
    let mut plan = Plan::new("merge", &a, &cpu(ValueStorage::Bf16)).unwrap();
    let c = plan.conversion().expect("conversion");
    assert_eq!((c.to_zero, c.changed), (0, 2), "{c:?}");
    let small = Csr::<f32>::new(1, 2, vec![0, 2], vec![0, 1], vec![0.5, 1.0e-9]).unwrap();
    let mut p16 = Plan::new("csr-scalar", &small, &cpu(ValueStorage::F16)).unwrap();
    assert_eq!(p16.conversion().unwrap().to_zero, 1);
    let mut y = [0.0f32];
    p16.apply(1.0, &[1.0, 1.0e9], 0.0, &mut y).unwrap();
    assert_eq!(y, [0.5], "the underflowed entry is zero");
    // an update is rounded as the plan's values were
    let x = [1.0f32, 1.0, 1.0];
    plan.update_values(&[1.0 + 2f32.powi(-9), 3.0, 0.1])
        .unwrap();
    let mut y = [0.0f32; 2];
    plan.apply(1.0, &x, 0.0, &mut y).unwrap();
    assert_eq!(y, [4.0, 0.100097656], "bf16 rounding of the new values");
    assert!(plan.update_values(&[1.0, 3.0e38, 0.0]).is_ok());
    let mut h = Plan::new("csr-vector", &small, &cpu(ValueStorage::F16)).unwrap();
    assert!(matches!(
        h.update_values(&[1.0, 65536.0]),
        Err(Error::InvalidArgument(_))
    ));
}

/// A harness on the CPU, no warm-up and one call per sample: `methods` in the precision
/// modes `modes`, with β = `beta`.
fn cpu_harness(methods: &[&str], modes: &[&str], beta: f64) -> HarnessConfig {
    HarnessConfig {
        methods: methods.iter().map(|m| m.to_string()).collect(),
        precisions: modes.iter().map(|m| m.parse().unwrap()).collect(),
        measure: MeasureOptions {
            plan: PlanOptions {
                backend: Some(Backend::Cpu),
                ..Default::default()
            },
            warmup: 0,
            reps: 1,
            samples: 1,
            beta,
            ..Default::default()
        },
        use_cache: false,
        multi: Vec::new(),
    }
}

/// The harness runs a narrower mode as `NAME[storage=...]`: readers verified against the
/// stored values' oracle with the conversion in their notes, others unsupported.
#[test]
fn the_harness_records_narrow_modes() {
    let a = spmvkit::gen::generate::<f64>("powerlaw:2000,6").unwrap();
    let cfg = cpu_harness(
        &["csr-vector", "csr5", "merge[items=3]"],
        &["bf16-f32", "f32-f64"],
        0.5,
    );
    let m = run_matrix("pl", "powerlaw", &a, &cfg, None, &mut Silent);
    let got: Vec<(String, Precision, Status)> = m
        .results
        .iter()
        .map(|r| (r.method.clone(), r.precision, r.status))
        .collect();
    assert_eq!(
        got,
        [
            (
                "csr-vector[storage=bf16]".into(),
                Precision::F32,
                Status::Ok
            ),
            (
                "csr5[storage=bf16]".into(),
                Precision::F32,
                Status::Unsupported
            ),
            (
                "merge[items=3;storage=bf16]".into(),
                Precision::F32,
                Status::Ok
            ),
            ("csr-vector[storage=f32]".into(), Precision::F64, Status::Ok),
            (
                "csr5[storage=f32]".into(),
                Precision::F64,
                Status::Unsupported
            ),
            (
                "merge[items=3;storage=f32]".into(),
                Precision::F64,
                Status::Ok
            ),
        ]
    );
    let rec = m.results[0].record.as_ref().unwrap();
    // the byte model counts 2 bytes per bf16 value and 4 per f32 vector entry
    let (n, nnz) = (a.nrows() as u64, a.nnz() as u64);
    assert_eq!(rec.bytes_model, 6 * nnz + 4 * (n + 1) + 8 * n);
    let rec64 = m.results[3].record.as_ref().unwrap();
    assert_eq!(rec64.bytes_model, 8 * nnz + 4 * (n + 1) + 16 * n);
    let note = |k: &str| {
        rec.notes
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(note("values stored in").as_deref(), Some("bf16"));
    let err: f64 = note("conversion error of y")
        .and_then(|v| v.split(' ').next()?.parse().ok())
        .expect("y's conversion error");
    assert!(err > 1e-5 && err < 1e-2, "bf16's y error {err}");
}

/// A matrix with a value beyond f16's range is refused in f16-f32 for every method, as
/// unsupported, naming the entry; bf16-f32 takes it.
#[test]
fn the_harness_refuses_a_matrix_that_does_not_fit() {
    let a = Csr::<f64>::new(2, 2, vec![0, 1, 2], vec![1, 0], vec![1.0, 1.0e5]).unwrap();
    let cfg = cpu_harness(&["csr-vector", "merge"], &["f16-f32", "bf16-f32"], 0.0);
    let m = run_matrix("big", "big", &a, &cfg, None, &mut Silent);
    let status: Vec<Status> = m.results.iter().map(|r| r.status).collect();
    assert_eq!(
        status,
        [
            Status::Unsupported,
            Status::Unsupported,
            Status::Ok,
            Status::Ok
        ]
    );
    let why = m.results[0].error.as_deref().unwrap_or_default();
    assert!(
        why.contains("row 1, column 0") && why.contains("f16"),
        "{why}"
    );
}
