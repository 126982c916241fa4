//! The fat monitor's blocking episodes: its contended enter (the system lock's brief spin,
//! then a suspend) and the bracket around its wait, each published in the thread's
//! [`BlockSlot`](crate::blocking::BlockSlot) and, when the runtime profiles, timed into the
//! monitor's contention figures (`profile.rs`).
//!
//! `monitor.rs` holds the monitor's states and its uncontended paths; it calls down here only
//! when a thread must wait, so a reader follows `FatMonitor::enter` → [`lock_contended`]
//! (here) → `TasukiLock::suspend` (`tasuki/suspend.rs`) → the futex (`park.rs`). A separate file
//! because the figures' types live in `profile.rs`, which is keyed by the monitor and so
//! sits above `monitor.rs` in the layer map. What a publication means to a reader (thread
//! dumps, deadlock confirmation) is introspection's business (`introspect.rs`); this file
//! only writes it.
//!
//! With events on (`events.rs`), the same episodes are reported: a contended enter as a
//! `MonitorEnter` once the thread owns the monitor (unless the thread is inside an outer
//! episode, a spinner's, which reports it), a wait as a `MonitorWait` once the waiter holds
//! the monitor again, a notify as a `MonitorNotify`. Each report is made by the monitor's
//! caller after its last internal lock is released, on the thread itself.
//!
//! [`lock_contended`]: FatMonitor::lock_contended

use crate::blocking::BlockKind;
use crate::events::{self, Event, EventKind, Origin, WaitEnd};
use crate::monitor::{FatMonitor, WaitOutcome};
use crate::profile::{nanos, Counts};
use crate::sync::{Arc, Ordering};
use crate::tasuki::Contenders;
use crate::thread::{ThreadCore, ThreadId};
use crate::MonitorError;
use std::time::{Duration, Instant};

/// Events on: what a contended enter reports once the thread owns the monitor
/// ([`FatMonitor::report_enter`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Contended {
    start_nanos: u64,
    /// The owner seen when the enter began (raw id, 0: none).
    seen: u32,
    parked: bool,
}

/// Events on: what a wait reports once the waiter holds the monitor again.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WaitReport {
    start_nanos: u64,
    timeout: Option<Duration>,
}

/// What [`FatMonitor::end_wait`] and [`FatMonitor::profile_wait`] need of the episode begun
/// by [`FatMonitor::begin_wait`]: whether it was published (`false`: the thread was in an
/// episode already, which stands), and its start when profiled.
pub(crate) type WaitEpisode = (bool, Option<Instant>);

/// Episode hooks of the fat monitor (its contended enter and its wait).
impl FatMonitor {
    /// The contended part of `enter`: the system lock's brief spin (skipped if `spin` is
    /// false: the caller has just spun, `FatMonitor::enter_spun`), then (if that did not get
    /// the lock) a blocked-on-enter episode, published unless the thread is in one already,
    /// around the system lock's suspend; profiled either way. A thread that gets the lock in
    /// the spin (a few µs at most) publishes nothing: the episode's six SeqCst stores would
    /// cost more than the spin saves, and a detector that misses a thread spinning only
    /// reports a deadlock one look later (a false negative, never a false positive).
    ///
    /// Events on: reported as a `MonitorEnter` once the thread owns the monitor, for which
    /// this stores the ownership of a first enter itself (owner, count 1; the caller's stores
    /// after it repeat them), unless an outer episode of the thread (a spinner's) reports it.
    #[cold]
    pub(crate) fn lock_contended(&self, t: &Arc<ThreadCore>, spin: bool, c: Contenders) {
        if let Some(ev) = self.lock_contended_with(t, spin, c) {
            self.own_locked(t);
            self.report_enter(t, ev);
        }
    }

    /// [`lock_contended`](Self::lock_contended) of a notified waiter's re-entry, which its
    /// wait's report covers (no `MonitorEnter`).
    #[cold]
    pub(crate) fn lock_contended_unreported(&self, t: &Arc<ThreadCore>) {
        let _ = self.lock_contended_with(t, true, Contenders::Seed);
    }

    #[inline(always)]
    fn lock_contended_with(
        &self,
        t: &Arc<ThreadCore>,
        spin: bool,
        c: Contenders,
    ) -> Option<Contended> {
        let start = self.profile_on.then(Instant::now);
        let mut ev = (self.events != 0).then(|| self.contended_begins());
        let outer = if spin && self.system_lock().spin(c) {
            // Profiled here unless an outer episode of this thread covers this enter.
            if start.is_some() && t.blocking.in_episode() {
                return self.contended_ends(t, ev, false);
            }
            None
        } else {
            let outer = t.blocking.begin(
                BlockKind::Enter,
                self.object.load(Ordering::Relaxed),
                self.index,
            );
            // SAFETY: `t` is the calling thread's core (`lock_contended` is reached only from
            // `FatMonitor`'s `enter`, `enter_spun` and `wait` on the protocols' paths, whose
            // `t` is the caller's own context).
            unsafe { self.system_lock().suspend(t, c) };
            Some(outer)
        };
        if let Some(s) = start.filter(|_| outer != Some(false)) {
            self.profile_add(Counts {
                enters: 1,
                blocked_ns: nanos(s.elapsed()),
                ..Counts::default()
            });
        }
        if outer == Some(true) {
            t.blocking.end();
        }
        if let Some(e) = ev.as_mut() {
            e.parked = outer.is_some();
        }
        self.contended_ends(t, ev, outer.is_some())
    }

    /// Events on, a contended enter begins: the owner it waits for is the one it names as
    /// the previous owner (HotSpot has the exiting owner write `_previous_owner_tid`; here
    /// the exit is a fast path, `fat`'s every unlock, that must not look at events).
    fn contended_begins(&self) -> Contended {
        Contended {
            start_nanos: events::now_nanos(),
            seen: self.owner_raw(),
            parked: false,
        }
    }

    /// Events on, the system lock is ours: report only an outermost episode (an outer one,
    /// a spinner's, learns that it parked).
    fn contended_ends(
        &self,
        t: &ThreadCore,
        ev: Option<Contended>,
        parked: bool,
    ) -> Option<Contended> {
        let ev = ev?;
        if t.blocking.in_episode() {
            if parked {
                t.event_parked.store(true, Ordering::Relaxed);
            }
            return None;
        }
        Some(ev)
    }

    /// Reports the contended enter `ev` of `t`, which owns the monitor now.
    fn report_enter(&self, t: &ThreadCore, ev: Contended) {
        events::deliver(
            self.events,
            EventKind::MonitorEnter,
            self.origin(t, ev.start_nanos),
            |site| Event::MonitorEnter {
                site,
                previous_owner: ThreadId::from_raw(ev.seen).filter(|p| *p != t.id()),
                parked: ev.parked,
            },
        );
    }

    /// Events on: a wait begins now, until `deadline`.
    pub(crate) fn wait_report(deadline: Option<Instant>) -> WaitReport {
        WaitReport {
            start_nanos: events::now_nanos(),
            // The timeout asked (`wait(Some(d))`), or what is left of a deadline given.
            timeout: deadline.map(|d| {
                crate::park::asked_timeout(d)
                    .unwrap_or_else(|| d.saturating_duration_since(Instant::now()))
            }),
        }
    }

    /// Reports the wait `ev` of `t`, which holds the monitor again, ended as `outcome`.
    #[cold]
    pub(crate) fn report_wait(
        &self,
        t: &ThreadCore,
        ev: WaitReport,
        outcome: &Result<WaitOutcome, MonitorError>,
    ) {
        let notifier = t.notifier.swap(0, Ordering::Relaxed);
        let (outcome, notifier) = match outcome {
            Ok(WaitOutcome::Notified) => (WaitEnd::Notified, ThreadId::new(notifier)),
            Ok(WaitOutcome::TimedOut) => (WaitEnd::TimedOut, None),
            Err(_) => (WaitEnd::Interrupted, None),
        };
        events::deliver(
            self.events,
            EventKind::MonitorWait,
            self.origin(t, ev.start_nanos),
            |site| Event::MonitorWait {
                site,
                timeout: ev.timeout,
                outcome,
                notifier,
            },
        );
    }

    /// Reports a notify (`all`: notifyAll) of `t` begun at `start_nanos` that took `woken`
    /// waiters out of the wait set.
    #[cold]
    pub(crate) fn report_notify(&self, t: &ThreadCore, start_nanos: u64, all: bool, woken: u32) {
        events::deliver(
            self.events,
            EventKind::MonitorNotify,
            self.origin(t, start_nanos),
            |site| Event::MonitorNotify { site, all, woken },
        );
    }

    /// Where an event of `t` on this monitor, begun at `start_nanos`, happened.
    pub(crate) fn origin(&self, t: &ThreadCore, start_nanos: u64) -> Origin {
        Origin {
            start_nanos,
            thread: t.id(),
            object: self.object.load(Ordering::Relaxed),
            monitor: self.index,
        }
    }

    /// Starts a wait episode; returns what [`end_wait`](Self::end_wait) needs.
    pub(crate) fn begin_wait(&self, t: &ThreadCore, timed: bool) -> WaitEpisode {
        let kind = if timed {
            BlockKind::TimedWait
        } else {
            BlockKind::Wait
        };
        let outer = t
            .blocking
            .begin(kind, self.object.load(Ordering::Relaxed), self.index);
        (outer, (outer && self.profile_on).then(Instant::now))
    }

    /// Ends the wait episode (the waiter left the wait set; it re-enters next).
    pub(crate) fn end_wait(&self, t: &ThreadCore, (outer, _): WaitEpisode) {
        if outer {
            t.blocking.end();
        }
    }

    /// The waiter holds the monitor again: profile the whole wait.
    pub(crate) fn profile_wait(&self, (_, start): WaitEpisode) {
        if let Some(s) = start {
            self.profile_add(Counts {
                waits: 1,
                waited_ns: nanos(s.elapsed()),
                ..Counts::default()
            });
        }
    }
}
