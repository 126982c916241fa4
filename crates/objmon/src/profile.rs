//! Contention figures: the per-monitor side table (by monitor address) and the per-table
//! figures folded by object when a monitor is freed or rebound.
//!
//! This file owns the data and its bookkeeping only; figures are taken by the blocking
//! episodes (`monitor_episodes.rs`, `spin_episode.rs`) and reported by introspection
//! (`Runtime::contention_profile`, `introspect.rs`). A lower
//! layer: the monitor table holds a [`TableProfile`] and forgets a dropped chunk's figures
//! here, so this file knows only the fat monitor and the loom shim.

use crate::monitor::FatMonitor;
use crate::sync::{lock, Mutex};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// Figures of one object (or monitor) in a profile.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) enters: u64,
    pub(crate) blocked_ns: u64,
    pub(crate) waits: u64,
    pub(crate) waited_ns: u64,
}

impl Counts {
    pub(crate) fn is_zero(&self) -> bool {
        *self == Self::default()
    }

    pub(crate) fn add(&mut self, o: Counts) {
        self.enters += o.enters;
        self.blocked_ns += o.blocked_ns;
        self.waits += o.waits;
        self.waited_ns += o.waited_ns;
    }
}

/// `d` in nanoseconds, saturated.
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The contention figures of the monitors of every runtime that profiles, by monitor
/// address: a side table, so that a monitor carries no profile (nor a pointer to one) when
/// profiling is off, which is the default. Touched only by profiling runtimes, on slow paths
/// (a contended enter that blocked, a wait), never on a fast path. A monitor's entry is taken
/// out when it is freed or rebound, and when its table is dropped (its address may then be
/// reused by another table).
static MONITOR_PROFILES: std::sync::Mutex<BTreeMap<usize, Counts>> =
    std::sync::Mutex::new(BTreeMap::new());

fn monitor_profiles() -> std::sync::MutexGuard<'static, BTreeMap<usize, Counts>> {
    // Plain bookkeeping that calls out to nothing: a poisoned lock still holds sound data.
    MONITOR_PROFILES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl FatMonitor {
    pub(crate) fn profile_key(&self) -> usize {
        self as *const FatMonitor as usize
    }

    /// Adds `c` to this monitor's figures.
    pub(crate) fn profile_add(&self, c: Counts) {
        monitor_profiles()
            .entry(self.profile_key())
            .or_default()
            .add(c);
    }

    /// This monitor's figures, left in place.
    pub(crate) fn profile_snapshot(&self) -> Counts {
        monitor_profiles()
            .get(&self.profile_key())
            .copied()
            .unwrap_or_default()
    }

    /// This monitor's figures, taken out (zero afterwards).
    pub(crate) fn profile_take(&self) -> Counts {
        monitor_profiles()
            .remove(&self.profile_key())
            .unwrap_or_default()
    }
}

/// Forgets the figures of the monitors in `monitors` (a chunk of a table being dropped).
pub(crate) fn forget_profiles(monitors: &[FatMonitor]) {
    let Some(first) = monitors.first() else {
        return;
    };
    let lo = first.profile_key();
    let hi = lo + std::mem::size_of_val(monitors);
    let mut all = monitor_profiles();
    let keys: Vec<usize> = all.range(lo..hi).map(|(k, _)| *k).collect();
    for k in keys {
        all.remove(&k);
    }
}

/// The runtime-level part of profiling, kept by the monitor table (which sees every monitor
/// freed or rebound).
#[derive(Debug, Default)]
pub(crate) struct TableProfile {
    /// Whether the runtime profiles (`Config::profiling`).
    pub(crate) on: bool,
    /// Figures of monitors freed or rebound, by the object they were bound to.
    pub(crate) folded: Mutex<HashMap<usize, Counts>>,
}

impl TableProfile {
    /// Adds `c` to the folded figures of the object whose header is at `object`.
    pub(crate) fn fold(&self, object: usize, c: Counts) {
        if !c.is_zero() {
            lock(&self.folded).entry(object).or_default().add(c);
        }
    }
}
