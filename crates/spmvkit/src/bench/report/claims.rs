//! The papers' claims: the speedups the papers report ([`PAPER_CLAIMS`]) measured on a run, and
//! CSR-Overlap's Eq. 2 (§5.5) with the methods it compares.

use super::super::MatrixResult;
use super::compare::{method_time_us, speedup, Baseline};
use crate::gpu::TimingMode;
use crate::scalar::Precision;
use crate::stats::geomean;

/// Eq. 2 of CSR-Overlap §5.5: `(t_cusparse_e2e − t_full) / t_partial + 1`, the number of
/// CSR-Full-Overlap SpMVs done in the time of one cuSPARSE SpMV with its upload.
pub fn eq2_speedup(t_cusparse_e2e: f64, t_full: f64, t_partial: f64) -> Option<f64> {
    let ok = |t: f64| t.is_finite() && t > 0.0;
    (ok(t_cusparse_e2e) && ok(t_full) && ok(t_partial))
        .then(|| (t_cusparse_e2e - t_full) / t_partial + 1.0)
}

/// The methods Eq. 2 compares: cuSPARSE with upload, CSR-Full-Overlap, CSR-Partial-Overlap.
pub const EQ2_METHODS: [&str; 3] = ["cusparse-e2e", "csr-full-overlap", "csr-overlap"];

/// One matrix of the Eq. 2 comparison (times in µs).
#[derive(Clone, Debug, PartialEq)]
pub struct Eq2Row {
    pub matrix: String,
    pub t_cusparse_e2e: f64,
    pub t_full: f64,
    pub t_partial: f64,
    /// [`eq2_speedup`].
    pub eq2: f64,
    /// `t_cusparse_e2e / t_full`.
    pub ratio: f64,
}

/// The Eq. 2 rows of the matrices on which `cusparse-e2e`, `csr-full-overlap` and
/// `csr-overlap` all ran correctly in `precision` (exact names: a variant is another method).
pub fn eq2_rows(matrices: &[&MatrixResult], precision: Precision, kind: TimingMode) -> Vec<Eq2Row> {
    matrices
        .iter()
        .filter_map(|m| {
            let t = |me| method_time_us(&m.results, me, precision, kind);
            let (e2e, full, partial) = (t(EQ2_METHODS[0])?, t(EQ2_METHODS[1])?, t(EQ2_METHODS[2])?);
            Some(Eq2Row {
                matrix: m.name.clone(),
                t_cusparse_e2e: e2e,
                t_full: full,
                t_partial: partial,
                eq2: eq2_speedup(e2e, full, partial)?,
                ratio: e2e / full,
            })
        })
        .collect()
}

/// A speedup claimed in a paper: `seed` is faster than `peer` by `factor` (t_peer / t_seed).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PaperClaim {
    pub seed: &'static str,
    /// The compared method; `cusparse` stands for the cuSPARSE baseline (best of its members).
    pub peer: &'static str,
    /// The claimed factor, `None` where the paper gives no figure.
    pub factor: Option<f64>,
    /// The claim in the paper's words.
    pub claim: &'static str,
    pub source: &'static str,
}

const fn claim(
    seed: &'static str,
    peer: &'static str,
    factor: Option<f64>,
    claim: &'static str,
    source: &'static str,
) -> PaperClaim {
    PaperClaim {
        seed,
        peer,
        factor,
        claim,
        source,
    }
}

const FASTLOAD: &str = "FastLoad (TPDS'24), average speedup";
const TEB: &str = "TEB, Table 2, average speedup";
const CB: &str = "CB-SpMV, summary";

/// The papers' speedup claims the report checks against the run.
pub const PAPER_CLAIMS: &[PaperClaim] = &[
    claim("fastload", "csc", Some(2.12), "2.12×", FASTLOAD),
    claim("fastload", "cusparse", Some(2.98), "2.98×", FASTLOAD),
    claim("fastload", "csr5", Some(2.88), "2.88×", FASTLOAD),
    claim("fastload", "tilespmv", Some(1.22), "1.22×", FASTLOAD),
    claim("teb", "amf-csr", Some(3.23), "3.23×", TEB),
    claim("teb", "pbc", Some(5.83), "5.83×", TEB),
    claim("teb", "csr-scalar", Some(2.33), "2.33×", TEB),
    claim("teb", "csr5", Some(2.21), "2.21×", TEB),
    claim(
        "csr-overlap",
        "cusparse",
        Some(1.4),
        "1.4× average",
        "CSR-Overlap §5.3",
    ),
    claim("cb-spmv", "cusparse", Some(3.95), "up to 3.95× average", CB),
    claim("cb-spmv", "cusparse-bsr", None, "faster (no figure)", CB),
    claim("cb-spmv", "tilespmv", None, "faster (no figure)", CB),
    claim("cb-spmv", "dasp", None, "faster (no figure)", CB),
    claim(
        "hbp",
        "csr-vector",
        Some(1.61),
        "1.61× average, up to 3.01×",
        "HBP (RTX 4090)",
    ),
];

/// What the run says about one claim in one precision and timing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClaimMeasure {
    /// Matrices on which both ran correctly.
    pub n: usize,
    /// Geometric mean and maximum of t_peer / t_seed over them.
    pub geomean: Option<f64>,
    pub max: Option<f64>,
}

impl PaperClaim {
    /// The peer as a baseline: `cusparse` is [`Baseline::cusparse`], any other name itself.
    pub fn peer_baseline(&self) -> Baseline {
        if self.peer == "cusparse" {
            Baseline::cusparse()
        } else {
            Baseline::method(self.peer)
        }
    }

    /// Whether both methods have a result (of any status) in `precision`.
    pub fn present(&self, matrices: &[&MatrixResult], precision: Precision) -> bool {
        let peer = self.peer_baseline();
        let has = |f: &dyn Fn(&str) -> bool| {
            matrices.iter().any(|m| {
                m.results
                    .iter()
                    .any(|r| r.precision == precision && f(&r.method))
            })
        };
        has(&|me| me == self.seed) && has(&|me| peer.is_member(me))
    }

    /// t_peer / t_seed over the matrices where both ran correctly.
    pub fn measure(
        &self,
        matrices: &[&MatrixResult],
        precision: Precision,
        kind: TimingMode,
    ) -> ClaimMeasure {
        let peer = self.peer_baseline();
        let ratios: Vec<f64> = matrices
            .iter()
            .filter_map(|m| {
                speedup(
                    peer.time_us(&m.results, precision, kind),
                    method_time_us(&m.results, self.seed, precision, kind),
                )
            })
            .collect();
        ClaimMeasure {
            n: ratios.len(),
            geomean: geomean(&ratios),
            max: ratios.iter().copied().max_by(f64::total_cmp),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::report::tests::*;
    use crate::stats::mean;

    #[test]
    fn eq2_of_known_values_and_variants_apart() {
        assert_eq!(eq2_speedup(30.0, 20.0, 5.0), Some(3.0));
        assert_eq!(eq2_speedup(20.0, 20.0, 5.0), Some(1.0));
        assert_eq!(eq2_speedup(10.0, 20.0, 5.0), Some(-1.0));
        assert_eq!(eq2_speedup(10.0, 0.0, 5.0), None);
        assert_eq!(eq2_speedup(f64::NAN, 1.0, 5.0), None);
        assert_eq!(mean(&[1.0, 2.0, 6.0]), Some(3.0));
        assert_eq!(mean(&[]), None);
        let run = eq2_run();
        let refs: Vec<&MatrixResult> = run.matrices.iter().collect();
        let rows = eq2_rows(&refs, F32, TimingMode::Stream);
        // c lacks csr-overlap; a's variant of csr-full-overlap does not replace the plain one.
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].matrix, "a");
        assert_eq!(
            (rows[0].t_full, rows[0].eq2, rows[0].ratio),
            (20.0, 3.0, 1.5)
        );
        assert_eq!((rows[1].eq2, rows[1].ratio), (2.0, 1.5));
        assert!(eq2_rows(&refs, F64, TimingMode::Stream).is_empty());
        // Graph times are all scaled by 0.9 in these records: same ratios.
        let g = eq2_rows(&refs, F32, TimingMode::Graph);
        assert!((g[0].eq2 - 3.0).abs() < 1e-12);
    }

    #[test]
    fn claims_measured_and_absent_ones_skipped() {
        let run = eq2_run();
        let refs: Vec<&MatrixResult> = run.matrices.iter().collect();
        let find = |seed: &str, peer: &str| {
            *PAPER_CLAIMS
                .iter()
                .find(|c| c.seed == seed && c.peer == peer)
                .unwrap()
        };
        let fl = find("fastload", "cusparse");
        assert_eq!(fl.factor, Some(2.98));
        assert!(fl.present(&refs, F32));
        assert!(!fl.present(&refs, F64));
        let m = fl.measure(&refs, F32, TimingMode::Stream);
        assert_eq!(m.n, 2);
        assert!((m.geomean.unwrap() - 4.0).abs() < 1e-12); // √(2 · 8)
        assert_eq!(m.max, Some(8.0));
        // teb ran once, failed once; csr-overlap is not cusparse but ran: 10/5 and 10/8.
        let teb = find("teb", "csr5");
        assert!(!teb.present(&refs, F32));
        let co = find("csr-overlap", "cusparse").measure(&refs, F32, TimingMode::Stream);
        assert_eq!(co.n, 2);
        assert!((co.geomean.unwrap() - (2.0f64 * 1.25).sqrt()).abs() < 1e-12);
        assert_eq!(
            PAPER_CLAIMS.iter().filter(|c| c.factor.is_none()).count(),
            3
        );
        assert!(PAPER_CLAIMS
            .iter()
            .all(|c| crate::methods::find(c.seed).is_ok() && crate::methods::find(c.peer).is_ok()));
    }
}
