//! The system lock's release variants on real hardware (the loom models, `tests/loom.rs`,
//! check their shape with `membarrier` modelled as a fence): which variant a lock is built
//! as, and that the default release — Figure 7 with the suspender's `membarrier` and no fence
//! of its own (`tasuki.rs`) — loses no wake-up when every contended acquisition suspends.
#![cfg(not(loom))]

mod watchdog;

use objmon::lab::{SystemLockConfig, SystemLockVariant, TasukiLock};
use objmon::vm::Runtime;
use objmon::Fat;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

/// The default is the membarrier release wherever the process can register for the barrier
/// (and Figure 7 where it cannot); the seed's variants stay as asked, with their fence.
#[test]
fn variants_are_built_as_asked() {
    let registered = objmon::vm::init_revocation();
    let default = TasukiLock::new(SystemLockConfig::default());
    if registered {
        assert_eq!(default.variant(), SystemLockVariant::Figure7Membarrier);
        assert!(!default.release_fenced());
    } else {
        assert_eq!(default.variant(), SystemLockVariant::Figure7);
        assert!(default.release_fenced());
    }
    for v in [SystemLockVariant::Figure7, SystemLockVariant::Figure5] {
        let l = TasukiLock::new(SystemLockConfig {
            variant: v,
            ..SystemLockConfig::default()
        });
        assert_eq!(l.variant(), v);
        assert!(l.release_fenced(), "{v:?} releases with a fence");
    }
}

/// The default release on a lock that suspends at every contended acquisition (no spin, no
/// yields), so that releases race with suspends all the time.
fn suspending(fair_handoff: Option<Duration>) -> SystemLockConfig {
    SystemLockConfig {
        variant: SystemLockVariant::Figure7Membarrier,
        spin_limit: 0,
        spin_yields: 0,
        queue_first: false,
        fair_handoff,
    }
}

/// Four threads on two cores hammer one lock that suspends at every contended acquisition
/// (no spin, no yields), so that releases race with suspends all the time. A lost wake-up
/// leaves a thread asleep for good: the watchdog fails the test. Run once without hand-off
/// (the seed's barging) and once with a 1 ns hand-off bound (every suspender asks).
fn hammer(fair_handoff: Option<Duration>, name: &'static str) {
    const THREADS: usize = 4;
    const ROUNDS: u64 = 20_000;
    watchdog::within(120, name, move || {
        let cfg = suspending(fair_handoff);
        let rt = Runtime::<Fat>::with_defaults();
        let lock = Arc::new(TasukiLock::new(cfg));
        let inside = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicU64::new(0));
        let start = Arc::new(Barrier::new(THREADS));
        let hs: Vec<_> = (0..THREADS)
            .map(|_| {
                let (rt, lock, inside, count, start) = (
                    rt.clone(),
                    lock.clone(),
                    inside.clone(),
                    count.clone(),
                    start.clone(),
                );
                std::thread::spawn(move || {
                    let me = rt.attach().unwrap();
                    let core = me.context().core_arc();
                    start.wait();
                    for _ in 0..ROUNDS {
                        // SAFETY: `core` is this thread's own, and each unlock follows this
                        // thread's own lock.
                        unsafe { lock.lock(core) };
                        assert!(!inside.swap(true, Ordering::Relaxed), "two owners at once");
                        count.store(count.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                        inside.store(false, Ordering::Relaxed);
                        unsafe { lock.unlock() };
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(count.load(Ordering::Relaxed), THREADS as u64 * ROUNDS);
        assert!(!lock.is_locked());
        assert!(!lock.has_waiters());
    });
}

#[test]
fn membarrier_release_keeps_mutual_exclusion() {
    hammer(None, "membarrier release, barging");
}

#[test]
fn membarrier_release_with_hand_off_keeps_mutual_exclusion() {
    hammer(
        Some(Duration::from_nanos(1)),
        "membarrier release, hand-off",
    );
}

/// The race a lost wake-up needs, placed at the end of every round, where nothing heals it:
/// thread A holds the lock, thread B calls `lock` (and suspends: no spin), A releases after a
/// delay that varies from round to round (so that some releases land inside B's suspend, from
/// its increment to its compare-and-swap) plus `hold`, and then A waits for B at the round's
/// end. If A's release misses B's count and B were to sleep for good, nobody else would ever
/// release the lock again this round: B would hang and the watchdog fail the test. (On the
/// membarrier release B's first sleep is bounded, `tasuki/suspend.rs`: a missed count costs it at
/// most a millisecond, then it calls the barrier and looks again; with `hold` above a
/// millisecond every round takes that path.)
///
/// What it cannot catch: with the suspender's `membarrier` taken out (and the release's fence
/// still missing) it still passed, three runs of 20,000 rounds. The Dekker's two words, the
/// lock word and `wcount`, share a cache line, so the holder's load of `wcount` cannot be
/// served before its `UNLOCKING` store gets the line, and then the line stays with it until
/// the store commits; the reordering the barrier forbids would need them on two lines. The
/// proof (docs/soundness.md, "The system lock") and the loom models (`tests/loom.rs`: the
/// barrier as a fence on both sides, every timed park allowed to time out, and a model with
/// the release's barrier taken out, where the rescue must save the sleeper) carry that part; this test catches a
/// wake-up lost anywhere else on these paths (the test itself hung, with every variant,
/// while its own hand-shake was wrong).
fn ping_pong(rounds: u64, hold: Duration, fair_handoff: Option<Duration>, name: &'static str) {
    watchdog::within(120, name, move || {
        let cfg = suspending(fair_handoff);
        let rt = Runtime::<Fat>::with_defaults();
        let lock = Arc::new(TasukiLock::new(cfg));
        let held = Arc::new(AtomicU64::new(0));
        let round = Arc::new(Barrier::new(2));
        let (rt2, lock2, held2, round2) = (rt.clone(), lock.clone(), held.clone(), round.clone());
        let b = std::thread::spawn(move || {
            let me = rt2.attach().unwrap();
            let core = me.context().core_arc();
            for r in 1..=rounds {
                round2.wait();
                while held2.load(Ordering::Acquire) != r {
                    std::hint::spin_loop();
                }
                // SAFETY: our own core; the unlock follows our own lock.
                unsafe { lock2.lock(core) };
                unsafe { lock2.unlock() };
                round2.wait();
            }
        });
        let me = rt.attach().unwrap();
        let core = me.context().core_arc();
        let mut x = 0x9e37_79b9_u32;
        for r in 1..=rounds {
            round.wait();
            // SAFETY: as above.
            unsafe { lock.lock(core) };
            held.store(r, Ordering::Release);
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            for _ in 0..x % 512 {
                std::hint::spin_loop();
            }
            if !hold.is_zero() {
                std::thread::sleep(hold);
            }
            unsafe { lock.unlock() };
            round.wait();
        }
        b.join().unwrap();
        assert!(!lock.is_locked());
        assert!(!lock.has_waiters());
    });
}

/// Short holds: the suspender is woken within its first, unordered sleep.
#[test]
fn membarrier_release_loses_no_wake_up() {
    ping_pong(
        20_000,
        Duration::ZERO,
        None,
        "membarrier release, short holds",
    );
}

/// Holds of 1.5 ms: every suspender's first sleep runs out; it calls the barrier in its place
/// in the queue, finds the lock held, and sleeps untimed until the release wakes it (one
/// barrier per round: `perf stat -e syscalls:sys_enter_membarrier` counted 199 for 200).
#[test]
fn membarrier_release_after_an_unordered_sleep_loses_no_wake_up() {
    ping_pong(
        200,
        Duration::from_micros(1_500),
        None,
        "membarrier release, long holds",
    );
}

/// The same with a 1 ns hand-off bound: every suspender asks for the hand-off before its
/// unordered sleep, so the sleep that runs out settles with a HANDOFF request pending, and the
/// release must hand the lock to the sleeper (a lost grant hangs the round; a count or bit
/// left behind fails the final `has_waiters` check). The settle that finds the lock free and
/// takes back the request needs a release that missed the count: loom explores it.
#[test]
fn membarrier_release_after_an_unordered_sleep_with_hand_off_loses_no_wake_up() {
    ping_pong(
        200,
        Duration::from_micros(1_500),
        Some(Duration::from_nanos(1)),
        "membarrier release, long holds, hand-off",
    );
}
