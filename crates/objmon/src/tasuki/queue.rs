//! The queue of suspended threads: a FIFO in one word, its spin lock in bit 0, of nodes that
//! live in the suspended threads' own frames ([`QNode`], [`NodeQueue`], [`QueueGuard`]). The
//! system lock's entry queue (Figure 5's mutex and condition variable) and the fat monitor's
//! wait set are both one.
//!
//! Invariant: a node is linked and unlinked only under its queue's lock, and its frame does
//! not return while it is linked (the lifetime rule, [`QNode`]).

use crate::sync::{spin_hint, yield_now, Arc, AtomicUsize, Ordering};
use crate::thread::ThreadCore;
use std::cell::Cell;

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
    pub(super) next: Cell<*const QNode>,
    pub(super) prev: Cell<*const QNode>,
    /// The suspended thread's core (`Arc::as_ptr` of the caller's `Arc`, which outlives the
    /// node: the node lives in a frame that borrows it). A waker takes a new reference under
    /// the queue lock, so that the core outlives its wake-up even if the thread returns and
    /// detaches at once. The core itself, not the caller's `Arc` (which sits in the thread's
    /// record, on a line its owner writes): a waker reads no line of the waiter's but the
    /// core's.
    thread: *const ThreadCore,
    /// In the entry queue: this thread asked for a hand-off (then it is at the head).
    pub(super) handoff: Cell<bool>,
}

impl QNode {
    /// An unlinked node for `t`.
    pub(crate) fn new(t: &Arc<ThreadCore>) -> Self {
        Self {
            next: Cell::new(std::ptr::null()),
            prev: Cell::new(std::ptr::null()),
            thread: Arc::as_ptr(t),
            handoff: Cell::new(false),
        }
    }

    /// The node's thread, as a new `Arc`.
    ///
    /// # Safety
    /// The node is linked in a queue whose lock the caller holds (so its frame is alive).
    unsafe fn thread(n: *const QNode) -> Arc<ThreadCore> {
        // SAFETY: the caller's contract: the node is linked, so its frame (which borrows an
        // `Arc` of the core `thread` points to) has not returned (the lifetime rule): the
        // strong count is at least 1 while we add ours, and `thread` came from `Arc::as_ptr`.
        unsafe {
            let p = (*n).thread;
            Arc::increment_strong_count(p);
            Arc::from_raw(p)
        }
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
    pub(super) head: *const QNode,
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
    pub(super) fn lock_spinning(&self) -> QueueGuard<'_> {
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
    pub(super) unsafe fn link_before(&mut self, n: &QNode, at: *const QNode) {
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
    pub(super) fn head_is_handoff(&self) -> bool {
        // SAFETY: the head is linked, hence alive; we hold the lock.
        self.front().is_some_and(|h| unsafe { (*h).handoff.get() })
    }
}

#[cfg(all(test, loom))]
mod tests {
    use super::*;
    use crate::sync::AtomicU32;

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
