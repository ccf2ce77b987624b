//! The limits probe (issue #19): what the device can do at best for the two things an SpMV does,
//! streaming its arrays and gathering entries of x, measured once (`spmv probe`, and once per
//! `spmv bench` run on a GPU, saved in the run's machine record) and used for a lower bound on
//! the time of every result (`bench::limits`, docs/limits.md).
//!
//! - **Copy bandwidth** ([`Probe::copy_gbs`]): [`super::measure_copy_bandwidth`], a
//!   device-to-device copy of up to 1 GiB, bytes read plus bytes written.
//! - **Read bandwidth** ([`Probe::read_gbs`]): a read-only kernel that streams a buffer of up to
//!   1 GiB (less when free memory is short) once, grid-stride, 16-byte loads, four in flight per
//!   thread, and XORs what it reads into a value it writes only if it equals a constant (so the
//!   loads stay and nothing else moves).
//! - **Gather rate** ([`Probe::gather`]): for tables of 1, 2, 4, …, 1024 MiB and 4- and 8-byte
//!   elements, each thread sums `table[hash(g) & (n − 1)]` for its gather numbers g, eight
//!   independent loads per round, read through the read-only path as SpMV kernels read x. The
//!   index is a cheap in-kernel hash of g (lowbias32, a bijection of 32-bit words), not a
//!   precomputed index array, so only the table is read: one element per random 32-byte sector.
//!   The rate is in 10⁹ gathers (elements) per second.
//!
//! Every figure is the median of [`ProbeOptions::samples`] samples timed with CUDA events; the
//! whole probe takes well under 2 s on a current GPU (about 2²⁷ gathers per table size).

use std::time::Instant;

use cudarc::driver::CudaSlice;
use serde::{Deserialize, Serialize};

use super::{
    measure_copy_bandwidth, time_stream, DevMut, DevRef, Gpu, Kernels, Shape, TimingConfig,
};
use crate::error::{Error, Result};

crate::kernel_args! {
    /// `spmvkit_probe_fill`'s arguments: p[i] = hash(i) for i < n.
    struct ProbeFillArgs<'a> {
        p: DevMut<'a, u32>,
        n: u64,
    }
}

crate::kernel_args! {
    /// `spmvkit_probe_read`'s arguments: n 16-byte vectors of p, XORed into out[0] at most.
    struct ProbeReadArgs<'a> {
        p: DevRef<'a, u32>,
        n: u64,
        out: DevMut<'a, u32>,
    }
}

crate::kernel_args! {
    /// The gathers' arguments: `rounds` rounds of loads from the table of `mask + 1` elements.
    struct ProbeGatherArgs<'a> {
        table: DevRef<'a, u32>,
        mask: u32,
        rounds: u32,
        seed: u32,
        out: DevMut<'a, u32>,
    }
}

/// The probe's kernels (`probe.cu`): fill, streaming read, 4- and 8-byte gathers.
pub const PROBE_KERNELS: Kernels = Kernels::new(
    "spmvkit-probe",
    include_str!("probe.cu"),
    &[
        ProbeFillArgs::entry("spmvkit_probe_fill"),
        ProbeReadArgs::entry("spmvkit_probe_read"),
        ProbeGatherArgs::entry("spmvkit_probe_gather4"),
        ProbeGatherArgs::entry("spmvkit_probe_gather8"),
    ],
);

/// Gather table sizes: 1 MiB to 1 GiB, doubling.
pub const GATHER_TABLE_BYTES: [u64; 11] = [
    1 << 20,
    2 << 20,
    4 << 20,
    8 << 20,
    16 << 20,
    32 << 20,
    64 << 20,
    128 << 20,
    256 << 20,
    512 << 20,
    1 << 30,
];

/// Element sizes of the gather measurement: f32 and f64 entries of x.
pub const GATHER_ELEM_BYTES: [u32; 2] = [4, 8];

/// Threads per block of the probe kernels.
const BLOCK: u32 = 256;
/// Blocks per SM: 2048 resident threads per SM on sm_80 and sm_90.
const BLOCKS_PER_SM: usize = 8;
/// Loads per thread and round in the gather kernels (`PROBE_GATHER_UNROLL` in probe.cu).
const GATHER_UNROLL: usize = 8;

/// One point of the gather curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GatherPoint {
    /// Table size in bytes (a power of two).
    pub table_bytes: u64,
    /// Element size in bytes: 4 (f32) or 8 (f64).
    pub elem_bytes: u32,
    /// Random gathers per second, in units of 10⁹.
    pub rate_gps: f64,
}

/// What the device does at best: streaming bandwidths and the random-gather rate by table size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    /// The device measured.
    pub device: String,
    /// Device-to-device copy bandwidth, bytes read plus written, GB/s (10⁹ bytes/s).
    pub copy_gbs: f64,
    /// Streaming-read bandwidth, GB/s (10⁹ bytes/s).
    pub read_gbs: f64,
    /// Bytes the read measurement streamed per call.
    pub read_bytes: u64,
    /// Gathers per timed call of each gather point.
    pub gathers_per_call: u64,
    /// The gather curve, by element size then table size.
    pub gather: Vec<GatherPoint>,
    /// Wall time of the whole probe, ms (kernel compilation included).
    pub elapsed_ms: f64,
}

impl Probe {
    /// The gather rate (10⁹ gathers/s) for a vector of `x_bytes` bytes with elements of
    /// `elem_bytes` bytes: piecewise linear in log₂(table size) between the measured points,
    /// clamped to the first and last points outside them. `None` without a valid point of that
    /// element size.
    pub fn gather_rate(&self, x_bytes: u64, elem_bytes: u32) -> Option<f64> {
        let mut pts: Vec<(f64, f64)> = self
            .gather
            .iter()
            .filter(|g| g.elem_bytes == elem_bytes && g.table_bytes > 0)
            .filter(|g| g.rate_gps.is_finite() && g.rate_gps > 0.0)
            .map(|g| ((g.table_bytes as f64).log2(), g.rate_gps))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (&first, &last) = (pts.first()?, pts.last()?);
        let x = (x_bytes.max(1) as f64).log2();
        if x <= first.0 {
            return Some(first.1);
        }
        for w in pts.windows(2) {
            let ((x0, r0), (x1, r1)) = (w[0], w[1]);
            if x <= x1 {
                return Some(r0 + (x - x0) / (x1 - x0) * (r1 - r0));
            }
        }
        Some(last.1)
    }

    /// The read bandwidth in bytes per second, when it is a usable figure.
    pub fn read_bytes_per_s(&self) -> Option<f64> {
        (self.read_gbs.is_finite() && self.read_gbs > 0.0).then_some(self.read_gbs * 1e9)
    }
}

/// How much to measure.
#[derive(Clone, Debug)]
pub struct ProbeOptions {
    /// Bytes of the streaming-read buffer, which also holds the gather tables (capped by half
    /// the free device memory).
    pub read_bytes: usize,
    /// Largest gather table, bytes.
    pub max_table_bytes: u64,
    /// Gathers per timed call (rounded down to whole rounds of every thread).
    pub gathers: usize,
    /// Timed samples per figure; the median is kept.
    pub samples: usize,
}

impl Default for ProbeOptions {
    /// 1 GiB read buffer, tables up to 1 GiB, 2²⁷ gathers per call, 5 samples.
    fn default() -> Self {
        ProbeOptions {
            read_bytes: 1 << 30,
            max_table_bytes: 1 << 30,
            gathers: 1 << 27,
            samples: 5,
        }
    }
}

/// The table sizes measured for a buffer of `buffer_bytes` and a cap of `max_table_bytes`.
pub fn table_sizes(buffer_bytes: u64, max_table_bytes: u64) -> Vec<u64> {
    GATHER_TABLE_BYTES
        .into_iter()
        .filter(|&b| b <= buffer_bytes && b <= max_table_bytes)
        .collect()
}

/// Rounds of eight loads (`PROBE_GATHER_UNROLL` in probe.cu) per thread for about `gathers`
/// gathers over `threads` threads (at least one round), and the gathers that makes.
pub fn gather_rounds(gathers: usize, threads: usize) -> (u32, u64) {
    let per_round = (threads * GATHER_UNROLL).max(1);
    let rounds = (gathers / per_round).clamp(1, u32::MAX as usize);
    (rounds as u32, (rounds * per_round) as u64)
}

/// Measures the probe on `gpu` ([module doc](self)).
pub fn run_probe(gpu: &Gpu, opts: &ProbeOptions) -> Result<Probe> {
    if opts.samples == 0 || opts.gathers == 0 {
        return Err(Error::InvalidArgument(
            "probe: at least one sample and one gather per call".into(),
        ));
    }
    let start = Instant::now();
    let copy_gbs = measure_copy_bandwidth(gpu)?;

    let bytes = super::timing::scratch_bytes(gpu, "limits probe", opts.read_bytes, 2, 0x10000)?;
    let words = bytes / 4;
    let mut buf: CudaSlice<u32> = gpu.alloc_zeros(words)?;
    let mut out: CudaSlice<u32> = gpu.alloc_zeros(1)?;
    let blocks = gpu.sm_count() * BLOCKS_PER_SM;
    let threads = blocks * BLOCK as usize;
    let shape = Shape::ctas(blocks, BLOCK);

    let fill = gpu.kernel::<f32, ProbeFillArgs>(&PROBE_KERNELS, "spmvkit_probe_fill")?;
    let args = ProbeFillArgs {
        p: DevMut::new(&mut buf),
        n: words as u64,
    };
    // SAFETY: the kernel writes p[..n], and n = buf.len().
    unsafe { gpu.launch(&fill, shape, &args) }?;

    let read = gpu.kernel::<f32, ProbeReadArgs>(&PROBE_KERNELS, "spmvkit_probe_read")?;
    let n16 = (bytes / 16) as u64;
    let args = ProbeReadArgs {
        p: DevRef::new(&buf),
        n: n16,
        out: DevMut::new(&mut out),
    };
    let read_cfg = TimingConfig {
        warmup: 1,
        calls: 3,
        samples: opts.samples,
    };
    // SAFETY: the kernel reads n·16 ≤ bytes of buf and writes out[0] at most.
    let t = time_stream(gpu, &read_cfg, || unsafe {
        gpu.launch(&read, shape, &args)
    })?;
    let read_gbs = (n16 * 16) as f64 / (t.median_us * 1e-6) / 1e9;

    let (rounds, gathers) = gather_rounds(opts.gathers, threads);
    let gather_cfg = TimingConfig {
        warmup: 1,
        calls: 1,
        samples: opts.samples,
    };
    let mut gather = Vec::new();
    for elem in GATHER_ELEM_BYTES {
        let entry = if elem == 4 {
            "spmvkit_probe_gather4"
        } else {
            "spmvkit_probe_gather8"
        };
        let f = gpu.kernel::<f32, ProbeGatherArgs>(&PROBE_KERNELS, entry)?;
        for (k, table_bytes) in table_sizes(bytes as u64, opts.max_table_bytes)
            .into_iter()
            .enumerate()
        {
            // table_bytes ≤ bytes ≤ 2^31·16, so the element count fits 32 bits
            let mask = (table_bytes / u64::from(elem) - 1) as u32;
            let seed = 0x9e37_79b9u32.wrapping_mul(k as u32 + 1);
            let args = ProbeGatherArgs {
                table: DevRef::new(&buf),
                mask,
                rounds,
                seed,
                out: DevMut::new(&mut out),
            };
            // SAFETY: every index is ≤ mask, and (mask + 1)·elem = table_bytes ≤ the bytes of
            // buf; the kernel writes out[0] at most.
            let t = time_stream(gpu, &gather_cfg, || unsafe { gpu.launch(&f, shape, &args) })?;
            gather.push(GatherPoint {
                table_bytes,
                elem_bytes: elem,
                rate_gps: gathers as f64 / (t.median_us * 1e-6) / 1e9,
            });
        }
    }
    gpu.synchronize()?;
    Ok(Probe {
        device: gpu.name().to_string(),
        copy_gbs,
        read_gbs,
        read_bytes: n16 * 16,
        gathers_per_call: gathers,
        gather,
        elapsed_ms: start.elapsed().as_secs_f64() * 1e3,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(points: &[(u64, u32, f64)]) -> Probe {
        Probe {
            device: "Test GPU".into(),
            copy_gbs: 4000.0,
            read_gbs: 4200.0,
            read_bytes: 1 << 30,
            gathers_per_call: 1 << 27,
            gather: points
                .iter()
                .map(|&(table_bytes, elem_bytes, rate_gps)| GatherPoint {
                    table_bytes,
                    elem_bytes,
                    rate_gps,
                })
                .collect(),
            elapsed_ms: 500.0,
        }
    }

    const MIB: u64 = 1 << 20;

    #[test]
    fn gather_rate_interpolates_in_log_size_and_clamps() {
        let p = probe(&[
            (4 * MIB, 4, 100.0),
            (MIB, 4, 200.0),
            (16 * MIB, 4, 50.0),
            (MIB, 8, 180.0),
        ]);
        let r = |x: u64, e: u32| p.gather_rate(x, e).unwrap();
        // at the points, whatever their order in the list
        assert_eq!(r(MIB, 4), 200.0);
        assert_eq!(r(4 * MIB, 4), 100.0);
        assert_eq!(r(16 * MIB, 4), 50.0);
        // halfway in log size: 2 MiB between 1 and 4 MiB, 8 MiB between 4 and 16 MiB
        assert!((r(2 * MIB, 4) - 150.0).abs() < 1e-9);
        assert!((r(8 * MIB, 4) - 75.0).abs() < 1e-9);
        // a quarter of the way: 2^20.5 bytes
        let x = (MIB as f64 * 2f64.sqrt()) as u64;
        assert!((r(x, 4) - 175.0).abs() < 1e-4, "{}", r(x, 4));
        // clamped outside the measured sizes, zero included
        assert_eq!(r(0, 4), 200.0);
        assert_eq!(r(1000, 4), 200.0);
        assert_eq!(r(1 << 40, 4), 50.0);
        // one point: that rate everywhere
        assert_eq!(r(1 << 40, 8), 180.0);
        assert_eq!(r(1, 8), 180.0);
        // no point of that size, or no valid point
        assert_eq!(p.gather_rate(MIB, 2), None);
        let bad = probe(&[(MIB, 4, f64::NAN), (2 * MIB, 4, 0.0), (0, 4, 9.0)]);
        assert_eq!(bad.gather_rate(MIB, 4), None);
        assert_eq!(probe(&[]).gather_rate(MIB, 8), None);
    }

    #[test]
    fn gather_rate_is_monotone_between_monotone_points() {
        let pts: Vec<(u64, u32, f64)> = GATHER_TABLE_BYTES
            .iter()
            .enumerate()
            .map(|(k, &b)| (b, 8, 300.0 / (k + 1) as f64))
            .collect();
        let p = probe(&pts);
        let mut last = f64::INFINITY;
        for shift in 16..34 {
            for frac in [1.0, 1.3, 1.7] {
                let x = ((1u64 << shift) as f64 * frac) as u64;
                let r = p.gather_rate(x, 8).unwrap();
                assert!(r <= last + 1e-12, "{x}: {r} > {last}");
                last = r;
            }
        }
    }

    #[test]
    fn probe_survives_json() {
        let p = probe(&[(MIB, 4, 123.5), (MIB, 8, 99.25)]);
        let back: Probe = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn table_sizes_and_rounds() {
        assert_eq!(GATHER_TABLE_BYTES.len(), 11);
        assert_eq!(table_sizes(1 << 30, 1 << 30), GATHER_TABLE_BYTES.to_vec());
        assert_eq!(table_sizes((1 << 30) - 1, 1 << 30).len(), 10);
        assert_eq!(table_sizes(1 << 30, 4 * MIB), vec![MIB, 2 * MIB, 4 * MIB]);
        assert!(table_sizes(MIB - 1, 1 << 30).is_empty());
        // 132 SMs × 2048 threads: 62 rounds of 8 loads for 2^27 gathers
        let threads = 132 * 2048;
        let (rounds, gathers) = gather_rounds(1 << 27, threads);
        assert_eq!(rounds, 62);
        assert_eq!(gathers, 62 * 8 * threads as u64);
        assert!(gathers <= 1 << 27 && gathers as usize + 8 * threads > 1 << 27);
        assert_eq!(gather_rounds(1, threads), (1, 8 * threads as u64));
    }

    /// On a GPU: the probe runs, its figures are plausible and it stays within its time budget.
    #[test]
    fn gpu_probe_measures_plausible_figures() {
        let Some(gpu) = crate::testing::gpu_or_skip("gpu_probe_measures_plausible_figures") else {
            return;
        };
        let _lock = crate::testing::gpu_lock();
        let p = run_probe(&gpu, &ProbeOptions::default()).unwrap();
        assert!(p.copy_gbs > 10.0 && p.read_gbs > 10.0, "{p:?}");
        assert!(p.read_bytes >= 1 << 20);
        assert_eq!(
            p.gather.len(),
            2 * table_sizes(p.read_bytes, 1 << 30).len(),
            "{p:?}"
        );
        for g in &p.gather {
            assert!(g.rate_gps.is_finite() && g.rate_gps > 0.1, "{g:?}");
        }
        assert!(p.elapsed_ms < 5000.0, "the probe took {} ms", p.elapsed_ms);
        let small = p.gather_rate(1 << 20, 8).unwrap();
        let large = p.gather_rate(1 << 30, 8).unwrap();
        assert!(small >= large, "1 MiB {small} < 1 GiB {large}: {p:?}");
    }
}
