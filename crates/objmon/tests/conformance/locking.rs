//! Locking checks: enter and exit, reentrancy, misuse, mutual exclusion, try-enter, unstructured
//! locks, thread ids, a full monitor table, panics, owner queries, barging, reclaim.

use super::*;

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
