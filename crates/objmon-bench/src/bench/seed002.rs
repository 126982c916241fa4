//! Seed 002 (FABLE biased locking) §5's workloads: Cloud (threads locking random objects of
//! a large set, with its per-repetition log), its growth with the set, producer-consumer, and
//! allocate-then-lock.

use super::catalog::Plan;
use super::seed000::{per_op, spawn_locker};

use super::Slot;
use crate::subject::Subject;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

/// One repetition of Cloud, as [`CloudReps`] keeps it.
#[derive(Clone, Copy, Debug)]
pub struct CloudRep {
    /// ns per acquisition (wall / all acquisitions of all threads), as the record's values.
    pub ns: f64,
    /// Bias revocations during the repetition (`None`: the row does not bias).
    pub revocations: Option<u64>,
}

/// Every repetition of one row's Cloud figure, in order: the first is the untimed warm-up on
/// the fresh cloud (not in the record's median), the rest the timed ones.
#[derive(Clone, Debug)]
pub struct CloudReps {
    /// Row name.
    pub row: String,
    /// The repetitions, warm-up first.
    pub reps: Vec<CloudRep>,
}

/// Cloud's per-repetition log of this process, one entry per row run (read by the report).
pub(super) static CLOUD_REPS: std::sync::Mutex<Vec<CloudReps>> = std::sync::Mutex::new(Vec::new());

/// The Cloud repetitions measured so far in this process, in the order the rows ran.
pub fn cloud_reps() -> Vec<CloudReps> {
    CLOUD_REPS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// One line for the bench output: `cloud fable per repetition (1 = warm-up on the fresh
/// cloud): 1: 13.1 ns, 24012 revocations | 2: …`.
pub fn cloud_reps_line(row: &str, reps: &[CloudRep]) -> String {
    let cells: Vec<String> = reps
        .iter()
        .enumerate()
        .map(|(i, r)| match r.revocations {
            Some(n) => format!("{}: {:.2} ns, {n} rev", i + 1, r.ns),
            None => format!("{}: {:.2} ns", i + 1, r.ns),
        })
        .collect();
    format!(
        "cloud {row} per repetition (1 = warm-up on the fresh cloud): {}",
        cells.join(" | ")
    )
}

/// Wall time from the first thread's start to the last thread's end, taken inside the
/// threads: on 2 cores the spawning thread may not run again until the workers are done, so
/// its own clock would miss the work.
pub(super) fn span_ns(spans: &[(Instant, Instant)]) -> f64 {
    let first = spans.iter().map(|s| s.0).min().expect("a thread");
    let last = spans.iter().map(|s| s.1).max().expect("a thread");
    last.duration_since(first).as_nanos() as f64
}

/// A small fast generator (xorshift64*): the cloud's random object choice must cost far less
/// than a lock.
pub(crate) struct XorShift(pub(crate) u64);

impl XorShift {
    #[inline]
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in `0..n` (multiply-shift; the bias is below 2^-32 for our n).
    #[inline]
    pub(super) fn below(&mut self, n: usize) -> usize {
        (((self.next() >> 32) * n as u64) >> 32) as usize
    }
}

/// A cloud-growth cloud of `n` objects on `rt`, settled ([`settle_cloud`]).
pub(super) fn growth_cloud<S: Subject>(
    rt: &S::Rt,
    n: u64,
    threads: usize,
    plan: &Plan,
) -> Vec<Slot<S::Obj>> {
    let objs: Vec<Slot<S::Obj>> = (0..n.max(1)).map(|_| Slot(S::new_obj())).collect();
    settle_cloud::<S>(rt, &objs, threads, plan.growth_time, plan.figure_budget);
    objs
}

/// Acquisitions per object, on average, that a cloud-growth cloud gets before its timed
/// repetitions (see [`settle_cloud`]).
pub const SETTLE_CLOUD: u64 = 8;

/// Runs the cloud in rounds of `round` until its threads made [`SETTLE_CLOUD`] acquisitions
/// per object (or `budget` is spent, a budget of its own beside the repetitions'; returns
/// how many they made), so that cloud-growth's timed repetitions meet every
/// object in its steady state at every size. A fresh cloud's objects change state on their
/// first few touches (`biased` biases an object to its first locker and revokes the bias at
/// the next thread's touch; `fable` learns, then turns thin), and a repetition of fixed
/// length touches each of 10^6 objects about once: without this, the curve's right end
/// measured that start-up (seed 002 Fig. 8's revocation storm, which the Cloud bench shows
/// per repetition), not the cost of a cloud of that size. Eight touches on average leave an
/// object untouched with probability e^-8 ≈ 0.03%.
fn settle_cloud<S: Subject>(
    rt: &S::Rt,
    objs: &[Slot<S::Obj>],
    threads: usize,
    round: Duration,
    budget: Duration,
) -> u64 {
    let target = SETTLE_CLOUD * objs.len() as u64;
    let t0 = Instant::now();
    let mut done = 0u64;
    while done < target && t0.elapsed() < budget {
        let ns = cloud::<S>(rt, objs, threads, round);
        done += (round.as_nanos() as f64 / ns.max(1e-3)) as u64;
    }
    if done < target {
        eprintln!(
            "cloud-growth {} n={}: settling stopped at the figure budget ({} of {target} \
             acquisitions); its repetitions may still meet start-up",
            S::NAME,
            objs.len(),
            done
        );
    }
    done
}

/// Acquisitions one Cloud thread makes between two looks at the stop flag.
const CLOUD_BATCH: u64 = 256;

/// One Cloud thread's `n` acquisitions of random objects ([`CLOUD_BATCH`] in Cloud): the
/// loop Cloud times (a function of its own so that a test can count its instructions,
/// `userloop::tests::fable_takes_a_thin_word_inline`; one call per batch).
#[inline(never)]
pub(crate) fn cloud_batch<S: Subject>(
    t: &S::Thread,
    objs: &[Slot<S::Obj>],
    rng: &mut XorShift,
    n: u64,
) -> u64 {
    for _ in 0..n {
        let g = S::lock(t, &objs[rng.below(objs.len())].0);
        drop(g);
    }
    n
}

/// Cloud runs made so far in this process: each run's threads draw their objects from a
/// fresh stream, so that repetitions (and settling rounds) touch different objects rather
/// than replaying the first one's (which made a large cloud's working set what one round
/// reaches, and settling reach no further).
static CLOUD_ROUNDS: AtomicU64 = AtomicU64::new(0);

pub(super) fn cloud<S: Subject>(
    rt: &S::Rt,
    objs: &[Slot<S::Obj>],
    threads: usize,
    time: Duration,
) -> f64 {
    let round = CLOUD_ROUNDS.fetch_add(1, Ordering::Relaxed) + 1;
    let stop = AtomicBool::new(false);
    let total = AtomicU64::new(0);
    let start = Barrier::new(threads + 1);
    let mut elapsed = Duration::ZERO;
    thread::scope(|s| {
        for i in 0..threads {
            let (stop, total, start) = (&stop, &total, &start);
            spawn_locker(s, threads, move || {
                let t = S::attach(rt);
                let mut rng = XorShift(
                    0x9E37_79B9_7F4A_7C15 ^ ((i as u64 + 1) * 0x1234_5678_9ABC) ^ (round << 32),
                );
                let mut n = 0u64;
                start.wait();
                while !stop.load(Ordering::Relaxed) {
                    n += cloud_batch::<S>(&t, objs, &mut rng, CLOUD_BATCH);
                }
                total.fetch_add(n, Ordering::Relaxed);
            });
        }
        start.wait();
        let t0 = Instant::now();
        thread::sleep(time);
        stop.store(true, Ordering::Relaxed);
        elapsed = t0.elapsed();
        // The acquisitions after `stop` (at most 256 per thread) count with the time until
        // `stop`; both are small against the run.
    });
    elapsed.as_nanos() as f64 / total.into_inner().max(1) as f64
}

pub(super) fn prod_cons<S: Subject>(rt: &S::Rt, n: u64) -> f64 {
    let (tx, rx) = mpsc::sync_channel::<Box<Slot<S::Obj>>>(1024);
    let start = Barrier::new(2);
    let spans = thread::scope(|s| {
        let start = &start;
        let producer = s.spawn(move || {
            let t = S::attach(rt);
            start.wait();
            let t0 = Instant::now();
            for _ in 0..n {
                let o = Box::new(Slot(S::new_obj()));
                drop(S::lock(&t, &o.0));
                tx.send(o).expect("consumer alive");
            }
            (t0, Instant::now())
        });
        let consumer = s.spawn(move || {
            let t = S::attach(rt);
            start.wait();
            let t0 = Instant::now();
            for mut o in rx {
                drop(S::lock(&t, &o.0));
                S::retire(rt, &mut o.0);
            }
            (t0, Instant::now())
        });
        [
            producer.join().expect("producer"),
            consumer.join().expect("consumer"),
        ]
    });
    span_ns(&spans) / n.max(1) as f64
}

pub(super) fn alloc_lock<S: Subject>(rt: &S::Rt, t: &S::Thread, k: u64, iters: u64) -> f64 {
    let t0 = Instant::now();
    for _ in 0..iters {
        let mut o = Box::new(Slot(S::new_obj()));
        for _ in 0..k {
            drop(S::lock(t, black_box(&o.0)));
        }
        S::retire(rt, &mut o.0);
    }
    per_op(t0, iters)
}
