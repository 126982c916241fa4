//! The unlock slow paths of `tasuki` and its deflation rule: the contention count a thread
//! keeps at a monitor while it spins, suspends or re-acquires (`announce` / `acquired`), the
//! rule asked at the fat owner's last exit (`may_deflate`), the flat release with its FLC test
//! and the wake-up of one suspended contender.

use super::*;

impl Tasuki {
    /// Counts the caller among the monitor's contenders ([`FatMonitor::add_contention`]) for
    /// as long as it spins on, suspends at, or waits to re-acquire `m`; ended with
    /// [`FatMonitor::remove_contention`]. `tasuki` never claims a monitor for deflation
    /// through the contention count (its deflation is the owner's store of the flat word),
    /// so the announcement always succeeds.
    #[inline]
    pub(super) fn announce(m: &FatMonitor) {
        let counted = m.add_contention();
        debug_assert!(counted, "tasuki never sets DEFLATING");
    }

    /// `t` has just acquired `m` (index `idx`), as the object's lock or on the way to it;
    /// `announced`: `t` still holds an [`announce`](Self::announce)ment, which ends here.
    /// Notes in `t`'s [`TasukiThread`] whether `t` was at that point the only thread counted at `m`,
    /// for the deflation rule ([`may_deflate`](Self::may_deflate)). A thread that found
    /// company looks again only after [`RECHECK_AFTER`] more acquisitions: every look is two
    /// read-modify-writes of the monitor's cache line, which the spinners keep reading, so a
    /// look at every acquisition would dominate a contended enter.
    #[inline]
    pub(super) fn acquired(
        t: &ThreadContext<Self>,
        m: &FatMonitor,
        idx: MonitorIndex,
        announced: bool,
    ) {
        let me = t.local();
        let wait = me.recheck_in.load(Ordering::Relaxed);
        if wait > 0 && !announced {
            me.recheck_in.store(wait - 1, Ordering::Relaxed);
            me.alone_at.store(0, Ordering::Relaxed);
            return;
        }
        if !announced {
            Self::announce(m);
        }
        // Our own announcement read back: `true` iff it was the only one.
        let alone = m.remove_contention_was_last();
        me.alone_at
            .store(if alone { idx.get() } else { 0 }, Ordering::Relaxed);
        me.recheck_in
            .store(if alone { 0 } else { RECHECK_AFTER }, Ordering::Relaxed);
    }

    /// The deflation rule, asked at `t`'s last exit of `m` (index `idx`): nobody waits in
    /// `m`'s wait set, nobody is suspended at its system lock, and nobody else is counted —
    /// spinning on it, suspending at it, or about to re-acquire it after a wait (the
    /// [`announce`](Self::announce)d) — neither when `t` acquired `m`
    /// ([`acquired`](Self::acquired)) nor now. Seed 004 §6 says only that \[19\] "supports
    /// deflation", not when. Spinners count: with more threads than cores, a rule that ignored
    /// them would let the spinners find a flat word at nearly every hand-over and re-inflate it
    /// through FLC. A contender that announces itself just after the look finds the flat word
    /// and competes for it as before (`contend`): the rule is a policy, never a condition of
    /// safety. The note is one per thread: of two fat locks held at once, the outer one's
    /// exit finds the inner one's note and keeps its lock fat until a later exit.
    pub(super) fn may_deflate(t: &ThreadContext<Self>, m: &FatMonitor, idx: MonitorIndex) -> bool {
        // Our own word: a load and a store, no read-modify-write.
        let alone = t.local().alone_at.load(Ordering::Relaxed) == idx.get();
        t.local().alone_at.store(0, Ordering::Relaxed);
        if !alone || m.system_lock().has_waiters() {
            return false;
        }
        // Alone when we acquired it; still so? (A contender that came during our critical
        // section would otherwise find a flat word and re-inflate it.)
        Self::announce(m);
        m.remove_contention_was_last() && m.waiter_count() == 0
    }

    /// Flat unlock found FLC set: wake one suspended contender (see the module documentation).
    #[cold]
    pub(super) fn wake_contender(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &TasukiHeader) {
        let Some(idx) = index_in(h.aux.load(Ordering::Acquire)) else {
            return;
        };
        // Another runtime's index (its contender set FLC): nobody of ours to wake.
        let Some(m) = rt.monitors().try_get(idx) else {
            return;
        };
        let mut spins = 0u32;
        loop {
            // FLC clear or the word inflated: an inflater cleared FLC under the monitor and
            // notifies (or has notified) every contender.
            if h.aux.load(Ordering::Acquire) & FLC == 0
                || h.lock.0.load(Ordering::Acquire) & SHAPE != 0
            {
                return;
            }
            if m.try_enter(t.core()) == Ok(true) {
                if h.aux.load(Ordering::Relaxed) & FLC != 0 {
                    let _ = m.notify_unreported(t.core(), false);
                }
                let _ = m.exit(t.core());
                return;
            }
            // The monitor's holder is a contender between its enter and its wait, or another
            // unlocker: a few instructions.
            spins += 1;
            if spins < 16 {
                spin_hint();
            } else {
                yield_now();
            }
        }
    }

    #[cold]
    pub(super) fn exit_slow(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &TasukiHeader,
    ) -> Result<(), MonitorError> {
        let w = h.lock.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            let m = monitor_of(rt, w)?;
            let idx = index_in(w).expect("inflated lock word holds a monitor index");
            if m.count_for(t.core()) == 1 && Self::may_deflate(t, m, idx) {
                // Deflation: nobody waits, so give the object back its flat lock, free.
                // Nobody else writes an inflated word; FLC is clear (nobody sets it while
                // the word is inflated). A racing enter that queues on `m` after the test
                // finds the flat word once it gets `m` and competes for it (`contend`).
                h.lock.0.store(w & HOST_BITS_MASK, Ordering::Release);
                rt.stats().deflated();
                let r = m.exit(t.core());
                // Reported once the monitor is let go of (the sink may lock the object).
                rt.report_deflation(t.id(), h as *const TasukiHeader as usize, idx.get());
                return r;
            }
            return m.exit(t.core());
        }
        if w & OWNER_MASK != t.core().id_shifted16() {
            return Err(MonitorError::IllegalMonitorState);
        }
        if w & COUNT_MASK != 0 {
            h.lock.0.store(w - COUNT_ONE, Ordering::Relaxed);
            return Ok(());
        }
        Self::release_flat(rt, t, h, w);
        Ok(())
    }

    /// Flat unlock: store free, fence, test FLC (Figure 4 lines 8–10 of seed 004 with §4's
    /// barrier, on the object's lock word and FLC bit).
    #[inline]
    pub(super) fn release_flat(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &TasukiHeader,
        w: u32,
    ) {
        h.lock.0.store(w & HOST_BITS_MASK, Ordering::Release);
        fence(Ordering::SeqCst);
        if h.aux.load(Ordering::Relaxed) & FLC != 0 {
            Self::wake_contender(rt, t, h);
        }
    }
}
