//! How long a waiter is overtaken, per protocol: it reports, it asserts
//! nothing. `THREADS` threads lock one fresh object in a tight loop (lock, a short critical
//! section, unlock, lock again at once: the worst case for a thin lock's spinning contender,
//! whose owner leaves the word free for a few nanoseconds per round) for `MS` milliseconds,
//! `ROUNDS` times (a fresh runtime and object each round, so every round starts with the
//! thin, pre-inflation phase). `LOAD` extra threads spin meanwhile, to load the machine.
//!
//! A wait is *overtaken* if another thread acquired the lock between its call and its
//! acquisition; reported per protocol: the longest overtaken wait, the most acquisitions by
//! others during one wait, the overtaken waits longer than 1 ms, the time spent in overtaken
//! waits in all (and in the worst round); and the longest and total over the waits that
//! began before the object had a monitor ("thin": the spinning phase of `thin`, `biased`,
//! `fable`, whose contender may not write the held word; for a protocol that never inflates,
//! every wait). A wait includes any time the waiter was descheduled, so on a loaded machine
//! every protocol, however fair, shows some. Independent of `objmon-bench`.
//!
//! `cargo run --release -p objmon --example fairness [-- PROTOCOL ...]`
//! (default `thin biased fable`; `all` for every protocol; env `THREADS=3 MS=200 ROUNDS=5
//! LOAD=0`).

use objmon::vm::{Protocol, ProtocolVisitor, Runtime};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[derive(Default, Clone, Copy)]
struct Stats {
    /// Over waits that began while the object had no monitor (a thin lock's spinning phase,
    /// before the first contended acquisition inflates it): the longest overtaken one.
    thin_longest_ns: u64,
    thin_total_ns: u64,
    acquisitions: u64,
    waits_overtaken: u64,
    longest_ns: u64,
    most_overtakes: u64,
    over_1ms: u64,
    total_ns: u64,
}

impl Stats {
    fn merge(&mut self, o: &Stats) {
        self.acquisitions += o.acquisitions;
        self.thin_longest_ns = self.thin_longest_ns.max(o.thin_longest_ns);
        self.thin_total_ns += o.thin_total_ns;
        self.waits_overtaken += o.waits_overtaken;
        self.longest_ns = self.longest_ns.max(o.longest_ns);
        self.most_overtakes = self.most_overtakes.max(o.most_overtakes);
        self.over_1ms += o.over_1ms;
        self.total_ns += o.total_ns;
    }
}

/// A critical section of a few hundred nanoseconds.
fn work(n: u32) -> u64 {
    let mut x = 0u64;
    for i in 0..n {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(u64::from(i)));
    }
    x
}

fn round<P: Protocol>(threads: usize, ms: u64) -> Stats {
    // SAFETY: this program installs no signal handler of its own (std's fault handlers run
    // only on a fault, which no owner section makes): the -signal flavors' contract
    // (`Runtime::new_unchecked`) holds; the other protocols have none.
    let rt = unsafe { Runtime::<P>::new_unchecked(Default::default()) };
    let h = P::Header::default();
    let stop = AtomicBool::new(false);
    let acq = AtomicU64::new(0);
    let mut all = Stats::default();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let (rt, h, stop, acq) = (&rt, &h, &stop, &acq);
                s.spawn(move || {
                    let me = rt.attach().unwrap();
                    let mut st = Stats::default();
                    while !stop.load(Ordering::Relaxed) {
                        let thin = rt.stats_snapshot().live_monitors == 0;
                        let a0 = acq.load(Ordering::SeqCst);
                        let t0 = Instant::now();
                        let g = me.enter(h).unwrap();
                        let waited = t0.elapsed().as_nanos() as u64;
                        let others = acq.fetch_add(1, Ordering::SeqCst) - a0;
                        work(200);
                        drop(g);
                        st.acquisitions += 1;
                        if others > 0 {
                            st.waits_overtaken += 1;
                            st.longest_ns = st.longest_ns.max(waited);
                            st.most_overtakes = st.most_overtakes.max(others);
                            st.total_ns += waited;
                            st.over_1ms += u64::from(waited > 1_000_000);
                            if thin {
                                st.thin_longest_ns = st.thin_longest_ns.max(waited);
                                st.thin_total_ns += waited;
                            }
                        }
                    }
                    st
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(ms));
        stop.store(true, Ordering::Relaxed);
        for w in workers {
            all.merge(&w.join().unwrap());
        }
    });
    all
}

struct Run {
    names: Vec<String>,
    threads: usize,
    ms: u64,
    rounds: u64,
}

impl ProtocolVisitor for Run {
    fn visit<P: Protocol>(&mut self) {
        if !self.names.iter().any(|n| n == "all" || n == P::NAME) {
            return;
        }
        let mut st = Stats::default();
        let mut worst_round = 0u64;
        for _ in 0..self.rounds {
            let r = round::<P>(self.threads, self.ms);
            worst_round = worst_round.max(r.total_ns);
            st.merge(&r);
        }
        println!(
            "{:<18} {:>10} {:>9} {:>12.3} {:>10} {:>7} {:>12.1} {:>12.1} {:>12.3} {:>12.1}",
            P::NAME,
            st.acquisitions,
            st.waits_overtaken,
            st.longest_ns as f64 / 1e6,
            st.most_overtakes,
            st.over_1ms,
            st.total_ns as f64 / 1e6,
            worst_round as f64 / 1e6,
            st.thin_longest_ns as f64 / 1e6,
            st.thin_total_ns as f64 / 1e6,
        );
    }
}

fn main() {
    let mut names: Vec<String> = std::env::args().skip(1).collect();
    if names.is_empty() {
        names = vec!["thin".into(), "biased".into(), "fable".into()];
    }
    let (threads, ms, rounds, load) = (
        env("THREADS", 3) as usize,
        env("MS", 200),
        env("ROUNDS", 5),
        env("LOAD", 0),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let loaders: Vec<_> = (0..load)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    work(1000);
                }
            })
        })
        .collect();
    println!(
        "threads {threads}, {ms} ms x {rounds} rounds, {load} load threads, {} cpus",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "{:<18} {:>10} {:>9} {:>12} {:>10} {:>7} {:>12} {:>12} {:>12} {:>12}",
        "protocol",
        "acquired",
        "overtaken",
        "longest ms",
        "most/wait",
        ">1ms",
        "total ms",
        "worst round",
        "thin: longest",
        "thin: total"
    );
    objmon::vm::visit_all(&mut Run {
        names,
        threads,
        ms,
        rounds,
    });
    stop.store(true, Ordering::Relaxed);
    for l in loaders {
        l.join().unwrap();
    }
}
