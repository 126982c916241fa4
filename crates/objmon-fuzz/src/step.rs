//! A fuzz case: which surface, and a sequence of steps; their generation (proptest
//! strategies, so that a failing case shrinks) and their printing as a regression test.
//!
//! Design: steps name workers, objects and guards by small numbers taken modulo what exists
//! when the step runs, and the driver skips a step whose precondition the model does not
//! meet (a lock that would block forever, a wait without a guard). So every sub-sequence of
//! a case is itself a valid case, which is what lets proptest's shrinking delete steps
//! freely. The `Debug` form of a [`Case`] is Rust syntax: [`regression_test`] pastes it into
//! a `#[test]`.

use proptest::prelude::*;
use proptest::strategy::Union;

/// The surface a case drives (see [`crate::kit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Surface {
    /// `Monitor<T, P>` and `MonitorGuard` (only the protocols that are `MonitorProtocol`s).
    Monitor,
    /// `vm::ThreadHandle` and `HeaderGuard` over bare headers.
    Vm,
}

/// One fuzz case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// The surface.
    pub surface: Surface,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

/// One step of a case. Object numbers are slots (positions); the model follows the objects
/// when the adversary moves them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Worker `.0` performs an operation.
    Do(u8, Op),
    /// Ends the phase: every worker drops its guards, newest first if `true`, and its
    /// phase handle (releasing its unstructured locks).
    End(bool),
    /// `mem::swap` of two slots' objects (ends the phase first).
    Swap(u8, u8),
    /// `mem::replace` of a slot by a fresh object; the old one moves to a new slot at the
    /// end (a `Vec` push: every inline object may move too).
    Replace(u8),
    /// Drops a slot's object (locked or not) and puts a fresh one in its place.
    Fresh(u8),
    /// Moves a slot's object out of its `Box` (or into a new one).
    Rebox(u8),
    /// Worker `.0` ends its thread at the next phase end (with its forgotten guards); in a
    /// thread-local destructor it first try-locks slot `.1` (if any).
    ThreadExit(u8, Option<u8>),
    /// Starts or stops the host signal adversary (SIGUSR1 at the workers, handler busy 1-3 ms).
    Signals(bool),
}

/// An operation of a worker. `g` numbers a guard of the worker (modulo how many it has),
/// counted from the newest; `s` a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `lock` / `enter` of slot `.0` (may block while another worker holds it).
    Lock(u8),
    /// `try_lock` / `try_enter`.
    TryLock(u8),
    /// `try_lock_for(.1 ms)`.
    TryLockFor(u8, u8),
    /// Drops guard `.0`.
    Unlock(u8),
    /// `mem::forget` of guard `.0`: the level stays held for good.
    Forget(u8),
    /// Object.wait on slot `.0`, `None` = untimed (needs a notify), `Some(ms)`.
    Wait(u8, Option<u8>),
    /// Object.notify on slot `.0`.
    Notify(u8),
    /// Object.notifyAll on slot `.0`.
    NotifyAll(u8),
    /// `holds_lock` / `is_owned_by_current_thread`, `lock_count`, `is_locked` of slot `.0`.
    Query(u8),
    /// `identity_hash` of slot `.0`.
    Hash(u8),
    /// `peek_identity_hash` of slot `.0`.
    Peek(u8),
    /// Unstructured `monitor_enter` of slot `.0`.
    Enter(u8),
    /// Unstructured `monitor_exit` of slot `.0`.
    Exit(u8),
    /// Interrupts worker `.0` (`Runtime::interrupt`).
    Interrupt(u8),
    /// `interrupted()`: reads and clears the worker's own interrupt status.
    Interrupted,
    /// `.1 * 8` lock / unlock pairs of slot `.0` in a loop, concurrently with the bursts
    /// of the steps that follow it directly.
    Burst(u8, u8),
    /// Safepoint poll.
    Poll,
}

/// Workers per case.
pub const WORKERS: u8 = 3;
/// Slots at the start of a case.
pub const SLOTS: u8 = 3;

fn w() -> impl Strategy<Value = u8> {
    0..WORKERS
}
fn s() -> impl Strategy<Value = u8> {
    0..SLOTS + 1
}

/// A weighted choice among the alternatives of nonzero weight.
fn pick<T: std::fmt::Debug + 'static>(alts: Vec<(u32, BoxedStrategy<T>)>) -> BoxedStrategy<T> {
    Union::new_weighted(alts.into_iter().filter(|(w, _)| *w > 0).collect()).boxed()
}

fn op(vm: bool) -> BoxedStrategy<Op> {
    let v = u32::from(vm);
    let timeout = prop_oneof![Just(None), (0..4u8).prop_map(Some)];
    pick(vec![
        (12, s().prop_map(Op::Lock).boxed()),
        (4, s().prop_map(Op::TryLock).boxed()),
        (1, (s(), 0..20u8).prop_map(|(a, b)| Op::TryLockFor(a, b)).boxed()),
        (8, (0..3u8).prop_map(Op::Unlock).boxed()),
        (4, (0..3u8).prop_map(Op::Forget).boxed()),
        (3, (s(), timeout).prop_map(|(a, b)| Op::Wait(a, b)).boxed()),
        (2, s().prop_map(Op::Notify).boxed()),
        (2, s().prop_map(Op::NotifyAll).boxed()),
        (5, s().prop_map(Op::Query).boxed()),
        (4 * v, s().prop_map(Op::Hash).boxed()),
        (2 * v, s().prop_map(Op::Peek).boxed()),
        (2 * v, s().prop_map(Op::Enter).boxed()),
        (2 * v, s().prop_map(Op::Exit).boxed()),
        (v, w().prop_map(Op::Interrupt).boxed()),
        (v, Just(Op::Interrupted).boxed()),
        (2, (s(), 1..16u8).prop_map(|(a, b)| Op::Burst(a, b)).boxed()),
        (v, Just(Op::Poll).boxed()),
    ])
}

fn step(vm: bool, signals: bool) -> BoxedStrategy<Step> {
    pick(vec![
        (40, (w(), op(vm)).prop_map(|(a, b)| Step::Do(a, b)).boxed()),
        (2, any::<bool>().prop_map(Step::End).boxed()),
        (4, (s(), s()).prop_map(|(a, b)| Step::Swap(a, b)).boxed()),
        (2, s().prop_map(Step::Replace).boxed()),
        (1, s().prop_map(Step::Fresh).boxed()),
        (1, s().prop_map(Step::Rebox).boxed()),
        (1, (w(), proptest::option::of(s())).prop_map(|(a, b)| Step::ThreadExit(a, b)).boxed()),
        (3 * u32::from(signals), any::<bool>().prop_map(Step::Signals).boxed()),
    ])
}

/// Cases for a protocol: `monitor` whether it has the `Monitor` surface, `signals` whether
/// the host signal adversary is in the set, at most `len` steps.
pub fn cases(monitor: bool, signals: bool, len: usize) -> impl Strategy<Value = Case> {
    let surface = if monitor {
        prop_oneof![Just(Surface::Monitor), Just(Surface::Vm)].boxed()
    } else {
        Just(Surface::Vm).boxed()
    };
    surface.prop_flat_map(move |surface| {
        proptest::collection::vec(step(surface == Surface::Vm, signals), 1..len)
            .prop_map(move |steps| Case { surface, steps })
    })
}

/// `case` as a ready-to-paste `#[test]` for protocol `protocol` (in a crate that depends on
/// `objmon-fuzz`), failing with `why` while the hole is open.
pub fn regression_test(protocol: &str, case: &Case, why: &str) -> String {
    let name = protocol.replace('-', "_");
    let mut out = String::new();
    out.push_str(&format!(
        "/// Found by objmon-fuzz on `{protocol}`: {}\n",
        why.lines().next().unwrap_or("")
    ));
    out.push_str(&format!("#[test]\nfn fuzz_{name}_regression() {{\n"));
    out.push_str("    use objmon_fuzz::{Case, Op::*, Step::*, Surface};\n");
    out.push_str(&format!(
        "    let case = Case {{\n        surface: Surface::{:?},\n        steps: vec![\n",
        case.surface
    ));
    for s in &case.steps {
        out.push_str(&format!("            {s:?},\n"));
    }
    out.push_str("        ],\n    };\n");
    out.push_str(&format!(
        "    if let Err(e) = objmon_fuzz::replay({protocol:?}, &case) {{\n        panic!(\"{{e}}\");\n    }}\n}}\n"
    ));
    out
}
