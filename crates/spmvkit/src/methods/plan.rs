//! [`Plan`]: a matrix analysed once by a method and applied many times (the Kokkos Kernels
//! handle). It owns the host layout and, when a GPU is in use, the device layout and device
//! copies of x and y.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::CudaSlice;
use serde::{Deserialize, Serialize};

use super::{find, DeviceLayout, Layout, Method, MethodInfo, Params, PrepareFor};
use crate::cpu::oracle::check_lengths_dims;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::matrix::Csr;

/// Where a plan runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Cpu,
    Gpu,
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Backend::Cpu => "cpu",
            Backend::Gpu => "gpu",
        })
    }
}

/// How to build a plan.
#[derive(Clone, Debug, Default)]
pub struct PlanOptions {
    /// Parameter overrides for the method.
    pub params: Params,
    /// `None`: the GPU when one is usable and the method has a GPU executor, else the CPU.
    pub backend: Option<Backend>,
}

/// Preprocessing cost, reported apart from the SpMV time.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct PrepTimes {
    /// Host-side `prepare` (building the layout).
    pub prepare: Duration,
    /// Copying the layout to the device (zero on the CPU).
    pub upload: Duration,
}

impl PrepTimes {
    pub fn total(&self) -> Duration {
        self.prepare + self.upload
    }
}

struct DevicePlan<T: PrepareFor> {
    gpu: Arc<Gpu>,
    layout: Box<dyn DeviceLayout<T>>,
    x: CudaSlice<T>,
    y: CudaSlice<T>,
}

/// A matrix prepared by one method, ready for repeated y = αAx + βy.
pub struct Plan<T: PrepareFor> {
    method: &'static dyn Method,
    nrows: usize,
    ncols: usize,
    layout: Box<dyn Layout<T>>,
    device: Option<DevicePlan<T>>,
    prep: PrepTimes,
    note: Option<String>,
}

impl<T: PrepareFor> Plan<T> {
    /// Analyses `a` with the method called `method`.
    ///
    /// ```
    /// use spmvkit::{Csr, Plan, PlanOptions};
    /// let a = Csr::<f64>::identity(3).unwrap();
    /// let mut plan = Plan::new("csr", &a, &PlanOptions::default()).unwrap();
    /// let x = [1.0, 2.0, 3.0];
    /// let mut y = [1.0; 3];
    /// plan.apply(2.0, &x, 1.0, &mut y).unwrap(); // y = 2·A·x + y
    /// assert_eq!(y, [3.0, 5.0, 7.0]);
    /// ```
    pub fn new(method: &str, a: &Csr<T>, opts: &PlanOptions) -> Result<Self> {
        Self::with_method(find(method)?, a, opts)
    }

    /// As [`Plan::new`], with a method already looked up.
    pub fn with_method(
        method: &'static dyn Method,
        a: &Csr<T>,
        opts: &PlanOptions,
    ) -> Result<Self> {
        let info = method.info();
        opts.params.check_known(info.name, info.params)?;
        let (backend, gpu, note) = choose_backend(&info, opts.backend)?;
        let t0 = Instant::now();
        let layout = T::prepare_with(method, a, &opts.params)?;
        let prepare = t0.elapsed();
        let mut prep = PrepTimes {
            prepare,
            upload: Duration::ZERO,
        };
        let device = match (backend, gpu) {
            (Backend::Gpu, Some(gpu)) => {
                let t1 = Instant::now();
                gpu.ensure_fits(
                    &format!(
                        "{} layout of a {}x{} matrix",
                        info.name,
                        a.nrows(),
                        a.ncols()
                    ),
                    layout.footprint_bytes() + T::BYTES * (a.nrows() + a.ncols()),
                )?;
                let dl = layout.upload(&gpu).map_err(|e| name_method(e, info.name))?;
                let x = gpu.upload(&vec![T::zero(); a.ncols().max(1)])?;
                let y = gpu.upload(&vec![T::zero(); a.nrows().max(1)])?;
                gpu.stream()
                    .synchronize()
                    .map_err(|e| Error::cuda("upload", e))?;
                prep.upload = t1.elapsed();
                Some(DevicePlan {
                    gpu,
                    layout: dl,
                    x,
                    y,
                })
            }
            _ => None,
        };
        Ok(Plan {
            method,
            nrows: a.nrows(),
            ncols: a.ncols(),
            layout,
            device,
            prep,
            note,
        })
    }

    /// y = αAx + βy with host vectors.
    pub fn apply(&mut self, alpha: T, x: &[T], beta: T, y: &mut [T]) -> Result<()> {
        check_lengths_dims(self.nrows, self.ncols, x.len(), y.len())?;
        match &mut self.device {
            None => self.layout.run_cpu(alpha, x, beta, y),
            Some(d) => {
                if !x.is_empty() {
                    d.gpu
                        .stream()
                        .memcpy_htod(x, &mut d.x)
                        .map_err(|e| Error::cuda("copy x", e))?;
                }
                if !y.is_empty() {
                    d.gpu
                        .stream()
                        .memcpy_htod(&*y, &mut d.y)
                        .map_err(|e| Error::cuda("copy y", e))?;
                }
                d.layout.run(&d.gpu, alpha, &d.x, beta, &mut d.y)?;
                d.gpu.download(&d.y, y)
            }
        }
    }

    /// The method's description.
    pub fn info(&self) -> MethodInfo {
        self.method.info()
    }
    /// Where the plan runs.
    pub fn backend(&self) -> Backend {
        if self.device.is_some() {
            Backend::Gpu
        } else {
            Backend::Cpu
        }
    }
    /// Why the plan runs on the CPU although a GPU was not refused (no GPU, no executor), if so.
    pub fn fallback_note(&self) -> Option<&str> {
        self.note.as_deref()
    }
    /// Preprocessing times.
    pub fn prep_times(&self) -> PrepTimes {
        self.prep
    }
    /// The host layout.
    pub fn layout(&self) -> &dyn Layout<T> {
        self.layout.as_ref()
    }
    /// The GPU, device layout and device x and y, when the plan runs on the GPU (for timing).
    #[allow(clippy::type_complexity)]
    pub fn device_parts(
        &mut self,
    ) -> Option<(
        &Arc<Gpu>,
        &dyn DeviceLayout<T>,
        &mut CudaSlice<T>,
        &mut CudaSlice<T>,
    )> {
        self.device
            .as_mut()
            .map(|d| (&d.gpu, d.layout.as_ref(), &mut d.x, &mut d.y))
    }
    pub fn nrows(&self) -> usize {
        self.nrows
    }
    pub fn ncols(&self) -> usize {
        self.ncols
    }
}

fn name_method(e: Error, name: &str) -> Error {
    match e {
        Error::MethodUnsupported { reason, .. } => Error::MethodUnsupported {
            method: name.into(),
            reason,
        },
        other => other,
    }
}

fn choose_backend(
    info: &MethodInfo,
    wanted: Option<Backend>,
) -> Result<(Backend, Option<Arc<Gpu>>, Option<String>)> {
    match wanted {
        Some(Backend::Cpu) => {
            if !info.cpu {
                return Err(Error::MethodUnsupported {
                    method: info.name.into(),
                    reason: "it has no CPU executor".into(),
                });
            }
            Ok((Backend::Cpu, None, None))
        }
        Some(Backend::Gpu) => {
            if !info.gpu {
                return Err(Error::MethodUnsupported {
                    method: info.name.into(),
                    reason: "it has no GPU executor".into(),
                });
            }
            Ok((Backend::Gpu, Some(Gpu::get()?), None))
        }
        None if info.gpu => match Gpu::get() {
            Ok(g) => Ok((Backend::Gpu, Some(g), None)),
            Err(e) if info.cpu => {
                Ok((Backend::Cpu, None, Some(format!("{e}; running on the CPU"))))
            }
            Err(e) => Err(Error::MethodUnsupported {
                method: info.name.into(),
                reason: e.to_string(),
            }),
        },
        None => Ok((
            Backend::Cpu,
            None,
            Some(format!(
                "{} has no GPU executor; running on the CPU",
                info.name
            )),
        )),
    }
}
