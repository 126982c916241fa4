//! `objmon-bench`: the seed papers' experiments over every objmon protocol, the speed-of-light
//! rows, the anchors (`std-mutex`, `parking-lot`) and every HotSpot locking mode on the
//! machine.
//!
//! - `objmon-bench run [--bench NAME]... [--protocol NAME]... [--threads N] [--param X]
//!   [--quick] [--format table|json|csv]` measures a selection and prints it;
//! - `objmon-bench report [--quick] [--out DIR] [--traces DIR]` runs everything and writes a
//!   Markdown and an HTML report with SVG figures (and `results.json`);
//! - `objmon-bench list` names the benches and rows;
//! - `objmon-bench stress` runs random mixes of every monitor operation with invariants
//!   checked (see `stress.rs`).
//!
//! Benchmarks are generic over [`subject::Subject`]; protocols come only through
//! `objmon::vm::visit_all`, so a new protocol is measured with no change here.

#![warn(missing_docs)]

mod bench;
mod doc;
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

use bench::{Bench, Plan, ALL};
use clap::{Parser, Subcommand, ValueEnum};
use record::Record;
use runner::Selection;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(version, about = "Benchmarks of the objmon locking protocols")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Table,
    Json,
    Csv,
}

#[derive(Subcommand)]
enum Command {
    /// Measures the selected benches on the selected rows and prints the figures.
    Run {
        /// Bench to run (repeatable; default all, in the order given). See `list`. An unknown
        /// name is an error (exit 2) naming the benches and the closest one.
        #[arg(long = "bench")]
        benches: Vec<String>,
        /// Row to run (repeatable; default all): a protocol, `std-mutex`, `parking-lot`,
        /// `parking-lot-mutex`, `sol-*`, `syslock-*`, `user-loop-*` (a subject's name also
        /// selects its user-loop rows), `hotspot<version>-<mode>`, `none`; a trailing `*`
        /// matches a prefix (`hotspot*`). A protocol with a knob also runs its knob sweep in
        /// alloc-lock (`fable[learn-limit=1]` …); one swept row can be named alone. Rows print
        /// in the order given. A name or pattern that selects no row is an error (exit 2,
        /// with the valid names and the closest one), except a HotSpot one (`hotspot*`) when
        /// no JDK is found or with `--no-java`: that is a warning, so one command line runs
        /// on machines with and without a JDK. A selection that measures nothing (rows no
        /// selected bench runs) is an error too, unless such a warning explains it.
        #[arg(long = "protocol")]
        protocols: Vec<String>,
        /// Threads: for `threads`, the thread count; for `cloud`, the number of lockers (1 or more).
        #[arg(long, value_parser = at_least_one())]
        threads: Option<usize>,
        /// Parameter of the swept benches (multi-sync n, threads n, alloc-lock k); repeatable.
        #[arg(long = "param")]
        params: Vec<u64>,
        /// Small sizes (seconds, not minutes).
        #[arg(long)]
        quick: bool,
        /// Timed repetitions per figure (default 5 quick, 7 full).
        #[arg(long, value_parser = at_least_one())]
        reps: Option<usize>,
        /// Output format (json: one object per line).
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Leave the HotSpot rows out even if a JDK is installed.
        #[arg(long)]
        no_java: bool,
    },
    /// Runs everything and writes report.md, report.html, SVG figures and results.json.
    Report {
        /// Small sizes: the whole report in under 3 minutes on 2 cores.
        #[arg(long)]
        quick: bool,
        /// Output directory (created if missing; checked writable before anything runs).
        #[arg(long, default_value = "target/objmon-report")]
        out: PathBuf,
        /// Timed repetitions per figure (default 5 quick, 7 full).
        #[arg(long, value_parser = at_least_one())]
        reps: Option<usize>,
        /// Leave the HotSpot rows out even if a JDK is installed.
        #[arg(long)]
        no_java: bool,
        /// Recorded traces (`java/workloads/run.sh all DIR`) and HotSpot wall times
        /// (`hotspot-NAME.tsv`) for the "Real programs" section.
        #[arg(long, default_value = realprog::DEFAULT_DIR)]
        traces: PathBuf,
    },
    /// Lists benches and rows.
    List,
    /// Measures one kind's memory per object in this process and prints it as JSON (the
    /// report runs it once per kind in a child process).
    #[command(hide = true)]
    MemoryProbe {
        /// A kind of `memory::KINDS`.
        kind: String,
        /// Objects.
        n: usize,
    },
    /// Characterizes recorded Java monitor traces (java/agent) as seeds 000 and 003 do.
    Trace {
        /// Trace files (`java/workloads/run.sh NAME OUTDIR` writes OUTDIR/NAME.trace).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Replays a recorded trace's threads on each protocol (ns per operation, inflations).
    Replay {
        /// Trace file.
        file: PathBuf,
        /// Protocol to replay on (repeatable; default every protocol).
        #[arg(long = "protocol")]
        protocols: Vec<String>,
        /// Repetitions per protocol (the table shows the median and the spread).
        #[arg(long, default_value_t = 5)]
        reps: usize,
        /// Longest a replayed wait may take, ms (a wait also ends when its recorded notifies
        /// have been replayed).
        #[arg(long, default_value_t = 100)]
        wait_cap_ms: u64,
    },
    /// Random mixes of every monitor operation with invariants checked continuously.
    Stress {
        /// Protocol name, or `all` (an unknown name is an error, exit 2).
        #[arg(long, default_value = "all")]
        protocol: String,
        /// Seconds per protocol.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// Worker threads (default: 4 per core, at least 8).
        #[arg(long, value_parser = at_least_one())]
        threads: Option<usize>,
        /// Objects.
        #[arg(long, default_value_t = 64, value_parser = at_least_one())]
        objects: usize,
        /// Seed of the random streams (default: from the clock; printed).
        #[arg(long)]
        seed: Option<u64>,
        /// Seconds without progress after which a worker counts as stuck.
        #[arg(long, default_value_t = 20)]
        watchdog: u64,
    },
    /// The contention profile: a contended workload per protocol, profiling off then on.
    Profile {
        /// Protocol name (default: every protocol; an unknown name is an error, exit 2).
        #[arg(long)]
        protocol: Option<String>,
        /// Milliseconds per run.
        #[arg(long, default_value_t = 500)]
        millis: u64,
    },
}

/// A count of 1 or more (`--threads 0` is refused by the parser).
fn at_least_one() -> fn(&str) -> Result<usize, String> {
    |s| match s.parse::<usize>() {
        Ok(0) => Err("must be 1 or more".to_string()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// Prints a usage error and exits with code 2 (as clap does for its own).
fn usage_error(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(2)
}

/// Exits with a usage error unless `name` is one of `valid` (`what`: "protocol", …).
fn check_name(what: &str, name: &str, valid: &[&str], more: &str) {
    if !valid.contains(&name) {
        usage_error(&runner::unknown(what, name, valid, more));
    }
}

/// Exits with a usage error unless `dir` can be created and written to.
fn check_out_dir(dir: &std::path::Path) {
    let probe = dir.join(".objmon-bench-write-check");
    let r = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&probe, b""))
        .and_then(|()| std::fs::remove_file(&probe));
    if let Err(e) = r {
        usage_error(&format!(
            "--out {}: cannot write the report there: {e}",
            dir.display()
        ));
    }
}

fn main() {
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
            let benches = if benches.is_empty() {
                ALL.to_vec()
            } else {
                let names: Vec<&str> = ALL.iter().map(|b| b.name()).collect();
                benches
                    .iter()
                    .map(|n| {
                        Bench::by_name(n).unwrap_or_else(|| {
                            usage_error(&runner::unknown(
                                "bench",
                                n,
                                &names,
                                "; `objmon-bench list` describes them",
                            ))
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
                .unwrap_or_else(|e| usage_error(&e));
            for w in &warnings {
                eprintln!("warning: {w}");
            }
            let sel = Selection {
                benches,
                rows: protocols,
                params: (!params.is_empty()).then_some(params),
                threads,
                plan: Plan::new(quick, reps),
            };
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
            realprog::set_traces_dir(traces);
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
                threads: threads.unwrap_or((4 * cores).max(8)),
                objects,
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
                check_name("protocol", p, &objmon::protocol::names(), "");
            }
            let profiles = profile::run(Duration::from_millis(millis), protocol.as_deref());
            let (head, rows) = profile::rows(&profiles);
            println!("{}", head.join(" | "));
            for r in rows {
                println!("{}", r.join(" | "));
            }
        }
        Command::Trace { files } => std::process::exit(trace::cli_trace(&files)),
        Command::Replay {
            file,
            protocols,
            reps,
            wait_cap_ms,
        } => std::process::exit(trace::cli_replay(&file, &protocols, reps, wait_cap_ms)),
        Command::MemoryProbe { kind, n } => match memory::probe(&kind, n) {
            Some(row) => println!("{}", serde_json::to_string(&row).expect("serializable")),
            None => {
                eprintln!("unknown kind {kind}; one of {:?}", memory::KINDS);
                std::process::exit(2);
            }
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
