//! Monitor events for C: `objmon_set_event_callback` and the one tagged struct each event is
//! delivered as (`objmon_event`).

use super::*;
use objmon::events::{Event, EventKind, EventSink, RevocationKind, WaitEnd};
use objmon::vm::InflationCause;
use std::ffi::c_void;
use std::sync::Mutex;

/// Which event an `objmon_event` is (`objmon_event.kind`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum objmon_event_kind {
    /// A contended enter: `other_thread` the previous owner (0: unknown), `parked`.
    OBJMON_EVENT_MONITOR_ENTER = 0,
    /// A wait, delivered once the waiter holds the monitor again: `timeout_nanos` (-1: none),
    /// `detail` an `objmon_wait_end`, `other_thread` the notifier (0: none).
    OBJMON_EVENT_MONITOR_WAIT = 1,
    /// A notify: `all` (notifyAll), `woken`.
    OBJMON_EVENT_MONITOR_NOTIFY = 2,
    /// An inflation: `detail` an `objmon_inflation_cause`.
    OBJMON_EVENT_MONITOR_INFLATE = 3,
    /// A deflation.
    OBJMON_EVENT_MONITOR_DEFLATE = 4,
    /// A bias revocation (`biased*`, `fable*`): `detail` an `objmon_revocation_kind`;
    /// `duration_nanos` its latency.
    OBJMON_EVENT_BIAS_REVOKE = 5,
    /// The runtime's counters (`objmon_report_statistics`): `live_monitors`, `inflations`,
    /// `deflations`, `revocations`; no site (`thread` 0).
    OBJMON_EVENT_MONITOR_STATISTICS = 6,
}

/// The number of event kinds: the length of `objmon_set_event_callback`'s thresholds.
pub const OBJMON_EVENT_KINDS: usize = 7;

/// How a wait ended (`objmon_event.detail` of `OBJMON_EVENT_MONITOR_WAIT`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum objmon_wait_end {
    /// Picked by notify / notifyAll.
    OBJMON_WAIT_END_NOTIFIED = 0,
    /// The timeout elapsed.
    OBJMON_WAIT_END_TIMED_OUT = 1,
    /// Interrupted.
    OBJMON_WAIT_END_INTERRUPTED = 2,
}

/// Why a lock was inflated (`objmon_event.detail` of `OBJMON_EVENT_MONITOR_INFLATE`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum objmon_inflation_cause {
    /// First use (`fat`).
    OBJMON_INFLATION_FIRST_USE = 0,
    /// Another thread wanted the lock.
    OBJMON_INFLATION_CONTENTION = 1,
    /// wait / notify needs a wait set.
    OBJMON_INFLATION_WAIT_NOTIFY = 2,
    /// The header's recursion count would overflow.
    OBJMON_INFLATION_RECURSION_OVERFLOW = 3,
    /// The identity hash needed a monitor.
    OBJMON_INFLATION_IDENTITY_HASH = 4,
}

/// How a bias was revoked (`objmon_event.detail` of `OBJMON_EVENT_BIAS_REVOKE`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum objmon_revocation_kind {
    /// Synchronous pair handshake.
    OBJMON_REVOCATION_SYNC = 0,
    /// Asynchronous pair handshake.
    OBJMON_REVOCATION_ASYNC = 1,
    /// membarrier (asymmetric Dekker).
    OBJMON_REVOCATION_MEMBARRIER = 2,
    /// In place: the owner was at a safepoint.
    OBJMON_REVOCATION_OWNER_SAFE = 3,
    /// In place: the owner had detached.
    OBJMON_REVOCATION_OWNER_EXITED = 4,
}

/// One monitor event, as the callback of `objmon_set_event_callback` gets it (valid only
/// during the call). Fields a kind does not use are 0; `objmon_event_kind` says which it uses.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct objmon_event {
    /// An `objmon_event_kind`.
    pub kind: u32,
    /// The kind's detail: an `objmon_wait_end`, `objmon_inflation_cause` or
    /// `objmon_revocation_kind`; 0 otherwise.
    pub detail: u32,
    /// When it began: monotonic nanoseconds since a process-wide epoch (the statistics':
    /// when they were taken).
    pub start_nanos: u64,
    /// How long it took.
    pub duration_nanos: u64,
    /// The thread that had it (`objmon_thread_id`); the callback runs on that thread.
    pub thread: u16,
    /// The previous owner (enter) or the notifier (wait), 0 if none or unknown.
    pub other_thread: u16,
    /// Enter: whether the thread parked. Notify: whether it was notifyAll.
    pub parked_or_all: u8,
    /// The object's header address.
    pub object: usize,
    /// The object's fat monitor index, 0 if none.
    pub monitor: u32,
    /// Notify: waiters woken.
    pub woken: u32,
    /// Wait: the timeout asked, in nanoseconds; -1 for none.
    pub timeout_nanos: i64,
    /// Statistics: fat monitors alive.
    pub live_monitors: u64,
    /// Statistics: inflations so far.
    pub inflations: u64,
    /// Statistics: deflations so far.
    pub deflations: u64,
    /// Statistics: bias revocations so far.
    pub revocations: u64,
}

/// The callback: `event` is valid during the call only; `user` is what was given to
/// `objmon_set_event_callback`.
pub type objmon_event_callback =
    Option<unsafe extern "C" fn(event: *const objmon_event, user: *mut c_void)>;

/// The C host's callback and its thresholds, installed in a runtime made with
/// `objmon_config.events` (the core asks for every event; this filters).
#[derive(Default)]
pub(crate) struct CallbackSink {
    cb: Mutex<Option<Callback>>,
}

#[derive(Clone, Copy)]
struct Callback {
    f: unsafe extern "C" fn(*const objmon_event, *mut c_void),
    user: usize,
    thresholds: [u64; OBJMON_EVENT_KINDS],
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// `e` as the C struct.
fn to_c(e: &Event) -> objmon_event {
    let mut c = objmon_event {
        kind: e.kind() as u32,
        timeout_nanos: -1,
        ..Default::default()
    };
    if let Some(s) = e.site() {
        c.start_nanos = s.start_nanos;
        c.duration_nanos = nanos(s.duration);
        c.thread = s.thread.get();
        c.object = s.object;
        c.monitor = s.monitor.unwrap_or(0);
    }
    let id = |t: Option<ThreadId>| t.map_or(0, ThreadId::get);
    match *e {
        Event::MonitorEnter {
            previous_owner,
            parked,
            ..
        } => {
            c.other_thread = id(previous_owner);
            c.parked_or_all = parked.into();
        }
        Event::MonitorWait {
            timeout,
            outcome,
            notifier,
            ..
        } => {
            c.timeout_nanos = timeout.map_or(-1, |t| i64::try_from(nanos(t)).unwrap_or(i64::MAX));
            c.detail = match outcome {
                WaitEnd::Notified => 0,
                WaitEnd::TimedOut => 1,
                WaitEnd::Interrupted => 2,
            };
            c.other_thread = id(notifier);
        }
        Event::MonitorNotify { all, woken, .. } => {
            c.parked_or_all = all.into();
            c.woken = woken;
        }
        Event::MonitorInflate { cause, .. } => {
            c.detail = match cause {
                InflationCause::FirstUse => 0,
                InflationCause::Contention => 1,
                InflationCause::WaitNotify => 2,
                InflationCause::RecursionOverflow => 3,
                InflationCause::IdentityHash => 4,
            };
        }
        Event::MonitorDeflate { .. } => {}
        Event::BiasRevoke { kind, .. } => {
            c.detail = match kind {
                RevocationKind::Sync => 0,
                RevocationKind::Async => 1,
                RevocationKind::Membarrier => 2,
                RevocationKind::OwnerSafe => 3,
                RevocationKind::OwnerExited => 4,
            };
        }
        Event::MonitorStatistics {
            at_nanos,
            live_monitors,
            inflations,
            deflations,
            revocations,
        } => {
            c.start_nanos = at_nanos;
            c.live_monitors = live_monitors;
            c.inflations = inflations;
            c.deflations = deflations;
            c.revocations = revocations;
        }
        _ => {}
    }
    c
}

impl CallbackSink {
    fn current(&self) -> Option<Callback> {
        // A copy in and out; a panic cannot leave it half-written.
        *self.cb.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set(&self, cb: Option<Callback>) {
        *self.cb.lock().unwrap_or_else(|p| p.into_inner()) = cb;
    }
}

impl EventSink for CallbackSink {
    fn event(&self, e: &Event) {
        let Some(cb) = self.current() else { return };
        let d = e.site().map_or(0, |s| nanos(s.duration));
        if d < cb.thresholds[e.kind() as usize] {
            return;
        }
        let c = to_c(e);
        // SAFETY: the host's callback, with a pointer valid for the call and the `user` it
        // gave (`objmon_set_event_callback`'s contract).
        unsafe { (cb.f)(&c, cb.user as *mut c_void) };
    }

    /// Every event: the C thresholds can change after the runtime is made, so they filter
    /// here.
    fn threshold(&self, _: EventKind) -> Duration {
        Duration::ZERO
    }
}

/// Sets (or, with `callback` NULL, clears) the event callback of a runtime made with
/// `objmon_config.events` nonzero. The callback runs on the thread that had the event, after
/// the operation, outside every internal lock of objmon: it may call objmon (lock monitors,
/// even the event's own); events that happen during it on that thread are not delivered.
/// `thresholds_nanos` is NULL (JFR's defaults: 20 ms for enter and wait, 0 for the rest) or
/// `OBJMON_EVENT_KINDS` durations by `objmon_event_kind`: shorter events are not delivered.
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL` (`rt`), `OBJMON_E_EVENTS_OFF` (the runtime was made
/// without `objmon_config.events`), `OBJMON_E_PANIC`.
///
/// # Safety
/// `rt` is live; `thresholds_nanos` is NULL or points to `OBJMON_EVENT_KINDS` values; the
/// callback may be called on any thread attached to the runtime, with `user`, until a later
/// call replaces it (a call under way may still finish with the old one) or the runtime is
/// freed and its last thread detached, so `user` stays valid that long; the callback does
/// not unwind.
#[no_mangle]
pub unsafe extern "C" fn objmon_set_event_callback(
    rt: *const objmon_runtime,
    callback: objmon_event_callback,
    user: *mut c_void,
    thresholds_nanos: *const u64,
) -> objmon_status {
    nonnull!(rt);
    guarded(|| {
        // SAFETY: live runtime by contract.
        let Some(sink) = unsafe { &*rt }.events.as_ref() else {
            return OBJMON_E_EVENTS_OFF;
        };
        let thresholds = if thresholds_nanos.is_null() {
            EventKind::ALL.map(|k| nanos(k.default_threshold()))
        } else {
            // SAFETY: `OBJMON_EVENT_KINDS` readable values by contract.
            unsafe {
                std::ptr::read_unaligned(thresholds_nanos as *const [u64; OBJMON_EVENT_KINDS])
            }
        };
        sink.set(callback.map(|f| Callback {
            f,
            user: user as usize,
            thresholds,
        }));
        OBJMON_OK
    })
}

/// Delivers the runtime's counters to its callback as an `OBJMON_EVENT_MONITOR_STATISTICS`
/// event, on this thread (nothing if the runtime has no callback): JFR's periodic
/// `JavaMonitorStatistics`, the period the host's.
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL`, `OBJMON_E_PANIC`.
///
/// # Safety
/// `rt` is live.
#[no_mangle]
pub unsafe extern "C" fn objmon_report_statistics(rt: *const objmon_runtime) -> objmon_status {
    nonnull!(rt);
    guarded(|| {
        // SAFETY: live runtime by contract.
        unsafe { &*rt }.inner.report_statistics();
        OBJMON_OK
    })
}
