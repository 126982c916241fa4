//! What a blocked thread publishes: its [`BlockSlot`], a sequence-locked record of one
//! *blocking episode* (blocked on enter, waiting, timed waiting) that the slow paths of the
//! fat monitor and of the spinning protocols write and that any thread reads consistently.
//!
//! This file owns the record and its sequence-lock protocol only: the writers are the
//! blocking episodes (`monitor_episodes.rs`, `spin_episode.rs`); why a deadlock read from
//! these records is a real one is introspection's business (`introspect.rs`). A lower
//! layer: every thread's `ThreadCore` holds a slot, so this file knows nothing above the
//! loom shim.

use crate::sync::{fence, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// What a blocked thread is doing (JVMTI's thread states, restricted to monitors).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockKind {
    /// Blocked on entering a monitor (`BLOCKED (on object monitor)`).
    Enter,
    /// In `Object.wait()` without a timeout (`WAITING (on object monitor)`).
    Wait,
    /// In `Object.wait(timeout)` (`TIMED_WAITING (on object monitor)`).
    TimedWait,
}

impl BlockKind {
    pub(crate) fn code(self) -> u32 {
        match self {
            Self::Enter => 1,
            Self::Wait => 2,
            Self::TimedWait => 3,
        }
    }

    pub(crate) fn from_code(c: u32) -> Option<Self> {
        match c {
            1 => Some(Self::Enter),
            2 => Some(Self::Wait),
            3 => Some(Self::TimedWait),
            _ => None,
        }
    }
}

/// Bits of [`BlockSlot::seen`] holding the observed owner's raw id; the rest is the count.
const SEEN_OWNER_BITS: u32 = 16;

/// A thread's blocking publication (see the module documentation). Written only by its
/// thread, in slow paths; read by any thread with a sequence-lock protocol.
#[derive(Debug, Default)]
pub(crate) struct BlockSlot {
    /// Odd during a blocking episode, even between episodes; only grows.
    seq: AtomicU64,
    /// [`BlockKind::code`].
    kind: AtomicU32,
    /// The monitor index blocked on, 0 for a spinner.
    monitor: AtomicU32,
    /// The object's header address.
    object: AtomicUsize,
    /// A spinner's last observation: `count << 16 | owner raw id` (0 = no owner seen).
    seen: AtomicU64,
}

/// One consistent read of a [`BlockSlot`] during an episode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Episode {
    pub(crate) seq: u64,
    pub(crate) kind: BlockKind,
    /// The raw monitor index blocked on, 0 for a spinner (the monitor table's
    /// `MonitorIndex::new` turns it into an index).
    pub(crate) monitor: u32,
    pub(crate) object: usize,
    pub(crate) seen: u64,
}

impl BlockSlot {
    /// Starts an episode; `false` (and nothing published) if one is in progress already.
    pub(crate) fn begin(&self, kind: BlockKind, object: usize, monitor: u32) -> bool {
        let s = self.seq.load(Ordering::Relaxed);
        if s & 1 == 1 {
            return false;
        }
        self.kind.store(kind.code(), Ordering::SeqCst);
        self.monitor.store(monitor, Ordering::SeqCst);
        self.object.store(object, Ordering::SeqCst);
        self.seen.store(0, Ordering::SeqCst);
        self.seq.store(s + 1, Ordering::SeqCst);
        true
    }

    /// Whether the thread is in an episode (only meaningful for the thread itself).
    pub(crate) fn in_episode(&self) -> bool {
        self.seq.load(Ordering::Relaxed) & 1 == 1
    }

    /// Ends the episode begun by a successful [`begin`](Self::begin).
    pub(crate) fn end(&self) {
        let s = self.seq.load(Ordering::Relaxed);
        debug_assert!(s & 1 == 1);
        // SeqCst like every access here: a reader that sees a later episode's fields also
        // sees this store (one total order), so its second sequence read tells it to retry.
        self.seq.store(s + 1, Ordering::SeqCst);
    }

    /// A spinner re-read the header and found `owner_raw` holding it.
    pub(crate) fn observe(&self, owner_raw: u32) {
        let c = self.seen.load(Ordering::Relaxed) >> SEEN_OWNER_BITS;
        let owner = if owner_raw < (1 << SEEN_OWNER_BITS) {
            owner_raw
        } else {
            0
        };
        self.seen.store(
            ((c + 1) << SEEN_OWNER_BITS) | u64::from(owner),
            Ordering::SeqCst,
        );
        // The next header read comes after this store (see the confirmation argument).
        fence(Ordering::SeqCst);
    }

    /// A consistent copy of the current episode, or `None` between episodes.
    pub(crate) fn read(&self) -> Option<Episode> {
        loop {
            let s = self.seq.load(Ordering::SeqCst);
            if s & 1 == 0 {
                return None;
            }
            let kind = self.kind.load(Ordering::SeqCst);
            let monitor = self.monitor.load(Ordering::SeqCst);
            let object = self.object.load(Ordering::SeqCst);
            let seen = self.seen.load(Ordering::SeqCst);
            if self.seq.load(Ordering::SeqCst) == s {
                return Some(Episode {
                    seq: s,
                    kind: BlockKind::from_code(kind)?,
                    monitor,
                    object,
                    seen,
                });
            }
        }
    }

    pub(crate) fn seq(&self) -> u64 {
        self.seq.load(Ordering::SeqCst)
    }

    pub(crate) fn seen(&self) -> u64 {
        self.seen.load(Ordering::SeqCst)
    }
}

/// How many times a spinner re-read its header in the episode of `seen` (a
/// [`BlockSlot`]'s observation word).
pub(crate) fn observations(seen: u64) -> u64 {
    seen >> SEEN_OWNER_BITS
}

/// The owner raw id a spinner last observed, from an observation word (0: none seen).
pub(crate) fn seen_owner(seen: u64) -> u32 {
    (seen & ((1 << SEEN_OWNER_BITS) - 1)) as u32
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// One episode at a time: a nested begin publishes nothing; observations count up with
    /// the owner in the low bits; the slot reads as empty between episodes.
    #[test]
    fn block_slot_publishes_one_episode_at_a_time() {
        let s = BlockSlot::default();
        assert_eq!(s.read(), None);
        assert!(s.begin(BlockKind::Enter, 0x1000, 7));
        assert!(!s.begin(BlockKind::Wait, 0x2000, 9), "nested");
        s.observe(3);
        s.observe(4);
        let ep = s.read().expect("in an episode");
        assert_eq!(
            (ep.kind, ep.object, ep.monitor),
            (BlockKind::Enter, 0x1000, 7)
        );
        assert_eq!((observations(ep.seen), seen_owner(ep.seen)), (2, 4));
        s.end();
        assert_eq!(s.read(), None);
        assert!(s.begin(BlockKind::TimedWait, 0x3000, 0));
        let ep = s.read().expect("next episode");
        assert_eq!((ep.kind, ep.monitor, ep.seen), (BlockKind::TimedWait, 0, 0));
        assert_eq!(
            ep.seq, 3,
            "odd during an episode, one more per begin and end"
        );
    }
}
