//! `spmv gen`: write a generated matrix to a file.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use spmvkit::OffsetWidth;

use crate::{text, usage};

/// Generate a matrix (deterministic for a seed) and write it as Matrix Market (.mtx, .mtx.gz) or
/// as a binary cache (.spmvkit).
///
/// A matrix of more than 2^31−1 nonzeros (up to 2^40) is generated with 64-bit row offsets and
/// written as a format-version-2 cache, or as Matrix Market text (which has no offset width).
/// The file appears only once it is complete.
///
/// KIND may be a whole GEN-SPEC (`poisson3d:64`) or a kind followed by its arguments
/// (`poisson3d 64`); the kinds are listed below.
#[derive(Args)]
#[command(after_help = gen_kinds_help())]
pub struct GenArgs {
    /// Generator kind, or a whole GEN-SPEC such as `kron:18,16`.
    #[arg(value_name = "KIND")]
    kind: String,
    /// Arguments of the kind, e.g. `64` for poisson3d, or `key=value` options such as `seed=7`.
    #[arg(value_name = "PARAMS")]
    params: Vec<String>,
    /// Output file: .mtx, .mtx.gz (gzip-compressed) or .spmvkit (binary cache); any other name is
    /// refused.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Seed of the random generators (same seed, same matrix).
    #[arg(long)]
    seed: Option<u64>,
}

fn gen_kinds_help() -> String {
    let width = text::help_width();
    let mut s = String::from(
        "Kinds (GEN-SPEC grammar `kind:arg,arg,...[,key=value]`; every kind also takes seed=N, and renumber=random for a random symmetric numbering PAPᵀ of a square matrix):\n",
    );
    for k in spmvkit::gen::kinds() {
        s.push_str(&format!("  {:<10} {}\n", k.name, k.args));
        let body = format!("{} (e.g. {})", k.help, k.example);
        s.push_str(&text::wrap(&body, width, "      ", "      "));
        s.push('\n');
    }
    s.push_str("\nExamples:\n  spmv gen poisson3d 64 -o poisson64.mtx\n  spmv gen kron:18,48 -o kron18.spmvkit\n  spmv gen rgg:2^22,order=shuffled -o rgg22-shuffled.spmvkit\n  spmv gen powerlaw 1000000 8 --seed 3 -o pl.mtx.gz");
    s
}

/// Joins KIND and PARAMS into one GEN-SPEC.
pub fn spec_of(kind: &str, params: &[String], seed: Option<u64>) -> String {
    let mut parts: Vec<String> = params.to_vec();
    if let Some(s) = seed {
        parts.push(format!("seed={s}"));
    }
    match (kind.contains(':'), parts.is_empty()) {
        (_, true) => kind.to_string(),
        (true, false) => format!("{kind},{}", parts.join(",")),
        (false, false) => format!("{kind}:{}", parts.join(",")),
    }
}

pub fn run(args: GenArgs) -> Result<()> {
    // Before generating: a matrix that cannot be saved should not take minutes to build.
    spmvkit::io::check_output_path(&args.output).map_err(|e| usage(e.to_string()))?;
    let spec = spec_of(&args.kind, &args.params, args.seed);
    let t = Instant::now();
    let a = spmvkit::gen::generate_any::<f64>(&spec).or_else(|e| match e {
        // already names the spec
        spmvkit::Error::GenSpec { .. } => Err(e.into()),
        e => Err(e).with_context(|| format!("cannot generate {spec}")),
    })?;
    let gen_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    // The library's error names the file.
    spmvkit::io::save_any(&args.output, &a)?;
    eprintln!(
        "{spec}: {} x {}, {} nnz{}, generated in {gen_s:.2} s, written to {} in {:.2} s",
        a.nrows(),
        a.ncols(),
        a.nnz(),
        match a.width() {
            OffsetWidth::W32 => "",
            OffsetWidth::W64 => " (64-bit row offsets)",
        },
        args.output.display(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::spec_of;

    #[test]
    fn joins_kind_and_params() {
        assert_eq!(spec_of("poisson3d", &["64".into()], None), "poisson3d:64");
        assert_eq!(spec_of("poisson3d:64", &[], Some(3)), "poisson3d:64,seed=3");
        assert_eq!(
            spec_of("kron", &["18".into(), "48".into()], None),
            "kron:18,48"
        );
    }
}
