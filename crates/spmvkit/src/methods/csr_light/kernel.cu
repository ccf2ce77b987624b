// csr-light: LightSpMV (Liu & Schmidt, ASAP'15) — CSR with one vector of V lanes per row
// and rows handed out dynamically by a global counter (the paper's warp-level variant: lane 0
// of a warp takes rows for the whole warp with one atomicAdd and broadcasts the first id).
//
// Each atomicAdd takes `grab` iterations of 32/V rows (grab = 1 is the paper's scheme; more
// rows per atomic keep the single counter from becoming the bottleneck on millions of rows).
// Lane l of a vector takes entries j ≡ l (mod V) — for V = 32 from the row start aligned down
// to a multiple of 32, as LightSpMV does — accumulating with fma in order; the butterfly
// warp_reduce_sum_width adds the V partials in a fixed order. A row is always summed the same
// way whichever vector takes it, so the result is deterministic.
//
// Counter reset, inside every call and without a second launch: ctr[0] is the row counter and
// ctr[1] counts finished blocks. A block finishes when all its warps have seen the counter pass
// nrows; the last block to finish (ctr[1] reaching gridDim.x - 1) knows no warp of this launch
// touches ctr[0] again, and sets both to 0 for the next call (also under CUDA-graph replay).

template <int V>
__device__ __forceinline__ void light_rows(int nrows, const int* __restrict__ row_ptr,
                                           const int* __restrict__ col_idx,
                                           const val_t* __restrict__ vals,
                                           const real_t* __restrict__ x, real_t* __restrict__ y,
                                           real_t alpha, real_t beta, unsigned* ctr, int grab) {
    const unsigned lane = threadIdx.x & 31u;
    const unsigned vlane = lane & (unsigned)(V - 1);
    const unsigned vid = lane / (unsigned)V;
    const unsigned rows_per_iter = 32u / (unsigned)V;
    const unsigned chunk = rows_per_iter * (unsigned)grab;
    const unsigned n = (unsigned)nrows;
    for (;;) {
        unsigned base = 0;
        if (lane == 0) base = atomicAdd(ctr, chunk);
        base = __shfl_sync(FULL_MASK, base, 0);
        if (base >= n) break;
        for (int g = 0; g < grab; ++g) {
            const unsigned first = base + (unsigned)g * rows_per_iter;
            if (first >= n) break;  // warp-uniform
            const unsigned row = first + vid;
            real_t sum = (real_t)0;
            if (row < n) {
                const unsigned start = (unsigned)ldg(row_ptr + row);
                const unsigned end = (unsigned)ldg(row_ptr + row + 1);
                unsigned j;
                if (V == 32) {
                    j = (start & ~31u) + lane;
                    if (j >= start && j < end)
                        sum = fma(ldg_val(vals + j), ldg(x + ldg(col_idx + j)), sum);
                    j += 32u;
                } else {
                    j = start + vlane;
                }
#pragma unroll 4
                for (; j < end; j += (unsigned)V)
                    sum = fma(ldg_val(vals + j), ldg(x + ldg(col_idx + j)), sum);
            }
            sum = warp_reduce_sum_width(sum, V);
            if (vlane == 0 && row < n) {
                const real_t t = alpha * sum;
                y[row] = (beta == (real_t)0) ? t : fma(beta, y[row], t);
            }
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        const unsigned done = atomicAdd(ctr + 1, 1u);
        if (done == gridDim.x - 1u) {
            atomicExch(ctr, 0u);
            atomicExch(ctr + 1, 0u);
        }
    }
}

// The entries' one argument (its Rust twin: gpu.rs, checked against it at compile time): the
// matrix and operands (CsrArgs, prelude), then the counter and the rows per grab.
struct CsrLightArgs {
    CsrArgs csr;
    unsigned* ctr;
    int grab;
};

#define SPMVKIT_LIGHT_ENTRY(V)                                                                  \
    extern "C" __global__ void csr_light_v##V(const CsrLightArgs a) {                           \
        light_rows<V>(a.csr.nrows, a.csr.row_ptr, a.csr.col_idx, a.csr.vals, a.csr.x, a.csr.y,  \
                      a.csr.alpha, a.csr.beta, a.ctr, a.grab);                                  \
    }

SPMVKIT_LIGHT_ENTRY(2)
SPMVKIT_LIGHT_ENTRY(4)
SPMVKIT_LIGHT_ENTRY(8)
SPMVKIT_LIGHT_ENTRY(16)
SPMVKIT_LIGHT_ENTRY(32)
