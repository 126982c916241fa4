//! The report's summary and its legend of rows: what each row is, and the headline figures
//! of this run.

use super::claims::headline_verdict;
use super::results::Results;
use super::tables::cell;

use crate::doc::Block;
use crate::java::JavaOutcome;
use crate::record::Record;
use crate::subject::{self};
use crate::syslock;
use objmon::vm::{Protocol, ProtocolVisitor};

pub(super) fn row_legend(java: &JavaOutcome) -> Vec<String> {
    let mut v = vec![
        "none — the loop alone (no-sync, call)".to_string(),
        "sol-empty — speed of light: locking does nothing (the benchmark's own loop)".into(),
        "sol-cas-store — speed of light: a bare compare-and-swap to lock, a release store to \
         unlock (single-atomic)"
            .into(),
        "sol-cas-cas — speed of light: compare-and-swap to lock and to unlock (double-atomic)"
            .into(),
        "sol-plain-pair — speed of light: load, compare, store to lock and again to unlock, no \
         locked instruction (the limit of a word only its owner writes: bias owner, nested); \
         excludes no other thread"
            .into(),
        "user-loop-<row>[-nested] — the row in the loop a user writes, all rows interleaved \
         round by round (bench user-loop only)"
            .into(),
    ];
    struct P(Vec<String>);
    impl ProtocolVisitor for P {
        fn visit<Q: Protocol>(&mut self) {
            self.0
                .push(format!("{} — objmon protocol: {}", Q::NAME, Q::SUMMARY));
        }
    }
    let mut p = P(Vec::new());
    objmon::vm::visit_all(&mut p);
    v.extend(p.0);
    for (name, k) in subject::knobs() {
        v.push(format!(
            "{} — {name} with its {} set to N (seed {}); only in the benches that sweep knobs \
             (alloc-lock)",
            subject::knob_family(name, &k),
            k.name,
            k.seed
        ));
    }
    v.push(
        "std-mutex — anchor: std::sync::Mutex<()> + Condvar (not reentrant; std's \
         ReentrantLock is unstable in Rust 1.95)"
            .into(),
    );
    v.push(
        "parking-lot — anchor: parking_lot::ReentrantMutex<()>; wait/notify through a side \
         parking_lot Mutex + Condvar"
            .into(),
    );
    v.push("parking-lot-mutex — anchor: parking_lot::Mutex<()> + Condvar (not reentrant)".into());
    for r in syslock::ROWS {
        v.push(format!(
            "{} — system lock only (seed 004 §5.1): {}",
            r.name, r.summary
        ));
    }
    for (jdk, m) in &java.modes {
        v.push(format!(
            "{} — {} ({}), flags: {} -XX:-EliminateLocks",
            m.row,
            jdk.version,
            m.summary,
            m.flags.join(" ")
        ));
    }
    v
}

/// The findings of this run in sentences: per headline bench, the fastest protocol of the
/// catalog (the README's protocol table: `objmon::protocol::names`) and where the anchors
/// stand; then the papers' headline ratios beside this run's, each with its range and said to
/// hold (within a factor 2 of the paper's), hold and more, not hold, or — where the range
/// crosses a factor-2 bound or the repetitions spread over more than 25% (see [`crate::claim`]) —
/// that the repetitions disagree.
pub(super) fn summary(d: &mut Vec<Block>, r: &Results) {
    let catalog = objmon::protocol::names();
    let mut items = Vec::new();
    for (bench, what) in [
        ("sync", "an uncontended lock+unlock"),
        ("nested-sync", "a nested, recursive lock+unlock"),
        (
            "cloud",
            "an acquisition with many threads over many objects",
        ),
        ("prod-cons", "an object handed from producer to consumer"),
        ("wait-notify", "a wait/notify hand-over"),
    ] {
        let param = r.params_of(bench).first().copied().unwrap_or(0);
        let mut protos: Vec<&Record> = r
            .records
            .iter()
            .filter(|x| x.bench == bench && x.param == param && catalog.contains(&&*x.protocol))
            .collect();
        protos.sort_by(|a, b| a.median.total_cmp(&b.median));
        let Some(best) = protos.first() else { continue };
        let next = protos
            .get(1)
            .map(|n| format!(", then {} ({} ns)", n.protocol, cell(Some(n))))
            .unwrap_or_default();
        let anchors: Vec<String> = ["std-mutex", "parking-lot"]
            .iter()
            .filter_map(|a| {
                Some((
                    r.get(bench, a, param)?,
                    r.claim(bench, a, &best.protocol, param)?,
                ))
            })
            .map(|(a, x)| {
                format!(
                    "{} {} ns ({} the time of {})",
                    a.protocol,
                    cell(Some(a)),
                    x.text(),
                    best.protocol
                )
            })
            .collect();
        let anchors = if anchors.is_empty() {
            String::new()
        } else {
            format!("; {}", anchors.join(", "))
        };
        items.push(format!(
            "{bench} ({what}): fastest protocol {} at {} ns{next}{anchors}.",
            best.protocol,
            cell(Some(best))
        ));
    }
    // (claim, the paper's ratio as a range, bench, numerator row, denominator row)
    let headline = [
        (
            "thin locks vs the monitor cache on Sync (seed 000)",
            (3.7, 3.7),
            "sync",
            "monitor-cache",
            "thin",
        ),
        (
            "thin locks vs always-fat locks on Sync (seed 000)",
            (1.8, 1.8),
            "sync",
            "fat",
            "thin",
        ),
        (
            "FABLE vs simple biased locking on Cloud (seed 002)",
            (8.0, 55.0),
            "cloud",
            "biased",
            "fable",
        ),
        (
            "FABLE vs biased locking on ProdCons (seed 002)",
            (6.0, 6.0),
            "prod-cons",
            "biased",
            "fable",
        ),
    ];
    for (what, (lo, hi), bench, num_row, den_row) in headline {
        let Some(ours) = r.claim(bench, num_row, den_row, 0) else {
            continue;
        };
        let paper = if lo == hi {
            format!("{lo}×")
        } else {
            format!("{lo}–{hi}×")
        };
        items.push(format!(
            "{what}: the paper's {paper}, this run's {} ({num_row} ÷ {den_row}{}): {}.",
            ours.text(),
            if ours.paired { ", paired by round" } else { "" },
            headline_verdict(&ours, lo, hi)
        ));
    }
    if items.is_empty() {
        return;
    }
    d.push(Block::H(2, "Summary of this run".into()));
    d.push(Block::List(items));
}
