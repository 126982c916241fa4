//! `cacao` and `cacao-seed`: the monitors of CACAO (Krall and Probst, seed 003, §'Mutex
//! implementation' to §'Results'): no lock bits in the object at all; a hash table indexed by
//! the object's address holds the mutexes of the objects that are locked. `cacao`
//! ([`Cacao`]) takes and releases a first entry's monitor without the bucket lock (rule M,
//! below); `cacao-seed` ([`CacaoSeed`]) keeps the seed's scope, the bucket lock held over
//! every monitorenter and monitorexit ("`cacao-seed`", below). Everything else is shared
//! ([`CacaoLocks`]).
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
//! and made each routine atomic by disabling preemption. Here that role is played by two
//! locks: a per-bucket test-and-set lock (the seed: "on a multiprocessor system this would
//! need to be implemented using a test-and-set instruction") for the chain work — finding,
//! claiming (`claimEntry`), allocating (`allocEntry`) and freeing (`freeEntry`) entries —
//! and the entry's monitor for the lock itself. The seed's transitions of the table are
//! kept: the first entry keeps `o` and its mutex when the count drops to 0, a colliding
//! object claims it (keeping the mutex) only when it is unlocked, an overflow entry comes
//! from the pool and goes back with its mutex at count 0. Which lock guards which step is
//! ours:
//!
//! - **Rule M.** A first entry's `(obj, mon)` pair changes, away from a pair with monitor
//!   `m`, only by a thread holding `m`'s lock: `claimEntry` takes `m` (a compare-and-swap
//!   under the bucket lock; if it fails the entry is in use and the object gets an overflow
//!   entry) and becomes the new object's owner with it; a reclaim takes `m`'s system lock
//!   (clearing only `obj` when it cannot, a value no check accepts). So a thread that owns
//!   `m` and reads the pair `(o, m)` reads it as it is (see `Cacao::first_if`).
//! - Hence the seed's monitorenter and monitorexit on a first entry need no bucket lock at
//!   all: enter reads the pair, takes the monitor without sleeping (compare-and-swap, then
//!   the entry lock's bounded read-only spin), and checks the pair under it (`first_lock`;
//!   a changed pair: give the monitor back, take the slow path); exit releases the monitor
//!   of a pair it owns, at any level. The owner of a first entry holds no pin: the monitor
//!   it holds keeps the entry.
//! - A thread that must sleep *pins* the entry first (`users`, under the bucket lock), so
//!   that the entry is neither claimed nor freed while it waits, lets go of the bucket lock,
//!   and blocks in the monitor; owning it, it drops the pin (first entry). A waiter in the
//!   wait set pins the first entry for the wait (others own the monitor meanwhile). An
//!   overflow entry's owner keeps its pin until its last exit, as before: overflow entries
//!   are found only under the bucket lock and are freed at zero pins.
//!
//! Before (issue 13 item 4), every first-level enter and last-level exit of a thread other
//! than the last holder took the bucket lock, the exit with the monitor's release inside it
//! (its barrier, its miss on the monitor's line, a futex wake when someone slept): two
//! test-and-set acquisitions per lock+unlock on the line every contender reads, spun on by
//! the other processor and yielded on when its holder was preempted. Those were not sleeps
//! (about 0.01 context switches per lock+unlock at 2–8 threads, `perf stat -e
//! context-switches`, as for `parking_lot`) but line traffic: 2.3–3.4× `parking_lot::Mutex`
//! wall at 8 threads on one object here, up to 135× in an earlier session's loaded runs.
//! Now 1.1–1.35× (figures below). The last holder's pin that stayed counted at count 0 (`sticky`, the seed's
//! `holder` left set) is gone: any thread's relock is now what the sticky relock was (a
//! compare-and-swap and a check), without the revocation it needed.
//!
//! One departure: `lockMutexForObject` as printed claims a free first entry for `o` without
//! looking down the chain, which would give `o` two mutexes if `o` already had an overflow
//! entry (locked by another thread while the first entry was busy); we search the chain
//! first. For the same reason a reclaimed first entry is left empty, not refilled from its
//! chain.
//!
//! Atomic operations per path: nested enter / exit: none (loads, and the monitor's plain
//! count store); first-level enter and last-level exit of a first entry (the seed's line 10
//! and line 8): the monitor's compare-and-swap, and its release (no read-modify-write; a
//! SeqCst fence only on the seed's Figure 7 system lock, `tasuki.rs`), no bucket lock; a contended enter that must sleep adds bucket
//! compare-and-swap and release store twice (pin, unpin); an overflow entry's enter: bucket
//! compare-and-swap, release store, the monitor's compare-and-swap; its last-level exit:
//! bucket compare-and-swap, the monitor's release, release store.
//!
//! Measured instructions per lock+unlock through the guard API (callgrind,
//! `(I(2·10⁵) − I(10⁵)) / 10⁵` of `examples/user_loop.rs PROTOCOL plain|nested N`; 2026-11-25):
//! 159 plain (the bench's uncontended loop; 195 with the sticky pin), 133 nested (154).
//! 2026-11-29: 124 plain, 107 nested (154 / 126 just before) once `enter` and `exit` are
//! inlined into the caller's loop and everything after a failed compare-and-swap is out of
//! line (`enter_contended`); 119 / 103 once `first_lock` stopped re-reading the owner its
//! callers had checked.
//!
//! **Why the inline fast path matters under contention** (issue 13 item 4). A waiter spins
//! read-only on the monitor's lock word and takes it when it sees it free; the owner of a
//! tight loop leaves it free only between its release and its next compare-and-swap. With
//! `enter` a call (a prologue of six pushes, the bucket's hash and the table's look-up
//! before the compare-and-swap) that gap was wide enough that a spinner's dozen looks caught
//! it almost every time (counted: 98–99% of its spins won, against about half of `fat`'s),
//! so the monitor crossed the cores every 20 to 30 lock+unlocks instead of the waiter going
//! to sleep (docs/benchmarks.md, "The owner's gap"). Inline, `examples/contended 3 2,4,8 cacao,parking_lot`, the binaries
//! before and after alternating twice: 19.4–23.6 → 11.8–14.3 ns per lock+unlock,
//! 1.43–2.03× → 0.96–1.08× `parking_lot::Mutex`; one thread, `examples/user_loop time
//! 20000000 cacao`: 9.46 → 7.86 ns.
//!
//! Contended (`examples/contended.rs`, one object, 10⁶ lock+unlock per configuration, the
//! binaries before and after interleaved in 7 rounds on the 2-core machine, medians; wall /
//! thread CPU per lock+unlock, ratio to `parking_lot::Mutex` of the same rounds), quiet
//! machine: 2 threads 1.41× / 1.43× before → 1.32× / 1.37× after; 4 threads 2.76× / 3.02×
//! → 1.35× / 1.57×; 8 threads 2.33× / 2.65× → 1.33× / 1.41×. Context switches per
//! lock+unlock: 0.0001–0.02 before and after, as `parking_lot` (no convoy to remove).
//!
//! **`cacao-seed`** ([`CacaoSeed`]): the seed's scope, kept selectable beside rule M and
//! measured with it. Seed 003's `monitorenter()` and `monitorexit()` (§'Object-Mutex
//! relation', their figures and those of `lockMutexForObject()` and
//! `unlockMutexForObject()`) run the look-up, `lockMutex` / `unlockMutex` (the wake
//! included) and the chain work inside `disablePreemption()`, which "on a multiprocessor
//! system would need to be implemented using a test-and-set instruction" (§'Mutex
//! implementation'): here the bucket's test-and-set lock, held over every enter and exit,
//! nested ones included, with the monitor's compare-and-swap and its release (a fence on
//! Figure 7's, and the wake) inside it. Only an enter that finds the monitor busy pins the entry, lets the lock go and
//! blocks in the monitor (the seed's `blockUntilMutexIsNotLocked`, a thread switch), then
//! drops the pin under the lock. Table, entries, pool, claims (with the monitor taken), pins,
//! waits, reclaim and hash are `cacao`'s, and so is the departure above (the chain searched
//! before a claim). Not kept: the seed's line 8 leaves `holder` set at count 0 and resumes
//! no waiter; the monitor's release clears the owner and wakes a sleeper (Java needs the
//! wake; a relock by the same thread is then the monitor's compare-and-swap). This is
//! `cacao` before rule M (and before it the last exit's release moved out of the bucket
//! lock), without that form's lock-free nested and last-holder paths, which the seed also
//! runs under `disablePreemption()`.
//!
//! Atomic operations, `cacao-seed`: first-level enter: bucket compare-and-swap, the
//! monitor's compare-and-swap, bucket release store; last-level exit: bucket
//! compare-and-swap, the monitor's release (as above), bucket release store; nested
//! enter / exit: the bucket's compare-and-swap and release store each. Instructions per
//! lock+unlock (callgrind, `examples/user_loop.rs` as above, 2026-11-25): 188 plain, 179
//! nested (`cacao` 156 / 130 in the same build).
//!
//! Contended, both side by side (`cargo run --release -p objmon --example contended -- 5
//! 2,4,8 cacao,cacao-seed,parking_lot`: one object, 2·10⁶ lock+unlock per configuration, 5
//! interleaved rounds, medians; one run, 2026-11-25, the machine *loaded*: load average 7.8
//! on 2 cores, other agents compiling), wall / thread CPU per lock+unlock as a ratio to
//! `parking_lot::Mutex` of the same rounds: 2 threads `cacao` 1.40× / 1.25×, `cacao-seed`
//! 2.50× / 2.54×; 4 threads 1.55× / 1.30×, 2.15× / 2.49×; 8 threads 1.05× / 1.39×, 2.71× /
//! 5.49× (ns: 8 threads wall 25.5 / 65.9 / 24.3, CPU 24.6 / 97.4 / 17.7 for `cacao` /
//! `cacao-seed` / `parking_lot`). The seed's scope costs about 2× `cacao` in wall time here,
//! and its CPU grows with the threads that spin on the bucket's line.
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
    /// Pins: threads blocked entering the monitor through this entry or waiting in its wait
    /// set, and, on an overflow entry, its owner (the owner of a first entry holds the
    /// monitor instead of a pin, see the module documentation). An entry with pins is
    /// neither claimed nor freed.
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
    /// `true` with it: the first entry was claimed with its monitor taken, which `t` now
    /// owns (it took it to claim, rule M of the module documentation).
    fn entry_for<'s, const S: bool>(
        &'s self,
        rt: &Runtime<CacaoLocks<S>>,
        t: &ThreadContext<CacaoLocks<S>>,
        b: &'s Bucket,
        o: usize,
    ) -> Result<(&'s Entry, bool), MonitorError> {
        if let Some(e) = self.find(b, o) {
            return Ok((e, false));
        }
        // `o` gets an entry here: it becomes this runtime's address first, and another live
        // runtime's entry for it is `ForeignHeader` (issue 11 item 13, `binding.rs`). Every
        // failure below gives the claim back.
        rt.monitors().claim(o)?;
        let f = &b.first;
        if f.users() == 0 {
            let taken = match f.index() {
                // claimEntry: only with the monitor taken (rule M): an owner of the earlier
                // object holds no pin, only the monitor; blocked entrants and waiters pin.
                Some(i) => {
                    let m = rt.monitors().get(i);
                    !m.is_owned_by(t.core()) && m.try_enter(t.core()) == Ok(true)
                }
                None => {
                    // The location's first use (or its first after a reclaim): the only time
                    // it gets a monitor. A pair with no monitor changes without one.
                    let idx = rt
                        .monitors()
                        .allocate()
                        .inspect_err(|_| rt.monitors().release(o))?;
                    f.mon.store(idx.get(), Ordering::Release);
                    f.obj.store(o, Ordering::Relaxed);
                    rt.monitors().bind(idx, o);
                    // A stale reader of an earlier pair may hold a just-freed monitor for the
                    // few instructions of its validation: then the caller enters it as a
                    // pinned entrant.
                    let m = rt.monitors().get(idx);
                    return Ok((f, m.try_enter(t.core()) == Ok(true)));
                }
            };
            if taken {
                // The earlier object (if any) has no entry here any more.
                let old = f.obj();
                if old != 0 {
                    rt.monitors().release(old);
                }
                f.obj.store(o, Ordering::Relaxed);
                f.index().inspect(|&i| rt.monitors().bind(i, o));
                return Ok((f, true));
            }
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
        Ok((e, false))
    }

    /// Gives a monitor nobody uses back to the table. A stale lock-free reader (see
    /// `Cacao::first_lock`) may still hold the monitor for the few instructions of its
    /// validation: wait for that to end.
    fn free_monitor<const S: bool>(rt: &Runtime<CacaoLocks<S>>, idx: MonitorIndex) {
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

    /// Under `b`'s lock: takes `o`'s entry out of the table (`o` is dead: nobody is inside
    /// an operation on it). An overflow entry's monitor goes back to the monitor table if
    /// nobody pins it, else it is leaked (it is still someone's lock). The first entry is left
    /// empty, not refilled from the chain (`entry_for` searches the chain before it claims
    /// the first entry; a refill would carry an overflow owner's pin into a first entry,
    /// whose owner holds none). Its monitor goes back to the table only if we can take it
    /// and nobody pins it (rule M: the pair changes with the monitor's lock held). Otherwise
    /// (a forgotten guard holds it, a stale reader is validating under it, or threads are
    /// inside an operation on the dead object) the entry keeps the monitor and its pins with
    /// `obj` cleared — a value no validation accepts — and is claimed again once the monitor
    /// is free and unpinned (never, for a forgotten guard: then the monitor is leaked).
    fn remove<const S: bool>(&self, rt: &Runtime<CacaoLocks<S>>, b: &Bucket, o: usize) {
        let Some(e) = self.find(b, o) else { return };
        rt.monitors().release(o);
        if !std::ptr::eq(e, &b.first) {
            if let Some(idx) = e.index() {
                if e.users() == 0 {
                    Self::free_monitor(rt, idx);
                }
            }
            self.unlink(b, e);
            return;
        }
        let Some(idx) = e.index() else { return };
        let m = rt.monitors().get(idx);
        if e.users() == 0 && m.system_lock().try_lock() {
            e.mon.store(0, Ordering::Relaxed);
            e.obj.store(0, Ordering::Relaxed);
            // SAFETY: we hold the system lock (the `try_lock` just above); nobody owns the
            // monitor through it, since everyone else's `enter` / `try_enter` failed.
            unsafe { m.system_lock().unlock() };
            Self::free_monitor(rt, idx);
        } else {
            e.obj.store(0, Ordering::Relaxed);
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
    fn unpin<const S: bool>(&self, rt: &Runtime<CacaoLocks<S>>, b: &Bucket, e: &Entry) {
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
/// blocks in the monitor, and drops the pin under the bucket lock once it owns it. What
/// [`Cacao`] was before rule M (issue 13 item 4), minus its lock-free nested and last-holder
/// paths, which the seed's routines run under `disablePreemption()` too; its measured cost
/// beside [`Cacao`] is in the module documentation ("`cacao-seed`").
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

impl<const S: bool> CacaoLocks<S> {
    /// The first chain entry's monitor if the entry is `o`'s, read without the bucket lock: a
    /// snapshot, to act on only once the current thread owns that monitor.
    ///
    /// Rule M (module documentation): a first entry's `(obj, mon)` pair changes away from a
    /// pair with monitor `i` only by a thread that holds `i`'s lock (a claim holds it as its
    /// new owner, a reclaim holds the system lock; the one exception, a reclaim clearing
    /// `obj` to 0, no check accepts). So a thread that owns `i` and reads the pair `(o, i)`
    /// reads the pair as it is: nobody changes it while we hold `i`, and whoever changed it
    /// before released `i` after (its release, our acquire: we see the change). A pair that
    /// gets `i` afresh gets it from the monitor table (first use, `mon` stored before `obj`,
    /// Release / Acquire), so reading `mon` first and then `obj` never pairs a new monitor
    /// with an old object either. Hence the fast paths may trust `(o, i)` whenever they own
    /// `i`: the nested enter, every exit, and `first_lock`'s check.
    #[inline]
    fn first_if(rt: &Runtime<Self>, o: usize) -> Option<(&Entry, MonitorIndex)> {
        let f = &rt.state().bucket(o).first;
        if f.obj() != o {
            return None;
        }
        f.index().map(|i| (f, i))
    }

    /// The seed's monitorenter of a first entry that `first_if` found `o`'s, without the
    /// bucket lock: take the monitor without sleeping (with `spin`, the entry lock's bounded
    /// read-only spin; without, one compare-and-swap), then check under it that the entry is
    /// still `o`'s with that monitor (rule M, see `first_if`). The owner of a first entry
    /// holds no pin: holding the monitor is what keeps the entry from being claimed. The
    /// caller has checked that `t` does not own `m`.
    #[inline(always)]
    fn first_lock(
        t: &ThreadContext<Self>,
        o: usize,
        f: &Entry,
        idx: MonitorIndex,
        m: &FatMonitor,
        spin: bool,
    ) -> Result<FirstLock, MonitorError> {
        // Not `try_enter`: the caller has checked the owner, so its own owner test (and the
        // second load of the owner field) would find nothing.
        let took = if spin {
            m.spin_enter(t.core())
        } else if m.try_lock_unowned() {
            m.own_locked(t.core());
            true
        } else {
            false
        };
        if !took {
            return Ok(FirstLock::Busy);
        }
        // `mon` first (Acquire), then `obj`: see `first_if`.
        if f.index() == Some(idx) && f.obj() == o {
            return Ok(FirstLock::Owned);
        }
        m.exit(t.core())?;
        Ok(FirstLock::Stale)
    }

    /// `cacao`'s monitorenter once its one compare-and-swap failed (`enter`): the owner's
    /// nested enter is not here (`enter` counts it up inline), so the monitor was busy or the
    /// pair stale. Spin on a first entry's monitor (checking the pair under it, as
    /// `first_lock`), then `lockMutexForObject`.
    #[cold]
    #[inline(never)]
    fn enter_contended(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        o: usize,
    ) -> Result<(), MonitorError> {
        let mut spun = false;
        if let Some((f, idx)) = Self::first_if(rt, o) {
            let m = rt.monitors().get(idx);
            if m.is_owned_by(t.core()) {
                // A nested enter (`enter`'s inline test finds it first: only we change a pair
                // whose monitor we hold); checked so that the spin below never runs on a
                // monitor of ours.
                return m.enter(t.core_arc());
            }
            match Self::first_lock(t, o, f, idx, m, true)? {
                FirstLock::Owned => return Ok(()),
                FirstLock::Busy => spun = true,
                FirstLock::Stale => {}
            }
        }
        Self::lock_for_object(rt, t, o, false, spun).map(|_| ())
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

    /// `lockMutexForObject`, out of line (`cacao`'s slow path): see `lock_in_bucket`.
    #[cold]
    fn lock_for_object(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        o: usize,
        try_only: bool,
        spun: bool,
    ) -> Result<bool, MonitorError> {
        Self::lock_in_bucket(rt, t, o, try_only, spun)
    }

    /// `lockMutexForObject`, under the bucket lock: find or make `o`'s entry (a claimed first
    /// entry comes with its monitor, ours); a nested lock counts up. With `try_only`, or in
    /// `cacao-seed` (the seed's `lockMutex` inside `disablePreemption()`): one try of the
    /// monitor under the bucket lock, and `try_only` stops there. Otherwise pin the entry,
    /// take its monitor with the bucket lock released (blocking), and, owning a first entry,
    /// drop the pin (the monitor keeps the entry). `spun`: the caller has just spun on the
    /// monitor in vain, so go straight to the entry queue.
    #[inline(always)]
    fn lock_in_bucket(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        o: usize,
        try_only: bool,
        spun: bool,
    ) -> Result<bool, MonitorError> {
        let st = rt.state();
        let b = st.bucket(o);
        let (m, first) = {
            let _g = b.lock.lock();
            let (e, owned) = st.entry_for(rt, t, b, o)?;
            if owned {
                return Ok(true);
            }
            let m = rt
                .monitors()
                .get(e.index().expect("a used entry has a monitor"));
            let first = std::ptr::eq(e, &b.first);
            if m.is_owned_by(t.core()) {
                // Nested lock (`cacao`: of an object whose entry is not first in its chain;
                // `cacao-seed`: any, the seed's line 10 under `disablePreemption()`).
                return m.enter(t.core_arc()).map(|()| true);
            }
            if try_only || S {
                // The bucket lock keeps the entry `o`'s for the try: no pin needed for it.
                if m.try_enter(t.core())? {
                    if !first {
                        e.set_users(e.users() + 1); // an overflow entry's owner pins it
                    }
                    return Ok(true);
                }
                if try_only {
                    return Ok(false);
                }
            }
            e.set_users(e.users() + 1);
            (m, first)
        };
        if spun {
            m.enter_spun(t.core_arc());
        } else {
            m.enter(t.core_arc())?;
        }
        if first {
            // Our pin kept the entry `o`'s while we blocked; now the monitor does.
            let _g = b.lock.lock();
            b.first.set_users(b.first.users() - 1);
        }
        Ok(true)
    }

    /// `unlockMutexForObject`, out of line (`cacao`'s slow path): see `unlock_in_bucket`.
    #[cold]
    fn unlock_for_object(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        o: usize,
    ) -> Result<(), MonitorError> {
        Self::unlock_in_bucket(rt, t, o)
    }

    /// `unlockMutexForObject`, under the bucket lock: `o`'s monitor counts down (released, a
    /// sleeper woken, at the last level); an overflow entry's pin goes with the last level and
    /// an overflow entry nobody pins is freed. A thread that does not own `o`'s monitor gets
    /// an error. `cacao` comes here for overflow entries and errors; `cacao-seed` for every
    /// exit (the seed's `monitorexit()` inside `disablePreemption()`).
    #[inline(always)]
    fn unlock_in_bucket(
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
        if !m.is_owned_by(t.core()) && !std::ptr::eq(e, &b.first) {
            st.unpin(rt, b, e);
        }
        Ok(())
    }
}

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
    unsafe fn enter(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
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
        // and takes it across the cores (issue 13 item 4; docs/benchmarks.md).
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
    unsafe fn exit(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
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
    fn header_is_left_to_the_host<const S: bool>() {
        let rt = Runtime::<CacaoLocks<S>>::with_defaults();
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
    fn first_entry_keeps_its_monitor<const S: bool>() {
        let rt = Runtime::<CacaoLocks<S>>::with_defaults();
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
    fn overflow_entries_come_from_the_pool_and_go_back<const S: bool>() {
        let rt = Runtime::<CacaoLocks<S>>::with_defaults();
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
    fn an_object_in_the_chain_is_not_given_a_second_mutex<const S: bool>() {
        let rt = Runtime::<CacaoLocks<S>>::with_defaults();
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

    /// The first entry keeps `o` and its monitor at count 0 with no pin on it: any thread
    /// relocks it by taking the monitor (no bucket lock, no pin), and a colliding object
    /// claims it, monitor and all, once the monitor is free (the seed's claimEntry).
    fn idle_first_entry_is_relocked_without_pins_and_claimed<const S: bool>() {
        let rt = Runtime::<CacaoLocks<S>>::with_defaults();
        let me = rt.attach().unwrap();
        let hs: Vec<HostWord> = (0..4096).map(HostWord::new).collect();
        let (i, j) = colliding(&hs);
        let f = &rt.state().bucket(hs[i].addr()).first;
        drop(me.enter(&hs[i]).unwrap());
        assert_eq!((f.obj(), f.users()), (hs[i].addr(), 0));
        let g = me.enter(&hs[i]).unwrap();
        assert_eq!(
            f.users(),
            0,
            "the owner of a first entry holds the monitor, no pin"
        );
        std::thread::scope(|s| {
            s.spawn(|| {
                let other = rt.attach().unwrap();
                // Busy: `hs[j]` gets an overflow entry, freed when it is unlocked.
                drop(other.enter(&hs[j]).unwrap());
                assert_eq!(rt.state().overflow_in_use(), 0);
                assert_eq!(f.obj(), hs[i].addr());
            });
        });
        drop(g);
        std::thread::scope(|s| {
            s.spawn(|| {
                let other = rt.attach().unwrap();
                drop(other.enter(&hs[j]).unwrap()); // free: claimed
                assert_eq!(f.obj(), hs[j].addr());
            });
        });
        assert_eq!(
            rt.monitors().allocations(),
            2,
            "one first entry, one overflow entry"
        );
        drop(me.enter(&hs[i]).unwrap()); // claims it back
        assert_eq!(f.obj(), hs[i].addr());
        assert_eq!(rt.monitors().allocations(), 2, "claimEntry kept the mutex");
        assert_eq!(rt.owner_of(&hs[i]), None);
    }

    /// A waiter pins the first entry while others own its monitor: a colliding object
    /// cannot claim it meanwhile, and the pin goes when the waiter owns the monitor again.
    fn a_waiter_pins_the_first_entry<const S: bool>() {
        let rt = Runtime::<CacaoLocks<S>>::with_defaults();
        let hs: Vec<HostWord> = (0..4096).map(HostWord::new).collect();
        let (i, j) = colliding(&hs);
        let f = &rt.state().bucket(hs[i].addr()).first;
        let waiting = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let me = rt.attach().unwrap();
                let g = me.enter(&hs[i]).unwrap();
                waiting.store(true, std::sync::atomic::Ordering::SeqCst);
                g.wait(None).unwrap();
                assert_eq!(f.users(), 0);
                assert_eq!(f.obj(), hs[i].addr());
            });
            let other = rt.attach().unwrap();
            while !waiting.load(std::sync::atomic::Ordering::SeqCst) {
                std::thread::yield_now();
            }
            // Once we hold `hs[i]` the waiter is in the wait set, pinning the entry.
            let g = other.enter(&hs[i]).unwrap();
            assert_eq!(f.users(), 1);
            drop(other.enter(&hs[j]).unwrap());
            assert_eq!(f.obj(), hs[i].addr(), "a pinned first entry is not claimed");
            g.notify().unwrap();
            drop(g);
        });
        assert_eq!(rt.state().overflow_in_use(), 0);
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
    fn an_entry_claims_its_address<const S: bool>() {
        let ra = Runtime::<CacaoLocks<S>>::with_defaults();
        let rb = Runtime::<CacaoLocks<S>>::with_defaults();
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
    fn reclaim_forgets_the_address<const S: bool>() {
        let rt = Runtime::<CacaoLocks<S>>::with_defaults();
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
    fn hash_in_host_word<const S: bool>() {
        let rt = Runtime::<CacaoLocks<S>>::with_defaults();
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

    /// Each check above, once per flavor: the two share everything but the bucket lock's
    /// scope in `enter`, `try_enter` and `exit`.
    macro_rules! both_flavors {
        ($($name:ident),* $(,)?) => {
            mod cacao {
                $(#[test]
                fn $name() {
                    super::$name::<false>();
                })*
            }
            mod cacao_seed {
                $(#[test]
                fn $name() {
                    super::$name::<true>();
                })*
            }
        };
    }

    both_flavors!(
        header_is_left_to_the_host,
        first_entry_keeps_its_monitor,
        overflow_entries_come_from_the_pool_and_go_back,
        an_object_in_the_chain_is_not_given_a_second_mutex,
        idle_first_entry_is_relocked_without_pins_and_claimed,
        a_waiter_pins_the_first_entry,
        an_entry_claims_its_address,
        reclaim_forgets_the_address,
        hash_in_host_word,
    );
}
