//! The cuSPARSE SpMM baseline (issue #24; docs/spmm.md): `cusparseSpMM` on one CSR matrix for
//! blocks of k vectors, Y = αAX + βY, in both dense orders. Setup per (k, order)
//! ([`CusparseSpmm::prepare`]) makes the sparse and dense-matrix descriptors, then for each CSR
//! algorithm (`CUSPARSE_SPMM_CSR_ALG1`, `ALG2`, `ALG3`) asks for its buffer, runs
//! `cusparseSpMM_preprocess` and times a few calls on scratch blocks; an algorithm the library
//! refuses for that order (a status other than success at `bufferSize` or `preprocess`) is
//! skipped and reported. The fastest is kept with its buffer and its preprocessed descriptor;
//! each call then is one `cusparseSpMM` after re-pointing the dense descriptors when the blocks
//! moved. Which algorithm applies to which order differs between cuSPARSE versions, hence the
//! trial rather than a fixed rule.
//!
//! Each setup has its own sparse-matrix descriptor (over the shared arrays), since the
//! preprocessing is attached to the descriptor it ran with.
//!
//! Determinism: of the CSR algorithms the cuSPARSE documentation (section "cusparseSpMM()",
//! its properties list) states bitwise-deterministic results for each run only for
//! `CUSPARSE_SPMM_CSR_ALG3` (with `COO_ALG2` among the COO ones); ALG1 and ALG2 may differ from
//! run to run. A wrapper made for a deterministic plan ([`CusparseSpmm::new`] with
//! `deterministic`) tries only ALG3 ([`SpmmAlg::DETERMINISTIC`]), and reports the setup refused
//! when the library refuses ALG3 for the shape (docs/spmm.md).

use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use cudarc::cusparse::sys::{
    self, cusparseDnMatDescr_t, cusparseHandle_t, cusparseOperation_t, cusparseOrder_t,
    cusparseSpMMAlg_t, cusparseSpMatDescr_t,
};
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};

use super::{check, create_csr, data_type};
use crate::error::{Error, Result};
use crate::gpu::{time_stream, DeviceBlocks, Gpu, TimingConfig};
use crate::matrix::{Csr, DenseOrder, MultiShape};
use crate::scalar::Scalar;

/// A cuSPARSE CSR SpMM algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpmmAlg {
    CsrAlg1,
    CsrAlg2,
    CsrAlg3,
}

impl SpmmAlg {
    /// The candidates tried at setup.
    pub const ALL: [SpmmAlg; 3] = [SpmmAlg::CsrAlg1, SpmmAlg::CsrAlg2, SpmmAlg::CsrAlg3];

    /// The CSR algorithms cuSPARSE documents as bitwise deterministic (module doc): ALG3.
    pub const DETERMINISTIC: [SpmmAlg; 1] = [SpmmAlg::CsrAlg3];

    /// Whether cuSPARSE documents the algorithm as bitwise deterministic for each run.
    pub fn deterministic(self) -> bool {
        Self::DETERMINISTIC.contains(&self)
    }

    /// The algorithms a setup tries: all, or with `deterministic` only the documented
    /// deterministic ones.
    pub fn candidates(deterministic: bool) -> &'static [SpmmAlg] {
        if deterministic {
            &Self::DETERMINISTIC
        } else {
            &Self::ALL
        }
    }

    fn raw(self) -> cusparseSpMMAlg_t {
        match self {
            SpmmAlg::CsrAlg1 => cusparseSpMMAlg_t::CUSPARSE_SPMM_CSR_ALG1,
            SpmmAlg::CsrAlg2 => cusparseSpMMAlg_t::CUSPARSE_SPMM_CSR_ALG2,
            SpmmAlg::CsrAlg3 => cusparseSpMMAlg_t::CUSPARSE_SPMM_CSR_ALG3,
        }
    }

    /// "ALG1", "ALG2" or "ALG3".
    pub fn name(self) -> &'static str {
        match self {
            SpmmAlg::CsrAlg1 => "ALG1",
            SpmmAlg::CsrAlg2 => "ALG2",
            SpmmAlg::CsrAlg3 => "ALG3",
        }
    }
}

fn raw_order(o: DenseOrder) -> cusparseOrder_t {
    match o {
        DenseOrder::Row => cusparseOrder_t::CUSPARSE_ORDER_ROW,
        DenseOrder::Col => cusparseOrder_t::CUSPARSE_ORDER_COL,
    }
}

/// Calls `$f` (`cusparseSpMM_bufferSize`, `_preprocess` or `cusparseSpMM`) with what they share:
/// non-transposed A and X, the descriptors of setup `$s`, α and β as host pointers of the
/// compute type `$dt`, the algorithm `$alg`, then `$last` (the buffer, or where its size goes).
macro_rules! spmm_call {
    ($f:expr, $handle:expr, $s:expr, $alpha:expr, $beta:expr, $dt:expr, $alg:expr, $last:expr) => {
        $f(
            $handle,
            cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE,
            cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE,
            $alpha as *const _ as *const c_void,
            $s.mat as _,
            $s.x as _,
            $beta as *const _ as *const c_void,
            $s.y,
            $dt,
            $alg.raw(),
            $last,
        )
    };
}

/// The descriptors of one (k, order) and where the dense ones point now; each non-null one is
/// destroyed on drop.
struct Descriptors {
    mat: cusparseSpMatDescr_t,
    x: cusparseDnMatDescr_t,
    y: cusparseDnMatDescr_t,
    x_ptr: u64,
    y_ptr: u64,
}

impl Drop for Descriptors {
    fn drop(&mut self) {
        // SAFETY: each descriptor was created once and is destroyed once, here.
        unsafe {
            if !self.y.is_null() {
                sys::cusparseDestroyDnMat(self.y as _);
            }
            if !self.x.is_null() {
                sys::cusparseDestroyDnMat(self.x as _);
            }
            if !self.mat.is_null() {
                sys::cusparseDestroySpMat(self.mat as _);
            }
        }
    }
}

/// One prepared (k, order): the chosen algorithm, its descriptors and buffer.
struct Setup {
    shape: MultiShape,
    alg: SpmmAlg,
    d: Descriptors,
    buffer: CudaSlice<u8>,
}

/// The handle and the setups, guarded together (cuSPARSE handles are not thread safe).
struct Inner {
    handle: cusparseHandle_t,
    setups: Vec<Setup>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.setups.clear();
        if !self.handle.is_null() {
            // SAFETY: created once in CusparseSpmm::new, destroyed once, after its descriptors.
            let _ = unsafe { cudarc::cusparse::result::destroy(self.handle) };
        }
    }
}

/// What [`CusparseSpmm::prepare`] found for one (k, order).
#[derive(Clone, Debug)]
pub struct SpmmChoice {
    /// The algorithm kept.
    pub alg: SpmmAlg,
    /// Per-call µs of each algorithm tried, or why the library refused it.
    pub trials: Vec<(SpmmAlg, std::result::Result<f64, String>)>,
}

/// cuSPARSE SpMM on one CSR matrix (its own device copy), prepared per (k, order).
pub struct CusparseSpmm<T: Scalar> {
    gpu: Arc<Gpu>,
    nrows: usize,
    ncols: usize,
    nnz: usize,
    /// The algorithms a setup tries ([`SpmmAlg::candidates`]).
    algs: &'static [SpmmAlg],
    // Declared before the arrays: the descriptors go before the memory they point at.
    inner: Mutex<Inner>,
    row_ptr: CudaSlice<u32>,
    col_idx: CudaSlice<u32>,
    vals: CudaSlice<T>,
}

// SAFETY: the raw handles are used only under the mutex, on the context of `gpu`.
unsafe impl<T: Scalar> Send for CusparseSpmm<T> {}
unsafe impl<T: Scalar> Sync for CusparseSpmm<T> {}

impl<T: Scalar> CusparseSpmm<T> {
    /// Uploads `a` and creates the handle (bound to [`Gpu::stream`]). A matrix without rows or
    /// entries needs no cuSPARSE: its calls only scale Y. With `deterministic` the setups try
    /// only the algorithms documented bitwise deterministic ([`SpmmAlg::DETERMINISTIC`]).
    pub fn new(gpu: &Arc<Gpu>, a: &Csr<T>, deterministic: bool) -> Result<Self> {
        gpu.context()
            .bind_to_thread()
            .map_err(|e| Error::cuda("binding the context", e))?;
        let mut inner = Inner {
            handle: std::ptr::null_mut(),
            setups: Vec::new(),
        };
        if a.nnz() > 0 && a.nrows() > 0 {
            inner.handle = cudarc::cusparse::result::create()
                .map_err(|e| Error::cuda("cusparseCreate", format!("{e:?}")))?;
            // SAFETY: a live handle; the driver and runtime stream types name the same object.
            check("SetStream", unsafe {
                sys::cusparseSetStream(inner.handle, gpu.stream().cu_stream() as sys::cudaStream_t)
            })?;
        }
        Ok(CusparseSpmm {
            gpu: gpu.clone(),
            nrows: a.nrows(),
            ncols: a.ncols(),
            nnz: a.nnz(),
            algs: SpmmAlg::candidates(deterministic),
            inner: Mutex::new(inner),
            row_ptr: gpu.upload(a.row_ptr())?,
            col_idx: gpu.upload(a.col_idx())?,
            vals: gpu.upload(a.vals())?,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn idle(&self) -> bool {
        self.nnz == 0 || self.nrows == 0
    }

    /// Device bytes of the matrix copy and the buffers of every setup.
    pub fn footprint_bytes(&self) -> usize {
        let buffers: usize = self
            .lock()
            .setups
            .iter()
            .map(|s| s.buffer.num_bytes())
            .sum();
        self.row_ptr.num_bytes() + self.col_idx.num_bytes() + self.vals.num_bytes() + buffers
    }

    /// Whether `shape` is prepared.
    pub fn prepared(&self, shape: MultiShape) -> bool {
        self.idle() || self.lock().setups.iter().any(|s| s.shape == shape)
    }

    /// Prepares `shape` (module doc): tries each CSR algorithm on scratch blocks (allocated for
    /// the trial only; X all ones, not zeros: on kron:21 at k = 32 in f32 cuSPARSE SpMM ran 22 %
    /// faster on a zero X than on the benchmark's data) and keeps the fastest. `None` when it
    /// was prepared already or the matrix needs no cuSPARSE. Synchronises; not for a timed loop or a graph capture.
    pub fn prepare(&self, shape: MultiShape) -> Result<Option<SpmmChoice>> {
        if self.prepared(shape) {
            return Ok(None);
        }
        let k = shape.k;
        let (xl, yl) = (shape.len(self.ncols)?, shape.len(self.nrows)?);
        shape.check("cusparseSpMM setup", (self.nrows, self.ncols), xl, yl, true)?;
        self.gpu
            .ensure_fits("cusparseSpMM trial blocks", T::BYTES * (xl + yl))?;
        let scratch_x = self.gpu.filled::<T>(xl.max(1), T::one())?;
        let mut scratch_y = self.gpu.alloc_zeros::<T>(yl.max(1))?;
        let mut trials = Vec::new();
        let mut best: Option<(f64, Setup)> = None;
        for &alg in self.algs {
            match self.try_alg(shape, alg, &scratch_x, &mut scratch_y) {
                Ok((us, setup)) => {
                    trials.push((alg, Ok(us)));
                    if best.as_ref().is_none_or(|(b, _)| us < *b) {
                        best = Some((us, setup));
                    }
                }
                Err(e) => trials.push((alg, Err(e.to_string()))),
            }
        }
        let Some((_, mut setup)) = best else {
            return Err(Error::MethodUnsupported {
                method: "cusparse SpMM".into(),
                reason: format!(
                    "no {}CSR algorithm accepts k = {k}, {}-major: {}",
                    if self.algs.len() < SpmmAlg::ALL.len() {
                        "deterministic "
                    } else {
                        ""
                    },
                    shape.order,
                    trials
                        .iter()
                        .map(|(a, r)| format!(
                            "{}: {}",
                            a.name(),
                            r.as_ref().err().map_or("", |s| s)
                        ))
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            });
        };
        // the scratch blocks go: the next call re-points the descriptors
        setup.d.x_ptr = 0;
        setup.d.y_ptr = 0;
        let alg = setup.alg;
        self.gpu.synchronize()?;
        self.lock().setups.push(setup);
        Ok(Some(SpmmChoice { alg, trials }))
    }

    /// One algorithm's setup on the scratch blocks and its per-call µs.
    fn try_alg(
        &self,
        shape: MultiShape,
        alg: SpmmAlg,
        x: &CudaSlice<T>,
        y: &mut CudaSlice<T>,
    ) -> Result<(f64, Setup)> {
        let stream = self.gpu.stream();
        let dt = data_type::<T>();
        let (m, n, k) = (self.nrows as i64, self.ncols as i64, shape.k as i64);
        let (ldx, ldy) = match shape.order {
            DenseOrder::Row => (k, k),
            DenseOrder::Col => (n.max(1), m.max(1)),
        };
        let mut d = Descriptors {
            mat: std::ptr::null_mut(),
            x: std::ptr::null_mut(),
            y: std::ptr::null_mut(),
            x_ptr: 0,
            y_ptr: 0,
        };
        let handle = self.lock().handle;
        let (one, zero) = (T::one(), T::zero());
        // SAFETY (this block): a live handle; descriptors over device arrays that outlive them
        // (the arrays are fields of self, the scratch blocks outlive the trial and are
        // re-pointed before any later call); host scalars of the compute type.
        let buffer = unsafe {
            let (rp, _g1) = self.row_ptr.device_ptr(stream);
            let (ci, _g2) = self.col_idx.device_ptr(stream);
            let (va, _g3) = self.vals.device_ptr(stream);
            create_csr(&mut d.mat, (m, n, self.nnz as i64), (rp, ci, va), dt)?;
            let (xp, _g4) = x.device_ptr(stream);
            check(
                "CreateDnMat(X)",
                sys::cusparseCreateDnMat(
                    &mut d.x,
                    n,
                    k,
                    ldx,
                    xp as *mut c_void,
                    dt,
                    raw_order(shape.order),
                ),
            )?;
            d.x_ptr = xp;
            let (yp, _g5) = y.device_ptr_mut(stream);
            check(
                "CreateDnMat(Y)",
                sys::cusparseCreateDnMat(
                    &mut d.y,
                    m,
                    k,
                    ldy,
                    yp as *mut c_void,
                    dt,
                    raw_order(shape.order),
                ),
            )?;
            d.y_ptr = yp;
            let mut size = 0usize;
            check(
                "SpMM_bufferSize",
                spmm_call!(
                    sys::cusparseSpMM_bufferSize,
                    handle,
                    d,
                    &one,
                    &zero,
                    dt,
                    alg,
                    &mut size
                ),
            )?;
            let mut buffer = self.gpu.alloc_zeros::<u8>(size.max(1))?;
            let (bp, g6) = buffer.device_ptr_mut(stream);
            check(
                "SpMM_preprocess",
                spmm_call!(
                    sys::cusparseSpMM_preprocess,
                    handle,
                    d,
                    &one,
                    &zero,
                    dt,
                    alg,
                    bp as *mut c_void
                ),
            )?;
            drop(g6);
            buffer
        };
        let setup = Setup {
            shape,
            alg,
            d,
            buffer,
        };
        let cfg = TimingConfig {
            warmup: 2,
            calls: 10,
            samples: 3,
        };
        let t = time_stream(&self.gpu, &cfg, || {
            self.call(handle, &setup, T::one(), x, T::zero(), y)
        })?;
        Ok((t.median_us, setup))
    }

    /// One `cusparseSpMM` with setup `s`, re-pointing its dense descriptors at `x` and `y`.
    fn call(
        &self,
        handle: cusparseHandle_t,
        s: &Setup,
        alpha: T,
        x: &CudaSlice<T>,
        beta: T,
        y: &mut CudaSlice<T>,
    ) -> Result<()> {
        let stream = self.gpu.stream();
        let (xp, _gx) = x.device_ptr(stream);
        let (yp, _gy) = y.device_ptr_mut(stream);
        let (bp, _gb) = s.buffer.device_ptr(stream);
        // SAFETY: live handle and descriptors (the setup is borrowed); x and y hold the blocks
        // (checked by the caller); the buffer was sized by bufferSize for this setup. The
        // descriptors are re-pointed here under the caller's lock (or before the setup is
        // shared), so setting the values is not racy.
        unsafe {
            if xp != s.d.x_ptr {
                check(
                    "DnMatSetValues(X)",
                    sys::cusparseDnMatSetValues(s.d.x, xp as *mut c_void),
                )?;
            }
            if yp != s.d.y_ptr {
                check(
                    "DnMatSetValues(Y)",
                    sys::cusparseDnMatSetValues(s.d.y, yp as *mut c_void),
                )?;
            }
            check(
                "SpMM",
                spmm_call!(
                    sys::cusparseSpMM,
                    handle,
                    s.d,
                    &alpha,
                    &beta,
                    data_type::<T>(),
                    s.alg,
                    bp as *mut c_void
                ),
            )
        }
    }

    /// Enqueues Y = αAX + βY on [`Gpu::stream`] (one `cusparseSpMM`, no synchronisation) for a
    /// prepared shape, after [`DeviceBlocks::check`].
    pub fn run(&self, b: DeviceBlocks<'_, T>) -> Result<()> {
        b.check("cusparseSpMM", &self.gpu, (self.nrows, self.ncols))?;
        let DeviceBlocks {
            shape,
            alpha,
            x,
            beta,
            y,
        } = b;
        if self.nrows == 0 {
            return Ok(());
        }
        if self.nnz == 0 {
            return self.gpu.scale(y, shape.len(self.nrows)?, beta);
        }
        self.gpu
            .context()
            .bind_to_thread()
            .map_err(|e| Error::cuda("binding the context", e))?;
        let mut inner = self.lock();
        let handle = inner.handle;
        let Some(s) = inner.setups.iter_mut().find(|s| s.shape == shape) else {
            return Err(Error::InvalidArgument(format!(
                "cusparseSpMM: k = {}, {}-major was not prepared",
                shape.k, shape.order
            )));
        };
        self.call(handle, s, alpha, x, beta, y)?;
        let stream = self.gpu.stream();
        s.d.x_ptr = x.device_ptr(stream).0;
        s.d.y_ptr = y.device_ptr_mut(stream).0;
        Ok(())
    }
}

impl<T: Scalar> Drop for CusparseSpmm<T> {
    fn drop(&mut self) {
        let _ = self.gpu.context().bind_to_thread();
        // Work enqueued with these handles must finish before they and the buffers go.
        let _ = self.gpu.synchronize();
    }
}
