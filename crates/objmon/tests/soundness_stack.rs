//! The `stack` protocol: promises of the safe API that HotSpot's
//! stack-locking broke, tried from outside. Each test is a regression test: it fails without the
//! code that keeps its promise (the use-after-free of the moved header is also shown by running
//! this binary under `valgrind --error-exitcode=1`). Every check that could hang runs under the
//! watchdog.
#![cfg(not(loom))]

mod watchdog;

use objmon::protocol::mark::MARK_HOST_BITS;
use objmon::protocol::stack::StackWord;
use objmon::vm::{Config, DeflationPolicy, Runtime, Stack};
use std::time::Duration;
use watchdog::within;

/// Host bits to tell a restored header from a lost one.
const HOST: u64 = 0x8000_0000_0000_00a4;

/// Regression: forget a guard, move the stack-locked header word out with `mem::replace`,
/// lock the old location again through a monitor and unlock it. The unlock took the
/// forgotten base record (which the moved word still names) for an inflated one and freed
/// it; the detach then freed the whole record array, and a contender inflating the moved word
/// read freed memory (valgrind: invalid read in `inflate_contended`; without valgrind the
/// displaced host bits come back as garbage). The record must stay valid and keep its
/// displaced header as long as a header can name it.
#[test]
fn moved_stack_locked_header_keeps_its_record() {
    within(60, "moved_stack_locked_header_keeps_its_record", || {
        let rt = Runtime::<Stack>::new(Config {
            deflation: DeflationPolicy::Never,
            ..Config::default()
        });
        let old = std::thread::scope(|s| {
            s.spawn(|| {
                let me = rt.attach().unwrap();
                let mut h = StackWord::new(HOST);
                // A lock held for good, and a header word naming its base record...
                std::mem::forget(me.enter(&h).unwrap());
                // ...moved out; the old location gets a fresh, unlocked header.
                let old = std::mem::replace(&mut h, StackWord::new(0));
                // Make the old location a monitor word (deflation: never), then lock it
                // through the monitor, with no record of its own.
                {
                    let g = me.enter(&h).unwrap();
                    g.wait(Some(Duration::ZERO)).unwrap();
                }
                assert_eq!(me.lock_count(&h), 0, "the forgotten record is not h's");
                let g = me.enter(&h).unwrap();
                assert_eq!(me.lock_count(&h), 1);
                drop(g);
                assert_eq!(me.lock_count(&h), 0);
                assert_eq!(rt.owner_of(&h), None);
                old
                // Detach: the record array goes (or did) while `old` still names a record.
            })
            .join()
            .unwrap()
        });
        // Churn the allocator a little, as a running program would.
        let junk: Vec<Vec<u64>> = (0..64).map(|i| vec![i; 192]).collect();
        let v = std::thread::scope(|s| {
            s.spawn(|| {
                let other = rt.attach().unwrap();
                // The hasher inflates the foreign stack-lock: it reads the record under
                // INFLATING.
                other.identity_hash(&old).unwrap()
            })
            .join()
            .unwrap()
        });
        drop(junk);
        assert_eq!(
            old.host_bits(),
            Some(HOST & MARK_HOST_BITS),
            "the displaced header came back from a live record"
        );
        assert_eq!(rt.peek_identity_hash(&old), Some(v));
    });
}

/// An all-zero header, as `calloc` or a GC heap hands it out. Safe Rust cannot build one
/// (`StackWord::new` and `Default` set the unlocked bits), so this zeroes one in an unsafe
/// block, as a C host's allocator does.
fn zeroed() -> StackWord {
    // SAFETY: a `StackWord` is one `AtomicU64`, for which every bit pattern, all-zero
    // included, is a valid value.
    unsafe { std::mem::zeroed() }
}

/// Regression: the all-zero word is HotSpot's INFLATING marker, so on a zeroed header
/// `try_enter` (documented never to wait) and `enter` could spin forever, waiting for an
/// inflation nobody is doing. All-zero is an unlocked header with no hash and no host bits.
#[test]
fn all_zero_header_is_unlocked() {
    within(30, "all_zero_header_is_unlocked", || {
        let rt = Runtime::<Stack>::with_defaults();
        let me = rt.attach().unwrap();

        let h = zeroed();
        let g = me
            .try_enter(&h)
            .unwrap()
            .expect("a zero header is unlocked");
        drop(g);
        let h = zeroed();
        assert_eq!(h.host_bits(), Some(0));
        assert_eq!(rt.owner_of(&h), None);
        assert_eq!(rt.peek_identity_hash(&h), None);
        assert_eq!(me.lock_count(&h), 0);
        let g = me
            .try_enter(&h)
            .unwrap()
            .expect("a zero header is unlocked");
        assert_eq!(me.lock_count(&h), 1);
        assert_eq!(rt.owner_of(&h), Some(me.id()));
        drop(g);
        assert_eq!(me.lock_count(&h), 0);
        assert_eq!(h.host_bits(), Some(0));

        let h = zeroed();
        {
            let _a = me.enter(&h).unwrap();
            let _b = me.enter(&h).unwrap();
            assert_eq!(me.lock_count(&h), 2);
            // Another thread finds it held and is refused at once.
            std::thread::scope(|s| {
                s.spawn(|| {
                    let other = rt.attach().unwrap();
                    assert!(other.try_enter(&h).unwrap().is_none());
                });
            });
        }
        assert_eq!(rt.owner_of(&h), None);

        let h = zeroed();
        let v = me.identity_hash(&h).unwrap();
        assert_eq!(me.identity_hash(&h), Ok(v));
        assert_eq!(rt.peek_identity_hash(&h), Some(v));
        assert_eq!(h.host_bits(), Some(0));

        // Exit, wait and notify on a zero header that nobody holds are errors, not hangs.
        let h = zeroed();
        assert_eq!(
            me.notify(&h),
            Err(objmon::MonitorError::IllegalMonitorState)
        );
        assert_eq!(
            me.wait(&h, Some(Duration::ZERO)),
            Err(objmon::MonitorError::IllegalMonitorState)
        );

        // A zero header contended while another thread holds it: the contender inflates and
        // gets it after the holder's exit.
        let h = zeroed();
        let g = me.enter(&h).unwrap();
        std::thread::scope(|s| {
            let t = s.spawn(|| {
                let other = rt.attach().unwrap();
                let _g = other.enter(&h).unwrap();
                other.lock_count(&h)
            });
            while rt.stats_snapshot().inflations() == 0 {
                std::thread::yield_now();
            }
            drop(g);
            assert_eq!(t.join().unwrap(), 1);
        });
    });
}

/// `stack`'s owner query rescans the threads for the owner of a stack-locked object as
/// `lightweight`'s does (soundness_lightweight.rs
/// `owner_query_of_an_exited_owners_lock_returns_under_load_all`): with four threads spinning
/// beside it on the 2 cores, a query of an object whose owner detached with a forgotten guard
/// must answer within 2 s. Today it answers at once (the detached thread's record says
/// anonymous owner); the rescans' time bound is the backstop for the records it cannot read.
#[test]
fn owner_query_of_an_exited_owners_lock_returns_under_load() {
    within(60, "stack", || {
        let rt = Runtime::<Stack>::with_defaults();
        let h = StackWord::default();
        std::thread::scope(|s| {
            s.spawn(|| {
                let me = rt.attach().unwrap();
                std::mem::forget(me.enter(&h).unwrap());
            });
        });
        let (owner, took) = watchdog::beside_spinners(4, || {
            let t0 = std::time::Instant::now();
            (rt.owner_of(&h), t0.elapsed())
        });
        assert_eq!(owner, None);
        assert!(took < Duration::from_secs(2), "owner_of took {took:?}");
    });
}
