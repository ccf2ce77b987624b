//! The Matrix Market banner and size line (NIST Matrix Market exchange format, "The Matrix
//! Market Exchange Formats: Initial Design", Boisvert, Pozo & Remington, 1996, §2–§3).
//!
//! A file opens with `%%MatrixMarket matrix <format> <field> <symmetry>`, then any number of `%`
//! comment lines, then the size line: `M N L` (coordinate: rows, columns, stored entries) or
//! `M N` (array). Keywords are matched case-insensitively, as NIST's `mmio.c` does. This module
//! parses that prologue from a byte buffer or from the head of a (possibly gzipped) file, and
//! defines [`MatrixMarketInfo`], the counts reported by `spmv info`.

use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde::Serialize;

use crate::error::{check_index_range, Error, Result};

/// How the entries are laid out: sparse triplets or a dense column-major array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MmFormat {
    Coordinate,
    Array,
}

/// The value type of the entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MmField {
    Real,
    Integer,
    Pattern,
    Complex,
}

/// Which part of the matrix is stored: all of it, or the lower triangle of a (skew-)symmetric
/// or Hermitian matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MmSymmetry {
    General,
    Symmetric,
    SkewSymmetric,
    Hermitian,
}

impl MmFormat {
    pub fn name(self) -> &'static str {
        match self {
            MmFormat::Coordinate => "coordinate",
            MmFormat::Array => "array",
        }
    }
}

impl MmField {
    pub fn name(self) -> &'static str {
        match self {
            MmField::Real => "real",
            MmField::Integer => "integer",
            MmField::Pattern => "pattern",
            MmField::Complex => "complex",
        }
    }
}

impl MmSymmetry {
    pub fn name(self) -> &'static str {
        match self {
            MmSymmetry::General => "general",
            MmSymmetry::Symmetric => "symmetric",
            MmSymmetry::SkewSymmetric => "skew-symmetric",
            MmSymmetry::Hermitian => "hermitian",
        }
    }

    /// Whether only the lower triangle is stored and the mirror must be expanded.
    pub fn is_mirrored(self) -> bool {
        self != MmSymmetry::General
    }
}

macro_rules! display_by_name {
    ($($t:ty),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    )*};
}
display_by_name!(MmFormat, MmField, MmSymmetry);

/// The banner and size line of a Matrix Market file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MatrixMarketHeader {
    pub format: MmFormat,
    pub field: MmField,
    pub symmetry: MmSymmetry,
    pub nrows: u64,
    pub ncols: u64,
    /// Entries the file declares it stores: `L` of a coordinate file; for an array file the
    /// number of stored values (`M·N`, or the lower triangle for symmetric kinds).
    pub declared_entries: u64,
    /// 1-based line number of the size line; the body starts on the next line.
    pub size_line: u64,
    /// Byte offset of the body (the first byte after the size line).
    #[serde(skip)]
    pub body_offset: usize,
}

/// Counts of a whole Matrix Market file, for `spmv info` and the INDEX checks.
///
/// SuiteSparse's `nnz` counts the full (mirrored) matrix without explicit zeros: that is
/// [`nnz_nonzero`](Self::nnz_nonzero). [`nnz`](Self::nnz) is what a loaded [`Csr`](crate::Csr)
/// holds: mirror expanded, duplicates summed, explicit zeros kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MatrixMarketInfo {
    pub header: MatrixMarketHeader,
    /// Entries stored in the file (`L` once checked against the body).
    pub stored: u64,
    /// Stored entries on the diagonal.
    pub stored_diagonal: u64,
    /// Entries after expanding the mirror of a symmetric kind, before summing duplicates.
    pub expanded: u64,
    /// Entries after expansion and summing duplicates (the CSR nnz).
    pub nnz: u64,
    /// Expanded entries merged into another at the same position (`expanded - nnz`).
    pub duplicates: u64,
    /// Entries of the summed matrix whose value is exactly zero (complex: both parts zero).
    pub explicit_zeros: u64,
    /// `nnz - explicit_zeros`: SuiteSparse's nnz.
    pub nnz_nonzero: u64,
}

/// Builds a parse error.
pub(crate) fn perr(path: Option<&Path>, line: u64, msg: impl Into<String>) -> Error {
    Error::Parse {
        path: path.map(Path::to_path_buf),
        line,
        msg: msg.into(),
    }
}

/// Builds an "unsupported" error.
pub(crate) fn unsupported(path: Option<&Path>, msg: impl Into<String>) -> Error {
    Error::Unsupported {
        path: path.map(Path::to_path_buf),
        msg: msg.into(),
    }
}

/// Shows at most 60 characters of a line, for error messages.
pub(crate) fn excerpt(line: &[u8]) -> String {
    let s = String::from_utf8_lossy(line);
    let s = s.trim_end_matches(['\r', '\n']);
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(60).collect::<String>())
    } else {
        s.to_string()
    }
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| b.is_ascii_whitespace())
}

/// Parses the banner tokens of line 1.
fn parse_banner(path: Option<&Path>, line: &[u8]) -> Result<(MmFormat, MmField, MmSymmetry)> {
    let text =
        std::str::from_utf8(line).map_err(|_| perr(path, 1, "the banner is not ASCII text"))?;
    let toks: Vec<String> = text
        .split_ascii_whitespace()
        .map(|t| t.to_ascii_lowercase())
        .collect();
    if toks.first().map(String::as_str) != Some("%%matrixmarket") {
        return Err(perr(
            path,
            1,
            format!(
                "missing '%%MatrixMarket' banner: the first line is '{}'",
                excerpt(line)
            ),
        ));
    }
    if toks.len() != 5 {
        return Err(perr(
            path,
            1,
            format!(
                "the banner needs 5 words ('%%MatrixMarket matrix <format> <field> <symmetry>'), found {}",
                toks.len()
            ),
        ));
    }
    let unknown = |what: &str, tok: &str, expected: &str| {
        perr(
            path,
            1,
            format!("unknown {what} '{tok}': expected {expected}"),
        )
    };
    if toks[1] != "matrix" {
        return Err(unknown("object", &toks[1], "'matrix'"));
    }
    let format = match toks[2].as_str() {
        "coordinate" => MmFormat::Coordinate,
        "array" => MmFormat::Array,
        other => return Err(unknown("format", other, "'coordinate' or 'array'")),
    };
    let field = match toks[3].as_str() {
        "real" => MmField::Real,
        "integer" => MmField::Integer,
        "pattern" => MmField::Pattern,
        "complex" => MmField::Complex,
        other => return Err(unknown("field", other, "real, integer, pattern or complex")),
    };
    let symmetry = match toks[4].as_str() {
        "general" => MmSymmetry::General,
        "symmetric" => MmSymmetry::Symmetric,
        "skew-symmetric" => MmSymmetry::SkewSymmetric,
        "hermitian" => MmSymmetry::Hermitian,
        other => {
            let expected = "general, symmetric, skew-symmetric or hermitian";
            return Err(unknown("symmetry", other, expected));
        }
    };
    if field == MmField::Pattern && format == MmFormat::Array {
        return Err(perr(path, 1, "'array pattern' is not a valid combination"));
    }
    if field == MmField::Pattern
        && matches!(symmetry, MmSymmetry::SkewSymmetric | MmSymmetry::Hermitian)
    {
        return Err(perr(
            path,
            1,
            format!("a pattern matrix cannot be {symmetry}"),
        ));
    }
    Ok((format, field, symmetry))
}

/// Parses one unsigned decimal size; a size beyond the 32-bit index limit is a parse error of
/// the size line (naming the file and the line, as every parse error does).
fn parse_size(path: Option<&Path>, line: u64, tok: &str, what: &'static str) -> Result<u64> {
    if tok.is_empty() || !tok.bytes().all(|b| b.is_ascii_digit()) {
        return Err(perr(
            path,
            line,
            format!("bad size line: {what} '{tok}' is not a non-negative integer"),
        ));
    }
    let v = tok.parse::<u64>().unwrap_or(u64::MAX);
    check_index_range(what, v).map_err(|e| size_limit(path, line, e))?;
    Ok(v)
}

/// A size-line figure beyond the index limit, as a parse error at that line.
fn size_limit(path: Option<&Path>, line: u64, e: Error) -> Error {
    perr(path, line, format!("bad size line: {e}"))
}

/// Parses the size line into (rows, cols, declared entries).
fn parse_size_line(
    path: Option<&Path>,
    lineno: u64,
    line: &[u8],
    format: MmFormat,
    symmetry: MmSymmetry,
) -> Result<(u64, u64, u64)> {
    let text = std::str::from_utf8(line)
        .map_err(|_| perr(path, lineno, "bad size line: not ASCII text"))?;
    let toks: Vec<&str> = text.split_ascii_whitespace().collect();
    let want = match format {
        MmFormat::Coordinate => 3,
        MmFormat::Array => 2,
    };
    if toks.len() != want {
        let shape = if want == 3 {
            "'rows cols entries'"
        } else {
            "'rows cols'"
        };
        return Err(perr(
            path,
            lineno,
            format!(
                "bad size line '{}': expected {want} numbers {shape} for {format} format",
                excerpt(line)
            ),
        ));
    }
    let nrows = parse_size(path, lineno, toks[0], "rows")?;
    let ncols = parse_size(path, lineno, toks[1], "columns")?;
    if symmetry.is_mirrored() && nrows != ncols {
        return Err(perr(
            path,
            lineno,
            format!("a {symmetry} matrix must be square, but the size line says {nrows}x{ncols}"),
        ));
    }
    let entries = match format {
        MmFormat::Coordinate => parse_size(path, lineno, toks[2], "nnz")?,
        MmFormat::Array => {
            let n = nrows;
            let count = match symmetry {
                MmSymmetry::General => nrows * ncols,
                MmSymmetry::Symmetric | MmSymmetry::Hermitian => n * (n + 1) / 2,
                MmSymmetry::SkewSymmetric => n * n.saturating_sub(1) / 2,
            };
            check_index_range("nnz", count).map_err(|e| size_limit(path, lineno, e))?;
            count
        }
    };
    Ok((nrows, ncols, entries))
}

/// Parses the prologue of an in-memory Matrix Market text. `path` only labels errors.
pub fn parse_header_bytes(path: Option<&Path>, bytes: &[u8]) -> Result<MatrixMarketHeader> {
    if bytes.is_empty() {
        return Err(perr(
            path,
            1,
            "empty file: expected a '%%MatrixMarket' banner",
        ));
    }
    let mut pos = 0usize;
    let mut lineno = 0u64;
    let mut banner = None;
    while pos < bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |k| pos + k);
        let line = &bytes[pos..end];
        lineno += 1;
        pos = (end + 1).min(bytes.len());
        let Some((format, field, symmetry)) = banner else {
            banner = Some(parse_banner(path, line)?);
            continue;
        };
        if line.first() == Some(&b'%') || is_blank(line) {
            continue;
        }
        let (nrows, ncols, declared_entries) =
            parse_size_line(path, lineno, line, format, symmetry)?;
        return Ok(MatrixMarketHeader {
            format,
            field,
            symmetry,
            nrows,
            ncols,
            declared_entries,
            size_line: lineno,
            body_offset: if end < bytes.len() { end + 1 } else { end },
        });
    }
    Err(perr(
        path,
        lineno + 1,
        "missing size line: the file ends after the banner and comments",
    ))
}

/// Reads only the banner and size line of a `.mtx` or `.mtx.gz` file (gzip is detected by its
/// magic bytes), without reading the body.
pub fn read_header(path: impl AsRef<Path>) -> Result<MatrixMarketHeader> {
    let path = path.as_ref();
    let (file, _) = super::open_file(path)?;
    let mut reader = BufReader::new(file);
    let is_gz = reader
        .fill_buf()
        .map_err(|e| Error::io(path, e))?
        .starts_with(&super::reader::GZIP_MAGIC);
    let mut src: Box<dyn BufRead> = if is_gz {
        Box::new(BufReader::new(flate2::bufread::MultiGzDecoder::new(reader)))
    } else {
        Box::new(reader)
    };
    // Collect lines up to and including the first non-comment line after the banner.
    let mut head = Vec::new();
    let mut nlines = 0u64;
    loop {
        let before = head.len();
        let n = (&mut src)
            .take(1 << 20)
            .read_until(b'\n', &mut head)
            .map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        nlines += 1;
        let line = &head[before..];
        if nlines > 1 && line.first() != Some(&b'%') && !is_blank(line) {
            break;
        }
        if nlines == 1 {
            // Fail early on a non-banner first line (e.g. a binary file).
            parse_banner(Some(path), line)?;
        }
    }
    parse_header_bytes(Some(path), &head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_banner_and_size() {
        let h = parse_header_bytes(
            None,
            b"%%MatrixMarket MATRIX Coordinate Real Symmetric\n% c\n\n3 3 4\n1 1 1\n",
        )
        .unwrap();
        assert_eq!(h.format, MmFormat::Coordinate);
        assert_eq!(h.symmetry, MmSymmetry::Symmetric);
        assert_eq!(
            (h.nrows, h.ncols, h.declared_entries, h.size_line),
            (3, 3, 4, 4)
        );
        let a = parse_header_bytes(
            None,
            b"%%MatrixMarket matrix array real skew-symmetric\n3 3\n",
        )
        .unwrap();
        assert_eq!(a.declared_entries, 3);
    }

    #[test]
    fn rejects_bad_prologues() {
        for (text, line) in [
            (&b""[..], 1),
            (b"hello\n", 1),
            (b"%%MatrixMarket matrix coordinate real\n", 1),
            (
                b"%%MatrixMarket matrix coordinate real general\n% only\n",
                3,
            ),
            (b"%%MatrixMarket matrix coordinate real general\n3 3\n", 2),
            (
                b"%%MatrixMarket matrix coordinate real symmetric\n3 4 1\n",
                2,
            ),
            (b"%%MatrixMarket matrix coordinate real general\n3 x 1\n", 2),
        ] {
            match parse_header_bytes(None, text) {
                Err(Error::Parse { line: l, .. }) => assert_eq!(l, line, "{text:?}"),
                other => panic!("{text:?}: {other:?}"),
            }
        }
        assert!(matches!(
            parse_header_bytes(
                None,
                b"%%MatrixMarket matrix coordinate real general\n3000000000 1 0\n"
            ),
            Err(Error::Parse { line: 2, ref msg, .. }) if msg.contains("32-bit index limit")
        ));
    }
}
