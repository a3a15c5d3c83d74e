//! The statistics of `seal stats`, pure: confusion matrices over the four verdict categories,
//! raw agreement, Cohen's κ, a seeded percentile bootstrap of κ, and exact percentiles over
//! value histograms. No I/O, no clock; the only randomness is [`SplitMix64`], seeded by the
//! caller, so the same counts and seed give the same figures on every platform.

use std::collections::BTreeMap;

/// The categories of a judge's verdict on one obligation, in matrix order. `not_observed` is
/// the judge's own word (parsed JudgeOutput); `missing` means the judge gave no verdict (skipped
/// the obligation, or the slot failed).
pub const CATEGORIES: [&str; 4] = ["satisfied", "failed", "not_observed", "missing"];

/// Bootstrap resamples per interval.
pub const BOOTSTRAP_RESAMPLES: usize = 1000;

/// A K × K confusion matrix: `cells[a][b]` counts pairs where rater A said `a` and B said `b`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Confusion {
    pub cells: [[u64; 4]; 4],
}

impl Confusion {
    pub fn add(&mut self, a: usize, b: usize) {
        self.cells[a][b] += 1;
    }

    pub fn merge(&mut self, other: &Confusion) {
        for i in 0..4 {
            for j in 0..4 {
                self.cells[i][j] += other.cells[i][j];
            }
        }
    }

    pub fn n(&self) -> u64 {
        self.cells.iter().flatten().sum()
    }

    /// The matrix with the raters swapped.
    pub fn transpose(&self) -> Confusion {
        let mut t = Confusion::default();
        for i in 0..4 {
            for j in 0..4 {
                t.cells[j][i] = self.cells[i][j];
            }
        }
        t
    }

    /// Observed agreement p_o (None for an empty matrix).
    pub fn agreement(&self) -> Option<f64> {
        let n = self.n();
        (n > 0).then(|| (0..4).map(|i| self.cells[i][i]).sum::<u64>() as f64 / n as f64)
    }

    /// Cohen's κ = (p_o − p_e) / (1 − p_e). None when the matrix is empty or chance agreement
    /// is 1 (both raters used one and the same category only: κ is 0/0, undefined).
    pub fn kappa(&self) -> Option<f64> {
        let n = self.n();
        if n == 0 {
            return None;
        }
        let nf = n as f64;
        let p_o = self.agreement()?;
        let mut p_e = 0.0;
        for k in 0..4 {
            let row: u64 = self.cells[k].iter().sum();
            let col: u64 = (0..4).map(|i| self.cells[i][k]).sum();
            p_e += (row as f64 / nf) * (col as f64 / nf);
        }
        if (1.0 - p_e).abs() < 1e-12 {
            return None;
        }
        Some((p_o - p_e) / (1.0 - p_e))
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny PRNG with a fixed, documented output
/// sequence, so a seeded bootstrap gives the same bytes on every platform.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (multiply-shift; n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// A 95% percentile-bootstrap interval of κ. Pairs are exchangeable, so the confusion matrix
/// is a sufficient statistic: each resample draws `n` cells with replacement, with
/// probability proportional to their counts. Resamples whose κ is undefined are dropped; the
/// interval is None when fewer than half of them are defined.
pub fn kappa_interval(m: &Confusion, seed: u64, resamples: usize) -> Option<(f64, f64)> {
    let cells: Vec<u64> = m.cells.iter().flatten().copied().collect();
    bootstrap_interval(&cells, seed, resamples, |c| {
        let mut r = Confusion::default();
        for (k, n) in c.iter().enumerate() {
            r.cells[k / 4][k % 4] = *n;
        }
        r.kappa()
    })
}

/// A 95% percentile-bootstrap interval of any statistic of a table of counts (the
/// observations are exchangeable, so the counts are a sufficient statistic): each resample
/// draws `n` observations with replacement, a cell with probability proportional to its
/// count, and computes `stat` of the resampled counts. Resamples whose statistic is undefined
/// are dropped; the interval is None when fewer than half of them are defined. Seeded
/// ([`SplitMix64`]): the same counts, seed and statistic give the same interval everywhere.
pub fn bootstrap_interval(
    counts: &[u64],
    seed: u64,
    resamples: usize,
    stat: impl Fn(&[u64]) -> Option<f64>,
) -> Option<(f64, f64)> {
    let n: u64 = counts.iter().sum();
    if n == 0 || resamples == 0 {
        return None;
    }
    let mut cumulative = Vec::with_capacity(counts.len());
    let mut acc = 0u64;
    for (k, c) in counts.iter().enumerate() {
        if *c > 0 {
            acc += c;
            cumulative.push((acc, k));
        }
    }
    let mut rng = SplitMix64::new(seed);
    let mut values = Vec::with_capacity(resamples);
    let mut drawn = vec![0u64; counts.len()];
    for _ in 0..resamples {
        drawn.iter_mut().for_each(|d| *d = 0);
        for _ in 0..n {
            let u = rng.below(n);
            let at = cumulative.partition_point(|(c, _)| *c <= u);
            let (_, k) = cumulative[at.min(cumulative.len() - 1)];
            drawn[k] += 1;
        }
        if let Some(v) = stat(&drawn) {
            values.push(v);
        }
    }
    if values.len() * 2 < resamples {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some((nearest_rank(&values, 0.025)?, nearest_rank(&values, 0.975)?))
}

/// The nearest-rank percentile of sorted values: the smallest value with at least `q` of the
/// values at or below it.
pub fn nearest_rank(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted.get(rank.min(sorted.len()) - 1).copied()
}

/// An exact histogram of integer values (value → count): exact percentiles in memory that
/// grows with the number of distinct values, not with the number of observations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Histogram {
    pub counts: BTreeMap<u64, u64>,
    pub n: u64,
    pub sum: u128,
}

impl Histogram {
    pub fn add(&mut self, v: u64) {
        *self.counts.entry(v).or_insert(0) += 1;
        self.n += 1;
        self.sum += v as u128;
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (v, c) in &other.counts {
            *self.counts.entry(*v).or_insert(0) += c;
        }
        self.n += other.n;
        self.sum += other.sum;
    }

    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum as f64 / self.n as f64)
    }

    /// Nearest-rank percentile (`q` in 0..=1).
    pub fn percentile(&self, q: f64) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (v, c) in &self.counts {
            seen += c;
            if seen >= rank {
                return Some(*v);
            }
        }
        self.counts.keys().next_back().copied()
    }
}

/// `x` rounded to `decimals` places (the JSON's fixed precision).
pub fn round(x: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    let r = (x * f).round() / f;
    if r == 0.0 {
        0.0
    } else {
        r
    }
}

/// Mixes a report's seed with a key (a section, a genre, a judge pair), so each key's bootstrap
/// interval does not depend on which other keys exist. `seal stats` and `seal shadow-report`
/// both seed their intervals this way.
pub fn key_seed(seed: u64, key: &str) -> u64 {
    use sha2::{Digest, Sha256};
    let d = Sha256::new()
        .chain_update(seed.to_be_bytes())
        .chain_update(key.as_bytes())
        .finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    u64::from_be_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_reference_sequence() {
        // Reference values of SplitMix64 seeded with 0.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn histogram_percentiles_are_nearest_rank() {
        let mut h = Histogram::default();
        for v in 1..=100 {
            h.add(v);
        }
        assert_eq!(h.percentile(0.5), Some(50));
        assert_eq!(h.percentile(0.95), Some(95));
        assert_eq!(h.percentile(0.99), Some(99));
        assert_eq!(h.mean(), Some(50.5));
    }
}
