//! `thin`: the thin locks of Bacon, Konuru, Murthy and Serrano (seed 000 §2.3), exactly.
//!
//! Header ([`LockWord`], Figure 1 and Figure 2 of the seed):
//!
//! | bits   | thin (bit 31 = 0)                        | inflated (bit 31 = 1)          |
//! |--------|------------------------------------------|--------------------------------|
//! | 31     | monitor shape bit = 0                    | monitor shape bit = 1          |
//! | 30..16 | owner thread index (15 bits), 0 = free   | monitor index (23 bits, 30..8) |
//! | 15..8  | count = locks − 1 (8 bits)               | ″                              |
//! | 7..0   | host bits (constant while live)          | host bits                      |
//!
//! The owner-only-modifies discipline (§2.3): while a thread owns the thin lock, no other thread
//! writes the lock field, so the owner nests, unnests and unlocks with plain loads and stores.
//!
//! Atomic operations per fast path:
//! - lock an unlocked object (§2.3.1): one load, one compare-and-swap of
//!   `host → host | (index << 16)` (the index kept pre-shifted in the thread context);
//! - unlock (§2.3.2): one load, one compare, one store (Release) — no atomic read-modify-write;
//! - nested lock / unlock (§2.3.3): the failed CAS (lock only), one xor-compare with
//!   `255 << 8`, one store of `word ± 256`.
//!
//! Inflation (always by the thread that owns the thin lock, so the discipline holds):
//! on count overflow (the 257th lock, §2.3: "excessive" = 257), on wait / notify, and on
//! contention: the contender spins with back-off until the owner releases, takes the thin lock,
//! and inflates it (§2.3.4). A fat lock stays fat for the object's lifetime (until `reclaim`).
//! If the monitor table is full, contention inflation is skipped (the thin lock is still held
//! correctly); overflow and wait / notify then fail with `MonitorTableFull`.
//!
//! Identity hash (32 bits, 0 = none): the 32-bit word has no room, so the hash lives in the
//! fat monitor ([`FatMonitor::identity_hash`]) and hashing inflates the object, which then
//! stays fat (thin locks never deflate): **a hashed object costs a monitor**. An unlocked
//! object is inflated by one compare-and-swap from the free word to the inflated word with a
//! fresh, unowned monitor (no owner exists to break the discipline); the owner inflates its own
//! thin lock as for wait. A thin lock held by *another* thread may be written only by its
//! owner, and waiting for the release could deadlock two threads that hash each other's
//! objects; so the hash is then recorded in the runtime's side table (by header address, see
//! `hash.rs`) and moved into the monitor by the next hash call that can inflate. Every such
//! decision is taken under the side table's mutex; once the monitor holds the hash, reading it
//! is one load of the word and one of the monitor. A full monitor table leaves the hash in the
//! side table: hashing never fails. The fast paths do not change. A moving GC reports moves
//! with [`Runtime::relocate`] (the table is keyed by address). Cost of a first
//! hash: the runtime-wide side-table mutex plus a monitor allocation (all first hashes of a
//! runtime serialize on that mutex; later ones read the monitor without it).

use super::{LockWord, Protocol, HOST_BITS_MASK};
use crate::hash::{self, SideHashes};
use crate::introspect::SpinEpisode;
use crate::monitor::{FatMonitor, WaitOutcome};
use crate::runtime::{Config, InflationCause, Runtime};
use crate::sync::{spin_hint, yield_now, Ordering};
use crate::table::MonitorIndex;
use crate::thread::{ThreadContext, ThreadId};
use crate::MonitorError;
use std::time::Instant;

/// Monitor shape bit: 1 = inflated.
const SHAPE: u32 = 1 << 31;
const OWNER_SHIFT: u32 = 16;
const OWNER_MASK: u32 = 0x7fff << OWNER_SHIFT;
const COUNT_SHIFT: u32 = 8;
const COUNT_MASK: u32 = 0xff << COUNT_SHIFT;
/// One nested lock in the count field.
const COUNT_ONE: u32 = 1 << COUNT_SHIFT;
/// The lock field: everything but the host bits.
const LOCK_MASK: u32 = !HOST_BITS_MASK;
const INDEX_SHIFT: u32 = 8;
const INDEX_MASK: u32 = 0x7f_ffff << INDEX_SHIFT;

/// The `thin` protocol (see the module documentation).
#[derive(Debug)]
pub enum Thin {}

#[inline]
fn monitor_of(rt: &Runtime<Thin>, w: u32) -> &FatMonitor {
    let idx = MonitorIndex::new((w & INDEX_MASK) >> INDEX_SHIFT);
    rt.monitors()
        .get(idx.expect("inflated lock word holds a monitor index"))
}

/// Locks held in a thin word owned by the caller: count + 1.
#[inline]
fn thin_locks(w: u32) -> u32 {
    ((w & COUNT_MASK) >> COUNT_SHIFT) + 1
}

impl Thin {
    /// Inflates a thin lock that `t` owns with `count` locks (§2.3.4, §2.3.3 overflow, wait).
    /// Only the owner may do this: it alone writes the lock field.
    fn inflate<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
        w: u32,
        count: u32,
        cause: InflationCause,
    ) -> Result<&'r FatMonitor, MonitorError> {
        debug_assert_eq!(w & (SHAPE | OWNER_MASK), t.core().id_shifted16());
        let idx = rt.monitors().allocate()?;
        rt.monitors().bind(idx, h as *const LockWord as usize);
        let m = rt.monitors().get(idx);
        m.enter_inflated(t.core_arc(), count)?;
        // Release: whoever reads the new word with Acquire sees the monitor set up.
        h.0.store(
            SHAPE | (idx.get() << INDEX_SHIFT) | (w & HOST_BITS_MASK),
            Ordering::Release,
        );
        rt.stats().inflated(cause);
        Ok(m)
    }

    #[cold]
    fn enter_slow(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<(), MonitorError> {
        let me = t.core().id_shifted16();
        let mut backoff = Backoff::default();
        let mut contended = false;
        // Published while we spin (introspection); ended before blocking on a monitor.
        let mut spin = None;
        loop {
            let w = h.0.load(Ordering::Acquire);
            if w & SHAPE != 0 {
                drop(spin.take());
                return monitor_of(rt, w).enter(t.core_arc());
            }
            if w & LOCK_MASK == 0 {
                // Unlocked: the owner released while we spun.
                if h.0
                    .compare_exchange(w, w | me, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    if contended {
                        // §2.3.4: having won the contended lock, make it fat. A full table
                        // leaves it thin, which is still correct.
                        let _ = Self::inflate(rt, t, h, w | me, 1, InflationCause::Contention);
                    }
                    return Ok(());
                }
                continue;
            }
            // §2.3.3: shape 0, owner = me, count < 255, in one xor and one compare.
            if (w ^ me) < (255 << COUNT_SHIFT) {
                h.0.store(w + COUNT_ONE, Ordering::Relaxed);
                return Ok(());
            }
            if w & OWNER_MASK == me {
                // Count overflow: the 257th lock inflates, carrying all the locks over.
                Self::inflate(rt, t, h, w, 257, InflationCause::RecursionOverflow)?;
                return Ok(());
            }
            // §2.3.4: held by another thread; only it may change the word. Spin.
            contended = true;
            spin.get_or_insert_with(|| SpinEpisode::begin(rt.monitors(), t.core(), h.addr()))
                .observe((w & OWNER_MASK) >> OWNER_SHIFT);
            backoff.snooze();
        }
    }

    #[cold]
    fn exit_slow(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<(), MonitorError> {
        let w = h.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            return monitor_of(rt, w).exit(t.core());
        }
        if w & OWNER_MASK != t.core().id_shifted16() {
            return Err(MonitorError::IllegalMonitorState);
        }
        if w & COUNT_MASK != 0 {
            h.0.store(w - COUNT_ONE, Ordering::Relaxed);
        } else {
            h.0.store(w & HOST_BITS_MASK, Ordering::Release);
        }
        Ok(())
    }

    /// The fat monitor for wait / notify: the installed one, or inflate the thin lock that
    /// `t` owns. `IllegalMonitorState` if `t` does not own a thin lock.
    fn fat_for_wait<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<&'r FatMonitor, MonitorError> {
        let w = h.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            return Ok(monitor_of(rt, w));
        }
        if w & OWNER_MASK != t.core().id_shifted16() {
            return Err(MonitorError::IllegalMonitorState);
        }
        Self::inflate(rt, t, h, w, thin_locks(w), InflationCause::WaitNotify)
    }
}

impl Protocol for Thin {
    const NAME: &'static str = "thin";
    const SUMMARY: &'static str = "24-bit thin lock, CAS lock, plain-store unlock, inflate forever";
    const HEADER_LOCK_BITS: u32 = 24;

    type Header = LockWord;
    type State = ();
    type ThreadState = ();

    fn new_state(_: &Config) {}
    fn new_thread_state(_: ThreadId, _: &Config) {}

    /// §2.3.1: CAS `old = word & 0xff` → `old | index << 16`.
    #[inline]
    unsafe fn enter(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<(), MonitorError> {
        if h.try_lock_unlocked(t.core().id_shifted16()) {
            return Ok(());
        }
        Self::enter_slow(rt, t, h)
    }

    unsafe fn try_enter(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<bool, MonitorError> {
        let me = t.core().id_shifted16();
        loop {
            let w = h.0.load(Ordering::Acquire);
            if w & SHAPE != 0 {
                return monitor_of(rt, w).try_enter(t.core());
            }
            if w & LOCK_MASK == 0 {
                match h
                    .0
                    .compare_exchange(w, w | me, Ordering::Acquire, Ordering::Relaxed)
                {
                    Ok(_) => return Ok(true),
                    // Lost to another locker or the word changed: look again.
                    Err(_) => continue,
                }
            }
            if w & OWNER_MASK == me {
                Self::enter_slow(rt, t, h)?;
                return Ok(true);
            }
            return Ok(false);
        }
    }

    /// §2.3.2: if the word is exactly "mine, count 0", store the host bits back.
    #[inline]
    unsafe fn exit(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<(), MonitorError> {
        let w = h.0.load(Ordering::Relaxed);
        if w & LOCK_MASK == t.core().id_shifted16() {
            h.0.store(w & HOST_BITS_MASK, Ordering::Release);
            return Ok(());
        }
        Self::exit_slow(rt, t, h)
    }

    unsafe fn wait(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
        deadline: Option<Instant>,
    ) -> Result<WaitOutcome, MonitorError> {
        Self::fat_for_wait(rt, t, h)?.wait(t.core_arc(), deadline)
    }

    unsafe fn notify(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
        all: bool,
    ) -> Result<(), MonitorError> {
        Self::fat_for_wait(rt, t, h)?.notify(t.core(), all)
    }

    fn lock_count(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &LockWord) -> u32 {
        let w = h.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            monitor_of(rt, w).count_for(t.core())
        } else if w & OWNER_MASK == t.core().id_shifted16() {
            thin_locks(w)
        } else {
            0
        }
    }

    fn owner_of(rt: &Runtime<Self>, h: &LockWord) -> Option<ThreadId> {
        let w = h.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            monitor_of(rt, w).owner()
        } else {
            ThreadId::from_raw((w & OWNER_MASK) >> OWNER_SHIFT)
        }
    }

    fn reclaim(rt: &Runtime<Self>, h: &mut LockWord) {
        let w = h.0.load(Ordering::Relaxed);
        if w & SHAPE != 0 {
            let idx = MonitorIndex::new((w & INDEX_MASK) >> INDEX_SHIFT).expect("index");
            if rt.monitors().get(idx).is_idle() {
                rt.monitors().free(idx);
            }
        }
        // The object is dead: a hash it had in the side table goes with it (the monitor's
        // went with the monitor, see `MonitorTable::free`).
        rt.side_hashes().forget(addr(h));
        h.0.store(w & HOST_BITS_MASK, Ordering::Relaxed);
    }

    const HASH_BITS: u32 = 32;

    /// See the module documentation. Fast: an inflated word whose monitor has the hash.
    unsafe fn identity_hash(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<u32, MonitorError> {
        let w = h.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            if let Some(v) = monitor_of(rt, w).identity_hash() {
                return Ok(v);
            }
        }
        Self::hash_slow(rt, t, h)
    }

    fn peek_identity_hash(rt: &Runtime<Self>, h: &LockWord) -> Option<u32> {
        // The table first, the word second (see `SideHashes::may_hold_any`).
        let parked = rt.side_hashes().may_hold_any();
        let w = h.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            if let Some(v) = monitor_of(rt, w).identity_hash() {
                return Some(v);
            }
        }
        if !parked {
            return None;
        }
        let side = rt.side_hashes().lock();
        // Under the table's mutex: a hash is either still here or already in the monitor.
        let w = h.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            if let Some(v) = monitor_of(rt, w).identity_hash() {
                return Some(v);
            }
        }
        side.get(addr(h))
    }
}

#[inline]
fn addr(h: &LockWord) -> usize {
    h as *const LockWord as usize
}

impl Thin {
    /// The hash of an object whose word shows none yet, decided under the side table's mutex.
    #[cold]
    fn hash_slow(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<u32, MonitorError> {
        let side: &SideHashes = rt.side_hashes();
        let mut table = side.lock();
        let a = addr(h);
        let me = t.core().id_shifted16();
        loop {
            let w = h.0.load(Ordering::Acquire);
            if w & SHAPE != 0 {
                // Inflated (by us just now, or by an owner for contention / wait, which did
                // not look at the table): the monitor takes a pending hash, or a new one.
                let fresh = || hash::fresh(t.core(), Self::HASH_BITS);
                return Ok(table.adopt(monitor_of(rt, w), a, fresh));
            }
            let v = match table.get(a) {
                Some(v) => v,
                None => hash::fresh(t.core(), Self::HASH_BITS),
            };
            if w & LOCK_MASK == 0 {
                // Free: nobody owns it, so a compare-and-swap straight to the inflated word
                // with an unowned monitor that already holds the hash breaks no discipline
                // (lockers CAS from the free word too, and fail).
                let Ok(idx) = rt.monitors().allocate() else {
                    table.insert(a, v);
                    return Ok(v);
                };
                rt.monitors().bind(idx, a);
                let m = rt.monitors().get(idx);
                m.install_hash(v);
                if h.0
                    .compare_exchange(
                        w,
                        SHAPE | (idx.get() << INDEX_SHIFT) | (w & HOST_BITS_MASK),
                        Ordering::AcqRel,
                        Ordering::Relaxed,
                    )
                    .is_ok()
                {
                    table.remove(a);
                    rt.stats().inflated(InflationCause::IdentityHash);
                    return Ok(v);
                }
                // A locker got there first: look again.
                rt.monitors().free(idx);
                continue;
            }
            if w & OWNER_MASK == me {
                // Ours: inflate it as for wait, then the loop's first branch stores the hash.
                if Self::inflate(rt, t, h, w, thin_locks(w), InflationCause::IdentityHash).is_err()
                {
                    table.insert(a, v);
                    return Ok(v);
                }
                continue;
            }
            // Held by another thread: only it may write the word. Park the hash here.
            table.insert(a, v);
            return Ok(v);
        }
    }
}

/// Back-off for the contender's spin (§2.3.4 points to Anderson's standard back-off):
/// exponentially longer busy-waits, then yielding the processor.
#[derive(Default)]
struct Backoff {
    step: u32,
}

impl Backoff {
    const SPIN_STEPS: u32 = 6;

    fn snooze(&mut self) {
        if self.step < Self::SPIN_STEPS {
            for _ in 0..(1u32 << self.step) {
                spin_hint();
            }
            self.step += 1;
        } else {
            yield_now();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::Runtime;

    fn parts(w: u32) -> (u32, u32, u32, u32) {
        (
            w >> 31,
            (w & OWNER_MASK) >> OWNER_SHIFT,
            (w & COUNT_MASK) >> COUNT_SHIFT,
            w & 0xff,
        )
    }

    /// Seed 000 §2.3: "When the object is locked, the count field represents the number of
    /// locks minus one"; unlocked, the whole lock field is 0.
    #[test]
    fn count_field_is_locks_minus_one() {
        let rt = Runtime::<Thin>::with_defaults();
        let me = rt.attach().unwrap();
        let h = LockWord::new(0x5a);
        assert_eq!(h.raw(), 0x5a);
        let mut gs = Vec::new();
        for locks in 1..=256u32 {
            gs.push(me.enter(&h).unwrap());
            assert_eq!(
                parts(h.raw()),
                (0, u32::from(me.id().get()), locks - 1, 0x5a)
            );
        }
        drop(gs);
        assert_eq!(h.raw(), 0x5a, "unlocked: lock field 0, host bits kept");
    }

    /// §2.3: "excessive" nesting is 257 — the 257th lock inflates, carrying the count over.
    #[test]
    fn lock_257_inflates_and_stays_fat() {
        let rt = Runtime::<Thin>::with_defaults();
        let me = rt.attach().unwrap();
        let h = LockWord::new(0xa5);
        let mut gs: Vec<_> = (0..256).map(|_| me.enter(&h).unwrap()).collect();
        assert_eq!(h.raw() >> 31, 0);
        gs.push(me.enter(&h).unwrap());
        assert_eq!(h.raw() >> 31, 1, "shape bit set");
        assert_eq!(h.raw() & 0xff, 0xa5);
        assert_eq!(me.lock_count(&h), 257);
        assert_eq!(rt.stats_snapshot().inflations_recursion, 1);
        drop(gs);
        // §2.3: "Once an object's lock is inflated, it remains inflated".
        assert_eq!(h.raw() >> 31, 1);
        assert_eq!(rt.owner_of(&h), None);
        drop(me.enter(&h).unwrap());
        assert_eq!(rt.stats_snapshot().inflations(), 1);
    }

    /// §2.3.4: a contender inflates after the owner releases; host bits survive.
    #[test]
    fn contention_inflates() {
        let rt = Runtime::<Thin>::with_defaults();
        let h = LockWord::new(0x3c);
        let me = rt.attach().unwrap();
        let g = me.enter(&h).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                let other = rt.attach().unwrap();
                drop(other.enter(&h).unwrap());
            });
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert_eq!(
                h.raw() >> 31,
                0,
                "the contender never writes an owned thin lock"
            );
            drop(g);
        });
        assert_eq!(h.raw() >> 31, 1);
        assert_eq!(h.raw() & 0xff, 0x3c);
        assert_eq!(rt.stats_snapshot().inflations_contention, 1);
    }

    /// wait and notify inflate (a thin lock has no wait set), keeping the count.
    #[test]
    fn wait_inflates_with_count() {
        let rt = Runtime::<Thin>::with_defaults();
        let me = rt.attach().unwrap();
        let h = LockWord::new(0);
        let _a = me.enter(&h).unwrap();
        let b = me.enter(&h).unwrap();
        b.notify().unwrap();
        assert_eq!(h.raw() >> 31, 1);
        assert_eq!(me.lock_count(&h), 2);
        assert_eq!(rt.stats_snapshot().inflations_wait_notify, 1);
    }

    /// Hashing a free object inflates it with one CAS (the monitor holds the hash, host bits
    /// stay); a lock held by another thread parks the hash in the side table, and the next
    /// hash after the release moves it into a monitor. Either way the object stays fat.
    #[test]
    fn hash_inflates_or_parks() {
        let rt = Runtime::<Thin>::with_defaults();
        let me = rt.attach().unwrap();
        let h = LockWord::new(0x5a);
        let v = me.identity_hash(&h).unwrap();
        assert_eq!(h.raw() >> 31, 1, "inflated to hold the hash");
        assert_eq!(h.raw() & 0xff, 0x5a);
        assert_eq!(monitor_of(&rt, h.raw()).identity_hash(), Some(v));
        drop(me.enter(&h).unwrap());
        assert_eq!(me.identity_hash(&h), Ok(v));
        assert_eq!(rt.stats_snapshot().inflations_identity_hash, 1);

        let h2 = LockWord::new(0xa5);
        let g = me.enter(&h2).unwrap();
        let w = std::thread::scope(|s| {
            s.spawn(|| rt.attach().unwrap().identity_hash(&h2).unwrap())
                .join()
                .unwrap()
        });
        assert_eq!(
            h2.raw() >> 31,
            0,
            "held by another thread: the word is not touched"
        );
        assert_eq!(rt.side_hashes().lock().get(addr(&h2)), Some(w));
        assert_eq!(rt.peek_identity_hash(&h2), Some(w));
        drop(g);
        assert_eq!(h2.raw(), 0xa5, "the owner's plain-store unlock");
        assert_eq!(me.identity_hash(&h2), Ok(w));
        assert_eq!(h2.raw() >> 31, 1);
        assert!(rt.side_hashes().lock().is_empty(), "moved into the monitor");
        assert_eq!(rt.peek_identity_hash(&h2), Some(w));
    }

    /// A parked hash follows its object when a moving GC reports the move.
    #[test]
    fn parked_hash_is_relocated() {
        let rt = Runtime::<Thin>::with_defaults();
        let me = rt.attach().unwrap();
        let old = LockWord::new(0x11);
        let g = me.enter(&old).unwrap();
        let v = std::thread::scope(|s| {
            s.spawn(|| rt.attach().unwrap().identity_hash(&old).unwrap())
                .join()
                .unwrap()
        });
        drop(g);
        let new = LockWord::new(0);
        new.0.store(old.raw(), Ordering::Relaxed); // the GC copies the word verbatim
        rt.relocate(&old, &new);
        assert_eq!(rt.peek_identity_hash(&new), Some(v));
        assert_eq!(me.identity_hash(&new), Ok(v));
        assert_eq!(new.raw() & 0xff, 0x11);
    }
}
