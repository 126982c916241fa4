//! The C types of the ABI: status codes, wait outcomes, the header, the configuration and
//! statistics, and the opaque runtime and thread objects with their checks.

use super::*;

/// Result of every call. Functions return it; `objmon_strerror` takes it as an `int32_t`, so
/// that any integer a C caller passes is defined.
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
    /// The thread is in native code (between `objmon_enter_native` and `objmon_leave_native`),
    /// where it makes no monitor call; or it entered native twice. Nothing was done.
    OBJMON_E_IN_NATIVE = 12,
    /// `objmon_thread_detach` of the last attach while the thread still holds structured
    /// (`objmon_enter`) lock levels: refused, the thread stays attached. Exit them first.
    OBJMON_E_LOCKS_HELD = 13,
    /// The `objmon_thread` was attached by another OS thread; nothing was done.
    OBJMON_E_WRONG_THREAD = 14,
    /// `objmon_leave_native` without a matching `objmon_enter_native`.
    OBJMON_E_NOT_IN_NATIVE = 15,
    /// The header belongs to another runtime: its runtime tag (where the protocol leaves room
    /// for one; see `objmon_header`) or a monitor index or lock owner of another runtime;
    /// nothing was done.
    OBJMON_E_FOREIGN_HEADER = 16,
    /// `objmon_header_init_host` was given bits beyond `objmon_host_bits_width`; nothing was
    /// done.
    OBJMON_E_HOST_BITS_TOO_WIDE = 17,
    /// The host bits are not in the header now: `stack` displaces them into the owner's lock
    /// record while the object is stack-locked. Read them again after the unlock.
    OBJMON_E_HOST_BITS_DISPLACED = 18,
    /// `objmon_set_event_callback` on a runtime made without `objmon_config.events`.
    OBJMON_E_EVENTS_OFF = 19,
}

pub(crate) use objmon_status::*;

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
            MonitorError::ForeignHeader => OBJMON_E_FOREIGN_HEADER,
        }
    }
}

/// How a successful wait ended (only ever written by the library, never read from C).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum objmon_wait_outcome {
    /// Picked by notify / notifyAll.
    OBJMON_NOTIFIED = 0,
    /// The timeout elapsed.
    OBJMON_TIMED_OUT = 1,
}

/// The per-object header slot: 8 bytes, 8-aligned, opaque. Initialise with
/// `objmon_header_init` before first use; all-zero bytes (memory from `calloc` or a zeroing
/// GC) are an unlocked, unhashed header too, of no runtime in particular. (Its one field is
/// private: never read or write it.)
///
/// ONE HEADER, ONE RUNTIME. A header initialised by one runtime must only ever be used with
/// that runtime (until `objmon_header_reclaim` and a new `objmon_header_init`). Used with two,
/// both would believe they own it. Where the protocol's word is 4 bytes (`thin`, `fat`,
/// `cacao`, `monitor-cache`), `objmon_header_init` stores a runtime tag in the other 4 and the
/// calls off the lock fast path answer `OBJMON_E_FOREIGN_HEADER` for another runtime's header;
/// the lock fast path (`objmon_enter`, `objmon_try_enter`, `objmon_exit`) and the 8-byte
/// protocols cannot check: there the rule is the host's to keep.
///
/// HOST BITS. `objmon_host_bits_width(rt)` bits of it (7 to 16, per protocol) are the host's:
/// written by `objmon_header_init_host`, read by `objmon_header_host_bits`, never by reading
/// the bytes (their place differs by protocol).
#[repr(C)]
pub struct objmon_header {
    pub(crate) _opaque: u64,
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
    /// Nonzero: the runtime reports monitor events to the callback that
    /// `objmon_set_event_callback` sets; default off, and then events cost nothing.
    pub events: u8,
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
    pub(crate) inner: Box<dyn DynRuntime>,
    /// This runtime's header tag (nonzero) if the protocol's word leaves 4 bytes of
    /// `objmon_header` free; 0 if it leaves none (no tagging).
    pub(crate) tag: u32,
    /// How the protocol's header keeps the host's bits.
    pub(crate) host: host_bits::HostBits,
    /// Its live handles, so that `objmon_relocate` can move their unstructured records.
    pub(crate) handles: Arc<Handles>,
    /// Its event sink, if made with `objmon_config.events` (`objmon_set_event_callback`).
    pub(crate) events: Option<Arc<crate::events::CallbackSink>>,
}

/// The live `objmon_thread`s of a runtime (addresses), shared with each of them: a handle
/// outlives `objmon_runtime_free` until its last detach.
#[derive(Default)]
pub(crate) struct Handles(pub(crate) std::sync::Mutex<Vec<usize>>);

impl Handles {
    pub(crate) fn list(&self) -> std::sync::MutexGuard<'_, Vec<usize>> {
        // A panic while holding it left the list itself consistent (push / retain).
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// An attached thread (opaque): the identity of one OS thread on one runtime.
///
/// - Only the OS thread that attached it may use it: any other gets `OBJMON_E_WRONG_THREAD`
///   (or 0 / false from the functions that return a value), and nothing is done.
/// - Attaching again on that thread returns the same handle; each attach is ended by one
///   `objmon_thread_detach`.
/// - The last detach is refused (`OBJMON_E_LOCKS_HELD`) while the thread holds structured
///   (`objmon_enter`) levels; it releases unstructured (`objmon_monitor_enter`) ones.
/// - While the thread runs host code that may block or run long without objmon calls, it is
///   in native (`objmon_enter_native` / `objmon_leave_native`) or polls (`objmon_poll`):
///   otherwise, with `biased` and `fable` when the kernel refuses `membarrier`, another
///   thread revoking its bias waits until it comes back.
pub struct objmon_thread {
    /// The attaching thread's token (`token::mine`, even, never 0), plus [`IN_NATIVE`] while
    /// the thread is in native. Written only by the owner; atomic because a wrong thread may
    /// read it concurrently (that read is the check that refuses it).
    pub(crate) state: AtomicU64,
    pub(crate) inner: Box<dyn DynThread>,
    /// The runtime's header tag (`objmon_runtime::tag`).
    pub(crate) tag: u32,
    /// The runtime's identity (`DynRuntime::key`), for the calling thread's attach list.
    pub(crate) key: usize,
    /// The runtime's handle list, which names this handle until its last detach.
    pub(crate) handles: Arc<Handles>,
    // Everything below is touched only by the owner thread, after the `state` check.
    /// How many `objmon_thread_attach` calls the last detach is still owed.
    pub(crate) attaches: Cell<usize>,
    /// Structured lock levels held (`objmon_enter` / `objmon_try_enter` +1, `objmon_exit` -1),
    /// plus [`HAS_UNSTRUCTURED`] while `unstructured` is not empty: one load and one signed
    /// compare let `objmon_exit`'s fast path past both checks.
    pub(crate) structured: Cell<usize>,
    /// Unstructured holds (`objmon_monitor_enter`): header address and levels.
    pub(crate) unstructured: RefCell<Vec<(usize, u32)>>,
}

/// Bit 0 of `objmon_thread::state`: the thread is in native.
pub(crate) const IN_NATIVE: u64 = 1;
/// Top bit of `objmon_thread::structured`: the thread holds unstructured locks.
pub(crate) const HAS_UNSTRUCTURED: usize = 1 << (usize::BITS - 1);

/// Per-OS-thread tokens for the owner check (the C API's foreign-thread check). A token is assigned
/// on a thread's first attach from a process-wide counter, so no two OS threads ever share one,
/// even after a thread exits (unlike a thread-local's address or a recycled pthread id).
pub(crate) mod token {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicU64, Ordering};

    thread_local! {
        // `const` and without destructor: a plain TLS load, usable during thread teardown.
        static TOKEN: Cell<u64> = const { Cell::new(0) };
    }
    static NEXT: AtomicU64 = AtomicU64::new(1);

    /// The calling thread's token, 0 if it never attached.
    #[inline(always)]
    pub(crate) fn mine() -> u64 {
        TOKEN.with(Cell::get)
    }

    /// The calling thread's token, assigned now if it has none: even and nonzero.
    pub(crate) fn mine_or_new() -> u64 {
        TOKEN.with(|t| {
            if t.get() == 0 {
                t.set(NEXT.fetch_add(1, Ordering::Relaxed) << 1);
            }
            t.get()
        })
    }
}

thread_local! {
    /// The calling thread's live handles, by runtime key: a second attach to the same runtime
    /// returns the same handle.
    pub(crate) static ATTACHED: RefCell<Vec<(usize, *mut objmon_thread)>> = const { RefCell::new(Vec::new()) };
}

impl objmon_thread {
    /// The handle behind `t` if the calling thread attached it and is not in native;
    /// `OBJMON_E_WRONG_THREAD` / `OBJMON_E_IN_NATIVE` / `OBJMON_E_NULL` otherwise. One TLS load,
    /// one load and one compare on the fast path.
    ///
    /// # Safety
    /// `t` is NULL or a live handle (the module's contract).
    #[inline(always)]
    pub(crate) unsafe fn check<'a>(
        t: *const objmon_thread,
    ) -> Result<&'a objmon_thread, objmon_status> {
        // SAFETY: NULL or live by contract; only `state` (atomic) is read before the check.
        let Some(th) = (unsafe { t.as_ref() }) else {
            return Err(OBJMON_E_NULL);
        };
        if th.state.load(Ordering::Relaxed) == token::mine() {
            Ok(th)
        } else {
            Err(th.refusal())
        }
    }

    /// As [`check`](Self::check), but in native is fine (reads that act as nobody).
    ///
    /// # Safety
    /// As `check`.
    #[inline]
    pub(crate) unsafe fn check_any_state<'a>(
        t: *const objmon_thread,
    ) -> Result<&'a objmon_thread, objmon_status> {
        // SAFETY: as in `check`.
        let Some(th) = (unsafe { t.as_ref() }) else {
            return Err(OBJMON_E_NULL);
        };
        if th.state.load(Ordering::Relaxed) & !IN_NATIVE == token::mine() {
            Ok(th)
        } else {
            Err(OBJMON_E_WRONG_THREAD)
        }
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn refusal(&self) -> objmon_status {
        if self.state.load(Ordering::Relaxed) & !IN_NATIVE == token::mine() {
            OBJMON_E_IN_NATIVE
        } else {
            OBJMON_E_WRONG_THREAD
        }
    }

    /// Whether `objmon_exit(h)` would take away a level held unstructured (only possible when
    /// the thread holds `h` unstructured and no structured level on it): then it is refused.
    ///
    /// # Safety
    /// `h` is an initialised header of the handle's runtime.
    #[cold]
    pub(crate) unsafe fn exit_would_take_unstructured(&self, h: *const objmon_header) -> bool {
        let u = self.unstructured.borrow();
        match u.iter().find(|(p, _)| *p == h as usize) {
            // SAFETY: forwarded contract.
            Some(&(_, n)) => (unsafe { self.inner.lock_count(h) }) <= n,
            None => false,
        }
    }

    /// Structured levels held (without the flag).
    pub(crate) fn structured_levels(&self) -> usize {
        self.structured.get() & !HAS_UNSTRUCTURED
    }

    /// Keeps [`HAS_UNSTRUCTURED`] equal to "`unstructured` is not empty".
    pub(crate) fn flag_unstructured(&self, u: &[(usize, u32)]) {
        let n = self.structured_levels();
        self.structured.set(if u.is_empty() {
            n
        } else {
            n | HAS_UNSTRUCTURED
        });
    }

    /// Whether `h` carries another runtime's tag (never for untagged runtimes or headers).
    ///
    /// # Safety
    /// `h` points to a live `objmon_header`.
    #[inline]
    pub(crate) unsafe fn foreign(&self, h: *const objmon_header) -> bool {
        // SAFETY: forwarded contract.
        unsafe { foreign(self.tag, h) }
    }
}
