//! `tilespmv`: TileSpMV after Niu et al., "TileSpMV: A Tiled Algorithm for Sparse Matrix-Vector
//! Multiplication on GPUs", IPDPS'21 (our own implementation from the paper and the notes in
//! `shared/notes/methods.md` §4).
//!
//! The matrix is cut into 16×16 tiles; each non-empty tile is stored in the format its pattern
//! suits, with u8 indices (row and column nibbles, two column nibbles per byte where only columns
//! are stored):
//! - COO if nnz ≤ 12; DENSE if nnz ≥ 0.75·256; DENSE-ROW if every row is empty or full;
//!   DENSE-COL if every column is empty or full; ELL if the coefficient of variation of the 16
//!   row lengths is ≤ 0.2; else CSR (the paper's HYB is coded but disabled in the original, and
//!   left out here). The checks run in that order.
//! - Very sparse tiles (nnz ≤ `deferred`, default 2) are extracted into a separate COO matrix
//!   ("deferred COO"), done by extra warps of the same launch.
//! - Work units: a tile row's tiles in chunks of at most 4 (the original's PREFETCH_SMEM_TH).
//!
//! Kernel: a warp per work unit; its two half-warps take alternate tiles, lane r of a half
//! accumulating row r of the tile row; the halves are added and lane r adds α·sum to y with an
//! atomic (tile rows split over units, and the deferred COO, meet in y). y is first scaled by β
//! (`spmvkit_scale`), inside the call. Float atomics: not deterministic.
//!
//! Unlike the public code: no warp shuffles inside the per-format code (its ELL path used a wrong
//! shuffle mask that crashes on sm_90), and x is never read past its end (tiles at the right
//! edge guard their column).

mod cpu;
mod gpu;

use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::matrix::Csr;
use crate::methods::common::room::{forward, method, room_kernel};
use crate::methods::params::params;
use crate::methods::{Layout, ParamSpec};
use crate::scalar::{Idx, Scalar};

room_kernel!("tilespmv", [gpu::TileArgs::params_entry("tilespmv_spmv")]);

const NAME: &str = "tilespmv";

/// Tile side.
pub(crate) const TILE: usize = 16;

/// Per-tile formats (the kernel's numbering).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Format {
    Dense = 0,
    Coo = 1,
    Csr = 2,
    Ell = 3,
    DenseRow = 4,
    DenseCol = 5,
}

params! {
    /// The format rules as data: the parameters of `tilespmv`.
    pub(crate) struct Rules {
        /// tiles with at most this many nonzeros are COO (COO_NNZ_TH)
        pub(crate) coo_nnz: usize = 12;
        /// tiles at least this full are DENSE
        pub(crate) dense_fill: f64 = 0.75, in 0.0..=1.0;
        /// tiles whose row-length coefficient of variation is at most this are ELL
        pub(crate) ell_cv: f64 = 0.2, in 0.0..;
        /// tiles per work unit (PREFETCH_SMEM_TH), 1..=64
        pub(crate) unit_tiles: usize = 4, in 1..=64;
        /// tiles with at most this many nonzeros go to the deferred COO part (0: none)
        pub(crate) deferred: usize = 2;
    }
}

const PARAMS: &[ParamSpec] = Rules::SPECS;

method! {
    /// The registry entry of `tilespmv`.
    pub struct TileSpmv {
        name: NAME,
        summary: "GPU: TileSpMV, 16x16 tiles in per-tile formats (dense, COO, CSR, ELL, \
                  dense-row, dense-col) with nibble indices, units of <= 4 tiles, deferred \
                  COO; y scaled by beta then atomics",
        source: "Niu et al., TileSpMV: a tiled algorithm for SpMV on GPUs, IPDPS'21",
        deterministic: false,
        params: PARAMS,
    }
    fn prepare(csr, params) {
        let rules = Rules::from_params(NAME, params)?;
        Ok(Box::new(TileLayout::build(csr, rules)))
    }
}

/// The format of a tile with `nnz` nonzeros, row lengths `rows` and column counts `cols`.
pub(crate) fn choose_format(nnz: usize, rows: &[u8; TILE], cols: &[u8; TILE], r: &Rules) -> Format {
    let full = TILE as u8;
    if nnz <= r.coo_nnz {
        Format::Coo
    } else if nnz as f64 >= r.dense_fill * (TILE * TILE) as f64 {
        Format::Dense
    } else if rows.iter().all(|&l| l == 0 || l == full) {
        Format::DenseRow
    } else if cols.iter().all(|&l| l == 0 || l == full) {
        Format::DenseCol
    } else {
        let mean = nnz as f64 / TILE as f64;
        let var = rows.iter().map(|&l| (l as f64 - mean).powi(2)).sum::<f64>() / TILE as f64;
        if var.sqrt() <= r.ell_cv * mean {
            Format::Ell
        } else {
            Format::Csr
        }
    }
}

/// One tile while building: column, format, aux, nnz, values and index bytes.
struct TileBuild<T> {
    col: u32,
    info: u32,
    vals: Vec<T>,
    idx: Vec<u8>,
}

/// Packs nibbles two per byte, the even one in the high nibble.
fn pack_nibbles(n: impl Iterator<Item = u8>) -> Vec<u8> {
    let v: Vec<u8> = n.collect();
    v.chunks(2)
        .map(|c| (c[0] << 4) | c.get(1).copied().unwrap_or(0))
        .collect()
}

/// Builds one tile from its entries (local row, local col, value), sorted by (row, col).
fn build_tile<T: Scalar>(tc: u32, e: &[(u8, u8, T)], rules: &Rules) -> TileBuild<T> {
    let mut rows = [0u8; TILE];
    let mut cols = [0u8; TILE];
    for &(r, c, _) in e {
        rows[r as usize] += 1;
        cols[c as usize] += 1;
    }
    let nnz = e.len();
    let f = choose_format(nnz, &rows, &cols, rules);
    let (mut vals, mut idx, mut aux) = (Vec::new(), Vec::new(), 0u32);
    match f {
        Format::Dense => {
            vals = vec![T::zero(); TILE * TILE];
            for &(r, c, v) in e {
                vals[r as usize * TILE + c as usize] = v;
            }
        }
        Format::Coo => {
            for &(r, c, v) in e {
                vals.push(v);
                idx.push((r << 4) | c);
            }
        }
        Format::Csr => {
            let mut start = 0u8;
            for &l in &rows {
                idx.push(start);
                start += l;
            }
            vals.extend(e.iter().map(|t| t.2));
            idx.extend(pack_nibbles(e.iter().map(|t| t.1)));
        }
        Format::Ell => {
            let w = rows.iter().copied().max().unwrap_or(0) as usize;
            aux = w as u32;
            vals = vec![T::zero(); w * TILE];
            let mut ecol = vec![0u8; w * TILE];
            let mut k = [0usize; TILE];
            for &(r, c, v) in e {
                let r = r as usize;
                vals[k[r] * TILE + r] = v;
                ecol[k[r] * TILE + r] = c;
                k[r] += 1;
            }
            idx = pack_nibbles(ecol.into_iter());
        }
        Format::DenseRow => {
            for (r, &l) in rows.iter().enumerate() {
                if l != 0 {
                    idx.push(r as u8);
                }
            }
            aux = idx.len() as u32;
            vals.extend(e.iter().map(|t| t.2));
        }
        Format::DenseCol => {
            let full: Vec<usize> = (0..TILE).filter(|&c| cols[c] != 0).collect();
            aux = full.len() as u32;
            idx = full.iter().map(|&c| c as u8).collect();
            vals = vec![T::zero(); full.len() * TILE];
            for &(r, c, v) in e {
                let j = full.partition_point(|&fc| fc < c as usize);
                vals[j * TILE + r as usize] = v;
            }
        }
    }
    TileBuild {
        col: tc,
        info: f as u32 | (aux << 8) | ((nnz as u32) << 16),
        vals,
        idx,
    }
}

/// The layout of `tilespmv`.
pub struct TileLayout<T> {
    pub(crate) nrows: usize,
    pub(crate) ncols: usize,
    pub(crate) rules: Rules,
    /// Per tile: tile column, info (format | aux << 8 | nnz << 16), value and index offsets.
    pub(crate) tile_col: Vec<Idx>,
    pub(crate) tile_info: Vec<u32>,
    pub(crate) tile_val: Vec<Idx>,
    pub(crate) tile_idx: Vec<Idx>,
    pub(crate) vals: Vec<T>,
    pub(crate) idx: Vec<u8>,
    /// Work units: tile row, first tile, tile count.
    pub(crate) unit_row: Vec<Idx>,
    pub(crate) unit_first: Vec<Idx>,
    pub(crate) unit_count: Vec<Idx>,
    /// Deferred COO entries.
    pub(crate) def_row: Vec<Idx>,
    pub(crate) def_col: Vec<Idx>,
    pub(crate) def_val: Vec<T>,
    stages: Vec<(&'static str, Duration)>,
}

impl<T: Scalar> TileLayout<T> {
    pub(crate) fn build(a: &Csr<T>, rules: Rules) -> Self {
        let t0 = Instant::now();
        let (nrows, ncols) = (a.nrows(), a.ncols());
        let rp = a.row_ptr();
        let ntr = nrows.div_ceil(TILE);
        type RowOut<T> = (Vec<TileBuild<T>>, Vec<(Idx, Idx, T)>);
        let per_row: Vec<RowOut<T>> = (0..ntr)
            .into_par_iter()
            .map(|tr| {
                let r0 = tr * TILE;
                let r1 = (r0 + TILE).min(nrows);
                let mut e: Vec<(u32, u8, u8, T)> = Vec::new();
                for r in r0..r1 {
                    for p in rp[r] as usize..rp[r + 1] as usize {
                        let c = a.col_idx()[p] as usize;
                        e.push((
                            (c / TILE) as u32,
                            (r - r0) as u8,
                            (c % TILE) as u8,
                            a.vals()[p],
                        ));
                    }
                }
                e.sort_by_key(|t| (t.0, t.1, t.2));
                let mut tiles = Vec::new();
                let mut deferred = Vec::new();
                for chunk in e.chunk_by(|x, y| x.0 == y.0) {
                    let tc = chunk[0].0;
                    if chunk.len() <= rules.deferred {
                        for &(_, r, c, v) in chunk {
                            deferred.push((
                                (r0 + r as usize) as Idx,
                                tc * TILE as u32 + c as u32,
                                v,
                            ));
                        }
                    } else {
                        let local: Vec<(u8, u8, T)> =
                            chunk.iter().map(|&(_, r, c, v)| (r, c, v)).collect();
                        tiles.push(build_tile(tc, &local, &rules));
                    }
                }
                (tiles, deferred)
            })
            .collect();
        let t1 = Instant::now();
        let mut l = TileLayout {
            nrows,
            ncols,
            rules,
            tile_col: Vec::new(),
            tile_info: Vec::new(),
            tile_val: Vec::new(),
            tile_idx: Vec::new(),
            vals: Vec::new(),
            idx: Vec::new(),
            unit_row: Vec::new(),
            unit_first: Vec::new(),
            unit_count: Vec::new(),
            def_row: Vec::new(),
            def_col: Vec::new(),
            def_val: Vec::new(),
            stages: Vec::new(),
        };
        for (tr, (tiles, deferred)) in per_row.into_iter().enumerate() {
            let first = l.tile_col.len();
            for t in tiles {
                l.tile_col.push(t.col);
                l.tile_info.push(t.info);
                l.tile_val.push(l.vals.len() as Idx);
                l.tile_idx.push(l.idx.len() as Idx);
                l.vals.extend(t.vals);
                l.idx.extend(t.idx);
            }
            let n = l.tile_col.len() - first;
            let mut s = 0;
            while s < n {
                let c = (n - s).min(rules.unit_tiles);
                l.unit_row.push(tr as Idx);
                l.unit_first.push((first + s) as Idx);
                l.unit_count.push(c as Idx);
                s += c;
            }
            for (r, c, v) in deferred {
                l.def_row.push(r);
                l.def_col.push(c);
                l.def_val.push(v);
            }
        }
        l.stages = vec![
            ("tiles + formats (per tile row)", t1 - t0),
            ("flatten + work units", t1.elapsed()),
        ];
        l
    }

    /// Tiles of each format, in [`Format`] order.
    pub(crate) fn format_counts(&self) -> [usize; 6] {
        let mut n = [0; 6];
        for &i in &self.tile_info {
            n[(i & 0xff) as usize] += 1;
        }
        n
    }
}

impl<T: Scalar> Layout<T> for TileLayout<T> {
    fn footprint_bytes(&self) -> usize {
        4 * (self.tile_col.len() * 4
            + self.unit_row.len() * 3
            + self.def_row.len()
            + self.def_col.len())
            + self.idx.len()
            + T::BYTES * (self.vals.len() + self.def_val.len())
    }

    forward! { run_cpu, upload }

    fn prep_stages(&self) -> Vec<(&'static str, Duration)> {
        self.stages.clone()
    }

    fn notes(&self) -> Vec<(String, String)> {
        let n = self.format_counts();
        vec![
            (
                "tiles dense/coo/csr/ell/dense-row/dense-col".into(),
                format!("{}/{}/{}/{}/{}/{}", n[0], n[1], n[2], n[3], n[4], n[5]),
            ),
            ("work units".into(), self.unit_row.len().to_string()),
            ("deferred COO nnz".into(), self.def_val.len().to_string()),
            (
                "rules".into(),
                format!(
                    "coo<={} dense>={} ell_cv<={} unit<={} deferred<={}",
                    self.rules.coo_nnz,
                    self.rules.dense_fill,
                    self.rules.ell_cv,
                    self.rules.unit_tiles,
                    self.rules.deferred
                ),
            ),
        ]
    }
}

#[cfg(test)]
mod tests;
