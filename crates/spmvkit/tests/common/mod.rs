//! Shared by the GPU integration tests: the GPU gate.

use std::sync::{Arc, Mutex, MutexGuard};

use spmvkit::gpu::Gpu;

static LOCK: Mutex<()> = Mutex::new(());

/// The GPU and a lock that serialises the GPU tests of one test binary (graph captures and
/// free-memory checks must not interleave), or `None` (the test is skipped, with a line on
/// stderr) when there is no GPU. With `SPMVKIT_REQUIRE_GPU=1` a missing GPU is a failure.
pub fn gpu_or_skip(test: &str) -> Option<(Arc<Gpu>, MutexGuard<'static, ()>)> {
    let guard = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    match Gpu::get() {
        Ok(g) => Some((g, guard)),
        Err(e) => {
            if std::env::var("SPMVKIT_REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("{test}: SPMVKIT_REQUIRE_GPU=1 but {e}");
            }
            eprintln!("{test}: skipped: {e}");
            None
        }
    }
}
