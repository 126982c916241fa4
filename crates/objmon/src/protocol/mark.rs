//! The pointer-sized mark word of HotSpot's two header-locking modes (seed 001), shared by the
//! [`stack`](super::stack) and [`lightweight`](super::lightweight) protocols.
//!
//! | bits   | unlocked `01` | stack-locked `00` | fast-locked `00` | monitor `10`        | INFLATING |
//! |--------|---------------|-------------------|------------------|---------------------|-----------|
//! | 63     | host          | lock-record       | host             | host                | 0         |
//! | 62..32 | identity hash | address, bits     | identity hash    | identity hash       | 0         |
//! | 31..8  | 0 (reserved)  | 63..2 (hash and   | 0                | monitor index (23 bits in 30..8, bit 31 = 0) | 0 |
//! | 7..2   | host          | host displaced)   | host             | host                | 0         |
//! | 1..0   | `01`          | `00`              | `00`             | `10`                | `00`      |
//! | 1..0 as stored by `lightweight*` | `00` | —    | `01`             | `10`                | —         |
//!
//! **Stored lock bits.** The states and their bits above are HotSpot's `markWord` (seed 001:
//! unlocked `01`, fast-/stack-locked `00`, monitor `10`), and `stack` stores them as they are.
//! [`MarkWord`] (the `lightweight*` protocols) stores the two header-locking states with their
//! low bit flipped — unlocked `00`, fast-locked `01` (`FAST_UNLOCKED`, `FAST_LOCKED`) — and
//! the monitor state as is (`MONITOR`, so that deflation reads every protocol's monitor word
//! alike). Why: an all-zero word must be a valid header. GC heaps and C allocators (`calloc`)
//! hand out zeroed memory, and with HotSpot's bits a zero word reads "fast-locked by somebody,
//! no hash, no host bits" — a lock that nobody will ever release. Stored
//! this way, zero is "unlocked, no hash, no host bits", which is also what
//! [`MarkWord::default`] and `objmon_header_init` write. It costs no instruction: the fast
//! paths still test the two lock bits against a constant (`0` instead of `1` to lock, `1`
//! instead of `0` to unlock) and flip bit 0 with the same one compare-and-swap. (`stack` keeps
//! HotSpot's bits as stored: there a `00` word *is* a lock-record address, and an all-zero word
//! its INFLATING marker; its zero-word story is its own.) Stored `11` is never written.
//!
//! The identity hash ([`MARK_HASH_BITS`], 31 bits, 0 = none) is HotSpot's 31-bit hash, kept
//! with the host bits: installed by one compare-and-swap in every state the word shows it
//! (`lightweight`: all; `stack`: unlocked and monitor — a stack-locked object is inflated
//! first, as legacy HotSpot did), and never cleared while the object lives. The host owns
//! [`MARK_HOST_BITS`]: 7 bits (63 and 7..2; room for a 4-bit GC age). Host bits and hash survive every transition: fast-locking and inflation
//! change only the lock bits and the reserved field; stack-locking *displaces* the whole word into the lock record
//! ("push a stack-lock onto the stack which consists only of the displaced header, and CAS a
//! pointer to this stack location into the object header", seed 001) and the unlock or the
//! inflation puts the host bits back. INFLATING (the all-zero word) exists only in `stack`; to
//! [`MarkWord`] the all-zero word is unlocked (see "Stored lock bits").
//!
//! Deviation from HotSpot: HotSpot's monitor state holds a tagged `ObjectMonitor*` and keeps
//! the displaced header inside the monitor. Here the monitor state holds the 23-bit index of the
//! crate's `MonitorTable` (type-stable, so a stale index is never a
//! dangling pointer) and keeps the host bits in place, so hash and age are readable in every
//! state but stack-locked / INFLATING, and deflation needs no displaced-header store.

use crate::sync::{AtomicU64, Ordering};
use crate::table::MonitorIndex;

/// The host's bits of a [`MarkWord`] (see the module's bit table).
pub const MARK_HOST_BITS: u64 = 0x8000_0000_0000_00fc;
/// The identity hash's bits of a [`MarkWord`] (62..32, HotSpot's 31 bits).
pub const MARK_HASH_BITS: u64 = 0x7fff_ffff_0000_0000;
/// Bits of the hash.
pub(crate) const HASH_BITS: u32 = 31;
const HASH_SHIFT: u32 = 32;
/// What every transition keeps in place (or displaces and restores): host bits and hash.
pub(crate) const MARK_KEPT_BITS: u64 = MARK_HOST_BITS | MARK_HASH_BITS;
/// The two lock bits.
pub(crate) const LOCK_BITS: u64 = 0b11;
/// Lock bits of an unlocked object (HotSpot's; as stored by `stack`).
pub(crate) const UNLOCKED: u64 = 0b01;
/// Lock bits of a fast-locked (or stack-locked) object (HotSpot's; as stored by `stack`).
pub(crate) const LOCKED: u64 = 0b00;
/// Lock bits of an object with a fat monitor (HotSpot's; as stored by every protocol here).
pub(crate) const MONITOR: u64 = 0b10;
/// Stored lock bits of an unlocked [`MarkWord`] (logical [`UNLOCKED`] with bit 0 flipped, so
/// that the all-zero word is an unlocked header; see the module documentation).
pub(crate) const FAST_UNLOCKED: u64 = UNLOCKED ^ 1;
/// Stored lock bits of a fast-locked [`MarkWord`] (logical [`LOCKED`] with bit 0 flipped).
pub(crate) const FAST_LOCKED: u64 = LOCKED ^ 1;
/// `stack` only: a contender is installing a monitor; everybody else waits for the word.
pub(crate) const INFLATING: u64 = 0;
const INDEX_SHIFT: u32 = 8;
const INDEX_MASK: u64 = 0x7f_ffff << INDEX_SHIFT;

/// The 64-bit object header of the `lightweight*` protocols (see the module documentation).
/// `stack` has its own type, [`StackWord`](super::stack::StackWord), with the same layout:
/// a `00` word means a record address to `stack` and must never reach it from `lightweight`.
///
/// The all-zero word is an unlocked header with no hash and no host bits: memory zeroed by
/// `calloc` or a GC is a valid `MarkWord` (the lock bits are stored flipped; see the module
/// documentation).
pub struct MarkWord(pub(crate) AtomicU64);

impl Default for MarkWord {
    /// An unlocked header with all host bits clear: the all-zero word.
    fn default() -> Self {
        Self::new(0)
    }
}

impl MarkWord {
    crate::sync::const_unless_loom! {
        /// An unlocked header carrying `host_bits`; bits outside [`MARK_HOST_BITS`] are ignored.
        pub fn new(host_bits: u64) -> Self {
            Self(AtomicU64::new((host_bits & MARK_HOST_BITS) | FAST_UNLOCKED))
        }
    }

    /// The host bits (in place in every state of this word).
    pub fn host_bits(&self) -> u64 {
        self.0.load(Ordering::Acquire) & MARK_HOST_BITS
    }

    /// The whole word as stored, for introspection and tests (a racy snapshot). Its lock bits
    /// are the stored ones: `00` unlocked, `01` fast-locked, `10` monitor.
    #[inline]
    pub fn raw(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for MarkWord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MarkWord({:#018x})", self.raw())
    }
}

/// The monitor word for monitor `idx`, keeping the host bits of `host_from`.
#[inline]
pub(crate) fn monitor_word(host_from: u64, idx: MonitorIndex) -> u64 {
    (host_from & MARK_KEPT_BITS) | (u64::from(idx.get()) << INDEX_SHIFT) | MONITOR
}

/// The monitor index of a word whose lock bits are `10`.
#[inline]
pub(crate) fn index_of(w: u64) -> MonitorIndex {
    debug_assert_eq!(w & LOCK_BITS, MONITOR);
    MonitorIndex::new(((w & INDEX_MASK) >> INDEX_SHIFT) as u32)
        .expect("a monitor word holds a monitor index")
}

/// The monitor index in `w` (lock bits `10`), `None` where it holds none: the monitor word
/// of `lightweight-table`, which finds its monitor by address. `lightweight` and
/// `lightweight-seed` meet one only on a header that a `lightweight-table` runtime inflated
/// (the three share this type): `ForeignHeader` there, never a panic.
#[inline]
pub(crate) fn index_in(w: u64) -> Option<MonitorIndex> {
    debug_assert_eq!(w & LOCK_BITS, MONITOR);
    MonitorIndex::new(((w & INDEX_MASK) >> INDEX_SHIFT) as u32)
}

/// Whether `w` is the monitor word of `idx` (whatever its host bits).
#[inline]
pub(crate) fn names(w: u64, idx: MonitorIndex) -> bool {
    w & !MARK_KEPT_BITS == monitor_word(0, idx)
}

/// The unlocked [`MarkWord`] word with `w`'s host bits and hash (stored bits).
#[inline]
pub(crate) fn fast_unlocked(w: u64) -> u64 {
    (w & MARK_KEPT_BITS) | FAST_UNLOCKED
}

/// The identity hash in word `w` (0 = none). Meaningless for a stack-locked or INFLATING word.
#[inline]
pub(crate) fn hash_of(w: u64) -> u32 {
    ((w & MARK_HASH_BITS) >> HASH_SHIFT) as u32
}

/// `w` with hash `v` (in `1..2^31`) in its hash bits.
#[inline]
pub(crate) fn with_hash(w: u64, v: u32) -> u64 {
    debug_assert!(v != 0 && u64::from(v) << HASH_SHIFT & !MARK_HASH_BITS == 0);
    w | u64::from(v) << HASH_SHIFT
}
