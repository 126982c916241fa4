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
    /// `lock_api::Mutex<RawMonitor<P>, T>` and `lock_api::Condvar<RawCondvar<P>>` (only the
    /// `MonitorProtocol`s; not reentrant, on the process-wide runtime).
    LockApi,
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
    /// Starts the host signal adversary aimed at worker `.0` only (a bias owner).
    SignalsAt(u8),
    /// Waits (at most 20 ms) until the host handler is busy over a bias owner's section, as
    /// an adversary times a revocation for the worst moment.
    AwaitCaught,
    /// The case runs with a monitor event sink that records and checks every event and
    /// behaves as `.0` says (`crate::sink`); each such step adds its behaviour, wherever it
    /// is. Made with the runtime: the step itself does nothing.
    Events(crate::sink::Hostile),
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
    /// An operation made inside `ThreadHandle::in_native` (vm surface only).
    Native(NativeOp),
}

/// What a worker may do "in native" (`ThreadHandle::in_native`): calls that cannot block.
/// The biased protocols refuse a lock there (`Err(InNative)`: their revokers rewrite a
/// native thread's biases without it); unlocks, queries and hashes are carried out.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum NativeOp {
    /// A lock of slot `.0`, asked as a `try_enter` (a lock may not block in native here).
    TryLock(u8),
    /// Drops guard `.0`.
    Unlock(u8),
    /// Unstructured `monitor_exit` of slot `.0`.
    Exit(u8),
    /// The owner queries of slot `.0`.
    Query(u8),
    /// `identity_hash` of slot `.0`.
    Hash(u8),
}

/// Rust syntax, as [`Op`]'s, with the enum's name: its variants share names with `Op`'s,
/// which a printed regression test imports.
impl std::fmt::Debug for NativeOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (name, n) = match *self {
            Self::TryLock(n) => ("TryLock", n),
            Self::Unlock(n) => ("Unlock", n),
            Self::Exit(n) => ("Exit", n),
            Self::Query(n) => ("Query", n),
            Self::Hash(n) => ("Hash", n),
        };
        write!(f, "NativeOp::{name}({n})")
    }
}

impl NativeOp {
    /// The operation it makes.
    pub fn op(self) -> Op {
        match self {
            Self::TryLock(s) => Op::TryLock(s),
            Self::Unlock(g) => Op::Unlock(g),
            Self::Exit(s) => Op::Exit(s),
            Self::Query(s) => Op::Query(s),
            Self::Hash(s) => Op::Hash(s),
        }
    }
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
        (
            1,
            (s(), 0..20u8)
                .prop_map(|(a, b)| Op::TryLockFor(a, b))
                .boxed(),
        ),
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
        (3 * v, native().prop_map(Op::Native).boxed()),
    ])
}

fn native() -> BoxedStrategy<NativeOp> {
    prop_oneof![
        2 => s().prop_map(NativeOp::TryLock),
        2 => (0..3u8).prop_map(NativeOp::Unlock),
        1 => s().prop_map(NativeOp::Exit),
        1 => s().prop_map(NativeOp::Query),
        1 => s().prop_map(NativeOp::Hash),
    ]
    .boxed()
}

fn step(vm: bool, signals: bool) -> BoxedStrategy<Step> {
    pick(vec![
        (40, (w(), op(vm)).prop_map(|(a, b)| Step::Do(a, b)).boxed()),
        (2, any::<bool>().prop_map(Step::End).boxed()),
        (4, (s(), s()).prop_map(|(a, b)| Step::Swap(a, b)).boxed()),
        (2, s().prop_map(Step::Replace).boxed()),
        (1, s().prop_map(Step::Fresh).boxed()),
        (1, s().prop_map(Step::Rebox).boxed()),
        (
            1,
            (w(), proptest::option::of(s()))
                .prop_map(|(a, b)| Step::ThreadExit(a, b))
                .boxed(),
        ),
        (
            3 * u32::from(signals),
            any::<bool>().prop_map(Step::Signals).boxed(),
        ),
    ])
}

/// A focused episode: two workers `a`, `b` and two slots `x`, `y`, some operations of
/// theirs on those two, then an adversary move of `x` (swap with `y`, replace, rebox, drop),
/// then more of their operations on the two. The shape of every hole of the kind "state kept
/// outside the header names it by address, trusted after safe code moved it": hold, look
/// from another thread, forget or release, move, use again.
fn episode(vm: bool) -> BoxedStrategy<Vec<Step>> {
    let v = u32::from(vm);
    let focused = |vm: u32| {
        let slot = prop_oneof![Just(0u8), Just(1u8)];
        let who = prop_oneof![Just(0u8), Just(1u8)];
        let op = pick(vec![
            (8, slot.clone().prop_map(Op::Lock).boxed()),
            (3, slot.clone().prop_map(Op::TryLock).boxed()),
            (5, (0..2u8).prop_map(Op::Unlock).boxed()),
            (3, (0..2u8).prop_map(Op::Forget).boxed()),
            (
                2,
                (slot.clone(), (0..3u8).prop_map(Some))
                    .prop_map(|(a, b)| Op::Wait(a, b))
                    .boxed(),
            ),
            (1, slot.clone().prop_map(Op::NotifyAll).boxed()),
            (4, slot.clone().prop_map(Op::Query).boxed()),
            (3 * vm, slot.clone().prop_map(Op::Hash).boxed()),
            (2 * vm, slot.clone().prop_map(Op::Peek).boxed()),
            (vm, slot.clone().prop_map(Op::Enter).boxed()),
        ]);
        proptest::collection::vec((who, op), 1..7)
    };
    let moves = prop_oneof![
        4 => Just(Step::Swap(0, 1)),
        2 => Just(Step::Replace(0)),
        1 => Just(Step::Rebox(0)),
        1 => Just(Step::Fresh(0)),
    ];
    (
        w(),
        1..WORKERS,
        0..SLOTS,
        1..SLOTS,
        focused(v),
        moves,
        focused(v),
    )
        .prop_map(|(a, db, x, dy, pre, mv, post)| {
            let b = (a + db) % WORKERS;
            let y = (x + dy) % SLOTS;
            let at = |k: u8| if k == 0 { a } else { b };
            let on = |op: Op| match op {
                Op::Lock(k) => Op::Lock(if k == 0 { x } else { y }),
                Op::TryLock(k) => Op::TryLock(if k == 0 { x } else { y }),
                Op::Wait(k, t) => Op::Wait(if k == 0 { x } else { y }, t),
                Op::NotifyAll(k) => Op::NotifyAll(if k == 0 { x } else { y }),
                Op::Query(k) => Op::Query(if k == 0 { x } else { y }),
                Op::Hash(k) => Op::Hash(if k == 0 { x } else { y }),
                Op::Peek(k) => Op::Peek(if k == 0 { x } else { y }),
                Op::Enter(k) => Op::Enter(if k == 0 { x } else { y }),
                o => o,
            };
            let mv = match mv {
                Step::Swap(..) => Step::Swap(x, y),
                Step::Replace(_) => Step::Replace(x),
                Step::Rebox(_) => Step::Rebox(x),
                _ => Step::Fresh(x),
            };
            let mut out: Vec<Step> = pre
                .into_iter()
                .map(|(k, op)| Step::Do(at(k), on(op)))
                .collect();
            out.push(mv);
            out.extend(post.into_iter().map(|(k, op)| Step::Do(at(k), on(op))));
            out
        })
        .boxed()
}

/// A contended episode under the host signal adversary: a fresh object, biased (or
/// learnt) by one worker's bursts, then a long burst of that worker and, once the host
/// handler has caught it inside an owner section (or 20 ms have passed), a long burst of
/// another worker on the same object: its revocation meets the owner in its section, and it
/// is still inside the object most of the time when the owner's section goes on.
fn signal_episode() -> BoxedStrategy<Vec<Step>> {
    (w(), 1..WORKERS, 0..SLOTS, 1..16u8, 64..=255u8, 64..=255u8)
        .prop_map(|(a, db, x, n0, n1, n2)| {
            let b = (a + db) % WORKERS;
            vec![
                Step::Fresh(x),
                Step::SignalsAt(a),
                Step::Do(a, Op::Burst(x, n0)),
                Step::Do(a, Op::Query(x)),
                Step::Do(a, Op::Burst(x, n1)),
                Step::AwaitCaught,
                Step::Do(b, Op::Burst(x, n2)),
                Step::Do(a, Op::Burst(x, n0)),
                Step::Signals(false),
            ]
        })
        .boxed()
}

/// A behaviour of the hostile event sink.
fn hostile() -> BoxedStrategy<crate::sink::Hostile> {
    use crate::sink::Hostile::*;
    prop_oneof![
        2 => Just(Calm),
        2 => (1..4u8).prop_map(Panics),
        2 => (1..4u8).prop_map(LocksOther),
        1 => (1..3u8).prop_map(Relocks),
        1 => (1..11u8).prop_map(Sleeps),
    ]
    .boxed()
}

/// Cases for a protocol: `monitor` whether it has the `Monitor` and `lock_api` surfaces
/// (`only`: just one surface), `signals` whether
/// the host signal adversary is in the set, about `len` steps at most. A case mixes single
/// random steps with focused episodes (`episode`; contended ones under signals too).
pub fn cases(
    monitor: bool,
    only: Option<Surface>,
    signals: bool,
    len: usize,
) -> impl Strategy<Value = Case> {
    let surface = match only {
        Some(Surface::Monitor) if monitor => Just(Surface::Monitor).boxed(),
        Some(Surface::LockApi) if monitor => Just(Surface::LockApi).boxed(),
        None if monitor => prop_oneof![
            Just(Surface::Monitor),
            Just(Surface::LockApi),
            Just(Surface::Vm)
        ]
        .boxed(),
        _ => Just(Surface::Vm).boxed(),
    };
    surface.prop_flat_map(move |surface| {
        let vm = surface == Surface::Vm;
        let part = pick(vec![
            (6, step(vm, signals).prop_map(|s| vec![s]).boxed()),
            (1, episode(vm)),
            (u32::from(signals), signal_episode()),
        ]);
        // A quarter of the cases run with an event sink (`crate::sink`).
        let events = proptest::option::weighted(0.25, proptest::collection::vec(hostile(), 1..3));
        (
            proptest::collection::vec(part, 1..len.div_ceil(4).max(2)),
            events,
        )
            .prop_map(move |(parts, events)| Case {
                surface,
                steps: (events.into_iter().flatten().map(Step::Events))
                    .chain(parts.into_iter().flatten().take(len))
                    .collect(),
            })
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
    if case
        .steps
        .iter()
        .any(|s| matches!(s, Step::Do(_, Op::Native(_))))
    {
        out.push_str("    use objmon_fuzz::NativeOp;\n");
    }
    if case.steps.iter().any(|s| matches!(s, Step::Events(_))) {
        out.push_str("    use objmon_fuzz::Hostile::*;\n");
    }
    if crate::signal::unmasked() {
        // Process-wide, before the handler is installed: a test file of its own.
        out.push_str("    objmon_fuzz::signal::unmask_barrier();\n");
    }
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
