//! `user-loop`: uncontended lock+unlock as a user meets it.
//!
//! Every row is a loop written the way a user writes it in their own crate — for a protocol
//! `for _ in 0..n { let g = me.enter(&h).unwrap(); drop(g); }` through the public API, for the
//! limits a bare compare-and-swap and release store, or a plain load/compare/store pair — with
//! nothing else per iteration: no counter, no per-iteration `std::hint::black_box` (that costs a
//! store and a load per iteration, which compresses every ratio toward 1). `black_box` hides
//! the object once, before the loop. Each loop is its own `#[inline(never)]` function, so its
//! machine code can be read (`objdump -d`) and its instructions counted (`callgrind`, and the
//! single-step count of `bench::tests`).
//!
//! **Placements.** Where a sub-nanosecond loop lands in the binary decides which of two
//! speeds it runs at, with its machine code unchanged (docs/benchmarks.md, "Code placement
//! decides the sub-nanosecond rows"), and a user's binary puts it anywhere. So every loop function
//! is built [`PLACES`] times, its code behind [`place`]'s padding at a different offset of a
//! 64-byte line each time, and a repetition runs `n / PLACES` pairs at each placement under
//! one clock: a row's figure is the mean over placements, the same for every build of the
//! same loop.
//!
//! All rows run in one process with **interleaved rounds**: round r times every row once
//! (starting at a different row each round), so a noisy neighbour or a frequency change hits
//! every row alike; a row's figure is the median of its rounds, and ratios between rows are
//! ratios of medians of this one run. The clock is the thread's CPU time (see [`timed`]).
//!
//! Rows are named `user-loop-<subject>` and `user-loop-<subject>-nested` (the object already
//! held once by the same thread, the lock taken outside the timed loop; before its first
//! round each protocol row's object gets [`WARM_UP`] plain lock+unlock pairs, so every round
//! meets it in the steady state), with `<subject>` a row
//! name of the other benches: `sol-cas-store`, `sol-cas-cas`, `sol-plain-pair`, every protocol
//! of [`objmon::vm::visit_all`], `monitor` (`objmon::Monitor<()>`, the Rust user's type),
//! `std-mutex`, `parking-lot-mutex`, `parking-lot`.

use crate::bench::Plan;
use crate::record::Record;
use crate::subject::Kind;
use objmon::vm::{Protocol, ProtocolVisitor, Runtime, ThreadHandle};
use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};

/// The bench name of these rows.
pub const BENCH: &str = "user-loop";

/// Every row name starts so.
pub const PREFIX: &str = "user-loop-";

/// The row of the single-atomic limit, the denominator of the report's ratios.
pub const CAS_STORE: &str = "user-loop-sol-cas-store";

/// The row of the owner-only limit (bias owner, nested path).
pub const PLAIN_PAIR: &str = "user-loop-sol-plain-pair";

/// How many code placements every loop is timed at (see "Placements" above).
pub const PLACES: u64 = 4;

/// The padding that places the loop function `AT` (`0..PLACES`): the code after it starts
/// `16 · AT` bytes past a 64-byte boundary (the compiler aligns loop heads to 16 bytes, so
/// the loops land at the four 16-byte slots of a line). Runs once per call, not per pair.
#[inline(always)]
pub fn place<const AT: usize>() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the block emits only padding — alignment to 64 bytes and `16 · AT` bytes of
    // `nop`s, executed in sequence — and touches no register, memory, stack or flag.
    unsafe {
        if AT == 0 {
            std::arch::asm!(".p2align 6", options(nomem, nostack, preserves_flags));
        } else {
            std::arch::asm!(
                ".p2align 6",
                ".nops {pad}",
                pad = const AT * 16,
                options(nomem, nostack, preserves_flags)
            );
        }
    }
}

/// Runs `f` once per placement (`f(at, m)`: the loop built for placement `at`, `m` pairs)
/// and returns ns per pair over all of them, in this thread's CPU time ([`timed`]).
#[inline(always)]
fn timed_places(n: u64, mut f: impl FnMut(usize, u64)) -> f64 {
    let m = (n / PLACES).max(1);
    timed(m * PLACES, || {
        for at in 0..PLACES as usize {
            f(at, m);
        }
    })
}

/// Calls `$f::<…, AT>($args)` for the placement `$at` (a runtime `0..PLACES`).
macro_rules! at_place {
    ($at:expr, $f:ident($($arg:expr),*)) => {
        at_place!($at, $f::<>($($arg),*))
    };
    ($at:expr, $f:ident::<$($g:ty),*>($($arg:expr),*)) => {
        match $at {
            0 => $f::<$($g,)* 0>($($arg),*),
            1 => $f::<$($g,)* 1>($($arg),*),
            2 => $f::<$($g,)* 2>($($arg),*),
            _ => $f::<$($g,)* 3>($($arg),*),
        }
    };
}

/// `sol-cas-store` as a user writes it: a compare-and-swap 0 → 1 (acquire) to lock, a release
/// store of 0 to unlock.
#[inline(never)]
pub fn cas_store<const AT: usize>(w: &AtomicU32, n: u64) {
    place::<AT>();
    let w = black_box(w);
    for _ in 0..n {
        while w
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        w.store(0, Ordering::Release);
    }
}

/// `sol-cas-cas`: compare-and-swap to lock and to unlock (the double-atomic limit).
#[inline(never)]
pub fn cas_cas<const AT: usize>(w: &AtomicU32, n: u64) {
    place::<AT>();
    let w = black_box(w);
    for _ in 0..n {
        while w
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        if w.compare_exchange(1, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            unreachable!("sol-cas-cas: lost its own lock");
        }
    }
}

/// `sol-plain-pair`: lock = load, compare with free, store the owner; unlock = load, compare
/// with the owner, store free (release: a plain `mov` on x86). No locked instruction: the
/// limit of a lock word only its owner writes (a bias owner; thin's nested path).
#[inline(never)]
pub fn plain_pair<const AT: usize>(w: &AtomicU32, n: u64) {
    place::<AT>();
    let w = black_box(w);
    for _ in 0..n {
        assert!(w.load(Ordering::Relaxed) == 0, "sol-plain-pair: not free");
        w.store(1, Ordering::Relaxed);
        assert!(w.load(Ordering::Relaxed) == 1, "sol-plain-pair: not mine");
        w.store(0, Ordering::Release);
    }
}

/// An objmon protocol through its public API.
#[inline(never)]
pub fn protocol<P: Protocol, const AT: usize>(me: &ThreadHandle<'_, P>, h: &P::Header, n: u64) {
    place::<AT>();
    let h = black_box(h);
    for _ in 0..n {
        let g = me.enter(h).unwrap();
        drop(g);
    }
}

/// `objmon::Monitor<()>`, the Rust user's type (default protocol, process-wide runtime).
#[inline(never)]
pub fn monitor<const AT: usize>(m: &objmon::Monitor<()>, n: u64) {
    place::<AT>();
    let m = black_box(m);
    for _ in 0..n {
        let g = m.lock();
        drop(g);
    }
}

/// `lock_api::Mutex<objmon::RawMonitor, ()>`: objmon's `&mut T` lock (the default protocol,
/// not reentrant), the same face as `parking_lot::Mutex` (the `monitor-lock-api` row).
#[inline(never)]
pub fn monitor_lock_api<const AT: usize>(
    m: &objmon::lock_api::Mutex<objmon::RawMonitor, ()>,
    n: u64,
) {
    place::<AT>();
    let m = black_box(m);
    for _ in 0..n {
        let g = m.lock();
        drop(g);
    }
}

/// `std::sync::Mutex<()>`.
#[inline(never)]
pub fn std_mutex<const AT: usize>(m: &std::sync::Mutex<()>, n: u64) {
    place::<AT>();
    let m = black_box(m);
    for _ in 0..n {
        let g = m.lock().unwrap();
        drop(g);
    }
}

/// `parking_lot::Mutex<()>`.
#[inline(never)]
pub fn parking_lot_mutex<const AT: usize>(m: &parking_lot::Mutex<()>, n: u64) {
    place::<AT>();
    let m = black_box(m);
    for _ in 0..n {
        let g = m.lock();
        drop(g);
    }
}

/// `parking_lot::ReentrantMutex<()>` (the `parking-lot` anchor).
#[inline(never)]
pub fn parking_lot_reentrant<const AT: usize>(m: &parking_lot::ReentrantMutex<()>, n: u64) {
    place::<AT>();
    let m = black_box(m);
    for _ in 0..n {
        let g = m.lock();
        drop(g);
    }
}

/// One row: its name, group, and a run of `n` pairs returning ns per pair (the clock around
/// the loop function only).
pub struct Row {
    /// `user-loop-…`.
    pub name: String,
    /// Row group.
    pub kind: Kind,
    run: Box<dyn FnMut(u64) -> f64>,
}

/// This thread's CPU time in ns.
pub fn thread_cpu_ns() -> u128 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID needs nothing else.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(r, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128
}

/// Times `f(n)`: ns per pair, in this thread's **CPU time**. The loops never block, so on an
/// idle machine CPU time and wall time agree; on a shared one (this 2-core machine often runs
/// at load 5-10) wall time counts the time other processes ran, CPU time does not. (Cache
/// and sibling-hyperthread interference remain: interleaving spreads them over all rows.)
#[inline(always)]
fn timed(n: u64, f: impl FnOnce()) -> f64 {
    let t0 = thread_cpu_ns();
    f();
    (thread_cpu_ns() - t0) as f64 / n.max(1) as f64
}

fn row(name: &str, kind: Kind, run: impl FnMut(u64) -> f64 + 'static) -> Row {
    Row {
        name: format!("{PREFIX}{name}"),
        kind,
        run: Box::new(run),
    }
}

/// The row name of `subject` (nested or not).
fn row_name(subject: &str, nested: bool) -> String {
    format!("{PREFIX}{subject}{}", if nested { "-nested" } else { "" })
}

/// The rows `wants` selects (given the full row name and the subject's own name), in report
/// order: limits, protocols in catalog order (each plain, then nested), anchors.
pub fn rows(wants: &dyn Fn(&str, &str) -> bool) -> Vec<Row> {
    let mut v: Vec<Row> = Vec::new();
    each_row(&mut |subject, nested, f| {
        if wants(&row_name(subject, nested), subject) {
            v.push(f());
        }
    });
    v
}

/// Every row name, in report order (for `list`).
pub fn names() -> Vec<String> {
    let mut v = Vec::new();
    each_row(&mut |subject, nested, _| v.push(row_name(subject, nested)));
    v
}

/// What [`each_row`] calls per row: `(subject, nested, make)`; `make` builds the row.
type AddRow<'a> = dyn FnMut(&str, bool, &dyn Fn() -> Row) + 'a;

/// A protocol's plain and nested rows, named after [`Protocol::NAME`]. Plain lock+unlock pairs
/// a protocol row's object gets before its first round, so that every timed round meets the
/// object in the state a user's loop keeps it in. Without them a FABLE object (seed 002 §3.1)
/// spends its first rounds in learn mode (the `-nested` rows: the held outer lock keeps it
/// there, recursion does not count) and biases only after the learn limit's worth of rounds,
/// which read several times the biased rounds. Far above any learn limit the report sweeps
/// (`alloc-lock`'s `learn-limit`).
pub const WARM_UP: u32 = 256;

/// `WARM_UP` plain lock+unlock pairs of `h` by `me`.
fn warm_up<P: Protocol>(me: &ThreadHandle<'_, P>, h: &P::Header) {
    for _ in 0..WARM_UP {
        drop(me.enter(h).unwrap());
    }
}

fn protocol_rows<P: Protocol>(add: &mut AddRow<'_>) {
    add(P::NAME, false, &|| {
        // SAFETY: this program installs no signal handler of its own (std's fault handlers run
        // only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rt = unsafe { Runtime::<P>::new_unchecked(Default::default()) };
        let me = rt.attach().expect("attach");
        let h = Box::new(P::Header::default());
        warm_up(&me, &h);
        row(P::NAME, Kind::Protocol, move |n| {
            timed_places(n, |at, m| at_place!(at, protocol::<P>(&me, &h, m)))
        })
    });
    add(P::NAME, true, &|| {
        // SAFETY: this program installs no signal handler of its own (std's fault handlers run
        // only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rt = unsafe { Runtime::<P>::new_unchecked(Default::default()) };
        let me = rt.attach().expect("attach");
        let h = Box::new(P::Header::default());
        warm_up(&me, &h);
        row(&format!("{}-nested", P::NAME), Kind::Protocol, move |n| {
            let outer = me.enter(&h).unwrap();
            let ns = timed_places(n, |at, m| at_place!(at, protocol::<P>(&me, &h, m)));
            drop(outer);
            ns
        })
    });
}

/// Calls `add` for every row.
fn each_row(add: &mut AddRow<'_>) {
    let sol = Kind::SpeedOfLight;
    add("sol-cas-store", false, &|| {
        let w = AtomicU32::new(0);
        row("sol-cas-store", sol, move |n| {
            timed_places(n, |at, m| at_place!(at, cas_store(&w, m)))
        })
    });
    add("sol-cas-cas", false, &|| {
        let w = AtomicU32::new(0);
        row("sol-cas-cas", sol, move |n| {
            timed_places(n, |at, m| at_place!(at, cas_cas(&w, m)))
        })
    });
    add("sol-plain-pair", false, &|| {
        let w = AtomicU32::new(0);
        row("sol-plain-pair", sol, move |n| {
            timed_places(n, |at, m| at_place!(at, plain_pair(&w, m)))
        })
    });

    struct Protos<'a, 'b>(&'a mut AddRow<'b>);
    impl ProtocolVisitor for Protos<'_, '_> {
        fn visit<P: Protocol>(&mut self) {
            protocol_rows::<P>(self.0);
        }
    }
    objmon::vm::visit_all(&mut Protos(add));
    // FABLE exactly as seed 002 specifies (Figures 6 and 7, the owner's count in the header
    // behind the `in_op` Dekker): not in the catalog, measured here beside `fable`, so that
    // the report shows the seed's own variant next to objmon's.
    protocol_rows::<objmon::protocol::fable::FableSeed>(add);

    let anchor = Kind::Anchor;
    add("monitor", false, &|| {
        let m = objmon::Monitor::new(());
        row("monitor", anchor, move |n| {
            timed_places(n, |at, k| at_place!(at, monitor(&m, k)))
        })
    });
    add("monitor", true, &|| {
        let m = objmon::Monitor::new(());
        row("monitor-nested", anchor, move |n| {
            let outer = m.lock();
            let ns = timed_places(n, |at, k| at_place!(at, monitor(&m, k)));
            drop(outer);
            ns
        })
    });
    add("monitor-lock-api", false, &|| {
        let m = objmon::lock_api::Mutex::<objmon::RawMonitor, ()>::new(());
        row("monitor-lock-api", anchor, move |n| {
            timed_places(n, |at, k| at_place!(at, monitor_lock_api(&m, k)))
        })
    });
    add("std-mutex", false, &|| {
        let m = std::sync::Mutex::new(());
        row("std-mutex", anchor, move |n| {
            timed_places(n, |at, k| at_place!(at, std_mutex(&m, k)))
        })
    });
    add("parking-lot-mutex", false, &|| {
        let m = parking_lot::Mutex::new(());
        row("parking-lot-mutex", anchor, move |n| {
            timed_places(n, |at, k| at_place!(at, parking_lot_mutex(&m, k)))
        })
    });
    add("parking-lot", false, &|| {
        let m = parking_lot::ReentrantMutex::new(());
        row("parking-lot", anchor, move |n| {
            timed_places(n, |at, k| at_place!(at, parking_lot_reentrant(&m, k)))
        })
    });
    add("parking-lot", true, &|| {
        let m = parking_lot::ReentrantMutex::new(());
        row("parking-lot-nested", anchor, move |n| {
            let outer = m.lock();
            let ns = timed_places(n, |at, k| at_place!(at, parking_lot_reentrant(&m, k)));
            drop(outer);
            ns
        })
    });
}

/// Runs the selected rows with interleaved rounds: one untimed warm-up round, then
/// `plan.reps` timed rounds of `plan.pairs` pairs per row.
pub fn run(plan: &Plan, wants: &dyn Fn(&str, &str) -> bool) -> Vec<Record> {
    let mut rows = rows(wants);
    let n = plan.pairs;
    for r in &mut rows {
        black_box((r.run)(n));
    }
    let reps = plan.reps.max(1);
    let mut values: Vec<Vec<f64>> = vec![Vec::with_capacity(reps); rows.len()];
    for round in 0..reps {
        for k in 0..rows.len() {
            let i = (k + round) % rows.len();
            values[i].push((rows[i].run)(n));
        }
    }
    rows.iter()
        .zip(&values)
        .filter_map(|(r, v)| Record::from_values(BENCH, &r.name, r.kind.as_str(), 1, 0, v))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row runs (a positive finite figure each), in the order and with the names
    /// `names` lists; the limits the report divides by are among them; a subject's name
    /// selects its plain and nested rows.
    #[test]
    fn every_row_runs() {
        let plan = Plan {
            reps: 1,
            pairs: 1_000,
            ..Plan::new(true, None)
        };
        let recs = run(&plan, &|_, _| true);
        let got: Vec<String> = recs.iter().map(|r| r.protocol.clone()).collect();
        assert_eq!(got, names());
        for r in &recs {
            assert!(r.median.is_finite() && r.median > 0.0, "{}", r.protocol);
            assert_eq!(r.bench, BENCH);
        }
        assert!(got.iter().any(|n| n == CAS_STORE) && got.iter().any(|n| n == PLAIN_PAIR));
        let thin: Vec<String> = rows(&|_, subject| subject == "thin")
            .into_iter()
            .map(|r| r.name)
            .collect();
        assert_eq!(thin, ["user-loop-thin", "user-loop-thin-nested"]);
    }

    /// The rows' warm-up leaves a FABLE object biased to the row's thread (seed 002 §3.1:
    /// after the learn limit's non-recursive acquisitions), where a single lock leaves it in
    /// learn mode: without it the first rounds of `user-loop-fable*-nested` timed the learn
    /// word's nested path, the later ones the bias owner's. Header bits as `biased.rs`
    /// documents them: state in 17..16 (biased 00, learn 01), bias owner id in 33..19.
    #[test]
    fn warm_up_biases_a_fable_object() {
        use objmon::protocol::fable::Fable;
        let state = |raw: u64| (raw >> 16) & 3;
        let owner = |raw: u64| (raw >> 19) & 0x7fff;
        let rt = Runtime::<Fable>::with_defaults();
        let me = rt.attach().unwrap();
        let once = <Fable as Protocol>::Header::default();
        drop(me.enter(&once).unwrap());
        assert_eq!(
            state(once.raw()),
            1,
            "one lock: learn mode ({:#x})",
            once.raw()
        );
        let h = <Fable as Protocol>::Header::default();
        warm_up(&me, &h);
        assert_eq!(state(h.raw()), 0, "warmed up: biased ({:#x})", h.raw());
        assert_eq!(owner(h.raw()), u64::from(me.id().get()), "{:#x}", h.raw());
    }

    /// The user's loop of [`protocol`] with the runtime, the context and the handle's word
    /// handed over directly (pointers and a word that arrive in registers), locking as a
    /// handle's guard does (`Protocol::lock` / `unlock`, the lock's hint passed
    /// to the unlock).
    #[inline(never)]
    fn direct<P: Protocol>(
        rt: &Runtime<P>,
        cx: &objmon::vm::ThreadContext<P>,
        h: &P::Header,
        n: u64,
    ) {
        let h = black_box(h);
        let word = P::handle_word(cx);
        for _ in 0..n {
            // SAFETY: `cx` is this thread's context (of a handle the caller holds on this
            // thread), `word` its `handle_word`, `h` outlives the calls, every enter is
            // followed by its exit, with the hint of that enter.
            unsafe {
                let hint = P::lock(rt, cx, word, h).unwrap();
                P::unlock(rt, cx, word, hint, h).unwrap();
            }
        }
    }

    /// `fable` takes a free thin word (Cloud's steady state: every object thin, its sticky
    /// owner another thread) in about `thin`'s instructions in the harness's Cloud loop
    /// (`bench::cloud_batch`): its lock inlines there. With `Subject::lock` only `#[inline]`,
    /// LLVM may leave `fable`'s out of line (its `enter`, with `fresh_enter` inline beside the
    /// records owner step, is the largest): a call with five pushes and pops, which this test
    /// would see. Counted by single-stepping, release builds only (as below).
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[cfg_attr(
        debug_assertions,
        ignore = "release builds only: see handle_costs_nothing_over_its_context"
    )]
    #[test]
    fn fable_takes_a_thin_word_inline() {
        use crate::bench::tests::instructions_per_iteration_of;
        use crate::bench::Slot;
        fn count<P: Protocol>() -> f64 {
            // SAFETY: this program installs no signal handler of its own (std's fault handlers run
            // only on a fault, which no owner section makes): the -signal flavors' contract
            // (`Runtime::new_unchecked`) holds; the other protocols have none.
            let rt = unsafe { Runtime::<P>::new_unchecked(Default::default()) };
            let objs: Vec<Slot<P::Header>> = (0..8).map(|_| Slot(P::Header::default())).collect();
            // Two other threads in turn: a FABLE word goes clear → learn → thin.
            for _ in 0..2 {
                std::thread::scope(|s| {
                    s.spawn(|| {
                        let other = rt.attach().unwrap();
                        for o in &objs {
                            drop(other.enter(&o.0).unwrap());
                        }
                    });
                });
            }
            let me = rt.attach().unwrap();
            let n = instructions_per_iteration_of(&|n| {
                let mut rng = crate::bench::XorShift(0x9E37_79B9_7F4A_7C15);
                crate::bench::cloud_batch::<crate::subject::Proto<P>>(&me, &objs, &mut rng, n);
            });
            eprintln!("{}: {n} instructions per thin lock+unlock", P::NAME);
            n
        }
        let thin = count::<objmon::vm::Thin>();
        let fable = count::<objmon::protocol::fable::Fable>();
        assert!(thin >= 4.0, "thin {thin}: not the loop meant");
        assert!(
            fable <= thin + 12.0,
            "fable {fable} against thin {thin} per thin lock+unlock: enter is out of line?"
        );
    }

    /// `Monitor::lock` inlines into a user's loop: the `monitor` row's loop
    /// ([`monitor`], `Monitor<()>`, the default protocol `thin`) runs no more than 16
    /// instructions per lock+unlock above `thin`'s through a handle. With `lock` only
    /// `#[inline]`, LLVM may leave it out of line here (a call, three pushes and pops: see
    /// docs/benchmarks.md, "Bench notes moved out of the code"). What the 16 pay for: the
    /// thread-local look-up of the attachment, its three fields loaded again after the lock
    /// (a pointer from a thread-local carries no `noalias`, unlike a `&ThreadHandle`
    /// argument), and the level count's upkeep. Release builds only (as below).
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[cfg_attr(debug_assertions, ignore = "release builds only: see the doc comment")]
    #[test]
    fn monitor_lock_inlines_into_a_users_loop() {
        let m = objmon::Monitor::new(());
        // Attached and warmed in the parent: the counted child takes only the fast paths.
        drop(m.lock());
        let count = crate::bench::tests::instructions_per_iteration_of(&|n| monitor::<0>(&m, n));
        at_most_over_thin("Monitor<()>", count, 16.0);
    }

    /// Asserts that `count`, the instructions per lock+unlock of `what`'s user loop, is at
    /// most `slack` above those of `thin`'s through a handle ([`protocol`]), counted here.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn at_most_over_thin(what: &str, count: f64, slack: f64) {
        let rt = Runtime::<objmon::vm::Thin>::with_defaults();
        let me = rt.attach().unwrap();
        let h = <objmon::vm::Thin as Protocol>::Header::default();
        drop(me.enter(&h).unwrap());
        let thin = crate::bench::tests::instructions_per_iteration_of(&|n| {
            protocol::<objmon::vm::Thin, 0>(&me, &h, n)
        });
        eprintln!("{what} {count}, thin {thin} instructions per lock+unlock");
        assert!(thin >= 4.0, "thin {thin}: not the loop meant");
        assert!(
            count <= thin + slack,
            "{what} {count} against thin {thin} per lock+unlock: its lock out of line?"
        );
    }

    /// `lock_api::Mutex<RawMonitor, T>`'s lock inlines into a user's loop as `Monitor`'s
    /// does: the `monitor-lock-api` row's loop ([`monitor_lock_api`]) runs at most 37
    /// instructions per lock+unlock above `thin`'s through a handle (54 against 22 here; more
    /// if `RawMonitor::lock_checked` were left out of line, as a mere `#[inline]` allows:
    /// see docs/benchmarks.md, "Bench notes moved out of the code"). Above `Monitor`'s
    /// 36: the reentrancy check a `&mut T` lock needs (`holds_lock`: a load of the header),
    /// and the unlock's own look-up of the attachment (`lock_api` keeps nothing between lock
    /// and unlock), whose guard drop LLVM leaves out of line. Release builds only (as below).
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[cfg_attr(debug_assertions, ignore = "release builds only: see the doc comment")]
    #[test]
    fn monitor_lock_api_lock_inlines_into_a_users_loop() {
        let m = objmon::lock_api::Mutex::<objmon::RawMonitor, ()>::new(());
        // Attached and warmed in the parent: the counted child takes only the fast paths.
        drop(m.lock());
        let count =
            crate::bench::tests::instructions_per_iteration_of(&|n| monitor_lock_api::<0>(&m, n));
        at_most_over_thin("lock_api::Mutex<RawMonitor, ()>", count, 37.0);
    }

    /// A handle costs nothing over its context: the loop a user writes through
    /// `&ThreadHandle` ([`protocol`]) executes no more instructions per lock+unlock than the
    /// same loop handed the runtime and the context ([`direct`]). It may only because the
    /// handle has no interior mutability inline (`objmon::handle`'s `HandleCore`): with a
    /// `Cell` back in it, LLVM reloads the handle's two pointers before every lock and
    /// unlock, across the bias owner's `asm!` (which clobbers memory) and the atomics — 6
    /// more instructions for `biased-signal` (22 against 16), 4 for `thin` (21 against 17);
    /// checked by putting the guard count's `Cell` back inline. (Since the handle's word,
    /// `biased-signal` counts 11 both ways.)
    /// Counted exactly by single-stepping (`bench::tests::instructions_per_iteration_of`),
    /// not timed; the object is warmed first (biased to this thread where the protocol
    /// biases), so the counted child takes only the fast paths.
    ///
    /// Release builds only (`.ci/run` runs it with `cargo test --release`): with debug
    /// assertions, objmon's generic code keeps its `debug_assert!`s (the guard's drop checks
    /// its exit), and the two loops no longer compile to the same work.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[cfg_attr(debug_assertions, ignore = "release builds only: see the doc comment")]
    #[test]
    fn handle_costs_nothing_over_its_context() {
        use crate::bench::tests::instructions_per_iteration_of;
        struct Check(Vec<String>);
        impl ProtocolVisitor for Check {
            fn visit<P: Protocol>(&mut self) {
                // The protocols whose loops compile to the same work both ways (`tasuki`
                // and `biased` differ by a register move or two in code layout: 21 / 19, 44
                // / 43 — not the reloads this test is about).
                if !["thin", "biased-signal", "fable-signal"].contains(&P::NAME) {
                    return;
                }
                // SAFETY: this program installs no signal handler of its own (std's fault
                // handlers run only on a fault, which no owner section makes): the -signal
                // flavors' contract (`Runtime::new_unchecked`) holds; the other protocols have
                // none.
                let rt = unsafe { Runtime::<P>::new_unchecked(Default::default()) };
                let me = rt.attach().unwrap();
                let h = P::Header::default();
                protocol::<P, 0>(&me, &h, 10_000);
                direct(&rt, me.context(), &h, 10_000);
                let ours = instructions_per_iteration_of(&|n| protocol::<P, 0>(&me, &h, n));
                let plain = instructions_per_iteration_of(&|n| direct(&rt, me.context(), &h, n));
                eprintln!("{}: handle {ours}, context {plain} instructions", P::NAME);
                assert!(plain >= 4.0, "{}: {plain}: not the loop meant", P::NAME);
                if ours > plain {
                    self.0
                        .push(format!("{}: handle {ours} > context {plain}", P::NAME));
                }
            }
        }
        let mut c = Check(Vec::new());
        objmon::vm::visit_all(&mut c);
        assert!(c.0.is_empty(), "{:?}", c.0);
    }
}
