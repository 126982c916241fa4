//! `tasuki`: the bimodal object lock of Onodera and Kawachiya ("A Study of Locking Objects with
//! Bimodal Fields", OOPSLA'99; reference \[19\] of seed 004, which summarises it in §6): a thin
//! lock whose *contention* is flagged by a bit outside the lock field, so that
//!
//! - the owner still unlocks with a plain store (the nonlockers' discipline of seed 004 §3.1:
//!   the flag cannot live in the lock field, or unlocking would need an atomic operation);
//! - a contender waits *suspended* on the object's monitor instead of spinning (seed 004 §3's
//!   tasuki conversion applied to the thin lock: the FLC bit plays `wcount`, the lock word
//!   plays `lock`, and the 'x' of write/read dependencies is the same);
//! - inflation needs no spin-wait (the contender that wins the flat lock inflates it), and a
//!   fat lock deflates back to flat when it is released with nobody waiting.
//!
//! Header ([`TasukiHeader`], two 32-bit words):
//!
//! | word | bits   | flat (bit 31 = 0)                     | inflated (bit 31 = 1)          |
//! |------|--------|---------------------------------------|--------------------------------|
//! | lock | 31     | shape = 0                             | shape = 1                      |
//! | lock | 30..16 | owner thread index (15 bits), 0 = free| monitor index (23 bits, 30..8) |
//! | lock | 15..8  | count = locks − 1 (8 bits)            | ″                              |
//! | lock | 7..0   | host bits (constant while live)       | host bits                      |
//! | aux  | 31     | FLC: flat lock contention             | 0 (cleared by inflation)       |
//! | aux  | 30..8  | the object's monitor index, 0 = none  | the same index                 |
//! | aux  | 7..0   | host bits (never touched)             | host bits                      |
//!
//! Lock bits per object: 24 in the lock word + 1 FLC bit + 23 index bits in the aux word = 48
//! ([`Tasuki::HEADER_LOCK_BITS`]); the host keeps 8 + 8 bits. While the lock is flat, its word
//! names the owner, not a monitor, so a contender needs another way to the object's monitor.
//! The paper is not among our seeds and seed 004 §6 does not say how \[19\] finds it; we keep
//! its index in the aux word (a design choice, not the paper's), installed by the first
//! contender with one compare-and-swap and kept until [`reclaim`](crate::vm::Runtime::reclaim),
//! so the contended path does no table search and a re-inflation allocates nothing. Memory
//! when many objects are locked at once: nothing beyond the header for flat locks; one
//! monitor (`MonitorTable::monitor_bytes`) per
//! object that has ever been contended, waited on or nested beyond 256 (64 bytes on x86-64),
//! until reclaimed — a lock that deflates keeps its monitor in the aux word for the next
//! inflation. The header is 8 bytes, twice `thin`'s word.
//!
//! Atomic operations per fast path:
//! - lock an unlocked flat object: one load, one compare-and-swap (as `thin`), tried only if
//!   the load saw the lock field free (a failed compare-and-swap would still take the
//!   header's cache line exclusive, which a fat lock under contention cannot afford);
//! - unlock (flat, count 0): one load, one compare, one store (Release), one SeqCst fence, one
//!   load of the aux word — no read-modify-write. The fence is the price of the FLC bit: it
//!   orders "store free" before "test FLC" (seed 004 §4's barrier after the release store);
//! - nested lock / unlock: as `thin` (one store of `word ± 256`).
//!
//! Measured instructions per lock+unlock through the guard API (callgrind,
//! `(I(2·10⁵) − I(10⁵)) / 10⁵` of `examples/user_loop.rs PROTOCOL plain|nested N`; 2026-11-25):
//! 28 uncontended, 109 nested (27 / 116 before the look before the compare-and-swap): the
//! nested store is reached through the out-of-line slow path (as `thin-seed`'s, 82), not
//! inline as in `thin` (38).
//!
//! The protocol (seed 004 §6's summary of \[19\]: "converted the spin-wait into a suspend-wait
//! by introducing an extra bit in an object to indicate whether or not contention has
//! occurred"; removes spin-wait from inflation; supports deflation), in our reconstruction:
//! - **contention**: the contender enters the object's monitor, and while the lock is flat:
//!   sets FLC, fence, tries the compare-and-swap; on failure it `wait`s on the monitor
//!   (suspended); on success it owns the flat lock and inflates it: clears FLC, `notifyAll`s
//!   the other contenders, stores the inflated word — it already owns the monitor, so there is
//!   nothing to wait for;
//! - **flat unlock with FLC set**: the unlocker enters the monitor and `notify`s one contender
//!   (one is enough: it either wins and wakes all, or sets FLC again before it waits).
//!   It takes the monitor with `try_enter` and, while that fails, looks whether an inflater has
//!   cleared FLC (who then wakes everybody) — so an unlock never waits for another thread's
//!   critical section, only for a contender's few instructions between its enter and its wait;
//! - **deflation**: the fat owner's last exit stores the flat free word if nobody is in the
//!   monitor's wait set, suspended at its entry queue, or *spinning* on it (contenders count
//!   themselves while they spin, suspend or re-acquire after a wait; the owner reads the
//!   count when it acquires the monitor and again at its exit, and after finding company
//!   looks again only every 16th acquisition — see `Tasuki::may_deflate` for the rule, why
//!   spinners count, and what it cost not to). Whoever acquires the monitor afterwards
//!   finds a flat word and competes for it as a contender, so a racing enter is never lost;
//!   this holds also for a waiter that re-acquires the monitor after a deflation (see
//!   `Tasuki::contend`). The count is a policy, never a condition of safety.
//!
//! Identity hash (32 bits, 0 = none): neither word has room, so it lives in the object's
//! monitor — the one the aux word names, installed by one compare-and-swap without waiting
//! for the lock's owner, and bound to the object until `reclaim`. Deflation changes only the
//! lock word and leaves that monitor in the aux word, so it never loses a hash and needs no
//! check for one; the flat fast paths never look at it. Cost of a hash: one monitor per hashed
//! object (as for any contended one), kept until `reclaim`.
//!
//! Contention with a full monitor table falls back to spinning with back-off on the flat lock
//! (still correct); wait / notify and count overflow then fail with `MonitorTableFull`.

use super::{LockWord, Protocol, HOST_BITS_MASK};
use crate::monitor::{FatMonitor, WaitOutcome};
use crate::protocol::ThreadContext;
use crate::runtime::{Config, InflationCause, Runtime};
use crate::spin_episode::{observe_deadline, SpinEpisode};
use crate::sync::{fence, spin_hint, yield_now, AtomicU32, Ordering};
use crate::table::MonitorIndex;
use crate::thread::ThreadId;
use crate::MonitorError;
use std::time::Instant;

/// Lock word: shape bit, 1 = inflated.
const SHAPE: u32 = 1 << 31;
const OWNER_SHIFT: u32 = 16;
const OWNER_MASK: u32 = 0x7fff << OWNER_SHIFT;
const COUNT_SHIFT: u32 = 8;
const COUNT_MASK: u32 = 0xff << COUNT_SHIFT;
const COUNT_ONE: u32 = 1 << COUNT_SHIFT;
const LOCK_MASK: u32 = !HOST_BITS_MASK;
/// Monitor index position, in the inflated lock word and in the aux word alike.
const INDEX_SHIFT: u32 = 8;
const INDEX_MASK: u32 = 0x7f_ffff << INDEX_SHIFT;
/// Aux word: flat lock contention.
const FLC: u32 = 1 << 31;

/// The header of the `tasuki` protocol: the lock word and the aux word (see the module
/// documentation for the bit table).
pub struct TasukiHeader {
    lock: LockWord,
    aux: AtomicU32,
}

impl Default for TasukiHeader {
    fn default() -> Self {
        Self::new(0, 0)
    }
}

impl TasukiHeader {
    crate::sync::const_unless_loom! {
    /// An unlocked header with `lock_host` in the lock word's low byte and `aux_host` in the
    /// aux word's low byte (both constant while the object lives).
    pub fn new(lock_host: u8, aux_host: u8) -> Self {
        Self {
            lock: LockWord::new(lock_host),
            aux: AtomicU32::new(aux_host as u32),
        }
    }
    }

    /// The lock word.
    pub fn lock_word(&self) -> &LockWord {
        &self.lock
    }

    /// The aux word's host bits.
    pub fn aux_host_bits(&self) -> u8 {
        (self.aux.load(Ordering::Relaxed) & HOST_BITS_MASK) as u8
    }

    /// Whether the FLC bit is set (a racy snapshot).
    pub fn flc(&self) -> bool {
        self.aux.load(Ordering::Relaxed) & FLC != 0
    }

    /// Whether the lock word is inflated (a racy snapshot).
    pub fn is_inflated(&self) -> bool {
        self.lock.raw() & SHAPE != 0
    }

    /// The whole aux word, for introspection and tests (a racy snapshot).
    pub fn raw_aux(&self) -> u32 {
        self.aux.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for TasukiHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "TasukiHeader({:#010x}, aux {:#010x})",
            self.lock.raw(),
            self.raw_aux()
        )
    }
}

/// The `tasuki` protocol (see the module documentation).
#[derive(Debug)]
pub enum Tasuki {}

/// Acquisitions of fat monitors after which a thread that found company at one
/// ([`Tasuki::may_deflate`]) looks again whether it is alone.
const RECHECK_AFTER: u32 = 16;

/// A thread's `tasuki` state: what it saw when it last acquired a fat monitor, for the
/// deflation rule (`Tasuki::may_deflate`). Written and read by its own thread only.
#[derive(Debug, Default)]
pub struct TasukiThread {
    /// Index of the monitor whose last acquisition by this thread found no other thread
    /// counted at it (spinning, suspended, or re-acquiring after a wait); 0: none.
    alone_at: AtomicU32,
    /// Acquisitions of fat monitors left before this thread looks again (it found company).
    recheck_in: AtomicU32,
}

#[inline]
fn index_in(word: u32) -> Option<MonitorIndex> {
    MonitorIndex::new((word & INDEX_MASK) >> INDEX_SHIFT)
}

#[inline]
fn monitor_of(rt: &Runtime<Tasuki>, w: u32) -> Result<&FatMonitor, MonitorError> {
    // Another runtime's index: `ForeignHeader` (table.rs, one index space).
    rt.monitors()
        .checked(index_in(w).expect("inflated lock word holds a monitor index"))
}

#[inline]
fn thin_locks(w: u32) -> u32 {
    ((w & COUNT_MASK) >> COUNT_SHIFT) + 1
}

impl Tasuki {
    /// The object's monitor and its index: the one named by the aux word, or a new one
    /// installed there (the loser of an install race frees its monitor, as in `fat`).
    fn object_monitor<'r>(
        rt: &'r Runtime<Self>,
        h: &TasukiHeader,
    ) -> Result<(&'r FatMonitor, MonitorIndex), MonitorError> {
        if let Some(i) = index_in(h.aux.load(Ordering::Acquire)) {
            return Ok((rt.monitors().checked(i)?, i));
        }
        Self::install(rt, h)
    }

    #[cold]
    fn install<'r>(
        rt: &'r Runtime<Self>,
        h: &TasukiHeader,
    ) -> Result<(&'r FatMonitor, MonitorIndex), MonitorError> {
        let idx = rt.monitors().allocate()?;
        rt.monitors().bind(idx, h as *const TasukiHeader as usize);
        let mut a = h.aux.load(Ordering::Relaxed);
        loop {
            if let Some(theirs) = index_in(a) {
                rt.monitors().free(idx);
                return Ok((rt.monitors().checked(theirs)?, theirs));
            }
            // FLC is only ever set once an index is installed, so `a` holds host bits only.
            match h.aux.compare_exchange_weak(
                a,
                a | (idx.get() << INDEX_SHIFT),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok((rt.monitors().get(idx), idx)),
                Err(cur) => a = cur,
            }
        }
    }

    /// Publishes the inflated word. The caller owns both the flat lock (as `w`) and `m` with
    /// the object's full recursion count. Clears FLC and wakes every suspended contender,
    /// which will block on `m` and find the lock inflated.
    fn publish_inflated(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &TasukiHeader,
        m: &FatMonitor,
        idx: MonitorIndex,
        w: u32,
        cause: InflationCause,
    ) -> Result<(), MonitorError> {
        h.aux.fetch_and(!FLC, Ordering::Relaxed);
        m.notify(t.core(), true)?;
        h.lock.0.store(
            SHAPE | (idx.get() << INDEX_SHIFT) | (w & HOST_BITS_MASK),
            Ordering::Release,
        );
        rt.stats().inflated(cause);
        Ok(())
    }

    /// Inflation by the owner of the flat lock (`w`, holding `count` locks): for wait /
    /// notify and on count overflow. Blocks on the monitor only for the few instructions a
    /// contender or an unlocker holds it (nobody holds it longer while the lock is flat).
    fn inflate_owned<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &TasukiHeader,
        w: u32,
        count: u32,
        cause: InflationCause,
    ) -> Result<&'r FatMonitor, MonitorError> {
        debug_assert_eq!(w & (SHAPE | OWNER_MASK), t.core().id_shifted16());
        let (m, idx) = Self::object_monitor(rt, h)?;
        m.enter_inflated(t.core_arc(), count)?;
        Self::acquired(t, m, idx, false);
        Self::publish_inflated(rt, t, h, m, idx, w, cause)?;
        Ok(m)
    }

    /// The inflation loop of \[19\], run while owning the object's monitor `m` (entered by a
    /// contender, or re-acquired by a waiter): returns once the object's lock is ours — either
    /// the word is inflated (then `m` is the lock) or we won the flat lock and inflated it.
    /// While the word is flat and owned by another thread: set FLC, fence, compare-and-swap;
    /// on failure wait on `m`, suspended, until an unlocker notifies us.
    ///
    /// Interrupts do not end this wait (Java's monitorenter ignores them); one that the
    /// monitor's wait consumed is set again before returning.
    fn contend(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &TasukiHeader,
        m: &FatMonitor,
        idx: MonitorIndex,
    ) -> Result<(), MonitorError> {
        let me = t.core().id_shifted16();
        let mut interrupted = false;
        // Introspection: semantically we are blocked on entering the object (not waiting in
        // its monitor); we publish the flat owner at each look at the word. Begun at the
        // first flat look only: an inflated word (the common case under contention) needs
        // none, and the episode's SeqCst stores were a third of the time of a contended
        // lock+unlock at 8 threads.
        let mut spin = None;
        let r = loop {
            let w = h.lock.0.load(Ordering::Acquire);
            if w & SHAPE != 0 {
                // Inflated with this object's monitor (the index never changes until
                // reclaim), which we own.
                break Ok(());
            }
            // Set FLC before the compare-and-swap, with a fence between: the owner we fail
            // against stores "free", fences, then tests FLC, so it must see it (seed 004 §3,
            // Property 3.1, with §4's barriers).
            h.aux.fetch_or(FLC, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            let free = w & HOST_BITS_MASK;
            if h.lock
                .0
                .compare_exchange(free, free | me, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                // Inflation without spin-wait: we own the flat lock and the monitor.
                let cause = InflationCause::Contention;
                break Self::publish_inflated(rt, t, h, m, idx, free | me, cause);
            }
            spin.get_or_insert_with(|| {
                SpinEpisode::begin(rt.monitors(), t.core(), h as *const TasukiHeader as usize)
            })
            .observe((w & OWNER_MASK) >> OWNER_SHIFT);
            // Announced across the wait: once notified we re-acquire `m` spinning, and the
            // owner must not deflate under us then (`may_deflate`). Timed (a few ms) so that
            // a contender parked behind a deadlocked flat owner re-observes it and the
            // deadlock detector can confirm the edge; a timeout only sends us round the loop
            // again.
            Self::announce(m);
            let r = m.wait(t.core_arc(), observe_deadline());
            Self::acquired(t, m, idx, true);
            match r {
                Ok(_) => {}
                Err(MonitorError::Interrupted) => interrupted = true,
                Err(e) => break Err(e),
            }
        };
        if interrupted {
            t.core().interrupt();
        }
        r
    }

    #[cold]
    fn enter_slow(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &TasukiHeader,
    ) -> Result<(), MonitorError> {
        let me = t.core().id_shifted16();
        let mut backoff = 0u32;
        loop {
            let w = h.lock.0.load(Ordering::Acquire);
            if w & SHAPE == 0 {
                if w & LOCK_MASK == 0 {
                    if h.lock
                        .0
                        .compare_exchange(w, w | me, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                    {
                        return Ok(());
                    }
                    continue;
                }
                if (w ^ me) < (255 << COUNT_SHIFT) {
                    h.lock.0.store(w + COUNT_ONE, Ordering::Relaxed);
                    return Ok(());
                }
                if w & OWNER_MASK == me {
                    Self::inflate_owned(rt, t, h, w, 257, InflationCause::RecursionOverflow)?;
                    return Ok(());
                }
            } else {
                let m = monitor_of(rt, w)?;
                if m.is_owned_by(t.core()) {
                    return m.enter(t.core_arc());
                }
            }
            if w & SHAPE == 0 {
                // Held flat by an owner of another runtime: no monitor of ours may queue on it.
                let still = || h.lock.0.load(Ordering::SeqCst) == w;
                rt.threads()
                    .owner_context((w & OWNER_MASK) >> OWNER_SHIFT, still)?;
            }
            // Held by another thread (flat or fat), or fat and free: go through the monitor.
            let (m, idx) = match Self::object_monitor(rt, h) {
                Ok(x) => x,
                Err(MonitorError::MonitorTableFull) => {
                    // No monitor to suspend on: spin on the flat lock like `thin`.
                    backoff = (backoff + 1).min(7);
                    if backoff < 7 {
                        for _ in 0..(1u32 << backoff) {
                            spin_hint();
                        }
                    } else {
                        yield_now();
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            if m.try_enter(t.core())? {
                Self::acquired(t, m, idx, false);
            } else {
                // Counted while we spin on or suspend at the monitor: the deflation rule
                // (`acquired`) leaves the lock fat while anybody is on the way in.
                Self::announce(m);
                if let Err(e) = m.enter(t.core_arc()) {
                    m.remove_contention();
                    return Err(e);
                }
                Self::acquired(t, m, idx, true);
            }
            return Self::contend(rt, t, h, m, idx);
        }
    }

    /// Counts the caller among the monitor's contenders ([`FatMonitor::add_contention`]) for
    /// as long as it spins on, suspends at, or waits to re-acquire `m`; ended with
    /// [`FatMonitor::remove_contention`]. `tasuki` never claims a monitor for deflation
    /// through the contention count (its deflation is the owner's store of the flat word),
    /// so the announcement always succeeds.
    #[inline]
    fn announce(m: &FatMonitor) {
        let counted = m.add_contention();
        debug_assert!(counted, "tasuki never sets DEFLATING");
    }

    /// `t` has just acquired `m` (index `idx`), as the object's lock or on the way to it;
    /// `announced`: `t` still holds an [`announce`](Self::announce)ment, which ends here.
    /// Notes in `t`'s [`TasukiThread`] whether `t` was then the only thread counted at `m`,
    /// for the deflation rule ([`may_deflate`](Self::may_deflate)). A thread that found
    /// company looks again only after [`RECHECK_AFTER`] more acquisitions: every look is two
    /// read-modify-writes of the monitor's cache line, which the spinners keep reading, and
    /// looking at every acquisition made a contended lock+unlock at 8 threads on 2 cores cost
    /// twice `thin`'s (`perf`: the two were half of the enter's time).
    #[inline]
    fn acquired(t: &ThreadContext<Self>, m: &FatMonitor, idx: MonitorIndex, announced: bool) {
        let me = t.local();
        let wait = me.recheck_in.load(Ordering::Relaxed);
        if wait > 0 && !announced {
            me.recheck_in.store(wait - 1, Ordering::Relaxed);
            me.alone_at.store(0, Ordering::Relaxed);
            return;
        }
        if !announced {
            Self::announce(m);
        }
        // Our own announcement read back: `true` iff it was the only one.
        let alone = m.remove_contention_was_last();
        me.alone_at
            .store(if alone { idx.get() } else { 0 }, Ordering::Relaxed);
        me.recheck_in
            .store(if alone { 0 } else { RECHECK_AFTER }, Ordering::Relaxed);
    }

    /// The deflation rule, asked at `t`'s last exit of `m` (index `idx`): nobody waits in
    /// `m`'s wait set, nobody is suspended at its system lock, and nobody else is counted —
    /// spinning on it, suspending at it, or about to re-acquire it after a wait (the
    /// [`announce`](Self::announce)d) — neither when `t` acquired `m`
    /// ([`acquired`](Self::acquired)) nor now. Seed 004 §6 says only that \[19\] "supports
    /// deflation", not when; the rule that came first here counted the suspended and the
    /// waiting but not the spinners, so with more threads than cores the spinners found a
    /// flat word at nearly every hand-over and re-inflated it through FLC (at 8 threads on
    /// 2 cores, up to one inflation and one deflation per 30 lock+unlock pairs; issue 13
    /// item 4). A contender that announces itself just after the look finds the flat word
    /// and competes for it as before (`contend`): the rule is a policy, never a condition of
    /// safety. The note is one per thread: of two fat locks held at once, the outer one's
    /// exit finds the inner one's note and keeps its lock fat until a later exit.
    fn may_deflate(t: &ThreadContext<Self>, m: &FatMonitor, idx: MonitorIndex) -> bool {
        // Our own word: a load and a store, no read-modify-write.
        let alone = t.local().alone_at.load(Ordering::Relaxed) == idx.get();
        t.local().alone_at.store(0, Ordering::Relaxed);
        if !alone || m.system_lock().has_waiters() {
            return false;
        }
        // Alone when we acquired it; still so? (A contender that came during our critical
        // section: at 8 threads on 2 cores, skipping this look cost a re-inflation per 900
        // lock+unlock pairs.)
        Self::announce(m);
        m.remove_contention_was_last() && m.waiter_count() == 0
    }

    /// Flat unlock found FLC set: wake one suspended contender (see the module documentation).
    #[cold]
    fn wake_contender(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &TasukiHeader) {
        let Some(idx) = index_in(h.aux.load(Ordering::Acquire)) else {
            return;
        };
        // Another runtime's index (its contender set FLC): nobody of ours to wake.
        let Some(m) = rt.monitors().try_get(idx) else {
            return;
        };
        let mut spins = 0u32;
        loop {
            // FLC clear or the word inflated: an inflater cleared FLC under the monitor and
            // notifies (or has notified) every contender.
            if h.aux.load(Ordering::Acquire) & FLC == 0
                || h.lock.0.load(Ordering::Acquire) & SHAPE != 0
            {
                return;
            }
            if m.try_enter(t.core()) == Ok(true) {
                if h.aux.load(Ordering::Relaxed) & FLC != 0 {
                    let _ = m.notify(t.core(), false);
                }
                let _ = m.exit(t.core());
                return;
            }
            // The monitor's holder is a contender between its enter and its wait, or another
            // unlocker: a few instructions.
            spins += 1;
            if spins < 16 {
                spin_hint();
            } else {
                yield_now();
            }
        }
    }

    #[cold]
    fn exit_slow(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &TasukiHeader,
    ) -> Result<(), MonitorError> {
        let w = h.lock.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            let m = monitor_of(rt, w)?;
            let idx = index_in(w).expect("inflated lock word holds a monitor index");
            if m.count_for(t.core()) == 1 && Self::may_deflate(t, m, idx) {
                // Deflation: nobody waits, so give the object back its flat lock, free.
                // Nobody else writes an inflated word; FLC is clear (nobody sets it while
                // the word is inflated). A racing enter that queues on `m` after the test
                // finds the flat word once it gets `m` and competes for it (`contend`).
                h.lock.0.store(w & HOST_BITS_MASK, Ordering::Release);
                rt.stats().deflated();
            }
            return m.exit(t.core());
        }
        if w & OWNER_MASK != t.core().id_shifted16() {
            return Err(MonitorError::IllegalMonitorState);
        }
        if w & COUNT_MASK != 0 {
            h.lock.0.store(w - COUNT_ONE, Ordering::Relaxed);
            return Ok(());
        }
        Self::release_flat(rt, t, h, w);
        Ok(())
    }

    /// Flat unlock: store free, fence, test FLC (Figure 4 lines 8–10 of seed 004 with §4's
    /// barrier, on the object's lock word and FLC bit).
    #[inline]
    fn release_flat(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &TasukiHeader, w: u32) {
        h.lock.0.store(w & HOST_BITS_MASK, Ordering::Release);
        fence(Ordering::SeqCst);
        if h.aux.load(Ordering::Relaxed) & FLC != 0 {
            Self::wake_contender(rt, t, h);
        }
    }

    /// The fat monitor for wait / notify: the installed one if the word is inflated, or
    /// inflate the flat lock `t` owns. `IllegalMonitorState` if `t` owns neither.
    fn fat_for_wait<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &TasukiHeader,
    ) -> Result<&'r FatMonitor, MonitorError> {
        let w = h.lock.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            let m = monitor_of(rt, w)?;
            return if m.is_owned_by(t.core()) {
                Ok(m)
            } else {
                Err(MonitorError::IllegalMonitorState)
            };
        }
        if w & OWNER_MASK != t.core().id_shifted16() {
            return Err(MonitorError::IllegalMonitorState);
        }
        Self::inflate_owned(rt, t, h, w, thin_locks(w), InflationCause::WaitNotify)
    }
}

impl Protocol for Tasuki {
    const NAME: &'static str = "tasuki";
    const SUMMARY: &'static str =
        "bimodal lock: thin lock + FLC bit, suspended contenders, no spin to inflate, deflation";
    const HEADER_LOCK_BITS: u32 = 48;

    type Header = TasukiHeader;
    type State = ();
    type ThreadState = TasukiThread;
    type Hint = ();

    fn new_state(_: &Config) {}
    fn new_thread_state(_: ThreadId, _: &Config) -> TasukiThread {
        TasukiThread::default()
    }

    #[inline]
    unsafe fn enter(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &TasukiHeader,
    ) -> Result<(), MonitorError> {
        // Look before the compare-and-swap: a compare-and-swap that fails on an inflated (or
        // held) word still takes the header's cache line exclusive, and with the lock fat
        // under contention every enter would pull the line from the other cores (the
        // header's load was a fifth of a contended lock+unlock at 8 threads on 2 cores).
        let w = h.lock.0.load(Ordering::Relaxed);
        if w & LOCK_MASK == 0
            && h.lock
                .0
                .compare_exchange(
                    w,
                    w | t.core().id_shifted16(),
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            return Ok(());
        }
        Self::enter_slow(rt, t, h)
    }

    unsafe fn try_enter(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &TasukiHeader,
    ) -> Result<bool, MonitorError> {
        let me = t.core().id_shifted16();
        loop {
            let w = h.lock.0.load(Ordering::Acquire);
            if w & SHAPE == 0 {
                if w & LOCK_MASK == 0 {
                    if h.lock
                        .0
                        .compare_exchange(w, w | me, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                    {
                        return Ok(true);
                    }
                    continue;
                }
                if w & OWNER_MASK == me {
                    Self::enter_slow(rt, t, h)?;
                    return Ok(true);
                }
                return Ok(false);
            }
            let m = monitor_of(rt, w)?;
            if m.is_owned_by(t.core()) {
                m.enter(t.core_arc())?;
                return Ok(true);
            }
            if !m.try_enter(t.core())? {
                return Ok(false);
            }
            if h.lock.0.load(Ordering::Acquire) & SHAPE != 0 {
                if let Some(idx) = index_in(w) {
                    Self::acquired(t, m, idx, false);
                }
                return Ok(true);
            }
            // Deflated before we got the monitor: it is not the lock any more. Let go and
            // look at the flat word again.
            m.exit(t.core())?;
        }
    }

    #[inline]
    unsafe fn exit(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &TasukiHeader,
    ) -> Result<(), MonitorError> {
        let w = h.lock.0.load(Ordering::Relaxed);
        if w & LOCK_MASK == t.core().id_shifted16() {
            Self::release_flat(rt, t, h, w);
            return Ok(());
        }
        Self::exit_slow(rt, t, h)
    }

    unsafe fn wait(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &TasukiHeader,
        deadline: Option<Instant>,
    ) -> Result<WaitOutcome, MonitorError> {
        let m = Self::fat_for_wait(rt, t, h)?;
        let idx = index_in(h.aux.load(Ordering::Acquire)).expect("installed before the wait");
        // Announced across the wait, as in `contend`.
        Self::announce(m);
        let r = m.wait(t.core_arc(), deadline);
        if r == Err(MonitorError::IllegalMonitorState) {
            m.remove_contention();
            return r;
        }
        Self::acquired(t, m, idx, true);
        // We hold `m` again, but a deflation may have happened while we were out of its wait
        // set and not yet queued on it: then the flat lock is the object's lock, and we must
        // win it before we own the object.
        Self::contend(rt, t, h, m, idx)?;
        r
    }

    unsafe fn notify(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &TasukiHeader,
        all: bool,
    ) -> Result<(), MonitorError> {
        Self::fat_for_wait(rt, t, h)?.notify(t.core(), all)
    }

    fn lock_count(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &TasukiHeader) -> u32 {
        let w = h.lock.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            monitor_of(rt, w).map_or(0, |m| m.count_for(t.core()))
        } else if w & OWNER_MASK == t.core().id_shifted16() {
            thin_locks(w)
        } else {
            0
        }
    }

    fn owner_of(rt: &Runtime<Self>, h: &TasukiHeader) -> Option<ThreadId> {
        let w = h.lock.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            monitor_of(rt, w).ok().and_then(FatMonitor::owner)
        } else {
            ThreadId::from_raw((w & OWNER_MASK) >> OWNER_SHIFT)
        }
    }

    fn reclaim(rt: &Runtime<Self>, h: &mut TasukiHeader) {
        let a = h.aux.load(Ordering::Relaxed);
        if let Some(idx) = index_in(a) {
            rt.monitors().free_if_bound(idx);
        }
        let w = h.lock.0.load(Ordering::Relaxed);
        h.lock.0.store(w & HOST_BITS_MASK, Ordering::Relaxed);
        h.aux.store(a & HOST_BITS_MASK, Ordering::Relaxed);
    }

    const HASH_BITS: u32 = 32;

    unsafe fn identity_hash(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &TasukiHeader,
    ) -> Result<u32, MonitorError> {
        let (m, _) = Self::object_monitor(rt, h)?;
        Ok(match m.identity_hash() {
            Some(v) => v,
            None => m.install_hash(crate::hash::fresh(t.core(), Self::HASH_BITS)),
        })
    }

    fn peek_identity_hash(rt: &Runtime<Self>, h: &TasukiHeader) -> Option<u32> {
        index_in(h.aux.load(Ordering::Acquire))
            .and_then(|i| rt.monitors().try_get(i)?.identity_hash())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::vm::Runtime;
    use std::time::Duration;

    /// The owner's flat lock, unlock and nesting touch only the lock word, like `thin`, and
    /// leave both words' host bits alone.
    #[test]
    fn flat_lock_is_thin_and_keeps_host_bits() {
        let rt = Runtime::<Tasuki>::with_defaults();
        let me = rt.attach().unwrap();
        let h = TasukiHeader::new(0x5a, 0xa5);
        let gs: Vec<_> = (0..256).map(|_| me.enter(&h).unwrap()).collect();
        let w = h.lock_word().raw();
        assert_eq!(w >> 31, 0);
        assert_eq!((w & OWNER_MASK) >> OWNER_SHIFT, u32::from(me.id().get()));
        assert_eq!((w & COUNT_MASK) >> COUNT_SHIFT, 255);
        assert_eq!(h.raw_aux(), 0xa5, "no monitor, no FLC");
        drop(gs);
        assert_eq!(h.lock_word().raw(), 0x5a);
        assert_eq!(rt.stats_snapshot().live_monitors, 0);
    }

    /// \[19\]: the contender sets FLC and waits suspended in the monitor's wait set; the owner
    /// never sees its lock field written; the contender inflates once it wins, and its last
    /// exit deflates (nobody waits).
    #[test]
    fn contender_suspends_with_flc_then_inflates_and_deflates() {
        let rt = Runtime::<Tasuki>::with_defaults();
        let h = TasukiHeader::new(0x3c, 0);
        let me = rt.attach().unwrap();
        let g = me.enter(&h).unwrap();
        let before = h.lock_word().raw();
        std::thread::scope(|s| {
            s.spawn(|| {
                let other = rt.attach().unwrap();
                drop(other.enter(&h).unwrap());
            });
            let t0 = std::time::Instant::now();
            let m = loop {
                if let Some(i) = index_in(h.raw_aux()) {
                    let m = rt.monitors().get(i);
                    if m.waiter_count() == 1 {
                        break m;
                    }
                }
                assert!(
                    t0.elapsed() < Duration::from_secs(10),
                    "contender never waited"
                );
                std::thread::sleep(Duration::from_millis(1));
            };
            assert!(h.flc(), "the contender flags contention before it waits");
            assert_eq!(m.waiter_count(), 1, "suspended, not spinning");
            assert_eq!(
                h.lock_word().raw(),
                before,
                "the owner's lock word is untouched"
            );
            drop(g);
        });
        let s = rt.stats_snapshot();
        assert_eq!(s.inflations_contention, 1);
        assert_eq!(s.deflations, 1);
        assert!(!h.is_inflated() && !h.flc());
        assert_eq!(h.lock_word().raw(), 0x3c);
        // Flat again: the next lock is the one-CAS fast path.
        drop(me.enter(&h).unwrap());
        assert!(!h.is_inflated());
    }

    /// wait inflates (a flat lock has no wait set); the waiter's last exit deflates.
    #[test]
    fn wait_inflates_and_exit_deflates() {
        let rt = Runtime::<Tasuki>::with_defaults();
        let me = rt.attach().unwrap();
        let h = TasukiHeader::default();
        {
            let _a = me.enter(&h).unwrap();
            let b = me.enter(&h).unwrap();
            b.wait(Some(Duration::ZERO)).unwrap();
            assert!(h.is_inflated());
            assert_eq!(me.lock_count(&h), 2);
        }
        let s = rt.stats_snapshot();
        assert_eq!((s.inflations_wait_notify, s.deflations), (1, 1));
        assert!(!h.is_inflated());
        // The monitor stays attached in the aux word until the object dies.
        assert_eq!(s.live_monitors, 1);
        let mut h = h;
        rt.reclaim(&mut h);
        assert_eq!(rt.stats_snapshot().live_monitors, 0);
        assert_eq!(h.raw_aux(), 0);
    }

    /// A fat lock is not deflated while a thread waits in its wait set.
    /// Bug (issue 13 item 4): the owner's last exit deflated whenever nobody was
    /// *suspended*, so a contender still spinning on the monitor found a flat word, set FLC,
    /// slept, and the next owner re-inflated — at 8 threads on 2 cores up to one inflation
    /// and deflation per 30 lock+unlock pairs. A contender counts itself at the monitor
    /// (`Tasuki::announce`) before it spins there; here that announcement is made by hand,
    /// so that the spinner's timing (it suspends after the system lock's spin) plays no part.
    #[test]
    fn no_deflation_while_a_contender_spins() {
        let rt = Runtime::<Tasuki>::with_defaults();
        let h = TasukiHeader::default();
        let me = rt.attach().unwrap();
        let g = me.enter(&h).unwrap();
        g.wait(Some(Duration::ZERO)).unwrap();
        assert!(h.is_inflated());
        let m = rt.monitors().get(index_in(h.raw_aux()).unwrap());
        // A contender on its way in: counted, spinning, not suspended.
        Tasuki::announce(m);
        drop(g);
        assert!(
            h.is_inflated(),
            "a contender spins: the owner's exit keeps the lock fat"
        );
        assert_eq!(rt.stats_snapshot().deflations, 0);
        // The contender gets the lock (its count ends there) and exits alone: deflation.
        m.remove_contention();
        drop(me.enter(&h).unwrap());
        assert!(!h.is_inflated(), "alone, the exit deflates");
        assert_eq!(rt.stats_snapshot().deflations, 1);
    }

    #[test]
    fn no_deflation_with_waiters() {
        let rt = Runtime::<Tasuki>::with_defaults();
        let h = TasukiHeader::default();
        let ready = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            s.spawn(|| {
                let me = rt.attach().unwrap();
                let g = me.enter(&h).unwrap();
                ready.wait();
                g.wait(None).unwrap();
            });
            ready.wait();
            let me = rt.attach().unwrap();
            let g = me.enter(&h).unwrap(); // the waiter has released: it is in the wait set
            assert!(h.is_inflated());
            drop(g);
            assert!(h.is_inflated(), "a waiter is in the wait set: no deflation");
            let g = me.enter(&h).unwrap();
            g.notify().unwrap();
        });
        assert!(!h.is_inflated(), "the notified waiter's exit deflates");
    }

    /// Inflation, deflation and re-inflation racing for real: four threads lock two objects,
    /// nested, sometimes waiting with a zero timeout or notifying (which inflate), so locks
    /// keep changing mode under contention. Any lost update means two owners at once.
    #[test]
    fn mode_changes_under_contention_keep_mutual_exclusion() {
        use std::sync::atomic::{AtomicU64, Ordering as O};
        let rt = Runtime::<Tasuki>::with_defaults();
        let hs = [TasukiHeader::default(), TasukiHeader::default()];
        let counters = [AtomicU64::new(0), AtomicU64::new(0)];
        let iters = 20_000u64;
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (rt, hs, counters) = (&rt, &hs, &counters);
                s.spawn(move || {
                    let me = rt.attach().unwrap();
                    for i in 0..iters {
                        let k = ((i + t) % 2) as usize;
                        let g = me.enter(&hs[k]).unwrap();
                        let g2 = (i % 3 == 0).then(|| me.enter(&hs[k]).unwrap());
                        let c = counters[k].load(O::Relaxed);
                        std::hint::spin_loop();
                        counters[k].store(c + 1, O::Relaxed);
                        match i % 7 {
                            0 => drop(g.wait(Some(Duration::ZERO)).unwrap()),
                            1 => g.notify_all().unwrap(),
                            _ => {}
                        }
                        assert_eq!(me.lock_count(&hs[k]), 1 + u32::from(g2.is_some()));
                        drop(g2);
                        drop(g);
                    }
                });
            }
        });
        assert_eq!(
            counters[0].load(O::Relaxed) + counters[1].load(O::Relaxed),
            4 * iters
        );
        assert_eq!(rt.owner_of(&hs[0]), None);
        assert_eq!(rt.owner_of(&hs[1]), None);
        let st = rt.stats_snapshot();
        assert!(st.deflations > 0 && st.inflations() > 0);
    }

    /// The hash lives in the object's monitor (named by the aux word), which deflation leaves
    /// in place: inflate, deflate, re-inflate, the hash stays.
    #[test]
    fn hash_survives_deflation() {
        let rt = Runtime::<Tasuki>::with_defaults();
        let me = rt.attach().unwrap();
        let h = TasukiHeader::new(0x11, 0x22);
        let v = me.identity_hash(&h).unwrap();
        assert!(
            !h.is_inflated(),
            "hashing alone does not inflate the lock word"
        );
        for _ in 0..2 {
            let g = me.enter(&h).unwrap();
            g.wait(Some(Duration::ZERO)).unwrap();
            assert!(h.is_inflated());
            assert_eq!(me.identity_hash(&h), Ok(v));
            drop(g);
            assert!(!h.is_inflated(), "deflated at exit");
            assert_eq!(rt.peek_identity_hash(&h), Some(v));
        }
        assert_eq!((h.lock_word().host_bits(), h.aux_host_bits()), (0x11, 0x22));
        assert_eq!(rt.stats_snapshot().deflations, 2);
    }
}
