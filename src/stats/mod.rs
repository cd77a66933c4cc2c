//! Statistics, one of each: the median, the coefficient of variation, the nearest-rank percentile of
//! a histogram, and the bootstrap interval of a median. A leaf: imports nothing of parkbench.

pub mod bootstrap;

/// Median of values; the mean of the two middle values for an even count; `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some(f64::midpoint(v[n / 2 - 1], v[n / 2])),
    }
}

/// Coefficient of variation: population standard deviation ÷ mean. `None` when empty or the mean is 0.
pub fn cv(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if mean == 0.0 {
        return None;
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    Some(var.sqrt() / mean)
}

/// The nearest-rank percentile of a histogram of [value, count] pairs: the smallest value whose
/// cumulative count reaches ⌈p/100 × total⌉. `None` for an empty histogram.
pub fn percentile(hist: &[[u64; 2]], p: f64) -> Option<u64> {
    let mut sorted = hist.to_vec();
    sorted.sort_unstable();
    let total: u64 = sorted.iter().map(|[_, c]| c).sum();
    if total == 0 {
        return None;
    }
    // In integers (p in thousandths of a percent): 99.9 % of 1000 is rank 999, where floats give
    // ⌈999.0000000000001⌉ = 1000.
    let milli = (p * 1000.0).round() as u128;
    let rank = (milli * u128::from(total)).div_ceil(100_000).max(1) as u64;
    let mut seen = 0;
    for [value, count] in sorted {
        seen += count;
        if seen >= rank {
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn cv_is_the_population_form() {
        // mean 99.5333, population sd 0.65997.
        let got = cv(&[100.0, 100.0, 98.6]).unwrap();
        assert!((got - 0.006_631).abs() < 1e-5, "{got}");
        assert_eq!(cv(&[1.0]), Some(0.0));
        assert_eq!(cv(&[0.0, 0.0]), None);
        assert_eq!(cv(&[]), None);
    }
}
