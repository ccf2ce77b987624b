//! `amf-csr`: AMF-CSR, adaptive multi-row folding of CSR (Gao, Ji et al., ICPADS'21; as the TEB
//! paper teb.md §2.3 describes it; constants from the authors' code `double-flower/AMF-CSR`,
//! see shared/notes/methods.md §5).
//!
//! Folding: rows with ≥ `long` (1024, the code's SHARED_MEM_SIZE) entries are long and stay
//! alone. Consecutive short rows are folded into one folded row while it has fewer than 4 rows
//! (MAX_FOLD_ROWS) and `sum + next < T_s` (the TEB paper: "非零元素总数小于 T_s 时, 多行被折叠成
//! 一个行块"; the authors' code instead closes a fold right after the row that makes it exceed
//! T_s, which does not give the paper's Fig. 5 counts). The entries of a folded row are merged by
//! column (k-way merge; equal columns keep row order) and stored as `col << 2 | local_row`
//! (FOLD_BITS = 2). Consecutive folded rows form a block while `sum + next ≤ T_l` (T_l = 1024,
//! the shared-memory capacity of the code; a long row is a block of its own); a block also
//! closes after 4·(threads/TPV) folded rows so that runs of empty rows cannot pile into one CTA.
//! T_s = ⌊4·nnz_short / rows_short⌋ + 1: the code's "approximate nnz of a folded row" (the mean
//! nnz of four short rows), plus one so that the strict test admits a fold of exactly that size.
//!
//! On the paper's 8×8 matrix with T_s = 4, T_l = 7 this gives the three blocks of 6, 6 and 4
//! nnz of teb.md Fig. 5. The S² printed there (1.29) does not follow from 6/6/4 under Eq. 5
//! (0.889) nor under the sample variance (1.333); see the `pbc` module docs.
//!
//! Kernel (designed here: the authors' GPU kernel, `RFCOC_spmv_prepare0` in `utility.h`, is not
//! in the public tree): one CTA per block. In a block of folded rows, a vector of TPV lanes takes
//! a folded row; lane l takes entries l, l + TPV, … and accumulates into four partial sums chosen
//! by the local row bits; the four sums are reduced across the vector by a shuffle butterfly and
//! lane 0 writes the fold's (up to four) rows of y. A block holding one long row is summed by the
//! whole CTA (strided lanes, warp butterfly, warp partials added in order by thread 0). TPV =
//! ⌈√(mean nnz per folded row)⌉ (the code's rule), rounded up to a power of two (≤ 32) for the
//! butterfly. Deterministic: fixed summation order, no atomics.
//!
//! Storage (the paper's RowPtr in two parts, ColIndex, Val): `fold_row` (first original row of
//! each folded row, + M), `fold_ptr` (entry offsets), `blk_fold` (first folded row of each
//! block), `cols` (packed), `vals`. Columns must be < 2^30.

mod cpu;
mod gpu;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::matrix::Csr;
use crate::methods::common::checks::THREADS;
use crate::methods::common::room::{forward, method, room_kernel};
use crate::methods::params::{one_of, params, AutoOr};
use crate::methods::{Layout, ParamSpec, Params};
use crate::scalar::{Idx, Scalar};

room_kernel!(
    "amf-csr",
    gpu::AmfArgs: ["amf_csr_t1", "amf_csr_t2", "amf_csr_t4", "amf_csr_t8", "amf_csr_t16", "amf_csr_t32"]
);

const NAME: &str = "amf-csr";

/// Rows folded together at most (MAX_FOLD_ROWS).
pub const MAX_FOLD_ROWS: usize = 4;
/// Bits of the local row in a packed column (FOLD_BITS).
pub const FOLD_BITS: u32 = 2;

params! {
    /// The parameters of `amf-csr`.
    struct AmfParams {
        /// T_s: a fold takes the next row while sum + next < T_s; auto = floor(4 * nnz / rows over
        /// short rows) + 1
        ts: AutoOr<u64> = auto;
        /// T_l: a block takes the next folded row while sum + next <= T_l
        tl: u64 = 1024, in 1..;
        /// rows with at least this many entries are long: never folded, a block of their own,
        /// summed by the whole CTA
        long: u32 = 1024, in 1..;
        /// threads per folded row: auto (ceil(sqrt(mean nnz per folded row)), rounded up to a power
        /// of two) or 1, 2, 4, 8, 16, 32
        tpv: AutoOr<u32> = auto, in one_of([1, 2, 4, 8, 16, 32]);
        /// threads per CTA (a multiple of 32, at most 1024)
        threads: u32 = 128, in THREADS;
    }
}

const PARAMS: &[ParamSpec] = AmfParams::SPECS;

method! {
    /// The registry entry of `amf-csr`.
    pub struct AmfCsr {
        name: NAME,
        summary: "GPU: AMF-CSR, up to 4 short rows folded by column, folds grouped in blocks \
                  of <= T_l nnz, a TPV-lane vector per fold",
        source: "Gao et al., AMF-CSR, ICPADS'21 (via teb.md §2.3 and the authors' code)",
        deterministic: true,
        params: PARAMS,
    }
    fn prepare(csr, params) {
        Ok(Box::new(build(csr, params)?))
    }
}

/// The layout of `amf-csr`.
pub struct AmfLayout<T> {
    nrows: usize,
    ncols: usize,
    /// First original row of each folded row, then M.
    fold_row: Vec<Idx>,
    /// Entry offsets of the folded rows.
    fold_ptr: Vec<Idx>,
    /// First folded row of each block, then the fold count.
    blk_fold: Vec<Idx>,
    /// `col << 2 | local_row`.
    cols: Vec<Idx>,
    vals: Vec<T>,
    ts: u64,
    tl: u64,
    long: u32,
    tpv: u32,
    threads: u32,
}

impl<T> AmfLayout<T> {
    pub fn fold_row(&self) -> &[Idx] {
        &self.fold_row
    }
    pub fn fold_ptr(&self) -> &[Idx] {
        &self.fold_ptr
    }
    pub fn blk_fold(&self) -> &[Idx] {
        &self.blk_fold
    }
    pub fn cols(&self) -> &[Idx] {
        &self.cols
    }
    pub fn vals(&self) -> &[T] {
        &self.vals
    }
    pub fn tpv(&self) -> u32 {
        self.tpv
    }
    /// nnz of each block.
    pub fn block_nnz(&self) -> Vec<usize> {
        self.blk_fold
            .windows(2)
            .map(|w| (self.fold_ptr[w[1] as usize] - self.fold_ptr[w[0] as usize]) as usize)
            .collect()
    }
    fn nblocks(&self) -> usize {
        self.blk_fold.len() - 1
    }
    fn is_long_block(&self, b: usize) -> bool {
        let f = self.blk_fold[b] as usize;
        self.blk_fold[b + 1] as usize == f + 1
            && self.fold_row[f + 1] - self.fold_row[f] == 1
            && self.fold_ptr[f + 1] - self.fold_ptr[f] >= self.long
    }
}

/// Cuts the items 0..n into runs, in order: a run takes the next item while it has fewer than
/// `max_len` items, neither its first item nor the next is `alone`, and `fits` the sum of the
/// weights with the next one's. Returns the first item of each run, then n (`[0]` when n = 0).
/// Folds rows into folded rows (T_s) and folded rows into blocks (T_l).
fn greedy_runs(
    n: usize,
    max_len: usize,
    alone: impl Fn(usize) -> bool,
    weight: impl Fn(usize) -> u64,
    fits: impl Fn(u64) -> bool,
) -> Vec<Idx> {
    let mut starts: Vec<Idx> = vec![0];
    let mut i = 0usize;
    while i < n {
        let start = i;
        let mut sum = weight(i);
        i += 1;
        if !alone(start) {
            while i < n && i - start < max_len && !alone(i) && fits(sum + weight(i)) {
                sum += weight(i);
                i += 1;
            }
        }
        starts.push(i as Idx);
    }
    starts
}

/// Builds the AMF-CSR layout of `csr`.
pub fn build<T: Scalar>(csr: &Csr<T>, params: &Params) -> Result<AmfLayout<T>> {
    let p = AmfParams::from_params(NAME, params)?;
    let (threads, tl, long) = (p.threads, p.tl, p.long);
    if csr.ncols() > (1usize << (32 - FOLD_BITS)) {
        return Err(Error::MethodUnsupported {
            method: NAME.into(),
            reason: format!(
                "{} columns do not fit the packed col << 2 | row index (at most 2^30)",
                csr.ncols()
            ),
        });
    }
    let m = csr.nrows();
    let rp = csr.row_ptr();
    let len = |r: usize| (rp[r + 1] - rp[r]) as u64;
    let is_long = |r: usize| len(r) >= long as u64;

    let (nnz_short, rows_short) = (0..m)
        .into_par_iter()
        .filter(|&r| !is_long(r))
        .map(|r| (len(r), 1u64))
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    let ts =
        p.ts.value()
            .unwrap_or_else(|| (nnz_short * MAX_FOLD_ROWS as u64) / rows_short.max(1) + 1);

    // Folding (sequential: one O(M) scan).
    let fold_row = greedy_runs(m, MAX_FOLD_ROWS, is_long, len, |sum| sum < ts);
    let nf = fold_row.len() - 1;
    let fold_ptr: Vec<Idx> = fold_row.iter().map(|&r| rp[r as usize]).collect();
    let fnnz = |f: usize| (fold_ptr[f + 1] - fold_ptr[f]) as u64;
    let fold_long = |f: usize| fold_row[f + 1] - fold_row[f] == 1 && is_long(fold_row[f] as usize);

    // TPV from the mean nnz of the short folded rows.
    let (sn, sf) = (0..nf)
        .filter(|&f| !fold_long(f))
        .fold((0u64, 0u64), |a, f| (a.0 + fnnz(f), a.1 + 1));
    let tpv = p.tpv.value().unwrap_or_else(|| {
        let mean = if sf == 0 { 1.0 } else { sn as f64 / sf as f64 };
        (mean.sqrt().ceil().max(1.0) as u32)
            .next_power_of_two()
            .min(32)
    });
    let max_folds = 4 * (threads / tpv) as usize;

    // Blocks.
    let blk_fold = greedy_runs(nf, max_folds, fold_long, fnnz, |sum| sum <= tl);

    // Merge each folded row by column (parallel over folded rows).
    let (ci, cv) = (csr.col_idx(), csr.vals());
    let merged: Vec<(Idx, T)> = (0..nf)
        .into_par_iter()
        .flat_map_iter(|f| {
            let (r0, r1) = (fold_row[f] as usize, fold_row[f + 1] as usize);
            let mut e: Vec<(Idx, T)> = Vec::with_capacity(fnnz(f) as usize);
            for (local, row) in (r0..r1).enumerate() {
                for j in rp[row] as usize..rp[row + 1] as usize {
                    e.push(((ci[j] << FOLD_BITS) | local as Idx, cv[j]));
                }
            }
            // Stable by column: equal columns keep row order (the k-way merge of the code).
            e.sort_by_key(|p| p.0 >> FOLD_BITS);
            e.into_iter()
        })
        .collect();
    let (cols, vals): (Vec<Idx>, Vec<T>) = merged.into_iter().unzip();

    Ok(AmfLayout {
        nrows: m,
        ncols: csr.ncols(),
        fold_row,
        fold_ptr,
        blk_fold,
        cols,
        vals,
        ts,
        tl,
        long,
        tpv,
        threads,
    })
}

impl<T: Scalar> Layout<T> for AmfLayout<T> {
    fn values_mut(&mut self) -> Option<&mut [T]> {
        Some(&mut self.vals)
    }
    fn footprint_bytes(&self) -> usize {
        self.vals.len() * T::BYTES
            + (self.cols.len() + self.fold_row.len() + self.fold_ptr.len() + self.blk_fold.len())
                * std::mem::size_of::<Idx>()
    }

    forward! { run_cpu, upload }

    fn notes(&self) -> Vec<(String, String)> {
        let nf = self.fold_row.len() - 1;
        vec![
            ("folded rows".into(), nf.to_string()),
            ("blocks".into(), self.nblocks().to_string()),
            ("T_s".into(), self.ts.to_string()),
            ("T_l".into(), self.tl.to_string()),
            ("TPV".into(), self.tpv.to_string()),
            ("threads per block".into(), self.threads.to_string()),
        ]
    }
}

#[cfg(test)]
mod tests;
