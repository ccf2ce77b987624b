//! Every file of `tests/data/malformed/` must fail with a typed error (never a panic) that names
//! the file and the right line. Each file holds one defect and is named after it.

use std::path::{Path, PathBuf};

use spmvkit::{io, Error};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Parse(u64),
    Unsupported,
}
use Kind::*;

/// (file, expected error, a word the message must contain).
const CASES: &[(&str, Kind, &str)] = &[
    ("empty.mtx", Parse(1), "empty"),
    ("bad_banner.mtx", Parse(1), "banner"),
    ("banner_missing_words.mtx", Parse(1), "5 words"),
    ("unknown_object.mtx", Parse(1), "object"),
    ("unknown_format.mtx", Parse(1), "format"),
    ("unknown_field.mtx", Parse(1), "field"),
    ("unknown_symmetry.mtx", Parse(1), "symmetry"),
    ("array_pattern.mtx", Parse(1), "array pattern"),
    ("pattern_skew_symmetric.mtx", Parse(1), "pattern"),
    ("binary_garbage.mtx", Parse(1), "banner"),
    ("missing_size_line.mtx", Parse(3), "size line"),
    ("size_line_non_numeric.mtx", Parse(3), "size line"),
    ("size_line_too_few_fields.mtx", Parse(2), "size line"),
    ("size_line_too_many_fields.mtx", Parse(2), "size line"),
    ("size_line_negative.mtx", Parse(2), "size line"),
    ("nonsquare_symmetric.mtx", Parse(2), "square"),
    ("too_few_entries_truncated.mtx", Parse(5), "end of file"),
    ("too_many_entries.mtx", Parse(5), "too many entries"),
    ("index_zero.mtx", Parse(4), "row index 0"),
    ("row_out_of_range.mtx", Parse(4), "row index 4 out of range"),
    ("column_out_of_range.mtx", Parse(5), "column index"),
    ("non_numeric_value.mtx", Parse(4), "bad value"),
    ("non_numeric_index.mtx", Parse(4), "row index"),
    ("negative_index.mtx", Parse(4), "row index"),
    ("missing_value.mtx", Parse(4), "missing value"),
    ("missing_column_index.mtx", Parse(4), "missing column"),
    ("truncated_mid_line.mtx", Parse(5), "missing column"),
    ("extra_field.mtx", Parse(4), "unexpected text"),
    ("value_with_trailing_junk.mtx", Parse(4), "unexpected text"),
    (
        "integer_field_with_decimal.mtx",
        Parse(4),
        "unexpected text",
    ),
    (
        "symmetric_upper_triangle_entry.mtx",
        Parse(5),
        "above the diagonal",
    ),
    (
        "hermitian_upper_triangle_entry.mtx",
        Parse(4),
        "above the diagonal",
    ),
    ("skew_symmetric_diagonal_entry.mtx", Parse(4), "diagonal"),
    ("array_too_few_values.mtx", Parse(6), "end of file"),
    ("array_too_many_values.mtx", Parse(7), "too many entries"),
    (
        "array_two_values_on_a_line.mtx",
        Parse(3),
        "unexpected text",
    ),
    (
        "complex_general.mtx",
        Unsupported,
        "complex matrices are not supported",
    ),
    ("too_large_rows.mtx", Parse(2), "rows = 3000000000 exceeds"),
    ("too_large_nnz.mtx", Parse(2), "nnz = 2147483648 exceeds"),
    ("huge_nnz_claim_tiny_file.mtx", Parse(4), "end of file"),
    ("size_line_overflow.mtx", Parse(2), "32-bit index limit"),
    ("truncated_gzip.mtx.gz", Parse(5), "gzip"),
];

fn dir() -> PathBuf {
    Path::new("tests/data/malformed").to_path_buf()
}

fn check(name: &str, got: spmvkit::Result<spmvkit::Csr<f64>>, want: Kind, word: &str) {
    let err = match got {
        Ok(a) => panic!("{name}: accepted as a {}x{} matrix", a.nrows(), a.ncols()),
        Err(e) => e,
    };
    let msg = err.to_string();
    let kind = match &err {
        Error::Parse { line, .. } => Parse(*line),
        Error::Unsupported { .. } => Unsupported,
        other => panic!("{name}: unexpected error kind {other:?}"),
    };
    assert_eq!(kind, want, "{name}: {msg}");
    assert!(msg.contains(word), "{name}: message lacks '{word}': {msg}");
    if let Parse(line) = want {
        assert!(msg.contains(&format!("line {line}")), "{name}: {msg}");
    }
}

#[test]
fn every_malformed_file_is_a_typed_error_with_its_line() {
    let mut listed: Vec<&str> = CASES.iter().map(|c| c.0).collect();
    listed.sort();
    let mut on_disk: Vec<String> = std::fs::read_dir(dir())
        .expect("tests/data/malformed")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let missing: Vec<&String> = on_disk
        .iter()
        .filter(|f| !listed.contains(&f.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "malformed files without an expectation: {missing:?}"
    );
    assert!(CASES.len() >= 20);
    for &(name, want, word) in CASES {
        let path = dir().join(name);
        check(name, io::read_matrix_market::<f64>(&path), want, word);
        check(name, io::load::<f64>(&path), want, word);
        // The in-memory parser must agree (without a path in the message).
        let bytes = std::fs::read(&path).unwrap();
        check(
            name,
            io::parse_matrix_market_bytes::<f64>(&bytes),
            want,
            word,
        );
        let f32 = io::parse_matrix_market_bytes::<f32>(&bytes);
        assert!(f32.is_err(), "{name}: f32 parse accepted it");
        let msg = io::read_matrix_market::<f64>(&path)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains(name),
            "{name}: the message should name the file: {msg}"
        );
    }
}

#[test]
fn header_reader_agrees_on_prologue_errors() {
    for &(name, want, _) in CASES {
        let h = io::read_header(dir().join(name));
        if let (Err(Error::Parse { line, .. }), Parse(w)) = (&h, want) {
            assert_eq!(*line, w, "{name}");
        }
    }
    assert!(io::read_header(dir().join("too_large_rows.mtx")).is_err());
    let h = io::read_header(dir().join("huge_nnz_claim_tiny_file.mtx")).unwrap();
    assert_eq!(h.declared_entries, 2_000_000_000);
}
