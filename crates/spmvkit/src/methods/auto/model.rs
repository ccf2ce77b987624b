//! The model of `auto --auto=model` (issue #11): nearest neighbours in a space of matrix features,
//! fitted from committed benchmark results (`table.csv`, built by `spmv auto table` from the
//! newest committed H200 run of each method, matrix and precision: [`crate::bench::auto::table`]). A
//! prediction for a method is the mean, over the k nearest training matrices of the same
//! precision weighted by closeness, of log(t_method / t_fastest) there, plus the neighbours'
//! preprocessing cost per nonzero (geometric mean); methods are ranked by predicted
//! `t_call + t_prep / calls` ([`Model::rank`]). `--auto=model` takes the first; `--auto=trial`
//! times the first few on the device.
//!
//! The model's settings ([`Knobs::SHIPPED`]: k, the distance weights, the features used) and
//! auto's trial count were chosen on the tuning part of the data only ([`split_of`]: by matrix
//! family), and are evaluated on the test part (`docs/results/tuning-split.md`).

use crate::error::{Error, Result};
use crate::matrix::{MatrixStats, RowStats};
use crate::scalar::Precision;

/// The statistic columns of the table, between `precision` and the methods. The x-sector counts
/// are empty for a matrix that no run counted them for.
pub const STAT_COLUMNS: [&str; 11] = [
    "nrows",
    "ncols",
    "nnz",
    "row_len_mean",
    "row_len_std",
    "row_len_max",
    "empty_rows",
    "bandwidth",
    "fits_l2",
    "x_sectors_f32",
    "x_sectors_f64",
];

/// The training table shipped with the library.
pub const TABLE: &str = include_str!("table.csv");

/// The environment variable naming a training table to use instead of [`TABLE`].
pub const TABLE_ENV: &str = "SPMVKIT_AUTO_TABLE";

/// Number of features.
pub const NFEATURES: usize = 10;

/// The feature that is missing where a table row or a matrix has no x-sector count: NaN there,
/// and [`Model::nearest`] leaves it out of that distance.
pub const X_SHARE: usize = 9;

/// The index of the L2-fit feature.
const FITS_L2: usize = 8;

/// Features of one matrix, as logs so that distances compare ratios: nnz, rows, the
/// rows/columns ratio, mean row length, row variation (std/mean), max/mean row length, the share
/// of empty rows, bandwidth/columns, the L2 fit (3 when it fits, else 0), and x sectors per
/// nonzero in percent (how scattered the columns are: [`crate::matrix::x_sector_share`]; NaN
/// when unknown).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Features(pub [f64; NFEATURES]);

impl Features {
    /// From raw statistics: rows, columns, nnz, mean / std / max row length, empty rows,
    /// bandwidth, whether the working set fits the GPU's L2, and x sectors per nonzero in the
    /// precision's value size (None: unknown).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        nrows: f64,
        ncols: f64,
        nnz: f64,
        mean: f64,
        std: f64,
        max: f64,
        empty_rows: f64,
        bandwidth: f64,
        fits_l2: bool,
        x_share: Option<f64>,
    ) -> Self {
        let l = |v: f64| (v.max(0.0) + 1.0).ln();
        Features([
            l(nnz),
            l(nrows),
            l(nrows) - l(ncols),
            l(mean),
            l(std / mean.max(1e-9)),
            l(max / mean.max(1e-9)),
            l(empty_rows / nrows.max(1.0) * 100.0),
            l(bandwidth / ncols.max(1.0) * 100.0),
            if fits_l2 { 3.0 } else { 0.0 },
            // locality decides where x is not L2-resident: the same for every matrix that fits
            match (fits_l2, x_share) {
                (true, _) => 0.0,
                (false, None) => f64::NAN,
                (false, Some(x)) => l(x * 100.0),
            },
        ])
    }

    /// The features of a matrix whose L2 fit is known, in `precision`: the x share is
    /// `x_share` when given (auto's sampled estimate), else the statistics' exact count, else
    /// unknown.
    pub fn from_stats(
        s: &MatrixStats,
        fits: bool,
        precision: Precision,
        x_share: Option<f64>,
    ) -> Self {
        Features::new(
            s.nrows as f64,
            s.ncols as f64,
            s.nnz as f64,
            s.row_len.mean,
            s.row_len.std,
            s.row_len.max as f64,
            s.empty_rows as f64,
            s.bandwidth as f64,
            fits,
            x_share.or_else(|| s.x_share(precision.bytes())),
        )
    }

    /// The same features from the row statistics alone (what `auto` computes at run time, with
    /// the x share it sampled): equal to [`Features::from_stats`] of the full statistics.
    pub fn from_rows(r: &RowStats, fits: bool, x_share: Option<f64>) -> Self {
        Features::new(
            r.nrows as f64,
            r.ncols as f64,
            r.nnz as f64,
            r.row_len.mean,
            r.row_len.std,
            r.row_len.max as f64,
            r.empty_rows as f64,
            r.bandwidth() as f64,
            fits,
            x_share,
        )
    }
}

/// One training matrix.
#[derive(Clone, Debug)]
pub struct Sample {
    pub matrix: String,
    pub precision: Precision,
    pub nnz: f64,
    pub features: Features,
    /// Per method (index into `Model::methods`): (µs per call, preprocessing ms).
    pub times: Vec<Option<(f64, f64)>>,
}

impl Sample {
    /// Whether the table holds the L2 fit as true for this matrix.
    pub fn fits_l2(&self) -> bool {
        self.features.0[FITS_L2] > 0.0
    }

    /// The fastest per-call time among the allowed methods.
    pub fn best(&self, allowed: &[bool]) -> Option<(usize, f64)> {
        self.times
            .iter()
            .enumerate()
            .filter(|(i, _)| allowed[*i])
            .filter_map(|(i, t)| t.map(|(us, _)| (i, us)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }
}

/// The model's settings: how many neighbours, how they are weighted, and which features the
/// distance uses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Knobs {
    /// Neighbours consulted.
    pub k: usize,
    /// A neighbour at distance d weighs 1/(d + offset): small offsets trust the nearest most.
    pub offset: f64,
    /// Each feature's weight in the distance (the order of [`Features`]); 0 leaves it out.
    pub feature_weights: [f64; NFEATURES],
}

impl Knobs {
    /// What `auto` uses, chosen on the tuning split (`docs/results/tuning-split.md`).
    pub const SHIPPED: Knobs = Knobs {
        k: 4,
        offset: 0.3,
        // without bandwidth/columns and the L2 fit (the x share is 0 for every matrix that
        // fits L2, so it holds the fit too)
        feature_weights: [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0],
    };

    /// The shipped settings with another k.
    pub fn with_k(k: usize) -> Self {
        Knobs { k, ..Self::SHIPPED }
    }
}

/// The names of the features, in the order of [`Features`].
pub const FEATURE_NAMES: [&str; NFEATURES] = [
    "log nnz",
    "log rows",
    "rows/columns",
    "mean row length",
    "row variation",
    "max/mean row length",
    "empty rows",
    "bandwidth/columns",
    "fits L2",
    "x sectors/nnz",
];

/// The parsed table.
#[derive(Clone, Debug)]
pub struct Model {
    pub methods: Vec<String>,
    pub samples: Vec<Sample>,
}

fn bad(line: usize, msg: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("auto model table, line {line}: {msg}"))
}

impl Model {
    /// Parses the table written by [`crate::bench::auto::table::Table::to_csv`]: `matrix`, `precision`, the
    /// statistic columns ([`STAT_COLUMNS`], found by name; the x-sector columns
    /// may be missing or empty), then per method `METHOD:us` and `METHOD:prep_ms` (µs per call,
    /// preprocessing ms; both empty where the method did not run). Other `METHOD:FIELD` columns,
    /// such as `METHOD:commit`, are provenance and are ignored.
    pub fn parse(text: &str) -> Result<Self> {
        let mut lines = text.lines();
        let header: Vec<&str> = lines
            .next()
            .ok_or_else(|| bad(1, "empty"))?
            .split(',')
            .collect();
        if header.len() < 2 || header[..2] != ["matrix", "precision"] {
            return Err(bad(1, "the header does not start with matrix,precision"));
        }
        // the statistics: every column before the first METHOD:FIELD one
        let first_method = header
            .iter()
            .position(|h| h.contains(':'))
            .unwrap_or(header.len());
        let stat = |name: &str| header[..first_method].iter().position(|h| *h == name);
        let need = |name: &str| stat(name).ok_or_else(|| bad(1, format!("no '{name}' column")));
        // the eight numeric statistics lead the table's statistic columns
        let mut fc = [0usize; 8];
        for (d, name) in fc.iter_mut().zip(&STAT_COLUMNS[..8]) {
            *d = need(name)?;
        }
        let fits_col = need("fits_l2")?;
        let x_cols = (stat("x_sectors_f32"), stat("x_sectors_f64"));
        // per method: the columns of its time and its preprocessing
        let mut methods: Vec<String> = Vec::new();
        let mut cols: Vec<(Option<usize>, Option<usize>)> = Vec::new();
        for (c, h) in header.iter().enumerate().skip(first_method) {
            let (m, field) = h
                .rsplit_once(':')
                .ok_or_else(|| bad(1, format!("column '{h}' is not METHOD:FIELD")))?;
            let i = match methods.iter().position(|x| x == m) {
                Some(i) => i,
                None => {
                    methods.push(m.to_string());
                    cols.push((None, None));
                    methods.len() - 1
                }
            };
            match field {
                "us" => cols[i].0 = Some(c),
                "prep_ms" => cols[i].1 = Some(c),
                _ => {}
            }
        }
        let cols = cols
            .into_iter()
            .zip(&methods)
            .map(|(c, m)| match c {
                (Some(us), Some(prep)) => Ok((us, prep)),
                _ => Err(bad(
                    1,
                    format!("method '{m}' lacks its :us or :prep_ms column"),
                )),
            })
            .collect::<Result<Vec<_>>>()?;
        if methods.is_empty() {
            return Err(bad(1, "no method columns"));
        }
        let mut samples = Vec::new();
        for (i, line) in lines.enumerate() {
            let f: Vec<&str> = line.split(',').collect();
            if f.len() != header.len() {
                return Err(bad(
                    i + 2,
                    format!("{} fields, header has {}", f.len(), header.len()),
                ));
            }
            let num = |s: &str| -> Result<f64> {
                s.parse::<f64>()
                    .map_err(|_| bad(i + 2, format!("'{s}' is not a number")))
            };
            let precision = f[1].parse::<Precision>().map_err(|e| bad(i + 2, e))?;
            let v: Vec<f64> = fc.iter().map(|&c| num(f[c])).collect::<Result<_>>()?;
            let fits = f[fits_col] == "true";
            let x_col = match precision {
                Precision::F32 => x_cols.0,
                Precision::F64 => x_cols.1,
            };
            let x_share = match x_col.map(|c| f[c]) {
                None | Some("") => None,
                Some(x) => Some(num(x)? / v[2].max(1.0)),
            };
            let times = cols
                .iter()
                .map(|&(us, prep)| match (f[us], f[prep]) {
                    ("", _) => Ok(None),
                    (us, prep) => Ok(Some((num(us)?, num(prep)?))),
                })
                .collect::<Result<Vec<_>>>()?;
            samples.push(Sample {
                matrix: f[0].to_string(),
                precision,
                nnz: v[2],
                features: Features::new(
                    v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], fits, x_share,
                ),
                times,
            });
        }
        Ok(Model { methods, samples })
    }

    /// The model, parsed once per process: the shipped table, or the file named by
    /// [`TABLE_ENV`] (a table `spmv auto table` wrote, e.g. on the GPU machine after a training
    /// run, before the held-out run that uses it).
    pub fn shipped() -> Result<&'static Self> {
        static MODEL: std::sync::OnceLock<std::result::Result<Model, String>> =
            std::sync::OnceLock::new();
        MODEL
            .get_or_init(|| match std::env::var_os(TABLE_ENV) {
                None => Model::parse(TABLE).map_err(|e| e.to_string()),
                Some(path) => std::fs::read_to_string(&path)
                    .map_err(|e| format!("{TABLE_ENV}={}: {e}", path.to_string_lossy()))
                    .and_then(|t| {
                        Model::parse(&t)
                            .map_err(|e| format!("{TABLE_ENV}={}: {e}", path.to_string_lossy()))
                    }),
            })
            .as_ref()
            .map_err(|e| Error::InvalidArgument(e.clone()))
    }

    /// The `knobs.k` samples of `precision` that `use_sample` admits nearest to `features`, with
    /// their distances, nearest first: each feature is scaled by its spread over those samples
    /// and weighted by `knobs.feature_weights`.
    pub fn nearest(
        &self,
        features: &Features,
        precision: Precision,
        knobs: &Knobs,
        use_sample: impl Fn(&Sample) -> bool,
    ) -> Vec<(f64, &Sample)> {
        let pool: Vec<&Sample> = self
            .samples
            .iter()
            .filter(|s| s.precision == precision && use_sample(s))
            .collect();
        if pool.is_empty() {
            return Vec::new();
        }
        // each feature's spread over the samples that know it
        let mut scale = [0f64; NFEATURES];
        for (d, sc) in scale.iter_mut().enumerate() {
            let known: Vec<f64> = pool
                .iter()
                .map(|s| s.features.0[d])
                .filter(|v| v.is_finite())
                .collect();
            let n = known.len().max(1) as f64;
            let mean = known.iter().sum::<f64>() / n;
            let var = known.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
            *sc = if var > 1e-12 { var.sqrt() } else { 1.0 };
        }
        let fw = &knobs.feature_weights;
        // a feature unknown on either side (the x share) adds nothing to that distance
        let dist = |s: &Sample| -> f64 {
            (0..NFEATURES)
                .map(|d| ((s.features.0[d] - features.0[d]) / scale[d]).powi(2))
                .zip(fw)
                .filter(|(t, w)| t.is_finite() && **w > 0.0)
                .map(|(t, w)| w * t)
                .sum::<f64>()
                .sqrt()
        };
        let mut near: Vec<(f64, &Sample)> = pool.iter().map(|s| (dist(s), *s)).collect();
        near.sort_by(|a, b| a.0.total_cmp(&b.0));
        near.truncate(knobs.k.max(1));
        near
    }

    /// Ranks the allowed methods (`allowed[i]` for `methods[i]`) for a matrix with `features`
    /// and `nnz` nonzeros, fastest predicted first, using the `knobs.k` nearest samples of
    /// `precision` that `use_sample` admits (held-out evaluation excludes the matrix and its
    /// near-duplicates, or keeps the tuning split only). `calls`: expected calls, over which
    /// the preprocessing is spread. Empty when no sample of that precision has data for the
    /// allowed methods.
    #[allow(clippy::too_many_arguments)]
    pub fn rank(
        &self,
        features: &Features,
        nnz: f64,
        precision: Precision,
        allowed: &[bool],
        calls: f64,
        knobs: &Knobs,
        use_sample: impl Fn(&Sample) -> bool,
    ) -> Vec<Prediction> {
        let near = self.nearest(features, precision, knobs, use_sample);
        if near.is_empty() {
            return Vec::new();
        }
        // each neighbour with its weight (closer counts more) and its fastest allowed time
        let offset = knobs.offset.max(1e-6);
        let near: Vec<(&Sample, f64, Option<f64>)> = near
            .into_iter()
            .map(|(d, s)| (s, 1.0 / (d + offset), s.best(allowed).map(|(_, us)| us)))
            .collect();
        // log of the neighbours' fastest time per nonzero: the scale of this matrix's time
        let (mut base, mut wsum) = (0.0, 0.0);
        for (s, w, b) in &near {
            if let Some(us) = b {
                base += w * (us / s.nnz.max(1.0)).ln();
                wsum += w;
            }
        }
        if wsum == 0.0 {
            return Vec::new();
        }
        let t_best = (base / wsum).exp() * nnz.max(1.0);
        let mut out = Vec::new();
        for (m, ok) in allowed.iter().enumerate() {
            if !ok {
                continue;
            }
            let (mut lr, mut prep, mut w_m, mut n) = (0.0, 0.0, 0.0, 0usize);
            for (s, w, best) in &near {
                if let (Some((us, p)), Some(b)) = (s.times[m], *best) {
                    lr += w * (us / b).ln();
                    // geometric: robust to a neighbour whose run paid a one-off compile
                    prep += w * (p.max(1e-3) * 1e3 / s.nnz.max(1.0)).ln();
                    w_m += w;
                    n += 1;
                }
            }
            // a method must have run on most neighbours to be trusted
            if n * 2 <= near.len() {
                continue;
            }
            let call_us = t_best * (lr / w_m).exp();
            let prep_us = (prep / w_m).exp() * nnz.max(1.0);
            out.push(Prediction {
                method: m,
                call_us,
                prep_us,
                us: call_us + prep_us / calls.max(1.0),
            });
        }
        out.sort_by(|a, b| a.us.total_cmp(&b.us));
        out
    }

    /// The first of [`Model::rank`]: the method index and its predicted µs per call
    /// (preprocessing included).
    #[allow(clippy::too_many_arguments)]
    pub fn choose(
        &self,
        features: &Features,
        nnz: f64,
        precision: Precision,
        allowed: &[bool],
        calls: f64,
        knobs: &Knobs,
        use_sample: impl Fn(&Sample) -> bool,
    ) -> Option<(usize, f64)> {
        self.rank(features, nnz, precision, allowed, calls, knobs, use_sample)
            .first()
            .map(|p| (p.method, p.us))
    }

    /// The distinct matrices of the table in split `sp`, sorted ignoring case (then exactly), and
    /// their distinct [`family`] names, sorted.
    pub fn split_members(&self, sp: Split) -> (Vec<&str>, Vec<String>) {
        let mut names: Vec<&str> = self
            .samples
            .iter()
            .filter(|s| split_of(&s.matrix) == sp)
            .map(|s| s.matrix.as_str())
            .collect();
        names.sort_by_key(|n| (n.to_lowercase(), *n));
        names.dedup();
        let mut fams: Vec<String> = names.iter().map(|n| family(n)).collect();
        fams.sort();
        fams.dedup();
        (names, fams)
    }
}

/// One method's predicted cost on a matrix.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    /// Index into [`Model::methods`].
    pub method: usize,
    /// Predicted µs per call, preprocessing excluded.
    pub call_us: f64,
    /// Predicted preprocessing (prepare + upload), µs.
    pub prep_us: f64,
    /// `call_us + prep_us / calls`: what the ranking sorts by.
    pub us: f64,
}

/// The family of a training matrix, for held-out evaluation: a matrix and its near-duplicates
/// (variants of one generator, numbered members of one collection such as `bcspwr01`..`bcspwr10`
/// or `delaunay_n10`..`delaunay_n15`) share it. A GEN-SPEC's family is its generator; a file's is
/// its lowercase name up to the first digit, without trailing `_` or `-` (the whole name when
/// that leaves nothing).
///
/// ```
/// use spmvkit::methods::auto::model::family;
/// assert_eq!(family("bcspwr07"), "bcspwr");
/// assert_eq!(family("delaunay_n12"), "delaunay_n");
/// assert_eq!(family("uniform:4000000;16"), "uniform");
/// assert_eq!(family("3elt"), "3elt");
/// ```
pub fn family(matrix: &str) -> String {
    if let Some((gen, _)) = matrix.split_once(':') {
        return gen.to_string();
    }
    let lower = matrix.to_lowercase();
    let stem = lower
        .split(|c: char| c.is_ascii_digit())
        .next()
        .unwrap_or("")
        .trim_end_matches(['_', '-']);
    if stem.is_empty() {
        lower
    } else {
        stem.to_string()
    }
}

/// The part of the committed data a matrix belongs to: the defaults are chosen on `Tune` and
/// reported on `Test`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Split {
    Tune,
    Test,
}

/// Share of the hash space, in percent, that goes to [`Split::Tune`].
pub const TUNE_PERCENT: u64 = 50;

/// The split of a matrix, by its [`family`], so that near-duplicates fall on one side: `Tune`
/// when the 64-bit FNV-1a hash of the family's UTF-8 bytes, modulo 100, is below
/// [`TUNE_PERCENT`], else `Test`. It depends on the name alone: stable across runs, machines and
/// precisions.
///
/// ```
/// use spmvkit::methods::auto::model::{split_of, Split};
/// assert_eq!(split_of("bcspwr01"), split_of("bcspwr10"));
/// assert_eq!(split_of("uniform:4000000,16"), split_of("uniform:30000000;2"));
/// ```
pub fn split_of(matrix: &str) -> Split {
    if crate::hash::fnv1a(family(matrix).as_bytes()) % 100 < TUNE_PERCENT {
        Split::Tune
    } else {
        Split::Test
    }
}
