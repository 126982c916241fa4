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
//! The generator's per-thread state is `hash_state.rs` (a lower layer: every `ThreadCore`
//! holds one); [`fresh`] draws from it.
//!
//! **Where a protocol keeps the hash** is its own business (see each protocol's bit table);
//! the hash, once returned, never changes while the object lives.
//!
//! **Side table.** `thin` and the biased protocols follow seed 000 §2.3's owner-only-modifies
//! discipline: while a thread holds the lock, only it writes the lock word, with plain stores,
//! and its last unlock (a load, a compare, a store) looks at nothing else. A hasher may not
//! write that word, and no mark or request of a hasher is sure to reach an owner that may
//! have compared already; a hash kept elsewhere by address is lost when safe Rust moves the
//! unlocked header, and would be seen by a fresh object at the old address.
//! So a hash is parked here only where the owner must still pass a slow path before the
//! header can move: while the owner holds the lock **nested** (its unlocks of it are out of
//! line until one level is left). An entry ([`Parked`]) carries the hash, a monitor the hasher
//! allocated that already holds it (the owner inflates into it, so settling never needs a free
//! slot; a full table makes the *hasher* fail with `MonitorTableFull`), and the owner's id.
//! It is settled — the owner inflates into the monitor — at the owner's decrement to one level
//! or at any inflation by the owner, whichever comes first; both look here after a fence
//! ([`SideHashes::owner_must_look`]; `thin`'s inline nested unlock looks instead at a mark
//! on its own thread's line, `ThinThread::look`, which the hasher sets under this table's
//! mutex before its barrier): the hasher inserts, fences and re-reads the word (an
//! asymmetric Dekker on `membarrier` where the kernel allows it: the owner pays a compiler
//! barrier), so
//! either the owner sees the entry or the hasher sees the owner's store and withdraws (a
//! Dekker; loom: `thin_parked_hash_vs_owner_decrement_and_move`). An entry is *live* only
//! while the word still names its owner with a nested count, or names a monitor that owner
//! holds; anything else is a header that moved away under a forgotten guard, and the entry
//! is discarded (and its monitor freed) when met — a fresh object at the old address never
//! sees it. A lock held *once* by another thread is not parked at first: the protocols wait
//! for it or inflate it for a blocked owner (see `thin.rs`), and only after
//! [`HASH_WAIT_BOUND`] park a [`Parked::loose`] entry. Every decision about a parked
//! hash is taken under this table's mutex, and so is every install of a monitor hash of
//! these protocols; a header that already shows its hash is read without it.

use crate::monitor::FatMonitor;
use crate::sync::{fence, lock, Arc, AtomicUsize, Mutex, MutexGuard, Ordering};
use crate::table::{MonitorIndex, MonitorTable};
use crate::thread::ThreadCore;
use crate::MonitorError;
use std::collections::HashMap;

/// A fresh hash of `bits` bits drawn from `t`'s generator.
#[inline]
pub(crate) fn fresh(t: &ThreadCore, bits: u32) -> u32 {
    t.hash_state.next(bits)
}

/// The hash `thin` gives an object while a thread that once had a hash parked for one of its
/// holds holds it: a function of the header's host bits (constant while the object lives,
/// and moved with the header) and of a salt drawn once per process, masked to `bits` and never
/// 0. A hash parked by address is lost when safe code moves the header under a forgotten
/// guard; the next hash call of the moved object, which meets the same hold, draws this same
/// value again, so the object's hash does not change (`protocol/thin.rs`, "Identity hash").
pub(crate) fn pinned(host: u32, bits: u32) -> u32 {
    use std::hash::BuildHasher;
    static SALT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let salt = *SALT.get_or_init(|| std::collections::hash_map::RandomState::new().hash_one(0u64));
    // splitmix64's finalizer: every bit of the host bits and the salt reaches every bit.
    let mut x = salt ^ u64::from(host);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    let mask = if bits >= 32 {
        u32::MAX
    } else {
        (1u32 << bits) - 1
    };
    match (x as u32) & mask {
        0 => 1,
        v => v,
    }
}

/// A hash parked for the object whose header is at some address (the table's key): chosen
/// while another thread held the object's thin lock *nested* (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Parked {
    /// The hash, already installed in [`monitor`](Self::monitor).
    pub(crate) hash: u32,
    /// A monitor allocated for the object by the hasher, holding the hash, idle and named
    /// by no header yet: the owner inflates into it, so that settling a parked hash never
    /// needs a free slot of a full table.
    pub(crate) monitor: MonitorIndex,
    /// The raw id of the thread that held the lock when the hash was parked. The entry is
    /// *live* while the word names this owner with a nested count (or names a monitor that
    /// this owner holds, between its inflation and its look here); otherwise it belongs to a
    /// header that moved away while a forgotten guard held it, and is discarded.
    pub(crate) owner: u32,
    /// Parked under a *single* hold, after the hasher waited [`HASH_WAIT_BOUND`] for the
    /// owner's release in vain (never waiting for good: an owner that holds the lock once and
    /// waits for the hasher would deadlock with it). A loose entry is live whatever the word
    /// says and is adopted by the next hash call that finds it. `thin` in a process with
    /// `membarrier` settles it at the owner's release: the hasher marks the owner
    /// (`ThinThread::look`) and runs the Dekker, the owner's release looks at the mark after
    /// its store and, while it still borrows the header, puts the hash in the header or
    /// hands the entry to the thread that holds the word by then. Elsewhere (`thin-seed`, the
    /// biased protocols' thin words, a process without `membarrier`) the owner's release
    /// looks at nothing but the word, and a header moved (or freed and its address reused)
    /// between that release and the next hash call loses (or inherits) the hash
    /// (`docs/soundness.md`, "State outside the header").
    pub(crate) loose: bool,
}

/// How long a hasher waits for an owner holding the lock once (and running, so that nothing
/// the hasher writes reaches its inline unlock) before it parks a [`Parked::loose`] entry.
/// Long, because a loose entry can give a wrong answer (a header moved without
/// `Runtime::relocate` after the release); bounded, because the owner may be waiting for the
/// hasher (Java: `synchronized (o) { pool.submit(() -> map.put(o, x)).get(); }`), which would
/// otherwise be a deadlock. Under loom time never passes, so the models never park loose.
pub(crate) const HASH_WAIT_BOUND: std::time::Duration = std::time::Duration::from_secs(1);

/// Whether a hasher that began waiting for an owner's release at `since` has waited
/// [`HASH_WAIT_BOUND`]. Under loom time never passes, except in a process with
/// `OBJMON_LOOM_LOOSE` set, where the bound has always passed: the models of a loose entry
/// (`tests/loom_hash_loose.rs`) park one at once.
pub(crate) fn waited_enough(since: std::time::Instant) -> bool {
    #[cfg(loom)]
    if std::env::var_os("OBJMON_LOOM_LOOSE").is_some() {
        return true;
    }
    crate::sync::deadline_passed(Some(since + HASH_WAIT_BOUND))
}

/// Hashes parked by header address (see the module documentation).
pub(crate) struct SideHashes {
    map: Mutex<HashMap<usize, Parked>>,
    /// Entries in `map`, written under its mutex: lets owners, `reclaim` and `peek` skip the
    /// mutex while the table is empty (the common case: it holds only hashes of objects
    /// another thread holds nested, until that thread's next unlock of them).
    len: AtomicUsize,
}

/// The locked side table.
pub(crate) struct SideGuard<'a> {
    map: MutexGuard<'a, HashMap<usize, Parked>>,
    len: &'a AtomicUsize,
}

impl SideGuard<'_> {
    /// Whether an entry parked for a nested hold of `owner` (a raw thread id) is here.
    pub(crate) fn owns_any(&self, owner: u32) -> bool {
        self.len.load(Ordering::Relaxed) != 0
            && self.map.values().any(|p| p.owner == owner && !p.loose)
    }

    /// Whether a loose entry of `owner` (a raw thread id) is here.
    pub(crate) fn owns_loose(&self, owner: u32) -> bool {
        self.len.load(Ordering::Relaxed) != 0
            && self.map.values().any(|p| p.owner == owner && p.loose)
    }

    pub(crate) fn get(&self, a: usize) -> Option<Parked> {
        self.map.get(&a).copied()
    }

    pub(crate) fn insert(&mut self, a: usize, p: Parked) {
        self.map.insert(a, p);
        self.len.store(self.map.len(), Ordering::Release);
    }

    pub(crate) fn remove(&mut self, a: usize) -> Option<Parked> {
        let v = self.map.remove(&a);
        self.len.store(self.map.len(), Ordering::Release);
        v
    }

    #[cfg(all(test, not(loom)))]
    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The hasher's park, once it has read `a`'s word under this guard and found it held by
    /// `owner` (nested; or once, with `loose`): an entry already there answers if `live`
    /// (else it is discarded with its monitor); otherwise a fresh monitor holding `fresh()`
    /// is parked, and — unless `loose` without `release_looks` — the hasher's half of the
    /// Dekker runs: barrier, then `still_owned()` re-reads the word. `None`: the owner may
    /// have missed the entry (it went down to one level, inflated, or — `release_looks`, a
    /// loose entry whose owner's release looks at its mark — let go), which is withdrawn:
    /// look again.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn park(
        &mut self,
        monitors: &MonitorTable,
        a: usize,
        owner: u32,
        loose: bool,
        live: impl Fn(&Parked) -> bool,
        fresh: &dyn Fn() -> u32,
        asymmetric: bool,
        release_looks: bool,
        still_owned: impl FnOnce() -> bool,
    ) -> Result<Option<u32>, MonitorError> {
        if let Some(p) = self.get(a) {
            if live(&p) {
                return Ok(Some(p.hash));
            }
            // Parked for a header that moved away while a forgotten guard held it.
            self.remove(a);
            monitors.free(p.monitor);
        }
        let monitor = monitors.allocate()?;
        monitors.bind(monitor, a);
        let hash = monitors.get(monitor).install_hash(fresh());
        self.insert(
            a,
            Parked {
                hash,
                monitor,
                owner,
                loose,
            },
        );
        if loose && !release_looks {
            return Ok(Some(hash));
        }
        // The hasher's half of the Dekker (`SideHashes::owner_must_look`): entry, barrier, word.
        SideHashes::hasher_barrier(asymmetric);
        if still_owned() {
            // Its decrement to one level (or an inflation) comes later and will see it.
            return Ok(Some(hash));
        }
        self.remove(a);
        monitors.free(monitor);
        Ok(None)
    }

    /// `m`, the monitor `a`'s word names, has no hash (checked here, under the guard, where
    /// every monitor hash of these protocols is installed): it takes the hash parked for `a`
    /// if that entry is `live`, else `fresh()` (`None`: leave it without; 0). The entry goes
    /// either way, with its monitor.
    pub(crate) fn adopt_into(
        &mut self,
        monitors: &MonitorTable,
        a: usize,
        m: &FatMonitor,
        live: impl Fn(&Parked) -> bool,
        fresh: Option<&dyn Fn() -> u32>,
    ) -> u32 {
        if let Some(v) = m.identity_hash() {
            return v;
        }
        let parked = self.remove(a).and_then(|p| {
            monitors.free(p.monitor);
            live(&p).then_some(p.hash)
        });
        match parked.or_else(|| fresh.map(|f| f())) {
            Some(v) => m.install_hash(v),
            None => 0,
        }
    }

    /// The owner settling `a` (it holds the lock once, after a decrement): the entry parked
    /// for it, with its monitor entered once for `t`, ready for the owner to publish. A stale
    /// entry (parked for another owner and not loose: a header that moved away) is discarded.
    pub(crate) fn take_for_owner<'m>(
        &mut self,
        monitors: &'m MonitorTable,
        a: usize,
        t: &Arc<ThreadCore>,
    ) -> Option<(Parked, &'m FatMonitor)> {
        let p = self.remove(a)?;
        if p.owner != t.raw_id() && !p.loose {
            monitors.free(p.monitor);
            return None;
        }
        let m = monitors.get(p.monitor);
        m.enter_inflated(t, 1)
            .expect("a parked monitor is fresh and one level is not zero");
        Some((p, m))
    }
}

impl SideHashes {
    pub(crate) fn new() -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
            len: AtomicUsize::new(0),
        }
    }

    /// The table, locked: every decision about a parked hash.
    pub(crate) fn lock(&self) -> SideGuard<'_> {
        SideGuard {
            map: lock(&self.map),
            len: &self.len,
        }
    }

    /// Whether the table may hold an entry. `false` means: every hash ever parked has been
    /// settled (moved into its monitor) or discarded before this call, and that is visible
    /// to the caller — so a caller that checks this *before* looking at the header misses no
    /// hash (a settle publishes the monitor before it removes the entry).
    #[inline]
    pub(crate) fn may_hold_any(&self) -> bool {
        self.len.load(Ordering::Acquire) != 0
    }

    /// The owner's half of the Dekker that keeps a parked hash from being missed: called by
    /// the thread holding a thin lock right after a store that may end its last slow-path
    /// visit before the header can move (the decrement to one level, an inflation). A
    /// barrier, then [`may_hold_any`](Self::may_hold_any). The hasher's half
    /// ([`hasher_barrier`](Self::hasher_barrier)): insert, barrier, re-load the word. Either
    /// the hasher sees the owner's store (and withdraws its entry) or the owner sees the entry
    /// (and settles it), or both. With `asymmetric` (the process is registered for
    /// `membarrier`, `revoke.rs`) the owner's barrier is a compiler barrier and the hasher's a
    /// `membarrier()` — the owner's nested unlock pays no fence, a hasher that parks pays a
    /// system call; otherwise both are `SeqCst` fences.
    #[inline(always)]
    pub(crate) fn owner_must_look(&self, asymmetric: bool) -> bool {
        if asymmetric {
            crate::membarrier::owner_barrier();
        } else {
            fence(Ordering::SeqCst);
        }
        self.may_hold_any()
    }

    /// The hasher's half of [`owner_must_look`](Self::owner_must_look)'s Dekker, between its
    /// insert and its re-load of the word.
    ///
    /// If `membarrier` fails after the process registered (never seen; `revoke.rs` then makes
    /// every later runtime symmetric), the hasher falls back to a `SeqCst` fence, which orders
    /// only its own side: an owner's nested unlock racing this park may then miss the entry,
    /// which stays in the side table until the next hash call,
    /// a wrong answer only if the header also moves in that window — never undefined
    /// behaviour, never a hang.
    pub(crate) fn hasher_barrier(asymmetric: bool) {
        if !asymmetric || !crate::membarrier::process_barrier() {
            fence(Ordering::SeqCst);
        }
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

    /// `reclaim`: takes `a`'s entry, if any (the caller frees its monitor).
    pub(crate) fn forget(&self, a: usize) -> Option<Parked> {
        if self.may_hold_any() {
            self.lock().remove(a)
        } else {
            None
        }
    }
}

impl std::fmt::Debug for SideHashes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SideHashes({})", self.len.load(Ordering::Relaxed))
    }
}
