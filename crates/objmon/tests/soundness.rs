//! The promises of the safe API, tried from outside as a careful user would break
//! them. Each check is a regression test of one promise: it fails without the code
//! that keeps it. (Compile-time promises — `'env` invariant, handles neither `Send` nor
//! `Sync` — are `compile_fail` doc-tests on `ThreadHandle`.)
#![cfg(not(loom))]

mod watchdog;

use objmon::vm::{Config, Runtime};

every_protocol!(
    forgotten_guard_is_not_inherited_by_id_reuse,
    attach_twice_is_one_identity,
    handle_detaches_with_its_last_clone,
    holding_many_objects_never_runs_out_below_capacity,
    threads_holding_long_chains_never_run_out,
);

mod checks {
    use super::*;
    use objmon::vm::{MonitorError, Protocol};
    use std::thread;

    /// Regression: a guard passed to `mem::forget` keeps its lock forever; the thread that gets
    /// the next id must not own it (it did: `holds_lock` true, `lock_count` 1).
    pub fn forgotten_guard_is_not_inherited_by_id_reuse<P: Protocol>() {
        // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
        // run only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rt = unsafe {
            Runtime::<P>::new_unchecked(Config {
                max_threads: 2,
                ..Config::default()
            })
        };
        let h = P::Header::default();
        let first = thread::scope(|s| {
            s.spawn(|| {
                let me = rt.attach().unwrap();
                std::mem::forget(me.enter(&h).unwrap());
                me.id()
            })
            .join()
            .unwrap()
        });
        assert_eq!(rt.threads().retired(), 1, "the leaking id is retired");
        thread::scope(|s| {
            s.spawn(|| {
                let me = rt.attach().unwrap();
                assert_ne!(me.id(), first, "a retired id is never handed out again");
                assert!(!me.holds_lock(&h));
                assert_eq!(me.lock_count(&h), 0);
                assert_eq!(me.notify(&h), Err(MonitorError::IllegalMonitorState));
                // Whether the leaked lock stays held is the protocol's (a bias owner's holds
                // live in its records and go with them); it is never this thread's.
            });
        });
        // One id of two is gone for good; the other is still reused.
        for _ in 0..3 {
            thread::scope(|s| {
                s.spawn(|| assert!(rt.attach().is_ok()));
            });
        }
        thread::scope(|s| {
            s.spawn(|| {
                let _a = rt.attach().unwrap();
                thread::scope(|s| {
                    s.spawn(|| assert_eq!(rt.attach().err(), Some(MonitorError::TooManyThreads)));
                });
            });
        });
    }

    /// Regression (Rust side): a second attach on an attached OS thread is the same identity,
    /// as JNI's `AttachCurrentThread`; before, it was a second id, so `try_enter` on a lock the
    /// thread held returned "held by another" and `enter` would have self-deadlocked.
    pub fn attach_twice_is_one_identity<P: Protocol>() {
        // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
        // run only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rt = unsafe { Runtime::<P>::new_unchecked(Default::default()) };
        let h = P::Header::default();
        let a = rt.attach().unwrap();
        let b = rt.attach().unwrap();
        assert_eq!(a.id(), b.id());
        let g = a.enter(&h).unwrap();
        assert!(b.holds_lock(&h));
        let g2 = b
            .try_enter(&h)
            .unwrap()
            .expect("reentrant through the other handle");
        assert_eq!(a.lock_count(&h), 2);
        b.notify_all(&h).unwrap();
        drop(g2);
        drop(g);
        assert_eq!(rt.stats_snapshot().attached_threads, 1);
        // Another runtime is another identity space.
        // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
        // run only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rt2 = unsafe { Runtime::<P>::new_unchecked(Default::default()) };
        let c = rt2.attach().unwrap();
        assert_eq!(rt2.stats_snapshot().attached_threads, 1);
        drop(c);
        assert_eq!(rt2.stats_snapshot().attached_threads, 0);
    }

    /// The thread detaches with its last handle, and unstructured holds are each handle's own.
    pub fn handle_detaches_with_its_last_clone<P: Protocol>() {
        // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
        // run only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rt = unsafe { Runtime::<P>::new_unchecked(Default::default()) };
        let (x, y) = (P::Header::default(), P::Header::default());
        let a = rt.attach().unwrap();
        let b = rt.attach().unwrap();
        a.monitor_enter(&x).unwrap();
        b.monitor_enter(&y).unwrap();
        assert_eq!(b.monitor_exit(&x), Err(MonitorError::IllegalMonitorState));
        assert_eq!(a.detach(), 1, "a's own unstructured hold");
        assert_eq!(rt.owner_of(&x), None);
        assert_eq!(rt.owner_of(&y), Some(b.id()));
        assert_eq!(rt.stats_snapshot().attached_threads, 1);
        let id = b.id();
        drop(b);
        assert_eq!(rt.owner_of(&y), None);
        assert_eq!(rt.stats_snapshot().attached_threads, 0);
        // A clean detach gives the id back to the process-wide pool instead of retiring it
        // (`Registry::detach` vs `retire`: one or the other). Drawing it again is no test
        // any more: ids are process-wide (docs/soundness.md §7), and a test running in
        // parallel may take it and hold it for as long as it runs (CI saw 30 s on `thin`).
        assert_eq!(rt.threads().retired(), 0, "a clean detach retires no id");
        assert!(
            rt.threads().get(id).is_none(),
            "and leaves nothing attached"
        );
    }

    /// Regression: `cacao` ran out of monitors where Java never does (a fixed pool of 1,024
    /// overflow entries ignoring `Config::monitor_capacity`): one thread holding 2,049
    /// distinct objects got `MonitorTableFull`. Below `monitor_capacity`, monitorenter never
    /// fails for capacity.
    pub fn holding_many_objects_never_runs_out_below_capacity<P: Protocol>() {
        // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
        // run only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rt = unsafe { Runtime::<P>::new_unchecked(Default::default()) };
        let hs: Vec<P::Header> = (0..5000).map(|_| P::Header::default()).collect();
        let me = rt.attach().unwrap();
        let guards: Vec<_> = hs
            .iter()
            .enumerate()
            .map(|(i, h)| {
                me.enter(h)
                    .unwrap_or_else(|e| panic!("{}: object {i}: {e}", P::NAME))
            })
            .collect();
        // Each one is held (and waitable: a wait set where the protocol needs a monitor).
        assert!(hs.iter().all(|h| me.holds_lock(h)));
        guards[4999].wait(Some(std::time::Duration::ZERO)).unwrap();
        drop(guards);
        assert!(hs.iter().all(|h| rt.owner_of(h).is_none()));
    }

    /// Regression, the reported shape: 12 threads each holding a chain of 800 objects.
    pub fn threads_holding_long_chains_never_run_out<P: Protocol>() {
        // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
        // run only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rt = unsafe { Runtime::<P>::new_unchecked(Default::default()) };
        let objs: Vec<Vec<P::Header>> = (0..12)
            .map(|_| (0..800).map(|_| P::Header::default()).collect())
            .collect();
        let go = std::sync::Barrier::new(objs.len());
        thread::scope(|s| {
            for chain in &objs {
                let (rt, go) = (&rt, &go);
                s.spawn(move || {
                    let me = rt.attach().unwrap();
                    go.wait();
                    let gs: Vec<_> = chain
                        .iter()
                        .enumerate()
                        .map(|(d, h)| {
                            me.enter(h)
                                .unwrap_or_else(|e| panic!("{}: depth {d}: {e}", P::NAME))
                        })
                        .collect();
                    go.wait();
                    drop(gs);
                });
            }
        });
    }
}
