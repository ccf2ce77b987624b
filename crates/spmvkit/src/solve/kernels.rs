//! The solvers' kernel entries (`kernel.cu`) and their argument structs for the launch layer
//! (`gpu::launch`), declared once: the device CG and PageRank iterations (`cg.rs`,
//! `pagerank.rs`, written once for one GPU and the NCCL ranks of `dist/solve.rs`) and `dist_sum`
//! (`mod.rs`) launch them with `Gpu::launch`.
//!
//! Every entry keeps its parameter list (`params_entry`): the kernels read their vectors through
//! `__restrict__` parameters. The scalar array `s`, the block partials and the reduced sums are
//! `double` in both precisions ([`Double`]); the kernels reading only those take a struct
//! without `T`.

use crate::gpu::{DevMut, DevRef, Double, Kernels};
use crate::scalar::Idx;

crate::kernel_args! {
    /// `cg_dot_pq`'s parameters: the block partials of pᵀq.
    pub(crate) struct CgDotArgs<'a, T> {
        pub(crate) p: DevRef<'a, T>,
        pub(crate) q: DevRef<'a, T>,
        pub(crate) n: i32,
        pub(crate) part: DevMut<'a, Double>,
        pub(crate) s: DevRef<'a, Double>,
    }
}

crate::kernel_args! {
    /// The parameters of `cg_alpha`, `cg_beta`, `pr_mass` and `pr_check`: the scalars and the
    /// `nb` partials they sum.
    pub(crate) struct PartialsArgs<'a> {
        pub(crate) s: DevMut<'a, Double>,
        pub(crate) part: DevRef<'a, Double>,
        pub(crate) nb: i32,
    }
}

crate::kernel_args! {
    /// `cg_update`'s parameters: x += αp, r −= αq, the partials of rᵀr.
    pub(crate) struct CgUpdateArgs<'a, T> {
        pub(crate) x: DevMut<'a, T>,
        pub(crate) r: DevMut<'a, T>,
        pub(crate) p: DevRef<'a, T>,
        pub(crate) q: DevRef<'a, T>,
        pub(crate) n: i32,
        pub(crate) part: DevMut<'a, Double>,
        pub(crate) s: DevRef<'a, Double>,
    }
}

crate::kernel_args! {
    /// `cg_p`'s parameters: p = r + βp.
    pub(crate) struct CgPArgs<'a, T> {
        pub(crate) p: DevMut<'a, T>,
        pub(crate) r: DevRef<'a, T>,
        pub(crate) n: i32,
        pub(crate) s: DevRef<'a, Double>,
    }
}

crate::kernel_args! {
    /// `cg1_dots`'s parameters: the block partials of rᵀr and wᵀr (single-reduction CG).
    pub(crate) struct Cg1DotsArgs<'a, T> {
        pub(crate) r: DevRef<'a, T>,
        pub(crate) w: DevRef<'a, T>,
        pub(crate) n: i32,
        pub(crate) part: DevMut<'a, Double>,
        pub(crate) s: DevRef<'a, Double>,
    }
}

crate::kernel_args! {
    /// `cg1_scalars`'s parameters: the scalars, and the `nb` partials of rᵀr at `part` and of
    /// wᵀr `stride` values after them.
    pub(crate) struct Cg1ScalarsArgs<'a> {
        pub(crate) s: DevMut<'a, Double>,
        pub(crate) part: DevRef<'a, Double>,
        pub(crate) nb: i32,
        pub(crate) stride: i32,
    }
}

crate::kernel_args! {
    /// `cg1_update`'s parameters: p = r + βp, q = w + βq, x += αp, r −= αq.
    pub(crate) struct Cg1UpdateArgs<'a, T> {
        pub(crate) x: DevMut<'a, T>,
        pub(crate) r: DevMut<'a, T>,
        pub(crate) p: DevMut<'a, T>,
        pub(crate) q: DevMut<'a, T>,
        pub(crate) w: DevRef<'a, T>,
        pub(crate) n: i32,
        pub(crate) s: DevRef<'a, Double>,
    }
}

crate::kernel_args! {
    /// `dist_sum2`'s parameters: dst[0..2] = the sums of the two halves of the 2·`nb` partials.
    pub(crate) struct DistSum2Args<'a> {
        pub(crate) dst: DevMut<'a, Double>,
        pub(crate) part: DevRef<'a, Double>,
        pub(crate) nb: i32,
        pub(crate) s: DevRef<'a, Double>,
    }
}

crate::kernel_args! {
    /// `pr_dangling`'s parameters: the partials of x over the dangling nodes.
    pub(crate) struct PrDanglingArgs<'a, T> {
        pub(crate) x: DevRef<'a, T>,
        pub(crate) dang: DevRef<'a, Idx>,
        pub(crate) nd: i32,
        pub(crate) part: DevMut<'a, Double>,
        pub(crate) s: DevRef<'a, Double>,
    }
}

crate::kernel_args! {
    /// `pr_update`'s parameters: x_new from y = P x_old, the partials of the L1 change.
    pub(crate) struct PrUpdateArgs<'a, T> {
        pub(crate) y: DevRef<'a, T>,
        pub(crate) xold: DevRef<'a, T>,
        pub(crate) xnew: DevMut<'a, T>,
        pub(crate) n: i32,
        pub(crate) damping: Double,
        pub(crate) part: DevMut<'a, Double>,
        pub(crate) s: DevRef<'a, Double>,
    }
}

crate::kernel_args! {
    /// `dist_sum`'s parameters: dst[slot] = the sum of the `nb` partials.
    pub(crate) struct DistSumArgs<'a> {
        pub(crate) dst: DevMut<'a, Double>,
        pub(crate) slot: i32,
        pub(crate) part: DevRef<'a, Double>,
        pub(crate) nb: i32,
        pub(crate) s: DevRef<'a, Double>,
    }
}

crate::kernel_args! {
    /// `dist_pr_update`'s parameters: a rank's rows of x updated in place from y = P x.
    pub(crate) struct DistPrUpdateArgs<'a, T> {
        pub(crate) x: DevMut<'a, T>,
        pub(crate) y: DevRef<'a, T>,
        pub(crate) n: i32,
        pub(crate) n_global: Double,
        pub(crate) damping: Double,
        pub(crate) part: DevMut<'a, Double>,
        pub(crate) s: DevRef<'a, Double>,
    }
}

crate::kernel_args! {
    /// `dist_pr_check`'s parameters: the scalars and the all-reduced L1 change and mass.
    pub(crate) struct DistPrCheckArgs<'a> {
        pub(crate) s: DevMut<'a, Double>,
        pub(crate) red: DevRef<'a, Double>,
    }
}

/// The solvers' vector kernels with their entries.
pub const KERNELS: Kernels = Kernels::new(
    "spmvkit-solve",
    include_str!("kernel.cu"),
    &[
        CgDotArgs::params_entry("cg_dot_pq"),
        PartialsArgs::params_entry("cg_alpha"),
        CgUpdateArgs::params_entry("cg_update"),
        PartialsArgs::params_entry("cg_beta"),
        CgPArgs::params_entry("cg_p"),
        Cg1DotsArgs::params_entry("cg1_dots"),
        Cg1ScalarsArgs::params_entry("cg1_scalars"),
        Cg1UpdateArgs::params_entry("cg1_update"),
        DistSum2Args::params_entry("dist_sum2"),
        PrDanglingArgs::params_entry("pr_dangling"),
        PartialsArgs::params_entry("pr_mass"),
        PrUpdateArgs::params_entry("pr_update"),
        PartialsArgs::params_entry("pr_check"),
        DistSumArgs::params_entry("dist_sum"),
        DistPrUpdateArgs::params_entry("dist_pr_update"),
        DistPrCheckArgs::params_entry("dist_pr_check"),
    ],
);
