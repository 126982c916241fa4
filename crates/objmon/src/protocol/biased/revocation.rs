//! Bias revocation, the revoker's side and the owner's poll (docs/soundness.md §9,
//! "Revocation"): finding the bias owner, rewriting a bias in place at a safepoint, the
//! handshakes and the barrier (records / `in_op` / rseq Dekker), and the helpers they share
//! (biased → thin, the fat monitor of a word). The safepoint and barrier machinery itself is
//! `crate::revoke`.

use super::*;
use crate::revoke::revoked;
use crate::thread::ThreadId;

impl<F: Flavor> Biasing<F> {
    #[inline]
    pub(crate) fn poll_self(rt: &Rt<F>, t: &Cx<F>) {
        let rec = &t.local().rec;
        t.local().sp.poll(&|a, w| Self::exec_async(rt, rec, a, w));
    }

    /// The asynchronous handshake's callback, run by the bias owner (whose records are
    /// `rec`) at a safepoint.
    pub(super) fn exec_async(rt: &Rt<F>, rec: &LockRecords, header: usize, w: u64) {
        // SAFETY: `header` is the address of a `BiasWord` borrowed by the revoker that posted
        // the request; the revoker waits (holding the borrow) until this callback has
        // returned and the request is cleared (or runs it itself and clears it), so the
        // header is alive and not moved for the whole call.
        let h = unsafe { &*(header as *const BiasWord) };
        // Counted by the revoker, which learns the outcome from the request it withdrew.
        Self::thin_from_bias(rt, h, w, rec);
    }

    /// Revocation proper, at a moment the bias owner (whose records are `rec`) cannot be in a
    /// fast path on `h`: biased(T, n) → thin(T, n) if `h` is still biased to the owner named
    /// in `w`, n its holds.
    ///
    /// `true` if this call revoked it; `false` if it was no longer biased to that owner (a
    /// revoker that found the owner detached rewrites it without the owner's mutex).
    pub(super) fn thin_from_bias(rt: &Rt<F>, h: &BiasWord, w: u64, rec: &LockRecords) -> bool {
        let who = w & (OWNER_MASK | GEN_MASK);
        // Before the rewrite: the owner's thin record may name `h` (a stale one: the word is
        // biased), and after the rewrite its unlock would trust it (`LockRecords::clear_last`).
        rec.clear_last(addr(h));
        let mut cur = h.0.load(Ordering::Acquire);
        while cur & (STATE_MASK | REVOKING) == BIASED && cur & (OWNER_MASK | GEN_MASK) == who {
            let n = if F::RECORDS {
                u64::from(rec.settled_count(addr(h)))
            } else {
                rc(cur)
            };
            match h.0.compare_exchange(
                cur,
                Self::to_thin(cur, n),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    rt.state().count(Transition::BiasedToThin);
                    return true;
                }
                Err(c) => cur = c,
            }
        }
        false
    }

    /// The thin word for biased word `w` held `n` times: same owner, count `n` (KKO clears a
    /// free owner); records variant: marked [`STALE`] if held, so that the owner's next
    /// unlock buries its records of it.
    #[inline]
    pub(super) fn to_thin(w: u64, n: u64) -> u64 {
        if n == 0 && !F::STICKY {
            (w & HOST) | THIN
        } else {
            let stale = if F::RECORDS && n > 0 { STALE } else { 0 };
            (w & (HOST | OWNER_MASK)) | THIN | (n << RC_SHIFT) | stale
        }
    }

    /// The monitor a fat word names; `ForeignHeader` for an index of another runtime's
    /// table (one process-wide index space, `table.rs`; docs/soundness.md §7).
    #[inline]
    pub(crate) fn monitor_of(rt: &Rt<F>, w: u64) -> Result<&FatMonitor, MonitorError> {
        let idx = MonitorIndex::new(((w & INDEX_MASK) >> INDEX_SHIFT) as u32);
        rt.monitors()
            .checked(idx.expect("fat word holds a monitor index"))
    }

    /// Blocks in `f` at a safepoint (revokers do not wait for us meanwhile); back to running
    /// when `f` returns or unwinds.
    pub(super) fn safe<R>(t: &Cx<F>, f: impl FnOnce() -> R) -> R {
        let _safe = t.local().sp.safe_scope();
        f()
    }

    /// The thread of this runtime that biased word `w` names (id and generation): `Ok(None)`
    /// if that owner is gone (detached, or its id now names a later thread), and
    /// `ForeignHeader` if a live thread of *another* runtime holds that (id, generation):
    /// thread ids are process-wide (docs/soundness.md §7), and we never wait for, nor revoke
    /// in place, a bias that a stranger may be using.
    pub(super) fn bias_owner(
        rt: &Rt<F>,
        w: u64,
    ) -> Result<Option<crate::sync::Arc<Cx<F>>>, MonitorError> {
        let gen = (w & GEN_MASK) >> GEN_SHIFT;
        let raw = ((w & OWNER_MASK) >> OWNER_SHIFT) as u32;
        Ok(rt
            .threads()
            .bias_owner(raw, gen as u32, GEN_BITS as u32)?
            .filter(|c| u64::from(c.core().generation()) & GEN_BITS == gen))
    }

    /// Whether the owner named by biased word `w` holds `h` (a racy snapshot).
    pub(super) fn bias_held(rt: &Rt<F>, h: &BiasWord, w: u64) -> bool {
        if F::RECORDS {
            // Another runtime's owner: held, as far as we can tell (we never look inside it).
            Self::bias_owner(rt, w).map_or(true, |o| {
                o.is_some_and(|c| c.local().rec.peek_count(addr(h)) > 0)
            })
        } else {
            rc(w) > 0
        }
    }

    /// Revokes the bias of `w` (biased to another thread, not revoking) on `h`;
    /// `ForeignHeader` if that thread is another runtime's (nothing changed).
    #[cold]
    pub(crate) fn revoke(rt: &Rt<F>, t: &Cx<F>, h: &BiasWord, w: u64) -> Result<(), MonitorError> {
        let start = Instant::now();
        let st = rt.state();
        let Some(target) = Self::bias_owner(rt, w)? else {
            // The owner detached (its last store happened before the registry's mutex
            // released its id, which we took to look it up): nobody can store to `h` as it.
            // Its holds were released before it detached (records variant: its records went
            // with it).
            let n = if F::RECORDS { 0 } else { rc(w) };
            if h.0
                .compare_exchange(w, Self::to_thin(w, n), Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                st.count(Transition::BiasedToThin);
                revoked(
                    rt,
                    &st.revocations,
                    RevocationKind::OwnerExited,
                    start,
                    t.id(),
                    addr(h),
                );
            }
            return Ok(());
        };
        // Safe while we revoke: whoever revokes *our* biases meanwhile does it in place.
        // Back to running on every way out, unwinding included; unchanged if we are in native
        // (an identity hash made there revokes).
        let _safe = t.local().sp.safe_scope();
        Self::revoke_live(rt, t.id(), h, w, target.local(), start);
        Ok(())
    }

    pub(super) fn revoke_live(
        rt: &Rt<F>,
        revoker: ThreadId,
        h: &BiasWord,
        w: u64,
        target: &BiasThread,
        start: Instant,
    ) {
        let st = rt.state();
        let tsp = &target.sp;
        let held = tsp.lock_for_revoke();
        // Re-read under the mutex: an earlier revoker may have done it already.
        let who = w & (OWNER_MASK | GEN_MASK);
        let w = h.0.load(Ordering::Acquire);
        if w & (STATE_MASK | REVOKING) != BIASED || w & (OWNER_MASK | GEN_MASK) != who {
            return;
        }
        // Whether the rewrite was ours: a revoker that found the owner detached (`revoke`,
        // no mutex) may have done it first; then nothing is counted, so that one revocation
        // is counted once.
        let ours = crate::sync::AtomicBool::new(false);
        if let Some(kind) = tsp.quiescent() {
            // Parked, waiting or in native (it cannot leave while we hold its mutex), or
            // detached: rewrite in place.
            let ours = Self::thin_from_bias(rt, h, w, &target.rec);
            // Counted and reported after the target's mutex (the sink may lock monitors).
            drop(held);
            if ours {
                revoked(rt, &st.revocations, kind, start, revoker, addr(h));
            }
            return;
        }
        let exec = |_, x| {
            if Self::thin_from_bias(rt, h, x, &target.rec) {
                ours.store(true, Ordering::Relaxed);
            }
        };
        // `None`: a hybrid request withdrawn unrun. `Async`: the owner ran the callback
        // itself (it was alive, so no detached-owner revoker raced it); any other kind: our
        // `exec` ran, and `ours` says whether it rewrote the header.
        let by = |r| tsp.handshake(&held, r, addr(h), w, &exec);
        // `None`: the barrier failed; `Some(revoked by us)` otherwise.
        let barrier = || Self::revoke_by_barrier(rt, h, w, target);
        let kind = match st.revocation() {
            Revocation::Membarrier => {
                barrier().map(|ours| ours.then_some(RevocationKind::Membarrier))
            }
            // Biases left from a handshake mode the host chose before (`BiasState::set`):
            // only a handshake can revoke them.
            Revocation::NoBias => by(Revocation::SyncHandshake).map(Some),
            // Hybrid, and the owner did not poll in time: the barrier needs nothing from it.
            r => by(r)
                .map(Some)
                .or_else(|| barrier().map(|ours| ours.then_some(RevocationKind::Membarrier))),
        };
        // `None`: the barrier failed (and the runtime now revokes by handshake): the header
        // is as it was, unmarked; revoke it by the synchronous handshake (which waits for the
        // owner's poll, or revokes in place once it is at a safepoint).
        let kind = kind.unwrap_or_else(|| by(Revocation::SyncHandshake));
        drop(held);
        match kind {
            Some(RevocationKind::Async) => revoked(
                rt,
                &st.revocations,
                RevocationKind::Async,
                start,
                revoker,
                addr(h),
            ),
            Some(k) if ours.load(Ordering::Relaxed) || k == RevocationKind::Membarrier => {
                revoked(rt, &st.revocations, k, start, revoker, addr(h))
            }
            _ => {}
        }
    }

    /// Revocation (c): the asymmetric Dekker against the owner's lock records (records
    /// variant) or its `in_op` (header variant); see the module docs.
    ///
    /// `Some(true)` if this call revoked it, `Some(false)` if the header stopped being biased
    /// to that owner first (a revoker that found it detached), `None` if the kernel refused
    /// the barrier (a seccomp filter installed after the
    /// registration): the mark is withdrawn, the runtime switches to the handshake
    /// ([`BiasState::barrier_failed`]) and the caller revokes by it. The mark is ours to
    /// withdraw with a CAS; if it fails, the owner's in-flight plain store (header variant)
    /// replaced the mark with a biased word of its own, which is as good as unmarked.
    pub(super) fn revoke_by_barrier(
        rt: &Rt<F>,
        h: &BiasWord,
        mut w: u64,
        owner: &BiasThread,
    ) -> Option<bool> {
        let who = w & (OWNER_MASK | GEN_MASK);
        // Before the mark (its CAS releases this): an owner whose step then fails on the mark
        // or on the thin word finds no thin record naming `h` (`LockRecords::clear_last`).
        owner.rec.clear_last(addr(h));
        loop {
            if h.0
                .compare_exchange(w, w | REVOKING, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                // Only the owner can change a biased word under us (header variant: its plain
                // store; both: its slow-path CAS; other revokers wait for the mutex we hold):
                // re-read and mark again.
                w = h.0.load(Ordering::Acquire);
                if w & (STATE_MASK | REVOKING) != BIASED || w & (OWNER_MASK | GEN_MASK) != who {
                    return Some(false);
                }
                continue;
            }
            // Every running thread fences now: after this, each fast path of the owner either
            // had published its record / `in_op` (we see it below) or will read our mark.
            let fenced = if F::SIGNAL {
                // One thread's barrier: the owner's handler restarts its section in flight
                // (or the owner is at a safepoint we hold it at, or gone).
                crate::sigbarrier::interrupt(&owner.sig, || owner.sp.quiescent().is_some())
                    != crate::sigbarrier::Delivery::Refused
            } else if F::RSEQ {
                process_barrier_rseq()
            } else {
                process_barrier()
            };
            if rt.state().barrier_fails.load(Ordering::Relaxed) || !fenced {
                let _ =
                    h.0.compare_exchange(w | REVOKING, w, Ordering::AcqRel, Ordering::Relaxed);
                rt.state().barrier_failed();
                return None;
            }
            if F::RECORDS {
                // The owner never writes a biased header in a fast path, and its slow paths
                // CAS, which fails against the mark: the word is still `w | REVOKING`.
                let n = owner.rec.settled_count(addr(h));
                h.0.store(Self::to_thin(w, u64::from(n)), Ordering::Release);
                rt.state().count(Transition::BiasedToThin);
                return Some(true);
            }
            #[cfg(loom)]
            if F::RSEQ {
                // The model of the rseq barrier's restart: the owner's section runs under
                // its `cpu` mutex, so the barrier falls before or after it, never inside.
                drop(crate::sync::lock(&owner.rec.cpu));
            }
            // rseq variant: the barrier restarted every section in flight, so none that
            // read the unmarked word commits after it (`in_op` stays 0 there).
            let mut spins = Spin::new();
            while owner.sp.in_op.load(Ordering::Acquire) == addr(h) {
                spins.snooze();
            }
            let cur = h.0.load(Ordering::Acquire);
            if cur & !RC_MASK == (w | REVOKING) & !RC_MASK {
                // Nobody else writes a marked word: the owner's fast paths fail on it and
                // other revokers are behind the mutex. rseq variant: the owner's committing
                // `add` (a non-atomic read-modify-write of the word) may have landed on the
                // mark, ±1 to the count and the mark kept — a step that had passed its test
                // before the mark and is done now (the barrier restarts any section still
                // in flight): the count is `cur`'s.
                h.0.store(Self::to_thin(w, rc(cur)), Ordering::Release);
                rt.state().count(Transition::BiasedToThin);
                return Some(true);
            }
            // An in-flight fast path stored over the mark; it has finished. Again.
            rt.state().revocations.retried();
            w = cur;
            if w & (STATE_MASK | REVOKING) != BIASED || w & (OWNER_MASK | GEN_MASK) != who {
                return Some(false);
            }
        }
    }
}
