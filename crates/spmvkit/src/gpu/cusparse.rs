//! The cuSPARSE baseline (issue #3; methods.md §0 "cuSPARSE had descriptors and a buffer made
//! once, and `SpMV_preprocess` run once"): an RAII wrapper over cuSPARSE's generic SpMV on a CSR
//! matrix with 32-bit indices. Setup creates the handle (bound to [`Gpu::stream`]), the CSR and
//! dense-vector descriptors and the work buffer (`cusparseSpMV_bufferSize`), and runs
//! `cusparseSpMV_preprocess` once; each call is then a single `cusparseSpMV` (α and β as host
//! pointers), after re-pointing the x/y descriptors only when the buffers changed. Everything is
//! freed on drop. [`CusparseSpmv::refill_entries`] re-copies the column indices and values from
//! pinned host memory into the arrays the descriptor points at (`cusparse-e2e`).
//!
//! cudarc 0.19 has no safe cuSPARSE layer, only `cudarc::cusparse::{sys, result}`; and its
//! bindings lack `cusparseSpMV_preprocess` (cuSPARSE ≥ 12.4), which is looked up in the loaded
//! library by name and skipped when absent.
//!
//! Values stored narrower than the vectors (issue #25, docs/precision.md:
//! [`CusparseSpmv::new_stored`]) are set up as the matrix descriptor's data type (`CUDA_R_16F`,
//! `CUDA_R_16BF`, `CUDA_R_32F`) with x, y and the compute type in the vectors' precision; what
//! cuSPARSE refuses (its table of mixed-precision SpMV pairs A with x of the same type) comes
//! back as [`Error::MethodUnsupported`] naming the combination.
//!
//! Row offsets of 64 bits (issue #25, docs/offsets.md: [`CusparseSpmv::new_stored`] on a
//! `Csr<T, u64>`) are set up as `CUSPARSE_INDEX_64I` row offsets with `CUSPARSE_INDEX_32I`
//! column indices, no bytes wasted; when cuSPARSE refuses that pair (`cusparseCreateCsr` takes
//! the two types apart, but its SpMV documentation lists only 32-bit and 64-bit indices, not
//! their mix) the columns are widened to 64I for this baseline alone, counted in its footprint,
//! and [`CusparseSpmv::index_note`] says so.
//!
//! Determinism (cuSPARSE documentation, section "cusparseSpMV()", properties list: "Provides
//! deterministic (bit-wise) results for each run only for CUSPARSE_SPMV_COO_ALG2 and
//! CUSPARSE_SPMV_CSR_ALG2 algorithms, and opA == CUSPARSE_OPERATION_NON_TRANSPOSE";
//! <https://docs.nvidia.com/cuda/cusparse/#cusparsespmv>): CSR_ALG1 is not guaranteed to be
//! bitwise reproducible, CSR_ALG2 is.

use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use cudarc::cusparse::sys::{
    self, cudaDataType, cusparseDnVecDescr_t, cusparseHandle_t, cusparseIndexBase_t,
    cusparseIndexType_t, cusparseOperation_t, cusparseSpMVAlg_t, cusparseSpMatDescr_t,
    cusparseStatus_t,
};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};

mod spmm;

pub use spmm::{CusparseSpmm, SpmmAlg};

use super::stored::{DeviceOffsets, DeviceValues};
use super::{Gpu, PinnedSource};
use crate::error::{Error, Result};
use crate::matrix::Csr;
use crate::scalar::{Offset, OffsetWidth, Precision, Scalar, ValueStorage};

/// Which cuSPARSE CSR SpMV algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpmvAlg {
    /// `CUSPARSE_SPMV_CSR_ALG1` (the default; not guaranteed bitwise deterministic).
    CsrAlg1,
    /// `CUSPARSE_SPMV_CSR_ALG2` (bitwise deterministic for the non-transposed operation).
    CsrAlg2,
}

impl SpmvAlg {
    fn raw(self) -> cusparseSpMVAlg_t {
        match self {
            SpmvAlg::CsrAlg1 => cusparseSpMVAlg_t::CUSPARSE_SPMV_CSR_ALG1,
            SpmvAlg::CsrAlg2 => cusparseSpMVAlg_t::CUSPARSE_SPMV_CSR_ALG2,
        }
    }
    /// "ALG1" or "ALG2".
    pub fn name(self) -> &'static str {
        match self {
            SpmvAlg::CsrAlg1 => "ALG1",
            SpmvAlg::CsrAlg2 => "ALG2",
        }
    }
    /// Whether cuSPARSE documents bitwise reproducible results (module doc).
    pub fn deterministic(self) -> bool {
        matches!(self, SpmvAlg::CsrAlg2)
    }
}

pub(super) fn check(what: &str, s: cusparseStatus_t) -> Result<()> {
    if s == cusparseStatus_t::CUSPARSE_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(Error::cuda(format!("cuSPARSE {what}"), format!("{s:?}")))
    }
}

/// [`check`], except that `CUSPARSE_STATUS_NOT_SUPPORTED` in a mixed-precision setup (`mixed`:
/// the matrix's data type and the vectors' and compute type) is
/// [`Error::MethodUnsupported`] naming the combination (issue #25, docs/precision.md).
fn check_mixed(
    what: &str,
    s: cusparseStatus_t,
    mixed: Option<(cudaDataType, cudaDataType)>,
) -> Result<()> {
    match mixed {
        Some((a, v)) if s == cusparseStatus_t::CUSPARSE_STATUS_NOT_SUPPORTED => {
            Err(Error::MethodUnsupported {
                method: "cusparse".into(),
                reason: format!(
                    "cuSPARSE SpMV does not support A in {a:?} with x, y and compute type \
                     {v:?} ({what}: {s:?}; its mixed-precision table pairs A with x of the same \
                     type)"
                ),
            })
        }
        _ => check(what, s),
    }
}

pub(super) fn data_type<T: Scalar>() -> cudaDataType {
    match T::PRECISION {
        Precision::F32 => cudaDataType::CUDA_R_32F,
        Precision::F64 => cudaDataType::CUDA_R_64F,
    }
}

/// Creates in `desc` a dense-vector descriptor of `len` elements of type `dt` at device address
/// `ptr`.
///
/// # Safety
/// `ptr` must address at least `len` elements of `dt` for as long as the descriptor is used.
unsafe fn create_dn_vec(
    what: &str,
    desc: &mut cusparseDnVecDescr_t,
    len: usize,
    ptr: u64,
    dt: cudaDataType,
) -> Result<()> {
    // SAFETY: the caller's promise on `ptr`.
    check(what, unsafe {
        sys::cusparseCreateDnVec(desc, len as i64, ptr as *mut c_void, dt)
    })
}

/// The index types of a CSR descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CsrIndex {
    /// 32-bit row offsets and column indices.
    I32,
    /// 64-bit row offsets, 32-bit column indices (docs/offsets.md).
    Offsets64,
    /// 64-bit row offsets and column indices (the columns widened for cuSPARSE alone).
    I64,
}

impl CsrIndex {
    /// (row offsets, column indices) as cuSPARSE names them.
    fn raw(self) -> (cusparseIndexType_t, cusparseIndexType_t) {
        use cusparseIndexType_t::{CUSPARSE_INDEX_32I as I32, CUSPARSE_INDEX_64I as I64};
        match self {
            CsrIndex::I32 => (I32, I32),
            CsrIndex::Offsets64 => (I64, I32),
            CsrIndex::I64 => (I64, I64),
        }
    }
    /// `32I`, `64I offsets, 32I columns` or `64I`.
    pub fn name(self) -> &'static str {
        match self {
            CsrIndex::I32 => "32I",
            CsrIndex::Offsets64 => "64I offsets, 32I columns",
            CsrIndex::I64 => "64I offsets and columns (columns widened for cuSPARSE)",
        }
    }
}

/// Creates in `desc` the descriptor of a zero-based CSR matrix of `nrows` × `ncols` with `nnz`
/// entries, 32-bit row offsets and column indices, and values of type `dt` (the CSR of every
/// cuSPARSE call here: SpMV and SpMM).
///
/// # Safety
/// `row_ptr`, `col_idx` and `vals` must address the matrix's arrays (nrows + 1, nnz and nnz
/// elements) for as long as the descriptor is used.
pub(crate) unsafe fn create_csr(
    desc: &mut cusparseSpMatDescr_t,
    dims: (i64, i64, i64),
    addrs: (u64, u64, u64),
    dt: cudaDataType,
) -> Result<()> {
    // SAFETY: the caller's promise.
    unsafe { create_csr_typed(desc, dims, addrs, dt, CsrIndex::I32) }
}

/// [`create_csr`] with the index types `index`.
///
/// # Safety
/// As [`create_csr`], the arrays of the types `index` names.
unsafe fn create_csr_typed(
    desc: &mut cusparseSpMatDescr_t,
    (nrows, ncols, nnz): (i64, i64, i64),
    (row_ptr, col_idx, vals): (u64, u64, u64),
    dt: cudaDataType,
    index: CsrIndex,
) -> Result<()> {
    let (offsets, columns) = index.raw();
    // SAFETY: the caller's promise on the three arrays.
    check("CreateCsr", unsafe {
        sys::cusparseCreateCsr(
            desc,
            nrows,
            ncols,
            nnz,
            row_ptr as *mut c_void,
            col_idx as *mut c_void,
            vals as *mut c_void,
            offsets,
            columns,
            cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO,
            dt,
        )
    })
}

/// Points the dense-vector descriptor `desc`, now at device address `*at`, at `ptr` instead
/// (nothing when it is there already).
///
/// # Safety
/// `desc` must be live, and `ptr` must address as many elements as the descriptor has.
unsafe fn repoint(what: &str, desc: cusparseDnVecDescr_t, at: &mut u64, ptr: u64) -> Result<()> {
    if ptr != *at {
        // SAFETY: the caller's promise on `desc` and `ptr`.
        check(what, unsafe {
            sys::cusparseDnVecSetValues(desc, ptr as *mut c_void)
        })?;
        *at = ptr;
    }
    Ok(())
}

/// Calls `$f`, one of `cusparseSpMV_bufferSize`, `cusparseSpMV_preprocess` and `cusparseSpMV`,
/// with the arguments they share: the non-transposed y = αAx + βy on the descriptors in `$h`,
/// α and β as host pointers of the compute type `$dt`, the algorithm `$alg`; then `$last`, the
/// work buffer (or, for `bufferSize`, where the size is written).
macro_rules! spmv_call {
    ($f:expr, $h:expr, $alpha:expr, $beta:expr, $dt:expr, $alg:expr, $last:expr) => {
        $f(
            $h.handle,
            cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE,
            $alpha as *const _ as *const c_void,
            $h.mat as _,
            $h.x as _,
            $beta as *const _ as *const c_void,
            $h.y,
            $dt,
            $alg.raw(),
            $last,
        )
    };
}

type PreprocessFn = unsafe extern "C" fn(
    cusparseHandle_t,
    cusparseOperation_t,
    *const c_void,
    sys::cusparseConstSpMatDescr_t,
    sys::cusparseConstDnVecDescr_t,
    *const c_void,
    cusparseDnVecDescr_t,
    cudaDataType,
    cusparseSpMVAlg_t,
    *mut c_void,
) -> cusparseStatus_t;

/// `cusparseSpMV_preprocess` from the loaded library, when it has one.
fn preprocess_fn() -> Option<PreprocessFn> {
    // SAFETY: the library is present (checked by Gpu::get); the symbol has this C signature in
    // cuSPARSE ≥ 12.4.
    unsafe {
        let lib = sys::culib();
        lib.get::<PreprocessFn>(b"cusparseSpMV_preprocess\0")
            .ok()
            .map(|s| *s)
    }
}

/// The raw handles, guarded together (cuSPARSE handles and descriptors are not thread safe);
/// each non-null one is destroyed on drop.
struct Handles {
    handle: cusparseHandle_t,
    mat: cusparseSpMatDescr_t,
    x: cusparseDnVecDescr_t,
    y: cusparseDnVecDescr_t,
    /// Device addresses the x and y descriptors point at now.
    x_ptr: u64,
    y_ptr: u64,
    /// The stream the handle enqueues on now ([`HandleStream`]).
    stream: HandleStream,
}

/// The stream a cuSPARSE handle is set to, so that a call on another stream (a [`Gpu`] view on a
/// caller's stream, [`Gpu::on_stream`]) moves it there first: `cusparseSetStream` only when the
/// stream changes, a host-side store.
pub(crate) struct HandleStream(Option<usize>);

impl HandleStream {
    /// A handle whose stream has not been set.
    pub(crate) fn unset() -> Self {
        HandleStream(None)
    }

    /// Sets `handle`'s stream to `stream` unless it is there already.
    ///
    /// # Safety
    ///
    /// `handle` is a live cuSPARSE handle, used under the caller's lock, on `stream`'s context.
    pub(crate) unsafe fn set(
        &mut self,
        handle: cusparseHandle_t,
        stream: &CudaStream,
    ) -> Result<()> {
        let raw = stream.cu_stream();
        if self.0 == Some(raw as usize) {
            return Ok(());
        }
        // SAFETY: the caller's contract; the driver and runtime stream types name the same
        // object.
        check("SetStream", unsafe {
            sys::cusparseSetStream(handle, raw as sys::cudaStream_t)
        })?;
        self.0 = Some(raw as usize);
        Ok(())
    }
}

impl Handles {
    fn null() -> Self {
        Handles {
            handle: std::ptr::null_mut(),
            mat: std::ptr::null_mut(),
            x: std::ptr::null_mut(),
            y: std::ptr::null_mut(),
            x_ptr: 0,
            y_ptr: 0,
            stream: HandleStream::unset(),
        }
    }
}

impl Drop for Handles {
    fn drop(&mut self) {
        // SAFETY: each handle was created once and is destroyed once, here.
        unsafe {
            if !self.y.is_null() {
                sys::cusparseDestroyDnVec(self.y as _);
            }
            if !self.x.is_null() {
                sys::cusparseDestroyDnVec(self.x as _);
            }
            if !self.mat.is_null() {
                sys::cusparseDestroySpMat(self.mat as _);
            }
            if !self.handle.is_null() {
                let _ = cudarc::cusparse::result::destroy(self.handle);
            }
        }
    }
}

/// Column indices on the device: as the host holds them, or widened for cuSPARSE.
enum DeviceCols {
    W32(CudaSlice<u32>),
    W64(CudaSlice<u64>),
}

impl DeviceCols {
    fn address(&self, stream: &CudaStream) -> u64 {
        match self {
            DeviceCols::W32(s) => s.device_ptr(stream).0,
            DeviceCols::W64(s) => s.device_ptr(stream).0,
        }
    }
    fn num_bytes(&self) -> usize {
        match self {
            DeviceCols::W32(s) => s.num_bytes(),
            DeviceCols::W64(s) => s.num_bytes(),
        }
    }
}

/// `cols` widened to 64 bits on the device, in pieces of 2^26 entries (the host copy stays
/// small).
fn upload_widened(gpu: &Arc<Gpu>, cols: &[u32]) -> Result<CudaSlice<u64>> {
    const PIECE: usize = 1 << 26;
    let mut dev = gpu.alloc_zeros::<u64>(cols.len().max(1))?;
    let stream = gpu.stream();
    for (k, piece) in cols.chunks(PIECE).enumerate() {
        let wide: Vec<u64> = piece.iter().map(|&c| u64::from(c)).collect();
        let mut dst = dev.slice_mut(k * PIECE..k * PIECE + piece.len());
        stream
            .memcpy_htod(&wide, &mut dst)
            .map_err(|e| Error::cuda("uploading widened column indices", e))?;
        // the host piece must outlive its copy
        stream
            .synchronize()
            .map_err(|e| Error::cuda("uploading widened column indices", e))?;
    }
    Ok(dev)
}

/// The CSR arrays a [`CusparseSpmv`]'s descriptor points at.
enum Arrays<T: Scalar> {
    /// Uploaded from a host matrix and owned.
    Own {
        row_ptr: DeviceOffsets,
        col_idx: DeviceCols,
        vals: DeviceValues<T>,
    },
    /// Someone else's, which outlive this ([`CusparseSpmv::on_device_arrays`]), of this many
    /// bytes.
    Lent(usize),
}

/// cuSPARSE SpMV on one CSR matrix, set up once and called many times.
pub struct CusparseSpmv<T: Scalar> {
    gpu: Arc<Gpu>,
    alg: SpmvAlg,
    nrows: usize,
    ncols: usize,
    nnz: usize,
    /// `Ok(true)` when `cusparseSpMV_preprocess` ran, `Ok(false)` when the library has none,
    /// `Err(why)` when it failed with `INTERNAL_ERROR` and the calls run without it.
    preprocessed: std::result::Result<bool, String>,
    /// The descriptor's index types, and why the columns were widened when they were.
    index: (CsrIndex, Option<String>),
    // Declared before the buffers: the descriptors go before the memory they point at.
    h: Mutex<Handles>,
    buffer: CudaSlice<u8>,
    arrays: Arrays<T>,
    /// Buffers the vector descriptors point at during setup (before the first call).
    _setup_x: CudaSlice<T>,
    _setup_y: CudaSlice<T>,
}

// SAFETY: the raw handles are used only under the mutex, on the context of `gpu`.
unsafe impl<T: Scalar> Send for CusparseSpmv<T> {}
unsafe impl<T: Scalar> Sync for CusparseSpmv<T> {}

impl<T: Scalar> CusparseSpmv<T> {
    /// Uploads `a` and prepares cuSPARSE SpMV with `alg`. A matrix without entries needs no
    /// cuSPARSE at all ([`CusparseSpmv::run`] then only scales y).
    pub fn new(gpu: &Arc<Gpu>, a: &Csr<T>, alg: SpmvAlg) -> Result<Self> {
        Self::new_stored(gpu, a, alg, ValueStorage::Same)
    }

    /// As [`CusparseSpmv::new`], with `a`'s values (rounded to `values` already) stored as
    /// `values` in the matrix descriptor and x, y and the compute type in `T`. A combination
    /// cuSPARSE does not support is [`Error::MethodUnsupported`] naming it.
    pub fn new_stored<O: Offset>(
        gpu: &Arc<Gpu>,
        a: &Csr<T, O>,
        alg: SpmvAlg,
        values: ValueStorage,
    ) -> Result<Self> {
        gpu.context()
            .bind_to_thread()
            .map_err(|e| Error::cuda("binding the context", e))?;
        let index = match O::WIDTH {
            OffsetWidth::W32 => CsrIndex::I32,
            OffsetWidth::W64 => CsrIndex::Offsets64,
        };
        match Self::own(gpu, a, alg, values, index) {
            Err(Error::Cuda { context, msg })
                if index == CsrIndex::Offsets64
                    && (msg.contains("NOT_SUPPORTED") || msg.contains("INVALID_VALUE")) =>
            {
                let mut s = Self::own(gpu, a, alg, values, CsrIndex::I64)?;
                s.index.1 = Some(format!(
                    "{context}: {msg} with 64I offsets and 32I columns; the columns widened to \
                     64I for cuSPARSE ({} more bytes)",
                    4 * a.nnz()
                ));
                Ok(s)
            }
            r => r,
        }
    }

    /// [`CusparseSpmv::new_stored`] with the descriptor's index types `index` (the columns
    /// widened on the device for [`CsrIndex::I64`]).
    fn own<O: Offset>(
        gpu: &Arc<Gpu>,
        a: &Csr<T, O>,
        alg: SpmvAlg,
        values: ValueStorage,
        index: CsrIndex,
    ) -> Result<Self> {
        let (nrows, ncols, nnz) = (a.nrows(), a.ncols(), a.nnz());
        let row_ptr = DeviceOffsets::upload(gpu, a.row_ptr())?;
        let col_idx = match index {
            CsrIndex::I64 => DeviceCols::W64(upload_widened(gpu, a.col_idx())?),
            _ => DeviceCols::W32(gpu.upload(a.col_idx())?),
        };
        let vals = DeviceValues::upload(gpu, a.vals(), values)?;
        let stream = gpu.stream();
        let addrs = (row_ptr.address(), col_idx.address(stream), vals.address());
        let val_type = vals.data_type();
        let arrays = Arrays::Own {
            row_ptr,
            col_idx,
            vals,
        };
        // SAFETY: the arrays of a validated Csr, of the types `index` names, owned by the
        // result (dropped after its descriptors, field order).
        unsafe {
            Self::setup(
                gpu,
                (nrows, ncols, nnz),
                addrs,
                val_type,
                arrays,
                alg,
                index,
            )
        }
    }

    /// [`CusparseSpmv::new`] on CSR arrays already on the device (a [`crate::Plan`] built from a
    /// caller's device arrays, issue #23): `row_ptr`, `col_idx` and `vals` are the device
    /// addresses of the `nrows + 1`, `nnz` and `nnz` entries of a zero-based CSR matrix with
    /// 32-bit indices, `bytes` their size; nothing is copied.
    ///
    /// # Safety
    ///
    /// The addresses hold a valid CSR structure of that shape (row pointers from 0 to nnz,
    /// never decreasing, column indices below `ncols`), in memory of `gpu`'s context that stays
    /// allocated and unchanged in structure for as long as the result lives.
    pub unsafe fn on_device_arrays(
        gpu: &Arc<Gpu>,
        (nrows, ncols, nnz): (usize, usize, usize),
        (row_ptr, col_idx, vals): (u64, u64, u64),
        bytes: usize,
        alg: SpmvAlg,
    ) -> Result<Self> {
        gpu.context()
            .bind_to_thread()
            .map_err(|e| Error::cuda("binding the context", e))?;
        crate::matrix::check_dims(nrows, ncols, nnz)?;
        // SAFETY: the caller's contract.
        unsafe {
            Self::setup(
                gpu,
                (nrows, ncols, nnz),
                (row_ptr, col_idx, vals),
                data_type::<T>(),
                Arrays::Lent(bytes),
                alg,
                CsrIndex::I32,
            )
        }
    }

    /// The descriptors, work buffer and preprocessing on the arrays at the three addresses, the
    /// values of cuSPARSE type `val_type` (x, y and the compute type in `T`).
    ///
    /// # Safety
    ///
    /// As [`CusparseSpmv::on_device_arrays`], the arrays of the types `index` names; `arrays`
    /// owns them or they outlive the result.
    unsafe fn setup(
        gpu: &Arc<Gpu>,
        (nrows, ncols, nnz): (usize, usize, usize),
        (rp, ci, va): (u64, u64, u64),
        val_type: cudaDataType,
        arrays: Arrays<T>,
        alg: SpmvAlg,
        index: CsrIndex,
    ) -> Result<Self> {
        let mut setup_x = gpu.alloc_zeros::<T>(ncols)?;
        let mut setup_y = gpu.alloc_zeros::<T>(nrows)?;
        let mut buffer = gpu.alloc_zeros::<u8>(1)?;
        let mut h = Handles::null();
        let mut preprocessed = Ok(false);
        if nnz > 0 {
            let stream = gpu.stream();
            let dt = data_type::<T>();
            h.handle = cudarc::cusparse::result::create()
                .map_err(|e| Error::cuda("cusparseCreate", format!("{e:?}")))?;
            // SAFETY (this block): live handle and descriptors; device arrays that outlive the
            // descriptors (struct field order); host scalars of the compute type. On an error,
            // `h` drops and frees what was created.
            unsafe {
                h.stream.set(h.handle, stream)?;
                create_csr_typed(
                    &mut h.mat,
                    (nrows as i64, ncols as i64, nnz as i64),
                    (rp, ci, va),
                    val_type,
                    index,
                )?;
                let (xp, _g4) = setup_x.device_ptr_mut(stream);
                create_dn_vec("CreateDnVec(x)", &mut h.x, ncols, xp, dt)?;
                h.x_ptr = xp;
                let (yp, _g5) = setup_y.device_ptr_mut(stream);
                create_dn_vec("CreateDnVec(y)", &mut h.y, nrows, yp, dt)?;
                h.y_ptr = yp;
                let (one, zero) = (T::one(), T::zero());
                let mut size = 0usize;
                let sized = spmv_call!(
                    sys::cusparseSpMV_bufferSize,
                    h,
                    &one,
                    &zero,
                    dt,
                    alg,
                    &mut size
                );
                let mixed = (val_type != dt).then_some((val_type, dt));
                check_mixed("SpMV_bufferSize", sized, mixed)?;
                buffer = gpu.alloc_zeros::<u8>(size.max(1))?;
                if let Some(pre) = preprocess_fn() {
                    let (bp, _g6) = buffer.device_ptr_mut(stream);
                    let done = spmv_call!(pre, h, &one, &zero, dt, alg, bp as *mut c_void);
                    preprocessed = match check_mixed("SpMV_preprocess", done, mixed) {
                        Ok(()) => Ok(true),
                        // The preprocessing is optional. cuSPARSE 13.0 answers INTERNAL_ERROR
                        // there above 2^31 nonzeros (docs/offsets.md): the calls run without it
                        // and the plan's note says so.
                        Err(e) if done == cusparseStatus_t::CUSPARSE_STATUS_INTERNAL_ERROR => {
                            Err(e.to_string())
                        }
                        Err(e) => return Err(e),
                    };
                }
            }
            gpu.synchronize()?;
        }
        Ok(CusparseSpmv {
            gpu: gpu.clone(),
            alg,
            nrows,
            ncols,
            nnz,
            preprocessed,
            index: (index, None),
            h: Mutex::new(h),
            buffer,
            arrays,
            _setup_x: setup_x,
            _setup_y: setup_y,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Handles> {
        self.h.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The algorithm in use.
    pub fn alg(&self) -> SpmvAlg {
        self.alg
    }
    /// Rows of the matrix.
    pub fn nrows(&self) -> usize {
        self.nrows
    }
    /// Columns of the matrix.
    pub fn ncols(&self) -> usize {
        self.ncols
    }
    /// The descriptor's index types, and why the columns were widened when they were
    /// (docs/offsets.md), for a layout's notes.
    pub fn index_note(&self) -> String {
        match &self.index.1 {
            Some(why) => format!("{} ({why})", self.index.0.name()),
            None => self.index.0.name().to_string(),
        }
    }

    /// Whether `cusparseSpMV_preprocess` ran at setup.
    pub fn preprocessed(&self) -> bool {
        self.preprocessed == Ok(true)
    }

    /// The `preprocessed` note: `true`, `false`, or why the preprocessing failed (the calls
    /// then run without it).
    pub fn preprocess_note(&self) -> String {
        match &self.preprocessed {
            Ok(done) => done.to_string(),
            Err(why) => format!("false ({why}; the calls run without it)"),
        }
    }
    /// Device bytes of the matrix copy and the work buffer.
    pub fn footprint_bytes(&self) -> usize {
        let arrays = match &self.arrays {
            Arrays::Own {
                row_ptr,
                col_idx,
                vals,
            } => row_ptr.num_bytes() + col_idx.num_bytes() + vals.num_bytes(),
            Arrays::Lent(bytes) => *bytes,
        };
        arrays + self.buffer.num_bytes()
    }

    /// Enqueues on `gpu`'s stream (the GPU this was set up on, or a view of it,
    /// [`Gpu::on_stream`]) the copy of the matrix's column indices and values from pinned host
    /// memory into the device arrays cuSPARSE reads (the same bytes, so the preprocessing stays
    /// valid): the host-to-device transfer of CSR-Full-Overlap's Eq. 2 baseline (§5.5). Row
    /// pointers stay resident. No synchronisation.
    pub fn refill_entries(
        &self,
        gpu: &Gpu,
        col_idx: &PinnedSource<u32>,
        vals: &PinnedSource<T>,
    ) -> Result<()> {
        if col_idx.len() != self.nnz || vals.len() != self.nnz {
            return Err(Error::DimensionMismatch {
                what: "cuSPARSE refill: pinned column indices / values".into(),
                expected: self.nnz,
                got: if col_idx.len() != self.nnz {
                    col_idx.len()
                } else {
                    vals.len()
                },
            });
        }
        let Arrays::Own {
            col_idx: DeviceCols::W32(dst_idx),
            vals: dst_vals,
            ..
        } = &self.arrays
        else {
            return Err(Error::InvalidArgument(
                "cuSPARSE refill: the matrix arrays are not this SpMV's own".into(),
            ));
        };
        let stream = gpu.stream();
        col_idx.copy_range_async("cuSPARSE column indices", dst_idx, 0, self.nnz, stream)?;
        let DeviceValues::Same(dst) = dst_vals else {
            return Err(Error::MethodUnsupported {
                method: "cusparse-e2e".into(),
                reason: "the refill copies values as the vectors' precision".into(),
            });
        };
        vals.copy_range_async("cuSPARSE values", dst, 0, self.nnz, stream)
    }

    /// Checks that x and y are long enough for this matrix (`DimensionMismatch` otherwise).
    pub fn check_vectors(&self, x: &CudaSlice<T>, y: &CudaSlice<T>) -> Result<()> {
        crate::matrix::check_vectors(
            "",
            (self.nrows, self.ncols),
            x.len(),
            y.len(),
            crate::matrix::VectorFit::AtLeast,
        )
    }

    /// Enqueues y = αAx + βy on [`Gpu::stream`] (one `cusparseSpMV`; no synchronisation).
    pub fn run(&self, alpha: T, x: &CudaSlice<T>, beta: T, y: &mut CudaSlice<T>) -> Result<()> {
        self.run_on(&self.gpu, alpha, x, beta, y)
    }

    /// [`CusparseSpmv::run`] on `gpu`'s stream: the GPU this was set up on, or a view of it on
    /// another stream ([`Gpu::on_stream`]); the handle moves to that stream first.
    pub fn run_on(
        &self,
        gpu: &Gpu,
        alpha: T,
        x: &CudaSlice<T>,
        beta: T,
        y: &mut CudaSlice<T>,
    ) -> Result<()> {
        self.check_vectors(x, y)?;
        if !self.gpu.same_context(gpu.context()) {
            return Err(Error::InvalidArgument(
                "cuSPARSE SpMV: a GPU of another context than the one it was set up on".into(),
            ));
        }
        if self.nrows == 0 {
            return Ok(());
        }
        if self.nnz == 0 {
            return gpu.scale(y, self.nrows, beta);
        }
        gpu.context()
            .bind_to_thread()
            .map_err(|e| Error::cuda("binding the context", e))?;
        let stream = gpu.stream();
        let mut h = self.lock();
        let handle = h.handle;
        // SAFETY: a live handle (nnz > 0), under the lock, on the context just checked.
        unsafe { h.stream.set(handle, stream) }?;
        let (xp, _gx) = x.device_ptr(stream);
        let (yp, _gy) = y.device_ptr_mut(stream);
        // SAFETY: live descriptors; x and y hold at least ncols / nrows elements.
        unsafe {
            repoint("DnVecSetValues(x)", h.x, &mut h.x_ptr, xp)?;
            repoint("DnVecSetValues(y)", h.y, &mut h.y_ptr, yp)?;
        }
        let (bp, _gb) = self.buffer.device_ptr(stream);
        // SAFETY: live handle, descriptors and the work buffer sized by bufferSize.
        check("SpMV", unsafe {
            spmv_call!(
                sys::cusparseSpMV,
                h,
                &alpha,
                &beta,
                data_type::<T>(),
                self.alg,
                bp as *mut c_void
            )
        })
    }
}

impl<T: Scalar> Drop for CusparseSpmv<T> {
    fn drop(&mut self) {
        let _ = self.gpu.context().bind_to_thread();
        // Work enqueued with these handles must finish before they and the buffers go.
        let _ = self.gpu.synchronize();
    }
}
