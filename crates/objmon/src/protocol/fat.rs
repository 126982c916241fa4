//! `fat`: every object goes straight to a fat monitor — the "monitor only" baseline, like
//! HotSpot's `-XX:LockingMode=0`.
//!
//! Header ([`LockWord`]):
//!
//! | bits  | meaning                                                         |
//! |-------|-----------------------------------------------------------------|
//! | 31    | 1 once a monitor is installed                                   |
//! | 30..8 | monitor index (23 bits), 0 before the first lock                |
//! | 7..0  | host bits (GC state, hash tag, ...), never touched              |
//!
//! Identity hash (32 bits, 0 = none): the word has no room, so it lives in the monitor
//! (`FatMonitor::identity_hash`); hashing an object that has none installs one as the first
//! enter does (one compare-and-swap, never waiting for the owner) and then stores the hash in
//! it with one compare-and-swap. Cost: nothing beyond the monitor every locked object has.
//!
//! The first enter allocates a monitor and installs its index with one compare-and-swap (the
//! loser of a race frees its monitor and uses the winner's); the monitor stays until
//! [`reclaim`](crate::vm::Runtime::reclaim).
//!
//! Atomic operations per fast path (monitor installed): enter = one load of the header, one
//! compare-and-swap (the tasuki lock); nested enter = none; exit = no read-modify-write and,
//! on the default system lock (Figure 7 of seed 004 with the suspender's `membarrier`,
//! `tasuki.rs`), no fence; on the seed's Figure 7, one SeqCst fence.
//!
//! Measured instructions per lock+unlock through the guard API (callgrind,
//! `(I(2·10⁵) − I(10⁵)) / 10⁵` of `examples/user_loop.rs PROTOCOL plain|nested N`):
//! 87 uncontended, 78 nested: the header load, the index decode and the
//! monitor table look-up come before the monitor's own fast path on every enter and exit.

use super::{LockWord, Protocol, HOST_BITS_MASK};
use crate::monitor::{FatMonitor, WaitOutcome};
use crate::protocol::ThreadContext;
use crate::runtime::{Config, InflationCause, Runtime};
use crate::sync::Ordering;
use crate::table::MonitorIndex;
use crate::thread::ThreadId;
use crate::MonitorError;
use std::time::Instant;

const INSTALLED: u32 = 1 << 31;
const INDEX_SHIFT: u32 = 8;
const INDEX_MASK: u32 = 0x7f_ffff << INDEX_SHIFT;

/// The `fat` protocol (see the module documentation).
#[derive(Debug)]
pub enum Fat {}

impl Fat {
    #[inline]
    fn installed<'r>(
        rt: &'r Runtime<Self>,
        h: &LockWord,
    ) -> Result<Option<&'r FatMonitor>, MonitorError> {
        let w = h.0.load(Ordering::Acquire);
        if w & INSTALLED == 0 {
            return Ok(None);
        }
        let idx = MonitorIndex::new((w & INDEX_MASK) >> INDEX_SHIFT);
        // Another runtime's index: `ForeignHeader` (table.rs, one index space).
        rt.monitors()
            .checked(idx.expect("installed header holds an index"))
            .map(Some)
    }

    #[inline]
    fn monitor<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<&'r FatMonitor, MonitorError> {
        match Self::installed(rt, h)? {
            Some(m) => Ok(m),
            None => Self::install(rt, t, h),
        }
    }

    #[cold]
    fn install<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<&'r FatMonitor, MonitorError> {
        let idx = rt.monitors().allocate()?;
        rt.monitors().bind(idx, h as *const LockWord as usize);
        let mut w = h.0.load(Ordering::Relaxed);
        loop {
            if w & INSTALLED != 0 {
                // Another thread installed one first.
                rt.monitors().free(idx);
                return Ok(Self::installed(rt, h)?.expect("installed"));
            }
            let new = INSTALLED | (idx.get() << INDEX_SHIFT) | (w & HOST_BITS_MASK);
            match h
                .0
                .compare_exchange_weak(w, new, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => {
                    rt.stats().inflated(InflationCause::FirstUse);
                    rt.report_inflation(
                        t.id(),
                        h as *const LockWord as usize,
                        idx.get(),
                        InflationCause::FirstUse,
                    );
                    return Ok(rt.monitors().get(idx));
                }
                Err(cur) => w = cur,
            }
        }
    }
}

impl Protocol for Fat {
    const NAME: &'static str = "fat";
    const SUMMARY: &'static str = "every object goes straight to a fat monitor";
    const HEADER_LOCK_BITS: u32 = 24;

    type Header = LockWord;
    type State = ();
    type ThreadState = ();
    type Hint = ();

    fn new_state(_: &Config) {}
    fn new_thread_state(_: ThreadId, _: &Config) {}

    #[inline]
    unsafe fn lock(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        _: u64,
        h: &LockWord,
    ) -> Result<(), MonitorError> {
        Self::monitor(rt, t, h)?.enter(t.core_arc())
    }

    #[inline]
    unsafe fn try_enter(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<bool, MonitorError> {
        Self::monitor(rt, t, h)?.try_enter(t.core())
    }

    #[inline]
    unsafe fn unlock(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        _: u64,
        _: (),
        h: &LockWord,
    ) -> Result<(), MonitorError> {
        match Self::installed(rt, h)? {
            Some(m) => m.exit(t.core()),
            None => Err(MonitorError::IllegalMonitorState),
        }
    }

    unsafe fn wait(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
        deadline: Option<Instant>,
    ) -> Result<WaitOutcome, MonitorError> {
        match Self::installed(rt, h)? {
            Some(m) => m.wait(t.core_arc(), deadline),
            None => Err(MonitorError::IllegalMonitorState),
        }
    }

    unsafe fn notify(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
        all: bool,
    ) -> Result<(), MonitorError> {
        match Self::installed(rt, h)? {
            Some(m) => m.notify(t.core(), all),
            None => Err(MonitorError::IllegalMonitorState),
        }
    }

    fn lock_count(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &LockWord) -> u32 {
        Self::installed(rt, h)
            .ok()
            .flatten()
            .map_or(0, |m| m.count_for(t.core()))
    }

    fn owner_of(rt: &Runtime<Self>, h: &LockWord) -> Option<ThreadId> {
        Self::installed(rt, h)
            .ok()
            .flatten()
            .and_then(FatMonitor::owner)
    }

    fn reclaim(rt: &Runtime<Self>, h: &mut LockWord) {
        let w = h.0.load(Ordering::Relaxed);
        if w & INSTALLED != 0 {
            let idx = MonitorIndex::new((w & INDEX_MASK) >> INDEX_SHIFT).expect("index");
            rt.monitors().free_if_bound(idx);
        }
        h.0.store(w & HOST_BITS_MASK, Ordering::Relaxed);
    }

    const HASH_BITS: u32 = 32;

    unsafe fn identity_hash(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<u32, MonitorError> {
        let m = Self::monitor(rt, t, h)?;
        Ok(match m.identity_hash() {
            Some(v) => v,
            None => m.install_hash(crate::hash::fresh(t.core(), Self::HASH_BITS)),
        })
    }

    fn peek_identity_hash(rt: &Runtime<Self>, h: &LockWord) -> Option<u32> {
        Self::installed(rt, h)
            .ok()
            .flatten()
            .and_then(FatMonitor::identity_hash)
    }
}
