//! Unit tests of `stack`: the record a header names, recursion, inflation through INFLATING,
//! running out of records, wait, saturating counts, pool-only reads, forgotten locks, and the
//! identity hash displaced or inflated.

use super::*;
use crate::vm::{DeflationPolicy, Runtime};
use std::time::Duration;

const HOST: u64 = 0x8000_0000_0000_00a4;

/// Seed 001: the header holds "a pointer to this stack location" with low bits 00, the
/// record holds the displaced header, and unlocking puts it back.
#[test]
fn header_points_at_record_with_displaced_header() {
    let rt = Runtime::<Stack>::with_defaults();
    let me = rt.attach().unwrap();
    let h = StackWord::new(HOST);
    let g = me.enter(&h).unwrap();
    let w = h.raw();
    assert_eq!(w & LOCK_BITS, LOCKED);
    assert!(me.context().local().owns_word(w));
    let r = &me.context().local().records[me.context().local().index_of_word(w)];
    assert_eq!(r.displaced.load(Ordering::Relaxed), HOST | 0b01);
    assert_eq!(h.host_bits(), None, "displaced into the record");
    assert_eq!(
        rt.owner_of(&h),
        Some(me.id()),
        "owner from the record address"
    );
    drop(g);
    assert_eq!(h.raw(), HOST | 0b01);
    assert_eq!(h.host_bits(), Some(HOST & MARK_HOST_BITS));
}

/// Recursion: a second record with an empty displaced header; the header is unchanged.
#[test]
fn recursion_pushes_empty_record() {
    let rt = Runtime::<Stack>::with_defaults();
    let me = rt.attach().unwrap();
    let h = StackWord::new(HOST);
    let g1 = me.enter(&h).unwrap();
    let w = h.raw();
    let g2 = me.enter(&h).unwrap();
    assert_eq!(h.raw(), w);
    let rs = me.context().local();
    assert_eq!(rs.levels(addr(&h), w), (true, 1));
    assert_eq!(Stack::locked_objects(me.context()).len(), 2);
    drop(g2);
    assert_eq!(h.raw(), w);
    drop(g1);
    assert_eq!(h.raw(), HOST | 0b01);
    assert_eq!(rt.stats_snapshot().inflations(), 0);
}

/// The contender's inflation through INFLATING: the monitor names the record's thread,
/// the host bits come back from the record, recursive records exit as no-ops and the
/// base record's exit hands over. Eager deflation restores the header.
#[test]
fn contender_inflates_through_inflating_marker() {
    let rt = Runtime::<Stack>::with_defaults();
    let h = StackWord::new(HOST);
    let me = rt.attach().unwrap();
    let g1 = me.enter(&h).unwrap();
    let g2 = me.enter(&h).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            let other = rt.attach().unwrap();
            let g = other.enter(&h).unwrap();
            assert_eq!(other.lock_count(&h), 1);
            drop(g);
        });
        while h.raw() & LOCK_BITS != MONITOR {
            std::thread::yield_now();
        }
        assert_eq!(h.host_bits(), Some(HOST & MARK_HOST_BITS));
        assert_eq!(rt.owner_of(&h), Some(me.id()));
        assert_eq!(me.lock_count(&h), 2);
        drop(g2);
        assert_eq!(me.lock_count(&h), 1);
        assert_eq!(rt.owner_of(&h), Some(me.id()));
        drop(g1);
    });
    let s = rt.stats_snapshot();
    assert_eq!(
        (s.inflations_contention, s.deflations, s.live_monitors),
        (1, 1, 0)
    );
    assert_eq!(h.raw(), HOST | 0b01);
}

/// More objects than records: the rest go through monitors; recursion past the last record
/// inflates the owner's own lock. Unstructured exits in any order.
#[test]
fn records_run_out() {
    let rt = Runtime::<Stack>::new(Config {
        deflation: DeflationPolicy::Never,
        ..Config::default()
    });
    let hs: Vec<StackWord> = (0..LOCK_RECORDS + 2)
        .map(|_| StackWord::default())
        .collect();
    let me = rt.attach().unwrap();
    for h in &hs {
        me.monitor_enter(h).unwrap();
    }
    assert_eq!(hs[LOCK_RECORDS].raw() & LOCK_BITS, MONITOR);
    me.monitor_enter(&hs[0]).unwrap(); // no record left: the owner inflates
    assert_eq!(hs[0].raw() & LOCK_BITS, MONITOR);
    assert_eq!(me.lock_count(&hs[0]), 2);
    for h in hs.iter().step_by(2).chain(hs.iter().skip(1).step_by(2)) {
        me.monitor_exit(h).unwrap();
    }
    me.monitor_exit(&hs[0]).unwrap();
    assert!(hs.iter().all(|h| rt.owner_of(h).is_none()));
    assert_eq!(
        me.monitor_exit(&hs[1]),
        Err(MonitorError::IllegalMonitorState)
    );
}

/// Quick notify on a stack-lock, wait inflates and keeps the recursion in the records.
#[test]
fn wait_inflates_keeping_records() {
    let rt = Runtime::<Stack>::with_defaults();
    let me = rt.attach().unwrap();
    let h = StackWord::default();
    let _g1 = me.enter(&h).unwrap();
    let g2 = me.enter(&h).unwrap();
    g2.notify_all().unwrap();
    assert_eq!(h.raw() & LOCK_BITS, LOCKED, "notify needs no monitor");
    assert_eq!(
        g2.wait(Some(Duration::ZERO)).unwrap(),
        WaitOutcome::TimedOut
    );
    assert_eq!(h.raw() & LOCK_BITS, MONITOR);
    assert_eq!(me.lock_count(&h), 2);
    assert_eq!(me.context().local().levels(addr(&h), h.raw()), (true, 1));
}

/// A monitor's count can reach `u32::MAX` on its own, and the recursive records beside it
/// add theirs: `lock_count` saturates instead of overflowing (a plain `+` would panic in
/// debug and wrap in release). Reaching `u32::MAX` by recursion takes four billion
/// enters, so the test sets the count directly, as that many would.
#[test]
fn lock_count_saturates() {
    let rt = Runtime::<Stack>::new(Config {
        deflation: DeflationPolicy::Never,
        ..Config::default()
    });
    let me = rt.attach().unwrap();
    let h = StackWord::default();
    let g1 = me.enter(&h).unwrap();
    let g2 = me.enter(&h).unwrap();
    assert_eq!(
        g2.wait(Some(Duration::ZERO)).unwrap(),
        WaitOutcome::TimedOut
    );
    assert_eq!(
        h.raw() & LOCK_BITS,
        MONITOR,
        "a base and a recursive record"
    );
    let m = rt.monitors().get(index_of(h.raw()));
    // We own the monitor and nobody contends: release it outright and take it again
    // with `c` levels.
    let set_count = |c| {
        m.abandon_fresh();
        m.enter_inflated(me.context().core_arc(), c).unwrap();
    };
    set_count(u32::MAX);
    assert_eq!(me.lock_count(&h), u32::MAX);
    set_count(u32::MAX - 1);
    assert_eq!(me.lock_count(&h), u32::MAX);
    set_count(1);
    assert_eq!(me.lock_count(&h), 2);
    drop(g2);
    drop(g1);
    assert_eq!(me.lock_count(&h), 0);
}

/// The record pool: a contender reads through a header word only if it is the address of
/// a pool record, so a word a host forged (an 8-byte-aligned non-record) is refused.
#[test]
fn only_pool_records_are_read() {
    let rt = Runtime::<Stack>::with_defaults();
    let me = rt.attach().unwrap();
    let rs = me.context().local();
    assert!(stack_records::is_record(rs.word_of(0)));
    assert!(stack_records::is_record(rs.word_of(LOCK_RECORDS - 1)));
    assert!(!stack_records::is_record(rs.word_of(0) + 8));
    let h = StackWord::default();
    assert!(!stack_records::is_record(addr(&h) as u64));
    h.0.store(addr(&h) as u64, Ordering::Relaxed);
    assert_eq!(
        Stack::inflate_contended(&rt, me.context(), &h, h.raw(), InflationCause::Contention),
        Err(MonitorError::IllegalMonitorState)
    );
    assert_eq!(me.enter(&h).err(), Some(MonitorError::IllegalMonitorState));
    assert!(me.try_enter(&h).unwrap().is_none());
    assert_eq!(h.raw(), addr(&h) as u64, "never written");
}

/// A thread that detaches while a header points into its records (a forgotten guard)
/// leaves the array alive: a contender can still inflate, never reading freed memory.
#[test]
fn forgotten_stack_lock_survives_detach() {
    let rt = Runtime::<Stack>::with_defaults();
    let h = StackWord::new(HOST);
    std::thread::scope(|s| {
        s.spawn(|| {
            let me = rt.attach().unwrap();
            std::mem::forget(me.enter(&h).unwrap());
        });
    });
    assert_eq!(h.raw() & LOCK_BITS, LOCKED);
    assert_eq!(rt.owner_of(&h), None, "no attached owner");
    let me = rt.attach().unwrap();
    assert!(me.try_enter(&h).unwrap().is_none());
    // A contender inflates (the record is read under INFLATING) and would block forever;
    // a helper thread does the inflation and gives up through the stats.
    std::thread::scope(|s| {
        s.spawn(|| {
            let t = rt.attach().unwrap();
            let _ =
                Stack::inflate_contended(&rt, t.context(), &h, h.raw(), InflationCause::Contention);
            drop(t);
        });
    });
    assert_eq!(h.raw() & LOCK_BITS, MONITOR);
    assert_eq!(h.host_bits(), Some(HOST & MARK_HOST_BITS));
    assert_eq!(rt.owner_of(&h), None);
    assert!(me.try_enter(&h).unwrap().is_none());
}

/// Legacy stack-locking: a hash taken while unlocked travels in the displaced header (no
/// inflation to read it back); a first hash of a stack-locked object inflates it, and the
/// exit's deflation (or deflate_idle) keeps the hash; relocation moves it.
#[test]
fn hash_displaced_or_inflated() {
    let rt = Runtime::<Stack>::new(crate::vm::Config {
        deflation: DeflationPolicy::OnRequest,
        ..crate::vm::Config::default()
    });
    let h = StackWord::new(HOST);
    let me = rt.attach().unwrap();
    let v = me.identity_hash(&h).unwrap();
    assert_eq!(h.raw(), HOST | u64::from(v) << 32 | 0b01);
    let g = me.enter(&h).unwrap();
    assert!(me.context().local().owns_word(h.raw()), "stack-locked");
    assert_eq!(me.identity_hash(&h), Ok(v), "read from our own record");
    assert!(
        me.context().local().owns_word(h.raw()),
        "no inflation needed"
    );
    assert_eq!(rt.peek_identity_hash(&h), None, "hidden in the record");
    assert_eq!(Stack::peek_identity_hash_at_safepoint(&rt, &h), Some(v));
    drop(g);
    assert_eq!(rt.stats_snapshot().inflations(), 0);

    let h2 = StackWord::new(HOST);
    let _a = me.enter(&h2).unwrap();
    let b = me.enter(&h2).unwrap();
    let w = me.identity_hash(&h2).unwrap();
    assert_eq!(h2.raw() & LOCK_BITS, MONITOR, "inflated to hold the hash");
    assert_eq!(rt.stats_snapshot().inflations_identity_hash, 1);
    assert_eq!(me.lock_count(&h2), 2);
    assert_eq!(rt.peek_identity_hash(&h2), Some(w));
    drop(b);
    drop(_a);
    assert!(Stack::deflate_idle(&rt, &h2));
    assert_eq!(h2.raw(), HOST | u64::from(w) << 32 | 0b01);
    assert_eq!(h2.host_bits(), Some(HOST & MARK_HOST_BITS));

    // Relocation of a stack-locked, hashed object: the word (a record address) is copied
    // and the record's displaced header still has the hash.
    me.monitor_enter(&h).unwrap();
    let new = StackWord::default();
    new.0.store(h.raw(), Ordering::Relaxed);
    // SAFETY: a test's safepoint: no other thread is inside objmon, and the word was
    // copied verbatim.
    unsafe { rt.relocate(&h, &new) };
    assert_eq!(me.identity_hash(&new), Ok(v));
    // SAFETY: `me` is this thread's handle; the move was reported with `relocate`.
    assert_eq!(unsafe { Stack::exit(&rt, me.context(), &new) }, Ok(()));
    assert_eq!(rt.peek_identity_hash(&new), Some(v));
}

/// A thread that does not own a stack-locked object inflates it to hash it, without
/// waiting for the owner's unlock.
#[test]
fn hash_of_another_threads_stack_lock_inflates() {
    let rt = Runtime::<Stack>::with_defaults();
    let me = rt.attach().unwrap();
    let h = StackWord::new(HOST);
    let g = me.enter(&h).unwrap();
    let v = std::thread::scope(|s| {
        s.spawn(|| rt.attach().unwrap().identity_hash(&h).unwrap())
            .join()
            .unwrap()
    });
    assert_eq!(h.raw() & LOCK_BITS, MONITOR);
    assert_eq!(rt.owner_of(&h), Some(me.id()));
    assert_eq!(me.identity_hash(&h), Ok(v));
    drop(g);
    assert_eq!(
        h.raw(),
        HOST | u64::from(v) << 32 | 0b01,
        "deflated at exit"
    );
}

/// The owner's own view of a header held through a forgotten guard and moved by safe code
/// (`mem::swap`), then locked again by its owner at its new address: the moved header still
/// names its base record (recorded at the old address), so the owner holds it twice, and
/// once again after the recursive exit; the header now at the old address is not held.
#[test]
fn forgotten_hold_moved_then_relocked_counts_both_levels() {
    let rt = Runtime::<Stack>::with_defaults();
    let me = rt.attach().unwrap();
    let mut a = StackWord::new(HOST);
    let mut b = StackWord::new(HOST);
    std::mem::forget(me.enter(&a).unwrap());
    std::mem::swap(&mut a, &mut b);
    assert!(me.holds_lock(&b), "the moved header names our record");
    assert_eq!(me.lock_count(&b), 1);
    assert_eq!(me.lock_count(&a), 0);
    let g = me.enter(&b).unwrap();
    assert_eq!(
        me.lock_count(&b),
        2,
        "the base record and the recursive one"
    );
    drop(g);
    assert_eq!(me.lock_count(&b), 1);
    assert!(me.holds_lock(&b));
    assert!(!me.holds_lock(&a));
    // Again with the old address's header locked by us in between: its own base record
    // (at that address) must not take the moved header's levels, nor they its.
    let ga = me.enter(&a).unwrap();
    let gb = me.enter(&b).unwrap();
    assert_eq!((me.lock_count(&a), me.lock_count(&b)), (1, 2));
    drop(gb);
    drop(ga);
    assert_eq!((me.lock_count(&a), me.lock_count(&b)), (0, 1));
}
