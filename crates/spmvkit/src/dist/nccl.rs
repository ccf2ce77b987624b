//! The NCCL path (issue #12, parts 2 and 4): finding `libnccl`, the per-rank communicator, and
//! [`DistOperator`], one rank's share of a distributed y = αAx + βy on its GPU.
//!
//! Loading: cudarc loads NCCL by name (`libnccl.so`, `libnccl.so.13`, …) and panics when none
//! loads, while pip's `nvidia-nccl-cu13` ships only `.../nvidia/nccl/lib/libnccl.so.2`. So
//! [`loadable`] is checked before any NCCL call, and [`find_library`] searches
//! `SPMVKIT_NCCL_LIB`, `LD_LIBRARY_PATH`, the system library directories and Python's
//! `sys.path`; [`link_dir`] makes a private directory with a `libnccl.so` link to what it found,
//! which the launcher prepends to the ranks' `LD_LIBRARY_PATH` (read at process start).
//!
//! One call ([`DistOperator::apply`]): the compute stream ([`Gpu::stream`]) records "x ready";
//! the comm stream waits for it and runs the exchange (a pack kernel and grouped
//! `ncclSend`/`ncclRecv` for the halo, or `ncclAllGather` of the padded chunks); meanwhile the
//! compute stream runs the diagonal part (y = αA_d·x + βy), then waits for the exchange and runs
//! the off-diagonal part (y = αA_o·x_ghost + y). Every rank enqueues the same collectives in the
//! same order, which NCCL requires.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream};
use cudarc::nccl::{Comm, Id, NcclType, ReduceOp};

use super::bootstrap::{exchange_id, Hello, InputIdentity, RankEnv, ID_BYTES};
use super::partition::{RankBlock, Strategy};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::methods::{find_variant, DeviceLayout, PrepareFor};
use crate::scalar::Idx;

/// Path of a `libnccl.so*` file, or a directory holding one, to use instead of searching.
pub const ENV_NCCL_LIB: &str = "SPMVKIT_NCCL_LIB";

/// A scalar NCCL can move and spmvkit can compute with (f32, f64).
pub trait DistScalar: PrepareFor + NcclType {}
impl DistScalar for f32 {}
impl DistScalar for f64 {}

/// Whether cudarc can load NCCL in this process (by its own names, through the process's
/// library path).
pub fn loadable() -> bool {
    // SAFETY: only tries to dlopen the candidates and drops them.
    unsafe { cudarc::nccl::sys::is_culib_present() }
}

/// NCCL's version (e.g. 22703 for 2.27.3), when it is loadable.
pub fn version() -> Option<i32> {
    loadable()
        .then(|| cudarc::nccl::result::get_nccl_version().ok())
        .flatten()
}

const LIB_NAMES: [&str; 2] = ["libnccl.so.2", "libnccl.so"];

fn lib_in(dir: &Path) -> Option<PathBuf> {
    LIB_NAMES.iter().map(|n| dir.join(n)).find(|p| p.is_file())
}

/// Directories searched for NCCL, in order (after [`ENV_NCCL_LIB`]).
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Ok(lp) = std::env::var("LD_LIBRARY_PATH") {
        dirs.extend(lp.split(':').filter(|s| !s.is_empty()).map(PathBuf::from));
    }
    for d in [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/local/lib",
        "/usr/local/cuda/lib64",
        "/usr/lib",
    ] {
        dirs.push(PathBuf::from(d));
    }
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Ok(p) = std::env::var(var) {
            dirs.push(PathBuf::from(p).join("lib"));
        }
    }
    // pip's nvidia-nccl-cu1x wheels: <site-packages>/nvidia/nccl/lib
    for site in python_paths() {
        dirs.push(site.join("nvidia/nccl/lib"));
        dirs.push(site.join("nvidia/cu13/lib"));
    }
    dirs
}

/// Python's `sys.path` and site directories, as `python3` reports them (empty without Python).
fn python_paths() -> Vec<PathBuf> {
    let script = "import sys, site\n\
        paths = list(sys.path)\n\
        try:\n    paths += site.getsitepackages() + [site.getusersitepackages()]\n\
        except Exception:\n    pass\n\
        print('\\n'.join(p for p in paths if p))";
    let out = ["python3", "python"].iter().find_map(|py| {
        std::process::Command::new(py)
            .args(["-c", script])
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
    });
    out.map(|o| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(PathBuf::from)
            .collect()
    })
    .unwrap_or_default()
}

/// Finds a NCCL library file: [`ENV_NCCL_LIB`] when set (a file, or a directory holding
/// `libnccl.so.2` / `libnccl.so`), else the first hit in [`search_dirs`]. The error lists
/// where it looked.
pub fn find_library() -> Result<PathBuf> {
    if let Ok(p) = std::env::var(ENV_NCCL_LIB) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else if let Some(f) = p.is_dir().then(|| lib_in(&p)).flatten() {
            Ok(f)
        } else {
            Err(Error::GpuUnavailable(format!(
                "{ENV_NCCL_LIB}={} is neither a libnccl file nor a directory holding {}",
                p.display(),
                LIB_NAMES.join(" or ")
            )))
        };
    }
    let dirs = search_dirs();
    dirs.iter().find_map(|d| lib_in(d)).ok_or_else(|| {
        Error::GpuUnavailable(format!(
            "libnccl not found (searched {} directories incl. Python's site-packages/nvidia/nccl/lib; \
             pip install nvidia-nccl-cu13 or set {ENV_NCCL_LIB})",
            dirs.len()
        ))
    })
}

/// A private directory (under the temp dir, named after `lib`'s path) holding a `libnccl.so`
/// symlink to `lib`, for a child process's `LD_LIBRARY_PATH`.
pub fn link_dir(lib: &Path) -> Result<PathBuf> {
    let lib = lib.canonicalize().map_err(|e| Error::io(lib, e))?;
    // one directory per library, shared by concurrent launchers
    let hash = crate::hash::fnv1a(lib.to_string_lossy().as_bytes());
    let dir = std::env::temp_dir().join(format!("spmvkit-nccl-{hash:016x}"));
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let link = dir.join("libnccl.so");
    if std::fs::read_link(&link).ok().as_deref() != Some(lib.as_path()) {
        // link under a unique name, then rename over: atomic for concurrent launchers
        let tmp = dir.join(format!("libnccl.so.tmp{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&lib, &tmp).map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, &link).map_err(|e| Error::io(&link, e))?;
    }
    Ok(dir)
}

/// How a launcher makes NCCL loadable in the ranks it spawns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NcclSetup {
    /// Already loadable by cudarc's names; nothing to do.
    Loadable,
    /// Found at `lib`; prepend `dir` (holding a `libnccl.so` link) to `LD_LIBRARY_PATH`.
    Linked { lib: PathBuf, dir: PathBuf },
    /// Not found: the reason.
    Missing(String),
}

impl NcclSetup {
    /// Looks for NCCL as [`find_library`] does, unless [`ENV_NCCL_LIB`] is unset and it is
    /// already loadable.
    pub fn detect() -> NcclSetup {
        if std::env::var_os(ENV_NCCL_LIB).is_none() && loadable() {
            return NcclSetup::Loadable;
        }
        match find_library().and_then(|lib| link_dir(&lib).map(|dir| (lib, dir))) {
            Ok((lib, dir)) => NcclSetup::Linked { lib, dir },
            Err(e) => NcclSetup::Missing(e.to_string()),
        }
    }

    /// The `LD_LIBRARY_PATH` for a child process, when it must change.
    pub fn child_library_path(&self) -> Option<String> {
        match self {
            NcclSetup::Linked { dir, .. } => {
                let old = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
                Some(if old.is_empty() {
                    dir.display().to_string()
                } else {
                    format!("{}:{old}", dir.display())
                })
            }
            _ => None,
        }
    }
}

fn nccl_err(what: &str) -> impl Fn(cudarc::nccl::result::NcclError) -> Error + '_ {
    move |e| Error::cuda(format!("NCCL {what}"), format!("{:?}", e.0))
}

/// One rank's NCCL communicator, working on its own comm stream.
pub struct Communicator {
    comm: Comm,
    rank: usize,
    world: usize,
    /// Seconds spent in `ncclCommInitRank` (plus the rendezvous).
    pub init_s: f64,
}

impl Communicator {
    /// [`Communicator::connect`] with the identity of `a` when the world has more than one
    /// rank; `None` for a single rank, which needs no communicator.
    pub fn connect_if_distributed<T: crate::scalar::Scalar>(
        gpu: &Gpu,
        env: &RankEnv,
        a: &crate::matrix::Csr<T>,
        timeout: Duration,
    ) -> Result<Option<Communicator>> {
        if env.world <= 1 {
            return Ok(None);
        }
        Self::connect(gpu, env, &InputIdentity::of(a), timeout).map(Some)
    }

    /// Joins the world described by `env`: rank 0 makes the unique id, the rendezvous at
    /// `env.root` checks every rank's token and `input` and hands the id to all, then
    /// `ncclCommInitRank` on a new stream of `gpu`.
    pub fn connect(
        gpu: &Gpu,
        env: &RankEnv,
        input: &InputIdentity,
        timeout: Duration,
    ) -> Result<Communicator> {
        if !loadable() {
            return Err(Error::GpuUnavailable(format!(
                "rank {}: libnccl cannot be loaded (start ranks with `spmv dist run`, which finds \
                 pip's libnccl.so.2, or set LD_LIBRARY_PATH to a directory with libnccl.so)",
                env.rank
            )));
        }
        let t0 = Instant::now();
        let root = env.root.as_deref().ok_or_else(|| {
            Error::InvalidArgument(format!("rank {}: no rendezvous address", env.rank))
        })?;
        let token = env
            .token
            .clone()
            .ok_or_else(|| Error::InvalidArgument(format!("rank {}: no launch token", env.rank)))?;
        let id = if env.rank == 0 {
            let id = Id::new().map_err(nccl_err("ncclGetUniqueId"))?;
            Some(id.internal().iter().map(|&c| c as u8).collect())
        } else {
            None
        };
        let hello = Hello {
            token,
            rank: env.rank,
            world: env.world,
            input: *input,
            id,
        };
        let bytes = exchange_id(root, &hello, timeout)?;
        let mut internal = [0 as std::ffi::c_char; ID_BYTES];
        internal
            .iter_mut()
            .zip(&bytes)
            .for_each(|(d, &b)| *d = b as std::ffi::c_char);
        let stream = gpu.new_stream()?;
        let comm = Comm::from_rank(stream, env.rank, env.world, Id::uninit(internal))
            .map_err(nccl_err("ncclCommInitRank"))?;
        Ok(Communicator {
            comm,
            rank: env.rank,
            world: env.world,
            init_s: t0.elapsed().as_secs_f64(),
        })
    }

    pub fn rank(&self) -> usize {
        self.rank
    }
    pub fn world(&self) -> usize {
        self.world
    }
    /// The stream NCCL calls go on.
    pub fn stream(&self) -> Arc<CudaStream> {
        self.comm.stream()
    }

    /// In-place sum over ranks of a device buffer, on the comm stream (ordered after the
    /// compute stream's work so far, and the compute stream after it).
    pub fn all_reduce_sum_device<T: DistScalar>(
        &self,
        gpu: &Gpu,
        buf: &mut CudaSlice<T>,
    ) -> Result<()> {
        let cs = self.stream();
        join(gpu.stream(), &cs)?;
        self.comm
            .all_reduce_in_place(buf, &ReduceOp::Sum)
            .map_err(nccl_err("all-reduce"))?;
        join(&cs, gpu.stream())
    }

    /// Sums host values over all ranks (each rank passes its local partial sums, every rank
    /// gets the totals): the dot product of a distributed solver.
    pub fn all_reduce_sum<T: DistScalar>(&self, gpu: &Gpu, local: &[T]) -> Result<Vec<T>> {
        let mut buf = gpu.upload(local)?;
        self.all_reduce_sum_device(gpu, &mut buf)?;
        let mut out = vec![T::zero(); local.len()];
        gpu.download(&buf, &mut out)?;
        Ok(out)
    }

    /// Waits until every rank got here (a one-element all-reduce, then a synchronise).
    pub fn barrier(&self, gpu: &Gpu) -> Result<()> {
        self.all_reduce_sum(gpu, &[0f32]).map(|_| ())
    }
}

/// Makes `later` wait for everything enqueued on `earlier` so far.
fn join(earlier: &CudaStream, later: &CudaStream) -> Result<()> {
    let ev = earlier
        .record_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING))
        .map_err(|e| Error::cuda("recording a stream-ordering event", e))?;
    later
        .wait(&ev)
        .map_err(|e| Error::cuda("waiting on a stream-ordering event", e))
}

/// Facts about a rank's operator, for reports.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct OperatorInfo {
    pub rows: usize,
    pub owned_cols: usize,
    pub diag_nnz: usize,
    pub offd_nnz: usize,
    pub ghosts: usize,
    pub send: usize,
    /// Method notes of the diagonal and off-diagonal parts (auto's choice among them).
    pub diag_notes: Vec<(String, String)>,
    pub offd_notes: Vec<(String, String)>,
    pub prepare_s: f64,
    pub upload_s: f64,
}

/// One rank's share of a distributed matrix on its GPU.
pub struct DistOperator<T: DistScalar> {
    gpu: Arc<Gpu>,
    comm: Option<Communicator>,
    strategy: Strategy,
    chunk: usize,
    world: usize,
    diag: Box<dyn DeviceLayout<T>>,
    offd: Option<Box<dyn DeviceLayout<T>>>,
    /// Owned x (padded to the all-gather chunk), the ghost / all-gather buffer, local y.
    x: CudaSlice<T>,
    xg: CudaSlice<T>,
    y: CudaSlice<T>,
    send_idx: CudaSlice<Idx>,
    send_buf: CudaSlice<T>,
    sends: Vec<(usize, Range<usize>)>,
    recvs: Vec<(usize, Range<usize>)>,
    x_ready: CudaEvent,
    exchanged: CudaEvent,
    info: OperatorInfo,
}

impl<T: DistScalar> DistOperator<T> {
    /// Prepares both parts of `block` with `method` (a name or variant; `auto` chooses per
    /// part) and uploads them. `comm` is needed when the block exchanges anything or the world
    /// has more than one rank.
    pub fn new(
        gpu: Arc<Gpu>,
        comm: Option<Communicator>,
        world: usize,
        block: &RankBlock<T>,
        method: &str,
    ) -> Result<Self> {
        if world > 1 && comm.is_none() {
            return Err(Error::InvalidArgument(format!(
                "rank {} of {world}: a distributed operator needs a communicator",
                block.rank
            )));
        }
        let (m, params) = find_variant(method)?;
        let t0 = Instant::now();
        let diag_l = T::prepare_with(m, &block.diag, &params)?;
        let offd_l = (block.offd.nnz() > 0)
            .then(|| T::prepare_with(m, &block.offd, &params))
            .transpose()?;
        let prepare_s = t0.elapsed().as_secs_f64();
        let t1 = Instant::now();
        gpu.ensure_fits(
            &format!("rank {}'s block", block.rank),
            diag_l.footprint_bytes()
                + offd_l.as_ref().map_or(0, |l| l.footprint_bytes())
                + T::BYTES * (block.rows.len() + block.chunk + block.offd.ncols()),
        )?;
        let diag = diag_l.upload(&gpu)?;
        let offd = offd_l.as_ref().map(|l| l.upload(&gpu)).transpose()?;
        let mut flat: Vec<Idx> = Vec::new();
        let mut sends = Vec::new();
        for s in &block.send {
            sends.push((s.peer, flat.len()..flat.len() + s.idx.len()));
            flat.extend_from_slice(&s.idx);
        }
        let recvs = block
            .recv
            .iter()
            .map(|s| (s.peer, s.range.clone()))
            .collect();
        // the ghost buffer (halo) or the padded all-gather of every rank's chunk
        let xg_len = block.offd.ncols();
        let ev = || {
            gpu.context()
                .new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING))
                .map_err(|e| Error::cuda("dist: creating an event", e))
        };
        let op = DistOperator {
            strategy: block.strategy,
            chunk: block.chunk,
            world,
            diag,
            offd,
            x: gpu.alloc_zeros(block.chunk.max(block.cols.len()))?,
            xg: gpu.alloc_zeros(xg_len)?,
            y: gpu.alloc_zeros(block.rows.len())?,
            send_idx: gpu.upload(&flat)?,
            send_buf: gpu.alloc_zeros(flat.len())?,
            sends,
            recvs,
            x_ready: ev()?,
            exchanged: ev()?,
            info: OperatorInfo {
                rows: block.rows.len(),
                owned_cols: block.cols.len(),
                diag_nnz: block.diag.nnz(),
                offd_nnz: block.offd.nnz(),
                ghosts: block.ghosts.len(),
                send: flat.len(),
                diag_notes: diag_l.notes(),
                offd_notes: offd_l.as_ref().map(|l| l.notes()).unwrap_or_default(),
                prepare_s,
                upload_s: 0.0,
            },
            comm,
            gpu,
        };
        op.gpu.synchronize()?;
        let mut op = op;
        op.info.upload_s = t1.elapsed().as_secs_f64();
        Ok(op)
    }

    pub fn info(&self) -> &OperatorInfo {
        &self.info
    }
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }
    pub fn communicator(&self) -> Option<&Communicator> {
        self.comm.as_ref()
    }
    /// The owned x on the device (at least `owned_cols` long; entries past it are padding).
    pub fn x(&self) -> &CudaSlice<T> {
        &self.x
    }
    /// The owned x on the device, to write (the next [`DistOperator::apply`] exchanges it).
    pub fn x_mut(&mut self) -> &mut CudaSlice<T> {
        &mut self.x
    }
    /// The local y on the device.
    pub fn y(&self) -> &CudaSlice<T> {
        &self.y
    }
    pub fn y_mut(&mut self) -> &mut CudaSlice<T> {
        &mut self.y
    }

    /// Copies this rank's x entries (length `owned_cols`) to the device.
    pub fn set_x(&mut self, x: &[T]) -> Result<()> {
        self.copy_in(x, self.info.owned_cols, "x")
    }
    /// Copies this rank's y rows to the device (the βy input).
    pub fn set_y(&mut self, y: &[T]) -> Result<()> {
        self.copy_in(y, self.info.rows, "y")
    }
    /// Copies the x the off-diagonal part reads (the ghost buffer, or the padded all-gather
    /// buffer) from the host, for callers that exchange x themselves and for tests.
    pub fn set_ghosts(&mut self, xg: &[T]) -> Result<()> {
        if xg.len() > self.xg.len() {
            return Err(Error::DimensionMismatch {
                what: "dist: ghost buffer".into(),
                expected: self.xg.len(),
                got: xg.len(),
            });
        }
        if xg.is_empty() {
            return Ok(());
        }
        self.gpu
            .stream()
            .memcpy_htod(xg, &mut self.xg.slice_mut(0..xg.len()))
            .map_err(|e| Error::cuda("dist: copying the ghost buffer", e))
    }

    /// Reads this rank's y rows back (waits for the device).
    pub fn get_y(&self, y: &mut [T]) -> Result<()> {
        if y.len() != self.info.rows {
            return Err(Error::DimensionMismatch {
                what: "dist: local y".into(),
                expected: self.info.rows,
                got: y.len(),
            });
        }
        self.gpu.download(&self.y, y)
    }

    fn copy_in(&mut self, v: &[T], want: usize, what: &str) -> Result<()> {
        if v.len() != want {
            return Err(Error::DimensionMismatch {
                what: format!("dist: local {what}"),
                expected: want,
                got: v.len(),
            });
        }
        if v.is_empty() {
            return Ok(());
        }
        let dst = if what == "x" {
            &mut self.x
        } else {
            &mut self.y
        };
        self.gpu
            .stream()
            .memcpy_htod(v, &mut dst.slice_mut(0..v.len()))
            .map_err(|e| Error::cuda(format!("dist: copying {what}"), e))
    }

    /// y = αAx + βy for this rank's rows, asynchronously (the exchange overlaps the diagonal
    /// part). Every rank must call it together.
    pub fn apply(&mut self, alpha: T, beta: T) -> Result<()> {
        let exchanged = self.exchange()?;
        self.diag
            .run(&self.gpu, alpha, &self.x, beta, &mut self.y)?;
        if exchanged {
            self.gpu
                .stream()
                .wait(&self.exchanged)
                .map_err(|e| Error::cuda("dist: waiting for the exchange", e))?;
        }
        if let Some(offd) = &self.offd {
            offd.run(&self.gpu, alpha, &self.xg, T::one(), &mut self.y)?;
        }
        Ok(())
    }

    /// The exchange alone, ordered after the compute stream's work and recorded in the
    /// `exchanged` event (for timing communication apart). Returns whether anything ran.
    pub fn exchange_only(&mut self) -> Result<()> {
        if self.exchange()? {
            self.gpu
                .stream()
                .wait(&self.exchanged)
                .map_err(|e| Error::cuda("dist: waiting for the exchange", e))?;
        }
        Ok(())
    }

    /// Both local parts without the exchange (for timing computation apart).
    pub fn compute_only(&mut self, alpha: T, beta: T) -> Result<()> {
        self.diag
            .run(&self.gpu, alpha, &self.x, beta, &mut self.y)?;
        if let Some(offd) = &self.offd {
            offd.run(&self.gpu, alpha, &self.xg, T::one(), &mut self.y)?;
        }
        Ok(())
    }

    /// Enqueues the exchange on the comm stream after the compute stream's work so far.
    fn exchange(&mut self) -> Result<bool> {
        let Some(comm) = &self.comm else {
            return Ok(false);
        };
        if self.world < 2 {
            return Ok(false);
        }
        let cs = comm.stream();
        let ev = |r: std::result::Result<(), cudarc::driver::DriverError>| {
            r.map_err(|e| Error::cuda("dist: stream ordering", e))
        };
        ev(self.x_ready.record(self.gpu.stream()))?;
        ev(cs.wait(&self.x_ready))?;
        match self.strategy {
            Strategy::AllGather => {
                if self.chunk > 0 {
                    let src = self.x.slice(0..self.chunk);
                    let mut dst = self.xg.slice_mut(0..self.world * self.chunk);
                    comm.comm
                        .all_gather(&src, &mut dst)
                        .map_err(nccl_err("all-gather of x"))?;
                }
            }
            Strategy::Halo => {
                let n = self.send_buf.len().min(self.send_idx.len());
                if !self.sends.is_empty() {
                    // SAFETY: send_idx holds owned-column offsets (< cols.len() <= x.len(),
                    // built by the partition); the comm stream waited on x_ready above, and the
                    // compute stream waits on `exchanged` before it touches x again.
                    unsafe {
                        self.gpu.gather_on(
                            &cs,
                            &mut self.send_buf,
                            &self.x,
                            &self.send_idx,
                            self.sends.last().map_or(0, |s| s.1.end).min(n),
                        )
                    }?;
                }
                cudarc::nccl::group_start().map_err(nccl_err("group start"))?;
                for (peer, r) in &self.sends {
                    comm.comm
                        .send(&self.send_buf.slice(r.clone()), *peer as i32)
                        .map_err(nccl_err("send"))?;
                }
                for (peer, r) in &self.recvs {
                    comm.comm
                        .recv(&mut self.xg.slice_mut(r.clone()), *peer as i32)
                        .map_err(nccl_err("recv"))?;
                }
                cudarc::nccl::group_end().map_err(nccl_err("group end"))?;
            }
        }
        ev(self.exchanged.record(&cs))?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_found_library_is_linked_for_children() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("libnccl.so.2");
        std::fs::write(&lib, b"not really a library").unwrap();
        assert_eq!(lib_in(dir.path()), Some(lib.clone()));
        let linked = link_dir(&lib).unwrap();
        assert_eq!(
            std::fs::read_link(linked.join("libnccl.so")).unwrap(),
            lib.canonicalize().unwrap()
        );
        // again: the link is kept
        assert_eq!(link_dir(&lib).unwrap(), linked);
        let setup = NcclSetup::Linked {
            lib,
            dir: linked.clone(),
        };
        assert!(setup
            .child_library_path()
            .unwrap()
            .starts_with(&linked.display().to_string()));
        assert_eq!(NcclSetup::Loadable.child_library_path(), None);
        assert!(!search_dirs().is_empty());
    }
}
