//! [`RawMonitor`]: a header as a [`lock_api::RawMutex`] (lock_api 0.5), so that
//! `lock_api::Mutex<RawMonitor, T>` gives `&mut T` under an objmon lock; with the feature
//! `lock_api_04`, lock_api 0.4's `RawMutex` too.
//!
//! Owns the non-reentrant face of a monitor: `lock_api::RawMutex` promises one holder at a time
//! with exclusive access, so a thread that locks a `RawMonitor` it already holds panics
//! instead of getting a second `&mut T` (the trait allows a panic or a deadlock; a panic says
//! what went wrong). Also the header's wait / notify for [`RawCondvar`](crate::RawCondvar)
//! (`condvar.rs`), which waits on this header's own wait set.
//!
//! The guard state (`lock_api` 0.5's `RawMutex::Guard`) is [`lock_api::GuardNoSend`]: the
//! unlock finds the thread's attachment again, as before 0.5 (carrying it in the guard would
//! make `MutexGuard` a word larger for a thread-local load saved).

use super::attach::Auto;
use super::global::{sealed, MonitorProtocol};
use super::monitor::DefaultProtocol;
use crate::monitor::WaitOutcome;
use crate::park::deadline_after;
use crate::MonitorError;
use std::fmt;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

/// A monitor's header on its protocol's process-wide runtime, as a raw mutex for
/// [`lock_api`] 0.5 (re-exported as [`objmon::lock_api`](crate::lock_api)):
/// `lock_api::Mutex<objmon::RawMonitor, T>` is a mutex giving `&mut T`, in the header's 4 or
/// 8 bytes. Not reentrant (locking it again from the holding thread panics); for reentrancy
/// use [`Monitor`](crate::Monitor). Wait / notify on the same header:
/// `lock_api::Condvar<`[`RawCondvar`](crate::RawCondvar)`>`.
///
/// ```
/// use objmon::lock_api::Mutex;
/// use objmon::RawMonitor;
/// use std::time::Duration;
///
/// let m: Mutex<RawMonitor, Vec<u32>> = Mutex::new(Vec::new());
/// m.lock().push(1); // `&mut Vec`
/// assert_eq!(m.try_lock_for(Duration::from_millis(1)).unwrap().len(), 1);
/// ```
///
/// ```should_panic
/// use objmon::lock_api::Mutex;
/// let m: Mutex<objmon::RawMonitor, u32> = Mutex::new(0);
/// let a = m.lock();
/// let b = m.lock(); // panics: a second `&mut u32` on one thread
/// ```
pub struct RawMonitor<P: MonitorProtocol = DefaultProtocol> {
    header: P::Header,
}

impl<P: MonitorProtocol> RawMonitor<P> {
    /// The calling thread's attachment to `P`'s process-wide runtime.
    #[inline(always)]
    fn current() -> NonNull<Auto<P>> {
        sealed::RuntimeRef::<P>::current(&super::global::Global)
    }

    // `always`: only `#[inline]`, LLVM left it out of line in a user's loop of
    // `lock_api::Mutex<RawMonitor, T>` (a call per lock: 64 → 54 instructions per
    // lock+unlock, 7.0 → 6.25 ns, `examples/user_loop raw-monitor`), as `Monitor::lock`.
    #[inline(always)]
    fn lock_checked(&self) {
        let auto = Self::current();
        // SAFETY: this thread's live attachment (`attach.rs`), used within this call.
        let a = unsafe { auto.as_ref() };
        if P::holds_lock(&a.core.rt, &a.core.cx, &self.header) {
            relocked()
        }
        // SAFETY: the calling thread's own context (an `Auto` never leaves its thread); the
        // header lives as long as `self`, which `lock_api` keeps borrowed while locked.
        if let Err(e) = unsafe { a.core.enter(&self.header) } {
            // SAFETY: this thread's attachment, not used again here.
            unsafe { Auto::settle(auto) };
            panic!("objmon: RawMonitor::lock failed: {e}")
        }
        a.took();
    }

    #[inline]
    fn try_lock_checked(&self) -> bool {
        let auto = Self::current();
        // SAFETY: as in `lock_checked`.
        let a = unsafe { auto.as_ref() };
        if P::holds_lock(&a.core.rt, &a.core.cx, &self.header) {
            return false; // held (by us): a second `&mut T` must not exist
        }
        // SAFETY: as in `lock_checked`.
        let r = unsafe { P::try_enter(&a.core.rt, &a.core.cx, &self.header) };
        if let Ok(true) = r {
            a.took();
            return true;
        }
        // SAFETY: this thread's attachment, not used again here.
        unsafe { Auto::settle(auto) };
        match r {
            Err(MonitorError::InNative) => panic!("objmon: RawMonitor::try_lock in native"),
            Err(e) => panic!("objmon: RawMonitor::try_lock failed: {e}"),
            Ok(_) => false,
        }
    }

    fn try_lock_until_checked(&self, deadline: Instant) -> bool {
        super::poll_until(deadline, || self.try_lock_checked())
    }

    fn try_lock_for_checked(&self, timeout: Duration) -> bool {
        match deadline_after(timeout) {
            Some(d) => self.try_lock_until_checked(d),
            None => {
                self.lock_checked();
                true
            }
        }
    }

    /// The unlock of a level taken by `lock_checked` / `try_lock_checked`.
    ///
    /// # Safety
    /// The calling thread holds the lock, taken through one of those (its level counted with
    /// `took`), and gives that level back here.
    #[inline]
    unsafe fn unlock_checked(&self) {
        let auto = Self::current();
        // SAFETY: as in `lock_checked`; the level taken in `lock` keeps it alive until the
        // `gave_back` below, after which it is not used.
        let r = unsafe { auto.as_ref() }.core.exit(&self.header);
        debug_assert!(r.is_ok(), "RawMonitor::unlock without the lock: {r:?}");
        // SAFETY: the caller's promise: this thread holds the lock, taken with `took`.
        unsafe { Auto::gave_back(auto) };
    }

    fn is_locked_now(&self) -> bool {
        match <P as sealed::MonitorProtocol>::runtime_if_made() {
            Some(rt) => P::owner_of(rt, &self.header).is_some(),
            None => false,
        }
    }

    /// Whether the calling thread holds this lock.
    pub(crate) fn held_by_current_thread(&self) -> bool {
        match sealed::RuntimeRef::<P>::current_if_attached(&super::global::Global) {
            // SAFETY: this thread's live attachment (`attach.rs`), used within this call.
            Some(auto) => unsafe {
                let a = auto.as_ref();
                P::holds_lock(&a.core.rt, &a.core.cx, &self.header)
            },
            None => false,
        }
    }

    /// Java's `Object.wait` on this header until `deadline` (`None`: none): returns holding
    /// the lock again, in every outcome.
    ///
    /// # Safety
    /// The calling thread holds the lock (a level taken by `lock_checked` /
    /// `try_lock_checked`, which keeps its attachment alive across the wait).
    pub(crate) unsafe fn wait_held(
        &self,
        deadline: Option<Instant>,
    ) -> Result<WaitOutcome, MonitorError> {
        let auto = Self::current();
        // SAFETY: this thread's live attachment, kept alive by the caller's level; the
        // header is borrowed by the caller's guard for the call; a `RawMonitor` operation is
        // not inside `in_native`.
        unsafe {
            let a = auto.as_ref();
            P::wait(&a.core.rt, &a.core.cx, &self.header, deadline)
        }
    }

    /// Java's `Object.notify` (`all == false`) or `notifyAll` on this header. Panics if the
    /// protocol fails (it cannot while the lock is held: see the safety section).
    ///
    /// # Safety
    /// The calling thread holds the lock (as for [`wait_held`](Self::wait_held)).
    pub(crate) unsafe fn notify_held(&self, all: bool) {
        let auto = Self::current();
        // SAFETY: as in `wait_held`.
        let r = unsafe {
            let a = auto.as_ref();
            P::notify(&a.core.rt, &a.core.cx, &self.header, all)
        };
        if let Err(e) = r {
            panic!("objmon: RawCondvar notify failed: {e}")
        }
    }

    /// Unlocks, runs `between` without the lock, and locks again, keeping the caller's
    /// level counted throughout (so the attachment stays, and so does the thread's identity).
    /// Aborts the process if the lock cannot be taken back: the caller's guard must hold it
    /// on return (lock_api's `RawCondvar` contract).
    ///
    /// # Safety
    /// As [`wait_held`](Self::wait_held).
    pub(crate) unsafe fn unlocked_for(&self, between: impl FnOnce()) {
        let auto = Self::current();
        // SAFETY: the caller's level keeps the attachment alive for the whole call.
        let a = unsafe { auto.as_ref() };
        let r = a.core.exit(&self.header);
        debug_assert!(r.is_ok(), "RawCondvar: unlock without the lock: {r:?}");
        between();
        // SAFETY: as in `lock_checked`; the header is borrowed by the caller for the call.
        if let Err(e) = unsafe { a.core.enter(&self.header) } {
            eprintln!("objmon: RawCondvar could not take its mutex back: {e}");
            std::process::abort();
        }
    }
}

#[cold]
#[inline(never)]
fn relocked() -> ! {
    panic!(
        "objmon: RawMonitor locked again by the thread that holds it (it is not reentrant: \
         that would be a second `&mut`); use objmon::Monitor for a reentrant monitor"
    )
}

// SAFETY: `lock`/`try_lock` give the lock to one thread at a time (the protocols' mutual
// exclusion, with acquire on lock and release on unlock), never twice to the same thread
// (`holds_lock` is checked first); a failed lock panics before taking anything. `GuardNoSend`:
// the lock is its thread's, so `unlock` runs on the locking thread, which is what `P::exit`
// needs; a forgotten guard leaves the lock held and its attachment alive (`attach.rs`), and
// dropping or moving a held `RawMonitor` leaks its fat monitor (`Protocol::reclaim`).
unsafe impl<P: MonitorProtocol> lock_api::RawMutex for RawMonitor<P> {
    #[allow(clippy::declare_interior_mutable_const)] // the trait's constructor, copied per use
    const INIT: Self = Self {
        header: <P as sealed::MonitorProtocol>::UNLOCKED,
    };

    type Guard = lock_api::GuardNoSend;

    #[inline(always)]
    fn lock(&self) -> lock_api::GuardNoSend {
        self.lock_checked();
        lock_api::GuardNoSend::new()
    }

    #[inline]
    fn try_lock(&self) -> Option<lock_api::GuardNoSend> {
        self.try_lock_checked().then(lock_api::GuardNoSend::new)
    }

    #[inline]
    unsafe fn unlock(&self, _guard: lock_api::GuardNoSend) {
        // SAFETY: the trait's contract: the guard is this thread's acquisition.
        unsafe { self.unlock_checked() }
    }

    fn is_locked(&self) -> bool {
        self.is_locked_now()
    }
}

// SAFETY: `try_lock_for` / `try_lock_until` lock only through `try_lock_checked` (or
// `lock_checked` for a timeout beyond any deadline), and fail only after the deadline.
unsafe impl<P: MonitorProtocol> lock_api::RawMutexTimed for RawMonitor<P> {
    type Duration = Duration;
    type Instant = Instant;

    fn try_lock_for(&self, timeout: Duration) -> Option<lock_api::GuardNoSend> {
        self.try_lock_for_checked(timeout)
            .then(lock_api::GuardNoSend::new)
    }

    fn try_lock_until(&self, deadline: Instant) -> Option<lock_api::GuardNoSend> {
        self.try_lock_until_checked(deadline)
            .then(lock_api::GuardNoSend::new)
    }
}

/// lock_api 0.4's traits, the same operations as 0.5's above (0.4 has no guard state).
#[cfg(feature = "lock_api_04")]
mod v04 {
    use super::*;

    // SAFETY: as for lock_api 0.5's `RawMutex` above: the same lock, unlock and check.
    unsafe impl<P: MonitorProtocol> lock_api_04::RawMutex for RawMonitor<P> {
        #[allow(clippy::declare_interior_mutable_const)] // as above
        const INIT: Self = Self {
            header: <P as sealed::MonitorProtocol>::UNLOCKED,
        };

        type GuardMarker = lock_api_04::GuardNoSend;

        #[inline(always)]
        fn lock(&self) {
            self.lock_checked();
        }

        #[inline]
        fn try_lock(&self) -> bool {
            self.try_lock_checked()
        }

        #[inline]
        unsafe fn unlock(&self) {
            // SAFETY: the trait's contract: this thread holds the lock.
            unsafe { self.unlock_checked() }
        }

        fn is_locked(&self) -> bool {
            self.is_locked_now()
        }
    }

    // SAFETY: as for lock_api 0.5's `RawMutexTimed` above.
    unsafe impl<P: MonitorProtocol> lock_api_04::RawMutexTimed for RawMonitor<P> {
        type Duration = Duration;
        type Instant = Instant;

        fn try_lock_for(&self, timeout: Duration) -> bool {
            self.try_lock_for_checked(timeout)
        }

        fn try_lock_until(&self, deadline: Instant) -> bool {
            self.try_lock_until_checked(deadline)
        }
    }
}

impl<P: MonitorProtocol> Drop for RawMonitor<P> {
    fn drop(&mut self) {
        if let Some(rt) = <P as sealed::MonitorProtocol>::runtime_if_made() {
            P::reclaim(rt, &mut self.header);
        }
    }
}

impl<P: MonitorProtocol> fmt::Debug for RawMonitor<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawMonitor")
            .field("protocol", &P::NAME)
            .field("locked", &self.is_locked_now())
            .finish()
    }
}
