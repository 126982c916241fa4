//! Memory per object: the resident memory that 1,000,000 lockable values
//! cost a process — `objmon::Monitor<u64>` beside the locks a Rust user would pick instead —
//! measured as the growth of the resident set (`/proc/self/statm`), each kind in a fresh child
//! process (`objmon-bench memory-probe KIND N`), so that no allocator reuse from an earlier
//! row hides a cost.
//!
//! Three moments per kind: after allocating the values (`Vec::with_capacity(n)`, every value
//! written), after locking and unlocking each once, and — for the monitors, whose `wait` needs
//! a fat monitor — after a zero-timeout `wait` on each (every value inflated). The first two
//! are what a program with a million mostly-uncontended locks pays; the third the worst case
//! of a protocol that inflates for good (`thin`) against one that gives monitors back.

use serde::{Deserialize, Serialize};
use std::process::Command;
use std::time::Duration;

/// The kinds measured, in report order.
pub const KINDS: [&str; 6] = [
    "monitor",
    "monitor-tasuki",
    "monitor-fable",
    "parking-lot-mutex",
    "parking-lot",
    "std-mutex",
];

/// One kind's figures, in bytes per object.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MemRow {
    /// The kind (see [`KINDS`]).
    pub kind: String,
    /// `size_of` one value (`u64` payload included).
    pub size_of: usize,
    /// Resident growth per object once the values exist.
    pub allocated: f64,
    /// ... after one lock + unlock of each.
    pub locked_once: f64,
    /// ... after a zero-timeout wait on each (monitors only).
    pub waited_once: Option<f64>,
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let resident: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    resident * page
}

/// Per-object growth between two RSS readings.
fn per(after: u64, before: u64, n: usize) -> f64 {
    after.saturating_sub(before) as f64 / n.max(1) as f64
}

fn measure<T>(
    kind: &str,
    n: usize,
    make: impl Fn(u64) -> T,
    lock: impl Fn(&T),
    wait: Option<&dyn Fn(&T)>,
) -> MemRow {
    let base = rss_bytes();
    let mut v: Vec<T> = Vec::with_capacity(n);
    v.extend((0..n as u64).map(&make));
    let allocated = rss_bytes();
    for x in &v {
        lock(x);
    }
    let locked = rss_bytes();
    let waited = wait.map(|w| {
        for x in &v {
            w(x);
        }
        rss_bytes()
    });
    let row = MemRow {
        kind: kind.to_string(),
        size_of: std::mem::size_of::<T>(),
        allocated: per(allocated, base, n),
        locked_once: per(locked, base, n),
        waited_once: waited.map(|w| per(w, base, n)),
    };
    std::hint::black_box(&v);
    row
}

fn monitor_row<P: objmon::MonitorProtocol>(kind: &str, n: usize) -> MemRow {
    measure(
        kind,
        n,
        objmon::Monitor::<u64, P>::with_protocol,
        |m| drop(std::hint::black_box(m.lock())),
        Some(&|m: &objmon::Monitor<u64, P>| {
            let _ = m.lock().wait(Some(Duration::ZERO));
        }),
    )
}

/// Measures `kind` in this process (the child's side of [`per_object`]).
pub fn probe(kind: &str, n: usize) -> Option<MemRow> {
    Some(match kind {
        "monitor" => monitor_row::<objmon::DefaultProtocol>(kind, n),
        "monitor-tasuki" => monitor_row::<objmon::Tasuki>(kind, n),
        "monitor-fable" => monitor_row::<objmon::Fable>(kind, n),
        "parking-lot-mutex" => measure(
            kind,
            n,
            parking_lot::Mutex::new,
            |m| drop(std::hint::black_box(m.lock())),
            None,
        ),
        "parking-lot" => measure(
            kind,
            n,
            parking_lot::ReentrantMutex::new,
            |m| drop(std::hint::black_box(m.lock())),
            None,
        ),
        "std-mutex" => measure(
            kind,
            n,
            std::sync::Mutex::new,
            |m| drop(std::hint::black_box(m.lock())),
            None,
        ),
        _ => return None,
    })
}

/// Runs [`probe`] for every kind of [`KINDS`] in a child process of this executable
/// (`objmon-bench memory-probe KIND N`); a kind whose child fails is left out with a note on
/// stderr.
pub fn per_object(n: usize) -> Vec<MemRow> {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("memory per object: no path to this executable ({e})");
            return Vec::new();
        }
    };
    KINDS
        .iter()
        .filter_map(|kind| {
            let out = Command::new(&exe)
                .args(["memory-probe", kind, &n.to_string()])
                .output()
                .ok()?;
            let row = serde_json::from_slice::<MemRow>(&out.stdout).ok();
            if row.is_none() {
                eprintln!(
                    "memory per object: {kind} failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
            row
        })
        .collect()
}
