//! Unit tests of the biased engine (`biased`, `biased-seed`, `fable`, `fable-seed`): the
//! seed's transitions and each revocation path, on real threads.

use super::*;
use crate::protocol::fable::{
    Fable, FableHeuristics, FableRseq, FableRseqHeuristics, FableSeedHeuristics,
};
use crate::revoke::RevocationKind as K;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier};
use std::time::Duration;

const MODES: [Revocation; 3] = [
    Revocation::SyncHandshake,
    Revocation::AsyncHandshake,
    Revocation::Membarrier,
];

fn rt_with<F: Flavor>(mode: Revocation, learn_limit: u32) -> Arc<Rt<F>> {
    // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
    // run only on a fault, which no owner section makes): the -signal flavors' contract
    // (`Runtime::new_unchecked`) holds; the other protocols have none.
    let rt = unsafe { Runtime::<Biasing<F>>::new_unchecked(Default::default()) };
    assert_eq!(
        Biasing::<F>::configure(
            &rt,
            BiasConfig {
                revocation: mode,
                learn_limit
            }
        ),
        mode,
        "this kernel supports membarrier"
    );
    rt
}

/// §2.2.1 KKO: the first acquisition biases; the owner's lock / unlock then changes only
/// the count field (plain stores, Figure 4), and unlocked it stays biased.
#[test]
fn kko_biases_on_first_acquire_and_counts_in_the_header() {
    let rt = Runtime::<BiasedSeed>::with_defaults();
    let me = rt.attach().unwrap();
    let h = BiasWord::new(0x5a);
    assert_eq!(h.mode(), BiasMode::Clear);
    let g1 = me.enter(&h).unwrap();
    assert_eq!(h.mode(), BiasMode::Biased);
    let biased = h.raw();
    let g2 = me.enter(&h).unwrap();
    assert_eq!(h.raw(), biased + RC_ONE);
    assert_eq!(rc(h.raw()), 2);
    drop((g2, g1));
    assert_eq!(h.raw(), biased - RC_ONE, "still biased, count 0");
    assert_eq!(h.host_bits(), 0x5a);
    assert_eq!(rt.owner_of(&h), None);
    for _ in 0..100 {
        drop(me.enter(&h).unwrap());
    }
    assert_eq!(Biasing::transitions(&rt, Transition::ClearToBiased), 1);
    assert_eq!(rt.state().revocations().total(), 0);
}

/// §3.1: with learn limit N the object biases on the (N + 1)-th non-recursive acquisition
/// by one thread; recursive ones do not count.
#[test]
fn fable_learns_then_biases_after_n_plus_one() {
    for n in [1u32, 3, 5] {
        let rt = rt_with::<FableRseqHeuristics>(Revocation::Membarrier, n);
        let me = rt.attach().unwrap();
        let h = BiasWord::default();
        let g = me.enter(&h).unwrap();
        assert_eq!(h.mode(), BiasMode::Learn);
        drop((me.enter(&h).unwrap(), g)); // recursive: not counted
        for i in 1..=n {
            assert_eq!(h.mode(), BiasMode::Learn, "N = {n}, after {i} acquisitions");
            drop(me.enter(&h).unwrap());
        }
        assert_eq!(h.mode(), BiasMode::Biased, "N = {n}");
        assert_eq!(Biasing::transitions(&rt, Transition::LearnToBiased), 1);
    }
}

/// Figure 5: a second thread acquiring in learn mode makes the lock thin; thin unlock
/// keeps the owner (§3.2 sticky owner) with count 0.
#[test]
fn fable_second_thread_in_learn_mode_goes_thin() {
    let rt = Runtime::<FableRseq>::with_defaults();
    let h = BiasWord::default();
    let me = rt.attach().unwrap();
    drop(me.enter(&h).unwrap());
    assert_eq!(h.mode(), BiasMode::Learn);
    std::thread::scope(|s| {
        s.spawn(|| {
            let other = rt.attach().unwrap();
            drop(other.enter(&h).unwrap());
            assert_eq!(h.mode(), BiasMode::Thin);
            assert_eq!(
                (h.raw() & OWNER_MASK) >> OWNER_SHIFT,
                u64::from(other.id().get()),
                "sticky owner"
            );
        });
    });
    assert_eq!(rc(h.raw()), 0);
    assert_eq!(Biasing::transitions(&rt, Transition::LearnToThin), 1);
    assert_eq!(
        rt.state().revocations().total(),
        0,
        "learn mode never revokes"
    );
}

/// Revoking a held bias hands the owner a thin lock with the same count; in the barrier
/// mode the owner neither polls nor blocks cooperatively (it busy-waits on a flag, then
/// sleeps in a system call).
fn revoke_held<F: Flavor>(mode: Revocation) {
    let rt = rt_with::<F>(mode, 1);
    let h = BiasWord::default();
    let (biased, revoked) = (Barrier::new(3), AtomicBool::new(false));
    std::thread::scope(|s| {
        s.spawn(|| {
            let me = rt.attach().unwrap();
            // Learn limit 1: the second acquisition biases a FABLE lock.
            drop(me.enter(&h).unwrap());
            drop(me.enter(&h).unwrap());
            assert_eq!(h.mode(), BiasMode::Biased);
            let gs: Vec<_> = (0..3).map(|_| me.enter(&h).unwrap()).collect();
            biased.wait();
            while !revoked.load(Ordering::Acquire) {
                if mode == Revocation::Membarrier {
                    std::hint::spin_loop(); // never polls
                } else {
                    me.poll();
                }
            }
            if mode == Revocation::Membarrier {
                std::thread::sleep(Duration::from_millis(5));
            }
            assert_eq!(me.lock_count(&h), 3, "{mode:?}: count preserved");
            assert_eq!(rt.owner_of(&h), Some(me.id()), "{mode:?}: still the owner");
            drop(gs);
        });
        s.spawn(|| {
            let me = rt.attach().unwrap();
            biased.wait();
            // Held by its bias owner: try_enter fails at once, without revoking.
            assert_eq!(me.try_enter(&h).unwrap().map(|_| ()), None);
            assert_eq!(rt.state().revocations().total(), 0);
            // try_enter saw count 3 and returned at once; now block: revokes, then spins.
            let g = me.enter(&h).unwrap();
            assert_eq!(me.lock_count(&h), 1);
            drop(g);
        });
        // A watcher without a handle tells the owner once the header is no longer biased.
        s.spawn(|| {
            biased.wait();
            while h.mode() == BiasMode::Biased || rt.state().revocations().total() == 0 {
                std::thread::yield_now();
            }
            revoked.store(true, Ordering::Release);
        });
    });
    let rv = rt.state().revocations();
    let k = match mode {
        Revocation::SyncHandshake => K::Sync,
        Revocation::AsyncHandshake => K::Async,
        Revocation::Membarrier => K::Membarrier,
        // The owner polls in a tight loop, so usually within the wait; descheduled, it
        // leaves the revocation to the barrier.
        Revocation::Hybrid if rv.count(K::Async) == 1 => K::Async,
        Revocation::Hybrid => K::Membarrier,
        Revocation::NoBias => unreachable!("not a mode under test"),
    };
    assert_eq!(rv.count(k), 1, "{mode:?}: {rv:?}");
    assert_eq!(rv.total(), 1);
    assert!(rv.latency_quantile_ns(0.5).is_some());
    assert_eq!(Biasing::transitions(&rt, Transition::BiasedToThin), 1);
}

#[test]
fn revocation_keeps_owner_and_count() {
    for mode in MODES {
        revoke_held::<KkoRseq>(mode);
        revoke_held::<FableRseqHeuristics>(mode);
        revoke_held::<KkoSeed>(mode);
        revoke_held::<FableSeedHeuristics>(mode);
    }
    revoke_held::<KkoRseq>(Revocation::Hybrid);
    revoke_held::<FableRseqHeuristics>(Revocation::Hybrid);
}

/// A thread in native (or parked in a wait) is at a safepoint: the handshake revokes in
/// place without it.
#[test]
fn owner_in_native_is_revoked_in_place() {
    for mode in [Revocation::SyncHandshake, Revocation::AsyncHandshake] {
        let rt = rt_with::<KkoRseq>(mode, 5);
        let h = BiasWord::default();
        let (inside, done) = (Barrier::new(2), Barrier::new(2));
        std::thread::scope(|s| {
            s.spawn(|| {
                let me = rt.attach().unwrap();
                drop(me.enter(&h).unwrap());
                me.in_native(|| {
                    inside.wait();
                    done.wait();
                });
                assert_eq!(me.lock_count(&h), 0);
                drop(me.enter(&h).unwrap());
            });
            let me = rt.attach().unwrap();
            inside.wait();
            let g = me.enter(&h).unwrap(); // the owner never polls: it is in native
            assert_eq!(me.lock_count(&h), 1);
            drop(g);
            done.wait();
        });
        assert_eq!(rt.state().revocations().count(K::OwnerSafe), 1, "{mode:?}");
    }
}

/// Two threads revoking each other's biases at the same time do not deadlock.
#[test]
fn mutual_revocation_does_not_deadlock() {
    for mode in MODES {
        let rt = rt_with::<KkoRseq>(mode, 5);
        let rounds = 200;
        let hs: Vec<[BiasWord; 2]> = (0..rounds).map(|_| Default::default()).collect();
        let go = Barrier::new(2);
        std::thread::scope(|s| {
            for who in 0..2 {
                let (rt, hs, go) = (&rt, &hs, &go);
                s.spawn(move || {
                    let me = rt.attach().unwrap();
                    for pair in hs {
                        drop(me.enter(&pair[who]).unwrap()); // bias mine
                                                             // A host blocking outside objmon says so (JNI-style), or a
                                                             // handshake revoker would wait for its poll forever.
                        me.in_native(|| go.wait());
                        drop(me.enter(&pair[1 - who]).unwrap()); // revoke theirs
                        me.in_native(|| go.wait());
                    }
                });
            }
        });
        assert_eq!(
            rt.state().revocations().total(),
            2 * rounds as u64,
            "{mode:?}"
        );
    }
}

/// A bias whose owner detached is revoked without a handshake, and a recycled id (same
/// number, next generation) does not match the old bias. Thread ids are process-wide
/// (docs/soundness.md §7): a test running in parallel may take the freed id first, so the
/// scenario is retried until the id comes back (freed ids are reused first).
#[test]
fn exited_owner_and_recycled_id() {
    for mode in MODES {
        let recycled = (0..50).any(|_| exited_owner_scenario(mode));
        assert!(recycled, "the freed id never came back in 50 tries");
    }
}

/// One try of [`exited_owner_and_recycled_id`]: `false` if the id was not recycled (taken
/// by another test meanwhile), after checking what holds either way.
fn exited_owner_scenario(mode: Revocation) -> bool {
    let rt = Runtime::<BiasedRseq>::new(Config {
        max_threads: 1,
        ..Config::default()
    });
    BiasedRseq::configure(
        &rt,
        BiasConfig {
            revocation: mode,
            learn_limit: 5,
        },
    );
    let h = BiasWord::default();
    let old = std::thread::scope(|s| {
        s.spawn(|| {
            let me = rt.attach().unwrap();
            drop(me.enter(&h).unwrap());
            me.id()
        })
        .join()
        .unwrap()
    });
    assert_eq!(h.mode(), BiasMode::Biased);
    let me = rt.attach().unwrap();
    assert_eq!(me.lock_count(&h), 0, "the old bias is not ours");
    let g = me.enter(&h).unwrap();
    assert_eq!(h.mode(), BiasMode::Thin, "revoked, not inherited");
    assert_eq!(me.lock_count(&h), 1);
    drop(g);
    assert_eq!(rt.state().revocations().count(K::OwnerExited), 1);
    me.id() == old
}

/// wait on a biased lock: the owner inflates it itself (revoking its own bias) and keeps
/// its count.
#[test]
fn wait_on_a_biased_lock_inflates_with_count() {
    let rt = Runtime::<BiasedRseq>::with_defaults();
    let me = rt.attach().unwrap();
    let h = BiasWord::default();
    let _a = me.enter(&h).unwrap();
    let b = me.enter(&h).unwrap();
    assert_eq!(h.mode(), BiasMode::Biased);
    assert_eq!(b.wait(Some(Duration::ZERO)).unwrap(), WaitOutcome::TimedOut);
    assert_eq!(h.mode(), BiasMode::Fat);
    assert_eq!(me.lock_count(&h), 2);
    assert_eq!(Biasing::transitions(&rt, Transition::BiasedToFat), 1);
}

/// The 256th hold of a biased lock inflates, carrying the count.
#[test]
fn biased_count_overflow_inflates() {
    let rt = Runtime::<BiasedSeed>::with_defaults();
    let me = rt.attach().unwrap();
    let h = BiasWord::default();
    let mut gs: Vec<_> = (0..255).map(|_| me.enter(&h).unwrap()).collect();
    assert_eq!(h.mode(), BiasMode::Biased);
    gs.push(me.enter(&h).unwrap());
    assert_eq!(h.mode(), BiasMode::Fat);
    assert_eq!(me.lock_count(&h), 256);
    drop(gs);
    assert_eq!(rt.owner_of(&h), None);
}

/// Where the kernel refuses membarrier, a fresh runtime asking for it biases nothing (no
/// revocation can hang: there is none); one whose threads biased objects under a
/// handshake the host chose keeps the synchronous handshake, and revocation works.
#[test]
fn membarrier_refused_falls_back_to_no_bias_or_the_handshake() {
    let rt = Runtime::<FableRseq>::with_defaults();
    assert_eq!(
        rt.state().set_with(BiasConfig::default(), || false),
        Revocation::NoBias
    );
    let me = rt.attach().unwrap();
    let h = BiasWord::default();
    for _ in 0..20 {
        drop(me.enter(&h).unwrap());
    }
    assert_eq!(h.mode(), BiasMode::Thin, "learn → thin at the limit");
    drop(me);

    let rt = Runtime::<BiasedRseq>::with_defaults();
    rt.state().set_with(BiasConfig::default(), || false);
    assert_eq!(rt.state().revocation(), Revocation::NoBias);
    let me = rt.attach().unwrap();
    let k = BiasWord::default();
    drop(me.enter(&k).unwrap());
    assert_eq!(k.mode(), BiasMode::Thin, "clear → thin");
    BiasedRseq::configure(
        &rt,
        BiasConfig {
            revocation: Revocation::SyncHandshake,
            learn_limit: 5,
        },
    );
    drop(me.enter(&BiasWord::default()).unwrap()); // biases: may have biases now
    drop(me);
    let got = rt.state().set_with(BiasConfig::default(), || false);
    assert_eq!(got, Revocation::SyncHandshake);
    assert_eq!(rt.state().revocation(), Revocation::SyncHandshake);
    let h = BiasWord::default();
    let biased = Barrier::new(2);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let me = rt.attach().unwrap();
            drop(me.enter(&h).unwrap());
            biased.wait();
            while !stop.load(Ordering::Acquire) {
                me.poll();
            }
        });
        let me = rt.attach().unwrap();
        biased.wait();
        drop(me.enter(&h).unwrap());
        stop.store(true, Ordering::Release);
    });
    assert_eq!(rt.state().revocations().count(K::Sync), 1);
}

/// A panic while the thread is at a safepoint (blocking, revoking) does not leave it
/// there for good: revokers would then rewrite its biases in place while it runs.
#[test]
fn panic_at_a_safepoint_returns_to_running() {
    let rt = Runtime::<BiasedRseq>::with_defaults();
    let me = rt.attach().unwrap();
    let sp = &me.context().local().sp;
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        BiasedRseq::safe(me.context(), || panic!("inside"))
    }));
    assert!(r.is_err());
    assert_eq!(sp.state.load(Ordering::SeqCst), crate::revoke::RUNNING);
    // In native, a safe stretch leaves the thread in native.
    me.in_native(|| {
        BiasedRseq::safe(me.context(), || ());
        assert_eq!(sp.state.load(Ordering::SeqCst), crate::revoke::SAFE);
    });
    assert_eq!(sp.state.load(Ordering::SeqCst), crate::revoke::RUNNING);
}

mod records;
