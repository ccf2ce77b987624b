// teb: TEB (teb.md §3.2, Alg. 3) — one CTA per block of merged rows, one thread per row.
// Block b holds merged rows blo_idx[b] .. blo_idx[b+1]; thread t takes rows t, t + blockDim.x, …
// (Alg. 3 has one pass, `if (threadID < mid)`; the loop covers blocks with more rows than the
// CTA has threads). A row is summed in order with fma from 0 and written at its original row:
// y = alpha*sum (+ beta*y fused), y never read when beta == 0. No atomics: deterministic.

extern "C" __global__ void teb_spmv(const int* __restrict__ blo_idx,
                                    const int* __restrict__ row_nnz_sum,
                                    const int* __restrict__ row_ids,
                                    const int* __restrict__ col_idx,
                                    const real_t* __restrict__ values,
                                    const real_t* __restrict__ x, real_t* __restrict__ y,
                                    real_t alpha, real_t beta) {
    const int first = ldg(blo_idx + blockIdx.x);
    const int last = ldg(blo_idx + blockIdx.x + 1);
    for (int r = first + (int)threadIdx.x; r < last; r += (int)blockDim.x) {
        const int start = ldg(row_nnz_sum + r);
        const int end = ldg(row_nnz_sum + r + 1);
        real_t sum = (real_t)0;
        for (int j = start; j < end; ++j) sum = fma(ldg(values + j), ldg(x + ldg(col_idx + j)), sum);
        const int row = ldg(row_ids + r);
        const real_t t = alpha * sum;
        y[row] = (beta == (real_t)0) ? t : fma(beta, y[row], t);
    }
}
