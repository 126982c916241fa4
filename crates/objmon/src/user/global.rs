//! Where a [`Monitor`](crate::Monitor)'s runtime comes from: the process-wide runtime of its
//! protocol ([`Global`], what `Monitor::new` uses), or one the host made
//! (`Arc<Runtime<P>>`, what [`Monitor::with_runtime`](crate::Monitor::with_runtime) uses).
//!
//! Owns the process-wide runtimes (one per protocol, made on first use with the default
//! [`Config`](crate::vm::Config)) and each thread's cached automatic attachment to them: the
//! fast path of `Monitor::lock` is one thread-local load, then the protocol's own.

use super::attach::{self, Auto, Cache};
use crate::events::{EventSink, SetSinkError};
use crate::protocol::biased::{Biased, BiasedRseq, BiasedSeed};
use crate::protocol::fable::{Fable, FableRseq};
use crate::protocol::fat::Fat;
use crate::protocol::stack::Stack;
use crate::protocol::tasuki_bimodal::Tasuki;
use crate::protocol::thin::{Thin, ThinSeed};
use crate::protocol::Protocol;
use crate::runtime::{Config, Runtime};
use crate::sync::Arc;
use std::ptr::NonNull;

/// A protocol that [`Monitor<T>`](crate::Monitor) and [`RawMonitor`](crate::RawMonitor) can
/// use: its header carries the lock state with it, so the value and its header may move
/// together while unlocked (into a `Vec` that grows, through `into_inner` or `drop(m)`, which
/// move), and it has a process-wide runtime, so that `Monitor::with_protocol` needs none.
/// Every protocol of this crate but `cacao`, `cacao-seed` and `monitor-cache`, which find an
/// object's monitor by its header's *address* (a moved header would leave its fat monitor
/// behind: a leak per move), `biased-signal` / `fable-signal` and the three `lightweight`
/// protocols (below). Those remain available to hosts through [`objmon::vm`](crate::vm),
/// where the host reports moves ([`Runtime::relocate`](crate::vm::Runtime::relocate)) or
/// keeps the contract of [`Runtime::new_unchecked`]. Sealed.
///
/// ```compile_fail,E0277
/// // `cacao` keys monitors by address: a moved `Monitor` would leak its fat monitor.
/// let m = objmon::Monitor::<u32, objmon::Cacao>::with_protocol(0);
/// ```
///
/// Nor `biased-signal` and `fable-signal`, which are sound only while the host keeps a
/// promise about its signal handlers ([`Runtime::new_unchecked`]); `biased-rseq` and
/// `fable-rseq` are the fast bias owners a `Monitor` takes.
///
/// ```compile_fail,E0277
/// let m = objmon::Monitor::<u32, objmon::BiasedSignal>::with_protocol(0);
/// ```
/// ```compile_fail,E0277
/// let m = objmon::Monitor::<u32, objmon::FableSignal>::with_protocol(0);
/// ```
/// ```compile_fail,E0277
/// let m: Option<objmon::RawMonitor<objmon::BiasedSignal>> = None;
/// ```
///
/// Nor `lightweight`, `lightweight-seed` and `lightweight-table`: a fast-locked word names
/// no owner, so after `mem::forget` of a guard and `mem::swap` of two monitors (or a drop
/// and a new monitor at the freed address) the thread's lock stack cannot be checked
/// against the header now at the address. `thin` (the default) and `stack` keep the owner in
/// the word.
///
/// ```compile_fail,E0277
/// let m = objmon::Monitor::<u32, objmon::Lightweight>::with_protocol(0);
/// ```
/// ```compile_fail,E0277
/// let m = objmon::Monitor::<u32, objmon::LightweightTable>::with_protocol(0);
/// ```
/// ```
/// let m = objmon::Monitor::<u32, objmon::BiasedRseq>::with_protocol(0);
/// drop(m.lock());
/// ```
pub trait MonitorProtocol: Protocol + sealed::MonitorProtocol {}

/// Where a monitor finds its runtime: [`Global`] (the protocol's process-wide runtime, a
/// zero-sized marker) or an `Arc<Runtime<P>>` of the host's. Sealed.
pub trait RuntimeRef<P: Protocol>: sealed::RuntimeRef<P> {}

/// The process-wide runtime of a protocol: what [`Monitor::new`](crate::Monitor::new) uses.
/// Zero-sized.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Global;

/// The process-wide runtime of protocol `P`, made on first use with the default
/// [`Config`](crate::vm::Config): the runtime behind every [`Monitor::new`](crate::Monitor::new)
/// of that protocol. For its counters, thread dumps and deadlock detection.
///
/// ```
/// use objmon::{Monitor, Thin};
/// let m: Monitor<u32, Thin> = Monitor::new(7);
/// drop(m.lock());
/// let rt = objmon::vm::global_runtime::<Thin>();
/// assert!(rt.stats_snapshot().attached_threads >= 1); // this thread, attached by `lock`
/// ```
pub fn global_runtime<P: MonitorProtocol>() -> &'static Arc<Runtime<P>> {
    <P as sealed::MonitorProtocol>::runtime()
}

/// The sink of the process-wide runtimes, and whether one of them was made (under one lock,
/// so that a runtime is made either with the sink or before it was set, never in between).
static GLOBAL_EVENTS: std::sync::Mutex<(Option<std::sync::Arc<dyn EventSink>>, bool)> =
    std::sync::Mutex::new((None, false));

/// Sets the [`EventSink`] of the process-wide runtimes (those of [`Monitor::new`],
/// [`RawMonitor`](crate::RawMonitor) and [`global_runtime`]), every protocol's: once, and
/// before any of them is made, that is before the first lock of a [`Monitor`] of the
/// default runtime. A runtime's sink is fixed at its creation (its monitors carry it), so a
/// sink that could come later would cost every slow path a look at a shared slot; a host
/// that needs to switch sinks installs one that forwards. A runtime of the host's takes its
/// sink in [`Config::events`](crate::vm::Config::events) instead.
///
/// ```
/// use objmon::events::{Recorder, SetSinkError};
/// use std::sync::Arc;
/// let rec = Arc::new(Recorder::new());
/// objmon::set_event_sink(rec.clone()).unwrap(); // before the first Monitor
/// assert_eq!(objmon::set_event_sink(rec.clone()), Err(SetSinkError::AlreadySet));
/// let m = objmon::Monitor::new(0u32);
/// drop(m.lock());
/// ```
///
/// [`Monitor`]: crate::Monitor
/// [`Monitor::new`]: crate::Monitor::new
pub fn set_event_sink(sink: std::sync::Arc<dyn EventSink>) -> Result<(), SetSinkError> {
    let mut g = GLOBAL_EVENTS.lock().unwrap_or_else(|p| p.into_inner());
    if g.0.is_some() {
        return Err(SetSinkError::AlreadySet);
    }
    if g.1 {
        return Err(SetSinkError::TooLate);
    }
    g.0 = Some(sink);
    Ok(())
}

/// The configuration of a process-wide runtime about to be made: the default, with the
/// sink of [`set_event_sink`] if one was set; no sink can be set afterwards.
fn global_config() -> Config {
    let mut g = GLOBAL_EVENTS.lock().unwrap_or_else(|p| p.into_inner());
    g.1 = true;
    Config {
        events: g.0.clone(),
        ..Config::default()
    }
}

pub(crate) mod sealed {
    use super::*;

    pub trait MonitorProtocol: Protocol {
        /// An unlocked header without host bits, as a constant (for `const fn new`).
        #[cfg(not(loom))]
        const UNLOCKED: Self::Header;
        /// The runtime, made on first call.
        fn runtime() -> &'static Arc<Runtime<Self>>;
        /// The runtime if it was made.
        fn runtime_if_made() -> Option<&'static Arc<Runtime<Self>>>;
        /// This thread's cached automatic attachment to it.
        fn cache() -> &'static Cache<Self>;
        /// Where the runtime lives.
        fn cell() -> &'static std::sync::OnceLock<Arc<Runtime<Self>>>;
    }

    pub trait RuntimeRef<P: Protocol> {
        /// The calling thread's automatic attachment, made now if it has none.
        fn current(&self) -> NonNull<Auto<P>>;
        /// The calling thread's automatic attachment, if it has one.
        fn current_if_attached(&self) -> Option<NonNull<Auto<P>>>;
        /// The runtime, unless it was never made (then no header of it was ever locked).
        fn runtime(&self) -> Option<&Runtime<P>>;
    }
}

impl<P: MonitorProtocol> RuntimeRef<P> for Global {}
impl<P: MonitorProtocol> sealed::RuntimeRef<P> for Global {
    #[inline(always)]
    fn current(&self) -> NonNull<Auto<P>> {
        // A thread-local without destructor: one load, valid in any teardown order.
        match NonNull::new(P::cache().with(|c| c.get()) as *mut Auto<P>) {
            Some(a) => a,
            None => attach::find_or_attach(P::runtime(), Some(P::cache())),
        }
    }

    #[inline]
    fn current_if_attached(&self) -> Option<NonNull<Auto<P>>> {
        NonNull::new(P::cache().with(|c| c.get()) as *mut Auto<P>)
            .or_else(|| P::runtime_if_made().and_then(attach::find))
    }

    #[inline]
    fn runtime(&self) -> Option<&Runtime<P>> {
        P::runtime_if_made().map(|rt| &**rt)
    }
}

impl<P: Protocol> RuntimeRef<P> for Arc<Runtime<P>> {}
impl<P: Protocol> sealed::RuntimeRef<P> for Arc<Runtime<P>> {
    #[inline]
    fn current(&self) -> NonNull<Auto<P>> {
        match attach::find(self) {
            Some(a) => a,
            None => attach::find_or_attach(self, None),
        }
    }

    #[inline]
    fn current_if_attached(&self) -> Option<NonNull<Auto<P>>> {
        attach::find(self)
    }

    #[inline]
    fn runtime(&self) -> Option<&Runtime<P>> {
        Some(self)
    }
}

/// Implements [`MonitorProtocol`] for each protocol: its unlocked header as a constant, and a
/// runtime static and a thread-local cache of its own (statics of a generic function would
/// be shared by every protocol; these are one per expansion).
macro_rules! process_wide {
    ($($p:ty => $unlocked:expr;)*) => {$(
        impl MonitorProtocol for $p {}
        impl sealed::MonitorProtocol for $p {
            #[cfg(not(loom))]
            const UNLOCKED: Self::Header = $unlocked;

            fn runtime() -> &'static Arc<Runtime<Self>> {
                Self::cell().get_or_init(|| Runtime::new(global_config()))
            }

            #[inline]
            fn runtime_if_made() -> Option<&'static Arc<Runtime<Self>>> {
                Self::cell().get()
            }

            #[inline(always)]
            fn cache() -> &'static Cache<Self> {
                thread_local! {
                    static CACHE: std::cell::Cell<*const Auto<$p>> =
                        const { std::cell::Cell::new(std::ptr::null()) };
                }
                &CACHE
            }

            #[inline]
            fn cell() -> &'static std::sync::OnceLock<Arc<Runtime<Self>>> {
                static RUNTIME: std::sync::OnceLock<Arc<Runtime<$p>>> =
                    std::sync::OnceLock::new();
                &RUNTIME
            }
        }
    )*};
}

process_wide! {
    Fat => crate::protocol::LockWord::new(0);
    Thin => crate::protocol::LockWord::new(0);
    ThinSeed => crate::protocol::LockWord::new(0);
    Stack => crate::protocol::stack::StackWord::new(0);
    Biased => crate::protocol::biased::BiasWord::new(0);
    BiasedSeed => crate::protocol::biased::BiasWord::new(0);
    Fable => crate::protocol::biased::BiasWord::new(0);
    BiasedRseq => crate::protocol::biased::BiasWord::new(0);
    FableRseq => crate::protocol::biased::BiasWord::new(0);
    Tasuki => crate::protocol::tasuki_bimodal::TasukiHeader::new(0, 0);
}
