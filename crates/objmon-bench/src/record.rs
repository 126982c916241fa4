//! One measured figure, as every output format writes it.

use serde::Serialize;

/// One figure: a bench on one row (protocol, anchor, speed-of-light, system lock or HotSpot
/// mode) at one parameter. This is the JSON contract of `run --format json` (one object per
/// line) and of the report's `results.json`.
#[derive(Clone, Debug, Serialize)]
pub struct Record {
    /// Bench CLI name.
    pub bench: String,
    /// Row name: protocol catalog name, a protocol with its knob set (`fable[learn-limit=3]`,
    /// in the benches that sweep knobs), `std-mutex`, `parking-lot`, `sol-*`, `syslock-*`,
    /// `hotspot<version>-<mode>`, or `none` for benches that lock nothing.
    pub protocol: String,
    /// Row group: protocol, anchor, speed-of-light, system-lock, hotspot.
    pub kind: String,
    /// Threads that ran.
    pub threads: usize,
    /// The bench's parameter (working set, threads, k), 0 where it has none.
    pub param: u64,
    /// Median over the repetitions, ns per operation (per lock+unlock pair where that
    /// applies; see the bench's description).
    pub ns_per_op: f64,
    /// 1e9 / ns_per_op: operations per second (all threads together).
    pub ops_per_sec: f64,
    /// Fastest repetition, ns per op.
    pub min: f64,
    /// Median repetition, ns per op (= ns_per_op).
    pub median: f64,
    /// Slowest repetition, ns per op.
    pub max: f64,
    /// Timed repetitions.
    pub reps: usize,
}

/// The median of `v` (the mean of the two middle values for an even count), sorting `v`;
/// `None` if it is empty.
pub fn median(v: &mut [f64]) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

impl Record {
    /// A record from the repetitions' values (ns per op). `None` if there are none.
    pub fn from_values(
        bench: &str,
        protocol: &str,
        kind: &str,
        threads: usize,
        param: u64,
        values: &[f64],
    ) -> Option<Record> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        let median = median(&mut v)?; // sorts `v`: min and max below
        Some(Record {
            bench: bench.to_string(),
            protocol: protocol.to_string(),
            kind: kind.to_string(),
            threads,
            param,
            ns_per_op: median,
            ops_per_sec: if median > 0.0 { 1e9 / median } else { 0.0 },
            min: v[0],
            median,
            max: v[v.len() - 1],
            reps: v.len(),
        })
    }

    /// Spread of the repetitions relative to the median, in percent.
    pub fn spread_pct(&self) -> f64 {
        if self.median > 0.0 {
            100.0 * (self.max - self.min) / self.median
        } else {
            0.0
        }
    }

    /// CSV header matching [`Record::csv`].
    pub const CSV_HEADER: &'static str =
        "bench,protocol,kind,threads,param,ns_per_op,ops_per_sec,min,median,max,reps";

    /// One CSV line.
    pub fn csv(&self) -> String {
        format!(
            "{},{},{},{},{},{:.3},{:.1},{:.3},{:.3},{:.3},{}",
            self.bench,
            self.protocol,
            self.kind,
            self.threads,
            self.param,
            self.ns_per_op,
            self.ops_per_sec,
            self.min,
            self.median,
            self.max,
            self.reps
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_spread() {
        let r = Record::from_values("sync", "thin", "protocol", 1, 0, &[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((r.min, r.median, r.max), (1.0, 2.0, 3.0));
        assert_eq!(r.ops_per_sec, 5e8);
        let r =
            Record::from_values("sync", "thin", "protocol", 1, 0, &[4.0, 1.0, 2.0, 3.0]).unwrap();
        assert_eq!(r.median, 2.5);
        assert!(Record::from_values("s", "p", "k", 1, 0, &[]).is_none());
        assert_eq!(
            r.csv().split(',').count(),
            Record::CSV_HEADER.split(',').count()
        );
    }
}
