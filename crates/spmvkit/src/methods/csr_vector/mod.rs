//! `csr-vector`: CSR SpMV with one warp per row, the "CSR (vector)" kernel of Bell & Garland
//! (SC'09): the 32 lanes stride through the row, each keeping a partial sum, and a shuffle
//! butterfly adds them. As in LightSpMV, the stride starts at the row start aligned down to a
//! multiple of 32 entries, so each warp-wide load touches the fewest sectors. One launch per call; deterministic, since every row
//! is summed by fixed lanes in a fixed order.
//!
//! The layout is the CSR matrix itself. The CPU mirror (`cpu.rs`) simulates the 32 lanes and the
//! butterfly, with the kernel's fused multiply-adds, so it reproduces the kernel's bits.
//!
//! It takes 64-bit row offsets (issue #25, docs/offsets.md): the layout is generic over the
//! offsets' type and the kernel is compiled with `off_t` of the layout's width, every position
//! in the row 64-bit then.

mod cpu;
mod gpu;

pub(crate) use gpu::from_device;

use crate::matrix::{Csr, CsrOfWidth};
use crate::methods::common::checks::THREADS;
use crate::methods::common::csr::CsrArgs;
use crate::methods::common::room::{forward, method, room_kernel};
use crate::methods::params::{one_of, params, AutoOr};
use crate::methods::Layout;
use crate::methods::spmm::{MultiKernel, MultiSource, SpmmTune};
use crate::scalar::{Idx, Offset, Scalar, ValueStorage};

room_kernel!("csr-vector", [CsrArgs::entry("csr_vector")]);

const NAME: &str = "csr-vector";

params! {
    /// The parameters of `csr-vector`.
    struct CsrVectorParams {
        /// threads per block (a multiple of 32, at most 1024); one warp per row
        threads: u32 = 256, in THREADS;
        /// SpMM row-major tile (docs/spmm.md): vectors per lane and pass, auto (the rule of
        /// spmm::RmConfig: one 16-byte load's worth, more when k > 32 lanes' worth) or 1, 2, 4, 8
        spmm_cols: AutoOr<u32> = auto, in one_of([1, 2, 4, 8]);
        /// SpMM row-major tile: the widest load of an X row, bytes (4, 8, 16)
        spmm_vec: u32 = 16, in one_of([4, 8, 16]);
        /// SpMM row-major tile: nonzeros per unrolled step, auto (the lanes per row, 2 to 8 /
        /// loads per lane) or 2, 4, 8 (lowered to 8 / loads per lane)
        spmm_unroll: AutoOr<u32> = auto, in one_of([2, 4, 8]);
        /// SpMM row-major: rows longer than this many nonzeros are cut into pieces of it, auto
        /// (spmm::piece_nnz: 4 × the mean row, at least nnz / 2^16, a power of two in 64..=1024)
        /// or 16..=65536
        spmm_piece: AutoOr<u32> = auto, in 16..=65536;
    }
}

method! {
    /// The registry entry of `csr-vector`.
    pub struct CsrVector {
        name: NAME,
        summary: "GPU: CSR, one warp per row, shuffle reduction",
        source: "Bell & Garland, Implementing SpMV on throughput-oriented processors, SC'09 (CSR vector kernel)",
        deterministic: true,
        values: &ValueStorage::NARROW,
        offsets64: true,
    }
    fn prepare(csr, p: CsrVectorParams, values) {
        Ok(Box::new(CsrVectorLayout {
            a: csr.clone(),
            threads: p.threads,
            tune: SpmmTune {
                cols: p.spmm_cols.value(),
                vec_bytes: p.spmm_vec,
                unroll: p.spmm_unroll.value(),
                piece: p.spmm_piece.value(),
            },
            values,
        }))
    }
}

/// The layout of `csr-vector`: the CSR matrix (row offsets of type `O`), the block size, the
/// SpMM tile's tuning, and the values stored as `values` on the device (docs/precision.md).
pub struct CsrVectorLayout<T, O: Offset = Idx> {
    a: Csr<T, O>,
    threads: u32,
    tune: SpmmTune,
    values: ValueStorage,
}

impl<T: Scalar, O: Offset> Layout<T> for CsrVectorLayout<T, O> {
    forward! { values_mut of a, footprint_bytes of a, run_cpu of a, upload }

    fn notes(&self) -> Vec<(String, String)> {
        vec![("threads per block".into(), self.threads.to_string())]
    }
    /// The row-split SpMM kernels, with 32-bit offsets (64-bit ones run k single-vector calls).
    fn multi(&self) -> Option<MultiSource<'_, T>> {
        match self.a.by_width() {
            CsrOfWidth::W32(a) => Some(MultiSource {
                kernel: MultiKernel::RowSplit,
                a,
                tune: self.tune,
                deterministic: false,
            }),
            CsrOfWidth::W64(_) => None,
        }
    }
}

#[cfg(test)]
mod tests;
