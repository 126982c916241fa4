//! The embedder's API, for language runtimes and VMs: a [`Runtime`] per VM, a
//! [`ThreadHandle`] per attached thread, and headers the host embeds in its own objects
//! ([`LockWord`], [`MarkWord`], ...), with unstructured locking (JNI's `MonitorEnter`),
//! interrupts, native transitions, GC hooks ([`Runtime::reclaim`], [`Runtime::relocate`]),
//! identity hashes, owner queries and introspection (thread dumps, deadlock detection,
//! contention profiles).
//!
//! A Rust program that wants a lock around its data wants [`Monitor`](crate::Monitor)
//! instead. The C ABI (crate `objmon-ffi`) is this API for C and C++ runtimes.
//!
//! ```
//! use objmon::vm::{LockWord, Runtime};
//! use objmon::Thin;
//! use std::time::Duration;
//!
//! // One runtime per VM; each object embeds a header (here with host bits 0x2a).
//! let rt = Runtime::<Thin>::with_defaults();
//! let object = LockWord::new(0x2a);
//!
//! let me = rt.attach().unwrap(); // every locking thread attaches once
//! {
//!     let guard = me.enter(&object).unwrap(); // synchronized (object) {
//!     let _nested = me.enter(&object).unwrap(); //   reentrant
//!     assert_eq!(me.lock_count(&object), 2);
//!     // Object.wait(1 ms): nobody notifies, so it times out.
//!     guard.wait(Some(Duration::from_millis(1))).unwrap();
//! } // } — unlocked here, also if the block panics
//! assert_eq!(rt.owner_of(&object), None);
//! assert_eq!(object.host_bits(), 0x2a); // host bits survive locking and inflation
//! ```
//!
//! **Moving objects (GC).** Every protocol identifies an object by its header's address
//! while it is locked. In safe Rust a locked header cannot move (a guard borrows it,
//! [`ThreadHandle::monitor_enter`] borrows it for the handle's `'env`), and an unlocked header
//! may move freely. A host that moves locked objects behind the borrow checker's back (a
//! copying GC over raw memory) copies the word verbatim and reports the move at a safepoint
//! with [`Runtime::relocate`]; the lock stacks and records are the GC roots to scan
//! ([`Lightweight::locked_objects`](crate::Lightweight::locked_objects),
//! [`Stack::locked_objects`](crate::Stack::locked_objects),
//! [`Biasing::locked_objects`](crate::protocol::biased::Biasing::locked_objects)). Identity
//! hashes move with the header (`thin`, `biased` and `fable` park a hash taken under another
//! thread's nested hold in a side table until that owner's next out-of-line unlock). After
//! `mem::forget` of a guard a locked header can move or die: a wrong answer at worst, never
//! undefined behaviour (`docs/soundness.md`).
//!
//! **One runtime per header.** A header must be used with one runtime only: its monitor
//! indices and thread ids are that runtime's. Both are unique in the process, so a header
//! used with a second runtime is never held by a thread of each: the second gets
//! [`MonitorError::ForeignHeader`] or waits, as for any held lock (`docs/soundness.md` §7,
//! which lists the protocols where this is still pending). A [`Monitor`](crate::Monitor)
//! cannot break the rule: its header is private and bound to its runtime when it is made.

pub use crate::blocking::BlockKind;
pub use crate::deflate::DeflationPolicy;
pub use crate::handle::{HeaderGuard, ThreadHandle};
pub use crate::introspect::{
    BlockedOn, Deadlock, DeadlockEdge, ObjectProfile, ObjectRef, OwnedMonitor, ThreadDump,
    ThreadInfo,
};
pub use crate::membarrier::init as init_revocation;
pub use crate::protocol::biased::{BiasConfig, BiasWord};
pub use crate::protocol::cacao::HostWord;
pub use crate::protocol::mark::MarkWord;
pub use crate::protocol::stack::StackWord;
pub use crate::protocol::tasuki_bimodal::TasukiHeader;
pub use crate::protocol::ThreadContext;
pub use crate::protocol::{names, visit_all, Knob, KnobError, LockWord, ProtocolVisitor};
pub use crate::revoke::{Revocation, RevocationKind, RevocationStats};
pub use crate::runtime::{Config, InflationCause, Runtime, StatsSnapshot};

/// The signal a `biased-signal` / `fable-signal` revoker sends the bias owner
/// (`SIGRTMIN + 6`), or `None` where those protocols bias nothing (outside x86-64 Linux with
/// glibc). A host that makes such a runtime ([`Runtime::new_unchecked`]) adds it to the
/// `sa_mask` of every signal handler that may run on a thread attached to it.
///
/// ```
/// if let Some(sig) = objmon::vm::barrier_signal() {
///     assert!(sig > 0);
/// }
/// ```
pub fn barrier_signal() -> Option<i32> {
    crate::sigbarrier::barrier_signal()
}

/// Whether `ip`, the instruction pointer a signal handler finds in its `ucontext_t`, is
/// inside a `biased-signal` / `fable-signal` bias owner's section: the few instructions
/// between the owner's read of its header and its committing store, which a revoker's
/// barrier signal restarts. A host handler that runs there with the barrier signal
/// unblocked lets a revocation nest inside it and land *over* the section (the contract of
/// [`Runtime::new_unchecked`]); a sampling profiler may use it to attribute such samples.
/// Async-signal-safe: it reads only the link-time table of sections. Always `false` where
/// those protocols bias nothing.
///
/// ```
/// // No owner section starts at the address of this function.
/// assert!(!objmon::vm::in_owner_section(objmon::vm::in_owner_section as usize));
/// ```
pub fn in_owner_section(ip: usize) -> bool {
    crate::sigbarrier::in_owner_section(ip)
}
pub use crate::table::MAX_MONITOR_INDEX;
pub use crate::tasuki::{SystemLockConfig, SystemLockVariant};
pub use crate::thread::{AttachedThread, Registry, ThreadCore, ThreadId, MAX_THREAD_ID};
#[cfg(not(loom))]
pub use crate::user::global_runtime;
pub use crate::{MonitorError, Protocol, WaitOutcome};
// The protocols, so that one `use objmon::vm::{...}` serves an embedder.
pub use crate::{
    Biased, BiasedRseq, BiasedSeed, BiasedSignal, Cacao, CacaoSeed, Fable, FableRseq, FableSignal,
    Fat, Lightweight, LightweightSeed, LightweightTable, MonitorCache, Stack, Tasuki, Thin,
    ThinSeed,
};
