//! The Rust user's API: [`Monitor<T>`](Monitor) (a value behind a Java-style monitor),
//! [`RawMonitor`] (a monitor as a `lock_api` raw mutex) and [`RawCondvar`] (its wait set as a
//! `lock_api` raw condvar), with no attach and no handle.
//!
//! Built on the embedder's layer (`handle.rs`), never beside it: a monitor operation finds the
//! calling thread's automatic attachment (`attach.rs`), on the runtime its monitor names
//! (`global.rs`), and calls the protocol's `unsafe` entry points through it, exactly as a
//! [`ThreadHandle`](crate::vm::ThreadHandle) does.

mod attach;
mod condvar;
mod global;
mod monitor;
mod raw;

pub use condvar::RawCondvar;
pub use global::{global_runtime, set_event_sink, Global, MonitorProtocol, RuntimeRef};
pub use monitor::{DefaultProtocol, Monitor, MonitorGuard};
pub use raw::RawMonitor;

use crate::spin::Spin;
use std::time::{Duration, Instant};

/// Retries `try_once` until it succeeds or `deadline` passes: spins for the first millisecond,
/// then sleeps, doubling from 20 µs to at most 1 ms (the protocols have no timed enter).
pub(crate) fn poll_until(deadline: Instant, mut try_once: impl FnMut() -> bool) -> bool {
    let mut spin = Spin::new();
    let mut sleep = Duration::from_micros(20);
    let started = Instant::now();
    loop {
        if try_once() {
            return true;
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        if now.duration_since(started) < Duration::from_millis(1) {
            spin.snooze();
        } else {
            std::thread::sleep(sleep.min(deadline - now));
            sleep = (sleep * 2).min(Duration::from_millis(1));
        }
    }
}
