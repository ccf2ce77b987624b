use super::*;
use crate::cpu::{check, oracle_spmv};
use crate::matrix::Csr;
use crate::methods::{GenericMethod, Params};

fn small() -> Csr<f64> {
    // 4x5 with an empty row and an empty column.
    Csr::new(
        4,
        5,
        vec![0, 2, 2, 5, 6],
        vec![0, 3, 0, 1, 4, 2],
        vec![1.0, 2.0, 3.0, 4.0, 5.0, -6.0],
    )
    .unwrap()
}

#[test]
fn mirror_matches_oracle_with_and_without_beta() {
    let a = small();
    let x = [1.0, -1.0, 0.5, 2.0, 0.25];
    let l = CsrScalar.prepare(&a, &Params::new()).unwrap();
    for beta in [0.0, -0.5] {
        let y0 = [1.0, 2.0, 3.0, 4.0];
        let r = oracle_spmv(&a, 1.5, &x, beta, &y0).unwrap();
        let mut y = if beta == 0.0 { [f64::NAN; 4] } else { y0 };
        l.run_cpu(1.5, &x, beta, &mut y).unwrap();
        assert!(check(&r, &y).ok, "beta {beta}: {y:?} vs {:?}", r.y);
    }
}

#[test]
fn mirror_worked_example() {
    // Row 0: 1*1 + 2*2 = 5; row 1 empty; row 2: 3*1 + 4*(-1) + 5*0.25 = 0.25; row 3: -6*0.5 = -3.
    let a = small();
    let x = [1.0, -1.0, 0.5, 2.0, 0.25];
    let mut y = [10.0; 4];
    CsrScalar
        .prepare(&a, &Params::new())
        .unwrap()
        .run_cpu(2.0, &x, 0.5, &mut y)
        .unwrap();
    assert_eq!(y, [15.0, 5.0, 5.5, -1.0]);
}

#[test]
fn f32_and_empty_matrix() {
    let a = small().cast::<f32>();
    let x = [1.0f32; 5];
    let mut y = [0.0f32; 4];
    let l = CsrScalar.prepare(&a, &Params::new()).unwrap();
    l.run_cpu(1.0, &x, 0.0, &mut y).unwrap();
    assert_eq!(y, [3.0, 0.0, 12.0, -6.0]);
    let e = Csr::<f32>::new(0, 0, vec![0], vec![], vec![]).unwrap();
    let mut y: [f32; 0] = [];
    CsrScalar
        .prepare(&e, &Params::new())
        .unwrap()
        .run_cpu(1.0, &[], 0.0, &mut y)
        .unwrap();
}

#[test]
fn kernel_args_match_the_kernel() {
    crate::methods::testmats::check_kernel_args(&KERNEL);
}
