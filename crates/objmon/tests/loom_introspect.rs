//! Loom models of the introspection races (`src/introspect.rs`): the deadlock detector's
//! confirmation against threads that keep locking, and the thread dump's blocked-on owner.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p objmon --release
//! --test loom_introspect`.
#![cfg(loom)]

mod common;

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use objmon::vm::{BlockKind, Config, Fat, ObjectRef, Runtime};

fn config() -> Config {
    common::config(4)
}

/// Two threads take A and B in opposite orders but never hold both in the opposite order:
/// T1 nests B inside A, T2 takes B, releases it, then takes A, twice each. The wait-for edges
/// T1 → T2 (T1 blocked on B held by T2) and T2 → T1 (T2 blocked on A held by T1) both occur,
/// at different times; without the second snapshot a detector can pair them into a cycle.
/// No deadlock exists, so the detector running alongside must report none.
#[test]
fn edges_from_different_moments_are_not_a_deadlock() {
    common::builder(2).check(|| {
        let rt = Runtime::<Fat>::new(config());
        let (a, b) = (
            Arc::new(objmon::vm::LockWord::default()),
            Arc::new(objmon::vm::LockWord::default()),
        );
        let t1 = {
            let (rt, a, b) = (rt.clone(), a.clone(), b.clone());
            thread::spawn(move || {
                let me = rt.attach().unwrap();
                for _ in 0..2 {
                    let ga = me.enter(&a).unwrap();
                    drop(me.enter(&b).unwrap());
                    drop(ga);
                }
            })
        };
        let t2 = {
            let (rt, a, b) = (rt.clone(), a.clone(), b.clone());
            thread::spawn(move || {
                let me = rt.attach().unwrap();
                for _ in 0..2 {
                    drop(me.enter(&b).unwrap());
                    drop(me.enter(&a).unwrap());
                }
            })
        };
        let found = rt.find_deadlocks();
        assert!(found.is_empty(), "false deadlock: {}", found[0]);
        t1.join().unwrap();
        t2.join().unwrap();
    });
}

fn wait_for(flag: &AtomicBool) {
    while !flag.load(Ordering::SeqCst) {
        thread::yield_now();
    }
}

/// The same race, scripted so that loom needs few preemptions to reach it (the unscripted
/// model above needs three): both threads are in blocking episodes at the first snapshot —
/// T1 blocked on B (just released by T2, T1 not yet woken), T2 blocked on A held by T1 — and
/// by the owner reads the edges are T1 → T2 (T2 took B again) and T2 → T1 (T1 took A again)
/// although neither thread is in its first-snapshot episode any more. No deadlock exists:
/// T2 releases B once the detector is done.
#[test]
fn scripted_stale_cycle_is_not_reported() {
    common::builder(2).check(|| {
        let rt = Runtime::<Fat>::new(config());
        let (a, b) = (
            Arc::new(objmon::vm::LockWord::default()),
            Arc::new(objmon::vm::LockWord::default()),
        );
        let flags: Arc<[AtomicBool; 3]> = Arc::new(Default::default());
        let (t2_holds_b, t2_done_a, detector_done) = (0, 1, 2);
        let t1 = {
            let (rt, a, b, f) = (rt.clone(), a.clone(), b.clone(), flags.clone());
            thread::spawn(move || {
                let me = rt.attach().unwrap();
                let ga = me.enter(&a).unwrap();
                wait_for(&f[t2_holds_b]);
                drop(me.enter(&b).unwrap()); // blocks until T2 releases B
                drop(ga);
                wait_for(&f[t2_done_a]);
                let ga = me.enter(&a).unwrap();
                drop(me.enter(&b).unwrap()); // blocks until the detector is done
                drop(ga);
            })
        };
        let t2 = {
            let (rt, a, b, f) = (rt.clone(), a.clone(), b.clone(), flags.clone());
            thread::spawn(move || {
                let me = rt.attach().unwrap();
                let gb = me.enter(&b).unwrap();
                f[t2_holds_b].store(true, Ordering::SeqCst);
                thread::yield_now();
                drop(gb);
                drop(me.enter(&a).unwrap()); // blocks while T1 holds A
                f[t2_done_a].store(true, Ordering::SeqCst);
                let gb = me.enter(&b).unwrap();
                wait_for(&f[detector_done]);
                drop(gb);
            })
        };
        let found = rt.find_deadlocks();
        flags[detector_done].store(true, Ordering::SeqCst);
        assert!(found.is_empty(), "false deadlock: {}", found[0]);
        t1.join().unwrap();
        t2.join().unwrap();
    });
}

/// T1 holds A; T2 blocks on it; a third thread dumps while T1 releases A and T2 takes it.
/// The dump shows T2 either not blocked, or blocked on A behind T1 or behind nobody — never
/// behind T2 itself (the owner read after T2 got A), and a blocked T2 owns nothing.
#[test]
fn dump_never_shows_a_wrong_owner() {
    common::builder(3).check(|| {
        let rt = Runtime::<Fat>::new(config());
        let a = Arc::new(objmon::vm::LockWord::default());
        let me = rt.attach().unwrap();
        let g = me.enter(&a).unwrap();
        let t2 = {
            let (rt, a) = (rt.clone(), a.clone());
            thread::spawn(move || {
                let me = rt.attach().unwrap();
                drop(me.enter(&a).unwrap());
                me.id()
            })
        };
        let dumper = {
            let rt = rt.clone();
            thread::spawn(move || rt.thread_dump())
        };
        drop(g);
        let id2 = t2.join().unwrap();
        let d = dumper.join().unwrap();
        for t in &d.threads {
            if let Some(b) = t.blocked_on {
                assert_eq!(t.id, id2, "{d}");
                assert_eq!(
                    (b.kind, b.object),
                    (BlockKind::Enter, ObjectRef::of(&*a)),
                    "{d}"
                );
                assert!(b.owner.is_none() || b.owner == Some(me.id()), "{d}");
                assert!(
                    t.owned.is_empty(),
                    "a blocked thread owns nothing here: {d}"
                );
            }
        }
    });
}
