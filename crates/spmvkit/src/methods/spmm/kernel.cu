// SpMM, Y = alpha*A*X + beta*Y for X of k vectors (issue #24; docs/spmm.md): the row-split CSR
// kernels for both block orders, and the strided column copy of the single-vector fallback.
// The CPU mirror (methods/spmm/cpu.rs) reproduces the arithmetic of both kernels bit for bit.
// Block indices are 64-bit (rows * k may pass 2^32); row and nonzero indices are 32-bit as in
// every CSR kernel.

// The one argument struct of both SpMM entries (Rust twin: methods/spmm/gpu.rs, SpmmArgs): the
// CSR matrix and the operands, x and y being the blocks X (ncols x k) and Y (nrows x k).
struct SpmmArgs {
    CsrArgs csr;
    int ncols;
    int k;
    int lanes;
};

// Accumulators per lane of the row-major kernel: a pass covers lanes * SPMM_PER_LANE vectors
// (256 with a full warp); larger k takes more passes over the row.
#define SPMM_PER_LANE 8

// Row-major X and Y (a row's k values contiguous). A group of `lanes` lanes (a power of two, at
// most 32, at least k when k < 32) takes a row; lane l owns the vectors c = c0 + l + t*lanes.
// For each nonzero in CSR order the group reads the k contiguous values of X's row col_idx[j]
// (coalesced), so the gather of x becomes a gather of contiguous rows. Each (row, vector) is a
// chain of fmas from zero in CSR order, then alpha*sum (+ beta*y fused): deterministic.
extern "C" __global__ void spmm_rows_rm(const SpmmArgs a) {
    const unsigned lanes = (unsigned)a.lanes;
    const unsigned lane = threadIdx.x & (lanes - 1u);
    const unsigned long long k = (unsigned long long)a.k;
    const unsigned long long nrows = (unsigned long long)a.csr.nrows;
    const unsigned long long groups = (unsigned long long)gridDim.x * (blockDim.x / lanes);
    for (unsigned long long row = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / lanes;
         row < nrows; row += groups) {
        const unsigned start = (unsigned)ldg(a.csr.row_ptr + row);
        const unsigned end = (unsigned)ldg(a.csr.row_ptr + row + 1);
        real_t* yrow = a.csr.y + row * k;
        for (unsigned long long c0 = 0; c0 < k; c0 += (unsigned long long)lanes * SPMM_PER_LANE) {
            real_t acc[SPMM_PER_LANE];
#pragma unroll
            for (int t = 0; t < SPMM_PER_LANE; ++t) acc[t] = (real_t)0;
            for (unsigned j = start; j < end; ++j) {
                const real_t v = ldg(a.csr.vals + j);
                const real_t* xrow = a.csr.x + (unsigned long long)(unsigned)ldg(a.csr.col_idx + j) * k;
#pragma unroll
                for (int t = 0; t < SPMM_PER_LANE; ++t) {
                    const unsigned long long c = c0 + lane + (unsigned long long)t * lanes;
                    if (c < k) acc[t] = fma(v, ldg(xrow + c), acc[t]);
                }
            }
#pragma unroll
            for (int t = 0; t < SPMM_PER_LANE; ++t) {
                const unsigned long long c = c0 + lane + (unsigned long long)t * lanes;
                if (c < k) {
                    const real_t s = a.csr.alpha * acc[t];
                    yrow[c] = (a.csr.beta == (real_t)0) ? s : fma(a.csr.beta, yrow[c], s);
                }
            }
        }
    }
}

// Column-major X and Y (each vector contiguous). A warp per row, the vectors in a loop: for each
// vector the 32 lanes stride over the row's nonzeros from the row start aligned down to 32 (as
// csr-vector), and warp_reduce_sum adds their partials, so each vector's result is bitwise
// csr-vector's SpMV. The row's indices and values are read from DRAM once and from L1/L2 for
// the later vectors; the x gathers are the k SpMVs' own (column-major X has no contiguous rows
// to read), which is why row-major is the faster order.
extern "C" __global__ void spmm_rows_cm(const SpmmArgs a) {
    const unsigned lane = threadIdx.x & 31u;
    const unsigned warps_per_block = blockDim.x >> 5;
    const unsigned stride = gridDim.x * warps_per_block;
    const unsigned long long ncols = (unsigned long long)a.ncols;
    const unsigned long long nrows = (unsigned long long)a.csr.nrows;
    for (unsigned row = blockIdx.x * warps_per_block + (threadIdx.x >> 5); row < (unsigned)a.csr.nrows;
         row += stride) {
        const unsigned start = (unsigned)ldg(a.csr.row_ptr + row);
        const unsigned end = (unsigned)ldg(a.csr.row_ptr + row + 1);
        for (int c = 0; c < a.k; ++c) {
            const real_t* x = a.csr.x + (unsigned long long)c * ncols;
            real_t sum = (real_t)0;
            unsigned j = (start & ~31u) + lane;
            if (j >= start && j < end) sum = fma(ldg(a.csr.vals + j), ldg(x + ldg(a.csr.col_idx + j)), sum);
            j += 32u;
            for (; j < end; j += 32u) sum = fma(ldg(a.csr.vals + j), ldg(x + ldg(a.csr.col_idx + j)), sum);
            sum = warp_reduce_sum(sum);
            if (lane == 0) {
                real_t* y = a.csr.y + (unsigned long long)c * nrows + row;
                const real_t t = a.csr.alpha * sum;
                *y = (a.csr.beta == (real_t)0) ? t : fma(a.csr.beta, *y, t);
            }
        }
    }
}

// dst[dst_off + i*dst_stride] = src[src_off + i*src_stride] for i < n: one column of a block in
// or out of a plain vector (the single-vector fallback of methods without an SpMM kernel).
struct StridedCopyArgs {
    real_t* dst;
    const real_t* src;
    unsigned long long dst_off;
    unsigned long long dst_stride;
    unsigned long long src_off;
    unsigned long long src_stride;
    int n;
};

extern "C" __global__ void spmm_copy_strided(const StridedCopyArgs a) {
    const unsigned stride = gridDim.x * blockDim.x;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)a.n; i += stride) {
        a.dst[a.dst_off + (unsigned long long)i * a.dst_stride] =
            ldg(a.src + a.src_off + (unsigned long long)i * a.src_stride);
    }
}
