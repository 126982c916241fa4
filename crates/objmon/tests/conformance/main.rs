//! The conformance suite: every protocol in `objmon::vm::visit_all` must pass all of it.
//!
//! Each `#[test]` runs one check against every protocol in turn (naming the protocol on
//! failure) under a watchdog, so a hang fails the test instead of stalling CI.
#![cfg(not(loom))]

use objmon::vm::{
    Config, MonitorError, Protocol, ProtocolVisitor, Runtime, SystemLockConfig, ThreadId,
    WaitOutcome,
};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

#[path = "../watchdog/mod.rs"]
mod watchdog;
use watchdog::within;

macro_rules! conformance {
    ($($check:ident),* $(,)?) => {$(
        #[test]
        fn $check() {
            struct V;
            impl ProtocolVisitor for V {
                fn visit<P: Protocol>(&mut self) {
                    let what = concat!(stringify!($check), " on ");
                    eprintln!("{what}{}", P::NAME);
                    within(60, P::NAME, checks::$check::<P>);
                }
            }
            objmon::vm::visit_all(&mut V);
        }
    )*};
}

conformance!(
    uncontended_enter_exit,
    reentrancy_deep,
    misuse_is_an_error,
    exit_by_non_owner_is_an_error,
    mutual_exclusion,
    mutual_exclusion_nested,
    try_enter,
    wait_releases_all_levels_and_restores,
    notify_moves_one_notify_all_moves_all,
    timed_wait_never_returns_early,
    zero_timeout_releases_and_reacquires,
    interrupt_during_wait,
    interrupt_before_wait,
    notify_and_interrupt_never_swallows,
    invalid_timeouts,
    unstructured_out_of_order,
    detach_releases_unstructured_locks,
    thread_ids_are_bounded_and_reused,
    monitor_table_full_is_an_error,
    guard_releases_on_panic,
    owner_of_from_other_threads,
    waiter_gets_lock_despite_barging,
    producer_consumer_with_wait_notify_all,
    reclaim_returns_monitors,
);

// Identity hash.
conformance!(
    hash_is_stable_in_every_lock_state,
    hash_first_taken_while_another_thread_holds_the_lock,
    hash_while_another_thread_waits,
    hashes_are_mostly_distinct,
    hash_races_with_lock_traffic,
    hash_with_a_full_monitor_table,
    reclaim_discards_the_hash,
);

// Introspection: thread dumps, deadlock detection, profiling.
conformance!(
    deadlocks_of_two_and_three_threads_are_found,
    notified_waiter_reentering_is_a_deadlock_edge,
    thread_dump_shows_owners_counts_blocked_and_waiting,
    no_deadlock_reported_under_ordered_load,
    profiling_off_reports_nothing,
    profiling_on_counts_contention_and_waits,
);

mod hashing;
mod introspection;
mod locking;
mod waiting;

/// The checks, by name, for `conformance!`.
mod checks {
    pub use super::hashing::*;
    pub use super::introspection::*;
    pub use super::locking::*;
    pub use super::waiting::*;
}

fn rt<P: Protocol>() -> Arc<Runtime<P>> {
    // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
    // run only on a fault, which no owner section makes): the -signal flavors' contract
    // (`Runtime::new_unchecked`) holds; the other protocols have none.
    unsafe { Runtime::<P>::new_unchecked(Default::default()) }
}
