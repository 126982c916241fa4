//! Identity hash of the biased protocols (`biased`, `fable`), kept apart from `biased.rs`.
//!
//! "Biased locks must revoke first" (issue 7): a biased word belongs to its bias owner's plain
//! stores, so a hasher that finds an object biased to another thread revokes the bias with the
//! protocols' own revocation (`Biasing::revoke_now`) before anything else, exactly as enter does.
//! After that the word is clear, learn, thin or fat, and the hash goes where `thin` keeps it
//! (seed 000's discipline holds here too, see `biased.rs`): in the fat monitor.
//!
//! | word found                                    | what the hasher does                        |
//! |-----------------------------------------------|---------------------------------------------|
//! | fat                                           | the monitor's hash (one load each)          |
//! | biased (to anyone, us included)               | `Biasing::revoke_now`, look again            |
//! | free (clear, learn or thin with rc 0)         | one CAS to fat with a fresh unowned monitor holding the hash |
//! | held by me (learn or thin)                    | inflate as for wait (`Biasing::inflate_own`) |
//! | held by another thread (learn or thin)        | park the hash in the runtime's side table    |
//!
//! Fat is terminal in these protocols (no deflation), so **a hashed object is never biased
//! again** — HotSpot's rule that a hashed object is not biasable — and costs a monitor. The
//! side table (see `hash.rs`) is what keeps a hash from waiting for another thread's unlock;
//! the next hasher that finds the word free or fat moves the parked hash into the monitor.
//! One exception to "never biased again": a `fable` object hashed while another thread held
//! it in learn mode keeps its learn word, and its guess may still bias it before the next
//! hash call moves the parked hash into a monitor (after a revocation). The hash itself is
//! safe in the table throughout; only the bias comes one revocation later than HotSpot's.
//! The table is keyed by the header's address: a moving GC reports moves with
//! [`Runtime::relocate`].
//! Every decision is taken under the side table's mutex, re-reading the word there; revoking
//! and inflating happen outside it. The fast paths of `biased.rs` are untouched: no word they
//! compare ever carries hash bits.
//!
//! Deviation from the brief (hash in bits 63..34 of the thin, learn and fat words): a hash in
//! the word needs every word `biased.rs` builds from `w & HOST` (enter's thin CAS, the thin and
//! learn unlocks, `to_thin`, `inflate_own`, the clear → learn / biased CASes) and every
//! compare against `w & !HOST` (the thin-free fast path) to carry the hash bits along, i.e.
//! edits all over the file another helper is rewriting. In the monitor it needs none.

use super::biased::{
    addr, rc, Biasing, Flavor, BIASED, FAT, HOST, INDEX_SHIFT, OWNER_MASK, STATE_MASK,
};
use super::Protocol;
use crate::hash;
use crate::revoke::backoff;
use crate::runtime::{InflationCause, Runtime};
use crate::sync::Ordering;
use crate::thread::ThreadContext;
use crate::MonitorError;

impl<F: Flavor> Biasing<F> {
    /// [`Protocol::identity_hash`] of the biased protocols (module documentation).
    pub(crate) fn identity_hash_impl(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &super::biased::BiasWord,
    ) -> Result<u32, MonitorError> {
        let w = h.0.load(Ordering::Acquire);
        if w & STATE_MASK == FAT {
            if let Some(v) = Self::monitor_of(rt, w).identity_hash() {
                return Ok(v);
            }
        }
        Self::hash_slow(rt, t, h)
    }

    #[cold]
    fn hash_slow(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &super::biased::BiasWord,
    ) -> Result<u32, MonitorError> {
        let a = addr(h);
        let mut spins = 0u32;
        loop {
            // Anything that writes a biased header revokes first, our own bias included: in
            // the lock-records variant the bias owner's holds are counted in its records, not
            // in the word, so only a thin word states who holds it how often.
            Self::revoke_now(rt, t, h);
            let w = h.0.load(Ordering::Acquire);
            let state = w & STATE_MASK;
            if state == BIASED && w & OWNER_MASK != 0 {
                // Biased again meanwhile (KKO clear → biased, FABLE learn → biased).
                backoff(&mut spins);
                continue;
            }
            let held = state != FAT && rc(w) > 0;
            let held_by_me = held && w & OWNER_MASK == Self::my_owner(t);
            if held_by_me {
                // Ours: inflate as for wait (a CAS, which fails against a revoker's mark);
                // the next round finds it fat. A full table parks the hash instead.
                match Self::inflate_own(rt, t, h, w, rc(w) as u32, InflationCause::IdentityHash) {
                    Ok(_) => continue,
                    Err(_) => return Ok(Self::park_hash(rt, t, h)),
                }
            }
            let mut table = rt.side_hashes().lock();
            if h.0.load(Ordering::Acquire) != w {
                continue;
            }
            if state == FAT {
                let fresh = || hash::fresh(t.core(), Self::HASH_BITS);
                return Ok(table.adopt(Self::monitor_of(rt, w), a, fresh));
            }
            let v = match table.get(a) {
                Some(v) => v,
                None => hash::fresh(t.core(), Self::HASH_BITS),
            };
            if held {
                // Another thread holds it and only it writes the word: park the hash.
                table.insert(a, v);
                return Ok(v);
            }
            // Free: everybody else writes a free word with a compare-and-swap (lockers,
            // revokers' marks; our own bias fast path is not running — we are here), so one
            // CAS to fat with an unowned monitor that already holds the hash is safe.
            let Ok(idx) = rt.monitors().allocate() else {
                table.insert(a, v);
                return Ok(v);
            };
            rt.monitors().bind(idx, a);
            let m = rt.monitors().get(idx);
            m.install_hash(v);
            let fat = (w & HOST) | FAT | (u64::from(idx.get()) << INDEX_SHIFT);
            if h.0
                .compare_exchange(w, fat, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                table.remove(a);
                rt.stats().inflated(InflationCause::IdentityHash);
                return Ok(v);
            }
            rt.monitors().free(idx);
            drop(table);
            backoff(&mut spins);
        }
    }

    /// A full monitor table while we hold `h`: park the hash in the side table (unless the
    /// monitor of a fat word already has one).
    fn park_hash(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &super::biased::BiasWord) -> u32 {
        let mut table = rt.side_hashes().lock();
        let now = h.0.load(Ordering::Acquire);
        let fresh = || hash::fresh(t.core(), Self::HASH_BITS);
        if now & STATE_MASK == FAT {
            return table.adopt(Self::monitor_of(rt, now), addr(h), fresh);
        }
        table.get_or_insert(addr(h), fresh)
    }

    /// [`Protocol::peek_identity_hash`] of the biased protocols.
    pub(crate) fn peek_identity_hash_impl(
        rt: &Runtime<Self>,
        h: &super::biased::BiasWord,
    ) -> Option<u32> {
        let fat_hash = |w: u64| {
            (w & STATE_MASK == FAT)
                .then(|| Self::monitor_of(rt, w).identity_hash())
                .flatten()
        };
        // The table first, the word second (see `SideHashes::may_hold_any`).
        let parked = rt.side_hashes().may_hold_any();
        if let Some(v) = fat_hash(h.0.load(Ordering::Acquire)) {
            return Some(v);
        }
        if !parked {
            return None;
        }
        let table = rt.side_hashes().lock();
        fat_hash(h.0.load(Ordering::Acquire)).or_else(|| table.get(addr(h)))
    }

    /// `reclaim`: the object is dead, so is a hash parked for it.
    pub(crate) fn forget_identity_hash(rt: &Runtime<Self>, h: &super::biased::BiasWord) {
        rt.side_hashes().forget(addr(h));
    }
}
