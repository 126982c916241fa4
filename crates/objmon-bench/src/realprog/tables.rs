//! The section's tables: the seeds' characterization of each program beside the seeds' own
//! rows, the replay's ns per operation, the speed-ups over a base row, and FABLE against
//! biased and thin.

use super::{Replayed, Spread};

use crate::doc::Block;
use crate::trace::{self, ReplayResult, DEPTH_BUCKETS, LRU_SIZES};

/// Seed 000 Table 1 and Figure 3, seed 003 Tables 2–5, with the seeds' rows beside ours.
pub(super) fn characterization(d: &mut Vec<Block>, rs: &[Replayed]) {
    let pct = |a: u64, b: u64| {
        if b == 0 {
            0.0
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    d.push(Block::H(
        3,
        "Programs (seed 000 Table 1, seed 003 Table 2)".into(),
    ));
    let mut rows: Vec<Vec<String>> = rs
        .iter()
        .map(|r| {
            let c = &r.chars;
            vec![
                c.name.clone(),
                c.threads.to_string(),
                c.allocations.map_or("—".into(), |a| a.to_string()),
                c.synchronized_objects.to_string(),
                c.lock_ops.to_string(),
                format!("{:.1}", c.ops_per_object),
                c.multi_thread_objects.to_string(),
                c.owner_changes.to_string(),
                format!("{} ({})", c.max_held, c.max_held_one_thread),
            ]
        })
        .collect();
    for (src, objs, sync, ops, per) in trace::SEED_TABLE1 {
        let mut row = vec![format!("({src})"), String::new(), objs.to_string()];
        row.extend([sync, ops, per].map(|s| s.to_string()));
        row.extend([String::new(), String::new(), String::new()]);
        rows.push(row);
    }
    d.push(Block::Table(
        [
            "program",
            "threads",
            "allocations",
            "sync'd objects",
            "lock ops",
            "ops / sync'd object",
            "objects locked by > 1 thread",
            "owner changes",
            "most held at once (one thread)",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    ));
    d.push(Block::P(
        "Allocations: allocation bytecodes run in instrumented classes (a lower bound of the \
         objects allocated). Owner changes: acquisitions of an unlocked object by a thread \
         other than its previous locker (what a biased lock revokes). Seed 003: Jigsaw held at \
         most 25 monitors at once, javac 5."
            .into(),
    ));

    d.push(Block::H(
        3,
        "Nesting depth of lock operations (seed 000 Figure 3)".into(),
    ));
    let mut rows: Vec<Vec<String>> = rs
        .iter()
        .map(|r| {
            let c = &r.chars;
            let h = &c.depth_histogram;
            let deep: u64 = h.iter().skip(3).sum();
            vec![
                c.name.clone(),
                format!("{:.1}%", c.unlocked_pct),
                format!("{:.2}%", pct(h.get(1).copied().unwrap_or(0), c.lock_ops)),
                format!("{:.2}%", pct(h.get(2).copied().unwrap_or(0), c.lock_ops)),
                format!("{:.2}%", pct(deep, c.lock_ops)),
                c.max_depth.to_string(),
            ]
        })
        .collect();
    rows.push(vec![
        "(seed 000: 21 programs)".into(),
        "median 80%, at least 45%".into(),
        "most of the rest".into(),
        String::new(),
        String::new(),
        "≤ 4".into(),
    ]);
    const { assert!(DEPTH_BUCKETS >= 4) };
    d.push(Block::Table(
        [
            "program",
            "on an unlocked object (First)",
            "depth 2",
            "depth 3",
            "depth ≥ 4",
            "max depth",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    ));

    d.push(Block::H(
        3,
        "CACAO's monitor table and an LRU monitor cache (seed 003 Tables 3–5)".into(),
    ));
    let mut rows: Vec<Vec<String>> = rs
        .iter()
        .map(|r| {
            let k = &r.chars.cacao;
            vec![
                r.name.clone(),
                k.enter_calls.to_string(),
                format!("{:.3}%", k.enter_slow_pct()),
                k.exit_calls.to_string(),
                format!("{:.3}%", k.exit_slow_pct()),
            ]
        })
        .collect();
    for (p, row) in trace::SEED_CACAO {
        let c: Vec<&str> = row.split(" | ").collect();
        rows.push(vec![
            format!("(seed 003: {p})"),
            c[0].into(),
            c[4].into(),
            c[5].into(),
            c[8].into(),
        ]);
    }
    d.push(Block::Table(
        [
            "program",
            "monitorenters",
            "slow enters (not the first chain entry)",
            "monitorexits",
            "slow exits",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    ));
    let mut rows: Vec<Vec<String>> = rs
        .iter()
        .map(|r| {
            let mut row = vec![r.name.clone()];
            row.extend(r.chars.lru_miss_pct.iter().map(|m| format!("{m:.3}%")));
            row
        })
        .collect();
    for (p, row) in trace::SEED_LRU {
        let mut cells = vec![format!("(seed 003: {p})")];
        cells.extend(row.split(" | ").map(String::from));
        rows.push(cells);
    }
    let mut head = vec!["program: LRU miss rate with".to_string()];
    head.extend(
        LRU_SIZES
            .iter()
            .map(|n| format!("{n} entr{}", if *n == 1 { "y" } else { "ies" })),
    );
    d.push(Block::Table(head, rows));
}

/// Wall ns per operation of every protocol and anchor on every program.
pub(super) fn replay_table(d: &mut Vec<Block>, rs: &[Replayed]) {
    d.push(Block::H(3, "Replay: ns per operation".into()));
    d.push(Block::List(
        rs.iter()
            .map(|r| {
                let bounded: u64 = r
                    .rows
                    .iter()
                    .flat_map(|(_, v)| v)
                    .map(|x| x.waits_bounded)
                    .sum();
                let errors: u64 = r.rows.iter().flat_map(|(_, v)| v).map(|x| x.errors).sum();
                format!(
                    "`{}`: {} threads, {} objects, {} operations replayed (unmatched \
                     operations dropped: {}; threads cut at a wait that never ended: {}; waits \
                     that reached the bound: {}; operations refused: {})",
                    r.name,
                    r.plan.threads.len(),
                    r.plan.objects,
                    r.plan.ops,
                    r.plan.unmatched,
                    r.plan.unended_waits,
                    bounded,
                    errors
                )
            })
            .collect(),
    ));
    let mut head = vec!["protocol".to_string()];
    head.extend(rs.iter().map(|r| format!("{}: wall ns/op", r.name)));
    head.extend(rs.iter().map(|r| format!("{}: inflations", r.name)));
    let rows = row_names(rs)
        .into_iter()
        .map(|n| {
            let mut row = vec![n.clone()];
            row.extend(rs.iter().map(|r| Spread::cell(r.ns_per_op(&n))));
            row.extend(rs.iter().map(|r| {
                let v = r
                    .runs(&n)
                    .map(|v| v.iter().filter_map(|x| x.inflations.map(|i| i as f64)));
                v.and_then(Spread::of)
                    .map_or("—".into(), |s| format!("{:.0}", s.median))
            }));
            row
        })
        .collect();
    d.push(Block::Table(head, rows));
    d.push(Block::P(
        "Wall ns/op: from the start barrier until the last thread finished, over the \
         operations replayed (lock, unlock, wait, notify). Inflations: median over the \
         replays; — for the anchors (`monitor` is objmon::Monitor<()> on the default \
         protocol's process-wide runtime, `std-mutex` std::sync::Mutex + Condvar, \
         `parking-lot` parking_lot::ReentrantMutex), which have no runtime counters of their \
         own."
            .into(),
    ));
}

/// Every protocol and anchor any program replayed, in catalog order.
fn row_names(rs: &[Replayed]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for r in rs {
        for (n, _) in &r.rows {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    names
}

/// Seed 000 Figure 5: each protocol's speed-up over `base` per program, and the median over
/// the programs.
pub(super) fn speedups(d: &mut Vec<Block>, rs: &[Replayed], base: &str, quote: &str) {
    d.push(Block::H(
        3,
        format!("Speed-up over `{base}` (seed 000 Figure 5)"),
    ));
    d.push(Block::P(format!(
        "`{base}`'s wall time per operation over each row's, paired replay by replay: median \
         [min–max] of the paired ratios (> 1: faster than `{base}`). The last column is the \
         median over the programs of their medians, with the programs' range. {quote}"
    )));
    let mut head = vec!["protocol".to_string()];
    head.extend(rs.iter().map(|r| r.name.clone()));
    head.push("median over programs".into());
    let rows = row_names(rs)
        .into_iter()
        .map(|n| {
            let per: Vec<Option<Spread>> = rs
                .iter()
                .map(|r| Spread::of(r.paired_speedups(&n, base)))
                .collect();
            let mut row = vec![n];
            row.extend(per.iter().map(|s| Spread::ratio_cell(*s)));
            row.push(Spread::ratio_cell(Spread::of(
                per.iter().flatten().map(|s| s.median),
            )));
            row
        })
        .collect();
    d.push(Block::Table(head, rows));
}

/// Seed 002 §5.2: time relative to thin of the biased protocols and FABLE on the
/// multi-threaded programs, and their geometric mean as seed 002 Figure 12 computes it.
pub(super) fn fable_vs_biased(d: &mut Vec<Block>, rs: &[Replayed]) {
    d.push(Block::H(
        3,
        "FABLE vs biased vs thin on the multi-threaded programs (seed 002 §5.2)".into(),
    ));
    let multi: Vec<&Replayed> = rs.iter().filter(|r| r.multi_threaded()).collect();
    if multi.is_empty() {
        d.push(Block::P(
            "No program here is multi-threaded (at least two threads each making 1% of the \
             lock operations, and an object locked by more than one thread)."
                .into(),
        ));
        return;
    }
    d.push(Block::P(
        "Programs in which at least two threads each make 1% or more of the lock operations \
         and some object is locked by more than one thread. Wall time per operation relative \
         to `thin` (lower is better), paired replay by replay: median [min–max]. The geometric mean follows seed 002 Figure 12: one \
         geometric mean over the programs per repetition, then their median and range. Seed \
         002 (16 DaCapo and SPECjvm98 programs, few shared locks): FABLE is typically 1% \
         slower than simple biased locking; biased locking is much faster than thin locking on \
         Core 2 and barely faster on Core i7, whose CAS is cheap."
            .into(),
    ));
    let protos: Vec<String> = row_names(rs)
        .into_iter()
        .filter(|n| n == "thin" || n.starts_with("biased") || n.starts_with("fable"))
        .collect();
    let mut rows = Vec::new();
    for r in &multi {
        for p in &protos {
            let rel: Vec<f64> = r
                .paired_speedups(p, "thin")
                .iter()
                .map(|s| 1.0 / s)
                .collect();
            let med = |f: &dyn Fn(&ReplayResult) -> Option<u64>| {
                Spread::of(
                    r.runs(p)
                        .unwrap_or_default()
                        .iter()
                        .filter_map(|x| f(x).map(|v| v as f64)),
                )
                .map_or("—".into(), |s| format!("{:.0}", s.median))
            };
            rows.push(vec![
                format!("{} ({} owner changes)", r.name, r.chars.owner_changes),
                p.clone(),
                Spread::cell(r.ns_per_op(p)),
                Spread::ratio_cell(Spread::of(rel)),
                med(&|x| x.revocations),
                med(&|x| x.inflations),
            ]);
        }
    }
    // One program's geometric mean is its own row again.
    for p in protos.iter().filter(|_| multi.len() > 1) {
        let per: Vec<Vec<f64>> = multi
            .iter()
            .map(|r| {
                r.paired_speedups(p, "thin")
                    .iter()
                    .map(|s| 1.0 / s)
                    .collect()
            })
            .collect();
        let reps = per.iter().map(Vec::len).min().unwrap_or(0);
        let geo = (0..reps)
            .map(|i| (per.iter().map(|v| v[i].ln()).sum::<f64>() / per.len() as f64).exp());
        rows.push(vec![
            format!("geometric mean over {} programs", multi.len()),
            p.clone(),
            String::new(),
            Spread::ratio_cell(Spread::of(geo)),
            String::new(),
            String::new(),
        ]);
    }
    d.push(Block::Table(
        [
            "program",
            "protocol",
            "wall ns/op",
            "time / thin",
            "revocations",
            "inflations",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    ));
}
