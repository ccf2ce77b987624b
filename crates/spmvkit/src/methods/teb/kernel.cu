// teb: TEB (teb.md §3.2, Alg. 3) — one CTA per block of merged rows, one thread per row.
// Block b holds merged rows blo_idx[b] .. blo_idx[b+1]; thread t takes rows t, t + blockDim.x, …
// (Alg. 3 has one pass, `if (threadID < mid)`; the loop covers blocks with more rows than the
// CTA has threads). A row is summed in order with fma from 0 and written at its original row:
// y = alpha*sum (+ beta*y fused), y never read when beta == 0. No atomics: deterministic.
// Block-strided row indices are unsigned: last <= 2^31-1, so r + blockDim.x < 2^32, where a
// signed index would overflow when last is within one block of 2^31-1.

// The entries' one argument (its Rust twin: gpu.rs, checked against it at compile time; teb_spmv
// ignores long_row).
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
    const unsigned first = ldg(a.blo_idx + blockIdx.x);
    const unsigned last = ldg(a.blo_idx + blockIdx.x + 1);
    for (unsigned r = first + threadIdx.x; r < last; r += blockDim.x) {
        const int start = ldg(a.row_nnz_sum + r);
        const int end = ldg(a.row_nnz_sum + r + 1);
        real_t sum = (real_t)0;
        for (int j = start; j < end; ++j) sum = fma(ldg(a.values + j), ldg(a.x + ldg(a.col_idx + j)), sum);
        const int row = ldg(a.row_ids + r);
        const real_t t = a.alpha * sum;
        a.y[row] = (a.beta == (real_t)0) ? t : fma(a.beta, a.y[row], t);
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
    __shared__ real_t wsum[32];
    __shared__ unsigned long_mask[32];
    const unsigned first = ldg(a.blo_idx + blockIdx.x);
    const unsigned last = ldg(a.blo_idx + blockIdx.x + 1);
    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int nwarps = (int)blockDim.x >> 5;

    // Pass 1: long rows, one at a time, by the whole CTA.
    for (unsigned base = first; base < last; base += blockDim.x) {
        const unsigned r = base + threadIdx.x;
        const bool is_long =
            r < last && ldg(a.row_nnz_sum + r + 1) - ldg(a.row_nnz_sum + r) >= a.long_row;
        const unsigned m = __ballot_sync(FULL_MASK, is_long);
        if (lane == 0) long_mask[warp] = m;
        if (__syncthreads_count(is_long) == 0) continue;  // uniform
        for (int w = 0; w < nwarps; ++w) {
            unsigned mw = long_mask[w];  // uniform
            while (mw != 0u) {
                const unsigned lr = base + (w << 5) + (__ffs(mw) - 1);
                mw &= mw - 1u;
                const real_t v = cta_gather_sum(a.values, a.col_idx, a.x, ldg(a.row_nnz_sum + lr),
                                                ldg(a.row_nnz_sum + lr + 1), wsum);
                if (tid == 0) {
                    const int row = ldg(a.row_ids + lr);
                    const real_t t = a.alpha * v;
                    a.y[row] = (a.beta == (real_t)0) ? t : fma(a.beta, a.y[row], t);
                }
                __syncthreads();  // wsum is free again
            }
        }
        __syncthreads();  // every thread has read long_mask before the next chunk writes it
    }

    // Pass 2: the other rows, a thread each (teb_spmv).
    for (unsigned r = first + threadIdx.x; r < last; r += blockDim.x) {
        const int start = ldg(a.row_nnz_sum + r);
        const int end = ldg(a.row_nnz_sum + r + 1);
        if (end - start >= a.long_row) continue;
        real_t sum = (real_t)0;
        for (int j = start; j < end; ++j) sum = fma(ldg(a.values + j), ldg(a.x + ldg(a.col_idx + j)), sum);
        const int row = ldg(a.row_ids + r);
        const real_t t = a.alpha * sum;
        a.y[row] = (a.beta == (real_t)0) ? t : fma(a.beta, a.y[row], t);
    }
}
