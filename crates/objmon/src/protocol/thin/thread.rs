//! `thin`'s per-thread state ([`ThinThread`]): whether others may write this thread's thin
//! words (`RUNNING` / `BLOCKED` / `CLAIMED` / `EXITED`), its record of the last fast lock,
//! and the marks a hasher leaves for its unlock (`look`, `parked_for`).

use super::*;

/// [`ThinThread::state`]: may be running a thin fast or slow path on the locks it holds.
pub(super) const RUNNING: u32 = 0;
/// Blocked inside objmon (spinning for, or parked on, another lock; waiting): writes none of
/// the thin words it holds until it leaves this state.
pub(super) const BLOCKED: u32 = 1;
/// Blocked, and a hasher is inflating one of its thin locks on its behalf.
pub(super) const CLAIMED: u32 = 2;
/// Detached: never writes a thin word again.
pub(super) const EXITED: u32 = 3;

/// Per-thread state of `thin`: whether another thread may write the thin words this thread
/// holds (`hashing.rs`; written by slow paths only), and the
/// thread's record of its last fast lock (the invariant in `thin.rs`).
#[derive(Debug)]
pub struct ThinThread {
    pub(super) state: AtomicU32,
    /// The thread id, pre-shifted into the owner field (`ThreadCore::id_shifted16`), kept
    /// here so that a fast path reaches it with one load from the context.
    pub(super) me: u32,
    /// `thin` (not `thin-seed`): the address of the word this thread last locked with the
    /// §2.3.1 compare-and-swap, 0 for none. **Invariant**: while `last == a`, the word at `a`
    /// is `host | me` — thin, held once by this thread, as the CAS left it — so the unlock of
    /// `a` may store `host` blind. (The fast lock writes the record just *before* its CAS and
    /// forgets it if the CAS fails: the invariant holds whenever this thread is outside
    /// `enter`, which is the only time its unlock, the record's one reader, can run.) Written by this thread (Relaxed: only it reads it, except
    /// `reclaim` / `relocate_records`, which clear it with a CAS); cleared before any write of
    /// ours to a word we hold that might be `last` (the nested lock, every slow path), before
    /// we become `BLOCKED` (others may then inflate our words), and when the word dies or moves.
    pub(super) last: AtomicUsize,
    /// The host bits of the word at `last` (constant while it lives, seed 000 §2.3).
    pub(super) host: AtomicU32,
    /// Nonzero: `thin`'s nested unlock must call `nested_look` (its only test of the
    /// parked-hash side table, on this thread's own line). [`LOOK_PARKED`]: a hasher parked
    /// a hash for a word this thread held nested (set under the side table's mutex before
    /// the hasher's barrier; cleared there by this thread once none of its entries is left).
    /// [`LOOK_SYMMETRIC`]: set for good when the process has no `membarrier` (the owner's
    /// side of the Dekker is then a fence, paid out of line).
    pub(super) look: AtomicU32,
    /// Set for good once a hasher parked a hash (nested or loose) for a word this thread
    /// held. From then on a hash chosen for a word this thread holds is
    /// `hash::pinned`: the parked one may have been lost with its address, when safe code
    /// moved the header under a forgotten guard, and the pinned value is the same again.
    pub(super) parked_for: AtomicBool,
    /// `thin` (not `thin-seed`): how deep this thread is in `in_native` (written by it alone,
    /// read by hashers). An owner in native code will not release soon, so a hasher of a
    /// word it holds once parks the hash loose at once instead of waiting
    /// `HASH_WAIT_BOUND` for that release (the entry and its settling are the same either
    /// way: `hashing.rs`). A racy hint: a stale value only changes how long a hasher waits.
    pub(super) native: AtomicU32,
}

/// `ThinThread::look`: a hash may be parked for a word this thread holds nested.
pub(super) const LOOK_PARKED: u32 = 1;
/// `ThinThread::look`: the side table's Dekker is symmetric (no `membarrier`).
pub(super) const LOOK_SYMMETRIC: u32 = 2;
/// `ThinThread::look`: a hash may be parked loose (`hash.rs`, `Parked::loose`) for a word this
/// thread holds once; its release settles it (`settle_loose`). Set under the side table's
/// mutex before the hasher's barrier, cleared there by this thread once none is left. Never
/// set in a symmetric runtime (the release would need a fence).
pub(super) const LOOK_LOOSE: u32 = 4;

impl ThinThread {
    pub(super) fn new(id: ThreadId) -> Self {
        Self {
            state: AtomicU32::new(RUNNING),
            me: u32::from(id.get()) << OWNER_SHIFT,
            last: AtomicUsize::new(0),
            host: AtomicU32::new(0),
            // `membarrier::init` answers `false` for good once it has (revoke.rs): a runtime made
            // asymmetric may get a symmetric thread (a fence too many), never the reverse.
            look: AtomicU32::new(if crate::membarrier::init() {
                0
            } else {
                LOOK_SYMMETRIC
            }),
            parked_for: AtomicBool::new(false),
            native: AtomicU32::new(0),
        }
    }

    /// Forgets the last fast lock: the next unlock loads the word.
    #[inline(always)]
    pub(super) fn forget_last(&self) {
        self.last.store(0, Ordering::Relaxed);
    }

    /// Forgets the last fast lock if it was the word at `a` (the one this thread is about
    /// to write); a record of another word stays true.
    #[inline(always)]
    pub(super) fn forget_if_last(&self, a: usize) {
        if self.last.load(Ordering::Relaxed) == a {
            self.forget_last();
        }
    }
}
