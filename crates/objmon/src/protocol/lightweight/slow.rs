//! The out-of-line paths of the fast-locking family: the owner's claim of an anonymous
//! monitor, inflation by the owner and by a contender (with the lock-stack scan when another
//! fast-locking runtime is alive), the slow enter and exit, the owner's monitor from the
//! per-thread cache, and the release after a failed unlocking CAS.

use super::*;

impl<const R: bool, const T: bool> FastLocking<R, T> {
    /// `h` has a run on `t`'s stack and a contender installed an anonymous monitor: take it
    /// over with the run's length and drop the run (claim before dropping, so that owner
    /// queries always find `t` one way or the other).
    pub(super) fn claim(t: &ThreadContext<Self>, m: &FatMonitor, lo: usize, hi: usize) {
        m.claim_anonymous(t.core(), (hi - lo) as u32);
        t.local().remove(lo, hi);
    }

    /// Inflation by the owner of a fast-lock (run `lo..hi` on `t`'s stack): a fresh monitor
    /// owned by `t` with the run's count, or the anonymous one a contender installed.
    pub(super) fn inflate_owned<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &MarkWord,
        cause: InflationCause,
    ) -> Result<&'r FatMonitor, MonitorError> {
        let ls = t.local();
        let (lo, hi) = ls.run(addr(h)).expect("caller holds a run");
        loop {
            let w = h.0.load(Ordering::Acquire);
            if w & LOCK_BITS == MONITOR {
                // A contender's anonymous monitor: it stays installed while we own `h`.
                let Some(idx) = Self::locate(rt, &h.0, w) else {
                    Self::check_foreign(rt, h)?;
                    continue;
                };
                let m = rt.monitors().checked(idx)?;
                Self::claim(t, m, lo, hi);
                return Ok(m);
            }
            if w & LOCK_BITS != FAST_LOCKED {
                // Not locked at all, so nobody holds `h` and our run is stale: a guard was
                // forgotten and the object at this address replaced (safe Rust can). Drop the
                // run and say so, rather than take the new object.
                ls.remove(lo, hi);
                return Err(MonitorError::IllegalMonitorState);
            }
            let idx = rt.monitors().allocate()?;
            rt.monitors().bind(idx, addr(h));
            let m = rt.monitors().get(idx);
            m.enter_inflated_for(t.core().raw_id(), (hi - lo) as u32)?;
            if Self::install(rt, &h.0, w, idx) {
                ls.remove(lo, hi);
                rt.stats().inflated(cause);
                rt.report_inflation(t.id(), addr(h), idx.get(), cause);
                return Ok(m);
            }
            // The host changed its bits, or a contender inflated first (or, `TABLE`, another
            // runtime holds the address): look again.
            m.abandon_fresh();
            rt.monitors().free(idx);
            Self::check_foreign(rt, h)?;
        }
    }

    /// A contender inflates the fast-lock `w` with an anonymous owner. `false` if the header
    /// changed first or the table is full (then the caller spins on the header instead).
    pub(super) fn inflate_contended(
        rt: &Runtime<Self>,
        by: &ThreadContext<Self>,
        h: &MarkWord,
        w: u64,
    ) -> Result<bool, MonitorError> {
        let Ok(idx) = rt.monitors().allocate() else {
            return Ok(false);
        };
        rt.monitors().bind(idx, addr(h));
        let m = rt.monitors().get(idx);
        m.enter_inflated_for(ANONYMOUS_OWNER, 0)?;
        if Self::install(rt, &h.0, w, idx) {
            rt.stats().inflated(InflationCause::Contention);
            rt.report_inflation(by.id(), addr(h), idx.get(), InflationCause::Contention);
            return Ok(true);
        }
        m.abandon_fresh();
        rt.monitors().free(idx);
        Self::check_foreign(rt, h).map(|()| false)
    }

    /// A full lock stack meets an unlocked object: lock it straight through a fresh monitor
    /// owned by `t` (the seed's fall-through to inflate-enter). `false` if the header changed.
    #[cold]
    pub(super) fn inflate_unlocked(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &MarkWord,
        w: u64,
    ) -> Result<bool, MonitorError> {
        let idx = rt.monitors().allocate()?;
        rt.monitors().bind(idx, addr(h));
        let m = rt.monitors().get(idx);
        m.enter_inflated_for(t.core().raw_id(), 1)?;
        if Self::install(rt, &h.0, w, idx) {
            rt.stats().inflated(InflationCause::RecursionOverflow);
            rt.report_inflation(
                t.id(),
                addr(h),
                idx.get(),
                InflationCause::RecursionOverflow,
            );
            return Ok(true);
        }
        m.abandon_fresh();
        rt.monitors().free(idx);
        Self::check_foreign(rt, h).map(|()| false)
    }

    #[cold]
    pub(super) fn enter_slow(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &MarkWord,
        block: bool,
    ) -> Result<bool, MonitorError> {
        let ls = t.local();
        let a = addr(h);
        let mut spins = 0u32;
        loop {
            let w = h.0.load(Ordering::Acquire);
            match w & LOCK_BITS {
                FAST_LOCKED => {
                    if let Some((_, hi)) = ls.run(a) {
                        let top = ls.top();
                        if R && hi == top && top < LOCK_STACK_CAPACITY {
                            ls.push(top, a);
                            return Ok(true);
                        }
                        // Recursion that the stack cannot hold as an adjacent run (or, in the
                        // seed's variant, any recursion).
                        Self::inflate_owned(rt, t, h, InflationCause::RecursionOverflow)?
                            .enter(t.core_arc())?;
                        return Ok(true);
                    }
                    if !block {
                        return Ok(false);
                    }
                    // No lock stack of ours holds `h` (another runtime's fast-lock, or ours
                    // between its CAS and its push): wait, never inflate for a stranger, and
                    // yield at once — the scan is no cheap spin, and the owner we wait for
                    // (whose push is a few instructions away) may need our core. With no
                    // other fast-locking runtime alive the owner is ours: no scan.
                    if !Self::only_runtime() && Self::scan_owner(rt, h).is_none() {
                        yield_now();
                    } else if !Self::inflate_contended(rt, t, h, w)? {
                        spins += 1;
                        if spins > 16 {
                            yield_now();
                        }
                    }
                }
                MONITOR => {
                    if let Some((lo, hi)) = ls.run(a) {
                        // A contender inflated our fast-lock: the anonymous owner is us.
                        let Some(idx) = Self::locate(rt, &h.0, w) else {
                            Self::check_foreign(rt, h)?;
                            continue;
                        };
                        let m = rt.monitors().checked(idx)?;
                        debug_assert!(m.is_anonymous());
                        Self::claim(t, m, lo, hi);
                    }
                    match deflate::enter_monitor(rt, t, &h.0, w, block)? {
                        Via::Entered => return Ok(true),
                        Via::Busy => return Ok(false),
                        Via::Retry => Self::check_foreign(rt, h)?,
                    }
                }
                FAST_UNLOCKED => {
                    // Unlocked (the fast path found the stack full or lost a race).
                    let top = ls.top();
                    if top == LOCK_STACK_CAPACITY {
                        if Self::inflate_unlocked(rt, t, h, w)? {
                            return Ok(true);
                        }
                        continue;
                    }
                    if h.0
                        .compare_exchange(w, w ^ 1, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                    {
                        ls.push(top, a);
                        return Ok(true);
                    }
                }
                // Stored `11` is never written: not a header of this protocol (uninitialised
                // memory). An error, not a guess.
                _ => return Err(MonitorError::IllegalMonitorState),
            }
        }
    }

    /// Removes `t`'s last entry of `h` (at `i`) and releases the lock.
    #[cold]
    pub(super) fn release_last(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &MarkWord,
        i: usize,
    ) -> Result<(), MonitorError> {
        t.local().remove(i, i + 1);
        Self::finish_release(rt, t, h)
    }

    #[cold]
    pub(super) fn exit_slow(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &MarkWord,
    ) -> Result<(), MonitorError> {
        let ls = t.local();
        if let Some((lo, hi)) = ls.run(addr(h)) {
            if hi - lo >= 2 {
                ls.remove(hi - 1, hi);
                return Ok(());
            }
            return Self::release_last(rt, t, h, lo);
        }
        loop {
            let w = h.0.load(Ordering::Acquire);
            if w & LOCK_BITS != MONITOR {
                return Err(MonitorError::IllegalMonitorState);
            }
            if let Some((m, idx)) = Self::owned_cached(rt, t, h) {
                return deflate::exit_owned(rt, t, &h.0, m, idx);
            }
            match deflate::owned_monitor(rt, t, &h.0, w) {
                Ok(Some((m, idx))) => return deflate::exit_owned(rt, t, &h.0, m, idx),
                Ok(None) => return Err(MonitorError::IllegalMonitorState),
                Err(()) => Self::check_foreign(rt, h)?,
            }
        }
    }

    /// `TABLE`, the contended exit: the monitor of `h` (just read in the monitor state with
    /// an acquiring load) from this thread's cache, if `t` owns it; `None` sends the caller
    /// to [`deflate::owned_monitor`]. One cached look-up where `owned_monitor` makes two
    /// (its `locate`, then `names` after the owner check; the count is in docs/benchmarks.md).
    ///
    /// Why `names` adds nothing once `t` owns the cached monitor `m`: the cache's answer is
    /// `h`'s entry at a moment during this call (`ObjectMonitorTable::cached`), and `t`'s
    /// ownership cannot change behind its back, so `t` owned `m` then and still does. From
    /// that moment to the end of the call the entry stays `m`: an owned monitor is never
    /// claimed, so no deflation uninstalls it, and no orphan deflation or stale replacement
    /// touches an address whose header is in the monitor state with an entry (`names`
    /// would say the same at any point of the call). `relocate` runs only at a safepoint.
    #[inline]
    pub(super) fn owned_cached<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &MarkWord,
    ) -> Option<(&'r FatMonitor, MonitorIndex)> {
        if !T {
            return None;
        }
        let idx = rt.state().cached(addr(h))?;
        // Another runtime's index cannot be in this table's cache: pairs are keyed by table.
        let m = rt.monitors().try_get(idx)?;
        m.is_owned_by(t.core()).then_some((m, idx))
    }

    /// The monitor `t` owns for `h` (inflating its fast-lock if needed), for wait / notify.
    pub(super) fn owned_for_wait<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &MarkWord,
    ) -> Result<(&'r FatMonitor, MonitorIndex), MonitorError> {
        if t.local().run(addr(h)).is_some() {
            Self::inflate_owned(rt, t, h, InflationCause::WaitNotify)?;
        }
        loop {
            let w = h.0.load(Ordering::Acquire);
            if w & LOCK_BITS != MONITOR {
                return Err(MonitorError::IllegalMonitorState);
            }
            match deflate::owned_monitor(rt, t, &h.0, w) {
                Ok(Some(mi)) => return Ok(mi),
                Ok(None) => return Err(MonitorError::IllegalMonitorState),
                Err(()) => Self::check_foreign(rt, h)?,
            }
        }
    }

    /// Whether this runtime is the only fast-locking runtime alive, asked by a contender
    /// after it read a fast-locked word `w`: then `w`'s owner is a thread of this runtime
    /// (our lock stack, or about to push), and a contender may inflate `w` for it without
    /// scanning the lock stacks (registry mutex, snapshot, every stack) as it must when a
    /// second runtime could have made `w` (docs/soundness.md §7).
    ///
    /// Why a count of 1 is enough: a thread that made `w` locked after its runtime's
    /// [`LiveRuntime::new`] (increment, then SeqCst fence `X`); our read of `w` (or of a later
    /// value of the word) is followed by the SeqCst fence `Y` here. `X` happens before the
    /// locking CAS, which is coherence-ordered before our read, which is sequenced before
    /// `Y`: so `X` precedes `Y` in the single total order, and the count load after `Y`
    /// sees the increment. A count of 1 is then our own runtime.
    #[inline]
    pub(super) fn only_runtime() -> bool {
        fence(Ordering::SeqCst);
        LIVE_RUNTIMES.load(Ordering::Relaxed) == 1
    }

    /// The attached thread with `a` on its lock stack, if any (a scan of every lock stack).
    pub(super) fn scan_owner(rt: &Runtime<Self>, a: *const MarkWord) -> Option<ThreadId> {
        rt.threads()
            .snapshot()
            .iter()
            .find(|cx| cx.local().contains(a))
            .map(|cx| cx.id())
    }

    /// After the fast exit popped `t`'s last entry but its unlocking CAS failed.
    #[cold]
    pub(super) fn finish_release(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &MarkWord,
    ) -> Result<(), MonitorError> {
        let mut w = h.0.load(Ordering::Acquire);
        loop {
            if w & LOCK_BITS == MONITOR {
                // Anonymous (a contender's): installed for as long as we own `h`.
                let Some(idx) = Self::locate(rt, &h.0, w) else {
                    Self::check_foreign(rt, h)?;
                    w = h.0.load(Ordering::Acquire);
                    continue;
                };
                let m = rt.monitors().checked(idx)?;
                m.claim_anonymous(t.core(), 1);
                return deflate::exit_owned(rt, t, &h.0, m, idx);
            }
            // Fast-locked (ours) to unlocked; an unlocked word stays as it is.
            match h.0.compare_exchange(
                w,
                (w & !LOCK_BITS) | FAST_UNLOCKED,
                Ordering::Release,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(()),
                Err(now) => w = now,
            }
        }
    }
}
