//! GPU tests of `csr-overlap` and `csr-full-overlap` (issue #5): every corpus matrix and a few
//! larger generated ones, f32 and f64, several parameter sets (small batches that start off
//! 16-byte boundaries, every forced vector size, 1–3 streams), β ≠ 0 and β = 0 over a NaN y,
//! against the oracle and bitwise against the CPU mirror; then repeated calls timed on the stream
//! and replayed from a CUDA graph (Full forks onto its own streams and joins back), checked
//! afterwards. Skips without a GPU unless `SPMVKIT_REQUIRE_GPU=1`.

mod common;

use spmvkit::cpu::{check, oracle_spmv};
use spmvkit::gpu::{TimingConfig, TimingMode};
use spmvkit::methods::Params;
use spmvkit::{gen, Backend, Csr, Plan, PlanOptions, PrepareFor, Scalar};

/// The tests share the one spmvkit stream (a graph capture on it must see no other work), so
/// they run one at a time.
fn opts(items: &[&str], backend: Backend) -> PlanOptions {
    PlanOptions {
        params: Params::parse(items.iter().copied()).expect("params"),
        backend: Some(backend),
        ..Default::default()
    }
}

fn vectors<T: Scalar>(a: &Csr<T>) -> (Vec<T>, Vec<T>) {
    (
        spmvkit::bench::test_vector::<T>(a.ncols(), 3),
        spmvkit::bench::test_vector::<T>(a.nrows(), 4),
    )
}

/// Runs one (method, params) on `a` on the GPU and the CPU mirror; returns failures.
fn check_one<T: PrepareFor>(name: &str, a: &Csr<T>, method: &str, params: &[&str]) -> Vec<String> {
    let mut fails = Vec::new();
    let what = format!("{method} {params:?} on {name} ({})", T::PRECISION);
    let (mut g, mut c) = match (
        Plan::new(method, a, &opts(params, Backend::Gpu)),
        Plan::new(method, a, &opts(params, Backend::Cpu)),
    ) {
        (Ok(g), Ok(c)) => (g, c),
        (g, c) => {
            return vec![format!(
                "{what}: plan failed: {:?} / {:?}",
                g.err(),
                c.err()
            )]
        }
    };
    let (x, y0) = vectors(a);
    for (alpha, beta) in [(1.5, -0.5), (1.0, 0.0), (-2.0, 1.0)] {
        let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
        let start: Vec<T> = if beta == T::zero() {
            vec![T::from_f64(f64::NAN); a.nrows()]
        } else {
            y0.clone()
        };
        let reference = oracle_spmv(a, alpha, &x, beta, &start).expect("oracle");
        let (mut yg, mut yc) = (start.clone(), start.clone());
        if let Err(e) = g.apply(alpha, &x, beta, &mut yg) {
            fails.push(format!("{what}: GPU apply: {e}"));
            continue;
        }
        c.apply(alpha, &x, beta, &mut yc).expect("cpu apply");
        let r = check(&reference, &yg);
        if !r.ok {
            fails.push(format!(
                "{what} a={alpha} b={beta}: row {} rel err {:.3e}",
                r.worst_row, r.max_rel_err
            ));
        }
        let diff = yg
            .iter()
            .zip(&yc)
            .filter(|(p, q)| p.to_bits_u64() != q.to_bits_u64())
            .count();
        if diff > 0 {
            fails.push(format!(
                "{what} a={alpha} b={beta}: {diff} rows differ bitwise from the CPU mirror"
            ));
        }
    }
    fails
}

const PARAM_SETS: &[(&str, &[&str])] = &[
    ("csr-overlap", &[]),
    ("csr-overlap", &["max_batch_size=37", "threads=64"]),
    ("csr-overlap", &["max_batch_size=100", "vector=1"]),
    ("csr-overlap", &["max_batch_size=100", "vector=2"]),
    ("csr-overlap", &["max_batch_size=100", "vector=4"]),
    ("csr-overlap", &["max_batch_size=100", "vector=8"]),
    ("csr-overlap", &["max_batch_size=100", "vector=16"]),
    (
        "csr-overlap",
        &["max_batch_size=100", "vector=32", "threads=256"],
    ),
    ("csr-overlap", &["ctas_per_sm=1", "threads=1024"]),
    ("csr-full-overlap", &[]),
    ("csr-full-overlap", &["stream_num=1"]),
    ("csr-full-overlap", &["stream_num=3", "max_batch_size=64"]),
    ("csr-overlap", &["long_chunk=256"]),
    ("csr-overlap", &["long_chunk=0"]),
    ("csr-overlap", &["long_chunk=0", "max_batch_size=64"]),
    ("csr-overlap", &["long_chunk=4096", "max_batch_size=64"]),
    (
        "csr-full-overlap",
        &["long_chunk=256", "max_batch_size=100"],
    ),
];

fn larger() -> Vec<(String, Csr<f64>)> {
    [
        "powerlaw:200000,8",
        "uniform:100000,40",
        "hugerow:100000,4",
        "banded:50000,20",
        "tall:300000,1000,3",
    ]
    .iter()
    .map(|s| (s.to_string(), gen::generate_f64(s).expect(s)))
    .collect()
}

#[test]
fn gpu_overlap_matches_oracle_and_mirror() {
    let Some((_gpu, _lock)) = common::gpu_or_skip("gpu_overlap_matches_oracle_and_mirror") else {
        return;
    };
    let mut fails = Vec::new();
    let mut runs = 0;
    let mut mats = gen::corpus::edge_cases();
    mats.extend(larger());
    for (name, a) in &mats {
        let a32: Csr<f32> = a.cast();
        for (m, p) in PARAM_SETS {
            fails.extend(check_one(name, a, m, p));
            fails.extend(check_one(name, &a32, m, p));
            runs += 2;
        }
    }
    eprintln!(
        "{runs} (matrix, method, params, precision) runs, {} failures",
        fails.len()
    );
    assert!(fails.is_empty(), "{}", fails.join("\n"));
}

/// Repeated calls on the stream and from a CUDA graph, β = 0, then y is checked.
fn timed_then_checked<T: PrepareFor>(
    a: &Csr<T>,
    method: &str,
    params: &[&str],
    graph: bool,
) -> String {
    let mut plan = Plan::new(method, a, &opts(params, Backend::Gpu)).expect("plan");
    let (x, _) = vectors(a);
    let alpha = T::from_f64(0.75);
    let reference = oracle_spmv(a, alpha, &x, T::zero(), &vec![T::zero(); a.nrows()]).unwrap();
    plan.set_device_vectors(Some(&x), None).expect("x");
    let cfg = TimingConfig {
        warmup: 2,
        calls: 10,
        samples: 3,
    };
    let mode = if graph {
        TimingMode::Graph
    } else {
        TimingMode::Stream
    };
    let t = plan
        .time(mode, &cfg, alpha, T::zero())
        .unwrap_or_else(|e| panic!("{method} graph={graph}: timing failed: {e}"));
    let mut y = vec![T::zero(); a.nrows()];
    plan.read_device_y(&mut y).expect("download");
    let r = check(&reference, &y);
    assert!(
        r.ok,
        "{method} graph={graph} ({}): row {} off by {:.3e}",
        T::PRECISION,
        r.worst_row,
        r.max_rel_err
    );
    format!(
        "{method} {params:?} {} {}: {:.1} µs",
        T::PRECISION,
        if graph { "graph" } else { "stream" },
        t.median_us
    )
}

#[test]
fn gpu_overlap_stream_and_graph_timing() {
    let Some((_gpu, _lock)) = common::gpu_or_skip("gpu_overlap_stream_and_graph_timing") else {
        return;
    };
    let a = gen::generate_f64("powerlaw:500000,12").expect("gen");
    let a32: Csr<f32> = a.cast();
    for (m, p) in [
        ("csr-overlap", &[][..]),
        ("csr-overlap", &["long_chunk=4096"][..]),
        ("csr-full-overlap", &[][..]),
        ("csr-full-overlap", &["long_chunk=4096"][..]),
    ] {
        for graph in [false, true] {
            eprintln!("{}", timed_then_checked(&a, m, p, graph));
            eprintln!("{}", timed_then_checked(&a32, m, p, graph));
        }
    }
}
