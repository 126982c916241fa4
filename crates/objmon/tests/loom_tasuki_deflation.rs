//! Loom models of `tasuki`'s deflation rule: a contender counts itself at
//! the object's monitor while it spins or suspends there, and the owner deflates only when it
//! finds nobody counted, at its acquisition and at its exit. The count is a policy: these
//! models check that it costs no safety (mutual exclusion, no lost wake-up, nobody left
//! counted) and that a lock left fat by two threads that each saw the other counted deflates
//! after a bounded number of uncontended acquisitions.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p objmon --release
//! --test loom_tasuki_deflation`. A lost wake-up shows up as loom's "deadlock".
#![cfg(loom)]

mod common;

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use objmon::vm::{Config, Runtime, Tasuki, TasukiHeader};

fn config() -> Config {
    common::config(2)
}

/// The owner of an inflated lock exits (counting the contenders to decide on deflation)
/// while a contender enters through the monitor (counting itself while it waits for it):
/// mutual exclusion, both get through, and afterwards the lock — fat or flat — deflates
/// within 17 uncontended lock+unlock pairs of one thread (the rule's re-look bound, 16, plus
/// the one that deflates).
#[test]
fn tasuki_owner_exit_vs_counted_contender() {
    let mut b = common::builder(2);
    b.max_branches = 100_000;
    b.check(|| {
        let rt = Runtime::<Tasuki>::new(config());
        let obj = Arc::new(TasukiHeader::default());
        let inside = Arc::new(AtomicBool::new(false));
        let me = rt.attach().unwrap();
        me.monitor_enter(&obj).unwrap();
        me.notify(&obj).unwrap(); // inflates (notify needs the wait set)
        assert!(obj.is_inflated());
        inside.store(true, Ordering::Relaxed);
        let (rt2, obj2, inside2) = (rt.clone(), obj.clone(), inside.clone());
        let other = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            me.monitor_enter(&obj2).unwrap();
            assert!(!inside2.swap(true, Ordering::Relaxed), "mutual exclusion");
            assert_eq!(me.lock_count(&obj2), 1);
            inside2.store(false, Ordering::Relaxed);
            me.monitor_exit(&obj2).unwrap();
            // The contender, alone now: its uncontended pairs end with the lock flat.
            for _ in 0..17 {
                if !obj2.is_inflated() {
                    break;
                }
                me.monitor_enter(&obj2).unwrap();
                me.monitor_exit(&obj2).unwrap();
            }
        });
        inside.store(false, Ordering::Relaxed);
        me.monitor_exit(&obj).unwrap();
        other.join().unwrap();
        assert_eq!(rt.owner_of(&obj), None);
        assert!(!obj.flc());
        assert!(!obj.is_inflated(), "deflated once contention ended");
    });
}
