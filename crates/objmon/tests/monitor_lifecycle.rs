//! The life of a thread that uses `Monitor<T>` without attaching — attached
//! on first use, detached at exit, one identity with the embedder's `rt.attach()`, monitors
//! used from thread-local destructors while the thread exits, guards forgotten at exit — and
//! the type's static promises (size, `Send`/`Sync`). Every protocol, on its process-wide
//! runtime and on its own; the counts (`attached_threads`, ids) are checked exactly only on a
//! runtime of the test's own, since the process-wide ones are shared with the other tests.
#![cfg(not(loom))]

mod monitor_common;
mod watchdog;

use objmon::vm::Runtime;
use objmon::{Monitor, RawMonitor};
use std::cell::{Cell, RefCell};
use std::sync::Arc;

monitor_tests!(30;
    detached_at_exit,
    id_reused_after_exit,
    attach_twice_is_one_identity,
    handle_detach_keeps_the_monitors_identity,
    destructor_after_first_use_locks,
    destructor_registered_before_first_use_locks,
    destructor_is_the_first_use,
    guard_in_a_thread_local_outlives_the_reaper,
    forgotten_guard_at_exit,
    bias_owner_blocked_or_gone,
    failed_try_lock_in_a_late_destructor,
);

per_protocol!(30;
    ids_are_recycled_and_exhaustion_panics,
    raw_monitor_at_exit,
);

/// Monitors in statics (`const fn`), on the default protocol and on another.
static HITS: Monitor<Cell<u64>> = Monitor::new(Cell::new(0));
static FABLE_HITS: Monitor<Cell<u64>, objmon::Fable> = Monitor::with_protocol(Cell::new(0));

#[test]
fn monitors_in_statics() {
    watchdog::within(30, "statics", || {
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..500 {
                        let g = HITS.lock();
                        g.set(g.get() + 1);
                        let f = FABLE_HITS.lock();
                        f.set(f.get() + 1);
                    }
                });
            }
        });
        assert_eq!(HITS.lock().get(), 2000);
        assert_eq!(FABLE_HITS.lock().get(), 2000);
    });
}

/// Regression tests: in a thread-local destructor that runs after the crate's own thread-locals
/// with destructors are gone, an attach must still give the thread's one identity (it made a
/// new one per attach while `handle.rs` kept its list in a thread-local with a destructor).
mod late_destructor {
    use crate::checks::identity_in_a_late_destructor;
    use crate::monitor_common::{run, Own, Shared};

    #[test]
    fn thin_own() {
        run(
            30,
            Own::<objmon::Thin>::new(),
            identity_in_a_late_destructor,
        );
    }

    #[test]
    fn fable_global() {
        run(
            30,
            Shared::<objmon::Fable>::new(),
            identity_in_a_late_destructor,
        );
    }
}

/// Regression tests: an automatic attachment made after the reaper ran (an orphan from birth)
/// by an operation that takes no lock level (a failed `try_lock`) must be freed too (it was
/// freed only by the release of a last level, so the exited thread stayed attached).
mod late_try_lock {
    use crate::checks::late_try_lock_detaches;
    use crate::monitor_common::{run, Own};

    #[test]
    fn thin_own() {
        run(30, Own::<objmon::Thin>::new(), late_try_lock_detaches);
    }

    #[test]
    fn fable_own() {
        run(30, Own::<objmon::Fable>::new(), late_try_lock_detaches);
    }
}

/// `size_of::<Monitor<u64>>()` is at most 16 bytes with the default protocol; every
/// protocol's sizes are printed (`--nocapture`).
#[test]
fn sizes() {
    use std::mem::size_of;
    macro_rules! row {
        ($($p:ident),*) => {$(
            eprintln!(
                "{:<18} header {:>2} B  Monitor<u64> {:>2} B  Monitor<u64, P, Arc<Runtime>> {:>2} B  \
                 RawMonitor {:>2} B  Monitor<()> {:>2} B",
                <objmon::$p as objmon::Protocol>::NAME,
                size_of::<<objmon::$p as objmon::Protocol>::Header>(),
                size_of::<Monitor<u64, objmon::$p>>(),
                size_of::<Monitor<u64, objmon::$p, Arc<Runtime<objmon::$p>>>>(),
                size_of::<RawMonitor<objmon::$p>>(),
                size_of::<Monitor<(), objmon::$p>>(),
            );
            assert_eq!(
                size_of::<RawMonitor<objmon::$p>>(),
                size_of::<<objmon::$p as objmon::Protocol>::Header>(),
                "a RawMonitor is its header"
            );
        )*};
    }
    row!(Fat, Thin, ThinSeed, Tasuki, Stack, Biased, BiasedSeed, Fable);
    assert!(size_of::<Monitor<u64>>() <= 16);
    assert!(
        size_of::<Monitor<u32>>() <= 8,
        "a 4-byte header beside a u32"
    );
}

/// `Monitor<T>: Send + Sync` when `T: Send` (not `Sync`: the lock hands `T` from thread to
/// thread), whatever the protocol and runtime; the same for `RawMonitor` in a `lock_api`
/// mutex. (That guards are neither `Send` nor `Sync` is a compile-fail doc-test.)
#[test]
fn send_and_sync() {
    fn send_sync<T: Send + Sync + ?Sized>() {}
    send_sync::<Monitor<Cell<u64>>>();
    send_sync::<Monitor<RefCell<Vec<String>>>>();
    send_sync::<Monitor<[Cell<u8>]>>();
    send_sync::<Monitor<dyn FnMut() + Send>>();
    send_sync::<Monitor<Cell<u8>, objmon::Fable, Arc<Runtime<objmon::Fable>>>>();
    send_sync::<Monitor<Cell<u8>, objmon::Tasuki>>();
    send_sync::<RawMonitor>();
    send_sync::<RawMonitor<objmon::ThinSeed>>();
    send_sync::<lock_api::Mutex<RawMonitor, Cell<u8>>>();
}

thread_local! {
    /// Closures run by this thread-local's destructor, at thread exit.
    static AT_EXIT: AtExit = const { AtExit(RefCell::new(Vec::new())) };
    /// Values (guards) dropped by this thread-local's destructor, at thread exit.
    static KEPT: Kept = const { Kept(RefCell::new(Vec::new())) };
}

struct AtExit(RefCell<Vec<Box<dyn FnOnce()>>>);

impl Drop for AtExit {
    fn drop(&mut self) {
        for f in self.0.take() {
            f();
        }
    }
}

struct Kept(RefCell<Vec<Box<dyn std::any::Any>>>);

impl Drop for Kept {
    fn drop(&mut self) {
        drop(self.0.take());
    }
}

/// Runs `f` in this thread's thread-local destructors. The first call registers the
/// destructor: before the thread's first monitor operation, it is registered before the
/// crate's reaper; after, after it (thread-local destructors run in an order the platform
/// picks: the checks below try both).
fn at_exit(f: impl FnOnce() + 'static) {
    AT_EXIT.with(|a| a.0.borrow_mut().push(Box::new(f)));
}

/// Makes sure this thread's `AT_EXIT` destructor is registered now.
fn arm_at_exit() {
    AT_EXIT.with(|_| ());
}

/// Keeps `v` until this thread's thread-local destructors run.
fn keep(v: impl std::any::Any) {
    KEPT.with(|k| k.0.borrow_mut().push(Box::new(v)));
}

mod checks {
    use super::*;
    use crate::monitor_common::Env;
    use objmon::vm::ThreadId;
    use objmon::{MonitorError, WaitOutcome};
    use std::sync::mpsc;
    use std::thread;
    use std::time::Duration;

    /// A thread that used monitors (of one runtime: one identity) is attached while it runs
    /// and detached when it exits; the monitor is free afterwards.
    pub fn detached_at_exit<E: Env>(e: E) {
        let rt = e.runtime();
        let base = rt.stats_snapshot().attached_threads;
        if e.exact() {
            assert_eq!(base, 0);
        }
        let m = Arc::new(e.monitor(Cell::new(0)));
        let (m2, e2, rt2) = (m.clone(), e.clone(), rt.clone());
        thread::spawn(move || {
            let g = m2.lock();
            g.set(1);
            let others: Vec<_> = (0..3).map(|i| e2.monitor(i)).collect();
            let gs: Vec<_> = others.iter().map(|o| o.lock()).collect();
            if e2.exact() {
                assert_eq!(rt2.stats_snapshot().attached_threads, 1, "one identity");
            }
            drop(gs);
        })
        .join()
        .unwrap();
        if e.exact() {
            assert_eq!(rt.stats_snapshot().attached_threads, 0, "detached at exit");
        }
        assert!(!m.is_locked());
        assert_eq!(m.lock().get(), 1);
        drop(m.lock());
        // The main thread is attached now (exact: 1), until it exits.
        if e.exact() {
            assert_eq!(rt.stats_snapshot().attached_threads, 1);
        }
    }

    /// The id of a thread that used a monitor and exited is handed to the next thread (ids
    /// are small: the protocols keep them in header bits). Ids are process-wide
    /// (docs/soundness.md §7), so a test running in parallel may take the freed id first: the
    /// pair is retried until the id comes back.
    pub fn id_reused_after_exit<E: Env>(e: E) {
        let m = Arc::new(e.monitor(()));
        let id_of_a_thread = || {
            let (m, rt) = (m.clone(), e.runtime());
            thread::spawn(move || {
                drop(m.lock());
                let me = rt.attach().unwrap(); // the monitor's identity
                me.id()
            })
            .join()
            .unwrap()
        };
        let reused = (0..50).any(|_| id_of_a_thread() == id_of_a_thread());
        if e.exact() {
            assert!(
                reused,
                "the exited thread's id is reused (never in 50 tries)"
            );
        }
        assert!(!m.is_locked());
    }

    /// `rt.attach()` on a thread that already uses a monitor of `rt` gets the same identity,
    /// in either order: one attached thread, and an interrupt sent to the handle's id ends
    /// the thread's wait on the monitor.
    pub fn attach_twice_is_one_identity<E: Env>(e: E) {
        let rt = e.runtime();
        let m = Arc::new(e.monitor(()));
        let (m2, rt2, exact) = (m.clone(), rt.clone(), e.exact());
        thread::spawn(move || {
            // Monitor first, then handles.
            let mut g = m2.lock();
            let h = rt2.attach().unwrap();
            let h2 = rt2.attach().unwrap();
            assert_eq!(h.id(), h2.id());
            if exact {
                assert_eq!(rt2.stats_snapshot().attached_threads, 1);
            }
            rt2.interrupt(h.id()).unwrap();
            assert_eq!(g.wait(None), Err(MonitorError::Interrupted));
            assert!(!h2.is_interrupted());
        })
        .join()
        .unwrap();
        let m3 = Arc::new(e.monitor(()));
        let (m4, rt2, exact) = (m3.clone(), rt.clone(), e.exact());
        thread::spawn(move || {
            // Handle first, then the monitor.
            let h = rt2.attach().unwrap();
            let mut g = m4.lock();
            if exact {
                assert_eq!(rt2.stats_snapshot().attached_threads, 1);
            }
            rt2.interrupt(h.id()).unwrap();
            assert_eq!(g.wait(None), Err(MonitorError::Interrupted));
            drop(g);
            let again = rt2.attach().unwrap();
            assert_eq!(again.id(), h.id());
        })
        .join()
        .unwrap();
        if e.exact() {
            assert_eq!(rt.stats_snapshot().attached_threads, 0);
        }
        assert!(!m.is_locked() && !m3.is_locked());
    }

    /// Detaching (or dropping) the thread's last handle does not detach the identity its
    /// monitors use: a guard taken before stays good, and the lock is released normally.
    pub fn handle_detach_keeps_the_monitors_identity<E: Env>(e: E) {
        let rt = e.runtime();
        let m = Arc::new(e.monitor(Cell::new(0)));
        let (m2, rt2, exact) = (m.clone(), rt.clone(), e.exact());
        let (held_tx, held_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let t = thread::spawn(move || {
            let h = rt2.attach().unwrap();
            let id = h.id();
            let mut g = m2.lock();
            assert_eq!(h.detach(), 0);
            if exact {
                assert_eq!(rt2.stats_snapshot().attached_threads, 1, "still attached");
            }
            held_tx.send(()).unwrap();
            go_rx.recv().unwrap();
            g.set(1);
            assert_eq!(g.wait(Some(Duration::ZERO)), Ok(WaitOutcome::TimedOut));
            drop(g);
            assert_eq!(rt2.attach().unwrap().id(), id, "the same identity");
        });
        held_rx.recv().unwrap();
        assert!(m.try_lock().is_none(), "still held by the thread");
        go_tx.send(()).unwrap();
        t.join().unwrap();
        assert_eq!(m.lock().get(), 1);
        if e.exact() {
            assert_eq!(rt.stats_snapshot().attached_threads, 1, "only this thread");
        }
    }

    /// What a thread-local destructor does with a monitor at exit: lock it, reentrantly,
    /// push, wait with a zero timeout (inflates), notify, unlock.
    fn exit_work<E: Env>(m: &Monitor<RefCell<Vec<&'static str>>, E::P, E::R>, what: &'static str) {
        let mut g = m.lock();
        {
            let nested = m.lock();
            assert!(m.is_owned_by_current_thread());
            nested.borrow_mut().push(what);
        }
        assert_eq!(g.wait(Some(Duration::ZERO)), Ok(WaitOutcome::TimedOut));
        g.notify_all();
        drop(g);
        let again = m.try_lock().expect("free: this thread just released it");
        drop(again);
        assert!(!m.is_locked());
    }

    fn destructor_check<E: Env>(e: E, arm_first: bool, use_in_body: bool) {
        let rt = e.runtime();
        let m = Arc::new(e.monitor(RefCell::new(Vec::new())));
        let (m2, m3) = (m.clone(), m.clone());
        thread::spawn(move || {
            if arm_first {
                arm_at_exit();
            }
            if use_in_body {
                exit_work::<E>(&m2, "body");
            }
            at_exit(move || exit_work::<E>(&m3, "destructor"));
        })
        .join()
        .unwrap();
        let want: &[&str] = if use_in_body {
            &["body", "destructor"]
        } else {
            &["destructor"]
        };
        assert_eq!(*m.lock().borrow(), want);
        assert!(thread::scope(|s| s
            .spawn(|| m.try_lock().is_some())
            .join()
            .unwrap()));
        if e.exact() {
            assert_eq!(rt.stats_snapshot().attached_threads, 1, "only this thread");
        }
    }

    /// A thread-local destructor registered after the thread's first monitor operation (so
    /// it runs before or after the crate's reaper, as the platform orders them) locks the
    /// monitor, nested, waits and notifies; nothing hangs, the push happened, the thread is
    /// detached.
    pub fn destructor_after_first_use_locks<E: Env>(e: E) {
        destructor_check(e, false, true);
    }

    /// The same, with the destructor registered before the first monitor operation.
    pub fn destructor_registered_before_first_use_locks<E: Env>(e: E) {
        destructor_check(e, true, true);
    }

    /// The same, with the destructor the thread's first monitor operation of all.
    pub fn destructor_is_the_first_use<E: Env>(e: E) {
        destructor_check(e, true, false);
    }

    /// A guard kept in a thread-local registered before the first lock (so destroyed after
    /// the reaper, if the platform runs destructors in reverse order) unlocks when that
    /// thread-local is destroyed: the next thread gets the lock, the exited thread is
    /// detached.
    pub fn guard_in_a_thread_local_outlives_the_reaper<E: Env>(e: E) {
        let rt = e.runtime();
        let m: &'static Monitor<Cell<u32>, E::P, E::R> =
            Box::leak(Box::new(e.monitor(Cell::new(0))));
        for register_first in [true, false] {
            thread::spawn(move || {
                if register_first {
                    KEPT.with(|_| ());
                }
                let g = m.lock();
                g.set(g.get() + 1);
                let nested = m.lock();
                keep(g);
                keep(nested);
            })
            .join()
            .unwrap();
            assert!(!m.is_locked(), "both levels released at exit");
            let g = m.lock();
            assert_eq!(g.get(), if register_first { 1 } else { 2 });
            drop(g);
            if e.exact() {
                assert_eq!(rt.stats_snapshot().attached_threads, 1, "only this thread");
            }
        }
    }

    /// A guard passed to `mem::forget` on a thread that then exits: the lock is never
    /// released (a forgotten guard is a held lock), never inherited by a thread that reuses
    /// ids, and other threads' `try_lock` keeps failing (no hang: `try_lock`, never `lock`).
    /// The exited thread's id stays taken.
    pub fn forgotten_guard_at_exit<E: Env>(e: E) {
        let rt = e.runtime();
        let m = Arc::new(e.monitor(Cell::new(0)));
        let (m2, rt2) = (m.clone(), rt.clone());
        let leaked: ThreadId = thread::spawn(move || {
            let g = m2.lock();
            g.set(1);
            std::mem::forget(g);
            rt2.attach().unwrap().id()
        })
        .join()
        .unwrap();
        assert!(m.is_locked());
        assert!(m.try_lock().is_none());
        for _ in 0..3 {
            let (m, rt) = (m.clone(), rt.clone());
            let id = thread::spawn(move || {
                assert!(m.try_lock().is_none(), "the forgotten lock is still held");
                assert!(!m.is_owned_by_current_thread());
                assert!(m.try_lock_for(Duration::from_millis(1)).is_none());
                rt.attach().unwrap().id()
            })
            .join()
            .unwrap();
            assert_ne!(id, leaked, "the leaking thread's id is not reused");
        }
        if e.exact() {
            // The leaking identity and this thread's.
            assert_eq!(rt.stats_snapshot().attached_threads, 2);
        }
        // Dropping the monitor with the forgotten lock held is safe (its last `Arc`).
        drop(m);
        let fresh = e.monitor(());
        drop(fresh.lock());
    }

    /// On a runtime with two thread ids, threads come and go (ids recycled at exit: twenty
    /// threads one after another); a third thread while two are attached panics with a
    /// message naming the limit, and leaves nothing locked.
    pub fn ids_are_recycled_and_exhaustion_panics<P: objmon::MonitorProtocol>() {
        // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
        // run only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rt = unsafe {
            Runtime::<P>::new_unchecked(objmon::vm::Config {
                max_threads: 2,
                ..objmon::vm::Config::default()
            })
        };
        let m = Arc::new(Monitor::with_runtime(&rt, Cell::new(0u32)));
        for _ in 0..20 {
            let m = m.clone();
            thread::spawn(move || {
                let g = m.lock();
                g.set(g.get() + 1);
            })
            .join()
            .unwrap();
        }
        assert_eq!(m.lock().get(), 20);
        // Two threads attached (this one, by the `lock` above, and a helper).
        let (in_tx, in_rx) = mpsc::channel();
        let (out_tx, out_rx) = mpsc::channel::<()>();
        let m2 = m.clone();
        let helper = thread::spawn(move || {
            drop(m2.lock());
            in_tx.send(()).unwrap();
            out_rx.recv().unwrap();
        });
        in_rx.recv().unwrap();
        assert_eq!(rt.stats_snapshot().attached_threads, 2);
        let m3 = m.clone();
        let err = thread::spawn(move || {
            let _g = m3.lock();
        })
        .join()
        .expect_err("no id left: lock panics");
        let msg = err
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        assert!(msg.contains("max_threads = 2"), "message: {msg}");
        assert!(!m.is_locked());
        out_tx.send(()).unwrap();
        helper.join().unwrap();
        let m4 = m.clone();
        thread::spawn(move || drop(m4.lock())).join().unwrap();
    }
    /// One OS thread, one identity, also in a thread-local destructor that runs after the
    /// thread's other thread-locals are gone: the monitor's identity and `rt.attach()`'s are
    /// the same (an interrupt sent to the handle's id ends the monitor's wait), and two
    /// `rt.attach()` calls give one id.
    pub fn identity_in_a_late_destructor<E: Env>(e: E) {
        let rt = e.runtime();
        let m = Arc::new(e.monitor(()));
        let (m2, rt2, exact) = (m.clone(), rt.clone(), e.exact());
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            arm_at_exit(); // registered first: runs last
            drop(m2.lock());
            drop(rt2.attach().unwrap());
            at_exit(move || {
                let mut g = m2.lock();
                let a = rt2.attach().unwrap();
                let b = rt2.attach().unwrap();
                let attached = rt2.stats_snapshot().attached_threads;
                rt2.interrupt(a.id()).unwrap();
                let waited = g.wait(Some(Duration::ZERO));
                tx.send((a.id(), b.id(), attached, waited)).unwrap();
            });
        })
        .join()
        .unwrap();
        let (a, b, attached, waited) = rx.recv().unwrap();
        eprintln!(
            "{}: handles {a:?} {b:?}, {attached} attached, wait {waited:?}",
            e.name()
        );
        assert_eq!(a, b, "two rt.attach() on one thread: one identity");
        if exact {
            assert_eq!(attached, 1, "one thread, one identity");
        }
        assert_eq!(
            waited,
            Err(MonitorError::Interrupted),
            "the handle's identity is the monitor's"
        );
    }

    /// A monitor locked many times by one thread (what makes `biased` / `fable` bias it to
    /// that thread) is locked by another thread while the first is blocked in `join` (not at
    /// a monitor operation: revocation must not need its help), and after it has exited.
    pub fn bias_owner_blocked_or_gone<E: Env>(e: E) {
        let m = Arc::new(e.monitor(Cell::new(0u32)));
        for _ in 0..1_000 {
            let g = m.lock();
            g.set(g.get() + 1);
        }
        let m2 = m.clone();
        thread::spawn(move || {
            let g = m2.lock();
            g.set(g.get() + 1);
        })
        .join()
        .unwrap();
        assert_eq!(m.lock().get(), 1_001);
        // Biased to a thread that exits.
        let m3 = m.clone();
        thread::spawn(move || {
            for _ in 0..1_000 {
                let g = m3.lock();
                g.set(g.get() + 1);
            }
        })
        .join()
        .unwrap();
        let m4 = m.clone();
        thread::spawn(move || {
            let mut g = m4.lock();
            assert_eq!(g.wait(Some(Duration::ZERO)), Ok(WaitOutcome::TimedOut));
            g.set(g.get() + 1);
        })
        .join()
        .unwrap();
        assert_eq!(m.lock().get(), 2_002);
    }

    /// `lock_api::Mutex<RawMonitor<P>, _>` locked from a thread-local destructor that runs
    /// after the reaper, and a `lock_api` guard kept in one (released at exit).
    pub fn raw_monitor_at_exit<P: objmon::MonitorProtocol>() {
        let m: &'static lock_api::Mutex<RawMonitor<P>, Vec<&'static str>> =
            Box::leak(Box::new(lock_api::Mutex::new(Vec::new())));
        thread::spawn(move || {
            arm_at_exit();
            KEPT.with(|_| ());
            m.lock().push("body");
            let mut g = m.lock();
            g.push("kept");
            keep(g);
            at_exit(move || {
                // Runs after `KEPT`'s destructor (registered before it): the guard is gone.
                let mut g = m.try_lock().expect("the kept guard was released");
                g.push("destructor");
            });
        })
        .join()
        .unwrap();
        assert!(!m.is_locked());
        assert_eq!(*m.lock(), ["body", "kept", "destructor"]);
    }

    /// A monitor operation that takes no lock (a failed `try_lock`, `try_lock_for`, a `Debug`
    /// of a monitor held elsewhere) in a thread-local destructor that runs after the reaper
    /// works and does not hang. (That the thread is then detached is
    /// `late_try_lock_detaches`.)
    pub fn failed_try_lock_in_a_late_destructor<E: Env>(e: E) {
        late_try_lock(e, false);
    }

    /// As `failed_try_lock_in_a_late_destructor`, and the exited thread is detached.
    pub fn late_try_lock_detaches<E: Env>(e: E) {
        late_try_lock(e, true);
    }

    fn late_try_lock<E: Env>(e: E, strict: bool) {
        let rt = e.runtime();
        let m = Arc::new(e.monitor(0u32));
        let held = m.lock(); // this thread holds it throughout
        let base = rt.stats_snapshot().attached_threads;
        let m2 = m.clone();
        thread::spawn(move || {
            arm_at_exit(); // registered before the reaper: runs after it
            assert!(m2.try_lock().is_none());
            at_exit(move || {
                assert!(m2.try_lock().is_none());
                assert!(m2.try_lock_for(Duration::from_millis(1)).is_none());
                assert!(format!("{m2:?}").contains("<locked>"));
            });
        })
        .join()
        .unwrap();
        let after = rt.stats_snapshot().attached_threads;
        drop(held);
        eprintln!("{}: attached {base} before, {after} after", e.name());
        if strict && e.exact() {
            assert_eq!(after, base, "the exited thread is detached");
        }
    }
}
