//! The spin policy of a thread that waits for a word it may not write: a thin lock's contender
//! (seed 000 §2.3.4: "thread B enters a spin-locking loop on the object"; "standard back-off
//! techniques \[1\] ... can be applied"), a hasher waiting for a thin lock's owner, and the
//! biased protocols' waits (a learn / thin contender, a revoker waiting for a handshake, an
//! owner waiting out a revocation in progress). It says
//! how long to wait between two looks at the word and when a long wait may try something
//! costlier; it knows nothing of words or protocols (the caller looks between two
//! [`Spin::snooze`]s).
//!
//! The policy:
//!
//! 1. [`PAUSE_STEPS`] exponential pauses (1 … 32 `pause`s, a few µs), then
//! 2. `yield` between looks;
//! 3. once the wait is older than [`STARVING_NS`] (about a millisecond, the fat monitors'
//!    hand-off bound, `tasuki/config.rs`), a [`starving_checkpoint`](Spin::starving_checkpoint)
//!    after each yield: the moment for the caller's costlier move, at most once per
//!    scheduling round (`thin`: if the owner is blocked inside objmon or gone, inflate the
//!    lock for it and queue on the monitor, whose hand-off bounds overtaking).
//!
//! **What no spin policy bounds.** Seed 000's discipline leaves a contender no way in but
//! seeing the word free and winning the compare-and-swap: it may not write a held word, so it
//! can neither queue nor ask a *running* owner to hand over, and the owner's unlock (a load, a
//! compare, a store) looks at nothing else. An owner that re-locks at once leaves the word
//! free for a few nanoseconds per critical section, and can keep the lock for as long as it
//! keeps running. Tried and measured (`examples/fairness.rs`, and a two-thread loop that
//! times the first contended acquisition): bursts of blind compare-and-swaps after each
//! yield, with and without randomised gaps, and sleeping instead of yielding once starving,
//! all did *worse* than this policy on the 2-core machine (a waiter that touches the owner's
//! cache line during its critical section delays the owner's releasing store until its
//! re-lock, and the window closes). After the first contended acquisition the lock is fat
//! (seed 000 §2.3.4) and the monitor's bounded hand-off applies.

#[cfg(not(loom))]
use crate::sync::spin_hint;
use crate::sync::yield_now;
#[cfg(not(loom))]
use std::time::Instant;

/// Exponential pauses before the first yield: 1, 2, …, 32 `pause`s.
const PAUSE_STEPS: u32 = 6;
/// A wait older than this is starving.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const STARVING_NS: u32 = 1_000_000;

/// One waiter's spin state: make one per wait, call [`snooze`](Self::snooze) between looks.
#[derive(Debug, Default)]
pub(crate) struct Spin {
    step: u32,
    /// When the yields began (the wait's age is measured from there: the pauses are µs).
    #[cfg(not(loom))]
    since: Option<Instant>,
    /// Set by each yield, taken by [`starving_checkpoint`](Self::starving_checkpoint).
    checkpoint: bool,
}

impl Spin {
    /// A new wait.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// `true` once after each yield of a wait older than [`STARVING_NS`] (under loom: after
    /// each yield, so that the models explore it).
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
        if self.step < PAUSE_STEPS {
            // Under loom one scheduling point per look keeps the models small.
            #[cfg(loom)]
            yield_now();
            #[cfg(not(loom))]
            for _ in 0..(1u32 << self.step) {
                spin_hint();
            }
            self.step += 1;
            return;
        }
        #[cfg(not(loom))]
        {
            self.since.get_or_insert_with(Instant::now);
        }
        yield_now();
        self.checkpoint = true;
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Pauses first, then yields; a starving checkpoint comes once per yield, and only for a
    /// wait past [`STARVING_NS`].
    #[test]
    fn pauses_then_yields_with_checkpoints_once_starving() {
        let mut s = Spin::new();
        for _ in 0..PAUSE_STEPS {
            s.snooze();
            assert!(!s.starving_checkpoint(), "no checkpoint during the pauses");
        }
        s.snooze();
        assert!(s.since.is_some(), "the first yield starts the clock");
        // Back-date the wait instead of sleeping through it.
        s.since =
            Some(Instant::now() - std::time::Duration::from_nanos(2 * u64::from(STARVING_NS)));
        s.snooze();
        assert!(s.starving_checkpoint());
        assert!(!s.starving_checkpoint(), "once per yield");
        s.snooze();
        assert!(s.starving_checkpoint());
    }
}

/// The rounds of an owner query that rescans the threads for an owner it cannot see (a
/// fast- or stack-locked word names no thread): at most `rounds`, each ended by a `yield`;
/// and, once past [`RESCAN_FREE_ROUNDS`], no longer than [`RESCAN_TIME`] in all. With more
/// runnable threads than cores a `yield` can cost a scheduler slice, so a bound in rounds
/// alone let a query of an object whose owner detached with a forgotten guard take seconds
/// under load (objmon-fuzz saw it as a hang); the time bound still outlasts an owner preempted
/// between its compare-and-swap and its push for several slices. Under loom, rounds only
/// (the models have no clock to bound).
pub(crate) struct Rescans {
    left: u32,
    done: u32,
    start: Option<std::time::Instant>,
}

/// Rounds an owner query runs before it looks at the clock.
pub(crate) const RESCAN_FREE_ROUNDS: u32 = 64;
/// How long an owner query rescans, at most, after its first [`RESCAN_FREE_ROUNDS`].
pub(crate) const RESCAN_TIME: std::time::Duration = std::time::Duration::from_millis(100);

impl Rescans {
    /// At most `rounds` rounds.
    pub(crate) fn new(rounds: u32) -> Self {
        Self {
            left: rounds,
            done: 0,
            start: None,
        }
    }

    /// Whether another round may run (call it before each).
    pub(crate) fn next(&mut self) -> bool {
        if self.left == 0 {
            return false;
        }
        self.left -= 1;
        self.done += 1;
        if !cfg!(loom) && self.done > RESCAN_FREE_ROUNDS {
            let start = *self.start.get_or_insert_with(std::time::Instant::now);
            if start.elapsed() >= RESCAN_TIME {
                return false;
            }
        }
        true
    }
}
