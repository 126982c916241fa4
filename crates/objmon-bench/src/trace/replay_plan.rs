//! A trace turned into per-thread operation lists ([`ReplayPlan`]) and the figures one replay
//! reports ([`ReplayResult`]).

use super::format::{Kind, Trace};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};

/// One operation of a replayed thread (objects by dense index into the replay's headers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// monitorenter / synchronized-method entry.
    Lock(u32),
    /// monitorexit / synchronized-method exit (normal or exceptional).
    Unlock(u32),
    /// A recorded wait that ended: wait until `need` notifies of the object have been replayed
    /// (the notifies the program had made on it before this wait ended), at most `bound`.
    Wait {
        /// Object.
        obj: u32,
        /// Notifies on the object that precede the wait's end in the recording.
        need: u64,
        /// Most time this wait may take (a safety net: the replay's notifies normally end it).
        bound: std::time::Duration,
    },
    /// notify (`all == false`) or notifyAll.
    Notify {
        /// Object.
        obj: u32,
        /// notifyAll.
        all: bool,
    },
}

/// A trace turned into per-thread operation lists.
#[derive(Clone, Debug, Default)]
pub struct ReplayPlan {
    /// Distinct objects (headers to allocate).
    pub objects: usize,
    /// Per recorded thread: its id and operations in its own order.
    pub threads: Vec<(u32, Vec<Op>)>,
    /// Lock + unlock + wait + notify operations replayed.
    pub ops: u64,
    /// Unlocks and waits dropped because the thread did not hold the object in the trace
    /// (it locked it before recording began).
    pub unmatched: u64,
    /// Threads cut at a wait that had not ended when the JVM exited.
    pub unended_waits: u64,
}

/// Builds the replay plan: each thread's operations in its own order; a wait's `need` is the
/// number of notify/notifyAll calls on its object that precede its end in `seq` order, so the
/// replay honours the recorded wait/notify order (a wait that timed out in the program needs
/// no further notify and returns at once, after releasing and re-acquiring the monitor), and
/// `wait_cap` bounds every wait so that a replay can never hang on one.
pub fn plan(t: &Trace, wait_cap: std::time::Duration) -> ReplayPlan {
    let mut dense: HashMap<u64, u32> = HashMap::new();
    let mut per: BTreeMap<u32, Vec<Op>> = BTreeMap::new();
    let mut depth: HashMap<(u32, u64), u32> = HashMap::new();
    let mut notifies: HashMap<u64, u64> = HashMap::new();
    let mut open_wait: HashMap<u32, usize> = HashMap::new(); // tid -> op index
    let mut cut: HashSet<u32> = HashSet::new();
    let mut p = ReplayPlan::default();
    for e in &t.events {
        if cut.contains(&e.tid) {
            continue;
        }
        let n = dense.len() as u32;
        let obj = *dense.entry(e.obj).or_insert(n);
        let ops = per.entry(e.tid).or_default();
        let d = depth.entry((e.tid, e.obj)).or_default();
        match e.kind {
            k if k.is_lock() => {
                *d += 1;
                ops.push(Op::Lock(obj));
            }
            k if k.is_unlock() => {
                if *d == 0 {
                    p.unmatched += 1;
                } else {
                    *d -= 1;
                    ops.push(Op::Unlock(obj));
                }
            }
            Kind::Wait => {
                if *d == 0 {
                    p.unmatched += 1;
                } else {
                    open_wait.insert(e.tid, ops.len());
                    ops.push(Op::Wait {
                        obj,
                        need: 0,
                        bound: wait_cap,
                    });
                }
            }
            Kind::WaitEnd => {
                if let Some(i) = open_wait.remove(&e.tid) {
                    ops[i] = Op::Wait {
                        obj,
                        need: notifies.get(&e.obj).copied().unwrap_or(0),
                        bound: wait_cap,
                    };
                }
            }
            Kind::Notify | Kind::NotifyAll => {
                if *d > 0 {
                    *notifies.entry(e.obj).or_default() += 1;
                    ops.push(Op::Notify {
                        obj,
                        all: e.kind == Kind::NotifyAll,
                    });
                } else {
                    p.unmatched += 1;
                }
            }
            _ => {}
        }
    }
    // A wait still open at exit: the thread never got past it; cut the thread there.
    for (tid, i) in open_wait {
        if let Some(ops) = per.get_mut(&tid) {
            ops.truncate(i);
            p.unended_waits += 1;
        }
        cut.insert(tid);
    }
    p.objects = dense.len();
    p.ops = per.values().map(|v| v.len() as u64).sum();
    p.threads = per.into_iter().filter(|(_, v)| !v.is_empty()).collect();
    p
}

/// What one replay of a trace on one protocol or anchor measured.
#[derive(Clone, Debug, Serialize)]
pub struct ReplayResult {
    /// Protocol catalog name, or the anchor's row name (`monitor`, `std-mutex`, `parking-lot`).
    pub protocol: String,
    /// Replayed threads.
    pub threads: usize,
    /// Operations replayed.
    pub ops: u64,
    /// Wall time from the start barrier until every thread finished, ns.
    pub wall_ns: u64,
    /// `wall_ns / ops`.
    pub ns_per_op: f64,
    /// Summed per-thread time outside waits, divided by the operations: the cost of one
    /// operation as the threads saw it.
    pub thread_ns_per_op: f64,
    /// Time the threads spent in waits, ns (summed).
    pub wait_ns: u64,
    /// Waits that ran to their bound before the recorded notifies arrived.
    pub waits_bounded: u64,
    /// Inflations (all causes), from the runtime's counters; `None` for the anchors (no
    /// runtime of their own: `monitor` uses the default protocol's process-wide runtime,
    /// whose counters the public API does not reach).
    pub inflations: Option<u64>,
    /// Deflations (`None` as for `inflations`).
    pub deflations: Option<u64>,
    /// Bias revocations (all kinds) of the biased protocols (`BiasState::revocations`);
    /// `None` for protocols without biasing and for the anchors.
    pub revocations: Option<u64>,
    /// Most fat monitors alive at once (sampled every millisecond); `None` for the anchors.
    pub peak_live_monitors: Option<usize>,
    /// Operations the protocol refused (an error; 0 on a sound plan).
    pub errors: u64,
}
