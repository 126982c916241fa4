//! `cacao` and `cacao-seed`: the monitors of CACAO (Krall and Probst, seed 003, §'Mutex
//! implementation' to §'Results'): no lock bits in the object at all; a hash table indexed by
//! the object's address holds the mutexes of the objects that are locked. `cacao` ([`Cacao`])
//! takes and releases a first entry's monitor without the bucket lock (rule M, below);
//! `cacao-seed` ([`CacaoSeed`]) holds the bucket lock over every monitorenter and monitorexit,
//! the seed's scope of `disablePreemption()`. This file owns the header, the table's types and
//! the entry points ([`CacaoLocks`]); `table.rs` the table and its chain work, `locking.rs`
//! the paths between them, `tests.rs` the unit tests.
//!
//! Header ([`HostWord`]): one 32-bit word the locking paths never read or write; its address
//! is the object's key. Lock bits per object: 0 ([`Cacao::HEADER_LOCK_BITS`]).
//!
//! | bits  | meaning                                                                  |
//! |-------|--------------------------------------------------------------------------|
//! | 31..8 | identity hash (24 bits, 0 = none), installed by one compare-and-swap     |
//! | 7..0  | host bits (GC state, age — the host's)                                   |
//!
//! Table, as in the seed: 2^[`BUCKET_BITS`] buckets (the hash folds the address's low bits,
//! "four RISC instructions"), chaining through a pool of overflow entries, `struct entry { obj;
//! mutex; next }` with a `FatMonitor` as the mutex. A first entry keeps its monitor at count
//! 0; an overflow entry gives it back with itself (`freeEntry`). Departures from the seed:
//! - OS threads on several cores: a per-bucket test-and-set lock guards the chain work, the
//!   entry's monitor guards the lock itself (the seed disables preemption);
//! - `cacao` takes a first entry's monitor without the bucket lock (rule M);
//! - the chain is searched before a free first entry is claimed (the printed
//!   `lockMutexForObject` would give an object with an overflow entry a second mutex), and a
//!   reclaimed first entry is left empty;
//! - the overflow pool grows in never-freed doubling chunks up to `Config::monitor_capacity`
//!   (the seed's is fixed), so only a full monitor table fails monitorenter;
//! - a monitor's release clears its owner and wakes a sleeper (the seed leaves `holder` set);
//! - an entry claims its address process-wide, so another runtime's object is `ForeignHeader`.
//!
//! Invariants:
//! - **Rule M.** A first entry's `(obj, mon)` pair changes, away from a pair with monitor `m`,
//!   only by a thread holding `m`'s lock (a claim takes `m`; a reclaim takes its system lock,
//!   or clears only `obj`, a value no check accepts). So a thread that owns `m` and reads the
//!   pair `(o, m)` reads it as it is (`first_if`).
//! - An entry with pins (`users`) is neither claimed nor freed: a thread that must sleep, and
//!   a waiter, pins the entry under the bucket lock first; an overflow entry's owner keeps its
//!   pin until its last exit. The owner of a first entry holds no pin: its monitor keeps it.
//! - Chain and pool entries are written only under the bucket lock (the pool lock for the free
//!   list); an entry index read from a chain always names an entry (chunks are never freed).
//!
//! The argument in full: docs/soundness.md, "`cacao`: rule M, pins and the pool".
//!
//! | path (`cacao`; callgrind per lock + unlock: 119 plain, 103 nested) | atomic operations |
//! |------------------------------------------|-----------------------------------------------|
//! | nested enter / exit                      | none (loads, the monitor's plain count store) |
//! | first entry: first enter / last exit     | the monitor's CAS / its release store; no bucket lock |
//! | a contended enter that sleeps, besides   | bucket CAS and release store, twice (pin, unpin) |
//! | overflow entry: first enter / last exit  | bucket CAS, release, monitor CAS / bucket CAS, monitor release, release |
//! | `cacao-seed` (203 plain, 194 nested)     | every enter and exit inside bucket CAS … release store |
//!
//! (Measurements and what was tried: docs/benchmarks.md, "Protocol notes moved out of the code".)

use super::Protocol;
use crate::monitor::{FatMonitor, WaitOutcome};
use crate::protocol::ThreadContext;
use crate::runtime::{Config, Runtime};
use crate::sync::{spin_hint, yield_now, AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use crate::table::MonitorIndex;
use crate::thread::ThreadId;
use crate::MonitorError;
use std::time::Instant;

/// n: the hash table has 2^n buckets.
#[cfg(not(loom))]
pub const BUCKET_BITS: u32 = 10;
/// n: the hash table has 2^n buckets (tiny under loom, so that the models collide).
#[cfg(loom)]
pub const BUCKET_BITS: u32 = 1;
/// Preallocated overflow entries (the pool's first chunk; it grows by doubling chunks).
#[cfg(not(loom))]
pub const POOL_ENTRIES: u32 = 1024;
/// Preallocated overflow entries (tiny under loom, so that the models grow the pool).
#[cfg(loom)]
pub const POOL_ENTRIES: u32 = 2;
/// Most chunks of the overflow pool: chunk `k` holds `POOL_ENTRIES << k` entries, so 24 chunks
/// cover far more than the 2^23 − 1 monitors an overflow entry can have.
const POOL_CHUNKS: usize = 24;

/// End of a chain / of the free list.
const NIL: u32 = u32::MAX;

/// The header of the protocols that keep monitors outside the object (`cacao`,
/// `monitor-cache`): their locking paths never read or write it — its address is the object's
/// identity for their hash tables — and it holds the identity hash in bits 31..8 and the
/// host's 8 bits in 7..0.
#[derive(Debug)]
pub struct HostWord(AtomicU32);

/// The host's bits of a [`HostWord`].
pub const HOST_WORD_HOST_BITS: u32 = 0xff;
const HOST_WORD_HASH_SHIFT: u32 = 8;

impl Default for HostWord {
    /// No host bits, no hash.
    fn default() -> Self {
        Self::new(0)
    }
}

impl HostWord {
    crate::sync::const_unless_loom! {
    /// A header carrying `bits` for the host; bits outside [`HOST_WORD_HOST_BITS`] are
    /// ignored (they hold the identity hash).
    pub fn new(bits: u32) -> Self {
        Self(AtomicU32::new(bits & HOST_WORD_HOST_BITS))
    }
    }

    /// The host's bits.
    pub fn bits(&self) -> u32 {
        self.0.load(Ordering::Relaxed) & HOST_WORD_HOST_BITS
    }

    /// The whole word, for introspection and tests (a racy snapshot).
    pub fn raw(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }

    /// Bits of the identity hash.
    pub(crate) const HASH_BITS: u32 = 24;

    /// The installed identity hash, if any.
    #[inline]
    pub(crate) fn peek_hash(&self) -> Option<u32> {
        Some(self.0.load(Ordering::Acquire) >> HOST_WORD_HASH_SHIFT).filter(|&v| v != 0)
    }

    /// The identity hash: the installed one, or `fresh()` installed with one
    /// compare-and-swap (the host bits never change after `new`, but a racing hasher may win).
    pub(crate) fn hash(&self, fresh: impl FnOnce() -> u32) -> u32 {
        let w = self.0.load(Ordering::Acquire);
        if w >> HOST_WORD_HASH_SHIFT != 0 {
            return w >> HOST_WORD_HASH_SHIFT;
        }
        let v = fresh();
        match self.0.compare_exchange(
            w,
            w | v << HOST_WORD_HASH_SHIFT,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => v,
            Err(now) => now >> HOST_WORD_HASH_SHIFT,
        }
    }

    /// Forgets the hash (`reclaim`: the object is dead).
    pub(crate) fn clear_hash(&mut self) {
        let w = self.0.load(Ordering::Relaxed);
        self.0.store(w & HOST_WORD_HOST_BITS, Ordering::Relaxed);
    }

    /// The key of this object in an external monitor table.
    #[inline]
    pub(crate) fn addr(&self) -> usize {
        self as *const Self as usize
    }
}

/// A test-and-set lock: the multiprocessor stand-in for CACAO's `disablePreemption()`.
/// Held for a few instructions; a waiter spins, then yields (the holder may be preempted).
pub(crate) struct TasLock(AtomicBool);

pub(crate) struct TasGuard<'a>(&'a TasLock);

/// `struct entry { object *obj; struct mutex mux; struct entry *next; }`, plus the pin count.
/// Written only under the bucket lock (pool entries on the free list: under the pool lock);
/// atomics so that the fast paths may read without it (and so that loom sees every access).
struct Entry {
    /// The object's address; 0 = empty.
    obj: AtomicUsize,
    /// Monitor index; 0 = none.
    mon: AtomicU32,
    /// Pins: threads blocked entering the monitor through this entry or waiting in its wait
    /// set, and, on an overflow entry, its owner (the owner of a first entry holds the
    /// monitor instead of a pin, see the module documentation). An entry with pins is
    /// neither claimed nor freed.
    users: AtomicU32,
    /// Next pool entry in the chain (or on the free list); `NIL` = end.
    next: AtomicU32,
}

struct Bucket {
    lock: TasLock,
    first: Entry,
}

/// The overflow entries: chunks that double in size (`POOL_ENTRIES << k` entries in chunk
/// `k`), allocated on demand under the pool lock and freed only when the state drops, so that
/// an entry index read from any chain always names a valid entry (type-stable, as the monitor
/// table's chunks are). The seed preallocates a fixed pool; a fixed pool makes monitorenter
/// fail where Java never does (one thread holding 2,049 objects whose first entries are busy),
/// so the pool grows until it has as many entries as the runtime has monitors.
struct EntryPool {
    chunks: Box<[AtomicPtr<Entry>]>,
    /// Chunks allocated so far (written under the pool lock).
    grown: AtomicUsize,
    /// Entries never exceed this (`Config::monitor_capacity`: each overflow entry in use
    /// holds a monitor).
    limit: u32,
}

/// The runtime-wide state of `cacao`: the hash table and the overflow pool.
pub struct CacaoState {
    buckets: Box<[Bucket]>,
    pool: EntryPool,
    pool_lock: TasLock,
    free_head: AtomicU32,
}

/// The CACAO protocols (see the module documentation): [`Cacao`] (`SEED = false`, rule M:
/// a first entry's monitor taken and released without the bucket lock) and [`CacaoSeed`]
/// (`SEED = true`, the seed's scope: the bucket lock held over every monitorenter and
/// monitorexit). Same table, entries, pool, claims and pins; only the bucket lock's scope in
/// `enter`, `try_enter` and `exit` differs.
#[derive(Debug)]
pub enum CacaoLocks<const SEED: bool> {}

/// `cacao`: seed 003's table with rule M (module documentation): a first entry's monitor is
/// taken (compare-and-swap, bounded spin, check of the entry under it) and released without
/// the bucket lock; the bucket lock only for the chain work and for pins.
pub type Cacao = CacaoLocks<false>;

/// `cacao-seed`: seed 003 (§'Object-Mutex relation', figures `monitorenter()`,
/// `monitorexit()`, `lockMutexForObject()`, `unlockMutexForObject()`) with the seed's scope of
/// `disablePreemption()`: every monitorenter and monitorexit, nested ones included, runs its
/// look-up, the monitor's lock or unlock (`lockMutex` / `unlockMutex`, wake included) and the
/// chain work inside the bucket's test-and-set lock, the multiprocessor stand-in for
/// `disablePreemption()` that the seed names. Only a monitorenter that must block lets the
/// lock go (the seed's `blockUntilMutexIsNotLocked` switches threads): it pins the entry,
/// blocks in the monitor, and drops the pin under the bucket lock once it owns it. Its
/// measured cost beside [`Cacao`] is in docs/benchmarks.md ("Protocol notes moved out of the
/// code").
pub type CacaoSeed = CacaoLocks<true>;

/// What a lock-free try of a first entry's monitor found (`Cacao::first_lock`).
enum FirstLock {
    /// We own the monitor, and the entry is `o`'s with it.
    Owned,
    /// The monitor stayed busy (after the entry lock's spin, if we spun).
    Busy,
    /// We took the monitor, but the entry had changed: given back.
    Stale,
}

mod locking;
mod table;

impl<const SEED: bool> Protocol for CacaoLocks<SEED> {
    const NAME: &'static str = if SEED { "cacao-seed" } else { "cacao" };
    const SUMMARY: &'static str = if SEED {
        "no header bits: address-hashed monitor table, bucket lock held over every enter and exit (seed 003)"
    } else {
        "no header bits: address-hashed monitor table, first entry kept at count 0"
    };
    const HEADER_LOCK_BITS: u32 = 0;

    type Header = HostWord;
    type State = CacaoState;
    type ThreadState = ();
    type Hint = ();

    fn new_state(config: &Config) -> CacaoState {
        CacaoState::new(config.monitor_capacity)
    }
    fn new_thread_state(_: ThreadId, _: &Config) {}

    /// Figure `monitorenter()`: first entry is `o`'s and held by us → count + 1; first entry
    /// is `o`'s and free → take its monitor and check the entry under it, no bucket lock
    /// (`first_lock`); otherwise `lockMutexForObject`. `cacao-seed`: all of it under the
    /// bucket lock (`lock_in_bucket`), as the seed's `disablePreemption()` brackets it.
    #[inline(always)]
    unsafe fn lock(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        _: u64,
        h: &HostWord,
    ) -> Result<(), MonitorError> {
        let o = h.addr();
        if SEED {
            return Self::lock_in_bucket(rt, t, o, false, false).map(|_| ());
        }
        // Inline: the nested enter, and one compare-and-swap of a first entry's monitor with
        // the pair checked under it. Everything after a failed try is out of line
        // (`enter_contended`): the fewer instructions between an owner's release and its
        // next compare-and-swap, the less often a spinner finds the monitor free in that gap
        // and takes it across the cores (docs/benchmarks.md, "Protocol notes moved out of
        // the code").
        if let Some((f, idx)) = Self::first_if(rt, o) {
            let m = rt.monitors().get(idx);
            if m.is_owned_by(t.core()) {
                return m.enter(t.core_arc());
            }
            if let FirstLock::Owned = Self::first_lock(t, o, f, idx, m, false)? {
                return Ok(());
            }
        }
        Self::enter_contended(rt, t, o)
    }

    unsafe fn try_enter(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &HostWord,
    ) -> Result<bool, MonitorError> {
        let o = h.addr();
        if SEED {
            return Self::lock_in_bucket(rt, t, o, true, false);
        }
        if let Some((f, idx)) = Self::first_if(rt, o) {
            let m = rt.monitors().get(idx);
            if m.is_owned_by(t.core()) {
                return m.enter(t.core_arc()).map(|()| true);
            }
            if let FirstLock::Owned = Self::first_lock(t, o, f, idx, m, false)? {
                return Ok(true);
            }
        }
        Self::lock_for_object(rt, t, o, true, false)
    }

    /// Figure `monitorexit()`: first entry is `o`'s → count − 1, at any level (its owner
    /// holds no pin to drop), no bucket lock; otherwise `unlockMutexForObject`. `cacao-seed`:
    /// all of it under the bucket lock (`unlock_in_bucket`).
    #[inline(always)]
    unsafe fn unlock(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        _: u64,
        _: (),
        h: &HostWord,
    ) -> Result<(), MonitorError> {
        let o = h.addr();
        if SEED {
            return Self::unlock_in_bucket(rt, t, o);
        }
        if let Some((_, idx)) = Self::first_if(rt, o) {
            let m = rt.monitors().get(idx);
            // Owning the monitor, we read the pair as it is (rule M, `first_if`).
            if m.is_owned_by(t.core()) {
                return m.exit(t.core());
            }
        }
        Self::unlock_for_object(rt, t, o)
    }

    unsafe fn wait(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &HostWord,
        deadline: Option<Instant>,
    ) -> Result<WaitOutcome, MonitorError> {
        // While we wait others own the monitor, so holding it no longer keeps a first entry
        // ours: pin it for the wait (an overflow entry's owner pins it already).
        let o = h.addr();
        let st = rt.state();
        let b = st.bucket(o);
        let (m, first) = {
            let _g = b.lock.lock();
            let e = st.find(b, o).ok_or(MonitorError::IllegalMonitorState)?;
            let m = e
                .index()
                .map(|i| rt.monitors().get(i))
                .filter(|m| m.is_owned_by(t.core()))
                .ok_or(MonitorError::IllegalMonitorState)?;
            let first = std::ptr::eq(e, &b.first);
            if first {
                e.set_users(e.users() + 1);
            }
            (m, first)
        };
        let r = m.wait(t.core_arc(), deadline);
        if first {
            // We own the monitor again (whatever `wait` returned): it keeps the entry ours.
            let _g = b.lock.lock();
            b.first.set_users(b.first.users() - 1);
        }
        r
    }

    unsafe fn notify(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &HostWord,
        all: bool,
    ) -> Result<(), MonitorError> {
        Self::owned(rt, t, h.addr())?.notify(t.core(), all)
    }

    fn lock_count(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &HostWord) -> u32 {
        Self::owned(rt, t, h.addr()).map_or(0, |m| m.count_for(t.core()))
    }

    fn owner_of(rt: &Runtime<Self>, h: &HostWord) -> Option<ThreadId> {
        let st = rt.state();
        let o = h.addr();
        let b = st.bucket(o);
        let _g = b.lock.lock();
        st.find(b, o)
            .and_then(Entry::index)
            .and_then(|i| rt.monitors().get(i).owner())
    }

    /// Drops `o`'s entry: the address may be reused by a new object, which must not inherit
    /// the lock. The entry's monitor is freed (or leaked if still owned).
    fn reclaim(rt: &Runtime<Self>, h: &mut HostWord) {
        let st = rt.state();
        let o = h.addr();
        let b = st.bucket(o);
        let _g = b.lock.lock();
        st.remove(rt, b, o);
        drop(_g);
        h.clear_hash();
    }

    const HASH_BITS: u32 = HostWord::HASH_BITS;

    /// One compare-and-swap into the header's hash bits; no lock state is involved.
    unsafe fn identity_hash(
        _rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &HostWord,
    ) -> Result<u32, MonitorError> {
        Ok(h.hash(|| crate::hash::fresh(t.core(), Self::HASH_BITS)))
    }

    fn peek_identity_hash(_rt: &Runtime<Self>, h: &HostWord) -> Option<u32> {
        h.peek_hash()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
