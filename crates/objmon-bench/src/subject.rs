//! What a benchmark locks: every objmon protocol, the anchors a user would pick instead, and
//! the speed-of-light rows — all behind one small trait, so each benchmark is written once.
//!
//! A [`Subject`] is a kind of lockable object plus the per-runtime and per-thread state needed
//! to lock it. Protocols come in through [`objmon::vm::visit_all`] (one generic adapter,
//! [`Proto`]); nothing here names a protocol, so a protocol added to the catalog is measured
//! with no change to this crate.

use objmon::vm::{
    Config, HeaderGuard, Knob, KnobError, Protocol, ProtocolVisitor, Runtime, SystemLockVariant,
    ThreadHandle,
};
use objmon::Thin;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Which group a row belongs to in the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A floor: no real lock (or a bare atomic sequence).
    SpeedOfLight,
    /// An objmon protocol from the catalog.
    Protocol,
    /// A lock from outside objmon that a user could pick instead.
    Anchor,
    /// A bare system lock (seed 004 §5.1), only in `system-monitor`.
    SystemLock,
    /// A HotSpot JVM running the Java versions of the benchmarks.
    Hotspot,
}

impl Kind {
    /// The name used in JSON and in the report.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::SpeedOfLight => "speed-of-light",
            Kind::Protocol => "protocol",
            Kind::Anchor => "anchor",
            Kind::SystemLock => "system-lock",
            Kind::Hotspot => "hotspot",
        }
    }
}

/// A lockable kind of object with its runtime and thread state (see the module docs).
///
/// `lock` returns a guard; dropping it unlocks one level. Benchmarks only wait while holding
/// the object once, so [`Subject::wait`] may assume depth 1.
pub trait Subject: 'static {
    /// Row name (the protocol's catalog name for protocols).
    const NAME: &'static str;
    /// Row group.
    const KIND: Kind;
    /// Whether the owner may lock again while holding (nested benchmarks need it).
    const REENTRANT: bool;
    /// Whether it excludes other threads (multi-threaded benchmarks need it).
    const EXCLUSIVE: bool;
    /// Whether it has wait / notifyAll.
    const WAIT: bool;

    /// Shared by all threads (objmon's `Runtime`).
    type Rt: Send + Sync;
    /// The object as the host embeds it.
    type Obj: Send + Sync;
    /// One attached thread.
    type Thread;
    /// A held lock.
    type Guard<'a>
    where
        Self: 'a;

    /// A fresh runtime.
    fn runtime() -> Self::Rt;
    /// A fresh, unlocked object.
    fn new_obj() -> Self::Obj;
    /// Attaches the calling thread.
    fn attach(rt: &Self::Rt) -> Self::Thread;
    /// monitorenter; the guard's drop is monitorexit.
    ///
    /// Every implementation is `#[inline(always)]`, and so are the guards' drops: a user's
    /// loop calls `ThreadHandle::enter` (itself `#[inline(always)]`), `Monitor::lock` or
    /// `Mutex::lock` directly, and this wrapper must not add a call the user's loop does not
    /// have. A mere hint (`#[inline]`) lets LLVM leave the larger locks (`fable`'s) out of
    /// line in Cloud's worker: a call and five pushes and pops per acquisition that a user's
    /// loop does not pay (test `userloop::tests::fable_takes_a_thin_word_inline`; the
    /// figures are in docs/benchmarks.md, "Bench notes moved out of the code").
    fn lock<'a>(t: &'a Self::Thread, o: &'a Self::Obj) -> Self::Guard<'a>;
    /// Object.wait with a timeout (depth 1). Only called where [`WAIT`](Self::WAIT) is true;
    /// the default (for subjects without it) panics.
    fn wait(_g: &mut Self::Guard<'_>, _timeout: Duration) {
        unreachable!("{} has no wait", Self::NAME)
    }
    /// Object.notifyAll. As [`wait`](Self::wait): the default panics.
    fn notify_all(_g: &Self::Guard<'_>) {
        unreachable!("{} has no notify", Self::NAME)
    }
    /// The object is dead (GC hook): give back whatever it holds. The default gives back
    /// nothing (an object that holds nothing outside itself).
    fn retire(_rt: &Self::Rt, _o: &mut Self::Obj) {}
    /// Fat monitors alive now, where the subject has such a thing (default: it has not).
    fn live_monitors(_rt: &Self::Rt) -> Option<usize> {
        None
    }
    /// Bias revocations so far, where the subject biases (Cloud's per-repetition table).
    fn revocations(_rt: &Self::Rt) -> Option<u64> {
        None
    }
    /// A row that differs from another only where threads contend (the system lock's
    /// release): run in [`Bench::Threads`](crate::bench::Bench::Threads) only.
    const CONTENDED_ONLY: bool = false;

    /// The subject's tuning knob: an objmon protocol's [`Protocol::KNOB`], `None` for
    /// everything else. Benches that sweep it
    /// ([`Bench::sweeps_knob`](crate::bench::Bench::sweeps_knob)) add one row per value, named
    /// by [`knob_row`].
    const KNOB: Option<Knob> = None;
    /// Sets the knob in a fresh runtime ([`Protocol::set_knob`]); refused by default.
    fn set_knob(_rt: &Self::Rt, _value: u32) -> Result<(), KnobError> {
        Err(KnobError::NoKnob)
    }
}

/// The row name of subject `name` with its knob at `value`: `fable[learn-limit=3]`.
pub fn knob_row(name: &str, knob: &Knob, value: u32) -> String {
    format!("{name}[{}={value}]", knob.name)
}

/// The rows of [`knob_row`] as one pattern, for prose: `fable[learn-limit=N]`.
pub fn knob_family(name: &str, knob: &Knob) -> String {
    format!("{name}[{}=N]", knob.name)
}

/// Something to run once per subject (see [`visit_subjects`]).
pub trait SubjectVisitor {
    /// Called once per subject.
    fn visit<S: Subject>(&mut self);
}

/// Visits the speed-of-light rows, then every protocol of [`objmon::vm::visit_all`] in catalog
/// order, then the anchors.
pub fn visit_subjects(v: &mut impl SubjectVisitor) {
    v.visit::<SolEmpty>();
    v.visit::<SolCasStore>();
    v.visit::<SolCasCas>();
    v.visit::<SolPlainPair>();
    struct Adapter<'a, V>(&'a mut V);
    impl<V: SubjectVisitor> ProtocolVisitor for Adapter<'_, V> {
        fn visit<P: Protocol>(&mut self) {
            self.0.visit::<Proto<P>>();
        }
    }
    objmon::vm::visit_all(&mut Adapter(v));
    v.visit::<ThinFig7>();
    v.visit::<MonitorT>();
    v.visit::<StdMutex>();
    v.visit::<ParkingLot>();
    v.visit::<ParkingLotMutex>();
}

/// Every subject that has a knob, with it, in visiting order.
pub fn knobs() -> Vec<(&'static str, Knob)> {
    struct Knobs(Vec<(&'static str, Knob)>);
    impl SubjectVisitor for Knobs {
        fn visit<S: Subject>(&mut self) {
            if let Some(k) = S::KNOB {
                self.0.push((S::NAME, k));
            }
        }
    }
    let mut k = Knobs(Vec::new());
    visit_subjects(&mut k);
    k.0
}

/// Every subject's name and kind, in visiting order.
pub fn subject_names() -> Vec<(&'static str, Kind)> {
    struct Names(Vec<(&'static str, Kind)>);
    impl SubjectVisitor for Names {
        fn visit<S: Subject>(&mut self) {
            self.0.push((S::NAME, S::KIND));
        }
    }
    let mut n = Names(Vec::new());
    visit_subjects(&mut n);
    n.0
}

// ---------------------------------------------------------------------------------------------
// Protocols

/// An objmon protocol as a subject, through the public API a user calls: `lock` is
/// [`ThreadHandle::enter`] and the guard is its [`HeaderGuard`], whose drop is monitorexit.
/// A benchmark loop over this subject compiles to the loop a user writes
/// (`for _ in 0..n { let g = me.enter(&h).unwrap(); drop(g); }`), including whatever
/// bookkeeping the handle does for its guards.
pub struct Proto<P>(PhantomData<P>);

#[cold]
#[inline(never)]
fn failed(name: &str, what: &str) -> ! {
    panic!("{name}: {what} failed in a benchmark (a protocol bug)")
}

impl<P: Protocol> Subject for Proto<P> {
    const NAME: &'static str = P::NAME;
    const KIND: Kind = Kind::Protocol;
    const REENTRANT: bool = true;
    const EXCLUSIVE: bool = true;
    const WAIT: bool = true;
    type Rt = Arc<Runtime<P>>;
    type Obj = P::Header;
    type Thread = ThreadHandle<'static, P>;
    type Guard<'a> = HeaderGuard<'a, P>;

    fn runtime() -> Self::Rt {
        // SAFETY: the benchmark installs no signal handler of its own (std's fault handlers
        // run only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        unsafe { Runtime::new_unchecked(Config::default()) }
    }
    fn new_obj() -> P::Header {
        P::Header::default()
    }
    fn attach(rt: &Self::Rt) -> Self::Thread {
        rt.attach().expect("attach")
    }
    #[inline(always)]
    fn lock<'a>(t: &'a Self::Thread, o: &'a P::Header) -> HeaderGuard<'a, P> {
        match t.enter(o) {
            Ok(g) => g,
            Err(_) => failed(P::NAME, "enter"),
        }
    }
    fn wait(g: &mut HeaderGuard<'_, P>, timeout: Duration) {
        if g.wait(Some(timeout)).is_err() {
            failed(P::NAME, "wait");
        }
    }
    fn notify_all(g: &HeaderGuard<'_, P>) {
        if g.notify_all().is_err() {
            failed(P::NAME, "notifyAll");
        }
    }
    fn retire(rt: &Self::Rt, o: &mut P::Header) {
        rt.reclaim(o);
    }
    fn live_monitors(rt: &Self::Rt) -> Option<usize> {
        Some(rt.stats_snapshot().live_monitors)
    }
    fn revocations(rt: &Self::Rt) -> Option<u64> {
        let any: &dyn std::any::Any = rt.state(); // every biased flavor's is a `BiasState`
        any.downcast_ref::<objmon::protocol::biased::BiasState>()
            .map(|b| b.revocations().total())
    }
    const KNOB: Option<Knob> = P::KNOB;
    fn set_knob(rt: &Self::Rt, value: u32) -> Result<(), KnobError> {
        P::set_knob(rt, value)
    }
}

/// `thin-fig7`: `thin` on the seed's own system-lock release, Figure 7 of seed 004 (one
/// `SeqCst` fence per release), beside `thin` on the default (Figure 7 with the fence moved
/// to the suspender's `membarrier`, `objmon::lab::TasukiLock`): the faithful variant the
/// improvement is measured against. Contended benches only: an uncontended `thin` lock never
/// reaches its system lock.
pub enum ThinFig7 {}

impl Subject for ThinFig7 {
    const NAME: &'static str = "thin-fig7";
    const KIND: Kind = Kind::Protocol;
    const REENTRANT: bool = true;
    const EXCLUSIVE: bool = true;
    const WAIT: bool = true;
    const CONTENDED_ONLY: bool = true;
    type Rt = <Proto<Thin> as Subject>::Rt;
    type Obj = <Proto<Thin> as Subject>::Obj;
    type Thread = <Proto<Thin> as Subject>::Thread;
    type Guard<'a> = <Proto<Thin> as Subject>::Guard<'a>;

    fn runtime() -> Self::Rt {
        let mut config = Config::default();
        config.system_lock.variant = SystemLockVariant::Figure7;
        Runtime::new(config)
    }
    fn new_obj() -> Self::Obj {
        Proto::<Thin>::new_obj()
    }
    fn attach(rt: &Self::Rt) -> Self::Thread {
        Proto::<Thin>::attach(rt)
    }
    #[inline(always)]
    fn lock<'a>(t: &'a Self::Thread, o: &'a Self::Obj) -> Self::Guard<'a> {
        Proto::<Thin>::lock(t, o)
    }
    fn wait(g: &mut Self::Guard<'_>, timeout: Duration) {
        Proto::<Thin>::wait(g, timeout)
    }
    fn notify_all(g: &Self::Guard<'_>) {
        Proto::<Thin>::notify_all(g)
    }
    fn retire(rt: &Self::Rt, o: &mut Self::Obj) {
        Proto::<Thin>::retire(rt, o)
    }
    fn live_monitors(rt: &Self::Rt) -> Option<usize> {
        Proto::<Thin>::live_monitors(rt)
    }
}

// ---------------------------------------------------------------------------------------------
// Anchors

/// `monitor`: `objmon::Monitor<()>`, the Rust user's type — the default protocol on its
/// process-wide runtime, no handle, threads attached on first use. Beside the anchors, since
/// it is what a Rust program picks instead of them; its protocol row (`thin`) measures the
/// same protocol through the embedder's handle.
pub enum MonitorT {}

impl Subject for MonitorT {
    const NAME: &'static str = "monitor";
    const KIND: Kind = Kind::Anchor;
    const REENTRANT: bool = true;
    const EXCLUSIVE: bool = true;
    const WAIT: bool = true;

    type Rt = ();
    type Obj = objmon::Monitor<()>;
    type Thread = ();
    type Guard<'a> = objmon::MonitorGuard<'a, ()>;

    fn runtime() {}
    fn new_obj() -> objmon::Monitor<()> {
        objmon::Monitor::new(())
    }
    fn attach(_: &()) {}
    #[inline(always)]
    fn lock<'a>(_: &'a (), o: &'a objmon::Monitor<()>) -> objmon::MonitorGuard<'a, ()> {
        o.lock()
    }
    fn wait(g: &mut objmon::MonitorGuard<'_, ()>, timeout: Duration) {
        if g.wait(Some(timeout)).is_err() {
            failed("monitor", "wait");
        }
    }
    fn notify_all(g: &objmon::MonitorGuard<'_, ()>) {
        g.notify_all();
    }
    fn retire(_: &(), o: &mut objmon::Monitor<()>) {
        // Dropping the old monitor gives its fat monitor back.
        *o = objmon::Monitor::new(());
    }
    fn live_monitors(_: &()) -> Option<usize> {
        // The process-wide runtime is shared by every `monitor` row of the run.
        None
    }
}

/// `std-mutex`: `std::sync::Mutex<()>` with a `Condvar`, the lock a Rust user reaches for
/// first. Not reentrant (std's `ReentrantLock` is still unstable in Rust 1.95), so the nested
/// benchmarks skip it.
pub enum StdMutex {}

/// A std mutex and its condition variable: one object's monitor.
#[derive(Default)]
pub struct StdMonitor {
    m: std::sync::Mutex<()>,
    cv: std::sync::Condvar,
}

/// A held std mutex; `None` only while waiting.
pub struct StdGuard<'a> {
    g: Option<std::sync::MutexGuard<'a, ()>>,
    cv: &'a std::sync::Condvar,
}

impl Subject for StdMutex {
    const NAME: &'static str = "std-mutex";
    const KIND: Kind = Kind::Anchor;
    const REENTRANT: bool = false;
    const EXCLUSIVE: bool = true;
    const WAIT: bool = true;
    type Rt = ();
    type Obj = StdMonitor;
    type Thread = ();
    type Guard<'a> = StdGuard<'a>;

    fn runtime() {}
    fn new_obj() -> StdMonitor {
        StdMonitor::default()
    }
    fn attach(_: &()) {}
    #[inline(always)]
    fn lock<'a>(_: &'a (), o: &'a StdMonitor) -> StdGuard<'a> {
        StdGuard {
            g: Some(o.m.lock().unwrap_or_else(|e| e.into_inner())),
            cv: &o.cv,
        }
    }
    fn wait(g: &mut StdGuard<'_>, timeout: Duration) {
        let held = g.g.take().expect("held");
        let (held, _) =
            g.cv.wait_timeout(held, timeout)
                .unwrap_or_else(|e| e.into_inner());
        g.g = Some(held);
    }
    fn notify_all(g: &StdGuard<'_>) {
        g.cv.notify_all();
    }
}

/// `parking-lot`: `parking_lot::ReentrantMutex<()>`. parking_lot's `Condvar` pairs only with
/// its `Mutex`, so wait / notifyAll use a side `Mutex<()>` + `Condvar` taken while the
/// reentrant mutex is held: the waiter takes the side mutex before releasing the reentrant one
/// and the condvar releases the side mutex atomically, so a notifier (who must hold the
/// reentrant mutex, then the side mutex) cannot slip in between. Waits at depth 1 only.
pub enum ParkingLot {}

/// A parking_lot monitor: the reentrant mutex and the wait set.
#[derive(Default)]
pub struct PlMonitor {
    m: parking_lot::ReentrantMutex<()>,
    side: parking_lot::Mutex<()>,
    cv: parking_lot::Condvar,
}

/// A held parking_lot reentrant mutex.
pub struct PlGuard<'a> {
    g: parking_lot::ReentrantMutexGuard<'a, ()>,
    o: &'a PlMonitor,
}

impl Subject for ParkingLot {
    const NAME: &'static str = "parking-lot";
    const KIND: Kind = Kind::Anchor;
    const REENTRANT: bool = true;
    const EXCLUSIVE: bool = true;
    const WAIT: bool = true;
    type Rt = ();
    type Obj = PlMonitor;
    type Thread = ();
    type Guard<'a> = PlGuard<'a>;

    fn runtime() {}
    fn new_obj() -> PlMonitor {
        PlMonitor::default()
    }
    fn attach(_: &()) {}
    #[inline(always)]
    fn lock<'a>(_: &'a (), o: &'a PlMonitor) -> PlGuard<'a> {
        PlGuard { g: o.m.lock(), o }
    }
    fn wait(g: &mut PlGuard<'_>, timeout: Duration) {
        let cv = &g.o.cv;
        let mut side = g.o.side.lock();
        parking_lot::ReentrantMutexGuard::unlocked(&mut g.g, || {
            cv.wait_for(&mut side, timeout);
            drop(side);
        });
    }
    fn notify_all(g: &PlGuard<'_>) {
        let _side = g.o.side.lock();
        g.o.cv.notify_all();
    }
}

/// `parking-lot-mutex`: `parking_lot::Mutex<()>` with its `Condvar` — the fastest lock a Rust
/// user is likely to pick (one CAS to lock, one to unlock). Not reentrant, so the nested
/// benchmarks skip it; [`ParkingLot`] is the reentrant anchor.
pub enum ParkingLotMutex {}

/// A parking_lot mutex and its condition variable: one object's monitor.
#[derive(Default)]
pub struct PlMutexMonitor {
    m: parking_lot::Mutex<()>,
    cv: parking_lot::Condvar,
}

/// A held parking_lot mutex.
pub struct PlMutexGuard<'a> {
    g: parking_lot::MutexGuard<'a, ()>,
    cv: &'a parking_lot::Condvar,
}

impl Subject for ParkingLotMutex {
    const NAME: &'static str = "parking-lot-mutex";
    const KIND: Kind = Kind::Anchor;
    const REENTRANT: bool = false;
    const EXCLUSIVE: bool = true;
    const WAIT: bool = true;
    type Rt = ();
    type Obj = PlMutexMonitor;
    type Thread = ();
    type Guard<'a> = PlMutexGuard<'a>;

    fn runtime() {}
    fn new_obj() -> PlMutexMonitor {
        PlMutexMonitor::default()
    }
    fn attach(_: &()) {}
    #[inline(always)]
    fn lock<'a>(_: &'a (), o: &'a PlMutexMonitor) -> PlMutexGuard<'a> {
        PlMutexGuard {
            g: o.m.lock(),
            cv: &o.cv,
        }
    }
    fn wait(g: &mut PlMutexGuard<'_>, timeout: Duration) {
        g.cv.wait_for(&mut g.g, timeout);
    }
    fn notify_all(g: &PlMutexGuard<'_>) {
        g.cv.notify_all();
    }
}

// ---------------------------------------------------------------------------------------------
// Speed of light

/// A speed-of-light lock: one word, no runtime, no thread state; what [`acquire`](Self::acquire)
/// and [`release`](Self::release) do is the whole cost the row measures. [`Bare`] makes it a
/// [`Subject`].
pub trait BareLock: 'static {
    /// Row name.
    const NAME: &'static str;
    /// As [`Subject::REENTRANT`].
    const REENTRANT: bool;
    /// As [`Subject::EXCLUSIVE`].
    const EXCLUSIVE: bool;
    /// Takes the word.
    fn acquire(o: &AtomicU32);
    /// Gives the word back (the guard's drop).
    fn release(o: &AtomicU32);
}

/// The [`Subject`] of a [`BareLock`] `L`: no runtime, no thread state, no wait.
pub struct Bare<L>(PhantomData<L>);

/// A held [`Bare`] word: its drop is `L::release`.
pub struct BareGuard<'a, L: BareLock>(&'a AtomicU32, PhantomData<L>);

impl<L: BareLock> Drop for BareGuard<'_, L> {
    #[inline(always)]
    fn drop(&mut self) {
        L::release(self.0);
    }
}

impl<L: BareLock> Subject for Bare<L> {
    const NAME: &'static str = L::NAME;
    const KIND: Kind = Kind::SpeedOfLight;
    const REENTRANT: bool = L::REENTRANT;
    const EXCLUSIVE: bool = L::EXCLUSIVE;
    const WAIT: bool = false;
    type Rt = ();
    type Obj = AtomicU32;
    type Thread = ();
    type Guard<'a> = BareGuard<'a, L>;

    fn runtime() {}
    fn new_obj() -> AtomicU32 {
        AtomicU32::new(0)
    }
    fn attach(_: &()) {}
    #[inline(always)]
    fn lock<'a>(_: &'a (), o: &'a AtomicU32) -> BareGuard<'a, L> {
        L::acquire(o);
        BareGuard(o, PhantomData)
    }
}

/// `sol-empty`: locking does nothing — the benchmark's own loop, the floor of every row.
pub type SolEmpty = Bare<Empty>;

/// [`SolEmpty`]'s lock: the word's reference through `black_box`, nothing else.
pub enum Empty {}

impl BareLock for Empty {
    const NAME: &'static str = "sol-empty";
    const REENTRANT: bool = true;
    const EXCLUSIVE: bool = false;
    #[inline]
    fn acquire(o: &AtomicU32) {
        std::hint::black_box(o);
    }
    #[inline]
    fn release(_: &AtomicU32) {}
}

/// Spins until `o` goes 0 → 1 (a test-and-test-and-set lock that yields when it waits long).
#[inline]
fn spin_acquire(o: &AtomicU32) {
    if o.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        spin_acquire_slow(o);
    }
}

#[cold]
fn spin_acquire_slow(o: &AtomicU32) {
    let mut spins = 0u32;
    loop {
        while o.load(Ordering::Relaxed) != 0 {
            spins += 1;
            if spins.is_multiple_of(64) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        if o.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
    }
}

/// `sol-cas-store`: a bare compare-and-swap to lock and a release store to unlock — the
/// single-atomic floor (thin locks, tasuki's uncontended path). Not reentrant.
pub type SolCasStore = Bare<CasStore>;

/// [`SolCasStore`]'s lock.
pub enum CasStore {}

impl BareLock for CasStore {
    const NAME: &'static str = "sol-cas-store";
    const REENTRANT: bool = false;
    const EXCLUSIVE: bool = true;
    #[inline]
    fn acquire(o: &AtomicU32) {
        spin_acquire(o);
    }
    #[inline]
    fn release(o: &AtomicU32) {
        o.store(0, Ordering::Release);
    }
}

/// `sol-cas-cas`: compare-and-swap to lock and again to unlock — the double-atomic floor
/// (Jikes RVM's thin-lock unlock of seed 002 Figure 2, and most pthread mutexes).
pub type SolCasCas = Bare<CasCas>;

/// [`SolCasCas`]'s lock.
pub enum CasCas {}

impl BareLock for CasCas {
    const NAME: &'static str = "sol-cas-cas";
    const REENTRANT: bool = false;
    const EXCLUSIVE: bool = true;
    #[inline]
    fn acquire(o: &AtomicU32) {
        spin_acquire(o);
    }
    #[inline]
    fn release(o: &AtomicU32) {
        let r = o.compare_exchange(1, 0, Ordering::Release, Ordering::Relaxed);
        debug_assert!(r.is_ok());
    }
}

/// The owner id [`SolPlainPair`] stores: any non-zero value.
const PLAIN_OWNER: u32 = 1;

/// `sol-plain-pair`: lock and unlock each a plain load, a compare and a store (no locked
/// instruction, no fence) — the limit of a lock whose owner alone writes the word: a bias
/// owner's lock+unlock, thin's nested path (load, xor-compare, store). Lock checks the word is
/// free and stores the owner; unlock checks the owner and stores 0 (release). It excludes no
/// other thread, so the multi-threaded benches skip it.
pub type SolPlainPair = Bare<PlainPair>;

/// [`SolPlainPair`]'s lock.
pub enum PlainPair {}

impl BareLock for PlainPair {
    const NAME: &'static str = "sol-plain-pair";
    const REENTRANT: bool = false;
    const EXCLUSIVE: bool = false;
    #[inline]
    fn acquire(o: &AtomicU32) {
        // Relaxed, and a plain store: this row is the cost of the instructions alone; it is
        // not a lock between threads (EXCLUSIVE is false).
        if o.load(Ordering::Relaxed) != 0 {
            failed(Self::NAME, "lock");
        }
        o.store(PLAIN_OWNER, Ordering::Relaxed);
    }
    #[inline]
    fn release(o: &AtomicU32) {
        if o.load(Ordering::Relaxed) != PLAIN_OWNER {
            failed(Self::NAME, "unlock");
        }
        o.store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every subject excludes (when it says so) and nests (when it says so): a benchmark of a
    /// broken subject would measure nothing.
    #[test]
    fn subjects_lock_and_exclude() {
        struct Check;
        impl SubjectVisitor for Check {
            fn visit<S: Subject>(&mut self) {
                let rt = S::runtime();
                let o = S::new_obj();
                let counter = AtomicU32::new(0);
                let threads = if S::EXCLUSIVE { 4 } else { 1 };
                std::thread::scope(|s| {
                    for _ in 0..threads {
                        s.spawn(|| {
                            let t = S::attach(&rt);
                            for _ in 0..2000 {
                                let _g = S::lock(&t, &o);
                                if S::REENTRANT {
                                    let _g2 = S::lock(&t, &o);
                                }
                                // A racy increment: lost updates unless the lock excludes.
                                let v = counter.load(Ordering::Relaxed);
                                std::hint::spin_loop();
                                counter.store(v + 1, Ordering::Relaxed);
                            }
                        });
                    }
                });
                assert_eq!(counter.into_inner(), threads * 2000, "{}", S::NAME);
            }
        }
        visit_subjects(&mut Check);
    }

    /// wait / notifyAll hand over between two threads for every subject that has them.
    #[test]
    fn subjects_wait_and_notify() {
        struct Check;
        impl SubjectVisitor for Check {
            fn visit<S: Subject>(&mut self) {
                if !S::WAIT {
                    return;
                }
                let rt = S::runtime();
                let o = S::new_obj();
                let flag = AtomicU32::new(0);
                std::thread::scope(|s| {
                    s.spawn(|| {
                        let t = S::attach(&rt);
                        let mut g = S::lock(&t, &o);
                        while flag.load(Ordering::Relaxed) == 0 {
                            S::wait(&mut g, Duration::from_secs(5));
                        }
                    });
                    let t = S::attach(&rt);
                    let g = S::lock(&t, &o);
                    flag.store(1, Ordering::Relaxed);
                    S::notify_all(&g);
                });
                assert_eq!(flag.into_inner(), 1, "{}", S::NAME);
            }
        }
        visit_subjects(&mut Check);
    }
}
