//! A CSR structure that lives on the device, checked there before any kernel indexes with it
//! (issue #23, "nothing on the device is copied to the host"): [`check_device_csr`] runs one
//! pass (`csr_check.cu`) and brings back three numbers, the first bad row with its problem and
//! the row-length statistics (longest row, empty rows) that the same pass gathers. A malformed
//! structure is an [`Error::InvalidStructure`] naming the row and the problem, never a read out
//! of bounds.

use cudarc::driver::CudaSlice;

use super::{kernel_int, DevMut, DevRef, Gpu, Kernels, Shape, UTIL_THREADS};
use crate::error::{Error, Result};
use crate::scalar::Idx;

crate::kernel_args! {
    /// `spmvkit_csr_check`'s arguments: the structure, where the findings go, the shape.
    struct CsrCheckArgs<'a> {
        row_ptr: DevRef<'a, u32>,
        col_idx: DevRef<'a, u32>,
        out: DevMut<'a, u64>,
        nrows: i32,
        ncols: u32,
        nnz: u32,
    }
}

/// The check's kernel.
pub const CSR_CHECK_KERNELS: Kernels = Kernels::new(
    "spmvkit-csr-check",
    include_str!("csr_check.cu"),
    &[CsrCheckArgs::entry("spmvkit_csr_check")],
);

/// What the check found out about a well-formed structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowLengths {
    /// Rows.
    pub nrows: usize,
    /// Entries.
    pub nnz: usize,
    /// The longest row's entries.
    pub max: usize,
    /// Rows without entries.
    pub empty: usize,
}

impl RowLengths {
    /// Entries per row on average (0 without rows).
    pub fn mean(&self) -> f64 {
        if self.nrows == 0 {
            0.0
        } else {
            self.nnz as f64 / self.nrows as f64
        }
    }
}

/// What the problem code of `csr_check.cu` means, for row `row` of a matrix with `nnz` entries
/// and `ncols` columns.
fn problem(code: u64, row: u64, (ncols, nnz): (usize, usize)) -> String {
    match code {
        0 => "row_ptr[0] is not 0".into(),
        1 => format!(
            "row_ptr decreases after row {row} (row_ptr[{}] < row_ptr[{row}])",
            row + 1
        ),
        2 => format!(
            "row {row} ends past the {nnz} entries (row_ptr[{}] > {nnz})",
            row + 1
        ),
        3 => format!("row {row} has a column index >= ncols = {ncols}"),
        4 => format!(
            "row {row}: column indices are not strictly increasing (unsorted or duplicates)"
        ),
        _ => format!("row_ptr[{}] is not nnz = {nnz}", row + 1),
    }
}

/// Checks on `gpu`'s stream that `row_ptr` (`nrows + 1` entries) and `col_idx` (`nnz` entries,
/// one per value) form a valid CSR structure of `ncols` columns: row_ptr starts at 0, never
/// decreases and ends at nnz, every column index is below `ncols` and the indices of each row
/// increase strictly. Waits for the result (three numbers come back to the host). Lengths that
/// do not fit a CSR of that shape are an error before anything runs.
pub fn check_device_csr(
    gpu: &Gpu,
    (nrows, ncols): (usize, usize),
    row_ptr: &CudaSlice<Idx>,
    col_idx: &CudaSlice<Idx>,
    nnz: usize,
) -> Result<RowLengths> {
    crate::matrix::check_dims(nrows, ncols, nnz)?;
    if row_ptr.len() < nrows + 1 || col_idx.len() < nnz {
        return Err(Error::structure(
            "CSR",
            format!(
                "device arrays of {} row pointers and {} column indices for {nrows} rows and \
                 {nnz} entries",
                row_ptr.len(),
                col_idx.len()
            ),
        ));
    }
    let k = gpu.kernel::<f32, CsrCheckArgs>(&CSR_CHECK_KERNELS, "spmvkit_csr_check")?;
    let mut out = gpu
        .stream()
        .clone_htod(&[u64::MAX, 0, 0])
        .map_err(|e| Error::cuda("CSR check: its result slots", e))?;
    let args = CsrCheckArgs {
        row_ptr: DevRef::new(row_ptr),
        col_idx: DevRef::new(col_idx),
        out: DevMut::new(&mut out),
        nrows: kernel_int("CSR check: rows", nrows)?,
        ncols: ncols as u32,
        nnz: nnz as u32,
    };
    let shape = Shape::grid_stride(nrows.max(1), UTIL_THREADS, gpu.sm_count() * 8);
    // SAFETY: the kernel reads row_ptr[..nrows + 1] (checked above), col_idx only at positions
    // below each row's end once that end is known to be at most nnz ≤ col_idx.len(), and writes
    // out[..3].
    unsafe { gpu.launch(&k, shape, &args) }?;
    let mut found = [0u64; 3];
    gpu.download(&out, &mut found)?;
    if found[0] != u64::MAX {
        let (row, code) = (found[0] >> 3, found[0] & 7);
        return Err(Error::structure(
            "CSR",
            format!("device arrays: {}", problem(code, row, (ncols, nnz))),
        ));
    }
    Ok(RowLengths {
        nrows,
        nnz,
        max: found[1] as usize,
        empty: found[2] as usize,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each problem code of the kernel reads as the problem, at its row.
    #[test]
    fn problems_name_the_row() {
        let shape = (4, 9);
        for (code, row, says) in [
            (0, 0, "row_ptr[0] is not 0"),
            (
                1,
                2,
                "row_ptr decreases after row 2 (row_ptr[3] < row_ptr[2])",
            ),
            (2, 5, "row 5 ends past the 9 entries (row_ptr[6] > 9)"),
            (3, 7, "row 7 has a column index >= ncols = 4"),
            (4, 1, "row 1: column indices are not strictly increasing"),
            (5, 3, "row_ptr[4] is not nnz = 9"),
        ] {
            let msg = problem(code, row, shape);
            assert!(msg.contains(says), "{code}: {msg}");
        }
    }
}
