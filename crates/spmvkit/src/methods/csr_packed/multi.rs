//! `csr-packed` with k vectors (issue #24, "the compressed layout's kernel with k > 1";
//! docs/spmm.md, "csr-packed"): Y = αAX + βY on the packed streams, both block orders, every
//! value mode, f32 and f64.
//!
//! The kernel (`kernel.cu`, `csr_packed_mm_*`) keeps the SpMV kernel's layout and its lane per
//! row. A work item is a (slice, pass): pass p takes C consecutive vectors ([`pass_cols`],
//! `spmm_cols`), and the lane decodes its row once for them, gathering each nonzero's C values
//! of X (row-major: one contiguous run, read with 8- or 16-byte loads, [`x_load`]) and keeping
//! C sums in registers. The passes of a slice are consecutive items, so DRAM sends the slice's
//! codes once and the later passes find them in L1/L2: the matrix bytes per vector fall by C
//! against k SpMV calls, and by k when C ≥ k. Each (row, vector) is summed and stored exactly as
//! the SpMV kernel does for that vector, so the result is, column by column, csr-packed's SpMV
//! of that column, and the CPU mirror ([`MultiLayout::run_cpu_multi`]) is the SpMV mirror
//! (`cpu.rs`) run on each column (`spmm::cpu`'s column copies).

use std::sync::Arc;

use rayon::prelude::*;

use super::{cpu, gpu, PackedLayout};
use crate::error::Result;
use crate::gpu::Gpu;
use crate::matrix::{DenseOrder, MultiShape};
use crate::methods::spmm::cpu::{column, set_column};
use crate::methods::spmm::{DeviceMultiLayout, MultiKernel, MultiLayout};
use crate::scalar::Scalar;

/// The vectors per pass the kernel has entries for.
pub(crate) const PASS_COLS: [usize; 4] = [1, 2, 4, 8];

/// The vectors per pass for k vectors of `elem_bytes`-byte values: `spmm_cols`, or by default
/// 32 bytes of an X row per nonzero (4 in f64, 8 in f32: one sector per gather, C sums in
/// registers), at most k rounded up to a power of two (k = 3 takes one pass of 4, the last
/// vector masked).
pub(crate) fn pass_cols(k: usize, elem_bytes: usize, spmm_cols: Option<u32>) -> usize {
    let want = spmm_cols.map_or(32 / elem_bytes.max(1), |c| c as usize);
    want.clamp(1, 8)
        .next_power_of_two()
        .min(k.max(1).next_power_of_two())
}

/// The values per X load of a pass of `c` vectors: row-major, the widest of 4 and 2 values that
/// fits 16 bytes and `c`, divides k (so every pass starts on a multiple) and X's address
/// alignment `align` (bytes); 1 otherwise, and always column-major (a vector's entries are
/// `ncols` apart).
pub(crate) fn x_load(shape: MultiShape, c: usize, elem_bytes: usize, align: usize) -> usize {
    if shape.order != DenseOrder::Row {
        return 1;
    }
    [4, 2]
        .into_iter()
        .find(|&w| {
            w * elem_bytes <= 16 && w <= c && shape.k % w == 0 && align % (w * elem_bytes) == 0
        })
        .unwrap_or(1)
}

impl<T: Scalar> MultiLayout<T> for PackedLayout<T> {
    fn kernel(&self) -> MultiKernel {
        MultiKernel::Packed
    }

    fn matrix_bytes(&self) -> usize {
        crate::methods::Layout::footprint_bytes(self)
    }

    fn run_cpu_multi(&self, alpha: T, x: &[T], beta: T, y: &mut [T], shape: MultiShape) {
        let (m, n) = (self.nrows, self.ncols);
        let cols: Vec<Vec<T>> = (0..shape.k)
            .into_par_iter()
            .map(|c| {
                let mut yc = column(y, m, shape, c);
                cpu::run(self, alpha, &column(x, n, shape, c), beta, &mut yc);
                yc
            })
            .collect();
        for (c, yc) in cols.iter().enumerate() {
            set_column(y, m, shape, c, yc);
        }
    }

    fn upload_multi(&self, gpu: &Arc<Gpu>) -> Result<Box<dyn DeviceMultiLayout<T>>> {
        Ok(Box::new(gpu::PackedMultiDevice::upload(gpu, self)?))
    }
}

#[cfg(test)]
#[path = "multi_tests.rs"]
mod tests;
