//! `thin`'s slow paths: inflation by the owner (§2.3.4, count overflow, wait), the nested and
//! contended enter, the fat monitor's enter and exit from a thin word, and the blocked state in
//! which another thread may inflate this thread's words for it (a hasher, a starving contender).

use super::*;
use crate::tasuki::Contenders;

impl<const SEED: bool> ThinLocks<SEED> {
    /// Inflates a thin lock that `t` owns with `count` locks (§2.3.4, §2.3.3 overflow, wait).
    /// Only the owner may do this: it alone writes the lock field.
    pub(super) fn inflate<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
        w: u32,
        count: u32,
        cause: InflationCause,
    ) -> Result<&'r FatMonitor, MonitorError> {
        debug_assert_eq!(w & (SHAPE | OWNER_MASK), t.core().id_shifted16());
        // The word stops being `host | me`: forget a record of it.
        t.local().forget_last();
        let idx = rt.monitors().allocate()?;
        rt.monitors().bind(idx, h as *const LockWord as usize);
        let m = rt.monitors().get(idx);
        m.enter_inflated(t.core_arc(), count)?;
        // Release: whoever reads the new word with Acquire sees the monitor set up.
        h.0.store(
            SHAPE | (idx.get() << INDEX_SHIFT) | (w & HOST_BITS_MASK),
            Ordering::Release,
        );
        rt.stats().inflated(cause);
        // A hash parked while we held it nested goes into the monitor now, before the header
        // can move (hash.rs: the owner's half of the Dekker).
        if rt.side_hashes().owner_must_look(*rt.state()) {
            Self::adopt_parked(rt, h, w, m, None);
        }
        rt.report_inflation(t.id(), addr(h), idx.get(), cause);
        Ok(m)
    }

    /// The lock fast path failed: nested (§2.3.3; `thin-seed` only, `thin` tests it inline),
    /// else contended.
    #[cold]
    #[inline(never)]
    pub(super) fn enter_slow(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<(), MonitorError> {
        // Forget a record of `h` before anything else: we may write `h` (nested, overflow),
        // and an inflated word here may be a header that safe code moved in over a word we
        // locked once and forgot (`mem::forget` of its guard, then `mem::swap`): its unlock
        // must not trust a record of the word that was here (`thin-seed` keeps none).
        if !SEED {
            t.local().forget_last();
        }
        let w = h.0.load(Ordering::Relaxed);
        if !SEED && w & SHAPE != 0 {
            // Inflated (contended before): straight to the monitor. Tested here, not in the
            // fast path, where the branch cost 2–3 instructions per uncontended lock+unlock.
            return Self::enter_fat(rt, t, w);
        }
        let me = t.core().id_shifted16();
        // §2.3.3: shape 0, owner = me, count < 255, in one xor and one compare.
        if (w ^ me) < (255 << COUNT_SHIFT) {
            h.0.store(w + COUNT_ONE, Ordering::Relaxed);
            return Ok(());
        }
        if SEED && w & SHAPE != 0 {
            // `thin-seed`, inflated: straight to the monitor as `thin`. Seed 000 §2.3.4 says
            // only that "subsequent attempts to lock the object will use the fat lock"; the
            // `BLOCKED` bracket is the identity hash's, not the seed's, so it is paid only
            // around a suspend (`enter_fat`). Tested after §2.3.3's nested test, the seed's
            // next case after the failed CAS, so the nested pair keeps its instructions.
            return Self::enter_fat(rt, t, w);
        }
        Self::enter_contended(rt, t, h)
    }

    #[inline(never)]
    pub(super) fn enter_contended(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<(), MonitorError> {
        let me = t.core().id_shifted16();
        let mut spin_policy = Spin::new();
        // While we spin for (or park on) a lock held by another thread we write none of the
        // thin words we hold: `BLOCKED` (a hasher may inflate them for us), entered at the
        // first spin and left before any write of a word of ours.
        let mut blocked = false;
        // Published while we spin (introspection); ended before blocking on a monitor.
        let mut spin = None;
        loop {
            let w = h.0.load(Ordering::Acquire);
            if w & SHAPE != 0 {
                drop(spin.take());
                if !blocked {
                    Self::block(t);
                }
                let r = monitor_of(rt, w).and_then(|m| m.enter(t.core_arc()));
                Self::unblock(t);
                return r;
            }
            if w & LOCK_MASK == 0 {
                // Unlocked: the owner released while we spun.
                if h.0
                    .compare_exchange(w, w | me, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    if blocked {
                        Self::won_contended(rt, t, h, w | me);
                    }
                    return Ok(());
                }
                continue;
            }
            if w & OWNER_MASK == me {
                // Ours (we are not blocked: we hold it, so no spin came before). §2.3.3, or
                // count overflow: the 257th lock inflates, carrying all the locks over.
                debug_assert!(!blocked);
                if (w ^ me) < (255 << COUNT_SHIFT) {
                    h.0.store(w + COUNT_ONE, Ordering::Relaxed);
                    return Ok(());
                }
                Self::inflate(rt, t, h, w, 257, InflationCause::RecursionOverflow)?;
                return Ok(());
            }
            // §2.3.4: held by another thread; only it may change the word. Spin (`spin.rs`:
            // the policy, and why a contender cannot be handed the lock before inflation).
            if !blocked {
                Self::block(t);
                blocked = true;
            }
            spin.get_or_insert_with(|| SpinEpisode::begin(rt.monitors(), t.core(), h.addr()))
                .observe((w & OWNER_MASK) >> OWNER_SHIFT);
            spin_policy.snooze();
            if spin_policy.starving_checkpoint()
                && Self::inflate_for_blocked_owner(rt, t, h, w, None, InflationCause::Contention)
                    .unwrap_or(false)
            {
                // Its owner is blocked in objmon (or gone) and we have waited long: the lock
                // is fat now, and we queue on its monitor (hand-off) instead of spinning.
                continue;
            }
        }
    }

    /// The lock word `w` is inflated (`thin` and `thin-seed`). Enter its monitor, and
    /// become `BLOCKED` only if that means suspending: re-entering, taking a free monitor
    /// and the monitor's bounded spin (`TasukiLock::spin`, a few µs) write none of our thin
    /// words and wait for nothing unbounded, so they stay `RUNNING` (and, `thin`, keep the
    /// record of the last fast lock: nobody else may write our words while we run).
    /// `enter_contended` (a thread that spun on the thin word when it was inflated) pays
    /// `block` / `unblock`, two SeqCst read-modify-writes, around its one inflated enter
    /// (`docs/benchmarks.md`, "`thin` and `thin-seed`": what that bracket cost on every enter).
    #[inline]
    pub(super) fn enter_fat(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        w: u32,
    ) -> Result<(), MonitorError> {
        // Acquire: the fast path's load was Relaxed; the inflater's Release store of `w`
        // published the monitor (table slot, binding) we are about to use.
        crate::sync::fence(Ordering::Acquire);
        let m = monitor_of(rt, w)?;
        if m.try_enter(t.core())? {
            return Ok(());
        }
        Self::enter_fat_contended(t, m)
    }

    /// [`enter_fat`](Self::enter_fat) found the monitor held by another thread: its bounded
    /// spin, `RUNNING`; then `BLOCKED` around the enter that may suspend.
    #[cold]
    #[inline(never)]
    pub(super) fn enter_fat_contended(
        t: &ThreadContext<Self>,
        m: &FatMonitor,
    ) -> Result<(), MonitorError> {
        // `thin`: `parking_lot`'s contenders (no spin while threads are suspended, a woken
        // thread spins again); `thin-seed`: seed 004's (`tasuki.rs`, `Contenders`).
        let c = if SEED {
            Contenders::Seed
        } else {
            Contenders::QueueFirst
        };
        if crate::events::on(m.events) {
            return Self::enter_fat_reported(t, m, c);
        }
        if m.spin_enter_with(t.core(), c) {
            return Ok(());
        }
        // We may sleep on the monitor: a hasher or a starving contender may then inflate
        // the thin words we hold for us (`ThinThread`), so announce it.
        // The monitor's spin is spent: straight to the suspend (`enter_spun`, no second
        // spin). Not the owner: `try_enter` would have re-entered.
        Self::block(t);
        m.enter_spun_with(t.core_arc(), c);
        Self::unblock(t);
        Ok(())
    }

    /// [`enter_fat_contended`](Self::enter_fat_contended) with events on: the fat monitor's
    /// reported contended enter (`FatMonitor::lock_contended`: its spin, then the suspend),
    /// one `MonitorEnter` whether the spin got it or the thread parked, timed from before
    /// the spin and naming the owner found then, as `fat`'s enter. Split off because the
    /// monitor's own spin (`spin_enter_with`) reports nothing: a contender that won there
    /// had waited unreported. `BLOCKED` over the spin too (it writes none of our words);
    /// the report is queued until `unblock`, after the ownership stores.
    #[cold]
    #[inline(never)]
    fn enter_fat_reported(
        t: &ThreadContext<Self>,
        m: &FatMonitor,
        c: Contenders,
    ) -> Result<(), MonitorError> {
        Self::block(t);
        m.lock_contended(t.core_arc(), true, c);
        m.own_locked(t.core());
        Self::unblock(t);
        Ok(())
    }

    /// We took `h` (now `w`, held once) after spinning, in the blocked state: leave it, then
    /// §2.3.4, make the lock fat — unless a hasher inflated it for us meanwhile. A full table
    /// leaves it thin, which is still correct.
    pub(super) fn won_contended(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &LockWord, w: u32) {
        Self::unblock(t);
        if h.0.load(Ordering::Relaxed) == w {
            let _ = Self::inflate(rt, t, h, w, 1, InflationCause::Contention);
        }
    }

    /// The unlock's one store, of `new`: the word minus one (§2.3.3, a word we hold nested)
    /// or the host bits (a release: the blind store of the record's, or §2.3.2's). Then our
    /// half of the side table's Dekker (hash.rs), on our own line: a hasher that parks for a
    /// word we hold nested, or parks loose for one we hold once, sets `look` before its
    /// barrier (`membarrier`: ours is a compiler barrier), so either it sees this store or we
    /// see its mark. A symmetric runtime's threads keep `look` set for good, and
    /// `unlock_looks` pays the fence where one is needed. One store for every case: with a
    /// second call site, the guard's drop no longer inlined into a user's loop.
    #[inline(always)]
    pub(super) fn unlock_store(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
        new: u32,
    ) {
        // Release: our critical section before the next owner's Acquire CAS (a plain store on
        // x86-64 and a `stlr` on AArch64 for a nested unlock too, which needs no ordering).
        h.0.store(new, Ordering::Release);
        crate::membarrier::owner_barrier();
        if t.local().look.load(Ordering::Relaxed) != 0 {
            Self::unlock_looks(rt, t, h, new);
        }
    }

    /// The unlock fast path did not apply: inflated, nested (`thin-seed`), or not ours.
    /// `thin` comes here only for an `h` that is not `ThinThread::last`, so the record stays.
    #[cold]
    #[inline(never)]
    pub(super) fn exit_slow(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<(), MonitorError> {
        let w = h.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            return monitor_of(rt, w)?.exit(t.core());
        }
        if w & OWNER_MASK != t.core().id_shifted16() {
            return Err(MonitorError::IllegalMonitorState);
        }
        if w & COUNT_MASK != 0 {
            h.0.store(w - COUNT_ONE, Ordering::Relaxed);
            if w & COUNT_MASK == COUNT_ONE && rt.side_hashes().owner_must_look(*rt.state()) {
                // Down to one level: our next unlock may be the fast path, which looks at
                // nothing but the word. Settle a hash parked meanwhile (hash.rs).
                Self::settle_parked(rt, t, h);
            }
        } else {
            h.0.store(w & HOST_BITS_MASK, Ordering::Release);
        }
        Ok(())
    }

    /// The fat monitor for wait / notify: the installed one, or inflate the thin lock that
    /// `t` owns. `IllegalMonitorState` if `t` does not own a thin lock.
    pub(super) fn fat_for_wait<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<&'r FatMonitor, MonitorError> {
        let w = h.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            return monitor_of(rt, w);
        }
        // We inflate `h`: forget a record of it.
        t.local().forget_last();
        if w & OWNER_MASK != t.core().id_shifted16() {
            return Err(MonitorError::IllegalMonitorState);
        }
        Self::inflate(rt, t, h, w, thin_locks(w), InflationCause::WaitNotify)
    }

    /// Enters the blocked state: until [`unblock`](Self::unblock) the caller writes none of
    /// the thin words it holds.
    pub(super) fn block(t: &ThreadContext<Self>) {
        // Blocked, our words may be inflated for us: none of them is `host | me` for sure.
        t.local().forget_last();
        if t.local().state.swap(BLOCKED, Ordering::SeqCst) != BLOCKED {
            // No sink runs while blocked: it might write our thin words (`events.rs`).
            crate::events::hold();
        }
    }

    /// Leaves the blocked state, after a hasher's inflation on our behalf (a few hundred
    /// instructions, no blocking) has finished.
    pub(super) fn unblock(t: &ThreadContext<Self>) {
        let s = &t.local().state;
        while s
            .compare_exchange(BLOCKED, RUNNING, Ordering::SeqCst, Ordering::Relaxed)
            .is_err()
        {
            spin_hint();
        }
        // Running again: the events raised while blocked are delivered now.
        crate::events::release();
    }

    /// `f` in the blocked state (`f` writes no thin word the caller holds).
    pub(super) fn blocked<R>(t: &ThreadContext<Self>, f: impl FnOnce() -> R) -> R {
        Self::block(t);
        let r = f();
        Self::unblock(t);
        r
    }

    /// `w`, the word of the header at `a`, dies or moves: if it is held once, its owner may
    /// have recorded `a` as its last fast lock (`ThinThread::last`); clear that record. A CAS
    /// on another thread's record, which it writes with plain stores: if it has recorded
    /// another word since, the CAS fails and that record stays. Relaxed: the owner's next use
    /// of the address (a new object there) is ordered after this call by whatever handed it
    /// the new object, and then reads 0 or a later record (coherence).
    #[cold]
    pub(super) fn forget_record(rt: &Runtime<Self>, w: u32, a: usize) {
        if SEED || w & SHAPE != 0 || w & COUNT_MASK != 0 {
            return;
        }
        let cx = ThreadId::from_raw(owner_raw(w)).and_then(|id| rt.threads().get(id));
        if let Some(cx) = cx {
            let _ = cx
                .local()
                .last
                .compare_exchange(a, 0, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// `w`: `h` held once by another thread. If that thread is blocked in objmon (claimed
    /// here, so that it cannot leave the state meanwhile) or detached, inflate the lock on its
    /// behalf with a monitor holding the hash: `Ok(true)`, look again. `Ok(false)`: it runs.
    pub(super) fn inflate_for_blocked_owner(
        rt: &Runtime<Self>,
        by: &ThreadContext<Self>,
        h: &LockWord,
        w: u32,
        fresh: Option<&dyn Fn() -> u32>,
        cause: InflationCause,
    ) -> Result<bool, MonitorError> {
        let owner = owner_raw(w);
        let cx = rt
            .threads()
            .owner_context(owner, || h.0.load(Ordering::SeqCst) == w)?;
        // No context: the id was retired with this lock held (handle.rs); it never runs again.
        let claim = match &cx {
            None => None,
            Some(cx) => {
                let s = &cx.local().state;
                match s.compare_exchange(BLOCKED, CLAIMED, Ordering::SeqCst, Ordering::SeqCst) {
                    Ok(_) => Some(s),
                    Err(EXITED) => None,
                    Err(_) => return Ok(false),
                }
            }
        };
        let r = (|| {
            let idx = rt.monitors().allocate()?;
            rt.monitors().bind(idx, addr(h));
            let m = rt.monitors().get(idx);
            m.enter_inflated_for(owner, thin_locks(w))?;
            if let Some(f) = fresh {
                m.install_hash(f());
            }
            // The owner writes nothing while blocked; lockers and other hashers CAS too.
            if h.0
                .compare_exchange(
                    w,
                    SHAPE | (idx.get() << INDEX_SHIFT) | (w & HOST_BITS_MASK),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                rt.stats().inflated(cause);
                // A hash parked while it held `h` nested goes into the monitor, as at the
                // owner's own inflation.
                if m.identity_hash().is_none() && rt.side_hashes().owner_must_look(*rt.state()) {
                    Self::adopt_parked(rt, h, w, m, None);
                }
                rt.report_inflation(by.id(), addr(h), idx.get(), cause);
            } else {
                m.abandon_fresh();
                rt.monitors().free(idx);
            }
            Ok(true)
        })();
        if let Some(s) = claim {
            s.store(BLOCKED, Ordering::SeqCst);
        }
        r
    }
}
