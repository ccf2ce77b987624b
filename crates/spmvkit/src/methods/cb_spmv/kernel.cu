// cb-spmv: CB-SpMV (Cong et al., ICS'25, §3) — one warp per 16x16 sub-block, 8 warps (slots) per
// CTA, the slot table built by LPT balancing on the host.
//
// Slot metadata: two u64 words, w0 = arena offset << 9 | nnz, w1 = block row << 32 | block col
// (block row 0xffffffff = padding slot). The format follows from nnz and the thresholds
// (COO nnz <= coo_max, dense nnz >= dense_min, else CSR). A region at arena + offset holds the
// nibble-packed u8 indices (COO: row<<4|col; CSR: rp[17] + col[nnz]), zero padding to 8 bytes,
// then the values (dense: 256, row-major). With split = 1 (aggregation ablation) the values sit
// in their own array at split_vals + voff[slot].
//
// x: lanes 0..15 stage x[bc*16 + lane] (gathered: x[gcols[gptr[br] + bc*16 + lane]], the
// column offset bc*16 added in EVERY format) into a per-warp shared slice, then __syncwarp.
// Row sums: COO — lane per nonzero, a segmented warp scan by row (entries are row-major) so
// one add per row run instead of one atomic per nonzero; CSR — 2 lanes per row, pair sum;
// dense — 2 lanes per row (8 columns each), pair sum. Full precision throughout (no FP16).
//
// y (fused = 1): the first block of a panel to take the panel's ticket writes
// y = alpha*s + beta*y for its 16 rows (y unread when beta == 0), fences, and raises ready[br];
// later blocks of the panel compute first, wait for ready (only ever on a running warp), then
// atomicAdd alpha*s to rows with entries, and count themselves out; the last resets ticket
// and flag for the next call. Panels with one block write y directly, no atomics.
// fused = 0: cb_scale_y ran before, every block adds with atomics.

#define CB_WARPS 8
#define CB_BS 16

extern "C" __global__ void cb_scale_y(int m, real_t* __restrict__ y, real_t beta) {
    const unsigned stride = gridDim.x * blockDim.x;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)m; i += stride)
        y[i] = (beta == (real_t)0) ? (real_t)0 : beta * y[i];
}

__device__ __forceinline__ unsigned cb_pad8(unsigned b) { return (b + 7u) & ~7u; }

extern "C" __global__ void __launch_bounds__(CB_WARPS * 32)
cb_spmv(const unsigned char* __restrict__ arena, const unsigned long long* __restrict__ meta,
        const real_t* __restrict__ split_vals, const unsigned long long* __restrict__ voff,
        int split, const unsigned* __restrict__ panel_nb, unsigned* tick, unsigned* ready,
        const unsigned* __restrict__ gptr, const unsigned* __restrict__ gcols, int gathered,
        const real_t* __restrict__ x, real_t* y, real_t alpha, real_t beta, int m, int n,
        int coo_max, int dense_min, int fused) {
    __shared__ real_t s_x[CB_WARPS][CB_BS];
    __shared__ real_t s_acc[CB_WARPS][CB_BS];
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    const unsigned long long slot = (unsigned long long)blockIdx.x * CB_WARPS + warp;
    const unsigned long long w0 = ldg(meta + 2 * slot);
    const unsigned long long w1 = ldg(meta + 2 * slot + 1);
    const unsigned br = (unsigned)(w1 >> 32);
    if (br == 0xffffffffu) return;
    const unsigned bc = (unsigned)(w1 & 0xffffffffull);
    const int nnz = (int)(w0 & 511ull);
    const unsigned char* region = arena + (w0 >> 9);

    real_t rs = (real_t)0;  // lane r < 16: the sum of row r
    unsigned mask = 0;      // rows with entries
    if (nnz > 0) {
        real_t* xs = s_x[warp];
        if (lane < CB_BS) {
            real_t v = (real_t)0;
            const unsigned long long k = (unsigned long long)bc * CB_BS + lane;
            if (gathered) {
                const unsigned p0 = ldg(gptr + br), p1 = ldg(gptr + br + 1);
                if (p0 + k < p1) v = ldg(x + ldg(gcols + p0 + k));
            } else if (k < (unsigned long long)n) {
                v = ldg(x + k);
            }
            xs[lane] = v;
        }
        __syncwarp();
        if (nnz <= coo_max) {
            const real_t* val = split ? split_vals + ldg(voff + slot)
                                      : (const real_t*)(region + cb_pad8((unsigned)nnz));
            real_t* acc = s_acc[warp];
            if (lane < CB_BS) acc[lane] = (real_t)0;
            __syncwarp();
            for (int base = 0; base < nnz; base += 32) {
                const int k = base + lane;
                int row = CB_BS + lane;  // unique key for idle lanes
                real_t v = (real_t)0;
                if (k < nnz) {
                    const unsigned e = region[k];
                    row = (int)(e >> 4);
                    v = ldg(val + k) * xs[e & 15u];
                    mask |= 1u << row;
                }
#pragma unroll
                for (int o = 1; o < 32; o <<= 1) {
                    const real_t t = __shfl_up_sync(FULL_MASK, v, o);
                    const int r2 = __shfl_up_sync(FULL_MASK, row, o);
                    if (lane >= o && r2 == row) v += t;
                }
                const int rnext = __shfl_down_sync(FULL_MASK, row, 1);
                if (k < nnz && (lane == 31 || rnext != row)) acc[row] += v;
                __syncwarp();
            }
            mask = __reduce_or_sync(FULL_MASK, mask);
            if (lane < CB_BS) rs = acc[lane];
        } else {
            const int r = lane >> 1, h = lane & 1;
            real_t sum = (real_t)0;
            if (nnz >= dense_min) {
                const real_t* val = split ? split_vals + ldg(voff + slot) : (const real_t*)region;
                const real_t* p = val + r * CB_BS + h * 8;
#pragma unroll
                for (int j = 0; j < 8; ++j) sum += ldg(p + j) * xs[h * 8 + j];
                mask = 0xffffu;
            } else {
                const unsigned char* rp = region;
                const unsigned char* col = region + CB_BS + 1;
                const real_t* val = split ? split_vals + ldg(voff + slot)
                                          : (const real_t*)(region + cb_pad8(CB_BS + 1 + (unsigned)nnz));
                const int s = rp[r];
                const int e = (r == CB_BS - 1) ? nnz : (int)rp[r + 1];
                for (int k = s + h; k < e; k += 2) sum += ldg(val + k) * xs[col[k]];
                mask = __reduce_or_sync(FULL_MASK, (e > s) ? (1u << r) : 0u);
            }
            sum += __shfl_xor_sync(FULL_MASK, sum, 1);
            rs = __shfl_sync(FULL_MASK, sum, (2 * lane) & 31);
        }
    }

    const unsigned i = br * CB_BS + lane;
    const bool mine = lane < CB_BS && i < (unsigned)m;
    if (!fused) {
        if (mine && ((mask >> lane) & 1u)) atomic_add_real(y + i, alpha * rs);
        return;
    }
    const unsigned nb = ldg(panel_nb + br);
    if (nb == 1) {
        if (mine) y[i] = (beta == (real_t)0) ? alpha * rs : alpha * rs + beta * y[i];
        return;
    }
    unsigned t = 0;
    if (lane == 0) t = atomicAdd(tick + br, 1u);
    t = __shfl_sync(FULL_MASK, t, 0);
    if (t == 0) {
        if (mine) {
            const real_t old = (beta == (real_t)0) ? (real_t)0 : beta * __ldcg(y + i);
            __stcg(y + i, alpha * rs + old);
            __threadfence();
        }
        __syncwarp();
        if (lane == 0) {
            __threadfence();
            atomicExch(ready + br, 1u);
        }
    } else {
        if (lane == 0) {
            while (*(volatile unsigned*)(ready + br) == 0u) __nanosleep(32);
            __threadfence();
        }
        __syncwarp();
        if (mine && ((mask >> lane) & 1u)) atomic_add_real(y + i, alpha * rs);
        __syncwarp();
        if (lane == 0) {
            const unsigned f = atomicAdd(tick + br, 1u);
            if (f == 2u * nb - 2u) {
                tick[br] = 0u;
                ready[br] = 0u;
            }
        }
    }
}
