// csr5: CSR5 SpMV (Liu & Vinter, ICS'15). See mod.rs for the layout.
//
// csr5_spmv: warps 0..ntiles-1 each do one tile; warps ntiles..ntiles+ntail-1 each do one tail row
// (CSR-vector); the remaining warps write y = beta*y for the empty rows (grid stride).
// csr5_calibrate: one thread per carry run adds alpha * (sum of the run's carries) to its row.

#define CSR5_OMEGA 32

__device__ __forceinline__ void csr5_store(real_t* y, int i, real_t alpha, real_t sum, real_t beta) {
    real_t t = alpha * sum;
    y[i] = (beta == (real_t)0) ? t : fma(beta, y[i], t);
}

// Parameters: the fields of Csr5Args (gpu.rs) in order, checked at compile time; parameter
// lists, not the structs by value, because the compiled code depends on __restrict__ parameters,
// which struct members do not carry (gpu/launch.rs, Abi::Params).
extern "C" __global__ void csr5_spmv(
    int ntiles, int sigma, int npacket, int y_bits,
    const int* __restrict__ row_ptr, const int* __restrict__ col_idx, const real_t* __restrict__ vals,
    const unsigned* __restrict__ tile_ptr, const unsigned* __restrict__ tile_desc,
    const int* __restrict__ empty_ptr, const int* __restrict__ empty_offset,
    const int* __restrict__ empty_rows, int nempty, int ntail, int tail_end,
    const real_t* __restrict__ x, real_t* __restrict__ y, real_t alpha, real_t beta,
    real_t* __restrict__ carry) {
    const int lane = threadIdx.x & 31;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long tile = (long long)CSR5_OMEGA * sigma;
    if (warp < ntiles) {
        const int t = (int)warp;
        const long long base = (long long)t * tile;
        const unsigned tp = tile_ptr[t];
        const int row0 = (int)(tp & 0x7fffffffu);
        const bool flagged = (tp & 0x80000000u) != 0;
        const bool cont = (long long)row_ptr[row0] < base;
        const int eoff = flagged ? empty_ptr[t] : 0;
        // decode the lane descriptor (at most 2 words: y_bits + 5 + sigma <= 11 + 5 + 32 < 64)
        unsigned long long word = tile_desc[(long long)t * npacket * CSR5_OMEGA + lane];
        if (npacket > 1)
            word |= (unsigned long long)tile_desc[((long long)t * npacket + 1) * CSR5_OMEGA + lane] << 32;
        const int y_off = (int)(word & ((1ull << y_bits) - 1));
        const int seg = (int)((word >> y_bits) & 31);
        const unsigned flags = (unsigned)((word >> (y_bits + 5)) & ((1ull << sigma) - 1));
        int k = y_off;
        bool has = false;
        real_t sum = 0, head = 0;
        const real_t* v = vals + base + lane;
        const int* c = col_idx + base + lane;
        for (int j = 0; j < sigma; ++j) {
            if ((flags >> j) & 1u) {
                if (has) {
                    int kk = k - 1;
                    if (kk == 0 && cont) {
                        carry[t] = sum;
                    } else {
                        int row = row0 + (flagged ? empty_offset[eoff + kk] : kk);
                        csr5_store(y, row, alpha, sum, beta);
                    }
                } else {
                    head = sum;
                }
                has = true;
                sum = 0;
                ++k;
            }
            sum = fma(ldg(v + j * CSR5_OMEGA), ldg(x + ldg(c + j * CSR5_OMEGA)), sum);
        }
        real_t tail = 0;
        if (has) tail = sum; else head = sum;
        // segmented suffix scan of the heads, steered by seg_offset
        real_t r = head;
#pragma unroll
        for (int o = 1; o < CSR5_OMEGA; o <<= 1) {
            real_t d = __shfl_down_sync(FULL_MASK, r, o);
            if (o <= seg) r = r + d;
        }
        real_t after = __shfl_down_sync(FULL_MASK, r, 1);
        if (lane == 31) after = 0;
        if (has) {
            int kk = k - 1;
            real_t s = tail + after;
            if (kk == 0 && cont) {
                carry[t] = s;
            } else {
                int row = row0 + (flagged ? empty_offset[eoff + kk] : kk);
                csr5_store(y, row, alpha, s, beta);
            }
        }
        return;
    }
    long long w = warp - ntiles;
    if (w < ntail) {
        const long long split = (long long)ntiles * tile;
        const int row = (int)(tile_ptr[ntiles] & 0x7fffffffu) + (int)w;
        const long long s0 = row_ptr[row], end = row_ptr[row + 1];
        if (s0 == end) return;
        const long long start = s0 > split ? s0 : split;
        real_t sum = 0;
        for (long long p = (start & ~31ll) + lane; p < end; p += 32) {
            if (p >= start) sum = fma(ldg(vals + p), ldg(x + ldg(col_idx + p)), sum);
        }
        sum = warp_reduce_sum(sum);
        if (lane == 0) {
            if (s0 < split) carry[ntiles] = sum;
            else csr5_store(y, row, alpha, sum, beta);
        }
        return;
    }
    w -= ntail;
    const long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;
    const long long rest = nwarps - ntiles - ntail;
    for (long long i = w * 32 + lane; i < nempty; i += rest * 32) {
        csr5_store(y, empty_rows[i], alpha, (real_t)0, beta);
    }
}

// Parameters: the fields of Csr5CalibrateArgs (gpu.rs) in order (gpu/launch.rs, Abi::Params).
extern "C" __global__ void csr5_calibrate(
    int nruns, const int* __restrict__ run_row, const int* __restrict__ run_first,
    const int* __restrict__ run_end, const real_t* __restrict__ carry, real_t* __restrict__ y,
    real_t alpha) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (unsigned)nruns) return;
    const int e = run_end[i];
    int f = run_first[i];
    real_t s = carry[f];
    for (++f; f < e; ++f) s += carry[f];
    const int row = run_row[i];
    y[row] = fma(alpha, s, y[row]);
}

// csr5_generate: the O(nnz) preprocessing on the GPU (the original builds CSR5 on the device),
// a warp per tile: lane i transposes its sigma entries (entry j to j*32 + i), finds the row
// starts among them (bit_flag; bit 0 of lane 0 always), y_offset by a warp scan of the flag
// counts, seg_offset from a ballot (lanes to the first lane >= i holding a flag, to lane 31 if
// none), packs the descriptor, and for tiles flagged in tile_ptr writes each segment's row
// (relative to the tile's first row) to empty_offset. The tail stays as copied (CSR order).
// Parameters: the fields of Csr5GenerateArgs (gpu.rs) in order (gpu/launch.rs, Abi::Params).
extern "C" __global__ void csr5_generate(
    int ntiles, int sigma, int npacket, int y_bits, int nrows,
    const int* __restrict__ row_ptr, const int* __restrict__ col_in, const real_t* __restrict__ val_in,
    const unsigned* __restrict__ tile_ptr, const int* __restrict__ empty_ptr,
    int* __restrict__ col_out, real_t* __restrict__ val_out, unsigned* __restrict__ tile_desc,
    int* __restrict__ empty_offset) {
    const int lane = threadIdx.x & 31;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (warp >= ntiles) return;
    const int t = (int)warp;
    const long long tile = (long long)CSR5_OMEGA * sigma;
    const long long base = (long long)t * tile;
    const unsigned tp = tile_ptr[t];
    const int row0 = (int)(tp & 0x7fffffffu);
    const bool flagged = (tp & 0x80000000u) != 0;
    const long long p0 = base + (long long)lane * sigma;
    // the row holding p0: the last r with row_ptr[r] <= p0
    int lo = 0, hi = nrows + 1;
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if ((long long)row_ptr[mid] <= p0) lo = mid + 1; else hi = mid;
    }
    const int r0 = lo - 1;
    unsigned flags = 0;
    int rr = r0;
    for (int j = 0; j < sigma; ++j) {
        const long long p = p0 + j;
        col_out[base + j * CSR5_OMEGA + lane] = col_in[p];
        val_out[base + j * CSR5_OMEGA + lane] = val_in[p];
        bool start;
        if (j == 0) {
            start = (p == base) || ((long long)row_ptr[rr] == p);
        } else if ((long long)row_ptr[rr + 1] == p) {
            while ((long long)row_ptr[rr + 1] <= p) ++rr;
            start = true;
        } else {
            start = false;
        }
        if (start) flags |= 1u << j;
    }
    const int cnt = __popc(flags);
    int incl = cnt;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int v = __shfl_up_sync(FULL_MASK, incl, o);
        if (lane >= o) incl += v;
    }
    const int y_off = incl - cnt;
    const unsigned ballot = __ballot_sync(FULL_MASK, flags != 0u);
    const unsigned m = ballot >> lane;
    const int next = m ? lane + __ffs(m) - 1 : 31;
    const unsigned long long word = (unsigned long long)y_off
        | ((unsigned long long)(next - lane) << y_bits)
        | ((unsigned long long)flags << (y_bits + 5));
    for (int q = 0; q < npacket; ++q)
        tile_desc[((long long)t * npacket + q) * CSR5_OMEGA + lane] = (unsigned)(word >> (32 * q));
    if (flagged) {
        int k = empty_ptr[t] + y_off;
        rr = r0;
        for (int j = 0; j < sigma; ++j) {
            const long long p = p0 + j;
            bool start;
            if (j == 0) {
                start = (p == base) || ((long long)row_ptr[rr] == p);
            } else if ((long long)row_ptr[rr + 1] == p) {
                while ((long long)row_ptr[rr + 1] <= p) ++rr;
                start = true;
            } else {
                start = false;
            }
            if (start) empty_offset[k++] = rr - row0;
        }
    }
}
