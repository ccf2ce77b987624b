//! x windows (issue #22, "x windows"): a [`Plan`](super::Plan) option that cuts the matrix into
//! `k` column panels, A = A₁ + … + A_k, panel j holding the columns of one contiguous window of
//! x, and prepares its method on each panel. One call runs the panels one after the other,
//! y = αA₁x + βy, then y = αA_jx + y for j > 1, so the gathers of one pass come from a window of
//! x that the L2 can hold, at the cost of reading and writing y once more per panel. The trade
//! is measured, not assumed (docs/reorder.md, "x windows").
//!
//! The windowed layout is a [`Layout`] and a [`DeviceLayout`] like any other, so the Plan, its
//! timing and its reordering wrap it unchanged; every panel pass is inside the timed call.

use std::time::Duration;

use rayon::prelude::*;

use super::common::gpu::{Call, Launches, Resident};
use super::{DeviceLayout, Layout, Method, PrepareFor};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::matrix::Csr;
use crate::methods::Params;
use crate::reorder::{par_fill, prefix};
use crate::scalar::{Idx, Scalar};

/// The most panels a plan takes.
pub const MAX_WINDOWS: usize = 64;

/// The column panels of `a`: `k` windows of ⌈ncols / k⌉ columns (the last one shorter), each
/// panel the full-size matrix restricted to its window's columns, rows and column order kept.
/// An error unless 1 ≤ k ≤ [`MAX_WINDOWS`].
pub fn column_panels<T: Scalar>(a: &Csr<T>, k: usize) -> Result<Vec<Csr<T>>> {
    if !(1..=MAX_WINDOWS).contains(&k) {
        return Err(Error::InvalidArgument(format!(
            "windows={k}: the number of x windows must be 1..={MAX_WINDOWS}"
        )));
    }
    let width = window_width(a.ncols(), k);
    (0..k)
        .map(|j| {
            let (lo, hi) = (j * width, ((j + 1) * width).min(a.ncols()));
            let inside = |c: &Idx| (lo..hi).contains(&(*c as usize));
            let lens: Vec<usize> = (0..a.nrows())
                .into_par_iter()
                .map(|i| a.row(i).0.iter().filter(|c| inside(c)).count())
                .collect();
            let ptr = prefix(&lens);
            let mut entries: Vec<(Idx, T)> = vec![(0, T::zero()); ptr[a.nrows()]];
            par_fill(&ptr, &mut entries, |i, out| {
                let (cols, vals) = a.row(i);
                let kept = cols.iter().zip(vals).filter(|(c, _)| inside(c));
                for (o, (&c, &v)) in out.iter_mut().zip(kept) {
                    *o = (c, v);
                }
            });
            let (cols, vals): (Vec<Idx>, Vec<T>) = entries.into_par_iter().unzip();
            let ptr: Vec<Idx> = ptr.into_iter().map(|o| o as Idx).collect();
            Ok(Csr::from_parts_unchecked(
                a.nrows(),
                a.ncols(),
                ptr,
                cols,
                vals,
            ))
        })
        .collect()
}

/// Columns per window of x: ⌈ncols / k⌉ (at least 1).
fn window_width(ncols: usize, k: usize) -> usize {
    ncols.div_ceil(k).max(1)
}

/// `method` prepared on each column panel of `a`.
pub(crate) struct Windowed<T: Scalar> {
    panels: Vec<Box<dyn Layout<T>>>,
    width: usize,
    nnz: Vec<usize>,
}

impl<T: PrepareFor> Windowed<T> {
    pub(crate) fn prepare(
        method: &'static dyn Method,
        a: &Csr<T>,
        params: &Params,
        k: usize,
    ) -> Result<Self> {
        let panels = column_panels(a, k)?;
        Ok(Windowed {
            width: window_width(a.ncols(), k),
            nnz: panels.iter().map(Csr::nnz).collect(),
            panels: panels
                .iter()
                .map(|p| T::prepare_with(method, p, params))
                .collect::<Result<_>>()?,
        })
    }
}

/// β for panel `j`: the caller's for the first pass, 1 for the passes that add to it.
fn beta_of<T: Scalar>(j: usize, beta: T) -> T {
    if j == 0 {
        beta
    } else {
        T::one()
    }
}

impl<T: Scalar> Layout<T> for Windowed<T> {
    fn footprint_bytes(&self) -> usize {
        self.panels.iter().map(|p| p.footprint_bytes()).sum()
    }

    fn run_cpu(&self, alpha: T, x: &[T], beta: T, y: &mut [T]) -> Result<()> {
        for (j, p) in self.panels.iter().enumerate() {
            p.run_cpu(alpha, x, beta_of(j, beta), y)?;
        }
        Ok(())
    }

    fn upload(&self, gpu: &std::sync::Arc<Gpu>) -> Result<Box<dyn DeviceLayout<T>>> {
        let panels: Vec<Box<dyn DeviceLayout<T>>> = self
            .panels
            .iter()
            .map(|p| p.upload(gpu))
            .collect::<Result<_>>()?;
        let dims = panels.first().map_or((0, 0), |p| p.dims());
        let bytes = panels.iter().map(|p| p.footprint_bytes()).sum();
        Ok(Resident::boxed(dims, bytes, WindowedDevice { panels }))
    }

    fn prep_stages(&self) -> Vec<(&'static str, Duration)> {
        let mut sum: Vec<(&'static str, Duration)> = Vec::new();
        for (k, d) in self.panels.iter().flat_map(|p| p.prep_stages()) {
            match sum.iter_mut().find(|(s, _)| *s == k) {
                Some((_, t)) => *t += d,
                None => sum.push((k, d)),
            }
        }
        sum
    }

    fn notes(&self) -> Vec<(String, String)> {
        let nnz: Vec<String> = self.nnz.iter().map(usize::to_string).collect();
        let mut notes = vec![(
            "x windows".to_string(),
            format!(
                "{} panels of {} columns; nonzeros {}",
                self.panels.len(),
                self.width,
                nnz.join(", ")
            ),
        )];
        if let Some(p) = self.panels.first() {
            notes.extend(
                p.notes()
                    .into_iter()
                    .map(|(k, v)| (format!("panel 1: {k}"), v)),
            );
        }
        notes
    }

    fn chosen(&self) -> Option<&'static dyn Method> {
        let first = self.panels.first()?.chosen()?;
        let same = self
            .panels
            .iter()
            .all(|p| p.chosen().map(|m| m.info().name) == Some(first.info().name));
        same.then_some(first)
    }
}

/// The panels on the device, run one after the other on the same x and y (resident as a
/// [`Resident`]).
struct WindowedDevice<T: Scalar> {
    panels: Vec<Box<dyn DeviceLayout<T>>>,
}

impl<T: Scalar> Launches<T> for WindowedDevice<T> {
    fn padded_dims(&self) -> Option<(usize, usize)> {
        let max = |(y, x): (usize, usize), (py, px): (usize, usize)| (y.max(py), x.max(px));
        self.panels.iter().map(|p| p.padded_dims()).reduce(max)
    }

    unsafe fn run(&self, gpu: &Gpu, c: Call<'_, T>) -> Result<()> {
        for (j, p) in self.panels.iter().enumerate() {
            p.as_ref().run(gpu, c.alpha, c.x, beta_of(j, c.beta), c.y)?;
        }
        Ok(())
    }
}
