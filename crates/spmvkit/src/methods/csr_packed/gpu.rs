//! Upload and launch of `csr-packed`: the layout's streams on the device, one launch per call
//! of the entry point for the layout's value mode (and `prefetch`), persistent warps in blocks
//! of 256 threads, as many blocks as stay resident (CUDA's occupancy query), at most one warp
//! per slice or long row. The entries keep their `__restrict__` parameter list
//! ([`crate::gpu::launch::Abi::Params`]): the kernel's loads through them are non-coherent.
//! The k-vector kernel (issue #24, `multi.rs`) has its own copy of the streams
//! ([`PackedMultiDevice`]) and one entry per value mode and vectors per pass.


use super::multi::{pass_cols, x_load};
use super::{PackedLayout, ValueCodes, KERNEL, WARP};
use crate::error::{Error, Result};
use crate::gpu::{kernel_int, DeviceBlocks, Gpu, Kernel, Shape};
use crate::matrix::{DenseOrder, MultiShape};
use crate::methods::common::gpu::{Axpby, Call, Launches};
use crate::methods::common::room::device_room;
use crate::methods::spmm::{alignment, DeviceMultiLayout};
use crate::methods::Layout;
use crate::scalar::Scalar;

const BLOCK: u32 = super::BLOCK as u32;

crate::device_args! {
    /// A `csr-packed` layout's streams on the device.
    pub(super) struct PackedArrays<T> from l: &PackedLayout<T>;
    /// The parameters of every `csr_packed_*` entry (`PACKED_PARAMS` in kernel.cu); a flat
    /// group, the first part of the k-vector entries' [`PackedMultiArgs`].
    pub(super) flat struct PackedArgs<'a, T> {
        nslices: u32 = l.nslices() as u32,
        nlong: u32 = l.long_rows.len() as u32,
        lens: &[u8],
        rows: &[u32] = l.rows.as_deref().unwrap_or(&[]),
        has_rows: i32 = l.rows.is_some() as i32,
        grp: &[u32],
        col_off: &[u32],
        col_w: &[u8],
        cols: &[u32],
        vs: &[u8] = &l.vstream,
        raw: &[T],
        dict: &[T],
        long_rows: &[u32],
        long_ptr: &[u32],
        long_cols: &[u32],
        long_vals: &[T],
        axpby: Axpby<'a, T>,
    }
}

device_room! {
    /// `csr-packed` resident on the GPU (the kernel compiled first, so an NVRTC failure leaves
    /// nothing allocated).
    pub(super) struct PackedDevice<T> {
        k: Kernel<PackedArgs<'static, T>> = k,
        /// The work items: slices and long rows.
        items: usize = items,
        /// Resident blocks of the whole GPU (the persistent grid's size at most).
        max_blocks: usize = max_blocks,
        arrays: PackedArrays<T> = PackedArrays::upload(gpu, l)?,
    }
    fn upload(l: &PackedLayout<T>, gpu) -> Resident((l.nrows, l.ncols), l.footprint_bytes()) {
        let items = l.nslices() + l.long_rows.len();
        kernel_int("csr-packed work items (slices + long rows)", items)?;
        crate::gpu::check_int_loops("csr-packed", l.nrows, l.long_cols.len())?;
        let k = gpu.kernel_stored::<T, _>(&KERNEL, l.vcodes.entry(l.prefetch), l.storage)?;
        // Persistent warps: as many blocks as stay resident on every SM at once.
        let max_blocks = k.resident_ctas(gpu, BLOCK, 0)?;
    }
}

impl<T: Scalar> Launches<T> for PackedDevice<T> {
    unsafe fn run(&self, gpu: &Gpu, mut c: Call<'_, T>) -> Result<()> {
        if self.items == 0 {
            return Ok(());
        }
        let blocks = self
            .items
            .div_ceil(BLOCK as usize / WARP)
            .min(self.max_blocks);
        let args = self.arrays.args(c.axpby());
        // SAFETY: x and y are long enough (checked by DeviceLayout::run); the streams were built
        // by encode.rs, whose offsets, lengths and codes stay inside them and decode to columns
        // < ncols and rows < nrows.
        unsafe { gpu.launch(&self.k, Shape::ctas(blocks, BLOCK), &args) }
    }
}

crate::kernel_args! {
    /// The k-vector entries `csr_packed_mm_<mode>_c<C>` (`PACKED_MM_PARAMS` in kernel.cu): the
    /// SpMV entries' parameters with X and Y as x and y, then the block: k, the passes of C
    /// vectors, X entry (j, c) at `j·x_col + c·x_vec`, Y entry (i, c) at `i·y_row + c·y_vec`,
    /// and the values per X load (1, 2 or 4; more than 1 only row-major).
    pub(super) struct PackedMultiArgs<'a, T> {
        packed: PackedArgs<'a, T>,
        k: u32,
        npasses: u32,
        x_col: u32,
        x_vec: u32,
        y_row: u32,
        y_vec: u32,
        xvec: i32,
    }
}

/// The k-vector entry of value mode `v` with `c` vectors per pass.
pub(super) fn mm_entry(v: ValueCodes, c: usize) -> String {
    let mode = match v {
        ValueCodes::Const => "v0",
        ValueCodes::Bits(1) => "v1",
        ValueCodes::Bits(2) => "v2",
        ValueCodes::Bits(4) => "v4",
        ValueCodes::Bits(8) => "v8",
        ValueCodes::Bits(_) => "v16",
        ValueCodes::Raw => "raw",
    };
    format!("csr_packed_mm_{mode}_c{c}")
}

/// `csr-packed`'s k-vector kernel on the device: its copy of the streams, the entries of the
/// layout's value mode (C = 1, 2, 4, 8 vectors per pass) with their resident blocks.
pub(super) struct PackedMultiDevice<T: Scalar> {
    arrays: PackedArrays<T>,
    /// (C, entry, resident blocks of the whole GPU), C ascending.
    entries: Vec<(usize, Kernel<PackedMultiArgs<'static, T>>, usize)>,
    dims: (usize, usize),
    nslices: usize,
    nlong: usize,
    /// `spmm_cols`.
    cols: Option<u32>,
    bytes: usize,
}

impl<T: Scalar> PackedMultiDevice<T> {
    /// Compiles the layout's entries (first, so an NVRTC failure leaves nothing allocated) and
    /// uploads the streams.
    pub(super) fn upload(gpu: &Gpu, l: &PackedLayout<T>) -> Result<Self> {
        kernel_int("csr-packed work items (slices + long rows)", l.nslices() + l.long_rows.len())?;
        crate::gpu::check_int_loops("csr-packed", l.nrows, l.long_cols.len())?;
        let entries = super::multi::PASS_COLS
            .iter()
            .map(|&c| {
                let k = gpu.kernel_stored::<T, _>(&KERNEL, &mm_entry(l.vcodes, c), l.storage)?;
                let blocks = k.resident_ctas(gpu, BLOCK, 0)?;
                Ok((c, k, blocks))
            })
            .collect::<Result<_>>()?;
        Ok(PackedMultiDevice {
            arrays: PackedArrays::upload(gpu, l)?,
            entries,
            dims: (l.nrows, l.ncols),
            nslices: l.nslices(),
            nlong: l.long_rows.len(),
            cols: l.spmm_cols,
            bytes: l.footprint_bytes(),
        })
    }
}

impl<T: Scalar> DeviceMultiLayout<T> for PackedMultiDevice<T> {
    fn prepare(&self, _gpu: &Gpu, shape: MultiShape) -> Result<Vec<(String, String)>> {
        let c = pass_cols(shape.k, T::BYTES, self.cols);
        let xvec = x_load(shape, c, T::BYTES, 256);
        Ok(vec![(
            format!("csr-packed spmm k={} {}", shape.k, shape.order),
            format!(
                "{c} vectors per pass, {} passes, {xvec} values per X load (X aligned to 16 \
                 bytes; less aligned blocks load narrower)",
                shape.k.div_ceil(c)
            ),
        )])
    }

    fn run(&self, gpu: &Gpu, b: DeviceBlocks<'_, T>) -> Result<()> {
        b.check("csr-packed SpMM", gpu, self.dims)?;
        let (shape, mut call) = Call::blocks(self.dims, b);
        let (nrows, ncols) = self.dims;
        if nrows == 0 || self.nslices + self.nlong == 0 {
            return Ok(());
        }
        let k = shape.k;
        let c = pass_cols(k, T::BYTES, self.cols);
        let npasses = k.div_ceil(c);
        let items = |n: usize| {
            n.checked_mul(npasses)
                .filter(|&v| v <= u32::MAX as usize)
                .ok_or(Error::TooLarge {
                    what: "csr-packed SpMM work items (slices or long rows × passes)",
                    value: (n as u64).saturating_mul(npasses as u64),
                })
        };
        let (slice_items, long_items) = (items(self.nslices)?, items(self.nlong)?);
        let (_, entry, max_blocks) = self
            .entries
            .iter()
            .find(|e| e.0 == c)
            .ok_or_else(|| Error::InvalidArgument(format!("csr-packed SpMM: no entry for C = {c}")))?;
        let (x_col, x_vec, y_row, y_vec) = match shape.order {
            DenseOrder::Row => (k, 1, k, 1),
            DenseOrder::Col => (1, ncols, 1, nrows),
        };
        let xvec = x_load(shape, c, T::BYTES, alignment(call.x));
        let blocks = slice_items
            .div_ceil(BLOCK as usize / WARP)
            .max(long_items)
            .min(*max_blocks)
            .max(1);
        let args = PackedMultiArgs {
            packed: self.arrays.args(call.axpby()),
            // k ≤ 2^31 − 1 (MultiShape::check), nrows and ncols < 2^31 (the matrix)
            k: k as u32,
            npasses: npasses as u32,
            x_col: x_col as u32,
            x_vec: x_vec as u32,
            y_row: y_row as u32,
            y_vec: y_vec as u32,
            xvec: xvec as i32,
        };
        // SAFETY: the streams were built by encode.rs, whose offsets, lengths and codes stay
        // inside them and decode to columns < ncols and rows < nrows; X holds ncols·k and Y
        // nrows·k entries (checked above), and the kernel reads X only at j·x_col + c·x_vec and
        // writes Y at i·y_row + c·y_vec for j < ncols, i < nrows, c < k, inside both in either
        // order; loads of xvec values need X's address and k to be multiples of them (x_load).
        unsafe { gpu.launch(entry, Shape::ctas(blocks, BLOCK), &args) }
    }

    fn footprint_bytes(&self) -> usize {
        self.bytes
    }
}
