//! Loom models of the external protocols: the bimodal `tasuki` lock (the FLC-bit race between
//! the owner's plain-store unlock and a contender setting FLC; deflation against a concurrent
//! enter; a waiter re-acquiring after a deflation) and the external monitors of `cacao` and
//! `monitor-cache` (bucket / cache locking, entry reuse and freeing against a blocked enter).
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p objmon --release
//! --test loom_external`. A lost wake-up shows up as loom's "deadlock" (every thread parked).
#![cfg(loom)]

mod common;

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use objmon::vm::{Cacao, Config, HostWord, MonitorCache, Protocol, Runtime, Tasuki};
use std::time::Duration;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = common::builder(3);
    // The bucket locks spin (yielding) while their holder works: allow the extra branches.
    b.max_branches = 100_000;
    b.check(f);
}

fn config() -> Config {
    common::config(2)
}

/// Locks `obj` (unstructured, so that a failing exit is seen even in release builds), checks
/// that nobody else is inside and that the protocol names us as the owner, unlocks.
fn critical_section<'e, P: Protocol>(
    me: &objmon::vm::ThreadHandle<'e, P>,
    obj: &'e P::Header,
    inside: &AtomicBool,
) {
    me.monitor_enter(obj).unwrap();
    assert!(!inside.swap(true, Ordering::Relaxed), "mutual exclusion");
    assert_eq!(me.runtime().owner_of(obj), Some(me.id()));
    assert_eq!(me.lock_count(obj), 1);
    inside.store(false, Ordering::Relaxed);
    me.monitor_exit(obj).unwrap();
}

/// Two threads lock one object once each: mutually exclusive, nobody parked forever, the
/// object free afterwards.
fn two_lockers<P: Protocol>() {
    model(|| {
        let rt = Runtime::<P>::new(config());
        let obj = Arc::new(P::Header::default());
        let inside = Arc::new(AtomicBool::new(false));
        let (rt2, obj2, inside2) = (rt.clone(), obj.clone(), inside.clone());
        let other = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            critical_section(&me, &obj2, &inside2);
        });
        let me = rt.attach().unwrap();
        critical_section(&me, &obj, &inside);
        other.join().unwrap();
        assert_eq!(rt.owner_of(&obj), None);
    });
}

/// The FLC race of [19]: the owner's flat unlock (store free, fence, test FLC) against the
/// contender's "set FLC, fence, compare-and-swap, else wait on the monitor". If the owner
/// misses FLC while the contender's compare-and-swap saw the lock held, the contender waits
/// forever: loom reports a deadlock.
#[test]
fn tasuki_flc_vs_plain_store_unlock() {
    two_lockers::<Tasuki>();
}

/// Deflation against a concurrent enter: the owner of an inflated lock exits (deflating if it
/// sees nobody queued) while another thread enters through the monitor or the flat word.
#[test]
fn tasuki_deflation_vs_enter() {
    model(|| {
        let rt = Runtime::<Tasuki>::new(config());
        let obj = Arc::new(objmon::vm::TasukiHeader::default());
        let inside = Arc::new(AtomicBool::new(false));
        let me = rt.attach().unwrap();
        me.monitor_enter(&obj).unwrap();
        me.notify(&obj).unwrap(); // inflates (wait / notify need the wait set)
        assert!(obj.is_inflated());
        inside.store(true, Ordering::Relaxed);
        let (rt2, obj2, inside2) = (rt.clone(), obj.clone(), inside.clone());
        let other = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            critical_section(&me, &obj2, &inside2);
        });
        inside.store(false, Ordering::Relaxed);
        me.monitor_exit(&obj).unwrap();
        other.join().unwrap();
        assert_eq!(rt.owner_of(&obj), None);
        assert!(!obj.flc());
    });
}

/// A timed waiter re-acquires the monitor while the notifier's exit may deflate: the waiter
/// must win the flat lock again before it owns the object (never two owners).
#[test]
fn tasuki_wait_return_vs_deflation() {
    model(|| {
        let rt = Runtime::<Tasuki>::new(config());
        let obj = Arc::new(objmon::vm::TasukiHeader::default());
        let inside = Arc::new(AtomicBool::new(false));
        let (rt2, obj2, inside2) = (rt.clone(), obj.clone(), inside.clone());
        let waiter = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            me.monitor_enter(&obj2).unwrap();
            let _ = me.wait(&obj2, Some(Duration::from_secs(1))).unwrap();
            assert_eq!(me.lock_count(&obj2), 1);
            assert_eq!(me.runtime().owner_of(&obj2), Some(me.id()));
            assert!(!inside2.swap(true, Ordering::Relaxed), "mutual exclusion");
            inside2.store(false, Ordering::Relaxed);
            me.monitor_exit(&obj2).unwrap();
        });
        let me = rt.attach().unwrap();
        me.monitor_enter(&obj).unwrap();
        assert!(!inside.swap(true, Ordering::Relaxed), "mutual exclusion");
        let _ = me.notify(&obj);
        inside.store(false, Ordering::Relaxed);
        me.monitor_exit(&obj).unwrap();
        waiter.join().unwrap();
        assert_eq!(rt.owner_of(&obj), None);
    });
}

/// `cacao`: two threads lock one object: the bucket lock, pinning, blocking in the monitor
/// with the bucket lock released, and the first entry kept at count 0.
#[test]
fn cacao_two_lockers() {
    two_lockers::<Cacao>();
}

/// `cacao` with a collision (under loom the table has 2 buckets, so two of three adjacent
/// words share one): each thread locks one object of the pair, then the other, so entries
/// are claimed, overflow entries allocated from the pool and freed, while the other thread
/// may be blocked on the monitor of an entry (which pinning must keep from being reused).
#[test]
fn cacao_collision_claim_and_free() {
    model(|| {
        let rt = Runtime::<Cacao>::new(config());
        let objs = Arc::new([HostWord::new(0), HostWord::new(1), HostWord::new(2)]);
        let (a, b) = colliding_pair(&objs);
        let inside = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
        let (rt2, objs2, inside2) = (rt.clone(), objs.clone(), inside.clone());
        let other = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            critical_section(&me, &objs2[b], &inside2[1]);
            critical_section(&me, &objs2[a], &inside2[0]);
        });
        let me = rt.attach().unwrap();
        critical_section(&me, &objs[a], &inside[0]);
        critical_section(&me, &objs[b], &inside[1]);
        other.join().unwrap();
        assert_eq!(rt.owner_of(&objs[a]), None);
        assert_eq!(rt.owner_of(&objs[b]), None);
        assert_eq!(rt.state().overflow_in_use(), 0);
    });
}

/// `monitor-cache`: two threads lock one object through the cache (look-up, pin, block in the
/// monitor with the cache lock released, unpin).
#[test]
fn monitor_cache_two_lockers() {
    two_lockers::<MonitorCache>();
}

/// `monitor-cache` sweeping (the cache holds one binding under loom): each thread locks a
/// different object, so binding one sweeps the other's binding if — and only if — nobody
/// uses it, also while its owner is between look-up and monitor enter.
#[test]
fn monitor_cache_sweep_vs_enter() {
    model(|| {
        let rt = Runtime::<MonitorCache>::new(config());
        let objs = Arc::new([HostWord::new(0), HostWord::new(1)]);
        let inside = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
        let (rt2, objs2, inside2) = (rt.clone(), objs.clone(), inside.clone());
        let other = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            critical_section(&me, &objs2[1], &inside2[1]);
            critical_section(&me, &objs2[0], &inside2[0]);
        });
        let me = rt.attach().unwrap();
        critical_section(&me, &objs[0], &inside[0]);
        other.join().unwrap();
        assert_eq!(rt.owner_of(&objs[0]), None);
        assert_eq!(rt.owner_of(&objs[1]), None);
    });
}

/// Two adjacent words of `objs` that share a bucket of the (2-bucket) loom table.
fn colliding_pair(objs: &[HostWord; 3]) -> (usize, usize) {
    let bucket =
        |i: usize| objmon::protocol::cacao::CacaoState::bucket_of(&objs[i] as *const _ as usize);
    if bucket(0) == bucket(1) {
        (0, 1)
    } else if bucket(1) == bucket(2) {
        (1, 2)
    } else {
        (0, 2)
    }
}

/// `cacao`'s sticky holder: after its first lock of `a` the main thread keeps its pin on the
/// first entry and relocks `a` without the bucket lock, while the other thread locks `b`
/// (same bucket), which revokes that pin to claim the entry if the main thread is not
/// holding the monitor. The relock must validate its pin after taking the monitor.
#[test]
fn cacao_sticky_relock_vs_claim() {
    model(|| {
        let rt = Runtime::<Cacao>::new(config());
        let objs = Arc::new([HostWord::new(0), HostWord::new(1), HostWord::new(2)]);
        let (a, b) = colliding_pair(&objs);
        let inside = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
        let me = rt.attach().unwrap();
        critical_section(&me, &objs[a], &inside[0]); // leaves the sticky pin
        let (rt2, objs2, inside2) = (rt.clone(), objs.clone(), inside.clone());
        let other = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            critical_section(&me, &objs2[b], &inside2[1]);
        });
        critical_section(&me, &objs[a], &inside[0]);
        other.join().unwrap();
        assert_eq!(rt.owner_of(&objs[a]), None);
        assert_eq!(rt.owner_of(&objs[b]), None);
        assert_eq!(rt.state().overflow_in_use(), 0);
    });
}

/// `cacao`: a thread waiting on `a` (first entry, sticky pin from an earlier lock) must keep
/// the entry while another thread locks `b` in the same bucket.
#[test]
fn cacao_wait_vs_claim() {
    model(|| {
        let rt = Runtime::<Cacao>::new(config());
        let objs = Arc::new([HostWord::new(0), HostWord::new(1), HostWord::new(2)]);
        let (a, b) = colliding_pair(&objs);
        let inside = Arc::new(AtomicBool::new(false));
        let me = rt.attach().unwrap();
        critical_section(&me, &objs[a], &inside); // leaves the sticky pin
        let (rt2, objs2, inside2) = (rt.clone(), objs.clone(), inside.clone());
        let other = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            critical_section(&me, &objs2[b], &inside2);
        });
        me.monitor_enter(&objs[a]).unwrap();
        let _ = me.wait(&objs[a], Some(Duration::from_secs(1))).unwrap();
        assert_eq!(me.lock_count(&objs[a]), 1);
        assert_eq!(rt.owner_of(&objs[a]), Some(me.id()));
        me.monitor_exit(&objs[a]).unwrap();
        other.join().unwrap();
        assert_eq!(rt.owner_of(&objs[b]), None);
    });
}
