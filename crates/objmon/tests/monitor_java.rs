//! Java's monitor semantics (JLS §17.2, `Object.wait(long, int)`) as
//! `Monitor<T>` has them, for every protocol, on its process-wide runtime and on its own:
//! `wait_java`'s argument checks, zero and unrepresentable timeouts, interrupts of a waiting
//! `Monitor` user through the embedder API (one OS thread, one identity).
#![cfg(not(loom))]

mod monitor_common;
mod watchdog;

monitor_tests!(30;
    wait_java_rejects_bad_arguments,
    wait_java_times_out,
    wait_java_zero_waits_until_notified,
    wait_java_longest_waits_until_notified,
    unrepresentable_timeouts_are_invalid,
    zero_wait_releases_and_reacquires,
    zero_wait_keeps_the_depth,
    interrupt_ends_a_wait,
    interrupt_before_wait,
    interrupt_does_not_end_lock,
    try_lock_for_max_is_lock,
);

mod checks {
    use crate::monitor_common::{eventually, Env};
    use objmon::{MonitorError, WaitOutcome};
    use std::cell::Cell;
    use std::sync::{mpsc, Arc};
    use std::thread;
    use std::time::Duration;

    /// `IllegalArgumentException` cases: negative millis, nanos outside `0..=999_999`. The
    /// lock is not released by a refused wait (still held, at the same depth).
    pub fn wait_java_rejects_bad_arguments<E: Env>(e: E) {
        let m = e.monitor(());
        let outer = m.lock();
        let mut g = m.lock();
        for (millis, nanos) in [
            (-1, 0),
            (i64::MIN, 0),
            (0, -1),
            (0, 1_000_000),
            (5, i32::MIN),
            (-1, 1_000_000),
        ] {
            assert_eq!(
                g.wait_java(millis, nanos),
                Err(MonitorError::InvalidTimeout),
                "wait({millis}, {nanos})"
            );
            assert!(m.is_owned_by_current_thread());
        }
        drop(g);
        assert!(
            m.is_owned_by_current_thread(),
            "the outer level is still held"
        );
        drop(outer);
        assert!(!m.is_locked());
    }

    /// Valid short timeouts time out (retried on a spurious wake-up) holding the lock again.
    pub fn wait_java_times_out<E: Env>(e: E) {
        let m = e.monitor(());
        let mut g = m.lock();
        for (millis, nanos) in [(0, 1), (0, 999_999), (1, 0), (1, 999_999)] {
            while g.wait_java(millis, nanos).unwrap() != WaitOutcome::TimedOut {}
            assert!(m.is_owned_by_current_thread(), "wait({millis}, {nanos})");
        }
    }

    /// `wait(0, 0)` is `wait()`: no timeout, ends with a notify.
    pub fn wait_java_zero_waits_until_notified<E: Env>(e: E) {
        notified_by_other_thread(e, |g| g.wait_java(0, 0));
    }

    /// `wait(Long.MAX_VALUE, 999999)` is legal Java (the deadline fits the clock): a wait that
    /// ends with a notify.
    pub fn wait_java_longest_waits_until_notified<E: Env>(e: E) {
        notified_by_other_thread(e, |g| g.wait_java(i64::MAX, 999_999));
    }

    type Guard<'a, E> = objmon::MonitorGuard<'a, Cell<bool>, <E as Env>::P, <E as Env>::R>;

    fn notified_by_other_thread<E: Env>(
        e: E,
        wait: impl Fn(&mut Guard<'_, E>) -> Result<WaitOutcome, MonitorError>,
    ) {
        let m = Arc::new(e.monitor(Cell::new(false)));
        let mut g = m.lock();
        let m2 = m.clone();
        let t = thread::spawn(move || {
            let g = m2.lock();
            g.set(true);
            g.notify();
        });
        while !g.get() {
            assert_eq!(wait(&mut g), Ok(WaitOutcome::Notified));
        }
        drop(g);
        t.join().unwrap();
    }

    /// A timeout whose deadline the clock cannot represent is `InvalidTimeout` (documented),
    /// and the lock stays held.
    pub fn unrepresentable_timeouts_are_invalid<E: Env>(e: E) {
        let m = e.monitor(());
        let mut g = m.lock();
        assert_eq!(
            g.wait(Some(Duration::MAX)),
            Err(MonitorError::InvalidTimeout)
        );
        assert_eq!(
            g.wait_while_for(Duration::MAX, |_| true),
            Err(MonitorError::InvalidTimeout)
        );
        assert!(m.is_owned_by_current_thread());
        // A condition already false never looks at the timeout... it does: the deadline is
        // computed first. Either way the lock is held afterwards.
        let _ = g.wait_while_for(Duration::MAX, |_| false);
        assert!(m.is_owned_by_current_thread());
    }

    /// `wait(Some(Duration::ZERO))` releases the lock and takes it back: a thread blocked in
    /// `lock` gets in during such waits (looped: one release need not hand over).
    pub fn zero_wait_releases_and_reacquires<E: Env>(e: E) {
        let m = Arc::new(e.monitor(Cell::new(0u32)));
        let mut g = m.lock();
        let (tx, rx) = mpsc::channel();
        let m2 = m.clone();
        let t = thread::spawn(move || {
            tx.send(()).unwrap();
            let g = m2.lock();
            g.set(1);
        });
        rx.recv().unwrap();
        let mut waits = 0u64;
        while g.get() == 0 {
            assert_eq!(g.wait(Some(Duration::ZERO)), Ok(WaitOutcome::TimedOut));
            assert!(m.is_owned_by_current_thread());
            waits += 1;
            if waits.is_multiple_of(64) {
                thread::yield_now();
            }
        }
        drop(g);
        t.join().unwrap();
        eprintln!(
            "{}: the blocked thread got in after {waits} zero waits",
            e.name()
        );
    }

    /// A zero wait at depth three returns at depth three.
    pub fn zero_wait_keeps_the_depth<E: Env>(e: E) {
        let m = Arc::new(e.monitor(()));
        let a = m.lock();
        let b = m.lock();
        let mut c = m.lock();
        assert_eq!(c.wait(Some(Duration::ZERO)), Ok(WaitOutcome::TimedOut));
        assert_eq!(c.wait_java(0, 1), Ok(WaitOutcome::TimedOut));
        let free_elsewhere = || {
            let m = m.clone();
            thread::spawn(move || m.try_lock().is_some())
                .join()
                .unwrap()
        };
        drop(c);
        drop(b);
        assert!(!free_elsewhere());
        drop(a);
        assert!(free_elsewhere());
    }

    /// `Thread.interrupt` of a thread waiting on a `Monitor`: the embedder's
    /// `Runtime::interrupt`, with the id the waiting thread has on the runtime (its
    /// `rt.attach()` handle and its monitors are one identity). The wait ends with
    /// `Interrupted`, holding the lock; the status is cleared.
    pub fn interrupt_ends_a_wait<E: Env>(e: E) {
        let rt = e.runtime();
        let m = Arc::new(e.monitor(Cell::new(false)));
        let (id_tx, id_rx) = mpsc::channel();
        let m2 = m.clone();
        let rt2 = rt.clone();
        let t = thread::spawn(move || {
            let mut g = m2.lock();
            let me = rt2.attach().unwrap();
            id_tx.send(me.id()).unwrap();
            g.set(true); // in, about to wait (the lock is released only inside the wait)
            let r = g.wait_while(|_| true);
            assert_eq!(r, Err(MonitorError::Interrupted));
            assert!(m2.is_owned_by_current_thread());
            assert!(!me.is_interrupted(), "cleared by the wait that threw");
            // A later wait is not interrupted.
            assert_eq!(g.wait(Some(Duration::ZERO)), Ok(WaitOutcome::TimedOut));
        });
        let id = id_rx.recv().unwrap();
        // Holding the lock proves the waiter is inside `wait` (it set the flag under it).
        eventually(20, "waiter in wait", || {
            m.try_lock().is_some_and(|g| g.get())
        });
        rt.interrupt(id).unwrap();
        t.join().unwrap();
    }

    /// An interrupt pending when `wait` is called ends it at once with `Interrupted`.
    pub fn interrupt_before_wait<E: Env>(e: E) {
        let rt = e.runtime();
        let m = e.monitor(());
        let mut g = m.lock();
        let me = rt.attach().unwrap();
        rt.interrupt(me.id()).unwrap();
        assert!(me.is_interrupted());
        assert_eq!(g.wait(None), Err(MonitorError::Interrupted));
        assert!(!me.is_interrupted());
        assert!(m.is_owned_by_current_thread());
        rt.interrupt(me.id()).unwrap();
        assert_eq!(g.wait_java(0, 0), Err(MonitorError::Interrupted));
        rt.interrupt(me.id()).unwrap();
        assert_eq!(
            g.wait_while(|_| true),
            Err(MonitorError::Interrupted),
            "wait_while passes it on"
        );
    }

    /// Entering a monitor is not interruptible (JLS §17.1): a thread interrupted while
    /// blocked in `lock` keeps waiting for the lock, and its first `wait` afterwards throws.
    pub fn interrupt_does_not_end_lock<E: Env>(e: E) {
        let rt = e.runtime();
        let m = Arc::new(e.monitor(Cell::new(0u32)));
        let g = m.lock();
        let (id_tx, id_rx) = mpsc::channel();
        let (m2, rt2) = (m.clone(), rt.clone());
        let t = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            id_tx.send(me.id()).unwrap();
            let mut g = m2.lock(); // blocks; interrupted meanwhile
            assert_eq!(g.get(), 1, "got in only after the holder left");
            assert!(me.is_interrupted(), "the status is kept");
            assert_eq!(g.wait(None), Err(MonitorError::Interrupted));
        });
        let id = id_rx.recv().unwrap();
        rt.interrupt(id).unwrap();
        thread::sleep(Duration::from_millis(5)); // give it a chance to get in wrongly
        g.set(1);
        drop(g);
        t.join().unwrap();
    }

    /// `try_lock_for` with an unrepresentable timeout is `lock` (reentrant for the owner).
    pub fn try_lock_for_max_is_lock<E: Env>(e: E) {
        let m = e.monitor(3u8);
        let g = m.try_lock_for(Duration::MAX).expect("free");
        let again = m.try_lock_for(Duration::MAX).expect("reentrant");
        assert_eq!((*g, *again), (3, 3));
    }
}
