use super::*;
use crate::methods::testmats::check_layout;

crate::methods::testmats::room_tests! {
    method: CusparseBsr,
    oracle: [[], ["block=16"], ["block=3"]],
    corpus: [["block=2"], ["block=4"], ["block=16"]],
    // within the oracle tolerance (cuSPARSE claims no bitwise reproducibility for bsrmv);
    // block 4 and 16, and 3 (shapes not multiples of the block: the padded path)
    gpu: [["block=4"], ["block=16"], ["block=3"]],
    rejects: [["block=1"], ["block=33"], ["block=x"], ["b=2"]],
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
