//! Device properties for machine descriptions: L2 size and the driver's CUDA version.

use cudarc::driver::sys::{cuDriverGetVersion, CUdevice_attribute, CUresult};

use super::Gpu;

impl Gpu {
    /// L2 cache size in bytes, if the driver reports it.
    pub fn l2_bytes(&self) -> Option<usize> {
        self.context()
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
            .ok()
            .map(|b| b as usize)
    }

    /// The CUDA version the driver supports, e.g. "13.0".
    pub fn driver_version(&self) -> Option<String> {
        let mut v: std::ffi::c_int = 0;
        // SAFETY: a context exists (so libcuda is loaded), and `v` is a valid out-pointer.
        let r = unsafe { cuDriverGetVersion(&mut v) };
        (r == CUresult::CUDA_SUCCESS).then(|| format!("{}.{}", v / 1000, (v % 1000) / 10))
    }
}
