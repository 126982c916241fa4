//! `lightweight`: HotSpot's lock-stack fast-locking (seed 001, JDK-8291555,
//! `-XX:LockingMode=2`), with HotSpot's recursive fast-locking (JDK-8319796).
//! [`LightweightSeed`] (`lightweight-seed`) is the seed's variant, where every recursive enter
//! inflates; [`LightweightTable`] (`lightweight-table`) finds monitors in an
//! [`ObjectMonitorTable`] by the header's address (HotSpot's `-XX:+UseObjectMonitorTable`).
//! This file owns the header's use, the lock stack's type, the family ([`FastLocking`]) and its
//! entry points; `lock_stack.rs` the lock stack and its GC hooks, `locate.rs` where a monitor
//! is (word or side table), `slow.rs` inflation and the slow paths, `tests.rs` the unit tests.
//!
//! Header: [`MarkWord`] (bit table in [`super::mark`]):
//!
//! | bits   | unlocked | fast-locked | monitor                    | monitor, `lightweight-table` |
//! |--------|----------|-------------|----------------------------|------------------------------|
//! | 63     | host     | host        | host                       | host                         |
//! | 62..32 | hash     | hash        | hash                       | hash                         |
//! | 31..8  | 0        | 0           | monitor index (bit 31 = 0) | 0 (index in the side table)  |
//! | 7..2   | host     | host        | host                       | host                         |
//! | 1..0   | `01`     | `00`        | `10`                       | `10`                         |
//! | stored | `00`     | `01`        | `10`                       | `10`                         |
//!
//! "`01` → `00`" below is HotSpot's transition; the stored word goes `00` → `01`. A stored `11`
//! is never written (`enter` answers it with `IllegalMonitorState`). Identity hash: 31 bits in
//! the word in every state, kept in place by inflation and deflation; the host keeps 7 bits.
//!
//! Departures from seed 001 and HotSpot:
//! - the two header-locking states are stored with bit 0 flipped, so that the all-zero word is
//!   an unlocked header, at no extra instruction ([`super::mark`]);
//! - `lightweight` and `lightweight-table` lock recursively (adjacent entries), as HotSpot now does;
//! - a full lock stack locks a new object through a fresh monitor (the seed's fall-through),
//!   not by inflating the oldest entry: no entry is ever dereferenced;
//! - `-table` keys by address, not by object: stale entries are replaced and orphaned monitor
//!   states deflated in place ([`super::omt`]), and nothing waits for an entry;
//! - with another fast-locking runtime alive, a contender scans its lock stacks before it
//!   inflates (`only_runtime`); the fat path takes the system lock first (`crate::deflate`).
//!
//! Invariants (lock-stack writes by the owning thread only):
//! - an object is on a thread's lock stack only while that thread owns it (push after the
//!   locking CAS, removal before the unlocking CAS), so an owner query scans the lock stacks;
//! - the entries of one object form one adjacent run; its length is the recursion count;
//! - a contender's monitor on a fast-locked object is owned by `ANONYMOUS_OWNER` until the
//!   thread with the run claims it with the run's length and drops the run;
//! - every write of the word is a full-word CAS (only `reclaim`, holding `&mut`, stores), so
//!   no path erases a hash installed concurrently;
//! - under `-table`, a header enters or leaves the monitor state only with its slot locked.
//!
//! The argument: docs/soundness.md, "`lightweight`: the lock stack, the side table".
//!
//! | fast path                   | atomic operations                                    | instructions (lock + unlock) |
//! |-----------------------------|------------------------------------------------------|------------------------------|
//! | lock / unlock, unlocked     | load, CAS `01` → `00`, two stores / load, CAS `00` → `01`, two stores | 39, all three |
//! | recursive lock / unlock     | load, two stores / two stores; no read-modify-write  | 33 (`-seed` inflates: 249)   |
//!
//! (Callgrind through the guard API; measurements and what was tried: docs/benchmarks.md,
//! "Protocol notes moved out of the code".)

use super::mark::{self, MarkWord, FAST_LOCKED, FAST_UNLOCKED, LOCK_BITS, MARK_HOST_BITS, MONITOR};
use super::omt::ObjectMonitorTable;
use super::Protocol;
use crate::deflate::{self, Locate, Via};
use crate::monitor::{FatMonitor, PinnedClaim, WaitOutcome, ANONYMOUS_OWNER};
use crate::protocol::ThreadContext;
use crate::runtime::{Config, InflationCause, Runtime};
use crate::sync::{fence, yield_now, AtomicU64, AtomicUsize, Ordering};
use crate::table::MonitorIndex;
use crate::thread::ThreadId;
use crate::MonitorError;
use std::time::Instant;

/// How many runtimes of the fast-locking family (every [`FastLocking`]: they share
/// [`MarkWord`], so one header can be used with two of them even through the Rust API) are
/// alive in the process. While it is 1, the fast-lock a contender meets is its own
/// runtime's, and the contender inflates it without scanning the lock stacks (see
/// [`FastLocking::only_runtime`]).
#[cfg(not(loom))]
static LIVE_RUNTIMES: AtomicUsize = AtomicUsize::new(0);

#[cfg(loom)]
loom::lazy_static! {
    /// Under loom, one count per execution: model runs must not share state.
    static ref LIVE_RUNTIMES: AtomicUsize = AtomicUsize::new(0);
}

/// A runtime's place in [`LIVE_RUNTIMES`], held by its state from creation to drop.
#[derive(Debug)]
struct LiveRuntime(());

impl LiveRuntime {
    fn new() -> Self {
        LIVE_RUNTIMES.fetch_add(1, Ordering::Relaxed);
        // SeqCst fence after the count: every thread of this runtime locks after it (it
        // attaches to the runtime built here), so a contender that read one of its
        // fast-locks and then fences sees the count (see `only_runtime`).
        fence(Ordering::SeqCst);
        Self(())
    }
}

impl Drop for LiveRuntime {
    fn drop(&mut self) {
        // Relaxed: a contender that still reads the old count inflates at worst a word that
        // this runtime's threads released before it dropped, and its CAS on that word fails.
        LIVE_RUNTIMES.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The runtime-wide state of a fast-locking runtime: the side table (empty unless `TABLE`),
/// and the runtime's place in the process's count of fast-locking runtimes.
#[derive(Debug)]
pub struct FastLockingState {
    table: ObjectMonitorTable,
    _live: LiveRuntime,
}

impl std::ops::Deref for FastLockingState {
    type Target = ObjectMonitorTable;

    #[inline]
    fn deref(&self) -> &ObjectMonitorTable {
        &self.table
    }
}

/// Entries of a lock stack (HotSpot's `LockStack::CAPACITY`).
pub const LOCK_STACK_CAPACITY: usize = 8;

/// How many rounds an owner query retries, at most, before concluding that a fast-locked
/// object has no attached owner (its owner detached with a forgotten guard); the rounds are
/// bounded in time too (`spin::Rescans`).
const OWNER_QUERY_ROUNDS: u32 = 1 << 14;

/// A thread's lock stack: the addresses of the headers it has fast-locked, oldest first.
/// Written only by its thread; read by any thread (owner queries, GC root scans).
pub struct LockStack {
    entries: [AtomicUsize; LOCK_STACK_CAPACITY],
    /// Entries in use; slots at and above `top` hold 0.
    top: AtomicUsize,
}

/// HotSpot's fast-locking (see the module documentation); `RECURSIVE` selects recursive
/// fast-locking (adjacent duplicate entries, JDK-8319796) over the seed's inflation on every
/// recursive enter; `TABLE` finds monitors through the [`ObjectMonitorTable`] instead of the
/// header. Use the aliases [`Lightweight`], [`LightweightSeed`] and [`LightweightTable`].
#[derive(Debug)]
pub enum FastLocking<const RECURSIVE: bool, const TABLE: bool = false> {}

/// `lightweight`: fast-locking with recursion on the lock stack, as HotSpot does (JDK-8319796).
pub type Lightweight = FastLocking<true>;

/// `lightweight-table`: `lightweight` with the monitor found through a side table keyed by
/// the header's address (HotSpot's `ObjectMonitorTable`): the monitor state changes only the
/// lock bits of the header.
pub type LightweightTable = FastLocking<true, true>;

/// `lightweight-seed`: fast-locking exactly as seed 001 describes it — "fast-locking does *not*
/// support recursive locking (yet). When that happens, the fast-lock gets inflated to a full
/// monitor."
pub type LightweightSeed = FastLocking<false>;

#[inline]
fn addr(h: &MarkWord) -> usize {
    h as *const MarkWord as usize
}

mod locate;
mod lock_stack;
mod slow;

impl<const R: bool, const T: bool> Protocol for FastLocking<R, T> {
    const NAME: &'static str = match (R, T) {
        (true, false) => "lightweight",
        (false, false) => "lightweight-seed",
        (true, true) => "lightweight-table",
        (false, true) => "lightweight-seed-table",
    };
    const SUMMARY: &'static str = match (R, T) {
        (true, false) => {
            "HotSpot fast-locking: CAS 01→00 + per-thread lock stack, anonymous owner, deflation"
        }
        (false, false) => "seed 001 as written: lightweight, but every recursive enter inflates",
        (true, true) => "lightweight with the monitor in a side table (HotSpot ObjectMonitorTable)",
        (false, true) => "lightweight-seed with the monitor in a side table",
    };
    const HEADER_LOCK_BITS: u32 = 26;
    // A fast-locked word names no owner, so a lock-stack entry whose header safe code moved
    // away under a leaked guard cannot be told from a live one (`Runtime::new_unchecked`).
    const HOST_MOVE_CONTRACT: bool = true;

    type Header = MarkWord;
    /// The side table (empty unless `TABLE`), and the live-runtime count.
    type State = FastLockingState;
    type ThreadState = LockStack;
    type Hint = ();

    fn new_state(_: &Config) -> FastLockingState {
        FastLockingState {
            table: ObjectMonitorTable::new(T),
            _live: LiveRuntime::new(),
        }
    }
    fn new_thread_state(_: ThreadId, _: &Config) -> LockStack {
        LockStack::new()
    }

    #[inline]
    unsafe fn lock(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        _: u64,
        h: &MarkWord,
    ) -> Result<(), MonitorError> {
        let ls = t.local();
        let top = ls.top();
        if top < LOCK_STACK_CAPACITY {
            // Acquire: the monitor path below reads `TABLE`'s cache with `w` (`Locate`).
            let w = h.0.load(Ordering::Acquire);
            if w & LOCK_BITS == FAST_UNLOCKED {
                if h.0
                    .compare_exchange(w, w ^ 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    ls.push(top, addr(h));
                    return Ok(());
                }
            } else if R && top > 0 && ls.at(top - 1) == addr(h) {
                // Recursive fast-lock: the run is on top, so the run's object is ours.
                ls.push(top, addr(h));
                return Ok(());
            } else if w & LOCK_BITS == MONITOR && deflate::try_enter_inflated(rt, t, &h.0, w) {
                // Inflated and free (a contender's anonymous monitor is never free: its
                // system lock is held for the fast-lock's owner until it claims it).
                return Ok(());
            }
        }
        Self::enter_slow(rt, t, h, true).map(|_| ())
    }

    unsafe fn try_enter(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &MarkWord,
    ) -> Result<bool, MonitorError> {
        Self::enter_slow(rt, t, h, false)
    }

    #[inline]
    unsafe fn unlock(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        _: u64,
        _: (),
        h: &MarkWord,
    ) -> Result<(), MonitorError> {
        let ls = t.local();
        let top = ls.top();
        if top > 0 && ls.at(top - 1) == addr(h) {
            if top >= 2 && ls.at(top - 2) == addr(h) {
                ls.pop(top);
                return Ok(());
            }
            let w = h.0.load(Ordering::Relaxed);
            if w & LOCK_BITS == FAST_LOCKED {
                ls.pop(top);
                if h.0
                    .compare_exchange(w, w ^ 1, Ordering::Release, Ordering::Relaxed)
                    .is_ok()
                {
                    return Ok(());
                }
                // Inflated (or host bits changed) after our load; the entry is gone already.
                return Self::finish_release(rt, t, h);
            }
        }
        Self::exit_slow(rt, t, h)
    }

    unsafe fn wait(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &MarkWord,
        deadline: Option<Instant>,
    ) -> Result<WaitOutcome, MonitorError> {
        let (m, _) = Self::owned_for_wait(rt, t, h)?;
        deflate::wait_owned(t, m, deadline)
    }

    unsafe fn notify(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &MarkWord,
        all: bool,
    ) -> Result<(), MonitorError> {
        if t.local().run(addr(h)).is_some()
            && h.0.load(Ordering::Acquire) & LOCK_BITS == FAST_LOCKED
        {
            // HotSpot's quick_notify: a fast-locked object has no wait set, hence no waiters.
            return Ok(());
        }
        let (m, _) = Self::owned_for_wait(rt, t, h)?;
        m.notify(t.core(), all)
    }

    fn lock_count(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &MarkWord) -> u32 {
        if let Some((lo, hi)) = t.local().run(addr(h)) {
            return (hi - lo) as u32;
        }
        loop {
            let w = h.0.load(Ordering::Acquire);
            if w & LOCK_BITS != MONITOR {
                return 0;
            }
            match deflate::owned_monitor(rt, t, &h.0, w) {
                Ok(Some((m, _))) => return m.count_for(t.core()),
                Ok(None) => return 0,
                Err(()) if Self::check_foreign(rt, h).is_err() => return 0,
                Err(()) => continue,
            }
        }
    }

    /// A linearizable answer: the returned thread owned `h` at some moment during the call,
    /// and `None` means `h` was unlocked at some moment during the call — except for an object
    /// fast-locked by a thread that detached with a forgotten guard (no attached owner), which
    /// is reported as `None` after rescans bounded in rounds and in time (`spin::Rescans`).
    ///
    /// Why: an entry of `h` on a lock stack implies ownership (pushed after the locking CAS,
    /// cleared before the unlocking one); an owner that is between its CAS and its push (or
    /// its claim of an anonymous monitor) is not seen, so a fast-locked header with no entry
    /// found is re-read and rescanned instead of answered.
    fn owner_of(rt: &Runtime<Self>, h: &MarkWord) -> Option<ThreadId> {
        let mut rounds = crate::spin::Rescans::new(OWNER_QUERY_ROUNDS);
        while rounds.next() {
            let w = h.0.load(Ordering::SeqCst);
            match w & LOCK_BITS {
                FAST_LOCKED => {}
                MONITOR => match deflate::monitor_owner(rt, &h.0, w) {
                    // Another runtime's monitor (`TABLE`): no owner of ours.
                    None if Self::check_foreign(rt, h).is_err() => return None,
                    None => continue,
                    Some(0) => return None,
                    Some(ANONYMOUS_OWNER) => {}
                    Some(raw) => return ThreadId::from_raw(raw),
                },
                _ => return None,
            }
            if let Some(id) = Self::scan_owner(rt, h) {
                return Some(id);
            }
            yield_now();
        }
        None
    }

    fn reclaim(rt: &Runtime<Self>, h: &mut MarkWord) {
        let w = h.0.load(Ordering::Relaxed);
        // `TABLE`: the address's entry goes, whatever the word says (a stale one too).
        let idx = if T {
            let mut slot = rt.state().slot(addr(h));
            let idx = slot.clear();
            if idx.is_some() {
                rt.monitors().release(addr(h));
            }
            idx
        } else {
            (w & LOCK_BITS == MONITOR)
                .then(|| mark::index_in(w))
                .flatten()
        };
        if let Some(idx) = idx {
            // `&mut`: nobody else reaches this header, hence its monitor; still owned only
            // through a forgotten guard, and then it leaks.
            if rt
                .monitors()
                .try_get(idx)
                .is_some_and(FatMonitor::is_idle_but_for_a_first_try)
            {
                rt.monitors().free(idx);
            }
        }
        // The object is dead: its hash goes with it.
        h.0.store((w & MARK_HOST_BITS) | FAST_UNLOCKED, Ordering::Relaxed);
    }

    const HASH_BITS: u32 = mark::HASH_BITS;

    /// HotSpot's lightweight locking: one compare-and-swap into bits 62..32 in whatever state
    /// the word is — unlocked, fast-locked (the owner's unlocking CAS then fails once and its
    /// slow path retries with the hash in place) or monitor. Every write of the word by this
    /// protocol and by deflation is a full-word compare-and-swap (only `reclaim`, which holds
    /// `&mut`, stores), so no write can erase a concurrently installed hash; inflation and
    /// deflation keep it in place (`mark::monitor_word`, `uninstall`).
    unsafe fn identity_hash(
        _rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &MarkWord,
    ) -> Result<u32, MonitorError> {
        let mut w = h.0.load(Ordering::Acquire);
        if mark::hash_of(w) != 0 {
            return Ok(mark::hash_of(w));
        }
        let v = crate::hash::fresh(t.core(), mark::HASH_BITS);
        loop {
            match h.0.compare_exchange_weak(
                w,
                mark::with_hash(w, v),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(v),
                Err(now) if mark::hash_of(now) != 0 => return Ok(mark::hash_of(now)),
                Err(now) => w = now,
            }
        }
    }

    fn peek_identity_hash(_rt: &Runtime<Self>, h: &MarkWord) -> Option<u32> {
        Some(mark::hash_of(h.0.load(Ordering::Acquire))).filter(|&v| v != 0)
    }

    /// The lock stack entries naming `from` now name `to` (see [`Runtime::relocate`]).
    fn relocate_records(rt: &Runtime<Self>, from: *const MarkWord, to: &MarkWord) {
        Self::rewrite_records(rt, from, to);
    }

    /// The lock stack: fast-locked objects, the run length as count.
    fn held_records(_rt: &Runtime<Self>, t: &ThreadContext<Self>) -> Vec<(usize, u32)> {
        crate::introspect::count_runs(t.local().entries().into_iter().map(|p| p as usize))
    }

    /// Every hold is on the lock stack (fast-locked, also after a contender inflated with
    /// the anonymous owner, until we claim it) or in a monitor we own, so a detaching thread
    /// can tell whether it still holds one, and handles need not count their guards.
    const KNOWS_HOLDS: bool = true;

    fn may_hold_any(rt: &Runtime<Self>, t: &ThreadContext<Self>) -> bool {
        t.local().top() > 0 || rt.monitors().any_owned_by(t.core().raw_id())
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
