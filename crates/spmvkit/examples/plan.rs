//! The Plan API: prepare once, apply many times, several vectors, new values under the same
//! pattern without re-analysis, then a CG solve on the same plan.
//!
//!     cargo run --release -p spmvkit --example plan [METHOD] [GEN-SPEC]
//!
//! Runs on the GPU when one is present, else on the CPU (with a note).

use spmvkit::solve::{self, CgSystem, SolveOptions};
use spmvkit::{gen, Plan, PlanOptions, Result};

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let method = args.next().unwrap_or_else(|| "csr-vector".into());
    let spec = args.next().unwrap_or_else(|| "poisson3d:32".into());
    let a = gen::generate_f64(&spec)?;

    // Prepare once: the method's analysis and, on a GPU, the upload.
    let mut plan = Plan::new(&method, &a, &PlanOptions::default())?;
    if let Some(note) = plan.fallback_note() {
        println!("note: {note}");
    }
    let prep = plan.prep_times();
    println!(
        "{method} on {spec} ({}x{}, {} nonzeros), {}: prepare {:?}, upload {:?}",
        a.nrows(),
        a.ncols(),
        a.nnz(),
        plan.backend(),
        prep.prepare,
        prep.upload
    );

    // Apply many times: y = 2·A·x + y.
    let x = vec![1.0; a.ncols()];
    let mut y = vec![0.0; a.nrows()];
    for _ in 0..3 {
        plan.apply(2.0, &x, 1.0, &mut y)?;
    }
    println!("after 3 applies, y[0] = {}", y[0]);

    // Several vectors, one after the other, on the same layout.
    let xs: Vec<Vec<f64>> = (1..=3).map(|k| vec![k as f64; a.ncols()]).collect();
    let mut ys: Vec<Vec<f64>> = vec![vec![0.0; a.nrows()]; 3];
    let xr: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
    let mut yr: Vec<&mut [f64]> = ys.iter_mut().map(Vec::as_mut_slice).collect();
    plan.apply_many(1.0, &xr, 0.0, &mut yr)?;
    println!(
        "A·(k·1)[0] for k = 1, 2, 3: {} {} {}",
        ys[0][0], ys[1][0], ys[2][0]
    );

    // New values, same pattern: no re-analysis where the layout allows it.
    let shifted: Vec<f64> = a.vals().iter().map(|v| 1.5 * v).collect();
    let how = plan.update_values(&shifted)?;
    println!("update_values: {how:?}");
    if let Some(note) = plan.value_update_note() {
        println!("note: {note}");
    }
    let mut y = vec![0.0; a.nrows()];
    plan.apply(1.0, &x, 0.0, &mut y)?;
    println!("after the update, (1.5·A·1)[0] = {}", y[0]);

    // The plan drives a solver: CG on the updated matrix with b = A·1.
    let scaled = spmvkit::Csr::with_pattern(a.pattern().clone(), shifted)?;
    let b = CgSystem::ones_solution(&scaled).b;
    let (sol, report) = solve::cg(&mut plan, &b, &SolveOptions::default())?;
    let err = sol.iter().map(|v| (v - 1.0).abs()).fold(0.0, f64::max);
    println!(
        "CG: {} after {} iterations ({}), residual {:.2e}, max error {err:.2e}, {:.1} us/iteration",
        report.stop,
        report.iterations,
        report.launch,
        report.residual,
        report.us_per_iter()
    );
    Ok(())
}
