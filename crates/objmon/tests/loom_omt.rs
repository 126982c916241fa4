//! Loom models of `lightweight-table`'s per-thread cache of (address, monitor) pairs
//! (`protocol/omt.rs`, "The per-thread cache"): a thread's cached pair against the deflation of
//! that monitor, its reuse for another object and a new inflation of the first object; against
//! eager deflation; and against a stale entry (an object dropped without `reclaim`) replaced by a
//! new inflation at the same address — the cached pair must never be used once the entry it copies
//! has changed.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p objmon --release
//! --test loom_omt`.
#![cfg(loom)]

mod common;

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use objmon::vm::{Config, DeflationPolicy, LightweightTable, MarkWord, Runtime, WaitOutcome};
use std::time::Duration;

fn config(deflation: DeflationPolicy) -> Config {
    Config {
        deflation,
        ..common::config(3)
    }
}

/// Inflates `h` for `me`'s thread (wait needs a monitor) and leaves its monitor idle.
fn inflate_idle(rt: &std::sync::Arc<Runtime<LightweightTable>>, h: &MarkWord) {
    let me = rt.attach().unwrap();
    let g = me.enter(h).unwrap();
    assert_eq!(g.wait(Some(Duration::ZERO)).unwrap(), WaitOutcome::TimedOut);
}

/// `a` has an idle monitor `m`. The enterer enters `a` twice: the first enter (through the
/// monitor) caches (`a`, `m`), the second may use the pair. Meanwhile the main thread deflates
/// `a` on request, inflates `b` — which gets `m` back (the free list is last in, first out)
/// — and holds it, checking that it owns `b`; then inflates `a` again, with another monitor.
/// Wherever the enterer's second look-up falls, it owns `a` exactly (owner query, count):
/// a pair still taken after the deflation would have it enter `b`'s monitor (blocking on the
/// main thread's hold, or owning `b`), and its owner query of `a` would not name it.
#[test]
fn cached_pair_vs_deflation_and_reuse() {
    common::builder(2).check(|| {
        let rt = common::hosted::<LightweightTable>(config(DeflationPolicy::OnRequest));
        let (a, b) = (Arc::new(MarkWord::default()), Arc::new(MarkWord::default()));
        inflate_idle(&rt, &a);
        let (rt2, a2, b2) = (rt.clone(), a.clone(), b.clone());
        let enterer = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            drop(me.enter(&a2).unwrap());
            let g = me.enter(&a2).unwrap();
            assert_eq!(me.lock_count(&a2), 1);
            assert_eq!(rt2.owner_of(&a2), Some(me.id()));
            // Not `b`'s monitor (which a stale pair would name once `b` has it).
            assert_ne!(rt2.owner_of(&b2), Some(me.id()));
            drop(g);
        });
        let deflated = LightweightTable::deflate_idle(&rt, &a);
        {
            let me = rt.attach().unwrap();
            let g = me.enter(&b).unwrap();
            assert_eq!(g.wait(Some(Duration::ZERO)).unwrap(), WaitOutcome::TimedOut);
            assert_eq!(rt.owner_of(&b), Some(me.id()));
            assert_eq!(me.lock_count(&b), 1);
            drop(g);
        }
        inflate_idle(&rt, &a);
        enterer.join().unwrap();
        assert_eq!(rt.owner_of(&a), None);
        assert_eq!(rt.owner_of(&b), None);
        let s = rt.stats_snapshot();
        assert_eq!(s.deflations, u64::from(deflated));
        // Every live monitor is an entry: nothing leaked, nothing freed twice.
        assert_eq!(rt.state().len(), s.live_monitors);
        assert_eq!(a.raw() & 0b11, 0b10, "a's monitor stays installed");
    });
}

/// The enterer's cached pair against a deflation and an immediate re-inflation of the same
/// object by a contender (the eager policy: the last owner out deflates). Two threads take
/// turns on `a`; each re-enter may look `a` up in its cache. Mutual exclusion, exact counts,
/// and the books balance.
#[test]
fn cached_pair_vs_eager_deflation() {
    common::builder(2).check(|| {
        let rt = common::hosted::<LightweightTable>(config(DeflationPolicy::AtExit { keep: 0 }));
        let a = Arc::new(MarkWord::default());
        let inside = Arc::new(AtomicBool::new(false));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let (rt, a, inside) = (rt.clone(), a.clone(), inside.clone());
                thread::spawn(move || {
                    let me = rt.attach().unwrap();
                    for _ in 0..2 {
                        let g = me.enter(&a).unwrap();
                        assert!(!inside.swap(true, Ordering::Relaxed), "mutual exclusion");
                        assert_eq!(me.lock_count(&a), 1);
                        inside.store(false, Ordering::Relaxed);
                        drop(g);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(rt.owner_of(&a), None);
        let s = rt.stats_snapshot();
        assert_eq!(s.live_monitors, 0, "deflated after contention: {s:?}");
        assert_eq!(s.inflations(), s.deflations);
        assert!(rt.state().is_empty());
    });
}

/// The cached pair against a stale entry and the inflation that replaces
/// it: the enterer caches the monitor of the object at an address and lets go of it; the
/// object is dropped without `reclaim` (its entry stays: nothing in the table changes, so the
/// pair stays valid) and a new object lives at the address. The main thread inflates the new
/// object while the enterer enters it. An inflation bumps the shard's version *before* its
/// swap into the monitor state: an enterer that reads the new monitor state must see the bump
/// and refuse its pair (bumped only at the entry's change, after the swap, it would enter the
/// stale monitor, which the inflation gives back, and hold the new object through a monitor
/// that the table does not name).
#[test]
fn cached_pair_vs_stale_entry_replacement() {
    common::builder(2).check(|| {
        let rt = common::hosted::<LightweightTable>(config(DeflationPolicy::OnRequest));
        let mut slot = std::sync::Arc::new(MarkWord::default());
        inflate_idle(&rt, &slot);
        let ready = Arc::new(AtomicBool::new(false));
        let handoff = Arc::new(loom::sync::Mutex::new(None::<std::sync::Arc<MarkWord>>));
        let (rt2, obj2, ready2, handoff2) =
            (rt.clone(), slot.clone(), ready.clone(), handoff.clone());
        let enterer = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            drop(me.enter(&obj2).unwrap()); // through the monitor: the pair is cached
            drop(obj2);
            ready2.store(true, Ordering::Release);
            let obj = loop {
                if let Some(o) = handoff2.lock().unwrap().take() {
                    break o;
                }
                thread::yield_now();
            };
            let g = me.enter(&obj).unwrap();
            assert_eq!(me.lock_count(&obj), 1);
            assert_eq!(rt2.owner_of(&obj), Some(me.id()));
            drop(g);
        });
        while !ready.load(Ordering::Acquire) {
            thread::yield_now();
        }
        // Dropped without `reclaim`; the new object is at the same address.
        *std::sync::Arc::get_mut(&mut slot).unwrap() = MarkWord::default();
        *handoff.lock().unwrap() = Some(slot.clone());
        inflate_idle(&rt, &slot);
        enterer.join().unwrap();
        assert_eq!(rt.owner_of(&slot), None);
        // One entry, the new object's; the stale monitor was given back.
        assert_eq!(rt.state().len(), 1);
        assert_eq!(rt.stats_snapshot().live_monitors, 1);
    });
}
