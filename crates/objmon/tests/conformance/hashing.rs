//! Identity-hash checks: stable in every lock state, taken while another thread holds or waits,
//! mostly distinct, racing lock traffic, with a full monitor table, discarded by reclaim.

use super::*;

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
                        let prev = seen.compare_exchange(0, v, Ordering::SeqCst, Ordering::SeqCst);
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
