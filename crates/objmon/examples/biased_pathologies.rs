//! Small versions of the pathology benchmarks of seed 002 (§5.1 Cloud and ProdCons, §5.3
//! AllocLock), run over `thin`, `biased` (each revocation, hybrid included) and `fable` (each revocation) in one
//! process, with ratios against `thin` and the paper's bounds. (The benchmark harness's own
//! versions replace these once they land.)
//!
//! `cargo run --release -p objmon --example biased_pathologies [-- --quick]`
//! (`ONLY=fable/membarrier` runs just that protocol besides `thin`; `THREADS=n` sets Cloud's
//! thread count, 4 by default.)
//!
//! - Cloud: `THREADS` threads lock random objects out of `OBJECTS` for a fixed time;
//!   throughput = acquisitions per second (higher is better). FABLE bound: within 10% of thin.
//! - ProdCons: a producer allocates an object, locks it once and queues it; a consumer
//!   dequeues it, locks it once and drops it; time for `ITEMS` objects (lower is better).
//!   FABLE bound: at most 3× thin.
//! - AllocLock: one thread allocates an object and locks it k times, `ALLOCS` times; time per
//!   object (lower is better). FABLE bound: at most 1.5× thin.
//!
//! Threads poll (`ThreadHandle::poll`) once per loop iteration, as JIT-compiled code polls at
//! loop back-edges, so the handshake revocations can make progress.

use objmon::protocol::biased::{Biasing, Flavor, Kko, Transition};
use objmon::protocol::fable::FableHeuristics;
use objmon::vm::RevocationKind;
use objmon::vm::{BiasConfig, Protocol, Revocation, Runtime, Thin};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Params {
    threads: usize,
    objects: usize,
    cloud_time: Duration,
    items: usize,
    allocs: usize,
}

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

/// A Java-sized object: a header and a payload, 32 bytes whatever the header's size (the
/// 64-bit header of the biased protocols would otherwise double Cloud's footprint against
/// thin's 32-bit one and measure the cache, not the protocol).
#[repr(align(32))]
struct Obj<H>(H);

/// Acquisitions per second.
fn cloud<P: Protocol>(rt: &Arc<Runtime<P>>, p: &Params) -> f64 {
    let objs: Vec<Obj<P::Header>> = (0..p.objects).map(|_| Obj(P::Header::default())).collect();
    let stop = AtomicBool::new(false);
    let total = AtomicU64::new(0);
    // All start together: a thread running alone at first would find every object
    // thread-local, and rightly bias it.
    let start = std::sync::Barrier::new(p.threads + 1);
    std::thread::scope(|s| {
        for i in 0..p.threads {
            let (objs, stop, total, start) = (&objs, &stop, &total, &start);
            s.spawn(move || {
                let me = rt.attach().unwrap();
                me.in_native(|| start.wait());
                let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ (i as u64 + 1);
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let o = &objs[(xorshift(&mut seed) % objs.len() as u64) as usize].0;
                    drop(me.enter(o).unwrap());
                    n += 1;
                    me.poll();
                }
                total.fetch_add(n, Ordering::Relaxed);
            });
        }
        start.wait();
        std::thread::sleep(p.cloud_time);
        stop.store(true, Ordering::Relaxed);
    });
    let mut objs = objs;
    for o in &mut objs {
        rt.reclaim(&mut o.0);
    }
    total.load(Ordering::Relaxed) as f64 / p.cloud_time.as_secs_f64()
}

/// Seconds for `items` objects.
fn prodcons<P: Protocol>(rt: &Arc<Runtime<P>>, p: &Params) -> f64 {
    let (tx, rx) = mpsc::channel::<Box<P::Header>>();
    let consumed = AtomicBool::new(false);
    let consumed = &consumed;
    let t0 = Instant::now();
    std::thread::scope(|s| {
        s.spawn(move || {
            let me = rt.attach().unwrap();
            for _ in 0..p.items {
                let o = Box::new(P::Header::default());
                drop(me.enter(&o).unwrap());
                tx.send(o).unwrap();
                me.poll();
            }
            // Stay attached (and polling) until the consumer is done, as a long-lived
            // producer would: revoking the bias of a detached owner is cheaper.
            while !consumed.load(Ordering::Acquire) {
                me.poll();
                std::thread::yield_now();
            }
        });
        s.spawn(move || {
            let me = rt.attach().unwrap();
            let mut got = 0;
            while got < p.items {
                match rx.try_recv() {
                    Ok(mut o) => {
                        drop(me.enter(&o).unwrap());
                        rt.reclaim(&mut o);
                        got += 1;
                    }
                    Err(_) => std::thread::yield_now(),
                }
                me.poll();
            }
            consumed.store(true, Ordering::Release);
        });
    });
    t0.elapsed().as_secs_f64()
}

/// Nanoseconds per allocated object locked `k` times.
fn alloclock<P: Protocol>(rt: &Arc<Runtime<P>>, p: &Params, k: usize) -> f64 {
    let me = rt.attach().unwrap();
    let t0 = Instant::now();
    for _ in 0..p.allocs {
        let mut o = std::hint::black_box(P::Header::default());
        for _ in 0..k {
            drop(me.enter(&o).unwrap());
        }
        rt.reclaim(&mut o);
    }
    t0.elapsed().as_nanos() as f64 / p.allocs as f64
}

struct Row {
    name: String,
    cloud: f64,
    prodcons: f64,
    alloc: Vec<f64>,
    revocations: String,
}

const KS: [usize; 4] = [1, 2, 5, 10];

fn run<P: Protocol>(name: &str, p: &Params, setup: impl Fn(&Runtime<P>)) -> Row
where
    Runtime<P>: Revocations,
{
    if std::env::var("ONLY").is_ok_and(|o| o != name && name != "thin") {
        return Row {
            name: name.into(),
            cloud: f64::NAN,
            prodcons: f64::NAN,
            alloc: vec![f64::NAN; KS.len()],
            revocations: String::new(),
        };
    }
    let fresh = || {
        let rt = Runtime::<P>::with_defaults();
        setup(&rt);
        rt
    };
    let rt_c = fresh();
    let c = cloud(&rt_c, p);
    let rt_p = fresh();
    let pc = prodcons(&rt_p, p);
    let alloc = KS.iter().map(|&k| alloclock(&fresh(), p, k)).collect();
    Row {
        name: name.into(),
        cloud: c,
        prodcons: pc,
        alloc,
        revocations: format!(
            "cloud {}; prodcons {}",
            rt_c.revocation_summary(),
            rt_p.revocation_summary()
        ),
    }
}

trait Revocations {
    fn revocation_summary(&self) -> String;
}

impl Revocations for Runtime<Thin> {
    fn revocation_summary(&self) -> String {
        "-".into()
    }
}

impl<F: Flavor> Revocations for Runtime<Biasing<F>> {
    fn revocation_summary(&self) -> String {
        let r = self.state().revocations();
        let q = |x| {
            r.latency_quantile_ns(x)
                .map_or("-".into(), |v| format!("{v}"))
        };
        let tr = |t| Biasing::<F>::transitions(self, t);
        format!(
            "{} biased, {} revocations (sync {}, async {}, barrier {}, safe {}, exited {}), median {} ns, p99 {} ns",
            tr(Transition::LearnToBiased) + tr(Transition::ClearToBiased),
            r.total(),
            r.count(RevocationKind::Sync),
            r.count(RevocationKind::Async),
            r.count(RevocationKind::Membarrier),
            r.count(RevocationKind::OwnerSafe),
            r.count(RevocationKind::OwnerExited),
            q(0.5),
            q(0.99)
        )
    }
}

fn bias<F: Flavor>(mode: Revocation) -> impl Fn(&Runtime<Biasing<F>>) {
    move |rt| {
        let got = Biasing::<F>::configure(
            rt,
            BiasConfig {
                revocation: mode,
                learn_limit: 5,
            },
        );
        assert_eq!(got, mode, "membarrier refused by this kernel");
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let p = if quick {
        Params {
            threads: 4,
            objects: 10_000,
            cloud_time: Duration::from_millis(200),
            items: 20_000,
            allocs: 200_000,
        }
    } else {
        Params {
            threads: 4,
            objects: 1_000_000,
            cloud_time: Duration::from_millis(1000),
            items: 200_000,
            allocs: 2_000_000,
        }
    };
    let mut p = p;
    if let Some(n) = std::env::var("THREADS").ok().and_then(|v| v.parse().ok()) {
        p.threads = n;
    }
    objmon::vm::init_revocation();
    let mut rows = vec![run::<Thin>("thin", &p, |_| {})];
    for (label, mode) in [
        ("sync", Revocation::SyncHandshake),
        ("async", Revocation::AsyncHandshake),
        ("membarrier", Revocation::Membarrier),
        ("hybrid", Revocation::Hybrid),
    ] {
        rows.push(run::<Biasing<Kko>>(
            &format!("biased/{label}"),
            &p,
            bias::<Kko>(mode),
        ));
    }
    for (label, mode) in [
        ("sync", Revocation::SyncHandshake),
        ("async", Revocation::AsyncHandshake),
        ("membarrier", Revocation::Membarrier),
        ("hybrid", Revocation::Hybrid),
    ] {
        rows.push(run::<Biasing<FableHeuristics>>(
            &format!("fable/{label}"),
            &p,
            bias::<FableHeuristics>(mode),
        ));
    }
    let thin = &rows[0];
    println!(
        "threads {}, objects {}, cloud {:?}, prodcons items {}, alloclock objects {}",
        p.threads, p.objects, p.cloud_time, p.items, p.allocs
    );
    print!(
        "{:<18} {:>14} {:>7} {:>12} {:>7}",
        "protocol", "cloud acq/s", "/thin", "prodcons s", "/thin"
    );
    for k in KS {
        print!(" {:>9} {:>6}", format!("alloc k={k}"), "/thin");
    }
    println!();
    for r in &rows {
        print!(
            "{:<18} {:>14.0} {:>7.3} {:>12.4} {:>7.2}",
            r.name,
            r.cloud,
            r.cloud / thin.cloud,
            r.prodcons,
            r.prodcons / thin.prodcons
        );
        for (i, a) in r.alloc.iter().enumerate() {
            print!(" {:>9.1} {:>6.2}", a, a / thin.alloc[i]);
        }
        println!();
    }
    println!();
    for r in &rows[1..] {
        println!("{:<18} {}", r.name, r.revocations);
    }
    println!(
        "\nseed 002 bounds for fable: cloud ≥ 0.90 × thin; prodcons ≤ 3 × thin; alloclock ≤ 1.5 × thin"
    );
}
