//! The loop a Rust user writes with [`objmon::Monitor`], for counting instructions per
//! lock+unlock: `drop(m.lock())` in a plain loop (`plain`), and with the monitor already held
//! (`nested`), on the protocol's process-wide runtime (`global`) or a runtime of the program's
//! own (`own`: `Monitor::with_runtime`). Meant for `valgrind --tool=callgrind`, as
//! `user_loop.rs` (the embedder's `ThreadHandle` loop) is:
//!
//! ```sh
//! cargo build --release -p objmon --example monitor_loop
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/monitor_loop thin global plain 1000000  # then 2000000
//! ```
//!
//! The difference in instructions divided by the difference in iterations is the cost of one
//! lock+unlock: set-up cancels.

use objmon::vm::Runtime;
use objmon::{Monitor, MonitorProtocol, RuntimeRef};
use std::hint::black_box;

/// The user's loop, out of line so that what is inlined is decided for this loop alone.
#[inline(never)]
fn user_loop<P: objmon::Protocol, R: RuntimeRef<P>>(m: &Monitor<u64, P, R>, n: u64) {
    for _ in 0..n {
        drop(black_box(m).lock());
    }
}

fn run<P: MonitorProtocol>(own: bool, nested: bool, n: u64) {
    if own {
        let m = Monitor::with_runtime(&Runtime::<P>::with_defaults(), 0u64);
        let outer = nested.then(|| m.lock());
        user_loop(&m, n);
        drop(outer);
    } else {
        let m = Monitor::<u64, P>::with_protocol(0);
        let outer = nested.then(|| m.lock());
        user_loop(&m, n);
        drop(outer);
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: monitor_loop PROTOCOL global|own plain|nested N";
    let name = args.next().expect(usage);
    let own = args.next().expect(usage) == "own";
    let nested = args.next().expect(usage) == "nested";
    let n: u64 = args.next().expect(usage).parse().expect(usage);
    use objmon::*;
    match name.as_str() {
        "fat" => run::<Fat>(own, nested, n),
        "thin" => run::<Thin>(own, nested, n),
        "thin-seed" => run::<ThinSeed>(own, nested, n),
        "tasuki" => run::<Tasuki>(own, nested, n),
        "stack" => run::<Stack>(own, nested, n),
        "biased" => run::<Biased>(own, nested, n),
        "biased-seed" => run::<BiasedSeed>(own, nested, n),
        "fable" => run::<Fable>(own, nested, n),
        other => panic!("no protocol named {other}"),
    }
}
