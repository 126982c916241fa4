//! Loom models of `cacao`'s lock-free first entry: a thread takes the
//! monitor of a first entry it found for its object without the bucket lock and checks the
//! entry under the monitor (rule M of `protocol/cacao.rs`: the entry's `(obj, mon)` pair
//! changes only with its monitor's lock held), exits without the bucket lock, and holds no
//! pin while it owns the monitor. The races: that check against a claim of the entry for a
//! colliding object (which takes the monitor to claim), and a reclaim (GC) of the entry's
//! object against a claim and a first use. The older models (`loom_external.rs`: two
//! lockers, collisions and overflow entries, relock against claim, wait against claim) cover
//! the blocking paths.
//!
//! `cacao-seed` (the seed's scope: every monitorenter and monitorexit under the bucket lock)
//! shares the table, claims, pins and reclaim, and runs the same three scenarios (the
//! `_seed` models): there the look-up, the monitor's try and its release happen under the
//! bucket lock, so the races left are a claim or a reclaim against a thread blocked or about
//! to block in the monitor (pinned).
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p objmon --release
//! --test loom_cacao`. A lost wake-up shows up as loom's "deadlock" (every thread parked).
#![cfg(loom)]

mod common;

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use objmon::protocol::cacao::{CacaoLocks, CacaoState};
use objmon::vm::{Config, HostWord, Runtime};

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = common::builder(3);
    // The bucket locks spin (yielding) while their holder works: allow the extra branches.
    b.max_branches = 100_000;
    b.check(f);
}

fn config() -> Config {
    common::config(2)
}

/// Locks `obj`, checks that nobody else is inside and that the protocol names us as the
/// owner, unlocks.
fn critical_section<'e, const S: bool>(
    me: &objmon::vm::ThreadHandle<'e, CacaoLocks<S>>,
    obj: &'e HostWord,
    inside: &AtomicBool,
) {
    me.monitor_enter(obj).unwrap();
    assert!(!inside.swap(true, Ordering::Relaxed), "mutual exclusion");
    assert_eq!(me.runtime().owner_of(obj), Some(me.id()));
    assert_eq!(me.lock_count(obj), 1);
    inside.store(false, Ordering::Relaxed);
    me.monitor_exit(obj).unwrap();
}

/// Two of `objs` that share a bucket of the (2-bucket) loom table.
fn colliding(objs: &[HostWord]) -> (usize, usize) {
    let bucket = |i: usize| CacaoState::bucket_of(&objs[i] as *const HostWord as usize);
    for i in 0..objs.len() {
        for j in i + 1..objs.len() {
            if bucket(i) == bucket(j) {
                return (i, j);
            }
        }
    }
    unreachable!("three words in two buckets")
}

/// The main thread leaves `a` in the first entry (idle), then a new thread locks `a` through
/// the lock-free path while the main thread locks `b` (same bucket), which claims the entry
/// if its monitor is free: the new thread may find `(a, m)`, then lose the entry to the
/// claim before or after it takes `m`; its check under `m` must see the claim (or the claim
/// must fail and `b` get an overflow entry). Either way: one owner per object, and the
/// objects free at the end with no overflow entry left.
#[test]
fn first_lock_vs_claim() {
    first_lock_vs_claim_for::<false>();
}

/// `cacao-seed`: the same scenario, everything under the bucket lock.
#[test]
fn first_lock_vs_claim_seed() {
    first_lock_vs_claim_for::<true>();
}

fn first_lock_vs_claim_for<const S: bool>() {
    model(|| {
        let rt = Runtime::<CacaoLocks<S>>::new(config());
        let objs = Arc::new([HostWord::new(0), HostWord::new(1), HostWord::new(2)]);
        let (a, b) = colliding(&objs[..]);
        let inside = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
        let me = rt.attach().unwrap();
        critical_section(&me, &objs[a], &inside[0]); // `a` first, idle
        let (rt2, objs2, inside2) = (rt.clone(), objs.clone(), inside.clone());
        let other = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            critical_section(&me, &objs2[a], &inside2[0]);
        });
        critical_section(&me, &objs[b], &inside[1]);
        other.join().unwrap();
        assert_eq!(rt.owner_of(&objs[a]), None);
        assert_eq!(rt.owner_of(&objs[b]), None);
        assert_eq!(rt.state().overflow_in_use(), 0);
    });
}

/// Two threads lock `a` (first entry) with no bucket lock on the way in or out, while one of
/// them also holds it nested: the exit of the inner level and the last exit race with the
/// other's take-and-check.
#[test]
fn first_lock_nested_vs_first_lock() {
    first_lock_nested_vs_first_lock_for::<false>();
}

/// `cacao-seed`: the same scenario, everything under the bucket lock.
#[test]
fn first_lock_nested_vs_first_lock_seed() {
    first_lock_nested_vs_first_lock_for::<true>();
}

fn first_lock_nested_vs_first_lock_for<const S: bool>() {
    model(|| {
        let rt = Runtime::<CacaoLocks<S>>::new(config());
        let obj = Arc::new(HostWord::new(0));
        let inside = Arc::new(AtomicBool::new(false));
        let me = rt.attach().unwrap();
        critical_section(&me, &obj, &inside); // `obj` first, idle
        let (rt2, obj2, inside2) = (rt.clone(), obj.clone(), inside.clone());
        let other = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            critical_section(&me, &obj2, &inside2);
        });
        me.monitor_enter(&obj).unwrap();
        me.monitor_enter(&obj).unwrap();
        assert!(!inside.swap(true, Ordering::Relaxed), "mutual exclusion");
        assert_eq!(me.lock_count(&obj), 2);
        inside.store(false, Ordering::Relaxed);
        me.monitor_exit(&obj).unwrap();
        me.monitor_exit(&obj).unwrap();
        other.join().unwrap();
        assert_eq!(rt.owner_of(&obj), None);
    });
}

/// A reclaim (GC) of the idle first entry's object `c` against another thread's lock of `a`
/// (same bucket), which claims the entry (taking its monitor) or, after the reclaim emptied
/// the entry and gave the monitor back, makes it anew. The reclaim takes the monitor to
/// change the entry (rule M) and frees it only once nobody holds it.
#[test]
fn reclaim_vs_claim() {
    reclaim_vs_claim_for::<false>();
}

/// `cacao-seed`: the same scenario, everything under the bucket lock.
#[test]
fn reclaim_vs_claim_seed() {
    reclaim_vs_claim_for::<true>();
}

fn reclaim_vs_claim_for<const S: bool>() {
    model(|| {
        let rt = Runtime::<CacaoLocks<S>>::new(config());
        let objs = Arc::new([HostWord::new(0), HostWord::new(1), HostWord::new(2)]);
        // The object to reclaim is the main thread's alone (`reclaim` takes `&mut`); pick
        // one of its words that shares a bucket with a shared one.
        let mut mine = Box::new([HostWord::new(3), HostWord::new(4)]);
        let bucket = |h: &HostWord| CacaoState::bucket_of(h as *const HostWord as usize);
        let (a, c) = (0..3)
            .flat_map(|i| (0..2).map(move |k| (i, k)))
            .find(|&(i, k)| bucket(&objs[i]) == bucket(&mine[k]))
            .expect("five words in two buckets");
        let inside = Arc::new(AtomicBool::new(false));
        let me = rt.attach().unwrap();
        drop(me.enter(&mine[c]).unwrap()); // `c` first, idle
        let (rt2, objs2, inside2) = (rt.clone(), objs.clone(), inside.clone());
        let other = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            critical_section(&me, &objs2[a], &inside2);
            critical_section(&me, &objs2[a], &inside2);
        });
        drop(me);
        rt.reclaim(&mut mine[c]);
        other.join().unwrap();
        assert_eq!(rt.owner_of(&objs[a]), None);
        assert_eq!(rt.owner_of(&mine[c]), None);
        assert_eq!(rt.state().overflow_in_use(), 0);
        assert!(rt.stats_snapshot().live_monitors <= 1);
    });
}
