//! C ABI for objmon. The header `include/objmon.h` is generated from this crate by cbindgen
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

mod dispatch;
mod events;
mod introspect;
mod locking;
mod runtime;
mod tag;
mod thread;
mod types;

use dispatch::*;
pub use events::*;
pub use introspect::*;
pub use locking::*;
pub use runtime::*;
use tag::*;
pub use thread::*;
pub use types::*;
