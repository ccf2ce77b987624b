use super::*;
use crate::methods::testmats::{check_layout, check_method};

fn params(items: &[&str]) -> Params {
    Params::parse(items.iter().copied()).unwrap()
}

#[test]
fn matches_oracle_default_and_16() {
    check_method(&CusparseBsr, &Params::new());
    check_method(&CusparseBsr, &params(&["block=16"]));
    check_method(&CusparseBsr, &params(&["block=3"]));
}

#[test]
fn matches_oracle_on_the_edge_corpus() {
    for (name, a) in crate::gen::corpus::edge_cases() {
        for b in [2, 4, 16] {
            check_layout(
                &format!("bsr {b} on {name}"),
                &a,
                &BsrLayout::build(&a, b).unwrap(),
            );
            let a32 = a.cast::<f32>();
            check_layout(
                &format!("bsr {b} on {name}"),
                &a32,
                &BsrLayout::build(&a32, b).unwrap(),
            );
        }
    }
}

#[test]
fn worked_example_layout() {
    // 3x5, b = 2: [1 0 0 2 0; 0 3 0 0 0; 0 0 0 0 4]
    let a = Csr::new(
        3,
        5,
        vec![0, 2, 3, 4],
        vec![0, 3, 1, 4],
        vec![1.0, 2.0, 3.0, 4.0],
    )
    .unwrap();
    let l = BsrLayout::build(&a, 2).unwrap();
    assert_eq!((l.mb, l.nb), (2, 3));
    assert_eq!(l.row_ptr, vec![0, 2, 3]);
    assert_eq!(l.col_idx, vec![0, 1, 2]);
    assert_eq!(
        l.vals,
        vec![1.0, 0.0, 0.0, 3.0, 0.0, 2.0, 0.0, 0.0, 4.0, 0.0, 0.0, 0.0]
    );
    check_layout("bsr worked example", &a, &l);
}

#[test]
fn rejects_bad_params() {
    let a = Csr::<f64>::identity(4).unwrap();
    for bad in [&["block=1"][..], &["block=33"], &["block=x"], &["b=2"]] {
        assert!(CusparseBsr.prepare(&a, &params(bad)).is_err(), "{bad:?}");
    }
}

#[test]
fn gpu_matches_the_mirror() {
    // within the oracle tolerance (cuSPARSE claims no bitwise reproducibility for bsrmv);
    // block 4 and 16, and 3 (shapes not multiples of the block: the padded path)
    for b in ["block=4", "block=16", "block=3"] {
        crate::methods::testmats::check_gpu_against_mirror(&CusparseBsr, &params(&[b]));
    }
}

#[test]
fn padded_dims_are_whole_blocks() {
    // 3x3 with b = 2: 2 block rows and columns, so y and x of 4 elements.
    let a = Csr::<f64>::identity(3).unwrap();
    assert_eq!(BsrLayout::build(&a, 2).unwrap().padded_dims(), (4, 4));
    let a = crate::gen::generate_f64("uniform:81,97,3").unwrap();
    for (b, want) in [
        (2, (82, 98)),
        (4, (84, 100)),
        (16, (96, 112)),
        (3, (81, 99)),
    ] {
        assert_eq!(
            BsrLayout::build(&a, b).unwrap().padded_dims(),
            want,
            "b = {b}"
        );
    }
    let a = crate::gen::generate_f64("poisson2d:8").unwrap();
    assert_eq!(BsrLayout::build(&a, 4).unwrap().padded_dims(), (64, 64));
}
