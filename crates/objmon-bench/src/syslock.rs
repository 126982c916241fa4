//! Seed 004 §5.1 on the bare system locks: objmon's tasuki lock (its default release, Figure 7
//! with the suspender's `membarrier`, and the seed's Figure 7 and Figure 5) against a
//! double-atomic spin-suspend lock, on the uncontended path.
//!
//! The double-atomic lock is the classic three-state futex mutex (Drepper, "Futexes are
//! tricky", mutex 2): compare-and-swap 0 → 1 to lock; an atomic swap to 0 to unlock, with a
//! futex wake when the old value said someone sleeps. It spins as long as the tasuki lock
//! (`SystemLockConfig::default().spin_limit`) before sleeping, so the two differ only in the
//! atomic operations of the release — the seed's point.

use objmon::lab::TasukiLock;
use objmon::vm::{Runtime, SystemLockConfig, SystemLockVariant};
use objmon::Fat;
use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

/// A bare system lock row.
pub struct SysLock {
    /// Row name.
    pub name: &'static str,
    /// What it is.
    pub summary: &'static str,
    /// The tasuki lock's release, `None` for the double-atomic lock.
    pub variant: Option<SystemLockVariant>,
}

/// The rows, in report order.
pub const ROWS: [SysLock; 4] = [
    SysLock {
        name: "syslock-tasuki-membarrier",
        summary: "objmon TasukiLock, the default: Figure 7 with the release's fence moved to \
                  the suspender (membarrier)",
        variant: Some(SystemLockVariant::Figure7Membarrier),
    },
    SysLock {
        name: "syslock-tasuki-fig7",
        summary: "objmon TasukiLock, Figure 7 (UNLOCKING state, one fence on release)",
        variant: Some(SystemLockVariant::Figure7),
    },
    SysLock {
        name: "syslock-tasuki-fig5",
        summary: "objmon TasukiLock, Figures 4-5 with the two fences of §4",
        variant: Some(SystemLockVariant::Figure5),
    },
    SysLock {
        name: "syslock-double-atomic",
        summary: "three-state futex mutex: CAS to lock, atomic swap to unlock",
        variant: None,
    },
];

/// ns per lock+unlock (with a counter increment inside) of row `i`, `reps` values after one
/// warm-up.
pub fn run(i: usize, n: u64, reps: usize) -> Vec<f64> {
    // The tasuki lock wants the caller's thread core for its slow path.
    let rt = Runtime::<Fat>::with_defaults();
    let me = rt.attach().expect("attach");
    let core = me.context().core_arc();
    let variant = ROWS[i].variant;
    let tasuki = TasukiLock::new(SystemLockConfig {
        variant: variant.unwrap_or_default(),
        ..SystemLockConfig::default()
    });
    let double = DoubleAtomic::default();
    let one = || {
        let mut c = 0u64;
        let t0 = Instant::now();
        if variant.is_some() {
            for _ in 0..n {
                let l = black_box(&tasuki);
                // SAFETY: `core` is this thread's own (from `me`, attached here), and the
                // unlock follows this thread's own lock.
                unsafe { l.lock(core) };
                c = black_box(c + 1);
                unsafe { l.unlock() };
            }
        } else {
            for _ in 0..n {
                let l = black_box(&double);
                l.lock();
                c = black_box(c + 1);
                l.unlock();
            }
        }
        black_box(c);
        t0.elapsed().as_nanos() as f64 / n.max(1) as f64
    };
    black_box(one());
    (0..reps.max(1)).map(|_| one()).collect()
}

/// Unlocked.
const FREE: u32 = 0;
/// Locked, nobody asleep.
const HELD: u32 = 1;
/// Locked, someone may be asleep in the futex.
const SLEEPERS: u32 = 2;

/// The double-atomic spin-suspend lock (see the module documentation).
#[derive(Default)]
pub struct DoubleAtomic {
    state: AtomicU32,
}

impl DoubleAtomic {
    /// One compare-and-swap when free.
    #[inline]
    pub fn lock(&self) {
        if self
            .state
            .compare_exchange(FREE, HELD, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_slow();
        }
    }

    #[cold]
    fn lock_slow(&self) {
        for _ in 0..SystemLockConfig::default().spin_limit {
            std::hint::spin_loop();
            if self.state.load(Ordering::Relaxed) == FREE
                && self
                    .state
                    .compare_exchange(FREE, HELD, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return;
            }
        }
        while self.state.swap(SLEEPERS, Ordering::Acquire) != FREE {
            futex_wait(&self.state, SLEEPERS);
        }
    }

    /// One atomic swap (the second atomic operation of the pair).
    #[inline]
    pub fn unlock(&self) {
        if self.state.swap(FREE, Ordering::Release) == SLEEPERS {
            futex_wake(&self.state);
        }
    }
}

#[cfg(target_os = "linux")]
fn futex_wait(w: &AtomicU32, expected: u32) {
    // SAFETY:
    // - `w` is a live, aligned u32 for the whole call (borrowed);
    // - FUTEX_WAIT with a null timeout only reads it and sleeps; spurious returns and EAGAIN
    //   are handled by the caller's loop.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            w.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

#[cfg(target_os = "linux")]
fn futex_wake(w: &AtomicU32) {
    // SAFETY: `w` is a live, aligned u32; FUTEX_WAKE does not access memory through it.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            w.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn futex_wait(_: &AtomicU32, _: u32) {
    std::thread::yield_now();
}

#[cfg(not(target_os = "linux"))]
fn futex_wake(_: &AtomicU32) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn double_atomic_excludes() {
        let l = DoubleAtomic::default();
        let counter = AtomicU32::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..20_000 {
                        l.lock();
                        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                        l.unlock();
                    }
                });
            }
        });
        assert_eq!(counter.into_inner(), 80_000);
    }

    #[test]
    fn rows_run() {
        for i in 0..ROWS.len() {
            let v = run(i, 1000, 2);
            assert_eq!(v.len(), 2);
            assert!(v.iter().all(|x| x.is_finite() && *x > 0.0));
        }
    }
}
