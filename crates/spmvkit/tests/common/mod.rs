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

/// The x and y0 of the precision and offsets tests: entries in [-1, 1] from fixed strides, so
/// every row sees several distinct products.
#[allow(dead_code)]
pub fn test_xy<T: spmvkit::Scalar>(ncols: usize, nrows: usize) -> (Vec<T>, Vec<T>) {
    (
        (0..ncols)
            .map(|j| T::from_f64(((j * 7919) % 201) as f64 / 100.0 - 1.0))
            .collect(),
        (0..nrows)
            .map(|i| T::from_f64(((i * 104_729) % 199) as f64 / 99.0 - 1.0))
            .collect(),
    )
}

/// `plan` on x (from [`test_xy`]) for (α, β) = (1.5, 0) over a y of NaN and (−0.75, 0.5) over
/// y0, each against the oracle of `stored` (the values the plan stores) and, when `twin` is
/// given, bit for bit against it (a CPU mirror, or the same method in another index width).
#[allow(dead_code)]
pub fn check_calls<T: spmvkit::PrepareFor>(
    what: &str,
    plan: &mut spmvkit::Plan<T>,
    mut twin: Option<&mut spmvkit::Plan<T>>,
    stored: &spmvkit::Csr<T>,
) {
    let (x, y0) = test_xy::<T>(stored.ncols(), stored.nrows());
    for (alpha, beta) in [(1.5, 0.0), (-0.75, 0.5)] {
        let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
        let start = if beta == T::zero() {
            vec![T::from_f64(f64::NAN); stored.nrows()]
        } else {
            y0.clone()
        };
        let mut y = start.clone();
        plan.apply(alpha, &x, beta, &mut y)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let want = spmvkit::cpu::oracle_spmv(stored, alpha, &x, beta, &start).unwrap();
        let c = spmvkit::cpu::check(&want, &y);
        assert!(
            c.ok,
            "{what} α={alpha} β={beta}: row {} off by {:.3e} against the stored values' oracle",
            c.worst_row, c.max_rel_err
        );
        if let Some(t) = twin.as_deref_mut() {
            let mut yt = start.clone();
            t.apply(alpha, &x, beta, &mut yt).unwrap();
            if let Some(i) = (0..y.len()).find(|&i| y[i].to_bits_u64() != yt[i].to_bits_u64()) {
                panic!(
                    "{what} α={alpha} β={beta}: row {i}: {} but its twin {}",
                    y[i], yt[i]
                );
            }
        }
    }
}
