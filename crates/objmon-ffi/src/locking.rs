//! The monitor calls: enter and exit (structured and unstructured), try-enter, wait, notify,
//! interrupts, owner queries, statistics and the identity hash.

use super::*;

/// monitorenter (structured: pair it with `objmon_exit` on the same thread). The handle
/// counts structured levels: the last detach is refused while any is held.
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL`, `OBJMON_E_WRONG_THREAD` (a handle of another thread),
/// `OBJMON_E_IN_NATIVE` (in native), `OBJMON_E_FOREIGN_HEADER`, `OBJMON_E_MONITOR_TABLE_FULL` (an
/// inflation found no free monitor), `OBJMON_E_RECURSION_OVERFLOW`, `OBJMON_E_PANIC`.
///
/// # Safety
/// `t` is NULL or a live handle; `h` an initialised header of its runtime.
#[no_mangle]
pub unsafe extern "C" fn objmon_enter(
    t: *const objmon_thread,
    h: *mut objmon_header,
) -> objmon_status {
    nonnull!(h);
    let th = owned!(t);
    guarded(|| {
        // SAFETY: our own handle (checked); header contract forwarded.
        let r = unsafe { th.inner.enter(h) };
        // Branch-free, so that the result maps to a status by table as before.
        th.structured.set(th.structured.get() + r.is_ok() as usize);
        status(r)
    })
}

/// monitorexit of an `objmon_enter` (or acquired `objmon_try_enter`).
/// `OBJMON_E_ILLEGAL_MONITOR_STATE` if the thread holds no structured level (an unstructured
/// one is released only by `objmon_monitor_exit` or detach).
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL`, `OBJMON_E_WRONG_THREAD` (a handle of another thread),
/// `OBJMON_E_IN_NATIVE` (in native), `OBJMON_E_ILLEGAL_MONITOR_STATE` (no structured level held),
/// `OBJMON_E_FOREIGN_HEADER`, `OBJMON_E_PANIC`.
///
/// # Safety
/// `t` is NULL or a live handle; `h` an initialised header of its runtime.
#[no_mangle]
pub unsafe extern "C" fn objmon_exit(
    t: *const objmon_thread,
    h: *mut objmon_header,
) -> objmon_status {
    nonnull!(h);
    let th = owned!(t);
    let n = th.structured.get();
    // One signed compare: no structured level held, or unstructured ones to look at.
    if n as isize <= 0
        && (n & !HAS_UNSTRUCTURED == 0
            // SAFETY: our own handle (checked); header contract forwarded.
            || unsafe { th.exit_would_take_unstructured(h) })
    {
        return OBJMON_E_ILLEGAL_MONITOR_STATE;
    }
    guarded(|| {
        // SAFETY: our own handle (checked); header contract forwarded.
        let r = unsafe { th.inner.exit(h) };
        th.structured.set(n - r.is_ok() as usize);
        status(r)
    })
}

/// JNI MonitorEnter (unstructured; released by `objmon_monitor_exit` or the last detach).
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL`, `OBJMON_E_WRONG_THREAD` (a handle of another thread),
/// `OBJMON_E_IN_NATIVE` (in native), `OBJMON_E_FOREIGN_HEADER`, `OBJMON_E_MONITOR_TABLE_FULL`,
/// `OBJMON_E_RECURSION_OVERFLOW`, `OBJMON_E_PANIC`.
///
/// # Safety
/// `t` is NULL or a live handle; `h` an initialised header of its runtime.
#[no_mangle]
pub unsafe extern "C" fn objmon_monitor_enter(
    t: *const objmon_thread,
    h: *mut objmon_header,
) -> objmon_status {
    nonnull!(h);
    let th = owned!(t);
    guarded(|| {
        // SAFETY (both): our own handle (checked); header contract forwarded.
        if unsafe { th.foreign(h) } {
            return OBJMON_E_FOREIGN_HEADER;
        }
        if let Err(e) = unsafe { th.inner.enter(h) } {
            return e.into();
        }
        let mut u = th.unstructured.borrow_mut();
        match u.iter_mut().find(|(p, _)| *p == h as usize) {
            Some((_, n)) => *n += 1,
            None => u.push((h as usize, 1)),
        }
        th.flag_unstructured(&u);
        OBJMON_OK
    })
}

/// JNI MonitorExit of an `objmon_monitor_enter` (`OBJMON_E_ILLEGAL_MONITOR_STATE` if the
/// thread holds `h` by no `objmon_monitor_enter`).
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL`, `OBJMON_E_WRONG_THREAD` (a handle of another thread),
/// `OBJMON_E_IN_NATIVE` (in native), `OBJMON_E_ILLEGAL_MONITOR_STATE` (not held by
/// `objmon_monitor_enter`), `OBJMON_E_FOREIGN_HEADER`, `OBJMON_E_PANIC`.
///
/// # Safety
/// `t` is NULL or a live handle; `h` an initialised header of its runtime.
#[no_mangle]
pub unsafe extern "C" fn objmon_monitor_exit(
    t: *const objmon_thread,
    h: *mut objmon_header,
) -> objmon_status {
    nonnull!(h);
    let th = owned!(t);
    guarded(|| {
        let mut u = th.unstructured.borrow_mut();
        let Some(i) = u.iter().position(|(p, _)| *p == h as usize) else {
            return OBJMON_E_ILLEGAL_MONITOR_STATE;
        };
        // SAFETY: our own handle (checked); header contract forwarded.
        if let Err(e) = unsafe { th.inner.exit(h) } {
            return e.into();
        }
        u[i].1 -= 1;
        if u[i].1 == 0 {
            u.swap_remove(i);
        }
        th.flag_unstructured(&u);
        OBJMON_OK
    })
}

/// Runs `op` on the handle after the owner, null and runtime-tag checks, catching panics.
///
/// # Safety
/// `t` is NULL or a live handle; `h` an initialised header of its runtime.
pub(crate) unsafe fn checked_op(
    t: *const objmon_thread,
    h: *const objmon_header,
    op: impl FnOnce(&objmon_thread) -> objmon_status,
) -> objmon_status {
    nonnull!(h);
    let th = owned!(t);
    // SAFETY: header contract.
    if unsafe { th.foreign(h) } {
        return OBJMON_E_FOREIGN_HEADER;
    }
    guarded(|| op(th))
}

/// Object.notify.
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL`, `OBJMON_E_WRONG_THREAD` (a handle of another thread),
/// `OBJMON_E_IN_NATIVE` (in native), `OBJMON_E_FOREIGN_HEADER`, `OBJMON_E_ILLEGAL_MONITOR_STATE`
/// (not the owner), `OBJMON_E_MONITOR_TABLE_FULL` (inflation for the wait set), `OBJMON_E_PANIC`.
///
/// # Safety
/// `t` is NULL or a live handle; `h` an initialised header of its runtime.
#[no_mangle]
pub unsafe extern "C" fn objmon_notify(
    t: *const objmon_thread,
    h: *mut objmon_header,
) -> objmon_status {
    // SAFETY: forwarded contract; `checked_op` checked the owner.
    unsafe { checked_op(t, h, |th| status(th.inner.notify(h, false))) }
}

/// Object.notifyAll.
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL`, `OBJMON_E_WRONG_THREAD` (a handle of another thread),
/// `OBJMON_E_IN_NATIVE` (in native), `OBJMON_E_FOREIGN_HEADER`, `OBJMON_E_ILLEGAL_MONITOR_STATE`
/// (not the owner), `OBJMON_E_MONITOR_TABLE_FULL` (inflation for the wait set), `OBJMON_E_PANIC`.
///
/// # Safety
/// `t` is NULL or a live handle; `h` an initialised header of its runtime.
#[no_mangle]
pub unsafe extern "C" fn objmon_notify_all(
    t: *const objmon_thread,
    h: *mut objmon_header,
) -> objmon_status {
    // SAFETY: forwarded contract; `checked_op` checked the owner.
    unsafe { checked_op(t, h, |th| status(th.inner.notify(h, true))) }
}

/// Locks `h` if no other thread owns it; `*acquired` says whether it did (structured: an
/// acquired lock is released by `objmon_exit`).
///
/// Statuses: `OBJMON_OK` (acquired or not: see `*acquired`), `OBJMON_E_NULL`,
/// `OBJMON_E_WRONG_THREAD` (a handle of another thread), `OBJMON_E_IN_NATIVE` (in native),
/// `OBJMON_E_FOREIGN_HEADER`, `OBJMON_E_MONITOR_TABLE_FULL`, `OBJMON_E_RECURSION_OVERFLOW`,
/// `OBJMON_E_PANIC`.
///
/// # Safety
/// As `objmon_enter`; `acquired` is valid for writes.
#[no_mangle]
pub unsafe extern "C" fn objmon_try_enter(
    t: *const objmon_thread,
    h: *mut objmon_header,
    acquired: *mut bool,
) -> objmon_status {
    nonnull!(h, acquired);
    let th = owned!(t);
    // SAFETY: our own handle (checked); contract.
    guarded(|| unsafe {
        match th.inner.try_enter(h) {
            Ok(b) => {
                if b {
                    th.structured.set(th.structured.get() + 1);
                }
                acquired.write(b);
                OBJMON_OK
            }
            Err(e) => e.into(),
        }
    })
}

/// Object.wait with Java's timeout convention: `timeout_ns == 0` waits until notified or
/// interrupted, a positive value at most that long, a negative one is
/// `OBJMON_E_INVALID_TIMEOUT`. `outcome` (may be NULL) says whether it was notified.
///
/// Statuses: `OBJMON_OK` (notified or timed out: see `*outcome`), `OBJMON_E_INVALID_TIMEOUT`
/// (checked first), `OBJMON_E_NULL`, `OBJMON_E_WRONG_THREAD` (a handle of another thread),
/// `OBJMON_E_IN_NATIVE` (in native), `OBJMON_E_FOREIGN_HEADER`, `OBJMON_E_ILLEGAL_MONITOR_STATE`
/// (not the owner), `OBJMON_E_INTERRUPTED` (the interrupt status cleared, the lock held again),
/// `OBJMON_E_MONITOR_TABLE_FULL` (inflation for the wait set), `OBJMON_E_PANIC`.
///
/// # Safety
/// As `objmon_enter`; `outcome` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn objmon_wait(
    t: *const objmon_thread,
    h: *mut objmon_header,
    timeout_ns: i64,
    outcome: *mut objmon_wait_outcome,
) -> objmon_status {
    if timeout_ns < 0 {
        return OBJMON_E_INVALID_TIMEOUT;
    }
    let timeout = (timeout_ns > 0).then(|| Duration::from_nanos(timeout_ns as u64));
    // SAFETY: forwarded contract; `checked_op` checked the owner.
    unsafe {
        checked_op(t, h, |th| match th.inner.wait(h, timeout) {
            Ok(o) => {
                if !outcome.is_null() {
                    outcome.write(match o {
                        WaitOutcome::Notified => objmon_wait_outcome::OBJMON_NOTIFIED,
                        WaitOutcome::TimedOut => objmon_wait_outcome::OBJMON_TIMED_OUT,
                    });
                }
                OBJMON_OK
            }
            Err(e) => e.into(),
        })
    }
}

/// How many times the calling thread holds `h` (0: not owner). Returns 0 on a NULL argument
/// or a handle of another thread. Allowed in native.
///
/// # Safety
/// `t` is NULL or a live handle; `h` NULL or an initialised header of its runtime.
#[no_mangle]
pub unsafe extern "C" fn objmon_lock_count(
    t: *const objmon_thread,
    h: *const objmon_header,
) -> u32 {
    // SAFETY: contract.
    let Ok(th) = (unsafe { objmon_thread::check_any_state(t) }) else {
        return 0;
    };
    // SAFETY: contract.
    if h.is_null() || unsafe { th.foreign(h) } {
        return 0;
    }
    // SAFETY: our own handle (checked); contract.
    catch_unwind(AssertUnwindSafe(|| unsafe { th.inner.lock_count(h) })).unwrap_or(0)
}

/// Reads and clears the calling thread's interrupt status (Java's Thread.interrupted()).
/// False for NULL or a handle of another thread. Allowed in native.
///
/// # Safety
/// `t` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn objmon_thread_interrupted(t: *const objmon_thread) -> bool {
    // SAFETY: contract.
    match unsafe { objmon_thread::check_any_state(t) } {
        Ok(th) => catch_unwind(AssertUnwindSafe(|| th.inner.interrupted())).unwrap_or(false),
        Err(_) => false,
    }
}

/// Interrupts thread `id`: sets its interrupt status and wakes it from a wait.
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL`, `OBJMON_E_NO_SUCH_THREAD` (no attached thread has id
/// `id`, or `id` is 0), `OBJMON_E_PANIC`.
///
/// # Safety
/// `rt` is live.
#[no_mangle]
pub unsafe extern "C" fn objmon_interrupt(rt: *const objmon_runtime, id: u16) -> objmon_status {
    nonnull!(rt);
    let Some(id) = ThreadId::new(id) else {
        return OBJMON_E_NO_SUCH_THREAD;
    };
    // SAFETY: contract.
    guarded(|| status(unsafe { &*rt }.inner.interrupt(id)))
}

/// The owner of `h`'s lock: writes its thread id to `owner`, or 0 if unowned (a snapshot).
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL`, `OBJMON_E_FOREIGN_HEADER`, `OBJMON_E_PANIC`.
///
/// # Safety
/// `rt` is live; `h` an initialised header of it; `owner` valid for writes.
#[no_mangle]
pub unsafe extern "C" fn objmon_owner_of(
    rt: *const objmon_runtime,
    h: *const objmon_header,
    owner: *mut u16,
) -> objmon_status {
    nonnull!(rt, h, owner);
    // SAFETY: contract.
    guarded(|| unsafe {
        if foreign((*rt).tag, h) {
            return OBJMON_E_FOREIGN_HEADER;
        }
        owner.write((*rt).inner.owner_of(h).map_or(0, ThreadId::get));
        OBJMON_OK
    })
}

/// Copies the runtime's counters to `out`.
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL`, `OBJMON_E_PANIC`.
///
/// # Safety
/// `rt` is live; `out` valid for writes.
#[no_mangle]
pub unsafe extern "C" fn objmon_stats_get(
    rt: *const objmon_runtime,
    out: *mut objmon_stats,
) -> objmon_status {
    nonnull!(rt, out);
    guarded(|| {
        // SAFETY: contract.
        let s = unsafe { &*rt }.inner.stats();
        let v = objmon_stats {
            inflations: s.inflations(),
            inflations_contention: s.inflations_contention,
            inflations_wait_notify: s.inflations_wait_notify,
            deflations: s.deflations,
            live_monitors: s.live_monitors as u64,
            attached_threads: s.attached_threads as u64,
        };
        // SAFETY: contract.
        unsafe { out.write(v) };
        OBJMON_OK
    })
}

/// The identity hash of the object whose header is `h` (Java's `System.identityHashCode`),
/// written to `out`: installed on the first call, the same value ever after, from any thread,
/// in every lock state. Never 0. Fails only with `OBJMON_E_MONITOR_TABLE_FULL` where the
/// protocol must inflate to store it.
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL`, `OBJMON_E_WRONG_THREAD` (a handle of another thread),
/// `OBJMON_E_IN_NATIVE` (in native), `OBJMON_E_FOREIGN_HEADER`, `OBJMON_E_MONITOR_TABLE_FULL`,
/// `OBJMON_E_PANIC`.
///
/// # Safety
/// As `objmon_enter`; `out` valid for writes.
#[no_mangle]
pub unsafe extern "C" fn objmon_identity_hash(
    t: *const objmon_thread,
    h: *const objmon_header,
    out: *mut u32,
) -> objmon_status {
    nonnull!(out);
    // SAFETY: forwarded contract; `checked_op` checked the owner.
    unsafe {
        checked_op(t, h, |th| match th.inner.identity_hash(h) {
            Ok(v) => {
                out.write(v);
                OBJMON_OK
            }
            Err(e) => e.into(),
        })
    }
}

/// The identity hash installed in `h`, written to `out`, or 0 if none has been asked for
/// (never installs one; for GCs and debuggers, from any thread). `stack` writes 0 while the
/// object is stack-locked (the hash is in the owner's lock record).
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL`, `OBJMON_E_FOREIGN_HEADER`, `OBJMON_E_PANIC`.
///
/// # Safety
/// `rt` is live; `h` an initialised header of it; `out` valid for writes.
#[no_mangle]
pub unsafe extern "C" fn objmon_peek_identity_hash(
    rt: *const objmon_runtime,
    h: *const objmon_header,
    out: *mut u32,
) -> objmon_status {
    nonnull!(rt, h, out);
    // SAFETY: contract.
    guarded(|| unsafe {
        if foreign((*rt).tag, h) {
            return OBJMON_E_FOREIGN_HEADER;
        }
        out.write((*rt).inner.peek_identity_hash(h).unwrap_or(0));
        OBJMON_OK
    })
}

// ---------------------------------------------------------------------------------------------
// Introspection: deadlocks, thread dumps, contention profile.
