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

    /// The rows `S` runs `b` as: its own (knob at the default, `None`) if selected, then, if
    /// `b` sweeps knobs and `S` has one, one row per value of the knob, each selected by `S`'s
    /// own name or by the swept row's name (`--protocol 'fable[learn-limit=3]'`).
    pub fn rows_for<S: Subject>(&self, b: Bench) -> Vec<(String, Option<u32>)> {
        let own = self.wants(S::NAME);
        let mut v = Vec::new();
        if own {
            v.push((S::NAME.to_string(), None));
        }
        if let (true, Some(k)) = (b.sweeps_knob(), S::KNOB) {
            for &x in k.values {
                let name = subject::knob_row(S::NAME, &k, x);
                if own || self.wants(&name) {
                    v.push((name, Some(x)));
                }
            }
        }
        v
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
        if b == Bench::UserLoop {
            bar.set_message(b.name());
            let wants = |row: &str, subject: &str| sel.wants(row) || sel.wants(subject);
            out.records.extend(crate::userloop::run(&sel.plan, &wants));
            bar.inc(1);
            continue;
        }
        if b.subject_free() {
            if sel.wants("none") {
                bar.set_message(format!("{} none", b.name()));
                let v = bench::run::<subject::SolEmpty>(b, 0, 1, &sel.plan, None);
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
        let b = self.bench;
        let rows = self.sel.rows_for::<S>(b);
        if rows.is_empty() {
            return;
        }
        if let Some(reason) = b.skip_reason::<S>() {
            self.out.skips.push(Skip {
                bench: b.name(),
                row: S::NAME,
                reason,
            });
            return;
        }
        for (row, knob) in rows {
            for param in self.sel.params_of(b) {
                let threads = b.threads(param, self.sel.cloud_threads());
                self.bar
                    .set_message(format!("{} {} {}", b.name(), row, param));
                let v = bench::run::<S>(b, param, threads, &self.sel.plan, knob);
                self.out.records.extend(Record::from_values(
                    b.name(),
                    &row,
                    S::KIND.as_str(),
                    threads,
                    param,
                    &v,
                ));
                self.bar.inc(1);
            }
        }
    }
}

/// Figures [`run`] will measure (the progress bar's length).
fn count_jobs(sel: &Selection) -> usize {
    struct Count<'a>(&'a Selection, Bench, usize);
    impl SubjectVisitor for Count<'_> {
        fn visit<S: Subject>(&mut self) {
            if self.1.skip_reason::<S>().is_none() {
                self.2 += self.0.rows_for::<S>(self.1).len() * self.0.params_of(self.1).len();
            }
        }
    }
    sel.benches
        .iter()
        .map(|&b| {
            if b == Bench::UserLoop {
                1
            } else if b.subject_free() {
                usize::from(sel.wants("none"))
            } else {
                let mut c = Count(sel, b, 0);
                subject::visit_subjects(&mut c);
                let extra = if b == Bench::SystemMonitor {
                    syslock::ROWS.iter().filter(|r| sel.wants(r.name)).count()
                } else {
                    0
                };
                c.2 + extra
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Plan;
    use std::time::Duration;

    fn tiny(rows: &[&str]) -> Selection {
        Selection {
            benches: vec![Bench::AllocLock, Bench::Sync],
            rows: rows.iter().map(|r| r.to_string()).collect(),
            params: Some(vec![2]),
            threads: None,
            plan: Plan {
                reps: 1,
                pairs: 2_000,
                figure_budget: Duration::from_secs(10),
                ..Plan::new(true, None)
            },
        }
    }

    /// Every subject with a knob gets one AllocLock row per knob value (and only AllocLock
    /// sweeps), selected by the subject's name; a swept row can be selected alone; the
    /// progress bar counts exactly the figures measured.
    #[test]
    fn knob_sweep_rows() {
        struct Knobbed(Vec<(&'static str, objmon::vm::Knob)>);
        impl SubjectVisitor for Knobbed {
            fn visit<S: Subject>(&mut self) {
                if let Some(k) = S::KNOB {
                    self.0.push((S::NAME, k));
                }
            }
        }
        let mut knobbed = Knobbed(Vec::new());
        subject::visit_subjects(&mut knobbed);
        assert!(
            !knobbed.0.is_empty(),
            "no protocol has a knob: nothing swept"
        );
        for (name, k) in knobbed.0 {
            let sel = tiny(&[name]);
            let out = run(&sel);
            assert_eq!(out.records.len(), count_jobs(&sel), "{name}");
            let rows = |bench: &str| -> Vec<String> {
                out.records
                    .iter()
                    .filter(|r| r.bench == bench)
                    .map(|r| r.protocol.clone())
                    .collect()
            };
            let mut want = vec![name.to_string()];
            want.extend(k.values.iter().map(|&v| subject::knob_row(name, &k, v)));
            assert_eq!(rows("alloc-lock"), want);
            assert_eq!(rows("sync"), vec![name.to_string()]);

            let one = subject::knob_row(name, &k, k.values[0]);
            let sel = tiny(&[&one]);
            let out = run(&sel);
            assert_eq!(out.records.len(), 1, "{one}");
            assert_eq!(out.records[0].protocol, one);
            assert_eq!(count_jobs(&sel), 1);
        }
    }
}
