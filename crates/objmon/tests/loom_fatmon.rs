//! Loom models of the races of the fat monitor's intrusive queues (`src/tasuki/queue.rs`
//! `NodeQueue`, the entry queue and the wait set, whose nodes live in the waiting threads'
//! frames): a waiter that times out unlinks itself while a notifier unlinks its neighbour,
//! and a notification racing with a timeout is never lost nor double-spent.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p objmon --release
//! --test loom_fatmon`.
#![cfg(loom)]

mod common;

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use objmon::vm::{Config, Fat, LockWord, Runtime, WaitOutcome};
use std::time::Duration;

fn config() -> Config {
    common::config(4)
}

/// Two timed waiters and one notify (or notifyAll): the notifier unlinks the head while
/// either waiter may be unlinking itself on timeout. Every waiter returns holding the
/// monitor once; a single notify wakes at most one of them, and it is never spent on a
/// waiter that already left (then it wakes the other one, or nobody).
fn two_waiters(all: bool) {
    common::builder(2).check(move || {
        let rt = Runtime::<Fat>::new(config());
        let obj = Arc::new(LockWord::default());
        let in_set = Arc::new(AtomicUsize::new(0));
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let (rt, obj, in_set) = (rt.clone(), obj.clone(), in_set.clone());
                thread::spawn(move || {
                    let me = rt.attach().unwrap();
                    let g = me.enter(&obj).unwrap();
                    in_set.fetch_add(1, Ordering::SeqCst);
                    let r = g.wait(Some(Duration::from_secs(1))).unwrap();
                    assert_eq!(me.lock_count(&obj), 1);
                    r
                })
            })
            .collect();
        let me = rt.attach().unwrap();
        {
            let g = me.enter(&obj).unwrap();
            if in_set.load(Ordering::SeqCst) > 0 {
                if all {
                    g.notify_all().unwrap();
                } else {
                    g.notify().unwrap();
                }
            }
        }
        let notified = waiters
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|r| *r == WaitOutcome::Notified)
            .count();
        if !all {
            assert!(notified <= 1, "one notify woke {notified} waiters");
        }
        assert_eq!(rt.owner_of(&*obj), None);
    });
}

#[test]
fn notify_vs_two_timed_waiters() {
    two_waiters(false);
}

#[test]
fn notify_all_vs_two_timed_waiters() {
    two_waiters(true);
}
