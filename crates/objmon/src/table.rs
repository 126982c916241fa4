//! The monitor table: monitor index → fat monitor (seed 000 §2.3: "the remaining 23 bits of the
//! lock field contain the index of a fat lock. We maintain the table which maps inflated
//! monitor indices to fat locks").
//!
//! Monitors live in chunks allocated on demand and never freed while the table lives, so a
//! look-up is two dependent loads (`chunks[i / CHUNK]`, then the slot) with no lock and no
//! reclamation scheme: a stale index always names *some* valid monitor. Freed indices go on a
//! free list (last in, first out, so a recycled monitor is likely still in cache). Index 0 is
//! never handed out, so a lock field of 0 can mean "no monitor". A full table is an error.
//!
//! **One index space for the process**. A table does not own the indices
//! `1..=capacity`: it takes whole chunks of the 23-bit index space from a process-wide pool
//! ([`CHUNKS`]) as it grows and gives them back when it drops, so two live tables never hand
//! out the same index. A header of runtime A read by runtime B names a chunk B does not hold:
//! [`MonitorTable::try_get`] answers `None` where [`MonitorTable::get`] asserts, with the
//! same two loads and one test, so a protocol's fast path detects another runtime's monitor
//! index at no cost at all. `capacity` bounds how many monitors are allocated at once, not
//! the index values.
//!
//! **One binding of addresses for the process.** A table is also its runtime's owner in the
//! process-wide set of header addresses (`binding.rs`): the protocols that find a monitor by
//! the header's address (`cacao`, `monitor-cache`, `lightweight-table`) claim the address
//! through [`MonitorTable::claim`] when their table gets an entry for it and release it when
//! the entry goes; the table's remaining claims go when it drops.

use crate::binding::Claims;
use crate::monitor::FatMonitor;
use crate::profile::{forget_profiles, TableProfile};
use crate::sync::{lock, AtomicPtr, AtomicU64, AtomicUsize, Mutex, Ordering};
use crate::tasuki::{SystemLockConfig, SystemLockVariant};
use crate::MonitorError;

/// The largest monitor index: 23 bits (seed 000 §2.3).
pub const MAX_MONITOR_INDEX: u32 = (1 << 23) - 1;

#[cfg(not(loom))]
const CHUNK_BITS: u32 = 10;
#[cfg(loom)]
const CHUNK_BITS: u32 = 1;
const CHUNK: usize = 1 << CHUNK_BITS;

/// A monitor index in `1..=MAX_MONITOR_INDEX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MonitorIndex(u32);

impl MonitorIndex {
    /// The index as stored in a lock field.
    #[inline]
    pub fn get(self) -> u32 {
        self.0
    }

    /// Rebuilds an index read from a lock field; `None` for 0 or out of range.
    #[inline]
    pub fn new(raw: u32) -> Option<Self> {
        (raw != 0 && raw <= MAX_MONITOR_INDEX).then_some(Self(raw))
    }
}

struct FreeList {
    free: Vec<u32>,
    /// The next never-used index of the newest chunk, and the end of that chunk (exclusive);
    /// `next == end` when a new chunk is needed.
    next: u32,
    end: u32,
    /// The chunks this table holds (taken from the pool, given back at drop).
    owned: Vec<u32>,
    /// Indices handed out and not freed.
    in_use: u32,
}

/// Chunks of the index space: `1 << (23 - CHUNK_BITS)` of them.
#[cfg(not(loom))]
const N_CHUNKS: usize = (MAX_MONITOR_INDEX as usize + 1) >> CHUNK_BITS;

/// The process-wide pool of index chunks (see the module documentation): a bitmap, lowest
/// free chunk first, so indices stay small.
struct ChunkPool {
    used: Mutex<Vec<u64>>,
    /// How many chunks there are.
    limit: usize,
}

impl ChunkPool {
    #[cfg(not(loom))]
    const fn new() -> Self {
        Self {
            used: Mutex::new(Vec::new()),
            limit: N_CHUNKS,
        }
    }

    #[cfg(loom)]
    fn new(limit: usize) -> Self {
        Self {
            used: Mutex::new(Vec::new()),
            limit,
        }
    }

    fn take(&self) -> Option<u32> {
        let mut used = lock(&self.used);
        if used.is_empty() {
            *used = vec![0; self.limit.div_ceil(64)];
        }
        let (w, bits) = used
            .iter()
            .enumerate()
            .find(|(_, &b)| b != u64::MAX)
            .map(|(w, &b)| (w, b))?;
        let c = w * 64 + bits.trailing_ones() as usize;
        if c >= self.limit {
            return None;
        }
        used[w] |= 1 << (c % 64);
        u32::try_from(c).ok()
    }

    fn give_back(&self, c: u32) {
        let c = c as usize;
        lock(&self.used)[c / 64] &= !(1 << (c % 64));
    }
}

/// Every table's chunks come from here (under loom, each table has a pool of its own: model
/// runs must not share state).
#[cfg(not(loom))]
static CHUNKS: ChunkPool = ChunkPool::new();

/// Index → monitor map with a free list (see the module documentation).
pub struct MonitorTable {
    chunks: Box<[AtomicPtr<FatMonitor>]>,
    capacity: u32,
    config: SystemLockConfig,
    free: Mutex<FreeList>,
    live: AtomicUsize,
    allocations: AtomicU64,
    /// Contention profiling state (see `profile.rs`).
    pub(crate) profile: TableProfile,
    /// The runtime's event sink slot (`events.rs`; 0: events off), given to every monitor.
    pub(crate) events: u8,
    /// This runtime's claims on header addresses (released at drop).
    claims: Claims,
    #[cfg(loom)]
    pool: ChunkPool,
}

impl MonitorTable {
    /// A table that hands out at most `capacity` indices at once (capacity clamped to
    /// 2^23 − 1), whose monitors use `config` for their system lock.
    pub(crate) fn new(capacity: u32, config: SystemLockConfig) -> Self {
        let capacity = capacity.clamp(1, MAX_MONITOR_INDEX);
        if config.variant == SystemLockVariant::Figure7Membarrier {
            // Register for the barrier now, while the program likely has few threads: the
            // registration can take tens of milliseconds once many exist, and the first
            // monitor is built at the first contention (`TasukiLock::new` asks again, cached).
            let _ = crate::membarrier::init();
        }
        // Under loom (2-monitor chunks) only the chunks `capacity` needs, as each table has
        // its own pool there.
        #[cfg(not(loom))]
        let n_chunks = N_CHUNKS;
        #[cfg(loom)]
        let n_chunks = (capacity as usize + 1).div_ceil(CHUNK);
        Self {
            chunks: (0..n_chunks)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            capacity,
            config,
            free: Mutex::new(FreeList {
                free: Vec::new(),
                next: 0,
                end: 0,
                owned: Vec::new(),
                in_use: 0,
            }),
            live: AtomicUsize::new(0),
            allocations: AtomicU64::new(0),
            profile: Default::default(),
            events: 0,
            claims: Claims::new(),
            #[cfg(loom)]
            pool: ChunkPool::new(n_chunks),
        }
    }

    #[inline]
    fn pool(&self) -> &ChunkPool {
        #[cfg(not(loom))]
        return &CHUNKS;
        #[cfg(loom)]
        return &self.pool;
    }

    /// The monitor at `idx`, which this table handed out. Lock-free: two loads.
    #[inline]
    pub(crate) fn get(&self, idx: MonitorIndex) -> &FatMonitor {
        self.try_get(idx)
            .unwrap_or_else(|| panic!("monitor index {} was never allocated", idx.0))
    }

    /// The monitor at `idx` if `idx` lies in a chunk of this table; `None` for an index of
    /// another runtime's table (a header used with two runtimes, see the module
    /// documentation). Lock-free: two loads and a test, as [`get`](Self::get).
    #[inline]
    pub(crate) fn try_get(&self, idx: MonitorIndex) -> Option<&FatMonitor> {
        let i = idx.0 as usize;
        // `idx <= MAX_MONITOR_INDEX`, so `i >> CHUNK_BITS < N_CHUNKS` (under loom the slice
        // has the same length): the bounds check is the compiler's to drop.
        let chunk = self.chunks.get(i >> CHUNK_BITS)?.load(Ordering::Acquire);
        if chunk.is_null() {
            return None;
        }
        // SAFETY:
        // - the chunk pointer is non-null, so this table published it with a Release store
        //   in `allocate` after building every monitor in it, and our Acquire load saw it;
        // - a chunk is a `Box<[FatMonitor; CHUNK]>` leaked into the pointer and freed only in
        //   `Drop for MonitorTable`, which needs `&mut self`, so it outlives the returned
        //   reference (bounded by `&self`);
        // - `i & (CHUNK - 1) < CHUNK`, so the offset stays in the allocation.
        Some(unsafe { &*chunk.add(i & (CHUNK - 1)) })
    }

    /// [`try_get`](Self::try_get) for an index read from a header: `ForeignHeader` when it
    /// names no monitor of this table.
    #[inline]
    pub(crate) fn checked(&self, idx: MonitorIndex) -> Result<&FatMonitor, MonitorError> {
        self.try_get(idx).ok_or(MonitorError::ForeignHeader)
    }

    /// Takes a free index and resets its monitor. Fails when `capacity` are in use, or when
    /// the process's index space is exhausted.
    pub(crate) fn allocate(&self) -> Result<MonitorIndex, MonitorError> {
        let mut fl = lock(&self.free);
        if fl.in_use >= self.capacity {
            return Err(MonitorError::MonitorTableFull);
        }
        let idx = match fl.free.pop() {
            Some(i) => i,
            None => {
                if fl.next == fl.end {
                    let c = self.pool().take().ok_or(MonitorError::MonitorTableFull)?;
                    let base = (c as usize) << CHUNK_BITS;
                    let (on, ev) = (self.profile.on, self.events);
                    let chunk: Box<[FatMonitor]> = (0..CHUNK)
                        .map(|j| FatMonitor::new(self.config).in_table((base + j) as u32, on, ev))
                        .collect();
                    // Release: a reader that sees the pointer sees the monitors built.
                    self.chunks[c as usize]
                        .store(Box::into_raw(chunk) as *mut FatMonitor, Ordering::Release);
                    fl.owned.push(c);
                    // Index 0 (in chunk 0) is never handed out.
                    fl.next = (base as u32).max(1);
                    fl.end = (base + CHUNK) as u32;
                }
                fl.next += 1;
                fl.next - 1
            }
        };
        fl.in_use += 1;
        drop(fl);
        self.live.fetch_add(1, Ordering::Relaxed);
        self.allocations.fetch_add(1, Ordering::Relaxed);
        Ok(MonitorIndex(idx))
    }

    /// Returns `idx` to the free list. The caller guarantees that nobody owns, enters or waits
    /// on the monitor and that no lock field names it any more.
    /// `reclaim`'s free: frees `idx` only if its monitor is idle and bound to some object
    /// (every install binds; `free` unbinds). A stale copy of a relocated header names a
    /// monitor that the copy's new place may have freed already: freeing it again put one
    /// index twice on the free list (two objects sharing a monitor) and underflowed the
    /// in-use count (found by the C API test, which reclaims the old copy after relocating
    /// it). The binding's address is not compared with the header's: safe Rust moves an
    /// unlocked header without telling us, and its monitor must still be freed.
    pub(crate) fn free_if_bound(&self, idx: MonitorIndex) {
        if self
            .try_get(idx)
            .is_some_and(|m| m.is_idle() && m.object.load(Ordering::Relaxed) != 0)
        {
            self.free(idx);
        }
    }

    pub(crate) fn free(&self, idx: MonitorIndex) {
        // Not `is_idle`: a stale first try may hold the system lock for a moment, with no
        // owner, after a deflation (`deflate.rs`); that is no use of the monitor.
        debug_assert!(
            self.get(idx).is_idle_but_for_a_first_try(),
            "freeing a busy monitor"
        );
        // The next object to get this monitor must not inherit an identity hash.
        self.get(idx).clear_hash();
        self.unbind(idx);
        let mut fl = lock(&self.free);
        fl.free.push(idx.0);
        fl.in_use -= 1;
        drop(fl);
        self.live.fetch_sub(1, Ordering::Relaxed);
    }

    /// Claims the header address `a` for this runtime, as its address-keyed table is about to
    /// get an entry for it (already claimed by this runtime: nothing changes). Fails with
    /// `ForeignHeader` while another live runtime's table has an entry for `a`. A slow path:
    /// one process-wide shard mutex.
    pub(crate) fn claim(&self, a: usize) -> Result<(), MonitorError> {
        self.claims.claim(a)
    }

    /// Releases this runtime's claim on `a` (its table's entry for `a` is gone); no effect on
    /// another runtime's claim.
    pub(crate) fn release(&self, a: usize) {
        self.claims.release(a);
    }

    /// Whether another live runtime holds a claim on `a` now.
    pub(crate) fn foreign(&self, a: usize) -> bool {
        self.claims.foreign(a)
    }

    /// Runs `f` unless another live runtime claims `a`, no claim of `a` changing meanwhile
    /// (see `binding.rs`); `f` must be short and take no lock.
    pub(crate) fn if_unclaimed<R>(&self, a: usize, f: impl FnOnce() -> R) -> Option<R> {
        self.claims.if_unclaimed(a, f)
    }

    /// Addresses this table claims now (for tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn claimed(&self) -> usize {
        self.claims.count()
    }

    /// Monitors currently allocated.
    pub fn live(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    /// Monitors allocated since the table was made (inflations, for most protocols).
    #[cfg(all(test, not(loom)))]
    pub fn allocations(&self) -> u64 {
        self.allocations.load(Ordering::Relaxed)
    }

    /// Bytes of one monitor: all of it (its entry queue and wait set are intrusive, their
    /// nodes in the waiting threads' frames; a profiling runtime adds a side-table entry).
    pub fn monitor_bytes() -> usize {
        std::mem::size_of::<FatMonitor>()
    }
}

/// Binding monitors to objects (for reports by object), and introspection support (see
/// `introspect.rs`).
impl MonitorTable {
    /// Records that monitor `idx` now belongs to the object whose header is at `object`
    /// (called by every inflation path and by the external protocols' binding). Profile
    /// figures of an earlier binding are folded into that object's entry first.
    pub(crate) fn bind(&self, idx: MonitorIndex, object: usize) {
        let m = self.get(idx);
        let old = m.object.swap(object, Ordering::Relaxed);
        if self.profile.on && old != object {
            self.profile.fold(old, m.profile_take());
        }
    }

    /// Called when `idx` goes back to the free list: keep its figures under its object.
    pub(crate) fn unbind(&self, idx: MonitorIndex) {
        let m = self.get(idx);
        let old = m.object.swap(0, Ordering::Relaxed);
        if self.profile.on {
            self.profile.fold(old, m.profile_take());
        }
    }

    /// The same table, with contention profiling on or off (`Config::profiling`). Only
    /// before the first allocation: monitors take the setting when their chunk is made.
    pub(crate) fn with_profiling(mut self, on: bool) -> Self {
        self.profile.on = on;
        self
    }

    /// The same table, delivering events to sink slot `id` (`Config::events`; 0: off). Only
    /// before the first allocation, as [`with_profiling`](Self::with_profiling).
    pub(crate) fn with_events(mut self, id: u8) -> Self {
        self.events = id;
        self
    }

    /// Every index handed out so far (free ones included), in chunk order.
    pub(crate) fn handed_out(&self) -> Vec<MonitorIndex> {
        let fl = lock(&self.free);
        let mut v = Vec::new();
        for &c in &fl.owned {
            let base = (c << CHUNK_BITS).max(1);
            let end = if (c << CHUNK_BITS) + CHUNK as u32 == fl.end {
                fl.next
            } else {
                (c << CHUNK_BITS) + CHUNK as u32
            };
            v.extend((base..end).map(MonitorIndex));
        }
        v
    }

    /// Whether some monitor is owned by the thread with raw id `raw` (a scan of every index
    /// handed out, for a detaching thread's last question; racy for other threads' ids).
    pub(crate) fn any_owned_by(&self, raw: u32) -> bool {
        self.handed_out()
            .into_iter()
            .any(|i| self.get(i).owner_raw() == raw)
    }
}

impl Drop for MonitorTable {
    fn drop(&mut self) {
        // No header of a live runtime names these indices any more (the host's rule: a
        // header dies with, or is reclaimed before, its runtime); give them to other tables.
        for &c in &lock(&self.free).owned {
            self.pool().give_back(c);
        }
        for slot in self.chunks.iter() {
            let p = slot.load(Ordering::Relaxed);
            if !p.is_null() {
                let raw = std::ptr::slice_from_raw_parts_mut(p, CHUNK);
                // SAFETY: `p` came from `Box::into_raw` of a `Box<[FatMonitor]>` of length
                // CHUNK in `allocate`, and is dropped exactly once, here, with `&mut self`.
                let chunk = unsafe { Box::from_raw(raw) };
                if self.profile.on {
                    // The addresses may go to another table's monitors next.
                    forget_profiles(&chunk);
                }
                drop(chunk);
            }
        }
    }
}

impl std::fmt::Debug for MonitorTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MonitorTable")
            .field("capacity", &self.capacity)
            .field("live", &self.live())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Two live tables never hand out the same index, and neither resolves
    /// the other's; a dropped table's chunks go to the next table.
    #[test]
    fn tables_share_one_index_space() {
        let config = SystemLockConfig::default();
        let a = MonitorTable::new(MAX_MONITOR_INDEX, config);
        let b = MonitorTable::new(MAX_MONITOR_INDEX, config);
        let ia: Vec<_> = (0..CHUNK + 3).map(|_| a.allocate().unwrap()).collect();
        let ib: Vec<_> = (0..5).map(|_| b.allocate().unwrap()).collect();
        for i in &ia {
            assert!(!ib.contains(i));
            assert!(a.try_get(*i).is_some());
            assert!(b.try_get(*i).is_none());
            assert_eq!(b.checked(*i).err(), Some(MonitorError::ForeignHeader));
        }
        for i in &ib {
            assert!(a.try_get(*i).is_none());
            assert_eq!(b.get(*i).index, i.get());
        }
        assert_eq!(a.handed_out().len(), CHUNK + 3);
        assert!(a.any_owned_by(0));
        // Capacity bounds the count, not the values.
        let small = MonitorTable::new(2, config);
        let (x, y) = (small.allocate().unwrap(), small.allocate().unwrap());
        assert_eq!(small.allocate(), Err(MonitorError::MonitorTableFull));
        small.free(x);
        assert!(small.allocate().is_ok());
        let _ = y;
    }
}
