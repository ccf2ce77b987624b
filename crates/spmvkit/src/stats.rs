//! Sample statistics, the one place spmvkit reduces a list of numbers: the median, min and max of
//! timing samples (GPU event timings in [`crate::gpu::timing`], CPU wall-clock samples in
//! [`crate::bench::Timing`]), the median and quantiles the report takes of per-call samples and
//! of per-matrix figures, and the geometric and arithmetic means of its summaries.
//!
//! The median of an even count is the mean of the two middle values.

/// The median of values already sorted ascending; `None` when there are none.
fn median_of_sorted(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some(0.5 * (sorted[n / 2 - 1] + sorted[n / 2])),
    }
}

/// The finite values, sorted ascending.
fn finite_sorted(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// (median, min, max) of timing samples, `None` when there are none. Every sample counts, as
/// recorded (a timing keeps its samples as measured; [`crate::bench::Timing::from_samples`]
/// drops non-finite ones first).
pub fn sample_stats(samples: &[f64]) -> Option<(f64, f64, f64)> {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = median_of_sorted(&sorted)?;
    Some((median, sorted[0], sorted[sorted.len() - 1]))
}

/// The median of the finite values; `None` when there are none.
///
/// ```
/// use spmvkit::stats::median;
/// assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
/// assert_eq!(median(&[4.0, 1.0, f64::NAN, 2.0, 3.0]), Some(2.5));
/// assert_eq!(median(&[]), None);
/// ```
pub fn median(values: &[f64]) -> Option<f64> {
    median_of_sorted(&finite_sorted(values))
}

/// The `p`-quantile (0 ≤ p ≤ 1) of the finite values, by linear interpolation between order
/// statistics: position p·(n − 1) in the sorted values. `None` when there are none.
pub fn quantile(values: &[f64], p: f64) -> Option<f64> {
    let v = finite_sorted(values);
    if v.is_empty() {
        return None;
    }
    let pos = p.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    Some(v[lo] + (v[hi] - v[lo]) * (pos - lo as f64))
}

/// Geometric mean; `None` when empty or when a value is not finite and positive.
pub fn geomean(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    Some((values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp())
}

/// Arithmetic mean; `None` when empty or when a value is not finite.
pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    Some(values.iter().sum::<f64>() / values.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_min_max_of_odd_even_and_empty_samples() {
        assert_eq!(sample_stats(&[3.0, 1.0, 2.0]), Some((2.0, 1.0, 3.0)));
        assert_eq!(sample_stats(&[4.0, 1.0, 2.0, 3.0]), Some((2.5, 1.0, 4.0)));
        assert_eq!(sample_stats(&[]), None);
    }

    #[test]
    fn median_skips_values_that_are_not_finite() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[f64::INFINITY, 1.0, f64::NAN]), Some(1.0));
        assert_eq!(median(&[f64::NAN]), None);
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn quantiles_interpolate_between_order_statistics() {
        let v = [5.0, 1.0, 4.0, 2.0, 3.0];
        assert_eq!(quantile(&v, 0.25), Some(2.0));
        assert_eq!(quantile(&v, 0.75), Some(4.0));
        assert_eq!(quantile(&[1.0, 2.0], 0.25), Some(1.25));
        assert_eq!(quantile(&[7.0], 0.25), Some(7.0));
        assert_eq!(quantile(&[f64::NAN], 0.5), None);
    }

    #[test]
    fn geomean_of_known_values() {
        assert!((geomean(&[1.0, 4.0]).unwrap() - 2.0).abs() < 1e-12);
        assert!((geomean(&[2.0, 8.0, 4.0]).unwrap() - 4.0).abs() < 1e-12);
        assert!((geomean(&[3.0]).unwrap() - 3.0).abs() < 1e-12);
        assert_eq!(geomean(&[]), None);
        assert_eq!(geomean(&[1.0, 0.0]), None);
        assert_eq!(geomean(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn mean_of_known_values() {
        assert_eq!(mean(&[1.0, 2.0, 6.0]), Some(3.0));
        assert_eq!(mean(&[]), None);
        assert_eq!(mean(&[1.0, f64::INFINITY]), None);
    }
}
