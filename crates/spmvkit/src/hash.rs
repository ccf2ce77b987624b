//! Stable 64-bit hashes (FNV-1a): of names, for the tune/test split
//! ([`crate::methods::auto::model::split_of`]) and the NCCL link directories, and of a result's
//! bit patterns, the digest of y a benchmark record keeps ([`y_digest`]) so that the results of
//! two binaries can be compared bit for bit.

use crate::scalar::Scalar;

const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// 64-bit FNV-1a of `bytes`.
///
/// ```
/// assert_eq!(spmvkit::hash::fnv1a(b""), 0xcbf2_9ce4_8422_2325);
/// assert_eq!(spmvkit::hash::fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
/// ```
pub fn fnv1a(bytes: &[u8]) -> u64 {
    extend(OFFSET, bytes)
}

/// FNV-1a of `bytes` continued from the hash `h` of what came before.
fn extend(h: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

/// FNV-1a of the little-endian bit patterns of `y`, as 16 hex digits: equal digests mean equal
/// vectors bit for bit (−0.0 and 0.0, and NaN payloads, differ), up to the hash's collisions.
///
/// ```
/// use spmvkit::hash::y_digest;
/// assert_eq!(y_digest(&[1.0f64, 2.0]), y_digest(&[1.0f64, 2.0]));
/// assert_ne!(y_digest(&[0.0f64]), y_digest(&[-0.0f64]));
/// ```
pub fn y_digest<T: Scalar>(y: &[T]) -> String {
    let h = y.iter().fold(OFFSET, |h, v| {
        extend(h, &v.to_bits_u64().to_le_bytes()[..T::BYTES])
    });
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_sees_one_flipped_bit_and_is_the_bytes_hash() {
        let a = [1.5f32, -3.25, 0.0];
        let mut b = a;
        b[1] = f32::from_bits(b[1].to_bits() ^ 1);
        assert_ne!(y_digest(&a), y_digest(&b));
        let bytes: Vec<u8> = a.iter().flat_map(|v| v.to_bits().to_le_bytes()).collect();
        assert_eq!(y_digest(&a), format!("{:016x}", fnv1a(&bytes)));
    }
}
