// cb-spmv: CB-SpMV (Cong et al., ICS'25, §3) — one warp per 16x16 sub-block, 8 warps (slots) per
// CTA, the slot table built by LPT balancing on the host.
//
// Slot metadata: two u64 words, w0 = arena offset << 10 | single << 9 | nnz (single: the only
// block of its panel), w1 = block row << 32 | xcol (block row 0xffffffff = padding slot), xcol
// the block's first x column: bc*16, or gptr[br] + bc*16 into gcols when gathered.
// A CTA holds 8·bpw slots: warp w takes slots j·8 + w, j < bpw, in turn (bpw = 1 is the paper's
// one block per warp), with the next slot's metadata loaded ahead. The format follows from nnz and the thresholds
// (COO nnz <= coo_max, dense nnz >= dense_min, else CSR). A region at arena + offset holds the
// nibble-packed u8 indices (COO: row<<4|col; CSR: rp[17] + col[nnz]), zero padding to 8 bytes,
// then the values (dense: 256, row-major). With split = 1 (aggregation ablation) the values sit
// in their own array at split_vals + voff[slot].
//
// x: for CSR and dense blocks lanes 0..15 stage x[xcol + lane] (gathered: x[gcols[xcol + lane]],
// the column offset bc*16 being in xcol for EVERY format) into a per-warp shared slice, then
// __syncwarp; a COO entry loads its own x value the same way (cb_x).
// Row sums: COO — lane per nonzero, a segmented warp scan by row (entries are row-major) so
// one add per row run instead of one atomic per nonzero; CSR — 2 lanes per row, pair sum;
// dense — 2 lanes per row (8 columns each), pair sum. Full precision throughout (no FP16).
//
// y (fused = 1): the ticket is taken as soon as the metadata is in (its latency hides behind
// the block's loads); the first block of a panel to take the panel's ticket writes
// y = alpha*s + beta*y for its 16 rows (y unread when beta == 0), fences, and raises ready[br];
// later blocks of the panel compute first, wait for ready (only ever on a running warp), then
// atomicAdd alpha*s to rows with entries, and count themselves out; the last resets ticket
// and flag for the next call. Panels with one block write y directly, no atomics.
// fused = 0: the y prologue ran before (the runtime's, YPrologue in gpu/mod.rs; or cb_spmv_grid
// scaled y behind its grid barrier), every block adds with atomics (run = 1: once per run of
// consecutive blocks of one panel in a warp's slots).

#define CB_WARPS 8
#define CB_BS 16

// The parameters of every entry: the fields of CbArgs (gpu.rs) in order, checked at compile
// time; each entry uses its part (cb_spmv: the first 21, cb_spmv_grid: the first 23, the run
// kernels: the first 13 and the last 7). A parameter list, not the struct by value, because the
// compiled code depends on __restrict__ parameters, which struct members do not carry
// (gpu/launch.rs, Abi::Params). y is __restrict__ in the run kernels only (Y_RESTRICT).
#define CB_PARAMS(Y_RESTRICT)                                                                   \
    const unsigned char* __restrict__ arena, const unsigned long long* __restrict__ meta,      \
        const unsigned* __restrict__ gcols, int gathered, const real_t* __restrict__ x,        \
        real_t* Y_RESTRICT y, real_t alpha, real_t beta, int m, int n, int coo_max,            \
        int dense_min, int bpw, const real_t* __restrict__ split_vals,                         \
        const unsigned long long* __restrict__ voff, int split,                                \
        const unsigned* __restrict__ panel_nb, unsigned* tick, unsigned* ready, int fused,     \
        int run, unsigned long long nctas, unsigned* bar, const unsigned* __restrict__ split_of, \
        const unsigned* __restrict__ nparts, real_t* ws, unsigned* cnt, int owner

__device__ __forceinline__ unsigned cb_pad8(unsigned b) { return (b + 7u) & ~7u; }

// x at compressed column c of a block whose first column is xcol (metadata word 1, low half:
// bc*16, or gptr[br] + bc*16 into the panel's column list when gathered, so the column offset
// bc*16 is in every format; the public code's dense path forgot it). gcols carries 16 trailing
// entries, so a staging lane past the panel's last column reads a real (unused) x value; direct
// columns past n read zero.
__device__ __forceinline__ real_t cb_x(unsigned xcol, unsigned c,
                                       const unsigned* __restrict__ gcols, int gathered,
                                       const real_t* __restrict__ x, int n) {
    const unsigned k = xcol + c;
    if (gathered) return ldg(x + ldg(gcols + k));
    return k < (unsigned)n ? ldg(x + k) : (real_t)0;
}

// The 16 row sums of one sub-block by one warp (all 32 lanes, warp-uniform arguments): lane
// r < 16 gets row r's sum in rs; mask gets the rows with entries.
__device__ __forceinline__ void cb_sums(
    unsigned long long slot, unsigned long long w0, unsigned long long w1,
    const unsigned char* __restrict__ arena, const real_t* __restrict__ split_vals,
    const unsigned long long* __restrict__ voff, int split, const unsigned* __restrict__ gcols, int gathered, const real_t* __restrict__ x, int n,
    int coo_max, int dense_min, real_t* xs, real_t* acc, int lane, real_t& rs, unsigned& mask) {
    const unsigned xcol = (unsigned)(w1 & 0xffffffffull);
    const int nnz = (int)(w0 & 511ull);
    const unsigned char* region = arena + (w0 >> 10);
    rs = (real_t)0;
    mask = 0;
    if (nnz > 0) {
        const bool coo = nnz <= coo_max;
        const bool dense = !coo && nnz >= dense_min;
        const real_t* val;
        if (split) val = split_vals + ldg(voff + slot);
        else if (coo) val = (const real_t*)(region + cb_pad8((unsigned)nnz));
        else if (dense) val = (const real_t*)region;
        else val = (const real_t*)(region + cb_pad8(CB_BS + 1 + (unsigned)nnz));
        // Loads issued before the x staging completes: COO's first 32 entries, a CSR row's
        // bounds. (Preloading a dense block's 8 values per lane as well took the f64 kernel from
        // 45 to 63 registers, i.e. from 5 to 4 CTAs per SM: not done.)
        const int r = lane >> 1, h = lane & 1;
        unsigned e0 = 0;
        real_t v0 = (real_t)0;
        int cs = 0, ce = 0;
        if (coo) {
            if (lane < nnz) {
                e0 = region[lane];
                v0 = ldg(val + lane);
            }
        } else if (!dense) {
            cs = region[r];
            ce = (r == CB_BS - 1) ? nnz : (int)region[r + 1];
        }
        // CSR and dense blocks stage the 16 x values of the block column once per warp; a COO
        // block (<= coo_max entries, often 1-4 on scattered matrices) loads only the x values its
        // entries use, so no 16-value staging is wasted on a block of a few nonzeros.
        if (lane < CB_BS) {
            if (!coo) xs[lane] = cb_x(xcol, (unsigned)lane, gcols, gathered, x, n);
            acc[lane] = (real_t)0;
        }
        __syncwarp();
        if (coo) {
            // Segmented warp scan by row (entries are row-major): one add per row run.
            for (int base = 0; base < nnz; base += 32) {
                const int k = base + lane;
                int row = CB_BS + lane;  // unique key for idle lanes
                real_t v = (real_t)0;
                if (k < nnz) {
                    const unsigned e = base == 0 ? e0 : (unsigned)region[k];
                    const real_t a = base == 0 ? v0 : ldg(val + k);
                    row = (int)(e >> 4);
                    v = a * cb_x(xcol, e & 15u, gcols, gathered, x, n);
                    mask |= 1u << row;
                }
                // Blocks that are diagonal lines (stencils, scattered columns) have no two
                // entries of one row: the scan would add nothing, so it is skipped (same bits).
                const int rprev = __shfl_up_sync(FULL_MASK, row, 1);
                if (__any_sync(FULL_MASK, lane > 0 && rprev == row)) {
#pragma unroll
                    for (int o = 1; o < 32; o <<= 1) {
                        const real_t tv = __shfl_up_sync(FULL_MASK, v, o);
                        const int r2 = __shfl_up_sync(FULL_MASK, row, o);
                        if (lane >= o && r2 == row) v += tv;
                    }
                }
                const int rnext = __shfl_down_sync(FULL_MASK, row, 1);
                if (k < nnz && (lane == 31 || rnext != row)) acc[row] += v;
                __syncwarp();
            }
            mask = __reduce_or_sync(FULL_MASK, mask);
            if (lane < CB_BS) rs = acc[lane];
        } else {
            real_t sum = (real_t)0;
            if (dense) {
#pragma unroll
                for (int j = 0; j < 8; ++j) sum += ldg(val + r * CB_BS + h * 8 + j) * xs[h * 8 + j];
                mask = 0xffffu;
            } else {
                const unsigned char* col = region + CB_BS + 1;
                for (int k = cs + h; k < ce; k += 2) sum += ldg(val + k) * xs[col[k]];
                mask = __reduce_or_sync(FULL_MASK, (ce > cs) ? (1u << r) : 0u);
            }
            sum += __shfl_xor_sync(FULL_MASK, sum, 1);
            rs = __shfl_sync(FULL_MASK, sum, (2 * lane) & 31);
        }
    }
}

// One sub-block by one warp, with its own epilogue (accumulate = block).
__device__ __forceinline__ void cb_block(
    unsigned long long slot, unsigned long long w0, unsigned long long w1,
    const unsigned char* __restrict__ arena, const real_t* __restrict__ split_vals,
    const unsigned long long* __restrict__ voff, int split, const unsigned* __restrict__ panel_nb,
    unsigned* tick, unsigned* ready, const unsigned* __restrict__ gcols, int gathered, const real_t* __restrict__ x, real_t* y,
    real_t alpha, real_t beta, int m, int n, int coo_max, int dense_min, int fused, real_t* xs,
    real_t* acc, int lane) {
    const unsigned br = (unsigned)(w1 >> 32);
    const bool single = (w0 >> 9) & 1ull;
    const bool ticketed = fused && !single;
    unsigned t = 0;
    if (ticketed && lane == 0) t = atomicAdd(tick + br, 1u);
    real_t rs;
    unsigned mask;
    cb_sums(slot, w0, w1, arena, split_vals, voff, split, gcols, gathered, x, n, coo_max,
            dense_min, xs, acc, lane, rs, mask);

    const unsigned i = br * CB_BS + lane;
    const bool mine = lane < CB_BS && i < (unsigned)m;
    if (!fused) {
        if (mine && ((mask >> lane) & 1u)) atomic_add_real(y + i, alpha * rs);
        return;
    }
    if (!ticketed) {
        if (mine) y[i] = (beta == (real_t)0) ? alpha * rs : alpha * rs + beta * y[i];
        return;
    }
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
            const unsigned nb = ldg(panel_nb + br);
            const unsigned f = atomicAdd(tick + br, 1u);
            if (f == 2u * nb - 2u) {
                tick[br] = 0u;
                ready[br] = 0u;
            }
        }
    }
}

// One CTA's 8·bpw slots (CTA index `cta`), by warps with their shared slices s_x/s_acc.
__device__ __forceinline__ void cb_cta(
        unsigned long long cta, const unsigned char* __restrict__ arena, const unsigned long long* __restrict__ meta,
        const real_t* __restrict__ split_vals, const unsigned long long* __restrict__ voff,
        int split, const unsigned* __restrict__ panel_nb, unsigned* tick, unsigned* ready,
        const unsigned* __restrict__ gcols, int gathered,
        const real_t* __restrict__ x, real_t* y, real_t alpha, real_t beta, int m, int n,
        int coo_max, int dense_min, int fused, int bpw, int run,
        real_t (*s_x)[CB_BS], real_t (*s_acc)[CB_BS]) {
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    // accumulate = block: warp w takes slots j·8 + w of its CTA; run: slots w·bpw + j
    // (consecutive blocks), summing the row sums of consecutive blocks of one panel in
    // registers and adding them to y (atomics, after the y prologue) once per run.
    const unsigned long long cta0 = cta * bpw * CB_WARPS;
    const unsigned long long first = run ? cta0 + (unsigned long long)warp * bpw : cta0 + warp;
    const unsigned long long step = run ? 1ull : (unsigned long long)CB_WARPS;
    unsigned long long nw0 = ldg(meta + 2 * first);
    unsigned long long nw1 = ldg(meta + 2 * first + 1);
    unsigned cur = 0xffffffffu;  // run: the panel being summed
    real_t run_rs = (real_t)0;
    unsigned run_mask = 0;
    for (int j = 0; j < bpw; ++j) {
        const unsigned long long slot = first + (unsigned long long)j * step;
        const unsigned long long w0 = nw0, w1 = nw1;
        if (j + 1 < bpw) {
            nw0 = ldg(meta + 2 * (slot + step));
            nw1 = ldg(meta + 2 * (slot + step) + 1);
        }
        const unsigned br = (unsigned)(w1 >> 32);
        if (br == 0xffffffffu) continue;
        __syncwarp();  // the previous block's readers of xs/acc are done
        if (!run) {
            cb_block(slot, w0, w1, arena, split_vals, voff, split, panel_nb, tick, ready,
                     gcols, gathered, x, y, alpha, beta, m, n, coo_max, dense_min, fused,
                     s_x[warp], s_acc[warp], lane);
            continue;
        }
        if (br != cur) {
            const unsigned i = cur * CB_BS + lane;
            if (cur != 0xffffffffu && lane < CB_BS && i < (unsigned)m && ((run_mask >> lane) & 1u))
                atomic_add_real(y + i, alpha * run_rs);
            cur = br;
            run_rs = (real_t)0;
            run_mask = 0;
        }
        real_t rs;
        unsigned mask;
        cb_sums(slot, w0, w1, arena, split_vals, voff, split, gcols, gathered, x, n,
                coo_max, dense_min, s_x[warp], s_acc[warp], lane, rs, mask);
        run_rs += rs;
        run_mask |= mask;
    }
    if (run && cur != 0xffffffffu) {
        const unsigned i = cur * CB_BS + lane;
        if (lane < CB_BS && i < (unsigned)m && ((run_mask >> lane) & 1u))
            atomic_add_real(y + i, alpha * run_rs);
    }
}

extern "C" __global__ void __launch_bounds__(CB_WARPS * 32) cb_spmv(CB_PARAMS()) {
    __shared__ real_t s_x[CB_WARPS][CB_BS];
    __shared__ real_t s_acc[CB_WARPS][CB_BS];
    cb_cta(blockIdx.x, arena, meta, split_vals, voff, split, panel_nb, tick, ready, gcols, gathered, x, y, alpha,
           beta, m, n, coo_max, dense_min, fused, bpw, run, s_x, s_acc);
}

// prologue = grid: one cooperative launch of co-resident CTAs. They scale y (grid-stride), meet
// at a grid barrier (bar: arrivals, generation), then take the `nctas` slot groups in turn, with
// atomics to y as after the y prologue (fused must be 0).
extern "C" __global__ void __launch_bounds__(CB_WARPS * 32) cb_spmv_grid(CB_PARAMS()) {
    __shared__ real_t s_x[CB_WARPS][CB_BS];
    __shared__ real_t s_acc[CB_WARPS][CB_BS];
    const unsigned stride = gridDim.x * blockDim.x;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)m; i += stride)
        y[i] = (beta == (real_t)0) ? (real_t)0 : beta * y[i];
    grid_barrier(bar);
    for (unsigned long long c = blockIdx.x; c < nctas; c += gridDim.x)
        cb_cta(c, arena, meta, split_vals, voff, split, panel_nb, tick, ready, gcols, gathered, x, y, alpha,
           beta, m, n, coo_max, dense_min, fused, bpw, run, s_x, s_acc);
}

// accumulate = run, aggregated regions (the default): the same blocks, formats and row sums as
// cb_cta, with less work per block. A warp takes its bpw consecutive slots; COO entries add their
// (segment-summed) products straight into the warp's shared row accumulator, CSR and dense row
// sums into a register of lane r, and both are added to y with one atomic per row when the
// warp leaves a panel (rows whose sum is exactly zero are skipped: adding zero changes nothing).
// A row has at most 16 entries in a block, so the segmented scan needs offsets 1, 2, 4, 8. Two
// consecutive COO blocks of one panel with at most 32 entries together share one pass.
// The end of a run of panel `cur` (all 32 lanes; lane r < 16 holds row r's sum t).
// owner = 0: y was scaled before the launch, rows with a non-zero sum get an atomic.
// owner = 1 (epilogue=owner): y is written exactly once per row, with no scaling pass before.
// A panel whose blocks all lie in one warp's run (split_of[cur] = ~0) is written by that warp:
// y = alpha*t + beta*y. A panel split over several runs adds each run's sums into its
// workspace row ws[s] (s = split_of[cur]) and counts itself in cnt[s]; the run that completes
// the count (nparts[s]) writes y from the workspace and clears it for the next call. Nothing
// waits on another warp.
__device__ __forceinline__ void cb_run_flush(
        unsigned cur, real_t t, int lane, real_t* __restrict__ y, real_t alpha, real_t beta,
        int m, int owner, const unsigned* __restrict__ split_of,
        const unsigned* __restrict__ nparts, real_t* ws, unsigned* cnt) {
    const unsigned i = cur * CB_BS + lane;
    const bool row = lane < CB_BS && i < (unsigned)m;
    if (!owner) {
        if (row && t != (real_t)0) atomic_add_real(y + i, alpha * t);
        return;
    }
    const unsigned s = ldg(split_of + cur);
    if (s == 0xffffffffu) {
        if (row) y[i] = (beta == (real_t)0) ? alpha * t : alpha * t + beta * y[i];
        return;
    }
    real_t* wrow = ws + (unsigned long long)s * CB_BS;
    if (lane < CB_BS && t != (real_t)0) atomic_add_real(wrow + lane, t);
    __threadfence();
    __syncwarp();
    unsigned last = 0;
    if (lane == 0) last = atomicAdd(cnt + s, 1u) + 1u == ldg(nparts + s);
    last = __shfl_sync(FULL_MASK, last, 0);
    if (last) {
        __threadfence();
        if (lane < CB_BS) {
            const real_t v = __ldcg(wrow + lane);
            __stcg(wrow + lane, (real_t)0);
            if (row) y[i] = (beta == (real_t)0) ? alpha * v : alpha * v + beta * y[i];
        }
        if (lane == 0) cnt[s] = 0u;
    }
}

__device__ __forceinline__ void cb_run_cta(
        unsigned long long cta, const unsigned char* __restrict__ arena,
        const unsigned long long* __restrict__ meta, const unsigned* __restrict__ gcols,
        int gathered, const real_t* __restrict__ x, real_t* __restrict__ y, real_t alpha,
        real_t beta, int m, int n, int coo_max, int dense_min, int bpw, int owner,
        const unsigned* __restrict__ split_of, const unsigned* __restrict__ nparts, real_t* ws,
        unsigned* cnt, real_t* __restrict__ xs, real_t* __restrict__ acc) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const ulonglong2* mp =
        (const ulonglong2*)meta + (cta * CB_WARPS + (unsigned long long)warp) * bpw;
    unsigned cur = 0xffffffffu;
    real_t racc = (real_t)0;
    if (lane < CB_BS) acc[lane] = (real_t)0;
    ulonglong2 nw = ldg(mp);
    for (int j = 0; j < bpw; ++j) {
        const ulonglong2 w = nw;
        if (j + 1 < bpw) nw = ldg(mp + j + 1);
        const unsigned br = (unsigned)(w.y >> 32);
        if (br == 0xffffffffu) continue;
        if (br != cur) {
            __syncwarp();
            if (cur != 0xffffffffu)
                cb_run_flush(cur, lane < CB_BS ? racc + acc[lane] : (real_t)0, lane, y, alpha,
                             beta, m, owner, split_of, nparts, ws, cnt);
            if (lane < CB_BS) acc[lane] = (real_t)0;
            racc = (real_t)0;
            cur = br;
            __syncwarp();
        }
        const int nnz = (int)(w.x & 511ull);
        if (nnz == 0) continue;
        const unsigned xcol = (unsigned)w.y;
        const unsigned char* region = arena + (w.x >> 10);
        if (nnz <= coo_max) {
            // A following COO block of the same panel whose entries fit the lanes left over
            // (nnz + nnz2 <= 32) is taken in the same pass: lanes nnz.. hold its entries.
            ulonglong2 w2 = w;
            int nnz2 = 0;
            if (j + 1 < bpw && (unsigned)(nw.y >> 32) == br) {
                const int k2 = (int)(nw.x & 511ull);
                if (k2 <= coo_max && nnz + k2 <= 32) {
                    w2 = nw;
                    nnz2 = k2;
                    ++j;
                    if (j + 1 < bpw) nw = ldg(mp + j + 1);
                }
            }
            const bool second = lane >= nnz && nnz2 > 0;
            const ulonglong2 wl = second ? w2 : w;
            const int nl = second ? nnz2 : nnz;
            const unsigned char* rl = arena + (wl.x >> 10);
            const real_t* val = (const real_t*)(rl + cb_pad8((unsigned)nl));
            const unsigned xl = (unsigned)wl.y;
            const int k0 = second ? lane - nnz : lane;
            const int key_hi = second ? 32 : 0;  // the two blocks' rows never merge
#pragma unroll 1
            for (int base = 0; base < nnz; base += 32) {
                const int k = base + k0;
                int row = 64 + lane;  // unique key for idle lanes
                real_t v = (real_t)0;
                if (k < nl) {
                    const unsigned e = rl[k];
                    const real_t a = ldg(val + k);
                    row = (int)(e >> 4) + key_hi;
                    v = a * cb_x(xl, e & 15u, gcols, gathered, x, n);
                }
                const int rprev = __shfl_up_sync(FULL_MASK, row, 1);
                if (__any_sync(FULL_MASK, lane > 0 && rprev == row)) {
#pragma unroll
                    for (int o = 1; o < CB_BS; o <<= 1) {
                        const real_t tv = __shfl_up_sync(FULL_MASK, v, o);
                        const int r2 = __shfl_up_sync(FULL_MASK, row, o);
                        if (lane >= o && r2 == row) v += tv;
                    }
                }
                const int rnext = __shfl_down_sync(FULL_MASK, row, 1);
                const bool last = k < nl && (lane == 31 || rnext != row);
                // One writer per row within a block; the second block writes after the first.
                if (last && !second) acc[row & 15] += v;
                __syncwarp();
                if (nnz2 > 0) {
                    if (last && second) acc[row & 15] += v;
                    __syncwarp();
                }
            }
        } else {
            __syncwarp();  // the previous block's readers of xs are done
            if (lane < CB_BS) xs[lane] = cb_x(xcol, (unsigned)lane, gcols, gathered, x, n);
            const int r = lane >> 1, h = lane & 1;
            real_t sum = (real_t)0;
            if (nnz >= dense_min) {
                __syncwarp();
                const real_t* val = (const real_t*)region + r * CB_BS + h * 8;
#pragma unroll
                for (int c = 0; c < 8; ++c) sum += ldg(val + c) * xs[h * 8 + c];
            } else {
                const int cs = region[r];
                const int ce = (r == CB_BS - 1) ? nnz : (int)region[r + 1];
                const unsigned char* col = region + CB_BS + 1;
                const real_t* val = (const real_t*)(region + cb_pad8(CB_BS + 1 + (unsigned)nnz));
                __syncwarp();
                for (int k = cs + h; k < ce; k += 2) sum += ldg(val + k) * xs[col[k]];
            }
            sum += __shfl_xor_sync(FULL_MASK, sum, 1);
            racc += __shfl_sync(FULL_MASK, sum, (2 * lane) & 31);
        }
    }
    __syncwarp();
    if (cur != 0xffffffffu)
        cb_run_flush(cur, lane < CB_BS ? racc + acc[lane] : (real_t)0, lane, y, alpha, beta, m,
                     owner, split_of, nparts, ws, cnt);
}

// The run kernels (of the parameters they use the general kernels' first thirteen, then nctas,
// bar and the owner epilogue's split_of, nparts, ws, cnt and owner; the grid launch scales y
// first and always adds with atomics), a stream launch and a cooperative grid launch (y scaled grid-stride, a grid
// barrier, then the CTAs take the `nctas` slot groups in turn), each built twice: with the
// compiler's register count (suffix none) and with at most 32 registers for 8 CTAs per SM
// (suffix _o8; min_ctas=8).
#define CB_RUN_KERNELS(SUFFIX, BOUNDS)                                                            \
    extern "C" __global__ void BOUNDS cb_spmv_run##SUFFIX(CB_PARAMS(__restrict__)) {            \
        __shared__ real_t s_x[CB_WARPS][CB_BS];                                                \
        __shared__ real_t s_acc[CB_WARPS][CB_BS];                                              \
        const int warp = threadIdx.x >> 5;                                                     \
        cb_run_cta(blockIdx.x, arena, meta, gcols, gathered, x, y, alpha, beta, m, n, coo_max, \
                   dense_min, bpw, owner, split_of, nparts, ws, cnt, s_x[warp], s_acc[warp]);  \
    }                                                                                          \
    extern "C" __global__ void BOUNDS cb_spmv_run_grid##SUFFIX(CB_PARAMS(__restrict__)) {       \
        __shared__ real_t s_x[CB_WARPS][CB_BS];                                                \
        __shared__ real_t s_acc[CB_WARPS][CB_BS];                                              \
        const unsigned stride = gridDim.x * blockDim.x;                                        \
        for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)m; i += stride) \
            y[i] = (beta == (real_t)0) ? (real_t)0 : beta * y[i];                              \
        grid_barrier(bar);                                                                     \
        const int warp = threadIdx.x >> 5;                                                     \
        for (unsigned long long c = blockIdx.x; c < nctas; c += gridDim.x) {                   \
            cb_run_cta(c, arena, meta, gcols, gathered, x, y, alpha, beta, m, n, coo_max,      \
                       dense_min, bpw, 0, split_of, nparts, ws, cnt, s_x[warp], s_acc[warp]);  \
            __syncwarp();                                                                      \
        }                                                                                      \
    }

CB_RUN_KERNELS(, __launch_bounds__(CB_WARPS * 32))
CB_RUN_KERNELS(_o8, __launch_bounds__(CB_WARPS * 32, 8))
