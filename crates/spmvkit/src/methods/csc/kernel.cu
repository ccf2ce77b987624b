// csc: the basic CSC SpMV that FastLoad (Hu et al., TPDS 2024, §III-B, Fig. 3) sets out to
// improve. Two kernels per call:
//   csc_scale_y: y = beta * y, or y = 0 when beta == 0 (y unread), before any atomic;
//   csc_atomic:  one warp per column j: every lane loads alpha * x[j] (one broadcast load) and
//                takes the column's entries k ≡ lane (mod 32) — coalesced loads of row_idx and
//                vals — adding vals[k] * (alpha * x[j]) to y[row_idx[k]] with a float atomic.
// The atomics make the summation order, and so the bits of y, vary between runs.

extern "C" __global__ void csc_scale_y(int n, real_t* __restrict__ y, real_t beta) {
    const unsigned stride = gridDim.x * blockDim.x;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)n; i += stride)
        y[i] = (beta == (real_t)0) ? (real_t)0 : beta * y[i];
}

extern "C" __global__ void csc_atomic(int ncols, const int* __restrict__ col_ptr,
                                      const int* __restrict__ row_idx,
                                      const real_t* __restrict__ vals,
                                      const real_t* __restrict__ x, real_t* y, real_t alpha) {
    const unsigned lane = threadIdx.x & 31u;
    const unsigned warps_per_block = blockDim.x >> 5;
    const unsigned stride = gridDim.x * warps_per_block;
    for (unsigned col = blockIdx.x * warps_per_block + (threadIdx.x >> 5); col < (unsigned)ncols;
         col += stride) {
        const unsigned start = (unsigned)ldg(col_ptr + col);
        const unsigned end = (unsigned)ldg(col_ptr + col + 1);
        if (start == end) continue;
        const real_t ax = alpha * ldg(x + col);
        for (unsigned k = start + lane; k < end; k += 32u)
            atomic_add_real(y + ldg(row_idx + k), ldg(vals + k) * ax);
    }
}
