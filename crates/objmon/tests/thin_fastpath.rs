//! `thin`'s fast paths (the inline nested lock and unlock, the blind-store
//! unlock after the thread's last fast lock) leave every word exactly as `thin-seed`'s (seed
//! 000 §2.3 as written) do, in every order of locks and unlocks a thread can make; and the
//! thread's record of its last fast lock never outlives the object (reclaim, relocate), so an
//! exit of an object it does not hold stays an error. No timing here (objmon-bench and
//! `examples/user_loop.rs time` measure).

use objmon::protocol::thin::ThinSeed;
use objmon::vm::{LockWord, MonitorError, Protocol, Runtime, Thin};

/// A thin word's owner field (seed 000 §2.3, Figure 1(a): bit 31 the shape, bits 30..16 the
/// thread index, bits 15..8 the count).
const OWNER_FIELD: u32 = 0x7fff << 16;

/// `raw` with the owner field written as 1 when it names `me`: thread indices are handed out
/// process-wide, so a test running beside this one may hold index 1 while a script runs
/// (CI saw the thin run get index 2 and the seed run index 1). A thin word naming anyone else
/// fails the test; inflated words (bit 31) carry a monitor index and stay as they are.
fn as_mine(raw: u32, me: u16) -> u32 {
    if raw & (1 << 31) != 0 || raw & OWNER_FIELD == 0 {
        return raw;
    }
    assert_eq!(
        (raw & OWNER_FIELD) >> 16,
        u32::from(me),
        "{raw:#x} names another thread"
    );
    (raw & !OWNER_FIELD) | (1 << 16)
}

/// Both variants, one script: the words after each step, with our own index written as 1.
fn script<P: Protocol<Header = LockWord>>() -> Vec<u32> {
    let (a, b) = (LockWord::new(0x11), LockWord::new(0x22));
    let rt = Runtime::<P>::with_defaults();
    let me = rt.attach().unwrap();
    let my = me.id().get();
    let mut seen = Vec::new();
    let snap = |seen: &mut Vec<u32>| {
        seen.push(as_mine(a.raw(), my));
        seen.push(as_mine(b.raw(), my));
    };
    // Plain, nested, and an outer lock after a nested one.
    drop(me.enter(&a).unwrap());
    snap(&mut seen);
    {
        let g = me.enter(&a).unwrap();
        snap(&mut seen);
        let g2 = me.enter(&a).unwrap();
        snap(&mut seen);
        drop(me.enter(&a).unwrap());
        snap(&mut seen);
        drop(g2);
        snap(&mut seen);
        drop(g);
        snap(&mut seen);
    }
    // Two objects, released in and out of order (unstructured exits may come in any order).
    me.monitor_enter(&a).unwrap();
    me.monitor_enter(&b).unwrap();
    snap(&mut seen);
    me.monitor_exit(&a).unwrap();
    snap(&mut seen);
    me.monitor_enter(&a).unwrap();
    me.monitor_exit(&b).unwrap();
    snap(&mut seen);
    me.monitor_enter(&b).unwrap();
    me.monitor_enter(&b).unwrap();
    me.monitor_exit(&a).unwrap();
    snap(&mut seen);
    me.monitor_exit(&b).unwrap();
    me.monitor_exit(&b).unwrap();
    snap(&mut seen);
    // Exits of what we do not hold (any more) are errors and change nothing.
    // SAFETY: our own context; `a` and `b` live for the calls.
    unsafe {
        assert_eq!(
            P::exit(&rt, me.context(), &a),
            Err(MonitorError::IllegalMonitorState)
        );
        let g = me.enter(&b).unwrap();
        assert_eq!(
            P::exit(&rt, me.context(), &a),
            Err(MonitorError::IllegalMonitorState)
        );
        drop(g);
        assert_eq!(
            P::exit(&rt, me.context(), &b),
            Err(MonitorError::IllegalMonitorState)
        );
    }
    snap(&mut seen);
    // Deep nesting up to the overflow (257 locks inflate) and back.
    let gs: Vec<_> = (0..256).map(|_| me.enter(&b).unwrap()).collect();
    snap(&mut seen);
    let g = me.enter(&b).unwrap();
    assert_eq!(me.lock_count(&b), 257);
    drop(g);
    drop(gs);
    snap(&mut seen);
    seen
}

#[test]
fn fast_paths_leave_the_seeds_words() {
    // The first script runs while another thread holds an index, the second may not: the
    // comparison must not depend on which index the scripts get.
    let other = Runtime::<Thin>::with_defaults();
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let thin = std::thread::scope(|s| {
        let other = &other;
        s.spawn(move || {
            let _h = other.attach().unwrap();
            held_tx.send(()).unwrap();
            done_rx.recv().unwrap();
        });
        held_rx.recv().unwrap();
        let thin = script::<Thin>();
        done_tx.send(()).unwrap();
        thin
    });
    let seed = script::<ThinSeed>();
    assert_eq!(thin, seed);
    assert_eq!(&thin[..2], &[0x11, 0x22]);
}

/// The record of a fast lock names an object that dies held (a forgotten guard): `reclaim`
/// clears it (`relocate` likewise: `thin.rs`'s unit test
/// `relocate_clears_the_record_of_a_moved_held_object`), so that an exit of the new object at that address, held by another thread, is
/// an error and leaves that thread's lock alone (the blind store would free it). Loom:
/// `loom_thin_fastpath::thin_reclaim_clears_the_owners_record`.
#[test]
fn reclaim_clears_the_record_of_a_dead_held_object() {
    let rt = Runtime::<Thin>::with_defaults();
    let me = rt.attach().unwrap();
    let mut x = LockWord::new(0x33);
    // SAFETY: our own context; `x` lives for the calls; its death while held is reported.
    unsafe { Thin::enter(&rt, me.context(), &x).unwrap() };
    rt.reclaim(&mut x);
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let (rt, x) = (&rt, &x);
        s.spawn(move || {
            let other = rt.attach().unwrap();
            let g = other.enter(x).unwrap();
            tx.send(other.id()).unwrap();
            go_rx.recv().unwrap();
            drop(g);
        });
        let other = rx.recv().unwrap();
        // SAFETY: our own context; `x` lives for the call.
        let r = unsafe { Thin::exit(rt, me.context(), x) };
        assert_eq!(r, Err(MonitorError::IllegalMonitorState));
        assert_eq!(rt.owner_of(x), Some(other), "the other thread's lock stays");
        go_tx.send(()).unwrap();
    });
    assert_eq!(x.raw(), 0x33);
}
