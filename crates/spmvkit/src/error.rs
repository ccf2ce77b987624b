//! The library's typed error. Every failure on user input or a device ends here, never in a
//! panic: each variant names the problem and, where there is one, the place (file and line,
//! array and index).

use std::path::PathBuf;

/// Result with the library's [`enum@Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A dimension or nnz beyond the 32-bit index range.
    #[error("{what} = {value} exceeds the 32-bit index limit of 2^31-1 = {limit}", limit = crate::MAX_INDEX)]
    TooLarge { what: &'static str, value: u64 },

    /// A sparse structure that breaks its invariants (pointers, index order or bounds).
    #[error("invalid {format} matrix: {detail}")]
    InvalidStructure {
        format: &'static str,
        detail: String,
    },

    /// Vector or matrix dimensions that do not agree.
    #[error("dimension mismatch: {what}: expected {expected}, got {got}")]
    DimensionMismatch {
        what: String,
        expected: usize,
        got: usize,
    },

    /// A Matrix Market (or other text) input that cannot be parsed.
    #[error("{}line {line}: {msg}", path.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default())]
    Parse {
        path: Option<PathBuf>,
        line: u64,
        msg: String,
    },

    /// An input that is well formed but uses a feature spmvkit does not support.
    #[error("{}{msg}", path.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default())]
    Unsupported { path: Option<PathBuf>, msg: String },

    /// A size estimate above the memory the process may still use (checked before allocating).
    #[error(
        "{what} needs about {} of memory, but only {} is available ({origin})",
        crate::memory::Bytes(*needed),
        crate::memory::Bytes(*available)
    )]
    MemoryLimit {
        what: String,
        needed: u64,
        available: u64,
        origin: &'static str,
    },

    /// An allocation the system refused.
    #[error("out of memory: allocating {} for {what} failed", crate::memory::Bytes(*bytes))]
    AllocFailed { what: String, bytes: u64 },

    /// A binary cache file that is damaged, stale or of another version.
    #[error("{}: bad spmvkit cache: {msg}", path.display())]
    Cache { path: PathBuf, msg: String },

    /// An operating-system I/O failure.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A generator specification that cannot be understood.
    #[error("bad GEN-SPEC '{spec}': {msg}")]
    GenSpec { spec: String, msg: String },

    /// A method name that is not registered.
    #[error("unknown method '{name}'; available: {available}")]
    UnknownMethod { name: String, available: String },

    /// A method parameter that is unknown or has a bad value.
    #[error("method {method}: parameter '{key}': {msg}")]
    Param {
        method: String,
        key: String,
        msg: String,
    },

    /// A method cannot run this matrix, precision or backend.
    #[error("method {method} cannot run here: {reason}")]
    MethodUnsupported { method: String, reason: String },

    /// Any other invalid argument.
    #[error("{0}")]
    InvalidArgument(String),

    /// No usable GPU, driver or CUDA library.
    #[error("GPU unavailable: {0}")]
    GpuUnavailable(String),

    /// The device has too little free memory for a request.
    #[error("{what} needs {needed} bytes of GPU memory but only {free} are free")]
    DeviceMemory {
        what: String,
        needed: u64,
        free: u64,
    },

    /// NVRTC rejected a kernel; the log says why.
    #[error("NVRTC failed to compile {kernel} for {arch}:\n{log}")]
    Nvrtc {
        kernel: String,
        arch: String,
        log: String,
    },

    /// A CUDA driver, cuSPARSE or launch failure.
    #[error("CUDA error in {context}: {msg}")]
    Cuda { context: String, msg: String },

    /// A result that disagrees with the oracle.
    #[error("wrong result: {0}")]
    Verification(String),

    /// Writing a benchmark report (summary, CSV or plots) failed.
    #[error("report: {0}")]
    Report(String),

    /// Starting or supervising the rank processes of a distributed run failed
    /// ([`dist::launch`](crate::dist::launch)).
    #[error("{0}")]
    Launch(String),
}

impl Error {
    /// An I/O error tied to the path it happened on.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// A structural error in a sparse format.
    pub fn structure(format: &'static str, detail: impl Into<String>) -> Self {
        Error::InvalidStructure {
            format,
            detail: detail.into(),
        }
    }

    /// A CUDA failure with its context.
    pub fn cuda(context: impl Into<String>, err: impl std::fmt::Display) -> Self {
        Error::Cuda {
            context: context.into(),
            msg: err.to_string(),
        }
    }
}

/// Checks nnz against what row offsets of width `w` hold: [`Error::TooLarge`] above 2^31−1 with
/// 32-bit offsets, [`Error::InvalidArgument`] naming the limit above 2^40 with 64-bit ones.
pub fn check_nnz(w: crate::scalar::OffsetWidth, nnz: u64) -> Result<()> {
    match w {
        crate::scalar::OffsetWidth::W32 => check_index_range("nnz", nnz),
        crate::scalar::OffsetWidth::W64 if nnz > crate::scalar::MAX_WIDE_NNZ => {
            Err(Error::InvalidArgument(format!(
                "nnz = {nnz} exceeds the limit of 2^40 = {} with 64-bit row offsets",
                crate::scalar::MAX_WIDE_NNZ
            )))
        }
        crate::scalar::OffsetWidth::W64 => Ok(()),
    }
}

/// Checks that a count fits the 32-bit index range.
pub fn check_index_range(what: &'static str, value: u64) -> Result<()> {
    if value > crate::MAX_INDEX {
        Err(Error::TooLarge { what, value })
    } else {
        Ok(())
    }
}
