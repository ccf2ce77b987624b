//! GPU checks of the distributed operator (issue #12) that need one GPU and no NCCL: every
//! rank's block of a P-way distribution runs on this GPU with its ghost buffer filled from the
//! host (as the exchange would fill it), and the local result is compared with the oracle on
//! the rank's rows, with β ≠ 0, for both strategies and several methods; plus the pack kernel
//! of the halo. The NCCL path itself is checked by `spmv dist run --gpus 2` (spmv-cli's
//! `tests/dist.rs`). Skips without a GPU unless `SPMVKIT_REQUIRE_GPU=1`.

mod common;

use std::sync::Arc;

use spmvkit::cpu::{check, oracle_spmv_rows};
use spmvkit::dist::nccl::{DistOperator, DistScalar};
use spmvkit::dist::rank::test_vectors;
use spmvkit::dist::{Distribution, Strategy};
use spmvkit::gpu::Gpu;
use spmvkit::{gen, Csr};

/// The x an off-diagonal part reads, built on the host from the global x.
fn ghost_input<T: DistScalar>(d: &Distribution, r: usize, s: Strategy, x: &[T]) -> Vec<T> {
    match s {
        Strategy::Halo => d.ghosts[r].iter().map(|&j| x[j as usize]).collect(),
        Strategy::AllGather => {
            let p = &d.partition;
            let chunk = p.max_cols();
            let mut v = vec![T::zero(); chunk * p.parts()];
            for q in 0..p.parts() {
                let c = p.cols(q);
                v[q * chunk..q * chunk + c.len()].copy_from_slice(&x[c]);
            }
            v
        }
    }
}

fn check_blocks<T: DistScalar>(gpu: &Arc<Gpu>, name: &str, a: &Csr<T>, method: &str) {
    let (x, y0) = test_vectors::<T>(a.nrows(), a.ncols());
    let (alpha, beta) = (T::from_f64(1.25), T::from_f64(-0.5));
    for p in [1, 2, 3] {
        let d = Distribution::new(a, p).unwrap();
        for s in [Strategy::Halo, Strategy::AllGather] {
            for r in 0..p {
                let b = d.block(a, r, s);
                let mut op = DistOperator::new(gpu.clone(), None, 1, &b, method).unwrap();
                op.set_x(&x[b.cols.clone()]).unwrap();
                op.set_y(&y0[b.rows.clone()]).unwrap();
                op.set_ghosts(&ghost_input(&d, r, s, &x)).unwrap();
                op.compute_only(alpha, beta).unwrap();
                let mut y = vec![T::zero(); b.rows.len()];
                op.get_y(&mut y).unwrap();
                let want =
                    oracle_spmv_rows(a, b.rows.clone(), alpha, &x, beta, &y0[b.rows.clone()])
                        .unwrap();
                let c = check(&want, &y);
                assert!(c.ok, "{name} {method} P={p} rank {r} {s:?}: {c:?}");
            }
        }
    }
}

#[test]
fn rank_blocks_on_the_gpu_match_the_oracle() {
    let Some((gpu, _lock)) = common::gpu_or_skip("rank_blocks_on_the_gpu_match_the_oracle") else {
        return;
    };
    for spec in [
        "poisson3d:24",
        "kron:12",
        "tall:3000,1000,6",
        "powerlaw:5000,9",
    ] {
        let a = gen::generate_f64(spec).unwrap();
        for method in ["csr-vector", "merge", "auto"] {
            check_blocks(&gpu, spec, &a, method);
        }
        check_blocks(&gpu, spec, &a.cast::<f32>(), "csr-vector");
    }
    for (name, a) in gen::corpus::edge_cases() {
        check_blocks(&gpu, &name, &a, "csr-vector");
    }
}

#[test]
fn the_pack_kernel_gathers() {
    let Some((gpu, _lock)) = common::gpu_or_skip("the_pack_kernel_gathers") else {
        return;
    };
    let x: Vec<f64> = (0..1000).map(|i| i as f64 * 0.5).collect();
    let idx: Vec<u32> = (0..300).map(|i| (i * 37 % 1000) as u32).collect();
    let dx = gpu.upload(&x).unwrap();
    let di = gpu.upload(&idx).unwrap();
    let mut out = gpu.alloc_zeros::<f64>(idx.len()).unwrap();
    // SAFETY: every index is < 1000 = x.len(); one stream.
    unsafe { gpu.gather_on(gpu.stream(), &mut out, &dx, &di, idx.len()) }.unwrap();
    let mut got = vec![0.0; idx.len()];
    gpu.download(&out, &mut got).unwrap();
    let want: Vec<f64> = idx.iter().map(|&i| x[i as usize]).collect();
    assert_eq!(got, want);
}
