//! The report's "Real programs" section: the recorded monitor traces of real Java
//! programs, characterized as the seeds tabulate their programs (seed 000 Table 1 and Figure 3,
//! seed 003 Tables 2–5), replayed on every protocol and anchor (seed 000 Figure 5's speed-ups
//! over `monitor-cache` and `fat`; seed 002 §5.2's FABLE vs biased vs thin on the
//! multi-threaded traces), and beside them the HotSpot wall times of the same workloads.
//!
//! Traces come from a directory (`objmon-bench report --traces DIR`, default
//! [`DEFAULT_DIR`]), where `java/workloads/run.sh all target/traces` records them (minutes) and
//! `java/workloads/hotspot.sh NAME` writes `hotspot-NAME.tsv`. When the directory holds no
//! trace, the section says so in one line and replays [`SMALL_TRACE`], a short h2 run checked
//! into the repository, so that it is never empty and CI exercises it.
//!
//! Counts (the characterization) are exact and deterministic per trace; every time is a
//! median over the replays with its min–max. Replays run repetition by repetition, every
//! protocol and anchor once per repetition, so a speed-up pairs replays made close together in
//! time: its spread is the range of those paired ratios.
//!
//! This file finds the programs and replays them; [`tables`](mod@tables) writes the
//! characterization and the replay tables, [`hotspot`](mod@hotspot) HotSpot's own wall times beside them.

mod hotspot;
mod tables;
#[cfg(test)]
mod tests;

use hotspot::hotspot;
use tables::{characterization, fable_vs_biased, replay_table, speedups};

use crate::doc::Block;
use crate::report::num;
use crate::trace::{self, Characterization, ReplayResult, Trace};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// Where the report looks for traces (`*.trace`) and HotSpot wall times (`hotspot-*.tsv`)
/// unless `--traces DIR` says otherwise.
pub const DEFAULT_DIR: &str = "target/traces";

/// The one command that records every workload's trace into [`DEFAULT_DIR`].
pub const RECORD_COMMAND: &str = "java/workloads/run.sh all target/traces";

/// A short recorded trace checked into the repository (556 KB): H2 2.2.224, 500 accounts,
/// 4 client threads × 200 transactions, recorded by
/// `JAVA_OPTS="-Dobjmon.h2.tx=200 -Dobjmon.h2.accounts=500" java/workloads/run.sh h2 DIR`
/// (see `tests/data/README.md`). 8 threads, 7,143 synchronized objects, 43,247 lock operations,
/// 61 objects locked by more than one thread.
pub const SMALL_TRACE: &[u8] = include_bytes!("../../tests/data/h2-small.trace");

/// The checked-in trace's name in the tables.
const SMALL_NAME: &str = "h2-small";

/// Every replayed wait is bounded by this (RESULTS.md's replays: no wait reached it).
const WAIT_CAP: Duration = Duration::from_millis(100);

/// A replay without progress for this long is a deadlock the recording did not have (the
/// driver reports it and exits).
const STALL: Duration = Duration::from_secs(20);

/// The protocol a HotSpot locking mode corresponds to, for the replayed locking time beside its
/// wall time: (mode prefix as hotspot.sh names it, protocol).
pub(super) const HOTSPOT_ANALOGUES: [(&str, &str); 5] = [
    ("hotspot25-lm0", "fat"),
    ("hotspot25-lm1", "stack"),
    ("hotspot25-lm2", "lightweight"),
    ("hotspot17-default", "stack"),
    ("hotspot17-biased", "biased"),
];

static TRACES_DIR: OnceLock<PathBuf> = OnceLock::new();

/// Sets the directory [`section`] reads (`report --traces DIR`); the first call wins.
pub fn set_traces_dir(dir: PathBuf) {
    let _ = TRACES_DIR.set(dir);
}

/// Appends the "Real programs" section to the report: characterization, replays (after an
/// untimed one, 7 per protocol with `quick`, else 15: one replay of the checked-in trace takes
/// a few ms, xalan's 4 M operations some 60 ms), speed-ups, FABLE vs biased vs thin, HotSpot
/// wall times.
pub fn section(d: &mut Vec<Block>, quick: bool) {
    let dir = TRACES_DIR
        .get()
        .cloned()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR));
    build(d, &dir, if quick { 7 } else { 15 });
}

/// A trace to report on.
struct Program {
    /// Table name (the file stem).
    name: String,
    /// Where it came from (for the text).
    source: String,
    trace: Trace,
}

/// The trace checked into the repository.
fn small_program() -> Program {
    Program {
        name: SMALL_NAME.into(),
        source: "crates/objmon-bench/tests/data/h2-small.trace (checked in)".into(),
        trace: trace::parse(SMALL_TRACE).expect("the checked-in trace parses"),
    }
}

/// The `*.trace` files in `dir`, by name; unreadable ones become notes.
fn find_programs(dir: &Path) -> (Vec<Program>, Vec<String>) {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "trace"))
                .collect()
        })
        .unwrap_or_default();
    paths.sort();
    let (mut programs, mut notes) = (Vec::new(), Vec::new());
    for p in paths {
        let name = p
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        match trace::read(&p) {
            Ok(t) if t.events.is_empty() => {
                notes.push(format!("{}: no monitor operation, left out", p.display()))
            }
            Ok(t) => {
                if !t.complete {
                    notes.push(format!(
                        "{}: no END record (the JVM did not exit normally); replayed as far as \
                         it goes",
                        p.display()
                    ));
                }
                programs.push(Program {
                    name,
                    source: p.display().to_string(),
                    trace: t,
                });
            }
            Err(e) => notes.push(format!("{}: unreadable ({e}), left out", p.display())),
        }
    }
    (programs, notes)
}

/// Median and range of some figures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Spread {
    median: f64,
    min: f64,
    max: f64,
}

impl Spread {
    /// `None` for no finite figure.
    fn of(v: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let mut v: Vec<f64> = v.into_iter().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
        })
    }

    /// `12.3 [11.0–14.2]`.
    fn cell(s: Option<Spread>) -> String {
        s.map_or("—".into(), |s| {
            format!("{} [{}–{}]", num(s.median), num(s.min), num(s.max))
        })
    }

    /// `1.23× [1.10–1.35]`.
    fn ratio_cell(s: Option<Spread>) -> String {
        s.map_or("—".into(), |s| {
            format!("{:.2}× [{:.2}–{:.2}]", s.median, s.min, s.max)
        })
    }
}

/// One program's characterization and replays.
pub(super) struct Replayed {
    name: String,
    chars: Characterization,
    plan: trace::ReplayPlan,
    /// Per protocol or anchor, in catalog order: one result per repetition.
    rows: Vec<(String, Vec<ReplayResult>)>,
}

impl Replayed {
    fn runs(&self, row: &str) -> Option<&[ReplayResult]> {
        self.rows
            .iter()
            .find(|(n, _)| n == row)
            .map(|(_, r)| r.as_slice())
    }

    /// Wall ns per operation of `row` over the repetitions.
    fn ns_per_op(&self, row: &str) -> Option<Spread> {
        Spread::of(self.runs(row)?.iter().map(|r| r.ns_per_op))
    }

    /// `base`'s time over `row`'s, per repetition (> 1: `row` is faster).
    fn paired_speedups(&self, row: &str, base: &str) -> Vec<f64> {
        match (self.runs(row), self.runs(base)) {
            (Some(r), Some(b)) => r
                .iter()
                .zip(b)
                .map(|(r, b)| b.ns_per_op / r.ns_per_op)
                .collect(),
            _ => Vec::new(),
        }
    }

    /// A multi-threaded program: at least two threads each made at least 1% of the lock
    /// operations, and some object was locked by more than one thread. (Every JVM has a few
    /// threads of its own that lock a little: antlr's trace has 3, but one thread makes
    /// 99.998% of its lock operations; in javac's a second thread makes 2.6%.)
    fn multi_threaded(&self) -> bool {
        let locks = |ops: &[trace::Op]| {
            ops.iter()
                .filter(|o| matches!(o, trace::Op::Lock(_)))
                .count()
        };
        let total: usize = self.plan.threads.iter().map(|(_, ops)| locks(ops)).sum();
        let busy = self
            .plan
            .threads
            .iter()
            .filter(|(_, ops)| locks(ops) * 100 >= total)
            .count();
        busy >= 2 && self.chars.multi_thread_objects > 0
    }
}

/// Characterizes and replays `p` `reps` times on every protocol and anchor, repetition by
/// repetition, after one untimed repetition (first-touch page faults, thread start-up).
fn replay_program(p: &Program, reps: usize) -> Replayed {
    let plan = trace::plan(&p.trace, WAIT_CAP);
    let _warm_up = trace::replay_all(&plan, &[], 1, STALL);
    let mut rows: Vec<(String, Vec<ReplayResult>)> = Vec::new();
    for _ in 0..reps.max(1) {
        for run in trace::replay_all(&plan, &[], 1, STALL)
            .into_iter()
            .flatten()
        {
            match rows.iter_mut().find(|(n, _)| *n == run.protocol) {
                Some((_, v)) => v.push(run),
                None => rows.push((run.protocol.clone(), vec![run])),
            }
        }
    }
    Replayed {
        name: p.name.clone(),
        chars: trace::characterize(&p.name, &p.trace),
        plan,
        rows,
    }
}

/// The section, from the traces in `dir` (or the checked-in one), `reps` replays each.
fn build(d: &mut Vec<Block>, dir: &Path, reps: usize) {
    d.push(Block::H(2, "Real programs (recorded Java traces)".into()));
    let (mut programs, mut notes) = find_programs(dir);
    if programs.is_empty() {
        notes.insert(
            0,
            format!(
                "No recorded trace in {}: `{RECORD_COMMAND}` records javac, h2, lucene, xalan \
                 and antlr (minutes); until then this section replays the short h2 trace \
                 checked into the repository.",
                dir.display()
            ),
        );
        programs.push(small_program());
    }
    d.push(Block::P(format!(
        "The monitor operations of real Java programs, recorded by the objmon agent \
         (`java/agent/`, every monitorenter/exit, synchronized method, wait and notify, JDK \
         classes included) and replayed on every protocol and anchor: each recorded thread on \
         its own OS thread, its operations in its recorded order, every wait held until the \
         notifies that preceded its recorded end have been replayed (at most {} ms). Traces: \
         {}. Counts are exact; times are the median of {reps} replays per protocol with \
         [min–max], the replays made repetition by repetition (every protocol once per \
         repetition) after an untimed one. A replay compresses time: the program's computation between operations is \
         gone, so threads that were apart in the program overlap and contend more than they \
         did.",
        WAIT_CAP.as_millis(),
        programs
            .iter()
            .map(|p| format!("`{}` ({})", p.name, p.source))
            .collect::<Vec<_>>()
            .join(", ")
    )));
    if !notes.is_empty() {
        d.push(Block::List(notes));
    }
    let replayed: Vec<Replayed> = programs
        .iter()
        .map(|p| {
            eprintln!("real programs: replaying {} ({reps}×) ...", p.name);
            replay_program(p, reps)
        })
        .collect();
    characterization(d, &replayed);
    replay_table(d, &replayed);
    speedups(
        d,
        &replayed,
        "monitor-cache",
        "Seed 000 Figure 5: thin locks sped its 21 programs up by a median of 1.22× and at \
         most 1.7× over JDK 1.1.1, whose monitor cache `monitor-cache` models.",
    );
    speedups(
        d,
        &replayed,
        "fat",
        "`fat` inflates every object on its first lock: the cost of a monitor per object.",
    );
    fable_vs_biased(d, &replayed);
    hotspot(d, dir, &replayed);
}
