//! CB-SpMV studies on the shared SuiteSparse matrices (`SPMVKIT_MATRICES`, else `shared/matrices`
//! beside the checkout; each with its pattern and reproducible random values in [-1, 1), since
//! pattern files would be all 1.0 and hide precision loss). Not tests:
//!
//! - `timing` (needs a GPU): per-call times next to csr-vector and merge, stream and CUDA graph,
//!   for the matrices of the notes (shared/notes/methods.md §0); the ablation switches on large
//!   generated matrices; csr-vector against cb-spmv on every shared matrix. One line per plan on
//!   stdout.
//! - `mirror`: the CPU mirror against the oracle on every shared matrix, default and gathered +
//!   balanced, several (α, β), β = 0 over a y of NaN; exits non-zero on a mismatch. Slow in a debug
//!   build.
//!
//! `cargo run --release -p spmvkit --example cb_spmv_report -- timing|mirror`

use std::error::Error;
use std::path::PathBuf;

use spmvkit::cpu::{check, oracle_spmv};
use spmvkit::gpu::{measure_copy_bandwidth, Gpu, TimingConfig, TimingMode};
use spmvkit::methods::Params;
use spmvkit::{Backend, Csr, Plan, PlanOptions};

const NAME: &str = "cb-spmv";

type Res<T> = Result<T, Box<dyn Error>>;

/// A small deterministic generator (64-bit LCG, high bits), as the unit tests use.
struct Lcg(u64);

impl Lcg {
    fn new(seed: u64) -> Self {
        let mut g = Lcg(seed);
        g.step();
        g
    }
    fn step(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0
    }
    /// Uniform in [-1, 1).
    fn value(&mut self) -> f64 {
        (self.step() >> 33) as f64 / (1u64 << 30) as f64 - 1.0
    }
}

/// Every shared matrix with random values, sorted by name.
fn shared_matrices() -> Res<Vec<(String, Csr<f64>)>> {
    let base = spmvkit::bench::suites::shared_matrices_dir()
        .filter(|d| d.is_dir())
        .ok_or("no shared matrices folder (set SPMVKIT_MATRICES)")?;
    // matrix_paths lists them sorted
    let files: Vec<PathBuf> = spmvkit::bench::suites::matrix_paths(&base)?
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".mtx.gz"))
        .collect();
    let mut out = Vec::new();
    for p in files {
        let name = p
            .file_name()
            .map(|s| s.to_string_lossy().trim_end_matches(".mtx.gz").to_string())
            .unwrap_or_default();
        let a = match spmvkit::io::load::<f64>(&p) {
            Ok(a) => a,
            Err(e) => {
                println!("left out: {e}");
                continue;
            }
        };
        let mut g = Lcg::new(a.nnz() as u64);
        let vals = (0..a.nnz())
            .map(|_| {
                let v = g.value();
                if v == 0.0 {
                    0.5
                } else {
                    v
                }
            })
            .collect();
        out.push((name, Csr::with_pattern(a.pattern().clone(), vals)?));
    }
    if out.is_empty() {
        return Err(format!("no .mtx.gz files under {}", base.display()).into());
    }
    Ok(out)
}

fn params(ps: &[&str]) -> Res<Params> {
    Ok(Params::parse(ps.iter().copied())?)
}

fn vector(n: usize, seed: u64) -> Vec<f64> {
    let mut g = Lcg::new(seed);
    (0..n).map(|_| g.value()).collect()
}

/// Times `method` with `ps` on `a` (f64, α = 1, β = 0); `graph` adds CUDA-graph timing.
fn time_one(
    name: &str,
    a: &Csr<f64>,
    method: &str,
    ps: &[&str],
    cfg: &TimingConfig,
    graph: bool,
) -> Res<()> {
    let opts = PlanOptions {
        params: params(ps)?,
        backend: Some(Backend::Gpu),
        ..Default::default()
    };
    let mut plan = match Plan::<f64>::new(method, a, &opts) {
        Ok(p) => p,
        Err(e) => {
            println!("TIMING {name} {method} {ps:?}: plan failed: {e}");
            return Ok(());
        }
    };
    let prep = plan.prep_times();
    let layout = plan.layout();
    let notes: Vec<String> = layout
        .notes()
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    let stages: Vec<String> = layout
        .prep_stages()
        .iter()
        .map(|(k, d)| format!("{k} {:.1}ms", d.as_secs_f64() * 1e3))
        .collect();
    let foot = layout.footprint_bytes();
    if plan.backend() != Backend::Gpu {
        return Err(format!("{name} {method}: the plan is not on the GPU").into());
    }
    let xs = vector(a.ncols(), 3);
    plan.set_device_vectors(Some(&xs), None)?;
    let s = plan.time(TimingMode::Stream, cfg, 1.0, 0.0)?;
    let gr = if graph {
        plan.time(TimingMode::Graph, cfg, 1.0, 0.0)?.median_us
    } else {
        f64::NAN
    };
    let mut got = vec![0.0; a.nrows()];
    plan.read_device_y(&mut got)?;
    let r = oracle_spmv(a, 1.0, &xs, 0.0, &vec![0.0; a.nrows()])?;
    let ok = check(&r, &got).ok;
    let bytes = 12 * a.nnz() + 4 * (a.nrows() + 1) + 8 * a.ncols() + 8 * a.nrows();
    println!(
        "TIMING {name:<20} nnz {:>9} {method:<10} {:<22} stream {:>8.2} graph {:>8.2} us  {:>5.0} GB/s(csr-model)  prep {:>8.1} ms upload {:>6.1} ms  foot/csr {:.3} ok={ok}",
        a.nnz(),
        ps.join(","),
        s.median_us,
        gr,
        bytes as f64 / s.median_us / 1e3,
        prep.prepare.as_secs_f64() * 1e3,
        prep.upload.as_secs_f64() * 1e3,
        foot as f64 / (4 * (a.nrows() + 1) + 12 * a.nnz()) as f64,
    );
    if method == NAME && ps.is_empty() {
        println!("  notes {}", notes.join("; "));
        println!("  stages {}", stages.join("; "));
    }
    Ok(())
}

fn timing() -> Res<()> {
    let g = Gpu::get()?;
    let bw = measure_copy_bandwidth(&g)?;
    println!(
        "GPU {} {} SMs, copy bandwidth {bw:.0} GB/s",
        g.name(),
        g.sm_count()
    );
    let cfg = TimingConfig {
        warmup: 10,
        calls: 50,
        samples: 5,
    };
    let shared = shared_matrices()?;
    // A: the matrices of shared/notes/methods.md §0.
    for want in [
        "copter2",
        "bcsstk33",
        "Maragal_6",
        "af23560",
        "s1rmq4m1",
        "wb-cs-stanford",
    ] {
        let Some((name, a)) = shared.iter().find(|(n, _)| n == want) else {
            println!("{want}: not among the shared matrices");
            continue;
        };
        for (m, ps) in [
            ("csr-vector", &[][..]),
            ("merge", &[]),
            (NAME, &[]),
            (NAME, &["prologue=fused", "accumulate=block"]),
            (NAME, &["accumulate=block"]),
            (NAME, &["accumulate=run", "bpw=4"]),
            (NAME, &["bpw=2"]),
            (NAME, &["bpw=4"]),
            (NAME, &["gather=on"]),
            (NAME, &["gather=off"]),
            (NAME, &["balance=off"]),
        ] {
            time_one(name, a, m, ps, &cfg, true)?;
        }
    }
    // B: large generated matrices (gpu-large families), the ablation.
    for spec in [
        "poisson3d:160",
        "uniform:4000000,16",
        "powerlaw:4000000,8",
        "blockdiag:30000,32",
        "kron:20,48",
    ] {
        let a = spmvkit::gen::generate_f64(spec)?;
        for (m, ps) in [
            ("csr-vector", &[][..]),
            ("merge", &[]),
            (NAME, &[]),
            (NAME, &["bpw=1"]),
            (NAME, &["bpw=2"]),
            (NAME, &["bpw=4"]),
            (NAME, &["bpw=8"]),
            (NAME, &["gather=on"]),
            (NAME, &["gather=off"]),
            (NAME, &["balance=off"]),
            (NAME, &["format=off"]),
            (NAME, &["aggregate=off"]),
            (NAME, &["prologue=fused", "accumulate=block"]),
            (NAME, &["accumulate=run"]),
            (NAME, &["accumulate=run", "bpw=16"]),
            (NAME, &["accumulate=run", "bpw=16", "gather=off"]),
        ] {
            time_one(spec, &a, m, ps, &cfg, false)?;
        }
    }
    // C: every shared matrix, graph and stream, csr-vector vs cb-spmv.
    let quick = TimingConfig {
        warmup: 5,
        calls: 20,
        samples: 3,
    };
    for (name, a) in &shared {
        for (m, ps) in [
            ("csr-vector", &[][..]),
            (NAME, &[]),
            (NAME, &["accumulate=run"]),
        ] {
            time_one(name, a, m, ps, &quick, true)?;
        }
    }
    Ok(())
}

/// The mirror of `variant` on `a` against the oracle; the first mismatch, if any.
fn mirror_mismatch(a: &Csr<f64>, variant: &[&str]) -> Res<Option<String>> {
    let layout = spmvkit::methods::find(NAME)?.prepare_f64(a, &params(variant)?)?;
    let (x, y0) = (vector(a.ncols(), 99), vector(a.nrows(), 98));
    for (alpha, beta) in [(1.0, 0.0), (2.5, 0.0), (1.0, 1.0), (-0.75, 0.5), (0.0, 2.0)] {
        let start = if beta == 0.0 {
            vec![f64::NAN; a.nrows()]
        } else {
            y0.clone()
        };
        let r = oracle_spmv(a, alpha, &x, beta, &start)?;
        let mut y = start;
        layout.run_cpu(alpha, &x, beta, &mut y)?;
        let c = check(&r, &y);
        if !c.ok {
            return Ok(Some(format!(
                "α={alpha} β={beta}: row {} off by {:.3e}",
                c.worst_row, c.max_rel_err
            )));
        }
    }
    Ok(None)
}

fn mirror() -> Res<()> {
    let shared = shared_matrices()?;
    let mut bad = 0;
    for (name, a) in &shared {
        for v in [&[][..], &["gather=on", "balance=on", "bpw=4"]] {
            match mirror_mismatch(a, v)? {
                None => println!("{name} {v:?}: ok"),
                Some(m) => {
                    println!("{name} {v:?}: MISMATCH {m}");
                    bad += 1;
                }
            }
        }
    }
    println!("{} matrices, {bad} mismatches", shared.len());
    if bad > 0 {
        return Err(format!("{bad} mismatches").into());
    }
    Ok(())
}

fn main() -> Res<()> {
    match std::env::args().nth(1).as_deref() {
        Some("timing") => timing(),
        Some("mirror") => mirror(),
        _ => Err("usage: cb_spmv_report timing|mirror".into()),
    }
}
