//! The spin policy of a thread that waits for a word it may not write: a thin lock's contender
//! (seed 000 §2.3.4: "thread B enters a spin-locking loop on the object"; "standard back-off
//! techniques [1] ... can be applied"), and a hasher waiting for a thin lock's owner. It says
//! how long to wait between two looks at the word and when to try something else; it knows
//! nothing of words or protocols (the caller looks between two [`Spin::snooze`]s).
//!
//! **Why not plain back-off** (issue 11 item 17). Seed 000's discipline leaves a contender no
//! way in but seeing the word free and winning the compare-and-swap: it may not write a held
//! word, so it can neither queue nor ask the owner to hand over, and the owner's unlock (a
//! load, a compare, a store) looks at nothing else. An owner that re-locks at once leaves the
//! word free for a few nanoseconds per critical section, and a contender that first *looks*
//! and then CASes loses nearly every such race; Anderson-style back-off that ends in `yield`
//! looks once per scheduling slice. A waiter was overtaken for up to ~28 ms (issue 11). So:
//!
//! 1. [`PAUSE_STEPS`] exponential pauses (1 … 32 `pause`s), as before;
//! 2. then `yield`, each followed by a **burst** of [`BURST_NS`] in which the caller looks
//!    after every pause and, [`eager`](Spin::eager), CASes from the free word without looking
//!    (a CAS that lands in the owner's gap wins; a failed one writes nothing): whenever the
//!    waiter and the owner run at the same time, one release inside the burst is enough;
//! 3. once the wait is older than [`STARVING_NS`] (about a millisecond, the fat monitors'
//!    hand-off bound, `tasuki.rs`) the bursts double up to [`MAX_BURST_NS`], sampling ever
//!    longer stretches of the owner's loop, and after each yield the caller gets a
//!    [`starving_checkpoint`](Spin::starving_checkpoint) for a costlier move (`thin`: if the
//!    owner is blocked in objmon, inflate the lock for it and queue on the monitor).
//!
//! **What it cannot bound**: a waiter that is not running sees nothing, and one that runs
//! only while the owner holds the lock sees nothing either; only the owner could hand over,
//! and its unlock fast path looks at nothing. The bound is then the scheduler's. After the
//! first contended acquisition the lock is fat (seed 000 §2.3.4) and the monitor's bounded
//! hand-off applies. Measured: `examples/fairness.rs`.

use crate::sync::{spin_hint, yield_now};
#[cfg(not(loom))]
use std::time::Instant;

/// Exponential pauses before the first yield: 1, 2, …, 32 `pause`s (about 4 µs in all).
const PAUSE_STEPS: u32 = 6;
/// Pauses between two looks inside a burst.
#[cfg_attr(loom, allow(dead_code))]
const BURST_PAUSES: u32 = 1;
/// First length of the look-again burst after a yield.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const BURST_NS: u32 = 20_000;
/// Longest burst: a starving waiter's bursts double up to this.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const MAX_BURST_NS: u32 = 1_280_000;
/// A wait older than this is starving: its bursts grow.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const STARVING_NS: u32 = 1_000_000;

/// One waiter's spin state: make one per wait, call [`snooze`](Self::snooze) between looks.
#[derive(Debug)]
pub(crate) struct Spin {
    step: u32,
    #[cfg(not(loom))]
    since: Option<Instant>,
    #[cfg(not(loom))]
    burst_start: Option<Instant>,
    burst_ns: u32,
    /// Set by each yield, taken by [`starving_checkpoint`](Self::starving_checkpoint).
    checkpoint: bool,
}

impl Default for Spin {
    fn default() -> Self {
        Self::new()
    }
}

impl Spin {
    /// A new wait.
    pub(crate) fn new() -> Self {
        Self {
            step: 0,
            #[cfg(not(loom))]
            since: None,
            #[cfg(not(loom))]
            burst_start: None,
            burst_ns: BURST_NS,
            checkpoint: false,
        }
    }

    /// Whether the caller should try to take the word at once rather than look at it first:
    /// after the first yield, when looks have proved too slow (module documentation).
    #[inline]
    pub(crate) fn eager(&self) -> bool {
        #[cfg(not(loom))]
        {
            self.burst_start.is_some()
        }
        #[cfg(loom)]
        {
            false
        }
    }

    /// `true` once after each yield of a wait older than [`STARVING_NS`] (under loom: of a
    /// wait past the pauses, so that the models explore it): the moment for a starving
    /// waiter's costlier move (`thin`: inflate for an owner blocked in objmon), at most once
    /// per scheduling round.
    #[inline]
    pub(crate) fn starving_checkpoint(&mut self) -> bool {
        if !std::mem::take(&mut self.checkpoint) {
            return false;
        }
        #[cfg(not(loom))]
        {
            self.since
                .is_some_and(|t| t.elapsed().as_nanos() >= u128::from(STARVING_NS))
        }
        #[cfg(loom)]
        {
            true
        }
    }

    /// Waits before the caller's next look at the word.
    pub(crate) fn snooze(&mut self) {
        #[cfg(loom)]
        if self.step < PAUSE_STEPS {
            // One scheduling point per look keeps the models small.
            yield_now();
            self.step += 1;
            return;
        }
        if self.step < PAUSE_STEPS {
            for _ in 0..(1u32 << self.step) {
                spin_hint();
            }
            self.step += 1;
            return;
        }
        #[cfg(loom)]
        {
            let _ = self.burst_ns;
            yield_now();
            self.checkpoint = true;
        }
        #[cfg(not(loom))]
        {
            let now = Instant::now();
            let since = *self.since.get_or_insert(now);
            if let Some(b) = self.burst_start {
                if now.duration_since(b).as_nanos() < u128::from(self.burst_ns) {
                    for _ in 0..BURST_PAUSES {
                        spin_hint();
                    }
                    return;
                }
            }
            if now.duration_since(since).as_nanos() >= u128::from(STARVING_NS) {
                self.burst_ns = (self.burst_ns * 2).min(MAX_BURST_NS);
            }
            yield_now();
            self.checkpoint = true;
            self.burst_start = Some(Instant::now());
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Pauses first, then a yield followed by a burst of short waits, then yields again; a
    /// starving wait's bursts grow to the cap (and no further).
    #[test]
    fn pauses_then_bursts_between_yields() {
        let mut s = Spin::new();
        for _ in 0..PAUSE_STEPS {
            s.snooze();
        }
        assert_eq!(s.step, PAUSE_STEPS);
        assert!(s.burst_start.is_none(), "no yield yet");
        s.snooze();
        assert!(s.burst_start.is_some(), "a burst starts after the yield");
        assert_eq!(s.burst_ns, BURST_NS);
        let t0 = Instant::now();
        while s.burst_ns < MAX_BURST_NS && t0.elapsed().as_secs() < 30 {
            s.snooze();
        }
        assert_eq!(s.burst_ns, MAX_BURST_NS, "a starving wait samples longer");
        for _ in 0..1000 {
            s.snooze();
        }
        assert_eq!(s.burst_ns, MAX_BURST_NS);
    }
}
