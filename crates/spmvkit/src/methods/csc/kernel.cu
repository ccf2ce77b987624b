// csc: the basic CSC SpMV that FastLoad (Hu et al., TPDS 2024, §III-B, Fig. 3) sets out to
// improve. After the runtime's y prologue (y = beta * y, or y = 0 when beta == 0, y unread:
// YPrologue) comes
//   csc_atomic:  one warp per column j: every lane loads alpha * x[j] (one broadcast load) and
//                takes the column's entries k ≡ lane (mod 32) — coalesced loads of row_idx and
//                vals — adding vals[k] * (alpha * x[j]) to y[row_idx[k]] with a float atomic.
// The atomics make the summation order, and so the bits of y, vary between runs.

// The entry's one argument (its Rust twin: gpu.rs, checked against it at compile time).
struct CscAtomicArgs {
    int ncols;
    const int* col_ptr;
    const int* row_idx;
    const real_t* vals;
    const real_t* x;
    real_t* y;
    real_t alpha;
};

extern "C" __global__ void csc_atomic(const CscAtomicArgs a) {
    const unsigned lane = threadIdx.x & 31u;
    const unsigned warps_per_block = blockDim.x >> 5;
    const unsigned stride = gridDim.x * warps_per_block;
    for (unsigned col = blockIdx.x * warps_per_block + (threadIdx.x >> 5); col < (unsigned)a.ncols;
         col += stride) {
        const unsigned start = (unsigned)ldg(a.col_ptr + col);
        const unsigned end = (unsigned)ldg(a.col_ptr + col + 1);
        if (start == end) continue;
        const real_t ax = a.alpha * ldg(a.x + col);
        for (unsigned k = start + lane; k < end; k += 32u)
            atomic_add_real(a.y + ldg(a.row_idx + k), ldg(a.vals + k) * ax);
    }
}
