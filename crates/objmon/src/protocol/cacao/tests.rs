//! Unit tests of `cacao` and `cacao-seed` (each test runs both): the header left to the host,
//! first entries keeping their monitor, overflow entries from the pool and back, one mutex per
//! object, pins, the space figures, address claims, reclaim and the hash.

use super::*;
use crate::vm::Runtime;

/// Two headers of `hs` that hash to the same bucket.
fn colliding(hs: &[HostWord]) -> (usize, usize) {
    let mut seen = std::collections::HashMap::new();
    for (i, h) in hs.iter().enumerate() {
        if let Some(&j) = seen.get(&CacaoState::bucket_of(h.addr())) {
            return (j, i);
        }
        seen.insert(CacaoState::bucket_of(h.addr()), i);
    }
    panic!("no collision among {} headers", hs.len());
}

/// The header carries no lock state at all.
fn header_is_left_to_the_host<const S: bool>() {
    let rt = Runtime::<CacaoLocks<S>>::with_defaults();
    let me = rt.attach().unwrap();
    let h = HostWord::new(0xef);
    let g = me.enter(&h).unwrap();
    assert_eq!(h.raw(), 0xef);
    assert_eq!(me.lock_count(&h), 1);
    drop(g);
    assert_eq!(h.raw(), 0xef);
}

/// "Not destroying the associated mutex when the count goes down to zero": the first
/// entry keeps its monitor, and relocking allocates nothing.
fn first_entry_keeps_its_monitor<const S: bool>() {
    let rt = Runtime::<CacaoLocks<S>>::with_defaults();
    let me = rt.attach().unwrap();
    let h = HostWord::default();
    drop(me.enter(&h).unwrap());
    assert_eq!(rt.stats_snapshot().live_monitors, 1);
    for _ in 0..100 {
        drop(me.enter(&h).unwrap());
    }
    assert_eq!(rt.monitors().allocations(), 1);
    // Another object with the same hash claims the idle first entry and its monitor.
    let hs: Vec<HostWord> = (0..4096).map(HostWord::new).collect();
    let (i, j) = colliding(&hs);
    drop(me.enter(&hs[i]).unwrap());
    let before = rt.monitors().allocations();
    drop(me.enter(&hs[j]).unwrap());
    assert_eq!(
        rt.monitors().allocations(),
        before,
        "claimEntry reuses the mutex"
    );
}

/// A collision while the first entry is busy takes an overflow entry from the pool,
/// which is freed with its monitor when its count drops to zero.
fn overflow_entries_come_from_the_pool_and_go_back<const S: bool>() {
    let rt = Runtime::<CacaoLocks<S>>::with_defaults();
    let me = rt.attach().unwrap();
    let hs: Vec<HostWord> = (0..4096).map(HostWord::new).collect();
    let (i, j) = colliding(&hs);
    let a = me.enter(&hs[i]).unwrap();
    let b = me.enter(&hs[j]).unwrap();
    let b2 = me.enter(&hs[j]).unwrap();
    assert_eq!(rt.state().overflow_in_use(), 1);
    assert_eq!(rt.stats_snapshot().live_monitors, 2);
    assert_eq!(me.lock_count(&hs[j]), 2);
    drop(b2);
    drop(b);
    assert_eq!(rt.state().overflow_in_use(), 0);
    assert_eq!(rt.stats_snapshot().live_monitors, 1);
    // The first entry is still busy; the other object is free.
    assert_eq!(rt.owner_of(&hs[j]), None);
    assert_eq!(rt.owner_of(&hs[i]), Some(me.id()));
    drop(a);
}

/// The seed's `lockMutexForObject` would claim a free first entry for an object that
/// already has an overflow entry; we must find that entry instead (one mutex per object).
fn an_object_in_the_chain_is_not_given_a_second_mutex<const S: bool>() {
    let rt = Runtime::<CacaoLocks<S>>::with_defaults();
    let hs: Vec<HostWord> = (0..4096).map(HostWord::new).collect();
    let (i, j) = colliding(&hs);
    let me = rt.attach().unwrap();
    let a = me.enter(&hs[i]).unwrap();
    let b = me.enter(&hs[j]).unwrap(); // overflow entry
    drop(a); // first entry idle now
    std::thread::scope(|s| {
        s.spawn(|| {
            let other = rt.attach().unwrap();
            assert!(other.try_enter(&hs[j]).unwrap().is_none(), "held by `me`");
        });
    });
    assert_eq!(me.lock_count(&hs[j]), 1);
    drop(b);
}

/// The first entry keeps `o` and its monitor at count 0 with no pin on it: any thread
/// relocks it by taking the monitor (no bucket lock, no pin), and a colliding object
/// claims it, monitor and all, once the monitor is free (the seed's claimEntry).
fn idle_first_entry_is_relocked_without_pins_and_claimed<const S: bool>() {
    let rt = Runtime::<CacaoLocks<S>>::with_defaults();
    let me = rt.attach().unwrap();
    let hs: Vec<HostWord> = (0..4096).map(HostWord::new).collect();
    let (i, j) = colliding(&hs);
    let f = &rt.state().bucket(hs[i].addr()).first;
    drop(me.enter(&hs[i]).unwrap());
    assert_eq!((f.obj(), f.users()), (hs[i].addr(), 0));
    let g = me.enter(&hs[i]).unwrap();
    assert_eq!(
        f.users(),
        0,
        "the owner of a first entry holds the monitor, no pin"
    );
    std::thread::scope(|s| {
        s.spawn(|| {
            let other = rt.attach().unwrap();
            // Busy: `hs[j]` gets an overflow entry, freed when it is unlocked.
            drop(other.enter(&hs[j]).unwrap());
            assert_eq!(rt.state().overflow_in_use(), 0);
            assert_eq!(f.obj(), hs[i].addr());
        });
    });
    drop(g);
    std::thread::scope(|s| {
        s.spawn(|| {
            let other = rt.attach().unwrap();
            drop(other.enter(&hs[j]).unwrap()); // free: claimed
            assert_eq!(f.obj(), hs[j].addr());
        });
    });
    assert_eq!(
        rt.monitors().allocations(),
        2,
        "one first entry, one overflow entry"
    );
    drop(me.enter(&hs[i]).unwrap()); // claims it back
    assert_eq!(f.obj(), hs[i].addr());
    assert_eq!(rt.monitors().allocations(), 2, "claimEntry kept the mutex");
    assert_eq!(rt.owner_of(&hs[i]), None);
}

/// A waiter pins the first entry while others own its monitor: a colliding object
/// cannot claim it meanwhile, and the pin goes when the waiter owns the monitor again.
fn a_waiter_pins_the_first_entry<const S: bool>() {
    let rt = Runtime::<CacaoLocks<S>>::with_defaults();
    let hs: Vec<HostWord> = (0..4096).map(HostWord::new).collect();
    let (i, j) = colliding(&hs);
    let f = &rt.state().bucket(hs[i].addr()).first;
    let waiting = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let me = rt.attach().unwrap();
            let g = me.enter(&hs[i]).unwrap();
            waiting.store(true, std::sync::atomic::Ordering::SeqCst);
            g.wait(None).unwrap();
            assert_eq!(f.users(), 0);
            assert_eq!(f.obj(), hs[i].addr());
        });
        let other = rt.attach().unwrap();
        while !waiting.load(std::sync::atomic::Ordering::SeqCst) {
            std::thread::yield_now();
        }
        // Once we hold `hs[i]` the waiter is in the wait set, pinning the entry.
        let g = other.enter(&hs[i]).unwrap();
        assert_eq!(f.users(), 1);
        drop(other.enter(&hs[j]).unwrap());
        assert_eq!(f.obj(), hs[i].addr(), "a pinned first entry is not claimed");
        g.notify().unwrap();
        drop(g);
    });
    assert_eq!(rt.state().overflow_in_use(), 0);
}

/// The figures of the module documentation (64-bit targets).
#[cfg(target_pointer_width = "64")]
#[test]
fn space_figures() {
    assert_eq!(std::mem::size_of::<Bucket>(), 32);
    assert_eq!(std::mem::size_of::<Entry>(), 24);
    assert_eq!(
        CacaoState::new(crate::table::MAX_MONITOR_INDEX).table_bytes(),
        56 * 1024
    );
}

/// An address with an entry in runtime A's table is `ForeignHeader` to
/// runtime B, which keeps no entry, monitor or claim from the attempt. A's first entry
/// claimed for another object gives the old address's claim back.
fn an_entry_claims_its_address<const S: bool>() {
    let ra = Runtime::<CacaoLocks<S>>::with_defaults();
    let rb = Runtime::<CacaoLocks<S>>::with_defaults();
    let (a, b) = (ra.attach().unwrap(), rb.attach().unwrap());
    let hs: Vec<HostWord> = (0..4096).map(HostWord::new).collect();
    let (i, j) = colliding(&hs);
    drop(a.enter(&hs[i]).unwrap());
    assert_eq!(b.enter(&hs[i]).err(), Some(MonitorError::ForeignHeader));
    assert_eq!(b.try_enter(&hs[i]).err(), Some(MonitorError::ForeignHeader));
    assert_eq!(rb.stats_snapshot().live_monitors, 0);
    assert_eq!(rb.monitors().claimed(), 0);
    assert_eq!(rb.state().overflow_in_use(), 0);
    // `hs[j]` takes over the idle first entry of the same bucket: `hs[i]` is free again.
    drop(a.enter(&hs[j]).unwrap());
    assert_eq!(ra.monitors().claimed(), 1);
    drop(b.enter(&hs[i]).unwrap());
    assert_eq!(a.enter(&hs[i]).err(), Some(MonitorError::ForeignHeader));
}

/// The GC hook drops the entry: a new object at the same address starts unlocked, even if
/// the dead one was left locked (its monitor is leaked, not freed).
fn reclaim_forgets_the_address<const S: bool>() {
    let rt = Runtime::<CacaoLocks<S>>::with_defaults();
    let me = rt.attach().unwrap();
    let mut h = HostWord::default();
    std::mem::forget(me.enter(&h).unwrap());
    rt.reclaim(&mut h);
    assert_eq!(rt.owner_of(&h), None);
    assert_eq!(me.lock_count(&h), 0);
    drop(me.enter(&h).unwrap());
    rt.reclaim(&mut h);
    assert_eq!(rt.stats_snapshot().live_monitors, 1, "only the leaked one");
}

/// The hash goes into bits 31..8 of the host word; the host's 8 bits stay.
fn hash_in_host_word<const S: bool>() {
    let rt = Runtime::<CacaoLocks<S>>::with_defaults();
    let me = rt.attach().unwrap();
    let mut h = HostWord::new(0x3c);
    let g = me.enter(&h).unwrap();
    let v = me.identity_hash(&h).unwrap();
    assert!((1..1 << 24).contains(&v));
    assert_eq!(h.raw(), v << 8 | 0x3c);
    drop(g);
    assert_eq!(me.identity_hash(&h), Ok(v));
    assert_eq!(h.bits(), 0x3c);
    rt.reclaim(&mut h);
    assert_eq!(h.raw(), 0x3c);
}

/// Each check above, once per flavor: the two share everything but the bucket lock's
/// scope in `enter`, `try_enter` and `exit`.
macro_rules! both_flavors {
    ($($name:ident),* $(,)?) => {
        mod cacao {
            $(#[test]
            fn $name() {
                super::$name::<false>();
            })*
        }
        mod cacao_seed {
            $(#[test]
            fn $name() {
                super::$name::<true>();
            })*
        }
    };
}

both_flavors!(
    header_is_left_to_the_host,
    first_entry_keeps_its_monitor,
    overflow_entries_come_from_the_pool_and_go_back,
    an_object_in_the_chain_is_not_given_a_second_mutex,
    idle_first_entry_is_relocked_without_pins_and_claimed,
    a_waiter_pins_the_first_entry,
    an_entry_claims_its_address,
    reclaim_forgets_the_address,
    hash_in_host_word,
);
