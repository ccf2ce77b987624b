//! `cusparse-alg1`, `cusparse-alg2` and `cusparse`: NVIDIA cuSPARSE's generic SpMV on CSR, the
//! baseline every paper compares against (methods.md §0). The work is in
//! [`crate::gpu::cusparse::CusparseSpmv`]: descriptors, buffer and `SpMV_preprocess` once at
//! upload, one `cusparseSpMV` per call. `cusparse` times a few calls of each algorithm at upload
//! and keeps the faster one (the choice and both times are in the layout's notes).
//!
//! Determinism follows the cuSPARSE documentation (see `gpu/cusparse.rs`): CSR_ALG2 is bitwise
//! reproducible, CSR_ALG1 is not guaranteed to be, so `cusparse-alg1` and `cusparse` claim no
//! determinism. No CPU executor: these are library calls.

use std::sync::{Arc, Mutex};

use cudarc::driver::CudaSlice;

use crate::error::{Error, Result};
use crate::gpu::cusparse::{CusparseSpmv, SpmvAlg};
use crate::gpu::{time_stream, Gpu, TimingConfig};
use crate::matrix::Csr;
use crate::methods::{DeviceLayout, GenericMethod, Layout, MethodInfo, Params};
use crate::scalar::Scalar;

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

fn info(name: &'static str, summary: &'static str, deterministic: bool) -> MethodInfo {
    MethodInfo {
        name,
        summary,
        source: "NVIDIA cuSPARSE generic API (cusparseSpMV), baseline",
        deterministic,
        gpu: true,
        cpu: false,
        params: &[],
    }
}

fn prepare<T: Scalar>(name: &'static str, csr: &Csr<T>, choice: Choice) -> Box<dyn Layout<T>> {
    Box::new(CusparseLayout {
        name,
        a: csr.clone(),
        choice,
        notes: Mutex::new(Vec::new()),
    })
}

impl GenericMethod for CusparseAlg1 {
    fn info(&self) -> MethodInfo {
        info(
            "cusparse-alg1",
            "GPU: cuSPARSE SpMV, CSR_ALG1 (preprocessed once)",
            false,
        )
    }
    fn prepare<T: Scalar>(&self, csr: &Csr<T>, _params: &Params) -> Result<Box<dyn Layout<T>>> {
        Ok(prepare(
            "cusparse-alg1",
            csr,
            Choice::Fixed(SpmvAlg::CsrAlg1),
        ))
    }
}

impl GenericMethod for CusparseAlg2 {
    fn info(&self) -> MethodInfo {
        info(
            "cusparse-alg2",
            "GPU: cuSPARSE SpMV, CSR_ALG2 (deterministic; preprocessed once)",
            true,
        )
    }
    fn prepare<T: Scalar>(&self, csr: &Csr<T>, _params: &Params) -> Result<Box<dyn Layout<T>>> {
        Ok(prepare(
            "cusparse-alg2",
            csr,
            Choice::Fixed(SpmvAlg::CsrAlg2),
        ))
    }
}

impl GenericMethod for CusparseAuto {
    fn info(&self) -> MethodInfo {
        info(
            "cusparse",
            "GPU: cuSPARSE SpMV, the faster of CSR_ALG1/ALG2 timed at upload",
            false,
        )
    }
    fn prepare<T: Scalar>(&self, csr: &Csr<T>, _params: &Params) -> Result<Box<dyn Layout<T>>> {
        Ok(prepare("cusparse", csr, Choice::Fastest))
    }
}

/// The host side: the CSR matrix and which algorithm to use.
pub struct CusparseLayout<T> {
    name: &'static str,
    a: Csr<T>,
    choice: Choice,
    notes: Mutex<Vec<(String, String)>>,
}

impl<T: Scalar> CusparseLayout<T> {
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

impl<T: Scalar> Layout<T> for CusparseLayout<T> {
    fn footprint_bytes(&self) -> usize {
        self.a.bytes()
    }

    fn run_cpu(&self, _alpha: T, _x: &[T], _beta: T, _y: &mut [T]) -> Result<()> {
        Err(Error::MethodUnsupported {
            method: self.name.into(),
            reason: "cuSPARSE runs only on the GPU".into(),
        })
    }

    fn upload(&self, gpu: &Arc<Gpu>) -> Result<Box<dyn DeviceLayout<T>>> {
        let spmv = match self.choice {
            Choice::Fixed(alg) => CusparseSpmv::new(gpu, &self.a, alg)?,
            Choice::Fastest => {
                let x = gpu.upload(&vec![T::one(); self.a.ncols()])?;
                let alg1 = CusparseSpmv::new(gpu, &self.a, SpmvAlg::CsrAlg1)?;
                let t1 = quick_time(gpu, &alg1, &x)?;
                drop(alg1);
                let alg2 = CusparseSpmv::new(gpu, &self.a, SpmvAlg::CsrAlg2)?;
                let t2 = quick_time(gpu, &alg2, &x)?;
                self.note("alg1_us", format!("{t1:.2}"));
                self.note("alg2_us", format!("{t2:.2}"));
                if t2 < t1 {
                    alg2
                } else {
                    drop(alg2);
                    CusparseSpmv::new(gpu, &self.a, SpmvAlg::CsrAlg1)?
                }
            }
        };
        self.note("alg", spmv.alg().name().to_string());
        self.note("preprocessed", spmv.preprocessed().to_string());
        Ok(Box::new(CusparseDevice { spmv }))
    }

    fn notes(&self) -> Vec<(String, String)> {
        self.notes.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// cuSPARSE SpMV resident on the GPU.
struct CusparseDevice<T: Scalar> {
    spmv: CusparseSpmv<T>,
}

impl<T: Scalar> DeviceLayout<T> for CusparseDevice<T> {
    fn run(
        &self,
        _gpu: &Gpu,
        alpha: T,
        x: &CudaSlice<T>,
        beta: T,
        y: &mut CudaSlice<T>,
    ) -> Result<()> {
        self.spmv.run(alpha, x, beta, y)
    }

    fn footprint_bytes(&self) -> usize {
        self.spmv.footprint_bytes()
    }
}
