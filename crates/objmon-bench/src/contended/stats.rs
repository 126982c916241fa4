//! The figures of a run: the statistics over reps (median, spread, min–max, geometric
//! mean), a cell's result over its reps ([`CellResult`], flagged unstable above
//! `UNSTABLE_PCT`), the summary per row and thread count against `parking_lot::Mutex`
//! ([`Summary`]), and the winner of a group of cells (never an unstable one).

use super::drive::Rep;
use super::matrix::{Between, Cs, Row};
use super::UNSTABLE_PCT;
use serde::Serialize;

/// The median (mean of the middle two for an even count); NaN for none.
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if !v.len().is_multiple_of(2) {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// `(max − min) / median`, in percent (0 for one value).
pub fn spread_pct(xs: &[f64]) -> f64 {
    let (lo, hi) = min_max(xs);
    let m = median(xs);
    if m > 0.0 {
        100.0 * (hi - lo) / m
    } else {
        0.0
    }
}

/// The least and greatest of `xs` (NaN, NaN for none).
pub fn min_max(xs: &[f64]) -> (f64, f64) {
    xs.iter().fold((f64::NAN, f64::NAN), |(lo, hi), &x| {
        (lo.min(x), hi.max(x)) // f64::min/max ignore a NaN operand
    })
}

/// The geometric mean of positive `xs` (NaN for none).
pub fn geomean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp()
}

/// One (threads, cs, between, row) over its reps.
#[derive(Clone, Debug, Serialize)]
pub struct CellResult {
    /// Threads.
    pub threads: usize,
    /// Critical section.
    pub cs: &'static str,
    /// Work between locks.
    pub between: &'static str,
    /// Row name.
    pub row: &'static str,
    /// Repetitions.
    pub reps: usize,
    /// Median ns per lock+unlock (aggregate).
    pub median_ns: f64,
    /// Least over reps.
    pub min_ns: f64,
    /// Greatest over reps.
    pub max_ns: f64,
    /// (max − min) / median, %.
    pub spread_pct: f64,
    /// Spread above [`UNSTABLE_PCT`].
    pub unstable: bool,
    /// Median over reps of the longest sampled wait, µs.
    pub wait_median_us: f64,
    /// Longest sampled wait of all reps, µs.
    pub wait_max_us: f64,
    /// Sampled acquisitions, all reps.
    pub samples: u64,
    /// Those that waited longer than [`LONG_WAIT`](super::LONG_WAIT), all reps.
    pub long_waits: u64,
    /// Worst over reps of fewest / most acquisitions of one thread.
    pub share_min: f64,
    /// Median hand-offs per second.
    pub hand_offs_per_s: f64,
}

impl CellResult {
    pub(super) fn new(threads: usize, cs: Cs, btw: Between, row: Row, reps: &[Rep]) -> Self {
        let ns: Vec<f64> = reps.iter().map(|r| r.ns_per_acq).collect();
        let waits: Vec<f64> = reps.iter().map(|r| r.longest_wait_ns / 1e3).collect();
        let (min_ns, max_ns) = min_max(&ns);
        let spread = spread_pct(&ns);
        CellResult {
            threads,
            cs: cs.name(),
            between: btw.name(),
            row: row.name(),
            reps: reps.len(),
            median_ns: median(&ns),
            min_ns,
            max_ns,
            spread_pct: spread,
            unstable: spread > UNSTABLE_PCT,
            wait_median_us: median(&waits),
            wait_max_us: min_max(&waits).1,
            samples: reps.iter().map(|r| r.samples).sum(),
            long_waits: reps.iter().map(|r| r.long_waits).sum(),
            share_min: min_max(&reps.iter().map(|r| r.share).collect::<Vec<_>>()).0,
            hand_offs_per_s: median(&reps.iter().map(|r| r.hand_offs_per_s).collect::<Vec<_>>()),
        }
    }
}

/// One row at one thread count, against `parking_lot::Mutex`.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Row name.
    pub row: &'static str,
    /// Threads.
    pub threads: usize,
    /// Cells with both this row and `parking_lot`.
    pub cells: usize,
    /// Cells where this row or `parking_lot` is unstable.
    pub unstable_cells: usize,
    /// Geometric mean over cells of median ns / `parking_lot`'s.
    pub ratio_geomean: f64,
    /// Least ratio.
    pub ratio_min: f64,
    /// Greatest ratio.
    pub ratio_max: f64,
    /// Geometric mean over cells of median longest wait / `parking_lot`'s.
    pub wait_ratio_geomean: f64,
    /// Longest sampled wait of any cell, µs.
    pub wait_max_us: f64,
    /// Geometric mean, over the cells where either lock waited long at least once, of the
    /// cell's long waits per sampled acquisition over `parking_lot`'s, each count plus ½ (so
    /// that a cell where one of the two had none gives a finite ratio); NaN if no cell had a
    /// long wait. Each cell weighs the same, as in [`ratio_geomean`](Self::ratio_geomean).
    pub long_ratio: f64,
    /// Long waits per sampled acquisition, pooled over the cells, over `parking_lot`'s (not
    /// finite if `parking_lot` had none). Acquisitions are sampled at a fixed rate, so each
    /// lock weighs its cells by its own throughput there: a lock slower in the fast cells
    /// (few long waits, most of the samples) reads worse here for that alone.
    pub long_ratio_pooled: f64,
}

/// The [`Summary::long_ratio`] of one cell, `None` if neither lock waited long there.
fn long_cell_ratio(c: &CellResult, base: &CellResult) -> Option<f64> {
    if c.long_waits + base.long_waits == 0 || c.samples == 0 || base.samples == 0 {
        return None;
    }
    let rate = |x: &CellResult| (x.long_waits as f64 + 0.5) / x.samples as f64;
    Some(rate(c) / rate(base))
}

/// Long waits per sampled acquisition over `cells` (NaN for no sample).
fn long_rate<'a>(cells: impl Iterator<Item = &'a CellResult>) -> f64 {
    let (long, samples) = cells.fold((0, 0), |(l, n), c| (l + c.long_waits, n + c.samples));
    if samples == 0 {
        f64::NAN
    } else {
        long as f64 / samples as f64
    }
}

impl CellResult {
    /// Long waits per million sampled acquisitions.
    pub fn long_ppm(&self) -> f64 {
        long_rate(std::iter::once(self)) * 1e6
    }
}

/// The summary per (row, threads); empty without `parking_lot` rows.
pub fn summarize(cells: &[CellResult]) -> Vec<Summary> {
    let base = Row::ParkingLot.name();
    let find = |t: usize, c: &str, b: &str| {
        cells
            .iter()
            .find(|x| x.threads == t && x.cs == c && x.between == b && x.row == base)
    };
    let mut keys: Vec<(&'static str, usize)> = Vec::new();
    for c in cells {
        if !keys.contains(&(c.row, c.threads)) {
            keys.push((c.row, c.threads));
        }
    }
    keys.iter()
        .filter_map(|&(row, t)| {
            let pairs: Vec<(&CellResult, &CellResult)> = cells
                .iter()
                .filter(|c| c.row == row && c.threads == t)
                .filter_map(|c| find(t, c.cs, c.between).map(|b| (c, b)))
                .collect();
            if pairs.is_empty() {
                return None;
            }
            let ratios: Vec<f64> = pairs
                .iter()
                .map(|(c, b)| c.median_ns / b.median_ns)
                .collect();
            let waits: Vec<f64> = pairs
                .iter()
                .filter(|(c, b)| c.wait_median_us > 0.0 && b.wait_median_us > 0.0)
                .map(|(c, b)| c.wait_median_us / b.wait_median_us)
                .collect();
            let (lo, hi) = min_max(&ratios);
            Some(Summary {
                row,
                threads: t,
                cells: pairs.len(),
                unstable_cells: pairs
                    .iter()
                    .filter(|(c, b)| c.unstable || b.unstable)
                    .count(),
                ratio_geomean: geomean(&ratios),
                ratio_min: lo,
                ratio_max: hi,
                wait_ratio_geomean: geomean(&waits),
                wait_max_us: min_max(&pairs.iter().map(|(c, _)| c.wait_max_us).collect::<Vec<_>>())
                    .1,
                long_ratio: geomean(
                    &pairs
                        .iter()
                        .filter_map(|(c, b)| long_cell_ratio(c, b))
                        .collect::<Vec<_>>(),
                ),
                long_ratio_pooled: long_rate(pairs.iter().map(|p| p.0))
                    / long_rate(pairs.iter().map(|p| p.1)),
            })
        })
        .collect()
}

/// The winner of the cells of one (threads, cs, between): the row of the lowest median,
/// unless that cell is unstable (then none).
pub fn winner<'a>(group: &[&'a CellResult]) -> Option<&'a CellResult> {
    let best = group
        .iter()
        .min_by(|a, b| a.median_ns.total_cmp(&b.median_ns))?;
    (!best.unstable).then_some(*best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_spread_geomean() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(min_max(&[2.0, 5.0, 1.0]), (1.0, 5.0));
        assert_eq!(spread_pct(&[90.0, 100.0, 110.0]), 20.0);
        assert_eq!(spread_pct(&[7.0]), 0.0);
        assert!((geomean(&[1.0, 4.0]) - 2.0).abs() < 1e-12);
        assert!((geomean(&[0.5, 2.0, 1.0]) - 1.0).abs() < 1e-12);
        assert!(geomean(&[]).is_nan());
    }

    fn cell(row: Row, cs: Cs, ns: f64, spread: f64) -> CellResult {
        CellResult {
            threads: 2,
            cs: cs.name(),
            between: "none",
            row: row.name(),
            reps: 3,
            median_ns: ns,
            min_ns: ns,
            max_ns: ns,
            spread_pct: spread,
            unstable: spread > UNSTABLE_PCT,
            wait_median_us: ns,
            wait_max_us: ns,
            samples: 1000,
            long_waits: ns as u64 / 10,
            share_min: 1.0,
            hand_offs_per_s: 0.0,
        }
    }

    #[test]
    fn summary_is_the_geomean_of_ratios_to_parking_lot() {
        let cells = [
            cell(Row::Thin, Cs::Empty, 20.0, 5.0),
            cell(Row::ParkingLot, Cs::Empty, 10.0, 5.0),
            cell(Row::Thin, Cs::Us1, 500.0, 40.0),
            cell(Row::ParkingLot, Cs::Us1, 1000.0, 5.0),
        ];
        let s = summarize(&cells);
        let thin = s.iter().find(|s| s.row == "thin").unwrap();
        assert_eq!(thin.cells, 2);
        assert!((thin.ratio_geomean - 1.0).abs() < 1e-12); // sqrt(2 * 0.5)
        assert_eq!((thin.ratio_min, thin.ratio_max), (0.5, 2.0));
        assert_eq!(thin.unstable_cells, 1);
        assert_eq!(thin.wait_max_us, 500.0);
        // Per cell (2 + ½) / (1 + ½) and (50 + ½) / (100 + ½), 1000 samples each.
        let want = (2.5f64 / 1.5 * (50.5 / 100.5)).sqrt();
        assert!((thin.long_ratio - want).abs() < 1e-12);
        // (20 + 500) / 10 long waits against (10 + 1000) / 10, per 2000 samples each.
        assert!((thin.long_ratio_pooled - 52.0 / 101.0).abs() < 1e-12);
        let pl = s.iter().find(|s| s.row == "parking_lot").unwrap();
        assert_eq!(pl.ratio_geomean, 1.0);
        assert!(
            summarize(&cells[..1]).is_empty(),
            "no parking_lot, no summary"
        );
    }

    /// The pooled rate weighs each lock's cells by its own throughput; the per-cell ratio
    /// does not: a lock that waits long exactly as often per acquisition in every cell but
    /// runs the fast cell at half the speed reads 1 per cell and worse pooled.
    #[test]
    fn the_long_wait_ratio_weighs_cells_alike() {
        let mut fast = cell(Row::Thin, Cs::Empty, 20.0, 5.0);
        let mut fast_pl = cell(Row::ParkingLot, Cs::Empty, 10.0, 5.0);
        let mut slow = cell(Row::Thin, Cs::Us1, 1000.0, 5.0);
        let mut slow_pl = cell(Row::ParkingLot, Cs::Us1, 1000.0, 5.0);
        // Both: 1 long wait per 1000 samples in the fast cell, 1 per 10 in the slow one;
        // parking_lot made twice the samples in the fast cell.
        (fast.samples, fast.long_waits) = (100_000, 100);
        (fast_pl.samples, fast_pl.long_waits) = (200_000, 200);
        (slow.samples, slow.long_waits) = (1000, 100);
        (slow_pl.samples, slow_pl.long_waits) = (1000, 100);
        let s = summarize(&[fast, fast_pl, slow, slow_pl]);
        let thin = s.iter().find(|s| s.row == "thin").unwrap();
        assert!((thin.long_ratio - 1.0).abs() < 0.01, "{}", thin.long_ratio);
        // (100 + 100) / 101,000 against (200 + 100) / 201,000.
        let pooled = (200.0 / 101_000.0) / (300.0 / 201_000.0);
        assert!((thin.long_ratio_pooled - pooled).abs() < 1e-12);
        assert!(pooled > 1.3);
        // No long wait anywhere: no ratio.
        let quiet = [
            cell(Row::Thin, Cs::Empty, 5.0, 5.0),
            cell(Row::ParkingLot, Cs::Empty, 5.0, 5.0),
        ];
        assert!(summarize(&quiet)[0].long_ratio.is_nan());
    }

    #[test]
    fn an_unstable_cell_is_never_the_winner() {
        let a = cell(Row::Thin, Cs::Empty, 5.0, 30.0);
        let b = cell(Row::ParkingLot, Cs::Empty, 10.0, 5.0);
        assert!(winner(&[&a, &b]).is_none());
        let a = cell(Row::Thin, Cs::Empty, 5.0, 10.0);
        assert_eq!(winner(&[&a, &b]).unwrap().row, "thin");
    }
}
