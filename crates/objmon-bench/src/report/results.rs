//! [`Results`]: every record of the run, indexed for the sections' look-ups (a figure, a ratio
//! of two rows, a ratio paired by round).

use crate::claim::Ratio;
use crate::record::Record;

/// Everything measured, indexed for look-ups.
#[derive(Default)]
pub struct Results {
    /// All records (Rust rows, then HotSpot rows).
    pub records: Vec<Record>,
    /// Cloud's per-repetition log (warm-up first), for ratios paired by round.
    pub cloud: Vec<crate::bench::CloudReps>,
    /// Threads' per-repetition log (warm-up first), for ratios paired by round.
    pub threads: Vec<crate::bench::ThreadsReps>,
}

impl Results {
    /// Results of `records` without per-repetition logs.
    #[cfg(test)]
    pub fn new(records: Vec<Record>) -> Self {
        Results {
            records,
            ..Default::default()
        }
    }

    /// `num ÷ den` on `bench` at `param` with its spread (see [`crate::claim`]): paired by round
    /// where the bench keeps every repetition of both rows (Cloud, Threads), else from the
    /// two records.
    pub fn claim(&self, bench: &str, num: &str, den: &str, param: u64) -> Option<Ratio> {
        let paired = match bench {
            "cloud" if param == 0 => paired_cloud(&self.cloud, num, den),
            "threads" => paired_threads(&self.threads, num, den, param),
            _ => None,
        };
        paired.or_else(|| {
            Ratio::of_records(self.get(bench, num, param)?, self.get(bench, den, param)?)
        })
    }

    /// The record of `bench` on `row` at `param`.
    pub fn get(&self, bench: &str, row: &str, param: u64) -> Option<&Record> {
        self.records
            .iter()
            .find(|r| r.bench == bench && r.protocol == row && r.param == param)
    }

    /// Rows that measured `bench`, in the run's row order (speed of light, protocols in
    /// catalog order, anchors, system locks, HotSpot).
    pub fn rows_of(&self, bench: &str) -> Vec<String> {
        let order = self.row_order();
        let mut v: Vec<String> = Vec::new();
        for r in self.records.iter().filter(|r| r.bench == bench) {
            if !v.contains(&r.protocol) {
                v.push(r.protocol.clone());
            }
        }
        v.sort_by_key(|n| order.iter().position(|o| o == n));
        v
    }

    /// Rows in the order they first ran, except that a knob sweep's rows (`fable[…]`) follow
    /// their subject's own row: they run only in some benches, after rows that other benches
    /// met first.
    pub(super) fn row_order(&self) -> Vec<String> {
        let mut v: Vec<String> = vec!["none".into()];
        for r in &self.records {
            if v.contains(&r.protocol) {
                continue;
            }
            let family = r.protocol.split_once('[').map(|(base, _)| base);
            let at = family.and_then(|base| {
                let first = v.iter().position(|x| x == base)?;
                let last = v
                    .iter()
                    .rposition(|x| x.split_once('[').is_some_and(|(b, _)| b == base))
                    .unwrap_or(first);
                Some(last.max(first) + 1)
            });
            match at {
                Some(i) => v.insert(i, r.protocol.clone()),
                None => v.push(r.protocol.clone()),
            }
        }
        v
    }

    pub(super) fn params_of(&self, bench: &str) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .records
            .iter()
            .filter(|r| r.bench == bench)
            .map(|r| r.param)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// `num.median / den.median` for one bench, if both rows ran it.
    pub(super) fn ratio(&self, bench: &str, num: &str, den: &str, param: u64) -> Option<f64> {
        let a = self.get(bench, num, param)?;
        let b = self.get(bench, den, param)?;
        (b.median > 0.0).then(|| a.median / b.median)
    }
}

impl Results {
    /// `row` at `p_num` ÷ the same row at `p_den`, medians.
    pub(super) fn ratio_self(&self, bench: &str, row: &str, p_num: u64, p_den: u64) -> Option<f64> {
        let a = self.get(bench, row, p_num)?;
        let b = self.get(bench, row, p_den)?;
        (b.median > 0.0).then(|| a.median / b.median)
    }
}

/// Cloud's `num ÷ den` round by round, from the per-repetition logs (the warm-up left out): the
/// median of the per-round ratios and their range. Cloud's rows run round by round, so
/// repetition i of every row ran in round i, within seconds of each other: a spell of the host
/// that covers whole rounds moves both alike and drops out of the ratio, where the ratio of the
/// two medians can pick one row's median from a slow round and the other's from a fast one (an
/// example in docs/benchmarks.md, "Bench notes moved out of the code"). `None` without both
/// logs.
pub(super) fn paired_cloud(log: &[crate::bench::CloudReps], num: &str, den: &str) -> Option<Ratio> {
    let timed = |row: &str| {
        log.iter()
            .rev()
            .find(|l| l.row == row)
            .map(|l| l.reps.iter().skip(1).map(|r| r.ns).collect::<Vec<_>>())
    };
    Ratio::paired(&timed(num)?, &timed(den)?)
}

/// [`paired_cloud`] for the Threads bench at `threads` threads.
pub(super) fn paired_threads(
    log: &[crate::bench::ThreadsReps],
    num: &str,
    den: &str,
    threads: u64,
) -> Option<Ratio> {
    let timed = |row: &str| {
        log.iter()
            .rev()
            .find(|l| l.row == row && l.threads == threads)
            .map(|l| l.reps.get(1..).unwrap_or(&[]))
    };
    Ratio::paired(timed(num)?, timed(den)?)
}
