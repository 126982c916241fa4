//! Loom models of the races in the core: the tasuki system lock (mutual exclusion, no lost
//! wake-up, hand-off), the fat monitor's wait set against notify, timeout and interrupt, and
//! thin-lock contention with inflation.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p objmon --release --test loom`.
//! A lost wake-up shows up as loom's "deadlock" (every thread parked).
#![cfg(loom)]

mod common;

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use objmon::lab::TasukiLock;
use objmon::vm::{
    Config, Fat, MonitorError, Runtime, SystemLockConfig, SystemLockVariant, Thin, WaitOutcome,
};
use std::time::Duration;

fn model(f: impl Fn() + Sync + Send + 'static) {
    common::builder(3).check(f);
}

fn config(system_lock: SystemLockConfig) -> Config {
    Config {
        max_threads: 4,
        monitor_capacity: 2,
        system_lock,
        ..Config::default()
    }
}

fn sys(variant: SystemLockVariant, fair_handoff: Option<Duration>) -> SystemLockConfig {
    SystemLockConfig {
        variant,
        spin_limit: 0,
        spin_yields: 0,
        queue_first: false,
        fair_handoff,
    }
}

/// Two (or three) threads lock and unlock one tasuki lock: never two inside, nobody parked
/// forever (Property 3.1 / 3.2 of seed 004).
fn tasuki_model(threads: usize, cfg: SystemLockConfig) {
    model(move || {
        let rt = Runtime::<Fat>::new(config(cfg));
        let lock = Arc::new(TasukiLock::new(cfg));
        let inside = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                let (rt, lock, inside, count) =
                    (rt.clone(), lock.clone(), inside.clone(), count.clone());
                thread::spawn(move || {
                    let me = rt.attach().unwrap();
                    let t = me.context().core_arc();
                    // SAFETY (lock and unlock): `t` is this model thread's own core; the
                    // unlock follows its own lock.
                    unsafe { lock.lock(t) };
                    assert!(!inside.swap(true, Ordering::Relaxed), "mutual exclusion");
                    count.fetch_add(1, Ordering::Relaxed);
                    inside.store(false, Ordering::Relaxed);
                    unsafe { lock.unlock() };
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(count.load(Ordering::Relaxed), threads);
        assert!(!lock.is_locked());
        assert!(!lock.has_waiters());
    });
}

#[test]
fn tasuki_figure7_two_threads() {
    tasuki_model(2, sys(SystemLockVariant::Figure7, None));
}

#[test]
fn tasuki_figure5_two_threads() {
    tasuki_model(2, sys(SystemLockVariant::Figure5, None));
}

#[test]
fn tasuki_figure7_three_threads() {
    tasuki_model(3, sys(SystemLockVariant::Figure7, None));
}

/// The default release (Figure 7 with the suspender's `membarrier`): loom models the barrier
/// as a `SeqCst` fence on both sides (`membarrier.rs`), so this checks the shipped code paths
/// of the variant against the Dekker's shape. Under `OBJMON_LOOM_SYMMETRIC=1` the lock is
/// built as Figure 7 (no `membarrier`), and the model checks that fallback. Under
/// `OBJMON_LOOM_UNFENCED_RELEASE=1` (`.ci/run`, the two-thread model: the three-thread one
/// exceeds loom's branch bound on the yielding retry) the release has no modelled fence and
/// every barrier is refused, so a release can miss a count: the model checks that the
/// unordered sleep's end rescues the sleeper (with the rescue taken out it deadlocks:
/// checked). Three threads:
/// with hand-off (the plain three-thread model adds nothing the hand-off one does not explore,
/// for a minute of CI).
#[test]
fn tasuki_membarrier_two_threads() {
    tasuki_model(2, sys(SystemLockVariant::Figure7Membarrier, None));
}

#[test]
fn tasuki_membarrier_handoff_three_threads() {
    tasuki_model(
        3,
        sys(
            SystemLockVariant::Figure7Membarrier,
            Some(Duration::from_nanos(1)),
        ),
    );
}

/// With a 1 ns hand-off threshold every suspended thread asks for a hand-off at once, so the
/// model explores grant, retry-after-resume and the empty-slot release.
#[test]
fn tasuki_handoff_three_threads() {
    tasuki_model(
        3,
        sys(SystemLockVariant::Figure7, Some(Duration::from_nanos(1))),
    );
}

/// The lock is taken twice by one thread in a row while another contends (barging).
#[test]
fn tasuki_handoff_relock() {
    let cfg = sys(SystemLockVariant::Figure7, Some(Duration::from_nanos(1)));
    model(move || {
        let rt = Runtime::<Fat>::new(config(cfg));
        let lock = Arc::new(TasukiLock::new(cfg));
        let (rt2, lock2) = (rt.clone(), lock.clone());
        let h = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            // SAFETY (every lock/unlock here): each thread passes its own core and unlocks
            // only after its own lock.
            unsafe { lock2.lock(me.context().core_arc()) };
            unsafe { lock2.unlock() };
        });
        let me = rt.attach().unwrap();
        for _ in 0..2 {
            unsafe { lock.lock(me.context().core_arc()) };
            unsafe { lock.unlock() };
        }
        h.join().unwrap();
        assert!(!lock.has_waiters());
    });
}

/// notify against a timed wait: the waiter returns Notified or TimedOut, always holding the
/// monitor again; nothing hangs.
#[test]
fn monitor_notify_vs_timeout() {
    model(|| {
        let rt = Runtime::<Fat>::new(config(sys(SystemLockVariant::Figure7, None)));
        let obj = Arc::new(objmon::vm::LockWord::default());
        let ready = Arc::new(AtomicBool::new(false));
        let (rt2, obj2, ready2) = (rt.clone(), obj.clone(), ready.clone());
        let waiter = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            let g = me.enter(&obj2).unwrap();
            ready2.store(true, Ordering::SeqCst);
            let r = g.wait(Some(Duration::from_secs(1))).unwrap();
            assert_eq!(me.lock_count(&obj2), 1);
            r
        });
        let me = rt.attach().unwrap();
        if ready.load(Ordering::SeqCst) {
            let g = me.enter(&obj).unwrap();
            g.notify().unwrap();
        }
        let r = waiter.join().unwrap();
        assert!(matches!(r, WaitOutcome::Notified | WaitOutcome::TimedOut));
        assert_eq!(rt.owner_of(&obj), None);
    });
}

/// notify and interrupt in one critical section against one waiter, racing with its wait
/// and its timeout: it returns Notified or TimedOut (an interrupt that lost the race stays
/// pending) or Interrupted (status cleared), always holding the monitor again.
#[test]
fn monitor_notify_and_interrupt() {
    model(|| {
        let rt = Runtime::<Fat>::new(config(sys(SystemLockVariant::Figure7, None)));
        let obj = Arc::new(objmon::vm::LockWord::default());
        let me = rt.attach().unwrap(); // id 1, so the waiter is id 2
        let (rt2, obj2) = (rt.clone(), obj.clone());
        let waiter = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            assert_eq!(me.id().get(), 2);
            let g = me.enter(&obj2).unwrap();
            let r = g.wait(Some(Duration::from_secs(1)));
            assert_eq!(me.lock_count(&obj2), 1);
            (r, me.interrupted())
        });
        {
            let g = me.enter(&obj).unwrap();
            g.notify().unwrap();
            // NoSuchThread if the waiter has not attached yet: then nothing to interrupt.
            let _ = rt.interrupt(objmon::vm::ThreadId::new(2).unwrap());
        }
        match waiter.join().unwrap() {
            (Ok(_), _) => {}
            (Err(MonitorError::Interrupted), pending) => assert!(!pending),
            other => panic!("{other:?}"),
        }
    });
}

/// Thin-lock contention: the contender spins until the owner releases, then inflates; both
/// critical sections are exclusive and the lock ends fat and free.
#[test]
fn thin_contention_inflates() {
    model(|| {
        let rt = Runtime::<Thin>::new(config(sys(SystemLockVariant::Figure7, None)));
        let obj = Arc::new(objmon::vm::LockWord::default());
        let inside = Arc::new(AtomicBool::new(false));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let (rt, obj, inside) = (rt.clone(), obj.clone(), inside.clone());
                thread::spawn(move || {
                    let me = rt.attach().unwrap();
                    let g = me.enter(&obj).unwrap();
                    assert!(!inside.swap(true, Ordering::Relaxed), "mutual exclusion");
                    inside.store(false, Ordering::Relaxed);
                    drop(g);
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(rt.owner_of(&obj), None);
    });
}

/// Inflation for wait by the owner against a contender spinning on the thin lock.
#[test]
fn thin_wait_inflation_vs_contender() {
    model(|| {
        let rt = Runtime::<Thin>::new(config(sys(SystemLockVariant::Figure7, None)));
        let obj = Arc::new(objmon::vm::LockWord::default());
        let (rt2, obj2) = (rt.clone(), obj.clone());
        let other = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            let g = me.enter(&obj2).unwrap();
            let _ = g.notify_all();
        });
        let me = rt.attach().unwrap();
        let g = me.enter(&obj).unwrap();
        let _ = g.wait(Some(Duration::from_millis(1))).unwrap();
        assert_eq!(me.lock_count(&obj), 1);
        drop(g);
        other.join().unwrap();
        assert_eq!(rt.owner_of(&obj), None);
    });
}
