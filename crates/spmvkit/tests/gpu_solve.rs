//! The solvers on the GPU (issue #11 point 3): CG on a 3D Poisson problem and PageRank on a
//! Kronecker graph, for several SpMV methods (cuSPARSE included), with CUDA graphs and with
//! stream launches, against the CPU reference; deterministic methods give bitwise repeatable
//! runs, and graph and stream runs agree bit for bit.
//!
//! Without a GPU every test is skipped with a `skipped:` line (`spmvkit::testing`); with
//! `SPMVKIT_REQUIRE_GPU=1` a missing GPU fails.
//! The tests share one GPU stream, so they take a lock.

mod common;

use spmvkit::solve::{self, CgSystem, Launch, PageRankGraph, PageRankOptions, SolveOptions, Stop};
use spmvkit::{gen, Backend, Plan, PlanOptions, PrepareFor};

const METHODS: &[&str] = &[
    "auto",
    "csr-vector",
    "csr-scalar",
    "merge",
    "csr-light",
    "fastload",
    "teb",
    "csr-overlap",
    "csr-full-overlap",
    "cusparse",
    "cusparse-alg1",
    "cusparse-e2e",
];

fn gpu_plan<T: PrepareFor>(method: &str, a: &spmvkit::Csr<T>) -> Option<Plan<T>> {
    let opts = PlanOptions {
        backend: Some(Backend::Gpu),
        ..PlanOptions::default()
    };
    match Plan::new(method, a, &opts) {
        Ok(p) => Some(p),
        Err(spmvkit::Error::UnknownMethod { .. }) => {
            eprintln!("{method}: not registered, skipped");
            None
        }
        Err(e) => panic!("{method}: {e}"),
    }
}

fn cg_case<T: PrepareFor>(tol: f64, max_err: f64) {
    let a = gen::generate::<T>("poisson3d:24").unwrap();
    let b = CgSystem::ones_solution(&a).b;
    let cpu_opts = PlanOptions {
        backend: Some(Backend::Cpu),
        ..PlanOptions::default()
    };
    let mut cpu = Plan::new("csr", &a, &cpu_opts).unwrap();
    let base = SolveOptions {
        tol,
        ..SolveOptions::default()
    };
    let (x_ref, rep_ref) = solve::cg(&mut cpu, &b, &base).unwrap();
    assert_eq!(rep_ref.stop, Stop::Converged);
    for method in METHODS {
        let Some(mut plan) = gpu_plan(method, &a) else {
            continue;
        };
        let info = plan.info();
        let mut xs = Vec::new();
        for graph in [true, false, true] {
            let o = SolveOptions { graph, ..base };
            let (x, rep) = solve::cg(&mut plan, &b, &o).unwrap();
            eprintln!(
                "cg {method} {} graph={graph}: {:?} {} iters, res {:.2e}, {:.1} us/iter, notes {:?}",
                T::PRECISION,
                rep.launch,
                rep.iterations,
                rep.residual,
                rep.us_per_iter(),
                rep.notes
            );
            assert_eq!(rep.backend, Backend::Gpu);
            assert_eq!(rep.stop, Stop::Converged, "{method}");
            assert!(rep.residual <= tol, "{method}: {}", rep.residual);
            assert!(rep.launched >= rep.iterations);
            if !graph {
                assert_eq!(rep.launch, Launch::Stream);
            }
            let diff = x
                .iter()
                .zip(&x_ref)
                .map(|(u, v)| (u.to_f64() - v.to_f64()).abs())
                .fold(0.0, f64::max);
            let exact = x
                .iter()
                .map(|u| (u.to_f64() - 1.0).abs())
                .fold(0.0, f64::max);
            assert!(
                diff < max_err && exact < max_err,
                "{method}: {diff} {exact}"
            );
            xs.push(x);
        }
        if info.deterministic {
            assert_bitwise_equal(method, &xs);
        }
    }
}

/// The solutions of repeated runs of a deterministic method agree bit for bit.
fn assert_bitwise_equal<T: PrepareFor>(method: &str, xs: &[Vec<T>]) {
    for x in &xs[1..] {
        assert!(
            x.iter()
                .zip(&xs[0])
                .all(|(u, v)| u.to_bits_u64() == v.to_bits_u64()),
            "{method}: runs differ although the method is deterministic"
        );
    }
}

#[test]
fn gpu_cg_converges_to_the_cpu_reference_for_several_methods() {
    let Some(_g) = common::gpu_or_skip("gpu_cg_converges_to_the_cpu_reference_for_several_methods")
    else {
        return;
    };
    cg_case::<f64>(1e-9, 1e-6);
    cg_case::<f32>(1e-5, 1e-2);
}

#[test]
fn gpu_cg_reports_breakdown_and_max_iterations() {
    let Some(_g) = common::gpu_or_skip("gpu_cg_reports_breakdown_and_max_iterations") else {
        return;
    };
    let a = spmvkit::Csr::<f64>::new(2, 2, vec![0, 1, 2], vec![0, 1], vec![1.0, -1.0]).unwrap();
    let mut plan = gpu_plan("csr-vector", &a).unwrap();
    let (_, rep) = solve::cg(&mut plan, &[0.0, 1.0], &SolveOptions::default()).unwrap();
    assert_eq!(rep.stop, Stop::Breakdown);
    let a = gen::generate::<f64>("poisson2d:32").unwrap();
    let b = CgSystem::ones_solution(&a).b;
    let mut plan = gpu_plan("merge", &a).unwrap();
    let o = SolveOptions {
        max_iter: 7,
        check_every: 5,
        ..SolveOptions::default()
    };
    let (_, rep) = solve::cg(&mut plan, &b, &o).unwrap();
    assert_eq!(
        (rep.stop, rep.iterations, rep.launched),
        (Stop::MaxIterations, 7, 10)
    );
}

fn pagerank_case<T: PrepareFor>(spec: &str, tol: f64, max_l1: f64) {
    let adj = gen::generate::<T>(spec).unwrap();
    let g = PageRankGraph::from_adjacency(&adj).unwrap();
    let mut opts = PageRankOptions::default();
    opts.solve.tol = tol;
    let (r, rit) = solve::pagerank_reference(&adj, &opts);
    for method in METHODS {
        let Some(mut plan) = gpu_plan(method, &g.transition) else {
            continue;
        };
        let info = plan.info();
        let mut xs = Vec::new();
        for (graph, every) in [(true, 10), (false, 10), (true, 3)] {
            let mut o = opts;
            o.solve.graph = graph;
            o.solve.check_every = every;
            let (x, rep) = solve::pagerank(&mut plan, &g.dangling, &o).unwrap();
            eprintln!(
                "pagerank {method} {spec} {} graph={graph}: {:?} {} iters (ref {rit}), {:.1} us/iter, notes {:?}",
                T::PRECISION,
                rep.launch,
                rep.iterations,
                rep.us_per_iter(),
                rep.notes
            );
            assert_eq!(rep.stop, Stop::Converged, "{method}");
            let l1: f64 = x.iter().zip(&r).map(|(u, v)| (u.to_f64() - v).abs()).sum();
            let sum: f64 = x.iter().map(|u| u.to_f64()).sum();
            assert!(l1 < max_l1, "{method}: L1 error {l1}");
            assert!((sum - 1.0).abs() < max_l1, "{method}: sum {sum}");
            xs.push(x);
        }
        if info.deterministic {
            assert_bitwise_equal(method, &xs);
        }
    }
}

#[test]
fn gpu_pagerank_converges_to_the_cpu_reference_for_several_methods() {
    let Some(_g) =
        common::gpu_or_skip("gpu_pagerank_converges_to_the_cpu_reference_for_several_methods")
    else {
        return;
    };
    pagerank_case::<f64>("kron:14", 1e-9, 1e-8);
    pagerank_case::<f32>("kron:14", 1e-5, 1e-3);
}
