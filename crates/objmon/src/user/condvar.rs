//! [`RawCondvar`]: lock_api 0.5's `RawCondvar` / `RawCondvarTimed` over a [`RawMonitor`]'s
//! own wait set, so that `lock_api::Condvar<RawCondvar>` waits and notifies as Java's
//! `wait` / `notify` on the header that `lock_api::Mutex<RawMonitor, T>` locks (as
//! `parking_lot::RawCondvar` works with its own mutex).
//!
//! Owns which mutex the condvar is bound to and who is using that binding: `mutex` (the
//! `RawMonitor` its waiters wait on) and `state`, one word of
//! `waiters << 32 | CLOSING | BINDING | notifiers`.
//!
//! Invariants:
//!
//! 1. `waiters` counts the threads inside `wait` between their registration and their
//!    deregistration, both made holding the mutex; each of them borrows the mutex for the
//!    call, so the mutex is alive while `waiters > 0`.
//! 2. `mutex` changes only under `BINDING`, which is set only from `state == 0`; while
//!    `waiters > 0` every waiter waits on `mutex` (a wait with another mutex panics before it
//!    releases anything: lock_api allows a panic, as `parking_lot` does).
//! 3. `notifiers` counts notifies between their pin (taken only while `waiters > 0` and
//!    `CLOSING` is clear) and their unpin, after their last use of the mutex. `waiters` does
//!    not reach 0 while `notifiers > 0`: the last waiter, finding notifiers in flight, sets
//!    `CLOSING` (no new pins), lets go of the mutex (they need it) until they are gone or a
//!    new waiter came, and takes it back. So a pinned notifier's mutex is alive (1).
//! 4. [`SHARED`]`[stripe(mutex)]` counts the condvars with waiters on a mutex of that stripe;
//!    a condvar adds itself on its first registration and takes itself away on its last
//!    deregistration, both holding the mutex. A notifier holding the mutex that reads 1 knows
//!    the wait set holds its own condvar's waiters only.
//!
//! Notify without the lock (lock_api calls `notify_one` without the mutex; Java requires the
//! monitor held): a notifier that does not hold the mutex takes it for the notify and gives it
//! back — a lock and unlock of the mutex, and a wait for it if another thread holds it, so a
//! notify follows the mutex's lock order. A notifier that holds it notifies in place. Without
//! waiters a notify is one atomic load.
//!
//! Two condvars on one mutex share its one wait set: a `notify_one` that may reach another
//! condvar's waiter (4 says so) wakes the whole wait set instead, so that one of its own is
//! woken; the others' wake-ups are spurious. Hence no guarantee against spurious wake-ups,
//! and notifies return `false` / `0` (lock_api's contract). Nor do interrupts: an
//! interrupt ([`Runtime::interrupt`](crate::vm::Runtime::interrupt)) of a waiting thread ends
//! its wait as a wake-up (a timed wait reports "not timed out") and is consumed, as Java's
//! `wait` clears it when it throws; lock_api's `Condvar` has no way to report it.

use super::global::MonitorProtocol;
use super::monitor::DefaultProtocol;
use super::raw::RawMonitor;
use crate::monitor::WaitOutcome;
use crate::park::deadline_after;
use crate::spin::Spin;
use crate::MonitorError;
use std::fmt;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// One waiter in [`RawCondvar`]'s state word.
const WAITER: u64 = 1 << 32;
/// The last waiter is leaving and waits for the notifiers in flight: pin no more.
const CLOSING: u64 = 1 << 31;
/// A first waiter is storing the mutex it waits on.
const BINDING: u64 = 1 << 30;
/// The notifiers in flight.
const NOTIFIERS: u64 = BINDING - 1;

/// Invariant 4: condvars with waiters, per stripe of mutex addresses.
static SHARED: [AtomicUsize; 64] = [const { AtomicUsize::new(0) }; 64];

fn stripe<P: MonitorProtocol>(m: &RawMonitor<P>) -> &'static AtomicUsize {
    let a = m as *const RawMonitor<P> as usize;
    &SHARED[(a ^ (a >> 6) ^ (a >> 12)) % SHARED.len()]
}

/// A condition variable on a [`RawMonitor`]'s own wait set, for [`lock_api::Condvar`]:
/// `lock_api::Condvar<objmon::RawCondvar>` works with `lock_api::Mutex<objmon::RawMonitor, T>`
/// (the same protocol `P`), and its `wait` is Java's `Object.wait` on the mutex's header.
///
/// ```
/// use objmon::lock_api::{Condvar, Mutex};
/// use objmon::{RawCondvar, RawMonitor};
/// use std::sync::Arc;
///
/// let pair = Arc::new((Mutex::<RawMonitor, bool>::new(false), Condvar::<RawCondvar>::new()));
/// let pair2 = pair.clone();
/// let t = std::thread::spawn(move || {
///     let (started, cv) = &*pair2;
///     *started.lock() = true;
///     cv.notify_one(); // without the lock: takes it for the notify
/// });
/// let (started, cv) = &*pair;
/// let mut g = started.lock();
/// cv.wait_while(&mut g, |started| !*started);
/// drop(g);
/// t.join().unwrap();
/// ```
///
/// Bound to one mutex at a time, as `parking_lot::Condvar` is: waiting with a second mutex
/// while a thread waits with the first panics; once nobody waits, another mutex may be used.
///
/// ```should_panic
/// use objmon::lock_api::{Condvar, Mutex};
/// use objmon::{RawCondvar, RawMonitor};
/// use std::time::Duration;
///
/// let (a, b) = (Mutex::<RawMonitor, ()>::new(()), Mutex::<RawMonitor, ()>::new(()));
/// let cv = Condvar::<RawCondvar>::new();
/// std::thread::scope(|s| {
///     let (tx, rx) = std::sync::mpsc::channel();
///     let (a, cv) = (&a, &cv);
///     s.spawn(move || {
///         let mut g = a.lock();
///         tx.send(()).unwrap();
///         cv.wait_for(&mut g, Duration::from_millis(500)); // waits with `a`
///     });
///     rx.recv().unwrap();
///     drop(a.lock()); // free again: the other thread waits
///     cv.wait_for(&mut b.lock(), Duration::from_millis(1)); // panics: a second mutex
/// });
/// ```
///
/// Timed waits time out on the monotonic clock; spurious wake-ups happen (see the module's
/// terms: two condvars on one mutex, interrupts), so wait in a loop or with `wait_while`.
/// `notify_one` / `notify_all` therefore return `false` / `0`, as lock_api prescribes.
///
/// ```
/// use objmon::lock_api::{Condvar, Mutex};
/// use objmon::{RawCondvar, RawMonitor};
/// use std::time::Duration;
///
/// let m = Mutex::<RawMonitor, u32>::new(0);
/// let cv = Condvar::<RawCondvar>::new();
/// let mut g = m.lock();
/// assert!(cv.wait_for(&mut g, Duration::from_millis(5)).timed_out());
/// assert!(!cv.notify_one()); // nobody waits; and never `true`: see above
/// ```
pub struct RawCondvar<P: MonitorProtocol = DefaultProtocol> {
    /// The mutex the waiters wait on (invariant 2); null before the first wait.
    mutex: AtomicPtr<RawMonitor<P>>,
    /// `waiters << 32 | CLOSING | BINDING | notifiers` (invariants 1-3).
    state: AtomicU64,
}

fn waiters(s: u64) -> u64 {
    s / WAITER
}

impl<P: MonitorProtocol> RawCondvar<P> {
    /// Registers a waiter that holds `m` (invariants 1, 2 and 4). Panics, having changed
    /// nothing, if another mutex has waiters.
    fn register(&self, m: &RawMonitor<P>) {
        let mut spin = Spin::new();
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            if s & BINDING != 0 {
                // Another thread is binding (it holds its mutex and takes no other lock).
                spin.snooze();
                s = self.state.load(Ordering::Acquire);
                continue;
            }
            if waiters(s) == 0 {
                debug_assert_eq!(s, 0, "RawCondvar: notifiers pinned without waiters");
                match self
                    .state
                    .compare_exchange(0, BINDING, Ordering::Acquire, Ordering::Acquire)
                {
                    Ok(_) => {
                        self.mutex.store(m as *const _ as *mut _, Ordering::Relaxed);
                        stripe(m).fetch_add(1, Ordering::Relaxed);
                        self.state.store(WAITER, Ordering::Release);
                        return;
                    }
                    Err(now) => {
                        s = now;
                        continue;
                    }
                }
            }
            // Waiters: `mutex` is theirs (invariant 2; our Acquire load saw its store).
            if !std::ptr::eq(self.mutex.load(Ordering::Relaxed), m) {
                two_mutexes()
            }
            // A new waiter clears CLOSING: the leaving one may go, we keep the mutex alive.
            let new = (s & !CLOSING) + WAITER;
            match self
                .state
                .compare_exchange_weak(s, new, Ordering::Acquire, Ordering::Acquire)
            {
                Ok(_) => return,
                Err(now) => s = now,
            }
        }
    }

    /// Deregisters a waiter that holds `m`, the condvar's mutex (invariants 1, 3 and 4).
    ///
    /// # Safety
    /// The caller holds `m` through a `RawMonitor` level (as for `RawMonitor::wait_held`).
    unsafe fn deregister(&self, m: &RawMonitor<P>) {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            let new = if waiters(s) > 1 {
                s - WAITER
            } else if s & NOTIFIERS == 0 {
                0
            } else {
                // The last waiter with notifiers in flight (invariant 3): no new pins, then let
                // them have the mutex until they are gone or another waiter keeps it alive.
                if s & CLOSING == 0 {
                    if let Err(now) = self.state.compare_exchange_weak(
                        s,
                        s | CLOSING,
                        Ordering::Acquire,
                        Ordering::Acquire,
                    ) {
                        s = now;
                        continue;
                    }
                }
                let state = &self.state;
                // SAFETY: the caller's promise; the caller's level stays counted.
                unsafe {
                    m.unlocked_for(|| {
                        let mut spin = Spin::new();
                        loop {
                            let s = state.load(Ordering::Acquire);
                            if s & NOTIFIERS == 0 || waiters(s) > 1 {
                                break;
                            }
                            spin.snooze();
                        }
                    })
                };
                s = self.state.load(Ordering::Acquire);
                continue;
            };
            match self
                .state
                .compare_exchange_weak(s, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    if new == 0 {
                        stripe(m).fetch_sub(1, Ordering::Relaxed);
                    }
                    return;
                }
                Err(now) => s = now,
            }
        }
    }

    /// The wait of `wait` and `wait_until`: true if it timed out.
    ///
    /// # Safety
    /// The caller holds `m` (lock_api's `RawCondvar::wait` contract).
    unsafe fn wait_on(&self, m: &RawMonitor<P>, deadline: Option<Instant>) -> bool {
        self.register(m);
        // SAFETY: the caller holds `m` through a lock_api guard of it.
        let r = unsafe { m.wait_held(deadline) };
        // Deregister before any panic below: the lock is held again in every outcome.
        // SAFETY: as above; `wait_held` returns holding the lock.
        unsafe { self.deregister(m) };
        match r {
            Ok(WaitOutcome::TimedOut) => true,
            // An interrupt ends the wait as a wake-up and is consumed (module documentation).
            Ok(WaitOutcome::Notified) | Err(MonitorError::Interrupted) => false,
            Err(e) => wait_failed(e),
        }
    }

    /// Pins a notifier (invariant 3): the mutex to notify, alive until [`unpin`](Self::unpin);
    /// `None` if nobody waits.
    fn pin(&self) -> Option<&RawMonitor<P>> {
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            if waiters(s) == 0 || s & (CLOSING | BINDING) != 0 {
                return None;
            }
            match self
                .state
                .compare_exchange_weak(s, s + 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(now) => s = now,
            }
        }
        let m = self.mutex.load(Ordering::Relaxed);
        // SAFETY: pinned with waiters, so `mutex` is their mutex (invariant 2, its store seen
        // through the Acquire above) and alive until `unpin` (invariants 1 and 3).
        Some(unsafe { &*m })
    }

    fn notify(&self, all: bool) {
        let Some(m) = self.pin() else { return };
        // Unpinned on every way out, a panic too: the last waiter waits for it (invariant 3).
        let _pin = Pinned(&self.state);
        let _locked = (!m.held_by_current_thread()).then(|| Relock(m, lock_api::RawMutex::lock(m)));
        // Invariant 4: a count of 1 (our own condvar) means the wait set is all ours.
        let all = all || stripe(m).load(Ordering::Relaxed) != 1;
        // SAFETY: this thread holds `m`: already, or through `_locked`, dropped after this.
        unsafe { m.notify_held(all) };
    }
}

/// A notifier's pin (invariant 3), given back when dropped.
struct Pinned<'a>(&'a AtomicU64);

impl Drop for Pinned<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Release);
    }
}

/// A notifier's own lock of the mutex, unlocked when dropped (before its pin: declared after).
struct Relock<'a, P: MonitorProtocol>(&'a RawMonitor<P>, lock_api::GuardNoSend);

impl<P: MonitorProtocol> Drop for Relock<'_, P> {
    fn drop(&mut self) {
        // SAFETY: the lock taken with `lock` on this thread when this was made.
        unsafe { lock_api::RawMutex::unlock(self.0, lock_api::GuardNoSend::new()) };
    }
}

#[cold]
#[inline(never)]
fn two_mutexes() -> ! {
    panic!("objmon: attempted to use a RawCondvar with two mutexes at once")
}

#[cold]
#[inline(never)]
fn wait_failed(e: MonitorError) -> ! {
    panic!("objmon: RawCondvar wait failed: {e}")
}

// SAFETY: `wait` registers, then waits on the mutex's own wait set through `Object.wait`,
// which releases the monitor and enters the wait set atomically with respect to `notify`
// (a notify needs the monitor, `notify` below takes it), and returns holding the monitor
// again in every outcome: timeout, notify, interrupt, error. Guard state is stateless
// (`GuardNoSend`), so nothing is replaced. A panic (two mutexes; a protocol error) happens
// with the mutex held, after deregistering or before registering; failing to take the mutex
// back aborts (`RawMonitor::unlocked_for`). Spurious wake-ups are possible, so notifies
// return `false` / `0`.
unsafe impl<P: MonitorProtocol> lock_api::RawCondvar for RawCondvar<P> {
    #[allow(clippy::declare_interior_mutable_const)] // the trait's constructor, copied per use
    const INIT: Self = Self {
        mutex: AtomicPtr::new(std::ptr::null_mut()),
        state: AtomicU64::new(0),
    };

    type RawMutex = RawMonitor<P>;

    unsafe fn wait(&self, mutex: &RawMonitor<P>, _guard: &mut lock_api::GuardNoSend) {
        // SAFETY: the trait's contract: the caller holds `mutex`.
        unsafe { self.wait_on(mutex, None) };
    }

    fn notify_one(&self) -> bool {
        self.notify(false);
        false
    }

    fn notify_all(&self) -> usize {
        self.notify(true);
        0
    }
}

// SAFETY: as for `RawCondvar` above; a timed wait times out only once `Object.wait`'s
// deadline has passed.
unsafe impl<P: MonitorProtocol> lock_api::RawCondvarTimed for RawCondvar<P> {
    fn checked_duration_to_instant(timeout: &Duration) -> Option<Instant> {
        deadline_after(*timeout)
    }

    unsafe fn wait_until(
        &self,
        mutex: &RawMonitor<P>,
        _guard: &mut lock_api::GuardNoSend,
        timeout: &Instant,
    ) -> bool {
        // SAFETY: the trait's contract: the caller holds `mutex`.
        unsafe { self.wait_on(mutex, Some(*timeout)) }
    }
}

impl<P: MonitorProtocol> Default for RawCondvar<P> {
    fn default() -> Self {
        <Self as lock_api::RawCondvar>::INIT
    }
}

impl<P: MonitorProtocol> fmt::Debug for RawCondvar<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.load(Ordering::Relaxed);
        f.debug_struct("RawCondvar")
            .field("protocol", &<P as crate::Protocol>::NAME)
            .field("waiters", &waiters(s))
            .finish()
    }
}
