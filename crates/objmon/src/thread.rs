//! Attached threads: small ids, per-thread contexts, and the registry that maps one to the other.
//!
//! Every thread that locks objects is *attached* to a runtime and gets a [`ThreadId`] in `1..=32767` (the 15-bit thread index of seed 000 §2.3), unique in the
//! process: one pool serves every runtime, so a header used with two runtimes never shows one
//! runtime's thread another's owner id as its own. Ids are reused after
//! detach. The [`AttachedThread`] is what the fast paths take as an
//! argument: everything they need about the current thread is one load away from it (seed 000
//! §2.3.1 keeps the pre-shifted thread index in the "execution environment" for that reason), so
//! no fast path ever looks up a thread-local.
//!
//! A lower layer: this file knows no protocol. A thread's per-protocol state is a type
//! parameter `S` here; the protocol layer supplies its `Protocol::ThreadState`
//! (`protocol::ThreadContext<P>` is `AttachedThread<P::ThreadState>`, and a runtime's
//! registry a `Registry<P::ThreadState>`).

use crate::blocking::BlockSlot;
use crate::hash_state::HashState;
use crate::park::Parker;
use crate::sync::{lock, Arc, AtomicBool, AtomicU16, AtomicU32, Mutex, Ordering};
use crate::MonitorError;
use std::fmt;
use std::num::NonZeroU16;

/// The largest thread id: 15 bits, as in seed 000 §2.3.
pub const MAX_THREAD_ID: u16 = 0x7fff;

/// A small thread id in `1..=32767`, unique among the threads attached to any runtime of the
/// process at one time, and reused after a detach.
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
/// **Layout**: `repr(C)`, aligned to a cache line, in two lines. The first
/// holds what the thread's own paths read on every contended enter and exit (`id`, read by
/// `FatMonitor::enter` / `exit`; `id_shifted16`) and what only the thread itself writes;
/// the second the words *other* threads write: the parker and `tasuki_signal` (a waker),
/// `wait_state` (a notifier), `interrupted`. The alignment also keeps the `Arc`'s reference
/// counts (cloned by a waker, `tasuki/queue.rs`) on a line of their own, before the data. With
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
    /// Events on: a contended enter nested in a spinner's episode (`spin_episode.rs`) parked
    /// on the fat monitor; the episode's `MonitorEnter` reports it and clears this. Written
    /// only by the thread.
    pub(crate) event_parked: AtomicBool,
    /// Identity-hash generator state (HotSpot's `_hashStateX..W`, see `hash_state.rs`).
    pub(crate) hash_state: HashState,
    /// What this thread blocks on, published by slow paths (see `blocking.rs`).
    pub(crate) blocking: BlockSlot,
    // Second line (checked below): written by other threads.
    pub(crate) parker: Parker,
    /// Hand-off word of the tasuki suspend-wait (see `tasuki/suspend.rs`).
    pub(crate) tasuki_signal: AtomicU32,
    /// Wait-set state of the fat monitor this thread waits on (see `monitor.rs`).
    pub(crate) wait_state: AtomicU32,
    /// Events on: the raw id of the thread whose notify took this thread out of a wait set,
    /// stored before `wait_state` says `NOTIFIED` (HotSpot's `ObjectWaiter::_notifier_tid`).
    pub(crate) notifier: AtomicU16,
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
            notifier: AtomicU16::new(0),
            event_parked: AtomicBool::new(false),
            hash_state: HashState::new(id.get(), generation),
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

/// Everything the fast paths know about the current thread: the common [`ThreadCore`] and
/// the per-thread state `S` of its runtime's protocol (a lock stack, a learn count, ...).
/// The protocols name it `ThreadContext<P>`, for `AttachedThread<P::ThreadState>`.
pub struct AttachedThread<S> {
    core: Arc<ThreadCore>,
    local: S,
}

impl<S> AttachedThread<S> {
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
    pub fn local(&self) -> &S {
        &self.local
    }

    /// This thread's id.
    #[inline]
    pub fn id(&self) -> ThreadId {
        self.core.id
    }
}

impl<S> fmt::Debug for AttachedThread<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadContext")
            .field("id", &self.core.id)
            .finish_non_exhaustive()
    }
}

/// The process-wide thread-id space: every runtime takes its threads' ids
/// from one pool, so an id in a header or a monitor names at most one attached thread in the
/// whole process, and no thread of one runtime ever reads another runtime's owner id as its
/// own. Ids freed by a detach are reused first (last in, first out, as before ids were
/// process-wide), so they stay small whatever the number of runtimes; generations are per id
/// and process-wide too, so a biased word naming an earlier holder of a reused id is stale in
/// every runtime.
///
/// Under loom each registry has a pool of its own: model runs must not share state.
struct IdPool {
    ids: Mutex<Ids>,
}

struct Ids {
    /// Ids returned by detach, reused first (last in, first out).
    free: Vec<u16>,
    /// Ids above this were never handed out.
    high_water: u16,
    /// Generation of the next holder of each id, index = id (grown on demand).
    generations: Vec<u32>,
    /// Whether each id is held now (attached somewhere, or retired), index = id.
    held: Vec<bool>,
}

impl IdPool {
    #[cfg(not(loom))]
    const fn new() -> Self {
        Self {
            ids: Mutex::new(Ids {
                free: Vec::new(),
                high_water: 0,
                generations: Vec::new(),
                held: Vec::new(),
            }),
        }
    }

    #[cfg(loom)]
    fn new() -> Self {
        Self {
            ids: Mutex::new(Ids {
                free: Vec::new(),
                high_water: 0,
                generations: Vec::new(),
                held: Vec::new(),
            }),
        }
    }

    /// A free id and its generation, or `None` if all 32767 are taken.
    fn take(&self) -> Option<(ThreadId, u32)> {
        let mut ids = lock(&self.ids);
        let raw = match ids.free.pop() {
            Some(raw) => raw,
            None if ids.high_water < MAX_THREAD_ID => {
                ids.high_water += 1;
                ids.high_water
            }
            None => return None,
        };
        let i = usize::from(raw);
        if ids.generations.len() <= i {
            ids.generations.resize(i + 1, 0);
            ids.held.resize(i + 1, false);
        }
        let generation = ids.generations[i];
        ids.generations[i] = generation.wrapping_add(1);
        ids.held[i] = true;
        Some((ThreadId::new(raw)?, generation))
    }

    /// Gives `id` back for any runtime to hand out.
    fn give_back(&self, id: ThreadId) {
        let mut ids = lock(&self.ids);
        ids.held[usize::from(id.get())] = false;
        ids.free.push(id.get());
    }

    /// Whether `id` is held now by the thread of generation `generation` (`mask` applied to
    /// both generations, for words that keep only some of its bits).
    #[allow(dead_code)]
    fn holds(&self, id: ThreadId, generation: u32, mask: u32) -> bool {
        let ids = lock(&self.ids);
        let i = usize::from(id.get());
        ids.held.get(i).copied().unwrap_or(false)
            && ids.generations[i].wrapping_sub(1) & mask == generation & mask
    }
}

#[cfg(not(loom))]
static IDS: IdPool = IdPool::new();

struct Slots<S> {
    /// The attached threads by id: sparse, since ids are process-wide (see [`IdPool`]).
    threads: std::collections::BTreeMap<u16, Arc<AttachedThread<S>>>,
    /// Ids retired here for good (see `Registry::retire`); they still count against `max`.
    retired: std::collections::BTreeSet<u16>,
}

/// The thread registry of one runtime: attach, detach, and id → context look-ups. `S` is the
/// per-thread state of the runtime's protocol.
///
/// Ids come from the process-wide pool ([`ThreadId`]s are unique among all the threads
/// attached to any runtime), so `Config::max_threads` bounds how many threads are attached
/// to this runtime (retired ids included), not the id values.
///
/// Look-ups take a mutex; they happen only on slow paths (interrupts, owner queries, lock-stack
/// scans), never on a fast path, which gets its context passed in.
pub struct Registry<S> {
    max: u16,
    slots: Mutex<Slots<S>>,
    #[cfg(loom)]
    pool: IdPool,
}

impl<S> Registry<S> {
    pub(crate) fn new(max_threads: u16) -> Self {
        let max = max_threads.clamp(1, MAX_THREAD_ID);
        Self {
            max,
            slots: Mutex::new(Slots {
                threads: Default::default(),
                retired: Default::default(),
            }),
            #[cfg(loom)]
            pool: IdPool::new(),
        }
    }

    #[inline]
    fn pool(&self) -> &IdPool {
        #[cfg(not(loom))]
        return &IDS;
        #[cfg(loom)]
        return &self.pool;
    }

    /// Allocates an id and builds the context. More threads than `max_threads` attached here,
    /// or than ids in the process, is an error.
    pub(crate) fn attach(
        &self,
        local: impl FnOnce(ThreadId) -> S,
    ) -> Result<Arc<AttachedThread<S>>, MonitorError> {
        let mut s = lock(&self.slots);
        if s.threads.len() + s.retired.len() >= usize::from(self.max) {
            return Err(MonitorError::TooManyThreads);
        }
        let (id, generation) = self.pool().take().ok_or(MonitorError::TooManyThreads)?;
        let cx = Arc::new(AttachedThread {
            core: Arc::new(ThreadCore::new(id, generation)),
            local: local(id),
        });
        s.threads.insert(id.get(), cx.clone());
        Ok(cx)
    }

    /// Returns the id to the process-wide pool.
    pub(crate) fn detach(&self, id: ThreadId) {
        let mut s = lock(&self.slots);
        let was = s.threads.remove(&id.get());
        debug_assert!(was.is_some());
        self.pool().give_back(id);
    }

    /// Empties `id`'s slot without returning the id to the pool: it is never handed out
    /// again, by any runtime. For a thread that detaches while still owning a lock it cannot
    /// release (a forgotten guard), so that no later thread inherits that ownership.
    pub(crate) fn retire(&self, id: ThreadId) {
        let mut s = lock(&self.slots);
        s.threads.remove(&id.get());
        s.retired.insert(id.get());
    }

    /// How many ids were retired (see `retire`): never reused, so fewer are left to attach.
    pub fn retired(&self) -> usize {
        lock(&self.slots).retired.len()
    }

    /// The owner named by `raw`, an owner id read from a lock word of a header used with this
    /// runtime (a slow path that must act for that owner, e.g. inflate for it): its context
    /// if it is attached here; `Ok(None)` if the id was retired here (its holder detached
    /// with the lock held: it never runs again) or if `still` (a re-read of the word, made
    /// after this look-up) says the word changed: look again. Otherwise `ForeignHeader`: the
    /// id names a thread of another runtime (ids are process-wide), whose locks this runtime
    /// must neither wait for nor take over.
    ///
    /// Why the re-read settles it: an owner of this runtime releases its locks before it
    /// detaches, and detaches under this registry's mutex; a look-up that took the mutex
    /// after that detach is ordered after the release, so the re-read sees the word changed
    /// (unless another thread has locked the header with the same id since — a thread of
    /// another runtime, and then the answer is right).
    pub(crate) fn owner_context(
        &self,
        raw: u32,
        still: impl FnOnce() -> bool,
    ) -> Result<Option<Arc<AttachedThread<S>>>, MonitorError> {
        let Some(id) = ThreadId::from_raw(raw) else {
            return Ok(None);
        };
        {
            let s = lock(&self.slots);
            if let Some(cx) = s.threads.get(&id.get()) {
                return Ok(Some(cx.clone()));
            }
            if s.retired.contains(&id.get()) {
                return Ok(None);
            }
        }
        if still() {
            Err(MonitorError::ForeignHeader)
        } else {
            Ok(None)
        }
    }

    /// For revoking a bias toward (`raw`, `generation`), an owner read from a biased word of
    /// a header used with this runtime: its context if it is attached here; `Ok(None)` if it
    /// is gone (detached or retired: its id is free, or held by a later generation), so the
    /// bias is revoked in place as for any exited owner; `ForeignHeader` if that very thread
    /// is attached to another runtime (ids are process-wide): never wait for it, never take
    /// its bias over. `mask` selects the generation bits the word keeps.
    pub(crate) fn bias_owner(
        &self,
        raw: u32,
        generation: u32,
        mask: u32,
    ) -> Result<Option<Arc<AttachedThread<S>>>, MonitorError> {
        let Some(id) = ThreadId::from_raw(raw) else {
            return Ok(None);
        };
        let s = lock(&self.slots);
        if let Some(cx) = s.threads.get(&id.get()) {
            return Ok(Some(cx.clone()));
        }
        if s.retired.contains(&id.get()) {
            return Ok(None);
        }
        // Under our mutex: a thread of ours cannot attach or detach meanwhile, so a live
        // holder of (id, generation) is another runtime's.
        if self.pool().holds(id, generation, mask) {
            Err(MonitorError::ForeignHeader)
        } else {
            Ok(None)
        }
    }

    /// The context of the thread attached under `id`, if any.
    pub fn get(&self, id: ThreadId) -> Option<Arc<AttachedThread<S>>> {
        lock(&self.slots).threads.get(&id.get()).cloned()
    }

    /// Every attached thread's context, in id order.
    pub fn snapshot(&self) -> Vec<Arc<AttachedThread<S>>> {
        lock(&self.slots).threads.values().cloned().collect()
    }

    /// The number of attached threads.
    pub fn len(&self) -> usize {
        lock(&self.slots).threads.len()
    }

    /// Whether no thread is attached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most threads attached at once (`Config::max_threads`; retired ids count).
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
