//! Re-measurement of CSR-Partial-Overlap's vector-size switch points (paper §5.2, Table 2) on
//! this GPU (issue #5). For each mean row length K on a grid from 1 to 256, a random matrix
//! `uniform:N,K` (K random columns in every row, N ≈ 12M/K, so about 12M nonzeros, well past
//! L2) is timed with every vector size forced in turn (`vector=1..32`, default everything
//! else), on the stream (CUDA events around 20 back-to-back calls, median of 5). It prints the
//! table of per-call times, the best size per K, and the switch points that lose least against
//! the best size over the grid (a monotone step function fitted by dynamic programming), for
//! f32 (the paper's precision) and f64. `#[ignore]`d: run it with
//! `cargo test --release --test gpu_overlap_switch -- --ignored --nocapture` on a GPU machine,
//! or as the bench `cargo bench --bench overlap_switch` (benches/overlap_switch.rs includes
//! this file and calls [`run`]).

use spmvkit::gpu::{TimingConfig, TimingMode};
use spmvkit::methods::Params;
use spmvkit::{gen, Backend, Csr, Plan, PlanOptions, PrepareFor};

const MEANS: [usize; 30] = [
    1, 2, 3, 4, 6, 8, 10, 12, 14, 16, 18, 20, 24, 28, 32, 36, 40, 48, 56, 64, 72, 80, 96, 112, 128,
    144, 160, 192, 224, 256,
];
const VECTORS: [u32; 6] = [1, 2, 4, 8, 16, 32];
const TARGET_NNZ: usize = 12_000_000;
const PAPER: [u32; 5] = [17, 34, 64, 122, 216];

fn time_one<T: PrepareFor>(a: &Csr<T>, vector: u32, verify: bool) -> f64 {
    let opts = PlanOptions {
        params: Params::parse([format!("vector={vector}").as_str()]).expect("params"),
        backend: Some(Backend::Gpu),
        ..Default::default()
    };
    let mut plan = Plan::new("csr-overlap", a, &opts).expect("plan");
    let x = spmvkit::bench::test_vector::<T>(a.ncols(), 1);
    if verify {
        let mut y = vec![T::zero(); a.nrows()];
        plan.apply(T::one(), &x, T::zero(), &mut y).expect("apply");
        let r = spmvkit::cpu::oracle_spmv(a, T::one(), &x, T::zero(), &vec![T::zero(); a.nrows()])
            .expect("oracle");
        assert!(
            spmvkit::cpu::check(&r, &y).ok,
            "vector={vector}: wrong result"
        );
    }
    plan.set_device_vectors(Some(&x), None).expect("x");
    let cfg = TimingConfig {
        warmup: 3,
        calls: 20,
        samples: 5,
    };
    plan.time(TimingMode::Stream, &cfg, T::one(), T::zero())
        .expect("timing")
        .median_us
}

/// Switch points of the monotone vector-size step function that minimises the summed time
/// relative to the best size at each mean (sp_k = first mean using 2^k lanes; 257 = never).
fn fit(times: &[[f64; 6]]) -> [u32; 5] {
    let n = times.len();
    let rel = |i: usize, v: usize| {
        let best = times[i].iter().cloned().fold(f64::INFINITY, f64::min);
        times[i][v] / best
    };
    let mut cost = vec![[0.0f64; 6]; n];
    let mut from = vec![[0usize; 6]; n];
    for (v, c) in cost[0].iter_mut().enumerate() {
        *c = rel(0, v);
    }
    for i in 1..n {
        for v in 0..6 {
            let (u, c) = (0..=v)
                .map(|u| (u, cost[i - 1][u]))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .expect("non-empty");
            cost[i][v] = c + rel(i, v);
            from[i][v] = u;
        }
    }
    let mut v = (0..6)
        .min_by(|&a, &b| cost[n - 1][a].total_cmp(&cost[n - 1][b]))
        .expect("non-empty");
    let mut choice = vec![0usize; n];
    for i in (0..n).rev() {
        choice[i] = v;
        v = from[i][v];
    }
    let mut sp = [257u32; 5];
    for (k, s) in sp.iter_mut().enumerate() {
        if let Some(i) = (0..n).find(|&i| choice[i] > k) {
            *s = MEANS[i] as u32;
        }
    }
    sp
}

/// Summed relative loss over the grid of a set of switch points.
fn loss(times: &[[f64; 6]], sp: &[u32; 5]) -> f64 {
    times
        .iter()
        .zip(MEANS)
        .map(|(t, m)| {
            let v = sp.iter().filter(|&&s| m as u32 >= s).count();
            let best = t.iter().cloned().fold(f64::INFINITY, f64::min);
            t[v] / best - 1.0
        })
        .sum::<f64>()
        / times.len() as f64
}

fn measure<T: PrepareFor>() {
    println!(
        "\n### {} — per-call µs (csr-overlap, defaults, vector forced)\n",
        T::PRECISION
    );
    println!("| mean K | rows | nnz | v=1 | v=2 | v=4 | v=8 | v=16 | v=32 | best | GFLOP/s |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut times = Vec::new();
    for &k in &MEANS {
        let n = TARGET_NNZ / k;
        let a: Csr<T> = gen::generate(&format!("uniform:{n},{k}")).expect("gen");
        let mut t = [0.0f64; 6];
        for (i, &v) in VECTORS.iter().enumerate() {
            t[i] = time_one(&a, v, i == 0);
        }
        let (bi, bt) = t
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(i, &x)| (i, x))
            .expect("six");
        let gflops = 2.0 * (a.nnz() + a.nrows()) as f64 / (bt * 1e-6) / 1e9;
        let cells: Vec<String> = t.iter().map(|x| format!("{x:.1}")).collect();
        println!(
            "| {k} | {} | {} | {} | {} | {gflops:.1} |",
            a.nrows(),
            a.nnz(),
            cells.join(" | "),
            VECTORS[bi]
        );
        times.push(t);
    }
    let sp = fit(&times);
    println!(
        "\n{}: fitted switch points {:?} (mean relative loss {:.2}%); paper's {:?}: {:.2}%",
        T::PRECISION,
        sp,
        100.0 * loss(&times, &sp),
        PAPER,
        100.0 * loss(&times, &PAPER)
    );
}

#[test]
#[ignore]
fn gpu_overlap_switch_points() {
    run();
}

/// The whole measurement: both precisions, printed as Markdown.
pub fn run() {
    let Some(gpu) = spmvkit::testing::gpu_or_skip("gpu_overlap_switch_points") else {
        return;
    };
    println!("device: {} ({} SMs)", gpu.name(), gpu.sm_count());
    measure::<f32>();
    measure::<f64>();
}
