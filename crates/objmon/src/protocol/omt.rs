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
//! **Keyed by address, and addresses get reused.** HotSpot's table is keyed by the object: the
//! monitor holds a weak reference to it, a look-up checks `monitor->object() == obj`, and the
//! GC removes the entries of dead objects and re-keys moved ones. A library sees none of
//! that: from safe Rust a [`MarkWord`](super::mark::MarkWord) whose idle monitor is installed
//! can be moved (`mem::replace`, `mem::swap`) or dropped without
//! [`reclaim`](crate::vm::Runtime::reclaim), and another object can then live at the old address.
//! So an entry may outlive its object's stay at its address (a *stale* entry), and a header
//! may say "monitor" at an address that has no entry (an *orphan*). Both happen only through
//! `&mut` access to a header, which excludes every concurrent operation on it, and then only
//! to a header whose monitor is idle (unowned, no waiters) unless a guard was leaked with
//! `mem::forget`. The rule that makes them harmless (issue 11, findings 5 and 15):
//!
//! - **Every transition of a header into or out of the monitor state, and every change of an
//!   entry, is made holding the address's shard lock** (`ObjectMonitorTable::slot`): the
//!   inflater's compare-and-swap to `10` and its insert, the deflater's compare-and-swap back
//!   and its removal, each pair as one step. (Other writes of the word — fast-locking, hash
//!   installs — stay lock-free; they never touch the monitor bit.)
//! - Hence, with the shard locked: a header that an inflation put in the monitor state has its
//!   entry; a header *not* in the monitor state has no entry of its own, so an entry found for
//!   it is stale — the next inflation replaces it, and gives its monitor back if it can claim
//!   it idle (as a deflater would; a monitor still owned through a forgotten guard leaks);
//! - and a header in the monitor state without an entry is an orphan: its monitor was left at
//!   the old address. The first look-up deflates it in place (one compare-and-swap back to
//!   unlocked, hash and host bits kept) and reports "changed", so the caller re-reads the
//!   header; nothing spins waiting for an entry that will never come. A moved header whose
//!   monitor *was* owned (a forgotten guard) thus comes out unlocked: the forgotten hold stays
//!   with the old address, as a lock-stack entry does.
//! - A header in the monitor state with somebody else's entry (two headers with idle monitors
//!   swapped) uses that monitor: an idle monitor carries no state but its identity hash, which
//!   this protocol keeps in the header.
//!
//! [`Runtime::relocate`](crate::vm::Runtime::relocate) moves the entry with the header, so a GC
//! may move a locked inflated object.
//!
//! **One runtime per address** (issue 11 item 13): an entry claims its address in the
//! process-wide set (`MonitorTable::claim`, `binding.rs`) under the slot lock, before the
//! header's swap to the monitor state, and releases it after the swap back (or when the entry
//! goes). So a monitor state with no entry here is an orphan only if no other live runtime
//! claims the address; another runtime's is `ForeignHeader`, never deflated here.

use crate::sync::{lock, Mutex, MutexGuard};
use crate::table::MonitorIndex;
use std::collections::HashMap;

/// Shards of the table (a power of two).
const SHARDS: usize = 64;

type Shard = HashMap<usize, MonitorIndex>;

/// Header address → monitor index (see the module documentation).
pub struct ObjectMonitorTable {
    shards: Box<[Mutex<Shard>]>,
}

/// The entry of one header address, with its shard locked: transitions of that header into
/// and out of the monitor state are made while holding it.
pub(crate) struct Slot<'a> {
    shard: MutexGuard<'a, Shard>,
    a: usize,
}

impl Slot<'_> {
    /// The monitor entered for this address, if any.
    #[inline]
    pub(crate) fn get(&self) -> Option<MonitorIndex> {
        self.shard.get(&self.a).copied()
    }

    /// Maps the address to `idx`; the entry it replaced, if any.
    pub(crate) fn set(&mut self, idx: MonitorIndex) -> Option<MonitorIndex> {
        self.shard.insert(self.a, idx)
    }

    /// Removes the address's entry; the entry, if any.
    pub(crate) fn clear(&mut self) -> Option<MonitorIndex> {
        self.shard.remove(&self.a)
    }
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
    fn shard(&self, a: usize) -> &Mutex<Shard> {
        // Headers are at least 8-byte aligned; mix the higher bits in.
        let k = (a >> 3).wrapping_mul(0x9e37_79b9_7f4a_7c15_u64 as usize);
        &self.shards[(k >> 32) & (SHARDS - 1)]
    }

    /// The entry of the header at `a`, its shard locked until the [`Slot`] drops. Hold no other
    /// slot meanwhile (shards are locked one at a time; nothing else is locked inside).
    #[inline]
    pub(crate) fn slot(&self, a: usize) -> Slot<'_> {
        Slot {
            shard: lock(self.shard(a)),
            a,
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
