//! `stack`'s lock-record arrays, type-stable for the life of the process: the one place that
//! allocates the memory a `stack` header word may point to.
//!
//! A stack-locked [`StackWord`](super::stack::StackWord) holds the address of a
//! [`LockRecord`]; a contender that finds it reads the record (under the INFLATING marker).
//! Any header may outlive the thread whose record it names (a guard passed to `mem::forget`,
//! a header moved out with `mem::replace`), so a record array is never given back to the
//! allocator: arrays are carved out of leaked slabs, a detaching thread's array goes back to
//! a process-wide free list only when every record in it is free (no header names any of
//! them: `stack` frees a record only once the header provably no longer holds its address),
//! and the next attaching thread reuses it. An array with a record still in use is never
//! reused. The monitor table is the model: a stale name is never a dangling pointer.
//!
//! [`is_record`] answers whether a word is the address of a record of this pool (a walk over
//! the slabs, a handful at most): the contender checks it before the one read of a record
//! through a header word, so even a header word the host overwrote with garbage is never
//! dereferenced.
//!
//! Under loom the atomics of a record belong to one model execution and cannot be reused in
//! the next: each array is leaked on its own and never reused, and [`is_record`] looks it up
//! in a set of their addresses.

use super::stack::{LockRecord, LOCK_RECORDS};

/// A thread's lock records (its "stack").
pub(super) type RecordArray = [LockRecord; LOCK_RECORDS];

#[cfg(not(loom))]
pub(super) use pool::{give_back, is_record, take};

#[cfg(loom)]
pub(super) use loom_pool::{give_back, is_record, take};

#[cfg(not(loom))]
mod pool {
    use super::{LockRecord, RecordArray};
    use std::sync::atomic::{AtomicPtr, Ordering};
    use std::sync::{Mutex, PoisonError};

    /// Arrays per slab (16 × 64 records × 24 bytes = 24 KiB).
    const ARRAYS_PER_SLAB: usize = 16;

    /// Leaked, never freed: everything in it lives as long as the process.
    struct Slab {
        arrays: [RecordArray; ARRAYS_PER_SLAB],
        /// The slab allocated before this one.
        next: Option<&'static Slab>,
    }

    /// The newest slab; each names the one before it. Only ever grows.
    static NEWEST: AtomicPtr<Slab> = AtomicPtr::new(std::ptr::null_mut());
    /// Arrays whose every record is free (`obj` 0, not inflated), ready for the next thread.
    static FREE: Mutex<Vec<&'static RecordArray>> = Mutex::new(Vec::new());

    /// An array whose every record is free (its `owner` fields are the caller's to set).
    pub(in crate::protocol) fn take() -> &'static RecordArray {
        // Nothing under the lock can panic, and the list is valid at every step anyway.
        let mut free = FREE.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(a) = free.pop() {
            return a;
        }
        let prev = NEWEST.load(Ordering::Relaxed);
        let slab: &'static Slab = Box::leak(Box::new(Slab {
            arrays: std::array::from_fn(|_| std::array::from_fn(|_| LockRecord::free_record())),
            // SAFETY: `NEWEST` holds null or a pointer from `Box::leak` below, never freed;
            // slabs are only published under `FREE`'s lock, which we hold.
            next: unsafe { prev.as_ref() },
        }));
        // Release: a reader that finds the slab through `NEWEST` sees it initialised.
        NEWEST.store(slab as *const Slab as *mut Slab, Ordering::Release);
        free.extend(slab.arrays[1..].iter().rev());
        &slab.arrays[0]
    }

    /// `a` (from [`take`]) has every record free and its thread has detached: the next thread
    /// may have it.
    pub(in crate::protocol) fn give_back(a: &'static RecordArray) {
        debug_assert!(a.iter().all(LockRecord::is_free));
        FREE.lock().unwrap_or_else(PoisonError::into_inner).push(a);
    }

    /// Whether `w` is the address of a record of some array of the pool.
    pub(in crate::protocol) fn is_record(w: u64) -> bool {
        let size = std::mem::size_of::<LockRecord>() as u64;
        // SAFETY: as in `take`: null or a leaked slab, never freed.
        let mut slab = unsafe { NEWEST.load(Ordering::Acquire).as_ref() };
        while let Some(s) = slab {
            let base = s.arrays.as_ptr() as usize as u64;
            let off = w.wrapping_sub(base);
            if off < std::mem::size_of_val(&s.arrays) as u64 {
                // The arrays are contiguous: every multiple of the record size is a record.
                return off.is_multiple_of(size);
            }
            slab = s.next;
        }
        false
    }
}

#[cfg(loom)]
mod loom_pool {
    use super::{LockRecord, RecordArray};
    use std::collections::BTreeSet;
    use std::sync::{Mutex, PoisonError};

    /// Base addresses of every array ever leaked.
    static ALL: Mutex<BTreeSet<u64>> = Mutex::new(BTreeSet::new());

    pub(in crate::protocol) fn take() -> &'static RecordArray {
        let a: &'static RecordArray =
            Box::leak(Box::new(std::array::from_fn(|_| LockRecord::free_record())));
        ALL.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(a.as_ptr() as usize as u64);
        a
    }

    /// Never reused under loom (see the module documentation).
    pub(in crate::protocol) fn give_back(_: &'static RecordArray) {}

    pub(in crate::protocol) fn is_record(w: u64) -> bool {
        let size = std::mem::size_of::<LockRecord>() as u64;
        let all = ALL.lock().unwrap_or_else(PoisonError::into_inner);
        all.range(..=w).next_back().is_some_and(|&base| {
            let off = w - base;
            off < std::mem::size_of::<RecordArray>() as u64 && off % size == 0
        })
    }
}
