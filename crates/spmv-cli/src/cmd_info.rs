//! `spmv info`: structure statistics of matrices.

use std::path::Path;

use anyhow::Result;
use clap::Args;
use spmvkit::io::MmSymmetry;
use spmvkit::{MatrixStats, Offset};

use crate::input;

/// Print a matrix's shape, nnz (for a symmetric file: after expanding the stored triangle), empty
/// rows and columns, row and column length statistics, the row-length variation (std/mean) and
/// the bandwidth.
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
        match input::load_any::<f64>(arg, !args.no_cache)? {
            input::LoadedAny::W32(l) => info(arg, &l, args.json)?,
            input::LoadedAny::W64(l) => info(arg, &l, args.json)?,
        }
    }
    Ok(())
}

/// Prints one matrix's statistics (row offsets of either width; a 64-bit one says so).
fn info<O: Offset>(arg: &str, loaded: &input::Loaded<f64, O>, json: bool) -> Result<()> {
    let s = MatrixStats::of(&loaded.matrix);
    let symmetry = file_symmetry(arg);
    if json {
        let mut v = serde_json::to_value(&s)?;
        v["name"] = serde_json::Value::String(loaded.name.clone());
        if let Some(sym) = symmetry {
            v["symmetry"] = sym.name().into();
        }
        let zeros = loaded.matrix.vals().iter().filter(|&&x| x == 0.0).count();
        v["explicit_zeros"] = zeros.into();
        v["nnz_nonzero"] = (s.nnz - zeros).into();
        v["offset_bits"] = O::WIDTH.bits().into();
        println!("{}", serde_json::to_string(&v)?);
    } else {
        let expanded = symmetry.is_some_and(|s| s.is_mirrored());
        print_stats(&loaded.name, &s, &loaded.matrix, loaded.seconds, expanded);
    }
    Ok(())
}

/// The symmetry a Matrix Market file declares (`None` for a GEN-SPEC or a cache file).
fn file_symmetry(arg: &str) -> Option<MmSymmetry> {
    let path = Path::new(arg);
    if !path.is_file() {
        return None;
    }
    spmvkit::io::read_header(path).ok().map(|h| h.symmetry)
}

fn print_stats<O: Offset>(
    name: &str,
    s: &MatrixStats,
    a: &spmvkit::Csr<f64, O>,
    secs: f64,
    expanded: bool,
) {
    let zeros = a.vals().iter().filter(|&&x| x == 0.0).count();
    println!("{name}");
    println!("  size          {} x {}", s.nrows, s.ncols);
    let after = if expanded {
        " after symmetric expansion"
    } else {
        ""
    };
    if zeros == 0 {
        println!(
            "  nnz           {}{}",
            s.nnz,
            if expanded {
                " (after symmetric expansion)"
            } else {
                ""
            }
        );
    } else {
        println!(
            "  nnz           {} stored{after}: {} nonzero values + {zeros} explicit zeros",
            s.nnz,
            s.nnz - zeros
        );
    }
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
    println!(
        "  CSR bytes     {} (f64, {}-bit row offsets)",
        s.csr_bytes,
        O::WIDTH.bits()
    );
    println!("  loaded in     {:.3} s", secs);
}
