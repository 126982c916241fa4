//! Unit tests of `lightweight`, `lightweight-seed` and `lightweight-table`: the fast-lock's
//! bits and lock stack, recursion and its inflation, the side table's orphans, stale and
//! foreign entries and cache, out-of-order exits, a full stack, contention, wait / notify,
//! deflation policies, relocation and the hash.

/// A runtime of `P` by `Runtime::new_unchecked` (the lightweight protocols ask the host
/// never to move or free a header held through a leaked guard).
fn hosted<P: Protocol>(config: Config) -> std::sync::Arc<Runtime<P>> {
    // SAFETY: `new_unchecked`'s contract: the tests here that leak a guard and then move
    // or free its header do so on purpose, to check that the protocol stays memory-safe;
    // no data is guarded by these headers.
    unsafe { Runtime::new_unchecked(config) }
}
use super::*;
use crate::vm::{DeflationPolicy, Runtime};
use std::time::Duration;

const HOST: u64 = 0x8000_0000_0000_00a4;

fn rt_with(deflation: DeflationPolicy) -> std::sync::Arc<Runtime<Lightweight>> {
    hosted(Config {
        deflation,
        ..Config::default()
    })
}

/// Seed 001: "It still CASes the lowest two header bits to 00 … but does *not* overload
/// the upper bits", "pushes the object-reference to a thread-local lock-stack".
#[test]
fn fast_lock_flips_low_bits_and_pushes() {
    let rt = hosted::<Lightweight>(Config::default());
    let me = rt.attach().unwrap();
    let h = MarkWord::new(HOST);
    assert_eq!(h.raw(), HOST | FAST_UNLOCKED);
    let g = me.enter(&h).unwrap();
    assert_eq!(
        h.raw(),
        HOST | FAST_LOCKED,
        "lock bits flipped, host bits in place"
    );
    assert_eq!(
        Lightweight::locked_objects(me.context()),
        vec![&h as *const _]
    );
    drop(g);
    assert_eq!(h.raw(), HOST | FAST_UNLOCKED);
    assert!(Lightweight::locked_objects(me.context()).is_empty());
    assert_eq!(rt.stats_snapshot().inflations(), 0);
}

/// Recursion as adjacent duplicate entries (HotSpot JDK-8319796), no inflation.
#[test]
fn recursion_is_adjacent_entries() {
    let rt = hosted::<Lightweight>(Config::default());
    let me = rt.attach().unwrap();
    let h = MarkWord::new(HOST);
    let gs: Vec<_> = (0..3).map(|_| me.enter(&h).unwrap()).collect();
    assert_eq!(Lightweight::locked_objects(me.context()).len(), 3);
    assert_eq!(me.lock_count(&h), 3);
    assert_eq!(h.raw() & LOCK_BITS, FAST_LOCKED);
    drop(gs);
    assert_eq!(h.raw(), HOST | FAST_UNLOCKED);
    assert_eq!(rt.stats_snapshot().inflations(), 0);
}

/// The seed's variant: "fast-locking does *not* support recursive locking (yet). When that
/// happens, the fast-lock gets inflated to a full monitor."
#[test]
fn seed_variant_inflates_on_recursion() {
    let rt = hosted::<LightweightSeed>(Config {
        deflation: DeflationPolicy::Never,
        ..Config::default()
    });
    let me = rt.attach().unwrap();
    let h = MarkWord::new(HOST);
    let g1 = me.enter(&h).unwrap();
    assert_eq!(h.raw(), HOST | FAST_LOCKED);
    let g2 = me.enter(&h).unwrap();
    assert_eq!(h.raw() & LOCK_BITS, MONITOR);
    assert_eq!(me.lock_count(&h), 2);
    assert!(LightweightSeed::locked_objects(me.context()).is_empty());
    drop((g2, g1));
    assert_eq!(rt.owner_of(&h), None);
    assert_eq!(rt.stats_snapshot().inflations_recursion, 1);
}

/// `lightweight-table`: inflation changes only the lock bits (the monitor is in the side
/// table), and deflation empties the table again.
#[test]
fn table_variant_keeps_header_bits() {
    let rt = hosted::<LightweightTable>(Config::default());
    let me = rt.attach().unwrap();
    let h = MarkWord::new(HOST);
    let g = me.enter(&h).unwrap();
    g.wait(Some(Duration::ZERO)).unwrap();
    assert_eq!(
        h.raw(),
        (HOST & MARK_HOST_BITS) | MONITOR,
        "only the lock bits changed"
    );
    assert_eq!(rt.state().len(), 1);
    assert_eq!(rt.owner_of(&h), Some(me.id()));
    drop(g);
    assert_eq!(h.raw(), HOST | FAST_UNLOCKED);
    assert!(rt.state().is_empty());
    assert_eq!(rt.stats_snapshot().live_monitors, 0);
}

/// `lightweight-table`: a header moved away from its installed idle
/// monitor is an orphan (monitor state, no entry at its new address). The first look-up
/// deflates it in place, hash and host bits kept; the old address keeps the stale entry.
#[test]
fn table_orphan_is_deflated_in_place() {
    let rt = hosted::<LightweightTable>(Config {
        deflation: DeflationPolicy::Never,
        ..Config::default()
    });
    let mut h = MarkWord::new(HOST);
    let me = rt.attach().unwrap();
    let v = me.identity_hash(&h).unwrap();
    me.enter(&h).unwrap().wait(Some(Duration::ZERO)).unwrap();
    let moved = std::mem::take(&mut h);
    let kept = HOST | u64::from(v) << 32;
    assert_eq!(moved.raw(), kept | MONITOR);
    assert_eq!(rt.owner_of(&moved), None);
    assert_eq!(moved.raw(), kept | FAST_UNLOCKED, "deflated in place");
    assert_eq!(rt.state().len(), 1, "the entry stays at the old address");
    assert_eq!(
        rt.stats_snapshot().deflations,
        0,
        "no monitor was given back"
    );
}

/// `lightweight-table`: a header that runtime A inflated (its entry,
/// hence its claim) is not an orphan to runtime B: B's operations fail with
/// `ForeignHeader` or answer "not owned", never deflate it, and leave B nothing. Once A
/// deflates it, it is anyone's; `relocate` moves A's claim with the entry.
#[test]
fn table_entry_of_another_runtime_is_foreign() {
    let config = || Config {
        deflation: DeflationPolicy::Never,
        ..Config::default()
    };
    let ra = hosted::<LightweightTable>(config());
    let rb = hosted::<LightweightTable>(config());
    let (a, b) = (ra.attach().unwrap(), rb.attach().unwrap());
    let h = MarkWord::new(HOST);
    a.enter(&h).unwrap().wait(Some(Duration::ZERO)).unwrap();
    assert_eq!(h.raw() & LOCK_BITS, MONITOR);
    assert_eq!(b.try_enter(&h).err(), Some(MonitorError::ForeignHeader));
    assert_eq!(b.enter(&h).err(), Some(MonitorError::ForeignHeader));
    assert_eq!(b.notify(&h).err(), Some(MonitorError::ForeignHeader));
    assert_eq!(b.lock_count(&h), 0);
    assert_eq!(rb.owner_of(&h), None);
    assert!(!LightweightTable::deflate_idle(&rb, &h));
    assert_eq!(h.raw() & LOCK_BITS, MONITOR, "not deflated as an orphan");
    assert!(rb.state().is_empty() && rb.monitors().claimed() == 0);
    assert_eq!(rb.stats_snapshot().live_monitors, 0);
    // A moves the object: the claim goes with the entry.
    let to = MarkWord::new(HOST);
    to.0.store(h.raw(), Ordering::Relaxed); // the GC copies the word verbatim
                                            // SAFETY: no thread of `ra` is inside a call; `to` is a verbatim copy of `h`, which
                                            // is not used with `ra` again.
    unsafe { ra.relocate(&h, &to) };
    assert_eq!(ra.monitors().claimed(), 1);
    assert_eq!(b.enter(&to).err(), Some(MonitorError::ForeignHeader));
    assert!(LightweightTable::deflate_idle(&ra, &to));
    assert_eq!(ra.monitors().claimed(), 0);
    b.enter(&to).unwrap().wait(Some(Duration::ZERO)).unwrap();
    assert_eq!(a.try_enter(&to).err(), Some(MonitorError::ForeignHeader));
}

/// `lightweight-table`: `reclaim` of the object now at an address also
/// removes a stale entry that an object dropped there without `reclaim` left, and frees its
/// idle monitor.
#[test]
fn table_reclaim_clears_a_stale_entry() {
    let rt = hosted::<LightweightTable>(Config {
        deflation: DeflationPolicy::Never,
        ..Config::default()
    });
    let mut h = Box::new(MarkWord::default());
    let me = rt.attach().unwrap();
    me.enter(&h).unwrap().wait(Some(Duration::ZERO)).unwrap();
    *h = MarkWord::new(HOST); // dropped without `reclaim`
    assert_eq!(rt.state().len(), 1);
    rt.reclaim(&mut h);
    assert!(rt.state().is_empty());
    assert_eq!(rt.stats_snapshot().live_monitors, 0);
    assert_eq!(h.raw(), HOST | FAST_UNLOCKED);
}

/// `lightweight-table`, the per-thread cache: this thread caches `a`'s
/// monitor; another thread deflates `a`, inflates `b` (which gets `a`'s old monitor: the
/// free list is last in, first out) and inflates `a` again with a new one. This thread's
/// next enter of `a` must refuse its cached pair (the shard's version moved) and take
/// `a`'s new monitor, never `b`'s.
#[test]
fn table_cache_refuses_a_reused_monitor() {
    let rt = hosted::<LightweightTable>(Config {
        deflation: DeflationPolicy::OnRequest,
        ..Config::default()
    });
    let (a, b) = (
        std::sync::Arc::new(MarkWord::new(HOST)),
        std::sync::Arc::new(MarkWord::default()),
    );
    let me = rt.attach().unwrap();
    me.enter(&*a).unwrap().wait(Some(Duration::ZERO)).unwrap();
    drop(me.enter(&*a).unwrap()); // through the monitor: the pair is cached
    let cached = rt.state().cached(addr(&a)).expect("cached");
    let (rt2, a2, b2) = (rt.clone(), a.clone(), b.clone());
    std::thread::spawn(move || {
        assert!(LightweightTable::deflate_idle(&rt2, &a2));
        let other = rt2.attach().unwrap();
        other
            .enter(&*b2)
            .unwrap()
            .wait(Some(Duration::ZERO))
            .unwrap();
        other
            .enter(&*a2)
            .unwrap()
            .wait(Some(Duration::ZERO))
            .unwrap();
    })
    .join()
    .unwrap();
    assert_eq!(
        rt.state().slot(addr(&b)).get(),
        Some(cached),
        "reused for b"
    );
    assert_eq!(rt.state().cached(addr(&a)), None, "the shard changed");
    let g = me.enter(&*a).unwrap();
    assert_eq!(me.lock_count(&*a), 1);
    assert_eq!(rt.owner_of(&*a), Some(me.id()));
    assert_eq!(rt.owner_of(&*b), None, "b's monitor is not ours");
    drop(g);
    assert_ne!(rt.state().cached(addr(&a)), Some(cached));
    assert_eq!(rt.state().len(), 2);
    assert_eq!(rt.stats_snapshot().live_monitors, 2);
}

/// `lightweight-table`, the contended exit's one cached look-up (`owned_cached`): a
/// thread whose cache holds `h`'s monitor while another thread owns it is refused
/// (`IllegalMonitorState`), and the owner's exit through its own cached pair releases
/// it; the monitor stays installed (`OnRequest`) and the next owner's exit works too.
#[test]
fn table_cached_exit_only_for_the_owner() {
    let rt = hosted::<LightweightTable>(Config {
        deflation: DeflationPolicy::OnRequest,
        ..Config::default()
    });
    let h = MarkWord::new(HOST);
    let me = rt.attach().unwrap();
    me.enter(&h).unwrap().wait(Some(Duration::ZERO)).unwrap();
    drop(me.enter(&h).unwrap()); // through the monitor: the pair is cached
    let idx = rt.state().cached(addr(&h)).expect("cached");
    let held = std::sync::Barrier::new(2);
    std::thread::scope(|s| {
        s.spawn(|| {
            let other = rt.attach().unwrap();
            other.monitor_enter(&h).unwrap();
            assert!(rt.state().cached(addr(&h)).is_some(), "its own pair");
            held.wait();
            held.wait();
            other.monitor_exit(&h).unwrap();
            assert_eq!(other.lock_count(&h), 0);
        });
        held.wait();
        assert_eq!(rt.state().cached(addr(&h)), Some(idx), "still installed");
        assert_eq!(me.monitor_exit(&h), Err(MonitorError::IllegalMonitorState));
        assert_ne!(rt.owner_of(&h), Some(me.id()));
        held.wait();
    });
    assert_eq!(rt.owner_of(&h), None);
    let g = me.enter(&h).unwrap();
    assert_eq!(rt.owner_of(&h), Some(me.id()));
    drop(g);
    assert_eq!(rt.owner_of(&h), None);
    assert_eq!(h.raw() & LOCK_BITS, MONITOR);
}

/// `lightweight-table`, the per-thread cache against a stale entry:
/// this thread caches the monitor of the object at an address; the object is dropped
/// without `reclaim` (its entry stays, stale, and no shard change tells the cache), a new
/// object lives there and another thread inflates it, replacing the stale entry. This
/// thread's next enter must take the new monitor, not its cached pair.
#[test]
fn table_cache_refuses_a_replaced_stale_entry() {
    let rt = hosted::<LightweightTable>(Config {
        deflation: DeflationPolicy::OnRequest,
        ..Config::default()
    });
    let mut h = Box::new(MarkWord::default());
    let me = rt.attach().unwrap();
    me.enter(&*h).unwrap().wait(Some(Duration::ZERO)).unwrap();
    drop(me.enter(&*h).unwrap()); // through the monitor: the pair is cached
    let old = rt.state().cached(addr(&h)).expect("cached");
    *h = MarkWord::default(); // dropped without `reclaim`
    assert_eq!(
        rt.state().cached(addr(&h)),
        Some(old),
        "nothing changed in the table"
    );
    let hr: &MarkWord = &h;
    std::thread::scope(|s| {
        s.spawn(|| {
            let other = rt.attach().unwrap();
            other.enter(hr).unwrap().wait(Some(Duration::ZERO)).unwrap();
        });
    });
    assert_ne!(
        rt.state().slot(addr(&h)).get(),
        Some(old),
        "the entry replaced"
    );
    assert_eq!(rt.state().cached(addr(&h)), None, "the shard changed");
    let g = me.enter(&*h).unwrap();
    assert_eq!(me.lock_count(&*h), 1);
    assert_eq!(rt.owner_of(&*h), Some(me.id()));
    drop(g);
    assert_eq!(rt.state().len(), 1);
    assert_eq!(
        rt.stats_snapshot().live_monitors,
        1,
        "the stale monitor given back"
    );
}

/// A, B, A: the second A is not adjacent to the first, so the owner inflates A.
#[test]
fn non_adjacent_recursion_inflates() {
    let rt = rt_with(DeflationPolicy::Never);
    let me = rt.attach().unwrap();
    let (a, b) = (MarkWord::new(HOST), MarkWord::default());
    let ga = me.enter(&a).unwrap();
    let gb = me.enter(&b).unwrap();
    let ga2 = me.enter(&a).unwrap();
    assert_eq!(a.raw() & LOCK_BITS, MONITOR);
    assert_eq!(a.raw() & MARK_HOST_BITS, HOST & MARK_HOST_BITS);
    assert_eq!(me.lock_count(&a), 2);
    assert_eq!(
        Lightweight::locked_objects(me.context()),
        vec![&b as *const _]
    );
    assert_eq!(rt.stats_snapshot().inflations_recursion, 1);
    drop((ga2, gb, ga));
    assert_eq!(rt.owner_of(&a), None);
}

/// Unstructured exit: A, B, exit A, exit B; B's entry slides down.
#[test]
fn out_of_order_exit_keeps_fast_locks() {
    let rt = hosted::<Lightweight>(Config::default());
    let (a, b) = (MarkWord::default(), MarkWord::default());
    let me = rt.attach().unwrap();
    me.monitor_enter(&a).unwrap();
    me.monitor_enter(&b).unwrap();
    me.monitor_exit(&a).unwrap();
    assert_eq!(a.raw(), FAST_UNLOCKED);
    assert_eq!(b.raw(), FAST_LOCKED);
    assert_eq!(
        Lightweight::locked_objects(me.context()),
        vec![&b as *const _]
    );
    me.monitor_exit(&b).unwrap();
    assert_eq!(b.raw(), FAST_UNLOCKED);
    assert_eq!(rt.stats_snapshot().inflations(), 0);
}

/// Capacity 8, as HotSpot's `LockStack`; the 9th distinct object goes through a monitor.
#[test]
fn ninth_object_is_inflated() {
    let rt = rt_with(DeflationPolicy::Never);
    let me = rt.attach().unwrap();
    let hs: Vec<MarkWord> = (0..9).map(|_| MarkWord::default()).collect();
    let gs: Vec<_> = hs.iter().map(|h| me.enter(h).unwrap()).collect();
    assert!(hs[..8].iter().all(|h| h.raw() == FAST_LOCKED));
    assert_eq!(hs[8].raw() & LOCK_BITS, MONITOR);
    assert_eq!(Lightweight::locked_objects(me.context()).len(), 8);
    assert!(hs.iter().all(|h| rt.owner_of(h) == Some(me.id())));
    drop(gs);
    assert!(hs[..8].iter().all(|h| h.raw() == FAST_UNLOCKED));
}

/// Seed 001's anonymous owner: the contender inflates a fast-locked object and records
/// ANONYMOUS_OWNER; the owner query still finds the real owner (by its lock stack); the
/// owner fixes the monitor at exit and hands over. Eager deflation then gives it back.
#[test]
fn contender_inflates_with_anonymous_owner() {
    let rt = hosted::<Lightweight>(Config::default());
    let h = MarkWord::new(HOST);
    let me = rt.attach().unwrap();
    let g1 = me.enter(&h).unwrap();
    let g2 = me.enter(&h).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            let other = rt.attach().unwrap();
            let g = other.enter(&h).unwrap();
            assert_eq!(other.lock_count(&h), 1);
            drop(g);
        });
        while h.raw() & LOCK_BITS != MONITOR {
            std::thread::yield_now();
        }
        let m = rt.monitors().get(mark::index_of(h.raw()));
        assert!(m.is_anonymous());
        assert_eq!(rt.owner_of(&h), Some(me.id()), "found on the lock stack");
        assert_eq!(me.lock_count(&h), 2, "the run is the count");
        drop(g2);
        assert!(m.is_anonymous(), "a recursive exit only pops");
        drop(g1);
    });
    let s = rt.stats_snapshot();
    assert_eq!(
        (s.inflations_contention, s.deflations, s.live_monitors),
        (1, 1, 0)
    );
    assert_eq!(h.raw(), HOST | FAST_UNLOCKED);
}

/// HotSpot's quick_notify: notify on a fast-locked object does not inflate; wait does.
#[test]
fn notify_on_fast_lock_is_free_wait_inflates() {
    let rt = hosted::<Lightweight>(Config::default());
    let me = rt.attach().unwrap();
    let h = MarkWord::default();
    let g = me.enter(&h).unwrap();
    g.notify().unwrap();
    g.notify_all().unwrap();
    assert_eq!(h.raw(), FAST_LOCKED);
    assert_eq!(g.wait(Some(Duration::ZERO)).unwrap(), WaitOutcome::TimedOut);
    assert_eq!(h.raw() & LOCK_BITS, MONITOR);
    assert_eq!(rt.stats_snapshot().inflations_wait_notify, 1);
    drop(g);
    assert_eq!(h.raw(), FAST_UNLOCKED, "deflated at exit");
}

/// The policies: Never keeps the monitor; AtExit{keep} keeps up to `keep`; OnRequest
/// deflates only through `deflate_idle`.
#[test]
fn deflation_policies() {
    let inflate = |rt: &std::sync::Arc<Runtime<Lightweight>>, h: &MarkWord| {
        let me = rt.attach().unwrap();
        me.enter(h).unwrap().wait(Some(Duration::ZERO)).unwrap();
    };
    let rt = rt_with(DeflationPolicy::Never);
    let h = MarkWord::default();
    inflate(&rt, &h);
    assert_eq!(rt.stats_snapshot().live_monitors, 1);
    assert!(
        Lightweight::deflate_idle(&rt, &h),
        "on request, whatever the policy"
    );
    assert_eq!(rt.stats_snapshot().live_monitors, 0);

    let rt = rt_with(DeflationPolicy::AtExit { keep: 1 });
    let hs = [MarkWord::default(), MarkWord::default()];
    let me = rt.attach().unwrap();
    let g0 = me.enter(&hs[0]).unwrap();
    g0.wait(Some(Duration::ZERO)).unwrap();
    let g1 = me.enter(&hs[1]).unwrap();
    g1.wait(Some(Duration::ZERO)).unwrap();
    drop(g1); // 2 live > keep 1: deflated
    drop(g0); // 1 live, not above keep: stays
    let s = rt.stats_snapshot();
    assert_eq!((s.live_monitors, s.deflations), (1, 1));
    assert_eq!(hs[0].raw() & LOCK_BITS, MONITOR);

    let rt = rt_with(DeflationPolicy::OnRequest);
    let h = MarkWord::default();
    inflate(&rt, &h);
    assert_eq!(rt.stats_snapshot().live_monitors, 1);
    let me = rt.attach().unwrap();
    let g = me.enter(&h).unwrap();
    assert!(!Lightweight::deflate_idle(&rt, &h), "owned: not idle");
    drop(g);
    assert!(Lightweight::deflate_idle(&rt, &h));
    assert_eq!(h.raw(), FAST_UNLOCKED);
}

/// GC hook: after the host moved an object (here: a second header holding the same word,
/// stood in while the thread is stopped between calls), `relocate` lets the owner exit it.
#[test]
fn relocate_rewrites_lock_stacks() {
    let rt = hosted::<Lightweight>(Config::default());
    let old = MarkWord::new(HOST);
    let new = MarkWord::new(HOST);
    let me = rt.attach().unwrap();
    me.monitor_enter(&old).unwrap();
    new.0.store(old.raw(), Ordering::Relaxed); // the GC copies the word verbatim
                                               // SAFETY: a test's safepoint: no other thread is inside objmon, and the word was
                                               // copied verbatim.
    unsafe { rt.relocate(&old, &new) };
    assert_eq!(
        Lightweight::locked_objects(me.context()),
        vec![&new as *const _]
    );
    assert_eq!(rt.owner_of(&new), Some(me.id()));
    // SAFETY: `me` is this thread's handle; the move was reported with `relocate`.
    assert_eq!(unsafe { P::exit(&rt, me.context(), &new) }, Ok(()));
    assert_eq!(new.raw(), HOST | FAST_UNLOCKED);
    type P = Lightweight;
}

/// The hash goes into bits 62..32 in every state and stays there through fast-locking,
/// inflation, deflation on request and relocation; host bits never change.
#[test]
fn hash_in_mark_word_survives_everything() {
    for policy in [DeflationPolicy::OnRequest, DeflationPolicy::default()] {
        let rt = rt_with(policy);
        let h = MarkWord::new(HOST);
        let me = rt.attach().unwrap();
        let g = me.enter(&h).unwrap();
        let v = me.identity_hash(&h).unwrap();
        assert_eq!(
            h.raw(),
            HOST | u64::from(v) << 32 | FAST_LOCKED,
            "fast-locked, hash in place"
        );
        g.wait(Some(Duration::ZERO)).unwrap();
        assert_eq!(h.raw() & LOCK_BITS, MONITOR);
        assert_eq!(mark::hash_of(h.raw()), v);
        drop(g);
        if policy == DeflationPolicy::OnRequest {
            assert!(Lightweight::deflate_idle(&rt, &h));
        }
        assert_eq!(
            h.raw(),
            HOST | u64::from(v) << 32 | FAST_UNLOCKED,
            "deflated, hash kept"
        );
        assert_eq!(h.host_bits(), HOST & MARK_HOST_BITS);
        assert_eq!(rt.stats_snapshot().inflations_identity_hash, 0);
        // The GC moves the (locked) object: the hash moves with the word.
        me.monitor_enter(&h).unwrap();
        let new = MarkWord::default();
        new.0.store(h.raw(), Ordering::Relaxed);
        // SAFETY: a test's safepoint: no other thread is inside objmon, and the word was
        // copied verbatim.
        unsafe { rt.relocate(&h, &new) };
        assert_eq!(me.identity_hash(&new), Ok(v));
        assert_eq!(rt.peek_identity_hash(&new), Some(v));
        // SAFETY: `me` is this thread's handle; the move was reported with `relocate`.
        assert_eq!(
            unsafe { Lightweight::exit(&rt, me.context(), &new) },
            Ok(())
        );
        assert_eq!(rt.peek_identity_hash(&new), Some(v));
    }
}
