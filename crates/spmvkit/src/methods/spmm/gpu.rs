//! The device side of SpMM (issue #24): the argument structs of `kernel.cu`'s entries (one per
//! kernel, CUB's parameter-struct rule), the multi-vector kernels' device state
//! ([`DeviceMulti`]: the row-split or the merge-path kernels on their CSR copy, or cuSPARSE
//! SpMM) with their launches, and the strided column copy of the single-vector fallback.
//!
//! Merge path ([`DeviceMerge`]): one launch of a group of `lanes` lanes per team (the tile the
//! row-split rule picks with the teams as its work items), then, when rows span teams, the
//! fix-up, a group per spanning row.
//!
//! Row-major, one tile entry per call ([`RmConfig`]: lanes per row, values per X load, loads
//! per lane, unroll; chosen from k, the precision, X's alignment and the method's
//! [`SpmmTune`]). Rows longer than the piece length ([`piece_nnz`]) are cut into pieces
//! ([`DeviceLong`]): the same launch takes the pieces first (each writes its partial sums) and
//! then the other rows, and a fix-up adds each long row's partials in order and stores; the
//! partial sums' buffer is sized at `prepare` for the shape.
//!
//! Grids: row-major, ⌈items·lanes / 256⌉ CTAs of 256 threads (a group of `lanes` per row or
//! piece), at most as many as the GPU keeps resident at once (the tile's occupancy), so that on
//! large matrices each group strides over many rows: a CTA holds its SM's slots until its
//! slowest group is done, and with one row per group a skewed matrix (kron:21: rows of 0 to
//! 1024 nonzeros after the cut) kept a fraction of the slots busy; column-major, a warp per row as `csr-vector` (256 threads,
//! the kernel strides).

use std::sync::{Arc, Mutex};

use cudarc::driver::CudaSlice;

use cudarc::driver::DevicePtr;

use super::cpu::LongRows;
use super::merge::{merge_share, MergeTeams};
use super::tile::{piece_nnz, RmConfig, SpmmTune, RM_TILES};
use super::{DeviceMultiLayout, MultiKernel, MultiShape, MultiSource, KERNEL};
use crate::error::{Error, Result};
use crate::gpu::cusparse::CusparseSpmm;
use crate::gpu::{kernel_int, DevMut, DevRef, DeviceBlocks, Gpu, Kernel, Shape};
use crate::matrix::Csr;
use crate::matrix::DenseOrder;
use crate::methods::common::csr::{CsrArgs, DeviceCsr};
use crate::methods::common::gpu::Call;
use crate::scalar::{Idx, Scalar};

/// Threads per CTA of the SpMM kernels (the fix-ups declare `__launch_bounds__(256, 1)` in
/// kernel.cu: keep them equal).
const THREADS: u32 = 256;
/// The most CTAs of one launch (the kernels grid-stride past it).
const MAX_CTAS: usize = 1 << 20;
/// Resident threads per SM (sm_80 and sm_90), for the tile rule's fill ([`RmConfig::choose`]).
const THREADS_PER_SM: usize = 2048;

crate::kernel_args! {
    /// `spmm_rows_cm`: the CSR matrix with the blocks as its operands, the matrix's columns (X's
    /// leading dimension) and k.
    pub(crate) struct SpmmArgs<'a, T> {
        csr: CsrArgs<'a, T>,
        ncols: i32,
        k: i32,
    }
}

crate::kernel_args! {
    /// The row-major tiles `spmm_rm_v<V>a<A>u<U>`: the CSR matrix with the blocks as operands,
    /// k, the lanes per row, the piece length `limit` (rows over it are skipped), and the long
    /// rows' pieces, which the same launch takes first (a group per piece, partial sums to
    /// `partial`).
    pub(crate) struct SpmmRmArgs<'a, T> {
        csr: CsrArgs<'a, T>,
        k: i32,
        lanes: i32,
        limit: i32,
        piece_start: DevRef<'a, Idx>,
        piece_end: DevRef<'a, Idx>,
        npieces: i32,
        partial: DevMut<'a, T>,
    }
}

crate::kernel_args! {
    /// `spmm_fixup_rm`: each long row's partial sums added in piece order, then stored.
    pub(crate) struct SpmmFixupArgs<'a, T> {
        csr: CsrArgs<'a, T>,
        k: i32,
        lanes: i32,
        long_row: DevRef<'a, Idx>,
        long_first: DevRef<'a, Idx>,
        nlong: i32,
        partial: DevRef<'a, T>,
    }
}

crate::device_args! {
    /// The merge path's teams on the device ([`MergeTeams`]): each share's start coordinate.
    pub(super) struct TeamArrays<T> from l: &MergeTeams;
    /// The merge-path entries `spmm_merge_rm_v<V>a<A>u<U>` and `spmm_merge_cm_v1a<A>u<U>`: the
    /// CSR matrix with the blocks as operands, k, the lanes per team, X's leading dimension
    /// when column-major, the teams, and the carries (nteams × k, sized when a shape is
    /// prepared).
    pub(crate) struct SpmmMergeArgs<'a, T> {
        csr: CsrArgs<'a, T>,
        k: i32,
        lanes: i32,
        ncols: i32,
        team_row: &[Idx] = &l.row,
        team_nz: &[Idx] = &l.nz,
        nteams: i32 = kernel_int("SpMM merge teams", l.nteams())?,
        carry: DevMut<'a, T>,
    }
}

crate::device_args! {
    /// The merge path's carry runs on the device.
    pub(super) struct RunArrays<T> from l: &MergeTeams;
    /// `spmm_merge_fixup`: each spanning row's carries added in team order, α times the sum
    /// added to Y (`col_major`: the blocks' order).
    pub(crate) struct SpmmMergeFixupArgs<'a, T> {
        csr: CsrArgs<'a, T>,
        k: i32,
        lanes: i32,
        col_major: i32,
        run_row: &[Idx],
        run_first: &[Idx],
        run_end: &[Idx],
        nruns: i32 = kernel_int("SpMM merge carry runs", l.nruns())?,
        carry: DevRef<'a, T>,
    }
}

/// The merge-path SpMM on the device (`kernel.cu`'s `spmm_merge_*`): the teams and carry
/// runs, the entries (row-major: one per tile of [`RM_TILES`]; column-major: the tiles of one
/// value per load, `None` at the others), the fix-up, and the carries (nteams × the largest k
/// prepared).
pub(super) struct DeviceMerge<T: Scalar> {
    share: usize,
    nteams: usize,
    nruns: usize,
    teams: TeamArrays<T>,
    runs: RunArrays<T>,
    rm: Vec<Kernel<SpmmMergeArgs<'static, T>>>,
    cm: Vec<Option<Kernel<SpmmMergeArgs<'static, T>>>>,
    fixup: Kernel<SpmmMergeFixupArgs<'static, T>>,
    carry: Mutex<Option<CudaSlice<T>>>,
}

impl<T: Scalar> DeviceMerge<T> {
    fn upload(gpu: &Arc<Gpu>, a: &Csr<T>, tune: SpmmTune) -> Result<Self> {
        let t = MergeTeams::of(a.row_ptr(), merge_share(a.nrows(), a.nnz(), tune));
        let entry = |order: &str, tile: &str| {
            let name = format!("spmm_merge_{order}_{}", &tile["spmm_rm_".len()..]);
            gpu.kernel::<T, _>(&KERNEL, &name)
        };
        Ok(DeviceMerge {
            share: t.share,
            nteams: t.nteams(),
            nruns: t.nruns(),
            teams: TeamArrays::upload(gpu, &t)?,
            runs: RunArrays::upload(gpu, &t)?,
            rm: RM_TILES
                .iter()
                .map(|tile| entry("rm", tile.3))
                .collect::<Result<_>>()?,
            cm: RM_TILES
                .iter()
                .map(|tile| (tile.0 == 1).then(|| entry("cm", tile.3)).transpose())
                .collect::<Result<_>>()?,
            fixup: gpu.kernel::<T, _>(&KERNEL, "spmm_merge_fixup")?,
            carry: Mutex::new(None),
        })
    }

    /// The tile of a call: row-major, the team rule ([`RmConfig::choose_team`]: the row-split
    /// rule with the teams as its work items, at least 16 lanes from k = 32 on); column-major,
    /// the row-split rule with one value per load.
    fn tile(
        &self,
        gpu: &Gpu,
        tune: SpmmTune,
        k: usize,
        order: DenseOrder,
        align: usize,
    ) -> RmConfig {
        let fill = gpu.sm_count() * THREADS_PER_SM;
        match order {
            DenseOrder::Row => RmConfig::choose_team(k, T::BYTES, tune, align, (self.nteams, fill)),
            DenseOrder::Col => {
                let tune = SpmmTune {
                    vec_bytes: T::BYTES as u32,
                    ..tune
                };
                RmConfig::choose(k, T::BYTES, tune, align, (self.nteams, fill))
            }
        }
    }

    /// Grows the carries' buffer to hold `k` vectors of every team.
    fn prepare(&self, gpu: &Gpu, k: usize) -> Result<()> {
        let len = self.nteams.checked_mul(k).ok_or(Error::TooLarge {
            what: "SpMM merge carries (teams × k)",
            value: u64::MAX,
        })?;
        let mut c = self.carry.lock().unwrap_or_else(|e| e.into_inner());
        if c.as_ref().is_none_or(|b| b.len() < len) {
            *c = None;
            gpu.ensure_fits("SpMM merge-path carries", len * T::BYTES)?;
            *c = Some(gpu.alloc_zeros(len.max(1))?);
        }
        Ok(())
    }

    fn bytes(&self) -> usize {
        let c = self.carry.lock().unwrap_or_else(|e| e.into_inner());
        (self.teams.team_row.num_bytes() + self.teams.team_nz.num_bytes())
            + (self.runs.run_row.num_bytes() + self.runs.run_first.num_bytes())
            + self.runs.run_end.num_bytes()
            + c.as_ref().map_or(0, |b| b.num_bytes())
    }

    /// Enqueues Y = αAX + βY for `c`'s blocks of `shape` with the tile `cfg`: the teams, then,
    /// when a row spans teams, the fix-up.
    fn run(
        &self,
        gpu: &Gpu,
        a: &DeviceCsr<T>,
        c: &mut Call<'_, T>,
        shape: MultiShape,
        cfg: RmConfig,
    ) -> Result<()> {
        let carry = self.carry.lock().unwrap_or_else(|e| e.into_inner());
        let k = shape.k;
        let carry = carry
            .as_ref()
            .filter(|b| b.len() >= self.nteams * k)
            .ok_or_else(|| {
                Error::InvalidArgument(format!("SpMM merge: carries not prepared for k = {k}"))
            })?;
        let no_entry = || Error::InvalidArgument(format!("SpMM merge: no entry for {cfg}"));
        let at = cfg.tile().ok_or_else(no_entry)?;
        let (kernel, col_major) = match shape.order {
            DenseOrder::Row => (&self.rm[at], 0),
            DenseOrder::Col => (self.cm[at].as_ref().ok_or_else(no_entry)?, 1),
        };
        let (kk, lanes) = (kernel_int("SpMM k", k)?, cfg.lanes as i32);
        let ncols = kernel_int("SpMM ncols", a.dims().1)?;
        let args = self.teams.args(
            a.args("SpMM nrows", c)?,
            kk,
            lanes,
            ncols,
            DevMut::scratch(carry),
        );
        let threads = |n: usize| {
            n.checked_mul(cfg.lanes as usize).ok_or(Error::TooLarge {
                what: "SpMM merge threads (teams × lanes)",
                value: u64::MAX,
            })
        };
        let grid = Shape::grid_stride(threads(self.nteams)?, THREADS, MAX_CTAS);
        // SAFETY: row_ptr has nrows + 1 entries, col_idx and vals nnz with column indices below
        // ncols (a validated Csr); the teams' coordinates lie on its merge path (built from it),
        // nteams + 1 of them; X holds ncols·k and Y nrows·k entries (checked by the caller),
        // carry nteams·k (checked above); the row-major tile's vector loads need X aligned to
        // them (the tile was chosen from X's address), the column-major ones take one value.
        unsafe { gpu.launch(kernel, grid, &args) }?;
        if self.nruns == 0 {
            return Ok(());
        }
        let args = self.runs.args(
            a.args("SpMM nrows", c)?,
            kk,
            lanes,
            col_major,
            DevRef::new(carry),
        );
        let grid = Shape::grid_stride(threads(self.nruns)?, THREADS, MAX_CTAS);
        // SAFETY: the runs hold rows below nrows and team ranges inside 0..nteams; carry holds
        // nteams·k entries and Y nrows·k (checked by the caller).
        unsafe { gpu.launch(&self.fixup, grid, &args) }
    }
}

/// The long rows of a matrix on the device (none, one element each, when it has none: the
/// rows mode's arguments point at them unread), with the fix-up and the partial sums' buffer
/// (pieces × the largest k prepared).
pub(super) struct DeviceLong<T: Scalar> {
    /// The piece length ([`piece_nnz`]) and the matrix's rows.
    piece: usize,
    nrows: usize,
    npieces: usize,
    nlong: usize,
    rows: CudaSlice<Idx>,
    first: CudaSlice<Idx>,
    start: CudaSlice<Idx>,
    end: CudaSlice<Idx>,
    fixup: Kernel<SpmmFixupArgs<'static, T>>,
    partial: Mutex<Option<CudaSlice<T>>>,
}

impl<T: Scalar> DeviceLong<T> {
    fn upload(gpu: &Arc<Gpu>, a: &Csr<T>, tune: SpmmTune) -> Result<Self> {
        let piece = piece_nnz(a.nnz(), a.nrows(), tune);
        let l = LongRows::of(a, piece);
        Ok(DeviceLong {
            piece,
            nrows: a.nrows(),
            npieces: l.npieces(),
            nlong: l.rows.len(),
            rows: gpu.upload(&l.rows)?,
            first: gpu.upload(&l.first)?,
            start: gpu.upload(&l.start)?,
            end: gpu.upload(&l.end)?,
            fixup: gpu.kernel::<T, _>(&KERNEL, "spmm_fixup_rm")?,
            partial: Mutex::new(None),
        })
    }

    /// Grows the partial sums' buffer to hold `k` vectors of every piece.
    fn prepare(&self, gpu: &Gpu, k: usize) -> Result<()> {
        let len = self.npieces.checked_mul(k).ok_or(Error::TooLarge {
            what: "SpMM partial sums (pieces × k)",
            value: u64::MAX,
        })?;
        let mut p = self.partial.lock().unwrap_or_else(|e| e.into_inner());
        if p.as_ref().is_none_or(|b| b.len() < len) {
            *p = None;
            gpu.ensure_fits("SpMM partial sums of the long rows", len * T::BYTES)?;
            *p = Some(gpu.alloc_zeros(len.max(1))?);
        }
        Ok(())
    }

    fn bytes(&self) -> usize {
        let p = self.partial.lock().unwrap_or_else(|e| e.into_inner());
        self.rows.num_bytes()
            + self.first.num_bytes()
            + self.start.num_bytes()
            + self.end.num_bytes()
            + p.as_ref().map_or(0, |b| b.num_bytes())
    }

    /// Enqueues row-major Y = αAX + βY for `c`'s blocks of `k` vectors with the tile `cfg`
    /// (`rm`, its entry): the long rows' pieces and the other rows in one launch, then, when
    /// there are long rows, the fix-up.
    fn run(
        &self,
        gpu: &Gpu,
        a: &DeviceCsr<T>,
        c: &mut Call<'_, T>,
        k: usize,
        (rm, resident): (&Kernel<SpmmRmArgs<'static, T>>, usize),
        cfg: RmConfig,
    ) -> Result<()> {
        let p = self.partial.lock().unwrap_or_else(|e| e.into_inner());
        let partial = p
            .as_ref()
            .filter(|b| b.len() >= self.npieces * k)
            .ok_or_else(|| {
                Error::InvalidArgument(format!("SpMM: partial sums not prepared for k = {k}"))
            })?;
        let (kk, lanes) = (kernel_int("SpMM k", k)?, cfg.lanes as i32);
        let groups = |n: usize| {
            n.checked_mul(cfg.lanes as usize).ok_or(Error::TooLarge {
                what: "SpMM threads (groups × lanes)",
                value: u64::MAX,
            })
        };
        let args = SpmmRmArgs {
            csr: a.args("SpMM nrows", c)?,
            k: kk,
            lanes,
            limit: kernel_int("SpMM piece length", self.piece)?,
            piece_start: DevRef::new(&self.start),
            piece_end: DevRef::new(&self.end),
            npieces: kernel_int("SpMM pieces", self.npieces)?,
            partial: DevMut::scratch(partial),
        };
        let items = a
            .dims()
            .0
            .checked_add(self.npieces)
            .ok_or(Error::TooLarge {
                what: "SpMM work items (rows + pieces)",
                value: u64::MAX,
            })?;
        let shape = Shape::grid_stride(groups(items)?, THREADS, resident.clamp(1, MAX_CTAS));
        // SAFETY: row_ptr has nrows + 1 entries, col_idx and vals nnz with column indices below
        // ncols (a validated Csr); the pieces lie inside its rows (built from it); X holds
        // ncols·k and Y nrows·k entries (checked by the caller), partial npieces·k (checked
        // above); the tile's vector loads need X aligned to them (RmConfig::choose took X's
        // address).
        unsafe { gpu.launch(rm, shape, &args) }?;
        if self.nlong == 0 {
            return Ok(());
        }
        let args = SpmmFixupArgs {
            csr: a.args("SpMM nrows", c)?,
            k: kk,
            lanes,
            long_row: DevRef::new(&self.rows),
            long_first: DevRef::new(&self.first),
            nlong: kernel_int("SpMM long rows", self.nlong)?,
            partial: DevRef::new(partial),
        };
        let shape = Shape::grid_stride(groups(self.nlong)?, THREADS, MAX_CTAS);
        // SAFETY: long_row holds rows below nrows and long_first nlong + 1 piece indices up to
        // npieces; Y holds nrows·k entries (checked by the caller), partial npieces·k.
        unsafe { gpu.launch(&self.fixup, shape, &args) }
    }
}

crate::kernel_args! {
    /// `spmm_copy_strided`: dst[dst_off + i·dst_stride] = src[src_off + i·src_stride], i < n.
    pub(crate) struct StridedCopyArgs<'a, T> {
        dst: DevMut<'a, T>,
        src: DevRef<'a, T>,
        dst_off: u64,
        dst_stride: u64,
        src_off: u64,
        src_stride: u64,
        n: i32,
    }
}

/// The address alignment of a device buffer, bytes (the largest power of two dividing it, at
/// most 256).
pub(crate) fn alignment<T>(s: &CudaSlice<T>) -> usize {
    let (addr, _no_events) = s.device_ptr(s.stream());
    1usize << addr.trailing_zeros().min(8)
}

/// A multi-vector kernel's state on the device. The spmvkit kernels' CSR copy is shared
/// between them (`auto`'s trial makes both on the same matrix).
pub(super) enum DeviceMulti<T: Scalar> {
    RowSplit {
        a: Arc<DeviceCsr<T>>,
        /// The row-major tiles, in the order of [`RM_TILES`].
        rm: Vec<Kernel<SpmmRmArgs<'static, T>>>,
        /// The CTAs of each tile that fit the GPU at once (occupancy query at upload): the
        /// row-major grid's size, so that groups stride over many rows.
        resident: Vec<usize>,
        cm: Kernel<SpmmArgs<'static, T>>,
        /// The rows longer than the piece length (possibly none).
        long: Box<DeviceLong<T>>,
        tune: SpmmTune,
    },
    Merge {
        a: Arc<DeviceCsr<T>>,
        merge: Box<DeviceMerge<T>>,
        tune: SpmmTune,
    },
    Cusparse(CusparseSpmm<T>),
    /// A layout's own kernel on its own arrays ([`super::MultiLayout`]).
    Own(Box<dyn DeviceMultiLayout<T>>),
}

impl<T: Scalar> DeviceMulti<T> {
    /// Uploads the source's matrix for its kernel; spmvkit's kernels take `shared`, the CSR
    /// copy of another kernel on the same matrix, when there is one.
    pub(super) fn upload(
        gpu: &Arc<Gpu>,
        src: &MultiSource<'_, T>,
        shared: Option<Arc<DeviceCsr<T>>>,
    ) -> Result<Self> {
        let csr = || shared.map_or_else(|| DeviceCsr::upload(gpu, src.a).map(Arc::new), Ok);
        Ok(match src.kernel {
            MultiKernel::RowSplit => {
                let rm: Vec<Kernel<SpmmRmArgs<'static, T>>> = RM_TILES
                    .iter()
                    .map(|t| gpu.kernel::<T, _>(&KERNEL, t.3))
                    .collect::<Result<_>>()?;
                let resident = rm
                    .iter()
                    .map(|k| k.resident_ctas(gpu, THREADS, 0))
                    .collect::<Result<_>>()?;
                DeviceMulti::RowSplit {
                    a: csr()?,
                    rm,
                    resident,
                    cm: gpu.kernel::<T, _>(&KERNEL, "spmm_rows_cm")?,
                    long: Box::new(DeviceLong::upload(gpu, src.a, src.tune)?),
                    tune: src.tune,
                }
            }
            MultiKernel::Merge => DeviceMulti::Merge {
                a: csr()?,
                merge: Box::new(DeviceMerge::upload(gpu, src.a, src.tune)?),
                tune: src.tune,
            },
            MultiKernel::Cusparse => {
                DeviceMulti::Cusparse(CusparseSpmm::new(gpu, src.a, src.deterministic)?)
            }
            MultiKernel::Auto | MultiKernel::Spmv => {
                return Err(Error::InvalidArgument(format!(
                    "SpMM: {} is not a kernel on a CSR copy",
                    src.kernel.name()
                )))
            }
            MultiKernel::Packed => {
                return Err(Error::InvalidArgument(
                    "SpMM: csr-packed's kernel runs on its layout (MultiLayout), not on CSR".into(),
                ))
            }
        })
    }

    /// Makes what `shape` needs ahead of its calls (cuSPARSE: the algorithm trial), with notes
    /// for reports.
    pub(super) fn prepare(&self, gpu: &Gpu, shape: MultiShape) -> Result<Vec<(String, String)>> {
        match self {
            DeviceMulti::RowSplit { long, tune, .. } => {
                if shape.order != DenseOrder::Row {
                    return Ok(Vec::new());
                }
                long.prepare(gpu, shape.k)?;
                let fill = gpu.sm_count() * THREADS_PER_SM;
                let cfg = RmConfig::choose(shape.k, T::BYTES, *tune, 256, (long.nrows, fill));
                let mut notes = vec![(
                    format!("spmm tile k={}", shape.k),
                    format!("{cfg} (X aligned to 16 bytes; less aligned blocks load narrower)"),
                )];
                if long.nlong > 0 {
                    notes.push((
                        "spmm long rows".into(),
                        format!(
                            "{} rows over {} nonzeros in {} pieces (row-major)",
                            long.nlong, long.piece, long.npieces
                        ),
                    ));
                }
                Ok(notes)
            }
            DeviceMulti::Merge { merge, tune, .. } => {
                merge.prepare(gpu, shape.k)?;
                let cfg = merge.tile(gpu, *tune, shape.k, shape.order, 256);
                Ok(vec![(
                    format!("spmm merge k={} {}", shape.k, shape.order),
                    format!(
                        "{} teams of {} merge-path steps, {} rows across teams; {cfg}",
                        merge.nteams, merge.share, merge.nruns
                    ),
                )])
            }
            DeviceMulti::Cusparse(c) => Ok(c
                .prepare(shape)?
                .map(|choice| {
                    let key = format!("cusparse spmm k={} {}", shape.k, shape.order);
                    let tried = choice
                        .trials
                        .iter()
                        .map(|(alg, r)| match r {
                            Ok(us) => format!("{} {us:.2} µs", alg.name()),
                            Err(e) => format!("{} refused ({e})", alg.name()),
                        })
                        .collect::<Vec<_>>()
                        .join(", ");
                    vec![(key, format!("{} kept; {tried}", choice.alg.name()))]
                })
                .unwrap_or_default()),
            DeviceMulti::Own(d) => d.prepare(gpu, shape),
        }
    }

    /// The CSR copy of spmvkit's kernels (shared between them).
    pub(super) fn csr(&self) -> Option<&Arc<DeviceCsr<T>>> {
        match self {
            DeviceMulti::RowSplit { a, .. } | DeviceMulti::Merge { a, .. } => Some(a),
            DeviceMulti::Cusparse(_) | DeviceMulti::Own(_) => None,
        }
    }

    /// Device bytes held by `devices`, a shared CSR copy once.
    pub(super) fn footprint_bytes<'a>(devices: impl Iterator<Item = &'a Self>) -> usize
    where
        T: 'a,
    {
        let mut csrs: Vec<&Arc<DeviceCsr<T>>> = Vec::new();
        let mut bytes = 0;
        for d in devices {
            bytes += match d {
                DeviceMulti::RowSplit { long, .. } => long.bytes(),
                DeviceMulti::Merge { merge, .. } => merge.bytes(),
                DeviceMulti::Cusparse(c) => c.footprint_bytes(),
                DeviceMulti::Own(d) => d.footprint_bytes(),
            };
            if let Some(a) = d.csr().filter(|a| !csrs.iter().any(|c| Arc::ptr_eq(c, a))) {
                bytes += a.num_bytes();
                csrs.push(a);
            }
        }
        bytes
    }

    /// Enqueues Y = αAX + βY for a prepared shape, after [`DeviceBlocks::check`].
    pub(super) fn run(&self, gpu: &Gpu, b: DeviceBlocks<'_, T>) -> Result<()> {
        match self {
            DeviceMulti::Cusparse(c) => c.run(b),
            DeviceMulti::Merge { a, merge, tune } => {
                b.check("SpMM", gpu, a.dims())?;
                let (shape, mut c) = Call::blocks(a.dims(), b);
                if c.nrows == 0 {
                    return Ok(());
                }
                let cfg = merge.tile(gpu, *tune, shape.k, shape.order, alignment(c.x));
                merge.run(gpu, a, &mut c, shape, cfg)
            }
            DeviceMulti::Own(d) => d.run(gpu, b),
            DeviceMulti::RowSplit {
                a,
                rm,
                resident,
                cm,
                long,
                tune,
            } => {
                b.check("SpMM", gpu, a.dims())?;
                let (shape, mut c) = Call::blocks(a.dims(), b);
                let (nrows, ncols) = a.dims();
                if nrows == 0 {
                    return Ok(());
                }
                let fill = gpu.sm_count() * THREADS_PER_SM;
                let cfg = RmConfig::choose(shape.k, T::BYTES, *tune, alignment(c.x), (nrows, fill));
                match shape.order {
                    DenseOrder::Row => {
                        let at = cfg.tile().ok_or_else(|| {
                            Error::InvalidArgument(format!("SpMM: no tile entry for {cfg}"))
                        })?;
                        long.run(gpu, a, &mut c, shape.k, (&rm[at], resident[at]), cfg)
                    }
                    DenseOrder::Col => {
                        let args = SpmmArgs {
                            csr: a.args("SpMM nrows", &mut c)?,
                            ncols: kernel_int("SpMM ncols", ncols)?,
                            k: kernel_int("SpMM k", shape.k)?,
                        };
                        let ctas = nrows.div_ceil((THREADS / 32) as usize).min(MAX_CTAS);
                        // SAFETY: row_ptr has nrows + 1 entries, col_idx and vals nnz with
                        // column indices below ncols (a validated Csr); X holds ncols·k and Y
                        // nrows·k entries (checked above), which is all the kernel indexes.
                        unsafe { gpu.launch(cm, Shape::ctas(ctas, THREADS), &args) }
                    }
                }
            }
        }
    }
}

/// One end of a strided copy: a buffer, the first entry, the step.
pub(super) struct Strided<B> {
    pub(super) buf: B,
    pub(super) off: usize,
    pub(super) stride: usize,
}

impl<B> Strided<B> {
    /// Checks that entries off, off + stride, … (n of them) lie inside a buffer of `len`.
    fn check(&self, what: &str, len: usize, n: usize) -> Result<()> {
        let last = (n.max(1) - 1)
            .checked_mul(self.stride)
            .and_then(|v| v.checked_add(self.off));
        match last {
            Some(l) if l < len => Ok(()),
            _ => Err(Error::DimensionMismatch {
                what: format!(
                    "SpMM column copy: {what} ({n} entries from {} by {})",
                    self.off, self.stride
                ),
                expected: len,
                got: last.map_or(usize::MAX, |l| l + 1),
            }),
        }
    }
}

/// Enqueues `n` entries from `src` to `dst` (each an offset and a stride into its buffer),
/// after checking both ends against their buffers.
pub(super) fn copy_strided<T: Scalar>(
    gpu: &Gpu,
    k: &Kernel<StridedCopyArgs<'static, T>>,
    dst: Strided<&mut CudaSlice<T>>,
    src: Strided<&CudaSlice<T>>,
    n: usize,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    dst.check("destination", dst.buf.len(), n)?;
    src.check("source", src.buf.len(), n)?;
    let args = StridedCopyArgs {
        dst: DevMut::new(dst.buf),
        src: DevRef::new(src.buf),
        dst_off: dst.off as u64,
        dst_stride: dst.stride as u64,
        src_off: src.off as u64,
        src_stride: src.stride as u64,
        n: kernel_int("SpMM column copy: entries", n)?,
    };
    let shape = Shape::grid_stride(n, THREADS, gpu.sm_count() * 32);
    // SAFETY: every index the kernel touches lies inside its buffer (checked above).
    unsafe { gpu.launch(k, shape, &args) }
}

#[cfg(test)]
mod tests {
    /// Every `__launch_bounds__` in kernel.cu (the fix-ups') admits the block size the launches
    /// use, so a change of [`super::THREADS`] cannot leave a kernel that refuses to launch.
    #[test]
    fn launch_bounds_admit_the_block_size() {
        let src = super::KERNEL.source.source;
        let bounds: Vec<u32> = src
            .match_indices("__launch_bounds__(")
            .map(|(i, m)| {
                let rest = &src[i + m.len()..];
                let end = rest
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(rest.len());
                rest[..end].parse().unwrap_or(0)
            })
            .collect();
        assert!(
            bounds.len() >= 2,
            "the two fix-ups declare launch bounds: {bounds:?}"
        );
        assert!(
            bounds.iter().all(|&b| b == super::THREADS),
            "{bounds:?} against {}",
            super::THREADS
        );
    }
}
