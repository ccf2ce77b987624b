// SpMM, Y = alpha*A*X + beta*Y for X of k vectors (issue #24; docs/spmm.md): the row-split CSR
// kernels for both block orders (row-major with its long rows cut into nnz-balanced pieces and a
// deterministic fix-up), and the strided column copy of the single-vector fallback.
// The CPU mirror (methods/spmm/cpu.rs) reproduces the arithmetic of both kernels bit for bit.
// Block indices are 64-bit (rows * k may pass 2^32); row and nonzero indices are 32-bit as in
// every CSR kernel.

// The argument struct of the row-split entries (Rust twin: methods/spmm/gpu.rs, SpmmArgs): the
// CSR matrix and the operands, x and y being the blocks X (ncols x k) and Y (nrows x k); the
// lanes per row (row-major); `limit`, the longest row spmm_rows_rm takes (0: every row; longer
// ones go through the pieces and the fix-up below).
struct SpmmArgs {
    CsrArgs csr;
    int ncols;
    int k;
    int lanes;
    int limit;
};

// Accumulators per lane of the row-major kernels: a pass covers lanes * SPMM_PER_LANE vectors
// (256 with a full warp); larger k takes more passes over the range.
#define SPMM_PER_LANE 8

// The row-major core: the group's lane `lane` of `lanes` sums nonzeros [start, end) for its
// vectors c = c0 + lane + t*lanes, each a chain of fmas from zero in CSR order, reading the k
// contiguous values of X's row col_idx[j] per nonzero (coalesced across the group). With
// `store`, out[c] = alpha*sum (+ beta*out[c] fused when beta != 0); without, out[c] = sum (a
// piece's partial).
__device__ __forceinline__ void spmm_rm_range(const CsrArgs& a, unsigned long long k, unsigned start,
                                              unsigned end, unsigned lane, unsigned lanes,
                                              real_t* out, bool store) {
    for (unsigned long long c0 = 0; c0 < k; c0 += (unsigned long long)lanes * SPMM_PER_LANE) {
        real_t acc[SPMM_PER_LANE];
#pragma unroll
        for (int t = 0; t < SPMM_PER_LANE; ++t) acc[t] = (real_t)0;
        for (unsigned j = start; j < end; ++j) {
            const real_t v = ldg(a.vals + j);
            const real_t* xrow = a.x + (unsigned long long)(unsigned)ldg(a.col_idx + j) * k;
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
                if (store) {
                    const real_t s = a.alpha * acc[t];
                    out[c] = (a.beta == (real_t)0) ? s : fma(a.beta, out[c], s);
                } else {
                    out[c] = acc[t];
                }
            }
        }
    }
}

// Row-major X and Y (a row's k values contiguous). A group of `lanes` lanes (a power of two, at
// most 32, at least k when k < 32) takes a row: the gather of x becomes a gather of contiguous
// rows of X. Rows longer than `limit` (when set) are left to the pieces below.
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
        if (a.limit > 0 && end - start > (unsigned)a.limit) continue;
        spmm_rm_range(a.csr, k, start, end, lane, lanes, a.csr.y + row * k, true);
    }
}

// The long rows of row-major SpMM, nnz-balanced: each row longer than `limit` is cut into pieces
// of at most `limit` nonzeros (piece_start/piece_end, consecutive per row); a group per piece
// writes its k partial sums to partial[piece * k + c] (Rust twin: SpmmPiecesArgs).
struct SpmmPiecesArgs {
    CsrArgs csr;
    int k;
    int lanes;
    const unsigned int* piece_start;
    const unsigned int* piece_end;
    int npieces;
    real_t* partial;
};

extern "C" __global__ void spmm_pieces_rm(const SpmmPiecesArgs a) {
    const unsigned lanes = (unsigned)a.lanes;
    const unsigned lane = threadIdx.x & (lanes - 1u);
    const unsigned long long k = (unsigned long long)a.k;
    const unsigned long long groups = (unsigned long long)gridDim.x * (blockDim.x / lanes);
    for (unsigned long long p = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / lanes;
         p < (unsigned long long)a.npieces; p += groups) {
        spmm_rm_range(a.csr, k, ldg(a.piece_start + p), ldg(a.piece_end + p), lane, lanes,
                      a.partial + p * k, false);
    }
}

// The fix-up of the long rows: a group per long row adds its pieces' partials in piece order
// (t = 0; t = t + partial, a fixed order: deterministic) and stores y = alpha*t (+ beta*y fused)
// (Rust twin: SpmmFixupArgs). long_first has nlong + 1 entries: row i's pieces are
// long_first[i] .. long_first[i + 1].
struct SpmmFixupArgs {
    CsrArgs csr;
    int k;
    int lanes;
    const unsigned int* long_row;
    const unsigned int* long_first;
    int nlong;
    const real_t* partial;
};

extern "C" __global__ void spmm_fixup_rm(const SpmmFixupArgs a) {
    const unsigned lanes = (unsigned)a.lanes;
    const unsigned lane = threadIdx.x & (lanes - 1u);
    const unsigned long long k = (unsigned long long)a.k;
    const unsigned long long groups = (unsigned long long)gridDim.x * (blockDim.x / lanes);
    for (unsigned long long i = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / lanes;
         i < (unsigned long long)a.nlong; i += groups) {
        const unsigned long long row = ldg(a.long_row + i);
        const unsigned first = ldg(a.long_first + i), last = ldg(a.long_first + i + 1);
        real_t* y = a.csr.y + row * k;
        for (unsigned long long c = lane; c < k; c += lanes) {
            real_t t = (real_t)0;
            for (unsigned p = first; p < last; ++p) t = t + ldg(a.partial + (unsigned long long)p * k + c);
            const real_t s = a.csr.alpha * t;
            y[c] = (a.csr.beta == (real_t)0) ? s : fma(a.csr.beta, y[c], s);
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
