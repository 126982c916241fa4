//! # objmon-fuzz — an adversarial fuzzer of objmon's safe API
//!
//! Owns: generating cases (sequences of calls of the safe surface by several threads, and
//! the adversary's moves between them), running them on every protocol of
//! `objmon::vm::visit_all` against a reference model of Java monitors, and shrinking a
//! failing case to a minimal one, printed as a ready-to-paste regression test.
//! `docs/fuzzing.md` says how to run it and what it found.
//!
//! Layers: [`step`] (cases, their proptest strategies, their printing), [`kit`] (the three
//! surfaces: `Monitor<T, P>`, `lock_api::Mutex<RawMonitor<P>, T>` and `vm::ThreadHandle`), `worker` (the threads that make the
//! calls), [`model`] (the reference semantics), `driver`, `calls` and `phases` (one case,
//! in order, checked), [`signal`] (the host signal adversary), and here the per-protocol
//! catalog and the time-budgeted, seeded loop.
//!
//! Invariants: a case is a pure function of its seed (the driver orders every call, so a
//! replay repeats the schedule up to the kernel's choice among threads that the model says
//! may race, and the model accepts every such choice); every violation is an `Err` naming
//! the object, the threads and the model's view, never a panic in the fuzzer itself.

#![warn(missing_docs)]

mod calls;
mod driver;
pub mod kit;
pub mod model;
mod phases;
pub mod signal;
pub mod sink;
pub mod step;
mod worker;

pub use sink::Hostile;
pub use step::{regression_test, Case, NativeOp, Op, Step, Surface};

use objmon::vm::{Protocol, ProtocolVisitor};
use proptest::test_runner::{Config, RngAlgorithm, TestError, TestRng, TestRunner};
use std::cell::Cell;
use std::time::{Duration, Instant};

pub use driver::Adversary;

/// Runs a case against the model; `Err` describes the first violation.
type RunFn = fn(&Case, Adversary) -> Result<(), String>;

/// One protocol of the catalog, with the surfaces it has.
#[derive(Clone, Copy)]
pub struct Target {
    /// The catalog name.
    pub name: &'static str,
    vm: RunFn,
    monitor: Option<RunFn>,
    lock_api: Option<RunFn>,
    /// Whether safe code may move its live objects: not for the protocols that find a
    /// monitor by the header's address (their hosts report moves through
    /// `Runtime::relocate`), nor for those made only by `Runtime::new_unchecked` on the
    /// promise that a header held through a leaked guard never moves
    /// (`Protocol::HOST_MOVE_CONTRACT`).
    movable: bool,
}

impl Target {
    /// Whether the protocol is one of the `-signal` flavors (the host signal adversary is
    /// always in their set, and in every other protocol's only when asked for).
    pub fn is_signal(&self) -> bool {
        self.name.ends_with("-signal")
    }
    /// Whether it has the `Monitor<T, P>` surface, and so the `lock_api::Mutex<RawMonitor<P>,
    /// T>` one (all but the three protocols that find a monitor by the header's address and
    /// the five that ask the host for a promise).
    pub fn has_monitor(&self) -> bool {
        self.monitor.is_some()
    }
    /// The default adversary for this protocol: signals for the `-signal` flavors (or all if
    /// `signals_everywhere`), moves of live objects except for the address-keyed protocols
    /// (or all if `moves_everywhere`).
    pub fn adversary(&self, signals_everywhere: bool, moves_everywhere: bool) -> Adversary {
        Adversary {
            signals: signals_everywhere || self.is_signal(),
            moves: moves_everywhere || self.movable,
            lenient_moved: driver::RECORDS_BY_ADDRESS.contains(&self.name),
            strict_events: false,
        }
    }
    /// Runs one case.
    pub fn run(&self, case: &Case, adv: Adversary) -> Result<(), String> {
        match case.surface {
            Surface::Vm => (self.vm)(case, adv),
            Surface::Monitor => match self.monitor {
                Some(f) => f(case, adv),
                None => Ok(()),
            },
            Surface::LockApi => match self.lock_api {
                Some(f) => f(case, adv),
                None => Ok(()),
            },
        }
    }
}

macro_rules! monitor_protocols {
    ($($p:ident),* $(,)?) => {
        /// The `Monitor` and `lock_api` surfaces of protocol `name`, if it is a
        /// `MonitorProtocol`.
        fn monitor_of(name: &str) -> Option<(RunFn, RunFn)> {
            $(if name == <objmon::$p as Protocol>::NAME {
                return Some((
                    driver::run::<kit::MonitorKit<objmon::$p>>,
                    driver::run::<kit::LockApiKit<objmon::$p>>,
                ));
            })*
            None
        }
    };
}

// Every `MonitorProtocol` (the catalog less the three that find a monitor by address and
// the five that ask the host for a promise); `tests/fuzz.rs` checks that this list and
// `visit_all` agree.
monitor_protocols!(
    Fat, Thin, ThinSeed, Tasuki, Stack, Biased, BiasedSeed, Fable, BiasedRseq, FableRseq,
);

/// The protocols that find an object's monitor by its header's address.
const ADDRESS_KEYED: [&str; 3] = ["cacao", "cacao-seed", "monitor-cache"];

/// Every protocol of `visit_all`, in catalog order.
pub fn targets() -> Vec<Target> {
    struct V(Vec<Target>);
    impl ProtocolVisitor for V {
        fn visit<P: Protocol>(&mut self) {
            self.0.push(Target {
                name: P::NAME,
                vm: driver::run::<kit::VmKit<P>>,
                monitor: monitor_of(P::NAME).map(|m| m.0),
                lock_api: monitor_of(P::NAME).map(|m| m.1),
                movable: !P::HOST_MOVE_CONTRACT && !ADDRESS_KEYED.contains(&P::NAME),
            });
        }
    }
    let mut v = V(Vec::new());
    objmon::vm::visit_all(&mut v);
    v.0
}

/// Replays `case` on protocol `name` (what a printed regression test calls), with the
/// protocol's default adversary ([`Target::adversary`]).
pub fn replay(name: &str, case: &Case) -> Result<(), String> {
    let t = targets()
        .into_iter()
        .find(|t| t.name == name)
        .ok_or_else(|| format!("no protocol {name:?}"))?;
    t.run(case, t.adversary(false, false))
}

/// How many locks by the holder on the non-reentrant `lock_api` surface this process ran
/// and saw answered with the documented panic (for a test to show the check ran, not a skip).
pub fn relock_panics_checked() -> u64 {
    calls::RELOCKS_CHECKED.load(std::sync::atomic::Ordering::Relaxed)
}

/// How many `notify_one`s this process asked on the `lock_api` surface with two waiters or
/// more (for a test to show they are asked).
pub fn notify_one_of_many_asked() -> u64 {
    phases::NOTIFY_ONE_OF_MANY.load(std::sync::atomic::Ordering::Relaxed)
}

/// How many calls this process made inside `in_native` (vm surface), and how many of them
/// were locks that a biased protocol refused there as documented.
pub fn native_calls() -> (u64, u64) {
    let [a, b] = &calls::NATIVE_CALLS;
    (
        a.load(std::sync::atomic::Ordering::Relaxed),
        b.load(std::sync::atomic::Ordering::Relaxed),
    )
}

/// [`replay`] with another adversary (as [`Options`] can widen or narrow it).
pub fn replay_with(name: &str, case: &Case, adv: Adversary) -> Result<(), String> {
    let t = targets()
        .into_iter()
        .find(|t| t.name == name)
        .ok_or_else(|| format!("no protocol {name:?}"))?;
    t.run(case, adv)
}

/// How to fuzz one protocol.
#[derive(Clone, Debug)]
pub struct Options {
    /// The seed: the same seed gives the same cases in the same order.
    pub seed: u64,
    /// How long to generate new cases (shrinking a finding comes on top).
    pub budget: Duration,
    /// Most steps per case.
    pub len: usize,
    /// Put the host signal adversary in every protocol's set, not only the `-signal` ones'.
    pub signals_everywhere: bool,
    /// Move live objects on the address-keyed protocols too (`cacao`, `cacao-seed`,
    /// `monitor-cache`, whose hosts must report moves through an `unsafe fn`).
    pub moves_everywhere: bool,
    /// No moves of live objects at all (to look for what needs none, e.g. under signals).
    pub no_moves: bool,
    /// Ask nothing more of an object once it was moved while held ([`Adversary`]).
    pub lenient_moved: bool,
    /// Most time to spend shrinking a finding.
    pub shrink: Duration,
    /// Only this surface (all the protocol has, if `None`).
    pub surface: Option<Surface>,
}

/// A failing case, shrunk.
#[derive(Clone, Debug)]
pub struct Finding {
    /// Cases run up to and including the first failing one.
    pub cases: u64,
    /// The violation the minimal case shows.
    pub message: String,
    /// The minimal case.
    pub minimal: Case,
    /// It, as a `#[test]`.
    pub test: String,
}

/// What fuzzing one protocol gave.
#[derive(Clone, Debug)]
pub struct Report {
    /// The protocol.
    pub name: &'static str,
    /// Cases run (not counting shrinking).
    pub cases: u64,
    /// Of which on the `Monitor` surface.
    pub monitor_cases: u64,
    /// Of which on the `lock_api` surface.
    pub lock_api_cases: u64,
    /// The first finding, if any.
    pub finding: Option<Finding>,
}

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Fuzzes `t` for `o.budget`, stopping at the first finding, which it shrinks.
pub fn fuzz(t: &Target, o: &Options) -> Report {
    let mut adv = t.adversary(o.signals_everywhere, o.moves_everywhere);
    adv.moves &= !o.no_moves;
    adv.lenient_moved |= o.lenient_moved;
    let strategy = step::cases(t.has_monitor(), o.surface, adv.signals, o.len);
    let name_key = t.name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    let start = Instant::now();
    let cases = Cell::new(0u64);
    let monitor_cases = Cell::new(0u64);
    let lock_api_cases = Cell::new(0u64);
    let found = Cell::new(false);
    let mut batch = 0u64;
    while start.elapsed() < o.budget {
        let key = mix(o.seed ^ mix(name_key ^ mix(batch)));
        let mut seed = [0u8; 32];
        for (i, c) in seed.chunks_mut(8).enumerate() {
            c.copy_from_slice(&mix(key ^ i as u64).to_le_bytes());
        }
        let config = Config {
            cases: 8,
            failure_persistence: None,
            max_shrink_time: o.shrink.as_millis() as u32,
            max_shrink_iters: 4096,
            ..Config::default()
        };
        let mut runner =
            TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed));
        let r = runner.run(&strategy, |case| {
            if !found.get() {
                cases.set(cases.get() + 1);
                match case.surface {
                    Surface::Monitor => monitor_cases.set(monitor_cases.get() + 1),
                    Surface::LockApi => lock_api_cases.set(lock_api_cases.get() + 1),
                    Surface::Vm => {}
                }
            }
            // While shrinking, a candidate that passes once is tried twice more: the
            // schedule among threads the model lets race is the kernel's.
            let tries = if found.get() { 3 } else { 1 };
            for _ in 0..tries {
                if let Err(e) = t.run(&case, adv) {
                    found.set(true);
                    return Err(proptest::test_runner::TestCaseError::fail(e));
                }
            }
            Ok(())
        });
        batch += 1;
        if let Err(TestError::Fail(why, mut minimal)) = r {
            if !adv.moves {
                // Skipped when run: leave them out of the printed case.
                minimal
                    .steps
                    .retain(|s| !matches!(s, Step::Swap(..) | Step::Replace(_) | Step::Rebox(_)));
            }
            let message = why.message().to_string();
            let mut test = regression_test(t.name, &minimal, &message);
            if adv != t.adversary(false, false) {
                test = test.replace(
                    &format!("objmon_fuzz::replay({:?}, &case)", t.name),
                    &format!(
                        "objmon_fuzz::replay_with({:?}, &case, objmon_fuzz::{adv:?})",
                        t.name
                    ),
                );
            }
            return Report {
                name: t.name,
                cases: cases.get(),
                monitor_cases: monitor_cases.get(),
                lock_api_cases: lock_api_cases.get(),
                finding: Some(Finding {
                    cases: cases.get(),
                    message,
                    minimal,
                    test,
                }),
            };
        }
    }
    Report {
        name: t.name,
        cases: cases.get(),
        monitor_cases: monitor_cases.get(),
        lock_api_cases: lock_api_cases.get(),
        finding: None,
    }
}
