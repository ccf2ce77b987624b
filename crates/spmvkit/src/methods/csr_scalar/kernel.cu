// csr-scalar: one thread per CSR row (Bell & Garland, SC'09, "CSR (scalar)").
// Each thread sums its row left to right with fma, then y = alpha*sum (+ beta*y unless beta == 0).
// The CPU mirror (cpu.rs) follows the same operation order, so results match bit for bit.
// Values are read as stored (ldg_val: val_t widened exactly, docs/precision.md).
// The row index is unsigned: the grid is ceil(nrows / blockDim.x) blocks, so the last block's
// blockIdx.x * blockDim.x + threadIdx.x may pass 2^31-1 (an int would wrap negative).
// Positions in col_idx/vals are uoff_t: 32-bit, or 64-bit in a module compiled for 64-bit row
// offsets (docs/offsets.md).

// The entry's one argument: CsrArgs (prelude), checked against its Rust twin at compile time.
extern "C" __global__ void csr_scalar(const CsrArgs a) {
    const unsigned row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= (unsigned)a.nrows) return;
    const uoff_t start = (uoff_t)ldg(a.row_ptr + row);
    const uoff_t end = (uoff_t)ldg(a.row_ptr + row + 1);
    real_t sum = (real_t)0;
    for (uoff_t j = start; j < end; ++j) {
        sum = fma(ldg_val(a.vals + j), ldg(a.x + ldg(a.col_idx + j)), sum);
    }
    a.y[row] = (a.beta == (real_t)0) ? a.alpha * sum : fma(a.alpha, sum, a.beta * a.y[row]);
}
