//! The edge-case corpus (issue #2) every SpMV method is checked on against the oracle: empty and
//! degenerate shapes, empty rows and columns, explicit zeros, extreme aspect ratios, one row or
//! one column holding most entries, rows around warp and block boundaries (31/32/33, 1024, 65536),
//! and small instances of each generator family. Deterministic and small (≤ ~200k nnz each).

use super::{generate_f64, kinds};
use crate::matrix::Csr;
use crate::scalar::Idx;

/// Keeps the rows for which `keep_row` holds (the others become empty), maps columns through
/// `col_map` (which must be increasing) into `ncols` columns, and rewrites values with `val`.
fn reshape(
    a: &Csr<f64>,
    ncols: usize,
    keep_row: impl Fn(usize) -> bool,
    col_map: impl Fn(Idx) -> Idx,
    val: impl Fn(usize, usize, usize, f64) -> f64,
) -> Csr<f64> {
    let mut ptr = vec![0 as Idx];
    let (mut cols, mut vals) = (Vec::new(), Vec::new());
    for i in 0..a.nrows() {
        if keep_row(i) {
            let (rc, rv) = a.row(i);
            for (k, (&c, &v)) in rc.iter().zip(rv).enumerate() {
                cols.push(col_map(c));
                vals.push(val(i, k, rc.len(), v));
            }
        }
        ptr.push(cols.len() as Idx);
    }
    Csr::from_parts_unchecked(a.nrows(), ncols, ptr, cols, vals)
}

fn spec(s: &str) -> (String, Csr<f64>) {
    // The corpus specs are fixed and valid; a failure here is a bug in the generators.
    let a = generate_f64(s).unwrap_or_else(|e| panic!("corpus spec {s}: {e}"));
    (s.to_string(), a)
}

/// The edge-case corpus: (name, matrix) pairs; names of generated members are their GEN-SPECs.
pub fn edge_cases() -> Vec<(String, Csr<f64>)> {
    let mut out: Vec<(String, Csr<f64>)> = Vec::new();
    let mut push = |name: &str, a: Csr<f64>| out.push((name.to_string(), a));

    push(
        "0x0",
        Csr::from_parts_unchecked(0, 0, vec![0], vec![], vec![]),
    );
    push(
        "1x1",
        Csr::from_parts_unchecked(1, 1, vec![0, 1], vec![0], vec![0.75]),
    );
    push(
        "1x1-nnz0",
        Csr::from_parts_unchecked(1, 1, vec![0, 0], vec![], vec![]),
    );
    push(
        "all-empty-5x5",
        Csr::from_parts_unchecked(5, 5, vec![0; 6], vec![], vec![]),
    );

    let u = spec("uniform:300,100,5").1;
    push(
        "empty-rows-and-cols-300x400",
        reshape(&u, 400, |i| i % 3 != 1, |c| 4 * c + 1, |_, _, _, v| v),
    );
    let u = spec("uniform:100,120,6").1;
    push(
        "empty-first-and-last-rows-100x120",
        reshape(&u, 120, |i| (4..96).contains(&i), |c| c, |_, _, _, v| v),
    );
    let u = spec("uniform:50,60,8").1;
    push(
        "explicit-zeros-50x60",
        reshape(
            &u,
            60,
            |_| true,
            |c| c,
            |i, k, len, v| {
                if i == 7 || k == 0 || k + 1 == len {
                    0.0
                } else {
                    v
                }
            },
        ),
    );

    let mut out2: Vec<(String, Csr<f64>)> = [
        "uniform:1000,7,3",
        "uniform:7,1000,300",
        "hugerow:1000,2,80000,ncols=100000",
        "hugerow:200,3,5000,row=0,ncols=6000",
        "hugerow:300,3,1500,ncols=1500",
        "hugerow:64,2,ncols=70000",
        "diag:1000",
        "identity:100",
        "banded:2000,16",
        "banded:500,3,fill=1",
        "powerlaw:5000,8",
        "blockdiag:50,12",
        "poisson2d:12",
        "poisson3d:6",
        "stencil27:5",
        "varcoef27:5",
        "rgg:1500",
        "delaunay:1500,order=shuffled",
        "kron:10",
        "kron:9,8,sym=0,vals=rand",
        "dense:40,40",
    ]
    .iter()
    .map(|s| spec(s))
    .collect();
    out.append(&mut out2);

    let hugecol = spec("hugerow:500,2,20000,ncols=30000").1.transpose();
    out.push(("hugecol:30000x500 (transpose of hugerow)".into(), hugecol));

    let mut lens: Vec<Idx> = Vec::new();
    for _ in 0..3 {
        lens.extend_from_slice(&[
            0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257,
            511, 512, 513, 1023, 1024, 1025,
        ]);
    }
    let warp = kinds::with_lengths::<f64>(&lens, 1100, 5)
        .unwrap_or_else(|e| panic!("corpus warp-boundaries: {e}"));
    out.push(("warp-boundaries-81x1100".into(), warp));
    out
}
