//! Loom models of the identity hash against lock traffic, one per way a
//! protocol stores it: the CAS into a fast-locked word against the owner's unlocking CAS
//! (`lightweight`), inflate-to-hash against the owner's unlock (`stack`, INFLATING), the thin
//! lock's inflation, waiting and side table against the owner's plain-store unlock (`thin`), the hash
//! in the object's monitor against deflation (`tasuki`), the CAS into the host word against
//! locking (`cacao`), and hashing against bias revocation (`biased`).
//!
//! Every model checks the one promise: each call returns the same value, and it is still the
//! object's hash (peek, another call) when everybody is done; and that locking still works.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p objmon --release
//! --test loom_hash`. With `OBJMON_LOOM_SYMMETRIC=1` in the environment the models run as a
//! process without `membarrier` (`revoke.rs`: the owner's barrier is then nothing, the
//! symmetric fences must do): `.ci/run` runs the `thin_` models so too, where removing the
//! fence of `thin`'s nested unlock (`nested_look`) fails both parked-hash models. (The
//! biased model assumes barrier revocation, which that process does not have.)
#![cfg(loom)]

mod common;

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use objmon::protocol::biased::{BiasMode, Biasing, Kko};
use objmon::vm::{
    BiasConfig, Cacao, Config, DeflationPolicy, Lightweight, Protocol, Revocation, Runtime, Stack,
    Tasuki, Thin,
};
use std::time::Duration;

fn config() -> Config {
    Config {
        deflation: DeflationPolicy::AtExit { keep: 0 },
        ..common::config(3)
    }
}

/// Thread A locks, optionally waits (zero timeout: inflates where wait needs a monitor),
/// unlocks, then hashes (with `a_hashes_inside`: while it holds the lock, so that the owner's
/// own inflation-for-hash races with B); thread B hashes (and with `b_locks`, locks
/// afterwards). Both hashes agree with each other and with the object's hash at the end;
/// mutual exclusion holds; no lock is left held.
fn hash_vs_lock<P: Protocol>(bound: usize, a_waits: bool, b_locks: bool, a_hashes_inside: bool)
where
    P::Header: 'static,
{
    let mut b = common::builder(bound);
    // Large enough that a broken protocol fails on its assertion rather than on the path
    // length of an execution that spins after the breakage.
    b.max_branches = 1_000_000;
    b.check(move || {
        let rt = common::hosted::<P>(config());
        let h = Arc::new(P::Header::default());
        let inside = Arc::new(AtomicBool::new(false));
        let (rt2, h2, inside2) = (rt.clone(), h.clone(), inside.clone());
        let a = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            let g = me.enter(&h2).unwrap();
            assert!(!inside2.swap(true, Ordering::Relaxed), "two owners");
            if a_waits {
                g.wait(Some(Duration::ZERO)).unwrap();
            }
            let inner = a_hashes_inside.then(|| me.identity_hash(&h2).unwrap());
            assert_eq!(me.lock_count(&h2), 1, "hashing changed the count");
            inside2.store(false, Ordering::Relaxed);
            drop(g);
            let v = me.identity_hash(&h2).unwrap();
            assert!(inner.is_none() || inner == Some(v));
            v
        });
        let me = rt.attach().unwrap();
        let vb = me.identity_hash(&h).unwrap();
        if b_locks {
            let g = me.enter(&h).unwrap();
            assert!(!inside.swap(true, Ordering::Relaxed), "two owners");
            inside.store(false, Ordering::Relaxed);
            drop(g);
        }
        let va = a.join().unwrap();
        assert_eq!(va, vb, "{}: two hashes for one object", P::NAME);
        assert_eq!(rt.peek_identity_hash(&h), Some(va), "{}", P::NAME);
        assert_eq!(me.identity_hash(&h), Ok(va), "{}", P::NAME);
        assert_eq!(rt.owner_of(&h), None);
    });
}

/// The hash CAS into a fast-locked word against the owner's unlocking CAS: the owner's
/// compare-and-swap fails and its slow path unlocks with the hash in place.
#[test]
fn lightweight_hash_vs_fast_unlock() {
    hash_vs_lock::<Lightweight>(3, false, false, false);
}

/// The hasher finds the object stack-locked by the other thread and inflates it (INFLATING)
/// while the owner tries to unlock; the owner's exit then deflates, keeping the hash.
#[test]
fn stack_inflate_to_hash_vs_unlock() {
    hash_vs_lock::<Stack>(3, false, false, false);
}

/// The hasher CAS-inflates a free thin lock, or waits while the other thread holds it once
/// (its unlock may be the plain-store fast path); the owner then hashes and must find the
/// same value.
#[test]
fn thin_inflate_to_hash_vs_fast_unlock() {
    hash_vs_lock::<Thin>(3, false, true, false);
}

/// The owner hashes its own fast-locked object (one CAS into the held word) while the other
/// thread contends for it (anonymous-owner inflation) and hashes.
#[test]
fn lightweight_owner_hash_vs_contender() {
    hash_vs_lock::<Lightweight>(2, false, true, true);
}

/// The owner inflates its own stack-lock to hash it while the other thread hashes (and so may
/// inflate it with INFLATING) and then contends; the last exit deflates with the hash kept.
#[test]
fn stack_owner_inflates_for_hash_vs_contender() {
    hash_vs_lock::<Stack>(2, false, true, true);
}

/// The owner inflates its thin lock for the hash while the other thread hashes (waiting for
/// the owner, or finding the monitor) and then contends.
#[test]
fn thin_owner_inflates_for_hash_vs_contender() {
    hash_vs_lock::<Thin>(2, false, true, true);
}

/// The hash lives in the object's monitor while the lock inflates for wait and deflates at
/// exit.
#[test]
fn tasuki_hash_vs_deflation() {
    hash_vs_lock::<Tasuki>(2, true, false, false);
}

/// The host word's CAS against locking through the external table.
#[test]
fn cacao_hash_vs_lock() {
    hash_vs_lock::<Cacao>(3, false, true, false);
}

/// The hasher finds the object biased to the main thread, which keeps locking it through the
/// fast path: it revokes first (barrier revocation), then stores the hash; the object is never
/// biased again.
#[test]
fn biased_hash_revokes_first() {
    let mut b = common::builder(2);
    b.max_branches = 1_000_000;
    b.check(|| {
        let rt = Runtime::<Biasing<Kko>>::new(config());
        Biasing::<Kko>::configure(
            &rt,
            BiasConfig {
                revocation: Revocation::Membarrier,
                learn_limit: 1,
            },
        );
        let h = Arc::new(objmon::vm::BiasWord::default());
        let me = rt.attach().unwrap();
        drop(me.enter(&h).unwrap());
        assert_eq!(h.mode(), BiasMode::Biased);
        let count = Arc::new(AtomicUsize::new(0));
        let (rt2, h2) = (rt.clone(), h.clone());
        let hasher = thread::spawn(move || {
            let other = rt2.attach().unwrap();
            other.identity_hash(&h2).unwrap()
        });
        let g = me.enter(&h).unwrap();
        count.fetch_add(1, Ordering::Relaxed);
        drop(g);
        let v = hasher.join().unwrap();
        assert_eq!(me.identity_hash(&h), Ok(v));
        assert_eq!(rt.peek_identity_hash(&h), Some(v));
        assert_ne!(
            h.mode(),
            BiasMode::Biased,
            "a hashed object is not biasable"
        );
        drop(me.enter(&h).unwrap());
        assert_ne!(
            h.mode(),
            BiasMode::Biased,
            "a hashed object is not biasable"
        );
        assert_eq!(me.identity_hash(&h), Ok(v));
        assert_eq!(rt.owner_of(&h), None);
    });
}

/// `thin`'s side table: a hash parked while the main thread holds the lock
/// nested, against the owner's decrement to one level (which must settle it into a monitor:
/// the Dekker of `hash.rs`, entry-fence-word against store-fence-table) and its plain-store
/// unlock, while a third thread peeks. The hasher may also come before the first lock or
/// after the last unlock (it inflates) or while the lock is held once (it waits). Then the
/// value is moved, as safe Rust may move an unlocked header: the moved object keeps the
/// hash, the fresh one in its place has none.
#[test]
fn thin_parked_hash_vs_owner_decrement_and_move() {
    common::builder(3).check(|| {
        let rt = Runtime::<Thin>::new(config());
        let h = Arc::new(objmon::vm::LockWord::default());
        let me = rt.attach().unwrap();
        let g = me.enter(&h).unwrap();
        let g2 = me.enter(&h).unwrap();
        let (rt2, h2) = (rt.clone(), h.clone());
        let hasher = thread::spawn(move || rt2.attach().unwrap().identity_hash(&h2).unwrap());
        let (rt3, h3) = (rt.clone(), h.clone());
        let peeker = thread::spawn(move || rt3.peek_identity_hash(&h3));
        drop(g2);
        drop(g);
        let v = hasher.join().unwrap();
        let peeked = peeker.join().unwrap();
        assert!(
            peeked.is_none() || peeked == Some(v),
            "peek saw another hash"
        );
        let moved = common::hash_follows_the_move(&rt, h, v);
        assert_eq!(me.identity_hash(&moved), Ok(v));
        assert_eq!(rt.owner_of(&moved), None);
    });
}

/// `thin`'s side table with the lock held three deep: the hash may be parked before either
/// nested unlock. The first (to two levels) finds the owner's `look` mark set and keeps it
/// (its entry is still there: `nested_look` clears the mark only with no entry of the owner
/// left); the second (to one level) settles it. The moved object keeps the hash.
#[test]
fn thin_parked_hash_vs_two_nested_unlocks() {
    common::builder(2).check(|| {
        let rt = Runtime::<Thin>::new(config());
        let h = Arc::new(objmon::vm::LockWord::default());
        let me = rt.attach().unwrap();
        let g = me.enter(&h).unwrap();
        let g2 = me.enter(&h).unwrap();
        let g3 = me.enter(&h).unwrap();
        let (rt2, h2) = (rt.clone(), h.clone());
        let hasher = thread::spawn(move || rt2.attach().unwrap().identity_hash(&h2).unwrap());
        drop(g3);
        drop(g2);
        drop(g);
        let v = hasher.join().unwrap();
        common::hash_follows_the_move(&rt, h, v);
    });
}

/// `thin`: the hasher of a lock held once by a thread that is blocked in objmon (spinning for
/// a lock the main thread holds) claims that thread's state and inflates for it, while the
/// main thread lets the owner go on; the owner, leaving its blocked state only after the
/// hasher is done, finds its lock fat and exits the monitor. Every hash agrees.
#[test]
fn thin_hash_inflates_for_a_blocked_owner() {
    let mut b = common::builder(2);
    b.max_branches = 1_000_000;
    b.check(|| {
        let rt = Runtime::<Thin>::new(config());
        let (o, p) = (
            Arc::new(objmon::vm::LockWord::default()),
            Arc::new(objmon::vm::LockWord::default()),
        );
        let me = rt.attach().unwrap();
        let gp = me.enter(&p).unwrap();
        let holds = Arc::new(AtomicBool::new(false));
        let (rt2, o2, p2, holds2) = (rt.clone(), o.clone(), p.clone(), holds.clone());
        let owner = thread::spawn(move || {
            let b = rt2.attach().unwrap();
            let g = b.enter(&o2).unwrap();
            holds2.store(true, Ordering::SeqCst);
            drop(b.enter(&p2).unwrap());
            assert_eq!(b.lock_count(&o2), 1);
            drop(g);
            b.identity_hash(&o2).unwrap()
        });
        while !holds.load(Ordering::SeqCst) {
            thread::yield_now();
        }
        let (rt3, o3) = (rt.clone(), o.clone());
        let hasher = thread::spawn(move || rt3.attach().unwrap().identity_hash(&o3).unwrap());
        drop(gp);
        let v = hasher.join().unwrap();
        assert_eq!(owner.join().unwrap(), v);
        assert_eq!(rt.peek_identity_hash(&o), Some(v));
        assert_eq!(rt.owner_of(&o), None);
    });
}
