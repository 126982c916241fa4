//! `tasuki`: the bimodal object lock of Onodera and Kawachiya (OOPSLA'99, reference \[19\] of
//! seed 004, summarised in its §6): a thin lock whose *contention* is flagged by a bit outside
//! the lock field, so that the owner unlocks with a plain store, a contender waits suspended on
//! the object's monitor, inflation needs no spin-wait, and a fat lock deflates back to flat.
//! This file owns the header, the protocol's entry points and the per-thread deflation note;
//! `inflation.rs` the contended and slow lock paths, `deflation.rs` the unlock slow paths and
//! the deflation rule, `tests.rs` the unit tests.
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
//! 48 lock bits ([`Tasuki::HEADER_LOCK_BITS`]); the host keeps 8 + 8. Identity hash: 32 bits in
//! the object's monitor (neither word has room).
//!
//! Seed 004 §6 (its summary of \[19\]) with §3's tasuki conversion (FLC plays `wcount`, the
//! lock word plays `lock`) and §4's barrier after the release store. Departures:
//! - the monitor's index lives in the aux word, installed by the first contender with one CAS
//!   and kept until [`reclaim`](crate::vm::Runtime::reclaim) (\[19\]'s lookup is not described);
//! - deflation waits for nobody counted at the monitor, spinners included (`may_deflate`);
//! - an unlocker that finds FLC takes the monitor with `try_enter` and never waits for a
//!   critical section;
//! - with the monitor table full, a contender spins with back-off on the flat lock.
//!
//! Invariants:
//! - a held flat word is written only by its owner (count, release, inflation); an inflated
//!   word only by the monitor's owner (deflation); FLC is set only by a holder of the object's
//!   monitor while the word is flat, after the index is installed;
//! - the aux word's index never changes until `reclaim`, so a hash in that monitor survives
//!   deflation;
//! - whoever acquires the monitor after a deflation finds a flat word and competes for it
//!   (`contend`): no enter is lost. The deflation rule is a policy, never a condition of
//!   safety (docs/soundness.md, "`tasuki`: contention, FLC and deflation").
//!
//! | fast path, lock + unlock | atomic operations (lock; unlock)                                | instructions |
//! |--------------------------|-----------------------------------------------------------------|--------------|
//! | flat, uncontended        | load, CAS if the lock field is free; load, Release store, SeqCst fence, aux load | 22 |
//! | nested                   | load, store `w + 256`; load, store `w − 256` (out of line)      | 91           |
//!
//! (Callgrind through the guard API; docs/benchmarks.md, "Protocol notes moved out of the code".)

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

mod deflation;
mod inflation;

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
    unsafe fn lock(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        _: u64,
        h: &TasukiHeader,
    ) -> Result<(), MonitorError> {
        // Look before the compare-and-swap: a compare-and-swap that fails on an inflated (or
        // held) word still takes the header's cache line exclusive, and with the lock fat
        // under contention every enter would pull the line from the other cores.
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
    unsafe fn unlock(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        _: u64,
        _: (),
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
mod tests;
