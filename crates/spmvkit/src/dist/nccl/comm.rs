//! One rank's NCCL communicator (issue #12): the rendezvous that hands rank 0's unique id to
//! every rank, `ncclCommInitRank` on a comm stream of the rank's GPU, the all-reduce of the
//! distributed solvers' dot products, and the stream ordering between the compute and comm
//! streams.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaSlice, CudaStream};
use cudarc::nccl::{Comm, Id, ReduceOp};

use super::discovery::loadable;
use super::DistScalar;
use crate::dist::bootstrap::{exchange_id, Hello, InputIdentity, RankEnv, ID_BYTES};
use crate::dist::local::SetupExchange;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::scalar::Idx;

pub(super) fn nccl_err(what: &str) -> impl Fn(cudarc::nccl::result::NcclError) -> Error + '_ {
    move |e| Error::cuda(format!("NCCL {what}"), format!("{:?}", e.0))
}

/// One rank's NCCL communicator, working on its own comm stream.
pub struct Communicator {
    pub(super) comm: Comm,
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

/// [`SetupExchange`] through a communicator (issue #26): the ghost requests of ranks that read
/// only their rows, as PETSc's `VecScatterCreate` does: an all-gather of every rank's per-peer
/// counts, then one grouped `ncclSend`/`ncclRecv` per peer with something to say, on the
/// communicator's stream; the host waits for the answers (set-up only, once per run).
pub struct CommSetup<'a> {
    pub comm: &'a Communicator,
    pub gpu: &'a Gpu,
}

impl CommSetup<'_> {
    /// The all-gather of `mine` (equal lengths on every rank), flat in rank order.
    fn gather_flat(&self, mine: &[u64]) -> Result<Vec<u64>> {
        let (gpu, p) = (self.gpu, self.comm.world);
        if mine.is_empty() {
            return Ok(Vec::new());
        }
        let src = gpu.upload(mine)?;
        let mut dst: CudaSlice<u64> = gpu.alloc_zeros(mine.len() * p)?;
        let cs = self.comm.stream();
        join(gpu.stream(), &cs)?;
        self.comm
            .comm
            .all_gather(&src, &mut dst)
            .map_err(nccl_err("set-up all-gather"))?;
        join(&cs, gpu.stream())?;
        let mut out = vec![0u64; mine.len() * p];
        gpu.download(&dst, &mut out)?;
        Ok(out)
    }
}

impl SetupExchange for CommSetup<'_> {
    fn rank(&self) -> usize {
        self.comm.rank
    }
    fn world(&self) -> usize {
        self.comm.world
    }
    fn all_gather(&mut self, mine: &[u64]) -> Result<Vec<Vec<u64>>> {
        let flat = self.gather_flat(mine)?;
        Ok(flat
            .chunks(mine.len().max(1))
            .map(<[u64]>::to_vec)
            .collect())
    }
    fn all_to_all(&mut self, to: Vec<Vec<Idx>>) -> Result<Vec<Vec<Idx>>> {
        let (gpu, p, r) = (self.gpu, self.comm.world, self.comm.rank);
        if to.len() != p {
            return Err(Error::DimensionMismatch {
                what: "set-up exchange: lists per rank".into(),
                expected: p,
                got: to.len(),
            });
        }
        let mine: Vec<u64> = (0..p)
            .map(|q| if q == r { 0 } else { to[q].len() as u64 })
            .collect();
        // counts[q * p + r]: what rank q sends to rank r
        let counts = self.gather_flat(&mine)?;
        let incoming: Vec<usize> = (0..p).map(|q| counts[q * p + r] as usize).collect();
        let mut flat: Vec<Idx> = Vec::new();
        let mut sends = Vec::new();
        for (q, list) in to.iter().enumerate() {
            if q != r && !list.is_empty() {
                sends.push((q, flat.len()..flat.len() + list.len()));
                flat.extend_from_slice(list);
            }
        }
        let total_in: usize = incoming.iter().sum();
        let send_buf = gpu.upload(&flat)?;
        let mut recv_buf: CudaSlice<Idx> = gpu.alloc_zeros(total_in)?;
        let cs = self.comm.stream();
        join(gpu.stream(), &cs)?;
        cudarc::nccl::group_start().map_err(nccl_err("group start"))?;
        for (q, range) in &sends {
            self.comm
                .comm
                .send(&send_buf.slice(range.clone()), *q as i32)
                .map_err(nccl_err("set-up send"))?;
        }
        let mut at = 0;
        for (q, &n) in incoming.iter().enumerate() {
            if q != r && n > 0 {
                self.comm
                    .comm
                    .recv(&mut recv_buf.slice_mut(at..at + n), q as i32)
                    .map_err(nccl_err("set-up recv"))?;
                at += n;
            }
        }
        cudarc::nccl::group_end().map_err(nccl_err("group end"))?;
        join(&cs, gpu.stream())?;
        let mut got = vec![0 as Idx; total_in];
        gpu.download(&recv_buf, &mut got)?;
        let mut from = Vec::with_capacity(p);
        let mut at = 0;
        for (q, &n) in incoming.iter().enumerate() {
            if q == r {
                from.push(Vec::new());
            } else {
                from.push(got[at..at + n].to_vec());
                at += n;
            }
        }
        Ok(from)
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
