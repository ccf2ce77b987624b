// spmvkit runtime helpers (no method): kernels the GPU runtime itself launches.
// Grid-stride indices are unsigned: with n <= 2^31-1 and at most ceil(n / blockDim.x) blocks
// (the launches use fewer), the stride is at most 2^31 and i + stride < 2^32, where a signed int
// i would overflow once n is within one stride of 2^31-1.

// y[i] = beta * y[i] for i < n; with beta == 0, y is overwritten with zeros without being read.
extern "C" __global__ void spmvkit_scale(real_t* __restrict__ y, int n, real_t beta) {
    const unsigned stride = gridDim.x * blockDim.x;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)n; i += stride) {
        y[i] = (beta == (real_t)0) ? (real_t)0 : beta * y[i];
    }
}

// out[i] = x[idx[i]] for i < n: packs scattered entries into a contiguous buffer (the send side
// of the multi-GPU halo exchange, src/dist/nccl.rs).
extern "C" __global__ void spmvkit_gather(real_t* __restrict__ out, const real_t* __restrict__ x,
                                          const unsigned int* __restrict__ idx, int n) {
    const unsigned stride = gridDim.x * blockDim.x;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)n; i += stride) {
        out[i] = x[idx[i]];
    }
}
