//! `objmon-bench`: the seed papers' experiments over every objmon protocol, the speed-of-light
//! rows, the anchors (`std-mutex`, `parking-lot`) and every HotSpot locking mode on the
//! machine.
//!
//! - `objmon-bench run [--bench NAME]... [--protocol NAME]... [--threads N] [--param X]
//!   [--quick] [--format table|json|csv]` measures a selection and prints it;
//! - `objmon-bench report [--quick] [--out DIR] [--traces DIR]` runs everything and writes a
//!   Markdown and an HTML report with SVG figures (and `results.json`);
//! - `objmon-bench contended [--threads 2,4] [--cs …] [--between …] [--row …]` measures
//!   contended locking over threads × critical section × work between locks
//!   (see `contended.rs`);
//! - `objmon-bench record --bench B --protocol P --trace FILE [--threshold D] [--threads N]`
//!   runs a bench's workload with monitor events on and writes a Chrome / Perfetto trace
//!   (see `events/`);
//! - `objmon-bench list` names the benches and rows;
//! - `objmon-bench stress` runs random mixes of every monitor operation with invariants
//!   checked (see `stress.rs`).
//!
//! Benchmarks are generic over [`subject::Subject`]; protocols come only through
//! `objmon::vm::visit_all`, so a new protocol is measured with no change here.

#![warn(missing_docs)]

mod bench;
mod claim;
mod cli;
mod contended;
mod doc;
mod events;
mod java;
mod memory;
mod plot;
mod profile;
mod realprog;
mod record;
mod report;
mod runner;
mod stress;
mod subject;
mod syslock;
mod trace;
mod userloop;

use bench::{Bench, Plan, ALL, MAX_THREADS};
use clap::error::ErrorKind;
use clap::Parser;
use cli::{check_name, check_out_dir, check_run_args, usage_error, Cli, Command, Format};
use record::Record;
use runner::Selection;
use std::time::{Duration, Instant};

fn main() {
    // A reader that stops early (`objmon-bench list | head`) ends the process quietly, as it
    // does a C tool, instead of `println!` panicking on the broken pipe.
    // SAFETY: called first, before any thread exists; SIG_DFL is a valid disposition.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    match Cli::parse().command {
        Command::Run {
            benches,
            protocols,
            threads,
            params,
            quick,
            reps,
            format,
            no_java,
        } => {
            let named = !benches.is_empty();
            let benches = if benches.is_empty() {
                ALL.to_vec()
            } else {
                let names: Vec<&str> = ALL.iter().map(|b| b.name()).collect();
                benches
                    .iter()
                    .map(|n| {
                        Bench::by_name(n).unwrap_or_else(|| {
                            usage_error(
                                "run",
                                ErrorKind::InvalidValue,
                                runner::unknown(
                                    "bench",
                                    n,
                                    &names,
                                    "; `objmon-bench list` describes them",
                                ),
                            )
                        })
                    })
                    .collect()
            };
            let java_rows = || {
                if no_java {
                    return Vec::new();
                }
                java::find_jdks()
                    .iter()
                    .flat_map(java::modes)
                    .map(|m| m.row)
                    .collect()
            };
            let warnings = runner::check_rows(&protocols, &mut { java_rows })
                .unwrap_or_else(|e| usage_error("run", ErrorKind::InvalidValue, e));
            let sel = Selection {
                benches,
                rows: protocols,
                params: (!params.is_empty()).then(|| params.clone()),
                threads: threads.map(|n| n as usize),
                plan: Plan::new(quick, reps.map(|n| n as usize)),
            };
            check_run_args(&sel.benches, named, threads, &params, &sel);
            for w in &warnings {
                eprintln!("warning: {w}");
            }
            let rust = runner::run(&sel);
            let mut records = rust.records;
            let wants_java = sel.rows.is_empty() || sel.rows.iter().any(|r| r.starts_with("hot"));
            let mut notes: Vec<String> = rust
                .skips
                .iter()
                .map(|s| format!("{} on {}: skipped ({})", s.bench, s.row, s.reason))
                .collect();
            if !no_java && wants_java {
                let j = java::run(&sel);
                records.extend(j.records);
                notes.extend(j.notes);
            }
            sel.order(&mut records);
            // Empty because of a warned-about HotSpot filter (no JDK): the warning says why.
            if records.is_empty() && warnings.is_empty() {
                for n in notes {
                    eprintln!("note: {n}");
                }
                usage_error(
                    "run",
                    ErrorKind::InvalidValue,
                    "the selection measures nothing: no selected bench runs the selected rows \
                     (knob rows run in alloc-lock only, syslock-* in system-monitor, \
                     user-loop-* in user-loop; see `objmon-bench list`)",
                );
            }
            print_records(&records, format);
            for n in notes {
                eprintln!("note: {n}");
            }
        }
        Command::Report {
            quick,
            out,
            reps,
            no_java,
            traces,
        } => {
            check_out_dir(&out);
            realprog::set_traces_dir(traces.unwrap_or_else(|| realprog::DEFAULT_DIR.into()));
            let reps = reps.map(|n| n as usize);
            let t0 = Instant::now();
            let load0 = report::loadavg();
            let machine = report::machine();
            let sel = report::selection(quick, reps);
            eprintln!(
                "objmon-bench report ({} plan): {} rows x {} benches; progress on stderr",
                if quick { "quick" } else { "full" },
                report::all_rows().len(),
                sel.benches.len()
            );
            let rust = runner::run(&sel);
            let java = if no_java {
                java::JavaOutcome {
                    notes: vec!["HotSpot rows left out (--no-java).".into()],
                    ..Default::default()
                }
            } else {
                eprintln!("HotSpot: looking for JDKs ...");
                java::run(&sel)
            };
            let space = report::space(std::time::Duration::from_millis(if quick {
                100
            } else {
                500
            }));
            eprintln!("memory per object ...");
            let memory = memory::per_object(if quick { 200_000 } else { 1_000_000 });
            let load1 = report::loadavg();
            match report::write(
                &out,
                &sel,
                &rust,
                &java,
                &space,
                &memory,
                &machine,
                (load0, load1),
                t0.elapsed(),
            ) {
                Ok((md, html)) => {
                    print_summary(&rust.records, &java.records);
                    println!("wrote {}", md.display());
                    println!("wrote {}", html.display());
                    println!("took {:.0} s", t0.elapsed().as_secs_f64());
                }
                Err(e) => {
                    eprintln!("could not write the report into {}: {e}", out.display());
                    std::process::exit(1);
                }
            }
        }
        Command::Stress {
            protocol,
            seconds,
            threads,
            objects,
            seed,
            watchdog,
        } => {
            if protocol != "all" {
                check_name(
                    "stress",
                    "protocol",
                    &protocol,
                    &objmon::protocol::names(),
                    ", or all",
                );
            }
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let seed = seed.unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
            });
            let config = stress::StressConfig {
                protocol,
                duration: Duration::from_secs(seconds),
                threads: threads.map_or((4 * cores).max(8).min(MAX_THREADS as usize - 1), |n| {
                    n as usize
                }),
                objects: objects as usize,
                seed,
                watchdog: Duration::from_secs(watchdog),
            };
            println!(
                "stress: {} threads, {} objects, seed {}",
                config.threads, config.objects, seed
            );
            match stress::run(&config) {
                Ok(reports) => {
                    for (name, r) in reports {
                        println!(
                            "{name:<14} ok: {} lock ops, {} waits, {} tokens, {} interrupts, {} re-attaches, {} live monitors, {} hashes",
                            r.locks, r.waits, r.tokens, r.interrupts, r.reattaches, r.live_monitors, r.hashes
                        );
                    }
                }
                Err(v) => {
                    eprintln!("{v}");
                    std::process::exit(1);
                }
            }
        }
        Command::Profile { protocol, millis } => {
            if let Some(p) = &protocol {
                check_name("profile", "protocol", p, &objmon::protocol::names(), "");
            }
            let profiles = profile::run(Duration::from_millis(millis), protocol.as_deref());
            let (head, rows) = profile::rows(&profiles);
            println!("{}", head.join(" | "));
            for r in rows {
                println!("{}", r.join(" | "));
            }
        }
        Command::Contended {
            threads,
            cs,
            between,
            rows,
            millis,
            quick,
            reps,
            format,
        } => {
            fn once<T: PartialEq>(arg: &str, xs: &[T], name: impl Fn(&T) -> String) {
                if let Some((_, x)) = xs.iter().enumerate().find(|&(i, x)| xs[..i].contains(x)) {
                    usage_error(
                        "contended",
                        ErrorKind::ValueValidation,
                        format!("--{arg} {} given twice", name(x)),
                    );
                }
            }
            once("threads", &threads, u64::to_string);
            once("cs", &cs, |c| c.name().to_string());
            once("between", &between, |b| b.name().to_string());
            once("row", &rows, |r| r.name().to_string());
            fn or<T: Clone>(v: Vec<T>, all: &[T]) -> Vec<T> {
                if v.is_empty() {
                    all.to_vec()
                } else {
                    v
                }
            }
            let cfg = contended::Config {
                threads: or(threads, &[2, 4, 8, 16])
                    .into_iter()
                    .map(|n| n as usize)
                    .collect(),
                cs: or(cs, &contended::Cs::ALL),
                between: or(between, &contended::Between::ALL),
                rows: or(rows, &contended::Row::ALL),
                duration: Duration::from_millis(millis.unwrap_or(if quick { 50 } else { 200 })),
                reps: reps as usize,
            };
            let cal = contended::Calibration::measure();
            let cells = contended::run(&cfg, &cal);
            match format {
                Format::Table => contended::print_table(&cfg, &cal, &cells),
                Format::Csv => contended::print_csv(&cells),
                Format::Json => contended::print_json(&cells),
            }
        }
        Command::Record {
            bench,
            protocol,
            trace,
            threshold,
            threads,
            ops,
        } => events::record_cli(&bench, &protocol, &trace, threshold, threads, ops),
        Command::Trace { files } => std::process::exit(trace::cli_trace(&files)),
        Command::Replay {
            file,
            protocols,
            reps,
            wait_cap_ms,
        } => {
            let mut valid = objmon::vm::names();
            valid.extend(trace::ANCHORS);
            for p in &protocols {
                check_name("replay", "protocol", p, &valid, "");
            }
            std::process::exit(trace::cli_replay(
                &file,
                &protocols,
                reps as usize,
                wait_cap_ms,
            ))
        }
        Command::MemoryProbe { kind, n } => match memory::probe(&kind, n as usize) {
            Some(row) => println!("{}", serde_json::to_string(&row).expect("serializable")),
            None => usage_error(
                "memory-probe",
                ErrorKind::InvalidValue,
                runner::unknown("kind", &kind, &memory::KINDS, ""),
            ),
        },
        Command::List => {
            println!("benches:");
            for b in ALL {
                let (seed, what) = b.describe();
                println!("  {:<18} {seed}: {what}", b.name());
            }
            println!("rows:");
            println!("  {:<24} speed-of-light", "none");
            for (n, k) in report::all_rows() {
                println!("  {n:<24} {k}");
            }
            for jdk in java::find_jdks() {
                for m in java::modes(&jdk) {
                    println!("  {:<24} hotspot: {}", m.row, m.summary);
                }
            }
        }
    }
}

fn print_records(records: &[Record], format: Format) {
    match format {
        Format::Json => {
            for r in records {
                println!("{}", serde_json::to_string(r).expect("record serializes"));
            }
        }
        Format::Csv => {
            println!("{}", Record::CSV_HEADER);
            for r in records {
                println!("{}", r.csv());
            }
        }
        Format::Table => {
            println!(
                "{:<18} {:<34} {:>7} {:>8} {:>12} {:>27} {:>8}",
                "bench", "row", "threads", "param", "ns/op", "[min .. max]", "spread"
            );
            for r in records {
                println!(
                    "{:<18} {:<34} {:>7} {:>8} {:>12} {:>27} {:>7.0}%",
                    r.bench,
                    r.protocol,
                    r.threads,
                    r.param,
                    report::num(r.median),
                    format!("[{} .. {}]", report::num(r.min), report::num(r.max)),
                    r.spread_pct()
                );
            }
        }
    }
}

/// The report's short console form: Sync per row, so CI logs show a figure.
fn print_summary(rust: &[Record], java: &[Record]) {
    println!("sync, ns per lock+unlock, median [min..max]:");
    for r in rust.iter().chain(java).filter(|r| r.bench == "sync") {
        println!(
            "  {:<24} {:>9} [{} .. {}]",
            r.protocol,
            report::num(r.median),
            report::num(r.min),
            report::num(r.max)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::MIN_PROFILE_MILLIS;
    use bench::{MAX_OBJECTS, MAX_REPS};
    use clap::CommandFactory;
    use cli::{MAX_SECONDS, MAX_WAIT_CAP_MS};

    /// The command line is well formed, and every bound an argument's help states is the
    /// one its parser holds it to.
    #[test]
    fn help_states_the_bounds() {
        Cli::command().debug_assert();
        let help = |sub: &str, arg: &str| -> String {
            let cmd = Cli::command();
            let a = cmd
                .find_subcommand(sub)
                .and_then(|c| c.get_arguments().find(|a| a.get_id() == arg))
                .unwrap_or_else(|| panic!("{sub} {arg}"));
            a.get_help().expect("help").to_string()
        };
        let mut million = MAX_OBJECTS;
        let mut exp = 0;
        while million > 1 {
            million /= 10;
            exp += 1;
        }
        let objects = format!("10^{exp}");
        for (sub, arg, bounds) in [
            ("run", "threads", vec![MAX_THREADS.to_string()]),
            (
                "run",
                "params",
                vec![
                    objects.clone(),
                    MAX_THREADS.to_string(),
                    bench::MAX_LOCKS.to_string(),
                ],
            ),
            ("run", "reps", vec![MAX_REPS.to_string()]),
            ("report", "reps", vec![MAX_REPS.to_string()]),
            ("replay", "reps", vec![MAX_REPS.to_string()]),
            ("contended", "reps", vec![MAX_REPS.to_string()]),
            (
                "contended",
                "threads",
                vec![contended::MAX_THREADS.to_string()],
            ),
            (
                "contended",
                "millis",
                vec![
                    contended::MIN_MILLIS.to_string(),
                    contended::MAX_MILLIS.to_string(),
                ],
            ),
            ("replay", "wait_cap_ms", vec![MAX_WAIT_CAP_MS.to_string()]),
            ("stress", "seconds", vec![MAX_SECONDS.to_string()]),
            ("stress", "watchdog", vec![MAX_SECONDS.to_string()]),
            ("stress", "threads", vec![(MAX_THREADS - 1).to_string()]),
            ("stress", "objects", vec![objects.clone()]),
            ("record", "threads", vec![events::MAX_THREADS.to_string()]),
            ("record", "ops", vec![objects.clone()]),
            (
                "profile",
                "millis",
                vec![
                    MIN_PROFILE_MILLIS.to_string(),
                    (MAX_SECONDS * 1000).to_string(),
                ],
            ),
        ] {
            let h = help(sub, arg);
            for b in bounds {
                assert!(h.contains(&b), "{sub} --{arg}: {b} not in its help: {h}");
            }
        }
    }
}
