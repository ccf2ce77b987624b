//! The limits probe (issue #19): what the device can do at best for the two things an SpMV does,
//! streaming its arrays and gathering entries of x, and for the gathers of an SpMM with a
//! row-major block (issue #24), whole rows of X, measured once (`spmv probe`, and once per
//! `spmv bench` run on a GPU, saved in the run's machine record) and used for a lower bound on
//! the time of every result (`bench::limits`, `bench::multi`, docs/limits.md).
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
//! - **Row-gather rate** ([`Probe::rows`]): for the same tables and rows of 16, 32, …, 1024
//!   bytes ([`ROW_BYTES`]), each aligned to its size, a group of min(row ÷ 16, 32) lanes loads
//!   the row `hash(g) & (rows − 1)` with 16-byte loads through the read-only path, several
//!   independent rows in flight per group (`PROBE_ROW_INFLIGHT` loads per lane). About
//!   [`ProbeOptions::row_bytes_per_call`] bytes per timed call; the rate is in 10⁹ rows per
//!   second ([`RowPoint::gbs`]: × the row's bytes). Runs made before it have no row points.
//!
//! Every figure is the median of [`ProbeOptions::samples`] samples timed with CUDA events; the
//! whole probe takes well under 2 s on a current GPU (about 2²⁷ gathers per table size; the row
//! gathers, 512 MiB per call, add about 0.1–0.2 s: docs/limits.md).

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

/// The probe's kernels (`probe.cu`): fill, streaming read, 4- and 8-byte gathers, row gathers
/// (one entry per row size of [`ROW_BYTES`], `spmvkit_probe_rows<bytes>`; `mask + 1` is then the
/// table's rows).
pub const PROBE_KERNELS: Kernels = Kernels::new(
    "spmvkit-probe",
    include_str!("probe.cu"),
    &[
        ProbeFillArgs::entry("spmvkit_probe_fill"),
        ProbeReadArgs::entry("spmvkit_probe_read"),
        ProbeGatherArgs::entry("spmvkit_probe_gather4"),
        ProbeGatherArgs::entry("spmvkit_probe_gather8"),
        ProbeGatherArgs::entry(ROW_ENTRIES[0]),
        ProbeGatherArgs::entry(ROW_ENTRIES[1]),
        ProbeGatherArgs::entry(ROW_ENTRIES[2]),
        ProbeGatherArgs::entry(ROW_ENTRIES[3]),
        ProbeGatherArgs::entry(ROW_ENTRIES[4]),
        ProbeGatherArgs::entry(ROW_ENTRIES[5]),
        ProbeGatherArgs::entry(ROW_ENTRIES[6]),
    ],
);

/// Row sizes of the row-gather measurement, bytes: an X row of k values of vb bytes in a
/// row-major block (16 bytes: k = 2 in f64; 256 bytes: k = 32 in f64).
pub const ROW_BYTES: [u32; 7] = [16, 32, 64, 128, 256, 512, 1024];

/// The row-gather entry of each size in [`ROW_BYTES`].
const ROW_ENTRIES: [&str; 7] = [
    "spmvkit_probe_rows16",
    "spmvkit_probe_rows32",
    "spmvkit_probe_rows64",
    "spmvkit_probe_rows128",
    "spmvkit_probe_rows256",
    "spmvkit_probe_rows512",
    "spmvkit_probe_rows1024",
];

/// 16-byte loads in flight per lane and round in the row gathers (`PROBE_ROW_INFLIGHT`).
const ROW_INFLIGHT: u32 = 4;

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

/// One point of the row-gather curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RowPoint {
    /// Table size in bytes (a power of two).
    pub table_bytes: u64,
    /// Row size in bytes (one of [`ROW_BYTES`]); rows are aligned to it.
    pub row_bytes: u32,
    /// Rows gathered per timed call.
    pub rows_per_call: u64,
    /// Random rows per second, in units of 10⁹.
    pub rate_grs: f64,
}

impl RowPoint {
    /// The bytes the rows deliver: rows/s × row bytes, GB/s (10⁹ bytes/s).
    pub fn gbs(&self) -> f64 {
        self.rate_grs * f64::from(self.row_bytes)
    }
}

/// What the device does at best: streaming bandwidths, the random-gather rate by table size and
/// the random-row-gather rate by row and table size.
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
    /// The row-gather curve, by row size then table size; empty in runs made before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<RowPoint>,
    /// Wall time of the row gathers alone, ms (part of `elapsed_ms`); absent before them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows_ms: Option<f64>,
    /// Wall time of the whole probe, ms (kernel compilation included).
    pub elapsed_ms: f64,
}

/// Piecewise linear in log₂(table size) between the points (log₂ table bytes, rate), clamped to
/// the first and last point outside them; `None` without a point.
fn at_table_size(mut pts: Vec<(f64, f64)>, table_bytes: u64) -> Option<f64> {
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (&first, &last) = (pts.first()?, pts.last()?);
    let x = (table_bytes.max(1) as f64).log2();
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

/// Whether a measured rate is usable.
fn usable(table_bytes: u64, rate: f64) -> bool {
    table_bytes > 0 && rate.is_finite() && rate > 0.0
}

impl Probe {
    /// The gather rate (10⁹ gathers/s) for a vector of `x_bytes` bytes with elements of
    /// `elem_bytes` bytes: piecewise linear in log₂(table size) between the measured points,
    /// clamped to the first and last points outside them. `None` without a valid point of that
    /// element size.
    pub fn gather_rate(&self, x_bytes: u64, elem_bytes: u32) -> Option<f64> {
        let pts = self
            .gather
            .iter()
            .filter(|g| g.elem_bytes == elem_bytes && usable(g.table_bytes, g.rate_gps))
            .map(|g| ((g.table_bytes as f64).log2(), g.rate_gps))
            .collect();
        at_table_size(pts, x_bytes)
    }

    /// The row sizes with a usable row-gather point, ascending.
    pub fn row_sizes(&self) -> Vec<u32> {
        let mut w: Vec<u32> = self
            .rows
            .iter()
            .filter(|r| r.row_bytes > 0 && usable(r.table_bytes, r.rate_grs))
            .map(|r| r.row_bytes)
            .collect();
        w.sort_unstable();
        w.dedup();
        w
    }

    /// The row-gather rate (10⁹ rows/s) for rows of `row_bytes` bytes gathered from an X of
    /// `x_bytes` bytes. For a measured row size: piecewise linear in log₂(table size) as
    /// [`Probe::gather_rate`]. Between two measured sizes w₀ < w < w₁: log-linear in the row
    /// size, rate(w₀)·(rate(w₁)/rate(w₀))^(log(w/w₀)/log(w₁/w₀)), both taken at x's size (exact
    /// when rows/s fall as a power of the size). Wider than the widest measured size w_max:
    /// rate(w_max)·w_max/w, the widest rows' bytes per second (bandwidth-bound). `None` without
    /// row points, or for rows narrower than the narrowest measured (a narrower row can go
    /// faster than any measured rate, so none is a bound for it).
    pub fn row_rate(&self, x_bytes: u64, row_bytes: u64) -> Option<f64> {
        let sizes = self.row_sizes();
        let at = |w: u32| {
            let pts = self
                .rows
                .iter()
                .filter(|r| r.row_bytes == w && usable(r.table_bytes, r.rate_grs))
                .map(|r| ((r.table_bytes as f64).log2(), r.rate_grs))
                .collect();
            at_table_size(pts, x_bytes)
        };
        let (&narrowest, &widest) = (sizes.first()?, sizes.last()?);
        if row_bytes < u64::from(narrowest) {
            return None;
        }
        if row_bytes >= u64::from(widest) {
            return Some(at(widest)? * f64::from(widest) / row_bytes as f64);
        }
        let hi = sizes.iter().position(|&w| u64::from(w) >= row_bytes)?;
        let w1 = sizes[hi];
        if u64::from(w1) == row_bytes {
            return at(w1);
        }
        let w0 = sizes[hi - 1];
        let (r0, r1) = (at(w0)?, at(w1)?);
        let f = (row_bytes as f64 / f64::from(w0)).ln() / (f64::from(w1) / f64::from(w0)).ln();
        Some(r0 * (r1 / r0).powf(f))
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
    /// Bytes of rows per timed call of each row-gather point (rounded down to whole rounds of
    /// every group); 0 measures no rows.
    pub row_bytes_per_call: usize,
}

impl Default for ProbeOptions {
    /// 1 GiB read buffer, tables up to 1 GiB, 2²⁷ gathers per call, 5 samples, 512 MiB of
    /// rows per row-gather call.
    fn default() -> Self {
        ProbeOptions {
            read_bytes: 1 << 30,
            max_table_bytes: 1 << 30,
            gathers: 1 << 27,
            samples: 5,
            row_bytes_per_call: 1 << 29,
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

/// The lanes that load one row of `row_bytes` (a power of two, 16 to 1024) and the rows each group
/// of them has in flight per round, as `probe_rows` in probe.cu.
fn row_group(row_bytes: u32) -> (u32, u32) {
    let vecs = row_bytes / 16;
    let lanes = vecs.min(32);
    (lanes, ROW_INFLIGHT / (vecs / lanes))
}

/// Rounds per group for about `bytes` bytes of rows of `row_bytes` over `threads` threads (at
/// least one round), and the rows that makes.
pub fn row_rounds(bytes: usize, threads: usize, row_bytes: u32) -> (u32, u64) {
    let (lanes, per_group) = row_group(row_bytes);
    let per_round = (threads / lanes as usize * per_group as usize).max(1);
    let rows = bytes / row_bytes as usize;
    let rounds = (rows / per_round).clamp(1, u32::MAX as usize);
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
    let tables = table_sizes(bytes as u64, opts.max_table_bytes);
    // One gather kernel (elements or rows of `unit` bytes) over the first `table_bytes` of buf:
    // the median µs of its timed calls. table_bytes ≤ 1 GiB, so the unit count fits 32 bits.
    let mut time_table = |f: &super::Kernel<ProbeGatherArgs<'static>>,
                          unit: u32,
                          table_bytes: u64,
                          rounds: u32,
                          seed: u32|
     -> Result<f64> {
        let args = ProbeGatherArgs {
            table: DevRef::new(&buf),
            mask: (table_bytes / u64::from(unit) - 1) as u32,
            rounds,
            seed,
            out: DevMut::new(&mut out),
        };
        // SAFETY: every index is ≤ mask, and (mask + 1)·unit = table_bytes ≤ the bytes of buf;
        // the kernel writes out[0] at most.
        Ok(time_stream(gpu, &gather_cfg, || unsafe { gpu.launch(f, shape, &args) })?.median_us)
    };
    let mut gather = Vec::new();
    for elem in GATHER_ELEM_BYTES {
        let entry = if elem == 4 {
            "spmvkit_probe_gather4"
        } else {
            "spmvkit_probe_gather8"
        };
        let f = gpu.kernel::<f32, ProbeGatherArgs>(&PROBE_KERNELS, entry)?;
        for (k, &table_bytes) in tables.iter().enumerate() {
            let seed = 0x9e37_79b9u32.wrapping_mul(k as u32 + 1);
            let us = time_table(&f, elem, table_bytes, rounds, seed)?;
            gather.push(GatherPoint {
                table_bytes,
                elem_bytes: elem,
                rate_gps: gathers as f64 / (us * 1e-6) / 1e9,
            });
        }
    }
    let rows_start = Instant::now();
    let mut rows = Vec::new();
    for (row_bytes, entry) in ROW_BYTES.into_iter().zip(ROW_ENTRIES) {
        if opts.row_bytes_per_call == 0 {
            break;
        }
        let f = gpu.kernel::<f32, ProbeGatherArgs>(&PROBE_KERNELS, entry)?;
        let (rounds, per_call) = row_rounds(opts.row_bytes_per_call, threads, row_bytes);
        for (k, &table_bytes) in tables.iter().enumerate() {
            let seed = 0x85eb_ca6bu32.wrapping_mul(k as u32 + 1);
            let us = time_table(&f, row_bytes, table_bytes, rounds, seed)?;
            rows.push(RowPoint {
                table_bytes,
                row_bytes,
                rows_per_call: per_call,
                rate_grs: per_call as f64 / (us * 1e-6) / 1e9,
            });
        }
    }
    let rows_ms = (!rows.is_empty()).then(|| rows_start.elapsed().as_secs_f64() * 1e3);
    gpu.synchronize()?;
    Ok(Probe {
        device: gpu.name().to_string(),
        copy_gbs,
        read_gbs,
        read_bytes: n16 * 16,
        gathers_per_call: gathers,
        gather,
        rows,
        rows_ms,
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
            rows: Vec::new(),
            rows_ms: None,
            elapsed_ms: 500.0,
        }
    }

    /// `p` with row points (table bytes, row bytes, 10⁹ rows/s).
    fn with_rows(mut p: Probe, points: &[(u64, u32, f64)]) -> Probe {
        p.rows = points
            .iter()
            .map(|&(table_bytes, row_bytes, rate_grs)| RowPoint {
                table_bytes,
                row_bytes,
                rows_per_call: 1 << 20,
                rate_grs,
            })
            .collect();
        p.rows_ms = Some(100.0);
        p
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

    /// The row rate: log-linear in table size at a measured row size, log-log between row sizes,
    /// bandwidth-bound past the widest, none below the narrowest; the element points play no part.
    #[test]
    fn row_rate_interpolates_in_table_and_row_size_and_extrapolates_by_bandwidth() {
        let p = with_rows(
            probe(&[(MIB, 8, 500.0), (1 << 30, 8, 40.0)]),
            &[
                (MIB, 16, 200.0),
                (4 * MIB, 16, 100.0),
                (MIB, 64, 80.0),
                (4 * MIB, 64, 20.0),
                (MIB, 256, 10.0),
                (4 * MIB, 256, 5.0),
                (2 * MIB, 512, f64::NAN),
            ],
        );
        let r = |x: u64, w: u64| p.row_rate(x, w).unwrap();
        assert_eq!(p.row_sizes(), [16, 64, 256]);
        // at the points, halfway in log table size, clamped outside
        assert_eq!(r(MIB, 16), 200.0);
        assert_eq!(r(4 * MIB, 64), 20.0);
        assert!((r(2 * MIB, 16) - 150.0).abs() < 1e-9);
        assert!((r(2 * MIB, 256) - 7.5).abs() < 1e-9);
        assert_eq!(r(1 << 40, 64), 20.0);
        assert_eq!(r(1, 256), 10.0);
        // 32 bytes: halfway in log row size between 16 (200) and 64 (80): √(200·80)
        assert!((r(MIB, 32) - (200.0f64 * 80.0).sqrt()).abs() < 1e-9);
        // 128 bytes at 2 MiB: between 64 (50) and 256 (7.5) halfway: √(50·7.5)
        assert!((r(2 * MIB, 128) - (50.0f64 * 7.5).sqrt()).abs() < 1e-9);
        // a quarter of the way from 16 to 64 (≈ 22.6 bytes) is not exact in bytes; 48 bytes is
        // log(3)/log(4) of the way
        let f = 3f64.ln() / 4f64.ln();
        assert!((r(MIB, 48) - 200.0 * (80.0f64 / 200.0).powf(f)).abs() < 1e-9);
        // wider than 256 (the NaN point of 512 is ignored): 256's bytes per second
        assert!((r(MIB, 512) - 5.0).abs() < 1e-12);
        assert!((r(4 * MIB, 2560) - 0.5).abs() < 1e-12);
        assert!((r(MIB, 300) - 10.0 * 256.0 / 300.0).abs() < 1e-12);
        // narrower than the narrowest, or no rows: none
        assert_eq!(p.row_rate(MIB, 8), None);
        assert_eq!(probe(&[(MIB, 8, 500.0)]).row_rate(MIB, 256), None);
        // the rate falls with the row size at every table size
        for x in [MIB, 3 * MIB, 1 << 30] {
            let mut last = f64::INFINITY;
            for w in [16, 24, 32, 48, 64, 100, 128, 256, 257, 512, 1024, 4096] {
                assert!(r(x, w) < last, "{x} {w}");
                last = r(x, w);
            }
        }
    }

    /// A probe with or without row points comes back from JSON as it was; a record made before
    /// the row points (no `rows`, no `rows_ms`) loads with none.
    #[test]
    fn probe_survives_json() {
        let p = probe(&[(MIB, 4, 123.5), (MIB, 8, 99.25)]);
        let json = serde_json::to_string(&p).unwrap();
        assert!(!json.contains("rows"), "{json}");
        let back: Probe = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p);
        let p = with_rows(p, &[(MIB, 16, 150.0), (1 << 30, 1024, 4.25)]);
        let back: Probe = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
        assert_eq!(back.row_rate(1 << 30, 1024), Some(4.25));
        let old = r#"{"device":"NVIDIA H200","copy_gbs":4216.0,"read_gbs":4408.0,
            "read_bytes":1073741824,"gathers_per_call":134086656,
            "gather":[{"table_bytes":1048576,"elem_bytes":8,"rate_gps":160.0}],"elapsed_ms":450.0}"#;
        let old: Probe = serde_json::from_str(old).unwrap();
        assert!(old.rows.is_empty() && old.rows_ms.is_none());
        assert_eq!(old.gather_rate(MIB, 8), Some(160.0));
        assert_eq!(old.row_rate(MIB, 256), None);
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
        // rows: 16 bytes a lane each, four in flight; 1024 bytes a warp, two in flight
        assert_eq!(row_group(16), (1, 4));
        assert_eq!(row_group(256), (16, 4));
        assert_eq!(row_group(512), (32, 4));
        assert_eq!(row_group(1024), (32, 2));
        for w in ROW_BYTES {
            let (lanes, per_group) = row_group(w);
            assert_eq!(BLOCK % lanes, 0);
            let (rounds, rows) = row_rounds(1 << 29, threads, w);
            let per_round = (threads as u32 / lanes * per_group) as u64;
            assert_eq!(rows, u64::from(rounds) * per_round, "{w}");
            let bytes = rows * u64::from(w);
            assert!(
                bytes <= 1 << 29 && bytes + per_round * u64::from(w) > 1 << 29,
                "{w}"
            );
        }
        assert_eq!(row_rounds(16, threads, 256).0, 1);
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
        gpu_row_rates_are_plausible(&p);
    }

    /// The row gathers of a probe measured on a GPU: every size at every table, positive; past
    /// L2 (256 MiB and up) no faster in bytes than 1.25 × the read bandwidth (a 256 MiB table
    /// still has about a fifth of its rows in the H200's L2) and, for rows of 256 bytes and more,
    /// at least a tenth of it; wider rows give fewer rows per second (within 10 % between
    /// neighbouring sizes, which can both be one 32-byte sector's cost, and strictly from 16 to
    /// 1024 bytes).
    fn gpu_row_rates_are_plausible(p: &Probe) {
        let tables = table_sizes(p.read_bytes, 1 << 30);
        assert_eq!(p.rows.len(), ROW_BYTES.len() * tables.len(), "{p:?}");
        assert!(p.rows_ms.is_some_and(|ms| ms > 0.0 && ms < 1000.0), "{p:?}");
        let rate = |t: u64, w: u32| {
            let r = p
                .rows
                .iter()
                .find(|r| r.table_bytes == t && r.row_bytes == w);
            r.unwrap_or_else(|| panic!("no {w}-byte rows at {t}: {p:?}"))
        };
        for &t in &tables {
            for w in ROW_BYTES {
                let r = rate(t, w);
                assert!(r.rate_grs.is_finite() && r.rate_grs > 0.0, "{r:?}");
                if t >= 256 << 20 {
                    assert!(r.gbs() <= 1.25 * p.read_gbs, "{r:?}, read {}", p.read_gbs);
                    if w >= 256 {
                        assert!(r.gbs() >= 0.1 * p.read_gbs, "{r:?}, read {}", p.read_gbs);
                    }
                }
            }
            for w in ROW_BYTES.windows(2) {
                let (narrow, wide) = (rate(t, w[0]), rate(t, w[1]));
                assert!(
                    wide.rate_grs <= 1.1 * narrow.rate_grs,
                    "{narrow:?} {wide:?}"
                );
            }
            assert!(rate(t, 1024).rate_grs < rate(t, 16).rate_grs, "{p:?}");
        }
    }
}
