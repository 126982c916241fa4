//! Monitor events in the bench: `objmon-bench record` (a bench's workload run with
//! `objmon::events` on, written as a Chrome / Perfetto trace) and the report's "Monitor
//! events" section (a timeline picture, enter / wait latencies per protocol, the cost of
//! events on).
//!
//! Owns: the `record` command (its checks and its output, [`record_cli`]) and the threshold
//! argument's parsing ([`parse_threshold`]). The parts, each with its own contract:
//! - `recording.rs`: running a workload on a protocol with a `Recorder` on its runtime;
//! - `chrome.rs`: a run as trace-event JSON (tracks, slices, instants, flows);
//! - `figures.rs`: runs as an SVG timeline;
//! - `section.rs`: the report's section.
//!
//! `record --bench B --protocol P --trace FILE [--threshold D] [--threads N] [--ops K]`:
//! B is `threads` or `prod-cons` (`recording.rs` says how each runs), P a protocol of the
//! catalog, N threads (default 4; prod-cons at least 2), K operations per thread (objects
//! per producer for prod-cons; default per bench), D the threshold of enters and waits (a
//! human duration, `1ms`, `250us`; default 0: every event). Bad input is a usage error
//! (exit 2); a file that cannot be written, exit 1. On success one line on stdout: the file,
//! the events by kind, the flows and the tracks.

mod chrome;
mod figures;
mod recording;
mod section;
#[cfg(test)]
mod tests;

pub use recording::{Events, Workload};
pub use section::{section, Sizes};

use crate::cli::{check_name, usage_error};
use clap::error::ErrorKind;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// Threads of a `record` run unless `--threads` is given.
pub const DEFAULT_THREADS: usize = 4;

/// Most threads `record` runs (a trace of more tracks is not read by eye).
pub const MAX_THREADS: u64 = 256;

/// Most operations per thread `record` runs.
pub const MAX_OPS: u64 = crate::bench::MAX_OBJECTS;

/// `--threshold`: a human duration (`1ms`, `250us`, `2s`), or `0`.
pub fn parse_threshold(s: &str) -> Result<Duration, String> {
    if s.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    humantime::parse_duration(s.trim())
        .map_err(|e| format!("{e} (a duration such as 1ms, 250us or 2s, or 0)"))
}

/// `objmon-bench record`: runs and writes the trace; exits the process on bad input.
pub fn record_cli(
    bench: &str,
    protocol: &str,
    trace: &Path,
    threshold: Option<Duration>,
    threads: Option<u64>,
    ops: Option<u64>,
) {
    let names: Vec<&str> = Workload::ALL.iter().map(|w| w.name()).collect();
    let Some(workload) = Workload::by_name(bench) else {
        usage_error(
            "record",
            ErrorKind::InvalidValue,
            crate::runner::unknown("bench", bench, &names, "; record runs these"),
        )
    };
    check_name("record", "protocol", protocol, &objmon::vm::names(), "");
    let threads = threads.map_or(DEFAULT_THREADS, |n| n as usize);
    if threads < workload.min_threads() {
        usage_error(
            "record",
            ErrorKind::ValueValidation,
            format!(
                "--threads {threads}: {} runs at least {} threads (a producer and a consumer)",
                workload.name(),
                workload.min_threads()
            ),
        );
    }
    let spec = recording::Spec {
        workload,
        threads,
        ops: ops.unwrap_or_else(|| workload.default_ops()),
        events: Events::EnterWait(threshold.unwrap_or(Duration::ZERO)),
    };
    let run = recording::run(protocol, spec).expect("checked against the catalog");
    let (json, summary) = chrome::trace(&run);
    let written = std::fs::File::create(trace).and_then(|f| {
        let mut w = std::io::BufWriter::new(f);
        serde_json::to_writer(&mut w, &json).map_err(std::io::Error::other)?;
        w.flush()
    });
    if let Err(e) = written {
        eprintln!("error: could not write {}: {e}", trace.display());
        std::process::exit(1);
    }
    let kinds: Vec<String> = summary
        .by_kind
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    println!(
        "wrote {}: {} on {}, {} threads, {:.1} ms; {}; {} flows, {} tracks (open it in \
         ui.perfetto.dev)",
        trace.display(),
        workload.name(),
        run.protocol,
        threads,
        run.elapsed.as_secs_f64() * 1e3,
        if kinds.is_empty() {
            "no events".to_string()
        } else {
            kinds.join(", ")
        },
        summary.flows,
        summary.tracks
    );
}
