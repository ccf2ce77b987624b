//! What the method rooms share on the host, the CPU twin of `gpu/prelude.cu`: the prelude holds
//! the device helpers every room's kernel uses, and this module holds their CPU mirrors. Rooms
//! import from here, never from a sibling room.
//!
//! - [`warp`]: the simulated lanes and reductions (`warp_reduce_sum`,
//!   `warp_reduce_sum_width`, `cta_gather_sum`) and the kernels' store, bit for bit.

pub(crate) mod warp;
