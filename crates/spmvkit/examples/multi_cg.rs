//! Conjugate gradients for k right-hand sides at once on `Plan::apply_multi` (issue #24,
//! docs/spmm.md): the k systems A x_c = b_c iterate in lockstep, each with its own step sizes,
//! and every iteration makes one multi-vector call Q = A·P for the k search directions instead
//! of k SpMV calls, so the matrix is read once per iteration. A column converges on its own
//! (its direction is then frozen at zero). Compared with the same iteration on k `apply` calls.
//! (Lockstep CG, not O'Leary's block CG, which couples the columns through k × k solves; the
//! multi-vector call is the same.)
//!
//!     cargo run --release -p spmvkit --example multi_cg [METHOD] [GEN-SPEC] [K]
//!
//! Runs on the GPU when one is present, else on the CPU. The block vectors live on the host;
//! this shows the API, not the fastest device-resident solver (`spmvkit::solve` has that for one
//! right-hand side).

use std::time::Instant;

use spmvkit::matrix::MultiShape;
use spmvkit::{gen, Plan, PlanOptions, Result};

/// The k systems in lockstep: X, the residuals R, the directions P, their squared residual
/// norms; `multi` makes Q = A·P one multi-vector call, else k single-vector calls.
fn solve(plan: &mut Plan<f64>, b: &[f64], k: usize, multi: bool) -> Result<(Vec<f64>, usize)> {
    let n = plan.nrows();
    let shape = MultiShape::col_major(k);
    let col = |v: &[f64], c: usize| v[c * n..(c + 1) * n].to_vec();
    let dot = |u: &[f64], v: &[f64]| u.iter().zip(v).map(|(a, b)| a * b).sum::<f64>();
    let (mut x, mut r, mut p) = (vec![0.0; n * k], b.to_vec(), b.to_vec());
    let mut q = vec![0.0; n * k];
    let mut rr: Vec<f64> = (0..k).map(|c| dot(&col(&r, c), &col(&r, c))).collect();
    let stop: Vec<f64> = rr.iter().map(|v| v * 1e-20).collect();
    let mut it = 0;
    while it < 10 * n && (0..k).any(|c| rr[c] > stop[c]) {
        if multi {
            plan.apply_multi(1.0, &p, 0.0, &mut q, shape)?;
        } else {
            for c in 0..k {
                plan.apply(1.0, &p[c * n..(c + 1) * n], 0.0, &mut q[c * n..(c + 1) * n])?;
            }
        }
        for c in 0..k {
            if rr[c] <= stop[c] {
                continue;
            }
            let s = c * n..(c + 1) * n;
            let alpha = rr[c] / dot(&p[s.clone()], &q[s.clone()]);
            for i in s.clone() {
                x[i] += alpha * p[i];
                r[i] -= alpha * q[i];
            }
            let new = dot(&r[s.clone()], &r[s.clone()]);
            let beta = if new <= stop[c] { 0.0 } else { new / rr[c] };
            for i in s {
                p[i] = if new <= stop[c] {
                    0.0
                } else {
                    r[i] + beta * p[i]
                };
            }
            rr[c] = new;
        }
        it += 1;
    }
    Ok((x, it))
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let method = args.next().unwrap_or_else(|| "csr-vector".into());
    let spec = args.next().unwrap_or_else(|| "poisson2d:200".into());
    let k: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(8);
    let a = gen::generate_f64(&spec)?;
    let mut plan = Plan::new(&method, &a, &PlanOptions::default())?;
    let n = a.nrows();
    // b_c: a different smooth right-hand side per column
    let b: Vec<f64> = (0..k)
        .flat_map(|c| (0..n).map(move |i| ((i * (c + 1)) as f64 * 1e-3).sin() + 1.0))
        .collect();
    println!(
        "{method} on {spec} ({n} rows, {} nonzeros), {}, k = {k}; multi-vector path: {}",
        a.nnz(),
        plan.backend(),
        plan.multi_path(MultiShape::col_major(k))
    );
    plan.prepare_multi(MultiShape::col_major(k))?;
    for multi in [true, false] {
        let t = Instant::now();
        let (x, it) = solve(&mut plan, &b, k, multi)?;
        let secs = t.elapsed().as_secs_f64();
        // the worst relative residual ‖b − A x‖ / ‖b‖ over the columns
        let mut ax = vec![0.0; n * k];
        plan.apply_multi(1.0, &x, 0.0, &mut ax, MultiShape::col_major(k))?;
        let worst = (0..k)
            .map(|c| {
                let s = c * n..(c + 1) * n;
                let res: f64 = s.clone().map(|i| (b[i] - ax[i]).powi(2)).sum();
                let nb: f64 = s.map(|i| b[i] * b[i]).sum();
                (res / nb).sqrt()
            })
            .fold(0.0, f64::max);
        let how = if multi { "apply_multi" } else { "k × apply" };
        println!("{how:>12}: {it} iterations, {secs:.3} s, worst relative residual {worst:.2e}");
    }
    Ok(())
}
