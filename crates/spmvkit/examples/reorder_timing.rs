//! Times the symmetric orderings (`spmvkit::reorder`) and prints the bandwidth and f64 x sectors
//! per nonzero before and after, for each GEN-SPEC argument; `+shuffled` after a spec numbers its
//! matrix at random first (for kinds without `order=shuffled`).
//!
//! `cargo run --release --example reorder_timing -- rgg:1048576,order=shuffled poisson3d:100+shuffled`

use std::time::Instant;

use spmvkit::matrix::{MatrixStats, RowStats};
use spmvkit::reorder::{order, permute_symmetric, Ordering, Permutation};
use spmvkit::{gen, Csr, Idx};

/// A uniformly random permutation of 0..n (Fisher–Yates on a splitmix64 stream).
fn shuffle(n: usize, seed: u64) -> spmvkit::Result<Permutation> {
    let mut order: Vec<Idx> = (0..n as Idx).collect();
    let mut s = seed;
    for i in (1..n).rev() {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        order.swap(i, (z % (i as u64 + 1)) as usize);
    }
    Permutation::from_order(order)
}

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
            a = permute_symmetric(&a, &shuffle(a.nrows(), 1)?)?;
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
