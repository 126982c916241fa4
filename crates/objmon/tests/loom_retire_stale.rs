//! Loom models of `lightweight-table`'s `retire_stale` (`protocol/lightweight.rs`): the
//! inflation that replaces a stale side-table entry (an object dropped without `reclaim`, a
//! new one at its address) gives the stale entry's monitor back if it can claim it idle. No
//! header names that monitor any more, but a thread that read its index earlier (from the
//! header of the object the monitor served before it was deflated and reused) may still hold
//! it for a moment: a first try of its system lock (`deflate.rs`, "A stale first try"), or an
//! announcement (`FatMonitor::add_contention`) of an owner query, an enterer whose first try
//! failed, or a deflater, each about to find that its header no longer names the monitor and
//! leave. Such a hold is transient; only an owner that will never exit (a forgotten guard)
//! may keep the monitor allocated for good.
//!
//! The schedule: `t` reads `a`'s monitor index (an owner query, an enter, or a deflation of
//! `a`); the main thread deflates `a` (the monitor is freed), inflates `b` (which gets that
//! monitor back: the free list is last in, first out), drops `b` without `reclaim` (a new
//! object at `b`'s address; the entry stays, stale) and inflates the new object, which
//! replaces the stale entry and retires its monitor — while `t` holds it.
//!
//! The owner-query and deflater models failed before the retirement waited out stale
//! announcements (`retire_stale` gave up on `PinnedClaim::Contended`, and the monitor stayed
//! allocated with no header naming it); the enterer model passed already (its first try is
//! waited out by the claim, and a failed first try's announcement needs more preemptions).
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p objmon --release
//! --test loom_retire_stale` (also with debug assertions, as `.ci/run` does: the table's
//! `free` asserts the monitor idle).
#![cfg(loom)]

mod common;

use loom::thread;
use objmon::vm::{Config, DeflationPolicy, LightweightTable, MarkWord, Runtime, WaitOutcome};
use std::sync::Arc;
use std::time::Duration;

fn config() -> Config {
    Config {
        deflation: DeflationPolicy::OnRequest,
        ..common::config(4)
    }
}

/// Whether a header word is in the monitor state (lock bits `10`).
fn inflated(raw: u64) -> bool {
    raw & 0b11 == 0b10
}

/// Inflates `h` (a zero wait) by a thread attached for it, and leaves it idle.
fn inflate(rt: &Arc<Runtime<LightweightTable>>, h: &MarkWord) {
    let me = rt.attach().unwrap();
    let g = me.enter(h).unwrap();
    assert_eq!(g.wait(Some(Duration::ZERO)).unwrap(), WaitOutcome::TimedOut);
}

/// The schedule of the module documentation, with `t` running `other` on `a`. Afterwards no
/// monitor is left that no header names: `a`'s, if `a` is still inflated, and no other
/// (`b`'s current one is reclaimed before the count).
fn stale_monitor_held_at_retirement(
    other: fn(&Arc<Runtime<LightweightTable>>, &MarkWord),
    bound: usize,
) {
    common::builder(bound).check(move || {
        let rt = common::hosted::<LightweightTable>(config());
        let a = Arc::new(MarkWord::default());
        let mut b = Box::new(MarkWord::default());
        inflate(&rt, &a);
        let (rt2, a2) = (rt.clone(), a.clone());
        let t = thread::spawn(move || other(&rt2, &a2));
        LightweightTable::deflate_idle(&rt, &a);
        inflate(&rt, &b);
        // Dropped without `reclaim`: its entry stays (stale); a new object at the address.
        *b = MarkWord::default();
        // Its inflation replaces the stale entry and retires that monitor.
        inflate(&rt, &b);
        t.join().unwrap();
        rt.reclaim(&mut b);
        let s = rt.stats_snapshot();
        assert_eq!(
            s.live_monitors,
            usize::from(inflated(a.raw())),
            "a monitor no header names stays allocated: {s:?}"
        );
        assert_eq!(rt.state().len(), s.live_monitors);
    });
}

/// The owner query's pin (`deflate::monitor_owner`) on the stale monitor at its retirement.
#[test]
fn owner_query_pin_vs_retire_stale() {
    stale_monitor_held_at_retirement(
        |rt, a| assert_eq!(rt.owner_of(a), None, "nobody holds `a`"),
        3,
    );
}

/// A deflater's pin (`deflate::try_deflate`, step 0) on the stale monitor at its retirement.
#[test]
fn deflater_pin_vs_retire_stale() {
    stale_monitor_held_at_retirement(
        |rt, a| {
            LightweightTable::deflate_idle(rt, a);
        },
        3,
    );
}

/// An enterer's first try (the system lock, held with no owner) or its announcement on the
/// stale monitor at its retirement; the enter itself then goes on with `a`'s header.
#[test]
fn enterer_vs_retire_stale() {
    stale_monitor_held_at_retirement(
        |rt, a| {
            let me = rt.attach().unwrap();
            let g = me.enter(a).unwrap();
            assert_eq!(me.lock_count(a), 1);
            drop(g);
        },
        3,
    );
}
