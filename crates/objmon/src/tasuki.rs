//! The tasuki lock: Onodera's single-atomic spin-suspend lock (seed 004), the system lock under
//! every fat monitor.
//!
//! | field    | meaning                                                                  |
//! |----------|--------------------------------------------------------------------------|
//! | `lock`   | `UNLOCKED` / `LOCKED` / `UNLOCKING` (the third state only in Figure 7)    |
//! | `wcount` | bits 0..=30: threads in the suspend loop (Figure 3); bit 31: `HANDOFF`   |
//! | `queue`  | the mutex and condition variable of Figure 5: one word, a FIFO of suspended threads (nodes in their own frames) with its spin lock in bit 0 |
//! | config   | `handoff_nanos`, `spin_limit`, yields and `queue_first`, variant: 8 bytes, fixed at construction |
//!
//! 24 bytes in all (it was 64 with a `Mutex<VecDeque<Arc<ThreadCore>>>` and a hand-off slot):
//! Figure 5's mutex is the queue word's lock bit, its condition variable each thread's own
//! parker, and a suspended thread's queue entry a `QNode` in its `suspend` frame.
//!
//! **Uncontended path** (Figure 4): `lock` is one compare-and-swap; `unlock` is a plain store
//! and a plain test of `wcount`, no atomic read-modify-write. On a multiprocessor (§4),
//! Figure 7 adds the `UNLOCKING` state so that unlock needs one barrier:
//! `store UNLOCKING; fence(SeqCst); load wcount; store UNLOCKED`
//! ([`SystemLockVariant::Figure7`]). The Figure 4–5 variant with the two barriers §4 requires
//! (after the release store and after the increment) stays selectable as
//! [`SystemLockVariant::Figure5`].
//!
//! **The default, [`SystemLockVariant::Figure7Membarrier`]** (not in the seed): Figure 7 with
//! its release barrier moved to the thread about to suspend. The release is
//! `store UNLOCKING; compiler barrier; load wcount; store UNLOCKED` — no fence, no atomic
//! read-modify-write — and a suspending thread that has slept a millisecond without being
//! woken calls `membarrier(PRIVATE_EXPEDITED)` between its increment and its compare-and-swap
//! (`membarrier.rs`), which makes every running thread of the process execute a full barrier:
//! the same Dekker, paid by the rare side, and only when it may matter. Why (measured on the
//! 2-core AMD EPYC VM, one run each, `parking_lot::Mutex` in the same process):
//! - one thread, a fat `thin` lock (`examples/contended inflated thin 100000000`): 11.8 ns
//!   per lock+unlock with Figure 7's fence, 7.4 ns without (`parking_lot` 9.2 ns);
//! - 2 / 4 / 8 threads on one object (`examples/contended 3 2,4,8 thin,parking_lot`):
//!   `thin` 0.88× / 0.92× / 0.90× `parking_lot`, against 1.20–1.30× with the fence.
//!
//! The fence's *form* is most of it: Rust's `fence(SeqCst)` is a locked `or` on the stack;
//! the same release with an `xchg` of `UNLOCKING` instead read 1.4–1.9×, with `mfence`
//! 2.2–2.6× and Figure 5 2–3.5× (`examples/contended`, interleaved binaries).
//!
//! *Suspending without the barrier first.* A `membarrier` costs about 0.2 µs alone and 8 µs
//! with another thread of the process running (the IPI, in this VM); paid on every suspend,
//! under the queue lock, it made the suspend-heavy loads slower than Figure 7 by far
//! (one run each: `cacao-seed` 3–4× → 11–35× `parking_lot` at 8 threads; `thin`'s
//! wait-notify round trip 6.8 → 24.9 µs; a switch of the lock to fenced releases after
//! frequent suspends lost the contended rows' gain instead: the contended `thin` lock also
//! suspends in bursts). So a suspender first increments, fences and tries the
//! compare-and-swap as in Figure 7, without the barrier, queues, and sleeps at most
//! [`UNORDERED_SLEEP`] (1 ms). A release that saw its count wakes it as usual (the common
//! case: then no barrier at all). If the sleep runs out with the thread still queued (linked:
//! no waker took it off under the queue lock), it calls the barrier there, in its place and
//! with its count still in `wcount`, and looks at the lock again: free, it takes it and
//! leaves the queue; held, that holder's release sees the count, and it sleeps on, untimed
//! (`settle_unordered`). So the reordering below costs a missed wake-up at most a
//! millisecond, never a hang; a sleep longer than a millisecond pays one barrier; and the
//! queue's order is kept. (First tried: leaving the queue and trying again with the barrier;
//! a review found that this reorders two such sleepers and calls the barrier again after
//! every later wake-up.)
//!
//! *Why no wake-up is lost after the barrier.* `membarrier` returns only after every thread
//! of the process that was running has executed a full barrier (one not running passed one
//! when it was switched out): a point `p` in the holder's program order. If the holder's
//! load of `wcount` comes after `p`, it sees the increment (made before the system call) and
//! resumes a thread. If it comes before `p`, so does its `UNLOCKING` store (earlier in program
//! order; the compiler barrier keeps it so), which is then visible to the compare-and-swap
//! after the call: the suspender reads `UNLOCKING` (and spins, Figure 7) or a later value, never
//! the holder's `LOCKED`. Either way, a suspender that fails against a holder's `LOCKED` is
//! seen by that holder's release. The `HANDOFF` bit rides on the same increment. (The
//! `LOCKED` read may also be `hand_off`'s retracted `LOCKED`, stored after `UNLOCKING`; that
//! holder then takes the queue lock before it picks an heir, as in Figure 7.)
//!
//! The variant is chosen when the lock is built: where the process cannot register for
//! `membarrier` (not Linux, kernel < 4.14, seccomp), a lock asked for it is built as
//! Figure 7. If the kernel refuses a barrier later (a seccomp filter installed after the
//! registration), the refused suspender does not sleep: it takes back its count and yields
//! until it wins the compare-and-swap, so no release has to see it. Under loom the barrier
//! is modelled as a `SeqCst` fence on both sides (`membarrier.rs`), so the models check
//! the Dekker's shape; `OBJMON_LOOM_SYMMETRIC=1` builds these locks as Figure 7.
//!
//! Cost, kept out of the fast path: a suspend that sleeps past a millisecond makes one system
//! call that interrupts the other CPUs running the process (an IPI each); a sleep that a
//! release's missed count prolongs lasts at most that millisecond; and a caller that relied
//! on the release's fence for a Dekker of its own must ask for it
//! ([`TasukiLock::unlock_fenced`]; `deflate.rs`'s exit does).
//!
//! **Why no wake-up is lost** with the fence (Property 3.1, §4 proof): a suspending thread increments
//! `wcount`, issues a SeqCst fence and then compare-and-swaps. If that CAS fails on a `LOCKED`
//! written by holder S, S's `UNLOCKING` store is later in the lock word's modification order, so
//! S's fence follows ours in the SeqCst order and S's load of `wcount` sees our increment: S
//! calls `resume`, which takes the queue mutex only after we have enqueued ourselves.
//!
//! **Two departures from the figures, both in the slow path:**
//! - Figure 7 as printed spins on `UNLOCKING` by going round the loop again, re-incrementing
//!   `wcount` each time with no matching decrement; we undo the increment before spinning, so
//!   `wcount` stays exact (invariant under the queue lock: `wcount == queue.len()`).
//!   Figure 7's unlock reads `wcount` after storing `UNLOCKED`; we read it just before (still
//!   after the fence, which is all the proof uses), so that a hand-off can keep the lock.
//! - **Bounded barging** (the seed's algorithm "lacks fairness", §3): a thread that has waited
//!   longer than `fair_handoff` (default 1 ms, as parking_lot, Go and CPython) sets `HANDOFF`
//!   in `wcount` *before* its compare-and-swap and parks at the head of the queue (one
//!   requester at a time: a node flagged `handoff`). By the
//!   same fence argument the holder sees `HANDOFF` at its next unlock, and instead of releasing
//!   it retracts `UNLOCKING` to `LOCKED` and hands the lock straight to that thread. So a
//!   waiter is overtaken for at most `fair_handoff` plus one critical section (plus, on the
//!   membarrier release, up to one unordered sleep, 1 ms, if a release missed its count).
//!   `fair_handoff: None` gives the seed's unfair lock.
//!
//! **Contenders** (not in the seed; chosen per call by the protocol, `Contenders`, and only on
//! a lock built with `SystemLockConfig::queue_first`, the default): `thin` and the biased
//! engine's non-seed forms ask for `parking_lot`'s `lock_slow` discipline — a contender does
//! not spin while threads are suspended (they came first; it suspends behind them instead of
//! racing them and the holder for the lock's line), and a thread woken to retry spins again
//! (when nobody else is suspended) before it suspends again, instead of Figure 5's straight
//! compare-and-swap and sleep, which against a holder that re-locks at once costs the
//! holder's next release another wake-up. Every other caller, the seed forms among them,
//! gets the seed's contenders (every contender spins first, whoever is suspended; a woken
//! thread goes straight to its compare-and-swap). Neither changes what the proofs above
//! use: a contender that skips the spin goes to Figure 5; a woken thread is out of the
//! queue with its count taken by its waker, a contender like one that has not suspended yet.

use crate::membarrier;
use crate::sync::{
    fence, spin_hint, waited_at_least, yield_now, Arc, AtomicU32, AtomicUsize, Ordering,
};
use crate::thread::ThreadCore;
use std::cell::Cell;
use std::time::{Duration, Instant};

const UNLOCKED: u32 = 0;
const LOCKED: u32 = 1;
/// Figure 7's transient state: the holder is releasing; contenders spin instead of sleeping.
const UNLOCKING: u32 = 2;

/// `wcount` bit: a starving waiter sits at the head of the queue; the next unlock must grant.
const HANDOFF: u32 = 1 << 31;

/// `ThreadCore::tasuki_signal` values.
const SIG_WAITING: u32 = 1;
/// Woken by `resume`: go round the suspend loop again (Figure 5's condvar_signal).
const SIG_RETRY: u32 = 2;
/// The unlocking thread handed us the lock: we own it.
const SIG_GRANTED: u32 = 3;

/// Which of the seed's release sequences a system lock uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SystemLockVariant {
    /// Figures 4–5 with the two barriers of §4 (after the release store, after the increment).
    /// No hand-off: the seed's own fairness.
    Figure5,
    /// Figure 7: the `UNLOCKING` state and one barrier (a `SeqCst` fence) on every release.
    Figure7,
    /// Figure 7 with the release's barrier moved to the suspending thread, which calls
    /// `membarrier` (the default; see the module documentation). Built as
    /// [`Figure7`](Self::Figure7) where the process cannot register for `membarrier`.
    #[default]
    Figure7Membarrier,
}

/// Tuning of a system lock, fixed when the lock is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SystemLockConfig {
    /// Release sequence.
    pub variant: SystemLockVariant,
    /// Read-only spins on a held lock before suspending (the seed's "spin threshold"; §1).
    pub spin_limit: u32,
    /// Yields of the processor after those pauses, each followed by a look at the lock,
    /// before suspending (at most 127). 0 is seed 004 §1's spin exactly (pauses only); the
    /// default, 7, is `parking_lot`'s `SpinWait` (3 rounds of pauses, then 7 yields). With
    /// more threads than cores the holder needs the core a spinner occupies: one run on the
    /// quiet 2-core Intel VM, `objmon-bench run --bench threads --param 2 --param 4 --param 8
    /// --reps 7 --no-java`, median ns per lock+unlock, 0 → 7 yields, interleaved twice:
    /// `thin` 4 threads 54.6 / 52.6 → 30.1 / 32.1, 8 threads 61.2 / 61.1 → 29.5 / 29.4;
    /// `fable` 8 threads 66.5 / 70.3 → 36.4 / 35.7; `Monitor<()>` 8 threads 63.1 / 66.2 →
    /// 33.5 / 33.3; `parking_lot::Mutex` 25.2–26.3 throughout.
    pub spin_yields: u32,
    /// Whether the protocols that ask for it (`thin`, and the biased engine's non-seed forms,
    /// `fable` among them) get `parking_lot`'s discipline for contenders: no spin while
    /// threads are suspended, and a woken thread spins again before it suspends again
    /// (module documentation, "Contenders"). `false`: every protocol gets seed 004's
    /// contenders, which the seed forms (`thin-seed`, `biased-seed`, `fable-seed`) and the other
    /// protocols get either way. Measured: docs/benchmarks.md, "Contended matrix".
    pub queue_first: bool,
    /// Wait after which a suspended thread is handed the lock instead of competing for it
    /// (Figure 7 variant only). `None`: the seed's unfair lock.
    pub fair_handoff: Option<Duration>,
}

impl Default for SystemLockConfig {
    fn default() -> Self {
        Self {
            variant: SystemLockVariant::Figure7Membarrier,
            spin_limit: 64,
            spin_yields: 7,
            queue_first: true,
            fair_handoff: Some(Duration::from_millis(1)),
        }
    }
}

/// How the contenders of one call behave, chosen by the protocol that calls: its seed's way, or
/// `parking_lot`'s (and only if the lock was built with
/// [`SystemLockConfig::queue_first`]). Safety does not depend on it: a contender that skips
/// the spin suspends (Figure 5), and a woken thread that spins again is, until it suspends
/// again, a contender that has not suspended yet (out of the queue, its count taken by its
/// waker).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Contenders {
    /// Seed 004: every contender spins first (§1's precursory spin, whoever is suspended),
    /// and a thread woken to retry goes straight to its compare-and-swap and, failing,
    /// back to sleep (Figure 5, lines 15–21).
    Seed,
    /// `parking_lot`'s `lock_slow`: no spin while threads are suspended (they came first: a
    /// newcomer suspends behind them instead of racing them and the holder for the lock's
    /// line), and a thread woken to retry spins again, if nobody else is suspended, before
    /// it suspends again (`SpinWait::reset` after an unpark), instead of going back to sleep
    /// at the holder's next re-lock and costing its next release another wake-up.
    QueueFirst,
}

/// `TasukiLock::spin_yields`: the [`SystemLockConfig::queue_first`] flag beside the yields.
const QUEUE_FIRST: u8 = 1 << 7;

/// A thread suspended in a [`NodeQueue`]: a node in the suspended thread's own stack frame
/// (HotSpot's `ObjectWaiter`), so that a queue costs its lock one word and no allocation.
///
/// **Lifetime rule** (what makes the raw pointers sound): a node is linked and unlinked only
/// under its queue's lock, and its frame does not return while it is linked. The thread
/// that owns the node learns that someone else unlinked it from a signal word in its
/// [`ThreadCore`] (`tasuki_signal`, `wait_state`), which that someone stores with Release
/// *after* its last access to the node; the owner reads it with Acquire before its frame
/// can end. Between linking and that moment nothing in the frame can panic. The owner may
/// also unlink its node itself, under the queue's lock, if it finds it still linked there
/// (a timed-out wait, `monitor.rs`; an unordered sleep that ran out, `settle_unordered`).
pub(crate) struct QNode {
    next: Cell<*const QNode>,
    prev: Cell<*const QNode>,
    /// The suspended thread (a pointer to the caller's `Arc`, which outlives the node: the
    /// node lives in a frame that borrows it). A waker clones the `Arc` under the queue lock,
    /// so that the core outlives its wake-up even if the thread returns and detaches at once.
    thread: *const Arc<ThreadCore>,
    /// In the entry queue: this thread asked for a hand-off (then it is at the head).
    handoff: Cell<bool>,
}

impl QNode {
    /// An unlinked node for `t`.
    pub(crate) fn new(t: &Arc<ThreadCore>) -> Self {
        Self {
            next: Cell::new(std::ptr::null()),
            prev: Cell::new(std::ptr::null()),
            thread: t,
            handoff: Cell::new(false),
        }
    }

    /// The node's thread, as a new `Arc`.
    ///
    /// # Safety
    /// The node is linked in a queue whose lock the caller holds (so its frame is alive).
    unsafe fn thread(n: *const QNode) -> Arc<ThreadCore> {
        // SAFETY: the caller's contract: the node is linked, so its frame (which borrows the
        // `Arc` that `thread` points to) has not returned (the lifetime rule).
        unsafe { (*(*n).thread).clone() }
    }
}

/// `NodeQueue::word` bit 0: the queue's lock (nodes are at least 8-aligned, so a node's
/// address never has it).
const QLOCKED: usize = 1;

/// A FIFO of suspended threads in one word: the head of a circular doubly linked list of
/// [`QNode`]s (the head's `prev` is the tail), with its lock in bit 0. The lock is a spin
/// lock with exponential back-off then `yield`; it guards a few pointer writes (and, in the
/// tasuki suspend path, Figure 5's increment-fence-CAS), never a system call.
///
/// Under loom the lock bit is modelled by a loom mutex beside the word (as `park.rs` models
/// the futex): a spin lock makes loom's schedules grow past its branch bound, while the
/// queue operations under the lock are the shipped ones.
#[derive(Debug)]
pub(crate) struct NodeQueue {
    word: AtomicUsize,
    #[cfg(loom)]
    model_lock: loom::sync::Mutex<()>,
}

/// The lock of a [`NodeQueue`], held; released on drop.
pub(crate) struct QueueGuard<'a> {
    queue: &'a NodeQueue,
    head: *const QNode,
    #[cfg(loom)]
    _model: Option<loom::sync::MutexGuard<'a, ()>>,
}

impl NodeQueue {
    /// An empty, unlocked queue.
    pub(crate) fn new() -> Self {
        Self {
            word: AtomicUsize::new(0),
            #[cfg(loom)]
            model_lock: loom::sync::Mutex::new(()),
        }
    }

    /// Whether no node is linked (a racy snapshot unless the caller excludes enqueuers).
    pub(crate) fn is_empty(&self) -> bool {
        self.word.load(Ordering::Relaxed) & !QLOCKED == 0
    }

    /// Takes the queue's lock (the loom model: see the type's documentation).
    #[cfg(loom)]
    pub(crate) fn lock(&self) -> QueueGuard<'_> {
        let model = crate::sync::lock(&self.model_lock);
        QueueGuard {
            queue: self,
            head: self.word.load(Ordering::Relaxed) as *const QNode,
            _model: Some(model),
        }
    }

    /// Takes the queue's lock.
    #[cfg(not(loom))]
    pub(crate) fn lock(&self) -> QueueGuard<'_> {
        self.lock_spinning()
    }

    /// The shipped queue lock: the spin lock on bit 0 (under loom only its own model,
    /// `tests::queue_lock_bit` below, uses it).
    #[cfg_attr(loom, allow(dead_code))]
    fn lock_spinning(&self) -> QueueGuard<'_> {
        let mut step = 0u32;
        loop {
            let w = self.word.load(Ordering::Relaxed);
            // Acquire: the list as the previous holder left it (its Release store in `drop`).
            if w & QLOCKED == 0
                && self
                    .word
                    .compare_exchange(w, w | QLOCKED, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return QueueGuard {
                    queue: self,
                    head: w as *const QNode,
                    #[cfg(loom)]
                    _model: None,
                };
            }
            if step < 6 {
                for _ in 0..1u32 << step {
                    spin_hint();
                }
                step += 1;
            } else {
                // A preempted holder needs the processor more than we do.
                yield_now();
            }
        }
    }
}

impl Drop for QueueGuard<'_> {
    fn drop(&mut self) {
        // Release: the next holder (Acquire in `lock`) sees every link written meanwhile.
        self.queue.word.store(self.head as usize, Ordering::Release);
    }
}

impl QueueGuard<'_> {
    /// The oldest node, if any.
    pub(crate) fn front(&self) -> Option<*const QNode> {
        (!self.head.is_null()).then_some(self.head)
    }

    /// Links `n` at the tail.
    ///
    /// # Safety
    /// `n` is unlinked, and its frame keeps it in place until it is unlinked again (the
    /// lifetime rule of [`QNode`]).
    pub(crate) unsafe fn push_back(&mut self, n: &QNode) {
        // SAFETY: `n` is ours to link (contract); linked nodes are alive (lifetime rule).
        unsafe { self.link_before(n, self.head) };
    }

    /// Links `n` at the head.
    ///
    /// # Safety
    /// As [`push_back`](Self::push_back).
    pub(crate) unsafe fn push_front(&mut self, n: &QNode) {
        // SAFETY: as in `push_back`.
        unsafe { self.link_before(n, self.head) };
        self.head = n;
    }

    /// Links `n` just before `at` (the tail if `at` is the head), or as the only node.
    unsafe fn link_before(&mut self, n: &QNode, at: *const QNode) {
        if at.is_null() {
            n.next.set(n);
            n.prev.set(n);
            self.head = n;
            return;
        }
        // SAFETY: `at` and its `prev` are linked nodes, alive by the lifetime rule, and their
        // links are ours to write under the lock we hold.
        unsafe {
            let prev = (*at).prev.get();
            n.next.set(at);
            n.prev.set(prev);
            (*prev).next.set(n);
            (*at).prev.set(n);
        }
    }

    /// Unlinks `n`.
    ///
    /// # Safety
    /// `n` is linked in this queue.
    pub(crate) unsafe fn remove(&mut self, n: *const QNode) {
        // SAFETY: `n` and its neighbours are linked in this queue (contract), hence alive, and
        // their links are ours to write under the lock.
        unsafe {
            let next = (*n).next.get();
            if next == n {
                self.head = std::ptr::null();
            } else {
                let prev = (*n).prev.get();
                (*prev).next.set(next);
                (*next).prev.set(prev);
                if self.head == n {
                    self.head = next;
                }
            }
            (*n).next.set(std::ptr::null());
            (*n).prev.set(std::ptr::null());
        }
    }

    /// Unlinks and returns the oldest node with its thread (the `Arc` cloned while the node
    /// was still linked, so the caller may signal the thread after the node is gone).
    pub(crate) fn pop_front(&mut self) -> Option<(*const QNode, Arc<ThreadCore>)> {
        let n = self.front()?;
        // SAFETY: `n` is the head, linked in this queue whose lock we hold.
        let t = unsafe { QNode::thread(n) };
        // SAFETY: as above.
        unsafe { self.remove(n) };
        Some((n, t))
    }

    /// The number of linked nodes (a walk).
    pub(crate) fn len(&self) -> usize {
        let Some(h) = self.front() else { return 0 };
        let mut n = h;
        let mut len = 0;
        loop {
            len += 1;
            // SAFETY: linked nodes are alive (lifetime rule), and we hold the lock.
            n = unsafe { (*n).next.get() };
            if n == h {
                return len;
            }
        }
    }

    /// Whether the head asked for a hand-off (entry queue only).
    fn head_is_handoff(&self) -> bool {
        // SAFETY: the head is linked, hence alive; we hold the lock.
        self.front().is_some_and(|h| unsafe { (*h).handoff.get() })
    }
}

/// The tasuki spin-suspend lock (see the module documentation). Not reentrant; it has no owner
/// field — the fat monitor above it keeps one.
pub struct TasukiLock {
    lock: AtomicU32,
    wcount: AtomicU32,
    handoff_nanos: u32,
    spin_limit: u16,
    /// Bits 0..=6: `spin_yields`; bit 7: [`QUEUE_FIRST`] (one byte, so that the lock stays
    /// 24 bytes).
    spin_yields: u8,
    /// The release sequence: [`FIGURE5`], [`FIGURE7`] or [`FIGURE7_MEMBARRIER`] (one byte, so
    /// that the lock stays 24 bytes and the monitor one cache line).
    release: u8,
    /// Figure 5's mutex and condition variable: the suspended threads, oldest first, with a
    /// hand-off requester (if any) at the head.
    queue: NodeQueue,
}

/// What one waiter adds to `wcount`: 1, and `HANDOFF` if it asked for the hand-off.
#[inline]
fn waiter_count(requested: bool) -> u32 {
    if requested {
        1 | HANDOFF
    } else {
        1
    }
}

/// `TasukiLock::release`: Figure 5's release (store, fence).
const FIGURE5: u8 = 0;
/// Figure 7's release (store `UNLOCKING`, fence, load, store).
const FIGURE7: u8 = 1;
/// Figure 7's release with a compiler barrier; suspenders call `membarrier`.
const FIGURE7_MEMBARRIER: u8 = 2;

/// Under loom with `OBJMON_LOOM_UNFENCED_RELEASE=1`: the membarrier release without even its
/// compiler barrier's modelled fence, and every barrier refused. Loom models `membarrier` as a
/// fence on both sides (`membarrier.rs`), so without this the models never see a release miss
/// a count; with it they do, and check that the unordered sleep's end rescues the sleeper
/// (`settle_unordered`, on its refused-barrier path) instead of hanging (`.ci/run`). Read once,
/// outside the model. Always `false` in the shipped build.
#[inline(always)]
fn unfenced_model() -> bool {
    #[cfg(loom)]
    {
        static UNFENCED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *UNFENCED.get_or_init(|| {
            std::env::var_os("OBJMON_LOOM_UNFENCED_RELEASE").is_some_and(|v| v == "1")
        })
    }
    #[cfg(not(loom))]
    {
        false
    }
}

/// How long a thread suspended on a `Figure7Membarrier` lock without the barrier sleeps at
/// most before it calls the barrier in its place and looks at the lock again
/// (`settle_unordered`, module documentation).
const UNORDERED_SLEEP: Duration = Duration::from_millis(1);

/// Pauses a contender spends waiting for an `UNLOCKING` holder's second store before it
/// yields the processor between checks (under loom a pause is already a yield).
const UNLOCKING_SPINS: u32 = 64;

impl TasukiLock {
    /// An unlocked lock.
    pub fn new(config: SystemLockConfig) -> Self {
        let release = match config.variant {
            SystemLockVariant::Figure5 => FIGURE5,
            SystemLockVariant::Figure7 => FIGURE7,
            SystemLockVariant::Figure7Membarrier if membarrier::init() => FIGURE7_MEMBARRIER,
            SystemLockVariant::Figure7Membarrier => FIGURE7,
        };
        let figure7 = release != FIGURE5;
        Self {
            lock: AtomicU32::new(UNLOCKED),
            wcount: AtomicU32::new(0),
            handoff_nanos: match config.fair_handoff {
                Some(d) if figure7 => d.as_nanos().clamp(1, u32::MAX as u128) as u32,
                _ => 0,
            },
            spin_limit: config.spin_limit.min(u16::MAX as u32) as u16,
            spin_yields: config.spin_yields.min(u32::from(!QUEUE_FIRST)) as u8
                | if config.queue_first { QUEUE_FIRST } else { 0 },
            release,
            queue: NodeQueue::new(),
        }
    }

    /// Acquires the lock: one compare-and-swap when uncontended (Figure 4, line 2).
    ///
    /// # Safety
    /// `t` is the calling thread's own core (from its [`ThreadHandle`](crate::vm::ThreadHandle)):
    /// a contender suspends on `t`'s parker and the unlocker wakes `t`, so another thread's
    /// core would put the wrong thread to sleep (a hang, and stolen wake-ups for `t`).
    #[inline]
    pub unsafe fn lock(&self, t: &Arc<ThreadCore>) {
        if self.try_lock() {
            return;
        }
        if self.spin(Contenders::Seed) {
            return;
        }
        // SAFETY: our caller's contract, passed on.
        unsafe { self.suspend(t, Contenders::Seed) };
    }

    /// Acquires the lock if it is free right now.
    #[inline]
    pub fn try_lock(&self) -> bool {
        self.lock
            .compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Releases the lock. On a [`Figure7Membarrier`](SystemLockVariant::Figure7Membarrier)
    /// lock (the default) without a fence: a caller with a Dekker of its own across the
    /// release uses [`unlock_fenced`](Self::unlock_fenced).
    ///
    /// # Safety
    /// The calling thread holds the lock (from [`lock`](Self::lock) or
    /// [`try_lock`](Self::try_lock)): a release by anyone else lets two threads in.
    #[inline]
    pub unsafe fn unlock(&self) {
        // SAFETY: our caller's contract, passed on.
        unsafe { self.release_with(false) }
    }

    /// [`unlock`](Self::unlock) with a `SeqCst` fence between the first store to the lock
    /// word and the read of `wcount` whatever the variant: for a caller with a Dekker of its
    /// own across the release (`deflate.rs`'s exit). On a
    /// [`Figure7Membarrier`](SystemLockVariant::Figure7Membarrier) lock this is Figure 7's
    /// release, which the suspenders' barrier does not need but does not mind. Measured: a
    /// fence after `unlock` instead, with the `UNLOCKED` store already out, made `stack` and
    /// `lightweight` 3.4–4.1× `parking_lot` at 4 and 8 threads (`examples/contended`), against
    /// 1.8–2.2× with this release (the exiting thread stalled on the fence after the next
    /// owner had taken the line, then missed on the monitor it read next).
    ///
    /// # Safety
    /// As [`unlock`](Self::unlock).
    #[inline]
    pub unsafe fn unlock_fenced(&self) {
        // SAFETY: our caller's contract, passed on.
        unsafe { self.release_with(true) }
    }

    /// The release; `fenced`: with a `SeqCst` fence on a `Figure7Membarrier` lock too, not
    /// the compiler barrier that the suspenders' `membarrier` completes (Figures 5 and 7
    /// always fence).
    ///
    /// # Safety
    /// As [`unlock`](Self::unlock).
    #[inline(always)]
    unsafe fn release_with(&self, fenced: bool) {
        if self.release != FIGURE5 {
            // Figure 7: two-step release with one barrier.
            self.lock.store(UNLOCKING, Ordering::Relaxed);
            if fenced || self.release == FIGURE7 {
                fence(Ordering::SeqCst);
            } else if !unfenced_model() {
                // The barrier is the suspender's `membarrier` (module documentation).
                membarrier::owner_barrier();
            }
            let w = self.wcount.load(Ordering::Relaxed);
            if w & HANDOFF != 0 {
                return self.hand_off();
            }
            self.lock.store(UNLOCKED, Ordering::Release);
            if w != 0 {
                self.resume();
            }
        } else {
            // Figure 4 line 8 with §4's barrier after it (the Release store is the one before).
            self.lock.store(UNLOCKED, Ordering::Release);
            fence(Ordering::SeqCst);
            if self.wcount.load(Ordering::Relaxed) != 0 {
                self.resume();
            }
        }
    }

    /// Whether [`unlock`](Self::unlock) executes a `SeqCst` fence between its first store to
    /// the lock word and its return (Figures 5 and 7); `false` for
    /// [`SystemLockVariant::Figure7Membarrier`], whose release has only a compiler barrier
    /// ([`unlock_fenced`](Self::unlock_fenced) has the fence in every variant).
    #[inline]
    pub fn release_fenced(&self) -> bool {
        self.release != FIGURE7_MEMBARRIER
    }

    /// The release sequence this lock was built with (a lock asked for
    /// [`Figure7Membarrier`](SystemLockVariant::Figure7Membarrier) in a process without
    /// `membarrier` reports [`Figure7`](SystemLockVariant::Figure7)).
    pub fn variant(&self) -> SystemLockVariant {
        match self.release {
            FIGURE5 => SystemLockVariant::Figure5,
            FIGURE7 => SystemLockVariant::Figure7,
            _ => SystemLockVariant::Figure7Membarrier,
        }
    }

    /// Whether some thread holds the lock (a racy snapshot, for introspection).
    pub fn is_locked(&self) -> bool {
        self.lock.load(Ordering::Relaxed) != UNLOCKED
    }

    /// Whether threads are suspended on, or about to suspend on, this lock (racy snapshot).
    pub fn has_waiters(&self) -> bool {
        self.wcount.load(Ordering::Relaxed) != 0
    }

    /// The seed's precursory spin (§1), read-only on the lock word: looks separated by
    /// exponentially growing pauses (1, 2, 4, … `pause`s) until `spin_limit` pauses are
    /// spent; then (not in the seed) `spin_yields` yields, each followed by a look. `true` if
    /// it took the lock. With [`Contenders::QueueFirst`] (on a lock built with
    /// `queue_first`), no spin at all while threads are suspended (they came first).
    #[inline]
    pub(crate) fn spin(&self, c: Contenders) -> bool {
        if self.queue_first(c) && self.wcount.load(Ordering::Relaxed) != 0 {
            return false;
        }
        let mut budget = u32::from(self.spin_limit);
        let mut step = 1u32;
        while budget != 0 {
            let n = step.min(budget);
            for _ in 0..n {
                spin_hint();
            }
            budget -= n;
            step <<= 1;
            if self.lock.load(Ordering::Relaxed) == UNLOCKED && self.try_lock() {
                return true;
            }
        }
        // Then the processor to the holder, `spin_yields` times (`SystemLockConfig`).
        for _ in 0..self.spin_yields & !QUEUE_FIRST {
            yield_now();
            if self.lock.load(Ordering::Relaxed) == UNLOCKED && self.try_lock() {
                return true;
            }
        }
        false
    }

    /// Whether the contenders of a call asking for `c` behave as `parking_lot`'s.
    #[inline]
    fn queue_first(&self, c: Contenders) -> bool {
        c == Contenders::QueueFirst && self.spin_yields & QUEUE_FIRST != 0
    }

    /// Figure 5 `tasuki_suspend` (with Figure 7's spin on `UNLOCKING`); with
    /// [`Contenders::QueueFirst`], a thread woken to retry spins again first ([`spin`](Self::spin)).
    ///
    /// # Safety
    /// As [`lock`](Self::lock): `t` is the calling thread's own core.
    #[cold]
    pub(crate) unsafe fn suspend(&self, t: &Arc<ThreadCore>, c: Contenders) {
        let since = (self.handoff_nanos != 0).then(Instant::now);
        // This thread in the queue, in this frame: linked only while `tasuki_signal` says
        // SIG_WAITING (see `QNode`'s lifetime rule).
        let node = QNode::new(t);
        // We have set HANDOFF and it has not been cleared for us yet.
        let mut requested = false;
        let mut overtaken = false;
        let mut q = self.queue.lock();
        loop {
            // Figure 5 line 15, and the hand-off request (one requester at a time: with the
            // queue lock held, any other requester is at the head of the queue).
            if !requested
                && !q.head_is_handoff()
                && since.is_some_and(|s| waited_at_least(s, self.handoff_nanos))
            {
                requested = true;
                // Set before the CAS, so that the holder we fail against must see it.
                self.wcount.fetch_add(1 | HANDOFF, Ordering::Relaxed);
            } else {
                self.wcount.fetch_add(1, Ordering::Relaxed);
            }
            fence(Ordering::SeqCst);
            match self
                .lock
                .compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => {
                    self.wcount
                        .fetch_sub(waiter_count(requested), Ordering::Relaxed);
                    return;
                }
                Err(UNLOCKING) => {
                    // The holder is between its two stores: it will be done in a moment —
                    // unless it was preempted there. So spin a bounded while (Figure 7), then
                    // yield the processor between checks, so that a preempted holder gets it
                    // back. The queue lock stays held: a hand-off requester must be queued
                    // before the holder's `hand_off` can look there (releasing it here
                    // lost hand-offs: conformance `mutual_exclusion` hung).
                    self.wcount.fetch_sub(1, Ordering::Relaxed);
                    self.wait_out_unlocking();
                }
                Err(_) => {
                    // Figure7Membarrier: no barrier yet, so the holder's release may miss our
                    // count: sleep at most UNORDERED_SLEEP (module documentation). Computed
                    // before linking: nothing may panic while the node is linked.
                    let mut deadline = (self.release == FIGURE7_MEMBARRIER).then(|| {
                        let now = Instant::now();
                        now.checked_add(UNORDERED_SLEEP).unwrap_or(now)
                    });
                    // Figure 5 line 21: condvar_wait(&condvar, &mutex).
                    t.tasuki_signal.store(SIG_WAITING, Ordering::Relaxed);
                    node.handoff.set(requested);
                    // SAFETY (each push): `node` is unlinked (a waker unlinked it before
                    // signalling us, or it was never linked) and stays in this frame until a
                    // waker unlinks it and signals us, or we unlink it ourselves under the
                    // queue lock (`settle_unordered`), before we return.
                    if requested || (overtaken && !q.head_is_handoff()) {
                        // The requester goes to the head; a woken but overtaken thread keeps
                        // its place at the head too (behind a requester, if any).
                        unsafe { q.push_front(&node) };
                    } else if overtaken {
                        // SAFETY: as above; the head is linked, hence alive.
                        let second = unsafe { (*q.head).next.get() };
                        unsafe { q.link_before(&node, second) };
                    } else {
                        unsafe { q.push_back(&node) };
                    }
                    drop(q);
                    let sig = loop {
                        // Acquire: the waker's accesses to `node` happen before we reuse or
                        // drop it (the waker stores the signal after them, with Release).
                        let s = t.tasuki_signal.load(Ordering::Acquire);
                        if s != SIG_WAITING {
                            break s;
                        }
                        if t.parker.park(deadline) {
                            // The unordered sleep is over: settle it, in our place.
                            // SAFETY: `node` is ours, linked by the push above unless a
                            // waker has taken it off (it checks, under the queue lock).
                            if unsafe { self.settle_unordered(&node) } {
                                return;
                            }
                            deadline = None;
                        }
                    };
                    if sig == SIG_GRANTED {
                        return;
                    }
                    // SIG_RETRY: whoever woke us took our count (and our HANDOFF, if any).
                    requested = false;
                    overtaken = true;
                    // Out of the queue and uncounted: a contender like any other until we
                    // count ourselves in again, so we may spin as one (not while others are
                    // suspended). Our wait's age (`since`) runs on.
                    if self.queue_first(c) && self.spin(c) {
                        return;
                    }
                    q = self.queue.lock();
                }
            }
        }
    }

    /// Figure 7's wait for a holder between its two stores: a bounded spin, then yields (a
    /// preempted holder needs the processor).
    fn wait_out_unlocking(&self) {
        let mut spins = 0;
        while self.lock.load(Ordering::Relaxed) == UNLOCKING {
            if spins < UNLOCKING_SPINS {
                spins += 1;
                spin_hint();
            } else {
                yield_now();
            }
        }
    }

    /// The end of a `Figure7Membarrier` suspender's unordered sleep (module documentation):
    /// under the queue lock, if `node` is still linked (no waker took it off), our count is
    /// still in `wcount`; `membarrier` makes every holder's release from now on see it, and
    /// we look at the lock again without leaving our place: free, we take it (and leave the
    /// queue with our count); held, its holder's release will see us, so we sleep on,
    /// untimed. `true`: we hold the lock. A refused barrier orders nothing: then we leave the
    /// queue with our count and take the lock by yielding and retrying, never sleeping.
    ///
    /// # Safety
    /// `node` is the calling thread's own node of this queue, linked by it (and not taken
    /// off by a waker since, unless the waker signalled or will signal it).
    #[cold]
    unsafe fn settle_unordered(&self, node: &QNode) -> bool {
        let mut q = self.queue.lock();
        if node.next.get().is_null() {
            // A waker took us off: its signal (and its unpark) is on the way.
            return false;
        }
        let ordered = !unfenced_model() && membarrier::process_barrier();
        if ordered {
            loop {
                match self.lock.compare_exchange(
                    UNLOCKED,
                    LOCKED,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break,
                    Err(UNLOCKING) => self.wait_out_unlocking(),
                    // Held: its release sees our count (the barrier came after it).
                    Err(_) => return false,
                }
            }
        }
        // Taken (or the barrier refused): leave the queue with our count and HANDOFF.
        // SAFETY: linked in this queue (checked above, under the lock we hold since).
        unsafe { q.remove(node) };
        self.wcount
            .fetch_sub(waiter_count(node.handoff.get()), Ordering::Relaxed);
        drop(q);
        if !ordered {
            while !(self.lock.load(Ordering::Relaxed) == UNLOCKED && self.try_lock()) {
                yield_now();
            }
        }
        true
    }

    /// Figure 5 `tasuki_resume`: wake one suspended thread to retry.
    #[cold]
    fn resume(&self) {
        let q = self.queue.lock();
        self.signal_one(q);
    }

    /// Under the queue lock: take the oldest suspended thread (a hand-off requester is the
    /// oldest) off the queue with its count, release the lock and wake it to retry. Figure 5
    /// lines 28–30.
    fn signal_one(&self, mut q: QueueGuard<'_>) {
        let Some((n, next)) = q.pop_front() else {
            return;
        };
        // SAFETY: `n` was linked until just now and its thread has not been signalled, so
        // its frame is still alive (lifetime rule).
        let requested = unsafe { (*n).handoff.get() };
        // A starving thread retries first; if it loses again it re-arms HANDOFF before its
        // CAS, so the next release hands the lock to it.
        self.wcount
            .fetch_sub(waiter_count(requested), Ordering::Relaxed);
        drop(q);
        // Release: after our last access to its node (lifetime rule).
        next.tasuki_signal.store(SIG_RETRY, Ordering::Release);
        next.parker.unpark();
    }

    /// Release with `HANDOFF` seen: keep the lock and give it to the starving thread.
    #[cold]
    fn hand_off(&self) {
        // We still hold the lock (its word says UNLOCKING, which nobody else overwrites):
        // take it back to LOCKED so that nobody acquires it while we pick the heir.
        self.lock.store(LOCKED, Ordering::Relaxed);
        let mut q = self.queue.lock();
        if q.head_is_handoff() {
            let (_, heir) = q.pop_front().expect("a hand-off requester is queued");
            self.wcount.fetch_sub(1 | HANDOFF, Ordering::Relaxed);
            drop(q);
            // Release: our critical section, and our last access to the heir's node.
            heir.tasuki_signal.store(SIG_GRANTED, Ordering::Release);
            heir.parker.unpark();
        } else {
            // A concurrent `resume` already woke the requester to retry. Release for real;
            // every thread that failed its CAS against us (also against the retracted
            // LOCKED) queued itself before letting go of the queue lock we now hold, so
            // waking one of them here loses no wake-up.
            self.lock.store(UNLOCKED, Ordering::Release);
            self.signal_one(q);
        }
    }
}

impl std::fmt::Debug for TasukiLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TasukiLock")
            .field("lock", &self.lock.load(Ordering::Relaxed))
            .field("wcount", &self.wcount.load(Ordering::Relaxed))
            .finish()
    }
}

#[cfg(all(test, loom))]
mod tests {
    use super::*;

    /// The queue's lock bit itself (the shipped spin lock, which the other models replace by
    /// a loom mutex): two threads each do a non-atomic read-modify-write of a counter under
    /// it, with Relaxed accesses, so that only the lock's Acquire / Release orders them. A
    /// weaker lock loses an update.
    #[test]
    fn queue_lock_bit() {
        loom::model(|| {
            let q = Arc::new(NodeQueue::new());
            let c = Arc::new(AtomicU32::new(0));
            let hs: Vec<_> = (0..2)
                .map(|_| {
                    let (q, c) = (q.clone(), c.clone());
                    loom::thread::spawn(move || {
                        let g = q.lock_spinning();
                        c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                        drop(g);
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
            assert_eq!(c.load(Ordering::Relaxed), 2);
            assert!(q.is_empty());
        });
    }
}

#[cfg(all(test, not(loom)))]
mod policy_tests {
    use super::*;

    /// `Contenders::QueueFirst` skips the spin while a thread is counted in `wcount`, on a
    /// lock built with `queue_first` only; `Contenders::Seed` spins either way, and so does
    /// every call on a lock built without it (the faithful setting). The yields' count
    /// shares its byte with the flag and keeps its value.
    #[test]
    fn queue_first_skips_the_spin_while_threads_are_suspended() {
        for queue_first in [true, false] {
            let l = TasukiLock::new(SystemLockConfig {
                spin_yields: 200,
                queue_first,
                ..SystemLockConfig::default()
            });
            assert_eq!(
                l.spin_yields & !QUEUE_FIRST,
                127,
                "yields clamped below the flag"
            );
            assert!(
                l.spin(Contenders::QueueFirst),
                "nobody suspended: spins and takes it"
            );
            // SAFETY: taken by the spin just above.
            unsafe { l.unlock() };
            // A suspended thread's count (no thread is parked: the lock is free and the
            // spin only looks).
            l.wcount.store(1, Ordering::Relaxed);
            assert_eq!(l.spin(Contenders::QueueFirst), !queue_first);
            if !queue_first {
                // SAFETY: taken by the spin just above. The release sees the count and
                // finds nobody queued to wake.
                unsafe { l.unlock() };
            }
            assert!(
                l.spin(Contenders::Seed),
                "the seed's contenders spin regardless"
            );
            // SAFETY: taken by the spin just above.
            unsafe { l.unlock() };
            l.wcount.store(0, Ordering::Relaxed);
        }
    }
}
