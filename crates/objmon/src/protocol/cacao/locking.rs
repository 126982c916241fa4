//! The locking paths of `cacao` and `cacao-seed` between the entry points and the table: the
//! first entry's lock-free try under rule M (`first_if`, `first_lock`), the contended enter
//! that pins and sleeps, and the seed's `lockMutexForObject` / `unlockMutexForObject` under
//! the bucket lock.

use super::*;

impl<const S: bool> CacaoLocks<S> {
    /// The first chain entry's monitor if the entry is `o`'s, read without the bucket lock: a
    /// snapshot, to act on only once the current thread owns that monitor.
    ///
    /// Rule M (module documentation): a first entry's `(obj, mon)` pair changes away from a
    /// pair with monitor `i` only by a thread that holds `i`'s lock (a claim holds it as its
    /// new owner, a reclaim holds the system lock; the one exception, a reclaim clearing
    /// `obj` to 0, no check accepts). So a thread that owns `i` and reads the pair `(o, i)`
    /// reads the pair as it is: nobody changes it while we hold `i`, and whoever changed it
    /// before released `i` after (its release, our acquire: we see the change). A pair that
    /// gets `i` afresh gets it from the monitor table (first use, `mon` stored before `obj`,
    /// Release / Acquire), so reading `mon` first and then `obj` never pairs a new monitor
    /// with an old object either. Hence the fast paths may trust `(o, i)` whenever they own
    /// `i`: the nested enter, every exit, and `first_lock`'s check.
    #[inline]
    pub(super) fn first_if(rt: &Runtime<Self>, o: usize) -> Option<(&Entry, MonitorIndex)> {
        let f = &rt.state().bucket(o).first;
        if f.obj() != o {
            return None;
        }
        f.index().map(|i| (f, i))
    }

    /// The seed's monitorenter of a first entry that `first_if` found `o`'s, without the
    /// bucket lock: take the monitor without sleeping (with `spin`, the entry lock's bounded
    /// read-only spin; without, one compare-and-swap), then check under it that the entry is
    /// still `o`'s with that monitor (rule M, see `first_if`). The owner of a first entry
    /// holds no pin: holding the monitor is what keeps the entry from being claimed. The
    /// caller has checked that `t` does not own `m`.
    #[inline(always)]
    pub(super) fn first_lock(
        t: &ThreadContext<Self>,
        o: usize,
        f: &Entry,
        idx: MonitorIndex,
        m: &FatMonitor,
        spin: bool,
    ) -> Result<FirstLock, MonitorError> {
        // Not `try_enter`: the caller has checked the owner, so its own owner test (and the
        // second load of the owner field) would find nothing.
        let took = if spin {
            m.spin_enter(t.core())
        } else if m.try_lock_unowned() {
            m.own_locked(t.core());
            true
        } else {
            false
        };
        if !took {
            return Ok(FirstLock::Busy);
        }
        // `mon` first (Acquire), then `obj`: see `first_if`.
        if f.index() == Some(idx) && f.obj() == o {
            return Ok(FirstLock::Owned);
        }
        m.exit(t.core())?;
        Ok(FirstLock::Stale)
    }

    /// `cacao`'s monitorenter once its one compare-and-swap failed (`enter`): the owner's
    /// nested enter is not here (`enter` counts it up inline), so the monitor was busy or the
    /// pair stale. Spin on a first entry's monitor (checking the pair under it, as
    /// `first_lock`), then `lockMutexForObject`.
    #[cold]
    #[inline(never)]
    pub(super) fn enter_contended(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        o: usize,
    ) -> Result<(), MonitorError> {
        let mut spun = false;
        if let Some((f, idx)) = Self::first_if(rt, o) {
            let m = rt.monitors().get(idx);
            if m.is_owned_by(t.core()) {
                // A nested enter (`enter`'s inline test finds it first: only we change a pair
                // whose monitor we hold); checked so that the spin below never runs on a
                // monitor of ours.
                return m.enter(t.core_arc());
            }
            match Self::first_lock(t, o, f, idx, m, true)? {
                FirstLock::Owned => return Ok(()),
                FirstLock::Busy => spun = true,
                FirstLock::Stale => {}
            }
        }
        Self::lock_for_object(rt, t, o, false, spun).map(|_| ())
    }

    /// Under the bucket lock: `o`'s monitor if `t` owns it.
    pub(super) fn owned<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        o: usize,
    ) -> Result<&'r FatMonitor, MonitorError> {
        let st = rt.state();
        let b = st.bucket(o);
        let _g = b.lock.lock();
        st.find(b, o)
            .and_then(Entry::index)
            .map(|i| rt.monitors().get(i))
            .filter(|m| m.is_owned_by(t.core()))
            .ok_or(MonitorError::IllegalMonitorState)
    }

    /// `lockMutexForObject`, out of line (`cacao`'s slow path): see `lock_in_bucket`.
    #[cold]
    pub(super) fn lock_for_object(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        o: usize,
        try_only: bool,
        spun: bool,
    ) -> Result<bool, MonitorError> {
        Self::lock_in_bucket(rt, t, o, try_only, spun)
    }

    /// `lockMutexForObject`, under the bucket lock: find or make `o`'s entry (a claimed first
    /// entry comes with its monitor, ours); a nested lock counts up. With `try_only`, or in
    /// `cacao-seed` (the seed's `lockMutex` inside `disablePreemption()`): one try of the
    /// monitor under the bucket lock, and `try_only` stops there. Otherwise pin the entry,
    /// take its monitor with the bucket lock released (blocking), and, owning a first entry,
    /// drop the pin (the monitor keeps the entry). `spun`: the caller has just spun on the
    /// monitor in vain, so go straight to the entry queue.
    #[inline(always)]
    pub(super) fn lock_in_bucket(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        o: usize,
        try_only: bool,
        spun: bool,
    ) -> Result<bool, MonitorError> {
        let st = rt.state();
        let b = st.bucket(o);
        let (m, first) = {
            let _g = b.lock.lock();
            let (e, owned) = st.entry_for(rt, t, b, o)?;
            if owned {
                return Ok(true);
            }
            let m = rt
                .monitors()
                .get(e.index().expect("a used entry has a monitor"));
            let first = std::ptr::eq(e, &b.first);
            if m.is_owned_by(t.core()) {
                // Nested lock (`cacao`: of an object whose entry is not first in its chain;
                // `cacao-seed`: any, the seed's line 10 under `disablePreemption()`).
                return m.enter(t.core_arc()).map(|()| true);
            }
            if try_only || S {
                // The bucket lock keeps the entry `o`'s for the try: no pin needed for it.
                if m.try_enter(t.core())? {
                    if !first {
                        e.set_users(e.users() + 1); // an overflow entry's owner pins it
                    }
                    return Ok(true);
                }
                if try_only {
                    return Ok(false);
                }
            }
            e.set_users(e.users() + 1);
            (m, first)
        };
        if spun {
            m.enter_spun(t.core_arc());
        } else {
            m.enter(t.core_arc())?;
        }
        if first {
            // Our pin kept the entry `o`'s while we blocked; now the monitor does.
            let _g = b.lock.lock();
            b.first.set_users(b.first.users() - 1);
        }
        Ok(true)
    }

    /// `unlockMutexForObject`, out of line (`cacao`'s slow path): see `unlock_in_bucket`.
    #[cold]
    pub(super) fn unlock_for_object(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        o: usize,
    ) -> Result<(), MonitorError> {
        Self::unlock_in_bucket(rt, t, o)
    }

    /// `unlockMutexForObject`, under the bucket lock: `o`'s monitor counts down (released, a
    /// sleeper woken, at the last level); an overflow entry's pin goes with the last level and
    /// an overflow entry nobody pins is freed. A thread that does not own `o`'s monitor gets
    /// an error. `cacao` comes here for overflow entries and errors; `cacao-seed` for every
    /// exit (the seed's `monitorexit()` inside `disablePreemption()`).
    #[inline(always)]
    pub(super) fn unlock_in_bucket(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        o: usize,
    ) -> Result<(), MonitorError> {
        let st = rt.state();
        let b = st.bucket(o);
        let _g = b.lock.lock();
        let e = st.find(b, o).ok_or(MonitorError::IllegalMonitorState)?;
        let m = e
            .index()
            .map(|i| rt.monitors().get(i))
            .ok_or(MonitorError::IllegalMonitorState)?;
        m.exit(t.core())?;
        if !m.is_owned_by(t.core()) && !std::ptr::eq(e, &b.first) {
            st.unpin(rt, b, e);
        }
        Ok(())
    }
}
