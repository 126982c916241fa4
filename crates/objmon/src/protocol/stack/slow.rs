//! The out-of-line paths of `stack`: inflation by a contender (HotSpot's INFLATING protocol)
//! and by the owner (wait, no free record), the slow enter and exit, and the fat monitor for
//! wait / notify.

use super::*;

impl Stack {
    /// A contender inflates the stack-lock `w` (HotSpot's INFLATING protocol). Returns when
    /// the header no longer holds `w`; the caller re-reads it. `IllegalMonitorState` if `w` is
    /// not the address of a lock record (a header word no operation of this crate wrote).
    pub(super) fn inflate_contended(
        rt: &Runtime<Self>,
        by: &ThreadContext<Self>,
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
        r.inflated.store(idx.get(), Ordering::Relaxed);
        // The count is 1 for the base record; recursive records stay with the owner.
        m.set_unpublished_owner(owner);
        h.0.store(monitor_word(displaced, idx), Ordering::Release);
        rt.stats().inflated(cause);
        rt.report_inflation(by.id(), addr(h), idx.get(), cause);
        Ok(())
    }

    /// The owner inflates its own stack-lock (record address `w`, in `t`'s records), or finds
    /// the monitor a contender installed.
    pub(super) fn inflate_owned<'r>(
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
                r.inflated.store(idx.get(), Ordering::Relaxed);
                rt.stats().inflated(cause);
                rt.report_inflation(t.id(), addr(h), idx.get(), cause);
                return Ok(m);
            }
            // A contender got INFLATING in first; its monitor will name us as owner.
            m.abandon_fresh();
            rt.monitors().free(idx);
        }
    }

    #[cold]
    pub(super) fn enter_slow(
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
                Self::inflate_contended(rt, t, h, w, InflationCause::Contention)?;
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
                    rt.report_inflation(t.id(), a, idx.get(), InflationCause::RecursionOverflow);
                    return Ok(true);
                }
                m.abandon_fresh();
                rt.monitors().free(idx);
            }
        }
    }

    #[cold]
    pub(super) fn exit_slow(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &StackWord,
    ) -> Result<(), MonitorError> {
        let rs = t.local();
        match rs.topmost(addr(h)) {
            // A recursive record counts only while its base record is current: the header
            // names the base, or the base was inflated (the monitor came from it). Otherwise
            // both are a forgotten hold's whose header moved away, and a header that safe code
            // swapped to the address must not take them for its own: orphan them, and this
            // exit is about whatever the header at `a` holds now.
            Some((i, false)) => match rs.base_below(i, addr(h)) {
                Some(j) => loop {
                    let w = h.0.load(Ordering::Acquire);
                    if rs.is_current(j, w) {
                        rs.free(i);
                        return Ok(());
                    }
                    if w == INFLATING {
                        yield_now();
                        continue;
                    }
                    rs.orphan(j, addr(h));
                    return Self::exit_slow(rt, t, h);
                },
                None => {
                    // No base record for this address: the header that named one moved here
                    // under a forgotten guard, and this recursive record was taken on it.
                    // If the header names a base record of ours (or the monitor inflated from
                    // one), that base is this lock's, whatever address it recorded.
                    let w = h.0.load(Ordering::Acquire);
                    if rs.base_named_by(i, w) {
                        rs.free(i);
                        return Ok(());
                    }
                    rs.records[i].obj.store(ORPHAN, Ordering::Release);
                    Self::exit_slow(rt, t, h)
                }
            },
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
                } else if rs.is_current(i, w) {
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
    pub(super) fn normalize_zero(h: &StackWord) {
        let _ =
            h.0.compare_exchange(0, UNLOCKED_ZERO, Ordering::Relaxed, Ordering::Relaxed);
    }

    pub(super) fn exit_monitor(
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
    pub(super) fn owned_for_wait<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &StackWord,
    ) -> Result<&'r FatMonitor, MonitorError> {
        Self::inflate_owned(rt, t, h, InflationCause::WaitNotify)
    }
}
