//! `lock_api::Mutex<objmon::RawMonitor<P>, T>` — a non-reentrant mutex giving
//! `&mut T` — through the scenarios of std's and parking_lot's `Mutex` tests, for every
//! protocol (a `RawMonitor<P>` lives on `P`'s process-wide runtime), plus what `RawMutex`
//! demands of it: a relock from the owner panics instead of handing out a second `&mut T`.
#![cfg(not(loom))]

mod monitor_common;
mod watchdog;

use lock_api::RawMutex as _;
use objmon::RawMonitor;

per_protocol!(30;
    smoke,
    lots_and_lots,
    try_lock,
    try_lock_for_times_out_then_succeeds,
    relock_from_the_owner_panics,
    is_locked,
    panicking_critical_section_unlocks,
    into_inner_and_get_mut,
    debug_output,
    in_a_lock_api_reentrant_mutex,
);

/// A `RawMonitor` of the default protocol in a `static` (`from_raw` with the trait's `INIT`).
static COUNTER: lock_api::Mutex<RawMonitor, u64> = lock_api::Mutex::from_raw(RawMonitor::INIT, 0);

#[test]
fn in_a_static() {
    watchdog::within(30, "static", || {
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..500 {
                        *COUNTER.lock() += 1;
                    }
                });
            }
        });
        assert_eq!(*COUNTER.lock(), 2000);
    });
}

mod checks {
    use lock_api::{Mutex, RawMutex};
    use objmon::{MonitorProtocol, Protocol, RawMonitor};
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::sync::{mpsc, Arc};
    use std::thread;
    use std::time::{Duration, Instant};

    type M<P, T> = Mutex<RawMonitor<P>, T>;

    /// std `smoke`: lock, unlock, lock again; the guard gives `&mut T`.
    pub fn smoke<P: MonitorProtocol>() {
        let m: M<P, Vec<u32>> = Mutex::new(Vec::new());
        m.lock().push(1);
        m.lock().push(2);
        assert_eq!(*m.lock(), [1, 2]);
    }

    /// std `lots_and_lots`: 2·K threads, J increments each, through `&mut u32`; exact.
    pub fn lots_and_lots<P: MonitorProtocol>() {
        const J: u32 = 1000;
        const K: u32 = 3;
        let m: Arc<M<P, u32>> = Arc::new(Mutex::new(0));
        let ts: Vec<_> = (0..2 * K)
            .map(|_| {
                let m = m.clone();
                thread::spawn(move || {
                    for _ in 0..J {
                        *m.lock() += 1;
                    }
                })
            })
            .collect();
        for t in ts {
            t.join().unwrap();
        }
        assert_eq!(*m.lock(), J * K * 2);
    }

    /// std `try_lock`; and, unlike `Monitor`, the owner's `try_lock` fails (no second `&mut`).
    pub fn try_lock<P: MonitorProtocol>() {
        let m: M<P, u32> = Mutex::new(0);
        let mut g = m.try_lock().expect("free");
        *g = 5;
        assert!(
            m.try_lock().is_none(),
            "the owner may not get a second &mut"
        );
        assert!(
            m.try_lock_for(Duration::from_millis(2)).is_none(),
            "nor by waiting for itself"
        );
        thread::scope(|s| {
            s.spawn(|| assert!(m.try_lock().is_none())).join().unwrap();
        });
        drop(g);
        thread::scope(|s| {
            s.spawn(|| assert_eq!(m.try_lock().as_deref(), Some(&5)))
                .join()
                .unwrap();
        });
    }

    /// `RawMutexTimed`: `try_lock_for` while another thread holds the lock waits (at least)
    /// its timeout and fails; once the holder releases, a long `try_lock_for` succeeds.
    pub fn try_lock_for_times_out_then_succeeds<P: MonitorProtocol>() {
        let m: M<P, u32> = Mutex::new(0);
        let (held_tx, held_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        thread::scope(|s| {
            let m = &m;
            s.spawn(move || {
                let mut g = m.lock();
                *g = 1;
                held_tx.send(()).unwrap();
                release_rx.recv().unwrap();
                thread::sleep(Duration::from_millis(2));
                *g = 2;
            });
            held_rx.recv().unwrap();
            let t0 = Instant::now();
            assert!(m.try_lock_for(Duration::from_millis(20)).is_none());
            assert!(
                t0.elapsed() >= Duration::from_millis(20),
                "waited its timeout"
            );
            assert!(m.try_lock_until(Instant::now()).is_none());
            release_tx.send(()).unwrap();
            let g = m
                .try_lock_for(Duration::from_secs(20))
                .expect("released by then");
            assert_eq!(*g, 2);
            drop(g);
            assert!(m
                .try_lock_until(Instant::now() + Duration::from_secs(20))
                .is_some());
        });
        // An unrepresentable timeout is "no timeout".
        assert!(m.try_lock_for(Duration::MAX).is_some());
    }

    /// `lock` from the owning thread panics (with a message that says why) instead of giving
    /// a second `&mut T`; the first guard is still good, and the mutex works afterwards, on
    /// this thread and on others.
    pub fn relock_from_the_owner_panics<P: MonitorProtocol>() {
        let m: M<P, u32> = Mutex::new(0);
        let mut a = m.lock();
        *a = 1;
        let r = catch_unwind(AssertUnwindSafe(|| {
            let _b = m.lock();
        }));
        let msg = r.expect_err("relocking must panic");
        let msg = msg
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| msg.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        assert!(msg.contains("not reentrant"), "message: {msg}");
        *a += 1;
        assert!(m.is_locked());
        drop(a);
        assert!(!m.is_locked(), "the panic did not leave a level behind");
        thread::scope(|s| {
            s.spawn(|| *m.lock() += 1).join().unwrap();
        });
        assert_eq!(*m.lock(), 3);
        assert!(!m.is_locked());
    }

    /// `is_locked` before first use, from the owner, from another thread, after release.
    pub fn is_locked<P: MonitorProtocol>() {
        let m: M<P, ()> = Mutex::new(());
        assert!(!m.is_locked());
        let g = m.lock();
        assert!(m.is_locked());
        thread::scope(|s| {
            s.spawn(|| assert!(m.is_locked())).join().unwrap();
        });
        drop(g);
        assert!(!m.is_locked());
        thread::scope(|s| {
            s.spawn(|| {
                let _g = m.lock();
                assert!(m.is_locked());
            })
            .join()
            .unwrap();
        });
        assert!(!m.is_locked());
    }

    /// std `test_mutex_arc_access_in_unwind` / poisoning: a panic with the guard held unlocks.
    pub fn panicking_critical_section_unlocks<P: MonitorProtocol>() {
        let m: Arc<M<P, i32>> = Arc::new(Mutex::new(1));
        let m2 = m.clone();
        let r = thread::spawn(move || {
            let mut g = m2.lock();
            *g = 2;
            panic!("unwinding on purpose with the lock held");
        })
        .join();
        assert!(r.is_err());
        assert!(!m.is_locked());
        assert_eq!(*m.lock(), 2);
    }

    /// std `test_into_inner`, `test_get_mut`.
    pub fn into_inner_and_get_mut<P: MonitorProtocol>() {
        let mut m: M<P, String> = Mutex::new(String::from("a"));
        m.get_mut().push('b');
        m.lock().push('c');
        assert_eq!(m.into_inner(), "abc");
    }

    /// The raw mutex's `Debug` names its protocol and state.
    pub fn debug_output<P: MonitorProtocol>() {
        let name = <P as Protocol>::NAME;
        let m: M<P, u8> = Mutex::new(3);
        drop(m.lock()); // makes the process-wide runtime, if it was not
                        // SAFETY: only looked at, never locked or unlocked through.
        let raw = unsafe { m.raw() };
        assert_eq!(
            format!("{raw:?}"),
            format!("RawMonitor {{ protocol: {name:?}, locked: false }}")
        );
        let g = m.lock();
        assert_eq!(
            format!("{raw:?}"),
            format!("RawMonitor {{ protocol: {name:?}, locked: true }}")
        );
        drop(g);
        let fresh = <RawMonitor<P> as RawMutex>::INIT;
        assert!(format!("{fresh:?}").contains("locked: false"));
    }

    /// A thread id for `lock_api::ReentrantMutex`: the address of a thread-local.
    pub struct TlsId;

    // SAFETY: a thread-local's address is unique among live threads and non-zero.
    unsafe impl lock_api::GetThreadId for TlsId {
        const INIT: Self = TlsId;
        fn nonzero_thread_id(&self) -> std::num::NonZeroUsize {
            thread_local!(static KEY: u8 = const { 0 });
            KEY.with(|k| std::num::NonZeroUsize::new(k as *const u8 as usize).unwrap())
        }
    }

    /// `lock_api::ReentrantMutex<RawMonitor<P>, _, T>`: lock_api's reentrancy over a
    /// `RawMonitor` (which it locks once per thread, so the relock check never fires);
    /// parking_lot's `smoke`, `is_mutex` and `trylock_works`.
    pub fn in_a_lock_api_reentrant_mutex<P: MonitorProtocol>() {
        type R<P, T> = lock_api::ReentrantMutex<RawMonitor<P>, TlsId, T>;
        let m: Arc<R<P, std::cell::RefCell<u32>>> =
            Arc::new(lock_api::ReentrantMutex::new(std::cell::RefCell::new(0)));
        {
            let a = m.lock();
            let b = m.lock();
            let c = m.try_lock().expect("reentrant try_lock");
            *c.borrow_mut() += 1;
            assert_eq!(*a.borrow(), 1);
            drop((b, c));
            assert!(m.is_owned_by_current_thread());
            let m2 = m.clone();
            thread::spawn(move || assert!(m2.try_lock().is_none()))
                .join()
                .unwrap();
            *a.borrow_mut() = 0;
        }
        let m2 = m.clone();
        let lock = m.lock();
        let child = thread::spawn(move || assert_eq!(*m2.lock().borrow(), 4950));
        for i in 0..100 {
            *m.lock().borrow_mut() += i;
        }
        drop(lock);
        child.join().unwrap();
        assert!(!m.is_locked());
    }
}
