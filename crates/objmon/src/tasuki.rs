//! The tasuki lock: Onodera's single-atomic spin-suspend lock (seed 004), the system lock under
//! every fat monitor.
//!
//! | field    | meaning                                                                  |
//! |----------|--------------------------------------------------------------------------|
//! | `lock`   | `UNLOCKED` / `LOCKED` / `UNLOCKING` (the third state only in Figure 7)    |
//! | `wcount` | bits 0..=30: threads in the suspend loop (Figure 3); bit 31: `HANDOFF`   |
//! | `queue`  | the mutex and condition variable of Figure 5: a FIFO of suspended threads|
//!
//! **Uncontended path** (Figure 4): `lock` is one compare-and-swap; `unlock` is a plain store
//! and a plain test of `wcount`, no atomic read-modify-write. On a multiprocessor (§4) the
//! default variant, Figure 7, adds the `UNLOCKING` state so that unlock needs one barrier:
//! `store UNLOCKING; fence(SeqCst); load wcount; store UNLOCKED`. The Figure 4–5 variant with
//! the two barriers §4 requires (after the release store and after the increment) stays
//! selectable as [`SystemLockVariant::Figure5`].
//!
//! **Why no wake-up is lost** (Property 3.1, §4 proof): a suspending thread increments
//! `wcount`, issues a SeqCst fence and then compare-and-swaps. If that CAS fails on a `LOCKED`
//! written by holder S, S's `UNLOCKING` store is later in the lock word's modification order, so
//! S's fence follows ours in the SeqCst order and S's load of `wcount` sees our increment: S
//! calls `resume`, which takes the queue mutex only after we have enqueued ourselves.
//!
//! **Two departures from the figures, both in the slow path:**
//! - Figure 7 as printed spins on `UNLOCKING` by going round the loop again, re-incrementing
//!   `wcount` each time with no matching decrement; we undo the increment before spinning, so
//!   `wcount` stays exact (invariant under the mutex: `wcount == queue.len() + handoff slot`).
//!   Figure 7's unlock reads `wcount` after storing `UNLOCKED`; we read it just before (still
//!   after the fence, which is all the proof uses), so that a hand-off can keep the lock.
//! - **Bounded barging** (the seed's algorithm "lacks fairness", §3): a thread that has waited
//!   longer than `fair_handoff` (default 1 ms, as parking_lot, Go and CPython) sets `HANDOFF`
//!   in `wcount` *before* its compare-and-swap and parks in a one-thread hand-off slot. By the
//!   same fence argument the holder sees `HANDOFF` at its next unlock, and instead of releasing
//!   it retracts `UNLOCKING` to `LOCKED` and hands the lock straight to that thread. So a
//!   waiter is overtaken for at most `fair_handoff` plus one critical section.
//!   `fair_handoff: None` gives the seed's unfair lock.

use crate::sync::{
    fence, lock, spin_hint, waited_at_least, yield_now, Arc, AtomicU32, Mutex, Ordering,
};
use crate::thread::ThreadCore;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

const UNLOCKED: u32 = 0;
const LOCKED: u32 = 1;
/// Figure 7's transient state: the holder is releasing; contenders spin instead of sleeping.
const UNLOCKING: u32 = 2;

/// `wcount` bit: a starving waiter sits in the hand-off slot; the next unlock must grant.
const HANDOFF: u32 = 1 << 31;

/// `ThreadCore::tasuki_signal` values.
const SIG_WAITING: u32 = 1;
/// Woken by `resume`: go round the suspend loop again (Figure 5's condvar_signal).
const SIG_RETRY: u32 = 2;
/// The unlocking thread handed us the lock: we own it.
const SIG_GRANTED: u32 = 3;

/// Which of the seed's release sequences a system lock uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SystemLockVariant {
    /// Figures 4–5 with the two barriers of §4 (after the release store, after the increment).
    /// No hand-off: the seed's own fairness.
    Figure5,
    /// Figure 7: the `UNLOCKING` state and one barrier on release (the default).
    #[default]
    Figure7,
}

/// Tuning of a system lock, fixed when the lock is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SystemLockConfig {
    /// Release sequence.
    pub variant: SystemLockVariant,
    /// Read-only spins on a held lock before suspending (the seed's "spin threshold"; §1).
    pub spin_limit: u32,
    /// Wait after which a suspended thread is handed the lock instead of competing for it
    /// (Figure 7 variant only). `None`: the seed's unfair lock.
    pub fair_handoff: Option<Duration>,
}

impl Default for SystemLockConfig {
    fn default() -> Self {
        Self {
            variant: SystemLockVariant::Figure7,
            spin_limit: 64,
            fair_handoff: Some(Duration::from_millis(1)),
        }
    }
}

struct Waiters {
    /// Threads suspended in Figure 5's `condvar_wait`, oldest first.
    queue: VecDeque<Arc<ThreadCore>>,
    /// The starving thread that asked for a hand-off, if any.
    handoff: Option<Arc<ThreadCore>>,
}

/// The tasuki spin-suspend lock (see the module documentation). Not reentrant; it has no owner
/// field — the fat monitor above it keeps one.
pub struct TasukiLock {
    lock: AtomicU32,
    wcount: AtomicU32,
    handoff_nanos: u32,
    spin_limit: u16,
    figure7: bool,
    waiters: Mutex<Waiters>,
}

/// Pauses a contender spends waiting for an `UNLOCKING` holder's second store before it
/// yields the processor between checks (under loom a pause is already a yield).
const UNLOCKING_SPINS: u32 = 64;

impl TasukiLock {
    /// An unlocked lock.
    pub fn new(config: SystemLockConfig) -> Self {
        let figure7 = config.variant == SystemLockVariant::Figure7;
        Self {
            lock: AtomicU32::new(UNLOCKED),
            wcount: AtomicU32::new(0),
            handoff_nanos: match config.fair_handoff {
                Some(d) if figure7 => d.as_nanos().clamp(1, u32::MAX as u128) as u32,
                _ => 0,
            },
            spin_limit: config.spin_limit.min(u16::MAX as u32) as u16,
            figure7,
            waiters: Mutex::new(Waiters {
                queue: VecDeque::new(),
                handoff: None,
            }),
        }
    }

    /// Acquires the lock: one compare-and-swap when uncontended (Figure 4, line 2).
    ///
    /// # Safety
    /// `t` is the calling thread's own core (from its [`ThreadHandle`](crate::vm::ThreadHandle)):
    /// a contender suspends on `t`'s parker and the unlocker wakes `t`, so another thread's
    /// core would put the wrong thread to sleep (a hang, and stolen wake-ups for `t`).
    #[inline]
    pub unsafe fn lock(&self, t: &Arc<ThreadCore>) {
        if self.try_lock() {
            return;
        }
        self.suspend(t);
    }

    /// Acquires the lock if it is free right now.
    #[inline]
    pub fn try_lock(&self) -> bool {
        self.lock
            .compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Releases the lock.
    ///
    /// # Safety
    /// The calling thread holds the lock (from [`lock`](Self::lock) or
    /// [`try_lock`](Self::try_lock)): a release by anyone else lets two threads in.
    #[inline]
    pub unsafe fn unlock(&self) {
        if self.figure7 {
            // Figure 7: two-step release with one barrier.
            self.lock.store(UNLOCKING, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            let w = self.wcount.load(Ordering::Relaxed);
            if w & HANDOFF != 0 {
                return self.hand_off();
            }
            self.lock.store(UNLOCKED, Ordering::Release);
            if w != 0 {
                self.resume();
            }
        } else {
            // Figure 4 line 8 with §4's barrier after it (the Release store is the one before).
            self.lock.store(UNLOCKED, Ordering::Release);
            fence(Ordering::SeqCst);
            if self.wcount.load(Ordering::Relaxed) != 0 {
                self.resume();
            }
        }
    }

    /// Whether some thread holds the lock (a racy snapshot, for introspection).
    pub fn is_locked(&self) -> bool {
        self.lock.load(Ordering::Relaxed) != UNLOCKED
    }

    /// Whether threads are suspended on, or about to suspend on, this lock (racy snapshot).
    pub fn has_waiters(&self) -> bool {
        self.wcount.load(Ordering::Relaxed) != 0
    }

    /// Figure 5 `tasuki_suspend` (with Figure 7's spin on `UNLOCKING`), preceded by a bounded
    /// read-only spin.
    #[cold]
    fn suspend(&self, t: &Arc<ThreadCore>) {
        for _ in 0..self.spin_limit {
            spin_hint();
            if self.lock.load(Ordering::Relaxed) == UNLOCKED && self.try_lock() {
                return;
            }
        }
        let since = (self.handoff_nanos != 0).then(Instant::now);
        // We have set HANDOFF and it has not been cleared for us yet.
        let mut requested = false;
        let mut overtaken = false;
        let mut w = lock(&self.waiters);
        loop {
            // Figure 5 line 15, and the hand-off request (one requester at a time: with the
            // mutex held, any other requester is parked in the slot).
            if !requested
                && w.handoff.is_none()
                && since.is_some_and(|s| waited_at_least(s, self.handoff_nanos))
            {
                requested = true;
                // Set before the CAS, so that the holder we fail against must see it.
                self.wcount.fetch_add(1 | HANDOFF, Ordering::Relaxed);
            } else {
                self.wcount.fetch_add(1, Ordering::Relaxed);
            }
            fence(Ordering::SeqCst);
            match self
                .lock
                .compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => {
                    let undo = if requested { 1 | HANDOFF } else { 1 };
                    self.wcount.fetch_sub(undo, Ordering::Relaxed);
                    return;
                }
                Err(UNLOCKING) => {
                    // The holder is between its two stores: it will be done in a moment —
                    // unless it was preempted there. So spin a bounded while (Figure 7), then
                    // yield the processor between checks, so that a preempted holder gets it
                    // back. The waiters mutex stays held: a hand-off requester must be in the
                    // slot before the holder's `hand_off` can look there (releasing it here
                    // lost hand-offs: conformance `mutual_exclusion` hung).
                    self.wcount.fetch_sub(1, Ordering::Relaxed);
                    let mut spins = 0;
                    while self.lock.load(Ordering::Relaxed) == UNLOCKING {
                        if spins < UNLOCKING_SPINS {
                            spins += 1;
                            spin_hint();
                        } else {
                            yield_now();
                        }
                    }
                }
                Err(_) => {
                    // Figure 5 line 21: condvar_wait(&condvar, &mutex).
                    t.tasuki_signal.store(SIG_WAITING, Ordering::Relaxed);
                    if requested {
                        w.handoff = Some(t.clone());
                    } else if overtaken {
                        // Woken but overtaken: keep our place at the head.
                        w.queue.push_front(t.clone());
                    } else {
                        w.queue.push_back(t.clone());
                    }
                    drop(w);
                    let sig = loop {
                        let s = t.tasuki_signal.load(Ordering::Acquire);
                        if s != SIG_WAITING {
                            break s;
                        }
                        t.parker.park(None);
                    };
                    if sig == SIG_GRANTED {
                        return;
                    }
                    // SIG_RETRY: whoever woke us took our count (and our HANDOFF, if any).
                    requested = false;
                    overtaken = true;
                    w = lock(&self.waiters);
                }
            }
        }
    }

    /// Figure 5 `tasuki_resume`: wake one suspended thread to retry.
    #[cold]
    fn resume(&self) {
        let mut w = lock(&self.waiters);
        self.signal_one(&mut w);
    }

    /// Under the mutex: take one suspended thread off the hand-off slot (first) or the queue,
    /// with its count, and wake it to retry. Figure 5 lines 28–30.
    fn signal_one(&self, w: &mut Waiters) {
        let next = if let Some(h) = w.handoff.take() {
            // A starving thread retries first; if it loses again it re-arms HANDOFF before
            // its CAS, so the next release hands the lock to it.
            self.wcount.fetch_sub(1 | HANDOFF, Ordering::Relaxed);
            h
        } else if let Some(q) = w.queue.pop_front() {
            self.wcount.fetch_sub(1, Ordering::Relaxed);
            q
        } else {
            return;
        };
        next.tasuki_signal.store(SIG_RETRY, Ordering::Release);
        next.parker.unpark();
    }

    /// Release with `HANDOFF` seen: keep the lock and give it to the starving thread.
    #[cold]
    fn hand_off(&self) {
        // We still hold the lock (its word says UNLOCKING, which nobody else overwrites):
        // take it back to LOCKED so that nobody acquires it while we pick the heir.
        self.lock.store(LOCKED, Ordering::Relaxed);
        let mut w = lock(&self.waiters);
        match w.handoff.take() {
            Some(heir) => {
                self.wcount.fetch_sub(1 | HANDOFF, Ordering::Relaxed);
                drop(w);
                heir.tasuki_signal.store(SIG_GRANTED, Ordering::Release);
                heir.parker.unpark();
            }
            None => {
                // A concurrent `resume` already woke the requester to retry. Release for
                // real; every thread that failed its CAS against us (also against the
                // retracted LOCKED) enqueued itself before letting go of the mutex we now
                // hold, so waking one of them here loses no wake-up.
                self.lock.store(UNLOCKED, Ordering::Release);
                self.signal_one(&mut w);
            }
        }
    }
}

impl std::fmt::Debug for TasukiLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TasukiLock")
            .field("lock", &self.lock.load(Ordering::Relaxed))
            .field("wcount", &self.wcount.load(Ordering::Relaxed))
            .finish()
    }
}
