// tilespmv: TileSpMV (Niu et al., IPDPS'21). See mod.rs for the layout.
//
// tilespmv_spmv: warps [0, nunits) do one work unit each (<= unit_tiles tiles of one tile row):
// half-warp h takes tiles h, h+2, ...; lane r of a half accumulates local row r; the halves are
// added and lanes 0..15 atomically add alpha*sum to y. The remaining threads do the deferred COO
// entries (one per thread, atomics). y was scaled by beta before (spmvkit_scale).
// Formats: 0 dense, 1 COO, 2 CSR, 3 ELL, 4 dense-row, 5 dense-col. No shuffles inside a format;
// columns past the end of x are never read.

#define TS_TILE 16

__device__ __forceinline__ real_t ts_x(const real_t* __restrict__ x, int col0, int c, int ncols) {
    const int j = col0 + c;
    return j < ncols ? ldg(x + j) : (real_t)0;
}

__device__ __forceinline__ int ts_nibble(const unsigned char* __restrict__ p, int i) {
    const unsigned char b = p[i >> 1];
    return (i & 1) ? (b & 0x0f) : (b >> 4);
}

// Row r of one tile: the tile's contribution to local row r.
__device__ __forceinline__ real_t ts_tile_row(int r, unsigned info, int col0, const real_t* __restrict__ v,
                                              const unsigned char* __restrict__ ix, const real_t* __restrict__ x,
                                              int ncols) {
    const int fmt = info & 0xff, aux = (info >> 8) & 0xff, nnz = info >> 16;
    real_t s = 0;
    switch (fmt) {
    case 0:  // dense, row-major
        for (int c = 0; c < TS_TILE; ++c) s = fma(v[r * TS_TILE + c], ts_x(x, col0, c, ncols), s);
        break;
    case 1:  // COO: (row << 4 | col) bytes
        for (int i = 0; i < nnz; ++i) {
            const int b = ix[i];
            if ((b >> 4) == r) s = fma(v[i], ts_x(x, col0, b & 0x0f, ncols), s);
        }
        break;
    case 2: {  // CSR: 16 row-start bytes, then packed column nibbles
        const int e = (r + 1 < TS_TILE) ? ix[r + 1] : nnz;
        for (int i = ix[r]; i < e; ++i) s = fma(v[i], ts_x(x, col0, ts_nibble(ix + TS_TILE, i), ncols), s);
        break;
    }
    case 3:  // ELL: width aux, k-major, packed column nibbles
        for (int k = 0; k < aux; ++k) {
            const int i = k * TS_TILE + r;
            s = fma(v[i], ts_x(x, col0, ts_nibble(ix, i), ncols), s);
        }
        break;
    case 4:  // dense rows: aux row ids, 16 values each
        for (int j = 0; j < aux; ++j) {
            if (ix[j] == r) {
                for (int c = 0; c < TS_TILE; ++c) s = fma(v[j * TS_TILE + c], ts_x(x, col0, c, ncols), s);
            }
        }
        break;
    default:  // 5, dense columns: aux column ids, 16 values each (column-major)
        for (int j = 0; j < aux; ++j) s = fma(v[j * TS_TILE + r], ts_x(x, col0, ix[j], ncols), s);
        break;
    }
    return s;
}

// Parameters: the fields of TileArgs (gpu.rs) in order, checked at compile time; a parameter
// list, not the struct by value, because the compiled code depends on __restrict__ parameters,
// which struct members do not carry (gpu/launch.rs, Abi::Params).
extern "C" __global__ void tilespmv_spmv(
    int nrows, int ncols, int nunits, const int* __restrict__ unit_row, const int* __restrict__ unit_first,
    const int* __restrict__ unit_count, const int* __restrict__ tile_col, const unsigned* __restrict__ tile_info,
    const int* __restrict__ tile_val, const int* __restrict__ tile_idx, const real_t* __restrict__ vals,
    const unsigned char* __restrict__ idx, int ndef, const int* __restrict__ def_row,
    const int* __restrict__ def_col, const real_t* __restrict__ def_val, const real_t* __restrict__ x,
    real_t* __restrict__ y, real_t alpha) {
    const int lane = threadIdx.x & 31;
    const long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (w < nunits) {
        const int u = (int)w;
        const int t0 = unit_first[u], n = unit_count[u];
        const int half = lane >> 4, r = lane & 15;
        real_t acc = 0;
        for (int i = half; i < n; i += 2) {
            const int t = t0 + i;
            acc += ts_tile_row(r, tile_info[t], tile_col[t] * TS_TILE, vals + tile_val[t], idx + tile_idx[t], x, ncols);
        }
        acc += __shfl_down_sync(FULL_MASK, acc, 16);
        const int row = unit_row[u] * TS_TILE + r;
        if (lane < 16 && row < nrows) atomic_add_real(y + row, alpha * acc);
        return;
    }
    const long long first = (long long)nunits * 32;
    const long long stride = (long long)gridDim.x * blockDim.x - first;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x - first; i < ndef; i += stride) {
        atomic_add_real(y + def_row[i], alpha * def_val[i] * ldg(x + def_col[i]));
    }
}
