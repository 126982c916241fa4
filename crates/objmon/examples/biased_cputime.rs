//! The biased protocols against `thin` in CPU time, for a shared, noisy machine: Sync and
//! Nested-Sync (seed 000), Cloud (seed 002 §5.1) and AllocLock (§5.3), each protocol's
//! repetitions interleaved with the others' and the minimum kept, so that another process
//! taking the cores inflates a figure less than it does wall time (the benchmark harness's
//! figures are wall time). Rows: `thin`, `biased` and `fable` (count in lock records),
//! `biased-seed` and `fable-seed` (count in the header, Figures 3–4 and 6–7 as written).
//!
//! `cargo run --release -p objmon --example biased_cputime -- [sync|cloud|alloc-lock]...`
//! (default: all three). Environment: `REPS` (default 8), `THREADS` (Cloud lockers, 10 as
//! §5.1), `PRE` (Cloud warm-up threads, default `THREADS`: `THREADS=1 PRE=10` measures one
//! thread over a cloud that ten threads made thin), `MS` (Cloud repetition, default 100),
//! `N` (AllocLock learn limits, default `5,10`), `K` (AllocLock k values).
//!
//! Sync and AllocLock time the calling thread (`CLOCK_THREAD_CPUTIME_ID`); Cloud times the
//! process (`CLOCK_PROCESS_CPUTIME_ID`, all lockers) and divides by all acquisitions.

use objmon::protocol::biased::{BiasMode, BiasWord, Biasing, Flavor, Kko, KkoSeed, Transition};
use objmon::protocol::fable::{FableHeuristics, FableSeedHeuristics};
use objmon::vm::{Protocol, Runtime, Thin, ThreadHandle};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

type Fable = Biasing<FableHeuristics>;
type FableSeed = Biasing<FableSeedHeuristics>;
type Biased = Biasing<Kko>;
type BiasedSeed = Biasing<KkoSeed>;

/// A heap object: 16 bytes, as the benchmark harness lays objects out.
#[repr(align(16))]
struct Slot<H>(H);

fn clock(id: libc::clockid_t) -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime writes only it.
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime");
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}

fn thread_ns() -> f64 {
    clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn process_ns() -> f64 {
    clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn env_list(name: &str, default: &[u64]) -> Vec<u64> {
    std::env::var(name)
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| default.to_vec())
}

/// xorshift64*: the cloud's random choice must cost far less than a lock.
fn next(s: &mut u64) -> u64 {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    s.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

/// Thread CPU ns per lock+unlock of one object (held once already if `nested`).
fn sync<P: Protocol>(t: &ThreadHandle<'_, P>, o: &P::Header, nested: bool, n: u64) -> f64 {
    let outer = nested.then(|| t.enter(o).unwrap());
    let c0 = thread_ns();
    for _ in 0..n {
        drop(t.enter(black_box(o)).unwrap());
    }
    let ns = (thread_ns() - c0) / n as f64;
    drop(outer);
    ns
}

fn run_sync(reps: usize) {
    // One attached thread per row for the whole run: a fresh attach is a new generation,
    // which would find the object biased to its predecessor.
    struct Row<P: Protocol> {
        t: ThreadHandle<'static, P>,
        o: Slot<P::Header>,
    }
    impl<P: Protocol> Row<P> {
        fn new() -> Self {
            Self {
                t: Runtime::<P>::with_defaults().attach().unwrap(),
                o: Slot(P::Header::default()),
            }
        }
        fn run(&self, nested: bool) -> f64 {
            sync(&self.t, &self.o.0, nested, 1_000_000)
        }
    }
    let (t, b, bs, f, fs) = (
        Row::<Thin>::new(),
        Row::<Biased>::new(),
        Row::<BiasedSeed>::new(),
        Row::<Fable>::new(),
        Row::<FableSeed>::new(),
    );
    for nested in [false, true] {
        let mut m = [f64::MAX; 5];
        for _ in 0..reps.max(1) * 3 {
            for (i, v) in [
                t.run(nested),
                b.run(nested),
                bs.run(nested),
                f.run(nested),
                fs.run(nested),
            ]
            .into_iter()
            .enumerate()
            {
                m[i] = m[i].min(v);
            }
        }
        println!(
            "{:<11} thread-CPU ns per lock+unlock (min): thin {:.3}  biased {:.3}  biased-seed {:.3}  fable {:.3}  fable-seed {:.3}",
            if nested { "nested-sync" } else { "sync" },
            m[0],
            m[1],
            m[2],
            m[3],
            m[4]
        );
    }
}

/// Thread CPU ns per iteration: allocate, lock `k` times, reclaim, free.
fn alloc_lock<P: Protocol>(rt: &Arc<Runtime<P>>, t: &ThreadHandle<'_, P>, k: u64) -> f64 {
    let iters = 400_000 / (k + 1);
    let c0 = thread_ns();
    for _ in 0..iters {
        let mut o = Box::new(Slot(P::Header::default()));
        for _ in 0..k {
            drop(t.enter(black_box(&o.0)).unwrap());
        }
        rt.reclaim(&mut o.0);
    }
    (thread_ns() - c0) / iters as f64
}

fn run_alloc_lock(reps: usize) {
    let ks = env_list("K", &[1, 2, 3, 4, 5, 6, 8, 10, 12, 15]);
    for n in env_list("N", &[5, 10]) {
        let n = n as u32;
        let rt_t = Runtime::<Thin>::with_defaults();
        let rt_f = Runtime::<Fable>::with_defaults();
        let rt_fs = Runtime::<FableSeed>::with_defaults();
        let rt_b = Runtime::<Biased>::with_defaults();
        Fable::set_knob(&rt_f, n).unwrap();
        FableSeed::set_knob(&rt_fs, n).unwrap();
        let (tt, tf, tfs, tb) = (
            rt_t.attach().unwrap(),
            rt_f.attach().unwrap(),
            rt_fs.attach().unwrap(),
            rt_b.attach().unwrap(),
        );
        let (mut worst, mut worst_seed) = ((0.0, 0), (0.0, 0));
        for &k in &ks {
            let mut m = [f64::MAX; 4];
            for _ in 0..reps.max(1) * 3 {
                m[0] = m[0].min(alloc_lock(&rt_t, &tt, k));
                m[1] = m[1].min(alloc_lock(&rt_f, &tf, k));
                m[2] = m[2].min(alloc_lock(&rt_fs, &tfs, k));
                m[3] = m[3].min(alloc_lock(&rt_b, &tb, k));
            }
            let (rf, rfs) = (m[1] / m[0], m[2] / m[0]);
            if rf > worst.0 {
                worst = (rf, k);
            }
            if rfs > worst_seed.0 {
                worst_seed = (rfs, k);
            }
            println!(
                "alloc-lock N={n:<2} k={k:<2} thread-CPU ns/iteration (min): thin {:7.2}  fable {:7.2} ({rf:.2}x)  fable-seed {:7.2} ({rfs:.2}x)  biased {:7.2} ({:.2}x)",
                m[0],
                m[1],
                m[2],
                m[3],
                m[3] / m[0]
            );
        }
        println!(
            "alloc-lock N={n}: worst fable / thin {:.2} (k={}), fable-seed / thin {:.2} (k={}); seed 002 §5.3 bound 1.5",
            worst.0, worst.1, worst_seed.0, worst_seed.1
        );
    }
}

struct Cloud<P: Protocol> {
    rt: Arc<Runtime<P>>,
    objs: Vec<Slot<P::Header>>,
}

impl<P: Protocol> Cloud<P> {
    fn new(objects: usize) -> Self {
        Self {
            rt: Runtime::with_defaults(),
            objs: (0..objects).map(|_| Slot(P::Header::default())).collect(),
        }
    }

    /// `threads` threads lock random objects for `time`: (wall ns, process CPU ns) per
    /// acquisition.
    fn run(&self, threads: usize, time: Duration) -> (f64, f64) {
        let stop = AtomicBool::new(false);
        let total = AtomicU64::new(0);
        let start = Barrier::new(threads + 1);
        let mut wall = Duration::ZERO;
        let mut cpu = 0.0;
        std::thread::scope(|s| {
            for i in 0..threads {
                let (stop, total, start, objs, rt) = (&stop, &total, &start, &self.objs, &self.rt);
                s.spawn(move || {
                    let t = rt.attach().unwrap();
                    let mut r = 0x9E37_79B9_7F4A_7C15u64 ^ ((i as u64 + 1) * 0x1234_5678_9ABC);
                    let mut n = 0u64;
                    start.wait();
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..256 {
                            let k = (((next(&mut r) >> 32) * objs.len() as u64) >> 32) as usize;
                            drop(t.enter(&objs[k].0).unwrap());
                            n += 1;
                        }
                    }
                    total.fetch_add(n, Ordering::Relaxed);
                });
            }
            start.wait();
            let (w0, c0) = (std::time::Instant::now(), process_ns());
            std::thread::sleep(time);
            stop.store(true, Ordering::Relaxed);
            wall = w0.elapsed();
            cpu = c0;
        });
        let cpu = process_ns() - cpu;
        let n = total.into_inner().max(1) as f64;
        (wall.as_nanos() as f64 / n, cpu / n)
    }
}

fn bias_stats<F: Flavor>(rt: &Runtime<Biasing<F>>) -> String {
    let r = rt.state().revocations();
    let tr = |t| Biasing::<F>::transitions(rt, t);
    format!(
        "revocations {} (median {} ns, p99 {} ns), clear->learn {}, learn->biased {}, learn->thin {}, clear->biased {}, biased->thin {}, thin->fat {}",
        r.total(),
        r.latency_quantile_ns(0.5).unwrap_or(0),
        r.latency_quantile_ns(0.99).unwrap_or(0),
        tr(Transition::ClearToLearn),
        tr(Transition::LearnToBiased),
        tr(Transition::LearnToThin),
        tr(Transition::ClearToBiased),
        tr(Transition::BiasedToThin),
        tr(Transition::ThinToFat)
    )
}

/// The cloud's objects by state now (a racy snapshot): which fast path the lockers take, and
/// how predictable its branches are (a mix of states is a data-dependent branch per lock).
fn modes(objs: &[Slot<BiasWord>]) -> String {
    let mut n = [0usize; 5];
    for o in objs {
        n[match o.0.mode() {
            BiasMode::Clear => 0,
            BiasMode::Biased => 1,
            BiasMode::Learn => 2,
            BiasMode::Thin => 3,
            BiasMode::Fat => 4,
        }] += 1;
    }
    format!(
        "clear {} biased {} learn {} thin {} fat {}",
        n[0], n[1], n[2], n[3], n[4]
    )
}

fn run_cloud(reps: usize) {
    let threads = env("THREADS", 10usize);
    let pre = env("PRE", threads);
    let time = Duration::from_millis(env("MS", 100u64));
    let objects = env("OBJECTS", 1_000_000usize);
    let (t, f, b, fs) = (
        Cloud::<Thin>::new(objects),
        Cloud::<Fable>::new(objects),
        Cloud::<Biased>::new(objects),
        Cloud::<FableSeed>::new(objects),
    );
    // Warm-up as the harness does: the first passes make the cloud's objects what the
    // protocol makes of them (learn, thin, biased and revoked).
    for _ in 0..2 {
        t.run(pre, time);
        f.run(pre, time);
        b.run(pre, time);
        fs.run(pre, time);
    }
    println!("  fable objects after warm-up: {}", modes(&f.objs));
    let mut m = [(f64::MAX, f64::MAX); 4];
    for _ in 0..reps.max(1) {
        for (i, v) in [
            t.run(threads, time),
            f.run(threads, time),
            b.run(threads, time),
            fs.run(threads, time),
        ]
        .into_iter()
        .enumerate()
        {
            m[i] = (m[i].0.min(v.0), m[i].1.min(v.1));
        }
    }
    println!(
        "cloud threads={threads} (warm-up {pre}) objects={objects}: process-CPU ns per acquisition (min): thin {:.2}  fable {:.2} ({:.2}x)  biased {:.2} ({:.2}x)  fable-seed {:.2} ({:.2}x)",
        m[0].1,
        m[1].1,
        m[1].1 / m[0].1,
        m[2].1,
        m[2].1 / m[0].1,
        m[3].1,
        m[3].1 / m[0].1
    );
    println!(
        "cloud wall ns per acquisition (min): thin {:.2}  fable {:.2}  biased {:.2}  fable-seed {:.2}",
        m[0].0, m[1].0, m[2].0, m[3].0
    );
    println!("  fable objects at the end: {}", modes(&f.objs));
    println!("  fable:      {}", bias_stats(&f.rt));
    println!("  biased:     {}", bias_stats(&b.rt));
    println!("  fable-seed: {}", bias_stats(&fs.rt));
}

fn main() {
    objmon::vm::init_revocation();
    let reps = env("REPS", 8usize);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let all = args.is_empty();
    let want = |s: &str| all || args.iter().any(|a| a == s);
    if want("sync") {
        run_sync(reps);
    }
    if want("alloc-lock") {
        run_alloc_lock(reps);
    }
    if want("cloud") {
        run_cloud(reps);
    }
}
