// csr-packed: compressed CSR, one warp per slice of 32 rows and one lane per row (issue #19;
// after CSR-DU/CSR-VI, CF'08, and BRO, ICS'13). The format is described in mod.rs.
// Persistent warps (the grid is sized to the resident blocks) take the slices, then every block
// takes long rows b, b + gridDim.x, ...; blockDim.x is 256.
// Slice lane: column codes come in blocks of 8 entries (8, 16 or 32 bytes per lane, a vector
// load), each column = previous + code (the first: row - bias + code, mod 2^32); values come
// from the value mode V (template): 0 one constant, 1/2/4/8/16-bit dictionary codes (a block
// of 8 codes is V bytes), or raw (8 reals per block). The lane sums left to right with fma from
// zero (the order of csr-scalar), then y = alpha*sum or fma(alpha, sum, beta*y).
// Long row: the block's 256 strided threads with fma from zero, warp butterflies, a butterfly
// over the warp sums (cta_gather_sum), thread 0 stores. The CPU mirror (cpu.rs) follows both orders, so results match bit for bit.
// Codes and values are read once, so they are loaded as streams (ld.global.cs, evicted first),
// leaving L1 to x's gathers (docs/methods/csr-packed.md, "Streamed codes").
// Slice and long-row indices are unsigned and below 2^31 (checked by the upload), so adding
// nwarps cannot wrap; slice-lane indices are size_t.

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

// A lane's column block of a group whose words start at `g` (the 32 lanes' blocks interleaved
// in 16-byte units: at 32 bits the lane's second half sits 32 units after its first, so each
// load of the warp reads 512 contiguous bytes).
template <int W>
__device__ __forceinline__ void load_cols(const unsigned* __restrict__ g, int lane,
                                          unsigned (&c)[8]) {
    if constexpr (W == 8) {
        const uint2 a = ldcs(reinterpret_cast<const uint2*>(g) + lane);
        c[0] = a.x; c[1] = a.y;
    } else if constexpr (W == 16) {
        const uint4 a = ldcs(reinterpret_cast<const uint4*>(g) + lane);
        c[0] = a.x; c[1] = a.y; c[2] = a.z; c[3] = a.w;
    } else {
        const uint4 a = ldcs(reinterpret_cast<const uint4*>(g) + lane);
        const uint4 b = ldcs(reinterpret_cast<const uint4*>(g) + 32 + lane);
        c[0] = a.x; c[1] = a.y; c[2] = a.z; c[3] = a.w;
        c[4] = b.x; c[5] = b.y; c[6] = b.z; c[7] = b.w;
    }
}

// The value block `blk` (global block index: group · 32 + lane) of mode V: codes in v[0..3], or
// raw reals in r[] (a group's raw blocks interleaved in 16-byte units, unit q of every lane side
// by side).
template <int V>
__device__ __forceinline__ void load_vals(const unsigned char* __restrict__ vs,
                                          const real_t* __restrict__ raw, size_t blk,
                                          unsigned (&v)[4], real_t (&r)[8]) {
    if constexpr (V == 1) {
        v[0] = ldcs(vs + blk);
    } else if constexpr (V == 2) {
        v[0] = ldcs(reinterpret_cast<const unsigned short*>(vs) + blk);
    } else if constexpr (V == 4) {
        v[0] = ldcs(reinterpret_cast<const unsigned*>(vs) + blk);
    } else if constexpr (V == 8) {
        const uint2 a = ldcs(reinterpret_cast<const uint2*>(vs) + blk);
        v[0] = a.x; v[1] = a.y;
    } else if constexpr (V == 16) {
        const uint4 a = ldcs(reinterpret_cast<const uint4*>(vs) + blk);
        v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
    } else if constexpr (V == V_RAW) {
        const real_t* g = raw + (blk & ~(size_t)31) * 8;
        const unsigned lane = (unsigned)(blk & 31);
#ifdef SPMVKIT_REAL_F64
        const double2* p = reinterpret_cast<const double2*>(g) + lane;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const double2 a = ldcs(p + 32 * q);
            r[2 * q] = a.x; r[2 * q + 1] = a.y;
        }
#else
        const float4* p = reinterpret_cast<const float4*>(g) + lane;
#pragma unroll
        for (int q = 0; q < 2; ++q) {
            const float4 a = ldcs(p + 32 * q);
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
#if defined(SPMVKIT_VAL_F16) || defined(SPMVKIT_VAL_BF16)
            // values stored in f16 or bf16: a 16-bit code is the value's own bits
            if constexpr (V == 16) return widen_val((val_t)code);
#endif
            return ldg(dict + code);
        }
    }
}

// The sum of group g (entries 8g..8g+7, m of them present) of a slice row at code width W,
// from its column words c[] and value block v[]/r[], added to sum in entry order: the columns
// are decoded first, then all x loads are issued, then the fmas (the loads of one group are
// independent, so they are in flight together). All 8 slots load x, present or not: a padding
// code is 0, so a slot past m re-reads the row's last column (in bounds; m > 0 here), and its
// fma is skipped. Unpredicated loads let the compiler issue them together; predicated ones it
// interleaved with the fmas (docs/methods/csr-packed.md, "Unpredicated gathers").
template <int W, int V>
__device__ __forceinline__ real_t group_sum(unsigned& prev, unsigned m, const unsigned (&c)[8],
                                            const unsigned (&v)[4], const real_t (&r)[8],
                                            const real_t* __restrict__ dict,
                                            const real_t (&d)[4],
                                            const real_t* __restrict__ x, real_t sum) {
    if (m == 0u) return sum;
    real_t xv[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        prev += col_code<W>(c, j);
        xv[j] = ldg(x + prev);
    }
    real_t av[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) av[j] = ((unsigned)j < m) ? value_of<V>(v, r, j, dict, d) : (real_t)0;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        if ((unsigned)j < m) sum = fma(av[j], xv[j], sum);
    }
    return sum;
}

// What a lane needs of its slice before the codes: its length byte and row, the slice's first
// value block (in blocks of 32), code width and code offset (the last three the same in every
// lane).
struct SliceMeta {
    unsigned len, row, w, grp, off;
};

// The first 16 bytes of a lane's group-0 column block (all of it at 8 and 16 bits) and its
// group-0 value block, loaded ahead of use.
struct Block0 {
    unsigned c[4];
    unsigned v[4];
    real_t r[8];
};

__device__ __forceinline__ SliceMeta load_meta(unsigned s, int lane,
                                               const unsigned char* __restrict__ lens,
                                               const unsigned* __restrict__ rows, int has_rows,
                                               const unsigned* __restrict__ grp,
                                               const unsigned* __restrict__ col_off,
                                               const unsigned char* __restrict__ col_w) {
    const size_t slot = (size_t)s * 32 + lane;
    SliceMeta m;
    m.len = ldg(lens + slot);
    m.row = has_rows ? ldg(rows + slot) : s * 32 + lane;
    m.grp = ldg(grp + s);
    m.w = ldg(col_w + s);
    m.off = ldg(col_off + s);
    return m;
}

template <int V>
__device__ __forceinline__ void load_block0(const SliceMeta& m, int lane,
                                            const unsigned* __restrict__ cols,
                                            const unsigned char* __restrict__ vs,
                                            const real_t* __restrict__ raw, Block0& b) {
    b.c[0] = b.c[1] = b.c[2] = b.c[3] = 0u;
    if (m.len == PACKED_SKIP || m.len == 0) return;
    // the lane's first unit: 8 bytes at 8 bits, 16 bytes otherwise
    const unsigned* words = cols + (size_t)m.off * 4 + (size_t)lane * (m.w == 8 ? 2 : 4);
    if (m.w == 8) {
        const uint2 a = ldcs(reinterpret_cast<const uint2*>(words));
        b.c[0] = a.x; b.c[1] = a.y;
    } else {
        const uint4 a = ldcs(reinterpret_cast<const uint4*>(words));
        b.c[0] = a.x; b.c[1] = a.y; b.c[2] = a.z; b.c[3] = a.w;
    }
    load_vals<V>(vs, raw, (size_t)m.grp * 32 + lane, b.v, b.r);
}

// The whole row of a lane at code width W: group 0 from the prefetched block (at 32 bits its
// second half loaded here), later groups loaded here.
template <int W, int V>
__device__ __forceinline__ real_t slice_row(const SliceMeta& m, int lane, const Block0& b,
                                            const unsigned* __restrict__ cols,
                                            const unsigned char* __restrict__ vs,
                                            const real_t* __restrict__ raw,
                                            const real_t* __restrict__ dict,
                                            const real_t (&d)[4],
                                            const real_t* __restrict__ x) {
    const unsigned* words = cols + (size_t)m.off * 4;
    const size_t blk0 = (size_t)m.grp * 32;
    unsigned c0[8] = {b.c[0], b.c[1], b.c[2], b.c[3], 0u, 0u, 0u, 0u};
    if constexpr (W == 32) {
        const uint4 a = ldcs(reinterpret_cast<const uint4*>(words) + 32 + lane);
        c0[4] = a.x; c0[5] = a.y; c0[6] = a.z; c0[7] = a.w;
    }
    unsigned prev = m.row - packed_bias<W>();
    real_t sum = group_sum<W, V>(prev, m.len, c0, b.v, b.r, dict, d, x, (real_t)0);
    for (unsigned g = 1; g * 8 < m.len; ++g) {
        unsigned c[8];
        load_cols<W>(words + (size_t)g * 32 * (W / 4), lane, c);
        unsigned v[4];
        real_t r[8];
        load_vals<V>(vs, raw, blk0 + (size_t)g * 32 + lane, v, r);
        sum = group_sum<W, V>(prev, m.len - g * 8, c, v, r, dict, d, x, sum);
    }
    return sum;
}

// One slice row of a lane: its sum at the slice's width, stored to y.
template <int V>
__device__ __forceinline__ void slice_lane(const SliceMeta& m, int lane, const Block0& b,
                                           const unsigned* __restrict__ cols,
                                           const unsigned char* __restrict__ vs,
                                           const real_t* __restrict__ raw,
                                           const real_t* __restrict__ dict, const real_t (&d)[4],
                                           const real_t* __restrict__ x, real_t* __restrict__ y,
                                           real_t alpha, real_t beta) {
    if (m.len == PACKED_SKIP) return;
    real_t sum;
    if (m.w == 16) {
        sum = slice_row<16, V>(m, lane, b, cols, vs, raw, dict, d, x);
    } else if (m.w == 8) {
        sum = slice_row<8, V>(m, lane, b, cols, vs, raw, dict, d, x);
    } else {
        sum = slice_row<32, V>(m, lane, b, cols, vs, raw, dict, d, x);
    }
    y[m.row] = (beta == (real_t)0) ? alpha * sum : fma(alpha, sum, beta * y[m.row]);
}

// Persistent warps: warp k of `nwarps` takes slices k, k + nwarps, ... (the warps sweep the
// matrix together, so x's rows stay in L2). With PREFETCH the next slice's metadata is loaded
// while the current one gathers x; without, a slice's loads wait for each other. Only the
// metadata: a deeper prefetch holds registers that cost a resident block per SM
// (docs/methods/csr-packed.md). Then long rows k, k + nwarps, ...
template <int V, bool PREFETCH>
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
    const unsigned warp = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const unsigned nwarps = gridDim.x * (blockDim.x >> 5);
    const int lane = threadIdx.x & 31;
    real_t d[4] = {(real_t)0, (real_t)0, (real_t)0, (real_t)0};
    if constexpr (V == 0 || V == 1 || V == 2) {
#pragma unroll
        for (int k = 0; k < (V == 2 ? 4 : (V == 1 ? 2 : 1)); ++k) d[k] = ldg(dict + k);
    }
    const unsigned first = warp, end = nslices, step = nwarps;
    if constexpr (PREFETCH) {
        unsigned s = first;
        SliceMeta mc;
        if (s < end) mc = load_meta(s, lane, lens, rows, has_rows, grp, col_off, col_w);
        while (s < end) {
            const unsigned sn = s + step;
            Block0 bc;
            load_block0<V>(mc, lane, cols, vs, raw, bc);
            SliceMeta mn;
            if (sn < end) mn = load_meta(sn, lane, lens, rows, has_rows, grp, col_off, col_w);
            slice_lane<V>(mc, lane, bc, cols, vs, raw, dict, d, x, y, alpha, beta);
            mc = mn;
            s = sn;
        }
    } else {
        for (unsigned s = first; s < end; s += step) {
            const SliceMeta m = load_meta(s, lane, lens, rows, has_rows, grp, col_off, col_w);
            Block0 b;
            load_block0<V>(m, lane, cols, vs, raw, b);
            slice_lane<V>(m, lane, b, cols, vs, raw, dict, d, x, y, alpha, beta);
        }
    }
    // Long rows: one block each (cta_gather_sum: 256 strided threads, warp butterflies, then a
    // butterfly over the warp sums), blocks b, b + gridDim.x, ...
    __shared__ real_t wsum[32];
    for (unsigned i = blockIdx.x; i < nlong; i += gridDim.x) {
        const unsigned r = ldg(long_rows + i);
        const real_t sum = cta_gather_sum(long_vals, reinterpret_cast<const int*>(long_cols), x,
                                          (int)ldg(long_ptr + i), (int)ldg(long_ptr + i + 1), wsum);
        if (threadIdx.x == 0) y[r] = (beta == (real_t)0) ? alpha * sum : fma(alpha, sum, beta * y[r]);
        __syncthreads();
    }
}

// The entries' parameters (R: __restrict__, written once for every entry): the launch layer's
// PackedArgs, field by field (gpu.rs).
#define PACKED_PARAMS(R)                                                                          \
    unsigned nslices, unsigned nlong, const unsigned char* R lens, const unsigned* R rows,       \
        int has_rows, const unsigned* R grp, const unsigned* R col_off,                          \
        const unsigned char* R col_w, const unsigned* R cols, const unsigned char* R vs,         \
        const real_t* R raw, const real_t* R dict, const unsigned* R long_rows,                  \
        const unsigned* R long_ptr, const unsigned* R long_cols, const real_t* R long_vals,      \
        const real_t* R x, real_t* R y, real_t alpha, real_t beta
#define PACKED_BODY(V, PF)                                                                        \
    {                                                                                             \
        csr_packed<V, PF>(nslices, nlong, lens, rows, has_rows, grp, col_off, col_w, cols, vs,   \
                          raw, dict, long_rows, long_ptr, long_cols, long_vals, x, y, alpha,     \
                          beta);                                                                 \
    }

extern "C" __global__ void __launch_bounds__(256) csr_packed_v0(PACKED_PARAMS(__restrict__)) PACKED_BODY(0, true)
extern "C" __global__ void __launch_bounds__(256) csr_packed_v1(PACKED_PARAMS(__restrict__)) PACKED_BODY(1, true)
extern "C" __global__ void __launch_bounds__(256) csr_packed_v2(PACKED_PARAMS(__restrict__)) PACKED_BODY(2, true)
extern "C" __global__ void __launch_bounds__(256) csr_packed_v4(PACKED_PARAMS(__restrict__)) PACKED_BODY(4, true)
extern "C" __global__ void __launch_bounds__(256) csr_packed_v8(PACKED_PARAMS(__restrict__)) PACKED_BODY(8, true)
extern "C" __global__ void __launch_bounds__(256) csr_packed_v16(PACKED_PARAMS(__restrict__)) PACKED_BODY(16, true)
extern "C" __global__ void __launch_bounds__(256) csr_packed_raw(PACKED_PARAMS(__restrict__)) PACKED_BODY(V_RAW, true)
extern "C" __global__ void __launch_bounds__(256) csr_packed_v0_flat(PACKED_PARAMS(__restrict__)) PACKED_BODY(0, false)
extern "C" __global__ void __launch_bounds__(256) csr_packed_v1_flat(PACKED_PARAMS(__restrict__)) PACKED_BODY(1, false)
extern "C" __global__ void __launch_bounds__(256) csr_packed_v2_flat(PACKED_PARAMS(__restrict__)) PACKED_BODY(2, false)
extern "C" __global__ void __launch_bounds__(256) csr_packed_v4_flat(PACKED_PARAMS(__restrict__)) PACKED_BODY(4, false)
extern "C" __global__ void __launch_bounds__(256) csr_packed_v8_flat(PACKED_PARAMS(__restrict__)) PACKED_BODY(8, false)
extern "C" __global__ void __launch_bounds__(256) csr_packed_v16_flat(PACKED_PARAMS(__restrict__)) PACKED_BODY(16, false)
extern "C" __global__ void __launch_bounds__(256) csr_packed_raw_flat(PACKED_PARAMS(__restrict__)) PACKED_BODY(V_RAW, false)

// ---- k vectors: Y = alpha*A*X + beta*Y (SpMM, issue #24; docs/spmm.md, "csr-packed") ----------
// The same streams and the same lane per row. A work item is (slice, pass): pass p takes the C
// vectors p*C .. p*C+C-1 (fewer in the last pass, nv of them), and its lane decodes the row
// once for them, gathering each nonzero's C values of X and keeping C sums in registers. The
// passes of a slice are consecutive items, so their warps re-read the slice's codes from L1/L2
// while DRAM sends them once; the matrix bytes per vector fall by C against k SpMV calls.
// X entry (column j, vector c) is x[j*x_col + c*x_vec] and Y entry (row i, vector c) is
// y[i*y_row + c*y_vec]: row-major x_col = k, x_vec = 1; column-major x_col = 1, x_vec = ncols
// (Y likewise), so one kernel takes both orders. Row-major X rows are read with loads of XV
// values (xvec: 2 or 4 when k, C and X's address allow it, else 1).
// Each (row, vector) is summed exactly as the SpMV kernel sums that vector (a slice row left to
// right with fma from zero; a long row by cta_gather_sum's order), then stored as it stores, so
// every column of the result is bitwise csr-packed's SpMV of that column (the CPU mirror,
// csr_packed/multi.rs, runs the SpMV mirror per column).

// Strides and pass of one item: the X and Y strides, k, the first vector and the count.
struct MmPass {
    unsigned x_col, x_vec, y_row, y_vec;
    unsigned c0, nv;
    int xvec;
};

// The C values of X row `col` for the pass (vectors c0 .. c0 + nv - 1; zero past nv).
template <int C>
__device__ __forceinline__ void mm_gather(const real_t* __restrict__ x, unsigned col,
                                          const MmPass& q, real_t (&out)[C]) {
    const size_t base = (size_t)col * q.x_col + (size_t)q.c0 * q.x_vec;
#ifdef SPMVKIT_REAL_F64
    if constexpr (C >= 2) {
        if (q.xvec == 2) {
            const double2* p = reinterpret_cast<const double2*>(x + base);
#pragma unroll
            for (int h = 0; h < C / 2; ++h) {
                const double2 a = (2u * h < q.nv) ? ldg(p + h) : make_double2(0.0, 0.0);
                out[2 * h] = a.x; out[2 * h + 1] = a.y;
            }
            return;
        }
    }
#else
    if constexpr (C >= 4) {
        if (q.xvec == 4) {
            const float4* p = reinterpret_cast<const float4*>(x + base);
#pragma unroll
            for (int h = 0; h < C / 4; ++h) {
                const float4 a = (4u * h < q.nv) ? ldg(p + h) : make_float4(0.f, 0.f, 0.f, 0.f);
                out[4 * h] = a.x; out[4 * h + 1] = a.y; out[4 * h + 2] = a.z; out[4 * h + 3] = a.w;
            }
            return;
        }
    }
    if constexpr (C >= 2) {
        if (q.xvec == 2) {
            const float2* p = reinterpret_cast<const float2*>(x + base);
#pragma unroll
            for (int h = 0; h < C / 2; ++h) {
                const float2 a = (2u * h < q.nv) ? ldg(p + h) : make_float2(0.f, 0.f);
                out[2 * h] = a.x; out[2 * h + 1] = a.y;
            }
            return;
        }
    }
#endif
#pragma unroll
    for (int c = 0; c < C; ++c) out[c] = ((unsigned)c < q.nv) ? ldg(x + base + (size_t)c * q.x_vec) : (real_t)0;
}

// Slots of a group whose gathers are issued together: 64 bytes of X in flight per lane and
// slot batch (8 values in f64, 16 in f32), at most the group's 8 slots. More held registers
// for the gathers made ptxas spill (f64, C = 2, 16 values in flight).
template <int C>
__device__ __forceinline__ constexpr int mm_slots() {
    return (64 / SPMVKIT_REAL_BYTES) / C < 8 ? (64 / SPMVKIT_REAL_BYTES) / C : 8;
}

// group_sum for C vectors: the columns decoded, the values looked up, then the gathers of
// mm_slots<C>() slots at a time and their fmas in entry order. As in group_sum, every slot
// gathers (a slot past m re-reads the row's last column) and only slots below m add.
template <int W, int V, int C>
__device__ __forceinline__ void mm_group(unsigned& prev, unsigned m, const unsigned (&c)[8],
                                         const unsigned (&v)[4], const real_t (&r)[8],
                                         const real_t* __restrict__ dict, const real_t (&d)[4],
                                         const real_t* __restrict__ x, const MmPass& q,
                                         real_t (&acc)[C]) {
    if (m == 0u) return;
    unsigned col[8];
    real_t av[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        prev += col_code<W>(c, j);
        col[j] = prev;
        av[j] = ((unsigned)j < m) ? value_of<V>(v, r, j, dict, d) : (real_t)0;
    }
    constexpr int S = mm_slots<C>();
#pragma unroll
    for (int j0 = 0; j0 < 8; j0 += S) {
        real_t xv[S][C];
#pragma unroll
        for (int j = 0; j < S; ++j) mm_gather<C>(x, col[j0 + j], q, xv[j]);
#pragma unroll
        for (int j = 0; j < S; ++j) {
            if ((unsigned)(j0 + j) < m) {
#pragma unroll
                for (int e = 0; e < C; ++e) acc[e] = fma(av[j0 + j], xv[j][e], acc[e]);
            }
        }
    }
}

// One slice row of a lane for a pass at code width W: its C sums, left to right from zero.
template <int W, int V, int C>
__device__ __forceinline__ void mm_row(const SliceMeta& m, int lane,
                                       const unsigned* __restrict__ cols,
                                       const unsigned char* __restrict__ vs,
                                       const real_t* __restrict__ raw,
                                       const real_t* __restrict__ dict, const real_t (&d)[4],
                                       const real_t* __restrict__ x, const MmPass& q,
                                       real_t (&acc)[C]) {
    const unsigned* words = cols + (size_t)m.off * 4;
    const size_t blk0 = (size_t)m.grp * 32;
    unsigned prev = m.row - packed_bias<W>();
    for (unsigned g = 0; g * 8 < m.len; ++g) {
        unsigned c[8];
        load_cols<W>(words + (size_t)g * 32 * (W / 4), lane, c);
        unsigned v[4];
        real_t r[8];
        load_vals<V>(vs, raw, blk0 + (size_t)g * 32 + lane, v, r);
        mm_group<W, V, C>(prev, m.len - g * 8, c, v, r, dict, d, x, q, acc);
    }
}

// Y entries (row, c0 + e) for e < nv: alpha*sum, or fma(alpha, sum, beta*y) (the SpMV store).
template <int C>
__device__ __forceinline__ void mm_store(real_t* __restrict__ y, unsigned row, const MmPass& q,
                                         const real_t (&acc)[C], real_t alpha, real_t beta) {
#pragma unroll
    for (int e = 0; e < C; ++e) {
        if ((unsigned)e < q.nv) {
            real_t* p = y + (size_t)row * q.y_row + (size_t)(q.c0 + e) * q.y_vec;
            *p = (beta == (real_t)0) ? alpha * acc[e] : fma(alpha, acc[e], beta * *p);
        }
    }
}

// Persistent warps over the items (slice s, pass p), item = s * npasses + p; then every block
// takes the (long row, pass) items b, b + gridDim.x, ... (cta_gather_sum's order per vector:
// 256 strided threads with fma from zero, a butterfly per warp, warp 0's butterfly over the
// warp sums).
template <int V, int C>
__device__ __forceinline__ void csr_packed_mm(unsigned nslices, unsigned nlong,
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
                                              real_t alpha, real_t beta, unsigned k,
                                              unsigned npasses, unsigned x_col, unsigned x_vec,
                                              unsigned y_row, unsigned y_vec, int xvec) {
    const unsigned warp = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const unsigned nwarps = gridDim.x * (blockDim.x >> 5);
    const int lane = threadIdx.x & 31;
    real_t d[4] = {(real_t)0, (real_t)0, (real_t)0, (real_t)0};
    if constexpr (V == 0 || V == 1 || V == 2) {
#pragma unroll
        for (int i = 0; i < (V == 2 ? 4 : (V == 1 ? 2 : 1)); ++i) d[i] = ldg(dict + i);
    }
    MmPass q;
    q.x_col = x_col; q.x_vec = x_vec; q.y_row = y_row; q.y_vec = y_vec; q.xvec = xvec;
    const unsigned items = nslices * npasses;
    for (unsigned it = warp; it < items; it += nwarps) {
        const unsigned s = it / npasses, p = it - s * npasses;
        q.c0 = p * C;
        q.nv = min((unsigned)C, k - q.c0);
        const SliceMeta m = load_meta(s, lane, lens, rows, has_rows, grp, col_off, col_w);
        if (m.len == PACKED_SKIP) continue;
        real_t acc[C];
#pragma unroll
        for (int e = 0; e < C; ++e) acc[e] = (real_t)0;
        if (m.w == 16) {
            mm_row<16, V, C>(m, lane, cols, vs, raw, dict, d, x, q, acc);
        } else if (m.w == 8) {
            mm_row<8, V, C>(m, lane, cols, vs, raw, dict, d, x, q, acc);
        } else {
            mm_row<32, V, C>(m, lane, cols, vs, raw, dict, d, x, q, acc);
        }
        mm_store<C>(y, m.row, q, acc, alpha, beta);
    }
    __shared__ real_t wsum[C][32];
    const int wl = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const unsigned litems = nlong * npasses;
    for (unsigned it = blockIdx.x; it < litems; it += gridDim.x) {
        const unsigned i = it / npasses, p = it - i * npasses;
        q.c0 = p * C;
        q.nv = min((unsigned)C, k - q.c0);
        const int start = (int)ldg(long_ptr + i), end = (int)ldg(long_ptr + i + 1);
        real_t acc[C];
#pragma unroll
        for (int e = 0; e < C; ++e) acc[e] = (real_t)0;
        for (int j = start + (int)threadIdx.x; j < end; j += (int)blockDim.x) {
            const real_t a = ldg(long_vals + j);
            real_t xv[C];
            mm_gather<C>(x, ldg(long_cols + j), q, xv);
#pragma unroll
            for (int e = 0; e < C; ++e) acc[e] = fma(a, xv[e], acc[e]);
        }
#pragma unroll
        for (int e = 0; e < C; ++e) {
            const real_t w = warp_reduce_sum(acc[e]);
            if (lane == 0) wsum[e][wl] = w;
        }
        __syncthreads();
        if (wl == 0) {
#pragma unroll
            for (int e = 0; e < C; ++e) acc[e] = warp_reduce_sum(lane < nw ? wsum[e][lane] : (real_t)0);
            if (threadIdx.x == 0) mm_store<C>(y, ldg(long_rows + i), q, acc, alpha, beta);
        }
        __syncthreads();
    }
}

#define PACKED_MM_BODY(V, C)                                                                      \
    {                                                                                             \
        csr_packed_mm<V, C>(nslices, nlong, lens, rows, has_rows, grp, col_off, col_w, cols, vs, \
                            raw, dict, long_rows, long_ptr, long_cols, long_vals, x, y, alpha,   \
                            beta, k, npasses, x_col, x_vec, y_row, y_vec, xvec);                 \
    }
// The k-vector entries' parameters: the SpMV entries' (X and Y as x and y), then the block's
// (PackedMultiArgs in gpu.rs). __launch_bounds__(256, 2): with the block size alone ptxas
// capped some entries at 32, 64 or 80 registers and spilled (scripts/sass.py); asking for two
// resident blocks leaves it up to 128 and no entry spills (f64 54-96, f32 46-86 registers).
#define PACKED_MM_PARAMS(R)                                                                       \
    PACKED_PARAMS(R), unsigned k, unsigned npasses, unsigned x_col, unsigned x_vec,              \
        unsigned y_row, unsigned y_vec, int xvec
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v0_c1(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(0, 1)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v0_c2(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(0, 2)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v0_c4(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(0, 4)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v0_c8(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(0, 8)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v1_c1(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(1, 1)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v1_c2(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(1, 2)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v1_c4(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(1, 4)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v1_c8(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(1, 8)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v2_c1(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(2, 1)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v2_c2(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(2, 2)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v2_c4(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(2, 4)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v2_c8(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(2, 8)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v4_c1(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(4, 1)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v4_c2(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(4, 2)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v4_c4(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(4, 4)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v4_c8(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(4, 8)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v8_c1(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(8, 1)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v8_c2(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(8, 2)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v8_c4(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(8, 4)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v8_c8(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(8, 8)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v16_c1(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(16, 1)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v16_c2(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(16, 2)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v16_c4(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(16, 4)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_v16_c8(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(16, 8)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_raw_c1(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(V_RAW, 1)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_raw_c2(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(V_RAW, 2)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_raw_c4(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(V_RAW, 4)
extern "C" __global__ void __launch_bounds__(256, 2) csr_packed_mm_raw_c8(PACKED_MM_PARAMS(__restrict__)) PACKED_MM_BODY(V_RAW, 8)
