//! The operands of one multi-vector device call Y = αAX + βY (SpMM, issue #24; docs/spmm.md)
//! and their one check ([`DeviceBlocks::check`]): every device entry of the multi-vector path
//! (the plan's `apply_multi_device`, spmvkit's SpMM kernels, csr-packed's, cuSPARSE SpMM)
//! takes a [`DeviceBlocks`] and checks it against its own matrix before it enqueues anything,
//! so no safe call reaches a launch with blocks of another context or too short.

use cudarc::driver::CudaSlice;

use super::Gpu;
use crate::error::{Error, Result};
use crate::matrix::MultiShape;

/// X and Y of one call on the device, laid out as `shape` says (row-major: X entry (j, c) at
/// `j·k + c`; column-major: at `c·ncols + j`, Y likewise with `nrows`), with α and β.
pub struct DeviceBlocks<'a, T> {
    pub shape: MultiShape,
    pub alpha: T,
    pub x: &'a CudaSlice<T>,
    pub beta: T,
    pub y: &'a mut CudaSlice<T>,
}

impl<T> DeviceBlocks<'_, T> {
    /// The one check of a multi-vector device call on a matrix of `dims` (nrows, ncols) on
    /// `gpu`: X and Y in `gpu`'s CUDA context, k at least 1, X at least `ncols·k` and Y at least
    /// `nrows·k` entries ([`MultiShape::check`]). Errors name `what`, the block, the shape and
    /// the order.
    pub fn check(&self, what: &str, gpu: &Gpu, dims: (usize, usize)) -> Result<()> {
        let foreign = [("X", self.x.context()), ("Y", self.y.context())]
            .into_iter()
            .find(|(_, c)| !gpu.same_context(c));
        if let Some((which, _)) = foreign {
            return Err(Error::InvalidArgument(format!(
                "{what}: the {which} block belongs to another CUDA context than the GPU's \
                 (device {}, {})",
                gpu.ordinal(),
                gpu.name()
            )));
        }
        let (x, y) = (self.x.len(), self.y.len());
        self.shape.check(what, dims, x, y, false)
    }
}
