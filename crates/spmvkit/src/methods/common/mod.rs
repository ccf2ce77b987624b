//! What the method rooms share on the host, the CPU twin of `gpu/prelude.cu`: the prelude holds
//! the device helpers every room's kernel uses, and this module holds their CPU mirrors and the
//! checks that keep a launch within what those helpers assume. Rooms import from here, never
//! from a sibling room.
//!
//! - [`warp`]: the simulated lanes and reductions (`warp_reduce_sum`,
//!   `warp_reduce_sum_width`, `cta_gather_sum`) and the kernels' store, bit for bit.
//! - [`checks`]: parameter checks shared by rooms (the block size).
//! - [`csr`]: a CSR matrix on the device and `CsrArgs`, the argument struct of the kernels that
//!   take one (its C twin is in the prelude).
//! - [`gpu`]: what every room's device layout shares around its launches (shape, footprint, the
//!   call's operands).
//! - [`room`]: what every room declares alike: its `KERNEL` (`room_kernel!`), its registered
//!   methods (`method!`), the `Layout` methods that only forward to its mirror, its upload or
//!   its matrix (`forward!`), and its device struct with the upload that makes it
//!   (`device_room!`).
//! - [`merge_path`]: the merge path's shares and carry runs (Merrill & Garland), cut once for
//!   `merge`'s SpMV tiles and the merge-path SpMM's teams.
//! - [`stored`]: the `values=` (f16, bf16, f32 under f64; issue #25) a room is prepared for.

pub(crate) mod checks;
pub(crate) mod csr;
pub(crate) mod gpu;
pub(crate) mod merge_path;
pub(crate) mod room;
pub(crate) mod stored;
pub(crate) mod warp;
