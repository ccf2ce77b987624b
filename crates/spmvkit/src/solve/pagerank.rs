//! PageRank (Page, Brin, Motwani & Winograd 1999) by power iteration on the transition matrix
//! P = Aᵀ D⁻¹ of a graph's adjacency A (edge i → j when A_ij is stored; values are ignored, D
//! holds the out-degrees). A node without out-edges (dangling) spreads its rank uniformly:
//!
//! x' = d·P x + (d·Σ_{dangling} x_i + 1 − d) / n,
//!
//! from x = 1/n, stopping when ‖x' − x‖₁ ≤ tol. P x goes through the plan, so any registered
//! method does the SpMV. On the GPU the two rank vectors alternate (iteration i reads buffer
//! i mod 2), so a graph holds an even number of iterations. Each iteration computes the dangling
//! mass of its new ranks for the next one (`PageRankIteration`, shared with the NCCL ranks);
//! the mass of the start is computed once before the first.

use cudarc::driver::CudaSlice;
use rayon::prelude::*;

use super::kernels::{
    DistPrCheckArgs, DistPrUpdateArgs, PartialsArgs, PrDanglingArgs, PrUpdateArgs,
};
use super::{
    dist_sum, drive, grid, grid_blocks, initial_scalars, Reduce, Renumbering, SolveOptions,
    SolveReport, KERNELS, S_ITER, S_RES,
};
use crate::error::Result;
use crate::gpu::{kernel_int, DevMut, DevRef, Double, Gpu, Kernel};
use crate::matrix::Csr;
use crate::methods::{Plan, PrepareFor};
use crate::scalar::{Idx, Scalar};

/// PageRank's parameters.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct PageRankOptions {
    /// The damping factor d (the probability of following a link), in [0, 1).
    pub damping: f64,
    /// Tolerance (L1 change of the ranks), iteration limit, check interval, graphs.
    pub solve: SolveOptions,
}

impl Default for PageRankOptions {
    /// d = 0.85, tol 1e-6 (L1), at most 1000 iterations, a check every 10, graphs on.
    fn default() -> Self {
        PageRankOptions {
            damping: 0.85,
            solve: SolveOptions {
                tol: 1e-6,
                max_iter: 1000,
                ..SolveOptions::default()
            },
        }
    }
}

/// A graph ready for PageRank: its transition matrix and its dangling nodes.
pub struct PageRankGraph<T> {
    /// P = Aᵀ D⁻¹: P_ji = 1 / outdeg(i) for every edge i → j.
    pub transition: Csr<T>,
    /// Nodes without out-edges, ascending.
    pub dangling: Vec<Idx>,
}

impl<T: Scalar> PageRankGraph<T> {
    /// Builds P and the dangling list from a square adjacency matrix.
    ///
    /// ```
    /// use spmvkit::{Csr, solve::PageRankGraph};
    /// // 0 → 1, 0 → 2, 1 → 2; node 2 is dangling.
    /// let a = Csr::<f64>::new(3, 3, vec![0, 2, 3, 3], vec![1, 2, 2], vec![1.0; 3]).unwrap();
    /// let g = PageRankGraph::from_adjacency(&a).unwrap();
    /// assert_eq!(g.dangling, vec![2]);
    /// assert_eq!(g.transition.row(2), (&[0u32, 1][..], &[0.5, 1.0][..]));
    /// ```
    pub fn from_adjacency(adj: &Csr<T>) -> Result<Self> {
        crate::matrix::check_square(
            "PageRank needs a square adjacency matrix",
            adj.nrows(),
            adj.ncols(),
        )?;
        let rp = adj.row_ptr();
        let scaled: Vec<T> = (0..adj.nrows())
            .into_par_iter()
            .flat_map_iter(|i| {
                let len = (rp[i + 1] - rp[i]) as usize;
                std::iter::repeat_n(T::from_f64(1.0 / len.max(1) as f64), len)
            })
            .collect();
        let dangling = (0..adj.nrows())
            .filter(|&i| rp[i + 1] == rp[i])
            .map(|i| i as Idx)
            .collect();
        let scaled = Csr::with_pattern(adj.pattern().clone(), scaled)?;
        Ok(PageRankGraph {
            transition: scaled.transpose(),
            dangling,
        })
    }
}

/// The reference: the same power iteration in f64, serial, pushing rank along the adjacency's
/// rows (no transition matrix, no plan). Returns the ranks and the iterations.
pub fn pagerank_reference<T: Scalar>(adj: &Csr<T>, opts: &PageRankOptions) -> (Vec<f64>, usize) {
    let n = adj.nrows();
    if n == 0 {
        return (Vec::new(), 0);
    }
    let d = opts.damping;
    let mut x = vec![1.0 / n as f64; n];
    let mut y = vec![0.0; n];
    let mut it = 0;
    while it < opts.solve.max_iter {
        y.iter_mut().for_each(|v| *v = 0.0);
        let mut mass = 0.0;
        for (i, &xi) in x.iter().enumerate() {
            let (cols, _) = adj.row(i);
            if cols.is_empty() {
                mass += xi;
            } else {
                let share = xi / cols.len() as f64;
                for &j in cols {
                    y[j as usize] += share;
                }
            }
        }
        let base = (d * mass + 1.0 - d) / n as f64;
        let mut err = 0.0;
        for (xi, yi) in x.iter_mut().zip(&y) {
            let v = d * yi + base;
            err += (v - *xi).abs();
            *xi = v;
        }
        it += 1;
        if err <= opts.solve.tol {
            break;
        }
    }
    (x, it)
}

/// PageRank with the SpMV of `plan`, a plan of the transition matrix P
/// ([`PageRankGraph::transition`]), on the plan's backend. Returns the ranks (summing to 1).
/// Through a reordered plan ([`crate::PlanOptions::reorder`], Q) it iterates on QPQᵀ in the
/// new numbering: the dangling nodes are renumbered once (the start and teleport vectors are
/// uniform, the same in any numbering), no permutation runs inside the loop, and the ranks are
/// permuted back once at the end.
///
/// ```
/// use spmvkit::{gen, solve, Backend, Plan, PlanOptions};
/// let adj = gen::generate_f64("kron:8").unwrap();
/// let g = solve::PageRankGraph::from_adjacency(&adj).unwrap();
/// let opts = PlanOptions { backend: Some(Backend::Cpu), ..PlanOptions::default() };
/// let mut plan = Plan::new("csr", &g.transition, &opts).unwrap();
/// let pr = solve::PageRankOptions::default();
/// let (x, report) = solve::pagerank(&mut plan, &g.dangling, &pr).unwrap();
/// assert_eq!(report.stop, solve::Stop::Converged);
/// assert!((x.iter().sum::<f64>() - 1.0).abs() < 1e-9);
/// ```
pub fn pagerank<T: PrepareFor>(
    plan: &mut Plan<T>,
    dangling: &[Idx],
    opts: &PageRankOptions,
) -> Result<(Vec<T>, SolveReport)> {
    let n = crate::matrix::check_square(
        "PageRank needs a square transition matrix",
        plan.nrows(),
        plan.ncols(),
    )?;
    super::rows::check_pagerank(n, dangling, opts)?;
    match plan.gpu().cloned() {
        Some(gpu) if n > 0 => pagerank_gpu(plan, &gpu, dangling, opts),
        // The CPU path: the host iteration over the whole plan as one rank.
        _ => super::rows::PlanRows::solve(plan, |rows, to| {
            super::rows::pagerank(rows, &to.set(dangling)?, opts)
        }),
    }
}

/// The ranks an iteration reads and the ones it writes.
pub(crate) enum RankVectors<'v, T> {
    /// From `old` into `new`: the single-GPU solver's two alternating buffers (`pr_update`).
    Alternate {
        old: &'v CudaSlice<T>,
        new: &'v mut CudaSlice<T>,
    },
    /// In place: a rank's rows, the operator's x, which its exchange reads (`dist_pr_update`;
    /// lent shared, as the operator lends x and y together).
    InPlace(&'v CudaSlice<T>),
}

/// The device-resident PageRank iteration after y = P x, written once for the single-GPU solver
/// ([`pagerank`]) and the distributed one (`dist::NcclRows::pagerank`): the update writes the
/// new ranks and the block partials of their L1 change, `pr_dangling` the partials of the
/// dangling mass of the new ranks, for the next iteration. Between the partials and the scalar
/// kernels sits [`Reduce`]: on one GPU `pr_check` and `pr_mass` read them; on NCCL ranks both are
/// summed into `red` and all-reduced together (one all-reduce per iteration), then
/// `dist_pr_check` reads both sums.
pub(crate) struct PageRankIteration<T: Scalar> {
    k_update: Kernel<PrUpdateArgs<'static, T>>,
    k_update_in_place: Kernel<DistPrUpdateArgs<'static, T>>,
    k_dang: Kernel<PrDanglingArgs<'static, T>>,
    k_mass: Kernel<PartialsArgs<'static>>,
    k_check: Kernel<PartialsArgs<'static>>,
    k_dist_check: Kernel<DistPrCheckArgs<'static>>,
    /// Local rows, and the global node count as the in-place update reads it.
    n_i: i32,
    n_global: Double,
    nd_i: i32,
    nb: usize,
    nbd: usize,
    damping: Double,
    dang: CudaSlice<Idx>,
    part: CudaSlice<f64>,
    /// The solver scalars ([`super::S_LEN`]).
    pub s: CudaSlice<f64>,
}

impl<T: Scalar> PageRankIteration<T> {
    /// The kernels and buffers for `len` local rows of an `n`-node graph, `dangling` the local
    /// indices of its dangling rows, from the scalars `s0`; `what` names the rows and the
    /// dangling nodes in errors.
    pub(crate) fn new(
        gpu: &Gpu,
        len: usize,
        n: usize,
        dangling: &[Idx],
        damping: f64,
        s0: &[f64],
        what: [&'static str; 2],
    ) -> Result<Self> {
        let nb = grid_blocks(len);
        let nbd = grid_blocks(dangling.len());
        Ok(PageRankIteration {
            k_update: gpu.kernel::<T, _>(&KERNELS, "pr_update")?,
            k_update_in_place: gpu.kernel::<T, _>(&KERNELS, "dist_pr_update")?,
            k_dang: gpu.kernel::<T, _>(&KERNELS, "pr_dangling")?,
            k_mass: gpu.kernel::<T, _>(&KERNELS, "pr_mass")?,
            k_check: gpu.kernel::<T, _>(&KERNELS, "pr_check")?,
            k_dist_check: gpu.kernel::<T, _>(&KERNELS, "dist_pr_check")?,
            n_i: kernel_int(what[0], len)?,
            n_global: Double(n as f64),
            nd_i: kernel_int(what[1], dangling.len())?,
            nb,
            nbd,
            damping: Double(damping),
            dang: gpu.upload(dangling)?,
            part: gpu.alloc_zeros(nb.max(nbd))?,
            s: gpu.upload(s0)?,
        })
    }

    /// The block partials of the dangling mass of `x` (`pr_dangling`).
    fn dangling(&self, gpu: &Gpu, x: &CudaSlice<T>) -> Result<()> {
        let args = PrDanglingArgs {
            x: DevRef::new(x),
            dang: DevRef::new(&self.dang),
            nd: self.nd_i,
            part: DevMut::doubles_scratch(&self.part),
            s: DevRef::doubles(&self.s),
        };
        // SAFETY: `dang` holds nd indices below x's length, `part` max(nb, nbd) values, `s`
        // S_LEN; `part` is lent once.
        unsafe { gpu.launch(&self.k_dang, grid(self.nbd), &args) }
    }

    /// The one-block kernel `k` (`pr_check` or `pr_mass`) that sums the first `nb` partials into
    /// the scalars.
    fn partials(&self, gpu: &Gpu, k: &Kernel<PartialsArgs<'static>>, nb: usize) -> Result<()> {
        let args = PartialsArgs {
            s: DevMut::doubles_scratch(&self.s),
            part: DevRef::doubles(&self.part),
            nb: nb as i32,
        };
        // SAFETY: `part` holds at least nb values and `s` S_LEN; `s` is lent once.
        unsafe { gpu.launch(k, grid(1), &args) }
    }

    /// On one GPU, the dangling mass of `x` for the next iteration (nothing to launch without
    /// dangling nodes: the mass stays 0).
    pub(crate) fn mass(&self, gpu: &Gpu, x: &CudaSlice<T>) -> Result<()> {
        if self.nd_i == 0 {
            return Ok(());
        }
        self.dangling(gpu, x)?;
        self.partials(gpu, &self.k_mass, self.nbd)
    }

    /// One iteration after y = P x (y and the rank vectors hold at least the local rows).
    pub(crate) fn step(
        &self,
        gpu: &Gpu,
        y: &CudaSlice<T>,
        ranks: RankVectors<'_, T>,
        reduce: &mut Reduce<'_>,
    ) -> Result<()> {
        // SAFETY (both updates): the vectors hold the local rows, `part` max(nb, nbd) values and
        // `s` S_LEN; x (updated in place) and `part` are each lent once per launch.
        let new: &CudaSlice<T> = match ranks {
            RankVectors::Alternate { old, new } => {
                let args = PrUpdateArgs {
                    y: DevRef::new(y),
                    xold: DevRef::new(old),
                    xnew: DevMut::new(&mut *new),
                    n: self.n_i,
                    damping: self.damping,
                    part: DevMut::doubles_scratch(&self.part),
                    s: DevRef::doubles(&self.s),
                };
                unsafe { gpu.launch(&self.k_update, grid(self.nb), &args) }?;
                new
            }
            RankVectors::InPlace(x) => {
                let args = DistPrUpdateArgs {
                    x: DevMut::scratch(x),
                    y: DevRef::new(y),
                    n: self.n_i,
                    n_global: self.n_global,
                    damping: self.damping,
                    part: DevMut::doubles_scratch(&self.part),
                    s: DevRef::doubles(&self.s),
                };
                unsafe { gpu.launch(&self.k_update_in_place, grid(self.nb), &args) }?;
                x
            }
        };
        match reduce {
            Reduce::Local => {
                self.partials(gpu, &self.k_check, self.nb)?;
                self.mass(gpu, new)
            }
            Reduce::Ranks {
                k_sum,
                red,
                all_reduce,
            } => {
                let (part, s) = (&self.part, &self.s);
                dist_sum(gpu, k_sum, red, 0, part, self.nb, s)?;
                self.dangling(gpu, new)?;
                dist_sum(gpu, k_sum, red, 1, part, self.nbd, s)?;
                // one all-reduce: this iteration's L1 change and the next iteration's mass
                all_reduce(red)?;
                let args = DistPrCheckArgs {
                    s: DevMut::doubles_scratch(s),
                    red: DevRef::doubles(red),
                };
                // SAFETY: `red` holds 2 values and `s` S_LEN; `s` is lent once.
                unsafe { gpu.launch(&self.k_dist_check, grid(1), &args) }
            }
        }
    }
}

fn pagerank_gpu<T: PrepareFor>(
    plan: &Plan<T>,
    gpu: &Gpu,
    dangling: &[Idx],
    opts: &PageRankOptions,
) -> Result<(Vec<T>, SolveReport)> {
    let n = plan.nrows();
    let k = opts.solve.check_every.div_ceil(2) * 2;
    let s0 = initial_scalars(0.0, opts.solve.tol, opts.solve.max_iter);
    let what = ["pagerank: nodes", "pagerank: dangling nodes"];
    // with a reordering the iteration runs in the plan's numbering, from there to the end
    let to = Renumbering(plan.permutation());
    let dangling = to.set(dangling)?;
    let it = PageRankIteration::new(gpu, n, n, &dangling, opts.damping, &s0, what)?;
    let start = vec![T::from_f64(1.0 / n as f64); n];
    let mut bufs: [CudaSlice<T>; 2] = [gpu.upload(&start)?, gpu.upload(&start)?];
    let mut y: CudaSlice<T> = gpu.alloc_zeros(n)?;
    // the dangling mass of the start, which every iteration then computes for the next
    it.mass(gpu, &bufs[0])?;
    gpu.synchronize()?;
    let driven = drive(gpu, &it.s, k, opts.solve.max_iter, opts.solve.graph, |i| {
        let (lo, hi) = bufs.split_at_mut(1);
        let (old, new) = if i % 2 == 0 {
            (&lo[0], &mut hi[0])
        } else {
            (&hi[0], &mut lo[0])
        };
        plan.apply_device_permuted(T::one(), old, T::zero(), &mut y)?;
        let ranks = RankVectors::Alternate { old, new };
        it.step(gpu, &y, ranks, &mut Reduce::Local)
    })?;
    let iterations = driven.s[S_ITER] as usize;
    let mut x = vec![T::zero(); n];
    gpu.download(&bufs[iterations % 2], &mut x)?;
    let residual = driven.s[S_RES];
    let notes = plan.fallback_note().map(String::from).into_iter().collect();
    let mut report = driven.report(residual, notes);
    if k != opts.solve.check_every {
        report.notes.push(format!(
            "check interval rounded up to {k} (the two rank buffers alternate)"
        ));
    }
    Ok((to.back(x)?, report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::generate;
    use crate::methods::Backend;
    use crate::methods::PlanOptions;
    use crate::solve::Stop;

    fn run_cpu<T: PrepareFor>(
        method: &str,
        adj: &Csr<T>,
        opts: &PageRankOptions,
    ) -> (Vec<T>, SolveReport) {
        let g = PageRankGraph::from_adjacency(adj).unwrap();
        let po = PlanOptions {
            backend: Some(Backend::Cpu),
            ..PlanOptions::default()
        };
        let mut plan = Plan::new(method, &g.transition, &po).unwrap();
        pagerank(&mut plan, &g.dangling, opts).unwrap()
    }

    #[test]
    fn pagerank_of_a_handmade_graph_matches_the_closed_form() {
        // A 3-cycle 0 → 1 → 2 → 0: every rank is 1/3.
        let a = Csr::<f64>::new(3, 3, vec![0, 1, 2, 3], vec![1, 2, 0], vec![1.0; 3]).unwrap();
        let (x, rep) = run_cpu("csr", &a, &PageRankOptions::default());
        assert_eq!(rep.stop, Stop::Converged);
        assert!(x.iter().all(|v| (v - 1.0 / 3.0).abs() < 1e-9));
        // A star into node 0 with node 0 dangling: by symmetry nodes 1..4 rank alike, and
        // x0 = d·(x0/5 + 4·x1) + ... is solved by the reference.
        let star = Csr::<f64>::new(5, 5, vec![0, 0, 1, 2, 3, 4], vec![0; 4], vec![1.0; 4]).unwrap();
        let (x, _) = run_cpu("csr", &star, &PageRankOptions::default());
        let (r, _) = pagerank_reference(&star, &PageRankOptions::default());
        assert!((x.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(x.iter().zip(&r).all(|(a, b)| (a - b).abs() < 1e-9));
        assert!(x[0] > x[1] && (x[1] - x[4]).abs() < 1e-15);
    }

    #[test]
    fn pagerank_on_kron_matches_the_reference_in_both_precisions() {
        let opts = PageRankOptions {
            solve: SolveOptions {
                tol: 1e-9,
                ..PageRankOptions::default().solve
            },
            ..PageRankOptions::default()
        };
        let adj = generate::<f64>("kron:10").unwrap();
        let (r, rit) = pagerank_reference(&adj, &opts);
        for method in ["csr", "merge", "csr-vector"] {
            let (x, rep) = run_cpu(method, &adj, &opts);
            assert_eq!(rep.stop, Stop::Converged, "{method}");
            assert_eq!(rep.iterations, rit, "{method}");
            let l1: f64 = x.iter().zip(&r).map(|(a, b)| (a - b).abs()).sum();
            assert!(l1 < 1e-10, "{method}: L1 error {l1}");
            assert!((x.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        }
        let adj32 = generate::<f32>("kron:10").unwrap();
        let opts32 = PageRankOptions::default();
        let (x, rep) = run_cpu("csr", &adj32, &opts32);
        assert_eq!(rep.stop, Stop::Converged);
        let (r, _) = pagerank_reference(&adj32, &opts32);
        let l1: f64 = x.iter().zip(&r).map(|(a, b)| (a.to_f64() - b).abs()).sum();
        assert!(l1 < 1e-4, "f32 L1 error {l1}");
    }

    #[test]
    fn pagerank_rejects_bad_input() {
        let wide = Csr::<f64>::new(1, 2, vec![0, 1], vec![1], vec![1.0]).unwrap();
        assert!(PageRankGraph::from_adjacency(&wide).is_err());
        let a = Csr::<f64>::identity(3).unwrap();
        let g = PageRankGraph::from_adjacency(&a).unwrap();
        let po = PlanOptions {
            backend: Some(Backend::Cpu),
            ..PlanOptions::default()
        };
        let mut plan = Plan::new("csr", &g.transition, &po).unwrap();
        let bad = PageRankOptions {
            damping: 1.0,
            ..PageRankOptions::default()
        };
        assert!(pagerank(&mut plan, &[], &bad).is_err());
        assert!(pagerank(&mut plan, &[7], &PageRankOptions::default()).is_err());
    }
}
