//! What `enter` and `exit` do with the header word they load, before anything out of line:
//! the thin acquisition and the combined learn / thin unlock (seed 002 Figure 7), the nested
//! steps, the bias owner's step (`fastpath.rs`) in the order each flavor runs them, the fat
//! short cut of the signal flavors, and the one call each to the fresh and slow paths
//! (`learn.rs`, `slow.rs`). docs/soundness.md §9, "What each fast path executes", says what each executes;
//! the protocol's `enter` / `exit` (in `biased.rs`) call [`lock_with`](Biasing::lock_with) and
//! [`unlock_with`](Biasing::unlock_with) here.

use super::*;

impl<F: Flavor> Biasing<F> {
    /// `enter`'s thin acquisition (Figure 4: thin and free, owner 0; Figure 7: thin, rc 0,
    /// last owner = me; the non-seed variants take any free thin word, one more AND: see
    /// `fresh_enter`): `None` when `w` (a learn or thin word) is not one this thread may
    /// take so; else the CAS's outcome (`Err`: the word now). The expected bits are read
    /// from the thread's line (`free_thin`), poisoned in native: the compare takes a memory
    /// operand instead of an immediate, the same one instruction.
    #[inline(always)]
    pub(super) fn thin_free_step(t: &Cx<F>, h: &BiasWord, w: u64) -> Option<Result<(), u64>> {
        let ignore = if F::STICKY && !Self::SEED {
            OWNER_MASK
        } else {
            0
        };
        let rec = &t.local().rec;
        if (w ^ rec.thin_free.load(Ordering::Relaxed)) & !HOST & !ignore != 0 {
            return None;
        }
        let new = (w & HOST) | rec.thin_once;
        if !Self::SEED {
            // Record the word *before* the CAS makes it `new` (only we write it then): the
            // unlock stores `last_word` blind instead of loading the header right after the
            // locked instruction (`LockRecords::last`; as `thin`, whose record stores after
            // the CAS delayed the next CAS). A failed CAS forgets it. Only this thread's
            // unlock reads it, after this returns.
            let back = if F::STICKY {
                new - RC_ONE
            } else {
                (w & HOST) | THIN
            };
            rec.last.store(addr(h), Ordering::Relaxed);
            rec.last_word.store(back, Ordering::Relaxed);
        }
        match h
            .0
            .compare_exchange(w, new, Ordering::Acquire, Ordering::Relaxed)
        {
            Ok(_) => Some(Ok(())),
            Err(now) => {
                if !Self::SEED {
                    rec.forget_last();
                }
                Some(Err(now))
            }
        }
    }

    /// Nested (non-seed flavors): a learn or thin word `w` this thread holds 1..=254 times
    /// is held once more. Only the holder writes a held word: a store (seed 000 §2.3.3's
    /// nested path: a load, a compare, a store). `false` (nothing written) otherwise.
    ///
    /// The test reads bits 33..8 only ([`NEST_MASK`]: owner, stale, the state's low bit,
    /// rc), as `exit_nested`'s does: state bit 17, which tells learn from thin, is masked out,
    /// and so are a learn word's tag and count (bits 62..34; zero in thin words). The holder
    /// of a held word is alive, so its id alone names it (ids are reused only after a
    /// detach, never while the lock is held). A biased or fat word has the state's low bit
    /// clear and fails; so does every word in native, where `nest_once` is poisoned
    /// (`NO_NEST`: bit 63, outside the mask) and the slow path refuses. The mask leaves a
    /// learn word's tag and count out, so a held learn word takes this step too.
    #[inline(always)]
    pub(super) fn nested_step(t: &Cx<F>, h: &BiasWord, w: u64) -> bool {
        let rec = &t.local().rec;
        let x = (w & NEST_MASK).wrapping_sub(rec.nest_once.load(Ordering::Relaxed));
        if x < 254 << RC_SHIFT {
            h.0.store(w + RC_ONE, Ordering::Relaxed);
            // The word is no longer held once: if it is `last`, forget it — only then (a
            // load and a branch): a store to the record on every nested lock, reloaded by
            // the unlock right after, was a third store per nested lock + unlock (`thin`'s
            // `forget_if_last`, main a8286f0). A record of another word stays true.
            rec.forget_if_last(addr(h));
            return true;
        }
        false
    }

    /// `lock` (`known`: the handle's word).
    ///
    /// # Safety
    /// As `Protocol::lock` (`known` is `handle_word(t)`).
    #[inline(always)]
    pub(super) unsafe fn lock_with(
        rt: &Rt<F>,
        t: &Cx<F>,
        known: u64,
        h: &BiasWord,
    ) -> Result<(), MonitorError> {
        if F::SIGNAL {
            // The bias owner's step first, its load the only one: the section must hold the
            // load whose word it stores, and its test alone rejects learn, thin and fat
            // words (a second load of the header on the owner's path costs more than the
            // rseq flavors' arming store). After it, inline, only the thin CAS and FABLE's
            // counted learn step (`enter_signal_rest`); the rest is one call away, which keeps
            // `enter` small enough to inline into a user's loop (docs/benchmarks.md,
            // "Biased-family notes moved out of the code").
            if Self::signal_done(t, h, known, true) {
                return Ok(());
            }
            return Self::enter_signal_rest(rt, t, h, h.0.load(Ordering::Relaxed));
        }
        Self::enter_word(rt, t, h, h.0.load(Ordering::Relaxed))
    }

    /// `unlock` (`known`: the handle's word).
    ///
    /// # Safety
    /// As `Protocol::unlock` (`known` is `handle_word(t)`).
    #[inline(always)]
    pub(super) unsafe fn unlock_with(
        rt: &Rt<F>,
        t: &Cx<F>,
        known: u64,
        h: &BiasWord,
    ) -> Result<(), MonitorError> {
        if F::SIGNAL {
            // The owner's step first; then, inline, the record of the last thin / learn CAS
            // (a blind store) and `exit_word`'s combined unlock, as `fable`'s `exit` has
            // them (the nested unlock is one call away there too, `exit_nested`), so the guard's
            // drop inlines into the harness's loops.
            if Self::signal_done(t, h, known, false) || Self::exit_recorded(t, h) {
                return Ok(());
            }
            return Self::exit_word(rt, t, h, h.0.load(Ordering::Relaxed));
        }
        // The record first (one load and compare on the bias owner's path), so that a thin
        // unlock does not load the header after its CAS.
        if !Self::SEED && Self::exit_recorded(t, h) {
            return Ok(());
        }
        Self::exit_word(rt, t, h, h.0.load(Ordering::Relaxed))
    }

    /// The signal flavors' `enter` after the owner's section failed, from a load `w` of the
    /// header: the two steps of a thin or learning object that AllocLock and Cloud (seed 002
    /// §5.1, §5.3) take most — the thin CAS and FABLE's counted learn re-acquisition — inline
    /// as `fable`'s `enter` has them; everything else (nested holds, clear → learn, learn →
    /// thin, biasing, the slow path) one call away, in [`enter_after_step`](Self::enter_after_step),
    /// so that `enter` stays small enough for a user's loop to inline (see `enter`).
    ///
    /// # Safety
    ///
    /// As [`Protocol::enter`].
    #[inline(always)]
    pub(super) unsafe fn enter_signal_rest(
        rt: &Rt<F>,
        t: &Cx<F>,
        h: &BiasWord,
        w: u64,
    ) -> Result<(), MonitorError> {
        if w & STATE_LOW != 0 {
            match Self::thin_free_step(t, h, w) {
                Some(Ok(())) => return Ok(()),
                Some(Err(_)) => {}
                None => {
                    if F::LEARN && Self::learn_counted(rt, t.local(), h, w) == Some(true) {
                        return Ok(());
                    }
                    // A nested hold, inline for KKO (`biased-signal`: 7.0–7.4 → 3.5 ns per
                    // thin nested lock + unlock, `biased_fastpath time-nested`). Not for FABLE:
                    // after the counted learn step it made `fable-signal`'s `enter` too big
                    // for the harness's `Subject::lock` (`sync` 0.79 → 2.4 ns, out of line;
                    // with the record forgotten by a store instead it fitted, but the third
                    // store cost the nested loop 1.3 ns); its nested step is one call away,
                    // in `enter_after_step`.
                    if !F::LEARN && Self::nested_step(t, h, w) {
                        return Ok(());
                    }
                }
            }
        } else if w & STATE_MASK == FAT {
            // Fat for good: one call to the monitor (`enter_slow`'s first test), not two and
            // `fresh_enter`'s tests. The fewer instructions between an owner's release and its
            // next compare-and-swap, the less often a spinner takes the monitor across the
            // cores in that gap (`deflate::try_enter_inflated`): `examples/contended`,
            // `fable-signal` 1.90–2.20× → 1.42–1.88× `parking_lot` at 4 and 8 threads.
            return Self::enter_slow(rt, t, h, false).map(|_| ());
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { Self::enter_after_step(rt, t, h) }
    }

    /// The rest of the signal flavors' `enter` (see [`enter_signal_rest`](Self::enter_signal_rest)),
    /// out of line, from a fresh load of the header: what [`enter_word`](Self::enter_word)
    /// does after its thin CAS — the nested step, then `fresh_enter` (whose counted step
    /// the caller's failed too: a rare path repeats its test) and the slow path. A thin
    /// word the caller's CAS lost is not tried again here, as in `enter_word`.
    ///
    /// # Safety
    ///
    /// As [`Protocol::enter`].
    #[inline(never)]
    pub(super) unsafe fn enter_after_step(
        rt: &Rt<F>,
        t: &Cx<F>,
        h: &BiasWord,
    ) -> Result<(), MonitorError> {
        let w = h.0.load(Ordering::Relaxed);
        if w & STATE_LOW != 0 && Self::nested_step(t, h, w) {
            return Ok(());
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { Self::enter_fresh(rt, t, h, w) }
    }

    /// [`enter_after_step`](Self::enter_after_step) past its nested step: `fresh_enter`, then
    /// the slow path. A call of its own (a jump), so that the nested step above saves no
    /// registers: with these paths in the same function, every nested lock of the signal
    /// flavors pushed and popped three (`user_loop fable-signal nested`: 88 → 82
    /// instructions).
    ///
    /// # Safety
    ///
    /// As [`Protocol::enter`].
    #[inline(never)]
    pub(super) unsafe fn enter_fresh(
        rt: &Rt<F>,
        t: &Cx<F>,
        h: &BiasWord,
        w: u64,
    ) -> Result<(), MonitorError> {
        if Self::fresh_enter(rt, t, h, w) {
            return Ok(());
        }
        Self::enter_slow(rt, t, h, false).map(|_| ())
    }

    /// `enter` from a load `w` of the header: the thin and learn fast paths, the bias
    /// owner's step (not for the signal flavors, whose step has run), then the fresh and
    /// slow paths.
    ///
    /// # Safety
    ///
    /// As [`Protocol::enter`].
    #[inline(always)]
    pub(super) unsafe fn enter_word(
        rt: &Rt<F>,
        t: &Cx<F>,
        h: &BiasWord,
        mut w: u64,
    ) -> Result<(), MonitorError> {
        if w & STATE_LOW != 0 {
            // Learn or thin.
            match Self::thin_free_step(t, h, w) {
                Some(Ok(())) => return Ok(()),
                // Taken, or a host bit changed: look again below.
                Some(Err(now)) => w = now,
                None => {
                    if !Self::SEED && Self::nested_step(t, h, w) {
                        return Ok(());
                    }
                }
            }
        } else if !F::SIGNAL {
            // Biased (perhaps to us), clear or fat.
            match Self::biased_step(t, h, w, true) {
                None => return Ok(()),
                Some(now) => w = now,
            }
        }
        if !Self::SEED && Self::fresh_enter(rt, t, h, w) {
            return Ok(());
        }
        Self::enter_slow(rt, t, h, false).map(|_| ())
    }

    /// The unlock of the word of `enter`'s last inline thin CAS (non-seed flavors): if `h`
    /// is `LockRecords::last`, one blind releasing store of `last_word`, and the record
    /// forgotten. `false` (one load and compare) otherwise.
    #[inline(always)]
    pub(super) fn exit_recorded(t: &Cx<F>, h: &BiasWord) -> bool {
        let rec = &t.local().rec;
        if rec.last.load(Ordering::Relaxed) != addr(h) {
            return false;
        }
        // `LockRecords::last`'s invariant: the word is `last_word + RC_ONE`, ours once, and
        // nobody else writes it. Release: our critical section before the next owner's
        // Acquire CAS (as the combined unlock's store in `exit_word`).
        h.0.store(rec.last_word.load(Ordering::Relaxed), Ordering::Release);
        rec.forget_last();
        true
    }

    /// After a nested unlock's store of `new` (non-seed flavors): the owner's half of the
    /// parked-hash Dekker (hash.rs, `SideHashes::owner_must_look`; `settle_parked_hash_after`
    /// in `biased_hash.rs`), on this thread's cached mode (`LockRecords::hash_fence`): a
    /// compiler barrier, then one load of the side table's count and a branch, out of line
    /// only when the table may hold an entry (or the thread's barrier is a fence). At every
    /// level, not only from two to one (the out-of-line check tests that): a compare fewer.
    /// The fence mode is cached at attach: asking `membarrier::init` here (a possible call)
    /// would make this path save and restore four registers on every nested unlock.
    #[inline(always)]
    pub(super) fn unnest_look(rt: &Rt<F>, t: &Cx<F>, h: &BiasWord, new: u64) {
        crate::membarrier::owner_barrier();
        if t.local().rec.hash_fence || rt.side_hashes().may_hold_any() {
            Self::settle_nested(rt, t, h, new);
        }
    }

    /// `exit` from a load `w` of the header (see [`enter_word`](Self::enter_word)).
    ///
    /// # Safety
    ///
    /// As [`Protocol::exit`].
    #[inline(always)]
    pub(super) unsafe fn exit_word(
        rt: &Rt<F>,
        t: &Cx<F>,
        h: &BiasWord,
        mut w: u64,
    ) -> Result<(), MonitorError> {
        if w & STATE_LOW == 0 {
            // Biased (to us, unless misused), clear or fat.
            if !F::SIGNAL && Self::biased_step(t, h, w, false).is_none() {
                return Ok(());
            }
            // Out of line below (a biased `w` fails `exit_nested`'s test: on to `exit_slow`).
        } else if w & NEST_MASK == t.local().rec.unlock_once {
            // Figure 7's combined learn / thin unlock of the last level (Figure 4: thin only,
            // clearing the owner).
            let new = if F::STICKY {
                w - RC_ONE
            } else {
                (w & HOST) | THIN
            };
            // Nobody else writes a held thin or learn word (contenders spin, only the owner
            // inflates), so seed 000 §2.3.2's releasing store does what Figure 7's CAS does.
            h.0.store(new, Ordering::Release);
            return Ok(());
        } else if F::RSEQ
            && (w & NEST_MASK)
                .wrapping_sub(t.local().rec.unlock_once)
                .wrapping_sub(RC_ONE)
                < 254 << RC_SHIFT
        {
            h.0.store(w - RC_ONE, Ordering::Release);
            crate::membarrier::owner_barrier();
            if !t.local().rec.hash_fence && !rt.side_hashes().may_hold_any() {
                return Ok(());
            }
            w = SETTLE;
        }
        if !Self::SEED {
            // Nested (rc 2..=255) or out of line: one call site, so that the guard's drop
            // stays small enough to inline into the user's loop and the call's arguments
            // are set up on this path only (see `exit_nested`).
            return Self::exit_nested(rt, t, h, w);
        }
        Self::exit_slow(rt, t, h)
    }
}
