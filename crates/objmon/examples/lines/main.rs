//! Cache lines per acquisition and per hand-off, counted by valgrind's lackey, not guessed.
//!
//! The program is its own driver: run without `OBJMON_LINES_CHILD` in its environment it
//! starts itself under `valgrind --tool=lackey --trace-mem=yes --trace-sched=yes
//! --fair-sched=yes` once per (kind, scenario), with `OBJMON_LINES_CHILD` naming the
//! workload, and reads lackey's trace back: every load and store (an access that straddles a
//! line counts both lines) attributed to the valgrind thread that the scheduler trace says is
//! running (`SCHED[n]: acquired lock`), and to 64-byte lines.
//!
//! ```sh
//! cargo build --release -p objmon --example lines
//! target/release/examples/lines                       # every kind, every scenario
//! target/release/examples/lines --kinds thin,fat --scenarios handoff --sites
//! target/release/examples/lines --markdown            # the table of docs/benchmarks.md
//! ```
//!
//! Workloads (always two threads, so that "shared" is measured): a region is the code between
//! two stores to a marker cell of the harness (one 64-byte line per thread, role and edge);
//! the first `--warm` regions of each thread and role are dropped, the next ones counted.
//!
//! - `uncontended`: each thread locks and unlocks its own object (one region: lock+unlock);
//! - `nested`: each thread holds its own object and locks and unlocks it again (the region is
//!   the inner lock+unlock; `parking_lot` uses `ReentrantMutex` here, `std` has none);
//! - `fresh`: each thread locks and unlocks, region by region, objects never locked before
//!   (an allocation's first lock: `fat` inflates here, every protocol's first use);
//! - `alternate`: both threads on one object, taking turns: each locks and unlocks it once
//!   after the other's unlock, nobody waiting (ownership moves, no contention);
//! - `handoff`: both threads on one object, ownership alternating: the waiter announces
//!   itself and calls lock; the owner waits for that, sleeps `--sleep-ms` (so the waiter
//!   reaches its spin or park), and unlocks. Regions: `release` (the owner's unlock call) and
//!   `acquire` (the waiter's whole lock call, its spin or park included).
//!
//! Per region: the distinct lines stored to (S or M) and loaded from (L or M). A line is
//! *shared* when both threads touched it inside counted regions: coherence traffic on more
//! cores. Lines are labelled `header` (the lock object's own bytes: its header word, or the
//! whole `Monitor` / `Mutex`), `runtime` (the `Runtime<P>` struct), `static` (the program's
//! data), `stack` (a thread's stack or TLS), `heap` (anything else: fat monitors, thread
//! records, the monitor table); with `--sites` each shared line written is also named by the
//! code that stored to it (`addr2line` on the storing instruction).
//!
//! Kinds: every `objmon::vm::names()` protocol on its own runtime (`Runtime::<P>` through
//! `ThreadHandle::enter`, the guard dropped), `monitor` (`objmon::Monitor<()>`, the default
//! protocol on the process-wide runtime), `parking_lot` and `std` (`std::sync::Mutex`).
//!
//! Figures are means over the counted regions (both threads pooled); the hand-off's depend
//! on what the waiter does in `--sleep-ms` under valgrind's speed (spin, yield, park), which
//! the output names by the lines it wrote. The harness's own cells (markers, the hand-off's
//! turn counters) are excluded by address. `tests/lines.rs` runs one kind, tiny, as a test.
//!
//! The analysis is part of the example too (`trace.rs`, `measure`), so that the test includes it by path and
//! runs its own binary as the workload (`OBJMON_LINES_CHILD` set, `lines_child` selected).

use objmon::vm::{Config, Protocol, ProtocolVisitor, Runtime};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::Duration;

mod trace;
mod workload;
pub use trace::*;
pub use workload::*;

/// The environment variable that makes the program a workload: `KIND SCENARIO WARM ITERS
/// SLEEP_MS`.
pub const CHILD_ENV: &str = "OBJMON_LINES_CHILD";

/// The scenarios, in table order.
pub const SCENARIOS: [&str; 5] = ["uncontended", "nested", "fresh", "alternate", "handoff"];

/// The kinds beside the protocols.
pub const ANCHORS: [&str; 3] = ["monitor", "parking_lot", "std"];

fn all_kinds() -> Vec<String> {
    let mut v: Vec<String> = vec!["monitor".into()];
    v.extend(objmon::vm::names().into_iter().map(String::from));
    v.extend(["parking_lot", "std"].map(String::from));
    v
}

fn print_figures(fig: &Figures, sites: bool) {
    for r in &fig.roles {
        let by = |m: &BTreeMap<&str, f64>| {
            m.iter()
                .map(|(k, v)| format!("{k} {v:.1}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        println!(
            "{:<18} {:<12} {:<19} n={:<4} written {:>5.1} (shared {:>4.1}, false {:>3.1})  read {:>5.1} (shared {:>4.1})  written: {}; read: {}",
            fig.kind,
            fig.scenario,
            r.role,
            r.regions,
            r.written,
            r.written_shared,
            r.written_false,
            r.read,
            r.read_shared,
            by(&r.written_by_label),
            by(&r.read_by_label)
        );
        if sites {
            for (label, frac, site) in &r.shared_sites {
                println!(
                    "    shared, written in {:>4.0}% of regions: {label}: {site}",
                    frac * 100.0
                );
            }
        }
    }
    if fig.misattributed > 0 {
        println!(
            "    ({} marks from an unexpected thread)",
            fig.misattributed
        );
    }
}

fn markdown(all: &[Figures]) {
    println!();
    println!("| kind | lock+unlock: written (shared) | read (shared) | nested: written (shared) | first lock: written (shared) | alternating: written (shared) | hand-off release: written (shared) | hand-off acquire: written (shared) | acquire: read (shared) |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut kinds: Vec<&str> = Vec::new();
    for f in all {
        if !kinds.contains(&f.kind.as_str()) {
            kinds.push(&f.kind);
        }
    }
    for k in kinds {
        let get = |sc: &str, role: &str| {
            all.iter()
                .find(|f| f.kind == k && f.scenario == sc)
                .and_then(|f| f.roles.iter().find(|r| r.role == role))
        };
        let w = |r: Option<&RoleFigures>| {
            r.map_or("—".into(), |r| {
                let f = if r.written_false > 0.0 {
                    format!(" +{:.1} false", r.written_false)
                } else {
                    String::new()
                };
                format!("{:.1} ({:.1}{f})", r.written, r.written_shared)
            })
        };
        let rd = |r: Option<&RoleFigures>| {
            r.map_or("—".into(), |r| {
                format!("{:.1} ({:.1})", r.read, r.read_shared)
            })
        };
        println!(
            "| `{k}` | {} | {} | {} | {} | {} | {} | {} | {} |",
            w(get("uncontended", "lock+unlock")),
            rd(get("uncontended", "lock+unlock")),
            w(get("nested", "nested lock+unlock")),
            w(get("fresh", "first lock+unlock")),
            w(get("alternate", "lock+unlock after the other")),
            w(get("handoff", "release")),
            w(get("handoff", "acquire")),
            rd(get("handoff", "acquire")),
        );
    }
}

fn main() {
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        child(&spec);
        return;
    }
    let mut kinds = all_kinds();
    let mut scenarios: Vec<String> = SCENARIOS.map(String::from).to_vec();
    let (mut warm, mut iters, mut rounds, mut sleep_ms) = (20, 200, 8, 30);
    let (mut md, mut sites) = (false, false);
    let usage = |why: &str| -> ! {
        eprintln!(
            "lines: {why}\nusage: lines [--kinds K,..] [--scenarios S,..] [--warm N] [--iters N] \
             [--rounds N] [--sleep-ms N] [--markdown] [--sites]\nscenarios: {}",
            SCENARIOS.join(", ")
        );
        std::process::exit(2)
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || {
            args.next()
                .unwrap_or_else(|| usage(&format!("{a} needs a value")))
        };
        let mut num = |name: &str| -> usize {
            let v = val();
            v.parse()
                .unwrap_or_else(|_| usage(&format!("{name} takes a number, not {v:?}")))
        };
        match a.as_str() {
            "--kinds" => kinds = val().split(',').map(String::from).collect(),
            "--scenarios" => scenarios = val().split(',').map(String::from).collect(),
            "--warm" => warm = num("--warm"),
            "--iters" => iters = num("--iters"),
            "--rounds" => rounds = num("--rounds"),
            "--sleep-ms" => sleep_ms = num("--sleep-ms") as u64,
            "--markdown" => md = true,
            "--sites" => sites = true,
            "--help" | "-h" => usage("cache lines per acquisition and per hand-off"),
            _ => usage(&format!("unknown argument {a}")),
        }
    }
    assert!(
        lackey_available(),
        "valgrind --tool=lackey is not installed"
    );
    let exe = std::env::current_exe().expect("current_exe");
    let mut all = Vec::new();
    for k in &kinds {
        for sc in &scenarios {
            if k == "std" && sc == "nested" {
                continue;
            }
            let (w, n) = match sc.as_str() {
                "handoff" => (2, rounds),
                "alternate" | "fresh" => (warm.min(5), iters.min(50)),
                _ => (warm, iters),
            };
            let spec = Spec {
                kind: k.clone(),
                scenario: sc.clone(),
                warm: w,
                iters: n,
                sleep_ms,
            };
            match measure(&exe, &[], &spec) {
                Ok(f) => {
                    print_figures(&f, sites);
                    all.push(f);
                }
                Err(e) => println!("{e}"),
            }
        }
    }
    if md {
        markdown(&all);
    }
}
