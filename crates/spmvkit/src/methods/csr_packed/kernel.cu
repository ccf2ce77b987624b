// csr-packed: compressed CSR, one warp per slice of 32 rows and one lane per row (issue #19;
// after CSR-DU/CSR-VI, CF'08, and BRO, ICS'13). The format is described in mod.rs.
// Work items: items [0, nslices) are slices, items [nslices, nslices + nlong) long rows, one
// warp each (blockDim.x a multiple of 32, so an item never splits a warp).
// Slice lane: column codes come in blocks of 8 entries (8, 16 or 32 bytes per lane, a vector
// load), each column = previous + code (the first: row - bias + code, mod 2^32); values come
// from the value mode V (template): 0 one constant, 1/2/4/8/16-bit dictionary codes (a block
// of 8 codes is V bytes), or raw (8 reals per block). The lane sums left to right with fma from
// zero (the order of csr-scalar), then y = alpha*sum or fma(alpha, sum, beta*y).
// Long row: 32 strided lanes with fma from zero, warp_reduce_sum, lane 0 stores (csr-vector's
// order). The CPU mirror (cpu.rs) follows both orders, so results match bit for bit.
// Item and lane indices are unsigned: items < 2^31 (checked by the upload), slice-lane indices
// are size_t.

#define PACKED_SKIP 255u
#define V_RAW 99

template <int W>
__device__ __forceinline__ unsigned packed_bias() {
    return 1u << (W - 1);
}

// Code j (0..7) of a column block held in c[] (W = 8: c[0..1], 16: c[0..3], 32: c[0..7]).
template <int W>
__device__ __forceinline__ unsigned col_code(const unsigned (&c)[8], int j) {
    if constexpr (W == 8) {
        return (c[j >> 2] >> (8 * (j & 3))) & 0xffu;
    } else if constexpr (W == 16) {
        return (c[j >> 1] >> (16 * (j & 1))) & 0xffffu;
    } else {
        return c[j];
    }
}

template <int W>
__device__ __forceinline__ void load_cols(const unsigned* __restrict__ p, unsigned (&c)[8]) {
    if constexpr (W == 8) {
        const uint2 a = ldg(reinterpret_cast<const uint2*>(p));
        c[0] = a.x; c[1] = a.y;
    } else if constexpr (W == 16) {
        const uint4 a = ldg(reinterpret_cast<const uint4*>(p));
        c[0] = a.x; c[1] = a.y; c[2] = a.z; c[3] = a.w;
    } else {
        const uint4 a = ldg(reinterpret_cast<const uint4*>(p));
        const uint4 b = ldg(reinterpret_cast<const uint4*>(p) + 1);
        c[0] = a.x; c[1] = a.y; c[2] = a.z; c[3] = a.w;
        c[4] = b.x; c[5] = b.y; c[6] = b.z; c[7] = b.w;
    }
}

// The value block `blk` (global block index) of mode V: codes in v[0..3], or raw reals in r[].
template <int V>
__device__ __forceinline__ void load_vals(const unsigned char* __restrict__ vs,
                                          const real_t* __restrict__ raw, size_t blk,
                                          unsigned (&v)[4], real_t (&r)[8]) {
    if constexpr (V == 1) {
        v[0] = ldg(vs + blk);
    } else if constexpr (V == 2) {
        v[0] = ldg(reinterpret_cast<const unsigned short*>(vs) + blk);
    } else if constexpr (V == 4) {
        v[0] = ldg(reinterpret_cast<const unsigned*>(vs) + blk);
    } else if constexpr (V == 8) {
        const uint2 a = ldg(reinterpret_cast<const uint2*>(vs) + blk);
        v[0] = a.x; v[1] = a.y;
    } else if constexpr (V == 16) {
        const uint4 a = ldg(reinterpret_cast<const uint4*>(vs) + blk);
        v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
    } else if constexpr (V == V_RAW) {
#ifdef SPMVKIT_REAL_F64
        const double2* p = reinterpret_cast<const double2*>(raw + blk * 8);
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const double2 a = ldg(p + q);
            r[2 * q] = a.x; r[2 * q + 1] = a.y;
        }
#else
        const float4* p = reinterpret_cast<const float4*>(raw + blk * 8);
#pragma unroll
        for (int q = 0; q < 2; ++q) {
            const float4 a = ldg(p + q);
            r[4 * q] = a.x; r[4 * q + 1] = a.y; r[4 * q + 2] = a.z; r[4 * q + 3] = a.w;
        }
#endif
    }
}

// Entry j's value: the constant, the raw real, or the dictionary entry of its code (1- and
// 2-bit codes select among dictionary entries held in registers, d[0..3]; wider codes read the
// dictionary through the read-only cache).
template <int V>
__device__ __forceinline__ real_t value_of(const unsigned (&v)[4], const real_t (&r)[8], int j,
                                           const real_t* __restrict__ dict,
                                           const real_t (&d)[4]) {
    if constexpr (V == 0) {
        return d[0];
    } else if constexpr (V == V_RAW) {
        return r[j];
    } else {
        const unsigned bit = (unsigned)j * V;
        const unsigned code = (v[bit >> 5] >> (bit & 31)) & ((1u << V) - 1u);
        if constexpr (V == 1) {
            return code ? d[1] : d[0];
        } else if constexpr (V == 2) {
            const real_t lo = (code & 1u) ? d[1] : d[0];
            const real_t hi = (code & 1u) ? d[3] : d[2];
            return (code & 2u) ? hi : lo;
        } else {
            return ldg(dict + code);
        }
    }
}

// The sum of one slice row of `len` entries at code width W. Per group of 8 entries the lane
// decodes the columns, then issues all x loads and value loads, then the fmas in entry order
// (loads of one group are independent, so they are in flight together).
template <int W, int V>
__device__ __forceinline__ real_t slice_row(unsigned row, unsigned len, int lane,
                                            const unsigned* __restrict__ words, size_t blk0,
                                            const unsigned char* __restrict__ vs,
                                            const real_t* __restrict__ raw,
                                            const real_t* __restrict__ dict,
                                            const real_t (&d)[4],
                                            const real_t* __restrict__ x) {
    unsigned prev = row - packed_bias<W>();
    real_t sum = (real_t)0;
    for (unsigned g = 0; g * 8 < len; ++g) {
        unsigned c[8];
        load_cols<W>(words + ((size_t)g * 32 + lane) * (W / 4), c);
        unsigned v[4];
        real_t r[8];
        load_vals<V>(vs, raw, blk0 + (size_t)g * 32 + lane, v, r);
        const unsigned m = len - g * 8;
        real_t xv[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            if ((unsigned)j < m) {
                prev += col_code<W>(c, j);
                xv[j] = ldg(x + prev);
            } else {
                xv[j] = (real_t)0;
            }
        }
        real_t av[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) av[j] = ((unsigned)j < m) ? value_of<V>(v, r, j, dict, d) : (real_t)0;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            if ((unsigned)j < m) sum = fma(av[j], xv[j], sum);
        }
    }
    return sum;
}

template <int V>
__device__ __forceinline__ void csr_packed(unsigned nslices, unsigned nlong,
                                           const unsigned char* __restrict__ lens,
                                           const unsigned* __restrict__ rows, int has_rows,
                                           const unsigned* __restrict__ grp,
                                           const unsigned* __restrict__ col_off,
                                           const unsigned char* __restrict__ col_w,
                                           const unsigned* __restrict__ cols,
                                           const unsigned char* __restrict__ vs,
                                           const real_t* __restrict__ raw,
                                           const real_t* __restrict__ dict,
                                           const unsigned* __restrict__ long_rows,
                                           const unsigned* __restrict__ long_ptr,
                                           const unsigned* __restrict__ long_cols,
                                           const real_t* __restrict__ long_vals,
                                           const real_t* __restrict__ x, real_t* __restrict__ y,
                                           real_t alpha, real_t beta) {
    const unsigned item = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (item < nslices) {
        const size_t slot = (size_t)item * 32 + lane;
        const unsigned len = ldg(lens + slot);
        if (len == PACKED_SKIP) return;
        const unsigned row = has_rows ? ldg(rows + slot) : item * 32 + lane;
        const size_t blk0 = (size_t)ldg(grp + item) * 32;
        const unsigned w = ldg(col_w + item);
        const unsigned* words = cols + (size_t)ldg(col_off + item) * 4;
        real_t d[4] = {(real_t)0, (real_t)0, (real_t)0, (real_t)0};
        if constexpr (V == 0 || V == 1 || V == 2) {
#pragma unroll
            for (int k = 0; k < (V == 2 ? 4 : (V == 1 ? 2 : 1)); ++k) d[k] = ldg(dict + k);
        }
        real_t sum;
        if (w == 16) {
            sum = slice_row<16, V>(row, len, lane, words, blk0, vs, raw, dict, d, x);
        } else if (w == 8) {
            sum = slice_row<8, V>(row, len, lane, words, blk0, vs, raw, dict, d, x);
        } else {
            sum = slice_row<32, V>(row, len, lane, words, blk0, vs, raw, dict, d, x);
        }
        y[row] = (beta == (real_t)0) ? alpha * sum : fma(alpha, sum, beta * y[row]);
    } else if (item - nslices < nlong) {
        const unsigned i = item - nslices;
        const unsigned r = ldg(long_rows + i);
        const unsigned end = ldg(long_ptr + i + 1);
        real_t sum = (real_t)0;
        for (unsigned j = ldg(long_ptr + i) + lane; j < end; j += 32) {
            sum = fma(ldg(long_vals + j), ldg(x + ldg(long_cols + j)), sum);
        }
        sum = warp_reduce_sum(sum);
        if (lane == 0) y[r] = (beta == (real_t)0) ? alpha * sum : fma(alpha, sum, beta * y[r]);
    }
}

#define PACKED_ENTRY(NAME, V)                                                                    \
    extern "C" __global__ void __launch_bounds__(256) NAME(                                      \
        unsigned nslices, unsigned nlong, const unsigned char* __restrict__ lens,                \
        const unsigned* __restrict__ rows, int has_rows, const unsigned* __restrict__ grp,       \
        const unsigned* __restrict__ col_off, const unsigned char* __restrict__ col_w,           \
        const unsigned* __restrict__ cols, const unsigned char* __restrict__ vs,                 \
        const real_t* __restrict__ raw, const real_t* __restrict__ dict,                         \
        const unsigned* __restrict__ long_rows, const unsigned* __restrict__ long_ptr,           \
        const unsigned* __restrict__ long_cols, const real_t* __restrict__ long_vals,            \
        const real_t* __restrict__ x, real_t* __restrict__ y, real_t alpha, real_t beta) {       \
        csr_packed<V>(nslices, nlong, lens, rows, has_rows, grp, col_off, col_w, cols, vs, raw,  \
                      dict, long_rows, long_ptr, long_cols, long_vals, x, y, alpha, beta);       \
    }

PACKED_ENTRY(csr_packed_v0, 0)
PACKED_ENTRY(csr_packed_v1, 1)
PACKED_ENTRY(csr_packed_v2, 2)
PACKED_ENTRY(csr_packed_v4, 4)
PACKED_ENTRY(csr_packed_v8, 8)
PACKED_ENTRY(csr_packed_v16, 16)
PACKED_ENTRY(csr_packed_raw, V_RAW)
