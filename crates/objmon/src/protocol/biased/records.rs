//! The bias owner's lock records (records variant, HotSpot 17 style) and the thread's cached
//! fast-path bits that share their cache line: the owner's half of the barrier revocation's
//! Dekker lives here (see docs/soundness.md §9, "Revocation").

use super::{OWNER_SHIFT, RC_ONE, STATE_LOW, THIN};
use crate::spin::Spin;
use crate::sync::{AtomicU64, AtomicUsize, Ordering};
use crate::thread::ThreadId;

/// Capacity of a thread's lock records (records variant): biased holds beyond it make the
/// object thin. HotSpot keeps one record per frame; 32 covers the nesting of the benchmarks
/// (the tree test holds 16) at 264 bytes per thread.
pub const LOCK_RECORDS: usize = 32;
/// Low bit of a record: its pop is in flight (the owner's half of the unlock Dekker).
pub(super) const REC_RELEASING: usize = 1;
/// A buried record: neither a header address (8-aligned, non-zero) nor one being released.
pub(super) const REC_TOMB: usize = 2;

/// The bias owner's lock records (records variant, HotSpot 17 style): one slot per biased
/// hold, holding the header's address, pushed and popped only by the owner with plain
/// stores. A biased lock's recursion count is the number of records naming it; the header
/// is not written. Revokers read them (see the module documentation for the Dekker).
///
/// The line also caches the owner's header bits, so that a fast path reads one thread-local
/// line and the header, nothing else.
#[repr(C, align(64))]
#[derive(Debug)]
pub(crate) struct LockRecords {
    pub(super) top: AtomicUsize,
    /// The thread's bias bits (id and generation), [`NO_BIAS`] until its first slow path
    /// (the generation is not known when the state is built; a thread biases a header to
    /// itself only in a slow path, after setting this).
    pub(super) bias: AtomicU64,
    /// The thread's id in the owner field (learn / thin words).
    pub(super) owner: u64,
    /// `THIN | owner | RC_ONE`: the thin lock word's bits above the host's once this thread
    /// holds it once (the fast paths' constants, precomputed: each µop saved counts on the
    /// Cloud, see [`lock`](Protocol::lock)).
    pub(super) thin_once: u64,
    /// `STATE_LOW | owner | RC_ONE`: what the combined learn / thin unlock test expects.
    pub(super) unlock_once: u64,
    /// What the inline thin acquisition expects of the word's lock bits (without the owner
    /// for the sticky records variant): a free thin word, [`free_thin`]; [`NO_BIAS`] while
    /// the thread is in native, so that the test fails there at no cost (a compare with this
    /// field instead of an immediate).
    pub(super) thin_free: AtomicU64,
    /// What the inline nested thin / learn acquisition subtracts from the word's lock bits
    /// (non-seed flavors): `unlock_once` normally, [`NO_NEST`] in native (no word is within
    /// reach of it), so that nested acquisitions there reach the slow path, which refuses.
    pub(super) nest_once: AtomicU64,
    /// Non-seed flavors: the address of the thin word this thread last locked with
    /// `enter`'s inline thin CAS, 0 for none (as `thin`'s `ThinThread::last`). **Invariant**:
    /// while `last == a`, the word at `a` is `last_word + RC_ONE` — thin, held once by this
    /// thread, as that CAS left it — so the unlock of `a` may store `last_word` blind,
    /// without loading the header after the CAS. Written by this thread just *before* its
    /// CAS (forgotten after a failed one; the unlock, the record's one reader, runs only
    /// outside that `enter`); forgotten before any write of ours to a word we hold that
    /// might be `last` (the inline nested lock, `enter_slow`, `inflate_own`); cleared by
    /// `reclaim` / `relocate_records` with a CAS (`Biasing::forget_record`); and, since safe
    /// code may move the recorded header away and put one biased to us at `a` (a forgotten
    /// guard, then `mem::swap`), forgotten by a lock that biases `a` or (records and rseq
    /// flavors) steps a biased `a`, and cleared before a biased word at `a` is rewritten
    /// ([`clear_last`](Self::clear_last)). Nobody else
    /// writes a held thin word (docs/soundness.md §9: contenders spin, a
    /// revoker writes biased words only, a hasher waits for a single hold's release).
    /// Relaxed: only this thread reads it (except that CAS).
    pub(super) last: AtomicUsize,
    /// What the unlock of `last` stores: the word `enter`'s CAS left, with rc 0 (the host
    /// bits, thin, and — sticky, `fable` — this thread as the last owner).
    pub(super) last_word: AtomicU64,
    /// The process had no `membarrier` when this thread attached (`membarrier::init`): the
    /// owner's side of the parked-hash Dekker (hash.rs) is a fence, paid out of line, so the
    /// nested unlock (`exit_nested`) takes the slow check. `membarrier::init` answers `false`
    /// for good once it has, so a thread made asymmetric may later meet a symmetric
    /// hasher (as `thin`'s `LOOK_SYMMETRIC`, and as a hasher whose barrier fails after the
    /// registration: `SideHashes::hasher_barrier`), never the reverse. Immutable.
    pub(super) hash_fence: bool,
    /// rseq flavors: the address of this thread's `rseq.rseq_cs` (its thread pointer plus
    /// `__rseq_offset + 8`), where the owner step arms its section, set on the thread itself
    /// at attach (`rseq::initial_cs_field`: a scratch word of the thread where glibc
    /// has no rseq area). The thread caches its bias bits only once its area is registered
    /// (`Biasing::rseq_ready`); until then the step fails its test.
    #[cfg(not(loom))]
    pub(super) rseq_cs: AtomicUsize,
    /// Under loom, the model of the rseq section: the owner's step runs under it, and the
    /// rseq barrier takes it once (so it lands before or after a section, never inside).
    #[cfg(loom)]
    pub(super) cpu: crate::sync::Mutex<()>,
    pub(super) slots: [AtomicUsize; LOCK_RECORDS],
}

/// Matches no header word: its low byte is not zero. The cached bias bits until a thread's
/// first slow path (or for good where the runtime biases nothing), and the cached bias and
/// thin-free bits while it is in native. Nor is any word within `0x1feff` above it (the
/// rseq flavors' subtract-and-compare test): those have bit 63 (set only in biased words,
/// state 00) together with bit 16 or 17.
pub(super) const NO_BIAS: u64 = (1 << 63) | STATE_LOW | 0xff;

/// [`LockRecords::nest_once`] in native: `x − NO_NEST < 254 · 256` needs bits 63 and 16 both
/// set in `x`, which no lock word has (bits 63..34 are set only in biased words, state 00).
pub(super) const NO_NEST: u64 = (1 << 63) | STATE_LOW;

/// What a thread's inline thin acquisition expects of `w & !HOST` (with the owner masked out
/// for the sticky records variant): Figure 4, thin and free (owner 0); Figure 7 (sticky
/// header variant), thin, rc 0, last owner = `owner`; the records variants take any free thin
/// word (see `fresh_enter`).
pub(super) const fn free_thin(sticky: bool, records: bool, owner: u64) -> u64 {
    if sticky && !records {
        THIN | owner
    } else {
        THIN
    }
}

impl LockRecords {
    #[cfg_attr(loom, allow(unused_variables))] // the rseq area is not modelled under loom
    pub(super) fn new(id: ThreadId, thin_free: u64, rseq_cs: usize) -> Self {
        let owner = u64::from(id.get()) << OWNER_SHIFT;
        Self {
            top: AtomicUsize::new(0),
            bias: AtomicU64::new(NO_BIAS),
            owner,
            thin_once: THIN | owner | RC_ONE,
            unlock_once: STATE_LOW | owner | RC_ONE,
            thin_free: AtomicU64::new(thin_free),
            nest_once: AtomicU64::new(STATE_LOW | owner | RC_ONE),
            last: AtomicUsize::new(0),
            last_word: AtomicU64::new(0),
            hash_fence: !crate::membarrier::init(),
            #[cfg(not(loom))]
            rseq_cs: AtomicUsize::new(rseq_cs),
            #[cfg(loom)]
            cpu: crate::sync::Mutex::new(()),
            slots: std::array::from_fn(|_| AtomicUsize::new(0)),
        }
    }

    /// Forgets the last inline thin lock (see [`last`](Self::last)): the next unlock loads
    /// the header.
    #[inline(always)]
    pub(super) fn forget_last(&self) {
        self.last.store(0, Ordering::Relaxed);
    }

    /// Forgets the last inline thin lock if it was the word at `a` (the one this thread is
    /// about to write); a record of another word stays true (its word is not written). A
    /// load and a branch, no store once the record is gone (`thin`'s `forget_if_last`).
    /// Only this thread stores a non-zero `last`, so the load sees `a` if the record names
    /// `a` (or 0, if `forget_record`'s CAS cleared it meanwhile: nothing left to forget).
    #[inline(always)]
    pub(super) fn forget_if_last(&self, a: usize) {
        if self.last.load(Ordering::Relaxed) == a {
            self.forget_last();
        }
    }

    /// Another thread's (or this one's) forgetting of the thin record if it names `a`: a CAS
    /// against the owner's plain stores, which fails if the owner has recorded another word
    /// since (that record stays). Forgetting is always safe (the next unlock of `a` loads
    /// the header); a revoker calls it before it rewrites a biased word at `a`, which the
    /// record cannot describe (`last`'s invariant: the word is thin), so that the owner's
    /// unlock after the rewrite does not store the recorded word over it.
    pub(super) fn clear_last(&self, a: usize) {
        let _ = self
            .last
            .compare_exchange(a, 0, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Owner only: the records naming `a` below the top (all committed: the owner is not in a
    /// fast path while it asks).
    pub(super) fn own_count(&self, a: usize) -> u32 {
        let top = self.top.load(Ordering::Relaxed);
        self.slots[..top]
            .iter()
            .filter(|s| s.load(Ordering::Relaxed) == a)
            .count() as u32
    }

    /// Another thread's racy snapshot of the records naming `a` (owner_of, try_enter).
    pub(super) fn peek_count(&self, a: usize) -> u32 {
        let top = self.top.load(Ordering::Acquire).min(LOCK_RECORDS);
        self.slots[..top]
            .iter()
            .filter(|s| s.load(Ordering::Acquire) == a)
            .count() as u32
    }

    /// Revoker side, after marking the header and the barrier: the committed records naming
    /// `a`, once no push or pop of `a` is in flight. After the barrier every later fast path
    /// of the owner on `a` reads the mark and backs out, so records of `a` no longer move and
    /// lie below every top the owner will have (pops are LIFO, `a`'s are refused). What can
    /// still lag is visibility: a top older than a slot we read. Every owner store to a slot
    /// is a release and we read slots with acquire, so the top re-read after the scan is at
    /// least as new as every slot value seen; equal to the first read, the scan is
    /// consistent: a slot at the top holding `a` is a push in flight, a slot below it marked
    /// releasing is a pop in flight, and we wait for either to commit or back out.
    pub(super) fn settled_count(&self, a: usize) -> u32 {
        let mut spins = Spin::new();
        loop {
            let top = self.top.load(Ordering::Acquire).min(LOCK_RECORDS);
            let (mut n, mut busy) = (0, false);
            for (i, s) in self.slots[..(top + 1).min(LOCK_RECORDS)].iter().enumerate() {
                let v = s.load(Ordering::Acquire);
                if i == top {
                    busy |= v == a;
                } else if v == a {
                    n += 1;
                } else if v == a | REC_RELEASING {
                    busy = true;
                }
            }
            if !busy && self.top.load(Ordering::Acquire) == top {
                return n;
            }
            spins.snooze();
        }
    }

    /// Owner only: buries every record of `a` (the header no longer counts on them), then
    /// drops buried records from the top.
    pub(super) fn bury(&self, a: usize) {
        self.mark_tombs(a);
        self.pop_tombs();
    }

    /// Owner only: [`bury`](Self::bury) without lowering the top (the caller's next
    /// [`push_committed`](Self::push_committed) does).
    #[inline]
    pub(super) fn mark_tombs(&self, a: usize) {
        let top = self.top.load(Ordering::Relaxed);
        for s in &self.slots[..top] {
            if s.load(Ordering::Relaxed) == a {
                s.store(REC_TOMB, Ordering::Release);
            }
        }
    }

    /// Owner only: lowers the top past buried records. Slots above the top hold no header's
    /// bare address afterwards, so a revoker never mistakes them for a push in flight.
    pub(super) fn pop_tombs(&self) {
        let mut top = self.top.load(Ordering::Relaxed);
        while top > 0 && self.slots[top - 1].load(Ordering::Relaxed) == REC_TOMB {
            top -= 1;
        }
        self.top.store(top, Ordering::Release);
    }

    /// Owner only, in a slow path where the header is not biased to it: commits a record for
    /// `a` ahead of a CAS that biases `a` to it. `false` if full.
    pub(super) fn push_committed(&self, a: usize) -> bool {
        self.pop_tombs();
        let top = self.top.load(Ordering::Relaxed);
        let Some(slot) = self.slots.get(top) else {
            return false;
        };
        slot.store(a, Ordering::Release);
        self.top.store(top + 1, Ordering::Release);
        true
    }

    /// Undoes [`push_committed`](Self::push_committed) when the CAS failed (the header never
    /// became biased to us, so no revoker looked).
    pub(super) fn unpush(&self) {
        let top = self.top.load(Ordering::Relaxed) - 1;
        self.top.store(top, Ordering::Release);
        self.slots[top].store(0, Ordering::Release);
    }
}
