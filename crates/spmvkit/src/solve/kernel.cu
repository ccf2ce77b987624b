// spmvkit solvers (issue #11): the vector kernels of conjugate gradient and PageRank.
//
// Every scalar of the iteration (rho, alpha, beta, the iteration count, the stop flag) lives in a
// device array `s` of doubles, so an iteration is a fixed sequence of launches with no host
// synchronisation and can be captured into a CUDA graph. Once s[S_DONE] is set, every kernel
// returns at once: iterations launched after convergence change nothing.
//
// Grid-stride loops index with unsigned ints: n <= 2^31-1 and the fixed grid is at most
// ceil(n / SOLVE_THREADS) blocks, so i + stride < 2^32 (a signed i overflows when n is within one
// stride of 2^31-1).
//
// Dot products are deterministic: a fixed grid (chosen from n alone by the host) where each block
// sums a fixed grid-stride set of elements in double, a fixed shared-memory tree per block, and a
// single-block second stage that adds the block partials in a fixed order.

#define SOLVE_THREADS 256
// Above every finite result; NaN and infinity fail `v < SOLVE_HUGE`.
#define SOLVE_HUGE 1.0e308

#define S_RHO 0
#define S_ALPHA 1
#define S_BETA 2
#define S_THRESH 3
#define S_DONE 4
#define S_ITER 5
#define S_MAXIT 6
#define S_RES 7
#define S_MASS 8
// Single-reduction CG: set once the first iteration's scalars are computed.
#define S_CG1 9

// Stop codes in s[S_DONE].
#define DONE_CONVERGED 1.0
#define DONE_MAXIT 2.0
#define DONE_BREAKDOWN 3.0

// Sum of v over the block (blockDim.x == SOLVE_THREADS), valid in thread 0.
__device__ double block_sum(double v) {
    __shared__ double sh[SOLVE_THREADS];
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int w = SOLVE_THREADS / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) {
            sh[threadIdx.x] += sh[threadIdx.x + w];
        }
        __syncthreads();
    }
    return sh[0];
}

// Sum of part[0..nb) in a fixed order, by a single block; valid in thread 0.
__device__ double sum_partials(const double* __restrict__ part, int nb) {
    double v = 0.0;
    for (int i = threadIdx.x; i < nb; i += SOLVE_THREADS) {
        v += part[i];
    }
    return block_sum(v);
}

// part[blockIdx.x] = this block's sum of v (the first stage of a deterministic dot product).
__device__ void store_block_partial(double v, double* __restrict__ part) {
    double b = block_sum(v);
    if (threadIdx.x == 0) part[blockIdx.x] = b;
}

// Thread 0, after an iteration whose convergence measure is m (rho' for CG, the L1 change for
// PageRank): record it, count the iteration, stop on a non-finite m, on m <= thresh, or at the
// iteration limit.
__device__ void finish_iteration(double* __restrict__ s, double m) {
    s[S_RES] = m;
    s[S_ITER] += 1.0;
    if (!(m < SOLVE_HUGE)) {
        s[S_DONE] = DONE_BREAKDOWN;
    } else if (m <= s[S_THRESH]) {
        s[S_DONE] = DONE_CONVERGED;
    } else if (s[S_ITER] >= s[S_MAXIT]) {
        s[S_DONE] = DONE_MAXIT;
    }
}

// ---- conjugate gradient ---------------------------------------------------------------------

// part[block] = partial sums of p·q.
extern "C" __global__ void cg_dot_pq(const real_t* __restrict__ p, const real_t* __restrict__ q,
                                     int n, double* __restrict__ part, const double* __restrict__ s) {
    if (s[S_DONE] != 0.0) return;
    double v = 0.0;
    for (unsigned i = blockIdx.x * SOLVE_THREADS + threadIdx.x; i < (unsigned)n;
         i += gridDim.x * SOLVE_THREADS) {
        v += (double)p[i] * (double)q[i];
    }
    store_block_partial(v, part);
}

// alpha = rho / (p·q); p·q <= 0 with rho > 0 means A is not positive definite (breakdown).
extern "C" __global__ void cg_alpha(double* __restrict__ s, const double* __restrict__ part, int nb) {
    if (s[S_DONE] != 0.0) return;
    double pq = sum_partials(part, nb);
    if (threadIdx.x == 0) {
        if (pq > 0.0 && pq < SOLVE_HUGE) {
            s[S_ALPHA] = s[S_RHO] / pq;
        } else {
            s[S_ALPHA] = 0.0;
            s[S_DONE] = DONE_BREAKDOWN;
        }
    }
}

// x += alpha p, r -= alpha q, and part[block] = partial sums of r·r.
extern "C" __global__ void cg_update(real_t* __restrict__ x, real_t* __restrict__ r,
                                     const real_t* __restrict__ p, const real_t* __restrict__ q,
                                     int n, double* __restrict__ part, const double* __restrict__ s) {
    if (s[S_DONE] != 0.0) return;
    real_t a = (real_t)s[S_ALPHA];
    double v = 0.0;
    for (unsigned i = blockIdx.x * SOLVE_THREADS + threadIdx.x; i < (unsigned)n;
         i += gridDim.x * SOLVE_THREADS) {
        x[i] = x[i] + a * p[i];
        real_t ri = r[i] - a * q[i];
        r[i] = ri;
        v += (double)ri * (double)ri;
    }
    store_block_partial(v, part);
}

// rho' = r·r, beta = rho'/rho, one more iteration; stop on rho' <= thresh or the iteration limit.
extern "C" __global__ void cg_beta(double* __restrict__ s, const double* __restrict__ part, int nb) {
    if (s[S_DONE] != 0.0) return;
    double rr = sum_partials(part, nb);
    if (threadIdx.x == 0) {
        s[S_BETA] = rr / s[S_RHO];
        s[S_RHO] = rr;
        finish_iteration(s, rr);
    }
}

// p = r + beta p.
extern "C" __global__ void cg_p(real_t* __restrict__ p, const real_t* __restrict__ r, int n,
                                const double* __restrict__ s) {
    if (s[S_DONE] != 0.0) return;
    real_t b = (real_t)s[S_BETA];
    for (unsigned i = blockIdx.x * SOLVE_THREADS + threadIdx.x; i < (unsigned)n;
         i += gridDim.x * SOLVE_THREADS) {
        p[i] = r[i] + b * p[i];
    }
}

// ---- single-reduction CG (Chronopoulos & Gear 1989) -----------------------------------------
//
// One iteration after w = A r: `cg1_dots` writes the block partials of r·r (part[0..nb)) and of
// w·r (part[nb..2nb)); one reduction (on NCCL ranks `dist_sum2` then one all-reduce of the two
// sums) feeds `cg1_scalars` (gamma = r·r, delta = w·r; beta = gamma/gamma_old,
// alpha = gamma/(delta - beta*gamma/alpha_old)); `cg1_update` does p = r + beta p,
// q = w + beta q (q = A p by recurrence), x += alpha p, r -= alpha q.

// part[block] = partials of r·r, part[nb + block] = partials of w·r (nb = gridDim.x).
extern "C" __global__ void cg1_dots(const real_t* __restrict__ r, const real_t* __restrict__ w,
                                    int n, double* __restrict__ part,
                                    const double* __restrict__ s) {
    if (s[S_DONE] != 0.0) return;
    double g = 0.0, d = 0.0;
    for (unsigned i = blockIdx.x * SOLVE_THREADS + threadIdx.x; i < (unsigned)n;
         i += gridDim.x * SOLVE_THREADS) {
        double ri = (double)r[i];
        g += ri * ri;
        d += (double)w[i] * ri;
    }
    double bg = block_sum(g);
    __syncthreads();
    double bd = block_sum(d);
    if (threadIdx.x == 0) {
        part[blockIdx.x] = bg;
        part[gridDim.x + blockIdx.x] = bd;
    }
}

// dst[0] = the sum of part[0..nb), dst[1] = the sum of part[nb..2nb), in a fixed order.
extern "C" __global__ void dist_sum2(double* __restrict__ dst, const double* __restrict__ part,
                                     int nb, const double* __restrict__ s) {
    if (s[S_DONE] != 0.0) return;
    double g = sum_partials(part, nb);
    __syncthreads();
    double d = sum_partials(part + nb, nb);
    if (threadIdx.x == 0) {
        dst[0] = g;
        dst[1] = d;
    }
}

// gamma = the sum of part[0..nb), delta = the sum of part[stride..stride+nb): after the first
// iteration gamma is the residual of the last update (stop on gamma <= thresh); stop at the
// iteration limit; else the next alpha and beta, and one more iteration. delta - beta*gamma/alpha
// is p·A p: <= 0 is a breakdown.
extern "C" __global__ void cg1_scalars(double* __restrict__ s, const double* __restrict__ part,
                                       int nb, int stride) {
    if (s[S_DONE] != 0.0) return;
    double g = sum_partials(part, nb);
    __syncthreads();
    double d = sum_partials(part + stride, nb);
    if (threadIdx.x != 0) return;
    bool started = s[S_CG1] != 0.0;
    if (started) {
        s[S_RES] = g;
        if (!(g < SOLVE_HUGE)) {
            s[S_DONE] = DONE_BREAKDOWN;
            return;
        }
        if (g <= s[S_THRESH]) {
            s[S_DONE] = DONE_CONVERGED;
            return;
        }
    }
    if (s[S_ITER] >= s[S_MAXIT]) {
        s[S_DONE] = DONE_MAXIT;
        return;
    }
    double beta = started ? g / s[S_RHO] : 0.0;
    double pap = started ? d - beta * g / s[S_ALPHA] : d;
    if (!(pap > 0.0 && pap < SOLVE_HUGE)) {
        s[S_DONE] = DONE_BREAKDOWN;
        return;
    }
    s[S_ALPHA] = g / pap;
    s[S_BETA] = beta;
    s[S_RHO] = g;
    s[S_CG1] = 1.0;
    s[S_ITER] += 1.0;
}

// p = r + beta p, q = w + beta q, x += alpha p, r -= alpha q.
extern "C" __global__ void cg1_update(real_t* __restrict__ x, real_t* __restrict__ r,
                                      real_t* __restrict__ p, real_t* __restrict__ q,
                                      const real_t* __restrict__ w, int n,
                                      const double* __restrict__ s) {
    if (s[S_DONE] != 0.0) return;
    real_t a = (real_t)s[S_ALPHA];
    real_t b = (real_t)s[S_BETA];
    for (unsigned i = blockIdx.x * SOLVE_THREADS + threadIdx.x; i < (unsigned)n;
         i += gridDim.x * SOLVE_THREADS) {
        real_t pi = r[i] + b * p[i];
        real_t qi = w[i] + b * q[i];
        p[i] = pi;
        q[i] = qi;
        x[i] = x[i] + a * pi;
        r[i] = r[i] - a * qi;
    }
}

// ---- PageRank -------------------------------------------------------------------------------

// part[block] = partial sums of x over the dangling nodes dang[0..nd).
extern "C" __global__ void pr_dangling(const real_t* __restrict__ x, const int* __restrict__ dang,
                                       int nd, double* __restrict__ part,
                                       const double* __restrict__ s) {
    if (s[S_DONE] != 0.0) return;
    double v = 0.0;
    for (unsigned i = blockIdx.x * SOLVE_THREADS + threadIdx.x; i < (unsigned)nd;
         i += gridDim.x * SOLVE_THREADS) {
        v += (double)x[dang[i]];
    }
    store_block_partial(v, part);
}

// s[S_MASS] = the dangling mass.
extern "C" __global__ void pr_mass(double* __restrict__ s, const double* __restrict__ part, int nb) {
    if (s[S_DONE] != 0.0) return;
    double m = sum_partials(part, nb);
    if (threadIdx.x == 0) s[S_MASS] = m;
}

// x_new = d·y + (d·mass + 1 − d)/n, where y = P x_old; part[block] = partial sums of
// |x_new − x_old|.
extern "C" __global__ void pr_update(const real_t* __restrict__ y, const real_t* __restrict__ xold,
                                     real_t* __restrict__ xnew, int n, double damping,
                                     double* __restrict__ part, const double* __restrict__ s) {
    if (s[S_DONE] != 0.0) return;
    real_t base = (real_t)((damping * s[S_MASS] + (1.0 - damping)) / (double)n);
    real_t d = (real_t)damping;
    double v = 0.0;
    for (unsigned i = blockIdx.x * SOLVE_THREADS + threadIdx.x; i < (unsigned)n;
         i += gridDim.x * SOLVE_THREADS) {
        real_t xi = d * y[i] + base;
        v += fabs((double)xi - (double)xold[i]);
        xnew[i] = xi;
    }
    store_block_partial(v, part);
}

// err = ‖x_new − x_old‖₁, one more iteration; stop on err <= thresh or the iteration limit.
extern "C" __global__ void pr_check(double* __restrict__ s, const double* __restrict__ part, int nb) {
    if (s[S_DONE] != 0.0) return;
    double err = sum_partials(part, nb);
    if (threadIdx.x == 0) {
        finish_iteration(s, err);
    }
}

// ---- distributed solvers (dist/solve.rs) ----------------------------------------------------
//
// A rank reduces its local partials to one double with `dist_sum`, the ranks sum those with an
// NCCL all-reduce of a small buffer, and the scalar kernels above read the global sum (as a
// one-element partial array) or `dist_pr_check` reads it. Every rank computes the same scalars
// from the same all-reduced values, so all ranks stop at the same iteration.

// dst[slot] = the sum of part[0..nb) in a fixed order.
extern "C" __global__ void dist_sum(double* __restrict__ dst, int slot,
                                    const double* __restrict__ part, int nb,
                                    const double* __restrict__ s) {
    if (s[S_DONE] != 0.0) return;
    double v = sum_partials(part, nb);
    if (threadIdx.x == 0) dst[slot] = v;
}

// In place over a rank's n rows: x = d·y + (d·mass + 1 − d)/n_global, where y = P x;
// part[block] = partial sums of |x_new − x_old|. Each element is read and written by one thread.
extern "C" __global__ void dist_pr_update(real_t* x, const real_t* __restrict__ y, int n,
                                          double n_global, double damping,
                                          double* __restrict__ part, const double* __restrict__ s) {
    if (s[S_DONE] != 0.0) return;
    real_t base = (real_t)((damping * s[S_MASS] + (1.0 - damping)) / n_global);
    real_t d = (real_t)damping;
    double v = 0.0;
    for (unsigned i = blockIdx.x * SOLVE_THREADS + threadIdx.x; i < (unsigned)n;
         i += gridDim.x * SOLVE_THREADS) {
        real_t old = x[i];
        real_t xi = d * y[i] + base;
        v += fabs((double)xi - (double)old);
        x[i] = xi;
    }
    store_block_partial(v, part);
}

// red[0] = the global L1 change, red[1] = the global dangling mass of the new ranks: set the
// mass for the next iteration, count the iteration, stop on err <= thresh or the limit.
extern "C" __global__ void dist_pr_check(double* __restrict__ s, const double* __restrict__ red) {
    if (s[S_DONE] != 0.0) return;
    if (threadIdx.x == 0) {
        double err = red[0];
        s[S_MASS] = red[1];
        finish_iteration(s, err);
    }
}
