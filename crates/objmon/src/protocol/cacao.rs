//! `cacao`: the monitors of CACAO (Krall and Probst, seed 003, §'Mutex implementation' to
//! §'Results'): no lock bits in the object at all; a hash table indexed by the object's
//! address holds the mutexes of the objects that are locked.
//!
//! Header ([`HostWord`]): one 32-bit word the protocol never reads or writes.
//!
//! | bits  | meaning                                                                  |
//! |-------|--------------------------------------------------------------------------|
//! | 31..0 | host bits (all 32: class pointer half, hash, GC state — the host's)      |
//!
//! Lock bits per object: 0 ([`Cacao::HEADER_LOCK_BITS`]). The word exists only to give each
//! object a distinct, stable address, which is the hash key: a zero-sized header would not
//! (zero-sized values share addresses), and a host always has some header word to lend.
//!
//! Layout, as in the seed: a table of 2^n entries ([`BUCKET_BITS`]; the hash folds the 2n
//! least significant bits of the address above its alignment into n bits, "four RISC
//! instructions": shift, shift, xor, and), external chaining through a preallocated pool of
//! [`POOL_ENTRIES`] overflow entries on a free list, and `struct entry { obj; mutex; next }`
//! where the mutex (holder, count, waiters) is a [`FatMonitor`] from the runtime's monitor
//! table (owner, count, entry queue, and the wait set Java needs besides). The first chain
//! entry keeps its monitor when its count drops to zero ("the decision is deferred until a
//! mutex with the same hash code gets locked"), so the common monitorenter needs no free-slot
//! check and allocates nothing; an overflow entry gives its monitor and itself back when its
//! count drops to zero (`freeEntry`).
//!
//! Space when many objects are locked at once: per bucket 32 bytes (a one-byte test-and-set
//! lock and a 24-byte entry, padded), per pool entry 24 bytes, all preallocated (2^10 buckets
//! and 1024 pool entries: 56 KiB, [`CacaoState::table_bytes`]), plus one monitor (112 bytes
//! on x86-64, [`MonitorTable::monitor_bytes`](crate::table::MonitorTable::monitor_bytes)) per
//! bucket ever used (kept until a reclaim) and per overflow entry in use. So k objects locked
//! at once cost at most 56 KiB + 112 · (buckets used + k) bytes; objects that are never locked
//! cost nothing beyond the host's word — the seed's point: javac would carry nearly 1 MB of
//! mutexes if each of its 111 504 objects had one, but never locks more than 5 at a time.
//!
//! **What changed for OS threads on several cores, and why.** CACAO ran user-level threads
//! and made each routine atomic by disabling preemption. Here that role is played by a
//! per-bucket test-and-set lock (the seed: "on a multiprocessor system this would need to be
//! implemented using a test-and-set instruction"), held only for the chain work, never while
//! blocking: a thread that must wait for the monitor *pins* the entry (a `users` count under
//! the bucket lock: owner, blocked entrants, waiters) so that it is neither reused for
//! another object (`claimEntry`) nor freed, lets go of the bucket lock, and blocks in the
//! monitor. The seed's fast paths keep their shape and become lock-free: monitorenter reads
//! the first entry and, if it is `o`'s and its holder is the current thread, counts up;
//! monitorexit, if it is `o`'s and the count stays above zero, counts down. Two departures:
//! (1) the seed's monitorexit fast path leaves `holder` set at count 0 (so the same thread's
//! next lock is also a fast path); with OS threads a free monitor must have no holder, or the
//! next thread could not take it without the bucket lock, so locking a free object goes
//! through the bucket lock (`lockMutexForObject`), and the last unlock through
//! `unlockMutexForObject`; (2) `lockMutexForObject` as printed claims a free first entry for
//! `o` without looking down the chain, which would give `o` two mutexes if `o` already had an
//! overflow entry (locked by another thread while the first entry was busy); we search the
//! chain first.
//!
//! Atomic operations per path: nested enter / exit: none (loads, and the monitor's plain
//! count store); first-level enter: bucket test-and-set, release store, the monitor's
//! compare-and-swap; last-level exit: bucket test-and-set, the monitor's release (one SeqCst
//! fence, no read-modify-write), release store.
//!
//! A full pool or monitor table makes monitorenter fail with `MonitorTableFull`.

use super::Protocol;
use crate::monitor::{FatMonitor, WaitOutcome};
use crate::runtime::{Config, Runtime};
use crate::sync::{spin_hint, yield_now, AtomicBool, AtomicU32, AtomicUsize, Ordering};
use crate::table::MonitorIndex;
use crate::thread::{ThreadContext, ThreadId};
use crate::MonitorError;
use std::time::Instant;

/// n: the hash table has 2^n buckets.
#[cfg(not(loom))]
pub const BUCKET_BITS: u32 = 10;
/// n: the hash table has 2^n buckets (tiny under loom, so that the models collide).
#[cfg(loom)]
pub const BUCKET_BITS: u32 = 1;
/// Preallocated overflow entries.
#[cfg(not(loom))]
pub const POOL_ENTRIES: u32 = 1024;
/// Preallocated overflow entries (tiny under loom).
#[cfg(loom)]
pub const POOL_ENTRIES: u32 = 2;

/// End of a chain / of the free list.
const NIL: u32 = u32::MAX;

/// A header word left entirely to the host: the protocols that keep monitors outside the
/// object (`cacao`, `monitor-cache`) never read or write it; its address is the object's
/// identity for their hash tables.
#[derive(Debug, Default)]
pub struct HostWord(u32);

impl HostWord {
    /// A header carrying `bits` for the host.
    pub fn new(bits: u32) -> Self {
        Self(bits)
    }

    /// The host's bits.
    pub fn bits(&self) -> u32 {
        self.0
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

impl TasLock {
    pub(crate) fn new() -> Self {
        Self(AtomicBool::new(false))
    }

    #[inline]
    pub(crate) fn lock(&self) -> TasGuard<'_> {
        if self
            .0
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_slow();
        }
        TasGuard(self)
    }

    /// Retries the test-and-set itself (a read-modify-write reads the latest value, where a
    /// plain load may read an old one for a while), with exponential back-off between tries
    /// and yielding once the holder looks preempted. The test-and-set is a compare-and-swap
    /// (same cost as an exchange on x86 and ARMv8.1; with `AtomicBool::swap` the loom models
    /// of this loop never saw the holder's release, for a reason we did not pin down).
    #[cold]
    fn lock_slow(&self) {
        let mut step = 0u32;
        loop {
            if step < 6 {
                for _ in 0..(1u32 << step) {
                    spin_hint();
                }
                step += 1;
            } else {
                yield_now();
            }
            if self
                .0
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }
}

impl Drop for TasGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.0 .0.store(false, Ordering::Release);
    }
}

/// `struct entry { object *obj; struct mutex mux; struct entry *next; }`, plus the pin count.
/// Written only under the bucket lock (pool entries on the free list: under the pool lock);
/// atomics so that the fast paths may read without it (and so that loom sees every access).
struct Entry {
    /// The object's address; 0 = empty.
    obj: AtomicUsize,
    /// Monitor index; 0 = none.
    mon: AtomicU32,
    /// Threads that own the monitor, are blocked entering it, or wait in its wait set
    /// through this entry. An entry with users is neither claimed nor freed.
    users: AtomicU32,
    /// Next pool entry in the chain (or on the free list); `NIL` = end.
    next: AtomicU32,
}

impl Entry {
    fn new(next: u32) -> Self {
        Self {
            obj: AtomicUsize::new(0),
            mon: AtomicU32::new(0),
            users: AtomicU32::new(0),
            next: AtomicU32::new(next),
        }
    }
    #[inline]
    fn obj(&self) -> usize {
        self.obj.load(Ordering::Relaxed)
    }
    #[inline]
    fn next(&self) -> u32 {
        self.next.load(Ordering::Relaxed)
    }
    #[inline]
    fn users(&self) -> u32 {
        self.users.load(Ordering::Relaxed)
    }
    /// Acquire, pairing with the Release stores of `mon`: a reader without the bucket lock
    /// (the fast paths) then also sees the monitor table's chunk that holds the monitor.
    #[inline]
    fn index(&self) -> Option<MonitorIndex> {
        MonitorIndex::new(self.mon.load(Ordering::Acquire))
    }
    fn set_users(&self, n: u32) {
        self.users.store(n, Ordering::Relaxed);
    }
}

struct Bucket {
    lock: TasLock,
    first: Entry,
}

/// The runtime-wide state of `cacao`: the hash table and the overflow pool.
pub struct CacaoState {
    buckets: Box<[Bucket]>,
    pool: Box<[Entry]>,
    pool_lock: TasLock,
    free_head: AtomicU32,
}

impl CacaoState {
    fn new() -> Self {
        Self {
            buckets: (0..1usize << BUCKET_BITS)
                .map(|_| Bucket {
                    lock: TasLock::new(),
                    first: Entry::new(NIL),
                })
                .collect(),
            pool: (0..POOL_ENTRIES)
                .map(|i| Entry::new(if i + 1 < POOL_ENTRIES { i + 1 } else { NIL }))
                .collect(),
            pool_lock: TasLock::new(),
            free_head: AtomicU32::new(if POOL_ENTRIES > 0 { 0 } else { NIL }),
        }
    }

    /// The bucket of an address: the 2n low bits above the alignment, folded into n.
    #[inline]
    pub fn bucket_of(addr: usize) -> usize {
        let a = addr >> std::mem::align_of::<HostWord>().trailing_zeros();
        (a ^ (a >> BUCKET_BITS)) & ((1 << BUCKET_BITS) - 1)
    }

    #[inline]
    fn bucket(&self, o: usize) -> &Bucket {
        &self.buckets[Self::bucket_of(o)]
    }

    /// Overflow entries in use (for tests and reports).
    pub fn overflow_in_use(&self) -> usize {
        let _g = self.pool_lock.lock();
        let mut free = 0;
        let mut i = self.free_head.load(Ordering::Relaxed);
        while i != NIL {
            free += 1;
            i = self.pool[i as usize].next();
        }
        POOL_ENTRIES as usize - free
    }

    /// Bytes of the preallocated table and pool (monitors not included).
    pub fn table_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.buckets) + std::mem::size_of_val(&*self.pool)
    }

    /// Under `b`'s lock: the entry of `o` in `b`'s chain.
    fn find<'s>(&'s self, b: &'s Bucket, o: usize) -> Option<&'s Entry> {
        if b.first.obj() == o {
            return Some(&b.first);
        }
        let mut i = b.first.next();
        while i != NIL {
            let e = &self.pool[i as usize];
            if e.obj() == o {
                return Some(e);
            }
            i = e.next();
        }
        None
    }

    /// Under `b`'s lock: `lockMutexForObject`'s search — `o`'s entry, else the first entry if
    /// it is free (claimEntry, keeping its monitor), else a new overflow entry (allocEntry).
    fn entry_for<'s>(
        &'s self,
        rt: &Runtime<Cacao>,
        b: &'s Bucket,
        o: usize,
    ) -> Result<&'s Entry, MonitorError> {
        if let Some(e) = self.find(b, o) {
            return Ok(e);
        }
        let f = &b.first;
        if f.users() == 0 {
            if f.index().is_none() {
                // The location's first use: the only time it gets a monitor.
                let idx = rt.monitors().allocate()?;
                f.mon.store(idx.get(), Ordering::Release);
            }
            f.obj.store(o, Ordering::Relaxed);
            return Ok(f);
        }
        let i = self.alloc_entry().ok_or(MonitorError::MonitorTableFull)?;
        let idx = match rt.monitors().allocate() {
            Ok(idx) => idx,
            Err(e) => {
                self.free_entry(i);
                return Err(e);
            }
        };
        let e = &self.pool[i as usize];
        e.obj.store(o, Ordering::Relaxed);
        e.mon.store(idx.get(), Ordering::Release);
        e.set_users(0);
        e.next.store(f.next(), Ordering::Relaxed);
        f.next.store(i, Ordering::Relaxed);
        Ok(e)
    }

    fn alloc_entry(&self) -> Option<u32> {
        let _g = self.pool_lock.lock();
        let i = self.free_head.load(Ordering::Relaxed);
        if i == NIL {
            return None;
        }
        self.free_head
            .store(self.pool[i as usize].next(), Ordering::Relaxed);
        Some(i)
    }

    fn free_entry(&self, i: u32) {
        let e = &self.pool[i as usize];
        e.obj.store(0, Ordering::Relaxed);
        e.mon.store(0, Ordering::Relaxed);
        let _g = self.pool_lock.lock();
        e.next
            .store(self.free_head.load(Ordering::Relaxed), Ordering::Relaxed);
        self.free_head.store(i, Ordering::Relaxed);
    }

    /// Under `b`'s lock: takes `o`'s entry out of the table. Its monitor goes back to the
    /// monitor table if nobody uses it, else it is leaked (it is still someone's lock). The
    /// first entry is refilled from the chain, so the chain invariant "first is used if any
    /// is" holds for `entry_for`.
    fn remove(&self, rt: &Runtime<Cacao>, b: &Bucket, o: usize) {
        let Some(e) = self.find(b, o) else { return };
        if let Some(idx) = e.index() {
            if e.users() == 0 {
                rt.monitors().free(idx);
            }
        }
        e.mon.store(0, Ordering::Relaxed);
        e.obj.store(0, Ordering::Relaxed);
        e.set_users(0);
        if std::ptr::eq(e, &b.first) {
            let n = b.first.next();
            if n != NIL {
                let ne = &self.pool[n as usize];
                let f = &b.first;
                f.obj.store(ne.obj(), Ordering::Relaxed);
                f.mon
                    .store(ne.mon.load(Ordering::Relaxed), Ordering::Relaxed);
                f.set_users(ne.users());
                f.next.store(ne.next(), Ordering::Relaxed);
                self.free_entry(n);
            }
        } else {
            self.unlink(b, e);
        }
    }

    /// Under `b`'s lock: unlinks overflow entry `e` and returns it to the pool.
    fn unlink(&self, b: &Bucket, e: &Entry) {
        let mut prev = &b.first;
        loop {
            let i = prev.next();
            debug_assert_ne!(i, NIL, "overflow entry is in its chain");
            if i == NIL {
                return;
            }
            let cur = &self.pool[i as usize];
            if std::ptr::eq(cur, e) {
                prev.next.store(cur.next(), Ordering::Relaxed);
                self.free_entry(i);
                return;
            }
            prev = cur;
        }
    }

    /// Under `b`'s lock: one user of `e` is gone; an overflow entry nobody uses is freed with
    /// its monitor (`freeEntry`), the first entry keeps its monitor.
    fn unpin(&self, rt: &Runtime<Cacao>, b: &Bucket, e: &Entry) {
        let n = e.users() - 1;
        e.set_users(n);
        if n == 0 && !std::ptr::eq(e, &b.first) {
            if let Some(idx) = e.index() {
                rt.monitors().free(idx);
            }
            self.unlink(b, e);
        }
    }
}

impl std::fmt::Debug for CacaoState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacaoState")
            .field("buckets", &self.buckets.len())
            .field("pool", &self.pool.len())
            .finish_non_exhaustive()
    }
}

/// The `cacao` protocol (see the module documentation).
#[derive(Debug)]
pub enum Cacao {}

impl Cacao {
    /// The first chain entry's monitor if the entry is `o`'s, read without the bucket lock.
    ///
    /// Sound for the fast paths, which act only if the current thread owns the monitor: then
    /// it is a user of the entry holding that monitor, which nobody changes while it has
    /// users, and which it has seen under the bucket lock; a monitor index is bound to one
    /// entry at a time and passes from one to another only through the bucket and table
    /// locks (a happens-before chain), so a stale `(obj, mon)` pair naming a monitor the
    /// thread owns through another entry cannot be read.
    #[inline]
    fn first_if(rt: &Runtime<Self>, o: usize) -> Option<&FatMonitor> {
        let f = &rt.state().bucket(o).first;
        if f.obj() != o {
            return None;
        }
        f.index().map(|i| rt.monitors().get(i))
    }

    /// Under the bucket lock: `o`'s monitor if `t` owns it.
    fn owned<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        o: usize,
    ) -> Result<&'r FatMonitor, MonitorError> {
        let st = rt.state();
        let b = st.bucket(o);
        let _g = b.lock.lock();
        st.find(b, o)
            .and_then(Entry::index)
            .map(|i| rt.monitors().get(i))
            .filter(|m| m.is_owned_by(t.core()))
            .ok_or(MonitorError::IllegalMonitorState)
    }

    /// `lockMutexForObject`: find or make `o`'s entry, pin it, then take its monitor with the
    /// bucket lock released (`try_only`: without waiting).
    #[cold]
    fn lock_for_object(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        o: usize,
        try_only: bool,
    ) -> Result<bool, MonitorError> {
        let st = rt.state();
        let b = st.bucket(o);
        let m = {
            let _g = b.lock.lock();
            let e = st.entry_for(rt, b, o)?;
            let m = rt
                .monitors()
                .get(e.index().expect("a used entry has a monitor"));
            if m.is_owned_by(t.core()) {
                // Nested lock of an object whose entry is not first in its chain.
                return m.enter(t.core_arc()).map(|()| true);
            }
            e.set_users(e.users() + 1);
            m
        };
        if !try_only {
            m.enter(t.core_arc())?;
            return Ok(true);
        }
        if m.try_enter(t.core())? {
            return Ok(true);
        }
        let _g = b.lock.lock();
        // Still pinned by us, so still in the chain (maybe moved into the first slot).
        let e = st.find(b, o).expect("a pinned entry stays in its chain");
        st.unpin(rt, b, e);
        Ok(false)
    }

    /// `unlockMutexForObject`: the last level (or any level of a non-first entry).
    #[cold]
    fn unlock_for_object(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        o: usize,
    ) -> Result<(), MonitorError> {
        let st = rt.state();
        let b = st.bucket(o);
        let _g = b.lock.lock();
        let e = st.find(b, o).ok_or(MonitorError::IllegalMonitorState)?;
        let m = e
            .index()
            .map(|i| rt.monitors().get(i))
            .ok_or(MonitorError::IllegalMonitorState)?;
        m.exit(t.core())?;
        if !m.is_owned_by(t.core()) {
            st.unpin(rt, b, e);
        }
        Ok(())
    }
}

impl Protocol for Cacao {
    const NAME: &'static str = "cacao";
    const SUMMARY: &'static str =
        "no header bits: address-hashed monitor table, first entry kept at count 0";
    const HEADER_LOCK_BITS: u32 = 0;

    type Header = HostWord;
    type State = CacaoState;
    type ThreadState = ();

    fn new_state(_: &Config) -> CacaoState {
        CacaoState::new()
    }
    fn new_thread_state(_: ThreadId, _: &Config) {}

    /// Figure `monitorenter()`: first entry is `o`'s and held by us → count + 1.
    #[inline]
    fn enter(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &HostWord,
    ) -> Result<(), MonitorError> {
        let o = h.addr();
        if let Some(m) = Self::first_if(rt, o) {
            if m.is_owned_by(t.core()) {
                return m.enter(t.core_arc());
            }
        }
        Self::lock_for_object(rt, t, o, false).map(|_| ())
    }

    fn try_enter(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &HostWord,
    ) -> Result<bool, MonitorError> {
        let o = h.addr();
        if let Some(m) = Self::first_if(rt, o) {
            if m.is_owned_by(t.core()) {
                return m.enter(t.core_arc()).map(|()| true);
            }
        }
        Self::lock_for_object(rt, t, o, true)
    }

    /// Figure `monitorexit()`: first entry is `o`'s (and the count stays above 0) → count − 1.
    #[inline]
    fn exit(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &HostWord) -> Result<(), MonitorError> {
        let o = h.addr();
        if let Some(m) = Self::first_if(rt, o) {
            if m.count_for(t.core()) > 1 {
                return m.exit(t.core());
            }
        }
        Self::unlock_for_object(rt, t, o)
    }

    fn wait(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &HostWord,
        deadline: Option<Instant>,
    ) -> Result<WaitOutcome, MonitorError> {
        // We stay a user of the entry while in the wait set, so it stays ours.
        Self::owned(rt, t, h.addr())?.wait(t.core_arc(), deadline)
    }

    fn notify(
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
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::Runtime;

    /// Two headers of `hs` that hash to the same bucket.
    fn colliding(hs: &[HostWord]) -> (usize, usize) {
        let mut seen = std::collections::HashMap::new();
        for (i, h) in hs.iter().enumerate() {
            if let Some(&j) = seen.get(&CacaoState::bucket_of(h.addr())) {
                return (j, i);
            }
            seen.insert(CacaoState::bucket_of(h.addr()), i);
        }
        panic!("no collision among {} headers", hs.len());
    }

    /// The header carries no lock state at all.
    #[test]
    fn header_is_left_to_the_host() {
        let rt = Runtime::<Cacao>::with_defaults();
        let me = rt.attach().unwrap();
        let h = HostWord::new(0xdead_beef);
        let g = me.enter(&h).unwrap();
        assert_eq!(h.bits(), 0xdead_beef);
        assert_eq!(me.lock_count(&h), 1);
        drop(g);
        assert_eq!(h.bits(), 0xdead_beef);
    }

    /// "Not destroying the associated mutex when the count goes down to zero": the first
    /// entry keeps its monitor, and relocking allocates nothing.
    #[test]
    fn first_entry_keeps_its_monitor() {
        let rt = Runtime::<Cacao>::with_defaults();
        let me = rt.attach().unwrap();
        let h = HostWord::default();
        drop(me.enter(&h).unwrap());
        assert_eq!(rt.stats_snapshot().live_monitors, 1);
        for _ in 0..100 {
            drop(me.enter(&h).unwrap());
        }
        assert_eq!(rt.monitors().allocations(), 1);
        // Another object with the same hash claims the idle first entry and its monitor.
        let hs: Vec<HostWord> = (0..4096).map(HostWord::new).collect();
        let (i, j) = colliding(&hs);
        drop(me.enter(&hs[i]).unwrap());
        let before = rt.monitors().allocations();
        drop(me.enter(&hs[j]).unwrap());
        assert_eq!(
            rt.monitors().allocations(),
            before,
            "claimEntry reuses the mutex"
        );
    }

    /// A collision while the first entry is busy takes an overflow entry from the pool,
    /// which is freed with its monitor when its count drops to zero.
    #[test]
    fn overflow_entries_come_from_the_pool_and_go_back() {
        let rt = Runtime::<Cacao>::with_defaults();
        let me = rt.attach().unwrap();
        let hs: Vec<HostWord> = (0..4096).map(HostWord::new).collect();
        let (i, j) = colliding(&hs);
        let a = me.enter(&hs[i]).unwrap();
        let b = me.enter(&hs[j]).unwrap();
        let b2 = me.enter(&hs[j]).unwrap();
        assert_eq!(rt.state().overflow_in_use(), 1);
        assert_eq!(rt.stats_snapshot().live_monitors, 2);
        assert_eq!(me.lock_count(&hs[j]), 2);
        drop(b2);
        drop(b);
        assert_eq!(rt.state().overflow_in_use(), 0);
        assert_eq!(rt.stats_snapshot().live_monitors, 1);
        // The first entry is still busy; the other object is free.
        assert_eq!(rt.owner_of(&hs[j]), None);
        assert_eq!(rt.owner_of(&hs[i]), Some(me.id()));
        drop(a);
    }

    /// The seed's `lockMutexForObject` would claim a free first entry for an object that
    /// already has an overflow entry; we must find that entry instead (one mutex per object).
    #[test]
    fn an_object_in_the_chain_is_not_given_a_second_mutex() {
        let rt = Runtime::<Cacao>::with_defaults();
        let hs: Vec<HostWord> = (0..4096).map(HostWord::new).collect();
        let (i, j) = colliding(&hs);
        let me = rt.attach().unwrap();
        let a = me.enter(&hs[i]).unwrap();
        let b = me.enter(&hs[j]).unwrap(); // overflow entry
        drop(a); // first entry idle now
        std::thread::scope(|s| {
            s.spawn(|| {
                let other = rt.attach().unwrap();
                assert!(other.try_enter(&hs[j]).unwrap().is_none(), "held by `me`");
            });
        });
        assert_eq!(me.lock_count(&hs[j]), 1);
        drop(b);
    }

    /// The figures of the module documentation (64-bit targets).
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn space_figures() {
        assert_eq!(std::mem::size_of::<Bucket>(), 32);
        assert_eq!(std::mem::size_of::<Entry>(), 24);
        assert_eq!(CacaoState::new().table_bytes(), 56 * 1024);
    }

    /// The GC hook drops the entry: a new object at the same address starts unlocked, even if
    /// the dead one was left locked (its monitor is leaked, not freed).
    #[test]
    fn reclaim_forgets_the_address() {
        let rt = Runtime::<Cacao>::with_defaults();
        let me = rt.attach().unwrap();
        let mut h = HostWord::default();
        std::mem::forget(me.enter(&h).unwrap());
        rt.reclaim(&mut h);
        assert_eq!(rt.owner_of(&h), None);
        assert_eq!(me.lock_count(&h), 0);
        drop(me.enter(&h).unwrap());
        rt.reclaim(&mut h);
        assert_eq!(rt.stats_snapshot().live_monitors, 1, "only the leaked one");
    }
}
