use super::*;
use crate::methods::testmats::{assert_repeatable, check_method, suite};

#[test]
fn matches_oracle_on_suite() {
    check_method(&CsrVector, &Params::new());
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
    let l = CsrVector.prepare(&a, &Params::new()).unwrap();
    let mut y = [2.0, 4.0, 6.0];
    l.run_cpu(2.0, &[1.0, 2.0, 3.0], 0.5, &mut y).unwrap();
    assert_eq!(y, [15.0, 2.0, 55.0]);
}

#[test]
fn repeatable() {
    for (_, a) in suite() {
        let l = CsrVector.prepare(&a, &Params::new()).unwrap();
        assert_repeatable(&a, l.as_ref());
    }
}

#[test]
fn rejects_bad_block_size() {
    let a = Csr::<f64>::identity(4).unwrap();
    for bad in ["0", "48", "2048", "x"] {
        let p = Params::parse([format!("threads={bad}").as_str()]).unwrap();
        assert!(CsrVector.prepare(&a, &p).is_err(), "threads={bad}");
    }
}

#[test]
fn kernel_args_match_the_kernel() {
    crate::methods::testmats::check_kernel_args(&KERNEL);
}

#[test]
fn matches_oracle_on_corpus() {
    crate::methods::testmats::check_method_on_corpus(&CsrVector, &Params::new());
}

#[test]
fn gpu_matches_the_mirror() {
    crate::methods::testmats::check_gpu_against_mirror(&CsrVector, &Params::new());
}
