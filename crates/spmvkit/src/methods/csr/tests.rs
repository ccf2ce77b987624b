use super::*;
use crate::cpu::{check, oracle_spmv};
use crate::matrix::Csr;
use crate::methods::{GenericMethod, Params};

#[test]
fn matches_oracle_with_beta() {
    let a = Csr::<f64>::new(
        3,
        4,
        vec![0, 2, 2, 5],
        vec![0, 3, 0, 1, 2],
        vec![1.0, 2.0, 3.0, 4.0, 5.0],
    )
    .unwrap();
    let x = [1.0, -1.0, 0.5, 2.0];
    let y0 = [1.0, 2.0, 3.0];
    let r = oracle_spmv(&a, 2.0, &x, 0.5, &y0).unwrap();
    let l = CsrRayon.prepare(&a, &Params::new()).unwrap();
    let mut y = y0;
    l.run_cpu(2.0, &x, 0.5, &mut y).unwrap();
    assert!(check(&r, &y).ok);
    assert_eq!(y, [10.5, 1.0, 2.5 * 2.0 + 1.5 + 0.0 - 2.0 + 0.0]);
}
