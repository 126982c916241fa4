//! The `lightweight*` protocols (seed 001's fast-locking with a lock stack, and its
//! `ObjectMonitorTable` form): what a safe-Rust user (or a C host with `calloc`) can do to a
//! [`MarkWord`] — zero it, move it while its idle monitor is installed, drop it without
//! `reclaim` and put a new object at the same address — must be correct, or at worst leak a
//! monitor; never hang, never spin. Each check is a regression test: without
//! the code that keeps its promise it hangs, caught by the watchdog.
#![cfg(not(loom))]

mod watchdog;

/// A runtime of `P`, made with `Runtime::new_unchecked` because some of the protocols here
/// (`lightweight*`) ask the host never to move or free a header held through a leaked guard.
fn hosted<P: objmon::vm::Protocol>(
    config: objmon::vm::Config,
) -> std::sync::Arc<objmon::vm::Runtime<P>> {
    // SAFETY: the contract of `new_unchecked` (lightweight's: no header held through a
    // leaked guard is moved or freed unreported). The tests here that leak a guard and then
    // move or free its header do so on purpose, to check that what the protocol does then
    // stays memory-safe; no data is guarded by these headers, so two owners could not race.
    unsafe { objmon::vm::Runtime::new_unchecked(config) }
}

use objmon::vm::{
    Config, DeflationPolicy, Lightweight, LightweightSeed, LightweightTable, MarkWord, Protocol,
    Runtime, WaitOutcome,
};
use std::sync::Arc;
use std::thread;
use std::time::Duration;
use watchdog::within;

/// The policies that leave an idle monitor installed after its last exit.
const KEEPING: [DeflationPolicy; 3] = [
    DeflationPolicy::Never,
    DeflationPolicy::OnRequest,
    DeflationPolicy::AtExit { keep: 1 },
];

/// Runs `check::<P>` for the three `lightweight*` protocols, each under the watchdog.
macro_rules! each_lightweight {
    ($check:ident) => {
        within(30, "lightweight", $check::<Lightweight>);
        within(30, "lightweight-seed", $check::<LightweightSeed>);
        within(30, "lightweight-table", $check::<LightweightTable>);
    };
}

fn runtime<P: Protocol>(deflation: DeflationPolicy) -> Arc<Runtime<P>> {
    hosted(Config {
        deflation,
        ..Config::default()
    })
}

/// Inflates `h` (wait needs a monitor) and leaves it unlocked.
fn inflate<P: Protocol<Header = MarkWord>>(rt: &Arc<Runtime<P>>, h: &MarkWord) {
    let me = rt.attach().unwrap();
    let g = me.enter(h).unwrap();
    assert_eq!(g.wait(Some(Duration::ZERO)).unwrap(), WaitOutcome::TimedOut);
}

/// Everything a lock can do, on `h`, from this thread and a second one: try-lock from
/// elsewhere first (it must answer, never spin), then lock, recursion, wait (inflates a
/// fast-lock), contention (inflates with an anonymous owner), and the owner query.
fn exercise<P: Protocol<Header = MarkWord>>(rt: &Arc<Runtime<P>>, h: &MarkWord) {
    thread::scope(|s| {
        s.spawn(|| {
            let other = rt.attach().unwrap();
            let g = other
                .try_enter(h)
                .unwrap()
                .expect("unlocked: try_enter takes it");
            assert_eq!(rt.owner_of(h), Some(other.id()));
            drop(g);
        });
    });
    let me = rt.attach().unwrap();
    let g = me.enter(h).unwrap();
    let g2 = me.enter(h).unwrap();
    assert_eq!(me.lock_count(h), 2);
    assert_eq!(
        g2.wait(Some(Duration::ZERO)).unwrap(),
        WaitOutcome::TimedOut
    );
    assert_eq!(rt.owner_of(h), Some(me.id()));
    drop(g2);
    thread::scope(|s| {
        s.spawn(|| {
            let other = rt.attach().unwrap();
            assert!(
                other.try_enter(h).unwrap().is_none(),
                "held: try_enter says no"
            );
        });
    });
    // Contention: the other thread inflates (or enters the monitor) and waits for us.
    thread::scope(|s| {
        let t = s.spawn(|| {
            let other = rt.attach().unwrap();
            for _ in 0..100 {
                drop(other.enter(h).unwrap());
            }
        });
        thread::sleep(Duration::from_millis(5));
        drop(g);
        for _ in 0..100 {
            drop(me.enter(h).unwrap());
        }
        t.join().unwrap();
    });
    assert_eq!(rt.owner_of(h), None);
    assert_eq!(me.lock_count(h), 0);
}

/// Regression (C API, `calloc`): an all-zero header word is an unlocked header with no hash and
/// no host bits. It was "fast-locked by nobody": `enter` inflated it with an anonymous owner
/// and blocked forever, `try_enter` from anyone said "held".
fn zero_word_is_an_unlocked_header<P: Protocol<Header = MarkWord>>() {
    let rt = runtime::<P>(DeflationPolicy::default());
    // SAFETY: `MarkWord` is one `AtomicU64`, for which all-zero bytes are a valid value; this
    // is what `calloc` or a zeroing GC hands a C host.
    let h: MarkWord = unsafe { std::mem::zeroed() };
    let me = rt.attach().unwrap();
    drop(me.enter(&h).unwrap()); // hung here
    assert_eq!(rt.owner_of(&h), None);
    assert_eq!(rt.peek_identity_hash(&h), None);
    exercise(&rt, &h);
    let v = me.identity_hash(&h).unwrap();
    assert_eq!(rt.peek_identity_hash(&h), Some(v));
    exercise(&rt, &h);
    assert_eq!(me.identity_hash(&h), Ok(v));
    // Deflated (eager policy) and unlocked again: the hash is all that is left.
    assert_eq!(rt.stats_snapshot().live_monitors, 0);
    assert_eq!(h.raw() & !0x7fff_ffff_0000_0000, 0);
    // And the zero word is what a fresh header is (C: `objmon_header_init`).
    assert_eq!(
        MarkWord::default().raw(),
        0,
        "the default header is the zero word"
    );
    assert_eq!(MarkWord::new(0).raw(), 0);
}

/// Regression: moving an unlocked header whose idle monitor is still installed. Under
/// `lightweight-table` the moved header said "monitor" but the table had no entry for its new
/// address: `enter` (and `try_enter`, documented never to wait) spun forever; and the entry
/// left at the old address made `wait` on the next object there spin in `inflate_owned`.
fn moved_header_with_idle_monitor<P: Protocol<Header = MarkWord>>() {
    for policy in KEEPING {
        let rt = runtime::<P>(policy);
        let mut slot = MarkWord::default();
        inflate(&rt, &slot);
        assert_eq!(
            slot.raw() & 0b11,
            0b10,
            "{policy:?}: the idle monitor stays"
        );
        let moved = std::mem::take(&mut slot);
        exercise(&rt, &moved);
        exercise(&rt, &slot);
        // Both again, now that each went through its own inflation.
        exercise(&rt, &moved);
        exercise(&rt, &slot);
    }
}

/// Regression, `mem::swap`: two objects with idle monitors trade addresses.
fn swapped_headers_with_idle_monitors<P: Protocol<Header = MarkWord>>() {
    for policy in KEEPING {
        let rt = runtime::<P>(policy);
        let (mut a, mut b) = (MarkWord::new(0x80), MarkWord::new(0x40));
        inflate(&rt, &a);
        inflate(&rt, &b);
        let me = rt.attach().unwrap();
        let (ha, hb) = (me.identity_hash(&a).unwrap(), me.identity_hash(&b).unwrap());
        drop(me);
        std::mem::swap(&mut a, &mut b);
        exercise(&rt, &a);
        exercise(&rt, &b);
        let me = rt.attach().unwrap();
        assert_eq!(
            (me.identity_hash(&b), me.identity_hash(&a)),
            (Ok(ha), Ok(hb))
        );
        assert_eq!((a.host_bits(), b.host_bits()), (0x40, 0x80));
    }
}

/// Regression: an object dropped without `reclaim` poisons nothing. Its table entry stayed;
/// the next object at that address could never inflate, and every waiter or contender on it
/// spun at 100% CPU. Here the old object is overwritten in place (dropped without `reclaim`,
/// the new one at the very same address), again and again.
fn dropped_without_reclaim<P: Protocol<Header = MarkWord>>() {
    for policy in KEEPING {
        let rt = runtime::<P>(policy);
        let mut slot = Box::new(MarkWord::default());
        for _ in 0..3 {
            inflate(&rt, &slot);
            *slot = MarkWord::default();
            exercise(&rt, &slot);
        }
        // `lightweight-table` gives the dropped objects' idle monitors back when their address
        // is reused (what is left is the last object's own); the others leak them, as every
        // protocol that keeps the monitor in the header does without `reclaim`.
        if P::NAME == "lightweight-table" {
            let s = rt.stats_snapshot();
            assert!(s.live_monitors <= 1, "{policy:?}: {s:?}");
        }
    }
}

/// Regression with a forgotten guard: the dropped object's monitor is still owned (by a guard
/// passed to `mem::forget`). It leaks, but the next object at the address works.
fn dropped_while_held_by_a_forgotten_guard<P: Protocol<Header = MarkWord>>() {
    for policy in [DeflationPolicy::default(), DeflationPolicy::Never] {
        let rt = runtime::<P>(policy);
        let mut slot = Box::new(MarkWord::default());
        thread::scope(|s| {
            s.spawn(|| {
                let me = rt.attach().unwrap();
                let g = me.enter(&slot).unwrap();
                g.wait(Some(Duration::ZERO)).unwrap();
                std::mem::forget(g);
            });
        });
        *slot = MarkWord::default();
        exercise(&rt, &slot);
    }
}

/// The GC hook on `lightweight-table`: an inflated object moved while its owner holds it, and
/// reported with `Runtime::relocate`, keeps its monitor (the entry moves with it). The owner's
/// exit at the new address spun forever: no entry there.
#[test]
fn table_relocate_moves_the_monitor_entry() {
    within(30, "lightweight-table", || {
        type P = LightweightTable;
        let rt = runtime::<P>(DeflationPolicy::default());
        let old = MarkWord::default();
        let me = rt.attach().unwrap();
        me.monitor_enter(&old).unwrap();
        me.wait(&old, Some(Duration::ZERO)).unwrap();
        assert_eq!(old.raw() & 0b11, 0b10);
        // The GC copies the word verbatim while the thread is stopped between calls (the
        // public API has no raw constructor, so copy the bytes as a GC would).
        // SAFETY: a `MarkWord` is one `AtomicU64`, 8 bytes; every `u64` is a valid value.
        let new: MarkWord = unsafe { std::mem::transmute::<u64, MarkWord>(old.raw()) };
        // SAFETY: a test's safepoint: no other thread is inside objmon, and the word was
        // copied verbatim.
        unsafe { rt.relocate(&old, &new) };
        assert_eq!(rt.owner_of(&new), Some(me.id()));
        assert_eq!(me.lock_count(&new), 1);
        // SAFETY: `me` is this thread's handle; the move was reported with `relocate`.
        assert_eq!(unsafe { P::exit(&rt, me.context(), &new) }, Ok(()));
        assert_eq!(rt.owner_of(&new), None);
        exercise(&rt, &new);
        assert_eq!(rt.stats_snapshot().live_monitors, 0);
        // `me` still records its unstructured hold on `old` (the GC's stale copy); its drop
        // finds no lock there and releases nothing.
    });
}

#[test]
fn zero_word_is_unlocked() {
    each_lightweight!(zero_word_is_an_unlocked_header);
}

#[test]
fn moved_header_keeps_working() {
    each_lightweight!(moved_header_with_idle_monitor);
}

#[test]
fn swapped_headers_keep_working() {
    each_lightweight!(swapped_headers_with_idle_monitors);
}

#[test]
fn dropped_header_poisons_nothing() {
    each_lightweight!(dropped_without_reclaim);
}

#[test]
fn dropped_held_header_only_leaks() {
    each_lightweight!(dropped_while_held_by_a_forgotten_guard);
}

/// A guard passed to `mem::forget` leaves its lock-stack entry (an address); the object at
/// that address replaced by a fresh, unlocked one, the forgetful thread's `wait` there is
/// `IllegalMonitorState` — it holds nothing there — not a debug-build assertion failure or a
/// lock taken without locking.
fn forgotten_fast_lock_then_replaced<P: Protocol<Header = MarkWord>>() {
    let rt = runtime::<P>(DeflationPolicy::default());
    let mut slot = Box::new(MarkWord::default());
    let me = rt.attach().unwrap();
    std::mem::forget(me.enter(&slot).unwrap());
    *slot = MarkWord::default();
    assert_eq!(
        me.wait(&slot, Some(Duration::ZERO)),
        Err(objmon::MonitorError::IllegalMonitorState)
    );
    assert_eq!(me.lock_count(&slot), 0);
    exercise(&rt, &slot);
}

#[test]
fn forgotten_fast_lock_is_not_the_next_objects() {
    each_lightweight!(forgotten_fast_lock_then_replaced);
}

/// Found by objmon-fuzz on `lightweight` (a query "did not return in 5 s", under load): an
/// owner query of an object whose owner detached with a forgotten guard rescans the threads
/// for an owner it cannot see, a `yield` per round, and gave up after 16,384 rounds only. With
/// more runnable threads than cores a `yield` costs a scheduler slice, so the query took
/// seconds. Here four threads spin beside it on the 2 cores: it must answer within 2 s (the
/// rounds are bounded in time too, 100 ms). `stack`, which rescans the same way, is in
/// soundness_stack.rs.
fn owner_query_of_an_exited_owners_lock_returns_under_load<P: Protocol<Header = MarkWord>>() {
    let rt = runtime::<P>(DeflationPolicy::default());
    let h = MarkWord::default();
    thread::scope(|s| {
        s.spawn(|| {
            let me = rt.attach().unwrap();
            std::mem::forget(me.enter(&h).unwrap());
        });
    });
    let (owner, took) = watchdog::beside_spinners(4, || {
        let t0 = std::time::Instant::now();
        (rt.owner_of(&h), t0.elapsed())
    });
    assert_eq!(owner, None, "{}", P::NAME);
    assert!(
        took < Duration::from_secs(2),
        "{}: owner_of took {took:?}",
        P::NAME
    );
}

#[test]
fn owner_query_of_an_exited_owners_lock_returns_under_load_all() {
    within(
        60,
        "lightweight",
        owner_query_of_an_exited_owners_lock_returns_under_load::<Lightweight>,
    );
    within(
        60,
        "lightweight-seed",
        owner_query_of_an_exited_owners_lock_returns_under_load::<LightweightSeed>,
    );
    within(
        60,
        "lightweight-table",
        owner_query_of_an_exited_owners_lock_returns_under_load::<LightweightTable>,
    );
}
