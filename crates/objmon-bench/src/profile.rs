//! The contention profile: one contended workload per protocol, run once with
//! `Config::profiling` off and once on — the cost of profiling, and the top objects it names.
//!
//! Workload: `THREADS` threads over `OBJECTS` objects; each operation locks the hot object
//! (object 0) half of the time and one of the others otherwise, spins a little inside, and one
//! operation in 64 waits 20 µs on its object. So the profile must name object 0 first.

use crate::doc::Block;
use objmon::vm::{Config, ObjectProfile, ObjectRef, Protocol, ProtocolVisitor, Runtime};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const THREADS: usize = 4;
const OBJECTS: usize = 16;

/// One protocol's run with profiling off and on.
pub struct ProtocolProfile {
    /// Catalog name.
    pub name: &'static str,
    /// Operations per second, profiling off.
    pub ops_off: f64,
    /// Operations per second, profiling on.
    pub ops_on: f64,
    /// The profile of the run with profiling on: object index, figures; most blocked first.
    pub top: Vec<(Option<usize>, ObjectProfile)>,
}

fn workload<P: Protocol>(
    profiling: bool,
    time: Duration,
) -> (f64, Vec<(Option<usize>, ObjectProfile)>) {
    // SAFETY: this program installs no signal handler of its own (std's fault handlers run
    // only on a fault, which no owner section makes): the -signal flavors' contract
    // (`Runtime::new_unchecked`) holds; the other protocols have none.
    let rt = unsafe {
        Runtime::<P>::new_unchecked(Config {
            profiling,
            ..Config::default()
        })
    };
    let hs: Vec<P::Header> = (0..OBJECTS).map(|_| P::Header::default()).collect();
    let stop = AtomicBool::new(false);
    let ops = AtomicU64::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        for k in 0..THREADS as u64 {
            let (rt, hs, stop, ops) = (&rt, &hs, &stop, &ops);
            s.spawn(move || {
                let me = rt.attach().expect("attach");
                let mut x = (k + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let i = if x & 1 == 0 {
                        0
                    } else {
                        1 + (x >> 8) as usize % (OBJECTS - 1)
                    };
                    let g = me.enter(&hs[i]).expect("enter");
                    for _ in 0..50 {
                        std::hint::spin_loop();
                    }
                    if (x >> 32) % 64 == 0 {
                        g.wait(Some(Duration::from_micros(20))).expect("wait");
                    }
                    drop(g);
                    n += 1;
                }
                ops.fetch_add(n, Ordering::Relaxed);
            });
        }
        std::thread::sleep(time);
        stop.store(true, Ordering::Relaxed);
    });
    let rate = ops.into_inner() as f64 / start.elapsed().as_secs_f64();
    let index = |o: ObjectRef| hs.iter().position(|h| ObjectRef::of(h) == o);
    let top = rt
        .contention_profile()
        .into_iter()
        .map(|p| (index(p.object), p))
        .collect();
    (rate, top)
}

/// Runs the workload on every protocol, `time` per run (two runs each).
pub fn run(time: Duration, only: Option<&str>) -> Vec<ProtocolProfile> {
    struct V(Duration, Option<String>, Vec<ProtocolProfile>);
    impl ProtocolVisitor for V {
        fn visit<P: Protocol>(&mut self) {
            if self.1.as_deref().is_some_and(|n| n != P::NAME) {
                return;
            }
            eprintln!("contention profile: {}", P::NAME);
            let (ops_off, _) = workload::<P>(false, self.0);
            let (ops_on, top) = workload::<P>(true, self.0);
            self.2.push(ProtocolProfile {
                name: P::NAME,
                ops_off,
                ops_on,
                top,
            });
        }
    }
    let mut v = V(time, only.map(str::to_string), Vec::new());
    objmon::vm::visit_all(&mut v);
    v.2
}

fn top_text(top: &[(Option<usize>, ObjectProfile)], n: usize) -> String {
    top.iter()
        .take(n)
        .map(|(i, p)| {
            format!(
                "obj{}: {} contended, {:.1} ms blocked, {} waits",
                i.map_or("?".to_string(), |i| i.to_string()),
                p.contended_enters,
                p.blocked.as_secs_f64() * 1e3,
                p.waits
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The rows of the table, for the report and the `profile` command.
pub fn rows(profiles: &[ProtocolProfile]) -> (Vec<String>, Vec<Vec<String>>) {
    let head = vec![
        "protocol".into(),
        "ops/s, profiling off".into(),
        "ops/s, on".into(),
        "on / off".into(),
        "top objects (profiling on)".into(),
    ];
    let rows = profiles
        .iter()
        .map(|p| {
            vec![
                p.name.to_string(),
                format!("{:.0}", p.ops_off),
                format!("{:.0}", p.ops_on),
                format!("{:.2}", p.ops_on / p.ops_off),
                top_text(&p.top, 3),
            ]
        })
        .collect();
    (head, rows)
}

/// The report's section.
pub fn section(d: &mut Vec<Block>, profiles: &[ProtocolProfile], time: Duration) {
    d.push(Block::H(2, "Contention profile".into()));
    d.push(Block::P(format!(
        "`Config::profiling` (off by default) counts, per object, contended enters, time \
         blocked (thin-lock spinning included), waits and time waiting \
         (`Runtime::contention_profile`). Workload: {THREADS} threads over {OBJECTS} objects, \
         half of the operations on object 0 (obj0), a short spin inside, one operation in 64 \
         waits 20 µs; one run of {} ms with profiling off, then one with it on (single runs \
         on a shared machine: read the on/off ratio as ±10 %). The profile should name obj0 \
         first.",
        time.as_millis()
    )));
    let (head, rows) = rows(profiles);
    d.push(Block::Table(head, rows));
}
