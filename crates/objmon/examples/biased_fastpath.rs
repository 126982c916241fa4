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
//! twice; `allocK`: K times, so `alloc3 − alloc2` is one learn-mode lock + unlock) or
//! `thin-nested` (the thin word held once around the loop).
//! Valgrind refuses the `rseq` system call, so for the rseq flavors (`biased`,
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
//! **Nested time**: `biased_fastpath time-nested N` times the nested lock + unlock of a thin
//! word (every non-seed flavor) and of a learn word (a fresh FABLE object held once) the
//! thread holds, beside the same pair, 7 interleaved rounds.
//!
//! **Probe**: `biased_fastpath probe N` (x86-64 Linux) times hand-written assembly replicas
//! of the owner's loops — the pair (storing the loaded word ± 256, and storing constants as
//! `objmon-bench`'s `sol-plain-pair` does), the signal step with and without a handle's
//! known word, a HotSpot-like owner, the rseq step with and without its arming stores, the
//! records step with and without the Dekker's re-loads and with a fixed slot — in thread CPU
//! time, each loop placed at four offsets of a 64-byte line, to tell which part of a step
//! costs what apart from where the loop lands (the engine's module documentation quotes
//! them).
//!
//! Protocols: `pair` (the bare load / compare / store pair, any `BENCH`), `biased`, `biased-seed`, `biased-rseq`, `fable`, `fable-seed`,
//! `fable-rseq`, `biased-signal`, `fable-signal` (no suffix: the count in HotSpot-style lock records; `-seed`: seed 002
//! Figures 3–4 / 6–7 as written, the owner's store bracketed by the `in_op` Dekker; `-rseq`:
//! the header's count stored in a restartable sequence; `-signal`: the same step in a
//! section nothing arms, restarted by a revoker's signal).

use objmon::protocol::biased::{
    BiasConfig, BiasWord, Biasing, Flavor, Kko, KkoRseq, KkoSeed, KkoSignal,
};
use objmon::protocol::fable::{
    FableHeuristics, FableRseqHeuristics, FableSeedHeuristics, FableSignalHeuristics,
};
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
    // SAFETY: this program installs no signal handler of its own (std's fault handlers run
    // only on a fault, which no owner section makes): the -signal flavors' contract
    // (`Runtime::new_unchecked`) holds; the other protocols have none.
    let rt = unsafe { Runtime::<Biasing<F>>::new_unchecked(Default::default()) };
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
    if bench == "thin" || bench == "thin-nested" {
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
    if let Some(k) = bench.strip_prefix("alloc") {
        // `allocK`: k locks per object (default 2).
        let k = k.parse().unwrap_or(2);
        for _ in 0..n {
            let o = black_box(BiasWord::default());
            user_loop(&me, &o, k);
            black_box(&o);
        }
        return;
    }
    let nested = bench == "nested" || bench == "thin-nested";
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

/// Makes `h` a thin word (biased to a thread that has gone, then revoked by our first
/// acquisition: `count`'s `thin` set-up).
fn make_thin<F: Flavor>(rt: &std::sync::Arc<Runtime<Biasing<F>>>, h: &BiasWord) {
    std::thread::scope(|s| {
        s.spawn(|| {
            let other = rt.attach().unwrap();
            user_loop(&other, h, 8);
        });
    });
}

/// One timed run of a nested hold of a thin word (`thin`) or a learn one (a fresh FABLE
/// object held once: recursion does not count towards biasing, seed 002 §3.1), the hold
/// taken outside the loop: ns per lock + unlock. `None` where the word is not in that mode
/// (KKO has no learn mode).
fn time_nested_one<F: Flavor>(thin: bool, n: u64) -> Option<f64> {
    use objmon::protocol::biased::BiasMode;
    let rt = runtime::<F>();
    let h = Box::new(BiasWord::default());
    let me = rt.attach().unwrap();
    if thin {
        make_thin(&rt, &h);
        user_loop(&me, &h, 16);
    }
    hold(&me, &h, true);
    let mode = h.mode();
    let want = if thin {
        BiasMode::Thin
    } else {
        BiasMode::Learn
    };
    let ns = (mode == want).then(|| {
        let t = Instant::now();
        user_loop(&me, &h, n);
        t.elapsed().as_nanos() as f64 / n as f64
    });
    hold(&me, &h, false);
    ns
}

/// `time-nested N`: the nested lock + unlock of a thin and of a learn word the thread holds,
/// every non-seed flavor, beside the pair, 7 interleaved rounds of `N` iterations; median
/// and minimum ns per lock + unlock and their ratios to the pair's.
fn time_nested(n: u64) {
    type Row = (&'static str, fn(u64) -> Option<f64>);
    let rows: Vec<Row> = vec![
        ("pair (load/compare/store x2)", |n| Some(time_pair(n))),
        ("biased thin nested", |n| time_nested_one::<Kko>(true, n)),
        ("biased-rseq thin nested", |n| {
            time_nested_one::<KkoRseq>(true, n)
        }),
        ("biased-signal thin nested", |n| {
            time_nested_one::<KkoSignal>(true, n)
        }),
        ("fable thin nested", |n| {
            time_nested_one::<FableHeuristics>(true, n)
        }),
        ("fable learn nested", |n| {
            time_nested_one::<FableHeuristics>(false, n)
        }),
        ("fable-rseq thin nested", |n| {
            time_nested_one::<FableRseqHeuristics>(true, n)
        }),
        ("fable-rseq learn nested", |n| {
            time_nested_one::<FableRseqHeuristics>(false, n)
        }),
        ("fable-signal thin nested", |n| {
            time_nested_one::<FableSignalHeuristics>(true, n)
        }),
        ("fable-signal learn nested", |n| {
            time_nested_one::<FableSignalHeuristics>(false, n)
        }),
    ];
    let mut t = vec![Vec::new(); rows.len()];
    for _ in 0..7 {
        for (i, (_, f)) in rows.iter().enumerate() {
            if let Some(ns) = f(n) {
                t[i].push(ns);
            }
        }
    }
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let (pair, pair_min) = (median(t[0].clone()), min(&t[0]));
    println!("7 interleaved rounds of {n} nested lock+unlock: median ns, ratio to the pair's; min");
    for ((name, _), v) in rows.iter().zip(t) {
        if v.is_empty() {
            println!("{name:<30} (not in that mode here)");
            continue;
        }
        let (m, lo) = (median(v.clone()), min(&v));
        println!(
            "{name:<30} {m:6.2} ns {:5.2}x   min {lo:6.2} ns {:5.2}x",
            m / pair,
            lo / pair_min
        );
    }
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
        ("biased-signal", |n| time_one::<KkoSignal>(false, n)),
        ("biased-signal nested", |n| time_one::<KkoSignal>(true, n)),
        ("fable-signal", |n| {
            time_one::<FableSignalHeuristics>(false, n)
        }),
        ("fable-signal nested", |n| {
            time_one::<FableSignalHeuristics>(true, n)
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

/// `probe N`: hand-written assembly replicas of the bias owner's loops (x86-64), to find what
/// an owner step costs beyond the plain pair: each runs `N` iterations of one lock + unlock
/// on a scratch line laid out like the thread's records line (header at +0x200, bias bits
/// at +0x88, top at +0x90, slots from +0xc0, the `rseq_cs` field at +0x78 pointing into the
/// line), 15 interleaved rounds, the best round in thread CPU time. Linux. Nothing here
/// touches objmon: it measures the shapes, not the library.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod probe {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, t: *mut Timespec) -> i32;
    }

    /// This thread's CPU time in ns (`CLOCK_THREAD_CPUTIME_ID`): a round preempted by
    /// other work on the machine does not count the time it waited.
    fn cpu_ns() -> f64 {
        let mut t = Timespec { sec: 0, nsec: 0 };
        // SAFETY: `clock_gettime` (libc, linked by std on Linux) writes one `timespec` (two
        // 64-bit fields on x86-64 Linux) to the pointer, which is a live local.
        unsafe { clock_gettime(3, &mut t) };
        t.sec as f64 * 1e9 + t.nsec as f64
    }

    #[repr(C, align(64))]
    pub struct Line(pub [u64; 256]);

    macro_rules! variant {
        ($name:ident, $body:expr) => {
            /// The loop at each of four placements: its first instruction at offset 0, 16,
            /// 32 and 48 of a 64-byte line (the same bytes; the front end's view differs).
            mod $name {
                use std::arch::asm;
                macro_rules! placed {
                    ($at:ident, $skip:literal) => {
                        #[inline(never)]
                        pub fn $at(p: *mut u64, n: u64) {
                            // SAFETY: `p` is a live, exclusively borrowed `Line` (2 KiB,
                            // 64-aligned); the body reads and writes only offsets below 0x800
                            // from it (the slots it indexes stay below 0x1c0: the top returns
                            // to 0 each iteration), and below `rsp` inside the red zone's 128
                            // bytes, which an `asm!` without `nostack` may use. The padding
                            // before the loop is `nop`s, run once.
                            unsafe {
                                asm!(".p2align 6", concat!(".skip ", $skip, ", 0x90"), "2:",
                                    $body, "dec {n}", "jnz 2b", "/* {q} {y} {x} {k} {k1} */",
                                    n = inout(reg) n => _, p = in(reg) p, q = in(reg) p,
                                    x = out(reg) _, y = out(reg) _,
                                    k = in(reg) super::BIAS, k1 = in(reg) super::BIAS + 0x100);
                            }
                        }
                    };
                }
                placed!(at0, "0");
                placed!(at16, "16");
                placed!(at32, "32");
                placed!(at48, "48");
                pub const ALL: [fn(*mut u64, u64); 4] = [at0, at16, at32, at48];
            }
        };
    }
    variant!(
        pair,
        "mov {x}, [{p}]\n add {x}, 256\n mov [{p}], {x}\n mov {x}, [{p}]\n sub {x}, 256\n mov [{p}], {x}"
    );
    variant!(
        pair_bb,
        "mov [rsp-0x20], {p}\n mov {q}, [rsp-0x20]\n mov {x}, [{q}+0x200]\n add {x}, 256\n mov [{q}+0x200], {x}\n mov {x}, [{q}+0x200]\n sub {x}, 256\n mov [{q}+0x200], {x}"
    );
    variant!(
        pair_const,
        "mov {x}, [{p}+0x200]\n cmp {x}, {k}\n jne 9f\n mov [{p}+0x200], {k1}\n mov {x}, [{p}+0x200]\n cmp {x}, {k1}\n jne 9f\n mov [{p}+0x200], {k}\n 9:"
    );
    variant!(
        known_word,
        "mov {x}, [{p}+0x200]\n cmp {x}, [{p}+0x88]\n jne 9f\n mov [{p}+0x200], {k1}\n mov {x}, [{p}+0x200]\n lea {y}, [{x}-0x100]\n cmp {y}, [{p}+0x88]\n jne 9f\n mov [{p}+0x200], {k}\n 9:"
    );
    variant!(
        signal_section,
        "mov {x}, [{p}+0x200]\n mov {y}, {x}\n sub {y}, [{p}+0x88]\n cmp {y}, 0xfeff\n ja 9f\n add {x}, 256\n mov [{p}+0x200], {x}\n mov {x}, [{p}+0x200]\n lea {y}, [{x}-0x100]\n sub {y}, [{p}+0x88]\n cmp {y}, 0xfeff\n ja 9f\n sub {x}, 256\n mov [{p}+0x200], {x}\n 9:"
    );
    variant!(
        signal,
        "mov [rsp-0x20], {p}\n mov {q}, [rsp-0x20]\n mov {x}, [{q}+0x200]\n test {x:e}, 0x10000\n jne 9f\n mov {y}, {x}\n sub {y}, [{q}+0x88]\n cmp {y}, 0xfeff\n ja 9f\n add {x}, 256\n mov [{q}+0x200], {x}\n mov {x}, [{q}+0x200]\n test {x:e}, 0x10000\n jne 9f\n lea {y}, [{x}-0x100]\n sub {y}, [{q}+0x88]\n cmp {y}, 0xfeff\n ja 9f\n sub {x}, 256\n mov [{q}+0x200], {x}\n 9:"
    );
    variant!(
        hotspot,
        "mov [rsp-0x20], {p}\n mov {q}, [rsp-0x20]\n mov {x}, [{q}+0x200]\n test {x:e}, 0x10000\n jne 9f\n cmp {x}, [{q}+0x88]\n jne 9f\n lea {y}, [{q}+0x200]\n mov [rsp-0x30], {y}\n mov {x}, [{q}+0x200]\n test {x:e}, 0x10000\n jne 9f\n cmp {x}, [{q}+0x88]\n jne 9f\n 9:"
    );
    variant!(
        rseq_no_arm,
        "mov [rsp-0x20], {p}\n mov {q}, [rsp-0x20]\n mov {x}, [{q}+0x200]\n test {x:e}, 0x10000\n jne 9f\n mov {x}, [{q}+0x200]\n sub {x}, [{q}+0x88]\n cmp {x}, 0xfeff\n ja 9f\n add qword ptr [{q}+0x200], 256\n mov {x}, [{q}+0x200]\n test {x:e}, 0x10000\n jne 9f\n mov {x}, [{q}+0x200]\n lea {x}, [{x}-0x100]\n sub {x}, [{q}+0x88]\n cmp {x}, 0xfeff\n ja 9f\n sub qword ptr [{q}+0x200], 256\n 9:"
    );
    variant!(
        rseq,
        "mov [rsp-0x20], {p}\n mov {q}, [rsp-0x20]\n mov {x}, [{q}+0x200]\n test {x:e}, 0x10000\n jne 9f\n mov {x}, [{q}+0x78]\n lea {y}, [{q}+0x340]\n mov [{x}], {y}\n mov {x}, [{q}+0x200]\n sub {x}, [{q}+0x88]\n cmp {x}, 0xfeff\n ja 9f\n add qword ptr [{q}+0x200], 256\n mov {x}, [{q}+0x200]\n test {x:e}, 0x10000\n jne 9f\n mov {x}, [{q}+0x78]\n lea {y}, [{q}+0x380]\n mov [{x}], {y}\n mov {x}, [{q}+0x200]\n lea {x}, [{x}-0x100]\n sub {x}, [{q}+0x88]\n cmp {x}, 0xfeff\n ja 9f\n sub qword ptr [{q}+0x200], 256\n 9:"
    );
    variant!(
        records,
        "mov [rsp-0x20], {p}\n mov {q}, [rsp-0x20]\n mov {x}, [{q}+0x200]\n test {x:e}, 0x10000\n jne 9f\n cmp {x}, [{q}+0x88]\n jne 9f\n mov {y}, [{q}+0x90]\n cmp {y}, 0x1f\n ja 9f\n lea {x}, [{q}+0x200]\n mov [{q}+{y}*8+0xc0], {x}\n mov {x}, [{q}+0x200]\n cmp {x}, [{q}+0x88]\n jne 9f\n inc {y}\n mov [{q}+0x90], {y}\n mov {x}, [{q}+0x200]\n test {x:e}, 0x10000\n jne 9f\n cmp {x}, [{q}+0x88]\n jne 9f\n mov {y}, [{q}+0x90]\n test {y}, {y}\n je 9f\n cmp {y}, 0x20\n ja 9f\n mov {x}, [{q}+{y}*8+0xb8]\n or {x}, 1\n mov [{q}+{y}*8+0xb8], {x}\n mov {x}, [{q}+0x200]\n cmp {x}, [{q}+0x88]\n jne 9f\n dec {y}\n mov [{q}+0x90], {y}\n 9:"
    );
    variant!(
        records_no_reload,
        "mov [rsp-0x20], {p}\n mov {q}, [rsp-0x20]\n mov {x}, [{q}+0x200]\n test {x:e}, 0x10000\n jne 9f\n cmp {x}, [{q}+0x88]\n jne 9f\n mov {y}, [{q}+0x90]\n cmp {y}, 0x1f\n ja 9f\n lea {x}, [{q}+0x200]\n mov [{q}+{y}*8+0xc0], {x}\n inc {y}\n mov [{q}+0x90], {y}\n mov {x}, [{q}+0x200]\n test {x:e}, 0x10000\n jne 9f\n cmp {x}, [{q}+0x88]\n jne 9f\n mov {y}, [{q}+0x90]\n test {y}, {y}\n je 9f\n cmp {y}, 0x20\n ja 9f\n mov {x}, [{q}+{y}*8+0xb8]\n or {x}, 1\n mov [{q}+{y}*8+0xb8], {x}\n dec {y}\n mov [{q}+0x90], {y}\n 9:"
    );
    variant!(
        records_fixed_slot,
        "mov [rsp-0x20], {p}\n mov {q}, [rsp-0x20]\n mov {x}, [{q}+0x200]\n test {x:e}, 0x10000\n jne 9f\n cmp {x}, [{q}+0x88]\n jne 9f\n mov {y}, [{q}+0x90]\n test {y}, {y}\n jne 9f\n lea {x}, [{q}+0x200]\n mov [{q}+0xc0], {x}\n mov {x}, [{q}+0x200]\n cmp {x}, [{q}+0x88]\n jne 9f\n mov qword ptr [{q}+0x90], 1\n mov {x}, [{q}+0x200]\n test {x:e}, 0x10000\n jne 9f\n cmp {x}, [{q}+0x88]\n jne 9f\n mov {y}, [{q}+0x90]\n cmp {y}, 1\n jne 9f\n mov {x}, [{q}+0xc0]\n lea {y}, [{q}+0x200]\n cmp {x}, {y}\n jne 9f\n or {x}, 1\n mov [{q}+0xc0], {x}\n mov {x}, [{q}+0x200]\n cmp {x}, [{q}+0x88]\n jne 9f\n mov qword ptr [{q}+0x90], 0\n 9:"
    );

    /// (row name, what it replicates, the loop)
    type Variant = (&'static str, &'static str, [fn(*mut u64, u64); 4]);

    const VARIANTS: [Variant; 12] = [
        ("pair", "the bare pair: load, add, store; load, subtract, store (the header count, no Dekker)", pair::ALL),
        ("pair-const", "the pair storing constants from registers (objmon-bench's `sol-plain-pair`)", pair_const::ALL),
        ("signal-section", "`signal_step` as `enter` / `exit` run it: load, subtract the bias bits, range test, store ± 256", signal_section::ALL),
        ("known-word", "`signal_known_step` as a handle runs it: load, compare with the bias bits, store from a register", known_word::ALL),
        ("pair-bb", "the pair with the user loop's black_box'd header reference (store, load)", pair_bb::ALL),
        ("signal", "one section from the dispatch's load to the commit store, no arming (signal revocation)", signal::ALL),
        ("hotspot", "HotSpot-like: load, test, compare, one record store to a fixed slot; load, test, compare", hotspot::ALL),
        ("rseq-no-arm", "the rseq step's instructions without its two arming stores", rseq_no_arm::ALL),
        ("rseq", "the rseq step as `rseq_step` emits it (arm, load, subtract, compare, add to memory)", rseq::ALL),
        ("records", "the records step as `record_step` compiles (push / pop with the Dekker's re-loads)", records::ALL),
        ("records-no-reload", "the records step without the Dekker's header re-loads", records_no_reload::ALL),
        ("records-fixed-slot", "the records step with the record at a fixed slot (no top-indexed address)", records_fixed_slot::ALL),
    ];

    /// The bias bits of "us" in the scratch line.
    const BIAS: u64 = 0x1234_0000;

    pub fn run(n: u64) {
        let mut l = Box::new(Line([0; 256]));
        let base = l.0.as_ptr() as u64;
        l.0[0x78 / 8] = base + 0x7f0; // the `rseq_cs` field: a scratch word of the line
        l.0[0x200 / 8] = BIAS; // the header, biased to "us", rc 0
        l.0[0x88 / 8] = BIAS; // our bias bits
        let p = l.0.as_mut_ptr();
        // best[variant][placement]
        let mut best = [[f64::MAX; 4]; VARIANTS.len()];
        for _ in 0..15 {
            for (i, (_, _, fs)) in VARIANTS.iter().enumerate() {
                for (j, f) in fs.iter().enumerate() {
                    let t = cpu_ns();
                    f(p, n);
                    best[i][j] = best[i][j].min((cpu_ns() - t) / n as f64);
                }
            }
        }
        println!(
            "best of 15 rounds of {n} lock+unlock, ns, the loop at offsets 0 / 16 / 32 / 48 of a \
             64-byte line; ratio of each to `pair-const` at the same offset"
        );
        let base = best[1];
        for (i, (name, what, _)) in VARIANTS.iter().enumerate() {
            let ns: Vec<String> = best[i].iter().map(|b| format!("{b:4.2}")).collect();
            let ratio: Vec<String> = (0..4)
                .map(|j| format!("{:4.2}", best[i][j] / base[j]))
                .collect();
            println!(
                "{name:20} {} ns  {}x  {what}",
                ns.join(" "),
                ratio.join(" ")
            );
        }
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let usage = "usage: biased_fastpath PROTOCOL plain|nested|raw|thin|thin-nested|alloc N | time N | time-nested N | probe N";
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    if a.get(1).map(String::as_str) == Some("probe") {
        let n = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(10_000_000);
        return probe::run(n);
    }
    if a.get(1).map(String::as_str) == Some("time-nested") {
        let n = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(20_000_000);
        return time_nested(n);
    }
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
        "biased-signal" => count::<KkoSignal>(bench, n),
        "fable-signal" => count::<FableSignalHeuristics>(bench, n),
        p => panic!("unknown protocol {p}"),
    }
}
