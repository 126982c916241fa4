//! `thin` and `thin-seed`: the thin locks of Bacon, Konuru, Murthy and Serrano (seed 000
//! §2.3), with identity hashes kept in the fat monitor.
//!
//! Header ([`LockWord`], the seed's Figures 1 and 2):
//!
//! | bits   | thin (bit 31 = 0)                        | inflated (bit 31 = 1)          |
//! |--------|------------------------------------------|--------------------------------|
//! | 31     | monitor shape bit = 0                    | monitor shape bit = 1          |
//! | 30..16 | owner thread index (15 bits), 0 = free   | monitor index (23 bits, 30..8) |
//! | 15..8  | count = locks − 1 (8 bits)               | ″                              |
//! | 7..0   | host bits (constant while live)          | host bits                      |
//!
//! [`ThinSeed`] runs §2.3's fast paths as written. [`Thin`] departs from them in three ways:
//! - its lock loads the word and tests the nested case before any CAS (§2.3.3 fails a CAS first);
//! - its unlock of the word it last locked by CAS stores the host bits blind (§2.3.2 loads and compares);
//! - a guard's nested unlock stores back the word its nested lock found (the hint), from a register.
//!
//! Both depart from the seed where it is silent: a contender that has waited about a
//! millisecond inflates the lock *for* an owner blocked inside objmon (§2.3.4 only spins);
//! an identity hash lives in the fat monitor (hashing inflates), or is parked by address
//! while the owner must still pass a slow path.
//!
//! | path (guard API)        | atomic operations                              | instr. `thin` / `thin-seed` |
//! |-------------------------|------------------------------------------------|-----------------------------|
//! | lock + unlock, free     | CAS (Acquire); store (Release)                 | 25 / 17                     |
//! | nested lock + unlock    | none: a load and a plain store each            | 20 / 65                     |
//! | inflated lock + unlock  | the fat monitor's CAS and release (`tasuki.rs`) | ~127                        |
//!
//! (Instructions: callgrind over `examples/user_loop.rs`, loop included; `thin-seed`'s
//! unlock loads the word after the CAS, which costs more time than its fewer instructions.)
//!
//! **Invariants.**
//! - Owner only modifies (§2.3): while a thread holds the thin word, no other thread writes
//!   it, except to inflate it for an owner that is `BLOCKED` inside objmon or detached
//!   ([`ThinThread`]), claimed by CAS, while that owner writes none of its words.
//! - The record (`ThinThread::last`): while it names address `a`, the word at `a` is
//!   `host | me`, held once by this thread. Every other write of ours to a word we hold
//!   forgets it first; becoming `BLOCKED` forgets it; `reclaim` and `relocate` clear it by CAS.
//! - A fat word stays fat for the object's lifetime (until `reclaim`).
//! - A hash parked by address is settled into the header before the header can move, or is
//!   `hash::pinned` (the header's host bits decide it), so a move cannot change it.
//!
//! Files: `thin/entry.rs` (the [`Protocol`] impl and its fast paths), `thin/slow.rs` (nested,
//! contended and inflation paths, the blocked state), `thin/hashing.rs` (identity hash),
//! `thin/thread.rs` (per-thread state). The arguments: `docs/soundness.md`, "`thin` and
//! `thin-seed`"; measurements and what was tried: `docs/benchmarks.md`, same title.

use super::{LockWord, Protocol, HOST_BITS_MASK};
use crate::hash;
use crate::monitor::{FatMonitor, WaitOutcome};
use crate::protocol::ThreadContext;
use crate::runtime::{Config, InflationCause, Runtime};
use crate::spin::Spin;
use crate::spin_episode::SpinEpisode;
use crate::sync::{spin_hint, AtomicBool, AtomicU32, AtomicUsize, Ordering};
use crate::table::MonitorIndex;
use crate::thread::ThreadId;
use crate::MonitorError;
use std::time::Instant;

/// Monitor shape bit: 1 = inflated.
const SHAPE: u32 = 1 << 31;
const OWNER_SHIFT: u32 = 16;
const OWNER_MASK: u32 = 0x7fff << OWNER_SHIFT;
const COUNT_SHIFT: u32 = 8;
const COUNT_MASK: u32 = 0xff << COUNT_SHIFT;
/// One nested lock in the count field.
const COUNT_ONE: u32 = 1 << COUNT_SHIFT;
/// `thin`'s hint ([`Protocol::lock`]) of a nested lock, above the 32 bits of the word
/// it found.
const HINT_NESTED: u64 = 1 << 32;
/// The lock field: everything but the host bits.
const LOCK_MASK: u32 = !HOST_BITS_MASK;
const INDEX_SHIFT: u32 = 8;
const INDEX_MASK: u32 = 0x7f_ffff << INDEX_SHIFT;

/// The thin-lock protocols (see the module documentation): [`Thin`] (`SEED = false`) and
/// [`ThinSeed`] (`SEED = true`, seed 000 §2.3's paths as written).
#[derive(Debug)]
pub enum ThinLocks<const SEED: bool> {}

/// `thin`: seed 000's thin locks with inline nesting (no atomic read-modify-write) and the
/// blind-store unlock after the thread's last fast lock (module documentation). The default
/// protocol of [`Monitor<T>`](crate::Monitor).
pub type Thin = ThinLocks<false>;

/// `thin-seed`: seed 000 §2.3's fast paths as written: the nested lock after a failed CAS,
/// out of line; the unlock a load, a compare and a store. Once inflated (§2.3.4), the same
/// monitor path as [`Thin`], after the seed's CAS on the inflated word.
pub type ThinSeed = ThinLocks<true>;

#[inline]
fn monitor_of<const S: bool>(
    rt: &Runtime<ThinLocks<S>>,
    w: u32,
) -> Result<&FatMonitor, MonitorError> {
    let idx = MonitorIndex::new((w & INDEX_MASK) >> INDEX_SHIFT);
    // Another runtime's index: `ForeignHeader` (table.rs, one index space).
    rt.monitors()
        .checked(idx.expect("inflated lock word holds a monitor index"))
}

/// Locks held in a thin word owned by the caller: count + 1.
#[inline]
fn thin_locks(w: u32) -> u32 {
    ((w & COUNT_MASK) >> COUNT_SHIFT) + 1
}

/// The pinned hash of the object whose word is `w` (`hash::pinned` of its host bits): every
/// parked hash is one, so an entry at an address is this object's only if it matches.
fn pin(w: u32) -> u32 {
    hash::pinned(w & HOST_BITS_MASK, ThinLocks::<false>::HASH_BITS)
}

#[inline]
fn addr(h: &LockWord) -> usize {
    h as *const LockWord as usize
}

/// The raw thread id in a thin word's owner field.
#[inline]
fn owner_raw(w: u32) -> u32 {
    (w & OWNER_MASK) >> OWNER_SHIFT
}

/// A thin word held by thread `owner` (raw id), at any count.
#[inline]
fn held_by(w: u32, owner: u32) -> bool {
    w & SHAPE == 0 && owner_raw(w) == owner && w & LOCK_MASK != 0
}

/// A thin word held by thread `owner` (raw id) with at least two levels: every operation of
/// that owner on it is a slow path until it is down to one level again.
#[inline]
fn held_nested_by(w: u32, owner: u32) -> bool {
    w & SHAPE == 0 && owner_raw(w) == owner && w & COUNT_MASK != 0
}

mod entry;
mod hashing;
mod slow;
#[cfg(all(test, not(loom)))]
mod tests;
mod thread;

pub use thread::ThinThread;
use thread::*;
