//! Upload and launch of `fastload_spmv` (kernel.cu). A call needs a prologue (y = β·y or zeros,
//! and with `permute_x=gather` x_sorted = x[perm]) unless β = 1 and `permute_x=kernel`. With
//! `fuse=one` the prologue CTAs (`npro` ≤ 16 per SM, grid-striding over y and x) and the block CTAs
//! share one launch, synchronised through three device counters that the kernel resets itself;
//! with `fuse=two` the prologue is its own launch first; with `fuse=grid` one cooperative launch
//! of `fastload_spmv_grid` (at most the CTAs that fit the GPU at once) does both around a grid
//! barrier. Hub rows add one `fastload_hub_combine` launch. No launch at all without rows.

use cudarc::driver::CudaSlice;

use super::{FastLoadLayout, Fuse, PermuteX, Phase, KERNEL};
use crate::error::{Error, Result};
use crate::gpu::{kernel_int, ByMode, DevMut, DevRef, Gpu, Kernel, Shape};
use crate::methods::common::gpu::{Call, Launches};
use crate::methods::common::room::device_room;
use crate::methods::Layout;
use crate::scalar::{Idx, Scalar};

const FL_GATHER: i32 = 1;
const FL_SCALE: i32 = 2;
const FL_MAIN: i32 = 4;
const FL_PRO: i32 = 8;
const FL_OPT: i32 = 16;

crate::device_args! {
    /// A FastLoad layout's arrays on the device, with its working buffers.
    pub(super) struct FastLoadArrays<T> from l: &FastLoadLayout<T>;
    /// `fastload_spmv`'s and `fastload_spmv_grid`'s parameters.
    pub(super) struct FastLoadArgs<'a, T> {
        nblocks: i32 = kernel_int("fastload blocks", l.nblocks())?,
        bpw: i32,
        blk_ptr: &[Idx],
        blk_col: &[Idx] = &l.blk_col_idx,
        blk_info: &[u8],
        row_idx: &[Idx],
        vals: &[T],
        perm: &[Idx],
        x: DevRef<'a, T>,
        /// x permuted (`permute_x=gather`).
        xs: &mut [T; if l.opts.permute_x == PermuteX::Gather { l.ncols.max(1) } else { 1 }],
        y: DevMut<'a, T>,
        nrows: i32 = kernel_int("fastload nrows", l.nrows)?,
        ncols: i32 = kernel_int("fastload ncols", l.ncols)?,
        alpha: T,
        beta: T,
        /// The three counters of `fuse=one`, zero between calls.
        sync: &mut [u32; 4],
        npro: i32,
        flags: i32,
        /// `hub_slots` sectors of `32 / sizeof(T)` values per hub row.
        hub: &mut [T; (l.hub_rows.len() * l.opts.hub_slots as usize * (32 / T::BYTES)).max(1)],
    }
}

crate::device_args! {
    /// The hub rows on the device.
    pub(super) struct HubArrays<T> from l: &FastLoadLayout<T>;
    /// `fastload_hub_combine`'s parameters.
    pub(super) struct HubCombineArgs<'a, T> {
        nhubs: i32 = kernel_int("fastload hub rows", l.hub_rows.len())?,
        slots: i32 = l.opts.hub_slots as i32,
        hub_rows: &[Idx],
        hub: DevMut<'a, T>,
        y: DevMut<'a, T>,
    }
}

/// Threads per CTA of the hub combine (a warp per hub).
const COMBINE_THREADS: u32 = 256;

device_room! {
    /// The device copy of a FastLoad layout.
    pub(super) struct DeviceFastLoad<T> {
        f: Kernel<FastLoadArgs<'static, T>> = gpu.kernel::<T, _>(&KERNEL, "fastload_spmv")?,
        grid_f: Kernel<FastLoadArgs<'static, T>> = grid_f,
        /// CTAs of `grid_f` that fit the GPU at once (the cooperative grid's size limit).
        grid_ctas: usize = grid_ctas,
        combine: Kernel<HubCombineArgs<'static, T>> =
            gpu.kernel::<T, _>(&KERNEL, "fastload_hub_combine")?,
        nblocks: usize = l.nblocks(),
        threads: u32 = l.opts.threads,
        bpw: u32 = blocks_per_warp(l.opts.blocks_per_warp, l.nblocks(), sm_count),
        gather: bool = gather,
        /// The fuse mode; `fuse=auto` up to the size cut: the grid launch on a stream, two launches
        /// in a graph.
        fuse: ByMode<Fuse> = match l.opts.fuse {
                Fuse::StreamGrid => ByMode::Split {
                    stream: Fuse::Grid,
                    graph: Fuse::Two,
                },
                f => ByMode::Always(f),
            },
        phase: Phase = l.opts.phase,
        optimised: bool = l.opts.optimised,
        sm_count: usize = sm_count,
        nhubs: usize = l.hub_rows.len(),
        arrays: FastLoadArrays<T> = FastLoadArrays::upload(gpu, l)?,
        hubs: HubArrays<T> = HubArrays::upload(gpu, l)?,
    }
    fn upload(l: &FastLoadLayout<T>, gpu) -> Resident((l.nrows, l.ncols), l.footprint_bytes()) {
        let gather = l.opts.permute_x == PermuteX::Gather;
        let sm_count = gpu.sm_count().max(1);
        let grid_f = gpu.kernel::<T, _>(&KERNEL, "fastload_spmv_grid")?;
        let grid_ctas = if matches!(l.opts.fuse, Fuse::Grid | Fuse::StreamGrid) {
            grid_f.resident_ctas(gpu, l.opts.threads, 0)?
        } else {
            0
        };
    }
}

impl<T: Scalar> DeviceFastLoad<T> {
    /// One launch of `fastload_spmv` (or its cooperative grid form) as `l` says.
    ///
    /// # Safety
    ///
    /// As [`Launches::run`]: x holds at least ncols and y at least nrows elements.
    unsafe fn launch(&self, gpu: &Gpu, l: Launch, c: &mut Call<'_, T>) -> Result<()> {
        // the launch's fields in order: bpw, x, y, alpha, beta, npro, flags
        let args = self.arrays.args(
            self.bpw as i32,
            DevRef::new(c.x),
            DevMut::new(c.y),
            c.alpha,
            c.beta,
            l.npro,
            l.flags,
        );
        let (k, shape) = if l.coop {
            (
                &self.grid_f,
                Shape::cooperative(l.grid as usize, self.threads),
            )
        } else {
            (&self.f, Shape::ctas(l.grid as usize, self.threads))
        };
        // SAFETY: blk_ptr has nblocks + 1 entries, blk_col/blk_info nblocks, every block's
        // elements lie in row_idx/vals with rows < nrows = len(y) and columns col0 + lane < ncols
        // = len(perm) = len(xs) (gather mode); perm maps into x (ncols entries, this function's
        // contract); sync holds the three counters, zero between calls; virtual rows r ≥ nrows
        // index hub (nhubs·hub_slots sectors). A cooperative grid is at most grid_ctas CTAs, all
        // co-resident, as its barrier needs.
        unsafe { gpu.launch(k, shape, &args) }
    }

    /// y[hub_rows[i]] += Σ slots of hub i, slots zeroed (one warp per hub).
    ///
    /// # Safety
    ///
    /// y holds at least nrows elements.
    unsafe fn launch_combine(&self, gpu: &Gpu, y: &mut CudaSlice<T>) -> Result<()> {
        let args = self
            .hubs
            .args(DevMut::scratch(&self.arrays.hub), DevMut::new(y));
        let shape = Shape::warp_per_item(self.nhubs, COMBINE_THREADS);
        // SAFETY: hub_rows has nhubs rows < len(y); hub holds nhubs·slots sectors of
        // 32 / sizeof(T) reals.
        unsafe { gpu.launch(&self.combine, shape, &args) }
    }
}

/// Blocks per warp: the option, or with auto (0) 4 when the blocks fill every resident warp slot
/// of the GPU at least twice over with 4 per warp, else 2 when they do with 2, else 1.
pub(super) fn blocks_per_warp(opt: u32, nblocks: usize, sm_count: usize) -> u32 {
    if opt != 0 {
        return opt;
    }
    // An SM holds at most 2048 threads = 64 warps.
    let slots = sm_count * 64 * 2;
    [4u32, 2]
        .into_iter()
        .find(|&b| nblocks / b as usize >= slots)
        .unwrap_or(1)
}

impl<T: Scalar> Launches<T> for DeviceFastLoad<T> {
    unsafe fn run(&self, gpu: &Gpu, mut c: Call<'_, T>) -> Result<()> {
        let launches = plan_launches(
            &PlanInput {
                nrows: c.nrows,
                ncols: c.ncols,
                nblocks: self.nblocks,
                threads: self.threads,
                bpw: self.bpw,
                gather: self.gather,
                fuse: self.fuse.get(gpu.launch_mode_if(self.fuse.varies())),
                optimised: self.optimised,
                sm_count: self.sm_count,
                grid_ctas: self.grid_ctas,
            },
            c.beta != T::one(),
        )?;
        for l in launches {
            let is_pro = l.flags & FL_MAIN == 0;
            let wanted = match self.phase {
                Phase::All => true,
                Phase::Prologue => is_pro,
                Phase::Blocks => !is_pro,
            };
            if wanted {
                // SAFETY: x and y as this function's contract requires.
                unsafe { self.launch(gpu, l, &mut c) }?;
            }
        }
        if self.nhubs > 0 && self.phase != Phase::Prologue && self.nblocks > 0 {
            // SAFETY: y as this function's contract requires.
            unsafe { self.launch_combine(gpu, c.y) }?;
        }
        Ok(())
    }
}

/// What `run` needs to know to plan its launches.
pub(super) struct PlanInput {
    pub nrows: usize,
    pub ncols: usize,
    pub nblocks: usize,
    pub threads: u32,
    pub bpw: u32,
    pub gather: bool,
    pub fuse: Fuse,
    pub optimised: bool,
    pub sm_count: usize,
    /// Co-resident CTAs of the grid kernel (used with `Fuse::Grid`).
    pub grid_ctas: usize,
}

/// One launch of `fastload_spmv`: grid size, prologue CTAs and flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Launch {
    pub grid: u32,
    pub npro: i32,
    pub flags: i32,
    /// A cooperative launch of `fastload_spmv_grid`.
    pub coop: bool,
}

/// The launches of one call (`scale`: β ≠ 1): none, the blocks alone, the prologue alone, both
/// fused in one grid, or the prologue and then the blocks. Prologue CTAs grid-stride over y and x
/// with about 4 items per thread, at most 16 per SM.
pub(super) fn plan_launches(p: &PlanInput, scale: bool) -> Result<Vec<Launch>> {
    if p.nrows == 0 {
        return Ok(Vec::new());
    }
    let gather = p.gather && p.nblocks > 0;
    let pro = scale || gather;
    let mut flags = 0;
    if gather {
        flags |= FL_GATHER;
    }
    if scale {
        flags |= FL_SCALE;
    }
    if p.optimised {
        flags |= FL_OPT;
    }
    let per_cta = p.threads as usize * 4;
    let pro_work = if scale { p.nrows } else { 0 }.max(if gather { p.ncols } else { 0 });
    // Enough prologue CTAs to keep the gather's loads in flight (a 2-per-SM cap made the
    // prologue latency-bound; measurements: docs/methods/fastload.md), at most 16 per SM.
    let npro = pro_work.div_ceil(per_cta).clamp(1, p.sm_count * 16);
    let warps = (p.threads / 32) as usize * p.bpw as usize;
    let main = p.nblocks.div_ceil(warps);
    if main + npro > i32::MAX as usize {
        return Err(Error::InvalidArgument(
            "fastload: too many blocks for one grid".into(),
        ));
    }
    let blocks = Launch {
        grid: main as u32,
        npro: 0,
        flags: flags | FL_MAIN,
        coop: false,
    };
    let prologue = Launch {
        grid: npro as u32,
        npro: npro as i32,
        flags: flags | FL_PRO,
        coop: false,
    };
    if p.fuse == Fuse::Grid && main > 0 {
        // Persistent CTAs stride over the warps' block groups; the prologue (if any) runs first
        // in the same launch, behind a grid barrier.
        let grid = main.min(p.grid_ctas.max(1)) as u32;
        return Ok(vec![Launch {
            grid,
            npro: 0,
            flags: flags | FL_MAIN | if pro { FL_PRO } else { 0 },
            coop: true,
        }]);
    }
    Ok(match (pro, main > 0) {
        (false, false) => vec![],
        (false, true) => vec![blocks],
        (true, false) => vec![prologue],
        (true, true) if p.fuse == Fuse::One => vec![Launch {
            grid: (npro + main) as u32,
            npro: npro as i32,
            flags: flags | FL_PRO | FL_MAIN,
            coop: false,
        }],
        (true, true) => vec![prologue, blocks],
    })
}
