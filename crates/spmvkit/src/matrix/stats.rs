//! Matrix statistics used by `spmv info`, the harness reports and the `auto` model: shape,
//! empty lines, row and column length distributions, the coefficient of variation of row
//! lengths (the "variation" of FastLoad Fig. 8) and the bandwidth.
//!
//! The x-sector counts ([`x_sectors`], filled in by the benchmark harness through
//! [`MatrixStats::with_x_sectors`]) are the gather side of a result's limit
//! (`bench::limits`): the rows are cut into warp-chunks of [`CHUNK_ROWS`] = 32 consecutive rows,
//! and for each chunk the distinct [`SECTOR_BYTES`] = 32-byte sectors of x its column indices
//! touch are counted (sector of column j: ⌊j · value bytes / 32⌋, so 8 f32 or 4 f64 entries of x
//! per sector; x starts on a 256-byte boundary on the device), summed over the chunks. It is an
//! upper bound on the L2 → SM traffic for x when no sector is reused across warps.
//!
//! The byte model ([`byte_model`]: the bytes one CSR SpMV must move at least) and [`fits_l2`]
//! (whether that working set fits a GPU's L2) live here too: the harness records them and
//! `auto`'s model takes `fits_l2` as a feature, so neither `methods/` nor `bench/` owns them.

use std::sync::atomic::{AtomicU32, Ordering};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::Csr;
use crate::scalar::{Offset, Scalar};

/// Min, max, mean and (population) standard deviation of line lengths.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LengthStats {
    pub min: u64,
    pub max: u64,
    pub mean: f64,
    pub std: f64,
}

impl LengthStats {
    /// Statistics of a sequence of lengths.
    pub fn of(lengths: impl Iterator<Item = u64>) -> Self {
        let (mut n, mut min, mut max, mut sum, mut sq) = (0u64, u64::MAX, 0u64, 0f64, 0f64);
        for l in lengths {
            n += 1;
            min = min.min(l);
            max = max.max(l);
            sum += l as f64;
            sq += (l as f64) * (l as f64);
        }
        if n == 0 {
            return LengthStats::default();
        }
        let mean = sum / n as f64;
        let var = (sq / n as f64 - mean * mean).max(0.0);
        LengthStats {
            min,
            max,
            mean,
            std: var.sqrt(),
        }
    }

    /// Coefficient of variation std/mean (0 for an empty matrix).
    pub fn variation(&self) -> f64 {
        if self.mean > 0.0 {
            self.std / self.mean
        } else {
            0.0
        }
    }
}

/// Structural statistics of a sparse matrix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatrixStats {
    pub nrows: usize,
    pub ncols: usize,
    pub nnz: usize,
    pub density: f64,
    pub empty_rows: usize,
    pub empty_cols: usize,
    pub row_len: LengthStats,
    pub col_len: LengthStats,
    /// Coefficient of variation of row lengths (std/mean): FastLoad Fig. 8's "variation".
    pub row_variation: f64,
    /// max over entries of (i − j), 0 if none below the diagonal.
    pub lower_bandwidth: u64,
    /// max over entries of (j − i), 0 if none above the diagonal.
    pub upper_bandwidth: u64,
    /// max |i − j| over entries.
    pub bandwidth: u64,
    /// Bytes of the CSR arrays in this precision.
    pub csr_bytes: usize,
    /// Distinct 32-byte sectors of an f32 x touched per chunk of 32 rows, summed over the
    /// chunks ([`x_sectors`]); `None` where not counted (`spmv info`, runs before the count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x_sectors_f32: Option<u64>,
    /// The same count for an f64 x.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x_sectors_f64: Option<u64>,
}

/// The statistics of the rows alone: lengths, empty rows and bandwidths, in one parallel pass
/// over the row pointers and each row's first and last column. All that `auto`'s model reads
/// from a matrix ([`crate::methods::auto::model::Features::from_rows`]), without the column counts
/// of [`MatrixStats::of`], a scatter over every nonzero (most of `auto`'s analysis time on large
/// random-column matrices).
#[derive(Clone, Debug, PartialEq)]
pub struct RowStats {
    pub nrows: usize,
    pub ncols: usize,
    pub nnz: usize,
    pub row_len: LengthStats,
    pub empty_rows: usize,
    /// max over entries of (i − j), 0 if none below the diagonal.
    pub lower_bandwidth: u64,
    /// max over entries of (j − i), 0 if none above the diagonal.
    pub upper_bandwidth: u64,
}

impl RowStats {
    /// Computes the row statistics of `a` (row offsets of either width).
    pub fn of<T: Scalar, O: Offset>(a: &Csr<T, O>) -> Self {
        let n = a.nrows();
        let row_len = LengthStats::of((0..n).map(|i| a.row_len(i) as u64));
        let empty_rows = (0..n).filter(|&i| a.row_len(i) == 0).count();
        let (lower, upper) = (0..n)
            .into_par_iter()
            .map(|i| {
                let (cols, _) = a.row(i);
                match (cols.first(), cols.last()) {
                    (Some(&first), Some(&last)) => (
                        (i as u64).saturating_sub(first as u64),
                        (last as u64).saturating_sub(i as u64),
                    ),
                    _ => (0, 0),
                }
            })
            .reduce(|| (0, 0), |x, y| (x.0.max(y.0), x.1.max(y.1)));
        RowStats {
            nrows: n,
            ncols: a.ncols(),
            nnz: a.nnz(),
            row_len,
            empty_rows,
            lower_bandwidth: lower,
            upper_bandwidth: upper,
        }
    }

    /// max |i − j| over entries.
    pub fn bandwidth(&self) -> u64 {
        self.lower_bandwidth.max(self.upper_bandwidth)
    }
}

impl MatrixStats {
    /// Computes the statistics in parallel passes over rows ([`RowStats`]) and over the column
    /// indices (row offsets of either width).
    pub fn of<T: Scalar, O: Offset>(a: &Csr<T, O>) -> Self {
        let rows = RowStats::of(a);
        // Column counts by relaxed atomic increments from every thread: a serial scatter of
        // random columns took most of a second on 64M nonzeros. A column holds at most one
        // entry per row (duplicates are merged), so its count fits 32 bits at any nnz.
        let col_counts: Vec<AtomicU32> = (0..a.ncols())
            .into_par_iter()
            .map(|_| AtomicU32::new(0))
            .collect();
        a.col_idx().par_chunks(1 << 16).for_each(|chunk| {
            for &c in chunk {
                col_counts[c as usize].fetch_add(1, Ordering::Relaxed);
            }
        });
        let col_counts: Vec<u32> = col_counts
            .into_par_iter()
            .map(AtomicU32::into_inner)
            .collect();
        let col_len = LengthStats::of(col_counts.iter().map(|&c| c as u64));
        let empty_cols = col_counts.par_iter().filter(|&&c| c == 0).count();
        let cells = rows.nrows as f64 * a.ncols() as f64;
        MatrixStats {
            nrows: rows.nrows,
            ncols: rows.ncols,
            nnz: rows.nnz,
            density: if cells > 0.0 {
                rows.nnz as f64 / cells
            } else {
                0.0
            },
            empty_rows: rows.empty_rows,
            empty_cols,
            row_variation: rows.row_len.variation(),
            row_len: rows.row_len,
            col_len,
            lower_bandwidth: rows.lower_bandwidth,
            upper_bandwidth: rows.upper_bandwidth,
            bandwidth: rows.bandwidth(),
            csr_bytes: a.bytes(),
            x_sectors_f32: None,
            x_sectors_f64: None,
        }
    }

    /// The statistics with the x-sector counts of `a` ([`x_sectors`]) filled in.
    pub fn with_x_sectors<T: Scalar>(mut self, a: &Csr<T>) -> Self {
        let s = x_sectors(a);
        self.x_sectors_f32 = Some(s.f32);
        self.x_sectors_f64 = Some(s.f64);
        self
    }

    /// x sectors per nonzero for values of `value_bytes` bytes (4 or 8), if counted and the
    /// matrix has nonzeros: the exact form of [`x_sector_share`].
    pub fn x_share(&self, value_bytes: usize) -> Option<f64> {
        self.x_sectors(value_bytes)
            .filter(|_| self.nnz > 0)
            .map(|s| s as f64 / self.nnz as f64)
    }

    /// The x-sector count for values of `value_bytes` bytes (4 or 8), if counted.
    pub fn x_sectors(&self, value_bytes: usize) -> Option<u64> {
        match value_bytes {
            4 => self.x_sectors_f32,
            8 => self.x_sectors_f64,
            _ => None,
        }
    }
}

/// Bytes of a CSR matrix with 32-bit indices: values and column indices, `(vb + 4)·nnz`, and
/// row pointers, `4·(rows + 1)`.
pub fn csr_matrix_bytes(nrows: usize, nnz: usize, value_bytes: usize) -> u64 {
    let (r, z, vb) = (nrows as u64, nnz as u64, value_bytes as u64);
    (vb + 4) * z + 4 * (r + 1)
}

/// Bytes one SpMV must move at least: the CSR matrix once ([`csr_matrix_bytes`]), x once and y
/// once: `(vb + 4)·nnz + 4·(rows + 1) + vb·cols + vb·rows`.
pub fn byte_model(nrows: usize, ncols: usize, nnz: usize, value_bytes: usize) -> u64 {
    let (r, c, vb) = (nrows as u64, ncols as u64, value_bytes as u64);
    csr_matrix_bytes(nrows, nnz, value_bytes) + vb * c + vb * r
}

/// Whether a matrix's working set fits an L2 of `l2_bytes` (None: no GPU, so no), judged by
/// [`byte_model`] with f64 values whatever the run's precision: the `fits_l2` of every run
/// record, and a feature of `auto`'s model.
pub fn fits_l2(nrows: usize, ncols: usize, nnz: usize, l2_bytes: Option<u64>) -> bool {
    l2_bytes.is_some_and(|l2| byte_model(nrows, ncols, nnz, 8) <= l2)
}

/// Rows per chunk in the x-sector count: one warp's worth of rows.
pub const CHUNK_ROWS: usize = 32;

/// Bytes per sector in the x-sector count: the unit an L2 → SM transfer moves.
pub const SECTOR_BYTES: usize = 32;

/// The x-sector counts of a matrix for f32 and f64 values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XSectors {
    pub f32: u64,
    pub f64: u64,
}

/// Counts, for every chunk of [`CHUNK_ROWS`] consecutive rows, the distinct [`SECTOR_BYTES`]
/// sectors of x its column indices touch, for 4- and 8-byte values, and sums over the chunks
/// (module doc). In parallel over chunks, each counted in one pass over its column indices with
/// a small open-addressing hash set.
pub fn x_sectors<T: Scalar>(a: &Csr<T>) -> XSectors {
    let (sectors, _) = count_chunks(a, 1);
    sectors
}

/// Chunks counted at most by [`x_sector_share`]: about 0.5M column indices for rows of 32.
pub const SHARE_SAMPLE_CHUNKS: usize = 16_384;

/// x sectors per nonzero ([`x_sectors`] divided by nnz) for f32 and f64 values, estimated from
/// an evenly strided sample of at most `max_chunks` chunks (every chunk when there are no more):
/// how scattered the column indices are, near 1 for random columns and near 1/4 (f64) or 1/8
/// (f32) for a dense band. `auto`'s model reads it as a feature; its cost does not grow with the
/// matrix. `None` for a matrix without nonzeros.
pub fn x_sector_share<T: Scalar>(a: &Csr<T>, max_chunks: usize) -> Option<(f64, f64)> {
    let chunks = a.nrows().div_ceil(CHUNK_ROWS);
    let stride = chunks.div_ceil(max_chunks.max(1)).max(1);
    let (s, nnz) = count_chunks(a, stride);
    (nnz > 0).then(|| (s.f32 as f64 / nnz as f64, s.f64 as f64 / nnz as f64))
}

/// The x-sector counts over every `stride`-th chunk, with the nonzeros of those chunks.
fn count_chunks<T: Scalar>(a: &Csr<T>, stride: usize) -> (XSectors, u64) {
    let (rp, ci) = (a.row_ptr(), a.col_idx());
    let n = a.nrows();
    let (f32, f64, nnz) = (0..n.div_ceil(CHUNK_ROWS))
        .into_par_iter()
        .step_by(stride)
        .with_min_len(64)
        .map_init(SectorSet::default, |set, c| {
            let lo = rp[c * CHUNK_ROWS] as usize;
            let hi = rp[((c + 1) * CHUNK_ROWS).min(n)] as usize;
            let (s32, s64) = set.count(&ci[lo..hi]);
            (s32, s64, (hi - lo) as u64)
        })
        .reduce(|| (0, 0, 0), |x, y| (x.0 + y.0, x.1 + y.1, x.2 + y.2));
    (XSectors { f32, f64 }, nnz)
}

/// Scratch space of the sector count, reused from chunk to chunk: an open-addressing hash set
/// of f32 sector ids (32 bytes of f32 x = two 32-byte sectors of f64 x), each slot holding the
/// id shifted left by two and, in the low two bits, which of its two f64 sectors were seen. So
/// one probe per column index counts both.
#[derive(Default)]
struct SectorSet {
    slots: Vec<u32>,
}

/// An empty slot: no f32 sector id (a column index shifted right by 3) reaches `u32::MAX >> 2`.
const EMPTY: u32 = u32::MAX;

impl SectorSet {
    /// (f32, f64) distinct sector counts of one chunk's column indices.
    fn count(&mut self, cols: &[u32]) -> (u64, u64) {
        // an f64 sector holds 4 entries, an f32 sector 8
        const F64_SHIFT: u32 = (SECTOR_BYTES / 8).trailing_zeros();
        if cols.is_empty() {
            return (0, 0);
        }
        // at most half full: short probe sequences
        let cap = (2 * cols.len()).next_power_of_two().max(16);
        let bits = cap.trailing_zeros();
        self.slots.clear();
        self.slots.resize(cap, EMPTY);
        let t = &mut self.slots[..];
        let mask = cap - 1;
        let (mut n32, mut n64) = (0u64, 0u64);
        let mut prev = EMPTY;
        for &c in cols {
            let s = c >> F64_SHIFT;
            // neighbouring columns of a row share sectors: a repeat needs no probe
            if s == prev {
                continue;
            }
            prev = s;
            let (key, half) = (s >> 1, 1u32 << (s & 1));
            let mut i = (key.wrapping_mul(0x9E37_79B1) >> (32 - bits)) as usize;
            loop {
                let v = t[i];
                if v == EMPTY {
                    t[i] = key << 2 | half;
                    n32 += 1;
                    n64 += 1;
                    break;
                }
                if v >> 2 == key {
                    if v & half == 0 {
                        t[i] = v | half;
                        n64 += 1;
                    }
                    break;
                }
                i = (i + 1) & mask;
            }
        }
        (n32, n64)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// RowStats against a serial recount from the CSR arrays (not through RowStats, which
    /// MatrixStats::of builds on): lengths, empty rows (the last row empty too), bandwidths.
    #[test]
    fn row_stats_match_a_serial_recount() {
        let a: Csr<f64> = Csr::new(
            4,
            5,
            vec![0, 2, 2, 5, 5],
            vec![0, 3, 0, 2, 4],
            vec![1.0f64; 5],
        )
        .unwrap();
        let r = RowStats::of(&a);
        assert_eq!((r.nrows, r.ncols, r.nnz, r.empty_rows), (4, 5, 5, 2));
        assert_eq!((r.row_len.min, r.row_len.max), (0, 3));
        assert_eq!(
            (r.lower_bandwidth, r.upper_bandwidth, r.bandwidth()),
            (2, 3, 3)
        );
        for spec in [
            "kron:9",
            "powerlaw:2000,5",
            "tall:700,200,3",
            "banded:500,7",
        ] {
            let a = crate::gen::generate::<f64>(spec).unwrap();
            let r = RowStats::of(&a);
            let lens: Vec<u64> = (0..a.nrows()).map(|i| a.row(i).0.len() as u64).collect();
            let (mut lo, mut hi) = (0u64, 0u64);
            for i in 0..a.nrows() {
                for &c in a.row(i).0 {
                    lo = lo.max((i as u64).saturating_sub(c as u64));
                    hi = hi.max((c as u64).saturating_sub(i as u64));
                }
            }
            assert_eq!(
                r.empty_rows,
                lens.iter().filter(|&&l| l == 0).count(),
                "{spec}"
            );
            assert_eq!(r.row_len.max, *lens.iter().max().unwrap(), "{spec}");
            assert_eq!(r.row_len.min, *lens.iter().min().unwrap(), "{spec}");
            assert_eq!((r.lower_bandwidth, r.upper_bandwidth), (lo, hi), "{spec}");
        }
    }

    #[test]
    fn byte_model_matches_notes_formula_for_f64() {
        // methods.md §0: 12·nnz + 4·(rows+1) + 8·cols + 8·rows
        assert_eq!(
            byte_model(10, 20, 100, 8),
            12 * 100 + 4 * 11 + 8 * 20 + 8 * 10
        );
        assert_eq!(
            byte_model(10, 20, 100, 4),
            8 * 100 + 4 * 11 + 4 * 20 + 4 * 10
        );
    }

    #[test]
    fn fits_l2_is_the_f64_byte_model_against_l2() {
        let bytes = byte_model(10, 20, 100, 8);
        assert!(fits_l2(10, 20, 100, Some(bytes)));
        assert!(!fits_l2(10, 20, 100, Some(bytes - 1)));
        assert!(!fits_l2(10, 20, 100, None));
    }

    /// A matrix of ones with the given column lists per row.
    fn rows(ncols: usize, rows: &[Vec<u32>]) -> Csr<f64> {
        let mut ptr = vec![0u32];
        let mut cols = Vec::new();
        for r in rows {
            cols.extend_from_slice(r);
            ptr.push(cols.len() as u32);
        }
        let n = cols.len();
        Csr::new(rows.len(), ncols, ptr, cols, vec![1.0; n]).unwrap()
    }

    #[test]
    fn the_sampled_share_is_exact_when_every_chunk_fits_and_close_on_a_stride() {
        // 64 chunks: the first half one column per row (32 sectors a chunk), the second half a
        // dense run of 8 columns per row shared by the chunk
        let mut r: Vec<Vec<u32>> = (0..1024u32).map(|i| vec![i * 64]).collect();
        r.extend((0..1024).map(|_| (0..8).collect()));
        let a = rows(1 << 16, &r);
        let exact = x_sectors(&a);
        let nnz = a.nnz() as f64;
        let (s32, s64) = x_sector_share(&a, 64).unwrap();
        assert_eq!(s32, exact.f32 as f64 / nnz);
        assert_eq!(s64, exact.f64 as f64 / nnz);
        let st = MatrixStats::of(&a).with_x_sectors(&a);
        assert_eq!(st.x_share(8), Some(s64));
        assert_eq!(MatrixStats::of(&a).x_share(8), None);
        // every other chunk: the same mix, so the same share
        let (e32, _) = x_sector_share(&a, 32).unwrap();
        assert!((e32 - s32).abs() < 1e-12, "{e32} vs {s32}");
        // no nonzeros, no share
        assert_eq!(x_sector_share(&rows(4, &[vec![], vec![]]), 8), None);
    }

    #[test]
    fn one_row_of_eight_columns_is_one_f32_sector_and_two_f64_sectors() {
        let a = rows(8, &[(0..8).collect()]);
        assert_eq!(x_sectors(&a), XSectors { f32: 1, f64: 2 });
        let a = rows(16, &[vec![7, 8]]);
        assert_eq!(x_sectors(&a), XSectors { f32: 2, f64: 2 });
    }

    #[test]
    fn sectors_are_shared_within_a_chunk_and_counted_again_in_the_next() {
        // Rows 0..32 (chunk 0): column 2i; rows 32..40 (chunk 1): column 0.
        let mut r: Vec<Vec<u32>> = (0..32).map(|i| vec![2 * i]).collect();
        r.extend((0..8).map(|_| vec![0]));
        let a = rows(64, &r);
        // chunk 0: columns 0, 2, …, 62: f32 sectors 0..8, f64 sectors 0..16; chunk 1: one each
        assert_eq!(x_sectors(&a), XSectors { f32: 9, f64: 17 });
        // the same column in every row of one chunk is one sector
        let a = rows(100, &vec![vec![99]; 32]);
        assert_eq!(x_sectors(&a), XSectors { f32: 1, f64: 1 });
        let a = rows(100, &vec![vec![99]; 33]);
        assert_eq!(x_sectors(&a), XSectors { f32: 2, f64: 2 });
    }

    #[test]
    fn long_rows_and_large_column_indices_collide_in_the_set_and_still_count_right() {
        // Columns far apart near the top of the index range, repeated in every row of a chunk,
        // in descending and ascending orders: full probe sequences and wrap-around in the set.
        let top = (1u32 << 31) - 2;
        let wide: Vec<u32> = (0..300).map(|k| top - 37 * k).rev().collect();
        let mut r = vec![wide.clone(); 40];
        r.push((0..2000).collect());
        r.push((0..2000).map(|k| 5 * k).collect());
        let a = rows(top as usize + 1, &r);
        let got = x_sectors(&a);
        assert_eq!(got, by_sets(&a));
        // chunk 0: 300 columns 37 apart, each its own sector; chunk 1: the same 300 again, and
        // columns 0..2000 with 0, 5, …, 9995: f32 sectors 0..1250 (every one hit, the first
        // row's 0..250 among them); f64: 2000 sectors ⌊5k/4⌋, plus the 100 of the first row's
        // 0..500 that no 5k hits (those below 500 are the 400 of k < 400)
        assert_eq!(got.f32, 300 + 300 + 1250);
        assert_eq!(got.f64, 300 + 300 + 2000 + 100);
    }

    #[test]
    fn empty_rows_and_matrices_count_nothing() {
        let a = rows(10, &[vec![], vec![3], vec![]]);
        assert_eq!(x_sectors(&a), XSectors { f32: 1, f64: 1 });
        let a = rows(10, &[]);
        assert_eq!(x_sectors(&a), XSectors::default());
        let s = MatrixStats::of(&a).with_x_sectors(&a);
        assert_eq!((s.x_sectors(4), s.x_sectors(8)), (Some(0), Some(0)));
        assert_eq!(MatrixStats::of(&a).x_sectors(8), None);
    }

    /// The count by the rule's letter: a set of sector ids per chunk.
    fn by_sets(a: &Csr<f64>) -> XSectors {
        let mut want = XSectors::default();
        for c in 0..a.nrows().div_ceil(CHUNK_ROWS) {
            let (mut s32, mut s64) = (HashSet::new(), HashSet::new());
            for i in c * CHUNK_ROWS..((c + 1) * CHUNK_ROWS).min(a.nrows()) {
                for &j in a.row(i).0 {
                    s32.insert(j as usize * 4 / SECTOR_BYTES);
                    s64.insert(j as usize * 8 / SECTOR_BYTES);
                }
            }
            want.f32 += s32.len() as u64;
            want.f64 += s64.len() as u64;
        }
        want
    }

    #[test]
    fn counts_match_a_set_per_chunk_on_generated_matrices() {
        for spec in ["poisson2d:40", "uniform:2000,30", "kron:10"] {
            let a = crate::gen::generate::<f64>(spec).unwrap();
            assert_eq!(x_sectors(&a), by_sets(&a), "{spec}");
        }
        let a = crate::gen::generate::<f64>("powerlaw:3000,12").unwrap();
        let got = x_sectors(&a);
        assert_eq!(got, by_sets(&a));
        // f64 needs at least as many sectors as f32, and at most twice as many
        assert!(got.f32 <= got.f64 && got.f64 <= 2 * got.f32);
        // the count depends on the pattern only
        assert_eq!(x_sectors(&a.cast::<f32>()), got);
    }

    #[test]
    fn sector_counts_survive_json_and_old_stats_load_without_them() {
        let a = rows(16, &[vec![1, 9]]);
        let s = MatrixStats::of(&a).with_x_sectors(&a);
        let back: MatrixStats = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
        let mut old = serde_json::to_value(MatrixStats::of(&a)).unwrap();
        assert!(old.get("x_sectors_f32").is_none());
        old.as_object_mut().unwrap().remove("x_sectors_f64");
        let back: MatrixStats = serde_json::from_value(old).unwrap();
        assert_eq!(back.x_sectors_f64, None);
    }
}
