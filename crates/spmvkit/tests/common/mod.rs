//! Shared by the GPU integration tests: the GPU gate of `spmvkit::testing` plus the lock that
//! serialises the GPU tests of one test binary.

use std::sync::{Arc, MutexGuard};

use spmvkit::gpu::Gpu;
use spmvkit::testing;

/// The GPU and the GPU-test lock (graph captures and free-memory checks must not interleave),
/// or `None` after a recorded skip (`skipped: <test>: <reason>`) when there is no GPU. With
/// `SPMVKIT_REQUIRE_GPU=1` a missing GPU is a failure.
pub fn gpu_or_skip(test: &str) -> Option<(Arc<Gpu>, MutexGuard<'static, ()>)> {
    let guard = testing::gpu_lock();
    testing::gpu_or_skip(test).map(|g| (g, guard))
}
