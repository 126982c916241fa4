//! Loom models of the identity hash (issue 7 item 2) against lock traffic, one per way a
//! protocol stores it: the CAS into a fast-locked word against the owner's unlocking CAS
//! (`lightweight`), inflate-to-hash against the owner's unlock (`stack`, INFLATING), the thin
//! lock's inflation and side table against the owner's plain-store unlock (`thin`), the hash
//! in the object's monitor against deflation (`tasuki`), the CAS into the host word against
//! locking (`cacao`), and hashing against bias revocation (`biased`).
//!
//! Every model checks the one promise: each call returns the same value, and it is still the
//! object's hash (peek, another call) when everybody is done; and that locking still works.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p objmon --release
//! --test loom_hash`.
#![cfg(loom)]

mod common;

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use objmon::protocol::biased::{BiasMode, Biasing, Kko};
use objmon::{
    BiasConfig, Cacao, Config, DeflationPolicy, Lightweight, Protocol, Revocation, Runtime, Stack,
    SystemLockConfig, SystemLockVariant, Tasuki, Thin,
};
use std::time::Duration;

fn config() -> Config {
    Config {
        max_threads: 4,
        monitor_capacity: 3,
        system_lock: SystemLockConfig {
            variant: SystemLockVariant::Figure7,
            spin_limit: 0,
            fair_handoff: None,
        },
        deflation: DeflationPolicy::AtExit { keep: 0 },
        ..Config::default()
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
        let rt = Runtime::<P>::new(config());
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

/// The hasher CAS-inflates a free thin lock, or parks its hash while the other thread holds
/// it; the owner, unlocking with a plain store, then hashes and must find the same value.
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

/// The owner inflates its thin lock for the hash while the other thread hashes (parking its
/// hash in the side table, or finding the monitor) and then contends.
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
        let h = Arc::new(objmon::BiasWord::default());
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

/// `thin`'s side table: a hash parked while the main thread held the lock, then moved into a
/// monitor by the main thread's own hash after its unlock, while a third thread peeks. The
/// peek comes after the parked hash was returned, so it must see it, in the table or in the
/// monitor — never `None` (it reads the table's size before the word, and the move installs
/// into the monitor before it empties the table).
#[test]
fn thin_peek_vs_moving_a_parked_hash() {
    common::builder(3).check(|| {
        let rt = Runtime::<Thin>::new(config());
        let h = Arc::new(objmon::LockWord::default());
        let me = rt.attach().unwrap();
        let g = me.enter(&h).unwrap();
        let (rt2, h2) = (rt.clone(), h.clone());
        let v = thread::spawn(move || rt2.attach().unwrap().identity_hash(&h2).unwrap())
            .join()
            .unwrap();
        let (rt3, h3) = (rt.clone(), h.clone());
        let peeker = thread::spawn(move || rt3.peek_identity_hash(&h3));
        drop(g);
        assert_eq!(me.identity_hash(&h), Ok(v));
        assert_eq!(
            peeker.join().unwrap(),
            Some(v),
            "a returned hash was not seen"
        );
    });
}
