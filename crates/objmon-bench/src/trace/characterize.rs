//! The seeds' characterization of a program's locking: seed 000 (thin locks) Table 1 and
//! Figure 3, seed 003 (CACAO) Tables 2–5, and the `trace` subcommand that prints them.

use super::format::{read, Event, Kind, Trace, WaitOutcome};
use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Write as _;

/// Seed 003's CACAO hash table simulated over a trace (Tables 3 and 4): 1024 first chain
/// entries indexed by the object id's low bits, overflow chains, and the first entry never
/// freed (its mutex keeps its holder when the count drops to zero).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Cacao {
    /// `monitorenter` calls (Table 3's "Line 6").
    pub enter_calls: u64,
    /// Handled by the inlined fast path: first entry holds the object and this thread is the
    /// holder (Table 3's "Line 10").
    pub enter_fast: u64,
    /// Locks whose mutex count was zero before locking (Table 3's "count 0").
    pub enter_count_zero: u64,
    /// `lockMutexForObject` calls (Table 3's "Line 12").
    pub enter_slow: u64,
    /// `monitorexit` calls (Table 4's "Line 6").
    pub exit_calls: u64,
    /// Handled by the fast path: first entry holds the object (Table 4's "Line 8").
    pub exit_fast: u64,
    /// `unlockMutexForObject` calls (Table 4's "Line 10").
    pub exit_slow: u64,
    /// Longest overflow chain seen.
    pub max_chain: usize,
}

impl Cacao {
    /// Table 3's ratio 12/6, percent.
    pub fn enter_slow_pct(&self) -> f64 {
        pct(self.enter_slow, self.enter_calls)
    }
    /// Table 4's ratio 10/6, percent.
    pub fn exit_slow_pct(&self) -> f64 {
        pct(self.exit_slow, self.exit_calls)
    }
}

fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// Buckets of the simulated CACAO table (seed 003 uses 1024).
pub const CACAO_BUCKETS: usize = 1024;

#[derive(Clone, Copy, Default)]
struct Mutex {
    obj: u64, // 0 = none
    holder: u32,
    count: u32,
}

/// Simulates CACAO's monitor table over the trace (lock and unlock operations in `seq` order;
/// a wait releases its entry's count and its end restores it, uncounted).
///
/// One deviation from the paper's code, for correctness: `lockMutexForObject` looks for the
/// object in the overflow chain before claiming a free first entry (the paper's code could
/// then hold one object in two entries).
pub fn simulate_cacao(t: &Trace) -> Cacao {
    let mut c = Cacao::default();
    let mut first = vec![Mutex::default(); CACAO_BUCKETS];
    let mut chains: Vec<Vec<Mutex>> = vec![Vec::new(); CACAO_BUCKETS];
    let mut saved: HashMap<(u32, u64), u32> = HashMap::new();
    let bucket = |o: u64| (o as usize) & (CACAO_BUCKETS - 1);
    for e in &t.events {
        let h = bucket(e.obj);
        let (o, me) = (e.obj, e.tid);
        if e.kind.is_lock() || e.kind == Kind::WaitEnd {
            let relock = e.kind == Kind::WaitEnd;
            let restore = if relock {
                match saved.remove(&(me, o)) {
                    Some(n) => n,
                    None => continue,
                }
            } else {
                1
            };
            if !relock {
                c.enter_calls += 1;
            }
            let f = &mut first[h];
            if f.obj == o && f.holder == me && !relock {
                c.enter_fast += 1;
                if f.count == 0 {
                    c.enter_count_zero += 1;
                }
                f.count += 1;
                continue;
            }
            if !relock {
                c.enter_slow += 1;
            }
            // lockMutexForObject
            let m: &mut Mutex = if f.obj == o {
                f
            } else if let Some(i) = chains[h].iter().position(|m| m.obj == o) {
                &mut chains[h][i]
            } else if f.obj == 0 || f.count == 0 {
                *f = Mutex {
                    obj: o,
                    holder: 0,
                    count: 0,
                };
                f
            } else {
                chains[h].push(Mutex {
                    obj: o,
                    holder: 0,
                    count: 0,
                });
                c.max_chain = c.max_chain.max(chains[h].len());
                chains[h].last_mut().expect("just pushed")
            };
            if m.count == 0 {
                if !relock {
                    c.enter_count_zero += 1;
                }
                m.holder = me;
                m.count = restore;
            } else {
                // Held: by this thread (nested), or, never in a legal trace, by another.
                m.count += restore;
                m.holder = me;
            }
        } else if e.kind.is_unlock() || e.kind == Kind::Wait {
            let wait = e.kind == Kind::Wait;
            if !wait {
                c.exit_calls += 1;
            }
            let f = &mut first[h];
            if f.obj == o {
                if wait {
                    saved.insert((me, o), f.count);
                    f.count = 0;
                } else {
                    c.exit_fast += 1;
                    f.count = f.count.saturating_sub(1);
                }
                continue;
            }
            if !wait {
                c.exit_slow += 1;
            }
            if let Some(i) = chains[h].iter().position(|m| m.obj == o) {
                if wait {
                    saved.insert((me, o), chains[h][i].count);
                    chains[h][i].count = 0;
                } else {
                    chains[h][i].count = chains[h][i].count.saturating_sub(1);
                }
                if chains[h][i].count == 0 {
                    chains[h].remove(i);
                }
            }
        }
    }
    c
}

/// Miss rates of an LRU cache of `size` monitors over every lock and unlock operation in
/// `seq` order (seed 003 Table 5), percent.
pub fn lru_miss_rate(t: &Trace, size: usize) -> f64 {
    let mut cache: Vec<u64> = Vec::with_capacity(size);
    let (mut n, mut miss) = (0u64, 0u64);
    for e in t
        .events
        .iter()
        .filter(|e| e.kind.is_lock() || e.kind.is_unlock())
    {
        n += 1;
        match cache.iter().position(|&o| o == e.obj) {
            Some(i) => {
                let o = cache.remove(i);
                cache.insert(0, o);
            }
            None => {
                miss += 1;
                if cache.len() == size {
                    cache.pop();
                }
                cache.insert(0, e.obj);
            }
        }
    }
    pct(miss, n)
}

/// The cache sizes of seed 003 Table 5.
pub const LRU_SIZES: [usize; 4] = [1, 2, 4, 8];

/// A program's locking, as the seeds tabulate it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Characterization {
    /// Workload name.
    pub name: String,
    /// Threads that performed a monitor operation.
    pub threads: usize,
    /// Allocation bytecodes executed in instrumented classes (lower bound of seed 000's
    /// "Objects"), if counted.
    pub allocations: Option<u64>,
    /// Objects locked at least once (seed 000's "Sync'd Objects", seed 003's "Objects with
    /// mutex").
    pub synchronized_objects: u64,
    /// Lock operations: `monitorenter` plus synchronized-method entries (seed 000's "Syncs").
    pub lock_ops: u64,
    /// Of which synchronized-method entries.
    pub method_lock_ops: u64,
    /// Unlock operations (exits, normal and exceptional).
    pub unlock_ops: u64,
    /// Of which synchronized methods left by an exception.
    pub exceptional_exits: u64,
    /// Lock + unlock operations (seed 003's "Monitor operations").
    pub monitor_ops: u64,
    /// `lock_ops / synchronized_objects` (seed 000's "Syncs/S.Obj.").
    pub ops_per_object: f64,
    /// Lock operations by the nesting depth they reach: `[0]` depth 1 (the object was
    /// unlocked: seed 000's "First"), `[1]` depth 2 ("Second"), ...; the last bucket holds
    /// depths ≥ its index + 1.
    pub depth_histogram: Vec<u64>,
    /// Deepest nesting seen.
    pub max_depth: u32,
    /// Percent of lock operations on unlocked objects (depth 1).
    pub unlocked_pct: f64,
    /// Objects locked by more than one thread.
    pub multi_thread_objects: u64,
    /// Acquisitions (depth 1) by a thread other than the object's previous locker: what a
    /// biased lock would revoke or rebias.
    pub owner_changes: u64,
    /// Most monitors held at once, all threads together (seed 003's "Parallel Mutexes").
    pub max_held: u64,
    /// Most monitors held at once by one thread.
    pub max_held_one_thread: u64,
    /// `wait` calls.
    pub waits: u64,
    /// Of which with a timeout.
    pub timed_waits: u64,
    /// Waits that a NOTIFY/NOTIFY_ALL by another thread on the object preceded (in `seq`
    /// order, between the wait's begin and end).
    pub waits_notified: u64,
    /// Waits that returned normally without such a notify after at least their timeout
    /// (probably timed out).
    pub waits_timed_out: u64,
    /// Waits ended by an interrupt.
    pub waits_interrupted: u64,
    /// `notify` calls.
    pub notifies: u64,
    /// `notifyAll` calls.
    pub notify_alls: u64,
    /// Seed 003 Tables 3–4.
    pub cacao: Cacao,
    /// Seed 003 Table 5: LRU miss rates (percent) for [`LRU_SIZES`].
    pub lru_miss_pct: Vec<f64>,
    /// The most locked classes: (class, lock operations), top 5.
    pub top_classes: Vec<(String, u64)>,
    /// Lock/unlock sequences that did not balance per thread and object (0 in a sound
    /// recording).
    pub anomalies: u64,
}

/// Depth histogram buckets (depth 1 … 7, and ≥ 8).
pub const DEPTH_BUCKETS: usize = 8;

/// Characterizes a trace.
pub fn characterize(name: &str, t: &Trace) -> Characterization {
    let mut c = Characterization {
        name: name.to_string(),
        threads: t.thread_ids().len(),
        allocations: t.allocations(),
        depth_histogram: vec![0; DEPTH_BUCKETS],
        ..Characterization::default()
    };
    // (tid, obj) -> depth; obj -> (holder, count); obj -> lockers.
    let mut depth: HashMap<(u32, u64), u32> = HashMap::new();
    let mut held_by: HashMap<u32, u64> = HashMap::new();
    let mut lockers: HashMap<u64, (u32, bool)> = HashMap::new(); // first locker, >1 thread
    let mut last_locker: HashMap<u64, u32> = HashMap::new();
    let mut held_total = 0u64;
    let mut waiting: HashMap<(u32, u64), (u32, Event, bool)> = HashMap::new();
    let mut by_class: HashMap<&str, u64> = HashMap::new();
    for e in &t.events {
        let key = (e.tid, e.obj);
        match e.kind {
            k if k.is_lock() => {
                c.lock_ops += 1;
                if k == Kind::MethodEnter {
                    c.method_lock_ops += 1;
                }
                *by_class.entry(t.class_of(e.obj)).or_default() += 1;
                let d = depth.entry(key).or_default();
                *d += 1;
                let d = *d;
                c.depth_histogram[(d as usize - 1).min(DEPTH_BUCKETS - 1)] += 1;
                c.max_depth = c.max_depth.max(d);
                if d == 1 {
                    held_total += 1;
                    let h = held_by.entry(e.tid).or_default();
                    *h += 1;
                    c.max_held_one_thread = c.max_held_one_thread.max(*h);
                    c.max_held = c.max_held.max(held_total);
                    if last_locker.insert(e.obj, e.tid).is_some_and(|p| p != e.tid) {
                        c.owner_changes += 1;
                    }
                }
                let l = lockers.entry(e.obj).or_insert((e.tid, false));
                if l.0 != e.tid {
                    l.1 = true;
                }
            }
            k if k.is_unlock() => {
                c.unlock_ops += 1;
                if k == Kind::MethodExitExc {
                    c.exceptional_exits += 1;
                }
                match depth.get_mut(&key) {
                    Some(d) if *d > 0 => {
                        *d -= 1;
                        if *d == 0 {
                            held_total -= 1;
                            *held_by.entry(e.tid).or_default() -= 1;
                        }
                    }
                    _ => c.anomalies += 1,
                }
            }
            Kind::Wait => {
                c.waits += 1;
                if e.timeout_ms > 0 || e.timeout_ns > 0 {
                    c.timed_waits += 1;
                }
                let d = depth.insert(key, 0).unwrap_or(0);
                if d > 0 {
                    held_total -= 1;
                    *held_by.entry(e.tid).or_default() -= 1;
                }
                waiting.insert(key, (d, *e, false));
            }
            Kind::WaitEnd => {
                if let Some((d, begin, notified)) = waiting.remove(&key) {
                    if d > 0 {
                        depth.insert(key, d);
                        held_total += 1;
                        let h = held_by.entry(e.tid).or_default();
                        *h += 1;
                        c.max_held = c.max_held.max(held_total);
                    }
                    let timeout = begin.timeout_ms as i128 * 1_000_000 + begin.timeout_ns as i128;
                    match e.outcome {
                        Some(WaitOutcome::Interrupted) => c.waits_interrupted += 1,
                        _ if notified => c.waits_notified += 1,
                        Some(WaitOutcome::Returned)
                            if timeout > 0 && i128::from(e.time - begin.time) >= timeout =>
                        {
                            c.waits_timed_out += 1
                        }
                        _ => {}
                    }
                }
            }
            Kind::Notify | Kind::NotifyAll => {
                if e.kind == Kind::Notify {
                    c.notifies += 1;
                } else {
                    c.notify_alls += 1;
                }
                for ((tid, obj), w) in waiting.iter_mut() {
                    if *obj == e.obj && *tid != e.tid {
                        w.2 = true;
                    }
                }
            }
            _ => {}
        }
    }
    c.synchronized_objects = lockers.len() as u64;
    c.multi_thread_objects = lockers.values().filter(|l| l.1).count() as u64;
    c.monitor_ops = c.lock_ops + c.unlock_ops;
    c.ops_per_object = if c.synchronized_objects == 0 {
        0.0
    } else {
        c.lock_ops as f64 / c.synchronized_objects as f64
    };
    c.unlocked_pct = pct(c.depth_histogram[0], c.lock_ops);
    c.cacao = simulate_cacao(t);
    c.lru_miss_pct = LRU_SIZES.iter().map(|&s| lru_miss_rate(t, s)).collect();
    let mut top: Vec<(String, u64)> = by_class
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    top.truncate(5);
    c.top_classes = top;
    c
}

/// The seeds' published rows for their javac (the one program they share with ours), printed
/// beside ours: (source, objects, synchronized objects, lock operations, ops/object).
pub(crate) const SEED_TABLE1: &[(&str, &str, &str, &str, &str)] = &[
    (
        "seed 000 Table 1: javac (JDK 1.1)",
        "345687",
        "24735",
        "856666",
        "34.6",
    ),
    (
        "seed 000 Table 1: median of 21 programs",
        "–",
        "–",
        "–",
        "22.7",
    ),
    (
        "seed 003 Table 2: javac (Toba sources)",
        "111504",
        "13695",
        "420147 (840292 ops)",
        "30.7",
    ),
    (
        "seed 003 Table 2: Jigsaw (HTTP server)",
        "215411",
        "23804",
        "≈427846 (855691 ops)",
        "18.0",
    ),
];

/// Seed 003 Tables 3 and 4 (CACAO's monitor table, 1024 buckets): program, then enter calls,
/// fast, count 0, slow, slow %, exit calls, fast, slow, slow % (cells joined by ` | `).
pub(crate) const SEED_CACAO: [(&str, &str); 3] = [
    (
        "javac",
        "420147 | 405978 | 381019 | 14169 | 3.372% | 420146 | 419815 | 331 | 0.078%",
    ),
    (
        "Biss",
        "384350 | 370171 | 425038 | 14179 | 3.689% | 384368 | 383281 | 1087 | 0.282%",
    ),
    (
        "Jigsaw",
        "426695 | 391680 | 294957 | 35015 | 8.206% | 428997 | 416890 | 12107 | 2.822%",
    ),
];

/// Seed 003 Table 5 (LRU monitor cache miss rates for [`LRU_SIZES`] entries): program, then
/// the rates (cells joined by ` | `).
pub(crate) const SEED_LRU: [(&str, &str); 3] = [
    ("javac", "15.076% | 9.757% | 4.931% | 3.193%"),
    ("Biss", "13.488% | 8.349% | 4.765% | 3.141%"),
    ("Jigsaw", "43.694% | 37.700% | 22.680% | 5.182%"),
];

fn fmt_opt(v: Option<u64>) -> String {
    v.map_or_else(|| "–".to_string(), |x| x.to_string())
}

/// Renders the characterization tables (seed 000 Table 1 and Figure 3, seed 003 Tables 2–5)
/// for several programs, with the seeds' published javac/Jigsaw figures beside them.
pub fn render_markdown(rows: &[Characterization]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "### Programs (seed 000 Table 1, seed 003 Table 2)\n");
    let _ = writeln!(
        s,
        "| program | threads | allocations | sync'd objects | lock ops | of which sync. methods | \
         ops / sync'd object | multi-thread objects | owner changes | most held at once (one thread) |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for c in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {:.1} | {} | {} | {} ({}) |",
            c.name,
            c.threads,
            fmt_opt(c.allocations),
            c.synchronized_objects,
            c.lock_ops,
            c.method_lock_ops,
            c.ops_per_object,
            c.multi_thread_objects,
            c.owner_changes,
            c.max_held,
            c.max_held_one_thread
        );
    }
    for (src, objs, sync, ops, per) in SEED_TABLE1 {
        let _ = writeln!(s, "| *{src}* | | {objs} | {sync} | {ops} | | {per} | | | |");
    }
    let _ = writeln!(
        s,
        "\n*allocations*: allocation bytecodes run in instrumented classes (a lower bound of \
         objects allocated). Seed 003's Jigsaw held at most 25 monitors at once, javac 5.\n"
    );

    let _ = writeln!(
        s,
        "### Nesting depth of lock operations (seed 000 Figure 3)\n"
    );
    let _ = write!(s, "| program | on unlocked object (First) |");
    for d in 2..=DEPTH_BUCKETS {
        if d == DEPTH_BUCKETS {
            let _ = write!(s, " ≥{d} |");
        } else {
            let _ = write!(s, " depth {d} |");
        }
    }
    let _ = writeln!(s, " max depth |");
    let _ = writeln!(s, "|---|{}---:|", "---:|".repeat(DEPTH_BUCKETS));
    for c in rows {
        let _ = write!(s, "| {} |", c.name);
        for (i, n) in c.depth_histogram.iter().enumerate() {
            if i == 0 {
                let _ = write!(s, " {:.1}% ({n}) |", c.unlocked_pct);
            } else {
                let _ = write!(s, " {:.2}% |", pct(*n, c.lock_ops));
            }
        }
        let _ = writeln!(s, " {} |", c.max_depth);
    }
    let _ = writeln!(
        s,
        "| *seed 000: 21 programs* | *median 80%, at least 45%* | *most of the rest* | | | | | | | *≤ 4* |"
    );

    let _ = writeln!(s, "\n### wait / notify\n");
    let _ = writeln!(
        s,
        "| program | waits | with timeout | notified | probably timed out | interrupted | notify | notifyAll | exceptional method exits |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for c in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            c.name,
            c.waits,
            c.timed_waits,
            c.waits_notified,
            c.waits_timed_out,
            c.waits_interrupted,
            c.notifies,
            c.notify_alls,
            c.exceptional_exits
        );
    }

    let _ = writeln!(
        s,
        "\n### CACAO's monitor table, {CACAO_BUCKETS} buckets (seed 003 Tables 3 and 4)\n"
    );
    let _ = writeln!(
        s,
        "| program | enter: calls (line 6) | fast (line 10) | count 0 | slow (line 12) | slow % | exit: calls (line 6) | fast (line 8) | slow (line 10) | slow % |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for c in rows {
        let k = &c.cacao;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {:.3}% | {} | {} | {} | {:.3}% |",
            c.name,
            k.enter_calls,
            k.enter_fast,
            k.enter_count_zero,
            k.enter_slow,
            k.enter_slow_pct(),
            k.exit_calls,
            k.exit_fast,
            k.exit_slow,
            k.exit_slow_pct()
        );
    }
    for (p, row) in SEED_CACAO {
        let _ = writeln!(s, "| *seed 003: {p}* | {row} |");
    }

    let _ = writeln!(s, "\n### LRU monitor cache miss rates (seed 003 Table 5)\n");
    let _ = writeln!(
        s,
        "| program | 1 entry | 2 entries | 4 entries | 8 entries |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|");
    for c in rows {
        let _ = write!(s, "| {} |", c.name);
        for m in &c.lru_miss_pct {
            let _ = write!(s, " {m:.3}% |");
        }
        let _ = writeln!(s);
    }
    for (p, row) in SEED_LRU {
        let _ = writeln!(s, "| *seed 003: {p}* | {row} |");
    }

    let _ = writeln!(s, "\n### Most locked classes\n");
    for c in rows {
        let list: Vec<String> = c
            .top_classes
            .iter()
            .map(|(k, v)| format!("`{k}` {:.1}%", pct(*v, c.lock_ops)))
            .collect();
        let _ = writeln!(s, "- {}: {}", c.name, list.join(", "));
    }
    s
}

/// `objmon-bench trace FILE...`: prints the characterization of each trace (named after its
/// file stem) as Markdown. Returns the process exit code.
pub fn cli_trace(paths: &[std::path::PathBuf]) -> i32 {
    let mut rows = Vec::new();
    for p in paths {
        match read(p) {
            Ok(t) => {
                let name = p.file_stem().map_or_else(
                    || p.display().to_string(),
                    |s| s.to_string_lossy().into_owned(),
                );
                if !t.complete {
                    eprintln!("note: {} has no END record (cut short)", p.display());
                }
                rows.push(characterize(&name, &t));
            }
            Err(e) => {
                eprintln!("{}: {e}", p.display());
                return 1;
            }
        }
    }
    print!("{}", render_markdown(&rows));
    0
}
