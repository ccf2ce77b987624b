// csr-scalar: one thread per CSR row (Bell & Garland, SC'09, "CSR (scalar)").
// Each thread sums its row left to right with fma, then y = alpha*sum (+ beta*y unless beta == 0).
// The CPU mirror (cpu.rs) follows the same operation order, so results match bit for bit.
// The row index is unsigned: the grid is ceil(nrows / blockDim.x) blocks, so the last block's
// blockIdx.x * blockDim.x + threadIdx.x may pass 2^31-1 (an int would wrap negative).

// The entry's one argument (its Rust twin: gpu.rs, checked against it at compile time); the
// entry copies the pointers into __restrict__ locals (a member's __restrict__ is ignored).
struct CsrScalarArgs {
    int nrows;
    const int* row_ptr;
    const int* col_idx;
    const real_t* vals;
    const real_t* x;
    real_t* y;
    real_t alpha;
    real_t beta;
};

extern "C" __global__ void csr_scalar(const CsrScalarArgs a) {
    const int nrows = a.nrows;
    const int* __restrict__ row_ptr = a.row_ptr;
    const int* __restrict__ col_idx = a.col_idx;
    const real_t* __restrict__ vals = a.vals;
    const real_t* __restrict__ x = a.x;
    real_t* __restrict__ y = a.y;
    const real_t alpha = a.alpha, beta = a.beta;
    const unsigned row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= (unsigned)nrows) return;
    const int start = ldg(row_ptr + row);
    const int end = ldg(row_ptr + row + 1);
    real_t sum = (real_t)0;
    for (int j = start; j < end; ++j) {
        sum = fma(ldg(vals + j), ldg(x + ldg(col_idx + j)), sum);
    }
    y[row] = (beta == (real_t)0) ? alpha * sum : fma(alpha, sum, beta * y[row]);
}
