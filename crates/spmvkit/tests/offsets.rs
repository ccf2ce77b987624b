//! 64-bit row offsets on the CPU (issue #25, docs/offsets.md): the same matrix in both widths
//! (conversion, generators, oracle), plans forced to 64 bits on the edge corpus against the
//! oracle and bit for bit against 32 bits, the refusal of every method that does not take them
//! (in the harness too), and the limits past 2^31−1 nonzeros checked without allocating them.

#[allow(dead_code)]
mod common;

use spmvkit::bench::harness::{run_matrix, HarnessConfig, Silent};
use spmvkit::bench::{MeasureOptions, Status};
use spmvkit::cpu::{oracle_spmv, oracle_spmv_par};
use spmvkit::methods::registry;
use spmvkit::{
    Backend, Csr, Error, OffsetWidth, Offsets, Plan, PlanOptions, PrepareFor, ValueStorage,
};

fn forced(w: OffsetWidth, values: ValueStorage) -> PlanOptions {
    PlanOptions {
        backend: Some(Backend::Cpu),
        offsets: Offsets::Forced(w),
        values,
        ..Default::default()
    }
}

/// The methods that declare 64-bit offsets and run on the CPU (their mirrors).
const WIDE_CPU: [&str; 3] = ["csr-vector", "csr-scalar", "auto"];

fn edge_case_plans<T: PrepareFor>(values: ValueStorage) {
    for (case, a) in spmvkit::gen::corpus::edge_cases() {
        let a: Csr<T> = a.cast();
        let w = a.with_offsets::<u64>().unwrap();
        assert_eq!(w.with_offsets::<u32>().unwrap(), a, "{case}: round trip");
        assert_eq!(w.row_ptr().len(), a.nrows() + 1, "{case}");
        let (x, y0) = common::test_xy::<T>(a.ncols(), a.nrows());
        let (alpha, beta) = (T::from_f64(1.5), T::from_f64(-0.5));
        // the oracle reads either width alike
        let r32 = oracle_spmv(&a, alpha, &x, beta, &y0).unwrap();
        let r64 = oracle_spmv_par(&w, alpha, &x, beta, &y0).unwrap();
        assert_eq!(r32.y, r64.y, "{case}: oracle");
        for m in WIDE_CPU {
            let what = format!("{m} {values}-{} on {case}", T::PRECISION);
            let mut p64 = Plan::new(m, &a, &forced(OffsetWidth::W64, values)).unwrap();
            assert_eq!(p64.offsets(), OffsetWidth::W64, "{what}");
            let mut p32 = Plan::new(m, &w, &forced(OffsetWidth::W32, values)).unwrap();
            assert_eq!(p32.offsets(), OffsetWidth::W32, "{what}");
            let stored = spmvkit::matrix::round_values(&a, values).unwrap().0;
            // auto's 32-bit choice may be another method: no bitwise twin
            let twin = (m != "auto").then_some(&mut p32);
            common::check_calls(&what, &mut p64, twin, &stored);
        }
    }
}

/// Every case of the edge corpus, both precisions and a narrower value storage: forced 64-bit
/// offsets give the oracle's answer, bit for bit the 32-bit layout's, and a 64-bit matrix
/// narrows back to 32 bits when asked.
#[test]
fn the_edge_corpus_with_64_bit_offsets() {
    edge_case_plans::<f64>(ValueStorage::Same);
    edge_case_plans::<f32>(ValueStorage::Same);
    edge_case_plans::<f32>(ValueStorage::Bf16);
    edge_case_plans::<f64>(ValueStorage::F32);
}

/// Every method that does not declare 64-bit offsets is refused as unsupported, naming them;
/// `auto` on 64 bits chooses one that takes them; `Auto` keeps 32 bits on a small matrix given
/// with 64.
#[test]
fn methods_without_64_bit_offsets_refuse_them() {
    let a = spmvkit::gen::generate::<f64>("powerlaw:500,6").unwrap();
    let opts = forced(OffsetWidth::W64, ValueStorage::Same);
    let mut refused = 0;
    for m in registry() {
        let info = m.info();
        match Plan::new(info.name, &a, &opts) {
            Err(Error::MethodUnsupported { reason, .. }) if !info.offsets64 => {
                assert!(
                    reason.starts_with("unsupported: 64-bit row offsets"),
                    "{}: {reason}",
                    info.name
                );
                refused += 1;
            }
            // a GPU-only method that takes them says it needs the GPU
            Err(Error::MethodUnsupported { reason, .. }) if !info.cpu => {
                assert!(reason.contains("CPU"), "{}: {reason}", info.name)
            }
            Err(e) => panic!("{}: {e}", info.name),
            Ok(p) => {
                assert!(info.offsets64, "{} ran with 64-bit offsets", info.name);
                assert_eq!(p.offsets(), OffsetWidth::W64);
                if let Some(c) = p.chosen() {
                    assert!(c.info().offsets64, "auto chose {}", c.info().name);
                }
            }
        }
    }
    assert!(refused >= 15, "{refused} refusals");
    let auto = Plan::new(
        "csr-vector",
        &a.with_offsets::<u64>().unwrap(),
        &PlanOptions {
            backend: Some(Backend::Cpu),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(auto.offsets(), OffsetWidth::W32);
    let reordered = PlanOptions {
        reorder: spmvkit::reorder::Reorder::By(spmvkit::reorder::Ordering::Rcm),
        ..opts.clone()
    };
    match Plan::new("csr-vector", &a, &reordered) {
        Err(e) => assert!(e.to_string().contains("reordering with 64-bit"), "{e}"),
        Ok(_) => panic!("a reordered plan with 64-bit offsets"),
    }
}

/// The harness with 64-bit offsets: the methods that take them verified, the others recorded
/// as unsupported, as the precision refusals are.
#[test]
fn the_harness_records_the_refusals() {
    let a = spmvkit::gen::generate::<f64>("powerlaw:2000,6").unwrap();
    let cfg = HarnessConfig {
        methods: vec!["csr-vector".into(), "merge".into(), "csr-scalar".into()],
        precisions: vec!["f64".parse().unwrap(), "bf16-f32".parse().unwrap()],
        measure: MeasureOptions {
            plan: forced(OffsetWidth::W64, ValueStorage::Same),
            warmup: 0,
            reps: 1,
            samples: 1,
            ..Default::default()
        },
        use_cache: false,
        multi: Vec::new(),
    };
    let m = run_matrix("pl", "powerlaw:2000,6", &a, &cfg, None, &mut Silent);
    for r in &m.results {
        let merge = r.method.starts_with("merge");
        let want = if merge {
            Status::Unsupported
        } else {
            Status::Ok
        };
        assert_eq!(
            r.status, want,
            "{} {}: {:?}",
            r.method, r.precision, r.error
        );
        if merge {
            let e = r.error.as_deref().unwrap_or_default();
            assert!(e.contains("64-bit row offsets"), "{e}");
        }
    }
    assert_eq!(m.results.len(), 6);
}

/// Both widths generate the same matrix, kind by kind (the kinds built in row chunks, a whole
/// kind widened after generation, and a renumbering).
#[test]
fn generators_give_the_same_matrix_in_both_widths() {
    for spec in [
        "uniform:3000,17",
        "poisson3d:9",
        "powerlaw:2000,5",
        "hugerow:500,3,400",
        "banded:700,9",
        "kron:9",
        "rgg:2000",
        "uniform:400,7,renumber=random",
        "empty:5,4",
    ] {
        let a = spmvkit::gen::generate::<f32>(spec).unwrap();
        let w = spmvkit::gen::generate_as::<f32, u64>(spec).unwrap();
        assert_eq!(w, a.with_offsets::<u64>().unwrap(), "{spec}");
    }
}

/// Past 2^31−1 nonzeros: 32-bit offsets refuse the count, 64-bit ones take it up to 2^40 and
/// check the memory first, estimating exactly the final CSR (no transient copy: the generator
/// needs no more than the matrix). Nothing of that size is allocated.
#[test]
fn counts_past_2_31_are_checked_before_allocating() {
    let spec = "uniform:30000000,100"; // 3·10^9 nonzeros
    match spmvkit::gen::generate::<f32>(spec) {
        Err(Error::TooLarge { what: "nnz", value }) => assert_eq!(value, 3_000_000_000),
        other => panic!("{spec} with 32-bit offsets: {other:?}"),
    }
    // 2·10^12 > 2^40
    let e = spmvkit::gen::generate_as::<f32, u64>("uniform:2000000000,1000").unwrap_err();
    assert!(e.to_string().contains("limit of 2^40"), "{e}");
    std::env::set_var(spmvkit::memory::LIMIT_VAR, "1G");
    let e = spmvkit::gen::generate_as::<f32, u64>(spec).unwrap_err();
    std::env::remove_var(spmvkit::memory::LIMIT_VAR);
    match e {
        Error::MemoryLimit { needed, .. } => {
            let csr = 8 * (30_000_000 + 1) + 3_000_000_000u64 * (4 + 4);
            assert_eq!(needed, csr, "the estimate is the final CSR");
        }
        other => panic!("{spec} under a 1 GiB limit: {other}"),
    }
    for (nnz, w) in [
        (i32::MAX as usize, OffsetWidth::W32),
        (i32::MAX as usize + 1, OffsetWidth::W64),
        (1 << 40, OffsetWidth::W64),
    ] {
        assert_eq!(Offsets::Auto.width_for(nnz).unwrap(), w, "{nnz}");
    }
    assert!(Offsets::Auto.width_for((1 << 40) + 1).is_err());
    let e = Offsets::Forced(OffsetWidth::W32)
        .width_for(1 << 31)
        .unwrap_err();
    assert!(matches!(e, Error::TooLarge { what: "nnz", .. }), "{e}");
    assert_eq!(
        Offsets::Forced(OffsetWidth::W64).width_for(5).unwrap(),
        OffsetWidth::W64
    );
}
