//! parking_lot's own `Condvar` tests (its `src/condvar.rs`), ported: notifies with and
//! without waiters, what notifies return (`false` / `0` here: `RawCondvar` may wake
//! spuriously), timed waits and their timeouts, `wait_while`, the one-mutex-per-condvar
//! panic, `Debug`, the requeue and chained-notify regressions.

use crate::monitor_common::eventually;
use objmon::MonitorProtocol;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::channel;
use std::sync::Arc;
use std::thread::{self, sleep, JoinHandle};
use std::time::{Duration, Instant};

use super::{Condvar, Mutex};

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
