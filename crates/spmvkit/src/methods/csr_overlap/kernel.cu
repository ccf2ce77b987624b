// csr-overlap / csr-full-overlap: CSR-Partial-Overlap (Zeng & Zou, Electronics 2023, §4.1 Alg.
// 4-6, §4.3 Alg. 9). One launch computes batches [first_batch, first_batch + nbatches) and,
// when ntasks > 0, the extra-long rows:
//   - CTAs 0 .. long_ctas-1 take long-row tasks (CTA c: tasks c, c + long_ctas, ...), all
//     threads striding through the task, warp sums in shared memory, the first warp adding them
//     (Alg. 9; a task is a whole row unless long_chunk cut rows, see long_rows_cta);
//   - the other CTAs take per_cta consecutive batches each (Alg. 4). Shared memory holds two
//     buffers of values (vcap entries each) and two of column indices (ccap each). Batch i+1 is
//     copied global->shared with cp.async (a commit group per batch) while batch i is computed;
//     wait_group 1 + __syncthreads before computing, __syncthreads after (the buffer is refilled
//     next). A batch's entries [s, e) land at buffer index j - base16(s) (s rounded down to a
//     16-byte boundary of the source), so the aligned middle moves in 16-byte copies and only
//     the head and tail in 4/8-byte ones.
//   - A batch is computed by vectors of V = 2^batch_vlog[b] lanes (Alg. 5/6, choice made on the
//     host): vector k takes rows r0 + k, r0 + k + T/V, ...; lane l adds entries j = start + l,
//     start + l + V, ... with fma, then a width-V xor butterfly. Rows are visited in rounds that
//     are uniform across the CTA, so every warp shuffles with all its lanes.
// y_i = alpha*sum (+ fma(beta, y_i, alpha*sum) when beta != 0; y is not read when beta == 0).
// Deterministic: no atomics, fixed lane order. The CPU mirror (cpu.rs) reproduces the bits.
// Index widths: rows and nnz offsets are 32-bit ints, as in the paper's code (64-bit or unsigned
// loops cost registers and unrolling; measured in docs/methods/csr-overlap.md). No index passes
// 2^31 - 1 because the upload refuses rows or nnz within 1024 (one CTA stride) of it.

__device__ __forceinline__ void cp_async_elem(int* d, const int* s) { cp_async_4(d, s); }
__device__ __forceinline__ void cp_async_elem(float* d, const float* s) { cp_async_4(d, s); }
__device__ __forceinline__ void cp_async_elem(double* d, const double* s) { cp_async_8(d, s); }

// Entries of E per 16 bytes, and how many entries src sits past a 16-byte boundary (0 for
// cudaMalloc'd buffers; any entry-aligned base works).
template <typename E>
__device__ __forceinline__ int phase16(const E* src) {
    return (int)((reinterpret_cast<unsigned long long>(src) / sizeof(E)) & (16 / sizeof(E) - 1));
}

// Buffer index 0 holds entry base16(s) = the last entry at or before s on a 16-byte boundary.
template <typename E>
__device__ __forceinline__ int base16(const E* src, int s) {
    const int P = 16 / (int)sizeof(E), off = phase16(src);
    return ((s + off) & ~(P - 1)) - off;
}

// Copies src[s, e) to dst[j - base16(src, s)] with cp.async (dst 16-byte aligned): the head
// before the first 16-byte boundary and the tail after the last one entry by entry (4 or 8
// bytes), the middle in 16-byte copies.
template <typename E>
__device__ __forceinline__ void copy_batch(E* dst, const E* src, int s, int e) {
    const int P = 16 / (int)sizeof(E), off = phase16(src);
    const int base = ((s + off) & ~(P - 1)) - off;
    int a0 = ((s + off + P - 1) & ~(P - 1)) - off;
    if (a0 > e) a0 = e;
    int a1 = ((e + off) & ~(P - 1)) - off;
    if (a1 < a0) a1 = a0;
    const int t = threadIdx.x, nt = blockDim.x;
    for (int i = s + t; i < a0; i += nt) cp_async_elem(dst + (i - base), src + i);
    for (int c = a0 + t * P; c < a1; c += nt * P) cp_async_16(dst + (c - base), src + c);
    // The tail from the last thread down, so it rarely lands on the head's threads.
    for (int i = a1 + (nt - 1 - t); i < e; i += nt) cp_async_elem(dst + (i - base), src + i);
}

template <int V>
__device__ __forceinline__ void batch_rows(int r0, int r1, int bv, int bc,
                                           const int* __restrict__ row_ptr,
                                           const real_t* sv, const int* sc,
                                           const real_t* __restrict__ x, real_t* __restrict__ y,
                                           real_t alpha, real_t beta) {
    const int vl = threadIdx.x & (V - 1);
    const int vid = threadIdx.x / V;
    const int nv = blockDim.x / V;
    for (int base = r0; base < r1; base += nv) {
        const int row = base + vid;
        real_t sum = (real_t)0;
        if (row < r1) {
            const int rs = ldg(row_ptr + row), re = ldg(row_ptr + row + 1);
            // Unrolled so that several x gathers are in flight per thread (the fma chain keeps
            // its order, so the bits do not change).
#pragma unroll 4
            for (int j = rs + vl; j < re; j += V) sum = fma(sv[j - bv], ldg(x + sc[j - bc]), sum);
        }
        if (V > 1) sum = warp_reduce_sum_width(sum, V);
        if (vl == 0 && row < r1) {
            const real_t t = alpha * sum;
            y[row] = (beta == (real_t)0) ? t : fma(beta, y[row], t);
        }
    }
}

// Alg. 9: CTA c of long_ctas takes long-row tasks c, c + long_ctas, ... A task is a long row's
// nonzeros [ts, te) (the whole row unless long_chunk cut it): all threads stride through it,
// warp sums go to shared memory, the first warp adds them. A row of one task writes y; a row of
// several writes its partial, takes a ticket on the row's counter, and the CTA holding the last
// ticket adds the row's partials in a fixed order (warp 0: lane k takes k, k + 32, ...; then
// the butterfly), writes y and resets the counter for the next call.
__device__ __forceinline__ void long_rows_cta(const int* __restrict__ long_tasks, int ntasks,
                                              int long_ctas, const int* __restrict__ long_rows,
                                              const int* __restrict__ long_first,
                                              const int* __restrict__ long_count,
                                              real_t* long_partial, unsigned* long_counter,
                                              const int* __restrict__ col_idx,
                                              const real_t* __restrict__ vals,
                                              const real_t* __restrict__ x, real_t* __restrict__ y,
                                              real_t alpha, real_t beta, real_t* wsum,
                                              unsigned* ticket) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int t = blockIdx.x; t < ntasks; t += long_ctas) {
        const int lr = ldg(long_tasks + 4 * t);
        const int ts = ldg(long_tasks + 4 * t + 1), te = ldg(long_tasks + 4 * t + 2);
        const int row = ldg(long_rows + lr);
        const int count = ldg(long_count + lr);
        const real_t v = cta_gather_sum(vals, col_idx, x, ts, te, wsum);
        if (threadIdx.x == 0) {
            if (count == 1) {
                const real_t r = alpha * v;
                y[row] = (beta == (real_t)0) ? r : fma(beta, y[row], r);
            } else {
                long_partial[t] = v;
                __threadfence();
                *ticket = atomicAdd(long_counter + lr, 1u);
            }
        }
        __syncthreads();
        if (count > 1 && *ticket == (unsigned)(count - 1)) {  // uniform: the row's last CTA
            if (warp == 0) {
                __threadfence();
                const int first = ldg(long_first + lr);
                real_t acc = (real_t)0;
                for (int k = lane; k < count; k += 32) acc += __ldcg(long_partial + first + k);
                acc = warp_reduce_sum(acc);
                if (lane == 0) {
                    const real_t r = alpha * acc;
                    y[row] = (beta == (real_t)0) ? r : fma(beta, y[row], r);
                    long_counter[lr] = 0u;
                }
            }
        }
        __syncthreads();
    }
}

// Parameters: the fields of OverlapArgs (gpu.rs) in order, checked at compile time; a parameter
// list, not the struct by value, because the compiled code depends on __restrict__ parameters,
// which struct members do not carry (gpu/launch.rs, Abi::Params).
extern "C" __global__ void csr_overlap(const int* __restrict__ batch_rows_se,
                                       const unsigned char* __restrict__ batch_vlog,
                                       int first_batch, int nbatches, int per_cta,
                                       const int* __restrict__ long_tasks, int ntasks,
                                       int long_ctas, const int* __restrict__ long_rows,
                                       const int* __restrict__ long_first,
                                       const int* __restrict__ long_count,
                                       real_t* long_partial, unsigned* long_counter,
                                       const int* __restrict__ row_ptr,
                                       const int* __restrict__ col_idx,
                                       const real_t* __restrict__ vals,
                                       const real_t* __restrict__ x, real_t* __restrict__ y,
                                       real_t alpha, real_t beta, int vcap, int ccap) {
    __shared__ real_t wsum[32];
    __shared__ unsigned ticket;
    if ((int)blockIdx.x < long_ctas) {
        long_rows_cta(long_tasks, ntasks, long_ctas, long_rows, long_first, long_count,
                      long_partial, long_counter, col_idx, vals, x, y, alpha, beta, wsum,
                      &ticket);
        return;
    }
    extern __shared__ __align__(16) unsigned char ovl_smem[];
    real_t* sv = reinterpret_cast<real_t*>(ovl_smem);
    int* sc = reinterpret_cast<int*>(sv + 2 * vcap);

    const int cta = (int)blockIdx.x - long_ctas;
    const int last = first_batch + nbatches;
    const int b0 = first_batch + cta * per_cta;
    const int b1 = min(b0 + per_cta, last);
    if (b0 >= b1) return;

    // Stage 1 for the first batch.
    {
        const int s = ldg(row_ptr + ldg(batch_rows_se + 2 * b0));
        const int e = ldg(row_ptr + ldg(batch_rows_se + 2 * b0 + 1));
        copy_batch<real_t>(sv, vals, s, e);
        copy_batch<int>(sc, col_idx, s, e);
    }
    cp_async_commit();
    for (int b = b0; b < b1; ++b) {
        const int buf = (b - b0) & 1;
        if (b + 1 < b1) {  // stage 1 for the next batch, into the other buffer
            const int s = ldg(row_ptr + ldg(batch_rows_se + 2 * (b + 1)));
            const int e = ldg(row_ptr + ldg(batch_rows_se + 2 * (b + 1) + 1));
            copy_batch<real_t>(sv + (buf ^ 1) * vcap, vals, s, e);
            copy_batch<int>(sc + (buf ^ 1) * ccap, col_idx, s, e);
        }
        cp_async_commit();
        cp_async_wait_group<1>();  // this batch's group is complete (for this thread)
        __syncthreads();           // ... and for every thread
        // Stage 2: compute batch b.
        const int r0 = ldg(batch_rows_se + 2 * b), r1 = ldg(batch_rows_se + 2 * b + 1);
        const int s = ldg(row_ptr + r0);
        const int bv = base16(vals, s), bc = base16(col_idx, s);
        const real_t* bsv = sv + buf * vcap;
        const int* bsc = sc + buf * ccap;
        switch (ldg(batch_vlog + b)) {
            case 0: batch_rows<1>(r0, r1, bv, bc, row_ptr, bsv, bsc, x, y, alpha, beta); break;
            case 1: batch_rows<2>(r0, r1, bv, bc, row_ptr, bsv, bsc, x, y, alpha, beta); break;
            case 2: batch_rows<4>(r0, r1, bv, bc, row_ptr, bsv, bsc, x, y, alpha, beta); break;
            case 3: batch_rows<8>(r0, r1, bv, bc, row_ptr, bsv, bsc, x, y, alpha, beta); break;
            case 4: batch_rows<16>(r0, r1, bv, bc, row_ptr, bsv, bsc, x, y, alpha, beta); break;
            default: batch_rows<32>(r0, r1, bv, bc, row_ptr, bsv, bsc, x, y, alpha, beta); break;
        }
        __syncthreads();  // the buffer is refilled by the next iteration's stage 1
    }
}
