//! Locking protocols: each defines the header the host embeds in its objects and the fast and
//! slow paths over it. Names follow the catalog in `ARCHITECTURE.md` and are used everywhere
//! (CLI, docs, tests).
//!
//! A protocol is done when it passes the one conformance suite (`tests/conformance/`, which
//! runs every protocol listed in [`visit_all`]), has loom models of its races, and appears in
//! the benchmark report (which also iterates [`visit_all`]).

use crate::monitor::WaitOutcome;
use crate::runtime::{Config, Runtime};
use crate::thread::{AttachedThread, ThreadId};
use crate::MonitorError;
use std::time::Instant;

pub mod biased;
pub mod biased_hash;
pub mod cacao;
pub mod fable;
pub mod fat;
pub mod lightweight;
pub mod mark;
pub mod monitor_cache;
pub mod omt;
pub mod stack;
mod stack_records;
pub mod tasuki_bimodal;
pub mod thin;
mod word;

pub use word::{LockWord, HOST_BITS_MASK};

/// What protocol `P`'s operations know about the calling thread: the thread layer's
/// [`AttachedThread`] holding `P`'s per-thread state.
pub type ThreadContext<P> = AttachedThread<<P as Protocol>::ThreadState>;

/// A locking protocol: the header encoding and the fast / slow paths of one scheme.
///
/// Every operation takes the runtime and the calling thread's context explicitly, so a fast
/// path needs no thread-local look-up. Implementations document their header layout as a bit
/// table and the atomic operations of each fast path.
///
/// # Safety of the operations
///
/// The operations that act *as* a thread (`enter`, `try_enter`, `exit`, `wait`, `notify`,
/// `identity_hash`, `poll`, `enter_native`, `leave_native`, `on_detach`) are `unsafe fn`: the
/// caller promises that
///
/// 1. `t` is the calling OS thread's own context: the one carried by the
///    [`ThreadHandle`](crate::vm::ThreadHandle) it attached with, used on the thread that attached
///    (a handle is neither `Send` nor `Sync`, so every call through a handle keeps this);
/// 2. `enter_native` / `leave_native` come in pairs on that thread
///    ([`ThreadHandle::in_native`](crate::vm::ThreadHandle::in_native)), and after `on_detach` no
///    call uses `t` again;
/// 3. `h` stays valid for the call and, while `t` holds it, is not moved or freed unless the
///    host reports the move ([`Runtime::relocate`]) or the death ([`Runtime::reclaim`]).
///
/// Biased revocation (seed 002 §3.3) trusts the first two: a revoker that sees a bias owner
/// running rewrites its records only through a handshake with that very thread, and one that
/// sees it in native revokes in place. A lock operation made in native is the protocol's to
/// refuse (`Err(InNative)`). Everything else a caller can get wrong — exit / wait / notify
/// without owning, a timeout out of range — is an error, never undefined behaviour. Safe code calls these through
/// [`ThreadHandle`](crate::vm::ThreadHandle) and [`HeaderGuard`](crate::vm::HeaderGuard), which keep
/// all three promises; `docs/soundness.md` has the whole argument.
pub trait Protocol: Sized + Send + Sync + 'static {
    /// The catalog name (`fat`, `thin`, ...).
    const NAME: &'static str;
    /// One line for reports.
    const SUMMARY: &'static str;
    /// Bits of the object header the protocol uses for locking.
    const HEADER_LOCK_BITS: u32;
    /// Whether the protocol is sound only while the host keeps a promise about its own
    /// signal handlers (`biased-signal`, `fable-signal`; the promise is
    /// [`Runtime::new_unchecked`]'s). [`Runtime::new`] refuses such a protocol at compile
    /// time, and [`Monitor`](crate::Monitor) does not take it.
    const HOST_SIGNAL_CONTRACT: bool = false;
    /// Whether the protocol is sound only while the host promises that a header held
    /// through a leaked guard is never moved, nor freed and its memory reused, unless the
    /// host reports it (`lightweight`, `lightweight-seed`, `lightweight-table`: a fast-locked
    /// word names no owner, so a lock stack's entry cannot be checked against it; the
    /// promise is [`Runtime::new_unchecked`]'s). [`Runtime::new`] refuses such a protocol
    /// at compile time, and [`Monitor`](crate::Monitor) does not take it.
    const HOST_MOVE_CONTRACT: bool = false;

    /// What the host embeds in each object.
    type Header: Send + Sync + Default + 'static;
    /// Protocol state shared by the whole runtime.
    type State: Send + Sync;
    /// Protocol state of each attached thread (a lock stack, a learn count, ...).
    type ThreadState: Send + Sync;
    /// What [`lock`](Self::lock) hands a guard for its unlock: `()` for a protocol without
    /// hints, so that a guard is its two pointers (a third field, even a constant 0, cost
    /// `cacao`'s user loop 6 instructions and 9% in register spills).
    type Hint: Copy + Default;

    /// Builds the runtime-wide state.
    fn new_state(config: &Config) -> Self::State;
    /// Builds the state of a newly attached thread.
    fn new_thread_state(id: ThreadId, config: &Config) -> Self::ThreadState;

    /// A word the protocol derives once per handle from the thread's context, passed back to
    /// [`lock`](Self::lock) / [`unlock`](Self::unlock) by every lock and unlock through that
    /// handle. A handle keeps it beside its runtime and context pointers, so a user's loop
    /// holds it in a register: a constant of the thread that a fast path can use where a
    /// value derived from a load would chain one step to the next (`thin`'s pre-shifted
    /// owner id; the signal bias owners store it instead of the loaded header ± 256,
    /// `protocol/biased/fastpath.rs`, `signal_known_step`). It must be a pure function of the
    /// context: the same whenever it is computed. 0 by default (unused).
    #[inline(always)]
    fn handle_word(_t: &ThreadContext<Self>) -> u64 {
        0
    }
    /// monitorenter: acquires, blocking while another thread owns the object. `word` is
    /// [`handle_word(t)`](Self::handle_word); the result is a *hint* for the matching
    /// unlock: a guard keeps it and passes it to [`unlock`](Self::unlock) when it drops, so a
    /// fast path can carry a value from the lock to the unlock in a register (`thin`'s nested
    /// lock returns the word it found, which its nested unlock stores back instead of the
    /// loaded word minus one). [`Hint::default`](Default::default) means none. A protocol
    /// that needs neither the word nor a hint ignores the one and returns `Ok(())`.
    ///
    /// # Safety
    /// The [operations' contract](Protocol#safety-of-the-operations), and `word` is
    /// `Self::handle_word(t)`.
    unsafe fn lock(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        word: u64,
        h: &Self::Header,
    ) -> Result<Self::Hint, MonitorError>;
    /// monitorexit: releases one level; `IllegalMonitorState` if `t` does not own the
    /// object. `word` as for [`lock`](Self::lock); `hint` is the default (none) or what
    /// `lock` returned for a level of `h` held by this thread. A hint only: the outcome must
    /// be the same for every hint the contract allows (a protocol checks what it uses).
    ///
    /// # Safety
    /// The [operations' contract](Protocol#safety-of-the-operations), `word` is
    /// `Self::handle_word(t)`, and `hint` is the default or a value `lock` returned for `h`
    /// on this thread (not necessarily for the level released: guards may drop in any order).
    unsafe fn unlock(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        word: u64,
        hint: Self::Hint,
        h: &Self::Header,
    ) -> Result<(), MonitorError>;
    /// [`lock`](Self::lock) with the context's own word, the hint dropped: for callers
    /// without a handle (a convenience; protocols implement `lock`).
    ///
    /// # Safety
    /// The [operations' contract](Protocol#safety-of-the-operations).
    #[inline(always)]
    unsafe fn enter(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &Self::Header,
    ) -> Result<(), MonitorError> {
        // SAFETY: the caller's contract, and the word is `handle_word(t)`.
        unsafe { Self::lock(rt, t, Self::handle_word(t), h) }.map(|_| ())
    }
    /// [`unlock`](Self::unlock) with the context's own word and no hint (a convenience;
    /// protocols implement `unlock`).
    ///
    /// # Safety
    /// The [operations' contract](Protocol#safety-of-the-operations).
    #[inline(always)]
    unsafe fn exit(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &Self::Header,
    ) -> Result<(), MonitorError> {
        // SAFETY: the caller's contract; the word is `handle_word(t)` and no hint is given.
        unsafe { Self::unlock(rt, t, Self::handle_word(t), Self::Hint::default(), h) }
    }
    /// Acquires if that needs no waiting for another thread; `Ok(false)` otherwise.
    ///
    /// # Safety
    /// The [operations' contract](Protocol#safety-of-the-operations).
    unsafe fn try_enter(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &Self::Header,
    ) -> Result<bool, MonitorError>;
    /// Object.wait with an optional deadline.
    ///
    /// # Safety
    /// The [operations' contract](Protocol#safety-of-the-operations).
    unsafe fn wait(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &Self::Header,
        deadline: Option<Instant>,
    ) -> Result<WaitOutcome, MonitorError>;
    /// Object.notify (`all == false`) or Object.notifyAll (`all == true`).
    ///
    /// # Safety
    /// The [operations' contract](Protocol#safety-of-the-operations).
    unsafe fn notify(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &Self::Header,
        all: bool,
    ) -> Result<(), MonitorError>;
    /// How many times `t` holds the object's lock (0 if it does not own it).
    fn lock_count(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &Self::Header) -> u32;
    /// Whether `t` owns the object's lock (Java's `Thread.holdsLock`).
    #[inline]
    fn holds_lock(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &Self::Header) -> bool {
        Self::lock_count(rt, t, h) > 0
    }
    /// The thread that owns the object's lock, if any. From another thread this is a
    /// snapshot: it was true at some moment during the call.
    fn owner_of(rt: &Runtime<Self>, h: &Self::Header) -> Option<ThreadId>;
    /// The object is dead (a GC hook): give back whatever the header holds, such as a fat
    /// monitor, and reset the header. `&mut` proves nobody else is using it. A monitor that a
    /// thread still owns (only possible after `mem::forget` of a guard) is leaked, not freed.
    fn reclaim(rt: &Runtime<Self>, h: &mut Self::Header);

    /// Safepoint poll: the host calls it (through [`ThreadHandle::poll`](crate::vm::ThreadHandle::poll))
    /// in long loops that take no lock, so that protocols whose revocation needs the owner's
    /// cooperation (the pair handshakes of seed 002 §3.3) make progress. No-op by default.
    ///
    /// # Safety
    /// The [operations' contract](Protocol#safety-of-the-operations).
    #[inline]
    unsafe fn poll(_rt: &Runtime<Self>, _t: &ThreadContext<Self>) {}
    /// The thread leaves managed code (JNI's transition to native): until
    /// [`leave_native`](Self::leave_native) it makes no monitor call and counts as being at a
    /// safepoint. No-op by default.
    ///
    /// # Safety
    /// The [operations' contract](Protocol#safety-of-the-operations).
    unsafe fn enter_native(_rt: &Runtime<Self>, _t: &ThreadContext<Self>) {}
    /// The thread returns from native code; it may wait here for a handshake in progress.
    /// No-op by default.
    ///
    /// # Safety
    /// The [operations' contract](Protocol#safety-of-the-operations).
    unsafe fn leave_native(_rt: &Runtime<Self>, _t: &ThreadContext<Self>) {}
    /// The thread is detaching (its handle is dropped, after its unstructured locks were
    /// released): it will make no further call. No-op by default.
    ///
    /// # Safety
    /// The [operations' contract](Protocol#safety-of-the-operations).
    unsafe fn on_detach(_rt: &Runtime<Self>, _t: &ThreadContext<Self>) {}

    /// The protocol's one tunable heuristic, if its seed names one (FABLE's learn limit,
    /// seed 002 §3.1). Harnesses sweep [`Knob::values`] through [`set_knob`](Self::set_knob)
    /// without knowing which protocol they tune. `None` by default.
    const KNOB: Option<Knob> = None;

    /// Sets [`KNOB`](Self::KNOB) to `value` in `rt`, leaving every other setting of `rt` as
    /// it is. Meant for start-up, before threads attach; a change while threads run takes
    /// effect at their next slow path. By default `Err(KnobError::NoKnob)`: a protocol without
    /// a knob refuses rather than ignores, so that no harness labels a figure with a setting
    /// that had no effect. `Err(KnobError::OutOfRange)` if `value` is outside
    /// [`Knob::min`]`..=`[`Knob::max`].
    fn set_knob(_rt: &Runtime<Self>, _value: u32) -> Result<(), KnobError> {
        Err(KnobError::NoKnob)
    }

    /// How many bits an identity hash has in this protocol: hashes are in `1..2^HASH_BITS`
    /// (0 means "no hash", as in HotSpot). Each protocol's bit table shows where they live.
    const HASH_BITS: u32;

    /// The object's identity hash: installed on the first call (from the calling thread's
    /// generator, see `hash.rs`), the same value ever after — in every lock state, from any
    /// thread, concurrently with any lock traffic, through inflation, deflation and
    /// relocation. Fails only where storing it needs a monitor and the table is full
    /// (`MonitorTableFull`).
    ///
    /// # Safety
    /// The [operations' contract](Protocol#safety-of-the-operations).
    unsafe fn identity_hash(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &Self::Header,
    ) -> Result<u32, MonitorError>;

    /// The installed identity hash, or `None`; never installs one (for GCs and debuggers).
    /// Any thread may call it. A `None` may be overtaken by a concurrent first
    /// [`identity_hash`](Self::identity_hash); a `Some` is final. `stack` answers `None`
    /// while the object is stack-locked (the hash is in the owner's lock record; its
    /// `peek_identity_hash_at_safepoint` reads it there).
    fn peek_identity_hash(rt: &Runtime<Self>, h: &Self::Header) -> Option<u32>;
    /// Introspection: the objects `t` holds according to its own per-thread records (a lock
    /// stack, lock records), as (header address, lock levels). Called from any thread: a
    /// racy snapshot. Objects held only through a fat monitor or only in the header are not
    /// listed. Empty by default (no per-thread records).
    fn held_records(_rt: &Runtime<Self>, _t: &ThreadContext<Self>) -> Vec<(usize, u32)> {
        Vec::new()
    }

    /// Introspection: the owner of `h` and how many times it holds it, from any thread (a
    /// racy snapshot: the owner held it at some moment of the call; the count is the owner's
    /// count at a later moment, 0 if it had released by then). By default [`owner_of`]
    /// and then [`lock_count`] with the owner's context, which every protocol answers without
    /// side effects (atomic reads, or a short bookkeeping lock in `cacao` and `monitor-cache`).
    ///
    /// [`owner_of`]: Self::owner_of
    /// [`lock_count`]: Self::lock_count
    fn lock_state(rt: &Runtime<Self>, h: &Self::Header) -> Option<(ThreadId, u32)> {
        let owner = Self::owner_of(rt, h)?;
        let count = rt
            .threads()
            .get(owner)
            .map_or(0, |cx| Self::lock_count(rt, &cx, h));
        Some((owner, count))
    }

    /// GC hook, through [`Runtime::relocate`]: the object whose header was at `from` now has
    /// its header at `to` (a moving collector copied the word verbatim); rewrite every
    /// per-thread record that names `from` (lock stacks, lock records). Called at a safepoint
    /// (no attached thread inside this crate's calls). Records are never dereferenced, so a
    /// missed call is a wrong owner answer, never undefined behaviour. Nothing by default
    /// (the protocol keeps no header address in per-thread records).
    fn relocate_records(_rt: &Runtime<Self>, _from: *const Self::Header, _to: &Self::Header) {}

    /// Whether the protocol can tell, at detach, that a thread still holds a lock (see
    /// [`may_hold_any`](Self::may_hold_any)). If so, handles do not count their guards'
    /// levels (a count whose upkeep changes what the compiler inlines into a user's loop);
    /// `false` by default.
    const KNOWS_HOLDS: bool = false;

    /// Asked by a detaching thread of a protocol with [`KNOWS_HOLDS`](Self::KNOWS_HOLDS),
    /// after its unstructured holds were released: whether `t` may still hold a lock (a
    /// guard passed to `mem::forget`), in which case its id is retired, never reused. It must
    /// not answer `false` while `t` holds one. `true` by default.
    fn may_hold_any(_rt: &Runtime<Self>, _t: &ThreadContext<Self>) -> bool {
        true
    }
}

/// A protocol's tunable heuristic (see [`Protocol::KNOB`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Knob {
    /// Short name, used in row names (`fable[learn-limit=3]`): lower case, no spaces.
    pub name: &'static str,
    /// Where the seed defines it and sweeps it (e.g. `"002 §3.1, §5.3 Fig. 16"`).
    pub seed: &'static str,
    /// The values the seed's experiments sweep, ascending.
    pub values: &'static [u32],
    /// The value a fresh runtime has.
    pub default: u32,
    /// Smallest accepted value.
    pub min: u32,
    /// Largest accepted value.
    pub max: u32,
}

/// Why [`Protocol::set_knob`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnobError {
    /// The protocol has no knob ([`Protocol::KNOB`] is `None`).
    NoKnob,
    /// The value is outside [`Knob::min`]`..=`[`Knob::max`].
    OutOfRange,
}

impl std::fmt::Display for KnobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::NoKnob => "the protocol has no tuning knob",
            Self::OutOfRange => "the value is outside the knob's range",
        })
    }
}

impl std::error::Error for KnobError {}

/// Something to run once per protocol type (see [`visit_all`]).
pub trait ProtocolVisitor {
    /// Called once for each protocol.
    fn visit<P: Protocol>(&mut self);
}

/// Calls `v.visit::<P>()` for every protocol in the catalog, in catalog order. Tests and the
/// benchmark harness iterate protocols only through this, so a new protocol added here is
/// conformance-tested and benchmarked with no other change.
pub fn visit_all(v: &mut impl ProtocolVisitor) {
    // Catalog order (ARCHITECTURE.md): baseline, external monitors, header-word protocols.
    v.visit::<fat::Fat>();
    v.visit::<monitor_cache::MonitorCache>();
    v.visit::<cacao::Cacao>();
    v.visit::<cacao::CacaoSeed>();
    v.visit::<thin::Thin>();
    v.visit::<thin::ThinSeed>();
    v.visit::<tasuki_bimodal::Tasuki>();
    v.visit::<stack::Stack>();
    v.visit::<lightweight::Lightweight>();
    v.visit::<lightweight::LightweightSeed>();
    v.visit::<lightweight::LightweightTable>();
    v.visit::<biased::Biased>();
    v.visit::<biased::BiasedSeed>();
    v.visit::<fable::Fable>();
    v.visit::<biased::BiasedRseq>();
    v.visit::<fable::FableRseq>();
    v.visit::<biased::BiasedSignal>();
    v.visit::<fable::FableSignal>();
}

/// The catalog names of every protocol [`visit_all`] visits, in the same order.
pub fn names() -> Vec<&'static str> {
    struct Names(Vec<&'static str>);
    impl ProtocolVisitor for Names {
        fn visit<P: Protocol>(&mut self) {
            self.0.push(P::NAME);
        }
    }
    let mut n = Names(Vec::new());
    visit_all(&mut n);
    n.0
}
