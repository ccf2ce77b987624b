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

use std::path::Path;

pub use cache::{
    cache_path_for, default_cache_dir, load_cached, load_cached_with_outcome, read_cache,
    read_cache_header, write_cache, CacheHeader, CacheOutcome,
};
pub use header::{
    parse_header_bytes, read_header, MatrixMarketHeader, MatrixMarketInfo, MmField, MmFormat,
    MmSymmetry,
};
pub use reader::{
    matrix_market_info_bytes, parse_matrix_market_bytes, read_matrix_market,
    read_matrix_market_info, read_matrix_market_with_info,
};
pub use writer::{write_matrix_market, write_matrix_market_to};

use crate::error::Result;
use crate::matrix::Csr;
use crate::scalar::Scalar;

/// Loads a matrix by file type: a `*.spmvkit` cache is read directly, anything else is parsed
/// as Matrix Market text (`.mtx`, or gzip-compressed `.mtx.gz`, detected by content).
pub fn load<T: Scalar>(path: impl AsRef<Path>) -> Result<Csr<T>> {
    let path = path.as_ref();
    if cache::is_cache_path(path) {
        read_cache(path)
    } else {
        read_matrix_market(path)
    }
}

/// Writes a matrix by file type: `*.spmvkit` as a binary cache, anything else as Matrix Market
/// text (gzip-compressed when the name ends in `.gz`).
pub fn save<T: Scalar>(path: impl AsRef<Path>, a: &Csr<T>) -> Result<()> {
    let path = path.as_ref();
    if cache::is_cache_path(path) {
        write_cache(path, a, None)
    } else {
        write_matrix_market(path, a)
    }
}
