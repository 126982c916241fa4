//! The fat monitor: the heavy-weight lock of seed 000 §2.1 and seed 002 §2.1 that every
//! protocol falls back to — owner, recursion count, an entry queue (the tasuki system lock) and
//! a wait set, with the monitor semantics of JLS §17.2.
//!
//! | field     | written by                      | meaning                                   |
//! |-----------|---------------------------------|-------------------------------------------|
//! | `lock`    | —                               | entry queue: the [`TasukiLock`]           |
//! | `owner`   | the holder of `lock`            | raw [`ThreadId`] of the owner, 0 = none   |
//! | `count`   | the owner                       | number of locks (not locks − 1, §2.3)     |
//! | `waiters` | owner (enqueue, notify) / waiter (leave on timeout or interrupt) | wait set |
//!
//! Wait semantics (JLS §17.2): wait releases the monitor whatever the recursion depth and
//! restores the depth before it returns; notify moves the longest waiter out of the wait set,
//! notifyAll every waiter; a timed wait returns only once its deadline has passed, unless
//! notified or interrupted; an interrupt set before the wait makes it return at once. A waiter
//! that is both notified and interrupted never swallows the notification: whichever of the two
//! takes it out of the wait set first (under the wait-set mutex) decides, so either it returns
//! normally with its interrupt status still set, or it returns `Interrupted` and the
//! notification was never spent on it.

use crate::sync::{deadline_passed, lock, Arc, AtomicU32, Mutex, Ordering};
use crate::tasuki::{SystemLockConfig, TasukiLock};
use crate::thread::{ThreadCore, ThreadId};
use crate::MonitorError;
use std::collections::VecDeque;
use std::time::Instant;

/// `ThreadCore::wait_state`: in a wait set.
const WAITING: u32 = 1;
/// Taken out of the wait set by notify / notifyAll.
const NOTIFIED: u32 = 2;
/// Not in any wait set.
const IDLE: u32 = 0;

/// How a [`wait`](crate::ThreadHandle::wait) ended, when it did not fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WaitOutcome {
    /// Another thread's notify or notifyAll picked this waiter.
    Notified,
    /// The timeout elapsed first.
    TimedOut,
}

/// A heavy-weight monitor (see the module documentation).
pub struct FatMonitor {
    lock: TasukiLock,
    owner: AtomicU32,
    count: AtomicU32,
    waiters: Mutex<VecDeque<Arc<ThreadCore>>>,
}

impl FatMonitor {
    /// An unowned monitor whose entry queue is a tasuki lock built with `config`.
    pub fn new(config: SystemLockConfig) -> Self {
        Self {
            lock: TasukiLock::new(config),
            owner: AtomicU32::new(0),
            count: AtomicU32::new(0),
            waiters: Mutex::new(VecDeque::new()),
        }
    }

    /// Acquires the monitor, blocking while another thread owns it. Atomic operations when
    /// free: one compare-and-swap (the tasuki lock's); when already owned by `t`: none.
    #[inline]
    pub fn enter(&self, t: &Arc<ThreadCore>) -> Result<(), MonitorError> {
        if self.owner.load(Ordering::Relaxed) == t.raw_id() {
            return self.recurse();
        }
        self.lock.lock(t);
        self.owner.store(t.raw_id(), Ordering::Relaxed);
        self.count.store(1, Ordering::Relaxed);
        Ok(())
    }

    /// Acquires the monitor if that needs no waiting.
    #[inline]
    pub fn try_enter(&self, t: &ThreadCore) -> Result<bool, MonitorError> {
        if self.owner.load(Ordering::Relaxed) == t.raw_id() {
            return self.recurse().map(|()| true);
        }
        if !self.lock.try_lock() {
            return Ok(false);
        }
        self.owner.store(t.raw_id(), Ordering::Relaxed);
        self.count.store(1, Ordering::Relaxed);
        Ok(true)
    }

    fn recurse(&self) -> Result<(), MonitorError> {
        let c = self.count.load(Ordering::Relaxed);
        let c = c.checked_add(1).ok_or(MonitorError::RecursionOverflow)?;
        self.count.store(c, Ordering::Relaxed);
        Ok(())
    }

    /// Acquires a fresh monitor for a thread that already holds the object's lock in a lighter
    /// form (inflation by the owner), taking over its recursion count. Never blocks when the
    /// monitor is fresh; fails with `RecursionOverflow` for a zero count.
    pub fn enter_inflated(&self, t: &Arc<ThreadCore>, count: u32) -> Result<(), MonitorError> {
        if count == 0 {
            return Err(MonitorError::RecursionOverflow);
        }
        self.lock.lock(t);
        self.owner.store(t.raw_id(), Ordering::Relaxed);
        self.count.store(count, Ordering::Relaxed);
        Ok(())
    }

    /// Releases one level; the last one wakes the entry queue. No atomic read-modify-write.
    #[inline]
    pub fn exit(&self, t: &ThreadCore) -> Result<(), MonitorError> {
        if self.owner.load(Ordering::Relaxed) != t.raw_id() {
            return Err(MonitorError::IllegalMonitorState);
        }
        let c = self.count.load(Ordering::Relaxed) - 1;
        if c > 0 {
            self.count.store(c, Ordering::Relaxed);
            return Ok(());
        }
        self.count.store(0, Ordering::Relaxed);
        self.owner.store(0, Ordering::Relaxed);
        self.lock.unlock();
        Ok(())
    }

    /// The owner, if any (a racy snapshot unless the caller owns the monitor).
    #[inline]
    pub fn owner(&self) -> Option<ThreadId> {
        ThreadId::from_raw(self.owner.load(Ordering::Relaxed))
    }

    /// Whether `t` owns the monitor. Exact for `t` itself: only `t` writes its own id here.
    #[inline]
    pub fn is_owned_by(&self, t: &ThreadCore) -> bool {
        self.owner.load(Ordering::Relaxed) == t.raw_id()
    }

    /// The recursion count held by `t`, 0 if `t` is not the owner.
    pub fn count_for(&self, t: &ThreadCore) -> u32 {
        if self.is_owned_by(t) {
            self.count.load(Ordering::Relaxed)
        } else {
            0
        }
    }

    /// Whether nobody owns, enters or waits on this monitor (racy unless the caller excludes
    /// all of those; used by deflation and table bookkeeping).
    pub fn is_idle(&self) -> bool {
        self.owner.load(Ordering::Relaxed) == 0
            && !self.lock.is_locked()
            && !self.lock.has_waiters()
            && lock(&self.waiters).is_empty()
    }

    /// Number of threads in the wait set.
    pub fn waiter_count(&self) -> usize {
        lock(&self.waiters).len()
    }

    /// The system lock underneath (for introspection and the system-monitor benchmark).
    pub fn system_lock(&self) -> &TasukiLock {
        &self.lock
    }

    /// Object.wait: release completely, wait for notify / deadline / interrupt, re-acquire
    /// with the same recursion count. See the module documentation for the semantics.
    pub fn wait(
        &self,
        t: &Arc<ThreadCore>,
        deadline: Option<Instant>,
    ) -> Result<WaitOutcome, MonitorError> {
        if !self.is_owned_by(t) {
            return Err(MonitorError::IllegalMonitorState);
        }
        if t.take_interrupt() {
            return Err(MonitorError::Interrupted);
        }
        let saved = self.count.load(Ordering::Relaxed);
        {
            let mut ws = lock(&self.waiters);
            t.wait_state.store(WAITING, Ordering::Relaxed);
            ws.push_back(t.clone());
        }
        self.count.store(0, Ordering::Relaxed);
        self.owner.store(0, Ordering::Relaxed);
        self.lock.unlock();

        let outcome = loop {
            if t.wait_state.load(Ordering::Acquire) == NOTIFIED {
                break Ok(WaitOutcome::Notified);
            }
            let interrupted = t.is_interrupted();
            let expired = !interrupted && deadline_passed(deadline);
            if interrupted || expired {
                let mut ws = lock(&self.waiters);
                if t.wait_state.load(Ordering::Relaxed) == NOTIFIED {
                    // The notification won the race: keep it, keep the interrupt pending.
                    break Ok(WaitOutcome::Notified);
                }
                let me = ws.iter().position(|w| Arc::ptr_eq(w, t));
                ws.remove(me.expect("a WAITING thread is in the wait set"));
                break if interrupted {
                    t.take_interrupt();
                    Err(MonitorError::Interrupted)
                } else {
                    Ok(WaitOutcome::TimedOut)
                };
            }
            if t.parker.park(deadline) && cfg!(loom) {
                // Under loom a timed park models "the timeout fired": take the timeout path.
                let mut ws = lock(&self.waiters);
                if t.wait_state.load(Ordering::Relaxed) == NOTIFIED {
                    break Ok(WaitOutcome::Notified);
                }
                let me = ws.iter().position(|w| Arc::ptr_eq(w, t));
                ws.remove(me.expect("a WAITING thread is in the wait set"));
                break Ok(WaitOutcome::TimedOut);
            }
        };
        t.wait_state.store(IDLE, Ordering::Relaxed);
        self.lock.lock(t);
        self.owner.store(t.raw_id(), Ordering::Relaxed);
        self.count.store(saved, Ordering::Relaxed);
        outcome
    }

    /// Object.notify (`all == false`) or Object.notifyAll (`all == true`).
    pub fn notify(&self, t: &ThreadCore, all: bool) -> Result<(), MonitorError> {
        if !self.is_owned_by(t) {
            return Err(MonitorError::IllegalMonitorState);
        }
        let mut ws = lock(&self.waiters);
        while let Some(w) = ws.pop_front() {
            w.wait_state.store(NOTIFIED, Ordering::Release);
            // The woken thread will block on `lock` until we exit; waking it now lets it queue.
            w.parker.unpark();
            if !all {
                break;
            }
        }
        Ok(())
    }
}

impl std::fmt::Debug for FatMonitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FatMonitor")
            .field("owner", &self.owner())
            .field("count", &self.count.load(Ordering::Relaxed))
            .field("lock", &self.lock)
            .finish()
    }
}
