//! The matrix values as a narrower storage holds them (issue #25, docs/precision.md): each value
//! rounded to f16, bf16 or f32 (round to nearest, ties to even) and widened back, exactly, to the
//! vectors' precision, with what the rounding cost. A plan with
//! [`ValueStorage`] other than `Same` prepares its method on these values, and the oracle
//! computes from them, so a method's check stays as tight as in the vectors' precision; the
//! conversion's own error is reported apart ([`Conversion`]).
//!
//! The rule: a finite value larger in magnitude than the storage's largest finite value (65504
//! in f16) is refused, naming its row, column and value; a nonzero value that rounds to zero
//! (below half the smallest subnormal) is kept as zero and counted in [`Conversion::to_zero`].
//! NaN and infinities stay what they are.

use rayon::prelude::*;

use super::Csr;
use crate::error::{Error, Result};
use crate::scalar::{Offset, Scalar, ValueStorage};

/// What rounding the values to a storage changed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Conversion {
    /// Entries whose stored value differs from the given one.
    pub changed: usize,
    /// Nonzero entries that became zero (underflow).
    pub to_zero: usize,
    /// The largest |stored − given| / |given| over the nonzero finite entries (1 for an entry
    /// that became zero).
    pub max_rel_err: f64,
}

/// `a` with its values rounded to `storage` (see the module doc for the rule), and what that
/// changed. `Same` returns a copy with nothing changed.
///
/// ```
/// use spmvkit::{matrix::round_values, Csr, ValueStorage};
/// let a = Csr::<f32>::new(1, 3, vec![0, 3], vec![0, 1, 2], vec![1.0, 1.0e-9, 0.1]).unwrap();
/// let (r, c) = round_values(&a, ValueStorage::F16).unwrap();
/// assert_eq!(r.vals(), &[1.0, 0.0, 0.099975586]);
/// assert_eq!((c.changed, c.to_zero), (2, 1));
/// let big = Csr::<f32>::new(1, 1, vec![0, 1], vec![0], vec![70000.0]).unwrap();
/// assert!(round_values(&big, ValueStorage::F16).unwrap_err().to_string().contains("row 0, column 0"));
/// ```
pub fn round_values<T: Scalar, O: Offset>(
    a: &Csr<T, O>,
    storage: ValueStorage,
) -> Result<(Csr<T, O>, Conversion)> {
    let limit = storage.max_finite();
    if let Some(k) = a
        .vals()
        .par_iter()
        .position_first(|v| v.to_f64().is_finite() && v.to_f64().abs() > limit)
    {
        let row = a.row_ptr().partition_point(|&p| p.to_usize() <= k) - 1;
        return Err(Error::InvalidArgument(format!(
            "value {} at row {row}, column {} does not fit in {storage} (largest finite {limit}); \
             scale the matrix or store its values wider",
            a.vals()[k],
            a.col_idx()[k]
        )));
    }
    let vals: Vec<T> = a.vals().par_iter().map(|&v| storage.round(v)).collect();
    let conv = a
        .vals()
        .par_iter()
        .zip(&vals)
        .map(|(&v, &r)| {
            let (v, r) = (v.to_f64(), r.to_f64());
            let changed = v.to_bits() != r.to_bits() && !(v.is_nan() && r.is_nan());
            let rel = if changed && v != 0.0 && v.is_finite() {
                ((r - v) / v).abs()
            } else {
                0.0
            };
            Conversion {
                changed: usize::from(changed),
                to_zero: usize::from(v != 0.0 && r == 0.0),
                max_rel_err: rel,
            }
        })
        .reduce(Conversion::default, |p, q| Conversion {
            changed: p.changed + q.changed,
            to_zero: p.to_zero + q.to_zero,
            max_rel_err: p.max_rel_err.max(q.max_rel_err),
        });
    Ok((Csr::with_pattern(a.pattern().clone(), vals)?, conv))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every 16-bit pattern that is a number: widened as the kernels widen it
    /// ([`ValueStorage::widen16`], the prelude's `widen_val`), it is a value the rounding keeps
    /// and whose stored bits are the pattern again, so the device reads exactly the host's
    /// rounded values.
    #[test]
    fn the_kernels_conversion_inverts_the_stored_bits() {
        for storage in [ValueStorage::F16, ValueStorage::Bf16] {
            for bits in 0..=u16::MAX {
                let v = storage.widen16(bits).unwrap();
                if v.is_nan() {
                    continue;
                }
                assert_eq!(
                    storage.round(v).to_bits(),
                    v.to_bits(),
                    "{storage} {bits:#06x}"
                );
                assert_eq!(storage.bits16(v), Some(bits), "{storage} {bits:#06x} ({v})");
            }
        }
        assert_eq!(ValueStorage::Bf16.widen16(0x3fc0), Some(1.5));
        assert_eq!(ValueStorage::F16.widen16(0x3e00), Some(1.5));
        assert_eq!(ValueStorage::F16.widen16(0x0001), Some(2f32.powi(-24)));
    }

    /// The rounding is round-to-nearest-even, the bits are the storage's, values at the limit
    /// pass and just past it are refused, and subnormals survive where the storage has them.
    #[test]
    fn rounding_follows_the_rule() {
        let v = [
            1.0f32,
            1.0 + 2f32.powi(-11),       // f16 tie: to even (1.0)
            1.0 + 3.0 * 2f32.powi(-11), // f16 tie: to even (1 + 2^-9)
            65504.0,                    // f16 max
            6.0e-8,                     // f16 subnormal (2^-24 = 5.96e-8)
            2.0e-8,                     // below half 2^-24: zero
            -0.0,
            1.0 + 2f32.powi(-8), // bf16 tie: to even (1.0)
        ];
        let a = Csr::<f32>::new(
            1,
            v.len(),
            vec![0, v.len() as u32],
            (0..v.len() as u32).collect(),
            v.to_vec(),
        )
        .unwrap();
        let (h, c) = round_values(&a, ValueStorage::F16).unwrap();
        assert_eq!(
            h.vals()[..5],
            [1.0, 1.0, 1.0 + 2f32.powi(-9), 65504.0, 2f32.powi(-24)]
        );
        assert_eq!(h.vals()[5], 0.0);
        assert_eq!(c.to_zero, 1);
        assert_eq!(ValueStorage::F16.bits16(h.vals()[3]), Some(0x7bff));
        assert_eq!(ValueStorage::F16.bits16(h.vals()[4]), Some(0x0001));
        let (b, _) = round_values(&a, ValueStorage::Bf16).unwrap();
        assert_eq!(b.vals()[7], 1.0);
        assert_eq!(ValueStorage::Bf16.bits16(b.vals()[0]), Some(0x3f80));
        let over = Csr::<f32>::new(2, 2, vec![0, 1, 2], vec![1, 0], vec![1.0, -65505.0]).unwrap();
        let e = round_values(&over, ValueStorage::F16)
            .unwrap_err()
            .to_string();
        assert!(e.contains("row 1, column 0") && e.contains("-65505"), "{e}");
        assert!(round_values(&over, ValueStorage::Bf16).is_ok());
        let wide = Csr::<f64>::new(1, 2, vec![0, 2], vec![0, 1], vec![1e300, 0.1]).unwrap();
        let e = round_values(&wide, ValueStorage::F32)
            .unwrap_err()
            .to_string();
        assert!(e.contains("row 0, column 0"), "{e}");
        let ok = Csr::<f64>::new(1, 1, vec![0, 1], vec![0], vec![0.1]).unwrap();
        let (r, c) = round_values(&ok, ValueStorage::F32).unwrap();
        assert_eq!(r.vals()[0], 0.1f32 as f64);
        assert!(c.max_rel_err > 0.0 && c.max_rel_err < f32::EPSILON as f64);
    }
}
