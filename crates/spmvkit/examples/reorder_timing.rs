//! Times the symmetric orderings (`spmvkit::reorder`) and prints the bandwidth and f64 x sectors
//! per nonzero before and after, for each GEN-SPEC argument; `+shuffled` after a spec numbers its
//! matrix at random first (for kinds without `order=shuffled`).
//!
//! `cargo run --release --example reorder_timing -- rgg:1048576,order=shuffled poisson3d:100+shuffled`

use std::time::Instant;

use spmvkit::matrix::{MatrixStats, RowStats};
use spmvkit::reorder::{order, permute_symmetric, Ordering, Permutation};
use spmvkit::{gen, Csr};

fn describe(a: &Csr<f64>) -> String {
    let s = MatrixStats::of(a).with_x_sectors(a);
    format!(
        "bandwidth {:>8}  x sectors/nnz (f64) {:.3}",
        RowStats::of(a).bandwidth(),
        s.x_share(8).unwrap_or(0.0)
    )
}

fn main() -> spmvkit::Result<()> {
    println!("threads: {}", rayon::current_num_threads());
    for arg in std::env::args().skip(1) {
        let (spec, shuffled) = match arg.strip_suffix("+shuffled") {
            Some(s) => (s, true),
            None => (arg.as_str(), false),
        };
        let mut a = gen::generate_f64(spec)?;
        if shuffled {
            a = permute_symmetric(&a, &Permutation::random(a.nrows(), 1)?)?;
        }
        println!("{arg}: n {} nnz {}", a.nrows(), a.nnz());
        println!("  {:<10} {}", "input", describe(&a));
        for kind in Ordering::ALL {
            let t = Instant::now();
            let p = order(&a, kind)?;
            let t_order = t.elapsed().as_secs_f64();
            let t = Instant::now();
            let b = permute_symmetric(&a, &p)?;
            let t_perm = t.elapsed().as_secs_f64();
            println!(
                "  {:<10} {}  order {:.3} s  PAPᵀ {:.3} s",
                kind.name(),
                describe(&b),
                t_order,
                t_perm
            );
        }
    }
    Ok(())
}
