//! The parallel Matrix Market reader (NIST Matrix Market exchange format, Boisvert, Pozo &
//! Remington 1996, §3: coordinate and array formats; real, integer, pattern fields; general,
//! symmetric, skew-symmetric and Hermitian storage).
//!
//! The file is memory-mapped (or, if gzipped, inflated into memory), the prologue is parsed
//! serially ([`super::header`]), and the body is cut into chunks at newline boundaries that
//! rayon parses in parallel: hand-rolled decimal parsing for indices, `fast-float2` for reals.
//! Each chunk counts its lines, so a prefix sum turns chunk-local line numbers into exact
//! 1-based file lines for errors. Chunks keep their triplets; the CSR is then built straight from
//! them: a row count, a deterministic parallel scatter over row ranges (file order within each
//! row, mirror entries of symmetric kinds expanded), and a per-row stable sort that sums
//! duplicates. Explicit zeros are kept.
//!
//! Policy choices, beyond the format's text:
//! - keywords are case-insensitive, blank lines and `%` lines are skipped anywhere, `\r\n` line
//!   ends are accepted, and extra text after an entry's fields is an error, except that numeric
//!   fields after the indices of a `pattern` entry are ignored (SuiteSparse's Pajek/Ragusa16 has
//!   them);
//! - `nan`, `inf` and `infinity` (any case, signed) are accepted as real values, as C's `strtod`
//!   in NIST's `mmio.c` reads them, so matrices written by C or MATLAB tools round-trip;
//! - a symmetric, skew-symmetric or Hermitian file must store the lower triangle only: an entry
//!   above the diagonal is an error, as is a diagonal entry of a skew-symmetric file;
//! - a real Hermitian file is read as symmetric; complex files are [`Error::Unsupported`]
//!   (except by [`read_matrix_market_info`], which only counts);
//! - no allocation is sized by the declared entry count: buffers grow with the entries actually
//!   present, so a short file claiming 2·10⁹ entries fails fast without reserving them.

use std::io::Read;
use std::ops::Deref;
use std::path::Path;

use rayon::prelude::*;

use super::header::{excerpt, parse_header_bytes, perr, unsupported, MatrixMarketHeader};
use super::header::{MatrixMarketInfo, MmField, MmFormat, MmSymmetry};
use crate::error::{Error, Result};
use crate::matrix::{sort_merge_row, AnyCsr, Csr};
use crate::memory::{try_vec, try_with_capacity};
use crate::scalar::{Idx, Offset, OffsetWidth, Precision, Scalar, MAX_INDEX};

/// The two bytes every gzip stream starts with.
pub(crate) const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Bytes of a Matrix Market text: a read-only mapping of the file or an inflated buffer.
pub(crate) enum Text {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Deref for Text {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Text::Mapped(m) => m,
            Text::Owned(v) => v,
        }
    }
}

/// Inflates a gzip stream (all members) into memory. The size hint from the gzip trailer is
/// capped by the deflate ratio limit, so a forged trailer cannot force a huge reservation.
pub(crate) fn gunzip(path: Option<&Path>, bytes: &[u8]) -> Result<Vec<u8>> {
    let hint = if bytes.len() >= 18 {
        let t = &bytes[bytes.len() - 4..];
        u32::from_le_bytes([t[0], t[1], t[2], t[3]]) as usize
    } else {
        0
    };
    let cap = hint.min(bytes.len().saturating_mul(1032));
    let mut out = Vec::new();
    // The hint is only a hint: without room for it the buffer grows as it is filled.
    let _ = out.try_reserve_exact(cap);
    if let Err(e) = flate2::read::MultiGzDecoder::new(bytes).read_to_end(&mut out) {
        if e.kind() == std::io::ErrorKind::OutOfMemory {
            return Err(Error::AllocFailed {
                what: format!(
                    "inflating {}",
                    path.map_or_else(|| "a gzip stream".into(), |p| p.display().to_string())
                ),
                bytes: (out.len() as u64).saturating_mul(2),
            });
        }
        let line = 1 + memchr::memchr_iter(b'\n', &out).count() as u64;
        return Err(perr(
            path,
            line,
            format!("corrupt or truncated gzip stream: {e}"),
        ));
    }
    Ok(out)
}

/// Opens a Matrix Market file as text: mapped if plain, inflated if it starts like gzip.
pub(crate) fn open_text(path: &Path) -> Result<Text> {
    let (file, len) = super::open_file(path)?;
    if len == 0 {
        return Ok(Text::Owned(Vec::new()));
    }
    // SAFETY: the mapping is read-only and private to this process; like every mmap-based
    // reader we rely on the file not being truncated by another process while it is parsed.
    let map = unsafe { memmap2::MmapOptions::new().populate().map(&file) }
        .map_err(|e| Error::io(path, e))?;
    if map.starts_with(&GZIP_MAGIC) {
        Ok(Text::Owned(gunzip(Some(path), &map)?))
    } else {
        Ok(Text::Mapped(map))
    }
}

/// What a chunk parser produced: triplets (array format: values only), its line count, and the
/// first error with its chunk-local 0-based line.
struct Chunk<T> {
    rows: Vec<Idx>,
    cols: Vec<Idx>,
    vals: Vec<T>,
    imag: Vec<T>,
    diagonal: u64,
    /// Lines in the chunk (a final line without `\n` counts).
    lines: u64,
    err: Option<(u64, String)>,
}

impl<T> Chunk<T> {
    fn entries(&self) -> usize {
        self.vals.len()
    }
}

/// Static facts the chunk parser needs.
#[derive(Clone, Copy)]
struct Spec {
    format: MmFormat,
    field: MmField,
    symmetry: MmSymmetry,
    nrows: u64,
    ncols: u64,
}

#[inline]
fn skip_blanks(b: &[u8], pos: &mut usize) -> bool {
    let start = *pos;
    while *pos < b.len() && matches!(b[*pos], b' ' | b'\t' | b'\r') {
        *pos += 1;
    }
    *pos > start
}

#[inline]
fn at_line_end(b: &[u8], pos: usize) -> bool {
    pos >= b.len() || b[pos] == b'\n'
}

/// A 1-based index: decimal digits only. Saturates far above the 32-bit range.
#[inline]
fn parse_index(b: &[u8], pos: &mut usize) -> Option<u64> {
    let start = *pos;
    let mut v: u64 = 0;
    while *pos < b.len() {
        let d = b[*pos].wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.saturating_mul(10).saturating_add(d as u64);
        *pos += 1;
    }
    (*pos > start).then_some(v)
}

/// A real value, parsed straight to the target precision.
#[inline]
fn parse_real<T: Scalar>(b: &[u8], pos: &mut usize) -> Option<T> {
    let s = &b[*pos..];
    let (v, n) = if T::PRECISION == Precision::F32 {
        let (v, n) = fast_float2::parse_partial::<f32, _>(s).ok()?;
        (T::from_f64(v as f64), n)
    } else {
        let (v, n) = fast_float2::parse_partial::<f64, _>(s).ok()?;
        (T::from_f64(v), n)
    };
    *pos += n;
    Some(v)
}

/// An integer value: optional sign and decimal digits (any length; beyond i64 it is rounded).
#[inline]
fn parse_integer<T: Scalar>(b: &[u8], pos: &mut usize) -> Option<T> {
    let start = *pos;
    let neg = match b.get(*pos) {
        Some(b'-') => {
            *pos += 1;
            true
        }
        Some(b'+') => {
            *pos += 1;
            false
        }
        _ => false,
    };
    let digits = *pos;
    let mut v: i64 = 0;
    let mut overflow = false;
    while *pos < b.len() && b[*pos].is_ascii_digit() {
        let d = (b[*pos] - b'0') as i64;
        match v.checked_mul(10).and_then(|x| x.checked_add(d)) {
            Some(x) => v = x,
            None => overflow = true,
        }
        *pos += 1;
    }
    if *pos == digits {
        *pos = start;
        return None;
    }
    if overflow {
        let text = std::str::from_utf8(&b[start..*pos]).ok()?;
        return text.parse::<f64>().ok().map(T::from_f64);
    }
    Some(T::from_f64(if neg { -(v as f64) } else { v as f64 }))
}

/// One value of the given field (pattern: 1).
#[inline]
fn parse_value<T: Scalar>(field: MmField, b: &[u8], pos: &mut usize) -> Option<T> {
    match field {
        MmField::Real | MmField::Complex => parse_real(b, pos),
        MmField::Integer => parse_integer(b, pos),
        MmField::Pattern => Some(T::one()),
    }
}

/// The text of the line that starts at `start`, for messages.
fn line_text(b: &[u8], start: usize) -> String {
    let end = memchr::memchr(b'\n', &b[start..]).map_or(b.len(), |k| start + k);
    excerpt(&b[start..end])
}

fn value_name(field: MmField) -> &'static str {
    match field {
        MmField::Integer => "an integer value",
        _ => "a real value",
    }
}

/// Parses one chunk of body lines; stops at the first bad line.
fn parse_chunk<T: Scalar>(b: &[u8], spec: Spec, expect: usize) -> Chunk<T> {
    let coord = spec.format == MmFormat::Coordinate;
    let complex = spec.field == MmField::Complex;
    let mut c = Chunk {
        rows: Vec::with_capacity(if coord { expect } else { 0 }),
        cols: Vec::with_capacity(if coord { expect } else { 0 }),
        vals: Vec::with_capacity(expect),
        imag: Vec::with_capacity(if complex { expect } else { 0 }),
        diagonal: 0,
        lines: 0,
        err: None,
    };
    let mut pos = 0usize;
    while pos < b.len() {
        let start = pos;
        let line = c.lines;
        c.lines += 1;
        skip_blanks(b, &mut pos);
        if at_line_end(b, pos) {
            pos += 1;
            continue;
        }
        if b[pos] == b'%' {
            pos = memchr::memchr(b'\n', &b[pos..]).map_or(b.len(), |k| pos + k + 1);
            continue;
        }
        match parse_line(b, &mut pos, spec, &mut c) {
            Ok(()) => pos += 1,
            Err(msg) => {
                c.err = Some((line, format!("{msg} (line: '{}')", line_text(b, start))));
                return c;
            }
        }
    }
    c
}

/// Parses the fields of one entry line starting at `pos` (first non-blank byte); leaves `pos`
/// on the line's `\n` (or the end).
#[inline]
fn parse_line<T: Scalar>(
    b: &[u8],
    pos: &mut usize,
    spec: Spec,
    c: &mut Chunk<T>,
) -> std::result::Result<(), String> {
    if spec.format == MmFormat::Coordinate {
        let i = parse_index(b, pos).ok_or("expected a row index (a positive integer)")?;
        if !skip_blanks(b, pos) || at_line_end(b, *pos) {
            return Err(if at_line_end(b, *pos) {
                "missing column index".into()
            } else {
                "bad row index: expected a positive integer".into()
            });
        }
        let j = parse_index(b, pos).ok_or("bad column index: expected a positive integer")?;
        if i == 0 || i > spec.nrows {
            return Err(format!("row index {i} out of range 1..={}", spec.nrows));
        }
        if j == 0 || j > spec.ncols {
            return Err(format!("column index {j} out of range 1..={}", spec.ncols));
        }
        match spec.symmetry {
            MmSymmetry::General => {}
            MmSymmetry::SkewSymmetric if i == j => {
                return Err(format!(
                    "diagonal entry ({i}, {j}) in a skew-symmetric matrix (its diagonal is zero \
                     and must not be stored)"
                ))
            }
            sym if i < j => {
                return Err(format!(
                    "entry ({i}, {j}) is above the diagonal: a {sym} Matrix Market file stores \
                     only the lower triangle (row >= column)"
                ))
            }
            _ => {}
        }
        c.rows.push((i - 1) as Idx);
        c.cols.push((j - 1) as Idx);
        c.diagonal += (i == j) as u64;
    }
    if spec.field != MmField::Pattern {
        let had_sep = skip_blanks(b, pos) || spec.format == MmFormat::Array;
        if at_line_end(b, *pos) {
            return Err(format!(
                "missing value: expected {}",
                value_name(spec.field)
            ));
        }
        let v = if had_sep {
            parse_value(spec.field, b, pos)
        } else {
            None
        };
        let v = v.ok_or_else(|| format!("bad value: expected {}", value_name(spec.field)))?;
        c.vals.push(v);
        if spec.field == MmField::Complex {
            if !skip_blanks(b, pos) || at_line_end(b, *pos) {
                return Err("missing imaginary part of a complex value".into());
            }
            let im = parse_real(b, pos).ok_or("bad imaginary part: expected a real value")?;
            c.imag.push(im);
        }
    } else {
        c.vals.push(T::one());
        // Numeric fields after a pattern entry's indices are ignored (SuiteSparse's own
        // Pajek/Ragusa16 is `pattern` with a weight on every line).
        loop {
            let before = *pos;
            if !skip_blanks(b, pos) || at_line_end(b, *pos) {
                break;
            }
            if parse_real::<f64>(b, pos).is_none() {
                *pos = before;
                break;
            }
        }
    }
    skip_blanks(b, pos);
    if !at_line_end(b, *pos) {
        // Undo the half-parsed entry so that counts stay exact.
        if spec.format == MmFormat::Coordinate {
            c.rows.pop();
            c.cols.pop();
        }
        c.vals.pop();
        c.imag.truncate(c.vals.len());
        return Err(format!(
            "unexpected text after the entry: '{}'",
            excerpt(&b[*pos..memchr::memchr(b'\n', &b[*pos..]).map_or(b.len(), |k| *pos + k)])
        ));
    }
    Ok(())
}

/// Splits `body` into up to `n` pieces ending just after a newline.
fn split_chunks(body: &[u8], n: usize) -> Vec<&[u8]> {
    let mut out = Vec::with_capacity(n);
    let mut start = 0usize;
    for k in 1..n {
        let target = body.len() / n * k;
        if target <= start {
            continue;
        }
        match memchr::memchr(b'\n', &body[target..]) {
            Some(off) => {
                let end = target + off + 1;
                out.push(&body[start..end]);
                start = end;
            }
            None => break,
        }
    }
    out.push(&body[start..]);
    out
}

/// The chunk-local 0-based line of the `k`-th (0-based) entry of a chunk.
fn line_of_entry(b: &[u8], k: usize) -> u64 {
    let mut seen = 0usize;
    for (line, text) in b.split(|&x| x == b'\n').enumerate() {
        let t = text.iter().position(|x| !matches!(x, b' ' | b'\t' | b'\r'));
        if let Some(p) = t {
            if text[p] != b'%' {
                if seen == k {
                    return line as u64;
                }
                seen += 1;
            }
        }
    }
    0
}

/// Everything the reader learns from a text: the header and the parsed chunks.
struct Parsed<T> {
    header: MatrixMarketHeader,
    chunks: Vec<Chunk<T>>,
}

/// Parses a Matrix Market text into chunks, checking every line and the entry count.
fn parse_text<T: Scalar>(
    path: Option<&Path>,
    text: &[u8],
    allow_complex: bool,
) -> Result<Parsed<T>> {
    let header = parse_header_bytes(path, text)?;
    if header.field == MmField::Complex && !allow_complex {
        return Err(unsupported(
            path,
            "complex matrices are not supported (spmvkit computes in f32/f64 real arithmetic)",
        ));
    }
    let body = &text[header.body_offset.min(text.len())..];
    let spec = Spec {
        format: header.format,
        field: header.field,
        symmetry: header.symmetry,
        nrows: header.nrows,
        ncols: header.ncols,
    };
    let threads = rayon::current_num_threads().max(1);
    let n = (body.len() / (1 << 20))
        .clamp(1, threads * 16)
        .max(if body.len() > 1 << 16 { threads } else { 1 });
    let pieces = split_chunks(body, n);
    // Average line length from a sample, to size each chunk's buffers close to its need.
    let sample = &body[..body.len().min(1 << 16)];
    let sample_lines = memchr::memchr_iter(b'\n', sample).count().max(1);
    let avg = (sample.len() / sample_lines).max(4);
    let declared = header.declared_entries as usize;
    let chunks: Vec<Chunk<T>> = pieces
        .par_iter()
        .map(|p| parse_chunk::<T>(p, spec, (p.len() / avg + 16).min(declared + 1)))
        .collect();

    let first_body_line = header.size_line + 1;
    let mut line0 = first_body_line;
    let mut seen = 0usize;
    for (piece, c) in pieces.iter().zip(&chunks) {
        if seen + c.entries() > declared {
            let line = line0 + line_of_entry(piece, declared - seen);
            return Err(perr(
                path,
                line,
                format!(
                    "too many entries: the size line (line {}) declares {declared}, this is entry {}",
                    header.size_line,
                    declared + 1
                ),
            ));
        }
        if let Some((l, msg)) = &c.err {
            return Err(perr(path, line0 + l, msg.clone()));
        }
        seen += c.entries();
        line0 += c.lines;
    }
    if seen < declared {
        return Err(perr(
            path,
            line0,
            format!(
                "unexpected end of file (truncated?): the size line (line {}) declares {declared} \
                 entries, found {seen}",
                header.size_line
            ),
        ));
    }
    Ok(Parsed { header, chunks })
}

/// Fills the row and column indices of an array-format text (column-major; symmetric kinds
/// store the lower triangle, skew-symmetric without the diagonal) into one chunk.
fn array_positions<T: Scalar>(parsed: &mut Parsed<T>) -> Result<()> {
    let h = &parsed.header;
    let (m, n) = (h.nrows as usize, h.ncols as usize);
    let mut vals = try_with_capacity("the array values", h.declared_entries as usize)?;
    let mut imag = Vec::new();
    for c in parsed.chunks.drain(..) {
        vals.extend(c.vals);
        imag.extend(c.imag);
    }
    let mut rows = try_with_capacity("the array row indices", vals.len())?;
    let mut cols = try_with_capacity("the array column indices", vals.len())?;
    let mut diagonal = 0;
    // With no rows there are no values, however many columns (a 0 x 2^31-1 array must not
    // loop over its columns: found by fuzzing).
    let n = if m == 0 { 0 } else { n };
    for j in 0..n {
        let first = match h.symmetry {
            MmSymmetry::General => 0,
            MmSymmetry::Symmetric | MmSymmetry::Hermitian => j,
            MmSymmetry::SkewSymmetric => j + 1,
        };
        for i in first..m {
            rows.push(i as Idx);
            cols.push(j as Idx);
            diagonal += (i == j) as u64;
        }
    }
    parsed.chunks.push(Chunk {
        rows,
        cols,
        vals,
        imag,
        diagonal,
        lines: 0,
        err: None,
    });
    Ok(())
}

/// Adds one to a count or position held as an offset.
#[inline(always)]
fn bump<O: Offset>(x: &mut O) {
    *x = O::from_u64(x.to_usize() as u64 + 1);
}

/// The entries after the mirror of a symmetric kind is expanded (before duplicates merge).
fn expanded_entries<T>(chunks: &[Chunk<T>], mirrored: bool) -> u64 {
    let stored: u64 = chunks.iter().map(|c| c.entries() as u64).sum();
    let diagonal: u64 = chunks.iter().map(|c| c.diagonal).sum();
    if mirrored {
        2 * stored - diagonal
    } else {
        stored
    }
}

/// The row-offset width a file of `expanded` entries is read in: 32 bits up to `wide_from`
/// (2^31−1 outside the tests), 64 bits above, up to 2^40 ([`crate::scalar::MAX_WIDE_NNZ`]);
/// beyond that the 64-bit count check's error.
pub(crate) fn width_for_entries(expanded: u64, wide_from: u64) -> Result<OffsetWidth> {
    if expanded <= wide_from.min(MAX_INDEX) {
        return Ok(OffsetWidth::W32);
    }
    crate::error::check_nnz(OffsetWidth::W64, expanded)?;
    Ok(OffsetWidth::W64)
}

/// Builds the CSR from parsed chunks, expanding the mirror of symmetric kinds. `imag` selects
/// the imaginary parts of a complex text (for counting only). `mirror_sign` multiplies the
/// mirrored value: −1 for skew-symmetric values and for imaginary parts of Hermitian ones.
fn build_csr<T: Scalar, O: Offset>(
    nrows: usize,
    ncols: usize,
    mirrored: bool,
    mirror_sign: T,
    chunks: &[Chunk<T>],
    imag: bool,
) -> Result<Csr<T, O>> {
    let expanded = expanded_entries(chunks, mirrored);
    crate::error::check_nnz(O::WIDTH, expanded)?;
    // Row counts and pointers, the output arrays, and a second set when duplicates merge.
    crate::memory::check_fits(
        || {
            format!(
                "a {nrows}-row matrix with {expanded} entries in {}",
                T::PRECISION
            )
        },
        8 * (nrows as u128 + 1) + expanded as u128 * (4 + T::BYTES as u128),
    )?;
    fn values<T>(c: &Chunk<T>, imag: bool) -> &[T] {
        if imag {
            &c.imag
        } else {
            &c.vals
        }
    }
    // Row counts.
    let mut counts: Vec<O> = try_vec("the row counts", nrows, O::default())?;
    for c in chunks {
        if mirrored {
            for (&r, &col) in c.rows.iter().zip(&c.cols) {
                bump(&mut counts[r as usize]);
                if r != col {
                    bump(&mut counts[col as usize]);
                }
            }
        } else {
            for &r in &c.rows {
                bump(&mut counts[r as usize]);
            }
        }
    }
    let mut ptr = try_with_capacity("the row pointers", nrows + 1)?;
    let mut acc = 0u64;
    ptr.push(O::default());
    for &k in &counts {
        acc += k.to_usize() as u64;
        ptr.push(O::from_u64(acc));
    }
    drop(counts);
    let nnz = expanded as usize;
    // Row ranges of about equal nnz, one per thread.
    let parts = rayon::current_num_threads().clamp(1, 64).min(nrows.max(1));
    let mut bounds = vec![0usize];
    for p in 1..parts {
        let target = O::from_u64((nnz / parts * p) as u64);
        let r = ptr.partition_point(|&x| x < target).min(nrows);
        if r > *bounds.last().unwrap_or(&0) {
            bounds.push(r);
        }
    }
    bounds.push(nrows);
    let mut cols_out: Vec<Idx> = try_vec("the column indices", nnz, 0)?;
    let mut vals_out: Vec<T> = try_vec("the values", nnz, T::zero())?;
    let mut jobs = Vec::with_capacity(bounds.len());
    {
        let (mut cr, mut vr) = (&mut cols_out[..], &mut vals_out[..]);
        for w in bounds.windows(2) {
            let len = ptr[w[1]].to_usize() - ptr[w[0]].to_usize();
            let (a, rest_c) = std::mem::take(&mut cr).split_at_mut(len);
            let (b, rest_v) = std::mem::take(&mut vr).split_at_mut(len);
            jobs.push((w[0], w[1], a, b));
            cr = rest_c;
            vr = rest_v;
        }
    }
    let ptr_ref = &ptr;
    let new_lens: Vec<Vec<O>> = jobs
        .into_par_iter()
        .map(|(lo, hi, cs, vs)| {
            let base = ptr_ref[lo].to_usize() as u64;
            let mut next: Vec<O> = ptr_ref[lo..hi]
                .iter()
                .map(|&p| O::from_u64(p.to_usize() as u64 - base))
                .collect();
            let (lo32, hi32) = (lo as Idx, hi as Idx);
            for c in chunks {
                let vals = values(c, imag);
                for ((&r, &col), &v) in c.rows.iter().zip(&c.cols).zip(vals) {
                    if r >= lo32 && r < hi32 {
                        let d = &mut next[(r - lo32) as usize];
                        cs[d.to_usize()] = col;
                        vs[d.to_usize()] = v;
                        bump(d);
                    }
                    if mirrored && r != col && col >= lo32 && col < hi32 {
                        let d = &mut next[(col - lo32) as usize];
                        cs[d.to_usize()] = r;
                        vs[d.to_usize()] = v * mirror_sign;
                        bump(d);
                    }
                }
            }
            let mut lens = Vec::with_capacity(hi - lo);
            for i in lo..hi {
                let (s, e) = (
                    ptr_ref[i].to_usize() - base as usize,
                    ptr_ref[i + 1].to_usize() - base as usize,
                );
                lens.push(O::from_u64(
                    sort_merge_row(&mut cs[s..e], &mut vs[s..e]) as u64
                ));
            }
            lens
        })
        .collect();
    let merged: usize = new_lens.iter().flatten().map(|&l| l.to_usize()).sum();
    if merged == nnz {
        return Ok(Csr::from_parts_unchecked(
            nrows, ncols, ptr, cols_out, vals_out,
        ));
    }
    let mut new_ptr = try_with_capacity("the row pointers", nrows + 1)?;
    let mut out_c = try_with_capacity("the column indices", merged)?;
    let mut out_v = try_with_capacity("the values", merged)?;
    new_ptr.push(O::default());
    for (i, &l) in new_lens.iter().flatten().enumerate() {
        let (s, l) = (ptr[i].to_usize(), l.to_usize());
        out_c.extend_from_slice(&cols_out[s..s + l]);
        out_v.extend_from_slice(&vals_out[s..s + l]);
        new_ptr.push(O::from_u64(out_c.len() as u64));
    }
    Ok(Csr::from_parts_unchecked(
        nrows, ncols, new_ptr, out_c, out_v,
    ))
}

/// An nnz beyond the index limit after symmetric expansion, as a parse error of the size line.
fn at_size_line(path: Option<&Path>, h: &MatrixMarketHeader, e: Error) -> Error {
    match e {
        Error::TooLarge { .. } | Error::InvalidArgument(_) => perr(
            path,
            h.size_line,
            format!(
                "the {} entries declared here expand to more than the index limit allows: {e}",
                h.declared_entries
            ),
        ),
        other => other,
    }
}

/// Parses, checks and assembles: the CSR (real part for complex texts) and, on request, the
/// counts of [`MatrixMarketInfo`]. With `wide_from` `None` the offsets are 32-bit and more
/// than 2^31−1 entries are refused; with `Some(t)` a text of more than `t` entries (after
/// symmetric expansion; `t` is 2^31−1 outside the tests) gets 64-bit offsets, up to 2^40.
fn assemble<T: Scalar>(
    path: Option<&Path>,
    text: &[u8],
    allow_complex: bool,
    want_info: bool,
    wide_from: Option<u64>,
) -> Result<(AnyCsr<T>, Option<MatrixMarketInfo>)> {
    let mut parsed = parse_text::<T>(path, text, allow_complex)?;
    if parsed.header.format == MmFormat::Array {
        array_positions(&mut parsed)?;
    }
    let width = match wide_from {
        None => OffsetWidth::W32,
        Some(t) => {
            let expanded = expanded_entries(&parsed.chunks, parsed.header.symmetry.is_mirrored());
            width_for_entries(expanded, t).map_err(|e| at_size_line(path, &parsed.header, e))?
        }
    };
    match width {
        OffsetWidth::W32 => {
            assemble_as::<T, u32>(path, parsed, want_info).map(|(a, i)| (a.into(), i))
        }
        OffsetWidth::W64 => {
            assemble_as::<T, u64>(path, parsed, want_info).map(|(a, i)| (a.into(), i))
        }
    }
}

/// [`assemble`] after parsing, in the offsets' width `O`.
fn assemble_as<T: Scalar, O: Offset>(
    path: Option<&Path>,
    parsed: Parsed<T>,
    want_info: bool,
) -> Result<(Csr<T, O>, Option<MatrixMarketInfo>)> {
    let h = &parsed.header;
    let (m, n) = (h.nrows as usize, h.ncols as usize);
    let mirrored = h.symmetry.is_mirrored();
    let sign = if h.symmetry == MmSymmetry::SkewSymmetric {
        T::from_f64(-1.0)
    } else {
        T::one()
    };
    let csr = build_csr::<T, O>(m, n, mirrored, sign, &parsed.chunks, false)
        .map_err(|e| at_size_line(path, h, e))?;
    if !want_info {
        return Ok((csr, None));
    }
    let stored: u64 = parsed.chunks.iter().map(|c| c.entries() as u64).sum();
    let stored_diagonal: u64 = parsed.chunks.iter().map(|c| c.diagonal).sum();
    let expanded = expanded_entries(&parsed.chunks, mirrored);
    let explicit_zeros = if h.field == MmField::Complex {
        let isign = if matches!(
            h.symmetry,
            MmSymmetry::SkewSymmetric | MmSymmetry::Hermitian
        ) {
            T::from_f64(-1.0)
        } else {
            T::one()
        };
        let im = build_csr::<T, O>(m, n, mirrored, isign, &parsed.chunks, true)
            .map_err(|e| at_size_line(path, h, e))?;
        csr.vals()
            .par_iter()
            .zip(im.vals().par_iter())
            .filter(|(re, im)| **re == T::zero() && **im == T::zero())
            .count() as u64
    } else {
        csr.vals().par_iter().filter(|v| **v == T::zero()).count() as u64
    };
    let nnz = csr.nnz() as u64;
    let info = MatrixMarketInfo {
        header: parsed.header,
        stored,
        stored_diagonal,
        expanded,
        nnz,
        duplicates: expanded - nnz,
        explicit_zeros,
        nnz_nonzero: nnz - explicit_zeros,
    };
    Ok((csr, Some(info)))
}

/// The 32-bit matrix of an [`assemble`] without `wide_from`.
fn narrow<T: Scalar, I>(r: Result<(AnyCsr<T>, I)>) -> Result<(Csr<T>, I)> {
    let (a, i) = r?;
    Ok((a.into_offsets()?, i))
}

/// Parses a Matrix Market text held in memory (gzip-compressed bytes are inflated first).
/// Errors carry no path.
pub fn parse_matrix_market_bytes<T: Scalar>(bytes: &[u8]) -> Result<Csr<T>> {
    parse_bytes_wide_from(bytes, None).and_then(|a| a.into_offsets())
}

/// [`parse_matrix_market_bytes`] in the width the text needs ([`read_matrix_market_any`]).
pub fn parse_matrix_market_bytes_any<T: Scalar>(bytes: &[u8]) -> Result<AnyCsr<T>> {
    parse_bytes_wide_from(bytes, Some(MAX_INDEX))
}

/// [`parse_matrix_market_bytes_any`] with 64-bit offsets above `wide_from` entries (`None`:
/// 32-bit only). A lower `wide_from` than 2^31−1 makes small texts take the 64-bit path (the
/// tests of that path: nothing this machine can allocate reaches 2^31).
pub(crate) fn parse_bytes_wide_from<T: Scalar>(
    bytes: &[u8],
    wide_from: Option<u64>,
) -> Result<AnyCsr<T>> {
    if bytes.starts_with(&GZIP_MAGIC) {
        let text = gunzip(None, bytes)?;
        return assemble(None, &text, false, false, wide_from).map(|r| r.0);
    }
    assemble(None, bytes, false, false, wide_from).map(|r| r.0)
}

/// Reads a `.mtx` or `.mtx.gz` file (gzip detected by content) into CSR: mirror expanded,
/// duplicates summed, explicit zeros kept, pattern values 1. 32-bit offsets: a file of more than
/// 2^31−1 entries (after symmetric expansion) is refused; [`read_matrix_market_any`] takes it.
pub fn read_matrix_market<T: Scalar>(path: impl AsRef<Path>) -> Result<Csr<T>> {
    let path = path.as_ref();
    let text = open_text(path)?;
    narrow(assemble(Some(path), &text, false, false, None)).map(|r| r.0)
}

/// Reads a file as [`read_matrix_market`] does, in the width it needs (docs/offsets.md): 32-bit
/// offsets up to 2^31−1 entries after symmetric expansion (the same matrix as
/// [`read_matrix_market`]), 64-bit above, up to 2^40.
pub fn read_matrix_market_any<T: Scalar>(path: impl AsRef<Path>) -> Result<AnyCsr<T>> {
    let path = path.as_ref();
    let text = open_text(path)?;
    assemble(Some(path), &text, false, false, Some(MAX_INDEX)).map(|r| r.0)
}

/// Reads a file into CSR and also returns its [`MatrixMarketInfo`] counts.
pub fn read_matrix_market_with_info<T: Scalar>(
    path: impl AsRef<Path>,
) -> Result<(Csr<T>, MatrixMarketInfo)> {
    let path = path.as_ref();
    let text = open_text(path)?;
    let (csr, info) = narrow(assemble(Some(path), &text, false, true, None))?;
    info.map(|i| (csr, i))
        .ok_or_else(|| Error::InvalidArgument("internal: info not computed".into()))
}

/// Counts a whole file ([`MatrixMarketInfo`]): stored, expanded, duplicate-summed entries and
/// explicit zeros. Unlike the readers this also accepts complex files (a complex entry is an
/// explicit zero when both parts are zero), and files of more than 2^31−1 entries (up to 2^40).
pub fn read_matrix_market_info(path: impl AsRef<Path>) -> Result<MatrixMarketInfo> {
    let path = path.as_ref();
    let text = open_text(path)?;
    let (_, info) = assemble::<f64>(Some(path), &text, true, true, Some(MAX_INDEX))?;
    info.ok_or_else(|| Error::InvalidArgument("internal: info not computed".into()))
}

/// [`read_matrix_market_info`] for an in-memory text.
pub fn matrix_market_info_bytes(bytes: &[u8]) -> Result<MatrixMarketInfo> {
    let owned;
    let text = if bytes.starts_with(&GZIP_MAGIC) {
        owned = gunzip(None, bytes)?;
        &owned[..]
    } else {
        bytes
    };
    let (_, info) = assemble::<f64>(None, text, true, true, Some(MAX_INDEX))?;
    info.ok_or_else(|| Error::InvalidArgument("internal: info not computed".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dense(a: &Csr<f64>) -> Vec<Vec<f64>> {
        let mut d = vec![vec![0.0; a.ncols()]; a.nrows()];
        for (i, row) in d.iter_mut().enumerate() {
            let (c, v) = a.row(i);
            for (&j, &x) in c.iter().zip(v) {
                row[j as usize] = x;
            }
        }
        d
    }

    #[test]
    fn reads_general_and_symmetric() {
        let a: Csr<f64> = parse_matrix_market_bytes(
            b"%%MatrixMarket matrix coordinate real general\n2 3 3\n1 1 1.5\n2 3 -2\n1 1 0.5\n",
        )
        .unwrap();
        assert_eq!(dense(&a), vec![vec![2.0, 0.0, 0.0], vec![0.0, 0.0, -2.0]]);
        let s: Csr<f64> = parse_matrix_market_bytes(
            b"%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 1 3\n",
        )
        .unwrap();
        assert_eq!(dense(&s), vec![vec![0.0, -3.0], vec![3.0, 0.0]]);
    }

    #[test]
    fn line_numbers_are_exact_across_chunks() {
        let mut text =
            b"%%MatrixMarket matrix coordinate real general\n% c\n1000 1000 200000\n".to_vec();
        for k in 0..200_000u32 {
            if k == 150_000 {
                text.extend_from_slice(b"5 x 1\n");
            } else {
                text.extend_from_slice(
                    format!("{} {} {}.25\n", k % 1000 + 1, k / 200 + 1, k).as_bytes(),
                );
            }
        }
        match parse_matrix_market_bytes::<f64>(&text) {
            Err(Error::Parse { line, .. }) => assert_eq!(line, 3 + 150_000 + 1),
            other => panic!("{other:?}"),
        }
    }

    /// The 64-bit path (forced on small texts) gives the 32-bit matrix widened, and the 32-bit
    /// path what the public reader gives.
    fn check_both_widths(text: &[u8]) {
        let narrow: Csr<f64> = parse_matrix_market_bytes(text).unwrap();
        let wide_want = narrow.with_offsets::<u64>().unwrap();
        match parse_bytes_wide_from::<f64>(text, Some(0)).unwrap() {
            AnyCsr::W64(w) => assert_eq!(w, wide_want),
            AnyCsr::W32(_) => panic!("wide_from 0 must read 64-bit offsets"),
        }
        assert_eq!(
            parse_bytes_wide_from::<f64>(text, Some(MAX_INDEX)).unwrap(),
            AnyCsr::W32(narrow.clone())
        );
        assert_eq!(
            parse_matrix_market_bytes_any::<f64>(text).unwrap(),
            AnyCsr::W32(narrow.clone())
        );
        let f32_wide = parse_bytes_wide_from::<f32>(text, Some(narrow.nnz() as u64 - 1)).unwrap();
        let f32_narrow: Csr<f32> = parse_matrix_market_bytes(text).unwrap();
        assert_eq!(f32_wide, AnyCsr::W64(f32_narrow.with_offsets().unwrap()));
    }

    #[test]
    fn wide_offsets_equal_the_narrow_matrix_widened() {
        let texts: [&[u8]; 6] = [
            b"%%MatrixMarket matrix coordinate real general\n3 4 5\n1 1 1.5\n3 4 -2\n1 1 0.5\n3 1 7\n1 4 0\n",
            b"%%MatrixMarket matrix coordinate real symmetric\n4 4 5\n1 1 4\n2 1 -1\n4 2 3\n4 4 2\n4 2 1\n",
            b"%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 2\n2 1 3\n3 1 -5\n",
            b"%%MatrixMarket matrix coordinate pattern symmetric\n5 5 4\n2 1\n3 3\n5 1\n5 4\n",
            b"%%MatrixMarket matrix coordinate pattern general\n3 3 3\n3 1\n1 2\n3 1\n",
            b"%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n5\n6\n",
        ];
        for t in texts {
            check_both_widths(t);
        }
        // Many chunks and row ranges, duplicates merged across chunks, and a symmetric mirror.
        let a = crate::gen::generate_f64("powerlaw:3000,8,seed=5").unwrap();
        let mut text = Vec::new();
        crate::io::write_matrix_market_to(&mut text, &a).unwrap();
        let head = 1 + text.windows(11).position(|w| w == b"\n3000 3000 ").unwrap();
        let body_start = head + text[head..].iter().position(|&b| b == b'\n').unwrap() + 1;
        let mut dup = text[..head].to_vec();
        dup.extend_from_slice(format!("3000 3000 {}\n", 2 * a.nnz()).as_bytes());
        dup.extend_from_slice(&text[body_start..]);
        dup.extend_from_slice(&text[body_start..]);
        check_both_widths(&text);
        check_both_widths(&dup);
        let mut sym = b"%%MatrixMarket matrix coordinate real symmetric\n".to_vec();
        let lower: Vec<(usize, u32, f64)> = (0..a.nrows())
            .flat_map(|i| {
                let (c, v) = a.row(i);
                c.iter()
                    .zip(v)
                    .filter(move |(&j, _)| j as usize <= i)
                    .map(move |(&j, &x)| (i, j, x))
                    .collect::<Vec<_>>()
            })
            .collect();
        sym.extend_from_slice(format!("3000 3000 {}\n", lower.len()).as_bytes());
        for (i, j, x) in &lower {
            sym.extend_from_slice(format!("{} {} {x:e}\n", i + 1, j + 1).as_bytes());
        }
        check_both_widths(&sym);
    }

    #[test]
    fn width_follows_the_entry_count_up_to_2_40() {
        let big = 1u64 << 31;
        assert_eq!(
            width_for_entries(MAX_INDEX, MAX_INDEX).unwrap(),
            OffsetWidth::W32
        );
        assert_eq!(width_for_entries(big, MAX_INDEX).unwrap(), OffsetWidth::W64);
        // a symmetric file of 2^30 + 1 stored entries, one on the diagonal, expands past 2^31-1
        assert_eq!(
            width_for_entries(2 * ((1 << 30) + 1) - 1, MAX_INDEX).unwrap(),
            OffsetWidth::W64
        );
        assert_eq!(
            width_for_entries(1 << 40, MAX_INDEX).unwrap(),
            OffsetWidth::W64
        );
        let e = width_for_entries((1 << 40) + 1, MAX_INDEX).unwrap_err();
        assert!(e.to_string().contains("2^40"), "{e}");
        // a lower threshold (the tests') never raises the 32-bit limit
        assert_eq!(width_for_entries(big, u64::MAX).unwrap(), OffsetWidth::W64);
        assert_eq!(width_for_entries(5, 4).unwrap(), OffsetWidth::W64);
        assert_eq!(width_for_entries(4, 4).unwrap(), OffsetWidth::W32);
        // and the error names the size line
        let h = parse_header_bytes(
            None,
            b"%%MatrixMarket matrix coordinate real general\n2 2 3\n",
        )
        .unwrap();
        let e = at_size_line(None, &h, e);
        assert!(matches!(e, Error::Parse { line: 2, .. }), "{e:?}");
    }

    #[test]
    fn split_respects_newlines() {
        let body = b"1 1 1\n2 2 2\n3 3 3\n4 4 4\n";
        let parts = split_chunks(body, 3);
        assert_eq!(parts.concat(), body.to_vec());
        assert!(parts.iter().all(|p| p.is_empty() || p.ends_with(b"\n")));
    }
}
