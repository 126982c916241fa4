//! Shared by the `tests/monitor_*.rs` files; not a test target of its own.
//!
//! Every check is a generic `fn check<E: Env>(e: E)` that makes its monitors with
//! [`Env::monitor`], so that one check runs on each protocol's process-wide runtime
//! ([`Shared`]: `Monitor::<_, P>::with_protocol`, the thread-local cache path) and on a
//! runtime of its own ([`Own`]: `Monitor::with_runtime`, the per-thread list path).
//! [`monitor_tests!`] makes one `#[test]` per check × protocol × runtime, each under the
//! watchdog, named `check::protocol::{global,own}` (so `cargo test thin::own` selects).
#![allow(dead_code)]

use objmon::vm::{global_runtime, Runtime};
use objmon::{Global, Monitor, MonitorProtocol};
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where a check's monitors live: one protocol, one runtime.
pub trait Env: Clone + Send + Sync + 'static {
    /// The protocol.
    type P: MonitorProtocol;
    /// How a monitor names its runtime.
    type R: objmon::RuntimeRef<Self::P> + Send + Sync + 'static;
    /// `"global"` or `"own"`.
    const KIND: &'static str;
    /// A monitor holding `value`, on this environment's runtime.
    fn monitor<T>(&self, value: T) -> Monitor<T, Self::P, Self::R>;
    /// The runtime the monitors use (for its counters, `attach` and `interrupt`).
    fn runtime(&self) -> Arc<Runtime<Self::P>>;
    /// Whether the runtime is this test's alone, so its counters are exact.
    fn exact(&self) -> bool {
        Self::KIND == "own"
    }
    /// `protocol/kind`, for messages.
    fn name(&self) -> String {
        format!("{}/{}", <Self::P as objmon::Protocol>::NAME, Self::KIND)
    }
}

/// The protocol's process-wide runtime (`Monitor::with_protocol`).
pub struct Shared<P>(PhantomData<fn() -> P>);

impl<P> Shared<P> {
    pub fn new() -> Self {
        Self(PhantomData)
    }
}

impl<P> Clone for Shared<P> {
    fn clone(&self) -> Self {
        Self::new()
    }
}

impl<P: MonitorProtocol> Env for Shared<P> {
    type P = P;
    type R = Global;
    const KIND: &'static str = "global";
    fn monitor<T>(&self, value: T) -> Monitor<T, P, Global> {
        Monitor::<T, P>::with_protocol(value)
    }
    fn runtime(&self) -> Arc<Runtime<P>> {
        global_runtime::<P>().clone()
    }
}

/// A runtime of the test's own (`Monitor::with_runtime`).
pub struct Own<P: MonitorProtocol>(Arc<Runtime<P>>);

impl<P: MonitorProtocol> Own<P> {
    pub fn new() -> Self {
        Self(Runtime::<P>::with_defaults())
    }
}

impl<P: MonitorProtocol> Clone for Own<P> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<P: MonitorProtocol> Env for Own<P> {
    type P = P;
    type R = Arc<Runtime<P>>;
    const KIND: &'static str = "own";
    fn monitor<T>(&self, value: T) -> Monitor<T, P, Arc<Runtime<P>>> {
        Monitor::with_runtime(&self.0, value)
    }
    fn runtime(&self) -> Arc<Runtime<P>> {
        self.0.clone()
    }
}

/// Runs `check(env)` under the watchdog.
pub fn run<E: Env>(secs: u64, env: E, check: impl FnOnce(E) + Send + 'static) {
    let name = env.name();
    eprintln!("{name}");
    crate::watchdog::within(secs, &name, move || check(env));
}

/// Polls `cond` (yielding, then sleeping 1 ms) until it holds; panics naming `what` after
/// `secs` (the watchdog's limit is longer, so this names the stuck step).
pub fn eventually(secs: u64, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut spins = 0u32;
    while !cond() {
        assert!(Instant::now() < deadline, "{what}: not after {secs} s");
        if spins < 100 {
            spins += 1;
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// The catalog names the macros below cover, in `objmon::vm::visit_all` order: every protocol
/// that is a `MonitorProtocol` (not the three that find a monitor by address, nor
/// `biased-signal` / `fable-signal` and the three `lightweight` protocols, which ask the host
/// for a promise: `Runtime::new_unchecked`).
pub const COVERED: [&str; 10] = [
    "fat",
    "thin",
    "thin-seed",
    "tasuki",
    "stack",
    "biased",
    "biased-seed",
    "fable",
    "biased-rseq",
    "fable-rseq",
];

/// `monitor_tests!(secs; check_a, check_b)`: for each check, a module with one `#[test]` per
/// protocol and runtime (`check_a::thin::global`, `check_a::thin::own`, ...), running
/// `crate::checks::check_a` under the watchdog (`secs`).
#[macro_export]
macro_rules! monitor_tests {
    ($secs:literal; $($check:ident),* $(,)?) => {$(
        mod $check {
            $crate::monitor_tests!(@each $check, $secs;
                fat: Fat, thin: Thin, thin_seed: ThinSeed, tasuki: Tasuki, stack: Stack,
                biased: Biased, biased_seed: BiasedSeed, fable: Fable,
                biased_rseq: BiasedRseq, fable_rseq: FableRseq);
        }
    )*};
    (@each $check:ident, $secs:literal; $($name:ident: $p:ident),*) => {$(
        mod $name {
            #[test]
            fn global() {
                $crate::monitor_common::run(
                    $secs,
                    $crate::monitor_common::Shared::<objmon::$p>::new(),
                    $crate::checks::$check,
                );
            }
            #[test]
            fn own() {
                $crate::monitor_common::run(
                    $secs,
                    $crate::monitor_common::Own::<objmon::$p>::new(),
                    $crate::checks::$check,
                );
            }
        }
    )*};
}

/// `per_protocol!(secs; check_a, check_b)`: for each check, one `#[test]` per protocol
/// (`check_a::thin`), running `crate::checks::check_a::<P>` under the watchdog. For what has
/// no runtime choice (`RawMonitor<P>` lives on the process-wide runtime).
#[macro_export]
macro_rules! per_protocol {
    ($secs:literal; $($check:ident),* $(,)?) => {$(
        mod $check {
            $crate::per_protocol!(@each $check, $secs;
                fat: Fat, thin: Thin, thin_seed: ThinSeed, tasuki: Tasuki, stack: Stack,
                biased: Biased, biased_seed: BiasedSeed, fable: Fable,
                biased_rseq: BiasedRseq, fable_rseq: FableRseq);
        }
    )*};
    (@each $check:ident, $secs:literal; $($name:ident: $p:ident),*) => {$(
        #[test]
        fn $name() {
            let name = <objmon::$p as objmon::Protocol>::NAME;
            eprintln!("{name}");
            $crate::watchdog::within($secs, name, $crate::checks::$check::<objmon::$p>);
        }
    )*};
}
