//! The biased engine's runtime-wide state ([`BiasState`]: settings, the barrier's availability,
//! counters) and per-thread state ([`BiasThread`]: safepoint, lock records, learn key, the
//! bits saved while in native).

use super::*;

/// Runtime-wide state of the biased protocols: settings and counters.
#[derive(Debug)]
pub struct BiasState {
    pub(super) revocation: AtomicU32,
    pub(super) learn_limit: AtomicU32,
    /// [`LearnRule::PerObject`] (else `PerThread`): read with the learn limit.
    pub(super) per_object_learning: crate::sync::AtomicBool,
    /// The guess's counted re-acquisitions of a learn word (its count before it) that
    /// `fresh_enter` takes inline: below min(N, the count's maximum) − 1 under `PerObject`,
    /// none (0) under `PerThread` (`learn.rs`, `learn_inline_below`).
    pub(super) learn_inline: AtomicU64,
    pub(super) revocations: RevocationStats,
    pub(super) transitions: [AtomicU64; TRANSITIONS],
    /// Test hook ([`simulate_barrier_failure`](Self::simulate_barrier_failure)).
    pub(super) barrier_fails: crate::sync::AtomicBool,
    /// Some thread has cached its bias bits (so may have biased objects): from then on a
    /// refused barrier falls back to a handshake, never to [`Revocation::NoBias`].
    pub(super) may_have_biases: crate::sync::AtomicBool,
    /// Makes the flavor's barrier available (once per process) and says whether it is:
    /// `membarrier`'s registration, its `_RSEQ` one ([`Flavor::RSEQ`](super::Flavor::RSEQ): available only where
    /// glibc registered rseq), or the signal handler's installation ([`Flavor::SIGNAL`](super::Flavor::SIGNAL)).
    pub(super) barrier_init: fn() -> bool,
}

impl BiasState {
    pub(super) fn new(barrier_init: fn() -> bool, rule: LearnRule) -> Self {
        let s = Self {
            barrier_init,
            per_object_learning: crate::sync::AtomicBool::new(rule == LearnRule::PerObject),
            learn_inline: AtomicU64::new(0),
            revocation: AtomicU32::new(0),
            learn_limit: AtomicU32::new(DEFAULT_LEARN_LIMIT),
            revocations: RevocationStats::default(),
            transitions: std::array::from_fn(|_| AtomicU64::new(0)),
            barrier_fails: crate::sync::AtomicBool::new(false),
            may_have_biases: crate::sync::AtomicBool::new(false),
        };
        s.set(BiasConfig::default());
        s
    }

    /// Applies `c`; returns the revocation actually used. Where the kernel refuses the
    /// barrier, `Membarrier` and `Hybrid` give [`Revocation::NoBias`] (never a handshake the
    /// host did not ask for: its revoker would wait for an owner's poll that may never come,
    /// also on a lock nobody holds); in a runtime whose threads have already biased objects
    /// (under a handshake the host chose), they give that handshake's fallback
    /// (`SyncHandshake`, `AsyncHandshake`), which alone can revoke those biases. Safe at any
    /// time — every mode works against every owner, and revokers of one owner are serialized
    /// whatever their mode — but meant for start-up, before threads attach.
    pub fn set(&self, c: BiasConfig) -> Revocation {
        self.set_with(c, self.barrier_init)
    }

    /// [`set`](Self::set) as if the kernel refused `membarrier` (seccomp, an old kernel): a
    /// test hook, so that the fallback can be tested on any machine.
    #[doc(hidden)]
    pub fn set_without_barrier(&self, c: BiasConfig) -> Revocation {
        self.set_with(c, || false)
    }

    /// Test hook: from now on every `membarrier` call of this runtime fails, as if a seccomp
    /// filter had been installed after the registration succeeded.
    #[doc(hidden)]
    pub fn simulate_barrier_failure(&self) {
        self.barrier_fails.store(true, Ordering::Relaxed);
    }

    /// [`set`](Self::set) with the barrier's availability supplied (tests of the fallback).
    pub(super) fn set_with(
        &self,
        c: BiasConfig,
        barrier_available: impl FnOnce() -> bool,
    ) -> Revocation {
        let needs_barrier = matches!(c.revocation, Revocation::Membarrier | Revocation::Hybrid);
        let refused = needs_barrier && !barrier_available();
        let r = match c.revocation {
            _ if refused && !self.may_have_biases.load(Ordering::SeqCst) => Revocation::NoBias,
            Revocation::Membarrier if refused => Revocation::SyncHandshake,
            Revocation::Hybrid if refused => Revocation::AsyncHandshake,
            r => r,
        };
        self.revocation.store(r as u32, Ordering::Relaxed);
        self.learn_limit
            .store(c.learn_limit.max(1), Ordering::Relaxed);
        self.refresh_learn_inline();
        r
    }

    /// The barrier failed after the registration had succeeded (a seccomp filter installed
    /// later): the runtime revokes by the handshake from now on, visibly in
    /// [`revocation`](Self::revocation) (`Membarrier` → `SyncHandshake`, `Hybrid` →
    /// `AsyncHandshake`); new runtimes of the process bias nothing (`membarrier::init` answers
    /// `false` from now on).
    pub(super) fn barrier_failed(&self) {
        let fallback = |r: Revocation| match r {
            Revocation::Membarrier => Some(Revocation::SyncHandshake),
            Revocation::Hybrid => Some(Revocation::AsyncHandshake),
            _ => None,
        };
        let _ = self
            .revocation
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                fallback(Revocation::from_u32(v)).map(|r| r as u32)
            });
    }

    /// The revocation in use.
    pub fn revocation(&self) -> Revocation {
        Revocation::from_u32(self.revocation.load(Ordering::Relaxed))
    }

    /// FABLE's learn limit.
    #[inline]
    pub fn learn_limit(&self) -> u32 {
        self.learn_limit.load(Ordering::Relaxed)
    }

    /// FABLE's learn rule (seed 002 §3.1; see [`LearnRule`]).
    #[inline]
    pub fn learn_rule(&self) -> LearnRule {
        // Relaxed, as the learn limit: a heuristic's setting, ordering nothing; a stale read
        // only changes which count decides one acquisition (either count is a valid word).
        if self.per_object_learning.load(Ordering::Relaxed) {
            LearnRule::PerObject
        } else {
            LearnRule::PerThread
        }
    }

    /// Sets FABLE's learn rule; later learn-mode acquisitions use it (objects already
    /// counting keep their counts, which `PerThread` ignores). Meant for start-up and for
    /// measuring the rules side by side; `biased` has no learn mode and ignores it.
    pub fn set_learn_rule(&self, rule: LearnRule) {
        self.per_object_learning
            .store(rule == LearnRule::PerObject, Ordering::Relaxed);
        self.refresh_learn_inline();
    }

    /// Recomputes `learn_inline` from the learn limit and rule (Relaxed, as they: a
    /// heuristic's setting; a stale value only sends one acquisition out of line, or counts
    /// it under the old limit).
    pub(super) fn refresh_learn_inline(&self) {
        let v = learn::learn_inline_below(self.learn_rule(), self.learn_limit());
        self.learn_inline.store(v, Ordering::Relaxed);
    }

    /// Revocations by kind and their latency.
    pub fn revocations(&self) -> &RevocationStats {
        &self.revocations
    }

    /// How many times transition `t` happened in threads that have detached, plus the
    /// revocations (counted here by whichever thread performed them). Attached threads count
    /// their own transitions privately: see [`Biasing::transitions`](super::Biasing::transitions).
    pub fn transitions_shared(&self, t: Transition) -> u64 {
        self.transitions[t as usize].load(Ordering::Relaxed)
    }

    pub(super) fn count(&self, t: Transition) {
        self.transitions[t as usize].fetch_add(1, Ordering::Relaxed);
    }
}

/// Per-thread state of the biased protocols.
#[derive(Debug)]
pub struct BiasThread {
    pub(super) sp: Safepoint,
    /// FABLE §3.1 learnCount (only its thread touches it).
    pub(super) learn_count: AtomicU32,
    /// FABLE: this thread as a learn word's bias guess, rc 1 — its learn tag (drawn at
    /// attach, distinct from the tags of the last 2^21 − 1 attached threads, so of the earlier
    /// holders of its id in that span), state learn, its id
    /// (`learn.rs`, `learn_guess_for`). Immutable.
    pub(super) learn_guess: u64,
    /// `learn_guess`, or [`NO_BIAS`] while the thread is in native (poisoned with the records
    /// line's bits: `fresh_enter`'s inline learn steps then fail their test). Only its
    /// thread writes it.
    pub(super) learn_key: AtomicU64,
    /// Transitions this thread made, written only by it (load + store, no read-modify-write:
    /// clear → learn happens once per new object, a shared counter would be a hot line).
    pub(super) transitions: [AtomicU64; TRANSITIONS],
    /// Lock records of the records variant (own cache lines: revokers read them).
    pub(super) rec: LockRecords,
    /// The cached bias and thin-free bits while they are poisoned in native (only its thread
    /// touches them).
    pub(super) saved_bias: AtomicU64,
    pub(super) saved_thin_free: AtomicU64,
    /// `count_without_rseq` was called: the thread biases without a registered rseq area.
    pub(super) rseq_forced: crate::sync::AtomicBool,
    /// Signal flavors: where a revoker signals this thread (`crate::sigbarrier`).
    pub(super) sig: crate::sigbarrier::Target,
}

impl BiasThread {
    pub(super) fn new(id: ThreadId, thin_free: u64, rseq_cs: usize) -> Self {
        let learn_guess = learn::learn_guess_for(u64::from(id.get()) << OWNER_SHIFT);
        Self {
            learn_guess,
            learn_key: AtomicU64::new(learn_guess),
            rseq_forced: crate::sync::AtomicBool::new(false),
            sig: crate::sigbarrier::Target::new(id.get()),
            sp: Safepoint::default(),
            learn_count: AtomicU32::new(0),
            transitions: std::array::from_fn(|_| AtomicU64::new(0)),
            rec: LockRecords::new(id, thin_free, rseq_cs),
            saved_bias: AtomicU64::new(NO_BIAS),
            saved_thin_free: AtomicU64::new(NO_BIAS),
        }
    }

    #[inline]
    pub(super) fn count(&self, t: Transition) {
        let c = &self.transitions[t as usize];
        c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }
}
