// fastload: FastLoad SpMV (Hu et al., TPDS 2024, §IV-C, Alg. 2). One entry point, two roles:
//
// Prologue (flag FL_PRO, the first `npro` CTAs of the grid by ticket order):
//   y = beta * y (y = 0 when beta == 0, y unread) when FL_SCALE; xs[j'] = x[perm[j']] when FL_GATHER.
// Blocks (flag FL_MAIN): warp w takes `bpw` (<= 32) consecutive blocks, their metadata fetched
// by lanes 0..bpw-1 at once and broadcast by shuffles. For a block (ptr, col0, len, fmt),
// lane l < len owns sorted column col0 + l; its x value is loaded once (coalesced from xs, or
// x[perm[col0 + l]]) and kept while the next block starts at the same column. Round r loads
// vals/row_idx[ptr + r * len + l] (coalesced, streaming) and adds alpha * a * x to y by the block's
// format: 0 one atomic per lane; 1 (whole round one row) warp reduction + one atomic; 2 segmented
// suffix sum bounded by each lane's run end (tail flags from one shuffle + one ballot), one atomic
// per run at its head.
//
// Hub rows: rows the builder split into `hub_slots` virtual rows (row ids nrows + i·slots + s) add
// into hub[(r − nrows)·HUB_SPREAD], one slot per 32-byte sector, so that the atomics of one long
// row spread over many addresses instead of serialising on one; fastload_hub_combine then adds
// each hub's slots into y[hub_rows[i]] and zeroes them for the next call.
//
// Grid (fastload_spmv_grid, `fuse=grid`): one cooperative launch of as many CTAs as fit the GPU
// at once; all of them run the prologue's share, meet at a grid barrier (an arrival counter
// sync[0] and a generation sync[1]), then stride over the warps' block groups. One launch and no
// per-warp waiting, for small matrices whose call is mostly launch overhead.
//
// Fused (FL_PRO | FL_MAIN, one launch): every CTA takes a ticket (atomicAdd on sync[0]); tickets
// < npro run the prologue and then bump sync[1]; the others wait (lane 0 of each warp spins) until
// sync[1] == npro before their first x load / atomic. A waiting CTA only waits on CTAs holding
// smaller tickets, which never wait, so the grid cannot deadlock. The last CTA to finish (sync[2])
// zeroes the three counters for the next call on the stream.

#define FL_GATHER 1
#define FL_SCALE 2
#define FL_MAIN 4
#define FL_PRO 8
#define FL_OPT 16
#define HUB_SPREAD (32 / SPMVKIT_REAL_BYTES)

__device__ __forceinline__ void fl_prologue(unsigned slice, unsigned nslices, int flags, int nrows,
                                            int ncols, real_t* y, real_t beta,
                                            const int* __restrict__ perm,
                                            const real_t* __restrict__ x, real_t* xs) {
    const unsigned stride = nslices * blockDim.x;
    const unsigned start = slice * blockDim.x + threadIdx.x;
    if (flags & FL_SCALE) {
        if (beta == (real_t)0) {
            for (unsigned i = start; i < (unsigned)nrows; i += stride) y[i] = (real_t)0;
        } else {
            for (unsigned i = start; i < (unsigned)nrows; i += stride) y[i] = beta * y[i];
        }
    }
    if (flags & FL_GATHER) {
        for (unsigned j = start; j < (unsigned)ncols; j += stride) xs[j] = ldg(x + ldg(perm + j));
    }
}

// The adds of one round: lane < len holds a (value) and r (virtual row); xv its x value.
__device__ __forceinline__ void fl_adds(real_t v, int r, int len, unsigned fmt, bool active,
                                        int lane, real_t alpha, real_t* y, int nrows,
                                        real_t* hub) {
    real_t* dst = r < nrows ? y + r : hub + (long long)(r - nrows) * HUB_SPREAD;
    if (fmt == 0u) {
        if (active) atomic_add_real(dst, alpha * v);
    } else if (fmt == 1u) {
        v = warp_reduce_sum(v);
        if (lane == 0) atomic_add_real(dst, alpha * v);
    } else {
        const int rn = __shfl_down_sync(FULL_MASK, r, 1);
        const int rp = __shfl_up_sync(FULL_MASK, r, 1);
        const bool tail = active && (lane == len - 1 || rn != r);
        const unsigned tails = __ballot_sync(FULL_MASK, tail);
        const int e = lane + __ffs(tails >> lane) - 1;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const real_t t = __shfl_down_sync(FULL_MASK, v, o);
            if (lane + o <= e) v += t;
        }
        if (active && (lane == 0 || rp != r)) atomic_add_real(dst, alpha * v);
    }
}

// Warp-level body: the warp takes blocks [first, first + bpw) (clipped to nblocks).
__device__ __forceinline__ void fl_blocks(long long first, int nblocks, int bpw,
                                          const int* __restrict__ blk_ptr,
                                          const int* __restrict__ blk_col,
                                          const unsigned char* __restrict__ blk_info,
                                          const int* __restrict__ row_idx,
                                          const real_t* __restrict__ vals,
                                          const int* __restrict__ perm,
                                          const real_t* __restrict__ x, const real_t* xs,
                                          real_t* y, int nrows, real_t alpha, unsigned* sync,
                                          int npro, int flags, real_t* hub, bool must_wait) {
    const int lane = threadIdx.x & 31;
    const bool opt = (flags & FL_OPT) != 0;
    const bool gather = (flags & FL_GATHER) != 0;
    // Lanes k < bpw (bpw <= 32) fetch the metadata of the warp's k-th block in one coalesced go.
    int m_start = 0, m_end = 0, m_col = 0;
    unsigned m_info = 0u;
    const long long mine = first + lane;
    if (lane < bpw && mine < (long long)nblocks) {
        m_start = ldg(blk_ptr + mine);
        m_end = ldg(blk_ptr + mine + 1);
        m_col = ldg(blk_col + mine);
        m_info = ldg(blk_info + mine);
    }
    const long long left = (long long)nblocks - first;
    const int nb = left <= 0 ? 0 : (left < (long long)bpw ? (int)left : bpw);
    int prev_col = -1, prev_len = 0;
    real_t xv = (real_t)0;
    for (int k = 0; k < nb; ++k) {
        const int start = __shfl_sync(FULL_MASK, m_start, k);
        const int end = __shfl_sync(FULL_MASK, m_end, k);
        const int col0 = __shfl_sync(FULL_MASK, m_col, k);
        const unsigned info = __shfl_sync(FULL_MASK, m_info, k);
        const int len = (int)(info & 63u);
        const unsigned fmt = opt ? (info >> 6) : 0u;
        const bool active = lane < len;
        bool newx = col0 != prev_col || len != prev_len;
        prev_col = col0;
        prev_len = len;
        for (int base = start; base < end; base += len) {
            real_t a = (real_t)0;
            int r = -1;
            if (active) {
                a = ldcs(vals + base + lane);
                r = ldcs(row_idx + base + lane);
            }
            if (newx && !gather) xv = active ? ldg(x + ldg(perm + col0 + lane)) : (real_t)0;
            if (must_wait) {
                // The prologue (y scaling, x gather) must be complete before x_sorted is read
                // and before any atomic lands in y; the matrix loads above are in flight.
                if (lane == 0) {
                    while (*(volatile unsigned*)(sync + 1) < (unsigned)npro) __nanosleep(100);
                    __threadfence();
                }
                __syncwarp();
                must_wait = false;
            }
            if (newx && gather) xv = active ? __ldcg(xs + col0 + lane) : (real_t)0;
            newx = false;
            fl_adds(a * xv, r, len, fmt, active, lane, alpha, y, nrows, hub);
        }
    }
}

// Parameters: the fields of FastLoadArgs (gpu.rs) in order, checked at compile time, as for
// fastload_spmv_grid and (HubCombineArgs) fastload_hub_combine; parameter lists, not the structs
// by value, because the compiled code depends on __restrict__ parameters, which struct members do
// not carry (gpu/launch.rs, Abi::Params).
extern "C" __global__ void fastload_spmv(int nblocks, int bpw, const int* __restrict__ blk_ptr,
                                         const int* __restrict__ blk_col,
                                         const unsigned char* __restrict__ blk_info,
                                         const int* __restrict__ row_idx,
                                         const real_t* __restrict__ vals,
                                         const int* __restrict__ perm,
                                         const real_t* __restrict__ x, real_t* xs, real_t* y,
                                         int nrows, int ncols, real_t alpha, real_t beta,
                                         unsigned* sync, int npro, int flags, real_t* hub) {
    __shared__ unsigned s_ticket;
    const bool fused = (flags & FL_PRO) && (flags & FL_MAIN);
    unsigned vb = blockIdx.x;
    if (fused) {
        if (threadIdx.x == 0) s_ticket = atomicAdd(sync, 1u);
        __syncthreads();
        vb = s_ticket;
    }
    bool must_wait = false;
    if (flags & FL_PRO) {
        if (vb < (unsigned)npro) {
            fl_prologue(vb, (unsigned)npro, flags, nrows, ncols, y, beta, perm, x, xs);
            if (fused) {
                __threadfence();
                __syncthreads();
                if (threadIdx.x == 0) {
                    atomicAdd(sync + 1, 1u);
                    if (atomicAdd(sync + 2, 1u) == gridDim.x - 1) {
                        sync[0] = 0u;
                        sync[1] = 0u;
                        sync[2] = 0u;
                        __threadfence();
                    }
                }
            }
            return;
        }
        vb -= (unsigned)npro;
        must_wait = fused;
    }

    const unsigned warps = blockDim.x >> 5;
    const long long first = ((long long)vb * warps + (threadIdx.x >> 5)) * (long long)bpw;
    fl_blocks(first, nblocks, bpw, blk_ptr, blk_col, blk_info, row_idx, vals, perm, x, xs, y, nrows,
              alpha, sync, npro, flags, hub, must_wait);
    if (fused) {
        __syncthreads();
        if (threadIdx.x == 0 && atomicAdd(sync + 2, 1u) == gridDim.x - 1) {
            sync[0] = 0u;
            sync[1] = 0u;
            sync[2] = 0u;
            __threadfence();
        }
    }
}

// Parameters: the fields of FastLoadArgs (gpu.rs) in order (gpu/launch.rs, Abi::Params).
extern "C" __global__ void fastload_spmv_grid(int nblocks, int bpw, const int* __restrict__ blk_ptr,
                                              const int* __restrict__ blk_col,
                                              const unsigned char* __restrict__ blk_info,
                                              const int* __restrict__ row_idx,
                                              const real_t* __restrict__ vals,
                                              const int* __restrict__ perm,
                                              const real_t* __restrict__ x, real_t* xs,
                                              real_t* y, int nrows, int ncols, real_t alpha,
                                              real_t beta, unsigned* sync, int npro, int flags,
                                              real_t* hub) {
    if (flags & FL_PRO) {
        fl_prologue(blockIdx.x, gridDim.x, flags, nrows, ncols, y, beta, perm, x, xs);
        grid_barrier(sync);
    }
    if (!(flags & FL_MAIN)) return;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
         w * bpw < (long long)nblocks; w += warps) {
        fl_blocks(w * bpw, nblocks, bpw, blk_ptr, blk_col, blk_info, row_idx, vals, perm, x, xs, y,
                  nrows, alpha, sync, 0, flags, hub, false);
    }
}

// y[hub_rows[i]] += the sum of hub i's `slots` slots (one warp per hub, lanes striding over the
// slots, then warp_reduce_sum), and the slots are zeroed for the next call.
// Parameters: the fields of HubCombineArgs (gpu.rs) in order (gpu/launch.rs, Abi::Params).
extern "C" __global__ void fastload_hub_combine(int nhubs, int slots,
                                                const int* __restrict__ hub_rows, real_t* hub,
                                                real_t* y) {
    const int lane = threadIdx.x & 31;
    const long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (i >= nhubs) return;
    real_t s = (real_t)0;
    for (int k = lane; k < slots; k += 32) {
        real_t* p = hub + ((long long)i * slots + k) * HUB_SPREAD;
        s += *p;
        *p = (real_t)0;
    }
    s = warp_reduce_sum(s);
    if (lane == 0) y[ldg(hub_rows + i)] += s;
}
