//! `objmon-fuzz`: fuzzes the safe API on every protocol (or those named) for a time budget,
//! printing the cases run per protocol and each finding with its minimal case as a
//! regression test. Exit status 1 if anything was found (for CI), or with `--expect-find`
//! if some protocol fuzzed found nothing (to show that the fuzzer finds a known hole).

use clap::Parser;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(about = "Adversarial fuzzer of objmon's safe API, on every protocol")]
struct Args {
    /// Protocols to fuzz (catalog names; repeatable). Default: all of `visit_all`.
    #[arg(long = "protocol")]
    protocols: Vec<String>,
    /// Seconds per protocol.
    #[arg(long, conflicts_with = "total_seconds")]
    seconds: Option<f64>,
    /// Seconds for all protocols together, split evenly.
    #[arg(long)]
    total_seconds: Option<f64>,
    /// The seed (cases are a function of it and the protocol).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Most steps per case.
    #[arg(long, default_value_t = 48)]
    len: usize,
    /// Put the host signal adversary in every protocol's set (always in the `-signal` ones').
    #[arg(long)]
    signals_everywhere: bool,
    /// Move live objects on every protocol: also on the address-keyed ones (cacao,
    /// cacao-seed, monitor-cache: their hosts report moves) and on the lightweight ones
    /// (made only on the promise that a header held through a leaked guard never moves:
    /// this breaks it on purpose).
    #[arg(long)]
    moves_everywhere: bool,
    /// Let objmon's barrier signal nest inside the host signal handler (the `-signal`
    /// protocols' contract broken on purpose, to show what it guards against).
    #[arg(long)]
    unmasked_signals: bool,
    /// No moves of live objects (swap, replace, box moves) on any protocol.
    #[arg(long, conflicts_with = "moves_everywhere")]
    no_moves: bool,
    /// Ask nothing more of an object once it was moved while held (a forgotten guard), to
    /// look past what the move did to it at what it did to the others.
    #[arg(long)]
    lenient_moved: bool,
    /// Only this surface: `monitor` (Monitor<T, P>), `lock-api` (lock_api::Mutex<RawMonitor<P>,
    /// T>) or `vm` (ThreadHandle); default all the protocol has.
    #[arg(long, value_parser = ["monitor", "lock-api", "vm"])]
    surface: Option<String>,
    /// Most seconds to spend shrinking a finding.
    #[arg(long, default_value_t = 120.0)]
    shrink_seconds: f64,
    /// Succeed only if every protocol fuzzed has a finding (shows the fuzzer finds a hole).
    #[arg(long)]
    expect_find: bool,
}

fn main() -> ExitCode {
    let a = Args::parse();
    if a.unmasked_signals {
        objmon_fuzz::signal::unmask_barrier();
    }
    let mut targets = objmon_fuzz::targets();
    if !a.protocols.is_empty() {
        for p in &a.protocols {
            if !targets.iter().any(|t| t.name == p) {
                let names: Vec<_> = targets.iter().map(|t| t.name).collect();
                eprintln!(
                    "objmon-fuzz: no protocol {p:?}; the catalog: {}",
                    names.join(", ")
                );
                return ExitCode::from(2);
            }
        }
        targets.retain(|t| a.protocols.iter().any(|p| p == t.name));
    }
    let per = match (a.seconds, a.total_seconds) {
        (Some(s), _) => s,
        (None, Some(t)) => t / targets.len() as f64,
        (None, None) => 10.0,
    };
    let o = objmon_fuzz::Options {
        seed: a.seed,
        budget: Duration::from_secs_f64(per),
        len: a.len,
        signals_everywhere: a.signals_everywhere,
        moves_everywhere: a.moves_everywhere,
        no_moves: a.no_moves,
        lenient_moved: a.lenient_moved,
        shrink: Duration::from_secs_f64(a.shrink_seconds),
        surface: a.surface.as_deref().map(|s| match s {
            "monitor" => objmon_fuzz::Surface::Monitor,
            "lock-api" => objmon_fuzz::Surface::LockApi,
            _ => objmon_fuzz::Surface::Vm,
        }),
    };
    println!(
        "objmon-fuzz: seed {}, {per:.1} s per protocol, at most {} steps per case, {} protocol(s)",
        a.seed,
        a.len,
        targets.len()
    );
    let (mut found, mut clean) = (0, 0);
    for t in &targets {
        let start = Instant::now();
        let r = objmon_fuzz::fuzz(t, &o);
        let secs = start.elapsed().as_secs_f64();
        match &r.finding {
            None => {
                clean += 1;
                println!(
                    "{:<18} {:>7} cases ({} on Monitor, {} on lock-api, {} on vm) in {secs:.1} s: \
                     nothing found",
                    r.name,
                    r.cases,
                    r.monitor_cases,
                    r.lock_api_cases,
                    r.cases - r.monitor_cases - r.lock_api_cases
                );
                if r.lock_api_cases > 0 {
                    println!(
                        "{:<18} lock-api: {} of the {} thread ids of the id budget retired by \
                         forgotten guards in this process",
                        "",
                        objmon_fuzz::kit::retired_ids(r.name),
                        objmon_fuzz::kit::LOCK_API_ID_BUDGET
                    );
                }
            }
            Some(f) => {
                found += 1;
                println!(
                    "{:<18} FOUND after {} cases ({secs:.1} s with shrinking, seed {}):\n{}\n\
                     minimal case ({} steps) as a regression test:\n{}",
                    r.name,
                    f.cases,
                    a.seed,
                    indent(&f.message),
                    f.minimal.steps.len(),
                    f.test
                );
            }
        }
    }
    println!("objmon-fuzz: {found} protocol(s) with a finding, {clean} without");
    let (native, refused) = objmon_fuzz::native_calls();
    println!(
        "objmon-fuzz: {native} call(s) made in native, {refused} of them locks refused there \
         as documented"
    );
    let ev = objmon_fuzz::sink::stats();
    println!(
        "objmon-fuzz: {} case(s) with an event sink: {} events delivered, {} checked; the sink \
         panicked {} times, locked its own objects {} times, relocked an event's object {} \
         times, slept {} times; {} sink slots kept by forgotten guards ({} per protocol at most)",
        ev.cases,
        ev.delivered,
        ev.checked,
        ev.panics,
        ev.locks,
        ev.relocks,
        ev.sleeps,
        ev.kept,
        objmon_fuzz::sink::SINK_SLOT_BUDGET
    );
    if objmon_fuzz::signal::handled() > 0 {
        println!(
            "objmon-fuzz: the host signal handler ran {} times, {} of them inside a bias owner's section",
            objmon_fuzz::signal::handled(),
            objmon_fuzz::signal::lingered()
        );
    }
    let ok = if a.expect_find {
        clean == 0
    } else {
        found == 0
    };
    // Workers of a failing case may be blocked for good: leave without joining them.
    std::process::exit(if ok { 0 } else { 1 })
}

fn indent(s: &str) -> String {
    s.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
