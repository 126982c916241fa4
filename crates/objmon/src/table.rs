//! The monitor table: monitor index → fat monitor (seed 000 §2.3: "the remaining 23 bits of the
//! lock field contain the index of a fat lock. We maintain the table which maps inflated
//! monitor indices to fat locks").
//!
//! Monitors live in chunks allocated on demand and never freed while the table lives, so a
//! look-up is two dependent loads (`chunks[i / CHUNK]`, then the slot) with no lock and no
//! reclamation scheme: a stale index always names *some* valid monitor. Freed indices go on a
//! free list (last in, first out, so a recycled monitor is likely still in cache). Index 0 is
//! never handed out, so a lock field of 0 can mean "no monitor". A full table is an error.

use crate::monitor::FatMonitor;
use crate::sync::{lock, AtomicPtr, AtomicU64, AtomicUsize, Mutex, Ordering};
use crate::tasuki::SystemLockConfig;
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
    /// Indices above this were never handed out.
    high_water: u32,
}

/// Index → monitor map with a free list (see the module documentation).
pub struct MonitorTable {
    chunks: Box<[AtomicPtr<FatMonitor>]>,
    capacity: u32,
    config: SystemLockConfig,
    free: Mutex<FreeList>,
    live: AtomicUsize,
    allocations: AtomicU64,
    /// Contention profiling state (see `introspect.rs`).
    pub(crate) profile: crate::introspect::TableProfile,
}

impl MonitorTable {
    /// A table that hands out indices `1..=capacity` (capacity clamped to 2^23 − 1), whose
    /// monitors use `config` for their system lock.
    pub(crate) fn new(capacity: u32, config: SystemLockConfig) -> Self {
        let capacity = capacity.clamp(1, MAX_MONITOR_INDEX);
        let n_chunks = (capacity as usize + 1).div_ceil(CHUNK);
        Self {
            chunks: (0..n_chunks)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            capacity,
            config,
            free: Mutex::new(FreeList {
                free: Vec::new(),
                high_water: 0,
            }),
            live: AtomicUsize::new(0),
            allocations: AtomicU64::new(0),
            profile: Default::default(),
        }
    }

    /// The monitor at `idx`. Lock-free: two loads.
    #[inline]
    pub(crate) fn get(&self, idx: MonitorIndex) -> &FatMonitor {
        let i = idx.0 as usize;
        let chunk = self.chunks[i >> CHUNK_BITS].load(Ordering::Acquire);
        assert!(!chunk.is_null(), "monitor index {i} was never allocated");
        // SAFETY:
        // - `idx` was handed out by `allocate` of this table (indices only come from lock
        //   fields we wrote), which published the chunk with a Release store before returning
        //   it, and our Acquire load above saw that pointer (non-null checked);
        // - a chunk is a `Box<[FatMonitor; CHUNK]>` leaked into the pointer and freed only in
        //   `Drop for MonitorTable`, which needs `&mut self`, so it outlives the returned
        //   reference (bounded by `&self`);
        // - `i & (CHUNK - 1) < CHUNK`, so the offset stays in the allocation.
        unsafe { &*chunk.add(i & (CHUNK - 1)) }
    }

    /// Takes a free index and resets its monitor. Fails when all `capacity` are in use.
    pub(crate) fn allocate(&self) -> Result<MonitorIndex, MonitorError> {
        let mut fl = lock(&self.free);
        let idx = match fl.free.pop() {
            Some(i) => i,
            None if fl.high_water < self.capacity => {
                fl.high_water += 1;
                let i = fl.high_water;
                let slot = &self.chunks[i as usize >> CHUNK_BITS];
                if slot.load(Ordering::Relaxed).is_null() {
                    let base = (i as usize >> CHUNK_BITS) << CHUNK_BITS;
                    let on = self.profile.on;
                    let chunk: Box<[FatMonitor]> = (0..CHUNK)
                        .map(|j| FatMonitor::new(self.config).in_table((base + j) as u32, on))
                        .collect();
                    slot.store(Box::into_raw(chunk) as *mut FatMonitor, Ordering::Release);
                }
                i
            }
            None => return Err(MonitorError::MonitorTableFull),
        };
        drop(fl);
        self.live.fetch_add(1, Ordering::Relaxed);
        self.allocations.fetch_add(1, Ordering::Relaxed);
        Ok(MonitorIndex(idx))
    }

    /// Returns `idx` to the free list. The caller guarantees that nobody owns, enters or waits
    /// on the monitor and that no lock field names it any more.
    pub(crate) fn free(&self, idx: MonitorIndex) {
        debug_assert!(self.get(idx).is_idle(), "freeing a busy monitor");
        // The next object to get this monitor must not inherit an identity hash.
        self.get(idx).clear_hash();
        self.unbind(idx);
        lock(&self.free).free.push(idx.0);
        self.live.fetch_sub(1, Ordering::Relaxed);
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

/// Introspection support (see `introspect.rs`).
impl MonitorTable {
    /// The same table, with contention profiling on or off (`Config::profiling`). Only
    /// before the first allocation: monitors take the setting when their chunk is made.
    pub(crate) fn with_profiling(mut self, on: bool) -> Self {
        self.profile.on = on;
        self
    }

    /// The largest index handed out so far.
    pub(crate) fn high_water(&self) -> u32 {
        lock(&self.free).high_water
    }

    /// Whether some monitor is owned by the thread with raw id `raw` (a scan of every index
    /// handed out, for a detaching thread's last question; racy for other threads' ids).
    pub(crate) fn any_owned_by(&self, raw: u32) -> bool {
        (1..=self.high_water()).any(|i| self.get(MonitorIndex(i)).owner_raw() == raw)
    }
}

impl Drop for MonitorTable {
    fn drop(&mut self) {
        for slot in self.chunks.iter() {
            let p = slot.load(Ordering::Relaxed);
            if !p.is_null() {
                let raw = std::ptr::slice_from_raw_parts_mut(p, CHUNK);
                // SAFETY: `p` came from `Box::into_raw` of a `Box<[FatMonitor]>` of length
                // CHUNK in `allocate`, and is dropped exactly once, here, with `&mut self`.
                let chunk = unsafe { Box::from_raw(raw) };
                if self.profile.on {
                    // The addresses may go to another table's monitors next.
                    crate::introspect::forget_profiles(&chunk);
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
