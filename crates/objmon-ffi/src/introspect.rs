//! Introspection and GC hooks: deadlock detection, thread dumps, the contention profile and
//! `objmon_relocate`.

use super::*;

/// One edge of a deadlock cycle: `thread` waits to lock `object`, held by `held_by`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct objmon_deadlock_edge {
    /// Which cycle (0, 1, ...): the edges of one cycle are consecutive, in cycle order.
    pub cycle: u32,
    /// The blocked thread's id.
    pub thread: u16,
    /// The id of the thread holding `object` (the next edge's `thread`).
    pub held_by: u16,
    /// How many times `held_by` holds it (0 if unknown).
    pub held_count: u32,
    /// The object: the address of its `objmon_header`.
    pub object: usize,
}

/// Contention figures of one object.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct objmon_profile_entry {
    /// The object: the address of its `objmon_header` (0: a monitor never bound to one).
    pub object: usize,
    /// Enters that had to block or spin.
    pub contended_enters: u64,
    /// Nanoseconds spent blocked or spinning on enter.
    pub blocked_ns: u64,
    /// Calls of wait.
    pub waits: u64,
    /// Nanoseconds spent waiting.
    pub waited_ns: u64,
}

pub(crate) trait DynIntrospect {
    fn deadlocks(&self) -> Vec<objmon::vm::Deadlock>;
    unsafe fn dump(&self, objects: &[*const objmon_header]) -> String;
    fn profile(&self) -> Vec<objmon::vm::ObjectProfile>;
}

impl<P: Protocol> DynIntrospect for Rt<P> {
    fn deadlocks(&self) -> Vec<objmon::vm::Deadlock> {
        self.0.find_deadlocks()
    }
    unsafe fn dump(&self, objects: &[*const objmon_header]) -> String {
        // SAFETY: forwarded contract (each pointer an initialised header of this runtime,
        // alive for the call).
        let hs = objects.iter().map(|&h| unsafe { hdr::<P>(h) });
        self.0.thread_dump_with(hs).to_string()
    }
    fn profile(&self) -> Vec<objmon::vm::ObjectProfile> {
        self.0.contention_profile()
    }
}

/// Copies `items` into the caller's array of `cap` (`out` may be NULL when `cap` is 0) and
/// stores the total in `n`.
///
/// # Safety
/// `out` is valid for `cap` writes unless `cap` is 0; `n` is valid for a write.
pub(crate) unsafe fn copy_out<T: Copy>(items: &[T], out: *mut T, cap: usize, n: *mut usize) {
    for (i, &x) in items.iter().take(cap).enumerate() {
        // SAFETY: i < cap, and `out` has room for `cap` items (contract).
        unsafe { out.add(i).write(x) };
    }
    // SAFETY: contract.
    unsafe { n.write(items.len()) };
}

/// Finds deadlocks (cycles of threads blocked on entering monitors), confirmed without
/// stopping any thread (see `objmon::introspect`): may take a few hundred milliseconds. Writes
/// up to `cap` edges to `edges` (NULL allowed when `cap` is 0) and the total number of edges
/// to `n_edges` (0: no deadlock); call again with a larger array if it exceeds `cap`.
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL` (`rt`, `n_edges`, or `edges` with `cap` > 0),
/// `OBJMON_E_PANIC`.
///
/// # Safety
/// `rt` is live; `edges` valid for `cap` writes (or `cap` 0); `n_edges` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn objmon_find_deadlocks(
    rt: *const objmon_runtime,
    edges: *mut objmon_deadlock_edge,
    cap: usize,
    n_edges: *mut usize,
) -> objmon_status {
    nonnull!(rt, n_edges);
    if cap > 0 {
        nonnull!(edges);
    }
    guarded(|| {
        // SAFETY: contract.
        let found = unsafe { &*rt }.inner.deadlocks();
        let flat: Vec<objmon_deadlock_edge> = found
            .iter()
            .enumerate()
            .flat_map(|(c, d)| {
                d.cycle.iter().map(move |e| objmon_deadlock_edge {
                    cycle: c as u32,
                    thread: e.thread.get(),
                    held_by: e.held_by.get(),
                    held_count: e.held_count,
                    object: e.waiting_for.0,
                })
            })
            .collect();
        // SAFETY: contract.
        unsafe { copy_out(&flat, edges, cap, n_edges) };
        OBJMON_OK
    })
}

/// A thread dump as text (jstack's format: per thread its state, the object it waits to lock
/// or waits on, and the objects it holds with counts), NUL-terminated into `buf` of `cap`
/// bytes (truncated if too small; NULL allowed when `cap` is 0); `len` receives the full
/// length without the NUL. `objects` (NULL when `n_objects` is 0) are headers the host can
/// enumerate: thin-locked objects, which no per-thread structure records, are found only
/// through them. Objects appear as their header's address.
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL` (`rt`, `len`, `objects` with `n_objects` > 0 or any of
/// its pointers, `buf` with `cap` > 0), `OBJMON_E_FOREIGN_HEADER` (one of `objects`),
/// `OBJMON_E_PANIC`.
///
/// # Safety
/// `rt` is live; each of the `n_objects` pointers an initialised header of it, alive for the
/// call; `buf` valid for `cap` writes (or `cap` 0); `len` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn objmon_thread_dump(
    rt: *const objmon_runtime,
    objects: *const *const objmon_header,
    n_objects: usize,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
) -> objmon_status {
    nonnull!(rt, len);
    if n_objects > 0 {
        nonnull!(objects);
    }
    if cap > 0 {
        nonnull!(buf);
    }
    guarded(|| {
        let objs = if n_objects == 0 {
            &[][..]
        } else {
            // SAFETY: `objects` points to `n_objects` pointers (contract).
            unsafe { std::slice::from_raw_parts(objects, n_objects) }
        };
        if objs.iter().any(|p| p.is_null()) {
            return OBJMON_E_NULL;
        }
        // SAFETY: each a live header (contract).
        if objs.iter().any(|&p| unsafe { foreign((*rt).tag, p) }) {
            return OBJMON_E_FOREIGN_HEADER;
        }
        // SAFETY: contract.
        let text = unsafe { (*rt).inner.dump(objs) };
        if cap > 0 {
            let k = text.len().min(cap - 1);
            // SAFETY: k + 1 <= cap bytes fit in `buf` (contract); source and destination do
            // not overlap (the text is ours).
            unsafe {
                std::ptr::copy_nonoverlapping(text.as_ptr(), buf as *mut u8, k);
                buf.add(k).write(0);
            }
        }
        // SAFETY: contract.
        unsafe { len.write(text.len()) };
        OBJMON_OK
    })
}

/// The contention profile (empty unless the runtime was made with `profiling` set), most
/// time blocked first: up to `cap` entries into `entries` (NULL allowed when `cap` is 0), the
/// total number into `n`.
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL` (`rt`, `n`, or `entries` with `cap` > 0),
/// `OBJMON_E_PANIC`.
///
/// # Safety
/// `rt` is live; `entries` valid for `cap` writes (or `cap` 0); `n` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn objmon_contention_profile(
    rt: *const objmon_runtime,
    entries: *mut objmon_profile_entry,
    cap: usize,
    n: *mut usize,
) -> objmon_status {
    nonnull!(rt, n);
    if cap > 0 {
        nonnull!(entries);
    }
    guarded(|| {
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        // SAFETY: contract.
        let v: Vec<objmon_profile_entry> = unsafe { &*rt }
            .inner
            .profile()
            .iter()
            .map(|p| objmon_profile_entry {
                object: p.object.0,
                contended_enters: p.contended_enters,
                blocked_ns: ns(p.blocked),
                waits: p.waits,
                waited_ns: ns(p.waited),
            })
            .collect();
        // SAFETY: contract.
        unsafe { copy_out(&v, entries, cap, n) };
        OBJMON_OK
    })
}

/// GC hook for a moving collector (any protocol): the object whose header was at `from` now
/// has its header at `to`, the collector having copied the 8 bytes verbatim. Call it while no
/// attached thread is inside an objmon call (a safepoint), for every moved object that is
/// locked or that `thin`, `biased` or `fable` may have hashed; see `objmon::Runtime::relocate`.
/// `from` is only compared, never read. A thread holding the object through
/// `objmon_monitor_enter` then holds it at `to` (its `objmon_monitor_exit` and its detach use
/// `to`). Under `cacao` and `monitor-cache`, which find a monitor by the object's address,
/// a locked object must not move at all.
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL`, `OBJMON_E_FOREIGN_HEADER` (`to`), `OBJMON_E_PANIC`.
///
/// # Safety
/// `rt` is live; `to` an initialised header of it.
#[no_mangle]
pub unsafe extern "C" fn objmon_relocate(
    rt: *const objmon_runtime,
    from: *const objmon_header,
    to: *const objmon_header,
) -> objmon_status {
    nonnull!(rt, from, to);
    // SAFETY: contract.
    guarded(|| unsafe {
        if foreign((*rt).tag, to) {
            return OBJMON_E_FOREIGN_HEADER;
        }
        (*rt).inner.relocate(from, to);
        for &t in (*rt).handles.list().iter() {
            // SAFETY: a listed handle is live (it leaves the list at its last detach, before
            // it is freed); no attached thread is inside an objmon call (the contract: a
            // safepoint, whose synchronisation orders this with the owner's own accesses),
            // so nobody else borrows its records now.
            let th = &*(t as *const objmon_thread);
            let mut u = th.unstructured.borrow_mut();
            if let Some(i) = u.iter().position(|&(p, _)| p == from as usize) {
                let n = u.swap_remove(i).1;
                match u.iter_mut().find(|(p, _)| *p == to as usize) {
                    Some((_, m)) => *m += n,
                    None => u.push((to as usize, n)),
                }
            }
        }
        OBJMON_OK
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn message(s: i32) -> &'static str {
        // SAFETY: `objmon_strerror` returns a static NUL-terminated string.
        unsafe { CStr::from_ptr(objmon_strerror(s)) }
            .to_str()
            .unwrap()
    }

    #[test]
    fn strerror_names_every_status_and_only_those() {
        let last = OBJMON_E_EVENTS_OFF as i32;
        for s in 0..=last {
            assert_ne!(message(s), "unknown status", "status {s} has no message");
        }
        for s in [last + 1, 42, -1, i32::MIN, i32::MAX] {
            assert_eq!(message(s), "unknown status");
        }
    }
}
