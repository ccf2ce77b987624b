//! Fuzz target for the Matrix Market parser (issue #2): arbitrary bytes must give a matrix or a
//! typed error, never a panic, and an accepted matrix must satisfy the CSR invariants and
//! survive a write → read round trip.
//!
//! Inputs whose size line declares more than 2^20 rows are skipped: a CSR of n rows needs n+1
//! row pointers however few entries it has, so a valid 30-byte file can legitimately ask for
//! gigabytes; everything sized by entries is bounded by the input length.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spmvkit::io;

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = io::parse_header_bytes(None, data) {
        if h.nrows > 1 << 20 {
            return;
        }
    }
    let Ok(a) = io::parse_matrix_market_bytes::<f64>(data) else {
        return;
    };
    let checked = spmvkit::Csr::new(
        a.nrows(),
        a.ncols(),
        a.row_ptr().to_vec(),
        a.col_idx().to_vec(),
        a.vals().to_vec(),
    )
    .expect("reader produced an invalid CSR");
    let mut text = Vec::new();
    io::write_matrix_market_to(&mut text, &checked).expect("write to memory");
    let b = io::parse_matrix_market_bytes::<f64>(&text).expect("re-read of written text");
    assert_eq!(a.row_ptr(), b.row_ptr());
    assert_eq!(a.col_idx(), b.col_idx());
    for (x, y) in a.vals().iter().zip(b.vals()) {
        assert!(x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()));
    }
    let _ = io::parse_matrix_market_bytes::<f32>(data);
    let _ = io::matrix_market_info_bytes(data);
});
