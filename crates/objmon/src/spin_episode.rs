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

use crate::blocking::BlockKind;
use crate::profile::{nanos, Counts};
use crate::table::MonitorTable;
use crate::thread::ThreadCore;
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
}

impl<'a> SpinEpisode<'a> {
    /// Publishes that `core` is blocked on entering the object whose header is at `object`.
    #[cold]
    pub(crate) fn begin(table: &'a MonitorTable, core: &'a ThreadCore, object: usize) -> Self {
        let outer = core.blocking.begin(BlockKind::Enter, object, 0);
        Self {
            core,
            table,
            object,
            outer,
            start: (outer && table.profile.on).then(Instant::now),
        }
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
        self.core.blocking.end();
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
