//! Timing check of the generators (issue #2), not a test: builds each GEN-SPEC given on the
//! command line (by default `kron:20` and `uniform:4000000,25`, 100M nnz) and prints how long it
//! took. Run with `cargo run --release -p spmvkit --example gen_timing [SPEC...]`.

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let specs = if args.is_empty() {
        vec!["kron:20".to_string(), "uniform:4000000,25".to_string()]
    } else {
        args
    };
    println!("threads: {}", rayon::current_num_threads());
    for spec in specs {
        let t = Instant::now();
        match spmvkit::gen::generate_f64(&spec) {
            Ok(a) => {
                let s = t.elapsed().as_secs_f64();
                println!(
                    "{spec}: {} x {}, {} nnz, {:.1} MB CSR, {s:.2} s ({:.0} M nnz/s)",
                    a.nrows(),
                    a.ncols(),
                    a.nnz(),
                    a.bytes() as f64 / 1e6,
                    a.nnz() as f64 / s / 1e6
                );
            }
            Err(e) => println!("{spec}: {e}"),
        }
    }
}
