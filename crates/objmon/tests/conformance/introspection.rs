//! Introspection checks: deadlock detection, thread dumps, contention profiles.

use super::*;

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
            a.blocked_on.map(|b| (b.kind, b.object)) == Some((BlockKind::Wait, ObjectRef::of(&w)))
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
