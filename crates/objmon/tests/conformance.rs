//! The conformance suite: every protocol in `objmon::vm::visit_all` must pass all of it.
//!
//! Each `#[test]` runs one check against every protocol in turn (naming the protocol on
//! failure) under a watchdog, so a hang fails the test instead of stalling CI.
#![cfg(not(loom))]

use objmon::vm::{
    Config, MonitorError, Protocol, ProtocolVisitor, Runtime, SystemLockConfig, ThreadId,
    WaitOutcome,
};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

mod watchdog;
use watchdog::within;

macro_rules! conformance {
    ($($check:ident),* $(,)?) => {$(
        #[test]
        fn $check() {
            struct V;
            impl ProtocolVisitor for V {
                fn visit<P: Protocol>(&mut self) {
                    let what = concat!(stringify!($check), " on ");
                    eprintln!("{what}{}", P::NAME);
                    within(60, P::NAME, checks::$check::<P>);
                }
            }
            objmon::vm::visit_all(&mut V);
        }
    )*};
}

conformance!(
    uncontended_enter_exit,
    reentrancy_deep,
    misuse_is_an_error,
    exit_by_non_owner_is_an_error,
    mutual_exclusion,
    mutual_exclusion_nested,
    try_enter,
    wait_releases_all_levels_and_restores,
    notify_moves_one_notify_all_moves_all,
    timed_wait_never_returns_early,
    zero_timeout_releases_and_reacquires,
    interrupt_during_wait,
    interrupt_before_wait,
    notify_and_interrupt_never_swallows,
    invalid_timeouts,
    unstructured_out_of_order,
    detach_releases_unstructured_locks,
    thread_ids_are_bounded_and_reused,
    monitor_table_full_is_an_error,
    guard_releases_on_panic,
    owner_of_from_other_threads,
    waiter_gets_lock_despite_barging,
    producer_consumer_with_wait_notify_all,
    reclaim_returns_monitors,
);

// Identity hash.
conformance!(
    hash_is_stable_in_every_lock_state,
    hash_first_taken_while_another_thread_holds_the_lock,
    hash_while_another_thread_waits,
    hashes_are_mostly_distinct,
    hash_races_with_lock_traffic,
    hash_with_a_full_monitor_table,
    reclaim_discards_the_hash,
);

// Introspection: thread dumps, deadlock detection, profiling.
conformance!(
    deadlocks_of_two_and_three_threads_are_found,
    notified_waiter_reentering_is_a_deadlock_edge,
    thread_dump_shows_owners_counts_blocked_and_waiting,
    no_deadlock_reported_under_ordered_load,
    profiling_off_reports_nothing,
    profiling_on_counts_contention_and_waits,
);

mod checks {
    use super::*;

    fn rt<P: Protocol>() -> Arc<Runtime<P>> {
        // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
        // run only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        unsafe { Runtime::<P>::new_unchecked(Default::default()) }
    }

    pub fn uncontended_enter_exit<P: Protocol>() {
        let rt = rt::<P>();
        let h = P::Header::default();
        let me = rt.attach().unwrap();
        assert!(!me.holds_lock(&h));
        assert_eq!(rt.owner_of(&h), None);
        for _ in 0..1000 {
            let g = me.enter(&h).unwrap();
            assert!(me.holds_lock(&h));
            assert_eq!(me.lock_count(&h), 1);
            assert_eq!(rt.owner_of(&h), Some(me.id()));
            drop(g);
            assert!(!me.holds_lock(&h));
            assert_eq!(rt.owner_of(&h), None);
        }
    }

    pub fn reentrancy_deep<P: Protocol>() {
        let rt = rt::<P>();
        let h = P::Header::default();
        let me = rt.attach().unwrap();
        // Deep enough to overflow any small header count (thin: 8 bits).
        let depth = 1000;
        let mut guards = Vec::new();
        for i in 1..=depth {
            guards.push(me.enter(&h).unwrap());
            assert_eq!(me.lock_count(&h), i);
        }
        while let Some(g) = guards.pop() {
            drop(g);
            assert_eq!(me.lock_count(&h), guards.len() as u32);
        }
        assert_eq!(rt.owner_of(&h), None);
        // And the object still works from another thread afterwards.
        thread::scope(|s| {
            s.spawn(|| {
                let other = rt.attach().unwrap();
                drop(other.enter(&h).unwrap());
            });
        });
    }

    pub fn misuse_is_an_error<P: Protocol>() {
        let rt = rt::<P>();
        let h = P::Header::default();
        let me = rt.attach().unwrap();
        let ims = Err(MonitorError::IllegalMonitorState);
        // Never locked at all.
        assert_eq!(me.monitor_exit(&h), ims);
        assert_eq!(me.wait(&h, Some(Duration::from_millis(1))).map(|_| ()), ims);
        assert_eq!(me.notify(&h), ims);
        assert_eq!(me.notify_all(&h), ims);
        // SAFETY: `me` is this thread's handle; `h` outlives the call.
        assert_eq!(unsafe { P::exit(me.runtime(), me.context(), &h) }, ims);
        // Locked and unlocked again (thin word back to 0, or a fat monitor installed).
        drop(me.enter(&h).unwrap());
        // SAFETY: `me` is this thread's handle; `h` outlives the call.
        assert_eq!(unsafe { P::exit(me.runtime(), me.context(), &h) }, ims);
        assert_eq!(me.notify(&h), ims);
        assert_eq!(me.wait(&h, None).map(|_| ()), ims);
        // Structured hold is not an unstructured one.
        let g = me.enter(&h).unwrap();
        assert_eq!(me.monitor_exit(&h), ims);
        assert_eq!(me.lock_count(&h), 1);
        drop(g);
        assert_eq!(rt.owner_of(&h), None);
    }

    pub fn exit_by_non_owner_is_an_error<P: Protocol>() {
        let rt = rt::<P>();
        let h = P::Header::default();
        let owner = rt.attach().unwrap();
        let g = owner.enter(&h).unwrap();
        thread::scope(|s| {
            s.spawn(|| {
                let other = rt.attach().unwrap();
                let ims = Err(MonitorError::IllegalMonitorState);
                // SAFETY: `other` is this thread's handle; `h` outlives the call.
                assert_eq!(
                    unsafe { P::exit(other.runtime(), other.context(), &h) },
                    ims
                );
                assert_eq!(other.notify(&h), ims);
                assert_eq!(other.notify_all(&h), ims);
                assert_eq!(other.wait(&h, Some(Duration::ZERO)).map(|_| ()), ims);
                assert!(!other.holds_lock(&h));
                assert_eq!(other.lock_count(&h), 0);
            });
        });
        assert_eq!(rt.owner_of(&h), Some(owner.id()));
        assert_eq!(owner.lock_count(&h), 1);
        drop(g);
    }

    /// A non-atomic read-modify-write inside the lock: a lost update means two owners.
    fn hammer<P: Protocol>(threads: usize, iters: usize, depth: usize) {
        let rt = rt::<P>();
        let h = P::Header::default();
        let counter = AtomicUsize::new(0);
        let inside = AtomicBool::new(false);
        thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    let me = rt.attach().unwrap();
                    for _ in 0..iters {
                        let mut gs = Vec::with_capacity(depth);
                        for _ in 0..depth {
                            gs.push(me.enter(&h).unwrap());
                        }
                        assert!(!inside.swap(true, Ordering::Relaxed), "two owners at once");
                        let c = counter.load(Ordering::Relaxed);
                        std::hint::spin_loop();
                        counter.store(c + 1, Ordering::Relaxed);
                        inside.store(false, Ordering::Relaxed);
                        drop(gs);
                    }
                });
            }
        });
        assert_eq!(counter.into_inner(), threads * iters);
        assert_eq!(rt.owner_of(&h), None);
    }

    pub fn mutual_exclusion<P: Protocol>() {
        hammer::<P>(4, 20_000, 1);
    }

    pub fn mutual_exclusion_nested<P: Protocol>() {
        hammer::<P>(3, 5_000, 3);
    }

    pub fn try_enter<P: Protocol>() {
        let rt = rt::<P>();
        let h = P::Header::default();
        let me = rt.attach().unwrap();
        let g = me.try_enter(&h).unwrap().expect("free object");
        let g2 = me.try_enter(&h).unwrap().expect("reentrant");
        assert_eq!(me.lock_count(&h), 2);
        thread::scope(|s| {
            s.spawn(|| {
                let other = rt.attach().unwrap();
                assert!(other.try_enter(&h).unwrap().is_none());
                assert!(!other.try_monitor_enter(&h).unwrap());
            });
        });
        drop((g2, g));
        thread::scope(|s| {
            s.spawn(|| {
                let other = rt.attach().unwrap();
                assert!(other.try_monitor_enter(&h).unwrap());
                other.monitor_exit(&h).unwrap();
            });
        });
        assert_eq!(rt.owner_of(&h), None);
    }

    pub fn wait_releases_all_levels_and_restores<P: Protocol>() {
        let rt = rt::<P>();
        let h = P::Header::default();
        let ready = AtomicBool::new(false);
        thread::scope(|s| {
            s.spawn(|| {
                let me = rt.attach().unwrap();
                let _a = me.enter(&h).unwrap();
                let _b = me.enter(&h).unwrap();
                let c = me.enter(&h).unwrap();
                ready.store(true, Ordering::SeqCst);
                let r = c.wait(Some(Duration::from_secs(20))).unwrap();
                assert_eq!(r, WaitOutcome::Notified);
                assert_eq!(me.lock_count(&h), 3, "depth restored after wait");
                assert_eq!(rt.owner_of(&h), Some(me.id()));
            });
            s.spawn(|| {
                let me = rt.attach().unwrap();
                while !ready.load(Ordering::SeqCst) {
                    thread::yield_now();
                }
                // The waiter held three levels; wait released all of them, so we get in.
                let g = me.enter(&h).unwrap();
                assert_eq!(me.lock_count(&h), 1);
                assert_eq!(rt.owner_of(&h), Some(me.id()));
                g.notify().unwrap();
            });
        });
        assert_eq!(rt.owner_of(&h), None);
    }

    pub fn notify_moves_one_notify_all_moves_all<P: Protocol>() {
        let rt = rt::<P>();
        let h = P::Header::default();
        let waiting = AtomicU32::new(0);
        let woken = AtomicU32::new(0);
        let n = 3;
        thread::scope(|s| {
            for _ in 0..n {
                s.spawn(|| {
                    let me = rt.attach().unwrap();
                    let g = me.enter(&h).unwrap();
                    waiting.fetch_add(1, Ordering::SeqCst);
                    assert_eq!(g.wait(None).unwrap(), WaitOutcome::Notified);
                    woken.fetch_add(1, Ordering::SeqCst);
                });
            }
            let me = rt.attach().unwrap();
            // All three are in the wait set once they counted themselves and released.
            loop {
                let g = me.enter(&h).unwrap();
                if waiting.load(Ordering::SeqCst) == n {
                    g.notify().unwrap();
                    break;
                }
                drop(g);
                thread::yield_now();
            }
            let t0 = Instant::now();
            while woken.load(Ordering::SeqCst) < 1 {
                assert!(t0.elapsed() < Duration::from_secs(10), "notify woke nobody");
                thread::yield_now();
            }
            thread::sleep(Duration::from_millis(50));
            assert_eq!(woken.load(Ordering::SeqCst), 1, "notify woke more than one");
            me.enter(&h).unwrap().notify_all().unwrap();
        });
        assert_eq!(woken.load(Ordering::SeqCst), n);
    }

    pub fn timed_wait_never_returns_early<P: Protocol>() {
        let rt = rt::<P>();
        let h = P::Header::default();
        let me = rt.attach().unwrap();
        let g = me.enter(&h).unwrap();
        for ms in [1u64, 20, 60] {
            let d = Duration::from_millis(ms);
            let t0 = Instant::now();
            assert_eq!(g.wait(Some(d)).unwrap(), WaitOutcome::TimedOut);
            assert!(
                t0.elapsed() >= d,
                "returned after {:?} < {:?}",
                t0.elapsed(),
                d
            );
            assert_eq!(me.lock_count(&h), 1);
        }
        let t0 = Instant::now();
        assert_eq!(me.wait_java(&h, 0, 500_000).unwrap(), WaitOutcome::TimedOut);
        assert!(t0.elapsed() >= Duration::from_micros(500));
    }

    pub fn zero_timeout_releases_and_reacquires<P: Protocol>() {
        let rt = rt::<P>();
        let h = P::Header::default();
        let me = rt.attach().unwrap();
        let _g1 = me.enter(&h).unwrap();
        let g2 = me.enter(&h).unwrap();
        assert_eq!(
            g2.wait(Some(Duration::ZERO)).unwrap(),
            WaitOutcome::TimedOut
        );
        assert_eq!(me.lock_count(&h), 2);
    }

    pub fn interrupt_during_wait<P: Protocol>() {
        let rt = rt::<P>();
        let h = P::Header::default();
        let (tx, rx) = mpsc::channel::<ThreadId>();
        thread::scope(|s| {
            s.spawn(|| {
                let me = rt.attach().unwrap();
                let g = me.enter(&h).unwrap();
                let _g2 = me.enter(&h).unwrap();
                tx.send(me.id()).unwrap();
                assert_eq!(g.wait(None), Err(MonitorError::Interrupted));
                assert!(!me.is_interrupted(), "interrupt status cleared");
                assert_eq!(me.lock_count(&h), 2, "monitor re-acquired before returning");
            });
            let id = rx.recv().unwrap();
            let me = rt.attach().unwrap();
            // Entering proves the waiter released the monitor, i.e. it is in the wait set.
            drop(me.enter(&h).unwrap());
            rt.interrupt(id).unwrap();
        });
        assert_eq!(
            rt.interrupt(ThreadId::new(7).unwrap()),
            Err(MonitorError::NoSuchThread)
        );
    }

    pub fn interrupt_before_wait<P: Protocol>() {
        let rt = rt::<P>();
        let h = P::Header::default();
        let me = rt.attach().unwrap();
        rt.interrupt(me.id()).unwrap();
        assert!(me.is_interrupted());
        let g = me.enter(&h).unwrap();
        let t0 = Instant::now();
        assert_eq!(
            g.wait(Some(Duration::from_secs(30))),
            Err(MonitorError::Interrupted)
        );
        assert!(t0.elapsed() < Duration::from_secs(10), "returned at once");
        assert!(!me.is_interrupted());
        assert_eq!(me.lock_count(&h), 1);
        // Without ownership the ownership error comes first and the status stays set.
        drop(g);
        rt.interrupt(me.id()).unwrap();
        assert_eq!(
            me.wait(&h, None).map(|_| ()),
            Err(MonitorError::IllegalMonitorState)
        );
        assert!(me.interrupted());
    }

    /// Two waiters; the notifier notifies once and interrupts waiter 1 in the same critical
    /// section. Either waiter 1 consumes the notification (returns normally, interrupt still
    /// pending), or it returns Interrupted and waiter 2 gets the notification.
    pub fn notify_and_interrupt_never_swallows<P: Protocol>() {
        // Untimed waits, so that no outcome depends on the machine's speed: after the race
        // (one notify, one interrupt of the first waiter), a waiter that nothing woke is
        // released by a later notifyAll and reports itself as released late.
        for _round in 0..20 {
            let rt = rt::<P>();
            let h = P::Header::default();
            let waiting = AtomicU32::new(0);
            let late = AtomicBool::new(false);
            let (tx, rx) = mpsc::channel::<ThreadId>();
            let results = std::sync::Mutex::new(Vec::new());
            let first = thread::scope(|s| {
                for who in 0..2 {
                    let tx = tx.clone();
                    let (rt, h, waiting, results, late) = (&rt, &h, &waiting, &results, &late);
                    s.spawn(move || {
                        let me = rt.attach().unwrap();
                        let g = me.enter(h).unwrap();
                        tx.send(me.id()).unwrap();
                        waiting.fetch_add(1, Ordering::SeqCst);
                        let r = g.wait(None);
                        // Read under the monitor: `late` is set by a holder of it before the
                        // notifyAll that is the only thing that can wake us late.
                        let released_late = late.load(Ordering::SeqCst);
                        let pending = me.interrupted();
                        results
                            .lock()
                            .unwrap()
                            .push((who, me.id(), r, pending, released_late));
                    });
                }
                let ids = [rx.recv().unwrap(), rx.recv().unwrap()];
                let me = rt.attach().unwrap();
                loop {
                    let g = me.enter(&h).unwrap();
                    if waiting.load(Ordering::SeqCst) == 2 {
                        g.notify().unwrap();
                        rt.interrupt(ids[0]).unwrap();
                        break;
                    }
                    drop(g);
                    thread::yield_now();
                }
                // The race is over when the interrupted waiter has returned and, if the
                // interrupt (not the notification) woke it, the notified one too.
                loop {
                    let done = {
                        let r = results.lock().unwrap();
                        let firsts: Vec<_> = r.iter().filter(|x| x.1 == ids[0]).collect();
                        match firsts.first() {
                            None => false,
                            Some(x) if x.2 == Err(MonitorError::Interrupted) => r.len() == 2,
                            Some(_) => true,
                        }
                    };
                    if done {
                        break;
                    }
                    thread::yield_now();
                }
                if results.lock().unwrap().len() < 2 {
                    let g = me.enter(&h).unwrap();
                    late.store(true, Ordering::SeqCst);
                    g.notify_all().unwrap();
                }
                ids[0]
            });
            let results = results.into_inner().unwrap();
            let racing: Vec<_> = results.iter().filter(|r| !r.4).collect();
            let notified = racing
                .iter()
                .filter(|r| r.2 == Ok(WaitOutcome::Notified))
                .count();
            let interrupted = racing
                .iter()
                .filter(|r| r.2 == Err(MonitorError::Interrupted))
                .count();
            assert_eq!(
                notified, 1,
                "exactly one waiter has the notification: {results:?}"
            );
            for (_, id, r, pending, released_late) in &results {
                if *id == first {
                    assert!(!released_late, "the interrupted waiter woke: {results:?}");
                    match r {
                        Ok(WaitOutcome::Notified) => assert!(*pending, "interrupt kept"),
                        Err(MonitorError::Interrupted) => assert!(!*pending),
                        other => panic!("interrupted waiter returned {other:?}"),
                    }
                }
            }
            assert!(interrupted <= 1);
        }
    }

    pub fn invalid_timeouts<P: Protocol>() {
        let rt = rt::<P>();
        let h = P::Header::default();
        let me = rt.attach().unwrap();
        let _g = me.enter(&h).unwrap();
        let bad = Err(MonitorError::InvalidTimeout);
        assert_eq!(me.wait(&h, Some(Duration::MAX)), bad);
        assert_eq!(me.wait_java(&h, -1, 0), bad);
        assert_eq!(me.wait_java(&h, 0, -1), bad);
        assert_eq!(me.wait_java(&h, 0, 1_000_000), bad);
        assert_eq!(me.lock_count(&h), 1, "a rejected wait keeps the monitor");
    }

    pub fn unstructured_out_of_order<P: Protocol>() {
        let rt = rt::<P>();
        let (a, b) = (P::Header::default(), P::Header::default());
        let me = rt.attach().unwrap();
        me.monitor_enter(&a).unwrap();
        me.monitor_enter(&b).unwrap();
        me.monitor_enter(&a).unwrap();
        assert_eq!(me.lock_count(&a), 2);
        me.monitor_exit(&a).unwrap();
        me.monitor_exit(&b).unwrap();
        assert_eq!(me.monitor_exit(&b), Err(MonitorError::IllegalMonitorState));
        assert_eq!(rt.owner_of(&b), None);
        assert_eq!(me.lock_count(&a), 1);
        // Mixed with a guard on the same object.
        let g = me.enter(&a).unwrap();
        me.monitor_exit(&a).unwrap();
        assert_eq!(me.lock_count(&a), 1);
        drop(g);
        assert_eq!(rt.owner_of(&a), None);
    }

    pub fn detach_releases_unstructured_locks<P: Protocol>() {
        let rt = rt::<P>();
        let h = P::Header::default();
        let entered = Barrier::new(2);
        thread::scope(|s| {
            s.spawn(|| {
                let me = rt.attach().unwrap();
                me.monitor_enter(&h).unwrap();
                me.monitor_enter(&h).unwrap();
                entered.wait();
                // Give the other thread time to block on the lock.
                thread::sleep(Duration::from_millis(20));
                assert_eq!(me.detach(), 2);
            });
            s.spawn(|| {
                let me = rt.attach().unwrap();
                entered.wait();
                let g = me.enter(&h).unwrap(); // would hang forever if detach leaked the lock
                assert_eq!(me.lock_count(&h), 1);
                drop(g);
            });
        });
        assert_eq!(rt.owner_of(&h), None);
    }

    /// Runs `f` on a new thread that attaches to `rt` and stays attached until `release` is
    /// dropped or sent to; returns the thread's id (or the attach error).
    fn attached_elsewhere<'s, P: Protocol>(
        s: &'s thread::Scope<'s, '_>,
        rt: &Arc<Runtime<P>>,
    ) -> (Result<ThreadId, MonitorError>, mpsc::Sender<()>) {
        let (id_tx, id_rx) = mpsc::channel();
        let (release, wait) = mpsc::channel::<()>();
        let rt = rt.clone();
        s.spawn(move || {
            let me = rt.attach();
            id_tx
                .send(me.as_ref().map(|m| m.id()).map_err(|e| *e))
                .unwrap();
            let _ = wait.recv();
            drop(me);
        });
        (id_rx.recv().unwrap(), release)
    }

    pub fn thread_ids_are_bounded_and_reused<P: Protocol>() {
        // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
        // run only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rt = unsafe {
            Runtime::<P>::new_unchecked(Config {
                max_threads: 3,
                ..Config::default()
            })
        };
        thread::scope(|s| {
            let (a, _ra) = attached_elsewhere(s, &rt);
            let (b, rb) = attached_elsewhere(s, &rt);
            let (c, _rc) = attached_elsewhere(s, &rt);
            let ids = [a.unwrap().get(), b.unwrap().get(), c.unwrap().get()];
            // Ids are process-wide: `max_threads` bounds how many are
            // attached here, not their values.
            assert!(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
            assert_eq!(rt.attach().map(|_| ()), Err(MonitorError::TooManyThreads));
            let freed = b.unwrap();
            drop(rb);
            while rt.stats_snapshot().attached_threads != 2 {
                thread::yield_now();
            }
            let d = rt.attach().unwrap();
            // Freed ids are reused first (last in, first out), unless another runtime of the
            // process took this one meanwhile.
            let _ = freed;
            assert_eq!(rt.stats_snapshot().attached_threads, 3);
            // Ids work for locking after reuse.
            let h = P::Header::default();
            drop(d.enter(&h).unwrap());
        });
        assert_eq!(rt.stats_snapshot().attached_threads, 0);
    }

    pub fn monitor_table_full_is_an_error<P: Protocol>() {
        // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
        // run only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rt = unsafe {
            Runtime::<P>::new_unchecked(Config {
                monitor_capacity: 2,
                ..Config::default()
            })
        };
        let hs: Vec<P::Header> = (0..8).map(|_| P::Header::default()).collect();
        let me = rt.attach().unwrap();
        // wait needs a wait set, so every protocol needs a monitor per waited-on object
        // while it is held. Hold all of them so that none can be deflated.
        let mut guards = Vec::new();
        let mut full = false;
        for h in &hs {
            let g = match me.enter(h) {
                Ok(g) => g,
                Err(MonitorError::MonitorTableFull) => {
                    full = true;
                    break;
                }
                Err(e) => panic!("{e:?}"),
            };
            match g.wait(Some(Duration::ZERO)) {
                Ok(_) => guards.push(g),
                Err(MonitorError::MonitorTableFull) => {
                    full = true;
                    drop(g);
                    break;
                }
                Err(e) => panic!("{e:?}"),
            }
        }
        assert!(full, "8 objects with wait sets cannot fit in 2 monitors");
        assert!(rt.stats_snapshot().live_monitors <= 2);
        drop(guards);
        // Nothing is left locked by the failures.
        for h in &hs {
            assert_eq!(rt.owner_of(h), None);
        }
    }

    pub fn guard_releases_on_panic<P: Protocol>() {
        let rt = rt::<P>();
        let h = P::Header::default();
        let me = rt.attach().unwrap();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _g = me.enter(&h).unwrap();
            let _g2 = me.enter(&h).unwrap();
            panic!("critical section fails");
        }));
        assert!(r.is_err());
        assert_eq!(me.lock_count(&h), 0);
        assert_eq!(rt.owner_of(&h), None);
        thread::scope(|s| {
            s.spawn(|| drop(rt.attach().unwrap().enter(&h).unwrap()));
        });
    }

    pub fn owner_of_from_other_threads<P: Protocol>() {
        let rt = rt::<P>();
        let h = P::Header::default();
        let (locked, release) = (Barrier::new(2), Barrier::new(2));
        thread::scope(|s| {
            let owner = s.spawn(|| {
                let me = rt.attach().unwrap();
                let g = me.enter(&h).unwrap();
                locked.wait();
                release.wait();
                drop(g);
                me.id()
            });
            locked.wait();
            let seen = rt.owner_of(&h);
            let me = rt.attach().unwrap();
            assert!(!me.holds_lock(&h));
            release.wait();
            let id = owner.join().unwrap();
            assert_eq!(seen, Some(id));
        });
        assert_eq!(rt.owner_of(&h), None);
    }

    /// Liveness, not speed: a thread that wants the lock gets it while another thread
    /// re-locks in a tight loop (seed 000 spins; the fat monitor hands off after ~1 ms).
    pub fn waiter_gets_lock_despite_barging<P: Protocol>() {
        let rt = rt::<P>();
        let h = P::Header::default();
        let stop = AtomicBool::new(false);
        let started = Barrier::new(2);
        thread::scope(|s| {
            s.spawn(|| {
                let me = rt.attach().unwrap();
                started.wait();
                while !stop.load(Ordering::Relaxed) {
                    let g = me.enter(&h).unwrap();
                    for _ in 0..50 {
                        std::hint::spin_loop();
                    }
                    drop(g);
                }
            });
            let me = rt.attach().unwrap();
            started.wait();
            for _ in 0..200 {
                drop(me.enter(&h).unwrap());
            }
            stop.store(true, Ordering::Relaxed);
        });
    }

    pub fn producer_consumer_with_wait_notify_all<P: Protocol>() {
        let rt = rt::<P>();
        let h = P::Header::default();
        // The buffer is only touched under the monitor; the atomics are for Sync, not sync.
        let slot = AtomicUsize::new(0);
        let sum = AtomicUsize::new(0);
        let items = 2_000usize;
        thread::scope(|s| {
            for p in 0..2 {
                let (rt, h, slot) = (&rt, &h, &slot);
                s.spawn(move || {
                    let me = rt.attach().unwrap();
                    for i in 0..items / 2 {
                        let g = me.enter(h).unwrap();
                        while slot.load(Ordering::Relaxed) != 0 {
                            g.wait(None).unwrap();
                        }
                        slot.store(1 + p * items + i, Ordering::Relaxed);
                        g.notify_all().unwrap();
                    }
                });
            }
            for _ in 0..2 {
                let (rt, h, slot, sum) = (&rt, &h, &slot, &sum);
                s.spawn(move || {
                    let me = rt.attach().unwrap();
                    for _ in 0..items / 2 {
                        let g = me.enter(h).unwrap();
                        let v = loop {
                            let v = slot.load(Ordering::Relaxed);
                            if v != 0 {
                                break v;
                            }
                            g.wait(Some(Duration::from_millis(100))).unwrap();
                        };
                        slot.store(0, Ordering::Relaxed);
                        sum.fetch_add(v, Ordering::Relaxed);
                        g.notify_all().unwrap();
                    }
                });
            }
        });
        let expect: usize = (0..2)
            .flat_map(|p| (0..items / 2).map(move |i| 1 + p * items + i))
            .sum();
        assert_eq!(sum.into_inner(), expect, "every item consumed exactly once");
    }

    pub fn reclaim_returns_monitors<P: Protocol>() {
        // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
        // run only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rt = unsafe {
            Runtime::<P>::new_unchecked(Config {
                monitor_capacity: 4,
                system_lock: SystemLockConfig::default(),
                ..Config::default()
            })
        };
        let me = rt.attach().unwrap();
        // Far more objects than monitors: each waited on, then declared dead by the "GC".
        for _ in 0..50 {
            let mut h = P::Header::default();
            {
                let g = me.enter(&h).unwrap();
                g.wait(Some(Duration::ZERO)).unwrap();
            }
            rt.reclaim(&mut h);
        }
        assert_eq!(rt.stats_snapshot().live_monitors, 0);
    }

    /// The hash of `h` as `me` sees it, checking that hashing changed neither `me`'s lock
    /// count nor (if `me` holds it) the owner, and that peek agrees: exactly when `h` is
    /// unlocked and no other thread is using it (`quiet`); otherwise peek may also say `None`
    /// (`stack` cannot read a stack-locked object's hash from outside its lock records).
    fn hash_unchanged<P: Protocol>(
        me: &objmon::vm::ThreadHandle<'_, P>,
        h: &P::Header,
        v: u32,
        quiet: bool,
    ) {
        let rt = me.runtime();
        let count = me.lock_count(h);
        assert_eq!(me.identity_hash(h), Ok(v), "{}", P::NAME);
        assert_eq!(
            me.lock_count(h),
            count,
            "{}: hashing changed the count",
            P::NAME
        );
        if count > 0 {
            assert_eq!(
                rt.owner_of(h),
                Some(me.id()),
                "{}: hashing changed the owner",
                P::NAME
            );
        }
        let peek = rt.peek_identity_hash(h);
        if quiet && count == 0 {
            assert_eq!(peek, Some(v), "{}", P::NAME);
        } else {
            assert!(
                peek == Some(v) || peek.is_none(),
                "{}: peek {peek:?}",
                P::NAME
            );
        }
    }

    fn in_range<P: Protocol>(v: u32) {
        assert!(v != 0, "{}: 0 means no hash", P::NAME);
        assert!(
            P::HASH_BITS >= 32 || v < 1 << P::HASH_BITS,
            "{}: {v:#x} has more than {} bits",
            P::NAME,
            P::HASH_BITS
        );
    }

    /// One hash, the same unlocked, locked, nested, after wait-inflation, after contention
    /// inflation, after the last exit (which deflates under the default policy), from
    /// another thread; peek is None before and the hash after.
    pub fn hash_is_stable_in_every_lock_state<P: Protocol>() {
        let rt = rt::<P>();
        let me = rt.attach().unwrap();
        // First taken unlocked, and first taken by the owner of a nested lock.
        for first_locked in [false, true] {
            let h = P::Header::default();
            assert_eq!(rt.peek_identity_hash(&h), None, "{}", P::NAME);
            let v = if first_locked {
                let _a = me.enter(&h).unwrap();
                let _b = me.enter(&h).unwrap();
                let v = me.identity_hash(&h).unwrap();
                assert_eq!(me.lock_count(&h), 2);
                v
            } else {
                me.identity_hash(&h).unwrap()
            };
            in_range::<P>(v);
            hash_unchanged(&me, &h, v, true);
            {
                let g = me.enter(&h).unwrap();
                hash_unchanged(&me, &h, v, true);
                let gs: Vec<_> = (0..3).map(|_| me.enter(&h).unwrap()).collect();
                hash_unchanged(&me, &h, v, true);
                assert_eq!(me.lock_count(&h), 4);
                g.wait(Some(Duration::ZERO)).unwrap();
                hash_unchanged(&me, &h, v, true);
                drop(gs);
                hash_unchanged(&me, &h, v, true);
            }
            hash_unchanged(&me, &h, v, true);
            // Contention: another thread blocks on it while we hold it.
            let g = me.enter(&h).unwrap();
            thread::scope(|s| {
                let t = s.spawn(|| {
                    let other = rt.attach().unwrap();
                    let g = other.enter(&h).unwrap();
                    hash_unchanged(&other, &h, v, true);
                    drop(g);
                    hash_unchanged(&other, &h, v, true);
                });
                thread::sleep(Duration::from_millis(5));
                hash_unchanged(&me, &h, v, true);
                drop(g);
                t.join().unwrap();
            });
            hash_unchanged(&me, &h, v, true);
            // Deep recursion (thin: count overflow inflates).
            let gs: Vec<_> = (0..300).map(|_| me.enter(&h).unwrap()).collect();
            hash_unchanged(&me, &h, v, true);
            drop(gs);
            hash_unchanged(&me, &h, v, true);
            assert_eq!(rt.owner_of(&h), None);
        }
    }

    /// A thread that does not own the lock asks first, while the owner holds it nested; the
    /// owner gets the same hash, before and after its release, and so does a third thread.
    pub fn hash_first_taken_while_another_thread_holds_the_lock<P: Protocol>() {
        let rt = rt::<P>();
        let h = P::Header::default();
        let (locked_tx, locked_rx) = mpsc::channel();
        let (hashed_tx, hashed_rx) = mpsc::channel::<u32>();
        thread::scope(|s| {
            let (rt, h) = (&rt, &h);
            s.spawn(move || {
                let owner = rt.attach().unwrap();
                let _a = owner.enter(h).unwrap();
                let b = owner.enter(h).unwrap();
                locked_tx.send(()).unwrap();
                let v = hashed_rx.recv().unwrap();
                assert_eq!(owner.lock_count(h), 2);
                hash_unchanged(&owner, h, v, true);
                drop(b);
                hash_unchanged(&owner, h, v, true);
            });
            let me = rt.attach().unwrap();
            locked_rx.recv().unwrap();
            assert!(!me.holds_lock(h));
            let v = me.identity_hash(h).unwrap();
            in_range::<P>(v);
            assert_eq!(me.identity_hash(h), Ok(v));
            hashed_tx.send(v).unwrap();
        });
        let me = rt.attach().unwrap();
        let v = rt.peek_identity_hash(&h).expect("hashed");
        hash_unchanged(&me, &h, v, true);
        drop(me.enter(&h).unwrap());
        hash_unchanged(&me, &h, v, true);
    }

    /// Hashing an object another thread waits on (a wait set exists): the hash survives the
    /// wait, the notification, the re-entry and the waiter's exit.
    pub fn hash_while_another_thread_waits<P: Protocol>() {
        let rt = rt::<P>();
        let h = P::Header::default();
        let me = rt.attach().unwrap();
        let v0 = me.identity_hash(&h).unwrap();
        let waiting = AtomicBool::new(false);
        thread::scope(|s| {
            let t = s.spawn(|| {
                let w = rt.attach().unwrap();
                let g = w.enter(&h).unwrap();
                waiting.store(true, Ordering::SeqCst);
                g.wait(Some(Duration::from_secs(20))).unwrap();
                hash_unchanged(&w, &h, v0, true);
            });
            while !waiting.load(Ordering::SeqCst) {
                thread::yield_now();
            }
            // Hash while it is in the wait set (or about to be), not holding the lock.
            hash_unchanged(&me, &h, v0, false);
            let g = me.enter(&h).unwrap();
            hash_unchanged(&me, &h, v0, true);
            g.notify_all().unwrap();
            drop(g);
            hash_unchanged(&me, &h, v0, false);
            t.join().unwrap();
        });
        hash_unchanged(&me, &h, v0, true);
    }

    /// 10,000 objects hashed by one thread get at least n − bound distinct hashes. With b hash
    /// bits the expected number of colliding pairs is E = n(n−1)/2 / 2^b (b = 24: 2.98;
    /// b = 31: 0.023); the count is Poisson-like, so 8E + 16 is exceeded with a probability far
    /// below 1e-15 — and the generator is deterministic per thread id, so no run can flake.
    pub fn hashes_are_mostly_distinct<P: Protocol>() {
        let rt = rt::<P>();
        let me = rt.attach().unwrap();
        let n = 10_000usize;
        let hs: Vec<P::Header> = (0..n).map(|_| P::Header::default()).collect();
        let mut vs: Vec<u32> = hs.iter().map(|h| me.identity_hash(h).unwrap()).collect();
        for (h, &v) in hs.iter().zip(&vs) {
            assert_eq!(rt.peek_identity_hash(h), Some(v));
        }
        vs.sort_unstable();
        vs.dedup();
        let pairs = (n * (n - 1) / 2) as f64;
        let expected = pairs / 2f64.powi(P::HASH_BITS.min(32) as i32);
        let bound = (8.0 * expected).ceil() as usize + 16;
        assert!(
            vs.len() + bound >= n,
            "{}: only {} distinct hashes of {n} (bound {bound})",
            P::NAME,
            vs.len()
        );
    }

    /// Two hashers against two lockers (nested locks, short waits, notifies): every hash call
    /// returns the same value, and mutual exclusion holds throughout.
    pub fn hash_races_with_lock_traffic<P: Protocol>() {
        let rt = rt::<P>();
        for round in 0..20 {
            let h = P::Header::default();
            let inside = AtomicBool::new(false);
            let seen = AtomicU32::new(0);
            let start = Barrier::new(4);
            thread::scope(|s| {
                for l in 0..2 {
                    let (rt, h, inside, start) = (&rt, &h, &inside, &start);
                    s.spawn(move || {
                        let me = rt.attach().unwrap();
                        start.wait();
                        for i in 0..200 {
                            let g = me.enter(h).unwrap();
                            assert!(!inside.swap(true, Ordering::SeqCst), "two owners");
                            let g2 = me.enter(h).unwrap();
                            inside.store(false, Ordering::SeqCst);
                            if (i + l + round) % 50 == 0 {
                                g2.wait(Some(Duration::from_micros(100))).unwrap();
                            } else if i % 7 == 0 {
                                g2.notify().unwrap();
                            }
                            assert!(!inside.swap(true, Ordering::SeqCst), "two owners");
                            inside.store(false, Ordering::SeqCst);
                            drop((g2, g));
                        }
                    });
                }
                for _ in 0..2 {
                    let (rt, h, seen, start) = (&rt, &h, &seen, &start);
                    s.spawn(move || {
                        let me = rt.attach().unwrap();
                        start.wait();
                        for _ in 0..200 {
                            let v = me.identity_hash(h).unwrap();
                            let prev =
                                seen.compare_exchange(0, v, Ordering::SeqCst, Ordering::SeqCst);
                            assert!(prev.is_ok() || prev == Err(v), "{}: hash changed", P::NAME);
                            thread::yield_now();
                        }
                    });
                }
            });
            let v = seen.load(Ordering::SeqCst);
            assert_eq!(rt.peek_identity_hash(&h), Some(v), "{}", P::NAME);
            assert_eq!(rt.owner_of(&h), None);
        }
    }

    /// With room for one monitor, hashing succeeds or fails with `MonitorTableFull` (where the
    /// hash needs a monitor), and a hash once given is given again.
    pub fn hash_with_a_full_monitor_table<P: Protocol>() {
        // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
        // run only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rt = unsafe {
            Runtime::<P>::new_unchecked(Config {
                monitor_capacity: 1,
                ..Config::default()
            })
        };
        let me = rt.attach().unwrap();
        let hs: Vec<P::Header> = (0..4).map(|_| P::Header::default()).collect();
        // One of them held, so that protocols which must inflate a held lock try that too.
        let _g = me.enter(&hs[3]).unwrap();
        let mut got = Vec::new();
        for h in &hs {
            match me.identity_hash(h) {
                Ok(v) => got.push(Some(v)),
                Err(MonitorError::MonitorTableFull) => got.push(None),
                Err(e) => panic!("{}: {e:?}", P::NAME),
            }
        }
        for (h, v) in hs.iter().zip(&got) {
            if let Some(v) = *v {
                assert_eq!(me.identity_hash(h), Ok(v), "{}", P::NAME);
            }
        }
        assert!(rt.stats_snapshot().live_monitors <= 1);
    }

    /// The object is dead: its hash goes with it, and so does any monitor that held it.
    pub fn reclaim_discards_the_hash<P: Protocol>() {
        let rt = rt::<P>();
        let me = rt.attach().unwrap();
        let mut h = P::Header::default();
        let v = me.identity_hash(&h).unwrap();
        drop(me.enter(&h).unwrap());
        assert_eq!(rt.peek_identity_hash(&h), Some(v));
        rt.reclaim(&mut h);
        assert_eq!(rt.peek_identity_hash(&h), None, "{}", P::NAME);
        assert_eq!(rt.stats_snapshot().live_monitors, 0, "{}", P::NAME);
        let w = me.identity_hash(&h).unwrap();
        assert_eq!(rt.peek_identity_hash(&h), Some(w));
        rt.reclaim(&mut h);
    }

    /// Lowers the calling thread to SCHED_IDLE: the deadlocked threads these checks leak
    /// (some protocols spin with `yield` forever) then take no time from the other tests.
    fn idle_priority() {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: sched_setscheduler reads `param` only for the call; pid 0 is the calling
        // thread; SCHED_IDLE needs no privilege. A failure only costs CPU time.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
    }

    /// Spawns one leaked thread per object: thread `i` locks `objs[i]` twice, then (once all
    /// hold theirs) blocks forever on `objs[(i + 1) % n]`. Returns their ids in order.
    fn leak_cycle<P: Protocol>(rt: &Arc<Runtime<P>>, objs: &'static [P::Header]) -> Vec<ThreadId> {
        let n = objs.len();
        let all = Arc::new(Barrier::new(n));
        let (tx, rx) = mpsc::channel();
        for i in 0..n {
            let (rt, all, tx) = (rt.clone(), all.clone(), tx.clone());
            thread::spawn(move || {
                idle_priority();
                let me = rt.attach().unwrap();
                let _g1 = me.enter(&objs[i]).unwrap();
                let _g2 = me.enter(&objs[i]).unwrap();
                tx.send((i, me.id())).unwrap();
                all.wait();
                let _never = me.enter(&objs[(i + 1) % n]);
                panic!("a deadlocked enter returned");
            });
        }
        let mut ids = vec![None; n];
        for _ in 0..n {
            let (i, id) = rx.recv().unwrap();
            ids[i] = Some(id);
        }
        ids.into_iter().map(Option::unwrap).collect()
    }

    /// A deliberate two-thread and three-thread deadlock (threads leaked, never joined) are
    /// both found with the right threads, objects and owners; the dump agrees.
    pub fn deadlocks_of_two_and_three_threads_are_found<P: Protocol>() {
        // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
        // run only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rt = unsafe {
            Runtime::<P>::new_unchecked(Config {
                max_threads: 64,
                ..Config::default()
            })
        };
        let hs: &'static [P::Header] = Box::leak(
            (0..5)
                .map(|_| P::Header::default())
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        );
        let two = leak_cycle(&rt, &hs[0..2]);
        let three = leak_cycle(&rt, &hs[2..5]);
        let obj = |i: usize| objmon::vm::ObjectRef::of(&hs[i]);
        let start = Instant::now();
        let found = loop {
            let mut d = rt.find_deadlocks();
            if d.len() == 2 {
                break d;
            }
            assert!(d.len() < 2, "more cycles than made: {d:?}");
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "not found: {d:?}"
            );
            d.clear();
            thread::sleep(Duration::from_millis(5));
        };
        for (ids, first) in [(&two, 0usize), (&three, 2)] {
            let n = ids.len();
            let d = found
                .iter()
                .find(|d| d.threads().contains(&ids[0]))
                .unwrap_or_else(|| panic!("cycle of {ids:?} not in {found:?}"));
            assert_eq!(d.cycle.len(), n, "{d}");
            for e in &d.cycle {
                let i = ids.iter().position(|&t| t == e.thread).expect("a member");
                let next = (i + 1) % n;
                assert_eq!(e.waiting_for, obj(first + next), "{d}");
                assert_eq!(e.held_by, ids[next], "{d}");
                assert!(e.held_count == 0 || e.held_count == 2, "{d}");
            }
            let text = d.to_string();
            assert!(text.starts_with("Found one Java-level deadlock:"), "{text}");
            for id in ids.iter() {
                assert!(text.contains(&format!("\"objmon thread {id}\"")), "{text}");
            }
        }
        // The dump with the host's objects: every member owns its object twice and is
        // blocked on the next one, held by the next thread. Taken once every member shows
        // as blocked: a member may be between its spin on the thin word and its park on the
        // monitor its spin inflated, published as neither for that moment — and at
        // `SCHED_IDLE` (`idle_priority`) a moment can last while the machine is busy (seen
        // once on `thin-seed`: `blocked_on` None right after both cycles were found).
        let members = || two.iter().chain(three.iter());
        let mut dump = rt.thread_dump_with(hs.iter());
        eventually("every member of both cycles blocked in one dump", || {
            dump = rt.thread_dump_with(hs.iter());
            members().all(|id| {
                dump.threads
                    .iter()
                    .any(|t| t.id == *id && t.blocked_on.is_some())
            })
        });
        for (ids, first) in [(&two, 0usize), (&three, 2)] {
            let n = ids.len();
            for (i, id) in ids.iter().enumerate() {
                let t = dump.threads.iter().find(|t| t.id == *id).expect("attached");
                let b = t.blocked_on.expect("blocked");
                assert_eq!(b.kind, objmon::vm::BlockKind::Enter, "{dump}");
                assert_eq!(b.object, obj(first + (i + 1) % n), "{dump}");
                assert_eq!(b.owner, Some(ids[(i + 1) % n]), "{dump}");
                let own = objmon::vm::OwnedMonitor {
                    object: obj(first + i),
                    count: 2,
                };
                assert_eq!(t.owned, vec![own], "{dump}");
            }
        }
        assert!(dump.to_string().contains("- waiting to lock"), "{dump}");
    }

    /// Polls `f` until it holds (a liveness wait: the other threads must get to their spots).
    fn eventually(what: &str, mut f: impl FnMut() -> bool) {
        let start = Instant::now();
        while !f() {
            assert!(start.elapsed() < Duration::from_secs(20), "never: {what}");
            thread::sleep(Duration::from_millis(2));
        }
    }

    /// A nested holder (count 2), a waiter, a timed waiter, a blocked thread and its owner,
    /// all seen by the dump with the host's objects; without them, everything but the
    /// thin-shaped holds.
    pub fn thread_dump_shows_owners_counts_blocked_and_waiting<P: Protocol>() {
        use objmon::vm::{BlockKind, ObjectRef};
        let rt = rt::<P>();
        let [x, y, w, tw] = std::array::from_fn(|_| P::Header::default());
        let (ready, release) = (Barrier::new(4), AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        thread::scope(|s| {
            // A: holds x twice, waits on w forever (until notified).
            s.spawn(|| {
                let me = rt.attach().unwrap();
                tx.send(('a', me.id())).unwrap();
                let _g1 = me.enter(&x).unwrap();
                let _g2 = me.enter(&x).unwrap();
                ready.wait();
                let g = me.enter(&w).unwrap();
                while !release.load(Ordering::SeqCst) {
                    g.wait(None).unwrap();
                }
            });
            // B: holds y, timed-waits on tw until released.
            s.spawn(|| {
                let me = rt.attach().unwrap();
                tx.send(('b', me.id())).unwrap();
                let _g = me.enter(&y).unwrap();
                ready.wait();
                let g = me.enter(&tw).unwrap();
                while !release.load(Ordering::SeqCst) {
                    g.wait(Some(Duration::from_secs(5))).unwrap();
                }
            });
            // C: blocks on y.
            s.spawn(|| {
                let me = rt.attach().unwrap();
                tx.send(('c', me.id())).unwrap();
                ready.wait();
                drop(me.enter(&y).unwrap());
            });
            ready.wait();
            let mut id = std::collections::HashMap::new();
            for _ in 0..3 {
                let (k, v) = rx.recv().unwrap();
                id.insert(k, v);
            }
            let objs = [&x, &y, &w, &tw];
            let info = |d: &objmon::vm::ThreadDump, k| {
                d.threads
                    .iter()
                    .find(|t| t.id == id[&k])
                    .cloned()
                    .expect("attached")
            };
            let want_a = |d: &objmon::vm::ThreadDump| {
                let a = info(d, 'a');
                a.blocked_on.map(|b| (b.kind, b.object))
                    == Some((BlockKind::Wait, ObjectRef::of(&w)))
            };
            let want_b = |d: &objmon::vm::ThreadDump| {
                let b = info(d, 'b');
                b.blocked_on.map(|b| (b.kind, b.object))
                    == Some((BlockKind::TimedWait, ObjectRef::of(&tw)))
            };
            let want_c = |d: &objmon::vm::ThreadDump| {
                let c = info(d, 'c');
                c.blocked_on.map(|b| (b.kind, b.object, b.owner))
                    == Some((BlockKind::Enter, ObjectRef::of(&y), Some(id[&'b'])))
            };
            eventually(
                "a waits, b waits timed, c is blocked on y held by b",
                || {
                    let d = rt.thread_dump_with(objs);
                    want_a(&d) && want_b(&d) && want_c(&d)
                },
            );
            let d = rt.thread_dump_with(objs);
            let owned = |k| info(&d, k).owned;
            let o = |h: &P::Header, count| objmon::vm::OwnedMonitor {
                object: ObjectRef::of(h),
                count,
            };
            assert_eq!(owned('a'), vec![o(&x, 2)], "{d}");
            assert_eq!(owned('b'), vec![o(&y, 1)], "{d}");
            assert_eq!(owned('c'), vec![], "{d}");
            let text = d.to_string();
            assert!(text.contains("WAITING (on object monitor)"), "{text}");
            assert!(text.contains("TIMED_WAITING (on object monitor)"), "{text}");
            assert!(text.contains("BLOCKED (on object monitor)"), "{text}");
            assert!(text.contains("(count 2)"), "{text}");
            // Without the host's objects, blocking is still complete; a hold found is right.
            let bare = rt.thread_dump();
            assert!(want_a(&bare) && want_b(&bare), "{bare}");
            for t in &bare.threads {
                for m in &t.owned {
                    assert!(
                        d.threads
                            .iter()
                            .any(|u| u.id == t.id && u.owned.contains(m)),
                        "{bare}"
                    );
                }
            }
            assert!(rt.find_deadlocks().is_empty());
            release.store(true, Ordering::SeqCst);
            for h in [&w, &tw] {
                let me = rt.attach().unwrap();
                me.enter(h).unwrap().notify_all().unwrap();
            }
        });
        let d = rt.thread_dump();
        assert!(
            d.threads
                .iter()
                .all(|t| t.blocked_on.is_none() && t.owned.is_empty()),
            "{d}"
        );
    }

    /// Threads lock random objects nested in one global order (so no cycle can exist), with
    /// waits on the innermost one, while the detector runs in a loop: it never reports.
    pub fn no_deadlock_reported_under_ordered_load<P: Protocol>() {
        let rt = rt::<P>();
        let hs: Vec<P::Header> = (0..4).map(|_| P::Header::default()).collect();
        let stop = AtomicBool::new(false);
        let rounds = AtomicUsize::new(0);
        thread::scope(|s| {
            for seed in 1..=4u64 {
                let (rt, hs, stop) = (&rt, &hs, &stop);
                s.spawn(move || {
                    let me = rt.attach().unwrap();
                    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                    let mut next = move || {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x
                    };
                    while !stop.load(Ordering::Relaxed) {
                        let a = (next() % 4) as usize;
                        let b = a + (next() % (4 - a as u64)) as usize;
                        let ga = me.enter(&hs[a]).unwrap();
                        let gb = me.enter(&hs[b]).unwrap();
                        match next() % 8 {
                            0 => drop(gb.wait(Some(Duration::from_micros(200))).unwrap()),
                            1 => gb.notify_all().unwrap(),
                            _ => thread::yield_now(),
                        }
                        drop((gb, ga));
                    }
                });
            }
            let start = Instant::now();
            while start.elapsed() < Duration::from_millis(700) {
                let d = rt.find_deadlocks();
                assert!(d.is_empty(), "false deadlock: {}", d[0]);
                rounds.fetch_add(1, Ordering::Relaxed);
            }
            stop.store(true, Ordering::Relaxed);
        });
        assert!(rounds.into_inner() > 0);
    }

    /// One contended enter (the holder keeps the lock ~20 ms) and one timed wait.
    fn contend_and_wait<P: Protocol>(rt: &Arc<Runtime<P>>, h: &P::Header) {
        let (held, tried) = (Barrier::new(2), Barrier::new(2));
        thread::scope(|s| {
            s.spawn(|| {
                let me = rt.attach().unwrap();
                let g = me.enter(h).unwrap();
                held.wait();
                tried.wait();
                thread::sleep(Duration::from_millis(20));
                drop(g);
            });
            let me = rt.attach().unwrap();
            held.wait();
            assert!(me.try_enter(h).unwrap().is_none());
            tried.wait();
            let g = me.enter(h).unwrap();
            g.wait(Some(Duration::from_millis(5))).unwrap();
        });
    }

    pub fn profiling_off_reports_nothing<P: Protocol>() {
        let rt = rt::<P>();
        assert!(!rt.config().profiling, "off by default");
        let h = P::Header::default();
        contend_and_wait(&rt, &h);
        assert_eq!(rt.contention_profile(), vec![]);
    }

    pub fn profiling_on_counts_contention_and_waits<P: Protocol>() {
        // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
        // run only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rt = unsafe {
            Runtime::<P>::new_unchecked(Config {
                profiling: true,
                ..Config::default()
            })
        };
        let (h, quiet) = (P::Header::default(), P::Header::default());
        {
            let me = rt.attach().unwrap();
            drop(me.enter(&quiet).unwrap());
        }
        contend_and_wait(&rt, &h);
        let prof = rt.contention_profile();
        let p = prof
            .iter()
            .find(|p| p.object == objmon::vm::ObjectRef::of(&h))
            .unwrap_or_else(|| panic!("no entry for the object: {prof:?}"));
        assert!(p.contended_enters >= 1, "{p}");
        assert!(p.blocked > Duration::ZERO, "{p}");
        assert_eq!(p.waits, 1, "{p}");
        assert!(p.waited > Duration::ZERO, "{p}");
        assert!(
            prof.iter()
                .all(|p| p.object != objmon::vm::ObjectRef::of(&quiet)),
            "uncontended objects have no entry: {prof:?}"
        );
        rt.reset_contention_profile();
        assert_eq!(rt.contention_profile(), vec![]);
    }

    /// A waiter that was notified and must re-enter is blocked on enter: T1 holds B and waits
    /// on A; T2 takes A, notifies T1 and, still holding A, blocks on B. T1 now waits to
    /// re-enter A, held by T2: a deadlock through a notified waiter (threads leaked).
    pub fn notified_waiter_reentering_is_a_deadlock_edge<P: Protocol>() {
        // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
        // run only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rt = unsafe {
            Runtime::<P>::new_unchecked(Config {
                max_threads: 64,
                ..Config::default()
            })
        };
        let hs: &'static [P::Header] = Box::leak(
            (0..2)
                .map(|_| P::Header::default())
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        );
        let (a, b) = (&hs[0], &hs[1]);
        let waiting: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
        let (tx, rx) = mpsc::channel();
        {
            let (rt, tx) = (rt.clone(), tx.clone());
            thread::spawn(move || {
                idle_priority();
                let me = rt.attach().unwrap();
                tx.send((1, me.id())).unwrap();
                let _gb = me.enter(b).unwrap();
                let ga = me.enter(a).unwrap();
                waiting.store(true, Ordering::SeqCst); // under A: we are in the wait set once A is free
                let _ = ga.wait(None); // notified, then blocks re-entering A forever
                panic!("a deadlocked re-entry returned");
            });
        }
        {
            let (rt, tx) = (rt.clone(), tx.clone());
            thread::spawn(move || {
                idle_priority();
                let me = rt.attach().unwrap();
                tx.send((2, me.id())).unwrap();
                let _ga = loop {
                    let g = me.enter(a).unwrap();
                    if waiting.load(Ordering::SeqCst) {
                        g.notify().unwrap();
                        break g;
                    }
                    drop(g);
                    thread::yield_now();
                };
                let _never = me.enter(b);
                panic!("a deadlocked enter returned");
            });
        }
        let mut id = [None; 3];
        for _ in 0..2 {
            let (k, v) = rx.recv().unwrap();
            id[k] = Some(v);
        }
        let (t1, t2) = (id[1].unwrap(), id[2].unwrap());
        let start = Instant::now();
        let d = loop {
            if let Some(d) = rt.find_deadlocks().pop() {
                break d;
            }
            assert!(start.elapsed() < Duration::from_secs(30), "not found");
            thread::sleep(Duration::from_millis(5));
        };
        let mut cycle: Vec<_> = d
            .cycle
            .iter()
            .map(|e| (e.thread, e.waiting_for, e.held_by))
            .collect();
        cycle.sort();
        let mut want = vec![
            (t1, objmon::vm::ObjectRef::of(a), t2),
            (t2, objmon::vm::ObjectRef::of(b), t1),
        ];
        want.sort();
        assert_eq!(cycle, want, "{d}");
    }
}
