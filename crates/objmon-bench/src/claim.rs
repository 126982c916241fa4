//! Ratios between two rows of one run, with their spread over the repetitions, and the rules
//! by which the report states a claim about one.
//!
//! A ratio is `num ÷ den` with a median and a range:
//!
//! - where the bench times its rows round by round and keeps every repetition (Cloud,
//!   Threads), the ratio is taken within each round; the figure is the median of those
//!   per-round ratios and the range their minimum and maximum (`paired`);
//! - otherwise the figure is the ratio of the two medians and the range runs from `num`'s
//!   fastest ÷ `den`'s slowest repetition to `num`'s slowest ÷ `den`'s fastest: every pairing
//!   of repetitions lies inside it.
//!
//! The spread of a ratio is `(max − min) ÷ median` of its repetitions: of the per-round ratios
//! where paired, else the larger of the two rows' own spreads (the range above compounds both
//! rows' extremes, so its width would count each row's noise twice).
//!
//! A claim compares a ratio with one or more thresholds. Its repetitions **disagree** when the
//! range straddles a threshold or the spread exceeds [`MAX_SPREAD`]; such a claim says
//! "repetitions disagree (range a–b×)" and neither holds nor fails. Otherwise the median
//! decides.

use crate::record::{self, Record};

/// Widest spread, `(max − min) ÷ median`, at which a ratio's repetitions still agree.
pub const MAX_SPREAD: f64 = 0.25;

/// `num ÷ den` over the repetitions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ratio {
    /// The median per-round ratio (`paired`), else the ratio of the medians.
    pub median: f64,
    /// Lowest ratio the repetitions allow.
    pub lo: f64,
    /// Highest ratio the repetitions allow.
    pub hi: f64,
    /// Whether the figures are per-round ratios.
    pub paired: bool,
    /// `(max − min) ÷ median` of the repetitions (see the module's doc).
    pub spread: f64,
}

impl Ratio {
    /// From two records' median, fastest and slowest repetitions (not paired).
    pub fn of_records(num: &Record, den: &Record) -> Option<Ratio> {
        (den.median > 0.0 && den.min > 0.0).then(|| Ratio {
            median: num.median / den.median,
            lo: num.min / den.max,
            hi: num.max / den.min,
            paired: false,
            spread: num.spread_pct().max(den.spread_pct()) / 100.0,
        })
    }

    /// From two rows' timed repetitions in round order: round i of `num` ÷ round i of `den`.
    pub fn paired(num: &[f64], den: &[f64]) -> Option<Ratio> {
        let mut v: Vec<f64> = num
            .iter()
            .zip(den)
            .filter(|(_, d)| **d > 0.0)
            .map(|(n, d)| n / d)
            .filter(|x| x.is_finite())
            .collect();
        let median = record::median(&mut v)?; // sorts `v`
        let (lo, hi) = (v[0], v[v.len() - 1]);
        Some(Ratio {
            median,
            lo,
            hi,
            paired: true,
            spread: if median > 0.0 {
                (hi - lo) / median
            } else {
                f64::INFINITY
            },
        })
    }

    /// Whether the repetitions disagree about a claim with these thresholds.
    pub fn disagrees(&self, thresholds: &[f64]) -> bool {
        self.spread > MAX_SPREAD || thresholds.iter().any(|&t| self.lo < t && t < self.hi)
    }

    /// `1.05× (0.98–1.11)`: the median and the range.
    pub fn text(&self) -> String {
        format!("{}× ({}–{})", fmt(self.median), fmt(self.lo), fmt(self.hi))
    }

    /// `0.98–1.11×`.
    pub fn range_text(&self) -> String {
        format!("{}–{}×", fmt(self.lo), fmt(self.hi))
    }

    /// `repetitions disagree (range 0.98–1.31×)`.
    pub fn disagree_text(&self) -> String {
        format!("repetitions disagree (range {})", self.range_text())
    }
}

/// A ratio with two decimals below 10, one from 10 on (`1.05`, `24.1`).
pub fn fmt(x: f64) -> String {
    if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// [`Ratio::text`], or `not measured`.
pub fn text(r: Option<&Ratio>) -> String {
    r.map_or("not measured".into(), Ratio::text)
}

/// The verdict on the target `ratio ≤ bound`: `met (≤ 1.2×)`, `not met (above 1.2×)`,
/// `repetitions disagree (range a–b×)` or `not measured`.
pub fn at_most(r: Option<&Ratio>, bound: f64) -> String {
    match r {
        None => "not measured".into(),
        Some(r) if r.disagrees(&[bound]) => r.disagree_text(),
        Some(r) if r.median <= bound => format!("met (≤ {bound}×)"),
        Some(_) => format!("not met (above {bound}×)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(v: &[f64]) -> Record {
        Record::from_values("sync", "x", "protocol", 1, 0, v).unwrap()
    }

    #[test]
    fn ranges_from_records_and_rounds() {
        let r = Ratio::of_records(&rec(&[10.0, 11.0, 12.0]), &rec(&[9.0, 10.0, 10.0])).unwrap();
        assert_eq!((r.median, r.paired), (1.1, false));
        // The rows' own spreads, 2 / 11 and 1 / 10: the larger.
        assert!((r.spread - 2.0 / 11.0).abs() < 1e-12, "{r:?}");
        assert!((r.lo - 1.0).abs() < 1e-12 && (r.hi - 12.0 / 9.0).abs() < 1e-12);
        assert_eq!(r.text(), "1.10× (1.00–1.33)");
        let p = Ratio::paired(&[2.0, 3.0, 9.0], &[2.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(
            (p.median, p.lo, p.hi, p.paired, p.spread),
            (1.5, 1.0, 3.0, true, 2.0 / 1.5)
        );
        assert_eq!(Ratio::paired(&[], &[]), None);
    }

    /// A range across the bound, or wider than 25 % of the median, gives no verdict.
    #[test]
    fn verdicts() {
        let r = |median: f64, lo: f64, hi: f64| Ratio {
            median,
            lo,
            hi,
            paired: true,
            spread: (hi - lo) / median,
        };
        assert_eq!(at_most(Some(&r(1.05, 0.98, 1.11)), 1.2), "met (≤ 1.2×)");
        assert_eq!(
            at_most(Some(&r(1.4, 1.3, 1.45)), 1.2),
            "not met (above 1.2×)"
        );
        assert_eq!(
            at_most(Some(&r(1.1, 1.0, 1.25)), 1.2),
            "repetitions disagree (range 1.00–1.25×)"
        );
        // All below the bound, but spread over 40 % of the median.
        assert_eq!(
            at_most(Some(&r(0.8, 0.6, 0.95)), 1.2),
            "repetitions disagree (range 0.60–0.95×)"
        );
        assert_eq!(at_most(None, 1.2), "not measured");
        // Unpaired: a range of 1.96–2.62 from two rows each within 15 % agrees.
        let rec = |v: &[f64]| Record::from_values("sync", "x", "protocol", 1, 0, v).unwrap();
        let x = Ratio::of_records(&rec(&[21.0, 22.5, 24.0]), &rec(&[9.2, 10.0, 10.7])).unwrap();
        assert!(x.hi - x.lo > MAX_SPREAD * x.median && !x.disagrees(&[0.9, 3.6]));
        assert_eq!(r(24.1, 1.39, 30.0).range_text(), "1.39–30.0×");
    }
}
