//! One process-wide binding of header addresses to runtimes (for the
//! protocols whose header names no monitor: `cacao`, `monitor-cache`, `lightweight-table`).
//!
//! Those protocols find an object's monitor in a per-runtime table keyed by the header's
//! address, so nothing in the header tells runtime B that runtime A has a monitor for it. This
//! set does: an address is *claimed* by at most one [`Claims`] (one per monitor table, hence
//! per runtime) at a time, for as long as that runtime's address-keyed table has an entry for
//! it. A claim held by another owner is the answer `ForeignHeader`.
//!
//! The set knows neither protocols nor runtimes: an owner is a process-unique number, and the
//! caller keeps its claims in step with its own entries (claim before an entry appears,
//! release when it goes; see `docs/soundness.md` §7). An owner's remaining claims go when it
//! drops, so every claim in the set is a live owner's.
//!
//! Sharded mutexed hash maps: a claim or release is one uncontended mutex and a hash probe,
//! on slow paths only (a binding made or undone). Under loom each owner has a set of its own
//! (as each table has its own chunk pool there: model runs share no state), and the set is
//! not modelled: a model runs one runtime, whose claims are never foreign, so the set cannot
//! change what a model does, and leaving its mutexes (std's) and flag out of the model keeps
//! the state space as it was. No model operation runs while one of those mutexes is held
//! (see [`Claims::if_unclaimed`]), so no model thread blocks on a mutex loom cannot see.

use crate::MonitorError;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Shards of the set (a power of two).
const SHARDS: usize = 64;

/// The hash of an address: Fibonacci hashing, one shift and one multiply (also the monitor
/// cache's, `protocol/monitor_cache.rs`).
#[derive(Default)]
pub(crate) struct AddrHasher(u64);

impl Hasher for AddrHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    #[inline]
    fn write_usize(&mut self, a: usize) {
        self.0 = ((a as u64) >> 2).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type Map = HashMap<usize, u64, BuildHasherDefault<AddrHasher>>;
type Shard = Mutex<Map>;

/// Header address → owner id, made on first use (a `const` hash map needs Rust 1.85).
#[cfg(not(loom))]
static SET: std::sync::OnceLock<Box<[Shard]>> = std::sync::OnceLock::new();

fn new_set() -> Box<[Shard]> {
    (0..SHARDS).map(|_| Mutex::new(Map::default())).collect()
}

/// The next owner id (ids are never reused: a stale claim cannot pass for a new owner's).
static NEXT_OWNER: AtomicU64 = AtomicU64::new(1);

/// Locks a shard. Poison is ignored: no code panics with one held.
fn lock(s: &Shard) -> MutexGuard<'_, Map> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

/// The shard of address `a` in `set`.
fn shard_of(set: &[Shard], a: usize) -> &Shard {
    // Headers are at least 4-byte aligned; Fibonacci hashing mixes the higher bits in. Bits
    // 32.. pick the shard: the map's own probe uses the top 7 bits of the same product (its
    // control bytes) and the low ones, which must still differ within a shard.
    let k = ((a >> 2) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32;
    &set[k as usize & (SHARDS - 1)]
}

/// One owner's claims on header addresses (see the module documentation).
pub(crate) struct Claims {
    id: u64,
    /// Whether this owner ever claimed (so that owners that never do — every protocol that
    /// keeps its monitor in the header — drop without scanning the set). Relaxed: read only by
    /// `Drop`, which `&mut self` orders after every claim.
    used: AtomicBool,
    /// Under loom, this owner's own set (see the module documentation).
    #[cfg(loom)]
    set: Box<[Shard]>,
}

impl Claims {
    /// A new owner with no claims.
    pub(crate) fn new() -> Self {
        Self {
            // Relaxed: only uniqueness matters.
            id: NEXT_OWNER.fetch_add(1, Ordering::Relaxed),
            used: AtomicBool::new(false),
            #[cfg(loom)]
            set: new_set(),
        }
    }

    /// The set this owner claims in: the process's (under loom, its own).
    #[inline]
    fn set(&self) -> &[Shard] {
        #[cfg(not(loom))]
        return SET.get_or_init(new_set);
        #[cfg(loom)]
        return &self.set;
    }

    /// The shard of `a`, locked.
    fn shard(&self, a: usize) -> MutexGuard<'_, Map> {
        lock(shard_of(self.set(), a))
    }

    /// Claims `a` for this owner (already ours: nothing changes); `ForeignHeader` if another
    /// owner holds it.
    pub(crate) fn claim(&self, a: usize) -> Result<(), MonitorError> {
        let mut s = self.shard(a);
        match *s.entry(a).or_insert(self.id) {
            id if id == self.id => {
                if !self.used.load(Ordering::Relaxed) {
                    self.used.store(true, Ordering::Relaxed);
                }
                Ok(())
            }
            _ => Err(MonitorError::ForeignHeader),
        }
    }

    /// Gives up this owner's claim on `a`, if it has one.
    pub(crate) fn release(&self, a: usize) {
        let mut s = self.shard(a);
        if s.get(&a) == Some(&self.id) {
            s.remove(&a);
        }
    }

    /// Whether another owner holds `a` now (a snapshot, as any answer about other threads).
    pub(crate) fn foreign(&self, a: usize) -> bool {
        self.shard(a).get(&a).is_some_and(|&id| id != self.id)
    }

    /// Runs `f` if no other owner holds `a`, with `a`'s shard locked, so that no claim of `a`
    /// is made or released while `f` runs; `None` (and `f` not run) if another owner holds it.
    /// `f` must be short and take no lock.
    pub(crate) fn if_unclaimed<R>(&self, a: usize, f: impl FnOnce() -> R) -> Option<R> {
        let s = self.shard(a);
        if s.get(&a).is_some_and(|&id| id != self.id) {
            return None;
        }
        // Under loom `f` is a model operation, which must not run inside a mutex the model
        // cannot see; there the set holds one owner's claims only, so nothing can change.
        #[cfg(loom)]
        drop(s);
        let r = f();
        #[cfg(not(loom))]
        drop(s);
        Some(r)
    }

    /// Claims held by this owner now (for tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn count(&self) -> usize {
        self.set()
            .iter()
            .map(|s| lock(s).values().filter(|&&id| id == self.id).count())
            .sum()
    }
}

impl Drop for Claims {
    fn drop(&mut self) {
        if !self.used.load(Ordering::Relaxed) {
            return;
        }
        for s in self.set() {
            lock(s).retain(|_, id| *id != self.id);
        }
    }
}

impl std::fmt::Debug for Claims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claims").field("id", &self.id).finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// An address has one owner at a time; releases are the owner's only; a dropped owner's
    /// claims go.
    #[test]
    fn one_owner_per_address() {
        let (a, b) = (Claims::new(), Claims::new());
        let x = Box::new(0u64);
        let x = &*x as *const u64 as usize;
        assert_eq!(a.claim(x), Ok(()));
        assert_eq!(a.claim(x), Ok(()));
        assert_eq!(b.claim(x), Err(MonitorError::ForeignHeader));
        assert!(b.foreign(x) && !a.foreign(x));
        b.release(x); // not b's: no effect
        assert!(b.foreign(x));
        a.release(x);
        assert_eq!(b.claim(x), Ok(()));
        assert_eq!(b.count(), 1);
        drop(b);
        assert!(!a.foreign(x));
        assert_eq!(a.claim(x), Ok(()));
        a.release(x);
        assert_eq!(a.count(), 0);
    }
}
