//! The data behind the lock and the work on it, and the clock: the protected data (`Shared`
//! in `Cell`s for a reentrant lock, `Plain` for a mutex), the hand-off bookkeeping
//! ([`hand_off`]), the critical section on the protected slots, the work between locks,
//! their one-time calibration ([`Calibration`]) and the TSC reading of a sampled wait.

use super::matrix::{Between, Cs};
use super::{NOBODY, SLOTS};
use serde::Serialize;
use std::cell::Cell;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Records that `me` acquired the lock whose previous holder is in `last`; true if that is
/// a hand-off (a previous holder, and not `me`).
#[inline(always)]
pub fn hand_off(last: &Cell<usize>, me: usize) -> bool {
    let prev = last.get();
    if prev == me {
        return false;
    }
    last.set(me);
    prev != NOBODY
}

/// The critical section: the hand-off bookkeeping, then `iters` multiply-adds on the
/// protected slots. Returns whether the acquisition was a hand-off.
#[inline(always)]
pub(super) fn section(slots: &[Cell<u64>], last: &Cell<usize>, me: usize, iters: u64) -> bool {
    let h = hand_off(last, me);
    for i in 0..iters {
        let s = &slots[i as usize % SLOTS];
        s.set(s.get().wrapping_mul(0x5851_f42d_4c95_7f2d).wrapping_add(i));
    }
    h
}

/// Work between locks: `iters` steps of thread-local arithmetic, each through `black_box`.
#[inline(always)]
pub(super) fn between(mut x: u64, iters: u64) -> u64 {
    for i in 0..iters {
        x = black_box(x.wrapping_mul(0x2545_f491_4f6c_dd1d).wrapping_add(i));
    }
    x
}

/// Nanoseconds per iteration of `f(n)`: the least of 5 timings of `n` iterations.
fn ns_per_iter(f: impl Fn(u64)) -> f64 {
    let n = 200_000;
    f(n);
    (0..5)
        .map(|_| {
            let t = Instant::now();
            f(n);
            t.elapsed().as_nanos() as f64 / n as f64
        })
        .fold(f64::INFINITY, f64::min)
}

/// Iterations of the two work loops per target: calibrated once.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Calibration {
    /// ns per critical-section iteration.
    pub cs_ns_per_iter: f64,
    /// ns per between-locks iteration.
    pub between_ns_per_iter: f64,
    /// TSC ticks per ns (1 when the clock is `Instant`).
    pub ticks_per_ns: f64,
}

impl Calibration {
    /// Times the work loops and the TSC (~100 ms).
    pub fn measure() -> Self {
        let data = Shared::new();
        let cs_ns_per_iter = ns_per_iter(|n| {
            section(&data.slots, &data.last, 0, n);
        });
        black_box(&data);
        let between_ns_per_iter = ns_per_iter(|n| {
            black_box(between(1, n));
        });
        let (i0, t0) = (Instant::now(), ticks());
        std::thread::sleep(Duration::from_millis(50));
        let (i1, t1) = (Instant::now(), ticks());
        let ticks_per_ns = if cfg!(target_arch = "x86_64") {
            (t1 - t0) as f64 / (i1 - i0).as_nanos() as f64
        } else {
            1.0
        };
        Calibration {
            cs_ns_per_iter,
            between_ns_per_iter,
            ticks_per_ns,
        }
    }
    fn iters(per_iter: f64, target_ns: f64) -> u64 {
        if target_ns == 0.0 {
            0
        } else {
            ((target_ns / per_iter).round() as u64).max(1)
        }
    }
    pub(super) fn cs_iters(&self, cs: Cs) -> u64 {
        Self::iters(self.cs_ns_per_iter, cs.target_ns())
    }
    pub(super) fn between_iters(&self, b: Between) -> u64 {
        Self::iters(self.between_ns_per_iter, b.target_ns())
    }
}

/// The wait clock: the TSC on x86_64, else ns since the first call.
#[inline(always)]
pub(super) fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` exists on every x86_64 CPU and only reads the time-stamp counter.
        #[allow(unused_unsafe)]
        unsafe {
            std::arch::x86_64::_rdtsc()
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// The data behind a reentrant lock (which gives `&T`): in `Cell`s, as a user writes it.
pub(super) struct Shared {
    pub(super) slots: [Cell<u64>; SLOTS],
    pub(super) last: Cell<usize>,
}

impl Shared {
    pub(super) fn new() -> Self {
        Shared {
            slots: std::array::from_fn(|i| Cell::new(i as u64)),
            last: Cell::new(NOBODY),
        }
    }
}

/// The data behind a non-reentrant mutex (which gives `&mut T`).
pub(super) struct Plain {
    slots: [u64; SLOTS],
    last: usize,
}

impl Plain {
    pub(super) fn new() -> Self {
        Plain {
            slots: std::array::from_fn(|i| i as u64),
            last: NOBODY,
        }
    }
    /// The critical section on `&mut` data (`Cell::from_mut` costs nothing).
    #[inline(always)]
    pub(super) fn section(&mut self, me: usize, iters: u64) -> bool {
        let slots = Cell::from_mut(&mut self.slots[..]).as_slice_of_cells();
        section(slots, Cell::from_mut(&mut self.last), me, iters)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_offs_count_changes_of_holder() {
        let last = Cell::new(NOBODY);
        let owners = [0, 0, 1, 1, 0, 2, 2, 2, 1];
        let n = owners.iter().filter(|&&me| hand_off(&last, me)).count();
        assert_eq!(n, 4, "the first acquisition has no previous holder");
        assert_eq!(last.get(), 1);
    }
}
