//! Unit tests of `thin` and `thin-seed`.

use super::*;
use crate::vm::Runtime;

fn parts(w: u32) -> (u32, u32, u32, u32) {
    (
        w >> 31,
        (w & OWNER_MASK) >> OWNER_SHIFT,
        (w & COUNT_MASK) >> COUNT_SHIFT,
        w & 0xff,
    )
}

/// Seed 000 §2.3: "When the object is locked, the count field represents the number of
/// locks minus one"; unlocked, the whole lock field is 0.
#[test]
fn count_field_is_locks_minus_one() {
    let rt = Runtime::<Thin>::with_defaults();
    let me = rt.attach().unwrap();
    let h = LockWord::new(0x5a);
    assert_eq!(h.raw(), 0x5a);
    let mut gs = Vec::new();
    for locks in 1..=256u32 {
        gs.push(me.enter(&h).unwrap());
        assert_eq!(
            parts(h.raw()),
            (0, u32::from(me.id().get()), locks - 1, 0x5a)
        );
    }
    drop(gs);
    assert_eq!(h.raw(), 0x5a, "unlocked: lock field 0, host bits kept");
}

/// §2.3: "excessive" nesting is 257 — the 257th lock inflates, carrying the count over.
#[test]
fn lock_257_inflates_and_stays_fat() {
    let rt = Runtime::<Thin>::with_defaults();
    let me = rt.attach().unwrap();
    let h = LockWord::new(0xa5);
    let mut gs: Vec<_> = (0..256).map(|_| me.enter(&h).unwrap()).collect();
    assert_eq!(h.raw() >> 31, 0);
    gs.push(me.enter(&h).unwrap());
    assert_eq!(h.raw() >> 31, 1, "shape bit set");
    assert_eq!(h.raw() & 0xff, 0xa5);
    assert_eq!(me.lock_count(&h), 257);
    assert_eq!(rt.stats_snapshot().inflations_recursion, 1);
    drop(gs);
    // §2.3: "Once an object's lock is inflated, it remains inflated".
    assert_eq!(h.raw() >> 31, 1);
    assert_eq!(rt.owner_of(&h), None);
    drop(me.enter(&h).unwrap());
    assert_eq!(rt.stats_snapshot().inflations(), 1);
}

/// §2.3.4: a contender inflates after the owner releases; host bits survive.
#[test]
fn contention_inflates() {
    let rt = Runtime::<Thin>::with_defaults();
    let h = LockWord::new(0x3c);
    let me = rt.attach().unwrap();
    let g = me.enter(&h).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            let other = rt.attach().unwrap();
            drop(other.enter(&h).unwrap());
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(
            h.raw() >> 31,
            0,
            "the contender never writes an owned thin lock"
        );
        drop(g);
    });
    assert_eq!(h.raw() >> 31, 1);
    assert_eq!(h.raw() & 0xff, 0x3c);
    assert_eq!(rt.stats_snapshot().inflations_contention, 1);
}

/// A contender of an inflated lock held until it sleeps in it
/// (`enter_fat_contended`: `spin_enter`, then `FatMonitor::enter_spun`, which does not
/// spin again) and gets it at the release; with profiling on (`spin_enter` does not
/// spin, `enter_spun` does), that enter is profiled once.
#[test]
fn inflated_contender_sleeps_then_enters_and_is_profiled() {
    for profiling in [false, true] {
        let rt = Runtime::<Thin>::new(Config {
            profiling,
            ..Config::default()
        });
        let h = LockWord::new(0);
        let me = rt.attach().unwrap();
        me.enter(&h).unwrap().notify().unwrap();
        assert_eq!(h.raw() >> 31, 1, "inflated by notify");
        let g = me.enter(&h).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                let other = rt.attach().unwrap();
                drop(other.enter(&h).unwrap());
            });
            // Released only once the contender sleeps in the monitor's entry queue.
            let m = monitor_of(&rt, h.raw()).unwrap();
            while !m.system_lock().has_waiters() {
                std::thread::yield_now();
            }
            drop(g);
        });
        let enters: u64 = rt
            .contention_profile()
            .iter()
            .map(|p| p.contended_enters)
            .sum();
        assert_eq!(enters, u64::from(profiling));
        assert_eq!(rt.owner_of(&h), None);
    }
}

/// wait and notify inflate (a thin lock has no wait set), keeping the count.
#[test]
fn wait_inflates_with_count() {
    let rt = Runtime::<Thin>::with_defaults();
    let me = rt.attach().unwrap();
    let h = LockWord::new(0);
    let _a = me.enter(&h).unwrap();
    let b = me.enter(&h).unwrap();
    b.notify().unwrap();
    assert_eq!(h.raw() >> 31, 1);
    assert_eq!(me.lock_count(&h), 2);
    assert_eq!(rt.stats_snapshot().inflations_wait_notify, 1);
}

/// Hashing a free object inflates it with one CAS (the monitor holds the hash, host bits
/// stay); a lock another thread holds *nested* parks the hash with a monitor of its own,
/// and the owner's decrement to one level inflates into that monitor, so that the hash is
/// in the header before the owner's plain-store unlock can free it.
#[test]
fn hash_inflates_or_parks_until_the_owner_settles() {
    let rt = Runtime::<Thin>::with_defaults();
    let me = rt.attach().unwrap();
    let h = LockWord::new(0x5a);
    let v = me.identity_hash(&h).unwrap();
    assert_eq!(h.raw() >> 31, 1, "inflated to hold the hash");
    assert_eq!(h.raw() & 0xff, 0x5a);
    assert_eq!(monitor_of(&rt, h.raw()).unwrap().identity_hash(), Some(v));
    drop(me.enter(&h).unwrap());
    assert_eq!(me.identity_hash(&h), Ok(v));
    assert_eq!(rt.stats_snapshot().inflations_identity_hash, 1);

    let h2 = LockWord::new(0xa5);
    let g = me.enter(&h2).unwrap();
    let g2 = me.enter(&h2).unwrap();
    let w = std::thread::scope(|s| {
        s.spawn(|| rt.attach().unwrap().identity_hash(&h2).unwrap())
            .join()
            .unwrap()
    });
    assert_eq!(
        h2.raw() >> 31,
        0,
        "held by another thread: the word is not touched"
    );
    let p = rt.side_hashes().lock().get(addr(&h2)).expect("parked");
    assert_eq!((p.hash, p.owner), (w, me.context().core().raw_id()));
    assert_eq!(rt.peek_identity_hash(&h2), Some(w));
    drop(g2);
    assert_eq!(h2.raw() >> 31, 1, "settled by the owner's decrement");
    assert!(rt.side_hashes().lock().is_empty(), "moved into the monitor");
    assert_eq!(me.lock_count(&h2), 1);
    drop(g);
    assert_eq!(h2.raw() & 0xff, 0xa5);
    assert_eq!(rt.owner_of(&h2), None);
    assert_eq!(me.identity_hash(&h2), Ok(w));
    assert_eq!(rt.peek_identity_hash(&h2), Some(w));
}

/// A lock another thread holds once: the hasher waits for the release (the owner's
/// unlock may be the fast path, which only looks at the word), unless the owner is
/// blocked in objmon, where the hasher inflates for it.
#[test]
fn hash_of_a_single_hold_waits_or_inflates_for_a_blocked_owner() {
    let rt = Runtime::<Thin>::with_defaults();
    let me = rt.attach().unwrap();
    let (o, p) = (LockWord::new(0x11), LockWord::new(0x22));
    let g = me.enter(&o).unwrap();
    let gp = me.enter(&p).unwrap();
    std::thread::scope(|s| {
        let other = s.spawn(|| {
            let b = rt.attach().unwrap();
            let g = b.enter(&o).unwrap();
            let v = b.identity_hash(&p).unwrap();
            drop(g);
            v
        });
        // `other` blocks on `o` until we release it; hashing `p` (held once by us)
        // meanwhile must wait for us, so release `o` while still holding `p`, which
        // the hasher then waits for.
        drop(g);
        std::thread::sleep(std::time::Duration::from_millis(5));
        drop(gp);
        let v = other.join().unwrap();
        assert_eq!(me.identity_hash(&p), Ok(v));
    });
    // An owner blocked in objmon: `b` holds `o` once and blocks on `p`, which we hold;
    // our hash of `o` inflates `o` for it.
    let gp = me.enter(&p).unwrap();
    let o2 = LockWord::new(0x33);
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let (rt, o2, p) = (&rt, &o2, &p);
        s.spawn(move || {
            let b = rt.attach().unwrap();
            let g = b.enter(o2).unwrap();
            tx.send(()).unwrap();
            drop(b.enter(p).unwrap());
            assert_eq!(b.lock_count(o2), 1);
            drop(g);
        });
        rx.recv().unwrap();
        let v = me.identity_hash(o2).unwrap();
        assert_eq!(o2.raw() >> 31, 1, "inflated for its owner");
        assert_eq!(o2.raw() & 0xff, 0x33);
        drop(gp);
        assert_eq!(me.identity_hash(o2), Ok(v));
    });
    assert_eq!(rt.owner_of(&o2), None);
}

/// A contender that has waited long for a thin lock whose owner is
/// blocked in objmon inflates it for that owner and queues on the monitor (where the
/// hand-off bounds overtaking) instead of spinning until the owner comes back.
#[test]
fn starving_contender_inflates_for_a_blocked_owner() {
    let rt = Runtime::<Thin>::with_defaults();
    let me = rt.attach().unwrap();
    let (o, p) = (LockWord::new(0x44), LockWord::new(0));
    let gp = me.enter(&p).unwrap();
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let (rt, o, p) = (&rt, &o, &p);
        let owner = s.spawn(move || {
            let a = rt.attach().unwrap();
            let g = a.enter(o).unwrap();
            tx.send(a.id()).unwrap();
            drop(a.enter(p).unwrap()); // blocks: we hold `p`
            assert_eq!(a.lock_count(o), 1);
            drop(g);
        });
        let owner_id = rx.recv().unwrap();
        let contender = s.spawn(move || {
            let b = rt.attach().unwrap();
            drop(b.enter(o).unwrap());
        });
        let since = std::time::Instant::now();
        while o.raw() >> 31 == 0 && since.elapsed().as_secs() < 20 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(o.raw() >> 31, 1, "still thin while its owner is blocked");
        assert_eq!(o.raw() & 0xff, 0x44);
        assert_eq!(rt.owner_of(o), Some(owner_id), "inflated for its owner");
        drop(gp);
        owner.join().unwrap();
        contender.join().unwrap();
    });
    assert_eq!(rt.owner_of(&o), None);
    assert_eq!(
        rt.stats_snapshot().inflations_contention,
        2,
        "`o` for its owner, `p`"
    );
}

/// The record of the last fast lock (`ThinThread::last`) names a header a
/// moving GC moved while held once: after `relocate` the old address may hold another
/// object, which our exit must not unlock blind; the moved header unlocks (by its load /
/// compare / store).
#[test]
fn relocate_clears_the_record_of_a_moved_held_object() {
    let rt = Runtime::<Thin>::with_defaults();
    let me = rt.attach().unwrap();
    let old = LockWord::new(0x44);
    let new = LockWord::new(0);
    // SAFETY: our own context; the move while held is reported with `relocate`, at a
    // test's safepoint (no other thread in objmon) after a verbatim copy.
    unsafe {
        Thin::enter(&rt, me.context(), &old).unwrap();
        assert_eq!(
            me.context().local().last.load(Ordering::Relaxed),
            addr(&old)
        );
        new.0.store(old.raw(), Ordering::Relaxed);
        rt.relocate(&old, &new);
    }
    assert_eq!(me.context().local().last.load(Ordering::Relaxed), 0);
    // The old address gets a new object, which another thread locks.
    old.0.store(0x55, Ordering::Relaxed);
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let (rt, old) = (&rt, &old);
        s.spawn(move || {
            let other = rt.attach().unwrap();
            let g = other.enter(old).unwrap();
            tx.send(other.id()).unwrap();
            go_rx.recv().unwrap();
            drop(g);
        });
        let other = rx.recv().unwrap();
        // SAFETY: our own context; both words live for the calls.
        unsafe {
            assert_eq!(
                Thin::exit(rt, me.context(), old),
                Err(MonitorError::IllegalMonitorState)
            );
            assert_eq!(
                rt.owner_of(old),
                Some(other),
                "the other thread's lock stays"
            );
            Thin::exit(rt, me.context(), &new).unwrap();
        }
        go_tx.send(()).unwrap();
    });
    assert_eq!(new.raw(), 0x44);
    assert_eq!(old.raw(), 0x55);
}

/// The record follows the thread's last fast lock and is forgotten by a nested
/// lock, a blind unlock, and blocking; `thin-seed` never records.
#[test]
fn the_record_of_the_last_fast_lock() {
    let rt = Runtime::<Thin>::with_defaults();
    let me = rt.attach().unwrap();
    let last = || me.context().local().last.load(Ordering::Relaxed);
    let (a, b) = (LockWord::new(0x11), LockWord::new(0x22));
    let ga = me.enter(&a).unwrap();
    assert_eq!(last(), addr(&a));
    assert_eq!(me.context().local().host.load(Ordering::Relaxed), 0x11);
    let gb = me.enter(&b).unwrap();
    assert_eq!(last(), addr(&b));
    drop(ga); // not the record: load / compare / store
    assert_eq!((last(), a.raw()), (addr(&b), 0x11));
    let gb2 = me.enter(&b).unwrap();
    assert_eq!(last(), 0, "nested: forgotten");
    drop(gb2);
    drop(gb);
    assert_eq!(b.raw(), 0x22);
    drop(me.enter(&a).unwrap());
    assert_eq!((last(), a.raw()), (0, 0x11), "blind unlock: forgotten");
    let _g = me.enter(&a).unwrap();
    Thin::block(me.context());
    assert_eq!(last(), 0, "blocked: forgotten");
    Thin::unblock(me.context());

    let rt = Runtime::<ThinSeed>::with_defaults();
    let me = rt.attach().unwrap();
    drop(me.enter(&b).unwrap());
    let _g = me.enter(&b).unwrap();
    assert_eq!(me.context().local().last.load(Ordering::Relaxed), 0);
}

/// The nested lock's hint (`lock` → the guard → `unlock`): the unlock of a
/// guard whose lock was nested stores the word that lock found — and only if the word is
/// still that plus one. Guards dropped out of order, and a wait's inflation under a
/// nested guard, leave a hint that no longer matches: those unlocks must take the
/// general path (storing the hint there would undo the wrong level, or write a thin
/// word over a fat one).
#[test]
fn the_nested_hint() {
    let rt = Runtime::<Thin>::with_defaults();
    let me = rt.attach().unwrap();
    let cx = me.context();
    let word = Thin::handle_word(cx);
    let mine = u32::from(me.id().get()) << OWNER_SHIFT;
    let h = LockWord::new(0x5a);
    // SAFETY (all `unsafe` below): our own context, outside `in_native`; `h` outlives
    // every hold, each released before the end.
    let first = unsafe { Thin::lock(&rt, cx, word, &h) }.unwrap();
    assert_eq!(first, 0, "a fresh CAS gives no hint");
    let hint = unsafe { Thin::lock(&rt, cx, word, &h) }.unwrap();
    assert_eq!(
        hint,
        HINT_NESTED | u64::from(0x5a | mine),
        "the word as found"
    );
    assert_eq!(h.raw(), 0x5a | mine | COUNT_ONE);
    unsafe { Thin::unlock(&rt, cx, word, hint, &h) }.unwrap();
    assert_eq!(h.raw(), 0x5a | mine);
    unsafe { Thin::unlock(&rt, cx, word, first, &h) }.unwrap();
    assert_eq!(h.raw(), 0x5a);

    // Out of order through guards: the outer guard (no hint) takes a level off, count 2
    // → 1; then each nested guard's hint (the inner's count 1, the middle's count 0)
    // expects one more than the word holds, and its unlock is the general one.
    let g0 = me.enter(&h).unwrap();
    let g1 = me.enter(&h).unwrap();
    let g2 = me.enter(&h).unwrap();
    assert_eq!(h.raw(), 0x5a | mine | (2 * COUNT_ONE));
    drop(g0);
    assert_eq!(h.raw(), 0x5a | mine | COUNT_ONE);
    drop(g2); // hint: count 1 found, expects 2, finds 1: general unlock → count 0
    assert_eq!(h.raw(), 0x5a | mine);
    assert_eq!(me.lock_count(&h), 1);
    drop(g1); // hint: count 0 found, expects 1, finds 0: general unlock → free
    assert_eq!(h.raw(), 0x5a);
    assert_eq!(rt.owner_of(&h), None);

    // A wait's inflation under a nested guard: the hint meets a fat word.
    let g0 = me.enter(&h).unwrap();
    let g1 = me.enter(&h).unwrap();
    g1.notify().unwrap();
    assert_eq!(h.raw() >> 31, 1, "inflated");
    drop(g1);
    assert_eq!(me.lock_count(&h), 1);
    drop(g0);
    assert_eq!(rt.owner_of(&h), None);
    std::thread::scope(|s| {
        s.spawn(|| drop(rt.attach().unwrap().enter(&h).unwrap()));
    });
    assert_eq!(h.raw() & 0xff, 0x5a);
}

/// A parked hash follows its object when a moving GC reports the move.
#[test]
fn parked_hash_is_relocated() {
    let rt = Runtime::<Thin>::with_defaults();
    let me = rt.attach().unwrap();
    let old = LockWord::new(0x11);
    // SAFETY (the direct calls): `me` is this thread's handle; the move of `old` while
    // held is reported with `relocate`, as the contract asks.
    unsafe {
        Thin::enter(&rt, me.context(), &old).unwrap();
        Thin::enter(&rt, me.context(), &old).unwrap();
    }
    let v = std::thread::scope(|s| {
        s.spawn(|| rt.attach().unwrap().identity_hash(&old).unwrap())
            .join()
            .unwrap()
    });
    let new = LockWord::new(0);
    new.0.store(old.raw(), Ordering::Relaxed); // the GC copies the word verbatim
                                               // SAFETY: a test's safepoint: no other thread is inside objmon, and the word was
                                               // copied verbatim.
    unsafe { rt.relocate(&old, &new) };
    assert_eq!(rt.peek_identity_hash(&new), Some(v));
    assert_eq!(rt.peek_identity_hash(&old), None);
    unsafe {
        Thin::exit(&rt, me.context(), &new).unwrap();
        Thin::exit(&rt, me.context(), &new).unwrap();
    }
    assert_eq!(me.identity_hash(&new), Ok(v));
    assert_eq!(new.raw() & 0xff, 0x11);
    assert_eq!(rt.owner_of(&new), None);
}
