//! Figures beyond METHOD.md, shown beside its figures and never instead of them: a seeded
//! bootstrap interval of the median and a Wilcoxon signed-rank p-value.

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use statrs::distribution::{ContinuousCDF, Normal};

/// Percentile bootstrap 95 % interval of the median of `deltas`, from `resamples` resamples
/// drawn by a `SmallRng` seeded with `seed`. `None` below two deltas or without resamples.
pub fn bootstrap_median_ci(deltas: &[f64], resamples: usize, seed: u64) -> Option<(f64, f64)> {
    let m = deltas.len();
    if m < 2 || resamples == 0 {
        return None;
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut draw = vec![0.0; m];
    let mut medians: Vec<f64> = (0..resamples)
        .map(|_| {
            for slot in draw.iter_mut() {
                *slot = deltas[rng.random_range(0..m)];
            }
            crate::stats::median(&mut draw)
        })
        .collect();
    medians.sort_unstable_by(f64::total_cmp);
    let at = |q: f64| crate::stats::nearest_rank(&medians, q);
    Some((at(0.025), at(0.975)))
}

/// A seed for one quantity, so that its bootstrap does not depend on which others ran.
pub fn quantity_seed(seed: u64, names: &[&str]) -> u64 {
    // FNV-1a over the names, mixed with the user's seed.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for name in names {
        for b in name.bytes().chain([0]) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// Two-sided Wilcoxon signed-rank p-value of `deltas` against 0. Zeros are dropped; exact
/// below 50 nonzero deltas without ties, else the normal approximation with tie and
/// continuity correction. `None` when no delta is nonzero.
pub fn wilcoxon_p(deltas: &[f64]) -> Option<f64> {
    let mut nonzero: Vec<f64> = deltas
        .iter()
        .copied()
        .filter(|d| *d != 0.0 && d.is_finite())
        .collect();
    let n = nonzero.len();
    if n == 0 {
        return None;
    }
    nonzero.sort_unstable_by(|a, b| a.abs().total_cmp(&b.abs()));
    let mut w_plus = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && nonzero[j + 1].abs() == nonzero[i].abs() {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        w_plus += rank * nonzero[i..=j].iter().filter(|d| **d > 0.0).count() as f64;
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    if tie_term == 0.0 && n < 50 {
        return Some(exact_signed_rank_p(n, w_plus as usize));
    }
    let nf = n as f64;
    let mean = nf * (nf + 1.0) / 4.0;
    let var = nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0 - tie_term / 48.0;
    if var <= 0.0 {
        return Some(1.0);
    }
    let z = ((w_plus - mean).abs() - 0.5).max(0.0) / var.sqrt();
    let normal = Normal::standard();
    Some((2.0 * normal.sf(z)).min(1.0))
}

/// `2 · min(P(W ≤ w), P(W ≥ w))` under the null, from the count of rank subsets per sum.
fn exact_signed_rank_p(n: usize, w: usize) -> f64 {
    let max = n * (n + 1) / 2;
    let mut counts = vec![0.0f64; max + 1];
    counts[0] = 1.0;
    for rank in 1..=n {
        for sum in (rank..=max).rev() {
            counts[sum] += counts[sum - rank];
        }
    }
    let total = 2f64.powi(n as i32);
    let low: f64 = counts[..=w].iter().sum::<f64>() / total;
    let high: f64 = counts[w..].iter().sum::<f64>() / total;
    (2.0 * low.min(high)).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_wilcoxon_matches_the_table() {
        // n = 5, all positive: W+ = 15, p = 2/32.
        assert!((wilcoxon_p(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap() - 0.0625).abs() < 1e-15);
        // Symmetric signs: W+ = 1 + 4 + 5 = 10 of a mean 7.5.
        let p = wilcoxon_p(&[1.0, -2.0, -3.0, 4.0, 5.0]).unwrap();
        assert!((p - 2.0 * 10.0 / 32.0).abs() < 1e-15, "{p}");
        assert_eq!(wilcoxon_p(&[0.0, 0.0]), None);
    }

    #[test]
    fn bootstrap_is_seeded_and_brackets_the_median() {
        let deltas = [0.5, 0.7, 0.9, 1.1, 0.8, 0.6, 1.0];
        let a = bootstrap_median_ci(&deltas, 2000, 7).unwrap();
        assert_eq!(a, bootstrap_median_ci(&deltas, 2000, 7).unwrap());
        assert!(
            a.0 <= 0.8 && 0.8 <= a.1 && a.0 >= 0.5 && a.1 <= 1.1,
            "{a:?}"
        );
    }

    #[test]
    fn a_bootstrap_needs_two_deltas_and_some_resamples() {
        assert_eq!(bootstrap_median_ci(&[1.0], 100, 1), None);
        assert_eq!(bootstrap_median_ci(&[], 100, 1), None);
        assert_eq!(bootstrap_median_ci(&[1.0, 2.0], 0, 1), None);
        assert!(bootstrap_median_ci(&[1.0, 2.0], 100, 1).is_some());
    }

    #[test]
    fn tied_deltas_share_their_mean_rank_and_take_the_normal_approximation() {
        // |d| sorted 1, 1, 2, 2, 2, 3, 4, 5: ranks 1.5, 1.5, 4, 4, 4, 6, 7, 8. W+ = 1.5 + 3·4
        // + 6 + 8 = 27.5 of a mean 18; the tie term (2³ − 2) + (3³ − 3) = 30, so the variance
        // is 8·9·17/24 − 30/48 = 50.375; z = (9.5 − 0.5)/√50.375, p = erfc(z/√2) = 0.204782.
        let p = wilcoxon_p(&[1.0, -1.0, 2.0, 2.0, 2.0, 3.0, -4.0, 5.0]).unwrap();
        assert!((p - 0.204_781_553_625_894_8).abs() < 1e-9, "{p}");
    }

    #[test]
    fn fifty_untied_deltas_take_the_normal_approximation() {
        // 1..=50, every third negative: W+ = 867 of a mean 637.5, variance 50·51·101/24 =
        // 10731.25, z = (229.5 − 0.5)/√10731.25, p = erfc(z/√2) = 0.027063.
        let deltas: Vec<f64> = (1..=50)
            .map(|k| if k % 3 == 0 { -k as f64 } else { k as f64 })
            .collect();
        let p = wilcoxon_p(&deltas).unwrap();
        assert!((p - 0.027_063_492_176_047_917).abs() < 1e-9, "{p}");
    }
}
