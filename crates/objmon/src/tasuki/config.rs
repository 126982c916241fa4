//! The system lock's tunables, fixed when a lock is built: the release sequence
//! ([`SystemLockVariant`]), the spin, the yields, the contenders' discipline and the hand-off
//! bound ([`SystemLockConfig`]), and the per-call choice of contenders ([`Contenders`]).
//! `TasukiLock::new` packs them into the lock's 8 bytes of configuration.

use std::time::Duration;

/// Which of the seed's release sequences a system lock uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SystemLockVariant {
    /// Figures 4–5 with the two barriers of §4 (after the release store, after the increment).
    /// No hand-off: the seed's own fairness.
    Figure5,
    /// Figure 7: the `UNLOCKING` state and one barrier (a `SeqCst` fence) on every release.
    Figure7,
    /// Figure 7 with the release's barrier moved to the suspending thread, which calls
    /// `membarrier` (the default; see the `tasuki` module documentation). Built as
    /// [`Figure7`](Self::Figure7) where the process cannot register for `membarrier`.
    #[default]
    Figure7Membarrier,
}

/// Tuning of a system lock, fixed when the lock is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SystemLockConfig {
    /// Release sequence.
    pub variant: SystemLockVariant,
    /// Read-only spins on a held lock before suspending (the seed's "spin threshold"; §1).
    /// The [`queue_first`](Self::queue_first) contenders spin at most 14 of them
    /// (`parking_lot`'s rounds).
    pub spin_limit: u32,
    /// Yields of the processor after those pauses, each followed by a look at the lock,
    /// before suspending (at most 127). 0 is seed 004 §1's spin exactly (pauses only); the
    /// default, 7, is `parking_lot`'s `SpinWait` (3 rounds of pauses, then 7 yields). With
    /// more threads than cores the holder needs the core a spinner occupies: one run on the
    /// quiet 2-core Intel VM, `objmon-bench run --bench threads --param 2 --param 4 --param 8
    /// --reps 7 --no-java`, median ns per lock+unlock, 0 → 7 yields, interleaved twice:
    /// `thin` 4 threads 54.6 / 52.6 → 30.1 / 32.1, 8 threads 61.2 / 61.1 → 29.5 / 29.4;
    /// `fable` 8 threads 66.5 / 70.3 → 36.4 / 35.7; `Monitor<()>` 8 threads 63.1 / 66.2 →
    /// 33.5 / 33.3; `parking_lot::Mutex` 25.2–26.3 throughout.
    pub spin_yields: u32,
    /// Whether the protocols that ask for it (`thin`, and the biased engine's non-seed forms,
    /// `fable` among them) get `parking_lot`'s discipline for contenders: no spin while
    /// threads are suspended, `parking_lot`'s rounds of pauses (2, 4, 8, at most
    /// `spin_limit`) before the yields, and a woken thread spins again before it suspends again
    /// (docs/soundness.md, "The system lock", "Contenders"). `false`: every protocol gets
    /// seed 004's contenders, which the seed forms (`thin-seed`, `biased-seed`, `fable-seed`)
    /// and the other protocols get either way. Measured: docs/benchmarks.md, "Contended matrix".
    pub queue_first: bool,
    /// Wait after which a suspended thread is handed the lock instead of competing for it
    /// (Figure 7 variant only), counted from its first suspend. `None`: the seed's unfair
    /// lock. The default, 250 µs, is shorter than the 1 ms bound of WebKit and CPython because
    /// a user's wait also holds the spin, the yields and the heir's wake-up: with 1 ms,
    /// `Monitor<T>` had 3.2–7.7× as many sampled waits past 1 ms as `parking_lot::Mutex` at 2
    /// threads (3.3–4.4× at 4 and 8), with 250 µs 0.5–0.9× (1.2–2.8×), throughput unchanged
    /// (docs/benchmarks.md, "Contended matrix", "The hand-off bound").
    pub fair_handoff: Option<Duration>,
}

impl Default for SystemLockConfig {
    fn default() -> Self {
        Self {
            variant: SystemLockVariant::Figure7Membarrier,
            spin_limit: 64,
            spin_yields: 7,
            queue_first: true,
            fair_handoff: Some(Duration::from_micros(250)),
        }
    }
}

/// How the contenders of one call behave, chosen by the protocol that calls: its seed's way, or
/// `parking_lot`'s (and only if the lock was built with
/// [`SystemLockConfig::queue_first`]). Safety does not depend on it: a contender that skips
/// the spin suspends (Figure 5), and a woken thread that spins again is, until it suspends
/// again, a contender that has not suspended yet (out of the queue, its count taken by its
/// waker).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Contenders {
    /// Seed 004: every contender spins first (§1's precursory spin, whoever is suspended),
    /// and a thread woken to retry goes straight to its compare-and-swap and, failing,
    /// back to sleep (Figure 5, lines 15–21).
    Seed,
    /// `parking_lot`'s `lock_slow`: no spin while threads are suspended (they came first: a
    /// newcomer suspends behind them instead of racing them and the holder for the lock's
    /// line), looks after 2, 4 and 8 pauses (`SpinWait`'s rounds, not seed 004's 1, 2, …
    /// `spin_limit`), and a thread woken to retry spins again, if nobody else is suspended, before
    /// it suspends again (`SpinWait::reset` after an unpark), instead of going back to sleep
    /// at the holder's next re-lock and costing its next release another wake-up.
    QueueFirst,
}

/// `TasukiLock::spin_yields`: the [`SystemLockConfig::queue_first`] flag beside the yields.
pub(super) const QUEUE_FIRST: u8 = 1 << 7;
