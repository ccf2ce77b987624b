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

use std::sync::Arc;

use cudarc::driver::CudaSlice;

use super::{CbLayout, BS, KERNEL, WARPS};
use crate::error::Result;
use crate::gpu::{kernel_int, ByMode, DevMut, DevRef, Gpu, Kernel, Shape, YPrologue};
use crate::methods::common::gpu::{Axpby, Call, Launches, Resident};
use crate::methods::{DeviceLayout, Layout};
use crate::scalar::Scalar;

/// `min_ctas=auto` builds the run kernel for 8 CTAs per SM when the warps take at least this
/// many blocks each (tuning data: the 8-CTA build wins on large stencils, where bpw = 8, and
/// loses on small matrices, where bpw = 1 or 2; measurements: `docs/methods/cb-spmv.md`).
const OCCUPANCY8_MIN_BPW: usize = 8;

/// CTAs per SM of the y prologue (one grid-stride launch for every β).
const SCALE_CTAS_PER_SM: usize = 8;

crate::kernel_args! {
    /// The parameters of every cb-spmv entry (kernel.cu's `CB_PARAMS`): the general kernels use
    /// the first 21 (`cb_spmv_grid` 23), the run kernels the first 13 and the last 7.
    pub(super) struct CbArgs<'a, T> {
        arena: DevRef<'a, u8>,
        meta: DevRef<'a, u64>,
        gcols: DevRef<'a, u32>,
        gathered: i32,
        axpby: Axpby<'a, T>,
        m: i32,
        n: i32,
        coo_max: i32,
        dense_min: i32,
        bpw: i32,
        split_vals: DevRef<'a, T>,
        voff: DevRef<'a, u64>,
        split: i32,
        panel_nb: DevRef<'a, u32>,
        tick: DevMut<'a, u32>,
        ready: DevMut<'a, u32>,
        fused: i32,
        run: i32,
        nctas: u64,
        bar: DevMut<'a, u32>,
        split_of: DevRef<'a, u32>,
        nparts: DevRef<'a, u32>,
        ws: DevMut<'a, T>,
        cnt: DevMut<'a, u32>,
        owner: i32,
    }
}

/// The device copy of a cb-spmv layout.
pub(super) struct DeviceCb<T: Scalar> {
    /// `cb_spmv`, or a run kernel (`cb_spmv_run*`: `accumulate=run` with aggregated regions).
    spmv: Kernel<CbArgs<'static, T>>,
    /// Its cooperative grid form.
    spmv_grid: Kernel<CbArgs<'static, T>>,
    /// epilogue=owner: one launch of the run kernel, no scaling before it; with epilogue=auto on
    /// a stream only.
    owner: ByMode<bool>,
    split_of: CudaSlice<u32>,
    nparts: CudaSlice<u32>,
    ws: CudaSlice<T>,
    cnt: CudaSlice<u32>,
    scale: YPrologue<T>,
    /// Some(co-resident CTAs) when a call is one cooperative `cb_spmv_grid` launch; with
    /// prologue=auto on a stream only.
    grid: ByMode<Option<usize>>,
    bar: CudaSlice<u32>,
    ctas: usize,
    bpw: i32,
    run: i32,
    coo_max: i32,
    dense_min: i32,
    fused: bool,
    split: bool,
    gathered: bool,
    arena: CudaSlice<u8>,
    meta: CudaSlice<u64>,
    split_vals: CudaSlice<T>,
    voff: CudaSlice<u64>,
    panel_nb: CudaSlice<u32>,
    tick: CudaSlice<u32>,
    ready: CudaSlice<u32>,
    gcols: CudaSlice<u32>,
}

/// `v` in both modes, or on a stream only (`graph` when captured) when `stream_only`.
fn by_mode<V: Copy>(v: V, stream_only: bool, graph: V) -> ByMode<V> {
    if stream_only {
        ByMode::Split { stream: v, graph }
    } else {
        ByMode::Always(v)
    }
}

pub(super) fn upload<T: Scalar>(
    l: &CbLayout<T>,
    gpu: &Arc<Gpu>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    gpu.ensure_fits("cb-spmv layout", l.footprint_bytes())?;
    let npanels = l.panel_nb.len();
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
    let room = DeviceCb {
        spmv: gpu.kernel::<T, _>(&KERNEL, &name)?,
        spmv_grid,
        owner: by_mode(owner, owner && l.cfg.owner.is_none(), false),
        split_of: gpu.upload(&l.split_of)?,
        nparts: gpu.upload(&l.nparts)?,
        ws: gpu.alloc_zeros::<T>((l.nparts.len() * BS).max(1))?,
        cnt: gpu.alloc_zeros::<u32>(l.nparts.len().max(1))?,
        grid,
        bar: gpu.alloc_zeros::<u32>(2)?,
        scale: gpu.y_prologue_kernel::<T>(SCALE_CTAS_PER_SM)?,
        ctas: l.nslots() / (WARPS * l.bpw),
        bpw: l.bpw as i32,
        run: l.cfg.run as i32,
        coo_max: l.cfg.coo_max as i32,
        dense_min: l.cfg.dense_min as i32,
        fused: l.cfg.fused,
        split: !l.cfg.aggregate,
        gathered: l.gathered,
        arena: gpu.upload(&l.arena)?,
        meta: gpu.upload(&l.meta)?,
        split_vals: gpu.upload(&l.split_vals)?,
        voff: gpu.upload(&l.voff)?,
        panel_nb: gpu.upload(&l.panel_nb)?,
        tick: gpu.alloc_zeros::<u32>(npanels.max(1))?,
        ready: gpu.alloc_zeros::<u32>(npanels.max(1))?,
        gcols: if l.gathered {
            let mut g = Vec::with_capacity(l.gcols.len() + BS);
            g.extend_from_slice(&l.gcols);
            g.resize(l.gcols.len() + BS, 0);
            gpu.upload(&g)?
        } else {
            gpu.alloc_zeros::<u32>(1)?
        },
    };
    Ok(Resident::boxed(
        (l.nrows, l.ncols),
        l.footprint_bytes(),
        room,
    ))
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
        let m = kernel_int("cb-spmv nrows", c.nrows)?;
        let n = kernel_int("cb-spmv ncols", c.ncols)?;
        let args = CbArgs {
            arena: DevRef::new(&self.arena),
            meta: DevRef::new(&self.meta),
            gcols: DevRef::new(&self.gcols),
            gathered: self.gathered as i32,
            axpby: c.axpby(),
            m,
            n,
            coo_max: self.coo_max,
            dense_min: self.dense_min,
            bpw: self.bpw,
            split_vals: DevRef::new(&self.split_vals),
            voff: DevRef::new(&self.voff),
            split: self.split as i32,
            panel_nb: DevRef::new(&self.panel_nb),
            tick: DevMut::scratch(&self.tick),
            ready: DevMut::scratch(&self.ready),
            fused: self.fused as i32,
            run: self.run,
            nctas: self.ctas as u64,
            bar: DevMut::scratch(&self.bar),
            split_of: DevRef::new(&self.split_of),
            nparts: DevRef::new(&self.nparts),
            ws: DevMut::scratch(&self.ws),
            cnt: DevMut::scratch(&self.cnt),
            owner: owner as i32,
        };
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
