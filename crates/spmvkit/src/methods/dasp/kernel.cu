// dasp: DASP SpMV (Lu & Liu, SC'23). See mod.rs for the layout.
//
// dasp_spmv: warps [0, nparts) do one part (long_chunk nonzeros) of a long row each, into
// long_part; then one row-block group each; then `spw` short tiles each; the remaining warps
// write y = beta*y for the empty rows. dasp_long_sum: a warp per long row adds its parts.
// f64 multiplies 8x4 tiles with mma.sync.aligned.m8n8k4.row.col.f64 (sm_80+): lane t holds
// A[t/4][t%4] and B[t%4][t/4] = x[col of its own A element], so D[m][m] is row m's dot product,
// held by lane 4m + m/2 as element m%2. f32 (no such MMA) does one FMA per lane and sums each
// group of 4 lanes.
// Strided nnz indices are 64-bit (the bounds are at most 2^31-1, and a 32-bit index would
// overflow within one stride of it; signed, so the loops unroll as before), and group-row
// offsets g * 8 + m are unsigned.

#ifdef SPMVKIT_REAL_F64
struct dasp_acc { double d0, d1; };
__device__ __forceinline__ void dasp_mma(dasp_acc& c, double a, double b) {
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
                 : "+d"(c.d0), "+d"(c.d1)
                 : "d"(a), "d"(b));
}
// The lane's share of the row sums: the diagonal element in its lane, zero elsewhere.
__device__ __forceinline__ double dasp_diag(const dasp_acc& c) {
    const int lane = threadIdx.x & 31, m = lane >> 2;
    return (lane == 4 * m + (m >> 1)) ? ((m & 1) ? c.d1 : c.d0) : 0.0;
}
#else
struct dasp_acc { float d0, d1; };
__device__ __forceinline__ void dasp_mma(dasp_acc& c, float a, float b) { c.d0 = fmaf(a, b, c.d0); }
__device__ __forceinline__ float dasp_diag(const dasp_acc& c) { return c.d0; }
#endif

// The dot product of the lane's tile row (m = lane/4), in all 4 lanes of the group.
__device__ __forceinline__ real_t dasp_row(const dasp_acc& c) {
    real_t v = dasp_diag(c);
    v += __shfl_xor_sync(FULL_MASK, v, 1);
    v += __shfl_xor_sync(FULL_MASK, v, 2);
    return v;
}

__device__ __forceinline__ void dasp_store(real_t* y, int i, real_t alpha, real_t sum, real_t beta) {
    real_t t = alpha * sum;
    y[i] = (beta == (real_t)0) ? t : fma(beta, y[i], t);
}

// Parameters: the fields of DaspArgs (gpu.rs) in order, checked at compile time; parameter
// lists, not the structs by value, because the compiled code depends on __restrict__ parameters,
// which struct members do not carry (gpu/launch.rs, Abi::Params).
extern "C" __global__ void dasp_spmv(
    int nparts, const int* __restrict__ part_start, const int* __restrict__ part_end,
    const int* __restrict__ long_cols, const real_t* __restrict__ long_vals, real_t* __restrict__ long_part,
    int ngroups, const int* __restrict__ blk_rows, const int* __restrict__ blk_slab_ptr,
    const int* __restrict__ blk_cols, const real_t* __restrict__ blk_vals,
    const int* __restrict__ irr_ptr, const int* __restrict__ irr_cols, const real_t* __restrict__ irr_vals,
    int nshort, int spw, const int* __restrict__ short_row1, const int* __restrict__ short_row2,
    const int* __restrict__ short_split, const int* __restrict__ short_cols, const real_t* __restrict__ short_vals,
    int nempty, const int* __restrict__ empty_rows,
    const real_t* __restrict__ x, real_t* __restrict__ y, real_t alpha, real_t beta) {
    const int lane = threadIdx.x & 31;
    const int m = lane >> 2, k = lane & 3;
    long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (w < nparts) {
        const int s = part_start[w], e = part_end[w];
        dasp_acc acc = {0, 0};
        for (long long base = s; base < e; base += 32) {
            const long long p = base + lane;
            real_t a = 0, b = 0;
            if (p < e) {
                a = ldg(long_vals + p);
                b = ldg(x + ldg(long_cols + p));
            }
            dasp_mma(acc, a, b);
        }
        const real_t sum = warp_reduce_sum(dasp_diag(acc));
        if (lane == 0) long_part[w] = sum;
        return;
    }
    w -= nparts;
    if (w < ngroups) {
        const int g = (int)w;
        dasp_acc acc = {0, 0};
        const int s1 = blk_slab_ptr[g + 1];
        for (int s = blk_slab_ptr[g]; s < s1; ++s) {
            const long long q = (long long)s * 32 + lane;
            dasp_mma(acc, ldg(blk_vals + q), ldg(x + ldg(blk_cols + q)));
        }
        const real_t sum = dasp_row(acc);
        real_t ir = 0;
        const unsigned gm = (unsigned)g * 8u + m;
        const int e = irr_ptr[gm + 1];
        for (long long p = (long long)irr_ptr[gm] + k; p < e; p += 4)
            ir = fma(ldg(irr_vals + p), ldg(x + ldg(irr_cols + p)), ir);
        ir += __shfl_xor_sync(FULL_MASK, ir, 1);
        ir += __shfl_xor_sync(FULL_MASK, ir, 2);
        const int row = blk_rows[gm];
        if (k == 0 && row >= 0) dasp_store(y, row, alpha, sum + ir, beta);
        return;
    }
    w -= ngroups;
    const long long nshort_warps = ((long long)nshort + spw - 1) / spw;
    if (w < nshort_warps) {
        const int t0 = (int)w * spw;
        const int t1 = min(t0 + spw, nshort);
        for (int t = t0; t < t1; ++t) {
            const long long q = (long long)t * 32 + lane;
            const real_t a = ldg(short_vals + q);
            const real_t b = ldg(x + ldg(short_cols + q));
            const int split = short_split[t * 8 + m];
            dasp_acc c1 = {0, 0}, c2 = {0, 0};
            dasp_mma(c1, k < split ? a : (real_t)0, b);
            dasp_mma(c2, k < split ? (real_t)0 : a, b);
            const real_t s1 = dasp_row(c1), s2 = dasp_row(c2);
            if (k == 0) {
                const int r1 = short_row1[t * 8 + m], r2 = short_row2[t * 8 + m];
                if (r1 >= 0) dasp_store(y, r1, alpha, s1, beta);
                if (r2 >= 0) dasp_store(y, r2, alpha, s2, beta);
            }
        }
        return;
    }
    w -= nshort_warps;
    const long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;
    const long long rest = nwarps - nparts - ngroups - nshort_warps;
    for (long long i = w * 32 + lane; i < nempty; i += rest * 32) dasp_store(y, empty_rows[i], alpha, (real_t)0, beta);
}

// Parameters: the fields of DaspLongSumArgs (gpu.rs) in order (gpu/launch.rs, Abi::Params).
extern "C" __global__ void dasp_long_sum(
    int nlong, const int* __restrict__ long_rows, const int* __restrict__ part_ptr,
    const real_t* __restrict__ long_part, real_t* __restrict__ y, real_t alpha, real_t beta) {
    const int lane = threadIdx.x & 31;
    const long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (w >= nlong) return;
    const int e = part_ptr[w + 1];
    real_t s = 0;
    for (long long p = (long long)part_ptr[w] + lane; p < e; p += 32) s += long_part[p];
    s = warp_reduce_sum(s);
    if (lane == 0) dasp_store(y, long_rows[w], alpha, s, beta);
}
