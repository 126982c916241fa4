//! Unit tests of `tasuki`: the flat lock's footprint, inflation by contention and by wait,
//! the deflation rule with spinners and waiters, mode changes under contention, and the hash
//! across deflation.

use super::*;
use crate::vm::Runtime;
use std::time::Duration;

/// The owner's flat lock, unlock and nesting touch only the lock word, like `thin`, and
/// leave both words' host bits alone.
#[test]
fn flat_lock_is_thin_and_keeps_host_bits() {
    let rt = Runtime::<Tasuki>::with_defaults();
    let me = rt.attach().unwrap();
    let h = TasukiHeader::new(0x5a, 0xa5);
    let gs: Vec<_> = (0..256).map(|_| me.enter(&h).unwrap()).collect();
    let w = h.lock_word().raw();
    assert_eq!(w >> 31, 0);
    assert_eq!((w & OWNER_MASK) >> OWNER_SHIFT, u32::from(me.id().get()));
    assert_eq!((w & COUNT_MASK) >> COUNT_SHIFT, 255);
    assert_eq!(h.raw_aux(), 0xa5, "no monitor, no FLC");
    drop(gs);
    assert_eq!(h.lock_word().raw(), 0x5a);
    assert_eq!(rt.stats_snapshot().live_monitors, 0);
}

/// \[19\]: the contender sets FLC and waits suspended in the monitor's wait set; the owner
/// never sees its lock field written; the contender inflates once it wins, and its last
/// exit deflates (nobody waits).
#[test]
fn contender_suspends_with_flc_then_inflates_and_deflates() {
    let rt = Runtime::<Tasuki>::with_defaults();
    let h = TasukiHeader::new(0x3c, 0);
    let me = rt.attach().unwrap();
    let g = me.enter(&h).unwrap();
    let before = h.lock_word().raw();
    std::thread::scope(|s| {
        s.spawn(|| {
            let other = rt.attach().unwrap();
            drop(other.enter(&h).unwrap());
        });
        let t0 = std::time::Instant::now();
        let m = loop {
            if let Some(i) = index_in(h.raw_aux()) {
                let m = rt.monitors().get(i);
                if m.waiter_count() == 1 {
                    break m;
                }
            }
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "contender never waited"
            );
            std::thread::sleep(Duration::from_millis(1));
        };
        assert!(h.flc(), "the contender flags contention before it waits");
        assert_eq!(m.waiter_count(), 1, "suspended, not spinning");
        assert_eq!(
            h.lock_word().raw(),
            before,
            "the owner's lock word is untouched"
        );
        drop(g);
    });
    let s = rt.stats_snapshot();
    assert_eq!(s.inflations_contention, 1);
    assert_eq!(s.deflations, 1);
    assert!(!h.is_inflated() && !h.flc());
    assert_eq!(h.lock_word().raw(), 0x3c);
    // Flat again: the next lock is the one-CAS fast path.
    drop(me.enter(&h).unwrap());
    assert!(!h.is_inflated());
}

/// wait inflates (a flat lock has no wait set); the waiter's last exit deflates.
#[test]
fn wait_inflates_and_exit_deflates() {
    let rt = Runtime::<Tasuki>::with_defaults();
    let me = rt.attach().unwrap();
    let h = TasukiHeader::default();
    {
        let _a = me.enter(&h).unwrap();
        let b = me.enter(&h).unwrap();
        b.wait(Some(Duration::ZERO)).unwrap();
        assert!(h.is_inflated());
        assert_eq!(me.lock_count(&h), 2);
    }
    let s = rt.stats_snapshot();
    assert_eq!((s.inflations_wait_notify, s.deflations), (1, 1));
    assert!(!h.is_inflated());
    // The monitor stays attached in the aux word until the object dies.
    assert_eq!(s.live_monitors, 1);
    let mut h = h;
    rt.reclaim(&mut h);
    assert_eq!(rt.stats_snapshot().live_monitors, 0);
    assert_eq!(h.raw_aux(), 0);
}

/// A fat lock is not deflated while a contender spins on its monitor: a deflation then would
/// let the spinner find a flat word, set FLC and sleep, and the next owner re-inflate. A
/// contender counts itself at the monitor
/// (`Tasuki::announce`) before it spins there; here that announcement is made by hand,
/// so that the spinner's timing (it suspends after the system lock's spin) plays no part.
#[test]
fn no_deflation_while_a_contender_spins() {
    let rt = Runtime::<Tasuki>::with_defaults();
    let h = TasukiHeader::default();
    let me = rt.attach().unwrap();
    let g = me.enter(&h).unwrap();
    g.wait(Some(Duration::ZERO)).unwrap();
    assert!(h.is_inflated());
    let m = rt.monitors().get(index_in(h.raw_aux()).unwrap());
    // A contender on its way in: counted, spinning, not suspended.
    Tasuki::announce(m);
    drop(g);
    assert!(
        h.is_inflated(),
        "a contender spins: the owner's exit keeps the lock fat"
    );
    assert_eq!(rt.stats_snapshot().deflations, 0);
    // The contender gets the lock (its count ends there) and exits alone: deflation.
    m.remove_contention();
    drop(me.enter(&h).unwrap());
    assert!(!h.is_inflated(), "alone, the exit deflates");
    assert_eq!(rt.stats_snapshot().deflations, 1);
}

#[test]
fn no_deflation_with_waiters() {
    let rt = Runtime::<Tasuki>::with_defaults();
    let h = TasukiHeader::default();
    let ready = std::sync::Barrier::new(2);
    std::thread::scope(|s| {
        s.spawn(|| {
            let me = rt.attach().unwrap();
            let g = me.enter(&h).unwrap();
            ready.wait();
            g.wait(None).unwrap();
        });
        ready.wait();
        let me = rt.attach().unwrap();
        let g = me.enter(&h).unwrap(); // the waiter has released: it is in the wait set
        assert!(h.is_inflated());
        drop(g);
        assert!(h.is_inflated(), "a waiter is in the wait set: no deflation");
        let g = me.enter(&h).unwrap();
        g.notify().unwrap();
    });
    assert!(!h.is_inflated(), "the notified waiter's exit deflates");
}

/// Inflation, deflation and re-inflation racing for real: four threads lock two objects,
/// nested, sometimes waiting with a zero timeout or notifying (which inflate), so locks
/// keep changing mode under contention. Any lost update means two owners at once.
#[test]
fn mode_changes_under_contention_keep_mutual_exclusion() {
    use std::sync::atomic::{AtomicU64, Ordering as O};
    let rt = Runtime::<Tasuki>::with_defaults();
    let hs = [TasukiHeader::default(), TasukiHeader::default()];
    let counters = [AtomicU64::new(0), AtomicU64::new(0)];
    let iters = 20_000u64;
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (rt, hs, counters) = (&rt, &hs, &counters);
            s.spawn(move || {
                let me = rt.attach().unwrap();
                for i in 0..iters {
                    let k = ((i + t) % 2) as usize;
                    let g = me.enter(&hs[k]).unwrap();
                    let g2 = (i % 3 == 0).then(|| me.enter(&hs[k]).unwrap());
                    let c = counters[k].load(O::Relaxed);
                    std::hint::spin_loop();
                    counters[k].store(c + 1, O::Relaxed);
                    match i % 7 {
                        0 => drop(g.wait(Some(Duration::ZERO)).unwrap()),
                        1 => g.notify_all().unwrap(),
                        _ => {}
                    }
                    assert_eq!(me.lock_count(&hs[k]), 1 + u32::from(g2.is_some()));
                    drop(g2);
                    drop(g);
                }
            });
        }
    });
    assert_eq!(
        counters[0].load(O::Relaxed) + counters[1].load(O::Relaxed),
        4 * iters
    );
    assert_eq!(rt.owner_of(&hs[0]), None);
    assert_eq!(rt.owner_of(&hs[1]), None);
    let st = rt.stats_snapshot();
    assert!(st.deflations > 0 && st.inflations() > 0);
}

/// The hash lives in the object's monitor (named by the aux word), which deflation leaves
/// in place: inflate, deflate, re-inflate, the hash stays.
#[test]
fn hash_survives_deflation() {
    let rt = Runtime::<Tasuki>::with_defaults();
    let me = rt.attach().unwrap();
    let h = TasukiHeader::new(0x11, 0x22);
    let v = me.identity_hash(&h).unwrap();
    assert!(
        !h.is_inflated(),
        "hashing alone does not inflate the lock word"
    );
    for _ in 0..2 {
        let g = me.enter(&h).unwrap();
        g.wait(Some(Duration::ZERO)).unwrap();
        assert!(h.is_inflated());
        assert_eq!(me.identity_hash(&h), Ok(v));
        drop(g);
        assert!(!h.is_inflated(), "deflated at exit");
        assert_eq!(rt.peek_identity_hash(&h), Some(v));
    }
    assert_eq!((h.lock_word().host_bits(), h.aux_host_bits()), (0x11, 0x22));
    assert_eq!(rt.stats_snapshot().deflations, 2);
}
