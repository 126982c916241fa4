//! The biased protocols' fast paths as a user meets them: `drop(me.enter(&h).unwrap())` in
//! a plain loop of the user's own (`user_loop.rs`'s method), by the thread the object is
//! biased to.
//!
//! **Instruction counts** (`valgrind --tool=callgrind`, repeatable on a noisy machine):
//! `biased_fastpath PROTOCOL BENCH N` runs `N` lock + unlock pairs through the public API;
//! `BENCH` is `plain` (the object biased to us, not held), `nested` (the same, held once
//! around the loop), `raw` (plain, but calling the protocol's `unsafe` entry points
//! directly: `plain − raw` is what the handle and guard add), `thin` (the CAS path: the
//! object was revoked once) or `alloc` (§5.3's AllocLock with k = 2: a fresh object locked
//! twice). Valgrind refuses the `rseq` system call, so for the rseq flavors (`biased`,
//! `fable`) the thread runs its owner step in a section the kernel does not know
//! (`Biasing::count_without_rseq`: sound here, one thread, no revocation) — the same
//! instructions.
//!
//! ```text
//! cargo build --release -p objmon --example biased_fastpath
//! for n in 100000 200000; do valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!   target/release/examples/biased_fastpath biased plain $n 2>&1 | grep refs; done
//! ```
//!
//! (The difference of the two totals over 100,000 is the count per lock + unlock pair.)
//!
//! **Time**: `biased_fastpath time N` runs every protocol below, plain and nested, beside
//! a bare load / compare / store pair on an `AtomicU64` (the bias owner's limit, written the
//! same way: `black_box`'d header, one loop), 7 interleaved rounds of `N` iterations in one
//! process, and prints the median ns per lock + unlock and its ratio to the pair (and the
//! minimum, steadier where other work shares the cores).
//!
//! Protocols: `pair` (the bare load / compare / store pair, any `BENCH`), `biased`, `biased-seed`, `biased-rseq`, `fable`, `fable-seed`,
//! `fable-rseq` (no suffix: the count in HotSpot-style lock records; `-seed`: seed 002
//! Figures 3–4 / 6–7 as written, the owner's store bracketed by the `in_op` Dekker; `-rseq`:
//! the header's count stored in a restartable sequence).

use objmon::protocol::biased::{BiasConfig, BiasWord, Biasing, Flavor, Kko, KkoRseq, KkoSeed};
use objmon::protocol::fable::{FableHeuristics, FableRseqHeuristics, FableSeedHeuristics};
use objmon::vm::{Protocol, Revocation, Runtime, ThreadHandle};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The user's loop, out of line (as in `user_loop.rs`).
#[inline(never)]
fn user_loop<F: Flavor>(me: &ThreadHandle<'_, Biasing<F>>, h: &BiasWord, n: u64) {
    for _ in 0..n {
        drop(me.enter(black_box(h)).unwrap());
    }
}

/// The same through the protocol's `unsafe` entry points (no handle, no guard).
#[inline(never)]
fn raw_loop<F: Flavor>(me: &ThreadHandle<'_, Biasing<F>>, h: &BiasWord, n: u64) {
    let (rt, cx) = (me.runtime(), me.context());
    for _ in 0..n {
        let h = black_box(h);
        // SAFETY: `cx` is this thread's own context (from its handle), outside `in_native`;
        // `h` outlives the loop.
        unsafe {
            Biasing::<F>::enter(rt, cx, h).unwrap();
            Biasing::<F>::exit(rt, cx, h).unwrap();
        }
    }
}

/// Takes (`true`) or releases the outer hold of a nested run, through the `unsafe` entry
/// points so that the user's loop is the only place where this program drops a guard (a
/// second one changes what the compiler inlines into the loop).
fn hold<F: Flavor>(me: &ThreadHandle<'_, Biasing<F>>, h: &BiasWord, take: bool) {
    // SAFETY: our own context, outside `in_native`; `h` outlives the hold, which the same
    // thread releases.
    unsafe {
        if take {
            Biasing::<F>::enter(me.runtime(), me.context(), h).unwrap();
        } else {
            Biasing::<F>::exit(me.runtime(), me.context(), h).unwrap();
        }
    }
}

/// The bias owner's limit: a load, a compare and a store to lock, the same to unlock.
#[inline(never)]
fn pair_loop(a: &AtomicU64, n: u64) {
    for _ in 0..n {
        let a = black_box(a);
        let w = a.load(Ordering::Relaxed);
        if w & 0xff00 != 0 {
            held();
        }
        a.store(w + 256, Ordering::Relaxed);
        let w = a.load(Ordering::Relaxed);
        if w & 0xff00 != 256 {
            held();
        }
        a.store(w - 256, Ordering::Relaxed);
    }
}

#[cold]
#[inline(never)]
fn held() {
    panic!("the pair's word changed under it");
}

/// A runtime for `F`: the default (barrier) revocation, or, where the kernel refuses it
/// (valgrind refuses rseq), the synchronous handshake: this thread alone locks the object.
fn runtime<F: Flavor>() -> std::sync::Arc<Runtime<Biasing<F>>> {
    let rt = Runtime::<Biasing<F>>::with_defaults();
    if rt.state().revocation() == Revocation::NoBias {
        Biasing::<F>::configure(
            &rt,
            BiasConfig {
                revocation: Revocation::SyncHandshake,
                ..BiasConfig::default()
            },
        );
    }
    rt
}

fn count<F: Flavor>(bench: &str, n: u64) {
    let rt = runtime::<F>();
    let h = Box::new(BiasWord::default());
    if bench == "thin" {
        // BiasedRseq to a thread that has gone: the next enter revokes it to thin for good.
        std::thread::scope(|s| {
            s.spawn(|| {
                let me = rt.attach().unwrap();
                // SAFETY: this thread's own context; nobody revokes by the barrier here
                // (the object's revoker finds this thread gone).
                unsafe { Biasing::<F>::count_without_rseq(me.context()) };
                user_loop(&me, &h, 8);
            });
        });
    }
    let me = rt.attach().unwrap();
    // SAFETY: our own context; one thread, no revocation of our biases.
    unsafe { Biasing::<F>::count_without_rseq(me.context()) };
    // Warm up (FABLE learns, then biases; a thin object is revoked once).
    user_loop(&me, &h, 16);
    if bench == "alloc" {
        for _ in 0..n {
            let o = black_box(BiasWord::default());
            user_loop(&me, &o, 2);
            black_box(&o);
        }
        return;
    }
    let nested = bench == "nested";
    if nested {
        hold(&me, &h, true);
    }
    if bench == "raw" {
        raw_loop(&me, &h, n);
    } else {
        user_loop(&me, &h, n);
    }
    if nested {
        hold(&me, &h, false);
    }
    println!("{} {bench} {n}: {:?}", F::NAME, h.mode());
}

/// One timed run: ns per lock + unlock of `F`'s bias owner (`nested`: the object held once
/// around the loop).
fn time_one<F: Flavor>(nested: bool, n: u64) -> f64 {
    let rt = runtime::<F>();
    let h = Box::new(BiasWord::default());
    let me = rt.attach().unwrap();
    user_loop(&me, &h, 16);
    assert_eq!(
        h.mode(),
        objmon::protocol::biased::BiasMode::Biased,
        "{}",
        F::NAME
    );
    if nested {
        hold(&me, &h, true);
    }
    let t = Instant::now();
    user_loop(&me, &h, n);
    let ns = t.elapsed().as_nanos() as f64 / n as f64;
    if nested {
        hold(&me, &h, false);
    }
    ns
}

fn time_pair(n: u64) -> f64 {
    let a = AtomicU64::new(0x8_0000);
    let t = Instant::now();
    pair_loop(&a, n);
    t.elapsed().as_nanos() as f64 / n as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn time(n: u64) {
    type Row = (&'static str, fn(u64) -> f64);
    let rows: Vec<Row> = vec![
        ("pair (load/compare/store x2)", time_pair),
        ("biased", |n| time_one::<Kko>(false, n)),
        ("biased nested", |n| time_one::<Kko>(true, n)),
        ("biased-seed", |n| time_one::<KkoSeed>(false, n)),
        ("biased-seed nested", |n| time_one::<KkoSeed>(true, n)),
        ("biased-rseq", |n| time_one::<KkoRseq>(false, n)),
        ("biased-rseq nested", |n| time_one::<KkoRseq>(true, n)),
        ("fable", |n| time_one::<FableHeuristics>(false, n)),
        ("fable nested", |n| time_one::<FableHeuristics>(true, n)),
        ("fable-seed", |n| time_one::<FableSeedHeuristics>(false, n)),
        ("fable-seed nested", |n| {
            time_one::<FableSeedHeuristics>(true, n)
        }),
        ("fable-rseq", |n| time_one::<FableRseqHeuristics>(false, n)),
        ("fable-rseq nested", |n| {
            time_one::<FableRseqHeuristics>(true, n)
        }),
    ];
    let mut t = vec![Vec::new(); rows.len()];
    for _ in 0..7 {
        for (i, (_, f)) in rows.iter().enumerate() {
            t[i].push(f(n));
        }
    }
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let (pair, pair_min) = (median(t[0].clone()), min(&t[0]));
    println!(
        "7 interleaved rounds of {n} lock+unlock: median ns, ratio to the pair's median; \
         min ns, ratio to the pair's min (the min is steadier on a shared machine)"
    );
    for ((name, _), v) in rows.iter().zip(t) {
        let (m, lo) = (median(v.clone()), min(&v));
        println!(
            "{name:<30} {m:6.2} ns {:5.2}x   min {lo:6.2} ns {:5.2}x",
            m / pair,
            lo / pair_min
        );
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let usage = "usage: biased_fastpath PROTOCOL plain|nested|raw|thin|alloc N | time N";
    if a.get(1).map(String::as_str) == Some("time") {
        let n = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(20_000_000);
        return time(n);
    }
    let n = a.get(3).and_then(|s| s.parse().ok()).expect(usage);
    let bench = a.get(2).map(String::as_str).expect(usage);
    match a.get(1).map(String::as_str).expect(usage) {
        "pair" => pair_loop(&AtomicU64::new(0x8_0000), n),
        "biased" => count::<Kko>(bench, n),
        "biased-seed" => count::<KkoSeed>(bench, n),
        "biased-rseq" => count::<KkoRseq>(bench, n),
        "fable" => count::<FableHeuristics>(bench, n),
        "fable-seed" => count::<FableSeedHeuristics>(bench, n),
        "fable-rseq" => count::<FableRseqHeuristics>(bench, n),
        p => panic!("unknown protocol {p}"),
    }
}
