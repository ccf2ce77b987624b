// spmvkit runtime helper (no method): checks a CSR structure that lives on the device before any
// kernel indexes with it (Plan::from_device_csr, issue #23). One thread per row, grid-stride;
// a row's entries are read only once its bounds are known to lie inside col_idx.
// The Rust twin of the argument struct is in gpu/csr_check.rs (kernel_args!).

struct CsrCheckArgs {
    const unsigned int* row_ptr;
    const unsigned int* col_idx;
    unsigned long long* out;
    int nrows;
    unsigned ncols;
    unsigned nnz;
};

// out[0]: the smallest (row << 3 | problem) over every bad row (initialised to all ones):
//   0 row_ptr[0] != 0, 1 row_ptr decreases after this row, 2 the row ends past nnz,
//   3 a column index >= ncols, 4 columns not strictly increasing, 5 row_ptr[nrows] != nnz;
// out[1]: the longest row's length; out[2]: the number of empty rows.
extern "C" __global__ void spmvkit_csr_check(const CsrCheckArgs a) {
    const unsigned stride = gridDim.x * blockDim.x;
    const unsigned first = blockIdx.x * blockDim.x + threadIdx.x;
    if (a.nrows == 0) {
        if (first == 0) {
            if (ldg(a.row_ptr) != 0u) atomicMin(a.out, 0ull);
            else if (a.nnz != 0u) atomicMin(a.out, 5ull);
        }
        return;
    }
    for (unsigned row = first; row < (unsigned)a.nrows; row += stride) {
        const unsigned start = ldg(a.row_ptr + row);
        const unsigned end = ldg(a.row_ptr + row + 1);
        const unsigned long long key = (unsigned long long)row << 3;
        if (row == 0 && start != 0u) {
            atomicMin(a.out, key | 0ull);
            continue;
        }
        if (end < start) {
            atomicMin(a.out, key | 1ull);
            continue;
        }
        if (end > a.nnz) {
            atomicMin(a.out, key | 2ull);
            continue;
        }
        if (row + 1 == (unsigned)a.nrows && end != a.nnz) atomicMin(a.out, key | 5ull);
        unsigned prev = 0u;
        for (unsigned k = start; k < end; ++k) {
            const unsigned c = ldg(a.col_idx + k);
            if (c >= a.ncols) {
                atomicMin(a.out, key | 3ull);
                break;
            }
            if (k > start && c <= prev) {
                atomicMin(a.out, key | 4ull);
                break;
            }
            prev = c;
        }
        const unsigned len = end - start;
        atomicMax(a.out + 1, (unsigned long long)len);
        if (len == 0u) atomicAdd(a.out + 2, 1ull);
    }
}
