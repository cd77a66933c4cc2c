//! Bootstrap intervals: how precisely a process's batches pin down its median. Resampling is
//! seeded from what identifies the sample (run, probe, scale, repeat), so the same `samples.jsonl`
//! always gives the same intervals. Every key of a sample is resampled with the same seed, so keys
//! that are fixed multiples of each other (per switch, per round trip) get intervals in proportion.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};

use crate::stats::median;

/// Resamples per interval.
pub const RESAMPLES: usize = 2000;

/// The percentile bootstrap 95 % interval of the median of `values`: the 2.5th and 97.5th
/// percentiles (nearest rank) of the medians of [`RESAMPLES`] resamples with replacement drawn
/// with `ChaCha8Rng` from `seed`. `None` when there are no values.
pub fn median_interval(values: &[f64], seed: u64) -> Option<[f64; 2]> {
    if values.is_empty() {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = values.len();
    let mut resample = vec![0.0; n];
    let mut medians = Vec::with_capacity(RESAMPLES);
    for _ in 0..RESAMPLES {
        for slot in resample.iter_mut() {
            *slot = values[index(&mut rng, n)];
        }
        medians.push(median(&resample)?);
    }
    medians.sort_by(f64::total_cmp);
    let rank = |p: f64| ((p * RESAMPLES as f64).ceil() as usize).clamp(1, RESAMPLES) - 1;
    Some([medians[rank(0.025)], medians[rank(0.975)]])
}

/// A uniform index below `n` (multiply-shift; the bias is below 2⁻³² for any batch count).
fn index(rng: &mut ChaCha8Rng, n: usize) -> usize {
    ((u128::from(rng.next_u64()) * n as u128) >> 64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_are_reproducible_and_hold_the_median() {
        let values: Vec<f64> = (0..40).map(|i| 100.0 + f64::from(i % 7) * 0.5).collect();
        let a = median_interval(&values, 42).unwrap();
        assert_eq!(
            a,
            median_interval(&values, 42).unwrap(),
            "same seed, same interval"
        );
        let m = median(&values).unwrap();
        assert!(a[0] <= m && m <= a[1], "{a:?} holds {m}");
        assert!(a[0] >= 100.0 && a[1] <= 103.0);
        assert_eq!(median_interval(&[5.0], 1), Some([5.0, 5.0]));
        assert_eq!(median_interval(&[], 1), None);
        // Wider spread, wider interval.
        let wide: Vec<f64> = values.iter().map(|v| (v - 100.0) * 10.0 + 100.0).collect();
        let b = median_interval(&wide, 42).unwrap();
        assert!(b[1] - b[0] > a[1] - a[0], "{b:?} vs {a:?}");
    }

    #[test]
    fn one_seed_keeps_keys_in_proportion() {
        let batches: Vec<f64> = (0..40).map(|i| 10.0 + f64::from(i % 9)).collect();
        let doubled: Vec<f64> = batches.iter().map(|v| v * 2.0).collect();
        let (a, b) = (
            median_interval(&batches, 7).unwrap(),
            median_interval(&doubled, 7).unwrap(),
        );
        assert_eq!(
            [a[0] * 2.0, a[1] * 2.0],
            b,
            "keys in proportion, intervals in proportion"
        );
    }
}
