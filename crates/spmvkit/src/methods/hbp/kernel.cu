// hbp: Hash-based Partition SpMV (Yan et al., HBP paper §III), two kernels per call.
//
// hbp_spmv: the SpMV part. Blocks q = 0..nblocks in column-major order (q = bn * nbr + bm).
//   Fixed part (§III-C): CTA c owns blocks [c * per_cta, (c + 1) * per_cta) (per_cta * gridDim.x
//   = nfixed). For each column block bn its range touches, the whole CTA stages x[bn * block_cols
//   ...] in shared memory (bounds-checked against ncols, so x is neither padded nor copied),
//   then its warps take that segment's blocks in turn (warp w: the w-th, w + warps-th, ...), so
//   every warp gets the same count of blocks, from one column block.
//   Competitive part, compete_cta == 0 (the paper's): each warp then takes `grab` blocks at a
//   time from the ticket counter (lane 0's atomicAdd, broadcast) until the nblocks - nfixed
//   competitive blocks are gone, reading x from global memory. compete_cta == 1 (ours): the CTA
//   takes grab * warps consecutive blocks per ticket and runs them like a fixed range, x staged
//   in shared memory. The counter is reset by the combine kernel of the same call.
//   A block (Alg. 3): per group of 32 slots, lane q takes slot g*32 + q; its first nonzero is
//   begin_nnz[group] + q - zero_row[slot] (dense tables; -1 = empty row: the partial is 0) or
//   begin_nnz[group] + q (sparse tables hold no empty rows); it walks j += add_sign[j] until
//   add_sign < 0, summing data[j] * xseg[col[j]] with fmas. The nonzero's local column and
//   add_sign come packed in one word (col << 16 | add_sign & 0xffff). The partial goes to
//   mid[panel base + bn * h + output_hash[slot]] (dense) or mid[out_pos[slot]] (sparse).
// hbp_combine_dense / hbp_combine_sparse: one thread per row, y[r] = alpha * sum + beta * y[r]
//   (y unread when beta == 0), the row's partials summed in column-block order from zero; thread
//   0 resets the ticket counter for the next call.
//
// The CPU mirror (cpu.rs) reproduces this arithmetic step for step.
//
// Index widths: the dense partials (mid) hold nrows × column blocks values, which can pass 2^31,
// so their offsets are 64-bit; block indices and the ticket stay below 2^31 (checked at upload,
// blocks plus every warp's overshoot); per-row thread indices are unsigned.

template <bool SMEM>
__device__ __forceinline__ void hbp_block(int q, int nbr, int nbc, int nrows, int block_rows,
                                          int dense, const int* __restrict__ blk_slot,
                                          const int* __restrict__ blk_group,
                                          const int* __restrict__ begin_nnz,
                                          const int* __restrict__ zero_row,
                                          const int* __restrict__ out_idx,
                                          const unsigned* __restrict__ packed,
                                          const real_t* __restrict__ data,
                                          const real_t* xseg, real_t* __restrict__ mid) {
    const int lane = threadIdx.x & 31;
    const int bn = q / nbr;
    const int bm = q - bn * nbr;
    const int b = bm * nbc + bn;
    const int s0 = ldg(blk_slot + b);
    const int t = ldg(blk_slot + b + 1) - s0;
    const int g0 = ldg(blk_group + b);
    // the block's partials: its panel's base plus bn · panel height (dense; 64-bit, see above)
    real_t* const mblk =
        dense ? mid + ((long long)bm * block_rows * nbc +
                       (long long)bn * min(block_rows, nrows - bm * block_rows))
              : mid;
    for (int g = 0;; ++g) {
        const int s = g * 32 + lane;
        if (s >= t) break;
        const int begin = ldg(begin_nnz + g0 + g);
        const int slot = s0 + s;
        int j, idx;
        if (dense) {
            const int z = ldg(zero_row + slot);
            idx = ldg(out_idx + slot);
            if (z < 0) {
                mblk[idx] = (real_t)0;
                continue;
            }
            j = begin + lane - z;
        } else {
            j = begin + lane;
            idx = ldg(out_idx + slot);
        }
        real_t sum = (real_t)0;
        for (;;) {
            const unsigned w = ldcs(packed + j);
            const real_t v = ldcs(data + j);
            const int c = (int)(w >> 16);
            const real_t xv = SMEM ? xseg[c] : ldg(xseg + c);
            sum = fma(v, xv, sum);
            const int a = (int)(short)(w & 0xffffu);
            if (a < 0) break;
            j += a;
        }
        mblk[idx] = sum;
    }
}

// The CTA's blocks [q, qend) in column-major order: for each column block the range touches,
// stage its x segment in shared memory (bounds-checked against ncols: x is neither padded nor
// copied), then the warps take the segment's blocks in turn (warp w: the w-th, w + warps-th, ...).
__device__ __forceinline__ void hbp_cta_range(int q, int qend, int nbr, int nbc, int nrows,
                                              int ncols, int block_rows, int block_cols,
                                              int dense, const int* __restrict__ blk_slot,
                                              const int* __restrict__ blk_group,
                                              const int* __restrict__ begin_nnz,
                                              const int* __restrict__ zero_row,
                                              const int* __restrict__ out_idx,
                                              const unsigned* __restrict__ packed,
                                              const real_t* __restrict__ data,
                                              const real_t* __restrict__ x, real_t* xs,
                                              real_t* __restrict__ mid) {
    const int warps = blockDim.x >> 5;
    const int warp = threadIdx.x >> 5;
    while (q < qend) {
        const int bn = q / nbr;
        const int seg_end = min(qend, (bn + 1) * nbr);
        const int c0 = bn * block_cols;
        const int n = min(block_cols, ncols - c0);
        __syncthreads();  // the previous segment's readers are done
        for (int i = threadIdx.x; i < n; i += blockDim.x) xs[i] = ldg(x + c0 + i);
        __syncthreads();
        for (int k = q + warp; k < seg_end; k += warps)
            hbp_block<true>(k, nbr, nbc, nrows, block_rows, dense, blk_slot, blk_group,
                            begin_nnz, zero_row, out_idx, packed, data, xs, mid);
        q = seg_end;
    }
}

// Parameters: the fields of HbpArgs (gpu.rs) in order, checked at compile time; parameter
// lists, not the structs by value, because the compiled code depends on __restrict__ parameters,
// which struct members do not carry (gpu/launch.rs, Abi::Params).
extern "C" __global__ void hbp_spmv(int nbr, int nbc, int nrows, int ncols, int block_rows,
                                    int block_cols, int dense, const int* __restrict__ blk_slot,
                                    const int* __restrict__ blk_group,
                                    const int* __restrict__ begin_nnz,
                                    const int* __restrict__ zero_row,
                                    const int* __restrict__ out_idx,
                                    const unsigned* __restrict__ packed,
                                    const real_t* __restrict__ data,
                                    const real_t* __restrict__ x, real_t* __restrict__ mid,
                                    int per_cta, int nfixed, int nblocks, int grab,
                                    int compete_cta, int* __restrict__ ticket) {
    extern __shared__ __align__(16) unsigned char hbp_smem[];
    __shared__ int s_ticket;
    real_t* xs = reinterpret_cast<real_t*>(hbp_smem);

    // fixed part: equal consecutive ranges of column-major blocks, x segments in shared memory
    const int q0 = blockIdx.x * per_cta;
    hbp_cta_range(q0, q0 + per_cta, nbr, nbc, nrows, ncols, block_rows, block_cols, dense,
                  blk_slot, blk_group, begin_nnz, zero_row, out_idx, packed, data, x, xs, mid);

    const int ncomp = nblocks - nfixed;
    if (compete_cta) {
        // competitive part, per CTA: grab * warps consecutive blocks per ticket, staged x
        const int chunk = grab * (int)(blockDim.x >> 5);
        for (;;) {
            __syncthreads();  // everyone has read the previous ticket
            if (threadIdx.x == 0) s_ticket = atomicAdd(ticket, chunk);
            __syncthreads();
            const int tk = s_ticket;
            if (tk >= ncomp) break;
            hbp_cta_range(nfixed + tk, nfixed + min(tk + chunk, ncomp), nbr, nbc, nrows, ncols,
                          block_rows, block_cols, dense, blk_slot, blk_group, begin_nnz,
                          zero_row, out_idx, packed, data, x, xs, mid);
        }
    } else {
        // competitive part, per warp (the paper's): grab blocks per ticket, x from global memory
        for (;;) {
            int tk = 0;
            if ((threadIdx.x & 31) == 0) tk = atomicAdd(ticket, grab);
            tk = __shfl_sync(FULL_MASK, tk, 0);
            if (tk >= ncomp) break;
            const int e = min(tk + grab, ncomp);
            for (int k = nfixed + tk; k < nfixed + e; ++k)
                hbp_block<false>(k, nbr, nbc, nrows, block_rows, dense, blk_slot, blk_group,
                                 begin_nnz, zero_row, out_idx, packed, data,
                                 x + (k / nbr) * block_cols, mid);
        }
    }
}

// Parameters: the fields of CombineDenseArgs (gpu.rs) in order (gpu/launch.rs, Abi::Params).
extern "C" __global__ void hbp_combine_dense(int nrows, int nbc, int block_rows,
                                             const real_t* __restrict__ mid,
                                             real_t* __restrict__ y, real_t alpha, real_t beta,
                                             int* __restrict__ ticket) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *ticket = 0;
    const unsigned ur = blockIdx.x * blockDim.x + threadIdx.x;
    if (ur >= (unsigned)nrows) return;
    const int r = (int)ur;
    const int bm = r / block_rows;
    const int h = min(block_rows, nrows - bm * block_rows);
    const long long base = (long long)bm * block_rows * nbc + (r - bm * block_rows);
    real_t s = (real_t)0;
    for (int bn = 0; bn < nbc; ++bn) s += ldcs(mid + base + (long long)bn * h);
    const real_t t = alpha * s;
    y[r] = (beta == (real_t)0) ? t : fma(beta, y[r], t);
}

// Parameters: the fields of CombineSparseArgs (gpu.rs) in order (gpu/launch.rs, Abi::Params).
extern "C" __global__ void hbp_combine_sparse(int nrows, const int* __restrict__ cptr,
                                              const real_t* __restrict__ mid,
                                              real_t* __restrict__ y, real_t alpha, real_t beta,
                                              int* __restrict__ ticket) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *ticket = 0;
    const unsigned ur = blockIdx.x * blockDim.x + threadIdx.x;
    if (ur >= (unsigned)nrows) return;
    const int r = (int)ur;
    const int k1 = ldg(cptr + r + 1);
    real_t s = (real_t)0;
    for (int k = ldg(cptr + r); k < k1; ++k) s += ldcs(mid + k);
    const real_t t = alpha * s;
    y[r] = (beta == (real_t)0) ? t : fma(beta, y[r], t);
}
