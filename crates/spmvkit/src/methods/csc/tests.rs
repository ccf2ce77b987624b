use super::*;
use crate::matrix::Csr;
use crate::methods::{GenericMethod, Params};

crate::methods::testmats::room_tests! {
    method: CscAtomic,
    kernel: KERNEL,
    oracle: [[], ["threads=32"]],
    corpus: [[]],
    gpu: [[]],
}

#[test]
fn worked_example() {
    crate::methods::testmats::check_small_worked_example(&CscAtomic);
}

#[test]
fn honest_footprint_and_info() {
    let a = Csr::<f64>::new(2, 5, vec![0, 1, 3], vec![4, 0, 4], vec![1.0, 2.0, 3.0]).unwrap();
    let l = CscAtomic.prepare(&a, &Params::new()).unwrap();
    assert_eq!(l.footprint_bytes(), 4 * 6 + 12 * 3);
    assert!(!CscAtomic.info().deterministic);
}
