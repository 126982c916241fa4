//! Loom models of the biased engine's nested learn / thin holds against a hasher (the nested lock
//! and unlock of a learn or thin word the thread holds, `nested_step` and `exit_nested` / the rseq
//! and signal flavors' inline nested unlock in `biased.rs`). A hash asked for while the owner holds
//! the word nested is parked in the side table; the owner's unlock down to one level must settle it
//! into a monitor (the Dekker of `hash.rs`: the owner's store, its barrier, the table's count —
//! read now with the mode cached on the thread's line, `LockRecords::hash_fence`). The hasher may
//! also come before the first lock or after the last unlock, or while the word is held once (it
//! waits).
//!
//! Every model checks: the hash the hasher got is the object's hash afterwards (the owner's
//! own call, a peek), nobody owns the object, and it can still be locked.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p objmon --release
//! --test loom_biased_nested`. `.ci/run` also runs it with `OBJMON_LOOM_SYMMETRIC=1` (a
//! process without `membarrier`: the runtime biases nothing, words stay learn or turn thin,
//! and the owner's side of the Dekker is the out-of-line fence).
#![cfg(loom)]

mod common;

use loom::sync::Arc;
use loom::thread;
use objmon::protocol::biased::{BiasMode, Biasing, Flavor};
use objmon::protocol::fable::{FableHeuristics, FableRseqHeuristics};
use objmon::vm::{BiasConfig, BiasWord, Revocation, Runtime};

/// A runtime of flavor `F` with the barrier revocation where the process has it (else what
/// `configure` falls back to) and learn limit `learn_limit`.
fn runtime<F: Flavor>(learn_limit: u32) -> std::sync::Arc<Runtime<Biasing<F>>> {
    let rt = Runtime::<Biasing<F>>::new(common::config(2));
    Biasing::<F>::configure(
        &rt,
        BiasConfig {
            revocation: Revocation::Membarrier,
            learn_limit,
        },
    );
    rt
}

/// `h` held `depth` times (2 or 3) by the main thread — a learn word (`thin` false: a fresh
/// FABLE object under a learn limit it does not reach) or a thin one (`thin`: biased, given
/// up with `revoke_now`, then locked by the thin CAS; only where the runtime biased it) — while
/// a second thread hashes it; the main thread then unlocks every level.
fn parked_hash_vs_nested_unlocks<F: Flavor>(thin: bool, depth: usize) {
    let mut b = common::builder(2);
    b.max_branches = 100_000;
    b.check(move || {
        let rt = runtime::<F>(if thin { 1 } else { 100 });
        let biases = rt.state().revocation() == Revocation::Membarrier;
        let h = Arc::new(BiasWord::new(0x5a));
        let me = rt.attach().unwrap();
        if thin && biases {
            drop(me.enter(&*h).unwrap());
            drop(me.enter(&*h).unwrap());
            if h.mode() == BiasMode::Biased {
                Biasing::<F>::revoke_now(&rt, me.context(), &h).unwrap();
                assert_eq!(h.mode(), BiasMode::Thin);
            }
        }
        let guards: Vec<_> = (0..depth).map(|_| me.enter(&*h).unwrap()).collect();
        let mode = h.mode();
        assert!(
            matches!(mode, BiasMode::Learn | BiasMode::Thin),
            "held nested as a learn or thin word: {mode:?}"
        );
        let (rt2, h2) = (rt.clone(), h.clone());
        let hasher = thread::spawn(move || rt2.attach().unwrap().identity_hash(&h2).unwrap());
        for g in guards.into_iter().rev() {
            drop(g);
        }
        let v = hasher.join().unwrap();
        assert_eq!(me.lock_count(&h), 0);
        assert_eq!(rt.owner_of(&h), None);
        assert_eq!(rt.peek_identity_hash(&h), Some(v), "the hash was lost");
        assert_eq!(me.identity_hash(&h), Ok(v));
        drop(me.enter(&*h).unwrap());
        assert_eq!(h.host_bits(), 0x5a);
    });
}

/// `fable` (records): the nested unlock is `exit_nested`, out of line.
#[test]
fn fable_learn_parked_hash_vs_nested_unlock() {
    parked_hash_vs_nested_unlocks::<FableHeuristics>(false, 2);
}

/// `fable-rseq`: the nested unlock is inline in `exit` (its parked-hash check out of line).
#[test]
fn fable_rseq_learn_parked_hash_vs_nested_unlock() {
    parked_hash_vs_nested_unlocks::<FableRseqHeuristics>(false, 2);
}

/// Held three deep: the hash may be parked before either nested unlock; the one to one
/// level settles it.
#[test]
fn fable_rseq_learn_parked_hash_vs_two_nested_unlocks() {
    parked_hash_vs_nested_unlocks::<FableRseqHeuristics>(false, 3);
}

/// A thin word (after a revocation), both ways of unlocking it nested.
#[test]
fn fable_thin_parked_hash_vs_nested_unlock() {
    parked_hash_vs_nested_unlocks::<FableHeuristics>(true, 2);
    parked_hash_vs_nested_unlocks::<FableRseqHeuristics>(true, 2);
}
