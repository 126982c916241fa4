//! The out-of-line paths of the biased engine: inflation by the owner (wait / notify,
//! overflow), the slow lock (biasing a fresh object, FABLE's learn mode past the inline
//! steps of `learn.rs`, thin contention, revocation of another thread's bias), the slow
//! unlock (buried and stale records, native) and the fat monitor for wait.

use super::learn::{
    guess_is, learn_count_of, LEARN_COUNT_MASK, LEARN_COUNT_MAX, LEARN_COUNT_SHIFT,
};
use super::*;
use crate::tasuki::Contenders;

impl<F: Flavor> Biasing<F> {
    /// The owner of `w` (biased, learn or thin, held `count` times by `t`) installs a fat
    /// monitor. `Ok(None)` if the word changed first (a revoker's mark, a learn → thin).
    pub(crate) fn inflate_own<'r>(
        rt: &'r Rt<F>,
        t: &Cx<F>,
        h: &BiasWord,
        w: u64,
        count: u32,
        cause: InflationCause,
    ) -> Result<Option<&'r FatMonitor>, MonitorError> {
        // We write `h`, which may be our last inline thin lock: forget it.
        t.local().rec.forget_last();
        let idx = rt.monitors().allocate()?;
        rt.monitors().bind(idx, addr(h));
        let m = rt.monitors().get(idx);
        if let Err(e) = m.enter_inflated(t.core_arc(), count) {
            rt.monitors().free(idx);
            return Err(e);
        }
        let new = (w & HOST) | FAT | (u64::from(idx.get()) << INDEX_SHIFT);
        if h.0
            .compare_exchange(w, new, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            for _ in 0..count {
                let _ = m.exit(t.core());
            }
            rt.monitors().free(idx);
            return Ok(None);
        }
        let state = w & STATE_MASK;
        if F::RECORDS && (state == BIASED || (state == THIN && w & STALE != 0)) {
            // The monitor holds the count now.
            t.local().rec.bury(addr(h));
        }
        rt.stats().inflated(cause);
        // A hash parked while we held `h` nested goes into the monitor (`biased_hash.rs`).
        Self::after_owner_inflation(rt, h, m, cause);
        t.local().count(match state {
            BIASED => Transition::BiasedToFat,
            LEARN => Transition::LearnToFat,
            _ => Transition::ThinToFat,
        });
        Ok(Some(m))
    }

    pub(super) fn cas(h: &BiasWord, w: u64, new: u64) -> bool {
        h.0.compare_exchange(w, new, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Records variant: biases `h` (word `w`, not biased) to `t`, held once: the record is
    /// committed before the CAS publishes the bias, so a revoker that sees the bias finds
    /// it. `None` if the records are full (the caller takes another route); `Some(false)` if
    /// the CAS failed.
    ///
    /// `h` is not biased, so nothing of ours at its address is true of it: a thin record
    /// naming it is forgotten (its unlock would otherwise store the recorded word over the
    /// bias), and (records variant) so are lock records naming it — a forgotten guard's
    /// hold of a header that safe code has since moved away (`mem::replace`, out of a
    /// `Box`) or dropped; counted, they would make this fresh object ours for good.
    pub(super) fn bias_to_me(local: &BiasThread, h: &BiasWord, w: u64) -> Option<bool> {
        let rec = &local.rec;
        rec.forget_if_last(addr(h));
        if !F::RECORDS {
            // Header variant: the hold is the rc of the biased word itself.
            let bias = rec.bias.load(Ordering::Relaxed);
            debug_assert_ne!(bias, NO_BIAS);
            return Some(Self::cas(h, w, (w & HOST) | bias | RC_ONE));
        }
        rec.mark_tombs(addr(h));
        if !rec.push_committed(addr(h)) {
            return None;
        }
        // The cached bias bits: callers run after `enter_slow` has set them.
        let bias = rec.bias.load(Ordering::Relaxed);
        debug_assert_ne!(bias, NO_BIAS);
        if Self::cas(h, w, (w & HOST) | bias) {
            return Some(true);
        }
        rec.unpush();
        Some(false)
    }

    /// The 256th hold of a lock `t` holds `count` times in word `w`: inflate with the new
    /// count (`enter_step`'s answer: `None` if the word changed first, so look again).
    pub(super) fn overflow_hold(
        rt: &Rt<F>,
        t: &Cx<F>,
        h: &BiasWord,
        w: u64,
        count: u32,
    ) -> Option<Result<bool, MonitorError>> {
        let cause = InflationCause::RecursionOverflow;
        match Self::inflate_own(rt, t, h, w, count + 1, cause) {
            Ok(Some(_)) => Some(Ok(true)),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    }

    /// One attempt of the slow lock path. `Some(result)` when finished; `None` to retry.
    /// `contended` remembers that a thin lock was seen held by another thread.
    pub(super) fn enter_step(
        rt: &Rt<F>,
        t: &Cx<F>,
        h: &BiasWord,
        w: u64,
        contended: &mut bool,
        try_only: bool,
    ) -> Option<Result<bool, MonitorError>> {
        let host = w & HOST;
        let me = Self::my_owner(t);
        let count = rc(w) as u32;
        let st = rt.state();
        match w & STATE_MASK {
            BIASED => {
                if w & OWNER_MASK == 0 {
                    if !F::LEARN && !Self::may_bias(t) {
                        // The runtime biases nothing (`Revocation::NoBias`): clear → thin.
                        return Self::cas(h, w, host | THIN | me | RC_ONE).then_some(Ok(true));
                    }
                    if !F::LEARN && F::RECORDS {
                        // KKO: bias on first acquire, the hold in a record; with no room for
                        // one, the object goes thin for good.
                        return match Self::bias_to_me(t.local(), h, w) {
                            Some(true) => {
                                t.local().count(Transition::ClearToBiased);
                                Some(Ok(true))
                            }
                            Some(false) => None,
                            None => Self::cas(h, w, host | THIN | me | RC_ONE).then_some(Ok(true)),
                        };
                    }
                    let (new, tr) = if F::LEARN {
                        // Our learn tag names this thread, not an earlier holder of its id.
                        (host | t.local().learn_guess, Transition::ClearToLearn)
                    } else {
                        (host | Self::my_bias(t) | RC_ONE, Transition::ClearToBiased)
                    };
                    if Self::cas(h, w, new) {
                        t.local().count(tr);
                        return Some(Ok(true));
                    }
                    return None;
                }
                if w & REVOKING != 0 {
                    return None; // the revoker finishes without us (no fast path of ours is in flight)
                }
                if w & (OWNER_MASK | GEN_MASK) == Self::my_bias(t) {
                    if F::RECORDS {
                        // Ours, records full (the caller found no room): keep the holds as
                        // a thin count. The records are buried, the count moves to the word.
                        let n = u64::from(t.local().rec.own_count(addr(h))) + 1;
                        let new = host | THIN | me | (n << RC_SHIFT);
                        if !Self::cas(h, w, new) {
                            return None;
                        }
                        t.local().rec.bury(addr(h));
                        t.local().count(Transition::BiasedToThin);
                        return Some(Ok(true));
                    }
                    // Ours with rc 255 (the fast step refused): the 256th hold inflates.
                    return Self::overflow_hold(rt, t, h, w, count);
                }
                if try_only && Self::bias_held(rt, h, w) {
                    return Some(Ok(false)); // held by its bias owner right now
                }
                if let Err(e) = Self::revoke(rt, t, h, w) {
                    return Some(Err(e));
                }
                None
            }
            LEARN | THIN => {
                let owner = w & OWNER_MASK;
                if owner == me && count > 0 {
                    if count < 255 {
                        // Ours and held: only we write it (seed 000 §2.3.3's nested store).
                        h.0.store(w + RC_ONE, Ordering::Relaxed);
                        return Some(Ok(true));
                    }
                    return Self::overflow_hold(rt, t, h, w, count);
                }
                if w & STATE_MASK == LEARN {
                    // The guess is this thread (id and learn tag): a word whose guess held
                    // our id before us is another thread's (`LEARN_TAG_SHIFT`).
                    if guess_is(t.local(), w) {
                        // §3.1: the guess re-acquires; bias at the learn limit N — when its
                        // thread's learnCount reaches N (`PerThread`, random counting), or
                        // the word's own count does (`PerObject`, see `LearnRule`).
                        let per_object = st.learn_rule() == LearnRule::PerObject;
                        let lc = &t.local().learn_count;
                        let (n, limit) = if per_object {
                            let limit = u64::from(st.learn_limit()).min(LEARN_COUNT_MAX);
                            (learn_count_of(w) + 1, limit)
                        } else {
                            let n = lc.load(Ordering::Relaxed) + 1;
                            (u64::from(n), u64::from(st.learn_limit()))
                        };
                        if n >= limit && !Self::may_bias(t) {
                            // The runtime biases nothing (`Revocation::NoBias`): Figure 5's
                            // other way out of learn mode, learn → thin.
                            if !Self::cas(h, w, host | THIN | me | RC_ONE) {
                                return None;
                            }
                            lc.store(0, Ordering::Relaxed);
                            t.local().count(Transition::LearnToThin);
                            return Some(Ok(true));
                        }
                        let mut bias = n >= limit;
                        if bias && F::RECORDS {
                            match Self::bias_to_me(t.local(), h, w) {
                                Some(true) => {
                                    lc.store(0, Ordering::Relaxed);
                                    t.local().count(Transition::LearnToBiased);
                                    return Some(Ok(true));
                                }
                                Some(false) => return None,
                                // No room for a record: keep learning, held in the word.
                                None => bias = false,
                            }
                        }
                        let new = if bias {
                            host | Self::my_bias(t) | RC_ONE
                        } else if per_object {
                            // Held once more, counted (at most `LEARN_COUNT_MAX`: records
                            // full at the limit keep it there).
                            let c = n.min(LEARN_COUNT_MAX) << LEARN_COUNT_SHIFT;
                            // (The tag bits stay: the word keeps naming us.)
                            ((w & !LEARN_COUNT_MASK) | c) + RC_ONE
                        } else {
                            w + RC_ONE
                        };
                        if !Self::cas(h, w, new) {
                            return None;
                        }
                        if !per_object {
                            // n < limit ≤ u32::MAX when not biasing.
                            lc.store(if bias { 0 } else { n as u32 }, Ordering::Relaxed);
                        }
                        if bias {
                            t.local().count(Transition::LearnToBiased);
                        }
                        return Some(Ok(true));
                    }
                    // Figure 5: a second thread acquiring in learn mode makes it thin. While
                    // the guess holds it, wait as for a held thin lock: a held learn word is
                    // then written by its holder only, which lets it unlock with a store.
                    if count > 0 {
                        if try_only {
                            return Some(Ok(false));
                        }
                        *contended = true;
                        return None;
                    }
                    if !Self::cas(h, w, host | THIN | me | RC_ONE) {
                        return None;
                    }
                    t.local().count(Transition::LearnToThin);
                    return Some(Ok(true));
                }
                if count == 0 {
                    if !Self::cas(h, w, host | THIN | me | RC_ONE) {
                        return None;
                    }
                    if *contended {
                        // As thin locks (seed 000 §2.3.4): having won a contended lock, make
                        // it fat. A full table leaves it thin, which is still correct.
                        let _ = Self::inflate_own(
                            rt,
                            t,
                            h,
                            host | THIN | me | RC_ONE,
                            1,
                            InflationCause::Contention,
                        );
                    }
                    return Some(Ok(true));
                }
                if try_only {
                    return Some(Ok(false));
                }
                *contended = true;
                None
            }
            _ => Some(Self::enter_fat(rt, t, w, try_only)),
        }
    }

    /// Enters the monitor of fat word `w`: `Ok(false)` if `try_only` and it is held by
    /// another thread.
    #[inline]
    fn enter_fat(rt: &Rt<F>, t: &Cx<F>, w: u64, try_only: bool) -> Result<bool, MonitorError> {
        let m = Self::monitor_of(rt, w)?;
        if m.try_enter(t.core())? {
            return Ok(true);
        }
        if try_only {
            return Ok(false);
        }
        if Self::SEED {
            // The seed flavors keep the safe scope around the whole enter (measured beside
            // the others: `examples/contended.rs`).
            return Self::safe(t, || m.enter(t.core_arc())).map(|()| true);
        }
        Self::enter_fat_contended(t, m);
        Ok(true)
    }

    /// A fat monitor held by another thread (`t` is not its owner: its `try_enter` failed):
    /// the monitor's bounded spin while running, then safe (a revoker does not wait for us)
    /// only around the enter that may suspend, which does not spin again
    /// ([`FatMonitor::enter_spun`]). The spin (a few µs) writes none of our headers and polls
    /// nothing, so a revoker's handshake waits at most that long for us, as for any stretch
    /// of user code between two polls. A safe scope around the whole monitor enter would
    /// put two SeqCst stores and the revoker mutex's lock and unlock on every contended
    /// enter.
    #[cold]
    #[inline(never)]
    fn enter_fat_contended(t: &Cx<F>, m: &FatMonitor) {
        // `parking_lot`'s contenders (`tasuki/config.rs`, `Contenders`); the seed flavors do not
        // come here (`enter_fat`).
        let c = Contenders::QueueFirst;
        if crate::events::on(m.events) {
            // The monitor's own spin reports nothing: with events on, its reported contended
            // enter (spin, then suspend; one `MonitorEnter` either way), in the safe state
            // throughout, where the report waits until the ownership stores are done.
            Self::safe(t, || {
                m.lock_contended(t.core_arc(), true, c);
                m.own_locked(t.core());
            });
            return;
        }
        if m.spin_enter_with(t.core(), c) {
            return;
        }
        Self::safe(t, || m.enter_spun_with(t.core_arc(), c));
    }

    #[cold]
    pub(super) fn enter_slow(
        rt: &Rt<F>,
        t: &Cx<F>,
        h: &BiasWord,
        try_only: bool,
    ) -> Result<bool, MonitorError> {
        // Any write of ours to a word we hold (nested, overflow, inflation) starts here or in
        // `inflate_own`: `h` may be our last inline thin lock, forget it.
        t.local().rec.forget_last();
        if t.local().sp.in_native() {
            // In native the thread counts as being at a safepoint: its biases are revoked in
            // place, with no barrier, so a biased step of its own now could make two owners.
            // Its fast paths came here because `enter_native` poisoned their cached bits.
            return Err(MonitorError::InNative);
        }
        if !Self::SEED {
            let w = h.0.load(Ordering::Acquire);
            if w & STATE_MASK == FAT {
                // Fat for good (nothing deflates a biased-engine word): straight to the
                // monitor, without the loop's poll, owner-step test and dispatch, nor its
                // stack frame (`enter_fat`).
                return Self::enter_fat(rt, t, w, try_only);
            }
        }
        Self::enter_slow_loop(rt, t, h, try_only)
    }

    /// [`enter_slow`](Self::enter_slow) for a word that is not fat (or a seed flavor).
    #[inline(never)]
    fn enter_slow_loop(
        rt: &Rt<F>,
        t: &Cx<F>,
        h: &BiasWord,
        try_only: bool,
    ) -> Result<bool, MonitorError> {
        let rec = &t.local().rec;
        if rec.bias.load(Ordering::Relaxed) == NO_BIAS
            && rt.state().revocation() != Revocation::NoBias
            && (!F::RSEQ || Self::rseq_ready(t))
        {
            // Before this thread can bias anything to itself (only here, in `enter_step`, and
            // in `bias_fresh`, both of which bias only once these bits are cached: where the
            // runtime biases nothing they never are).
            rt.state().may_have_biases.store(true, Ordering::SeqCst);
            rec.bias.store(Self::my_bias(t), Ordering::SeqCst);
        }
        let mut contended = false;
        let mut spins = Spin::new();
        let mut spin = None; // introspection: published while we spin on another's thin lock
                             // Once the word we spun on turns fat, the spin's `MonitorEnter` waits until this call
                             // returns (then we hold the monitor): a sink never runs on a thread still entering.
        let mut deferred = None;
        loop {
            Self::poll_self(rt, t);
            // Run the owner's step only when the word says it can succeed: a thread that
            // kept publishing records (or `in_op`) while its header is marked would stall
            // the barrier revoker.
            let w = h.0.load(Ordering::Acquire);
            if Self::mine_free(t, w) {
                if F::RECORDS {
                    t.local().rec.pop_tombs();
                }
                if !F::RECORDS || t.local().rec.top.load(Ordering::Relaxed) < LOCK_RECORDS {
                    if Self::biased_step(t, h, w, true).is_none() {
                        return Ok(true);
                    }
                    continue;
                }
                // Records full: `enter_step` moves the holds into a thin word.
            }
            if w & STATE_MASK == FAT && spin.is_some() && deferred.is_none() {
                deferred = Some(crate::events::Held::new());
            }
            spin = spin.filter(|_| w & STATE_MASK != FAT); // blocking on a monitor publishes itself
            if let Some(r) = Self::enter_step(rt, t, h, w, &mut contended, try_only) {
                return r;
            }
            if contended {
                spin.get_or_insert_with(|| {
                    crate::spin_episode::SpinEpisode::begin(rt.monitors(), t.core(), addr(h))
                })
                .observe(if rc(w) > 0 {
                    ((w & OWNER_MASK) >> OWNER_SHIFT) as u32
                } else {
                    0
                });
            }
            spins.snooze();
        }
    }

    /// Records variant: `t` releases a biased hold of `h` (word `w`, biased to `t`) whose
    /// record is not the innermost one (an unstructured exit, or buried records on top).
    /// `None` to retry.
    pub(super) fn exit_buried(t: &Cx<F>, h: &BiasWord, w: u64) -> Option<Result<(), MonitorError>> {
        let rec = &t.local().rec;
        let a = addr(h);
        rec.pop_tombs();
        let top = rec.top.load(Ordering::Relaxed);
        if top > 0 && rec.slots[top - 1].load(Ordering::Relaxed) == a {
            return None; // innermost now: the fast step will do
        }
        let Some(slot) = rec.slots[..top]
            .iter()
            .rev()
            .find(|s| s.load(Ordering::Relaxed) == a)
        else {
            return Some(Err(MonitorError::IllegalMonitorState));
        };
        // The unlock Dekker of the fast step, on a record below the top; committed by
        // burying the record rather than by lowering the top.
        slot.store(a | REC_RELEASING, Ordering::Release);
        owner_barrier();
        if h.0.load(Ordering::Relaxed) == w {
            slot.store(REC_TOMB, Ordering::Release);
            return Some(Ok(()));
        }
        slot.store(a, Ordering::Release);
        None
    }

    /// The unlock slow path. In native (a guard dropped there, say) the unlock is made, not
    /// refused — refusing would leak the lock — but under the thread's own revoker mutex:
    /// every revoker of the thread holds that mutex for its whole revocation, so meanwhile
    /// nobody revokes the thread's biases in place (nor marks them), and the next revoker,
    /// taking the mutex after us, sees the release. The thread's fast paths came here because
    /// their cached bits are poisoned; they are restored for the call.
    #[cold]
    pub(super) fn exit_slow(rt: &Rt<F>, t: &Cx<F>, h: &BiasWord) -> Result<(), MonitorError> {
        let local = t.local();
        if !Self::SEED {
            let w = h.0.load(Ordering::Acquire);
            if w & STATE_MASK == FAT {
                // Fat for good: straight to the monitor (inside the critical section, so
                // every instruction here delays the next owner), in native too — the
                // revoker mutex below guards biased words only.
                return Self::monitor_of(rt, w)?.exit(t.core());
            }
        }
        if !local.sp.in_native() {
            return Self::exit_slow_running(rt, t, h);
        }
        let _own = local.sp.lock_for_revoke();
        local
            .rec
            .bias
            .store(local.saved_bias.load(Ordering::Relaxed), Ordering::Relaxed);
        let r = Self::exit_slow_running(rt, t, h);
        local.rec.bias.store(NO_BIAS, Ordering::Relaxed);
        r
    }

    pub(super) fn exit_slow_running(
        rt: &Rt<F>,
        t: &Cx<F>,
        h: &BiasWord,
    ) -> Result<(), MonitorError> {
        let mut spins = Spin::new();
        loop {
            Self::poll_self(rt, t);
            let w = h.0.load(Ordering::Acquire);
            let mine = if F::RECORDS {
                Self::mine_free(t, w)
            } else {
                ((w & !HOST) ^ Self::my_bias(t)).wrapping_sub(RC_ONE) < RC_LIMIT
            };
            if mine {
                if Self::biased_step(t, h, w, false).is_none() {
                    return Ok(());
                }
                if F::RECORDS && h.0.load(Ordering::Acquire) == w {
                    if let Some(r) = Self::exit_buried(t, h, w) {
                        return r;
                    }
                }
                continue;
            }
            let me = Self::my_owner(t);
            match w & STATE_MASK {
                BIASED => {
                    let held = if F::RECORDS {
                        t.local().rec.own_count(addr(h)) > 0
                    } else {
                        rc(w) > 0
                    };
                    let mine = w & OWNER_MASK != 0
                        && w & (OWNER_MASK | GEN_MASK) == Self::my_bias(t)
                        && held;
                    if !mine {
                        return Err(MonitorError::IllegalMonitorState);
                    }
                    // Ours, being revoked: the revoker does not need us; wait for thin.
                }
                LEARN | THIN => {
                    if w & OWNER_MASK != me || rc(w) == 0 {
                        return Err(MonitorError::IllegalMonitorState);
                    }
                    if F::RECORDS && w & (STATE_MASK | STALE) == THIN | STALE {
                        // Revoked while held: the count is in the word now; our records
                        // of it are duplicates.
                        t.local().rec.bury(addr(h));
                    }
                    let w = w & !(if w & STATE_MASK == THIN { STALE } else { 0 });
                    let new = if rc(w) == 1 && !F::STICKY {
                        (w & HOST) | THIN
                    } else {
                        w - RC_ONE
                    };
                    // Held by us: nobody else writes it (module docs), so a store will do.
                    h.0.store(new, Ordering::Release);
                    // Down to one level: settle a hash parked meanwhile (`biased_hash.rs`),
                    // before the last unlock, which is inline and looks only at the word.
                    Self::settle_parked_hash_after(rt, t, h, new);
                    return Ok(());
                }
                _ => return Self::monitor_of(rt, w)?.exit(t.core()),
            }
            spins.snooze();
        }
    }

    /// The fat monitor for wait / notify: installed, or inflated by its owner `t`.
    pub(super) fn fat_for_wait<'r>(
        rt: &'r Rt<F>,
        t: &Cx<F>,
        h: &BiasWord,
    ) -> Result<&'r FatMonitor, MonitorError> {
        if t.local().sp.in_native() {
            return Err(MonitorError::InNative); // see `enter_slow`
        }
        let mut spins = Spin::new();
        loop {
            Self::poll_self(rt, t);
            let w = h.0.load(Ordering::Acquire);
            let (held, count) = match w & STATE_MASK {
                FAT => return Self::monitor_of(rt, w),
                BIASED => {
                    let count = if F::RECORDS {
                        t.local().rec.own_count(addr(h))
                    } else {
                        rc(w) as u32
                    };
                    if w & OWNER_MASK == 0
                        || w & (OWNER_MASK | GEN_MASK) != Self::my_bias(t)
                        || count == 0
                    {
                        return Err(MonitorError::IllegalMonitorState);
                    }
                    (w & REVOKING == 0, count)
                }
                _ => {
                    if w & OWNER_MASK != Self::my_owner(t) || rc(w) == 0 {
                        return Err(MonitorError::IllegalMonitorState);
                    }
                    (true, rc(w) as u32)
                }
            };
            if held {
                if let Some(m) = Self::inflate_own(rt, t, h, w, count, InflationCause::WaitNotify)?
                {
                    return Ok(m);
                }
            }
            spins.snooze();
        }
    }
}
