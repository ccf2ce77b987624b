//! Calls on what the caller owns (issue #23, "zero-copy through DLPack or
//! `__cuda_array_interface__`, enqueued on the caller's current stream"): [`Borrowed`], device
//! memory of another library (CuPy, PyTorch) seen as a `CudaSlice` for one call and never freed by
//! spmvkit, and [`CallOrder`], which keeps the calls of one plan in order when they run on
//! different streams ([`Gpu::on_stream`] views).
//!
//! The rule for a plan's own buffers (its layout's scratch: partial sums, permuted vectors,
//! padded vectors, cuSPARSE's work buffer, the events of multi-stream methods) is cuSPARSE's for
//! its external buffer: one call of a plan at a time. [`CallOrder`] enforces it without blocking
//! the host: a call on a stream other than the previous call's waits (`cuStreamWaitEvent`) for an
//! event recorded after that call, and the plan's own stream waits the same way before the plan
//! rewrites or frees anything. A call captured into a CUDA graph neither waits nor leaves an event
//! (CUDA forbids waits across a capture's boundary, and the plan's event must not become a node
//! of the caller's graph): a graph runs when it is launched, so the caller orders its launches
//! against other calls of the plan, and keeps the plan alive as long as the graph may run.

use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex};

use cudarc::driver::sys::{CUdeviceptr, CUstreamCaptureStatus};
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DeviceRepr};

use super::Gpu;
use crate::error::{Error, Result};

/// Device memory owned by someone else (a CuPy array, a PyTorch tensor), seen as a
/// `CudaSlice<T>` of a known length so that a [`crate::Plan`] call can read or write it in place.
/// Dropping it never frees the memory (cudarc's `CudaSlice::leak`).
pub struct Borrowed<T> {
    slice: ManuallyDrop<CudaSlice<T>>,
}

impl<T: DeviceRepr> Borrowed<T> {
    /// `len` elements of `T` at device address `ptr`, used on `stream`. A null `ptr` with
    /// `len == 0` is accepted (an empty array has no storage); `ptr` must be aligned to `T`
    /// ([`Error::InvalidArgument`] otherwise).
    ///
    /// # Safety
    ///
    /// `ptr` addresses at least `len` elements of `T` in memory of `stream`'s context (the
    /// primary context of the device, which CuPy and PyTorch use), and that memory stays
    /// allocated, and is not used by the owner in a way that races, until the work enqueued with
    /// it on `stream` has completed (the owner's stream-ordered allocators guarantee it when
    /// `stream` is the owner's current stream).
    pub unsafe fn new(stream: &Arc<CudaStream>, ptr: CUdeviceptr, len: usize) -> Result<Self> {
        if ptr % std::mem::align_of::<T>() as CUdeviceptr != 0 {
            return Err(Error::InvalidArgument(format!(
                "device address {ptr:#x} is not aligned to its {}-byte elements",
                std::mem::size_of::<T>()
            )));
        }
        // SAFETY: the caller's contract; event tracking is off for spmvkit's context, so this
        // makes no event and only clones the stream's Arc.
        let slice = unsafe { stream.upgrade_device_ptr::<T>(ptr, len) };
        Ok(Borrowed {
            slice: ManuallyDrop::new(slice),
        })
    }
}

impl<T> Deref for Borrowed<T> {
    type Target = CudaSlice<T>;
    fn deref(&self) -> &CudaSlice<T> {
        &self.slice
    }
}

impl<T> DerefMut for Borrowed<T> {
    fn deref_mut(&mut self) -> &mut CudaSlice<T> {
        &mut self.slice
    }
}

impl<T> Drop for Borrowed<T> {
    fn drop(&mut self) {
        // SAFETY: taken once, here; the slice is not used again.
        let slice = unsafe { ManuallyDrop::take(&mut self.slice) };
        // The memory stays with its owner: only the stream's reference count goes.
        let _ = slice.leak();
    }
}

impl Gpu {
    /// [`Gpu::on_stream`] on a stream another library owns, given by its raw `CUstream` handle
    /// (CuPy's `cupy.cuda.get_current_stream().ptr`, PyTorch's
    /// `torch.cuda.current_stream().cuda_stream`; 0 is the legacy default stream, 2 the
    /// per-thread default stream). The view never destroys the stream.
    ///
    /// # Safety
    ///
    /// `raw` is 0, 2 or a stream of this GPU's context (the device's primary context), alive as
    /// long as work is enqueued through the view.
    pub unsafe fn on_raw_stream(&self, raw: usize) -> Result<Gpu> {
        // SAFETY: the caller's contract.
        let s = unsafe { self.context().wrap_borrowed_stream(raw as _) };
        self.on_stream(s)
    }
}

/// The last call of one plan: its stream and, when that was a caller's stream outside a CUDA-graph
/// capture, an event recorded after it (the stream itself may be gone by the next call).
struct Last {
    /// The raw stream handle, compared only, never used (it may be destroyed).
    stream: usize,
    /// The plan's event, made once and recorded again and again (never created or destroyed
    /// while a caller captures a graph).
    event: Option<CudaEvent>,
    /// Whether `event` marks the end of the last call (else there is nothing to wait for).
    armed: bool,
}

/// Keeps one plan's calls in order across streams (module doc): [`CallOrder::call`] around each
/// call, [`CallOrder::settle`] before the plan touches its buffers on its own stream.
pub(crate) struct CallOrder {
    last: Mutex<Last>,
}

fn capturing(s: &CudaStream) -> Result<bool> {
    s.capture_status()
        .map(|c| c != CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
        .map_err(|e| Error::cuda("querying a stream's capture status", e))
}

fn order_err(e: cudarc::driver::DriverError) -> Error {
    Error::cuda("ordering a plan's calls across streams", e)
}

impl CallOrder {
    /// Calls start on `own`'s stream.
    pub(crate) fn new(own: &Gpu) -> Self {
        CallOrder {
            last: Mutex::new(Last {
                stream: own.stream().cu_stream() as usize,
                event: None,
                armed: false,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Last> {
        self.last.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records the plan's event on `s` (making it on first use) and arms it.
    fn record(last: &mut Last, own: &Gpu, s: &CudaStream) -> Result<()> {
        let ev = |e| Error::cuda("recording the end of a plan's call", e);
        if last.event.is_none() {
            last.event = Some(own.context().new_event(None).map_err(ev)?);
        }
        if let Some(e) = &last.event {
            e.record(s).map_err(ev)?;
        }
        last.armed = true;
        Ok(())
    }

    /// Orders `gpu`'s stream after the last call when the stream changed (a wait on an event;
    /// none when the stream is being captured into a graph) and records it as the stream of the
    /// call about to run.
    fn join(last: &mut Last, gpu: &Gpu, own: &Gpu) -> Result<()> {
        let s = gpu.stream();
        if s.cu_stream() as usize == last.stream {
            return Ok(());
        }
        if !capturing(s)? {
            let own_raw = own.stream().cu_stream() as usize;
            if last.stream == own_raw && !capturing(own.stream())? {
                // The previous call was on the plan's own stream, which lives as long as the
                // plan: its end is recorded now.
                Self::record(last, own, own.stream())?;
            }
            if let (true, Some(e)) = (last.armed, &last.event) {
                s.wait(e).map_err(order_err)?;
            }
        }
        last.stream = s.cu_stream() as usize;
        last.armed = false;
        Ok(())
    }

    /// Runs `f`, one call enqueued on `gpu`'s stream, after the last call of the plan whose own
    /// GPU is `own`; after it, records an event on `gpu`'s stream when that is a caller's stream
    /// not being captured (an event of the plan's never goes into a caller's graph).
    pub(crate) fn call<R>(&self, gpu: &Gpu, own: &Gpu, f: impl FnOnce() -> Result<R>) -> Result<R> {
        let mut last = self.lock();
        Self::join(&mut last, gpu, own)?;
        // Recorded after a failed call too: whatever it enqueued before failing is waited for.
        let r = f();
        if !gpu.same_stream(own) && !capturing(gpu.stream())? {
            Self::record(&mut last, own, gpu.stream())?;
        }
        r
    }

    /// Orders the plan's own stream after its last call, before the plan rewrites or frees its
    /// buffers there (or runs a call there).
    pub(crate) fn settle(&self, own: &Gpu) -> Result<()> {
        Self::join(&mut self.lock(), own, own)
    }
}
