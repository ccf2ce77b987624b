// spmvkit runtime helpers (no method): kernels the GPU runtime itself launches.
// Grid-stride indices are unsigned: with n <= 2^31-1 and at most ceil(n / blockDim.x) blocks
// (the launches use fewer), the stride is at most 2^31 and i + stride < 2^32, where a signed int
// i would overflow once n is within one stride of 2^31-1.
// Each entry takes one argument struct by value; its Rust twin is in gpu/mod.rs (kernel_args!),
// and the launch layer checks the two layouts when NVRTC compiles this file.

struct ScaleArgs {
    real_t* y;
    int n;
    real_t beta;
};

// y[i] = beta * y[i] for i < n; with beta == 0, y is overwritten with zeros without being read
// (the y prologue of methods that add into y: YPrologue in gpu/mod.rs).
extern "C" __global__ void spmvkit_scale(const ScaleArgs a) {
    const unsigned stride = gridDim.x * blockDim.x;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)a.n; i += stride) {
        a.y[i] = (a.beta == (real_t)0) ? (real_t)0 : a.beta * a.y[i];
    }
}

struct GatherArgs {
    real_t* out;
    const real_t* x;
    const unsigned int* idx;
    int n;
};

// out[i] = x[idx[i]] for i < n: packs scattered entries into a contiguous buffer (the send side
// of the multi-GPU halo exchange, src/dist/nccl.rs). The loads are explicit ldg: a struct member
// carries no __restrict__ from which the compiler would derive them.
extern "C" __global__ void spmvkit_gather(const GatherArgs a) {
    const unsigned stride = gridDim.x * blockDim.x;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)a.n; i += stride) {
        a.out[i] = ldg(a.x + ldg(a.idx + i));
    }
}
