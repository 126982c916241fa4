//! The event adversary: a case with a [`Step::Events`](crate::Step::Events) runs with a
//! monitor event sink (`objmon::events`) at threshold 0 for every kind, which records each
//! event, lets the driver check it against the model, and misbehaves as a hostile host's
//! sink may ([`Hostile`]): it panics, locks other monitors of the same runtime, relocks the
//! event's own object, or sleeps. The monitors must stay correct whatever it does.
//!
//! Owns the sink (`router`: one for every runtime, so that the process-wide runtimes of the
//! `lock_api` surface, whose sink is set once per process, have it too), the per-thread tap
//! that gives an event to the case of the thread it is delivered on, what a delivery
//! records (`Seen`), and its checks against the model (`Driver::check_events`).
//!
//! Routing: a worker of a case with a sink installs its tap in a thread-local; the sink
//! hands each event to the tap of the thread it is delivered on, and drops events of threads
//! without one (the driver, other tests of the process, cases without a sink). Each tap
//! knows the addresses of its phase's objects (they do not move during a phase), so an
//! event names a slot. The tap queues what it saw in `Shared::seen`; the driver takes the
//! queue of a worker after each of its answers, so a check sees the model as the call left
//! it (before the driver's update for the answer).
//!
//! Checked, per event: it is not delivered while its thread is inside the sink already (no
//! recursion); it names the thread it is delivered on. `MonitorEnter`: during a call that
//! locks that object, delivered while the thread holds it. `MonitorWait`: during a wait on
//! that object, at most one per wait, held at delivery, its outcome the one the wait
//! returned, a timeout iff one was asked, and not notified by its own thread.
//! `MonitorNotify`: during a notify of that object, `all` as asked, `woken` at most 1 for a
//! notify and never more than the waiters the model has in the wait set (waiting and not yet
//! notified), held at delivery (a condvar's notify may be reported as a notifyAll: it wakes
//! the whole wait set when another condvar shares its mutex's address stripe). The
//! documented limit (`STALE_EVENT_OBJECT`) is looked past unless `Adversary::strict_events`.
//!
//! Invariants: the sink's own objects are only locked inside the sink, one blocking lock at
//! a time (the second a try-lock), so the sink adds no deadlock; a relock is asked only on a
//! reentrant surface of an object the thread holds; sleeps are at most 200 µs. A panic of
//! the sink is quiet (the panic hook is told) and objmon must catch it.

use crate::driver::{fail, Driver, R};
use crate::kit::Kit;
use crate::model::Busy;
use crate::worker::{Act, Out, Shared};
use objmon::events::{Event, EventKind, EventSink, WaitEnd};
use objmon::vm::ThreadId;
use objmon::{MonitorError, WaitOutcome};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// An event's [`EventSite::object`](objmon::events::EventSite::object) is the address the
/// object's fat monitor was bound to (`monitor_episodes.rs`, `origin`: the monitor's
/// `object`), not the header's address now: after safe code moved the object (a `mem::swap`
/// of two `Monitor`s, a `Vec` that grows) an event names the old address, where another object
/// may be, and `EventSink::object_tag` is asked about that one. A finding
/// (`tests/events.rs`, `event_names_the_address_a_moved_object_left`); while it stands the
/// checks that need the named object are not made for a moved object, nor for an event
/// whose address now holds one.
const STALE_EVENT_OBJECT: bool = true;

/// What a case's event sink does besides recording (each [`Step::Events`](crate::Step::Events)
/// of the case adds one behaviour; `n` counts the events delivered to the thread).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hostile {
    /// Nothing more.
    Calm,
    /// Panics at every `n`-th event.
    Panics(u8),
    /// At every `n`-th event, locks one of the sink's own objects of the case's runtime,
    /// notifies all on it (every other time), try-locks the other one, unlocks.
    LocksOther(u8),
    /// At every `n`-th event that names an object the thread holds, locks it again and
    /// unlocks (reentrant surfaces only: `lock_api` is not).
    Relocks(u8),
    /// Sleeps `n` × 20 µs at every event.
    Sleeps(u8),
}

/// What one delivery recorded.
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    /// The event.
    pub(crate) event: Event,
    /// The slot of the phase whose object the event names (by header address).
    pub(crate) slot: Option<usize>,
    /// The delivering thread's id on the case's runtime.
    pub(crate) current: Option<ThreadId>,
    /// Whether the thread held that object at delivery (`holds_lock` where the surface
    /// tells, else `is_locked`).
    pub(crate) held: Option<bool>,
    /// Delivered while this thread was inside the sink already.
    pub(crate) nested: bool,
}

static DELIVERED: AtomicU64 = AtomicU64::new(0);
static CHECKED: AtomicU64 = AtomicU64::new(0);
static PANICS: AtomicU64 = AtomicU64::new(0);
static LOCKS: AtomicU64 = AtomicU64::new(0);
static RELOCKS: AtomicU64 = AtomicU64::new(0);
static SLEEPS: AtomicU64 = AtomicU64::new(0);
pub(crate) static CASES: AtomicU64 = AtomicU64::new(0);
static KEPT: AtomicU64 = AtomicU64::new(0);

/// A case's runtime with a sink takes one of objmon's 255 sink slots until it is dropped, and
/// a guard passed to `mem::forget` keeps its thread's attachment, and so the runtime, alive
/// for good. At most this many such runtimes are kept per protocol and process (18
/// protocols: 198 of the 255, room left for the cases alive at once); once they are, a case
/// with a sink on a surface with a runtime of its own skips `Forget` (as
/// `kit::LOCK_API_ID_BUDGET` does for ids).
pub const SINK_SLOT_BUDGET: u64 = 11;

/// Counts the case's runtime, of protocol `name`, as kept alive for good by a forgotten
/// guard (once per case), if the budget allows: `false` if it is spent (the caller then
/// does not forget).
pub(crate) fn keep_slot(name: &'static str) -> bool {
    static BY_PROTOCOL: std::sync::Mutex<Vec<(&str, u64)>> = std::sync::Mutex::new(Vec::new());
    let mut b = BY_PROTOCOL.lock().unwrap_or_else(|p| p.into_inner());
    let i = match b.iter().position(|(n, _)| *n == name) {
        Some(i) => i,
        None => {
            b.push((name, 0));
            b.len() - 1
        }
    };
    if b[i].1 >= SINK_SLOT_BUDGET {
        return false;
    }
    b[i].1 += 1;
    KEPT.fetch_add(1, Ordering::Relaxed);
    true
}

/// What the event adversary did in this process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SinkStats {
    /// Cases run with a sink.
    pub cases: u64,
    /// Events delivered to a case's tap.
    pub delivered: u64,
    /// Of which checked by the driver against the model.
    pub checked: u64,
    /// Panics of the sink.
    pub panics: u64,
    /// Locks of the sink's own objects from inside the sink.
    pub locks: u64,
    /// Relocks of the event's own object from inside the sink.
    pub relocks: u64,
    /// Sleeps inside the sink.
    pub sleeps: u64,
    /// Runtimes with a sink kept alive for good by a forgotten guard, all protocols
    /// ([`SINK_SLOT_BUDGET`] per protocol).
    pub kept: u64,
}

/// What the event adversary did in this process so far.
pub fn stats() -> SinkStats {
    let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
    SinkStats {
        cases: l(&CASES),
        delivered: l(&DELIVERED),
        checked: l(&CHECKED),
        panics: l(&PANICS),
        locks: l(&LOCKS),
        relocks: l(&RELOCKS),
        sleeps: l(&SLEEPS),
        kept: l(&KEPT),
    }
}

/// A case's side of the sink, on one thread.
trait Tap {
    fn event(&self, e: &Event);
}

thread_local! {
    /// This thread's tap, while it is a worker of a case with a sink.
    static TAP: RefCell<Option<Rc<dyn Tap>>> = const { RefCell::new(None) };
}

/// The sink of every runtime the fuzzer makes with events, and of the process-wide ones:
/// hands an event to the tap of the thread it is delivered on.
struct Router;

impl EventSink for Router {
    fn event(&self, e: &Event) {
        if let Some(t) = TAP.try_with(|t| t.borrow().clone()).ok().flatten() {
            t.event(e);
        }
    }
    fn threshold(&self, _: EventKind) -> Duration {
        Duration::ZERO
    }
}

/// The sink (one for the process).
pub(crate) fn router() -> Arc<dyn EventSink> {
    static R: OnceLock<Arc<Router>> = OnceLock::new();
    R.get_or_init(|| Arc::new(Router)).clone()
}

/// Makes [`router`] the sink of the process-wide runtimes (`objmon::set_event_sink`), once,
/// before the first case of the process; whether it is theirs (not if another sink was set,
/// or one of them was made before: then the `lock_api` surface runs without events).
pub(crate) fn install_global() -> bool {
    static G: OnceLock<bool> = OnceLock::new();
    *G.get_or_init(|| objmon::set_event_sink(router()).is_ok())
}

/// One worker's tap of a case with a sink.
pub(crate) struct CaseTap<K: Kit> {
    sh: Arc<Shared<K>>,
    me: u32,
    /// Events delivered to this thread.
    n: Cell<u64>,
    /// The phase's objects: `[start, end)` of each slot's memory, by slot.
    phase: RefCell<Vec<(usize, usize)>>,
    inside: Cell<bool>,
}

impl<K: Kit> CaseTap<K> {
    /// Installs the tap of worker `me` on this thread, if its case has a sink.
    pub(crate) fn install(sh: &Arc<Shared<K>>, me: u32) -> Option<Rc<Self>> {
        sh.hostile.as_ref()?;
        let t = Rc::new(Self {
            sh: sh.clone(),
            me,
            n: Cell::new(0),
            phase: RefCell::new(Vec::new()),
            inside: Cell::new(false),
        });
        let dynt: Rc<dyn Tap> = t.clone();
        TAP.with(|c| *c.borrow_mut() = Some(dynt));
        Some(t)
    }
    /// Removes this thread's tap.
    pub(crate) fn uninstall() {
        let _ = TAP.try_with(|c| c.borrow_mut().take());
    }
    /// The objects of the phase that begins (`None`: it ended).
    pub(crate) fn phase(&self, slots: Option<&[crate::worker::Place<K::Slot>]>) {
        *self.phase.borrow_mut() = slots.map_or_else(Vec::new, |s| {
            s.iter()
                .map(|p| {
                    let a = std::ptr::from_ref::<K::Slot>(p) as usize;
                    (a, a + std::mem::size_of::<K::Slot>().max(1))
                })
                .collect()
        });
    }

    fn lock_own(&self, k: u64) {
        let th = self.sh.kit.attach();
        let own = &self.sh.own;
        let i = (k / 2 % 2) as usize;
        if let Ok(g) = K::lock(&th, &own[i]) {
            LOCKS.fetch_add(1, Ordering::Relaxed);
            if k.is_multiple_of(2) {
                let _ = K::notify(&th, Some(&g), &own[i], true);
            }
            if let Ok(Some(g2)) = K::try_lock(&th, &own[1 - i]) {
                drop(g2);
            }
            drop(g);
        };
    }
}

impl<K: Kit> Tap for CaseTap<K> {
    fn event(&self, e: &Event) {
        let nested = self.inside.replace(true);
        DELIVERED.fetch_add(1, Ordering::Relaxed);
        let slot = e.site().and_then(|site| {
            let a = site.object;
            let phase = self.phase.borrow();
            phase.iter().position(|&(b, end)| b <= a && a < end)
        });
        let current = self.sh.kit.current_id();
        // The slots' read lock again (this worker holds it for the phase; no writer waits
        // during a phase): a try, so that it can never wait.
        let slots = slot.and_then(|_| self.sh.slots.try_read().ok());
        let th = self.sh.kit.attach();
        let held = slot.zip(slots.as_ref()).map(|(s, slots)| {
            K::holds(&th, &slots[s]).unwrap_or_else(|| K::is_locked(&th, &slots[s]))
        });
        let seen = Seen {
            event: e.clone(),
            slot,
            current,
            held,
            nested,
        };
        self.sh
            .seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((self.me, seen));
        let k = self.n.get() + 1;
        self.n.set(k);
        let every = |n: u8| k.is_multiple_of(u64::from(n.max(1)));
        let mut panic = false;
        for h in self.sh.hostile.iter().flatten() {
            match *h {
                Hostile::Calm => {}
                Hostile::Sleeps(n) => {
                    SLEEPS.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_micros(20 * u64::from(n.min(10))));
                }
                Hostile::LocksOther(n) if every(n) => self.lock_own(k),
                Hostile::Relocks(n) if K::REENTRANT && held == Some(true) && every(n) => {
                    if let (Some(s), Some(slots)) = (slot, slots.as_ref()) {
                        if let Ok(g) = K::lock(&th, &slots[s]) {
                            RELOCKS.fetch_add(1, Ordering::Relaxed);
                            drop(g);
                        }
                    }
                }
                Hostile::Panics(n) if every(n) => panic = true,
                _ => {}
            }
        }
        drop(th);
        drop(slots);
        self.inside.set(nested);
        if panic {
            PANICS.fetch_add(1, Ordering::Relaxed);
            crate::worker::panic_quietly("objmon-fuzz: the hostile event sink panics");
        }
    }
}

/// What a worker was doing when it delivered the events the driver checks.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Call<'a> {
    /// A call that returned `Out`.
    Act(Act, &'a Out),
    /// A blocking call that returned `Out` from this state.
    Busy(Busy, &'a Out),
    /// Anything else (a phase end, a query of the driver's).
    Other,
}

impl<K: Kit> Driver<K> {
    /// Checks the events worker `w` delivered during `call` (see the module documentation).
    pub(crate) fn check_events(&mut self, w: usize, call: Call<'_>) -> R {
        if self.sh.hostile.is_none() {
            return Ok(());
        }
        let me = self.m.workers[w].ident;
        let seen: Vec<Seen> = {
            let mut q = self.sh.seen.lock().unwrap_or_else(|p| p.into_inner());
            let (mine, rest) = std::mem::take(&mut *q)
                .into_iter()
                .partition(|(i, _)| *i == me);
            *q = rest;
            mine.into_iter().map(|(_, s)| s).collect()
        };
        let mut waits = 0;
        for s in seen {
            CHECKED.fetch_add(1, Ordering::Relaxed);
            self.check_event(me, call, &s, &mut waits)?;
        }
        Ok(())
    }

    fn check_event(&mut self, me: u32, call: Call<'_>, s: &Seen, waits: &mut u32) -> R {
        let Some(site) = s.event.site() else {
            return Ok(());
        };
        let ev = &s.event;
        if s.nested {
            return fail(format!(
                "event sink: {ev:?} delivered to T{me} while it was inside the sink already \
                 (events inside a sink are dropped, documented)"
            ));
        }
        if s.current.is_some_and(|c| c != site.thread) {
            return fail(format!(
                "event sink: {ev:?} delivered on T{me} (id {:?} on the runtime), not on the \
                 thread it names",
                s.current
            ));
        }
        // The object the call was about (logical), and whether the call's own object.
        let target = match call {
            Call::Act(a, _) => match a {
                Act::Lock { s, .. }
                | Act::TryLock { s, .. }
                | Act::Enter { s, .. }
                | Act::Wait { s, .. }
                | Act::Notify { s, .. }
                | Act::Burst { s, .. } => Some(self.slot_of[s]),
                _ => None,
            },
            Call::Busy(b, _) => match b {
                Busy::Acquiring { l, .. }
                | Busy::Waiting { l, .. }
                | Busy::Notifying { l, .. }
                | Busy::Burst { l } => Some(l),
                Busy::Idle => None,
            },
            Call::Other => None,
        };
        let named = s.slot.map(|x| self.slot_of[x]);
        // Which object an event names is known only while neither the call's object nor the
        // one at the address it names has moved (`STALE_EVENT_OBJECT`).
        let moved = |l: Option<usize>| l.is_some_and(|l| self.m.objs[l].moved);
        let stale = STALE_EVENT_OBJECT && !self.strict_events && (moved(target) || moved(named));
        let excused = |d: &Self, l: Option<usize>| {
            l.is_some_and(|l| d.m.objs[l].tainted) || d.lenient_moved || stale
        };
        let not_held = s.held == Some(false) && !excused(self, named);
        let named = if stale { target } else { named };
        match ev {
            Event::MonitorEnter { .. } => {
                if target.is_none() || named != target {
                    return fail(format!(
                        "event sink: {ev:?} (object #{named:?}) delivered to T{me} during \
                         {call:?}, which locks no such object"
                    ));
                }
                if not_held {
                    return fail(format!(
                        "event sink: {ev:?} delivered to T{me}, which does not hold #{named:?} \
                         (documented: an enter is delivered while the thread holds the monitor)"
                    ));
                }
            }
            Event::MonitorWait {
                timeout,
                outcome,
                notifier,
                ..
            } => {
                *waits += 1;
                let (asked, out) = match call {
                    Call::Act(Act::Wait { ms, .. }, out) => (ms.is_some(), out),
                    Call::Busy(Busy::Waiting { .. }, out) => (false, out),
                    _ => {
                        return fail(format!(
                            "event sink: {ev:?} delivered to T{me} during {call:?}, not a wait"
                        ))
                    }
                };
                let returned = match out {
                    Out::Waited(Ok(WaitOutcome::Notified), _) => Some(WaitEnd::Notified),
                    Out::Waited(Ok(WaitOutcome::TimedOut), _) => Some(WaitEnd::TimedOut),
                    Out::Waited(Err(MonitorError::Interrupted), _) => Some(WaitEnd::Interrupted),
                    _ => None,
                };
                let why = if *waits > 1 {
                    Some("a second MonitorWait for one wait")
                } else if named != target {
                    Some("it names another object than the wait's")
                } else if returned != Some(*outcome) {
                    Some("its outcome is not what the wait returned")
                } else if timeout.is_some() != asked {
                    Some("its timeout is not the one asked")
                } else if *notifier == Some(site.thread) {
                    Some("the waiter notified itself")
                } else if not_held {
                    Some("the waiter does not hold the monitor at delivery")
                } else {
                    None
                };
                if let Some(why) = why {
                    return fail(format!(
                        "event sink: {ev:?} delivered to T{me} after {call:?}: {why}"
                    ));
                }
            }
            Event::MonitorNotify { all, woken, .. } => {
                // A notify that returned at once, or one that blocked for the mutex (a
                // `lock_api` condvar notified without it while another thread held it).
                let asked = match call {
                    Call::Act(Act::Notify { all, .. }, _) => all,
                    Call::Busy(Busy::Notifying { all, .. }, _) => all,
                    _ => {
                        return fail(format!(
                            "event sink: {ev:?} delivered to T{me} during {call:?}, not a notify"
                        ))
                    }
                };
                let l = target.unwrap_or(usize::MAX);
                let waiting = self.m.waiters(l).count() as u32;
                let in_set = waiting.saturating_sub(self.m.objs[l].pending);
                let why = if named != target {
                    Some("it names another object than the notify's".to_string())
                } else if *all != asked && !(K::NOTIFY_UNLOCKED && *all) {
                    // A condvar's `notify_one` wakes the whole wait set when another condvar
                    // has waiters on a mutex of the same address stripe (condvar.rs).
                    Some("notify and notifyAll swapped".into())
                } else if !*all && *woken > 1 {
                    Some("a notify took more than one waiter".into())
                } else if *woken > in_set {
                    Some(format!(
                        "it took {woken} waiter(s) out of the wait set, where the model has \
                         {in_set} ({waiting} waiting, {} already notified)",
                        self.m.objs[l].pending
                    ))
                } else if not_held {
                    Some("the notifier does not hold the monitor at delivery".into())
                } else {
                    None
                };
                if let Some(why) = why {
                    return fail(format!(
                        "event sink: {ev:?} delivered to T{me} after {call:?}: {why}"
                    ));
                }
            }
            _ => {}
        }
        Ok(())
    }
}
