//! What waiting on the monitor's own wait set adds to parking_lot's facts: two condvars
//! sharing one mutex's wait set, a Java interrupt ending a wait as a wake-up, and notifies
//! without the lock racing the drop of a mutex whose last waiter leaves.

use crate::monitor_common::eventually;
use objmon::MonitorProtocol;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::channel;
use std::sync::Arc;
use std::thread::{self, sleep, JoinHandle};
use std::time::{Duration, Instant};

use super::{Condvar, Mutex};

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
