//! Identity hash of the biased protocols (`biased`, `fable` and their flavors): where a hash
//! lives for each word a hasher finds, and the owner hooks that settle a parked hash.
//!
//! A biased word belongs to its bias owner's plain stores, so a hasher that finds an object
//! biased revokes first (`Biasing::revoke_now`, as enter does); after that the word is clear,
//! learn, thin or fat, and the hash lives in the fat monitor (seed 000's discipline, as `thin`).
//!
//! | word found                                    | what the hasher does                        |
//! |-----------------------------------------------|---------------------------------------------|
//! | fat                                           | the monitor's hash (one load each), else installs one |
//! | biased (to anyone, us included)               | `Biasing::revoke_now`, look again            |
//! | free (clear, learn or thin with rc 0)         | one CAS to fat with a fresh unowned monitor holding the hash |
//! | held by me (learn or thin)                    | inflate as for wait (`Biasing::inflate_own`) |
//! | held nested (rc ≥ 2) by another thread        | park the hash, with a monitor holding it, in the side table |
//! | held once (rc 1) by another thread            | wait for the release (at most `HASH_WAIT_BOUND`, 1 s), then park a loose entry |
//!
//! Departure from the word-hash layout: no hash bits in the thin, learn or fat words (every
//! word the engine builds from `w & HOST` would have to carry them); the monitor holds it.
//!
//! Invariants:
//! - fat is terminal here (no deflation), so a hashed object is never biased again
//!   (HotSpot's rule), except a `fable` object hashed while another thread held it nested in
//!   learn mode, which keeps its learn word until the owner settles the hash;
//! - a hash is parked only while the owner still has an out-of-line unlock ahead (rc ≥ 2);
//!   the owner hooks settle it: `Biasing::settle_parked_hash_after` after `exit_slow`'s learn
//!   / thin store, `Biasing::after_owner_inflation` after every `inflate_own`. So an entry found
//!   at a free or foreign word belongs to a header that moved away, and is discarded;
//! - a loose entry (`hash.rs`, `Parked::loose`) is adopted by the next hash call whatever the
//!   word says; the table is keyed by the header's address (moves: [`Runtime::relocate`]);
//! - every decision is taken under the side table's mutex, re-reading the word there;
//!   revoking and inflating happen outside it. No word the fast paths compare carries hash bits.

use super::biased::{
    addr, rc, BiasWord, Biasing, Flavor, BIASED, FAT, HOST, INDEX_SHIFT, OWNER_MASK, STATE_MASK,
};
use super::Protocol;
use crate::hash::{self, Parked};
use crate::monitor::FatMonitor;
use crate::protocol::ThreadContext;
use crate::runtime::{InflationCause, Runtime};
use crate::spin::Spin;
use crate::sync::Ordering;
use crate::MonitorError;

/// Whether the engine calls the owner hooks ([`Biasing::settle_parked_hash_after`],
/// [`Biasing::after_owner_inflation`]). Without them an owner could unlock a nested hold's
/// last levels without settling a parked hash, so an entry found at a free or foreign word
/// could still be the object's own and would be adopted (and lost if the header moves). With
/// the hooks, such an entry can only belong to a header that moved away, and is discarded.
const OWNER_SETTLES: bool = true;

/// Whether parked entry `p` still belongs to the object whose word is `w` (thin / learn).
fn live_thin(p: &Parked, w: u64) -> bool {
    p.loose || !OWNER_SETTLES || held_nested_by(w, p.owner)
}

/// Whether parked entry `p` still belongs to the object whose monitor is `m`.
fn live_fat(p: &Parked, m: &FatMonitor) -> bool {
    p.loose || !OWNER_SETTLES || m.owner_raw() == p.owner
}

/// The raw thread id in a learn or thin word's owner field.
#[inline]
fn owner_raw(w: u64) -> u32 {
    ((w & OWNER_MASK) >> OWNER_MASK.trailing_zeros()) as u32
}

/// A learn or thin word held by thread `owner` (raw id) with at least two levels: every
/// operation of that owner on it is out of line until it is down to one level again.
#[inline]
fn held_nested_by(w: u64, owner: u32) -> bool {
    let state = w & STATE_MASK;
    state != FAT && state != BIASED && owner_raw(w) == owner && rc(w) >= 2
}

impl<F: Flavor> Biasing<F> {
    /// [`Protocol::identity_hash`] of the biased protocols (module documentation).
    pub(crate) fn identity_hash_impl(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &BiasWord,
    ) -> Result<u32, MonitorError> {
        let w = h.0.load(Ordering::Acquire);
        if w & STATE_MASK == FAT {
            if let Some(v) = Self::monitor_of(rt, w)?.identity_hash() {
                return Ok(v);
            }
        }
        Self::hash_slow(rt, t, h)
    }

    #[cold]
    fn hash_slow(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &BiasWord,
    ) -> Result<u32, MonitorError> {
        let fresh = || hash::fresh(t.core(), Self::HASH_BITS);
        let mut spins = Spin::new();
        let mut waited_since: Option<std::time::Instant> = None;
        loop {
            // Anything that writes a biased header revokes first, our own bias included: in
            // the lock-records variant the bias owner's holds are counted in its records, not
            // in the word, so only a thin word states who holds it how often.
            Self::revoke_now(rt, t, h)?;
            let w = h.0.load(Ordering::Acquire);
            let state = w & STATE_MASK;
            if state == BIASED && w & OWNER_MASK != 0 {
                // Biased again meanwhile (KKO clear → biased, FABLE learn → biased).
                spins.snooze();
                continue;
            }
            if state == FAT {
                let m = Self::monitor_of(rt, w)?;
                if let Some(v) = m.identity_hash() {
                    return Ok(v);
                }
                return Ok(Self::adopt_parked(rt, h, m, Some(&fresh)));
            }
            let held = rc(w) > 0;
            if held && w & OWNER_MASK == Self::my_owner(t) {
                // Ours: inflate as for wait (a CAS, which fails against a revoker's mark);
                // the next round finds it fat. A full table: `MonitorTableFull`.
                // (`inflate_own` settles a parked hash itself.)
                Self::inflate_own(rt, t, h, w, rc(w) as u32, InflationCause::IdentityHash)?;
                continue;
            }
            if held && rc(w) >= 2 {
                // Held nested by another thread: its next unlock of it is out of line, where
                // it settles a parked hash (`settle_parked_hash`). Park it.
                if let Some(v) = Self::park(rt, h, &fresh, false)? {
                    return Ok(v);
                }
                continue;
            }
            if held {
                // Held once by another thread, whose next unlock may be the releasing-store
                // fast path, which nothing we write reaches reliably: wait for it — for a
                // while: the owner may be waiting for us (a join, a channel), so after
                // `HASH_WAIT_BOUND` park a loose entry (`hash.rs`, `Parked::loose`).
                let since = *waited_since.get_or_insert_with(std::time::Instant::now);
                if hash::waited_enough(since) {
                    if let Some(v) = Self::park(rt, h, &fresh, true)? {
                        return Ok(v);
                    }
                    continue;
                }
                spins.snooze();
                continue;
            }
            // Free: everybody else writes a free word with a compare-and-swap (lockers,
            // revokers' marks; our own bias fast path is not running — we are here), so one
            // CAS to fat with an unowned monitor that already holds the hash is safe. A full
            // table: `MonitorTableFull` (nowhere to keep it that moves with the object).
            if rt.side_hashes().may_hold_any() {
                // A loose entry (its owner released with the inline store, which does not
                // settle: `Parked::loose`), or an owner that did not settle (`OWNER_SETTLES`).
                let mut table = rt.side_hashes().lock();
                if h.0.load(Ordering::Acquire) != w {
                    continue;
                }
                if let Some(p) = table.get(addr(h)).filter(|p| p.loose || !OWNER_SETTLES) {
                    let fat = (w & HOST) | FAT | (u64::from(p.monitor.get()) << INDEX_SHIFT);
                    if h.0
                        .compare_exchange(w, fat, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok()
                    {
                        table.remove(addr(h));
                        rt.stats().inflated(InflationCause::IdentityHash);
                        drop(table);
                        rt.report_inflation(
                            t.id(),
                            addr(h),
                            p.monitor.get(),
                            InflationCause::IdentityHash,
                        );
                        return Ok(p.hash);
                    }
                    continue;
                }
            }
            let idx = rt.monitors().allocate()?;
            rt.monitors().bind(idx, addr(h));
            let m = rt.monitors().get(idx);
            let v = m.install_hash(fresh());
            let fat = (w & HOST) | FAT | (u64::from(idx.get()) << INDEX_SHIFT);
            if h.0
                .compare_exchange(w, fat, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                rt.stats().inflated(InflationCause::IdentityHash);
                rt.report_inflation(t.id(), addr(h), idx.get(), InflationCause::IdentityHash);
                return Ok(v);
            }
            rt.monitors().free(idx);
            spins.snooze();
        }
    }

    /// Parks a hash for `h`, held nested by another thread (under the table's mutex, with a
    /// monitor that holds it). `None`: the word changed, look again.
    /// With `loose` (after [`hash::HASH_WAIT_BOUND`]), a learn / thin lock held once will do,
    /// and the entry is live whatever the word says (`Parked::loose`).
    fn park(
        rt: &Runtime<Self>,
        h: &BiasWord,
        fresh: &dyn Fn() -> u32,
        loose: bool,
    ) -> Result<Option<u32>, MonitorError> {
        let a = addr(h);
        let mut table = rt.side_hashes().lock();
        let w = h.0.load(Ordering::Acquire);
        let owner = owner_raw(w);
        let held_thin = w & STATE_MASK != BIASED && w & STATE_MASK != FAT && rc(w) > 0;
        if !(held_nested_by(w, owner) || (loose && held_thin)) {
            return Ok(None);
        }
        table.park(
            rt.monitors(),
            a,
            owner,
            loose,
            |p| p.owner == owner || p.loose || !OWNER_SETTLES,
            fresh,
            crate::membarrier::init(),
            false,
            || held_nested_by(h.0.load(Ordering::Acquire), owner),
        )
    }

    /// `m` (named by `h`'s fat word) has no hash: it takes the one parked for `h` if that
    /// entry is live (its owner holds `m`), else `fresh()` (`None`: leave it without). Under
    /// the table's mutex, where every monitor hash of these protocols is installed.
    fn adopt_parked(
        rt: &Runtime<Self>,
        h: &BiasWord,
        m: &FatMonitor,
        fresh: Option<&dyn Fn() -> u32>,
    ) -> u32 {
        rt.side_hashes()
            .lock()
            .adopt_into(rt.monitors(), addr(h), m, |p| live_fat(p, m), fresh)
    }

    /// **Owner hook** (for `biased.rs`): call right after the owner published a fat word for
    /// `h` (naming `m`) that it inflated from a learn or thin lock it held — every
    /// `inflate_own` that succeeded. A hash parked while it held `h` nested goes into `m`.
    ///
    /// Also where the inflation is reported (events on): `inflate_own` has just counted it
    /// for `cause`, and `m`'s owner is the inflating thread.
    pub(crate) fn after_owner_inflation(
        rt: &Runtime<Self>,
        h: &BiasWord,
        m: &FatMonitor,
        cause: InflationCause,
    ) {
        if rt.side_hashes().owner_must_look(crate::membarrier::init()) {
            Self::adopt_parked(rt, h, m, None);
        }
        if let Some(by) = m.owner() {
            rt.report_inflation(by, addr(h), m.index, cause);
        }
    }

    /// **Owner hook** (for `biased.rs`): call in `exit_slow`'s learn / thin branch right
    /// *after* the owner's store that took `h` from two levels to one (`new`, the word it
    /// stored). If a hash was parked for `h` meanwhile, inflates `h` into the entry's monitor
    /// (it holds the hash, so this never needs a free slot), with one level.
    #[inline(always)]
    pub(crate) fn settle_parked_hash_after(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &BiasWord,
        new: u64,
    ) {
        // Inline: the owner's nested unlock pays a compare, a compiler barrier and a load.
        if rc(new) == 1 && rt.side_hashes().owner_must_look(crate::membarrier::init()) {
            Self::settle_parked_hash(rt, t, h, new);
        }
    }

    #[cold]
    fn settle_parked_hash(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &BiasWord, new: u64) {
        let mut table = rt.side_hashes().lock();
        let Some((p, m)) = table.take_for_owner(rt.monitors(), addr(h), t.core_arc()) else {
            return;
        };
        let fat = (new & HOST) | FAT | (u64::from(p.monitor.get()) << INDEX_SHIFT);
        // We hold the learn / thin lock: nobody else writes it (docs/soundness.md §9).
        if h.0
            .compare_exchange(new, fat, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            // Cannot happen while we hold it; keep the hash parked rather than lose it.
            let _ = m.exit(t.core());
            table.insert(addr(h), p);
            return;
        }
        rt.stats().inflated(InflationCause::IdentityHash);
        drop(table);
        rt.report_inflation(
            t.id(),
            addr(h),
            p.monitor.get(),
            InflationCause::IdentityHash,
        );
    }

    /// [`Protocol::peek_identity_hash`] of the biased protocols.
    pub(crate) fn peek_identity_hash_impl(rt: &Runtime<Self>, h: &BiasWord) -> Option<u32> {
        let fat_hash = |w: u64| {
            (w & STATE_MASK == FAT)
                .then(|| Self::monitor_of(rt, w).ok()?.identity_hash())
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
        let w = h.0.load(Ordering::Acquire);
        let p = table.get(addr(h));
        if w & STATE_MASK == FAT {
            let m = Self::monitor_of(rt, w).ok()?;
            return m
                .identity_hash()
                .or(p.filter(|p| live_fat(p, m)).map(|p| p.hash));
        }
        p.filter(|p| live_thin(p, w)).map(|p| p.hash)
    }

    /// `reclaim`: the object is dead, so is a hash parked for it.
    pub(crate) fn forget_identity_hash(rt: &Runtime<Self>, h: &BiasWord) {
        if let Some(p) = rt.side_hashes().forget(addr(h)) {
            rt.monitors().free(p.monitor);
        }
    }
}
