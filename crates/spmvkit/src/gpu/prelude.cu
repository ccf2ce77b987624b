// spmvkit kernel prelude: NVRTC prepends this to every method room's kernel.cu.
// Header-free CUDA C++ (no #include). Compiled with -DSPMVKIT_REAL_F64 (real_t = double) or
// -DSPMVKIT_REAL_F32 (real_t = float). Helpers shared by all rooms live here and only here.

#ifdef SPMVKIT_REAL_F64
typedef double real_t;
#define SPMVKIT_REAL_BYTES 8
#else
typedef float real_t;
#define SPMVKIT_REAL_BYTES 4
#endif

// The matrix values as a layout stores them (issue #25, docs/precision.md): val_t, widened
// exactly to real_t by widen_val as they are loaded (ldg_val). Without a define val_t is real_t
// and widen_val the identity. -DSPMVKIT_VAL_F16 / -DSPMVKIT_VAL_BF16: the 16 bits of an IEEE
// binary16 / a bfloat16 (with real_t float); -DSPMVKIT_VAL_F32: float (with real_t double).
// CPU twin: ValueStorage::round (values kept rounded, widened, on the host).
#if defined(SPMVKIT_VAL_F16) || defined(SPMVKIT_VAL_BF16)
typedef unsigned short val_t;
#elif defined(SPMVKIT_VAL_F32)
typedef float val_t;
#else
typedef real_t val_t;
#endif

__device__ __forceinline__ real_t widen_val(val_t v) {
#if defined(SPMVKIT_VAL_BF16)
    return __uint_as_float(((unsigned)v) << 16);
#elif defined(SPMVKIT_VAL_F16)
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
    return f;
#else
    return (real_t)v;
#endif
}

__device__ __forceinline__ real_t ldg_val(const val_t* p) { return widen_val(__ldg(p)); }

// CSR row offsets (issue #25, docs/offsets.md): off_t is what a row pointer holds, uoff_t the
// unsigned type of a position in col_idx and vals. -DSPMVKIT_OFF_U64: 64-bit offsets (nnz up to
// 2^40, the kernels that declare them); without it off_t is int and uoff_t unsigned, as every
// kernel has always read them. Rust twin: gpu::launch::RowOffsets.
#ifdef SPMVKIT_OFF_U64
typedef unsigned long long off_t;
typedef unsigned long long uoff_t;
#else
typedef int off_t;
typedef unsigned uoff_t;
#endif

#define FULL_MASK 0xffffffffu
#define WARP_SIZE 32

// Sum over the 32 lanes of a warp (all lanes active). Butterfly (xor) exchange: every lane gets
// the same, bitwise identical sum, in a fixed order (deterministic).
__device__ __forceinline__ real_t warp_reduce_sum(real_t v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
    return v;
}

// Sum over aligned groups of `width` lanes (width a power of two ≤ 32); every lane of a group
// gets its group's sum.
__device__ __forceinline__ real_t warp_reduce_sum_width(real_t v, int width) {
    for (int o = width >> 1; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o, width);
    return v;
}

// Inclusive prefix sum over the 32 lanes of a warp (Kogge-Stone; all lanes active).
__device__ __forceinline__ real_t warp_inclusive_scan(real_t v) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        real_t t = __shfl_up_sync(FULL_MASK, v, o);
        if (lane >= o) v += t;
    }
    return v;
}

// Atomic y[i] += v in real_t (hardware double atomics on sm_60+). Not deterministic.
__device__ __forceinline__ real_t atomic_add_real(real_t* p, real_t v) { return atomicAdd(p, v); }

// Grid-wide barrier for a cooperative launch (all CTAs co-resident). bar[0] counts arrivals and
// is reset by the last arriver, which then bumps the generation bar[1] that the others wait on;
// both start at zero when allocated and stay consistent across calls.
__device__ __forceinline__ void grid_barrier(unsigned* bar) {
    __syncthreads();
    if (threadIdx.x == 0) {
        volatile unsigned* gen = bar + 1;
        const unsigned g = *gen;
        __threadfence();
        if (atomicAdd(bar, 1u) == gridDim.x - 1) {
            atomicExch(bar, 0u);
            __threadfence();
            atomicAdd(bar + 1, 1u);
        } else {
            while (*gen == g) __nanosleep(32);
        }
        __threadfence();
    }
    __syncthreads();
}

// Read-only cached load (LDG.NC).
template <typename T>
__device__ __forceinline__ T ldg(const T* p) { return __ldg(p); }

// Streaming load that does not linger in L1/L2 (for data read exactly once).
template <typename T>
__device__ __forceinline__ T ldcs(const T* p) { return __ldcs(p); }

// ---- cp.async (sm_80+): asynchronous global -> shared copies -----------------------------------
__device__ __forceinline__ unsigned smem_addr(const void* p) {
    unsigned a;
    asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}
__device__ __forceinline__ const void* gmem_addr(const void* p) {
    const void* g;
    asm volatile("cvta.to.global.u64 %0, %1;" : "=l"(g) : "l"(p));
    return g;
}
__device__ __forceinline__ void cp_async_4(void* smem, const void* gmem) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_addr(smem)), "l"(gmem_addr(gmem)) : "memory");
}
__device__ __forceinline__ void cp_async_8(void* smem, const void* gmem) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(smem_addr(smem)), "l"(gmem_addr(gmem)) : "memory");
}
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(smem)), "l"(gmem_addr(gmem)) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait_group() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// y_i = alpha * sum + beta * y_i, never reading y when beta == 0 (so NaN garbage cannot leak).
__device__ __forceinline__ void store_axpby(real_t* y, int i, real_t alpha, real_t sum, real_t beta) {
    y[i] = (beta == (real_t)0) ? alpha * sum : alpha * sum + beta * y[i];
}

// The whole CTA sums vals[j] * x[col[j]] over j in [start, end): thread t takes j = start + t,
// start + t + blockDim.x, ... with fmas from zero; each warp reduces with warp_reduce_sum, and
// warp 0 reduces the per-warp sums (zeros past the last warp) the same way. The result is in every
// lane of warp 0 (other warps get zero). Every thread of the CTA must call it; `wsum` is 32 reals
// of shared memory, free again after the caller's next __syncthreads. blockDim.x is a multiple of
// 32. The CPU mirrors of this order are methods::common::warp::cta_sum and strided_partials.
// j is a 32-bit int (an unsigned or 64-bit j made csr-overlap's long rows slower:
// docs/methods/csr-overlap.md): it cannot overflow while end <= 2^31 - 1 - blockDim.x, which every caller's upload
// checks (teb, csr-overlap: nnz at most 2^31 - 1 - 1024).
__device__ __forceinline__ real_t cta_gather_sum(const real_t* __restrict__ vals,
                                                 const int* __restrict__ col,
                                                 const real_t* __restrict__ x, int start, int end,
                                                 real_t* wsum) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    real_t sum = (real_t)0;
    for (int j = start + (int)threadIdx.x; j < end; j += (int)blockDim.x)
        sum = fma(ldg(vals + j), ldg(x + ldg(col + j)), sum);
    sum = warp_reduce_sum(sum);
    if (lane == 0) wsum[warp] = sum;
    __syncthreads();
    real_t v = (real_t)0;
    if (warp == 0) v = warp_reduce_sum(lane < nwarps ? wsum[lane] : (real_t)0);
    return v;
}

// The argument struct of entries that take a CSR matrix and the SpMV operands (csr-scalar,
// csr-vector; the first field of csr-light's and merge's structs; vals as stored, val_t): its Rust twin is
// methods::common::csr::CsrArgs, and the launch layer checks the two layouts at compile time.
struct CsrArgs {
    int nrows;
    const off_t* row_ptr;
    const int* col_idx;
    const val_t* vals;
    const real_t* x;
    real_t* y;
    real_t alpha;
    real_t beta;
};
