//! Building the `csr-packed` layout from CSR, every stage in parallel (rayon), each timed:
//! 1. **values**: the distinct values (bit patterns, so −0.0, 0.0 and NaN payloads stay
//!    apart and the layout is lossless), capped at 2^16, give the value codes;
//! 2. **order**: rows longer than `long` leave the slices; the others stay in row order, or are
//!    sorted by length (descending, stable) inside windows of `window` rows when the padding
//!    saved outweighs the row map (`sort=auto`);
//! 3. **widths**: each slice of 32 rows takes the code width (8, 16 or 32 bits) that makes it
//!    smallest, counting a row that needs a wider code than the slice takes (an outlier) at its
//!    raw CSR bytes on the block-per-row path;
//! 4. **streams**: the column codes, value codes and lengths are written slice by slice.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::{interleaved, PackedLayout, PackedParams, GROUP, MAX_SHORT, NAME, SKIP, WARP};
use crate::error::{Error, Result};
use crate::matrix::{Csr, Pattern};
use crate::methods::params::{keywords, Switch};
use crate::methods::Params;
use crate::scalar::{Idx, Scalar, ValueStorage};

/// The most distinct values a dictionary holds (16-bit codes).
pub(crate) const MAX_DICT: usize = 1 << 16;

/// What sending one row to the block-per-row path costs beyond its bytes, in bytes of memory
/// time (see [`choose_width`]).
const OUTLIER_BYTES: usize = 8192;

/// Slices handled by one parallel task when the streams are written.
const SLICES_PER_TASK: usize = 256;

/// How a layout stores its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ValueCodes {
    /// One distinct value (or none): no per-entry data.
    Const,
    /// A dictionary with codes of this many bits (1, 2, 4, 8 or 16).
    Bits(u32),
    /// The values themselves.
    Raw,
}

impl ValueCodes {
    /// Every value mode, each with its kernel entries (the tests walk them).
    #[cfg(test)]
    pub(crate) const ALL: [ValueCodes; 7] = [
        ValueCodes::Const,
        ValueCodes::Bits(1),
        ValueCodes::Bits(2),
        ValueCodes::Bits(4),
        ValueCodes::Bits(8),
        ValueCodes::Bits(16),
        ValueCodes::Raw,
    ];

    /// Bytes of one block (8 entries of one lane) of the value stream.
    pub(crate) fn block_bytes(self, value_bytes: usize) -> usize {
        match self {
            ValueCodes::Const => 0,
            ValueCodes::Bits(v) => v as usize,
            ValueCodes::Raw => GROUP * value_bytes,
        }
    }

    /// The code width for `distinct` values (`None`: too many for a dictionary).
    fn for_distinct(distinct: usize) -> Option<ValueCodes> {
        match distinct {
            0 | 1 => Some(ValueCodes::Const),
            d if d <= MAX_DICT => [1u32, 2, 4, 8, 16]
                .into_iter()
                .find(|&v| d <= 1usize << v)
                .map(ValueCodes::Bits),
            _ => None,
        }
    }

    /// The kernel entry point for this value mode, with or without prefetching.
    pub(crate) fn entry(self, prefetch: bool) -> &'static str {
        match (self, prefetch) {
            (ValueCodes::Const, false) => "csr_packed_v0_flat",
            (ValueCodes::Bits(1), false) => "csr_packed_v1_flat",
            (ValueCodes::Bits(2), false) => "csr_packed_v2_flat",
            (ValueCodes::Bits(4), false) => "csr_packed_v4_flat",
            (ValueCodes::Bits(8), false) => "csr_packed_v8_flat",
            (ValueCodes::Bits(_), false) => "csr_packed_v16_flat",
            (ValueCodes::Raw, false) => "csr_packed_raw_flat",
            (v, true) => v.prefetching_entry(),
        }
    }

    fn prefetching_entry(self) -> &'static str {
        match self {
            ValueCodes::Const => "csr_packed_v0",
            ValueCodes::Bits(1) => "csr_packed_v1",
            ValueCodes::Bits(2) => "csr_packed_v2",
            ValueCodes::Bits(4) => "csr_packed_v4",
            ValueCodes::Bits(8) => "csr_packed_v8",
            ValueCodes::Bits(_) => "csr_packed_v16",
            ValueCodes::Raw => "csr_packed_raw",
        }
    }

    fn describe(self) -> String {
        match self {
            ValueCodes::Const => "none (one distinct value)".into(),
            ValueCodes::Bits(v) => format!("dictionary, {v}-bit codes"),
            ValueCodes::Raw => "raw".into(),
        }
    }
}

keywords! {
    /// `values`: how the layout stores its values.
    pub(crate) enum ValuesMode {
        Auto = "auto",
        Dict = "dict",
        Raw = "raw",
    }
}

/// The build parameters.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Config {
    /// Rows longer than this take the block-per-row path.
    pub long: usize,
    pub sort: Switch,
    pub window: usize,
    pub values: ValuesMode,
    pub prefetch: bool,
    /// How the plan stores the values (`storage=`, docs/precision.md): f16 and bf16 values take
    /// their own 16 bits as 16-bit codes ([`dictionary`]).
    pub storage: ValueStorage,
    /// `spmm_cols`: the k-vector kernel's vectors per pass (`None`: the rule).
    pub spmm_cols: Option<u32>,
}

impl Config {
    /// The parameters, `long=auto` resolved from the matrix's mean row length.
    pub(crate) fn from_params<T: Scalar>(params: &Params, a: &Csr<T>) -> Result<Config> {
        let p = PackedParams::from_params(NAME, params)?;
        let long = p.long.value().unwrap_or_else(|| {
            let mean = a.nnz() as f64 / a.nrows().max(1) as f64;
            ((8.0 * mean).ceil() as usize).clamp(128, MAX_SHORT)
        });
        Ok(Config {
            long,
            sort: p.sort,
            window: p.window,
            values: p.values,
            prefetch: p.prefetch.is_on(),
            storage: crate::methods::common::stored::storage_of(params)?,
            spmm_cols: p.spmm_cols.value(),
        })
    }
}

/// What the build found, for the notes.
#[derive(Clone, Debug, Default)]
pub(crate) struct Facts {
    pub stages: Vec<(&'static str, Duration)>,
    pub sorted: bool,
    pub long_threshold: usize,
    /// Rows on the block-per-row path for their length.
    pub n_long: usize,
    /// Rows on the block-per-row path because their codes needed a wider slice.
    pub n_outliers: usize,
    /// Slices with 8-, 16- and 32-bit column codes.
    pub widths: [usize; 3],
    /// Code slots of the slices (groups × 8 × 32) and entries in them.
    pub slots: u64,
    pub slice_nnz: u64,
    /// Distinct values, when counted (at most [`MAX_DICT`] + 1).
    pub distinct: Option<usize>,
    pub vcodes: Option<ValueCodes>,
}

impl Facts {
    pub(crate) fn notes(
        &self,
        footprint: usize,
        nnz: usize,
        nrows: usize,
        value_bytes: usize,
    ) -> Vec<(String, String)> {
        let csr = crate::matrix::csr_matrix_bytes(nrows, nnz, value_bytes) as usize;
        let per_nnz = |b: usize| {
            if nnz == 0 {
                "-".to_string()
            } else {
                format!("{:.2}", b as f64 / nnz as f64)
            }
        };
        let nsl: usize = self.widths.iter().sum();
        let pct = |k: usize| {
            if nsl == 0 {
                0.0
            } else {
                100.0 * k as f64 / nsl as f64
            }
        };
        vec![
            (
                "bytes per nonzero".into(),
                format!("{} (CSR: {})", per_nnz(footprint), per_nnz(csr)),
            ),
            (
                "values".into(),
                match (self.vcodes, self.distinct) {
                    (Some(v), Some(d)) if d <= MAX_DICT => {
                        format!("{} ({d} distinct)", v.describe())
                    }
                    (Some(v), _) => format!("{} (more than {MAX_DICT} distinct)", v.describe()),
                    (None, _) => "-".into(),
                },
            ),
            (
                "column codes".into(),
                format!(
                    "{nsl} slices: {:.1}% 8-bit, {:.1}% 16-bit, {:.1}% 32-bit",
                    pct(self.widths[0]),
                    pct(self.widths[1]),
                    pct(self.widths[2])
                ),
            ),
            (
                "padding".into(),
                format!(
                    "{:.1}% of {} code slots",
                    if self.slots == 0 {
                        0.0
                    } else {
                        100.0 * (self.slots - self.slice_nnz) as f64 / self.slots as f64
                    },
                    self.slots
                ),
            ),
            (
                "rows sorted by length".into(),
                if self.sorted { "yes" } else { "no" }.into(),
            ),
            (
                "block-per-row rows".into(),
                format!(
                    "{} longer than {}, {} width outliers",
                    self.n_long, self.long_threshold, self.n_outliers
                ),
            ),
        ]
    }
}

/// The bias of the first code of a row at width `w`: the first column is stored as
/// `col − row + bias`, so codes are unsigned.
pub(crate) fn bias(w: u32) -> u32 {
    1u32 << (w - 1)
}

/// The smallest code width (8, 16, 32) that holds row `r`'s codes.
fn needed_width(r: usize, cols: &[Idx]) -> u32 {
    let Some(&c0) = cols.first() else {
        return 8;
    };
    let first = c0 as i64 - r as i64;
    let max_delta = cols
        .windows(2)
        .map(|p| (p[1] - p[0]) as i64)
        .max()
        .unwrap_or(0);
    [8u32, 16]
        .into_iter()
        .find(|&w| {
            let h = 1i64 << (w - 1);
            (-h..h).contains(&first) && max_delta < (1i64 << w)
        })
        .unwrap_or(32)
}

/// The distinct values of `vals` by bit pattern, sorted by bits; `None` when more than `cap`.
fn distinct_values<T: Scalar>(vals: &[T], cap: usize) -> Option<Vec<(u64, T)>> {
    let set = vals
        .par_chunks(1 << 15)
        .try_fold(HashMap::new, |mut s, chunk| {
            for &v in chunk {
                s.entry(v.to_bits_u64()).or_insert(v);
                if s.len() > cap {
                    return None;
                }
            }
            Some(s)
        })
        .try_reduce(HashMap::new, |mut a, b| {
            a.extend(b);
            (a.len() <= cap).then_some(a)
        })?;
    let mut d: Vec<(u64, T)> = set.into_iter().collect();
    d.sort_unstable_by_key(|p| p.0);
    Some(d)
}

/// Pads a dictionary to at least 4 entries: the kernel holds the first 2^v entries of a 1- or
/// 2-bit dictionary (and entry 0 of a constant one) in registers.
fn pad_dict<T: Scalar>(dict: &mut Vec<T>) {
    while dict.len() < 4 {
        dict.push(T::zero());
    }
}

/// The value mode, dictionary and code map for `vals`.
type ValuePlan<T> = (ValueCodes, Vec<T>, HashMap<u64, u32>, Option<usize>);

/// The dictionary and code map of the distinct values `d` (sorted by bits) at code width `vc`:
/// entry i is the i-th distinct value; except that 16-bit codes of values stored in f16 or bf16
/// are their own 16 bits, and the dictionary holds every 16-bit pattern widened (what the
/// kernel, compiled for that storage, decodes with `widen_val` instead of a table load; the CPU
/// mirror reads the table).
fn dictionary<T: Scalar>(
    d: Vec<(u64, T)>,
    vc: ValueCodes,
    storage: ValueStorage,
) -> (Vec<T>, HashMap<u64, u32>) {
    if vc == ValueCodes::Bits(16) && storage.widen16(0).is_some() {
        let code = d
            .iter()
            .map(|&(b, v)| (b, u32::from(storage.bits16(v).unwrap_or_default())))
            .collect();
        let dict = (0..=u16::MAX)
            .map(|b| T::from_f64(storage.widen16(b).map_or(0.0, f64::from)))
            .collect();
        return (dict, code);
    }
    let code: HashMap<u64, u32> = d
        .iter()
        .enumerate()
        .map(|(i, &(b, _))| (b, i as u32))
        .collect();
    let mut dict: Vec<T> = d.into_iter().map(|(_, v)| v).collect();
    pad_dict(&mut dict);
    (dict, code)
}

fn plan_values<T: Scalar>(
    vals: &[T],
    mode: ValuesMode,
    storage: ValueStorage,
) -> Result<ValuePlan<T>> {
    if mode == ValuesMode::Raw {
        return Ok((ValueCodes::Raw, Vec::new(), HashMap::new(), None));
    }
    match distinct_values(vals, MAX_DICT) {
        Some(d) => {
            let vc = ValueCodes::for_distinct(d.len()).unwrap_or(ValueCodes::Raw);
            let n = d.len();
            let (dict, code) = dictionary(d, vc, storage);
            Ok((vc, dict, code, Some(n)))
        }
        None if mode == ValuesMode::Dict => Err(Error::Param {
            method: NAME.into(),
            key: "values".into(),
            msg: format!(
                "dict: the matrix has more than {MAX_DICT} distinct values; use values=auto or raw"
            ),
        }),
        None => Ok((
            ValueCodes::Raw,
            Vec::new(),
            HashMap::new(),
            Some(MAX_DICT + 1),
        )),
    }
}

/// Groups per lane of a slice whose longest row has `len` entries.
fn groups_of(len: usize) -> usize {
    len.div_ceil(GROUP)
}

/// Code width choice of one slice.
struct SliceChoice {
    w: u32,
    groups: usize,
    outliers: Vec<u32>,
}

/// Chooses the width of the slice whose lanes hold `rows` (`None`: no row) as the cheapest
/// in bytes, outliers counted at their CSR bytes.
fn choose_width<T: Scalar>(a: &Csr<T>, rows: &[Option<u32>], value_block: usize) -> SliceChoice {
    let need: Vec<(u32, usize, u32)> = rows
        .iter()
        .flatten()
        .map(|&r| {
            let (cols, _) = a.row(r as usize);
            (needed_width(r as usize, cols), cols.len(), r)
        })
        .collect();
    // An outlier takes a block of the long-row path: its raw bytes plus what that block's
    // turn costs in memory time (about 2 µs of a block slot at the GPU's bandwidth share, some
    // 8 KiB), so a slice widens rather than sends a short row there.
    let raw_cost = |len: usize| (len * (4 + T::BYTES) + OUTLIER_BYTES) as u64;
    [8u32, 16, 32]
        .into_iter()
        .map(|w| {
            let maxlen = need
                .iter()
                .filter(|n| n.0 <= w)
                .map(|n| n.1)
                .max()
                .unwrap_or(0);
            let groups = groups_of(maxlen);
            let outliers: Vec<u32> = need.iter().filter(|n| n.0 > w).map(|n| n.2).collect();
            let cost = (WARP * groups * (w as usize + value_block)) as u64
                + need
                    .iter()
                    .filter(|n| n.0 > w)
                    .map(|n| raw_cost(n.1))
                    .sum::<u64>();
            (
                cost,
                SliceChoice {
                    w,
                    groups,
                    outliers,
                },
            )
        })
        .min_by_key(|c| c.0)
        .map(|c| c.1)
        .expect("three candidate widths")
}

/// Lanes of every slice: rows in row order (long rows left out as `None`), or sorted.
struct Order {
    /// `None`: identity (slice s, lane l = row 32·s + l); else the rows in slice order.
    sorted: Option<Vec<u32>>,
    nslices: usize,
}

impl Order {
    fn lanes(&self, s: usize, nrows: usize, is_long: &[bool]) -> [Option<u32>; WARP] {
        std::array::from_fn(|l| match &self.sorted {
            None => {
                let r = s * WARP + l;
                (r < nrows && !is_long[r]).then_some(r as u32)
            }
            Some(order) => order.get(s * WARP + l).copied(),
        })
    }
}

/// Padding-free groups of a sequence of row lengths cut into slices of 32.
fn slice_groups(lens: impl IndexedParallelIterator<Item = usize>) -> u64 {
    lens.chunks(WARP)
        .map(|c| (WARP * groups_of(c.into_iter().max().unwrap_or(0))) as u64)
        .sum()
}

fn choose_order<T: Scalar>(
    a: &Csr<T>,
    cfg: &Config,
    is_long: &[bool],
    value_block: usize,
) -> Order {
    let n = a.nrows();
    let len = |r: usize| a.row_len(r);
    let short_len = |r: usize| if is_long[r] { 0 } else { len(r) };
    let sorted = || -> Vec<u32> {
        (0..n)
            .into_par_iter()
            .step_by(cfg.window)
            .flat_map_iter(|w0| {
                let mut rows: Vec<u32> = (w0..(w0 + cfg.window).min(n))
                    .filter(|&r| !is_long[r])
                    .map(|r| r as u32)
                    .collect();
                rows.sort_by_key(|&r| Reverse(len(r as usize)));
                rows
            })
            .collect()
    };
    let identity = || Order {
        sorted: None,
        nslices: n.div_ceil(WARP),
    };
    let by_length = |order: Vec<u32>| Order {
        nslices: order.len().div_ceil(WARP),
        sorted: Some(order),
    };
    match cfg.sort {
        Switch::Off => identity(),
        Switch::On => by_length(sorted()),
        Switch::Auto => {
            let order = sorted();
            let g_id = slice_groups((0..n).into_par_iter().map(short_len));
            let g_sorted = slice_groups(order.par_iter().map(|&r| len(r as usize)));
            // bytes per group slot at 16-bit codes, against 4 bytes of row map per row
            let per_slot = (16 + value_block) as u64;
            let saved = g_id.saturating_sub(g_sorted) * per_slot;
            if saved > 4 * order.len() as u64 + (4 * order.len() as u64) / 4 {
                by_length(order)
            } else {
                identity()
            }
        }
    }
}

/// Writes the codes of row `r` (entries `cols`) into lane `l`'s blocks of a slice's column
/// words at width `w`.
fn put_cols(words: &mut [u32], w: u32, l: usize, r: usize, cols: &[Idx]) {
    let mut prev = (r as u32).wrapping_sub(bias(w));
    for (k, &c) in cols.iter().enumerate() {
        let code = c.wrapping_sub(prev);
        prev = c;
        let (g, j) = (k / GROUP, k % GROUP);
        let per_lane = w as usize / 4;
        let word = |i: usize| g * WARP * per_lane + interleaved(per_lane, 4, l, i);
        match w {
            8 => words[word(j / 4)] |= code << (8 * (j % 4)),
            16 => words[word(j / 2)] |= code << (16 * (j % 2)),
            _ => words[word(j)] = code,
        }
    }
}

/// Writes the value codes (or raw values) of one row into lane `l`'s blocks of a slice,
/// `vbytes`/`raw` being the slice's part of the value stream.
fn put_vals<T: Scalar>(
    vc: ValueCodes,
    code: &HashMap<u64, u32>,
    vbytes: &mut [u8],
    raw: &mut [T],
    l: usize,
    vals: &[T],
) {
    for (k, &v) in vals.iter().enumerate() {
        let (g, j) = (k / GROUP, k % GROUP);
        let block = g * WARP + l;
        match vc {
            ValueCodes::Const => {}
            ValueCodes::Bits(b) => {
                let c = code[&v.to_bits_u64()];
                let bit = block * 8 * b as usize + j * b as usize;
                if b == 16 {
                    vbytes[bit / 8] = c as u8;
                    vbytes[bit / 8 + 1] = (c >> 8) as u8;
                } else {
                    vbytes[bit / 8] |= (c as u8) << (bit % 8);
                }
            }
            ValueCodes::Raw => raw[g * WARP * GROUP + interleaved(GROUP, T::BYTES, l, j)] = v,
        }
    }
}

/// Builds the layout.
pub(crate) fn encode<T: Scalar>(a: &Csr<T>, cfg: &Config) -> Result<PackedLayout<T>> {
    let (nrows, ncols, nnz) = (a.nrows(), a.ncols(), a.nnz());
    let mut facts = Facts {
        long_threshold: cfg.long,
        ..Facts::default()
    };

    let t = Instant::now();
    let (vcodes, dict, code, distinct) = plan_values(a.vals(), cfg.values, cfg.storage)?;
    let value_block = vcodes.block_bytes(T::BYTES);
    facts.distinct = distinct;
    facts.vcodes = Some(vcodes);
    facts.stages.push(("values", t.elapsed()));

    let t = Instant::now();
    let mut is_long: Vec<bool> = (0..nrows)
        .into_par_iter()
        .map(|r| a.row_len(r) > cfg.long)
        .collect();
    facts.n_long = is_long.par_iter().filter(|&&b| b).count();
    let order = choose_order(a, cfg, &is_long, value_block);
    facts.sorted = order.sorted.is_some();
    facts.stages.push(("order", t.elapsed()));

    let t = Instant::now();
    let lanes: Vec<[Option<u32>; WARP]> = (0..order.nslices)
        .into_par_iter()
        .map(|s| order.lanes(s, nrows, &is_long))
        .collect();
    let choices: Vec<SliceChoice> = lanes
        .par_iter()
        .map(|rows| choose_width(a, rows, value_block))
        .collect();
    let nslices = choices.len();
    let mut grp = Vec::with_capacity(nslices + 1);
    let mut col_off = Vec::with_capacity(nslices);
    let (mut g_acc, mut off_acc) = (0u64, 0u64);
    for c in &choices {
        grp.push(g_acc);
        col_off.push(off_acc);
        g_acc += c.groups as u64;
        off_acc += 2 * c.groups as u64 * c.w as u64;
    }
    grp.push(g_acc);
    if g_acc.max(off_acc) > u32::MAX as u64 {
        return Err(Error::MethodUnsupported {
            method: NAME.into(),
            reason: format!(
                "{g_acc} value blocks and {off_acc} 16-byte units of column codes: its 32-bit \
                 offsets hold at most 2^32 - 1 of each"
            ),
        });
    }
    let grp: Vec<u32> = grp.into_iter().map(|g| g as u32).collect();
    let col_off: Vec<u32> = col_off.into_iter().map(|o| o as u32).collect();
    let col_w: Vec<u8> = choices.iter().map(|c| c.w as u8).collect();
    for c in &choices {
        facts.widths[(c.w / 16) as usize] += 1;
        for &r in &c.outliers {
            is_long[r as usize] = true;
        }
    }
    facts.n_outliers = choices.iter().map(|c| c.outliers.len()).sum();
    facts.stages.push(("widths", t.elapsed()));

    let t = Instant::now();
    let words_total = 4 * off_acc as usize;
    let blocks_total = WARP * g_acc as usize;
    let mut cols = vec![0u32; words_total];
    let mut vstream = vec![
        0u8;
        match vcodes {
            ValueCodes::Bits(b) => blocks_total * b as usize,
            _ => 0,
        }
    ];
    let mut raw = vec![
        T::zero();
        if vcodes == ValueCodes::Raw {
            blocks_total * GROUP
        } else {
            0
        }
    ];
    let mut lens = vec![SKIP; nslices * WARP];
    let mut row_map = order
        .sorted
        .as_ref()
        .map(|_| vec![u32::MAX; nslices * WARP]);

    // Cut every stream at task boundaries (SLICES_PER_TASK slices each), then fill in parallel.
    let ntasks = nslices.div_ceil(SLICES_PER_TASK);
    let bounds = |s: usize| s.min(nslices);
    let mut col_parts = Vec::with_capacity(ntasks);
    let mut vb_parts = Vec::with_capacity(ntasks);
    let mut raw_parts = Vec::with_capacity(ntasks);
    {
        let (mut rest_c, mut rest_v, mut rest_r) = (
            cols.as_mut_slice(),
            vstream.as_mut_slice(),
            raw.as_mut_slice(),
        );
        for task in 0..ntasks {
            let (s0, s1) = (
                bounds(task * SLICES_PER_TASK),
                bounds((task + 1) * SLICES_PER_TASK),
            );
            let end_off = if s1 < nslices {
                col_off[s1] as u64
            } else {
                off_acc
            };
            let nwords = 4 * (end_off - col_off[s0] as u64) as usize;
            let nblocks = WARP * (grp[s1] - grp[s0]) as usize;
            let (c, rc) = rest_c.split_at_mut(nwords);
            let (v, rv) = rest_v.split_at_mut(if rest_v.is_empty() {
                0
            } else {
                nblocks * value_block
            });
            let (r, rr) = rest_r.split_at_mut(if rest_r.is_empty() {
                0
            } else {
                nblocks * GROUP
            });
            col_parts.push(c);
            vb_parts.push(v);
            raw_parts.push(r);
            (rest_c, rest_v, rest_r) = (rc, rv, rr);
        }
    }
    let lens_parts = lens.chunks_mut(SLICES_PER_TASK * WARP);
    let map_parts: Vec<Option<&mut [u32]>> = match row_map.as_mut() {
        Some(m) => m.chunks_mut(SLICES_PER_TASK * WARP).map(Some).collect(),
        None => (0..ntasks).map(|_| None).collect(),
    };
    col_parts
        .into_par_iter()
        .zip(vb_parts)
        .zip(raw_parts)
        .zip(lens_parts.collect::<Vec<_>>())
        .zip(map_parts)
        .enumerate()
        .for_each(|(task, ((((cw, vb), rw), ln), mut mp))| {
            let s0 = task * SLICES_PER_TASK;
            let s1 = bounds(s0 + SLICES_PER_TASK);
            let (base_w, base_g) = (4 * col_off[s0] as usize, grp[s0] as usize);
            for s in s0..s1 {
                let w = col_w[s] as u32;
                let groups = (grp[s + 1] - grp[s]) as usize;
                let wo = 4 * col_off[s] as usize - base_w;
                let words = &mut cw[wo..wo + groups * WARP * (w as usize / 4)];
                let go = (grp[s] as usize - base_g) * WARP;
                let vbs = if vb.is_empty() {
                    &mut [][..]
                } else {
                    &mut vb[go * value_block..(go + groups * WARP) * value_block]
                };
                let raws = if rw.is_empty() {
                    &mut [][..]
                } else {
                    &mut rw[go * GROUP..(go + groups * WARP) * GROUP]
                };
                for (l, row) in lanes[s].iter().enumerate() {
                    let lane = (s - s0) * WARP + l;
                    let Some(r) = *row else { continue };
                    if let Some(m) = mp.as_deref_mut() {
                        m[lane] = r;
                    }
                    if choices[s].outliers.contains(&r) {
                        continue;
                    }
                    let (rc, rv) = a.row(r as usize);
                    ln[lane] = rc.len() as u8;
                    put_cols(words, w, l, r as usize, rc);
                    put_vals(vcodes, &code, vbs, raws, l, rv);
                }
            }
        });
    facts.slots = GROUP as u64 * blocks_total as u64;
    facts.slice_nnz = lens
        .par_iter()
        .filter(|&&l| l != SKIP)
        .map(|&l| l as u64)
        .sum();

    let long_rows: Vec<u32> = (0..nrows as u32)
        .into_par_iter()
        .filter(|&r| is_long[r as usize])
        .collect();
    let mut long_ptr = Vec::with_capacity(long_rows.len() + 1);
    let mut acc = 0u64;
    long_ptr.push(0u32);
    for &r in &long_rows {
        acc += a.row_len(r as usize) as u64;
        long_ptr.push(acc as u32);
    }
    let (long_cols, long_vals): (Vec<Idx>, Vec<T>) = long_rows
        .par_iter()
        .flat_map_iter(|&r| {
            let (c, v) = a.row(r as usize);
            c.iter().copied().zip(v.iter().copied())
        })
        .unzip();
    facts.stages.push(("streams", t.elapsed()));

    Ok(PackedLayout {
        nrows,
        ncols,
        nnz,
        lens,
        rows: row_map,
        grp,
        col_off,
        col_w,
        cols,
        vcodes,
        dict,
        vstream,
        raw,
        long_rows,
        long_ptr,
        long_cols,
        long_vals,
        facts,
        prefetch: cfg.prefetch,
        storage: cfg.storage,
        spmm_cols: cfg.spmm_cols,
    })
}

/// Replaces the values of a built layout with `vals` (CSR order of `pattern`, the pattern it
/// was built from), keeping the column codes: in place when the new values fit the layout's
/// value mode; `Err(why)` when they do not (more distinct values than its codes hold).
pub(crate) fn reencode_values<T: Scalar>(
    l: &mut PackedLayout<T>,
    pattern: &Pattern,
    vals: &[T],
) -> std::result::Result<(), String> {
    let need = match l.vcodes {
        ValueCodes::Raw => None,
        ValueCodes::Const => Some(1),
        ValueCodes::Bits(b) => Some(1usize << b),
    };
    let (dict, code, distinct) = match need {
        None => (Vec::new(), HashMap::new(), l.facts.distinct),
        Some(cap) => match distinct_values(vals, cap) {
            Some(d) => {
                let n = d.len();
                let (dict, code) = dictionary(d, l.vcodes, l.storage);
                (dict, code, Some(n))
            }
            None => {
                return Err(format!(
                    "{NAME}: the new values have more than {cap} distinct, more than its {} \
                     hold; prepared again",
                    l.vcodes.describe()
                ))
            }
        },
    };
    let ptr = pattern.ptr();
    let row_vals = |r: usize| &vals[ptr[r] as usize..ptr[r + 1] as usize];
    let vb = l.vcodes.block_bytes(T::BYTES);
    let vc = l.vcodes;
    let nslices = l.nslices();
    l.vstream.iter_mut().for_each(|b| *b = 0);
    let lens = &l.lens;
    let rows = l.rows.as_deref();
    let grp = &l.grp;
    // Per slice, the value blocks are contiguous: split the streams by slice and fill.
    let mut vparts: Vec<&mut [u8]> = Vec::with_capacity(nslices);
    let mut rparts: Vec<&mut [T]> = Vec::with_capacity(nslices);
    let (mut rv, mut rr) = (l.vstream.as_mut_slice(), l.raw.as_mut_slice());
    for s in 0..nslices {
        let blocks = WARP * (grp[s + 1] - grp[s]) as usize;
        let (a, b) = rv.split_at_mut(if rv.is_empty() { 0 } else { blocks * vb });
        let (c, d) = rr.split_at_mut(if rr.is_empty() { 0 } else { blocks * GROUP });
        vparts.push(a);
        rparts.push(c);
        (rv, rr) = (b, d);
    }
    vparts
        .into_par_iter()
        .zip(rparts)
        .enumerate()
        .for_each(|(s, (vbs, raws))| {
            for l in 0..WARP {
                let lane = s * WARP + l;
                if lens[lane] == SKIP {
                    continue;
                }
                let r = rows.map_or(lane, |m| m[lane] as usize);
                put_vals(vc, &code, vbs, raws, l, row_vals(r));
            }
        });
    let long_vals: Vec<T> = l
        .long_rows
        .par_iter()
        .flat_map_iter(|&r| row_vals(r as usize).iter().copied())
        .collect();
    l.long_vals = long_vals;
    if need.is_some() {
        l.dict = dict;
    }
    l.facts.distinct = distinct;
    Ok(())
}
