//! The rseq owner step of `biased` and `fable` on real threads and a real
//! kernel: the section's abort handler, which the kernel enters when the owner is
//! signalled, preempted or migrated inside it (and a revoker's rseq barrier lands there),
//! must leave the count exact; and a barrier revocation racing the owner's steps must never
//! make two owners. Loom covers the interleavings (`loom_biased.rs`, `rseq_*`); these check
//! the asm, the descriptor and the kernel's side of the contract. The same for the signal
//! flavors (`biased-signal`, `fable-signal`), whose section a revoker restarts with a
//! signal to the owner (`crate::sigbarrier`; its unit tests restart a thread caught in a
//! section): the loom models of the rseq step cover them (the same code under loom).
#![cfg(not(loom))]

mod watchdog;

use objmon::protocol::biased::{BiasMode, Biasing, Flavor, KkoRseq, KkoSignal};
use objmon::protocol::fable::{FableRseqHeuristics, FableSignalHeuristics};
use objmon::vm::{BiasConfig, BiasWord, Revocation, Runtime};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use watchdog::within;

/// A runtime revoking by the barrier (learn limit 1), or `None` where this machine cannot
/// (no registered rseq, or the kernel refuses the `_RSEQ` barrier): nothing to test there.
fn runtime<F: Flavor>() -> Option<Arc<Runtime<Biasing<F>>>> {
    // SAFETY: the one signal handler this binary installs (SIGUSR1's, below) has the barrier
    // signal in its mask, and std's fault handlers run only on a fault, which no owner
    // section makes: the -signal flavors' contract (`Runtime::new_unchecked`) holds; the
    // rseq flavors have none.
    let rt = unsafe { Runtime::<Biasing<F>>::new_unchecked(Default::default()) };
    let used = Biasing::<F>::configure(
        &rt,
        BiasConfig {
            revocation: Revocation::Membarrier,
            learn_limit: 1,
        },
    );
    (used == Revocation::Membarrier).then_some(rt)
}

extern "C" fn on_signal(_: libc::c_int) {}

/// The owner locks and unlocks (plain and nested) a biased object two million times while
/// another thread sends it signals as fast as it can: every signal delivered inside a
/// section sends it to the abort handler, whose way out (the slow path) must leave the
/// count exact and the bias in place.
fn abort_handler_keeps_the_count<F: Flavor>() {
    let Some(rt) = runtime::<F>() else {
        eprintln!("{}: no rseq barrier here, skipped", F::NAME);
        return;
    };
    // SAFETY: installs a handler that does nothing (async-signal-safe) for SIGUSR1; the
    // `sigaction` struct is zeroed (no flags), its mask the barrier signal alone (the
    // signal flavors' contract), and it outlives the call.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        if let Some(s) = objmon::vm::barrier_signal() {
            libc::sigaddset(&mut sa.sa_mask, s);
        }
        assert_eq!(libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut()), 0);
    }
    let h = Arc::new(BiasWord::default());
    let done = Arc::new(AtomicBool::new(false));
    let tid = Arc::new(AtomicU64::new(0));
    let start = Arc::new(Barrier::new(2));
    let owner = {
        let (rt, h, done, tid, start) = (
            rt.clone(),
            h.clone(),
            done.clone(),
            tid.clone(),
            start.clone(),
        );
        thread::spawn(move || {
            // SAFETY: pthread_self has no preconditions.
            tid.store(unsafe { libc::pthread_self() } as u64, Ordering::SeqCst);
            let me = rt.attach().unwrap();
            for _ in 0..3 {
                drop(me.enter(&h).unwrap());
            }
            assert_eq!(h.mode(), BiasMode::Biased, "{}", F::NAME);
            start.wait();
            for i in 0..2_000_000u32 {
                let g = me.enter(&h).unwrap();
                if i % 2 == 0 {
                    drop(me.enter(&h).unwrap());
                }
                drop(g);
            }
            assert_eq!(me.lock_count(&h), 0, "{}", F::NAME);
            assert_eq!(h.mode(), BiasMode::Biased, "{}: no revoker here", F::NAME);
            assert_eq!(h.raw() & 0xff00, 0, "{}: rc back to 0", F::NAME);
            done.store(true, Ordering::SeqCst);
        })
    };
    start.wait();
    let t = tid.load(Ordering::SeqCst) as libc::pthread_t;
    let mut sent = 0u64;
    while !done.load(Ordering::SeqCst) {
        // SAFETY: `t` is the owner thread, alive until `done` (it sets `done` last, and we
        // join it below); SIGUSR1 has a no-op handler.
        unsafe { libc::pthread_kill(t, libc::SIGUSR1) };
        sent += 1;
    }
    owner.join().unwrap();
    assert!(sent > 0);
}

/// Mutual exclusion across revocations: an owner keeps locking fresh objects (each biased
/// to it on first use) in a loop of plain and nested holds while a second thread takes each
/// object once, revoking its bias by the rseq barrier in the middle of the owner's steps.
fn barrier_revocation_never_makes_two_owners<F: Flavor>() {
    let Some(rt) = runtime::<F>() else {
        eprintln!("{}: no rseq barrier here, skipped", F::NAME);
        return;
    };
    const OBJECTS: usize = 200;
    let objs: Arc<Vec<BiasWord>> = Arc::new((0..OBJECTS).map(|_| BiasWord::default()).collect());
    let inside: Arc<Vec<AtomicBool>> =
        Arc::new((0..OBJECTS).map(|_| AtomicBool::new(false)).collect());
    // One count per object: the owner moves on to the next object while the second thread
    // still holds the previous one.
    let count: Arc<Vec<AtomicUsize>> =
        Arc::new((0..OBJECTS).map(|_| AtomicUsize::new(0)).collect());
    let biased = Arc::new(AtomicUsize::new(0));
    let critical = |inside: &AtomicBool, count: &AtomicUsize| {
        assert!(!inside.swap(true, Ordering::Relaxed), "two owners at once");
        let c = count.load(Ordering::Relaxed);
        count.store(c + 1, Ordering::Relaxed);
        inside.store(false, Ordering::Relaxed);
    };
    let owner = {
        let (rt, objs, inside, count, biased) = (
            rt.clone(),
            objs.clone(),
            inside.clone(),
            count.clone(),
            biased.clone(),
        );
        thread::spawn(move || {
            let me = rt.attach().unwrap();
            for (i, h) in objs.iter().enumerate() {
                for _ in 0..2 {
                    drop(me.enter(h).unwrap());
                }
                biased.store(i + 1, Ordering::Release);
                for k in 0..2000 {
                    let g = me.enter(h).unwrap();
                    if k % 3 == 0 {
                        let g2 = me.enter(h).unwrap();
                        critical(&inside[i], &count[i]);
                        drop(g2);
                    } else {
                        critical(&inside[i], &count[i]);
                    }
                    drop(g);
                }
            }
        })
    };
    let me = rt.attach().unwrap();
    for (i, h) in objs.iter().enumerate() {
        while biased.load(Ordering::Acquire) <= i {
            thread::yield_now();
        }
        let g = me.enter(h).unwrap();
        critical(&inside[i], &count[i]);
        drop(g);
    }
    owner.join().unwrap();
    for (h, c) in objs.iter().zip(count.iter()) {
        assert_eq!(c.load(Ordering::Relaxed), 2001, "{}", F::NAME);
        assert_eq!(rt.owner_of(h), None);
        assert_ne!(h.mode(), BiasMode::Biased, "revoked");
    }
}

#[test]
fn abort_handler_keeps_the_count_biased() {
    within(120, "biased", abort_handler_keeps_the_count::<KkoRseq>);
}

#[test]
fn abort_handler_keeps_the_count_fable() {
    within(
        120,
        "fable",
        abort_handler_keeps_the_count::<FableRseqHeuristics>,
    );
}

#[test]
fn barrier_revocation_never_makes_two_owners_biased() {
    within(
        120,
        "biased",
        barrier_revocation_never_makes_two_owners::<KkoRseq>,
    );
}

#[test]
fn barrier_revocation_never_makes_two_owners_fable() {
    within(
        120,
        "fable",
        barrier_revocation_never_makes_two_owners::<FableRseqHeuristics>,
    );
}

#[test]
fn abort_handler_keeps_the_count_biased_signal() {
    within(
        120,
        "biased-signal",
        abort_handler_keeps_the_count::<KkoSignal>,
    );
}

#[test]
fn abort_handler_keeps_the_count_fable_signal() {
    within(
        120,
        "fable-signal",
        abort_handler_keeps_the_count::<FableSignalHeuristics>,
    );
}

#[test]
fn signal_revocation_never_makes_two_owners_biased() {
    within(
        120,
        "biased-signal",
        barrier_revocation_never_makes_two_owners::<KkoSignal>,
    );
}

#[test]
fn signal_revocation_never_makes_two_owners_fable() {
    within(
        120,
        "fable-signal",
        barrier_revocation_never_makes_two_owners::<FableSignalHeuristics>,
    );
}
