//! The host-signal adversary: an ordinary, async-signal-safe `SIGUSR1` handler that stays
//! busy for 1-3 ms (as a sampling profiler's might), and a thread that sends it to the
//! workers with `pthread_kill` at random moments, so that it interrupts lock operations
//! anywhere, the protocols' own owner sections included.
//!
//! Invariants: the handler calls only `clock_gettime` (async-signal-safe) and touches only
//! an atomic; it is installed once, with `SA_RESTART` and objmon's barrier signal in its
//! `sa_mask` (the host's side of the `-signal` protocols' contract; `unmask_barrier` breaks it
//! on purpose), and never removed (a late signal must find it). A target is removed under the storm's lock before its thread is joined, so a
//! signal never goes to a thread that has ended.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

static HANDLED: AtomicU32 = AtomicU32::new(0);

extern "C" fn busy(_: libc::c_int) {
    let n = HANDLED.fetch_add(1, Ordering::Relaxed);
    let ns = 1_000_000 + (n % 3) as i64 * 1_000_000;
    let now = || {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid out-pointer; clock_gettime is async-signal-safe.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
        t.tv_sec * 1_000_000_000 + t.tv_nsec
    };
    let start = now();
    while now() - start < ns {
        std::hint::spin_loop();
    }
}

/// Whether the handler leaves objmon's barrier signal unblocked (set before the first storm):
/// the `-signal` protocols' contract broken on purpose, so that a revoker's signal can nest
/// inside the handler.
static UNMASKED: AtomicBool = AtomicBool::new(false);

/// Makes the handler (once installed: call before the first case) leave the barrier signal
/// unblocked, breaking `Runtime::new_unchecked`'s contract for the `-signal` protocols on
/// purpose (to show what it guards against).
pub fn unmask_barrier() {
    UNMASKED.store(true, Ordering::Relaxed);
}

fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: a zeroed sigaction is valid; the handler is async-signal-safe; the mask is
        // a valid, initialized set.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = busy as *const () as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            if let (false, Some(sig)) = (
                UNMASKED.load(Ordering::Relaxed),
                objmon::vm::barrier_signal(),
            ) {
                // The host's side of the `-signal` protocols' contract: the barrier signal
                // stays blocked while this handler runs.
                libc::sigaddset(&mut sa.sa_mask, sig);
            }
            libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut());
        }
    });
}

/// How many times the handler ran in this process.
pub fn handled() -> u32 {
    HANDLED.load(Ordering::Relaxed)
}

/// A running adversary; stops when dropped.
pub struct Storm {
    targets: Arc<Mutex<Vec<libc::pthread_t>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Storm {
    /// Starts sending `SIGUSR1` to `targets`.
    pub fn start(targets: Vec<libc::pthread_t>) -> Self {
        install();
        let targets = Arc::new(Mutex::new(targets));
        let stop = Arc::new(AtomicBool::new(false));
        let (t, s) = (targets.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
            while !s.load(Ordering::Relaxed) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                {
                    let t = t.lock().unwrap();
                    if !t.is_empty() {
                        let pt = t[(x % t.len() as u64) as usize];
                        // SAFETY: `pt` is a live thread: removed from the list before it
                        // is joined, under this lock.
                        unsafe { libc::pthread_kill(pt, libc::SIGUSR1) };
                    }
                }
                std::thread::sleep(Duration::from_micros(100 + (x >> 40) % 1500));
            }
        });
        Self {
            targets,
            stop,
            thread: Some(thread),
        }
    }

    /// Adds a target.
    pub fn add(&self, pt: libc::pthread_t) {
        self.targets.lock().unwrap().push(pt);
    }

    /// Removes a target (before its thread ends).
    pub fn remove(&self, pt: libc::pthread_t) {
        // SAFETY: pthread_equal compares two handles.
        self.targets
            .lock()
            .unwrap()
            .retain(|&p| unsafe { libc::pthread_equal(p, pt) } == 0);
    }
}

impl Drop for Storm {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
