//! The side table of `lightweight-table`: object → monitor, as HotSpot's `ObjectMonitorTable`
//! (`-XX:+UseObjectMonitorTable`, JDK 24), which keeps the header word free of monitor
//! pointers so that compact object headers (Lilliput, the reason seed 001 exists) keep their
//! hash bits in place.
//!
//! A header in the monitor state has lock bits `10` and its reserved field 0; the monitor is
//! found by the header's address in this table. Sharded mutexed hash maps: a look-up is one
//! uncontended mutex and a hash probe (HotSpot uses a lock-free concurrent hash table plus a
//! per-thread cache; this is the simple form, measured as such).
//!
//! Publication order, which the protocol's re-checks rely on: an inflater inserts the entry
//! *before* its compare-and-swap to `10` (and removes it again if that fails), and only into
//! an empty slot; a deflater restores the header *before* removing the entry, and removes it
//! only if it still names its monitor. So at most one inflater has an entry at a time, and
//! while a header stays in one monitor state the table maps it to that monitor.

use crate::sync::{lock, Mutex};
use crate::table::MonitorIndex;
use std::collections::HashMap;

/// Shards of the table (a power of two).
const SHARDS: usize = 64;

/// Header address → monitor index (see the module documentation).
pub struct ObjectMonitorTable {
    shards: Box<[Mutex<HashMap<usize, MonitorIndex>>]>,
}

impl ObjectMonitorTable {
    /// A table with `SHARDS` shards, or none at all when `used` is false (the protocols that
    /// keep the index in the header carry an empty one).
    pub(crate) fn new(used: bool) -> Self {
        let n = if used { SHARDS } else { 0 };
        Self {
            shards: (0..n).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }

    #[inline]
    fn shard(&self, a: usize) -> &Mutex<HashMap<usize, MonitorIndex>> {
        // Headers are at least 8-byte aligned; mix the higher bits in.
        let k = (a >> 3).wrapping_mul(0x9e37_79b9_7f4a_7c15_u64 as usize);
        &self.shards[(k >> 32) & (SHARDS - 1)]
    }

    /// The monitor of the header at `a`, if any.
    #[inline]
    pub(crate) fn get(&self, a: usize) -> Option<MonitorIndex> {
        lock(self.shard(a)).get(&a).copied()
    }

    /// Maps `a` to `idx` unless `a` has an entry: another inflater's (only one may publish
    /// at a time, or one could overwrite the entry of the other's successful CAS) or a
    /// deflater's that it is about to remove. `false` then; the caller re-reads the header.
    pub(crate) fn insert(&self, a: usize, idx: MonitorIndex) -> bool {
        match lock(self.shard(a)).entry(a) {
            std::collections::hash_map::Entry::Occupied(_) => false,
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(idx);
                true
            }
        }
    }

    /// Removes `a`'s entry if it is `idx`.
    pub(crate) fn remove_if(&self, a: usize, idx: MonitorIndex) {
        let mut s = lock(self.shard(a));
        if s.get(&a) == Some(&idx) {
            s.remove(&a);
        }
    }

    /// Entries now (for tests and statistics).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| lock(s).len()).sum()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl std::fmt::Debug for ObjectMonitorTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectMonitorTable")
            .field("entries", &self.len())
            .finish()
    }
}
