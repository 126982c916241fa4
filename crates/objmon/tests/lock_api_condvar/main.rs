//! `lock_api::Condvar<objmon::RawCondvar<P>>` with `lock_api::Mutex<objmon::RawMonitor<P>, T>`:
//! the facts parking_lot's own `Condvar` tests check (its `src/condvar.rs` tests and WebKit
//! queue tests), for every protocol a `RawMonitor` takes, plus what waiting on the monitor's
//! own wait set adds: notifies without the lock, two condvars sharing one mutex's wait set,
//! interrupts, and a mutex dropped as soon as its last waiter leaves.
//!
//! Where parking_lot's notifies return what they woke, `RawCondvar` returns `false` / `0`
//! (it may wake spuriously, so lock_api's contract makes it so); those tests check that.
//!
//! Parts: `parking_lot_tests.rs` (parking_lot's `src/condvar.rs` tests), `wait_set.rs` (what
//! the monitor's wait set adds), `webkit_queue.rs` (WebKit's queue test).
#![cfg(not(loom))]

#[path = "../monitor_common/mod.rs"]
mod monitor_common;
#[path = "../watchdog/mod.rs"]
mod watchdog;

per_protocol!(30;
    smoke,
    notify_one,
    notify_one_while_holding,
    notify_all,
    notify_returns_nothing,
    wait_for,
    wait_until,
    wait_for_unrepresentable_timeout,
    wait_while_does_not_wait_if_initially_false,
    wait_while_until_times_out_before_false,
    wait_while_until,
    wait_while_for,
    two_mutexes_panics,
    two_mutexes_disjoint,
    debug_condvar,
    notified_waiter_gets_the_mutex_after_the_notifier,
    chained_notify_one,
    two_condvars_one_mutex,
    interrupt_ends_a_wait_as_a_wake_up,
    mutex_dropped_after_its_last_waiter,
    queue_notify_all_bounded,
    queue_notify_one_forever,
    queue_ten_producers_notify_one,
);

/// A `static` condvar and mutex (`Condvar::new` and `Mutex::from_raw` are `const`).
static FLAG: lock_api::Mutex<objmon::RawMonitor, bool> =
    lock_api::Mutex::from_raw(<objmon::RawMonitor as lock_api::RawMutex>::INIT, false);
static FLAG_CV: lock_api::Condvar<objmon::RawCondvar> = lock_api::Condvar::new();

#[test]
fn in_statics() {
    watchdog::within(30, "statics", || {
        let t = std::thread::spawn(|| {
            *FLAG.lock() = true;
            FLAG_CV.notify_all();
        });
        let mut g = FLAG.lock();
        FLAG_CV.wait_while(&mut g, |f| !*f);
        drop(g);
        t.join().unwrap();
    });
}

/// The types are `Send + Sync` (lock_api's `Condvar<C>` is when `C` is).
#[test]
fn send_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<objmon::RawCondvar>();
    send_sync::<lock_api::Condvar<objmon::RawCondvar<objmon::Fable>>>();
}

/// `objmon::lock_api` is the lock_api these types implement.
#[test]
fn reexported_lock_api_is_the_one_implemented() {
    let m = objmon::lock_api::Mutex::<objmon::RawMonitor, u8>::new(1);
    let c = objmon::lock_api::Condvar::<objmon::RawCondvar>::new();
    let mut g = m.lock();
    assert!(c.wait_for(&mut g, std::time::Duration::ZERO).timed_out());
}

mod parking_lot_tests;
mod wait_set;
mod webkit_queue;

/// The checks, by name, for `per_protocol!`.
mod checks {
    pub use super::parking_lot_tests::*;
    pub use super::wait_set::*;
    pub use super::webkit_queue::*;
}

type Mutex<P, T> = lock_api::Mutex<objmon::RawMonitor<P>, T>;
type Condvar<P> = lock_api::Condvar<objmon::RawCondvar<P>>;
