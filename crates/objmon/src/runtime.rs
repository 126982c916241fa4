//! The runtime: configuration, the thread registry, the monitor table and statistics of one
//! protocol; and the per-thread handle through which a thread locks objects.

use crate::deflate::DeflationPolicy;
use crate::monitor::WaitOutcome;
use crate::park::deadline_after;
use crate::protocol::Protocol;
use crate::sync::{Arc, AtomicU64, Ordering};
use crate::table::{MonitorTable, MAX_MONITOR_INDEX};
use crate::tasuki::SystemLockConfig;
use crate::thread::{Registry, ThreadContext, ThreadId, MAX_THREAD_ID};
use crate::MonitorError;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

/// Settings of a runtime, fixed at creation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Most threads attached at once (ids `1..=max_threads`); at most 32767.
    pub max_threads: u16,
    /// Most fat monitors alive at once; at most 2^23 − 1 (the 23-bit index of seed 000 §2.3).
    pub monitor_capacity: u32,
    /// The system lock under every fat monitor.
    pub system_lock: SystemLockConfig,
    /// When protocols that can deflate (`stack`, `lightweight`) give an idle fat monitor back
    /// to its object. Protocols that never deflate (`fat`, `thin`) ignore it.
    pub deflation: DeflationPolicy,
    /// Contention profiling ([`Runtime::contention_profile`]): off by default, and then free
    /// (fast paths never look at it; slow paths test it once).
    pub profiling: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            max_threads: MAX_THREAD_ID,
            monitor_capacity: MAX_MONITOR_INDEX,
            system_lock: SystemLockConfig::default(),
            deflation: DeflationPolicy::default(),
            profiling: false,
        }
    }
}

/// Why a lock was inflated to a fat monitor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InflationCause {
    /// First use, for protocols that always use a fat monitor (`fat`).
    FirstUse,
    /// Another thread wanted the lock.
    Contention,
    /// wait, notify or notifyAll needs a wait set.
    WaitNotify,
    /// The header's recursion count would overflow.
    RecursionOverflow,
    /// The identity hash needed a monitor to live in (`thin`), or the lock had to be inflated
    /// before the hash could be stored (`stack`).
    IdentityHash,
}

/// Counters of one runtime (relaxed; bumped only on slow paths).
#[derive(Debug, Default)]
pub struct Stats {
    inflations: [AtomicU64; 5],
    deflations: AtomicU64,
}

impl Stats {
    /// Counts one inflation.
    pub fn inflated(&self, cause: InflationCause) {
        self.inflations[cause as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one deflation.
    pub fn deflated(&self) {
        self.deflations.fetch_add(1, Ordering::Relaxed);
    }
}

/// A copy of a runtime's counters at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Inflations on first use (`fat` protocol).
    pub inflations_first_use: u64,
    /// Inflations because of contention.
    pub inflations_contention: u64,
    /// Inflations for wait / notify.
    pub inflations_wait_notify: u64,
    /// Inflations on recursion-count overflow.
    pub inflations_recursion: u64,
    /// Deflations (fat monitor given back to the object).
    pub deflations: u64,
    /// Fat monitors alive now.
    pub live_monitors: usize,
    /// Threads attached now.
    pub attached_threads: usize,
    /// Inflations to store an identity hash.
    pub inflations_identity_hash: u64,
}

impl StatsSnapshot {
    /// All inflations, whatever the cause.
    pub fn inflations(&self) -> u64 {
        self.inflations_first_use
            + self.inflations_contention
            + self.inflations_wait_notify
            + self.inflations_recursion
            + self.inflations_identity_hash
    }
}

/// One runtime of protocol `P`: its threads, its monitor table, its counters.
///
/// Objects locked through a runtime carry `P::Header`; a header must be used with one runtime
/// only (its fat-monitor indices and thread ids are that runtime's).
pub struct Runtime<P: Protocol> {
    config: Config,
    threads: Registry<P>,
    monitors: MonitorTable,
    state: P::State,
    stats: Stats,
    /// Identity hashes waiting for a header that an owner holds (see `hash.rs`).
    side_hashes: crate::hash::SideHashes,
}

impl<P: Protocol> Runtime<P> {
    /// A runtime with `config`.
    pub fn new(config: Config) -> Arc<Self> {
        Arc::new(Self {
            threads: Registry::new(config.max_threads),
            monitors: MonitorTable::new(config.monitor_capacity, config.system_lock)
                .with_profiling(config.profiling),
            state: P::new_state(&config),
            stats: Stats::default(),
            side_hashes: crate::hash::SideHashes::new(),
            config,
        })
    }

    /// A runtime with the default configuration.
    pub fn with_defaults() -> Arc<Self> {
        Self::new(Config::default())
    }

    /// Attaches the calling thread and returns its handle. Every thread that locks objects of
    /// this runtime needs one; it detaches when dropped. `TooManyThreads` when every id is in
    /// use.
    ///
    /// `'env` is the lifetime of the objects this thread may lock *unstructured*
    /// ([`ThreadHandle::monitor_enter`]): they must outlive the handle, because a detach
    /// releases them.
    pub fn attach<'env>(self: &Arc<Self>) -> Result<ThreadHandle<'env, P>, MonitorError> {
        let cx = self
            .threads
            .attach(|id| P::new_thread_state(id, &self.config))?;
        Ok(ThreadHandle {
            rt: self.clone(),
            cx,
            unstructured: RefCell::new(Vec::new()),
            _marker: PhantomData,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The thread registry.
    pub fn threads(&self) -> &Registry<P> {
        &self.threads
    }

    /// The monitor table.
    pub fn monitors(&self) -> &MonitorTable {
        &self.monitors
    }

    /// The protocol's runtime-wide state.
    pub fn state(&self) -> &P::State {
        &self.state
    }

    /// The counters, for protocols to bump.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// A copy of the counters now.
    pub fn stats_snapshot(&self) -> StatsSnapshot {
        let i = |c: InflationCause| self.stats.inflations[c as usize].load(Ordering::Relaxed);
        StatsSnapshot {
            inflations_first_use: i(InflationCause::FirstUse),
            inflations_contention: i(InflationCause::Contention),
            inflations_wait_notify: i(InflationCause::WaitNotify),
            inflations_recursion: i(InflationCause::RecursionOverflow),
            deflations: self.stats.deflations.load(Ordering::Relaxed),
            live_monitors: self.monitors.live(),
            attached_threads: self.threads.len(),
            inflations_identity_hash: i(InflationCause::IdentityHash),
        }
    }

    /// The thread owning `h`'s lock, if any (Java's owner query; a snapshot when racing).
    pub fn owner_of(&self, h: &P::Header) -> Option<ThreadId> {
        P::owner_of(self, h)
    }

    /// Interrupts thread `id` (Java's `Thread.interrupt`): sets its interrupt status and wakes
    /// it if it is waiting, making that wait return `Interrupted`.
    pub fn interrupt(&self, id: ThreadId) -> Result<(), MonitorError> {
        let t = self.threads.get(id).ok_or(MonitorError::NoSuchThread)?;
        t.core().interrupt();
        Ok(())
    }

    /// GC hook: the object owning `h` is dead; give back its monitor and reset the header.
    pub fn reclaim(&self, h: &mut P::Header) {
        P::reclaim(self, h)
    }
}

impl<P: Protocol> std::fmt::Debug for Runtime<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("protocol", &P::NAME)
            .field("config", &self.config)
            .field("monitors", &self.monitors)
            .finish_non_exhaustive()
    }
}

/// A thread attached to a runtime: the way that thread locks objects.
///
/// Not `Send`: a handle is its thread's identity (lock ownership, parking, interrupts).
/// Dropping it (or [`detach`](Self::detach)) releases every lock it still holds through
/// [`monitor_enter`](Self::monitor_enter) — as JNI's `DetachCurrentThread` does — waking
/// whoever waits for them, and frees its id for reuse. Locks held through guards cannot outlive
/// the handle: a guard borrows it. (A guard passed to `mem::forget` keeps its lock forever,
/// as a forgotten `std::sync::MutexGuard` does.)
pub struct ThreadHandle<'env, P: Protocol> {
    rt: Arc<Runtime<P>>,
    cx: Arc<ThreadContext<P>>,
    /// Unstructured holds: header address and how many times it was entered unstructured.
    unstructured: RefCell<Vec<(*const P::Header, u32)>>,
    _marker: PhantomData<(&'env P::Header, *const ())>,
}

impl<'env, P: Protocol> ThreadHandle<'env, P> {
    /// This thread's id.
    #[inline]
    pub fn id(&self) -> ThreadId {
        self.cx.id()
    }

    /// The runtime.
    #[inline]
    pub fn runtime(&self) -> &Arc<Runtime<P>> {
        &self.rt
    }

    /// The per-thread context, for hosts that call the protocol's paths directly.
    #[inline]
    pub fn context(&self) -> &ThreadContext<P> {
        &self.cx
    }

    /// Locks `h` (monitorenter / `synchronized`), blocking while another thread owns it, and
    /// returns a guard that unlocks when dropped, also when the critical section panics.
    #[inline]
    pub fn enter<'a>(&'a self, h: &'a P::Header) -> Result<MonitorGuard<'a, P>, MonitorError> {
        P::enter(&self.rt, &self.cx, h)?;
        Ok(MonitorGuard { th: self, h })
    }

    /// Locks `h` if no other thread owns it; `Ok(None)` if one does.
    #[inline]
    pub fn try_enter<'a>(
        &'a self,
        h: &'a P::Header,
    ) -> Result<Option<MonitorGuard<'a, P>>, MonitorError> {
        // Not `then_some`: that would build (and drop, i.e. exit) a guard on failure too.
        if P::try_enter(&self.rt, &self.cx, h)? {
            Ok(Some(MonitorGuard { th: self, h }))
        } else {
            Ok(None)
        }
    }

    /// Unstructured lock (JNI `MonitorEnter`): held until a matching
    /// [`monitor_exit`](Self::monitor_exit) or until this thread detaches. Exits may come in
    /// any order (enter A, enter B, exit A, exit B).
    pub fn monitor_enter(&self, h: &'env P::Header) -> Result<(), MonitorError> {
        P::enter(&self.rt, &self.cx, h)?;
        self.record_unstructured(h);
        Ok(())
    }

    /// Unstructured try-lock: `Ok(true)` and held as by [`monitor_enter`](Self::monitor_enter)
    /// if no other thread owns `h`.
    pub fn try_monitor_enter(&self, h: &'env P::Header) -> Result<bool, MonitorError> {
        let got = P::try_enter(&self.rt, &self.cx, h)?;
        if got {
            self.record_unstructured(h);
        }
        Ok(got)
    }

    fn record_unstructured(&self, h: &'env P::Header) {
        let mut u = self.unstructured.borrow_mut();
        let p = h as *const P::Header;
        match u.iter_mut().find(|(q, _)| *q == p) {
            Some((_, n)) => *n += 1,
            None => u.push((p, 1)),
        }
    }

    /// Unstructured unlock (JNI `MonitorExit`) of one [`monitor_enter`](Self::monitor_enter).
    /// `IllegalMonitorState` if this thread holds no unstructured lock on `h` (a lock taken
    /// with a guard is released by dropping the guard).
    pub fn monitor_exit(&self, h: &'env P::Header) -> Result<(), MonitorError> {
        let mut u = self.unstructured.borrow_mut();
        let p = h as *const P::Header;
        let i = u
            .iter()
            .position(|(q, _)| *q == p)
            .ok_or(MonitorError::IllegalMonitorState)?;
        P::exit(&self.rt, &self.cx, h)?;
        u[i].1 -= 1;
        if u[i].1 == 0 {
            u.swap_remove(i);
        }
        Ok(())
    }

    /// Object.wait on `h`, which this thread must own: `None` waits until notified or
    /// interrupted; `Some(d)` at most `d` (`Some(Duration::ZERO)` releases and re-acquires).
    /// `InvalidTimeout` if the deadline is not representable.
    pub fn wait(
        &self,
        h: &P::Header,
        timeout: Option<Duration>,
    ) -> Result<WaitOutcome, MonitorError> {
        let deadline = match timeout {
            None => None,
            Some(d) => Some(deadline_after(d).ok_or(MonitorError::InvalidTimeout)?),
        };
        self.wait_until(h, deadline)
    }

    /// Object.wait until an absolute deadline (`None`: no deadline).
    pub fn wait_until(
        &self,
        h: &P::Header,
        deadline: Option<Instant>,
    ) -> Result<WaitOutcome, MonitorError> {
        P::wait(&self.rt, &self.cx, h, deadline)
    }

    /// Java's `Object.wait(long millis, int nanos)`, with its argument checks: negative
    /// `millis` or `nanos` outside `0..=999_999` is `InvalidTimeout`; `(0, 0)` waits forever.
    pub fn wait_java(
        &self,
        h: &P::Header,
        millis: i64,
        nanos: i32,
    ) -> Result<WaitOutcome, MonitorError> {
        if millis < 0 || !(0..=999_999).contains(&nanos) {
            return Err(MonitorError::InvalidTimeout);
        }
        let timeout = (millis != 0 || nanos != 0)
            .then(|| Duration::from_millis(millis as u64) + Duration::from_nanos(nanos as u64));
        self.wait(h, timeout)
    }

    /// Object.notify on `h`, which this thread must own.
    pub fn notify(&self, h: &P::Header) -> Result<(), MonitorError> {
        P::notify(&self.rt, &self.cx, h, false)
    }

    /// Object.notifyAll on `h`, which this thread must own.
    pub fn notify_all(&self, h: &P::Header) -> Result<(), MonitorError> {
        P::notify(&self.rt, &self.cx, h, true)
    }

    /// Whether this thread owns `h`'s lock (Java's `Thread.holdsLock`).
    #[inline]
    pub fn holds_lock(&self, h: &P::Header) -> bool {
        P::holds_lock(&self.rt, &self.cx, h)
    }

    /// How many times this thread holds `h`'s lock (0 if it does not).
    pub fn lock_count(&self, h: &P::Header) -> u32 {
        P::lock_count(&self.rt, &self.cx, h)
    }

    /// Reads and clears this thread's interrupt status (Java's `Thread.interrupted()`).
    pub fn interrupted(&self) -> bool {
        self.cx.core().take_interrupt()
    }

    /// This thread's interrupt status, unchanged (Java's `isInterrupted()`).
    pub fn is_interrupted(&self) -> bool {
        self.cx.core().is_interrupted()
    }

    /// Safepoint poll (see [`Protocol::poll`]): call it in long loops that take no lock when
    /// the protocol revokes biases by handshake (`biased`, `fable`); free otherwise.
    #[inline]
    pub fn poll(&self) {
        P::poll(&self.rt, &self.cx)
    }

    /// Runs `f` "in native" (JNI's state transition): the thread counts as being at a
    /// safepoint meanwhile, so a revoker never waits for it. `f` must not use this runtime's
    /// monitors.
    pub fn in_native<R>(&self, f: impl FnOnce() -> R) -> R {
        P::enter_native(&self.rt, &self.cx);
        struct Leave<'h, 'e, P: Protocol>(&'h ThreadHandle<'e, P>);
        impl<P: Protocol> Drop for Leave<'_, '_, P> {
            fn drop(&mut self) {
                P::leave_native(&self.0.rt, &self.0.cx);
            }
        }
        let _leave = Leave(self);
        f()
    }

    /// Detaches now; returns how many unstructured lock levels were still held and have been
    /// released. Dropping the handle does the same.
    pub fn detach(self) -> usize {
        let mut me = self;
        me.release_all()
    }

    fn release_all(&mut self) -> usize {
        let held = std::mem::take(self.unstructured.get_mut());
        let mut released = 0;
        for (p, n) in held {
            // SAFETY: `p` was recorded from a `&'env P::Header` in `monitor_enter`; `'env`
            // outlives `self` (the handle's type carries it), so the header is still alive
            // and at the same address (it is borrowed, so it cannot move).
            let h = unsafe { &*p };
            for _ in 0..n {
                if P::exit(&self.rt, &self.cx, h).is_ok() {
                    released += 1;
                }
            }
        }
        released
    }
}

impl<P: Protocol> Drop for ThreadHandle<'_, P> {
    fn drop(&mut self) {
        self.release_all();
        P::on_detach(&self.rt, &self.cx);
        self.rt.threads.detach(self.cx.id());
    }
}

impl<P: Protocol> std::fmt::Debug for ThreadHandle<'_, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadHandle")
            .field("protocol", &P::NAME)
            .field("id", &self.id())
            .finish_non_exhaustive()
    }
}

/// A held lock (from [`ThreadHandle::enter`]); dropping it unlocks one level.
#[must_use = "dropping the guard unlocks at once"]
pub struct MonitorGuard<'a, P: Protocol> {
    th: &'a ThreadHandle<'a, P>,
    h: &'a P::Header,
}

impl<P: Protocol> MonitorGuard<'_, P> {
    /// Object.wait (see [`ThreadHandle::wait`]).
    pub fn wait(&self, timeout: Option<Duration>) -> Result<WaitOutcome, MonitorError> {
        self.th.wait(self.h, timeout)
    }

    /// Object.notify.
    pub fn notify(&self) -> Result<(), MonitorError> {
        self.th.notify(self.h)
    }

    /// Object.notifyAll.
    pub fn notify_all(&self) -> Result<(), MonitorError> {
        self.th.notify_all(self.h)
    }

    /// The locked header.
    pub fn header(&self) -> &P::Header {
        self.h
    }
}

impl<P: Protocol> Drop for MonitorGuard<'_, P> {
    #[inline]
    fn drop(&mut self) {
        let r = P::exit(&self.th.rt, &self.th.cx, self.h);
        // A guard's lock level is its own: the only way to lose it is a bug in a protocol.
        debug_assert!(r.is_ok(), "guard exit failed: {r:?}");
    }
}

/// Identity hashes (issue 7 item 2).
impl<P: Protocol> Runtime<P> {
    /// The identity hash installed in `h`, or `None` if nobody has asked for one yet. Never
    /// installs one (for GCs and debuggers); callable from any thread, attached or not.
    pub fn peek_identity_hash(&self, h: &P::Header) -> Option<u32> {
        P::peek_identity_hash(self, h)
    }

    /// Hashes chosen while the header could not take them (`thin`, the biased protocols).
    pub(crate) fn side_hashes(&self) -> &crate::hash::SideHashes {
        &self.side_hashes
    }

    /// GC hook for a moving collector, the same for every protocol: the object whose header
    /// was at `from` now has its header at `to` (the host copied the word verbatim). Call it
    /// at a safepoint (no attached thread inside this crate's calls) for every moved object
    /// that is locked, or that `thin`, `biased` or `fable` may have hashed (see the crate
    /// documentation, "Moving objects"). It rewrites the per-thread records that name the
    /// object ([`Protocol::relocate_records`]: lock stacks, lock records) and moves an
    /// identity hash waiting in the side table (an object first hashed while another thread
    /// held its plain-store-unlocked lock keeps the hash there, keyed by address, until its
    /// next hash call). Nearly free for an unlocked object of the other protocols. A monitor
    /// keeps reporting the object's old address in dumps and profiles until it is bound again.
    pub fn relocate(&self, from: *const P::Header, to: &P::Header) {
        P::relocate_records(self, from, to);
        self.side_hashes
            .relocate(from as usize, to as *const P::Header as usize);
    }
}

/// Identity hashes (issue 7 item 2).
impl<P: Protocol> ThreadHandle<'_, P> {
    /// `h`'s identity hash (Java's `System.identityHashCode`): installed on the first call,
    /// the same value ever after, from any thread, in every lock state. A value in
    /// `1..2^P::HASH_BITS`. Fails only with `MonitorTableFull` where the protocol must inflate
    /// to store the hash and cannot.
    pub fn identity_hash(&self, h: &P::Header) -> Result<u32, MonitorError> {
        P::identity_hash(&self.rt, &self.cx, h)
    }
}
