//! The system lock's contended half: the contenders' spin (§1, [`Contenders`]), Figure 5's
//! suspend loop with Figure 7's wait on `UNLOCKING`, the end of a `Figure7Membarrier`
//! suspender's unordered sleep (`settle_unordered`), and the wakers: `resume` (Figure 5's
//! `tasuki_resume`) and the bounded-barging `hand_off`. Why no wake-up is lost on any of
//! these paths: docs/soundness.md, "The system lock".
//!
//! Invariant (under the queue lock): `wcount`'s count is the queue's length; a node flagged
//! `handoff` is the head and its count carries `HANDOFF`.

use super::config::{Contenders, QUEUE_FIRST};
use super::queue::{QNode, QueueGuard};
use super::{
    unfenced_model, waiter_count, TasukiLock, FIGURE7_MEMBARRIER, HANDOFF, LOCKED, SIG_GRANTED,
    SIG_RETRY, SIG_WAITING, UNLOCKED, UNLOCKING,
};
use crate::membarrier;
use crate::sync::{fence, spin_hint, waited_at_least, yield_now, Arc, Ordering};
use crate::thread::ThreadCore;
use std::time::{Duration, Instant};

/// How long a thread suspended on a `Figure7Membarrier` lock without the barrier sleeps at
/// most before it calls the barrier in its place and looks at the lock again
/// (`settle_unordered`; docs/soundness.md, "The system lock").
const UNORDERED_SLEEP: Duration = Duration::from_millis(1);

/// Pauses a contender spends waiting for an `UNLOCKING` holder's second store before it
/// yields the processor between checks (under loom a pause is already a yield).
const UNLOCKING_SPINS: u32 = 64;

/// Pauses of a [`Contenders::QueueFirst`] spin: `parking_lot`'s `SpinWait`, three looks after
/// 2, 4 and 8 pauses. Against seed 004's looks after 1, 2, … 32 (63 pauses), a holder that
/// re-locks at once is looked at (its line taken to shared) half as often and handed off
/// less: in `empty`/`none` of `objmon-bench contended`, `Monitor<T>`'s worst cell, 19–38 %
/// less time at 2 and 4 threads and a quarter fewer hand-offs at 2 (docs/benchmarks.md,
/// "Contended matrix", "The spin's rounds").
const QUEUE_FIRST_SPINS: u32 = 14;

impl TasukiLock {
    /// The seed's precursory spin (§1), read-only on the lock word: looks separated by
    /// exponentially growing pauses (1, 2, 4, … `pause`s) until `spin_limit` pauses are
    /// spent; then (not in the seed) `spin_yields` yields, each followed by a look. `true` if
    /// it took the lock. With [`Contenders::QueueFirst`] (on a lock built with
    /// `queue_first`), `parking_lot`'s rounds instead: no spin at all while threads are
    /// suspended (they came first), else looks after 2, 4 and 8 pauses ([`QUEUE_FIRST_SPINS`],
    /// at most `spin_limit`), then the yields.
    #[inline]
    pub(crate) fn spin(&self, c: Contenders) -> bool {
        let (mut budget, mut step) = if self.queue_first(c) {
            if self.wcount.load(Ordering::Relaxed) != 0 {
                return false;
            }
            (QUEUE_FIRST_SPINS.min(u32::from(self.spin_limit)), 2u32)
        } else {
            (u32::from(self.spin_limit), 1u32)
        };
        while budget != 0 {
            let n = step.min(budget);
            for _ in 0..n {
                spin_hint();
            }
            budget -= n;
            step <<= 1;
            if self.lock.load(Ordering::Relaxed) == UNLOCKED && self.try_lock() {
                return true;
            }
        }
        // Then the processor to the holder, `spin_yields` times (`SystemLockConfig`).
        for _ in 0..self.spin_yields & !QUEUE_FIRST {
            yield_now();
            if self.lock.load(Ordering::Relaxed) == UNLOCKED && self.try_lock() {
                return true;
            }
        }
        false
    }

    /// Whether the contenders of a call asking for `c` behave as `parking_lot`'s.
    #[inline]
    fn queue_first(&self, c: Contenders) -> bool {
        c == Contenders::QueueFirst && self.spin_yields & QUEUE_FIRST != 0
    }

    /// Figure 5 `tasuki_suspend` (with Figure 7's spin on `UNLOCKING`); with
    /// [`Contenders::QueueFirst`], a thread woken to retry spins again first ([`spin`](Self::spin)).
    ///
    /// # Safety
    /// As [`lock`](Self::lock): `t` is the calling thread's own core.
    #[cold]
    pub(crate) unsafe fn suspend(&self, t: &Arc<ThreadCore>, c: Contenders) {
        let since = (self.handoff_nanos != 0).then(Instant::now);
        // This thread in the queue, in this frame: linked only while `tasuki_signal` says
        // SIG_WAITING (see `QNode`'s lifetime rule).
        let node = QNode::new(t);
        // We have set HANDOFF and it has not been cleared for us yet.
        let mut requested = false;
        let mut overtaken = false;
        let mut q = self.queue.lock();
        loop {
            // Figure 5 line 15, and the hand-off request (one requester at a time: with the
            // queue lock held, any other requester is at the head of the queue).
            if !requested
                && !q.head_is_handoff()
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
                    self.wcount
                        .fetch_sub(waiter_count(requested), Ordering::Relaxed);
                    return;
                }
                Err(UNLOCKING) => {
                    // The holder is between its two stores: it will be done in a moment —
                    // unless it was preempted there. So spin a bounded while (Figure 7), then
                    // yield the processor between checks, so that a preempted holder gets it
                    // back. The queue lock stays held: a hand-off requester must be queued
                    // before the holder's `hand_off` can look there (releasing it here
                    // lost hand-offs: conformance `mutual_exclusion` hung).
                    self.wcount.fetch_sub(1, Ordering::Relaxed);
                    self.wait_out_unlocking();
                }
                Err(_) => {
                    // Figure7Membarrier: no barrier yet, so the holder's release may miss our
                    // count: sleep at most UNORDERED_SLEEP (docs/soundness.md). Computed
                    // before linking: nothing may panic while the node is linked.
                    let mut deadline = (self.release == FIGURE7_MEMBARRIER).then(|| {
                        let now = Instant::now();
                        now.checked_add(UNORDERED_SLEEP).unwrap_or(now)
                    });
                    // Figure 5 line 21: condvar_wait(&condvar, &mutex).
                    t.tasuki_signal.store(SIG_WAITING, Ordering::Relaxed);
                    node.handoff.set(requested);
                    // SAFETY (each push): `node` is unlinked (a waker unlinked it before
                    // signalling us, or it was never linked) and stays in this frame until a
                    // waker unlinks it and signals us, or we unlink it ourselves under the
                    // queue lock (`settle_unordered`), before we return.
                    if requested || (overtaken && !q.head_is_handoff()) {
                        // The requester goes to the head; a woken but overtaken thread keeps
                        // its place at the head too (behind a requester, if any).
                        unsafe { q.push_front(&node) };
                    } else if overtaken {
                        // SAFETY: as above; the head is linked, hence alive.
                        let second = unsafe { (*q.head).next.get() };
                        unsafe { q.link_before(&node, second) };
                    } else {
                        unsafe { q.push_back(&node) };
                    }
                    drop(q);
                    let sig = loop {
                        // Acquire: the waker's accesses to `node` happen before we reuse or
                        // drop it (the waker stores the signal after them, with Release).
                        let s = t.tasuki_signal.load(Ordering::Acquire);
                        if s != SIG_WAITING {
                            break s;
                        }
                        if t.parker.park(deadline) {
                            // The unordered sleep is over: settle it, in our place.
                            // SAFETY: `node` is ours, linked by the push above unless a
                            // waker has taken it off (it checks, under the queue lock).
                            if unsafe { self.settle_unordered(&node) } {
                                return;
                            }
                            deadline = None;
                        }
                    };
                    if sig == SIG_GRANTED {
                        return;
                    }
                    // SIG_RETRY: whoever woke us took our count (and our HANDOFF, if any).
                    requested = false;
                    overtaken = true;
                    // Out of the queue and uncounted: a contender like any other until we
                    // count ourselves in again, so we may spin as one (not while others are
                    // suspended). Our wait's age (`since`) runs on.
                    if self.queue_first(c) && self.spin(c) {
                        return;
                    }
                    q = self.queue.lock();
                }
            }
        }
    }

    /// Figure 7's wait for a holder between its two stores: a bounded spin, then yields (a
    /// preempted holder needs the processor).
    fn wait_out_unlocking(&self) {
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

    /// The end of a `Figure7Membarrier` suspender's unordered sleep (docs/soundness.md, "The
    /// system lock"): under the queue lock, if `node` is still linked (no waker took it off),
    /// our count is still in `wcount`; `membarrier` makes every holder's release from now on
    /// see it, and we look at the lock again without leaving our place: free, we take it (and
    /// leave the queue with our count); held, its holder's release will see us, so we sleep
    /// on, untimed. `true`: we hold the lock. A refused barrier orders nothing: then we leave
    /// the queue with our count and take the lock by yielding and retrying, never sleeping.
    ///
    /// # Safety
    /// `node` is the calling thread's own node of this queue, linked by it (and not taken
    /// off by a waker since, unless the waker signalled or will signal it).
    #[cold]
    unsafe fn settle_unordered(&self, node: &QNode) -> bool {
        let mut q = self.queue.lock();
        if node.next.get().is_null() {
            // A waker took us off: its signal (and its unpark) is on the way.
            return false;
        }
        let ordered = !unfenced_model() && membarrier::process_barrier();
        if ordered {
            loop {
                match self.lock.compare_exchange(
                    UNLOCKED,
                    LOCKED,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break,
                    Err(UNLOCKING) => self.wait_out_unlocking(),
                    // Held: its release sees our count (the barrier came after it).
                    Err(_) => return false,
                }
            }
        }
        // Taken (or the barrier refused): leave the queue with our count and HANDOFF.
        // SAFETY: linked in this queue (checked above, under the lock we hold since).
        unsafe { q.remove(node) };
        self.wcount
            .fetch_sub(waiter_count(node.handoff.get()), Ordering::Relaxed);
        drop(q);
        if !ordered {
            while !(self.lock.load(Ordering::Relaxed) == UNLOCKED && self.try_lock()) {
                yield_now();
            }
        }
        true
    }

    /// Figure 5 `tasuki_resume`: wake one suspended thread to retry.
    #[cold]
    pub(super) fn resume(&self) {
        let q = self.queue.lock();
        self.signal_one(q);
    }

    /// Under the queue lock: take the oldest suspended thread (a hand-off requester is the
    /// oldest) off the queue with its count, release the lock and wake it to retry. Figure 5
    /// lines 28–30.
    fn signal_one(&self, mut q: QueueGuard<'_>) {
        let Some((n, next)) = q.pop_front() else {
            return;
        };
        // SAFETY: `n` was linked until just now and its thread has not been signalled, so
        // its frame is still alive (lifetime rule).
        let requested = unsafe { (*n).handoff.get() };
        // A starving thread retries first; if it loses again it re-arms HANDOFF before its
        // CAS, so the next release hands the lock to it.
        self.wcount
            .fetch_sub(waiter_count(requested), Ordering::Relaxed);
        drop(q);
        // Release: after our last access to its node (lifetime rule).
        next.tasuki_signal.store(SIG_RETRY, Ordering::Release);
        next.parker.unpark();
    }

    /// Release with `HANDOFF` seen: keep the lock and give it to the starving thread.
    #[cold]
    pub(super) fn hand_off(&self) {
        // We still hold the lock (its word says UNLOCKING, which nobody else overwrites):
        // take it back to LOCKED so that nobody acquires it while we pick the heir.
        self.lock.store(LOCKED, Ordering::Relaxed);
        let mut q = self.queue.lock();
        if q.head_is_handoff() {
            let (_, heir) = q.pop_front().expect("a hand-off requester is queued");
            self.wcount.fetch_sub(1 | HANDOFF, Ordering::Relaxed);
            drop(q);
            // Release: our critical section, and our last access to the heir's node.
            heir.tasuki_signal.store(SIG_GRANTED, Ordering::Release);
            heir.parker.unpark();
        } else {
            // A concurrent `resume` already woke the requester to retry. Release for real;
            // every thread that failed its CAS against us (also against the retracted
            // LOCKED) queued itself before letting go of the queue lock we now hold, so
            // waking one of them here loses no wake-up.
            self.lock.store(UNLOCKED, Ordering::Release);
            self.signal_one(q);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod policy_tests {
    use super::*;
    use crate::tasuki::SystemLockConfig;

    /// `Contenders::QueueFirst` skips the spin while a thread is counted in `wcount`, on a
    /// lock built with `queue_first` only; `Contenders::Seed` spins either way, and so does
    /// every call on a lock built without it (the faithful setting). The yields' count
    /// shares its byte with the flag and keeps its value.
    #[test]
    fn queue_first_skips_the_spin_while_threads_are_suspended() {
        for queue_first in [true, false] {
            let l = TasukiLock::new(SystemLockConfig {
                spin_yields: 200,
                queue_first,
                ..SystemLockConfig::default()
            });
            assert_eq!(
                l.spin_yields & !QUEUE_FIRST,
                127,
                "yields clamped below the flag"
            );
            assert!(
                l.spin(Contenders::QueueFirst),
                "nobody suspended: spins and takes it"
            );
            // SAFETY: taken by the spin just above.
            unsafe { l.unlock() };
            // A suspended thread's count (no thread is parked: the lock is free and the
            // spin only looks).
            l.wcount.store(1, Ordering::Relaxed);
            assert_eq!(l.spin(Contenders::QueueFirst), !queue_first);
            if !queue_first {
                // SAFETY: taken by the spin just above. The release sees the count and
                // finds nobody queued to wake.
                unsafe { l.unlock() };
            }
            assert!(
                l.spin(Contenders::Seed),
                "the seed's contenders spin regardless"
            );
            // SAFETY: taken by the spin just above.
            unsafe { l.unlock() };
            l.wcount.store(0, Ordering::Relaxed);
        }
    }
}
