//! The value types spmvkit computes in: `f32` and `f64`, with 32-bit column indices and row
//! offsets of 32 or 64 bits ([`Offset`], issue #25, docs/offsets.md).
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
/// cuSPARSE and the kernels index with); nnz may reach [`MAX_WIDE_NNZ`] with 64-bit row offsets.
pub const MAX_INDEX: u64 = i32::MAX as u64;

/// The largest nnz a matrix with 64-bit row offsets may have (2^40; docs/offsets.md): rows and
/// columns stay within [`MAX_INDEX`], so the column indices stay 32-bit.
pub const MAX_WIDE_NNZ: u64 = 1 << 40;

/// The type of a CSR matrix's row offsets: `u32` (nnz ≤ 2^31−1, every method) or `u64` (nnz up
/// to [`MAX_WIDE_NNZ`], the methods whose `MethodInfo::offsets64` says so; issue #25,
/// docs/offsets.md). Column indices stay [`Idx`] either way. Sealed: only these two.
pub trait Offset:
    Copy
    + Send
    + Sync
    + Default
    + Ord
    + Debug
    + Display
    + cudarc::driver::DeviceRepr
    + cudarc::driver::ValidAsZeroBits
    + sealed::Sealed
    + 'static
{
    /// Which width this is.
    const WIDTH: OffsetWidth;
    /// Size in bytes.
    const BYTES: usize;
    /// The largest nnz these offsets hold.
    const MAX_NNZ: u64;
    /// The offset as an index (it fits: nnz ≤ [`Offset::MAX_NNZ`] was checked).
    fn to_usize(self) -> usize;
    /// An offset from a count ≤ [`Offset::MAX_NNZ`] (checked by the caller; truncates otherwise).
    fn from_u64(v: u64) -> Self;
    /// The offsets as a slice of their own width.
    fn slice(s: &[Self]) -> OffsetSlice<'_>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

impl Offset for u32 {
    const WIDTH: OffsetWidth = OffsetWidth::W32;
    const BYTES: usize = 4;
    const MAX_NNZ: u64 = MAX_INDEX;
    #[inline]
    fn to_usize(self) -> usize {
        self as usize
    }
    #[inline]
    fn from_u64(v: u64) -> Self {
        v as u32
    }
    fn slice(s: &[Self]) -> OffsetSlice<'_> {
        OffsetSlice::W32(s)
    }
}

impl Offset for u64 {
    const WIDTH: OffsetWidth = OffsetWidth::W64;
    const BYTES: usize = 8;
    const MAX_NNZ: u64 = MAX_WIDE_NNZ;
    #[inline]
    fn to_usize(self) -> usize {
        self as usize
    }
    #[inline]
    fn from_u64(v: u64) -> Self {
        v
    }
    fn slice(s: &[Self]) -> OffsetSlice<'_> {
        OffsetSlice::W64(s)
    }
}

/// Row offsets of either width, borrowed (what code that is not generic over [`Offset`] reads).
#[derive(Clone, Copy, Debug)]
pub enum OffsetSlice<'a> {
    W32(&'a [u32]),
    W64(&'a [u64]),
}

impl OffsetSlice<'_> {
    /// Offset `i` as an index.
    #[inline]
    pub fn get(&self, i: usize) -> usize {
        match self {
            OffsetSlice::W32(s) => s[i] as usize,
            OffsetSlice::W64(s) => s[i] as usize,
        }
    }
    /// The number of offsets.
    pub fn len(&self) -> usize {
        match self {
            OffsetSlice::W32(s) => s.len(),
            OffsetSlice::W64(s) => s.len(),
        }
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The width of row offsets: 32 or 64 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum OffsetWidth {
    /// `u32` offsets, nnz ≤ 2^31−1.
    #[serde(rename = "32")]
    W32,
    /// `u64` offsets, nnz ≤ 2^40.
    #[serde(rename = "64")]
    W64,
}

impl OffsetWidth {
    /// 32 or 64.
    pub fn bits(self) -> u32 {
        match self {
            OffsetWidth::W32 => 32,
            OffsetWidth::W64 => 64,
        }
    }
    /// Bytes of one offset.
    pub fn bytes(self) -> usize {
        self.bits() as usize / 8
    }
    /// The largest nnz offsets of this width hold.
    pub fn max_nnz(self) -> u64 {
        match self {
            OffsetWidth::W32 => MAX_INDEX,
            OffsetWidth::W64 => MAX_WIDE_NNZ,
        }
    }
}

/// Which row offsets a plan uses ([`crate::PlanOptions::offsets`], `--offsets`): `Auto` (32-bit
/// when nnz ≤ 2^31−1, 64-bit above), or one width forced (64 on a small matrix: the tests and
/// the A/B of docs/offsets.md; 32 on a matrix above 2^31−1 nonzeros is an error).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Offsets {
    #[default]
    Auto,
    Forced(OffsetWidth),
}

impl Offsets {
    /// The width for a matrix of `nnz` entries; a forced width that cannot hold them is
    /// [`crate::Error::TooLarge`] (32 bits) or [`crate::Error::InvalidArgument`] (64 bits).
    pub fn width_for(self, nnz: usize) -> crate::Result<OffsetWidth> {
        let w = match self {
            Offsets::Auto if nnz as u64 <= MAX_INDEX => OffsetWidth::W32,
            Offsets::Auto => OffsetWidth::W64,
            Offsets::Forced(w) => w,
        };
        crate::error::check_nnz(w, nnz as u64)?;
        Ok(w)
    }
}

impl Display for Offsets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Offsets::Auto => f.write_str("auto"),
            Offsets::Forced(w) => write!(f, "{}", w.bits()),
        }
    }
}

impl FromStr for Offsets {
    type Err = crate::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Offsets::Auto),
            "32" | "u32" => Ok(Offsets::Forced(OffsetWidth::W32)),
            "64" | "u64" => Ok(Offsets::Forced(OffsetWidth::W64)),
            other => Err(crate::Error::InvalidArgument(format!(
                "unknown row offsets '{other}': expected 32, 64 or auto"
            ))),
        }
    }
}

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

/// How a layout stores its matrix values, apart from the precision of x, y and the
/// accumulation (issue #25, docs/precision.md): `Same` (the vectors' precision, the default),
/// or narrower: `F16` and `Bf16` under f32 vectors, `F32` under f64 vectors. The kernels that
/// support a narrower storage widen each value exactly as they load it; the oracle computes from
/// the stored values ([`crate::matrix::round_values`]).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ValueStorage {
    /// The vectors' precision.
    #[default]
    Same,
    /// IEEE binary16 (f16): 5 exponent bits, 10 fraction bits; finite up to 65504.
    F16,
    /// bfloat16: f32's 8 exponent bits, 7 fraction bits.
    Bf16,
    /// f32, under f64 vectors.
    F32,
}

impl ValueStorage {
    /// The narrower storages.
    pub const NARROW: [ValueStorage; 3] =
        [ValueStorage::F16, ValueStorage::Bf16, ValueStorage::F32];

    /// Its name in a precision mode and the `values=` key: `same`, `f16`, `bf16`, `f32`.
    pub fn name(self) -> &'static str {
        match self {
            ValueStorage::Same => "same",
            ValueStorage::F16 => "f16",
            ValueStorage::Bf16 => "bf16",
            ValueStorage::F32 => "f32",
        }
    }

    /// Bytes of one stored value under vectors of precision `vectors`.
    pub fn bytes(self, vectors: Precision) -> usize {
        match self {
            ValueStorage::Same => vectors.bytes(),
            ValueStorage::F16 | ValueStorage::Bf16 => 2,
            ValueStorage::F32 => 4,
        }
    }

    /// Whether values stored this way go with x and y of precision `vectors` (narrower than
    /// them by one step: f16 and bf16 under f32, f32 under f64).
    pub fn fits(self, vectors: Precision) -> bool {
        matches!(
            (self, vectors),
            (ValueStorage::Same, _)
                | (ValueStorage::F16 | ValueStorage::Bf16, Precision::F32)
                | (ValueStorage::F32, Precision::F64)
        )
    }

    /// The largest finite stored value (`f64::MAX` for `Same`).
    pub fn max_finite(self) -> f64 {
        match self {
            ValueStorage::Same => f64::MAX,
            ValueStorage::F16 => half::f16::MAX.to_f64(),
            ValueStorage::Bf16 => half::bf16::MAX.to_f64(),
            ValueStorage::F32 => f32::MAX as f64,
        }
    }

    /// `v` rounded to the storage (round to nearest, ties to even) and widened back, exactly,
    /// to `T`. `v` is first a `T` (the matrix's value), so f16 and bf16 round from f32, f32 from
    /// f64; values past [`ValueStorage::max_finite`] become infinite (callers refuse them first).
    pub fn round<T: Scalar>(self, v: T) -> T {
        match self {
            ValueStorage::Same => v,
            ValueStorage::F16 => T::from_f64(half::f16::from_f32(v.to_f64() as f32).to_f64()),
            ValueStorage::Bf16 => T::from_f64(half::bf16::from_f32(v.to_f64() as f32).to_f64()),
            ValueStorage::F32 => T::from_f64(v.to_f64() as f32 as f64),
        }
    }

    /// The 16 bits of an f16 or bf16 storage of `v` (a value [`ValueStorage::round`] left
    /// unchanged), what a kernel of that storage reads; `None` for the other storages.
    pub fn bits16<T: Scalar>(self, v: T) -> Option<u16> {
        let f = v.to_f64() as f32;
        match self {
            ValueStorage::F16 => Some(half::f16::from_f32(f).to_bits()),
            ValueStorage::Bf16 => Some(half::bf16::from_f32(f).to_bits()),
            _ => None,
        }
    }
}

impl ValueStorage {
    /// The value whose 16 bits a kernel of this storage reads, widened as the prelude's
    /// `widen_val` widens it (bf16: the bits above 16 zero bits, an f32; f16: IEEE binary16 to
    /// f32, subnormals included): the host twin of the device conversion, `None` for the other
    /// storages.
    pub fn widen16(self, bits: u16) -> Option<f32> {
        match self {
            ValueStorage::Bf16 => Some(f32::from_bits(u32::from(bits) << 16)),
            ValueStorage::F16 => Some(half::f16::from_bits(bits).to_f32()),
            _ => None,
        }
    }
}

impl Display for ValueStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ValueStorage {
    type Err = crate::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "same" => Ok(ValueStorage::Same),
            "f16" | "fp16" | "half" => Ok(ValueStorage::F16),
            "bf16" => Ok(ValueStorage::Bf16),
            "f32" => Ok(ValueStorage::F32),
            other => Err(crate::Error::InvalidArgument(format!(
                "unknown value storage '{other}': expected same, f16, bf16 or f32"
            ))),
        }
    }
}

/// A precision mode (issue #25): the precision of x, y and the accumulation, and how the matrix
/// values are stored. Written `f32`, `f64` (values as the vectors) or `STORAGE-VECTORS`:
/// `f16-f32`, `bf16-f32`, `f32-f64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PrecisionMode {
    /// x, y and the accumulation.
    pub vectors: Precision,
    /// The matrix values.
    pub values: ValueStorage,
}

impl PrecisionMode {
    /// Every mode, in listing order.
    pub const ALL: [PrecisionMode; 5] = [
        PrecisionMode::same(Precision::F64),
        PrecisionMode::same(Precision::F32),
        PrecisionMode {
            vectors: Precision::F64,
            values: ValueStorage::F32,
        },
        PrecisionMode {
            vectors: Precision::F32,
            values: ValueStorage::Bf16,
        },
        PrecisionMode {
            vectors: Precision::F32,
            values: ValueStorage::F16,
        },
    ];

    /// Values stored as the vectors.
    pub const fn same(vectors: Precision) -> Self {
        PrecisionMode {
            vectors,
            values: ValueStorage::Same,
        }
    }
}

impl From<Precision> for PrecisionMode {
    fn from(p: Precision) -> Self {
        PrecisionMode::same(p)
    }
}

impl Display for PrecisionMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.values {
            ValueStorage::Same => write!(f, "{}", self.vectors),
            v => write!(f, "{v}-{}", self.vectors),
        }
    }
}

impl FromStr for PrecisionMode {
    type Err = crate::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        let Some((values, vectors)) = t.split_once('-') else {
            return Ok(PrecisionMode::same(t.parse()?));
        };
        let bad = || {
            crate::Error::InvalidArgument(format!(
                "unknown precision mode '{s}': expected f32, f64, f16-f32, bf16-f32 or f32-f64"
            ))
        };
        let vectors: Precision = vectors.parse().map_err(|_| bad())?;
        let values: ValueStorage = values.parse().map_err(|_| bad())?;
        let values = if values.name() == vectors.name() {
            ValueStorage::Same
        } else {
            values
        };
        if !values.fits(vectors) {
            return Err(bad());
        }
        Ok(PrecisionMode { vectors, values })
    }
}
