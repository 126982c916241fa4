//! Issue 11, items 3 and 4, for the biased protocols (`biased`, `biased-seed`, `fable`, and
//! `fable-seed`, the same engine): what a host can do from safe Rust that used to break bias
//! revocation. Every check ran against the code before its fix and failed there (a wrong
//! answer, a panic, or a hang caught by the watchdog).
//!
//! - item 3: a lock operation made inside `in_native` is refused (`Err(InNative)`) — the
//!   thread counts as being at a safepoint there, so a revoker rewrites its biases in place
//!   without a barrier, and a fast path of its own at that moment would make two owners; an
//!   exit there releases without acting as an owner it no longer is;
//! - item 4: where `membarrier` is refused, a revoker never waits for an owner that does not
//!   poll on a lock nobody holds, and a barrier that fails after registration is recovered
//!   from (no panic with the header marked, no thread left at a safepoint for good).
#![cfg(not(loom))]

mod watchdog;

use objmon::protocol::biased::{BiasMode, Biasing, Flavor, Kko, KkoRseq, KkoSeed};
use objmon::protocol::fable::{FableHeuristics, FableRseqHeuristics, FableSeedHeuristics};
use objmon::vm::{BiasConfig, BiasWord, MonitorError, Revocation, Runtime};
use std::sync::{mpsc, Arc, Barrier};
use std::thread;
use std::time::Duration;
use watchdog::within;

type Rt<F> = Arc<Runtime<Biasing<F>>>;

/// A runtime whose learn limit is 1 (a FABLE object biases on its second acquisition),
/// revoking by `mode`, or as if the kernel refused `membarrier` when `barrier` is false.
fn runtime<F: Flavor>(mode: Revocation, barrier: bool) -> Rt<F> {
    let rt = Runtime::<Biasing<F>>::with_defaults();
    let c = BiasConfig {
        revocation: mode,
        learn_limit: 1,
    };
    if barrier {
        assert_eq!(Biasing::<F>::configure(&rt, c), mode, "no membarrier here");
    } else {
        rt.state().set_without_barrier(c);
    }
    rt
}

macro_rules! for_each_flavor {
    ($check:ident) => {
        #[test]
        fn $check() {
            within(
                60,
                concat!(stringify!($check), " biased"),
                checks::$check::<KkoRseq>,
            );
            within(
                60,
                concat!(stringify!($check), " biased-seed"),
                checks::$check::<KkoSeed>,
            );
            within(
                60,
                concat!(stringify!($check), " fable"),
                checks::$check::<FableRseqHeuristics>,
            );
            within(
                60,
                concat!(stringify!($check), " fable-seed"),
                checks::$check::<FableSeedHeuristics>,
            );
            within(
                60,
                concat!(stringify!($check), " biased-records"),
                checks::$check::<Kko>,
            );
            within(
                60,
                concat!(stringify!($check), " fable-records"),
                checks::$check::<FableHeuristics>,
            );
        }
    };
}

for_each_flavor!(lock_in_native_is_refused);
for_each_flavor!(exit_in_native_releases_a_biased_hold);
for_each_flavor!(membarrier_refused_never_waits_on_a_free_lock);
for_each_flavor!(barrier_failing_after_registration_is_recovered);

mod checks {
    use super::*;

    /// Makes `h` biased to the calling thread (FABLE: learn limit 1, two acquisitions).
    fn bias<F: Flavor>(me: &objmon::vm::ThreadHandle<'_, Biasing<F>>, h: &BiasWord) {
        for _ in 0..3 {
            drop(me.enter(h).unwrap());
        }
    }

    /// Item 3: every lock operation made in native is refused, on a biased object (held or
    /// not), a fresh one and a thin one, and works again once the thread is back; nested
    /// `in_native` stays native until the outermost returns.
    pub fn lock_in_native_is_refused<F: Flavor>() {
        let rt = runtime::<F>(Revocation::Membarrier, true);
        let (h, fresh, thin) = (
            BiasWord::default(),
            BiasWord::default(),
            BiasWord::default(),
        );
        // `thin`: biased to a thread that has gone, revoked by our first enter.
        thread::scope(|s| {
            s.spawn(|| bias(&rt.attach().unwrap(), &thin));
        });
        let me = rt.attach().unwrap();
        drop(me.enter(&thin).unwrap());
        assert_eq!(thin.mode(), BiasMode::Thin);
        bias(&me, &h);
        assert_eq!(h.mode(), BiasMode::Biased, "{}", F::NAME);
        let refused = |what: &str, r: Result<(), MonitorError>| {
            assert_eq!(
                r,
                Err(MonitorError::InNative),
                "{}: {what} in native",
                F::NAME
            )
        };
        me.in_native(|| {
            refused("enter biased", me.enter(&h).map(drop));
            refused("enter fresh", me.enter(&fresh).map(drop));
            refused("enter thin", me.enter(&thin).map(drop));
            refused("try_enter", me.try_enter(&h).map(drop));
            me.in_native(|| refused("nested native", me.enter(&h).map(drop)));
            refused("after nested native", me.enter(&h).map(drop));
        });
        // A thin lock held once: a nested acquisition in native is refused too (the
        // non-seed flavors take nested thin / learn holds inline: `nest_once` is poisoned
        // there), and a nested release in native is made.
        let gt = me.enter(&thin).unwrap();
        let gt2 = me.enter(&thin).unwrap();
        me.in_native(|| {
            refused("enter thin held", me.enter(&thin).map(drop));
            drop(gt2);
        });
        assert_eq!(me.lock_count(&thin), 1, "{}", F::NAME);
        drop(gt);
        assert_eq!(me.lock_count(&thin), 0, "{}", F::NAME);
        let g = me.enter(&h).unwrap();
        me.in_native(|| {
            refused("enter held", me.enter(&h).map(drop));
            refused("wait", me.wait(&h, Some(Duration::ZERO)).map(drop));
            refused("notify", me.notify(&h));
            refused("notify_all", me.notify_all(&h));
        });
        assert_eq!(me.lock_count(&h), 1, "{}", F::NAME);
        drop(g);
        assert_eq!(
            fresh.mode(),
            BiasMode::Clear,
            "nothing was written in native"
        );
        assert_eq!(rt.owner_of(&h), None);
        // Back from native: everything works, the bias too.
        drop(me.enter(&fresh).unwrap());
        let (g1, g2) = (me.enter(&h).unwrap(), me.enter(&h).unwrap());
        assert_eq!(me.lock_count(&h), 2);
        drop((g2, g1));
        drop(me.enter(&thin).unwrap());
    }

    /// Item 3: a guard dropped in native releases its biased hold (under the thread's own
    /// revoker mutex, so no in-place revocation can count the hold meanwhile), also when the
    /// bias was revoked in place while the thread was in native.
    pub fn exit_in_native_releases_a_biased_hold<F: Flavor>() {
        for mode in [Revocation::Membarrier, Revocation::SyncHandshake] {
            let rt = runtime::<F>(mode, true);
            let (h, k) = (BiasWord::default(), BiasWord::default());
            let (inside, revoked) = (Barrier::new(2), Barrier::new(2));
            thread::scope(|s| {
                s.spawn(|| {
                    let me = rt.attach().unwrap();
                    bias(&me, &h);
                    bias(&me, &k);
                    let (g1, g2) = (me.enter(&h).unwrap(), me.enter(&h).unwrap());
                    let gk = me.enter(&k).unwrap();
                    let (inside, revoked) = (&inside, &revoked);
                    me.in_native(move || {
                        drop(gk); // still biased: released through the bias
                        inside.wait();
                        revoked.wait(); // `h` was revoked in place meanwhile
                        drop(g2);
                    });
                    assert_eq!(me.lock_count(&h), 1, "{} {mode:?}", F::NAME);
                    assert_eq!(me.lock_count(&k), 0, "{} {mode:?}", F::NAME);
                    me.in_native(move || drop(g1));
                    assert_eq!(me.lock_count(&h), 0, "{} {mode:?}", F::NAME);
                    assert_eq!(rt.owner_of(&h), None);
                    drop(me.enter(&k).unwrap());
                });
                let me = rt.attach().unwrap();
                inside.wait();
                assert_eq!(me.try_enter(&h).unwrap().map(drop), None, "held twice");
                Biasing::<F>::revoke_now(&rt, me.context(), &h).unwrap();
                assert_eq!(h.mode(), BiasMode::Thin);
                revoked.wait();
            });
        }
    }

    /// Item 4: where `membarrier` is refused, the default configuration must not leave a
    /// revoker waiting for the poll of an owner that blocks in `std` (as most Rust hosts and
    /// every C host do) on a lock nobody holds: it hung there, falling back to a handshake.
    pub fn membarrier_refused_never_waits_on_a_free_lock<F: Flavor>() {
        for mode in [Revocation::Membarrier, Revocation::Hybrid] {
            let rt = runtime::<F>(mode, false);
            assert_eq!(rt.state().revocation(), Revocation::NoBias, "{}", F::NAME);
            let h = BiasWord::default();
            let (tx, rx) = mpsc::channel::<()>();
            let used = Barrier::new(2);
            thread::scope(|s| {
                let (rt, h, used) = (&rt, &h, &used);
                s.spawn(move || {
                    let me = rt.attach().unwrap();
                    for _ in 0..4 {
                        drop(me.enter(h).unwrap());
                    }
                    used.wait();
                    rx.recv().unwrap(); // blocks in std: never polls, never "in native"
                    drop(me.enter(h).unwrap());
                });
                let me = rt.attach().unwrap();
                used.wait();
                assert_ne!(h.mode(), BiasMode::Biased, "{} {mode:?}", F::NAME);
                drop(me.enter(h).unwrap()); // nobody holds it: must not wait
                tx.send(()).unwrap();
            });
            assert_eq!(rt.state().revocations().total(), 0);
        }
    }

    /// Item 4: `membarrier` failing after the registration succeeded (a seccomp filter
    /// installed later) used to panic between marking the header and revoking, leaving the
    /// header marked (every later locker spins forever) and the revoker at a safepoint for
    /// good. Now the mark is withdrawn, the runtime falls back to the synchronous handshake
    /// (visibly), and the revocation completes with the owner's poll.
    pub fn barrier_failing_after_registration_is_recovered<F: Flavor>() {
        let rt = runtime::<F>(Revocation::Membarrier, true);
        let h = BiasWord::default();
        let stop = std::sync::atomic::AtomicBool::new(false);
        let biased = Barrier::new(2);
        thread::scope(|s| {
            s.spawn(|| {
                let me = rt.attach().unwrap();
                bias(&me, &h);
                biased.wait();
                while !stop.load(std::sync::atomic::Ordering::Acquire) {
                    me.poll(); // cooperates: the handshake fallback needs it
                    thread::yield_now();
                }
            });
            let me = rt.attach().unwrap();
            biased.wait();
            rt.state().simulate_barrier_failure();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                drop(me.enter(&h).unwrap());
            }));
            stop.store(true, std::sync::atomic::Ordering::Release);
            assert!(r.is_ok(), "{}: the revoker panicked", F::NAME);
        });
        assert_eq!(h.mode(), BiasMode::Thin, "{}", F::NAME);
        assert_eq!(rt.state().revocation(), Revocation::SyncHandshake);
        assert_eq!(rt.state().revocations().total(), 1);
    }
}
