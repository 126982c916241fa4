//! [`RawMonitor`]: a header as a [`lock_api::RawMutex`], so that
//! `lock_api::Mutex<RawMonitor, T>` gives `&mut T` under an objmon lock.
//!
//! Owns the non-reentrant face of a monitor: `lock_api::RawMutex` promises one holder at a time
//! with exclusive access, so a thread that locks a `RawMonitor` it already holds panics
//! instead of getting a second `&mut T` (the trait allows a panic or a deadlock; a panic says
//! what went wrong).

use super::attach::Auto;
use super::global::{sealed, MonitorProtocol};
use super::monitor::DefaultProtocol;
use crate::park::deadline_after;
use crate::MonitorError;
use std::fmt;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

/// A monitor's header on its protocol's process-wide runtime, as a raw mutex for
/// [`lock_api`]: `lock_api::Mutex<objmon::RawMonitor, T>` is a mutex giving `&mut T`, in the
/// header's 4 or 8 bytes. Not reentrant (locking it again from the holding thread panics);
/// for reentrancy and wait / notify use [`Monitor`](crate::Monitor).
///
/// ```
/// use lock_api::Mutex;
/// use objmon::RawMonitor;
/// use std::time::Duration;
///
/// let m: Mutex<RawMonitor, Vec<u32>> = Mutex::new(Vec::new());
/// m.lock().push(1); // `&mut Vec`
/// assert_eq!(m.try_lock_for(Duration::from_millis(1)).unwrap().len(), 1);
/// ```
///
/// ```should_panic
/// use lock_api::Mutex;
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
// (`holds_lock` is checked first); `GuardNoSend`: the lock is its thread's, so `unlock` runs on
// the locking thread, which is what `P::exit` needs.
unsafe impl<P: MonitorProtocol> lock_api::RawMutex for RawMonitor<P> {
    #[allow(clippy::declare_interior_mutable_const)] // the trait's constructor, copied per use
    const INIT: Self = Self {
        header: <P as sealed::MonitorProtocol>::UNLOCKED,
    };

    type GuardMarker = lock_api::GuardNoSend;

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
        let auto = Self::current();
        // SAFETY: as in `lock_checked`; the level taken in `lock` keeps it alive until the
        // `gave_back` below, after which it is not used.
        let r = unsafe { auto.as_ref() }.core.exit(&self.header);
        debug_assert!(r.is_ok(), "RawMonitor::unlock without the lock: {r:?}");
        // SAFETY: the trait's contract: this thread holds the lock, taken with `took`.
        unsafe { Auto::gave_back(auto) };
    }

    fn is_locked(&self) -> bool {
        match <P as sealed::MonitorProtocol>::runtime_if_made() {
            Some(rt) => P::owner_of(rt, &self.header).is_some(),
            None => false,
        }
    }
}

// SAFETY: `try_lock_for` / `try_lock_until` lock only through `try_lock_checked`.
unsafe impl<P: MonitorProtocol> lock_api::RawMutexTimed for RawMonitor<P> {
    type Duration = Duration;
    type Instant = Instant;

    fn try_lock_for(&self, timeout: Duration) -> bool {
        match deadline_after(timeout) {
            Some(d) => self.try_lock_until_checked(d),
            None => {
                self.lock_checked();
                true
            }
        }
    }

    fn try_lock_until(&self, deadline: Instant) -> bool {
        self.try_lock_until_checked(deadline)
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
            .field("locked", &lock_api::RawMutex::is_locked(self))
            .finish()
    }
}
