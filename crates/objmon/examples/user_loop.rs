//! The loop a user writes, through the public API: `drop(me.enter(&h).unwrap())` in a plain
//! loop (`plain`), and the same with the object already held (`nested`). `monitor` in place of
//! a protocol's name runs `drop(m.lock())` on an `objmon::Monitor<()>` (the default protocol,
//! the process-wide runtime): the Rust user's type; `raw-monitor` runs `drop(m.lock())` on a
//! `lock_api::Mutex<objmon::RawMonitor, ()>` (its `nested` run holds another one around the
//! loop: the lock is not reentrant).
//!
//! **Instructions** (`PROTOCOL plain|nested N`): meant for `valgrind --tool=callgrind`, whose
//! instruction counts repeat exactly on a shared machine:
//!
//! ```sh
//! cargo build --release -p objmon --example user_loop
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/user_loop thin plain 1000000   # then 2000000: the difference / 1e6
//! ```
//!
//! Run twice with different iteration counts and divide the difference in instructions by
//! the difference in iterations: set-up cost cancels.
//!
//! **Time** (`time [N] [PROTOCOL...]`, default `thin thin-seed`): nanoseconds of this
//! thread's CPU time per lock+unlock, the median of 7 rounds; in each round every row runs
//! `N` (default 2·10⁷) iterations, rows interleaved, all in this one process, beside bare
//! loops written the same way (`black_box` on the reference once, before the loop, as in
//! `objmon-bench`'s `user-loop` rows; nothing else per iteration — a `black_box` in the loop
//! stores and reloads the reference every iteration, and that delay alone hid 1.7 ns of
//! `thin`'s 2.3 ns over the CAS loop before its record moved before the CAS):
//!
//! - `bare cas+store`: a compare-and-swap to lock, a release store to unlock (the
//!   single-atomic limit);
//! - `bare cas+load/cmp/store`: the same, the unlock loading the word and comparing it with
//!   the owner id before the store (seed 000 §2.3.2's unlock after its §2.3.1 lock);
//! - `bare cas+tls/cmp/store`: the same, the unlock comparing a thread-local record of the
//!   word with the word's address instead (the owner knows its word, no load of it); the
//!   record is stored before the CAS, as `thin` does;
//! - `bare pair`: a load, a compare and a store to lock, the same to unlock (a bias owner's
//!   and a nested thin lock's limit).
//!
//! ```sh
//! cargo run --release -p objmon --example user_loop -- time
//! ```

use objmon::vm::{Protocol, ProtocolVisitor, Runtime};
use std::hint::black_box;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

struct Run {
    name: String,
    nested: bool,
    n: u64,
    found: bool,
    /// Seconds the loop took.
    secs: f64,
}

impl ProtocolVisitor for Run {
    fn visit<P: Protocol>(&mut self) {
        if P::NAME != self.name {
            return;
        }
        self.found = true;
        let h = P::Header::default();
        // SAFETY: this program installs no signal handler of its own (std's fault handlers run
        // only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rt = unsafe { Runtime::<P>::new_unchecked(Default::default()) };
        let me = rt.attach().unwrap();
        let outer = self.nested.then(|| me.enter(&h).unwrap());
        let t0 = thread_cpu_secs();
        user_loop(&me, &h, self.n);
        self.secs = thread_cpu_secs() - t0;
        drop(outer);
    }
}

/// The user's loop, out of line so that what the compiler inlines into it is decided for
/// this loop alone (as in a user's function), not for a function holding all protocols.
#[inline(never)]
fn user_loop<P: Protocol>(me: &objmon::vm::ThreadHandle<'_, P>, h: &P::Header, n: u64) {
    let h = black_box(h);
    for _ in 0..n {
        drop(me.enter(h).unwrap());
    }
}

/// `objmon::Monitor<()>` (the default protocol, the process-wide runtime): the Rust user's
/// type, run as the protocol rows are (row name `monitor`). Seconds of this thread's CPU
/// time.
fn run_monitor(nested: bool, n: u64) -> f64 {
    let m = objmon::Monitor::new(());
    let _outer = nested.then(|| m.lock());
    time_bare(|| monitor_loop(&m, n))
}

/// The user's loop over a `Monitor`, out of line as `user_loop` is.
#[inline(never)]
fn monitor_loop(m: &objmon::Monitor<()>, n: u64) {
    let m = black_box(m);
    for _ in 0..n {
        drop(m.lock());
    }
}

/// `lock_api::Mutex<objmon::RawMonitor, ()>` (row name `raw-monitor`): the `&mut T` lock of
/// the same protocol, through `lock_api`. Not reentrant: its nested run times the plain loop
/// with another `RawMonitor` held.
fn run_raw_monitor(nested: bool, n: u64) -> f64 {
    let m = lock_api::Mutex::<objmon::RawMonitor, ()>::new(());
    let other = lock_api::Mutex::<objmon::RawMonitor, ()>::new(());
    let _outer = nested.then(|| other.lock());
    time_bare(|| raw_monitor_loop(&m, n))
}

/// The user's loop over a `lock_api` mutex of a `RawMonitor`, out of line as `user_loop` is.
#[inline(never)]
fn raw_monitor_loop(m: &lock_api::Mutex<objmon::RawMonitor, ()>, n: u64) {
    let m = black_box(m);
    for _ in 0..n {
        drop(m.lock());
    }
}

/// One run of row `name` (a protocol, `monitor` or `raw-monitor`): seconds of this thread's
/// CPU time for `n` lock+unlock pairs.
fn run_row(name: &str, nested: bool, n: u64) -> f64 {
    match name {
        "monitor" => run_monitor(nested, n),
        "raw-monitor" => run_raw_monitor(nested, n),
        _ => {
            let mut run = Run {
                name: name.to_string(),
                nested,
                n,
                found: false,
                secs: 0.0,
            };
            objmon::vm::visit_all(&mut run);
            assert!(run.found, "no protocol named {name}");
            run.secs
        }
    }
}

/// A thread id pre-shifted into a thin word's owner field (seed 000 §2.3.1).
const ME: u32 = 1 << 16;
/// Seed 000 §2.3.3's nested check: `(word ^ me) < 255 << 8`.
const NEST_LIMIT: u32 = 255 << 8;

#[cold]
#[inline(never)]
fn lost() -> ! {
    panic!("the bare loop's word changed under it")
}

/// `bare cas+store`.
#[inline(never)]
fn bare_cas_store(w: &AtomicU32, n: u64) {
    let w = black_box(w);
    for _ in 0..n {
        if w.compare_exchange(0, ME, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            lost();
        }
        w.store(0, Ordering::Release);
    }
}

/// `bare cas+load/cmp/store`.
#[inline(never)]
fn bare_cas_load_store(w: &AtomicU32, n: u64) {
    let w = black_box(w);
    for _ in 0..n {
        if w.compare_exchange(0, ME, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            lost();
        }
        let v = w.load(Ordering::Relaxed);
        if v & !0xff != ME {
            lost();
        }
        w.store(v & 0xff, Ordering::Release);
    }
}

/// `bare cas+tls/cmp/store`: `last` is the owner's own record (address, host bits).
#[inline(never)]
fn bare_cas_tls_store(w: &AtomicU32, last: &AtomicUsize, host: &AtomicU32, n: u64) {
    let w = black_box(w);
    for _ in 0..n {
        let old = w.load(Ordering::Relaxed) & 0xff;
        last.store(w as *const AtomicU32 as usize, Ordering::Relaxed);
        host.store(old, Ordering::Relaxed);
        if w.compare_exchange(old, old | ME, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            lost();
        }
        if last.load(Ordering::Relaxed) != w as *const AtomicU32 as usize {
            lost();
        }
        w.store(host.load(Ordering::Relaxed), Ordering::Release);
        last.store(0, Ordering::Relaxed);
    }
}

/// `bare pair`.
#[inline(never)]
fn bare_pair(w: &AtomicU32, n: u64) {
    let w = black_box(w);
    for _ in 0..n {
        let v = w.load(Ordering::Relaxed);
        if (v ^ ME) >= NEST_LIMIT {
            lost();
        }
        w.store(v + 256, Ordering::Relaxed);
        let v = w.load(Ordering::Relaxed);
        if (v ^ ME).wrapping_sub(256) >= NEST_LIMIT {
            lost();
        }
        w.store(v - 256, Ordering::Release);
    }
}

fn time_bare(f: impl FnOnce()) -> f64 {
    let t0 = thread_cpu_secs();
    f();
    thread_cpu_secs() - t0
}

/// This thread's CPU time in seconds: the loops never block, so on an idle machine it is the
/// wall time, and on a shared one it leaves out the time other processes ran.
fn thread_cpu_secs() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID needs nothing else.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(r, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn time_all(n: u64, protocols: &[String]) {
    const ROUNDS: usize = 7;
    let mut rows: Vec<(String, Vec<f64>)> = Vec::new();
    let push = |rows: &mut Vec<(String, Vec<f64>)>, name: &str, secs: f64| {
        let ns = secs * 1e9 / n as f64;
        match rows.iter_mut().find(|(r, _)| r == name) {
            Some((_, v)) => v.push(ns),
            None => rows.push((name.to_string(), vec![ns])),
        }
    };
    for _ in 0..ROUNDS {
        let w = AtomicU32::new(0);
        let (last, host) = (AtomicUsize::new(0), AtomicU32::new(0));
        push(
            &mut rows,
            "bare cas+store",
            time_bare(|| bare_cas_store(&w, n)),
        );
        push(
            &mut rows,
            "bare cas+load/cmp/store",
            time_bare(|| bare_cas_load_store(&w, n)),
        );
        push(
            &mut rows,
            "bare cas+tls/cmp/store",
            time_bare(|| bare_cas_tls_store(&w, &last, &host, n)),
        );
        let p = AtomicU32::new(ME);
        push(&mut rows, "bare pair", time_bare(|| bare_pair(&p, n)));
        for name in protocols {
            for nested in [false, true] {
                let row = format!("{name}{}", if nested { " nested" } else { "" });
                push(&mut rows, &row, run_row(name, nested, n));
            }
        }
    }
    let med = |name: &str| median(rows.iter().find(|(r, _)| r == name).unwrap().1.clone());
    let (cas, pair) = (med("bare cas+store"), med("bare pair"));
    println!("ns per lock+unlock, median of {ROUNDS} interleaved rounds of {n}:");
    for (name, v) in &rows {
        let m = median(v.clone());
        println!(
            "{name:<26} {m:7.3}   {:5.2}x cas+store   {:5.2}x pair   (min {:.3}, max {:.3})",
            m / cas,
            m / pair,
            v.iter().copied().fold(f64::INFINITY, f64::min),
            v.iter().copied().fold(0.0, f64::max),
        );
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: user_loop PROTOCOL|monitor|raw-monitor plain|nested N \
                 | user_loop time [N] [PROTOCOL|monitor|raw-monitor...]";
    let name = args.next().expect(usage);
    if name == "time" {
        let n = args.next().map_or(20_000_000, |s| s.parse().expect(usage));
        let mut protocols: Vec<String> = args.collect();
        if protocols.is_empty() {
            protocols = objmon::protocol::names()
                .into_iter()
                .filter(|p| p.starts_with("thin"))
                .map(String::from)
                .collect();
        }
        time_all(n, &protocols);
        return;
    }
    let nested = args.next().expect(usage) == "nested";
    let n = args.next().expect(usage).parse().expect(usage);
    run_row(&name, nested, n);
}
