// amf-csr: AMF-CSR (Gao et al., ICPADS'21; teb.md §2.3). The authors' GPU kernel is not public;
// this one is designed for the layout (see mod.rs): one CTA per block.
//   - a block of folded rows: a vector of TPV lanes per folded row; lane l takes entries
//     l, l + TPV, … of the fold, adding v * x[col] into one of four partial sums by the packed
//     local row (col << 2 | row); each sum is reduced by a width-TPV butterfly and lane 0 writes
//     the fold's rows (up to 4, consecutive from fold_row[f]);
//   - a block holding one long row: every thread strides over it, a warp butterfly, then thread 0
//     adds the warp sums in order.
// y = alpha*sum (+ beta*y fused), never read when beta == 0. No atomics: deterministic.
// Strided indices (entries, folds) are 64-bit: their bounds are at most 2^31-1, and a 32-bit int
// would overflow within one stride of it (signed, so the loops unroll as with int).

template <int TPV>
__device__ __forceinline__ void amf_block(const int* __restrict__ blk_fold,
                                          const int* __restrict__ fold_row,
                                          const int* __restrict__ fold_ptr,
                                          const unsigned* __restrict__ cols,
                                          const real_t* __restrict__ vals,
                                          const real_t* __restrict__ x, real_t* __restrict__ y,
                                          real_t alpha, real_t beta, int long_nnz) {
    __shared__ real_t warp_sums[32];
    const int f0 = ldg(blk_fold + blockIdx.x);
    const int f1 = ldg(blk_fold + blockIdx.x + 1);
    const int tid = (int)threadIdx.x;
    if (f1 == f0 + 1 && ldg(fold_row + f0 + 1) - ldg(fold_row + f0) == 1 &&
        ldg(fold_ptr + f0 + 1) - ldg(fold_ptr + f0) >= long_nnz) {
        const int s = ldg(fold_ptr + f0), e = ldg(fold_ptr + f0 + 1);
        real_t sum = (real_t)0;
        for (long long j = (long long)s + tid; j < e; j += blockDim.x)
            sum = fma(ldg(vals + j), ldg(x + (ldg(cols + j) >> 2)), sum);
        sum = warp_reduce_sum(sum);
        if ((tid & 31) == 0) warp_sums[tid >> 5] = sum;
        __syncthreads();
        if (tid == 0) {
            real_t total = (real_t)0;
            for (int w = 0; w < (int)(blockDim.x >> 5); ++w) total += warp_sums[w];
            const int row = ldg(fold_row + f0);
            const real_t t = alpha * total;
            y[row] = (beta == (real_t)0) ? t : fma(beta, y[row], t);
        }
        return;
    }
    const int nvec = (int)blockDim.x / TPV;
    const int vid = tid / TPV;
    const int vl = tid % TPV;
    for (long long base = f0; base < f1; base += nvec) {  // uniform over the CTA
        const long long f = base + vid;
        const bool active = f < f1;
        real_t a0 = (real_t)0, a1 = (real_t)0, a2 = (real_t)0, a3 = (real_t)0;
        if (active) {
            const int e = ldg(fold_ptr + f + 1);
            for (long long j = (long long)ldg(fold_ptr + f) + vl; j < e; j += TPV) {
                const unsigned c = ldg(cols + j);
                const real_t v = ldg(vals + j);
                const real_t xv = ldg(x + (c >> 2));
                switch (c & 3u) {
                    case 0: a0 = fma(v, xv, a0); break;
                    case 1: a1 = fma(v, xv, a1); break;
                    case 2: a2 = fma(v, xv, a2); break;
                    default: a3 = fma(v, xv, a3); break;
                }
            }
        }
        a0 = warp_reduce_sum_width(a0, TPV);
        a1 = warp_reduce_sum_width(a1, TPV);
        a2 = warp_reduce_sum_width(a2, TPV);
        a3 = warp_reduce_sum_width(a3, TPV);
        if (active && vl == 0) {
            const int r0 = ldg(fold_row + f);
            const int nr = ldg(fold_row + f + 1) - r0;
            const real_t s[4] = {a0, a1, a2, a3};
            for (int i = 0; i < nr; ++i) {
                const real_t t = alpha * s[i];
                y[r0 + i] = (beta == (real_t)0) ? t : fma(beta, y[r0 + i], t);
            }
        }
    }
}

// The entries' one argument (its Rust twin: gpu.rs, checked against it at compile time).
struct AmfArgs {
    const int* blk_fold;
    const int* fold_row;
    const int* fold_ptr;
    const unsigned* cols;
    const real_t* vals;
    const real_t* x;
    real_t* y;
    real_t alpha;
    real_t beta;
    int long_nnz;
};

#define SPMVKIT_AMF_ENTRY(TPV)                                                                  \
    extern "C" __global__ void amf_csr_t##TPV(const AmfArgs a) {                                \
        amf_block<TPV>(a.blk_fold, a.fold_row, a.fold_ptr, a.cols, a.vals, a.x, a.y, a.alpha,   \
                       a.beta, a.long_nnz);                                                     \
    }

SPMVKIT_AMF_ENTRY(1)
SPMVKIT_AMF_ENTRY(2)
SPMVKIT_AMF_ENTRY(4)
SPMVKIT_AMF_ENTRY(8)
SPMVKIT_AMF_ENTRY(16)
SPMVKIT_AMF_ENTRY(32)
