//! [`TracingSink`]: monitor events as `tracing` events (feature `tracing`).

use super::{Event, EventKind, EventSink, EventSite};
use std::time::Duration;

/// An [`EventSink`] that emits every event as a `tracing` event with target `objmon`, named
/// after its kind (`kind = "MonitorEnter"`, ...), with typed fields: `thread` (u16),
/// `object` (the header address, u64), `object_tag`, `monitor` (u32), `start_ns` and
/// `duration_ns` (u64, [`now_nanos`](super::now_nanos) time), and the kind's own
/// (`previous_owner`, `parked`; `timeout_ns`, `outcome`, `notifier`; `all`, `woken`;
/// `cause`; `revocation`; the statistics' counters). Enter, wait, revocation and statistics
/// at `INFO`, the rest at `DEBUG`. So `tracing-subscriber`'s formatters, `tokio-console`-style
/// layers and OpenTelemetry exporters see them with no code of objmon's.
///
/// A wait is an event with its duration, not a span: it is delivered after the fact (once the
/// waiter holds the monitor again), and a span opened then would time the delivery, not the
/// wait; `start_ns` and `duration_ns` place it on a timeline (a span could not be
/// back-dated).
///
/// Thresholds are JFR's ([`EventKind::default_threshold`]) unless set.
///
/// ```
/// use objmon::events::{EventKind, TracingSink};
/// use objmon::vm::{Config, Runtime};
/// use std::sync::Arc;
/// use std::time::Duration;
/// let sink = TracingSink::new().with_threshold(EventKind::MonitorEnter, Duration::from_millis(1));
/// let rt = Runtime::<objmon::Thin>::new(Config { events: Some(Arc::new(sink)), ..Config::default() });
/// # drop(rt);
/// ```
#[derive(Clone, Debug)]
pub struct TracingSink {
    thresholds: [Duration; 7],
}

impl Default for TracingSink {
    fn default() -> Self {
        Self::new()
    }
}

impl TracingSink {
    /// A sink with JFR's thresholds (20 ms for enter and wait, 0 for the rest).
    pub fn new() -> Self {
        Self {
            thresholds: EventKind::ALL.map(EventKind::default_threshold),
        }
    }

    /// The same sink with `threshold` for `kind`.
    pub fn with_threshold(mut self, kind: EventKind, threshold: Duration) -> Self {
        self.thresholds[kind as usize] = threshold;
        self
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Emits one `tracing` event at `$level` with the site's fields and `$($f)*`.
macro_rules! emit {
    ($level:ident, $kind:expr, $s:expr $(, $($f:tt)*)?) => {{
        let s: &EventSite = $s;
        tracing::event!(
            target: "objmon",
            tracing::Level::$level,
            kind = $kind,
            thread = s.thread.get(),
            object = s.object as u64,
            object_tag = s.object_tag,
            monitor = s.monitor,
            start_ns = s.start_nanos,
            duration_ns = ns(s.duration),
            $($($f)*)?
        )
    }};
}

impl EventSink for TracingSink {
    fn event(&self, e: &Event) {
        let name = e.kind().name();
        match e {
            Event::MonitorEnter {
                site,
                previous_owner,
                parked,
            } => emit!(
                INFO,
                name,
                site,
                previous_owner = previous_owner.map(|t| t.get()),
                parked = *parked
            ),
            Event::MonitorWait {
                site,
                timeout,
                outcome,
                notifier,
            } => emit!(INFO, name, site,
                timeout_ns = timeout.map(ns),
                outcome = ?outcome,
                notifier = notifier.map(|t| t.get())),
            Event::MonitorNotify { site, all, woken } => {
                emit!(DEBUG, name, site, all = *all, woken = *woken)
            }
            Event::MonitorInflate { site, cause } => emit!(DEBUG, name, site, cause = ?cause),
            Event::MonitorDeflate { site } => emit!(DEBUG, name, site),
            Event::BiasRevoke { site, kind } => emit!(INFO, name, site, revocation = ?kind),
            Event::MonitorStatistics {
                at_nanos,
                live_monitors,
                inflations,
                deflations,
                revocations,
            } => tracing::event!(
                target: "objmon",
                tracing::Level::INFO,
                kind = name,
                at_ns = *at_nanos,
                live_monitors = *live_monitors,
                inflations = *inflations,
                deflations = *deflations,
                revocations = *revocations,
            ),
        }
    }

    fn threshold(&self, kind: EventKind) -> Duration {
        self.thresholds[kind as usize]
    }
}
