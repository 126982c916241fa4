//! Loom model of the biased engine's contended fat enter (`biased/slow.rs`,
//! `enter_fat_contended`): a thread that finds a fat monitor held spins on
//! it *running* — not at a safepoint, so a revoker's handshake waits for it — and becomes
//! safe only around the enter that may suspend (`FatMonitor::enter_spun`, which does not
//! spin again). The race: the monitor's holder revokes the contender's bias with a
//! synchronous pair handshake while the contender spins or sleeps on that monitor. It must
//! neither deadlock (the spin is bounded, and the sleeper is safe) nor let two threads into
//! either lock.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p objmon --release
//! --test loom_biased_contended`.
#![cfg(loom)]

mod common;

use common::critical;

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use objmon::protocol::biased::{BiasMode, Biasing, Kko};
use objmon::vm::{
    BiasConfig, BiasWord, Config, Revocation, Runtime, SystemLockConfig, SystemLockVariant,
};

/// Main biases `y` to itself, makes `x` fat, then enters `x` while the other thread holds
/// it (or is about to) and, holding `x`, locks `y`: a revocation of main's bias by a
/// synchronous handshake, which main answers only by polling (after its enter) or by being
/// safe (asleep in the monitor). `spin_limit` 1: the contender's spin is one look.
#[test]
fn fat_contender_spins_running_vs_sync_handshake() {
    let mut b = common::builder(2);
    // Spin-waits with a yield per round (the handshake, the monitor's spin) make long but
    // finite executions.
    b.max_branches = 10_000;
    b.check(|| {
        let rt = Runtime::<Biasing<Kko>>::new(Config {
            max_threads: 4,
            monitor_capacity: 2,
            system_lock: SystemLockConfig {
                variant: SystemLockVariant::Figure7,
                spin_limit: 1,
                spin_yields: 0,
                queue_first: true,
                fair_handoff: None,
            },
            ..Config::default()
        });
        let mode = Revocation::SyncHandshake;
        let bias = BiasConfig {
            revocation: mode,
            learn_limit: 1,
        };
        assert_eq!(Biasing::<Kko>::configure(&rt, bias), mode);
        let x = Arc::new(BiasWord::default());
        let y = Arc::new(BiasWord::default());
        let inside = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let me = rt.attach().unwrap();
        drop(me.enter(&y).unwrap());
        assert_eq!(y.mode(), BiasMode::Biased);
        me.enter(&x).unwrap().notify().unwrap();
        assert_eq!(x.mode(), BiasMode::Fat);

        let (rt2, x2, y2) = (rt.clone(), x.clone(), y.clone());
        let (inside2, count2, done2) = (inside.clone(), count.clone(), done.clone());
        let other = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            let gx = me.enter(&x2).unwrap();
            critical(&inside2, &count2);
            // Revokes main's bias: main may be spinning on `x` (running) or asleep in it.
            drop(me.enter(&y2).unwrap());
            drop(gx);
            done2.store(true, Ordering::Release);
        });

        let gx = me.enter(&x).unwrap();
        critical(&inside, &count);
        drop(gx);
        while !done.load(Ordering::Acquire) {
            me.poll();
            thread::yield_now();
        }
        other.join().unwrap();
        assert_eq!(count.load(Ordering::Relaxed), 2);
        assert_eq!(y.mode(), BiasMode::Thin);
        assert_eq!(rt.owner_of(&x), None);
    });
}
