//! `objmon-bench report`: runs everything, then writes `report.md`, `report.html`, the SVG
//! figures and `results.json` into one directory. This file assembles the sections in order
//! ([`write()`]) and names the rows a run selects; each section lives in its own file.
//!
//! Every ratio in the report is computed from figures of this one run; the papers' own numbers
//! appear only as quoted text beside them.

mod claims;
mod first_screen;
mod machine;
mod results;
mod seeds;
mod space;
mod summary;
mod tables;
mod targets;
#[cfg(test)]
mod tests;

use claims::claims;
use first_screen::first_screen;
pub use machine::{loadavg, machine, Machine};
use results::Results;
use seeds::{growth, other, seed000, seed002, seed003, seed004};
use space::{memory_section, space_section};
pub use space::{space, Space};
use summary::{row_legend, summary};
pub use tables::num;
use targets::{targets_section, user_loop_section};

use crate::bench::{Plan, ALL};
use crate::doc::{self, Block};
use crate::java::JavaOutcome;
use crate::runner::{Outcome, Selection};
use crate::subject::{self, Kind};
use crate::syslock;
use crate::userloop;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Writes the report; returns the paths of the Markdown and HTML files.
#[allow(clippy::too_many_arguments)]
pub fn write(
    out_dir: &Path,
    sel: &Selection,
    rust: &Outcome,
    java: &JavaOutcome,
    space: &[Space],
    memory: &[crate::memory::MemRow],
    machine: &Machine,
    load: (Option<String>, Option<String>),
    elapsed: Duration,
) -> std::io::Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(out_dir)?;
    let res = Results {
        records: rust
            .records
            .iter()
            .chain(java.records.iter())
            .cloned()
            .collect(),
        cloud: crate::bench::cloud_reps(),
        threads: crate::bench::threads_reps(),
    };
    let plan = &sel.plan;
    let mut d: Vec<Block> = Vec::new();
    d.push(Block::H(1, "objmon-bench report".into()));
    d.push(Block::P(format!(
        "{} plan: every figure is the median of {} repetitions after an untimed warm-up, \
         cells read `median [min–max]`; the run took {:.0} s, load average {} at start and {} \
         at end (see Noise below).",
        if plan.quick { "Quick" } else { "Full" },
        plan.reps,
        elapsed.as_secs_f64(),
        load.0.as_deref().unwrap_or("?"),
        load.1.as_deref().unwrap_or("?")
    )));
    first_screen(&mut d, &res, out_dir);
    d.push(Block::H(2, "This run".into()));
    d.push(Block::P(
        "The seed papers' experiments over every objmon protocol, the speed-of-light rows, the \
         anchors (std-mutex, parking-lot) and every HotSpot locking mode found, in one run."
            .into(),
    ));
    d.push(Block::P(
        "**Noise.** These figures come from a shared machine on which other jobs may run \
         (the load averages above); single figures can be off by tens of percent, so read \
         medians, look at the [min–max] spread, and trust ratios between rows of this run \
         more than absolute numbers. Multi-threaded figures with more threads than cores \
         measure the scheduler as much as the lock. Every claim below gives its ratio as \
         `median (min–max)` over the repetitions; where the range crosses the claim's \
         threshold, or the repetitions spread over more than 25% of their median (of the \
         per-round ratios, or of either row's figures), the claim reads 'repetitions \
         disagree' instead of a verdict: rerun it (or run the full report) before believing \
         either way."
            .into(),
    ));
    summary(&mut d, &res);
    d.push(Block::H(2, "Machine".into()));
    d.push(Block::List(machine.lines.clone()));
    d.push(Block::H(2, "Rows".into()));
    d.push(Block::List(row_legend(java)));

    claims(&mut d, &res);
    user_loop_section(&mut d, &res);
    targets_section(&mut d, &res);
    seed000(&mut d, &res, out_dir);
    seed002(&mut d, &res, out_dir);
    growth(&mut d, &res, out_dir);
    seed003(&mut d, &res);
    seed004(&mut d, &res, out_dir);
    other(&mut d, &res);
    space_section(&mut d, space);
    memory_section(&mut d, memory);
    let profile_time = Duration::from_millis(if plan.quick { 200 } else { 1000 });
    crate::profile::section(
        &mut d,
        &crate::profile::run(profile_time, None),
        profile_time,
    );
    crate::contended::section(&mut d, plan.quick);
    crate::realprog::section(&mut d, plan.quick);
    crate::events::section(
        &mut d,
        out_dir,
        if plan.quick {
            crate::events::Sizes::quick()
        } else {
            crate::events::Sizes::full()
        },
    );

    d.push(Block::H(2, "Skipped and notes".into()));
    let mut notes: Vec<String> = rust
        .skips
        .iter()
        .map(|s| format!("{} on {}: skipped ({})", s.bench, s.row, s.reason))
        .collect();
    notes.dedup();
    notes.extend(java.notes.iter().cloned());
    if notes.is_empty() {
        notes.push("nothing skipped".into());
    }
    d.push(Block::List(notes));
    d.push(Block::P(
        "All figures, one JSON object per line: `results.json` (the contract of \
         `objmon-bench run --format json`)."
            .into(),
    ));

    let json: String = res
        .records
        .iter()
        .map(|r| serde_json::to_string(r).expect("record serializes") + "\n")
        .collect();
    std::fs::write(out_dir.join("results.json"), json)?;
    let md = out_dir.join("report.md");
    let html = out_dir.join("report.html");
    std::fs::write(&md, doc::markdown(&d))?;
    std::fs::write(&html, doc::html("objmon-bench report", &d))?;
    Ok((md, html))
}

/// The selection `report` runs: every bench, every row.
pub fn selection(quick: bool, reps: Option<usize>) -> Selection {
    Selection {
        benches: ALL.to_vec(),
        rows: Vec::new(),
        params: None,
        threads: None,
        plan: Plan::new(quick, reps),
    }
}

/// Names of every row the Rust side can run (for `list`).
pub fn all_rows() -> Vec<(String, &'static str)> {
    let mut v: Vec<(String, &'static str)> = subject::subject_names()
        .into_iter()
        .map(|(n, k)| (n.to_string(), k.as_str()))
        .collect();
    for (name, k) in subject::knobs() {
        v.extend(k.values.iter().map(|&x| {
            (
                subject::knob_row(name, &k, x),
                "protocol, knob sweep (benches that sweep knobs: alloc-lock)",
            )
        }));
    }
    v.extend(
        syslock::ROWS
            .iter()
            .map(|r| (r.name.to_string(), Kind::SystemLock.as_str())),
    );
    v.extend(
        userloop::names()
            .into_iter()
            .map(|n| (n, "user-loop bench only: the row in the loop a user writes")),
    );
    v
}
