//! `lightweight`: HotSpot's lock-stack fast-locking (seed 001, JDK-8291555,
//! `-XX:LockingMode=2`), with the recursive fast-locking HotSpot added later (JDK-8319796).
//! [`LightweightSeed`] (`lightweight-seed`) is the seed's variant without it, where every
//! recursive enter inflates; both are in the catalog and the benchmark report.
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
//! The lock bits are HotSpot's (seed 001); the word *stores* the two header-locking states
//! with bit 0 flipped, so that an all-zero word — `calloc`'d or GC-zeroed memory,
//! [`MarkWord::default`], `objmon_header_init` — is an unlocked header with no hash and no host
//! bits rather than a fast-lock nobody holds (issue 11, finding 9; [`super::mark`] says why
//! this costs no instruction). Below, "`01` → `00`" is HotSpot's transition; the stored word
//! goes `00` → `01`. A stored `11` is never written; `enter` answers it with
//! `IllegalMonitorState`.
//!
//! Identity hash (31 bits, 0 = none; HotSpot's): installed with one compare-and-swap in every
//! state, including fast-locked ("HotSpot's lightweight locking stores the hash in the header
//! even while fast-locked") and monitor; inflation and deflation keep it in place, so a hash
//! costs nothing beyond the word. The host keeps 7 bits (63, 7..2), down from 38. Every write
//! of the word is a full-word compare-and-swap (only `reclaim`, holding `&mut`, stores), so no
//! path can erase a hash installed concurrently: the owner's fast unlock then fails its CAS
//! once and unlocks in `finish_release` with the hash in place.
//!
//! [`LightweightTable`] (`lightweight-table`) finds the monitor by the header's address in an
//! [`ObjectMonitorTable`], as HotSpot does with `-XX:+UseObjectMonitorTable`: inflation and
//! deflation change only the lock bits. (The reserved field stays reserved so that both forms
//! share [`MarkWord`]; with the table form a host could have those 24 bits too.) HotSpot's
//! table is keyed by the object (a weak reference the GC maintains); ours by the address, which
//! safe Rust can move or reuse under an installed idle monitor (`mem::replace`, `mem::swap`,
//! a drop without `reclaim`): so every move of a header into or out of the monitor state is
//! made with its table slot locked, together with its entry, and a look-up treats an entry
//! that does not match the word as stale (replaced by the next inflation) and a monitor state
//! without an entry as an orphan (deflated in place) — never a wait for an entry that cannot
//! come (issue 11, findings 5 and 15; the rule is in [`super::omt`]).
//!
//! Fast-locking "CASes the lowest two header bits to 00 … but does *not* overload the upper bits
//! with a stack-pointer. Instead, it pushes the object-reference to a thread-local lock-stack"
//! (seed 001). The lock stack ([`LockStack`]) holds [`LOCK_STACK_CAPACITY`] = 8 header
//! addresses, as HotSpot's. Invariants (all writes by the owning thread):
//! - an object is on a thread's lock stack only while that thread owns it (push after the
//!   locking CAS, removal before the unlocking CAS), so "which thread owns X?" is a scan of every
//!   thread's lock stack ([`owner_of`](Protocol::owner_of));
//! - the entries of one object form one adjacent run; its length is the recursion count
//!   (recursive fast-locking; the seed itself inflated on recursion);
//! - a fast-locked object's monitor, once a contender installed one, is owned by
//!   `ANONYMOUS_OWNER` until the real owner — the thread with the run — claims it ("fixes the
//!   owner to be itself", seed 001) with the run's length as count and drops the run.
//!
//! Transitions: a contender inflates a fast-locked object with one CAS of the monitor word
//! ("we can directly CAS the (tagged) ObjectMonitor pointer to the object header", seed 001)
//! and blocks on the monitor, which the owner's exit hands over. With a second fast-locking
//! runtime alive in the process, the contender first scans its runtime's lock stacks and
//! inflates only a fast-lock one of them holds (another runtime's owner would not find the
//! monitor, docs/soundness.md §7); alone, it skips the scan (`LIVE_RUNTIMES`: 463 instructions
//! saved per contended inflation with 4 threads attached, 2287 with 34; callgrind, enter_slow
//! inclusive, 20 inflations). The owner inflates its own lock
//! for wait (notify on a fast-locked object is a no-op: it cannot have waiters, as HotSpot's
//! `quick_notify`), for a recursive enter that is not adjacent (A, B, A), and when a recursive
//! enter finds the stack full. A full lock stack and a new object: the new object is locked
//! through a fresh monitor (the seed's fall-through to inflate-enter). HotSpot later inflates
//! the *oldest* entry instead, which needs to dereference that entry; here entries are plain
//! addresses that are not GC roots of anything, and after `mem::forget` of a guard the header
//! behind an entry may be gone, so no entry is ever dereferenced. Exits may come in any order: an exit of an
//! object that is not on top removes one entry of its run and closes the gap.
//! Deflation: `crate::deflate`, per [`Config::deflation`].
//!
//! Atomic operations per fast path:
//! - lock an unlocked object: one load, one compare-and-swap (`01` → `00`; stored `00` →
//!   `01`), two stores (entry, top) to the thread's own lock stack;
//! - recursive lock (object on top): one load of the header, two stores; no read-modify-write;
//! - unlock: one load, one compare-and-swap (`00` → `01`; stored `01` → `00`), two stores;
//!   recursive unlock: two stores.
//!
//! Measured instructions per lock+unlock through the guard API (callgrind,
//! `(I(2·10⁵) − I(10⁵)) / 10⁵` of `examples/user_loop.rs PROTOCOL plain|nested N`; 2026-11-25):
//! `lightweight` 37 uncontended, 32 nested; `lightweight-table` 37 / 32; `lightweight-seed`
//! 37 / 218 (the seed inflates on recursion, so its nested enter goes through the monitor).
//!
//! Contended (issue 13 item 4; 2-core machine shared with other agents, `examples/contended.rs`
//! under `perf stat` with `CONTENDED_STATS`, 2026-11-25): at 4-8 threads on one object
//! `lightweight`, `lightweight-seed` and `stack` cost 2.2-2.9× `parking_lot::Mutex` in
//! thread CPU per lock+unlock with almost no sleeping (< 10⁻⁴ futex calls and context
//! switches per op) and almost no churn (≈ 0.001-0.01 inflations per 1000 ops): the lock
//! stays fat, and the fat path did five atomic read-modify-writes on the monitor's cache
//! line, which the system lock's spinners keep reading — the enter's announcement and its
//! removal around the system lock's compare-and-swap, and at every exit a deflation attempt
//! that announced itself and read the count back — against `thin`'s one (`perf record`, 8
//! threads: the enter's three were 80% of `enter_slow`'s samples, the exit path 45% of
//! all). Now owners stay announced until their last exit (`deflate.rs`, "Owners stay
//! announced"): three, and 1.6-1.9× at 4-8 threads. A skip of the exit's attempt when the
//! owner had found company at its acquisition measured the same but lost the last
//! deflation under loom (`stack_contention_inflating_marker`: a deflater's pin reads as
//! company). `lightweight-table` was 5-7× (every contended op took the side table's shard
//! mutex four to six times: `locate` and `names` on enter and exit, SipHash probes; half its
//! samples). It now looks monitors up through a per-thread cache of (address, monitor) pairs
//! validated by the shard's version, as HotSpot reads its table through `OMCache`
//! ([`super::omt`], "The per-thread cache"): no shard mutex per contended op while the
//! monitor stays installed (one inflation and one deflation per round at 8 threads, with
//! `CONTENDED_STATS`). Old and new binaries alternated, 7 × 5 rounds, medians of the
//! per-run medians (`contended 5 2,4,8 parking_lot,lightweight,lightweight-table`, machine
//! load 8-10 on 2 cores, 2026-11-25), CPU ns per lock+unlock and ratio to `parking_lot`:
//! 2 threads 51.5 (2.54×) → 33.5 (1.67×), 4 threads 101.9 (5.04×) → 38.7 (1.91×), 8 threads
//! 118.0 (5.66×) → 45.8 (2.02×); wall at 8 threads 164.7 (7.3×) → 64.9 (2.6×), against
//! `lightweight`'s 37.1 CPU (1.72×) in the same runs. What remains over `lightweight`
//! (`perf record`, 8 threads): `locate` and `names`, 18% of samples, four cached look-ups
//! (thread-local scan, version load) where `lightweight` tests bits of the word.
//!
//! **On a quiet machine the ratios above did not hold.** They were measured at load 5–10,
//! where only one thread runs at a time and a contended ratio falls toward the uncontended
//! one. Quiet, the three read-modify-writes on the monitor's line per contended lock+unlock
//! cost 3.2–6.6× `parking_lot::Mutex` at 2–8 threads. **The system lock first**
//! (`deflate.rs`; HotSpot's `TryLock` before its `ContentionMark`) takes them to one: an
//! enterer tries the monitor's system lock unannounced and checks the header after; only a
//! thread that must wait announces itself. Quiet run, old and new binaries alternating
//! (`examples/contended.rs 5 2,4,8 …`, docs/benchmarks.md "Contended"), wall ratio to
//! `parking_lot` at 8 threads: `lightweight` 4.39 / 3.83 → 1.53 / 1.48, `lightweight-seed`
//! 4.32 / 4.26 → 1.57 / 1.33, `lightweight-table` 5.39 / 4.98 → 2.35 / 1.89; a later run of
//! all protocols: 1.20, 1.20 and 1.93. What `lightweight-table` still paid over the others
//! was its cached side-table look-ups: two per enter (`locate`, then `names` after the
//! lock) and two per exit, each behind the full register save of the table's slow path
//! inlined beside it: 439 instructions per inflated lock+unlock on one thread against
//! `lightweight`'s 258 (callgrind). The slow paths are out of line now (`table_locate`,
//! `table_names`: 420) and the owner's exit takes its monitor from the cache once
//! (`owned_cached`: 353). Old and new binaries alternating, 6 × 5 rounds, medians of the
//! per-run medians (`contended 5 2,4,8 lightweight,lightweight-table,parking_lot`, load
//! 3.2–4.0 on 2 cores, 2026-11-25), wall ratio to `parking_lot`: 2 threads 1.64 → 1.33,
//! 4 threads 1.63 → 1.46, 8 threads 1.77 → 1.33 (CPU 1.73 → 1.27), `lightweight` 1.36 /
//! 1.33 at 8 in the same runs; `objmon-bench run --bench threads --param 8 --reps 7` (10
//! alternating pairs, load ≈ 5): 1.81 → 1.54, `lightweight` 1.41 / 1.44. The enter's
//! second look-up stays: after the first try's lock it must see any deflation since
//! `locate` (`deflate.rs`, "Enter: the system lock first").
//!
//! GC: lock-stack entries are header addresses used only for identity, never dereferenced;
//! see [`Lightweight::locked_objects`] and [`Runtime::relocate`] (which also moves a
//! `lightweight-table` entry with its header).

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

/// How many rounds an owner query retries before concluding that a fast-locked object has no
/// attached owner (its owner detached with a forgotten guard).
const OWNER_QUERY_ROUNDS: u32 = 1 << 14;

/// A thread's lock stack: the addresses of the headers it has fast-locked, oldest first.
/// Written only by its thread; read by any thread (owner queries, GC root scans).
pub struct LockStack {
    entries: [AtomicUsize; LOCK_STACK_CAPACITY],
    /// Entries in use; slots at and above `top` hold 0.
    top: AtomicUsize,
}

impl LockStack {
    fn new() -> Self {
        Self {
            entries: std::array::from_fn(|_| AtomicUsize::new(0)),
            top: AtomicUsize::new(0),
        }
    }

    /// Owner only.
    #[inline]
    fn top(&self) -> usize {
        self.top.load(Ordering::Relaxed)
    }

    #[inline]
    fn at(&self, i: usize) -> usize {
        self.entries[i].load(Ordering::Relaxed)
    }

    /// Owner only; `top < LOCK_STACK_CAPACITY`.
    #[inline]
    fn push(&self, top: usize, a: usize) {
        self.entries[top].store(a, Ordering::Release);
        self.top.store(top + 1, Ordering::Release);
    }

    /// Owner only; removes the entry at `top - 1`.
    #[inline]
    fn pop(&self, top: usize) {
        self.entries[top - 1].store(0, Ordering::Release);
        self.top.store(top - 1, Ordering::Release);
    }

    /// Owner only: the run of `a`, as `lo..hi`.
    fn run(&self, a: usize) -> Option<(usize, usize)> {
        let top = self.top();
        let lo = (0..top).find(|&i| self.at(i) == a)?;
        let hi = (lo..top).find(|&i| self.at(i) != a).unwrap_or(top);
        Some((lo, hi))
    }

    /// Owner only: removes entries `lo..hi`, closing the gap. Entries above move down one slot
    /// at a time, written at the new slot before being cleared at the old, so a concurrent
    /// scan may see an entry twice but sees `a` only while it is still owned.
    fn remove(&self, lo: usize, hi: usize) {
        let top = self.top();
        let n = hi - lo;
        for i in lo..top - n {
            self.entries[i].store(self.at(i + n), Ordering::Release);
        }
        for i in top - n..top {
            self.entries[i].store(0, Ordering::Release);
        }
        self.top.store(top - n, Ordering::Release);
    }

    /// Any thread: whether `a` is on this stack now (racy; exact for the owner).
    pub fn contains(&self, a: *const MarkWord) -> bool {
        let top = self.top.load(Ordering::Acquire);
        (0..top.min(LOCK_STACK_CAPACITY))
            .any(|i| self.entries[i].load(Ordering::Acquire) == a as usize)
    }

    /// Any thread: the entries, oldest first, one per lock level (a racy snapshot unless the
    /// owner is stopped).
    pub fn entries(&self) -> Vec<*const MarkWord> {
        let top = self.top.load(Ordering::Acquire).min(LOCK_STACK_CAPACITY);
        (0..top)
            .map(|i| self.entries[i].load(Ordering::Acquire))
            .filter(|&a| a != 0)
            .map(|a| a as *const MarkWord)
            .collect()
    }
}

impl std::fmt::Debug for LockStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.entries()).finish()
    }
}

/// HotSpot's fast-locking (see the module documentation); `RECURSIVE` selects recursive
/// fast-locking (adjacent duplicate entries, JDK-8319796) over the seed's inflation on every
/// recursive enter; `TABLE` finds monitors through the [`ObjectMonitorTable`] instead of the
/// header. Use the aliases [`Lightweight`], [`LightweightSeed`] and [`LightweightTable`].
#[derive(Debug)]
pub enum FastLocking<const RECURSIVE: bool, const TABLE: bool = false> {}

/// `lightweight`: fast-locking with recursion on the lock stack, as HotSpot does today.
pub type Lightweight = FastLocking<true>;

/// `lightweight-table`: `lightweight` with the monitor found through a side table keyed by
/// the header's address (HotSpot's `ObjectMonitorTable`): the monitor state changes only the
/// lock bits of the header.
pub type LightweightTable = FastLocking<true, true>;

/// `lightweight-seed`: fast-locking exactly as seed 001 describes it — "fast-locking does *not*
/// support recursive locking (yet). When that happens, the fast-lock gets inflated to a full
/// monitor."
pub type LightweightSeed = FastLocking<false>;

/// Where the monitor of a header in the monitor state is: the index in the word, or (`TABLE`)
/// the [`ObjectMonitorTable`] entry of the header's address. Under `TABLE` every move of a
/// header into or out of the monitor state happens with the address's table slot locked,
/// together with the entry's change (see [`super::omt`] for why and what it buys: stale
/// entries are replaced, orphaned monitor states deflated in place, nothing waits for an entry
/// that will never come).
impl<const R: bool, const T: bool> Locate for FastLocking<R, T> {
    #[inline]
    fn locate(rt: &Runtime<Self>, h: &AtomicU64, w: u64) -> Option<MonitorIndex> {
        if T {
            // This thread's cached pair, if its shard has not changed since (`w` was read
            // with an acquiring load by every caller, as `cached` requires); else the table.
            if w & LOCK_BITS == MONITOR {
                if let Some(idx) = rt.state().cached(h as *const AtomicU64 as usize) {
                    return Some(idx);
                }
            }
            Self::table_locate(rt, h)
        } else {
            // No index: a `lightweight-table` runtime's monitor word (the caller's
            // `check_foreign` answers `ForeignHeader`).
            mark::index_in(w)
        }
    }

    #[inline]
    fn names(rt: &Runtime<Self>, h: &AtomicU64, cur: u64, idx: MonitorIndex) -> bool {
        if T {
            let a = h as *const AtomicU64 as usize;
            // `cur` was just read with an acquiring (or SeqCst) load, as `cached` requires:
            // a pair still valid is the entry at a moment when the header was `cur`.
            if cur & LOCK_BITS == MONITOR {
                if let Some(cached) = rt.state().cached(a) {
                    return cached == idx;
                }
            }
            Self::table_names(rt, h, idx)
        } else {
            mark::names(cur, idx)
        }
    }

    #[inline]
    fn install(rt: &Runtime<Self>, h: &AtomicU64, w: u64, idx: MonitorIndex) -> bool {
        if !T {
            return h
                .compare_exchange(
                    w,
                    mark::monitor_word(w, idx),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok();
        }
        let a = h as *const AtomicU64 as usize;
        let mut slot = rt.state().slot(a);
        // The address is this runtime's for as long as it has an entry here (issue 11 item
        // 13, `binding.rs`): claimed before the entry appears, under the slot lock like the
        // entry itself. An entry already here (stale) holds the claim. Another live runtime's
        // claim fails the install; the caller then reports `ForeignHeader`.
        let had = slot.get().is_some();
        if !had && rt.monitors().claim(a).is_err() {
            return false;
        }
        // Before the swap into the monitor state: a thread that reads the swapped header sees
        // this bump, so no pair cached before (the stale entry's, say) is used for it.
        slot.invalidate();
        if h.compare_exchange(
            w,
            (w & !LOCK_BITS) | MONITOR,
            Ordering::AcqRel,
            Ordering::Relaxed,
        )
        .is_err()
        {
            if !had {
                rt.monitors().release(a);
            }
            return false;
        }
        // `w` was not a monitor state, so an entry here is stale: an earlier object's at this
        // address (moved away, or dropped without `reclaim`).
        let stale = slot.set(idx);
        ObjectMonitorTable::remember(&slot, idx);
        drop(slot);
        if let Some(old) = stale {
            Self::retire_stale(rt, old);
        }
        true
    }

    #[inline]
    fn uninstall(
        rt: &Runtime<Self>,
        h: &AtomicU64,
        cur: u64,
        idx: MonitorIndex,
    ) -> Result<(), u64> {
        if !T {
            return h
                .compare_exchange(
                    cur,
                    mark::fast_unlocked(cur),
                    Ordering::SeqCst,
                    Ordering::Acquire,
                )
                .map(|_| ());
        }
        let mut slot = rt.state().slot(h as *const AtomicU64 as usize);
        if slot.get() != Some(idx) {
            // Not (or no longer) this header's monitor: the caller's re-check says so.
            return Err(h.load(Ordering::Acquire));
        }
        h.compare_exchange(
            cur,
            mark::fast_unlocked(cur),
            Ordering::SeqCst,
            Ordering::Acquire,
        )?;
        slot.clear();
        rt.monitors().release(h as *const AtomicU64 as usize);
        Ok(())
    }
}

#[inline]
fn addr(h: &MarkWord) -> usize {
    h as *const MarkWord as usize
}

impl<const R: bool, const T: bool> FastLocking<R, T> {
    /// Deflates `h`'s monitor if nobody owns, enters or waits on it (the host's hook for
    /// [`DeflationPolicy::OnRequest`](crate::vm::DeflationPolicy::OnRequest), usable under any
    /// policy). `true` if it did.
    pub fn deflate_idle(rt: &Runtime<Self>, h: &MarkWord) -> bool {
        deflate::deflate_idle(rt, &h.0)
    }

    /// `TABLE`: [`names`](Locate::names) when this thread's cache cannot answer: the header
    /// and the entry read under the slot (the monitor bit and the entry change together).
    /// Out of line, as [`table_locate`](Self::table_locate): the cached answer is the
    /// contended path, and the slot's lock and hash probe inlined into it cost every call a
    /// full register save (callgrind).
    #[cold]
    #[inline(never)]
    fn table_names(rt: &Runtime<Self>, h: &AtomicU64, idx: MonitorIndex) -> bool {
        let slot = rt.state().slot(h as *const AtomicU64 as usize);
        h.load(Ordering::SeqCst) & LOCK_BITS == MONITOR && slot.get_cached() == Some(idx)
    }

    /// `TABLE`: the monitor of `h` if `h` is in the monitor state and has an entry. An orphan
    /// — a monitor state with no entry, i.e. a header moved away from its entry, whose monitor
    /// was idle — is deflated in place here (hash and host bits kept), so that no caller waits
    /// for an entry that will never come. `None` means "`h` is not (or no longer) in the
    /// monitor state": the caller re-reads it. Out of line (see
    /// [`table_names`](Self::table_names)).
    #[cold]
    #[inline(never)]
    fn table_locate(rt: &Runtime<Self>, h: &AtomicU64) -> Option<MonitorIndex> {
        let a = h as *const AtomicU64 as usize;
        let slot = rt.state().slot(a);
        let mut w = h.load(Ordering::SeqCst);
        loop {
            if w & LOCK_BITS != MONITOR {
                return None;
            }
            if let Some(idx) = slot.get_cached() {
                return Some(idx);
            }
            if mark::index_in(w).is_some() {
                // An index in the word: a `lightweight` / `lightweight-seed` runtime's
                // monitor state on a header we share a type with, not an orphan of ours
                // (the caller's `check_foreign` answers `ForeignHeader`).
                return None;
            }
            // With the slot locked, no inflation or deflation of `h` by this runtime is under
            // way: the monitor state has no monitor here. It is an orphan unless another live
            // runtime claims the address (issue 11 item 13): that runtime's monitor state, its
            // claim taken before its swap to `10` and released after its swap back. So the
            // swap is made with the address's claims held still (`if_unclaimed`), or not at
            // all (`None`: the caller's `check_foreign` makes it `ForeignHeader`). Only hash
            // installs race with this CAS.
            let swapped = rt.monitors().if_unclaimed(a, || {
                h.compare_exchange(
                    w,
                    mark::fast_unlocked(w),
                    Ordering::SeqCst,
                    Ordering::Acquire,
                )
            });
            match swapped {
                None | Some(Ok(_)) => return None,
                Some(Err(now)) => w = now,
            }
        }
    }

    /// `TABLE`: gives back the monitor of a stale entry (replaced or removed; no header names
    /// it any more) once it can be claimed idle, exactly as a deflater claims one; if it is
    /// still owned through a forgotten guard, it leaks. Not counted as a deflation: like
    /// [`reclaim`](Protocol::reclaim), it ends a monitor whose object is gone from here.
    ///
    /// Nobody can come to hold the monitor for good any more (no header names it, so every
    /// header check fails), but a thread that read its index earlier — from the header of
    /// the object it served before a deflation freed it and an inflation reused it — may
    /// hold it for a moment: a first try of its system lock (the claim waits that out, as
    /// for any deflater), or an announcement of an enterer, an owner query or a deflater,
    /// each about to fail its header check and leave (`Contended`: wait for it here, or the
    /// monitor stays allocated with no way back; `tests/loom_retire_stale.rs`). Such a
    /// thread never waits for this one (its header check takes a slot lock that the callers
    /// have released), and it cannot re-read this index once it leaves, so the wait ends.
    /// `Busy` is an owner (a forgotten guard: no header check is left to fail) or a suspended
    /// or waiting thread, which only an owner's object could have: nothing to wait for.
    #[cold]
    fn retire_stale(rt: &Runtime<Self>, idx: MonitorIndex) {
        let m = rt.monitors().get(idx);
        loop {
            // `DEFLATING` set: another thread has claimed it (nobody can, as no header names
            // it; kept as the deflater's rule).
            if !m.add_contention() {
                return;
            }
            match m.try_begin_deflation_pinned() {
                PinnedClaim::Claimed => {
                    m.finish_deflation();
                    rt.monitors().free(idx);
                    return;
                }
                PinnedClaim::Busy => {
                    m.remove_contention();
                    return;
                }
                PinnedClaim::Contended => {
                    m.remove_contention();
                    yield_now();
                }
            }
        }
    }

    /// `TABLE`: `ForeignHeader` if another live runtime claims `h`'s address, i.e. has the
    /// entry of a monitor state there (issue 11 item 13). Asked where a monitor state found no
    /// entry here (`locate` said "re-read"), so that nothing re-reads forever a header that
    /// another runtime's monitor holds, and nobody deflates it as an orphan.
    #[cold]
    fn check_foreign(rt: &Runtime<Self>, h: &MarkWord) -> Result<(), MonitorError> {
        // The three share `MarkWord`: a monitor word with an index is `lightweight`'s or
        // `lightweight-seed`'s, one without is `lightweight-table`'s; the other kind is
        // another runtime's (it cannot be ours).
        let w = h.0.load(Ordering::Acquire);
        if w & LOCK_BITS == MONITOR && mark::index_in(w).is_some() == T {
            return Err(MonitorError::ForeignHeader);
        }
        if T && rt.monitors().foreign(addr(h)) {
            return Err(MonitorError::ForeignHeader);
        }
        Ok(())
    }

    /// GC hook: the objects `t` has fast-locked, one entry per lock level, oldest first. These
    /// are GC roots ("the lock-stack is also a new set of GC roots", seed 001). Objects whose
    /// monitor `t` owns are not listed: a GC finds them through its monitors (the table).
    pub fn locked_objects(t: &ThreadContext<Self>) -> Vec<*const MarkWord> {
        t.local().entries()
    }

    /// [`Runtime::relocate`]'s part here: the object whose header was at `from` now has its
    /// header at `to` (the host copied the word verbatim). Rewrites every lock-stack entry. Call only while every
    /// attached thread is stopped outside this crate's calls (a safepoint): lock stacks are
    /// otherwise written only by their own threads. Entries are never dereferenced, so a missed
    /// relocation is a wrong answer (`IllegalMonitorState` on exit), never undefined behaviour.
    fn rewrite_records(rt: &Runtime<Self>, from: *const MarkWord, to: &MarkWord) {
        for cx in rt.threads().snapshot() {
            for e in &cx.local().entries {
                if e.load(Ordering::Relaxed) == from as usize {
                    e.store(addr(to), Ordering::Release);
                }
            }
        }
        if T && from as usize != addr(to) {
            // The entry moves with the header (HotSpot's GC re-keys its table the same way),
            // and the claim with it.
            let idx = {
                let mut slot = rt.state().slot(from as usize);
                let idx = slot.clear();
                if idx.is_some() {
                    rt.monitors().release(from as usize);
                }
                idx
            };
            let Some(idx) = idx else {
                return;
            };
            let stale = if to.0.load(Ordering::Acquire) & LOCK_BITS == MONITOR {
                let mut slot = rt.state().slot(addr(to));
                // `to` claimed by another live runtime (two live objects at one address: the
                // host broke its rule) keeps that claim, and the entry is not made.
                match rt.monitors().claim(addr(to)) {
                    Ok(()) => slot.set(idx),
                    Err(_) => Some(idx),
                }
            } else {
                Some(idx) // `from`'s entry was stale already
            };
            if let Some(old) = stale {
                Self::retire_stale(rt, old);
            }
        }
    }

    /// `h` has a run on `t`'s stack and a contender installed an anonymous monitor: take it
    /// over with the run's length and drop the run (claim before dropping, so that owner
    /// queries always find `t` one way or the other).
    fn claim(t: &ThreadContext<Self>, m: &FatMonitor, lo: usize, hi: usize) {
        m.claim_anonymous(t.core(), (hi - lo) as u32);
        t.local().remove(lo, hi);
    }

    /// Inflation by the owner of a fast-lock (run `lo..hi` on `t`'s stack): a fresh monitor
    /// owned by `t` with the run's count, or the anonymous one a contender installed.
    fn inflate_owned<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &MarkWord,
        cause: InflationCause,
    ) -> Result<&'r FatMonitor, MonitorError> {
        let ls = t.local();
        let (lo, hi) = ls.run(addr(h)).expect("caller holds a run");
        loop {
            let w = h.0.load(Ordering::Acquire);
            if w & LOCK_BITS == MONITOR {
                // A contender's anonymous monitor: it stays installed while we own `h`.
                let Some(idx) = Self::locate(rt, &h.0, w) else {
                    Self::check_foreign(rt, h)?;
                    continue;
                };
                let m = rt.monitors().checked(idx)?;
                Self::claim(t, m, lo, hi);
                return Ok(m);
            }
            if w & LOCK_BITS != FAST_LOCKED {
                // Not locked at all, so nobody holds `h` and our run is stale: a guard was
                // forgotten and the object at this address replaced (safe Rust can). Drop the
                // run and say so, rather than take the new object.
                ls.remove(lo, hi);
                return Err(MonitorError::IllegalMonitorState);
            }
            let idx = rt.monitors().allocate()?;
            rt.monitors().bind(idx, addr(h));
            let m = rt.monitors().get(idx);
            m.enter_inflated_for(t.core().raw_id(), (hi - lo) as u32)?;
            if Self::install(rt, &h.0, w, idx) {
                ls.remove(lo, hi);
                rt.stats().inflated(cause);
                return Ok(m);
            }
            // The host changed its bits, or a contender inflated first (or, `TABLE`, another
            // runtime holds the address): look again.
            m.abandon_fresh();
            rt.monitors().free(idx);
            Self::check_foreign(rt, h)?;
        }
    }

    /// A contender inflates the fast-lock `w` with an anonymous owner. `false` if the header
    /// changed first or the table is full (then the caller spins on the header instead).
    fn inflate_contended(rt: &Runtime<Self>, h: &MarkWord, w: u64) -> Result<bool, MonitorError> {
        let Ok(idx) = rt.monitors().allocate() else {
            return Ok(false);
        };
        rt.monitors().bind(idx, addr(h));
        let m = rt.monitors().get(idx);
        m.enter_inflated_for(ANONYMOUS_OWNER, 0)?;
        if Self::install(rt, &h.0, w, idx) {
            rt.stats().inflated(InflationCause::Contention);
            return Ok(true);
        }
        m.abandon_fresh();
        rt.monitors().free(idx);
        Self::check_foreign(rt, h).map(|()| false)
    }

    /// A full lock stack meets an unlocked object: lock it straight through a fresh monitor
    /// owned by `t` (the seed's fall-through to inflate-enter). `false` if the header changed.
    #[cold]
    fn inflate_unlocked(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &MarkWord,
        w: u64,
    ) -> Result<bool, MonitorError> {
        let idx = rt.monitors().allocate()?;
        rt.monitors().bind(idx, addr(h));
        let m = rt.monitors().get(idx);
        m.enter_inflated_for(t.core().raw_id(), 1)?;
        if Self::install(rt, &h.0, w, idx) {
            rt.stats().inflated(InflationCause::RecursionOverflow);
            return Ok(true);
        }
        m.abandon_fresh();
        rt.monitors().free(idx);
        Self::check_foreign(rt, h).map(|()| false)
    }

    #[cold]
    fn enter_slow(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &MarkWord,
        block: bool,
    ) -> Result<bool, MonitorError> {
        let ls = t.local();
        let a = addr(h);
        let mut spins = 0u32;
        loop {
            let w = h.0.load(Ordering::Acquire);
            match w & LOCK_BITS {
                FAST_LOCKED => {
                    if let Some((_, hi)) = ls.run(a) {
                        let top = ls.top();
                        if R && hi == top && top < LOCK_STACK_CAPACITY {
                            ls.push(top, a);
                            return Ok(true);
                        }
                        // Recursion that the stack cannot hold as an adjacent run (or, in the
                        // seed's variant, any recursion).
                        Self::inflate_owned(rt, t, h, InflationCause::RecursionOverflow)?
                            .enter(t.core_arc())?;
                        return Ok(true);
                    }
                    if !block {
                        return Ok(false);
                    }
                    // No lock stack of ours holds `h` (another runtime's fast-lock, or ours
                    // between its CAS and its push): wait, never inflate for a stranger, and
                    // yield at once — the scan is no cheap spin, and the owner we wait for
                    // (whose push is a few instructions away) may need our core. With no
                    // other fast-locking runtime alive the owner is ours: no scan.
                    if !Self::only_runtime() && Self::scan_owner(rt, h).is_none() {
                        yield_now();
                    } else if !Self::inflate_contended(rt, h, w)? {
                        spins += 1;
                        if spins > 16 {
                            yield_now();
                        }
                    }
                }
                MONITOR => {
                    if let Some((lo, hi)) = ls.run(a) {
                        // A contender inflated our fast-lock: the anonymous owner is us.
                        let Some(idx) = Self::locate(rt, &h.0, w) else {
                            Self::check_foreign(rt, h)?;
                            continue;
                        };
                        let m = rt.monitors().checked(idx)?;
                        debug_assert!(m.is_anonymous());
                        Self::claim(t, m, lo, hi);
                    }
                    match deflate::enter_monitor(rt, t, &h.0, w, block)? {
                        Via::Entered => return Ok(true),
                        Via::Busy => return Ok(false),
                        Via::Retry => Self::check_foreign(rt, h)?,
                    }
                }
                FAST_UNLOCKED => {
                    // Unlocked (the fast path found the stack full or lost a race).
                    let top = ls.top();
                    if top == LOCK_STACK_CAPACITY {
                        if Self::inflate_unlocked(rt, t, h, w)? {
                            return Ok(true);
                        }
                        continue;
                    }
                    if h.0
                        .compare_exchange(w, w ^ 1, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                    {
                        ls.push(top, a);
                        return Ok(true);
                    }
                }
                // Stored `11` is never written: not a header of this protocol (uninitialised
                // memory). An error, not a guess.
                _ => return Err(MonitorError::IllegalMonitorState),
            }
        }
    }

    /// Removes `t`'s last entry of `h` (at `i`) and releases the lock.
    #[cold]
    fn release_last(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &MarkWord,
        i: usize,
    ) -> Result<(), MonitorError> {
        t.local().remove(i, i + 1);
        Self::finish_release(rt, t, h)
    }

    #[cold]
    fn exit_slow(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &MarkWord,
    ) -> Result<(), MonitorError> {
        let ls = t.local();
        if let Some((lo, hi)) = ls.run(addr(h)) {
            if hi - lo >= 2 {
                ls.remove(hi - 1, hi);
                return Ok(());
            }
            return Self::release_last(rt, t, h, lo);
        }
        loop {
            let w = h.0.load(Ordering::Acquire);
            if w & LOCK_BITS != MONITOR {
                return Err(MonitorError::IllegalMonitorState);
            }
            if let Some((m, idx)) = Self::owned_cached(rt, t, h) {
                return deflate::exit_owned(rt, t, &h.0, m, idx);
            }
            match deflate::owned_monitor(rt, t, &h.0, w) {
                Ok(Some((m, idx))) => return deflate::exit_owned(rt, t, &h.0, m, idx),
                Ok(None) => return Err(MonitorError::IllegalMonitorState),
                Err(()) => Self::check_foreign(rt, h)?,
            }
        }
    }

    /// `TABLE`, the contended exit: the monitor of `h` (just read in the monitor state with
    /// an acquiring load) from this thread's cache, if `t` owns it; `None` sends the caller
    /// to [`deflate::owned_monitor`]. One cached look-up where `owned_monitor` makes two
    /// (its `locate`, then `names` after the owner check): 420 → 353 instructions per
    /// inflated lock+unlock on one thread (callgrind; `lightweight` 258).
    ///
    /// Why `names` adds nothing once `t` owns the cached monitor `m`: the cache's answer is
    /// `h`'s entry at a moment during this call (`ObjectMonitorTable::cached`), and `t`'s
    /// ownership cannot change behind its back, so `t` owned `m` then and still does. From
    /// that moment to the end of the call the entry stays `m`: an owned monitor is never
    /// claimed, so no deflation uninstalls it, and no orphan deflation or stale replacement
    /// touches an address whose header is in the monitor state with an entry (`names`
    /// would say the same at any point of the call). `relocate` runs only at a safepoint.
    #[inline]
    fn owned_cached<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &MarkWord,
    ) -> Option<(&'r FatMonitor, MonitorIndex)> {
        if !T {
            return None;
        }
        let idx = rt.state().cached(addr(h))?;
        // Another runtime's index cannot be in this table's cache: pairs are keyed by table.
        let m = rt.monitors().try_get(idx)?;
        m.is_owned_by(t.core()).then_some((m, idx))
    }

    /// The monitor `t` owns for `h` (inflating its fast-lock if needed), for wait / notify.
    fn owned_for_wait<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &MarkWord,
    ) -> Result<(&'r FatMonitor, MonitorIndex), MonitorError> {
        if t.local().run(addr(h)).is_some() {
            Self::inflate_owned(rt, t, h, InflationCause::WaitNotify)?;
        }
        loop {
            let w = h.0.load(Ordering::Acquire);
            if w & LOCK_BITS != MONITOR {
                return Err(MonitorError::IllegalMonitorState);
            }
            match deflate::owned_monitor(rt, t, &h.0, w) {
                Ok(Some(mi)) => return Ok(mi),
                Ok(None) => return Err(MonitorError::IllegalMonitorState),
                Err(()) => Self::check_foreign(rt, h)?,
            }
        }
    }

    /// Whether this runtime is the only fast-locking runtime alive, asked by a contender
    /// after it read a fast-locked word `w`: then `w`'s owner is a thread of this runtime
    /// (our lock stack, or about to push), and a contender may inflate `w` for it without
    /// scanning the lock stacks (registry mutex, snapshot, every stack) as it must when a
    /// second runtime could have made `w` (docs/soundness.md §7).
    ///
    /// Why a count of 1 is enough: a thread that made `w` locked after its runtime's
    /// [`LiveRuntime::new`] (increment, then SeqCst fence `X`); our read of `w` (or of a later
    /// value of the word) is followed by the SeqCst fence `Y` here. `X` happens before the
    /// locking CAS, which is coherence-ordered before our read, which is sequenced before
    /// `Y`: so `X` precedes `Y` in the single total order, and the count load after `Y`
    /// sees the increment. A count of 1 is then our own runtime.
    #[inline]
    fn only_runtime() -> bool {
        fence(Ordering::SeqCst);
        LIVE_RUNTIMES.load(Ordering::Relaxed) == 1
    }

    /// The attached thread with `a` on its lock stack, if any (a scan of every lock stack).
    fn scan_owner(rt: &Runtime<Self>, a: *const MarkWord) -> Option<ThreadId> {
        rt.threads()
            .snapshot()
            .iter()
            .find(|cx| cx.local().contains(a))
            .map(|cx| cx.id())
    }
}

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
    unsafe fn enter(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
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
    unsafe fn exit(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
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
    /// is reported as `None` after a bounded number of rescans.
    ///
    /// Why: an entry of `h` on a lock stack implies ownership (pushed after the locking CAS,
    /// cleared before the unlocking one); an owner that is between its CAS and its push (or
    /// its claim of an anonymous monitor) is not seen, so a fast-locked header with no entry
    /// found is re-read and rescanned instead of answered.
    fn owner_of(rt: &Runtime<Self>, h: &MarkWord) -> Option<ThreadId> {
        for _ in 0..OWNER_QUERY_ROUNDS {
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

impl<const R: bool, const T: bool> FastLocking<R, T> {
    /// After the fast exit popped `t`'s last entry but its unlocking CAS failed.
    #[cold]
    fn finish_release(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &MarkWord,
    ) -> Result<(), MonitorError> {
        let mut w = h.0.load(Ordering::Acquire);
        loop {
            if w & LOCK_BITS == MONITOR {
                // Anonymous (a contender's): installed for as long as we own `h`.
                let Some(idx) = Self::locate(rt, &h.0, w) else {
                    Self::check_foreign(rt, h)?;
                    w = h.0.load(Ordering::Acquire);
                    continue;
                };
                let m = rt.monitors().checked(idx)?;
                m.claim_anonymous(t.core(), 1);
                return deflate::exit_owned(rt, t, &h.0, m, idx);
            }
            // Fast-locked (ours) to unlocked; an unlocked word stays as it is.
            match h.0.compare_exchange(
                w,
                (w & !LOCK_BITS) | FAST_UNLOCKED,
                Ordering::Release,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(()),
                Err(now) => w = now,
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {

    /// A runtime of `P` by `Runtime::new_unchecked` (the lightweight protocols ask the host
    /// never to move or free a header held through a leaked guard).
    fn hosted<P: Protocol>(config: Config) -> std::sync::Arc<Runtime<P>> {
        // SAFETY: `new_unchecked`'s contract: the tests here that leak a guard and then move
        // or free its header do so on purpose, to check that the protocol stays memory-safe;
        // no data is guarded by these headers.
        unsafe { Runtime::new_unchecked(config) }
    }
    use super::*;
    use crate::vm::{DeflationPolicy, Runtime};
    use std::time::Duration;

    const HOST: u64 = 0x8000_0000_0000_00a4;

    fn rt_with(deflation: DeflationPolicy) -> std::sync::Arc<Runtime<Lightweight>> {
        hosted(Config {
            deflation,
            ..Config::default()
        })
    }

    /// Seed 001: "It still CASes the lowest two header bits to 00 … but does *not* overload
    /// the upper bits", "pushes the object-reference to a thread-local lock-stack".
    #[test]
    fn fast_lock_flips_low_bits_and_pushes() {
        let rt = hosted::<Lightweight>(Config::default());
        let me = rt.attach().unwrap();
        let h = MarkWord::new(HOST);
        assert_eq!(h.raw(), HOST | FAST_UNLOCKED);
        let g = me.enter(&h).unwrap();
        assert_eq!(
            h.raw(),
            HOST | FAST_LOCKED,
            "lock bits flipped, host bits in place"
        );
        assert_eq!(
            Lightweight::locked_objects(me.context()),
            vec![&h as *const _]
        );
        drop(g);
        assert_eq!(h.raw(), HOST | FAST_UNLOCKED);
        assert!(Lightweight::locked_objects(me.context()).is_empty());
        assert_eq!(rt.stats_snapshot().inflations(), 0);
    }

    /// Recursion as adjacent duplicate entries (HotSpot JDK-8319796), no inflation.
    #[test]
    fn recursion_is_adjacent_entries() {
        let rt = hosted::<Lightweight>(Config::default());
        let me = rt.attach().unwrap();
        let h = MarkWord::new(HOST);
        let gs: Vec<_> = (0..3).map(|_| me.enter(&h).unwrap()).collect();
        assert_eq!(Lightweight::locked_objects(me.context()).len(), 3);
        assert_eq!(me.lock_count(&h), 3);
        assert_eq!(h.raw() & LOCK_BITS, FAST_LOCKED);
        drop(gs);
        assert_eq!(h.raw(), HOST | FAST_UNLOCKED);
        assert_eq!(rt.stats_snapshot().inflations(), 0);
    }

    /// The seed's variant: "fast-locking does *not* support recursive locking (yet). When that
    /// happens, the fast-lock gets inflated to a full monitor."
    #[test]
    fn seed_variant_inflates_on_recursion() {
        let rt = hosted::<LightweightSeed>(Config {
            deflation: DeflationPolicy::Never,
            ..Config::default()
        });
        let me = rt.attach().unwrap();
        let h = MarkWord::new(HOST);
        let g1 = me.enter(&h).unwrap();
        assert_eq!(h.raw(), HOST | FAST_LOCKED);
        let g2 = me.enter(&h).unwrap();
        assert_eq!(h.raw() & LOCK_BITS, MONITOR);
        assert_eq!(me.lock_count(&h), 2);
        assert!(LightweightSeed::locked_objects(me.context()).is_empty());
        drop((g2, g1));
        assert_eq!(rt.owner_of(&h), None);
        assert_eq!(rt.stats_snapshot().inflations_recursion, 1);
    }

    /// `lightweight-table`: inflation changes only the lock bits (the monitor is in the side
    /// table), and deflation empties the table again.
    #[test]
    fn table_variant_keeps_header_bits() {
        let rt = hosted::<LightweightTable>(Config::default());
        let me = rt.attach().unwrap();
        let h = MarkWord::new(HOST);
        let g = me.enter(&h).unwrap();
        g.wait(Some(Duration::ZERO)).unwrap();
        assert_eq!(
            h.raw(),
            (HOST & MARK_HOST_BITS) | MONITOR,
            "only the lock bits changed"
        );
        assert_eq!(rt.state().len(), 1);
        assert_eq!(rt.owner_of(&h), Some(me.id()));
        drop(g);
        assert_eq!(h.raw(), HOST | FAST_UNLOCKED);
        assert!(rt.state().is_empty());
        assert_eq!(rt.stats_snapshot().live_monitors, 0);
    }

    /// `lightweight-table`, issue 11 finding 5: a header moved away from its installed idle
    /// monitor is an orphan (monitor state, no entry at its new address). The first look-up
    /// deflates it in place, hash and host bits kept; the old address keeps the stale entry.
    #[test]
    fn table_orphan_is_deflated_in_place() {
        let rt = hosted::<LightweightTable>(Config {
            deflation: DeflationPolicy::Never,
            ..Config::default()
        });
        let mut h = MarkWord::new(HOST);
        let me = rt.attach().unwrap();
        let v = me.identity_hash(&h).unwrap();
        me.enter(&h).unwrap().wait(Some(Duration::ZERO)).unwrap();
        let moved = std::mem::take(&mut h);
        let kept = HOST | u64::from(v) << 32;
        assert_eq!(moved.raw(), kept | MONITOR);
        assert_eq!(rt.owner_of(&moved), None);
        assert_eq!(moved.raw(), kept | FAST_UNLOCKED, "deflated in place");
        assert_eq!(rt.state().len(), 1, "the entry stays at the old address");
        assert_eq!(
            rt.stats_snapshot().deflations,
            0,
            "no monitor was given back"
        );
    }

    /// `lightweight-table`, issue 11 item 13: a header that runtime A inflated (its entry,
    /// hence its claim) is not an orphan to runtime B: B's operations fail with
    /// `ForeignHeader` or answer "not owned", never deflate it, and leave B nothing. Once A
    /// deflates it, it is anyone's; `relocate` moves A's claim with the entry.
    #[test]
    fn table_entry_of_another_runtime_is_foreign() {
        let config = || Config {
            deflation: DeflationPolicy::Never,
            ..Config::default()
        };
        let ra = hosted::<LightweightTable>(config());
        let rb = hosted::<LightweightTable>(config());
        let (a, b) = (ra.attach().unwrap(), rb.attach().unwrap());
        let h = MarkWord::new(HOST);
        a.enter(&h).unwrap().wait(Some(Duration::ZERO)).unwrap();
        assert_eq!(h.raw() & LOCK_BITS, MONITOR);
        assert_eq!(b.try_enter(&h).err(), Some(MonitorError::ForeignHeader));
        assert_eq!(b.enter(&h).err(), Some(MonitorError::ForeignHeader));
        assert_eq!(b.notify(&h).err(), Some(MonitorError::ForeignHeader));
        assert_eq!(b.lock_count(&h), 0);
        assert_eq!(rb.owner_of(&h), None);
        assert!(!LightweightTable::deflate_idle(&rb, &h));
        assert_eq!(h.raw() & LOCK_BITS, MONITOR, "not deflated as an orphan");
        assert!(rb.state().is_empty() && rb.monitors().claimed() == 0);
        assert_eq!(rb.stats_snapshot().live_monitors, 0);
        // A moves the object: the claim goes with the entry.
        let to = MarkWord::new(HOST);
        to.0.store(h.raw(), Ordering::Relaxed); // the GC copies the word verbatim
                                                // SAFETY: no thread of `ra` is inside a call; `to` is a verbatim copy of `h`, which
                                                // is not used with `ra` again.
        unsafe { ra.relocate(&h, &to) };
        assert_eq!(ra.monitors().claimed(), 1);
        assert_eq!(b.enter(&to).err(), Some(MonitorError::ForeignHeader));
        assert!(LightweightTable::deflate_idle(&ra, &to));
        assert_eq!(ra.monitors().claimed(), 0);
        b.enter(&to).unwrap().wait(Some(Duration::ZERO)).unwrap();
        assert_eq!(a.try_enter(&to).err(), Some(MonitorError::ForeignHeader));
    }

    /// `lightweight-table`, issue 11 finding 15: `reclaim` of the object now at an address also
    /// removes a stale entry that an object dropped there without `reclaim` left, and frees its
    /// idle monitor.
    #[test]
    fn table_reclaim_clears_a_stale_entry() {
        let rt = hosted::<LightweightTable>(Config {
            deflation: DeflationPolicy::Never,
            ..Config::default()
        });
        let mut h = Box::new(MarkWord::default());
        let me = rt.attach().unwrap();
        me.enter(&h).unwrap().wait(Some(Duration::ZERO)).unwrap();
        *h = MarkWord::new(HOST); // dropped without `reclaim`
        assert_eq!(rt.state().len(), 1);
        rt.reclaim(&mut h);
        assert!(rt.state().is_empty());
        assert_eq!(rt.stats_snapshot().live_monitors, 0);
        assert_eq!(h.raw(), HOST | FAST_UNLOCKED);
    }

    /// `lightweight-table`, the per-thread cache (issue 13 item 4): this thread caches `a`'s
    /// monitor; another thread deflates `a`, inflates `b` (which gets `a`'s old monitor: the
    /// free list is last in, first out) and inflates `a` again with a new one. This thread's
    /// next enter of `a` must refuse its cached pair (the shard's version moved) and take
    /// `a`'s new monitor, never `b`'s.
    #[test]
    fn table_cache_refuses_a_reused_monitor() {
        let rt = hosted::<LightweightTable>(Config {
            deflation: DeflationPolicy::OnRequest,
            ..Config::default()
        });
        let (a, b) = (
            std::sync::Arc::new(MarkWord::new(HOST)),
            std::sync::Arc::new(MarkWord::default()),
        );
        let me = rt.attach().unwrap();
        me.enter(&*a).unwrap().wait(Some(Duration::ZERO)).unwrap();
        drop(me.enter(&*a).unwrap()); // through the monitor: the pair is cached
        let cached = rt.state().cached(addr(&a)).expect("cached");
        let (rt2, a2, b2) = (rt.clone(), a.clone(), b.clone());
        std::thread::spawn(move || {
            assert!(LightweightTable::deflate_idle(&rt2, &a2));
            let other = rt2.attach().unwrap();
            other
                .enter(&*b2)
                .unwrap()
                .wait(Some(Duration::ZERO))
                .unwrap();
            other
                .enter(&*a2)
                .unwrap()
                .wait(Some(Duration::ZERO))
                .unwrap();
        })
        .join()
        .unwrap();
        assert_eq!(
            rt.state().slot(addr(&b)).get(),
            Some(cached),
            "reused for b"
        );
        assert_eq!(rt.state().cached(addr(&a)), None, "the shard changed");
        let g = me.enter(&*a).unwrap();
        assert_eq!(me.lock_count(&*a), 1);
        assert_eq!(rt.owner_of(&*a), Some(me.id()));
        assert_eq!(rt.owner_of(&*b), None, "b's monitor is not ours");
        drop(g);
        assert_ne!(rt.state().cached(addr(&a)), Some(cached));
        assert_eq!(rt.state().len(), 2);
        assert_eq!(rt.stats_snapshot().live_monitors, 2);
    }

    /// `lightweight-table`, the contended exit's one cached look-up (`owned_cached`): a
    /// thread whose cache holds `h`'s monitor while another thread owns it is refused
    /// (`IllegalMonitorState`), and the owner's exit through its own cached pair releases
    /// it; the monitor stays installed (`OnRequest`) and the next owner's exit works too.
    #[test]
    fn table_cached_exit_only_for_the_owner() {
        let rt = hosted::<LightweightTable>(Config {
            deflation: DeflationPolicy::OnRequest,
            ..Config::default()
        });
        let h = MarkWord::new(HOST);
        let me = rt.attach().unwrap();
        me.enter(&h).unwrap().wait(Some(Duration::ZERO)).unwrap();
        drop(me.enter(&h).unwrap()); // through the monitor: the pair is cached
        let idx = rt.state().cached(addr(&h)).expect("cached");
        let held = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            s.spawn(|| {
                let other = rt.attach().unwrap();
                other.monitor_enter(&h).unwrap();
                assert!(rt.state().cached(addr(&h)).is_some(), "its own pair");
                held.wait();
                held.wait();
                other.monitor_exit(&h).unwrap();
                assert_eq!(other.lock_count(&h), 0);
            });
            held.wait();
            assert_eq!(rt.state().cached(addr(&h)), Some(idx), "still installed");
            assert_eq!(me.monitor_exit(&h), Err(MonitorError::IllegalMonitorState));
            assert_ne!(rt.owner_of(&h), Some(me.id()));
            held.wait();
        });
        assert_eq!(rt.owner_of(&h), None);
        let g = me.enter(&h).unwrap();
        assert_eq!(rt.owner_of(&h), Some(me.id()));
        drop(g);
        assert_eq!(rt.owner_of(&h), None);
        assert_eq!(h.raw() & LOCK_BITS, MONITOR);
    }

    /// `lightweight-table`, the per-thread cache against a stale entry (issue 11 finding 15):
    /// this thread caches the monitor of the object at an address; the object is dropped
    /// without `reclaim` (its entry stays, stale, and no shard change tells the cache), a new
    /// object lives there and another thread inflates it, replacing the stale entry. This
    /// thread's next enter must take the new monitor, not its cached pair.
    #[test]
    fn table_cache_refuses_a_replaced_stale_entry() {
        let rt = hosted::<LightweightTable>(Config {
            deflation: DeflationPolicy::OnRequest,
            ..Config::default()
        });
        let mut h = Box::new(MarkWord::default());
        let me = rt.attach().unwrap();
        me.enter(&*h).unwrap().wait(Some(Duration::ZERO)).unwrap();
        drop(me.enter(&*h).unwrap()); // through the monitor: the pair is cached
        let old = rt.state().cached(addr(&h)).expect("cached");
        *h = MarkWord::default(); // dropped without `reclaim`
        assert_eq!(
            rt.state().cached(addr(&h)),
            Some(old),
            "nothing changed in the table"
        );
        let hr: &MarkWord = &h;
        std::thread::scope(|s| {
            s.spawn(|| {
                let other = rt.attach().unwrap();
                other.enter(hr).unwrap().wait(Some(Duration::ZERO)).unwrap();
            });
        });
        assert_ne!(
            rt.state().slot(addr(&h)).get(),
            Some(old),
            "the entry replaced"
        );
        assert_eq!(rt.state().cached(addr(&h)), None, "the shard changed");
        let g = me.enter(&*h).unwrap();
        assert_eq!(me.lock_count(&*h), 1);
        assert_eq!(rt.owner_of(&*h), Some(me.id()));
        drop(g);
        assert_eq!(rt.state().len(), 1);
        assert_eq!(
            rt.stats_snapshot().live_monitors,
            1,
            "the stale monitor given back"
        );
    }

    /// A, B, A: the second A is not adjacent to the first, so the owner inflates A.
    #[test]
    fn non_adjacent_recursion_inflates() {
        let rt = rt_with(DeflationPolicy::Never);
        let me = rt.attach().unwrap();
        let (a, b) = (MarkWord::new(HOST), MarkWord::default());
        let ga = me.enter(&a).unwrap();
        let gb = me.enter(&b).unwrap();
        let ga2 = me.enter(&a).unwrap();
        assert_eq!(a.raw() & LOCK_BITS, MONITOR);
        assert_eq!(a.raw() & MARK_HOST_BITS, HOST & MARK_HOST_BITS);
        assert_eq!(me.lock_count(&a), 2);
        assert_eq!(
            Lightweight::locked_objects(me.context()),
            vec![&b as *const _]
        );
        assert_eq!(rt.stats_snapshot().inflations_recursion, 1);
        drop((ga2, gb, ga));
        assert_eq!(rt.owner_of(&a), None);
    }

    /// Unstructured exit: A, B, exit A, exit B; B's entry slides down.
    #[test]
    fn out_of_order_exit_keeps_fast_locks() {
        let rt = hosted::<Lightweight>(Config::default());
        let (a, b) = (MarkWord::default(), MarkWord::default());
        let me = rt.attach().unwrap();
        me.monitor_enter(&a).unwrap();
        me.monitor_enter(&b).unwrap();
        me.monitor_exit(&a).unwrap();
        assert_eq!(a.raw(), FAST_UNLOCKED);
        assert_eq!(b.raw(), FAST_LOCKED);
        assert_eq!(
            Lightweight::locked_objects(me.context()),
            vec![&b as *const _]
        );
        me.monitor_exit(&b).unwrap();
        assert_eq!(b.raw(), FAST_UNLOCKED);
        assert_eq!(rt.stats_snapshot().inflations(), 0);
    }

    /// Capacity 8, as HotSpot's `LockStack`; the 9th distinct object goes through a monitor.
    #[test]
    fn ninth_object_is_inflated() {
        let rt = rt_with(DeflationPolicy::Never);
        let me = rt.attach().unwrap();
        let hs: Vec<MarkWord> = (0..9).map(|_| MarkWord::default()).collect();
        let gs: Vec<_> = hs.iter().map(|h| me.enter(h).unwrap()).collect();
        assert!(hs[..8].iter().all(|h| h.raw() == FAST_LOCKED));
        assert_eq!(hs[8].raw() & LOCK_BITS, MONITOR);
        assert_eq!(Lightweight::locked_objects(me.context()).len(), 8);
        assert!(hs.iter().all(|h| rt.owner_of(h) == Some(me.id())));
        drop(gs);
        assert!(hs[..8].iter().all(|h| h.raw() == FAST_UNLOCKED));
    }

    /// Seed 001's anonymous owner: the contender inflates a fast-locked object and records
    /// ANONYMOUS_OWNER; the owner query still finds the real owner (by its lock stack); the
    /// owner fixes the monitor at exit and hands over. Eager deflation then gives it back.
    #[test]
    fn contender_inflates_with_anonymous_owner() {
        let rt = hosted::<Lightweight>(Config::default());
        let h = MarkWord::new(HOST);
        let me = rt.attach().unwrap();
        let g1 = me.enter(&h).unwrap();
        let g2 = me.enter(&h).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                let other = rt.attach().unwrap();
                let g = other.enter(&h).unwrap();
                assert_eq!(other.lock_count(&h), 1);
                drop(g);
            });
            while h.raw() & LOCK_BITS != MONITOR {
                std::thread::yield_now();
            }
            let m = rt.monitors().get(mark::index_of(h.raw()));
            assert!(m.is_anonymous());
            assert_eq!(rt.owner_of(&h), Some(me.id()), "found on the lock stack");
            assert_eq!(me.lock_count(&h), 2, "the run is the count");
            drop(g2);
            assert!(m.is_anonymous(), "a recursive exit only pops");
            drop(g1);
        });
        let s = rt.stats_snapshot();
        assert_eq!(
            (s.inflations_contention, s.deflations, s.live_monitors),
            (1, 1, 0)
        );
        assert_eq!(h.raw(), HOST | FAST_UNLOCKED);
    }

    /// HotSpot's quick_notify: notify on a fast-locked object does not inflate; wait does.
    #[test]
    fn notify_on_fast_lock_is_free_wait_inflates() {
        let rt = hosted::<Lightweight>(Config::default());
        let me = rt.attach().unwrap();
        let h = MarkWord::default();
        let g = me.enter(&h).unwrap();
        g.notify().unwrap();
        g.notify_all().unwrap();
        assert_eq!(h.raw(), FAST_LOCKED);
        assert_eq!(g.wait(Some(Duration::ZERO)).unwrap(), WaitOutcome::TimedOut);
        assert_eq!(h.raw() & LOCK_BITS, MONITOR);
        assert_eq!(rt.stats_snapshot().inflations_wait_notify, 1);
        drop(g);
        assert_eq!(h.raw(), FAST_UNLOCKED, "deflated at exit");
    }

    /// The policies: Never keeps the monitor; AtExit{keep} keeps up to `keep`; OnRequest
    /// deflates only through `deflate_idle`.
    #[test]
    fn deflation_policies() {
        let inflate = |rt: &std::sync::Arc<Runtime<Lightweight>>, h: &MarkWord| {
            let me = rt.attach().unwrap();
            me.enter(h).unwrap().wait(Some(Duration::ZERO)).unwrap();
        };
        let rt = rt_with(DeflationPolicy::Never);
        let h = MarkWord::default();
        inflate(&rt, &h);
        assert_eq!(rt.stats_snapshot().live_monitors, 1);
        assert!(
            Lightweight::deflate_idle(&rt, &h),
            "on request, whatever the policy"
        );
        assert_eq!(rt.stats_snapshot().live_monitors, 0);

        let rt = rt_with(DeflationPolicy::AtExit { keep: 1 });
        let hs = [MarkWord::default(), MarkWord::default()];
        let me = rt.attach().unwrap();
        let g0 = me.enter(&hs[0]).unwrap();
        g0.wait(Some(Duration::ZERO)).unwrap();
        let g1 = me.enter(&hs[1]).unwrap();
        g1.wait(Some(Duration::ZERO)).unwrap();
        drop(g1); // 2 live > keep 1: deflated
        drop(g0); // 1 live, not above keep: stays
        let s = rt.stats_snapshot();
        assert_eq!((s.live_monitors, s.deflations), (1, 1));
        assert_eq!(hs[0].raw() & LOCK_BITS, MONITOR);

        let rt = rt_with(DeflationPolicy::OnRequest);
        let h = MarkWord::default();
        inflate(&rt, &h);
        assert_eq!(rt.stats_snapshot().live_monitors, 1);
        let me = rt.attach().unwrap();
        let g = me.enter(&h).unwrap();
        assert!(!Lightweight::deflate_idle(&rt, &h), "owned: not idle");
        drop(g);
        assert!(Lightweight::deflate_idle(&rt, &h));
        assert_eq!(h.raw(), FAST_UNLOCKED);
    }

    /// GC hook: after the host moved an object (here: a second header holding the same word,
    /// stood in while the thread is stopped between calls), `relocate` lets the owner exit it.
    #[test]
    fn relocate_rewrites_lock_stacks() {
        let rt = hosted::<Lightweight>(Config::default());
        let old = MarkWord::new(HOST);
        let new = MarkWord::new(HOST);
        let me = rt.attach().unwrap();
        me.monitor_enter(&old).unwrap();
        new.0.store(old.raw(), Ordering::Relaxed); // the GC copies the word verbatim
                                                   // SAFETY: a test's safepoint: no other thread is inside objmon, and the word was
                                                   // copied verbatim.
        unsafe { rt.relocate(&old, &new) };
        assert_eq!(
            Lightweight::locked_objects(me.context()),
            vec![&new as *const _]
        );
        assert_eq!(rt.owner_of(&new), Some(me.id()));
        // SAFETY: `me` is this thread's handle; the move was reported with `relocate`.
        assert_eq!(unsafe { P::exit(&rt, me.context(), &new) }, Ok(()));
        assert_eq!(new.raw(), HOST | FAST_UNLOCKED);
        type P = Lightweight;
    }

    /// The hash goes into bits 62..32 in every state and stays there through fast-locking,
    /// inflation, deflation on request and relocation; host bits never change.
    #[test]
    fn hash_in_mark_word_survives_everything() {
        for policy in [DeflationPolicy::OnRequest, DeflationPolicy::default()] {
            let rt = rt_with(policy);
            let h = MarkWord::new(HOST);
            let me = rt.attach().unwrap();
            let g = me.enter(&h).unwrap();
            let v = me.identity_hash(&h).unwrap();
            assert_eq!(
                h.raw(),
                HOST | u64::from(v) << 32 | FAST_LOCKED,
                "fast-locked, hash in place"
            );
            g.wait(Some(Duration::ZERO)).unwrap();
            assert_eq!(h.raw() & LOCK_BITS, MONITOR);
            assert_eq!(mark::hash_of(h.raw()), v);
            drop(g);
            if policy == DeflationPolicy::OnRequest {
                assert!(Lightweight::deflate_idle(&rt, &h));
            }
            assert_eq!(
                h.raw(),
                HOST | u64::from(v) << 32 | FAST_UNLOCKED,
                "deflated, hash kept"
            );
            assert_eq!(h.host_bits(), HOST & MARK_HOST_BITS);
            assert_eq!(rt.stats_snapshot().inflations_identity_hash, 0);
            // The GC moves the (locked) object: the hash moves with the word.
            me.monitor_enter(&h).unwrap();
            let new = MarkWord::default();
            new.0.store(h.raw(), Ordering::Relaxed);
            // SAFETY: a test's safepoint: no other thread is inside objmon, and the word was
            // copied verbatim.
            unsafe { rt.relocate(&h, &new) };
            assert_eq!(me.identity_hash(&new), Ok(v));
            assert_eq!(rt.peek_identity_hash(&new), Some(v));
            // SAFETY: `me` is this thread's handle; the move was reported with `relocate`.
            assert_eq!(
                unsafe { Lightweight::exit(&rt, me.context(), &new) },
                Ok(())
            );
            assert_eq!(rt.peek_identity_hash(&new), Some(v));
        }
    }
}
