//! Upload and launch of the cb-spmv kernels (kernel.cu): the arena (u8), the slot metadata (two
//! u64 per slot), the per-panel block counts with the ticket and ready arrays (zeroed once at
//! upload; the kernel resets them itself at the end of each call), and the column list when
//! gathered, with 16 padding entries so that staging lanes never leave it. One launch per call
//! of `nslots / (8·bpw)` CTAs of 256 threads; with `prologue=kernel` the runtime's y prologue
//! (a grid-stride launch of at most 8 CTAs per SM) goes first; with `prologue=grid` one
//! cooperative launch (at most the CTAs that fit the GPU at once) does both. `accumulate=run`
//! with aggregated regions runs `cb_spmv_run*`, the other configurations the general
//! `cb_spmv*`; with `epilogue=owner` (their default) the run kernel is the one launch, with no
//! scaling before it, and uploads the split panels' run counts with a zeroed workspace and
//! counters. Every entry takes the same parameters (`CbArgs`). Nothing when the matrix has no
//! rows.

use super::{CbLayout, BS, KERNEL, WARPS};
use crate::error::Result;
use crate::gpu::{kernel_int, ByMode, Gpu, Kernel, Shape, YPrologue};
use crate::methods::common::gpu::{Axpby, Call, Launches};
use crate::methods::common::room::device_room;
use crate::methods::Layout;
use crate::scalar::Scalar;

/// `min_ctas=auto` builds the run kernel for 8 CTAs per SM when the warps take at least this
/// many blocks each (tuning data: the 8-CTA build wins on large stencils, where bpw = 8, and
/// loses on small matrices, where bpw = 1 or 2; measurements: `docs/methods/cb-spmv.md`).
const OCCUPANCY8_MIN_BPW: usize = 8;

/// CTAs per SM of the y prologue (one grid-stride launch for every β).
const SCALE_CTAS_PER_SM: usize = 8;

crate::device_args! {
    /// A cb-spmv layout's arrays on the device, with its working buffers and flags.
    pub(super) struct CbArrays<T> from l: &CbLayout<T>;
    /// The parameters of every cb-spmv entry (kernel.cu's `CB_PARAMS`): the general kernels use
    /// the first 21 (`cb_spmv_grid` 23), the run kernels the first 13 and the last 7.
    pub(super) struct CbArgs<'a, T> {
        arena: &[u8],
        meta: &[u64],
        gcols: &[u32] = &padded_gcols(l),
        gathered: i32 = l.gathered as i32,
        axpby: Axpby<'a, T>,
        m: i32 = kernel_int("cb-spmv nrows", l.nrows)?,
        n: i32 = kernel_int("cb-spmv ncols", l.ncols)?,
        coo_max: i32 = l.cfg.coo_max as i32,
        dense_min: i32 = l.cfg.dense_min as i32,
        bpw: i32 = l.bpw as i32,
        split_vals: &[T],
        voff: &[u64],
        split: i32 = !l.cfg.aggregate as i32,
        panel_nb: &[u32],
        tick: &mut [u32; l.panel_nb.len().max(1)],
        ready: &mut [u32; l.panel_nb.len().max(1)],
        fused: i32 = l.cfg.fused as i32,
        run: i32 = l.cfg.run as i32,
        nctas: u64 = ctas(l) as u64,
        bar: &mut [u32; 2],
        split_of: &[u32],
        nparts: &[u32],
        ws: &mut [T; (l.nparts.len() * BS).max(1)],
        cnt: &mut [u32; l.nparts.len().max(1)],
        owner: i32,
    }
}

/// The column list when gathered, with 16 padding entries so that staging lanes never leave it
/// (empty otherwise).
fn padded_gcols<T: Scalar>(l: &CbLayout<T>) -> Vec<u32> {
    if !l.gathered {
        return Vec::new();
    }
    let mut g = Vec::with_capacity(l.gcols.len() + BS);
    g.extend_from_slice(&l.gcols);
    g.resize(l.gcols.len() + BS, 0);
    g
}

/// The CTAs of one call: `8·bpw` slots each.
fn ctas<T: Scalar>(l: &CbLayout<T>) -> usize {
    l.nslots() / (WARPS * l.bpw)
}

device_room! {
    /// The device copy of a cb-spmv layout.
    pub(super) struct DeviceCb<T> {
        /// `cb_spmv`, or a run kernel (`cb_spmv_run*`: `accumulate=run` with aggregated regions).
        spmv: Kernel<CbArgs<'static, T>> = gpu.kernel::<T, _>(&KERNEL, &name)?,
        /// Its cooperative grid form.
        spmv_grid: Kernel<CbArgs<'static, T>> = spmv_grid,
        /// epilogue=owner: one launch of the run kernel, no scaling before it; with epilogue=auto on
        /// a stream only.
        owner: ByMode<bool> = by_mode(owner, owner && l.cfg.owner.is_none(), false),
        /// Some(co-resident CTAs) when a call is one cooperative `cb_spmv_grid` launch; with
        /// prologue=auto on a stream only.
        grid: ByMode<Option<usize>> = grid,
        scale: YPrologue<T> = gpu.y_prologue_kernel::<T>(SCALE_CTAS_PER_SM)?,
        ctas: usize = ctas(l),
        fused: bool = l.cfg.fused,
        arrays: CbArrays<T> = CbArrays::upload(gpu, l)?,
    }
    fn upload(l: &CbLayout<T>, gpu) -> Resident((l.nrows, l.ncols), l.footprint_bytes()) {
        gpu.ensure_fits("cb-spmv layout", l.footprint_bytes())?;
        let lean = l.cfg.run && l.cfg.aggregate;
        let suffix = if l.cfg.occupancy8.unwrap_or(l.bpw >= OCCUPANCY8_MIN_BPW) {
            "_o8"
        } else {
            ""
        };
        let (name, grid_name) = if lean {
            (
                format!("cb_spmv_run{suffix}"),
                format!("cb_spmv_run_grid{suffix}"),
            )
        } else {
            ("cb_spmv".to_string(), "cb_spmv_grid".to_string())
        };
        let spmv_grid = gpu.kernel::<T, _>(&KERNEL, &grid_name)?;
        let owner = lean && l.owner();
        let grid = if !l.cfg.fused && l.cfg.owner != Some(true) && l.cfg.grid(l.nnz) {
            let ctas = spmv_grid.resident_ctas(gpu, (WARPS * 32) as u32, 0)?;
            by_mode(Some(ctas), l.cfg.grid_on_stream_only(), None)
        } else {
            ByMode::Always(None)
        };
    }
}

/// `v` in both modes, or on a stream only (`graph` when captured) when `stream_only`.
fn by_mode<V: Copy>(v: V, stream_only: bool, graph: V) -> ByMode<V> {
    if stream_only {
        ByMode::Split { stream: v, graph }
    } else {
        ByMode::Always(v)
    }
}

impl<T: Scalar> Launches<T> for DeviceCb<T> {
    unsafe fn run(&self, gpu: &Gpu, mut c: Call<'_, T>) -> Result<()> {
        // The driver is asked only when a stream-only mode is in play (small matrices).
        let mode = gpu.launch_mode_if(self.owner.varies() || self.grid.varies());
        let owner = self.owner.get(mode);
        let coop = self.grid.get(mode).filter(|_| self.ctas > 0 && !owner);
        if !self.fused && !owner && coop.is_none() {
            self.scale.run(gpu, c.y, c.nrows, c.beta)?;
        }
        if self.ctas == 0 {
            return Ok(());
        }
        let args = self.arrays.args(c.axpby(), owner as i32);
        let threads = (WARPS * 32) as u32;
        let (k, shape) = match coop {
            Some(c) => (
                &self.spmv_grid,
                Shape::cooperative(c.min(self.ctas), threads),
            ),
            None => (&self.spmv, Shape::ctas(self.ctas, threads)),
        };
        // SAFETY: meta has 2·8·bpw·ctas words; every offset + region length lies inside the arena
        // (or split_vals/voff when split); block rows index panel_nb/tick/ready (one per panel);
        // split_of has one entry per panel, nparts/cnt one and ws 16 per split panel (ws and cnt
        // start at zero and the kernel leaves them so); gathered x columns are xcol + c <
        // len(gcols) + 16 (the padding), each entry < ncols <= len(x), direct ones are checked
        // against n; written rows < nrows <= len(y). A grid launch is at most the co-resident
        // CTAs, as its barrier needs, which a cooperative launch guarantees.
        unsafe { gpu.launch(k, shape, &args) }
    }
}
