//! One section per seed paper's experiments: seed 000 (thin locks) Table 2, seed 002 (FABLE)
//! §5, the growth with the working set, seed 003 (CACAO) and seed 004 (tasuki) §5.1, and the
//! benches no seed has.

use super::results::Results;
use super::tables::{bars_of, cell, figure, num, param_table, ratio_text, series_of, wide_table};

use crate::doc::Block;
use crate::plot;
use crate::record::Record;
use crate::subject::{self};
use std::path::Path;

pub(super) fn seed000(d: &mut Vec<Block>, r: &Results, out: &Path) {
    d.push(Block::H(
        2,
        "Seed 000 (thin locks) §3.3: Table 2 micro-benchmarks".into(),
    ));
    d.push(Block::P(
        "ns per operation (lock+unlock pair, or call). NoSync and Call are the loops alone; \
         sol-* rows run the same loops with a no-op or bare-atomic 'lock'. Nested rows need a \
         reentrant lock (std-mutex is not)."
            .into(),
    ));
    wide_table(
        d,
        r,
        &[
            "no-sync",
            "sync",
            "nested-sync",
            "call",
            "call-sync",
            "nested-call-sync",
        ],
    );
    for (b, title) in [
        (
            "sync",
            "Figure 4 shape: Sync (ns per lock+unlock, whisker = min–max)",
        ),
        ("nested-sync", "Figure 4 shape: NestedSync"),
        ("call-sync", "Figure 4 shape: CallSync"),
        ("nested-call-sync", "Figure 4 shape: NestedCallSync"),
    ] {
        let file = format!("seed000-fig4-{b}.svg");
        let res = plot::bars(
            &out.join(&file),
            title,
            "ns per op",
            &bars_of(r, b, 0, |x| x),
        );
        figure(d, out, &file, title, res.map_err(|e| e.to_string()));
    }
    d.push(Block::H(3, "MultiSync n (working set of n objects)".into()));
    param_table(d, r, "multi-sync", "n");
    let file = "seed000-fig4-multisync.svg";
    let t = "Figure 4 shape: MultiSync — ns per lock+unlock vs working set (log-log)";
    let res = plot::lines(
        &out.join(file),
        t,
        "objects in the working set",
        "ns per lock+unlock",
        &series_of(r, "multi-sync"),
        true,
    );
    figure(d, out, file, t, res.map_err(|e| e.to_string()));
    d.push(Block::H(3, "Threads n (n threads on one object)".into()));
    param_table(d, r, "threads", "threads");
    let file = "seed000-fig4-threads.svg";
    let t = "Figure 4 shape: Threads — ns per lock+unlock (wall / all pairs) vs threads";
    let res = plot::lines(
        &out.join(file),
        t,
        "threads",
        "ns per lock+unlock",
        &series_of(r, "threads"),
        false,
    );
    figure(d, out, file, t, res.map_err(|e| e.to_string()));
}

/// A table with one row per subject and one column per parameter value: the figure at that
/// value ÷ the same row's figure at the smallest value (1.00× everywhere = a flat curve).
fn growth_table(d: &mut Vec<Block>, r: &Results, bench: &str, pname: &str) {
    let params = r.params_of(bench);
    let Some(&first) = params.first() else {
        return;
    };
    let mut header = vec![format!("row \\ {pname}, ÷ {pname}={first}")];
    header.extend(params.iter().map(u64::to_string));
    let rows = r
        .rows_of(bench)
        .iter()
        .map(|row| {
            let mut v = vec![row.clone()];
            v.extend(
                params
                    .iter()
                    .map(|&p| ratio_text(r.ratio_self(bench, row, p, first))),
            );
            v
        })
        .collect();
    d.push(Block::Table(header, rows));
}

/// Cost per operation as the number of objects grows.
pub(super) fn growth(d: &mut Vec<Block>, r: &Results, out: &Path) {
    if r.rows_of("multi-sync").is_empty() && r.rows_of("cloud-growth").is_empty() {
        return;
    }
    d.push(Block::H(2, "Growth: cost per operation vs objects".into()));
    d.push(Block::P(
        "Does a lock+unlock cost the same with 1 object as with 10^6? MultiSync (one thread, \
         n objects locked in turn; the figures are the MultiSync table above) and cloud-growth \
         (Cloud's threads locking random objects of an n-object cloud, shorter runs than \
         Cloud's; with few objects the threads contend, so the left end measures contention, \
         not size; its sizes and rows run round by round). Both time a working set in its \
         steady state: every MultiSync object gets 16 lock+unlock pairs and every cloud 8 \
         acquisitions per object before the timed repetitions, so FABLE's learning and KKO's \
         revocations of a fresh object are not counted here (AllocLock and Cloud's \
         per-repetition table show them). Cells: the row's figure at n ÷ its figure at the \
         smallest n, from this run's medians. Above 1× at large n: cache and TLB misses on the \
         headers (and, for protocols with side tables, on the tables)."
            .into(),
    ));
    d.push(Block::H(3, "MultiSync n, ÷ n = 1".into()));
    growth_table(d, r, "multi-sync", "n");
    if r.rows_of("cloud-growth").is_empty() {
        return;
    }
    d.push(Block::H(
        3,
        "cloud-growth n (ns per acquisition, all threads)".into(),
    ));
    param_table(d, r, "cloud-growth", "n");
    growth_table(d, r, "cloud-growth", "n");
    let file = "growth-cloud.svg";
    let t = "cloud-growth — ns per acquisition vs objects in the cloud (log-log)";
    let res = plot::lines(
        &out.join(file),
        t,
        "objects in the cloud",
        "ns per acquisition",
        &series_of(r, "cloud-growth"),
        true,
    );
    figure(d, out, file, t, res.map_err(|e| e.to_string()));
}

/// Cloud's repetitions in order, the warm-up first, with the revocations each made: a fresh
/// cloud's start-up cost is visible only there.
pub(super) fn cloud_reps_table(d: &mut Vec<Block>, log: &[crate::bench::CloudReps]) {
    let Some(n) = log.iter().map(|c| c.reps.len()).max() else {
        return;
    };
    d.push(Block::P(
        "**Cloud per repetition.** Each row's repetitions in the order they ran on one cloud: \
         the first is the untimed warm-up on the fresh cloud (left out of the median above), \
         where every object is new: FABLE's learn mode decides there (each object's first two \
         acquisitions are clear → learn and, by another thread, learn → thin), and KKO biases. \
         Cells read ns per acquisition · bias revocations during the repetition. `fable` counts \
         each object's own acquisitions before biasing it (`LearnRule::PerObject`); seed 002 \
         §3.1's per-thread random counting (`fable-seed`'s rule) biased about one object in 40 \
         in the first repetition and revoked every one of them (`cargo run --release -p objmon \
         --example cloud_probe -- rules` measures both rules side by side)."
            .into(),
    ));
    let mut head = vec!["row".to_string()];
    head.extend((1..=n).map(|i| {
        if i == 1 {
            "1 (warm-up)".to_string()
        } else {
            i.to_string()
        }
    }));
    let rows = log
        .iter()
        .map(|c| {
            let mut row = vec![c.row.clone()];
            row.extend(c.reps.iter().map(|r| match r.revocations {
                Some(v) => format!("{} · {v}", num(r.ns)),
                None => num(r.ns),
            }));
            row.resize(n + 1, String::new());
            row
        })
        .collect();
    d.push(Block::Table(head, rows));
}

pub(super) fn seed002(d: &mut Vec<Block>, r: &Results, out: &Path) {
    d.push(Block::H(2, "Seed 002 (FABLE) §5: pathologies".into()));
    d.push(Block::H(3, "Cloud (Figure 8)".into()));
    d.push(Block::P(
        "Threads randomly lock objects of a 1,000,000-object cloud for a fixed time; \
         throughput in million acquisitions per second (all threads), higher is better."
            .into(),
    ));
    let bars = bars_of(r, "cloud", 0, |ns| 1e3 / ns);
    let rows = bars
        .iter()
        .map(|b| {
            vec![
                b.0.clone(),
                format!("{} [{}–{}]", num(b.1), num(b.2), num(b.3)),
                cell(r.get("cloud", &b.0, 0)),
            ]
        })
        .collect();
    d.push(Block::Table(
        vec![
            "row".into(),
            "M acquisitions/s".into(),
            "ns per acquisition".into(),
        ],
        rows,
    ));
    let file = "seed002-fig8-cloud.svg";
    let t = "Figure 8 shape: Cloud — million acquisitions per second (higher is better)";
    let res = plot::bars(&out.join(file), t, "M acquisitions / s", &bars);
    figure(d, out, file, t, res.map_err(|e| e.to_string()));
    cloud_reps_table(d, &r.cloud);

    d.push(Block::H(3, "ProdCons (Figure 11)".into()));
    d.push(Block::P(
        "Producer allocates, locks once, enqueues (bounded queue of 1024); consumer dequeues, \
         locks once, drops. ns per object, lower is better."
            .into(),
    ));
    wide_table(d, r, &["prod-cons"]);
    let file = "seed002-fig11-prodcons.svg";
    let t = "Figure 11 shape: ProdCons — ns per object, log scale (lower is better)";
    let res = plot::bars_log(
        &out.join(file),
        t,
        "ns per object",
        &bars_of(r, "prod-cons", 0, |x| x),
    );
    figure(d, out, file, t, res.map_err(|e| e.to_string()));

    d.push(Block::H(3, "AllocLock (Figure 16)".into()));
    d.push(Block::P(
        "Allocate an object, lock it k times (empty critical section), drop it (the GC hook \
         `reclaim` runs for objmon rows). ns per iteration."
            .into(),
    ));
    let knobs = subject::knobs();
    for (name, k) in &knobs {
        let values: Vec<String> = k.values.iter().map(u32::to_string).collect();
        d.push(Block::P(format!(
            "**Knob sweep.** `{name}` has a tuning knob, `{}` (seed {}), so each of its values \
             runs as an extra row `{}` (plain `{name}` runs the default, {}). Values: {} — the \
             same in the quick and the full plan (the quick plan thins out k instead). The \
             seed (§5.3): with learn limit N an object biases after N + 1 acquisitions by one \
             thread on average; objects locked only a few times never leave learn mode, so \
             FABLE is 'up to 50% slower than thin locks'; and k = N resonates with the \
             per-thread learnCount, so that every other object biases on its second \
             acquisition. `{name}` counts each object's own acquisitions instead \
             (`LearnRule::PerObject`, see `fable.rs`): an object biases exactly on its \
             (N + 1)-th acquisition, so k ≤ N biases nothing and k = N does not resonate (the \
             resonance row below should read ≈ 1×); seed 002's rule is `fable-seed`'s. At \
             k = 1 the knob cannot matter (the only acquisition is clear → learn), so the \
             spread of that column across the {name} rows is this run's noise between figures.",
            k.name,
            k.seed,
            subject::knob_family(name, k),
            k.default,
            values.join(", ")
        )));
    }
    param_table(d, r, "alloc-lock", "k");
    slowdown_table(d, r, "alloc-lock", "thin", &knobs);
    let file = "seed002-fig16-alloclock.svg";
    let t = "Figure 16 shape: AllocLock — ns per iteration vs k (knob sweeps: the next charts)";
    // The knob sweeps' rows (20 curves) have their own charts below, beside thin and biased
    // as in the seed's figure; here they would bury the bias family's panel.
    let all_but_sweeps: Vec<plot::Series> = series_of(r, "alloc-lock")
        .into_iter()
        .filter(|s| !s.0.contains('['))
        .collect();
    let res = plot::lines(
        &out.join(file),
        t,
        "k (locks per allocated object)",
        "ns per iteration",
        &all_but_sweeps,
        false,
    );
    figure(d, out, file, t, res.map_err(|e| e.to_string()));
    // The seed's own Figure 16 shows only thin, simple biased and the learn-limit sweep.
    for (name, k) in &knobs {
        let family = subject::knob_family(name, k);
        let mut wanted = vec!["thin".to_string(), "biased".into(), name.to_string()];
        wanted.extend(k.values.iter().map(|&v| subject::knob_row(name, k, v)));
        let series: Vec<plot::Series> = series_of(r, "alloc-lock")
            .into_iter()
            .filter(|s| wanted.contains(&s.0))
            .collect();
        if series.iter().all(|s| !s.0.starts_with(&format!("{name}["))) {
            continue;
        }
        let file = format!("seed002-fig16-alloclock-{name}-{}.svg", k.name);
        let t = format!("Figure 16: AllocLock — thin, biased and {family}, ns per iteration vs k");
        let res = plot::lines(
            &out.join(&file),
            &t,
            "k (locks per allocated object)",
            "ns per iteration",
            &series,
            false,
        );
        figure(d, out, &file, &t, res.map_err(|e| e.to_string()));
    }
}

/// Figure 16's question as a table: each biased row (the knob families' rows and `biased`)
/// divided by `base` at each parameter, from this run's medians.
fn slowdown_table(
    d: &mut Vec<Block>,
    r: &Results,
    bench: &str,
    base: &str,
    knobs: &[(&'static str, objmon::vm::Knob)],
) {
    let params = r.params_of(bench);
    let mut rows_wanted: Vec<String> = vec!["biased".into()];
    for (name, k) in knobs {
        rows_wanted.push(name.to_string());
        rows_wanted.extend(k.values.iter().map(|&v| subject::knob_row(name, k, v)));
    }
    let rows: Vec<Vec<String>> = rows_wanted
        .iter()
        .filter(|row| params.iter().any(|&p| r.get(bench, row, p).is_some()))
        .map(|row| {
            let mut v = vec![row.clone()];
            v.extend(params.iter().map(|&p| {
                r.ratio(bench, row, base, p)
                    .map_or("—".into(), |x| format!("{x:.2}×"))
            }));
            v
        })
        .collect();
    if rows.is_empty() || r.rows_of(bench).iter().all(|x| x != base) {
        return;
    }
    d.push(Block::P(format!(
        "Slow-down against `{base}` (row ÷ {base}, medians of this run; above 1× is slower):"
    )));
    let mut header = vec![format!("row ÷ {base} \\ k")];
    header.extend(params.iter().map(u64::to_string));
    d.push(Block::Table(header, rows));
}

pub(super) fn seed003(d: &mut Vec<Block>, r: &Results) {
    d.push(Block::H(
        2,
        "Seed 003 (CACAO) Motivation / Results: mutex test and tree test".into(),
    ));
    d.push(Block::P(
        "mutex test: a synchronized method called 300,000 times; tree test: a balanced binary \
         tree of 65,535 nodes traversed through synchronized methods (the seed: 50 times). The \
         seed's Table 'Overhead for calling synchronized methods' gives run times and the call \
         cost (synchronized − plain, per call); here the plain version is the sol-empty row \
         (the same code with a no-op lock)."
            .into(),
    ));
    let base_m = r.get("mutex-test", "sol-empty", 0).map(|x| x.median);
    let base_t = r.get("tree-test", "sol-empty", 0).map(|x| x.median);
    let mut rows = Vec::new();
    for row in r.rows_of("mutex-test") {
        let m = r.get("mutex-test", &row, 0);
        let t = r.get("tree-test", &row, 0);
        let cost = |x: Option<&Record>, b: Option<f64>| match (x, b) {
            (Some(x), Some(b)) => format!("{:.1}", x.median - b),
            _ => "—".into(),
        };
        rows.push(vec![
            row.clone(),
            m.map_or("—".into(), |x| {
                format!("{:.2}", x.median * 300_000.0 / 1e6)
            }),
            cost(m, base_m),
            t.map_or("—".into(), |x| {
                format!("{:.1}", x.median * 65_535.0 * 50.0 / 1e6)
            }),
            cost(t, base_t),
        ]);
    }
    d.push(Block::Table(
        vec![
            "row".into(),
            "mutex test: ms for 300,000 calls".into(),
            "call cost ns".into(),
            "tree test: ms for 50 traversals (scaled)".into(),
            "call cost ns".into(),
        ],
        rows,
    ));
    d.push(Block::P(
        "The seed (DEC 21064A, 289 MHz): CACAO mutex test 0.28 s plain vs 0.40 s synchronized \
         (call cost 0.40 µs); tree test 1.46 s vs 4.71 s (0.99 µs); JDKs of the day 1.2–37 µs."
            .into(),
    ));
    wide_table(d, r, &["mutex-test", "tree-test"]);
}

pub(super) fn seed004(d: &mut Vec<Block>, r: &Results, out: &Path) {
    d.push(Block::H(
        2,
        "Seed 004 (tasuki lock) §5.1: the system monitor".into(),
    ));
    d.push(Block::P(
        "Seed setup: one thread waits on the object (which forces the fat monitor where a \
         protocol has one), another calls a synchronized method on it, uncontended; ns per \
         call. The syslock-* rows take the bare system lock instead: the single-atomic tasuki \
         lock (objmon's default release, Figure 7 with the suspender's membarrier; the seed's \
         Figure 7 and Figure 5) against a double-atomic futex lock with the same spin."
            .into(),
    ));
    wide_table(d, r, &["system-monitor"]);
    let file = "seed004-system-monitor.svg";
    let t = "Seed 004 Table 2 shape: uncontended system-monitor path, ns per call";
    let res = plot::bars(
        &out.join(file),
        t,
        "ns per call",
        &bars_of(r, "system-monitor", 0, |x| x),
    );
    figure(d, out, file, t, res.map_err(|e| e.to_string()));
}

pub(super) fn other(d: &mut Vec<Block>, r: &Results) {
    if r.rows_of("wait-notify").is_empty() {
        return;
    }
    d.push(Block::H(
        2,
        "Wait / notify hand-over (not in the seeds)".into(),
    ));
    d.push(Block::P(
        "Two threads pass a turn back and forth with wait and notifyAll; ns per hand-over.".into(),
    ));
    wide_table(d, r, &["wait-notify"]);
}
