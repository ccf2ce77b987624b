//! `cusparse-alg1`, `cusparse-alg2` and `cusparse`: NVIDIA cuSPARSE's generic SpMV on CSR, the
//! baseline every paper compares against (methods.md §0). The work is in
//! [`crate::gpu::cusparse::CusparseSpmv`]: descriptors, buffer and `SpMV_preprocess` once at
//! upload, one `cusparseSpMV` per call. `cusparse` times a few calls of each algorithm at upload
//! and keeps the faster one (the choice and both times are in the layout's notes).
//!
//! `cusparse-e2e` is CSR-Full-Overlap's baseline, t_cuSPARSE of Eq. 2 (Zeng & Zou, Electronics
//! 12:3687, 2023, §5.5): "the total time for cuSPARSE to perform data transfer and SpMV, where
//! the data transfer time is the time spent to transfer the column_indices array and values
//! array from the host to the device". Its call enqueues, on the spmvkit stream, the
//! host-to-device copy of the column indices and values from pinned host memory (the same bytes
//! `csr-full-overlap` copies per call; row pointers stay resident, as there), then one
//! `cusparseSpMV`. The algorithm is chosen as `cusparse` chooses it (the faster of ALG1 and ALG2
//! on SpMV alone, timed at upload; the copy is the same for both), so Eq. 2 compares against the
//! best cuSPARSE. Copy and SpMV are on one stream, so the call is captured into a CUDA graph like
//! the others (a memcpy node, then cuSPARSE's kernels).
//!
//! Determinism follows the cuSPARSE documentation (see `gpu/cusparse.rs`): CSR_ALG2 is bitwise
//! reproducible, CSR_ALG1 is not guaranteed to be, so `cusparse-alg1`, `cusparse` and
//! `cusparse-e2e` claim no determinism. No CPU executor: these are library calls.
//!
//! `cusparse-alg1`, `cusparse-alg2` and `cusparse` take 64-bit row offsets (issue #25,
//! docs/offsets.md): `CUSPARSE_INDEX_64I` offsets with 32I columns, or both 64I where cuSPARSE
//! refuses the pair (the `index types` note says which). `cusparse-e2e` stays 32-bit.

use std::sync::{Arc, Mutex};

use cudarc::driver::CudaSlice;

use crate::error::{Error, Result};
use crate::gpu::cusparse::{CusparseSpmv, SpmvAlg};
use crate::gpu::{time_stream, Gpu, PinnedSource, TimingConfig};
use crate::matrix::{Csr, CsrOfWidth};
use crate::methods::common::csr::DeviceCsr;
use crate::methods::common::gpu::{Call, Launches, Resident};
use crate::methods::common::room::{forward, method};
use crate::methods::{DeviceLayout, GenericMethod, Layout, MethodInfo, Params};
use crate::methods::common::stored::storage_of;
use crate::methods::spmm::{MultiKernel, MultiSource, SpmmTune};
use crate::scalar::{Idx, Offset, Scalar, ValueStorage};

/// `cusparse-alg1`: `CUSPARSE_SPMV_CSR_ALG1`.
pub struct CusparseAlg1;
/// `cusparse-alg2`: `CUSPARSE_SPMV_CSR_ALG2`.
pub struct CusparseAlg2;
/// `cusparse`: the faster of ALG1 and ALG2 for the matrix, chosen at upload.
pub struct CusparseAuto;
#[derive(Clone, Copy, Debug)]
enum Choice {
    Fixed(SpmvAlg),
    Fastest,
}

const fn info(name: &'static str, summary: &'static str, deterministic: bool) -> MethodInfo {
    MethodInfo {
        name,
        summary,
        source: "NVIDIA cuSPARSE generic API (cusparseSpMV), baseline",
        deterministic,
        gpu: true,
        cpu: false,
        params: &[],
        // cuSPARSE's mixed-precision table pairs A with x of the same type: no f16/bf16 A under
        // f32 x (CUSPARSE_STATUS_NOT_SUPPORTED on an H200 with CUDA 13.0, docs/precision.md);
        // f32 A under f64 x is accepted.
        values: &[ValueStorage::F32],
        offsets64: true,
    }
}

fn prepare<T: Scalar, O: Offset>(
    name: &'static str,
    csr: &Csr<T, O>,
    choice: Choice,
    with_upload: bool,
    params: &Params,
) -> Result<Box<dyn Layout<T>>> {
    Ok(Box::new(CusparseLayout {
        name,
        a: csr.clone(),
        choice,
        with_upload,
        values: storage_of(params)?,
        notes: Mutex::new(Vec::new()),
    }))
}

impl GenericMethod for CusparseAlg1 {
    const INFO: MethodInfo = info(
        "cusparse-alg1",
        "GPU: cuSPARSE SpMV, CSR_ALG1 (preprocessed once)",
        false,
    );
    fn prepare<T: Scalar>(&self, csr: &Csr<T>, params: &Params) -> Result<Box<dyn Layout<T>>> {
        let alg = Choice::Fixed(SpmvAlg::CsrAlg1);
        prepare("cusparse-alg1", csr, alg, false, params)
    }
    fn prepare_wide<T: Scalar>(
        &self,
        csr: &Csr<T, u64>,
        params: &Params,
    ) -> Result<Box<dyn Layout<T>>> {
        let alg = Choice::Fixed(SpmvAlg::CsrAlg1);
        prepare("cusparse-alg1", csr, alg, false, params)
    }
}

impl GenericMethod for CusparseAlg2 {
    const INFO: MethodInfo = info(
        "cusparse-alg2",
        "GPU: cuSPARSE SpMV, CSR_ALG2 (deterministic; preprocessed once)",
        true,
    );
    fn prepare<T: Scalar>(&self, csr: &Csr<T>, params: &Params) -> Result<Box<dyn Layout<T>>> {
        let alg = Choice::Fixed(SpmvAlg::CsrAlg2);
        prepare("cusparse-alg2", csr, alg, false, params)
    }
    fn prepare_wide<T: Scalar>(
        &self,
        csr: &Csr<T, u64>,
        params: &Params,
    ) -> Result<Box<dyn Layout<T>>> {
        let alg = Choice::Fixed(SpmvAlg::CsrAlg2);
        prepare("cusparse-alg2", csr, alg, false, params)
    }
}

impl GenericMethod for CusparseAuto {
    const INFO: MethodInfo = info(
        "cusparse",
        "GPU: cuSPARSE SpMV, the faster of CSR_ALG1/ALG2 timed at upload",
        false,
    );
    fn prepare<T: Scalar>(&self, csr: &Csr<T>, params: &Params) -> Result<Box<dyn Layout<T>>> {
        prepare("cusparse", csr, Choice::Fastest, false, params)
    }
    fn prepare_wide<T: Scalar>(
        &self,
        csr: &Csr<T, u64>,
        params: &Params,
    ) -> Result<Box<dyn Layout<T>>> {
        prepare("cusparse", csr, Choice::Fastest, false, params)
    }
}

method! {
    /// `cusparse-e2e`: host-to-device copy of column indices and values, then `cusparse`'s SpMV
    /// (CSR-Full-Overlap's Eq. 2 baseline).
    pub struct CusparseE2e {
        name: "cusparse-e2e",
        summary: "GPU: host-to-device copy of column indices and values (pinned) + cuSPARSE \
                  SpMV (the faster of CSR_ALG1/ALG2 timed at upload). ITS TIME INCLUDES THE \
                  COPY: the t_cuSPARSE of CSR-Full-Overlap's Eq. 2",
        source: "NVIDIA cuSPARSE (cusparseSpMV) + transfer, as in Zeng & Zou, Electronics \
                 12:3687 (2023), §5.5 Eq. 2",
        deterministic: false,
        cpu: false,
    }
    fn prepare(csr, params) {
        prepare("cusparse-e2e", csr, Choice::Fastest, true, params)
    }
}

/// The host side: the CSR matrix (row offsets of type `O`), which algorithm to use, and whether
/// each call uploads the column indices and values first (`cusparse-e2e`).
pub struct CusparseLayout<T, O: Offset = Idx> {
    name: &'static str,
    a: Csr<T, O>,
    choice: Choice,
    with_upload: bool,
    /// How the descriptor stores the values (docs/precision.md).
    values: ValueStorage,
    notes: Mutex<Vec<(String, String)>>,
}

impl<T: Scalar, O: Offset> CusparseLayout<T, O> {
    fn note(&self, k: &str, v: String) {
        let mut n = self.notes.lock().unwrap_or_else(|p| p.into_inner());
        n.retain(|(key, _)| key != k);
        n.push((k.to_string(), v));
    }
}

/// Per-call µs of `spmv` on scratch vectors (5 samples of 20 calls after 3 warm-up calls).
fn quick_time<T: Scalar>(gpu: &Gpu, spmv: &CusparseSpmv<T>, x: &CudaSlice<T>) -> Result<f64> {
    let mut y = gpu.alloc_zeros::<T>(spmv.nrows())?;
    let cfg = TimingConfig {
        warmup: 3,
        calls: 20,
        samples: 5,
    };
    let (alpha, beta) = (T::one(), T::zero());
    Ok(time_stream(gpu, &cfg, || spmv.run(alpha, x, beta, &mut y))?.median_us)
}

impl<T: Scalar, O: Offset> Layout<T> for CusparseLayout<T, O> {
    forward! { values_mut of a, footprint_bytes of a }

    fn run_cpu(&self, _alpha: T, _x: &[T], _beta: T, _y: &mut [T]) -> Result<()> {
        Err(Error::MethodUnsupported {
            method: self.name.into(),
            reason: "cuSPARSE runs only on the GPU".into(),
        })
    }

    fn upload(&self, gpu: &Arc<Gpu>) -> Result<Box<dyn DeviceLayout<T>>> {
        let new = |alg| {
            CusparseSpmv::new_stored(gpu, &self.a, alg, self.values).map_err(|e| match e {
                Error::MethodUnsupported { reason, .. } => Error::MethodUnsupported {
                    method: self.name.into(),
                    reason,
                },
                e => e,
            })
        };
        let spmv = match self.choice {
            Choice::Fixed(alg) => new(alg)?,
            Choice::Fastest => {
                let x = gpu.upload(&vec![T::one(); self.a.ncols()])?;
                let alg1 = new(SpmvAlg::CsrAlg1)?;
                let t1 = quick_time(gpu, &alg1, &x)?;
                drop(alg1);
                let alg2 = new(SpmvAlg::CsrAlg2)?;
                let t2 = quick_time(gpu, &alg2, &x)?;
                self.note("alg1_us", format!("{t1:.2}"));
                self.note("alg2_us", format!("{t2:.2}"));
                if t2 < t1 {
                    alg2
                } else {
                    drop(alg2);
                    new(SpmvAlg::CsrAlg1)?
                }
            }
        };
        self.note("alg", spmv.alg().name().to_string());
        if O::WIDTH == crate::scalar::OffsetWidth::W64 {
            self.note("index types", spmv.index_note());
        }
        self.note("preprocessed", spmv.preprocess_note());
        let upload = if self.with_upload {
            let entries = HostEntries {
                col_idx: gpu.pinned_source(self.a.col_idx())?,
                vals: gpu.pinned_source(self.a.vals())?,
            };
            self.note(
                "h2d_bytes_per_call",
                (self.a.nnz() * (4 + T::BYTES)).to_string(),
            );
            Some(entries)
        } else {
            None
        };
        let dims = (spmv.nrows(), spmv.ncols());
        let bytes = spmv.footprint_bytes();
        Ok(Resident::boxed(dims, bytes, CusparseDevice { spmv, upload }))
    }

    fn notes(&self) -> Vec<(String, String)> {
        self.notes.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
    /// cuSPARSE SpMM; none for `cusparse-e2e`, whose calls include a copy a multi-vector call
    /// would not make (its blocks run k single-vector calls, each with the copy).
    /// 32-bit offsets only (64-bit ones run k single-vector calls).
    fn multi(&self) -> Option<MultiSource<'_, T>> {
        let CsrOfWidth::W32(a) = self.a.by_width() else {
            return None;
        };
        (!self.with_upload).then_some(MultiSource {
            kernel: MultiKernel::Cusparse,
            a,
            tune: SpmmTune::default(),
            deterministic: false,
        })
    }
}

/// `cusparse-e2e`'s pinned host copies of the column indices and values.
struct HostEntries<T> {
    col_idx: PinnedSource<Idx>,
    vals: PinnedSource<T>,
}

/// cuSPARSE SpMV resident on the GPU, with the pinned entries it re-uploads per call
/// (`cusparse-e2e`). Field order: `spmv` drops (and synchronises its stream) before the pinned
/// memory goes.
struct CusparseDevice<T: Scalar> {
    spmv: CusparseSpmv<T>,
    upload: Option<HostEntries<T>>,
}

impl<T: Scalar> Launches<T> for CusparseDevice<T> {
    unsafe fn run(&self, gpu: &Gpu, c: Call<'_, T>) -> Result<()> {
        if let Some(u) = &self.upload {
            self.spmv.refill_entries(gpu, &u.col_idx, &u.vals)?;
        }
        self.spmv.run_on(gpu, c.alpha, c.x, c.beta, c.y)
    }
}

/// cuSPARSE SpMV on CSR arrays already on the device, shared with the plan that owns them.
/// Field order: `spmv` drops (and synchronises) before the arrays it points at.
struct CusparseShared<T: Scalar> {
    spmv: CusparseSpmv<T>,
    _a: Arc<DeviceCsr<T>>,
}

impl<T: Scalar> Launches<T> for CusparseShared<T> {
    unsafe fn run(&self, gpu: &Gpu, c: Call<'_, T>) -> Result<()> {
        self.spmv.run_on(gpu, c.alpha, c.x, c.beta, c.y)
    }
}

/// A layout's notes, (key, value).
type Notes = Vec<(String, String)>;

/// cuSPARSE SpMV with `alg` on CSR arrays already on the device (a plan built from a caller's
/// device arrays, `methods/from_device.rs`), or with the faster of ALG1 and ALG2 when `alg` is
/// `None` (`cusparse`, timed as at upload); returns the algorithm and the notes.
pub(crate) fn from_device<T: Scalar>(
    gpu: &Arc<Gpu>,
    a: Arc<DeviceCsr<T>>,
    alg: Option<SpmvAlg>,
) -> Result<(Box<dyn DeviceLayout<T>>, Notes)> {
    let make = |alg| {
        let (addrs, nnz) = a.addresses();
        let (nrows, ncols) = a.dims();
        // SAFETY: a validated CSR structure (gpu::check_device_csr), kept alive by the Arc the
        // result holds after the SpMV.
        unsafe { CusparseSpmv::on_device_arrays(gpu, (nrows, ncols, nnz), addrs, a.num_bytes(), alg) }
    };
    let mut notes = Vec::new();
    let spmv = match alg {
        Some(alg) => make(alg)?,
        None => {
            let x = gpu.upload(&vec![T::one(); a.dims().1])?;
            let alg1 = make(SpmvAlg::CsrAlg1)?;
            let t1 = quick_time(gpu, &alg1, &x)?;
            drop(alg1);
            let alg2 = make(SpmvAlg::CsrAlg2)?;
            let t2 = quick_time(gpu, &alg2, &x)?;
            notes.push(("alg1_us".into(), format!("{t1:.2}")));
            notes.push(("alg2_us".into(), format!("{t2:.2}")));
            if t2 < t1 {
                alg2
            } else {
                drop(alg2);
                make(SpmvAlg::CsrAlg1)?
            }
        }
    };
    notes.push(("alg".into(), spmv.alg().name().to_string()));
    notes.push(("preprocessed".into(), spmv.preprocess_note()));
    let (dims, bytes) = ((spmv.nrows(), spmv.ncols()), spmv.footprint_bytes());
    let room = CusparseShared { spmv, _a: a };
    Ok((Resident::boxed(dims, bytes, room), notes))
}
