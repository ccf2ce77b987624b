//! What every room's device layout shares around its own launches: the matrix shape and the
//! footprint that [`DeviceLayout`] reports, and the rule that a matrix without rows enqueues
//! nothing. A room writes its arrays and its launches ([`Launches`]) and boxes them with
//! [`Resident`]; the runtime sees a [`DeviceLayout`]. The operands x, y, α, β, which most
//! argument structs end with, are one flat group ([`Axpby`], from [`Call::axpby`]; y, α, β alone
//! are [`Ypby`]).

use cudarc::driver::CudaSlice;

use crate::error::Result;
use crate::gpu::{DevMut, DevRef, DeviceBlocks, Gpu};
use crate::matrix::MultiShape;
use crate::methods::DeviceLayout;
use crate::scalar::Scalar;

/// One call y = αAx + βy as a room's launches see it: the matrix shape and the operands, x at
/// least `ncols` and y at least `nrows` elements long (checked by `DeviceLayout::run`), `nrows`
/// at least 1.
pub(crate) struct Call<'a, T> {
    pub(crate) nrows: usize,
    pub(crate) ncols: usize,
    pub(crate) alpha: T,
    pub(crate) x: &'a CudaSlice<T>,
    pub(crate) beta: T,
    pub(crate) y: &'a mut CudaSlice<T>,
}

impl<'a, T: Scalar> Call<'a, T> {
    /// A multi-vector call's blocks on a matrix of `(nrows, ncols)` as the launches see them,
    /// with the shape apart (checked by the caller: [`DeviceBlocks::check`]).
    pub(crate) fn blocks(
        (nrows, ncols): (usize, usize),
        b: DeviceBlocks<'a, T>,
    ) -> (MultiShape, Self) {
        let DeviceBlocks {
            shape,
            alpha,
            x,
            beta,
            y,
        } = b;
        let c = Call {
            nrows,
            ncols,
            alpha,
            x,
            beta,
            y,
        };
        (shape, c)
    }

    /// The operands as the kernels take them.
    pub(crate) fn axpby(&mut self) -> Axpby<'_, T> {
        Axpby {
            x: DevRef::new(self.x),
            out: self.ypby(),
        }
    }

    /// The output side of the operands, for kernels that read no x (combine passes).
    pub(crate) fn ypby(&mut self) -> Ypby<'_, T> {
        Ypby {
            y: DevMut::new(self.y),
            alpha: self.alpha,
            beta: self.beta,
        }
    }
}

crate::kernel_args! {
    /// The output side of y = α·s + β·y, written out in place on the C side
    /// (`real_t* y; real_t alpha; real_t beta;`).
    pub(crate) flat struct Ypby<'a, T> {
        y: DevMut<'a, T>,
        alpha: T,
        beta: T,
    }
}

crate::kernel_args! {
    /// The operands of y = α·A·x + β·y, written out in place on the C side
    /// (`const real_t* x; real_t* y; real_t alpha; real_t beta;`).
    pub(crate) flat struct Axpby<'a, T> {
        x: DevRef<'a, T>,
        out: Ypby<'a, T>,
    }
}

/// A room's arrays on the device and the launches of one call.
pub(crate) trait Launches<T: Scalar>: Send + Sync {
    /// Enqueues one complete y = αAx + βy on `gpu.stream()` (as
    /// [`DeviceLayout::run_unchecked`]: everything the call needs, never synchronising).
    ///
    /// # Safety
    ///
    /// As [`DeviceLayout::run_unchecked`]: `c.x` and `c.y` are long enough for `c`'s shape, on
    /// `gpu`, the GPU the arrays were uploaded to.
    unsafe fn run(&self, gpu: &Gpu, c: Call<'_, T>) -> Result<()>;

    /// [`DeviceLayout::padded_dims`] when the room wants longer vectors than the shape (`None`,
    /// the default: the shape).
    fn padded_dims(&self) -> Option<(usize, usize)> {
        None
    }
}

/// A room's [`Launches`] with the shape and footprint of its layout: the room's
/// [`DeviceLayout`].
pub(crate) struct Resident<R> {
    dims: (usize, usize),
    bytes: usize,
    room: R,
}

impl<R> Resident<R> {
    /// `room`, the device copy of a matrix of shape `dims` (nrows, ncols) holding `bytes` device
    /// bytes.
    pub(crate) fn new(dims: (usize, usize), bytes: usize, room: R) -> Self {
        Resident { dims, bytes, room }
    }

    /// [`Resident::new`], boxed as the runtime holds it.
    pub(crate) fn boxed<T: Scalar>(
        dims: (usize, usize),
        bytes: usize,
        room: R,
    ) -> Box<dyn DeviceLayout<T>>
    where
        R: Launches<T> + 'static,
    {
        Box::new(Resident::new(dims, bytes, room))
    }
}

impl<T: Scalar, R: Launches<T>> DeviceLayout<T> for Resident<R> {
    fn dims(&self) -> (usize, usize) {
        self.dims
    }

    fn padded_dims(&self) -> (usize, usize) {
        self.room.padded_dims().unwrap_or(self.dims)
    }

    unsafe fn run_unchecked(
        &self,
        gpu: &Gpu,
        alpha: T,
        x: &CudaSlice<T>,
        beta: T,
        y: &mut CudaSlice<T>,
    ) -> Result<()> {
        let (nrows, ncols) = self.dims;
        if nrows == 0 {
            return Ok(());
        }
        let c = Call {
            nrows,
            ncols,
            alpha,
            x,
            beta,
            y,
        };
        // SAFETY: this function's contract, passed on.
        unsafe { self.room.run(gpu, c) }
    }

    fn footprint_bytes(&self) -> usize {
        self.bytes
    }
}
