//! Matrix generators (issue #2): the synthetic matrices the benchmarks and tests run on, named by
//! a GEN-SPEC `kind:arg1,arg2,...[,key=value...]` such as `poisson3d:64`, `kron:18`,
//! `uniform:1000000,16` or `powerlaw:1000000,8,seed=7`.
//!
//! Besides the synthetic kinds, three model real families at any size (issue #19): `rgg` and
//! `delaunay`, the random geometric and Delaunay graphs of the DIMACS10 collection (`rgg_n_2_k`:
//! an edge between uniform points of the unit square closer than r = 0.55·√(ln N / N);
//! `delaunay_nK`: the Delaunay triangulation of uniform points; see `geo.rs`), in a spatial or a
//! shuffled numbering, and `varcoef27`, a 27-point stencil with variable coefficients.
//!
//! Every kind also takes `renumber=random` ([`RENUMBER`]): the square matrix numbered at random,
//! PAPᵀ (`crate::reorder`), e.g. `poisson3d:160,renumber=random`.
//!
//! Every generator is deterministic for its seed (default [`DEFAULT_SEED`], `seed=N` to change
//! it) whatever the number of threads: rows (or edges, for `kron`; points, for `rgg` and
//! `delaunay`) are cut into chunks whose size depends on the spec only, and each chunk draws from
//! its own xoshiro256++ stream derived from (seed, chunk). Matrices are built directly in CSR in
//! parallel (`build.rs`); only `kron` buckets edges, and `delaunay` sorts the triangulation's
//! edges. Sizes are checked against the 2^31−1 index limit, and the estimated peak memory against
//! the memory available ([`crate::memory`]), before anything large is allocated; the arrays are
//! then allocated fallibly, so a refused allocation is an [`Error::AllocFailed`], not an abort.
//!
//! Random values lie in [−1, −1/16] ∪ [1/16, 1] and are exact in f32, so `generate::<f32>` and
//! `generate::<f64>` give the same numbers. Stencils carry their own SPD values (`varcoef27`'s
//! are exact in f32 too), `kron` its edge multiplicities, `identity`, `rgg` and `delaunay` ones.
//!
//! [`corpus::edge_cases`] is the small edge-case corpus every method is tested on.

mod build;
pub mod corpus;
mod geo;
mod kinds;
mod kron;
pub(crate) mod rng;

use std::fmt;
use std::path::Path;

use crate::error::{Error, Result};
use crate::matrix::{check_square, AnyCsr, Csr};
use crate::reorder::{permute_symmetric, Permutation};
use crate::scalar::{Idx, Offset, OffsetWidth, Scalar, MAX_INDEX};

pub use geo::rgg_radius;

/// The seed used when a spec gives none.
pub const DEFAULT_SEED: u64 = 1;

/// A generator kind, as listed by `spmv gen --help` and `spmv info`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GenKind {
    /// The name before the colon.
    pub name: &'static str,
    /// Positional arguments and options, short (`N[,EF]`).
    pub args: &'static str,
    /// One line on what the kind builds.
    pub help: &'static str,
    /// A spec that works.
    pub example: &'static str,
}

/// The rules of one kind: its listing plus what the parser checks.
struct KindDef {
    kind: GenKind,
    /// Positional arguments spelled out, for error messages.
    usage: &'static str,
    min_args: usize,
    max_args: usize,
    /// Options besides `seed`.
    keys: &'static [&'static str],
}

const fn def(
    name: &'static str,
    args: &'static str,
    help: &'static str,
    example: &'static str,
    usage: &'static str,
    (min_args, max_args): (usize, usize),
    keys: &'static [&'static str],
) -> KindDef {
    KindDef {
        kind: GenKind {
            name,
            args,
            help,
            example,
        },
        usage,
        min_args,
        max_args,
        keys,
    }
}

static DEFS: [KindDef; 18] = [
    def(
        "poisson2d",
        "N",
        "2D 5-point Laplacian on an N×N grid: N² rows, 5N²−4N nnz, SPD (4 on the diagonal, −1 off it)",
        "poisson2d:1000",
        "N (grid points per side)",
        (1, 1),
        &[],
    ),
    def(
        "poisson3d",
        "N",
        "3D 7-point Laplacian on an N³ grid: N³ rows, 7N³−6N² nnz, SPD (6 on the diagonal, −1 off it)",
        "poisson3d:64",
        "N (grid points per side)",
        (1, 1),
        &[],
    ),
    def(
        "stencil27",
        "N",
        "3D 27-point stencil on an N³ grid: N³ rows, (3N−2)³ nnz, SPD (26 on the diagonal, −1 off it)",
        "stencil27:64",
        "N (grid points per side)",
        (1, 1),
        &[],
    ),
    def(
        "varcoef27",
        "N",
        "3D 27-point stencil with variable coefficients on an N³ grid: stencil27's pattern, off-diagonal \
         (i,j) −c_ij with c_ij = c_ji seeded in [1/16, 1] (2^18−2^14+1 possible values), diagonal \
         Σ_j c_ij + 1: SPD, strictly diagonally dominant, too many distinct values for a value dictionary",
        "varcoef27:64",
        "N (grid points per side)",
        (1, 1),
        &[],
    ),
    def(
        "banded",
        "N,BW[,fill=F]",
        "random N×N band |i−j| ≤ BW: each row keeps max(1, round(F·width)) entries (F = 0.5), diagonal always",
        "banded:100000,32",
        "N,BW (rows, half bandwidth) and optionally fill=F in (0,1]",
        (2, 2),
        &["fill"],
    ),
    def(
        "uniform",
        "N,K | M,N,K",
        "K distinct uniformly random columns in every row; N×N, or M×N when given three numbers",
        "uniform:1000000,16",
        "N,K (size, entries per row) or M,N,K (rows, columns, entries per row)",
        (2, 3),
        &[],
    ),
    def(
        "tall",
        "M,N,K",
        "uniform:M,N,K with M ≥ N (tall and skinny)",
        "tall:1000000,64,8",
        "M,N,K (rows, columns, entries per row) with M ≥ N",
        (3, 3),
        &[],
    ),
    def(
        "wide",
        "M,N,K",
        "uniform:M,N,K with M ≤ N (short and wide)",
        "wide:64,1000000,5000",
        "M,N,K (rows, columns, entries per row) with M ≤ N",
        (3, 3),
        &[],
    ),
    def(
        "powerlaw",
        "N,MEAN[,alpha=A]",
        "N×N, row lengths from a power law p(x) ∝ x^−A on [1,N] (A = 2) scaled to mean MEAN; random columns",
        "powerlaw:1000000,8",
        "N,MEAN (size, mean entries per row) and optionally alpha=A > 0",
        (2, 2),
        &["alpha"],
    ),
    def(
        "kron",
        "SCALE[,EF]",
        "Graph500 Kronecker/R-MAT graph: 2^SCALE vertices, EF·2^SCALE edges (EF = 16), a,b,c = .57,.19,.19, \
         labels scrambled, duplicates summed; sym=1 (default) stores A+Aᵀ, loops=1 (default) keeps self-loops, \
         vals=count|rand; kron:S,48 mirrors SuiteSparse kron_g500-lognS",
        "kron:16",
        "SCALE (log2 of the vertex count: 1..=25 with the default EF = 16 and sym=1, 1..=26 with \
         sym=0; EF·2^SCALE entries, doubled when sym=1, must stay within 2^31−1) and optionally EF \
         (edges per vertex, default 16); options sym=0|1, loops=0|1, vals=count|rand",
        (1, 2),
        &["sym", "loops", "vals"],
    ),
    def(
        "rgg",
        "N[,order=O]",
        "DIMACS10 random geometric graph (rgg_n_2_k): N uniform points in the unit square, an edge \
         when closer than r = 0.55·√(ln N/N), ≈ 0.95·ln N entries per row; symmetric pattern (ones), \
         no self-loops; order=spatial (default: ids along the Z-order curve) or order=shuffled \
         (random ids, the same graph)",
        "rgg:1000000",
        "N (number of points, 1 to 121 395 275: the expected N(N−1)·πr² entries must stay within \
         2^31−1; 2^26 fits, 2^27 does not) and optionally order=spatial|shuffled",
        (1, 1),
        &["order"],
    ),
    def(
        "delaunay",
        "N[,order=O]",
        "DIMACS10 Delaunay graph (delaunay_nK): the edges of the Delaunay triangulation of N uniform \
         points in the unit square, ≈ 6 entries per row; symmetric pattern (ones), no self-loops; \
         order=spatial (default: ids along the Z-order curve) or order=shuffled (random ids, the \
         same graph)",
        "delaunay:1000000",
        "N (number of points, at least 1) and optionally order=spatial|shuffled",
        (1, 1),
        &["order"],
    ),
    def(
        "blockdiag",
        "NBLOCKS,BS",
        "NBLOCKS dense BS×BS blocks on the diagonal, random values",
        "blockdiag:10000,32",
        "NBLOCKS,BS (number of blocks, block size)",
        (2, 2),
        &[],
    ),
    def(
        "hugerow",
        "N,K[,L]",
        "N×N (ncols=C: N×C), K random entries per row except row R (row=R, default N/2) with L (default: all C)",
        "hugerow:100000,4",
        "N,K (rows, entries per ordinary row) and optionally L (entries of the huge row); \
         options row=R, ncols=C",
        (2, 3),
        &["row", "ncols"],
    ),
    def(
        "diag",
        "N",
        "N×N diagonal with random values",
        "diag:1000000",
        "N (size)",
        (1, 1),
        &[],
    ),
    def(
        "identity",
        "N",
        "N×N identity",
        "identity:1000",
        "N (size)",
        (1, 1),
        &[],
    ),
    def(
        "dense",
        "M,N",
        "M×N with every entry stored (random values); keep it small",
        "dense:512,512",
        "M,N (rows, columns)",
        (2, 2),
        &[],
    ),
    def(
        "empty",
        "M,N",
        "M×N with no entry (nnz = 0)",
        "empty:1000,1000",
        "M,N (rows, columns)",
        (2, 2),
        &[],
    ),
];

static KINDS: [GenKind; 18] = {
    let mut out = [GenKind {
        name: "",
        args: "",
        help: "",
        example: "",
    }; 18];
    let mut i = 0;
    while i < DEFS.len() {
        out[i] = DEFS[i].kind;
        i += 1;
    }
    out
};

/// Every generator kind.
pub fn kinds() -> &'static [GenKind] {
    &KINDS
}

fn find_kind(name: &str) -> Option<&'static KindDef> {
    DEFS.iter().find(|d| d.kind.name.eq_ignore_ascii_case(name))
}

/// A parsed GEN-SPEC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenSpec {
    /// The kind's name, as in [`kinds`].
    pub kind: &'static str,
    /// Positional arguments.
    pub args: Vec<u64>,
    /// `key=value` options other than `seed`, in the order given.
    pub options: Vec<(String, String)>,
    /// The seed ([`DEFAULT_SEED`] unless `seed=N`).
    pub seed: u64,
}

impl fmt::Display for GenSpec {
    /// The canonical spec: `kind:args,options[,seed=N]` (the seed only when not the default).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = self.args.iter().map(u64::to_string).collect();
        parts.extend(self.options.iter().map(|(k, v)| format!("{k}={v}")));
        if self.seed != DEFAULT_SEED {
            parts.push(format!("seed={}", self.seed));
        }
        write!(f, "{}:{}", self.kind, parts.join(","))
    }
}

fn spec_err(spec: &str, msg: impl Into<String>) -> Error {
    Error::GenSpec {
        spec: spec.to_string(),
        msg: msg.into(),
    }
}

/// Parses a non-negative integer: digits with optional `_` separators, or `2^K`.
fn parse_uint(s: &str) -> Option<u64> {
    if let Some((b, e)) = s.split_once('^') {
        let (b, e): (u64, u32) = (b.trim().parse().ok()?, e.trim().parse().ok()?);
        return b.checked_pow(e);
    }
    let digits: String = s.chars().filter(|&c| c != '_').collect();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Parses a GEN-SPEC `kind:arg1,arg2,...[,key=value...]` and checks its argument count and
/// option names (values are checked when generating).
pub fn parse_spec(spec: &str) -> Result<GenSpec> {
    let text = spec.trim();
    let (name, rest) = text.split_once(':').unwrap_or((text, ""));
    let name = name.trim();
    let d = find_kind(name).ok_or_else(|| {
        let known: Vec<&str> = DEFS.iter().map(|d| d.kind.name).collect();
        spec_err(
            spec,
            format!(
                "unknown generator kind '{name}'; known kinds: {}",
                known.join(", ")
            ),
        )
    })?;
    let k = &d.kind;
    let usage = || format!("{} takes {}, e.g. {}", k.name, d.usage, k.example);
    let mut out = GenSpec {
        kind: k.name,
        args: Vec::new(),
        options: Vec::new(),
        seed: DEFAULT_SEED,
    };
    let mut seen_seed = false;
    for item in rest.split(',').map(str::trim) {
        if item.is_empty() {
            if rest.trim().is_empty() {
                continue;
            }
            return Err(spec_err(spec, format!("empty item; {}", usage())));
        }
        if let Some((key, value)) = item.split_once('=') {
            let (key, value) = (key.trim().to_ascii_lowercase(), value.trim().to_string());
            let dup = (key == "seed" && seen_seed) || out.options.iter().any(|(k2, _)| *k2 == key);
            if dup {
                return Err(spec_err(spec, format!("option '{key}' given twice")));
            }
            if key == "seed" {
                out.seed = parse_uint(&value).ok_or_else(|| {
                    spec_err(
                        spec,
                        format!("seed must be a non-negative integer, not '{value}'"),
                    )
                })?;
                seen_seed = true;
            } else if key == RENUMBER || d.keys.contains(&key.as_str()) {
                out.options.push((key, value));
            } else {
                let mut allowed: Vec<&str> = d.keys.to_vec();
                allowed.extend(["seed", RENUMBER]);
                return Err(spec_err(
                    spec,
                    format!(
                        "{} has no option '{key}' (options: {})",
                        k.name,
                        allowed.join(", ")
                    ),
                ));
            }
        } else {
            let v = parse_uint(item).ok_or_else(|| {
                spec_err(
                    spec,
                    format!("'{item}' is not a non-negative integer; {}", usage()),
                )
            })?;
            out.args.push(v);
        }
    }
    if out.args.len() < d.min_args || out.args.len() > d.max_args {
        return Err(spec_err(
            spec,
            format!("{} numbers given; {}", out.args.len(), usage()),
        ));
    }
    Ok(out)
}

/// Whether `s` reads as a GEN-SPEC (`kind:...` with a known kind) rather than a file: false for
/// any existing path.
pub fn looks_like_spec(s: &str) -> bool {
    match s.trim().split_once(':') {
        Some((name, _)) => find_kind(name.trim()).is_some() && !Path::new(s).exists(),
        None => false,
    }
}

/// Generates the matrix a GEN-SPEC names, in precision `T`.
pub fn generate<T: Scalar>(spec: &str) -> Result<Csr<T>> {
    generate_from(&parse_spec(spec)?)
}

/// Generates the matrix a GEN-SPEC names, in precision `T` with row offsets of type `O`: `u64`
/// takes the row-chunked kinds past 2^31−1 nonzeros, up to 2^40 (docs/offsets.md); `kron`,
/// `rgg` and `delaunay` stay within 2^31−1 and are widened after generation. The same spec gives
/// the same matrix in both widths.
///
/// ```
/// let a = spmvkit::gen::generate::<f32>("uniform:1000,7").unwrap();
/// let w = spmvkit::gen::generate_as::<f32, u64>("uniform:1000,7").unwrap();
/// assert_eq!(w, a.with_offsets::<u64>().unwrap());
/// ```
pub fn generate_as<T: Scalar, O: Offset>(spec: &str) -> Result<Csr<T, O>> {
    generate_from_as(&parse_spec(spec)?)
}

/// Generates the matrix a GEN-SPEC names, in precision `T`, with row offsets in the width it
/// needs (docs/offsets.md): 32-bit up to 2^31−1 nonzeros, 64-bit above, up to 2^40. The row
/// lengths are counted once and the matrix built in the width the count asks for; the matrix is
/// the one [`generate`] or [`generate_as`] gives. What `spmv run --offsets auto`, `spmv info` and
/// `spmv gen` generate.
///
/// ```
/// use spmvkit::AnyCsr;
/// let a = spmvkit::gen::generate_any::<f32>("uniform:1000,7").unwrap();
/// assert!(matches!(a, AnyCsr::W32(ref m) if *m == spmvkit::gen::generate("uniform:1000,7").unwrap()));
/// ```
pub fn generate_any<T: Scalar>(spec: &str) -> Result<AnyCsr<T>> {
    generate_any_from(&parse_spec(spec)?, MAX_INDEX)
}

/// [`generate_any`] of a parsed spec, 64-bit above `wide_above` nonzeros (2^31−1 outside the
/// tests; a higher value counts as 2^31−1). The row-chunked kinds count their rows once
/// ([`build::RowGen::build_any`]); the others build 32-bit and are widened above `wide_above`;
/// `renumber=random` (32-bit) keeps the width it was given.
pub(crate) fn generate_any_from<T: Scalar>(g: &GenSpec, wide_above: u64) -> Result<AnyCsr<T>> {
    let wide_above = wide_above.min(MAX_INDEX);
    let a = match generate_kind::<T>(g, true, Widths::Above(wide_above))? {
        Made::Rows(r) => r.build_any(wide_above, |nnz| {
            let rows = r.nrows as u128;
            fits::<T>(g, csr_bytes::<T>(rows, nnz as u128) + 4 * (rows + 1))
        })?,
        Made::Whole(a) if a.nnz() as u64 > wide_above => AnyCsr::W64(a.with_offsets()?),
        Made::Whole(a) => AnyCsr::W32(a),
        Made::NoRange => return Err(spec_err(&g.to_string(), "no matrix was generated")),
    };
    if !renumbered(g)? {
        return Ok(a);
    }
    Ok(match a {
        AnyCsr::W32(a) => AnyCsr::W32(renumber(g, a)?),
        AnyCsr::W64(a) => AnyCsr::W64(renumber(g, narrow_to_renumber(g, a)?)?.with_offsets()?),
    })
}

/// Generates the matrix a GEN-SPEC names, in f64.
pub fn generate_f64(spec: &str) -> Result<Csr<f64>> {
    generate::<f64>(spec)
}

/// Checks nnz against what row offsets of width `w` hold (2^31−1 or 2^40; computed wide).
fn limit_nnz(w: OffsetWidth, value: u128) -> Result<usize> {
    let v = u64::try_from(value).unwrap_or(u64::MAX);
    crate::error::check_nnz(w, v)?;
    Ok(v as usize)
}

/// Checks a count against the 32-bit index limit (computed wide, so nothing overflows).
fn limit(what: &'static str, value: u128) -> Result<usize> {
    if value > MAX_INDEX as u128 {
        Err(Error::TooLarge {
            what,
            value: u64::try_from(value).unwrap_or(u64::MAX),
        })
    } else {
        Ok(value as usize)
    }
}

/// Bytes of an `rows`-row CSR matrix with `nnz` entries in precision `T`.
fn csr_bytes<T: Scalar>(rows: u128, nnz: u128) -> u128 {
    4 * (rows + 1) + nnz * (4 + T::BYTES as u128)
}

/// The peak bytes of the Kronecker generator for `n` vertices, `m` edges and `entries` stored
/// entries before duplicates are summed: the largest of its phases (edges and their scatter;
/// the scatter and the per-row sort; the sorted rows and the output).
fn kron_bytes<T: Scalar>(n: u128, m: u128, entries: u128) -> u128 {
    let tables = m / 8 + 4096;
    let generate = 8 * m + 8 * entries + tables;
    let sort = 12 * entries + 8 * n;
    let build = 4 * entries + 8 * n + csr_bytes::<T>(n, entries);
    generate.max(sort).max(build)
}

/// The peak bytes of `rgg:N` with `nnz` expected entries, the largest of its phases: the drawn
/// points with their Z-order keys and order (36 bytes a point); the points and the neighbour grid
/// (44 bytes a point, 4 a cell); the points, the grid, the rows found (4 bytes an entry) and the
/// matrix.
fn rgg_bytes<T: Scalar>(n: usize, nnz: u128) -> u128 {
    let n = n as u128;
    let cells = geo::grid_side(geo::rgg_radius(n as usize)) as u128;
    let cells = cells * cells + 1;
    let order = 36 * n;
    let grid = 44 * n + 4 * cells;
    let build = 36 * n + 4 * cells + 4 * nnz + csr_bytes::<T>(n, nnz);
    order.max(grid).max(build)
}

/// The peak bytes of `delaunay:N`: the triangulation (the `delaunator` crate's arrays: two of
/// 6N words, about five of N words and the points, about 150 bytes a point, plus our spatial
/// order), then its 6N directed entries beside its arrays, then the entries and the matrix.
fn delaunay_bytes<T: Scalar>(n: u128) -> u128 {
    let triangulate = 160 * n;
    let entries = 96 * n + 48 * n + 4 * n;
    let build = 48 * n + csr_bytes::<T>(n, 6 * n);
    triangulate.max(entries).max(build)
}

/// The largest Kronecker SCALE that the 32-bit index limit allows with `ef` edges per vertex
/// (entries doubled when `symmetric`): 2^SCALE rows and EF·2^SCALE (·2) entries ≤ 2^31−1.
/// With the defaults (EF = 16, sym=1) it is 25; 0 when no SCALE fits.
pub fn kron_max_scale(ef: u64, symmetric: bool) -> u32 {
    let per = (ef as u128) * if symmetric { 2 } else { 1 };
    (1..=30u32)
        .rev()
        .find(|&s| (per << s) <= MAX_INDEX as u128)
        .unwrap_or(0)
}

/// Refuses a spec whose estimated peak memory exceeds the memory available
/// ([`crate::memory::available`]), before anything is allocated.
fn fits<T: Scalar>(g: &GenSpec, bytes: u128) -> Result<()> {
    crate::memory::check_fits(|| format!("generating {g} in {}", T::PRECISION), bytes)
}

/// The option `key` of a parsed spec, parsed by `parse`, or `default`.
fn opt<V>(
    g: &GenSpec,
    key: &str,
    default: V,
    expect: &str,
    parse: impl Fn(&str) -> Option<V>,
) -> Result<V> {
    match g.options.iter().find(|(k, _)| k == key) {
        None => Ok(default),
        Some((_, v)) => parse(v)
            .ok_or_else(|| spec_err(&g.to_string(), format!("{key}={v}: {key} must be {expect}"))),
    }
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// The option every kind takes besides `seed`: `renumber=random` numbers the generated square
/// matrix at random, PAPᵀ with P drawn from the seed, hiding its locality as shuffled ids or a
/// crawl order do (`renumber=none`, the default, keeps the generator's numbering).
pub const RENUMBER: &str = "renumber";

/// Whether a spec asks for `renumber=random`.
fn renumbered(g: &GenSpec) -> Result<bool> {
    opt(g, RENUMBER, false, "random or none", |s| {
        match s.to_ascii_lowercase().as_str() {
            "random" => Some(true),
            "none" => Some(false),
            _ => None,
        }
    })
}

/// A generator that builds any row range of its matrix alone, equal to those rows of the whole
/// generation (issue #26: a rank of a distributed run generates only its rows). The stencils,
/// `banded`, `uniform`, `tall`, `wide`, `powerlaw`, `blockdiag`, `hugerow`, `diag`, `identity`
/// and `dense` can; `kron`, `rgg`, `delaunay`, `empty` and `renumber=random` cannot
/// ([`row_generator`] answers `None`).
///
/// ```
/// let g = spmvkit::gen::row_generator::<f64>("poisson3d:6").unwrap().unwrap();
/// let ptr = g.row_ptr().unwrap();
/// let whole = spmvkit::gen::generate_f64("poisson3d:6").unwrap();
/// assert_eq!(ptr, whole.row_ptr());
/// assert_eq!(g.rows(50..120, &ptr).unwrap(), whole.slice_rows(50..120).unwrap());
/// ```
pub struct RowGenerator<T> {
    inner: build::RowGen<T>,
}

impl<T: Scalar> RowGenerator<T> {
    pub fn nrows(&self) -> usize {
        self.inner.nrows
    }
    pub fn ncols(&self) -> usize {
        self.inner.ncols
    }
    /// The whole matrix's row pointers (nrows+1 entries: what an nnz-balanced partition needs).
    pub fn row_ptr(&self) -> Result<Vec<crate::scalar::Idx>> {
        crate::memory::check_fits(
            || "the generator's row pointers".into(),
            4 * (self.nrows() as u128 + 1),
        )?;
        self.inner.row_ptr()
    }
    /// Rows `rows` (global column indices); `row_ptr` is [`RowGenerator::row_ptr`]'s.
    pub fn rows(
        &self,
        rows: std::ops::Range<usize>,
        row_ptr: &[crate::scalar::Idx],
    ) -> Result<Csr<T>> {
        self.inner.rows(rows, row_ptr)
    }
}

/// The [`RowGenerator`] of a GEN-SPEC, or `None` for a kind that cannot build a row range alone.
pub fn row_generator<T: Scalar>(spec: &str) -> Result<Option<RowGenerator<T>>> {
    let g = parse_spec(spec)?;
    if renumbered(&g)? {
        return Ok(None);
    }
    Ok(
        match generate_kind::<T>(&g, false, Widths::Fixed(OffsetWidth::W32))? {
            Made::Rows(inner) => Some(RowGenerator { inner }),
            Made::Whole(_) | Made::NoRange => None,
        },
    )
}

/// Generates the matrix of a parsed spec, in precision `T`, renumbered when it asks for it.
pub fn generate_from<T: Scalar>(g: &GenSpec) -> Result<Csr<T>> {
    generate_from_as::<T, Idx>(g)
}

/// [`generate_from`] with row offsets of type `O` ([`generate_as`]). `renumber=random` takes at
/// most 2^31−1 nonzeros (the reordering is 32-bit).
pub fn generate_from_as<T: Scalar, O: Offset>(g: &GenSpec) -> Result<Csr<T, O>> {
    let a: Csr<T, O> = match generate_kind::<T>(g, true, Widths::Fixed(O::WIDTH))? {
        Made::Rows(r) => r.build()?,
        Made::Whole(a) => a.with_offsets()?,
        Made::NoRange => return Err(spec_err(&g.to_string(), "no matrix was generated")),
    };
    if !renumbered(g)? {
        return Ok(a);
    }
    renumber(g, narrow_to_renumber(g, a)?)?.with_offsets()
}

/// A matrix of either width with 32-bit offsets for `renumber=random`: more than 2^31−1
/// nonzeros is an error naming the spec and the limit (the spec's count is checked before
/// generating; this catches a kind whose count exceeded its estimate).
fn narrow_to_renumber<T: Scalar, O: Offset>(g: &GenSpec, a: Csr<T, O>) -> Result<Csr<T>> {
    let nnz = a.nnz();
    a.with_offsets::<Idx>().map_err(|e| match e {
        Error::TooLarge { .. } => renumber_too_large(g, nnz as u128),
        e => e,
    })
}

/// `renumber=random` of a matrix of `nnz` > 2^31−1 nonzeros.
fn renumber_too_large(g: &GenSpec, nnz: u128) -> Error {
    spec_err(
        &g.to_string(),
        format!(
            "renumber=random takes at most 2^31−1 = {MAX_INDEX} nonzeros (the reordering has \
             32-bit offsets), this matrix has {nnz}"
        ),
    )
}

/// `renumber=random`: the square matrix `a` of spec `g` numbered at random, PAPᵀ.
fn renumber<T: Scalar>(g: &GenSpec, a: Csr<T>) -> Result<Csr<T>> {
    check_square(
        "renumber=random needs a square matrix",
        a.nrows(),
        a.ncols(),
    )
    .map_err(|e| spec_err(&g.to_string(), e.to_string()))?;
    let p = Permutation::random(a.nrows(), g.seed)?;
    permute_symmetric(&a, &p)
}

/// The row offsets' width [`generate_kind`]'s checks assume: one fixed width, or 32 bits up to
/// the count given and 64 above ([`generate_any`]).
#[derive(Clone, Copy, Debug)]
enum Widths {
    Fixed(OffsetWidth),
    Above(u64),
}

impl Widths {
    /// The width a matrix of `nnz` nonzeros is built in.
    fn for_nnz(self, nnz: u128) -> OffsetWidth {
        match self {
            Widths::Fixed(w) => w,
            Widths::Above(n) if nnz > n as u128 => OffsetWidth::W64,
            Widths::Above(_) => OffsetWidth::W32,
        }
    }

    /// The widest of them: its nnz limit is the spec's.
    fn widest(self) -> OffsetWidth {
        match self {
            Widths::Fixed(w) => w,
            Widths::Above(_) => OffsetWidth::W64,
        }
    }
}

/// What [`generate_kind`] makes: a kind built row chunk by row chunk (whole or any row range),
/// a whole matrix, or nothing (a kind that cannot give a row range, asked for one).
enum Made<T> {
    Rows(build::RowGen<T>),
    Whole(Csr<T>),
    NoRange,
}

/// Generates the matrix of a parsed spec in the generator's own numbering. With `whole` false
/// the caller wants row ranges: the whole matrix's memory is not checked, and the kinds that
/// cannot build a row range alone (`kron`, `rgg`, `delaunay`) answer [`Made::NoRange`]. `width`
/// is the row offsets' the caller builds with: the nnz limit of the row-chunked kinds and their
/// memory estimate follow it (with [`Widths::Above`], the limit is 64-bit and the estimate
/// takes the width of the spec's nonzero count).
fn generate_kind<T: Scalar>(g: &GenSpec, whole: bool, width: Widths) -> Result<Made<T>> {
    let a: Vec<u128> = g.args.iter().map(|&v| v as u128).collect();
    let spec = g.to_string();
    let d = find_kind(g.kind).ok_or_else(|| spec_err(&spec, "unknown kind"))?;
    let bad = |msg: String| spec_err(&spec, format!("{msg}; {} takes {}", g.kind, d.usage));
    let positive = |names: &[&str]| -> Result<()> {
        for (v, n) in a.iter().zip(names) {
            if *v == 0 {
                return Err(bad(format!("{n} must be at least 1")));
            }
        }
        Ok(())
    };
    let seed = g.seed;
    // the CSR a row-chunked kind builds, with row offsets of `width`: its peak memory too
    let csr = |rows: u128, nnz: u128| {
        csr_bytes::<T>(rows, nnz) + (width.for_nnz(nnz).bytes() as u128 - 4) * (rows + 1)
    };
    // renumber=random is 32-bit: refused before anything is built
    let renumbering = renumbered(g)?;
    let nnz_limit = |value: u128| {
        if renumbering && value > MAX_INDEX as u128 {
            return Err(renumber_too_large(g, value));
        }
        limit_nnz(width.widest(), value)
    };
    let fits = |g: &GenSpec, bytes: u128| {
        if whole {
            fits::<T>(g, bytes)
        } else {
            Ok(())
        }
    };
    Ok(match g.kind {
        "poisson2d" | "poisson3d" | "stencil27" | "varcoef27" => {
            positive(&["N"])?;
            let n = a[0];
            let square = n * n;
            let rows = if g.kind == "poisson2d" {
                square
            } else {
                square.saturating_mul(n)
            };
            limit("rows", rows)?;
            let nnz = match g.kind {
                "poisson2d" => 5 * square - 4 * n,
                "poisson3d" => 7 * rows - 6 * square,
                _ => (3 * n - 2).pow(3),
            };
            nnz_limit(nnz)?;
            fits(g, csr(rows, nnz))?;
            let dims = if g.kind == "poisson2d" { 2 } else { 3 };
            let full = matches!(g.kind, "stencil27" | "varcoef27");
            let var = (g.kind == "varcoef27").then_some(seed);
            Made::Rows(kinds::stencil::<T>(n as usize, dims, full, var))
        }
        "rgg" | "delaunay" => {
            positive(&["N"])?;
            let n = limit("rows", a[0])?;
            let order = opt(
                g,
                "order",
                geo::Order::Spatial,
                "spatial or shuffled",
                geo::Order::parse,
            )?;
            if !whole {
                return Ok(Made::NoRange);
            }
            Made::Whole(if g.kind == "rgg" {
                let nnz = geo::rgg_expected_nnz(n);
                limit("nnz", nnz)?;
                fits(g, rgg_bytes::<T>(n, nnz))?;
                geo::rgg::<T>(n, order, seed)?
            } else {
                limit("nnz", 6 * a[0])?;
                fits(g, delaunay_bytes::<T>(a[0]))?;
                geo::delaunay::<T>(n, order, seed)?
            })
        }
        "banded" => {
            positive(&["N"])?;
            let (n, bw) = (a[0], a[1]);
            let fill = opt(g, "fill", 0.5, "a number in (0, 1]", |s| {
                s.parse::<f64>().ok().filter(|f| *f > 0.0 && *f <= 1.0)
            })?;
            let n = limit("rows", n)?;
            let width = (2 * bw + 1).min(n as u128) as f64;
            let nnz = nnz_limit((n as f64 * (fill * width).round().max(1.0)) as u128)?;
            fits(g, csr(n as u128, nnz as u128))?;
            Made::Rows(kinds::banded::<T>(
                n,
                bw.min(n as u128) as usize,
                fill,
                seed,
            ))
        }
        "uniform" | "tall" | "wide" => {
            let (m, n, k) = if a.len() == 2 {
                (a[0], a[0], a[1])
            } else {
                (a[0], a[1], a[2])
            };
            if g.kind == "tall" && m < n {
                return Err(bad(format!("tall needs M ≥ N, got {m} < {n}")));
            }
            if g.kind == "wide" && m > n {
                return Err(bad(format!("wide needs M ≤ N, got {m} > {n}")));
            }
            if k > n {
                return Err(bad(format!(
                    "K = {k} distinct columns do not fit in N = {n} columns"
                )));
            }
            limit("rows", m)?;
            limit("columns", n)?;
            nnz_limit(m * k)?;
            fits(g, csr(m, m * k))?;
            Made::Rows(kinds::uniform::<T>(
                m as usize, n as usize, k as usize, seed,
            ))
        }
        "powerlaw" => {
            positive(&["N", "MEAN"])?;
            let (n, mean) = (a[0], a[1]);
            if mean > n {
                return Err(bad(format!("MEAN = {mean} exceeds N = {n}")));
            }
            let alpha = opt(g, "alpha", 2.0, "a positive number", |s| {
                s.parse::<f64>().ok().filter(|x| *x > 0.0 && x.is_finite())
            })?;
            limit("rows", n)?;
            nnz_limit(n * mean)?;
            fits(g, csr(n, n * mean))?;
            Made::Rows(kinds::powerlaw::<T>(n as usize, mean as f64, alpha, seed))
        }
        "kron" => {
            let scale = a[0];
            let ef = a.get(1).copied().unwrap_or(16);
            if ef == 0 {
                return Err(bad("EF must be at least 1".into()));
            }
            let symmetric = opt(g, "sym", true, "0 or 1", parse_bool)?;
            let loops = opt(g, "loops", true, "0 or 1", parse_bool)?;
            let random_values = opt(g, "vals", false, "count or rand", |s| {
                match s.to_ascii_lowercase().as_str() {
                    "count" => Some(false),
                    "rand" | "random" => Some(true),
                    _ => None,
                }
            })?;
            let max = kron_max_scale(ef as u64, symmetric);
            if scale == 0 || scale > max as u128 {
                let why = if max == 0 {
                    format!("EF = {ef} alone exceeds the 32-bit index limit")
                } else {
                    format!(
                        "SCALE = {scale} is not in 1..={max}: with EF = {ef} and sym={}, 2^SCALE \
                         rows and EF·2^SCALE{} entries must stay within the 32-bit index limit \
                         2^31−1",
                        u8::from(symmetric),
                        if symmetric { "·2" } else { "" }
                    )
                };
                return Err(spec_err(&spec, why));
            }
            let (n, m) = (1u128 << scale, ef << scale);
            let entries = m * if symmetric { 2 } else { 1 };
            limit("rows", n)?;
            limit("nnz", entries)?;
            if !whole {
                return Ok(Made::NoRange);
            }
            fits(g, kron_bytes::<T>(n, m, entries))?;
            Made::Whole(kron::kron::<T>(kron::KronOptions {
                scale: scale as u32,
                edge_factor: ef as u64,
                symmetric,
                loops,
                random_values,
                seed,
            })?)
        }
        "blockdiag" => {
            let (nb, bs) = (a[0], a[1]);
            limit("rows", nb * bs)?;
            nnz_limit(nb * bs * bs)?;
            fits(g, csr(nb * bs, nb * bs * bs))?;
            Made::Rows(kinds::blockdiag::<T>(nb as usize, bs as usize, seed))
        }
        "hugerow" => {
            positive(&["N"])?;
            let (n, k) = (a[0], a[1]);
            let ncols = opt(g, "ncols", n, "a positive integer", |s| {
                parse_uint(s).filter(|&c| c > 0).map(u128::from)
            })?;
            let l = a.get(2).copied().unwrap_or(ncols);
            let row = opt(g, "row", n / 2, "a row index below N", |s| {
                parse_uint(s).map(u128::from).filter(|&r| r < n)
            })?;
            if k > ncols || l > ncols {
                return Err(bad(format!(
                    "K = {k} and L = {l} must not exceed the {ncols} columns"
                )));
            }
            limit("rows", n)?;
            limit("columns", ncols)?;
            nnz_limit((n - 1) * k + l)?;
            fits(g, csr(n, (n - 1) * k + l))?;
            Made::Rows(kinds::hugerow::<T>(
                n as usize,
                ncols as usize,
                k as usize,
                l as usize,
                row as usize,
                seed,
            ))
        }
        "diag" | "identity" => {
            let n = limit("rows", a[0])?;
            fits(g, csr(a[0], a[0]))?;
            Made::Rows(kinds::diagonal::<T>(n, g.kind == "identity", seed))
        }
        "dense" => {
            limit("rows", a[0])?;
            limit("columns", a[1])?;
            nnz_limit(a[0] * a[1])?;
            fits(g, csr(a[0], a[0] * a[1]))?;
            Made::Rows(kinds::dense::<T>(a[0] as usize, a[1] as usize, seed))
        }
        "empty" => {
            let m = limit("rows", a[0])?;
            let n = limit("columns", a[1])?;
            fits(g, csr_bytes::<T>(a[0], 0))?;
            Made::Whole(kinds::empty::<T>(m, n)?)
        }
        other => return Err(spec_err(&spec, format!("unknown kind '{other}'"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row-range kind builds any range equal to those rows of the whole matrix, in both
    /// precisions, including ranges that cut chunks and empty ones.
    #[test]
    fn row_ranges_equal_the_whole_generation() {
        for spec in [
            "poisson2d:37",
            "poisson3d:13",
            "stencil27:9",
            "varcoef27:8",
            "banded:3000,7",
            "uniform:5000,9",
            "uniform:4000,300,5,seed=4",
            "wide:30,5000,700",
            "powerlaw:6000,5",
            "blockdiag:100,7",
            "hugerow:3000,3,ncols=500",
            "diag:40000",
            "dense:40,30",
        ] {
            let whole = generate_f64(spec).unwrap();
            let g = row_generator::<f64>(spec).unwrap().unwrap();
            assert_eq!((g.nrows(), g.ncols()), (whole.nrows(), whole.ncols()));
            let ptr = g.row_ptr().unwrap();
            assert_eq!(ptr, whole.row_ptr(), "{spec}");
            let m = whole.nrows();
            for (lo, hi) in [
                (0, m),
                (0, 1),
                (m / 3, m / 3),
                (m / 7, m / 2 + 5),
                (m - 1, m),
            ] {
                let got = g.rows(lo..hi, &ptr).unwrap();
                assert_eq!(
                    got,
                    whole.slice_rows(lo..hi).unwrap(),
                    "{spec} rows {lo}..{hi}"
                );
            }
            assert!(g.rows(0..m + 1, &ptr).is_err());
        }
        let g = row_generator::<f32>("uniform:3000,4").unwrap().unwrap();
        let whole = generate::<f32>("uniform:3000,4").unwrap();
        let ptr = g.row_ptr().unwrap();
        assert_eq!(
            g.rows(1000..2500, &ptr).unwrap(),
            whole.slice_rows(1000..2500).unwrap()
        );
        for spec in [
            "kron:8",
            "rgg:100",
            "delaunay:100",
            "poisson2d:5,renumber=random",
            "empty:3,3",
        ] {
            assert!(row_generator::<f64>(spec).unwrap().is_none(), "{spec}");
        }
        assert!(row_generator::<f64>("uniform:3,4").is_err());
    }

    #[test]
    fn parses_and_prints() {
        let g = parse_spec(" kron:18, 48 ,seed=7,sym=0").unwrap();
        assert_eq!(g.kind, "kron");
        assert_eq!(g.args, vec![18, 48]);
        assert_eq!(g.seed, 7);
        assert_eq!(g.to_string(), "kron:18,48,sym=0,seed=7");
        assert_eq!(parse_spec("diag:2^10").unwrap().args, vec![1024]);
        assert_eq!(parse_spec("diag:1_000").unwrap().args, vec![1000]);
    }

    /// `renumber=random` is PAPᵀ: the same rows (length and sum) in another order, the same
    /// matrix for the same seed, another for another seed; refused where it cannot apply.
    #[test]
    fn renumber_random_is_a_symmetric_renumbering() {
        let rows = |a: &Csr<f64>| {
            let mut r: Vec<(usize, i64)> = (0..a.nrows())
                .map(|i| {
                    let (c, v) = a.row(i);
                    (c.len(), (v.iter().sum::<f64>() * 1024.0).round() as i64)
                })
                .collect();
            r.sort_unstable();
            r
        };
        let a = generate_f64("poisson3d:6").unwrap();
        let b = generate_f64("poisson3d:6,renumber=random").unwrap();
        assert_eq!(rows(&a), rows(&b));
        assert_ne!(a.pattern(), b.pattern());
        assert_eq!(b, generate_f64("poisson3d:6,renumber=random").unwrap());
        assert_ne!(
            b,
            generate_f64("poisson3d:6,renumber=random,seed=3").unwrap()
        );
        assert_eq!(a, generate_f64("poisson3d:6,renumber=none").unwrap());
        assert_eq!(
            parse_spec("kron:8,renumber=random").unwrap().to_string(),
            "kron:8,renumber=random"
        );
        let e = generate_f64("empty:3,4,renumber=random")
            .unwrap_err()
            .to_string();
        assert!(e.contains("square") && e.contains("3x4"), "{e}");
        let e = generate_f64("poisson2d:4,renumber=maybe")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("renumber=maybe") && e.contains("random or none"),
            "{e}"
        );
        let e = parse_spec("poisson2d:4,shuffle=1").unwrap_err().to_string();
        assert!(e.contains("renumber"), "{e}");
    }

    /// [`generate_any_from`] of `spec` at the thresholds just below and at its nnz: 64-bit above,
    /// 32-bit at or below, the same matrix as [`generate`] either way; and the public entry,
    /// whose threshold is 2^31−1 (a higher one counts as 2^31−1).
    fn check_any_widths<T: Scalar>(spec: &str) {
        let g = parse_spec(spec).unwrap();
        let a = generate::<T>(spec).unwrap();
        let nnz = a.nnz() as u64;
        match generate_any_from::<T>(&g, nnz.saturating_sub(1)).unwrap() {
            AnyCsr::W64(w) if nnz > 0 => assert_eq!(w, a.with_offsets().unwrap(), "{spec}"),
            AnyCsr::W32(n) if nnz == 0 => assert_eq!(n, a, "{spec}"),
            other => panic!("{spec} above the threshold: {:?} offsets", other.width()),
        }
        for wide_above in [nnz, MAX_INDEX, u64::MAX] {
            match generate_any_from::<T>(&g, wide_above).unwrap() {
                AnyCsr::W32(n) => assert_eq!(n, a, "{spec} at {wide_above}"),
                AnyCsr::W64(_) => panic!("{spec}: 64-bit offsets at a threshold of {wide_above}"),
            }
        }
        assert_eq!(generate_any::<T>(spec).unwrap().into_offsets().unwrap(), a);
    }

    /// The one-pass entry picks the width by the count, for the row-chunked kinds, the ones
    /// built whole (widened), `renumber=random` (permuted at 32 bits, then widened) and an
    /// empty matrix, in both precisions.
    #[test]
    fn generate_any_picks_the_width_the_count_needs() {
        for spec in [
            "uniform:3000,17",
            "poisson3d:9",
            "varcoef27:6",
            "powerlaw:2000,5",
            "hugerow:500,3,400",
            "banded:700,9",
            "dense:20,30",
            "kron:9",
            "rgg:2000",
            "delaunay:300",
            "uniform:400,7,renumber=random",
            "powerlaw:600,4,renumber=random",
            "empty:5,4",
        ] {
            check_any_widths::<f32>(spec);
            check_any_widths::<f64>(spec);
        }
    }

    /// Past 2^31−1 nonzeros with `renumber=random` and past 2^40: refused from the spec's count,
    /// before anything is allocated, with the spec and the limit named.
    #[test]
    fn generate_any_refuses_what_no_width_takes() {
        let e = generate_any::<f64>("uniform:50000,50000,renumber=random").unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, Error::GenSpec { .. }), "{e:?}");
        assert!(
            msg.contains("uniform:50000,50000,renumber=random")
                && msg.contains("2^31−1")
                && msg.contains("2500000000"),
            "{msg}"
        );
        let e = generate_as::<f64, u64>("uniform:50000,50000,renumber=random").unwrap_err();
        assert!(e.to_string().contains("renumber=random takes"), "{e}");
        let e = generate_any::<f32>("uniform:2000000000,1000").unwrap_err();
        assert!(e.to_string().contains("limit of 2^40"), "{e}");
    }

    /// A 64-bit generated matrix (the test threshold) saved as `.spmvkit` is a version 2 cache
    /// that reads back in 64 bits, bit for bit; as `.mtx` and `.mtx.gz`, the same text as its
    /// 32-bit self. A 32-bit one stays version 1.
    #[test]
    fn a_64_bit_generated_matrix_round_trips_through_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let spec = "powerlaw:3000,6,seed=5";
        let narrow = generate::<f64>(spec).unwrap();
        let wide = generate_any_from::<f64>(&parse_spec(spec).unwrap(), 100).unwrap();
        assert_eq!(wide.width(), OffsetWidth::W64);
        let cache = dir.path().join("w.spmvkit");
        crate::io::save_any(&cache, &wide).unwrap();
        assert_eq!(crate::io::read_cache_header(&cache).unwrap().version, 2);
        match crate::io::load_any::<f64>(&cache).unwrap() {
            AnyCsr::W64(back) => assert_eq!(back, narrow.with_offsets().unwrap()),
            AnyCsr::W32(_) => panic!("a version 2 cache read back with 32-bit offsets"),
        }
        for name in ["w.mtx", "w.mtx.gz"] {
            let p = dir.path().join(name);
            crate::io::save_any(&p, &wide).unwrap();
            assert_eq!(crate::io::load::<f64>(&p).unwrap(), narrow, "{name}");
        }
        let small = dir.path().join("n.spmvkit");
        crate::io::save_any(&small, &generate_any::<f64>(spec).unwrap()).unwrap();
        assert_eq!(crate::io::read_cache_header(&small).unwrap().version, 1);
        assert_eq!(crate::io::load::<f64>(&small).unwrap(), narrow);
    }

    #[test]
    fn kinds_table_is_complete() {
        assert_eq!(kinds().len(), DEFS.len());
        for k in kinds() {
            assert!(!k.name.is_empty());
            assert!(k.example.starts_with(k.name));
        }
    }
}
