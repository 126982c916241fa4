//! The command line: every subcommand and argument with its help text (what `--help`
//! prints), the bounds the parsers hold arguments to, and the checks of a `run` selection
//! that clap cannot express (each an error that exits 2).

use crate::bench::{ArgSpec, Bench, ALL, MAX_OBJECTS, MAX_REPS, MAX_THREADS};
use crate::contended;
use crate::runner;
use crate::runner::Selection;
use clap::error::ErrorKind;
use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Parser)]
#[command(version, about = "Benchmarks of the objmon locking protocols")]
pub(super) struct Cli {
    #[command(subcommand)]
    pub(super) command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
pub(super) enum Format {
    Table,
    Json,
    Csv,
}

#[derive(Subcommand)]
pub(super) enum Command {
    /// Measures the selected benches on the selected rows and prints the figures.
    Run {
        /// Bench to run (repeatable, each once; default all, in the order given). See `list`.
        /// An unknown name is an error (exit 2) naming the benches and the closest one.
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
        /// selected bench runs) is an error too, unless such a warning explains it, and so is
        /// a bench named with `--bench` that runs none of the selected rows (`no-sync` and
        /// `call` run only the row `none`).
        #[arg(long = "protocol")]
        protocols: Vec<String>,
        /// Threads, 1 to 32767 (the library's thread ids: each locker holds one): for
        /// `threads`, the thread count (instead of its sweep); for `cloud` and `cloud-growth`,
        /// the number of lockers (default 10). Only those benches take it: with any other
        /// bench selected (no `--bench` selects all) it is an error, and so is `--param`
        /// beside it on `threads` (both would set its thread counts).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_THREADS))]
        threads: Option<u64>,
        /// Parameter of the swept benches, replacing their sweep (repeatable, each value
        /// once): multi-sync n (objects, 1 to 10^7), cloud-growth n (objects, 1 to 10^7),
        /// threads n (threads, 1 to 32767), alloc-lock k (locks per object, 1 to 1000). Only
        /// those benches take it: with any other bench selected (no `--bench` selects all) it
        /// is an error.
        #[arg(long = "param", value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_OBJECTS))]
        params: Vec<u64>,
        /// Small sizes (seconds, not minutes).
        #[arg(long)]
        quick: bool,
        /// Timed repetitions per figure, 1 to 1000 (default 5 quick, 7 full; fewer run when
        /// they would overrun the figure's time budget, and the record says how many).
        #[arg(long, value_parser = reps_parser())]
        reps: Option<u64>,
        /// Output format (json: one object per line).
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Leave the HotSpot rows out even if a JDK is installed.
        #[arg(long)]
        no_java: bool,
    },
    /// Runs everything and writes report.md, report.html, SVG figures and results.json.
    Report {
        /// Small sizes: the whole report in about 2½ minutes on 2 cores.
        #[arg(long)]
        quick: bool,
        /// Output directory (created if missing; checked writable before anything runs).
        #[arg(long, default_value = "target/objmon-report")]
        out: PathBuf,
        /// Timed repetitions per figure, 1 to 1000 (default 5 quick, 7 full; fewer run when
        /// they would overrun the figure's time budget, and the record says how many).
        #[arg(long, value_parser = reps_parser())]
        reps: Option<u64>,
        /// Leave the HotSpot rows out even if a JDK is installed.
        #[arg(long)]
        no_java: bool,
        /// Directory of recorded traces (`java/workloads/run.sh all DIR`) and HotSpot wall
        /// times (`hotspot-NAME.tsv`) for the "Real programs" section [default:
        /// target/traces; a directory given here must exist].
        #[arg(long, value_parser = existing_dir)]
        traces: Option<PathBuf>,
    },
    /// Contended locking over a matrix: threads x critical section x work between locks,
    /// per user-facing lock type, with fairness and hand-offs (interleaved reps).
    Contended {
        /// Thread counts, 1 to 256, comma-separated or repeated (default 2,4,8,16).
        #[arg(long, value_delimiter = ',',
              value_parser = clap::value_parser!(u64).range(1..=contended::MAX_THREADS))]
        threads: Vec<u64>,
        /// Critical sections, comma-separated or repeated (default all).
        #[arg(long, value_delimiter = ',', value_enum)]
        cs: Vec<contended::Cs>,
        /// Work between locks, comma-separated or repeated (default all).
        #[arg(long, value_delimiter = ',', value_enum)]
        between: Vec<contended::Between>,
        /// Row (lock type), comma-separated or repeated (default all, in this order).
        #[arg(long = "row", value_delimiter = ',', value_enum)]
        rows: Vec<contended::Row>,
        /// Milliseconds per cell and repetition, 10 to 60000 (default 200, 50 with --quick).
        #[arg(long, value_parser = clap::value_parser!(u64)
              .range(contended::MIN_MILLIS..=contended::MAX_MILLIS))]
        millis: Option<u64>,
        /// Short cells (50 ms) unless --millis is given.
        #[arg(long)]
        quick: bool,
        /// Repetitions per cell and row, 1 to 1000, interleaved across rows (default 5).
        #[arg(long, default_value_t = 5, value_parser = reps_parser())]
        reps: u64,
        /// Output format (json: one object per line).
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Runs a bench's workload on one protocol with monitor events on and writes them as a
    /// Chrome / Perfetto trace (JSON; open it in ui.perfetto.dev): threads as tracks,
    /// contended enters and waits as slices, notifies, inflations, deflations and
    /// revocations as instants, hand-offs as flows.
    Record {
        /// Bench whose workload runs: threads (lockers on one object) or prod-cons
        /// (producers and consumers through a monitor-guarded queue).
        #[arg(long)]
        bench: String,
        /// Protocol to run it on (an unknown name is an error, exit 2).
        #[arg(long)]
        protocol: String,
        /// The trace file to write.
        #[arg(long)]
        trace: PathBuf,
        /// Enters and waits shorter than this are not recorded, as a duration (1ms, 250us,
        /// 2s; default 0: every one); other kinds are always recorded.
        #[arg(long, value_parser = crate::events::parse_threshold)]
        threshold: Option<std::time::Duration>,
        /// Threads, 1 to 256 (default 4; prod-cons: at least 2, half of them producers).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=crate::events::MAX_THREADS))]
        threads: Option<u64>,
        /// Operations per thread, 1 to 10^7 (threads: lock+unlock pairs, default 1000000;
        /// prod-cons: objects per producer, default 5000).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=crate::events::MAX_OPS))]
        ops: Option<u64>,
    },
    /// Lists benches and rows.
    List,
    /// Measures one kind's memory per object in this process and prints it as JSON (the
    /// report runs it once per kind in a child process).
    #[command(hide = true)]
    MemoryProbe {
        /// A kind of `memory::KINDS`.
        kind: String,
        /// Objects, 1 to 10^7.
        #[arg(value_parser = clap::value_parser!(u64).range(1..=MAX_OBJECTS))]
        n: u64,
    },
    /// Characterizes recorded Java monitor traces (java/agent) as seeds 000 and 003 do.
    Trace {
        /// Trace files (`java/workloads/run.sh NAME OUTDIR` writes OUTDIR/NAME.trace); each
        /// must exist.
        #[arg(required = true, value_parser = trace_file)]
        files: Vec<PathBuf>,
    },
    /// Replays a recorded trace's threads on each protocol (ns per operation, inflations).
    Replay {
        /// Trace file (must exist).
        #[arg(value_parser = trace_file)]
        file: PathBuf,
        /// Protocol to replay on (repeatable; default every protocol).
        #[arg(long = "protocol")]
        protocols: Vec<String>,
        /// Repetitions per protocol, 1 to 1000 (the table shows the median and the spread).
        #[arg(long, default_value_t = 5, value_parser = reps_parser())]
        reps: u64,
        /// Longest a replayed wait may take, ms, 1 to 10000 (a wait also ends when its
        /// recorded notifies have been replayed; at most half the replay's 20 s no-progress
        /// watchdog, so a bounded wait is never taken for a deadlock).
        #[arg(long, default_value_t = 100,
              value_parser = clap::value_parser!(u64).range(1..=MAX_WAIT_CAP_MS))]
        wait_cap_ms: u64,
    },
    /// Random mixes of every monitor operation with invariants checked continuously.
    Stress {
        /// Protocol name, or `all` (an unknown name is an error, exit 2).
        #[arg(long, default_value = "all")]
        protocol: String,
        /// Seconds per protocol, 1 to 86400 (a day).
        #[arg(long, default_value_t = 10,
              value_parser = clap::value_parser!(u64).range(1..=MAX_SECONDS))]
        seconds: u64,
        /// Worker threads, 1 to 32766 (the library's 32767 thread ids, one kept for the
        /// poster thread; default: 4 per core, at least 8).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_THREADS - 1))]
        threads: Option<u64>,
        /// Objects, 2 to 10^7 (nested locking takes two).
        #[arg(long, default_value_t = 64,
              value_parser = clap::value_parser!(u64).range(2..=MAX_OBJECTS))]
        objects: u64,
        /// Seed of the random streams (default: from the clock; printed).
        #[arg(long)]
        seed: Option<u64>,
        /// Seconds without progress after which a worker counts as stuck, 1 to 86400.
        #[arg(long, default_value_t = 20,
              value_parser = clap::value_parser!(u64).range(1..=MAX_SECONDS))]
        watchdog: u64,
    },
    /// The contention profile: a contended workload per protocol, profiling off then on.
    Profile {
        /// Protocol name (default: every protocol; an unknown name is an error, exit 2).
        #[arg(long)]
        protocol: Option<String>,
        /// Milliseconds per run, 100 to 86400000 (a day; shorter runs time mostly the start
        /// of the workload's threads, and their on/off ratio is noise).
        #[arg(long, default_value_t = 500,
              value_parser = clap::value_parser!(u64).range(MIN_PROFILE_MILLIS..=MAX_SECONDS * 1000))]
        millis: u64,
    },
}

/// Longest run a time argument asks for (`stress --seconds`, `--watchdog`, `profile
/// --millis`): a day, far beyond any use, and far from the overflow of a deadline computed
/// from it.
pub(super) const MAX_SECONDS: u64 = 86_400;

/// Shortest `profile --millis`: half the quick report's 200 ms. Shorter runs time mostly the
/// start of the workload's threads (inside the timed span) and a few hundred operations per
/// object, and their on/off ratio is noise (docs/benchmarks.md, "Bench notes moved out of the
/// code").
pub(super) const MIN_PROFILE_MILLIS: u64 = 100;

/// Longest `replay --wait-cap-ms`: half of the replay's no-progress watchdog (20 s,
/// `trace::cli_replay`), so that a bounded wait is never taken for a deadlock.
pub(super) const MAX_WAIT_CAP_MS: u64 = 10_000;

/// `--reps`: 1 to [`MAX_REPS`].
fn reps_parser() -> clap::builder::RangedU64ValueParser<u64> {
    clap::value_parser!(u64).range(1..=MAX_REPS)
}

/// A path that names an existing file that begins as a trace does (the `OBJMONT1` magic
/// `java/agent` writes): anything else would only fail after the parsing.
fn trace_file(s: &str) -> Result<PathBuf, String> {
    use std::io::Read;
    let p = PathBuf::from(s);
    match std::fs::metadata(&p) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Err("not a file".to_string()),
        Err(e) => return Err(e.to_string()),
    }
    let mut magic = [0u8; 8];
    std::fs::File::open(&p)
        .and_then(|mut f| f.read_exact(&mut magic))
        .ok()
        .filter(|()| &magic == b"OBJMONT1")
        .map(|()| p)
        .ok_or_else(|| "not a trace recorded by java/agent (no OBJMONT1 magic)".to_string())
}

/// A path that names an existing directory.
fn existing_dir(s: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(s);
    match std::fs::metadata(&p) {
        Ok(m) if m.is_dir() => Ok(p),
        Ok(_) => Err("not a directory".to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// Prints a usage error of subcommand `sub` the way clap prints its own (`error: …`, the
/// subcommand's usage) and exits with code 2.
pub(super) fn usage_error(sub: &str, kind: ErrorKind, msg: impl std::fmt::Display) -> ! {
    let mut cmd = Cli::command();
    cmd.build();
    match cmd.find_subcommand_mut(sub) {
        Some(c) => c.error(kind, msg).exit(),
        None => cmd.error(kind, msg).exit(),
    }
}

/// Exits with a usage error unless `name` is one of `valid` (`what`: "protocol", …).
pub(super) fn check_name(sub: &str, what: &str, name: &str, valid: &[&str], more: &str) {
    if !valid.contains(&name) {
        usage_error(
            sub,
            ErrorKind::InvalidValue,
            runner::unknown(what, name, valid, more),
        );
    }
}

/// Exits with a usage error unless `dir` can be created and written to.
pub(super) fn check_out_dir(dir: &std::path::Path) {
    let probe = dir.join(".objmon-bench-write-check");
    let r = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&probe, b""))
        .and_then(|()| std::fs::remove_file(&probe));
    if let Err(e) = r {
        usage_error(
            "report",
            ErrorKind::ValueValidation,
            format!(
                "--out {}: cannot write the report there: {e}",
                dir.display()
            ),
        );
    }
}

/// The benches that take an argument, with what it means to each (`threads (threads on one
/// object, 1 to 32767), cloud (…)`).
fn takers(arg: fn(Bench) -> Option<ArgSpec>) -> String {
    ALL.iter()
        .filter_map(|&b| arg(b).map(|spec| format!("{} ({spec})", b.name())))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks `run`'s `--threads`, `--param` and `--protocol` against every selected bench
/// (`named`: whether `--bench` named them): a bench that does not take an argument given, a
/// value out of a bench's range, a value given twice, or a named bench left with no row to
/// run is a usage error.
pub(super) fn check_run_args(
    benches: &[Bench],
    named: bool,
    threads: Option<u64>,
    params: &[u64],
    sel: &Selection,
) {
    let fail = |msg: String| -> ! { usage_error("run", ErrorKind::ArgumentConflict, msg) };
    let which = |b: Bench| {
        if named {
            format!("bench {}", b.name())
        } else {
            format!("bench {} (no --bench given, so every bench runs)", b.name())
        }
    };
    let twice = |i: usize, b: &Bench| benches[..i].contains(b);
    if let Some((_, b)) = benches.iter().enumerate().find(|&(i, b)| twice(i, b)) {
        fail(format!("--bench {} given twice", b.name()));
    }
    if let Some((_, v)) = params
        .iter()
        .enumerate()
        .find(|&(i, v)| params[..i].contains(v))
    {
        usage_error(
            "run",
            ErrorKind::ValueValidation,
            format!("--param {v} given twice"),
        );
    }
    for &b in benches {
        if let Some(n) = threads {
            match b.threads_arg() {
                None => fail(format!(
                    "--threads {n}: {} does not take --threads (its thread count is fixed); \
                     benches that take it: {}",
                    which(b),
                    takers(Bench::threads_arg)
                )),
                Some(spec) if !spec.accepts(n) => usage_error(
                    "run",
                    ErrorKind::ValueValidation,
                    format!("--threads {n}: bench {} takes --threads {spec}", b.name()),
                ),
                Some(_) => {}
            }
        }
        if !params.is_empty() {
            let Some(spec) = b.param_arg() else {
                let given: Vec<String> = params.iter().map(u64::to_string).collect();
                fail(format!(
                    "--param {}: {} has no parameter; benches that take --param: {}",
                    given.join(", "),
                    which(b),
                    takers(Bench::param_arg)
                ));
            };
            if let Some(v) = params.iter().find(|&&v| !spec.accepts(v)) {
                usage_error(
                    "run",
                    ErrorKind::ValueValidation,
                    format!("--param {v}: bench {} takes --param {spec}", b.name()),
                );
            }
            if b == Bench::Threads && threads.is_some() {
                fail(
                    "--threads and --param both set the thread counts of bench threads; \
                     give one of them"
                        .to_string(),
                );
            }
        }
    }
    // A named bench with nothing of the selected rows to run would be left out silently.
    // HotSpot filters are left to the JVM side, which runs some benches of its own.
    let hot = sel.rows.iter().any(|r| r.starts_with("hot"));
    if named && !sel.rows.is_empty() && !hot {
        if let Some(&b) = benches.iter().find(|&&b| !runner::bench_has_rows(sel, b)) {
            let why = if b.subject_free() {
                "it measures no lock, only the row `none`: add --protocol none"
            } else {
                "knob rows run in alloc-lock only, syslock-* in system-monitor, user-loop-* in \
                 user-loop; `objmon-bench list` names the rows"
            };
            fail(format!(
                "--protocol: bench {} runs none of the selected rows ({}), so it measures \
                 nothing ({why}); select one of its rows or leave the bench out",
                b.name(),
                sel.rows.join(", ")
            ));
        }
    }
}
