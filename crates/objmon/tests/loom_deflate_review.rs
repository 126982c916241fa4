//! Loom models from the review of "the system lock first" (commit 5a40ef0, `deflate.rs`): an
//! enterer's unannounced first try of a monitor's system lock, owners no longer announced, the
//! exit's deflation attempt after the unlock's SeqCst fence, and a deflater's retry when it
//! finds the monitor owned and leaves last.
//!
//! Two kinds of model here:
//! - models that cover schedules `tests/loom_hotspot.rs` does not: an owner's eager exit
//!   against a deflater's `Busy` retry and a first-try enterer at once;
//! - regression models of the holes the review found, each failing on the commit it names
//!   and passing since f471dea (`deflate.rs`, `monitor.rs`): a stale first try that holds a
//!   monitor's lock when `reclaim` looks (a leak), an announcement that is not an enterer's,
//!   a waiter's or a deflater's (an owner query, a failed `try_enter`) absorbing the last
//!   owner's deflation (an idle monitor left behind), and (with debug assertions only)
//!   `MonitorTable::free`'s idleness assertion tripping on a first try's lock (`.ci/run`
//!   runs this file with debug assertions too).
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p objmon --release
//! --test loom_deflate_review`.
#![cfg(loom)]

mod common;

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use objmon::vm::{
    Config, DeflationPolicy, Lightweight, MarkWord, Protocol, Runtime, Stack, ThreadId, WaitOutcome,
};
use std::time::Duration;

fn model(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = common::builder(bound);
    if let Some(n) = std::env::var("LOOM_MAX_BRANCHES")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        b.max_branches = n;
    }
    b.check(f);
}

fn config(deflation: DeflationPolicy) -> Config {
    Config {
        deflation,
        ..common::config(3)
    }
}

const EAGER: DeflationPolicy = DeflationPolicy::AtExit { keep: 0 };

/// Whether `h`'s header word is in the monitor state (lock bits `10` in both header kinds).
fn inflated(raw: u64) -> bool {
    raw & 0b11 == 0b10
}

/// The owner's last exit (eager policy) against a deflater on request and a first-try enterer,
/// all at once. The owner holds the object inflated (after a zero wait); then it exits while
/// one thread asks for a deflation and another enters. The exiting owner reads the deflater's
/// pin and leaves the attempt to it; the deflater finds the monitor owned (by the owner, or by
/// the enterer's first try) and retries only if its announcement was the last and the owner
/// field reads empty after its SeqCst fence ("The last one out"). Whatever the schedule:
/// mutual exclusion, and no monitor is left once all three are done.
fn eager_exit_vs_deflater_vs_enterer<P: Protocol>(
    deflate_idle: fn(&Runtime<P>, &P::Header) -> bool,
    raw: fn(&P::Header) -> u64,
) where
    P::Header: 'static,
{
    // Two preemptions (1.5 s for both protocols). At three (`LOOM_MAX_PREEMPTIONS=3`) the
    // code before 5a40ef0 fails the "last one out" assertion (its deflater gave up on `Busy`
    // and the owner's exit read the deflater's pin as company), while the current code makes
    // loom stop with "Model exceeded maximum number of branches" (default 1,000) within 6 s,
    // for both protocols (`LOOM_MAX_BRANCHES=5000`: the same after 80 s), and also with a
    // `yield_now` added to `try_deflate`'s retry; whether
    // that is a livelock or only a long execution through the yield loops (the claim's and the
    // inflation's waits for a lock held with no owner) is not settled here.
    model(2, move || {
        let rt = common::hosted::<P>(config(EAGER));
        let obj = Arc::new(P::Header::default());
        let inside = Arc::new(AtomicBool::new(false));
        let me = rt.attach().unwrap();
        let g = me.enter(&obj).unwrap();
        assert_eq!(g.wait(Some(Duration::ZERO)).unwrap(), WaitOutcome::TimedOut);
        assert!(inflated(raw(&obj)), "wait inflates");
        let (rt2, obj2) = (rt.clone(), obj.clone());
        let deflater = thread::spawn(move || deflate_idle(&rt2, &obj2));
        let (rt3, obj3, inside3) = (rt.clone(), obj.clone(), inside.clone());
        let enterer = thread::spawn(move || {
            let me = rt3.attach().unwrap();
            let g = me.enter(&obj3).unwrap();
            assert!(!inside3.swap(true, Ordering::Relaxed), "mutual exclusion");
            assert_eq!(me.lock_count(&obj3), 1);
            inside3.store(false, Ordering::Relaxed);
            drop(g);
        });
        assert!(!inside.swap(true, Ordering::Relaxed), "mutual exclusion");
        inside.store(false, Ordering::Relaxed);
        drop(g);
        deflater.join().unwrap();
        enterer.join().unwrap();
        assert_eq!(rt.owner_of(&obj), None);
        let s = rt.stats_snapshot();
        assert_eq!(s.live_monitors, 0, "the last one out deflates: {s:?}");
        assert_eq!(s.inflations(), s.deflations);
        assert!(!inflated(raw(&obj)));
    });
}

#[test]
fn lightweight_eager_exit_vs_deflater_vs_enterer() {
    eager_exit_vs_deflater_vs_enterer::<Lightweight>(Lightweight::deflate_idle, MarkWord::raw);
}

#[test]
fn stack_eager_exit_vs_deflater_vs_enterer() {
    eager_exit_vs_deflater_vs_enterer::<Stack>(Stack::deflate_idle, |h| h.raw());
}

/// Failed before f471dea (a leak; new with the system lock first). `reclaim` (the GC's "this object is dead",
/// `&mut` header) frees the header's monitor only if `FatMonitor::is_idle`, which asks that
/// the system lock be free. Before 5a40ef0 nobody took the lock of a monitor it had not pinned
/// to its object, so with `&mut` the lock was free unless a forgotten guard owned it. Now a
/// stale first try may hold it: here `t` reads `a`'s monitor index, the main thread deflates
/// `a` (the monitor is freed), inflates `b` (which gets that monitor back: the free list is
/// last in, first out) and reclaims `b` while `t` holds the monitor's lock for its header
/// check. `is_idle` says no, nothing frees the monitor, and no header names it any more: it
/// stays allocated for good (`live_monitors` 1 with no object inflated).
///
/// The same window makes `MonitorTable::free`'s `debug_assert!(is_idle(), "freeing a busy
/// monitor")` fire in debug builds after a successful deflation (`try_deflate` unlocks in
/// `finish_deflation`, then frees: a first try of the object that read the index before the
/// header was restored can take the lock in between), and after `abandon_fresh` + `free` of a
/// lost inflation; `tests/loom_hotspot.rs`'s `*_deflate_vs_enter` reach it when run with
/// debug assertions (the loom command builds `--release`, so nothing catches it).
///
/// The fix (f471dea): a lock held with the owner field empty, no suspended thread and an empty wait set is
/// no ownership (`soundness.md`, `lightweight*`), so `reclaim` / `free_if_bound` and the
/// debug assertion in `free` should use a predicate that ignores the lock word (owner 0, no
/// `wcount`, empty wait set): the next `enter_inflated_for` waits such a holder out already.
fn stale_first_try_vs_reclaim<P: Protocol>(
    deflate_idle: fn(&Runtime<P>, &P::Header) -> bool,
    raw: fn(&P::Header) -> u64,
) where
    P::Header: 'static,
{
    // Four preemptions: `t` is preempted after reading the index, before its `try_lock`, and
    // before its header check; three miss the schedule.
    model(4, move || {
        let rt = common::hosted::<P>(config(DeflationPolicy::OnRequest));
        let a = Arc::new(P::Header::default());
        let mut b = P::Header::default();
        {
            let me = rt.attach().unwrap();
            let g = me.enter(&a).unwrap();
            assert_eq!(g.wait(Some(Duration::ZERO)).unwrap(), WaitOutcome::TimedOut);
        }
        let (rt2, a2) = (rt.clone(), a.clone());
        let t = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            drop(me.enter(&a2).unwrap());
        });
        deflate_idle(&rt, &a);
        {
            let me = rt.attach().unwrap();
            let g = me.enter(&b).unwrap();
            assert_eq!(g.wait(Some(Duration::ZERO)).unwrap(), WaitOutcome::TimedOut);
        }
        rt.reclaim(&mut b);
        t.join().unwrap();
        let s = rt.stats_snapshot();
        assert_eq!(
            s.live_monitors,
            usize::from(inflated(raw(&a))),
            "a monitor no header names stays allocated: {s:?}"
        );
    });
}

#[test]
fn lightweight_stale_first_try_vs_reclaim() {
    stale_first_try_vs_reclaim::<Lightweight>(Lightweight::deflate_idle, MarkWord::raw);
}

#[test]
fn stack_stale_first_try_vs_reclaim() {
    stale_first_try_vs_reclaim::<Stack>(Stack::deflate_idle, |h| h.raw());
}

/// Failed before f471dea (an idle monitor left behind by the eager policy; older than
/// 5a40ef0, which kept it). "The last one out" counts on every announced thread being an
/// enterer or a waiter (which will own the monitor and exit after the owner) or a deflater
/// (which retries when it leaves last). An owner query (`deflate::monitor_owner`) announces itself too, to pin the
/// monitor while it reads the owner field, and ends with a plain `remove_contention`: if the
/// owner's last exit reads its announcement, the owner leaves the deflation to a thread that
/// never tries. Here the owner holds the object inflated (after a zero wait) and exits while
/// another thread asks who owns it: the monitor stays installed and idle.
///
/// The fix (f471dea): whoever ends an announcement without owning the monitor, while the
/// header still names it, does what `try_deflate`'s `Busy` arm does
/// (`FatMonitor::remove_contention_leaves_it_unowned`, then `after_release`: a deflation
/// attempt under the eager policy): `monitor_owner`, and `enter_monitor`'s `try_enter` that
/// found the monitor busy (next model). Not a stale announcement (the header check failed:
/// the monitor is another object's now), which cannot deflate that object; `retire_stale`
/// (`lightweight-table`) waits such an announcement out instead (`tests/loom_retire_stale.rs`).
#[test]
fn lightweight_owner_query_vs_last_exit() {
    vs_last_exit::<Lightweight>(MarkWord::raw, owner_query);
}

#[test]
fn stack_owner_query_vs_last_exit() {
    vs_last_exit::<Stack>(|h| h.raw(), owner_query);
}

/// Failed before f471dea (as the previous model; older than 5a40ef0). A `try_enter` whose
/// first try fails announces itself, finds the monitor still held and left with a plain
/// `remove_contention`; the owner's last exit in between read the announcement and left the
/// deflation to it. The fix: as above.
#[test]
fn lightweight_try_enter_vs_last_exit() {
    vs_last_exit::<Lightweight>(MarkWord::raw, try_enter);
}

#[test]
fn stack_try_enter_vs_last_exit() {
    vs_last_exit::<Stack>(|h| h.raw(), try_enter);
}

/// The owner holds the object inflated (after a zero wait) and exits while another thread
/// runs `other` on it (given the owner's id): once both are done, the eager policy has given
/// the monitor back.
fn vs_last_exit<P: Protocol>(
    raw: fn(&P::Header) -> u64,
    other: fn(&std::sync::Arc<Runtime<P>>, &P::Header, ThreadId),
) where
    P::Header: 'static,
{
    model(3, move || {
        let rt = common::hosted::<P>(config(EAGER));
        let obj = Arc::new(P::Header::default());
        let me = rt.attach().unwrap();
        let g = me.enter(&obj).unwrap();
        assert_eq!(g.wait(Some(Duration::ZERO)).unwrap(), WaitOutcome::TimedOut);
        let (rt2, obj2) = (rt.clone(), obj.clone());
        let id = me.id();
        let t = thread::spawn(move || other(&rt2, &obj2, id));
        drop(g);
        t.join().unwrap();
        let s = rt.stats_snapshot();
        assert_eq!(s.live_monitors, 0, "idle monitor left behind: {s:?}");
        assert!(!inflated(raw(&obj)));
    });
}

/// Asks who owns `h`: nobody or `owner`.
fn owner_query<P: Protocol>(rt: &std::sync::Arc<Runtime<P>>, h: &P::Header, owner: ThreadId) {
    let o = rt.owner_of(h);
    assert!(o.is_none() || o == Some(owner));
}

/// Tries to lock `h` once, without waiting.
fn try_enter<P: Protocol>(rt: &std::sync::Arc<Runtime<P>>, h: &P::Header, _: ThreadId) {
    let me = rt.attach().unwrap();
    if let Some(g) = me.try_enter(h).unwrap() {
        assert_eq!(me.lock_count(h), 1);
        drop(g);
    };
}

/// Failed before f471dea with debug assertions only (new with 5a40ef0; the loom command builds `--release`,
/// where it passes). A deflation on request against an enterer: the enterer reads the
/// monitor's index, the deflater claims the monitor, restores the header and unlocks
/// (`finish_deflation`); the enterer's first try takes the lock for its header check just
/// then, and the deflater's `MonitorTable::free` asserts `is_idle()` — which asks for a free
/// system lock — and panics "freeing a busy monitor". Harmless in release (the holder lets go,
/// and the next inflation waits for it), but every debug build that deflates under contention
/// can panic: `tests/loom_hotspot.rs`'s `{stack,lightweight}_deflate_vs_enter` fail the same
/// way with debug assertions, and passed with them before 5a40ef0.
///
/// Run: `CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true RUSTFLAGS="--cfg loom"
/// CARGO_TARGET_DIR=target/loom-da cargo test -p objmon --release --test loom_deflate_review
/// -- --ignored first_try_vs_free`.
///
/// The fix (f471dea): as for `reclaim` above, an idleness test that ignores a lock held with no owner.
fn first_try_vs_free<P: Protocol>(deflate_idle: fn(&Runtime<P>, &P::Header) -> bool)
where
    P::Header: 'static,
{
    model(3, move || {
        let rt = common::hosted::<P>(config(DeflationPolicy::OnRequest));
        let obj = Arc::new(P::Header::default());
        {
            let me = rt.attach().unwrap();
            let g = me.enter(&obj).unwrap();
            assert_eq!(g.wait(Some(Duration::ZERO)).unwrap(), WaitOutcome::TimedOut);
        }
        let (rt2, obj2) = (rt.clone(), obj.clone());
        let enterer = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            drop(me.enter(&obj2).unwrap());
        });
        let deflated = deflate_idle(&rt, &obj);
        enterer.join().unwrap();
        assert_eq!(rt.stats_snapshot().deflations, u64::from(deflated));
    });
}

#[test]
fn lightweight_first_try_vs_free() {
    first_try_vs_free::<Lightweight>(Lightweight::deflate_idle);
}

#[test]
fn stack_first_try_vs_free() {
    first_try_vs_free::<Stack>(Stack::deflate_idle);
}
