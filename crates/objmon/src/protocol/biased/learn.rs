//! FABLE's learn mode (§3.1) and the inline acquisitions of a fresh object: a learn word's
//! own count (bits 41..34) and learn tag (bits 62..42), the guess a newly attached thread
//! starts with, and `fresh_enter` with its steps: the counted re-acquisition by the guess,
//! clear → learn, a second thread's learn → thin (Figure 5), and biasing at the learn limit
//! (KKO's clear → biased, FABLE's learn → biased). One CAS each; everything else is
//! `enter_slow`'s (`slow.rs`).

use super::*;

/// A learn word's own count of its guess's non-recursive re-acquisitions
/// ([`LearnRule::PerObject`]): bits 41..34, free in a learn word (a bias generation lives
/// there only in state 00). Every other state's word is built afresh, without it.
pub(super) const LEARN_COUNT_SHIFT: u32 = 34;
pub(super) const LEARN_COUNT_ONE: u64 = 1 << LEARN_COUNT_SHIFT;
/// The largest count: a learn limit above it acts as it.
pub(super) const LEARN_COUNT_MAX: u64 = (1 << 8) - 1;
pub(super) const LEARN_COUNT_MASK: u64 = LEARN_COUNT_MAX << LEARN_COUNT_SHIFT;
/// A learn word's *learn tag*, bits 62..42: the guess's, drawn when it attached, so that a
/// later thread given the same id (ids are reused after a detach) is not taken for the
/// guess — it neither continues the dead guess's count nor counts as it under §3.1's
/// per-thread rule; to it the word is another thread's, and its acquisition makes the object
/// thin (Figure 5), as if ids were never reused. Bit 63 stays clear, which the poisoned
/// `NO_BIAS` / `NO_NEST` tests rely on. Tags are drawn from one process-wide counter, 2^21
/// apart before they repeat: two holders of one id share a tag only if a multiple of 2^21
/// attaches came between them, and then the later one continues the earlier one's count (a
/// heuristic's slip — an early bias, revoked like any other — never a second owner: a learn
/// word that is held names a live holder by its id, which is never reused while it lives).
pub(super) const LEARN_TAG_SHIFT: u32 = 42;
pub(super) const LEARN_TAG_BITS: u64 = (1 << 21) - 1;
pub(super) const LEARN_TAG_MASK: u64 = LEARN_TAG_BITS << LEARN_TAG_SHIFT;
/// The bits of a learn word that name its guess: the owner id and the learn tag.
const LEARN_GUESS_MASK: u64 = LEARN_TAG_MASK | OWNER_MASK;

/// The next learn tag (see [`LEARN_TAG_SHIFT`]). Process-wide and not modelled by loom: a
/// name, ordering nothing.
static LEARN_TAGS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A newly attached thread's `learn_guess` (`BiasThread`): a fresh learn tag, state learn,
/// `owner` (its id in the owner field), rc 1 — a learn word it holds once, count and host
/// bits aside.
pub(super) fn learn_guess_for(owner: u64) -> u64 {
    let tag = LEARN_TAGS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) & LEARN_TAG_BITS;
    (tag << LEARN_TAG_SHIFT) | LEARN | owner | RC_ONE
}

/// `BiasState::learn_inline` for `rule` and learn limit `limit` (≥ 1): a free learn word of
/// its guess whose count is below it takes its next acquisition inline, counted (the count
/// then stays below the limit: no bias yet); 0 under `PerThread`, whose count is the
/// thread's (`learn_again`). At most `LEARN_COUNT_MAX` − 1, below the learn tag's lowest bit
/// after `fresh_enter`'s rotation.
pub(super) fn learn_inline_below(rule: LearnRule, limit: u32) -> u64 {
    match rule {
        LearnRule::PerObject => u64::from(limit.max(1)).min(LEARN_COUNT_MAX) - 1,
        LearnRule::PerThread => 0,
    }
}

/// The learn word `w`'s own count (0 under [`LearnRule::PerThread`], which never sets it).
#[inline(always)]
pub(super) fn learn_count_of(w: u64) -> u64 {
    (w & LEARN_COUNT_MASK) >> LEARN_COUNT_SHIFT
}

/// Whether learn word `w` names thread `t` as its guess (id and learn tag).
#[inline(always)]
pub(super) fn guess_is(t: &BiasThread, w: u64) -> bool {
    (w ^ t.learn_guess) & LEARN_GUESS_MASK == 0
}

impl<F: Flavor> Biasing<F> {
    /// The acquisitions of a fresh object, inline (rseq and records variants; the seed variants keep
    /// Figures 4 and 7's fast paths exactly): FABLE's counted re-acquisition by the bias
    /// guess below the learn limit (§3.1, [`LearnRule::PerObject`]), clear → learn, and a
    /// second thread turning a free learn lock thin (Figure 5), one CAS each, as a thin
    /// acquisition (a nested acquisition of a learn word the caller holds is `enter`'s
    /// nested step, run before this);
    /// biasing (KKO's clear → biased, FABLE's learn → biased at the limit) and §3.1's
    /// per-thread count are one call away. Figure 7 leaves learn mode to the slow path, and
    /// its thin fast path takes only a lock whose sticky last owner is the caller (§3.2 found
    /// that free). Measured here, both cost: AllocLock (§5.3) runs almost nothing but learn
    /// acquisitions, and the slow path's call, loop, poll and dispatch made FABLE up to 1.5×
    /// thin locks; Cloud (§5.1) runs almost nothing but thin acquisitions of a lock another
    /// thread held last, and there the cold slow path — its code evicted by the
    /// million-object working set — made FABLE 2–3× thin locks in CPU time. Everything else
    /// (contention, a full record stack, native) is `enter_slow`'s: `false`.
    ///
    /// The counted step is the first test, one compare after an xor and a rotate (callgrind,
    /// `examples/cloud_probe.rs alloc fable:K`, the difference over K: a learn-mode lock +
    /// unlock 49 instructions, 78 when it was one call away, in `learn_again`, behind the
    /// tests below; thin's lock + unlock 25). What is left above thin's: `enter`'s thin and
    /// nested tests, which a learn word fails first (11), and the test itself (~10).
    #[inline(always)]
    pub(super) fn fresh_enter(rt: &Rt<F>, t: &Cx<F>, h: &BiasWord, w: u64) -> bool {
        if !F::LEARN {
            // `bias_fresh` refuses in native (the cached bias bits are poisoned there).
            return w & !HOST == 0 && Self::bias_fresh(t.local(), h, w);
        }
        let local = t.local();
        if let Some(taken) = Self::learn_counted(rt, local, h, w) {
            return taken;
        }
        // This thread's learn word held once, count 0 (`NO_BIAS` in native).
        let key = local.learn_key.load(Ordering::Relaxed);
        if w & !HOST == 0 {
            // Clear → learn, guess = this thread (id and learn tag), held once. In native
            // `key` is poisoned (bit 63): `enter_slow` refuses.
            if (key as i64) < 0 || !Self::recorded_cas(local, h, w, w | key) {
                return false;
            }
            local.count(Transition::ClearToLearn);
            return true;
        }
        // A learn word this thread holds is not nested here: `enter`'s nested step, which
        // every caller ran first, takes it (its test reads bits 33..8 only; `nested_step`).
        if w & STATE_MASK != LEARN {
            return false; // thin (held by another thread) or fat
        }
        Self::learn_free(rt, t, h, w)
    }

    /// [`fresh_enter`](Self::fresh_enter)'s first step, FABLE's counted re-acquisition of a
    /// free learn word by its guess below the learn limit: `None` when `w` is not such a
    /// word (or the rule is `PerThread`, or in native); else the CAS's outcome. Also the
    /// signal flavors' `enter` inline (`enter_signal_rest`).
    #[inline(always)]
    pub(super) fn learn_counted(
        rt: &Rt<F>,
        local: &BiasThread,
        h: &BiasWord,
        w: u64,
    ) -> Option<bool> {
        // This thread's learn word held once, count 0 (`NO_BIAS` in native).
        let key = local.learn_key.load(Ordering::Relaxed);
        // The guess re-acquires a free learn word, counted below the limit (`PerObject`):
        // `w` + rc 1 is `key` but for its count (bits 41..34) and host bits. Rotated so that
        // the count is the low byte and every other bit lies above it — the learn tag right
        // above (a recycled id's word fails here), bit 63 at 29 (`NO_BIAS`: in native every
        // word fails), the state, owner and rc at 30 and up — `y` is the count exactly when
        // all else matches, and one compare with the runtime's bound (below `LEARN_COUNT_MAX`,
        // 0 under `PerThread`) tests it all. Not for rc 255: its + 1 carries into the state.
        let held = w.wrapping_add(RC_ONE);
        let y = ((held ^ key) & !HOST).rotate_left(64 - LEARN_COUNT_SHIFT);
        if y < rt.state().learn_inline.load(Ordering::Relaxed) {
            // Count and hold at once; the count stays below the limit (no bias yet) and
            // below `LEARN_COUNT_MAX`, so it never reaches the tag.
            return Some(Self::recorded_cas(local, h, w, held + LEARN_COUNT_ONE));
        }
        None
    }

    /// `fresh_enter`'s learn CAS from `w` to `new` (this thread's learn word held once), the
    /// word recorded just before it as `enter`'s thin CAS records its own
    /// (`LockRecords::last`): a learn word is a held thin word's twin — only its holder writes
    /// it (a second thread turns it thin only once it is free, a hasher waits for a single
    /// hold) — and its unlock stores `new − RC_ONE` (sticky, §3.2). Forgotten if the CAS
    /// fails. `fable`'s flavors are all sticky; a non-sticky one would not record.
    #[inline(always)]
    fn recorded_cas(local: &BiasThread, h: &BiasWord, w: u64, new: u64) -> bool {
        let rec = &local.rec;
        if F::STICKY {
            rec.last.store(addr(h), Ordering::Relaxed);
            rec.last_word.store(new - RC_ONE, Ordering::Relaxed);
        }
        if Self::cas(h, w, new) {
            return true;
        }
        if F::STICKY {
            rec.forget_last();
        }
        false
    }

    /// [`fresh_enter`](Self::fresh_enter)'s learn words that its inline steps did not take:
    /// free (rc 0), and either another thread's guess — Figure 5's learn → thin, one CAS —
    /// or ours at the learn limit or under `PerThread` (`learn_again`). Out of line: inline,
    /// its calls' set-up cost the bias owner's loop an instruction (register allocation;
    /// `biased_fastpath fable plain` 52 → 53).
    #[cold]
    #[inline(never)]
    fn learn_free(rt: &Rt<F>, t: &Cx<F>, h: &BiasWord, w: u64) -> bool {
        let local = t.local();
        // Free (rc 0), not in native (the thread-free bits are poisoned there).
        if w & (REVOKING | RC_MASK) != 0 || local.rec.thin_free.load(Ordering::Relaxed) != THIN {
            return false; // held by another thread, or in native
        }
        if !guess_is(local, w) {
            // Figure 5: a second thread acquires in learn mode; the lock is free (rc 0). Also
            // a later holder of the guess's id (its learn tag differs): another thread too.
            if !Self::cas(h, w, (w & HOST) | THIN | Self::my_owner(t) | RC_ONE) {
                return false;
            }
            local.count(Transition::LearnToThin);
            return true;
        }
        Self::learn_again(rt.state(), local, h, w)
    }

    /// [`fresh_enter`](Self::fresh_enter)'s re-acquisition of a free learn lock by its
    /// guess (§3.1) when the inline counted step does not apply: at the learn limit N (bias),
    /// or under `PerThread` (the thread's learnCount: random counting), or with a bound read
    /// before a change of the limit. Bias at N, else count and hold (one CAS).
    #[inline(always)]
    fn learn_again(st: &BiasState, local: &BiasThread, h: &BiasWord, w: u64) -> bool {
        if st.learn_rule() == LearnRule::PerObject {
            let n = learn_count_of(w) + 1;
            if n >= u64::from(st.learn_limit()).min(LEARN_COUNT_MAX) {
                return Self::bias_fresh(local, h, w);
            }
            // n < the limit ≤ `LEARN_COUNT_MAX`: the count does not reach the tag.
            return Self::cas(h, w, w + LEARN_COUNT_ONE + RC_ONE);
        }
        let lc = &local.learn_count;
        let n = lc.load(Ordering::Relaxed) + 1;
        if n >= st.learn_limit() {
            return Self::bias_fresh(local, h, w);
        }
        if !Self::cas(h, w, w + RC_ONE) {
            return false;
        }
        lc.store(n, Ordering::Relaxed);
        true
    }

    /// [`fresh_enter`](Self::fresh_enter)'s biasing: `h` (clear, or learn with `t` its guess
    /// at the learn limit) becomes biased to `t`, held once in a record. `false` if `t` has
    /// not cached its bias bits yet, its records are full, or the CAS failed.
    #[inline(never)]
    pub(super) fn bias_fresh(local: &BiasThread, h: &BiasWord, w: u64) -> bool {
        if local.rec.bias.load(Ordering::Relaxed) == NO_BIAS
            || Self::bias_to_me(local, h, w) != Some(true)
        {
            return false;
        }
        if F::LEARN {
            local.learn_count.store(0, Ordering::Relaxed);
            local.count(Transition::LearnToBiased);
        } else {
            local.count(Transition::ClearToBiased);
        }
        true
    }
}
