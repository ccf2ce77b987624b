// spmvkit runtime helpers (no method): kernels the GPU runtime itself launches.

// y[i] = beta * y[i] for i < n; with beta == 0, y is overwritten with zeros without being read.
extern "C" __global__ void spmvkit_scale(real_t* __restrict__ y, int n, real_t beta) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        y[i] = (beta == (real_t)0) ? (real_t)0 : beta * y[i];
    }
}

// out[i] = x[idx[i]] for i < n: packs scattered entries into a contiguous buffer (the send side
// of the multi-GPU halo exchange, src/dist/nccl.rs).
extern "C" __global__ void spmvkit_gather(real_t* __restrict__ out, const real_t* __restrict__ x,
                                          const unsigned int* __restrict__ idx, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        out[i] = x[idx[i]];
    }
}
