//! `thin`'s [`Protocol`] implementation: the fast paths (lock, nested lock, unlock, the
//! guard's hinted unlock), `try_enter`, wait / notify, the owner queries, `reclaim` and
//! `relocate`, and the identity hash's fast read. Slow paths are in `slow.rs` and `hashing.rs`.

use super::*;

impl<const SEED: bool> Protocol for ThinLocks<SEED> {
    const NAME: &'static str = if SEED { "thin-seed" } else { "thin" };
    const SUMMARY: &'static str = if SEED {
        "24-bit thin lock as in seed 000 §2.3: CAS lock, load/compare/store unlock, inflate forever"
    } else {
        "24-bit thin lock, CAS lock, blind-store unlock, inline nesting, inflate forever"
    };
    const HEADER_LOCK_BITS: u32 = 24;

    type Header = LockWord;
    /// Whether the process is registered for `membarrier` (`membarrier::init`): the side
    /// table's Dekker is then asymmetric (`SideHashes::owner_must_look`).
    type State = bool;
    type ThreadState = ThinThread;
    /// `HINT_NESTED | w` from a nested lock that found `w` (`thin-seed`: always 0).
    type Hint = u64;

    fn new_state(_: &Config) -> bool {
        crate::membarrier::init()
    }
    fn new_thread_state(id: ThreadId, _: &Config) -> ThinThread {
        ThinThread::new(id)
    }

    /// The thread's id pre-shifted into the owner field (`ThinThread::me`): a handle keeps it
    /// in a register, so neither fast path loads it from the context (a nested lock+unlock
    /// loaded it twice).
    #[inline(always)]
    fn handle_word(t: &ThreadContext<Self>) -> u64 {
        u64::from(t.local().me)
    }

    /// §2.3.1: CAS `old = word & 0xff` → `old | index << 16`, with `me` from the handle
    /// (`word`). `thin` (not `thin-seed`) first tests the loaded word for §2.3.3's nested
    /// lock (no CAS then), and records the word of a successful CAS in the thread
    /// (`ThinThread::last`) for the blind unlock. A nested lock returns `HINT_NESTED` and
    /// the word it found (owner me, count c), which the guard's unlock stores back if the
    /// word is still that plus one. Every other lock: 0.
    #[inline]
    unsafe fn lock(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        word: u64,
        h: &LockWord,
    ) -> Result<u64, MonitorError> {
        if SEED {
            if h.try_lock_unlocked(t.core().id_shifted16()) {
                return Ok(0);
            }
            return Self::enter_slow(rt, t, h).map(|()| 0);
        }
        let l = t.local();
        // `ThinThread::me`, as `handle_word` derived it (the caller's contract).
        let me = word as u32;
        let w = h.0.load(Ordering::Relaxed);
        if (w ^ me) < (255 << COUNT_SHIFT) {
            // §2.3.3 before any CAS: shape 0, owner = me, count < 255. Tested first so that
            // the compiler lays the nested path out straight (the plain path's CAS costs
            // ~4.5 ns; a taken branch there is nothing). Ours, so the load saw
            // our own last write (or an inflation for us, ordered by our `unblock`). The word
            // changes: if it is `last`, that must be forgotten — only then: a store of the
            // record on every nested lock, reloaded by the unlock right after, was a third
            // store per nested lock + unlock (the pair has two).
            h.0.store(w + COUNT_ONE, Ordering::Relaxed);
            l.forget_if_last(addr(h));
            // The word as found, for the nested unlock to store back (`unlock`).
            return Ok(HINT_NESTED | u64::from(w));
        } else if w & LOCK_MASK == 0 {
            // The CAS's new word before the record's stores (`computed_before_stores`: after
            // them, a lock+unlock took 0.5 ns more).
            let new = crate::sync::computed_before_stores(w | me);
            // Record the word *before* the CAS makes it `w | me` (only we write it then,
            // §2.3); a failed CAS forgets it again. Only this thread's unlock reads the
            // record, and it cannot run before this enter returns (`ThinThread::last`). Two
            // stores before the locked instruction leave the store buffer with it; after it,
            // the next lock's CAS would wait for them (`docs/benchmarks.md`, "`thin` and
            // `thin-seed`").
            l.last.store(addr(h), Ordering::Relaxed);
            l.host.store(w, Ordering::Relaxed);
            // Acquire: the critical section after the previous owner's Release unlock.
            if h.0
                .compare_exchange(w, new, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return Ok(0);
            }
            l.forget_last();
        }
        Self::enter_slow(rt, t, h).map(|()| 0)
    }

    unsafe fn try_enter(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<bool, MonitorError> {
        // No path here records `h` for the blind unlock, and the word here may not be the one
        // a record of `h` describes (a forgotten guard's header swapped away): forget it.
        if !SEED {
            t.local().forget_if_last(addr(h));
        }
        let me = t.core().id_shifted16();
        loop {
            let w = h.0.load(Ordering::Acquire);
            if w & SHAPE != 0 {
                return monitor_of(rt, w)?.try_enter(t.core());
            }
            if w & LOCK_MASK == 0 {
                match h
                    .0
                    .compare_exchange(w, w | me, Ordering::Acquire, Ordering::Relaxed)
                {
                    Ok(_) => return Ok(true),
                    // Lost to another locker or the word changed: look again.
                    Err(_) => continue,
                }
            }
            if w & OWNER_MASK == me {
                Self::enter_slow(rt, t, h)?;
                return Ok(true);
            }
            return Ok(false);
        }
    }

    /// §2.3.2: if the word is exactly "mine, count 0", store the host bits back. `thin` (not
    /// `thin-seed`) first stores blind if `h` is the word of its last fast lock, and unnests
    /// (§2.3.3) inline. With a nested lock's hint (the word it found, `lock`), if the word
    /// is that plus one — ours, held nested, as that lock left
    /// it — the unlock stores the hint: the same store as the hintless nested unlock (the
    /// loaded word minus one), its value taken from a register instead of computed from the
    /// load, so that a user's nested loop chains one step to the next through memory alone
    /// (load → store → load) rather than through an add and a subtract too. Nor does it load
    /// `last` first: a word held nested is never `last`. One body for both (`exit` passes
    /// no hint): with a second copy of the unlock for the hinted case, the guard's
    /// drop was too big to inline (17 → 36 instructions per plain lock+unlock).
    #[inline]
    unsafe fn unlock(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        word: u64,
        hint: u64,
        h: &LockWord,
    ) -> Result<(), MonitorError> {
        if SEED {
            let w = h.0.load(Ordering::Relaxed);
            if w & LOCK_MASK == t.core().id_shifted16() {
                h.0.store(w & HOST_BITS_MASK, Ordering::Release);
                return Ok(());
            }
            return Self::exit_slow(rt, t, h);
        }
        let l = t.local();
        // The word the unlock stores (`unlock_store` below, one call site).
        let new = 'store: {
            if hint & HINT_NESTED != 0 {
                // `hint` is `HINT_NESTED | w0` from our nested lock of `h` (the contract), w0
                // ours with a count below 255: w0 + 1 does not carry out of the count field,
                // and a word equal to it is ours, held nested — the case the nested unlock
                // below stores w − 1 = w0 for; here from a register. Such a word is never
                // `last` (that is held once): no load of the record.
                let w0 = hint as u32;
                if h.0.load(Ordering::Relaxed) == w0 + COUNT_ONE {
                    break 'store w0;
                }
                // Changed since (inflated by a wait, or guards dropped out of order): the
                // general unlock, from a fresh load — without the `last` test: `last` names
                // `h` only after a fresh CAS on `h`, which needs `h` free, and `h` has been
                // held (thin, or fat for good) since the nested lock that forgot it.
            } else if l.last.load(Ordering::Relaxed) == addr(h) {
                // `ThinThread::last`'s invariant: the word is `host | me`, ours once.
                l.forget_last();
                break 'store l.host.load(Ordering::Relaxed);
            }
            let w = h.0.load(Ordering::Relaxed);
            // Shape 0, owner = me: the xor leaves the count and the host bits.
            let x = w ^ word as u32;
            // §2.3.3 first: mine, count in 1..=255 (a count of 0 wraps around). Tested before
            // §2.3.2, whose single holds mostly take the blind store above: the nested unlock
            // then pays one test, not two.
            if x.wrapping_sub(COUNT_ONE) < (255 << COUNT_SHIFT) {
                break 'store w - COUNT_ONE;
            }
            if x <= HOST_BITS_MASK {
                // §2.3.2: mine, count 0.
                break 'store w & HOST_BITS_MASK;
            }
            return Self::exit_slow(rt, t, h);
        };
        Self::unlock_store(rt, t, h, new);
        Ok(())
    }

    unsafe fn wait(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
        deadline: Option<Instant>,
    ) -> Result<WaitOutcome, MonitorError> {
        let m = Self::fat_for_wait(rt, t, h)?;
        Self::blocked(t, || m.wait(t.core_arc(), deadline))
    }

    unsafe fn notify(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
        all: bool,
    ) -> Result<(), MonitorError> {
        Self::fat_for_wait(rt, t, h)?.notify(t.core(), all)
    }

    fn lock_count(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &LockWord) -> u32 {
        let w = h.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            monitor_of(rt, w).map_or(0, |m| m.count_for(t.core()))
        } else if w & OWNER_MASK == t.core().id_shifted16() {
            thin_locks(w)
        } else {
            0
        }
    }

    fn owner_of(rt: &Runtime<Self>, h: &LockWord) -> Option<ThreadId> {
        let w = h.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            monitor_of(rt, w).ok().and_then(FatMonitor::owner)
        } else {
            ThreadId::from_raw((w & OWNER_MASK) >> OWNER_SHIFT)
        }
    }

    fn reclaim(rt: &Runtime<Self>, h: &mut LockWord) {
        let w = h.0.load(Ordering::Relaxed);
        // Dead while held once (a forgotten guard): its owner's record of it goes, so that a
        // new object at this address is never unlocked blind by that owner.
        Self::forget_record(rt, w, addr(h));
        if w & SHAPE != 0 {
            let idx = MonitorIndex::new((w & INDEX_MASK) >> INDEX_SHIFT).expect("index");
            rt.monitors().free_if_bound(idx);
        }
        // The object is dead: a hash parked for it goes with it (the monitor's went with the
        // monitor, see `MonitorTable::free`).
        if let Some(p) = rt.side_hashes().forget(addr(h)) {
            rt.monitors().free(p.monitor);
        }
        h.0.store(w & HOST_BITS_MASK, Ordering::Relaxed);
    }

    /// The word moved while held once (a forgotten guard): its owner's record names the old
    /// address, which may hold another object soon. Forget it (the next unlock loads).
    fn relocate_records(rt: &Runtime<Self>, from: *const LockWord, to: &LockWord) {
        Self::forget_record(rt, to.0.load(Ordering::Relaxed), from as usize);
    }

    /// In native (`thin` only): hashers of the words this thread holds once park their hash
    /// at once rather than wait for a release (`ThinThread::native`). Nothing else changes:
    /// locks and unlocks in native run as outside.
    unsafe fn enter_native(_rt: &Runtime<Self>, t: &ThreadContext<Self>) {
        if !SEED {
            t.local().native.fetch_add(1, Ordering::Relaxed);
        }
    }

    unsafe fn leave_native(_rt: &Runtime<Self>, t: &ThreadContext<Self>) {
        if !SEED {
            t.local().native.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Detached: a hasher may inflate the thin locks it still holds (forgotten guards).
    unsafe fn on_detach(_rt: &Runtime<Self>, t: &ThreadContext<Self>) {
        t.local().state.store(EXITED, Ordering::SeqCst);
    }

    const HASH_BITS: u32 = 32;

    /// See the module documentation. Fast: an inflated word whose monitor has the hash.
    unsafe fn identity_hash(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<u32, MonitorError> {
        let w = h.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            if let Some(v) = monitor_of(rt, w)?.identity_hash() {
                return Ok(v);
            }
        }
        Self::hash_slow(rt, t, h)
    }

    fn peek_identity_hash(rt: &Runtime<Self>, h: &LockWord) -> Option<u32> {
        // The table first, the word second (see `SideHashes::may_hold_any`).
        let parked = rt.side_hashes().may_hold_any();
        let w = h.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            if let Some(v) = monitor_of(rt, w).ok()?.identity_hash() {
                return Some(v);
            }
        }
        if !parked {
            return None;
        }
        let side = rt.side_hashes().lock();
        // Under the table's mutex: a hash is either still parked or already in the monitor;
        // a parked one counts only while its entry is live (hash.rs `Parked::owner`).
        let w = h.0.load(Ordering::Acquire);
        let p = side.get(addr(h));
        if w & SHAPE != 0 {
            let m = monitor_of(rt, w).ok()?;
            return m.identity_hash().or(p
                .filter(|p| (p.loose || m.owner_raw() == p.owner) && p.hash == pin(w))
                .map(|p| p.hash));
        }
        p.filter(|p| (p.loose || held_nested_by(w, p.owner)) && p.hash == pin(w))
            .map(|p| p.hash)
    }
}
