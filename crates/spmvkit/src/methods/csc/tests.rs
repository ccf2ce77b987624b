use super::*;
use crate::methods::testmats::check_method;

#[test]
fn matches_oracle_on_suite() {
    check_method(&CscAtomic, &Params::new());
    check_method(&CscAtomic, &Params::parse(["threads=32"]).unwrap());
}

#[test]
fn worked_example() {
    // [1 0 2; 0 0 0; 3 4 5] · [1, 2, 3] = [7, 0, 26]; y = 2·Ax + 0.5·y0.
    let a = Csr::<f64>::new(
        3,
        3,
        vec![0, 2, 2, 5],
        vec![0, 2, 0, 1, 2],
        vec![1.0, 2.0, 3.0, 4.0, 5.0],
    )
    .unwrap();
    let l = CscAtomic.prepare(&a, &Params::new()).unwrap();
    let mut y = [2.0, 4.0, 6.0];
    l.run_cpu(2.0, &[1.0, 2.0, 3.0], 0.5, &mut y).unwrap();
    assert_eq!(y, [15.0, 2.0, 55.0]);
    // β = 0 never reads y
    let mut y = [f64::NAN; 3];
    l.run_cpu(1.0, &[1.0, 2.0, 3.0], 0.0, &mut y).unwrap();
    assert_eq!(y, [7.0, 0.0, 26.0]);
}

#[test]
fn honest_footprint_and_info() {
    let a = Csr::<f64>::new(2, 5, vec![0, 1, 3], vec![4, 0, 4], vec![1.0, 2.0, 3.0]).unwrap();
    let l = CscAtomic.prepare(&a, &Params::new()).unwrap();
    assert_eq!(l.footprint_bytes(), 4 * 6 + 12 * 3);
    assert!(!CscAtomic.info().deterministic);
}

#[test]
fn kernel_args_match_the_kernel() {
    crate::methods::testmats::check_kernel_args(&KERNEL);
}

#[test]
fn matches_oracle_on_corpus() {
    crate::methods::testmats::check_method_on_corpus(&CscAtomic, &Params::new());
}

#[test]
fn gpu_matches_the_mirror() {
    crate::methods::testmats::check_gpu_against_mirror(&CscAtomic, &Params::new());
}
