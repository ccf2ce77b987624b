//! [`DistOperator`] (issue #12, part 4): one rank's share of a distributed y = αAx + βy on its
//! GPU, the diagonal part overlapping the exchange of x on the comm stream, the off-diagonal part
//! after it (the order is in the parent module's doc).

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaSlice};

use super::comm::{nccl_err, Communicator};
use super::DistScalar;
use crate::dist::partition::{RankBlock, Strategy};
use crate::error::{Error, Result};
use crate::gpu::{Gather, Gpu};
use crate::methods::{find_variant, DeviceLayout};
use crate::scalar::Idx;

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
    /// The pack kernel, loaded once.
    gather: Gather<T>,
    /// Host seconds spent enqueuing exchanges, and how many: the exchange is stream-ordered, so
    /// this is the host's cost per call, not the transfer's.
    enqueue_s: f64,
    enqueued: usize,
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
            gather: gpu.gather_kernel()?,
            enqueue_s: 0.0,
            enqueued: 0,
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

    /// Mean host µs per enqueued exchange since the operator was built (0 before any): what
    /// enqueuing the pack, the NCCL calls and the stream joins costs the host. The exchange is
    /// stream-ordered, so a value near the transfer time would mean something in it blocks.
    pub fn exchange_enqueue_us(&self) -> f64 {
        if self.enqueued == 0 {
            0.0
        } else {
            self.enqueue_s * 1e6 / self.enqueued as f64
        }
    }

    /// Enqueues the exchange on the comm stream after the compute stream's work so far (timing
    /// the host's part, [`DistOperator::exchange_enqueue_us`]).
    fn exchange(&mut self) -> Result<bool> {
        let t0 = Instant::now();
        let r = self.enqueue_exchange();
        if let Ok(true) = r {
            self.enqueue_s += t0.elapsed().as_secs_f64();
            self.enqueued += 1;
        }
        r
    }

    /// The exchange itself: nothing waits for the device here (no synchronisation, no copy to
    /// the host); the pack kernel and the NCCL calls go on the comm stream, ordered by events.
    fn enqueue_exchange(&mut self) -> Result<bool> {
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
                        self.gather.run(
                            &self.gpu,
                            &cs,
                            &mut self.send_buf,
                            &self.x,
                            &self.send_idx,
                            self.sends.last().map_or(0, |s| s.1.end).min(n),
                        )
                    }?;
                }
                if self.sends.is_empty() && self.recvs.is_empty() {
                    ev(self.exchanged.record(&cs))?;
                    return Ok(true);
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
