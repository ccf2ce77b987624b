//! GPU test harness (issue #3): every registered method with a GPU executor, on a corpus of
//! edge-case matrices, in f32 and f64, with α = 1.5 and β ∈ {0, −0.5}, against the f64 oracle;
//! methods that claim determinism are run twice and compared bit for bit. Also the error paths
//! (wrong vector lengths, too little device memory, a broken kernel) and the timing module.
//!
//! Without a GPU every test is skipped with a `skipped:` line (`spmvkit::testing`); with
//! `SPMVKIT_REQUIRE_GPU=1` a missing GPU fails.
//! The tests share one GPU stream, so they take a lock and run one at a time.

mod common;

use spmvkit::cpu::{check, oracle_spmv};
use spmvkit::gpu::{measure_copy_bandwidth, KernelSource, TimingConfig, TimingMode};
use spmvkit::methods::{registry, Method, PrepareFor};
use spmvkit::{Backend, Coo, Csr, Error, Plan, PlanOptions, Scalar};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    /// Uniform in [-1, 1).
    fn val(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

fn from_rows(nrows: usize, ncols: usize, rows: impl Fn(usize, &mut Rng) -> Vec<usize>) -> Csr<f64> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (nrows * 31 + ncols) as u64);
    let mut coo = Coo::new(nrows, ncols).unwrap();
    for i in 0..nrows {
        for j in rows(i, &mut rng) {
            let v = rng.val();
            coo.push(i, j, if v == 0.0 { 0.5 } else { v }).unwrap();
        }
    }
    coo.to_csr()
}

fn random_cols(rng: &mut Rng, ncols: usize, k: usize) -> Vec<usize> {
    (0..k).map(|_| rng.below(ncols)).collect()
}

/// The shared edge-case corpus (`spmvkit::gen::corpus::edge_cases`) plus this harness's own
/// cases: empty rows and columns, degenerate shapes, one huge row, row lengths around warp
/// multiples, many rows (large grids), banded and random patterns.
fn corpus() -> Vec<(String, Csr<f64>)> {
    let mut v = spmvkit::gen::corpus::edge_cases();
    v.extend(extra_cases());
    v
}

fn extra_cases() -> Vec<(String, Csr<f64>)> {
    let v: Vec<(String, Csr<f64>)> = vec![
        ("1x1".into(), from_rows(1, 1, |_, _| vec![0])),
        ("empty 0x0".into(), from_rows(0, 0, |_, _| vec![])),
        ("no entries 5x7".into(), from_rows(5, 7, |_, _| vec![])),
        (
            "empty rows+cols 300x200".into(),
            from_rows(300, 200, |i, r| {
                if i % 3 == 0 {
                    vec![]
                } else {
                    random_cols(r, 200, 4)
                        .into_iter()
                        .map(|c| c / 5 * 5 + 1)
                        .filter(|&c| c < 200)
                        .collect()
                }
            }),
        ),
        ("tall 5000x3".into(), from_rows(5000, 3, |i, _| vec![i % 3])),
        (
            "wide 3x5000".into(),
            from_rows(3, 5000, |_, r| random_cols(r, 5000, 1500)),
        ),
        (
            "one huge row 400x20000".into(),
            from_rows(400, 20000, |i, r| {
                if i == 7 {
                    (0..20000).step_by(2).collect()
                } else {
                    random_cols(r, 20000, i % 3)
                }
            }),
        ),
        (
            "diagonal 4000".into(),
            from_rows(4000, 4000, |i, _| vec![i]),
        ),
        (
            "banded 3000 (bw 7)".into(),
            from_rows(3000, 3000, |i, _| {
                (i.saturating_sub(7)..(i + 8).min(3000)).collect()
            }),
        ),
        (
            "warp-boundary rows 600x700".into(),
            from_rows(600, 700, |i, _| {
                (0..(i % 70)).map(|k| (k * 9 + i) % 700).collect()
            }),
        ),
        (
            "many rows 150000x1000".into(),
            from_rows(150_000, 1000, |i, r| random_cols(r, 1000, 1 + i % 3)),
        ),
        (
            "power-law 5000x5000".into(),
            from_rows(5000, 5000, |i, r| {
                let len = if i % 997 == 0 {
                    3000
                } else {
                    (r.below(64) * r.below(64)) / 64
                };
                random_cols(r, 5000, len)
            }),
        ),
        (
            "random 20000x15000 (~12/row)".into(),
            from_rows(20000, 15000, |_, r| {
                let k = 6 + r.below(13);
                random_cols(r, 15000, k)
            }),
        ),
    ];
    v
}

fn vectors<T: Scalar>(a: &Csr<f64>) -> (Vec<T>, Vec<T>) {
    let mut rng = Rng(12345);
    let x = (0..a.ncols()).map(|_| T::from_f64(rng.val())).collect();
    let y0 = (0..a.nrows())
        .map(|_| T::from_f64(rng.val() * 4.0))
        .collect();
    (x, y0)
}

fn gpu_opts() -> PlanOptions {
    PlanOptions {
        backend: Some(Backend::Gpu),
        ..PlanOptions::default()
    }
}

/// Outcomes of one method over the corpus in precision T.
#[derive(Default)]
struct Tally {
    passed: usize,
    unsupported: Vec<String>,
    failures: Vec<String>,
}

fn run_method<T: PrepareFor>(
    m: &'static dyn Method,
    backend: Backend,
    corpus: &[(String, Csr<f64>)],
    t: &mut Tally,
) {
    let opts = PlanOptions {
        backend: Some(backend),
        ..PlanOptions::default()
    };
    let info = m.info();
    let p = T::PRECISION;
    for (name, a64) in corpus {
        let a: Csr<T> = a64.cast();
        let mut plan = match Plan::<T>::with_method(m, &a, &opts) {
            Ok(plan) => plan,
            Err(Error::MethodUnsupported { reason, .. }) => {
                t.unsupported
                    .push(format!("{} {p} {name}: {reason}", info.name));
                continue;
            }
            Err(e) => {
                t.failures
                    .push(format!("{} {p} {name}: plan: {e}", info.name));
                continue;
            }
        };
        let (x, y0) = vectors::<T>(a64);
        for beta in [0.0, -0.5] {
            let (alpha, beta) = (T::from_f64(1.5), T::from_f64(beta));
            let fresh = || -> Vec<T> {
                if beta == T::zero() {
                    vec![T::from_f64(f64::NAN); y0.len()]
                } else {
                    y0.clone()
                }
            };
            let what = format!("{} {p} {name} beta={beta}", info.name);
            let mut y = fresh();
            if let Err(e) = plan.apply(alpha, &x, beta, &mut y) {
                t.failures.push(format!("{what}: {e}"));
                continue;
            }
            let r = match oracle_spmv(&a, alpha, &x, beta, &y0) {
                Ok(r) => r,
                Err(e) => {
                    t.failures.push(format!("{what}: oracle: {e}"));
                    continue;
                }
            };
            let c = check(&r, &y);
            if !c.ok {
                t.failures.push(format!(
                    "{what}: wrong result: max rel err {:.3e} at row {} (got {}, want {})",
                    c.max_rel_err,
                    c.worst_row,
                    y.get(c.worst_row).map(|v| v.to_f64()).unwrap_or(f64::NAN),
                    r.y.get(c.worst_row).copied().unwrap_or(f64::NAN),
                ));
                continue;
            }
            if info.deterministic {
                let mut y2 = fresh();
                if let Err(e) = plan.apply(alpha, &x, beta, &mut y2) {
                    t.failures.push(format!("{what}: second run: {e}"));
                    continue;
                }
                let same = y
                    .iter()
                    .zip(&y2)
                    .all(|(a, b)| a.to_bits_u64() == b.to_bits_u64());
                if !same {
                    t.failures.push(format!(
                        "{what}: claims determinism but two runs differ bitwise"
                    ));
                    continue;
                }
            }
            t.passed += 1;
        }
    }
}

#[test]
fn gpu_every_method_matches_oracle_on_corpus() {
    let Some((gpu, _lock)) = common::gpu_or_skip("gpu_every_method_matches_oracle_on_corpus")
    else {
        return;
    };
    eprintln!(
        "GPU: {} ({}, {} SMs)",
        gpu.name(),
        gpu.arch(),
        gpu.sm_count()
    );
    let corpus = corpus();
    let mut all_failures = Vec::new();
    let mut methods = 0;
    for &m in registry() {
        let info = m.info();
        if !info.gpu {
            continue;
        }
        methods += 1;
        let mut t = Tally::default();
        run_method::<f32>(m, Backend::Gpu, &corpus, &mut t);
        run_method::<f64>(m, Backend::Gpu, &corpus, &mut t);
        eprintln!(
            "{:<16} passed {:>3}, unsupported {:>2}, failed {:>2}{}",
            info.name,
            t.passed,
            t.unsupported.len(),
            t.failures.len(),
            if info.deterministic {
                " (determinism checked)"
            } else {
                ""
            }
        );
        for u in &t.unsupported {
            eprintln!("    unsupported: {u}");
        }
        for f in &t.failures {
            eprintln!("    FAIL: {f}");
        }
        all_failures.extend(t.failures);
    }
    eprintln!("{methods} GPU methods over {} matrices", corpus.len());
    assert!(all_failures.is_empty(), "{} failures", all_failures.len());
}

/// The same harness through the CPU mirrors of the GPU methods: checks the corpus and the
/// harness itself on machines without a GPU.
#[test]
fn harness_self_check_on_cpu_mirrors() {
    let corpus = corpus();
    for &m in registry() {
        let info = m.info();
        if !(info.gpu && info.cpu) {
            continue;
        }
        let mut t = Tally::default();
        run_method::<f32>(m, Backend::Cpu, &corpus, &mut t);
        run_method::<f64>(m, Backend::Cpu, &corpus, &mut t);
        assert!(t.failures.is_empty(), "{}: {:#?}", info.name, t.failures);
        assert!(t.passed > 0, "{}", info.name);
    }
}

#[test]
fn gpu_csr_scalar_matches_its_cpu_mirror_bitwise() {
    let Some(_g) = common::gpu_or_skip("gpu_csr_scalar_matches_its_cpu_mirror_bitwise") else {
        return;
    };
    for (name, a) in corpus() {
        let (x, y0) = vectors::<f64>(&a);
        let mut y_gpu = y0.clone();
        let mut y_cpu = y0.clone();
        Plan::new("csr-scalar", &a, &gpu_opts())
            .unwrap()
            .apply(1.5, &x, -0.5, &mut y_gpu)
            .unwrap();
        let cpu = PlanOptions {
            backend: Some(Backend::Cpu),
            ..PlanOptions::default()
        };
        Plan::new("csr-scalar", &a, &cpu)
            .unwrap()
            .apply(1.5, &x, -0.5, &mut y_cpu)
            .unwrap();
        let same = y_gpu
            .iter()
            .zip(&y_cpu)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "{name}: GPU and CPU mirror differ");
    }
}

fn small() -> Csr<f64> {
    from_rows(40, 30, |_, r| random_cols(r, 30, 5))
}

#[test]
fn gpu_wrong_vector_lengths_are_dimension_mismatch() {
    let Some((gpu, _lock)) = common::gpu_or_skip("gpu_wrong_vector_lengths_are_dimension_mismatch")
    else {
        return;
    };
    let a = small();
    for &m in registry() {
        if !m.info().gpu {
            continue;
        }
        let name = m.info().name;
        let mut plan = match Plan::<f64>::with_method(m, &a, &gpu_opts()) {
            Ok(p) => p,
            Err(Error::MethodUnsupported { .. }) => continue,
            Err(e) => panic!("{name}: {e}"),
        };
        let mut y = vec![0.0; 40];
        let e = plan.apply(1.0, &[1.0; 31], 0.0, &mut y).unwrap_err();
        assert!(matches!(e, Error::DimensionMismatch { .. }), "{name}: {e}");
        let mut short = vec![0.0; 39];
        let e = plan.apply(1.0, &[1.0; 30], 0.0, &mut short).unwrap_err();
        assert!(matches!(e, Error::DimensionMismatch { .. }), "{name}: {e}");
    }
    // Device-level checks of this helper's device layouts.
    for name in [
        "csr-scalar",
        "cusparse-alg1",
        "cusparse-alg2",
        "cusparse",
        "cusparse-e2e",
    ] {
        let plan = Plan::<f64>::new(name, &a, &gpu_opts()).unwrap();
        let g = plan.gpu().unwrap();
        let dl = plan.layout().upload(g).unwrap();
        let (x, mut y) = (
            g.alloc_zeros::<f64>(30).unwrap(),
            g.alloc_zeros::<f64>(40).unwrap(),
        );
        let short_x = g.alloc_zeros::<f64>(29).unwrap();
        let e = dl.run(g, 1.0, &short_x, 0.0, &mut y).unwrap_err();
        assert!(matches!(e, Error::DimensionMismatch { .. }), "{name}: {e}");
        let mut short_y = g.alloc_zeros::<f64>(39).unwrap();
        let e = dl.run(g, 1.0, &x, 0.0, &mut short_y).unwrap_err();
        assert!(matches!(e, Error::DimensionMismatch { .. }), "{name}: {e}");
    }
    gpu.synchronize().unwrap();
}

#[test]
fn gpu_too_large_a_request_is_device_memory() {
    let Some((gpu, _lock)) = common::gpu_or_skip("gpu_too_large_a_request_is_device_memory") else {
        return;
    };
    let (free, total) = gpu.memory().unwrap();
    assert!(free <= total && total > 0);
    let e = gpu
        .ensure_fits("a fake layout", total.saturating_mul(2))
        .unwrap_err();
    match e {
        Error::DeviceMemory { needed, free, .. } => assert!(needed > free),
        other => panic!("expected DeviceMemory, got {other}"),
    }
    gpu.ensure_fits("a small layout", 1 << 20).unwrap();
}

#[test]
fn gpu_broken_kernel_is_nvrtc_error_and_allocates_nothing() {
    let Some((gpu, _lock)) =
        common::gpu_or_skip("gpu_broken_kernel_is_nvrtc_error_and_allocates_nothing")
    else {
        return;
    };
    gpu.synchronize().unwrap();
    let (free_before, _) = gpu.memory().unwrap();
    let broken = KernelSource {
        name: "broken-on-purpose",
        source: "extern \"C\" __global__ void k(real_t* y) { y[0] = no_such_symbol; }",
    };
    for _ in 0..2 {
        match gpu.function::<f64>(&broken, "k") {
            Err(Error::Nvrtc { kernel, arch, log }) => {
                assert!(kernel.contains("broken-on-purpose"));
                assert_eq!(arch, gpu.arch());
                assert!(log.contains("no_such_symbol"), "log: {log}");
            }
            Err(other) => panic!("expected Error::Nvrtc, got {other}"),
            Ok(_) => panic!("a broken kernel compiled"),
        }
    }
    gpu.synchronize().unwrap();
    let (free_after, _) = gpu.memory().unwrap();
    // A failed compile loads no module and allocates nothing.
    assert!(
        free_after >= free_before,
        "free memory fell from {free_before} to {free_after}"
    );
    // A missing entry point in a module that compiles is a CUDA error (the module itself may
    // take device memory, in 2 MiB pages, once loaded).
    let e = gpu
        .function::<f32>(
            &spmvkit::methods::csr_scalar::KERNEL.source,
            "no_such_entry",
        )
        .unwrap_err();
    assert!(matches!(e, Error::Cuda { .. }), "{e}");
}

spmvkit::kernel_args! {
    /// Not the arguments of any entry.
    struct WrongArgs<'a, T> {
        y: spmvkit::gpu::DevMut<'a, T>,
        n: i32,
    }
}

#[test]
fn gpu_launch_layer_refuses_undeclared_entries_and_wrong_structs() {
    let Some((gpu, _lock)) =
        common::gpu_or_skip("gpu_launch_layer_refuses_undeclared_entries_and_wrong_structs")
    else {
        return;
    };
    let k = &spmvkit::methods::csr_scalar::KERNEL;
    match gpu.kernel::<f32, WrongArgs<f32>>(k, "no_such_entry") {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("not in its Kernels list"), "{m}"),
        Err(other) => panic!("expected Error::InvalidArgument, got {other}"),
        Ok(_) => panic!("an undeclared entry loaded"),
    }
    match gpu.kernel::<f32, WrongArgs<f32>>(k, "csr_scalar") {
        Err(Error::InvalidArgument(m)) => {
            assert!(m.contains("CsrArgs") && m.contains("WrongArgs"), "{m}")
        }
        Err(other) => panic!("expected Error::InvalidArgument, got {other}"),
        Ok(_) => panic!("an entry loaded with the wrong struct"),
    }
}

#[test]
fn gpu_timing_stream_graph_and_copy_bandwidth() {
    let Some((gpu, _lock)) = common::gpu_or_skip("gpu_timing_stream_graph_and_copy_bandwidth")
    else {
        return;
    };
    let a = from_rows(100_000, 100_000, |_, r| random_cols(r, 100_000, 10));
    let cfg = TimingConfig {
        warmup: 5,
        calls: 50,
        samples: 5,
    };
    let ones = vec![1.0; a.ncols()];
    let r = oracle_spmv(&a, 1.0, &ones, 0.0, &vec![0.0; a.nrows()]).unwrap();
    let mut failures = Vec::new();
    for &m in registry() {
        let name = m.info().name;
        if !m.info().gpu {
            continue;
        }
        let mut plan = match Plan::<f64>::with_method(m, &a, &gpu_opts()) {
            Ok(p) => p,
            Err(Error::MethodUnsupported { .. }) => continue,
            Err(e) => panic!("{name}: {e}"),
        };
        let notes = plan.layout().notes();
        plan.set_device_vectors(Some(&ones), None).unwrap();
        let s = plan.time(TimingMode::Stream, &cfg, 1.0, 0.0).unwrap();
        let gr = match plan.time(TimingMode::Graph, &cfg, 1.0, 0.0) {
            Ok(t) => t,
            Err(e) => {
                failures.push(format!("{name}: graph capture: {e}"));
                continue;
            }
        };
        assert!(
            s.median_us > 0.0 && s.median_us.is_finite(),
            "{name}: {s:?}"
        );
        assert!(
            gr.median_us > 0.0 && gr.median_us.is_finite(),
            "{name}: {gr:?}"
        );
        assert_eq!(s.samples_us.len(), 5);
        assert!(s.min_us <= s.median_us && s.median_us <= s.max_us);
        // The graph replays really computed y = A·1.
        let mut got = vec![0.0; a.nrows()];
        plan.read_device_y(&mut got).unwrap();
        if !check(&r, &got).ok {
            failures.push(format!("{name}: wrong y after graph replays"));
        }
        eprintln!(
            "{name:<14} 1M nnz f64: stream {:.2} µs, graph {:.2} µs per call {notes:?}",
            s.median_us, gr.median_us
        );
    }
    assert!(failures.is_empty(), "{failures:#?}");
    let bw = measure_copy_bandwidth(&gpu).unwrap();
    eprintln!("device copy bandwidth (read+write): {bw:.0} GB/s");
    assert!(bw > 50.0, "copy bandwidth {bw} GB/s is implausibly low");
}

#[test]
fn gpu_pinned_buffers_and_extra_streams() {
    let Some((gpu, _lock)) = common::gpu_or_skip("gpu_pinned_buffers_and_extra_streams") else {
        return;
    };
    let mut pinned = gpu.alloc_pinned::<f64>(1000).unwrap();
    assert!(pinned.as_slice().unwrap().iter().all(|&v| v == 0.0));
    for (i, v) in pinned.as_mut_slice().unwrap().iter_mut().enumerate() {
        *v = i as f64;
    }
    // A stream of the caller's own (Gpu::new_stream is the crate's): with event tracking off,
    // its use of d is ordered by hand, as docs/gpu-contract.md asks.
    let s2 = gpu.stream().fork().unwrap();
    let mut d = gpu.alloc_zeros::<f64>(1000).unwrap();
    gpu.synchronize().unwrap();
    s2.memcpy_htod(&pinned, &mut d).unwrap();
    s2.synchronize().unwrap();
    let mut back = vec![0.0; 1000];
    gpu.download(&d, &mut back).unwrap();
    assert_eq!(back[999], 999.0);
    // y = β·y helper, including β = 0 over NaN.
    let mut y = gpu.upload(&[f64::NAN, 2.0, 3.0]).unwrap();
    gpu.scale(&mut y, 3, 0.0).unwrap();
    gpu.download(&y, &mut back[..3]).unwrap();
    assert_eq!(&back[..3], &[0.0, 0.0, 0.0]);
    let mut y = gpu.upload(&[1.0f32, 2.0, 3.0]).unwrap();
    gpu.scale(&mut y, 2, -0.5).unwrap();
    let mut b32 = [0f32; 3];
    gpu.download(&y, &mut b32).unwrap();
    assert_eq!(b32, [-0.5, -1.0, 3.0]);
}
