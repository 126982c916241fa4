//! `stack`: HotSpot's stack-locking (`-XX:LockingMode=1`), the scheme seed 001 replaces: "push
//! a stack-lock onto the stack which consists only of the displaced header, and CAS a pointer
//! to this stack location into the object header (the lowest two header bits being 00
//! indicate 'stack-locked'). The pointer into the stack can then be used to identify which
//! thread currently owns the lock."
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
//! The all-zero word is unlocked too (no host bits, no hash): memory from `calloc` or a GC heap
//! is a valid header, made the canonical `…01` word by the first slow path that writes it.
//! **Deviation from HotSpot**, whose INFLATING marker is the all-zero word (`markWord::INFLATING()`):
//! a zeroed header would read as "being inflated" for ever, and every `enter` (even
//! `try_enter`) would wait for an inflation nobody does (issue 11, item 9). INFLATING is `0b100`
//! here: lock bits `00` as in HotSpot, and never a record address (records are 8-byte aligned
//! and far above 4).
//!
//! Identity hash (31 bits, 0 = none): legacy HotSpot's rule. Unlocked or monitor: one
//! compare-and-swap into the word. Stack-locked: the word is a record address, so the hash
//! has nowhere to go; the owner reads a hash already there from its own record's displaced
//! header, and otherwise the lock is inflated first (by the owner itself, or by another thread
//! with the INFLATING protocol, which never waits for the owner to unlock) and the hash goes
//! into the monitor word. Cost of a hash: nothing for an unlocked object; one inflation (a
//! monitor until the owner's exit deflates it, per [`Config::deflation`]) for a stack-locked
//! one. Deflation and unlocking restore the hash with the rest of the word.
//!
//! Lock records: each thread has an array of [`LOCK_RECORDS`] records (its "stack") and
//! allocates them in stack order. The arrays come from a process-wide pool (`stack_records.rs`)
//! and are never freed, so a record a header names is a valid `LockRecord` for as long as the
//! header lives, whatever became of its thread (type-stable, like the monitor table); an array
//! goes back to the pool at detach only if every record in it is free. A record
//! is either a *base* record — it holds the displaced header, and the header points at it — or
//! a *recursive* one, whose displaced header is 0 ("recursion by a record whose displaced
//! header is empty", HotSpot's `BasicLock`). The owner of a stack-locked object is the thread
//! whose array contains the header's address (a range check; the record also stores its
//! thread's id for the inflater).
//!
//! Inflation by a contender is HotSpot's protocol with the INFLATING marker: CAS the record
//! address to INFLATING, which keeps the header stable (the owner's unlocking CAS fails and it waits),
//! read the displaced header and the owner from the record, set up a monitor owned by that
//! thread, publish the monitor word. The owner inflates its own lock (wait; a recursive enter
//! with no free record) with one CAS from its record address to the monitor word. After
//! inflation the records stay: recursive ones exit as no-ops, the base one exits the monitor
//! (whose count is 1 for all of them), as in HotSpot. No free record for a new object: it is
//! locked straight through a fresh monitor. Exits may come in any order: the records of
//! different objects are independent, and a freed record below the top is a hole until the
//! records above it are freed. Deflation: `crate::deflate`, per
//! [`Config::deflation`].
//!
//! When a record may be freed (so that no header is left naming a free, and later reused,
//! record): a recursive record at any time (no header names it); a base record only when the
//! header provably left its address — the owner's unlocking CAS from it succeeded, or the
//! record's `inflated` flag is set (the contender sets it under INFLATING, the owner after its
//! own inflating CAS, in both cases before the monitor word can be seen). A base record whose
//! object's header shows neither (safe Rust gets there by passing a guard to `mem::forget` and
//! moving the header out with `mem::replace`) is *orphaned*: it stays in use for good with its
//! displaced header and owner, for a contender that inflates the moved header, and is found by
//! no address; the exit goes on with whatever the header at that address holds now. Before an
//! orphan is found, a recursive record of it may still satisfy an exit at its old address: a
//! wrong answer after a contract violation (a locked header moved), never undefined behaviour.
//!
//! Atomic operations per fast path:
//! - lock an unlocked object: one load, two stores (the record), one compare-and-swap of the
//!   record address, one store (top);
//! - recursive lock (header points into the caller's records): one load, three stores;
//! - unlock: one compare-and-swap of the displaced header back, two or three stores;
//!   recursive unlock: stores only.
//!
//! Measured instructions per lock+unlock through the guard API (callgrind,
//! `(I(2·10⁵) − I(10⁵)) / 10⁵` of `examples/user_loop.rs PROTOCOL plain|nested N`; 2026-11-25):
//! 76 uncontended, 79 nested.
//!
//! Contended: the fat path is `lightweight`'s (`deflate.rs`: the system lock first, an
//! announcement only for a thread that must wait, the exit-time deflation attempt); see the
//! paragraph "Contended" there. Quiet, 8 threads on one object, wall ratio to
//! `parking_lot::Mutex` (`examples/contended.rs`): 4.19 / 3.81 before the system lock came
//! first, 1.53 / 1.35 after (two runs, old and new binaries alternating), 1.34 in a later
//! run of all protocols (docs/benchmarks.md, "Contended").
//!
//! GC: records hold header addresses used only for identity, never dereferenced; the header
//! points at a record, which moves never. See [`Stack::locked_objects`], [`Runtime::relocate`].

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

/// How many rounds an owner query retries before giving up on finding the thread that
/// stack-locked an object (it detached with a forgotten guard).
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
    /// Nonzero once a base record was inflated: the header it was locked in went from its
    /// address to INFLATING (a contender) or to a monitor word (the owner), so no header names
    /// it any more. Set before the monitor word is published, cleared by the owner just before
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

impl LockRecords {
    fn new(id: ThreadId) -> Self {
        let records = stack_records::take();
        for r in records {
            r.owner.store(u32::from(id.get()), Ordering::Relaxed);
        }
        Self {
            records,
            top: AtomicUsize::new(0),
        }
    }

    #[inline]
    fn top(&self) -> usize {
        self.top.load(Ordering::Relaxed)
    }

    #[inline]
    fn word_of(&self, i: usize) -> u64 {
        &self.records[i] as *const LockRecord as usize as u64
    }

    /// Whether `w` is the address of one of these records.
    #[inline]
    fn owns_word(&self, w: u64) -> bool {
        let base = self.records.as_ptr() as usize as u64;
        w >= base && w < base + (LOCK_RECORDS * std::mem::size_of::<LockRecord>()) as u64
    }

    #[inline]
    fn index_of_word(&self, w: u64) -> usize {
        let base = self.records.as_ptr() as usize as u64;
        ((w - base) / std::mem::size_of::<LockRecord>() as u64) as usize
    }

    /// Owner only: fills record `top` and bumps `top`.
    #[inline]
    fn fill(&self, top: usize, a: usize, displaced: u64) {
        let r = &self.records[top];
        r.displaced.store(displaced, Ordering::Relaxed);
        r.obj.store(a, Ordering::Relaxed);
        self.top.store(top + 1, Ordering::Relaxed);
    }

    /// Owner only: frees record `i`, and lowers `top` past free records.
    #[inline]
    fn free(&self, i: usize) {
        let r = &self.records[i];
        r.obj.store(0, Ordering::Relaxed);
        r.displaced.store(0, Ordering::Relaxed);
        let mut top = self.top();
        if i + 1 == top {
            while top > 0 && self.records[top - 1].obj.load(Ordering::Relaxed) == 0 {
                top -= 1;
            }
            self.top.store(top, Ordering::Relaxed);
        }
    }

    /// Owner only: the highest record for `a` and whether it is a base record.
    fn topmost(&self, a: usize) -> Option<(usize, bool)> {
        (0..self.top()).rev().find_map(|i| {
            let r = &self.records[i];
            (r.obj.load(Ordering::Relaxed) == a)
                .then(|| (i, r.displaced.load(Ordering::Relaxed) != 0))
        })
    }

    /// Owner only (others: a racy snapshot): the record levels held on the lock whose header
    /// is at `a` and reads `w`: whether a base record for `a` is current — the header names it
    /// (`w` is its address) or it was inflated — and how many recursive records follow
    /// current base records. A base record that is neither is an orphan-to-be (the header that
    /// named it moved away): neither it nor its recursive records hold this object.
    fn levels(&self, a: usize, w: u64) -> (bool, u32) {
        let (mut base, mut rec, mut current) = (false, 0, false);
        for (i, r) in self.records[..self.top()].iter().enumerate() {
            if r.obj.load(Ordering::Relaxed) != a {
                continue;
            }
            if r.displaced.load(Ordering::Relaxed) != 0 {
                current = self.word_of(i) == w || r.inflated.load(Ordering::Relaxed) != 0;
                base |= current;
            } else if current {
                rec += 1;
            }
        }
        (base, rec)
    }

    /// Owner only: base record `i` (for `a`) is named by no header at `a` and was never
    /// inflated, so the header that named it moved away with its lock (a forgotten guard): it
    /// and the recursive records that follow it, up to the next base record for `a`, stay in
    /// use for good, found by no address. The moved header may still name record `i`, which
    /// keeps its displaced header and owner for a contender to inflate.
    fn orphan(&self, i: usize, a: usize) {
        self.records[i].obj.store(ORPHAN, Ordering::Release);
        for r in &self.records[i + 1..self.top()] {
            if r.obj.load(Ordering::Relaxed) == a {
                if r.displaced.load(Ordering::Relaxed) != 0 {
                    break;
                }
                r.obj.store(ORPHAN, Ordering::Release);
            }
        }
    }

    /// The locked headers, one per record in use, oldest first (racy unless the owner is
    /// stopped).
    pub fn objects(&self) -> Vec<*const StackWord> {
        self.records
            .iter()
            .map(|r| r.obj.load(Ordering::Acquire))
            .filter(|&a| a != 0 && a != ORPHAN)
            .map(|a| a as *const StackWord)
            .collect()
    }
}

impl Drop for LockRecords {
    fn drop(&mut self) {
        if self.records.iter().all(LockRecord::is_free) {
            // No header names a record of ours: the next thread may have the array.
            stack_records::give_back(self.records);
        } else {
            // A lock held past detach (a forgotten guard, an orphan): a header may still point
            // into the array, and a contender will read it under INFLATING. The array is never
            // reused, and no thread that later gets this id passes for its owner.
            for r in self.records.iter() {
                r.owner.store(ANONYMOUS_OWNER, Ordering::Relaxed);
            }
        }
    }
}

impl std::fmt::Debug for LockRecords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.objects()).finish()
    }
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

impl Stack {
    /// Deflates `h`'s monitor if nobody owns, enters or waits on it (the host's hook for
    /// [`DeflationPolicy::OnRequest`](crate::vm::DeflationPolicy::OnRequest), usable under any
    /// policy). `true` if it did.
    pub fn deflate_idle(rt: &Runtime<Self>, h: &StackWord) -> bool {
        deflate::deflate_idle(rt, &h.0)
    }

    /// GC hook: the headers `t` holds lock records for, one per record, oldest first. Objects
    /// `t` entered through a monitor without a record are found through the monitors.
    pub fn locked_objects(t: &ThreadContext<Self>) -> Vec<*const StackWord> {
        t.local().objects()
    }

    /// [`Runtime::relocate`]'s part here: the object whose header was at `from` now has its
    /// header at `to` (the host copied the word verbatim: a record address stays valid, records never move). Rewrites
    /// every record naming `from`. Call only while every attached thread is stopped outside
    /// this crate's calls (a safepoint). Record `obj` fields are never dereferenced, so a missed
    /// relocation is a wrong answer (`IllegalMonitorState`), never undefined behaviour.
    fn rewrite_records(rt: &Runtime<Self>, from: *const StackWord, to: &StackWord) {
        for cx in rt.threads().snapshot() {
            for r in cx.local().records.iter() {
                if r.obj.load(Ordering::Relaxed) == from as usize {
                    r.obj.store(addr(to), Ordering::Release);
                }
            }
        }
    }

    /// GC hook: [`peek_identity_hash`](Protocol::peek_identity_hash) that also reads the hash
    /// of a stack-locked object from its owner's lock record (displaced header), as HotSpot's
    /// GC does. Call only while every attached thread is stopped outside this crate's calls
    /// (a safepoint, as for [`Runtime::relocate`]); otherwise the record may change
    /// under the read and the answer is `None` or wrong.
    pub fn peek_identity_hash_at_safepoint(rt: &Runtime<Self>, h: &StackWord) -> Option<u32> {
        let w = h.0.load(Ordering::Acquire);
        if w & LOCK_BITS != LOCKED {
            return Self::peek_identity_hash(rt, h);
        }
        let threads = rt.threads().snapshot();
        let cx = threads.iter().find(|cx| cx.local().owns_word(w))?;
        let rs = cx.local();
        let d = rs.records[rs.index_of_word(w)]
            .displaced
            .load(Ordering::Acquire);
        Some(mark::hash_of(d)).filter(|&v| v != 0)
    }

    /// A contender inflates the stack-lock `w` (HotSpot's INFLATING protocol). Returns when
    /// the header no longer holds `w`; the caller re-reads it. `IllegalMonitorState` if `w` is
    /// not the address of a lock record (a header word no operation of this crate wrote).
    fn inflate_contended(
        rt: &Runtime<Self>,
        h: &StackWord,
        w: u64,
        cause: InflationCause,
    ) -> Result<(), MonitorError> {
        if !stack_records::is_record(w) {
            return Err(MonitorError::IllegalMonitorState);
        }
        // SAFETY: as below (a record of the never-freed pool; its fields are atomics). Its
        // owner must be a thread of ours: never inflate for another runtime's stack-lock.
        let owner = unsafe { &*(w as usize as *const LockRecord) }
            .owner
            .load(Ordering::Relaxed);
        rt.threads()
            .owner_context(owner, || h.0.load(Ordering::SeqCst) == w)?;
        let Ok(idx) = rt.monitors().allocate() else {
            if cause != InflationCause::Contention {
                // A hasher cannot wait for the owner to unlock: that could deadlock.
                return Err(MonitorError::MonitorTableFull);
            }
            // Table full: spin on the header instead.
            yield_now();
            return Ok(());
        };
        rt.monitors().bind(idx, addr(h));
        let m = rt.monitors().get(idx);
        // Locked before the header becomes INFLATING: nothing may fail between that and
        // publishing the monitor, or every thread would wait for the header forever. The real
        // owner is filled in once the record has been read.
        m.enter_inflated_for(ANONYMOUS_OWNER, 1)?;
        if h.0
            .compare_exchange(w, INFLATING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            m.abandon_fresh();
            rt.monitors().free(idx);
            return Ok(());
        }
        // SAFETY:
        // - `is_record(w)`: `w` is the address of a `LockRecord` of the process-wide pool
        //   (`stack_records.rs`), whose slabs are leaked and never freed, so the reference is
        //   valid for the rest of the process whatever the header held;
        // - all its fields are atomics, so reading them while the owner runs is no data race.
        // What it holds (not needed for soundness): our CAS from `w` to INFLATING succeeded, so
        // at that moment the record was the base record of `h` (`fill` + the locking CAS put
        // `w` there); its owner frees it only after its unlocking CAS from `w` succeeds, or
        // after it sees `inflated` (set below, before the publication), so it stays as it is
        // until we publish the monitor.
        let r = unsafe { &*(w as usize as *const LockRecord) };
        let displaced = r.displaced.load(Ordering::Relaxed);
        let owner = r.owner.load(Ordering::Relaxed);
        // The header names the record no more: the owner may free it once it sees the monitor
        // word (the release store below publishes this too).
        r.inflated.store(1, Ordering::Relaxed);
        // The count is 1 for the base record; recursive records stay with the owner.
        m.set_unpublished_owner(owner);
        h.0.store(monitor_word(displaced, idx), Ordering::Release);
        rt.stats().inflated(cause);
        Ok(())
    }

    /// The owner inflates its own stack-lock (record address `w`, in `t`'s records), or finds
    /// the monitor a contender installed.
    fn inflate_owned<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &StackWord,
        cause: InflationCause,
    ) -> Result<&'r FatMonitor, MonitorError> {
        let rs = t.local();
        loop {
            let w = h.0.load(Ordering::Acquire);
            if w == INFLATING {
                yield_now();
                continue;
            }
            if w & LOCK_BITS == MONITOR {
                return match deflate::owned_monitor(rt, t, &h.0, w) {
                    Ok(Some((m, _))) => Ok(m),
                    Ok(None) => Err(MonitorError::IllegalMonitorState),
                    Err(()) => continue,
                };
            }
            if !rs.owns_word(w) {
                return Err(MonitorError::IllegalMonitorState);
            }
            let r = &rs.records[rs.index_of_word(w)];
            let displaced = r.displaced.load(Ordering::Relaxed);
            let idx = rt.monitors().allocate()?;
            rt.monitors().bind(idx, addr(h));
            let m = rt.monitors().get(idx);
            m.enter_inflated_for(t.core().raw_id(), 1)?;
            if h.0
                .compare_exchange(
                    w,
                    monitor_word(displaced, idx),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                // No header names the record now (only we read the flag, after this).
                r.inflated.store(1, Ordering::Relaxed);
                rt.stats().inflated(cause);
                return Ok(m);
            }
            // A contender got INFLATING in first; its monitor will name us as owner.
            m.abandon_fresh();
            rt.monitors().free(idx);
        }
    }

    #[cold]
    fn enter_slow(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &StackWord,
        block: bool,
    ) -> Result<bool, MonitorError> {
        let rs = t.local();
        let a = addr(h);
        let mut inflating_rounds = 0;
        loop {
            let w = h.0.load(Ordering::Acquire);
            let top = rs.top();
            if w & LOCK_BITS == MONITOR {
                match deflate::enter_monitor(rt, t, &h.0, w, block)? {
                    Via::Entered => return Ok(true),
                    Via::Busy => return Ok(false),
                    Via::Retry => continue,
                }
            }
            if w == INFLATING {
                // Transient: the inflater publishes the monitor without waiting for anybody.
                // `try_enter` waits (boundedly) only if the lock may be its own.
                if !block {
                    inflating_rounds += 1;
                    if rs.topmost(a).is_none() || inflating_rounds > INFLATING_TRY_ROUNDS {
                        return Ok(false);
                    }
                }
                yield_now();
                continue;
            }
            if w == 0 {
                Self::normalize_zero(h);
                continue;
            }
            if w & LOCK_BITS == LOCKED {
                if rs.owns_word(w) {
                    if top < LOCK_RECORDS {
                        rs.fill(top, a, 0);
                    } else {
                        Self::inflate_owned(rt, t, h, InflationCause::RecursionOverflow)?
                            .enter(t.core_arc())?;
                    }
                    return Ok(true);
                }
                if !block {
                    return Ok(false);
                }
                Self::inflate_contended(rt, h, w, InflationCause::Contention)?;
                continue;
            }
            // Unlocked.
            if top < LOCK_RECORDS {
                rs.fill(top, a, w);
                if h.0
                    .compare_exchange(w, rs.word_of(top), Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                {
                    return Ok(true);
                }
                rs.free(top);
            } else {
                // No record left: lock it through a fresh monitor.
                let idx = rt.monitors().allocate()?;
                rt.monitors().bind(idx, a);
                let m = rt.monitors().get(idx);
                m.enter_inflated_for(t.core().raw_id(), 1)?;
                if h.0
                    .compare_exchange(w, monitor_word(w, idx), Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                {
                    rt.stats().inflated(InflationCause::RecursionOverflow);
                    return Ok(true);
                }
                m.abandon_fresh();
                rt.monitors().free(idx);
            }
        }
    }

    #[cold]
    fn exit_slow(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &StackWord,
    ) -> Result<(), MonitorError> {
        let rs = t.local();
        match rs.topmost(addr(h)) {
            Some((i, false)) => {
                rs.free(i);
                Ok(())
            }
            Some((i, true)) => loop {
                let r = &rs.records[i];
                let w = h.0.load(Ordering::Acquire);
                if w == rs.word_of(i) {
                    let d = r.displaced.load(Ordering::Relaxed);
                    if h.0
                        .compare_exchange(w, d, Ordering::Release, Ordering::Relaxed)
                        .is_ok()
                    {
                        rs.free(i);
                        return Ok(());
                    }
                } else if w == INFLATING {
                    // A contender is installing a monitor (that will name us if it is ours):
                    // wait for it.
                    yield_now();
                } else if r.inflated.load(Ordering::Relaxed) != 0 {
                    // Inflated (the flag was set before the monitor word we acquired was
                    // published): the header left the record's address for good, so the
                    // record may be freed, and the base record's exit is the monitor's exit.
                    r.inflated.store(0, Ordering::Relaxed);
                    rs.free(i);
                    return Self::exit_monitor(rt, t, h);
                } else {
                    // Neither named nor inflated: the header that named the record moved away
                    // with its lock (a forgotten guard) and may name it still. Never free it;
                    // this exit is about whatever the header at `a` holds now.
                    rs.orphan(i, addr(h));
                    return Self::exit_slow(rt, t, h);
                }
            },
            None => Self::exit_monitor(rt, t, h),
        }
    }

    /// The all-zero word (`calloc`'d memory) is an unlocked header with no host bits and no
    /// hash: make it the canonical one before anything else is written into it.
    #[cold]
    fn normalize_zero(h: &StackWord) {
        let _ =
            h.0.compare_exchange(0, UNLOCKED_ZERO, Ordering::Relaxed, Ordering::Relaxed);
    }

    fn exit_monitor(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &StackWord,
    ) -> Result<(), MonitorError> {
        loop {
            let w = h.0.load(Ordering::Acquire);
            if w & LOCK_BITS != MONITOR {
                return Err(MonitorError::IllegalMonitorState);
            }
            match deflate::owned_monitor(rt, t, &h.0, w) {
                Ok(Some((m, idx))) => return deflate::exit_owned(rt, t, &h.0, m, idx),
                Ok(None) => return Err(MonitorError::IllegalMonitorState),
                Err(()) => continue,
            }
        }
    }

    /// The monitor `t` owns for `h` (inflating its stack-lock if needed), for wait / notify.
    fn owned_for_wait<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &StackWord,
    ) -> Result<&'r FatMonitor, MonitorError> {
        Self::inflate_owned(rt, t, h, InflationCause::WaitNotify)
    }
}

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
    unsafe fn enter(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
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
    unsafe fn exit(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &StackWord,
    ) -> Result<(), MonitorError> {
        let rs = t.local();
        let top = rs.top();
        if top > 0 {
            let r = &rs.records[top - 1];
            if r.obj.load(Ordering::Relaxed) == addr(h) {
                let d = r.displaced.load(Ordering::Relaxed);
                if d == 0 {
                    rs.free(top - 1);
                    return Ok(());
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
        for _ in 0..OWNER_QUERY_ROUNDS {
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
                    Self::inflate_contended(rt, h, w, InflationCause::IdentityHash)?;
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
mod tests {
    use super::*;
    use crate::vm::{DeflationPolicy, Runtime};
    use std::time::Duration;

    const HOST: u64 = 0x8000_0000_0000_00a4;

    /// Seed 001: the header holds "a pointer to this stack location" with low bits 00, the
    /// record holds the displaced header, and unlocking puts it back.
    #[test]
    fn header_points_at_record_with_displaced_header() {
        let rt = Runtime::<Stack>::with_defaults();
        let me = rt.attach().unwrap();
        let h = StackWord::new(HOST);
        let g = me.enter(&h).unwrap();
        let w = h.raw();
        assert_eq!(w & LOCK_BITS, LOCKED);
        assert!(me.context().local().owns_word(w));
        let r = &me.context().local().records[me.context().local().index_of_word(w)];
        assert_eq!(r.displaced.load(Ordering::Relaxed), HOST | 0b01);
        assert_eq!(h.host_bits(), None, "displaced into the record");
        assert_eq!(
            rt.owner_of(&h),
            Some(me.id()),
            "owner from the record address"
        );
        drop(g);
        assert_eq!(h.raw(), HOST | 0b01);
        assert_eq!(h.host_bits(), Some(HOST & MARK_HOST_BITS));
    }

    /// Recursion: a second record with an empty displaced header; the header is unchanged.
    #[test]
    fn recursion_pushes_empty_record() {
        let rt = Runtime::<Stack>::with_defaults();
        let me = rt.attach().unwrap();
        let h = StackWord::new(HOST);
        let g1 = me.enter(&h).unwrap();
        let w = h.raw();
        let g2 = me.enter(&h).unwrap();
        assert_eq!(h.raw(), w);
        let rs = me.context().local();
        assert_eq!(rs.levels(addr(&h), w), (true, 1));
        assert_eq!(Stack::locked_objects(me.context()).len(), 2);
        drop(g2);
        assert_eq!(h.raw(), w);
        drop(g1);
        assert_eq!(h.raw(), HOST | 0b01);
        assert_eq!(rt.stats_snapshot().inflations(), 0);
    }

    /// The contender's inflation through INFLATING: the monitor names the record's thread,
    /// the host bits come back from the record, recursive records exit as no-ops and the
    /// base record's exit hands over. Eager deflation restores the header.
    #[test]
    fn contender_inflates_through_inflating_marker() {
        let rt = Runtime::<Stack>::with_defaults();
        let h = StackWord::new(HOST);
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
            assert_eq!(h.host_bits(), Some(HOST & MARK_HOST_BITS));
            assert_eq!(rt.owner_of(&h), Some(me.id()));
            assert_eq!(me.lock_count(&h), 2);
            drop(g2);
            assert_eq!(me.lock_count(&h), 1);
            assert_eq!(rt.owner_of(&h), Some(me.id()));
            drop(g1);
        });
        let s = rt.stats_snapshot();
        assert_eq!(
            (s.inflations_contention, s.deflations, s.live_monitors),
            (1, 1, 0)
        );
        assert_eq!(h.raw(), HOST | 0b01);
    }

    /// More objects than records: the rest go through monitors; recursion past the last record
    /// inflates the owner's own lock. Unstructured exits in any order.
    #[test]
    fn records_run_out() {
        let rt = Runtime::<Stack>::new(Config {
            deflation: DeflationPolicy::Never,
            ..Config::default()
        });
        let hs: Vec<StackWord> = (0..LOCK_RECORDS + 2)
            .map(|_| StackWord::default())
            .collect();
        let me = rt.attach().unwrap();
        for h in &hs {
            me.monitor_enter(h).unwrap();
        }
        assert_eq!(hs[LOCK_RECORDS].raw() & LOCK_BITS, MONITOR);
        me.monitor_enter(&hs[0]).unwrap(); // no record left: the owner inflates
        assert_eq!(hs[0].raw() & LOCK_BITS, MONITOR);
        assert_eq!(me.lock_count(&hs[0]), 2);
        for h in hs.iter().step_by(2).chain(hs.iter().skip(1).step_by(2)) {
            me.monitor_exit(h).unwrap();
        }
        me.monitor_exit(&hs[0]).unwrap();
        assert!(hs.iter().all(|h| rt.owner_of(h).is_none()));
        assert_eq!(
            me.monitor_exit(&hs[1]),
            Err(MonitorError::IllegalMonitorState)
        );
    }

    /// Quick notify on a stack-lock, wait inflates and keeps the recursion in the records.
    #[test]
    fn wait_inflates_keeping_records() {
        let rt = Runtime::<Stack>::with_defaults();
        let me = rt.attach().unwrap();
        let h = StackWord::default();
        let _g1 = me.enter(&h).unwrap();
        let g2 = me.enter(&h).unwrap();
        g2.notify_all().unwrap();
        assert_eq!(h.raw() & LOCK_BITS, LOCKED, "notify needs no monitor");
        assert_eq!(
            g2.wait(Some(Duration::ZERO)).unwrap(),
            WaitOutcome::TimedOut
        );
        assert_eq!(h.raw() & LOCK_BITS, MONITOR);
        assert_eq!(me.lock_count(&h), 2);
        assert_eq!(me.context().local().levels(addr(&h), h.raw()), (true, 1));
    }

    /// Finding 8 (issue 11): a monitor's count can reach `u32::MAX` on its own, and the
    /// recursive records beside it add theirs; `lock_count` added them with `+` (a panic in
    /// debug, a wrapped count in release). Reaching `u32::MAX` by recursion takes four billion
    /// enters, so the test sets the count directly, as that many would.
    #[test]
    fn lock_count_saturates() {
        let rt = Runtime::<Stack>::new(Config {
            deflation: DeflationPolicy::Never,
            ..Config::default()
        });
        let me = rt.attach().unwrap();
        let h = StackWord::default();
        let g1 = me.enter(&h).unwrap();
        let g2 = me.enter(&h).unwrap();
        assert_eq!(
            g2.wait(Some(Duration::ZERO)).unwrap(),
            WaitOutcome::TimedOut
        );
        assert_eq!(
            h.raw() & LOCK_BITS,
            MONITOR,
            "a base and a recursive record"
        );
        let m = rt.monitors().get(index_of(h.raw()));
        // We own the monitor and nobody contends: release it outright and take it again
        // with `c` levels.
        let set_count = |c| {
            m.abandon_fresh();
            m.enter_inflated(me.context().core_arc(), c).unwrap();
        };
        set_count(u32::MAX);
        assert_eq!(me.lock_count(&h), u32::MAX);
        set_count(u32::MAX - 1);
        assert_eq!(me.lock_count(&h), u32::MAX);
        set_count(1);
        assert_eq!(me.lock_count(&h), 2);
        drop(g2);
        drop(g1);
        assert_eq!(me.lock_count(&h), 0);
    }

    /// The record pool: a contender reads through a header word only if it is the address of
    /// a pool record, so a word a host forged (an 8-byte-aligned non-record) is refused.
    #[test]
    fn only_pool_records_are_read() {
        let rt = Runtime::<Stack>::with_defaults();
        let me = rt.attach().unwrap();
        let rs = me.context().local();
        assert!(stack_records::is_record(rs.word_of(0)));
        assert!(stack_records::is_record(rs.word_of(LOCK_RECORDS - 1)));
        assert!(!stack_records::is_record(rs.word_of(0) + 8));
        let h = StackWord::default();
        assert!(!stack_records::is_record(addr(&h) as u64));
        h.0.store(addr(&h) as u64, Ordering::Relaxed);
        assert_eq!(
            Stack::inflate_contended(&rt, &h, h.raw(), InflationCause::Contention),
            Err(MonitorError::IllegalMonitorState)
        );
        assert_eq!(me.enter(&h).err(), Some(MonitorError::IllegalMonitorState));
        assert!(me.try_enter(&h).unwrap().is_none());
        assert_eq!(h.raw(), addr(&h) as u64, "never written");
    }

    /// A thread that detaches while a header points into its records (a forgotten guard)
    /// leaves the array alive: a contender can still inflate, never reading freed memory.
    #[test]
    fn forgotten_stack_lock_survives_detach() {
        let rt = Runtime::<Stack>::with_defaults();
        let h = StackWord::new(HOST);
        std::thread::scope(|s| {
            s.spawn(|| {
                let me = rt.attach().unwrap();
                std::mem::forget(me.enter(&h).unwrap());
            });
        });
        assert_eq!(h.raw() & LOCK_BITS, LOCKED);
        assert_eq!(rt.owner_of(&h), None, "no attached owner");
        let me = rt.attach().unwrap();
        assert!(me.try_enter(&h).unwrap().is_none());
        // A contender inflates (the record is read under INFLATING) and would block forever;
        // a helper thread does the inflation and gives up through the stats.
        std::thread::scope(|s| {
            s.spawn(|| {
                let t = rt.attach().unwrap();
                let _ = Stack::inflate_contended(&rt, &h, h.raw(), InflationCause::Contention);
                drop(t);
            });
        });
        assert_eq!(h.raw() & LOCK_BITS, MONITOR);
        assert_eq!(h.host_bits(), Some(HOST & MARK_HOST_BITS));
        assert_eq!(rt.owner_of(&h), None);
        assert!(me.try_enter(&h).unwrap().is_none());
    }

    /// Legacy stack-locking: a hash taken while unlocked travels in the displaced header (no
    /// inflation to read it back); a first hash of a stack-locked object inflates it, and the
    /// exit's deflation (or deflate_idle) keeps the hash; relocation moves it.
    #[test]
    fn hash_displaced_or_inflated() {
        let rt = Runtime::<Stack>::new(crate::vm::Config {
            deflation: DeflationPolicy::OnRequest,
            ..crate::vm::Config::default()
        });
        let h = StackWord::new(HOST);
        let me = rt.attach().unwrap();
        let v = me.identity_hash(&h).unwrap();
        assert_eq!(h.raw(), HOST | u64::from(v) << 32 | 0b01);
        let g = me.enter(&h).unwrap();
        assert!(me.context().local().owns_word(h.raw()), "stack-locked");
        assert_eq!(me.identity_hash(&h), Ok(v), "read from our own record");
        assert!(
            me.context().local().owns_word(h.raw()),
            "no inflation needed"
        );
        assert_eq!(rt.peek_identity_hash(&h), None, "hidden in the record");
        assert_eq!(Stack::peek_identity_hash_at_safepoint(&rt, &h), Some(v));
        drop(g);
        assert_eq!(rt.stats_snapshot().inflations(), 0);

        let h2 = StackWord::new(HOST);
        let _a = me.enter(&h2).unwrap();
        let b = me.enter(&h2).unwrap();
        let w = me.identity_hash(&h2).unwrap();
        assert_eq!(h2.raw() & LOCK_BITS, MONITOR, "inflated to hold the hash");
        assert_eq!(rt.stats_snapshot().inflations_identity_hash, 1);
        assert_eq!(me.lock_count(&h2), 2);
        assert_eq!(rt.peek_identity_hash(&h2), Some(w));
        drop(b);
        drop(_a);
        assert!(Stack::deflate_idle(&rt, &h2));
        assert_eq!(h2.raw(), HOST | u64::from(w) << 32 | 0b01);
        assert_eq!(h2.host_bits(), Some(HOST & MARK_HOST_BITS));

        // Relocation of a stack-locked, hashed object: the word (a record address) is copied
        // and the record's displaced header still has the hash.
        me.monitor_enter(&h).unwrap();
        let new = StackWord::default();
        new.0.store(h.raw(), Ordering::Relaxed);
        // SAFETY: a test's safepoint: no other thread is inside objmon, and the word was
        // copied verbatim.
        unsafe { rt.relocate(&h, &new) };
        assert_eq!(me.identity_hash(&new), Ok(v));
        // SAFETY: `me` is this thread's handle; the move was reported with `relocate`.
        assert_eq!(unsafe { Stack::exit(&rt, me.context(), &new) }, Ok(()));
        assert_eq!(rt.peek_identity_hash(&new), Some(v));
    }

    /// A thread that does not own a stack-locked object inflates it to hash it, without
    /// waiting for the owner's unlock.
    #[test]
    fn hash_of_another_threads_stack_lock_inflates() {
        let rt = Runtime::<Stack>::with_defaults();
        let me = rt.attach().unwrap();
        let h = StackWord::new(HOST);
        let g = me.enter(&h).unwrap();
        let v = std::thread::scope(|s| {
            s.spawn(|| rt.attach().unwrap().identity_hash(&h).unwrap())
                .join()
                .unwrap()
        });
        assert_eq!(h.raw() & LOCK_BITS, MONITOR);
        assert_eq!(rt.owner_of(&h), Some(me.id()));
        assert_eq!(me.identity_hash(&h), Ok(v));
        drop(g);
        assert_eq!(
            h.raw(),
            HOST | u64::from(v) << 32 | 0b01,
            "deflated at exit"
        );
    }
}
