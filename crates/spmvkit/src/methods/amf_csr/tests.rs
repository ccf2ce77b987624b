use super::*;
use crate::methods::testmats::{check_layout, matrix_a, params};

crate::methods::testmats::room_tests! {
    method: AmfCsr,
    kernel: KERNEL,
    oracle: [
        [],
        ["tpv=1"],
        ["tpv=32", "threads=64"],
        ["ts=2", "tl=5"],
        ["long=16", "threads=32"],
        ["ts=1000", "tl=100000"],
    ],
    repeatable: [],
    rejects: [
        ["tpv=3"],
        ["tpv=64"],
        ["tl=0"],
        ["long=0"],
        ["threads=33"],
        ["ts=x"],
        ["nope=1"],
    ],
}

#[test]
fn fig5_block_counts() {
    // teb.md §2.3 / Fig. 5: T_s = 4, T_l = 7 give three blocks of 6, 6 and 4 nnz.
    let a = matrix_a();
    let l = build(&a, &params(&["ts=4", "tl=7"])).unwrap();
    assert_eq!(l.block_nnz(), vec![6, 6, 4]);
    // Folded rows {R0}, {R1,R2}, {R3,R4}, {R5,R6}, {R7}.
    assert_eq!(l.fold_row(), &[0, 1, 3, 5, 7, 8]);
    assert_eq!(l.blk_fold(), &[0, 2, 4, 5]);
    // {R1,R2}: (0,3.0) from R1 then R2's (3,6.0), (7,9.0); packed col<<2 | local row.
    assert_eq!(&l.cols()[3..6], &[0 << 2, 3 << 2 | 1, 7 << 2 | 1]);
    // {R5,R6}: both have column 4: R5's first (row order on ties).
    assert_eq!(&l.cols()[9..12], &[4 << 2, 4 << 2 | 1, 5 << 2]);
    assert_eq!(&l.vals()[9..12], &[5.0, 6.0, 8.0]);
    check_layout("amf fig5", &a, &l);
}

#[test]
fn tpv_rule() {
    let a = matrix_a();
    // Default T_s = 4·16/8 + 1 = 9: folds {R0..R3} = 8 and {R4..R7} = 8 nnz: mean 8.
    let l = build(&a, &Params::new()).unwrap();
    assert_eq!(l.fold_row(), &[0, 4, 8]);
    assert_eq!(l.tpv(), 4); // ceil(sqrt(8)) = 3 -> 4
}

#[test]
fn corpus_edge_cases() {
    // `build` refuses more than 2^30 columns (two bits of each column word are the local row)
    for p in [&[][..], &["long=64"]] {
        crate::methods::testmats::check_method_on_corpus_where(&AmfCsr, &params(p), |a| {
            a.ncols() <= 1 << 30
        });
    }
}
