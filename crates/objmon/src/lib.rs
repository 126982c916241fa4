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
//! | [`Biased`] | Kawachiya et al. (2002), as in Pizlo et al. §2.2 | bias on first acquire, never rebias |
//! | [`Fable`] | Pizlo et al., *FABLE* (2011) | learn mode, bias after N acquisitions by one thread |
//!
//! Layers, bottom up: [`park`] (futex parking), [`tasuki`] (the single-atomic system lock of
//! Onodera, 2000), [`monitor`] (the fat monitor with JLS §17.2 semantics), [`table`] (monitor
//! index → monitor), [`thread`] (attach / detach, small ids, per-thread context),
//! [`protocol`] (header encodings and fast / slow paths) and [`runtime`] (the API).
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

mod error;
pub mod monitor;
pub mod park;
pub mod protocol;
pub mod revoke;
pub mod runtime;
mod sync;
pub mod table;
pub mod tasuki;
pub mod thread;

pub use error::MonitorError;
pub use monitor::{FatMonitor, WaitOutcome};
pub use protocol::biased::{BiasConfig, BiasWord, Biased};
pub use protocol::fable::Fable;
pub use protocol::{fat::Fat, thin::Thin, visit_all, LockWord, Protocol, ProtocolVisitor};
pub use revoke::Revocation;
pub use runtime::{Config, InflationCause, MonitorGuard, Runtime, StatsSnapshot, ThreadHandle};
pub use tasuki::{SystemLockConfig, SystemLockVariant, TasukiLock};
pub use thread::{ThreadContext, ThreadCore, ThreadId};
