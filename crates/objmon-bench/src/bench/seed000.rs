//! Seed 000 (thin locks) Table 2's workloads: the empty and the called loop, lock+unlock
//! plain, nested and in a synchronized method, a working set of objects, and threads on one
//! object.

use super::seed002::span_ns;
use super::Slot;

use crate::subject::Subject;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::Instant;

/// Elapsed ns since `t0` divided by `ops`.
pub(super) fn per_op(t0: Instant, ops: u64) -> f64 {
    t0.elapsed().as_nanos() as f64 / ops.max(1) as f64
}

pub(super) fn no_sync(n: u64) -> f64 {
    let mut c = 0u64;
    let t0 = Instant::now();
    for _ in 0..n {
        c = black_box(c + 1);
    }
    black_box(c);
    per_op(t0, n)
}

#[inline(never)]
fn plain_method(c: &mut u64) {
    *c = black_box(*c + 1);
}

pub(super) fn call(n: u64) -> f64 {
    let mut c = 0u64;
    let t0 = Instant::now();
    for _ in 0..n {
        plain_method(&mut c);
    }
    black_box(c);
    per_op(t0, n)
}

/// The timed loop of Sync and NestedSync, and of every row of MultiSync's inner pass: the loop
/// a user writes, `for _ in 0..n { let g = me.enter(&h).unwrap(); drop(g); }`, with nothing
/// else per iteration. `black_box` hides the object once, before the loop (so the compiler
/// cannot reason about the lock word's contents), never inside it: a per-iteration
/// `black_box` costs a store and a load that a user's loop does not have. The loop survives
/// optimization because every lock row does at least one atomic access per iteration, which
/// the compiler keeps (`sol-empty`'s "lock" is itself a `black_box`).
///
/// Not inlined, so that `bench::tests` can count its instructions per iteration and hold
/// them against the same loop written plainly.
#[inline(never)]
pub fn lock_loop<S: Subject>(t: &S::Thread, o: &S::Obj, n: u64) {
    let o = black_box(o);
    for _ in 0..n {
        let g = S::lock(t, o);
        drop(g);
    }
}

pub(super) fn sync<S: Subject>(t: &S::Thread, o: &S::Obj, n: u64, nested: bool) -> f64 {
    let outer = nested.then(|| S::lock(t, o));
    let t0 = Instant::now();
    lock_loop::<S>(t, o, n);
    let ns = per_op(t0, n);
    drop(outer);
    ns
}

/// A synchronized method: the lock is taken inside the (not inlined) callee, as the JVM's
/// method prologue does.
#[inline(never)]
pub(super) fn synchronized_method<S: Subject>(t: &S::Thread, o: &S::Obj, c: &mut u64) {
    let _g = S::lock(t, o);
    *c = black_box(*c + 1);
}

pub(super) fn call_sync<S: Subject>(t: &S::Thread, o: &S::Obj, n: u64, nested: bool) -> f64 {
    let outer = nested.then(|| S::lock(t, o));
    let mut c = 0u64;
    let t0 = Instant::now();
    for _ in 0..n {
        synchronized_method::<S>(t, black_box(o), &mut c);
    }
    let ns = per_op(t0, n);
    drop(outer);
    black_box(c);
    ns
}

/// Lock+unlock pairs every MultiSync object gets before its timed passes (the settling
/// passes plus the warm-up's), so that each timed pass meets every object in its steady
/// state, as a small working set's objects are after the first of their many passes.
/// `fable` biases an object after its learn limit + 1 consecutive acquisitions by one thread
/// (N ≤ 10 in the sweeps, `LearnRule::PerObject`); a 10^6-object pass that locked each
/// object once per repetition would meet learn-mode words in its median repetition and bend
/// the curve up (a start-up transient, which AllocLock measures, not the working set's cost).
pub const SETTLE: u64 = 16;

/// A MultiSync working set of `n` objects, each brought to [`SETTLE`] lock+unlock pairs by
/// `t`, counting the warm-up's `passes` that follow.
pub(super) fn multi_sync_objects<S: Subject>(
    t: &S::Thread,
    n: u64,
    passes: u64,
) -> Vec<Slot<S::Obj>> {
    let objs: Vec<Slot<S::Obj>> = (0..n).map(|_| Slot(S::new_obj())).collect();
    if passes < SETTLE {
        black_box(multi_sync::<S>(t, &objs, SETTLE - passes));
    }
    objs
}

pub(super) fn multi_sync<S: Subject>(t: &S::Thread, objs: &[Slot<S::Obj>], passes: u64) -> f64 {
    let objs = black_box(objs);
    let t0 = Instant::now();
    for _ in 0..passes {
        for o in objs {
            let g = S::lock(t, &o.0);
            drop(g);
        }
    }
    per_op(t0, passes * objs.len() as u64)
}

/// `threads` threads each lock `o` `each` times; a racy counter checks exclusion.
pub(super) fn contended<S: Subject>(rt: &S::Rt, o: &S::Obj, threads: usize, each: u64) -> f64 {
    let counter = AtomicU64::new(0);
    let start = Barrier::new(threads);
    let spans = thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                spawn_locker(s, threads, || {
                    let t = S::attach(rt);
                    start.wait();
                    let t0 = Instant::now();
                    for _ in 0..each {
                        let g = S::lock(&t, o);
                        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                        drop(g);
                    }
                    (t0, Instant::now())
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("locker"))
            .collect::<Vec<_>>()
    });
    let total = threads as u64 * each;
    assert_eq!(counter.into_inner(), total, "{}: lost update", S::NAME);
    span_ns(&spans) / total.max(1) as f64
}

/// Starts one of a bench's `threads` lockers in `s`. The thread count is the user's
/// (`--threads`, `--param`, at most [`MAX_THREADS`](super::MAX_THREADS)); when the system refuses a thread (its
/// limit on threads or processes is lower), that is reported as a usage error and the
/// process ends with status 2 rather than a panic.
pub(super) fn spawn_locker<'scope, 'env, T: Send + 'scope>(
    s: &'scope thread::Scope<'scope, 'env>,
    threads: usize,
    f: impl FnOnce() -> T + Send + 'scope,
) -> thread::ScopedJoinHandle<'scope, T> {
    thread::Builder::new()
        .spawn_scoped(s, f)
        .unwrap_or_else(|e| {
            eprintln!(
                "error: cannot start {threads} threads: {e}; this system allows fewer \
                 (`ulimit -u`, kernel.threads-max, kernel.pid_max): ask for fewer with \
                 --threads / --param"
            );
            std::process::exit(2)
        })
}
