//! Deflation: giving an idle fat monitor back to its object, for the protocols whose header can
//! return from the monitor state (`stack` and `lightweight`; seed 001's HotSpot deflates
//! asynchronously, seed 000's thin locks never do).
//!
//! **The race.** A thread reads the monitor index from a header and then uses the monitor; in
//! between, a deflater may restore the header and put the monitor back on the table's free
//! list, and another object may get it. HotSpot's answer (`ObjectMonitor::deflate_monitor`)
//! is kept, with the crate's pieces:
//!
//! | step | HotSpot                                   | here                                        |
//! |------|-------------------------------------------|---------------------------------------------|
//! | 0    | (the deflater walks the in-use list)      | announce, check the header names the monitor |
//! | 1    | CAS `owner` null → `DEFLATER_MARKER`       | `try_lock` of the monitor's system lock (waiting out a stale first try) |
//! | 2    | wait set empty, `contentions == 0`         | wait set empty                              |
//! | 3    | CAS `contentions` 0 → `-max_jint`          | CAS `contentions` 1 (its own) → `DEFLATING` |
//! | 4    | restore the header (CAS)                   | CAS monitor word → `host | 01`             |
//! | 5    | free after a handshake                     | unlock, clear `DEFLATING`, free at once     |
//!
//! **Enter: the system lock first** (HotSpot's `TryLock` before its
//! `ContentionMark`). A thread that found the monitor in a header and does not own it first
//! tries its system lock, unannounced. Got it: it re-reads the header, and if the header
//! still names the monitor the monitor is the object's (a deflater restores the header
//! before it lets go of the lock, and our Acquire saw that release), so it takes the owner
//! field; else it lets go and re-reads the header. That is one compare-and-swap on the
//! monitor's line per uncontended enter, as `thin`'s fat path pays, instead of three
//! read-modify-writes (announce, lock, end the announcement), each a transfer of the line
//! that the system lock's spinners keep reading (measured: docs/benchmarks.md).
//!
//! **Announced: whoever must wait.** A thread whose first try failed announces itself
//! ([`FatMonitor::add_contention`]): if `DEFLATING` is already set it backs off and re-reads
//! the header; otherwise step 3 fails until it is done. Having announced itself it re-reads
//! the header: if the header no longer names the monitor, the monitor was deflated (and maybe
//! reused) before the announcement, and it backs off. Otherwise the monitor is the object's
//! and stays so until the announcement ends, so it may spin and sleep in the system lock.
//! Once it owns the monitor it ends the announcement (the lock keeps deflaters out from
//! then on). Waiters stay announced for their whole wait (a notified waiter is out of the
//! wait set but not yet back in the monitor). Owners are never announced.
//!
//! **A stale first try.** A header's index may be stale when the first try takes the lock:
//! the monitor deflated, freed and handed to another inflation meanwhile. The thread then
//! holds another object's (or a free) monitor's lock for a header check, with no owner, and
//! lets go. So the two others that take a lock they believe free wait for such a holder
//! instead of failing: an inflation ([`FatMonitor::enter_inflated_for`]) and a deflater's
//! claim (step 1, as long as the owner field is empty). Step 5 may free at once, without
//! HotSpot's handshake, because the table is type-stable: a late reader of the index finds
//! *a* monitor and the re-checks above send it away. Step 0 announces the deflater too: its
//! index, read from a header, may be stale (HotSpot's comes from its in-use list), and only a
//! pinned monitor is known to be the object's. Its announcement counts in step 3, so two
//! deflaters of one monitor refuse each other; the last one out tries again.
//!
//! **The last one out.** An owner's last exit tries to deflate (the eager policy) if nobody
//! is announced then (read after the system lock's SeqCst fence; the claim checks exactly).
//! Every announced thread is an enterer or a waiter, which owns the monitor and exits after
//! us, or a deflater, which retries when it leaves last and finds the owner field empty
//! ([`try_deflate`], the `Busy` and `Contended` arms), or an owner query or a `try_enter`
//! that found the monitor busy, which does the same when it leaves (`end_pin`); so the last
//! one out still deflates. (Only an announcement whose header check failed — the monitor is
//! another object's by then — ends without asking: it cannot deflate that object.)
//!
//! Models: `tests/loom_hotspot.rs` (against enter, a notified waiter, a monitor's reuse).

use crate::monitor::{FatMonitor, PinnedClaim};
use crate::protocol::mark::{index_of, monitor_word, names, MARK_KEPT_BITS, MONITOR, UNLOCKED};
use crate::protocol::Protocol;
use crate::protocol::ThreadContext;
use crate::runtime::Runtime;
use crate::sync::{yield_now, AtomicU64, Ordering};
use crate::table::MonitorIndex;
use crate::thread::AttachedThread;
use crate::MonitorError;

/// When an idle fat monitor goes back to its object (see [`Config`](crate::vm::Config)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeflationPolicy {
    /// Never: a fat lock stays fat until the object is reclaimed (as seed 000's thin locks).
    Never,
    /// When the last owner exits and nobody enters or waits, provided more than `keep`
    /// monitors are live. `keep` plays HotSpot's `MonitorUsedDeflationThreshold`: a reserve
    /// of monitors that churn (inflate, deflate, inflate) would otherwise cost.
    AtExit {
        /// Live monitors left alone.
        keep: u32,
    },
    /// Only when the host asks, per object, through `deflate_idle` of the protocol
    /// ([`Stack::deflate_idle`](crate::Stack::deflate_idle),
    /// [`Lightweight::deflate_idle`](crate::Lightweight::deflate_idle)) — e.g. from its GC's
    /// object walk, which plays HotSpot's background deflation thread (a library cannot walk
    /// the host's heap itself).
    OnRequest,
}

impl Default for DeflationPolicy {
    /// [`AtExit`](Self::AtExit) with `keep: 0`: live monitors fall to zero once contention
    /// ends.
    fn default() -> Self {
        Self::AtExit { keep: 0 }
    }
}

/// How a protocol finds the monitor of a header in the monitor state (lock bits `10`): by the
/// index in the word (the default methods) or through a side table
/// ([`ObjectMonitorTable`](crate::protocol::omt::ObjectMonitorTable)).
pub(crate) trait Locate: Protocol {
    /// The monitor that `w` (read from `h`, lock bits `10`) names; `None` if `h` has changed.
    #[inline]
    fn locate(rt: &Runtime<Self>, h: &AtomicU64, w: u64) -> Option<MonitorIndex> {
        let _ = (rt, h);
        Some(index_of(w))
    }

    /// Whether `cur` (just read from `h`) names monitor `idx`.
    #[inline]
    fn names(rt: &Runtime<Self>, h: &AtomicU64, cur: u64, idx: MonitorIndex) -> bool {
        let _ = (rt, h);
        names(cur, idx)
    }

    /// Replaces `w` (lock bits `00` or `01`) by the monitor state naming `idx`, with one
    /// compare-and-swap; `false` if `h` no longer holds `w`.
    #[inline]
    fn install(rt: &Runtime<Self>, h: &AtomicU64, w: u64, idx: MonitorIndex) -> bool {
        let _ = rt;
        h.compare_exchange(w, monitor_word(w, idx), Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Replaces `cur`, which names `idx`, by the unlocked word with `cur`'s host bits;
    /// `Err(now)` if `h` no longer holds `cur`.
    #[inline]
    fn uninstall(
        rt: &Runtime<Self>,
        h: &AtomicU64,
        cur: u64,
        idx: MonitorIndex,
    ) -> Result<(), u64> {
        let _ = (rt, idx);
        h.compare_exchange(
            cur,
            (cur & MARK_KEPT_BITS) | UNLOCKED,
            Ordering::SeqCst,
            Ordering::Acquire,
        )
        .map(|_| ())
    }
}

/// Deflates the monitor of header word `h` if nobody owns, enters or waits on it (the
/// protocols' public `deflate_idle`).
pub(crate) fn deflate_idle<P: Locate>(rt: &Runtime<P>, h: &AtomicU64) -> bool {
    let w = h.load(Ordering::Acquire);
    w & 0b11 == MONITOR && P::locate(rt, h, w).is_some_and(|idx| try_deflate(rt, h, idx))
}

/// Steps 1–5 of the module documentation for monitor `idx`, which `h` named when read.
pub(crate) fn try_deflate<P: Locate>(rt: &Runtime<P>, h: &AtomicU64, idx: MonitorIndex) -> bool {
    // Another runtime's index (a header used with two runtimes): not ours to deflate.
    let Some(m) = rt.monitors().try_get(idx) else {
        return false;
    };
    // `idx` may be stale: since it was read (or since the caller exited it), the monitor may
    // have been deflated by another thread, freed, and allocated for another inflation that
    // has not locked it yet. Taking its system lock then would make that inflation fail. So
    // pin it first, as any other user of a monitor found in a header does, and only then
    // touch its lock.
    loop {
        if !m.add_contention() {
            return false;
        }
        if !P::names(rt, h, h.load(Ordering::SeqCst), idx) {
            m.remove_contention();
            return false;
        }
        match m.try_begin_deflation_pinned() {
            PinnedClaim::Claimed => break,
            // Owned (or waited on, entered). An owner is not announced, so at its exit it
            // reads our pin as company and leaves the attempt to us ("The last one out"):
            // if ours was the last announcement and the owner field is empty by now, try
            // again.
            PinnedClaim::Busy => {
                if !m.remove_contention_leaves_it_unowned() {
                    return false;
                }
            }
            // Two deflaters announced at once refuse each other; the last one to leave tries
            // again, so that an idle monitor is not left behind. (Any other announced thread
            // enters, waits or asks for the owner; an enterer deflates at its own exit.)
            PinnedClaim::Contended => {
                if !m.remove_contention_was_last() {
                    return false;
                }
            }
        }
    }
    let mut cur = h.load(Ordering::Acquire);
    let restored = loop {
        if cur & 0b11 != MONITOR || !P::names(rt, h, cur, idx) {
            // Deflated and reused by another object before we claimed it: not ours to undo.
            break false;
        }
        // A CAS, not a store: the host may change its bits concurrently.
        match P::uninstall(rt, h, cur, idx) {
            Ok(()) => break true,
            Err(now) => cur = now,
        }
    };
    // Unlock before freeing: once free, the monitor may be taken and locked for another object.
    m.finish_deflation();
    if restored {
        // The binding, read before the free forgets it.
        let object = m.object.load(Ordering::Relaxed);
        rt.monitors().free(idx);
        rt.stats().deflated();
        // Events on: by the calling thread, when it is attached (a host's collector thread
        // calling `deflate_idle` may not be: then nothing names its thread, and nothing is
        // reported). No internal lock is held here.
        if crate::events::on(rt.events()) {
            if let Some(by) = rt.current_thread_id() {
                rt.report_deflation(by, object, idx.get());
            }
        }
    }
    restored
}

/// The eager policy, after `t`'s exit of `idx` left it unowned.
#[inline]
pub(crate) fn after_release<P: Locate>(rt: &Runtime<P>, h: &AtomicU64, idx: MonitorIndex) {
    if let DeflationPolicy::AtExit { keep } = rt.config().deflation {
        if rt.monitors().live() > keep as usize {
            try_deflate(rt, h, idx);
        }
    }
}

/// What happened on the monitor path of an enter.
pub(crate) enum Via {
    /// `t` holds the monitor (one more level).
    Entered,
    /// `try_enter` only: another thread holds it.
    Busy,
    /// The header changed under us (deflation): start again from the header.
    Retry,
}

/// A protocol's inline `enter` on a header in the monitor state: the unannounced first try of
/// [`enter_monitor`] ("Enter: the system lock first") and nothing else. `true`: `t` owns the
/// monitor (one level) and `h` named it when we took it. `false`: nothing changed — the
/// monitor was busy, `t` already owned it (a nested enter), it is another runtime's, or `h`
/// moved on — and the caller's slow path starts again from the header.
///
/// Why called straight from `enter`: a waiter spins read-only on the
/// monitor's lock word and takes it when it sees it free, and the owner of a tight loop
/// leaves it free only between its release and its next compare-and-swap; the shorter that
/// gap, the less often the monitor crosses the cores (`cacao.rs`, "Why the inline fast path
/// matters under contention"). Through the slow path (its loop, the header's other states,
/// the owner check) the gap is longer (docs/benchmarks.md has the ratios). Out of line, so
/// that `enter` stays small enough to inline into the caller's loop.
#[inline(never)]
pub(crate) fn try_enter_inflated<P: Locate>(
    rt: &Runtime<P>,
    t: &ThreadContext<P>,
    h: &AtomicU64,
    w: u64,
) -> bool {
    let Some(idx) = P::locate(rt, h, w) else {
        return false;
    };
    let Some(m) = rt.monitors().try_get(idx) else {
        return false;
    };
    !m.is_owned_by(t.core()) && take_unannounced(rt, t, h, m, idx) == Some(true)
}

/// "Enter: the system lock first": takes `m`'s system lock if it is free right now, without
/// announcing ourselves, and keeps it if `h` still names `idx` (then `t` owns `m`, one level).
/// `None`: busy; `Some(true)`: entered; `Some(false)`: `h` no longer names `idx` (deflated
/// since it was read, maybe another object's now), the lock given back. For a `t` that does
/// not own `m`.
#[inline(always)]
fn take_unannounced<P: Locate>(
    rt: &Runtime<P>,
    t: &ThreadContext<P>,
    h: &AtomicU64,
    m: &FatMonitor,
    idx: MonitorIndex,
) -> Option<bool> {
    if !m.try_lock_unowned() {
        return None;
    }
    // The Acquire of the lock orders the header load after it: a deflater restores the
    // header before it unlocks.
    if P::names(rt, h, h.load(Ordering::Acquire), idx) {
        m.own_locked(t.core());
        return Some(true);
    }
    // SAFETY: our `try_lock_unowned` just returned true.
    unsafe { m.release_unowned() };
    Some(false)
}

/// Enters the monitor named by `w` (read from `h`), for a thread that may or may not own it
/// already. Blocks when `block`, else tries.
pub(crate) fn enter_monitor<P: Locate>(
    rt: &Runtime<P>,
    t: &ThreadContext<P>,
    h: &AtomicU64,
    w: u64,
    block: bool,
) -> Result<Via, MonitorError> {
    let Some(idx) = P::locate(rt, h, w) else {
        return Ok(Via::Retry);
    };
    // Another runtime's index: `ForeignHeader`, never a monitor of ours (table.rs). Not a
    // race with deflation: this table's chunks stay its own while it lives.
    let m = rt.monitors().checked(idx)?;
    if m.is_owned_by(t.core()) {
        // Owned monitors are never deflated, so if `h` names it now it is `h`'s.
        if !P::names(rt, h, h.load(Ordering::Acquire), idx) {
            return Ok(Via::Retry);
        }
        m.enter(t.core_arc())?;
        return Ok(Via::Entered);
    }
    // The first try, unannounced ("Enter: the system lock first").
    match take_unannounced(rt, t, h, m, idx) {
        Some(true) => return Ok(Via::Entered),
        Some(false) => return Ok(Via::Retry),
        None => {}
    }
    if !m.add_contention() {
        yield_now();
        return Ok(Via::Retry);
    }
    if !P::names(rt, h, h.load(Ordering::SeqCst), idx) {
        m.remove_contention();
        return Ok(Via::Retry);
    }
    let r = if block {
        m.enter(t.core_arc()).map(|()| true)
    } else {
        m.try_enter(t.core())
    };
    if r == Ok(true) {
        // Owners are not announced: once in, the system lock keeps deflaters out.
        m.remove_contention();
    } else {
        end_pin(rt, h, m, idx);
    }
    match r {
        Ok(true) => Ok(Via::Entered),
        Ok(false) => Ok(Via::Busy),
        Err(e) => Err(e),
    }
}

/// The monitor named by `w` (read from `h`) and its index if `t` owns it and it is `h`'s;
/// `None` if `t` does not own it; `Err(())` if `h` no longer names it (re-read the header).
#[inline]
#[allow(clippy::type_complexity)]
pub(crate) fn owned_monitor<'r, P: Locate>(
    rt: &'r Runtime<P>,
    t: &ThreadContext<P>,
    h: &AtomicU64,
    w: u64,
) -> Result<Option<(&'r FatMonitor, MonitorIndex)>, ()> {
    let idx = P::locate(rt, h, w).ok_or(())?;
    // Another runtime's index: not owned by `t` (table.rs).
    let Some(m) = rt.monitors().try_get(idx) else {
        return Ok(None);
    };
    // Owned monitors are never deflated, so if `h` names it now it is `h`'s; and if `t` does
    // not own it, `t` does not own `h` either (possibly a stale index, but `t`'s own
    // ownership of `h` cannot change behind its back).
    let owned = m.is_owned_by(t.core());
    if !P::names(rt, h, h.load(Ordering::Acquire), idx) {
        return Err(());
    }
    Ok(owned.then_some((m, idx)))
}

/// monitorexit through the monitor `m` (index `idx`) that `t` owns; after the last level,
/// the eager policy if nobody is announced (see "The last one out": an announced thread
/// enters, waits or deflates after us and asks in turn).
pub(crate) fn exit_owned<P: Locate>(
    rt: &Runtime<P>,
    t: &ThreadContext<P>,
    h: &AtomicU64,
    m: &FatMonitor,
    idx: MonitorIndex,
) -> Result<(), MonitorError> {
    // "The last one out" is a Dekker: our clearing of the owner, then our read of the
    // announcements, against a contender's decrement, then its read of the owner
    // (`FatMonitor::remove_contention_leaves_it_unowned`). The default release (`tasuki.rs`)
    // has only a compiler barrier, whose other side is a suspender's `membarrier`, not this
    // contender: ask for the fenced release (Figure 7's, fence before the releasing store).
    m.exit_fenced(t.core())?;
    if !m.is_owned_by(t.core()) && m.no_contention() {
        after_release(rt, h, idx);
    }
    Ok(())
}

/// Object.wait through the monitor `m` that `t` owns: announced for the whole wait, so that no
/// deflater takes the monitor while `t` is between notification and re-entry.
pub(crate) fn wait_owned<S>(
    t: &AttachedThread<S>,
    m: &FatMonitor,
    deadline: Option<std::time::Instant>,
) -> Result<crate::WaitOutcome, MonitorError> {
    // Cannot fail: `t` holds the system lock, which a deflater needs before setting DEFLATING.
    let announced = m.add_contention();
    debug_assert!(announced);
    let r = m.wait(t.core_arc(), deadline);
    m.remove_contention();
    r
}

/// The raw owner of the monitor named by `w` (read from `h`) while `h` names it (0 for another
/// runtime's monitor index), or `None` if `h` changed (re-read). [`ANONYMOUS_OWNER`](crate::monitor::ANONYMOUS_OWNER) is returned as
/// is.
pub(crate) fn monitor_owner<P: Locate>(rt: &Runtime<P>, h: &AtomicU64, w: u64) -> Option<u32> {
    let idx = P::locate(rt, h, w)?;
    // Another runtime's index: no owner of ours (0), an answer, not a re-read.
    let Some(m) = rt.monitors().try_get(idx) else {
        return Some(0);
    };
    if !m.add_contention() {
        yield_now();
        return None;
    }
    let r = P::names(rt, h, h.load(Ordering::SeqCst), idx).then(|| m.owner_raw());
    if r.is_some() {
        end_pin(rt, h, m, idx);
    } else {
        // Another object's monitor by now: not ours to deflate.
        m.remove_contention();
    }
    r
}

/// Ends the announcement of a thread that pinned `m` (index `idx`, checked to be `h`'s)
/// without owning it: an owner query, a `try_enter` that found it busy. An owner's last exit
/// that read this announcement as company left the deflation attempt to us ("The last one
/// out"), so if ours was the last and the owner field is empty by now, the eager policy runs
/// here, as in `try_deflate`'s `Busy` arm.
fn end_pin<P: Locate>(rt: &Runtime<P>, h: &AtomicU64, m: &FatMonitor, idx: MonitorIndex) {
    if m.remove_contention_leaves_it_unowned() {
        after_release(rt, h, idx);
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
    use crate::vm::{Config, DeflationPolicy, Lightweight, Protocol, Runtime, Stack};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::time::Duration;

    /// "Live fat monitors fall back to near zero after contention ends": four
    /// threads contend on four objects, with waits; once they are done, the eager policy has
    /// given every monitor back and the books balance. `Never` keeps them all.
    fn falls_back_to_zero<P: Protocol>(policy: DeflationPolicy) -> (u64, u64, usize) {
        let rt = hosted::<P>(Config {
            deflation: policy,
            ..Config::default()
        });
        let hs: Vec<P::Header> = (0..4).map(|_| P::Header::default()).collect();
        let inside: Vec<AtomicBool> = (0..4).map(|_| AtomicBool::new(false)).collect();
        let sum = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for t in 0..4 {
                let (rt, hs, inside, sum) = (&rt, &hs, &inside, &sum);
                s.spawn(move || {
                    let me = rt.attach().unwrap();
                    for i in 0..2_000 {
                        let k = (i + t) % 4;
                        let g = me.enter(&hs[k]).unwrap();
                        assert!(!inside[k].swap(true, Ordering::Relaxed), "two owners");
                        sum.fetch_add(1, Ordering::Relaxed);
                        inside[k].store(false, Ordering::Relaxed);
                        if i % 200 == 0 {
                            g.wait(Some(Duration::from_micros(50))).unwrap();
                        }
                        drop(g);
                    }
                });
            }
        });
        assert_eq!(sum.into_inner(), 8_000);
        for h in &hs {
            assert_eq!(rt.owner_of(h), None);
        }
        let s = rt.stats_snapshot();
        (s.inflations(), s.deflations, s.live_monitors)
    }

    #[test]
    fn eager_deflation_returns_every_monitor() {
        for (name, (inflations, deflations, live)) in [
            (
                "stack",
                falls_back_to_zero::<Stack>(DeflationPolicy::default()),
            ),
            (
                "lightweight",
                falls_back_to_zero::<Lightweight>(DeflationPolicy::default()),
            ),
        ] {
            assert!(inflations >= 4, "{name}: waits inflate");
            assert_eq!(live, 0, "{name}: all deflated");
            assert_eq!(inflations, deflations, "{name}");
        }
        let (inflations, deflations, live) =
            falls_back_to_zero::<Lightweight>(DeflationPolicy::Never);
        assert_eq!((deflations, live as u64), (0, inflations));
    }

    /// Owner queries under concurrent locking: an object its owner holds throughout is always
    /// reported as held by it, however the owner reshuffles its lock stack or records around
    /// it (other objects in and out of order, recursion, inflation by a contender); an object
    /// that only the churning thread locks is reported as that thread or as free, never
    /// another.
    fn owner_query_under_churn<P: Protocol>() {
        let rt = hosted::<P>(Config::default());
        let held = P::Header::default();
        let (x, y) = (P::Header::default(), P::Header::default());
        let stop = AtomicBool::new(false);
        let ready = std::sync::Barrier::new(3);
        let owner_id = std::sync::OnceLock::new();
        let rounds = AtomicUsize::new(0);
        std::thread::scope(|s| {
            let owner = s.spawn(|| {
                let me = rt.attach().unwrap();
                owner_id.set(me.id()).unwrap();
                me.monitor_enter(&x).unwrap();
                me.monitor_enter(&held).unwrap();
                ready.wait();
                while !stop.load(Ordering::Relaxed) {
                    rounds.fetch_add(1, Ordering::Relaxed);
                    me.monitor_exit(&x).unwrap(); // out of order: `held` slides down
                    me.monitor_enter(&y).unwrap();
                    me.monitor_enter(&held).unwrap(); // recursive, not adjacent
                    me.monitor_enter(&x).unwrap();
                    me.monitor_exit(&y).unwrap();
                    me.monitor_exit(&held).unwrap();
                }
                me.monitor_exit(&held).unwrap();
                me.monitor_exit(&x).unwrap();
            });
            // A contender on `x` forces inflations (anonymous / INFLATING) now and then.
            s.spawn(|| {
                let me = rt.attach().unwrap();
                ready.wait();
                while !stop.load(Ordering::Relaxed) {
                    drop(me.enter(&x).unwrap());
                }
            });
            ready.wait();
            let owner_id = *owner_id.get().unwrap();
            // Stop the others even if an assertion fails, or the scope would never end.
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut queries = 0;
                while queries < 20_000 || rounds.load(Ordering::Relaxed) < 2_000 {
                    assert_eq!(rt.owner_of(&held), Some(owner_id), "{}", P::NAME);
                    let y_owner = rt.owner_of(&y);
                    assert!(
                        y_owner.is_none() || y_owner == Some(owner_id),
                        "{}",
                        P::NAME
                    );
                    queries += 1;
                }
            }));
            stop.store(true, Ordering::Relaxed);
            if let Err(p) = r {
                std::panic::resume_unwind(p);
            }
            owner.join().unwrap();
        });
        assert_eq!(rt.owner_of(&held), None);
    }

    /// Bug (stress: `stack` "wait: IllegalMonitorState", `lightweight-seed` "enter:
    /// IllegalMonitorState", and the C toy VM hanging behind a worker that bailed out on that
    /// error while holding a lock): a deflater whose index had gone stale — the monitor was
    /// deflated by another thread, freed, and allocated for another inflation since — took
    /// that monitor's system lock, so the inflation's `enter_inflated_for` found its fresh
    /// monitor locked and failed. Here one thread keeps deflating through the stale index while
    /// the other keeps allocating that very monitor (the free list is last in, first out) and
    /// entering it fresh: every such enter must succeed.
    #[test]
    fn stale_deflater_never_locks_a_reallocated_monitor() {
        use crate::protocol::mark::index_of;
        use crate::vm::MarkWord;
        let rt = hosted::<Lightweight>(Config {
            deflation: DeflationPolicy::OnRequest,
            ..Config::default()
        });
        let h = MarkWord::default();
        {
            let me = rt.attach().unwrap();
            let g = me.enter(&h).unwrap();
            g.wait(Some(Duration::ZERO)).unwrap();
        }
        let idx = index_of(h.raw());
        assert!(super::deflate_idle(&rt, &h.0));
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    assert!(!super::try_deflate(&rt, &h.0, idx), "h names no monitor");
                }
            });
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                for _ in 0..200_000 {
                    let i = rt.monitors().allocate().unwrap();
                    assert_eq!(i, idx, "the free list hands the same monitor back");
                    let m = rt.monitors().get(i);
                    assert_eq!(
                        m.enter_inflated_for(crate::monitor::ANONYMOUS_OWNER, 0),
                        Ok(()),
                        "a fresh monitor is never locked by a stale deflater"
                    );
                    m.abandon_fresh();
                    rt.monitors().free(i);
                }
            }));
            stop.store(true, Ordering::Relaxed);
            if let Err(p) = r {
                std::panic::resume_unwind(p);
            }
        });
    }

    #[test]
    fn owner_queries_under_churn() {
        owner_query_under_churn::<Stack>();
        owner_query_under_churn::<Lightweight>();
        owner_query_under_churn::<crate::LightweightTable>();
    }
}
