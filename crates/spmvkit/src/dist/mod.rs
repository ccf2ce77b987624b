//! Multi-GPU SpMV through NCCL (issue #12). See `docs/multi-gpu.md` for the design.
//!
//! - [`partition`]: the distributed matrix, pure CPU: nnz-balanced row blocks, each split into a
//!   diagonal part (owned columns) and an off-diagonal part compressed to its ghost columns,
//!   the halo's send/receive lists, and the choice between all-gather and halo by volume.
//! - [`sim`]: the whole distributed SpMV simulated on the CPU with P ranks exchanging through
//!   memory (the correctness oracle of the distribution, and the no-GPU fallback).
//! - [`nccl`]: finding and loading `libnccl` (pip wheels ship `libnccl.so.2`, which cudarc does
//!   not look for), the per-rank GPU operator (diagonal SpMV overlapping the exchange on a comm
//!   stream, the off-diagonal part after it) and the all-reduce dot product for solvers.
//! - [`local`]: ranks that read only their rows (cache byte ranges, row-range generators), the
//!   partition from the row pointers alone, and the set-up exchange of ghost requests.
//! - [`ordered`]: the distributed solvers in a reordered numbering where every rank holds the
//!   whole matrix: PAPᵀ partitioned, the input permuted once, the answer once back, the halo
//!   volume before and after (issue #22).
//! - [`rank`]: one rank's run: distribute, connect, check against the oracle, time.
//! - [`solve`]: distributed CG and PageRank, written once over [`RowOperator`]: the simulation
//!   ([`SimRows`]) and one NCCL rank ([`NcclRows`]); dot products through the all-reduce.
//! - [`bootstrap`]: the rank environment and the TCP rendezvous that admits the ranks bringing
//!   the launch's token, checks that they hold the same input, and hands NCCL's unique id from
//!   rank 0 to the others (one host through the `spmv dist` launcher, several hosts by hand).
//! - [`launchers`]: the rank environment of standard launchers (`torchrun`, Open MPI, Slurm),
//!   parsed from a map of variables, and rank 0 serving the rendezvous at the master address.
//! - [`launch`]: that single-host launcher: one child process per GPU, supervised, their report
//!   lines collected.

pub mod bootstrap;
pub mod launch;
pub mod launchers;
pub mod local;
pub mod nccl;
pub mod ordered;
pub mod partition;
pub mod rank;
pub mod sim;
pub mod solve;

pub use partition::{
    Distribution, Partition, RankBlock, Segment, SendList, Strategy, StrategyChoice, Volumes,
};
pub use sim::{SimOperator, SimSummary};
pub use solve::{NcclRows, RowOperator, SimRows};
