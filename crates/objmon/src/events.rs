//! Monitor events: who waited, on what, for how long, and who held it (JFR's
//! `jdk.JavaMonitorEnter`, `…Wait`, `…Notify`, `…Inflate`, `…Deflate`, `…Statistics`, plus
//! bias revocations), delivered to an [`EventSink`] of the host's.
//!
//! **Turning them on.** Off by default. A runtime delivers events to the sink in its
//! [`Config::events`](crate::vm::Config::events); the process-wide runtimes behind
//! [`Monitor<T>`](crate::Monitor) deliver to the sink given to
//! [`set_event_sink`](crate::set_event_sink) before their first use. Off, no fast path looks
//! at events (the instruction counts of `examples/user_loop.rs` are unchanged) and each slow
//! path that could emit one tests a byte of its monitor or table once.
//!
//! **Contract of a delivery.**
//! - On the thread that had the event, after the operation (an enter, a wait or a notify is
//!   delivered while the thread holds the monitor), never under an internal lock of objmon (wait-set lock,
//!   table lock, a revoker's lock on its target): a sink may lock monitors, even the event's
//!   own. Events that happen *inside* a sink's call on that thread are dropped, not
//!   delivered, so a sink that contends cannot recurse.
//! - A sink that panics loses that event and nothing else: the panic is caught (with
//!   `panic = "abort"` it ends the process, as any panic).
//! - Events shorter than the sink's [`threshold`](EventSink::threshold) for their kind are not
//!   delivered; thresholds are asked once, when the sink is installed.
//! - Times are [`now_nanos`]: monotonic nanoseconds since a process-wide epoch, comparable
//!   across threads and runtimes. No event is ever delivered twice.
//!
//! **What each protocol emits** (`docs/architecture.md`, "Events", has the reasons):
//!
//! | event | emitted by | protocols |
//! |---|---|---|
//! | `MonitorEnter` | a fat monitor's contended enter (`monitor.rs`), a spinner on a thin-shaped header (`spin_episode.rs`) | every protocol |
//! | `MonitorWait`, `MonitorNotify` | the fat monitor's wait and notify | every protocol |
//! | `MonitorInflate` | where an inflation is counted | all but `cacao*` and `monitor-cache` (no header to inflate) |
//! | `MonitorDeflate` | where a deflation is counted | `stack`, `lightweight*`, `tasuki` |
//! | `BiasRevoke` | revocation (`revoke.rs`) | `biased*`, `fable*` |
//! | `MonitorStatistics` | on request ([`Runtime::report_statistics`](crate::vm::Runtime::report_statistics)) | every protocol |
//!
//! A contended enter is one `MonitorEnter` whatever it did: spun in the header, spun on the
//! monitor, or parked (`parked` says which). An enter that got the lock at its first try
//! emits nothing, as in JFR.
//!
//! ```
//! use objmon::events::{Event, Recorder};
//! use objmon::vm::{Config, Runtime};
//! use std::sync::Arc;
//!
//! let rec = Arc::new(Recorder::new()); // threshold 0: every event
//! let rt = Runtime::<objmon::Thin>::new(Config { events: Some(rec.clone()), ..Config::default() });
//! let t = rt.attach().unwrap();
//! let h = objmon::vm::LockWord::new(0);
//! let g = t.enter(&h).unwrap();
//! g.notify_all().unwrap(); // inflates for the wait set, then notifies nobody
//! drop(g);
//! let kinds: Vec<_> = rec.take().iter().map(Event::kind).collect();
//! use objmon::events::EventKind::*;
//! assert_eq!(kinds, [MonitorInflate, MonitorNotify]);
//! ```

use crate::thread::ThreadId;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

#[cfg(feature = "tracing")]
mod tracing_sink;
#[cfg(feature = "tracing")]
pub use tracing_sink::TracingSink;

/// Nanoseconds since the process's event epoch (the first call of this function or of any
/// event), on the monotonic clock: the time base of [`EventSite::start_nanos`].
///
/// ```
/// let a = objmon::events::now_nanos();
/// assert!(objmon::events::now_nanos() >= a);
/// ```
pub fn now_nanos() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Where and when an event happened: the part every event but
/// [`MonitorStatistics`](Event::MonitorStatistics) has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventSite {
    /// When it began, in [`now_nanos`] time.
    pub start_nanos: u64,
    /// How long it took (0 for events without extent, such as an inflation's report).
    pub duration: Duration,
    /// The thread that had the event (and to which it is delivered).
    pub thread: ThreadId,
    /// The object: its header's address. On a fat monitor, the address the monitor is
    /// bound to: where the header was when the monitor was made, or where the host last said
    /// it moved (`relocate`). A header that safe code moved since (a `mem::swap` of two
    /// `Monitor`s, a `Vec` that grew) is still named by its old address, which may now hold
    /// another object ([`object_tag`](EventSink::object_tag) is asked about that address).
    pub object: usize,
    /// The host's tag for the object ([`EventSink::object_tag`]), such as a class id.
    pub object_tag: Option<u64>,
    /// The index of the object's fat monitor, if the event happened on one.
    pub monitor: Option<u32>,
}

/// How a [`MonitorWait`](Event::MonitorWait) ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WaitEnd {
    /// A notify or notifyAll picked the waiter.
    Notified,
    /// The timeout elapsed first.
    TimedOut,
    /// The waiter was interrupted (the wait returned `MonitorError::Interrupted`).
    Interrupted,
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

/// How a bias was revoked (`revoke.rs`); also the kinds
/// [`RevocationStats`](crate::vm::RevocationStats) counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RevocationKind {
    /// Synchronous pair handshake with a running owner: stopped at its next poll.
    Sync,
    /// Asynchronous pair handshake with a running owner: it revoked at its next poll.
    Async,
    /// Membarrier (asymmetric Dekker): the owner was not asked anything.
    Membarrier,
    /// The owner was at a safepoint (parked, waiting, in native): revoked in place.
    OwnerSafe,
    /// The owner had detached (its id free or reused under another generation): revoked in
    /// place.
    OwnerExited,
}

/// The name [`Event::BiasRevoke`] gives [`RevocationKind`].
pub type RevokeKind = RevocationKind;

/// One monitor event (see the module documentation for who emits which).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A contended enter (JFR `jdk.JavaMonitorEnter`): the thread had to spin or park.
    MonitorEnter {
        /// Where, when, how long (from the first failed try to owning the lock).
        site: EventSite,
        /// The thread this one waited for: the owner it found holding the lock (a spinner
        /// on a header: the last one it read there). HotSpot has the exiting owner write
        /// `_previous_owner_tid`; objmon's fat-monitor exit is a fast path (every unlock of
        /// `fat`) that must not look at events, so the contender names it. For a thread that
        /// queued behind several owners in turn, the first it found; `None` for a
        /// `lightweight*` contender that inflated a fast-lock (its word names no owner).
        previous_owner: Option<ThreadId>,
        /// Whether the thread parked (suspended); `false`: it only spun.
        parked: bool,
    },
    /// A wait (JFR `jdk.JavaMonitorWait`), delivered once the waiter owns the monitor again.
    MonitorWait {
        /// Where, when, how long (until the monitor was re-entered).
        site: EventSite,
        /// The timeout asked (`wait(Some(d))`: `d`; a wait until a deadline: what was left
        /// of it when the wait began), if any.
        timeout: Option<Duration>,
        /// How it ended.
        outcome: WaitEnd,
        /// The thread whose notify or notifyAll picked this waiter.
        notifier: Option<ThreadId>,
    },
    /// A notify or notifyAll (JFR `jdk.JavaMonitorNotify`).
    MonitorNotify {
        /// Where and when.
        site: EventSite,
        /// `true` for notifyAll.
        all: bool,
        /// How many waiters it took out of the wait set.
        woken: u32,
    },
    /// A lock became a fat monitor (JFR `jdk.JavaMonitorInflate`).
    MonitorInflate {
        /// Where and when; `monitor` is the new monitor.
        site: EventSite,
        /// Why.
        cause: InflationCause,
    },
    /// A fat monitor was given back to its object (JFR `jdk.JavaMonitorDeflate`).
    MonitorDeflate {
        /// Where and when; `monitor` is the monitor given back.
        site: EventSite,
    },
    /// A bias held by another thread was revoked (`biased*`, `fable*`).
    BiasRevoke {
        /// Where, when, how long (the revocation's latency); `thread` is the revoker.
        site: EventSite,
        /// How.
        kind: RevokeKind,
    },
    /// A runtime's counters (JFR `jdk.JavaMonitorStatistics`), on request.
    MonitorStatistics {
        /// When, in [`now_nanos`] time.
        at_nanos: u64,
        /// Fat monitors alive.
        live_monitors: u64,
        /// Inflations so far.
        inflations: u64,
        /// Deflations so far.
        deflations: u64,
        /// Bias revocations so far (0 for protocols that never bias).
        revocations: u64,
    },
}

/// The kind of an [`Event`], for thresholds and filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventKind {
    /// [`Event::MonitorEnter`].
    MonitorEnter,
    /// [`Event::MonitorWait`].
    MonitorWait,
    /// [`Event::MonitorNotify`].
    MonitorNotify,
    /// [`Event::MonitorInflate`].
    MonitorInflate,
    /// [`Event::MonitorDeflate`].
    MonitorDeflate,
    /// [`Event::BiasRevoke`].
    BiasRevoke,
    /// [`Event::MonitorStatistics`].
    MonitorStatistics,
}

impl EventKind {
    /// Every kind, in declaration order.
    pub const ALL: [EventKind; 7] = [
        Self::MonitorEnter,
        Self::MonitorWait,
        Self::MonitorNotify,
        Self::MonitorInflate,
        Self::MonitorDeflate,
        Self::BiasRevoke,
        Self::MonitorStatistics,
    ];

    /// The kind's name, as its variant is spelled (`"MonitorEnter"`).
    ///
    /// ```
    /// assert_eq!(objmon::events::EventKind::BiasRevoke.name(), "BiasRevoke");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::MonitorEnter => "MonitorEnter",
            Self::MonitorWait => "MonitorWait",
            Self::MonitorNotify => "MonitorNotify",
            Self::MonitorInflate => "MonitorInflate",
            Self::MonitorDeflate => "MonitorDeflate",
            Self::BiasRevoke => "BiasRevoke",
            Self::MonitorStatistics => "MonitorStatistics",
        }
    }

    /// JFR's default threshold for the kind: 20 ms for enter and wait, 0 for the rest.
    pub fn default_threshold(self) -> Duration {
        match self {
            Self::MonitorEnter | Self::MonitorWait => Duration::from_millis(20),
            _ => Duration::ZERO,
        }
    }
}

impl Event {
    /// The event's kind.
    pub fn kind(&self) -> EventKind {
        match self {
            Self::MonitorEnter { .. } => EventKind::MonitorEnter,
            Self::MonitorWait { .. } => EventKind::MonitorWait,
            Self::MonitorNotify { .. } => EventKind::MonitorNotify,
            Self::MonitorInflate { .. } => EventKind::MonitorInflate,
            Self::MonitorDeflate { .. } => EventKind::MonitorDeflate,
            Self::BiasRevoke { .. } => EventKind::BiasRevoke,
            Self::MonitorStatistics { .. } => EventKind::MonitorStatistics,
        }
    }

    fn site_mut(&mut self) -> Option<&mut EventSite> {
        match self {
            Self::MonitorEnter { site, .. }
            | Self::MonitorWait { site, .. }
            | Self::MonitorNotify { site, .. }
            | Self::MonitorInflate { site, .. }
            | Self::MonitorDeflate { site }
            | Self::BiasRevoke { site, .. } => Some(site),
            Self::MonitorStatistics { .. } => None,
        }
    }

    /// Where and when it happened; `None` for [`MonitorStatistics`](Self::MonitorStatistics).
    pub fn site(&self) -> Option<&EventSite> {
        match self {
            Self::MonitorEnter { site, .. }
            | Self::MonitorWait { site, .. }
            | Self::MonitorNotify { site, .. }
            | Self::MonitorInflate { site, .. }
            | Self::MonitorDeflate { site }
            | Self::BiasRevoke { site, .. } => Some(site),
            Self::MonitorStatistics { .. } => None,
        }
    }
}

/// Where a runtime delivers its [`Event`]s (see the module documentation for the contract).
///
/// ```
/// use objmon::events::{Event, EventKind, EventSink};
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::time::Duration;
///
/// /// Counts contended enters of 1 ms or more.
/// #[derive(Default)]
/// struct SlowEnters(AtomicU64);
/// impl EventSink for SlowEnters {
///     fn event(&self, e: &Event) {
///         if e.kind() == EventKind::MonitorEnter {
///             self.0.fetch_add(1, Ordering::Relaxed);
///         }
///     }
///     fn threshold(&self, kind: EventKind) -> Duration {
///         match kind {
///             EventKind::MonitorEnter => Duration::from_millis(1),
///             _ => Duration::MAX, // nothing else
///         }
///     }
/// }
/// ```
pub trait EventSink: Send + Sync + 'static {
    /// Takes one event, on the thread that had it.
    fn event(&self, e: &Event);

    /// Events of `kind` shorter than this are not delivered: by default
    /// [`EventKind::default_threshold`] (20 ms for enter and wait, as JFR; 0 for the rest).
    /// Asked once per kind, when the sink is installed.
    fn threshold(&self, kind: EventKind) -> Duration {
        kind.default_threshold()
    }

    /// The host's tag for the object whose header is at `object` (a class id, say), put in
    /// [`EventSite::object_tag`]; asked on the event's thread, before [`event`](Self::event).
    fn object_tag(&self, object: usize) -> Option<u64> {
        let _ = object;
        None
    }
}

/// A ready-made sink: keeps every event delivered to it, in order of delivery, until
/// [`take`](Self::take)n. Its threshold is 0 for every kind unless set
/// ([`with_threshold`](Self::with_threshold)).
///
/// ```
/// use objmon::events::{EventKind, Recorder};
/// use std::time::Duration;
/// let rec = Recorder::new().with_threshold(EventKind::MonitorEnter, Duration::from_millis(5));
/// assert!(rec.take().is_empty());
/// ```
#[derive(Debug)]
pub struct Recorder {
    events: Mutex<Vec<Event>>,
    thresholds: [Duration; 7],
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder {
    /// An empty recorder with threshold 0 for every kind.
    pub fn new() -> Self {
        Self {
            events: Mutex::new(Vec::new()),
            thresholds: [Duration::ZERO; 7],
        }
    }

    /// The same recorder with `threshold` for `kind`.
    pub fn with_threshold(mut self, kind: EventKind, threshold: Duration) -> Self {
        self.thresholds[kind as usize] = threshold;
        self
    }

    /// The same recorder with `threshold` for every kind.
    pub fn with_thresholds(mut self, threshold: Duration) -> Self {
        self.thresholds = [threshold; 7];
        self
    }

    /// The events recorded so far, taken out (the recorder is empty afterwards).
    pub fn take(&self) -> Vec<Event> {
        std::mem::take(&mut *self.lock())
    }

    /// A copy of the events recorded so far, left in place.
    pub fn snapshot(&self) -> Vec<Event> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Event>> {
        // A Vec that a panic interrupted in `push` is still a sound Vec.
        self.events.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl EventSink for Recorder {
    fn event(&self, e: &Event) {
        self.lock().push(e.clone());
    }

    fn threshold(&self, kind: EventKind) -> Duration {
        self.thresholds[kind as usize]
    }
}

/// Why [`set_event_sink`](crate::set_event_sink) refused a sink.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SetSinkError {
    /// A sink was set already (there is one for the process's runtimes, set once).
    AlreadySet,
    /// A process-wide runtime exists already (some `Monitor` was used): its monitors were
    /// made without a sink, so the sink must come before the first use.
    TooLate,
}

impl std::fmt::Display for SetSinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::AlreadySet => "an event sink was set already",
            Self::TooLate => "a process-wide runtime exists already (a Monitor was used)",
        })
    }
}

impl std::error::Error for SetSinkError {}

/// A sink and its thresholds (nanoseconds by kind), as installed in a slot.
struct Installed {
    sink: Arc<dyn EventSink>,
    thresholds: [u64; 7],
}

/// How many sinks can be installed at once (slot 0 means "events off").
const SLOTS: usize = 256;

/// The process-wide registry of installed sinks, by slot id: a fat monitor names its
/// runtime's sink by a one-byte id (it has no room for a pointer), and so does a table.
/// Std atomics, not the loom shim's: events are never on in a loom model.
static INSTALLED: [AtomicPtr<Installed>; SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

/// A runtime's hold on its slot in the registry: uninstalls the sink when dropped (with the
/// runtime, after its monitors: no event of it can be under way then).
pub(crate) struct SinkSlot {
    id: u8,
}

impl SinkSlot {
    /// Installs `sink` in a free slot (asks its thresholds now); `None`: no slot, events off.
    ///
    /// # Panics
    /// If 255 sinks are installed already (255 runtimes with events alive at once).
    pub(crate) fn install(sink: Option<&Arc<dyn EventSink>>) -> Self {
        let Some(sink) = sink else {
            return Self { id: 0 };
        };
        let thresholds =
            EventKind::ALL.map(|k| u64::try_from(sink.threshold(k).as_nanos()).unwrap_or(u64::MAX));
        let p = Box::into_raw(Box::new(Installed {
            sink: sink.clone(),
            thresholds,
        }));
        ANY.store(true, Ordering::Relaxed);
        for (id, slot) in INSTALLED.iter().enumerate().skip(1) {
            if slot
                .compare_exchange(std::ptr::null_mut(), p, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return Self { id: id as u8 };
            }
        }
        // SAFETY: `p` came from `Box::into_raw` above and was published nowhere.
        drop(unsafe { Box::from_raw(p) });
        panic!("objmon: more than 255 runtimes with an event sink alive at once");
    }

    /// The slot id (0: events off).
    #[inline]
    pub(crate) fn id(&self) -> u8 {
        self.id
    }

    /// The installed sink, if any.
    pub(crate) fn sink(&self) -> Option<&Arc<dyn EventSink>> {
        installed(self.id).map(|i| &i.sink)
    }
}

impl Drop for SinkSlot {
    fn drop(&mut self) {
        if self.id != 0 {
            let p = INSTALLED[usize::from(self.id)].swap(std::ptr::null_mut(), Ordering::AcqRel);
            // SAFETY: `p` was installed by `install` (Box::into_raw) and only this slot's
            // owner takes it out; every event of the slot is delivered during a call on
            // the runtime that owns this `SinkSlot`, which is being dropped, so none is
            // reading `p` now.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

impl std::fmt::Debug for SinkSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SinkSlot({})", self.id)
    }
}

/// The sink installed in slot `id` (0: none).
fn installed<'a>(id: u8) -> Option<&'a Installed> {
    if id == 0 {
        return None;
    }
    let p = INSTALLED[usize::from(id)].load(Ordering::Acquire);
    // SAFETY: a non-null pointer in a slot is a live `Installed` (Box::into_raw in
    // `install`), freed only when the runtime owning the slot drops; callers name `id` from
    // that runtime's monitor, table or counters while inside a call on the runtime, so the
    // reference does not outlive it.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// Whether a sink was ever installed in the process (sticky): until then, [`hold`] and
/// [`release`] cost one load and a branch.
static ANY: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Whether this thread is inside a sink's call (events raised then are dropped).
    static IN_SINK: Cell<bool> = const { Cell::new(false) };
    /// How deep this thread is in regions where it must not run a sink ([`hold`]).
    static HELD: Cell<u32> = const { Cell::new(0) };
    /// Events raised in such a region, delivered when the outermost one ends.
    static PENDING: RefCell<Vec<(u8, Event)>> = const { RefCell::new(Vec::new()) };
}

/// This thread enters a region where a sink must not run, because a sink may lock monitors
/// and the thread is in a state that forbids it: `thin`'s blocked state (another thread may
/// inflate its words for it), the biased family's safe state (a revoker rewrites its biases
/// in place). Events raised until the matching [`release`] are queued, then delivered.
#[inline]
pub(crate) fn hold() {
    if ANY.load(Ordering::Relaxed) {
        HELD.with(|h| h.set(h.get() + 1));
    }
}

/// A [`hold`] ended by its drop (every way out of a scope, unwinding included).
pub(crate) struct Held(());

impl Held {
    /// Begins a [`hold`].
    #[inline]
    pub(crate) fn new() -> Self {
        hold();
        Self(())
    }
}

impl Drop for Held {
    #[inline]
    fn drop(&mut self) {
        release();
    }
}

/// Ends a [`hold`]; the outermost delivers what was queued. (A region begun before the first
/// sink was installed ends here without having counted: the count stays at 0.)
#[inline]
pub(crate) fn release() {
    if ANY.load(Ordering::Relaxed) {
        release_slow();
    }
}

#[cold]
fn release_slow() {
    let outermost = HELD.with(|h| {
        h.set(h.get().saturating_sub(1));
        h.get() == 0
    });
    if !outermost {
        return;
    }
    let queued = PENDING
        .try_with(|p| std::mem::take(&mut *p.borrow_mut()))
        .unwrap_or_default();
    for (id, mut e) in queued {
        if let Some(inst) = installed(id) {
            call_sink(&inst.sink, || {
                if let Some(site) = e.site_mut() {
                    site.object_tag = inst.sink.object_tag(site.object);
                }
                e
            });
        }
    }
}

/// The parts of an event's site that the emitter knows (the tag and the duration come at
/// delivery).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Origin {
    pub(crate) start_nanos: u64,
    pub(crate) thread: ThreadId,
    pub(crate) object: usize,
    /// 0: no monitor.
    pub(crate) monitor: u32,
}

impl Origin {
    /// An event of thread `by` on the object at `object` (monitor `monitor`) that happens now.
    fn now(by: ThreadId, object: usize, monitor: u32) -> Self {
        Self {
            start_nanos: now_nanos(),
            thread: by,
            object,
            monitor,
        }
    }
}

/// Delivers the event `make` builds, of `kind`, begun at `o.start_nanos` and ending now, to
/// the sink in slot `id`, unless it is shorter than the sink's threshold, no sink is there,
/// or this thread is inside a sink already. Catches a sink's panic.
#[cold]
#[inline(never)]
pub(crate) fn deliver(id: u8, kind: EventKind, o: Origin, make: impl FnOnce(EventSite) -> Event) {
    let Some(inst) = installed(id) else {
        return;
    };
    let d = now_nanos().saturating_sub(o.start_nanos);
    if d < inst.thresholds[kind as usize] || IN_SINK.with(Cell::get) {
        return;
    }
    if HELD.with(Cell::get) > 0 {
        // Not now (see `hold`): queued, its tag asked at delivery.
        let site = EventSite {
            start_nanos: o.start_nanos,
            duration: Duration::from_nanos(d),
            thread: o.thread,
            object: o.object,
            object_tag: None,
            monitor: (o.monitor != 0).then_some(o.monitor),
        };
        let e = make(site);
        let _ = PENDING.try_with(|p| p.borrow_mut().push((id, e)));
        return;
    }
    call_sink(&inst.sink, || {
        make(EventSite {
            start_nanos: o.start_nanos,
            duration: Duration::from_nanos(d),
            thread: o.thread,
            object: o.object,
            object_tag: inst.sink.object_tag(o.object),
            monitor: (o.monitor != 0).then_some(o.monitor),
        })
    });
}

/// Delivers an event without extent (`MonitorStatistics`) to the sink in slot `id`.
pub(crate) fn deliver_now(id: u8, e: Event) {
    if let Some(inst) = installed(id) {
        if !IN_SINK.with(Cell::get) {
            call_sink(&inst.sink, || e);
        }
    }
}

/// Calls `sink` with the event `make` builds (tag included), marked as inside a sink, with
/// its panic caught.
fn call_sink(sink: &Arc<dyn EventSink>, make: impl FnOnce() -> Event) {
    IN_SINK.with(|s| s.set(true));
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sink.event(&make())));
    IN_SINK.with(|s| s.set(false));
}

/// Delivers an inflation.
#[cold]
pub(crate) fn report_inflation(
    id: u8,
    by: ThreadId,
    object: usize,
    monitor: u32,
    cause: InflationCause,
) {
    let o = Origin::now(by, object, monitor);
    deliver(id, EventKind::MonitorInflate, o, |site| {
        Event::MonitorInflate { site, cause }
    });
}

/// Delivers a deflation.
#[cold]
pub(crate) fn report_deflation(id: u8, by: ThreadId, object: usize, monitor: u32) {
    let o = Origin::now(by, object, monitor);
    deliver(id, EventKind::MonitorDeflate, o, |site| {
        Event::MonitorDeflate { site }
    });
}

/// Whether slot `id` has a sink (for emitters that take a time stamp only when it has).
#[inline]
pub(crate) fn on(id: u8) -> bool {
    id != 0
}
