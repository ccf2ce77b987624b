// spmvkit runtime helpers (no method): kernels the GPU runtime itself launches.
// Grid-stride indices are unsigned: with n <= 2^31-1 and at most ceil(n / blockDim.x) blocks
// (the launches use fewer), the stride is at most 2^31 and i + stride < 2^32, where a signed int
// i would overflow once n is within one stride of 2^31-1.
// Each entry takes one argument struct by value; its Rust twin is in gpu/mod.rs (kernel_args!),
// and the launch layer checks the two layouts when NVRTC compiles this file. Entries copy the
// pointers into __restrict__ locals: the compiler keeps a local's no-alias promise as it keeps a
// parameter's, and ignores one on a struct member.

struct ScaleArgs {
    real_t* y;
    int n;
    real_t beta;
};

// y[i] = beta * y[i] for i < n; with beta == 0, y is overwritten with zeros without being read
// (the y prologue of methods that add into y: YPrologue in gpu/mod.rs).
extern "C" __global__ void spmvkit_scale(const ScaleArgs a) {
    real_t* __restrict__ y = a.y;
    const int n = a.n;
    const real_t beta = a.beta;
    const unsigned stride = gridDim.x * blockDim.x;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)n; i += stride) {
        y[i] = (beta == (real_t)0) ? (real_t)0 : beta * y[i];
    }
}

struct GatherArgs {
    real_t* out;
    const real_t* x;
    const unsigned int* idx;
    int n;
};

// out[i] = x[idx[i]] for i < n: packs scattered entries into a contiguous buffer (the send side
// of the multi-GPU halo exchange, src/dist/nccl.rs).
extern "C" __global__ void spmvkit_gather(const GatherArgs a) {
    real_t* __restrict__ out = a.out;
    const real_t* __restrict__ x = a.x;
    const unsigned int* __restrict__ idx = a.idx;
    const int n = a.n;
    const unsigned stride = gridDim.x * blockDim.x;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)n; i += stride) {
        out[i] = x[idx[i]];
    }
}
