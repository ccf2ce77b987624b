// spmvkit runtime helpers (no method): kernels the GPU runtime itself launches.

// y[i] = beta * y[i] for i < n; with beta == 0, y is overwritten with zeros without being read.
extern "C" __global__ void spmvkit_scale(real_t* __restrict__ y, int n, real_t beta) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        y[i] = (beta == (real_t)0) ? (real_t)0 : beta * y[i];
    }
}
