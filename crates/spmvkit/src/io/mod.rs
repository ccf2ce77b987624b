//! Matrix Market I/O and the binary matrix cache (issue #2).
//!
//! Implements the NIST Matrix Market exchange format (R. F. Boisvert, R. Pozo, K. Remington,
//! "The Matrix Market Exchange Formats: Initial Design", NISTIR 5935, 1996;
//! <https://math.nist.gov/MatrixMarket/formats.html>): coordinate and array formats; real,
//! integer and pattern fields; general, symmetric, skew-symmetric and Hermitian storage; plain
//! `.mtx` or gzipped `.mtx.gz`. Complex files are rejected with [`Error::Unsupported`](crate::Error).
//!
//! - [`header`]: the banner and size line ([`read_header`]) and the [`MatrixMarketInfo`] counts;
//! - [`reader`]: the chunked parallel parser (mmap, rayon, fast-float2) into [`Csr`];
//! - [`writer`]: `coordinate real general` output with round-trip precision;
//! - [`cache`]: the `*.spmvkit` binary cache and [`load_cached`].
//!
//! ```
//! let a = spmvkit::io::parse_matrix_market_bytes::<f64>(
//!     b"%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 1 4\n2 1 -1\n",
//! ).unwrap();
//! assert_eq!(a.nnz(), 3);
//! ```

pub mod cache;
pub mod header;
pub mod reader;
pub mod writer;

use std::io::BufWriter;
use std::path::Path;

pub use cache::{
    cache_path_for, default_cache_dir, ensure_cache, load_cached, load_cached_any,
    load_cached_any_with_outcome, load_cached_with_outcome, read_cache, read_cache_any,
    read_cache_header, write_cache, CacheHeader, CacheOutcome, CacheRows,
};
pub use header::{
    parse_header_bytes, read_header, MatrixMarketHeader, MatrixMarketInfo, MmField, MmFormat,
    MmSymmetry,
};
pub use reader::{
    matrix_market_info_bytes, parse_matrix_market_bytes, parse_matrix_market_bytes_any,
    read_matrix_market, read_matrix_market_any, read_matrix_market_info,
    read_matrix_market_with_info,
};
pub use writer::{write_matrix_market, write_matrix_market_to};

use crate::error::{Error, Result};
use crate::matrix::{AnyCsr, Csr};
use crate::scalar::{Offset, Scalar};

/// Opens a file for reading; a directory is an [`Error::Io`] saying so (the OS would open it and
/// fail later with a less helpful error).
pub(crate) fn open_file(path: &Path) -> Result<(std::fs::File, u64)> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if meta.is_dir() {
        return Err(Error::io(
            path,
            std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory"),
        ));
    }
    Ok((file, meta.len()))
}

/// Writes a file through `write` under a temporary name beside `path` (`.NAME.tmpPID`, in the
/// same directory so that the rename stays on one file system), synced, then renamed to `path`:
/// readers never see a half-written file, and a failed write leaves none (the temporary file is
/// removed; the error names `path`).
pub(crate) fn write_via_temp(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<()> {
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".into());
    let tmp = path.with_file_name(format!(".{file_name}.tmp{}", std::process::id()));
    let run = || -> std::io::Result<()> {
        let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(&tmp)?);
        write(&mut w)?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    run().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(path, e)
    })
}

/// The output file names [`save`] accepts.
pub const OUTPUT_EXTENSIONS: [&str; 3] = [".mtx", ".mtx.gz", ".spmvkit"];

/// Checks that [`save`] knows how to write `path`: a name ending in `.mtx`, `.mtx.gz` or
/// `.spmvkit` (any case). Call it before producing a large matrix to save.
pub fn check_output_path(path: &Path) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if OUTPUT_EXTENSIONS
        .iter()
        .any(|ext| name.len() > ext.len() && name.ends_with(ext))
    {
        return Ok(());
    }
    Err(Error::InvalidArgument(format!(
        "{}: unknown output format; the file name must end in {}",
        path.display(),
        OUTPUT_EXTENSIONS.join(", ")
    )))
}

/// Loads a matrix by file type: a `*.spmvkit` cache is read directly, anything else is parsed
/// as Matrix Market text (`.mtx`, or gzip-compressed `.mtx.gz`, detected by content).
///
/// ```
/// # fn main() -> spmvkit::Result<()> {
/// let dir = tempfile::tempdir().map_err(|e| spmvkit::Error::io("a temporary directory", e))?;
/// let a = spmvkit::gen::generate_f64("poisson2d:8")?;
/// for name in ["a.mtx", "a.mtx.gz", "a.spmvkit"] {
///     let path = dir.path().join(name);
///     spmvkit::io::save(&path, &a)?;
///     assert_eq!(spmvkit::io::load::<f64>(&path)?, a);
/// }
/// assert!(spmvkit::io::save(dir.path().join("a.txt"), &a).is_err());
/// # Ok(())
/// # }
/// ```
pub fn load<T: Scalar>(path: impl AsRef<Path>) -> Result<Csr<T>> {
    let path = path.as_ref();
    if cache::is_cache_path(path) {
        read_cache(path)
    } else {
        read_matrix_market(path)
    }
}

/// [`load`] in the width the matrix needs (docs/offsets.md): 64-bit row offsets for a Matrix
/// Market file of more than 2^31−1 nonzeros or a version 2 cache, 32-bit otherwise.
pub fn load_any<T: Scalar>(path: impl AsRef<Path>) -> Result<AnyCsr<T>> {
    let path = path.as_ref();
    if cache::is_cache_path(path) {
        read_cache_any(path)
    } else {
        read_matrix_market_any(path)
    }
}

/// Writes a matrix by file type: `*.spmvkit` as a binary cache (format version 1 for 32-bit row
/// offsets, 2 for 64-bit ones), `*.mtx` as Matrix Market text, `*.mtx.gz` gzip-compressed; any
/// other name is refused ([`check_output_path`]). The file appears whole or not at all
/// (written under a temporary name and renamed).
pub fn save<T: Scalar, O: Offset>(path: impl AsRef<Path>, a: &Csr<T, O>) -> Result<()> {
    let path = path.as_ref();
    check_output_path(path)?;
    if cache::is_cache_path(path) {
        write_cache(path, a, None)
    } else {
        write_matrix_market(path, a)
    }
}

/// [`save`] of a matrix of either width ([`load_any`] reads it back in the same width from a
/// `.spmvkit` cache).
pub fn save_any<T: Scalar>(path: impl AsRef<Path>, a: &AnyCsr<T>) -> Result<()> {
    match a {
        AnyCsr::W32(a) => save(path, a),
        AnyCsr::W64(a) => save(path, a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write that fails halfway leaves neither the file nor its temporary name; one that
    /// succeeds replaces the file whole.
    #[test]
    fn a_failed_write_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.mtx");
        let e = write_via_temp(&path, |w| {
            std::io::Write::write_all(w, b"%%MatrixMarket half a file")?;
            Err(std::io::Error::other("the disk filled up"))
        })
        .unwrap_err();
        assert!(
            e.to_string().contains("a.mtx") && e.to_string().contains("disk filled"),
            "{e}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        write_via_temp(&path, |w| std::io::Write::write_all(w, b"whole")).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"whole");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
