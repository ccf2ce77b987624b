//! Matrix values on the device as a layout stores them (issue #25, docs/precision.md): in the
//! vectors' precision, as the 16 bits of an f16 or bf16, or as f32 under f64 vectors. The host
//! layout keeps the values rounded to the storage and widened back to `T` (what its CPU mirror
//! computes with, bit for bit the kernel's widened loads); the upload narrows them, exactly.
//! Kernels read them as the prelude's `val_t` through `ldg_val`, compiled for the storage by
//! [`Gpu::kernel_stored`]; cuSPARSE reads them as the descriptor's data type
//! ([`DeviceValues::data_type`]).
//!
//! Row offsets likewise ([`DeviceOffsets`]): 32 or 64 bits as the host matrix holds them
//! (docs/offsets.md), read by kernels as the prelude's `off_t` and by cuSPARSE as the
//! descriptor's row-offset type.

use std::sync::Arc;

use cudarc::cusparse::sys::cudaDataType;
use cudarc::driver::CudaSlice;

use super::{DevRef, Gpu, RowOffsets, Stored};
use crate::error::{Error, Result};
use crate::scalar::{Offset, OffsetSlice, OffsetWidth, Scalar, ValueStorage};

/// CSR row offsets on the device, 32 or 64 bits wide.
pub(crate) enum DeviceOffsets {
    W32(CudaSlice<u32>),
    W64(CudaSlice<u64>),
}

impl DeviceOffsets {
    /// Uploads `ptr` in its own width.
    pub(crate) fn upload<O: Offset>(gpu: &Arc<Gpu>, ptr: &[O]) -> Result<Self> {
        Ok(match O::slice(ptr) {
            OffsetSlice::W32(s) => DeviceOffsets::W32(gpu.upload(s)?),
            OffsetSlice::W64(s) => DeviceOffsets::W64(gpu.upload(s)?),
        })
    }

    /// The width.
    pub(crate) fn width(&self) -> OffsetWidth {
        match self {
            DeviceOffsets::W32(_) => OffsetWidth::W32,
            DeviceOffsets::W64(_) => OffsetWidth::W64,
        }
    }

    /// The pointer a kernel compiled for [`DeviceOffsets::width`] reads as `const off_t*`.
    pub(crate) fn dev_ref(&self) -> DevRef<'_, RowOffsets> {
        match self {
            DeviceOffsets::W32(s) => DevRef::offsets(s),
            DeviceOffsets::W64(s) => DevRef::offsets(s),
        }
    }

    /// The device address of the first offset.
    pub(crate) fn address(&self) -> u64 {
        self.dev_ref().address()
    }

    /// Device bytes.
    pub(crate) fn num_bytes(&self) -> usize {
        match self {
            DeviceOffsets::W32(s) => s.num_bytes(),
            DeviceOffsets::W64(s) => s.num_bytes(),
        }
    }
}

/// Device values in their stored type.
pub(crate) enum DeviceValues<T: Scalar> {
    /// As the vectors (`T`).
    Same(CudaSlice<T>),
    /// The 16 bits of f16 (`bf16: false`) or bf16 values.
    Bits16 { bits: CudaSlice<u16>, bf16: bool },
    /// f32 under f64 vectors.
    F32(CudaSlice<f32>),
}

impl<T: Scalar> DeviceValues<T> {
    /// Uploads `vals` (already rounded to `storage`, so the narrowing is exact) as `storage`
    /// keeps them.
    pub(crate) fn upload(gpu: &Arc<Gpu>, vals: &[T], storage: ValueStorage) -> Result<Self> {
        if !storage.fits(T::PRECISION) {
            return Err(Error::InvalidArgument(format!(
                "values stored in {storage} do not go with {} vectors",
                T::PRECISION
            )));
        }
        Ok(match storage {
            ValueStorage::Same => DeviceValues::Same(gpu.upload(vals)?),
            ValueStorage::F16 | ValueStorage::Bf16 => {
                let bits: Vec<u16> = vals
                    .iter()
                    .map(|&v| storage.bits16(v).unwrap_or_default())
                    .collect();
                DeviceValues::Bits16 {
                    bits: gpu.upload(&bits)?,
                    bf16: storage == ValueStorage::Bf16,
                }
            }
            ValueStorage::F32 => {
                let narrow: Vec<f32> = vals.iter().map(|v| v.to_f64() as f32).collect();
                DeviceValues::F32(gpu.upload(&narrow)?)
            }
        })
    }

    /// The kernel's `const val_t*`.
    pub(crate) fn dev_ref(&self) -> DevRef<'_, Stored> {
        match self {
            DeviceValues::Same(s) => DevRef::stored(s),
            DeviceValues::Bits16 { bits, .. } => DevRef::stored(bits),
            DeviceValues::F32(s) => DevRef::stored(s),
        }
    }

    /// cuSPARSE's data type of these values.
    pub(crate) fn data_type(&self) -> cudaDataType {
        match self {
            DeviceValues::Same(_) => super::cusparse::data_type::<T>(),
            DeviceValues::Bits16 { bf16: true, .. } => cudaDataType::CUDA_R_16BF,
            DeviceValues::Bits16 { bf16: false, .. } => cudaDataType::CUDA_R_16F,
            DeviceValues::F32(_) => cudaDataType::CUDA_R_32F,
        }
    }

    /// The device address of the first value.
    pub(crate) fn address(&self) -> u64 {
        self.dev_ref().address()
    }

    /// Device bytes.
    pub(crate) fn num_bytes(&self) -> usize {
        match self {
            DeviceValues::Same(s) => s.num_bytes(),
            DeviceValues::Bits16 { bits, .. } => bits.num_bytes(),
            DeviceValues::F32(s) => s.num_bytes(),
        }
    }
}
