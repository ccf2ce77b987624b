//! The device side of SpMM (issue #24): the argument structs of `kernel.cu`'s entries (one per
//! kernel, CUB's parameter-struct rule), the multi-vector kernels' device state
//! ([`DeviceMulti`]: the row-split kernels on their CSR copy, or cuSPARSE SpMM) with their
//! launches, and the strided column copy of the single-vector fallback.
//!
//! Grids: row-major, ⌈nrows·lanes / 256⌉ CTAs of 256 threads (a group of `lanes` per row,
//! lanes = k rounded up to a power of two, at most 32), grid-striding past 2^20 CTAs;
//! column-major, a warp per row as `csr-vector` (256 threads, the kernel strides).

use std::sync::Arc;

use cudarc::driver::CudaSlice;

use super::{MultiKernel, MultiShape, MultiSource, KERNEL};
use crate::error::{Error, Result};
use crate::gpu::cusparse::CusparseSpmm;
use crate::gpu::{kernel_int, DevMut, DevRef, Gpu, Kernel, Shape};
use crate::matrix::DenseOrder;
use crate::methods::common::csr::{CsrArgs, DeviceCsr};
use crate::methods::common::gpu::Call;
use crate::scalar::Scalar;

/// Threads per CTA of the SpMM kernels.
const THREADS: u32 = 256;
/// The most CTAs of one launch (the kernels grid-stride past it).
const MAX_CTAS: usize = 1 << 20;

crate::kernel_args! {
    /// `spmm_rows_rm` / `spmm_rows_cm`: the CSR matrix with the blocks as its operands, the
    /// matrix's columns (X's leading dimension, column-major), k, and the lanes per row
    /// (row-major).
    pub(crate) struct SpmmArgs<'a, T> {
        csr: CsrArgs<'a, T>,
        ncols: i32,
        k: i32,
        lanes: i32,
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

/// Lanes per row of the row-major kernel for k vectors: k rounded up to a power of two, at
/// most a warp.
pub(crate) fn lanes_for(k: usize) -> u32 {
    k.clamp(1, 32).next_power_of_two() as u32
}

/// A multi-vector kernel's state on the device.
pub(super) enum DeviceMulti<T: Scalar> {
    RowSplit {
        a: DeviceCsr<T>,
        rm: Kernel<SpmmArgs<'static, T>>,
        cm: Kernel<SpmmArgs<'static, T>>,
    },
    Cusparse(CusparseSpmm<T>),
}

impl<T: Scalar> DeviceMulti<T> {
    /// Uploads the source's matrix for its kernel.
    pub(super) fn upload(gpu: &Arc<Gpu>, src: &MultiSource<'_, T>) -> Result<Self> {
        Ok(match src.kernel {
            MultiKernel::RowSplit => DeviceMulti::RowSplit {
                a: DeviceCsr::upload(gpu, src.a)?,
                rm: gpu.kernel::<T, _>(&KERNEL, "spmm_rows_rm")?,
                cm: gpu.kernel::<T, _>(&KERNEL, "spmm_rows_cm")?,
            },
            MultiKernel::Cusparse => DeviceMulti::Cusparse(CusparseSpmm::new(gpu, src.a)?),
        })
    }

    /// Makes what `shape` needs ahead of its calls (cuSPARSE: the algorithm trial), with notes
    /// for reports.
    pub(super) fn prepare(&self, shape: MultiShape) -> Result<Vec<(String, String)>> {
        match self {
            DeviceMulti::RowSplit { .. } => Ok(Vec::new()),
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
        }
    }

    /// Device bytes held.
    pub(super) fn footprint_bytes(&self) -> usize {
        match self {
            DeviceMulti::RowSplit { a, .. } => a.num_bytes(),
            DeviceMulti::Cusparse(c) => c.footprint_bytes(),
        }
    }

    /// Enqueues Y = αAX + βY for a prepared `shape`, after checking X (at least ncols·k) and Y
    /// (at least nrows·k).
    pub(super) fn run(
        &self,
        gpu: &Gpu,
        shape: MultiShape,
        alpha: T,
        x: &CudaSlice<T>,
        beta: T,
        y: &mut CudaSlice<T>,
    ) -> Result<()> {
        match self {
            DeviceMulti::Cusparse(c) => c.run(shape, alpha, x, beta, y),
            DeviceMulti::RowSplit { a, rm, cm } => {
                let (nrows, ncols) = a.dims();
                shape.check("SpMM", (nrows, ncols), x.len(), y.len(), false)?;
                if nrows == 0 {
                    return Ok(());
                }
                let lanes = lanes_for(shape.k);
                let mut c = Call {
                    nrows,
                    ncols,
                    alpha,
                    x,
                    beta,
                    y,
                };
                let args = SpmmArgs {
                    csr: a.args("SpMM nrows", &mut c)?,
                    ncols: kernel_int("SpMM ncols", ncols)?,
                    k: kernel_int("SpMM k", shape.k)?,
                    lanes: lanes as i32,
                };
                let (k, shape) = match shape.order {
                    DenseOrder::Row => {
                        let threads = nrows.checked_mul(lanes as usize).ok_or(Error::TooLarge {
                            what: "SpMM threads (rows × lanes)",
                            value: u64::MAX,
                        })?;
                        (rm, Shape::grid_stride(threads, THREADS, MAX_CTAS))
                    }
                    DenseOrder::Col => {
                        let ctas = nrows.div_ceil((THREADS / 32) as usize).min(MAX_CTAS);
                        (cm, Shape::ctas(ctas, THREADS))
                    }
                };
                // SAFETY: row_ptr has nrows + 1 entries, col_idx and vals nnz with column
                // indices below ncols (a validated Csr); X holds ncols·k and Y nrows·k entries
                // (checked above), which is all the kernels index.
                unsafe { gpu.launch(k, shape, &args) }
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
