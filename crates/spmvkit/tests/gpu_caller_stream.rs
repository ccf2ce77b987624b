//! A plan's call on the caller's stream and memory (issue #23, the Python package's GPU path):
//! `Plan::apply_device_on` with a `Gpu::on_stream` view and `gpu::Borrowed` vectors.
//!
//! - every registered GPU method, and the reordered and windowed wrappers, in f32 and f64: the
//!   call enqueued on a stream of the caller's, behind a long job there that writes x, matches the
//!   oracle (a call that ran on spmvkit's own stream would read x before that job ends);
//! - the vectors as `Borrowed` raw addresses: y written in place, nothing freed on drop;
//! - calls alternating between two caller streams and the plan's own stream stay in order;
//! - the call captured into a CUDA graph on the caller's stream, replayed.
//!
//! Without a GPU every test prints a `skipped:` line and passes; with `SPMVKIT_REQUIRE_GPU=1` a
//! missing GPU fails.

mod common;

use std::sync::Arc;

use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use spmvkit::cpu::{check, oracle_spmv};
use spmvkit::gpu::{Borrowed, Gpu};
use spmvkit::methods::{registry, Params, PrepareFor};
use spmvkit::{Backend, Csr, Error, Plan, PlanOptions, Scalar};

fn gpu_opts() -> PlanOptions {
    PlanOptions {
        params: Params::default(),
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

fn read<T: Scalar>(s: &Arc<CudaStream>, v: &CudaSlice<T>, n: usize) -> Vec<T> {
    let mut h = vec![T::zero(); n];
    if n > 0 {
        s.memcpy_dtoh(&v.slice(0..n), h.as_mut_slice())
            .expect("device-to-host copy");
    }
    s.synchronize().expect("synchronize");
    h
}

/// The method specs checked: every GPU method, and the wrappers around one.
fn specs() -> Vec<String> {
    let mut s: Vec<String> = registry()
        .iter()
        .filter(|m| m.info().gpu)
        .map(|m| m.info().name.to_string())
        .collect();
    s.push("csr-vector[reorder=rcm]".into());
    s.push("merge[windows=3]".into());
    s.push("cusparse-bsr[reorder=rcm]".into());
    s
}

/// Every spec on `a` (square, so that reordering applies): x = 2·x_half is written by a long
/// job on the caller's stream (a scale of a large buffer, then of x), then the call on that
/// stream, then y read on it.
fn caller_stream_calls<T: PrepareFor>(gpu: &Arc<Gpu>) -> Vec<String> {
    let a: Csr<T> = spmvkit::gen::generate("uniform:301,301,5").expect("matrix");
    let (m, n) = (a.nrows(), a.ncols());
    let (alpha, beta) = (T::from_f64(1.5), T::from_f64(-0.5));
    let x = values::<T>(n, 2);
    let half: Vec<T> = x.iter().map(|&v| v * T::from_f64(0.5)).collect();
    let y0 = values::<T>(m, 3);
    let r = oracle_spmv(&a, alpha, &x, beta, &y0).expect("oracle");
    let stream = gpu.context().new_stream().expect("a caller's stream");
    let view = gpu.on_stream(stream.clone()).expect("view");
    let mut delay = gpu.alloc_zeros::<T>(1 << 25).expect("delay buffer");
    let mut failures = Vec::new();
    for spec in specs() {
        let name = format!("{spec} {}", T::PRECISION);
        let plan = match Plan::<T>::new(&spec, &a, &gpu_opts()) {
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
        let mut dx = gpu.upload(&half).expect("x");
        let mut dy = gpu.upload(&y0).expect("y");
        gpu.synchronize().expect("uploads");
        for _ in 0..4 {
            view.scale(&mut delay, 1 << 25, T::one()).expect("delay");
        }
        view.scale(&mut dx, n, T::from_f64(2.0))
            .expect("x = 2·x_half");
        if let Err(e) = plan.apply_device_on(&view, alpha, &dx, beta, &mut dy) {
            failures.push(format!("{name}: apply_device_on: {e}"));
            continue;
        }
        if !check(&r, &read(&stream, &dy, m)).ok {
            failures.push(format!("{name}: wrong y on the caller's stream"));
        }
        // The same call through borrowed raw addresses of the caller's buffers.
        let dy2 = gpu.upload(&y0).expect("y");
        gpu.synchronize().expect("upload");
        let (xp, yp) = (dx.device_ptr(&stream).0, dy2.device_ptr(&stream).0);
        // SAFETY: dx and dy2 are live buffers of n and m elements on this context, freed only
        // after the stream is synchronised below.
        let ran = unsafe {
            let bx = Borrowed::<T>::new(&stream, xp, n).expect("borrowed x");
            let mut by = Borrowed::<T>::new(&stream, yp, m).expect("borrowed y");
            plan.apply_device_on(&view, alpha, &bx, beta, &mut by)
        };
        match ran {
            Ok(()) if check(&r, &read(&stream, &dy2, m)).ok => {}
            Ok(()) => failures.push(format!("{name}: wrong y through borrowed addresses")),
            Err(e) => failures.push(format!("{name}: borrowed: {e}")),
        }
        // y of the wrong length is refused through the view too.
        let mut short = gpu.alloc_zeros::<T>(m - 1).expect("short y");
        if !matches!(
            plan.apply_device_on(&view, alpha, &dx, beta, &mut short),
            Err(Error::DimensionMismatch { .. })
        ) {
            failures.push(format!("{name}: a short y was not refused"));
        }
    }
    stream.synchronize().expect("caller's stream");
    failures
}

#[test]
fn gpu_every_method_runs_on_the_callers_stream() {
    let Some((gpu, _lock)) = common::gpu_or_skip("gpu_every_method_runs_on_the_callers_stream")
    else {
        return;
    };
    let mut failures = caller_stream_calls::<f32>(&gpu);
    failures.extend(caller_stream_calls::<f64>(&gpu));
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn gpu_calls_on_two_streams_and_the_plans_own_stay_in_order() {
    let Some((gpu, _lock)) =
        common::gpu_or_skip("gpu_calls_on_two_streams_and_the_plans_own_stay_in_order")
    else {
        return;
    };
    let a: Csr<f64> = spmvkit::gen::generate("uniform:2000,2000,8").expect("matrix");
    let n = a.nrows();
    // A reordered plan: its permuted x and y are scratch that every call shares.
    let plan = Plan::<f64>::new("csr-vector[reorder=rcm]", &a, &gpu_opts()).expect("plan");
    let streams: Vec<Arc<CudaStream>> = (0..2)
        .map(|_| gpu.context().new_stream().expect("stream"))
        .collect();
    let views: Vec<Gpu> = streams
        .iter()
        .map(|s| gpu.on_stream(s.clone()).expect("view"))
        .collect();
    let xs: Vec<Vec<f64>> = (0..6).map(|k| values::<f64>(n, k + 1)).collect();
    let dxs: Vec<CudaSlice<f64>> = xs.iter().map(|x| gpu.upload(x).expect("x")).collect();
    let mut dys: Vec<CudaSlice<f64>> = (0..6).map(|_| gpu.alloc_zeros(n).expect("y")).collect();
    gpu.synchronize().expect("uploads");
    for (k, (dx, dy)) in dxs.iter().zip(dys.iter_mut()).enumerate() {
        match k % 3 {
            2 => plan.apply_device(1.0, dx, 0.0, dy),
            s => plan.apply_device_on(&views[s], 1.0, dx, 0.0, dy),
        }
        .expect("call");
    }
    gpu.context().synchronize().expect("synchronize");
    for (k, (x, dy)) in xs.iter().zip(&dys).enumerate() {
        let r = oracle_spmv(&a, 1.0, x, 0.0, &vec![0.0; n]).expect("oracle");
        let got = read(gpu.stream(), dy, n);
        assert!(check(&r, &got).ok, "call {k}: wrong y");
    }
}

#[test]
fn gpu_a_call_on_the_callers_stream_is_captured_into_a_graph() {
    let Some((gpu, _lock)) =
        common::gpu_or_skip("gpu_a_call_on_the_callers_stream_is_captured_into_a_graph")
    else {
        return;
    };
    let a: Csr<f32> = spmvkit::gen::generate("uniform:500,400,6").expect("matrix");
    let (m, n) = (a.nrows(), a.ncols());
    let x = values::<f32>(n, 4);
    let y0 = values::<f32>(m, 5);
    let stream = gpu.context().new_stream().expect("stream");
    let view = gpu.on_stream(stream.clone()).expect("view");
    for spec in [
        "csr-vector",
        "cusparse",
        "merge[windows=2]",
        "csr-full-overlap",
    ] {
        let plan = Plan::<f32>::new(spec, &a, &gpu_opts()).expect("plan");
        let dx = gpu.upload(&x).expect("x");
        let mut dy = gpu.upload(&y0).expect("y");
        gpu.synchronize().expect("uploads");
        // A first call outside the capture, so that the capture starts after a stream switch.
        plan.apply_device_on(&view, 1.0, &dx, 1.0, &mut dy)
            .expect("call");
        stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)
            .expect("begin capture");
        let captured = plan.apply_device_on(&view, 1.0, &dx, 1.0, &mut dy);
        let graph = stream.end_capture(CUgraphInstantiate_flags(0));
        captured.unwrap_or_else(|e| panic!("{spec}: captured call: {e}"));
        let graph = graph.expect("end capture").expect("a graph");
        graph.launch().expect("launch");
        graph.launch().expect("launch");
        // y0 + 3·Ax: one call outside the graph, two replays.
        let r = oracle_spmv(&a, 3.0, &x, 1.0, &y0).expect("oracle");
        assert!(check(&r, &read(&stream, &dy, m)).ok, "{spec}: wrong y");
    }
}
