//! The `replay` subcommand: a trace's plan replayed on every protocol and anchor, repetition
//! by repetition, and the table of the medians.

use super::driver::{replay, replay_anchor, ANCHORS};
use super::format::read;
use super::replay_plan::{plan, ReplayPlan, ReplayResult};
use std::fmt::Write as _;
use std::path::Path;

/// Replays `plan` `reps` times on every protocol of the catalog, then every anchor
/// ([`ANCHORS`]), whose name is in `protocols` (all if empty), in that order: one result per
/// repetition.
pub fn replay_all(
    plan: &ReplayPlan,
    protocols: &[String],
    reps: usize,
    stall: std::time::Duration,
) -> Vec<Vec<ReplayResult>> {
    struct V<'a> {
        plan: &'a ReplayPlan,
        protocols: &'a [String],
        reps: usize,
        stall: std::time::Duration,
        out: Vec<Vec<ReplayResult>>,
    }
    impl objmon::vm::ProtocolVisitor for V<'_> {
        fn visit<P: objmon::Protocol>(&mut self) {
            if !self.protocols.is_empty() && !self.protocols.iter().any(|p| p == P::NAME) {
                return;
            }
            let runs = (0..self.reps.max(1))
                .map(|_| replay::<P>(self.plan, self.stall))
                .collect();
            self.out.push(runs);
        }
    }
    let mut v = V {
        plan,
        protocols,
        reps,
        stall,
        out: Vec::new(),
    };
    objmon::vm::visit_all(&mut v);
    for a in ANCHORS {
        if !protocols.is_empty() && !protocols.iter().any(|p| p == a) {
            continue;
        }
        let runs = (0..reps.max(1))
            .filter_map(|_| replay_anchor(a, plan, stall))
            .collect();
        v.out.push(runs);
    }
    v.out
}

fn median(v: &mut [f64]) -> f64 {
    crate::record::median(v).unwrap_or(f64::NAN)
}

/// Renders replay results (one row per protocol: medians over the repetitions with min–max).
pub fn render_replay_markdown(name: &str, plan: &ReplayPlan, runs: &[Vec<ReplayResult>]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "### Replay of `{name}`: {} threads, {} objects, {} operations ({} unmatched dropped, {} threads cut at an unended wait)\n",
        plan.threads.len(),
        plan.objects,
        plan.ops,
        plan.unmatched,
        plan.unended_waits
    );
    let _ = writeln!(
        s,
        "| protocol | wall ns/op (median) | min – max | thread ns/op | inflations | deflations | revocations | peak live monitors | waits bounded | errors |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    // Median of a counter over the repetitions; `—` where the row has no such counter.
    fn med_opt<T: Into<f64> + Copy>(v: impl Iterator<Item = Option<T>>) -> String {
        let v: Option<Vec<f64>> = v.map(|x| x.map(Into::into)).collect();
        match v {
            Some(mut v) if !v.is_empty() => format!("{}", median(&mut v)),
            _ => "—".into(),
        }
    }
    for r in runs {
        let Some(first) = r.first() else { continue };
        let mut wall: Vec<f64> = r.iter().map(|x| x.ns_per_op).collect();
        let mut th: Vec<f64> = r.iter().map(|x| x.thread_ns_per_op).collect();
        let (lo, hi) = wall
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
        let infl = med_opt(r.iter().map(|x| x.inflations.map(|v| v as f64)));
        let defl = med_opt(r.iter().map(|x| x.deflations.map(|v| v as f64)));
        let revo = med_opt(r.iter().map(|x| x.revocations.map(|v| v as f64)));
        let peak = med_opt(r.iter().map(|x| x.peak_live_monitors.map(|v| v as f64)));
        let bounded: u64 = r.iter().map(|x| x.waits_bounded).sum();
        let errors: u64 = r.iter().map(|x| x.errors).sum();
        let _ = writeln!(
            s,
            "| {} | {:.1} | {:.1} – {:.1} | {:.1} | {infl} | {defl} | {revo} | {peak} | {} | {} |",
            first.protocol,
            median(&mut wall),
            lo,
            hi,
            median(&mut th),
            bounded,
            errors
        );
    }
    s
}

/// `objmon-bench replay TRACE [--protocol NAME]... [--reps N] [--wait-cap-ms MS]`: replays the
/// trace on each protocol and anchor (`monitor`, `std-mutex`, `parking-lot`) and prints a
/// Markdown table. Returns the process exit code.
pub fn cli_replay(path: &Path, protocols: &[String], reps: usize, wait_cap_ms: u64) -> i32 {
    let t = match read(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{}: {e}", path.display());
            return 1;
        }
    };
    let mut valid: Vec<&str> = objmon::vm::names();
    valid.extend(ANCHORS);
    if let Some(bad) = protocols.iter().find(|n| !valid.contains(&n.as_str())) {
        eprintln!("{}", crate::runner::unknown("protocol", bad, &valid, ""));
        return 2;
    }
    let p = plan(&t, std::time::Duration::from_millis(wait_cap_ms));
    let runs = replay_all(&p, protocols, reps, std::time::Duration::from_secs(20));
    if runs.is_empty() {
        eprintln!("no protocol matched {protocols:?}; `objmon-bench list` names them");
        return 2;
    }
    let name = path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    print!("{}", render_replay_markdown(&name, &p, &runs));
    i32::from(runs.iter().flatten().any(|r| r.errors != 0))
}
