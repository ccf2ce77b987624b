//! Conjugate gradient (Hestenes & Stiefel 1952) for A x = b with A symmetric positive definite,
//! starting from x = 0, stopping when the recurrence residual ‖r‖/‖b‖ ≤ tol. A p goes through
//! the plan, so any registered method does the SpMV.
//!
//! One GPU iteration: q = A p (the plan); `cg_dot_pq` and `cg_alpha` give α = ρ/(pᵀq);
//! `cg_update` does x += αp, r −= αq and the partials of rᵀr; `cg_beta` gives ρ' and β = ρ'/ρ and
//! sets the stop flag; `cg_p` does p = r + βp. pᵀq ≤ 0 stops with [`Stop::Breakdown`](super::Stop::Breakdown): the
//! matrix is not positive definite.

use cudarc::driver::CudaSlice;
use rayon::prelude::*;

use super::kernels::{
    Cg1DotsArgs, Cg1ScalarsArgs, Cg1UpdateArgs, CgDotArgs, CgPArgs, CgUpdateArgs, DistSum2Args,
    PartialsArgs,
};
use super::{
    check_options, dist_sum, dot_cpu, drive, grid, grid_blocks, initial_scalars, Reduce,
    SolveOptions, SolveReport, KERNELS, S_DONE, S_RES,
};
use crate::error::{Error, Result};
use crate::gpu::{kernel_int, DevMut, DevRef, Gpu, Kernel};
use crate::matrix::Csr;
use crate::methods::{Plan, PrepareFor};
use crate::scalar::Scalar;

/// A test system with a known answer: b = A·1, so x = (1, …, 1) solves A x = b.
pub struct CgSystem<T> {
    pub b: Vec<T>,
}

impl<T: Scalar> CgSystem<T> {
    /// b = A·1, summed in f64 per row.
    ///
    /// ```
    /// use spmvkit::{gen, solve::CgSystem};
    /// let a = gen::generate_f64("poisson2d:4").unwrap();
    /// let sys = CgSystem::ones_solution(&a);
    /// assert_eq!(sys.b.len(), 16);
    /// ```
    pub fn ones_solution(a: &Csr<T>) -> Self {
        let b = (0..a.nrows())
            .into_par_iter()
            .map(|i| T::from_f64(a.row(i).1.iter().map(|v| v.to_f64()).sum()))
            .collect();
        CgSystem { b }
    }
}

/// Solves A x = b by conjugate gradient with the SpMV of `plan` (on its backend), from x = 0.
///
/// ```
/// use spmvkit::{gen, solve, Backend, Plan, PlanOptions};
/// let a = gen::generate_f64("poisson3d:6").unwrap();
/// let b = solve::CgSystem::ones_solution(&a).b;
/// let opts = PlanOptions { backend: Some(Backend::Cpu), ..PlanOptions::default() };
/// let mut plan = Plan::new("csr", &a, &opts).unwrap();
/// let (x, report) = solve::cg(&mut plan, &b, &solve::SolveOptions::default()).unwrap();
/// assert_eq!(report.stop, solve::Stop::Converged);
/// assert!(x.iter().all(|v| (v - 1.0).abs() < 1e-6));
/// ```
pub fn cg<T: PrepareFor>(
    plan: &mut Plan<T>,
    b: &[T],
    opts: &SolveOptions,
) -> Result<(Vec<T>, SolveReport)> {
    check_options(opts)?;
    let n = crate::matrix::check_square("CG needs a square matrix", plan.nrows(), plan.ncols())?;
    if b.len() != n {
        return Err(Error::DimensionMismatch {
            what: "CG right-hand side b".into(),
            expected: n,
            got: b.len(),
        });
    }
    let bb = dot_cpu(b, b);
    let thresh = super::cg_threshold(bb, opts)?;
    match plan.gpu().cloned() {
        Some(gpu) => {
            let (x, mut report) = cg_gpu(plan, &gpu, b, bb, thresh, opts)?;
            super::rows::note_breakdown(&mut report);
            Ok((x, report))
        }
        // The CPU path: the host iteration over the whole plan as one rank.
        None => super::rows::PlanRows::solve(plan, |rows| super::rows::cg(rows, b, opts)),
    }
}

/// ‖r‖/‖b‖ from ρ = rᵀr and ‖b‖² (0 for b = 0).
pub(crate) fn relative(rho: f64, bb: f64) -> f64 {
    if bb > 0.0 {
        (rho / bb).max(0.0).sqrt()
    } else {
        0.0
    }
}

/// The device-resident CG iteration after q = A p, written once for the single-GPU solver
/// ([`cg`]) and the distributed one (`dist::NcclRows::cg`): `cg_dot_pq` writes the block
/// partials of pᵀq, `cg_alpha` gives α; `cg_update` (x += αp, r −= αq, partials of rᵀr), then
/// `cg_beta` gives β and the stop flag; `cg_p` does p = r + βp. Between a dot product's partials
/// and the kernel that reads them sits [`Reduce`]: nothing on one GPU, a sum over the ranks on
/// NCCL ranks.
pub(crate) struct CgIteration<T: Scalar> {
    k_dot: Kernel<CgDotArgs<'static, T>>,
    k_alpha: Kernel<PartialsArgs<'static>>,
    k_update: Kernel<CgUpdateArgs<'static, T>>,
    k_beta: Kernel<PartialsArgs<'static>>,
    k_p: Kernel<CgPArgs<'static, T>>,
    n_i: i32,
    nb: usize,
    /// The iterate, from 0.
    pub x: CudaSlice<T>,
    /// The residual, from b.
    pub r: CudaSlice<T>,
    part: CudaSlice<f64>,
    /// The solver scalars ([`super::S_LEN`]).
    pub s: CudaSlice<f64>,
}

impl<T: Scalar> CgIteration<T> {
    /// The kernels, x = 0, r = b and the scalars for ‖b‖² = `bb` (done at once when it is at most
    /// `thresh`).
    pub(crate) fn new(
        gpu: &Gpu,
        b: &[T],
        bb: f64,
        thresh: f64,
        opts: &SolveOptions,
        what: &'static str,
    ) -> Result<Self> {
        let n = b.len();
        let nb = grid_blocks(n);
        let mut s0 = initial_scalars(bb, thresh, opts.max_iter);
        if bb <= thresh {
            s0[S_DONE] = 1.0;
        }
        Ok(CgIteration {
            k_dot: gpu.kernel::<T, _>(&KERNELS, "cg_dot_pq")?,
            k_alpha: gpu.kernel::<T, _>(&KERNELS, "cg_alpha")?,
            k_update: gpu.kernel::<T, _>(&KERNELS, "cg_update")?,
            k_beta: gpu.kernel::<T, _>(&KERNELS, "cg_beta")?,
            k_p: gpu.kernel::<T, _>(&KERNELS, "cg_p")?,
            n_i: kernel_int(what, n)?,
            nb,
            x: gpu.alloc_zeros(n)?,
            r: gpu.upload(b)?,
            part: gpu.alloc_zeros(nb)?,
            s: gpu.upload(&s0)?,
        })
    }

    /// The partials of the last dot product as the next kernel reads them: the array and its
    /// length.
    fn reduced<'s>(
        &'s self,
        gpu: &Gpu,
        reduce: &'s mut Reduce<'_>,
    ) -> Result<(&'s CudaSlice<f64>, i32)> {
        match reduce {
            Reduce::Local => Ok((&self.part, self.nb as i32)),
            Reduce::Ranks {
                k_sum,
                red,
                all_reduce,
            } => {
                dist_sum(gpu, k_sum, red, 0, &self.part, self.nb, &self.s)?;
                all_reduce(red)?;
                Ok((&**red, 1))
            }
        }
    }

    /// Launches `k`, the one-block kernel (`cg_alpha` or `cg_beta`) that turns the partials of
    /// the last dot product into the scalars in `s`.
    fn scalar_kernel(
        &self,
        gpu: &Gpu,
        reduce: &mut Reduce<'_>,
        k: &Kernel<PartialsArgs<'static>>,
    ) -> Result<()> {
        let (sum, len) = self.reduced(gpu, reduce)?;
        let args = PartialsArgs {
            s: DevMut::doubles_scratch(&self.s),
            part: DevRef::doubles(sum),
            nb: len,
        };
        // SAFETY: the reduced array holds `len` values and `s` S_LEN; `s` is lent once.
        unsafe { gpu.launch(k, grid(1), &args) }
    }

    /// One iteration after q = A p (p and q hold at least n values; p becomes r + βp).
    pub(crate) fn step(
        &self,
        gpu: &Gpu,
        p: &CudaSlice<T>,
        q: &CudaSlice<T>,
        reduce: &mut Reduce<'_>,
    ) -> Result<()> {
        let nb = self.nb;
        let n = self.n_i;
        // SAFETY (every launch below): x, r, p and q hold at least n elements, `part` nb and `s`
        // S_LEN; the buffers written through a scratch pointer (x, r, p, `part`, `s`) are each
        // lent once per launch.
        let args = CgDotArgs {
            p: DevRef::new(p),
            q: DevRef::new(q),
            n,
            part: DevMut::doubles_scratch(&self.part),
            s: DevRef::doubles(&self.s),
        };
        unsafe { gpu.launch(&self.k_dot, grid(nb), &args) }?;
        self.scalar_kernel(gpu, reduce, &self.k_alpha)?;
        let args = CgUpdateArgs {
            x: DevMut::scratch(&self.x),
            r: DevMut::scratch(&self.r),
            p: DevRef::new(p),
            q: DevRef::new(q),
            n,
            part: DevMut::doubles_scratch(&self.part),
            s: DevRef::doubles(&self.s),
        };
        unsafe { gpu.launch(&self.k_update, grid(nb), &args) }?;
        self.scalar_kernel(gpu, reduce, &self.k_beta)?;
        let args = CgPArgs {
            p: DevMut::scratch(p),
            r: DevRef::new(&self.r),
            n,
            s: DevRef::doubles(&self.s),
        };
        unsafe { gpu.launch(&self.k_p, grid(nb), &args) }?;
        Ok(())
    }
}

/// The device-resident single-reduction CG iteration (Chronopoulos & Gear 1989; the host form
/// is [`super::rows::cg_single_reduction`]), written once for one GPU
/// ([`cg_single_reduction`]) and the NCCL ranks (`dist::NcclRows::cg_single_reduction`). After
/// w = A r: `cg1_dots` writes the partials of rᵀr and wᵀr, [`Reduce`] turns them into the two
/// sums (on ranks: `dist_sum2`, then **one** all-reduce of both), `cg1_scalars` gives α, β and the
/// stop flag, `cg1_update` does p = r + βp, q = w + βq, x += αp, r −= αq. r and w belong to the
/// caller (on ranks they are the operator's x and y).
pub(crate) struct Cg1Iteration<T: Scalar> {
    k_dots: Kernel<Cg1DotsArgs<'static, T>>,
    k_scalars: Kernel<Cg1ScalarsArgs<'static>>,
    k_update: Kernel<Cg1UpdateArgs<'static, T>>,
    k_sum2: Kernel<DistSum2Args<'static>>,
    n_i: i32,
    nb: usize,
    /// The iterate, from 0.
    pub x: CudaSlice<T>,
    p: CudaSlice<T>,
    q: CudaSlice<T>,
    /// The partials of rᵀr (nb) then of wᵀr (nb).
    part: CudaSlice<f64>,
    /// The solver scalars ([`super::S_LEN`]).
    pub s: CudaSlice<f64>,
}

impl<T: Scalar> Cg1Iteration<T> {
    /// The kernels, x = p = q = 0 over `n` rows and the scalars for ‖b‖² = `bb` (done at once
    /// when it is at most `thresh`).
    pub(crate) fn new(
        gpu: &Gpu,
        n: usize,
        bb: f64,
        thresh: f64,
        opts: &SolveOptions,
        what: &'static str,
    ) -> Result<Self> {
        let nb = grid_blocks(n);
        let mut s0 = initial_scalars(bb, thresh, opts.max_iter);
        if bb <= thresh {
            s0[S_DONE] = 1.0;
        }
        Ok(Cg1Iteration {
            k_dots: gpu.kernel::<T, _>(&KERNELS, "cg1_dots")?,
            k_scalars: gpu.kernel::<T, _>(&KERNELS, "cg1_scalars")?,
            k_update: gpu.kernel::<T, _>(&KERNELS, "cg1_update")?,
            k_sum2: gpu.kernel::<T, _>(&KERNELS, "dist_sum2")?,
            n_i: kernel_int(what, n)?,
            nb,
            x: gpu.alloc_zeros(n)?,
            p: gpu.alloc_zeros(n)?,
            q: gpu.alloc_zeros(n)?,
            part: gpu.alloc_zeros(2 * nb)?,
            s: gpu.upload(&s0)?,
        })
    }

    /// One iteration after w = A r (r and w hold at least n values; r is updated).
    pub(crate) fn step(
        &self,
        gpu: &Gpu,
        r: &CudaSlice<T>,
        w: &CudaSlice<T>,
        reduce: &mut Reduce<'_>,
    ) -> Result<()> {
        let (nb, n) = (self.nb, self.n_i);
        // SAFETY (every launch below): x, r, p, q and w hold at least n elements, `part` 2·nb,
        // the reduced buffer at least 2 and `s` S_LEN; the buffers written through a scratch
        // pointer (x, r, p, q, `part`, `s`) are each lent once per launch.
        let args = Cg1DotsArgs {
            r: DevRef::new(r),
            w: DevRef::new(w),
            n,
            part: DevMut::doubles_scratch(&self.part),
            s: DevRef::doubles(&self.s),
        };
        unsafe { gpu.launch(&self.k_dots, grid(nb), &args) }?;
        let scalars = |part: &CudaSlice<f64>, nb: usize, stride: usize| -> Result<()> {
            let args = Cg1ScalarsArgs {
                s: DevMut::doubles_scratch(&self.s),
                part: DevRef::doubles(part),
                nb: nb as i32,
                stride: stride as i32,
            };
            unsafe { gpu.launch(&self.k_scalars, grid(1), &args) }
        };
        match reduce {
            Reduce::Local => scalars(&self.part, nb, nb)?,
            Reduce::Ranks {
                red, all_reduce, ..
            } => {
                let args = DistSum2Args {
                    dst: DevMut::doubles(red),
                    part: DevRef::doubles(&self.part),
                    nb: nb as i32,
                    s: DevRef::doubles(&self.s),
                };
                unsafe { gpu.launch(&self.k_sum2, grid(1), &args) }?;
                // the one all-reduce of the iteration: rᵀr and wᵀr together
                all_reduce(red)?;
                scalars(red, 1, 1)?;
            }
        }
        let args = Cg1UpdateArgs {
            x: DevMut::scratch(&self.x),
            r: DevMut::scratch(r),
            p: DevMut::scratch(&self.p),
            q: DevMut::scratch(&self.q),
            w: DevRef::new(w),
            n,
            s: DevRef::doubles(&self.s),
        };
        unsafe { gpu.launch(&self.k_update, grid(nb), &args) }
    }
}

/// Solves A x = b by single-reduction CG (Chronopoulos & Gear; `Cg1Iteration` on the GPU,
/// [`super::rows::cg_single_reduction`] on the CPU) with the SpMV of `plan`, from x = 0: the
/// iterates of [`cg`] with the two dot products of an iteration reduced together.
///
/// ```
/// use spmvkit::{gen, solve, Backend, Plan, PlanOptions};
/// let a = gen::generate_f64("poisson3d:6").unwrap();
/// let b = solve::CgSystem::ones_solution(&a).b;
/// let opts = PlanOptions { backend: Some(Backend::Cpu), ..PlanOptions::default() };
/// let mut plan = Plan::new("csr", &a, &opts).unwrap();
/// let (x, report) = solve::cg_single_reduction(&mut plan, &b, &solve::SolveOptions::default()).unwrap();
/// assert_eq!(report.stop, solve::Stop::Converged);
/// assert!(x.iter().all(|v| (v - 1.0).abs() < 1e-6));
/// ```
pub fn cg_single_reduction<T: PrepareFor>(
    plan: &mut Plan<T>,
    b: &[T],
    opts: &SolveOptions,
) -> Result<(Vec<T>, SolveReport)> {
    check_options(opts)?;
    let n = crate::matrix::check_square("CG needs a square matrix", plan.nrows(), plan.ncols())?;
    if b.len() != n {
        return Err(Error::DimensionMismatch {
            what: "CG right-hand side b".into(),
            expected: n,
            got: b.len(),
        });
    }
    let Some(gpu) = plan.gpu().cloned() else {
        return super::rows::PlanRows::solve(plan, |rows| {
            super::rows::cg_single_reduction(rows, b, opts)
        });
    };
    let bb = dot_cpu(b, b);
    let thresh = super::cg_threshold(bb, opts)?;
    let permuted = plan.permutation().map(|perm| perm.apply(b)).transpose()?;
    let b = permuted.as_deref().unwrap_or(b);
    let it = Cg1Iteration::new(&gpu, n, bb, thresh, opts, "cg: rows")?;
    let r = gpu.upload(b)?;
    let mut w: CudaSlice<T> = gpu.alloc_zeros(n)?;
    gpu.synchronize()?;
    let driven = drive(
        &gpu,
        &it.s,
        opts.check_every,
        opts.max_iter,
        opts.graph,
        |_| {
            plan.apply_device_permuted(T::one(), &r, T::zero(), &mut w)?;
            it.step(&gpu, &r, &w, &mut Reduce::Local)
        },
    )?;
    let mut xh = vec![T::zero(); n];
    gpu.download(&it.x, &mut xh)?;
    if let Some(perm) = plan.permutation() {
        xh = perm.apply_inverse(&xh)?;
    }
    let residual = relative(driven.s[S_RES], bb);
    let notes = plan.fallback_note().map(String::from).into_iter().collect();
    let mut report = driven.report(residual, notes);
    super::rows::note_breakdown(&mut report);
    Ok((xh, report))
}

fn cg_gpu<T: PrepareFor>(
    plan: &Plan<T>,
    gpu: &Gpu,
    b: &[T],
    bb: f64,
    thresh: f64,
    opts: &SolveOptions,
) -> Result<(Vec<T>, SolveReport)> {
    let n = b.len();
    // With a reordering P the iteration runs on B = PAPᵀ: B(Px) = Pb, so it starts from Pb and
    // gives Px, permuted back once at the end (no permutation inside the loop).
    let permuted = plan.permutation().map(|perm| perm.apply(b)).transpose()?;
    let b = permuted.as_deref().unwrap_or(b);
    let it = CgIteration::new(gpu, b, bb, thresh, opts, "cg: rows")?;
    let p = gpu.upload(b)?;
    let mut q: CudaSlice<T> = gpu.alloc_zeros(n)?;
    gpu.synchronize()?;
    let driven = drive(
        gpu,
        &it.s,
        opts.check_every,
        opts.max_iter,
        opts.graph,
        |_| {
            plan.apply_device_permuted(T::one(), &p, T::zero(), &mut q)?;
            it.step(gpu, &p, &q, &mut Reduce::Local)
        },
    )?;
    let mut xh = vec![T::zero(); n];
    gpu.download(&it.x, &mut xh)?;
    if let Some(perm) = plan.permutation() {
        xh = perm.apply_inverse(&xh)?;
    }
    let residual = relative(driven.s[S_RES], bb);
    let notes = plan.fallback_note().map(String::from).into_iter().collect();
    Ok((xh, driven.report(residual, notes)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::generate;
    use crate::methods::Backend;
    use crate::methods::PlanOptions;
    use crate::solve::Stop;

    fn cpu_plan<T: PrepareFor>(method: &str, a: &Csr<T>) -> Plan<T> {
        let opts = PlanOptions {
            backend: Some(Backend::Cpu),
            ..PlanOptions::default()
        };
        Plan::new(method, a, &opts).unwrap()
    }

    #[test]
    fn cg_solves_a_3d_poisson_system_to_the_ones_vector() {
        let a = generate::<f64>("poisson3d:10").unwrap();
        let b = CgSystem::ones_solution(&a).b;
        for method in ["csr", "csr-vector", "merge"] {
            let mut plan = cpu_plan(method, &a);
            let (x, rep) = cg(&mut plan, &b, &SolveOptions::default()).unwrap();
            assert_eq!(rep.stop, Stop::Converged, "{method}");
            assert!(rep.residual <= 1e-8, "{method}: {}", rep.residual);
            assert!(rep.iterations > 5 && rep.iterations < 200, "{method}");
            let err = x.iter().map(|v| (v - 1.0).abs()).fold(0.0, f64::max);
            assert!(err < 1e-6, "{method}: max error {err}");
        }
    }

    /// Single-reduction CG through a plan: on the CPU always; on the GPU (graph and stream
    /// launches) when one is present, against CG on the same plan.
    #[test]
    fn single_reduction_cg_matches_cg_on_cpu_and_gpu() {
        let a = generate::<f64>("poisson3d:10").unwrap();
        let b = CgSystem::ones_solution(&a).b;
        let mut plan = cpu_plan("csr", &a);
        let (x0, r0) = cg(&mut plan, &b, &SolveOptions::default()).unwrap();
        let (x1, r1) = cg_single_reduction(&mut plan, &b, &SolveOptions::default()).unwrap();
        assert_eq!(r1.stop, Stop::Converged);
        assert!(r1.iterations.abs_diff(r0.iterations) <= 2);
        assert!(x0.iter().zip(&x1).all(|(p, q)| (p - q).abs() < 1e-7));
        let _guard = crate::methods::testmats::gpu_test_lock();
        if crate::testing::gpu_or_skip("single_reduction_cg_matches_cg_on_cpu_and_gpu").is_none() {
            return;
        }
        let mut gplan = Plan::new("csr-vector", &a, &PlanOptions::default()).unwrap();
        for graph in [true, false] {
            let opts = SolveOptions {
                graph,
                check_every: 7,
                ..SolveOptions::default()
            };
            let (xg, rg) = cg_single_reduction(&mut gplan, &b, &opts).unwrap();
            assert_eq!(
                (rg.stop, rg.backend),
                (Stop::Converged, Backend::Gpu),
                "graph {graph}"
            );
            assert!(rg.iterations.abs_diff(r1.iterations) <= 1, "graph {graph}");
            assert!(
                xg.iter().zip(&x1).all(|(p, q)| (p - q).abs() < 1e-6),
                "graph {graph}"
            );
        }
    }

    #[test]
    fn cg_in_f32_reaches_its_tolerance() {
        let a = generate::<f32>("poisson3d:8").unwrap();
        let b = CgSystem::ones_solution(&a).b;
        let mut plan = cpu_plan("csr", &a);
        let opts = SolveOptions {
            tol: 1e-5,
            ..SolveOptions::default()
        };
        let (x, rep) = cg(&mut plan, &b, &opts).unwrap();
        assert_eq!(rep.stop, Stop::Converged);
        assert!(x.iter().all(|v| (v - 1.0).abs() < 1e-3));
    }

    #[test]
    fn cg_reports_breakdown_on_an_indefinite_matrix_and_rejects_bad_input() {
        let a = Csr::<f64>::new(2, 2, vec![0, 1, 2], vec![0, 1], vec![1.0, -1.0]).unwrap();
        let mut plan = cpu_plan("csr", &a);
        let (_, rep) = cg(&mut plan, &[0.0, 1.0], &SolveOptions::default()).unwrap();
        assert_eq!(rep.stop, Stop::Breakdown);
        assert!(cg(&mut plan, &[1.0], &SolveOptions::default()).is_err());
        let wide = Csr::<f64>::new(1, 2, vec![0, 1], vec![0], vec![1.0]).unwrap();
        let mut plan = cpu_plan("csr", &wide);
        assert!(cg(&mut plan, &[1.0], &SolveOptions::default()).is_err());
    }

    #[test]
    fn cg_stops_at_max_iter_and_on_a_zero_rhs() {
        let a = generate::<f64>("poisson2d:16").unwrap();
        let b = CgSystem::ones_solution(&a).b;
        let mut plan = cpu_plan("csr", &a);
        let opts = SolveOptions {
            max_iter: 3,
            ..SolveOptions::default()
        };
        let (_, rep) = cg(&mut plan, &b, &opts).unwrap();
        assert_eq!((rep.stop, rep.iterations), (Stop::MaxIterations, 3));
        let zero = vec![0.0; a.nrows()];
        let (x, rep) = cg(&mut plan, &zero, &SolveOptions::default()).unwrap();
        assert_eq!((rep.stop, rep.iterations), (Stop::Converged, 0));
        assert!(x.iter().all(|&v| v == 0.0));
    }
}
