//! Per-thread park / unpark with an optional deadline: the bottom layer of every blocking path.
//!
//! A [`Parker`] belongs to one thread, which alone calls [`Parker::park`]; any thread may call
//! [`Parker::unpark`]. An unpark that arrives before the park is remembered (one token), so a
//! wake-up is never lost between "decide to sleep" and "sleep". A park may also return
//! spuriously; every caller re-checks its own condition in a loop.
//!
//! On Linux the parker is one 32-bit futex word (the shape of Rust std's futex parker); under
//! `cfg(loom)` it is a token under a loom mutex and condition variable, and a timed park is
//! modelled as a timeout that may fire at any moment, so the models cover every interleaving of timeout against wake-up.

use std::time::Instant;

#[cfg(not(loom))]
pub use imp::Parker;
#[cfg(loom)]
pub use loom_imp::Parker;

#[cfg(all(not(loom), target_os = "linux"))]
mod imp {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Instant;

    /// No token, nobody sleeping.
    const EMPTY: u32 = 0;
    /// A token is present: the next park returns at once.
    const NOTIFIED: u32 = 1;
    /// The owner is (about to be) asleep in `futex_wait`.
    const PARKED: u32 = u32::MAX;

    /// A futex-based parker (see the module documentation).
    #[derive(Debug)]
    pub struct Parker {
        state: AtomicU32,
    }

    impl Parker {
        /// A parker with no token.
        pub fn new() -> Self {
            Self {
                state: AtomicU32::new(EMPTY),
            }
        }

        /// Sleeps until unparked, until `deadline` (if any), or spuriously. Consumes the token.
        /// Returns `true` when the deadline has passed.
        pub fn park(&self, deadline: Option<Instant>) -> bool {
            // EMPTY -> PARKED, or NOTIFIED -> EMPTY (token consumed, return at once).
            if self.state.fetch_sub(1, Ordering::Acquire) == NOTIFIED {
                return deadline.is_some_and(|d| Instant::now() >= d);
            }
            let timeout = match deadline {
                None => None,
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    None => {
                        self.state.swap(EMPTY, Ordering::Acquire);
                        return true;
                    }
                    Some(left) => Some(left),
                },
            };
            futex_wait(&self.state, PARKED, timeout);
            // Whether woken, timed out or spurious: leave PARKED, consuming any token.
            self.state.swap(EMPTY, Ordering::Acquire);
            deadline.is_some_and(|d| Instant::now() >= d)
        }

        /// Wakes the owner if it is parked, or makes its next park return at once.
        pub fn unpark(&self) {
            if self.state.swap(NOTIFIED, Ordering::Release) == PARKED {
                futex_wake(&self.state);
            }
        }
    }

    fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<std::time::Duration>) {
        let ts;
        let ts_ptr = match timeout {
            None => std::ptr::null(),
            Some(d) => {
                ts = libc::timespec {
                    tv_sec: d.as_secs().min(libc::time_t::MAX as u64) as libc::time_t,
                    tv_nsec: d.subsec_nanos() as libc::c_long,
                };
                &ts as *const libc::timespec
            }
        };
        // SAFETY:
        // - `word` is a live, aligned 32-bit atomic for the whole call (we borrow it);
        // - `ts_ptr` is null or points to `ts`, which outlives the call;
        // - FUTEX_WAIT only reads the word; EINTR, EAGAIN and ETIMEDOUT are all fine for us,
        //   since the caller re-checks the state.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                expected,
                ts_ptr,
            );
        }
    }

    fn futex_wake(word: &AtomicU32) {
        // SAFETY: `word` is a live, aligned 32-bit atomic; FUTEX_WAKE does not dereference
        // anything else and waking nobody is harmless.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                1,
            );
        }
    }
}

#[cfg(all(not(loom), not(target_os = "linux")))]
mod imp {
    use std::sync::{Condvar, Mutex};
    use std::time::Instant;

    /// A portable parker on a mutex and condition variable (for systems without futex).
    #[derive(Debug, Default)]
    pub struct Parker {
        token: Mutex<bool>,
        cv: Condvar,
    }

    impl Parker {
        /// A parker with no token.
        pub fn new() -> Self {
            Self::default()
        }

        /// Sleeps until unparked, until `deadline` (if any), or spuriously. Consumes the token.
        /// Returns `true` when the deadline has passed.
        pub fn park(&self, deadline: Option<Instant>) -> bool {
            let mut token = self.token.lock().unwrap_or_else(|e| e.into_inner());
            if !*token {
                token = match deadline {
                    None => self.cv.wait(token).unwrap_or_else(|e| e.into_inner()),
                    Some(d) => {
                        let left = d.saturating_duration_since(Instant::now());
                        self.cv
                            .wait_timeout(token, left)
                            .unwrap_or_else(|e| e.into_inner())
                            .0
                    }
                };
            }
            *token = false;
            deadline.is_some_and(|d| Instant::now() >= d)
        }

        /// Wakes the owner if it is parked, or makes its next park return at once.
        pub fn unpark(&self) {
            *self.token.lock().unwrap_or_else(|e| e.into_inner()) = true;
            self.cv.notify_one();
        }
    }
}

#[cfg(loom)]
mod loom_imp {
    use loom::sync::{Condvar, Mutex};
    use std::time::Instant;

    /// The loom model of a parker: a token under a loom mutex and condition variable. (Not
    /// loom's own thread park: its unpark also wakes a thread blocked on some loom `Mutex`,
    /// which loom then reports as a failure of that mutex.)
    #[derive(Debug)]
    pub struct Parker {
        token: Mutex<bool>,
        cv: Condvar,
    }

    impl Parker {
        /// A parker with no token.
        pub fn new() -> Self {
            Self {
                token: Mutex::new(false),
                cv: Condvar::new(),
            }
        }

        /// Untimed: wait for the token. Timed: take a token if there is one; otherwise the
        /// timeout may fire at any moment, so yield and report it as expired, and the caller's
        /// loop explores the timeout path.
        pub fn park(&self, deadline: Option<Instant>) -> bool {
            let mut token = self.token.lock().unwrap();
            if deadline.is_none() {
                while !*token {
                    token = self.cv.wait(token).unwrap();
                }
            }
            let had = std::mem::replace(&mut *token, false);
            drop(token);
            if had {
                return false;
            }
            loom::thread::yield_now();
            true
        }

        /// Wakes the owner if it is parked, or makes its next park return at once.
        pub fn unpark(&self) {
            *self.token.lock().unwrap() = true;
            self.cv.notify_one();
        }
    }
}

impl Default for Parker {
    fn default() -> Self {
        Self::new()
    }
}

/// `Instant::now() + d`, or `None` when the clock cannot represent it. Remembered on this
/// thread with `d`, for [`asked_timeout`].
pub(crate) fn deadline_after(d: std::time::Duration) -> Option<Instant> {
    let at = Instant::now().checked_add(d)?;
    LAST_TIMEOUT.with(|c| c.set(Some((at, d))));
    Some(at)
}

thread_local! {
    /// The deadline this thread made last from a timeout, and that timeout.
    static LAST_TIMEOUT: std::cell::Cell<Option<(Instant, std::time::Duration)>> =
        const { std::cell::Cell::new(None) };
}

/// The timeout `deadline` was made from, when it is the deadline this thread made last
/// ([`deadline_after`]: `wait(Some(d))` of every API); `None` for a deadline the caller gave
/// (`wait_until`). What a wait event reports as the timeout asked.
pub(crate) fn asked_timeout(deadline: Instant) -> Option<std::time::Duration> {
    LAST_TIMEOUT
        .with(std::cell::Cell::get)
        .and_then(|(at, d)| (at == deadline).then_some(d))
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn unpark_before_park_is_remembered_once() {
        let p = Parker::new();
        p.unpark();
        p.unpark(); // one token, not two
        let t0 = Instant::now();
        assert!(!p.park(Some(t0 + Duration::from_secs(5))));
        assert!(
            t0.elapsed() < Duration::from_secs(4),
            "token consumed at once"
        );
        // The second unpark did not leave another token behind.
        let d = Duration::from_millis(30);
        let t1 = Instant::now();
        assert!(p.park(Some(t1 + d)));
        assert!(t1.elapsed() >= d);
    }

    #[test]
    fn timed_park_never_returns_expired_early() {
        let p = Parker::new();
        for ms in [0u64, 1, 15] {
            let deadline = Instant::now() + Duration::from_millis(ms);
            while !p.park(Some(deadline)) {}
            assert!(Instant::now() >= deadline);
        }
    }

    #[test]
    fn unpark_from_another_thread_wakes() {
        let p = Arc::new(Parker::new());
        let q = p.clone();
        let h = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            q.unpark();
        });
        // Untimed: returns once unparked (spurious returns are allowed, so loop on a flag-free
        // bound: the unpark comes once, and a spurious return before it just parks again).
        let t0 = Instant::now();
        p.park(Some(t0 + Duration::from_secs(20)));
        assert!(t0.elapsed() < Duration::from_secs(10));
        h.join().unwrap();
    }
}
