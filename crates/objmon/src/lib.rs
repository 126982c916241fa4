//! # objmon — Java-style object monitors out of a few header bits
//!
//! A monitor is a reentrant lock with `wait`, `notify` and `notifyAll` (Java's
//! `synchronized`). objmon builds one out of a few bits of a header word, with the locking
//! protocols of the classic papers selectable side by side.
//!
//! ```
//! use objmon::Monitor;
//! use std::cell::Cell;
//! use std::sync::Arc;
//!
//! let tickets = Arc::new(Monitor::new(Cell::new(0u32))); // 16 bytes, no set-up
//! let waiter = {
//!     let tickets = tickets.clone();
//!     std::thread::spawn(move || {
//!         let mut t = tickets.lock();
//!         t.wait_while(|n| n.get() == 0).unwrap(); // Object.wait in a loop
//!         t.replace(0)
//!     })
//! };
//! let t = tickets.lock(); // synchronized (tickets) {
//! let again = tickets.lock(); //   reentrant
//! t.set(t.get() + 3);
//! again.notify_all(); //   notifyAll()
//! drop((again, t)); // }
//! assert_eq!(waiter.join().unwrap(), 3);
//! ```
//!
//! ## Who needs what
//!
//! - **A Rust program**: [`Monitor<T>`](Monitor) (threads attach on first use; it costs its
//!   header until contended or waited on), or `lock_api::Mutex<`[`RawMonitor`]`, T>` with
//!   `lock_api::Condvar<`[`RawCondvar`]`>` ([`lock_api`] 0.5; feature `lock_api_04`: 0.4).
//! - **A language runtime or VM**: [`vm`] (a [`Runtime`](vm::Runtime) per VM, a
//!   [`ThreadHandle`](vm::ThreadHandle) per thread); C and C++: the `objmon-ffi` crate.
//! - **People who study locking protocols**: [`protocol`], [`lab`], `objmon-bench`.
//!
//! ## Which protocol
//!
//! | family | protocols | header |
//! |---|---|---|
//! | thin locks (Bacon et al., 1998) | [`Thin`] (default), [`ThinSeed`] | 4 B |
//! | bimodal fields (Onodera and Kawachiya, 1999) | [`Tasuki`] | 8 B |
//! | HotSpot | [`Stack`]; [`Lightweight`], [`LightweightSeed`], [`LightweightTable`] (`unsafe` to create) | 8 B |
//! | biased (Kawachiya et al., 2002; Pizlo et al., *FABLE*, 2011) | [`Biased`], [`BiasedSeed`], [`Fable`], [`BiasedRseq`], [`FableRseq`]; [`BiasedSignal`], [`FableSignal`] (`unsafe` to create) | 8 B |
//! | baselines | [`Fat`], [`MonitorCache`] (JDK 1.1), [`Cacao`], [`CacaoSeed`] (Krall and Probst, 1998) | 4 B |
//!
//! Pick `thin` unless one thread locks the same objects over and over with nobody else
//! (`fable`, `biased`); [`DefaultProtocol`] says why, the README gives each protocol's idea,
//! `docs/architecture.md` the catalog and layer map.
//!
//! ## Safety
//!
//! Misuse is an error or a panic, never undefined behaviour, never a hang that a correct Java
//! program would not have (`docs/soundness.md`). [`Monitor`], [`RawMonitor`] and
//! [`ThreadHandle`](vm::ThreadHandle) make the protocols' `unsafe fn` entry points safe. Two
//! families need a host's promise ([`Runtime::new_unchecked`](vm::Runtime::new_unchecked)),
//! so `Monitor` does not take them: [`BiasedSignal`] / [`FableSignal`] (every signal handler
//! on a locking thread blocks [`vm::barrier_signal`]) and the `Lightweight` three (no header
//! a leaked guard holds moves unreported, [`Runtime::relocate`](vm::Runtime::relocate)).
#![warn(missing_docs)]

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod binding;
mod blocking;
mod deflate;
mod error;
pub mod events;
mod handle;
mod hash;
mod hash_state;
mod introspect;
pub mod lab;
mod membarrier;
mod monitor;
mod monitor_episodes;
mod park;
mod profile;
pub mod protocol;
mod revoke;
#[cfg(not(loom))]
mod rseq;
mod runtime;
mod sigbarrier;
mod spin;
mod spin_episode;
mod sync;
mod table;
mod tasuki;
mod thread;
#[cfg(not(loom))]
mod user;
pub mod vm;

pub use error::MonitorError;
pub use monitor::WaitOutcome;
pub use protocol::biased::{Biased, BiasedRseq, BiasedSeed, BiasedSignal};
pub use protocol::cacao::{Cacao, CacaoSeed};
pub use protocol::fable::{Fable, FableRseq, FableSignal};
pub use protocol::monitor_cache::MonitorCache;
pub use protocol::tasuki_bimodal::Tasuki;
pub use protocol::{
    fat::Fat,
    lightweight::{Lightweight, LightweightSeed, LightweightTable},
    stack::Stack,
    thin::{Thin, ThinSeed},
    Protocol,
};
#[cfg(not(loom))]
pub use user::{
    set_event_sink, DefaultProtocol, Global, Monitor, MonitorGuard, MonitorProtocol, RawCondvar,
    RawMonitor, RuntimeRef,
};

/// The lock_api (0.5) whose `RawMutex`, `RawMutexTimed`, `RawCondvar` and `RawCondvarTimed`
/// [`RawMonitor`] and [`RawCondvar`] implement: `objmon::lock_api::Mutex<RawMonitor, T>` and
/// `objmon::lock_api::Condvar<RawCondvar>` name the right version whatever else a program
/// depends on.
pub use lock_api;
