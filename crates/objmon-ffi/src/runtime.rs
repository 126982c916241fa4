//! The library and runtime calls: version, protocol names, error strings, the barrier
//! signal, runtime creation and release, and header initialisation and host bits.

use super::*;

/// The library's version: `(major << 16) | (minor << 8) | patch`, as the header's
/// `OBJMON_VERSION` encodes `OBJMON_VERSION_MAJOR`, `_MINOR` and `_PATCH`. A host compares the
/// two at start-up to catch a header and a library of different versions.
#[no_mangle]
pub extern "C" fn objmon_version() -> u32 {
    VERSION
}

/// Number of protocols available (names via `objmon_protocol_name`).
#[no_mangle]
pub extern "C" fn objmon_protocol_count() -> usize {
    objmon::protocol::names().len()
}

/// The protocol names as C strings, built once from `objmon::protocol::names()`.
pub(crate) fn c_names() -> &'static [CString] {
    static NAMES: OnceLock<Vec<CString>> = OnceLock::new();
    NAMES.get_or_init(|| {
        objmon::protocol::names()
            .into_iter()
            .map(|n| CString::new(n).expect("protocol names have no NUL"))
            .collect()
    })
}

/// The name of protocol `i` (a static NUL-terminated string), or NULL if out of range.
#[no_mangle]
pub extern "C" fn objmon_protocol_name(i: usize) -> *const c_char {
    c_names().get(i).map_or(std::ptr::null(), |c| c.as_ptr())
}

/// A human-readable description of status `s` (a static string), or "unknown status" if `s`
/// is no `objmon_status` value (any integer is accepted, as `strerror` accepts any errno).
#[no_mangle]
pub extern "C" fn objmon_strerror(s: i32) -> *const c_char {
    // Compare as integers: a C enum argument may hold any int, which would be undefined
    // behaviour in a Rust enum parameter.
    const MESSAGES: [(objmon_status, &CStr); 20] = [
        (OBJMON_OK, c"ok"),
        (
            OBJMON_E_ILLEGAL_MONITOR_STATE,
            c"current thread does not own the monitor",
        ),
        (OBJMON_E_INTERRUPTED, c"wait interrupted"),
        (OBJMON_E_INVALID_TIMEOUT, c"timeout value is out of range"),
        (OBJMON_E_TOO_MANY_THREADS, c"no free thread id"),
        (OBJMON_E_MONITOR_TABLE_FULL, c"monitor table is full"),
        (OBJMON_E_RECURSION_OVERFLOW, c"recursion count overflow"),
        (OBJMON_E_NO_SUCH_THREAD, c"no attached thread has this id"),
        (OBJMON_E_NULL, c"null pointer argument"),
        (OBJMON_E_UNKNOWN_PROTOCOL, c"unknown protocol name"),
        (
            OBJMON_E_UNSUPPORTED,
            c"protocol header does not fit objmon_header",
        ),
        (OBJMON_E_PANIC, c"internal error (panic)"),
        (
            OBJMON_E_IN_NATIVE,
            c"monitor operation made while the thread is in native code",
        ),
        (
            OBJMON_E_LOCKS_HELD,
            c"thread still holds structured locks: not detached",
        ),
        (
            OBJMON_E_WRONG_THREAD,
            c"thread handle used by a thread that did not attach it",
        ),
        (OBJMON_E_NOT_IN_NATIVE, c"thread is not in native code"),
        (
            OBJMON_E_FOREIGN_HEADER,
            c"header belongs to another runtime",
        ),
        (
            OBJMON_E_HOST_BITS_TOO_WIDE,
            c"host bits wider than the protocol leaves to the host",
        ),
        (
            OBJMON_E_HOST_BITS_DISPLACED,
            c"host bits displaced into the lock owner's record",
        ),
        (
            OBJMON_E_EVENTS_OFF,
            c"runtime made without objmon_config.events",
        ),
    ];
    MESSAGES
        .iter()
        .find(|(k, _)| *k as i32 == s)
        .map_or(c"unknown status", |(_, m)| m)
        .as_ptr()
}

/// The signal a `biased-signal` / `fable-signal` revoker sends the bias owner (SIGRTMIN + 6),
/// for the `sa_mask` of every signal handler that may run on a thread attached to such a
/// runtime; -1 where those protocols bias nothing.
#[no_mangle]
pub extern "C" fn objmon_barrier_signal() -> c_int {
    objmon::vm::barrier_signal().unwrap_or(-1)
}

/// Creates a runtime running protocol `protocol` (e.g. "thin"). `config` may be NULL.
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL` (`protocol` or `out`), `OBJMON_E_UNKNOWN_PROTOCOL` (a
/// name not in PROTOCOL NAMES, or not UTF-8), `OBJMON_E_UNSUPPORTED` (the protocol's header does
/// not fit `objmon_header`; none does today), `OBJMON_E_PANIC`.
///
/// # Safety
/// `protocol` is a NUL-terminated string; `config` is NULL or valid; `out` is valid for writes.
/// For "biased-signal" and "fable-signal", also: every signal handler that runs on a thread
/// attached to the runtime keeps `objmon_barrier_signal()` blocked until it returns (it is in
/// the handler's `sa_mask`, and nothing the handler does unblocks it), or no handler runs on
/// those threads; otherwise a lock can have two owners (WHICH PROTOCOL, in the opening comment).
/// The "-rseq" names ask nothing of the kind.
#[no_mangle]
pub unsafe extern "C" fn objmon_runtime_new(
    protocol: *const c_char,
    config: *const objmon_config,
    out: *mut *mut objmon_runtime,
) -> objmon_status {
    nonnull!(protocol, out);
    guarded(|| {
        // SAFETY: non-null and NUL-terminated by contract.
        let Ok(name) = unsafe { CStr::from_ptr(protocol) }.to_str() else {
            return OBJMON_E_UNKNOWN_PROTOCOL;
        };
        // SAFETY: NULL or valid by contract (every field's type takes any bit pattern).
        let c = unsafe { config.as_ref() }.copied().unwrap_or_default();
        let mut cfg = Config::default();
        if c.max_threads != 0 {
            cfg.max_threads = c.max_threads;
        }
        if c.monitor_capacity != 0 {
            cfg.monitor_capacity = c.monitor_capacity;
        }
        cfg.profiling = c.profiling != 0;
        let events = (c.events != 0).then(|| Arc::new(crate::events::CallbackSink::default()));
        cfg.events = events
            .clone()
            .map(|e| e as Arc<dyn objmon::events::EventSink>);
        let mut make = Make {
            name,
            config: cfg,
            events,
            out: None,
        };
        objmon::vm::visit_all(&mut make);
        match make.out {
            None => OBJMON_E_UNKNOWN_PROTOCOL,
            Some(Err(s)) => s,
            Some(Ok(rt)) => {
                let rt = Box::into_raw(Box::new(rt));
                // SAFETY: `out` is valid for writes by contract.
                unsafe { out.write(rt) };
                OBJMON_OK
            }
        }
    })
}

/// Frees a runtime. Threads still attached keep it alive until they detach.
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL`, `OBJMON_E_PANIC`.
///
/// # Safety
/// `rt` comes from `objmon_runtime_new` and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn objmon_runtime_free(rt: *mut objmon_runtime) -> objmon_status {
    nonnull!(rt);
    // SAFETY: allocated by `objmon_runtime_new` with Box, freed once (contract).
    guarded(|| {
        drop(unsafe { Box::from_raw(rt) });
        OBJMON_OK
    })
}

/// The protocol name of a runtime (static string).
///
/// # Safety
/// `rt` is a live runtime.
#[no_mangle]
pub unsafe extern "C" fn objmon_runtime_protocol(rt: *const objmon_runtime) -> *const c_char {
    if rt.is_null() {
        return std::ptr::null();
    }
    // SAFETY: live runtime by contract.
    let name = unsafe { &*rt }.inner.name();
    c_names()
        .iter()
        .find(|c| c.to_str() == Ok(name))
        .map_or(std::ptr::null(), |c| c.as_ptr())
}

/// Initialises an object's header (unlocked) for this runtime's protocol, and for this
/// runtime only (see `objmon_header`: one header, one runtime).
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL`, `OBJMON_E_PANIC`.
///
/// # Safety
/// `rt` is live; `h` is valid for writes and not in use.
#[no_mangle]
pub unsafe extern "C" fn objmon_header_init(
    rt: *const objmon_runtime,
    h: *mut objmon_header,
) -> objmon_status {
    nonnull!(rt, h);
    // SAFETY: contract.
    guarded(|| unsafe {
        (*rt).inner.header_init(h);
        if (*rt).tag != 0 {
            // SAFETY: a tagged runtime's protocol word is 4 bytes (`Make`).
            tag_word(h).store((*rt).tag, Ordering::Relaxed);
        }
        OBJMON_OK
    })
}

/// GC hook: the object owning `h` is dead; frees its monitor, if any, and resets the header
/// (`OBJMON_E_FOREIGN_HEADER`, nothing done, for another runtime's header).
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL`, `OBJMON_E_FOREIGN_HEADER`, `OBJMON_E_PANIC`.
///
/// # Safety
/// `rt` is live; `h` was initialised by it and no thread uses it any more.
#[no_mangle]
pub unsafe extern "C" fn objmon_header_reclaim(
    rt: *const objmon_runtime,
    h: *mut objmon_header,
) -> objmon_status {
    nonnull!(rt, h);
    // SAFETY: contract.
    guarded(|| unsafe {
        if foreign((*rt).tag, h) {
            return OBJMON_E_FOREIGN_HEADER;
        }
        (*rt).inner.reclaim(h);
        OBJMON_OK
    })
}

/// How many bits of the header the runtime's protocol leaves to the host (0 for NULL): 8 for
/// `thin`, `fat`, `cacao`, `cacao-seed`, `monitor-cache`, `biased`, `biased-seed`, `fable`,
/// `fable-seed`; 7 for `lightweight`, `lightweight-seed`, `lightweight-table`, `stack`; 16 for
/// `tasuki`. The host stores a value below `1 << width` with `objmon_header_init_host` and
/// reads it with `objmon_header_host_bits`; where the bits sit in the 8 bytes is the library's
/// business.
///
/// The 4-byte-word protocols (`thin`, `fat`, `cacao`, `cacao-seed`, `monitor-cache`) leave the
/// other 4 bytes of `objmon_header` to the runtime tag that detects another runtime's header
/// (`OBJMON_E_FOREIGN_HEADER`): that detection is kept, at the price of those 32 bits.
///
/// # Safety
/// `rt` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn objmon_host_bits_width(rt: *const objmon_runtime) -> u32 {
    // SAFETY: NULL or live by contract.
    unsafe { rt.as_ref() }.map_or(0, |rt| rt.host.width)
}

/// As `objmon_header_init`, the header also carrying `host_bits` for the host: a value below
/// `1 << objmon_host_bits_width(rt)` (else `OBJMON_E_HOST_BITS_TOO_WIDE`, nothing done). The
/// value survives locking, inflation, deflation, hashing, `objmon_relocate` and
/// `objmon_header_reclaim`; it changes only by initialising the header again (when it is not
/// in use). An all-zero header carries the value 0.
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL`, `OBJMON_E_HOST_BITS_TOO_WIDE`, `OBJMON_E_PANIC`.
///
/// # Safety
/// `rt` is live; `h` is valid for writes and not in use.
#[no_mangle]
pub unsafe extern "C" fn objmon_header_init_host(
    rt: *const objmon_runtime,
    h: *mut objmon_header,
    host_bits: u32,
) -> objmon_status {
    nonnull!(rt, h);
    // SAFETY: contract.
    let host = unsafe { &*rt }.host;
    if host_bits == 0 {
        // SAFETY: forwarded contract.
        return unsafe { objmon_header_init(rt, h) };
    }
    if host.width == 0 || host_bits >> host.width != 0 {
        return OBJMON_E_HOST_BITS_TOO_WIDE;
    }
    // SAFETY: contract; the value fits (checked); `host` describes this runtime's header type.
    guarded(|| unsafe {
        host.init(h, host_bits);
        if (*rt).tag != 0 {
            // SAFETY: a tagged runtime's protocol word is 4 bytes (`Make`).
            tag_word(h).store((*rt).tag, Ordering::Relaxed);
        }
        OBJMON_OK
    })
}

/// The host's value in `h` (see `objmon_header_init_host`), written to `out`; from any thread,
/// in every lock state, but for `stack` while the object is stack-locked:
/// `OBJMON_E_HOST_BITS_DISPLACED` (the bits are in the owner's lock record until the unlock).
///
/// Statuses: `OBJMON_OK`, `OBJMON_E_NULL`, `OBJMON_E_FOREIGN_HEADER`,
/// `OBJMON_E_HOST_BITS_DISPLACED` (`stack`, stack-locked), `OBJMON_E_PANIC`.
///
/// # Safety
/// `rt` is live; `h` an initialised header of it; `out` valid for writes.
#[no_mangle]
pub unsafe extern "C" fn objmon_header_host_bits(
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
        match (*rt).host.read(h) {
            Some(v) => {
                out.write(v);
                OBJMON_OK
            }
            None => OBJMON_E_HOST_BITS_DISPLACED,
        }
    })
}
