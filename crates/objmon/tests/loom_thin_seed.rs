//! Loom models of `thin-seed`'s inflated enter (issue 13 item 4): like `thin`'s, it now goes
//! straight from `enter_slow` to the monitor (`ThinLocks::enter_fat`: `try_enter`, the
//! monitor's bounded spin, then the suspend), `RUNNING` except around the enter that may
//! suspend; before, it was `BLOCKED` (and unblocked inside the critical section) around every
//! enter of an inflated lock. The race that changed: a hasher of a word the entering thread
//! holds once (by seed 000 §2.3.1's CAS: no record, unlike `thin`) must wait while that
//! thread runs or spins, and may inflate the word for it only once it is `BLOCKED`.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p objmon --release
//! --test loom_thin_seed`.
#![cfg(loom)]

mod common;

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use objmon::protocol::thin::ThinSeed;
use objmon::vm::{Config, LockWord, Runtime, SystemLockConfig, SystemLockVariant};

/// A runtime whose monitors spin once (so that the models cover the `RUNNING` spin and the
/// `BLOCKED` suspend) with room for two monitors.
fn config() -> Config {
    Config {
        max_threads: 4,
        monitor_capacity: 2,
        system_lock: SystemLockConfig {
            variant: SystemLockVariant::Figure7,
            spin_limit: 1,
            spin_yields: 0,
            fair_handoff: None,
        },
        ..Config::default()
    }
}

/// The main thread holds `y` (inflated beforehand) and hashes `x`, which A holds once (the
/// seed's CAS) while it enters `y`: A fails the seed's CAS on `y`'s inflated word, spins on
/// the monitor `RUNNING` (the hasher must wait: A may unlock `x` with §2.3.2's load / compare
/// / store at any moment), then suspends `BLOCKED`, when the hasher may inflate `x` for it;
/// the main thread then releases `y`. A's exit of `x` goes through the seed's store or the
/// monitor inflated for it; the hash stays `x`'s; nothing is left held.
#[test]
fn thin_seed_suspending_inflated_enter_vs_hasher() {
    let mut b = common::builder(3);
    b.max_branches = 1_000_000;
    b.check(|| {
        let rt = Runtime::<ThinSeed>::new(config());
        let x = Arc::new(LockWord::new(0x11));
        let y = Arc::new(LockWord::new(0x22));
        let me = rt.attach().unwrap();
        let gy = me.enter(&y).unwrap();
        gy.notify().unwrap(); // inflates `y`, which we keep
        let x_held = Arc::new(AtomicBool::new(false));
        let (rt2, x2, y2, held2) = (rt.clone(), x.clone(), y.clone(), x_held.clone());
        let a = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            let gx = me.enter(&x2).unwrap();
            held2.store(true, Ordering::Release);
            drop(me.enter(&y2).unwrap());
            assert_eq!(me.lock_count(&x2), 1);
            drop(gx);
        });
        while !x_held.load(Ordering::Acquire) {
            thread::yield_now();
        }
        let v = me.identity_hash(&x).unwrap();
        drop(gy);
        a.join().unwrap();
        assert_eq!(me.identity_hash(&x), Ok(v));
        assert_eq!(rt.owner_of(&x), None);
        assert_eq!(rt.owner_of(&y), None);
        assert_eq!(x.host_bits(), 0x11);
        drop(me.enter(&x).unwrap());
    });
}

/// Two threads take the inflated `y` in turn (each fails the seed's CAS on the inflated word,
/// then `try_enter`, spin or suspend) while A also holds `x` once and the main thread hashes
/// `x`: mutual exclusion on `y`, the exits work, the hash stays, nothing is left held.
#[test]
fn thin_seed_inflated_enter_vs_hasher_and_contender() {
    // Four threads: bound 1, as `loom_thin_fastpath`'s model of `thin`.
    let mut b = common::builder(1);
    b.max_branches = 1_000_000;
    b.check(|| {
        let rt = Runtime::<ThinSeed>::new(config());
        let x = Arc::new(LockWord::new(0x11));
        let y = Arc::new(LockWord::new(0x22));
        let inside = Arc::new(AtomicBool::new(false));
        {
            let me = rt.attach().unwrap();
            let g = me.enter(&y).unwrap();
            g.notify().unwrap(); // inflates `y`
        }
        let x_held = Arc::new(AtomicBool::new(false));
        let (rt2, x2, y2, inside2, held2) = (
            rt.clone(),
            x.clone(),
            y.clone(),
            inside.clone(),
            x_held.clone(),
        );
        let a = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            let gx = me.enter(&x2).unwrap();
            held2.store(true, Ordering::Release);
            let gy = me.enter(&y2).unwrap();
            assert!(!inside2.swap(true, Ordering::Relaxed), "mutual exclusion");
            inside2.store(false, Ordering::Relaxed);
            drop(gy);
            assert_eq!(me.lock_count(&x2), 1);
            drop(gx);
        });
        let (rt3, y3, inside3) = (rt.clone(), y.clone(), inside.clone());
        let b = thread::spawn(move || {
            let me = rt3.attach().unwrap();
            let g = me.enter(&y3).unwrap();
            assert!(!inside3.swap(true, Ordering::Relaxed), "mutual exclusion");
            inside3.store(false, Ordering::Relaxed);
            drop(g);
        });
        while !x_held.load(Ordering::Acquire) {
            thread::yield_now();
        }
        let me = rt.attach().unwrap();
        let v = me.identity_hash(&x).unwrap();
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(me.identity_hash(&x), Ok(v));
        assert_eq!(rt.owner_of(&x), None);
        assert_eq!(rt.owner_of(&y), None);
        assert_eq!(x.host_bits(), 0x11);
        assert_eq!(y.host_bits(), 0x22);
        drop(me.enter(&x).unwrap());
    });
}
