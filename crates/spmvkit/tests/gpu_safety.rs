//! GPU safety (issue 18, items 3, 4 and 6):
//!
//! - a device x or y of the wrong length gets an `Err` and never a launch, for every registered
//!   method with a GPU executor, in f32 and f64, through `Plan::apply_device` and through the
//!   method's device layout itself (`Layout::upload`, then `run`);
//! - the runtime's grid-stride kernels (`Gpu::scale`, `spmvkit_scale`, `spmvkit_gather`) and a
//!   solver vector kernel (`cg_p`) reach the end of a vector of 2^31 − 64 f32 elements, with the
//!   launches' capped grids and with a grid covering the whole vector (skipped below 20 GiB of
//!   free device memory);
//! - `cusparse-bsr` through a `Plan` on shapes that are not multiples of its block size matches
//!   the oracle on the plan's own (padded) vectors, through `Plan::apply` and the device layout,
//!   and on a caller's logical-length vectors through `Plan::apply_device`.
//!
//! Without a GPU every test prints a `skipped:` line and passes; with `SPMVKIT_REQUIRE_GPU=1` a
//! missing GPU fails, and so does too little free memory for the large test.

mod common;

use std::ops::Range;

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use spmvkit::cpu::{check, oracle_spmv};
use spmvkit::gpu::{Gpu, TimingConfig, TimingMode};
use spmvkit::methods::{registry, Params, PrepareFor};
use spmvkit::{Backend, Csr, Error, Plan, PlanOptions, Scalar};

fn gpu_opts(params: &[&str]) -> PlanOptions {
    PlanOptions {
        params: Params::parse(params.iter().copied()).expect("params"),
        backend: Some(Backend::Gpu),
        ..Default::default()
    }
}

/// Deterministic values in [-1.5, 1.5], exact in f32.
fn values<T: Scalar>(n: usize, salt: usize) -> Vec<T> {
    (0..n)
        .map(|i| T::from_f64(((i * 7 + salt * 3) % 13) as f64 / 4.0 - 1.5))
        .collect()
}

fn download<T: Scalar>(gpu: &Gpu, v: &CudaSlice<T>, r: Range<usize>) -> Vec<T> {
    let mut h = vec![T::zero(); r.len()];
    gpu.stream()
        .memcpy_dtoh(&v.slice(r), h.as_mut_slice())
        .expect("device-to-host copy");
    gpu.synchronize().expect("synchronize");
    h
}

// ---- item 3: wrong-length device vectors --------------------------------------------------

fn wrong_lengths_are_refused<T: PrepareFor>(gpu: &Gpu) -> Vec<String> {
    // 61 x 53: neither side a multiple of cusparse-bsr's blocks, rows != columns.
    let a: Csr<T> = spmvkit::gen::generate("uniform:61,53,4").expect("matrix");
    let (m, n) = (a.nrows(), a.ncols());
    let sentinel = T::from_f64(7.0);
    let (alpha, beta) = (T::from_f64(1.5), T::from_f64(-0.5));
    let mut failures = Vec::new();
    let mut checked = Vec::new();
    for &method in registry() {
        let info = method.info();
        if !info.gpu {
            continue;
        }
        let name = format!("{} {}", info.name, T::PRECISION);
        let plan = match Plan::<T>::with_method(method, &a, &gpu_opts(&[])) {
            Ok(p) => p,
            Err(Error::MethodUnsupported { reason, .. }) => {
                eprintln!("{name}: not checked here: {reason}");
                continue;
            }
            Err(e) => {
                failures.push(format!("{name}: plan: {e}"));
                continue;
            }
        };
        let layout = match plan.layout().upload(plan.gpu().expect("a GPU plan")) {
            Ok(l) => l,
            Err(e) => {
                failures.push(format!("{name}: upload: {e}"));
                continue;
            }
        };
        // (x length, y length): x short, y short, both short.
        for (xl, yl) in [(n - 1, m), (n, m - 1), (1, 1)] {
            let what = format!("{name}, x of {xl}, y of {yl}");
            let dx = gpu.upload(&values::<T>(xl, 1)).expect("x");
            let mut dy = gpu.upload(&vec![sentinel; yl]).expect("y");
            match plan.apply_device(alpha, &dx, T::zero(), &mut dy) {
                Err(Error::DimensionMismatch { .. }) => {}
                other => failures.push(format!("{what}: apply_device gave {other:?}")),
            }
            match layout.run(gpu, alpha, &dx, T::zero(), &mut dy) {
                Err(Error::DimensionMismatch { .. }) => {}
                other => failures.push(format!("{what}: layout run gave {other:?}")),
            }
            // Nothing ran: y still holds the sentinel, and no launch faulted.
            if download(gpu, &dy, 0..yl).iter().any(|&v| v != sentinel) {
                failures.push(format!(
                    "{what}: y was written although the call was refused"
                ));
            }
        }
        // The right lengths still work (and are right).
        let x = values::<T>(n, 2);
        let y0 = values::<T>(m, 3);
        let r = oracle_spmv(&a, alpha, &x, beta, &y0).expect("oracle");
        let dx = gpu.upload(&x).expect("x");
        let mut dy = gpu.upload(&y0).expect("y");
        match plan.apply_device(alpha, &dx, beta, &mut dy) {
            Ok(()) => {
                let got = download(gpu, &dy, 0..m);
                if !check(&r, &got).ok {
                    failures.push(format!("{name}: wrong y with the right lengths"));
                }
            }
            Err(e) => failures.push(format!("{name}: the right lengths refused: {e}")),
        }
        if let Err(e) = gpu.synchronize() {
            failures.push(format!("{name}: the stream faulted: {e}"));
        }
        checked.push(info.name);
    }
    eprintln!(
        "{}: {} methods checked: {}",
        T::PRECISION,
        checked.len(),
        checked.join(", ")
    );
    if checked.is_empty() {
        failures.push(format!("{}: no GPU method could be checked", T::PRECISION));
    }
    failures
}

#[test]
fn gpu_every_method_refuses_wrong_length_device_vectors() {
    let Some((gpu, _lock)) =
        common::gpu_or_skip("gpu_every_method_refuses_wrong_length_device_vectors")
    else {
        return;
    };
    let mut failures = wrong_lengths_are_refused::<f32>(&gpu);
    failures.extend(wrong_lengths_are_refused::<f64>(&gpu));
    assert!(failures.is_empty(), "{failures:#?}");
}

// ---- item 4: indices near 2^31 --------------------------------------------------------------

/// The largest length the 2^31 − 1 limit allows, less a little: within one grid stride of it.
const BIG: usize = (1 << 31) - 64;
/// Elements read back at each end.
const TAIL: usize = 1 << 20;
/// Free device memory the large test needs (two f32 vectors of BIG elements at a time, 17.2 GB).
const BIG_FREE: usize = 20 << 30;

/// Launches `spmvkit_scale` (y = beta·y over n elements) with one block of 256 threads per 256
/// elements: a grid covering the whole vector, the largest stride the kernel can see (the y
/// prologue with a cap of ⌈n/256⌉ CTAs per SM never caps it).
fn scale_full_grid(gpu: &Gpu, y: &mut CudaSlice<f32>, n: usize, beta: f32) {
    gpu.y_prologue_kernel::<f32>(n.div_ceil(256))
        .expect("spmvkit_scale")
        .run(gpu, y, n, beta)
        .expect("spmvkit_scale launch");
}

/// `cg_p` (p = r + beta·p, beta from s[S_BETA]) over n elements with `blocks` blocks of 256.
fn cg_p(gpu: &Gpu, p: &mut CudaSlice<f32>, r: &CudaSlice<f32>, n: usize, beta: f64, blocks: usize) {
    // The solver scalars: s[2] = S_BETA, s[4] = S_DONE (0: running), 16 doubles (solve/kernel.cu).
    let mut s0 = [0.0f64; 16];
    s0[2] = beta;
    let s = gpu.upload(&s0).expect("scalars");
    let f = gpu
        .function::<f32>(&spmvkit::solve::KERNELS.source, "cg_p")
        .expect("cg_p");
    let cfg = LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let n_i = n as i32;
    let mut b = gpu.stream().launch_builder(&f);
    b.arg(p).arg(r).arg(&n_i).arg(&s);
    // SAFETY: cg_p(real_t*, const real_t*, int, const double*) with n <= p.len(), r.len() and
    // 16 scalars; SOLVE_THREADS = 256 threads per block.
    unsafe { b.launch(cfg) }.expect("cg_p launch");
    gpu.synchronize().expect("cg_p");
}

fn put(gpu: &Gpu, v: &mut CudaSlice<f32>, at: usize, data: &[f32]) {
    gpu.stream()
        .memcpy_htod(data, &mut v.slice_mut(at..at + data.len()))
        .expect("host-to-device copy");
}

fn put_u32(gpu: &Gpu, v: &mut CudaSlice<u32>, at: usize, data: &[u32]) {
    gpu.stream()
        .memcpy_htod(data, &mut v.slice_mut(at..at + data.len()))
        .expect("host-to-device copy");
}

#[test]
fn gpu_grid_stride_kernels_reach_the_end_of_2_31_elements() {
    let test = "gpu_grid_stride_kernels_reach_the_end_of_2_31_elements";
    let Some((gpu, _lock)) = common::gpu_or_skip(test) else {
        return;
    };
    let (free, _) = gpu.memory().expect("memory");
    if free < BIG_FREE {
        let why = format!("{free} bytes of device memory free, needs {BIG_FREE}");
        spmvkit::testing::require_or_skip(test, spmvkit::testing::Need::Device, &why);
        return;
    }
    let head: Vec<f32> = (0..1024).map(|i| (i % 100) as f32 + 1.0).collect();
    let tail: Vec<f32> = (0..TAIL).map(|i| (i % 1000) as f32 + 0.5).collect();
    let (h, t) = (0..head.len(), BIG - TAIL..BIG);

    // Gpu::scale (its capped grid), then spmvkit_scale on a grid over the whole vector.
    {
        let mut y = gpu.alloc_zeros::<f32>(BIG).expect("y");
        put(&gpu, &mut y, 0, &head);
        put(&gpu, &mut y, BIG - TAIL, &tail);
        gpu.scale(&mut y, BIG, 2.0f32).expect("scale");
        let want = |v: &[f32]| v.iter().map(|x| 2.0 * x).collect::<Vec<_>>();
        assert_eq!(
            download(&gpu, &y, t.clone()),
            want(&tail),
            "Gpu::scale: tail"
        );
        assert_eq!(
            download(&gpu, &y, h.clone()),
            want(&head),
            "Gpu::scale: head"
        );
        assert_eq!(
            download(&gpu, &y, BIG / 2..BIG / 2 + 1),
            [0.0],
            "Gpu::scale: middle"
        );

        scale_full_grid(&gpu, &mut y, BIG, -0.5);
        let want = |v: &[f32]| v.iter().map(|x| -x).collect::<Vec<_>>();
        assert_eq!(
            download(&gpu, &y, t.clone()),
            want(&tail),
            "full grid scale: tail"
        );
        assert_eq!(
            download(&gpu, &y, h.clone()),
            want(&head),
            "full grid scale: head"
        );

        // β = 0 writes zeros without reading: NaN at the end does not survive.
        put(&gpu, &mut y, BIG - 4, &[f32::NAN; 4]);
        scale_full_grid(&gpu, &mut y, BIG, 0.0);
        assert!(
            download(&gpu, &y, t.clone()).iter().all(|&v| v == 0.0),
            "β = 0: tail"
        );
        put(&gpu, &mut y, BIG - 4, &[f32::NAN; 4]);
        gpu.scale(&mut y, BIG, 0.0f32).expect("scale by zero");
        assert!(
            download(&gpu, &y, t.clone()).iter().all(|&v| v == 0.0),
            "Gpu::scale β = 0: tail"
        );
    }

    // spmvkit_gather over BIG entries (its capped grid): out[i] = x[idx[i]].
    {
        let xs: Vec<f32> = (0..4096).map(|i| i as f32).collect();
        let mut x = gpu.upload(&xs).expect("x");
        put(&gpu, &mut x, 0, &[42.0]);
        let mut idx = gpu.alloc_zeros::<u32>(BIG).expect("idx");
        let tail_idx: Vec<u32> = (0..TAIL as u32).map(|i| 1 + i % 4095).collect();
        put_u32(&gpu, &mut idx, BIG - TAIL, &tail_idx);
        let mut out = gpu.alloc_zeros::<f32>(BIG).expect("out");
        // SAFETY: every index is < 4096 = x.len(); one stream.
        unsafe { gpu.gather_on(gpu.stream(), &mut out, &x, &idx, BIG) }.expect("gather");
        let want: Vec<f32> = tail_idx.iter().map(|&i| i as f32).collect();
        assert_eq!(download(&gpu, &out, t.clone()), want, "gather: tail");
        assert!(
            download(&gpu, &out, h.clone()).iter().all(|&v| v == 42.0),
            "gather: head"
        );
    }

    // cg_p (solve/kernel.cu) with the solver's grid (1024 blocks) and with a full grid.
    {
        let mut p = gpu.alloc_zeros::<f32>(BIG).expect("p");
        let mut r = gpu.alloc_zeros::<f32>(BIG).expect("r");
        let r_tail: Vec<f32> = (0..TAIL).map(|i| (i % 7) as f32).collect();
        put(&gpu, &mut p, BIG - TAIL, &tail);
        put(&gpu, &mut r, BIG - TAIL, &r_tail);
        put(&gpu, &mut p, 0, &head);
        cg_p(&gpu, &mut p, &r, BIG, 0.5, 1024);
        // Exact in f32: halves of small integers.
        let once: Vec<f32> = tail.iter().zip(&r_tail).map(|(p, r)| r + 0.5 * p).collect();
        assert_eq!(download(&gpu, &p, t.clone()), once, "cg_p: tail");
        let head_once: Vec<f32> = head.iter().map(|p| 0.5 * p).collect();
        assert_eq!(download(&gpu, &p, h.clone()), head_once, "cg_p: head");
        cg_p(&gpu, &mut p, &r, BIG, 2.0, BIG.div_ceil(256));
        let twice: Vec<f32> = once.iter().zip(&r_tail).map(|(p, r)| r + 2.0 * p).collect();
        assert_eq!(download(&gpu, &p, t.clone()), twice, "cg_p full grid: tail");
    }
    gpu.synchronize().expect("the stream faulted");
}

// ---- item 6: cusparse-bsr through a Plan on shapes off the block size ----------------------

fn bsr_case<T: PrepareFor>(gpu: &Gpu, spec: &str, block: usize) -> Vec<String> {
    let what = format!("cusparse-bsr[block={block}] {} on {spec}", T::PRECISION);
    let a: Csr<T> = spmvkit::gen::generate(spec).expect("matrix");
    let (m, n) = (a.nrows(), a.ncols());
    let block_param = format!("block={block}");
    let mut plan = match Plan::<T>::new("cusparse-bsr", &a, &gpu_opts(&[&block_param])) {
        Ok(p) => p,
        Err(Error::MethodUnsupported { reason, .. }) => {
            spmvkit::testing::require_or_skip(&what, spmvkit::testing::Need::Device, &reason);
            return Vec::new();
        }
        Err(e) => return vec![format!("{what}: plan: {e}")],
    };
    let mut failures = Vec::new();
    let mut expect = |ok: bool, msg: &str| {
        if !ok {
            failures.push(format!("{what}: {msg}"));
        }
    };
    let (py, px) = (m.div_ceil(block) * block, n.div_ceil(block) * block);
    {
        let layout = plan
            .layout()
            .upload(plan.gpu().expect("a GPU plan"))
            .expect("upload");
        expect(layout.dims() == (m, n), "dims");
        expect(
            layout.padded_dims() == (py, px),
            "padded dims are not whole blocks",
        );
        let (x, y) = plan.device_vectors().expect("device vectors");
        expect(
            x.len() == px && y.len() == py,
            "the plan's x/y are not padded",
        );
    }
    let (alpha, beta) = (T::from_f64(1.5), T::from_f64(-0.5));
    let x = values::<T>(n, 1);
    let y0 = values::<T>(m, 2);
    let zeros = vec![T::zero(); m];

    // Plan::apply: the plan's padded vectors, β ≠ 0 and β = 0 over NaN.
    let r = oracle_spmv(&a, alpha, &x, beta, &y0).expect("oracle");
    let mut y = y0.clone();
    plan.apply(alpha, &x, beta, &mut y).expect("apply");
    expect(check(&r, &y).ok, "Plan::apply, β ≠ 0");
    let r0 = oracle_spmv(&a, alpha, &x, T::zero(), &zeros).expect("oracle");
    let mut y_nan = vec![T::from_f64(f64::NAN); m];
    plan.apply(alpha, &x, T::zero(), &mut y_nan).expect("apply");
    expect(check(&r0, &y_nan).ok, "Plan::apply, β = 0 over NaN");

    // The timing harness's path: one call timed by the plan on its own vectors, which hold x
    // and the last result; x's padding is still zero.
    let r2 = oracle_spmv(&a, alpha, &x, beta, &y_nan).expect("oracle");
    let one = TimingConfig {
        warmup: 0,
        calls: 1,
        samples: 1,
    };
    plan.time(TimingMode::Stream, &one, alpha, beta)
        .expect("Plan::time");
    {
        let (dx, _) = plan.device_vectors().expect("device vectors");
        expect(
            download(gpu, dx, n..px).iter().all(|&v| v == T::zero()),
            "x padding is not zero",
        );
        let mut got = vec![T::zero(); m];
        plan.read_device_y(&mut got).expect("read y");
        expect(check(&r2, &got).ok, "Plan::time on the plan's vectors");
    }

    // apply_device with the caller's logical-length vectors: the scratch copies.
    let dx = gpu.upload(&x).expect("x");
    let mut dy = gpu.upload(&y0).expect("y");
    plan.apply_device(alpha, &dx, beta, &mut dy)
        .expect("apply_device");
    expect(
        check(&r, &download(gpu, &dy, 0..m)).ok,
        "apply_device, β ≠ 0",
    );
    let mut dy = gpu.upload(&vec![T::from_f64(f64::NAN); m]).expect("y");
    plan.apply_device(alpha, &dx, T::zero(), &mut dy)
        .expect("apply_device");
    expect(
        check(&r0, &download(gpu, &dy, 0..m)).ok,
        "apply_device, β = 0 over NaN",
    );
    // A long x of the caller's with zero padding, and a logical-length y: x in place, y copied.
    let mut xl = x.clone();
    xl.resize(px, T::zero());
    let dxl = gpu.upload(&xl).expect("x");
    let mut dy = gpu.upload(&y0).expect("y");
    plan.apply_device(alpha, &dxl, beta, &mut dy)
        .expect("apply_device");
    expect(
        check(&r, &download(gpu, &dy, 0..m)).ok,
        "apply_device, padded x",
    );
    failures.extend(gpu.synchronize().err().map(|e| format!("{what}: {e}")));
    failures
}

#[test]
fn gpu_cusparse_bsr_plan_pads_its_vectors_and_matches_the_oracle() {
    let Some((gpu, _lock)) =
        common::gpu_or_skip("gpu_cusparse_bsr_plan_pads_its_vectors_and_matches_the_oracle")
    else {
        return;
    };
    let mut failures = Vec::new();
    // 61 x 53 and 81 x 81: off every block size; 64 x 64: a multiple of 4 and 16 (no padding).
    for spec in [
        "uniform:61,53,4",
        "poisson2d:9",
        "poisson2d:8",
        "uniform:1000,997,9",
    ] {
        for block in [4, 16, 3] {
            failures.extend(bsr_case::<f32>(&gpu, spec, block));
            failures.extend(bsr_case::<f64>(&gpu, spec, block));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
