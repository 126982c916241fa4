//! `biased`: KKO biased locking (bias on first acquire, never rebias) and the engine it
//! shares with [`fable`](super::fable): the header, the flavors, the configuration and the
//! per-thread state; the fast paths, slow paths and revocation are in `biased/*.rs`, the
//! identity hash in [`biased_hash`](super::biased_hash). Soundness: docs/soundness.md §9;
//! measurements: docs/benchmarks.md, "Biased-family notes moved out of the code".
//!
//! Header ([`BiasWord`], 64 bits; seed 002 Figures 3 and 6, widened for a generation):
//!
//! | bits   | biased (00)                  | learn (01, `fable`)              | thin (11)           | fat (10)            |
//! |--------|------------------------------|----------------------------------|---------------------|---------------------|
//! | 63..34 | owner generation (30 bits)   | 62..42 learn tag; 41..34 count   | 0                   | 0                   |
//! | 33..19 | bias owner id (0 = clear)    | bias guess id                    | owner (sticky: FABLE) | monitor index (41..19) |
//! | 18     | revoking                     | 0                                | stale (records)     | —                   |
//! | 17..16 | 00                           | 01                               | 11                  | 10                  |
//! | 15..8  | rc (0 with records)          | rc                               | rc                  | —                   |
//! | 7..0   | host bits                    | host bits                        | host bits           | host bits           |
//!
//! Implements seed 002 (Pizlo, Frampton, Hosking: FABLE, over KKO as built in Jikes RVM):
//! §2.2 KKO, §3.1 learn mode, §3.2 state encoding, §3.3 handshake revocation, Figures 3–7.
//! Departures, one line each:
//! - a bias carries the owner's generation, so a recycled thread id does not match it;
//! - records flavors keep a biased hold's count in per-thread lock records (HotSpot 17), not rc;
//! - rseq / signal flavors run Figure 4's step in a section a revoker's barrier restarts;
//! - revocation of a running owner is by an asymmetric `membarrier` Dekker by default;
//! - the non-seed flavors take a fresh object's, a learn word's and nested holds inline;
//! - the last-level unlock is a release store, not Figure 7's CAS (nobody else writes a held word);
//! - the non-seed FABLE flavors count learning per object ([`LearnRule::PerObject`]);
//! - a thread in native refuses to lock (its cached bits are poisoned) instead of being walked.
//!
//! Invariants:
//! - a biased header is written only by its owner while RUNNING, or by a revoker holding the
//!   owner's revoker mutex; no CAS of a contender ever touches a biased header;
//! - a held thin or learn word is written only by its owner; contenders spin, inflate only
//!   what they won;
//! - never rebias: a header leaves thin only for fat, and biases only from clear or learn;
//! - while `LockRecords::last` names `a`, the word at `a` is `last_word + RC_ONE`, held once
//!   by this thread; every write of ours to a held word forgets the record first;
//! - in native the thread's cached bias, thin-free and nest bits are `NO_BIAS`, so no fast
//!   path of it acts as an owner;
//! - records hold header addresses and are never dereferenced (a missed relocation is a
//!   wrong count, never undefined behaviour); bit 63 is clear in every word.
//!
//! Fast paths (bias owner, lock + unlock, callgrind instructions plain / nested through the
//! public API; no atomic read-modify-write and no fence in any; thin: one CAS to lock, one
//! release store to unlock):
//!
//! | flavor (`biased-*` / `fable-*`) | owner's lock + unlock | stores | instructions |
//! |---------------------------------|-----------------------|--------|--------------|
//! | `-signal`        | load, compare, store ± 256 in a signal-restarted section | header ×2 | 18 / 18 |
//! | `-rseq`          | arm `rseq_cs`, load, compare, store ± 256               | header ×2, `rseq_cs` ×2 | 32 / 32 |
//! | `-seed`          | `in_op`, load, re-load, store ± 256 (Dekker)            | header ×2, `in_op` ×4 | 39 / 39 |
//! | records (`biased`, `fable`) | push / pop a record, re-load the header      | record ×2, top ×2 | 50 / 50, 51 / 51 |
use super::fable::{LearnRule, LEARN_LIMIT};
use super::{KnobError, Protocol, HOST_BITS_MASK};
use crate::membarrier::{owner_barrier, process_barrier, process_barrier_rseq};
use crate::monitor::{FatMonitor, WaitOutcome};
use crate::protocol::ThreadContext;
use crate::revoke::{Revocation, RevocationKind, RevocationStats, Safepoint};
use crate::runtime::{Config, InflationCause, Runtime};
use crate::spin::Spin;
use crate::sync::{AtomicU32, AtomicU64, Ordering};
use crate::table::MonitorIndex;
use crate::thread::ThreadId;
use crate::MonitorError;
use records::{free_thin, LockRecords, NO_BIAS, NO_NEST, REC_RELEASING, REC_TOMB};
use std::marker::PhantomData;

mod dispatch;
mod fastpath;
mod learn;
mod protocol_impl;
mod records;
mod revocation;
mod slow;
mod state;
pub use records::LOCK_RECORDS;
pub use state::{BiasState, BiasThread};
use std::time::Instant;

pub(crate) const HOST: u64 = HOST_BITS_MASK as u64;
const RC_SHIFT: u32 = 8;
const RC_ONE: u64 = 1 << RC_SHIFT;
const RC_MASK: u64 = 0xff << RC_SHIFT;
/// `(word ^ bias) < RC_LIMIT` ⇔ biased to me, not revoking, rc < 255.
const RC_LIMIT: u64 = 0xff << RC_SHIFT;
pub(crate) const STATE_MASK: u64 = 3 << 16;
pub(crate) const BIASED: u64 = 0;
const LEARN: u64 = 1 << 16;
pub(crate) const FAT: u64 = 2 << 16;
const THIN: u64 = 3 << 16;
/// Set in learn and thin: the combined unlock path tests only this bit (§3.2).
const STATE_LOW: u64 = 1 << 16;
const REVOKING: u64 = 1 << 18;
/// Bit 18 in a thin word (records variant): revoked while held, so the owner still has lock
/// records for this header, which its next unlock buries. Inside the mask of the inline
/// unlock test, so that unlock goes out of line.
const STALE: u64 = REVOKING;
const OWNER_SHIFT: u32 = 19;
pub(crate) const OWNER_MASK: u64 = 0x7fff << OWNER_SHIFT;
/// What the nested lock and unlock tests read of a learn or thin word (bits 33..8 but 17):
/// owner, stale, the state's low bit and rc — not a learn word's tag and count, nor the
/// state bit that tells learn from thin (`nested_step`, `exit_nested`).
const NEST_MASK: u64 = STATE_LOW | REVOKING | OWNER_MASK | RC_MASK;
/// No header word (a thin word has bits 63..34 clear): what `exit` passes `exit_nested`
/// after its inline nested unlock when the parked-hash check must run out of line.
const SETTLE: u64 = u64::MAX;
const GEN_SHIFT: u32 = 34;
const GEN_BITS: u64 = (1 << 30) - 1;
const GEN_MASK: u64 = GEN_BITS << GEN_SHIFT;
pub(crate) const INDEX_SHIFT: u32 = 19;
const INDEX_MASK: u64 = 0x7f_ffff << INDEX_SHIFT;

/// The 64-bit header of the biased protocols: see the module documentation for the layout.
pub struct BiasWord(pub(crate) AtomicU64);

impl Default for BiasWord {
    /// A clear (never locked) header with all host bits clear.
    fn default() -> Self {
        Self::new(0)
    }
}

impl BiasWord {
    crate::sync::const_unless_loom! {
        /// A clear header carrying `host_bits` in its low byte.
        pub fn new(host_bits: u8) -> Self {
            Self(AtomicU64::new(host_bits as u64))
        }
    }

    /// The host's 8 bits (never changed by the protocols).
    #[inline]
    pub fn host_bits(&self) -> u8 {
        (self.0.load(Ordering::Relaxed) & HOST) as u8
    }

    /// The whole word, for introspection and tests (a racy snapshot).
    #[inline]
    pub fn raw(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// The lock state in the word now (a racy snapshot).
    pub fn mode(&self) -> BiasMode {
        let w = self.raw();
        match w & STATE_MASK {
            BIASED if w & OWNER_MASK == 0 => BiasMode::Clear,
            BIASED => BiasMode::Biased,
            LEARN => BiasMode::Learn,
            THIN => BiasMode::Thin,
            _ => BiasMode::Fat,
        }
    }
}

impl std::fmt::Debug for BiasWord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BiasWord({:#018x})", self.raw())
    }
}

/// The states of Figure 5 (seed 002).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BiasMode {
    /// Never locked.
    Clear,
    /// Biased to a thread (possibly being revoked).
    Biased,
    /// `fable` learn mode: a bias guess and a count.
    Learn,
    /// Thin lock.
    Thin,
    /// Fat monitor installed.
    Fat,
}

/// State transitions counted per runtime (Figure 5's arrows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transition {
    /// KKO: first acquire biases.
    ClearToBiased,
    /// FABLE: first acquire starts learning.
    ClearToLearn,
    /// FABLE: the guess re-acquired often enough.
    LearnToBiased,
    /// FABLE: a second thread acquired in learn mode.
    LearnToThin,
    /// Revocation.
    BiasedToThin,
    /// The bias owner inflated (wait / notify, count overflow).
    BiasedToFat,
    /// Inflation from learn mode (wait / notify, count overflow).
    LearnToFat,
    /// Inflation of a thin lock (contention, wait / notify, count overflow).
    ThinToFat,
}

const TRANSITIONS: usize = 8;

/// The two heuristics over one engine: KKO (`biased`) and FABLE (`fable`).
pub trait Flavor: Send + Sync + 'static {
    /// Catalog name.
    const NAME: &'static str;
    /// One line for reports.
    const SUMMARY: &'static str;
    /// Clear → learn (FABLE §3.1) instead of clear → biased (KKO).
    const LEARN: bool;
    /// Thin unlock keeps the owner (FABLE §3.2 "sticky owner") instead of clearing it.
    const STICKY: bool;
    /// Where a biased lock's recursion count lives: `true`, in the owner's
    /// lock records (HotSpot 17; the bias owner never writes the header; module docs);
    /// `false`, in the header's rc field (seed 002 Figures 3 and 4, the owner stores ±256).
    const RECORDS: bool;
    /// Header variant only: the bias owner's ±256 store runs inside an rseq critical
    /// section (the kernel restarts it when the thread is preempted or a revoker's
    /// `membarrier(PRIVATE_EXPEDITED_RSEQ)` lands in it), so it is Figure 4's load, compare
    /// and store with no Dekker around it; `false`: the `in_op` Dekker (module docs).
    const RSEQ: bool = false;
    /// With [`RSEQ`](Self::RSEQ): the section is never armed; a revoker restarts it by a
    /// signal to the owner (`crate::sigbarrier`) instead of the rseq barrier, so the owner's
    /// step is Figure 4's load, compare and store with no store before it (module docs).
    /// Such a flavor is sound only while the host keeps the signal-handler contract
    /// ([`Protocol::HOST_SIGNAL_CONTRACT`], [`Runtime::new_unchecked`](crate::vm::Runtime::new_unchecked)).
    const SIGNAL: bool = false;
}

/// KKO heuristics (seed 002 §2.2.1): bias on first acquire, never rebias; the bias owner's
/// step is Figure 4's load, compare and store of the header count in an rseq section (module
/// docs): `biased-rseq`, beside `biased` (records) and `biased-seed` (the `in_op` Dekker).
#[derive(Debug)]
pub enum KkoRseq {}

impl Flavor for KkoRseq {
    const NAME: &'static str = "biased-rseq";
    const SUMMARY: &'static str =
        "KKO biased locking: bias on first acquire, never rebias; owner's load/compare/store in rseq";
    const LEARN: bool = false;
    const STICKY: bool = false;
    const RECORDS: bool = false;
    const RSEQ: bool = true;
}

/// KKO heuristics, the bias owner's step Figure 4's load, compare and store of the header
/// count in a section that no store arms: a revoker restarts it with a signal to the owner
/// (`biased-signal`; docs/soundness.md §9, "Revocation").
#[derive(Debug)]
pub enum KkoSignal {}

impl Flavor for KkoSignal {
    const NAME: &'static str = "biased-signal";
    const SUMMARY: &'static str =
        "KKO biased locking: owner's load/compare/store in a section a revoker's signal restarts";
    const LEARN: bool = false;
    const STICKY: bool = false;
    const RECORDS: bool = false;
    const RSEQ: bool = true;
    const SIGNAL: bool = true;
}

/// KKO heuristics with the bias owner's count in lock records (HotSpot 17's scheme): the
/// owner never writes a biased header (`biased`).
#[derive(Debug)]
pub enum Kko {}

impl Flavor for Kko {
    const NAME: &'static str = "biased";
    const SUMMARY: &'static str =
        "KKO biased locking: bias on first acquire, never rebias; count in lock records";
    const LEARN: bool = false;
    const STICKY: bool = false;
    const RECORDS: bool = true;
}

/// KKO heuristics with the recursion count in the header, as seed 002 Figures 3 and 4 have
/// it (the bias owner's lock and unlock store the header ± 256, behind the `in_op` Dekker).
#[derive(Debug)]
pub enum KkoSeed {}

impl Flavor for KkoSeed {
    const NAME: &'static str = "biased-seed";
    const SUMMARY: &'static str =
        "KKO biased locking, count in the header as seed 002 Figures 3-4 have it";
    const LEARN: bool = false;
    const STICKY: bool = false;
    const RECORDS: bool = false;
}

/// A biased-locking protocol with heuristics `F` (see the module documentation).
pub struct Biasing<F: Flavor> {
    _never: std::convert::Infallible,
    _f: PhantomData<F>,
}

/// `biased`: KKO biased locking (seed 002 §2.2) with the bias owner's count in lock records
/// (HotSpot 17's scheme: the owner never writes a biased header). Portable wherever `membarrier` works.
///
/// A forgotten guard's biased hold stays with the header's address, not its value: moved
/// away (`mem::swap`, `mem::replace`), the value is no longer held, and a header biased to
/// the same thread swapped into that address counts as held by it for good (docs/soundness.md
/// §9, "A forgotten guard, then a move"). The records end with their thread: a forgotten
/// biased hold is released when its owner detaches (a thin or fat one stays held for good).
/// Never two owners.
pub type Biased = Biasing<Kko>;

/// `biased-seed`: KKO biased locking with the count in the header (Figures 3 and 4).
pub type BiasedSeed = Biasing<KkoSeed>;

/// `biased-rseq`: KKO biased locking, the count in the header, the owner's Figure 4 step in a
/// Linux restartable sequence ([`KkoRseq`]; x86-64 Linux with glibc's rseq registration,
/// elsewhere it biases nothing).
pub type BiasedRseq = Biasing<KkoRseq>;

/// `biased-signal`: KKO biased locking, the count in the header, the owner's Figure 4 step
/// in a section a revoker restarts by a signal to the owner ([`KkoSignal`]; x86-64 Linux
/// with glibc, elsewhere it biases nothing).
pub type BiasedSignal = Biasing<KkoSignal>;

/// Per-runtime settings of the biased protocols.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BiasConfig {
    /// How biases held by other threads are revoked.
    pub revocation: Revocation,
    /// FABLE's learn limit N (§3.1; default [`DEFAULT_LEARN_LIMIT`]); ignored by `biased`.
    pub learn_limit: u32,
}

/// FABLE's learn limit when nobody sets one: §3.1 "we arbitrarily chose learnCount==5".
pub const DEFAULT_LEARN_LIMIT: u32 = 5;

impl Default for BiasConfig {
    /// Membarrier revocation; where the kernel refuses the barrier, [`Revocation::NoBias`]
    /// (see [`BiasState::set`]); learn limit 5.
    fn default() -> Self {
        Self {
            revocation: Revocation::Membarrier,
            learn_limit: DEFAULT_LEARN_LIMIT,
        }
    }
}

type Cx<F> = ThreadContext<Biasing<F>>;
type Rt<F> = Runtime<Biasing<F>>;

#[inline]
pub(crate) fn addr(h: &BiasWord) -> usize {
    h as *const BiasWord as usize
}

#[inline]
pub(crate) fn rc(w: u64) -> u64 {
    (w & RC_MASK) >> RC_SHIFT
}

impl<F: Flavor> Biasing<F> {
    /// Leaves `h` unbiased (thin, learn, fat or clear), revoking a bias held by another
    /// thread (by the runtime's revocation) or giving up `t`'s own (a CAS to a thin word
    /// with `t`'s count; `t` keeps every hold). The entry point for anything else that wants
    /// to write the header (seed 002 §2.2: "anything else that writes the header revokes
    /// first"), such as an identity hash. The header may be biased again afterwards only by
    /// KKO's clear → biased or FABLE's learn → biased, never from thin (never rebias).
    ///
    /// # Errors
    /// [`MonitorError::ForeignHeader`] if the bias belongs to a live thread of another
    /// runtime (the header is used with two runtimes; docs/soundness.md §7): nothing changed.
    pub fn revoke_now(rt: &Rt<F>, t: &Cx<F>, h: &BiasWord) -> Result<(), MonitorError> {
        let mut spins = Spin::new();
        loop {
            Self::poll_self(rt, t);
            let w = h.0.load(Ordering::Acquire);
            if w & STATE_MASK != BIASED || w & OWNER_MASK == 0 {
                return Ok(());
            }
            if w & REVOKING != 0 {
                spins.snooze();
                continue;
            }
            if w & (OWNER_MASK | GEN_MASK) != Self::my_bias(t) {
                Self::revoke(rt, t, h, w)?;
                continue;
            }
            // Ours, perhaps held: a thin record naming `h` is stale (`LockRecords::clear_last`).
            t.local().rec.forget_if_last(addr(h));
            let n = if F::RECORDS {
                u64::from(t.local().rec.own_count(addr(h)))
            } else {
                rc(w)
            };
            let new = if n == 0 && !F::STICKY {
                (w & HOST) | THIN
            } else {
                (w & (HOST | OWNER_MASK)) | THIN | (n << RC_SHIFT)
            };
            if Self::cas(h, w, new) {
                if F::RECORDS {
                    t.local().rec.bury(addr(h));
                }
                t.local().count(Transition::BiasedToThin);
                return Ok(());
            }
        }
    }

    /// GC hook: the headers `t` holds biased, one entry per hold, oldest first (records
    /// variant; empty for the header variant, whose holds are in the headers). GC roots.
    pub fn locked_objects(t: &Cx<F>) -> Vec<*const BiasWord> {
        let rec = &t.local().rec;
        let top = rec.top.load(Ordering::Relaxed);
        rec.slots[..top]
            .iter()
            .map(|s| s.load(Ordering::Relaxed))
            .filter(|&v| v != REC_TOMB && v != 0 && v & REC_RELEASING == 0)
            .map(|v| v as *const BiasWord)
            .collect()
    }

    /// [`Runtime::relocate`]'s part here: the object whose header was at `from` now has its
    /// header at `to` (the host copied the word verbatim). Rewrites every lock record. Call only while every attached
    /// thread is stopped outside this crate's calls (a safepoint): records are otherwise
    /// written only by their own threads. Records are never dereferenced, so a missed
    /// relocation is a wrong count, never undefined behaviour.
    fn rewrite_records(rt: &Rt<F>, from: *const BiasWord, to: &BiasWord) {
        for cx in rt.threads().snapshot() {
            for s in &cx.local().rec.slots {
                if s.load(Ordering::Relaxed) == from as usize {
                    s.store(addr(to), Ordering::Release);
                }
            }
        }
    }

    /// `w`, the word of the header at `a`, dies or moves: if it is thin or learn and held
    /// once, its owner may have recorded `a` as its last inline lock (`LockRecords::last`); clear
    /// that record. A CAS on another thread's record, which it writes with plain stores: if
    /// it has recorded another word since, the CAS fails and that record stays. Relaxed: the
    /// owner's next use of the address (a new object there) is ordered after this call by
    /// whatever handed it the new object, and then reads 0 or a later record (coherence).
    #[cold]
    fn forget_record(rt: &Rt<F>, w: u64, a: usize) {
        if Self::SEED || w & (STATE_LOW | RC_MASK) != STATE_LOW | RC_ONE {
            return;
        }
        let raw = ((w & OWNER_MASK) >> OWNER_SHIFT) as u32;
        let cx = ThreadId::from_raw(raw).and_then(|id| rt.threads().get(id));
        if let Some(cx) = cx {
            cx.local().rec.clear_last(a);
        }
    }

    /// Applies `c` to `rt` (see [`BiasState::set`]); returns the revocation in use.
    pub fn configure(rt: &Rt<F>, c: BiasConfig) -> Revocation {
        rt.state().set(c)
    }

    /// How many times transition `tr` happened in `rt` (attached threads' private counts,
    /// read racily, plus detached threads' and revocations).
    pub fn transitions(rt: &Rt<F>, tr: Transition) -> u64 {
        rt.state().transitions_shared(tr)
            + rt.threads()
                .snapshot()
                .iter()
                .map(|c| c.local().transitions[tr as usize].load(Ordering::Relaxed))
                .sum::<u64>()
    }

    /// Thread `t`'s bias bits: owner id and generation, state biased, rc 0.
    #[inline(always)]
    pub(crate) fn my_bias(t: &Cx<F>) -> u64 {
        Self::my_owner(t) | ((u64::from(t.core().generation()) & GEN_BITS) << GEN_SHIFT)
    }

    #[inline(always)]
    pub(crate) fn my_owner(t: &Cx<F>) -> u64 {
        t.local().rec.owner
    }

    /// [`my_bias`](Self::my_bias) from the thread's cache line: one load. `NO_BIAS` (matching
    /// nothing) until the thread's first slow path.
    #[inline(always)]
    fn cached_bias(t: &Cx<F>) -> u64 {
        t.local().rec.bias.load(Ordering::Relaxed)
    }

    /// Seed 002's own fast paths exactly (Figures 4 and 7: the seed flavors); the others
    /// add the inline paths of `fresh_enter` and of nested thin / learn holds.
    const SEED: bool = !F::RECORDS && !F::RSEQ;

    /// rseq flavors: caches where the calling thread's `rseq.rseq_cs` is, if glibc
    /// registered rseq for it; `false` otherwise (the thread then never biases anything:
    /// its owner step needs the section). Called by `t`'s own thread (`enter_slow`).
    fn rseq_ready(t: &Cx<F>) -> bool {
        #[cfg(loom)]
        {
            let _ = t;
            true
        }
        #[cfg(not(loom))]
        {
            if F::SIGNAL {
                // The handler is installed and this thread does not block its signal.
                return crate::sigbarrier::thread_ready();
            }
            cfg!(all(target_arch = "x86_64", target_os = "linux"))
                && (crate::rseq::offset().is_some() && crate::rseq::thread_registered()
                    || t.local().rseq_forced.load(Ordering::Relaxed))
        }
    }

    /// Measurement hook for instruction counters that cannot run rseq (valgrind refuses
    /// the `rseq` system call, so glibc registers nothing and the rseq flavors would bias
    /// nothing under it): the calling thread runs its owner step in a section the kernel
    /// does not know about, as if rseq were registered. Returns whether it could (glibc
    /// exports `__rseq_offset`). A no-op for the other flavors.
    ///
    /// # Safety
    ///
    /// `t` is the calling thread's own context, and no other thread may ever revoke a bias
    /// held by this thread by the barrier (which can no longer restart its sections): use
    /// it in a single-threaded measurement, or with a handshake revocation only.
    #[doc(hidden)]
    pub unsafe fn count_without_rseq(t: &Cx<F>) -> bool {
        if F::RSEQ && !F::SIGNAL && cfg!(all(target_arch = "x86_64", target_os = "linux")) {
            t.local().rseq_forced.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// Whether `t` may bias an object to itself: it has cached its bias bits, which it does
    /// (in `enter_slow`) only where the runtime biases ([`Revocation::NoBias`] never does).
    /// Slow paths only (the fast ones test the cached bits themselves).
    #[inline]
    fn may_bias(t: &Cx<F>) -> bool {
        Self::cached_bias(t) != NO_BIAS
    }
}

impl<F: Flavor> std::fmt::Debug for Biasing<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(F::NAME)
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
