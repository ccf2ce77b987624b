//! `csr-packed`: a lossless compressed layout that moves fewer bytes than CSR (issue #19, "Move
//! fewer bytes"), in the family of CSR-DU (Kourtis et al., CF'08: delta-coded column indices with
//! a per-unit width), CSR-VI (Kourtis et al., CF'08: a dictionary of the distinct values) and BRO
//! (Tang et al., ICS'13: bit-packed indices per slice of rows on the GPU).
//!
//! The layout, per slice of 32 rows (one warp, one lane per row, as sliced ELL):
//! - **column indices** are delta-coded inside each row: the first relative to the row index
//!   (biased by 2^(w−1)), every next one relative to the previous column. Each slice picks the
//!   width w ∈ {8, 16, 32} bits that makes it smallest; a row whose deltas do not fit a width
//!   the rest of the slice fits is an *outlier* and leaves the slice (the way out, below);
//! - codes are stored lane-interleaved in groups of 8 entries: group g of lane l is one
//!   w-byte block (8, 16 or 32 bytes) in the 32·w bytes of group g, cut into units of at most
//!   16 bytes with unit q of every lane side by side (`interleaved`), so each vector load of a
//!   warp reads 256 or 512 contiguous bytes of whole sectors;
//! - **values**: none for a matrix with one distinct value; a dictionary of the distinct values
//!   with 1-, 2-, 4-, 8- or 16-bit codes (8 codes form one block of 1–16 bytes, lane-interleaved
//!   like the columns) when at most 2^16 distinct values occur (with values stored in f16 or
//!   bf16, `storage=`, 16-bit codes are the values' own bits, which the kernel widens instead of
//!   looking them up; docs/precision.md); raw values otherwise (blocks of
//!   32 or 64 bytes, interleaved in 16-byte units like the 32-bit column codes). The
//!   dictionary stays in global memory and is read through the read-only L1 path;
//! - **row lengths** as one byte per lane (at most 248 entries, 255 = the lane has no row here);
//!   rows can be sorted by length inside windows of rows (then a row map says which row each
//!   lane holds; `sort=on`, or `auto`: when that saves more padding bytes than the map costs);
//! - **long and outlier rows** (longer than `long`, or outliers of their slice's width) go to a
//!   block-per-row path over raw CSR arrays.
//!
//! Each lane sums its row left to right with fused multiply-adds from zero (the order of
//! `csr-scalar`), and a long row is summed by a block's 256 strided threads and butterflies
//! (the prelude's `cta_gather_sum`), so the result is deterministic and the CPU mirror (`cpu.rs`), which decodes
//! the same streams, matches the kernel bit for bit. Preprocessing (`encode.rs`) runs in
//! parallel and is timed by stage.

mod cpu;
mod encode;
mod gpu;
mod multi;

use std::time::Duration;

use crate::error::Result;
use crate::matrix::Pattern;
use crate::methods::common::room::{forward, method, room_kernel};
use crate::methods::params::{multiple_of, one_of, params, AutoOr, OnOff, Switch};
use crate::methods::{Layout, ParamSpec};
use crate::scalar::{Idx, Scalar};
use encode::ValuesMode;

pub(crate) use encode::ValueCodes;

room_kernel!(
    /// The kernel of `csr-packed`: an entry per value mode, with and without the prefetch; the
    /// k-vector entries per value mode and vectors per pass (`multi.rs`).
    "csr-packed",
    [
        gpu::PackedArgs::params_entry("csr_packed_v0"),
        gpu::PackedArgs::params_entry("csr_packed_v1"),
        gpu::PackedArgs::params_entry("csr_packed_v2"),
        gpu::PackedArgs::params_entry("csr_packed_v4"),
        gpu::PackedArgs::params_entry("csr_packed_v8"),
        gpu::PackedArgs::params_entry("csr_packed_v16"),
        gpu::PackedArgs::params_entry("csr_packed_raw"),
        gpu::PackedArgs::params_entry("csr_packed_v0_flat"),
        gpu::PackedArgs::params_entry("csr_packed_v1_flat"),
        gpu::PackedArgs::params_entry("csr_packed_v2_flat"),
        gpu::PackedArgs::params_entry("csr_packed_v4_flat"),
        gpu::PackedArgs::params_entry("csr_packed_v8_flat"),
        gpu::PackedArgs::params_entry("csr_packed_v16_flat"),
        gpu::PackedArgs::params_entry("csr_packed_raw_flat"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v0_c1"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v0_c2"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v0_c4"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v0_c8"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v1_c1"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v1_c2"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v1_c4"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v1_c8"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v2_c1"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v2_c2"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v2_c4"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v2_c8"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v4_c1"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v4_c2"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v4_c4"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v4_c8"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v8_c1"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v8_c2"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v8_c4"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v8_c8"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v16_c1"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v16_c2"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v16_c4"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_v16_c8"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_raw_c1"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_raw_c2"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_raw_c4"),
        gpu::PackedMultiArgs::params_entry("csr_packed_mm_raw_c8"),
    ]
);

const NAME: &str = "csr-packed";

/// Rows of a slice: one warp, one lane per row.
pub(crate) const WARP: usize = 32;
/// Entries of one code block (per lane).
pub(crate) const GROUP: usize = 8;
/// The longest row a slice holds (31 groups of 8; a length byte of 255 means "no row here").
pub(crate) const MAX_SHORT: usize = 248;
/// Threads per block of the kernel (a long row takes one block).
pub(crate) const BLOCK: usize = 256;
/// The length byte of a lane without a row in its slice.
pub(crate) const SKIP: u8 = 255;

/// Bytes one lane loads per instruction: a 16-byte vector.
pub(crate) const UNIT_BYTES: usize = 16;

/// Where item `j` of lane `l`'s block sits in a group of [`WARP`] blocks of `per_lane` items of
/// `item_bytes` bytes each: the blocks are interleaved in units of at most [`UNIT_BYTES`], unit
/// `q` of every lane side by side, so each vector load of a warp reads one contiguous span of
/// whole 32-byte sectors (a lane's 32-byte column block or 64-byte raw f64 block would otherwise
/// touch every sector twice, in two instructions).
#[inline]
pub(crate) fn interleaved(per_lane: usize, item_bytes: usize, l: usize, j: usize) -> usize {
    let u = (UNIT_BYTES / item_bytes).min(per_lane);
    (j / u) * (WARP * u) + l * u + j % u
}

params! {
    /// The parameters of `csr-packed`, as given ([`encode::Config`] resolves `long=auto`).
    struct PackedParams {
        /// rows longer than this go to the block-per-row path (8..=248); auto: 8 × the mean row
        /// length, at least 128, at most 248
        long: AutoOr<usize> = auto, in 8..=MAX_SHORT;
        /// sort rows by length inside windows of `window` rows: on, off, or auto (when the padding
        /// it saves outweighs the 4-byte row map it needs). Off by default: sorting slowed rgg and
        /// delaunay graphs (a warp's rows then gather x from places up to a window apart) more than
        /// the padding it saved (docs/methods/csr-packed.md)
        sort: Switch = off;
        /// rows per sorting window (a multiple of 32, 32..=65536)
        window: usize = 256, in multiple_of(WARP, WARP..=65536);
        /// on: each warp loads the next slice's metadata while it gathers x for the current one
        /// (more loads in flight, a few more registers); off: one slice at a time
        prefetch: OnOff = on;
        /// auto (a dictionary when at most 65536 distinct values occur, else raw), dict (refuse a
        /// matrix with more), or raw
        values: ValuesMode = auto;
        /// SpMM (k vectors, docs/spmm.md): vectors per pass, whose sums each lane keeps in
        /// registers while it decodes its row once for them; auto (32 bytes of an X row per
        /// nonzero: 4 in f64, 8 in f32, at most k rounded up to a power of two) or 1, 2, 4, 8
        spmm_cols: AutoOr<u32> = auto, in one_of([1, 2, 4, 8]);
    }
}

const PARAMS: &[ParamSpec] = PackedParams::SPECS;

method! {
    /// The registry entry of `csr-packed`.
    pub struct CsrPacked {
        name: NAME,
        summary: "GPU: compressed CSR (delta-coded columns, value dictionary), a lane per row",
        source: "spmvkit (issue #19), after CSR-DU/CSR-VI (CF'08) and BRO (ICS'13)",
        deterministic: true,
        // f16 and bf16 values have at most 2^16 distinct values: the dictionary of the stored
        // values (in T) with codes of at most 16 bits (docs/precision.md)
        values: &[crate::scalar::ValueStorage::F16, crate::scalar::ValueStorage::Bf16],
        params: PARAMS,
    }
    fn prepare(csr, params) {
        let cfg = encode::Config::from_params(params, csr)?;
        Ok(Box::new(encode::encode(csr, &cfg)?))
    }
}

/// The `csr-packed` layout (see the module doc for the format).
pub struct PackedLayout<T> {
    pub(crate) nrows: usize,
    pub(crate) ncols: usize,
    pub(crate) nnz: usize,
    /// Length byte per lane, 32 per slice ([`SKIP`]: no row).
    pub(crate) lens: Vec<u8>,
    /// The row of each lane (32 per slice) when rows were sorted; `None`: lane l of slice s
    /// holds row 32·s + l.
    pub(crate) rows: Option<Vec<u32>>,
    /// Group prefix per slice (`nslices + 1`): slice s holds groups `grp[s]..grp[s+1]` of the
    /// value stream, `grp[s+1] − grp[s]` groups per lane.
    pub(crate) grp: Vec<u32>,
    /// Start of each slice's column codes in the word stream, in 16-byte units.
    pub(crate) col_off: Vec<u32>,
    /// Code width of each slice, in bits (8, 16 or 32).
    pub(crate) col_w: Vec<u8>,
    /// The column code stream, 32-bit words (little-endian codes).
    pub(crate) cols: Vec<u32>,
    /// How values are stored.
    pub(crate) vcodes: ValueCodes,
    /// The distinct values (dictionary and constant modes).
    pub(crate) dict: Vec<T>,
    /// The value code stream (`Bits(v)`: v bytes per block of 8 codes).
    pub(crate) vstream: Vec<u8>,
    /// Raw values (raw mode), 8 per block.
    pub(crate) raw: Vec<T>,
    /// Rows of the block-per-row path, ascending.
    pub(crate) long_rows: Vec<u32>,
    /// Their entries in `long_cols`/`long_vals` (`long_rows.len() + 1` offsets).
    pub(crate) long_ptr: Vec<u32>,
    pub(crate) long_cols: Vec<Idx>,
    pub(crate) long_vals: Vec<T>,
    /// Facts for the notes.
    pub(crate) facts: encode::Facts,
    /// Whether the kernel prefetches the next slice (`prefetch=on`).
    pub(crate) prefetch: bool,
    /// How the plan stores the values (docs/precision.md): the kernel is compiled for it, and
    /// with f16 or bf16 its 16-bit codes are the values' own bits.
    pub(crate) storage: crate::scalar::ValueStorage,
    /// `spmm_cols`: the vectors per pass of the k-vector kernel (`None`: the rule, `multi.rs`).
    pub(crate) spmm_cols: Option<u32>,
}

impl<T> PackedLayout<T> {
    /// Number of slices.
    pub(crate) fn nslices(&self) -> usize {
        self.col_w.len()
    }

    /// The rows slice `s` holds, as (lane, row, entries), past the lanes left empty (`SKIP`).
    pub(crate) fn slice_rows(&self, s: usize) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
        (0..WARP).filter_map(move |lane| {
            let len = self.lens[s * WARP + lane];
            let row = self
                .rows
                .as_ref()
                .map_or(s * WARP + lane, |m| m[s * WARP + lane] as usize);
            (len != SKIP).then_some((lane, row, len as usize))
        })
    }
}

impl<T: Scalar> Layout<T> for PackedLayout<T> {
    fn footprint_bytes(&self) -> usize {
        self.lens.len()
            + self.rows.as_ref().map_or(0, |r| 4 * r.len())
            + 4 * self.grp.len()
            + 4 * self.col_off.len()
            + self.col_w.len()
            + 4 * self.cols.len()
            + T::BYTES * self.dict.len()
            + self.vstream.len()
            + T::BYTES * self.raw.len()
            + 4 * (self.long_rows.len() + self.long_ptr.len() + self.long_cols.len())
            + T::BYTES * self.long_vals.len()
    }

    forward! { run_cpu, upload }

    fn prep_stages(&self) -> Vec<(&'static str, Duration)> {
        self.facts.stages.clone()
    }

    fn notes(&self) -> Vec<(String, String)> {
        self.facts
            .notes(self.footprint_bytes(), self.nnz, self.nrows, T::BYTES)
    }

    fn reencode_values(&mut self, pattern: &Pattern, vals: &[T]) -> Option<Result<(), String>> {
        Some(encode::reencode_values(self, pattern, vals))
    }

    fn multi_layout(&self) -> Option<&dyn crate::methods::spmm::MultiLayout<T>> {
        Some(self)
    }
}

#[cfg(test)]
mod tests;
