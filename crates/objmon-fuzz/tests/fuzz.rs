//! The fuzzer's own tests: it covers the whole catalog, a short run on every protocol finds
//! nothing that is not a finding, and a printed case replays.
//!
//! The proof that it finds the known holes is `find_*` below, `#[ignore]`d because they
//! pass only while the holes are open: `cargo test --release -p objmon-fuzz --test fuzz --
//! --ignored`.

use objmon_fuzz::{Case, Op::*, Step::*, Surface};

#[test]
fn covers_the_whole_catalog() {
    let targets = objmon_fuzz::targets();
    let names: Vec<_> = targets.iter().map(|t| t.name).collect();
    assert_eq!(names, objmon::vm::names());
    let no_monitor: Vec<_> = targets
        .iter()
        .filter(|t| !t.has_monitor())
        .map(|t| t.name)
        .collect();
    // The three that find a monitor by address, and the five made only by the unsafe
    // `Runtime::new_unchecked` (a promise of the host's): no `MonitorProtocol`.
    assert_eq!(
        no_monitor,
        [
            "monitor-cache",
            "cacao",
            "cacao-seed",
            "lightweight",
            "lightweight-seed",
            "lightweight-table",
            "biased-signal",
            "fable-signal"
        ]
    );
}

#[test]
fn a_plain_case_passes_everywhere() {
    let case = Case {
        surface: Surface::Vm,
        steps: vec![
            Do(0, Lock(0)),
            Do(0, Lock(0)),
            Do(1, TryLock(0)),
            Do(0, Query(0)),
            Do(0, Unlock(0)),
            Do(0, Unlock(0)),
            Do(1, TryLock(0)),
            Do(1, Wait(0, Some(1))),
            End(true),
            Do(2, Lock(1)),
            Do(2, Wait(1, None)),
            Do(0, Lock(1)),
            Do(0, Notify(1)),
            Do(0, Unlock(0)),
            Do(1, Query(1)),
        ],
    };
    for t in objmon_fuzz::targets() {
        t.run(&case, t.adversary(false, false)).unwrap();
        if t.has_monitor() {
            let m = Case {
                surface: Surface::Monitor,
                ..case.clone()
            };
            t.run(&m, t.adversary(false, false)).unwrap();
        }
    }
}

fn finds(protocol: &str, case: Case, what: &str) {
    let e = objmon_fuzz::replay(protocol, &case).expect_err("the hole is closed");
    assert!(e.contains(what), "{e}");
}

/// Hole: `thin`'s forgotten hold + `mem::swap` with an inflated monitor, then a nested
/// lock of what now sits at the old address: another thread gets the lock.
#[test]
#[ignore = "passes only while the hole is open (f46a3d1)"]
fn find_thin_forget_swap_two_owners() {
    let steps = vec![
        Do(0, Lock(0)),
        Do(0, Forget(0)),
        Do(1, Lock(1)),
        Do(1, Wait(1, Some(1))),
        Swap(0, 1),
        Do(0, Lock(0)),
        Do(0, Lock(0)),
        Do(0, Unlock(0)),
        Do(1, TryLock(0)),
    ];
    finds(
        "thin",
        Case {
            surface: Surface::Monitor,
            steps,
        },
        "two owners",
    );
}

/// Hole: `biased`'s forgotten hold + `mem::swap`: the object at the old address stays held.
#[test]
#[ignore = "passes only while the hole is open (f46a3d1)"]
fn find_biased_forget_swap_stays_held() {
    let steps = vec![
        Do(0, Lock(0)),
        Do(0, Forget(0)),
        Swap(0, 1),
        Do(0, Lock(0)),
        Do(0, Unlock(0)),
        Do(0, Query(0)),
    ];
    finds(
        "biased",
        Case {
            surface: Surface::Monitor,
            steps,
        },
        "is_owned_by_current_thread",
    );
}

/// Hole: `thin`'s hash parked while held once, then the unlocked header replaced.
#[test]
#[ignore = "passes only while the hole is open (f46a3d1)"]
fn find_thin_hash_after_replace() {
    let steps = vec![
        Do(0, Lock(0)),
        Do(1, Hash(0)),
        Do(0, Unlock(0)),
        Replace(0),
        Do(1, Hash(3)),
    ];
    finds(
        "thin",
        Case {
            surface: Surface::Vm,
            steps,
        },
        "identity hash changed",
    );
}

/// Found by objmon-fuzz on `biased` (seed 1 on a 2-core machine): after a hash asked while
/// another thread held the object, a wait, a `mem::swap` and forgotten guards, the object
/// moved to that address answers `peek_identity_hash` with a hash it was never given.
#[test]
fn biased_peek_after_swap_sees_no_inherited_hash() {
    let case = Case {
        surface: Surface::Vm,
        steps: vec![
            Do(1, Lock(2)),
            Do(2, Hash(2)),
            Do(1, Wait(0, Some(0))),
            Do(2, Peek(0)),
            Do(1, Unlock(0)),
            Do(1, NotifyAll(2)),
            Swap(2, 0),
            Do(1, Wait(2, Some(0))),
            Do(1, Forget(0)),
            Do(1, Hash(0)),
            Do(1, Forget(1)),
            Do(1, Unlock(1)),
            Do(0, NotifyAll(0)),
            Do(0, TryLockFor(0, 13)),
            Do(0, TryLock(2)),
            Do(1, Lock(0)),
            Do(1, Forget(1)),
            Do(2, Forget(1)),
            Do(2, Lock(2)),
            Do(2, Lock(0)),
            Do(1, Unlock(0)),
            Do(1, Peek(2)),
            Swap(2, 0),
            Do(2, Lock(0)),
            Do(1, Peek(0)),
            Do(2, Unlock(1)),
            Do(2, Unlock(1)),
            Do(2, Forget(1)),
            Do(1, Forget(1)),
            Do(2, Unlock(2)),
        ],
    };
    for _ in 0..3 {
        if let Err(e) = objmon_fuzz::replay("biased", &case) {
            panic!("{e}");
        }
    }
}

/// The `lock_api::Mutex<RawMonitor<P>, T>` surface on every protocol that has it: locks,
/// try-locks (the holder's answers `None`: not reentrant), timed and untimed waits on the
/// bound condvar, notifies with and without the mutex held, a forgotten guard, a swap.
#[test]
fn a_plain_case_passes_on_lock_api() {
    let case = Case {
        surface: Surface::LockApi,
        steps: vec![
            Do(0, Lock(0)),
            Do(0, TryLock(0)),
            Do(0, TryLockFor(0, 2)),
            Do(1, TryLock(0)),
            Do(0, Query(0)),
            Do(1, Query(0)),
            Do(0, Wait(0, Some(1))),
            Do(0, Unlock(0)),
            Do(1, TryLock(0)),
            Do(1, Unlock(0)),
            Do(2, Lock(1)),
            Do(2, Wait(1, None)),
            Do(0, Notify(1)), // without the mutex: takes it for the notify
            Do(2, Unlock(0)),
            Do(1, Lock(1)),
            Do(1, Wait(1, None)),
            Do(0, Lock(1)),
            Do(0, NotifyAll(1)), // holding it
            Do(0, Unlock(0)),
            Do(0, Notify(2)), // nobody waits
            Do(1, Burst(2, 4)),
            Do(2, Burst(2, 4)),
            Do(0, Lock(2)),
            Do(0, Forget(0)),
            Do(1, TryLock(2)),
            End(true),
            Swap(0, 2),
            Do(1, Query(0)),
            Do(1, TryLock(0)),
            Do(2, Lock(2)),
            Do(2, Unlock(0)),
            ThreadExit(1, Some(1)),
            End(false),
            Do(1, Lock(1)),
        ],
    };
    let mut ran = 0;
    for t in objmon_fuzz::targets()
        .into_iter()
        .filter(|t| t.has_monitor())
    {
        t.run(&case, t.adversary(false, false))
            .unwrap_or_else(|e| panic!("{}: {e}", t.name));
        ran += 1;
    }
    assert_eq!(ran, 10);
}

/// A condvar's `notify_one` with two waiters wakes exactly one (Java's notify): after it,
/// one waiter returns, the mutex is free once that one unlocks, and the other is still
/// waiting until the next notify. Once with an event sink, whose `MonitorNotify` must have
/// taken one waiter out of the wait set.
#[test]
fn notify_one_of_two_waiters_wakes_one_on_lock_api() {
    let steps = vec![
        Do(0, Lock(0)),
        Do(0, Wait(0, None)),
        Do(1, Lock(0)),
        Do(1, Wait(0, None)),
        Do(2, Notify(0)), // without the mutex: takes it, wakes one of T0, T1
        Do(0, Unlock(0)), // whichever returned (the other is still waiting: skipped)
        Do(1, Unlock(0)),
        Do(2, TryLock(0)), // free: the other waiter did not wake
        Do(2, Notify(0)),  // holding it: wakes the other
        Do(2, Unlock(0)),
        Do(0, Unlock(0)),
        Do(1, Unlock(0)),
        Do(2, TryLock(0)),
    ];
    let before = objmon_fuzz::notify_one_of_many_asked();
    let mut ran = 0;
    for t in objmon_fuzz::targets()
        .into_iter()
        .filter(|t| t.has_monitor())
    {
        for events in [false, true] {
            let mut steps = steps.clone();
            if events {
                steps.insert(0, Events(objmon_fuzz::Hostile::Calm));
            }
            let case = Case {
                surface: Surface::LockApi,
                steps,
            };
            t.run(&case, t.adversary(false, false))
                .unwrap_or_else(|e| panic!("{}: {e}", t.name));
            ran += 1;
        }
    }
    assert_eq!(ran, 20);
    assert!(objmon_fuzz::notify_one_of_many_asked() >= before + 20);
}

/// Found by objmon-fuzz on `fat` (the CI invocation, seed 1, lock-api surface, after 8783
/// cases): at a phase end the driver rescued the first waiter, T1 on #1, whose object the
/// other waiter, T2 (waiting on #2), holds: nobody could lock #1. It now rescues a waiter
/// whose object an idle worker can lock first (T2's), which frees #1.
#[test]
fn a_waiter_holding_what_another_waits_on_is_rescued_first() {
    let case = Case {
        surface: Surface::LockApi,
        steps: vec![
            Do(0, Lock(0)),
            Swap(0, 1),
            Do(0, Lock(0)),
            Do(1, Lock(2)),
            Do(0, Wait(0, None)),
            Do(1, Lock(3)),
            Do(1, Wait(2, None)),
        ],
    };
    for t in objmon_fuzz::targets()
        .into_iter()
        .filter(|t| t.has_monitor())
    {
        for surface in [Surface::LockApi, Surface::Monitor, Surface::Vm] {
            let case = Case {
                surface,
                ..case.clone()
            };
            t.run(&case, t.adversary(false, false))
                .unwrap_or_else(|e| panic!("{} ({surface:?}): {e}", t.name));
        }
    }
}

/// `RawMonitor` is not reentrant: a lock by the thread that holds it panics, documented in
/// `raw.rs`. The driver expects that panic (and checks its message): the case passes because
/// the panic came, and the counter shows that the lock was made, not skipped.
#[test]
fn a_relock_on_lock_api_panics_as_documented() {
    let case = Case {
        surface: Surface::LockApi,
        steps: vec![
            Do(0, Lock(0)),
            Do(0, Lock(0)),
            Do(1, TryLock(0)), // still held by T1: the panic took nothing and released nothing
            Do(0, Unlock(0)),
            Do(1, Lock(0)),
            Do(1, Forget(0)),
            Do(1, Lock(0)), // held through a forgotten guard: the same panic
        ],
    };
    for t in objmon_fuzz::targets()
        .into_iter()
        .filter(|t| t.has_monitor())
    {
        let before = objmon_fuzz::relock_panics_checked();
        t.run(&case, t.adversary(false, false))
            .unwrap_or_else(|e| panic!("{}: {e}", t.name));
        assert!(
            objmon_fuzz::relock_panics_checked() >= before + 2,
            "{}: the relocks were skipped, not checked",
            t.name
        );
    }
}

/// Found by objmon-fuzz on `thin` (seed 103): a hash asked while another thread holds the
/// object once is parked by address until that owner's release; the owner forgot its guard,
/// so no release comes, and a move of the header left the entry behind: the moved object's
/// next hash call drew a new hash (failed at 9f8432e). A hash chosen under a hold of a thread
/// that once had one parked is now pinned to the header's host bits (`hash::pinned`), so the
/// next call draws the same one; the model checks the hash strictly and lets only `peek` miss
/// the entry left behind (`docs/soundness.md` §6).
#[test]
fn thin_hash_parked_under_a_forgotten_hold_survives_a_move() {
    let cases = [
        // Held once: the hasher waits its bound, then parks a loose entry.
        vec![
            Do(2, Lock(1)),
            Do(2, Forget(0)),
            Do(0, Hash(1)),
            Rebox(1),
            Do(0, Hash(1)),
            Do(1, Hash(1)),
        ],
        // Held nested: parked at once; then the header is swapped with a fresh one.
        vec![
            Do(2, Lock(1)),
            Do(2, Lock(1)),
            Do(2, Forget(1)),
            Do(2, Forget(0)),
            Do(0, Hash(1)),
            Swap(1, 2),
            Do(0, Hash(2)),
            Do(0, Hash(1)),
            Do(1, Peek(1)),
        ],
        // Moved, then the owner ends its thread: the next hasher inflates for the gone owner.
        vec![
            Do(2, Lock(1)),
            Do(2, Lock(1)),
            Do(2, Forget(1)),
            Do(2, Forget(0)),
            Do(0, Hash(1)),
            Replace(1),
            ThreadExit(2, None),
            End(false),
            Do(0, Hash(3)),
            Do(1, Hash(1)),
        ],
    ];
    for steps in cases {
        let case = Case {
            surface: Surface::Vm,
            steps,
        };
        objmon_fuzz::replay("thin", &case).unwrap();
    }
    // Without the move, `peek` too is checked strictly.
    let strict = Case {
        surface: Surface::Vm,
        steps: vec![
            Do(2, Lock(1)),
            Do(2, Forget(0)),
            Do(0, Hash(1)),
            Do(1, Peek(1)),
            Do(0, Hash(1)),
        ],
    };
    objmon_fuzz::replay("thin", &strict).unwrap();
}

/// Found by objmon-fuzz on `biased` (lock-api surface, seed 11): a guard forgotten at one
/// address, that object swapped away, a third object biased to the same thread by a burst,
/// then swapped to the address the forgotten hold's record names: it inherits the hold, as
/// documented (`biased.rs`, "A forgotten guard, then a move"), and another thread's lock of it
/// blocks for good. The model now knows nothing more of any object moved after a forgotten
/// hold under `biased` / `fable` (`Model::forgot_by_address`); before, it expected that lock
/// to return at once and reported a hang.
#[test]
fn biased_forgotten_record_is_inherited_by_a_header_biased_to_its_owner() {
    let case = Case {
        surface: Surface::LockApi,
        steps: vec![
            Do(2, Lock(1)),
            Do(2, Forget(0)),
            Swap(0, 1),
            Do(0, Lock(0)),
            Do(2, Burst(2, 1)),
            Do(0, Lock(1)),
            Swap(2, 1),
            Do(0, Lock(1)),
        ],
    };
    objmon_fuzz::replay("biased", &case).unwrap();
}

/// A notify through lock_api's condvar by a thread that does not hold the mutex, while
/// another holds it and a thread waits: the notifier blocks until the release, then takes
/// the mutex, notifies and lets it go; the waiter returns notified.
#[test]
fn lock_api_notify_without_the_mutex_waits_for_the_holder() {
    for p in ["thin", "fat", "biased", "tasuki"] {
        let case = Case {
            surface: Surface::LockApi,
            steps: vec![
                Do(0, Lock(0)),
                Do(0, Wait(0, None)),
                Do(1, Lock(0)),
                Do(2, Notify(0)),
                Do(1, Unlock(0)),
                Do(2, Lock(0)),
            ],
        };
        objmon_fuzz::replay(p, &case).unwrap();
    }
}

/// Found by objmon-fuzz on `stack` (seed 304 of `cargo xtask fuzz --minutes 5 --seed 300`,
/// at 41f4464; failed about 1 run in 13, by schedule). T1 holds #0 twice through guards it
/// forgets, so its lock records keep a base and a recursive record for that address; a swap
/// brings #2 there; T1 gets #2 through its monitor (contended: no record pushed) and unlocks
/// it: the unlock took the stale recursive record on top for its own and returned without
/// exiting the monitor, which stayed owned by T1 for good. Now a recursive record counts only
/// while the word names its base record or that base was inflated; otherwise both are
/// orphaned and the exit goes on to the monitor; an inflated base record counts only for the
/// monitor it was inflated into (`LockRecord::inflated` holds its index). Run 50 times: the
/// schedule decides.
#[test]
fn stack_forgotten_recursive_hold_then_swap() {
    let case = Case {
        surface: Surface::Monitor,
        steps: vec![
            Do(1, Lock(1)),
            Swap(1, 0),
            Do(0, Lock(1)),
            Do(0, Lock(1)),
            Do(0, Forget(0)),
            Do(0, Forget(0)),
            Swap(1, 2),
            Do(1, Lock(1)),
            Do(0, Lock(1)),
            End(false),
            Do(1, Query(1)),
        ],
    };
    // The same after a wait, which inflated the lock before the guards were forgotten: the
    // base record's `inflated` flag said "current" for whatever monitor the address named.
    let after_wait = Case {
        surface: Surface::Monitor,
        steps: vec![
            Do(1, Lock(1)),
            Swap(1, 0),
            Do(0, Lock(1)),
            Do(0, Lock(1)),
            Do(0, Wait(1, Some(0))),
            Do(0, Forget(0)),
            Do(0, Forget(0)),
            Swap(1, 2),
            Do(1, Lock(1)),
            Do(0, Lock(1)),
            End(false),
            Do(0, Query(1)),
        ],
    };
    for _ in 0..50 {
        objmon_fuzz::replay("stack", &case).unwrap();
        objmon_fuzz::replay("stack", &after_wait).unwrap();
    }
}

/// Found by objmon-fuzz on `stack` (the CI invocation, seed 1, after 11166 cases): a header
/// held through a forgotten guard, swapped away and back, with a nested try-lock and an
/// identity hash while it sat in the other slot: `is_locked` / `owner_of` said free while
/// the thread still held it.
#[test]
fn stack_forget_swap_hash_keeps_the_hold() {
    use objmon_fuzz::{Case, Op::*, Step::*, Surface};
    let case = Case {
        surface: Surface::Vm,
        steps: vec![
            Do(0, Lock(2)),
            Do(0, Forget(0)),
            Swap(2, 1),
            Do(0, TryLock(1)),
            Do(0, Hash(1)),
            Swap(1, 2),
            Do(0, Query(2)),
        ],
    };
    if let Err(e) = objmon_fuzz::replay("stack", &case) {
        panic!("{e}");
    }
}

/// Found by objmon-fuzz on `thin` (`cargo xtask fuzz --minutes 60 --protocol thin --seed
/// 600`, seed 773, after 436 cases): a `lock_api` condvar notified without the mutex while
/// another thread holds it blocks until the holder's release, and its `MonitorNotify` event
/// arrives when the blocked notify returns. The sink's check took only a notify that
/// returned at once for a notify ("not a notify"): the fuzzer's false alarm, not the
/// library's.
#[test]
fn thin_blocked_lock_api_notify_reports_its_notify() {
    use objmon_fuzz::Hostile::*;
    use objmon_fuzz::{Case, Op::*, Step::*, Surface};
    let case = Case {
        surface: Surface::LockApi,
        steps: vec![
            Events(Calm),
            Do(2, Lock(0)),
            Do(2, Wait(0, None)),
            Do(1, Lock(3)),
            Do(0, Notify(3)),
        ],
    };
    for _ in 0..20 {
        if let Err(e) = objmon_fuzz::replay("thin", &case) {
            panic!("{e}");
        }
    }
}

/// Found by objmon-fuzz on `biased` (seed 1219 of `cargo xtask fuzz --minutes 60 --protocol
/// biased --seed 1200`, at 8248ea3; shrunk by hand from its 8 steps): T2 forgets a hold of #1,
/// biased to it, and exits; a phase end (here the replace's) lets it go. `biased` and `fable`
/// count a biased hold in the owner's lock records, which end with the thread, so the
/// object is free (documented: `biased.rs`, soundness_biased.rs
/// `forgotten_hold_when_its_thread_exits`); the model held it for good, as for every other
/// protocol, and reported "is_locked says false". Now an object held by an exiting thread
/// on those two protocols is asked nothing more.
#[test]
fn biased_thread_exit_with_a_forgotten_hold() {
    let case = Case {
        surface: Surface::Vm,
        steps: vec![
            Do(1, Lock(1)),
            Do(1, Forget(0)),
            ThreadExit(1, None),
            Replace(2),
            Do(0, Query(1)),
        ],
    };
    for protocol in ["biased", "fable"] {
        if let Err(e) = objmon_fuzz::replay(protocol, &case) {
            panic!("{protocol}: {e}");
        }
    }
}

/// Calls inside `in_native` on every protocol: unlocks (guarded and unstructured), queries
/// and hashes run as outside; a try-lock there is refused with `Err(InNative)` by the biased
/// protocols (checked by the model: anything else fails the case) and works elsewhere. The
/// trace shows the calls were made in native.
#[test]
fn calls_in_native_pass_everywhere() {
    use objmon_fuzz::NativeOp;
    let case = Case {
        surface: Surface::Vm,
        steps: vec![
            Do(0, Lock(0)),
            Do(0, Lock(0)),
            Do(0, Native(NativeOp::Query(0))),
            Do(0, Native(NativeOp::Unlock(0))),
            Do(1, Native(NativeOp::Hash(0))),
            Do(0, Native(NativeOp::TryLock(1))),
            Do(0, Native(NativeOp::TryLock(0))),
            Do(0, Native(NativeOp::Unlock(0))),
            Do(1, Native(NativeOp::TryLock(0))),
            Do(1, Enter(2)),
            Do(1, Native(NativeOp::Exit(2))),
            Do(2, Native(NativeOp::Hash(2))),
            Do(2, Lock(2)),
            Do(1, Query(2)),
        ],
    };
    let before = objmon_fuzz::native_calls();
    for t in objmon_fuzz::targets() {
        if let Err(e) = t.run(&case, t.adversary(false, false)) {
            panic!("{}: {e}", t.name);
        }
    }
    let after = objmon_fuzz::native_calls();
    // Other tests of this binary may fuzz meanwhile: at least this case's calls.
    let protocols = objmon_fuzz::targets().len() as u64;
    assert!(
        after.0 - before.0 >= 9 * protocols,
        "{before:?} -> {after:?}"
    );
    // Two try-locks in native, refused on the 8 biased protocols.
    assert!(after.1 - before.1 >= 2 * 8, "{before:?} -> {after:?}");
}

/// Found by objmon-fuzz on `biased` (seed 2255 of `cargo xtask fuzz --minutes 60 --protocol
/// biased --seed 2200`, at f807b6c, `lock-api` surface): T3 forgets a hold of #1 at slot 2's
/// address, then locks and unlocks #0, so #0 is biased to it too; a swap brings #0 to that
/// address, where it inherits the forgotten hold (the documented limit of `biased` /
/// `fable`: `biased.rs`, "A forgotten guard, then a move"). The model asks nothing more of a
/// moved object on those protocols, but a thread-local destructor's try-lock at thread
/// exit still expected #0 free, and could not get it in 1 s. Now that try-lock is not asked
/// of such an object either.
#[test]
fn biased_tls_destructor_skips_an_object_moved_after_a_forgotten_hold() {
    let case = Case {
        surface: Surface::LockApi,
        steps: vec![
            Do(2, Lock(2)),
            Swap(2, 1),
            Do(2, Lock(2)),
            Do(2, Forget(0)),
            Do(2, Lock(0)),
            Swap(2, 0),
            Do(2, Lock(2)),
            ThreadExit(0, Some(2)),
        ],
    };
    for protocol in ["biased", "fable"] {
        if let Err(e) = objmon_fuzz::replay(protocol, &case) {
            panic!("{protocol}: {e}");
        }
    }
}

/// Found by objmon-fuzz on `lightweight` (seed 2457 of `cargo xtask fuzz --minutes 60
/// --protocol lightweight --seed 2400`, at f807b6c; about 1 run in 4, by schedule), a false
/// alarm of the driver: T1 waits on #0 with two levels it forgot (the wait releases them),
/// T2 locks #0 and waits on it too. A notify-all wakes both; if T1 takes #0 back first, it
/// holds it again for good (its levels are forgotten) and T2 can never return: "the phase
/// cannot end: T2 stays Waiting". The model now lets nobody else wait on, or block for, an
/// object that a waiter with forgotten levels will take back, and that waiter does not
/// wait beside others. Run 50 times.
#[test]
fn lightweight_waiter_with_forgotten_levels_is_not_waited_beside() {
    let case = Case {
        surface: Surface::Vm,
        steps: vec![
            Do(0, Lock(0)),
            Do(0, Forget(1)),
            Do(0, Lock(2)),
            Do(2, Lock(0)),
            Do(0, Unlock(1)),
            Do(0, Wait(2, Some(2))),
            Do(0, Hash(2)),
            Do(0, Lock(0)),
            Do(0, Forget(1)),
            Do(0, Wait(3, None)),
            Do(2, Unlock(0)),
            Do(2, Unlock(1)),
            Do(1, Lock(0)),
            Do(2, Hash(0)),
            Do(1, Wait(0, None)),
        ],
    };
    for run in 0..50 {
        if let Err(e) = objmon_fuzz::replay("lightweight", &case) {
            panic!("run {run}: {e}");
        }
    }
}

/// Found by objmon-fuzz on `lightweight-table` (seed 2718 of `cargo xtask fuzz --minutes 60
/// --protocol lightweight-table --seed 2600`, at f807b6c; the seventh replay failed there), the blocked-locker
/// side of `lightweight_waiter_with_forgotten_levels_is_not_waited_beside`: T2's lock of #0
/// blocked behind T3 while T1 waited on #0 with a level it forgot; the notify-all let T1 take
/// #0 back first, for good, and T2 stayed `Acquiring`. Such a lock is now skipped. The case as
/// shrunk (33 steps), run 30 times.
#[test]
fn lightweight_table_lock_behind_a_waiter_with_forgotten_levels() {
    use objmon_fuzz::{Case, Op::*, Step::*, Surface};
    let case = Case {
        surface: Surface::Vm,
        steps: vec![
            Do(0, Wait(1, Some(0))),
            Do(0, Lock(0)),
            Do(0, Forget(1)),
            Do(0, Unlock(0)),
            Do(2, Hash(0)),
            Do(0, Lock(1)),
            Do(0, Wait(1, Some(0))),
            Do(0, Wait(1, Some(0))),
            Do(0, TryLock(0)),
            Do(1, Unlock(0)),
            Do(2, NotifyAll(0)),
            Do(0, Query(1)),
            Do(0, Wait(1, Some(2))),
            Do(0, Unlock(0)),
            Do(0, Query(0)),
            Do(2, Wait(0, Some(2))),
            Do(2, Query(0)),
            Do(0, Wait(0, Some(1))),
            Do(0, Wait(3, None)),
            Do(0, Query(2)),
            Do(2, Enter(2)),
            Do(2, Forget(1)),
            Do(0, Lock(1)),
            Do(0, Query(1)),
            Do(0, Lock(0)),
            Do(0, Unlock(0)),
            Do(2, Lock(0)),
            Do(2, Hash(1)),
            Do(0, Lock(1)),
            Do(0, Forget(0)),
            Do(0, TryLock(0)),
            Do(2, NotifyAll(0)),
            Do(1, Lock(0)),
        ],
    };
    for run in 0..30 {
        if let Err(e) = objmon_fuzz::replay("lightweight-table", &case) {
            panic!("run {run}: {e}");
        }
    }
}
