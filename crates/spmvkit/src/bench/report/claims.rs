//! The papers' claims: the speedups the papers report ([`PAPER_CLAIMS`]) measured on a run,
//! CSR-Overlap's Eq. 2 (§5.5) with the methods it compares, and the per-paper tables of
//! `spmv report --claims SECTION` ([`claims_tables`]).

use std::fmt::{self, Write as _};
use std::str::FromStr;

use super::compare::{find_result, method_time_us, result_time_us, speedup, Baseline, Subset};
use super::load::MergedRuns;
use crate::bench::{MatrixResult, MethodResult, Status};
use crate::error::Error;
use crate::gpu::TimingMode;
use crate::scalar::Precision;
use crate::stats::{geomean, median};

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

/// A section of the per-paper tables that `spmv report --claims SECTION` prints: the speedups of
/// one paper's method and its variants over the peers the paper compares against, as the claims
/// notes in `docs/results` quote them.
///
/// Every ratio is t_baseline / t_method on the stream timing, a geometric mean over the matrices
/// where both ran correctly, with n the number of those matrices; `cusparse` is the fastest of
/// `cusparse`, `cusparse-alg1` and `cusparse-alg2` on each matrix. The matrix sets are `all`,
/// `large` (the working set is larger than L2: bandwidth-bound) and `l2` (it fits in L2).
///
/// What each section holds is [`ClaimsSection::describe`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimsSection {
    Fastload,
    Cbspmv,
    Overlap,
    Teb,
    Hbp,
    Peers,
}

impl ClaimsSection {
    /// Every section, in the order `all` prints them.
    pub const ALL: [ClaimsSection; 6] = [
        ClaimsSection::Fastload,
        ClaimsSection::Cbspmv,
        ClaimsSection::Overlap,
        ClaimsSection::Teb,
        ClaimsSection::Hbp,
        ClaimsSection::Peers,
    ];

    /// What the section holds, in a line (`spmv report --help` lists it).
    pub fn describe(self) -> &'static str {
        match self {
            ClaimsSection::Fastload => {
                "FastLoad: Table I heights, Fig. 9 atomic adds, fuse=one over cusparse, csc, csr5, \
                 tilespmv (f64); the atomic / optimised time; the prologue's share of a call"
            }
            ClaimsSection::Cbspmv => {
                "CB-SpMV and its variants over cusparse, csr-vector, cusparse-bsr, tilespmv, dasp, \
                 merge (f64)"
            }
            ClaimsSection::Overlap => {
                "CSR-Overlap's variants and csr-full-overlap over cusparse, csr-vector, csr-scalar \
                 (f32, f64)"
            }
            ClaimsSection::Teb => {
                "teb and teb-vector over amf-csr, pbc, csr-scalar, csr5, cusparse (f32, f64)"
            }
            ClaimsSection::Hbp => {
                "HBP, hbp-paper, 2d and HBP's variants over cusparse, csr-vector, 2d (f64), then µs \
                 per call per matrix (*: the result disagreed with the oracle, as the phase-only \
                 variants do by design)"
            }
            ClaimsSection::Peers => {
                "csr5, tilespmv, dasp, cusparse-bsr, merge over cusparse and csr5 (f32, f64)"
            }
        }
    }

    /// The section's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ClaimsSection::Fastload => "fastload",
            ClaimsSection::Cbspmv => "cbspmv",
            ClaimsSection::Overlap => "overlap",
            ClaimsSection::Teb => "teb",
            ClaimsSection::Hbp => "hbp",
            ClaimsSection::Peers => "peers",
        }
    }
}

impl fmt::Display for ClaimsSection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ClaimsSection {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ClaimsSection::ALL
            .into_iter()
            .find(|c| c.name() == s.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = ClaimsSection::ALL.iter().map(|c| c.name()).collect();
                Error::InvalidArgument(format!(
                    "unknown claims section '{s}': expected one of {}",
                    names.join(", ")
                ))
            })
    }
}

/// The matrix sets of the per-paper tables, with the names they print.
const TABLE_SETS: [(&str, Subset); 3] = [
    ("all", Subset::All),
    ("large", Subset::BandwidthBound),
    ("l2", Subset::FitsL2),
];

/// Stream times of one precision as the per-paper tables take them: the matrices with at least
/// one timed result, and per matrix each method's median µs per call and status. With
/// `with_wrong`, a result that ran but disagreed with the oracle has a time too.
struct Times<'a> {
    p: Precision,
    with_wrong: bool,
    matrices: Vec<&'a MatrixResult>,
}

impl<'a> Times<'a> {
    fn new(merged: &'a MergedRuns, p: Precision, with_wrong: bool) -> Self {
        let mut times = Times {
            p,
            with_wrong,
            matrices: Vec::new(),
        };
        times.matrices = merged
            .matrices
            .iter()
            .map(|m| &m.matrix)
            .filter(|m| m.results.iter().any(|r| times.time(r).is_some()))
            .collect();
        times
    }

    /// The stream time of a result of this precision that counts.
    fn time(&self, r: &MethodResult) -> Option<f64> {
        if r.precision != self.p {
            return None;
        }
        if self.with_wrong && r.status == Status::Wrong {
            let t = r.record.as_ref()?.time.median_us;
            return (t.is_finite() && t > 0.0).then_some(t);
        }
        result_time_us(r, TimingMode::Stream)
    }

    /// The time and status of `method` on `m`; `cusparse` is the fastest of its members
    /// ([`Baseline::cusparse`]).
    fn get(&self, m: &MatrixResult, method: &str) -> Option<(f64, Status)> {
        let one = |name: &str| {
            let r = find_result(&m.results, name, self.p)?;
            Some((self.time(r)?, r.status))
        };
        if method == "cusparse" {
            Baseline::cusparse()
                .members
                .iter()
                .filter_map(|me| one(me))
                .min_by(|a, b| a.0.total_cmp(&b.0))
        } else {
            one(method)
        }
    }

    /// t_base / t_method over the matrices of `set` where both have a time: the geometric mean,
    /// the count and the maximum.
    fn ratio(&self, base: &str, method: &str, set: Subset) -> (Option<f64>, usize, Option<f64>) {
        let v: Vec<f64> = self
            .matrices
            .iter()
            .filter(|m| set.contains(m))
            .filter_map(|m| Some(self.get(m, base)?.0 / self.get(m, method)?.0))
            .collect();
        (
            geomean(&v),
            v.len(),
            v.iter().copied().max_by(f64::total_cmp),
        )
    }

    /// The methods named `prefix` or `prefix[...]` with a time, in order of first appearance.
    fn methods_like(&self, prefix: &str) -> Vec<String> {
        let variant = format!("{prefix}[");
        let mut out: Vec<String> = Vec::new();
        for r in self.matrices.iter().flat_map(|m| &m.results) {
            let like = r.method == prefix || r.method.starts_with(&variant);
            if like && self.time(r).is_some() && !out.contains(&r.method) {
                out.push(r.method.clone());
            }
        }
        out
    }
}

/// One speedup table: a row per (precision, matrix set, method) with a figure over any baseline.
fn speed_table(
    out: &mut String,
    merged: &MergedRuns,
    methods: &[String],
    bases: &[&str],
    precisions: &[Precision],
    sets: &[(&str, Subset)],
) {
    let over: Vec<String> = bases.iter().map(|b| format!("× over {b}")).collect();
    let _ = writeln!(
        out,
        "| precision | matrices | method | {} |",
        over.join(" | ")
    );
    let _ = writeln!(out, "|---|---|---|{}", "---|".repeat(bases.len()));
    for &p in precisions {
        let times = Times::new(merged, p, false);
        for &(set_name, set) in sets {
            for me in methods {
                let cells: Vec<String> = bases
                    .iter()
                    .map(|b| match times.ratio(b, me, set) {
                        (Some(g), n, _) if n > 0 => format!("{g:.2}× (n={n})"),
                        _ => "–".to_string(),
                    })
                    .collect();
                if cells.iter().all(|c| c == "–") {
                    continue;
                }
                let _ = writeln!(out, "| {p} | {set_name} | `{me}` | {} |", cells.join(" | "));
            }
        }
    }
}

/// The µs per call of each method on each matrix (`*`: the result disagreed with the oracle).
fn per_matrix(out: &mut String, merged: &MergedRuns, p: Precision, methods: &[&str]) {
    let times = Times::new(merged, p, true);
    let heads: Vec<String> = methods.iter().map(|m| format!("`{m}` µs")).collect();
    let _ = writeln!(out, "| matrix | nnz | {} |", heads.join(" | "));
    let _ = writeln!(out, "|---|---|{}", "---|".repeat(methods.len()));
    for m in &times.matrices {
        let cells: Vec<String> = methods
            .iter()
            .map(|me| match times.get(m, me) {
                Some((t, st)) => format!("{t:.1}{}", if st == Status::Ok { "" } else { "*" }),
                None => "–".to_string(),
            })
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            m.name,
            m.stats.nnz,
            cells.join(" | ")
        );
    }
}

fn owned(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// The markdown of one section of the per-paper tables ([`ClaimsSection`]) for merged runs.
pub fn claims_tables(merged: &MergedRuns, section: ClaimsSection) -> String {
    use Precision::{F32, F64};
    let mut out = String::new();
    let o = &mut out;
    match section {
        ClaimsSection::Fastload => {
            let mut ms = vec!["fastload".to_string()];
            for h in ["2", "4", "8", "16", "32", "unlimited"] {
                ms.push(format!("fastload[height={h}]"));
            }
            ms.extend(owned(&["fastload-atomic", "fastload[fuse=one]"]));
            let _ = writeln!(
                o,
                "Speedup of each variant (Table I heights, Fig. 9 atomic) over cusparse, csc, csr5, \
                 tilespmv:\n"
            );
            let bases = ["cusparse", "csc", "csr5", "tilespmv"];
            speed_table(o, merged, &ms, &bases, &[F64], &TABLE_SETS);
            let _ = writeln!(
                o,
                "\nFig. 9: `fastload-atomic` time / `fastload` time (optimised adds):\n"
            );
            for p in [F64, F32] {
                let times = Times::new(merged, p, false);
                for (set_name, set) in TABLE_SETS {
                    if let (Some(g), n, Some(max)) = times.ratio("fastload-atomic", "fastload", set)
                    {
                        let _ = writeln!(o, "- {p}, {set_name}: {g:.3}× (n={n}, max {max:.2}×)");
                    }
                }
            }
            let _ = writeln!(
                o,
                "\nCost of the honest timing (prologue = y zeroing + x permutation, alone):\n"
            );
            let times = Times::new(merged, F64, true);
            let mut share = Vec::new();
            let mut bound = Vec::new();
            for m in &times.matrices {
                let (Some(pro), Some(all)) = (
                    times.get(m, "fastload[phase=prologue]"),
                    times.get(m, "fastload"),
                ) else {
                    continue;
                };
                share.push(pro.0 / all.0);
                if !m.fits_l2 {
                    bound.push(format!("{:.2}", pro.0 / all.0));
                }
            }
            if let Some(mid) = median(&share) {
                let _ = writeln!(
                    o,
                    "- f64: prologue / whole call: median {mid:.2} over {} matrices; \
                     bandwidth-bound ones: {}",
                    share.len(),
                    bound.join(", ")
                );
            }
        }
        ClaimsSection::Cbspmv => {
            let ms = Times::new(merged, F64, false).methods_like("cb-spmv");
            let bases = [
                "cusparse",
                "csr-vector",
                "cusparse-bsr",
                "tilespmv",
                "dasp",
                "merge",
            ];
            speed_table(o, merged, &ms, &bases, &[F64], &TABLE_SETS);
        }
        ClaimsSection::Overlap => {
            let mut ms = Times::new(merged, F64, false).methods_like("csr-overlap");
            ms.push("csr-full-overlap".into());
            let bases = ["cusparse", "csr-vector", "csr-scalar"];
            speed_table(o, merged, &ms, &bases, &[F32, F64], &TABLE_SETS);
        }
        ClaimsSection::Teb => {
            let ms = owned(&["teb", "teb-vector"]);
            let bases = ["amf-csr", "pbc", "csr-scalar", "csr5", "cusparse"];
            speed_table(o, merged, &ms, &bases, &[F32, F64], &TABLE_SETS);
        }
        ClaimsSection::Hbp => {
            let mut ms = owned(&["hbp", "hbp-paper", "2d"]);
            let variants = Times::new(merged, F64, true).methods_like("hbp");
            ms.extend(variants.into_iter().filter(|m| m.contains('[')));
            let bases = ["cusparse", "csr-vector", "2d"];
            speed_table(o, merged, &ms, &bases, &[F64], &TABLE_SETS[..1]);
            o.push('\n');
            let per = [
                "cusparse",
                "csr-vector",
                "2d",
                "hbp",
                "hbp-paper",
                "hbp[hash=sort]",
                "hbp[hash=dp]",
                "hbp[phase=spmv]",
                "hbp[phase=combine]",
            ];
            per_matrix(o, merged, F64, &per);
        }
        ClaimsSection::Peers => {
            let ms = owned(&["csr5", "tilespmv", "dasp", "cusparse-bsr", "merge"]);
            speed_table(
                o,
                merged,
                &ms,
                &["cusparse", "csr5"],
                &[F32, F64],
                &TABLE_SETS,
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::report::merge_runs;
    use crate::bench::report::tests::*;
    use crate::bench::BenchRun;
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

    /// Two matrices, `a` fitting in L2 and `b` bandwidth-bound, with the FastLoad and HBP
    /// methods, two cuSPARSE algorithms, a failure and results that disagreed with the oracle.
    fn tables_run() -> BenchRun {
        let wrong = |method: &str, t: f64| MethodResult {
            status: Status::Wrong,
            ..ok(method, F64, 1000, t, 0.0)
        };
        let a = vec![
            ok("cusparse-alg1", F64, 1000, 10.0, 0.0),
            ok("cusparse-alg2", F64, 1000, 8.0, 0.0),
            ok("fastload", F64, 1000, 4.0, 0.0),
            ok("fastload-atomic", F64, 1000, 6.0, 0.0),
            ok("csc", F64, 1000, 16.0, 0.0),
            wrong("fastload[phase=prologue]", 1.2),
            ok("hbp", F64, 1000, 16.0, 0.0),
            wrong("hbp[phase=spmv]", 12.0),
        ];
        let b = vec![
            ok("cusparse", F64, 1000, 20.0, 0.0),
            ok("fastload", F64, 1000, 5.0, 0.0),
            ok("fastload-atomic", F64, 1000, 5.0, 0.0),
            wrong("fastload[phase=prologue]", 2.0),
            failed("hbp", F64, "boom"),
        ];
        BenchRun {
            skipped: Vec::new(),
            machine: machine(),
            suite: None,
            matrices: vec![
                matrix("a", 1000, 0.1, true, a),
                matrix("b", 1000, 0.1, false, b),
            ],
        }
    }

    #[test]
    fn claims_tables_give_the_ratios_of_each_matrix_set() {
        let merged = merge_runs(&[tables_run()]);
        let fl = claims_tables(&merged, ClaimsSection::Fastload);
        for want in [
            "| precision | matrices | method | × over cusparse | × over csc | × over csr5 | × over tilespmv |\n|---|---|---|---|---|---|---|\n",
            // cusparse is the faster algorithm on a (8 µs): 8 / 4 and 20 / 5
            "| f64 | all | `fastload` | 2.83× (n=2) | 4.00× (n=1) | – | – |",
            "| f64 | large | `fastload` | 4.00× (n=1) | – | – | – |",
            "| f64 | l2 | `fastload` | 2.00× (n=1) | 4.00× (n=1) | – | – |",
            "- f64, all: 1.225× (n=2, max 1.50×)",
            "- f64, large: 1.000× (n=1, max 1.00×)",
            // a result that disagreed with the oracle still has a time here: 1.2 / 4 and 2 / 5
            "- f64: prologue / whole call: median 0.35 over 2 matrices; bandwidth-bound ones: 0.40",
        ] {
            assert!(fl.contains(want), "missing {want:?} in\n{fl}");
        }
        // methods without a figure are left out; f32 has no results
        assert!(!fl.contains("height=2"), "{fl}");
        assert!(!fl.contains("f32"), "{fl}");

        let hbp = claims_tables(&merged, ClaimsSection::Hbp);
        for want in [
            "| f64 | all | `hbp` | 0.50× (n=1) | – | – |",
            "| a | 1000 | 8.0 | – | – | 16.0 | – | – | – | 12.0* | – |",
            "| b | 1000 | 20.0 | – | – | – | – | – | – | – | – |",
        ] {
            assert!(hbp.contains(want), "missing {want:?} in\n{hbp}");
        }
        // a variant that only disagreed has no speedup row
        assert!(!hbp.contains("| `hbp[phase=spmv]` |"), "{hbp}");

        // nothing to compare: the header alone
        let teb = claims_tables(&merged, ClaimsSection::Teb);
        assert_eq!(teb.lines().count(), 2, "{teb}");
    }

    #[test]
    fn claims_sections_by_name() {
        for s in ClaimsSection::ALL {
            assert_eq!(s.name().parse::<ClaimsSection>().unwrap(), s);
        }
        assert!(matches!(
            "fast".parse::<ClaimsSection>(),
            Err(Error::InvalidArgument(_))
        ));
    }
}
