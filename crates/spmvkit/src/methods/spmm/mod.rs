//! SpMM, Y = αAX + βY for a block X of k vectors (issue #24; docs/spmm.md): one operation
//! declared once ([`Plan::apply_multi`], [`Plan::apply_multi_device`]), per-backend kernels.
//!
//! - **The block.** X has `ncols × k` and Y `nrows × k` entries in one of two orders
//!   ([`DenseOrder`]): row-major, where a row's k values are contiguous (`X[j·k + c]`), or
//!   column-major, where each vector is contiguous (`X[c·ncols + j]`). [`MultiShape`] is k and
//!   the order; [`MultiShape::check`] validates a block against the matrix.
//! - **Who has a multi-vector kernel.** A layout says so through [`Layout::multi`]
//!   ([`MultiSource`]: which kernel, on which CSR matrix): `csr` (CPU) and `csr-vector` run
//!   spmvkit's row-split kernels ([`MultiKernel::RowSplit`], `kernel.cu`, mirrored on the CPU in
//!   `cpu.rs`); `merge` the merge-path kernels ([`MultiKernel::Merge`], `merge.rs`, the same
//!   files); `cusparse`, `cusparse-alg1` and `cusparse-alg2` run `cusparseSpMM`
//!   ([`MultiKernel::Cusparse`], [`crate::gpu::cusparse::CusparseSpmm`]).
//! - **Every other plan** (any other method, a reordered plan, x windows) runs k single-vector
//!   calls of its own SpMV ([`MultiPath::Columns`]): on the host directly on each column of a
//!   column-major block and through a copy of each column for a row-major one; on the device
//!   each column goes through the plan's scratch vectors by a strided copy kernel (both orders).
//!   Every call returns the [`MultiPath`] it took, and [`Plan::multi_path`] says it before.
//! - **k = 1** on any plan is one call of the plan's own SpMV on the block, which is a vector
//!   in either order ([`MultiKernel::Spmv`]): no SpMM kernel, no trial, no copies.
//!
//! Device state (the kernels' CSR copy, cuSPARSE's descriptors, buffer and preprocessing per
//! (k, order)) is made on the first call that needs it ([`Plan::prepare_multi`] makes it ahead,
//! so that nothing is allocated inside a timed loop or a graph capture) and dropped by
//! [`Plan::update_values`].

mod apply;
pub mod cpu;
mod gpu;
mod merge;
mod tile;

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

pub use crate::matrix::{DenseOrder, MultiShape};
#[cfg(test)]
pub(crate) use apply::auto_candidates;
pub(crate) use apply::MultiState;
pub use apply::MultiTiming;
pub use cpu::{check_multi, oracle_multi, MultiCheck};
pub(crate) use gpu::alignment;
pub use merge::{merge_share, MAX_SHARE, MIN_SHARE};
pub use tile::{
    piece_nnz, RmConfig, SpmmTune, MIN_LANE_BYTES, MIN_TEAM_LANES, PIECE_GROUPS, SMALL_SHARE,
};

use std::sync::Arc;

use crate::error::Result;
use crate::gpu::{DeviceBlocks, Gpu};
use crate::matrix::Csr;
use crate::methods::common::room::room_kernel;
#[allow(unused_imports)] // the links of the module doc
use crate::methods::{Layout, Plan};
use crate::scalar::Scalar;

room_kernel!(
    /// The SpMM kernels (`methods/spmm/kernel.cu`): the row-major tiles (one entry per
    /// (V, A, U) of `tile::RM_TILES`), the merge path's entries (one per tile row-major, one per
    /// tile of one value per load column-major) and its fix-up, the long rows' fix-up, the
    /// column-major kernel and the strided column copy of the single-vector fallback.
    "spmm",
    [
        gpu::SpmmRmArgs::entry("spmm_rm_v1a1u2"),
        gpu::SpmmRmArgs::entry("spmm_rm_v1a1u4"),
        gpu::SpmmRmArgs::entry("spmm_rm_v1a1u8"),
        gpu::SpmmRmArgs::entry("spmm_rm_v1a2u2"),
        gpu::SpmmRmArgs::entry("spmm_rm_v1a2u4"),
        gpu::SpmmRmArgs::entry("spmm_rm_v1a4u2"),
        gpu::SpmmRmArgs::entry("spmm_rm_v1a8u2"),
        gpu::SpmmRmArgs::entry("spmm_rm_v2a1u2"),
        gpu::SpmmRmArgs::entry("spmm_rm_v2a1u4"),
        gpu::SpmmRmArgs::entry("spmm_rm_v2a1u8"),
        gpu::SpmmRmArgs::entry("spmm_rm_v2a2u2"),
        gpu::SpmmRmArgs::entry("spmm_rm_v2a2u4"),
        gpu::SpmmRmArgs::entry("spmm_rm_v2a4u2"),
        gpu::SpmmRmArgs::entry("spmm_rm_v4a1u2"),
        gpu::SpmmRmArgs::entry("spmm_rm_v4a1u4"),
        gpu::SpmmRmArgs::entry("spmm_rm_v4a1u8"),
        gpu::SpmmRmArgs::entry("spmm_rm_v4a2u2"),
        gpu::SpmmRmArgs::entry("spmm_rm_v4a2u4"),
        gpu::SpmmMergeArgs::entry("spmm_merge_rm_v1a1u2"),
        gpu::SpmmMergeArgs::entry("spmm_merge_rm_v1a1u4"),
        gpu::SpmmMergeArgs::entry("spmm_merge_rm_v1a1u8"),
        gpu::SpmmMergeArgs::entry("spmm_merge_rm_v1a2u2"),
        gpu::SpmmMergeArgs::entry("spmm_merge_rm_v1a2u4"),
        gpu::SpmmMergeArgs::entry("spmm_merge_rm_v1a4u2"),
        gpu::SpmmMergeArgs::entry("spmm_merge_rm_v1a8u2"),
        gpu::SpmmMergeArgs::entry("spmm_merge_rm_v2a1u2"),
        gpu::SpmmMergeArgs::entry("spmm_merge_rm_v2a1u4"),
        gpu::SpmmMergeArgs::entry("spmm_merge_rm_v2a1u8"),
        gpu::SpmmMergeArgs::entry("spmm_merge_rm_v2a2u2"),
        gpu::SpmmMergeArgs::entry("spmm_merge_rm_v2a2u4"),
        gpu::SpmmMergeArgs::entry("spmm_merge_rm_v2a4u2"),
        gpu::SpmmMergeArgs::entry("spmm_merge_rm_v4a1u2"),
        gpu::SpmmMergeArgs::entry("spmm_merge_rm_v4a1u4"),
        gpu::SpmmMergeArgs::entry("spmm_merge_rm_v4a1u8"),
        gpu::SpmmMergeArgs::entry("spmm_merge_rm_v4a2u2"),
        gpu::SpmmMergeArgs::entry("spmm_merge_rm_v4a2u4"),
        gpu::SpmmMergeArgs::entry("spmm_merge_cm_v1a1u2"),
        gpu::SpmmMergeArgs::entry("spmm_merge_cm_v1a1u4"),
        gpu::SpmmMergeArgs::entry("spmm_merge_cm_v1a1u8"),
        gpu::SpmmMergeArgs::entry("spmm_merge_cm_v1a2u2"),
        gpu::SpmmMergeArgs::entry("spmm_merge_cm_v1a2u4"),
        gpu::SpmmMergeArgs::entry("spmm_merge_cm_v1a4u2"),
        gpu::SpmmMergeArgs::entry("spmm_merge_cm_v1a8u2"),
        gpu::SpmmMergeFixupArgs::entry("spmm_merge_fixup"),
        gpu::SpmmFixupArgs::entry("spmm_fixup_rm"),
        gpu::SpmmArgs::entry("spmm_rows_cm"),
        gpu::StridedCopyArgs::entry("spmm_copy_strided"),
    ]
);

/// A multi-vector kernel a layout can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MultiKernel {
    /// spmvkit's row-split CSR kernels (`kernel.cu`): row-major, a group of lanes per row with
    /// lanes over the k vectors; column-major, a warp per row with lanes over its nonzeros, the
    /// vectors in a loop. On the CPU their mirror, rows in parallel.
    RowSplit,
    /// `cusparseSpMM` with the fastest CSR algorithm for the (k, order), timed when set up.
    Cusparse,
    /// spmvkit's merge-path kernels (`merge.rs`, `kernel.cu`): each team of lanes an equal
    /// share of the matrix's rows + nonzeros, lanes over the k vectors, rows that span teams
    /// added by a fix-up in team order; both orders. On the CPU their mirror.
    Merge,
    /// `csr-packed`'s kernel on its compressed layout ([`MultiLayout`]): a lane per row decodes
    /// the row once per pass of `spmm_cols` vectors; each vector bitwise csr-packed's SpMV.
    Packed,
    /// A layout's offer to let the plan choose per (k, order) (`auto`): on the GPU the first
    /// call of a shape times [`MultiKernel::RowSplit`], [`MultiKernel::Merge`],
    /// [`MultiKernel::Cusparse`], [`MultiPath::Columns`] and, where offered,
    /// [`MultiKernel::Packed`] (`apply::auto_candidates`) and keeps the fastest; on the CPU the
    /// row-split mirror. A call
    /// never takes this path itself; [`Plan::multi_path`] says it until the shape is chosen.
    Auto,
    /// k = 1 on every plan: a block of one vector, in either order, is that vector (`ncols`
    /// entries of X, `nrows` of Y), so the call is the plan's own single-vector call on it,
    /// with no copies (the SpMM kernels' floor at k = 1 is above the SpMV kernels':
    /// docs/spmm.md). On the GPU a layout that wants padded vectors (`cusparse-bsr`) takes the
    /// vector through the fallback's scratch copies instead, so that Y's entries past `nrows`
    /// stay the caller's.
    Spmv,
}

impl MultiKernel {
    /// `row-split`, `merge-path`, `cusparse-spmm`, `csr-packed` or `spmv (one SpMV call)`.
    pub fn name(self) -> &'static str {
        match self {
            MultiKernel::RowSplit => "row-split",
            MultiKernel::Merge => "merge-path",
            MultiKernel::Cusparse => "cusparse-spmm",
            MultiKernel::Packed => "csr-packed",
            MultiKernel::Auto => "auto (chosen per shape on its first call)",
            MultiKernel::Spmv => "spmv (one SpMV call)",
        }
    }
}

/// The path a multi-vector call took.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MultiPath {
    /// One multi-vector kernel for the whole block.
    Kernel(MultiKernel),
    /// k single-vector calls of the plan's method, one per column (copies: module doc).
    Columns,
}

impl std::fmt::Display for MultiPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MultiPath::Kernel(k) => f.write_str(k.name()),
            MultiPath::Columns => f.write_str("columns (k SpMV calls)"),
        }
    }
}

/// What a layout offers [`Plan::apply_multi`] ([`Layout::multi`]): its multi-vector kernel,
/// the CSR matrix that kernel runs on (the layout's own), the row-major tile's tuning (the
/// method's parameters; [`SpmmTune::default`] leaves it to the rule), and whether the plan must
/// stay bitwise deterministic (`auto[deterministic=1]`): then `auto`'s trial keeps to
/// deterministic candidates and cuSPARSE SpMM to the algorithm its documentation states
/// deterministic ([`crate::gpu::cusparse::SpmmAlg::DETERMINISTIC`]).
pub struct MultiSource<'a, T> {
    pub kernel: MultiKernel,
    pub a: &'a Csr<T>,
    pub tune: SpmmTune,
    pub deterministic: bool,
}

/// A layout whose multi-vector kernel runs on the layout's own arrays, not on a CSR matrix
/// ([`Layout::multi_layout`]; `csr-packed`, issue #24): its CPU mirror and its device state.
/// A plan takes it when the layout offers no [`MultiSource`] (or, for `auto`, as one more
/// candidate of its trial).
pub trait MultiLayout<T: Scalar>: Send + Sync {
    /// Which kernel it is (the path calls report).
    fn kernel(&self) -> MultiKernel;

    /// Y = αAX + βY on the CPU as the kernel computes it, bit for bit; lengths checked by the
    /// caller ([`MultiShape::check`], exact).
    fn run_cpu_multi(&self, alpha: T, x: &[T], beta: T, y: &mut [T], shape: MultiShape);

    /// Uploads what the kernel reads.
    fn upload_multi(&self, gpu: &Arc<Gpu>) -> Result<Box<dyn DeviceMultiLayout<T>>>;

    /// The bytes of the arrays the kernel reads once per call (the byte model of a record,
    /// `bench::multi`).
    fn matrix_bytes(&self) -> usize;
}

/// A [`MultiLayout`] on the device.
pub trait DeviceMultiLayout<T: Scalar>: Send + Sync {
    /// Makes what `shape` needs ahead of its calls, with notes for reports.
    fn prepare(&self, gpu: &Gpu, shape: MultiShape) -> Result<Vec<(String, String)>>;

    /// Enqueues Y = αAX + βY after [`DeviceBlocks::check`] against the layout's matrix.
    fn run(&self, gpu: &Gpu, b: DeviceBlocks<'_, T>) -> Result<()>;

    /// Device bytes held.
    fn footprint_bytes(&self) -> usize;
}
