//! Attached threads: small ids, per-thread contexts, and the registry that maps one to the other.
//!
//! Every thread that locks objects is *attached* to a [`Runtime`](crate::vm::Runtime) and gets a
//! [`ThreadId`] in `1..=max_threads` (at most 32767, the 15-bit thread index of seed 000 §2.3).
//! Ids are reused after detach. The [`ThreadContext`] is what the fast paths take as an
//! argument: everything they need about the current thread is one load away from it (seed 000
//! §2.3.1 keeps the pre-shifted thread index in the "execution environment" for that reason), so
//! no fast path ever looks up a thread-local.

use crate::park::Parker;
use crate::protocol::Protocol;
use crate::sync::{lock, Arc, AtomicBool, AtomicU32, Mutex, Ordering};
use crate::MonitorError;
use std::fmt;
use std::num::NonZeroU16;

/// The largest thread id: 15 bits, as in seed 000 §2.3.
pub const MAX_THREAD_ID: u16 = 0x7fff;

/// A small thread id in `1..=32767`, unique among the threads attached to one runtime at one
/// time and reused after a detach.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadId(NonZeroU16);

impl ThreadId {
    /// The id as a number in `1..=32767`.
    #[inline]
    pub fn get(self) -> u16 {
        self.0.get()
    }

    /// The id for a number in `1..=32767`, or `None` outside that range.
    #[inline]
    pub fn new(raw: u16) -> Option<Self> {
        if raw > MAX_THREAD_ID {
            return None;
        }
        NonZeroU16::new(raw).map(Self)
    }

    /// Converts a raw id field read from a header or monitor: `None` for 0 ("nobody") and for
    /// anything outside `1..=32767` (such as a monitor's anonymous-owner marker), so a
    /// `ThreadId` always names a possible thread.
    #[inline]
    pub(crate) fn from_raw(raw: u32) -> Option<Self> {
        u16::try_from(raw).ok().and_then(Self::new)
    }
}

impl fmt::Debug for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ThreadId({})", self.get())
    }
}

impl fmt::Display for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.get())
    }
}

/// The protocol-independent part of a thread's context: what the fat monitor and the tasuki
/// lock need to block, wake and interrupt a thread.
///
/// **Layout** (issue 13 item 4): `repr(C)`, aligned to a cache line, in two lines. The first
/// holds what the thread's own paths read on every contended enter and exit (`id`, read by
/// `FatMonitor::enter` / `exit`; `id_shifted16`) and what only the thread itself writes;
/// the second the words *other* threads write: the parker and `tasuki_signal` (a waker),
/// `wait_state` (a notifier), `interrupted`. The alignment also keeps the `Arc`'s reference
/// counts (cloned by a waker, `tasuki.rs`) on a line of their own, before the data. With
/// Rust's own order, `id` sat 8 bytes from the parker word, so each wake-up made the woken
/// thread's next monitor enter and exit miss on it.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct ThreadCore {
    /// `id << 16`: the thread index pre-shifted into the thin-lock field (seed 000 §2.3.1).
    id_shifted16: u32,
    /// Incremented each time this id is handed out again, so that a stale reference to an
    /// earlier holder of the id can be told apart (used by biased protocols).
    generation: u32,
    id: ThreadId,
    /// Identity-hash generator state (HotSpot's `_hashStateX..W`, see `hash.rs`).
    pub(crate) hash_state: crate::hash::HashState,
    /// What this thread blocks on, published by slow paths (see `introspect.rs`).
    pub(crate) blocking: crate::introspect::BlockSlot,
    // Second line (checked below): written by other threads.
    pub(crate) parker: Parker,
    /// Hand-off word of the tasuki suspend-wait (see `tasuki.rs`).
    pub(crate) tasuki_signal: AtomicU32,
    /// Wait-set state of the fat monitor this thread waits on (see `monitor.rs`).
    pub(crate) wait_state: AtomicU32,
    interrupted: AtomicBool,
}

// The words other threads write start the second cache line (the futex parker; under loom
// the parker is a mutex and condition variable, whose layout is loom's).
#[cfg(all(not(loom), target_os = "linux"))]
const _: () = assert!(std::mem::offset_of!(ThreadCore, parker) == 64);

impl ThreadCore {
    fn new(id: ThreadId, generation: u32) -> Self {
        Self {
            id,
            id_shifted16: u32::from(id.get()) << 16,
            generation,
            parker: Parker::new(),
            interrupted: AtomicBool::new(false),
            tasuki_signal: AtomicU32::new(0),
            wait_state: AtomicU32::new(0),
            hash_state: crate::hash::HashState::new(id.get(), generation),
            blocking: Default::default(),
        }
    }

    /// This thread's id.
    #[inline]
    pub fn id(&self) -> ThreadId {
        self.id
    }

    /// This thread's id as the raw number stored in monitors (never 0).
    #[inline]
    pub fn raw_id(&self) -> u32 {
        u32::from(self.id.get())
    }

    /// The thread index shifted left by 16 bits, ready to be or-ed into a thin-lock word.
    #[inline]
    pub fn id_shifted16(&self) -> u32 {
        self.id_shifted16
    }

    /// How many threads held this id before this one (0 for the first holder).
    #[inline]
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// Sets the interrupt status and wakes the thread if it is parked in a wait.
    pub fn interrupt(&self) {
        self.interrupted.store(true, Ordering::SeqCst);
        self.parker.unpark();
    }

    /// The interrupt status, left unchanged (Java's `isInterrupted`).
    #[inline]
    pub fn is_interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }

    /// Reads and clears the interrupt status (Java's `Thread.interrupted()`).
    #[inline]
    pub fn take_interrupt(&self) -> bool {
        self.interrupted.swap(false, Ordering::SeqCst)
    }
}

/// Everything the fast paths of protocol `P` know about the current thread: the common
/// [`ThreadCore`] and the protocol's own per-thread state (a lock stack, a learn count, ...).
pub struct ThreadContext<P: Protocol> {
    core: Arc<ThreadCore>,
    local: P::ThreadState,
}

impl<P: Protocol> ThreadContext<P> {
    /// The protocol-independent part.
    #[inline]
    pub fn core(&self) -> &ThreadCore {
        &self.core
    }

    /// A shared handle to the protocol-independent part, for queues that outlive a borrow.
    #[inline]
    pub fn core_arc(&self) -> &Arc<ThreadCore> {
        &self.core
    }

    /// The protocol's per-thread state.
    #[inline]
    pub fn local(&self) -> &P::ThreadState {
        &self.local
    }

    /// This thread's id.
    #[inline]
    pub fn id(&self) -> ThreadId {
        self.core.id
    }
}

impl<P: Protocol> fmt::Debug for ThreadContext<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadContext")
            .field("id", &self.core.id)
            .finish_non_exhaustive()
    }
}

struct Slots<P: Protocol> {
    /// Index = thread id; slot 0 is never used.
    threads: Vec<Option<Arc<ThreadContext<P>>>>,
    /// Generation of the next holder of each id.
    generations: Vec<u32>,
    /// Ids returned by detach, reused first (last in, first out).
    free: Vec<u16>,
    /// Ids above this have never been handed out.
    high_water: u16,
    /// Ids retired for good (see `Registry::retire`).
    retired: usize,
}

/// The thread registry of one runtime: attach, detach, and id → context look-ups.
///
/// Look-ups take a mutex; they happen only on slow paths (interrupts, owner queries, lock-stack
/// scans), never on a fast path, which gets its context passed in.
pub struct Registry<P: Protocol> {
    max: u16,
    slots: Mutex<Slots<P>>,
}

impl<P: Protocol> Registry<P> {
    pub(crate) fn new(max_threads: u16) -> Self {
        let max = max_threads.clamp(1, MAX_THREAD_ID);
        Self {
            max,
            slots: Mutex::new(Slots {
                threads: vec![None],
                generations: vec![0],
                free: Vec::new(),
                high_water: 0,
                retired: 0,
            }),
        }
    }

    /// Allocates an id and builds the context. More threads than ids is an error.
    pub(crate) fn attach(
        &self,
        local: impl FnOnce(ThreadId) -> P::ThreadState,
    ) -> Result<Arc<ThreadContext<P>>, MonitorError> {
        let mut s = lock(&self.slots);
        let raw = match s.free.pop() {
            Some(raw) => raw,
            None if s.high_water < self.max => {
                s.high_water += 1;
                s.threads.push(None);
                s.generations.push(0);
                s.high_water
            }
            None => return Err(MonitorError::TooManyThreads),
        };
        let id = ThreadId::new(raw).expect("ids stay within 1..=MAX_THREAD_ID");
        let generation = s.generations[raw as usize];
        s.generations[raw as usize] = generation.wrapping_add(1);
        let cx = Arc::new(ThreadContext {
            core: Arc::new(ThreadCore::new(id, generation)),
            local: local(id),
        });
        s.threads[raw as usize] = Some(cx.clone());
        Ok(cx)
    }

    /// Returns the id to the free list.
    pub(crate) fn detach(&self, id: ThreadId) {
        let mut s = lock(&self.slots);
        let raw = id.get();
        debug_assert!(s.threads[raw as usize].is_some());
        s.threads[raw as usize] = None;
        s.free.push(raw);
    }

    /// Empties `id`'s slot without returning the id to the free list: it is never handed out
    /// again. For a thread that detaches while still owning a lock it cannot release (a
    /// forgotten guard), so that no later thread inherits that ownership.
    pub(crate) fn retire(&self, id: ThreadId) {
        let mut s = lock(&self.slots);
        s.threads[id.get() as usize] = None;
        s.retired += 1;
    }

    /// How many ids were retired (see `retire`): never reused, so fewer are left to attach.
    pub fn retired(&self) -> usize {
        lock(&self.slots).retired
    }

    /// The context of the thread attached under `id`, if any.
    pub fn get(&self, id: ThreadId) -> Option<Arc<ThreadContext<P>>> {
        lock(&self.slots)
            .threads
            .get(id.get() as usize)
            .cloned()
            .flatten()
    }

    /// Every attached thread's context, in id order.
    pub fn snapshot(&self) -> Vec<Arc<ThreadContext<P>>> {
        lock(&self.slots)
            .threads
            .iter()
            .flatten()
            .cloned()
            .collect()
    }

    /// The number of attached threads.
    pub fn len(&self) -> usize {
        lock(&self.slots).threads.iter().flatten().count()
    }

    /// Whether no thread is attached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The largest id this registry hands out.
    pub fn max_threads(&self) -> u16 {
        self.max
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A `ThreadId` always names a possible thread: raw fields outside 1..=32767 (0, or a
    /// monitor's anonymous-owner marker u32::MAX) are no thread.
    #[test]
    fn from_raw_rejects_out_of_range_ids() {
        assert_eq!(ThreadId::from_raw(0), None);
        assert_eq!(ThreadId::from_raw(u32::MAX), None);
        assert_eq!(ThreadId::from_raw(0xffff), None);
        assert_eq!(ThreadId::from_raw(0x8000), None);
        assert_eq!(ThreadId::from_raw(0x7fff).map(ThreadId::get), Some(0x7fff));
        assert_eq!(ThreadId::from_raw(1).map(ThreadId::get), Some(1));
    }
}
