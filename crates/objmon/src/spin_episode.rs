//! A spinner's blocking episode: a thread waiting for a thin-shaped lock that has no monitor
//! to block on (`thin`, `biased` / `fable`, `tasuki`'s contender behind a flat owner)
//! publishes in its [`BlockSlot`](crate::blocking::BlockSlot) that it is blocked on entering
//! the object, records each owner it reads from the header, and, when the runtime profiles,
//! folds its time into the table's figures by object (`profile.rs`).
//!
//! The fat monitor's own episodes are in `monitor_episodes.rs`; what a publication means to
//! a reader (thread dumps, deadlock confirmation, which needs a spinner to observe again
//! within its wait) is introspection's business (`introspect.rs`). Above the monitor table
//! only because a spinner's figures go to the table's [`TableProfile`](crate::profile::TableProfile).
//!
//! With events on (`events.rs`), the end of an outermost episode is the thread's
//! `MonitorEnter`: its previous owner the last owner it read from the header (a thin-shaped
//! word names its owner; nothing exits through a monitor to name itself), `parked` whether
//! it parked (behind a flat lock, or on the fat monitor a nested enter found).

use crate::blocking::{seen_owner, BlockKind};
use crate::events::{self, Event, EventKind, Origin};
use crate::profile::{nanos, Counts};
use crate::sync::Ordering;
use crate::table::MonitorTable;
use crate::thread::{ThreadCore, ThreadId};
use std::cell::Cell;
use std::time::Instant;

/// How often a contender parked behind a flat lock (`tasuki`) wakes to re-observe its owner
/// (well inside the deadlock detector's wait for spinners to observe again, 200 ms).
#[cfg(not(loom))]
const OBSERVE_PERIOD: std::time::Duration = std::time::Duration::from_millis(10);

/// The deadline of one park of a contender behind a flat lock (see [`OBSERVE_PERIOD`]);
/// none under loom, whose timed parks model an expiry at any moment anyway.
pub(crate) fn observe_deadline() -> Option<Instant> {
    #[cfg(not(loom))]
    {
        Some(Instant::now() + OBSERVE_PERIOD)
    }
    #[cfg(loom)]
    {
        None
    }
}

/// A spinner's blocking episode (a thread waiting for a thin-shaped lock with no monitor to
/// block on): published on creation, observations through [`observe`](Self::observe), ended
/// and profiled on drop. Does nothing if the thread is in an episode already.
pub(crate) struct SpinEpisode<'a> {
    core: &'a ThreadCore,
    table: &'a MonitorTable,
    object: usize,
    outer: bool,
    start: Option<Instant>,
    /// Events on (and outermost): when it began, in `events::now_nanos` time.
    event_start: Option<u64>,
    /// Whether the thread parked behind the flat lock ([`parked`](Self::parked)).
    parked: Cell<bool>,
}

impl<'a> SpinEpisode<'a> {
    /// Publishes that `core` is blocked on entering the object whose header is at `object`.
    #[cold]
    pub(crate) fn begin(table: &'a MonitorTable, core: &'a ThreadCore, object: usize) -> Self {
        let outer = core.blocking.begin(BlockKind::Enter, object, 0);
        let event_start = (outer && events::on(table.events)).then(|| {
            core.event_parked.store(false, Ordering::Relaxed);
            events::now_nanos()
        });
        Self {
            core,
            table,
            object,
            outer,
            start: (outer && table.profile.on).then(Instant::now),
            event_start,
            parked: Cell::new(false),
        }
    }

    /// The spinner is about to park behind the flat lock (`tasuki`'s contender).
    #[inline]
    pub(crate) fn parked(&self) {
        self.parked.set(true);
    }

    /// The spinner just read the header and found it held by `owner_raw` (0: unknown).
    #[inline]
    pub(crate) fn observe(&self, owner_raw: u32) {
        if self.outer {
            self.core.blocking.observe(owner_raw);
        }
    }
}

impl Drop for SpinEpisode<'_> {
    fn drop(&mut self) {
        if !self.outer {
            return;
        }
        let seen = seen_owner(self.core.blocking.seen());
        self.core.blocking.end();
        if let Some(start_nanos) = self.event_start {
            let parked = self.parked.get() | self.core.event_parked.swap(false, Ordering::Relaxed);
            let core = self.core;
            events::deliver(
                self.table.events,
                EventKind::MonitorEnter,
                Origin {
                    start_nanos,
                    thread: core.id(),
                    object: self.object,
                    monitor: 0,
                },
                |site| Event::MonitorEnter {
                    site,
                    previous_owner: ThreadId::from_raw(seen).filter(|p| *p != core.id()),
                    parked,
                },
            );
        }
        if let Some(s) = self.start {
            self.table.profile.fold(
                self.object,
                Counts {
                    enters: 1,
                    blocked_ns: nanos(s.elapsed()),
                    ..Counts::default()
                },
            );
        }
    }
}
