use super::*;
use crate::gpu::Gpu;
use crate::matrix::Csr;
use crate::methods::testmats::{check_layout, params, suite};
use crate::methods::{GenericMethod, Params};

crate::methods::testmats::room_tests! {
    method: Dasp,
    kernel: KERNEL,
    oracle: [
        [],
        ["long=5"],
        ["long=5", "long_chunk=32"],
        ["long_chunk=4096"],
        ["long=64", "threshold=0"],
        ["threshold=1", "short_tiles_per_warp=1"],
        ["short_tiles_per_warp=64", "long=1000000"],
    ],
    corpus: [[], ["long=8", "threshold=0.5"]],
    repeatable: [],
    rejects: [
        ["long=4"],
        ["threshold=1.5"],
        ["short_tiles_per_warp=0"],
        ["x=1"],
    ],
}

/// Rows of lengths 0, 1, 3, 2, 2, 4, 1, 6 (x5 in a group of 8 with one of 9) and one long row.
#[test]
fn worked_example_layout() {
    let lens = [0usize, 1, 3, 2, 2, 4, 1, 6, 6, 6, 6, 6, 6, 6, 9, 300];
    let mut rp = vec![0u32];
    let mut cols = Vec::new();
    for &l in &lens {
        rp.push(rp.last().unwrap() + l as u32);
        cols.extend(0..l as u32);
    }
    let nnz = cols.len();
    let vals: Vec<f64> = (0..nnz).map(|k| 0.5 + k as f64).collect();
    let a = Csr::new(lens.len(), 400, rp, cols, vals).unwrap();
    let l = DaspLayout::build(&a, 256, 64, 0.75, 4);
    assert_eq!(l.empty_rows, vec![0]);
    assert_eq!(l.long_rows, vec![15]);
    // 300 nonzeros in parts of 64: 4 full and one of 44
    assert_eq!(l.part_ptr, vec![0, 5]);
    assert_eq!(l.part_start, vec![0, 64, 128, 192, 256]);
    assert_eq!(l.part_end, vec![64, 128, 192, 256, 300]);
    // short tile rows: 4 alone (row 5), 3 with 1 (row 2 + row 6), 2 with 2 (4 + 3), 1 alone (1)
    assert_eq!(&l.short_row1[..4], &[5, 2, 4, 1]);
    assert_eq!(&l.short_row2[..4], &[NONE, 6, 3, NONE]);
    assert_eq!(&l.short_split[..4], &[4, 3, 2, 1]);
    assert_eq!(&l.short_row1[4..], &[NONE; 4]);
    // one row-block group: row 14 (9) first, then rows 7..=13 (6 each)
    assert_eq!(l.blk_rows, vec![14, 7, 8, 9, 10, 11, 12, 13]);
    // slab 0 full (32 of 32), slab 1: 4 + 7*2 = 18 < 24 -> irregular
    assert_eq!(l.blk_slab_ptr, vec![0, 1]);
    assert_eq!(l.irr_ptr, vec![0, 5, 7, 9, 11, 13, 15, 17, 19]);
    check_layout("dasp worked example", &a, &l);
    check_layout(
        "dasp worked example f32",
        &a.cast::<f32>(),
        &DaspLayout::build(&a.cast::<f32>(), 256, 64, 0.75, 4),
    );
}

#[test]
fn f64_kernel_uses_the_mma() {
    use crate::gpu::compile_ptx;
    if !crate::testing::nvrtc_or_skip("f64_kernel_uses_the_mma") {
        return;
    }
    let ptx = compile_ptx(&KERNEL.source, crate::scalar::Precision::F64, "sm_80").unwrap();
    assert!(ptx.contains("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64"));
}

/// GPU against the mirror: bit for bit in f32 (plain FMA code the mirror reproduces) and for
/// the f64 parts without MMA; within the oracle tolerance in f64, where the tensor core's
/// internal order of the four products of an m8n8k4 step is not specified. Reports (does not
/// fail on) an f64 bitwise difference. Skipped without a GPU, a failure under
/// `SPMVKIT_REQUIRE_GPU=1`.
#[test]
fn gpu_matches_the_mirror() {
    let _gpu = crate::methods::testmats::gpu_test_lock();
    use crate::methods::testmats::for_each_gpu_run;
    use crate::scalar::Precision;
    let Some(gpu) = crate::testing::gpu_or_skip("gpu_matches_the_mirror") else {
        return;
    };
    fn case<T: Scalar>(gpu: &std::sync::Arc<Gpu>, name: &str, a: &Csr<T>, p: &Params) {
        let what = format!("dasp on {name} ({})", T::PRECISION);
        let l = Dasp.prepare(a, p).unwrap();
        for_each_gpu_run(gpu, &what, a, l.as_ref(), |r| {
            let bad = r.first_bit_difference();
            if T::PRECISION == Precision::F32 {
                if let Some(i) = bad {
                    panic!(
                        "{what}: row {i}: GPU {} but CPU mirror {}",
                        r.got[i], r.want[i]
                    );
                }
            } else {
                if let Some(i) = bad {
                    eprintln!(
                        "{what}: f64 not bitwise at row {i}: GPU {} mirror {}",
                        r.got[i], r.want[i]
                    );
                }
                let c = r.against_oracle(a);
                assert!(
                    c.ok,
                    "{what}: row {} off by {:.3e}",
                    c.worst_row, c.max_rel_err
                );
            }
        });
    }
    for p in [&[][..], &["long=5", "long_chunk=32", "threshold=0.5"]] {
        for (name, a) in suite() {
            case(&gpu, name, &a, &params(p));
            case(&gpu, name, &a.cast::<f32>(), &params(p));
        }
    }
}
