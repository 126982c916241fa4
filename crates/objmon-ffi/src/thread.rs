//! The thread calls: attach, detach, id, safepoint poll and the native transitions.

use super::*;

/// Attaches the calling thread to `rt` and writes its handle to `out`. The handle belongs to
/// this OS thread: any other thread using it gets `OBJMON_E_WRONG_THREAD`.
///
/// Attaching again on a thread already attached to `rt` is not an error: it writes the *same*
/// handle (the same identity, the same locks; JNI's `AttachCurrentThread` on an attached
/// thread) and counts the attach. Each attach is ended by one `objmon_thread_detach`; the
/// thread detaches for real at the last one, so nested libraries may each attach and detach.
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL`, `OBJMON_E_TOO_MANY_THREADS` (`max_threads` attached),
/// `OBJMON_E_PANIC`.
///
/// # Safety
/// `rt` is live; `out` is valid for writes.
#[no_mangle]
pub unsafe extern "C" fn objmon_thread_attach(
    rt: *const objmon_runtime,
    out: *mut *mut objmon_thread,
) -> objmon_status {
    nonnull!(rt, out);
    guarded(|| {
        // SAFETY: contract.
        let rt = unsafe { &*rt };
        let key = rt.inner.key();
        let again = ATTACHED.with(|a| a.borrow().iter().find(|(k, _)| *k == key).map(|e| e.1));
        if let Some(t) = again {
            // SAFETY: a live handle of this thread (listed until its last detach).
            let th = unsafe { &*t };
            th.attaches.set(th.attaches.get() + 1);
            // SAFETY: contract.
            unsafe { out.write(t) };
            return OBJMON_OK;
        }
        match rt.inner.attach() {
            Ok(inner) => {
                let t = Box::into_raw(Box::new(objmon_thread {
                    state: AtomicU64::new(token::mine_or_new()),
                    inner,
                    tag: rt.tag,
                    key,
                    attaches: Cell::new(1),
                    structured: Cell::new(0),
                    unstructured: RefCell::new(Vec::new()),
                    handles: rt.handles.clone(),
                }));
                ATTACHED.with(|a| a.borrow_mut().push((key, t)));
                rt.handles.list().push(t as usize);
                // SAFETY: contract.
                unsafe { out.write(t) };
                OBJMON_OK
            }
            Err(e) => e.into(),
        }
    })
}

/// Ends one `objmon_thread_attach` of the calling thread. At the last one the thread detaches:
/// its unstructured (`objmon_monitor_enter`) locks are released, as JNI's
/// `DetachCurrentThread` does, and their number of lock levels written to `released` (may be
/// NULL; 0 for an attach that was not the last), and `t` is freed.
///
/// Refused, the thread staying attached and `t` valid: `OBJMON_E_LOCKS_HELD` while it holds
/// structured (`objmon_enter`) levels at the last detach (exit them first: a detach cannot
/// know the host's frames), `OBJMON_E_IN_NATIVE` in native, `OBJMON_E_WRONG_THREAD` from
/// another thread.
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL` (`t`), `OBJMON_E_WRONG_THREAD` (a handle of another
/// thread), `OBJMON_E_IN_NATIVE` (in native), `OBJMON_E_LOCKS_HELD`, `OBJMON_E_PANIC`.
///
/// # Safety
/// `t` comes from `objmon_thread_attach` and is not used after its last detach.
#[no_mangle]
pub unsafe extern "C" fn objmon_thread_detach(
    t: *mut objmon_thread,
    released: *mut usize,
) -> objmon_status {
    let th = owned!(t);
    guarded(|| {
        let n = th.attaches.get();
        let mut levels = 0;
        if n > 1 {
            th.attaches.set(n - 1);
        } else {
            if th.structured_levels() != 0 {
                return OBJMON_E_LOCKS_HELD;
            }
            ATTACHED.with(|a| a.borrow_mut().retain(|(k, _)| *k != th.key));
            th.handles.list().retain(|&p| p != t as usize);
            // SAFETY: allocated by objmon_thread_attach, freed once: this is the last detach
            // (contract), and it is off the thread's attach list.
            let th = unsafe { Box::from_raw(t) };
            for (p, n) in th.unstructured.take() {
                for _ in 0..n {
                    // SAFETY: our own handle (checked); the header is alive while held
                    // (contract).
                    if unsafe { th.inner.exit(p as *const objmon_header) }.is_ok() {
                        levels += 1;
                    }
                }
            }
            th.inner.detach();
        }
        if !released.is_null() {
            // SAFETY: non-null and valid for writes by contract.
            unsafe { released.write(levels) };
        }
        OBJMON_OK
    })
}

/// The thread's id (1..=32767); 0 for NULL or a handle of another thread.
///
/// # Safety
/// `t` is NULL or a live thread.
#[no_mangle]
pub unsafe extern "C" fn objmon_thread_id(t: *const objmon_thread) -> u16 {
    // SAFETY: contract.
    match unsafe { objmon_thread::check_any_state(t) } {
        Ok(th) => th.inner.id(),
        Err(_) => 0,
    }
}

/// Safepoint poll. `biased`, `fable` (and their `-seed` variants) revoke a bias held by a
/// running thread through a handshake with it when the kernel refuses `membarrier` (seccomp,
/// old kernels): a thread that runs long stretches of host code without objmon calls should
/// call this now and then, and a thread that blocks outside objmon should be in native
/// (`objmon_enter_native`). Free on the other protocols.
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL`, `OBJMON_E_WRONG_THREAD` (a handle of another thread),
/// `OBJMON_E_IN_NATIVE` (in native), `OBJMON_E_PANIC`.
///
/// # Safety
/// `t` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn objmon_poll(t: *const objmon_thread) -> objmon_status {
    let th = owned!(t);
    // SAFETY: our own context (the owner check above), not in native: see `impl DynThread`.
    guarded(|| unsafe {
        th.inner.poll();
        OBJMON_OK
    })
}

/// The thread leaves objmon for host code that may block (a `read`, a `pthread_join`, a
/// sleep, a GC pause...): until `objmon_leave_native` it counts as being at a safepoint, so
/// a revoker (`biased`, `fable`) never waits for it, and it makes no monitor call (those
/// return `OBJMON_E_IN_NATIVE`; reads like `objmon_lock_count` are fine). Locks held stay
/// held. Call it around every blocking call made while attached (JNI's transition to
/// native). `OBJMON_E_IN_NATIVE` if already in native.
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL`, `OBJMON_E_WRONG_THREAD` (a handle of another thread),
/// `OBJMON_E_IN_NATIVE` (already in native), `OBJMON_E_PANIC`.
///
/// # Safety
/// `t` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn objmon_enter_native(t: *const objmon_thread) -> objmon_status {
    let th = owned!(t);
    guarded(|| {
        // SAFETY: our own context (the owner check above); not in native (checked), so this
        // opens a pair that `objmon_leave_native` alone closes.
        unsafe { th.inner.enter_native() };
        th.state.fetch_or(IN_NATIVE, Ordering::Relaxed);
        OBJMON_OK
    })
}

/// The thread returns from native code (`objmon_enter_native`); it may wait here for a
/// revocation in progress. `OBJMON_E_NOT_IN_NATIVE` if it was not in native.
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL`, `OBJMON_E_WRONG_THREAD` (a handle of another thread),
/// `OBJMON_E_NOT_IN_NATIVE`, `OBJMON_E_PANIC`.
///
/// # Safety
/// `t` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn objmon_leave_native(t: *const objmon_thread) -> objmon_status {
    let th = owned!(t, any_state);
    if th.state.load(Ordering::Relaxed) & IN_NATIVE == 0 {
        return OBJMON_E_NOT_IN_NATIVE;
    }
    guarded(|| {
        // SAFETY: our own context (the owner check above), in native: this closes the pair.
        unsafe { th.inner.leave_native() };
        th.state.fetch_and(!IN_NATIVE, Ordering::Relaxed);
        OBJMON_OK
    })
}
