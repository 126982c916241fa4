//! Loom models of `thin`'s loose hash (`hash.rs`, `Parked::loose`): a hash parked by address
//! while another thread holds the lock once, which the owner's release settles (the hasher
//! marks the owner and runs the Dekker; the release stores, passes a compiler barrier and
//! loads its own mark). This process has `OBJMON_LOOM_LOOSE` set, so a hasher parks loose at
//! once instead of after `HASH_WAIT_BOUND`.
//!
//! The promise: every hash call returns the same value, and once everybody is done the header
//! carries it, so that the header moved by value keeps it and a fresh header in its place has
//! none.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p objmon --release
//! --test loom_hash_loose`.
#![cfg(loom)]

mod common;

use loom::sync::Arc;
use loom::thread;
use objmon::vm::{Config, DeflationPolicy, LockWord, Runtime, Thin};

fn config() -> Config {
    Config {
        deflation: DeflationPolicy::AtExit { keep: 0 },
        ..common::config(3)
    }
}

fn loose() {
    std::env::set_var("OBJMON_LOOM_LOOSE", "1");
}

/// The main thread holds the lock once and lets go while another thread hashes: the hasher
/// may find it held (and park loose, marking the owner) or free (and inflate), and the
/// release may come before the mark, between the mark and the hasher's re-read, or after.
#[test]
fn thin_loose_hash_vs_release_and_move() {
    loose();
    common::builder(3).check(|| {
        let rt = Runtime::<Thin>::new(config());
        let h = Arc::new(LockWord::default());
        let me = rt.attach().unwrap();
        let g = me.enter(&h).unwrap();
        let (rt2, h2) = (rt.clone(), h.clone());
        let hasher = thread::spawn(move || rt2.attach().unwrap().identity_hash(&h2).unwrap());
        drop(g);
        let v = hasher.join().unwrap();
        // No hash call here: it would adopt a loose entry the release failed to settle.
        drop(me);
        common::hash_follows_the_move(&rt, h, v);
    });
}

/// As above, with a third thread that locks and unlocks the word once: it may take the word
/// between the owner's release and the owner's settling, when the owner hands the entry to
/// it (mark, barrier, re-read) and its own release settles it.
#[test]
fn thin_loose_hash_handed_to_the_next_owner() {
    loose();
    let mut b = common::builder(3);
    b.max_branches = 1_000_000;
    b.check(|| {
        let rt = Runtime::<Thin>::new(config());
        let h = Arc::new(LockWord::default());
        let me = rt.attach().unwrap();
        let g = me.enter(&h).unwrap();
        let (rt2, h2) = (rt.clone(), h.clone());
        let hasher = thread::spawn(move || rt2.attach().unwrap().identity_hash(&h2).unwrap());
        let (rt3, h3) = (rt.clone(), h.clone());
        let next = thread::spawn(move || {
            let c = rt3.attach().unwrap();
            let g = c.enter(&h3).unwrap();
            // Holds the word a while: the owner's settling may find it held.
            thread::yield_now();
            drop(g);
        });
        drop(g);
        let v = hasher.join().unwrap();
        next.join().unwrap();
        drop(me);
        common::hash_follows_the_move(&rt, h, v);
    });
}
