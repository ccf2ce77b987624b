//! Dumps FastLoad cases for a CPU emulation of its kernel (one OS thread per CUDA thread): for
//! each matrix and variant, the layout arrays, the planned launches, x, y0 and the oracle's y and
//! tolerance scale, in f64 and f32 (`spmvkit::methods::fastload::dump`). Not a test: it checks
//! nothing itself. The matrices are the small members of the edge-case corpus, the shared
//! collection's jgl009 (Fig. 6) when found, and any MATRIX given (a `.mtx`/`.mtx.gz` file or a
//! GEN-SPEC):
//!
//! `cargo run --release -p spmvkit --example fastload_dump -- DIR [MATRIX...]`

use std::path::{Path, PathBuf};

use spmvkit::methods::fastload::dump::write_case;
use spmvkit::methods::Params;
use spmvkit::Csr;

const VARIANTS: &[&[&str]] = &[
    &[],
    &["permute_x=kernel"],
    &["fuse=one"],
    &["fuse=one", "permute_x=kernel"],
    &["height=4", "threads=64"],
    &["height=unlimited", "blocks_per_warp=1", "threads=64"],
    &["warp=16", "height=2", "blocks_per_warp=32"],
    &["warp=32", "blocks_per_warp=3", "threads=96"],
];

fn matrix(arg: &str) -> Result<Csr<f64>, String> {
    let loaded = if Path::new(arg).is_file() {
        spmvkit::io::load::<f64>(Path::new(arg))
    } else {
        spmvkit::gen::generate_f64(arg)
    };
    loaded.map_err(|e| format!("{arg}: {e}"))
}

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().ok_or("usage: fastload_dump DIR [MATRIX...]")?);
    let mut mats: Vec<(String, Csr<f64>)> = spmvkit::gen::corpus::edge_cases()
        .into_iter()
        .filter(|(_, a)| a.nnz() < 20_000 && a.nrows() < 70_000)
        .collect();
    if let Some(d) = spmvkit::bench::suites::shared_matrices_dir() {
        let jgl009 = d.join("HB/jgl009.mtx.gz");
        if jgl009.is_file() {
            mats.push(("jgl009".into(), matrix(&jgl009.to_string_lossy())?));
        }
    }
    for arg in args {
        mats.push((arg.clone(), matrix(&arg)?));
    }
    let mut n = 0;
    for (name, a) in &mats {
        let name = name.replace([' ', ':', ',', '/', '.'], "_");
        for (vi, v) in VARIANTS.iter().enumerate() {
            let params = Params::parse(v.iter().copied()).map_err(|e| e.to_string())?;
            for (mi, method) in ["fastload", "fastload-atomic"].into_iter().enumerate() {
                if mi == 1 && vi > 1 {
                    continue;
                }
                let case = format!("{name}-v{vi}-{method}");
                write_case(&dir, &format!("{case}-f64"), a, method, &params)
                    .and_then(|()| {
                        write_case(
                            &dir,
                            &format!("{case}-f32"),
                            &a.cast::<f32>(),
                            method,
                            &params,
                        )
                    })
                    .map_err(|e| format!("{case}: {e}"))?;
                n += 2;
            }
        }
    }
    println!("dumped {n} cases to {}", dir.display());
    Ok(())
}
