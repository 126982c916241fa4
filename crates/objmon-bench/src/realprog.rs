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

use crate::doc::Block;
use crate::report::num;
use crate::trace::{self, Characterization, ReplayResult, Trace, DEPTH_BUCKETS, LRU_SIZES};
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
pub const SMALL_TRACE: &[u8] = include_bytes!("../tests/data/h2-small.trace");

/// The checked-in trace's name in the tables.
const SMALL_NAME: &str = "h2-small";

/// Every replayed wait is bounded by this (RESULTS.md's replays: no wait reached it).
const WAIT_CAP: Duration = Duration::from_millis(100);

/// A replay without progress for this long is a deadlock the recording did not have (the
/// driver reports it and exits).
const STALL: Duration = Duration::from_secs(20);

/// The protocol a HotSpot locking mode corresponds to, for the replayed locking time beside its
/// wall time: (mode prefix as hotspot.sh names it, protocol).
const HOTSPOT_ANALOGUES: [(&str, &str); 5] = [
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
struct Spread {
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
struct Replayed {
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

/// Seed 000 Table 1 and Figure 3, seed 003 Tables 2–5, with the seeds' rows beside ours.
fn characterization(d: &mut Vec<Block>, rs: &[Replayed]) {
    let pct = |a: u64, b: u64| {
        if b == 0 {
            0.0
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    d.push(Block::H(
        3,
        "Programs (seed 000 Table 1, seed 003 Table 2)".into(),
    ));
    let mut rows: Vec<Vec<String>> = rs
        .iter()
        .map(|r| {
            let c = &r.chars;
            vec![
                c.name.clone(),
                c.threads.to_string(),
                c.allocations.map_or("—".into(), |a| a.to_string()),
                c.synchronized_objects.to_string(),
                c.lock_ops.to_string(),
                format!("{:.1}", c.ops_per_object),
                c.multi_thread_objects.to_string(),
                c.owner_changes.to_string(),
                format!("{} ({})", c.max_held, c.max_held_one_thread),
            ]
        })
        .collect();
    for (src, objs, sync, ops, per) in trace::SEED_TABLE1 {
        let mut row = vec![format!("({src})"), String::new(), objs.to_string()];
        row.extend([sync, ops, per].map(|s| s.to_string()));
        row.extend([String::new(), String::new(), String::new()]);
        rows.push(row);
    }
    d.push(Block::Table(
        [
            "program",
            "threads",
            "allocations",
            "sync'd objects",
            "lock ops",
            "ops / sync'd object",
            "objects locked by > 1 thread",
            "owner changes",
            "most held at once (one thread)",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    ));
    d.push(Block::P(
        "Allocations: allocation bytecodes run in instrumented classes (a lower bound of the \
         objects allocated). Owner changes: acquisitions of an unlocked object by a thread \
         other than its previous locker (what a biased lock revokes). Seed 003: Jigsaw held at \
         most 25 monitors at once, javac 5."
            .into(),
    ));

    d.push(Block::H(
        3,
        "Nesting depth of lock operations (seed 000 Figure 3)".into(),
    ));
    let mut rows: Vec<Vec<String>> = rs
        .iter()
        .map(|r| {
            let c = &r.chars;
            let h = &c.depth_histogram;
            let deep: u64 = h.iter().skip(3).sum();
            vec![
                c.name.clone(),
                format!("{:.1}%", c.unlocked_pct),
                format!("{:.2}%", pct(h.get(1).copied().unwrap_or(0), c.lock_ops)),
                format!("{:.2}%", pct(h.get(2).copied().unwrap_or(0), c.lock_ops)),
                format!("{:.2}%", pct(deep, c.lock_ops)),
                c.max_depth.to_string(),
            ]
        })
        .collect();
    rows.push(vec![
        "(seed 000: 21 programs)".into(),
        "median 80%, at least 45%".into(),
        "most of the rest".into(),
        String::new(),
        String::new(),
        "≤ 4".into(),
    ]);
    const { assert!(DEPTH_BUCKETS >= 4) };
    d.push(Block::Table(
        [
            "program",
            "on an unlocked object (First)",
            "depth 2",
            "depth 3",
            "depth ≥ 4",
            "max depth",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    ));

    d.push(Block::H(
        3,
        "CACAO's monitor table and an LRU monitor cache (seed 003 Tables 3–5)".into(),
    ));
    let mut rows: Vec<Vec<String>> = rs
        .iter()
        .map(|r| {
            let k = &r.chars.cacao;
            vec![
                r.name.clone(),
                k.enter_calls.to_string(),
                format!("{:.3}%", k.enter_slow_pct()),
                k.exit_calls.to_string(),
                format!("{:.3}%", k.exit_slow_pct()),
            ]
        })
        .collect();
    for (p, row) in trace::SEED_CACAO {
        let c: Vec<&str> = row.split(" | ").collect();
        rows.push(vec![
            format!("(seed 003: {p})"),
            c[0].into(),
            c[4].into(),
            c[5].into(),
            c[8].into(),
        ]);
    }
    d.push(Block::Table(
        [
            "program",
            "monitorenters",
            "slow enters (not the first chain entry)",
            "monitorexits",
            "slow exits",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    ));
    let mut rows: Vec<Vec<String>> = rs
        .iter()
        .map(|r| {
            let mut row = vec![r.name.clone()];
            row.extend(r.chars.lru_miss_pct.iter().map(|m| format!("{m:.3}%")));
            row
        })
        .collect();
    for (p, row) in trace::SEED_LRU {
        let mut cells = vec![format!("(seed 003: {p})")];
        cells.extend(row.split(" | ").map(String::from));
        rows.push(cells);
    }
    let mut head = vec!["program: LRU miss rate with".to_string()];
    head.extend(
        LRU_SIZES
            .iter()
            .map(|n| format!("{n} entr{}", if *n == 1 { "y" } else { "ies" })),
    );
    d.push(Block::Table(head, rows));
}

/// Wall ns per operation of every protocol and anchor on every program.
fn replay_table(d: &mut Vec<Block>, rs: &[Replayed]) {
    d.push(Block::H(3, "Replay: ns per operation".into()));
    d.push(Block::List(
        rs.iter()
            .map(|r| {
                let bounded: u64 = r
                    .rows
                    .iter()
                    .flat_map(|(_, v)| v)
                    .map(|x| x.waits_bounded)
                    .sum();
                let errors: u64 = r.rows.iter().flat_map(|(_, v)| v).map(|x| x.errors).sum();
                format!(
                    "`{}`: {} threads, {} objects, {} operations replayed (unmatched \
                     operations dropped: {}; threads cut at a wait that never ended: {}; waits \
                     that reached the bound: {}; operations refused: {})",
                    r.name,
                    r.plan.threads.len(),
                    r.plan.objects,
                    r.plan.ops,
                    r.plan.unmatched,
                    r.plan.unended_waits,
                    bounded,
                    errors
                )
            })
            .collect(),
    ));
    let mut head = vec!["protocol".to_string()];
    head.extend(rs.iter().map(|r| format!("{}: wall ns/op", r.name)));
    head.extend(rs.iter().map(|r| format!("{}: inflations", r.name)));
    let rows = row_names(rs)
        .into_iter()
        .map(|n| {
            let mut row = vec![n.clone()];
            row.extend(rs.iter().map(|r| Spread::cell(r.ns_per_op(&n))));
            row.extend(rs.iter().map(|r| {
                let v = r
                    .runs(&n)
                    .map(|v| v.iter().filter_map(|x| x.inflations.map(|i| i as f64)));
                v.and_then(Spread::of)
                    .map_or("—".into(), |s| format!("{:.0}", s.median))
            }));
            row
        })
        .collect();
    d.push(Block::Table(head, rows));
    d.push(Block::P(
        "Wall ns/op: from the start barrier until the last thread finished, over the \
         operations replayed (lock, unlock, wait, notify). Inflations: median over the \
         replays; — for the anchors (`monitor` is objmon::Monitor<()> on the default \
         protocol's process-wide runtime, `std-mutex` std::sync::Mutex + Condvar, \
         `parking-lot` parking_lot::ReentrantMutex), which have no runtime counters of their \
         own."
            .into(),
    ));
}

/// Every protocol and anchor any program replayed, in catalog order.
fn row_names(rs: &[Replayed]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for r in rs {
        for (n, _) in &r.rows {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    names
}

/// Seed 000 Figure 5: each protocol's speed-up over `base` per program, and the median over
/// the programs.
fn speedups(d: &mut Vec<Block>, rs: &[Replayed], base: &str, quote: &str) {
    d.push(Block::H(
        3,
        format!("Speed-up over `{base}` (seed 000 Figure 5)"),
    ));
    d.push(Block::P(format!(
        "`{base}`'s wall time per operation over each row's, paired replay by replay: median \
         [min–max] of the paired ratios (> 1: faster than `{base}`). The last column is the \
         median over the programs of their medians, with the programs' range. {quote}"
    )));
    let mut head = vec!["protocol".to_string()];
    head.extend(rs.iter().map(|r| r.name.clone()));
    head.push("median over programs".into());
    let rows = row_names(rs)
        .into_iter()
        .map(|n| {
            let per: Vec<Option<Spread>> = rs
                .iter()
                .map(|r| Spread::of(r.paired_speedups(&n, base)))
                .collect();
            let mut row = vec![n];
            row.extend(per.iter().map(|s| Spread::ratio_cell(*s)));
            row.push(Spread::ratio_cell(Spread::of(
                per.iter().flatten().map(|s| s.median),
            )));
            row
        })
        .collect();
    d.push(Block::Table(head, rows));
}

/// Seed 002 §5.2: time relative to thin of the biased protocols and FABLE on the
/// multi-threaded programs, and their geometric mean as seed 002 Figure 12 computes it.
fn fable_vs_biased(d: &mut Vec<Block>, rs: &[Replayed]) {
    d.push(Block::H(
        3,
        "FABLE vs biased vs thin on the multi-threaded programs (seed 002 §5.2)".into(),
    ));
    let multi: Vec<&Replayed> = rs.iter().filter(|r| r.multi_threaded()).collect();
    if multi.is_empty() {
        d.push(Block::P(
            "No program here is multi-threaded (at least two threads each making 1% of the \
             lock operations, and an object locked by more than one thread)."
                .into(),
        ));
        return;
    }
    d.push(Block::P(
        "Programs in which at least two threads each make 1% or more of the lock operations \
         and some object is locked by more than one thread. Wall time per operation relative \
         to `thin` (lower is better), paired replay by replay: median [min–max]. The geometric mean follows seed 002 Figure 12: one \
         geometric mean over the programs per repetition, then their median and range. Seed \
         002 (16 DaCapo and SPECjvm98 programs, few shared locks): FABLE is typically 1% \
         slower than simple biased locking; biased locking is much faster than thin locking on \
         Core 2 and barely faster on Core i7, whose CAS is cheap."
            .into(),
    ));
    let protos: Vec<String> = row_names(rs)
        .into_iter()
        .filter(|n| n == "thin" || n.starts_with("biased") || n.starts_with("fable"))
        .collect();
    let mut rows = Vec::new();
    for r in &multi {
        for p in &protos {
            let rel: Vec<f64> = r
                .paired_speedups(p, "thin")
                .iter()
                .map(|s| 1.0 / s)
                .collect();
            let med = |f: &dyn Fn(&ReplayResult) -> Option<u64>| {
                Spread::of(
                    r.runs(p)
                        .unwrap_or_default()
                        .iter()
                        .filter_map(|x| f(x).map(|v| v as f64)),
                )
                .map_or("—".into(), |s| format!("{:.0}", s.median))
            };
            rows.push(vec![
                format!("{} ({} owner changes)", r.name, r.chars.owner_changes),
                p.clone(),
                Spread::cell(r.ns_per_op(p)),
                Spread::ratio_cell(Spread::of(rel)),
                med(&|x| x.revocations),
                med(&|x| x.inflations),
            ]);
        }
    }
    // One program's geometric mean is its own row again.
    for p in protos.iter().filter(|_| multi.len() > 1) {
        let per: Vec<Vec<f64>> = multi
            .iter()
            .map(|r| {
                r.paired_speedups(p, "thin")
                    .iter()
                    .map(|s| 1.0 / s)
                    .collect()
            })
            .collect();
        let reps = per.iter().map(Vec::len).min().unwrap_or(0);
        let geo = (0..reps)
            .map(|i| (per.iter().map(|v| v[i].ln()).sum::<f64>() / per.len() as f64).exp());
        rows.push(vec![
            format!("geometric mean over {} programs", multi.len()),
            p.clone(),
            String::new(),
            Spread::ratio_cell(Spread::of(geo)),
            String::new(),
            String::new(),
        ]);
    }
    d.push(Block::Table(
        [
            "program",
            "protocol",
            "wall ns/op",
            "time / thin",
            "revocations",
            "inflations",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    ));
}

/// One line of a `hotspot-NAME.tsv` (written by `java/workloads/hotspot.sh`).
#[derive(Clone, Debug, PartialEq)]
struct HotspotRow {
    workload: String,
    mode: String,
    flags: String,
    /// Wall time of each run, s (empty when skipped).
    times: Vec<f64>,
    /// Why skipped (empty otherwise).
    note: String,
}

/// Parses hotspot.sh's TSV: `workload mode flags wall_s note`, `#` lines are comments.
fn parse_hotspot(text: &str) -> Vec<HotspotRow> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Some(HotspotRow {
                workload: f.first()?.to_string(),
                mode: f.get(1)?.to_string(),
                flags: f.get(2).unwrap_or(&"").to_string(),
                times: f
                    .get(3)
                    .unwrap_or(&"")
                    .split_whitespace()
                    .filter_map(|t| t.parse().ok())
                    .collect(),
                note: f.get(4).unwrap_or(&"").trim().to_string(),
            })
        })
        .collect()
}

/// Every `hotspot-*.tsv` in `dir`, by file name.
fn read_hotspot(dir: &Path) -> Vec<HotspotRow> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name().is_some_and(|n| {
                        let n = n.to_string_lossy();
                        n.starts_with("hotspot-") && n.ends_with(".tsv")
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|t| parse_hotspot(&t))
        .collect()
}

/// HotSpot's wall times of the same workloads, beside the locking time the replay of the
/// mode's objmon analogue takes.
fn hotspot(d: &mut Vec<Block>, dir: &Path, rs: &[Replayed]) {
    d.push(Block::H(
        3,
        "HotSpot wall times of the same workloads".into(),
    ));
    let rows = read_hotspot(dir);
    if rows.is_empty() {
        d.push(Block::P(format!(
            "No HotSpot wall times in {}: `java/workloads/hotspot.sh NAME` runs workload NAME \
             without the recorder on each HotSpot locking mode and writes {}/hotspot-NAME.tsv.",
            dir.display(),
            dir.display()
        )));
        return;
    }
    d.push(Block::P(
        "The workloads run without the recorder on each HotSpot locking mode found \
         (`java/workloads/hotspot.sh`): wall time of the whole JVM run, median [min–max] over \
         the runs. Beside it, the objmon protocol closest to the mode (LockingMode=0: monitors \
         only ≈ `fat`; 1 and JDK 17's default: stack-locking ≈ `stack`; 2: lightweight ≈ \
         `lightweight`; JDK 17 +UseBiasedLocking ≈ `biased`) and the time its replay of the \
         workload's trace took (replayed operations × wall ns/op, median [min–max]), when a \
         trace of the same name was replayed above: how much of the wall time locking can \
         account for."
            .into(),
    ));
    let table = rows
        .iter()
        .map(|h| {
            let wall = if h.times.is_empty() {
                format!("skipped: {}", h.note)
            } else {
                format!(
                    "{} s ({} runs)",
                    Spread::cell(Spread::of(h.times.iter().copied())),
                    h.times.len()
                )
            };
            let analogue = HOTSPOT_ANALOGUES
                .iter()
                .find(|(m, _)| h.mode.starts_with(m))
                .map(|(_, p)| *p);
            let replayed = analogue
                .and_then(|p| {
                    let r = rs.iter().find(|r| r.name == h.workload)?;
                    let ops = r.plan.ops as f64;
                    let s = r.ns_per_op(p)?;
                    Some(format!(
                        "{} ms",
                        Spread::cell(Some(Spread {
                            median: s.median * ops / 1e6,
                            min: s.min * ops / 1e6,
                            max: s.max * ops / 1e6,
                        }))
                    ))
                })
                .unwrap_or_else(|| "—".into());
            vec![
                h.workload.clone(),
                h.mode.clone(),
                if h.flags.is_empty() {
                    "(none)".into()
                } else {
                    h.flags.clone()
                },
                wall,
                analogue.unwrap_or("—").to_string(),
                replayed,
            ]
        })
        .collect();
    d.push(Block::Table(
        [
            "workload",
            "mode",
            "flags",
            "wall time",
            "objmon analogue",
            "its replayed locking time",
        ]
        .map(String::from)
        .to_vec(),
        table,
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Text of every block, for searching.
    fn text(d: &[Block]) -> String {
        crate::doc::markdown(d)
    }

    /// A fresh empty directory under the system's temp dir.
    fn empty_dir(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("objmon-realprog-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn small_trace_through_the_section() {
        let dir = empty_dir("none");
        let mut d = Vec::new();
        build(&mut d, &dir, 2);
        let md = text(&d);
        // No trace: one line names the command that records them, and the checked-in trace
        // fills the section.
        assert_eq!(md.matches(RECORD_COMMAND).count(), 1, "{md}");
        assert!(md.contains("h2-small"));
        // Every protocol of the catalog and every anchor has a replay row and a speed-up.
        for n in objmon::vm::names().into_iter().chain(trace::ANCHORS) {
            assert!(md.contains(&format!("| {n} | ")), "no row for {n} in\n{md}");
        }
        for h in [
            "Speed-up over `monitor-cache`",
            "Speed-up over `fat`",
            "FABLE vs biased vs thin",
            "seed 000 Table 1",
            "seed 003: Jigsaw",
            "No HotSpot wall times",
        ] {
            assert!(md.contains(h), "no {h:?} in\n{md}");
        }
        // The checked-in trace is multi-threaded: FABLE vs biased has rows, and the replay
        // refused nothing.
        assert!(
            md.contains("| h2-small (698 owner changes) | fable | "),
            "{md}"
        );
        assert!(md.contains("operations refused: 0)"), "{md}");
        // Speed-ups are medians with their spread; `monitor-cache` over itself is exactly 1.
        assert!(md.contains("| monitor-cache | 1.00× [1.00–1.00] | 1.00× [1.00–1.00] |"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn small_trace_characterized_exactly() {
        let p = small_program();
        let c = trace::characterize(&p.name, &p.trace);
        assert_eq!(c.lock_ops, 43_247);
        assert_eq!(c.synchronized_objects, 7_143);
        assert_eq!(c.multi_thread_objects, 61);
        assert_eq!(c.anomalies, 0);
        assert!(p.trace.complete);
    }

    #[test]
    fn hotspot_tsv_read_with_skips() {
        let t = "# workload\tmode\tflags\twall_s\tnote\n\
                 h2\thotspot25-lm0\t-XX:LockingMode=0\t3.5 3.1 3.3\t\n\
                 h2\thotspot17-biased\t-XX:+UseBiasedLocking\t\tno JDK at /x\n";
        let rows = parse_hotspot(t);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].times, vec![3.5, 3.1, 3.3]);
        assert!(rows[1].times.is_empty());
        assert_eq!(rows[1].note, "no JDK at /x");
        let s = Spread::of(rows[0].times.iter().copied()).unwrap();
        assert_eq!((s.median, s.min, s.max), (3.3, 3.1, 3.5));
    }

    #[test]
    fn traces_and_hotspot_from_a_directory() {
        let dir = empty_dir("dir");
        std::fs::write(dir.join("h2.trace"), SMALL_TRACE).unwrap();
        std::fs::write(dir.join("h2-copy.trace"), SMALL_TRACE).unwrap();
        std::fs::write(dir.join("broken.trace"), b"not a trace").unwrap();
        std::fs::write(
            dir.join("hotspot-h2.tsv"),
            "h2\thotspot25-lm2\t-XX:LockingMode=2\t3.0 3.2 2.9\t\n",
        )
        .unwrap();
        let mut d = Vec::new();
        build(&mut d, &dir, 1);
        let md = text(&d);
        assert!(!md.contains(RECORD_COMMAND), "{md}");
        assert!(md.contains("broken.trace: unreadable"));
        // The HotSpot row, its analogue and the analogue's replayed locking time.
        assert!(
            md.contains("| h2 | hotspot25-lm2 | -XX:LockingMode=2 | 3.000 [2.900–3.200] s (3 runs) | lightweight | "),
            "{md}"
        );
        assert!(md.contains(" ms |"));
        // Two multi-threaded programs: seed 002's geometric mean over them.
        assert!(
            md.contains("| geometric mean over 2 programs | fable |  | "),
            "{md}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
