// csr-vector: one warp per CSR row (Bell & Garland, SC'09, the "CSR (vector)" kernel).
// Lane l takes the row's entries j ≡ l (mod 32), starting from the row start aligned down to a
// multiple of 32 (whole-sector loads), accumulating with fma in order; the butterfly
// warp_reduce_sum adds the 32 partials in a fixed order, so the result is deterministic.
// The CPU mirror (cpu.rs) reproduces this arithmetic exactly.

// The entry's one argument (its Rust twin: gpu.rs, checked against it at compile time); the
// entry copies the pointers into __restrict__ locals (a member's __restrict__ is ignored).
struct CsrVectorArgs {
    int nrows;
    const int* row_ptr;
    const int* col_idx;
    const real_t* vals;
    const real_t* x;
    real_t* y;
    real_t alpha;
    real_t beta;
};

extern "C" __global__ void csr_vector(const CsrVectorArgs a) {
    const int nrows = a.nrows;
    const int* __restrict__ row_ptr = a.row_ptr;
    const int* __restrict__ col_idx = a.col_idx;
    const real_t* __restrict__ vals = a.vals;
    const real_t* __restrict__ x = a.x;
    real_t* __restrict__ y = a.y;
    const real_t alpha = a.alpha, beta = a.beta;
    const unsigned lane = threadIdx.x & 31u;
    const unsigned warps_per_block = blockDim.x >> 5;
    const unsigned stride = gridDim.x * warps_per_block;
    for (unsigned row = blockIdx.x * warps_per_block + (threadIdx.x >> 5); row < (unsigned)nrows;
         row += stride) {
        const unsigned start = (unsigned)ldg(row_ptr + row);
        const unsigned end = (unsigned)ldg(row_ptr + row + 1);
        real_t sum = (real_t)0;
        unsigned j = (start & ~31u) + lane;
        if (j >= start && j < end) sum = fma(ldg(vals + j), ldg(x + ldg(col_idx + j)), sum);
        j += 32u;
#pragma unroll 4
        for (; j < end; j += 32u) sum = fma(ldg(vals + j), ldg(x + ldg(col_idx + j)), sum);
        sum = warp_reduce_sum(sum);
        if (lane == 0) {
            const real_t t = alpha * sum;
            y[row] = (beta == (real_t)0) ? t : fma(beta, y[row], t);
        }
    }
}
