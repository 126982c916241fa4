//! Loom models of the races of seed 001's two protocols and of deflation: contention
//! inflation (the anonymous owner of `lightweight`, the INFLATING marker of `stack`), deflation
//! against an enter and against a notified waiter, the owner query against an owner that
//! reshuffles its lock stack, and the side table of `lightweight-table` when safe Rust moved
//! or dropped a header under its idle monitor (a stale entry against two inflations, an
//! orphaned monitor state against enter, try-enter and deflation),
//! and a second fast-locking runtime made while the first one's thread contends.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p objmon --release
//! --test loom_hotspot`.
#![cfg(loom)]

mod common;

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use objmon::vm::{
    Config, DeflationPolicy, Lightweight, LightweightSeed, LightweightTable, MarkWord, Protocol,
    Runtime, Stack, WaitOutcome,
};
use std::time::Duration;

fn model(f: impl Fn() + Sync + Send + 'static) {
    common::builder(3).check(f);
}

fn config(deflation: DeflationPolicy) -> Config {
    Config {
        deflation,
        ..common::config(3)
    }
}

const EAGER: DeflationPolicy = DeflationPolicy::AtExit { keep: 0 };

/// Two threads lock one object: the second finds it fast- / stack-locked and inflates it
/// (anonymous owner, or INFLATING), the first hands it over at exit. Mutual exclusion, and
/// the monitor is deflated once both are done.
fn contention<P: Protocol>()
where
    P::Header: 'static,
{
    model(|| {
        let rt = common::hosted::<P>(config(EAGER));
        let obj = Arc::new(P::Header::default());
        let inside = Arc::new(AtomicBool::new(false));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let (rt, obj, inside) = (rt.clone(), obj.clone(), inside.clone());
                thread::spawn(move || {
                    let me = rt.attach().unwrap();
                    let g = me.enter(&obj).unwrap();
                    assert!(!inside.swap(true, Ordering::Relaxed), "mutual exclusion");
                    assert_eq!(me.lock_count(&obj), 1);
                    inside.store(false, Ordering::Relaxed);
                    drop(g);
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(rt.owner_of(&obj), None);
        let s = rt.stats_snapshot();
        assert_eq!(s.live_monitors, 0, "deflated after contention: {s:?}");
        assert_eq!(s.inflations(), s.deflations);
    });
}

#[test]
fn lightweight_contention_anonymous_owner() {
    contention::<Lightweight>();
}

#[test]
fn lightweight_table_contention() {
    contention::<LightweightTable>();
}

/// Two contenders inflate the same fast-lock at once through the side table: only one may
/// publish its entry (an overwritten entry under a successful CAS leaves a `10` header with no
/// monitor, and everybody spins forever).
#[test]
fn lightweight_table_two_contenders() {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(1);
    b.check(|| {
        let rt = common::hosted::<LightweightTable>(config(EAGER));
        let obj = Arc::new(MarkWord::default());
        let me = rt.attach().unwrap();
        let g = me.enter(&obj).unwrap();
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let (rt, obj) = (rt.clone(), obj.clone());
                thread::spawn(move || {
                    let me = rt.attach().unwrap();
                    drop(me.enter(&obj).unwrap());
                })
            })
            .collect();
        drop(g);
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(rt.owner_of(&obj), None);
        assert_eq!(rt.stats_snapshot().live_monitors, 0);
        assert!(rt.state().is_empty());
    });
}

/// A second fast-locking runtime made while the first one's thread contends (the count of
/// live runtimes that lets a contender skip the lock-stack scan, `only_runtime`): B's thread
/// fast-locks the object right after B is made; A's thread, meeting that fast-lock, must see
/// B counted and wait for it, never inflate it (A's anonymous monitor would make B's exit fail
/// and leave A blocked on a monitor nobody claims). Nobody inflates in this model: A's thread
/// is its runtime's only one, so its contended enter never meets a fast-lock of its own.
/// (Under loom each runtime has its own index space and id pool, so an index decoded in the
/// wrong table is not caught here; none is written.)
#[test]
fn lightweight_second_runtime_vs_contender() {
    model(|| {
        let ra = common::hosted::<Lightweight>(config(EAGER));
        let obj = Arc::new(MarkWord::default());
        let t = {
            let obj = obj.clone();
            thread::spawn(move || {
                let rb = common::hosted::<Lightweight>(config(EAGER));
                let b = rb.attach().unwrap();
                b.monitor_enter(&obj).unwrap();
                assert_eq!(b.monitor_exit(&obj), Ok(()), "B's own release");
                drop(b);
                assert_eq!(rb.stats_snapshot().inflations(), 0);
            })
        };
        let a = ra.attach().unwrap();
        a.monitor_enter(&obj).unwrap();
        assert_eq!(a.monitor_exit(&obj), Ok(()), "A's own release");
        drop(a);
        t.join().unwrap();
        assert_eq!(
            ra.stats_snapshot().inflations(),
            0,
            "A inflated B's fast-lock"
        );
    });
}

#[test]
fn stack_contention_inflating_marker() {
    contention::<Stack>();
}

/// The owner holds the object recursively (two lock-stack entries / a base and a recursive
/// record) while a contender inflates: the count survives the anonymous hand-over.
fn contention_recursive<P: Protocol>()
where
    P::Header: 'static,
{
    model(|| {
        let rt = common::hosted::<P>(config(EAGER));
        let obj = Arc::new(P::Header::default());
        let me = rt.attach().unwrap();
        let g1 = me.enter(&obj).unwrap();
        let g2 = me.enter(&obj).unwrap();
        let (rt2, obj2) = (rt.clone(), obj.clone());
        let other = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            let g = me.enter(&obj2).unwrap();
            assert_eq!(me.lock_count(&obj2), 1);
            drop(g);
        });
        assert_eq!(me.lock_count(&obj), 2);
        drop(g2);
        assert_eq!(me.lock_count(&obj), 1);
        assert_eq!(rt.owner_of(&obj), Some(me.id()));
        drop(g1);
        other.join().unwrap();
        assert_eq!(rt.owner_of(&obj), None);
    });
}

#[test]
fn lightweight_recursive_owner_vs_contender() {
    contention_recursive::<Lightweight>();
}

/// The seed's variant inflates on the recursive enter, racing with the contender's anonymous
/// inflation: whichever CAS wins, the owner ends up owning the monitor with both levels.
#[test]
fn lightweight_seed_recursive_owner_vs_contender() {
    contention_recursive::<LightweightSeed>();
}

#[test]
fn stack_recursive_owner_vs_contender() {
    contention_recursive::<Stack>();
}

/// An idle installed monitor: one thread deflates it on request while another enters. The
/// enterer owns the object exactly (owner query, count), and the books balance.
fn deflate_vs_enter<P: Protocol>(deflate_idle: fn(&Runtime<P>, &P::Header) -> bool)
where
    P::Header: 'static,
{
    model(move || {
        let rt = common::hosted::<P>(config(DeflationPolicy::OnRequest));
        let obj = Arc::new(P::Header::default());
        {
            // Inflate (wait needs a monitor) and leave the monitor installed and idle.
            let me = rt.attach().unwrap();
            let g = me.enter(&obj).unwrap();
            assert_eq!(g.wait(Some(Duration::ZERO)).unwrap(), WaitOutcome::TimedOut);
        }
        assert_eq!(rt.stats_snapshot().live_monitors, 1);
        let (rt2, obj2) = (rt.clone(), obj.clone());
        let enterer = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            let g = me.enter(&obj2).unwrap();
            assert_eq!(rt2.owner_of(&obj2), Some(me.id()));
            assert_eq!(me.lock_count(&obj2), 1);
            drop(g);
        });
        let deflated = deflate_idle(&rt, &obj);
        enterer.join().unwrap();
        let s = rt.stats_snapshot();
        assert_eq!(s.deflations, u64::from(deflated));
        assert_eq!(s.live_monitors, usize::from(!deflated));
        assert_eq!(rt.owner_of(&obj), None);
        // The object still works.
        drop(rt.attach().unwrap().enter(&obj).unwrap());
    });
}

#[test]
fn lightweight_deflate_vs_enter() {
    deflate_vs_enter::<Lightweight>(Lightweight::deflate_idle);
}

#[test]
fn lightweight_table_deflate_vs_enter() {
    deflate_vs_enter::<LightweightTable>(LightweightTable::deflate_idle);
}

#[test]
fn stack_deflate_vs_enter() {
    deflate_vs_enter::<Stack>(Stack::deflate_idle);
}

/// A notified waiter is out of the wait set but not yet back in the monitor when the notifier
/// exits and (eager policy) tries to deflate: the monitor must stay, so that the waiter comes
/// back owning the object's monitor. (A timed wait, so that the model needs no spin loop: if
/// the notifier comes first, the waiter times out.)
#[test]
fn deflation_spares_notified_waiter() {
    model(|| {
        let rt = common::hosted::<Lightweight>(config(EAGER));
        let obj = Arc::new(MarkWord::default());
        let waiting = Arc::new(AtomicBool::new(false));
        let (rt2, obj2, waiting2) = (rt.clone(), obj.clone(), waiting.clone());
        let waiter = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            let g = me.enter(&obj2).unwrap();
            waiting2.store(true, Ordering::Relaxed);
            let r = g.wait(Some(Duration::from_secs(1))).unwrap();
            assert_eq!(me.lock_count(&obj2), 1, "back in the monitor");
            assert_eq!(rt2.owner_of(&obj2), Some(me.id()));
            assert_eq!(obj2.raw() & 0b11, 0b10, "still inflated while owned");
            r
        });
        let me = rt.attach().unwrap();
        let g = me.enter(&obj).unwrap();
        // `waiting` is written under the monitor, so reading it under the monitor is exact.
        let notified = waiting.load(Ordering::Relaxed);
        if notified {
            g.notify().unwrap();
        }
        drop(g);
        let r = waiter.join().unwrap();
        assert!(r == WaitOutcome::TimedOut || notified);
        assert_eq!(rt.stats_snapshot().live_monitors, 0);
    });
}

/// The owner query while the owner locks and unlocks other objects out of order (its lock
/// stack shifts under the scan) and recursively: an object held throughout is reported as held
/// by its owner every time.
#[test]
fn lightweight_owner_query_vs_reshuffle() {
    model(|| {
        let rt = common::hosted::<Lightweight>(config(EAGER));
        let (a, b) = (Arc::new(MarkWord::default()), Arc::new(MarkWord::default()));
        let me = rt.attach().unwrap();
        me.monitor_enter(&a).unwrap();
        me.monitor_enter(&b).unwrap();
        let seen = Arc::new(AtomicUsize::new(0));
        let (rt2, b2, seen2) = (rt.clone(), b.clone(), seen.clone());
        let id = me.id();
        let q = thread::spawn(move || {
            assert_eq!(rt2.owner_of(&b2), Some(id));
            seen2.fetch_add(1, Ordering::Relaxed);
        });
        // Exit A while B is above it: B's entry moves down one slot.
        me.monitor_exit(&a).unwrap();
        me.monitor_enter(&b).unwrap();
        me.monitor_exit(&b).unwrap();
        q.join().unwrap();
        assert_eq!(seen.load(Ordering::Relaxed), 1);
        me.monitor_exit(&b).unwrap();
        assert_eq!(rt.owner_of(&b), None);
    });
}

/// A runtime that deflates on request only, and two objects: `a` with an idle monitor
/// installed (inflated for `wait`, which needs one), `b` never locked.
#[allow(clippy::type_complexity)]
fn idle_monitor_on_a<P: Protocol>() -> (std::sync::Arc<Runtime<P>>, Arc<P::Header>, Arc<P::Header>)
where
    P::Header: 'static,
{
    let rt = common::hosted::<P>(config(DeflationPolicy::OnRequest));
    let (a, b) = (
        Arc::new(P::Header::default()),
        Arc::new(P::Header::default()),
    );
    {
        let me = rt.attach().unwrap();
        let g = me.enter(&a).unwrap();
        assert_eq!(g.wait(Some(Duration::ZERO)).unwrap(), WaitOutcome::TimedOut);
    }
    (rt, a, b)
}

/// Bug (stress: `stack` "wait: IllegalMonitorState", `lightweight-seed` "enter:
/// IllegalMonitorState"): a deflater whose index went stale took the system lock of the
/// monitor that another inflation had just allocated (the same index: the free list is last in,
/// first out), so that inflation's `enter_inflated_for` failed. Both threads deflate `a` on
/// request; the second then inflates `b` (wait needs a monitor), which gets `a`'s old monitor
/// when it was freed. Every operation must succeed, and `a` is deflated exactly once.
fn stale_deflater_vs_reallocation<P: Protocol>(deflate_idle: fn(&Runtime<P>, &P::Header) -> bool)
where
    P::Header: 'static,
{
    model(move || {
        let (rt, a, b) = idle_monitor_on_a::<P>();
        let (rt2, a2) = (rt.clone(), a.clone());
        let deflater = thread::spawn(move || deflate_idle(&rt2, &a2));
        let mine = deflate_idle(&rt, &a);
        {
            let me = rt.attach().unwrap();
            let g = me.enter(&b).unwrap();
            assert_eq!(g.wait(Some(Duration::ZERO)).unwrap(), WaitOutcome::TimedOut);
        }
        let theirs = deflater.join().unwrap();
        // Two deflaters announced at once refuse each other, but the last to leave retries.
        assert!(mine != theirs, "`a` deflated exactly once");
        let s = rt.stats_snapshot();
        assert_eq!(
            (s.deflations, s.live_monitors),
            (1, 1),
            "`b`'s monitor stays"
        );
        assert_eq!(rt.owner_of(&a), None);
        assert_eq!(rt.owner_of(&b), None);
    });
}

#[test]
fn stack_stale_deflater_vs_reallocation() {
    stale_deflater_vs_reallocation::<Stack>(Stack::deflate_idle);
}

#[test]
fn lightweight_seed_stale_deflater_vs_reallocation() {
    stale_deflater_vs_reallocation::<LightweightSeed>(LightweightSeed::deflate_idle);
}

/// An enterer's first try takes the monitor's system lock before it has
/// announced itself, so its index may be stale when it does. One thread enters `a`, whose
/// idle monitor is installed, while another deflates `a` on request and then inflates `b`
/// (wait needs a monitor), which gets `a`'s old monitor back (the free list is last in, first
/// out). The enterer may hold `b`'s fresh monitor's lock for its header check: the inflation
/// must wait for it rather than fail, the enterer must not take `b`'s monitor for `a`'s, and
/// the books balance.
fn stale_first_try_vs_reallocation<P: Protocol>(deflate_idle: fn(&Runtime<P>, &P::Header) -> bool)
where
    P::Header: 'static,
{
    model(move || {
        let (rt, a, b) = idle_monitor_on_a::<P>();
        let (rt2, a2) = (rt.clone(), a.clone());
        let enterer = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            let g = me.enter(&a2).unwrap();
            assert_eq!(rt2.owner_of(&a2), Some(me.id()));
            assert_eq!(me.lock_count(&a2), 1);
            drop(g);
        });
        let deflated = deflate_idle(&rt, &a);
        {
            let me = rt.attach().unwrap();
            let g = me.enter(&b).unwrap();
            assert_eq!(g.wait(Some(Duration::ZERO)).unwrap(), WaitOutcome::TimedOut);
            assert_eq!(rt.owner_of(&b), Some(me.id()));
        }
        enterer.join().unwrap();
        let s = rt.stats_snapshot();
        assert_eq!(s.deflations, u64::from(deflated));
        assert_eq!(rt.owner_of(&a), None);
        assert_eq!(rt.owner_of(&b), None);
        // Both objects still work.
        let me = rt.attach().unwrap();
        drop(me.enter(&a).unwrap());
        drop(me.enter(&b).unwrap());
    });
}

#[test]
fn stack_stale_first_try_vs_reallocation() {
    stale_first_try_vs_reallocation::<Stack>(Stack::deflate_idle);
}

#[test]
fn lightweight_stale_first_try_vs_reallocation() {
    stale_first_try_vs_reallocation::<Lightweight>(Lightweight::deflate_idle);
}

/// Regression: an object dropped without `reclaim` leaves its table entry behind,
/// and a new object lives at the same address. Its owner inflates it for wait while a contender
/// inflates it too: whichever installs first replaces the stale entry (and gives its idle
/// monitor back); nobody waits for the stale entry to go (it spun forever), mutual exclusion
/// holds, and the books balance.
#[test]
fn lightweight_table_stale_entry_vs_inflations() {
    model(|| {
        let rt = common::hosted::<LightweightTable>(config(DeflationPolicy::OnRequest));
        let mut slot = std::sync::Arc::new(MarkWord::default());
        {
            let me = rt.attach().unwrap();
            let g = me.enter(&slot).unwrap();
            assert_eq!(g.wait(Some(Duration::ZERO)).unwrap(), WaitOutcome::TimedOut);
        }
        // Dropped without `reclaim`; the new object is at the same address.
        *std::sync::Arc::get_mut(&mut slot).unwrap() = MarkWord::default();
        assert_eq!(rt.state().len(), 1, "the stale entry");
        let inside = Arc::new(AtomicBool::new(false));
        let (rt2, obj2, inside2) = (rt.clone(), slot.clone(), inside.clone());
        let contender = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            let g = me.enter(&obj2).unwrap();
            assert!(!inside2.swap(true, Ordering::Relaxed), "mutual exclusion");
            inside2.store(false, Ordering::Relaxed);
            drop(g);
        });
        let me = rt.attach().unwrap();
        let g = me.enter(&slot).unwrap();
        assert!(!inside.swap(true, Ordering::Relaxed), "mutual exclusion");
        inside.store(false, Ordering::Relaxed);
        assert_eq!(g.wait(Some(Duration::ZERO)).unwrap(), WaitOutcome::TimedOut);
        assert_eq!(me.lock_count(&slot), 1);
        drop(g);
        contender.join().unwrap();
        assert_eq!(rt.owner_of(&slot), None);
        // One entry, the new object's; the stale monitor was given back.
        assert_eq!(rt.state().len(), 1);
        assert_eq!(rt.stats_snapshot().live_monitors, 1);
        assert!(LightweightTable::deflate_idle(&rt, &slot));
        assert!(rt.state().is_empty());
    });
}

/// Regression: a header moved away from its installed idle monitor says "monitor"
/// at an address with no entry (an orphan). Two threads enter it at once (one of them only
/// tries) while a third asks for a deflation: the orphan is deflated in place by whoever looks
/// first, nobody waits for an entry (`enter` and `try_enter` spun forever), mutual exclusion
/// holds.
#[test]
fn lightweight_table_orphan_vs_enter() {
    model(|| {
        let rt = common::hosted::<LightweightTable>(config(DeflationPolicy::OnRequest));
        let mut slot = std::sync::Arc::new(MarkWord::default());
        {
            let me = rt.attach().unwrap();
            let g = me.enter(&slot).unwrap();
            assert_eq!(g.wait(Some(Duration::ZERO)).unwrap(), WaitOutcome::TimedOut);
        }
        let moved = std::mem::take(std::sync::Arc::get_mut(&mut slot).unwrap());
        assert_eq!(moved.raw() & 0b11, 0b10, "an orphan monitor state");
        let moved = std::sync::Arc::new(moved);
        let inside = Arc::new(AtomicBool::new(false));
        let (rt2, obj2, inside2) = (rt.clone(), moved.clone(), inside.clone());
        let trier = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            if let Some(g) = me.try_enter(&obj2).unwrap() {
                assert!(!inside2.swap(true, Ordering::Relaxed), "mutual exclusion");
                inside2.store(false, Ordering::Relaxed);
                drop(g);
            };
        });
        let (rt3, obj3) = (rt.clone(), moved.clone());
        let deflater = thread::spawn(move || LightweightTable::deflate_idle(&rt3, &obj3));
        let me = rt.attach().unwrap();
        let g = me.enter(&moved).unwrap();
        assert!(!inside.swap(true, Ordering::Relaxed), "mutual exclusion");
        inside.store(false, Ordering::Relaxed);
        drop(g);
        trier.join().unwrap();
        let deflated = deflater.join().unwrap();
        assert_eq!(rt.owner_of(&moved), None);
        assert_ne!(moved.raw() & 0b11, 0b01, "not fast-locked");
        // Entries: the old address's idle monitor (until a new object there inflates) and a
        // contention monitor of `moved` unless the deflater gave it back.
        let s = rt.stats_snapshot();
        assert_eq!(rt.state().len(), s.live_monitors);
        assert_eq!(s.deflations, u64::from(deflated));
    });
}
