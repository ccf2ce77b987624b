//! `csc`: the basic CSC SpMV kernel that FastLoad (Hu et al., "FastLoad: Speeding up data
//! loading of both sparse matrix and vector for SpMV on GPUs", TPDS 2024, §III-B, Fig. 3)
//! starts from: the matrix in CSC, one warp per column, each lane adding a_ij·α·x_j to y_i with a
//! float atomicAdd. Loads of the matrix are coalesced and x_j is one broadcast load per column;
//! the scattered atomics on y are the cost FastLoad attacks.
//!
//! Every call scales y by β (or zeroes it when β = 0, without reading it) in the runtime's y
//! prologue (`gpu::YPrologue`) before the atomics, so a call is two launches. Not deterministic: the order in which atomics
//! land varies between runs. The CPU mirror adds in column order.

mod cpu;
mod gpu;

use std::time::{Duration, Instant};

use crate::matrix::Csc;
use crate::methods::common::checks::THREADS;
use crate::methods::common::room::{forward, method, room_kernel};
use crate::methods::params::params;
use crate::methods::Layout;
use crate::scalar::Scalar;

room_kernel!("csc", [gpu::CscAtomicArgs::entry("csc_atomic")]);

const NAME: &str = "csc";

params! {
    /// The parameters of `csc`.
    struct CscParams {
        /// threads per block of the atomic kernel (a multiple of 32, at most 1024); one warp per
        /// column
        threads: u32 = 256, in THREADS;
    }
}

method! {
    /// The registry entry of `csc`.
    pub struct CscAtomic {
        name: NAME,
        summary: "GPU: CSC, one warp per column, atomicAdd into y (FastLoad's basic kernel)",
        source: "Hu et al., FastLoad, TPDS 2024, §III-B (basic CSC SpMV)",
        deterministic: false,
    }
    fn prepare(csr, p: CscParams) {
        let t0 = Instant::now();
        let a = csr.to_csc();
        Ok(Box::new(CscLayout {
            a,
            threads: p.threads,
            convert: t0.elapsed(),
        }))
    }
}

/// The layout of `csc`: the matrix in CSC and the block size.
pub struct CscLayout<T> {
    a: Csc<T>,
    threads: u32,
    /// Time of the CSR → CSC conversion.
    convert: Duration,
}

impl<T: Scalar> CscLayout<T> {
    fn bytes(&self) -> usize {
        4 * (self.a.ncols() + 1) + (4 + T::BYTES) * self.a.nnz()
    }
}

impl<T: Scalar> Layout<T> for CscLayout<T> {
    forward! { values_mut of a, run_cpu of a, upload }

    fn footprint_bytes(&self) -> usize {
        self.bytes()
    }

    fn prep_stages(&self) -> Vec<(&'static str, Duration)> {
        vec![("CSR to CSC", self.convert)]
    }

    fn notes(&self) -> Vec<(String, String)> {
        vec![("threads per block".into(), self.threads.to_string())]
    }
}

#[cfg(test)]
mod tests;
