//! A [`Plan`](super::Plan)'s symmetric reordering (issue #22, "Locality: reordering inside the
//! Plan"). The plan orders its square matrix A ([`crate::reorder::order_timed`]), prepares its
//! method on B = PAPᵀ, and computes y = αAx + βy as y = Pᵀ(αB(Px) + β(Py)), since B(Px) = P(Ax):
//!
//! - on the CPU, [`Reordered::apply_cpu`] permutes the host vectors around the layout's run;
//! - on the GPU, [`PermutedDevice`] wraps the device layout, so every call (`apply`,
//!   `apply_device`, the timed calls of `Plan::time`) gathers x into the new numbering (and y,
//!   when β ≠ 0), runs B and gathers y back: the permutations are inside the timed call;
//! - values given in A's order reach B through the entry map of
//!   [`crate::reorder::permute_symmetric_map`].
//!
//! The ordering's time is preprocessing ([`super::PrepTimes::reorder`]); the plan's note
//! gives its stages ([`crate::reorder::order_timed`]) and PAPᵀ's time.

use std::sync::atomic::{AtomicUsize, Ordering as Atomic};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cudarc::driver::CudaSlice;

use super::common::gpu::{Call, Launches, Resident};
use super::DeviceLayout;
use crate::error::Result;
use crate::gpu::Gpu;
use crate::matrix::{x_sectors, Csr};
use crate::reorder::{
    order_timed, permute_symmetric_map, OrderTimes, Ordering, Permutation, Reorder,
};
use crate::scalar::{Idx, Scalar};

/// The ordering a plan applies, with what it takes to move values and vectors across it.
pub(crate) struct Reordered {
    pub(crate) ordering: Ordering,
    pub(crate) perm: Permutation,
    /// Entry k of B (CSR order) is entry `map[k]` of A.
    map: Vec<Idx>,
    /// Calls that permuted their vectors (on the CPU, or enqueued on the GPU; a CUDA graph's
    /// replays are not counted): what shows that a solver stays in B's numbering.
    permuting: Arc<AtomicUsize>,
}

/// What [`reorder`] decided: the ordering and B when one is applied, the time it took, and a
/// line for the plan's notes.
pub(crate) struct Decision<T: Scalar> {
    pub(crate) kept: Option<(Reordered, Csr<T>)>,
    pub(crate) time: Duration,
    pub(crate) note: Option<String>,
}

/// Orders `a` as `how` says (nothing for [`Reorder::None`]); `auto` orders by RCM and keeps the
/// order when [`Reorder::keeps`] says so. An error naming the shape when `a` is not square.
pub(crate) fn reorder<T: Scalar>(a: &Csr<T>, how: Reorder) -> Result<Decision<T>> {
    let t0 = Instant::now();
    let ordering = match how {
        Reorder::None => {
            return Ok(Decision {
                kept: None,
                time: Duration::ZERO,
                note: None,
            })
        }
        Reorder::By(o) => o,
        Reorder::Auto => Ordering::Rcm,
    };
    let (perm, stages) = order_timed(a, ordering)?;
    let t_papt = Instant::now();
    let (b, map) = permute_symmetric_map(a, &perm)?;
    let cost = cost(&stages, t_papt.elapsed());
    let mut note = format!("reorder={how}: {ordering} applied ({cost})");
    if how == Reorder::Auto {
        let (before, after) = (x_sectors(a).f64, x_sectors(&b).f64);
        let keep = Reorder::keeps(before, after, a.nrows());
        note = format!(
            "reorder=auto: {ordering} {} (x sectors {before} as given, {after} reordered, {} for the two permutations; {cost})",
            if keep { "kept" } else { "declined" },
            2 * a.nrows()
        );
        if !keep {
            return Ok(Decision {
                kept: None,
                time: t0.elapsed(),
                note: Some(note),
            });
        }
    }
    Ok(Decision {
        kept: Some((
            Reordered {
                ordering,
                perm,
                map,
                permuting: Arc::default(),
            },
            b,
        )),
        time: t0.elapsed(),
        note: Some(note),
    })
}

/// The ordering's stages and PAPᵀ's time, in seconds, for a plan's note.
fn cost(o: &OrderTimes, papt: Duration) -> String {
    let s = |d: Duration| d.as_secs_f64();
    format!(
        "ordering {:.3} s: graph {:.3}, start {:.3}, number {:.3}, bisect {:.3}; PAPᵀ {:.3} s",
        s(o.total()),
        s(o.graph),
        s(o.start),
        s(o.number),
        s(o.bisect),
        s(papt)
    )
}

impl Reordered {
    /// B's values from values in A's CSR order (the caller checked their count).
    pub(crate) fn values<T: Scalar>(&self, vals_of_a: &[T]) -> Vec<T> {
        use rayon::prelude::*;
        self.map
            .par_iter()
            .map(|&e| vals_of_a[e as usize])
            .collect()
    }

    /// y = αAx + βy on the CPU through `run_b`, B's y = αBx + βy.
    pub(crate) fn apply_cpu<T: Scalar>(
        &self,
        alpha: T,
        x: &[T],
        beta: T,
        y: &mut [T],
        run_b: impl FnOnce(T, &[T], T, &mut [T]) -> Result<()>,
    ) -> Result<()> {
        self.permuting.fetch_add(1, Atomic::Relaxed);
        let xp = self.perm.apply(x)?;
        let mut yp = if beta == T::zero() {
            vec![T::zero(); y.len()]
        } else {
            self.perm.apply(y)?
        };
        run_b(alpha, &xp, beta, &mut yp)?;
        let back = self.perm.apply_inverse(&yp)?;
        y.copy_from_slice(&back);
        Ok(())
    }

    /// The calls so far that permuted their vectors around B (the CPU's [`Reordered::apply_cpu`]
    /// and the device layout of [`Reordered::wrap`], counted when enqueued).
    pub(crate) fn permuting_calls(&self) -> usize {
        self.permuting.load(Atomic::Relaxed)
    }

    /// Wraps B's device layout so that it takes and returns vectors in A's numbering.
    pub(crate) fn wrap<T: Scalar>(
        &self,
        gpu: &Gpu,
        inner: Arc<dyn DeviceLayout<T>>,
    ) -> Result<Box<dyn DeviceLayout<T>>> {
        let (y_len, x_len) = inner.padded_dims();
        let n = self.perm.len();
        let bytes = inner.footprint_bytes() + 2 * 4 * n + T::BYTES * (x_len + y_len);
        let room = PermutedDevice {
            n,
            old_of_new: gpu.upload(self.perm.old_of_new())?,
            new_of_old: gpu.upload(self.perm.new_of_old())?,
            scratch: Mutex::new((gpu.alloc_zeros::<T>(x_len)?, gpu.alloc_zeros::<T>(y_len)?)),
            inner,
            permuting: self.permuting.clone(),
        };
        Ok(Resident::boxed((n, n), bytes, room))
    }
}

/// B = PAPᵀ's device layout, run on vectors in A's numbering: one call gathers x into B's
/// numbering (and y when β ≠ 0) in the plan's scratch vectors, runs B, and gathers y back
/// (resident as a [`Resident`] of n × n).
struct PermutedDevice<T: Scalar> {
    inner: Arc<dyn DeviceLayout<T>>,
    n: usize,
    old_of_new: CudaSlice<u32>,
    new_of_old: CudaSlice<u32>,
    /// x and y in B's numbering, as long as B's layout wants them.
    scratch: Mutex<(CudaSlice<T>, CudaSlice<T>)>,
    /// The plan's count of permuting calls ([`Reordered::permuting_calls`]).
    permuting: Arc<AtomicUsize>,
}

impl<T: Scalar> Launches<T> for PermutedDevice<T> {
    unsafe fn run(&self, gpu: &Gpu, c: Call<'_, T>) -> Result<()> {
        let mut guard = self.scratch.lock().unwrap_or_else(|p| p.into_inner());
        let (xp, yp) = &mut *guard;
        let s = gpu.stream();
        self.permuting.fetch_add(1, Atomic::Relaxed);
        // SAFETY: both index arrays are permutations of 0..n (uploaded from a checked
        // Permutation), so every index is < n <= x.len(), y.len(), xp.len() and yp.len() (the
        // caller's contract and the scratch's padded lengths); all on Gpu::stream.
        unsafe {
            gpu.gather_on(s, xp, c.x, &self.old_of_new, self.n)?;
            if c.beta != T::zero() {
                gpu.gather_on(s, yp, c.y, &self.old_of_new, self.n)?;
            }
        }
        self.inner.run(gpu, c.alpha, xp, c.beta, yp)?;
        // SAFETY: as above.
        unsafe { gpu.gather_on(s, c.y, yp, &self.new_of_old, self.n) }
    }
}
