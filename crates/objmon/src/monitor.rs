//! The fat monitor: the heavy-weight lock of seed 000 §2.1 and seed 002 §2.1 that every
//! protocol falls back to — owner, recursion count, an entry queue (the tasuki system lock) and
//! a wait set, with the monitor semantics of JLS §17.2.
//!
//! This file holds the monitor's state and its paths; where a thread must wait (`enter` on a
//! held lock, `wait`), they call `monitor_episodes.rs`, which publishes and profiles the
//! blocking episode around the system lock's spin and suspend.
//!
//! **Space**: 64 bytes, aligned to a cache line, so that the words a
//! contended enter and exit touch (lock word, `wcount`, owner, count) share one line and no
//! two monitors of a table share a line. It was 144 bytes (owner and count on the second
//! line); HotSpot's `ObjectMonitor` is about 200. What each field costs and buys (x86-64):
//!
//! | field         | bytes | written by | buys |
//! |---------------|------:|------------|------|
//! | `lock`        | 24 | see `tasuki.rs` | the entry queue: the tasuki lock word (4), `wcount` (4), its configuration (8: hand-off bound, spin threshold, variant) and the queue of suspended threads (8: one word, intrusive, its lock in bit 0; was a 48-byte `Mutex<VecDeque>` + hand-off slot) |
//! | `owner`       | 4 | the holder of `lock` | raw [`ThreadId`] of the owner, 0 = none: reentrancy, `exit`'s check, owner queries, thread dumps |
//! | `count`       | 4 | the owner | number of locks (not locks − 1, §2.3): reentrancy |
//! | `contentions` | 4 | contenders (RMW) | deflation (HotSpot's `_contentions`): only `stack`, `lightweight` and the external protocols use it |
//! | `hash`        | 4 | first hasher (CAS 0 → hash); the table when freed | identity hash of `fat`, `thin`, `tasuki` (their headers have no room for it) |
//! | `index`       | 4 | the table, once | the monitor index a blocked thread publishes (introspection) |
//! | `profile_on`  | 1 (+3) | the table, once | whether the slow paths profile; the figures live in a side table keyed by monitor address (`profile.rs`), so that the default (profiling off) pays no pointer for them (was an 8-byte lazily filled pointer) |
//! | `waiters`     | 8 | owner (wait, notify) / waiter (leave on timeout or interrupt) | the wait set: one word, an intrusive FIFO of nodes in the waiters' frames with its lock in bit 0 (was a 40-byte `Mutex<VecDeque<Arc<ThreadCore>>>`) |
//! | `object`      | 8 | the table (`bind`) | the header address, to report a monitor as an object (thread dumps, deadlocks, profiles) |
//!
//! Smaller is possible but not free: the lock's 8 configuration bytes are the same for every
//! monitor of a table (a table pointer would cost as much), `index` could be derived from the
//! address, and fields the default protocol does not use on its paths (`contentions`;
//! `object` and `index`, for introspection) could move to side tables at the cost of an
//! extra miss on their slow paths. Below 64 bytes, nothing is gained per line.
//!
//! Wait semantics (JLS §17.2): wait releases the monitor whatever the recursion depth and
//! restores the depth before it returns; notify moves the longest waiter out of the wait set,
//! notifyAll every waiter; a timed wait returns only once its deadline has passed, unless
//! notified or interrupted; an interrupt set before the wait makes it return at once. A waiter
//! that is both notified and interrupted never swallows the notification: whichever of the two
//! takes it out of the wait set first (under the wait set's lock) decides, so either it returns
//! normally with its interrupt status still set, or it returns `Interrupted` and the
//! notification was never spent on it.

use crate::sync::{deadline_passed, fence, yield_now, Arc, AtomicU32, AtomicUsize, Ordering};
use crate::tasuki::{Contenders, NodeQueue, QNode, SystemLockConfig, TasukiLock};
use crate::thread::{ThreadCore, ThreadId};
use crate::MonitorError;
use std::time::Instant;

/// `ThreadCore::wait_state`: in a wait set.
const WAITING: u32 = 1;
/// Taken out of the wait set by notify / notifyAll.
const NOTIFIED: u32 = 2;
/// Not in any wait set.
const IDLE: u32 = 0;

/// How a [`wait`](crate::vm::ThreadHandle::wait) ended, when it did not fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WaitOutcome {
    /// Another thread's notify or notifyAll picked this waiter.
    Notified,
    /// The timeout elapsed first.
    TimedOut,
}

/// A heavy-weight monitor (see the module documentation).
///
/// Built and reached only inside this crate (the monitor table hands them to the protocols):
/// its methods trust that the `ThreadCore` they get is the calling thread's own, which the
/// protocols' `unsafe fn` contract guarantees. Safe code outside cannot construct one or reach
/// a runtime's monitors, so it cannot break that trust.
#[repr(align(64))]
pub struct FatMonitor {
    lock: TasukiLock,
    owner: AtomicU32,
    count: AtomicU32,
    /// Deflation support (HotSpot's `_contentions`): bits 30..0 count threads that found this
    /// monitor in a header and may still block on it or wait in it without owning it; bit 31
    /// ([`DEFLATING`]) is set by a deflater that has claimed the monitor. Untouched by the
    /// protocols that never deflate.
    contentions: AtomicU32,
    /// The object's identity hash, 0 = none, for the protocols that keep it in the monitor
    /// (`fat`, `thin`, `tasuki`): written once (0 → hash) while the monitor is the object's,
    /// cleared when the table takes the monitor back.
    hash: AtomicU32,
    /// This monitor's index in its table (0 outside a table), for blocking publications.
    pub(crate) index: u32,
    /// `Config::profiling` of the runtime whose table holds this monitor (the figures
    /// themselves live in a side table, `profile.rs`).
    pub(crate) profile_on: bool,
    /// `Config::events` of the runtime whose table holds this monitor: its sink's slot in
    /// the process-wide registry (`events.rs`), 0 = events off. One byte beside
    /// `profile_on`, not a pointer, so that the monitor stays one line.
    pub(crate) events: u8,
    /// The wait set, oldest first: nodes in the waiters' frames, guarded by the queue's own
    /// lock bit. Linked by the owner (wait), unlinked by the owner (notify) or by the waiter
    /// itself (timeout, interrupt).
    waiters: NodeQueue,
    /// Address of the header this monitor is bound to (0: none); see `MonitorTable::bind`.
    pub(crate) object: AtomicUsize,
}

/// `FatMonitor::contentions` bit: a deflater owns the monitor and is giving it back.
const DEFLATING: u32 = 1 << 31;

/// The raw owner of a monitor installed by a thread that does not know who holds the object's
/// lock (seed 001: "we record a special marker ANONYMOUS_OWNER"). No thread id is this large.
pub const ANONYMOUS_OWNER: u32 = u32::MAX;

impl FatMonitor {
    /// An unowned monitor whose entry queue is a tasuki lock built with `config`.
    pub(crate) fn new(config: SystemLockConfig) -> Self {
        Self {
            lock: TasukiLock::new(config),
            owner: AtomicU32::new(0),
            count: AtomicU32::new(0),
            waiters: NodeQueue::new(),
            contentions: AtomicU32::new(0),
            hash: AtomicU32::new(0),
            index: 0,
            object: AtomicUsize::new(0),
            profile_on: false,
            events: 0,
        }
    }

    /// Acquires the monitor, blocking while another thread owns it. Atomic operations when
    /// free: one compare-and-swap (the tasuki lock's); when already owned by `t`: none.
    #[inline]
    pub fn enter(&self, t: &Arc<ThreadCore>) -> Result<(), MonitorError> {
        if self.owner.load(Ordering::Relaxed) == t.raw_id() {
            return self.recurse();
        }
        if !self.lock.try_lock() {
            self.lock_contended(t, true, Contenders::Seed);
        }
        self.owner.store(t.raw_id(), Ordering::Relaxed);
        self.count.store(1, Ordering::Relaxed);
        Ok(())
    }

    /// [`enter`](Self::enter) for a caller that is not the owner and whose
    /// [`spin_enter`](Self::spin_enter) has just failed: one more try, then straight to the
    /// suspend, without the system lock's spin a second time (a thread
    /// about to sleep spun twice, 2 × 64 pauses). With profiling on `spin_enter` does not
    /// spin, so this one does (profiled).
    #[inline]
    pub(crate) fn enter_spun(&self, t: &Arc<ThreadCore>) {
        self.enter_spun_with(t, Contenders::Seed);
    }

    /// [`enter_spun`](Self::enter_spun) with the contenders' discipline `c` (`tasuki/config.rs`,
    /// [`Contenders`]) for its spin (profiled) and its suspend.
    #[inline]
    pub(crate) fn enter_spun_with(&self, t: &Arc<ThreadCore>, c: Contenders) {
        debug_assert!(!self.is_owned_by(t), "enter_spun by the owner");
        if !self.lock.try_lock() {
            self.lock_contended(t, self.profile_on, c);
        }
        self.owner.store(t.raw_id(), Ordering::Relaxed);
        self.count.store(1, Ordering::Relaxed);
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

    /// Takes the system lock if it is free right now, *without* becoming the owner: the
    /// first try of a thread that found this monitor through a header that a deflater may
    /// change ([`deflate`](crate::deflate)'s `enter_monitor`). The caller then checks that the
    /// header still names the monitor and either [`own_locked`](Self::own_locked) it or
    /// [`release_unowned`](Self::release_unowned). One compare-and-swap (Acquire).
    #[inline]
    pub(crate) fn try_lock_unowned(&self) -> bool {
        self.lock.try_lock()
    }

    /// Makes `t` the owner (one level) of the monitor whose system lock it took with
    /// [`try_lock_unowned`](Self::try_lock_unowned).
    #[inline]
    pub(crate) fn own_locked(&self, t: &ThreadCore) {
        self.owner.store(t.raw_id(), Ordering::Relaxed);
        self.count.store(1, Ordering::Relaxed);
    }

    /// Gives back the system lock taken with [`try_lock_unowned`](Self::try_lock_unowned)
    /// without owning the monitor (the header named another monitor by then).
    ///
    /// # Safety
    /// The caller's `try_lock_unowned` returned `true` and it has not released the lock since.
    #[inline]
    pub(crate) unsafe fn release_unowned(&self) {
        // SAFETY: the caller holds the system lock (this method's contract).
        unsafe { self.lock.unlock() };
    }

    /// Acquires the monitor if it is freed during the entry lock's bounded spin
    /// ([`TasukiLock::spin`], read-only on the lock word), for a caller that is not the owner
    /// and whose [`try_enter`](Self::try_enter) failed. `false`: the caller must
    /// [`enter_spun`](Self::enter_spun), which may suspend (and does not spin again). With
    /// profiling on, no spin here: `enter_spun` spins and profiles the contended acquisition.
    #[inline]
    pub(crate) fn spin_enter(&self, t: &ThreadCore) -> bool {
        self.spin_enter_with(t, Contenders::Seed)
    }

    /// [`spin_enter`](Self::spin_enter) with the contenders' discipline `c` (`tasuki/config.rs`,
    /// [`Contenders`]): with [`Contenders::QueueFirst`], no spin while threads are suspended.
    #[inline]
    pub(crate) fn spin_enter_with(&self, t: &ThreadCore, c: Contenders) -> bool {
        if self.profile_on || !self.lock.spin(c) {
            return false;
        }
        self.owner.store(t.raw_id(), Ordering::Relaxed);
        self.count.store(1, Ordering::Relaxed);
        true
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
        // SAFETY: `t` is the calling thread's core: monitor methods are reached only from the
        // protocols' paths, whose `t` is the caller's own context (`Protocol`'s contract).
        unsafe { self.lock.lock(t) };
        self.owner.store(t.raw_id(), Ordering::Relaxed);
        self.count.store(count, Ordering::Relaxed);
        Ok(())
    }

    /// Releases one level; the last one wakes the entry queue. No atomic read-modify-write,
    /// and on the default system lock no fence either (`tasuki.rs`): a caller that needs a
    /// `SeqCst` fence between the release and its next read uses
    /// [`exit_fenced`](Self::exit_fenced).
    #[inline]
    pub fn exit(&self, t: &ThreadCore) -> Result<(), MonitorError> {
        self.exit_with(t, false)
    }

    /// [`exit`](Self::exit) whose last level releases the system lock with a `SeqCst` fence
    /// between the clearing of the owner and whatever the caller reads next
    /// ([`TasukiLock::unlock_fenced`]): deflation's "last one out" Dekker (`deflate.rs`).
    #[inline]
    pub(crate) fn exit_fenced(&self, t: &ThreadCore) -> Result<(), MonitorError> {
        self.exit_with(t, true)
    }

    #[inline(always)]
    fn exit_with(&self, t: &ThreadCore, fenced: bool) -> Result<(), MonitorError> {
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
        // SAFETY: the owner holds the system lock for as long as it owns the monitor, and
        // `t` (the caller, by `Protocol`'s contract) was the owner.
        unsafe {
            if fenced {
                self.lock.unlock_fenced();
            } else {
                self.lock.unlock();
            }
        }
        Ok(())
    }

    /// The owner, if any (a racy snapshot unless the caller owns the monitor). A monitor held
    /// by [`ANONYMOUS_OWNER`] (installed by a contender of `lightweight`, before the real owner
    /// claims it) reports `None` here: the monitor does not know its owner yet, and the
    /// protocol's `owner_of` finds it on the lock stacks.
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
            && self.waiters.is_empty()
    }

    /// [`is_idle`](Self::is_idle), but for the system lock itself, which a first try may hold
    /// for a moment with no owner (`deflate.rs`, "A stale first try"): no ownership, and the
    /// next [`enter_inflated_for`](Self::enter_inflated_for) waits such a holder out. For the
    /// protocols that deflate (`stack`, `lightweight*`): their `reclaim` and the table's
    /// `free`, which would otherwise leak (or, with debug assertions, refuse) a monitor whose
    /// lock a stale first try holds (`tests/loom_deflate_review.rs`).
    pub(crate) fn is_idle_but_for_a_first_try(&self) -> bool {
        self.owner.load(Ordering::Relaxed) == 0
            && !self.lock.has_waiters()
            && self.waiters.is_empty()
    }

    /// Number of threads in the wait set.
    pub fn waiter_count(&self) -> usize {
        self.waiters.lock().len()
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
        // Events on: when it began and the timeout asked (`monitor_episodes.rs` reports it).
        // A wait inside an enter's episode is part of that enter (`tasuki`'s contender
        // behind a flat lock waits here): its enter reports it.
        let ev =
            (self.events != 0 && !t.blocking.in_episode()).then(|| Self::wait_report(deadline));
        let saved = self.count.load(Ordering::Relaxed);
        let episode = self.begin_wait(t, deadline.is_some());
        // This thread in the wait set, in this frame: linked until a notifier unlinks it
        // (and then stores NOTIFIED) or we unlink it ourselves under the queue lock (see
        // `QNode`'s lifetime rule; every way out of the loop below is one of the two).
        let node = QNode::new(t);
        {
            let mut ws = self.waiters.lock();
            t.wait_state.store(WAITING, Ordering::Relaxed);
            // SAFETY: `node` is unlinked and stays in this frame until unlinked (above).
            unsafe { ws.push_back(&node) };
        }
        self.count.store(0, Ordering::Relaxed);
        self.owner.store(0, Ordering::Relaxed);
        // SAFETY: as in `exit`: the caller owned the monitor, so it holds the system lock.
        unsafe { self.lock.unlock() };

        let outcome = loop {
            if t.wait_state.load(Ordering::Acquire) == NOTIFIED {
                break Ok(WaitOutcome::Notified);
            }
            let interrupted = t.is_interrupted();
            let expired = !interrupted && deadline_passed(deadline);
            if interrupted || expired {
                let mut ws = self.waiters.lock();
                if t.wait_state.load(Ordering::Relaxed) == NOTIFIED {
                    // The notification won the race: keep it, keep the interrupt pending.
                    break Ok(WaitOutcome::Notified);
                }
                // SAFETY: not NOTIFIED under the queue lock: nobody unlinked `node`, so it is
                // still linked in this wait set.
                unsafe { ws.remove(&node) };
                break if interrupted {
                    t.take_interrupt();
                    Err(MonitorError::Interrupted)
                } else {
                    Ok(WaitOutcome::TimedOut)
                };
            }
            if t.parker.park(deadline) && cfg!(loom) {
                // Under loom a timed park models "the timeout fired": take the timeout path.
                let mut ws = self.waiters.lock();
                if t.wait_state.load(Ordering::Relaxed) == NOTIFIED {
                    break Ok(WaitOutcome::Notified);
                }
                // SAFETY: as above: not NOTIFIED under the lock, so still linked.
                unsafe { ws.remove(&node) };
                break Ok(WaitOutcome::TimedOut);
            }
        };
        t.wait_state.store(IDLE, Ordering::Relaxed);
        self.end_wait(t, episode);
        // A notified waiter re-entering is blocked on enter (a deadlock edge) if it must wait.
        // Its wait's report covers the re-entry: no `MonitorEnter` of its own (as JFR).
        if !self.lock.try_lock() {
            self.lock_contended_unreported(t);
        }
        self.owner.store(t.raw_id(), Ordering::Relaxed);
        self.count.store(saved, Ordering::Relaxed);
        self.profile_wait(episode);
        if let Some(ev) = ev {
            self.report_wait(t, ev, &outcome);
        }
        outcome
    }

    /// Object.notify (`all == false`) or Object.notifyAll (`all == true`).
    pub fn notify(&self, t: &ThreadCore, all: bool) -> Result<(), MonitorError> {
        self.notify_with(t, all, true)
    }

    /// [`notify`](Self::notify) that a protocol makes for itself, not for its host
    /// (`tasuki` wakes the contenders it parked behind a flat lock): no `MonitorNotify`.
    pub(crate) fn notify_unreported(&self, t: &ThreadCore, all: bool) -> Result<(), MonitorError> {
        self.notify_with(t, all, false)
    }

    fn notify_with(&self, t: &ThreadCore, all: bool, report: bool) -> Result<(), MonitorError> {
        if !self.is_owned_by(t) {
            return Err(MonitorError::IllegalMonitorState);
        }
        // Events on: when it began; the notifier's id goes to each waiter it picks.
        let ev = (report && self.events != 0).then(crate::events::now_nanos);
        let mut woken = 0;
        let mut ws = self.waiters.lock();
        if !all {
            if let Some((_, w)) = ws.pop_front() {
                if ev.is_some() {
                    w.notifier.store(t.id().get(), Ordering::Relaxed);
                }
                // Under the queue lock, so that a waiter timing out sees it there; Release
                // and after our last access to its node (`QNode`'s lifetime rule).
                w.wait_state.store(NOTIFIED, Ordering::Release);
                drop(ws);
                // The woken thread will block on `lock` until we exit; waking it now lets it
                // queue.
                w.parker.unpark();
                woken = 1;
            } else {
                drop(ws);
            }
        } else {
            while let Some((_, w)) = ws.pop_front() {
                if ev.is_some() {
                    w.notifier.store(t.id().get(), Ordering::Relaxed);
                }
                w.wait_state.store(NOTIFIED, Ordering::Release);
                w.parker.unpark();
                woken += 1;
            }
            drop(ws);
        }
        // Not under the wait set's lock: the sink may lock monitors.
        if let Some(start) = ev {
            self.report_notify(t, start, all, woken);
        }
        Ok(())
    }
}

/// Inflation on behalf of another thread, the anonymous owner and deflation (seed 001, used by
/// the `stack` and `lightweight` protocols; the others never call these).
impl FatMonitor {
    /// Takes a fresh monitor for `owner_raw` (a raw thread id, or [`ANONYMOUS_OWNER`]) with
    /// `count` locks, without blocking and without being that thread: the inflation of a lock
    /// held by someone else. `MonitorTableFull`-free: fails with `IllegalMonitorState` only if
    /// the monitor is not fresh, which would be a bug in the caller.
    ///
    /// A fresh monitor's system lock may still be held for a moment, without an owner, by a
    /// thread whose first try (`deflate.rs`, `enter_monitor`) read this index from a header
    /// before the monitor was deflated and freed: it lets go once its header check fails, so
    /// this waits for it (yielding) rather than failing.
    pub fn enter_inflated_for(&self, owner_raw: u32, count: u32) -> Result<(), MonitorError> {
        while !self.lock.try_lock() {
            if self.owner.load(Ordering::Relaxed) != 0 {
                return Err(MonitorError::IllegalMonitorState);
            }
            yield_now();
        }
        self.owner.store(owner_raw, Ordering::Relaxed);
        self.count.store(count, Ordering::Relaxed);
        Ok(())
    }

    /// The raw owner field: 0 for none, a thread's raw id, or [`ANONYMOUS_OWNER`] (racy).
    #[inline]
    pub fn owner_raw(&self) -> u32 {
        self.owner.load(Ordering::Relaxed)
    }

    /// Undoes [`enter_inflated_for`](Self::enter_inflated_for) or
    /// [`enter_inflated`](Self::enter_inflated) of a monitor that was never published (its
    /// installing compare-and-swap lost), so that it can be freed.
    pub fn abandon_fresh(&self) {
        self.count.store(0, Ordering::Relaxed);
        self.owner.store(0, Ordering::Relaxed);
        // SAFETY: the caller took the system lock with `enter_inflated*` (this method's
        // contract), and nobody else can have it: the monitor was never published.
        unsafe { self.lock.unlock() };
    }

    /// Whether the monitor is held by [`ANONYMOUS_OWNER`] (racy unless the caller is the
    /// thread that really holds the lock).
    #[inline]
    pub fn is_anonymous(&self) -> bool {
        self.owner.load(Ordering::Relaxed) == ANONYMOUS_OWNER
    }

    /// The real owner fixes an anonymous monitor (seed 001: "it knows it must be itself, fixes
    /// the owner to be itself"), with the `count` locks it holds. Only the thread that holds
    /// the object's lock may call this; nobody else writes an anonymous owner field, and the
    /// system lock stays held throughout, so plain stores suffice.
    pub fn claim_anonymous(&self, t: &ThreadCore, count: u32) {
        debug_assert!(self.is_anonymous());
        self.owner.store(t.raw_id(), Ordering::Relaxed);
        self.count.store(count, Ordering::Relaxed);
    }

    /// Announces that the caller, which found this monitor in a header, is about to block on
    /// it or wait in it. `false` if a deflater has claimed the monitor: then the caller must not
    /// touch it and re-reads the header. After `true` the monitor cannot be deflated until
    /// [`remove_contention`](Self::remove_contention); the caller must still check that the
    /// header names this monitor (it may have been deflated and reused before the call).
    #[inline]
    pub fn add_contention(&self) -> bool {
        let prev = self.contentions.fetch_add(1, Ordering::SeqCst);
        if prev & DEFLATING != 0 {
            self.contentions.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// Ends an [`add_contention`](Self::add_contention) that returned `true`.
    #[inline]
    pub fn remove_contention(&self) {
        self.contentions.fetch_sub(1, Ordering::SeqCst);
    }

    /// Claims the monitor for deflation if nobody owns, enters or waits on it: takes its system
    /// lock (HotSpot sets `owner = DEFLATER_MARKER`), checks the wait set, and swings the
    /// contention count to `DEFLATING` (HotSpot: `contentions` → `-max_jint`). For a deflater
    /// that has itself announced ([`add_contention`](Self::add_contention) returned `true`) and then checked
    /// that the header names this monitor: that announcement pins the monitor to the object,
    /// so that the system lock taken here is the lock of *that object's* monitor, never of a
    /// monitor that was deflated, freed and handed to another inflation meanwhile (whose
    /// `enter_inflated_for` would then find it locked). Swings the contention count from 1 (the
    /// caller's own) to `DEFLATING`. On [`Claimed`](PinnedClaim::Claimed) the announcement has
    /// become the claim and [`finish_deflation`](Self::finish_deflation) ends both; otherwise
    /// the caller still holds its announcement.
    pub(crate) fn try_begin_deflation_pinned(&self) -> PinnedClaim {
        if self.contentions.load(Ordering::SeqCst) != 1 {
            return PinnedClaim::Contended;
        }
        if self.lock.has_waiters() {
            return PinnedClaim::Busy;
        }
        while !self.lock.try_lock() {
            // Held without an owner: a first try (`deflate.rs`, `enter_monitor`) between its
            // `try_lock` and its header check, or an exit between clearing the owner and
            // unlocking. Both let go (or take the owner field) within a few steps; a deflater
            // that gave up here would leave an idle monitor behind when the holder was a
            // stale first try, which never exits.
            if self.owner.load(Ordering::Relaxed) != 0 || self.lock.has_waiters() {
                return PinnedClaim::Busy;
            }
            yield_now();
        }
        let claim =
            if self.owner.load(Ordering::Relaxed) != 0 || self.waiters.lock().front().is_some() {
                PinnedClaim::Busy
            } else if self
                .contentions
                .compare_exchange(1, DEFLATING, Ordering::SeqCst, Ordering::Relaxed)
                .is_err()
            {
                PinnedClaim::Contended
            } else {
                return PinnedClaim::Claimed;
            };
        // SAFETY: our `try_lock` above succeeded (this path is reached only after it).
        unsafe { self.lock.unlock() };
        claim
    }

    /// Sets the owner of a monitor taken with
    /// [`enter_inflated_for`](Self::enter_inflated_for) that no header names yet (so nobody
    /// else can read the field): `stack` locks its monitor before the INFLATING marker and
    /// learns the owner from the lock record only after.
    pub(crate) fn set_unpublished_owner(&self, owner_raw: u32) {
        self.owner.store(owner_raw, Ordering::Relaxed);
    }

    /// Whether nobody is announced. Relaxed: the owner's exit asks after the SeqCst fence of
    /// its release ([`exit_fenced`](Self::exit_fenced)), which orders it against
    /// a deflater's decrement
    /// ([`remove_contention_leaves_it_unowned`](Self::remove_contention_leaves_it_unowned)),
    /// and a deflation attempt checks again, exactly, in
    /// [`try_begin_deflation_pinned`](Self::try_begin_deflation_pinned).
    #[inline]
    pub(crate) fn no_contention(&self) -> bool {
        self.contentions.load(Ordering::Relaxed) == 0
    }

    /// Ends an [`add_contention`](Self::add_contention) of a thread that does not own the
    /// monitor, and tells whether it was the last announcement *and* the owner field is empty
    /// after it: then an owner's last exit may have read this announcement as company and
    /// left the deflation attempt to the caller ([`deflate`](crate::deflate), "The last one
    /// out"). Dekker with the exit: there the owner's clearing store and its read of the count
    /// are separated by the SeqCst fence of its release (`exit_fenced`); here our decrement and our read of the
    /// owner by a SeqCst fence (fence against fence, which loom models; SeqCst accesses it
    /// treats as AcqRel), so either the exit sees our decrement and tries itself, or we see
    /// the owner gone.
    #[inline]
    pub(crate) fn remove_contention_leaves_it_unowned(&self) -> bool {
        if !self.remove_contention_was_last() {
            return false;
        }
        fence(Ordering::SeqCst);
        self.owner.load(Ordering::Relaxed) == 0
    }

    /// [`remove_contention`](Self::remove_contention) that tells whether it was the last
    /// announcement (the count is now 0).
    #[inline]
    pub(crate) fn remove_contention_was_last(&self) -> bool {
        self.contentions.fetch_sub(1, Ordering::SeqCst) == 1
    }

    /// Ends a deflation begun by `try_begin_deflation_pinned`, after
    /// the header no longer names this monitor: the monitor is fresh again (free to be freed
    /// or reused). Threads that announced themselves meanwhile back off by themselves.
    pub fn finish_deflation(&self) {
        // SAFETY: the deflater holds the system lock from `try_begin_deflation_pinned`'s
        // `Claimed` until here (this method's contract).
        unsafe { self.lock.unlock() };
        self.contentions.fetch_and(!DEFLATING, Ordering::SeqCst);
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

/// What [`FatMonitor::try_begin_deflation_pinned`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PinnedClaim {
    /// The caller deflates the monitor.
    Claimed,
    /// Owned, entered or waited on: not idle.
    Busy,
    /// Idle as far as the caller could see, but another thread was announced too (maybe
    /// another deflater, refused because of the caller).
    Contended,
}

/// The identity hash kept in the monitor (`fat`, `thin`, `tasuki`; see `hash.rs`).
impl FatMonitor {
    /// The identity hash stored here, if any.
    #[inline]
    pub fn identity_hash(&self) -> Option<u32> {
        match self.hash.load(Ordering::Acquire) {
            0 => None,
            v => Some(v),
        }
    }

    /// Stores `v` (non-zero) unless a hash is already stored; returns the one that stays.
    pub(crate) fn install_hash(&self, v: u32) -> u32 {
        debug_assert_ne!(v, 0);
        match self
            .hash
            .compare_exchange(0, v, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => v,
            Err(theirs) => theirs,
        }
    }

    /// Forgets the hash: the monitor no longer belongs to its object (freed, or a fresh one
    /// whose publication failed).
    pub(crate) fn clear_hash(&self) {
        self.hash.store(0, Ordering::Relaxed);
    }
}

/// Table membership, and what blocking episodes and introspection read (`monitor_episodes.rs`,
/// `introspect.rs`).
impl FatMonitor {
    /// A monitor for slot `index` of a table; `profiling` as the runtime's configuration.
    pub(crate) fn in_table(mut self, index: u32, profiling: bool, events: u8) -> Self {
        self.index = index;
        self.profile_on = profiling;
        self.events = events;
        self
    }

    /// The recursion count field, whoever owns the monitor (a racy snapshot).
    pub fn count_raw(&self) -> u32 {
        self.count.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A fat monitor fits one cache line (and is aligned to one).
    #[test]
    fn fat_monitor_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<TasukiLock>(), 24);
        assert_eq!(std::mem::size_of::<FatMonitor>(), 64);
        assert_eq!(std::mem::align_of::<FatMonitor>(), 64);
    }
}
