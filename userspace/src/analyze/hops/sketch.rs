//! The delay sketch of a tap pair ([`super`]): exact min and max, quantiles
//! from a log histogram.

use crate::analyze::hash::FastMap;

/// The relative accuracy of the delay sketch: buckets grow by 1 %.
const GAMMA: f64 = 1.01;

/// Quantiles of signed nanosecond values: exact min and max, and a log
/// histogram of the distance from the first value (buckets 1 % wide), so a
/// quantile is within 0.5 % of `max - min` of the exact one.
#[derive(Clone, Debug, Default)]
pub struct Sketch {
    pub n: u64,
    pub min: i64,
    pub max: i64,
    base: i64,
    /// Values per bucket; sorted only when a quantile is asked for (a hash
    /// map: one add per matched pair of sightings).
    buckets: FastMap<i32, u64>,
}

impl Sketch {
    pub fn add(&mut self, x: i64) {
        if self.n == 0 {
            self.base = x;
            self.min = x;
            self.max = x;
        }
        self.n += 1;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
        let dev = x.saturating_sub(self.base);
        *self.buckets.entry(bucket(dev)).or_default() += 1;
    }

    /// The nearest-rank quantile `q` (the smallest value with at least
    /// `q × n` values at or below it), as `percentile_disc` in SQL.
    pub fn quantile(&self, q: f64) -> i64 {
        self.at_rank(rank(q, self.n))
    }

    /// The same quantile of the values negated (a hop read the other way).
    pub fn quantile_negated(&self, q: f64) -> i64 {
        -self.at_rank(self.n + 1 - rank(q, self.n))
    }

    /// The `rank`-th smallest value (from 1).
    fn at_rank(&self, rank: u64) -> i64 {
        let mut buckets: Vec<(i32, u64)> = self.buckets.iter().map(|(&b, &n)| (b, n)).collect();
        buckets.sort_unstable();
        let mut seen = 0;
        for (b, n) in buckets {
            seen += n;
            if seen >= rank {
                let v = self.base.saturating_add(representative(b));
                return v.clamp(self.min, self.max);
            }
        }
        self.max
    }
}

/// The nearest rank of quantile `q` among `n` values (from 1).
fn rank(q: f64, n: u64) -> u64 {
    ((q * n as f64).ceil() as u64).clamp(1, n.max(1))
}

/// Distances below this take their bucket from [`SMALL_BUCKETS`].
const SMALL: usize = 1 << 12;

/// The bucket of each distance below [`SMALL`], made once by
/// [`bucket_by_ln`]: a sketch's distances are mostly a few µs, and a `ln`
/// cost more than the rest of an add.
static SMALL_BUCKETS: std::sync::LazyLock<Box<[u16; SMALL]>> = std::sync::LazyLock::new(|| {
    let mut t = Box::new([0u16; SMALL]);
    for (d, k) in t.iter_mut().enumerate() {
        // At most 1 + ln(4095) / ln(1.01) = 837.
        *k = bucket_by_ln(d as i64) as u16;
    }
    t
});

fn bucket(dev: i64) -> i32 {
    match usize::try_from(dev.unsigned_abs()) {
        Ok(a) if a < SMALL => {
            let k = i32::from(SMALL_BUCKETS[a]);
            if dev < 0 { -k } else { k }
        }
        _ => bucket_by_ln(dev),
    }
}

fn bucket_by_ln(dev: i64) -> i32 {
    if dev == 0 {
        return 0;
    }
    let k = 1 + ((dev.unsigned_abs() as f64).ln() / GAMMA.ln()).floor() as i32;
    if dev < 0 { -k } else { k }
}

fn representative(b: i32) -> i64 {
    if b == 0 {
        return 0;
    }
    let k = b.unsigned_abs() as i32;
    let mid = GAMMA.powi(k - 1) * (1.0 + GAMMA) / 2.0;
    let v = mid.round() as i64;
    if b < 0 { -v } else { v }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table gives every small distance, either sign, the bucket its
    /// `ln` gives.
    #[test]
    fn small_buckets_are_the_ln_ones() {
        for d in -(SMALL as i64) - 2..SMALL as i64 + 2 {
            assert_eq!(bucket(d), bucket_by_ln(d), "{d}");
        }
        for d in [i64::MIN, i64::MIN + 1, i64::MAX, 1 << 40, -(1 << 40)] {
            assert_eq!(bucket(d), bucket_by_ln(d), "{d}");
        }
    }
}
