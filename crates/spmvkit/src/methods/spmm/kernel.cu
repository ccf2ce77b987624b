// SpMM, Y = alpha*A*X + beta*Y for X of k vectors (issue #24; docs/spmm.md): the row-split CSR
// kernels for both block orders (row-major: GE-SpMM-style tiles, long rows cut into nnz-balanced
// pieces and a deterministic fix-up), the merge-path kernels (equal shares of rows + nonzeros per
// team, both orders, carries fixed up in order), and the strided column copy of the
// single-vector fallback.
// The CPU mirror (methods/spmm/cpu.rs) reproduces the arithmetic of both kernels bit for bit.
// Block indices are 64-bit (rows * k may pass 2^32); row and nonzero indices are 32-bit as in
// every CSR kernel.

// The argument struct of the column-major entry (Rust twin: methods/spmm/gpu.rs, SpmmArgs): the
// CSR matrix and the operands, x and y being the blocks X (ncols x k) and Y (nrows x k).
struct SpmmArgs {
    CsrArgs csr;
    int ncols;
    int k;
};

// The argument struct of the row-major tile entries spmm_rm_v<V>a<A>u<U> (Rust twin: SpmmRmArgs,
// whose RmConfig picks the entry and `lanes`). One launch takes npieces + nrows work items, the
// pieces first (the long work starts first):
// - item p < npieces: the piece [piece_start[p], piece_end[p]) of a long row, its k partial sums
//   to partial[p * k + c] (added by spmm_fixup_rm);
// - item npieces + r: row r, unless it is longer than `limit` (the piece length; its pieces
//   cover it).
struct SpmmRmArgs {
    CsrArgs csr;
    int k;
    int lanes;
    int limit;
    const unsigned int* piece_start;
    const unsigned int* piece_end;
    int npieces;
    real_t* partial;
};

// V consecutive values of a row of X in one load (8 or 16 bytes when V > 1): the caller
// guarantees p is aligned to V values (k a multiple of V and X's base aligned, checked on the host).
template <int V>
__device__ __forceinline__ void spmm_ldx(const real_t* p, real_t* o);
template <>
__device__ __forceinline__ void spmm_ldx<1>(const real_t* p, real_t* o) { o[0] = ldg(p); }
#ifdef SPMVKIT_REAL_F64
template <>
__device__ __forceinline__ void spmm_ldx<2>(const real_t* p, real_t* o) {
    const double2 v = __ldg(reinterpret_cast<const double2*>(p));
    o[0] = v.x;
    o[1] = v.y;
}
template <>
__device__ __forceinline__ void spmm_ldx<4>(const real_t* p, real_t* o) {
    const double2 v = __ldg(reinterpret_cast<const double2*>(p));
    const double2 w = __ldg(reinterpret_cast<const double2*>(p) + 1);
    o[0] = v.x;
    o[1] = v.y;
    o[2] = w.x;
    o[3] = w.y;
}
#else
template <>
__device__ __forceinline__ void spmm_ldx<2>(const real_t* p, real_t* o) {
    const float2 v = __ldg(reinterpret_cast<const float2*>(p));
    o[0] = v.x;
    o[1] = v.y;
}
template <>
__device__ __forceinline__ void spmm_ldx<4>(const real_t* p, real_t* o) {
    const float4 v = __ldg(reinterpret_cast<const float4*>(p));
    o[0] = v.x;
    o[1] = v.y;
    o[2] = v.z;
    o[3] = v.w;
}
#endif

// Stores one pass's sums of a group's lane: out[c] for the vectors c the lane owns (those of
// spmm_walk: c0 + (t*lanes + lane)*V + e, `ov_step` apart in `out`). With `store`,
// out[c] = alpha*sum (+ beta*out[c] fused when beta != 0); without, out[c] = sum.
template <int V, int A>
__device__ __forceinline__ void spmm_put(const CsrArgs& a, const real_t (&acc)[A][V],
                                         const bool (&live)[A], unsigned long long c0,
                                         unsigned lane, unsigned lanes, real_t* out,
                                         unsigned long long ov_step, bool store) {
#pragma unroll
    for (int t = 0; t < A; ++t) {
        if (!live[t]) continue;
        real_t* o = out + (c0 + ((unsigned long long)t * lanes + lane) * V) * ov_step;
#pragma unroll
        for (int e = 0; e < V; ++e) {
            if (store) {
                const real_t s = a.alpha * acc[t][e];
                o[e] = (a.beta == (real_t)0) ? s : fma(a.beta, o[e], s);
            } else {
                o[e] = acc[t][e];
            }
        }
    }
}

// The walk's sink for one segment of one row (the row-split tile): nothing happens inside the
// segment, and its sums go to `out` at the end (stored, or unscaled partial sums).
struct SpmmOneRow {
    real_t* out;
    unsigned long long ov_step;
    bool store;
    __device__ __forceinline__ void begin(unsigned, unsigned) {}
    template <int V, int A>
    __device__ __forceinline__ void at(const CsrArgs&, unsigned, real_t (&)[A][V], const bool (&)[A],
                                       unsigned long long, unsigned, unsigned) {}
    template <int V, int A>
    __device__ __forceinline__ void end(const CsrArgs& a, real_t (&acc)[A][V], const bool (&live)[A],
                                        unsigned long long c0, unsigned lane, unsigned lanes) {
        spmm_put<V, A>(a, acc, live, c0, lane, lanes, out, ov_step, store);
    }
};

// The walk's sink for a merge-path team: its share runs from nonzero s0 (inside row r0) to z1,
// and it closes rows r0 .. r1 - 1. Before nonzero j, every row ending at or before j is closed:
// its sums stored to Y (row r at y + r*row_step, vectors ov_step apart) and the sums restarted
// from zero; at the end the rows still unclosed (empty ones) are stored, and what was summed past
// the last closed row, the carry, goes unscaled to `carry`. The row ends come `lanes` at a time,
// one coalesced load per lane (ends of rows at or past r1 read as "never").
struct SpmmTeamRows {
    const off_t* row_ptr;
    unsigned r0, r1, s0, z1;
    real_t* y;
    unsigned long long row_step, ov_step;
    real_t* carry;
    unsigned mask;
    // the row being summed, the first row of the window of ends, this lane's end in it, the
    // row's end, and where the row's sums started
    unsigned r, rb, endw, e, from;
    __device__ __forceinline__ unsigned end_of(unsigned row) const {
        return row < r1 ? (unsigned)ldg(row_ptr + row + 1) : 0xffffffffu;
    }
    __device__ __forceinline__ void begin(unsigned lane, unsigned lanes) {
        r = r0;
        rb = r0;
        endw = end_of(r0 + lane);
        e = __shfl_sync(mask, endw, 0, (int)lanes);
        from = s0;
    }
    template <int V, int A>
    __device__ __forceinline__ void close(const CsrArgs& a, real_t (&acc)[A][V], const bool (&live)[A],
                                          unsigned long long c0, unsigned lane, unsigned lanes) {
        spmm_put<V, A>(a, acc, live, c0, lane, lanes, y + (unsigned long long)r * row_step, ov_step,
                       true);
#pragma unroll
        for (int t = 0; t < A; ++t) {
#pragma unroll
            for (int v = 0; v < V; ++v) acc[t][v] = (real_t)0;
        }
        from = e;
        ++r;
        if (r - rb == lanes) {
            rb = r;
            endw = end_of(rb + lane);
        }
        e = __shfl_sync(mask, endw, (int)(r - rb), (int)lanes);
    }
    template <int V, int A>
    __device__ __forceinline__ void at(const CsrArgs& a, unsigned j, real_t (&acc)[A][V],
                                       const bool (&live)[A], unsigned long long c0, unsigned lane,
                                       unsigned lanes) {
        while (j >= e) close<V, A>(a, acc, live, c0, lane, lanes);
    }
    template <int V, int A>
    __device__ __forceinline__ void end(const CsrArgs& a, real_t (&acc)[A][V], const bool (&live)[A],
                                        unsigned long long c0, unsigned lane, unsigned lanes) {
        while (r < r1) close<V, A>(a, acc, live, c0, lane, lanes);
        if (from < z1) spmm_put<V, A>(a, acc, live, c0, lane, lanes, carry, 1ull, false);
    }
};

// The row-major walk (GE-SpMM's coalesced row caching and coarse-grained warp merging, Huang et
// al. SC'20): a group of `lanes` lanes (a power of two, at most 32; `mask` its lanes in the
// warp, `lane` the rank in it) streams nonzeros [start, end) for the vectors it owns. Lane `lane`
// owns, per pass of lanes*V*A vectors from c0, the A runs of V consecutive vectors
// c0 + (t*lanes + lane)*V .. + V (t < A): each of its A loads of an X row is V values wide, and
// the group's loads of one t cover lanes*V contiguous values (coalesced).
// Per chunk of `lanes` nonzeros the group loads the (column, value) pairs coalesced, one per
// lane and one chunk ahead, then broadcasts them by shuffles, U at a time: the U rows of X are
// loaded before their fmas, so U*A loads per lane are in flight, whatever rows the nonzeros
// belong to. The sink `w` sees each nonzero before its fma (w.at: the merge path's teams close
// the rows that end there) and the sums at the end (w.end). Each (row, vector) stays one chain of
// fmas from zero in CSR order (the CPU mirror's order, methods/spmm/cpu.rs).
// CM (the merge path's column-major teams, V = 1): X column-major (vector c of X's row j at
// x[c*ldx + j]); the same walk and the same bits.
template <int V, int A, int U, bool CM = false, class Sink>
__device__ __forceinline__ void spmm_walk(const CsrArgs& a, unsigned long long k, unsigned start,
                                          unsigned end, unsigned lane, unsigned lanes,
                                          unsigned mask, Sink& w, unsigned long long ldx = 0) {
    static_assert(!CM || V == 1, "column-major X takes one value per load");
    // X: the stride between vectors and between rows of X
    const unsigned long long xv_step = CM ? ldx : 1ull, xr_step = CM ? 1ull : k;
    const unsigned long long pass = (unsigned long long)lanes * V * A;
    for (unsigned long long c0 = 0; c0 < k; c0 += pass) {
        real_t acc[A][V];
        bool live[A];
#pragma unroll
        for (int t = 0; t < A; ++t) {
            // k is a multiple of V when V > 1, so a run that starts below k ends inside it
            live[t] = c0 + ((unsigned long long)t * lanes + lane) * V < k;
#pragma unroll
            for (int e = 0; e < V; ++e) acc[t][e] = (real_t)0;
        }
        w.begin(lane, lanes);
        const real_t* xc = a.x + (c0 + (unsigned long long)lane * V) * xv_step;
        // the chunk's pairs, loaded one chunk ahead (the next chunk's loads overlap this one's
        // gathers)
        unsigned col_next = 0u;
        real_t val_next = (real_t)0;
        if (start + lane < end) {
            col_next = (unsigned)ldg(a.col_idx + start + lane);
            val_next = ldg(a.vals + start + lane);
        }
        for (unsigned base = start; base < end; base += lanes) {
            const unsigned col = col_next;
            const real_t val = val_next;
            const unsigned jn = base + lanes + lane;
            if (jn < end) {
                col_next = (unsigned)ldg(a.col_idx + jn);
                val_next = ldg(a.vals + jn);
            }
            const unsigned n = min(lanes, end - base);
            for (unsigned i = 0; i < n; i += U) {
                real_t xv[U][A][V];
                real_t vv[U];
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    const unsigned cu = __shfl_sync(mask, col, (int)(i + u), (int)lanes);
                    vv[u] = __shfl_sync(mask, val, (int)(i + u), (int)lanes);
                    const real_t* xrow = xc + (unsigned long long)cu * xr_step;
#pragma unroll
                    for (int t = 0; t < A; ++t) {
                        if (i + u < n && live[t]) {
                            spmm_ldx<V>(xrow + (unsigned long long)t * lanes * V * xv_step, xv[u][t]);
                        }
                    }
                }
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    if (i + u < n) {
                        w.template at<V, A>(a, base + i + u, acc, live, c0, lane, lanes);
#pragma unroll
                        for (int t = 0; t < A; ++t) {
                            if (live[t]) {
#pragma unroll
                                for (int e = 0; e < V; ++e) acc[t][e] = fma(vv[u], xv[u][t][e], acc[t][e]);
                            }
                        }
                    }
                }
            }
        }
        w.template end<V, A>(a, acc, live, c0, lane, lanes);
    }
}

// One row segment [start, end) through the walk: out[c] = alpha*sum (+ beta*out[c]) with
// `store`, the unscaled sums without.
template <int V, int A, int U>
__device__ __forceinline__ void spmm_rm_tile(const CsrArgs& a, unsigned long long k, unsigned start,
                                             unsigned end, unsigned lane, unsigned lanes,
                                             unsigned mask, real_t* out, bool store) {
    SpmmOneRow w{out, 1ull, store};
    spmm_walk<V, A, U>(a, k, start, end, lane, lanes, mask, w);
}

// Row-major X and Y (a row's k values contiguous): groups of `lanes` lanes grid-stride over the
// long rows' pieces, then the rows, each through spmm_rm_tile.
template <int V, int A, int U>
__device__ __forceinline__ void spmm_rm(const SpmmRmArgs& a) {
    const unsigned lanes = (unsigned)a.lanes;
    const unsigned lane = threadIdx.x & (lanes - 1u);
    const unsigned mask =
        lanes == 32u ? FULL_MASK : ((1u << lanes) - 1u) << ((threadIdx.x & 31u) & ~(lanes - 1u));
    const unsigned long long k = (unsigned long long)a.k;
    const unsigned long long groups = (unsigned long long)gridDim.x * (blockDim.x / lanes);
    const unsigned long long first = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / lanes;
    const unsigned long long npieces = (unsigned long long)a.npieces;
    const unsigned long long items = npieces + (unsigned long long)a.csr.nrows;
    for (unsigned long long it = first; it < items; it += groups) {
        if (it < npieces) {
            spmm_rm_tile<V, A, U>(a.csr, k, ldg(a.piece_start + it), ldg(a.piece_end + it), lane, lanes,
                                  mask, a.partial + it * k, false);
            continue;
        }
        const unsigned long long row = it - npieces;
        const unsigned start = (unsigned)ldg(a.csr.row_ptr + row);
        const unsigned end = (unsigned)ldg(a.csr.row_ptr + row + 1);
        if (end - start > (unsigned)a.limit) continue;
        spmm_rm_tile<V, A, U>(a.csr, k, start, end, lane, lanes, mask, a.csr.y + row * k, true);
    }
}

// The entries, one per (V, A, U) the host may pick (gpu.rs, RmConfig): V values per X load, A
// loads per lane per nonzero (V*A <= 8 vectors per lane and pass), U nonzeros per unrolled step
// (U*A <= 8 loads in flight per lane, U >= 2).
#define SPMM_RM_ENTRY(V, A, U) \
    extern "C" __global__ void spmm_rm_v##V##a##A##u##U(const SpmmRmArgs a) { spmm_rm<V, A, U>(a); }
SPMM_RM_ENTRY(1, 1, 2)
SPMM_RM_ENTRY(1, 1, 4)
SPMM_RM_ENTRY(1, 1, 8)
SPMM_RM_ENTRY(1, 2, 2)
SPMM_RM_ENTRY(1, 2, 4)
SPMM_RM_ENTRY(1, 4, 2)
SPMM_RM_ENTRY(1, 8, 2)
SPMM_RM_ENTRY(2, 1, 2)
SPMM_RM_ENTRY(2, 1, 4)
SPMM_RM_ENTRY(2, 1, 8)
SPMM_RM_ENTRY(2, 2, 2)
SPMM_RM_ENTRY(2, 2, 4)
SPMM_RM_ENTRY(2, 4, 2)
SPMM_RM_ENTRY(4, 1, 2)
SPMM_RM_ENTRY(4, 1, 4)
SPMM_RM_ENTRY(4, 1, 8)
SPMM_RM_ENTRY(4, 2, 2)
SPMM_RM_ENTRY(4, 2, 4)

// The merge-path SpMM (methods/spmm/merge.rs; Merrill & Garland's merge path, SC'16, with lanes
// over the k vectors): team t (a group of `lanes` lanes) takes the share of the path from
// (team_row[t], team_nz[t]) to (team_row[t + 1], team_nz[t + 1]) (Rust twin: SpmmMergeArgs). It
// sums each row it closes from where its share starts (spmm_rm_tile, stored: y = alpha*sum
// (+ beta*y)), and the part of the row still open at its end, its carry, to carry[t * k + c]
// unscaled; spmm_merge_fixup then adds each spanning row's carries in team order and
// alpha times that to y. No atomics: deterministic.
struct SpmmMergeArgs {
    CsrArgs csr;
    int k;
    int lanes;
    int ncols;
    const unsigned int* team_row;
    const unsigned int* team_nz;
    int nteams;
    real_t* carry;
};

// CM: column-major X and Y (ncols and nrows the leading dimensions), V = 1.
template <int V, int A, int U, bool CM>
__device__ __forceinline__ void spmm_merge(const SpmmMergeArgs& a) {
    const unsigned lanes = (unsigned)a.lanes;
    const unsigned lane = threadIdx.x & (lanes - 1u);
    const unsigned mask =
        lanes == 32u ? FULL_MASK : ((1u << lanes) - 1u) << ((threadIdx.x & 31u) & ~(lanes - 1u));
    const unsigned long long k = (unsigned long long)a.k;
    const unsigned long long ldx = (unsigned long long)a.ncols;
    const unsigned long long ldy = (unsigned long long)a.csr.nrows;
    const unsigned long long groups = (unsigned long long)gridDim.x * (blockDim.x / lanes);
    const unsigned long long first = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / lanes;
    for (unsigned long long t = first; t < (unsigned long long)a.nteams; t += groups) {
        SpmmTeamRows w;
        w.row_ptr = a.csr.row_ptr;
        w.r0 = ldg(a.team_row + t);
        w.r1 = ldg(a.team_row + t + 1);
        w.s0 = ldg(a.team_nz + t);
        w.z1 = ldg(a.team_nz + t + 1);
        w.y = a.csr.y;
        w.row_step = CM ? 1ull : k;
        w.ov_step = CM ? ldy : 1ull;
        w.carry = a.carry + t * k;
        w.mask = mask;
        spmm_walk<V, A, U, CM>(a.csr, k, w.s0, w.z1, lane, lanes, mask, w, ldx);
    }
}

// The entries, one per row-major tile (the (V, A, U) of spmm_rm_v*) and one per column-major
// tile (V = 1).
#define SPMM_MERGE_RM_ENTRY(V, A, U)                                                 \
    extern "C" __global__ void spmm_merge_rm_v##V##a##A##u##U(const SpmmMergeArgs a) { \
        spmm_merge<V, A, U, false>(a);                                               \
    }
#define SPMM_MERGE_CM_ENTRY(A, U)                                                 \
    extern "C" __global__ void spmm_merge_cm_v1a##A##u##U(const SpmmMergeArgs a) { \
        spmm_merge<1, A, U, true>(a);                                             \
    }
SPMM_MERGE_RM_ENTRY(1, 1, 2)
SPMM_MERGE_RM_ENTRY(1, 1, 4)
SPMM_MERGE_RM_ENTRY(1, 1, 8)
SPMM_MERGE_RM_ENTRY(1, 2, 2)
SPMM_MERGE_RM_ENTRY(1, 2, 4)
SPMM_MERGE_RM_ENTRY(1, 4, 2)
SPMM_MERGE_RM_ENTRY(1, 8, 2)
SPMM_MERGE_RM_ENTRY(2, 1, 2)
SPMM_MERGE_RM_ENTRY(2, 1, 4)
SPMM_MERGE_RM_ENTRY(2, 1, 8)
SPMM_MERGE_RM_ENTRY(2, 2, 2)
SPMM_MERGE_RM_ENTRY(2, 2, 4)
SPMM_MERGE_RM_ENTRY(2, 4, 2)
SPMM_MERGE_RM_ENTRY(4, 1, 2)
SPMM_MERGE_RM_ENTRY(4, 1, 4)
SPMM_MERGE_RM_ENTRY(4, 1, 8)
SPMM_MERGE_RM_ENTRY(4, 2, 2)
SPMM_MERGE_RM_ENTRY(4, 2, 4)
SPMM_MERGE_CM_ENTRY(1, 2)
SPMM_MERGE_CM_ENTRY(1, 4)
SPMM_MERGE_CM_ENTRY(1, 8)
SPMM_MERGE_CM_ENTRY(2, 2)
SPMM_MERGE_CM_ENTRY(2, 4)
SPMM_MERGE_CM_ENTRY(4, 2)
SPMM_MERGE_CM_ENTRY(8, 2)

// s + p[0] + p[step] + ... + p[(n - 1)*step], added left to right (the fix-ups' fixed order, as
// the CPU mirror adds), the loads SPMM_FIXUP_BATCH (32) at a time ahead of their adds: a row that
// spans thousands of teams or pieces (a dense row) is one group's chain, and one load in flight
// at a time made that chain a memory latency per carry. The fix-ups are declared
// __launch_bounds__(256, 1) (gpu.rs launches them with THREADS = 256): without it ptxas held
// them to 32 registers and issued each load next to its add, two loads in flight (now 94–96
// registers in f64, 72–80 in f32, no spills).
#define SPMM_FIXUP_BATCH 32
__device__ __forceinline__ real_t spmm_sum_in_order(real_t s, const real_t* p, unsigned long long step,
                                                    unsigned n) {
    unsigned i = 0;
    for (; i + SPMM_FIXUP_BATCH <= n; i += SPMM_FIXUP_BATCH) {
        real_t v[SPMM_FIXUP_BATCH];
#pragma unroll
        for (int b = 0; b < SPMM_FIXUP_BATCH; ++b) v[b] = ldg(p + (unsigned long long)(i + b) * step);
#pragma unroll
        for (int b = 0; b < SPMM_FIXUP_BATCH; ++b) s = s + v[b];
    }
    for (; i < n; ++i) s = s + ldg(p + (unsigned long long)i * step);
    return s;
}

// The merge path's fix-up (Rust twin: SpmmMergeFixupArgs): a group of `lanes` lanes per
// spanning row (run i: the row run_row[i], carried by teams run_first[i] .. run_end[i]), lanes
// over the k vectors: s = carry of the first team, s = s + carry of each next one in team order,
// then y = alpha*s + y (fused; the closing team stored its own part, beta applied, before).
struct SpmmMergeFixupArgs {
    CsrArgs csr;
    int k;
    int lanes;
    int col_major;
    const unsigned int* run_row;
    const unsigned int* run_first;
    const unsigned int* run_end;
    int nruns;
    const real_t* carry;
};

extern "C" __global__ void __launch_bounds__(256, 1) spmm_merge_fixup(const SpmmMergeFixupArgs a) {
    const unsigned lanes = (unsigned)a.lanes;
    const unsigned lane = threadIdx.x & (lanes - 1u);
    const unsigned long long k = (unsigned long long)a.k;
    const unsigned long long groups = (unsigned long long)gridDim.x * (blockDim.x / lanes);
    for (unsigned long long i = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / lanes;
         i < (unsigned long long)a.nruns; i += groups) {
        const unsigned long long row = ldg(a.run_row + i);
        const unsigned first = ldg(a.run_first + i), end = ldg(a.run_end + i);
        for (unsigned long long c = lane; c < k; c += lanes) {
            const real_t* run = a.carry + (unsigned long long)first * k + c;
            const real_t s = spmm_sum_in_order(ldg(run), run + k, k, end > first ? end - first - 1 : 0u);
            real_t* y = a.col_major ? a.csr.y + c * (unsigned long long)a.csr.nrows + row
                                    : a.csr.y + row * k + c;
            *y = fma(a.csr.alpha, s, *y);
        }
    }
}

// The fix-up of the long rows: a group per long row adds its pieces' partials in piece order
// (t = 0; t = t + partial, a fixed order: deterministic) and stores y = alpha*t (+ beta*y fused)
// (Rust twin: SpmmFixupArgs). long_first has nlong + 1 entries: row i's pieces are
// long_first[i] .. long_first[i + 1].
struct SpmmFixupArgs {
    CsrArgs csr;
    int k;
    int lanes;
    const unsigned int* long_row;
    const unsigned int* long_first;
    int nlong;
    const real_t* partial;
};

extern "C" __global__ void __launch_bounds__(256, 1) spmm_fixup_rm(const SpmmFixupArgs a) {
    const unsigned lanes = (unsigned)a.lanes;
    const unsigned lane = threadIdx.x & (lanes - 1u);
    const unsigned long long k = (unsigned long long)a.k;
    const unsigned long long groups = (unsigned long long)gridDim.x * (blockDim.x / lanes);
    for (unsigned long long i = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / lanes;
         i < (unsigned long long)a.nlong; i += groups) {
        const unsigned long long row = ldg(a.long_row + i);
        const unsigned first = ldg(a.long_first + i), last = ldg(a.long_first + i + 1);
        real_t* y = a.csr.y + row * k;
        for (unsigned long long c = lane; c < k; c += lanes) {
            const real_t t =
                spmm_sum_in_order((real_t)0, a.partial + (unsigned long long)first * k + c, k, last - first);
            const real_t s = a.csr.alpha * t;
            y[c] = (a.csr.beta == (real_t)0) ? s : fma(a.csr.beta, y[c], s);
        }
    }
}

// Column-major X and Y (each vector contiguous). A warp per row, the vectors SPMM_CM_VECS at a
// time: for each group of vectors the 32 lanes stride over the row's nonzeros from the row start
// aligned down to 32 (as csr-vector), each lane loading a nonzero's column and value once for the
// group and issuing the group's independent x gathers together, and warp_reduce_sum adds each
// vector's partials: each vector's result is bitwise csr-vector's SpMV. The row's indices and
// values come from DRAM once and from L1/L2 for the later groups; the x gathers are the k SpMVs'
// own (column-major X has no contiguous rows to read), which is why row-major is the faster order.
#define SPMM_CM_VECS 8
extern "C" __global__ void spmm_rows_cm(const SpmmArgs a) {
    const unsigned lane = threadIdx.x & 31u;
    const unsigned warps_per_block = blockDim.x >> 5;
    const unsigned stride = gridDim.x * warps_per_block;
    const unsigned long long ncols = (unsigned long long)a.ncols;
    const unsigned long long nrows = (unsigned long long)a.csr.nrows;
    for (unsigned row = blockIdx.x * warps_per_block + (threadIdx.x >> 5); row < (unsigned)a.csr.nrows;
         row += stride) {
        const unsigned start = (unsigned)ldg(a.csr.row_ptr + row);
        const unsigned end = (unsigned)ldg(a.csr.row_ptr + row + 1);
        for (int c0 = 0; c0 < a.k; c0 += SPMM_CM_VECS) {
            real_t sum[SPMM_CM_VECS];
#pragma unroll
            for (int t = 0; t < SPMM_CM_VECS; ++t) sum[t] = (real_t)0;
            for (unsigned j = (start & ~31u) + lane; j < end; j += 32u) {
                if (j < start) continue;
                const real_t v = ldg(a.csr.vals + j);
                const unsigned long long col = (unsigned long long)(unsigned)ldg(a.csr.col_idx + j);
                real_t xv[SPMM_CM_VECS];
#pragma unroll
                for (int t = 0; t < SPMM_CM_VECS; ++t) {
                    if (c0 + t < a.k) xv[t] = ldg(a.csr.x + (unsigned long long)(c0 + t) * ncols + col);
                }
#pragma unroll
                for (int t = 0; t < SPMM_CM_VECS; ++t) {
                    if (c0 + t < a.k) sum[t] = fma(v, xv[t], sum[t]);
                }
            }
#pragma unroll
            for (int t = 0; t < SPMM_CM_VECS; ++t) {
                if (c0 + t >= a.k) break;
                const real_t s = warp_reduce_sum(sum[t]);
                if (lane == 0) {
                    real_t* y = a.csr.y + (unsigned long long)(c0 + t) * nrows + row;
                    const real_t r = a.csr.alpha * s;
                    *y = (a.csr.beta == (real_t)0) ? r : fma(a.csr.beta, *y, r);
                }
            }
        }
    }
}

// dst[dst_off + i*dst_stride] = src[src_off + i*src_stride] for i < n: one column of a block in
// or out of a plain vector (the single-vector fallback of methods without an SpMM kernel).
struct StridedCopyArgs {
    real_t* dst;
    const real_t* src;
    unsigned long long dst_off;
    unsigned long long dst_stride;
    unsigned long long src_off;
    unsigned long long src_stride;
    int n;
};

extern "C" __global__ void spmm_copy_strided(const StridedCopyArgs a) {
    const unsigned stride = gridDim.x * blockDim.x;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)a.n; i += stride) {
        a.dst[a.dst_off + (unsigned long long)i * a.dst_stride] =
            ldg(a.src + a.src_off + (unsigned long long)i * a.src_stride);
    }
}
