//! The model of `auto --auto=model` (issue #11): nearest neighbours in a space of matrix features,
//! fitted from committed benchmark results (`table.csv`, built by `scripts/auto-table.py` from
//! `docs/results/h200/2026-11-22/`). A prediction for a method is the mean, over the k nearest
//! training matrices of the same precision, of log(t_method / t_fastest) there, plus the
//! neighbours' preprocessing cost per nonzero; the method with the least predicted
//! `t_call + t_prep / calls` wins.

use crate::error::{Error, Result};
use crate::matrix::MatrixStats;
use crate::scalar::Precision;

/// The training table shipped with the library.
pub const TABLE: &str = include_str!("table.csv");

/// Features of one matrix, as logs so that distances compare ratios.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Features(pub [f64; 7]);

impl Features {
    /// From raw statistics: rows, columns, nnz, mean / std / max row length, empty rows,
    /// bandwidth, and whether the working set fits the GPU's L2.
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
    ) -> Self {
        let l = |v: f64| (v.max(0.0) + 1.0).ln();
        Features([
            l(nnz),
            l(nrows) - l(ncols),
            l(mean),
            l(std / mean.max(1e-9)),
            l(max / mean.max(1e-9)),
            l(empty_rows / nrows.max(1.0) * 100.0) + l(bandwidth / ncols.max(1.0) * 100.0),
            if fits_l2 { 3.0 } else { 0.0 },
        ])
    }

    /// The features of a matrix; `l2_bytes` is the GPU's L2 (None: treated as not fitting). The
    /// L2 fit is judged as the run records that trained the model judge it
    /// ([`crate::bench::fits_l2`]), whatever the precision.
    pub fn of(s: &MatrixStats, l2_bytes: Option<u64>) -> Self {
        let fits = crate::bench::fits_l2(s.nrows, s.ncols, s.nnz, l2_bytes);
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
    /// Parses the CSV written by `scripts/auto-table.py`.
    pub fn parse(text: &str) -> Result<Self> {
        let mut lines = text.lines();
        let header: Vec<&str> = lines
            .next()
            .ok_or_else(|| bad(1, "empty"))?
            .split(',')
            .collect();
        const NFEAT: usize = 9;
        if header.len() < 2 + NFEAT || (header.len() - 2 - NFEAT) % 2 != 0 {
            return Err(bad(1, "unexpected header"));
        }
        let methods: Vec<String> = header[2 + NFEAT..]
            .chunks(2)
            .map(|c| c[0].trim_end_matches(":us").to_string())
            .collect();
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
            let v: Vec<f64> = f[2..2 + NFEAT - 1]
                .iter()
                .map(|s| num(s))
                .collect::<Result<_>>()?;
            let fits = f[2 + NFEAT - 1] == "true";
            let times = f[2 + NFEAT..]
                .chunks(2)
                .map(|c| match (c[0], c[1]) {
                    ("", _) => Ok(None),
                    (us, prep) => Ok(Some((num(us)?, num(prep)?))),
                })
                .collect::<Result<Vec<_>>>()?;
            samples.push(Sample {
                matrix: f[0].to_string(),
                precision,
                nnz: v[2],
                features: Features::new(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], fits),
                times,
            });
        }
        Ok(Model { methods, samples })
    }

    /// The shipped model, parsed once per process.
    pub fn shipped() -> Result<&'static Self> {
        static MODEL: std::sync::OnceLock<std::result::Result<Model, String>> =
            std::sync::OnceLock::new();
        MODEL
            .get_or_init(|| Model::parse(TABLE).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| Error::InvalidArgument(e.clone()))
    }

    /// Predicts the best method for a matrix with `features` and `nnz` nonzeros, among methods
    /// with `allowed[i]`, using the `k` nearest samples of `precision` that `use_sample` admits
    /// (leave-one-out evaluation excludes the matrix itself). `calls`: expected calls, over
    /// which the preprocessing is spread. Returns the method index and its predicted µs per call
    /// (preprocessing included).
    #[allow(clippy::too_many_arguments)]
    pub fn choose(
        &self,
        features: &Features,
        nnz: f64,
        precision: Precision,
        allowed: &[bool],
        calls: f64,
        k: usize,
        use_sample: impl Fn(&Sample) -> bool,
    ) -> Option<(usize, f64)> {
        let pool: Vec<&Sample> = self
            .samples
            .iter()
            .filter(|s| s.precision == precision && use_sample(s))
            .collect();
        if pool.is_empty() {
            return None;
        }
        let mut scale = [0f64; 7];
        for (d, sc) in scale.iter_mut().enumerate() {
            let mean = pool.iter().map(|s| s.features.0[d]).sum::<f64>() / pool.len() as f64;
            let var = pool
                .iter()
                .map(|s| (s.features.0[d] - mean).powi(2))
                .sum::<f64>()
                / pool.len() as f64;
            *sc = if var > 1e-12 { var.sqrt() } else { 1.0 };
        }
        let dist = |s: &Sample| -> f64 {
            (0..7)
                .map(|d| ((s.features.0[d] - features.0[d]) / scale[d]).powi(2))
                .sum::<f64>()
        };
        let mut near: Vec<(f64, &Sample)> = pool.iter().map(|s| (dist(s), *s)).collect();
        near.sort_by(|a, b| a.0.total_cmp(&b.0));
        near.truncate(k.max(1));
        // each neighbour with its fastest allowed time
        let near: Vec<(&Sample, Option<f64>)> = near
            .into_iter()
            .map(|(_, s)| (s, s.best(allowed).map(|(_, us)| us)))
            .collect();
        // log of the neighbours' fastest time per nonzero: the scale of this matrix's time
        let base: Vec<f64> = near
            .iter()
            .filter_map(|(s, b)| b.map(|us| (us / s.nnz.max(1.0)).ln()))
            .collect();
        if base.is_empty() {
            return None;
        }
        let t_best = (base.iter().sum::<f64>() / base.len() as f64).exp() * nnz.max(1.0);
        let mut best: Option<(usize, f64)> = None;
        for (m, ok) in allowed.iter().enumerate() {
            if !ok {
                continue;
            }
            let (mut lr, mut prep, mut n) = (0.0, 0.0, 0usize);
            for (s, best) in &near {
                if let (Some((us, p)), Some(b)) = (s.times[m], *best) {
                    lr += (us / b).ln();
                    prep += p * 1e3 / s.nnz.max(1.0);
                    n += 1;
                }
            }
            // a method must have run on most neighbours to be trusted
            if n * 2 <= near.len() {
                continue;
            }
            let t =
                t_best * (lr / n as f64).exp() + prep / n as f64 * nnz.max(1.0) / calls.max(1.0);
            if best.is_none_or(|(_, bt)| t < bt) {
                best = Some((m, t));
            }
        }
        best
    }
}
