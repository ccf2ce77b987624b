//! Plans built from CSR arrays that already live on the device (issue #23, "nothing on the device
//! is copied to the host when the input already lives there"): [`Plan::from_device_csr`].
//!
//! Only methods whose device layout is the CSR arrays themselves build this way
//! ([`DEVICE_METHODS`]): `csr-vector`, `csr-scalar`, `cusparse`, `cusparse-alg1`,
//! `cusparse-alg2`, and `auto`, which chooses among them. The caller's arrays are copied
//! device to device into buffers the plan owns (never borrowed beyond the call), on the caller's
//! stream, and that copy is checked on the device ([`crate::gpu::check_device_csr`]) before any
//! kernel reads it: a malformed structure is an error naming the row and the problem. Three
//! numbers come back to the host: the first bad row, the longest row and the number of empty rows.
//!
//! `auto` on device arrays does not run its host model (it would need the structure on the
//! host): it times one call of each candidate on the device and keeps the fastest, the
//! candidates being `csr-vector`, `cusparse-alg1` (`cusparse-alg2` with `deterministic=1`) and,
//! when no row is longer than [`SCALAR_MAX_ROW`] entries (the device-computed statistics),
//! `csr-scalar`. Its other parameters (`calls`, `mode`, ...) do not apply and are ignored.
//!
//! Such a plan keeps nothing of the matrix on the host: its host layout ([`FromDevice`]) only
//! reports notes. Host vectors still work (`Plan::apply` copies the vectors, never the matrix);
//! a CPU run, a reordering and x windows are refused. [`Plan::update_values`] takes the new
//! values to the device and [`Plan::update_values_device`] copies device values device to device
//! into the plan's value array, after which the device layout is set up again on the same arrays
//! (cuSPARSE's descriptors and preprocessing made anew).

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::CudaSlice;

use super::common::csr::DeviceCsr;
use super::params::{Any, Flag};
use super::plan::PrepTimes;
use super::{
    csr_scalar, csr_vector, cusparse, resolve, DeviceLayout, Layout, Method, PlanOptions,
    PrepareFor,
};
use crate::error::{Error, Result};
use crate::gpu::cusparse::SpmvAlg;
use crate::gpu::{check_device_csr, time_stream, Gpu, RowLengths, TimingConfig};
use crate::reorder::Reorder;
use crate::scalar::{Idx, Scalar};
use crate::{Backend, Plan};

/// The methods [`Plan::from_device_csr`] builds.
pub const DEVICE_METHODS: [&str; 6] = [
    "auto",
    "csr-vector",
    "csr-scalar",
    "cusparse",
    "cusparse-alg1",
    "cusparse-alg2",
];

/// `auto` on device arrays tries `csr-scalar` (one thread per row) only when no row is longer.
pub const SCALAR_MAX_ROW: usize = 32;

/// A CSR matrix whose arrays are on the device: `row_ptr` of at least `nrows + 1` entries,
/// `col_idx` and `vals` of at least `nnz` entries each (zero-based, 32-bit indices); only those
/// leading entries are read.
pub struct DeviceCsrRef<'a, T> {
    pub nrows: usize,
    pub ncols: usize,
    pub nnz: usize,
    pub row_ptr: &'a CudaSlice<Idx>,
    pub col_idx: &'a CudaSlice<Idx>,
    pub vals: &'a CudaSlice<T>,
}

/// Which device layout a plan from device arrays runs (fixed once built, so a value update sets
/// the same one up again).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    CsrVector,
    CsrScalar,
    Cusparse(SpmvAlg),
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::CsrVector => "csr-vector",
            Kind::CsrScalar => "csr-scalar",
            Kind::Cusparse(SpmvAlg::CsrAlg1) => "cusparse-alg1",
            Kind::Cusparse(SpmvAlg::CsrAlg2) => "cusparse-alg2",
        }
    }
}

/// What a plan built from device arrays keeps to set its device layout up again: the arrays (its
/// own copies, shared with the layout), the layout's kind and the method's parameters.
pub(super) struct DeviceSource<T: Scalar> {
    csr: Arc<DeviceCsr<T>>,
    kind: Kind,
    params: super::Params,
}

impl<T: Scalar> DeviceSource<T> {
    /// The matrix's entries.
    pub(super) fn nnz(&self) -> usize {
        self.csr.addresses().1
    }
}

/// The host side of a plan built from device arrays: no matrix, only what the build found out.
pub struct FromDevice {
    method: &'static str,
    notes: Vec<(String, String)>,
    chosen: Option<&'static dyn Method>,
}

impl<T: Scalar> Layout<T> for FromDevice {
    fn footprint_bytes(&self) -> usize {
        0
    }
    fn run_cpu(&self, _: T, _: &[T], _: T, _: &mut [T]) -> Result<()> {
        Err(Error::MethodUnsupported {
            method: self.method.into(),
            reason: "the plan was built from device arrays and keeps no host copy of the matrix"
                .into(),
        })
    }
    fn notes(&self) -> Vec<(String, String)> {
        self.notes.clone()
    }
    fn chosen(&self) -> Option<&'static dyn Method> {
        self.chosen
    }
}

/// A device layout with nothing to run, in place while a value update rewrites the arrays.
struct Vacant((usize, usize));

impl<T: Scalar> DeviceLayout<T> for Vacant {
    fn dims(&self) -> (usize, usize) {
        self.0
    }
    unsafe fn run_unchecked(
        &self,
        _: &Gpu,
        _: T,
        _: &CudaSlice<T>,
        _: T,
        _: &mut CudaSlice<T>,
    ) -> Result<()> {
        Err(Error::InvalidArgument(
            "the plan's device layout is being set up again".into(),
        ))
    }
    fn footprint_bytes(&self) -> usize {
        0
    }
}

/// A device layout, the kind it is and its notes.
type Built<T> = (Box<dyn DeviceLayout<T>>, Kind, Vec<(String, String)>);

/// The device layout of `kind` on `csr`, with cuSPARSE's notes (`alg`: `None` times ALG1 and
/// ALG2, `cusparse`).
fn layout_of<T: Scalar>(
    gpu: &Arc<Gpu>,
    csr: &Arc<DeviceCsr<T>>,
    kind: Kind,
    params: &super::Params,
    fastest_alg: bool,
) -> Result<Built<T>> {
    Ok(match kind {
        Kind::CsrVector => (
            csr_vector::from_device(gpu, csr.clone(), params)?,
            kind,
            Vec::new(),
        ),
        Kind::CsrScalar => (csr_scalar::from_device(gpu, csr.clone())?, kind, Vec::new()),
        Kind::Cusparse(alg) => {
            let (dl, notes) =
                cusparse::from_device(gpu, csr.clone(), (!fastest_alg).then_some(alg))?;
            let alg = if notes.iter().any(|(k, v)| k == "alg" && v == "ALG2") {
                SpmvAlg::CsrAlg2
            } else {
                SpmvAlg::CsrAlg1
            };
            (dl, Kind::Cusparse(alg), notes)
        }
    })
}

/// `auto`'s timed trial: one layout per candidate, a few timed calls each on the plan's own
/// stream, the fastest kept; its notes list every candidate's time.
fn trial<T: Scalar>(
    gpu: &Arc<Gpu>,
    csr: &Arc<DeviceCsr<T>>,
    stats: &RowLengths,
    deterministic: bool,
) -> Result<Built<T>> {
    const TRIAL: TimingConfig = TimingConfig {
        warmup: 2,
        calls: 10,
        samples: 3,
    };
    let alg = if deterministic {
        SpmvAlg::CsrAlg2
    } else {
        SpmvAlg::CsrAlg1
    };
    let mut kinds = vec![Kind::CsrVector, Kind::Cusparse(alg)];
    if stats.max <= SCALAR_MAX_ROW {
        kinds.push(Kind::CsrScalar);
    }
    let (nrows, ncols) = csr.dims();
    let x = gpu.upload(&vec![T::one(); ncols])?;
    let mut y = gpu.alloc_zeros::<T>(nrows)?;
    let params = super::Params::new();
    let mut best: Option<(f64, Box<dyn DeviceLayout<T>>, Kind)> = None;
    let mut times = Vec::new();
    for kind in kinds {
        let (dl, kind, _) = layout_of(gpu, csr, kind, &params, false)?;
        let (one, zero) = (T::one(), T::zero());
        let us = time_stream(gpu, &TRIAL, || dl.run(gpu, one, &x, zero, &mut y))?.median_us;
        times.push(format!("{} {us:.2}", kind.name()));
        if best.as_ref().is_none_or(|(b, _, _)| us < *b) {
            best = Some((us, dl, kind));
        }
    }
    let Some((_, dl, kind)) = best else {
        return Err(Error::InvalidArgument("auto: no candidate".into()));
    };
    let notes = vec![
        ("auto chose".into(), kind.name().into()),
        (
            "auto rule".into(),
            "device arrays: the fastest of a timed trial (µs per call)".into(),
        ),
        ("trial_us".into(), times.join(", ")),
    ];
    Ok((dl, kind, notes))
}

impl<T: PrepareFor> Plan<T> {
    /// A GPU plan from a CSR matrix whose arrays are on the device, with no host copy of them
    /// (module doc): `method` is one of [`DEVICE_METHODS`] (a name or a variant, resolved with
    /// `opts.params` as [`Plan::new`] does); another method is an
    /// [`Error::MethodUnsupported`] listing those. The arrays are copied device to device on
    /// `gpu`'s stream (the caller's: a view of the plan's GPU, [`Gpu::on_stream`], or the GPU
    /// itself), so the copy follows the caller's work there; the copy is then checked on the
    /// device ([`Error::InvalidStructure`] naming the row and the problem) and the call waits
    /// for that stream. A CPU backend, a reordering and x windows are refused.
    pub fn from_device_csr(
        method: &str,
        gpu: &Gpu,
        a: DeviceCsrRef<'_, T>,
        opts: &PlanOptions,
    ) -> Result<Self> {
        let t0 = Instant::now();
        let (m, mut params) = resolve(method, &opts.params)?;
        let name = m.info().name;
        if !DEVICE_METHODS.contains(&name) {
            return Err(Error::MethodUnsupported {
                method: name.into(),
                reason: format!(
                    "a plan from device arrays is built by {} only (their device layout is the \
                     CSR arrays); copy the matrix to the host for the others",
                    DEVICE_METHODS.join(", ")
                ),
            });
        }
        let refuse = |what: &str| {
            Err(Error::InvalidArgument(format!(
                "{name} from device arrays: {what} needs the matrix on the host"
            )))
        };
        if opts.backend == Some(Backend::Cpu) {
            return refuse("the CPU backend");
        }
        if opts.reorder != Reorder::None || params.take(super::REORDER_PARAM).is_some() {
            return refuse("a reordering");
        }
        if opts.windows > 1 || params.take(super::WINDOWS_PARAM).is_some() {
            return refuse("x windows");
        }
        if opts.values != crate::scalar::ValueStorage::Same
            || params.take(super::VALUES_PARAM).is_some()
        {
            return refuse("values stored narrower than the vectors (a precision mode)");
        }
        let own = Gpu::get()?;
        if !own.same_context(gpu.context()) {
            return Err(Error::InvalidArgument(format!(
                "{name} from device arrays: the stream belongs to another CUDA context than the \
                 plan's (device {}, {})",
                own.ordinal(),
                own.name()
            )));
        }
        let foreign = [
            ("row_ptr", a.row_ptr.context()),
            ("col_idx", a.col_idx.context()),
            ("vals", a.vals.context()),
        ]
        .into_iter()
        .find(|(_, c)| !own.same_context(c));
        if let Some((what, _)) = foreign {
            return Err(Error::InvalidArgument(format!(
                "{name} from device arrays: {what} is memory of another CUDA context than the \
                 plan's"
            )));
        }
        let (nrows, ncols, nnz) = (a.nrows, a.ncols, a.nnz);
        crate::matrix::check_dims(nrows, ncols, nnz)?;
        if a.row_ptr.len() < nrows + 1 || a.col_idx.len() < nnz || a.vals.len() < nnz {
            return Err(Error::structure(
                "CSR",
                format!(
                    "device arrays of {} row pointers, {} column indices and {} values for \
                     {nrows} rows and {nnz} entries (row_ptr needs nrows + 1 entries, col_idx \
                     and vals nnz)",
                    a.row_ptr.len(),
                    a.col_idx.len(),
                    a.vals.len()
                ),
            ));
        }
        own.ensure_fits(
            &format!("{name} plan of a {nrows}x{ncols} matrix from device arrays"),
            (nrows + 1 + nnz) * 4 + nnz * T::BYTES + T::BYTES * (nrows + ncols),
        )?;
        // The plan's buffers: allocated on its own stream, ready before the caller's stream
        // copies into them.
        let mut rp = own.alloc_zeros::<Idx>(nrows + 1)?;
        let mut ci = own.alloc_zeros::<Idx>(nnz)?;
        let mut vals = own.alloc_zeros::<T>(nnz)?;
        own.synchronize()?;
        let s = gpu.stream();
        let copy = |e| Error::cuda("copying the device CSR arrays", e);
        s.memcpy_dtod(
            &a.row_ptr.slice(0..nrows + 1),
            &mut rp.slice_mut(0..nrows + 1),
        )
        .map_err(copy)?;
        if nnz > 0 {
            s.memcpy_dtod(&a.col_idx.slice(0..nnz), &mut ci.slice_mut(0..nnz))
                .map_err(copy)?;
            s.memcpy_dtod(&a.vals.slice(0..nnz), &mut vals.slice_mut(0..nnz))
                .map_err(copy)?;
        }
        let stats = check_device_csr(gpu, (nrows, ncols), &rp, &ci, nnz)?;
        let csr = Arc::new(DeviceCsr::from_parts((nrows, ncols, nnz), rp, ci, vals));
        let prepare = t0.elapsed();
        let t1 = Instant::now();
        let (dl, kind, mut notes) = match name {
            "auto" => {
                let det = params
                    .value::<Flag, _>(name, m.info().params, "deterministic", &Any)?
                    .is_set();
                params = super::Params::new();
                trial(&own, &csr, &stats, det)?
            }
            "csr-vector" => layout_of(&own, &csr, Kind::CsrVector, &params, false)?,
            "csr-scalar" => layout_of(&own, &csr, Kind::CsrScalar, &params, false)?,
            "cusparse-alg2" => {
                layout_of(&own, &csr, Kind::Cusparse(SpmvAlg::CsrAlg2), &params, false)?
            }
            "cusparse-alg1" => {
                layout_of(&own, &csr, Kind::Cusparse(SpmvAlg::CsrAlg1), &params, false)?
            }
            _ => layout_of(&own, &csr, Kind::Cusparse(SpmvAlg::CsrAlg1), &params, true)?,
        };
        let x = own.alloc_zeros::<T>(ncols)?;
        let y = own.alloc_zeros::<T>(nrows)?;
        own.synchronize()?;
        let chosen = (name == "auto")
            .then(|| super::find(kind.name()).ok())
            .flatten();
        notes.splice(
            0..0,
            [
                ("built from".into(), "device arrays (no host copy)".into()),
                ("max row length".into(), stats.max.to_string()),
                ("mean row length".into(), format!("{:.2}", stats.mean())),
                ("empty rows".into(), stats.empty.to_string()),
            ],
        );
        let host = Box::new(FromDevice {
            method: name,
            notes,
            chosen,
        });
        let prep = PrepTimes {
            prepare,
            upload: t1.elapsed(),
            ..PrepTimes::default()
        };
        let source = DeviceSource { csr, kind, params };
        Self::assemble_from_device(m, (nrows, ncols), host, (own, dl, x, y), source, prep)
    }

    /// Whether the plan was built from device arrays ([`Plan::from_device_csr`]).
    pub fn built_from_device(&self) -> bool {
        self.device_source().is_some()
    }

    /// New values for the plan's matrix from a device array (nnz entries in the CSR order of the
    /// matrix the plan was made from), copied on `gpu`'s stream (the caller's, as in
    /// [`Plan::from_device_csr`]). A plan built from device arrays copies them device to device
    /// into its value array and sets its device layout up again (returns
    /// [`super::ValueUpdate::Gathered`]); any other plan copies them to the host and goes through
    /// [`Plan::update_values`]. Waits for `gpu`'s stream and the plan's.
    pub fn update_values_device(
        &mut self,
        gpu: &Gpu,
        vals: &CudaSlice<T>,
    ) -> Result<super::ValueUpdate> {
        if self.device_source().is_none() {
            let mut host = vec![T::zero(); vals.len()];
            gpu.download(vals, &mut host)?;
            return self.update_values(&host);
        }
        let name = self.info().name;
        let Some((own, order, layout, source)) = self.device_source_parts() else {
            return Err(Error::InvalidArgument("no device source".into()));
        };
        let nnz = source.nnz();
        if vals.len() != nnz && !(nnz == 0 && vals.len() <= 1) {
            return Err(Error::DimensionMismatch {
                what: format!("update_values_device ({name}): values for the pattern entries"),
                expected: nnz,
                got: vals.len(),
            });
        }
        if !own.same_context(gpu.context()) || !own.same_context(vals.context()) {
            return Err(Error::InvalidArgument(format!(
                "update_values_device ({name}): the stream or the values belong to another CUDA \
                 context than the plan's"
            )));
        }
        order.settle(own)?;
        own.synchronize()?;
        let dims = layout.dims();
        *layout = Box::new(Vacant(dims));
        let own = own.clone();
        // The old layout is gone, so the plan holds the only reference to its arrays.
        let copied = match Arc::get_mut(&mut source.csr) {
            Some(csr) if nnz > 0 => match csr.vals_mut() {
                Some(dst) => gpu
                    .stream()
                    .memcpy_dtod(&vals.slice(0..nnz), &mut dst.slice_mut(0..nnz))
                    .map_err(|e| Error::cuda("copying the new values", e))
                    .and_then(|()| gpu.synchronize()),
                None => Err(Error::InvalidArgument(format!(
                    "update_values_device ({name}): the plan stores its values narrower than \
                     its vectors"
                ))),
            },
            Some(_) => Ok(()),
            None => Err(Error::InvalidArgument(format!(
                "update_values_device ({name}): the plan's arrays are still shared"
            ))),
        };
        // Set up again whatever happened, so that the plan stays usable.
        let (dl, _, _) = layout_of(&own, &source.csr, source.kind, &source.params, false)?;
        *layout = dl;
        copied?;
        Ok(super::ValueUpdate::Gathered)
    }
}
