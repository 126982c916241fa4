//! Instruction counts of the biased protocols' fast paths, for `valgrind --tool=callgrind`
//! (repeatable on a noisy machine, unlike a timer): `N` lock + unlock pairs of one object by
//! its bias owner (`sync`), the same with the object already held once (`nested`), of a
//! thin object (`thin`, the CAS path: the object was revoked once), and §5.3's AllocLock
//! with k = 2 (`alloc`: a fresh object locked twice, the clear → learn / biased path).
//!
//! ```text
//! cargo build --release -p objmon --example biased_fastpath
//! for n in 100000 200000; do valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!   target/release/examples/biased_fastpath biased sync $n 2>&1 | grep refs; done
//! ```
//!
//! (The difference of the two totals over 100,000 is the count per lock + unlock pair.)

use objmon::protocol::biased::{BiasWord, Biasing, Flavor, Kko, KkoSeed};
use objmon::protocol::fable::FableHeuristics;
use objmon::vm::{Protocol, Runtime};
use std::hint::black_box;

fn run<F: Flavor>(bench: &str, n: u64) {
    let rt = Runtime::<Biasing<F>>::with_defaults();
    let h = Box::new(BiasWord::default());
    if bench == "thin" {
        // Biased to a thread that has gone: the next enter revokes it to thin for good.
        std::thread::scope(|s| {
            s.spawn(|| {
                let me = rt.attach().unwrap();
                for _ in 0..8 {
                    drop(me.enter(&h).unwrap());
                }
            });
        });
    }
    let me = rt.attach().unwrap();
    let cx = me.context();
    // Warm up (FABLE learns, then biases; a thin object is revoked once).
    for _ in 0..16 {
        drop(me.enter(&h).unwrap());
    }
    if bench == "alloc" {
        for _ in 0..n {
            let o = black_box(BiasWord::default());
            for _ in 0..2 {
                // SAFETY: as below.
                unsafe {
                    Biasing::<F>::enter(&rt, cx, &o).unwrap();
                    Biasing::<F>::exit(&rt, cx, &o).unwrap();
                }
            }
            black_box(&o);
        }
        return;
    }
    let outer = (bench == "nested").then(|| me.enter(&h).unwrap());
    let h: &BiasWord = black_box(&h);
    for _ in 0..n {
        // SAFETY: `cx` is this thread's own context (from its handle), outside `in_native`;
        // `h` outlives the loop.
        unsafe {
            Biasing::<F>::enter(&rt, cx, h).unwrap();
            Biasing::<F>::exit(&rt, cx, h).unwrap();
        }
    }
    drop(outer);
    println!("{} {bench} {n}: {:?}", F::NAME, h.mode());
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let n = a.get(3).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let bench = a.get(2).map_or("sync", String::as_str);
    match a.get(1).map_or("biased", String::as_str) {
        "biased" => run::<Kko>(bench, n),
        "biased-seed" => run::<KkoSeed>(bench, n),
        "fable" => run::<FableHeuristics>(bench, n),
        p => panic!("unknown protocol {p}"),
    }
}
