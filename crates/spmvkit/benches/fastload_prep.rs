//! FastLoad preprocessing time by stage (issue #6, paper §V-F / Fig. 10) on the largest matrices
//! of the `gpu-large` suite, on the host: generation is timed apart, then `prepare` (f64, the
//! paper's height limit 1, warp 32) is run and each stage of `Layout::prep_stages` is printed.
//!
//! Run: `cargo bench -p spmvkit --bench fastload_prep`. Environment: `SPMVKIT_BENCH_SPECS`
//! (matrix specs separated by `;`, default `kron:21;uniform:30000000,2;uniform:4000000,16`),
//! `SPMVKIT_BENCH_PARAMS` (extra `key=value` items separated by spaces, e.g. `height=unlimited`).

use std::time::Instant;

use spmvkit::methods::{find, Params, PrepareFor};
use spmvkit::{gen, Csr};

/// CPU seconds used by this process so far (user + system, from /proc/self/stat; 0 elsewhere):
/// on a loaded machine, wall time alone says little.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    let Some(rest) = stat.rsplit(')').next() else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // Fields 14 and 15 of stat (utime, stime) are 12 and 13 after the ')'; 100 ticks a second.
    (ticks(11) + ticks(12)) / 100.0
}

fn main() {
    let specs = std::env::var("SPMVKIT_BENCH_SPECS")
        .unwrap_or_else(|_| "kron:21;uniform:30000000,2;uniform:4000000,16".into());
    let extra = std::env::var("SPMVKIT_BENCH_PARAMS").unwrap_or_default();
    let params = match Params::parse(extra.split_whitespace()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("fastload_prep: {e}");
            std::process::exit(2);
        }
    };
    let method = match find("fastload") {
        Ok(m) => m,
        Err(e) => {
            eprintln!("fastload_prep: {e}");
            std::process::exit(2);
        }
    };
    println!(
        "fastload preprocessing, {} rayon threads, params [{extra}]",
        rayon::current_num_threads()
    );
    for spec in specs.split(';').filter(|s| !s.is_empty()) {
        let t = Instant::now();
        let a: Csr<f64> = match gen::generate(spec) {
            Ok(a) => a,
            Err(e) => {
                eprintln!("{spec}: {e}");
                continue;
            }
        };
        let gen_s = t.elapsed().as_secs_f64();
        let (t, c0) = (Instant::now(), cpu_seconds());
        let l = match f64::prepare_with(method, &a, &params) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("{spec}: prepare: {e}");
                continue;
            }
        };
        let total = t.elapsed().as_secs_f64();
        let cpu = cpu_seconds() - c0;
        println!(
            "{spec}: {} x {}, nnz {} (generated in {gen_s:.2} s); prepare {total:.3} s wall = {:.1} ns/nnz, {cpu:.2} CPU s",
            a.nrows(),
            a.ncols(),
            a.nnz(),
            total * 1e9 / a.nnz().max(1) as f64
        );
        for (stage, d) in l.prep_stages() {
            println!("  {stage:<14} {:8.3} s", d.as_secs_f64());
        }
        for (k, v) in l.notes() {
            if k.starts_with("blocks") || k.starts_with("layers") || k.starts_with("peak") {
                println!("  {k}: {v}");
            }
        }
    }
}
