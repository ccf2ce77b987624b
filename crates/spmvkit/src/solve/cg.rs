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
use super::rows::PlanRows;
use super::{
    check_options, dist_sum, dot_cpu, drive, grid, grid_blocks, initial_scalars, Driven, Reduce,
    Renumbering, SolveOptions, SolveReport, KERNELS, S_DONE, S_RES,
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
/// Through a reordered plan ([`crate::PlanOptions::reorder`], P) it iterates on B = PAPᵀ from
/// Pb and permutes the answer back once: no permutation inside the loop.
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
    solve_cg::<T, CgIteration<T>>(plan, b, opts, |rows, b| super::rows::cg(rows, b, opts))
}

/// Solves A x = b by single-reduction CG (Chronopoulos & Gear; `Cg1Iteration` on the GPU,
/// [`super::rows::cg_single_reduction`] on the CPU) with the SpMV of `plan`, from x = 0: the
/// iterates of [`cg`] with the two dot products of an iteration reduced together; in the
/// permuted space of a reordered plan as [`cg`].
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
    solve_cg::<T, Cg1Iteration<T>>(plan, b, opts, |rows, b| {
        super::rows::cg_single_reduction(rows, b, opts)
    })
}

/// Either CG through a plan: the checks of the system, then on the GPU the device iteration `I`
/// ([`cg_device`]), on the CPU `host` (the host iteration over [`PlanRows`] with b in the plan's
/// numbering).
fn solve_cg<T: PrepareFor, I: DeviceCg<T>>(
    plan: &mut Plan<T>,
    b: &[T],
    opts: &SolveOptions,
    host: impl FnOnce(&mut PlanRows<'_, T>, &[T]) -> Result<(Vec<T>, SolveReport)>,
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
    match plan.gpu().cloned() {
        Some(gpu) => cg_device::<T, I>(plan, &gpu, b, opts),
        // The CPU path: the host iteration over the whole plan as one rank.
        None => PlanRows::solve(plan, |rows, to| host(rows, &to.vector(b)?)),
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

/// How a device CG starts: ‖b‖², the stopping threshold on ρ ([`super::cg_threshold`]), the
/// options, and what names the rows in errors.
pub(crate) struct CgStart<'o> {
    pub(crate) bb: f64,
    pub(crate) thresh: f64,
    pub(crate) opts: &'o SolveOptions,
    pub(crate) what: &'static str,
}

impl<'o> CgStart<'o> {
    pub(crate) fn new(bb: f64, thresh: f64, opts: &'o SolveOptions, what: &'static str) -> Self {
        CgStart {
            bb,
            thresh,
            opts,
            what,
        }
    }
}

/// What both device CG iterations ([`CgIteration`], [`Cg1Iteration`]) hold alike: the row
/// count as the kernels take it, the reduction grid, the iterate and the solver scalars.
pub(crate) struct CgState<T: Scalar> {
    n_i: i32,
    nb: usize,
    /// The iterate, from 0.
    x: CudaSlice<T>,
    /// The solver scalars ([`super::S_LEN`]).
    s: CudaSlice<f64>,
}

impl<T: Scalar> CgState<T> {
    /// x = 0 over `n` rows and the scalars of `start` (done at once when ‖b‖² is at most the
    /// threshold).
    fn new(gpu: &Gpu, n: usize, start: &CgStart<'_>) -> Result<Self> {
        let CgStart { bb, thresh, .. } = *start;
        let mut s0 = initial_scalars(bb, thresh, start.opts.max_iter);
        if bb <= thresh {
            s0[S_DONE] = 1.0;
        }
        Ok(CgState {
            n_i: kernel_int(start.what, n)?,
            nb: grid_blocks(n),
            x: gpu.alloc_zeros(n)?,
            s: gpu.upload(&s0)?,
        })
    }

    /// The scalars, which [`super::drive`] watches.
    pub(crate) fn scalars(&self) -> &CudaSlice<f64> {
        &self.s
    }

    /// The iterate, downloaded, and the report of a driven solve of ‖b‖² = `bb` (`notes`
    /// first; the breakdown's explanation when it broke down).
    pub(crate) fn finish(
        &self,
        gpu: &Gpu,
        driven: Driven,
        bb: f64,
        notes: Vec<String>,
    ) -> Result<(Vec<T>, SolveReport)> {
        let mut x = vec![T::zero(); self.x.len()];
        gpu.download(&self.x, &mut x)?;
        let residual = relative(driven.s[S_RES], bb);
        let mut report = driven.report(residual, notes);
        super::rows::note_breakdown(&mut report);
        Ok((x, report))
    }
}

/// A device-resident CG iteration, written once for one GPU ([`cg_device`]) and the NCCL
/// ranks (`dist::NcclRows::cg`, `cg_single_reduction`): after v = A u, [`DeviceCg::step`]
/// updates u (CG's p, single-reduction CG's r) and its own vectors, reducing its dot products
/// through [`Reduce`]. Both start with u = b.
pub(crate) trait DeviceCg<T: Scalar>: Sized {
    /// The sums one all-reduce carries on ranks (the length of `Reduce::Ranks`'s buffer).
    const SUMS: usize;
    /// The kernels and vectors for the right-hand side `b` (this process's rows), started as
    /// `start` says.
    fn new(gpu: &Gpu, b: &[T], start: &CgStart<'_>) -> Result<Self>;
    /// One iteration after v = A u (u and v hold at least the rows).
    fn step(
        &self,
        gpu: &Gpu,
        u: &CudaSlice<T>,
        v: &CudaSlice<T>,
        reduce: &mut Reduce<'_>,
    ) -> Result<()>;
    /// The iterate and the scalars.
    fn state(&self) -> &CgState<T>;
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
    st: CgState<T>,
    /// The residual, from b.
    r: CudaSlice<T>,
    part: CudaSlice<f64>,
}

impl<T: Scalar> CgIteration<T> {
    /// The partials of the last dot product as the next kernel reads them: the array and its
    /// length.
    fn reduced<'s>(
        &'s self,
        gpu: &Gpu,
        reduce: &'s mut Reduce<'_>,
    ) -> Result<(&'s CudaSlice<f64>, i32)> {
        match reduce {
            Reduce::Local => Ok((&self.part, self.st.nb as i32)),
            Reduce::Ranks {
                k_sum,
                red,
                all_reduce,
            } => {
                dist_sum(gpu, k_sum, red, 0, &self.part, self.st.nb, &self.st.s)?;
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
            s: DevMut::doubles_scratch(&self.st.s),
            part: DevRef::doubles(sum),
            nb: len,
        };
        // SAFETY: the reduced array holds `len` values and `s` S_LEN; `s` is lent once.
        unsafe { gpu.launch(k, grid(1), &args) }
    }
}

impl<T: Scalar> DeviceCg<T> for CgIteration<T> {
    const SUMS: usize = 1;

    /// The kernels, x = 0, r = b and the scalars.
    fn new(gpu: &Gpu, b: &[T], start: &CgStart<'_>) -> Result<Self> {
        let st = CgState::new(gpu, b.len(), start)?;
        Ok(CgIteration {
            k_dot: gpu.kernel::<T, _>(&KERNELS, "cg_dot_pq")?,
            k_alpha: gpu.kernel::<T, _>(&KERNELS, "cg_alpha")?,
            k_update: gpu.kernel::<T, _>(&KERNELS, "cg_update")?,
            k_beta: gpu.kernel::<T, _>(&KERNELS, "cg_beta")?,
            k_p: gpu.kernel::<T, _>(&KERNELS, "cg_p")?,
            r: gpu.upload(b)?,
            part: gpu.alloc_zeros(st.nb)?,
            st,
        })
    }

    /// One iteration after q = A p (p and q hold at least n values; p becomes r + βp).
    fn step(
        &self,
        gpu: &Gpu,
        p: &CudaSlice<T>,
        q: &CudaSlice<T>,
        reduce: &mut Reduce<'_>,
    ) -> Result<()> {
        let (nb, n, s) = (self.st.nb, self.st.n_i, &self.st.s);
        // SAFETY (every launch below): x, r, p and q hold at least n elements, `part` nb and `s`
        // S_LEN; the buffers written through a scratch pointer (x, r, p, `part`, `s`) are each
        // lent once per launch.
        let args = CgDotArgs {
            p: DevRef::new(p),
            q: DevRef::new(q),
            n,
            part: DevMut::doubles_scratch(&self.part),
            s: DevRef::doubles(s),
        };
        unsafe { gpu.launch(&self.k_dot, grid(nb), &args) }?;
        self.scalar_kernel(gpu, reduce, &self.k_alpha)?;
        let args = CgUpdateArgs {
            x: DevMut::scratch(&self.st.x),
            r: DevMut::scratch(&self.r),
            p: DevRef::new(p),
            q: DevRef::new(q),
            n,
            part: DevMut::doubles_scratch(&self.part),
            s: DevRef::doubles(s),
        };
        unsafe { gpu.launch(&self.k_update, grid(nb), &args) }?;
        self.scalar_kernel(gpu, reduce, &self.k_beta)?;
        let args = CgPArgs {
            p: DevMut::scratch(p),
            r: DevRef::new(&self.r),
            n,
            s: DevRef::doubles(s),
        };
        unsafe { gpu.launch(&self.k_p, grid(nb), &args) }
    }

    fn state(&self) -> &CgState<T> {
        &self.st
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
    st: CgState<T>,
    p: CudaSlice<T>,
    q: CudaSlice<T>,
    /// The partials of rᵀr (nb) then of wᵀr (nb).
    part: CudaSlice<f64>,
}

impl<T: Scalar> DeviceCg<T> for Cg1Iteration<T> {
    const SUMS: usize = 2;

    /// The kernels, x = p = q = 0 over b's rows and the scalars (r = b is the caller's).
    fn new(gpu: &Gpu, b: &[T], start: &CgStart<'_>) -> Result<Self> {
        let n = b.len();
        let st = CgState::new(gpu, n, start)?;
        Ok(Cg1Iteration {
            k_dots: gpu.kernel::<T, _>(&KERNELS, "cg1_dots")?,
            k_scalars: gpu.kernel::<T, _>(&KERNELS, "cg1_scalars")?,
            k_update: gpu.kernel::<T, _>(&KERNELS, "cg1_update")?,
            k_sum2: gpu.kernel::<T, _>(&KERNELS, "dist_sum2")?,
            p: gpu.alloc_zeros(n)?,
            q: gpu.alloc_zeros(n)?,
            part: gpu.alloc_zeros(2 * st.nb)?,
            st,
        })
    }

    /// One iteration after w = A r (r and w hold at least n values; r is updated).
    fn step(
        &self,
        gpu: &Gpu,
        r: &CudaSlice<T>,
        w: &CudaSlice<T>,
        reduce: &mut Reduce<'_>,
    ) -> Result<()> {
        let (nb, n, s) = (self.st.nb, self.st.n_i, &self.st.s);
        // SAFETY (every launch below): x, r, p, q and w hold at least n elements, `part` 2·nb,
        // the reduced buffer at least 2 and `s` S_LEN; the buffers written through a scratch
        // pointer (x, r, p, q, `part`, `s`) are each lent once per launch.
        let args = Cg1DotsArgs {
            r: DevRef::new(r),
            w: DevRef::new(w),
            n,
            part: DevMut::doubles_scratch(&self.part),
            s: DevRef::doubles(s),
        };
        unsafe { gpu.launch(&self.k_dots, grid(nb), &args) }?;
        let scalars = |part: &CudaSlice<f64>, nb: usize, stride: usize| -> Result<()> {
            let args = Cg1ScalarsArgs {
                s: DevMut::doubles_scratch(s),
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
                    s: DevRef::doubles(s),
                };
                unsafe { gpu.launch(&self.k_sum2, grid(1), &args) }?;
                // the one all-reduce of the iteration: rᵀr and wᵀr together
                all_reduce(red)?;
                scalars(red, 1, 1)?;
            }
        }
        let args = Cg1UpdateArgs {
            x: DevMut::scratch(&self.st.x),
            r: DevMut::scratch(r),
            p: DevMut::scratch(&self.p),
            q: DevMut::scratch(&self.q),
            w: DevRef::new(w),
            n,
            s: DevRef::doubles(s),
        };
        unsafe { gpu.launch(&self.k_update, grid(nb), &args) }
    }

    fn state(&self) -> &CgState<T> {
        &self.st
    }
}

/// A device CG iteration `I` through `plan` on one GPU: with a reordering P it runs on
/// B = PAPᵀ, B(Px) = Pb, so it starts from Pb and gives Px, permuted back once at the end (no
/// permutation inside the loop). `check_every` iterations per check, captured into a CUDA
/// graph when `opts.graph`.
fn cg_device<T: PrepareFor, I: DeviceCg<T>>(
    plan: &Plan<T>,
    gpu: &Gpu,
    b: &[T],
    opts: &SolveOptions,
) -> Result<(Vec<T>, SolveReport)> {
    let bb = dot_cpu(b, b);
    let thresh = super::cg_threshold(bb, opts)?;
    let to = Renumbering(plan.permutation());
    let b = to.vector(b)?;
    let start = CgStart::new(bb, thresh, opts, "cg: rows");
    let it = I::new(gpu, &b, &start)?;
    let u = gpu.upload(&b)?;
    let mut v: CudaSlice<T> = gpu.alloc_zeros(b.len())?;
    gpu.synchronize()?;
    let s = it.state().scalars();
    let driven = drive(gpu, s, opts.check_every, opts.max_iter, opts.graph, |_| {
        plan.apply_device_permuted(T::one(), &u, T::zero(), &mut v)?;
        it.step(gpu, &u, &v, &mut Reduce::Local)
    })?;
    let notes = plan.fallback_note().map(String::from).into_iter().collect();
    let (x, report) = it.state().finish(gpu, driven, bb, notes)?;
    Ok((to.back(x)?, report))
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
