//! The report's "Monitor events" section: what the events of a contended run look like, what
//! they say per protocol, and what turning them on costs. Everything in it is measured by
//! the report's run (no figure is asserted by a test).
//!
//! Owns: the section's runs, sizes and text. Not: running a workload (`recording.rs`), the
//! picture (`figures.rs`).
//!
//! - **Timeline** (`events-timeline.svg`): prod-cons with [`THREADS`] threads under `thin`
//!   and `fable`, every event kept (threshold 0), drawn by `figures::timeline`.
//! - **Latencies**: the same run on every protocol of `objmon::vm::visit_all`; per protocol
//!   the contended enters' and the waits' durations as p50 / p99 / max (nearest rank), how
//!   many of the enters parked, and the revocations.
//! - **Cost**: `threads` and prod-cons with [`THREADS`] threads under `thin` and `fable`,
//!   events off, on at JFR's default thresholds (20 ms for enters and waits, 0 for the
//!   rest), and on at 0; rounds of the three in turn (the first of each round rotating, one
//!   untimed warm-up round), the median ns per operation of each, on / off as a ratio, and
//!   the events a run delivered. One run of a shared 2-core machine moves by ±10 %: a ratio
//!   within that is no cost that shows.
//!
//! Sizes: [`Sizes::quick`] keeps the section at a few seconds (`report --quick` runs in CI);
//! [`Sizes::full`] runs about four times as much per run, and more rounds.

use super::figures;
use super::recording::{self, Events, Run, Spec, Workload};
use crate::doc::Block;
use objmon::events::Event;
use std::path::Path;
use std::time::{Duration, Instant};

/// Threads of every run of the section.
pub const THREADS: usize = 4;

/// The protocols of the picture and of the cost table.
const PICTURED: [&str; 2] = ["thin", "fable"];

/// The SVG's file name beside the report.
pub const TIMELINE_SVG: &str = "events-timeline.svg";

/// How much the section runs.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// Objects per producer of the latency runs (and the picture's).
    pub latency_ops: u64,
    /// Lock+unlock pairs per thread of a `threads` cost run.
    pub threads_ops: u64,
    /// Objects per producer of a prod-cons cost run.
    pub prod_cons_ops: u64,
    /// Timed rounds of the cost runs.
    pub reps: usize,
}

impl Sizes {
    /// `report --quick`.
    pub fn quick() -> Self {
        Sizes {
            latency_ops: 3_000,
            threads_ops: 1_000_000,
            prod_cons_ops: 10_000,
            reps: 9,
        }
    }

    /// The full report.
    pub fn full() -> Self {
        Sizes {
            latency_ops: 20_000,
            threads_ops: 4_000_000,
            prod_cons_ops: 40_000,
            reps: 11,
        }
    }
}

/// p50, p99 and max of `v` (nearest rank), `None` if empty.
pub fn percentiles(v: &mut [u64]) -> Option<[u64; 3]> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let rank = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    Some([rank(0.50), rank(0.99), v[v.len() - 1]])
}

/// A duration for a table cell: `850 ns`, `12.3 µs`, `4.56 ms`.
pub fn fmt_ns(ns: u64) -> String {
    match ns {
        0..=999 => format!("{ns} ns"),
        1_000..=9_999 => format!("{:.2} µs", ns as f64 / 1e3),
        10_000..=999_999 => format!("{:.1} µs", ns as f64 / 1e3),
        _ => format!("{:.2} ms", ns as f64 / 1e6),
    }
}

/// The durations of `run`'s enters and waits, ns, and how many enters parked.
fn durations(run: &Run) -> (Vec<u64>, Vec<u64>, usize, usize) {
    let (mut enters, mut waits, mut parked, mut revokes) = (Vec::new(), Vec::new(), 0, 0);
    for e in &run.events {
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        match e {
            Event::MonitorEnter {
                site, parked: p, ..
            } => {
                enters.push(ns(site.duration));
                parked += usize::from(*p);
            }
            Event::MonitorWait { site, .. } => waits.push(ns(site.duration)),
            Event::BiasRevoke { .. } => revokes += 1,
            _ => {}
        }
    }
    (enters, waits, parked, revokes)
}

/// The latency table's row of `run`.
pub fn latency_row(run: &Run) -> Vec<String> {
    let (mut enters, mut waits, parked, revokes) = durations(run);
    let cells = |v: &mut Vec<u64>| -> Vec<String> {
        let n = v.len();
        let mut c = vec![n.to_string()];
        match percentiles(v) {
            Some(p) => c.extend(p.map(fmt_ns)),
            None => c.extend(["—", "—", "—"].map(String::from)),
        }
        c
    };
    let e = cells(&mut enters);
    let mut row = vec![run.protocol.to_string(), e[0].clone()];
    row.push(if enters.is_empty() {
        "—".into()
    } else {
        format!("{:.0} %", 100.0 * parked as f64 / enters.len() as f64)
    });
    row.extend(e[1..].iter().cloned());
    row.extend(cells(&mut waits));
    row.push(revokes.to_string());
    row
}

/// One cost figure: a workload on a protocol, median ns per op off, at JFR's thresholds, at
/// 0, and the events a run recorded at JFR's thresholds and at 0 (medians).
#[derive(Clone, Debug)]
pub struct Cost {
    /// Bench name.
    pub bench: &'static str,
    /// Protocol.
    pub protocol: &'static str,
    /// Median ns per op: off, JFR thresholds, threshold 0.
    pub ns: [f64; 3],
    /// Median events per run: at JFR's thresholds, at 0.
    pub events: [usize; 2],
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Measures the cost of events on `workload` under `protocol`.
pub fn cost(workload: Workload, protocol: &'static str, ops: u64, reps: usize) -> Cost {
    let modes = [Events::Off, Events::Jfr, Events::EnterWait(Duration::ZERO)];
    let mut ns: [Vec<f64>; 3] = Default::default();
    let mut counts: [Vec<usize>; 2] = Default::default();
    for round in 0..=reps {
        for k in 0..modes.len() {
            let i = (round + k) % modes.len();
            let spec = Spec {
                workload,
                threads: THREADS,
                ops,
                events: modes[i],
            };
            let run = recording::run(protocol, spec).expect("a catalog protocol");
            if round > 0 {
                ns[i].push(run.ns_per_op());
                if i > 0 {
                    counts[i - 1].push(run.events.len());
                }
            }
        }
    }
    let mid = |mut v: Vec<usize>| {
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or(0)
    };
    Cost {
        bench: workload.name(),
        protocol,
        ns: ns.map(|mut v| median(&mut v)),
        events: counts.map(mid),
    }
}

/// The cost table's rows.
pub fn cost_rows(costs: &[Cost]) -> (Vec<String>, Vec<Vec<String>>) {
    let head = [
        "bench",
        "protocol",
        "ns/op, events off",
        "on, JFR thresholds",
        "÷ off",
        "events per run",
        "on, threshold 0",
        "÷ off",
        "events per run",
    ]
    .map(String::from)
    .to_vec();
    let rows = costs
        .iter()
        .map(|c| {
            vec![
                c.bench.to_string(),
                c.protocol.to_string(),
                format!("{:.1}", c.ns[0]),
                format!("{:.1}", c.ns[1]),
                format!("{:.2}", c.ns[1] / c.ns[0]),
                c.events[0].to_string(),
                format!("{:.1}", c.ns[2]),
                format!("{:.2}", c.ns[2] / c.ns[0]),
                c.events[1].to_string(),
            ]
        })
        .collect();
    (head, rows)
}

/// Runs the section's measurements and appends it to `d`, the picture written into `out_dir`.
pub fn section(d: &mut Vec<Block>, out_dir: &Path, sizes: Sizes) {
    let t0 = Instant::now();
    eprintln!("monitor events: prod-cons on every protocol, then the cost of events ...");
    let spec = Spec {
        workload: Workload::ProdCons,
        threads: THREADS,
        ops: sizes.latency_ops,
        events: Events::EnterWait(Duration::ZERO),
    };
    let runs: Vec<Run> = objmon::vm::names()
        .into_iter()
        .filter_map(|p| recording::run(p, spec))
        .collect();
    let mut costs = Vec::new();
    for (w, ops) in [
        (Workload::Threads, sizes.threads_ops),
        (Workload::ProdCons, sizes.prod_cons_ops),
    ] {
        for p in PICTURED {
            costs.push(cost(w, p, ops, sizes.reps));
        }
    }
    d.push(Block::H(2, "Monitor events".into()));
    d.push(Block::P(format!(
        "`objmon::events` (off by default) reports contended enters, waits, notifies, \
         inflations, deflations and bias revocations as JFR does. Below, runs with a \
         `Recorder` on the runtime at threshold 0: seed 002's ProdCons with {THREADS} \
         threads, {} objects per producer, handed over through a queue of {} guarded by the \
         protocol's monitor (wait while full or empty, notifyAll after each put and take). \
         `objmon-bench record --bench prod-cons --protocol thin --trace out.json` writes such \
         a run as a trace that ui.perfetto.dev opens (threads as tracks, enters and waits as \
         slices, hand-offs as flows).",
        sizes.latency_ops,
        recording::QUEUE_CAP
    )));
    let pictured: Vec<&Run> = PICTURED
        .iter()
        .filter_map(|p| runs.iter().find(|r| r.protocol == *p))
        .collect();
    let svg = figures::timeline(&pictured, 60);
    match std::fs::write(out_dir.join(TIMELINE_SVG), svg) {
        Ok(()) => d.push(Block::Img(
            TIMELINE_SVG.into(),
            format!(
                "Timeline: prod-cons with {THREADS} threads under {}, a stretch from the \
                 middle of each run; bars are contended enters (orange: spun, red: parked) \
                 and waits (blue), ticks are notifies, inflations and revocations",
                PICTURED.join(" and ")
            ),
        )),
        Err(e) => d.push(Block::P(format!(
            "(the timeline could not be written: {e})"
        ))),
    }
    d.push(Block::H(3, "Enter and wait latencies, per protocol".into()));
    d.push(Block::P(
        "From the events of the run above on each protocol: contended enters (the thread \
         had to spin or park; the parked share of them) and waits (until the monitor was \
         held again), p50 / p99 / max by nearest rank. One run each on a shared machine: \
         the tails are the scheduler's as much as the lock's."
            .into(),
    ));
    let head = [
        "protocol",
        "enters",
        "parked",
        "enter p50",
        "p99",
        "max",
        "waits",
        "wait p50",
        "p99",
        "max",
        "revocations",
    ]
    .map(String::from)
    .to_vec();
    d.push(Block::Table(head, runs.iter().map(latency_row).collect()));
    d.push(Block::H(3, "What events cost".into()));
    d.push(Block::P(format!(
        "The same workloads with events off, on at JFR's default thresholds (20 ms for \
         enters and waits, 0 for the other kinds: prod-cons's notifies, two per object, are \
         all delivered) and on at threshold 0 (every contended enter and wait too), each \
         event to a `Recorder`, which clones it into a `Vec` under a mutex: median ns per \
         operation of {} rounds, the three in turn, \
         {THREADS} threads (`threads`: {} lock+unlock pairs per thread; prod-cons: {} \
         objects per producer). Read a ratio within ±10 % as no cost that shows.",
        sizes.reps, sizes.threads_ops, sizes.prod_cons_ops
    )));
    let (head, rows) = cost_rows(&costs);
    d.push(Block::Table(head, rows));
    eprintln!("monitor events: {:.1} s", t0.elapsed().as_secs_f64());
}
