//! `stack`: HotSpot's stack-locking (`-XX:LockingMode=1`), the scheme seed 001 replaces: "push
//! a stack-lock onto the stack which consists only of the displaced header, and CAS a pointer
//! to this stack location into the object header (the lowest two header bits being 00
//! indicate 'stack-locked')". This file owns the header, the record type, the constants and
//! the protocol's entry points; `records.rs` a thread's lock records and the GC hooks that
//! read them, `slow.rs` inflation and the slow paths, `tests.rs` the unit tests.
//!
//! Header: [`StackWord`], the layout of [`mark`]:
//!
//! | bits   | unlocked | stack-locked                        | monitor                    | INFLATING |
//! |--------|----------|-------------------------------------|----------------------------|-----------|
//! | 63     | host     | address of the owner's base         | host                       | 0         |
//! | 62..32 | hash     | [`LockRecord`] (8-byte aligned);    | hash                       | 0         |
//! | 31..8  | 0        | host bits and hash are displaced    | monitor index (bit 31 = 0) | 0         |
//! | 7..3   | host     | into it                             | host                       | 0         |
//! | 2      | host     |                                     | host                       | 1         |
//! | 1..0   | `01`     | `00`                                | `10`                       | `00`      |
//!
//! The all-zero word is unlocked too (memory from `calloc` or a GC heap is a valid header).
//! Identity hash: 31 bits, in the word (unlocked, monitor) or in the base record's displaced
//! header; a stack-locked object without one is inflated first.
//!
//! Departures from HotSpot:
//! - INFLATING is `0b100`, not the all-zero word (a zeroed header would read as being
//!   inflated for ever);
//! - records come from a process-wide pool of arrays that are never freed, not from frames;
//!   the owner is the thread whose array holds the address (a range check);
//! - no free record for a new object: it is locked straight through a fresh monitor;
//! - a base record whose header moved away under a forgotten guard is orphaned for good;
//! - contention and deflation take `lightweight`'s fat path (`crate::deflate`).
//!
//! Invariants:
//! - a header that names a record names a valid [`LockRecord`] for as long as it lives
//!   (type-stable pool); `inflate_contended` checks that a word is
//!   a pool record's address before it reads the record;
//! - a base record is freed only when its header provably left its address: the owner's
//!   unlocking CAS from it succeeded, or its `inflated` flag is set (before the monitor word
//!   is published); a recursive record (displaced header 0) at any time;
//! - a word at INFLATING is written next only by its inflater; everybody else waits;
//! - record addresses are compared for identity only; records never move;
//! - a recursive record counts only while its base record is current (the header names it, or
//!   it was inflated): a forgotten hold's records, left at an address a swap has since filled,
//!   are orphaned, not taken for the new header's.
//!
//! The argument: docs/soundness.md, "`stack`: records, INFLATING and freeing".
//!
//! | fast path                         | atomic operations                                      | instructions |
//! |-----------------------------------|--------------------------------------------------------|--------------|
//! | lock, unlocked                    | load, two stores (record), CAS of the record address, store (top) | 73 with unlock |
//! | unlock                            | CAS of the displaced header back, two or three stores  | ″            |
//! | recursive lock / unlock           | load, three stores / load of the header, range check, stores | 85 with lock |
//!
//! (Callgrind through the guard API; docs/benchmarks.md, "Protocol notes moved out of the code".)
//! GC: see [`Stack::locked_objects`], [`Runtime::relocate`].

use super::mark::{self, index_of, monitor_word, LOCKED, LOCK_BITS, MARK_HOST_BITS, MONITOR};
use super::stack_records::{self, RecordArray};
use super::Protocol;
use crate::deflate::{self, Locate, Via};
use crate::monitor::{FatMonitor, WaitOutcome, ANONYMOUS_OWNER};
use crate::protocol::ThreadContext;
use crate::runtime::{Config, InflationCause, Runtime};
use crate::sync::{yield_now, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use crate::thread::ThreadId;
use crate::MonitorError;
use std::time::Instant;

/// Lock records per thread.
#[cfg(not(loom))]
pub const LOCK_RECORDS: usize = 64;
/// Lock records per thread (small under loom, to keep the models small).
#[cfg(loom)]
pub const LOCK_RECORDS: usize = 3;

/// The INFLATING marker: a contender is installing a monitor; everybody else waits for the
/// word. HotSpot's marker is the all-zero word ([`mark::INFLATING`]); here the all-zero word is
/// an unlocked header (see the module documentation), and INFLATING is `0b100`: lock bits `00`
/// like a record address, which it never is (records are 8-byte aligned and far above 4).
const INFLATING: u64 = 0b100;
const _: () = assert!(mark::INFLATING == 0 && INFLATING & LOCK_BITS == LOCKED);

/// The canonical unlocked word with no host bits and no hash, which the all-zero word stands for.
const UNLOCKED_ZERO: u64 = 0b01;

/// `obj` of an orphaned record: a base record whose header moved away while locked (a guard
/// passed to `mem::forget`, then `mem::replace` of the header), with its recursive records.
/// The moved header may still name it, so it stays in use for good (never freed, its array
/// never reused); no header address is ever 1 (headers are 8-byte aligned), so no lookup by
/// address finds it.
const ORPHAN: usize = 1;

/// How many rounds `try_enter` waits for an INFLATING marker that may be its own lock's
/// before it reports the object busy.
const INFLATING_TRY_ROUNDS: u32 = 1 << 10;

/// How many rounds an owner query retries, at most, before giving up on finding the thread
/// that stack-locked an object (it detached with a forgotten guard); the rounds are bounded
/// in time too (`spin::Rescans`).
const OWNER_QUERY_ROUNDS: u32 = 1 << 14;

/// The header of the `stack` protocol: a 64-bit word in HotSpot's shape (see the module
/// documentation). Its own type, so that no other protocol can write a `00` word into it —
/// which `stack` would take for a record address.
pub struct StackWord(pub(crate) AtomicU64);

impl Default for StackWord {
    /// An unlocked header with all host bits clear.
    fn default() -> Self {
        Self::new(0)
    }
}

impl StackWord {
    crate::sync::const_unless_loom! {
    /// An unlocked header carrying `host_bits`; bits outside [`super::mark::MARK_HOST_BITS`]
    /// are ignored.
    pub fn new(host_bits: u64) -> Self {
        Self(AtomicU64::new((host_bits & MARK_HOST_BITS) | 0b01))
    }
    }

    /// The host bits, or `None` while they are displaced into a lock record (stack-locked or
    /// being inflated).
    pub fn host_bits(&self) -> Option<u64> {
        let w = self.0.load(Ordering::Acquire);
        // The all-zero word is unlocked with no host bits.
        (w & LOCK_BITS != LOCKED || w == 0).then_some(w & MARK_HOST_BITS)
    }

    /// The whole word, for introspection and tests (a racy snapshot).
    #[inline]
    pub fn raw(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for StackWord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StackWord({:#018x})", self.raw())
    }
}

/// A lock record (HotSpot's `BasicObjectLock`): the locked header's address and the displaced
/// header. 8-byte aligned, so its address has `00` low bits. Allocated only by the
/// process-wide record pool (`stack_records.rs`), never freed.
#[repr(align(8))]
pub struct LockRecord {
    /// The header's address; 0 = free record; [`ORPHAN`] = in use for good.
    obj: AtomicUsize,
    /// The displaced header (lock bits `01`, so never 0) of a base record; 0 in a recursive one.
    displaced: AtomicU64,
    /// Raw id of the thread whose array this is; [`ANONYMOUS_OWNER`] once it has detached.
    owner: AtomicU32,
    /// Nonzero once a base record was inflated: the index of the monitor the header it was
    /// locked in went to (from INFLATING, by a contender, or straight, by the owner), so no
    /// header names the record any more. Set before the monitor word is published, cleared by the owner just before
    /// it frees the record. The owner's proof that the header's monitor word came from this
    /// record, and that freeing the record leaves no header naming it.
    inflated: AtomicU32,
}

impl LockRecord {
    /// A free record (the pool's constructor).
    pub(super) fn free_record() -> Self {
        Self {
            obj: AtomicUsize::new(0),
            displaced: AtomicU64::new(0),
            owner: AtomicU32::new(ANONYMOUS_OWNER),
            inflated: AtomicU32::new(0),
        }
    }

    /// Free, and so named by no header.
    pub(super) fn is_free(&self) -> bool {
        self.obj.load(Ordering::Relaxed) == 0 && self.inflated.load(Ordering::Relaxed) == 0
    }
}

/// A thread's lock records (its "stack"): written by the thread; a contender reads one record
/// under the INFLATING marker; owner queries only compare addresses. The array comes from the
/// process-wide pool and goes back to it at detach only if every record is free.
pub struct LockRecords {
    records: &'static RecordArray,
    /// One above the highest record in use.
    top: AtomicUsize,
}

/// The `stack` protocol (see the module documentation).
#[derive(Debug)]
pub enum Stack {}

/// The monitor index is in the header word.
impl Locate for Stack {}

#[inline]
fn addr(h: &StackWord) -> usize {
    h as *const StackWord as usize
}

mod records;
mod slow;

impl Protocol for Stack {
    const NAME: &'static str = "stack";
    const SUMMARY: &'static str =
        "HotSpot stack-locking: displaced header in a lock record, INFLATING marker, deflation";
    const HEADER_LOCK_BITS: u32 = 64;

    type Header = StackWord;
    type State = ();
    type ThreadState = LockRecords;
    type Hint = ();

    fn new_state(_: &Config) {}
    fn new_thread_state(id: ThreadId, _: &Config) -> LockRecords {
        LockRecords::new(id)
    }

    #[inline]
    unsafe fn lock(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        _: u64,
        h: &StackWord,
    ) -> Result<(), MonitorError> {
        let rs = t.local();
        let top = rs.top();
        if top < LOCK_RECORDS {
            let w = h.0.load(Ordering::Relaxed);
            if w & LOCK_BITS == 0b01 {
                rs.fill(top, addr(h), w);
                // Release: a contender that reads our record address under INFLATING sees the
                // record filled.
                if h.0
                    .compare_exchange(w, rs.word_of(top), Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                {
                    return Ok(());
                }
                rs.free(top);
            } else if rs.owns_word(w) {
                rs.fill(top, addr(h), 0);
                return Ok(());
            } else if w & LOCK_BITS == MONITOR && deflate::try_enter_inflated(rt, t, &h.0, w) {
                return Ok(());
            }
        }
        Self::enter_slow(rt, t, h, true).map(|_| ())
    }

    unsafe fn try_enter(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &StackWord,
    ) -> Result<bool, MonitorError> {
        Self::enter_slow(rt, t, h, false)
    }

    #[inline]
    unsafe fn unlock(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        _: u64,
        _: (),
        h: &StackWord,
    ) -> Result<(), MonitorError> {
        let rs = t.local();
        let top = rs.top();
        if top > 0 {
            let r = &rs.records[top - 1];
            if r.obj.load(Ordering::Relaxed) == addr(h) {
                let d = r.displaced.load(Ordering::Relaxed);
                // A recursive record, while the header is stack-locked by us (else the slow
                // path checks that the record's base is still current).
                if d == 0 {
                    if rs.owns_word(h.0.load(Ordering::Relaxed)) {
                        rs.free(top - 1);
                        return Ok(());
                    }
                    return Self::exit_slow(rt, t, h);
                }
                if h.0
                    .compare_exchange(rs.word_of(top - 1), d, Ordering::Release, Ordering::Relaxed)
                    .is_ok()
                {
                    rs.free(top - 1);
                    return Ok(());
                }
            }
        }
        Self::exit_slow(rt, t, h)
    }

    unsafe fn wait(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &StackWord,
        deadline: Option<Instant>,
    ) -> Result<WaitOutcome, MonitorError> {
        let m = Self::owned_for_wait(rt, t, h)?;
        deflate::wait_owned(t, m, deadline)
    }

    unsafe fn notify(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &StackWord,
        all: bool,
    ) -> Result<(), MonitorError> {
        if t.local().owns_word(h.0.load(Ordering::Acquire)) {
            // HotSpot's quick_notify: a stack-locked object has no wait set, hence no waiters.
            return Ok(());
        }
        Self::owned_for_wait(rt, t, h)?.notify(t.core(), all)
    }

    /// Saturates at `u32::MAX`: a monitor's count can reach it on its own, and the recursive
    /// records beside it add theirs.
    fn lock_count(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &StackWord) -> u32 {
        let rs = t.local();
        loop {
            let w = h.0.load(Ordering::Acquire);
            if w == INFLATING {
                // Transient (see `enter_slow`); whose it is shows once the monitor is published.
                yield_now();
                continue;
            }
            let (base, rec) = rs.levels(addr(h), w);
            if w & LOCK_BITS != MONITOR {
                // Stack-locked by us: the records are the count. Unlocked or another's: 0.
                return if rs.owns_word(w) {
                    u32::from(base) + rec
                } else {
                    0
                };
            }
            match deflate::owned_monitor(rt, t, &h.0, w) {
                // With a base record the monitor's count includes it and the recursive records
                // add theirs; without, the monitor's count is all.
                Ok(Some((m, _))) => return m.count_for(t.core()).saturating_add(rec),
                Ok(None) => return 0,
                Err(()) => continue,
            }
        }
    }

    /// A linearizable answer: the returned thread owned `h` at some moment during the call,
    /// and `None` means that at some moment `h` was unlocked — except for an object stack-locked
    /// by a thread that detached with a forgotten guard, reported as `None`.
    ///
    /// Why: the threads are snapshotted (which keeps their record arrays alive) *before* the
    /// header is read, so an address in one of their arrays names that thread's record at the
    /// moment of the read. A record address in no snapshotted array belongs to a thread that
    /// attached later: snapshot again.
    fn owner_of(rt: &Runtime<Self>, h: &StackWord) -> Option<ThreadId> {
        let mut rounds = crate::spin::Rescans::new(OWNER_QUERY_ROUNDS);
        while rounds.next() {
            let threads = rt.threads().snapshot();
            let w = h.0.load(Ordering::SeqCst);
            if w & LOCK_BITS == MONITOR {
                match deflate::monitor_owner(rt, &h.0, w) {
                    None => continue,
                    Some(0) | Some(ANONYMOUS_OWNER) => return None,
                    Some(raw) => return ThreadId::from_raw(raw),
                }
            }
            if w & LOCK_BITS != LOCKED || w == 0 {
                return None;
            }
            if w != INFLATING {
                if let Some(cx) = threads.iter().find(|cx| cx.local().owns_word(w)) {
                    return Some(cx.id());
                }
                if stack_records::is_record(w) {
                    // SAFETY: a record of the pool, never freed (see `inflate_contended`);
                    // atomics only.
                    let r = unsafe { &*(w as usize as *const LockRecord) };
                    if r.owner.load(Ordering::Relaxed) == ANONYMOUS_OWNER {
                        // A detached thread's array, never reused: the lock was held, at the
                        // moment of the read, by a forgotten guard of a detached thread.
                        return None;
                    }
                }
            }
            yield_now();
        }
        None
    }

    fn reclaim(rt: &Runtime<Self>, h: &mut StackWord) {
        let w = h.0.load(Ordering::Relaxed);
        let host = if w & LOCK_BITS == MONITOR {
            let idx = index_of(w);
            if rt
                .monitors()
                .try_get(idx)
                .is_some_and(FatMonitor::is_idle_but_for_a_first_try)
            {
                rt.monitors().free(idx);
            }
            w
        } else if w & LOCK_BITS == LOCKED {
            // Locked by a forgotten guard: the host bits are in a record we must not trust to
            // be read here (it may belong to another runtime's thread); drop them.
            0
        } else {
            w
        };
        // The object is dead: its hash goes with it.
        h.0.store((host & MARK_HOST_BITS) | 0b01, Ordering::Relaxed);
    }

    const HASH_BITS: u32 = mark::HASH_BITS;

    /// See the module documentation: CAS into an unlocked or monitor word; a stack-locked
    /// word is inflated first, unless it is ours and its displaced header has the hash.
    unsafe fn identity_hash(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &StackWord,
    ) -> Result<u32, MonitorError> {
        let rs = t.local();
        let mut v = 0;
        loop {
            let w = h.0.load(Ordering::Acquire);
            if w == INFLATING {
                yield_now();
                continue;
            }
            if w == 0 {
                Self::normalize_zero(h);
                continue;
            }
            if w & LOCK_BITS == LOCKED {
                if rs.owns_word(w) {
                    // Our own record: stable while we hold it.
                    let d = rs.records[rs.index_of_word(w)]
                        .displaced
                        .load(Ordering::Relaxed);
                    if mark::hash_of(d) != 0 {
                        return Ok(mark::hash_of(d));
                    }
                    Self::inflate_owned(rt, t, h, InflationCause::IdentityHash)?;
                } else {
                    Self::inflate_contended(rt, t, h, w, InflationCause::IdentityHash)?;
                }
                continue;
            }
            // Unlocked or monitor: the word holds the hash bits in place.
            if mark::hash_of(w) != 0 {
                return Ok(mark::hash_of(w));
            }
            if v == 0 {
                v = crate::hash::fresh(t.core(), mark::HASH_BITS);
            }
            // Every other writer of an unlocked or monitor word (lockers, inflaters, the
            // deflater) uses a compare-and-swap too, so the hash cannot be lost.
            if h.0
                .compare_exchange(
                    w,
                    mark::with_hash(w, v),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
            {
                return Ok(v);
            }
        }
    }

    /// The hash in an unlocked or monitor word. A stack-locked word hides it in the owner's
    /// record, which a running owner may free and refill at any moment, so this reports
    /// `None` for a stack-locked object; a GC at a safepoint reads the record with
    /// [`Stack::peek_identity_hash_at_safepoint`], and the owner's own `identity_hash` is exact.
    /// `None` while the object is stack-locked, hashed or not: its hash is then in the owner's
    /// lock record (the displaced header), which another thread can read soundly only at a
    /// safepoint ([`peek_identity_hash_at_safepoint`](Self::peek_identity_hash_at_safepoint)).
    fn peek_identity_hash(_rt: &Runtime<Self>, h: &StackWord) -> Option<u32> {
        let w = h.0.load(Ordering::Acquire);
        (w & LOCK_BITS != LOCKED)
            .then(|| mark::hash_of(w))
            .filter(|&v| v != 0)
    }

    /// The lock records naming `from` now name `to` (see [`Runtime::relocate`]).
    fn relocate_records(rt: &Runtime<Self>, from: *const StackWord, to: &StackWord) {
        Self::rewrite_records(rt, from, to);
    }

    /// The lock records: stack-locked objects, one level per record.
    fn held_records(_rt: &Runtime<Self>, t: &ThreadContext<Self>) -> Vec<(usize, u32)> {
        crate::introspect::count_runs(t.local().objects().into_iter().map(|p| p as usize))
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
