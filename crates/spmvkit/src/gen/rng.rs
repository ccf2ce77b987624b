//! Deterministic random streams for the generators (issue #2): SplitMix64 to derive seeds and
//! xoshiro256++ for the streams, one independent stream per (seed, purpose, chunk), so that a
//! generated matrix depends on its seed only, never on the number of threads.
//!
//! Also the sampling helpers every random kind shares: bounded integers, the value distribution
//! and sorted samples of distinct columns.

/// One SplitMix64 step: advances `state` and returns a well-mixed 64-bit value.
#[inline]
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    mix64(*state)
}

/// The SplitMix64 finaliser: a bijective 64-bit mixing function.
#[inline]
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Purposes of streams, so that two phases of one generator never share random numbers.
#[derive(Clone, Copy)]
#[repr(u64)]
pub(crate) enum Purpose {
    Lengths = 1,
    Rounding = 2,
    Fill = 3,
    Edges = 4,
    Permute = 5,
    Points = 6,
    Renumber = 7,
}

/// xoshiro256++ (Blackman & Vigna): fast, 256 bits of state, good statistical quality.
#[derive(Clone, Debug)]
pub(crate) struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator seeded from one 64-bit value through SplitMix64.
    pub(crate) fn from_seed(seed: u64) -> Self {
        let mut sm = seed;
        let s = [
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
        ];
        Rng { s }
    }

    /// The stream of chunk `chunk` for `purpose` under `seed`.
    pub(crate) fn stream(seed: u64, purpose: Purpose, chunk: u64) -> Self {
        let k = mix64(seed ^ 0x5350_4D56_4B49_5447)
            ^ mix64((purpose as u64).wrapping_mul(0xA24B_AED4_963E_E407))
            ^ mix64(
                chunk
                    .wrapping_add(0x9FB2_1C65_1E98_DF25)
                    .wrapping_mul(0xD6E8_FEB8_6659_FD93),
            );
        Rng::from_seed(k)
    }

    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `[0, n)` (Lemire's multiply-high; the bias, below 2^-32 for the sizes used
    /// here, does not matter for test matrices). `n` must be positive.
    #[inline]
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    #[inline]
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A matrix value: see [`value_from_bits`].
    #[inline]
    pub(crate) fn value(&mut self) -> f64 {
        value_from_bits(self.next_u64())
    }
}

/// Maps 64 random bits to a value in `[-1, -1/16] ∪ [1/16, 1]`: a random sign times k/2^20 with
/// k uniform in 2^16..=2^20. Every such value is exact in f32, so the f32 and f64 versions of a
/// generated matrix hold the same numbers.
#[inline]
pub(crate) fn value_from_bits(bits: u64) -> f64 {
    const LO: u64 = 1 << 16;
    const SPAN: u64 = (1 << 20) - LO + 1;
    let k = LO + (((bits >> 1) as u128 * SPAN as u128) >> 63) as u64;
    let v = k as f64 / (1u64 << 20) as f64;
    if bits & 1 == 1 {
        -v
    } else {
        v
    }
}

/// Fills `out` with `out.len()` distinct values of `0..n`, sorted ascending, each value added to
/// `base`. Selection sampling (Knuth's algorithm S) when the sample is a large share of `n`,
/// draw–sort–redraw otherwise. Requires `out.len() as u64 <= n`.
pub(crate) fn sample_distinct(rng: &mut Rng, n: u64, base: u32, out: &mut [u32]) {
    let k = out.len();
    if k == 0 {
        return;
    }
    debug_assert!(k as u64 <= n);
    if (k as u64).saturating_mul(4) >= n {
        let mut need = k as u64;
        let mut w = 0;
        for j in 0..n {
            if rng.below(n - j) < need {
                out[w] = base + j as u32;
                w += 1;
                need -= 1;
                if need == 0 {
                    break;
                }
            }
        }
        return;
    }
    let mut m = 0;
    while m < k {
        for slot in &mut out[m..] {
            *slot = base + rng.below(n) as u32;
        }
        out.sort_unstable();
        m = 1;
        for r in 1..k {
            if out[r] != out[m - 1] {
                out[m] = out[r];
                m += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_differ_and_repeat() {
        let a: Vec<u64> = {
            let mut r = Rng::stream(1, Purpose::Fill, 0);
            (0..4).map(|_| r.next_u64()).collect()
        };
        let b: Vec<u64> = {
            let mut r = Rng::stream(1, Purpose::Fill, 0);
            (0..4).map(|_| r.next_u64()).collect()
        };
        let c: Vec<u64> = {
            let mut r = Rng::stream(1, Purpose::Fill, 1);
            (0..4).map(|_| r.next_u64()).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn values_are_f32_exact_and_bounded() {
        let mut r = Rng::from_seed(3);
        for _ in 0..10_000 {
            let v = r.value();
            assert!((1.0 / 16.0..=1.0).contains(&v.abs()), "{v}");
            assert_eq!(v as f32 as f64, v);
        }
    }

    #[test]
    fn distinct_samples_are_sorted_and_in_range() {
        let mut r = Rng::from_seed(5);
        for &(n, k) in &[
            (10u64, 10usize),
            (10, 3),
            (1000, 10),
            (1000, 900),
            (1, 1),
            (50, 0),
        ] {
            let mut out = vec![0u32; k];
            sample_distinct(&mut r, n, 7, &mut out);
            assert!(out.windows(2).all(|w| w[0] < w[1]));
            assert!(out.iter().all(|&c| (7..7 + n as u32).contains(&c)));
        }
    }
}
