//! Upload and launch of the cb-spmv kernels (kernel.cu): the arena (u8), the slot metadata (two
//! u64 per slot), the per-panel block counts with the ticket and ready arrays (zeroed once at
//! upload; the kernel resets them itself at the end of each call), and the column list when
//! gathered, with 16 padding entries so that staging lanes never leave it. One launch per call
//! of `nslots / (8·bpw)` CTAs of 256 threads; with `prologue=kernel` a grid-stride `cb_scale_y`
//! launch goes first; with `prologue=grid` one cooperative launch (at most the CTAs that fit
//! the GPU at once) does both. `accumulate=run` with aggregated regions runs `cb_spmv_run*`,
//! the other configurations the general `cb_spmv*`; with `epilogue=owner` (their default) the
//! run kernel is the one launch, with no scaling before it, and uploads the split panels'
//! run counts with a zeroed workspace and counters. Nothing when the matrix has no rows.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

use super::{CbLayout, BS, KERNEL, WARPS};
use crate::error::{Error, Result};
use crate::gpu::{grid_dim, kernel_int, Gpu};
use crate::methods::{DeviceLayout, Layout};
use crate::scalar::Scalar;

/// `min_ctas=auto` builds the run kernel for 8 CTAs per SM when the warps take at least this
/// many blocks each (tuning data: the 8-CTA build wins on large stencils, where bpw = 8, and
/// loses on small matrices, where bpw = 1 or 2; measurements: `docs/methods/cb-spmv.md`).
const OCCUPANCY8_MIN_BPW: usize = 8;

/// Threads per block of the scaling kernel.
const SCALE_THREADS: u32 = 256;

/// The device copy of a cb-spmv layout.
pub(super) struct DeviceCb<T: Scalar> {
    spmv: CudaFunction,
    spmv_grid: CudaFunction,
    /// The run kernels (`cb_spmv_run*`): the general kernels' first thirteen arguments, then
    /// nctas, bar and the owner epilogue's arrays.
    lean: bool,
    /// epilogue=owner: one launch of the run kernel, no scaling before it.
    owner: bool,
    /// The owner epilogue only when the stream is not being captured (epilogue=auto).
    owner_stream_only: bool,
    split_of: CudaSlice<u32>,
    nparts: CudaSlice<u32>,
    ws: CudaSlice<T>,
    cnt: CudaSlice<u32>,
    scale: CudaFunction,
    /// Some(co-resident CTAs) when a call is one cooperative `cb_spmv_grid` launch.
    grid_ctas: Option<usize>,
    /// The grid launch only when the stream is not being captured (prologue=auto).
    grid_stream_only: bool,
    bar: CudaSlice<u32>,
    nrows: usize,
    ncols: usize,
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
    bytes: usize,
}

/// Uploads `data`, or one zero element when it is empty (a valid pointer the kernel never
/// dereferences).
fn upload_or_dummy<V>(gpu: &Gpu, data: &[V]) -> Result<CudaSlice<V>>
where
    V: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + Copy,
{
    if data.is_empty() {
        gpu.alloc_zeros::<V>(1)
    } else {
        gpu.upload(data)
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
    let spmv_grid = gpu.function::<T>(&KERNEL, &grid_name)?;
    let owner = lean && l.owner();
    let grid_ctas = if !l.cfg.fused && l.cfg.owner != Some(true) && l.cfg.grid(l.nnz) {
        let per_sm = spmv_grid
            .occupancy_max_active_blocks_per_multiprocessor((WARPS * 32) as u32, 0, None)
            .map_err(|e| Error::cuda("cb-spmv: occupancy query", e))?
            .max(1) as usize;
        Some(per_sm * gpu.sm_count().max(1))
    } else {
        None
    };
    Ok(Box::new(DeviceCb {
        spmv: gpu.function::<T>(&KERNEL, &name)?,
        spmv_grid,
        lean,
        owner,
        owner_stream_only: l.cfg.owner.is_none(),
        split_of: upload_or_dummy(gpu, &l.split_of)?,
        nparts: upload_or_dummy(gpu, &l.nparts)?,
        ws: gpu.alloc_zeros::<T>((l.nparts.len() * BS).max(1))?,
        cnt: gpu.alloc_zeros::<u32>(l.nparts.len().max(1))?,
        grid_ctas,
        grid_stream_only: l.cfg.grid_on_stream_only(),
        bar: gpu.alloc_zeros::<u32>(2)?,
        scale: gpu.function::<T>(&KERNEL, "cb_scale_y")?,
        nrows: l.nrows,
        ncols: l.ncols,
        ctas: l.nslots() / (WARPS * l.bpw),
        bpw: l.bpw as i32,
        run: l.cfg.run as i32,
        coo_max: l.cfg.coo_max as i32,
        dense_min: l.cfg.dense_min as i32,
        fused: l.cfg.fused,
        split: !l.cfg.aggregate,
        gathered: l.gathered,
        arena: upload_or_dummy(gpu, &l.arena)?,
        meta: upload_or_dummy(gpu, &l.meta)?,
        split_vals: upload_or_dummy(gpu, &l.split_vals)?,
        voff: upload_or_dummy(gpu, &l.voff)?,
        panel_nb: upload_or_dummy(gpu, &l.panel_nb)?,
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
        bytes: l.footprint_bytes(),
    }))
}

impl<T: Scalar> DeviceLayout<T> for DeviceCb<T> {
    fn dims(&self) -> (usize, usize) {
        (self.nrows, self.ncols)
    }

    unsafe fn run_unchecked(
        &self,
        gpu: &Gpu,
        alpha: T,
        x: &CudaSlice<T>,
        beta: T,
        y: &mut CudaSlice<T>,
    ) -> Result<()> {
        if self.nrows == 0 {
            return Ok(());
        }
        let m = kernel_int("cb-spmv nrows", self.nrows)?;
        // Asked of the driver only when a stream-only mode is in play (small matrices).
        let capturing = ((self.owner && self.owner_stream_only)
            || (self.grid_ctas.is_some() && self.grid_stream_only))
            && (gpu.launch_mode() == crate::gpu::LaunchMode::Graph);
        let owner = self.owner && !(self.owner_stream_only && capturing);
        let coop = self
            .grid_ctas
            .filter(|_| self.ctas > 0 && !owner && !(self.grid_stream_only && capturing));
        if !self.fused && !owner && coop.is_none() {
            let blocks = self
                .nrows
                .div_ceil(SCALE_THREADS as usize)
                .min(gpu.sm_count().max(1) * 8) as u32;
            let cfg = LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (SCALE_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut b = gpu.stream().launch_builder(&self.scale);
            b.arg(&m).arg(&mut *y).arg(&beta);
            // SAFETY: matches cb_scale_y(int, real_t*, real_t); y has at least nrows entries
            // (this function's contract).
            unsafe { b.launch(cfg) }.map_err(|e| Error::cuda("cb-spmv scale-y launch", e))?;
        }
        if self.ctas == 0 {
            return Ok(());
        }
        let grid = coop.map_or(self.ctas, |c| c.min(self.ctas));
        let cfg = LaunchConfig {
            grid_dim: (grid_dim("cb-spmv CTAs", grid)?, 1, 1),
            block_dim: ((WARPS * 32) as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        let (split, gathered, fused) = (self.split as i32, self.gathered as i32, self.fused as i32);
        let n = kernel_int("cb-spmv ncols", self.ncols)?;
        let nctas = self.ctas as u64;
        let f = if coop.is_some() {
            &self.spmv_grid
        } else {
            &self.spmv
        };
        let mut b = gpu.stream().launch_builder(f);
        b.arg(&self.arena)
            .arg(&self.meta)
            .arg(&self.gcols)
            .arg(&gathered)
            .arg(x)
            .arg(y)
            .arg(&alpha)
            .arg(&beta)
            .arg(&m)
            .arg(&n)
            .arg(&self.coo_max)
            .arg(&self.dense_min)
            .arg(&self.bpw);
        if !self.lean {
            b.arg(&self.split_vals)
                .arg(&self.voff)
                .arg(&split)
                .arg(&self.panel_nb)
                .arg(&self.tick)
                .arg(&self.ready)
                .arg(&fused)
                .arg(&self.run);
        }
        if self.lean || coop.is_some() {
            b.arg(&nctas).arg(&self.bar);
        }
        let owner = owner as i32;
        if self.lean {
            b.arg(&self.split_of)
                .arg(&self.nparts)
                .arg(&self.ws)
                .arg(&self.cnt)
                .arg(&owner);
        }
        // SAFETY: the arguments match the kernel's signature in kernel.cu: arena, meta, gcols,
        // gathered, x, y, alpha, beta, m, n, coo_max, dense_min, bpw; then split_vals, voff,
        // split, panel_nb, tick, ready, fused, run for the general cb_spmv*; then nctas and bar
        // for cb_spmv_run* and cb_spmv_grid; then split_of, nparts, ws, cnt and owner for
        // cb_spmv_run* (split_of has one entry per panel, nparts/cnt one and ws 16 per split
        // panel; ws and cnt start at zero and the kernel leaves them so). meta has
        // 2·8·bpw·ctas words; every offset + region length lies inside the arena (or
        // split_vals/voff when split); block rows index panel_nb/tick/ready (one per panel);
        // gathered x columns are xcol + c < len(gcols) + 16 (the padding), each entry < ncols <=
        // len(x), direct ones are checked against n; written rows < nrows <= len(y). A grid
        // launch is at most the co-resident CTAs, as its barrier needs, which a cooperative
        // launch guarantees.
        if coop.is_some() {
            unsafe { b.launch_cooperative(cfg) }
        } else {
            unsafe { b.launch(cfg) }
        }
        .map_err(|e| Error::cuda("cb-spmv launch", e))?;
        Ok(())
    }

    fn footprint_bytes(&self) -> usize {
        self.bytes
    }
}
