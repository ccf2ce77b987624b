// spmvkit limits probe (src/gpu/probe.rs): what the device can do at best for the two things an
// SpMV does, streaming its arrays and gathering entries of x, and for what an SpMM with a
// row-major block does, gathering whole rows of X. No method uses these kernels.
// The entry points do not use real_t: the module is built once (in f32) and serves both element
// sizes. Each entry takes one argument struct by value; its Rust twin is in probe.rs
// (kernel_args!), checked against this file when NVRTC compiles it. Struct members carry no
// __restrict__, so every load names its path (__ldcs, __ldg). Each kernel writes its accumulator only when it equals a value it cannot know in advance,
// so the loads cannot be optimised away and no result traffic is added.

#define PROBE_MAGIC32 0x9e3779b9u
#define PROBE_MAGIC64 0x9e3779b97f4a7c15ull
// Independent gathers per thread and round: all issued before any of their values is used.
#define PROBE_GATHER_UNROLL 8
// 16-byte loads in flight per lane and round in the row gathers (rows per group and round: this
// over the loads one lane makes per row).
#define PROBE_ROW_INFLIGHT 4

// lowbias32 (Chris Wellons' integer hash): a bijection of 32-bit words whose low bits are well
// mixed, so `probe_hash(i) & mask` spreads consecutive i uniformly over a power-of-two table.
__device__ __forceinline__ unsigned probe_hash(unsigned x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

struct ProbeFillArgs {
    unsigned* p;
    unsigned long long n;
};

// p[i] = hash(i) for i < n (32-bit words): gives the buffer non-zero, non-repeating contents.
extern "C" __global__ void __launch_bounds__(256) spmvkit_probe_fill(const ProbeFillArgs a) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n;
         i += stride) {
        a.p[i] = probe_hash((unsigned)i ^ (unsigned)(i >> 32));
    }
}

struct ProbeReadArgs {
    const unsigned* p;
    unsigned long long n;
    unsigned* out;
};

// Streaming read of n 16-byte vectors, grid-stride, four independent loads in flight per thread
// per step; the XOR of everything read is the accumulator.
extern "C" __global__ void __launch_bounds__(256) spmvkit_probe_read(const ProbeReadArgs args) {
    const uint4* p = reinterpret_cast<const uint4*>(args.p);
    const unsigned long long n = args.n;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned acc = 0;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const uint4 a = __ldcs(p + i);
        const uint4 b = __ldcs(p + i + stride);
        const uint4 c = __ldcs(p + i + 2 * stride);
        const uint4 d = __ldcs(p + i + 3 * stride);
        acc ^= (a.x ^ a.y ^ a.z ^ a.w) ^ (b.x ^ b.y ^ b.z ^ b.w) ^ (c.x ^ c.y ^ c.z ^ c.w) ^
               (d.x ^ d.y ^ d.z ^ d.w);
    }
    for (; i < n; i += stride) {
        const uint4 a = __ldcs(p + i);
        acc ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    if (acc == PROBE_MAGIC32) args.out[0] = acc;
}

// Random gathers from a table of mask + 1 elements (a power of two): thread t does `rounds`
// rounds of PROBE_GATHER_UNROLL loads, gather number g = (round·UNROLL + u)·threads + t reading
// table[hash(g + seed) & mask] through the read-only path (as SpMV kernels read x). The index is
// computed in the kernel, so only the table is read; the loads of a round are independent.
template <typename E>
__device__ __forceinline__ void probe_gather(const E* __restrict__ table, unsigned mask,
                                             unsigned rounds, unsigned seed, E magic,
                                             unsigned* __restrict__ out) {
    const unsigned threads = gridDim.x * blockDim.x;
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    E acc = 0;
    for (unsigned r = 0; r < rounds; ++r) {
        E v[PROBE_GATHER_UNROLL];
#pragma unroll
        for (unsigned u = 0; u < PROBE_GATHER_UNROLL; ++u) {
            const unsigned g = (r * PROBE_GATHER_UNROLL + u) * threads + t;
            v[u] = __ldg(table + (probe_hash(g + seed) & mask));
        }
#pragma unroll
        for (unsigned u = 0; u < PROBE_GATHER_UNROLL; ++u) acc += v[u];
    }
    if (acc == magic) out[0] = (unsigned)acc;
}

// Both gathers' arguments: the table as 32-bit words (gather8 reads it as 64-bit elements).
struct ProbeGatherArgs {
    const unsigned* table;
    unsigned mask;
    unsigned rounds;
    unsigned seed;
    unsigned* out;
};

extern "C" __global__ void __launch_bounds__(256) spmvkit_probe_gather4(const ProbeGatherArgs a) {
    probe_gather<unsigned>(a.table, a.mask, a.rounds, a.seed, PROBE_MAGIC32, a.out);
}

extern "C" __global__ void __launch_bounds__(256) spmvkit_probe_gather8(const ProbeGatherArgs a) {
    probe_gather<unsigned long long>(reinterpret_cast<const unsigned long long*>(a.table), a.mask,
                                     a.rounds, a.seed, PROBE_MAGIC64, a.out);
}

// Random gathers of contiguous rows of ROW bytes (16 to 1024, a power of two) from a table of
// mask + 1 rows, each row aligned to its size, as an SpMM kernel gathers rows of a row-major X:
// a group of LANES = min(ROW / 16, 32) consecutive lanes of a warp loads one row with 16-byte
// loads through the read-only path, LOADS = ROW / (16 · LANES) per lane, lane l taking the
// 16-byte pieces l, l + LANES, ... (so each load instruction of the group reads LANES · 16
// contiguous bytes). Group q does `rounds` rounds of U = PROBE_ROW_INFLIGHT / LOADS rows, all
// issued before any is used: row number g = (round·U + u)·groups + q reads row
// hash(g + seed) & mask. The table is at most 1 GiB, so every 16-byte index fits 32 bits.
template <int ROW>
__device__ __forceinline__ void probe_rows(const ProbeGatherArgs& a) {
    constexpr unsigned VECS = ROW / 16;
    constexpr unsigned LANES = VECS < 32 ? VECS : 32;
    constexpr unsigned LOADS = VECS / LANES;
    constexpr unsigned U = PROBE_ROW_INFLIGHT / LOADS;
    static_assert(LANES * LOADS * 16 == ROW && U >= 1, "row size: a power of two, 16 to 1024");
    const uint4* table = reinterpret_cast<const uint4*>(a.table);
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned groups = gridDim.x * blockDim.x / LANES;
    const unsigned q = t / LANES, lane = t % LANES;
    unsigned acc = 0;
    for (unsigned r = 0; r < a.rounds; ++r) {
        uint4 v[U][LOADS];
#pragma unroll
        for (unsigned u = 0; u < U; ++u) {
            const unsigned row = probe_hash((r * U + u) * groups + q + a.seed) & a.mask;
            const uint4* p = table + row * VECS + lane;
#pragma unroll
            for (unsigned l = 0; l < LOADS; ++l) v[u][l] = __ldg(p + l * LANES);
        }
#pragma unroll
        for (unsigned u = 0; u < U; ++u) {
#pragma unroll
            for (unsigned l = 0; l < LOADS; ++l) {
                acc ^= v[u][l].x ^ v[u][l].y ^ v[u][l].z ^ v[u][l].w;
            }
        }
    }
    if (acc == PROBE_MAGIC32) a.out[0] = acc;
}

// One entry per row size, spmvkit_probe_rows<ROW>, all taking the gathers' arguments (mask + 1:
// the rows of the table).
#define PROBE_ROWS_ENTRY(ROW)                                                                    \
    extern "C" __global__ void __launch_bounds__(256, 8) spmvkit_probe_rows##ROW(                \
        const ProbeGatherArgs a) {                                                               \
        probe_rows<ROW>(a);                                                                      \
    }
PROBE_ROWS_ENTRY(16)
PROBE_ROWS_ENTRY(32)
PROBE_ROWS_ENTRY(64)
PROBE_ROWS_ENTRY(128)
PROBE_ROWS_ENTRY(256)
PROBE_ROWS_ENTRY(512)
PROBE_ROWS_ENTRY(1024)
