//! The tasuki lock: Onodera's single-atomic spin-suspend lock (seed 004), the system lock under
//! every fat monitor. Not reentrant and without an owner field (the fat monitor keeps one).
//!
//! | field    | meaning                                                                  |
//! |----------|--------------------------------------------------------------------------|
//! | `lock`   | `UNLOCKED` / `LOCKED` / `UNLOCKING` (the third state only in Figure 7)    |
//! | `wcount` | bits 0..=30: threads in the suspend loop (Figure 3); bit 31: `HANDOFF`   |
//! | `queue`  | the mutex and condition variable of Figure 5: one word, a FIFO of suspended threads (nodes in their own frames) with its spin lock in bit 0 |
//! | config   | `handoff_nanos`, `spin_limit`, yields and `queue_first`, variant: 8 bytes, fixed at construction |
//!
//! 24 bytes in all: Figure 5's mutex is the queue word's lock bit, its condition variable
//! each thread's own parker, and a suspended thread's queue entry a `QNode` in its `suspend`
//! frame.
//!
//! **Fast paths** (Figure 4; the release is the variant's, [`SystemLockVariant`]):
//! - `lock` / `try_lock`: one compare-and-swap `UNLOCKED → LOCKED` (Acquire).
//! - `unlock`, [`Figure7Membarrier`](SystemLockVariant::Figure7Membarrier) (the default, not
//!   in the seed): `store UNLOCKING; compiler barrier; load wcount; store UNLOCKED` (Release):
//!   no fence, no atomic read-modify-write; the barrier is paid by a suspender, with
//!   `membarrier` (`membarrier.rs`), and only after an unordered sleep of at most 1 ms.
//! - `unlock`, [`Figure7`](SystemLockVariant::Figure7): `store UNLOCKING; fence(SeqCst); load
//!   wcount; store UNLOCKED`; [`TasukiLock::unlock_fenced`] is this release in every variant,
//!   for a caller with a Dekker of its own across it (`deflate.rs`'s exit).
//! - `unlock`, [`Figure5`](SystemLockVariant::Figure5): `store UNLOCKED` (Release), then
//!   `fence(SeqCst); load wcount` (§4's two barriers, the other after the suspender's
//!   increment).
//!
//! A nonzero `wcount` sends the release to `resume` (wake the oldest suspended thread to
//! retry); `HANDOFF` set sends it to `hand_off` (retract `UNLOCKING` to `LOCKED` and grant the
//! lock to the requester at the head). Both are in `tasuki/suspend.rs`.
//!
//! **Invariants.**
//! - Under the queue lock, `wcount`'s count equals the queue's length, and `HANDOFF` is set iff
//!   the head asked for the hand-off (one requester at a time).
//! - A suspender increments `wcount`, fences (`SeqCst`), then compare-and-swaps (Property 3.1):
//!   a holder it fails against sees its count at release and wakes a thread. On a
//!   `Figure7Membarrier` lock the release may miss the count; the suspender then sleeps at most
//!   `UNORDERED_SLEEP` (1 ms), calls the barrier in its place in the queue, and looks again.
//! - A waiter is overtaken for at most `fair_handoff` plus one critical section (plus one
//!   unordered sleep on the default variant); `fair_handoff: None` is the seed's unfair lock.
//!
//! **Departures from the seed, all in the slow path:** Figure 7's spin on `UNLOCKING` undoes
//! its increment (so the count stays exact) and the release reads `wcount` before its last
//! store (so that a hand-off can keep the lock); bounded barging (`HANDOFF`); the membarrier
//! release; and [`Contenders::QueueFirst`], `parking_lot`'s discipline for the protocols that
//! ask for it. The arguments (no lost wake-up with the fence, with the barrier, on the
//! hand-off): docs/soundness.md, "The system lock"; the measurements: docs/benchmarks.md.
//!
//! Parts: `tasuki/config.rs` (variants, tunables, [`Contenders`]), `tasuki/queue.rs` (the node
//! queue and its lifetime rule), `tasuki/suspend.rs` (spin, suspend, unordered sleep, wakers).

use crate::membarrier;
use crate::sync::{fence, Arc, AtomicU32, Ordering};
use crate::thread::ThreadCore;

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

mod config;
mod queue;
mod suspend;

pub(crate) use config::Contenders;
use config::QUEUE_FIRST;
pub use config::{SystemLockConfig, SystemLockVariant};
pub(crate) use queue::{NodeQueue, QNode};

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
}

impl std::fmt::Debug for TasukiLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TasukiLock")
            .field("lock", &self.lock.load(Ordering::Relaxed))
            .field("wcount", &self.wcount.load(Ordering::Relaxed))
            .finish()
    }
}
