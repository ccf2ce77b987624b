// teb: TEB (teb.md §3.2, Alg. 3) — one CTA per block of merged rows, one thread per row.
// Block b holds merged rows blo_idx[b] .. blo_idx[b+1]; thread t takes rows t, t + blockDim.x, …
// (Alg. 3 has one pass, `if (threadID < mid)`; the loop covers blocks with more rows than the
// CTA has threads). A row is summed in order with fma from 0 and written at its original row:
// y = alpha*sum (+ beta*y fused), y never read when beta == 0. No atomics: deterministic.
// Block-strided row indices are unsigned: last <= 2^31-1, so r + blockDim.x < 2^32, where a
// signed index would overflow when last is within one block of 2^31-1.

// The entries' one argument (its Rust twin: gpu.rs, checked against it at compile time; teb_spmv
// ignores long_row); the entries copy the pointers into __restrict__ locals (a member's
// __restrict__ is ignored).
struct TebArgs {
    const int* blo_idx;
    const int* row_nnz_sum;
    const int* row_ids;
    const int* col_idx;
    const real_t* values;
    const real_t* x;
    real_t* y;
    real_t alpha;
    real_t beta;
    int long_row;
};

extern "C" __global__ void teb_spmv(const TebArgs a) {
    const int* __restrict__ blo_idx = a.blo_idx;
    const int* __restrict__ row_nnz_sum = a.row_nnz_sum;
    const int* __restrict__ row_ids = a.row_ids;
    const int* __restrict__ col_idx = a.col_idx;
    const real_t* __restrict__ values = a.values;
    const real_t* __restrict__ x = a.x;
    real_t* __restrict__ y = a.y;
    real_t alpha = a.alpha;
    real_t beta = a.beta;
    const unsigned first = ldg(blo_idx + blockIdx.x);
    const unsigned last = ldg(blo_idx + blockIdx.x + 1);
    for (unsigned r = first + threadIdx.x; r < last; r += blockDim.x) {
        const int start = ldg(row_nnz_sum + r);
        const int end = ldg(row_nnz_sum + r + 1);
        real_t sum = (real_t)0;
        for (int j = start; j < end; ++j) sum = fma(ldg(values + j), ldg(x + ldg(col_idx + j)), sum);
        const int row = ldg(row_ids + r);
        const real_t t = alpha * sum;
        y[row] = (beta == (real_t)0) ? t : fma(beta, y[row], t);
    }
}

// teb_vector_spmv (method teb-vector, ours, issue #7): the same blocks, but a row of at least
// `long_row` entries is summed by the whole CTA instead of one thread, so that a hub row (in the
// merged order it leads its block, or the descending last block) is not walked by a lone thread.
//
// Pass 1 (long rows, CTA-wide, in merged order): the CTA scans its rows blockDim.x at a time;
// __syncthreads_count skips a chunk with no long row (every chunk on a matrix without long rows),
// else each warp's ballot of long rows goes to shared memory and the CTA takes them in order:
// thread t adds entries j = start + t, start + t + blockDim.x, ... with fma from 0; then the
// warp butterfly (warp_reduce_sum), warp w's sum to wsum[w], and warp 0 does the butterfly over
// wsum (zeros past the last warp); thread 0 writes y. Any row of the block may be long (the last
// block is descending, the others are the largest row then ascending small rows, whose tail can
// be long too), so the scan does not assume where they are.
// Pass 2 (the other rows): thread t takes rows t, t + blockDim.x, ... as teb_spmv does, skipping
// the long ones. Each row is written once, by a fixed summation order: deterministic, no atomics.
// blockDim.x is a multiple of 32 (at most 1024), so every warp is full.

extern "C" __global__ void teb_vector_spmv(const TebArgs a) {
    const int* __restrict__ blo_idx = a.blo_idx;
    const int* __restrict__ row_nnz_sum = a.row_nnz_sum;
    const int* __restrict__ row_ids = a.row_ids;
    const int* __restrict__ col_idx = a.col_idx;
    const real_t* __restrict__ values = a.values;
    const real_t* __restrict__ x = a.x;
    real_t* __restrict__ y = a.y;
    real_t alpha = a.alpha;
    real_t beta = a.beta;
    int long_row = a.long_row;
    __shared__ real_t wsum[32];
    __shared__ unsigned long_mask[32];
    const unsigned first = ldg(blo_idx + blockIdx.x);
    const unsigned last = ldg(blo_idx + blockIdx.x + 1);
    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int nwarps = (int)blockDim.x >> 5;

    // Pass 1: long rows, one at a time, by the whole CTA.
    for (unsigned base = first; base < last; base += blockDim.x) {
        const unsigned r = base + threadIdx.x;
        const bool is_long =
            r < last && ldg(row_nnz_sum + r + 1) - ldg(row_nnz_sum + r) >= long_row;
        const unsigned m = __ballot_sync(FULL_MASK, is_long);
        if (lane == 0) long_mask[warp] = m;
        if (__syncthreads_count(is_long) == 0) continue;  // uniform
        for (int w = 0; w < nwarps; ++w) {
            unsigned mw = long_mask[w];  // uniform
            while (mw != 0u) {
                const unsigned lr = base + (w << 5) + (__ffs(mw) - 1);
                mw &= mw - 1u;
                const real_t v = cta_gather_sum(values, col_idx, x, ldg(row_nnz_sum + lr),
                                                ldg(row_nnz_sum + lr + 1), wsum);
                if (tid == 0) {
                    const int row = ldg(row_ids + lr);
                    const real_t t = alpha * v;
                    y[row] = (beta == (real_t)0) ? t : fma(beta, y[row], t);
                }
                __syncthreads();  // wsum is free again
            }
        }
        __syncthreads();  // every thread has read long_mask before the next chunk writes it
    }

    // Pass 2: the other rows, a thread each (teb_spmv).
    for (unsigned r = first + threadIdx.x; r < last; r += blockDim.x) {
        const int start = ldg(row_nnz_sum + r);
        const int end = ldg(row_nnz_sum + r + 1);
        if (end - start >= long_row) continue;
        real_t sum = (real_t)0;
        for (int j = start; j < end; ++j) sum = fma(ldg(values + j), ldg(x + ldg(col_idx + j)), sum);
        const int row = ldg(row_ids + r);
        const real_t t = alpha * sum;
        y[row] = (beta == (real_t)0) ? t : fma(beta, y[row], t);
    }
}
