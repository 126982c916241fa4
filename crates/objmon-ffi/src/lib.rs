//! C ABI for objmon. The header `include/objmon.h` is generated from this file by cbindgen
//! (the test `header_is_in_sync` keeps them equal).
//!
//! Model: a C runtime creates one `objmon_runtime` with a protocol chosen by name, attaches
//! each of its threads (`objmon_thread`, used only by the thread that attached it), and embeds
//! one `objmon_header` (8 bytes, 8-aligned) in each object, initialised with
//! `objmon_header_init` before first use. Every function returns an `objmon_status`; no Rust
//! panic crosses the boundary (it becomes `OBJMON_E_PANIC`).
//!
//! Two ways to lock: `objmon_enter` / `objmon_exit` for structured locking (a `synchronized`
//! block: the host guarantees every enter is exited by the same thread), and
//! `objmon_monitor_enter` / `objmon_monitor_exit` for JNI-style unstructured locking, which
//! `objmon_thread_detach` releases (as `DetachCurrentThread` does).
//!
//! Safety contract of the pointer arguments (the C caller's side): a runtime pointer comes
//! from `objmon_runtime_new` and is not used after `objmon_runtime_free`; a thread pointer comes
//! from `objmon_thread_attach` of that runtime, is used only by the thread that attached it and
//! not after `objmon_thread_detach`; a header pointer points to an `objmon_header` initialised by
//! `objmon_header_init` of that runtime, that stays at its address and alive while any thread
//! holds or waits on it. Null pointers are detected and reported (`OBJMON_E_NULL`).
#![allow(non_camel_case_types)]

use objmon::{
    Config, MonitorError, Protocol, ProtocolVisitor, Runtime, StatsSnapshot, ThreadHandle,
    ThreadId, WaitOutcome,
};
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Result of every call.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum objmon_status {
    /// Success.
    OBJMON_OK = 0,
    /// The thread does not own the monitor (Java's IllegalMonitorStateException).
    OBJMON_E_ILLEGAL_MONITOR_STATE = 1,
    /// The wait was interrupted; the interrupt status is cleared.
    OBJMON_E_INTERRUPTED = 2,
    /// Timeout out of range (negative).
    OBJMON_E_INVALID_TIMEOUT = 3,
    /// Every thread id is in use.
    OBJMON_E_TOO_MANY_THREADS = 4,
    /// Every monitor-table slot is in use.
    OBJMON_E_MONITOR_TABLE_FULL = 5,
    /// Recursion count overflow.
    OBJMON_E_RECURSION_OVERFLOW = 6,
    /// No attached thread has the given id.
    OBJMON_E_NO_SUCH_THREAD = 7,
    /// A required pointer argument was null.
    OBJMON_E_NULL = 8,
    /// No protocol has that name.
    OBJMON_E_UNKNOWN_PROTOCOL = 9,
    /// The protocol's header does not fit an `objmon_header`.
    OBJMON_E_UNSUPPORTED = 10,
    /// objmon panicked (a bug); the operation did not complete.
    OBJMON_E_PANIC = 11,
    /// A monitor operation was made while the thread is in native code (`MonitorError::InNative`).
    OBJMON_E_IN_NATIVE = 12,
}

use objmon_status::*;

impl From<MonitorError> for objmon_status {
    fn from(e: MonitorError) -> Self {
        match e {
            MonitorError::IllegalMonitorState => OBJMON_E_ILLEGAL_MONITOR_STATE,
            MonitorError::Interrupted => OBJMON_E_INTERRUPTED,
            MonitorError::InvalidTimeout => OBJMON_E_INVALID_TIMEOUT,
            MonitorError::TooManyThreads => OBJMON_E_TOO_MANY_THREADS,
            MonitorError::MonitorTableFull => OBJMON_E_MONITOR_TABLE_FULL,
            MonitorError::RecursionOverflow => OBJMON_E_RECURSION_OVERFLOW,
            MonitorError::NoSuchThread => OBJMON_E_NO_SUCH_THREAD,
            MonitorError::InNative => OBJMON_E_IN_NATIVE,
        }
    }
}

/// How a successful wait ended.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum objmon_wait_outcome {
    /// Picked by notify / notifyAll.
    OBJMON_NOTIFIED = 0,
    /// The timeout elapsed.
    OBJMON_TIMED_OUT = 1,
}

/// The per-object header slot: 8 bytes, 8-aligned, opaque. Initialise with
/// `objmon_header_init` before first use. (Its one field is private: never read or write it.)
#[repr(C)]
pub struct objmon_header {
    _opaque: u64,
}

// Every protocol header we accept must fit this slot (checked per protocol at runtime creation).
const _: () = assert!(std::mem::align_of::<objmon_header>() == 8);

/// Runtime settings; a zero field means "the default".
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct objmon_config {
    /// Most threads attached at once (default and maximum 32767).
    pub max_threads: u16,
    /// Most fat monitors alive at once (default and maximum 2^23 - 1).
    pub monitor_capacity: u32,
    /// Nonzero: contention profiling on (`objmon_contention_profile`); default off.
    pub profiling: u8,
}

/// Counters of a runtime.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct objmon_stats {
    /// Inflations to a fat monitor, all causes.
    pub inflations: u64,
    /// Inflations because of contention.
    pub inflations_contention: u64,
    /// Inflations for wait / notify.
    pub inflations_wait_notify: u64,
    /// Deflations.
    pub deflations: u64,
    /// Fat monitors alive now.
    pub live_monitors: u64,
    /// Threads attached now.
    pub attached_threads: u64,
}

/// A runtime (opaque).
pub struct objmon_runtime {
    inner: Box<dyn DynRuntime>,
}

/// An attached thread (opaque); used only by the thread that attached it.
pub struct objmon_thread {
    inner: Box<dyn DynThread>,
}

// ---------------------------------------------------------------------------------------------
// Type erasure: one vtable call per operation, then the protocol's own (inlined) paths.

trait DynRuntime: Send + Sync + DynIntrospect {
    fn name(&self) -> &'static str;
    unsafe fn header_init(&self, h: *mut objmon_header);
    fn attach(&self) -> Result<Box<dyn DynThread>, MonitorError>;
    unsafe fn owner_of(&self, h: *const objmon_header) -> Option<ThreadId>;
    fn interrupt(&self, id: ThreadId) -> Result<(), MonitorError>;
    fn stats(&self) -> StatsSnapshot;
    unsafe fn reclaim(&self, h: *mut objmon_header);
    unsafe fn peek_identity_hash(&self, h: *const objmon_header) -> Option<u32>;
    unsafe fn relocate(&self, from: *const objmon_header, to: *const objmon_header);
}

trait DynThread {
    fn id(&self) -> u16;
    unsafe fn enter(&self, h: *const objmon_header) -> Result<(), MonitorError>;
    unsafe fn try_enter(&self, h: *const objmon_header) -> Result<bool, MonitorError>;
    unsafe fn exit(&self, h: *const objmon_header) -> Result<(), MonitorError>;
    unsafe fn monitor_enter(&self, h: *const objmon_header) -> Result<(), MonitorError>;
    unsafe fn monitor_exit(&self, h: *const objmon_header) -> Result<(), MonitorError>;
    unsafe fn wait(
        &self,
        h: *const objmon_header,
        timeout: Option<Duration>,
    ) -> Result<WaitOutcome, MonitorError>;
    unsafe fn notify(&self, h: *const objmon_header, all: bool) -> Result<(), MonitorError>;
    unsafe fn lock_count(&self, h: *const objmon_header) -> u32;
    fn interrupted(&self) -> bool;
    fn detach(self: Box<Self>) -> usize;
    unsafe fn identity_hash(&self, h: *const objmon_header) -> Result<u32, MonitorError>;
}

struct Rt<P: Protocol>(Arc<Runtime<P>>);
struct Th<P: Protocol>(ThreadHandle<'static, P>);

/// # Safety
/// `h` points to an `objmon_header` initialised for protocol `P` (the module's contract), so
/// it holds a valid `P::Header` (size and alignment checked at runtime creation).
unsafe fn hdr<'a, P: Protocol>(h: *const objmon_header) -> &'a P::Header {
    // SAFETY: see the function's contract.
    unsafe { &*(h as *const P::Header) }
}

impl<P: Protocol> DynRuntime for Rt<P> {
    fn name(&self) -> &'static str {
        P::NAME
    }
    unsafe fn header_init(&self, h: *mut objmon_header) {
        // SAFETY: `h` is valid for writes of 8 bytes, 8-aligned (caller's contract), and
        // P::Header fits (checked in `objmon_runtime_new`); it holds no live header yet.
        unsafe { std::ptr::write(h as *mut P::Header, P::Header::default()) }
    }
    fn attach(&self) -> Result<Box<dyn DynThread>, MonitorError> {
        Ok(Box::new(Th(self.0.attach()?)))
    }
    unsafe fn owner_of(&self, h: *const objmon_header) -> Option<ThreadId> {
        // SAFETY: forwarded contract.
        self.0.owner_of(unsafe { hdr::<P>(h) })
    }
    fn interrupt(&self, id: ThreadId) -> Result<(), MonitorError> {
        self.0.interrupt(id)
    }
    fn stats(&self) -> StatsSnapshot {
        self.0.stats_snapshot()
    }
    unsafe fn reclaim(&self, h: *mut objmon_header) {
        // SAFETY: forwarded contract; the host declares the object dead, so nobody else uses
        // the header now and a unique reference is sound.
        self.0.reclaim(unsafe { &mut *(h as *mut P::Header) })
    }
    unsafe fn peek_identity_hash(&self, h: *const objmon_header) -> Option<u32> {
        // SAFETY: forwarded contract.
        self.0.peek_identity_hash(unsafe { hdr::<P>(h) })
    }
    unsafe fn relocate(&self, from: *const objmon_header, to: *const objmon_header) {
        // SAFETY: forwarded contract (`to` an initialised header; `from` only compared).
        self.0
            .relocate(from as *const P::Header, unsafe { hdr::<P>(to) })
    }
}

impl<P: Protocol> DynThread for Th<P> {
    fn id(&self) -> u16 {
        self.0.id().get()
    }
    unsafe fn enter(&self, h: *const objmon_header) -> Result<(), MonitorError> {
        // SAFETY (all `hdr` calls below): forwarded contract.
        P::enter(self.0.runtime(), self.0.context(), unsafe { hdr::<P>(h) })
    }
    unsafe fn try_enter(&self, h: *const objmon_header) -> Result<bool, MonitorError> {
        P::try_enter(self.0.runtime(), self.0.context(), unsafe { hdr::<P>(h) })
    }
    unsafe fn exit(&self, h: *const objmon_header) -> Result<(), MonitorError> {
        P::exit(self.0.runtime(), self.0.context(), unsafe { hdr::<P>(h) })
    }
    unsafe fn monitor_enter(&self, h: *const objmon_header) -> Result<(), MonitorError> {
        // The contract keeps the header alive while held, which is what 'static stands for.
        self.0.monitor_enter(unsafe { hdr::<P>(h) })
    }
    unsafe fn monitor_exit(&self, h: *const objmon_header) -> Result<(), MonitorError> {
        self.0.monitor_exit(unsafe { hdr::<P>(h) })
    }
    unsafe fn wait(
        &self,
        h: *const objmon_header,
        timeout: Option<Duration>,
    ) -> Result<WaitOutcome, MonitorError> {
        self.0.wait(unsafe { hdr::<P>(h) }, timeout)
    }
    unsafe fn notify(&self, h: *const objmon_header, all: bool) -> Result<(), MonitorError> {
        let h = unsafe { hdr::<P>(h) };
        if all {
            self.0.notify_all(h)
        } else {
            self.0.notify(h)
        }
    }
    unsafe fn lock_count(&self, h: *const objmon_header) -> u32 {
        self.0.lock_count(unsafe { hdr::<P>(h) })
    }
    fn interrupted(&self) -> bool {
        self.0.interrupted()
    }
    fn detach(self: Box<Self>) -> usize {
        self.0.detach()
    }
    unsafe fn identity_hash(&self, h: *const objmon_header) -> Result<u32, MonitorError> {
        self.0.identity_hash(unsafe { hdr::<P>(h) })
    }
}

struct Make<'a> {
    name: &'a str,
    config: Config,
    out: Option<Result<Box<dyn DynRuntime>, objmon_status>>,
}

impl ProtocolVisitor for Make<'_> {
    fn visit<P: Protocol>(&mut self) {
        if self.out.is_some() || P::NAME != self.name {
            return;
        }
        let fits = std::mem::size_of::<P::Header>() <= std::mem::size_of::<objmon_header>()
            && std::mem::align_of::<P::Header>() <= std::mem::align_of::<objmon_header>();
        self.out = Some(if fits {
            Ok(Box::new(Rt::<P>(Runtime::new(self.config.clone()))))
        } else {
            Err(OBJMON_E_UNSUPPORTED)
        });
    }
}

fn guarded(f: impl FnOnce() -> objmon_status) -> objmon_status {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(OBJMON_E_PANIC)
}

fn status(r: Result<(), MonitorError>) -> objmon_status {
    match r {
        Ok(()) => OBJMON_OK,
        Err(e) => e.into(),
    }
}

macro_rules! nonnull {
    ($($p:expr),+) => { $( if $p.is_null() { return OBJMON_E_NULL; } )+ };
}

// ---------------------------------------------------------------------------------------------
// The C functions.

/// Number of protocols available (names via `objmon_protocol_name`).
#[no_mangle]
pub extern "C" fn objmon_protocol_count() -> usize {
    objmon::protocol::names().len()
}

/// The protocol names as C strings, built once from `objmon::protocol::names()`.
fn c_names() -> &'static [CString] {
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

/// A human-readable description of `s` (static string).
#[no_mangle]
pub extern "C" fn objmon_strerror(s: objmon_status) -> *const c_char {
    let m: &CStr = match s {
        OBJMON_OK => c"ok",
        OBJMON_E_ILLEGAL_MONITOR_STATE => c"current thread does not own the monitor",
        OBJMON_E_INTERRUPTED => c"wait interrupted",
        OBJMON_E_INVALID_TIMEOUT => c"timeout value is out of range",
        OBJMON_E_TOO_MANY_THREADS => c"no free thread id",
        OBJMON_E_MONITOR_TABLE_FULL => c"monitor table is full",
        OBJMON_E_RECURSION_OVERFLOW => c"recursion count overflow",
        OBJMON_E_NO_SUCH_THREAD => c"no attached thread has this id",
        OBJMON_E_NULL => c"null pointer argument",
        OBJMON_E_UNKNOWN_PROTOCOL => c"unknown protocol name",
        OBJMON_E_UNSUPPORTED => c"protocol header does not fit objmon_header",
        OBJMON_E_PANIC => c"internal error (panic)",
        OBJMON_E_IN_NATIVE => c"monitor operation made while the thread is in native code",
    };
    m.as_ptr()
}

/// Creates a runtime running protocol `protocol` (e.g. "thin"). `config` may be NULL.
///
/// # Safety
/// `protocol` is a NUL-terminated string; `config` is NULL or valid; `out` is valid for writes.
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
        // SAFETY: NULL or valid by contract.
        let c = unsafe { config.as_ref() }.copied().unwrap_or_default();
        let mut cfg = Config::default();
        if c.max_threads != 0 {
            cfg.max_threads = c.max_threads;
        }
        if c.monitor_capacity != 0 {
            cfg.monitor_capacity = c.monitor_capacity;
        }
        cfg.profiling = c.profiling != 0;
        let mut make = Make {
            name,
            config: cfg,
            out: None,
        };
        objmon::visit_all(&mut make);
        match make.out {
            None => OBJMON_E_UNKNOWN_PROTOCOL,
            Some(Err(s)) => s,
            Some(Ok(inner)) => {
                let rt = Box::into_raw(Box::new(objmon_runtime { inner }));
                // SAFETY: `out` is valid for writes by contract.
                unsafe { out.write(rt) };
                OBJMON_OK
            }
        }
    })
}

/// Frees a runtime. Threads still attached keep it alive until they detach.
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

/// Initialises an object's header (unlocked) for this runtime's protocol.
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
        OBJMON_OK
    })
}

/// GC hook: the object owning `h` is dead; frees its monitor, if any, and resets the header.
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
        (*rt).inner.reclaim(h);
        OBJMON_OK
    })
}

/// Attaches the calling thread.
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
        match unsafe { &*rt }.inner.attach() {
            Ok(inner) => {
                // SAFETY: contract.
                unsafe { out.write(Box::into_raw(Box::new(objmon_thread { inner }))) };
                OBJMON_OK
            }
            Err(e) => e.into(),
        }
    })
}

/// Detaches the calling thread, releasing its unstructured (`objmon_monitor_enter`) locks;
/// writes how many lock levels it released to `released` (may be NULL).
///
/// # Safety
/// `t` comes from `objmon_thread_attach` on this thread and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn objmon_thread_detach(
    t: *mut objmon_thread,
    released: *mut usize,
) -> objmon_status {
    nonnull!(t);
    guarded(|| {
        // SAFETY: allocated by objmon_thread_attach, freed once (contract).
        let n = unsafe { Box::from_raw(t) }.inner.detach();
        if !released.is_null() {
            // SAFETY: non-null and valid for writes by contract.
            unsafe { released.write(n) };
        }
        OBJMON_OK
    })
}

/// The thread's id (1..=32767).
///
/// # Safety
/// `t` is a live thread.
#[no_mangle]
pub unsafe extern "C" fn objmon_thread_id(t: *const objmon_thread) -> u16 {
    if t.is_null() {
        return 0;
    }
    // SAFETY: contract.
    unsafe { &*t }.inner.id()
}

/// Runs `op` on the thread's handle after the null checks, catching panics.
///
/// # Safety
/// `t` is the calling thread's live handle; `h` an initialised header of its runtime.
unsafe fn thread_op(
    t: *const objmon_thread,
    h: *mut objmon_header,
    op: impl FnOnce(&dyn DynThread, *const objmon_header) -> Result<(), MonitorError>,
) -> objmon_status {
    nonnull!(t, h);
    // SAFETY: contract.
    guarded(|| status(op(unsafe { &*(*t).inner }, h)))
}

/// monitorenter (structured: pair it with `objmon_exit` on the same thread).
///
/// # Safety
/// `t` is the calling thread's live handle; `h` an initialised header of its runtime.
#[no_mangle]
pub unsafe extern "C" fn objmon_enter(
    t: *const objmon_thread,
    h: *mut objmon_header,
) -> objmon_status {
    // SAFETY: forwarded contract (the header pointer is valid for the call).
    unsafe { thread_op(t, h, |t, h| t.enter(h)) }
}

/// monitorexit of an `objmon_enter`.
///
/// # Safety
/// `t` is the calling thread's live handle; `h` an initialised header of its runtime.
#[no_mangle]
pub unsafe extern "C" fn objmon_exit(
    t: *const objmon_thread,
    h: *mut objmon_header,
) -> objmon_status {
    // SAFETY: forwarded contract (the header pointer is valid for the call).
    unsafe { thread_op(t, h, |t, h| t.exit(h)) }
}

/// JNI MonitorEnter (unstructured; released by `objmon_monitor_exit` or detach).
///
/// # Safety
/// `t` is the calling thread's live handle; `h` an initialised header of its runtime.
#[no_mangle]
pub unsafe extern "C" fn objmon_monitor_enter(
    t: *const objmon_thread,
    h: *mut objmon_header,
) -> objmon_status {
    // SAFETY: forwarded contract (the header pointer is valid for the call).
    unsafe { thread_op(t, h, |t, h| t.monitor_enter(h)) }
}

/// JNI MonitorExit of an `objmon_monitor_enter`.
///
/// # Safety
/// `t` is the calling thread's live handle; `h` an initialised header of its runtime.
#[no_mangle]
pub unsafe extern "C" fn objmon_monitor_exit(
    t: *const objmon_thread,
    h: *mut objmon_header,
) -> objmon_status {
    // SAFETY: forwarded contract (the header pointer is valid for the call).
    unsafe { thread_op(t, h, |t, h| t.monitor_exit(h)) }
}

/// Object.notify.
///
/// # Safety
/// `t` is the calling thread's live handle; `h` an initialised header of its runtime.
#[no_mangle]
pub unsafe extern "C" fn objmon_notify(
    t: *const objmon_thread,
    h: *mut objmon_header,
) -> objmon_status {
    // SAFETY: forwarded contract (the header pointer is valid for the call).
    unsafe { thread_op(t, h, |t, h| t.notify(h, false)) }
}

/// Object.notifyAll.
///
/// # Safety
/// `t` is the calling thread's live handle; `h` an initialised header of its runtime.
#[no_mangle]
pub unsafe extern "C" fn objmon_notify_all(
    t: *const objmon_thread,
    h: *mut objmon_header,
) -> objmon_status {
    // SAFETY: forwarded contract (the header pointer is valid for the call).
    unsafe { thread_op(t, h, |t, h| t.notify(h, true)) }
}

/// Locks `h` if no other thread owns it; `*acquired` says whether it did (structured).
///
/// # Safety
/// As `objmon_enter`; `acquired` is valid for writes.
#[no_mangle]
pub unsafe extern "C" fn objmon_try_enter(
    t: *const objmon_thread,
    h: *mut objmon_header,
    acquired: *mut bool,
) -> objmon_status {
    nonnull!(t, h, acquired);
    // SAFETY: contract.
    guarded(|| unsafe {
        match (*t).inner.try_enter(h) {
            Ok(b) => {
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
/// # Safety
/// As `objmon_enter`; `outcome` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn objmon_wait(
    t: *const objmon_thread,
    h: *mut objmon_header,
    timeout_ns: i64,
    outcome: *mut objmon_wait_outcome,
) -> objmon_status {
    nonnull!(t, h);
    if timeout_ns < 0 {
        return OBJMON_E_INVALID_TIMEOUT;
    }
    let timeout = (timeout_ns > 0).then(|| Duration::from_nanos(timeout_ns as u64));
    // SAFETY: contract.
    guarded(|| unsafe {
        match (*t).inner.wait(h, timeout) {
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
        }
    })
}

/// How many times the calling thread holds `h` (0: not owner). Returns 0 on a NULL argument.
///
/// # Safety
/// As `objmon_enter`.
#[no_mangle]
pub unsafe extern "C" fn objmon_lock_count(
    t: *const objmon_thread,
    h: *const objmon_header,
) -> u32 {
    if t.is_null() || h.is_null() {
        return 0;
    }
    // SAFETY: contract.
    catch_unwind(AssertUnwindSafe(|| unsafe { (*t).inner.lock_count(h) })).unwrap_or(0)
}

/// Reads and clears the calling thread's interrupt status (Java's Thread.interrupted()).
///
/// # Safety
/// `t` is the calling thread's live handle.
#[no_mangle]
pub unsafe extern "C" fn objmon_thread_interrupted(t: *const objmon_thread) -> bool {
    // SAFETY: contract.
    !t.is_null() && unsafe { &*t }.inner.interrupted()
}

/// Interrupts thread `id`: sets its interrupt status and wakes it from a wait.
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
        owner.write((*rt).inner.owner_of(h).map_or(0, ThreadId::get));
        OBJMON_OK
    })
}

/// Copies the runtime's counters to `out`.
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
/// # Safety
/// As `objmon_enter`; `out` valid for writes.
#[no_mangle]
pub unsafe extern "C" fn objmon_identity_hash(
    t: *const objmon_thread,
    h: *const objmon_header,
    out: *mut u32,
) -> objmon_status {
    nonnull!(t, h, out);
    // SAFETY: contract.
    guarded(|| match unsafe { (*t).inner.identity_hash(h) } {
        Ok(v) => {
            // SAFETY: contract.
            unsafe { out.write(v) };
            OBJMON_OK
        }
        Err(e) => e.into(),
    })
}

/// The identity hash installed in `h`, written to `out`, or 0 if none has been asked for
/// (never installs one; for GCs and debuggers, from any thread). `stack` writes 0 while the
/// object is stack-locked (the hash is in the owner's lock record).
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
        out.write((*rt).inner.peek_identity_hash(h).unwrap_or(0));
        OBJMON_OK
    })
}

// ---------------------------------------------------------------------------------------------
// Introspection (issue 7 items 3 and 4): deadlocks, thread dumps, contention profile.

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

trait DynIntrospect {
    fn deadlocks(&self) -> Vec<objmon::Deadlock>;
    unsafe fn dump(&self, objects: &[*const objmon_header]) -> String;
    fn profile(&self) -> Vec<objmon::ObjectProfile>;
}

impl<P: Protocol> DynIntrospect for Rt<P> {
    fn deadlocks(&self) -> Vec<objmon::Deadlock> {
        self.0.find_deadlocks()
    }
    unsafe fn dump(&self, objects: &[*const objmon_header]) -> String {
        // SAFETY: forwarded contract (each pointer an initialised header of this runtime,
        // alive for the call).
        let hs = objects.iter().map(|&h| unsafe { hdr::<P>(h) });
        self.0.thread_dump_with(hs).to_string()
    }
    fn profile(&self) -> Vec<objmon::ObjectProfile> {
        self.0.contention_profile()
    }
}

/// Copies `items` into the caller's array of `cap` (`out` may be NULL when `cap` is 0) and
/// stores the total in `n`.
///
/// # Safety
/// `out` is valid for `cap` writes unless `cap` is 0; `n` is valid for a write.
unsafe fn copy_out<T: Copy>(items: &[T], out: *mut T, cap: usize, n: *mut usize) {
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
/// `from` is only compared, never read.
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
        (*rt).inner.relocate(from, to);
        OBJMON_OK
    })
}
