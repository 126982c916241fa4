//! Runs a selection of benches over the selected rows, with a progress bar, and collects
//! [`Record`]s.

use crate::bench::{self, Bench, Plan};
use crate::record::Record;
use crate::subject::{self, Kind, Subject, SubjectVisitor};
use crate::syslock;
use indicatif::{ProgressBar, ProgressStyle};

/// What to run.
#[derive(Clone, Debug)]
pub struct Selection {
    /// Benches, in order.
    pub benches: Vec<Bench>,
    /// Row filters (exact names, or prefixes ending in `*`); empty = every row.
    pub rows: Vec<String>,
    /// Overrides every bench's parameter sweep.
    pub params: Option<Vec<u64>>,
    /// Threads for cloud (default 10, as the seed); for `threads`, the thread counts.
    pub threads: Option<usize>,
    /// Sizes.
    pub plan: Plan,
}

impl Selection {
    /// Whether row `name` is selected.
    pub fn wants(&self, name: &str) -> bool {
        self.rows.is_empty()
            || self.rows.iter().any(|f| match f.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => f == name,
            })
    }

    /// The parameters `b` sweeps.
    pub fn params_of(&self, b: Bench) -> Vec<u64> {
        match (&self.params, self.threads) {
            (Some(p), _) if b.params(&self.plan) != [0] => p.clone(),
            (_, Some(n)) if b == Bench::Threads => vec![n as u64],
            _ => b.params(&self.plan),
        }
    }

    /// Cloud's thread count.
    pub fn cloud_threads(&self) -> usize {
        self.threads.unwrap_or(10)
    }
}

/// A row that could not run a bench, and why.
#[derive(Clone, Debug)]
pub struct Skip {
    /// Bench name.
    pub bench: &'static str,
    /// Row name.
    pub row: &'static str,
    /// Why.
    pub reason: &'static str,
}

/// Everything one run measured.
#[derive(Default)]
pub struct Outcome {
    /// The figures.
    pub records: Vec<Record>,
    /// The rows skipped, with reasons.
    pub skips: Vec<Skip>,
}

/// Runs the Rust side of `sel` (everything but HotSpot).
pub fn run(sel: &Selection) -> Outcome {
    let total = count_jobs(sel);
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .expect("template")
            .progress_chars("=> "),
    );
    let mut out = Outcome::default();
    for &b in &sel.benches {
        if b.subject_free() {
            if sel.wants("none") {
                bar.set_message(format!("{} none", b.name()));
                let v = bench::run::<subject::SolEmpty>(b, 0, 1, &sel.plan);
                out.records.extend(Record::from_values(
                    b.name(),
                    "none",
                    Kind::SpeedOfLight.as_str(),
                    1,
                    0,
                    &v,
                ));
                bar.inc(1);
            }
            continue;
        }
        let mut v = Visit {
            sel,
            bench: b,
            bar: &bar,
            out: &mut out,
        };
        subject::visit_subjects(&mut v);
        if b == Bench::SystemMonitor {
            for (i, row) in syslock::ROWS.iter().enumerate() {
                if !sel.wants(row.name) {
                    continue;
                }
                bar.set_message(format!("{} {}", b.name(), row.name));
                let v = syslock::run(i, sel.plan.system_calls, sel.plan.reps);
                out.records.extend(Record::from_values(
                    b.name(),
                    row.name,
                    Kind::SystemLock.as_str(),
                    1,
                    0,
                    &v,
                ));
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    out
}

struct Visit<'a> {
    sel: &'a Selection,
    bench: Bench,
    bar: &'a ProgressBar,
    out: &'a mut Outcome,
}

impl SubjectVisitor for Visit<'_> {
    fn visit<S: Subject>(&mut self) {
        if !self.sel.wants(S::NAME) {
            return;
        }
        let b = self.bench;
        if let Some(reason) = b.skip_reason::<S>() {
            self.out.skips.push(Skip {
                bench: b.name(),
                row: S::NAME,
                reason,
            });
            return;
        }
        for param in self.sel.params_of(b) {
            let threads = b.threads(param, self.sel.cloud_threads());
            self.bar
                .set_message(format!("{} {} {}", b.name(), S::NAME, param));
            let v = bench::run::<S>(b, param, threads, &self.sel.plan);
            self.out.records.extend(Record::from_values(
                b.name(),
                S::NAME,
                S::KIND.as_str(),
                threads,
                param,
                &v,
            ));
            self.bar.inc(1);
        }
    }
}

fn count_jobs(sel: &Selection) -> usize {
    let rows = subject::subject_names()
        .into_iter()
        .filter(|(n, _)| sel.wants(n))
        .count();
    sel.benches
        .iter()
        .map(|&b| {
            if b.subject_free() {
                1
            } else {
                let extra = if b == Bench::SystemMonitor {
                    syslock::ROWS.len()
                } else {
                    0
                };
                rows * sel.params_of(b).len() + extra
            }
        })
        .sum()
}
