use super::*;
use crate::methods::testmats::{assert_repeatable, check_layout, check_method, matrix_a, suite};

fn params(items: &[&str]) -> Params {
    Params::parse(items.iter().copied()).unwrap()
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
fn matches_oracle_default() {
    check_method(&AmfCsr, &Params::new());
}

#[test]
fn matches_oracle_varied() {
    for p in [
        &["tpv=1"][..],
        &["tpv=32", "threads=64"],
        &["ts=2", "tl=5"],
        &["long=16", "threads=32"],
        &["ts=1000", "tl=100000"],
    ] {
        check_method(&AmfCsr, &params(p));
    }
}

#[test]
fn corpus_edge_cases() {
    for (name, a) in crate::gen::corpus::edge_cases() {
        if a.ncols() > 1 << 30 {
            continue;
        }
        let l = build(&a, &Params::new()).unwrap();
        check_layout(&format!("amf corpus {name}"), &a, &l);
        let a32: Csr<f32> = a.cast();
        let l = build(&a32, &params(&["long=64"])).unwrap();
        check_layout(&format!("amf corpus {name} f32"), &a32, &l);
    }
}

#[test]
fn repeatable() {
    for (_, a) in suite() {
        let l = AmfCsr.prepare(&a, &Params::new()).unwrap();
        assert_repeatable(&a, l.as_ref());
    }
}

#[test]
fn rejects_bad_params() {
    let a = Csr::<f64>::identity(4).unwrap();
    for bad in [
        "tpv=3",
        "tpv=64",
        "tl=0",
        "long=0",
        "threads=33",
        "ts=x",
        "nope=1",
    ] {
        assert!(AmfCsr.prepare(&a, &params(&[bad])).is_err(), "{bad}");
    }
}

#[test]
fn kernel_args_match_the_kernel() {
    crate::methods::testmats::check_kernel_args(&KERNEL);
}
