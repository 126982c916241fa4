//! The fat monitor's blocking episodes: its contended enter (the system lock's brief spin,
//! then a suspend) and the bracket around its wait, each published in the thread's
//! [`BlockSlot`](crate::blocking::BlockSlot) and, when the runtime profiles, timed into the
//! monitor's contention figures (`profile.rs`).
//!
//! `monitor.rs` holds the monitor's states and its uncontended paths; it calls down here only
//! when a thread must wait, so a reader follows `FatMonitor::enter` → [`lock_contended`]
//! (here) → `TasukiLock::suspend` (`tasuki.rs`) → the futex (`park.rs`). A separate file
//! because the figures' types live in `profile.rs`, which is keyed by the monitor and so
//! sits above `monitor.rs` in the layer map. What a publication means to a reader (thread
//! dumps, deadlock confirmation) is introspection's business (`introspect.rs`); this file
//! only writes it.
//!
//! [`lock_contended`]: FatMonitor::lock_contended

use crate::blocking::BlockKind;
use crate::monitor::FatMonitor;
use crate::profile::{nanos, Counts};
use crate::sync::{Arc, Ordering};
use crate::tasuki::Contenders;
use crate::thread::ThreadCore;
use std::time::Instant;

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
    #[cold]
    pub(crate) fn lock_contended(&self, t: &Arc<ThreadCore>, spin: bool, c: Contenders) {
        let start = self.profile_on.then(Instant::now);
        let outer = if spin && self.system_lock().spin(c) {
            // Profiled here unless an outer episode of this thread covers this enter.
            if start.is_some() && t.blocking.in_episode() {
                return;
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
