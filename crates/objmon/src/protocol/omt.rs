//! The side table of `lightweight-table`: object → monitor, as HotSpot's `ObjectMonitorTable`
//! (`-XX:+UseObjectMonitorTable`, JDK 24), which keeps the header word free of monitor
//! pointers so that compact object headers (Lilliput, the reason seed 001 exists) keep their
//! hash bits in place.
//!
//! A header in the monitor state has lock bits `10` and its reserved field 0; the monitor is
//! found by the header's address in this table. Sharded mutexed hash maps: a look-up is one
//! uncontended mutex and a hash probe, made only when the thread's cache of recent pairs
//! cannot answer (below). HotSpot's table is a lock-free concurrent hash table behind the same
//! kind of per-thread cache; ours stays mutexed behind it.
//!
//! **Keyed by address, and addresses get reused.** HotSpot's GC removes dead objects'
//! entries and re-keys moved ones; here safe Rust can move (`mem::replace`, `mem::swap`) or
//! drop without [`reclaim`](crate::vm::Runtime::reclaim) a [`MarkWord`](super::mark::MarkWord)
//! whose idle monitor is installed, so an entry may outlive its object's stay at its address
//! (a *stale* entry) and a header may say "monitor" where no entry is (an *orphan*), both
//! only through `&mut` access to the header. The rule that makes them harmless:
//!
//! - **Every transition of a header into or out of the monitor state, and every change of an
//!   entry, is made holding the address's shard lock** (`ObjectMonitorTable::slot`): the
//!   inflater's compare-and-swap to `10` and its insert, the deflater's compare-and-swap back
//!   and its removal, each pair as one step. (Other writes of the word — fast-locking, hash
//!   installs — stay lock-free; they never touch the monitor bit.)
//! - Hence, with the shard locked: a header not in the monitor state has no entry of its own,
//!   so an entry found for it is stale — the next inflation replaces it (and gives back its
//!   monitor if it can claim it idle; one owned through a forgotten guard leaks);
//! - a header in the monitor state without an entry is an orphan: the first look-up deflates
//!   it in place (one compare-and-swap back to unlocked, hash and host bits kept) and reports
//!   "changed", so nothing waits for an entry that will never come;
//! - a header in the monitor state with somebody else's entry (two idle monitors' headers
//!   swapped) uses that monitor: an idle monitor carries no state but its identity hash,
//!   which this protocol keeps in the header.
//!
//! [`Runtime::relocate`](crate::vm::Runtime::relocate) moves the entry with the header, so a GC
//! may move a locked inflated object. **One runtime per address**: an entry claims its address
//! in the process-wide set (`MonitorTable::claim`, `binding.rs`) under the slot lock, before
//! the swap to the monitor state, and releases it after the swap back; another runtime's
//! monitor state is `ForeignHeader`, never deflated here.
//!
//! **The per-thread cache** (HotSpot's `OMCache`): a thread remembers the last
//! `CACHE_ENTRIES` (address, monitor) pairs it read under a shard lock, each with the table's
//! id and the shard's *version*, which every change under the shard lock bumps (before an
//! inflation's swap into the monitor state). A pair is used only while the version is still
//! the cached one (`ObjectMonitorTable::cached`), checked after an acquiring load of the
//! header that found the monitor state. Why that is enough: docs/soundness.md,
//! "`lightweight-table`'s per-thread cache"; models: `tests/loom_omt.rs`.

use crate::binding::AddrHasher;
use crate::sync::{lock, AtomicU64, Mutex, MutexGuard, Ordering};
use crate::table::MonitorIndex;
use std::cell::Cell;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// Shards of the table (a power of two). One under loom: which shard an address falls in
/// depends on where the allocator put it, which differs between a model's executions, and the
/// model must be deterministic (the shard's version is an atomic the model explores).
const SHARDS: usize = if cfg!(loom) { 1 } else { 64 };

/// Pairs (address, monitor) a thread remembers (HotSpot's `OMCache` keeps 8; one object
/// under contention needs one, and the entries are scanned linearly).
pub(crate) const CACHE_ENTRIES: usize = 2;

/// Keyed by header address with the project's address hash (`binding.rs`: one multiply, not
/// SipHash, which was a measurable part of every look-up).
type Map = HashMap<usize, MonitorIndex, BuildHasherDefault<AddrHasher>>;

/// What a shard's lock guards: the entries, and the shard's version as last published
/// (the lock holder's copy: it never has to read the atomic back).
#[derive(Default)]
struct Entries {
    map: Map,
    version: u64,
}

/// One shard: its entries, and the version that the changes made under its lock bump (see "The per-thread cache" in the module documentation). Own cache line: the
/// version is read by every cached look-up and written only under the lock.
#[repr(align(64))]
struct Shard {
    map: Mutex<Entries>,
    /// The version, for readers without the lock; written only under it, from
    /// [`Entries::version`].
    version: AtomicU64,
}

/// Header address → monitor index (see the module documentation).
pub struct ObjectMonitorTable {
    shards: Box<[Shard]>,
    /// Process-unique (never 0): the key of this table's pairs in the per-thread caches, so
    /// that a pair cached from a dropped table is never taken for one of a table built at the
    /// same place later.
    id: u64,
}

/// The entry of one header address, with its shard locked: transitions of that header into
/// and out of the monitor state are made while holding it.
pub(crate) struct Slot<'a> {
    shard: MutexGuard<'a, Entries>,
    version: &'a AtomicU64,
    /// Whether this hold has bumped the version already (one bump per hold suffices: a
    /// reader of the version cannot tell two bumps of one hold apart).
    bumped: bool,
    table: u64,
    a: usize,
}

impl Slot<'_> {
    /// The monitor entered for this address, if any.
    #[inline]
    pub(crate) fn get(&self) -> Option<MonitorIndex> {
        self.shard.map.get(&self.a).copied()
    }

    /// [`get`](Self::get), remembering the pair in this thread's cache if there is one: the
    /// version read here is exact (every bump is made under this lock).
    #[inline]
    pub(crate) fn get_cached(&self) -> Option<MonitorIndex> {
        let idx = self.get()?;
        remember(self.table, self.a, idx, self.shard.version);
        Some(idx)
    }

    /// Invalidates every cached pair of this shard: call before any change made under the lock
    /// that a cached pair must not survive — before a swap of a header into the monitor
    /// state (the swap's release then carries the bump to whoever reads the new header); entry
    /// changes call it themselves.
    #[inline]
    pub(crate) fn invalidate(&mut self) {
        if self.bumped {
            return;
        }
        self.bumped = true;
        // Relaxed: bumps are made only under the shard lock; they are published by the release that follows (the header's swap, or the
        // unlock, which a later locker acquires).
        self.shard.version = self.shard.version.wrapping_add(1);
        self.version.store(self.shard.version, Ordering::Relaxed);
    }

    /// Maps the address to `idx`; the entry it replaced, if any.
    pub(crate) fn set(&mut self, idx: MonitorIndex) -> Option<MonitorIndex> {
        self.invalidate();
        self.shard.map.insert(self.a, idx)
    }

    /// Removes the address's entry; the entry, if any.
    pub(crate) fn clear(&mut self) -> Option<MonitorIndex> {
        self.invalidate();
        self.shard.map.remove(&self.a)
    }
}

/// One remembered pair; `table` 0 is an empty slot.
#[derive(Clone, Copy)]
struct Cached {
    table: u64,
    a: usize,
    idx: u32,
    version: u64,
}

const EMPTY: Cached = Cached {
    table: 0,
    a: 0,
    idx: 0,
    version: 0,
};

#[cfg(not(loom))]
thread_local! {
    /// This thread's recent pairs, newest first. No destructor: usable from other
    /// thread-locals' destructors (a thread-exit detach), and `try_with` skips it once gone.
    static CACHE: [Cell<Cached>; CACHE_ENTRIES] = const { [const { Cell::new(EMPTY) }; CACHE_ENTRIES] };
}

#[cfg(loom)]
loom::thread_local! {
    /// Under loom, one cache per modelled thread and execution.
    static CACHE: [Cell<Cached>; CACHE_ENTRIES] = [const { Cell::new(EMPTY) }; CACHE_ENTRIES];
}

/// Puts (table, a) → idx at version `version` first in this thread's cache.
#[inline]
fn remember(table: u64, a: usize, idx: MonitorIndex, version: u64) {
    let new = Cached {
        table,
        a,
        idx: idx.get(),
        version,
    };
    let _ = CACHE.try_with(|c| {
        // Shift down up to the slot that held this address (or the last), then put it first.
        let mut carry = new;
        for e in c {
            let old = e.replace(carry);
            if old.table == table && old.a == a {
                break;
            }
            carry = old;
        }
    });
}

/// Process-wide source of table ids. Uniqueness is all it provides, so std's atomic even
/// under loom (ids only grow across executions).
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl ObjectMonitorTable {
    /// A table with `SHARDS` shards, or none at all when `used` is false (the protocols that
    /// keep the index in the header carry an empty one).
    pub(crate) fn new(used: bool) -> Self {
        let n = if used { SHARDS } else { 0 };
        Self {
            shards: (0..n)
                .map(|_| Shard {
                    map: Mutex::new(Entries::default()),
                    version: AtomicU64::new(0),
                })
                .collect(),
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }

    #[inline]
    fn shard(&self, a: usize) -> &Shard {
        // Headers are at least 8-byte aligned; mix the higher bits in.
        let k = (a >> 3).wrapping_mul(0x9e37_79b9_7f4a_7c15_u64 as usize);
        &self.shards[(k >> 32) & (SHARDS - 1)]
    }

    /// The entry of the header at `a`, its shard locked until the [`Slot`] drops. Hold no other
    /// slot meanwhile (shards are locked one at a time; nothing else is locked inside).
    #[inline]
    pub(crate) fn slot(&self, a: usize) -> Slot<'_> {
        let s = self.shard(a);
        Slot {
            shard: lock(&s.map),
            version: &s.version,
            bumped: false,
            table: self.id,
            a,
        }
    }

    /// The monitor this thread last found for the header at `a` under its shard lock, if no
    /// entry of that shard has changed since (see "The per-thread cache"). Ask only after an
    /// acquiring load of the header found the monitor state: the answer is then the entry at
    /// a moment when the header was in that state, as [`Slot::get`] under the lock would have
    /// given it. `None`: not cached, or perhaps stale — ask the table.
    #[inline]
    pub(crate) fn cached(&self, a: usize) -> Option<MonitorIndex> {
        let hit = CACHE
            .try_with(|c| {
                c.iter()
                    .map(Cell::get)
                    .find(|e| e.table == self.id && e.a == a)
            })
            .ok()
            .flatten()?;
        // Acquire, and after the caller's acquiring load of the header: a bump published by a
        // swap (or a deflater's announcement count) that this thread has read is seen here.
        (self.shard(a).version.load(Ordering::Acquire) == hit.version)
            .then(|| MonitorIndex::new(hit.idx))
            .flatten()
    }

    /// Remembers that the header at `a` has entry `idx`, read under `slot` (an inflation's
    /// own entry, just set).
    #[inline]
    pub(crate) fn remember(slot: &Slot<'_>, idx: MonitorIndex) {
        remember(slot.table, slot.a, idx, slot.shard.version);
    }

    /// Entries now (for tests and statistics).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| lock(&s.map).map.len()).sum()
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
