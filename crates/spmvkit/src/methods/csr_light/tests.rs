use super::*;
use crate::matrix::Csr;
use crate::methods::testmats::{check_method, params, suite, vectors};
use crate::methods::{GenericMethod, Params};

crate::methods::testmats::room_tests! {
    method: CsrLight,
    kernel: KERNEL,
    oracle: [[]],
    corpus: [[]],
    gpu: [
        [],
        ["vector=2", "grab=2"],
        ["vector=4", "grab=2"],
        ["vector=16", "grab=2"],
        ["vector=32", "grab=2"],
    ],
    repeatable: [],
    rejects: [
        ["vector=3"],
        ["vector=64"],
        ["vector=0"],
        ["grab=0"],
        ["grab=65"],
        ["grab=x"],
        ["threads=33"],
    ],
}

#[test]
fn matches_oracle_every_vector_size() {
    for v in ["2", "4", "8", "16", "32"] {
        for g in ["1", "3"] {
            check_method(
                &CsrLight,
                &params(&[&format!("vector={v}"), &format!("grab={g}")]),
            );
        }
    }
}

#[test]
fn lightspmv_vector_rule() {
    assert_eq!(auto_vector(0, 0), 2);
    assert_eq!(auto_vector(20, 10), 2);
    assert_eq!(auto_vector(21, 10), 4);
    assert_eq!(auto_vector(40, 10), 4);
    assert_eq!(auto_vector(41, 10), 8);
    assert_eq!(auto_vector(640, 10), 8);
    assert_eq!(auto_vector(641, 10), 32);
}

#[test]
fn auto_grab_bounds_atomics() {
    assert_eq!(auto_grab(0, 4), 1);
    assert_eq!(auto_grab(1000, 16), 1);
    // 4M rows, 4 rows per iteration: 2^20 iterations -> 16 per atomic, 2^16 atomics.
    assert_eq!(auto_grab(1 << 22, 4), 16);
    assert_eq!(auto_grab(1 << 30, 1), 16);
}

#[test]
fn vector32_equals_csr_vector_bitwise() {
    // Same lanes (32-aligned start), same butterfly: the dynamic scheduling changes nothing.
    for (_, a) in suite() {
        let l = CsrLight.prepare(&a, &params(&["vector=32"])).unwrap();
        let v = crate::methods::find("csr-vector")
            .unwrap()
            .prepare_f64(&a, &Params::new())
            .unwrap();
        let (x, y0) = vectors::<f64>(a.nrows(), a.ncols(), 3);
        let (mut y1, mut y2) = (y0.clone(), y0);
        l.run_cpu(1.5, &x, -2.0, &mut y1).unwrap();
        v.run_cpu(1.5, &x, -2.0, &mut y2).unwrap();
        assert!(y1.iter().zip(&y2).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}

#[test]
fn notes_report_the_choice() {
    let a = Csr::<f64>::identity(10).unwrap();
    let l = CsrLight.prepare(&a, &Params::new()).unwrap();
    let notes = l.notes();
    assert!(notes.contains(&("vector size".to_string(), "2".to_string())));
}
