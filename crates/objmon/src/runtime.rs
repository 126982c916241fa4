//! The runtime: configuration, the thread registry, the monitor table and statistics of one
//! protocol. Threads attach to it through `handle.rs` ([`Runtime::attach`]).

use crate::deflate::DeflationPolicy;
pub use crate::events::InflationCause;
use crate::events::{Event, EventSink, SinkSlot};
use crate::protocol::Protocol;
use crate::sync::{Arc, AtomicU64, Ordering};
use crate::table::{MonitorTable, MAX_MONITOR_INDEX};
use crate::tasuki::SystemLockConfig;
use crate::thread::{Registry, ThreadId, MAX_THREAD_ID};
use crate::MonitorError;

/// Settings of a runtime, fixed at creation.
///
/// `Clone`, `Debug` and `PartialEq` by hand: [`events`](Self::events) is a trait object,
/// compared by identity (the same `Arc`) and shown as whether it is set.
#[derive(Clone)]
pub struct Config {
    /// Most threads attached at once (retired ids count); at most 32767. Ids are unique in
    /// the process, so their values may exceed this.
    pub max_threads: u16,
    /// Most fat monitors alive at once; at most 2^23 − 1 (the 23-bit index of seed 000 §2.3),
    /// which all the runtimes of the process share.
    pub monitor_capacity: u32,
    /// The system lock under every fat monitor.
    pub system_lock: SystemLockConfig,
    /// When protocols that can deflate (`stack`, `lightweight`) give an idle fat monitor back
    /// to its object. Protocols that never deflate (`fat`, `thin`) ignore it.
    pub deflation: DeflationPolicy,
    /// Contention profiling ([`Runtime::contention_profile`]): off by default, and then free
    /// (fast paths never look at it; slow paths test it once).
    pub profiling: bool,
    /// Where the runtime delivers its monitor events ([`crate::events`]): off (`None`) by
    /// default, and then free (fast paths never look at it; slow paths test a byte once).
    ///
    /// ```
    /// use objmon::events::Recorder;
    /// use objmon::vm::{Config, Runtime};
    /// use std::sync::Arc;
    /// let rec = Arc::new(Recorder::new());
    /// let rt = Runtime::<objmon::Thin>::new(Config { events: Some(rec.clone()), ..Config::default() });
    /// assert!(rt.event_sink().is_some());
    /// ```
    pub events: Option<std::sync::Arc<dyn EventSink>>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("max_threads", &self.max_threads)
            .field("monitor_capacity", &self.monitor_capacity)
            .field("system_lock", &self.system_lock)
            .field("deflation", &self.deflation)
            .field("profiling", &self.profiling)
            .field("events", &self.events.as_ref().map(|_| "EventSink"))
            .finish()
    }
}

impl PartialEq for Config {
    fn eq(&self, o: &Self) -> bool {
        self.max_threads == o.max_threads
            && self.monitor_capacity == o.monitor_capacity
            && self.system_lock == o.system_lock
            && self.deflation == o.deflation
            && self.profiling == o.profiling
            && match (&self.events, &o.events) {
                (None, None) => true,
                (Some(a), Some(b)) => std::sync::Arc::ptr_eq(a, b),
                _ => false,
            }
    }
}

impl Eq for Config {}

impl Default for Config {
    fn default() -> Self {
        Self {
            max_threads: MAX_THREAD_ID,
            monitor_capacity: MAX_MONITOR_INDEX,
            system_lock: SystemLockConfig::default(),
            deflation: DeflationPolicy::default(),
            profiling: false,
            events: None,
        }
    }
}

/// Counters of one runtime (relaxed; bumped only on slow paths).
#[derive(Debug, Default)]
pub struct Stats {
    inflations: [AtomicU64; 5],
    deflations: AtomicU64,
    /// Bias revocations (`revoke.rs`), for [`Event::MonitorStatistics`].
    revocations: AtomicU64,
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

    /// Counts one bias revocation.
    pub(crate) fn revoked(&self) {
        self.revocations.fetch_add(1, Ordering::Relaxed);
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
/// only (its fat-monitor indices and thread ids are that runtime's; both are unique in the
/// process, so a second runtime gets `ForeignHeader` or waits, `docs/soundness.md` §7).
pub struct Runtime<P: Protocol> {
    config: Config,
    threads: Registry<P::ThreadState>,
    monitors: MonitorTable,
    state: P::State,
    stats: Stats,
    /// Identity hashes waiting for a header that an owner holds (see `hash.rs`).
    side_hashes: crate::hash::SideHashes,
    /// The slot of `config.events` in the registry of sinks (`events.rs`); declared after
    /// the monitor table, so it is dropped after every monitor that names it.
    events: SinkSlot,
}

impl<P: Protocol> Runtime<P> {
    /// A runtime with `config`.
    ///
    /// Does not compile for a protocol that is sound only while the host keeps a promise
    /// about its signal handlers ([`Protocol::HOST_SIGNAL_CONTRACT`]: `biased-signal`,
    /// `fable-signal`) or about moving held headers ([`Protocol::HOST_MOVE_CONTRACT`]:
    /// `lightweight`, `lightweight-seed`, `lightweight-table`); those are made with
    /// [`new_unchecked`](Self::new_unchecked). The
    /// refusal is a constant evaluated when `new` is instantiated for the protocol, so
    /// `cargo build` and `cargo test` report it (as "evaluation panicked"), `cargo check`
    /// does not; generic code that may see every protocol ([`visit_all`](crate::vm::visit_all))
    /// calls `new_unchecked`.
    ///
    /// ```compile_fail,E0080
    /// let rt = objmon::vm::Runtime::<objmon::BiasedSignal>::new(Default::default());
    /// ```
    /// ```compile_fail,E0080
    /// let rt = objmon::vm::Runtime::<objmon::FableSignal>::with_defaults();
    /// ```
    /// ```compile_fail,E0080
    /// let rt = objmon::vm::Runtime::<objmon::Lightweight>::new(Default::default());
    /// ```
    /// ```compile_fail,E0080
    /// let rt = objmon::vm::Runtime::<objmon::LightweightTable>::with_defaults();
    /// ```
    /// ```
    /// let rt = objmon::vm::Runtime::<objmon::BiasedRseq>::new(Default::default());
    /// ```
    pub fn new(config: Config) -> Arc<Self> {
        Self::asks_nothing_of_the_host();
        // SAFETY: `P` asks nothing of the host (checked above, at compile time).
        unsafe { Self::new_unchecked(config) }
    }

    /// Fails to compile, when instantiated for `P`, if `P` is sound only under a promise of
    /// the host's ([`Protocol::HOST_SIGNAL_CONTRACT`], [`Protocol::HOST_MOVE_CONTRACT`]).
    #[inline(always)]
    fn asks_nothing_of_the_host() {
        const {
            assert!(
                !P::HOST_SIGNAL_CONTRACT,
                "this protocol (biased-signal, fable-signal) is sound only while the host keeps \
                 the signal-handler contract: use the unsafe Runtime::new_unchecked, see its \
                 Safety section"
            );
            assert!(
                !P::HOST_MOVE_CONTRACT,
                "this protocol (lightweight, lightweight-seed, lightweight-table) is sound only \
                 while the host never moves or frees a header held through a leaked guard: use \
                 the unsafe Runtime::new_unchecked, see its Safety section"
            );
        }
    }

    /// A runtime with `config`, for any protocol, the ones [`new`](Self::new) refuses
    /// included.
    ///
    /// # Safety
    ///
    /// Nothing, for a protocol without [`Protocol::HOST_SIGNAL_CONTRACT`] or
    /// [`Protocol::HOST_MOVE_CONTRACT`] (the same as `new`).
    ///
    /// For `lightweight`, `lightweight-seed` and `lightweight-table`: **a header that a
    /// leaked guard still holds (a [`HeaderGuard`](crate::vm::HeaderGuard) passed to
    /// `mem::forget`, or kept alive for good) is never moved, nor freed and its memory
    /// reused for another header, unless the host reports it** ([`relocate`](Self::relocate),
    /// [`reclaim`](Self::reclaim)). A host whose objects move only by its own collector,
    /// which reports them, keeps it; so does one that never leaks a guard. Why: the thread's
    /// lock stack names the header by address and a fast-locked word names no owner (seed
    /// 001's anonymous owner), so nothing can tell the stale entry of a moved header from a
    /// live one: the thread's recursive fast path would enter a header another thread has
    /// locked since (two owners), and a new header at the address would stay locked after
    /// its release (`docs/soundness.md` §8).
    ///
    /// For `biased-signal` and `fable-signal`: **every signal handler that runs on a
    /// thread while it is attached to this runtime keeps the barrier signal blocked from
    /// its entry until it returns** — it has the signal ([`barrier_signal`](crate::vm::barrier_signal),
    /// `SIGRTMIN + 6`) in its `sa_mask`, and neither it nor anything it calls unblocks it
    /// (`sigprocmask` / `pthread_sigmask`, `sigsuspend`, `pselect` / `ppoll` /
    /// `epoll_pwait` with a mask without it, `setcontext` / `swapcontext` / `siglongjmp` to a
    /// context whose mask lacks it) — or no signal handler runs on those threads at all
    /// (the host blocks its handled signals there). A handler that never returns to the
    /// code it interrupted (it ends the process) is free. The host also leaves the barrier
    /// signal to objmon: no handler, `sigwait` or `signalfd` of its own for it.
    ///
    /// Why: a revoker signals the bias owner, and the barrier's handler restarts the
    /// owner's section if it interrupted one — it sees only the innermost interrupted
    /// context. Delivered inside a host's handler that interrupted the section, it sees the
    /// host handler's instruction pointer, restarts nothing and acknowledges; when the
    /// host's handler returns, the section's committing store overwrites the revoked word:
    /// two owners. With the signal blocked while a host handler runs, the kernel delivers
    /// it when that handler returns (`rt_sigreturn` restores the section's mask), where
    /// the interrupted context is the section's own. `SA_NODEFER` does not matter (it
    /// leaves the handler's own signal unblocked; `sa_mask` still applies), nor does an
    /// alternate signal stack. Rust's own handlers (std's `SIGSEGV` / `SIGBUS` stack
    /// overflow handler) run on a fault, which the owner's section never makes, and end
    /// the process on a guard-page hit; a host that sends those signals with `kill` to a
    /// locking thread breaks the contract. Kept wrong, a lock can have two owners; no
    /// check at run time can see it (the nesting leaves no trace the barrier's handler can
    /// read: an `SA_NODEFER` handler with an empty mask runs with the section's mask).
    /// `biased-rseq` and `fable-rseq`, the same owner step in a kernel restartable
    /// sequence, ask nothing: the kernel aborts the section at the first signal delivery,
    /// the host's included.
    pub unsafe fn new_unchecked(config: Config) -> Arc<Self> {
        let events = SinkSlot::install(config.events.as_ref());
        Arc::new(Self {
            threads: Registry::new(config.max_threads),
            monitors: MonitorTable::new(config.monitor_capacity, config.system_lock)
                .with_profiling(config.profiling)
                .with_events(events.id()),
            state: P::new_state(&config),
            stats: Stats::default(),
            side_hashes: crate::hash::SideHashes::new(),
            events,
            config,
        })
    }

    /// A runtime with the default configuration; like [`new`](Self::new), does not compile
    /// for a protocol that asks a promise of the host.
    pub fn with_defaults() -> Arc<Self> {
        Self::asks_nothing_of_the_host();
        // SAFETY: `P` asks nothing of the host (checked above, at compile time).
        unsafe { Self::new_unchecked(Config::default()) }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The thread registry.
    pub fn threads(&self) -> &Registry<P::ThreadState> {
        &self.threads
    }

    /// The monitor table (crate-internal: a monitor freed or entered from outside the
    /// protocols would break the header's invariants).
    pub(crate) fn monitors(&self) -> &MonitorTable {
        &self.monitors
    }

    /// The protocol's runtime-wide state.
    pub fn state(&self) -> &P::State {
        &self.state
    }

    /// The counters, for protocols to bump.
    pub(crate) fn stats(&self) -> &Stats {
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

    /// The sink this runtime delivers its events to ([`Config::events`]), if any.
    pub fn event_sink(&self) -> Option<&std::sync::Arc<dyn EventSink>> {
        self.events.sink()
    }

    /// The sink's slot id (`events.rs`; 0: events off), for emitters above the monitor.
    #[inline]
    pub(crate) fn events(&self) -> u8 {
        self.events.id()
    }

    /// Events on: reports the inflation (for `cause`) just counted (`Stats::inflated`) of the
    /// object at `object` to monitor `monitor`, by thread `by`.
    /// Every counting site calls it next, once it holds no internal lock (the side table
    /// of hashes, a revoker's): the sink may lock monitors.
    #[inline]
    pub(crate) fn report_inflation(
        &self,
        by: ThreadId,
        object: usize,
        monitor: u32,
        cause: InflationCause,
    ) {
        if crate::events::on(self.events()) {
            crate::events::report_inflation(self.events(), by, object, monitor, cause);
        }
    }

    /// Events on: reports a deflation (just counted) of monitor `monitor` of the object at
    /// `object`, by thread `by`, outside any internal lock.
    #[inline]
    pub(crate) fn report_deflation(&self, by: ThreadId, object: usize, monitor: u32) {
        if crate::events::on(self.events()) {
            crate::events::report_deflation(self.events(), by, object, monitor);
        }
    }

    /// The counters now, as a [`MonitorStatistics`](Event::MonitorStatistics) event (JFR's
    /// `jdk.JavaMonitorStatistics`), whether or not the runtime has a sink.
    ///
    /// ```
    /// use objmon::events::Event;
    /// let rt = objmon::vm::Runtime::<objmon::Thin>::with_defaults();
    /// let Event::MonitorStatistics { inflations, .. } = rt.statistics_event() else {
    ///     panic!("not statistics")
    /// };
    /// assert_eq!(inflations, 0);
    /// ```
    pub fn statistics_event(&self) -> Event {
        let s = self.stats_snapshot();
        Event::MonitorStatistics {
            at_nanos: crate::events::now_nanos(),
            live_monitors: s.live_monitors as u64,
            inflations: s.inflations(),
            deflations: s.deflations,
            revocations: self.stats.revocations.load(Ordering::Relaxed),
        }
    }

    /// Delivers [`statistics_event`](Self::statistics_event) to the runtime's sink, on this
    /// thread (nothing without a sink). "Periodic" is the host's to arrange: call it from a
    /// timer.
    pub fn report_statistics(&self) {
        if crate::events::on(self.events()) {
            crate::events::deliver_now(self.events(), self.statistics_event());
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

/// Identity hashes.
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
    /// for every moved object that is locked, or that `thin`, `biased` or `fable` may have
    /// hashed (see the crate documentation, "Moving objects"). It rewrites the per-thread
    /// records that name the object ([`Protocol::relocate_records`]: lock stacks, lock
    /// records, `lightweight-table`'s entry) and moves an identity hash waiting in the side
    /// table. Nearly free for an unlocked object of the other protocols. A monitor keeps
    /// reporting the object's old address in dumps and profiles until it is bound again.
    ///
    /// # Safety
    /// Called at a safepoint: no attached thread of this runtime is inside one of its calls
    /// (the records it rewrites are other threads' own), and `to` holds a verbatim copy of the
    /// word that was at `from`, which is not used as a header of this runtime any more
    /// without a `reclaim`. Broken, these are wrong owners and waits that never end (an
    /// owner's exit looking for an entry under the wrong address), so the compiler cannot be
    /// left to trust them.
    pub unsafe fn relocate(&self, from: *const P::Header, to: &P::Header) {
        P::relocate_records(self, from, to);
        self.side_hashes
            .relocate(from as usize, to as *const P::Header as usize);
    }
}
