//! Shared by the soundness test files (`tests/soundness*.rs`); not a test target of its own.
//!
//! Every check that could hang runs under [`within`], so a hang fails the test (naming what
//! hung) instead of stalling CI; [`every_protocol!`] runs a generic check over
//! `objmon::vm::visit_all`.
#![allow(dead_code)]

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// Fails the test if `f` does not finish within `secs`. A hung thread is left behind (it is
/// detached, not joined), so the test process can report and exit.
pub fn within(secs: u64, name: &str, f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    let h = thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            f();
            let _ = tx.send(());
        })
        .unwrap();
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => h.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(p) = h.join() {
                std::panic::resume_unwind(p)
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{name}: no progress after {secs} s"),
    }
}

/// Runs `f` while `spinners` threads spin beside it, so that with more runnable threads than
/// cores a `yield` in `f` costs a scheduler slice (the load a shared machine puts on a
/// library); the spinners stop when `f` returns or panics (a panic then fails the test
/// instead of leaving the scope waiting for them).
pub fn beside_spinners<R>(spinners: usize, f: impl FnOnce() -> R) -> R {
    use std::sync::atomic::{AtomicBool, Ordering};
    struct Stop<'a>(&'a AtomicBool);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        for _ in 0..spinners {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            });
        }
        let _stop = Stop(&stop);
        f()
    })
}

/// `every_protocol!(check_name, secs)` defines `#[test] fn check_name` running
/// `checks::check_name::<P>()` for every protocol, each under [`within`]`(secs)`.
#[macro_export]
macro_rules! every_protocol {
    ($($check:ident),* $(,)?) => {$(
        #[test]
        fn $check() {
            struct V;
            impl objmon::vm::ProtocolVisitor for V {
                fn visit<P: objmon::Protocol>(&mut self) {
                    eprintln!(concat!(stringify!($check), " on {}"), P::NAME);
                    $crate::watchdog::within(60, P::NAME, checks::$check::<P>);
                }
            }
            objmon::vm::visit_all(&mut V);
        }
    )*};
}
