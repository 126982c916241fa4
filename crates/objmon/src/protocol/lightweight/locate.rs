//! Where the monitor of a header in the monitor state is ([`Locate`]): the index in the word,
//! or under `TABLE` the [`ObjectMonitorTable`] entry of the header's address — installed and
//! removed with the slot locked, stale entries retired, orphaned monitor states deflated in
//! place — and the checks against another runtime's entry; the host's deflation hook.

use super::*;

/// Where the monitor of a header in the monitor state is: the index in the word, or (`TABLE`)
/// the [`ObjectMonitorTable`] entry of the header's address. Under `TABLE` every move of a
/// header into or out of the monitor state happens with the address's table slot locked,
/// together with the entry's change (see [`super::omt`] for why and what it buys: stale
/// entries are replaced, orphaned monitor states deflated in place, nothing waits for an entry
/// that will never come).
impl<const R: bool, const T: bool> Locate for FastLocking<R, T> {
    #[inline]
    fn locate(rt: &Runtime<Self>, h: &AtomicU64, w: u64) -> Option<MonitorIndex> {
        if T {
            // This thread's cached pair, if its shard has not changed since (`w` was read
            // with an acquiring load by every caller, as `cached` requires); else the table.
            if w & LOCK_BITS == MONITOR {
                if let Some(idx) = rt.state().cached(h as *const AtomicU64 as usize) {
                    return Some(idx);
                }
            }
            Self::table_locate(rt, h)
        } else {
            // No index: a `lightweight-table` runtime's monitor word (the caller's
            // `check_foreign` answers `ForeignHeader`).
            mark::index_in(w)
        }
    }

    #[inline]
    fn names(rt: &Runtime<Self>, h: &AtomicU64, cur: u64, idx: MonitorIndex) -> bool {
        if T {
            let a = h as *const AtomicU64 as usize;
            // `cur` was just read with an acquiring (or SeqCst) load, as `cached` requires:
            // a pair still valid is the entry at a moment when the header was `cur`.
            if cur & LOCK_BITS == MONITOR {
                if let Some(cached) = rt.state().cached(a) {
                    return cached == idx;
                }
            }
            Self::table_names(rt, h, idx)
        } else {
            mark::names(cur, idx)
        }
    }

    #[inline]
    fn install(rt: &Runtime<Self>, h: &AtomicU64, w: u64, idx: MonitorIndex) -> bool {
        if !T {
            return h
                .compare_exchange(
                    w,
                    mark::monitor_word(w, idx),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok();
        }
        let a = h as *const AtomicU64 as usize;
        let mut slot = rt.state().slot(a);
        // The address is this runtime's for as long as it has an entry here (`binding.rs`):
        // claimed before the entry appears, under the slot lock like the
        // entry itself. An entry already here (stale) holds the claim. Another live runtime's
        // claim fails the install; the caller then reports `ForeignHeader`.
        let had = slot.get().is_some();
        if !had && rt.monitors().claim(a).is_err() {
            return false;
        }
        // Before the swap into the monitor state: a thread that reads the swapped header sees
        // this bump, so no pair cached before (the stale entry's, say) is used for it.
        slot.invalidate();
        if h.compare_exchange(
            w,
            (w & !LOCK_BITS) | MONITOR,
            Ordering::AcqRel,
            Ordering::Relaxed,
        )
        .is_err()
        {
            if !had {
                rt.monitors().release(a);
            }
            return false;
        }
        // `w` was not a monitor state, so an entry here is stale: an earlier object's at this
        // address (moved away, or dropped without `reclaim`).
        let stale = slot.set(idx);
        ObjectMonitorTable::remember(&slot, idx);
        drop(slot);
        if let Some(old) = stale {
            Self::retire_stale(rt, old);
        }
        true
    }

    #[inline]
    fn uninstall(
        rt: &Runtime<Self>,
        h: &AtomicU64,
        cur: u64,
        idx: MonitorIndex,
    ) -> Result<(), u64> {
        if !T {
            return h
                .compare_exchange(
                    cur,
                    mark::fast_unlocked(cur),
                    Ordering::SeqCst,
                    Ordering::Acquire,
                )
                .map(|_| ());
        }
        let mut slot = rt.state().slot(h as *const AtomicU64 as usize);
        if slot.get() != Some(idx) {
            // Not (or no longer) this header's monitor: the caller's re-check says so.
            return Err(h.load(Ordering::Acquire));
        }
        h.compare_exchange(
            cur,
            mark::fast_unlocked(cur),
            Ordering::SeqCst,
            Ordering::Acquire,
        )?;
        slot.clear();
        rt.monitors().release(h as *const AtomicU64 as usize);
        Ok(())
    }
}

impl<const R: bool, const T: bool> FastLocking<R, T> {
    /// Deflates `h`'s monitor if nobody owns, enters or waits on it (the host's hook for
    /// [`DeflationPolicy::OnRequest`](crate::vm::DeflationPolicy::OnRequest), usable under any
    /// policy). `true` if it did.
    pub fn deflate_idle(rt: &Runtime<Self>, h: &MarkWord) -> bool {
        deflate::deflate_idle(rt, &h.0)
    }

    /// `TABLE`: [`names`](Locate::names) when this thread's cache cannot answer: the header
    /// and the entry read under the slot (the monitor bit and the entry change together).
    /// Out of line, as [`table_locate`](Self::table_locate): the cached answer is the
    /// contended path, and the slot's lock and hash probe inlined into it cost every call a
    /// full register save (callgrind).
    #[cold]
    #[inline(never)]
    pub(super) fn table_names(rt: &Runtime<Self>, h: &AtomicU64, idx: MonitorIndex) -> bool {
        let slot = rt.state().slot(h as *const AtomicU64 as usize);
        h.load(Ordering::SeqCst) & LOCK_BITS == MONITOR && slot.get_cached() == Some(idx)
    }

    /// `TABLE`: the monitor of `h` if `h` is in the monitor state and has an entry. An orphan
    /// — a monitor state with no entry, i.e. a header moved away from its entry, whose monitor
    /// was idle — is deflated in place here (hash and host bits kept), so that no caller waits
    /// for an entry that will never come. `None` means "`h` is not (or no longer) in the
    /// monitor state": the caller re-reads it. Out of line (see
    /// [`table_names`](Self::table_names)).
    #[cold]
    #[inline(never)]
    pub(super) fn table_locate(rt: &Runtime<Self>, h: &AtomicU64) -> Option<MonitorIndex> {
        let a = h as *const AtomicU64 as usize;
        let slot = rt.state().slot(a);
        let mut w = h.load(Ordering::SeqCst);
        loop {
            if w & LOCK_BITS != MONITOR {
                return None;
            }
            if let Some(idx) = slot.get_cached() {
                return Some(idx);
            }
            if mark::index_in(w).is_some() {
                // An index in the word: a `lightweight` / `lightweight-seed` runtime's
                // monitor state on a header we share a type with, not an orphan of ours
                // (the caller's `check_foreign` answers `ForeignHeader`).
                return None;
            }
            // With the slot locked, no inflation or deflation of `h` by this runtime is under
            // way: the monitor state has no monitor here. It is an orphan unless another live
            // runtime claims the address: that runtime's monitor state, its
            // claim taken before its swap to `10` and released after its swap back. So the
            // swap is made with the address's claims held still (`if_unclaimed`), or not at
            // all (`None`: the caller's `check_foreign` makes it `ForeignHeader`). Only hash
            // installs race with this CAS.
            let swapped = rt.monitors().if_unclaimed(a, || {
                h.compare_exchange(
                    w,
                    mark::fast_unlocked(w),
                    Ordering::SeqCst,
                    Ordering::Acquire,
                )
            });
            match swapped {
                None | Some(Ok(_)) => return None,
                Some(Err(now)) => w = now,
            }
        }
    }

    /// `TABLE`: gives back the monitor of a stale entry (replaced or removed; no header names
    /// it any more) once it can be claimed idle, exactly as a deflater claims one; if it is
    /// still owned through a forgotten guard, it leaks. Not counted as a deflation: like
    /// [`reclaim`](Protocol::reclaim), it ends a monitor whose object is gone from here.
    ///
    /// Nobody can come to hold the monitor for good any more (no header names it, so every
    /// header check fails), but a thread that read its index earlier — from the header of
    /// the object it served before a deflation freed it and an inflation reused it — may
    /// hold it for a moment: a first try of its system lock (the claim waits that out, as
    /// for any deflater), or an announcement of an enterer, an owner query or a deflater,
    /// each about to fail its header check and leave (`Contended`: wait for it here, or the
    /// monitor stays allocated with no way back; `tests/loom_retire_stale.rs`). Such a
    /// thread never waits for this one (its header check takes a slot lock that the callers
    /// have released), and it cannot re-read this index once it leaves, so the wait ends.
    /// `Busy` is an owner (a forgotten guard: no header check is left to fail) or a suspended
    /// or waiting thread, which only an owner's object could have: nothing to wait for.
    #[cold]
    pub(super) fn retire_stale(rt: &Runtime<Self>, idx: MonitorIndex) {
        let m = rt.monitors().get(idx);
        loop {
            // `DEFLATING` set: another thread has claimed it (nobody can, as no header names
            // it; kept as the deflater's rule).
            if !m.add_contention() {
                return;
            }
            match m.try_begin_deflation_pinned() {
                PinnedClaim::Claimed => {
                    m.finish_deflation();
                    rt.monitors().free(idx);
                    return;
                }
                PinnedClaim::Busy => {
                    m.remove_contention();
                    return;
                }
                PinnedClaim::Contended => {
                    m.remove_contention();
                    yield_now();
                }
            }
        }
    }

    /// `TABLE`: `ForeignHeader` if another live runtime claims `h`'s address, i.e. has the
    /// entry of a monitor state there. Asked where a monitor state found no
    /// entry here (`locate` said "re-read"), so that nothing re-reads forever a header that
    /// another runtime's monitor holds, and nobody deflates it as an orphan.
    #[cold]
    pub(super) fn check_foreign(rt: &Runtime<Self>, h: &MarkWord) -> Result<(), MonitorError> {
        // The three share `MarkWord`: a monitor word with an index is `lightweight`'s or
        // `lightweight-seed`'s, one without is `lightweight-table`'s; the other kind is
        // another runtime's (it cannot be ours).
        let w = h.0.load(Ordering::Acquire);
        if w & LOCK_BITS == MONITOR && mark::index_in(w).is_some() == T {
            return Err(MonitorError::ForeignHeader);
        }
        if T && rt.monitors().foreign(addr(h)) {
            return Err(MonitorError::ForeignHeader);
        }
        Ok(())
    }
}
