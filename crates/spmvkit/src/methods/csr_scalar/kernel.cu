// csr-scalar: one thread per CSR row (Bell & Garland, SC'09, "CSR (scalar)").
// Each thread sums its row left to right with fma, then y = alpha*sum (+ beta*y unless beta == 0).
// The CPU mirror (cpu.rs) follows the same operation order, so results match bit for bit.
// The row index is unsigned: the grid is ceil(nrows / blockDim.x) blocks, so the last block's
// blockIdx.x * blockDim.x + threadIdx.x may pass 2^31-1 (an int would wrap negative).

extern "C" __global__ void csr_scalar(int nrows,
                                      const int* __restrict__ row_ptr,
                                      const int* __restrict__ col_idx,
                                      const real_t* __restrict__ vals,
                                      const real_t* __restrict__ x,
                                      real_t* __restrict__ y,
                                      real_t alpha,
                                      real_t beta) {
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
