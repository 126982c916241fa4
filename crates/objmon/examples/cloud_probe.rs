//! Measurement only (seed 002 §5.1 Cloud): what makes a lock + unlock cost more than
//! `thin`'s when every header misses the cache. One thread locks and unlocks random objects
//! of a cloud of 10^6 16-byte objects whose words are all free thin locks.
//!
//! Default rows: hand-written copies of the fast paths on raw atomics, each a variation of
//! one thing — `thin` on 32- and 64-bit words; `fable`'s thin acquisition with the bias test
//! before the thin test (the order before this probe) and after it (the order now); and
//! `thin` with 16 `nop`s added, no load, no branch. With `REAL=1`: `thin` and `fable`
//! themselves through the public API (their clouds made all thin by two other threads),
//! interleaved with the raw `thin` copy. Thread CPU ns per lock + unlock, minimum of `REPS`
//! (default 5) repetitions of 4·10^6.
//!
//! `cargo run --release -p objmon --example cloud_probe` (and `REAL=1 …`).
//!
//! **`rules`** (`cargo run --release -p objmon --example cloud_probe -- rules`): FABLE's two
//! learn rules side by side (`LearnRule::PerObject`, `fable`'s default, against seed 002
//! §3.1's `PerThread` random counting, both on `fable`'s engine), beside `thin` and
//! `biased`. Cloud as §5.1 runs it — 10 threads, 10^6 objects, one fresh runtime and cloud
//! per row — repetition by repetition (`REPS`, default 5; each 10 × 400,000 acquisitions,
//! fresh threads): ns per acquisition in wall time and in the threads' summed CPU time, and
//! the bias revocations and learn → biased transitions of the repetition. Then AllocLock
//! (§5.3, one thread, k = 1…8, 10^6 objects per figure, thread CPU time, median of 5
//! interleaved rounds).
//!
//! **`alloc ROW:K N`** (for `valgrind --tool=callgrind`, like `user_loop`): N AllocLock
//! iterations with k = K on one thread, ROW `thin`, `fable` (per object) or `fable-3.1`
//! (per thread); run with two N and divide the difference in instructions by it.
//!
//! What it showed on the shared 2-core EPYC VM: 16 `nop`s make `thin`'s loop about 1.3×
//! slower, so the loop is bound by how many iterations' misses the out-of-order window
//! overlaps, i.e. by µops per iteration, not by the one miss's latency; the bias test
//! first is 1.2–1.4× `thin`, the thin test first close to it.
//!
//! `rules`, repetitions after the first: each has fresh threads, which get
//! the last ones' ids. Before learn words carried their guess's learn tag, such a thread
//! continued the count of objects its id's previous holder had locked, and per-object
//! FABLE biased 220–665 objects in the second repetition and revoked them all in the third
//! (three of four rounds, two runs with `REPS=4`); with the tag, none in any later
//! repetition of four rounds (1–5 objects biased and revoked in the first, before and after:
//! one thread locking an object N + 1 times in a row). §3.1's per-thread rule is not about
//! ids: it biases ~25,000 objects in the first repetition, revoked there and (~3,700) in the
//! second.

use objmon::protocol::biased::{BiasState, Biased, Transition};
use objmon::protocol::fable::{Fable, LearnRule};
use objmon::vm::{Protocol, Runtime, Thin};
use std::any::Any;
use std::hint::black_box;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

/// An object as the benchmark harness lays it out: 16 bytes.
#[repr(align(16))]
struct Slot<H>(H);

fn cpu_ns() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime writes only it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime");
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}

/// xorshift64*, as the Cloud benchmarks use.
fn next(s: &mut u64) -> u64 {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    s.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

#[inline(always)]
fn pick(r: &mut u64, len: usize) -> usize {
    (((next(r) >> 32) * len as u64) >> 32) as usize
}

const OBJECTS: usize = 1_000_000;
const N: u64 = 4_000_000;
// The biased engine's layout (protocol/biased.rs).
const HOST: u64 = 0xff;
const RC: u64 = 0xff << 8;
const ONE: u64 = 1 << 8;
const THIN: u64 = 3 << 16;
const STATE_LOW: u64 = 1 << 16;
const STALE: u64 = 1 << 18;
const OWNER: u64 = 0x7fff << 19;
const GEN: u64 = ((1 << 30) - 1) << 34;

/// The thread's line, as the engine's `LockRecords` has it.
#[repr(C, align(64))]
struct Me {
    bias: AtomicU64,
    owner: u64,
}

fn run(name: &str, reps: usize, mut f: impl FnMut(&mut u64) -> u64) {
    let mut best = f64::MAX;
    let mut r = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..reps {
        let c0 = cpu_ns();
        black_box(f(&mut r));
        best = best.min((cpu_ns() - c0) / N as f64);
    }
    println!("{name:<48} {best:6.2} ns");
}

/// `thin`'s fast paths on a 64-bit word: load, CAS (no branch between), then the unlock.
fn raw_thin64(reps: usize, w64: &[Slot<AtomicU64>]) {
    run("raw thin, 64-bit word", reps, |r| {
        let mut n = 0;
        for _ in 0..N {
            let h = &w64[pick(r, w64.len())].0;
            let w = h.load(Ordering::Relaxed);
            let exp = (w & (HOST | OWNER)) | THIN;
            if h.compare_exchange(exp, exp | ONE, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                n += 1;
            }
            let w = h.load(Ordering::Relaxed);
            if w & RC == ONE {
                h.store(w - ONE, Ordering::Release);
            }
        }
        n
    });
}

/// `fable`'s thin acquisition and release; `bias_first`: the bias owner's test before the
/// thin test on both sides (the order before), else after it (the order now).
fn raw_fable(reps: usize, w64: &[Slot<AtomicU64>], me: &Me, bias_first: bool) {
    let name = if bias_first {
        "raw fable, bias test first (before)"
    } else {
        "raw fable, thin test first (now)"
    };
    run(name, reps, |r| {
        let mut n = 0;
        for _ in 0..N {
            let h = &w64[pick(r, w64.len())].0;
            let w = h.load(Ordering::Relaxed);
            if bias_first && w & !HOST == me.bias.load(Ordering::Relaxed) {
                n += 2; // the owner's record step would run here
                continue;
            }
            if w & !HOST & !OWNER == THIN {
                if h.compare_exchange(
                    w,
                    (w & HOST) | THIN | me.owner | ONE,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_ok()
                {
                    n += 1;
                }
            } else if w & !HOST == me.bias.load(Ordering::Relaxed) {
                n += 2;
                continue;
            }
            let w = h.load(Ordering::Relaxed);
            if bias_first && w & !HOST == me.bias.load(Ordering::Relaxed) {
                continue;
            }
            if w & (STATE_LOW | STALE | OWNER | RC) == STATE_LOW | me.owner | ONE {
                h.store(w - ONE, Ordering::Release);
            } else if w & !HOST == me.bias.load(Ordering::Relaxed) {
                continue;
            }
        }
        n
    });
}

/// A cloud of `P` made all thin: every object locked once by a first thread (clear →
/// learn in `fable`) and then by a second one (learn → thin), both attached at once so that
/// their ids differ (a learn word names its guess by id, and ids are reused).
fn thin_cloud<P: Protocol>() -> (Arc<Runtime<P>>, Vec<Slot<P::Header>>) {
    let rt = Runtime::<P>::with_defaults();
    let objs: Vec<Slot<P::Header>> = (0..OBJECTS).map(|_| Slot(P::Header::default())).collect();
    let turn = Barrier::new(2);
    std::thread::scope(|s| {
        for i in 0..2 {
            let (rt, objs, turn) = (&rt, &objs, &turn);
            s.spawn(move || {
                let t = rt.attach().unwrap();
                for pass in 0..2 {
                    if pass == i {
                        for o in objs {
                            drop(t.enter(&o.0).unwrap());
                        }
                    }
                    turn.wait();
                }
            });
        }
    });
    (rt, objs)
}

fn real<P: Protocol>(name: &str, reps: usize, c: &(Arc<Runtime<P>>, Vec<Slot<P::Header>>)) {
    let t = c.0.attach().unwrap();
    let objs = &c.1;
    run(name, reps, |r| {
        for _ in 0..N {
            drop(t.enter(&objs[pick(r, objs.len())].0).unwrap());
        }
        0
    });
}

/// Cloud's lockers per repetition and acquisitions each (`rules`).
const LOCKERS: usize = 10;
const EACH: u64 = 400_000;

/// The bias revocations of `rt` so far, if its protocol biases.
fn revocations<P: Protocol>(rt: &Runtime<P>) -> Option<u64> {
    let any: &dyn Any = rt.state();
    any.downcast_ref::<BiasState>()
        .map(|b| b.revocations().total())
}

/// One Cloud row of `rules`: `reps` repetitions on one fresh cloud, each by `LOCKERS` fresh
/// threads; `biased_so_far` reads the learn → biased (or clear → biased) transitions.
fn cloud_row<P: Protocol>(
    name: &str,
    rt: &Arc<Runtime<P>>,
    reps: usize,
    biased_so_far: impl Fn(&Runtime<P>) -> u64,
) {
    let objs: Vec<Slot<P::Header>> = (0..OBJECTS).map(|_| Slot(P::Header::default())).collect();
    let mut cells = Vec::new();
    for _ in 0..reps {
        let (rev0, bias0) = (revocations(rt), biased_so_far(rt));
        let start = Barrier::new(LOCKERS + 1);
        let cpu = AtomicU64::new(0);
        let t0 = std::time::Instant::now();
        std::thread::scope(|s| {
            for i in 0..LOCKERS {
                let (rt, objs, start, cpu) = (rt, &objs, &start, &cpu);
                s.spawn(move || {
                    let t = rt.attach().unwrap();
                    let mut r = 0x9E37_79B9_7F4A_7C15u64 ^ ((i as u64 + 1) * 0x1234_5678_9ABC);
                    start.wait();
                    let c0 = cpu_ns();
                    for _ in 0..EACH {
                        drop(t.enter(&objs[pick(&mut r, objs.len())].0).unwrap());
                    }
                    cpu.fetch_add((cpu_ns() - c0) as u64, Ordering::Relaxed);
                });
            }
            start.wait();
        });
        let n = (LOCKERS as u64 * EACH) as f64;
        let wall = t0.elapsed().as_nanos() as f64 / n;
        let cpu = cpu.into_inner() as f64 / n;
        let rev = revocations(rt).map(|r| r - rev0.unwrap_or(0));
        let biased = biased_so_far(rt) - bias0;
        cells.push(match rev {
            Some(rev) => format!("{wall:5.1} {cpu:5.1} {rev:6} {biased:6}"),
            None => format!("{wall:5.1} {cpu:5.1}      -      -"),
        });
    }
    println!("{name:<22} {}", cells.join(" | "));
}

/// AllocLock (§5.3): `iters` fresh objects, each locked `k` times; thread CPU ns per object.
fn alloc_lock<P: Protocol>(rt: &Arc<Runtime<P>>, k: u64, iters: u64) -> f64 {
    let t = rt.attach().unwrap();
    let c0 = cpu_ns();
    for _ in 0..iters {
        let mut o = Box::new(Slot(P::Header::default()));
        for _ in 0..k {
            drop(t.enter(black_box(&o.0)).unwrap());
        }
        rt.reclaim(&mut o.0);
    }
    (cpu_ns() - c0) / iters as f64
}

fn rules(reps: usize) {
    let fable = |rule| {
        let rt = Runtime::<Fable>::with_defaults();
        rt.state().set_learn_rule(rule);
        rt
    };
    let learned = |rt: &Runtime<Fable>| Fable::transitions(rt, Transition::LearnToBiased);
    println!(
        "Cloud, {LOCKERS} threads x {EACH} acquisitions per repetition, {OBJECTS} objects; \
         per repetition: wall ns, CPU ns per acquisition, revocations, objects biased"
    );
    for round in 0..2 {
        println!("round {}", round + 1);
        cloud_row("thin", &Runtime::<Thin>::with_defaults(), reps, |_| 0);
        cloud_row(
            "biased",
            &Runtime::<Biased>::with_defaults(),
            reps,
            |rt: &Runtime<Biased>| Biased::transitions(rt, Transition::ClearToBiased),
        );
        cloud_row(
            "fable per-object",
            &fable(LearnRule::PerObject),
            reps,
            learned,
        );
        cloud_row(
            "fable per-thread 3.1",
            &fable(LearnRule::PerThread),
            reps,
            learned,
        );
    }
    println!("AllocLock: thread CPU ns per object (allocate, lock k times, reclaim), median of 5");
    println!("{:<22} {}", "k", "1 2 3 4 5 6 7 8".replace(' ', "        "));
    let ks = 1..=8u64;
    let iters = 1_000_000 / 4;
    let mut v: [Vec<Vec<f64>>; 3] = Default::default();
    for _ in 0..5 {
        let thin = Runtime::<Thin>::with_defaults();
        let per_object = fable(LearnRule::PerObject);
        let per_thread = fable(LearnRule::PerThread);
        v[0].push(ks.clone().map(|k| alloc_lock(&thin, k, iters)).collect());
        v[1].push(
            ks.clone()
                .map(|k| alloc_lock(&per_object, k, iters))
                .collect(),
        );
        v[2].push(
            ks.clone()
                .map(|k| alloc_lock(&per_thread, k, iters))
                .collect(),
        );
    }
    let median = |rounds: &Vec<Vec<f64>>, i: usize| {
        let mut x: Vec<f64> = rounds.iter().map(|r| r[i]).collect();
        x.sort_by(f64::total_cmp);
        x[x.len() / 2]
    };
    for (name, rounds) in ["thin", "fable per-object", "fable per-thread 3.1"]
        .iter()
        .zip(&v)
    {
        let cells: Vec<String> = (0..8)
            .map(|i| {
                let m = median(rounds, i);
                format!("{m:5.1} ({:.2}x)", m / median(&v[0], i))
            })
            .collect();
        println!("{name:<22} {}", cells.join(" "));
    }
}

fn main() {
    let reps = std::env::var("REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("rules") {
        rules(reps);
        return;
    }
    if args.get(1).map(String::as_str) == Some("alloc") {
        let (row, k) = args[2].split_once(':').expect("ROW:K");
        let (k, n) = (k.parse().expect("K"), args[3].parse().expect("N"));
        let fable = |rule| {
            let rt = Runtime::<Fable>::with_defaults();
            rt.state().set_learn_rule(rule);
            rt
        };
        match row {
            "thin" => alloc_lock(&Runtime::<Thin>::with_defaults(), k, n),
            "fable" => alloc_lock(&fable(LearnRule::PerObject), k, n),
            "fable-3.1" => alloc_lock(&fable(LearnRule::PerThread), k, n),
            _ => panic!("ROW: thin, fable or fable-3.1"),
        };
        return;
    }
    let w64: Vec<Slot<AtomicU64>> = (0..OBJECTS).map(|_| Slot(AtomicU64::new(THIN))).collect();
    if std::env::var("REAL").is_ok() {
        let thin = thin_cloud::<Thin>();
        let fable = thin_cloud::<Fable>();
        for _ in 0..3 {
            real("real thin", reps, &thin);
            real("real fable", reps, &fable);
            raw_thin64(reps, &w64);
        }
        return;
    }
    let w32: Vec<Slot<AtomicU32>> = (0..OBJECTS).map(|_| Slot(AtomicU32::new(0))).collect();
    // Bias bits of a thread that biased something: they match no thin word.
    let me = Me {
        bias: AtomicU64::new((5 << 19) | (1 << 34)),
        owner: 5 << 19,
    };
    assert_eq!(me.bias.load(Ordering::Relaxed) & !(OWNER | GEN), 0);
    let me = black_box(&me);
    for _ in 0..2 {
        run("raw thin, 32-bit word (thin's own)", reps, |r| {
            let mut n = 0;
            let id = (me.owner >> 3) as u32;
            for _ in 0..N {
                let h = &w32[pick(r, w32.len())].0;
                let old = h.load(Ordering::Relaxed) & 0xff;
                if h.compare_exchange(old, old | id, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    n += 1;
                }
                let w = h.load(Ordering::Relaxed);
                if w & !0xff == id {
                    h.store(w & 0xff, Ordering::Release);
                }
            }
            n
        });
        raw_thin64(reps, &w64);
        run("raw thin, 64-bit word, + 16 nops", reps, |r| {
            let mut n = 0;
            for _ in 0..N {
                let h = &w64[pick(r, w64.len())].0;
                // SAFETY: `nop`s: no memory, no registers, no flags.
                unsafe {
                    std::arch::asm!(
                        "nop; nop; nop; nop; nop; nop; nop; nop",
                        "nop; nop; nop; nop; nop; nop; nop; nop",
                        options(nostack, nomem, preserves_flags)
                    )
                };
                let w = h.load(Ordering::Relaxed);
                let exp = (w & (HOST | OWNER)) | THIN;
                if h.compare_exchange(exp, exp | ONE, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    n += 1;
                }
                let w = h.load(Ordering::Relaxed);
                if w & RC == ONE {
                    h.store(w - ONE, Ordering::Release);
                }
            }
            n
        });
        raw_fable(reps, &w64, me, true);
        raw_fable(reps, &w64, me, false);
    }
}
