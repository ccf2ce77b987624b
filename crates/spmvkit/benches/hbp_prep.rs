//! HBP preprocessing against the paper's baselines (issue #9, paper §IV-B / Fig. 7, Fig. 6), on
//! the host: for each matrix, `hbp-paper`'s preprocessing (dense tables, the paper's 512 × 4096
//! blocks, warp 32) with every row order `hash` = sampled (HBP), quantile, fixed, sort (sort2D),
//! dp (DP2D) and none (plain 2D), median of 3 builds; then the per-warp nonzero spread of Fig. 6.
//! Prints Markdown tables.
//!
//! Run: `cargo bench -p spmvkit --bench hbp_prep [-- ARG...]`. An ARG with `=` is a parameter
//! override (`combine=sparse`, `block_rows=256`), one with `:` a GEN-SPEC, any other a matrix
//! file or a path under the shared matrices folder without extension (`Rajat/rajat01`, found as
//! the `shared` suite finds it: `$SPMVKIT_MATRICES` or `shared/matrices` beside the checkout).
//! Default matrices: kron:16,48 kron:17,48 kron:18,48 powerlaw:1000000,8 uniform:1000000,16
//! Rajat/rajat01 Hamm/add32.
//!
//! Preprocessing time = the sum of the build stages but the Fig. 6 statistics pass (which the
//! layout computes for its notes and which no method needs); "reorder" is the stage where the
//! row orders differ.

use std::path::PathBuf;
use std::time::Duration;

use spmvkit::bench::suites::shared_matrices_dir;
use spmvkit::methods::hbp::{build_layout, WarpStats};
use spmvkit::methods::{Layout, Params};
use spmvkit::stats::median;
use spmvkit::{gen, Csr};

const DEFAULT: &[&str] = &[
    "kron:16,48",
    "kron:17,48",
    "kron:18,48",
    "powerlaw:1000000,8",
    "uniform:1000000,16",
    "Rajat/rajat01",
    "Hamm/add32",
];

const HASHES: &[&str] = &["sampled", "quantile", "fixed", "sort", "dp", "none"];
const REPS: usize = 3;
const METHOD: &str = "hbp-paper";

fn load(arg: &str) -> Result<Csr<f64>, String> {
    if arg.contains(':') {
        return gen::generate(arg).map_err(|e| e.to_string());
    }
    let direct = PathBuf::from(arg);
    let mut tries = vec![direct.clone()];
    if let Some(dir) = shared_matrices_dir() {
        for ext in ["", ".mtx.gz", ".mtx", ".spmvkit"] {
            tries.push(dir.join(format!("{arg}{ext}")));
        }
    }
    let path = tries
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| format!("no matrix file for '{arg}' (set SPMVKIT_MATRICES)"))?;
    spmvkit::io::load::<f64>(&path).map_err(|e| e.to_string())
}

/// One row order on one matrix: build times of the repetitions (prep s, reorder s) and the
/// Fig. 6 statistics.
#[derive(Default)]
struct Cell {
    preps: Vec<f64>,
    reorders: Vec<f64>,
    stats: Option<WarpStats>,
}

impl Cell {
    fn prep(&self) -> f64 {
        median(&self.preps).unwrap_or(f64::NAN)
    }
    fn reorder(&self) -> f64 {
        median(&self.reorders).unwrap_or(f64::NAN)
    }
    fn stats(&self) -> WarpStats {
        self.stats.expect("measured")
    }
}

/// One build: adds its times and statistics to `cell`.
fn measure(a: &Csr<f64>, params: &Params, cell: &mut Cell) -> Result<(), String> {
    let l = build_layout::<f64>(METHOD, a, params).map_err(|e| e.to_string())?;
    let stages = l.prep_stages();
    let sum = |f: &dyn Fn(&str) -> bool| {
        stages
            .iter()
            .filter(|(s, _)| f(s))
            .map(|(_, d)| *d)
            .sum::<Duration>()
            .as_secs_f64()
    };
    cell.preps.push(sum(&|s| !s.starts_with("Fig. 6")));
    cell.reorders.push(sum(&|s| s == "reorder"));
    cell.stats = Some(l.warp_stats());
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let overrides: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| a.contains('=') && !a.contains(':'))
        .collect();
    let mut mats: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| !a.contains('=') || a.contains(':'))
        .collect();
    if mats.is_empty() {
        mats = DEFAULT.to_vec();
    }
    println!(
        "HBP preprocessing by row order: {METHOD} [{}], f64, median of {REPS}, {} rayon threads\n",
        overrides.join(" "),
        rayon::current_num_threads()
    );
    let ms = |s: f64| {
        if s < 0.01 {
            format!("{:.2}", s * 1e3)
        } else {
            format!("{:.1}", s * 1e3)
        }
    };
    let mut prep_rows = Vec::new();
    let mut reorder_rows = Vec::new();
    let mut fig6_rows = Vec::new();
    let (mut sp_sort, mut sp_dp, mut rs_sort, mut rs_dp) = (vec![], vec![], vec![], vec![]);
    for m in mats {
        let a = match load(m) {
            Ok(a) => a,
            Err(e) => {
                eprintln!("{m}: {e}");
                continue;
            }
        };
        // the repetitions interleave the row orders, so that a load change hits them alike
        let mut cells: Vec<Cell> = HASHES.iter().map(|_| Cell::default()).collect();
        for rep in 0..REPS {
            for (h, cell) in HASHES.iter().zip(cells.iter_mut()) {
                let mut items: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
                items.push(format!("hash={h}"));
                let params = match Params::parse(items.iter().map(String::as_str)) {
                    Ok(p) => p,
                    Err(e) => {
                        eprintln!("hbp_prep: {e}");
                        std::process::exit(2);
                    }
                };
                if let Err(e) = measure(&a, &params, cell) {
                    eprintln!("{m} hash={h}: {e}");
                    std::process::exit(1);
                }
                eprintln!(
                    "{m} rep {rep} hash={h}: prep {} ms",
                    ms(*cell.preps.last().unwrap())
                );
            }
        }
        let c = |h: &str| &cells[HASHES.iter().position(|x| *x == h).unwrap()];
        let (s, so, dp) = (c("sampled"), c("sort"), c("dp"));
        sp_sort.push(so.prep() / s.prep());
        sp_dp.push(dp.prep() / s.prep());
        rs_sort.push(so.reorder() / s.reorder());
        rs_dp.push(dp.reorder() / s.reorder());
        let head = format!("| {m} | {} | {} |", a.nrows(), a.nnz());
        // one table row of a time: each hash's, then sort's and dp's over sampled's
        let row = |time: fn(&Cell) -> f64| {
            let times: Vec<String> = cells.iter().map(|c| ms(time(c))).collect();
            format!(
                "{head} {} | {:.2}× | {:.2}× |",
                times.join(" | "),
                time(so) / time(s),
                time(dp) / time(s)
            )
        };
        prep_rows.push(row(Cell::prep));
        reorder_rows.push(row(Cell::reorder));
        let order = ["none", "sampled", "quantile", "sort", "dp"];
        let none = c("none").stats();
        fig6_rows.push(format!(
            "| {m} | {} | {} | {} | {:.0} % |",
            none.groups,
            order
                .iter()
                .map(|h| format!("{:.2}", c(h).stats().std_after))
                .collect::<Vec<_>>()
                .join(" | "),
            order
                .iter()
                .map(|h| format!("{:.2}", c(h).stats().max_over_mean_after))
                .collect::<Vec<_>>()
                .join(" | "),
            100.0 * (1.0 - s.stats().std_after / none.std_after.max(1e-300))
        ));
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let hs = HASHES.join(" | ");
    let sep = "|---".repeat(HASHES.len() + 5) + "|";
    println!("Preprocessing time, ms (all stages but the Fig. 6 statistics):\n");
    println!("| matrix | rows | nnz | {hs} | sort / sampled | dp / sampled |\n{sep}");
    for r in &prep_rows {
        println!("{r}");
    }
    println!(
        "| mean | | | {} | {:.2}× | {:.2}× |",
        " | ".repeat(HASHES.len() - 1),
        mean(&sp_sort),
        mean(&sp_dp)
    );
    println!("\nReorder stage alone, ms:\n");
    println!("| matrix | rows | nnz | {hs} | sort / sampled | dp / sampled |\n{sep}");
    for r in &reorder_rows {
        println!("{r}");
    }
    println!(
        "| mean | | | {} | {:.2}× | {:.2}× |",
        " | ".repeat(HASHES.len() - 1),
        mean(&rs_sort),
        mean(&rs_dp)
    );
    println!(
        "\nPer-warp nonzero spread (Fig. 6): mean over the warp groups of non-empty blocks of the \
         std-dev of their rows' nonzeros, and Σ warp·max / nnz (max/mean per group, \
         nnz-weighted):\n"
    );
    println!(
        "| matrix | groups | std none | sampled | quantile | sort | dp | max/mean none | sampled | quantile | sort | dp | std cut by sampled |"
    );
    println!("{}|", "|---".repeat(13));
    for r in &fig6_rows {
        println!("{r}");
    }
}
