//! Write → read round trips: random small matrices through `.mtx` and `.mtx.gz` text and the
//! binary cache must come back bit for bit, in both precisions (any NaN, e.g. from summed
//! duplicate infinities, reads back as a NaN; its payload is not kept by the text format).

use proptest::prelude::*;
use spmvkit::{io, Coo, Csr, Scalar};

fn matrix<T: Scalar>(nrows: usize, ncols: usize, entries: &[(usize, usize, f64)]) -> Csr<T> {
    let mut coo = Coo::new(nrows, ncols).unwrap();
    for &(i, j, v) in entries {
        coo.push(i % nrows, j % ncols, T::from_f64(v)).unwrap();
    }
    coo.to_csr()
}

fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("finite", |v| v.is_finite()),
        -1e3..1e3f64,
        Just(0.0),
        Just(-0.0),
        Just(1e-310),
        Just(f64::MAX),
    ]
}

fn same_bits<T: Scalar>(a: &Csr<T>, b: &Csr<T>) -> bool {
    a.row_ptr() == b.row_ptr()
        && a.col_idx() == b.col_idx()
        && a.vals().iter().zip(b.vals()).all(|(x, y)| {
            x.to_bits_u64() == y.to_bits_u64() || (x.to_f64().is_nan() && y.to_f64().is_nan())
        })
        && (a.nrows(), a.ncols()) == (b.nrows(), b.ncols())
}

fn round_trip<T: Scalar>(a: &Csr<T>, dir: &std::path::Path) {
    let mut text = Vec::new();
    io::write_matrix_market_to(&mut text, a).unwrap();
    let b: Csr<T> = io::parse_matrix_market_bytes(&text).unwrap();
    assert!(
        same_bits(a, &b),
        "text round trip\n{}",
        String::from_utf8_lossy(&text)
    );
    for name in ["m.mtx", "m.mtx.gz", "m.spmvkit"] {
        let p = dir.join(name);
        if name.ends_with("spmvkit") {
            io::write_cache(&p, a, None).unwrap();
        } else {
            io::write_matrix_market(&p, a).unwrap();
        }
        let c: Csr<T> = io::load(&p).unwrap();
        assert!(same_bits(a, &c), "{name}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn write_then_read_is_identity(
        nrows in 1usize..12,
        ncols in 1usize..12,
        entries in prop::collection::vec((0usize..12, 0usize..12, value()), 0..40),
    ) {
        let dir = tempfile::tempdir().unwrap();
        round_trip(&matrix::<f64>(nrows, ncols, &entries), dir.path());
        round_trip(&matrix::<f32>(nrows, ncols, &entries), dir.path());
    }
}
