//! `csr-light`: LightSpMV (Liu & Schmidt, "LightSpMV: faster CSR-based sparse matrix-vector
//! multiplication on CUDA-enabled GPUs", ASAP'15): CSR with one vector of V lanes per row
//! and rows handed out at run time by a global atomic row counter. Of the paper's two variants
//! (an atomicAdd per vector, or per warp) this is the warp-level one: lane 0 of a warp takes
//! rows for all its vectors with one atomicAdd and broadcasts the first id by shuffle.
//!
//! V comes from the mean row length by the paper's rule (≤ 2 → 2, ≤ 4 → 4, ≤ 64 → 8, else 32),
//! or is set with `vector=2|4|8|16|32`. `grab` sets how many warp iterations (of 32/V rows each)
//! one atomicAdd takes: `grab=1` is the paper's scheme; `auto` keeps the atomics on the single
//! counter to about 2^16 per call, because same-address atomics serialise in L2 and millions of
//! them could rival the SpMV itself on large matrices (an estimate, to be measured against
//! `grab=1`). The counter is reset inside every call by the kernel's last block (see kernel.cu),
//! so a call is one launch, also under CUDA-graph replay. Deterministic: every row is summed by
//! one vector in a fixed lane order, whichever warp takes it.

mod cpu;
mod gpu;

use crate::matrix::Csr;
use crate::methods::common::checks::THREADS;
use crate::methods::common::room::{forward, method, room_kernel};
use crate::methods::params::{one_of, params, AutoOr};
use crate::methods::Layout;
use crate::scalar::Scalar;

room_kernel!(
    "csr-light",
    gpu::CsrLightArgs: ["csr_light_v2", "csr_light_v4", "csr_light_v8", "csr_light_v16", "csr_light_v32"]
);

const NAME: &str = "csr-light";

params! {
    /// The parameters of `csr-light`.
    struct CsrLightParams {
        /// lanes per row: auto (LightSpMV rule on the mean row length: <=2 -> 2, <=4 -> 4, <=64 ->
        /// 8, else 32) or 2, 4, 8, 16, 32
        vector: AutoOr<u32> = auto, in one_of([2, 4, 8, 16, 32]);
        /// warp iterations (of 32/vector rows) taken per atomicAdd on the row counter: 1 is the
        /// paper's scheme; auto keeps about 2^16 atomics per call (at most 16); 1..=64
        grab: AutoOr<u32> = auto, in 1..=MAX_GRAB;
        /// threads per block (a multiple of 32, at most 1024)
        threads: u32 = 256, in THREADS;
    }
}

/// Largest accepted `grab`.
const MAX_GRAB: u32 = 64;

method! {
    /// The registry entry of `csr-light`.
    pub struct CsrLight {
        name: NAME,
        summary: "GPU: LightSpMV, a V-lane vector per row, rows from a dynamic atomic counter",
        source: "Liu & Schmidt, LightSpMV, ASAP'15",
        deterministic: true,
    }
    fn prepare(csr, p: CsrLightParams) {
        let vector = p
            .vector
            .value()
            .unwrap_or_else(|| auto_vector(csr.nnz(), csr.nrows()));
        let grab = p
            .grab
            .value()
            .unwrap_or_else(|| auto_grab(csr.nrows(), 32 / vector));
        let threads = p.threads;
        Ok(Box::new(CsrLightLayout {
            a: csr.clone(),
            vector,
            grab,
            threads,
        }))
    }
}

/// LightSpMV's vector size from the mean row length: ≤ 2 → 2, ≤ 4 → 4, ≤ 64 → 8, else 32.
pub fn auto_vector(nnz: usize, nrows: usize) -> u32 {
    let mean = if nrows == 0 {
        0.0
    } else {
        nnz as f64 / nrows as f64
    };
    if mean <= 2.0 {
        2
    } else if mean <= 4.0 {
        4
    } else if mean <= 64.0 {
        8
    } else {
        32
    }
}

/// Warp iterations per atomicAdd so that a call makes about 2^16 atomics (1 to 16).
fn auto_grab(nrows: usize, rows_per_iter: u32) -> u32 {
    let iters = nrows.div_ceil(rows_per_iter as usize);
    iters.div_ceil(1 << 16).clamp(1, 16) as u32
}

/// The layout of `csr-light`: the CSR matrix and the chosen vector size, grab and block size.
pub struct CsrLightLayout<T> {
    a: Csr<T>,
    /// Lanes per row (2, 4, 8, 16 or 32).
    vector: u32,
    /// Warp iterations per atomicAdd.
    grab: u32,
    threads: u32,
}

impl<T: Scalar> CsrLightLayout<T> {
    /// Rows one atomicAdd hands to a warp.
    fn chunk(&self) -> u32 {
        32 / self.vector * self.grab
    }
}

impl<T: Scalar> Layout<T> for CsrLightLayout<T> {
    forward! { values_mut of a, run_cpu, upload }

    fn footprint_bytes(&self) -> usize {
        // The CSR arrays plus the two-word counter.
        self.a.bytes() + 8
    }

    fn notes(&self) -> Vec<(String, String)> {
        vec![
            ("vector size".into(), self.vector.to_string()),
            ("warp iterations per atomic".into(), self.grab.to_string()),
            ("rows per atomic".into(), self.chunk().to_string()),
            ("threads per block".into(), self.threads.to_string()),
        ]
    }
}

#[cfg(test)]
mod tests;
