//! `fable`: Fine-grained Adaptive Biased Locking (seed 002 §3), on the engine of
//! [`biased`](super::biased) (header layout, fast paths and revocation are documented there).
//!
//! States and transitions (Figure 5): an object starts *clear*; its first acquisition makes
//! it *learn* with the acquirer as *bias guess* (state 01, §3.1, Figure 6); each further
//! non-recursive acquisition by the guess bumps the guess's per-thread `learnCount` and, when
//! that reaches the runtime's learn limit N (default 5, [`BiasConfig::learn_limit`]), biases the
//! object to it and resets the count — random counting, so on average N + 1 acquisitions; an
//! acquisition by any other thread in learn mode makes the object *thin* at once (if the
//! guess holds it, the other thread first waits as for a held thin lock). Biased → thin is a revocation; thin → fat happens on
//! contention, wait / notify and count overflow. Never rebias (§3.1).
//!
//! Fast paths (Figure 7): biased lock / unlock by the owner with plain loads and stores (see
//! the engine's documentation for exactly what they execute); thin lock when the thin lock is
//! free and its sticky last owner is the caller: one CAS; the combined learn / thin unlock of
//! the last level (the state's low bit is set in both, §3.2): one test and one releasing store
//! that only decrements the count, leaving the owner in place ("sticky lock owner"; Figure 7
//! has a CAS here — see the engine's documentation for why a store suffices).
//!
//! [`BiasConfig::learn_limit`]: super::biased::BiasConfig::learn_limit

use super::biased::{Biasing, Flavor};

/// FABLE heuristics (seed 002 §3.1–§3.2): learn mode, per-object adaptation, sticky owner.
#[derive(Debug)]
pub enum FableHeuristics {}

impl Flavor for FableHeuristics {
    const NAME: &'static str = "fable";
    const SUMMARY: &'static str = "FABLE: learn mode, bias after N acquisitions by one thread";
    const LEARN: bool = true;
    const STICKY: bool = true;
}

/// `fable`: FABLE biased locking (seed 002 §3).
pub type Fable = Biasing<FableHeuristics>;
