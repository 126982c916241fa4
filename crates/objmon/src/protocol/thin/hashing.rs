//! `thin`'s identity hash: the hasher by the word it finds (inflated, free, ours, held nested,
//! held once), the side table's parked and loose entries (`hash.rs`), and their settling by
//! the owner. The argument: `docs/soundness.md`, "`thin` and `thin-seed`", "Identity hash".

use super::*;

impl<const SEED: bool> ThinLocks<SEED> {
    /// The hash of an object whose word shows none yet.
    #[cold]
    #[inline(never)]
    pub(super) fn hash_slow(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<u32, MonitorError> {
        let me = t.core().id_shifted16();
        let fresh = || hash::fresh(t.core(), Self::HASH_BITS);
        // A hash for `w`'s object while the thread with raw id `owner` holds it.
        let held = |owner: u32, w: u32| {
            if Self::may_have_lost(rt, owner) {
                hash::pinned(w & HOST_BITS_MASK, Self::HASH_BITS)
            } else {
                fresh()
            }
        };
        let mut spin = Spin::new();
        let mut waited_since: Option<Instant> = None;
        loop {
            let w = h.0.load(Ordering::Acquire);
            if w & SHAPE != 0 {
                // Inflated (by us just now, or by an owner): the monitor's hash, or one parked
                // for it that its owner has not settled yet, or a fresh one.
                let m = monitor_of(rt, w)?;
                if let Some(v) = m.identity_hash() {
                    return Ok(v);
                }
                let choose = || match m.owner_raw() {
                    0 => fresh(),
                    owner => held(owner, w),
                };
                return Ok(Self::adopt_parked(rt, h, w, m, Some(&choose)));
            }
            if w & LOCK_MASK == 0 {
                // Free: nobody owns it, so a compare-and-swap straight to the inflated word
                // with an unowned monitor that already holds the hash breaks no discipline
                // (lockers CAS from the free word too, and fail). A full table: an error
                // (the hash has nowhere to live that moves with the object).
                if let Some(adopted) = Self::adopt_loose(rt, t, h, w) {
                    match adopted {
                        Some(v) => return Ok(v),
                        None => continue,
                    }
                }
                let idx = rt.monitors().allocate()?;
                rt.monitors().bind(idx, addr(h));
                let m = rt.monitors().get(idx);
                let v = m.install_hash(fresh());
                if h.0
                    .compare_exchange(
                        w,
                        SHAPE | (idx.get() << INDEX_SHIFT) | (w & HOST_BITS_MASK),
                        Ordering::AcqRel,
                        Ordering::Relaxed,
                    )
                    .is_ok()
                {
                    rt.stats().inflated(InflationCause::IdentityHash);
                    rt.report_inflation(t.id(), addr(h), idx.get(), InflationCause::IdentityHash);
                    return Ok(v);
                }
                // A locker got there first: look again.
                rt.monitors().free(idx);
                continue;
            }
            if w & OWNER_MASK == me {
                // Ours: inflate it as for wait; the next round reads the monitor.
                Self::inflate(rt, t, h, w, thin_locks(w), InflationCause::IdentityHash)?;
                continue;
            }
            if w & COUNT_MASK != 0 {
                // Held nested by another thread: its next unlock is a slow path, which
                // settles a parked hash. Park it.
                if let Some(v) = Self::park(rt, h, false)? {
                    return Ok(v);
                }
                continue;
            }
            let since = *waited_since.get_or_insert_with(Instant::now);
            if hash::waited_enough(since) || Self::owner_in_native(rt, h, w) {
                // Waited long enough: the owner may be waiting for us (a join, a channel).
                // Never wait for good; park a loose entry (`hash.rs`, `Parked::loose`). An
                // owner in native code will not release soon: park at once (`thin`).
                if let Some(v) = Self::park(rt, h, true)? {
                    return Ok(v);
                }
                continue;
            }
            // Held once by another thread, whose next unlock may be the plain-store fast
            // path: nothing we write reaches it reliably (it may have compared already). If it
            // is blocked in objmon or gone, inflate for it; else wait for it to let go.
            let choose = || held(owner_raw(w), w);
            if Self::inflate_for_blocked_owner(
                rt,
                t,
                h,
                w,
                Some(&choose),
                InflationCause::IdentityHash,
            )? {
                continue;
            }
            Self::blocked(t, || spin.snooze());
        }
    }

    /// Whether the thread that holds `h` once (word `w`) is in native code (`thin` only;
    /// `ThinThread::native`, a racy hint). Always `false` under loom: it only chooses the
    /// loose park early, a path the models reach through `OBJMON_LOOM_LOOSE`, and its
    /// registry look-up in every round of the hasher's loop would only grow their schedules.
    fn owner_in_native(rt: &Runtime<Self>, h: &LockWord, w: u32) -> bool {
        if cfg!(loom) {
            return false;
        }
        // Only where the release settles a loose entry (with `membarrier`): elsewhere a loose
        // entry has the documented move limit, which waiting keeps rare.
        !SEED
            && *rt.state()
            && rt
                .threads()
                .owner_context(owner_raw(w), || h.0.load(Ordering::SeqCst) == w)
                .ok()
                .flatten()
                .is_some_and(|cx| cx.local().native.load(Ordering::Relaxed) != 0)
    }

    /// Parks a hash for `h`, held nested by another thread (under the table's mutex, with a
    /// monitor that holds it). `None`: the word changed, look again.
    /// With `loose` (after [`hash::HASH_WAIT_BOUND`]), a lock held once will do, and the
    /// entry is live whatever the word says (`Parked::loose`).
    pub(super) fn park(
        rt: &Runtime<Self>,
        h: &LockWord,
        loose: bool,
    ) -> Result<Option<u32>, MonitorError> {
        let a = addr(h);
        let mut table = rt.side_hashes().lock();
        let w = h.0.load(Ordering::Acquire);
        if w & SHAPE != 0 || w & LOCK_MASK == 0 || (!loose && w & COUNT_MASK == 0) {
            return Ok(None);
        }
        let owner = owner_raw(w);
        Self::note_parked(rt, owner);
        // A loose entry is settled by its owner's release where that release looks at its
        // mark: `thin` with `membarrier` (the owner's side is then a compiler barrier).
        let release_looks = loose && !SEED && *rt.state();
        if !loose || release_looks {
            // Before the park's barrier: the owner's nested unlock (and, for a loose entry,
            // its release) looks at its own `look` (see `exit`). Under the table's mutex,
            // where the owner clears it.
            let mark = if loose { LOOK_LOOSE } else { LOOK_PARKED };
            Self::mark(rt, owner, mark);
        }
        table.park(
            rt.monitors(),
            a,
            owner,
            loose,
            |p| (p.owner == owner || p.loose) && p.hash == pin(w),
            &|| pin(w),
            *rt.state(),
            release_looks,
            || {
                let w = h.0.load(Ordering::Acquire);
                if loose {
                    held_by(w, owner)
                } else {
                    held_nested_by(w, owner)
                }
            },
        )
    }

    /// The free word `w` of `h` and a loose entry parked for `h` (`Parked::loose`: its owner
    /// released with the inline store, which never settles): one CAS to the inflated word with
    /// the entry's monitor, which holds the hash. `None`: no loose entry, go on; `Some(None)`:
    /// the word changed, look again.
    pub(super) fn adopt_loose(
        rt: &Runtime<Self>,
        by: &ThreadContext<Self>,
        h: &LockWord,
        w: u32,
    ) -> Option<Option<u32>> {
        if !rt.side_hashes().may_hold_any() {
            return None;
        }
        let mut table = rt.side_hashes().lock();
        let p = table.get(addr(h)).filter(|p| p.loose && p.hash == pin(w))?;
        let fat = SHAPE | (p.monitor.get() << INDEX_SHIFT) | (w & HOST_BITS_MASK);
        if h.0
            .compare_exchange(w, fat, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return Some(None);
        }
        table.remove(addr(h));
        rt.stats().inflated(InflationCause::IdentityHash);
        drop(table);
        rt.report_inflation(
            by.id(),
            addr(h),
            p.monitor.get(),
            InflationCause::IdentityHash,
        );
        Some(Some(p.hash))
    }

    /// `m` (named by `h`'s word) has no hash: it takes the one parked for `h` if that entry is
    /// live (its owner holds `m`: it inflated while the hash was parked), else `fresh()`
    /// (`None`: leave it without). Under the table's mutex: a monitor's hash is installed
    /// only there, so a parked hash and the monitor's never disagree.
    pub(super) fn adopt_parked(
        rt: &Runtime<Self>,
        h: &LockWord,
        w: u32,
        m: &FatMonitor,
        fresh: Option<&dyn Fn() -> u32>,
    ) -> u32 {
        rt.side_hashes().lock().adopt_into(
            rt.monitors(),
            addr(h),
            m,
            |p| (p.loose || m.owner_raw() == p.owner) && p.hash == pin(w),
            fresh,
        )
    }

    /// We hold `h` once now, after a decrement: if a hash was parked for it, inflate into the
    /// entry's monitor (it holds the hash) so that the header carries it.
    #[cold]
    #[inline(never)]
    pub(super) fn settle_parked(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &LockWord) {
        let mut table = rt.side_hashes().lock();
        let Some((p, _)) = table.take_for_owner(rt.monitors(), addr(h), t.core_arc()) else {
            return;
        };
        let w = h.0.load(Ordering::Relaxed);
        debug_assert_eq!(w & LOCK_MASK, t.core().id_shifted16());
        // We hold the thin lock: only we write the word.
        h.0.store(
            SHAPE | (p.monitor.get() << INDEX_SHIFT) | (w & HOST_BITS_MASK),
            Ordering::Release,
        );
        rt.stats().inflated(InflationCause::IdentityHash);
        drop(table);
        rt.report_inflation(
            t.id(),
            addr(h),
            p.monitor.get(),
            InflationCause::IdentityHash,
        );
    }

    /// Sets `mark` in the `look` of the thread with raw id `owner` (if it is attached); the
    /// caller holds the side table's mutex, under which owners clear their marks.
    pub(super) fn mark(rt: &Runtime<Self>, owner: u32, mark: u32) {
        if let Some(cx) = ThreadId::from_raw(owner).and_then(|id| rt.threads().get(id)) {
            cx.local().look.fetch_or(mark, Ordering::Relaxed);
        }
    }

    /// Marks the thread with raw id `owner` for good as one a hash was parked for
    /// (`ThinThread::parked_for`). Before the entry is inserted: whoever later meets a hold of
    /// that thread's, here or at the address the header moved to, pins its hash.
    pub(super) fn note_parked(rt: &Runtime<Self>, owner: u32) {
        if let Some(cx) = ThreadId::from_raw(owner).and_then(|id| rt.threads().get(id)) {
            cx.local().parked_for.store(true, Ordering::SeqCst);
        }
    }

    /// Whether a hash chosen for a word the thread with raw id `owner` holds must be
    /// `hash::pinned`: a hash may once have been parked for one of its holds and lost with
    /// a moved header, or the thread is gone (its id retired: nothing tells).
    pub(super) fn may_have_lost(rt: &Runtime<Self>, owner: u32) -> bool {
        match ThreadId::from_raw(owner).and_then(|id| rt.threads().get(id)) {
            Some(cx) => cx.local().parked_for.load(Ordering::SeqCst),
            None => true,
        }
    }

    /// We released `h`, held once, and a hash may have been parked loose for it meanwhile
    /// (`LOOK_LOOSE`). We still borrow `h`, so its header cannot move yet: put the parked hash
    /// where it moves with the header — the free word goes to the entry's monitor, which
    /// holds the hash; a word inflated since takes it into its monitor — or, if another
    /// thread holds the word by now, hand the entry to that thread as a hasher parks one
    /// (mark, barrier, re-read: its release settles it). Then forget the mark if no loose
    /// entry of ours is left. All under the side table's mutex.
    #[cold]
    #[inline(never)]
    pub(super) fn settle_loose(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &LockWord) {
        let (a, me) = (addr(h), t.core().raw_id());
        // The monitor this release inflated `h` to, reported once the mutex is released.
        let mut inflated = None;
        let mut table = rt.side_hashes().lock();
        if let Some(p) = table.get(a).filter(|p| p.loose && p.owner == me) {
            if p.hash != pin(h.0.load(Ordering::Relaxed)) {
                // Parked for another object, whose header moved away under a forgotten hold
                // of ours: not this one's.
                table.remove(a);
                rt.monitors().free(p.monitor);
            }
        }
        if let Some(mut p) = table.get(a).filter(|p| p.loose && p.owner == me) {
            loop {
                let w = h.0.load(Ordering::Acquire);
                if w & SHAPE != 0 {
                    // Inflated since our release (an inflater looks here too, under this
                    // mutex: whoever comes first gives the monitor the parked hash).
                    table.remove(a);
                    rt.monitors().free(p.monitor);
                    if let Ok(m) = monitor_of(rt, w) {
                        if m.identity_hash().is_none() {
                            m.install_hash(p.hash);
                        }
                    }
                    break;
                }
                if w & LOCK_MASK == 0 {
                    let fat = SHAPE | (p.monitor.get() << INDEX_SHIFT) | (w & HOST_BITS_MASK);
                    if h.0
                        .compare_exchange(w, fat, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok()
                    {
                        table.remove(a);
                        rt.stats().inflated(InflationCause::IdentityHash);
                        inflated = Some(p.monitor);
                        break;
                    }
                    continue;
                }
                // Locked by another thread since our release: its release settles it.
                p.owner = owner_raw(w);
                Self::note_parked(rt, p.owner);
                table.insert(a, p);
                Self::mark(rt, p.owner, LOOK_LOOSE);
                hash::SideHashes::hasher_barrier(true);
                if held_by(h.0.load(Ordering::Acquire), p.owner) {
                    break;
                }
            }
        }
        if !table.owns_loose(me) {
            t.local().look.fetch_and(!LOOK_LOOSE, Ordering::Relaxed);
        }
        drop(table);
        if let Some(m) = inflated {
            rt.report_inflation(t.id(), a, m.get(), InflationCause::IdentityHash);
        }
    }

    /// `thin`'s unlock found its `ThinThread::look` set after storing `now`: a hash may be
    /// parked for a word we hold (nested, or once and loose), or the runtime's Dekker is
    /// symmetric. A release (`now` free) settles a loose entry of `h` (`settle_loose`); a
    /// nested unlock goes on in [`nested_look`](Self::nested_look).
    #[cold]
    #[inline(never)]
    pub(super) fn unlock_looks(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
        now: u32,
    ) {
        if now & LOCK_MASK != 0 {
            Self::nested_look(rt, t, h, now);
        } else if t.local().look.load(Ordering::Relaxed) & LOOK_LOOSE != 0 {
            Self::settle_loose(rt, t, h);
        }
    }

    /// `thin`'s nested unlock found its `ThinThread::look` set: a hash may be parked for a
    /// word we hold nested, or the runtime's Dekker is symmetric. `now` is the word our
    /// unlock just stored. Down to one level (our next unlock may be a fast path, which
    /// looks at nothing but the word and this mark), settle a hash parked meanwhile (hash.rs),
    /// as `thin-seed` does in `exit_slow`; then, in an asymmetric runtime, forget the mark if
    /// no entry of ours is left — under the table's mutex, where hashers set it.
    pub(super) fn nested_look(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &LockWord, now: u32) {
        let asymmetric = *rt.state();
        if !asymmetric {
            // The owner's half of the symmetric Dekker, between our store and our look.
            crate::sync::fence(Ordering::SeqCst);
        }
        if now & COUNT_MASK == 0 && rt.side_hashes().may_hold_any() {
            Self::settle_parked(rt, t, h);
        }
        if asymmetric {
            let table = rt.side_hashes().lock();
            if !table.owns_any(t.core().raw_id()) {
                t.local().look.fetch_and(!LOOK_PARKED, Ordering::Relaxed);
            }
        }
    }
}
