// merge: merge-based CSR SpMV (Merrill & Garland, SC'16), two kernels per call.
//
// The merge path has nrows + nnz steps: at coordinate (row, k) the next step closes `row` when
// row_end[row] <= k (row ends first on ties), else consumes nonzero k into `row`.
//
// merge_spmv: one CTA per tile of blockDim.x * items steps, starting at the precomputed
// coordinate (tile_row[t], tile_nz[t]).
//   1. The CTA stages the tile's row ends and nonzero products val[k] * x[col[k]] in shared
//      memory (coalesced loads of val and col, gathered x).
//   2. Thread i binary-searches its diagonal i * items in the tile and walks its steps,
//      summing products in order; each row it closes is written to shared memory, except the
//      first (its "head"), which may have begun in earlier threads.
//   3. A block-wide segmented scan (reduce-by-key: keys are the threads' last rows) gives each
//      thread the sum of the earlier threads' parts of its head row: a Kogge-Stone shuffle scan
//      inside warps, then a sequential fold over the warp totals. Fixed order: deterministic.
//   4. The tile's row sums go to y coalesced (y = alpha*sum + beta*y, y unread when beta == 0);
//      the last thread's inclusive value — the tile's part of the row still open at its end —
//      is the tile's carry-out, written to carry[t] (no atomics).
//
// merge_fixup: every row with carries (a run of consecutive tiles, precomputed) gets
// y[row] += alpha * (sum of its carries in tile order): one thread per short run (sequential
// sum), one warp per long run (strided lane sums, then the warp_reduce_sum butterfly).
//
// The CPU mirror (cpu.rs) reproduces this arithmetic step for step.

// The entries' arguments (their Rust twins: gpu.rs, checked against them at compile time).
struct MergeArgs {
    CsrArgs csr;  // the matrix and operands (prelude)
    const int* tile_row;
    const int* tile_nz;
    real_t* carry;
    int items;
};

extern "C" __global__ void merge_spmv(const MergeArgs a) {
    extern __shared__ __align__(16) unsigned char merge_smem[];
    __shared__ int s_wkey[32];
    __shared__ real_t s_wval[32];

    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int tile_items = blockDim.x * a.items;
    real_t* s_prod = reinterpret_cast<real_t*>(merge_smem);
    int* s_row_end = reinterpret_cast<int*>(merge_smem + (size_t)tile_items * sizeof(real_t));

    const int row0 = ldg(a.tile_row + blockIdx.x);
    const int row1 = ldg(a.tile_row + blockIdx.x + 1);
    const int nz0 = ldg(a.tile_nz + blockIdx.x);
    const int nz1 = ldg(a.tile_nz + blockIdx.x + 1);
    const int tile_rows = row1 - row0;  // rows closed in this tile
    const int tile_nnz = nz1 - nz0;
    const int tile_len = tile_rows + tile_nnz;
    real_t* s_rowsum = s_prod + tile_nnz;  // after the products: one sum per closed row

    // 1. stage row ends (entry tile_rows: the end of the row open at the tile end, if any)
#pragma unroll 4
    for (int i = tid; i <= tile_rows; i += blockDim.x) {
        const int r = row0 + i;
        s_row_end[i] = (r < a.csr.nrows) ? ldg(a.csr.row_ptr + r + 1) : nz1;
    }
#pragma unroll 4
    for (int i = tid; i < tile_nnz; i += blockDim.x) {
        const int k = nz0 + i;
        s_prod[i] = ldg_val(a.csr.vals + k) * ldg(a.csr.x + ldg(a.csr.col_idx + k));
    }
    __syncthreads();

    // 2. this thread's steps [d0, d1) of the tile
    const int d0 = min(tid * a.items, tile_len);
    const int d1 = min(d0 + a.items, tile_len);
    int lo = max(d0 - tile_nnz, 0);
    int hi = min(d0, tile_rows);
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        // nz0 + (d0 - mid - 1) <= nz1 - 1: grouped so that no partial sum passes 2^31-1
        if (s_row_end[mid] <= nz0 + (d0 - mid - 1))
            lo = mid + 1;
        else
            hi = mid;
    }
    int row = lo;      // local row
    int k = d0 - lo;   // local nonzero
    const int head = row;
    real_t sum = (real_t)0;
    real_t head_sum = (real_t)0;
    bool closed_head = false;
    for (int d = d0; d < d1; ++d) {
        if (nz0 + k < s_row_end[row]) {
            sum += s_prod[k];
            ++k;
        } else {
            if (closed_head)
                s_rowsum[row] = sum;
            else
                head_sum = sum;
            closed_head = true;
            sum = (real_t)0;
            ++row;
        }
    }

    // 3. segmented scan of (last row, open sum) over the CTA's threads
    int key = row;
    real_t val = sum;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const int k2 = __shfl_up_sync(FULL_MASK, key, off);
        const real_t v2 = __shfl_up_sync(FULL_MASK, val, off);
        if (lane >= off && k2 == key) val = v2 + val;
    }
    if (lane == 31) {
        s_wkey[warp] = key;
        s_wval[warp] = val;
    }
    __syncthreads();
    int pkey = -1;  // fold of the earlier warps' totals (key -1: nothing)
    real_t pval = (real_t)0;
    for (int w = 0; w < warp; ++w) {
        const int wk = s_wkey[w];
        const real_t wv = s_wval[w];
        pval = (wk == pkey) ? pval + wv : wv;
        pkey = wk;
    }
    if (pkey == key) val = pval + val;  // inclusive over the CTA
    int ekey = __shfl_up_sync(FULL_MASK, key, 1);
    real_t eval = __shfl_up_sync(FULL_MASK, val, 1);
    if (lane == 0) {
        ekey = pkey;
        eval = pval;
    }
    if (closed_head) s_rowsum[head] = (ekey == head) ? eval + head_sum : head_sum;
    if (tid == (int)blockDim.x - 1) a.carry[blockIdx.x] = val;
    __syncthreads();

    // 4. the tile's closed rows to y, coalesced
    for (int i = tid; i < tile_rows; i += blockDim.x) {
        const int r = row0 + i;
        const real_t t = a.csr.alpha * s_rowsum[i];
        a.csr.y[r] = (a.csr.beta == (real_t)0) ? t : fma(a.csr.beta, a.csr.y[r], t);
    }
}

struct MergeFixupArgs {
    int nshort;
    int nlong;
    const int* run_row;
    const int* run_first;
    const int* run_end;
    const real_t* carry;
    real_t* y;
    real_t alpha;
};

extern "C" __global__ void merge_fixup(const MergeFixupArgs a) {
    const int short_blocks = (a.nshort + (int)blockDim.x - 1) / (int)blockDim.x;
    if ((int)blockIdx.x < short_blocks) {
        const unsigned r = blockIdx.x * blockDim.x + threadIdx.x;
        if (r < (unsigned)a.nshort) {
            int k = ldg(a.run_first + r);
            const int e = ldg(a.run_end + r);
            real_t s = ldg(a.carry + k);
            for (++k; k < e; ++k) s += ldg(a.carry + k);
            const int row = ldg(a.run_row + r);
            a.y[row] = fma(a.alpha, s, a.y[row]);
        }
    } else {
        const int w = ((int)blockIdx.x - short_blocks) * ((int)blockDim.x >> 5) + (threadIdx.x >> 5);
        const int lane = threadIdx.x & 31;
        if (w < a.nlong) {  // warp-uniform
            const int r = a.nshort + w;
            const int e = ldg(a.run_end + r);
            real_t s = (real_t)0;
            for (int k = ldg(a.run_first + r) + lane; k < e; k += 32) s += ldg(a.carry + k);
            s = warp_reduce_sum(s);
            if (lane == 0) {
                const int row = ldg(a.run_row + r);
                a.y[row] = fma(a.alpha, s, a.y[row]);
            }
        }
    }
}
