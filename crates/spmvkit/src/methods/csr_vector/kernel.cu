// csr-vector: one warp per CSR row (Bell & Garland, SC'09, the "CSR (vector)" kernel).
// Lane l takes the row's entries j ≡ l (mod 32), starting from the row start aligned down to a
// multiple of 32 (whole-sector loads), accumulating with fma in order; the butterfly
// warp_reduce_sum adds the 32 partials in a fixed order, so the result is deterministic.
// The CPU mirror (cpu.rs) reproduces this arithmetic exactly. Values are read as stored (ldg_val:
// val_t widened exactly, docs/precision.md).

// The entry's one argument: CsrArgs (prelude), checked against its Rust twin at compile time.
extern "C" __global__ void csr_vector(const CsrArgs a) {
    const unsigned lane = threadIdx.x & 31u;
    const unsigned warps_per_block = blockDim.x >> 5;
    const unsigned stride = gridDim.x * warps_per_block;
    for (unsigned row = blockIdx.x * warps_per_block + (threadIdx.x >> 5); row < (unsigned)a.nrows;
         row += stride) {
        const uoff_t start = (uoff_t)ldg(a.row_ptr + row);
        const uoff_t end = (uoff_t)ldg(a.row_ptr + row + 1);
        real_t sum = (real_t)0;
        uoff_t j = (start & ~(uoff_t)31) + lane;
        if (j >= start && j < end) sum = fma(ldg_val(a.vals + j), ldg(a.x + ldg(a.col_idx + j)), sum);
        j += 32u;
#pragma unroll 4
        for (; j < end; j += 32u) sum = fma(ldg_val(a.vals + j), ldg(a.x + ldg(a.col_idx + j)), sum);
        sum = warp_reduce_sum(sum);
        if (lane == 0) {
            const real_t t = a.alpha * sum;
            a.y[row] = (a.beta == (real_t)0) ? t : fma(a.beta, a.y[row], t);
        }
    }
}
