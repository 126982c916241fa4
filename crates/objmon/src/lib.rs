//! # objmon — Java-style object monitors out of a few header bits
//!
//! Every object of a language runtime gets a monitor — a reentrant lock with wait, notify,
//! notifyAll, interrupts and timeouts — from a few bits of its header word, with the locking
//! protocols of the classic papers selectable side by side:
//!
//! | protocol | paper | idea |
//! |---|---|---|
//! | [`Fat`] | baseline (HotSpot `LockingMode=0`) | every object goes straight to a fat monitor |
//! | [`Thin`] | Bacon et al., *Thin Locks* (1998) | 24-bit thin lock, CAS lock, plain-store unlock |
//! | [`Stack`] | HotSpot stack-locking | displaced header in a lock record, INFLATING marker |
//! | [`Lightweight`] | HotSpot fast-locking (JDK-8291555) | CAS 01→00 + per-thread lock stack |
//! | [`LightweightSeed`] | the same, as the seed wrote it | recursion inflates |
//! | [`LightweightTable`] | HotSpot `UseObjectMonitorTable` | monitor found via a side table |
//! | [`Biased`] | Kawachiya et al. (2002), as in Pizlo et al. §2.2 | bias on first acquire, never rebias |
//! | [`BiasedSeed`] | the same, as the seed wrote it | count in the header (Figures 3-4) |
//! | [`Fable`] | Pizlo et al., *FABLE* (2011) | learn mode, bias after N acquisitions by one thread |
//! | [`MonitorCache`] | Sun JDK 1.1 | no header bits; monitor cache locked on every look-up |
//! | [`Cacao`] | Krall and Probst (1998) | no header bits; address-hashed monitor table |
//! | [`Tasuki`] | Onodera and Kawachiya (1999) | thin lock + contention bit, deflation |
//!
//! [`Stack`] and the `Lightweight*` protocols give idle monitors back to their objects ([`deflate`],
//! [`DeflationPolicy`] in [`Config`]).
//!
//! ## Moving objects (GC)
//!
//! Every protocol identifies an object by its header's address while it is locked: `fat` and
//! `thin` in a thread's unstructured-lock list, `lightweight` in its lock stack, `stack` in its
//! lock records; and `stack` puts a record's address into the header. In safe Rust a locked
//! header cannot move — a guard borrows it, [`ThreadHandle::monitor_enter`] borrows it for the
//! handle's `'env` — and an unlocked header may move freely (all protocols: its word holds
//! host bits, lock bits and at most a monitor index, no address). A host that moves locked
//! objects behind the borrow checker's back (a copying GC over raw memory) must copy the word
//! verbatim and, at a safepoint, report the move with [`Runtime::relocate`] (one hook for
//! every protocol; C: `objmon_relocate`); the lock stacks and records are the GC roots to scan
//! ([`Lightweight::locked_objects`], [`Stack::locked_objects`],
//! [`Biasing::locked_objects`](protocol::biased::Biasing::locked_objects)). `fat` and `thin` keep no
//! per-thread record of guard-held locks and need nothing but the verbatim copy. Identity
//! hashes move with the header: in `thin`, `biased` and `fable` a hash taken while another
//! thread holds the lock nested waits in a table keyed by address only until that owner's
//! next out-of-line unlock, which settles it into a monitor before the header can move
//! (`hash.rs`); a moving GC reports moves of locked objects with [`Runtime::relocate`], which
//! moves such an entry too. In every protocol an object locked *unstructured* through a Rust
//! handle must not move at all: the handle dereferences its recorded address when the thread
//! detaches (the C library moves its handles' records in `objmon_relocate`). After
//! `mem::forget` of a guard a locked header can move or die; no protocol dereferences a
//! lock-stack entry or a record's object address, the records a `stack` header can point
//! into are never freed, and the thread's id is retired: a wrong answer at worst, never
//! undefined behaviour (`docs/soundness.md`).
//!
//! Counters: [`Runtime::stats_snapshot`] — inflations by cause, deflations, live monitors.
//! Introspection ([`introspect`]): [`Runtime::thread_dump`] (jstack's monitor lines),
//! [`Runtime::find_deadlocks`] (confirmed cycles, found without stopping the world) and, with
//! [`Config::profiling`], [`Runtime::contention_profile`] (which lock hurts).
//!
//! Layers, bottom up: [`park`] (futex parking), [`tasuki`] (the single-atomic system lock of
//! Onodera, 2000), [`monitor`] (the fat monitor with JLS §17.2 semantics), [`table`] (monitor
//! index → monitor), [`thread`] (attach / detach, small ids, per-thread context),
//! [`protocol`] (header encodings and fast / slow paths), [`runtime`] (one runtime's state)
//! and the API over them ([`Runtime::attach`], [`ThreadHandle`], [`MonitorGuard`]). The
//! protocols' entry points are `unsafe fn` (they trust the caller to be the thread whose
//! context it passes); the handle is what makes them safe to use (`docs/soundness.md`).
//!
//! ```
//! use objmon::{Runtime, Thin, LockWord};
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
#![warn(missing_docs)]

#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

pub mod deflate;
mod error;
mod handle;
mod hash;
pub mod introspect;
pub mod monitor;
pub mod park;
pub mod protocol;
pub mod revoke;
pub mod runtime;
mod spin;
mod sync;
pub mod table;
pub mod tasuki;
pub mod thread;

pub use deflate::DeflationPolicy;
pub use error::MonitorError;
pub use handle::{MonitorGuard, ThreadHandle};
pub use introspect::{
    BlockKind, BlockedOn, Deadlock, DeadlockEdge, ObjectProfile, ObjectRef, OwnedMonitor,
    ThreadDump, ThreadInfo,
};
pub use monitor::{FatMonitor, WaitOutcome};
pub use protocol::biased::{BiasConfig, BiasWord, Biased, BiasedSeed};
pub use protocol::cacao::{Cacao, HostWord};
pub use protocol::fable::Fable;
pub use protocol::monitor_cache::MonitorCache;
pub use protocol::tasuki_bimodal::{Tasuki, TasukiHeader};
pub use protocol::{
    fat::Fat,
    lightweight::{Lightweight, LightweightSeed, LightweightTable},
    mark::MarkWord,
    stack::Stack,
    thin::Thin,
    visit_all, LockWord, Protocol, ProtocolVisitor,
};
pub use protocol::{Knob, KnobError};
pub use revoke::Revocation;
pub use runtime::{Config, InflationCause, Runtime, StatsSnapshot};
pub use tasuki::{SystemLockConfig, SystemLockVariant, TasukiLock};
pub use thread::{ThreadContext, ThreadCore, ThreadId};
