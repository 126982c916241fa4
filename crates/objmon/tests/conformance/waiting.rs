//! Wait, notify and interrupt checks: levels released and restored, notify one and all, timed
//! waits, interrupts before and during a wait, invalid timeouts, a producer and consumer.

use super::*;

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
