//! The loop a user writes, for counting instructions per lock+unlock through the public API:
//! `drop(me.enter(&h).unwrap())` in a plain loop (`plain`), and the same with the object
//! already held (`nested`). Meant for `valgrind --tool=callgrind`, whose instruction counts
//! repeat exactly on a shared machine:
//!
//! ```sh
//! cargo build --release -p objmon --example user_loop
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/user_loop thin plain 1000000   # then 2000000: the difference / 1e6
//! ```
//!
//! Run twice with different iteration counts and divide the difference in instructions by
//! the difference in iterations: set-up cost cancels.

use objmon::vm::{Protocol, ProtocolVisitor, Runtime};
use std::hint::black_box;

struct Run {
    name: String,
    nested: bool,
    n: u64,
    found: bool,
}

impl ProtocolVisitor for Run {
    fn visit<P: Protocol>(&mut self) {
        if P::NAME != self.name {
            return;
        }
        self.found = true;
        let h = P::Header::default();
        let rt = Runtime::<P>::with_defaults();
        let me = rt.attach().unwrap();
        let outer = self.nested.then(|| me.enter(&h).unwrap());
        user_loop(&me, &h, self.n);
        drop(outer);
    }
}

/// The user's loop, out of line so that what the compiler inlines into it is decided for
/// this loop alone (as in a user's function), not for a function holding all protocols.
#[inline(never)]
fn user_loop<P: Protocol>(me: &objmon::vm::ThreadHandle<'_, P>, h: &P::Header, n: u64) {
    for _ in 0..n {
        drop(me.enter(black_box(h)).unwrap());
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: user_loop PROTOCOL plain|nested N";
    let name = args.next().expect(usage);
    let nested = args.next().expect(usage) == "nested";
    let n = args.next().expect(usage).parse().expect(usage);
    let mut run = Run {
        name,
        nested,
        n,
        found: false,
    };
    objmon::vm::visit_all(&mut run);
    assert!(run.found, "no protocol named {}", run.name);
}
