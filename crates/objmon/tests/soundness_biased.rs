//! The safe API's promises for the biased protocols (`biased`, `biased-seed`, `fable`, and
//! `fable-seed`, the same engine): what a host can do from safe Rust that could break bias
//! revocation. Each check is a regression test: without the code that keeps its promise it
//! gives a wrong answer, panics, or hangs (caught by the watchdog).
//!
//! - in native: a lock operation made inside `in_native` is refused (`Err(InNative)`) — the
//!   thread counts as being at a safepoint there, so a revoker rewrites its biases in place
//!   without a barrier, and a fast path of its own at that moment would make two owners; an
//!   exit there releases without acting as an owner it no longer is;
//! - without `membarrier`: where it is refused, a revoker never waits for an owner that does not
//!   poll on a lock nobody holds, and a barrier that fails after registration is recovered
//!   from (no panic with the header marked, no thread left at a safepoint for good).
#![cfg(not(loom))]

mod watchdog;

use objmon::protocol::biased::{BiasMode, Biasing, Flavor, Kko, KkoRseq, KkoSeed, KkoSignal};
use objmon::protocol::fable::{
    FableHeuristics, FableRseqHeuristics, FableSeedHeuristics, FableSignalHeuristics,
};
use objmon::vm::{BiasConfig, BiasWord, MonitorError, Revocation, Runtime};
use std::sync::{mpsc, Arc, Barrier};
use std::thread;
use std::time::Duration;
use watchdog::within;

type Rt<F> = Arc<Runtime<Biasing<F>>>;

/// A runtime whose learn limit is 1 (a FABLE object biases on its second acquisition),
/// revoking by `mode`, or as if the kernel refused `membarrier` when `barrier` is false.
fn runtime<F: Flavor>(mode: Revocation, barrier: bool) -> Rt<F> {
    // SAFETY: the signal flavors' contract (`Runtime::new_unchecked`): no signal handler of
    // this test process runs on a locking thread except the barrier's own (and the
    // `signal_host` tests, which mask the barrier signal, are another process).
    let rt = unsafe { Runtime::<Biasing<F>>::new_unchecked(Default::default()) };
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

/// `check::<F>()` for every non-seed flavor (they keep per-thread state naming a header by
/// its address: the records of biased holds, `biased` / `fable`, and the record of the last
/// inline thin / learn lock, all six) and the seed ones (whose holds live in the word only:
/// controls).
macro_rules! for_every_flavor {
    ($($check:ident),* $(,)?) => {$(
        #[test]
        fn $check() {
            // Every flavor runs (a failure does not hide the next one's), then the failures.
            let mut failed = Vec::new();
            let mut run = |name: &'static str, f: fn()| {
                let r = std::panic::catch_unwind(|| within(60, name, f));
                if r.is_err() {
                    failed.push(name);
                }
            };
            run("biased", checks::$check::<Kko>);
            run("fable", checks::$check::<FableHeuristics>);
            run("biased-rseq", checks::$check::<KkoRseq>);
            run("fable-rseq", checks::$check::<FableRseqHeuristics>);
            run("biased-signal", checks::$check::<KkoSignal>);
            run("fable-signal", checks::$check::<FableSignalHeuristics>);
            run("biased-seed", checks::$check::<KkoSeed>);
            run("fable-seed", checks::$check::<FableSeedHeuristics>);
            assert!(failed.is_empty(), "failed: {failed:?}");
        }
    )*};
}

for_each_flavor!(lock_in_native_is_refused);
for_each_flavor!(exit_in_native_releases_a_biased_hold);
for_each_flavor!(membarrier_refused_never_waits_on_a_free_lock);
for_each_flavor!(barrier_failing_after_registration_is_recovered);
for_every_flavor!(
    forgotten_biased_hold_stays_with_its_value,
    forgotten_thin_hold_is_not_unlocked_blind_after_a_move,
    forgotten_hold_when_its_thread_exits,
);

/// The same hole through `Monitor<T>`: `biased` and `fable`.
#[test]
fn forgotten_monitor_guard_then_swap_leaves_the_new_object_free() {
    within(60, "biased", monitor_swap::<objmon::Biased>);
    within(60, "fable", monitor_swap::<objmon::Fable>);
}

/// Failed on f46a3d1: `Monitor<T>`, a guard of `m1` (biased to this thread) forgotten, `m1`
/// swapped with a monitor never used; the monitor now at `m1`'s place was never locked and
/// forgotten: after a plain lock / unlock it is not ours, and another thread gets it. Then
/// the issue's own steps, `m2` biased to this thread too: the documented limit of the
/// records flavors (docs/soundness.md §9, "Moving objects"): the hold stays with the address.
fn monitor_swap<P: objmon::vm::Protocol + objmon::MonitorProtocol>() {
    use objmon::Monitor;
    for m2_biased in [false, true] {
        let rt = Runtime::<P>::with_defaults();
        let mut m1 = Monitor::with_runtime(&rt, std::cell::Cell::new(1u32));
        let mut m2 = Monitor::with_runtime(&rt, std::cell::Cell::new(2u32));
        for _ in 0..8 {
            drop(m1.lock());
            if m2_biased {
                drop(m2.lock());
            }
        }
        std::mem::forget(m1.lock());
        std::mem::swap(&mut m1, &mut m2);
        for _ in 0..8 {
            drop(m1.lock());
        }
        assert_eq!(m1.lock().get(), 2);
        let what = format!("{} m2 biased {m2_biased}", P::NAME);
        assert_eq!(m1.is_owned_by_current_thread(), m2_biased, "{what}");
        thread::scope(|s| {
            s.spawn(|| {
                let wait = Duration::from_millis(if m2_biased { 100 } else { 5000 });
                let got = m1.try_lock_for(wait).map(|g| g.get());
                assert_eq!(got.is_some(), !m2_biased, "{what}: another thread's lock");
            });
        });
    }
}

mod checks {
    use super::*;
    use std::time::Instant;

    /// How safe code moves a header out from under a forgotten hold.
    #[derive(Clone, Copy, Debug)]
    pub enum Move {
        /// `mem::swap` with another header biased to this thread.
        Swap,
        /// `mem::swap` with a fresh header, then biased to this thread.
        SwapFresh,
        /// `mem::replace` with a fresh header, then biased to this thread.
        Replace,
        /// Moved out of its `Box`; a new `Box` gets the same address, biased to this thread.
        OutOfBox,
    }

    pub const MOVES: [Move; 4] = [Move::Swap, Move::SwapFresh, Move::Replace, Move::OutOfBox];

    /// Moves `a`'s value away as `how` says: returns the header now at `a`'s old address (a
    /// value that was never locked and forgotten) and the moved value. `other` is a second
    /// header, biased to `me` (used by `Swap`).
    pub fn move_away<F: Flavor>(
        me: &objmon::vm::ThreadHandle<'_, Biasing<F>>,
        mut a: Box<BiasWord>,
        mut other: Box<BiasWord>,
        how: Move,
    ) -> (Box<BiasWord>, Box<BiasWord>) {
        let at = &*a as *const BiasWord;
        let (here, moved) = match how {
            Move::Swap => {
                std::mem::swap(&mut *a, &mut *other);
                (a, other)
            }
            Move::SwapFresh => {
                let mut fresh = BiasWord::default();
                std::mem::swap(&mut *a, &mut fresh);
                bias(me, &a);
                (a, Box::new(fresh))
            }
            Move::Replace => {
                let old = std::mem::take(&mut *a);
                bias(me, &a);
                (a, Box::new(old))
            }
            Move::OutOfBox => {
                // The block frees the box (moved out of, it is freed at its scope's end).
                let old: BiasWord = {
                    let a = a;
                    *a
                };
                // A new box at the freed address (the allocator may hand out others first).
                let mut others = Vec::new();
                let fresh = loop {
                    let b = Box::new(BiasWord::default());
                    if std::ptr::eq(&*b, at) || others.len() == 10_000 {
                        break b;
                    }
                    others.push(b);
                };
                bias(me, &fresh);
                (fresh, Box::new(old))
            }
        };
        assert_eq!(
            &*here as *const BiasWord, at,
            "{how:?}: the allocator did not reuse the address (the check needs it)"
        );
        (here, moved)
    }

    /// Whether another thread gets `h` within `wait` (it retries `try_enter`, then lets go).
    pub fn other_gets<F: Flavor>(rt: &Rt<F>, h: &BiasWord, wait: Duration) -> bool {
        thread::scope(|s| {
            s.spawn(|| {
                let other = rt.attach().unwrap();
                let deadline = Instant::now() + wait;
                loop {
                    if let Some(g) = other.try_enter(h).unwrap() {
                        drop(g);
                        return true;
                    }
                    if Instant::now() >= deadline {
                        return false;
                    }
                    thread::sleep(Duration::from_millis(1));
                }
            })
            .join()
            .unwrap()
        })
    }

    /// Failed on f46a3d1 (`biased`, `fable`: the records flavors): a biased hold whose guard
    /// is forgotten is counted by the header's address in the owner's lock records, so after
    /// the header was swapped with a fresh one / replaced / moved out of its box, the object
    /// now at that address — never locked and forgotten, then biased to us — was ours after
    /// a plain lock / unlock (`lock_count` 1) and another thread could not get it (5 s). It
    /// must be free. The header flavors count the hold in the word, which moves with the
    /// value: the moved value stays held. The records flavors cannot tell a header biased to
    /// us that safe code swaps in from the one the record was made for (the two words are
    /// equal): the limit documented in docs/soundness.md §9 ("Moving objects"), checked here as
    /// documented.
    pub fn forgotten_biased_hold_stays_with_its_value<F: Flavor>() {
        for how in MOVES {
            let rt = runtime::<F>(Revocation::Membarrier, true);
            let me = rt.attach().unwrap();
            let (a, b) = (Box::new(BiasWord::default()), Box::new(BiasWord::default()));
            bias(&me, &a);
            bias(&me, &b);
            std::mem::forget(me.enter(&a).unwrap());
            let (here, moved) = move_away(&me, a, b, how);
            drop(me.enter(&here).unwrap());
            let what = format!("{} {how:?}", F::NAME);
            if F::RECORDS && matches!(how, Move::Swap) {
                // The documented limit: the hold stays with the address.
                assert_eq!(me.lock_count(&here), 1, "{what}: as documented");
                assert!(
                    !other_gets(&rt, &here, Duration::from_millis(100)),
                    "{what}: as documented"
                );
                assert_eq!(me.lock_count(&moved), 0, "{what}: as documented");
                assert!(
                    other_gets(&rt, &moved, Duration::from_secs(5)),
                    "{what}: as documented"
                );
                continue;
            }
            assert_eq!(
                me.lock_count(&here),
                0,
                "{what}: the object now there is ours"
            );
            assert!(
                !me.holds_lock(&here),
                "{what}: the object now there is ours"
            );
            assert_eq!(
                rt.owner_of(&here),
                None,
                "{what}: the object now there is held"
            );
            assert!(
                other_gets(&rt, &here, Duration::from_secs(5)),
                "{what}: another thread cannot lock the object now there"
            );
            if F::RECORDS {
                // The forgotten hold went with the record (documented): the moved value is free.
                assert_eq!(me.lock_count(&moved), 0, "{what}: the moved value's hold");
                assert!(
                    other_gets(&rt, &moved, Duration::from_secs(5)),
                    "{what}: the moved value"
                );
            } else {
                // The moved value: still held by us, once (a forgotten guard keeps its lock).
                assert_eq!(me.lock_count(&moved), 1, "{what}: the moved value's hold");
                assert!(
                    !other_gets(&rt, &moved, Duration::from_millis(100)),
                    "{what}: another thread locked the moved value"
                );
            }
        }
    }

    /// Failed on f46a3d1 (every non-seed flavor): the record of the last inline thin lock
    /// (`last`: "the word at this address is ours once, unlock it with a blind store")
    /// outlived a forgotten guard's value moving away. With a header biased to us swapped
    /// in, held twice and (signal flavors) revoked meanwhile, the inner unlock stored the
    /// record's free thin word over it: the outer hold was gone, another thread locked it
    /// while the outer guard lived (two owners). The same without the revocation for the
    /// records and rseq flavors, whose unlock checks the record first; for the signal
    /// flavors, also after the owner's own revocation (`revoke_now`).
    pub fn forgotten_thin_hold_is_not_unlocked_blind_after_a_move<F: Flavor>() {
        for how in MOVES {
            // Nobody rewrites the word meanwhile; another thread revokes it; we do.
            for revoke in ["none", "by another thread", "by us"] {
                let what = format!("{} {how:?} revoked {revoke}", F::NAME);
                let rt = runtime::<F>(Revocation::Membarrier, true);
                let x = Box::new(BiasWord::default());
                // Thin: biased to a thread that has gone, revoked by our first enter.
                thread::scope(|s| {
                    s.spawn(|| bias(&rt.attach().unwrap(), &x));
                });
                let me = rt.attach().unwrap();
                drop(me.enter(&x).unwrap());
                assert_eq!(x.mode(), BiasMode::Thin, "{what}");
                let y = Box::new(BiasWord::default());
                bias(&me, &y);
                std::mem::forget(me.enter(&x).unwrap());
                let (here, moved) = move_away(&me, x, y, how);
                let outer = me.enter(&here).unwrap();
                let inner = me.enter(&here).unwrap();
                match revoke {
                    "by another thread" => thread::scope(|s| {
                        s.spawn(|| {
                            let other = rt.attach().unwrap();
                            Biasing::<F>::revoke_now(&rt, other.context(), &here).unwrap();
                        });
                    }),
                    "by us" => Biasing::<F>::revoke_now(&rt, me.context(), &here).unwrap(),
                    _ => {}
                }
                // No assertion while a guard lives (a panic there would unwind into its drop).
                let mut seen = Vec::new();
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(inner))).is_err() {
                    seen.push("the inner unlock panicked");
                }
                if me.lock_count(&here) != 1 {
                    seen.push("the outer hold is gone");
                }
                if other_gets(&rt, &here, Duration::from_millis(100)) {
                    seen.push("another thread locked it while we hold it (two owners)");
                }
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(outer))).is_err() {
                    seen.push("the outer unlock panicked");
                }
                assert!(seen.is_empty(), "{what}: {seen:?}");
                assert_eq!(me.lock_count(&here), 0, "{what}");
                assert!(other_gets(&rt, &here, Duration::from_secs(5)), "{what}");
                // The moved value: a thin word held once by us, its hold moved with it.
                assert_eq!(me.lock_count(&moved), 1, "{what}: the moved value's hold");
                assert!(
                    !other_gets(&rt, &moved, Duration::from_millis(100)),
                    "{what}: another thread locked the moved value"
                );
            }
        }
    }

    /// A thread that ends with holds of forgotten guards: a thin hold stays held for good
    /// (its id is retired, no later thread inherits it), and so does a biased hold counted
    /// in the word (the seed, rseq and signal flavors); a biased hold counted in the owner's
    /// lock records (`biased`, `fable`) ends with the records, as documented in `biased.rs`
    /// ("A forgotten guard, then a move"): the object is free, never held by anyone else.
    /// Found by objmon-fuzz on `biased` (`tests/fuzz.rs`
    /// `biased_thread_exit_with_a_forgotten_hold`, where the model expected the hold to stay).
    pub fn forgotten_hold_when_its_thread_exits<F: Flavor>() {
        let rt = runtime::<F>(Revocation::Membarrier, true);
        let (biased, thin) = (BiasWord::default(), BiasWord::default());
        // `thin`: biased to a thread that has gone, revoked by the owner's first enter.
        thread::scope(|s| {
            s.spawn(|| bias(&rt.attach().unwrap(), &thin));
        });
        thread::scope(|s| {
            s.spawn(|| {
                let me = rt.attach().unwrap();
                bias(&me, &biased);
                assert_eq!(biased.mode(), BiasMode::Biased, "{}", F::NAME);
                std::mem::forget(me.enter(&biased).unwrap());
                std::mem::forget(me.enter(&thin).unwrap());
                assert_eq!(thin.mode(), BiasMode::Thin, "{}", F::NAME);
            });
        });
        let what = F::NAME;
        assert!(rt.owner_of(&thin).is_some(), "{what}: the thin hold");
        assert!(
            !other_gets(&rt, &thin, Duration::from_millis(100)),
            "{what}: another thread got the thin hold of a thread that ended"
        );
        if F::RECORDS {
            assert_eq!(rt.owner_of(&biased), None, "{what}: the biased hold");
            assert!(
                other_gets(&rt, &biased, Duration::from_secs(5)),
                "{what}: the biased hold ended with the records"
            );
        } else {
            assert!(rt.owner_of(&biased).is_some(), "{what}: the biased hold");
            assert!(
                !other_gets(&rt, &biased, Duration::from_millis(100)),
                "{what}: another thread got the biased hold of a thread that ended"
            );
        }
    }

    /// Makes `h` biased to the calling thread (FABLE: learn limit 1, two acquisitions).
    pub fn bias<F: Flavor>(me: &objmon::vm::ThreadHandle<'_, Biasing<F>>, h: &BiasWord) {
        for _ in 0..3 {
            drop(me.enter(h).unwrap());
        }
    }

    /// Regression: every lock operation made in native is refused, on a biased object (held or
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

    /// Regression: a guard dropped in native releases its biased hold (under the thread's own
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

    /// Regression: where `membarrier` is refused, the default configuration must not leave a
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

    /// Regression: `membarrier` failing after the registration succeeded (a seccomp filter
    /// installed later) must not panic between marking the header and revoking, leaving the
    /// header marked (every later locker spins forever) and the revoker at a safepoint for
    /// good. The mark is withdrawn, the runtime falls back to the synchronous handshake
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
