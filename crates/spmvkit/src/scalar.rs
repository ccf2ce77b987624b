//! The value types spmvkit computes in: `f32` and `f64`, with 32-bit indices everywhere.
//!
//! `Scalar` carries what generic code needs from a precision: conversion to and from `f64` (the
//! oracle accumulates in `f64`), the machine epsilon that scales oracle tolerances, and the name
//! used in kernels (`real_t`) and reports.

use std::fmt::{Debug, Display};
use std::ops::{Add, AddAssign, Mul, Sub};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Index type of every sparse structure: 32 bits, as on the GPU. Values must stay ≤ 2^31−1.
pub type Idx = u32;

/// The largest row count, column count or nnz that spmvkit accepts (2^31−1, the `int` range
/// cuSPARSE and the kernels index with).
pub const MAX_INDEX: u64 = i32::MAX as u64;

/// A floating-point value type: `f32` or `f64`.
pub trait Scalar:
    Copy
    + Send
    + Sync
    + Default
    + PartialEq
    + PartialOrd
    + Debug
    + Display
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + AddAssign
    + FromStr
    + cudarc::driver::DeviceRepr
    + cudarc::driver::ValidAsZeroBits
    + 'static
{
    /// Which precision this is.
    const PRECISION: Precision;
    /// Size in bytes.
    const BYTES: usize;
    /// Unit roundoff scale used by oracle tolerances.
    const EPSILON: f64;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    fn zero() -> Self {
        Self::default()
    }
    fn one() -> Self {
        Self::from_f64(1.0)
    }
    /// `self * a + b`, fused where the platform has it.
    fn mul_add(self, a: Self, b: Self) -> Self;
    /// Raw bits widened to 64, for bitwise comparisons.
    fn to_bits_u64(self) -> u64;
}

impl Scalar for f32 {
    const PRECISION: Precision = Precision::F32;
    const BYTES: usize = 4;
    const EPSILON: f64 = f32::EPSILON as f64;
    #[inline]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline]
    fn mul_add(self, a: Self, b: Self) -> Self {
        f32::mul_add(self, a, b)
    }
    #[inline]
    fn to_bits_u64(self) -> u64 {
        self.to_bits() as u64
    }
}

impl Scalar for f64 {
    const PRECISION: Precision = Precision::F64;
    const BYTES: usize = 8;
    const EPSILON: f64 = f64::EPSILON;
    #[inline]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline]
    fn mul_add(self, a: Self, b: Self) -> Self {
        f64::mul_add(self, a, b)
    }
    #[inline]
    fn to_bits_u64(self) -> u64 {
        self.to_bits()
    }
}

/// A value precision, as named on the command line and in reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    F32,
    F64,
}

impl Precision {
    pub const ALL: [Precision; 2] = [Precision::F32, Precision::F64];
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::F64 => "f64",
        }
    }
    pub fn bytes(self) -> usize {
        match self {
            Precision::F32 => 4,
            Precision::F64 => 8,
        }
    }
}

impl Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Precision {
    type Err = crate::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "f32" | "float" | "single" => Ok(Precision::F32),
            "f64" | "double" => Ok(Precision::F64),
            other => Err(crate::Error::InvalidArgument(format!(
                "unknown precision '{other}': expected f32 or f64"
            ))),
        }
    }
}
