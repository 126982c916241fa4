//! The scenarios of Rust std's `Mutex` and `Condvar` tests
//! (`library/std/src/sync/{mutex,condvar}/tests.rs`), re-expressed for `Monitor<T>` and run for
//! every protocol, on its process-wide runtime and on a runtime of its own.
//!
//! What differs from std, by design: a guard gives `&T` (the lock is reentrant), so mutation
//! goes through `Cell` / `RefCell`; there is no poisoning (a panicking critical section just
//! unlocks); the monitor is its own condition variable (`guard.wait`, `guard.notify`).
#![cfg(not(loom))]

mod monitor_common;
mod watchdog;

use monitor_common::COVERED;

monitor_tests!(30;
    smoke,
    lots_and_lots,
    try_lock,
    into_inner,
    into_inner_drops_once,
    into_inner_of_an_inflated_monitor,
    moved_after_inflation_gives_back,
    get_mut,
    debug_output,
    nested_across_arc,
    access_in_unwind,
    panicking_critical_section_unlocks,
    unsized_slice,
    unsized_dyn,
    condvar_smoke,
    notify_one,
    notify_all,
    wait_while,
    wait_timeout_wait,
    wait_timeout_while_wait,
    wait_timeout_while_instant_satisfy,
    wait_timeout_while_wake,
    wait_timeout_wake,
    wait_while_tolerates_wakeups_before_the_condition,
    panicking_condition_unlocks,
    lots_and_lots_with_waits,
    many_monitors_many_threads,
);

#[test]
fn every_protocol_is_covered() {
    // `cacao`, `cacao-seed` and `monitor-cache` find a monitor by the header's address, so a `Monitor` (whose
    // header moves with its value) cannot use them; `biased-signal` and `fable-signal` are
    // sound only under a host's promise about its signal handlers, the three `lightweight`
    // protocols under one about moving held headers. Not `MonitorProtocol`s (compile-fail
    // doc-tests on `MonitorProtocol`).
    let names: Vec<_> = objmon::vm::names()
        .into_iter()
        .filter(|n| {
            !matches!(
                *n,
                "cacao"
                    | "cacao-seed"
                    | "monitor-cache"
                    | "biased-signal"
                    | "fable-signal"
                    | "lightweight"
                    | "lightweight-seed"
                    | "lightweight-table"
            )
        })
        .collect();
    assert_eq!(names, COVERED.to_vec());
}

mod checks {
    use crate::monitor_common::{eventually, Env};
    use objmon::{Monitor, Protocol, WaitOutcome};
    use std::cell::{Cell, RefCell};
    use std::fmt::Debug;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{mpsc, Arc};
    use std::thread;
    use std::time::Duration;

    /// A long timeout whose deadline the clock can represent (std and parking_lot use
    /// `u32::MAX` ms for "very long"; `Duration::MAX` is `InvalidTimeout` here).
    const LONG: Duration = Duration::from_millis(u32::MAX as u64);

    #[derive(Debug, PartialEq, Eq)]
    struct NonCopy(i32);

    /// std `smoke`: lock, unlock, lock again.
    pub fn smoke<E: Env>(e: E) {
        let m = e.monitor(());
        drop(m.lock());
        drop(m.lock());
        assert!(!m.is_locked());
    }

    /// std `lots_and_lots`: 2·K threads each add 1 J times under the lock; the total is exact.
    pub fn lots_and_lots<E: Env>(e: E) {
        const J: u32 = 1000;
        const K: u32 = 3;
        let m = e.monitor(Cell::new(0u32));
        let inc = |m: &Monitor<Cell<u32>, E::P, E::R>| {
            for _ in 0..J {
                let g = m.lock();
                g.set(g.get() + 1);
            }
        };
        thread::scope(|s| {
            let hs: Vec<_> = (0..2 * K).map(|_| s.spawn(|| inc(&m))).collect();
            for h in hs {
                h.join().unwrap();
            }
        });
        assert_eq!(m.lock().get(), J * K * 2);
        assert_eq!(m.into_inner().get(), J * K * 2);
    }

    /// std `try_lock`, and what a reentrant lock adds (parking_lot `trylock_works`): the owner's
    /// `try_lock` succeeds, another thread's fails, and succeeds once the lock is free.
    pub fn try_lock<E: Env>(e: E) {
        let m = e.monitor(7u32);
        let g = m.try_lock().expect("an unlocked monitor");
        assert_eq!(*g, 7);
        let again = m.try_lock().expect("reentrant");
        thread::scope(|s| {
            s.spawn(|| assert!(m.try_lock().is_none(), "held by another thread"))
                .join()
                .unwrap();
        });
        drop((again, g));
        thread::scope(|s| {
            s.spawn(|| assert_eq!(m.try_lock().as_deref(), Some(&7)))
                .join()
                .unwrap();
        });
    }

    /// std `test_into_inner`.
    pub fn into_inner<E: Env>(e: E) {
        let m = e.monitor(NonCopy(10));
        assert_eq!(m.into_inner(), NonCopy(10));
    }

    /// std `test_into_inner_drop`: `into_inner` moves the value out without dropping it, and
    /// it is dropped once, by its new owner; a monitor dropped whole drops it once too.
    pub fn into_inner_drops_once<E: Env>(e: E) {
        struct Foo(Arc<AtomicUsize>);
        impl Drop for Foo {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let drops = Arc::new(AtomicUsize::new(0));
        let m = e.monitor(Foo(drops.clone()));
        drop(m.lock());
        assert_eq!(drops.load(Ordering::SeqCst), 0);
        {
            let _inner = m.into_inner();
            assert_eq!(drops.load(Ordering::SeqCst), 0);
        }
        assert_eq!(drops.load(Ordering::SeqCst), 1);

        let m = e.monitor(Foo(drops.clone()));
        m.lock().wait(Some(Duration::ZERO)).unwrap(); // inflated, for good measure
        drop(m);
        assert_eq!(drops.load(Ordering::SeqCst), 2);
    }

    /// `into_inner` of a monitor that has a fat monitor gives the fat monitor back: the
    /// runtime's live count returns to where it was (exact on a runtime of the test's own).
    pub fn into_inner_of_an_inflated_monitor<E: Env>(e: E) {
        let rt = e.runtime();
        let before = rt.stats_snapshot().live_monitors;
        let m = e.monitor(NonCopy(3));
        {
            let mut g = m.lock();
            assert_eq!(g.wait(Some(Duration::ZERO)), Ok(WaitOutcome::TimedOut));
            if e.exact() {
                assert_eq!(rt.stats_snapshot().live_monitors, before + 1, "inflated");
            }
        }
        assert_eq!(m.into_inner(), NonCopy(3));
        if e.exact() {
            assert_eq!(rt.stats_snapshot().live_monitors, before, "given back");
        }
    }

    /// A monitor moved after it was inflated (unlocked, so safe Rust may move it) gives its
    /// fat monitor back when dropped at its new address.
    pub fn moved_after_inflation_gives_back<E: Env>(e: E) {
        let rt = e.runtime();
        let before = rt.stats_snapshot().live_monitors;
        let m = e.monitor(NonCopy(4));
        m.lock().wait(Some(Duration::ZERO)).unwrap();
        let moved = Box::new(m); // a new address
        assert_eq!(*moved.lock(), NonCopy(4), "usable at its new address");
        drop(moved);
        if e.exact() {
            assert_eq!(rt.stats_snapshot().live_monitors, before, "given back");
        }
        // Only locked (no wait), then moved by a growing `Vec`.
        let mut v = Vec::with_capacity(1);
        v.push(e.monitor(0u32));
        drop(v[0].lock());
        v.extend((1..64).map(|i| e.monitor(i))); // reallocates: v[0] moves
        assert_eq!(*v[0].lock(), 0);
        drop(v);
        if e.exact() {
            assert_eq!(
                rt.stats_snapshot().live_monitors,
                before,
                "given back after a Vec grew"
            );
        }
    }

    /// std `test_get_mut`.
    pub fn get_mut<E: Env>(e: E) {
        let mut m = e.monitor(NonCopy(10));
        *m.get_mut() = NonCopy(20);
        assert_eq!(*m.lock(), NonCopy(20));
        assert_eq!(m.into_inner(), NonCopy(20));
    }

    /// parking_lot `test_mutex_debug` / `test_reentrant_mutex_debug`: the data when the lock
    /// can be taken (also by its holder: reentrant), `<locked>` when another thread holds it.
    pub fn debug_output<E: Env>(e: E) {
        let name = <E::P as Protocol>::NAME;
        let m = e.monitor(vec![0u8, 10]);
        assert_eq!(
            format!("{m:?}"),
            format!("Monitor {{ protocol: {name:?}, data: [0, 10] }}")
        );
        assert_eq!(
            format!("{m:#?}"),
            format!("Monitor {{\n    protocol: {name:?},\n    data: [\n        0,\n        10,\n    ],\n}}")
        );
        {
            let g = m.lock();
            assert_eq!(format!("{g:?}"), "[0, 10]");
            assert_eq!(
                format!("{m:?}"),
                format!("Monitor {{ protocol: {name:?}, data: [0, 10] }}"),
                "the holder may look (reentrant)"
            );
        }
        let (locked_tx, locked_rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        thread::scope(|s| {
            let m = &m;
            s.spawn(move || {
                let _g = m.lock();
                locked_tx.send(()).unwrap();
                done_rx.recv().unwrap();
            });
            locked_rx.recv().unwrap();
            assert_eq!(
                format!("{m:?}"),
                format!("Monitor {{ protocol: {name:?}, data: <locked> }}")
            );
            done_tx.send(()).unwrap();
        });
        let s = e.monitor(String::from("text"));
        assert_eq!(format!("{}", s.lock()), "text");
    }

    /// std `test_mutex_arc_nested`: a monitor holding an `Arc` of another, both locked on
    /// another thread.
    pub fn nested_across_arc<E: Env>(e: E) {
        let inner = Arc::new(e.monitor(1u32));
        let outer = Arc::new(e.monitor(inner.clone()));
        let (tx, rx) = mpsc::channel();
        let t = thread::spawn(move || {
            let lock = outer.lock();
            let lock2 = lock.lock();
            assert_eq!(*lock2, 1);
            tx.send(()).unwrap();
        });
        rx.recv().unwrap();
        t.join().unwrap();
        assert!(!inner.is_locked());
    }

    /// std `test_mutex_arc_access_in_unwind`: a destructor that runs during a panic's unwind
    /// locks the monitor; the monitor is usable afterwards.
    pub fn access_in_unwind<E: Env>(e: E) {
        let m = Arc::new(e.monitor(Cell::new(1)));
        let m2 = m.clone();
        let r = thread::spawn(move || {
            struct Unwinder<M: std::ops::Deref<Target = C>, C: Locks>(M);
            impl<M: std::ops::Deref<Target = C>, C: Locks> Drop for Unwinder<M, C> {
                fn drop(&mut self) {
                    self.0.add_one();
                }
            }
            let _u = Unwinder(m2);
            panic!("unwinding on purpose");
        })
        .join();
        assert!(r.is_err());
        assert_eq!(m.lock().get(), 2);
    }

    /// A monitor of `Cell<i32>`, erased of its protocol (for a drop impl without generics of
    /// the environment).
    trait Locks {
        fn add_one(&self);
    }
    impl<P: objmon::Protocol, R: objmon::RuntimeRef<P>> Locks for Monitor<Cell<i32>, P, R> {
        fn add_one(&self) {
            let g = self.lock();
            g.set(g.get() + 1);
        }
    }

    /// std's poisoning tests, as a monitor has them: a critical section that panics unlocks
    /// (every level), and the value is reachable by the next holder. No poison.
    pub fn panicking_critical_section_unlocks<E: Env>(e: E) {
        let m = Arc::new(e.monitor(Cell::new(1)));
        let m2 = m.clone();
        let r = thread::spawn(move || {
            let g = m2.lock();
            let _g2 = m2.lock();
            g.set(2);
            assert_eq!(g.get(), 3, "deliberate failure inside the critical section");
        })
        .join();
        assert!(r.is_err());
        assert!(!m.is_locked(), "the unwind dropped both guards");
        assert_eq!(m.try_lock().map(|g| g.get()), Some(2));
        // And from yet another thread, with a wait (the monitor's wait set is intact).
        let m3 = m.clone();
        thread::spawn(move || {
            let mut g = m3.lock();
            assert_eq!(g.wait(Some(Duration::ZERO)), Ok(WaitOutcome::TimedOut));
            g.set(4);
        })
        .join()
        .unwrap();
        assert_eq!(m.lock().get(), 4);
    }

    /// A monitor of the environment's protocol and runtime, holding a `T` (maybe unsized).
    type M<T, E> = Monitor<T, <E as Env>::P, <E as Env>::R>;

    /// std `test_mutex_unsized`: `Monitor<[T]>` through a reference (`T: ?Sized`; the value is
    /// the last field, so `&Monitor<[T; N]>` coerces). Cells, since a guard gives `&[T]`.
    pub fn unsized_slice<E: Env>(e: E) {
        let owned = e.monitor([Cell::new(1), Cell::new(2), Cell::new(3)]);
        let m: &M<[Cell<i32>], E> = &owned;
        {
            let g = m.lock();
            g[0].set(4);
            let again = m.lock();
            again[2].set(5);
        }
        let got: Vec<i32> = m.lock().iter().map(Cell::get).collect();
        assert_eq!(got, [4, 2, 5]);
        assert_eq!(m.lock().len(), 3);
        // Boxed, and waited on (inflated), then dropped through the unsized type.
        let boxed: Box<M<[Cell<i32>], E>> = Box::new(e.monitor([Cell::new(9)]));
        {
            let mut g = boxed.lock();
            assert_eq!(g.wait(Some(Duration::ZERO)), Ok(WaitOutcome::TimedOut));
            assert_eq!(g[0].get(), 9);
        }
        drop(boxed);
    }

    /// `Monitor<dyn Trait>` in a `Box`, shared between threads.
    pub fn unsized_dyn<E: Env>(e: E) {
        let m: Arc<M<dyn Fn(u32) -> u32 + Send, E>> = Arc::new(e.monitor(|x: u32| x * 2));
        let m2 = m.clone();
        assert_eq!(thread::spawn(move || (m2.lock())(21)).join().unwrap(), 42);
        let d: Box<M<dyn Debug + Send, E>> = Box::new(e.monitor(5u8));
        assert_eq!(
            format!("{d:?}"),
            format!(
                "Monitor {{ protocol: {:?}, data: 5 }}",
                <E::P as Protocol>::NAME
            )
        );
    }

    /// std condvar `smoke`: notify and notify-all with nobody waiting are no-ops.
    pub fn condvar_smoke<E: Env>(e: E) {
        let m = e.monitor(());
        let g = m.lock();
        g.notify();
        g.notify_all();
        let nested = m.lock();
        nested.notify();
        nested.notify_all();
    }

    /// std condvar `notify_one`: the waiter releases the lock, so the notifier can take it.
    pub fn notify_one<E: Env>(e: E) {
        let m = Arc::new(e.monitor(()));
        let m2 = m.clone();
        let mut g = m.lock();
        let t = thread::spawn(move || {
            let g = m2.lock();
            g.notify();
        });
        assert_eq!(g.wait(None), Ok(WaitOutcome::Notified));
        assert!(m.is_owned_by_current_thread());
        drop(g);
        t.join().unwrap();
    }

    /// std condvar `notify_all`: N waiters, all woken by one `notify_all`.
    pub fn notify_all<E: Env>(e: E) {
        const N: usize = 10;
        let data = Arc::new(e.monitor(Cell::new(0usize)));
        let (tx, rx) = mpsc::channel();
        let ts: Vec<_> = (0..N)
            .map(|_| {
                let data = data.clone();
                let tx = tx.clone();
                thread::spawn(move || {
                    let mut cnt = data.lock();
                    cnt.set(cnt.get() + 1);
                    if cnt.get() == N {
                        tx.send(()).unwrap();
                    }
                    while cnt.get() != 0 {
                        cnt.wait(None).unwrap();
                    }
                    tx.send(()).unwrap();
                })
            })
            .collect();
        drop(tx);
        rx.recv().unwrap();
        let cnt = data.lock();
        cnt.set(0);
        cnt.notify_all();
        drop(cnt);
        for _ in 0..N {
            rx.recv().unwrap();
        }
        for t in ts {
            t.join().unwrap();
        }
    }

    /// std condvar `wait_while`.
    pub fn wait_while<E: Env>(e: E) {
        let pair = Arc::new(e.monitor(Cell::new(false)));
        let pair2 = pair.clone();
        let t = thread::spawn(move || {
            let started = pair2.lock();
            started.set(true);
            started.notify();
        });
        let mut g = pair.lock();
        g.wait_while(|started| !started.get()).unwrap();
        assert!(g.get());
        drop(g);
        t.join().unwrap();
    }

    /// std condvar `wait_timeout_wait`: a 1 ms wait with nobody notifying times out (retried
    /// on a spurious wake-up), and returns holding the lock.
    pub fn wait_timeout_wait<E: Env>(e: E) {
        let m = e.monitor(());
        loop {
            let mut g = m.lock();
            let r = g.wait(Some(Duration::from_millis(1))).unwrap();
            assert!(m.is_owned_by_current_thread());
            if r == WaitOutcome::TimedOut {
                break;
            }
        }
        assert!(!m.is_locked());
    }

    /// std condvar `wait_timeout_while_wait`: a condition that never turns false times out.
    pub fn wait_timeout_while_wait<E: Env>(e: E) {
        let m = e.monitor(());
        let mut g = m.lock();
        let r = g.wait_while_for(Duration::from_millis(1), |_| true);
        assert_eq!(r, Ok(WaitOutcome::TimedOut));
        assert!(m.is_owned_by_current_thread());
    }

    /// std condvar `wait_timeout_while_instant_satisfy`: a condition already false returns at
    /// once, not timed out, even with no time given.
    pub fn wait_timeout_while_instant_satisfy<E: Env>(e: E) {
        let m = e.monitor(());
        let mut g = m.lock();
        let r = g.wait_while_for(Duration::ZERO, |_| false);
        assert_eq!(r, Ok(WaitOutcome::Notified));
        assert!(m.is_owned_by_current_thread());
    }

    /// std condvar `wait_timeout_while_wake`: the condition turned false by another thread
    /// ends a (very long) timed wait, not timed out.
    pub fn wait_timeout_while_wake<E: Env>(e: E) {
        let pair = Arc::new(e.monitor(Cell::new(false)));
        let pair2 = pair.clone();
        let mut g = pair.lock();
        let t = thread::spawn(move || {
            let started = pair2.lock();
            thread::sleep(Duration::from_millis(1));
            started.set(true);
            started.notify();
        });
        let r = g.wait_while_for(LONG, |notified| !notified.get());
        assert_eq!(r, Ok(WaitOutcome::Notified));
        assert!(g.get());
        drop(g);
        t.join().unwrap();
    }

    /// std condvar `wait_timeout_wake`: a notify ends a (very long) timed wait, not timed out;
    /// retried if the wake-up was spurious (the flag not yet set).
    pub fn wait_timeout_wake<E: Env>(e: E) {
        let m = Arc::new(e.monitor(()));
        loop {
            let mut g = m.lock();
            let notified = Arc::new(AtomicBool::new(false));
            let (m2, n2) = (m.clone(), notified.clone());
            let t = thread::spawn(move || {
                let g = m2.lock();
                thread::sleep(Duration::from_millis(1));
                n2.store(true, Ordering::Relaxed);
                g.notify();
            });
            assert_eq!(g.wait(Some(LONG)), Ok(WaitOutcome::Notified));
            drop(g);
            t.join().unwrap();
            if notified.load(Ordering::Relaxed) {
                break;
            }
        }
    }

    /// Spurious-wakeup tolerance (std's "spurious wakeups mean this isn't necessarily true"):
    /// waiter `i` waits while the counter is below `i`; every increment wakes everyone
    /// (`notify_all`), so each waiter is woken many times before its condition holds, and
    /// `wait_while` must return only once it does.
    pub fn wait_while_tolerates_wakeups_before_the_condition<E: Env>(e: E) {
        const WAITERS: u32 = 4;
        let m = e.monitor(RefCell::new((0u32, 0u32))); // (counter, waiters in)
        thread::scope(|s| {
            let hs: Vec<_> = (1..=WAITERS)
                .map(|i| {
                    let m = &m;
                    s.spawn(move || {
                        let mut g = m.lock();
                        g.borrow_mut().1 += 1;
                        g.wait_while(|c| c.borrow().0 < i).unwrap();
                        assert!(g.borrow().0 >= i);
                    })
                })
                .collect();
            eventually(20, "all waiters in", || m.lock().borrow().1 == WAITERS);
            for _ in 0..WAITERS {
                let g = m.lock();
                g.borrow_mut().0 += 1;
                g.notify_all();
                drop(g);
                thread::yield_now();
            }
            for h in hs {
                h.join().unwrap();
            }
        });
        assert_eq!(m.lock().borrow().0, WAITERS);
    }

    /// A `wait_while` condition that panics (before any wait, and after one) unwinds through
    /// the guard: the monitor is unlocked, every level, and usable.
    pub fn panicking_condition_unlocks<E: Env>(e: E) {
        let m = e.monitor(Cell::new(0u32));
        for panic_after in [0u32, 1] {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _outer = m.lock();
                let mut g = m.lock();
                let mut calls = 0;
                let _ = g.wait_while_for(Duration::from_millis(1), |_| {
                    calls += 1;
                    assert!(calls <= panic_after, "condition panics on purpose");
                    true
                });
            }));
            assert!(r.is_err());
            assert!(!m.is_locked(), "both levels released by the unwind");
            assert!(thread::scope(|s| s
                .spawn(|| m.try_lock().is_some())
                .join()
                .unwrap()));
        }
    }

    /// `lots_and_lots` with everything a monitor does mixed in: nested locks, zero waits
    /// (inflation; `stack` / `lightweight` deflate again at unlock), `notify_all`, `try_lock`,
    /// from four threads at once. The count stays exact.
    pub fn lots_and_lots_with_waits<E: Env>(e: E) {
        const THREADS: u32 = 4;
        const ITERS: u32 = 400;
        let m = e.monitor(Cell::new(0u32));
        thread::scope(|s| {
            for t in 0..THREADS {
                let m = &m;
                s.spawn(move || {
                    for i in 0..ITERS {
                        let mut g = m.lock();
                        let before = g.get();
                        if (i + t) % 3 == 0 {
                            let nested = m.lock();
                            nested.set(nested.get() + 1);
                        } else {
                            g.set(g.get() + 1);
                        }
                        if (i + t) % 10 == 0 {
                            // Another thread may get in during the wait: re-read after it.
                            assert_eq!(g.get(), before + 1);
                            // Timed out, or woken by another thread's `notify_all`.
                            assert!(g.wait(Some(Duration::ZERO)).is_ok());
                            assert!(m.is_owned_by_current_thread());
                        } else if (i + t) % 7 == 0 {
                            g.notify_all();
                            assert_eq!(g.get(), before + 1, "no one got in");
                        } else {
                            assert_eq!(g.get(), before + 1, "no one got in");
                        }
                        drop(g);
                        if i % 5 == 0 {
                            if let Some(g) = m.try_lock() {
                                g.set(g.get() + 1);
                            }
                        }
                    }
                });
            }
        });
        let g = m.lock();
        let tries = g.get() - THREADS * ITERS;
        assert!(tries <= THREADS * ITERS / 5, "{tries} try_lock increments");
    }

    /// Eight monitors, four threads, each locking pairs in index order (no deadlock) many
    /// times, with a wait in the inner one now and then: every pair's sums are exact.
    pub fn many_monitors_many_threads<E: Env>(e: E) {
        const N: usize = 8;
        const ROUNDS: usize = 150;
        let ms: Vec<_> = (0..N).map(|_| e.monitor(Cell::new(0usize))).collect();
        thread::scope(|s| {
            for t in 0..4usize {
                let ms = &ms;
                s.spawn(move || {
                    for r in 0..ROUNDS {
                        let a = (r + t) % N;
                        let b = (r * 3 + t + 1) % N;
                        let (lo, hi) = (a.min(b), a.max(b));
                        let g1 = ms[lo].lock();
                        let mut g2 = ms[hi].lock();
                        if r % 16 == 0 {
                            let _ = g2.wait(Some(Duration::ZERO)).unwrap();
                        }
                        g1.set(g1.get() + 1);
                        if hi != lo {
                            g2.set(g2.get() + 1);
                        }
                    }
                });
            }
        });
        let total: usize = ms.iter().map(|m| m.lock().get()).sum();
        let same: usize = (0..4usize)
            .flat_map(|t| (0..ROUNDS).map(move |r| ((r + t) % N, (r * 3 + t + 1) % N)))
            .filter(|(a, b)| a == b)
            .count();
        assert_eq!(total, 2 * 4 * ROUNDS - same);
    }
}
