//! The contended and slow lock paths of `tasuki`: finding or installing the object's monitor
//! (its index in the aux word), inflation by the flat owner (wait / notify, count overflow)
//! and by a winning contender (the FLC loop of \[19\], `contend`), the slow enter, and the fat
//! monitor for wait / notify.

use super::*;

impl Tasuki {
    /// The object's monitor and its index: the one named by the aux word, or a new one
    /// installed there (the loser of an install race frees its monitor, as in `fat`).
    pub(super) fn object_monitor<'r>(
        rt: &'r Runtime<Self>,
        h: &TasukiHeader,
    ) -> Result<(&'r FatMonitor, MonitorIndex), MonitorError> {
        if let Some(i) = index_in(h.aux.load(Ordering::Acquire)) {
            return Ok((rt.monitors().checked(i)?, i));
        }
        Self::install(rt, h)
    }

    #[cold]
    fn install<'r>(
        rt: &'r Runtime<Self>,
        h: &TasukiHeader,
    ) -> Result<(&'r FatMonitor, MonitorIndex), MonitorError> {
        let idx = rt.monitors().allocate()?;
        rt.monitors().bind(idx, h as *const TasukiHeader as usize);
        let mut a = h.aux.load(Ordering::Relaxed);
        loop {
            if let Some(theirs) = index_in(a) {
                rt.monitors().free(idx);
                return Ok((rt.monitors().checked(theirs)?, theirs));
            }
            // FLC is only ever set once an index is installed, so `a` holds host bits only.
            match h.aux.compare_exchange_weak(
                a,
                a | (idx.get() << INDEX_SHIFT),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok((rt.monitors().get(idx), idx)),
                Err(cur) => a = cur,
            }
        }
    }

    /// Publishes the inflated word. The caller owns both the flat lock (as `w`) and `m` with
    /// the object's full recursion count. Clears FLC and wakes every suspended contender,
    /// which will block on `m` and find the lock inflated.
    pub(super) fn publish_inflated(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &TasukiHeader,
        m: &FatMonitor,
        idx: MonitorIndex,
        w: u32,
        cause: InflationCause,
    ) -> Result<(), MonitorError> {
        h.aux.fetch_and(!FLC, Ordering::Relaxed);
        // Our own contenders, not the host's waiters: no `MonitorNotify`.
        m.notify_unreported(t.core(), true)?;
        h.lock.0.store(
            SHAPE | (idx.get() << INDEX_SHIFT) | (w & HOST_BITS_MASK),
            Ordering::Release,
        );
        rt.stats().inflated(cause);
        rt.report_inflation(t.id(), h as *const TasukiHeader as usize, idx.get(), cause);
        Ok(())
    }

    /// Inflation by the owner of the flat lock (`w`, holding `count` locks): for wait /
    /// notify and on count overflow. Blocks on the monitor only for the few instructions a
    /// contender or an unlocker holds it (nobody holds it longer while the lock is flat).
    pub(super) fn inflate_owned<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &TasukiHeader,
        w: u32,
        count: u32,
        cause: InflationCause,
    ) -> Result<&'r FatMonitor, MonitorError> {
        debug_assert_eq!(w & (SHAPE | OWNER_MASK), t.core().id_shifted16());
        let (m, idx) = Self::object_monitor(rt, h)?;
        m.enter_inflated(t.core_arc(), count)?;
        Self::acquired(t, m, idx, false);
        Self::publish_inflated(rt, t, h, m, idx, w, cause)?;
        Ok(m)
    }

    /// The inflation loop of \[19\], run while owning the object's monitor `m` (entered by a
    /// contender, or re-acquired by a waiter): returns once the object's lock is ours — either
    /// the word is inflated (then `m` is the lock) or we won the flat lock and inflated it.
    /// While the word is flat and owned by another thread: set FLC, fence, compare-and-swap;
    /// on failure wait on `m`, suspended, until an unlocker notifies us.
    ///
    /// Interrupts do not end this wait (Java's monitorenter ignores them); one that the
    /// monitor's wait consumed is set again before returning.
    pub(super) fn contend(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &TasukiHeader,
        m: &FatMonitor,
        idx: MonitorIndex,
    ) -> Result<(), MonitorError> {
        let me = t.core().id_shifted16();
        let mut interrupted = false;
        // Introspection: semantically we are blocked on entering the object (not waiting in
        // its monitor); we publish the flat owner at each look at the word. Begun at the
        // first flat look only: an inflated word (the common case under contention) needs
        // none, and the episode's SeqCst stores are a large share of a contended lock+unlock.
        let mut spin = None;
        let r = loop {
            let w = h.lock.0.load(Ordering::Acquire);
            if w & SHAPE != 0 {
                // Inflated with this object's monitor (the index never changes until
                // reclaim), which we own.
                break Ok(());
            }
            // Set FLC before the compare-and-swap, with a fence between: the owner we fail
            // against stores "free", fences, then tests FLC, so it must see it (seed 004 §3,
            // Property 3.1, with §4's barriers).
            h.aux.fetch_or(FLC, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            let free = w & HOST_BITS_MASK;
            if h.lock
                .0
                .compare_exchange(free, free | me, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                // Inflation without spin-wait: we own the flat lock and the monitor.
                let cause = InflationCause::Contention;
                break Self::publish_inflated(rt, t, h, m, idx, free | me, cause);
            }
            let episode = spin.get_or_insert_with(|| {
                SpinEpisode::begin(rt.monitors(), t.core(), h as *const TasukiHeader as usize)
            });
            episode.observe((w & OWNER_MASK) >> OWNER_SHIFT);
            episode.parked();
            // Announced across the wait: once notified we re-acquire `m` spinning, and the
            // owner must not deflate under us then (`may_deflate`). Timed (a few ms) so that
            // a contender parked behind a deadlocked flat owner re-observes it and the
            // deadlock detector can confirm the edge; a timeout only sends us round the loop
            // again.
            Self::announce(m);
            let r = m.wait(t.core_arc(), observe_deadline());
            Self::acquired(t, m, idx, true);
            match r {
                Ok(_) => {}
                Err(MonitorError::Interrupted) => interrupted = true,
                Err(e) => break Err(e),
            }
        };
        if interrupted {
            t.core().interrupt();
        }
        r
    }

    #[cold]
    pub(super) fn enter_slow(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &TasukiHeader,
    ) -> Result<(), MonitorError> {
        let me = t.core().id_shifted16();
        let mut backoff = 0u32;
        loop {
            let w = h.lock.0.load(Ordering::Acquire);
            if w & SHAPE == 0 {
                if w & LOCK_MASK == 0 {
                    if h.lock
                        .0
                        .compare_exchange(w, w | me, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                    {
                        return Ok(());
                    }
                    continue;
                }
                if (w ^ me) < (255 << COUNT_SHIFT) {
                    h.lock.0.store(w + COUNT_ONE, Ordering::Relaxed);
                    return Ok(());
                }
                if w & OWNER_MASK == me {
                    Self::inflate_owned(rt, t, h, w, 257, InflationCause::RecursionOverflow)?;
                    return Ok(());
                }
            } else {
                let m = monitor_of(rt, w)?;
                if m.is_owned_by(t.core()) {
                    return m.enter(t.core_arc());
                }
            }
            if w & SHAPE == 0 {
                // Held flat by an owner of another runtime: no monitor of ours may queue on it.
                let still = || h.lock.0.load(Ordering::SeqCst) == w;
                rt.threads()
                    .owner_context((w & OWNER_MASK) >> OWNER_SHIFT, still)?;
            }
            // Held by another thread (flat or fat), or fat and free: go through the monitor.
            let (m, idx) = match Self::object_monitor(rt, h) {
                Ok(x) => x,
                Err(MonitorError::MonitorTableFull) => {
                    // No monitor to suspend on: spin on the flat lock like `thin`.
                    backoff = (backoff + 1).min(7);
                    if backoff < 7 {
                        for _ in 0..(1u32 << backoff) {
                            spin_hint();
                        }
                    } else {
                        yield_now();
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            // The thread holds the object only once `contend` has returned: the events it
            // raises until then (the monitor's contended enter, the flat spin's) wait for it.
            let _held = crate::events::Held::new();
            if m.try_enter(t.core())? {
                Self::acquired(t, m, idx, false);
            } else {
                // Counted while we spin on or suspend at the monitor: the deflation rule
                // (`acquired`) leaves the lock fat while anybody is on the way in.
                Self::announce(m);
                if let Err(e) = m.enter(t.core_arc()) {
                    m.remove_contention();
                    return Err(e);
                }
                Self::acquired(t, m, idx, true);
            }
            return Self::contend(rt, t, h, m, idx);
        }
    }

    /// The fat monitor for wait / notify: the installed one if the word is inflated, or
    /// inflate the flat lock `t` owns. `IllegalMonitorState` if `t` owns neither.
    pub(super) fn fat_for_wait<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &TasukiHeader,
    ) -> Result<&'r FatMonitor, MonitorError> {
        let w = h.lock.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            let m = monitor_of(rt, w)?;
            return if m.is_owned_by(t.core()) {
                Ok(m)
            } else {
                Err(MonitorError::IllegalMonitorState)
            };
        }
        if w & OWNER_MASK != t.core().id_shifted16() {
            return Err(MonitorError::IllegalMonitorState);
        }
        Self::inflate_owned(rt, t, h, w, thin_locks(w), InflationCause::WaitNotify)
    }
}
