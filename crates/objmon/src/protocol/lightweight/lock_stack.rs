//! A thread's lock stack ([`LockStack`], seed 001's "thread-local lock-stack"): push, pop,
//! the run of one object's entries and its removal, the owner scan's test, and the GC hooks
//! that list and rewrite the entries at a safepoint.

use super::*;

impl LockStack {
    pub(super) fn new() -> Self {
        Self {
            entries: std::array::from_fn(|_| AtomicUsize::new(0)),
            top: AtomicUsize::new(0),
        }
    }

    /// Owner only.
    #[inline]
    pub(super) fn top(&self) -> usize {
        self.top.load(Ordering::Relaxed)
    }

    #[inline]
    pub(super) fn at(&self, i: usize) -> usize {
        self.entries[i].load(Ordering::Relaxed)
    }

    /// Owner only; `top < LOCK_STACK_CAPACITY`.
    #[inline]
    pub(super) fn push(&self, top: usize, a: usize) {
        self.entries[top].store(a, Ordering::Release);
        self.top.store(top + 1, Ordering::Release);
    }

    /// Owner only; removes the entry at `top - 1`.
    #[inline]
    pub(super) fn pop(&self, top: usize) {
        self.entries[top - 1].store(0, Ordering::Release);
        self.top.store(top - 1, Ordering::Release);
    }

    /// Owner only: the run of `a`, as `lo..hi`.
    pub(super) fn run(&self, a: usize) -> Option<(usize, usize)> {
        let top = self.top();
        let lo = (0..top).find(|&i| self.at(i) == a)?;
        let hi = (lo..top).find(|&i| self.at(i) != a).unwrap_or(top);
        Some((lo, hi))
    }

    /// Owner only: removes entries `lo..hi`, closing the gap. Entries above move down one slot
    /// at a time, written at the new slot before being cleared at the old, so a concurrent
    /// scan may see an entry twice but sees `a` only while it is still owned.
    pub(super) fn remove(&self, lo: usize, hi: usize) {
        let top = self.top();
        let n = hi - lo;
        for i in lo..top - n {
            self.entries[i].store(self.at(i + n), Ordering::Release);
        }
        for i in top - n..top {
            self.entries[i].store(0, Ordering::Release);
        }
        self.top.store(top - n, Ordering::Release);
    }

    /// Any thread: whether `a` is on this stack now (racy; exact for the owner).
    pub fn contains(&self, a: *const MarkWord) -> bool {
        let top = self.top.load(Ordering::Acquire);
        (0..top.min(LOCK_STACK_CAPACITY))
            .any(|i| self.entries[i].load(Ordering::Acquire) == a as usize)
    }

    /// Any thread: the entries, oldest first, one per lock level (a racy snapshot unless the
    /// owner is stopped).
    pub fn entries(&self) -> Vec<*const MarkWord> {
        let top = self.top.load(Ordering::Acquire).min(LOCK_STACK_CAPACITY);
        (0..top)
            .map(|i| self.entries[i].load(Ordering::Acquire))
            .filter(|&a| a != 0)
            .map(|a| a as *const MarkWord)
            .collect()
    }
}

impl std::fmt::Debug for LockStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.entries()).finish()
    }
}

impl<const R: bool, const T: bool> FastLocking<R, T> {
    /// GC hook: the objects `t` has fast-locked, one entry per lock level, oldest first. These
    /// are GC roots ("the lock-stack is also a new set of GC roots", seed 001). Objects whose
    /// monitor `t` owns are not listed: a GC finds them through its monitors (the table).
    pub fn locked_objects(t: &ThreadContext<Self>) -> Vec<*const MarkWord> {
        t.local().entries()
    }

    /// [`Runtime::relocate`]'s part here: the object whose header was at `from` now has its
    /// header at `to` (the host copied the word verbatim). Rewrites every lock-stack entry. Call only while every
    /// attached thread is stopped outside this crate's calls (a safepoint): lock stacks are
    /// otherwise written only by their own threads. Entries are never dereferenced, so a missed
    /// relocation is a wrong answer (`IllegalMonitorState` on exit), never undefined behaviour.
    pub(super) fn rewrite_records(rt: &Runtime<Self>, from: *const MarkWord, to: &MarkWord) {
        for cx in rt.threads().snapshot() {
            for e in &cx.local().entries {
                if e.load(Ordering::Relaxed) == from as usize {
                    e.store(addr(to), Ordering::Release);
                }
            }
        }
        if T && from as usize != addr(to) {
            // The entry moves with the header (HotSpot's GC re-keys its table the same way),
            // and the claim with it.
            let idx = {
                let mut slot = rt.state().slot(from as usize);
                let idx = slot.clear();
                if idx.is_some() {
                    rt.monitors().release(from as usize);
                }
                idx
            };
            let Some(idx) = idx else {
                return;
            };
            let stale = if to.0.load(Ordering::Acquire) & LOCK_BITS == MONITOR {
                let mut slot = rt.state().slot(addr(to));
                // `to` claimed by another live runtime (two live objects at one address: the
                // host broke its rule) keeps that claim, and the entry is not made.
                match rt.monitors().claim(addr(to)) {
                    Ok(()) => slot.set(idx),
                    Err(_) => Some(idx),
                }
            } else {
                Some(idx) // `from`'s entry was stale already
            };
            if let Some(old) = stale {
                Self::retire_stale(rt, old);
            }
        }
    }
}
