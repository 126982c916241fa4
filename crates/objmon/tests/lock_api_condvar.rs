//! `lock_api::Condvar<objmon::RawCondvar<P>>` with `lock_api::Mutex<objmon::RawMonitor<P>, T>`:
//! the facts parking_lot's own `Condvar` tests check (its `src/condvar.rs` tests and WebKit
//! queue tests), for every protocol a `RawMonitor` takes, plus what waiting on the monitor's
//! own wait set adds: notifies without the lock, two condvars sharing one mutex's wait set,
//! interrupts, and a mutex dropped as soon as its last waiter leaves.
//!
//! Where parking_lot's notifies return what they woke, `RawCondvar` returns `false` / `0`
//! (it may wake spuriously, so lock_api's contract makes it so); those tests check that.
#![cfg(not(loom))]

mod monitor_common;
mod watchdog;

per_protocol!(30;
    smoke,
    notify_one,
    notify_one_while_holding,
    notify_all,
    notify_returns_nothing,
    wait_for,
    wait_until,
    wait_for_unrepresentable_timeout,
    wait_while_does_not_wait_if_initially_false,
    wait_while_until_times_out_before_false,
    wait_while_until,
    wait_while_for,
    two_mutexes_panics,
    two_mutexes_disjoint,
    debug_condvar,
    notified_waiter_gets_the_mutex_after_the_notifier,
    chained_notify_one,
    two_condvars_one_mutex,
    interrupt_ends_a_wait_as_a_wake_up,
    mutex_dropped_after_its_last_waiter,
    queue_notify_all_bounded,
    queue_notify_one_forever,
    queue_ten_producers_notify_one,
);

/// A `static` condvar and mutex (`Condvar::new` and `Mutex::from_raw` are `const`).
static FLAG: lock_api::Mutex<objmon::RawMonitor, bool> =
    lock_api::Mutex::from_raw(<objmon::RawMonitor as lock_api::RawMutex>::INIT, false);
static FLAG_CV: lock_api::Condvar<objmon::RawCondvar> = lock_api::Condvar::new();

#[test]
fn in_statics() {
    watchdog::within(30, "statics", || {
        let t = std::thread::spawn(|| {
            *FLAG.lock() = true;
            FLAG_CV.notify_all();
        });
        let mut g = FLAG.lock();
        FLAG_CV.wait_while(&mut g, |f| !*f);
        drop(g);
        t.join().unwrap();
    });
}

/// The types are `Send + Sync` (lock_api's `Condvar<C>` is when `C` is).
#[test]
fn send_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<objmon::RawCondvar>();
    send_sync::<lock_api::Condvar<objmon::RawCondvar<objmon::Fable>>>();
}

/// `objmon::lock_api` is the lock_api these types implement.
#[test]
fn reexported_lock_api_is_the_one_implemented() {
    let m = objmon::lock_api::Mutex::<objmon::RawMonitor, u8>::new(1);
    let c = objmon::lock_api::Condvar::<objmon::RawCondvar>::new();
    let mut g = m.lock();
    assert!(c.wait_for(&mut g, std::time::Duration::ZERO).timed_out());
}

mod checks {
    use crate::monitor_common::eventually;
    use lock_api::MutexGuard;
    use objmon::{MonitorProtocol, RawMonitor};
    use std::collections::VecDeque;
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::mpsc::channel;
    use std::sync::Arc;
    use std::thread::{self, sleep, JoinHandle};
    use std::time::{Duration, Instant};

    type Mutex<P, T> = lock_api::Mutex<RawMonitor<P>, T>;
    type Condvar<P> = lock_api::Condvar<objmon::RawCondvar<P>>;

    /// parking_lot `smoke`: notifies with nobody waiting, never bound to a mutex.
    pub fn smoke<P: MonitorProtocol>() {
        let c = Condvar::<P>::new();
        c.notify_one();
        c.notify_all();
    }

    /// parking_lot `notify_one`: the notifier holds the mutex (taken after the waiter
    /// released it in `wait`).
    pub fn notify_one<P: MonitorProtocol>() {
        let m = Arc::new(Mutex::<P, ()>::new(()));
        let m2 = m.clone();
        let c = Arc::new(Condvar::<P>::new());
        let c2 = c.clone();

        let mut g = m.lock();
        let t = thread::spawn(move || {
            let _g = m2.lock();
            c2.notify_one();
        });
        c.wait(&mut g);
        drop(g);
        t.join().unwrap();
    }

    /// std's `notify_one` shape, and lock_api's usual one: the notifier sets the flag under
    /// the lock and notifies after unlocking (the notify takes the lock itself).
    pub fn notify_one_while_holding<P: MonitorProtocol>() {
        let pair = Arc::new((Mutex::<P, bool>::new(false), Condvar::<P>::new()));
        let pair2 = pair.clone();
        let t = thread::spawn(move || {
            let (m, c) = &*pair2;
            *m.lock() = true;
            c.notify_one();
        });
        let (m, c) = &*pair;
        let mut g = m.lock();
        while !*g {
            c.wait(&mut g);
        }
        drop(g);
        t.join().unwrap();
    }

    fn n_waiters<P: MonitorProtocol>(
        notify: impl FnOnce(&Condvar<P>),
    ) -> Arc<(Mutex<P, usize>, Condvar<P>)> {
        const N: usize = 10;
        let data = Arc::new((Mutex::<P, usize>::new(0), Condvar::<P>::new()));
        let (tx, rx) = channel();
        let mut ts = Vec::new();
        for _ in 0..N {
            let data = data.clone();
            let tx = tx.clone();
            ts.push(thread::spawn(move || {
                let (lock, cond) = &*data;
                let mut cnt = lock.lock();
                *cnt += 1;
                if *cnt == N {
                    tx.send(()).unwrap();
                }
                while *cnt != 0 {
                    cond.wait(&mut cnt);
                }
                tx.send(()).unwrap();
            }));
        }
        drop(tx);

        let (lock, cond) = &*data;
        rx.recv().unwrap();
        let mut cnt = lock.lock();
        *cnt = 0;
        notify(cond);
        drop(cnt);
        for _ in 0..N {
            rx.recv().unwrap();
        }
        for t in ts {
            t.join().unwrap();
        }
        data
    }

    /// parking_lot `notify_all`: ten waiters, one `notify_all` under the lock wakes them all.
    pub fn notify_all<P: MonitorProtocol>() {
        n_waiters::<P>(|c| {
            c.notify_all();
        });
    }

    /// parking_lot `notify_one_return_true` / `_false` / `notify_all_return`: `RawCondvar`
    /// may wake spuriously, so lock_api's contract has its notifies return `false` / `0`,
    /// whether they woke someone or not; and they still wake.
    pub fn notify_returns_nothing<P: MonitorProtocol>() {
        let m = Arc::new(Mutex::<P, ()>::new(()));
        let m2 = m.clone();
        let c = Arc::new(Condvar::<P>::new());
        let c2 = c.clone();
        let mut g = m.lock();
        let t = thread::spawn(move || {
            let _g = m2.lock();
            assert!(!c2.notify_one(), "woke one, but says false");
        });
        c.wait(&mut g);
        drop(g);
        t.join().unwrap();

        let _g = m.lock();
        assert!(!c.notify_one(), "nobody waits");
        let data = n_waiters::<P>(|c| assert_eq!(c.notify_all(), 0, "woke ten, but says 0"));
        assert_eq!(data.1.notify_all(), 0, "nobody waits");
    }

    /// parking_lot `wait_for`: a short wait times out; a huge one (no deadline representable:
    /// an untimed wait) ends by a notify, not timed out.
    pub fn wait_for<P: MonitorProtocol>() {
        let m = Arc::new(Mutex::<P, ()>::new(()));
        let m2 = m.clone();
        let c = Arc::new(Condvar::<P>::new());
        let c2 = c.clone();

        let mut g = m.lock();
        let start = Instant::now();
        let no_timeout = c.wait_for(&mut g, Duration::from_millis(1));
        assert!(no_timeout.timed_out());
        assert!(
            start.elapsed() >= Duration::from_millis(1),
            "timed out early"
        );

        let t = thread::spawn(move || {
            let _g = m2.lock();
            c2.notify_one();
        });
        let timeout_res = c.wait_for(&mut g, Duration::from_secs(u64::MAX));
        assert!(!timeout_res.timed_out());
        drop(g);
        t.join().unwrap();
    }

    /// parking_lot `wait_until`.
    pub fn wait_until<P: MonitorProtocol>() {
        let m = Arc::new(Mutex::<P, ()>::new(()));
        let m2 = m.clone();
        let c = Arc::new(Condvar::<P>::new());
        let c2 = c.clone();

        let mut g = m.lock();
        let deadline = Instant::now() + Duration::from_millis(1);
        let no_timeout = c.wait_until(&mut g, deadline);
        assert!(no_timeout.timed_out());
        assert!(Instant::now() >= deadline, "timed out early");
        // A deadline already past: released, taken back, timed out.
        assert!(c.wait_until(&mut g, Instant::now()).timed_out());
        let t = thread::spawn(move || {
            let _g = m2.lock();
            c2.notify_one();
        });
        let timeout_res = c.wait_until(
            &mut g,
            Instant::now() + Duration::from_millis(u32::MAX as u64),
        );
        assert!(!timeout_res.timed_out());
        drop(g);
        t.join().unwrap();
    }

    /// `wait_while_for` with a duration no deadline can represent waits untimed (lock_api's
    /// fallback through `checked_duration_to_instant`).
    pub fn wait_for_unrepresentable_timeout<P: MonitorProtocol>() {
        let pair = Arc::new((Mutex::<P, bool>::new(false), Condvar::<P>::new()));
        let pair2 = pair.clone();
        let t = thread::spawn(move || {
            let (m, c) = &*pair2;
            *m.lock() = true;
            c.notify_all();
        });
        let (m, c) = &*pair;
        let mut g = m.lock();
        let r = c.wait_while_for(&mut g, |f| !*f, Duration::MAX);
        assert!(!r.timed_out());
        assert!(*g);
        drop(g);
        t.join().unwrap();
    }

    /// parking_lot's `spawn_wait_while_notifier`: for each epoch, waits (polling with
    /// back-off) until the counter reaches it, then notifies (outside the lock here, which
    /// lock_api allows: the notify takes the lock).
    fn spawn_wait_while_notifier<P: MonitorProtocol>(
        mutex: Arc<Mutex<P, u32>>,
        cv: Arc<Condvar<P>>,
        num_iters: u32,
        timeout: Option<Instant>,
    ) -> JoinHandle<()> {
        thread::spawn(move || {
            for epoch in 1..=num_iters {
                let mut sleep_backoff = Duration::from_millis(1);
                loop {
                    let mutex_guard = mutex.lock();
                    if let Some(timeout) = timeout {
                        if Instant::now() >= timeout {
                            return;
                        }
                    }
                    if *mutex_guard == epoch {
                        break;
                    }
                    drop(mutex_guard);
                    sleep(sleep_backoff);
                    sleep_backoff *= 2;
                }
                cv.notify_one();
            }
        })
    }

    /// parking_lot `wait_while_until_internal_does_not_wait_if_initially_false`.
    pub fn wait_while_does_not_wait_if_initially_false<P: MonitorProtocol>() {
        let mutex = Mutex::<P, u32>::new(0);
        let cv = Condvar::<P>::new();
        let condition = |counter: &mut u32| {
            *counter += 1;
            false
        };
        let mut g = mutex.lock();
        let r = cv.wait_while_until(&mut g, condition, Instant::now() + Duration::from_secs(60));
        assert!(!r.timed_out());
        assert_eq!(*g, 1);
        cv.wait_while(&mut g, condition);
        assert_eq!(*g, 2);
        let r = cv.wait_while_for(&mut g, condition, Duration::ZERO);
        assert!(!r.timed_out());
        assert_eq!(*g, 3);
    }

    /// parking_lot `wait_while_until_internal_times_out_before_false`.
    pub fn wait_while_until_times_out_before_false<P: MonitorProtocol>() {
        let mutex = Arc::new(Mutex::<P, u32>::new(0));
        let cv = Arc::new(Condvar::<P>::new());
        let num_iters = 3;
        let condition = |counter: &mut u32| {
            *counter += 1;
            true
        };
        let mut g = mutex.lock();
        let timeout = Instant::now() + Duration::from_millis(500);
        let handle = spawn_wait_while_notifier(mutex.clone(), cv.clone(), num_iters, Some(timeout));
        let r = cv.wait_while_until(&mut g, condition, timeout);
        assert!(r.timed_out());
        assert!(Instant::now() >= timeout);
        // parking_lot's own loop counts `num_iters + 1`; lock_api 0.5's `wait_while_until`
        // checks the condition once more after the timed-out wait.
        assert_eq!(*g, num_iters + 2);
        drop(g);
        handle.join().unwrap();
    }

    /// parking_lot `wait_while_until_internal`, without a deadline (`wait_while`).
    pub fn wait_while_until<P: MonitorProtocol>() {
        let mutex = Arc::new(Mutex::<P, u32>::new(0));
        let cv = Arc::new(Condvar::<P>::new());
        let num_iters = 4;
        let condition = |counter: &mut u32| {
            *counter += 1;
            *counter <= num_iters
        };
        let mut g = mutex.lock();
        let handle = spawn_wait_while_notifier(mutex.clone(), cv.clone(), num_iters, None);
        cv.wait_while(&mut g, condition);
        assert_eq!(*g, num_iters + 1);
        cv.wait_while(&mut g, condition);
        drop(g);
        handle.join().unwrap();
        assert_eq!(*mutex.lock(), num_iters + 2);
    }

    /// The same with a far deadline (`wait_while_for`): notified each time, never timed out.
    pub fn wait_while_for<P: MonitorProtocol>() {
        let mutex = Arc::new(Mutex::<P, u32>::new(0));
        let cv = Arc::new(Condvar::<P>::new());
        let num_iters = 4;
        let condition = |counter: &mut u32| {
            *counter += 1;
            *counter <= num_iters
        };
        let mut g = mutex.lock();
        let handle = spawn_wait_while_notifier(mutex.clone(), cv.clone(), num_iters, None);
        let r = cv.wait_while_for(&mut g, condition, Duration::from_secs(60));
        assert!(!r.timed_out());
        assert_eq!(*g, num_iters + 1);
        drop(g);
        handle.join().unwrap();
    }

    /// parking_lot `two_mutexes` (`#[should_panic]` there): waiting with a second mutex while
    /// a thread waits with the first panics, and the panicking thread still holds its mutex
    /// (the guard unlocks it while unwinding); the first waiter is unaffected.
    pub fn two_mutexes_panics<P: MonitorProtocol>() {
        let m = Arc::new(Mutex::<P, bool>::new(false));
        let m2 = m.clone();
        let m3 = Arc::new(Mutex::<P, ()>::new(()));
        let c = Arc::new(Condvar::<P>::new());
        let c2 = c.clone();

        let (tx, rx) = channel();
        let g = m.lock();
        let t = thread::spawn(move || {
            let mut g = m2.lock();
            tx.send(()).unwrap();
            c2.wait_while(&mut g, |done| !*done);
        });
        drop(g);
        rx.recv().unwrap();
        drop(m.lock()); // the waiter released `m`: it waits

        let panicked = catch_unwind(AssertUnwindSafe(|| {
            c.wait(&mut m3.lock());
        }));
        let msg = panicked.expect_err("a wait with a second mutex must panic");
        let msg = msg
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| msg.downcast_ref::<String>().map(String::as_str))
            .unwrap_or_default()
            .to_owned();
        assert!(msg.contains("two mutexes"), "{msg}");
        assert!(!m3.is_locked(), "unlocked by the guard while unwinding");

        // The condvar still works for the first mutex.
        *m.lock() = true;
        c.notify_one();
        t.join().unwrap();
    }

    /// parking_lot `two_mutexes_disjoint`: once nobody waits, the condvar may be used with
    /// another mutex.
    pub fn two_mutexes_disjoint<P: MonitorProtocol>() {
        let m = Arc::new(Mutex::<P, ()>::new(()));
        let m2 = m.clone();
        let m3 = Arc::new(Mutex::<P, ()>::new(()));
        let c = Arc::new(Condvar::<P>::new());
        let c2 = c.clone();

        let mut g = m.lock();
        let t = thread::spawn(move || {
            let _g = m2.lock();
            c2.notify_one();
        });
        c.wait(&mut g);
        drop(g);
        t.join().unwrap();

        let _ = c.wait_for(&mut m3.lock(), Duration::from_millis(1));
        // And back.
        assert!(c
            .wait_for(&mut m.lock(), Duration::from_millis(1))
            .timed_out());
    }

    /// parking_lot `test_debug_condvar`, and the raw condvar's own `Debug`.
    pub fn debug_condvar<P: MonitorProtocol>() {
        let c = Condvar::<P>::new();
        assert_eq!(format!("{c:?}"), "Condvar { .. }");
        let name = <P as objmon::Protocol>::NAME;
        assert_eq!(
            format!("{:?}", c.raw()),
            format!("RawCondvar {{ protocol: {name:?}, waiters: 0 }}")
        );
    }

    /// parking_lot `test_condvar_requeue`, as a wait on the monitor's wait set has it: a
    /// waiter notified by a thread that holds the mutex runs only once that thread lets go.
    pub fn notified_waiter_gets_the_mutex_after_the_notifier<P: MonitorProtocol>() {
        let m = Arc::new(Mutex::<P, u32>::new(0));
        let m2 = m.clone();
        let c = Arc::new(Condvar::<P>::new());
        let c2 = c.clone();
        let t = thread::spawn(move || {
            let mut g = m2.lock();
            *g = 1;
            while *g == 1 {
                c2.wait(&mut g);
            }
            assert_eq!(*g, 3, "woke before the notifier released the mutex");
        });
        eventually(20, "waiter in wait", || {
            m.try_lock().is_some_and(|g| *g == 1)
        });
        let mut g = m.lock();
        *g = 2;
        c.notify_one();
        sleep(Duration::from_millis(20)); // the waiter, woken, must wait for the mutex
        *g = 3;
        drop(g);
        t.join().unwrap();
    }

    /// parking_lot `test_issue_129`: four waiters; one notify wakes one, each woken one waits
    /// a millisecond more and passes the notify on: all four finish.
    pub fn chained_notify_one<P: MonitorProtocol>() {
        let locks = Arc::new((Mutex::<P, usize>::new(0), Condvar::<P>::new()));
        let (tx, rx) = channel();
        let mut ts = Vec::new();
        for _ in 0..4 {
            let locks = locks.clone();
            let tx = tx.clone();
            ts.push(thread::spawn(move || {
                let mut guard = locks.0.lock();
                *guard += 1;
                locks.1.wait(&mut guard);
                locks.1.wait_for(&mut guard, Duration::from_millis(1));
                locks.1.notify_one();
                tx.send(()).unwrap();
            }));
        }
        eventually(20, "four waiters", || *locks.0.lock() == 4);
        locks.1.notify_one();
        for _ in 0..4 {
            assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(()));
        }
        for t in ts {
            t.join().unwrap();
        }
    }

    /// Two condvars on one mutex share its one wait set: a `notify_one` on one still wakes
    /// one of its own waiters, however the other's waiters are queued (the notify wakes the
    /// whole wait set then; the others' wake-ups are spurious).
    pub fn two_condvars_one_mutex<P: MonitorProtocol>() {
        #[derive(Default)]
        struct S {
            a_waiting: usize,
            b_waiting: usize,
            a_go: bool,
            b_go: bool,
        }
        let m = Arc::new(Mutex::<P, S>::new(S::default()));
        let a = Arc::new(Condvar::<P>::new());
        let b = Arc::new(Condvar::<P>::new());
        let mut ts = Vec::new();
        // Two of `b`'s waiters first (the head of the wait set), then one of `a`'s.
        for (i, is_a) in [false, false, true].into_iter().enumerate() {
            let (m2, cv) = (m.clone(), if is_a { a.clone() } else { b.clone() });
            ts.push(thread::spawn(move || {
                let mut g = m2.lock();
                if is_a {
                    g.a_waiting += 1;
                    while !g.a_go {
                        cv.wait(&mut g);
                    }
                } else {
                    g.b_waiting += 1;
                    while !g.b_go {
                        cv.wait(&mut g);
                    }
                }
            }));
            // Free with the count up: the new waiter released the mutex in `wait`.
            eventually(20, "waiter in wait", || {
                m.try_lock()
                    .is_some_and(|g| g.a_waiting + g.b_waiting == i + 1)
            });
        }
        m.lock().a_go = true;
        a.notify_one(); // must reach `a`'s waiter, behind `b`'s two
        let a_waiter = ts.pop().unwrap();
        watchdog_join(a_waiter, "the waiter of `a`");
        m.lock().b_go = true;
        b.notify_all();
        for t in ts {
            t.join().unwrap();
        }
    }

    fn watchdog_join(t: JoinHandle<()>, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !t.is_finished() {
            assert!(Instant::now() < deadline, "{what} was not woken");
            sleep(Duration::from_millis(1));
        }
        t.join().unwrap();
    }

    /// A Java interrupt (`Runtime::interrupt`) of a thread waiting through lock_api's
    /// `Condvar` ends the wait as a wake-up (lock_api has no way to report it; a timed wait
    /// says "not timed out"), holding the mutex, and is consumed: the next wait waits.
    pub fn interrupt_ends_a_wait_as_a_wake_up<P: MonitorProtocol>() {
        let rt = objmon::vm::global_runtime::<P>().clone();
        let m = Arc::new(Mutex::<P, bool>::new(false));
        let c = Arc::new(Condvar::<P>::new());
        let (id_tx, id_rx) = channel();
        let (m2, c2, rt2) = (m.clone(), c.clone(), rt.clone());
        let t = thread::spawn(move || {
            let mut g = m2.lock();
            let me = rt2.attach().unwrap(); // the same identity as the mutex's lock
            id_tx.send(me.id()).unwrap();
            *g = true; // about to wait
            let r = c2.wait_for(&mut g, Duration::from_secs(20));
            assert!(!r.timed_out(), "an interrupt is a wake-up, not a timeout");
            assert!(m2.is_locked());
            assert!(!me.is_interrupted(), "consumed by the wait");
            // Pending before the wait: ends it at once, consumed too.
            rt2.interrupt(me.id()).unwrap();
            assert!(!c2.wait_for(&mut g, Duration::from_secs(20)).timed_out());
            assert!(!me.is_interrupted());
            // The next wait waits.
            assert!(c2.wait_for(&mut g, Duration::from_millis(5)).timed_out());
        });
        let id = id_rx.recv().unwrap();
        eventually(20, "waiter in wait", || m.try_lock().is_some_and(|g| *g));
        rt.interrupt(id).unwrap();
        t.join().unwrap();
    }

    /// Notifies without the lock racing with the last waiter's timeout and the mutex's drop:
    /// the notifier takes the mutex it pinned, so the waiter leaves only once the notifier is
    /// done with it (run under a sanitizer or valgrind, a use after free would show here).
    pub fn mutex_dropped_after_its_last_waiter<P: MonitorProtocol>() {
        let c = Arc::new(Condvar::<P>::new());
        let stop = Arc::new(AtomicBool::new(false));
        let notifies = Arc::new(AtomicUsize::new(0));
        let notifier = {
            let (c, stop, notifies) = (c.clone(), stop.clone(), notifies.clone());
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    c.notify_one();
                    c.notify_all();
                    notifies.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        // Racing from the first wait on (a busy machine may start the notifier late).
        eventually(20, "notifier running", || {
            notifies.load(Ordering::Relaxed) > 0
        });
        for i in 0..300 {
            let m = Box::new(Mutex::<P, u64>::new(i));
            let mut g = m.lock();
            let _ = c.wait_for(&mut g, Duration::from_micros(50));
            *g += 1;
            drop(g);
            drop(m);
        }
        stop.store(true, Ordering::Relaxed);
        notifier.join().unwrap();
    }

    // WebKit's queue test as parking_lot runs it (`webkit_queue_test`): producers and
    // consumers over a bounded queue, with `empty` and `full` condvars on one mutex (so on
    // one monitor's wait set here). Fewer messages than parking_lot's (ten protocols, two
    // cores).

    #[derive(Clone, Copy)]
    enum Timeout {
        Bounded(Duration),
        Forever,
    }

    #[derive(Clone, Copy)]
    enum NotifyStyle {
        One,
        All,
    }

    struct Queue {
        items: VecDeque<usize>,
        should_continue: bool,
    }

    fn wait<P: MonitorProtocol, T: ?Sized>(
        condition: &Condvar<P>,
        lock: &mut MutexGuard<'_, RawMonitor<P>, T>,
        predicate: impl Fn(&mut MutexGuard<'_, RawMonitor<P>, T>) -> bool,
        timeout: &Timeout,
    ) {
        while !predicate(lock) {
            match timeout {
                Timeout::Forever => condition.wait(lock),
                Timeout::Bounded(bound) => {
                    condition.wait_for(lock, *bound);
                }
            }
        }
    }

    fn notify<P: MonitorProtocol>(style: NotifyStyle, condition: &Condvar<P>, should_notify: bool) {
        match style {
            NotifyStyle::One => {
                condition.notify_one();
            }
            NotifyStyle::All => {
                if should_notify {
                    condition.notify_all();
                }
            }
        }
    }

    fn run_queue_test<P: MonitorProtocol>(
        num_producers: usize,
        num_consumers: usize,
        max_queue_size: usize,
        messages_per_producer: usize,
        notify_style: NotifyStyle,
        timeout: Timeout,
    ) {
        let input_queue = Arc::new(Mutex::<P, Queue>::new(Queue {
            items: VecDeque::new(),
            should_continue: true,
        }));
        let empty = Arc::new(Condvar::<P>::new());
        let full = Arc::new(Condvar::<P>::new());
        let output = Arc::new(Mutex::<P, Vec<usize>>::new(vec![]));

        let consumers = (0..num_consumers)
            .map(|_| {
                let (q, empty, full, output) = (
                    input_queue.clone(),
                    empty.clone(),
                    full.clone(),
                    output.clone(),
                );
                thread::spawn(move || loop {
                    let (should_notify, result) = {
                        let mut queue = q.lock();
                        wait(
                            &empty,
                            &mut queue,
                            |s| !s.items.is_empty() || !s.should_continue,
                            &timeout,
                        );
                        if queue.items.is_empty() && !queue.should_continue {
                            return;
                        }
                        let should_notify = queue.items.len() == max_queue_size;
                        let result = queue.items.pop_front();
                        drop(queue);
                        (should_notify, result)
                    };
                    notify(notify_style, &full, should_notify);
                    if let Some(result) = result {
                        output.lock().push(result);
                    }
                })
            })
            .collect::<Vec<_>>();
        let producers = (0..num_producers)
            .map(|_| {
                let (q, empty, full) = (input_queue.clone(), empty.clone(), full.clone());
                thread::spawn(move || {
                    for message in 0..messages_per_producer {
                        let should_notify = {
                            let mut queue = q.lock();
                            wait(
                                &full,
                                &mut queue,
                                |s| s.items.len() < max_queue_size,
                                &timeout,
                            );
                            let should_notify = queue.items.is_empty();
                            queue.items.push_back(message);
                            should_notify
                        };
                        notify(notify_style, &empty, should_notify);
                    }
                })
            })
            .collect::<Vec<_>>();

        for producer in producers {
            producer.join().expect("producer panicked");
        }
        input_queue.lock().should_continue = false;
        empty.notify_all();
        for consumer in consumers {
            consumer.join().expect("consumer panicked");
        }

        let mut output = output.lock();
        assert_eq!(output.len(), num_producers * messages_per_producer);
        output.sort();
        for msg_idx in 0..messages_per_producer {
            for producer_idx in 0..num_producers {
                assert_eq!(msg_idx, output[msg_idx * num_producers + producer_idx]);
            }
        }
    }

    /// WebKit `sanity_check_queue` / `new_test_without_timeout_5`: notify_all, one slot.
    pub fn queue_notify_all_bounded<P: MonitorProtocol>() {
        run_queue_test::<P>(
            1,
            1,
            1,
            2_000,
            NotifyStyle::All,
            Timeout::Bounded(Duration::from_secs(1)),
        );
        run_queue_test::<P>(1, 5, 1, 2_000, NotifyStyle::All, Timeout::Forever);
    }

    /// WebKit `one_producer_one_consumer_one_slot` / `_hundred_slots` with notify_one.
    pub fn queue_notify_one_forever<P: MonitorProtocol>() {
        run_queue_test::<P>(1, 1, 1, 2_000, NotifyStyle::One, Timeout::Forever);
        run_queue_test::<P>(1, 1, 100, 10_000, NotifyStyle::One, Timeout::Forever);
    }

    /// WebKit `ten_producers_one_consumer_one_slot` and `ten_producers_ten_consumers_one_slot`
    /// with notify_one: many waiters of both condvars in the one wait set.
    pub fn queue_ten_producers_notify_one<P: MonitorProtocol>() {
        run_queue_test::<P>(10, 1, 1, 300, NotifyStyle::One, Timeout::Forever);
        run_queue_test::<P>(10, 10, 1, 300, NotifyStyle::One, Timeout::Forever);
    }
}
