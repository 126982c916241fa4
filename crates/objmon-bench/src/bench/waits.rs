//! Seed 003 (CACAO)'s tree test, seed 004 (tasuki) §5.1's synchronized call while another
//! thread waits on the object, wait/notify hand-over, and the monitors left alive after
//! contention (for the report's space section).

use super::seed000::{per_op, synchronized_method};
use super::seed002::XorShift;

use super::Slot;
use crate::subject::Subject;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

/// Nodes of the seed 003 tree test: a complete binary tree of depth 16.
pub const TREE_NODES: usize = 65_535;

/// The tree's node `i` has children `2i+1` and `2i+2`; each visit is a synchronized method
/// on the node that calls the children's.
#[inline(never)]
fn visit_node<S: Subject>(t: &S::Thread, tree: &[Slot<S::Obj>], i: usize, c: &mut u64) {
    let _g = S::lock(t, &tree[i].0);
    *c += 1;
    let l = 2 * i + 1;
    if l < tree.len() {
        visit_node::<S>(t, tree, l, c);
        visit_node::<S>(t, tree, l + 1, c);
    }
}

pub(super) fn tree_test<S: Subject>(t: &S::Thread, tree: &[Slot<S::Obj>], traversals: u32) -> f64 {
    let mut c = 0u64;
    let t0 = Instant::now();
    for _ in 0..traversals {
        visit_node::<S>(t, tree, 0, &mut c);
    }
    let ns = per_op(t0, c);
    black_box(c);
    ns
}

/// Seed 004 §5.1: thread W waits on `o` for the whole run; thread M calls a synchronized
/// method on `o` `n` times. Where the subject has no wait, M runs alone.
pub(super) fn system_monitor<S: Subject>(rt: &S::Rt, o: &S::Obj, n: u64) -> f64 {
    let done = AtomicBool::new(false);
    let waiting = AtomicBool::new(false);
    let mut ns = 0.0;
    thread::scope(|s| {
        if S::WAIT {
            s.spawn(|| {
                let t = S::attach(rt);
                let mut g = S::lock(&t, o);
                waiting.store(true, Ordering::Relaxed);
                while !done.load(Ordering::Relaxed) {
                    S::wait(&mut g, Duration::from_secs(1));
                }
            });
        }
        let t = S::attach(rt);
        if S::WAIT {
            // Until W is in the wait set, locking would contend with it.
            loop {
                let g = S::lock(&t, o);
                if waiting.load(Ordering::Relaxed) {
                    break;
                }
                drop(g);
                thread::yield_now();
            }
        }
        let mut c = 0u64;
        let t0 = Instant::now();
        for _ in 0..n {
            synchronized_method::<S>(&t, black_box(o), &mut c);
        }
        ns = per_op(t0, n);
        black_box(c);
        if S::WAIT {
            let g = S::lock(&t, o);
            done.store(true, Ordering::Relaxed);
            S::notify_all(&g);
        }
    });
    ns
}

pub(super) fn wait_notify<S: Subject>(rt: &S::Rt, o: &S::Obj, rounds: u32) -> f64 {
    let turn = AtomicU32::new(0);
    let start = Barrier::new(2);
    let t0 = Instant::now();
    thread::scope(|s| {
        for me in 0..2u32 {
            let (turn, start) = (&turn, &start);
            s.spawn(move || {
                let t = S::attach(rt);
                start.wait();
                let mut g = S::lock(&t, o);
                for _ in 0..rounds {
                    while turn.load(Ordering::Relaxed) != me {
                        S::wait(&mut g, Duration::from_millis(100));
                    }
                    turn.store(1 - me, Ordering::Relaxed);
                    S::notify_all(&g);
                }
            });
        }
    });
    per_op(t0, 2 * rounds as u64)
}

/// After a contended phase: `threads` threads lock random objects among `objects` for
/// `time`, then stop; returns (live monitors once all have stopped, the same after every
/// object was reclaimed). `None` where the subject has no monitors to count.
pub fn live_after_contention<S: Subject>(
    threads: usize,
    objects: usize,
    time: Duration,
) -> Option<(usize, usize)> {
    let rt = S::runtime();
    S::live_monitors(&rt)?;
    let mut objs: Vec<Slot<S::Obj>> = (0..objects).map(|_| Slot(S::new_obj())).collect();
    // Short critical sections with a yield inside, so that threads really collide.
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        for i in 0..threads {
            let (stop, objs, rt) = (&stop, &objs, &rt);
            s.spawn(move || {
                let t = S::attach(rt);
                let mut rng = XorShift(0xDEAD_BEEF ^ ((i as u64 + 7) * 0x9E37_79B9));
                while !stop.load(Ordering::Relaxed) {
                    let g = S::lock(&t, &objs[rng.below(objs.len())].0);
                    thread::yield_now();
                    drop(g);
                }
            });
        }
        thread::sleep(time);
        stop.store(true, Ordering::Relaxed);
    });
    let live = S::live_monitors(&rt)?;
    for o in &mut objs {
        S::retire(&rt, &mut o.0);
    }
    Some((live, S::live_monitors(&rt)?))
}
