//! The binary matrix cache (`*.spmvkit`): a parsed CSR saved as raw little-endian arrays so that a
//! second load of a Matrix Market file costs a mapped read instead of a parse.
//!
//! Layout (all integers little-endian):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `SPMVKITC` |
//! | 8 | 4 | format version: 1 (32-bit row offsets) or 2 (64-bit row offsets) |
//! | 12 | 4 | value bytes: 4 (f32) or 8 (f64) |
//! | 16 | 8 | rows |
//! | 24 | 8 | columns |
//! | 32 | 8 | nnz |
//! | 40 | 8 | source file size in bytes (0: none) |
//! | 48 | 8 | source modification time, ns since the Unix epoch (0: none) |
//! | 56 | 4 | CRC-32 of bytes 0..56 followed by the payload |
//! | 60 | 4 | header length (64) |
//! | 64 | … | `row_ptr` (rows+1 × u32, or × u64 in version 2), `col_idx` (nnz × u32), zero padding to 8, values |
//!
//! A matrix with 32-bit offsets is written as version 1, one with 64-bit offsets (more than
//! 2^31−1 nonzeros, docs/offsets.md) as version 2; both are read. [`read_cache`] and
//! [`load_cached`] give 32-bit offsets (a version 2 file of more than 2^31−1 nonzeros is
//! [`Error::TooLarge`]), [`read_cache_any`] and [`load_cached_any`] either width. [`CacheRows`]
//! (range reads) takes version 1 only.
//!
//! Reading checks the magic, version, exact file length (before allocating anything), checksum
//! and the CSR invariants; any failure is [`Error::Cache`]. [`load_cached`] keys a cache file on
//! the source's canonical path and precision, reuses it while the source's size and mtime match,
//! and rebuilds it when it is stale or damaged.

use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use rayon::prelude::*;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::matrix::{AnyCsr, Csr};
use crate::memory::try_vec;
use crate::scalar::{Idx, Offset, OffsetSlice, OffsetWidth, Precision, Scalar, MAX_INDEX};

const MAGIC: &[u8; 8] = b"SPMVKITC";
/// The format version of a cache with 32-bit row offsets.
const VERSION: u32 = 1;
/// The format version of a cache with 64-bit row offsets.
const VERSION_WIDE: u32 = 2;
const HEADER_LEN: usize = 64;
/// Bytes per parallel checksum / conversion piece.
const PIECE: usize = 1 << 22;

/// The header of a cache file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CacheHeader {
    pub version: u32,
    pub precision: Precision,
    /// The row offsets' width (version 1: 32 bits, version 2: 64 bits).
    pub offsets: OffsetWidth,
    pub nrows: u64,
    pub ncols: u64,
    pub nnz: u64,
    /// Size of the Matrix Market file the cache was built from (0 if none was recorded).
    pub source_size: u64,
    /// Its modification time in ns since the Unix epoch (0 if none was recorded).
    pub source_mtime_ns: u64,
    pub checksum: u32,
}

/// What [`load_cached_with_outcome`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheOutcome {
    /// A valid cache was read.
    Hit(PathBuf),
    /// No cache existed; the source was parsed and a cache written.
    Built(PathBuf),
    /// The cache was stale or damaged (the reason is given); it was rebuilt.
    Rebuilt { path: PathBuf, reason: String },
    /// The source was parsed but the cache could not be written (e.g. a read-only directory).
    NotWritten { path: PathBuf, reason: String },
    /// The input was itself a `.spmvkit` file, or no cache directory could be determined.
    Direct,
}

fn cache_err(path: &Path, msg: impl Into<String>) -> Error {
    Error::Cache {
        path: path.to_path_buf(),
        msg: msg.into(),
    }
}

/// Size and mtime (ns since the epoch) of a file.
pub fn source_stamp(path: &Path) -> Result<(u64, u64)> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos().min(u64::MAX as u128) as u64);
    Ok((meta.len(), mtime))
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}

/// CRC-32 of one piece.
fn crc_of(piece: &[u8]) -> crc32fast::Hasher {
    let mut x = crc32fast::Hasher::new();
    x.update(piece);
    x
}

/// CRC-32 of `head` followed by `payload`, the payload hashed in parallel pieces.
fn checksum(head: &[u8], payload: &[&[u8]]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(head);
    for part in payload {
        let pieces: Vec<crc32fast::Hasher> = part.par_chunks(PIECE).map(crc_of).collect();
        for p in pieces {
            h.combine(&p);
        }
    }
    h.finalize()
}

/// Byte offsets of the three arrays and the expected file length.
fn layout(h: &CacheHeader) -> Option<(usize, usize, usize, usize)> {
    let (nrows, nnz, value_bytes) = (h.nrows, h.nnz, h.precision.bytes() as u64);
    let ptr_off = HEADER_LEN as u64;
    let ptr_len = nrows
        .checked_add(1)?
        .checked_mul(h.offsets.bytes() as u64)?;
    let col_off = ptr_off.checked_add(ptr_len)?;
    let val_off = col_off
        .checked_add(nnz.checked_mul(4)?)?
        .next_multiple_of(8);
    let end = val_off.checked_add(nnz.checked_mul(value_bytes)?)?;
    let c = |x: u64| usize::try_from(x).ok();
    Some((c(ptr_off)?, c(col_off)?, c(val_off)?, c(end)?))
}

/// Parses and checks the 64-byte header (not the checksum).
fn parse_header(path: &Path, b: &[u8]) -> Result<CacheHeader> {
    if b.len() < HEADER_LEN || &b[..8] != MAGIC {
        return Err(cache_err(
            path,
            "not an spmvkit cache (bad magic or too short)",
        ));
    }
    let version = u32_at(b, 8);
    let offsets = match version {
        VERSION => OffsetWidth::W32,
        VERSION_WIDE => OffsetWidth::W64,
        _ => {
            return Err(cache_err(
                path,
                format!(
                    "cache format version {version}, this build reads {VERSION} and {VERSION_WIDE}"
                ),
            ))
        }
    };
    let precision = match u32_at(b, 12) {
        4 => Precision::F32,
        8 => Precision::F64,
        other => return Err(cache_err(path, format!("bad value size {other}"))),
    };
    if u32_at(b, 60) as usize != HEADER_LEN {
        return Err(cache_err(path, "bad header length"));
    }
    let h = CacheHeader {
        version,
        precision,
        offsets,
        nrows: u64_at(b, 16),
        ncols: u64_at(b, 24),
        nnz: u64_at(b, 32),
        source_size: u64_at(b, 40),
        source_mtime_ns: u64_at(b, 48),
        checksum: u32_at(b, 56),
    };
    if h.nrows > MAX_INDEX || h.ncols > MAX_INDEX {
        return Err(cache_err(path, "dimensions beyond the 32-bit index range"));
    }
    if h.nnz > offsets.max_nnz() {
        return Err(cache_err(
            path,
            format!(
                "nnz {} beyond what {}-bit row offsets hold ({})",
                h.nnz,
                offsets.bits(),
                offsets.max_nnz()
            ),
        ));
    }
    Ok(h)
}

/// Reads only the header of a cache file.
pub fn read_cache_header(path: impl AsRef<Path>) -> Result<CacheHeader> {
    let path = path.as_ref();
    let (mut f, _) = super::open_file(path)?;
    let mut b = [0u8; HEADER_LEN];
    std::io::Read::read_exact(&mut f, &mut b)
        .map_err(|_| cache_err(path, "file shorter than the 64-byte header"))?;
    parse_header(path, &b)
}

/// Appends the little-endian bytes of a range of an array's elements.
type PutFn<'a> = Box<dyn Fn(Range<usize>, &mut Vec<u8>) + Sync + 'a>;

/// One array of a cache's payload, turned into little-endian bytes a piece of about [`PIECE`]
/// bytes at a time: the checksum and the write each convert it piece by piece, in parallel, so
/// writing a matrix never holds a second copy of it (a matrix past 2^31−1 nonzeros is tens of
/// GB).
struct Part<'a> {
    elems: usize,
    /// Bytes per element.
    size: usize,
    /// Appends the bytes of elements `range`.
    put: PutFn<'a>,
}

impl<'a> Part<'a> {
    /// The array `v`, each element written as `le` gives it.
    fn of<E: Copy + Sync, const N: usize>(
        v: &'a [E],
        le: impl Fn(E) -> [u8; N] + Sync + 'a,
    ) -> Self {
        Part {
            elems: v.len(),
            size: N,
            put: Box::new(move |r, out| {
                for &x in &v[r] {
                    out.extend_from_slice(&le(x));
                }
            }),
        }
    }

    fn bytes(&self) -> usize {
        self.elems * self.size
    }

    /// `map` of each piece's bytes, as many pieces at a time as there are threads, in parallel;
    /// the results handed to `each` in order.
    fn for_each_piece<R: Send>(
        &self,
        map: impl Fn(Vec<u8>) -> R + Sync,
        mut each: impl FnMut(R) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let per = (PIECE / self.size).max(1);
        let pieces: Vec<Range<usize>> = (0..self.elems)
            .step_by(per)
            .map(|lo| lo..(lo + per).min(self.elems))
            .collect();
        for batch in pieces.chunks(rayon::current_num_threads().max(1)) {
            let done: Vec<R> = batch
                .par_iter()
                .map(|r| {
                    let mut b = Vec::with_capacity(r.len() * self.size);
                    (self.put)(r.clone(), &mut b);
                    map(b)
                })
                .collect();
            for d in done {
                each(d)?;
            }
        }
        Ok(())
    }
}

/// Writes `a` as a cache file at `path` (through a temporary file and a rename, so readers never
/// see a half-written cache). `source` is the Matrix Market file it stands for, if any: its size
/// and mtime are recorded for staleness checks. 32-bit offsets are written as format version 1,
/// 64-bit ones as version 2.
pub fn write_cache<T: Scalar, O: Offset>(
    path: impl AsRef<Path>,
    a: &Csr<T, O>,
    source: Option<&Path>,
) -> Result<()> {
    let path = path.as_ref();
    let (size, mtime) = match source {
        Some(s) => source_stamp(s)?,
        None => (0, 0),
    };
    let ptr = match O::slice(a.row_ptr()) {
        OffsetSlice::W32(v) => Part::of(v, u32::to_le_bytes),
        OffsetSlice::W64(v) => Part::of(v, u64::to_le_bytes),
    };
    let version = match O::WIDTH {
        OffsetWidth::W32 => VERSION,
        OffsetWidth::W64 => VERSION_WIDE,
    };
    let cols = Part::of(a.col_idx(), Idx::to_le_bytes);
    let vals = if T::PRECISION == Precision::F32 {
        Part::of(a.vals(), |x: T| (x.to_f64() as f32).to_le_bytes())
    } else {
        Part::of(a.vals(), |x: T| x.to_f64().to_le_bytes())
    };
    let arrays_end = HEADER_LEN + ptr.bytes() + cols.bytes();
    let zeros = [0u8; 8];
    let pad = Part::of(
        &zeros[..arrays_end.next_multiple_of(8) - arrays_end],
        |b: u8| [b],
    );
    let parts = [ptr, cols, pad, vals];
    let mut head = [0u8; HEADER_LEN];
    head[..8].copy_from_slice(MAGIC);
    head[8..12].copy_from_slice(&version.to_le_bytes());
    head[12..16].copy_from_slice(&(T::BYTES as u32).to_le_bytes());
    head[16..24].copy_from_slice(&(a.nrows() as u64).to_le_bytes());
    head[24..32].copy_from_slice(&(a.ncols() as u64).to_le_bytes());
    head[32..40].copy_from_slice(&(a.nnz() as u64).to_le_bytes());
    head[40..48].copy_from_slice(&size.to_le_bytes());
    head[48..56].copy_from_slice(&mtime.to_le_bytes());
    head[60..64].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
    let mut crc = crc32fast::Hasher::new();
    crc.update(&head[..56]);
    for p in &parts {
        p.for_each_piece(
            |b| crc_of(&b),
            |h| {
                crc.combine(&h);
                Ok(())
            },
        )
        .map_err(|e| Error::io(path, e))?;
    }
    head[56..60].copy_from_slice(&crc.finalize().to_le_bytes());

    super::write_via_temp(path, |w| {
        w.write_all(&head)?;
        for p in &parts {
            p.for_each_piece(|b| b, |b| w.write_all(&b))?;
        }
        Ok(())
    })
}

/// Reads a cache file into CSR, checking header, length, checksum and structure. Values stored
/// in the other precision are converted. 32-bit row offsets: a version 2 cache is narrowed
/// ([`Error::TooLarge`] above 2^31−1 nonzeros; [`read_cache_any`] reads it).
pub fn read_cache<T: Scalar>(path: impl AsRef<Path>) -> Result<Csr<T>> {
    read_cache_checked(path.as_ref(), None)?.into_offsets()
}

/// [`read_cache`] in the width the file holds: 32-bit offsets from version 1, 64-bit from
/// version 2.
pub fn read_cache_any<T: Scalar>(path: impl AsRef<Path>) -> Result<AnyCsr<T>> {
    read_cache_checked(path.as_ref(), None)
}

/// [`read_cache_any`], optionally requiring a source stamp (size, mtime).
fn read_cache_checked<T: Scalar>(path: &Path, stamp: Option<(u64, u64)>) -> Result<AnyCsr<T>> {
    let (file, len) = super::open_file(path)?;
    if len < HEADER_LEN as u64 {
        return Err(cache_err(path, "file shorter than the 64-byte header"));
    }
    // SAFETY: read-only private mapping; the cache is only replaced by rename, never rewritten
    // in place by spmvkit.
    let map = unsafe { memmap2::MmapOptions::new().populate().map(&file) }
        .map_err(|e| Error::io(path, e))?;
    let b = &map[..];
    let h = parse_header(path, b)?;
    if let Some((size, mtime)) = stamp {
        if (h.source_size, h.source_mtime_ns) != (size, mtime) {
            return Err(cache_err(path, "stale: the source file changed"));
        }
    }
    let (po, co, vo, end) = layout(&h).ok_or_else(|| cache_err(path, "sizes overflow"))?;
    if end as u64 != len {
        return Err(cache_err(
            path,
            format!("file is {len} bytes, the header implies {end} (truncated or damaged)"),
        ));
    }
    if checksum(&b[..56], &[&b[HEADER_LEN..]]) != h.checksum {
        return Err(cache_err(path, "checksum mismatch (damaged file)"));
    }
    let nnz = h.nnz as usize;
    crate::memory::check_fits(
        || format!("reading {}", path.display()),
        h.offsets.bytes() as u128 * (h.nrows as u128 + 1) + nnz as u128 * (4 + T::BYTES as u128),
    )?;
    let u32s = |what: &str, bytes: &[u8]| -> Result<Vec<Idx>> {
        let mut v: Vec<Idx> = try_vec(what, bytes.len() / 4, 0)?;
        v.par_iter_mut()
            .zip(bytes.par_chunks_exact(4))
            .for_each(|(x, c)| *x = u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
        Ok(v)
    };
    let cols = u32s("the cached column indices", &b[co..co + 4 * nnz])?;
    let mut vals: Vec<T> = try_vec("the cached values", nnz, T::zero())?;
    convert_values(h.precision, &b[vo..end], &mut vals);
    let (m, n) = (h.nrows as usize, h.ncols as usize);
    let built = match h.offsets {
        OffsetWidth::W32 => {
            let ptr = u32s("the cached row pointers", &b[po..co])?;
            Csr::new(m, n, ptr, cols, vals).map(AnyCsr::W32)
        }
        OffsetWidth::W64 => {
            let bytes = &b[po..co];
            let mut ptr: Vec<u64> = try_vec("the cached row pointers", bytes.len() / 8, 0)?;
            ptr.par_iter_mut()
                .zip(bytes.par_chunks_exact(8))
                .for_each(|(x, c)| *x = u64_at(c, 0));
            Csr::new(m, n, ptr, cols, vals).map(AnyCsr::W64)
        }
    };
    built.map_err(|e| cache_err(path, format!("invalid CSR structure: {e}")))
}

/// A cache file opened for range reads (issue #26): a rank of a distributed run reads the
/// header, the row pointers (to partition) and then only the byte ranges of its own rows'
/// column indices and values, so P ranks on one host do not hold P copies of the matrix.
///
/// The file is mapped without reading it ahead; what a rank touches is what it reads. The
/// header, the file length and the structure of every slice read are checked; the whole-file
/// CRC is not (it would read everything), so the identity a rank brings to the rendezvous
/// includes the header's stored checksum instead (`dist::bootstrap::InputIdentity::of_rows`).
pub struct CacheRows {
    path: PathBuf,
    map: memmap2::Mmap,
    header: CacheHeader,
    /// Byte offsets of the row pointers, column indices and values.
    ptr_off: usize,
    col_off: usize,
    val_off: usize,
}

impl CacheRows {
    /// Opens `path` and checks its header and length.
    pub fn open(path: impl AsRef<Path>) -> Result<CacheRows> {
        let path = path.as_ref();
        let (file, len) = super::open_file(path)?;
        if len < HEADER_LEN as u64 {
            return Err(cache_err(path, "file shorter than the 64-byte header"));
        }
        // SAFETY: read-only private mapping; the cache is only replaced by rename, never
        // rewritten in place by spmvkit.
        let map =
            unsafe { memmap2::MmapOptions::new().map(&file) }.map_err(|e| Error::io(path, e))?;
        let header = parse_header(path, &map[..])?;
        if header.offsets != OffsetWidth::W32 {
            return Err(cache_err(
                path,
                format!(
                    "range reads take 32-bit row offsets; this cache has {}-bit ones ({} \
                     nonzeros; docs/offsets.md)",
                    header.offsets.bits(),
                    header.nnz
                ),
            ));
        }
        let (ptr_off, col_off, val_off, end) =
            layout(&header).ok_or_else(|| cache_err(path, "sizes overflow"))?;
        if end as u64 != len {
            return Err(cache_err(
                path,
                format!("file is {len} bytes, the header implies {end} (truncated or damaged)"),
            ));
        }
        Ok(CacheRows {
            path: path.to_path_buf(),
            map,
            header,
            ptr_off,
            col_off,
            val_off,
        })
    }

    pub fn header(&self) -> &CacheHeader {
        &self.header
    }

    /// The row pointers `ptr[rows.start..=rows.end]`, checked to be non-decreasing and within
    /// nnz (`0..nrows` gives all nrows+1 of them, what an nnz-balanced partition needs).
    pub fn row_ptr(&self, rows: Range<usize>) -> Result<Vec<Idx>> {
        let m = self.header.nrows as usize;
        if rows.start > rows.end || rows.end > m {
            return Err(cache_err(
                &self.path,
                format!(
                    "rows {}..{} outside the matrix's {m} rows",
                    rows.start, rows.end
                ),
            ));
        }
        let b = &self.map[self.ptr_off + 4 * rows.start..self.ptr_off + 4 * (rows.end + 1)];
        let mut v: Vec<Idx> = try_vec("the cached row pointers", rows.len() + 1, 0)?;
        v.par_iter_mut()
            .zip(b.par_chunks_exact(4))
            .for_each(|(x, c)| *x = u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
        let nnz = self.header.nnz;
        let sorted = v.par_windows(2).all(|w| w[0] <= w[1]);
        let bounded = v.last().is_none_or(|&l| l as u64 <= nnz);
        let ends = rows.start != 0 || v[0] == 0;
        let full = rows.end != m || v.last().is_some_and(|&l| l as u64 == nnz);
        if !(sorted && bounded && ends && full) {
            return Err(cache_err(
                &self.path,
                format!(
                    "invalid row pointers in rows {}..{} (decreasing, or not from 0 to nnz)",
                    rows.start, rows.end
                ),
            ));
        }
        Ok(v)
    }

    /// Rows `rows` as an `rows.len() × ncols` matrix (global column indices): the row pointers
    /// of the range, then the byte ranges of their column indices and values. Values stored in
    /// the other precision are converted.
    pub fn rows<T: Scalar>(&self, rows: Range<usize>) -> Result<Csr<T>> {
        let ptr = self.row_ptr(rows.clone())?;
        let (lo, hi) = (ptr[0] as usize, *ptr.last().unwrap_or(&0) as usize);
        let nnz = hi - lo;
        crate::memory::check_fits(
            || {
                format!(
                    "reading rows {}..{} of {}",
                    rows.start,
                    rows.end,
                    self.path.display()
                )
            },
            4 * (rows.len() as u128 + 1) + nnz as u128 * (4 + T::BYTES as u128),
        )?;
        let local_ptr: Vec<Idx> = ptr.par_iter().map(|&p| p - ptr[0]).collect();
        let cb = &self.map[self.col_off + 4 * lo..self.col_off + 4 * hi];
        let mut cols: Vec<Idx> = try_vec("the cached column indices", nnz, 0)?;
        cols.par_iter_mut()
            .zip(cb.par_chunks_exact(4))
            .for_each(|(x, c)| *x = u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
        let vb = self.header.precision.bytes();
        let bytes = &self.map[self.val_off + vb * lo..self.val_off + vb * hi];
        let mut vals: Vec<T> = try_vec("the cached values", nnz, T::zero())?;
        convert_values(self.header.precision, bytes, &mut vals);
        Csr::new(
            rows.len(),
            self.header.ncols as usize,
            local_ptr,
            cols,
            vals,
        )
        .map_err(|e| {
            cache_err(
                &self.path,
                format!(
                    "invalid CSR structure in rows {}..{}: {e}",
                    rows.start, rows.end
                ),
            )
        })
    }
}

/// Values from their little-endian bytes in `stored` precision into `out`, in parallel.
fn convert_values<T: Scalar>(stored: Precision, bytes: &[u8], out: &mut [T]) {
    if stored == Precision::F32 {
        out.par_iter_mut()
            .zip(bytes.par_chunks_exact(4))
            .for_each(|(x, c)| {
                *x = T::from_f64(f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
            });
    } else {
        out.par_iter_mut()
            .zip(bytes.par_chunks_exact(8))
            .for_each(|(x, c)| {
                let mut a = [0u8; 8];
                a.copy_from_slice(c);
                *x = T::from_f64(f64::from_le_bytes(a));
            });
    }
}

/// The default cache directory: `$SPMVKIT_CACHE_DIR`, else `$XDG_CACHE_HOME/spmvkit`, else
/// `~/.cache/spmvkit`.
pub fn default_cache_dir() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("SPMVKIT_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("spmvkit")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("spmvkit")))
}

/// The cache file that stands for `source` in `dir`: the file name, a hash of the canonical
/// path, and the precision, e.g. `af23560.mtx.gz-1a2b3c4d.f64.spmvkit`.
pub fn cache_path_for<T: Scalar>(source: &Path, dir: &Path) -> PathBuf {
    let canon = std::fs::canonicalize(source).unwrap_or_else(|_| source.to_path_buf());
    let key = crc32fast::hash(canon.to_string_lossy().as_bytes());
    let name = source
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "matrix".into());
    dir.join(format!("{name}-{key:08x}.{}.spmvkit", T::PRECISION.name()))
}

/// Whether a path names a cache file.
pub(crate) fn is_cache_path(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("spmvkit"))
}

/// [`load_cached`], also saying whether the cache was hit, built or rebuilt.
pub fn load_cached_with_outcome<T: Scalar>(
    path: impl AsRef<Path>,
    cache_dir: Option<&Path>,
) -> Result<(Csr<T>, CacheOutcome)> {
    let (a, o) = load_cached_core(path.as_ref(), cache_dir, false)?;
    Ok((a.into_offsets()?, o))
}

/// [`load_cached_any`], also saying whether the cache was hit, built or rebuilt.
pub fn load_cached_any_with_outcome<T: Scalar>(
    path: impl AsRef<Path>,
    cache_dir: Option<&Path>,
) -> Result<(AnyCsr<T>, CacheOutcome)> {
    load_cached_core(path.as_ref(), cache_dir, true)
}

/// The loader behind both: `any` reads a source in the width it needs, else at 32 bits.
fn load_cached_core<T: Scalar>(
    path: &Path,
    cache_dir: Option<&Path>,
    any: bool,
) -> Result<(AnyCsr<T>, CacheOutcome)> {
    let parse = |p: &Path| -> Result<AnyCsr<T>> {
        if any {
            super::read_matrix_market_any(p)
        } else {
            super::read_matrix_market(p).map(AnyCsr::W32)
        }
    };
    if is_cache_path(path) {
        return Ok((read_cache_any(path)?, CacheOutcome::Direct));
    }
    let Some(dir) = cache_dir.map(Path::to_path_buf).or_else(default_cache_dir) else {
        return Ok((parse(path)?, CacheOutcome::Direct));
    };
    let stamp = source_stamp(path)?;
    let cpath = cache_path_for::<T>(path, &dir);
    let mut reason = None;
    if cpath.exists() {
        match read_cache_checked::<T>(&cpath, Some(stamp)) {
            Ok(a) => return Ok((a, CacheOutcome::Hit(cpath))),
            Err(e) => reason = Some(e.to_string()),
        }
    }
    let a = parse(path)?;
    let written = std::fs::create_dir_all(&dir)
        .map_err(|e| Error::io(&dir, e))
        .and_then(|_| match &a {
            AnyCsr::W32(a) => write_cache(&cpath, a, Some(path)),
            AnyCsr::W64(a) => write_cache(&cpath, a, Some(path)),
        });
    let outcome = match (written, reason) {
        (Err(e), _) => CacheOutcome::NotWritten {
            path: cpath,
            reason: e.to_string(),
        },
        (Ok(()), Some(reason)) => CacheOutcome::Rebuilt {
            path: cpath,
            reason,
        },
        (Ok(()), None) => CacheOutcome::Built(cpath),
    };
    Ok((a, outcome))
}

/// The cache file a range reader should open for `path` (issue #26): `path` itself when it is
/// a `.spmvkit` file; else the cache for it in `cache_dir` (default [`default_cache_dir`]),
/// reused when its header records the source's current size and mtime, and otherwise built by
/// one parse of the source (the one pass over Matrix Market text; the ranks then read ranges).
/// With no cache directory it is an [`Error::Cache`] naming the file.
pub fn ensure_cache<T: Scalar>(
    path: impl AsRef<Path>,
    cache_dir: Option<&Path>,
) -> Result<PathBuf> {
    let path = path.as_ref();
    if is_cache_path(path) {
        return Ok(path.to_path_buf());
    }
    let dir = cache_dir
        .map(Path::to_path_buf)
        .or_else(default_cache_dir)
        .ok_or_else(|| cache_err(path, "no cache directory (set SPMVKIT_CACHE_DIR)"))?;
    let stamp = source_stamp(path)?;
    let cpath = cache_path_for::<T>(path, &dir);
    let fresh = read_cache_header(&cpath)
        .is_ok_and(|h| (h.source_size, h.source_mtime_ns) == stamp && h.precision == T::PRECISION);
    if !fresh {
        let a = super::read_matrix_market::<T>(path)?;
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        write_cache(&cpath, &a, Some(path))?;
    }
    Ok(cpath)
}

/// Loads a matrix through the binary cache: a valid cache for `path` in `cache_dir` (default
/// [`default_cache_dir`]) is read; a missing, stale or damaged one is rebuilt from the source.
/// Failing to write the cache is not an error (the parsed matrix is returned).
pub fn load_cached<T: Scalar>(path: impl AsRef<Path>, cache_dir: Option<&Path>) -> Result<Csr<T>> {
    load_cached_with_outcome(path, cache_dir).map(|r| r.0)
}

/// [`load_cached`] in the width the matrix needs (docs/offsets.md): a source of more than
/// 2^31−1 nonzeros is read with 64-bit offsets and cached as format version 2.
pub fn load_cached_any<T: Scalar>(
    path: impl AsRef<Path>,
    cache_dir: Option<&Path>,
) -> Result<AnyCsr<T>> {
    load_cached_any_with_outcome(path, cache_dir).map(|r| r.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Csr<f64> {
        Csr::new(
            3,
            4,
            vec![0, 2, 2, 3],
            vec![0, 3, 1],
            vec![1.5, -2.0, 1e-300],
        )
        .unwrap()
    }

    #[test]
    fn range_reads_equal_the_rows_of_the_whole_matrix() {
        let dir = tempfile::tempdir().unwrap();
        let a = crate::gen::generate_f64("powerlaw:300,6,seed=3").unwrap();
        let p = dir.path().join("a.spmvkit");
        write_cache(&p, &a, None).unwrap();
        let f = CacheRows::open(&p).unwrap();
        assert_eq!(f.row_ptr(0..a.nrows()).unwrap(), a.row_ptr());
        for (lo, hi) in [
            (0, 0),
            (0, 1),
            (0, 300),
            (17, 18),
            (17, 140),
            (299, 300),
            (300, 300),
        ] {
            let got = f.rows::<f64>(lo..hi).unwrap();
            let want = a.slice_rows(lo..hi).unwrap();
            assert_eq!(got, want, "rows {lo}..{hi}");
            // the other precision converts, as read_cache does
            let g32 = f.rows::<f32>(lo..hi).unwrap();
            assert_eq!(g32.col_idx(), want.col_idx());
        }
        assert!(matches!(f.rows::<f64>(10..301), Err(Error::Cache { .. })));
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = 5..4;
        assert!(matches!(f.rows::<f64>(backwards), Err(Error::Cache { .. })));
        // a truncated file is refused at open
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() - 8]).unwrap();
        assert!(matches!(CacheRows::open(&p), Err(Error::Cache { .. })));
        // a damaged row pointer in the range is refused
        let mut bad = bytes.clone();
        bad[HEADER_LEN + 4 * 20..HEADER_LEN + 4 * 21].copy_from_slice(&u32::MAX.to_le_bytes());
        std::fs::write(&p, &bad).unwrap();
        let f = CacheRows::open(&p).unwrap();
        assert!(matches!(f.rows::<f64>(10..30), Err(Error::Cache { .. })));
        assert!(f.rows::<f64>(30..40).is_ok());
    }

    #[test]
    fn ensure_cache_builds_once_then_reuses() {
        let dir = tempfile::tempdir().unwrap();
        let a = crate::gen::generate_f64("poisson2d:9").unwrap();
        let mtx = dir.path().join("a.mtx");
        crate::io::write_matrix_market(&mtx, &a).unwrap();
        let c = ensure_cache::<f64>(&mtx, Some(dir.path())).unwrap();
        let t = std::fs::metadata(&c).unwrap().modified().unwrap();
        assert_eq!(ensure_cache::<f64>(&mtx, Some(dir.path())).unwrap(), c);
        assert_eq!(std::fs::metadata(&c).unwrap().modified().unwrap(), t);
        assert_eq!(CacheRows::open(&c).unwrap().rows::<f64>(0..81).unwrap(), a);
        assert_eq!(ensure_cache::<f64>(&c, None).unwrap(), c);
    }

    #[test]
    fn cache_round_trip_in_both_widths() {
        let dir = tempfile::tempdir().unwrap();
        let a = crate::gen::generate_f64("powerlaw:500,7,seed=2").unwrap();
        let wide = a.with_offsets::<u64>().unwrap();
        let (p32, p64) = (dir.path().join("a.spmvkit"), dir.path().join("w.spmvkit"));
        write_cache(&p32, &a, None).unwrap();
        write_cache(&p64, &wide, None).unwrap();
        let (h32, h64) = (
            read_cache_header(&p32).unwrap(),
            read_cache_header(&p64).unwrap(),
        );
        assert_eq!((h32.version, h32.offsets), (VERSION, OffsetWidth::W32));
        assert_eq!((h64.version, h64.offsets), (VERSION_WIDE, OffsetWidth::W64));
        let (m, nnz) = (a.nrows() as u64, a.nnz() as u64);
        let len = |p: &Path| std::fs::metadata(p).unwrap().len();
        assert_eq!(
            len(&p32),
            (64 + 4 * (m + 1) + 4 * nnz).next_multiple_of(8) + 8 * nnz
        );
        assert_eq!(
            len(&p64),
            (64 + 8 * (m + 1) + 4 * nnz).next_multiple_of(8) + 8 * nnz
        );
        assert_eq!(read_cache_any::<f64>(&p32).unwrap(), AnyCsr::W32(a.clone()));
        assert_eq!(
            read_cache_any::<f64>(&p64).unwrap(),
            AnyCsr::W64(wide.clone())
        );
        // the 32-bit readers narrow a small version 2 file
        assert_eq!(read_cache::<f64>(&p64).unwrap(), a);
        let as32 = read_cache_any::<f32>(&p64).unwrap();
        assert_eq!(as32.width(), OffsetWidth::W64);
        assert_eq!(as32.into_offsets::<u32>().unwrap(), a.cast::<f32>());
        // range reads refuse a 64-bit cache, saying why
        let e = CacheRows::open(&p64).err().unwrap();
        assert!(e.to_string().contains("64-bit"), "{e}");
        // a damaged 64-bit row pointer is caught
        let mut bad = std::fs::read(&p64).unwrap();
        bad[HEADER_LEN + 8 * 7..HEADER_LEN + 8 * 8].copy_from_slice(&(1u64 << 35).to_le_bytes());
        std::fs::write(&p64, &bad).unwrap();
        assert!(matches!(
            read_cache_any::<f64>(&p64),
            Err(Error::Cache { .. })
        ));
    }

    #[test]
    fn cache_header_counts_past_2_31() {
        let head = |version: u32, nnz: u64| {
            let mut b = [0u8; HEADER_LEN];
            b[..8].copy_from_slice(MAGIC);
            b[8..12].copy_from_slice(&version.to_le_bytes());
            b[12..16].copy_from_slice(&4u32.to_le_bytes());
            b[16..24].copy_from_slice(&MAX_INDEX.to_le_bytes());
            b[24..32].copy_from_slice(&7u64.to_le_bytes());
            b[32..40].copy_from_slice(&nnz.to_le_bytes());
            b[60..64].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
            parse_header(Path::new("h.spmvkit"), &b)
        };
        assert!(head(VERSION, MAX_INDEX).is_ok());
        assert!(matches!(
            head(VERSION, MAX_INDEX + 1),
            Err(Error::Cache { .. })
        ));
        let h = head(VERSION_WIDE, 1 << 40).unwrap();
        assert_eq!(h.offsets, OffsetWidth::W64);
        let (po, co, vo, end) = layout(&h).unwrap();
        assert_eq!(po, HEADER_LEN);
        assert_eq!(co - po, 8 * (MAX_INDEX as usize + 1));
        assert_eq!(vo, (co + 4 * (1usize << 40)).next_multiple_of(8));
        assert_eq!(end - vo, 4 * (1usize << 40));
        assert!(matches!(
            head(VERSION_WIDE, (1 << 40) + 1),
            Err(Error::Cache { .. })
        ));
        assert!(matches!(head(3, 1), Err(Error::Cache { .. })));
    }

    #[test]
    fn cache_round_trip_and_damage() {
        let dir = std::env::temp_dir().join(format!("spmvkit-cache-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.spmvkit");
        write_cache(&p, &sample(), None).unwrap();
        assert_eq!(read_cache::<f64>(&p).unwrap(), sample());
        let h = read_cache_header(&p).unwrap();
        assert_eq!((h.nrows, h.ncols, h.nnz), (3, 4, 3));
        let mut bytes = std::fs::read(&p).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&p, &bytes).unwrap();
        assert!(matches!(read_cache::<f64>(&p), Err(Error::Cache { .. })));
        std::fs::write(&p, &bytes[..40]).unwrap();
        assert!(matches!(read_cache::<f64>(&p), Err(Error::Cache { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
