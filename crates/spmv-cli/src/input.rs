//! Resolving a MATRIX argument: a file (Matrix Market or cache) or a GEN-SPEC.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Result};
use spmvkit::{Csr, PrepareFor};

/// Where a matrix came from, for reports.
pub struct Loaded<T> {
    pub name: String,
    pub matrix: Csr<T>,
    pub seconds: f64,
}

/// Loads MATRIX in precision T: a file through the binary cache, or a generated GEN-SPEC.
pub fn load<T: PrepareFor>(arg: &str, use_cache: bool) -> Result<Loaded<T>> {
    let t = Instant::now();
    let path = Path::new(arg);
    let matrix = if path.exists() {
        if use_cache {
            spmvkit::io::load_cached::<T>(path, None)
        } else {
            spmvkit::io::load::<T>(path)
        }?
    } else if spmvkit::gen::looks_like_spec(arg) || arg.contains(':') {
        // A malformed spec gets the generator's own explanation.
        spmvkit::gen::generate::<T>(arg)?
    } else {
        bail!(
            "'{arg}' is neither an existing file nor a GEN-SPEC (like poisson3d:64); \
             `spmv gen --help` lists the generators"
        );
    };
    let name = path
        .file_name()
        .filter(|_| path.exists())
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| arg.to_string());
    Ok(Loaded {
        name,
        matrix,
        seconds: t.elapsed().as_secs_f64(),
    })
}
