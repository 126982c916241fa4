//! Unit tests of the bias owner's lock records and of the thin / learn word's record of the
//! last inline lock (its blind unlock, and every path that must forget it).

use super::*;

/// Records variant (HotSpot 17 style): the bias owner's lock and unlock leave the header
/// word exactly as it was; the count is the number of its lock records.
#[test]
fn kko_records_owner_never_writes_the_header() {
    let rt = Runtime::<Biased>::with_defaults();
    let me = rt.attach().unwrap();
    let h = BiasWord::new(0x5a);
    drop(me.enter(&h).unwrap());
    assert_eq!(h.mode(), BiasMode::Biased);
    let biased = h.raw();
    assert_eq!(rc(biased), 0, "no count in the header");
    let g1 = me.enter(&h).unwrap();
    let g2 = me.enter(&h).unwrap();
    assert_eq!(h.raw(), biased, "nested lock stores nothing to the header");
    assert_eq!(me.lock_count(&h), 2);
    assert_eq!(rt.owner_of(&h), Some(me.id()));
    let rec = &me.context().local().rec;
    assert_eq!(rec.top.load(Ordering::Relaxed), 2);
    drop((g2, g1));
    assert_eq!(h.raw(), biased);
    assert_eq!(rec.top.load(Ordering::Relaxed), 0);
    assert_eq!(me.lock_count(&h), 0);
    assert_eq!(rt.owner_of(&h), None);
    assert_eq!(h.host_bits(), 0x5a);
}

/// Records variant: unstructured exits in any order release the right holds and keep
/// the bias; the lock records are empty afterwards.
#[test]
fn records_out_of_order_exit_keeps_the_bias() {
    let rt = Runtime::<Biased>::with_defaults();
    let (a, b) = (BiasWord::default(), BiasWord::default());
    let me = rt.attach().unwrap();
    me.monitor_enter(&a).unwrap();
    me.monitor_enter(&b).unwrap();
    me.monitor_enter(&a).unwrap();
    me.monitor_exit(&a).unwrap(); // innermost: fast pop
    me.monitor_exit(&a).unwrap(); // below b: buried
    assert_eq!(me.lock_count(&a), 0);
    assert_eq!(me.lock_count(&b), 1);
    assert_eq!(a.mode(), BiasMode::Biased);
    me.monitor_exit(&b).unwrap();
    let rec = &me.context().local().rec;
    assert_eq!(rec.own_count(addr(&a)) + rec.own_count(addr(&b)), 0);
    // The buried record under `b` goes at the next slow path.
    assert_eq!(rec.top.load(Ordering::Relaxed), 1);
    rec.pop_tombs();
    assert_eq!(rec.top.load(Ordering::Relaxed), 0);
    assert_eq!(me.monitor_exit(&b), Err(MonitorError::IllegalMonitorState));
    assert_eq!(
        // SAFETY: `me` is this thread's handle; `a` outlives the call.
        unsafe { Biased::exit(&rt, me.context(), &a) },
        Err(MonitorError::IllegalMonitorState),
        "biased to me but not held"
    );
    assert_eq!(rt.state().revocations().total(), 0);
}

/// Records variant: a hold beyond the records' capacity turns the object thin with the
/// whole count (never rebiased); other objects keep their bias.
#[test]
fn records_overflow_goes_thin_with_the_count() {
    let rt = Runtime::<Biased>::with_defaults();
    let me = rt.attach().unwrap();
    let h = BiasWord::default();
    let mut gs: Vec<_> = (0..LOCK_RECORDS).map(|_| me.enter(&h).unwrap()).collect();
    assert_eq!(h.mode(), BiasMode::Biased);
    assert_eq!(me.lock_count(&h), LOCK_RECORDS as u32);
    gs.push(me.enter(&h).unwrap());
    assert_eq!(h.mode(), BiasMode::Thin);
    assert_eq!(me.lock_count(&h), LOCK_RECORDS as u32 + 1);
    assert_eq!(me.context().local().rec.top.load(Ordering::Relaxed), 0);
    drop(gs);
    assert_eq!(rt.owner_of(&h), None);
    assert_eq!(h.mode(), BiasMode::Thin);
}

/// Records variant: revoked while held twice, the owner's next unlock finds a thin word
/// marked stale, buries its records, and the count stays right.
#[test]
fn records_revoked_while_held_are_buried_on_unlock() {
    for mode in MODES {
        let rt = rt_with::<Kko>(mode, 5);
        let h = BiasWord::default();
        let other = BiasWord::default();
        let (held, revoked) = (Barrier::new(2), Barrier::new(2));
        std::thread::scope(|s| {
            s.spawn(|| {
                let me = rt.attach().unwrap();
                let go = me.enter(&other).unwrap();
                let g1 = me.enter(&h).unwrap();
                let g2 = me.enter(&h).unwrap();
                me.in_native(|| {
                    held.wait();
                    revoked.wait();
                });
                assert_eq!(h.mode(), BiasMode::Thin);
                assert_eq!(h.raw() & STALE, STALE, "{mode:?}");
                assert_eq!(me.lock_count(&h), 2);
                drop(g2);
                assert_eq!(h.raw() & STALE, 0, "{mode:?}");
                assert_eq!(me.lock_count(&h), 1);
                let rec = &me.context().local().rec;
                assert_eq!(rec.own_count(addr(&h)), 0, "buried");
                assert_eq!(rec.top.load(Ordering::Relaxed), 1, "`other` stays");
                drop(g1);
                drop(go);
                assert_eq!(rec.top.load(Ordering::Relaxed), 0);
                assert_eq!(other.mode(), BiasMode::Biased);
            });
            let me = rt.attach().unwrap();
            held.wait();
            assert_eq!(
                me.try_enter(&h).unwrap().map(|_| ()),
                None,
                "held by its owner"
            );
            // Revoke: a blocking enter would wait for the owner, which waits for us.
            Biased::revoke(&rt, me.context(), &h, h.raw()).unwrap();
            revoked.wait();
        });
    }
}

/// Records variant: wait on a biased lock held twice inflates with the count and buries
/// the records.
#[test]
fn records_wait_inflates_with_count() {
    let rt = Runtime::<Fable>::with_defaults();
    Fable::set_knob(&rt, 1).unwrap();
    let me = rt.attach().unwrap();
    let h = BiasWord::default();
    drop(me.enter(&h).unwrap());
    drop(me.enter(&h).unwrap());
    assert_eq!(h.mode(), BiasMode::Biased);
    let _a = me.enter(&h).unwrap();
    let b = me.enter(&h).unwrap();
    assert_eq!(b.wait(Some(Duration::ZERO)).unwrap(), WaitOutcome::TimedOut);
    assert_eq!(h.mode(), BiasMode::Fat);
    assert_eq!(me.lock_count(&h), 2);
    assert_eq!(me.context().local().rec.top.load(Ordering::Relaxed), 0);
}

/// The "revoke this header now" entry point: another thread's bias is revoked, our own
/// becomes a thin lock with our count; either way the header is no longer biased.
#[test]
fn revoke_now_unbiases_own_and_others() {
    let rt = Runtime::<BiasedRseq>::with_defaults();
    let me = rt.attach().unwrap();
    let (mine, theirs) = (BiasWord::default(), BiasWord::default());
    let g = me.enter(&mine).unwrap();
    let g2 = me.enter(&mine).unwrap();
    BiasedRseq::revoke_now(&rt, me.context(), &mine).unwrap();
    assert_eq!(mine.mode(), BiasMode::Thin);
    assert_eq!(me.lock_count(&mine), 2);
    assert_eq!(mine.raw() & STALE, 0, "records buried at once");
    drop((g2, g));
    assert_eq!(rt.owner_of(&mine), None);
    std::thread::scope(|s| {
        s.spawn(|| drop(rt.attach().unwrap().enter(&theirs).unwrap()));
    });
    assert_eq!(theirs.mode(), BiasMode::Biased);
    BiasedRseq::revoke_now(&rt, me.context(), &theirs).unwrap();
    assert_eq!(theirs.mode(), BiasMode::Thin);
    assert_eq!(rt.owner_of(&theirs), None);
}

/// GC hooks: held biased headers are listed once per hold, and a relocation rewrites
/// the records so that unlock through the new address works.
#[test]
fn records_relocate() {
    let rt = Runtime::<Biased>::with_defaults();
    let me = rt.attach().unwrap();
    let old = Box::new(BiasWord::default());
    drop(me.enter(&old).unwrap());
    // SAFETY (the direct calls in this test): `me` is this thread's handle; the move of
    // `old` while held is reported with `relocate`, as the contract asks.
    unsafe { Biased::enter(&rt, me.context(), &old).unwrap() };
    unsafe { Biased::enter(&rt, me.context(), &old).unwrap() };
    let from: *const BiasWord = &*old;
    assert_eq!(Biased::locked_objects(me.context()), vec![from, from]);
    let new = BiasWord(AtomicU64::new(old.raw()));
    // SAFETY: a test's safepoint: no other thread is inside objmon, and the word was
    // copied verbatim.
    unsafe { rt.relocate(from, &new) };
    drop(old);
    assert_eq!(me.lock_count(&new), 2);
    unsafe { Biased::exit(&rt, me.context(), &new).unwrap() };
    unsafe { Biased::exit(&rt, me.context(), &new).unwrap() };
    assert_eq!(me.lock_count(&new), 0);
    assert!(Biased::locked_objects(me.context()).is_empty());
}

/// Hybrid revocation against an owner that never polls (it spins, then sleeps in a
/// system call while holding): the asynchronous request is withdrawn after the wait and
/// the barrier revokes; the owner keeps its count.
#[test]
fn hybrid_falls_back_to_the_barrier() {
    let rt = rt_with::<KkoRseq>(Revocation::Hybrid, 5);
    let h = BiasWord::default();
    let (held, go) = (Barrier::new(2), AtomicBool::new(false));
    std::thread::scope(|s| {
        s.spawn(|| {
            let me = rt.attach().unwrap();
            let g = me.enter(&h).unwrap();
            held.wait();
            while !go.load(Ordering::Acquire) {
                std::hint::spin_loop(); // never polls
            }
            assert_eq!(me.lock_count(&h), 1);
            drop(g);
        });
        let me = rt.attach().unwrap();
        held.wait();
        BiasedRseq::revoke(&rt, me.context(), &h, h.raw()).unwrap();
        assert_eq!(h.mode(), BiasMode::Thin);
        go.store(true, Ordering::Release);
        drop(me.enter(&h).unwrap());
    });
    let rv = rt.state().revocations();
    assert_eq!(rv.count(K::Membarrier), 1, "{rv:?}");
    assert_eq!(rv.total(), 1);
}

/// A free thin word (owner 0, rc 0) with host bits 0x5a: the inline thin CAS takes it.
fn free_thin_word() -> BiasWord {
    BiasWord(AtomicU64::new(THIN | 0x5a))
}

/// This thread's record of its last inline thin lock (`LockRecords::last`).
fn last_of<F: Flavor>(me: &crate::vm::ThreadHandle<Biasing<F>>) -> usize {
    me.context().local().rec.last.load(Ordering::Relaxed)
}

/// The inline thin lock records the word before its CAS; the unlock stores it back blind
/// and forgets the record; the seed flavors record nothing.
fn record_blind_unlock<F: Flavor>() {
    // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
    // run only on a fault, which no owner section makes): the -signal flavors' contract
    // (`Runtime::new_unchecked`) holds; the other protocols have none.
    let rt = unsafe { Runtime::<Biasing<F>>::new_unchecked(Default::default()) };
    let me = rt.attach().unwrap();
    let h = free_thin_word();
    let g = me.enter(&h).unwrap();
    let held = h.raw();
    assert_eq!(held & !OWNER_MASK, THIN | RC_ONE | 0x5a);
    assert_eq!(last_of(&me), if Biasing::<F>::SEED { 0 } else { addr(&h) });
    drop(g);
    assert_eq!(last_of(&me), 0);
    assert_eq!(
        h.raw(),
        held - RC_ONE - if F::STICKY { 0 } else { held & OWNER_MASK }
    );
    assert_eq!(rt.owner_of(&h), None);
    // Nested: the inline nested lock forgets the record; the unlocks load the word.
    let g1 = me.enter(&h).unwrap();
    let g2 = me.enter(&h).unwrap();
    assert_eq!(last_of(&me), 0);
    assert_eq!(me.lock_count(&h), 2);
    drop(g2);
    drop(g1);
    assert_eq!(me.lock_count(&h), 0);
    assert_eq!(h.mode(), BiasMode::Thin);
    assert_eq!(h.host_bits(), 0x5a);
}

#[test]
fn thin_record_blind_unlock() {
    record_blind_unlock::<Kko>();
    record_blind_unlock::<FableHeuristics>();
    record_blind_unlock::<KkoRseq>();
    record_blind_unlock::<FableRseqHeuristics>();
    record_blind_unlock::<KkoSeed>();
    record_blind_unlock::<FableSeedHeuristics>();
}

/// Regression (the record must be forgotten by every write of ours to the word): held once
/// through the recorded CAS, the word is inflated by the owner itself — its identity hash,
/// or notify — and the unlock must then release the monitor, not store the thin word back
/// blind over the fat one.
fn record_then_inflate<F: Flavor>(by_hash: bool) {
    // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
    // run only on a fault, which no owner section makes): the -signal flavors' contract
    // (`Runtime::new_unchecked`) holds; the other protocols have none.
    let rt = unsafe { Runtime::<Biasing<F>>::new_unchecked(Default::default()) };
    let me = rt.attach().unwrap();
    let h = free_thin_word();
    let g = me.enter(&h).unwrap();
    if by_hash {
        me.identity_hash(&h).unwrap();
    } else {
        g.notify().unwrap();
    }
    assert_eq!(h.mode(), BiasMode::Fat);
    assert_eq!(last_of(&me), 0);
    drop(g);
    assert_eq!(h.mode(), BiasMode::Fat, "not unlocked blind");
    assert_eq!(rt.owner_of(&h), None);
    assert_eq!(h.host_bits(), 0x5a);
    // Another thread can take it.
    std::thread::scope(|s| {
        s.spawn(|| {
            let other = rt.attach().unwrap();
            drop(other.enter(&h).unwrap());
        });
    });
}

#[test]
fn thin_record_forgotten_by_own_inflation() {
    for by_hash in [true, false] {
        record_then_inflate::<Kko>(by_hash);
        record_then_inflate::<FableHeuristics>(by_hash);
        record_then_inflate::<KkoRseq>(by_hash);
        record_then_inflate::<FableRseqHeuristics>(by_hash);
    }
}

/// The record of an object that dies held (a forgotten guard) is cleared by `reclaim`, and
/// one of an object moved while held by `relocate` (whose new address then unlocks by the
/// word), so that a blind store never lands on a new object at the old address.
fn record_cleared_by_reclaim_and_relocate<F: Flavor>() {
    // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
    // run only on a fault, which no owner section makes): the -signal flavors' contract
    // (`Runtime::new_unchecked`) holds; the other protocols have none.
    let rt = unsafe { Runtime::<Biasing<F>>::new_unchecked(Default::default()) };
    let me = rt.attach().unwrap();
    let mut x = free_thin_word();
    // SAFETY (the direct calls here): `me` is this thread's handle; `x` dies held, reported
    // by `reclaim`; `old`'s move while held is reported by `relocate`.
    unsafe { Biasing::<F>::enter(&rt, me.context(), &x).unwrap() };
    assert_eq!(last_of(&me), addr(&x));
    rt.reclaim(&mut x);
    assert_eq!(last_of(&me), 0, "reclaim clears the record");
    let old = Box::new(free_thin_word());
    unsafe { Biasing::<F>::enter(&rt, me.context(), &old).unwrap() };
    let from: *const BiasWord = &*old;
    assert_eq!(last_of(&me), from as usize);
    let new = BiasWord(AtomicU64::new(old.raw()));
    // SAFETY: a test's safepoint: no other thread is inside objmon; copied verbatim.
    unsafe { rt.relocate(from, &new) };
    drop(old);
    assert_eq!(last_of(&me), 0, "relocate clears the record");
    assert_eq!(me.lock_count(&new), 1);
    unsafe { Biasing::<F>::exit(&rt, me.context(), &new).unwrap() };
    assert_eq!(me.lock_count(&new), 0);
    assert_eq!(rt.owner_of(&new), None);
}

#[test]
fn thin_record_cleared_by_reclaim_and_relocate() {
    record_cleared_by_reclaim_and_relocate::<Kko>();
    record_cleared_by_reclaim_and_relocate::<FableHeuristics>();
}

/// `fable`'s inline learn CASes (clear → learn, the guess's counted re-acquisition) record
/// the word as the thin CAS does; the unlock stores it back blind (sticky owner kept, the
/// learn count kept); a nested hold forgets the record.
#[test]
fn fable_learn_record_blind_unlock() {
    let rt = rt_with::<FableHeuristics>(Revocation::Membarrier, 5);
    let me = rt.attach().unwrap();
    let h = BiasWord::new(0x5a);
    let g = me.enter(&h).unwrap();
    assert_eq!(h.mode(), BiasMode::Learn);
    assert_eq!(last_of(&me), addr(&h), "clear → learn recorded");
    let held = h.raw();
    drop(g);
    assert_eq!(last_of(&me), 0);
    assert_eq!(h.raw(), held - RC_ONE);
    let g = me.enter(&h).unwrap();
    assert_eq!(
        last_of(&me),
        addr(&h),
        "the counted re-acquisition recorded"
    );
    let g2 = me.enter(&h).unwrap();
    assert_eq!(last_of(&me), 0, "nested forgets");
    drop(g2);
    drop(g);
    assert_eq!(me.lock_count(&h), 0);
    assert_eq!(h.mode(), BiasMode::Learn);
    assert_eq!(h.host_bits(), 0x5a);
    // Reclaim of a held learn word clears the record.
    let mut x = BiasWord::new(0x11);
    // SAFETY: `me` is this thread's handle; `x` dies held, reported by `reclaim`.
    unsafe { Fable::enter(&rt, me.context(), &x).unwrap() };
    assert_eq!(last_of(&me), addr(&x));
    rt.reclaim(&mut x);
    assert_eq!(last_of(&me), 0);
}

/// The nested lock of a learn or thin word the thread holds forgets the record of its last
/// inline thin / learn lock only when the record names that word (`forget_if_last`): a
/// record of another word stays true, and that word's unlock is still the blind store.
/// (Every nested lock stored 0 to the record before — a third store per nested lock +
/// unlock —, and a held learn word's nested lock failed `enter`'s nested test, whose mask
/// kept the word's learn tag and count, and took `fresh_enter`'s instead.)
fn nested_keeps_another_words_record<F: Flavor>() {
    // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
    // run only on a fault, which no owner section makes): the -signal flavors' contract
    // (`Runtime::new_unchecked`) holds; the other protocols have none.
    let rt = unsafe { Runtime::<Biasing<F>>::new_unchecked(Default::default()) };
    let me = rt.attach().unwrap();
    let held = if F::LEARN {
        BiasWord::new(0x33)
    } else {
        free_thin_word()
    };
    let g1 = me.enter(&held).unwrap();
    let mode = if F::LEARN {
        BiasMode::Learn
    } else {
        BiasMode::Thin
    };
    assert_eq!(held.mode(), mode, "{}", F::NAME);
    assert_eq!(last_of(&me), addr(&held));
    let a = free_thin_word();
    let ga = me.enter(&a).unwrap();
    assert_eq!(last_of(&me), addr(&a));
    let g2 = me.enter(&held).unwrap();
    assert_eq!(
        last_of(&me),
        addr(&a),
        "{}: another word's record kept",
        F::NAME
    );
    assert_eq!(me.lock_count(&held), 2);
    assert_eq!(held.mode(), mode);
    drop(g2);
    assert_eq!(me.lock_count(&held), 1);
    assert_eq!(last_of(&me), addr(&a));
    drop(ga);
    assert_eq!(last_of(&me), 0);
    assert_eq!(rt.owner_of(&a), None);
    assert_eq!(a.mode(), BiasMode::Thin);
    assert_eq!(a.host_bits(), 0x5a);
    // The record naming the word itself is forgotten by its nested lock.
    drop(g1);
    let g1 = me.enter(&held).unwrap();
    assert_eq!(last_of(&me), addr(&held));
    let g2 = me.enter(&held).unwrap();
    assert_eq!(
        last_of(&me),
        0,
        "{}: the word's own record forgotten",
        F::NAME
    );
    drop(g2);
    assert_eq!(me.lock_count(&held), 1);
    assert_eq!(held.mode(), mode);
    drop(g1);
    assert_eq!(me.lock_count(&held), 0);
    assert_eq!(rt.owner_of(&held), None);
    assert_eq!(held.host_bits(), if F::LEARN { 0x33 } else { 0x5a });
}

#[test]
fn nested_lock_keeps_another_words_record() {
    nested_keeps_another_words_record::<Kko>();
    nested_keeps_another_words_record::<FableHeuristics>();
    nested_keeps_another_words_record::<KkoRseq>();
    nested_keeps_another_words_record::<FableRseqHeuristics>();
    nested_keeps_another_words_record::<KkoSignal>();
    nested_keeps_another_words_record::<crate::protocol::fable::FableSignalHeuristics>();
}

/// The signal flavors' owner step through a handle (`signal_known_step`): its first test is
/// exact and its store comes from the handle's word, which must therefore be the line's
/// bias bits whenever those are cached (the invariant the step's soundness rests on), and
/// every word it does not know — nested, host bits set, in native — must take the general
/// test or the slow path with the count exact.
#[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
fn known_word_through_a_handle<F: Flavor>() {
    let rt = rt_with::<F>(Revocation::Membarrier, 0);
    let me = rt.attach().unwrap();
    let k = Biasing::<F>::handle_word(me.context());
    assert_eq!(k, Biasing::<F>::my_bias(me.context()));
    for host_bits in [0u8, 0x5a] {
        let h = BiasWord::new(host_bits);
        let host = u64::from(host_bits);
        // FABLE with learn limit 0 still learns once (`enter_slow`); either way the object
        // is biased to us after a few acquisitions.
        for _ in 0..4 {
            drop(me.enter(&h).unwrap());
        }
        assert_eq!(h.mode(), BiasMode::Biased, "{} host {host:#x}", F::NAME);
        let cached = me.context().local().rec.bias.load(Ordering::Relaxed);
        assert_eq!(cached, k, "the line caches exactly the handle's word");
        // Plain holds: the known word (host bits 0) or the general test (0x5a).
        for _ in 0..1000 {
            let g = me.enter(&h).unwrap();
            assert_eq!(h.raw(), k | host | RC_ONE);
            drop(g);
            assert_eq!(h.raw(), k | host);
        }
        // Nested: the general test each way, the count exact.
        let g1 = me.enter(&h).unwrap();
        let g2 = me.enter(&h).unwrap();
        assert_eq!(h.raw(), k | host | (2 * RC_ONE));
        assert_eq!(me.lock_count(&h), 2);
        drop(g2);
        assert_eq!(h.raw(), k | host | RC_ONE);
        // In native the line is poisoned: a lock is refused before any store, and the
        // unlock of a hold taken outside goes to the slow path, which releases it.
        let r = me.in_native(|| me.enter(&h).map(drop));
        assert_eq!(r, Err(MonitorError::InNative));
        assert_eq!(h.raw(), k | host | RC_ONE);
        me.in_native(move || drop(g1));
        assert_eq!(me.lock_count(&h), 0);
        assert_eq!(rt.owner_of(&h), None);
        assert_eq!(h.host_bits(), host_bits);
        // And back from native the known word works again.
        drop(me.enter(&h).unwrap());
        let g = me.enter(&h).unwrap();
        assert_eq!(me.lock_count(&h), 1);
        drop(g);
        assert_eq!(me.lock_count(&h), 0);
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
#[test]
fn known_word_through_a_handle_biased_signal() {
    known_word_through_a_handle::<KkoSignal>();
}

#[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
#[test]
fn known_word_through_a_handle_fable_signal() {
    known_word_through_a_handle::<crate::protocol::fable::FableSignalHeuristics>();
}
