//! Contended throughput as a user meets it: `N` threads lock and unlock one object in a
//! plain loop through the embedder API (`Runtime::<P>::attach()`, `me.enter(&h)`), with a
//! tiny critical section (one relaxed load and store of a shared counter), beside
//! `parking_lot::Mutex` doing the same. Every configuration is measured once per round,
//! rounds interleave the configurations (so a burst of load on the shared machine hits them
//! all alike), and the figures are medians over the rounds of the wall time per
//! lock+unlock (all threads together: lower is better) and of the CPU time the threads
//! used per lock+unlock (spinning and system calls included; on a loaded machine the less
//! noisy of the two, since a descheduled thread uses none).
//!
//! ```sh
//! cargo run --release -p objmon --example contended            # 7 rounds, 2/4/8 threads
//! cargo run --release -p objmon --example contended -- 7 2,4 fat,thin
//! ```
//!
//! Arguments (all optional): rounds, comma-separated thread counts, comma-separated kinds
//! (`fat`, `thin`, `tasuki`, `fable`, `parking_lot`, `monitor` — `objmon::Monitor<()>` —, or
//! any protocol name; `fat@256` runs `fat` with `SystemLockConfig::spin_limit` 256; `thin@fig7`
//! and `thin@fig5` run `thin` on the system lock's seed-faithful releases,
//! `SystemLockVariant::Figure7` (one fence per release) and `Figure5`, instead of the default
//! `Figure7Membarrier`).

use objmon::vm::{Config, Protocol, ProtocolVisitor, Runtime, SystemLockVariant};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Lock+unlock pairs per configuration and round, over all threads (`CONTENDED_OPS` in the
/// environment overrides it).
fn total_ops() -> u64 {
    std::env::var("CONTENDED_OPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000_000)
}

/// The critical section: a load and a store of a shared counter (not an atomic increment:
/// the lock is what makes it correct, and the final count checks that).
#[inline(always)]
fn critical_section(c: &AtomicU64) {
    c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// This thread's CPU time (user + system).
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID needs nothing else.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(r, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Runs `threads` threads of `body` after a common start line; returns the wall time from
/// the start line to the last thread's end, and the CPU time the threads used (spinning and
/// system calls included: what the waiting costs the machine).
fn timed(threads: usize, body: impl Fn() + Sync) -> (Duration, Duration) {
    let start = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    let c0 = thread_cpu();
                    body();
                    thread_cpu() - c0
                })
            })
            .collect();
        start.wait();
        let t0 = Instant::now();
        let cpu = hs.into_iter().map(|h| h.join().unwrap()).sum();
        (t0.elapsed(), cpu)
    })
}

/// One measurement of any kind: `threads` threads each run `body(count, n)`, `n` lock+unlock
/// pairs of the kind's lock around [`critical_section`] on `count`, `n` being their share of
/// [`total_ops`]. Checks the final count (the lock excluded the threads from each other) and
/// returns wall and CPU nanoseconds per lock+unlock.
fn ns_per_op(threads: usize, body: impl Fn(&AtomicU64, u64) + Sync) -> (f64, f64) {
    let count = AtomicU64::new(0);
    let n = total_ops() / threads as u64;
    let (d, cpu) = timed(threads, || body(&count, n));
    assert_eq!(count.load(Ordering::Relaxed), n * threads as u64);
    let ops = (n * threads as u64) as f64;
    (d.as_nanos() as f64 / ops, cpu.as_nanos() as f64 / ops)
}

/// The measured loop of every kind: `n` times, take the lock (`lock` returns its guard), run
/// the critical section on `c`, drop the guard.
#[inline(always)]
fn lock_loop<G>(c: &AtomicU64, n: u64, lock: impl Fn() -> G) {
    for _ in 0..n {
        let g = lock();
        critical_section(c);
        drop(g);
    }
}

struct One {
    name: String,
    /// `SystemLockConfig::spin_limit`, if not the default.
    spin_limit: Option<u32>,
    /// The system lock's release, if not the default (`Figure7Membarrier`).
    variant: Option<SystemLockVariant>,
    threads: usize,
    ns: Option<(f64, f64)>,
}

impl ProtocolVisitor for One {
    fn visit<P: Protocol>(&mut self) {
        if P::NAME != self.name {
            return;
        }
        let mut config = Config::default();
        if let Some(s) = self.spin_limit {
            config.system_lock.spin_limit = s;
        }
        if let Some(v) = self.variant {
            config.system_lock.variant = v;
        }
        // SAFETY: this program installs no signal handler of its own (std's fault handlers run
        // only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rt = unsafe { Runtime::<P>::new_unchecked(config) };
        let h = P::Header::default();
        self.ns = Some(ns_per_op(self.threads, |count, n| {
            let me = rt.attach().unwrap();
            run_loop(&me, &h, count, n);
        }));
        if std::env::var_os("CONTENDED_STATS").is_some() {
            let s = rt.stats_snapshot();
            eprintln!(
                "{} x{}: inflations {} (contention {}), deflations {}",
                P::NAME,
                self.threads,
                s.inflations(),
                s.inflations_contention,
                s.deflations
            );
        }
    }
}

#[inline(never)]
fn run_loop<P: Protocol>(
    me: &objmon::vm::ThreadHandle<'_, P>,
    h: &P::Header,
    c: &AtomicU64,
    n: u64,
) {
    lock_loop(c, n, || me.enter(black_box(h)).unwrap());
}

fn parking_lot_ns(threads: usize) -> (f64, f64) {
    let m = parking_lot::Mutex::new(());
    ns_per_op(threads, |c, n| lock_loop(c, n, || black_box(&m).lock()))
}

/// `objmon::Monitor<()>`, the Rust user's type (the default protocol on its process-wide
/// runtime, threads attached on first use), beside `parking_lot::Mutex<()>`.
fn monitor_ns(threads: usize) -> (f64, f64) {
    let m = objmon::Monitor::new(());
    ns_per_op(threads, |c, n| lock_loop(c, n, || black_box(&m).lock()))
}

/// Wall and CPU nanoseconds per lock+unlock.
fn measure(kind: &str, threads: usize) -> (f64, f64) {
    if kind == "parking_lot" {
        return parking_lot_ns(threads);
    }
    if kind == "monitor" {
        return monitor_ns(threads);
    }
    let (name, spin_limit, variant) = match kind.split_once('@') {
        Some((n, "fig5")) => (n, None, Some(SystemLockVariant::Figure5)),
        Some((n, "fig7")) => (n, None, Some(SystemLockVariant::Figure7)),
        Some((n, s)) => (n, Some(s.parse().expect("spin limit after @")), None),
        None => (kind, None, None),
    };
    let mut one = One {
        name: name.to_string(),
        spin_limit,
        variant,
        threads,
        ns: None,
    };
    objmon::vm::visit_all(&mut one);
    one.ns.unwrap_or_else(|| panic!("no protocol named {kind}"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// `contended inflated KIND N`: one thread, `N` lock+unlock pairs of one object whose lock
/// was made fat first (a notify under the lock), for instruction counts of the inflated
/// paths without contention: `valgrind --tool=callgrind` at two `N`, the difference.
struct Inflated {
    name: String,
    n: u64,
    done: bool,
}

impl ProtocolVisitor for Inflated {
    fn visit<P: Protocol>(&mut self) {
        if P::NAME != self.name {
            return;
        }
        // SAFETY: this program installs no signal handler of its own (std's fault handlers run
        // only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rt = unsafe { Runtime::<P>::new_unchecked(Config::default()) };
        let h = P::Header::default();
        let me = rt.attach().unwrap();
        me.enter(&h).unwrap().notify().unwrap();
        let count = AtomicU64::new(0);
        run_loop(&me, &h, &count, self.n);
        self.done = true;
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    if std::env::args().nth(1).as_deref() == Some("inflated") {
        let name = std::env::args().nth(2).expect("kind");
        let n = std::env::args()
            .nth(3)
            .map_or(1_000_000, |a| a.parse().expect("n"));
        if name == "parking_lot" {
            let m = parking_lot::Mutex::new(());
            lock_loop(&AtomicU64::new(0), n, || black_box(&m).lock());
            return;
        }
        let mut v = Inflated {
            name,
            n,
            done: false,
        };
        objmon::vm::visit_all(&mut v);
        assert!(v.done, "no protocol named {}", v.name);
        return;
    }
    let rounds: usize = args.next().map_or(7, |a| a.parse().expect("rounds"));
    let threads: Vec<usize> = args.next().map_or(vec![2, 4, 8], |a| {
        a.split(',').map(|t| t.parse().expect("threads")).collect()
    });
    let kinds: Vec<String> = args.next().map_or_else(
        || {
            ["parking_lot", "monitor", "fat", "thin", "tasuki", "fable"]
                .map(String::from)
                .to_vec()
        },
        |a| a.split(',').map(String::from).collect(),
    );
    println!(
        "contended: {rounds} rounds, {} lock+unlock per configuration, load average before: {}",
        total_ops(),
        load_average()
    );
    let mut samples = vec![vec![Vec::new(); kinds.len()]; threads.len()];
    for _ in 0..rounds {
        for (ti, &t) in threads.iter().enumerate() {
            for (ki, k) in kinds.iter().enumerate() {
                samples[ti][ki].push(measure(k, t));
            }
        }
    }
    println!("load average after: {}", load_average());
    println!("wall ns per lock+unlock (median, its ratio to parking_lot, min..max), CPU ns per lock+unlock (median, ratio)");
    for (ti, &t) in threads.iter().enumerate() {
        let wall = |ki: usize| samples[ti][ki].iter().map(|s| s.0).collect::<Vec<_>>();
        let cpu = |ki: usize| samples[ti][ki].iter().map(|s| s.1).collect::<Vec<_>>();
        let pl = kinds
            .iter()
            .position(|k| k == "parking_lot")
            .map(|i| (median(wall(i)), median(cpu(i))));
        for (ki, k) in kinds.iter().enumerate() {
            let w = wall(ki);
            let m = median(w.clone());
            let c = median(cpu(ki));
            let lo = w.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = w.iter().copied().fold(0.0, f64::max);
            let (rw, rc) = pl.map_or((String::new(), String::new()), |(pw, pc)| {
                (format!("{:>5.2}x", m / pw), format!("{:>5.2}x", c / pc))
            });
            println!(
                "threads {t}  {k:<12} wall {m:>6.1} {rw} ({lo:>5.1}..{hi:>5.1})   cpu {c:>6.1} {rc}"
            );
        }
    }
}
