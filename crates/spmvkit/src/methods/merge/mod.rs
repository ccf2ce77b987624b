//! `merge`: merge-based CSR SpMV after Merrill & Garland, "Merge-based parallel sparse
//! matrix-vector multiplication", SC'16 (our own implementation; CUB's `DeviceSpmv` was
//! removed in CCCL 3.0).
//!
//! SpMV is a merge of the row-end offsets (`row_ptr[1..]`) with the nonzero indices 0..nnz: a
//! path of nrows + nnz steps. Each CTA takes an equal tile of `threads · items` steps, each of
//! its threads `items` steps, found by binary search on the diagonal; a thread consumes its steps
//! in order, adding nonzeros and closing a row at each row end. Rows that span threads are
//! joined inside the CTA by a segmented (reduce-by-key) scan; the part of a row that spans CTAs
//! is the CTA's carry-out, written to an array; a second, "fix-up" kernel adds each row's carries
//! in a fixed order (one thread per short run of carries, one warp per long run). No float
//! atomics anywhere, so the method is deterministic.
//!
//! Preprocessing (the plan; parallel, O(tiles · log rows)): the tile start coordinates (CUB
//! computes them per call in a search kernel; they depend only on the structure, so we compute
//! them once) and the list of carry runs (row, first tile, end tile) that the fix-up walks.
//! Defaults for `threads` × `items` follow CUB's sm_50 SpMV policy: 64 × 6 for f64, 128 × 7 for
//! f32.
//!
//! Blocks of k vectors (issue #24) take the merge-path SpMM (`methods/spmm/merge.rs`): the same
//! path cut into teams of lanes over the k vectors (`spmm_share`, `spmm_cols`).

mod cpu;
mod gpu;

use std::time::{Duration, Instant};

use crate::error::Error;
use crate::matrix::Csr;
use crate::methods::common::checks::THREADS;
#[cfg(test)]
use crate::methods::common::merge_path::path_coordinate;
use crate::methods::common::merge_path::{carry_runs, share_starts};
use crate::methods::common::room::{forward, method, room_kernel};
use crate::methods::params::{one_of, params, AutoOr};
use crate::methods::spmm::{MultiKernel, MultiSource, SpmmTune};
use crate::methods::Layout;
use crate::scalar::{Idx, Precision, Scalar, ValueStorage};

room_kernel!(
    "merge",
    [
        gpu::MergeArgs::entry("merge_spmv"),
        gpu::MergeFixupArgs::entry("merge_fixup"),
    ]
);

const NAME: &str = "merge";

params! {
    /// The parameters of `merge`.
    struct MergeParams {
        /// threads per CTA (a multiple of 32, at most 1024); auto: 64 for f64, 128 for f32
        threads: AutoOr<u32> = auto, in THREADS;
        /// merge-path steps per thread (1..=64); auto: 6 for f64, 7 for f32
        items: AutoOr<u32> = auto, in 1..=64;
        /// SpMM (docs/spmm.md): merge-path steps per team, auto (spmm::merge_share: (rows +
        /// nnz) / 2^16, a power of two in 32..=1024) or 1..=65536
        spmm_share: AutoOr<u32> = auto, in 1..=65536;
        /// SpMM tile: vectors per lane and pass, auto (the rule of spmm::RmConfig, the teams as
        /// its rows) or 1, 2, 4, 8
        spmm_cols: AutoOr<u32> = auto, in one_of([1, 2, 4, 8]);
    }
}

/// Runs of carries longer than this are summed by a warp in the fix-up, shorter ones by a thread.
pub(crate) const SHORT_RUN: usize = 32;

/// Dynamic shared memory one CTA may use without opting in (48 KiB), less the kernel's static
/// arrays (32 keys and 32 values for the block scan).
const MAX_DYNAMIC_SMEM: usize = 48 * 1024 - 32 * (4 + 8);

method! {
    /// The registry entry of `merge`.
    pub struct Merge {
        name: NAME,
        summary: "GPU: merge-path CSR, equal shares of rows + nnz per thread, carry fix-up pass",
        source: "Merrill & Garland, Merge-based parallel SpMV, SC'16 (merge-based CsrMV)",
        deterministic: true,
        values: &ValueStorage::NARROW,
    }
    fn prepare(csr, p: MergeParams, values) {
        let double = T::PRECISION == Precision::F64;
        let threads = p.threads.value().unwrap_or(if double { 64 } else { 128 });
        let items = p.items.value().unwrap_or(if double { 6 } else { 7 });
        let tile = (threads * items) as usize;
        let smem = smem_bytes::<T>(tile);
        if smem > MAX_DYNAMIC_SMEM {
            return Err(param_err(
                "items",
                format!(
                    "a tile of {threads} x {items} steps needs {smem} bytes of shared memory, \
                     more than {MAX_DYNAMIC_SMEM}"
                ),
            ));
        }
        let mut l = MergeLayout::build(csr, threads, items);
        l.values = values;
        l.tune = SpmmTune {
            cols: p.spmm_cols.value(),
            piece: p.spmm_share.value(),
            ..SpmmTune::default()
        };
        Ok(Box::new(l))
    }
}

fn param_err(key: &str, msg: String) -> Error {
    Error::Param {
        method: NAME.into(),
        key: key.into(),
        msg,
    }
}

/// Dynamic shared memory of one CTA: the tile's products (or row sums), then its row ends.
pub(crate) fn smem_bytes<T: Scalar>(tile: usize) -> usize {
    tile * T::BYTES + (tile + 1) * 4
}

/// The layout of `merge`: the CSR matrix, the tile start coordinates and the carry runs.
pub struct MergeLayout<T> {
    a: Csr<T>,
    /// How the device keeps the values (docs/precision.md).
    values: ValueStorage,
    threads: u32,
    items: u32,
    /// Row coordinate of each tile start (ntiles + 1 entries; the last is nrows).
    tile_row: Vec<Idx>,
    /// Nonzero coordinate of each tile start (ntiles + 1 entries; the last is nnz).
    tile_nz: Vec<Idx>,
    /// Carry runs: the row, first tile and end tile (exclusive) of every row that has nonzeros
    /// in tiles before the one it ends in. Runs of at most SHORT_RUN tiles come first.
    run_row: Vec<Idx>,
    run_first: Vec<Idx>,
    run_end: Vec<Idx>,
    /// How many runs are short.
    nshort: usize,
    /// Preprocessing time by stage.
    stages: Vec<(&'static str, Duration)>,
    /// The merge-path SpMM's tile and share (`spmm_cols`, `spmm_share` as `piece`).
    tune: SpmmTune,
}

impl<T: Scalar> MergeLayout<T> {
    fn build(a: &Csr<T>, threads: u32, items: u32) -> Self {
        let rp = a.row_ptr();
        let t0 = Instant::now();
        let (tile_row, tile_nz) = share_starts(rp, (threads * items) as u64);
        let t1 = Instant::now();
        let runs = carry_runs(rp, &tile_row, &tile_nz);
        let (short, long): (Vec<_>, Vec<_>) = runs
            .into_iter()
            .partition(|r| ((r.2 - r.1) as usize) <= SHORT_RUN);
        let nshort = short.len();
        let all = short.into_iter().chain(long);
        let (mut run_row, mut run_first, mut run_end) = (Vec::new(), Vec::new(), Vec::new());
        for (r, f, e) in all {
            run_row.push(r);
            run_first.push(f);
            run_end.push(e);
        }
        let stages = vec![("tile coordinates", t1 - t0), ("carry runs", t1.elapsed())];
        MergeLayout {
            a: a.clone(),
            values: ValueStorage::Same,
            threads,
            items,
            tile_row,
            tile_nz,
            run_row,
            run_first,
            run_end,
            nshort,
            stages,
            tune: SpmmTune::default(),
        }
    }

    /// Number of tiles (CTAs of the main kernel).
    pub(crate) fn ntiles(&self) -> usize {
        self.tile_row.len() - 1
    }

    /// Steps per tile.
    pub(crate) fn tile_items(&self) -> usize {
        (self.threads * self.items) as usize
    }

    /// Number of carry runs.
    pub(crate) fn nruns(&self) -> usize {
        self.run_row.len()
    }
}

impl<T: Scalar> Layout<T> for MergeLayout<T> {
    forward! { values_mut of a, run_cpu, upload }

    fn footprint_bytes(&self) -> usize {
        // CSR + tile coordinates + runs + the device carry array (one value per tile).
        self.a.bytes()
            + 4 * (self.tile_row.len() + self.tile_nz.len())
            + 4 * (self.run_row.len() + self.run_first.len() + self.run_end.len())
            + T::BYTES * self.ntiles()
    }

    fn prep_stages(&self) -> Vec<(&'static str, Duration)> {
        self.stages.clone()
    }

    /// The merge-path SpMM kernels (`methods/spmm/merge.rs`) on the layout's CSR matrix.
    fn multi(&self) -> Option<MultiSource<'_, T>> {
        Some(MultiSource {
            kernel: MultiKernel::Merge,
            a: &self.a,
            tune: self.tune,
            deterministic: false,
        })
    }

    fn notes(&self) -> Vec<(String, String)> {
        vec![
            (
                "threads x items".into(),
                format!("{} x {}", self.threads, self.items),
            ),
            ("tiles".into(), self.ntiles().to_string()),
            (
                "carry runs (short/long)".into(),
                format!("{}/{}", self.nshort, self.nruns() - self.nshort),
            ),
        ]
    }
}

#[cfg(test)]
mod tests;
