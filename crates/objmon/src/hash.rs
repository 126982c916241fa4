//! Identity hash codes (Java's `System.identityHashCode`): the generator every protocol uses,
//! and the side table of the protocols whose owner writes its header with plain stores.
//!
//! **Generator.** HotSpot's default since JDK 8 (`-XX:hashCode=5`, `get_next_hash` in
//! `synchronizer.cpp`): Marsaglia's xor-shift with four words of per-thread state, so that
//! generating a hash touches no shared cache line. X is seeded per thread (HotSpot: from
//! `os::random()`; here from the thread's id and generation, so that threads and successive
//! holders of one id differ), Y, Z and W start at HotSpot's constants. The value is masked to
//! the protocol's [`HASH_BITS`](crate::Protocol::HASH_BITS); 0 means "no hash" in every header,
//! so a 0 is drawn again (HotSpot substitutes `0xBAD`; a redraw keeps the values uniform).
//!
//! **Where a protocol keeps the hash** is its own business (see each protocol's bit table);
//! the hash, once returned, never changes while the object lives.
//!
//! **Side table.** `thin` and the biased protocols follow seed 000 §2.3's owner-only-modifies
//! discipline: while a thread holds the lock, only it writes the lock word, with plain stores.
//! A hasher may not write that word then, and waiting for the owner to release it would let a
//! hash block — two threads that each hold one object and hash the other's would deadlock,
//! which Java's `hashCode` never does. So a hash chosen while another thread holds the lock is
//! recorded here, keyed by the header's address, and moved into the header (or its monitor)
//! by the next hasher that can write it. Every decision about a hash of such a protocol is
//! taken under this table's mutex; a header that already shows its hash is read without it.

use crate::sync::{lock, AtomicU32, AtomicUsize, Mutex, MutexGuard, Ordering};
use crate::thread::ThreadCore;
use std::collections::HashMap;

/// HotSpot's initial Y, Z and W (`Thread::Thread()`: `_hashStateY = 842502087`,
/// `_hashStateZ = 0x8767`, `_hashStateW = 273326509`).
const INIT_Y: u32 = 842_502_087;
const INIT_Z: u32 = 0x8767;
const INIT_W: u32 = 273_326_509;

/// A thread's xor-shift state. Only its thread calls [`next`](Self::next); atomics (relaxed
/// loads and stores, no read-modify-write) only because [`ThreadCore`] is shared.
pub(crate) struct HashState {
    x: AtomicU32,
    y: AtomicU32,
    z: AtomicU32,
    w: AtomicU32,
}

impl HashState {
    /// The state of thread `id` (its `generation`-th holder).
    pub(crate) fn new(id: u16, generation: u32) -> Self {
        // A multiplicative mix (the golden-ratio constant) spreads neighbouring ids over the
        // whole word, so that the first hashes of threads 1 and 2 are unrelated.
        let seed = (u32::from(id) ^ generation.rotate_left(16)).wrapping_mul(0x9e37_79b9);
        Self {
            x: AtomicU32::new(seed | 1),
            y: AtomicU32::new(INIT_Y),
            z: AtomicU32::new(INIT_Z),
            w: AtomicU32::new(INIT_W),
        }
    }

    /// One step of the generator: the next 32-bit value.
    fn step(&self) -> u32 {
        let r = Ordering::Relaxed;
        let mut t = self.x.load(r);
        t ^= t << 11;
        self.x.store(self.y.load(r), r);
        self.y.store(self.z.load(r), r);
        let mut v = self.w.load(r);
        self.z.store(v, r);
        v = (v ^ (v >> 19)) ^ (t ^ (t >> 8));
        self.w.store(v, r);
        v
    }

    /// A fresh hash in `1..2^bits` (`bits` in 1..=32).
    pub(crate) fn next(&self, bits: u32) -> u32 {
        let mask = if bits >= 32 {
            u32::MAX
        } else {
            (1u32 << bits) - 1
        };
        loop {
            let v = self.step() & mask;
            if v != 0 {
                return v;
            }
        }
    }
}

impl std::fmt::Debug for HashState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HashState")
    }
}

/// A fresh hash of `bits` bits drawn from `t`'s generator.
#[inline]
pub(crate) fn fresh(t: &ThreadCore, bits: u32) -> u32 {
    t.hash_state.next(bits)
}

/// Hashes chosen while the header could not take them (see the module documentation), by
/// header address.
pub(crate) struct SideHashes {
    map: Mutex<HashMap<usize, u32>>,
    /// Entries in `map`, written under its mutex: lets `reclaim` and `peek` of an object that
    /// has none skip the mutex while the table is empty (the common case: it holds only
    /// hashes of objects locked by another thread when first hashed, until the next hash).
    len: AtomicUsize,
}

/// The locked side table.
pub(crate) struct SideGuard<'a> {
    map: MutexGuard<'a, HashMap<usize, u32>>,
    len: &'a AtomicUsize,
}

impl SideGuard<'_> {
    pub(crate) fn get(&self, a: usize) -> Option<u32> {
        self.map.get(&a).copied()
    }

    pub(crate) fn insert(&mut self, a: usize, v: u32) {
        self.map.insert(a, v);
        self.len.store(self.map.len(), Ordering::Release);
    }

    pub(crate) fn remove(&mut self, a: usize) -> Option<u32> {
        let v = self.map.remove(&a);
        self.len.store(self.map.len(), Ordering::Release);
        v
    }

    /// The hash of the object at `a` whose header now names monitor `m`: the monitor's own,
    /// else the one parked here for `a` (moved into the monitor), else `fresh()`. Monitor
    /// hashes of the side-table protocols are installed only under this table's mutex, so
    /// the parked hash and the monitor's never disagree.
    pub(crate) fn adopt(
        &mut self,
        m: &crate::monitor::FatMonitor,
        a: usize,
        fresh: impl FnOnce() -> u32,
    ) -> u32 {
        match m.identity_hash() {
            Some(v) => v,
            None => {
                let v = self.remove(a).unwrap_or_else(fresh);
                m.install_hash(v)
            }
        }
    }

    /// The entry of `a`, made with `fresh` if there is none.
    pub(crate) fn get_or_insert(&mut self, a: usize, fresh: impl FnOnce() -> u32) -> u32 {
        match self.get(a) {
            Some(v) => v,
            None => {
                let v = fresh();
                self.insert(a, v);
                v
            }
        }
    }

    #[cfg(all(test, not(loom)))]
    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

impl SideHashes {
    pub(crate) fn new() -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
            len: AtomicUsize::new(0),
        }
    }

    /// The table, locked: every decision about the hash of a side-table protocol's object.
    pub(crate) fn lock(&self) -> SideGuard<'_> {
        SideGuard {
            map: lock(&self.map),
            len: &self.len,
        }
    }

    /// Whether the table may hold an entry. `false` means: every hash ever parked has been
    /// moved into its monitor (or reclaimed) before this call, and that move is visible to
    /// the caller — so a caller that checks this *before* looking at the monitor misses no
    /// hash (the move installs into the monitor before it removes the entry).
    #[inline]
    pub(crate) fn may_hold_any(&self) -> bool {
        self.len.load(Ordering::Acquire) != 0
    }

    /// GC hook: the object whose header was at `from` now has its header at `to`.
    pub(crate) fn relocate(&self, from: usize, to: usize) {
        if self.may_hold_any() {
            let mut t = self.lock();
            if let Some(v) = t.remove(from) {
                t.insert(to, v);
            }
        }
    }

    /// `reclaim`: forgets `a`'s entry, if any.
    pub(crate) fn forget(&self, a: usize) {
        if self.may_hold_any() {
            self.lock().remove(a);
        }
    }
}

impl std::fmt::Debug for SideHashes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SideHashes({})", self.len.load(Ordering::Relaxed))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The generator is HotSpot's: from X = 1 and HotSpot's Y, Z, W, the first value is what
    /// `get_next_hash` computes by hand: t = 1 ^ (1 << 11) = 0x801;
    /// v = (W ^ (W >> 19)) ^ (t ^ (t >> 8)).
    #[test]
    fn first_value_matches_hotspot_formula() {
        let s = HashState::new(0, 0);
        s.x.store(1, Ordering::Relaxed);
        let t: u32 = 0x801;
        let w = INIT_W;
        assert_eq!(s.step(), (w ^ (w >> 19)) ^ (t ^ (t >> 8)));
        // The state shifted down one word, as in HotSpot.
        assert_eq!(s.x.load(Ordering::Relaxed), INIT_Y);
        assert_eq!(s.y.load(Ordering::Relaxed), INIT_Z);
        assert_eq!(s.z.load(Ordering::Relaxed), INIT_W);
    }

    /// Masked, never 0, and different threads draw different sequences.
    #[test]
    fn values_are_masked_nonzero_and_per_thread() {
        let a = HashState::new(1, 0);
        let b = HashState::new(2, 0);
        let c = HashState::new(1, 1);
        let va: Vec<u32> = (0..64).map(|_| a.next(4)).collect();
        assert!(va.iter().all(|&v| (1..16).contains(&v)));
        let (sa, sb, sc): (Vec<u32>, Vec<u32>, Vec<u32>) = (
            (0..8).map(|_| a.next(31)).collect(),
            (0..8).map(|_| b.next(31)).collect(),
            (0..8).map(|_| c.next(31)).collect(),
        );
        assert_ne!(sa, sb);
        assert_ne!(sa, sc);
    }
}
