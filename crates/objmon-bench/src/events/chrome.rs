//! A recorded run as a Chrome / Perfetto trace-event file (the JSON object format that
//! ui.perfetto.dev and chrome://tracing open as is): what `objmon-bench record --trace`
//! writes.
//!
//! Owns: the mapping of each event kind onto trace events, the tracks, and the flows. Not: the
//! run (`recording.rs`).
//!
//! **Layout.** One process (pid 1, named after the bench and the protocol); one track per
//! worker thread (`thread_name` metadata, tid = the objmon thread id, sorted in start order),
//! plus a track for any thread an event names that is not a worker. Times: `ts` and `dur` in
//! microseconds (floats, nanosecond precision) since the run's start; `displayTimeUnit` "ms".
//!
//! | event | trace event |
//! |---|---|
//! | `MonitorEnter` (contended) | complete slice "X": object, monitor index, previous owner, parked |
//! | `MonitorWait` | complete slice "X": object, monitor index, timeout, outcome, notifier |
//! | `MonitorNotify`, `MonitorInflate`, `MonitorDeflate`, `BiasRevoke` | thread-scoped instant "i" with their fields (a revocation's latency in `args`) |
//! | `MonitorStatistics` | counter "C" (live monitors, inflations, deflations, revocations) |
//!
//! **Flows** ("s" → "f", one id each, category `handoff`): from the thread that released the
//! monitor to the one that got it. An enter's comes from its previous owner at the enter's
//! end (when the owner had let go); a notified wait's from its notifier at the notifier's
//! latest `MonitorNotify` on the object before the wait ended (or the wait's end if that
//! notify was not recorded). A flow binds to the slice that encloses it, so its start sits in
//! a short "X" slice `hand-off` on the releasing thread (at most 1 µs, ending at the flow's
//! time and clipped so that it never straddles another slice of that track: slices nest
//! properly); its finish is inside the receiving enter or wait (`"bp": "e"`).
//!
//! **Order.** Metadata first, then every event by time (at equal times longer slices first,
//! so that they enclose the shorter), so `ts` never decreases along a track.

use super::recording::Run;
use objmon::events::{Event, EventSite, WaitEnd};
use objmon::vm::ThreadId;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The longest `hand-off` slice a flow starts in, ns.
const HANDOFF_NS: u64 = 1_000;

/// What was written, for the command's summary line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Events by kind name, in kind order.
    pub by_kind: BTreeMap<&'static str, usize>,
    /// Flows (hand-offs).
    pub flows: usize,
    /// Tracks (threads).
    pub tracks: usize,
}

/// A flow to draw: from the releasing thread at `at` (ns) to the receiving thread's slice.
struct Flow {
    from: ThreadId,
    at: u64,
    to: ThreadId,
    /// The receiving enter's or wait's start and end, ns.
    slice: (u64, u64),
    /// `enter` or `wait`.
    via: &'static str,
}

/// One trace event before ordering: time (ns since the start), duration, value.
struct Item {
    ts: u64,
    dur: u64,
    value: Value,
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// The trace of `run`, and what it holds.
pub fn trace(run: &Run) -> (Value, Summary) {
    let t0 = run.start_nanos;
    let rel = |ns: u64| ns.saturating_sub(t0);
    let mut summary = Summary::default();
    // Tracks: the workers, then any other thread an event names.
    let mut names: Vec<(ThreadId, String)> = run
        .tracks
        .iter()
        .map(|t| (t.id, format!("{} (thread {})", t.name, t.id.get())))
        .collect();
    let tid = |id: ThreadId| u64::from(id.get());
    let mut items: Vec<Item> = Vec::new();
    // Slices per track (start, end), for the flows' hand-off slices.
    let mut bounds: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    let mut flows: Vec<Flow> = Vec::new();
    // Each thread's notifies by object: times, for the waits' flows.
    let mut notifies: BTreeMap<(u16, usize), Vec<u64>> = BTreeMap::new();
    for e in &run.events {
        if let Event::MonitorNotify { site, .. } = e {
            notifies
                .entry((site.thread.get(), site.object))
                .or_default()
                .push(rel(site.start_nanos));
        }
    }
    for e in &run.events {
        *summary.by_kind.entry(e.kind().name()).or_default() += 1;
        let Some(site) = e.site() else {
            if let Event::MonitorStatistics {
                at_nanos,
                live_monitors,
                inflations,
                deflations,
                revocations,
            } = e
            {
                items.push(Item {
                    ts: rel(*at_nanos),
                    dur: 0,
                    value: json!({
                        "name": e.kind().name(), "ph": "C", "pid": 1,
                        "ts": us(rel(*at_nanos)),
                        "args": {
                            "live_monitors": live_monitors, "inflations": inflations,
                            "deflations": deflations, "revocations": revocations,
                        },
                    }),
                });
            }
            continue;
        };
        named(site.thread, &mut names);
        let start = rel(site.start_nanos);
        let dur = u64::try_from(site.duration.as_nanos()).unwrap_or(u64::MAX);
        let mut args = site_args(site);
        let slice = |args: Value| Item {
            ts: start,
            dur,
            value: json!({
                "name": e.kind().name(), "cat": "monitor", "ph": "X", "pid": 1,
                "tid": tid(site.thread), "ts": us(start), "dur": us(dur), "args": args,
            }),
        };
        let instant = |args: Value| Item {
            ts: start,
            dur: 0,
            value: json!({
                "name": e.kind().name(), "cat": "monitor", "ph": "i", "s": "t", "pid": 1,
                "tid": tid(site.thread), "ts": us(start), "args": args,
            }),
        };
        match e {
            Event::MonitorEnter {
                previous_owner,
                parked,
                ..
            } => {
                args["previous_owner"] =
                    previous_owner.map_or(Value::Null, |p| Value::String(named(p, &mut names)));
                args["previous_owner_tid"] = previous_owner.map_or(Value::Null, |p| json!(tid(p)));
                args["parked"] = json!(parked);
                bounds
                    .entry(tid(site.thread))
                    .or_default()
                    .extend([start, start + dur]);
                if let Some(p) = previous_owner.filter(|p| *p != site.thread) {
                    flows.push(Flow {
                        from: p,
                        at: start + dur,
                        to: site.thread,
                        slice: (start, start + dur),
                        via: "enter",
                    });
                }
                items.push(slice(args));
            }
            Event::MonitorWait {
                timeout,
                outcome,
                notifier,
                ..
            } => {
                args["timeout_us"] = timeout.map_or(Value::Null, |t| json!(t.as_micros()));
                args["outcome"] = json!(match outcome {
                    WaitEnd::Notified => "notified",
                    WaitEnd::TimedOut => "timed out",
                    WaitEnd::Interrupted => "interrupted",
                });
                args["notifier"] =
                    notifier.map_or(Value::Null, |n| Value::String(named(n, &mut names)));
                args["notifier_tid"] = notifier.map_or(Value::Null, |n| json!(tid(n)));
                bounds
                    .entry(tid(site.thread))
                    .or_default()
                    .extend([start, start + dur]);
                if let Some(n) = notifier.filter(|n| *n != site.thread) {
                    let end = start + dur;
                    let at = notifies
                        .get(&(n.get(), site.object))
                        .and_then(|ts| ts.iter().rev().find(|&&t| t <= end && t >= start))
                        .copied()
                        .unwrap_or(end);
                    flows.push(Flow {
                        from: n,
                        at,
                        to: site.thread,
                        slice: (start, end),
                        via: "wait",
                    });
                }
                items.push(slice(args));
            }
            Event::MonitorNotify { all, woken, .. } => {
                args["all"] = json!(all);
                args["woken"] = json!(woken);
                items.push(instant(args));
            }
            Event::MonitorInflate { cause, .. } => {
                args["cause"] = json!(format!("{cause:?}"));
                items.push(instant(args));
            }
            Event::BiasRevoke { kind, .. } => {
                args["kind"] = json!(format!("{kind:?}"));
                args["latency_us"] = json!(us(dur));
                items.push(instant(args));
            }
            _ => items.push(instant(args)),
        }
    }
    // The flows, in time order, each starting in a hand-off slice of its own.
    flows.sort_by_key(|f| f.at);
    for (id, flow) in flows.into_iter().enumerate() {
        let Flow {
            from,
            at,
            to,
            slice: (r0, r1),
            via,
        } = flow;
        let track = bounds.entry(tid(from)).or_default();
        let begin = at
            .saturating_sub(HANDOFF_NS)
            .max(track.range(..at).next_back().copied().unwrap_or(0));
        // `begin < at` unless `at` is 0 (a boundary below `at` is at most `at - 1`).
        let (begin, end) = if begin < at {
            (begin, at)
        } else {
            (at, at + 1)
        };
        track.extend([begin, end]);
        let to_name = named(to, &mut names);
        items.push(Item {
            ts: begin,
            dur: end - begin,
            value: json!({
                "name": "hand-off", "cat": "handoff", "ph": "X", "pid": 1, "tid": tid(from),
                "ts": us(begin), "dur": us(end - begin), "args": { "to": to_name, "via": via },
            }),
        });
        items.push(Item {
            ts: begin,
            dur: 0,
            value: json!({
                "name": "hand-off", "cat": "handoff", "ph": "s", "id": id, "pid": 1,
                "tid": tid(from), "ts": us(begin),
            }),
        });
        let f = if r1 > r0 { r1 - 1 } else { r0 };
        items.push(Item {
            ts: f.max(begin),
            dur: 0,
            value: json!({
                "name": "hand-off", "cat": "handoff", "ph": "f", "bp": "e", "id": id,
                "pid": 1, "tid": tid(to), "ts": us(f.max(begin)),
            }),
        });
        summary.flows += 1;
    }
    // Stable: a hand-off slice stays before its flow's start at the same time.
    items.sort_by(|a, b| a.ts.cmp(&b.ts).then(b.dur.cmp(&a.dur)));
    let mut out: Vec<Value> = vec![json!({
        "name": "process_name", "ph": "M", "pid": 1,
        "args": { "name": format!("objmon-bench record: {} on {}", run.spec.workload.name(), run.protocol) },
    })];
    for (i, (id, name)) in names.iter().enumerate() {
        out.push(json!({
            "name": "thread_name", "ph": "M", "pid": 1, "tid": tid(*id), "args": { "name": name },
        }));
        out.push(json!({
            "name": "thread_sort_index", "ph": "M", "pid": 1, "tid": tid(*id),
            "args": { "sort_index": i },
        }));
    }
    summary.tracks = names.len();
    out.extend(items.into_iter().map(|i| i.value));
    let threshold = match run.spec.events {
        super::Events::EnterWait(d) => json!(d.as_nanos() as u64),
        _ => Value::Null,
    };
    let v = json!({
        "traceEvents": out,
        "displayTimeUnit": "ms",
        "otherData": {
            "bench": run.spec.workload.name(),
            "protocol": run.protocol,
            "threads": run.spec.threads,
            "ops_per_thread": run.spec.ops,
            "enter_wait_threshold_ns": threshold,
            "elapsed_ms": run.elapsed.as_secs_f64() * 1e3,
        },
    });
    (v, summary)
}

/// The name of thread `id`'s track, made (`thread N`) if it has none yet.
fn named(id: ThreadId, names: &mut Vec<(ThreadId, String)>) -> String {
    if let Some((_, n)) = names.iter().find(|(i, _)| *i == id) {
        return n.clone();
    }
    let n = format!("thread {}", id.get());
    names.push((id, n.clone()));
    n
}

/// The arguments every event on a site has: the object (hex address), its tag, the monitor.
fn site_args(site: &EventSite) -> Value {
    json!({
        "object": format!("{:#x}", site.object),
        "tag": site.object_tag,
        "monitor": site.monitor,
    })
}
