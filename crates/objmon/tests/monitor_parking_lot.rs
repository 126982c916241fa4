//! The scenarios of parking_lot's `ReentrantMutex` and `Condvar` tests
//! (`src/remutex.rs`, `src/condvar.rs`) and std's `ReentrantLock` tests, re-expressed for
//! `Monitor<T>` — a reentrant mutex *with* a condition variable, which parking_lot lacks (its
//! parking_lot#452) — and run for every protocol, on its process-wide runtime and on its own.
#![cfg(not(loom))]

mod monitor_common;
mod watchdog;

monitor_tests!(30;
    reentrant_smoke,
    is_mutex,
    trylock_works,
    ownership_queries,
    guards_share_the_value,
    wait_for,
    wait_until,
    notify_before_wait_is_lost,
    wait_releases_every_level,
    wait_sets_are_per_monitor,
    chained_notify_with_timed_waits,
    producer_consumer,
    deep_reentrancy,
);

mod checks {
    use crate::monitor_common::{eventually, Env};
    use objmon::WaitOutcome;
    use std::cell::{Cell, RefCell};
    use std::collections::VecDeque;
    use std::sync::{mpsc, Arc};
    use std::thread;
    use std::time::{Duration, Instant};

    const LONG: Duration = Duration::from_millis(u32::MAX as u64);

    /// parking_lot / std `smoke`: three nested locks on one thread.
    pub fn reentrant_smoke<E: Env>(e: E) {
        let m = e.monitor(());
        {
            let a = m.lock();
            {
                let b = m.lock();
                {
                    let c = m.lock();
                    assert_eq!(*c, ());
                }
                assert_eq!(*b, ());
            }
            assert_eq!(*a, ());
            assert!(m.is_owned_by_current_thread());
        }
        assert!(!m.is_locked());
    }

    /// parking_lot / std `is_mutex`: while the main thread holds the lock (and takes it 100
    /// more times inside), a child blocked in `lock` sees only the final sum.
    pub fn is_mutex<E: Env>(e: E) {
        let m = Arc::new(e.monitor(RefCell::new(0)));
        let m2 = m.clone();
        let lock = m.lock();
        let child = thread::spawn(move || {
            let lock = m2.lock();
            assert_eq!(*lock.borrow(), 4950);
        });
        for i in 0..100 {
            let lock = m.lock();
            *lock.borrow_mut() += i;
        }
        drop(lock);
        child.join().unwrap();
    }

    /// parking_lot / std `trylock_works`: nested `try_lock`s succeed on the owner, fail on
    /// another thread.
    pub fn trylock_works<E: Env>(e: E) {
        let m = Arc::new(e.monitor(()));
        let m2 = m.clone();
        let lock = m.try_lock();
        let lock2 = m.try_lock();
        assert!(lock.is_some() && lock2.is_some());
        thread::spawn(move || assert!(m2.try_lock().is_none()))
            .join()
            .unwrap();
        let lock3 = m.try_lock();
        assert!(lock3.is_some());
    }

    /// parking_lot `is_owned_by_current_thread` / `is_locked`, from the owner and from
    /// another thread, before any use, while held, after release.
    pub fn ownership_queries<E: Env>(e: E) {
        let m = e.monitor(0u8);
        assert!(!m.is_locked(), "never used");
        assert!(!m.is_owned_by_current_thread());
        let (held_tx, held_rx) = mpsc::channel();
        let (check_tx, check_rx) = mpsc::channel::<()>();
        thread::scope(|s| {
            let m = &m;
            let other = s.spawn(move || {
                assert!(
                    !m.is_owned_by_current_thread(),
                    "a thread that never locked"
                );
                held_rx.recv().unwrap();
                assert!(m.is_locked());
                assert!(!m.is_owned_by_current_thread(), "held by the other thread");
                assert!(m.try_lock().is_none());
                check_tx.send(()).unwrap();
                held_rx.recv().unwrap();
                assert!(!m.is_locked());
                assert!(!m.is_owned_by_current_thread());
                let g = m.try_lock().expect("free now");
                assert!(m.is_owned_by_current_thread());
                drop(g);
            });
            let g = m.lock();
            let g2 = m.lock();
            assert!(m.is_locked() && m.is_owned_by_current_thread());
            held_tx.send(()).unwrap();
            check_rx.recv().unwrap();
            drop(g2);
            assert!(m.is_owned_by_current_thread(), "one level left");
            drop(g);
            assert!(!m.is_owned_by_current_thread());
            assert!(!m.is_locked());
            held_tx.send(()).unwrap();
            other.join().unwrap();
        });
    }

    /// `ReentrantMutexGuard` gives `&T`: two guards of one thread see the same value.
    pub fn guards_share_the_value<E: Env>(e: E) {
        let m = e.monitor(Cell::new(1));
        let a = m.lock();
        let b = m.lock();
        assert!(std::ptr::eq(&*a, &*b));
        a.set(2);
        assert_eq!(b.get(), 2);
        assert!(std::ptr::eq(a.monitor(), &m));
    }

    /// parking_lot condvar `wait_for`: a 1 ms wait times out (retried if woken spuriously);
    /// then a very long one ends with the notify.
    pub fn wait_for<E: Env>(e: E) {
        let m = Arc::new(e.monitor(Cell::new(false)));
        let mut g = m.lock();
        while g.wait(Some(Duration::from_millis(1))).unwrap() != WaitOutcome::TimedOut {}
        let m2 = m.clone();
        let t = thread::spawn(move || {
            let g = m2.lock();
            g.set(true);
            g.notify();
        });
        while !g.get() {
            assert_eq!(g.wait(Some(LONG)), Ok(WaitOutcome::Notified));
        }
        drop(g);
        t.join().unwrap();
    }

    /// parking_lot condvar `wait_until`: as `wait_for`, with deadlines.
    pub fn wait_until<E: Env>(e: E) {
        let m = Arc::new(e.monitor(Cell::new(false)));
        let mut g = m.lock();
        let deadline = Instant::now() + Duration::from_millis(1);
        while g.wait_until(deadline).unwrap() != WaitOutcome::TimedOut {}
        assert!(Instant::now() >= deadline);
        // A deadline already past: releases, re-takes, times out.
        assert_eq!(g.wait_until(deadline), Ok(WaitOutcome::TimedOut));
        let m2 = m.clone();
        let t = thread::spawn(move || {
            let g = m2.lock();
            g.set(true);
            g.notify();
        });
        while !g.get() {
            let far = Instant::now() + LONG;
            assert_eq!(g.wait_until(far), Ok(WaitOutcome::Notified));
        }
        drop(g);
        t.join().unwrap();
    }

    /// A notify with nobody waiting is not remembered: a later wait times out. (parking_lot's
    /// `notify_one_return_false`; Java's `notify` likewise.)
    pub fn notify_before_wait_is_lost<E: Env>(e: E) {
        let m = e.monitor(());
        let mut g = m.lock();
        g.notify();
        g.notify_all();
        while g.wait(Some(Duration::from_millis(2))).unwrap() != WaitOutcome::TimedOut {}
        // Also across threads: a notify made by another thread before this one waits.
        drop(g);
        thread::scope(|s| {
            s.spawn(|| {
                let g = m.lock();
                g.notify_all();
            })
            .join()
            .unwrap();
        });
        let mut g = m.lock();
        while g.wait(Some(Duration::from_millis(2))).unwrap() != WaitOutcome::TimedOut {}
    }

    /// A wait with the monitor held three times releases every level (another thread gets
    /// in), and gives all three back: the lock stays held until the last guard drops.
    /// (What parking_lot#452 asks of a Condvar on a ReentrantMutex.)
    pub fn wait_releases_every_level<E: Env>(e: E) {
        let m = Arc::new(e.monitor(Cell::new(0u32)));
        let a = m.lock();
        let b = m.lock();
        let mut c = m.lock();
        let m2 = m.clone();
        let t = thread::spawn(move || {
            let g = m2.lock(); // blocks until the waiter releases all three levels
            assert!(m2.is_owned_by_current_thread());
            g.set(1);
            g.notify();
        });
        c.wait_while(|v| v.get() == 0).unwrap();
        t.join().unwrap();
        assert_eq!(a.get(), 1);
        let probe = |expect_free: bool| {
            let m = m.clone();
            thread::spawn(move || assert_eq!(m.try_lock().is_some(), expect_free))
                .join()
                .unwrap();
        };
        drop(c);
        probe(false);
        drop(b);
        assert!(m.is_owned_by_current_thread(), "one level left");
        probe(false);
        drop(a);
        assert!(!m.is_owned_by_current_thread());
        probe(true);
    }

    /// parking_lot `two_mutexes_disjoint`, and more: each monitor has its own wait set, so
    /// notifying one does not end a wait on another.
    pub fn wait_sets_are_per_monitor<E: Env>(e: E) {
        let a = Arc::new(e.monitor(Cell::new(false)));
        let b = e.monitor(Cell::new(false));
        let a2 = a.clone();
        let mut g = a.lock();
        let t = thread::spawn(move || {
            let g = a2.lock();
            g.set(true);
            g.notify();
        });
        g.wait_while(|v| !v.get()).unwrap();
        drop(g);
        t.join().unwrap();
        let stop = std::sync::atomic::AtomicBool::new(false);
        thread::scope(|s| {
            let notifier = s.spawn(|| {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let g = a.lock();
                    g.notify_all();
                    drop(g);
                    thread::yield_now();
                }
            });
            let mut g = b.lock();
            let r = g.wait_while_for(Duration::from_millis(20), |v| !v.get());
            assert_eq!(r, Ok(WaitOutcome::TimedOut), "b was never notified");
            drop(g);
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            notifier.join().unwrap();
        });
    }

    /// parking_lot `test_issue_129`: four threads wait; each, once woken, makes a short timed
    /// wait and then wakes the next with `notify` (a baton, so that a spurious wake-up cannot
    /// lose a turn). Every thread gets through.
    pub fn chained_notify_with_timed_waits<E: Env>(e: E) {
        const N: u32 = 4;
        // (waiting, baton, finished)
        let m = Arc::new(e.monitor(Cell::new((0u32, false, 0u32))));
        let (tx, rx) = mpsc::channel();
        let ts: Vec<_> = (0..N)
            .map(|_| {
                let m = m.clone();
                let tx = tx.clone();
                thread::spawn(move || {
                    let mut g = m.lock();
                    let (w, b, f) = g.get();
                    g.set((w + 1, b, f));
                    g.wait_while(|s| !s.get().1).unwrap();
                    let (w, _, f) = g.get();
                    g.set((w, false, f)); // take the baton
                    let _ = g.wait(Some(Duration::from_millis(1))).unwrap();
                    let (w, _, f) = g.get();
                    g.set((w, true, f + 1)); // hand it on
                    g.notify();
                    tx.send(()).unwrap();
                })
            })
            .collect();
        eventually(20, "all waiting", || m.lock().get().0 == N);
        {
            let g = m.lock();
            let (w, _, f) = g.get();
            g.set((w, true, f));
            g.notify();
        }
        for _ in 0..N {
            rx.recv().unwrap();
        }
        for t in ts {
            t.join().unwrap();
        }
        assert_eq!(m.lock().get().2, N);
    }

    /// A bounded queue (the README's producer / consumer): two producers, two consumers,
    /// `wait_while` on both sides, every item consumed once.
    pub fn producer_consumer<E: Env>(e: E) {
        const ITEMS: u32 = 500;
        const CAP: usize = 4;
        let q = e.monitor(RefCell::new((VecDeque::<u32>::new(), 0u32))); // (items, done)
        let sum = thread::scope(|s| {
            for p in 0..2 {
                let q = &q;
                s.spawn(move || {
                    for i in 0..ITEMS {
                        let mut g = q.lock();
                        g.wait_while(|v| v.borrow().0.len() >= CAP).unwrap();
                        g.borrow_mut().0.push_back(p * ITEMS + i);
                        g.notify_all();
                    }
                    let g = q.lock();
                    g.borrow_mut().1 += 1;
                    g.notify_all();
                });
            }
            let consumers: Vec<_> = (0..2)
                .map(|_| {
                    let q = &q;
                    s.spawn(move || {
                        let mut got = 0u64;
                        loop {
                            let mut g = q.lock();
                            g.wait_while(|v| {
                                let v = v.borrow();
                                v.0.is_empty() && v.1 < 2
                            })
                            .unwrap();
                            let item = g.borrow_mut().0.pop_front();
                            match item {
                                Some(x) => {
                                    got += u64::from(x);
                                    g.notify_all();
                                }
                                None => return got,
                            }
                        }
                    })
                })
                .collect();
            consumers
                .into_iter()
                .map(|c| c.join().unwrap())
                .sum::<u64>()
        });
        let n = u64::from(2 * ITEMS);
        assert_eq!(sum, n * (n - 1) / 2);
    }

    /// 1,000 nested levels (past any header's recursion bits: `thin` counts 8 bits, the
    /// others inflate or count in a lock record), a wait at that depth, then the levels
    /// released one by one: held until the last.
    pub fn deep_reentrancy<E: Env>(e: E) {
        const DEPTH: usize = 1_000;
        let m = Arc::new(e.monitor(Cell::new(0u32)));
        let mut gs: Vec<_> = (0..DEPTH).map(|_| m.lock()).collect();
        let m2 = m.clone();
        let t = thread::spawn(move || {
            let g = m2.lock();
            g.set(1);
            g.notify();
        });
        gs.last_mut().unwrap().wait_while(|v| v.get() == 0).unwrap();
        t.join().unwrap();
        let free_elsewhere = || {
            let m = m.clone();
            thread::spawn(move || m.try_lock().is_some())
                .join()
                .unwrap()
        };
        while gs.len() > 1 {
            gs.pop();
            if gs.len() % 250 == 0 {
                assert!(!free_elsewhere(), "{} levels left", gs.len());
            }
        }
        assert!(m.is_owned_by_current_thread());
        gs.pop();
        assert!(!m.is_owned_by_current_thread());
        assert!(free_elsewhere());
    }
}
