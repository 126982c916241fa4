//! The host-signal adversary: an ordinary, async-signal-safe `SIGUSR1` handler that stays
//! busy for 1-3 ms (as a sampling profiler's might), and a thread that sends it to the
//! workers with `pthread_kill` at random moments, so that it interrupts lock operations
//! anywhere, the protocols' own owner sections included. With the barrier signal unmasked
//! (`unmask_barrier`, the contract broken on purpose) the handler stays busy only when it
//! caught a bias owner inside its section (`objmon::vm::in_owner_section`), and returns at
//! once otherwise, and comes every 5-30 us: a profiler slow at the moments that matter, so
//! that a revoker's signal nests inside it within a short run.
//!
//! Invariants: the handler calls only `clock_gettime` and `in_owner_section` (both
//! async-signal-safe) and touches only atomics; it is installed once, with `SA_RESTART` and
//! objmon's barrier signal in its `sa_mask` (the host's side of the `-signal` protocols'
//! contract) unless unmasked, and never removed (a late signal must find it). A target is
//! removed under the storm's lock before its thread is joined, so a signal never goes to a
//! thread that has ended.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

static HANDLED: AtomicU32 = AtomicU32::new(0);
static LINGERED: AtomicU32 = AtomicU32::new(0);
/// The handler is busy over an owner section now (one target at a time: `SignalsAt`).
static CAUGHT: AtomicBool = AtomicBool::new(false);
/// When the unmasked handler last stopped lingering (ns).
static LINGERED_UNTIL: AtomicI64 = AtomicI64::new(0);

fn now() -> i64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; clock_gettime is async-signal-safe.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec * 1_000_000_000 + t.tv_nsec
}

fn spin_for(ns: i64) {
    let start = now();
    while now() - start < ns {
        std::hint::spin_loop();
    }
}

/// Whether the interrupted instruction pointer of an `SA_SIGINFO` handler's context is
/// inside a bias owner's section.
fn in_section(uc: *mut libc::c_void) -> bool {
    // SAFETY: the kernel passes a valid `ucontext_t` to an `SA_SIGINFO` handler for the
    // handler's duration; only its saved instruction pointer is read.
    let ip =
        unsafe { (*(uc as *const libc::ucontext_t)).uc_mcontext.gregs[libc::REG_RIP as usize] };
    objmon::vm::in_owner_section(ip as usize)
}

/// Lock grants any worker saw (`granted`): the handler's clock for "another thread got in".
static GRANTS: AtomicU64 = AtomicU64::new(0);

/// Counts a lock grant (every worker's, in its record of who is inside).
pub(crate) fn granted() {
    GRANTS.fetch_add(1, Ordering::Relaxed);
}

/// Spins for `ns`; over an owner section, tells [`caught`] meanwhile and returns as soon as
/// other threads have been granted a few locks: the interrupted owner's section goes on at
/// the worst moment, while a revoker that got in is likely inside the object.
fn stay_busy(ns: i64, over_section: bool) {
    if !over_section {
        return spin_for(ns);
    }
    LINGERED.fetch_add(1, Ordering::Relaxed);
    CAUGHT.store(true, Ordering::SeqCst);
    let (start, g0) = (now(), GRANTS.load(Ordering::Relaxed));
    while now() - start < ns && GRANTS.load(Ordering::Relaxed) < g0 + 16 {
        std::hint::spin_loop();
    }
    CAUGHT.store(false, Ordering::SeqCst);
}

extern "C" fn busy(_: libc::c_int, _: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    let n = HANDLED.fetch_add(1, Ordering::Relaxed);
    stay_busy(1_000_000 + (n % 3) as i64 * 1_000_000, in_section(uc));
}

extern "C" fn linger(_: libc::c_int, _: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    HANDLED.fetch_add(1, Ordering::Relaxed);
    // Not again right after lingering: a signal that came meanwhile is delivered as the
    // handler returns, at the same instruction, and the owner would never move on.
    if in_section(uc) && now() > LINGERED_UNTIL.load(Ordering::Relaxed) + 500_000 {
        stay_busy(3_000_000, true);
        LINGERED_UNTIL.store(now(), Ordering::Relaxed);
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

/// Whether [`unmask_barrier`] was called.
pub fn unmasked() -> bool {
    UNMASKED.load(Ordering::Relaxed)
}

fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: a zeroed sigaction is valid; the handler is async-signal-safe; the mask is
        // a valid, initialized set.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            let unmasked = UNMASKED.load(Ordering::Relaxed);
            sa.sa_sigaction = if unmasked {
                linger as *const () as usize
            } else {
                busy as *const () as usize
            };
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            if let (false, Some(sig)) = (unmasked, objmon::vm::barrier_signal()) {
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

/// How many times the handler caught an owner inside its section (and stayed busy).
pub fn lingered() -> u32 {
    LINGERED.load(Ordering::Relaxed)
}

/// Whether the handler is busy over an owner section now.
pub fn caught() -> bool {
    CAUGHT.load(Ordering::SeqCst)
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
            let fast = UNMASKED.load(Ordering::Relaxed);
            if fast {
                // Sleeps of a few microseconds, not the default 50 us of timer slack.
                // SAFETY: PR_SET_TIMERSLACK takes a value and touches only this thread.
                unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
            }
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
                // The lingering handler returns at once outside a section: it can come
                // often enough to catch a burst's few microseconds of sections.
                let gap = if fast {
                    5 + (x >> 40) % 25
                } else {
                    100 + (x >> 40) % 1500
                };
                std::thread::sleep(Duration::from_micros(gap));
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
