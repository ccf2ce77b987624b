//! `csr-vector`: CSR SpMV with one warp per row, the "CSR (vector)" kernel of Bell & Garland
//! (SC'09): the 32 lanes stride through the row, each keeping a partial sum, and a shuffle
//! butterfly adds them. As in LightSpMV, the stride starts at the row start aligned down to a
//! multiple of 32 entries, so each warp-wide load touches the fewest sectors. One launch per call; deterministic, since every row
//! is summed by fixed lanes in a fixed order.
//!
//! The layout is the CSR matrix itself. The CPU mirror (`cpu.rs`) simulates the 32 lanes and the
//! butterfly, with the kernel's fused multiply-adds, so it reproduces the kernel's bits.

mod cpu;
mod gpu;

use crate::matrix::Csr;
use crate::methods::common::checks::THREADS;
use crate::methods::common::csr::CsrArgs;
use crate::methods::common::room::{forward, method, room_kernel};
use crate::methods::params::params;
use crate::methods::Layout;
use crate::methods::spmm::{MultiKernel, MultiSource};
use crate::scalar::{Scalar, ValueStorage};

room_kernel!("csr-vector", [CsrArgs::entry("csr_vector")]);

const NAME: &str = "csr-vector";

params! {
    /// The parameters of `csr-vector`.
    struct CsrVectorParams {
        /// threads per block (a multiple of 32, at most 1024); one warp per row
        threads: u32 = 256, in THREADS;
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
    }
    fn prepare(csr, p: CsrVectorParams, values) {
        Ok(Box::new(CsrVectorLayout {
            a: csr.clone(),
            threads: p.threads,
            values,
        }))
    }
}

/// The layout of `csr-vector`: the CSR matrix and the block size, the values stored as
/// `values` on the device (docs/precision.md).
pub struct CsrVectorLayout<T> {
    a: Csr<T>,
    threads: u32,
    values: ValueStorage,
}

impl<T: Scalar> Layout<T> for CsrVectorLayout<T> {
    forward! { values_mut of a, footprint_bytes of a, run_cpu of a, upload }

    fn notes(&self) -> Vec<(String, String)> {
        vec![("threads per block".into(), self.threads.to_string())]
    }
    fn multi(&self) -> Option<MultiSource<'_, T>> {
        Some(MultiSource {
            kernel: MultiKernel::RowSplit,
            a: &self.a,
        })
    }
}

#[cfg(test)]
mod tests;
