//! `fable`: Fine-grained Adaptive Biased Locking (seed 002 §3): the FABLE flavors
//! ([`Fable`], [`FableRseq`], [`FableSignal`], [`FableSeed`]) and the learn rule, on the
//! engine of [`biased`](super::biased), which owns the header layout, the fast paths and
//! revocation. Soundness: docs/soundness.md §9.
//!
//! States (Figure 5): *clear* → (first acquisition) *learn*, the acquirer the *bias guess*
//! (state 01, Figure 6) → (the guess's N-th counted non-recursive re-acquisition; N the
//! runtime's learn limit, default 5, [`BiasConfig::learn_limit`]) *biased* to it; learn →
//! *thin* at once when any other thread acquires; biased → thin is a revocation; thin →
//! fat on contention, wait / notify and count overflow. Never rebias (§3.1).
//!
//! Departures from seed 002, one line each:
//! - `fable`, `fable-rseq`, `fable-signal` count per object ([`LearnRule::PerObject`],
//!   bits 41..34 of a learn word), not §3.1's per-thread random count ([`FableSeed`] keeps it);
//! - a learn word also carries its guess's *learn tag* (bits 62..42), so a later thread
//!   given a dead guess's id does not continue its count;
//! - the non-seed flavors take clear → learn, the guess's re-acquisition, learn → thin and
//!   nested learn / thin holds inline (Figure 7 leaves them to the slow path);
//! - the last-level learn / thin unlock is one releasing store, not Figure 7's CAS.
//!
//! Invariants: the guess is the thread whose id *and* learn tag match a free learn word;
//! a *held* learn word's id alone names its holder (alive: an id returns to the pool only
//! at a detach with nothing held); biasing takes a CAS from a free learn word, and a bias
//! names its owner by id and generation, so a tag collision (2^21 attaches apart) is an
//! early bias, revoked like any other, never two owners.
//!
//! [`BiasConfig::learn_limit`]: super::biased::BiasConfig::learn_limit

use super::biased::{Biasing, Flavor, DEFAULT_LEARN_LIMIT};
use super::Knob;

/// FABLE heuristics (seed 002 §3.1–§3.2): learn mode, per-object adaptation, sticky owner;
/// the bias owner's step is Figure 7's first case (load, compare, store of the header count)
/// in an rseq section (see the engine's documentation).
#[derive(Debug)]
pub enum FableRseqHeuristics {}

impl Flavor for FableRseqHeuristics {
    const NAME: &'static str = "fable-rseq";
    const SUMMARY: &'static str =
        "FABLE, the bias owner's count in the header, its step in an rseq section";
    const LEARN: bool = true;
    const STICKY: bool = true;
    const RECORDS: bool = false;
    const RSEQ: bool = true;
}

/// `fable-rseq`: FABLE biased locking (seed 002 §3), the bias owner's count in the header,
/// stored by a load, a compare and a store in an rseq section (Figure 7's first case);
/// x86-64 Linux with glibc's rseq registration, elsewhere it biases nothing.
pub type FableRseq = Biasing<FableRseqHeuristics>;

/// FABLE heuristics, the bias owner's count in the header, its Figure 7 step (load, compare,
/// store) in a section that no store arms: a revoker restarts it with a signal to the owner
/// (`fable-signal`; docs/soundness.md §9, "Revocation").
#[derive(Debug)]
pub enum FableSignalHeuristics {}

impl Flavor for FableSignalHeuristics {
    const NAME: &'static str = "fable-signal";
    const SUMMARY: &'static str =
        "FABLE, the bias owner's count in the header, its step restarted by a revoker's signal";
    const LEARN: bool = true;
    const STICKY: bool = true;
    const RECORDS: bool = false;
    const RSEQ: bool = true;
    const SIGNAL: bool = true;
}

/// `fable-signal`: FABLE biased locking (seed 002 §3), the bias owner's Figure 7 step in a
/// section a revoker's signal restarts ([`FableSignalHeuristics`]); x86-64 Linux with glibc,
/// elsewhere it biases nothing.
pub type FableSignal = Biasing<FableSignalHeuristics>;

/// FABLE heuristics with the bias owner's count in lock records (HotSpot 17's scheme; the
/// owner never writes a biased header): `fable`.
///
/// Learn rule: [`LearnRule::PerObject`] (each object counts its own acquisitions), not
/// §3.1's per-thread random counting — see the module documentation; `fable-rseq` the same.
#[derive(Debug)]
pub enum FableHeuristics {}

impl Flavor for FableHeuristics {
    const NAME: &'static str = "fable";
    const SUMMARY: &'static str = "FABLE: learn mode, bias after N acquisitions by one thread";
    const LEARN: bool = true;
    const STICKY: bool = true;
    const RECORDS: bool = true;
}

/// `fable`: FABLE with the bias owner's count in lock records ([`FableHeuristics`]).
///
/// As [`Biased`](super::biased::Biased), a forgotten guard's biased hold stays with the
/// header's address, not its value (docs/soundness.md §9, "A forgotten guard, then a move"),
/// and ends when its owner detaches.
pub type Fable = Biasing<FableHeuristics>;

/// FABLE heuristics with the bias owner's count in the header, as Figures 6 and 7 have it.
/// Not in the catalog (`biased-seed` measures the same engine path); for tests and hosts
/// that want the seed's layout exactly, and measured in objmon-bench's `user-loop` rows.
/// Learn rule: §3.1's random counting exactly ([`LearnRule::PerThread`]).
#[derive(Debug)]
pub enum FableSeedHeuristics {}

impl Flavor for FableSeedHeuristics {
    const NAME: &'static str = "fable-seed";
    const SUMMARY: &'static str = "FABLE, count in the header as seed 002 Figures 6-7 have it";
    const LEARN: bool = true;
    const STICKY: bool = true;
    const RECORDS: bool = false;
}

/// FABLE with the bias owner's count in the header (Figures 6 and 7).
pub type FableSeed = Biasing<FableSeedHeuristics>;

/// How a learn-mode object decides to bias (seed 002 §3.1), per runtime
/// ([`BiasState::set_learn_rule`]; the default is the flavor's: [`PerObject`](Self::PerObject)
/// for `fable` and `fable-rseq`, [`PerThread`](Self::PerThread) for [`FableSeed`]).
///
/// [`BiasState::set_learn_rule`]: super::biased::BiasState::set_learn_rule
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LearnRule {
    /// §3.1 exactly, *random counting*: the guess's per-thread `learnCount` counts its
    /// learn-mode re-acquisitions of **any** object; the acquisition that brings it to the
    /// learn limit N biases whichever object it is, and resets the count. On average an
    /// object biases after N + 1 acquisitions by one thread, but an object the guess touches
    /// only twice biases whenever the count happens to stand at N − 1 — one in N of them.
    /// On Cloud (§5.1: 10 threads, 10^6 objects) about one object in 40 biases that way and
    /// is revoked at its next touch by another thread: 23–25 thousand revocations, all in
    /// the first repetition (`examples/cloud_probe.rs`).
    PerThread,
    /// The count §3.1 calls "naïve" (log N bits in the header), which random counting
    /// approximates: each learn word counts its own guess's non-recursive re-acquisitions
    /// (bits 41..34, zero in every other learn word); the N-th biases it. An object biases
    /// exactly when one thread acquires it N + 1 times in a row — any other thread in between
    /// makes it thin (Figure 5) — so an object touched only a few times, or by several
    /// threads, never does, and §5.3's resonance (k = N) is gone. The count needs no per-object
    /// space: a learn word has bits 63..34 free (a bias generation lives there only in state
    /// 00; bits 62..42 hold the guess's learn tag). Counts stop at 255 (a larger N acts as
    /// that).
    PerObject,
}

/// FABLE's only tunable heuristic (§3.1: "The only tunable heuristic in FABLE is the learn
/// limit"), as [`Protocol::KNOB`](super::Protocol::KNOB) of `fable`: N = 1…10 as §5.3 sweeps
/// it on AllocLock (Figure 16; Figures 9 and 13 sweep the same range), default 5. Any N ≥ 1 is
/// accepted: the per-thread `learnCount` is a `u32` that never exceeds N.
pub const LEARN_LIMIT: Knob = Knob {
    name: "learn-limit",
    seed: "002 §3.1, §5.3 Fig. 16",
    values: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    default: DEFAULT_LEARN_LIMIT,
    min: 1,
    max: u32::MAX,
};

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::protocol::biased::{BiasConfig, BiasMode, BiasWord, Biased, Transition};
    use crate::protocol::thin::Thin;
    use crate::protocol::{KnobError, Protocol};
    use crate::revoke::Revocation;
    use crate::runtime::Runtime;
    use crate::sync::Ordering;
    use std::sync::Arc;

    /// AllocLock's loop (§5.3): `objects` fresh objects, each locked `k` times by one thread.
    /// Returns how many of them became biased.
    fn alloc_lock(rt: &Arc<Runtime<Fable>>, objects: u32, k: u32) -> u64 {
        let me = rt.attach().unwrap();
        let before = Fable::transitions(rt, Transition::LearnToBiased);
        for _ in 0..objects {
            let h = BiasWord::default();
            for _ in 0..k {
                drop(me.enter(&h).unwrap());
            }
            assert_ne!(h.mode(), BiasMode::Thin, "one thread never makes it thin");
        }
        Fable::transitions(rt, Transition::LearnToBiased) - before
    }

    /// The knob is the learn limit that §3.1's random counting uses (the seed's rule,
    /// `LearnRule::PerThread`: `fable-seed`'s default, `fable` when set): with 2 locks per
    /// object (one counted acquisition after clear → learn) N = 1 biases every object, N = 10
    /// one in ten, the default one in five; and k = N shows §5.3's resonance — every other
    /// object biases on its second acquisition.
    #[test]
    fn learn_limit_knob_sets_how_often_objects_bias() {
        assert_eq!(
            Runtime::<FableSeed>::with_defaults().state().learn_rule(),
            LearnRule::PerThread,
            "fable-seed keeps §3.1's rule"
        );
        let fresh = |n: Option<u32>| {
            let rt = Runtime::<Fable>::with_defaults();
            assert_eq!(rt.state().learn_rule(), LearnRule::PerObject);
            rt.state().set_learn_rule(LearnRule::PerThread);
            if let Some(n) = n {
                Fable::set_knob(&rt, n).unwrap();
            }
            rt
        };
        assert_eq!(alloc_lock(&fresh(Some(1)), 100, 2), 100);
        assert_eq!(alloc_lock(&fresh(Some(10)), 100, 2), 10);
        assert_eq!(alloc_lock(&fresh(None), 100, 2), 20, "default N = 5");
        assert_eq!(
            alloc_lock(&fresh(Some(4)), 100, 4),
            50,
            "resonance at k = N"
        );
        // Set while the runtime is in use: later learn-mode acquisitions use the new N.
        let rt = fresh(Some(10));
        assert_eq!(alloc_lock(&rt, 100, 2), 10);
        Fable::set_knob(&rt, 1).unwrap();
        assert_eq!(alloc_lock(&rt, 100, 2), 100);
    }

    /// `LearnRule::PerObject` (`fable`'s default): an object biases on exactly its (N + 1)-th
    /// non-recursive acquisition by one thread, whatever that thread locked before or in
    /// between — objects locked round-robin each count their own — and recursive holds do
    /// not count (§3.1); AllocLock with k ≤ N biases nothing and k = N shows no resonance.
    #[test]
    fn per_object_rule_biases_on_the_n_plus_first_acquisition() {
        for n in [1u32, 2, 5, 7] {
            let rt = Runtime::<Fable>::with_defaults();
            Fable::set_knob(&rt, n).unwrap();
            let me = rt.attach().unwrap();
            let objs: Vec<BiasWord> = (0..3).map(|_| BiasWord::default()).collect();
            for i in 1..=n + 1 {
                for h in &objs {
                    assert_eq!(
                        h.mode(),
                        if i == 1 {
                            BiasMode::Clear
                        } else {
                            BiasMode::Learn
                        }
                    );
                    let g = me.enter(h).unwrap();
                    drop(me.enter(h).unwrap()); // nested: not counted
                    drop(g);
                }
            }
            for h in &objs {
                assert_eq!(h.mode(), BiasMode::Biased, "N = {n}");
            }
        }
        let fresh = |n: u32| {
            let rt = Runtime::<Fable>::with_defaults();
            Fable::set_knob(&rt, n).unwrap();
            rt
        };
        assert_eq!(alloc_lock(&fresh(5), 100, 2), 0);
        assert_eq!(alloc_lock(&fresh(5), 100, 5), 0, "k = N: no resonance");
        assert_eq!(alloc_lock(&fresh(5), 100, 6), 100);
        assert_eq!(alloc_lock(&fresh(1), 100, 2), 100);
    }

    /// What the per-object rule is for (Cloud's start-up): objects that one
    /// thread touches twice and then another thread touches. Under §3.1's random counting
    /// one in N of them biases on the first thread's second touch and is revoked at the
    /// second thread's; counted per object, none biases and nothing is revoked. An object
    /// two threads lock alternately never biases under either rule (Figure 5: learn → thin).
    #[test]
    fn objects_shared_early_are_never_biased_per_object() {
        for (rule, biased) in [(LearnRule::PerThread, 20), (LearnRule::PerObject, 0)] {
            let rt = Runtime::<Fable>::with_defaults();
            rt.state().set_learn_rule(rule);
            let objs: Vec<BiasWord> = (0..100).map(|_| BiasWord::default()).collect();
            let alternate = BiasWord::default();
            let turn = std::sync::Barrier::new(2);
            std::thread::scope(|s| {
                for who in 0..2 {
                    let (rt, objs, alternate, turn) = (&rt, &objs, &alternate, &turn);
                    s.spawn(move || {
                        let me = rt.attach().unwrap();
                        for round in 0..20 {
                            if round % 2 == who {
                                drop(me.enter(alternate).unwrap());
                            }
                            turn.wait();
                        }
                        if who == 0 {
                            for h in objs {
                                drop(me.enter(h).unwrap());
                                drop(me.enter(h).unwrap());
                            }
                        }
                        turn.wait();
                        if who == 1 {
                            for h in objs {
                                drop(me.enter(h).unwrap());
                                assert_eq!(h.mode(), BiasMode::Thin);
                            }
                        }
                    });
                }
            });
            assert_eq!(alternate.mode(), BiasMode::Thin, "{rule:?}");
            assert_eq!(
                Fable::transitions(&rt, Transition::LearnToBiased),
                biased,
                "{rule:?}"
            );
            assert_eq!(
                Fable::transitions(&rt, Transition::BiasedToThin),
                biased,
                "{rule:?}: every bias revoked"
            );
            assert_eq!(
                Fable::transitions(&rt, Transition::LearnToThin),
                101 - biased,
                "{rule:?}"
            );
        }
    }

    /// Regression: a thread given a dead guess's id (ids are reused after a detach) does
    /// not continue the dead guess's learning. The guess locks an object N times (one more
    /// acquisition by it would bias it, under either rule's count: the word's, or its
    /// thread's learnCount at N − 1 under `PerThread`) and detaches; the next thread, with the
    /// same id, locks it once: to it the word is another thread's, so the object goes thin
    /// (Figure 5), as it would with a fresh id — neither biased to it (the continued
    /// per-object count) nor still learning with it as the guess. Ids are process-wide, so a
    /// parallel test may take the freed id first: then the word is given the next thread's
    /// id, everything else kept — the word as that thread would have found it. Checked on
    /// both fresh-object paths: `fable`'s inline one and `fable-seed`'s slow one.
    #[test]
    fn a_recycled_id_does_not_continue_a_dead_guess() {
        fn check<F: crate::protocol::biased::Flavor>(rule: LearnRule) {
            type B<F> = crate::protocol::biased::Biasing<F>;
            // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
            // run only on a fault, which no owner section makes): the -signal flavors' contract
            // (`Runtime::new_unchecked`) holds; the other protocols have none.
            let rt = unsafe { Runtime::<B<F>>::new_unchecked(Default::default()) };
            rt.state().set_learn_rule(rule);
            let n = rt.state().learn_limit();
            let h = BiasWord::default();
            let owner = |id: crate::thread::ThreadId| {
                u64::from(id.get()) << crate::protocol::biased::OWNER_MASK.trailing_zeros()
            };
            let dead = std::thread::scope(|s| {
                s.spawn(|| {
                    let me = rt.attach().unwrap();
                    if rule == LearnRule::PerThread {
                        // learnCount at N − 1: the guess's own objects, each locked twice
                        // (N = 5: none of them reaches the limit first).
                        for _ in 0..n - 1 {
                            let o = BiasWord::default();
                            drop(me.enter(&o).unwrap());
                            drop(me.enter(&o).unwrap());
                        }
                        drop(me.enter(&h).unwrap());
                    } else {
                        for _ in 0..n {
                            drop(me.enter(&h).unwrap());
                        }
                    }
                    assert_eq!(h.mode(), BiasMode::Learn, "{} {rule:?}", F::NAME);
                    me.id()
                })
                .join()
                .unwrap()
            });
            let biased = B::<F>::transitions(&rt, Transition::LearnToBiased);
            std::thread::scope(|s| {
                s.spawn(|| {
                    let me = rt.attach().unwrap();
                    if me.id() != dead {
                        let mask = crate::protocol::biased::OWNER_MASK;
                        h.0.store((h.raw() & !mask) | owner(me.id()), Ordering::Relaxed);
                    }
                    drop(me.enter(&h).unwrap());
                    assert_eq!(h.mode(), BiasMode::Thin, "{} {rule:?}", F::NAME);
                    // Thin for good: further acquisitions never bias it.
                    for _ in 0..2 * n {
                        drop(me.enter(&h).unwrap());
                    }
                    assert_eq!(h.mode(), BiasMode::Thin, "{} {rule:?}", F::NAME);
                });
            });
            assert_eq!(
                B::<F>::transitions(&rt, Transition::LearnToBiased),
                biased,
                "{} {rule:?}",
                F::NAME
            );
        }
        for rule in [LearnRule::PerObject, LearnRule::PerThread] {
            check::<FableHeuristics>(rule);
            check::<FableSeedHeuristics>(rule);
            check::<FableRseqHeuristics>(rule);
            check::<FableSignalHeuristics>(rule);
        }
    }

    /// The inline learn steps of `fable` (the guess's counted re-acquisition, clear → learn,
    /// a nested learn hold) are refused in native like every other acquisition (their
    /// thread's learn key is poisoned there), and work again after; `fable-signal`'s too
    /// (its counted step is inline after the owner's section, the others one call away).
    #[test]
    fn learn_steps_in_native_are_refused() {
        learn_steps_in_native_are_refused_in::<FableHeuristics>();
        learn_steps_in_native_are_refused_in::<FableSignalHeuristics>();
    }

    fn learn_steps_in_native_are_refused_in<F: crate::protocol::biased::Flavor>() {
        type B<F> = crate::protocol::biased::Biasing<F>;
        // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
        // run only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rt = unsafe { Runtime::<B<F>>::new_unchecked(Default::default()) };
        let me = rt.attach().unwrap();
        let (learning, fresh) = (BiasWord::default(), BiasWord::default());
        drop(me.enter(&learning).unwrap());
        assert_eq!(learning.mode(), BiasMode::Learn);
        let before = learning.raw();
        let held = me.enter(&learning).unwrap();
        me.in_native(|| {
            let refused = Err(crate::MonitorError::InNative);
            assert_eq!(me.enter(&learning).map(drop), refused, "nested learn");
            assert_eq!(me.enter(&fresh).map(drop), refused, "clear → learn");
        });
        drop(held);
        me.in_native(|| {
            let refused = Err(crate::MonitorError::InNative);
            assert_eq!(me.enter(&learning).map(drop), refused, "counted");
        });
        assert_eq!(fresh.mode(), BiasMode::Clear);
        assert_eq!(learning.mode(), BiasMode::Learn);
        // Counted once (the hold above), nothing in native.
        assert_eq!(
            (learning.raw() - before) >> 34,
            1,
            "one counted re-acquisition"
        );
        drop(me.enter(&learning).unwrap());
        drop(me.enter(&fresh).unwrap());
        assert_eq!(fresh.mode(), BiasMode::Learn);
        assert_eq!((learning.raw() - before) >> 34, 2);
    }

    /// The knob leaves the revocation mode alone, the default matches `BiasConfig`, and
    /// protocols without a knob (or values out of range) are refused, not ignored.
    #[test]
    fn knob_keeps_revocation_and_refuses_misuse() {
        let k = Fable::KNOB.expect("fable has a knob");
        assert_eq!(k, LEARN_LIMIT);
        assert_eq!(k.default, BiasConfig::default().learn_limit);
        assert!(k.values.windows(2).all(|w| w[0] < w[1]));
        assert!(k.values.iter().all(|v| (k.min..=k.max).contains(v)));
        let rt = Runtime::<Fable>::with_defaults();
        assert_eq!(rt.state().learn_limit(), k.default);
        Fable::configure(
            &rt,
            BiasConfig {
                revocation: Revocation::AsyncHandshake,
                learn_limit: 7,
            },
        );
        Fable::set_knob(&rt, 3).unwrap();
        assert_eq!(rt.state().revocation(), Revocation::AsyncHandshake);
        assert_eq!(rt.state().learn_limit(), 3);
        assert_eq!(Fable::set_knob(&rt, 0), Err(KnobError::OutOfRange));
        assert_eq!(
            rt.state().learn_limit(),
            3,
            "a refused value changes nothing"
        );

        assert_eq!(
            Biased::KNOB,
            None,
            "KKO biases on first acquire: nothing to learn"
        );
        let rt = Runtime::<Biased>::with_defaults();
        assert_eq!(Biased::set_knob(&rt, 3), Err(KnobError::NoKnob));
        assert_eq!(Thin::KNOB, None);
        let rt = Runtime::<Thin>::with_defaults();
        assert_eq!(Thin::set_knob(&rt, 3), Err(KnobError::NoKnob));
    }
}
