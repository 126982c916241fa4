//! The runtime: configuration, the thread registry, the monitor table and statistics of one
//! protocol. Threads attach to it through `handle.rs` ([`Runtime::attach`]).

use crate::deflate::DeflationPolicy;
use crate::protocol::Protocol;
use crate::sync::{Arc, AtomicU64, Ordering};
use crate::table::{MonitorTable, MAX_MONITOR_INDEX};
use crate::tasuki::SystemLockConfig;
use crate::thread::{Registry, ThreadId, MAX_THREAD_ID};
use crate::MonitorError;

/// Settings of a runtime, fixed at creation.
#[derive(Clone, Debug, PartialEq, Eq)]
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
