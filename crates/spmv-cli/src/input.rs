//! Resolving a MATRIX argument: a file (Matrix Market or cache) or a GEN-SPEC.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Result};
use spmvkit::bench::MatrixSource;
use spmvkit::{AnyCsr, Csr, Idx, Offset, PrepareFor};

/// Where a matrix came from, for reports.
pub struct Loaded<T, O: Offset = Idx> {
    pub name: String,
    pub matrix: Csr<T, O>,
    pub seconds: f64,
}

/// Loads MATRIX in precision T: a file through the binary cache, or a generated GEN-SPEC.
pub fn load<T: PrepareFor>(arg: &str, use_cache: bool) -> Result<Loaded<T>> {
    load_with(arg, |s| s.load::<T>(use_cache))
}

/// [`load`] with row offsets of type `O` (docs/offsets.md: a GEN-SPEC past 2^31−1 nonzeros).
pub fn load_as<T: PrepareFor, O: Offset>(arg: &str, use_cache: bool) -> Result<Loaded<T, O>> {
    load_with(arg, |s| s.load_as::<T, O>(use_cache))
}

/// A loaded matrix in the width it needs ([`load_any`]).
pub enum LoadedAny<T> {
    W32(Loaded<T>),
    W64(Loaded<T, u64>),
}

/// [`load`] in the width the matrix needs (docs/offsets.md): 64-bit row offsets for a file or
/// GEN-SPEC of more than 2^31−1 nonzeros, or a 64-bit cache; 32-bit otherwise.
pub fn load_any<T: PrepareFor>(arg: &str, use_cache: bool) -> Result<LoadedAny<T>> {
    let t = Instant::now();
    Ok(
        match MatrixSource::from_arg(arg)?.load_any::<T>(use_cache)? {
            AnyCsr::W32(a) => LoadedAny::W32(named(arg, a, t)),
            AnyCsr::W64(a) => LoadedAny::W64(named(arg, a, t)),
        },
    )
}

fn load_with<T: PrepareFor, O: Offset>(
    arg: &str,
    load: impl FnOnce(&MatrixSource) -> spmvkit::Result<Csr<T, O>>,
) -> Result<Loaded<T, O>> {
    let t = Instant::now();
    let matrix = load(&MatrixSource::from_arg(arg)?)?;
    Ok(named(arg, matrix, t))
}

/// The record of a matrix loaded from `arg` since `t`.
fn named<T, O: Offset>(arg: &str, matrix: Csr<T, O>, t: Instant) -> Loaded<T, O> {
    let path = Path::new(arg);
    let name = path
        .file_name()
        .filter(|_| path.exists())
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| arg.to_string());
    Loaded {
        name,
        matrix,
        seconds: t.elapsed().as_secs_f64(),
    }
}

/// Loads MATRIX as [`load`] does and refuses a matrix that is not square, with the message
/// `{need}; NAME is MxN` (`need` says who needs a square matrix, e.g. "CG needs a square matrix").
pub fn load_square<T: PrepareFor>(arg: &str, use_cache: bool, need: &str) -> Result<Loaded<T>> {
    let loaded = load::<T>(arg, use_cache)?;
    let a = &loaded.matrix;
    if a.nrows() != a.ncols() {
        bail!("{need}; {} is {}x{}", loaded.name, a.nrows(), a.ncols());
    }
    Ok(loaded)
}
