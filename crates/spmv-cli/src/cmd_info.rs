//! `spmv info`: structure statistics of matrices.

use anyhow::Result;
use clap::Args;
use spmvkit::MatrixStats;

use crate::input;

/// Print a matrix's shape, nnz (after symmetric expansion), empty rows and columns, row and
/// column length statistics, the row-length variation (std/mean) and the bandwidth.
#[derive(Args)]
#[command(after_help = "Examples:
  spmv info ../shared/matrices/HB/jgl009.mtx.gz
  spmv info poisson3d:64 kron:16 --json")]
pub struct InfoArgs {
    /// Matrix Market files, .spmvkit caches or GEN-SPECs.
    #[arg(required = true, value_name = "MATRIX")]
    matrices: Vec<String>,
    /// One JSON object per matrix, one per line.
    #[arg(long)]
    json: bool,
    /// Do not read or write the binary cache.
    #[arg(long)]
    no_cache: bool,
}

pub fn run(args: InfoArgs) -> Result<()> {
    for arg in &args.matrices {
        let loaded = input::load::<f64>(arg, !args.no_cache)?;
        let s = MatrixStats::of(&loaded.matrix);
        if args.json {
            let mut v = serde_json::to_value(&s)?;
            v["name"] = serde_json::Value::String(loaded.name.clone());
            v["explicit_zeros"] = loaded
                .matrix
                .vals()
                .iter()
                .filter(|&&x| x == 0.0)
                .count()
                .into();
            println!("{}", serde_json::to_string(&v)?);
        } else {
            print_stats(&loaded.name, &s, &loaded.matrix, loaded.seconds);
        }
    }
    Ok(())
}

fn print_stats(name: &str, s: &MatrixStats, a: &spmvkit::Csr<f64>, secs: f64) {
    let zeros = a.vals().iter().filter(|&&x| x == 0.0).count();
    println!("{name}");
    println!("  size          {} x {}", s.nrows, s.ncols);
    println!(
        "  nnz           {} (explicit zeros among them: {zeros})",
        s.nnz
    );
    println!("  density       {:.3e}", s.density);
    println!("  empty rows    {}", s.empty_rows);
    println!("  empty cols    {}", s.empty_cols);
    println!(
        "  row length    min {} / mean {:.2} / max {} / std {:.2}",
        s.row_len.min, s.row_len.mean, s.row_len.max, s.row_len.std
    );
    println!(
        "  col length    min {} / mean {:.2} / max {} / std {:.2}",
        s.col_len.min, s.col_len.mean, s.col_len.max, s.col_len.std
    );
    println!(
        "  variation     {:.3} (std/mean of row length)",
        s.row_variation
    );
    println!(
        "  bandwidth     {} (lower {}, upper {})",
        s.bandwidth, s.lower_bandwidth, s.upper_bandwidth
    );
    println!("  CSR bytes     {} (f64)", s.csr_bytes);
    println!("  loaded in     {:.3} s", secs);
}
