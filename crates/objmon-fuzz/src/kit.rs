//! The three safe surfaces under test, behind one trait so that the worker and the driver
//! are written once: [`MonitorKit`] (`Monitor<T, P>` and its `MonitorGuard`, for every
//! `MonitorProtocol`), [`LockApiKit`] (`lock_api::Mutex<RawMonitor<P>, T>` with
//! `lock_api::Condvar<RawCondvar<P>>`, for every `MonitorProtocol`) and [`VmKit`]
//! (`vm::Runtime::attach`, `ThreadHandle`, `HeaderGuard`, for every protocol of
//! `visit_all`).
//!
//! Owns nothing but the mapping of each fuzzer action onto the real call, and the id budget
//! of the process-wide runtimes ([`LOCK_API_ID_BUDGET`]). Invariants: every call here is safe
//! code; a surface that lacks an operation answers `None` (the driver then skips the step),
//! never an emulation that could hide a bug.
//!
//! Thread ids: a thread that passed a guard to `mem::forget` keeps its id for good (no later
//! thread may inherit the lock). `MonitorKit` and `VmKit` make a fresh runtime per case, so
//! those retired ids never run out across cases. `LockApiKit` cannot: a `RawMonitor` lives
//! on its protocol's process-wide runtime (`MAX_THREAD_ID` = 32767 ids for the process), so
//! the driver counts the threads that forgot a guard on it, per protocol and process
//! ([`retire_id`]), and once [`LOCK_API_ID_BUDGET`] of them are counted it skips `Forget` on
//! that surface (the case runs on without leaks) instead of running the runtime out of ids.

use objmon::events::EventSink;
use objmon::vm::{Config, Runtime, ThreadHandle, ThreadId};
use objmon::{Monitor, MonitorError, MonitorGuard, MonitorProtocol, Protocol, WaitOutcome};
use objmon::{RawCondvar, RawMonitor};
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a monitor of the [`MonitorKit`] protects (the fuzzer's own per-object records live
/// beside the objects, so that every surface shares them).
#[derive(Default)]
pub struct Payload;

/// One safe surface of objmon, as the worker threads drive it.
pub trait Kit: Send + Sync + Sized + 'static {
    /// The protocol's catalog name.
    const PROTOCOL: &'static str;
    /// Short surface name, for reports (`monitor`, `lock-api`, `vm`).
    const SURFACE: &'static str;
    /// Whether the holder may lock again (Java's monitors are reentrant; `RawMonitor` is
    /// not: a lock by its holder panics, a `try_lock` by its holder answers `None`).
    const REENTRANT: bool = true;
    /// Whether `wait` goes through the guard (the `Monitor` and `lock_api` surfaces): a
    /// wait with the lock held only through a forgotten guard cannot be asked.
    const WAIT_BY_GUARD: bool = false;
    /// Whether a thread that does not hold the lock may notify (lock_api's condvar: it takes
    /// the mutex for the notify); else such a notify is `IllegalMonitorState` (vm) or cannot
    /// be asked (`Monitor`: only through a guard).
    const NOTIFY_UNLOCKED: bool = false;
    /// At most this many threads may retire their id through a forgotten guard, per process
    /// (`None`: a fresh runtime per case, no limit). See the module documentation.
    const ID_BUDGET: Option<u32> = None;
    /// What the fuzzer swaps, replaces and boxes: a `Monitor` or a bare header.
    type Slot: Send + Sync + 'static;
    /// Kept by a worker for its whole life (its identity on the runtime).
    type Anchor;
    /// A phase's handle, borrowing the phase's objects for its unstructured locks.
    type Th<'env>;
    /// A held lock level.
    type G<'a>;

    /// A fresh runtime for one case, delivering its monitor events to `events` if given
    /// (`crate::sink`; the `lock_api` surface's process-wide runtime has the sink of
    /// `objmon::set_event_sink` instead, and ignores this).
    fn new(events: Option<Arc<dyn EventSink>>) -> Self;
    /// A fresh, unlocked, unhashed object.
    fn slot(&self) -> Self::Slot;
    /// What a host does before an object dies (the VM's GC hook, `Runtime::reclaim`; a
    /// `Monitor` does it in its own `drop`).
    fn retire(&self, s: &mut Self::Slot);
    /// Called first on each worker thread.
    fn anchor(&self) -> Self::Anchor;
    /// The worker's thread id, where the surface exposes one (for interrupts).
    fn id(a: &Self::Anchor) -> Option<ThreadId>;
    /// A handle for one phase.
    fn attach<'env>(&self) -> Self::Th<'env>;
    /// Blocking lock.
    fn lock<'a>(th: &'a Self::Th<'_>, s: &'a Self::Slot) -> Result<Self::G<'a>, MonitorError>;
    /// Non-blocking lock.
    fn try_lock<'a>(
        th: &'a Self::Th<'_>,
        s: &'a Self::Slot,
    ) -> Result<Option<Self::G<'a>>, MonitorError>;
    /// Lock, waiting at most `d` (the surface's own timed lock if it has one).
    fn try_lock_for<'a>(
        th: &'a Self::Th<'_>,
        s: &'a Self::Slot,
        d: Duration,
    ) -> Result<Option<Self::G<'a>>, MonitorError>;
    /// Object.wait on `s` (through guard `g` where the surface needs one).
    fn wait(
        th: &Self::Th<'_>,
        g: Option<&mut Self::G<'_>>,
        s: &Self::Slot,
        t: Option<Duration>,
    ) -> Option<Result<WaitOutcome, MonitorError>>;
    /// Object.notify / notifyAll on `s` (through guard `g` where the surface needs one).
    fn notify(
        th: &Self::Th<'_>,
        g: Option<&Self::G<'_>>,
        s: &Self::Slot,
        all: bool,
    ) -> Option<Result<(), MonitorError>>;
    /// holdsLock, where the surface tells.
    fn holds(th: &Self::Th<'_>, s: &Self::Slot) -> Option<bool>;
    /// Levels held by this thread, where the surface tells.
    fn count(th: &Self::Th<'_>, s: &Self::Slot) -> Option<u32>;
    /// Whether anybody holds it.
    fn is_locked(th: &Self::Th<'_>, s: &Self::Slot) -> bool;
    // The rest only the vm surface has: the others keep these answers ("lacks it": the
    // driver skips the step).

    /// The identity hash, where the surface has one.
    fn hash(_th: &Self::Th<'_>, _s: &Self::Slot) -> Option<Result<u32, MonitorError>> {
        None
    }
    /// The identity hash without installing one, where the surface has it.
    fn peek(_th: &Self::Th<'_>, _s: &Self::Slot) -> Option<Option<u32>> {
        None
    }
    /// Unstructured enter, where the surface has it.
    fn enter_u<'e>(_th: &Self::Th<'e>, _s: &'e Self::Slot) -> Option<Result<(), MonitorError>> {
        None
    }
    /// Unstructured exit, where the surface has it.
    fn exit_u<'e>(_th: &Self::Th<'e>, _s: &'e Self::Slot) -> Option<Result<(), MonitorError>> {
        None
    }
    /// Interrupts thread `id`, where the surface can.
    fn interrupt(&self, _id: ThreadId) -> Option<Result<(), MonitorError>> {
        None
    }
    /// Reads and clears this thread's interrupt status, where the surface has one.
    fn interrupted(_th: &Self::Th<'_>) -> Option<bool> {
        None
    }
    /// Safepoint poll (a no-op where the surface has none).
    fn poll(_th: &Self::Th<'_>) {}
    /// Runs `f` "in native" (`ThreadHandle::in_native`), where the surface has it.
    fn native<R>(_th: &Self::Th<'_>, _f: impl FnOnce() -> R) -> Option<R> {
        None
    }
    /// The calling thread's id on the runtime, if it is attached there (it is while it makes
    /// a call): what an event delivered to it must name (`crate::sink`).
    fn current_id(&self) -> Option<ThreadId>;
}

/// `Monitor<Payload, P, Arc<Runtime<P>>>` on a fresh runtime per case.
pub struct MonitorKit<P: MonitorProtocol>(Arc<Runtime<P>>);

type M<P> = Monitor<Payload, P, Arc<Runtime<P>>>;

impl<P: MonitorProtocol> Kit for MonitorKit<P> {
    const PROTOCOL: &'static str = P::NAME;
    const SURFACE: &'static str = "monitor";
    const WAIT_BY_GUARD: bool = true;
    type Slot = M<P>;
    type Anchor = ();
    type Th<'env> = ();
    type G<'a> = MonitorGuard<'a, Payload, P, Arc<Runtime<P>>>;

    fn new(events: Option<Arc<dyn EventSink>>) -> Self {
        Self(Runtime::new(Config {
            events,
            ..Config::default()
        }))
    }
    fn current_id(&self) -> Option<ThreadId> {
        self.0.attach().ok().map(|h| h.id())
    }
    fn slot(&self) -> M<P> {
        Monitor::with_runtime(&self.0, Payload)
    }
    fn retire(&self, _: &mut M<P>) {}
    fn anchor(&self) {}
    fn id(_: &()) -> Option<ThreadId> {
        None
    }
    #[allow(clippy::unused_unit)]
    fn attach<'env>(&self) -> Self::Th<'env> {}
    fn lock<'a>(_: &'a (), s: &'a M<P>) -> Result<Self::G<'a>, MonitorError> {
        Ok(s.lock())
    }
    fn try_lock<'a>(_: &'a (), s: &'a M<P>) -> Result<Option<Self::G<'a>>, MonitorError> {
        Ok(s.try_lock())
    }
    fn try_lock_for<'a>(
        _: &'a (),
        s: &'a M<P>,
        d: Duration,
    ) -> Result<Option<Self::G<'a>>, MonitorError> {
        Ok(s.try_lock_for(d))
    }
    fn wait(
        _: &(),
        g: Option<&mut Self::G<'_>>,
        _: &M<P>,
        t: Option<Duration>,
    ) -> Option<Result<WaitOutcome, MonitorError>> {
        Some(g?.wait(t))
    }
    fn notify(
        _: &(),
        g: Option<&Self::G<'_>>,
        _: &M<P>,
        all: bool,
    ) -> Option<Result<(), MonitorError>> {
        let g = g?;
        if all {
            g.notify_all()
        } else {
            g.notify()
        }
        Some(Ok(()))
    }
    fn holds(_: &(), s: &M<P>) -> Option<bool> {
        Some(s.is_owned_by_current_thread())
    }
    fn count(_: &(), _: &M<P>) -> Option<u32> {
        None
    }
    fn is_locked(_: &(), s: &M<P>) -> bool {
        s.is_locked()
    }
}

/// Threads of the process that may retire their id on a `lock_api` surface's process-wide
/// runtime through a forgotten guard, per protocol: fewer than `MAX_THREAD_ID` (32767), with
/// room left for the threads alive at once (three workers per case, cases of other tests of
/// the same process in parallel, thread-local destructors).
pub const LOCK_API_ID_BUDGET: u32 = 30_000;

/// Threads counted by [`retire_id`], per protocol, in this process.
static RETIRED: Mutex<Vec<(&'static str, u32)>> = Mutex::new(Vec::new());

/// Counts one more thread that keeps its id on protocol `name`'s process-wide runtime for
/// good (its first forgotten guard there), if the budget `budget` allows: `false` if it is
/// spent (the caller then does not forget).
pub fn retire_id(name: &'static str, budget: u32) -> bool {
    let mut r = RETIRED.lock().unwrap_or_else(|e| e.into_inner());
    let i = match r.iter().position(|(n, _)| *n == name) {
        Some(i) => i,
        None => {
            r.push((name, 0));
            r.len() - 1
        }
    };
    if r[i].1 >= budget {
        return false;
    }
    r[i].1 += 1;
    true
}

/// The threads [`retire_id`] counted on protocol `name` in this process.
pub fn retired_ids(name: &str) -> u32 {
    let r = RETIRED.lock().unwrap_or_else(|e| e.into_inner());
    r.iter().find(|(n, _)| *n == name).map_or(0, |(_, k)| *k)
}

/// What a [`LockApiKit`] case swaps, replaces and boxes: a lock_api mutex on a `RawMonitor`
/// and the condvar bound to it (they move together; nobody waits while they move).
pub struct LockApiSlot<P: MonitorProtocol> {
    mutex: objmon::lock_api::Mutex<RawMonitor<P>, Payload>,
    cv: objmon::lock_api::Condvar<RawCondvar<P>>,
}

/// `objmon::lock_api::Mutex<RawMonitor<P>, Payload>` and
/// `objmon::lock_api::Condvar<RawCondvar<P>>`, on `P`'s process-wide runtime (shared by every
/// case of the process: see the module documentation for its ids). Not reentrant; no
/// identity hash, unstructured locks, interrupts, holds-lock query or lock count.
pub struct LockApiKit<P: MonitorProtocol>(PhantomData<fn() -> P>);

impl<P: MonitorProtocol> Kit for LockApiKit<P> {
    const PROTOCOL: &'static str = P::NAME;
    const SURFACE: &'static str = "lock-api";
    const REENTRANT: bool = false;
    const WAIT_BY_GUARD: bool = true;
    const NOTIFY_UNLOCKED: bool = true;
    const ID_BUDGET: Option<u32> = Some(LOCK_API_ID_BUDGET);
    type Slot = LockApiSlot<P>;
    type Anchor = ();
    type Th<'env> = ();
    type G<'a> = objmon::lock_api::MutexGuard<'a, RawMonitor<P>, Payload>;

    fn new(_: Option<Arc<dyn EventSink>>) -> Self {
        Self(PhantomData)
    }
    fn current_id(&self) -> Option<ThreadId> {
        objmon::vm::global_runtime::<P>()
            .attach()
            .ok()
            .map(|h| h.id())
    }
    fn slot(&self) -> LockApiSlot<P> {
        LockApiSlot {
            mutex: objmon::lock_api::Mutex::new(Payload),
            cv: objmon::lock_api::Condvar::new(),
        }
    }
    // `RawMonitor`'s own drop reclaims the header.
    fn retire(&self, _: &mut LockApiSlot<P>) {}
    fn anchor(&self) {}
    fn id(_: &()) -> Option<ThreadId> {
        None
    }
    #[allow(clippy::unused_unit)]
    fn attach<'env>(&self) -> Self::Th<'env> {}
    fn lock<'a>(_: &'a (), s: &'a LockApiSlot<P>) -> Result<Self::G<'a>, MonitorError> {
        Ok(s.mutex.lock())
    }
    fn try_lock<'a>(_: &'a (), s: &'a LockApiSlot<P>) -> Result<Option<Self::G<'a>>, MonitorError> {
        Ok(s.mutex.try_lock())
    }
    fn try_lock_for<'a>(
        _: &'a (),
        s: &'a LockApiSlot<P>,
        d: Duration,
    ) -> Result<Option<Self::G<'a>>, MonitorError> {
        Ok(s.mutex.try_lock_for(d))
    }
    fn wait(
        _: &(),
        g: Option<&mut Self::G<'_>>,
        s: &LockApiSlot<P>,
        t: Option<Duration>,
    ) -> Option<Result<WaitOutcome, MonitorError>> {
        let g = g?;
        Some(Ok(match t {
            None => {
                s.cv.wait(g);
                WaitOutcome::Notified
            }
            Some(d) if s.cv.wait_for(g, d).timed_out() => WaitOutcome::TimedOut,
            Some(_) => WaitOutcome::Notified,
        }))
    }
    fn notify(
        _: &(),
        _: Option<&Self::G<'_>>,
        s: &LockApiSlot<P>,
        all: bool,
    ) -> Option<Result<(), MonitorError>> {
        // With or without the mutex held (condvar.rs: a notifier that does not hold it takes
        // it for the notify); the answers are always `false` / `0` (spurious wake-ups).
        if all {
            s.cv.notify_all();
        } else {
            s.cv.notify_one();
        }
        Some(Ok(()))
    }
    fn holds(_: &(), _: &LockApiSlot<P>) -> Option<bool> {
        None
    }
    fn count(_: &(), _: &LockApiSlot<P>) -> Option<u32> {
        None
    }
    fn is_locked(_: &(), s: &LockApiSlot<P>) -> bool {
        s.mutex.is_locked()
    }
}

/// `vm::Runtime::attach`, `ThreadHandle` and `HeaderGuard` over bare headers.
pub struct VmKit<P: Protocol>(Arc<Runtime<P>>);

impl<P: Protocol> Kit for VmKit<P> {
    const PROTOCOL: &'static str = P::NAME;
    const SURFACE: &'static str = "vm";
    type Slot = P::Header;
    type Anchor = ThreadHandle<'static, P>;
    type Th<'env> = ThreadHandle<'env, P>;
    type G<'a> = objmon::vm::HeaderGuard<'a, P>;

    fn new(events: Option<Arc<dyn EventSink>>) -> Self {
        // SAFETY: `new_unchecked`'s contracts, as a host keeps them: the signal adversary's
        // handler keeps the barrier signal blocked (`signal.rs`) unless the run asks to break
        // that on purpose (`--unmasked-signals`), and the adversary moves no live object of
        // a protocol with `HOST_MOVE_CONTRACT` (`Target::movable`) unless asked
        // (`--moves-everywhere`).
        Self(unsafe {
            Runtime::new_unchecked(Config {
                events,
                ..Config::default()
            })
        })
    }
    fn current_id(&self) -> Option<ThreadId> {
        self.0.attach().ok().map(|h| h.id())
    }
    fn slot(&self) -> P::Header {
        P::Header::default()
    }
    fn retire(&self, s: &mut P::Header) {
        self.0.reclaim(s)
    }
    fn anchor(&self) -> ThreadHandle<'static, P> {
        self.0.attach().expect("attach")
    }
    fn id(a: &ThreadHandle<'static, P>) -> Option<ThreadId> {
        Some(a.id())
    }
    fn attach<'env>(&self) -> ThreadHandle<'env, P> {
        self.0.attach().expect("attach")
    }
    fn lock<'a>(th: &'a Self::Th<'_>, s: &'a P::Header) -> Result<Self::G<'a>, MonitorError> {
        th.enter(s)
    }
    fn try_lock<'a>(
        th: &'a Self::Th<'_>,
        s: &'a P::Header,
    ) -> Result<Option<Self::G<'a>>, MonitorError> {
        th.try_enter(s)
    }
    fn try_lock_for<'a>(
        th: &'a Self::Th<'_>,
        s: &'a P::Header,
        d: Duration,
    ) -> Result<Option<Self::G<'a>>, MonitorError> {
        let deadline = Instant::now() + d;
        loop {
            if let Some(g) = th.try_enter(s)? {
                return Ok(Some(g));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    fn wait(
        th: &Self::Th<'_>,
        _: Option<&mut Self::G<'_>>,
        s: &P::Header,
        t: Option<Duration>,
    ) -> Option<Result<WaitOutcome, MonitorError>> {
        Some(th.wait(s, t))
    }
    fn notify(
        th: &Self::Th<'_>,
        _: Option<&Self::G<'_>>,
        s: &P::Header,
        all: bool,
    ) -> Option<Result<(), MonitorError>> {
        Some(if all { th.notify_all(s) } else { th.notify(s) })
    }
    fn holds(th: &Self::Th<'_>, s: &P::Header) -> Option<bool> {
        Some(th.holds_lock(s))
    }
    fn count(th: &Self::Th<'_>, s: &P::Header) -> Option<u32> {
        Some(th.lock_count(s))
    }
    fn is_locked(th: &Self::Th<'_>, s: &P::Header) -> bool {
        th.runtime().owner_of(s).is_some()
    }
    fn hash(th: &Self::Th<'_>, s: &P::Header) -> Option<Result<u32, MonitorError>> {
        Some(th.identity_hash(s))
    }
    fn peek(th: &Self::Th<'_>, s: &P::Header) -> Option<Option<u32>> {
        Some(th.runtime().peek_identity_hash(s))
    }
    fn enter_u<'e>(th: &Self::Th<'e>, s: &'e P::Header) -> Option<Result<(), MonitorError>> {
        Some(th.monitor_enter(s))
    }
    fn exit_u<'e>(th: &Self::Th<'e>, s: &'e P::Header) -> Option<Result<(), MonitorError>> {
        Some(th.monitor_exit(s))
    }
    fn interrupt(&self, id: ThreadId) -> Option<Result<(), MonitorError>> {
        Some(self.0.interrupt(id))
    }
    fn interrupted(th: &Self::Th<'_>) -> Option<bool> {
        Some(th.interrupted())
    }
    fn native<R>(th: &Self::Th<'_>, f: impl FnOnce() -> R) -> Option<R> {
        Some(th.in_native(f))
    }
    fn poll(th: &Self::Th<'_>) {
        th.poll()
    }
}
