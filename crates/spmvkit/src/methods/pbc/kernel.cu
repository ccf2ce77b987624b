// pbc: PBC (Cui et al. 2022, via teb.md §2.2; inferred design, see mod.rs). One CTA per block of
// the row-major nnz stream:
//   1. CSR part: one thread per whole row (rows sorted by length in the block), summed in order
//      with fma, y written at the original row;
//   2. COO part: each segment of a row cut by a block boundary is summed by the whole CTA
//      (strided lanes, warp butterfly, warp sums added in order by thread 0) into part[slot];
//   3. the last CTA to finish (atomic counter, __threadfence before and after) adds each cut
//      row's slots in block order and writes y, then resets the counter for the next call.
// y = alpha*sum (+ beta*y fused), never read when beta == 0. Deterministic.
// Block-strided indices (rows, entries, cut rows) are unsigned: their bounds are at most 2^31-1,
// so index + blockDim.x < 2^32, where a signed index would overflow near the bound.

__device__ __forceinline__ void pbc_store(real_t* y, int row, real_t alpha, real_t sum, real_t beta) {
    const real_t t = alpha * sum;
    y[row] = (beta == (real_t)0) ? t : fma(beta, y[row], t);
}

// The entry's one argument (its Rust twin: gpu.rs, checked against it at compile time).
struct PbcArgs {
    const int* blk_row;
    const int* rows;
    const int* row_off;
    const int* col;
    const real_t* val;
    const int* blk_seg;
    const int* seg_ptr;
    const int* seg_slot;
    const int* coo_col;
    const real_t* coo_val;
    real_t* part;
    int nsplit;
    const int* split_row;
    const int* split_ptr;
    unsigned* ctr;
    const real_t* x;
    real_t* y;
    real_t alpha;
    real_t beta;
};

extern "C" __global__ void pbc_spmv(const PbcArgs a) {
    __shared__ real_t warp_sums[32];
    __shared__ int is_last;
    const int b = blockIdx.x;
    const int tid = (int)threadIdx.x;
    const int nwarps = (int)(blockDim.x >> 5);

    const unsigned r1 = ldg(a.blk_row + b + 1);
    for (unsigned i = ldg(a.blk_row + b) + threadIdx.x; i < r1; i += blockDim.x) {
        const int e = ldg(a.row_off + i + 1);
        real_t sum = (real_t)0;
        for (int j = ldg(a.row_off + i); j < e; ++j) sum = fma(ldg(a.val + j), ldg(a.x + ldg(a.col + j)), sum);
        pbc_store(a.y, ldg(a.rows + i), a.alpha, sum, a.beta);
    }

    const int s1 = ldg(a.blk_seg + b + 1);
    for (int sg = ldg(a.blk_seg + b); sg < s1; ++sg) {  // uniform over the CTA
        const unsigned e = ldg(a.seg_ptr + sg + 1);
        real_t sum = (real_t)0;
        for (unsigned j = ldg(a.seg_ptr + sg) + threadIdx.x; j < e; j += blockDim.x)
            sum = fma(ldg(a.coo_val + j), ldg(a.x + ldg(a.coo_col + j)), sum);
        sum = warp_reduce_sum(sum);
        if ((tid & 31) == 0) warp_sums[tid >> 5] = sum;
        __syncthreads();
        if (tid == 0) {
            real_t total = (real_t)0;
            for (int w = 0; w < nwarps; ++w) total += warp_sums[w];
            a.part[ldg(a.seg_slot + sg)] = total;
        }
        __syncthreads();
    }

    if (a.nsplit == 0) return;
    if (tid == 0) {
        __threadfence();
        const unsigned done = atomicAdd(a.ctr, 1u);
        is_last = (done == gridDim.x - 1u);
    }
    __syncthreads();
    if (!is_last) return;
    __threadfence();
    const volatile real_t* vpart = a.part;
    for (unsigned i = threadIdx.x; i < (unsigned)a.nsplit; i += blockDim.x) {
        real_t total = (real_t)0;
        const int p1 = ldg(a.split_ptr + i + 1);
        for (int p = ldg(a.split_ptr + i); p < p1; ++p) total += vpart[p];
        pbc_store(a.y, ldg(a.split_row + i), a.alpha, total, a.beta);
    }
    if (tid == 0) atomicExch(a.ctr, 0u);
}
