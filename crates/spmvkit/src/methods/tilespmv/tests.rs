use super::*;
use crate::methods::testmats::check_layout;

crate::methods::testmats::room_tests! {
    method: TileSpmv,
    kernel: KERNEL,
    oracle: [
        [],
        ["deferred=0"],
        ["deferred=12", "unit_tiles=1"],
        ["coo_nnz=0", "ell_cv=10", "unit_tiles=64"],
        ["coo_nnz=0", "ell_cv=0", "dense_fill=0.1"],
        ["coo_nnz=0", "ell_cv=0", "dense_fill=1", "deferred=0"],
    ],
    corpus: [[], ["deferred=0", "coo_nnz=0"]],
    // within the oracle tolerance (atomics)
    gpu: [[], ["deferred=0", "coo_nnz=0", "ell_cv=0", "dense_fill=0.2"]],
    rejects: [["unit_tiles=0"], ["dense_fill=2"], ["ell_cv=-1"], ["x=1"]],
}

#[test]
fn format_rules() {
    let r = Rules::default();
    let z = [0u8; TILE];
    let mut rows = z;
    rows[0] = 12;
    assert_eq!(choose_format(12, &rows, &z, &r), Format::Coo);
    assert_eq!(
        choose_format(192, &[12; TILE], &[12; TILE], &r),
        Format::Dense
    );
    let mut rows = z;
    rows[3] = 16;
    assert_eq!(choose_format(16, &rows, &[1; TILE], &r), Format::DenseRow);
    let mut cols = z;
    cols[5] = 16;
    assert_eq!(choose_format(16, &[1; TILE], &cols, &r), Format::DenseCol);
    let rows = [3u8, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4];
    assert_eq!(choose_format(49, &rows, &[3; TILE], &r), Format::Ell);
    let rows = [1u8, 9, 1, 9, 1, 9, 1, 9, 1, 9, 1, 9, 1, 9, 1, 9];
    assert_eq!(choose_format(80, &rows, &[5; TILE], &r), Format::Csr);
}

/// A 20x40 matrix with one tile of each format in tile row 0, a deferred tile and 9 tiles
/// in tile row 1 (split into units of 4, 4, 1).
#[test]
fn worked_example_layout() {
    let mut t: Vec<(usize, usize, f64)> = Vec::new();
    let mut v = 1.0;
    let mut push = |r: usize, c: usize, t: &mut Vec<(usize, usize, f64)>| {
        t.push((r, c, v));
        v += 1.0;
    };
    // tile (0,0): CSR (irregular rows 1 and 9 entries, 16 rows)
    for r in 0..16 {
        for c in 0..(if r % 2 == 0 { 1 } else { 9 }) {
            push(r, c, &mut t);
        }
    }
    // tile (0,1): one full row 7 -> dense-row
    for c in 16..32 {
        push(7, c, &mut t);
    }
    // tile (0,2) (cols 32..40, right edge): 2 entries -> deferred
    push(0, 33, &mut t);
    push(15, 39, &mut t);
    // tile row 1: 9 tiles... only 40 columns = 3 tile columns; use rows 16..20, 3 tiles
    for c in 0..40 {
        push(16 + c % 4, c, &mut t);
    }
    let mut coo = crate::matrix::Coo::new(20, 40).unwrap();
    for (r, c, v) in t {
        coo.push(r, c, v).unwrap();
    }
    let a = coo.to_csr();
    let l = TileLayout::build(&a, Rules::default());
    // tile row 0: CSR, dense-row; tile row 1: three tiles of 16, 16, 8 -> ELL-like? check fmts
    assert_eq!(l.tile_col[..2], [0, 1]);
    assert_eq!(l.tile_info[0] & 0xff, Format::Csr as u32);
    assert_eq!(l.tile_info[1] & 0xff, Format::DenseRow as u32);
    assert_eq!(l.def_row, vec![0, 15]);
    assert_eq!(l.def_col, vec![33, 39]);
    // CSR row starts: rows alternate 1 and 9 entries
    assert_eq!(&l.idx[..4], &[0, 1, 10, 11]);
    assert_eq!(l.unit_row, vec![0, 1]);
    assert_eq!(l.unit_count, vec![2, 3]);
    check_layout("tilespmv worked example", &a, &l);
    let l1 = TileLayout::build(
        &a,
        Rules {
            unit_tiles: 1,
            ..Rules::default()
        },
    );
    assert_eq!(l1.unit_count, vec![1, 1, 1, 1, 1]);
    check_layout("tilespmv worked example, units of 1", &a, &l1);
}
