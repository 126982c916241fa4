//! C ABI for objmon. The header `include/objmon.h` is generated from this file by cbindgen
//! (the test `header_is_in_sync` keeps them equal); its opening comment is `src/model.md`,
//! which follows here.
//!
#![doc = include_str!("model.md")]
//!
//! Safety contract of the pointer arguments (the C caller's side): a runtime pointer comes
//! from `objmon_runtime_new` and is not used after `objmon_runtime_free`; a thread pointer comes
//! from `objmon_thread_attach` of that runtime and is not used after its last
//! `objmon_thread_detach`; a header pointer points to an `objmon_header` initialised by
//! `objmon_header_init` of that runtime (or all-zero bytes), that stays at its address and alive
//! while any thread holds or waits on it. Null pointers are detected and reported
//! (`OBJMON_E_NULL`).
//!
//! What the library checks for the caller, each an error code, never undefined
//! behaviour:
//!
//! - **one thread, one handle**: every call taking an `objmon_thread*` compares the calling OS
//!   thread with the one that attached it (a per-thread token, one load and compare) and
//!   answers `OBJMON_E_WRONG_THREAD` otherwise; attaching again on an attached thread returns
//!   the same handle and counts the attach (`objmon_thread_attach`);
//! - **no lock outlives its thread**: the handle counts its structured lock levels, and the last
//!   `objmon_thread_detach` is refused (`OBJMON_E_LOCKS_HELD`) while any is held, while
//!   unstructured ones are released, as JNI's `DetachCurrentThread` does;
//! - **native transitions come in pairs** (`objmon_enter_native` / `objmon_leave_native`), and
//!   no monitor call is made in native (`OBJMON_E_IN_NATIVE`);
//! - **one header, one runtime**: where the protocol's word leaves room in `objmon_header` (the
//!   4-byte words of `thin`, `fat`, `cacao`, `monitor-cache`), the header carries its runtime's
//!   tag and the calls off the lock fast path (`objmon_wait`, `objmon_notify*`,
//!   `objmon_monitor_enter`, `objmon_identity_hash`, `objmon_owner_of`, ...) answer
//!   `OBJMON_E_FOREIGN_HEADER` for a header of another runtime. Everywhere, thread ids and
//!   monitor indices are unique in the process, so a second runtime's lock calls wait or
//!   answer `OBJMON_E_FOREIGN_HEADER`, never take the lock as well (`docs/soundness.md` §7,
//!   with the protocols where that is still pending).
#![allow(non_camel_case_types)]

use objmon::vm::{
    Config, MonitorError, Protocol, ProtocolVisitor, Runtime, StatsSnapshot, ThreadHandle,
    ThreadId, WaitOutcome,
};
use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

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
    /// This runtime's header tag (nonzero) if the protocol's word leaves 4 bytes of
    /// `objmon_header` free; 0 if it leaves none (no tagging).
    tag: u32,
    /// How the protocol's header keeps the host's bits.
    host: host_bits::HostBits,
    /// Its live handles, so that `objmon_relocate` can move their unstructured records.
    handles: Arc<Handles>,
}

/// The live `objmon_thread`s of a runtime (addresses), shared with each of them: a handle
/// outlives `objmon_runtime_free` until its last detach.
#[derive(Default)]
struct Handles(std::sync::Mutex<Vec<usize>>);

impl Handles {
    fn list(&self) -> std::sync::MutexGuard<'_, Vec<usize>> {
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
    state: AtomicU64,
    inner: Box<dyn DynThread>,
    /// The runtime's header tag (`objmon_runtime::tag`).
    tag: u32,
    /// The runtime's identity (`DynRuntime::key`), for the calling thread's attach list.
    key: usize,
    /// The runtime's handle list, which names this handle until its last detach.
    handles: Arc<Handles>,
    // Everything below is touched only by the owner thread, after the `state` check.
    /// How many `objmon_thread_attach` calls the last detach is still owed.
    attaches: Cell<usize>,
    /// Structured lock levels held (`objmon_enter` / `objmon_try_enter` +1, `objmon_exit` -1),
    /// plus [`HAS_UNSTRUCTURED`] while `unstructured` is not empty: one load and one signed
    /// compare let `objmon_exit`'s fast path past both checks.
    structured: Cell<usize>,
    /// Unstructured holds (`objmon_monitor_enter`): header address and levels.
    unstructured: RefCell<Vec<(usize, u32)>>,
}

/// Bit 0 of `objmon_thread::state`: the thread is in native.
const IN_NATIVE: u64 = 1;
/// Top bit of `objmon_thread::structured`: the thread holds unstructured locks.
const HAS_UNSTRUCTURED: usize = 1 << (usize::BITS - 1);

/// Per-OS-thread tokens for the owner check (the C API's foreign-thread check). A token is assigned
/// on a thread's first attach from a process-wide counter, so no two OS threads ever share one,
/// even after a thread exits (unlike a thread-local's address or a recycled pthread id).
mod token {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicU64, Ordering};

    thread_local! {
        // `const` and without destructor: a plain TLS load, usable during thread teardown.
        static TOKEN: Cell<u64> = const { Cell::new(0) };
    }
    static NEXT: AtomicU64 = AtomicU64::new(1);

    /// The calling thread's token, 0 if it never attached.
    #[inline(always)]
    pub(super) fn mine() -> u64 {
        TOKEN.with(Cell::get)
    }

    /// The calling thread's token, assigned now if it has none: even and nonzero.
    pub(super) fn mine_or_new() -> u64 {
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
    static ATTACHED: RefCell<Vec<(usize, *mut objmon_thread)>> = const { RefCell::new(Vec::new()) };
}

impl objmon_thread {
    /// The handle behind `t` if the calling thread attached it and is not in native;
    /// `OBJMON_E_WRONG_THREAD` / `OBJMON_E_IN_NATIVE` / `OBJMON_E_NULL` otherwise. One TLS load,
    /// one load and one compare on the fast path.
    ///
    /// # Safety
    /// `t` is NULL or a live handle (the module's contract).
    #[inline(always)]
    unsafe fn check<'a>(t: *const objmon_thread) -> Result<&'a objmon_thread, objmon_status> {
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
    unsafe fn check_any_state<'a>(
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
    fn refusal(&self) -> objmon_status {
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
    unsafe fn exit_would_take_unstructured(&self, h: *const objmon_header) -> bool {
        let u = self.unstructured.borrow();
        match u.iter().find(|(p, _)| *p == h as usize) {
            // SAFETY: forwarded contract.
            Some(&(_, n)) => (unsafe { self.inner.lock_count(h) }) <= n,
            None => false,
        }
    }

    /// Structured levels held (without the flag).
    fn structured_levels(&self) -> usize {
        self.structured.get() & !HAS_UNSTRUCTURED
    }

    /// Keeps [`HAS_UNSTRUCTURED`] equal to "`unstructured` is not empty".
    fn flag_unstructured(&self, u: &[(usize, u32)]) {
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
    unsafe fn foreign(&self, h: *const objmon_header) -> bool {
        // SAFETY: forwarded contract.
        unsafe { foreign(self.tag, h) }
    }
}

/// Whether `h`'s tag word names a runtime other than the one tagged `tag`. A runtime whose
/// protocol word is 8 bytes has tag 0 and checks nothing; an untagged (all-zero) header is
/// accepted by every runtime.
///
/// # Safety
/// `h` points to a live `objmon_header`; when `tag != 0` its upper 4 bytes are the tag word
/// (the protocol's word fills only the lower 4, checked at runtime creation).
#[inline]
unsafe fn foreign(tag: u32, h: *const objmon_header) -> bool {
    // SAFETY: see the contract: in bounds, 4-aligned, never touched by the protocol.
    tag != 0 && {
        let t = unsafe { tag_word(h) }.load(Ordering::Relaxed);
        t != 0 && t != tag
    }
}

/// The upper 4 bytes of `h`, where a tagged runtime keeps its tag.
///
/// # Safety
/// `h` points to a live `objmon_header` whose protocol word is 4 bytes.
unsafe fn tag_word<'a>(h: *const objmon_header) -> &'a AtomicU32 {
    // SAFETY: an objmon_header is 8 bytes, 8-aligned: bytes 4..8 are in bounds and 4-aligned,
    // and the protocol's 4-byte word (at offset 0) never overlaps them.
    unsafe { &*(h as *const AtomicU32).add(1) }
}

/// Tags handed to runtimes (nonzero; wraps after 2^32 - 1 runtimes, when two runtimes alive
/// at once could share one: detection is then best effort).
fn next_tag() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    loop {
        let t = NEXT.fetch_add(1, Ordering::Relaxed);
        if t != 0 {
            return t;
        }
    }
}

/// The host's bits of each protocol's header, as one C value of `width` bits (bit 0 up).
///
/// `P::Header` is any type to the generic code (`Protocol` bounds it by no host-bits trait), so
/// the header types are told apart by `TypeId`; a header type not listed here (a protocol
/// added later) leaves the host no bits until it is.
mod host_bits {
    use super::objmon_header;
    use objmon::vm::{BiasWord, HostWord, LockWord, MarkWord, StackWord, TasukiHeader};
    use std::any::TypeId;

    /// One protocol's host bits: how many, and how to write and read them.
    #[derive(Clone, Copy)]
    pub(super) struct HostBits {
        /// How many bits (values 0 .. 2^width - 1); 0: none.
        pub width: u32,
        /// Writes an unlocked header carrying the value (of at most `width` bits).
        init: unsafe fn(*mut objmon_header, u32),
        /// The value, or `None` while the protocol has displaced it.
        read: unsafe fn(*const objmon_header) -> Option<u32>,
    }

    /// Mark words (`lightweight*`, `stack`) keep 7 host bits in place: bits 7..2 and 63
    /// (`MARK_HOST_BITS`). The C value packs them as bits 5..0 and 6.
    fn mark_from_value(v: u32) -> u64 {
        (u64::from(v & 0x3f) << 2) | (u64::from(v >> 6 & 1) << 63)
    }

    fn mark_to_value(w: u64) -> u32 {
        ((w >> 2) & 0x3f) as u32 | (((w >> 63) as u32) << 6)
    }

    // The accessors below each run on a pointer whose type was proven by `TypeId` in
    // `HostBits::of`. SAFETY of every dereference: the caller's contract (`init`: `h` valid for
    // writes of an `objmon_header`, which the header type fits, checked at runtime creation;
    // `read`: `h` an initialised header of the runtime, so a valid `H`).

    unsafe fn init_as<H>(h: *mut objmon_header, header: H) {
        // SAFETY: see above; the slot holds no live header yet (`objmon_header_init`'s contract).
        unsafe { std::ptr::write(h as *mut H, header) }
    }

    unsafe fn as_ref<'a, H>(h: *const objmon_header) -> &'a H {
        // SAFETY: see above.
        unsafe { &*(h as *const H) }
    }

    impl HostBits {
        /// The host bits of header type `H`.
        pub fn of<H: 'static>() -> HostBits {
            let t = TypeId::of::<H>();
            // SAFETY (every `unsafe` block in the closures): the header type is `H`, as the
            // `TypeId` comparison selecting the branch proves; see `init_as` / `as_ref`.
            if t == TypeId::of::<LockWord>() {
                HostBits {
                    width: 8,
                    init: |h, v| unsafe { init_as(h, LockWord::new(v as u8)) },
                    read: |h| Some(u32::from(unsafe { as_ref::<LockWord>(h) }.host_bits())),
                }
            } else if t == TypeId::of::<HostWord>() {
                HostBits {
                    width: 8,
                    init: |h, v| unsafe { init_as(h, HostWord::new(v)) },
                    read: |h| Some(unsafe { as_ref::<HostWord>(h) }.bits()),
                }
            } else if t == TypeId::of::<BiasWord>() {
                HostBits {
                    width: 8,
                    init: |h, v| unsafe { init_as(h, BiasWord::new(v as u8)) },
                    read: |h| Some(u32::from(unsafe { as_ref::<BiasWord>(h) }.host_bits())),
                }
            } else if t == TypeId::of::<MarkWord>() {
                HostBits {
                    width: 7,
                    init: |h, v| unsafe { init_as(h, MarkWord::new(mark_from_value(v))) },
                    read: |h| Some(mark_to_value(unsafe { as_ref::<MarkWord>(h) }.host_bits())),
                }
            } else if t == TypeId::of::<StackWord>() {
                HostBits {
                    width: 7,
                    init: |h, v| unsafe { init_as(h, StackWord::new(mark_from_value(v))) },
                    read: |h| {
                        unsafe { as_ref::<StackWord>(h) }
                            .host_bits()
                            .map(mark_to_value)
                    },
                }
            } else if t == TypeId::of::<TasukiHeader>() {
                // The lock word's host byte is bits 7..0 of the value, the aux word's 15..8.
                HostBits {
                    width: 16,
                    init: |h, v| unsafe { init_as(h, TasukiHeader::new(v as u8, (v >> 8) as u8)) },
                    read: |h| {
                        let t = unsafe { as_ref::<TasukiHeader>(h) };
                        Some(
                            u32::from(t.lock_word().host_bits())
                                | u32::from(t.aux_host_bits()) << 8,
                        )
                    },
                }
            } else {
                HostBits {
                    width: 0,
                    init: |_, _| unreachable!("a zero-width host value is never written"),
                    read: |_| Some(0),
                }
            }
        }

        /// Writes an unlocked header carrying `v` (`v < 2^width`, and `width > 0`).
        ///
        /// # Safety
        /// `h` is valid for writes, holds no live header, and the runtime's header type is the
        /// one this was made `of`.
        pub unsafe fn init(&self, h: *mut objmon_header, v: u32) {
            debug_assert!(self.width > 0 && v >> self.width == 0);
            // SAFETY: forwarded contract.
            unsafe { (self.init)(h, v) }
        }

        /// The host's value in `h`, `None` while displaced.
        ///
        /// # Safety
        /// `h` is an initialised header of a runtime whose header type this was made `of`.
        pub unsafe fn read(&self, h: *const objmon_header) -> Option<u32> {
            // SAFETY: forwarded contract.
            unsafe { (self.read)(h) }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn mark_packing_round_trips_every_value_and_stays_in_the_host_mask() {
            const MARK_HOST_BITS: u64 = 0x8000_0000_0000_00fc;
            for v in 0..128 {
                let w = mark_from_value(v);
                assert_eq!(w & !MARK_HOST_BITS, 0, "{v:#x} leaves the host bits");
                assert_eq!(mark_to_value(w), v);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Type erasure: one vtable call per operation, then the protocol's own (inlined) paths.

trait DynRuntime: Send + Sync + DynIntrospect {
    fn name(&self) -> &'static str;
    /// The runtime's identity while any handle of it lives (the address of its `Runtime`).
    fn key(&self) -> usize;
    unsafe fn header_init(&self, h: *mut objmon_header);
    fn attach(&self) -> Result<Box<dyn DynThread>, MonitorError>;
    unsafe fn owner_of(&self, h: *const objmon_header) -> Option<ThreadId>;
    fn interrupt(&self, id: ThreadId) -> Result<(), MonitorError>;
    fn stats(&self) -> StatsSnapshot;
    unsafe fn reclaim(&self, h: *mut objmon_header);
    unsafe fn peek_identity_hash(&self, h: *const objmon_header) -> Option<u32>;
    unsafe fn relocate(&self, from: *const objmon_header, to: *const objmon_header);
}

/// The operations of one attached thread. Every `unsafe fn` here acts as the thread: its
/// caller has checked that the calling OS thread attached this handle and (but for
/// `leave_native` and `lock_count`) is not in native (`objmon_thread::check`), and passes a
/// header pointer satisfying the module's contract.
trait DynThread {
    fn id(&self) -> u16;
    unsafe fn enter(&self, h: *const objmon_header) -> Result<(), MonitorError>;
    unsafe fn try_enter(&self, h: *const objmon_header) -> Result<bool, MonitorError>;
    unsafe fn exit(&self, h: *const objmon_header) -> Result<(), MonitorError>;
    unsafe fn wait(
        &self,
        h: *const objmon_header,
        timeout: Option<Duration>,
    ) -> Result<WaitOutcome, MonitorError>;
    unsafe fn notify(&self, h: *const objmon_header, all: bool) -> Result<(), MonitorError>;
    unsafe fn lock_count(&self, h: *const objmon_header) -> u32;
    fn interrupted(&self) -> bool;
    fn detach(self: Box<Self>);
    unsafe fn identity_hash(&self, h: *const objmon_header) -> Result<u32, MonitorError>;
    unsafe fn poll(&self);
    unsafe fn enter_native(&self);
    unsafe fn leave_native(&self);
}

struct Rt<P: Protocol>(Arc<Runtime<P>>);
/// A thread's handle and the protocol's word for it (`Protocol::handle_word`, computed once
/// at attach), which `enter` / `exit` pass on as a handle's guards do (`enter_with`): the
/// signal bias owners store it instead of the loaded header ± 256.
struct Th<P: Protocol>(ThreadHandle<'static, P>, u64);

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
    fn key(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }
    unsafe fn header_init(&self, h: *mut objmon_header) {
        // SAFETY: `h` is valid for writes of 8 bytes, 8-aligned (caller's contract), and
        // P::Header fits (checked in `objmon_runtime_new`); it holds no live header yet.
        unsafe { std::ptr::write(h as *mut P::Header, P::Header::default()) }
    }
    fn attach(&self) -> Result<Box<dyn DynThread>, MonitorError> {
        let th = self.0.attach()?;
        let word = P::handle_word(th.context());
        Ok(Box::new(Th(th, word)))
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
        // SAFETY: forwarded contract (`objmon_relocate`: at a safepoint, `to` a verbatim copy
        // of the header at `from`, an initialised header; `from` only compared).
        unsafe { self.0.relocate(from as *const P::Header, hdr::<P>(to)) }
    }
}

// SAFETY (every `unsafe` block in this impl): `self.1` is `P::handle_word` of `self.0`'s
// context (computed at attach, a pure function of the context); `self.0.context()` is the
// calling OS thread's own context, as the `Protocol` operations' contract (rule 1) requires: the caller checked
// that this thread attached the handle (`objmon_thread::check`: a per-OS-thread token stored
// at attach); native transitions come in pairs (rule 2) because `objmon_enter_native` /
// `objmon_leave_native` flip `IN_NATIVE` and refuse a second enter or an unmatched leave, and
// detach is refused in native; `hdr` gets a pointer satisfying the module's header contract
// (rule 3: valid for the call, not moved or freed while held unless reported).
impl<P: Protocol> DynThread for Th<P> {
    fn id(&self) -> u16 {
        self.0.id().get()
    }
    unsafe fn enter(&self, h: *const objmon_header) -> Result<(), MonitorError> {
        unsafe { P::enter_with(self.0.runtime(), self.0.context(), self.1, hdr::<P>(h)) }
    }
    unsafe fn try_enter(&self, h: *const objmon_header) -> Result<bool, MonitorError> {
        unsafe { P::try_enter(self.0.runtime(), self.0.context(), hdr::<P>(h)) }
    }
    unsafe fn exit(&self, h: *const objmon_header) -> Result<(), MonitorError> {
        unsafe { P::exit_with(self.0.runtime(), self.0.context(), self.1, hdr::<P>(h)) }
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
    fn detach(self: Box<Self>) {
        // Unstructured holds are the FFI handle's (released before this); the core handle
        // has none, and no forgotten guard: its id is free for reuse.
        let released = self.0.detach();
        debug_assert_eq!(released, 0);
    }
    unsafe fn identity_hash(&self, h: *const objmon_header) -> Result<u32, MonitorError> {
        self.0.identity_hash(unsafe { hdr::<P>(h) })
    }
    unsafe fn poll(&self) {
        unsafe { P::poll(self.0.runtime(), self.0.context()) }
    }
    unsafe fn enter_native(&self) {
        unsafe { P::enter_native(self.0.runtime(), self.0.context()) }
    }
    unsafe fn leave_native(&self) {
        unsafe { P::leave_native(self.0.runtime(), self.0.context()) }
    }
}

struct Make<'a> {
    name: &'a str,
    config: Config,
    out: Option<Result<objmon_runtime, objmon_status>>,
}

impl ProtocolVisitor for Make<'_> {
    fn visit<P: Protocol>(&mut self) {
        if self.out.is_some() || P::NAME != self.name {
            return;
        }
        let size = std::mem::size_of::<P::Header>();
        let fits = size <= std::mem::size_of::<objmon_header>()
            && std::mem::align_of::<P::Header>() <= std::mem::align_of::<objmon_header>();
        // A word of at most 4 bytes leaves bytes 4..8 free for the runtime tag.
        let tag = if size <= 4 { next_tag() } else { 0 };
        self.out = Some(if fits {
            // SAFETY: the -signal flavors' contract (`Runtime::new_unchecked`: every signal
            // handler on an attached thread keeps the barrier signal blocked) is the C host's
            // to keep: `objmon_runtime_new` states it for those names, and a C caller is
            // trusted with every contract of the header. The lightweight protocols' (no header
            // held through a leaked guard moved or freed unreported) is the header's rule for
            // every protocol: C has no guards, and a locked object that moves is reported with
            // `objmon_relocate` (model.md, "Moves"). The other protocols have none.
            let rt = unsafe { Runtime::<P>::new_unchecked(self.config.clone()) };
            Ok(objmon_runtime {
                inner: Box::new(Rt::<P>(rt)),
                tag,
                host: host_bits::HostBits::of::<P::Header>(),
                handles: Arc::default(),
            })
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

/// `objmon_thread::check` (or `check_any_state`) of `t`, returning its refusal.
macro_rules! owned {
    ($t:expr) => {
        // SAFETY: `t` is NULL or live (the caller's contract).
        match unsafe { objmon_thread::check($t) } {
            Ok(th) => th,
            Err(s) => return s,
        }
    };
    ($t:expr, any_state) => {
        // SAFETY: as above.
        match unsafe { objmon_thread::check_any_state($t) } {
            Ok(th) => th,
            Err(s) => return s,
        }
    };
}

// ---------------------------------------------------------------------------------------------
// The C functions.

/// `u32` of a decimal string, at compile time (the version parts Cargo gives as strings).
const fn parse_u32(s: &str) -> u32 {
    let b = s.as_bytes();
    let mut i = 0;
    let mut v = 0u32;
    while i < b.len() {
        assert!(b[i].is_ascii_digit(), "a version part is a decimal number");
        v = v * 10 + (b[i] - b'0') as u32;
        i += 1;
    }
    v
}

/// The crate's version, encoded as `objmon_version` returns it.
const VERSION: u32 = {
    let major = parse_u32(env!("CARGO_PKG_VERSION_MAJOR"));
    let minor = parse_u32(env!("CARGO_PKG_VERSION_MINOR"));
    let patch = parse_u32(env!("CARGO_PKG_VERSION_PATCH"));
    assert!(
        major <= 0xff && minor <= 0xff && patch <= 0xff,
        "each part fits a byte"
    );
    (major << 16) | (minor << 8) | patch
};

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

/// A human-readable description of status `s` (a static string), or "unknown status" if `s`
/// is no `objmon_status` value (any integer is accepted, as `strerror` accepts any errno).
#[no_mangle]
pub extern "C" fn objmon_strerror(s: i32) -> *const c_char {
    // Compare as integers: a C enum argument may hold any int, which would be undefined
    // behaviour in a Rust enum parameter.
    const MESSAGES: [(objmon_status, &CStr); 19] = [
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
        let mut make = Make {
            name,
            config: cfg,
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
unsafe fn checked_op(
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
mod tests {
    use super::*;

    fn message(s: i32) -> &'static str {
        // SAFETY: `objmon_strerror` returns a static NUL-terminated string.
        unsafe { CStr::from_ptr(objmon_strerror(s)) }
            .to_str()
            .unwrap()
    }

    #[test]
    fn strerror_names_every_status_and_only_those() {
        let last = OBJMON_E_HOST_BITS_DISPLACED as i32;
        for s in 0..=last {
            assert_ne!(message(s), "unknown status", "status {s} has no message");
        }
        for s in [last + 1, 42, -1, i32::MIN, i32::MAX] {
            assert_eq!(message(s), "unknown status");
        }
    }
}
