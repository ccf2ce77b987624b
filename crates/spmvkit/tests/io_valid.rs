//! Small valid files covering each format × field × symmetry combination, checked against their
//! dense matrices, in both precisions and through every entry point.

use std::path::{Path, PathBuf};

use spmvkit::io::{self, MmField, MmFormat, MmSymmetry};
use spmvkit::{Csr, Scalar};

fn path(name: &str) -> PathBuf {
    Path::new("tests/data/valid").join(name)
}

fn dense<T: Scalar>(a: &Csr<T>) -> Vec<Vec<f64>> {
    if a.nrows() == 0 {
        return Vec::new();
    }
    let mut d = vec![vec![0.0; a.ncols()]; a.nrows()];
    for (i, row) in d.iter_mut().enumerate() {
        let (c, v) = a.row(i);
        for (&j, &x) in c.iter().zip(v) {
            row[j as usize] = x.to_f64();
        }
    }
    d
}

/// A dense matrix written row by row, rows separated by `;` and entries by spaces.
fn rows(text: &str) -> Vec<Vec<f64>> {
    text.split(';')
        .filter(|r| !r.trim().is_empty())
        .map(|r| r.split_whitespace().map(|x| x.parse().unwrap()).collect())
        .collect()
}

/// (file, dense matrix, stored nnz of the CSR).
fn cases() -> Vec<(&'static str, Vec<Vec<f64>>, usize)> {
    vec![
        (
            "coordinate_real_general.mtx",
            rows("2 0 -1 0; 0 0.25 0 0; 0 0 0 -2"),
            4,
        ),
        (
            "coordinate_real_symmetric.mtx",
            rows("4 -1 0; -1 0 -2; 0 -2 5"),
            6,
        ),
        (
            "coordinate_real_symmetric.mtx.gz",
            rows("4 -1 0; -1 0 -2; 0 -2 5"),
            6,
        ),
        (
            "coordinate_real_skew_symmetric.mtx",
            rows("0 -1.5 2; 1.5 0 0; -2 0 0"),
            4,
        ),
        ("coordinate_real_hermitian.mtx", rows("3 7; 7 0"), 3),
        ("coordinate_integer_general.mtx", rows("0 -7 0; 3 0 12"), 3),
        (
            "coordinate_integer_symmetric.mtx",
            rows("0 0 2; 0 9 0; 2 0 0"),
            3,
        ),
        (
            "coordinate_integer_skew_symmetric.mtx",
            rows("0 -4; 4 0"),
            2,
        ),
        ("coordinate_pattern_general.mtx", rows("1 0 1; 0 1 0"), 3),
        (
            "coordinate_pattern_symmetric.mtx",
            rows("1 0 1; 0 0 1; 1 1 0"),
            5,
        ),
        ("array_real_general.mtx", rows("1 3 0; 2 4 6"), 6),
        ("array_real_symmetric.mtx", rows("1 2 3; 2 4 5; 3 5 6"), 9),
        (
            "array_real_skew_symmetric.mtx",
            rows("0 -1 -2; 1 0 -3; 2 3 0"),
            6,
        ),
        ("array_real_hermitian.mtx", rows("1 2; 2 3"), 4),
        ("array_integer_general.mtx", rows("1 3; -2 -4"), 4),
        ("array_integer_symmetric.mtx", rows("1 2; 2 3"), 4),
        ("crlf_blank_lines_mixed_case.mtx", rows("1 0; 0 2"), 2),
        ("empty_matrix.mtx", vec![], 0),
        ("no_entries.mtx", vec![vec![0.0; 5]; 2], 0),
        // Fuzzing regression: a 0 x (2^31-1) array once looped over its 2^31-1 empty columns.
        ("array_zero_rows_max_columns.mtx", vec![], 0),
        ("no_final_newline.mtx", rows("0 0; 3.5 0"), 1),
    ]
}

#[test]
fn valid_files_give_their_dense_matrices() {
    for (name, want, nnz) in cases() {
        let a: Csr<f64> = io::read_matrix_market(path(name)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(dense(&a), want, "{name}");
        assert_eq!(a.nnz(), nnz, "{name}");
        let b: Csr<f32> = io::load(path(name)).unwrap();
        assert_eq!(dense(&b), want, "{name} (f32)");
        let bytes = std::fs::read(path(name)).unwrap();
        let c: Csr<f64> = io::parse_matrix_market_bytes(&bytes).unwrap();
        assert_eq!(c, a, "{name} (bytes)");
        let h = io::read_header(path(name)).unwrap();
        assert_eq!(
            (h.nrows as usize, h.ncols as usize),
            (a.nrows(), a.ncols()),
            "{name}"
        );
        let (d, info) = io::read_matrix_market_with_info::<f64>(path(name)).unwrap();
        assert_eq!(d, a);
        assert_eq!(info.nnz as usize, nnz);
        assert_eq!(info, io::read_matrix_market_info(path(name)).unwrap());
    }
}

#[test]
fn every_combination_is_covered() {
    let mut seen = std::collections::HashSet::new();
    for (name, _, _) in cases() {
        let h = io::read_header(path(name)).unwrap();
        seen.insert((h.format, h.field, h.symmetry));
    }
    for f in [MmField::Real, MmField::Integer] {
        for s in [
            MmSymmetry::General,
            MmSymmetry::Symmetric,
            MmSymmetry::SkewSymmetric,
        ] {
            assert!(seen.contains(&(MmFormat::Coordinate, f, s)), "{f} {s}");
        }
    }
    assert!(seen.contains(&(MmFormat::Coordinate, MmField::Real, MmSymmetry::Hermitian)));
    assert!(seen.contains(&(MmFormat::Coordinate, MmField::Pattern, MmSymmetry::General)));
    assert!(seen.contains(&(
        MmFormat::Coordinate,
        MmField::Pattern,
        MmSymmetry::Symmetric
    )));
    for s in [
        MmSymmetry::General,
        MmSymmetry::Symmetric,
        MmSymmetry::SkewSymmetric,
        MmSymmetry::Hermitian,
    ] {
        assert!(
            seen.contains(&(MmFormat::Array, MmField::Real, s)),
            "array {s}"
        );
    }
}

#[test]
fn info_counts_duplicates_and_zeros() {
    let info = io::read_matrix_market_info(path("coordinate_real_general.mtx")).unwrap();
    assert_eq!(
        (info.stored, info.expanded, info.nnz, info.duplicates),
        (5, 5, 4, 1)
    );
    let info = io::read_matrix_market_info(path("coordinate_real_symmetric.mtx")).unwrap();
    assert_eq!(
        (info.stored, info.stored_diagonal, info.expanded, info.nnz),
        (4, 2, 6, 6)
    );
    let info = io::read_matrix_market_info(path("array_real_general.mtx")).unwrap();
    assert_eq!((info.nnz, info.explicit_zeros, info.nnz_nonzero), (6, 1, 5));
    let info = io::read_matrix_market_info("tests/data/malformed/complex_general.mtx").unwrap();
    assert_eq!((info.nnz, info.nnz_nonzero), (1, 1));
}

#[test]
fn nan_and_infinity_are_accepted_literally() {
    let a: Csr<f64> = io::read_matrix_market(path("nan_inf_values.mtx")).unwrap();
    let d = dense(&a);
    assert!(d[0][0].is_nan());
    assert_eq!(d[0][1], f64::INFINITY);
    assert_eq!(d[1][1], f64::NEG_INFINITY);
}
