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
//! - **A Rust program** that wants a lock, and wait / notify, around each of many values:
//!   [`Monitor<T>`](Monitor). Threads attach themselves on first use; a monitor costs its
//!   header (4 or 8 bytes) until it is contended or waited on. For a non-reentrant mutex
//!   giving `&mut T`: `lock_api::Mutex<`[`RawMonitor`]`, T>`, with
//!   `lock_api::Condvar<`[`RawCondvar`]`>` waiting on that mutex's own wait set. objmon
//!   implements lock_api **0.5** (re-exported as [`objmon::lock_api`](lock_api)); the feature
//!   `lock_api_04` adds lock_api 0.4's `RawMutex` and `RawMutexTimed` for `RawMonitor`.
//! - **A language runtime or VM** embedding a header in its own objects: [`vm`] — a
//!   [`Runtime`](vm::Runtime) per VM, a [`ThreadHandle`](vm::ThreadHandle) per thread,
//!   unstructured locking, interrupts, GC hooks, identity hashes, thread dumps and deadlock
//!   detection. C and C++ runtimes: the `objmon-ffi` crate (`objmon.h`).
//! - **People who study locking protocols**: [`protocol`] has each protocol's header layout,
//!   fast paths and seed section; the `objmon-bench` CLI reproduces the papers' experiments;
//!   [`lab`] has the parts under the fat monitor.
//!
//! ## Which protocol
//!
//! | protocol | paper | idea | header |
//! |---|---|---|---|
//! | [`Thin`] (default) | Bacon et al., *Thin Locks* (1998) | 24-bit thin lock, CAS lock, plain-store unlock | 4 B |
//! | [`ThinSeed`] | the same, as the seed wrote it | nested lock after a failed CAS, unlock loads the word | 4 B |
//! | [`Tasuki`] | Onodera and Kawachiya (1999) | thin lock + contention bit, deflation | 8 B |
//! | [`Lightweight`] | HotSpot fast-locking (JDK-8291555) | CAS 01→00 + per-thread lock stack; with the next two, **`unsafe` to create, not for [`Monitor`]** (below) | 8 B |
//! | [`LightweightSeed`] | the same, as the seed wrote it | recursion inflates | 8 B |
//! | [`LightweightTable`] | HotSpot `UseObjectMonitorTable` | monitor found via a side table | 8 B |
//! | [`Stack`] | HotSpot stack-locking | displaced header in a lock record, INFLATING marker | 8 B |
//! | [`Biased`] | Kawachiya et al. (2002), as in Pizlo et al. §2.2 | bias on first acquire, never rebias | 8 B |
//! | [`BiasedSeed`] | the same, as the seed wrote it | count in the header (Figures 3-4) | 8 B |
//! | [`Fable`] | Pizlo et al., *FABLE* (2011) | learn mode, bias after N acquisitions by one thread | 8 B |
//! | [`BiasedRseq`], [`FableRseq`] | the same two, the owner's Figure 4 / 7 step in a Linux restartable sequence | no Dekker, no record; x86-64 Linux with glibc's rseq | 8 B |
//! | [`BiasedSignal`], [`FableSignal`] | the same two, the owner's step restarted by a revoker's signal | Figure 4 / 7's load, compare, store and nothing else; x86-64 Linux with glibc; **`unsafe` to create, not for [`Monitor`]** (below) | 8 B |
//! | [`Fat`] | baseline (HotSpot `LockingMode=0`) | every object goes straight to a fat monitor | 4 B |
//! | [`MonitorCache`] | Sun JDK 1.1 | no header bits; monitor cache locked on every look-up | 4 B |
//! | [`Cacao`] | Krall and Probst (1998) | no header bits; address-hashed monitor table | 4 B |
//! | [`CacaoSeed`] | the same, as the seed scoped it | bucket lock held over every enter and exit | 4 B |
//!
//! [`DefaultProtocol`] says why `thin` is the default, with the measurements. In short: pick
//! `thin` (the smallest header, the fastest uncontended path) unless one thread locks the
//! same objects over and over with nobody else (`fable`, `biased`: a plain load and store
//! for the bias owner, a revocation when another thread comes). Contended, `thin`'s fat
//! monitor runs at 0.7–1.0× the time of `parking_lot::Mutex` on the development machine
//! (see the README).
//! `docs/architecture.md` has the full catalog and layer map.
//!
//! ## Safety
//!
//! Misuse is an error or a panic, never undefined behaviour, never a hang that a correct
//! Java program would not have: `docs/soundness.md` has the argument and the tests that try
//! to break it.
//!
//! One promise is the host's, and so it is `unsafe`: [`BiasedSignal`] and [`FableSignal`]
//! are sound only if every signal handler that runs on a locking thread blocks objmon's
//! barrier signal ([`vm::barrier_signal`], `SIGRTMIN + 6`) in its `sa_mask`. Their revoker
//! signals the bias owner, whose handler restarts the owner's lock step if it interrupted
//! it; delivered inside a host's handler that interrupted that step, it sees only the
//! host's handler, and when that returns the step's store overwrites the revoked header:
//! two owners. Nothing at run time can tell the two cases apart, so `Monitor` and
//! `RawMonitor` do not take these two, [`Runtime::new`](vm::Runtime::new) does not compile
//! for them, and [`Runtime::new_unchecked`](vm::Runtime::new_unchecked) states the
//! contract. [`BiasedRseq`] and [`FableRseq`] give the same plain load and store to the
//! bias owner with nothing asked of the host (the kernel aborts a restartable sequence at
//! the first signal, whoever handles it).
//!
//! The other promise is about moving held headers: [`Lightweight`], [`LightweightSeed`] and
//! [`LightweightTable`] keep a thread's fast-locks on a lock stack of header addresses, and a
//! fast-locked word names no owner (HotSpot's design). After `mem::forget` of a guard and
//! `mem::swap` of two headers, nothing can tell the forgetful thread's stale entry from a live
//! one: its recursive fast path would enter a header another thread has locked since. So the
//! host promises never to move or free a header that a leaked guard still holds without
//! reporting it ([`Runtime::relocate`](vm::Runtime::relocate)), as a collector does;
//! `Monitor` does not take them and `Runtime::new` does not compile for them. [`Thin`] (the
//! default), [`Stack`] and [`Tasuki`] keep the owner in the word and ask nothing. The protocols' entry points are `unsafe fn` (they trust the caller to be the
//! thread whose context it passes); [`Monitor`], [`RawMonitor`] and
//! [`ThreadHandle`](vm::ThreadHandle) are what make them safe to use.
//!
//! Layers, bottom up: `park` (futex parking), `tasuki` (the single-atomic system lock of
//! Onodera, 2000), `monitor` (the fat monitor with JLS §17.2 semantics), `table` (monitor
//! index → monitor), `thread` (attach / detach, small ids, per-thread context),
//! [`protocol`] (header encodings and fast / slow paths), `runtime` (one runtime's state),
//! `handle` (the embedder's safe face, [`vm`]) and `user` ([`Monitor`], [`RawMonitor`]).
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
