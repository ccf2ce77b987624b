//! Times the symmetric orderings (`spmvkit::reorder`) stage by stage, and prints the bandwidth
//! and f64 x sectors (the count of 32-row chunks, and per nonzero) before and after, for each
//! GEN-SPEC argument; `+shuffled` after a spec numbers its matrix at random first (for kinds
//! without `order=shuffled`). `--only rcm` (or `bisection`) times one ordering; `--reps N` repeats it and prints each
//! stage's least time (for a busy machine). The `reorder`
//! column is what a Plan's `PrepTimes::reorder` counts: the ordering, PAPᵀ and its entry map.
//!
//! `cargo run --release --example reorder_timing -- rgg:1048576,order=shuffled poisson3d:100+shuffled`

use std::time::Instant;

use spmvkit::matrix::{x_sectors, RowStats};
use spmvkit::reorder::{
    order_timed, permute_symmetric, permute_symmetric_map, OrderTimes, Ordering, Permutation,
};
use spmvkit::{gen, Csr};

fn describe(a: &Csr<f64>) -> String {
    let s = x_sectors(a).f64;
    format!(
        "bandwidth {:>8}  x sectors (f64) {:>9} = {:.3}/nnz",
        RowStats::of(a).bandwidth(),
        s,
        s as f64 / a.nnz().max(1) as f64
    )
}

/// The stage-by-stage minimum of two timings.
fn min_times(a: OrderTimes, b: OrderTimes) -> OrderTimes {
    OrderTimes {
        graph: a.graph.min(b.graph),
        start: a.start.min(b.start),
        number: a.number.min(b.number),
        bisect: a.bisect.min(b.bisect),
        invert: a.invert.min(b.invert),
    }
}

fn main() -> spmvkit::Result<()> {
    println!("threads: {}", rayon::current_num_threads());
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut kinds = Ordering::ALL.to_vec();
    let mut reps = 1;
    if let Some(k) = args.iter().position(|a| a == "--reps") {
        reps = args.get(k + 1).and_then(|r| r.parse().ok()).unwrap_or(1);
        args.drain(k..(k + 2).min(args.len()));
    }
    if let Some(k) = args.iter().position(|a| a == "--only") {
        let name = args.get(k + 1).cloned().unwrap_or_default();
        kinds = vec![name.parse()?];
        args.drain(k..(k + 2).min(args.len()));
    }
    for arg in args {
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
        for &kind in &kinds {
            let mut best: Option<(f64, f64, OrderTimes)> = None;
            let mut b = None;
            for _ in 0..reps.max(1) {
                let t = Instant::now();
                let (p, st) = order_timed(&a, kind)?;
                let t_order = t.elapsed().as_secs_f64();
                let t = Instant::now();
                let (pb, _map) = permute_symmetric_map(&a, &p)?;
                let t_perm = t.elapsed().as_secs_f64();
                b = Some(pb);
                best = Some(match best {
                    None => (t_order, t_perm, st),
                    Some((o, q, s)) => (o.min(t_order), q.min(t_perm), min_times(s, st)),
                });
            }
            let (Some((t_order, t_perm, st)), Some(b)) = (best, b) else {
                continue;
            };
            println!("  {:<10} {}", kind.name(), describe(&b));
            println!(
                "  {:<10} reorder {:.3} s = order {:.3} s (graph {:.3}, start {:.3}, number {:.3}, bisect {:.3}, invert {:.3}) + PAPᵀ with map {:.3} s",
                "",
                t_order + t_perm,
                t_order,
                st.graph.as_secs_f64(),
                st.start.as_secs_f64(),
                st.number.as_secs_f64(),
                st.bisect.as_secs_f64(),
                st.invert.as_secs_f64(),
                t_perm
            );
        }
    }
    Ok(())
}
