//! The Matrix Market writer (NIST Matrix Market exchange format, Boisvert, Pozo & Remington
//! 1996, §3.1 coordinate format): `coordinate real general`, one 1-based `row col value` line per
//! stored entry in row-major order, gzip-compressed when the file name ends in `.gz`.
//!
//! Values are written in the shortest decimal form that parses back to the same bits (Rust's
//! float formatting), in the precision of `T`, so write → read round-trips exactly. Rows are
//! formatted in parallel blocks and written in order. The text has no offset width: a matrix of
//! either ([`Offset`]) is written the same way. A file is written under a temporary name beside
//! it and renamed when complete (as the [`super::cache`] is), so a failed write leaves no partial
//! file.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use rayon::prelude::*;

use crate::error::Result;
use crate::matrix::Csr;
use crate::scalar::{Offset, Precision, Scalar};

/// Appends `v` in its shortest round-trip form: positional for moderate magnitudes, with an
/// exponent otherwise (so 1e-300 does not become 300 zeros).
fn push_value<T: Scalar>(out: &mut String, v: T) {
    let x = v.to_f64();
    let a = x.abs();
    let positional = a == 0.0 || !a.is_finite() || (1e-5..1e16).contains(&a);
    let r = match (positional, T::PRECISION) {
        (true, _) => write!(out, "{v}"),
        (false, Precision::F32) => write!(out, "{:e}", x as f32),
        (false, Precision::F64) => write!(out, "{x:e}"),
    };
    debug_assert!(r.is_ok());
}

/// Formats rows `lo..hi` as entry lines.
fn format_rows<T: Scalar, O: Offset>(a: &Csr<T, O>, lo: usize, hi: usize) -> String {
    let ptr = a.row_ptr();
    let mut s = String::with_capacity((ptr[hi].to_usize() - ptr[lo].to_usize()) * 28);
    for i in lo..hi {
        let (cols, vals) = a.row(i);
        for (&j, &v) in cols.iter().zip(vals) {
            let r = write!(s, "{} {} ", i + 1, j + 1);
            debug_assert!(r.is_ok());
            push_value(&mut s, v);
            s.push('\n');
        }
    }
    s
}

/// Writes the matrix as Matrix Market text to any writer.
pub fn write_matrix_market_to<T: Scalar, O: Offset, W: Write>(
    out: &mut W,
    a: &Csr<T, O>,
) -> std::io::Result<()> {
    writeln!(out, "%%MatrixMarket matrix coordinate real general")?;
    writeln!(out, "% written by spmvkit {}", env!("CARGO_PKG_VERSION"))?;
    writeln!(out, "{} {} {}", a.nrows(), a.ncols(), a.nnz())?;
    // Blocks of about 64k entries, formatted in parallel a batch at a time.
    let n = a.nrows();
    let mut bounds = vec![0usize];
    let mut last = 0usize;
    for i in 1..n {
        let p = a.row_ptr()[i].to_usize();
        if p - last >= 1 << 16 {
            bounds.push(i);
            last = p;
        }
    }
    bounds.push(n);
    let blocks: Vec<(usize, usize)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
    let batch = rayon::current_num_threads().max(1) * 4;
    for group in blocks.chunks(batch) {
        let texts: Vec<String> = group
            .par_iter()
            .map(|&(lo, hi)| format_rows(a, lo, hi))
            .collect();
        for t in texts {
            out.write_all(t.as_bytes())?;
        }
    }
    out.flush()
}

/// Writes `a` to `path` as `coordinate real general`; gzip-compressed if the name ends in `.gz`.
pub fn write_matrix_market<T: Scalar, O: Offset>(
    path: impl AsRef<Path>,
    a: &Csr<T, O>,
) -> Result<()> {
    let path = path.as_ref();
    let gz = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
    super::write_via_temp(path, |w| {
        if gz {
            let mut enc = flate2::write::GzEncoder::new(w, flate2::Compression::default());
            write_matrix_market_to(&mut enc, a)?;
            enc.finish().map(|_| ())
        } else {
            write_matrix_market_to(w, a)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extreme_values_round_trip() {
        let vals = vec![1e-300, -0.1, 3.0, f64::MAX, 5e-324, 123_456_789.123_456_79];
        let n = vals.len();
        let a = Csr::new(
            1,
            n,
            vec![0, n as u32],
            (0..n as u32).collect(),
            vals.clone(),
        )
        .unwrap();
        let mut buf = Vec::new();
        write_matrix_market_to(&mut buf, &a).unwrap();
        let b: Csr<f64> = super::super::parse_matrix_market_bytes(&buf).unwrap();
        assert_eq!(a, b);
        let mut wide = Vec::new();
        write_matrix_market_to(&mut wide, &a.with_offsets::<u64>().unwrap()).unwrap();
        assert_eq!(wide, buf, "the text has no offset width");
        let text = String::from_utf8(buf).unwrap();
        assert!(text.contains("1 1 1e-300\n"), "{text}");
    }
}
