//! `objmon-bench`: measures every objmon protocol.
//!
//! `objmon-bench report` runs a short multi-threaded workload (lock, nested lock, contention,
//! wait/notify) over every protocol in `objmon::visit_all` and prints ns per lock+unlock pair.

mod stress;

use clap::{Parser, Subcommand};
use objmon::{Protocol, ProtocolVisitor, Runtime};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(version, about = "Benchmarks of the objmon locking protocols")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Short workload over every protocol; prints a table of ns per lock+unlock pair.
    Report {
        /// Fewer iterations (for CI smoke runs).
        #[arg(long)]
        quick: bool,
        /// Repetitions per figure; the median is shown.
        #[arg(long, default_value_t = 5)]
        reps: usize,
    },
    /// Random mixes of every monitor operation with invariants checked continuously.
    Stress {
        /// Protocol name, or `all`.
        #[arg(long, default_value = "all")]
        protocol: String,
        /// Seconds per protocol.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// Worker threads (default: 4 per core, at least 8).
        #[arg(long)]
        threads: Option<usize>,
        /// Objects.
        #[arg(long, default_value_t = 64)]
        objects: usize,
        /// Seed of the random streams (default: from the clock; printed).
        #[arg(long)]
        seed: Option<u64>,
        /// Seconds without progress after which a worker counts as stuck.
        #[arg(long, default_value_t = 20)]
        watchdog: u64,
    },
}

/// One measured figure: the median of the repetitions, with their spread.
struct Figure {
    median: f64,
    min: f64,
    max: f64,
}

fn measure(reps: usize, mut run: impl FnMut() -> f64) -> Figure {
    run(); // warm-up: page faults, first inflation, thread creation
    let mut v: Vec<f64> = (0..reps.max(1)).map(|_| run()).collect();
    v.sort_by(f64::total_cmp);
    Figure {
        median: v[v.len() / 2],
        min: v[0],
        max: v[v.len() - 1],
    }
}

/// ns per lock+unlock on one object, one thread (seed 000's Sync).
fn sync<P: Protocol>(iters: u64) -> f64 {
    let rt = Runtime::<P>::with_defaults();
    let me = rt.attach().unwrap();
    let h = P::Header::default();
    let t0 = Instant::now();
    for _ in 0..iters {
        let g = me.enter(black_box(&h)).unwrap();
        black_box(&g);
    }
    t0.elapsed().as_nanos() as f64 / iters as f64
}

/// ns per nested lock+unlock, the object already held once (seed 000's NestedSync).
fn nested<P: Protocol>(iters: u64) -> f64 {
    let rt = Runtime::<P>::with_defaults();
    let me = rt.attach().unwrap();
    let h = P::Header::default();
    let _outer = me.enter(&h).unwrap();
    let t0 = Instant::now();
    for _ in 0..iters {
        let g = me.enter(black_box(&h)).unwrap();
        black_box(&g);
    }
    t0.elapsed().as_nanos() as f64 / iters as f64
}

/// ns per lock+unlock pair (wall time / all pairs) with `threads` threads on one object.
fn contended<P: Protocol>(threads: usize, iters: u64) -> f64 {
    let rt = Runtime::<P>::with_defaults();
    let h = P::Header::default();
    let counter = AtomicU32::new(0);
    let start = Barrier::new(threads + 1);
    let elapsed = thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let me = rt.attach().unwrap();
                start.wait();
                for _ in 0..iters {
                    let g = me.enter(&h).unwrap();
                    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                    drop(g);
                }
            });
        }
        start.wait();
        let t0 = Instant::now();
        // Scope joins here.
        t0
    });
    let ns = elapsed.elapsed().as_nanos() as f64;
    assert_eq!(
        counter.into_inner() as u64,
        threads as u64 * iters,
        "lost update"
    );
    ns / (threads as u64 * iters) as f64
}

/// ns per hand-over in a two-thread ping-pong with wait / notify on one object.
fn wait_notify<P: Protocol>(rounds: u32) -> f64 {
    let rt = Runtime::<P>::with_defaults();
    let h = P::Header::default();
    let turn = AtomicU32::new(0);
    let done = AtomicBool::new(false);
    let t0 = Instant::now();
    thread::scope(|s| {
        for me_turn in 0..2u32 {
            let (rt, h, turn, done) = (&rt, &h, &turn, &done);
            s.spawn(move || {
                let me = rt.attach().unwrap();
                let g = me.enter(h).unwrap();
                for _ in 0..rounds {
                    while turn.load(Ordering::Relaxed) != me_turn {
                        g.wait(Some(Duration::from_millis(100))).unwrap();
                    }
                    turn.store(1 - me_turn, Ordering::Relaxed);
                    g.notify().unwrap();
                }
                done.store(true, Ordering::Relaxed);
            });
        }
    });
    t0.elapsed().as_nanos() as f64 / (2 * rounds) as f64
}

/// The floor: a bare compare-and-swap and release store on a private word.
fn speed_of_light(iters: u64) -> f64 {
    let w = std::sync::atomic::AtomicU32::new(0);
    let t0 = Instant::now();
    for _ in 0..iters {
        let _ = black_box(&w).compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed);
        black_box(&w).store(0, Ordering::Release);
    }
    t0.elapsed().as_nanos() as f64 / iters as f64
}

struct Report {
    iters: u64,
    reps: usize,
    rows: Vec<(String, Vec<Figure>)>,
}

impl ProtocolVisitor for Report {
    fn visit<P: Protocol>(&mut self) {
        let (n, r) = (self.iters, self.reps);
        let figures = vec![
            measure(r, || sync::<P>(n)),
            measure(r, || nested::<P>(n)),
            measure(r, || contended::<P>(2, n / 10)),
            measure(r, || wait_notify::<P>((n / 1000).max(100) as u32)),
        ];
        self.rows.push((P::NAME.to_string(), figures));
    }
}

fn report(quick: bool, reps: usize) {
    let iters = if quick { 200_000 } else { 5_000_000 };
    let cores = thread::available_parallelism().map_or(1, |n| n.get());
    println!("objmon report: {iters} iterations, median of {reps} repetitions, {cores} cores");
    println!(
        "ns per lock+unlock pair (wait-notify: ns per hand-over); [min..max] of the repetitions\n"
    );
    let sol = measure(reps, || speed_of_light(iters));
    let mut rep = Report {
        iters,
        reps,
        rows: Vec::new(),
    };
    objmon::visit_all(&mut rep);
    let cols = ["sync", "nested-sync", "contended-2t", "wait-notify"];
    print!("{:<16}", "protocol");
    for c in cols {
        print!("{c:>26}");
    }
    println!();
    let cell = |f: &Figure| format!("{:.1} [{:.1}..{:.1}]", f.median, f.min, f.max);
    print!("{:<16}{:>26}", "cas+store", cell(&sol));
    println!();
    for (name, figs) in &rep.rows {
        print!("{name:<16}");
        for f in figs {
            print!("{:>26}", cell(f));
        }
        println!();
    }
}

fn main() {
    match Cli::parse().command {
        Command::Report { quick, reps } => report(quick, reps),
        Command::Stress {
            protocol,
            seconds,
            threads,
            objects,
            seed,
            watchdog,
        } => {
            let cores = thread::available_parallelism().map_or(1, |n| n.get());
            let seed = seed.unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
            });
            let config = stress::StressConfig {
                protocol,
                duration: Duration::from_secs(seconds),
                threads: threads.unwrap_or((4 * cores).max(8)),
                objects,
                seed,
                watchdog: Duration::from_secs(watchdog),
            };
            println!(
                "stress: {} threads, {} objects, seed {}",
                config.threads, config.objects, seed
            );
            match stress::run(&config) {
                Ok(reports) => {
                    for (name, r) in reports {
                        println!(
                            "{name:<14} ok: {} lock ops, {} waits, {} tokens, {} interrupts, {} re-attaches, {} live monitors",
                            r.locks, r.waits, r.tokens, r.interrupts, r.reattaches, r.live_monitors
                        );
                    }
                }
                Err(v) => {
                    eprintln!("{v}");
                    std::process::exit(1);
                }
            }
        }
    }
}
