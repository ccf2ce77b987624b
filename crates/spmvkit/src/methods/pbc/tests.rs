use super::*;
use crate::methods::testmats::{check_layout, matrix_a, params, suite};

crate::methods::testmats::room_tests! {
    method: Pbc,
    kernel: KERNEL,
    oracle: [
        [],
        ["blocks=1"],
        ["block_nnz=7", "threads=32"],
        ["block_nnz=100000"],
        ["blocks=1000000", "threads=64"],
    ],
    corpus: [[], ["block_nnz=33"]],
    repeatable: ["block_nnz=50"],
    rejects: [
        ["blocks=0"],
        ["blocks=x"],
        ["block_nnz=0"],
        ["threads=33"],
        ["nope=1"],
    ],
}

#[test]
fn fig3_block_counts() {
    // teb.md §2.2 / Fig. 3: three blocks of 5, 6 and 5 nnz.
    let a = matrix_a();
    let l = build(&a, &params(&["blocks=3"])).unwrap();
    assert_eq!(l.block_nnz(), vec![5, 6, 5]);
    // R2 (entries 4 and 5) is cut by the first boundary: its entries go to the COO part.
    assert_eq!(l.split_rows(), &[2]);
    assert_eq!(l.block_rows(0), &[0, 1]);
    assert_eq!(l.block_rows(1), &[3, 5, 4]); // by length, descending, stable
    assert_eq!(l.block_rows(2), &[7, 6]);
    assert_eq!(l.widths(), &[3, 2, 4]);
    check_layout("pbc fig3", &a, &l);
}

#[test]
fn paper_variances_do_not_share_one_formula() {
    // Eq. 5 (population variance) gives 0.222 for PBC's 5/6/5 (paper: 0.23) and 0.889 for
    // AMF-CSR's 6/6/4 (paper: 1.29); the sample variance gives 0.333 and 1.333.
    let pop = |v: &[f64]| {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / v.len() as f64
    };
    assert!((pop(&[5., 6., 5.]) - 0.2222).abs() < 1e-3);
    assert!((pop(&[6., 6., 4.]) - 0.8889).abs() < 1e-3);
    assert!((pop(&[6., 6., 4.]) * 1.5 - 1.3333).abs() < 1e-3);
}

#[test]
fn cuts_are_balanced() {
    for (name, a) in suite() {
        let l = build(&a, &params(&["block_nnz=37"])).unwrap();
        let n = l.block_nnz();
        let (lo, hi) = (
            n.iter().min().copied().unwrap_or(0),
            n.iter().max().copied().unwrap_or(0),
        );
        assert!(hi - lo <= 1, "{name}: {lo}..{hi}");
        assert_eq!(n.iter().sum::<u64>(), a.nnz() as u64);
    }
}
