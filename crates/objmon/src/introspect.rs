//! Introspection: thread dumps, deadlock detection and contention profiling, for every
//! protocol, without stopping the world.
//!
//! **Objects** are reported by header address ([`ObjectRef`]): valid only while the object is
//! alive and unmoved; the host maps it back to its object. A fat monitor records the address of
//! the header it is bound to (every inflation path and the external protocols' binding call
//! `MonitorTable::bind`), so a monitor can be reported as an object.
//!
//! This file only reads; the writers are lower layers: `blocking.rs` (the record),
//! `monitor_episodes.rs` (a thread blocked in or waiting on a fat monitor), `spin_episode.rs`
//! (a spinner) and `profile.rs` (the figures).
//!
//! **What a blocked thread publishes.** Only slow paths write it, never a fast path: a thread
//! that is about to block publishes, in its [`ThreadCore`], a *blocking episode*: a sequence
//! number made odd for the episode (even between episodes), the kind (blocked on enter,
//! waiting, timed waiting), the object's address, and either
//! - the index of the fat monitor it blocks on (its owner is then read from the monitor, which
//!   stays bound to the object for the whole episode: the blocked thread is a counted
//!   contender of the deflating protocols (`FatMonitor::add_contention`), `cacao` and
//!   `monitor-cache` pin the binding, `tasuki` never changes an object's monitor index, and
//!   the other protocols never unbind a monitor before `reclaim`, which needs `&mut`); or
//! - for a spinner on a thin-shaped lock with no monitor yet (`thin`, `biased`/`fable`, the
//!   `tasuki` contender parked until the flat owner leaves), the owner it last read from the
//!   header together with an observation counter, bumped at each re-read, in one word.
//!
//! Nested publications are ignored (the outer one stands): `tasuki`'s contender waits in the
//! object's monitor while it is, semantically, blocked on entering the object. (That
//! contender holds the monitor for a few instructions between its checks of the flat word; a
//! thread blocked on the monitor meanwhile has an edge to it. Any cycle through it is still a
//! real deadlock — the blocked thread next waits for the flat owner, whose chain leads back —
//! but the report may list that contender as one more member.)
//!
//! **Deadlock confirmation** ([`Runtime::find_deadlocks`]; the world is never stopped):
//! 1. snapshot every thread's publication (sequence `s1[T]` and fields, consistently);
//! 2. then read each blocked-on-enter thread's owner edge: the monitor's owner field (or, for
//!    a monitor with an anonymous owner, a scan of the per-thread lock records), or for a
//!    spinner an observation it makes after step 1 (its counter moved on by at least two);
//! 3. find cycles in the wait-for graph (thread → owner of the object it blocks on);
//! 4. snapshot again and accept a cycle only if every member's sequence is still `s1[T]`.
//!
//! A confirmed cycle is a real deadlock: false negatives are possible (run the detector
//! again), false positives are not (the proof: docs/soundness.md, "Deadlock reports").
//! Waiting threads are not deadlock edges (as in jstack), but a notified waiter that
//! re-enters is blocked on enter and is one.
//!
//! **Contention profiling** ([`Config::profiling`](crate::vm::Config::profiling), off by default):
//! off, the slow paths test one flag and do nothing else; fast paths are unchanged either way.
//! On, each monitor counts contended enters, time blocked on enter, waits and time waiting;
//! its figures are folded into a table keyed by object address when the monitor is freed
//! (deflation, reclaim) or bound to another object, so they survive deflation; a spinner's
//! time (thin locks, biased, tasuki's flat contention) goes straight into that table.

use crate::blocking::{observations, seen_owner, BlockKind, Episode};
use crate::monitor::{FatMonitor, ANONYMOUS_OWNER};
use crate::profile::Counts;
use crate::protocol::Protocol;
use crate::runtime::Runtime;
use crate::sync::{fence, lock, Ordering};
use crate::table::{MonitorIndex, MonitorTable};
use crate::thread::{ThreadCore, ThreadId};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::Duration;
#[cfg(not(loom))]
use std::time::Instant;

/// An object, by the address of its header. Valid only while the object is alive and has not
/// moved; the host maps it back to its object (it knows where its headers live). Address 0
/// means "a monitor not bound to any object".
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectRef(pub usize);

impl ObjectRef {
    /// The object whose header is `h`.
    pub fn of<H>(h: &H) -> Self {
        Self(h as *const H as usize)
    }
}

impl fmt::Debug for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectRef({:#x})", self.0)
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{:#018x}>", self.0)
    }
}

/// Contention figures of one object (JFR's `JavaMonitorEnter` / `JavaMonitorWait`, summed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectProfile {
    /// The object (0: a monitor never bound to an object).
    pub object: ObjectRef,
    /// Enters that found the object locked by another thread and had to block or spin
    /// (a notified waiter's re-entry that had to block included).
    pub contended_enters: u64,
    /// Total time those enters spent blocked or spinning.
    pub blocked: Duration,
    /// Calls of `Object.wait` on it.
    pub waits: u64,
    /// Total time spent in those waits (until notified, timed out or interrupted, and the
    /// monitor re-acquired).
    pub waited: Duration,
}

impl fmt::Display for ObjectProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} contended enters {:>8}  blocked {:>12.3?}  waits {:>8}  waited {:>12.3?}",
            self.object, self.contended_enters, self.blocked, self.waits, self.waited
        )
    }
}

/// Introspection's view of a fat monitor.
impl FatMonitor {
    /// The object this monitor is bound to (0: none), a racy snapshot.
    pub fn object(&self) -> ObjectRef {
        ObjectRef(self.object.load(Ordering::Relaxed))
    }
}

/// The profile table, for introspection's report.
impl MonitorTable {
    /// Every monitor handed out so far, with its index (free ones included).
    pub(crate) fn all_monitors(&self) -> impl Iterator<Item = (MonitorIndex, &FatMonitor)> {
        self.handed_out().into_iter().map(move |i| (i, self.get(i)))
    }

    fn profile(&self) -> Vec<ObjectProfile> {
        let mut all: HashMap<usize, Counts> = lock(&self.profile.folded).clone();
        for (_, m) in self.all_monitors() {
            let c = m.profile_snapshot();
            if !c.is_zero() {
                all.entry(m.object.load(Ordering::Relaxed))
                    .or_default()
                    .add(c);
            }
        }
        let mut v: Vec<ObjectProfile> = all
            .into_iter()
            .map(|(o, c)| ObjectProfile {
                object: ObjectRef(o),
                contended_enters: c.enters,
                blocked: Duration::from_nanos(c.blocked_ns),
                waits: c.waits,
                waited: Duration::from_nanos(c.waited_ns),
            })
            .collect();
        v.sort_by(|a, b| {
            (b.blocked, b.contended_enters, b.waited, a.object).cmp(&(
                a.blocked,
                a.contended_enters,
                a.waited,
                b.object,
            ))
        });
        v
    }

    fn reset_profile(&self) {
        lock(&self.profile.folded).clear();
        for (_, m) in self.all_monitors() {
            m.profile_take();
        }
    }
}

/// A monitor a thread owns, in a [`ThreadDump`] or a [`Deadlock`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnedMonitor {
    /// The object.
    pub object: ObjectRef,
    /// How many times the thread holds it (0 if unknown: see [`ThreadDump`]).
    pub count: u32,
}

/// What a thread is blocked on, in a dump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockedOn {
    /// Entering, waiting or timed waiting.
    pub kind: BlockKind,
    /// The object.
    pub object: ObjectRef,
    /// Who owned it when the dump looked (`None`: nobody, unknown, or a waiting thread's
    /// monitor, which it does not wait to own).
    pub owner: Option<ThreadId>,
}

/// One thread of a [`ThreadDump`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadInfo {
    /// The thread.
    pub id: ThreadId,
    /// What it is blocked on, if anything.
    pub blocked_on: Option<BlockedOn>,
    /// The monitors it owns, by object address.
    pub owned: Vec<OwnedMonitor>,
}

/// A dump of every attached thread (jstack's "locked" / "waiting to lock" lines).
///
/// A racy snapshot taken without stopping any thread: each line was true at some moment of
/// the dump. What it finds without host-supplied objects ([`Runtime::thread_dump`]):
/// - every object whose lock lives in a fat monitor (`fat`, `monitor-cache`, `cacao`, and every
///   inflated lock of the other protocols), with its count;
/// - `lightweight*`: fast-locked objects from the lock stacks (count = run length);
/// - `stack`: stack-locked objects from the lock records (count = records; for an inflated
///   object the larger of records and monitor count);
/// - **not** thin-locked objects of `thin`, `tasuki`, `biased` and `fable` (the owner is only
///   in the header, which no per-thread structure records).
///
/// [`Runtime::thread_dump_with`] adds the objects the host can enumerate (a heap or stack
/// walk), through [`Protocol::lock_state`], so those are found too, with exact counts. What
/// threads are blocked on is always complete, except contenders that spin because the
/// monitor table is full (`stack`, `lightweight*`, `tasuki`): they appear runnable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadDump {
    /// The protocol's catalog name.
    pub protocol: &'static str,
    /// Every attached thread, in id order.
    pub threads: Vec<ThreadInfo>,
}

impl fmt::Display for ThreadDump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Full thread dump (objmon, protocol {}):", self.protocol)?;
        for t in &self.threads {
            writeln!(f)?;
            let state = match t.blocked_on.map(|b| b.kind) {
                None => "RUNNABLE",
                Some(BlockKind::Enter) => "BLOCKED (on object monitor)",
                Some(BlockKind::Wait) => "WAITING (on object monitor)",
                Some(BlockKind::TimedWait) => "TIMED_WAITING (on object monitor)",
            };
            writeln!(f, "\"objmon thread {}\" tid={}", t.id, t.id.get())?;
            writeln!(f, "   java.lang.Thread.State: {state}")?;
            if let Some(b) = t.blocked_on {
                match b.kind {
                    BlockKind::Enter => {
                        write!(f, "\t- waiting to lock {}", b.object)?;
                        if let Some(o) = b.owner {
                            write!(f, " (held by \"objmon thread {o}\")")?;
                        }
                        writeln!(f)?;
                    }
                    _ => writeln!(f, "\t- waiting on {}", b.object)?,
                }
            }
            for m in &t.owned {
                writeln!(f, "\t- locked {} (count {})", m.object, m.count)?;
            }
        }
        Ok(())
    }
}

/// One member of a [`Deadlock`]: a thread, the object it is blocked on, and its owner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadlockEdge {
    /// The blocked thread.
    pub thread: ThreadId,
    /// The object it waits to lock.
    pub waiting_for: ObjectRef,
    /// The monitor index it blocks on, if it blocks on a fat monitor (else it spins on a
    /// thin-shaped header).
    pub monitor: Option<u32>,
    /// The thread that holds `waiting_for` (the next member of the cycle).
    pub held_by: ThreadId,
    /// How many times `held_by` holds it (0 if unknown).
    pub held_count: u32,
}

/// A confirmed cycle of threads blocked on monitors (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deadlock {
    /// The cycle, starting at its smallest thread id; each edge's `held_by` is the next
    /// edge's `thread`.
    pub cycle: Vec<DeadlockEdge>,
}

impl Deadlock {
    /// The threads of the cycle.
    pub fn threads(&self) -> Vec<ThreadId> {
        self.cycle.iter().map(|e| e.thread).collect()
    }

    /// The objects of the cycle.
    pub fn objects(&self) -> Vec<ObjectRef> {
        self.cycle.iter().map(|e| e.waiting_for).collect()
    }
}

impl fmt::Display for Deadlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Found one Java-level deadlock:")?;
        writeln!(f, "=============================")?;
        for e in &self.cycle {
            writeln!(f, "\"objmon thread {}\":", e.thread)?;
            match e.monitor {
                Some(i) => write!(
                    f,
                    "  waiting to lock monitor #{i} (object {}",
                    e.waiting_for
                )?,
                None => write!(f, "  waiting to lock object {} (thin lock", e.waiting_for)?,
            }
            writeln!(f, "),")?;
            write!(f, "  which is held by \"objmon thread {}\"", e.held_by)?;
            if e.held_count > 0 {
                write!(f, " (count {})", e.held_count)?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

/// How long the detector waits for spinners to observe their owner again (step 2).
#[cfg(not(loom))]
const OBSERVE_WAIT: Duration = Duration::from_millis(200);

/// The detector's wait for spinners to observe again: up to [`OBSERVE_WAIT`] in 1 ms naps;
/// under loom one pass only (a spinner that did not move on in the model is unconfirmed).
struct ObservePause {
    #[cfg(not(loom))]
    deadline: Instant,
}

impl ObservePause {
    fn new() -> Self {
        Self {
            #[cfg(not(loom))]
            deadline: Instant::now() + OBSERVE_WAIT,
        }
    }

    /// Naps; `false` once the time is up.
    fn wait(&self) -> bool {
        #[cfg(not(loom))]
        {
            if Instant::now() >= self.deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
            true
        }
        #[cfg(loom)]
        {
            false
        }
    }
}

/// A blocked thread's edge, once observed.
struct Edge {
    /// The blocked thread's core, as found in step 1 (its id may be reused after it leaves).
    core: std::sync::Arc<ThreadCore>,
    ep: Episode,
    owner: u32,
}

/// Per-thread records (one entry per lock level) as (address, levels), in first-seen order.
pub(crate) fn count_runs(entries: impl Iterator<Item = usize>) -> Vec<(usize, u32)> {
    let mut v: Vec<(usize, u32)> = Vec::new();
    for a in entries {
        match v.iter_mut().find(|(b, _)| *b == a) {
            Some((_, n)) => *n += 1,
            None => v.push((a, 1)),
        }
    }
    v
}

/// The owner of `object` according to the per-thread records of every thread (for a monitor
/// whose owner is anonymous).
fn recorded_owner<P: Protocol>(rt: &Runtime<P>, object: usize) -> Option<(u32, u32)> {
    rt.threads().snapshot().iter().find_map(|cx| {
        if waits_on(cx.core(), object) {
            return None;
        }
        P::held_records(rt, cx)
            .into_iter()
            .find(|&(a, _)| a == object)
            .map(|(_, n)| (cx.core().raw_id(), n))
    })
}

/// Whether `t` is waiting on `object` now: then it does not own it, whatever its records say
/// (`stack` keeps a waiter's lock records; the monitor holds the lock meanwhile).
fn waits_on(t: &ThreadCore, object: usize) -> bool {
    t.blocking
        .read()
        .is_some_and(|ep| ep.kind != BlockKind::Enter && ep.object == object)
}

/// The owner of the monitor of a published episode (raw id, 0 if none or unknown).
fn monitor_owner<P: Protocol>(rt: &Runtime<P>, ep: &Episode, idx: MonitorIndex) -> u32 {
    match rt.monitors().get(idx).owner_raw() {
        ANONYMOUS_OWNER => recorded_owner(rt, ep.object).map_or(0, |(o, _)| o),
        raw => raw,
    }
}

/// Introspection API: thread dumps, deadlock detection, contention profiles.
impl<P: Protocol> Runtime<P> {
    /// Every attached thread, what it is blocked on, and the monitors it owns — without the
    /// objects only the host can enumerate (see [`ThreadDump`] for what that misses).
    pub fn thread_dump(&self) -> ThreadDump {
        self.thread_dump_with(std::iter::empty())
    }

    /// [`thread_dump`](Self::thread_dump) plus the host's objects (a heap or stack walk):
    /// each is asked for its owner and count ([`Protocol::lock_state`]), so thin-locked
    /// objects are found too. The headers must stay alive for the call.
    pub fn thread_dump_with<'h>(
        &self,
        objects: impl IntoIterator<Item = &'h P::Header>,
    ) -> ThreadDump {
        let threads = self.threads().snapshot();
        let mut owned: BTreeMap<u32, BTreeMap<usize, u32>> = BTreeMap::new();
        let mut note = |raw: u32, object: usize, count: u32| {
            let c = owned.entry(raw).or_default().entry(object).or_insert(0);
            *c = (*c).max(count);
        };
        for (_, m) in self.monitors().all_monitors() {
            let raw = m.owner_raw();
            let object = m.object().0;
            if raw != 0 && raw != ANONYMOUS_OWNER && object != 0 {
                note(raw, object, m.count_raw());
            }
        }
        for cx in &threads {
            for (a, n) in P::held_records(self, cx) {
                if !waits_on(cx.core(), a) {
                    note(cx.core().raw_id(), a, n);
                }
            }
        }
        for h in objects {
            if let Some((o, n)) = P::lock_state(self, h) {
                note(u32::from(o.get()), h as *const P::Header as usize, n);
            }
        }
        let infos = threads
            .iter()
            .map(|cx| {
                let slot = &cx.core().blocking;
                let blocked_on = slot.read().and_then(|ep| {
                    let owner = match (ep.kind, MonitorIndex::new(ep.monitor)) {
                        (BlockKind::Enter, Some(i)) => monitor_owner(self, &ep, i),
                        (BlockKind::Enter, None) => seen_owner(ep.seen),
                        _ => 0,
                    };
                    // Still the same episode after the owner was read: the owner is one the
                    // thread was really blocked behind (never the thread itself, say).
                    (slot.seq() == ep.seq).then_some(BlockedOn {
                        kind: ep.kind,
                        object: ObjectRef(ep.object),
                        owner: ThreadId::from_raw(owner),
                    })
                });
                ThreadInfo {
                    id: cx.id(),
                    blocked_on,
                    owned: owned
                        .get(&cx.core().raw_id())
                        .map(|m| {
                            m.iter()
                                .map(|(&a, &n)| OwnedMonitor {
                                    object: ObjectRef(a),
                                    count: n,
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                }
            })
            .collect();
        ThreadDump {
            protocol: P::NAME,
            threads: infos,
        }
    }

    /// Cycles of threads blocked on entering monitors, each confirmed as described in the
    /// module documentation: no thread is stopped, and a reported cycle is a real deadlock
    /// even while other threads keep locking. Takes up to a few hundred milliseconds when
    /// spinners (thin-shaped locks) are involved, since their edges are observed by
    /// themselves.
    pub fn find_deadlocks(&self) -> Vec<Deadlock> {
        let threads = self.threads().snapshot();
        // Step 1.
        let first: Vec<(u32, &std::sync::Arc<ThreadCore>, Episode)> = threads
            .iter()
            .filter_map(|cx| {
                let ep = cx.core().blocking.read()?;
                (ep.kind == BlockKind::Enter).then_some((cx.core().raw_id(), cx.core_arc(), ep))
            })
            .collect();
        if first.len() < 2 {
            return Vec::new();
        }
        fence(Ordering::SeqCst);
        // Step 2: monitor edges now; spinner edges once they re-read twice.
        let mut edges: HashMap<u32, Edge> = HashMap::new();
        let mut spinners = Vec::new();
        for &(raw, core, ep) in &first {
            match MonitorIndex::new(ep.monitor) {
                Some(i) => {
                    let owner = monitor_owner(self, &ep, i);
                    if owner != 0 {
                        let core = core.clone();
                        edges.insert(raw, Edge { core, ep, owner });
                    }
                }
                None => spinners.push((raw, core, ep)),
            }
        }
        let pause = ObservePause::new();
        while !spinners.is_empty() {
            spinners.retain(|&(raw, core, ep)| {
                if core.blocking.seq() != ep.seq {
                    return false;
                }
                let seen = core.blocking.seen();
                if observations(seen) < observations(ep.seen) + 2 {
                    return true;
                }
                if seen_owner(seen) != 0 {
                    edges.insert(
                        raw,
                        Edge {
                            core: core.clone(),
                            ep,
                            owner: seen_owner(seen),
                        },
                    );
                }
                false
            });
            if !spinners.is_empty() && !pause.wait() {
                break;
            }
        }
        fence(Ordering::SeqCst);
        // Step 3: every node has at most one out-edge, so follow each path.
        let mut cycles: Vec<Vec<u32>> = Vec::new();
        let mut done: std::collections::HashSet<u32> = std::collections::HashSet::new();
        for &start in edges.keys() {
            let mut path = Vec::new();
            let mut at = start;
            while !done.contains(&at) && !path.contains(&at) {
                path.push(at);
                match edges.get(&at) {
                    Some(e) => at = e.owner,
                    None => break,
                }
            }
            if let Some(p) = path.iter().position(|&x| x == at) {
                if edges.contains_key(&at) {
                    let mut c = path[p..].to_vec();
                    let m = c.iter().enumerate().min_by_key(|(_, &x)| x).map(|(i, _)| i);
                    c.rotate_left(m.unwrap_or(0));
                    cycles.push(c);
                }
            }
            done.extend(path);
        }
        // Step 4.
        fence(Ordering::SeqCst);
        cycles
            .into_iter()
            .filter(|c| {
                c.iter()
                    .all(|raw| edges[raw].core.blocking.seq() == edges[raw].ep.seq)
            })
            .map(|c| Deadlock {
                cycle: c
                    .iter()
                    .map(|raw| {
                        let e = &edges[raw];
                        // As the dump: the larger of the monitor's count and the owner's
                        // records (`stack` keeps recursive records beside its monitor).
                        let monitor =
                            MonitorIndex::new(e.ep.monitor).map(|i| self.monitors().get(i));
                        let held_count = monitor
                            .filter(|m| m.owner_raw() == e.owner)
                            .map_or(0, |m| m.count_raw())
                            .max(
                                recorded_owner(self, e.ep.object)
                                    .filter(|&(o, _)| o == e.owner)
                                    .map_or(0, |(_, n)| n),
                            );
                        DeadlockEdge {
                            thread: ThreadId::from_raw(*raw).expect("attached id"),
                            waiting_for: ObjectRef(e.ep.object),
                            monitor: MonitorIndex::new(e.ep.monitor).map(MonitorIndex::get),
                            held_by: ThreadId::from_raw(e.owner).expect("owner id"),
                            held_count,
                        }
                    })
                    .collect(),
            })
            .collect()
    }

    /// Contention figures per object, most time blocked first (empty unless
    /// [`Config::profiling`](crate::vm::Config::profiling) is on).
    pub fn contention_profile(&self) -> Vec<ObjectProfile> {
        self.monitors().profile()
    }

    /// Sets every contention figure back to zero.
    pub fn reset_contention_profile(&self) {
        self.monitors().reset_profile()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn lock_records_count_by_object_in_first_seen_order() {
        let v = count_runs([8, 8, 16, 8, 24].into_iter());
        assert_eq!(v, vec![(8, 3), (16, 1), (24, 1)]);
    }

    /// jstack's layout: a title, a rule, then per thread what it waits for and who holds it.
    #[test]
    fn deadlock_prints_like_jstack() {
        let t = |n| ThreadId::new(n).unwrap();
        let d = Deadlock {
            cycle: vec![
                DeadlockEdge {
                    thread: t(1),
                    waiting_for: ObjectRef(0x20),
                    monitor: Some(5),
                    held_by: t(2),
                    held_count: 2,
                },
                DeadlockEdge {
                    thread: t(2),
                    waiting_for: ObjectRef(0x10),
                    monitor: None,
                    held_by: t(1),
                    held_count: 0,
                },
            ],
        };
        assert_eq!(
            d.to_string(),
            "Found one Java-level deadlock:\n\
             =============================\n\
             \"objmon thread #1\":\n  \
             waiting to lock monitor #5 (object <0x0000000000000020>),\n  \
             which is held by \"objmon thread #2\" (count 2)\n\
             \"objmon thread #2\":\n  \
             waiting to lock object <0x0000000000000010> (thin lock),\n  \
             which is held by \"objmon thread #1\"\n"
        );
        assert_eq!(d.threads(), vec![t(1), t(2)]);
        assert_eq!(d.objects(), vec![ObjectRef(0x20), ObjectRef(0x10)]);
    }
}
