use super::*;
use crate::methods::testmats::{assert_repeatable, check_method, suite, vectors};

fn params(items: &[&str]) -> Params {
    Params::parse(items.iter().copied()).unwrap()
}

#[test]
fn matches_oracle_default() {
    check_method(&CsrLight, &Params::new());
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
fn repeatable() {
    for (_, a) in suite() {
        let l = CsrLight.prepare(&a, &Params::new()).unwrap();
        assert_repeatable(&a, l.as_ref());
    }
}

#[test]
fn notes_report_the_choice() {
    let a = Csr::<f64>::identity(10).unwrap();
    let l = CsrLight.prepare(&a, &Params::new()).unwrap();
    let notes = l.notes();
    assert!(notes.contains(&("vector size".to_string(), "2".to_string())));
}

#[test]
fn rejects_bad_params() {
    let a = Csr::<f64>::identity(4).unwrap();
    for bad in [
        "vector=3",
        "vector=64",
        "vector=0",
        "grab=0",
        "grab=65",
        "grab=x",
        "threads=33",
    ] {
        assert!(CsrLight.prepare(&a, &params(&[bad])).is_err(), "{bad}");
    }
}

#[test]
fn kernel_args_match_the_kernel() {
    crate::methods::testmats::check_kernel_args(&KERNEL);
}

#[test]
fn matches_oracle_on_corpus() {
    crate::methods::testmats::check_method_on_corpus(&CsrLight, &Params::new());
}

#[test]
fn gpu_matches_the_mirror() {
    crate::methods::testmats::check_gpu_against_mirror(&CsrLight, &Params::new());
}

#[test]
fn gpu_matches_the_mirror_every_vector_size() {
    for p in ["vector=2", "vector=4", "vector=16", "vector=32"] {
        crate::methods::testmats::check_gpu_against_mirror(&CsrLight, &params(&[p, "grab=2"]));
    }
}
