//! The NCCL path (issue #12, parts 2 and 4): finding `libnccl`, the per-rank communicator, and
//! [`DistOperator`], one rank's share of a distributed y = αAx + βy on its GPU.
//!
//! Loading: cudarc loads NCCL by name (`libnccl.so`, `libnccl.so.13`, …) and panics when none
//! loads, while pip's `nvidia-nccl-cu13` ships only `.../nvidia/nccl/lib/libnccl.so.2`. So
//! [`loadable`] is checked before any NCCL call, and [`find_library`] searches
//! `SPMVKIT_NCCL_LIB`, `LD_LIBRARY_PATH`, the system library directories and Python's
//! `sys.path`; [`link_dir`] makes a private directory with a `libnccl.so` link to what it found,
//! which the launcher prepends to the ranks' `LD_LIBRARY_PATH` (read at process start).
//!
//! One call ([`DistOperator::apply`]): the compute stream ([`crate::gpu::Gpu::stream`]) records "x ready";
//! the comm stream waits for it and runs the exchange (a pack kernel and grouped
//! `ncclSend`/`ncclRecv` for the halo, or `ncclAllGather` of the padded chunks); meanwhile the
//! compute stream runs the diagonal part (y = αA_d·x + βy), then waits for the exchange and runs
//! the off-diagonal part (y = αA_o·x_ghost + y). Every rank enqueues the same collectives in the
//! same order, which NCCL requires.
//!
//! - [`discovery`]: finding `libnccl` and making it loadable in child processes;
//! - [`comm`]: the per-rank communicator (rendezvous, `ncclCommInitRank`, the all-reduce);
//! - [`operator`]: [`DistOperator`], one rank's share of the SpMV.

use cudarc::nccl::NcclType;

use crate::methods::PrepareFor;

pub mod comm;
pub mod discovery;
pub mod operator;

pub use comm::Communicator;
pub use discovery::{
    find_library, link_dir, loadable, search_dirs, version, NcclSetup, ENV_NCCL_LIB,
};
pub use operator::{DistOperator, OperatorInfo};

/// A scalar NCCL can move and spmvkit can compute with (f32, f64).
pub trait DistScalar: PrepareFor + NcclType {}
impl DistScalar for f32 {}
impl DistScalar for f64 {}
