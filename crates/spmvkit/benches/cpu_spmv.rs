//! CPU SpMV benchmark (not a test): the rayon CSR SpMV (`csr`) against the serial f64 oracle and
//! against `sprs`' serial CSR SpMV, all on the same matrix in one run.
//!
//! `cargo bench -p spmvkit --bench cpu_spmv [-- GEN-SPEC]` (default `poisson3d:128`).

use std::time::Instant;

use spmvkit::cpu::{check, oracle_spmv, par_csr_spmv};

fn median_ms(mut f: impl FnMut(), reps: usize) -> f64 {
    f();
    let t: Vec<f64> = (0..reps)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    spmvkit::stats::median(&t).unwrap_or(f64::NAN)
}

fn main() {
    let spec = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_else(|| "poisson3d:128".to_string());
    let t = Instant::now();
    let a = match spmvkit::gen::generate::<f64>(&spec) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    println!(
        "{spec}: {} x {}, {} nnz (generated in {:.2} s), {} rayon threads",
        a.nrows(),
        a.ncols(),
        a.nnz(),
        t.elapsed().as_secs_f64(),
        rayon::current_num_threads()
    );
    let x = spmvkit::bench::test_vector::<f64>(a.ncols(), 1);
    let zeros = vec![0.0; a.nrows()];
    let gflops = |ms: f64| 2.0 * a.nnz() as f64 / (ms * 1e-3) * 1e-9;

    let reference = oracle_spmv(&a, 1.0, &x, 0.0, &zeros).expect("oracle");
    let t_oracle = median_ms(
        || {
            std::hint::black_box(oracle_spmv(&a, 1.0, &x, 0.0, &zeros).expect("oracle"));
        },
        5,
    );

    let mut y = vec![0.0; a.nrows()];
    let t_rayon = median_ms(|| par_csr_spmv(&a, 1.0, &x, 0.0, &mut y), 20);
    let c = check(&reference, &y);
    assert!(c.ok, "rayon SpMV disagrees with the oracle: {c:?}");

    let m = sprs::CsMatI::<f64, u32, u32>::new(
        (a.nrows(), a.ncols()),
        a.row_ptr().to_vec(),
        a.col_idx().to_vec(),
        a.vals().to_vec(),
    );
    let mut ys = vec![0.0; a.nrows()];
    let t_sprs = median_ms(
        || {
            ys.iter_mut().for_each(|v| *v = 0.0);
            sprs::prod::mul_acc_mat_vec_csr(m.view(), &x[..], &mut ys[..]);
        },
        10,
    );
    assert!(check(&reference, &ys).ok, "sprs disagrees with the oracle");

    println!(
        "{:<28} {:>10} {:>10} {:>12}",
        "implementation", "ms/call", "GFLOP/s", "vs oracle"
    );
    for (name, ms) in [
        ("oracle (serial, f64 acc.)", t_oracle),
        ("sprs 0.11 (serial)", t_sprs),
        ("spmvkit csr (rayon)", t_rayon),
    ] {
        println!(
            "{name:<28} {ms:>10.3} {:>10.3} {:>11.2}x",
            gflops(ms),
            t_oracle / ms
        );
    }
    println!("rayon over sprs: {:.2}x", t_sprs / t_rayon);
}
