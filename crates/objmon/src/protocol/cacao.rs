//! `cacao`: the monitors of CACAO (Krall and Probst, seed 003, §'Mutex implementation' to
//! §'Results'): no lock bits in the object at all; a hash table indexed by the object's
//! address holds the mutexes of the objects that are locked.
//!
//! Header ([`HostWord`]): one 32-bit word the locking paths never read or write.
//!
//! | bits  | meaning                                                                  |
//! |-------|--------------------------------------------------------------------------|
//! | 31..8 | identity hash (24 bits, 0 = none), installed by one compare-and-swap     |
//! | 7..0  | host bits (GC state, age — the host's)                                   |
//!
//! The identity hash is the only thing this protocol writes into the object: with no lock
//! state in the header, any thread installs it with one compare-and-swap whatever the lock's
//! state, and no locking path can disturb it. Since it arrived the host keeps 8 of the 32 bits
//! (it had all of them). Cost of a hash: nothing beyond the word.
//!
//! Lock bits per object: 0 ([`Cacao::HEADER_LOCK_BITS`]). The word exists only to give each
//! object a distinct, stable address, which is the hash key: a zero-sized header would not
//! (zero-sized values share addresses), and a host always has some header word to lend.
//!
//! Layout, as in the seed: a table of 2^n entries ([`BUCKET_BITS`]; the hash folds the 2n
//! least significant bits of the address above its alignment into n bits, "four RISC
//! instructions": shift, shift, xor, and), external chaining through a preallocated pool of
//! [`POOL_ENTRIES`] overflow entries on a free list, and `struct entry { obj; mutex; next }`
//! where the mutex (holder, count, waiters) is a `FatMonitor` from the runtime's monitor
//! table (owner, count, entry queue, and the wait set Java needs besides). The first chain
//! entry keeps its monitor when its count drops to zero ("the decision is deferred until a
//! mutex with the same hash code gets locked"), so the common monitorenter needs no free-slot
//! check and allocates nothing; an overflow entry gives its monitor and itself back when its
//! count drops to zero (`freeEntry`).
//!
//! Space when many objects are locked at once: per bucket 32 bytes (a one-byte test-and-set
//! lock and a 24-byte entry, padded), per pool entry 24 bytes, all preallocated (2^10 buckets
//! and 1024 pool entries: 56 KiB, [`CacaoState::table_bytes`]; the pool grows in doubling,
//! never-freed chunks when all 1024 are in use), plus one monitor (64 bytes
//! on x86-64, `MonitorTable::monitor_bytes`) per
//! bucket ever used (kept until a reclaim) and per overflow entry in use. So k objects locked
//! at once cost at most 56 KiB + 64 · (buckets used + k) bytes; objects that are never locked
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
//! monitor. The seed's fast paths keep their shape and need no bucket lock: monitorenter
//! reads the first entry and, if it is `o`'s and its holder is the current thread, counts up;
//! monitorexit, if it is `o`'s and the current thread holds it, counts down. The seed's
//! monitorexit leaves `holder` set at count 0, so that the same thread's next lock of the
//! object is line 10 again (92–97 % of all monitorenters in its table of execution statistics);
//! we keep that: the last holder keeps its pin on the first entry (`sticky`) and relocks by
//! taking the monitor with one compare-and-swap, then checking under it that its pin is still
//! there. A thread that wants the entry for another object (`claimEntry`) revokes the pin only
//! while holding the monitor itself; a waiter turns its sticky pin into an ordinary one first,
//! because others hold the monitor while it waits. One departure: `lockMutexForObject` as
//! printed claims a free first entry for `o` without looking down the chain, which would give
//! `o` two mutexes if `o` already had an overflow entry (locked by another thread while the
//! first entry was busy); we search the chain first.
//!
//! Atomic operations per path: nested enter / exit: none (loads, and the monitor's plain
//! count store); the last holder's relock and unlock (the seed's line 10 and line 8 at count
//! 0): the monitor's compare-and-swap, and its release (one SeqCst fence, no read-modify-
//! write), no bucket lock; any other thread's first-level enter: bucket compare-and-swap,
//! release store, the monitor's compare-and-swap; its last-level exit: bucket
//! compare-and-swap, the monitor's release, release store.
//!
//! Measured instructions per lock+unlock through the guard API (callgrind,
//! `(I(2·10⁵) − I(10⁵)) / 10⁵` of `examples/user_loop.rs PROTOCOL plain|nested N`; 2026-11-25):
//! 195 for the last holder's relock and unlock (the bench's uncontended loop), 154 nested.
//!
//! Only a full monitor table (`Config::monitor_capacity`) makes monitorenter fail with
//! `MonitorTableFull`: the overflow pool grows as long as monitors are left; and an object
//! whose address has an entry in another live runtime's table fails with `ForeignHeader`
//! (issue 11 item 13): an entry claims its address in the process-wide set
//! (`MonitorTable::claim`, `binding.rs`) when it is made for an object and releases it when
//! it goes or is taken over for another object, off the fast paths.

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
    /// The seed's `holder` left set at count 0 (first entries only): the raw id of the last
    /// holder, whose pin stays counted in `users` after its last exit, so that its next lock
    /// needs no bucket lock; 0 = none. Set under the bucket lock by that holder while it owns
    /// the monitor; revoked only by a thread that holds the monitor (see
    /// `CacaoState::revoke_sticky`) or by a reclaim.
    sticky: AtomicU32,
}

impl Entry {
    fn new(next: u32) -> Self {
        Self {
            obj: AtomicUsize::new(0),
            mon: AtomicU32::new(0),
            users: AtomicU32::new(0),
            next: AtomicU32::new(next),
            sticky: AtomicU32::new(0),
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
    #[inline]
    fn sticky(&self) -> u32 {
        self.sticky.load(Ordering::Relaxed)
    }
    fn set_sticky(&self, id: u32) {
        self.sticky.store(id, Ordering::Relaxed);
    }
    fn set_users(&self, n: u32) {
        self.users.store(n, Ordering::Relaxed);
    }
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

impl EntryPool {
    /// Chunk and offset of entry `i`.
    #[inline]
    fn locate(i: u32) -> (usize, usize) {
        let q = i / POOL_ENTRIES + 1;
        let k = 31 - q.leading_zeros();
        let base = POOL_ENTRIES * ((1 << k) - 1);
        (k as usize, (i - base) as usize)
    }

    fn new(limit: u32) -> Self {
        let pool = Self {
            chunks: (0..POOL_CHUNKS)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            grown: AtomicUsize::new(0),
            limit: limit.max(POOL_ENTRIES),
        };
        pool.grow().expect("the first chunk is always allowed");
        pool
    }

    /// Entries in all chunks allocated so far.
    fn len(&self) -> u32 {
        POOL_ENTRIES * ((1 << self.grown.load(Ordering::Relaxed)) - 1)
    }

    /// Under the pool lock (or in `new`): allocates the next chunk, its entries chained in
    /// index order; returns its first index, or `None` at the limit.
    fn grow(&self) -> Option<u32> {
        let k = self.grown.load(Ordering::Relaxed);
        let base = self.len();
        if k >= POOL_CHUNKS || base >= self.limit {
            return None;
        }
        let n = POOL_ENTRIES << k;
        let chunk: Box<[Entry]> = (0..n)
            .map(|j| Entry::new(if j + 1 < n { base + j + 1 } else { NIL }))
            .collect();
        self.chunks[k].store(Box::into_raw(chunk) as *mut Entry, Ordering::Release);
        self.grown.store(k + 1, Ordering::Relaxed);
        Some(base)
    }

    #[inline]
    fn get(&self, i: u32) -> &Entry {
        let (k, off) = Self::locate(i);
        let chunk = self.chunks[k].load(Ordering::Acquire);
        assert!(!chunk.is_null(), "overflow entry {i} was never allocated");
        // SAFETY: index `i` came from a chain or the free list, which only ever hold indices
        // of allocated chunks (`grow` chains a chunk's entries only after allocating it, and
        // publishes the chunk with a Release store that our Acquire load saw — non-null
        // checked); chunk `k` is a leaked `Box<[Entry]>` of `POOL_ENTRIES << k` entries freed
        // only by `Drop for EntryPool` (`&mut self`), so it outlives `&self`; `locate` gives
        // `off < POOL_ENTRIES << k`.
        unsafe { &*chunk.add(off) }
    }
}

impl Drop for EntryPool {
    fn drop(&mut self) {
        for (k, c) in self.chunks.iter().enumerate() {
            let p = c.load(Ordering::Relaxed);
            if !p.is_null() {
                let n = (POOL_ENTRIES as usize) << k;
                // SAFETY: `p` came from `Box::into_raw` of a boxed slice of `n` entries in
                // `grow`, and is freed once, here (`&mut self`: no reference into it is left).
                drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, n)) });
            }
        }
    }
}

/// The runtime-wide state of `cacao`: the hash table and the overflow pool.
pub struct CacaoState {
    buckets: Box<[Bucket]>,
    pool: EntryPool,
    pool_lock: TasLock,
    free_head: AtomicU32,
}

impl CacaoState {
    fn new(monitor_capacity: u32) -> Self {
        Self {
            buckets: (0..1usize << BUCKET_BITS)
                .map(|_| Bucket {
                    lock: TasLock::new(),
                    first: Entry::new(NIL),
                })
                .collect(),
            pool: EntryPool::new(monitor_capacity),
            pool_lock: TasLock::new(),
            free_head: AtomicU32::new(0),
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
            i = self.pool.get(i).next();
        }
        self.pool.len() as usize - free
    }

    /// Bytes of the table and of the pool's chunks allocated so far (monitors not
    /// included).
    pub fn table_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.buckets)
            + self.pool.len() as usize * std::mem::size_of::<Entry>()
    }

    /// Under `b`'s lock: the entry of `o` in `b`'s chain.
    fn find<'s>(&'s self, b: &'s Bucket, o: usize) -> Option<&'s Entry> {
        if b.first.obj() == o {
            return Some(&b.first);
        }
        let mut i = b.first.next();
        while i != NIL {
            let e = self.pool.get(i);
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
        t: &ThreadContext<Cacao>,
        b: &'s Bucket,
        o: usize,
    ) -> Result<&'s Entry, MonitorError> {
        if let Some(e) = self.find(b, o) {
            return Ok(e);
        }
        // `o` gets an entry here: it becomes this runtime's address first, and another live
        // runtime's entry for it is `ForeignHeader` (issue 11 item 13, `binding.rs`). Every
        // failure below gives the claim back.
        rt.monitors().claim(o)?;
        let f = &b.first;
        if f.users() == 0 || Self::revoke_sticky(rt, t, f) {
            if f.index().is_none() {
                // The location's first use: the only time it gets a monitor.
                let idx = rt
                    .monitors()
                    .allocate()
                    .inspect_err(|_| rt.monitors().release(o))?;
                f.mon.store(idx.get(), Ordering::Release);
            }
            // claimEntry: the earlier object (if any) has no entry here any more.
            let old = f.obj();
            if old != 0 {
                rt.monitors().release(old);
            }
            f.obj.store(o, Ordering::Relaxed);
            f.index().inspect(|&i| rt.monitors().bind(i, o));
            return Ok(f);
        }
        let Some(i) = self.alloc_entry() else {
            rt.monitors().release(o);
            return Err(MonitorError::MonitorTableFull);
        };
        let idx = match rt.monitors().allocate() {
            Ok(idx) => idx,
            Err(e) => {
                self.free_entry(i);
                rt.monitors().release(o);
                return Err(e);
            }
        };
        let e = self.pool.get(i);
        rt.monitors().bind(idx, o);
        e.obj.store(o, Ordering::Relaxed);
        e.mon.store(idx.get(), Ordering::Release);
        e.set_users(0);
        e.next.store(f.next(), Ordering::Relaxed);
        f.next.store(i, Ordering::Relaxed);
        Ok(e)
    }

    /// Under `b`'s lock: drops the first entry's sticky pin if it is its only user, so that
    /// the entry can be claimed for another object. The sticky holder may be between its
    /// lock-free check and its `try_enter`; taking the monitor ourselves excludes it, and it
    /// validates `sticky` after its `try_enter`, so it sees the revocation (our release of
    /// the monitor orders it) and backs off to the bucket lock.
    fn revoke_sticky(rt: &Runtime<Cacao>, t: &ThreadContext<Cacao>, f: &Entry) -> bool {
        if f.users() != 1 || f.sticky() == 0 {
            return false;
        }
        let Some(m) = f.index().map(|i| rt.monitors().get(i)) else {
            return false;
        };
        if m.is_owned_by(t.core()) || m.try_enter(t.core()) != Ok(true) {
            return false;
        }
        f.set_sticky(0);
        f.set_users(0);
        m.exit(t.core()).is_ok()
    }

    /// Gives a monitor nobody uses back to the table. A sticky holder's stale lock-free read
    /// may still make it hold the monitor for the few instructions of its validation: wait
    /// for that to end.
    fn free_monitor(rt: &Runtime<Cacao>, idx: MonitorIndex) {
        while !rt.monitors().get(idx).is_idle() {
            yield_now();
        }
        rt.monitors().free(idx);
    }

    fn alloc_entry(&self) -> Option<u32> {
        let _g = self.pool_lock.lock();
        let mut i = self.free_head.load(Ordering::Relaxed);
        if i == NIL {
            i = self.pool.grow()?;
        }
        self.free_head
            .store(self.pool.get(i).next(), Ordering::Relaxed);
        Some(i)
    }

    fn free_entry(&self, i: u32) {
        let e = self.pool.get(i);
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
        if e.sticky() != 0 {
            // Nobody is inside an operation on a dead object: the pin is idle.
            e.set_sticky(0);
            e.set_users(e.users() - 1);
        }
        if let Some(idx) = e.index() {
            if e.users() == 0 {
                Self::free_monitor(rt, idx);
            }
        }
        e.mon.store(0, Ordering::Relaxed);
        e.obj.store(0, Ordering::Relaxed);
        e.set_users(0);
        rt.monitors().release(o);
        if std::ptr::eq(e, &b.first) {
            let n = b.first.next();
            if n != NIL {
                let ne = self.pool.get(n);
                let f = &b.first;
                f.obj.store(ne.obj(), Ordering::Relaxed);
                f.mon
                    .store(ne.mon.load(Ordering::Relaxed), Ordering::Release);
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
            let cur = self.pool.get(i);
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
                Self::free_monitor(rt, idx);
            }
            rt.monitors().release(e.obj());
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
    ///
    /// The sticky holder's lock acts on a check that may be stale; it validates it after
    /// taking the monitor (see `sticky_lock`).
    #[inline]
    fn first_if(rt: &Runtime<Self>, o: usize) -> Option<(&Entry, MonitorIndex)> {
        let f = &rt.state().bucket(o).first;
        if f.obj() != o {
            return None;
        }
        f.index().map(|i| (f, i))
    }

    /// The seed's line 10 for the last holder (count 0 → 1 with `holder` still set): take the
    /// monitor without waiting, then check under it that our sticky pin on `o`'s entry and
    /// its monitor are still there (only a thread holding the monitor revokes the pin).
    #[inline]
    fn sticky_lock(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        o: usize,
        f: &Entry,
        idx: MonitorIndex,
    ) -> Result<bool, MonitorError> {
        let m = rt.monitors().get(idx);
        if f.sticky() != t.core().raw_id() || !m.try_enter(t.core())? {
            return Ok(false);
        }
        if f.sticky() == t.core().raw_id() && f.obj() == o && f.index() == Some(idx) {
            return Ok(true);
        }
        m.exit(t.core())?;
        Ok(false)
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
            let e = st.entry_for(rt, t, b, o)?;
            let m = rt
                .monitors()
                .get(e.index().expect("a used entry has a monitor"));
            if m.is_owned_by(t.core()) {
                // Nested lock of an object whose entry is not first in its chain.
                return m.enter(t.core_arc()).map(|()| true);
            }
            if e.sticky() == t.core().raw_id() {
                // Our sticky pin becomes this lock's pin (a blocked entrant must hold a pin
                // nobody can revoke).
                e.set_sticky(0);
            } else {
                e.set_users(e.users() + 1);
            }
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

    /// The last level of a first entry that is `o`'s, by its owner (`f`, `m`: read by
    /// `first_if` while owning `m`, so they are `o`'s): release the monitor first, with the
    /// bucket lock not held, then take the bucket lock for the pin alone (keep it as the
    /// sticky one, or drop it).
    ///
    /// Not the seed's order (issue 13 item 4): `unlockMutexForObject` runs `unlockMutex`
    /// (which resumes a waiter) inside `disablePreemption()`, which costs nothing on one
    /// processor; here that critical section is a bucket lock other processors spin on, and
    /// the release's barrier and its read of the entry queue (a miss on the monitor's line
    /// under contention, and a futex wake when a thread sleeps) made it several times longer
    /// than the pin bookkeeping. Sound because our pin, not the bucket lock, is what keeps
    /// the entry `o`'s: it stays counted until the bucket lock is ours again, so nothing can
    /// claim or free the entry between the release and the unpin (an entry with users is
    /// neither, see `entry_for` and `unpin`); and the release happens before the unpin, which
    /// happens before whatever a claimer does after seeing the entry unused (bucket lock).
    #[cold]
    fn unlock_first(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        o: usize,
        f: &Entry,
        m: &FatMonitor,
    ) -> Result<(), MonitorError> {
        m.exit(t.core())?;
        let st = rt.state();
        let b = st.bucket(o);
        let _g = b.lock.lock();
        debug_assert!(
            std::ptr::eq(f, &b.first) && f.obj() == o,
            "a pinned first entry stays the object's"
        );
        if f.sticky() == 0 {
            // The seed's monitorexit leaves `holder` set: keep our pin as the sticky one.
            f.set_sticky(t.core().raw_id());
        } else {
            st.unpin(rt, b, f);
        }
        Ok(())
    }

    /// `unlockMutexForObject`: the last level of a non-first entry (or any level of one),
    /// or an exit by a thread that does not own `o`'s first-entry monitor (an error).
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
            if std::ptr::eq(e, &b.first) && e.sticky() == 0 {
                // The seed's monitorexit leaves `holder` set: keep our pin as the sticky one.
                e.set_sticky(t.core().raw_id());
            } else {
                st.unpin(rt, b, e);
            }
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

    fn new_state(config: &Config) -> CacaoState {
        CacaoState::new(config.monitor_capacity)
    }
    fn new_thread_state(_: ThreadId, _: &Config) {}

    /// Figure `monitorenter()`: first entry is `o`'s and held by us → count + 1.
    #[inline]
    unsafe fn enter(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &HostWord,
    ) -> Result<(), MonitorError> {
        let o = h.addr();
        if let Some((f, idx)) = Self::first_if(rt, o) {
            let m = rt.monitors().get(idx);
            if m.is_owned_by(t.core()) {
                return m.enter(t.core_arc());
            }
            if Self::sticky_lock(rt, t, o, f, idx)? {
                return Ok(());
            }
        }
        Self::lock_for_object(rt, t, o, false).map(|_| ())
    }

    unsafe fn try_enter(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &HostWord,
    ) -> Result<bool, MonitorError> {
        let o = h.addr();
        if let Some((f, idx)) = Self::first_if(rt, o) {
            let m = rt.monitors().get(idx);
            if m.is_owned_by(t.core()) {
                return m.enter(t.core_arc()).map(|()| true);
            }
            if Self::sticky_lock(rt, t, o, f, idx)? {
                return Ok(true);
            }
        }
        Self::lock_for_object(rt, t, o, true)
    }

    /// Figure `monitorexit()`: first entry is `o`'s (and the count stays above 0) → count − 1.
    #[inline]
    unsafe fn exit(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &HostWord,
    ) -> Result<(), MonitorError> {
        let o = h.addr();
        if let Some((f, idx)) = Self::first_if(rt, o) {
            let m = rt.monitors().get(idx);
            let c = m.count_for(t.core());
            // Count stays above 0, or we hold the sticky pin, which outlives the lock.
            if c > 1 || (c == 1 && f.sticky() == t.core().raw_id()) {
                return m.exit(t.core());
            }
            if c == 1 {
                return Self::unlock_first(rt, t, o, f, m);
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
        // We stay a user of the entry while in the wait set, so it stays ours; but a sticky
        // pin can be revoked by whoever holds the monitor, which others will while we wait:
        // turn it into an ordinary pin first.
        let o = h.addr();
        let st = rt.state();
        let b = st.bucket(o);
        let m = {
            let _g = b.lock.lock();
            let e = st.find(b, o).ok_or(MonitorError::IllegalMonitorState)?;
            let m = e
                .index()
                .map(|i| rt.monitors().get(i))
                .filter(|m| m.is_owned_by(t.core()))
                .ok_or(MonitorError::IllegalMonitorState)?;
            if e.sticky() == t.core().raw_id() {
                e.set_sticky(0);
            }
            m
        };
        m.wait(t.core_arc(), deadline)
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
mod tests {
    use super::*;
    use crate::vm::Runtime;

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
        let h = HostWord::new(0xef);
        let g = me.enter(&h).unwrap();
        assert_eq!(h.raw(), 0xef);
        assert_eq!(me.lock_count(&h), 1);
        drop(g);
        assert_eq!(h.raw(), 0xef);
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

    /// The seed keeps `holder` at count 0: after its last unlock the holder still pins the
    /// first entry, relocks without the bucket lock, and loses the pin to a colliding object
    /// only when that one needs the entry.
    #[test]
    fn last_holder_stays_sticky() {
        let rt = Runtime::<Cacao>::with_defaults();
        let me = rt.attach().unwrap();
        let hs: Vec<HostWord> = (0..4096).map(HostWord::new).collect();
        let (i, j) = colliding(&hs);
        let f = &rt.state().bucket(hs[i].addr()).first;
        drop(me.enter(&hs[i]).unwrap());
        assert_eq!((f.sticky(), f.users()), (me.context().core().raw_id(), 1));
        let g = me.enter(&hs[i]).unwrap();
        assert_eq!(f.users(), 1, "the relock used the sticky pin");
        drop(g);
        std::thread::scope(|s| {
            s.spawn(|| {
                let other = rt.attach().unwrap();
                drop(other.enter(&hs[j]).unwrap()); // revokes our pin and claims the entry
                assert_eq!(f.obj(), hs[j].addr());
                assert_eq!(f.sticky(), other.context().core().raw_id());
            });
        });
        assert_eq!(rt.state().overflow_in_use(), 0);
        assert_eq!(rt.monitors().allocations(), 1, "claimEntry kept the mutex");
        drop(me.enter(&hs[i]).unwrap());
        assert_eq!(rt.owner_of(&hs[i]), None);
    }

    /// The figures of the module documentation (64-bit targets).
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn space_figures() {
        assert_eq!(std::mem::size_of::<Bucket>(), 32);
        assert_eq!(std::mem::size_of::<Entry>(), 24);
        assert_eq!(
            CacaoState::new(crate::table::MAX_MONITOR_INDEX).table_bytes(),
            56 * 1024
        );
    }

    /// Issue 11 item 13: an address with an entry in runtime A's table is `ForeignHeader` to
    /// runtime B, which keeps no entry, monitor or claim from the attempt. A's first entry
    /// claimed for another object gives the old address's claim back.
    #[test]
    fn an_entry_claims_its_address() {
        let ra = Runtime::<Cacao>::with_defaults();
        let rb = Runtime::<Cacao>::with_defaults();
        let (a, b) = (ra.attach().unwrap(), rb.attach().unwrap());
        let hs: Vec<HostWord> = (0..4096).map(HostWord::new).collect();
        let (i, j) = colliding(&hs);
        drop(a.enter(&hs[i]).unwrap());
        assert_eq!(b.enter(&hs[i]).err(), Some(MonitorError::ForeignHeader));
        assert_eq!(b.try_enter(&hs[i]).err(), Some(MonitorError::ForeignHeader));
        assert_eq!(rb.stats_snapshot().live_monitors, 0);
        assert_eq!(rb.monitors().claimed(), 0);
        assert_eq!(rb.state().overflow_in_use(), 0);
        // `hs[j]` takes over the idle first entry of the same bucket: `hs[i]` is free again.
        drop(a.enter(&hs[j]).unwrap());
        assert_eq!(ra.monitors().claimed(), 1);
        drop(b.enter(&hs[i]).unwrap());
        assert_eq!(a.enter(&hs[i]).err(), Some(MonitorError::ForeignHeader));
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

    /// The hash goes into bits 31..8 of the host word; the host's 8 bits stay.
    #[test]
    fn hash_in_host_word() {
        let rt = Runtime::<Cacao>::with_defaults();
        let me = rt.attach().unwrap();
        let mut h = HostWord::new(0x3c);
        let g = me.enter(&h).unwrap();
        let v = me.identity_hash(&h).unwrap();
        assert!((1..1 << 24).contains(&v));
        assert_eq!(h.raw(), v << 8 | 0x3c);
        drop(g);
        assert_eq!(me.identity_hash(&h), Ok(v));
        assert_eq!(h.bits(), 0x3c);
        rt.reclaim(&mut h);
        assert_eq!(h.raw(), 0x3c);
    }
}
