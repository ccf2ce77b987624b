//! The timing protocol shared by the CLI and the harness (issue #3; methods.md §0: "median of
//! K×N back-to-back calls with events", stream and graph timings reported apart).
//!
//! - Stream mode: after `warmup` calls, K samples; each sample records a CUDA event, enqueues N
//!   back-to-back calls on [`Gpu::stream`], records a second event, and gives the elapsed time / N.
//! - Graph mode: after the same warm-up, the N calls are captured once into a CUDA graph, which
//!   is replayed K times (one launch per sample), each sample again elapsed / N.
//!
//! Both report the median per-call time in µs plus min, max and every sample. The closure enqueues
//! one complete call and must not synchronise (a `DeviceLayout::run` never does).
//!
//! [`measure_copy_bandwidth`] gives the device-to-device copy bandwidth (read + write bytes), the
//! reference for the harness's "% of copy bandwidth".

use cudarc::driver::sys::{CUevent_flags, CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaEvent, CudaSlice};
use serde::Serialize;

use super::Gpu;
use crate::error::{Error, Result};
use crate::stats::sample_stats;

/// How many calls to time: `warmup` untimed calls, then `samples` (K) samples of `calls` (N)
/// back-to-back calls each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TimingConfig {
    pub warmup: usize,
    /// N: calls per sample.
    pub calls: usize,
    /// K: samples.
    pub samples: usize,
}

impl Default for TimingConfig {
    /// 10 warm-up calls, 5 samples of 100 calls (methods.md §0).
    fn default() -> Self {
        TimingConfig {
            warmup: 10,
            calls: 100,
            samples: 5,
        }
    }
}

/// Calls enqueued on a stream, or replayed from a CUDA graph: how a call was timed, and which
/// of a run record's two times ([`crate::bench::RunRecord::time`] or
/// [`crate::bench::RunRecord::graph_time`]) a report compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimingMode {
    /// Back-to-back launches on one stream (CPU: wall clock).
    Stream,
    /// Replayed from a captured CUDA graph (GPU only).
    Graph,
}

impl TimingMode {
    /// How a report names the mode: `stream` or `CUDA graph` (`Display` gives the short
    /// `stream` / `graph`).
    pub fn label(self) -> &'static str {
        match self {
            TimingMode::Stream => "stream",
            TimingMode::Graph => "CUDA graph",
        }
    }
}

impl std::fmt::Display for TimingMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TimingMode::Stream => "stream",
            TimingMode::Graph => "graph",
        })
    }
}

/// The outcome of one timing: per-call times in microseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Timing {
    pub mode: TimingMode,
    pub config: TimingConfig,
    /// Median over samples of the per-call time.
    pub median_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// Per-call time of each sample, in order.
    pub samples_us: Vec<f64>,
}

impl Timing {
    /// How many calls the timing executed on the device, warm-up included: warmup + K·N on a
    /// stream, and warmup + N·(K + 1) from a graph (the captured N are launched once before the K
    /// timed replays). Capturing executes nothing.
    pub fn executions(&self) -> u64 {
        let TimingConfig {
            warmup,
            calls,
            samples,
        } = self.config;
        let launches = match self.mode {
            TimingMode::Stream => samples,
            TimingMode::Graph => samples + 1,
        };
        (warmup + calls * launches) as u64
    }

    fn from_samples(mode: TimingMode, config: TimingConfig, samples_us: Vec<f64>) -> Timing {
        let (median_us, min_us, max_us) =
            sample_stats(&samples_us).unwrap_or((f64::NAN, f64::NAN, f64::NAN));
        Timing {
            mode,
            config,
            median_us,
            min_us,
            max_us,
            samples_us,
        }
    }
}

fn check_config(cfg: &TimingConfig) -> Result<()> {
    if cfg.calls == 0 || cfg.samples == 0 {
        return Err(Error::InvalidArgument(format!(
            "timing needs at least one call and one sample (calls = {}, samples = {})",
            cfg.calls, cfg.samples
        )));
    }
    Ok(())
}

fn timing_event(gpu: &Gpu) -> Result<CudaEvent> {
    gpu.context()
        .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(|e| Error::cuda("creating a timing event", e))
}

fn record(ev: &CudaEvent, gpu: &Gpu) -> Result<()> {
    ev.record(gpu.stream())
        .map_err(|e| Error::cuda("recording an event", e))
}

fn elapsed_us(start: &CudaEvent, end: &CudaEvent) -> Result<f64> {
    start
        .elapsed_ms(end)
        .map(|ms| ms as f64 * 1e3)
        .map_err(|e| Error::cuda("reading an event time", e))
}

/// Checks `cfg`, then makes its warm-up calls of `f` and waits for them.
fn warm_up(gpu: &Gpu, cfg: &TimingConfig, f: &mut impl FnMut() -> Result<()>) -> Result<()> {
    check_config(cfg)?;
    for _ in 0..cfg.warmup {
        f()?;
    }
    gpu.synchronize()
}

/// Times `f` (which enqueues one call) in the given mode.
pub fn time(
    gpu: &Gpu,
    mode: TimingMode,
    cfg: &TimingConfig,
    f: impl FnMut() -> Result<()>,
) -> Result<Timing> {
    match mode {
        TimingMode::Stream => time_stream(gpu, cfg, f),
        TimingMode::Graph => time_graph(gpu, cfg, f),
    }
}

/// Stream mode: events around N back-to-back calls, K samples.
pub fn time_stream(
    gpu: &Gpu,
    cfg: &TimingConfig,
    mut f: impl FnMut() -> Result<()>,
) -> Result<Timing> {
    warm_up(gpu, cfg, &mut f)?;
    sample(gpu, cfg, TimingMode::Stream, || {
        for _ in 0..cfg.calls {
            f()?;
        }
        Ok(())
    })
}

/// K samples: events around `calls` (which enqueues the N calls), each divided by N.
fn sample(
    gpu: &Gpu,
    cfg: &TimingConfig,
    mode: TimingMode,
    mut calls: impl FnMut() -> Result<()>,
) -> Result<Timing> {
    let (start, end) = (timing_event(gpu)?, timing_event(gpu)?);
    let mut samples = Vec::with_capacity(cfg.samples);
    for _ in 0..cfg.samples {
        record(&start, gpu)?;
        calls()?;
        record(&end, gpu)?;
        samples.push(elapsed_us(&start, &end)? / cfg.calls as f64);
    }
    Ok(Timing::from_samples(mode, *cfg, samples))
}

/// Captures `n` enqueues (`step(i)` for i < n) on the GPU's stream into an uploaded CUDA graph.
/// The capture is ended on every path, so the stream is usable again after an error.
pub fn capture_graph(
    gpu: &Gpu,
    n: usize,
    mut step: impl FnMut(usize) -> Result<()>,
) -> Result<cudarc::driver::CudaGraph> {
    let stream = gpu.stream();
    stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)
        .map_err(|e| Error::cuda("beginning graph capture", e))?;
    let mut enqueued = Ok(());
    for i in 0..n {
        enqueued = step(i);
        if enqueued.is_err() {
            break;
        }
    }
    let graph = stream.end_capture(CUgraphInstantiate_flags(0));
    enqueued?;
    let graph = graph
        .map_err(|e| Error::cuda("ending graph capture", e))?
        .ok_or_else(|| Error::cuda("graph capture", "the captured calls enqueued no work"))?;
    graph
        .upload()
        .map_err(|e| Error::cuda("uploading the graph", e))?;
    Ok(graph)
}

/// Graph mode: the N calls captured once into a CUDA graph, replayed K times.
pub fn time_graph(
    gpu: &Gpu,
    cfg: &TimingConfig,
    mut f: impl FnMut() -> Result<()>,
) -> Result<Timing> {
    warm_up(gpu, cfg, &mut f)?;
    let graph = capture_graph(gpu, cfg.calls, |_| f())?;
    graph
        .launch()
        .map_err(|e| Error::cuda("launching the graph", e))?;
    gpu.synchronize()?;
    sample(gpu, cfg, TimingMode::Graph, || {
        graph
            .launch()
            .map_err(|e| Error::cuda("launching the graph", e))
    })
}

/// Bytes for a probe's scratch buffer: `want`, but at most 1/`share` of the free device memory,
/// rounded down to a multiple of `align` (a power of two); `DeviceMemory` for `what` when that
/// leaves less than 1 MiB.
pub(crate) fn scratch_bytes(
    gpu: &Gpu,
    what: &str,
    want: usize,
    share: usize,
    align: usize,
) -> Result<usize> {
    let (free, _) = gpu.memory()?;
    let bytes = want.min(free / share) & !(align - 1);
    if bytes < (1 << 20) {
        return Err(Error::DeviceMemory {
            what: what.into(),
            needed: 2 << 20,
            free: free as u64,
        });
    }
    Ok(bytes)
}

/// Device-to-device copy bandwidth in GB/s (10^9 bytes/s), counting bytes read plus bytes
/// written: the median of 5 samples of 5 copies of up to 1 GiB (less when memory is short).
pub fn measure_copy_bandwidth(gpu: &Gpu) -> Result<f64> {
    let words = scratch_bytes(gpu, "copy-bandwidth probe", 1 << 30, 4, 0x1000)? / 4;
    let src: CudaSlice<u32> = gpu.alloc_zeros(words)?;
    let mut dst: CudaSlice<u32> = gpu.alloc_zeros(words)?;
    let cfg = TimingConfig {
        warmup: 2,
        calls: 5,
        samples: 5,
    };
    let stream = gpu.stream().clone();
    let t = time_stream(gpu, &cfg, || {
        stream
            .memcpy_dtod(&src, &mut dst)
            .map_err(|e| Error::cuda("device-to-device copy", e))
    })?;
    Ok(2.0 * (words * 4) as f64 / (t.median_us * 1e-6) / 1e9)
}
