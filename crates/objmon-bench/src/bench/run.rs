//! Running a bench on a subject: one bench at a time ([`run`]), or as jobs whose rows are
//! interleaved round by round ([`job`], [`interleave`]), with the warm-up and the time budget
//! every repetition loop shares; and the per-repetition logs the report pairs by round.

use super::catalog::{Bench, Plan};
use super::seed000::{call, call_sync, contended, multi_sync, multi_sync_objects, no_sync, sync};
use super::seed002::{
    alloc_lock, cloud, cloud_reps_line, growth_cloud, prod_cons, CloudRep, CloudReps, CLOUD_REPS,
};
use super::waits::TREE_NODES;
use super::waits::{system_monitor, tree_test, wait_notify};

use super::Slot;
use crate::subject::Subject;
use std::hint::black_box;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

/// A fresh runtime of `S`, with its knob set to `knob` if given.
fn new_rt<S: Subject>(knob: Option<u32>) -> S::Rt {
    let rt = S::runtime();
    if let Some(v) = knob {
        if let Err(e) = S::set_knob(&rt, v) {
            panic!("{}: cannot set its knob to {v}: {e}", S::NAME);
        }
    }
    rt
}

/// Runs one figure of `bench` on `S` (its knob at `knob`, or the default when `None`): the
/// warm-up, then `plan.reps` values in ns per op.
pub fn run<S: Subject>(
    bench: Bench,
    param: u64,
    threads: usize,
    plan: &Plan,
    knob: Option<u32>,
) -> Vec<f64> {
    let (reps, budget) = (plan.reps.max(1), plan.figure_budget);
    let mut out = Vec::with_capacity(reps);
    match bench {
        Bench::UserLoop => unreachable!("user-loop runs all its rows at once: userloop::run"),
        // The interleaved benches: the runner runs their rows round by round (`interleave`);
        // here one row's job is repeated alone.
        Bench::Threads | Bench::Cloud | Bench::CloudGrowth | Bench::AllocLock => {
            let mut job = job::<S>(bench, param, threads, plan, knob);
            repeat(reps, budget, &mut out, || job.rep());
        }
        Bench::NoSync => repeat(reps, budget, &mut out, || no_sync(plan.pairs)),
        Bench::Call => repeat(reps, budget, &mut out, || call(plan.pairs)),
        Bench::Sync => {
            let (rt, o) = (new_rt::<S>(knob), Slot(S::new_obj()));
            let t = S::attach(&rt);
            repeat(reps, budget, &mut out, || {
                sync::<S>(&t, &o.0, plan.pairs, false)
            });
        }
        Bench::NestedSync => {
            let (rt, o) = (new_rt::<S>(knob), Slot(S::new_obj()));
            let t = S::attach(&rt);
            repeat(reps, budget, &mut out, || {
                sync::<S>(&t, &o.0, plan.pairs, true)
            });
        }
        Bench::CallSync | Bench::NestedCallSync | Bench::MutexTest => {
            let (rt, o) = (new_rt::<S>(knob), Slot(S::new_obj()));
            let t = S::attach(&rt);
            let n = if bench == Bench::MutexTest {
                300_000
            } else {
                plan.pairs
            };
            let nested = bench == Bench::NestedCallSync;
            repeat(reps, budget, &mut out, || {
                call_sync::<S>(&t, &o.0, n, nested)
            });
        }
        Bench::MultiSync => {
            let rt = new_rt::<S>(knob);
            let t = S::attach(&rt);
            let passes = (plan.pairs / param.max(1)).max(1);
            let mut objs = multi_sync_objects::<S>(&t, param, passes);
            repeat(reps, budget, &mut out, || {
                multi_sync::<S>(&t, &objs, passes)
            });
            drop(t);
            for o in &mut objs {
                S::retire(&rt, &mut o.0);
            }
        }
        Bench::ProdCons => {
            let rt = new_rt::<S>(knob);
            repeat(reps, budget, &mut out, || {
                prod_cons::<S>(&rt, plan.productions)
            });
        }
        Bench::TreeTest => {
            let rt = new_rt::<S>(knob);
            let mut tree: Vec<Slot<S::Obj>> = (0..TREE_NODES).map(|_| Slot(S::new_obj())).collect();
            let t = S::attach(&rt);
            repeat(reps, budget, &mut out, || {
                tree_test::<S>(&t, &tree, plan.traversals)
            });
            drop(t);
            for o in &mut tree {
                S::retire(&rt, &mut o.0);
            }
        }
        Bench::SystemMonitor => {
            let (rt, o) = (new_rt::<S>(knob), Slot(S::new_obj()));
            repeat(reps, budget, &mut out, || {
                system_monitor::<S>(&rt, &o.0, plan.system_calls)
            });
        }
        Bench::WaitNotify => {
            let (rt, o) = (new_rt::<S>(knob), Slot(S::new_obj()));
            repeat(reps, budget, &mut out, || {
                wait_notify::<S>(&rt, &o.0, plan.handovers)
            });
        }
    }
    out
}

/// One row's repetitions of a bench whose rows the runner interleaves ([`Bench::interleaved`]):
/// made ready by [`job`], then run one repetition at a time by [`interleave`]; dropping it
/// ends the row (its objects retired, its log kept).
pub trait Job {
    /// Runs one repetition and returns its figure (ns per op).
    fn rep(&mut self) -> f64;
}

impl Bench {
    /// Whether the runner times this bench's rows round by round, every row once per round
    /// ([`interleave`]), rather than row after row. Cloud's figures are wall time over 10
    /// threads, and what the bench answers is a ratio between rows (seed 002: `fable` within
    /// ~10% of `thin`); on a shared host a neighbour's use of the cache moves `thin` by several
    /// times for seconds at a time (docs/benchmarks.md, "Bench notes moved out of the code"),
    /// so rows timed one after the other meet different machines.
    ///
    /// Threads too: its targets are ratios to `parking-lot-mutex` at the same thread count
    /// (the report's contended targets), and its short repetitions met whatever the host did
    /// at the time.
    ///
    /// And cloud-growth: its curve compares one row's figures at different sizes, which the
    /// same swings bent (a row whose larger clouds ran in a quiet spell read flat or falling).
    ///
    /// And AllocLock, whose FABLE ÷ thin (seed 002 §5.3: at most 1.5×) the report judges in
    /// every run: row after row, single rows of a quick report read 2–3× their neighbours in
    /// spells.
    pub fn interleaved(self) -> bool {
        matches!(
            self,
            Bench::Cloud | Bench::Threads | Bench::CloudGrowth | Bench::AllocLock
        )
    }
}

/// The [`Job`] of `bench` on `S` (an [interleaved](Bench::interleaved) bench) at `param`
/// with `threads` threads (Threads: the parameter; Cloud and cloud-growth: the lockers).
/// A cloud-growth cloud is settled here (`seed002::settle_cloud`).
pub fn job<S: Subject>(
    bench: Bench,
    param: u64,
    threads: usize,
    plan: &Plan,
    knob: Option<u32>,
) -> Box<dyn Job> {
    assert!(bench.interleaved(), "{} runs row by row", bench.name());
    if bench == Bench::AllocLock {
        return Box::new(AllocJob::<S> {
            knob,
            k: param,
            iters: (plan.pairs / (param + 1)).max(1),
            subject: PhantomData,
        });
    }
    if bench == Bench::CloudGrowth {
        let rt = new_rt::<S>(knob);
        let objs = growth_cloud::<S>(&rt, param, threads, plan);
        return Box::new(CloudJob::<S> {
            rt,
            objs,
            threads,
            time: plan.growth_time,
            log: None,
        });
    }
    if bench == Bench::Threads {
        // Contended pairs are slow: a fifth of the single-thread budget, shared by the
        // threads.
        let total = (plan.pairs / 5).max(threads as u64);
        return Box::new(ThreadsJob::<S> {
            rt: new_rt::<S>(knob),
            o: Slot(S::new_obj()),
            threads,
            each: total / threads as u64,
            log: ThreadsReps {
                row: S::NAME.to_string(),
                threads: param,
                reps: Vec::new(),
            },
        });
    }
    Box::new(CloudJob::<S> {
        rt: new_rt::<S>(knob),
        objs: (0..plan.cloud_objects)
            .map(|_| Slot(S::new_obj()))
            .collect(),
        threads,
        time: plan.cloud_time,
        log: Some(CloudReps {
            row: match (knob, S::KNOB) {
                (Some(v), Some(k)) => crate::subject::knob_row(S::NAME, &k, v),
                _ => S::NAME.to_string(),
            },
            reps: Vec::new(),
        }),
    })
}

/// AllocLock on one row and k. Every repetition makes its own runtime and attaches to it:
/// a quick report has ~380 AllocLock figures (54 rows with the learn-limit sweeps, 7 k), and
/// one attached handle per figure for the whole bench would keep ~380 runtimes, each with
/// this thread attached, alive at once. The set-up is not timed (`alloc_lock` times its own
/// loop of 10^6 / (k + 1) iterations), and the warm-up round still warms the code.
struct AllocJob<S: Subject> {
    knob: Option<u32>,
    k: u64,
    iters: u64,
    subject: PhantomData<S>,
}

impl<S: Subject> Job for AllocJob<S> {
    fn rep(&mut self) -> f64 {
        let rt = new_rt::<S>(self.knob);
        let t = S::attach(&rt); // detached before `rt` drops (reverse order)
        alloc_lock::<S>(&rt, &t, self.k, self.iters)
    }
}

/// Threads on one row and thread count: its runtime and its one object, which every
/// repetition reuses.
struct ThreadsJob<S: Subject> {
    rt: S::Rt,
    o: Slot<S::Obj>,
    threads: usize,
    each: u64,
    /// Every repetition's figure, the warm-up first (for the report's paired targets).
    log: ThreadsReps,
}

impl<S: Subject> Job for ThreadsJob<S> {
    fn rep(&mut self) -> f64 {
        let ns = contended::<S>(&self.rt, &self.o.0, self.threads, self.each);
        self.log.reps.push(ns);
        ns
    }
}

impl<S: Subject> Drop for ThreadsJob<S> {
    fn drop(&mut self) {
        S::retire(&self.rt, &mut self.o.0);
        THREADS_REPS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(std::mem::take(&mut self.log));
    }
}

/// Every repetition of one row's Threads figure at one thread count, in order, the untimed
/// warm-up first: the report pairs two rows' repetitions round by round (`interleave` runs
/// round r of every row of the bench before round r + 1).
#[derive(Clone, Debug, Default)]
pub struct ThreadsReps {
    /// Row name.
    pub row: String,
    /// The thread count (the figure's parameter).
    pub threads: u64,
    /// ns per lock+unlock, warm-up first.
    pub reps: Vec<f64>,
}

/// Threads' per-repetition log of this process, one entry per row and count (read by the
/// report).
static THREADS_REPS: std::sync::Mutex<Vec<ThreadsReps>> = std::sync::Mutex::new(Vec::new());

/// The Threads repetitions measured so far in this process, in the order the rows ran.
pub fn threads_reps() -> Vec<ThreadsReps> {
    THREADS_REPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// Cloud (or cloud-growth) on one row: its runtime and its cloud, which every repetition of
/// the row reuses, and for Cloud (`log`) every repetition's figure with the revocations it
/// made, the warm-up first (a fresh cloud's start-up, FABLE's learn mode deciding and KKO's
/// revocations, shows there).
struct CloudJob<S: Subject> {
    rt: S::Rt,
    objs: Vec<Slot<S::Obj>>,
    threads: usize,
    time: Duration,
    log: Option<CloudReps>,
}

impl<S: Subject> Job for CloudJob<S> {
    fn rep(&mut self) -> f64 {
        let before = S::revocations(&self.rt);
        let ns = cloud::<S>(&self.rt, &self.objs, self.threads, self.time);
        if let Some(log) = &mut self.log {
            let revocations = S::revocations(&self.rt).zip(before).map(|(a, b)| a - b);
            log.reps.push(CloudRep { ns, revocations });
        }
        ns
    }
}

impl<S: Subject> Drop for CloudJob<S> {
    fn drop(&mut self) {
        if let Some(log) = self.log.take() {
            eprintln!("{}", cloud_reps_line(&log.row, &log.reps));
            CLOUD_REPS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(log);
        }
        for o in &mut self.objs {
            S::retire(&self.rt, &mut o.0);
        }
    }
}

/// Runs `jobs` round by round: a warm-up round (every row once, in order), then `reps`
/// rounds, each row once per round, round r starting at row r; a row whose warm-up shows
/// that `reps` repetitions would overrun `budget` runs fewer, at least one (as [`repeat`]).
/// Each row's figures, in the order of `jobs`.
pub fn interleave(jobs: &mut [Box<dyn Job>], reps: usize, budget: Duration) -> Vec<Vec<f64>> {
    let reps = reps.max(1);
    let fit: Vec<usize> = jobs
        .iter_mut()
        .map(|j| warm_up(reps, budget, || j.rep()))
        .collect();
    let n = jobs.len();
    let mut out = vec![Vec::with_capacity(reps); n];
    for r in 0..reps {
        for k in 0..n {
            let i = (r + k) % n;
            if out[i].len() < fit[i] {
                out[i].push(jobs[i].rep());
            }
        }
    }
    out
}

/// Runs `f` once untimed (the warm-up) and returns how many of `reps` timed runs fit in
/// `budget` at the warm-up's pace: at least one.
fn warm_up(reps: usize, budget: Duration, mut f: impl FnMut() -> f64) -> usize {
    let t0 = Instant::now();
    black_box(f());
    let warm = t0.elapsed().max(Duration::from_micros(1));
    reps.min((budget.as_nanos() / warm.as_nanos()).max(1) as usize)
}

/// One warm-up run, then `reps` timed runs (fewer if they would overrun the budget).
fn repeat(reps: usize, budget: Duration, out: &mut Vec<f64>, mut f: impl FnMut() -> f64) {
    for _ in 0..warm_up(reps, budget, &mut f) {
        out.push(f());
    }
}
