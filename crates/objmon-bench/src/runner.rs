//! Runs a selection of benches over the selected rows, with a progress bar, and collects
//! [`Record`]s.

use crate::bench::{self, Bench, Plan};
use crate::record::Record;
use crate::subject::{self, Kind, Subject, SubjectVisitor};
use crate::syslock;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::Instant;

/// What to run.
#[derive(Clone, Debug)]
pub struct Selection {
    /// Benches, in order.
    pub benches: Vec<Bench>,
    /// Row filters (exact names, or prefixes ending in `*`); empty = every row.
    pub rows: Vec<String>,
    /// Overrides every bench's parameter sweep.
    pub params: Option<Vec<u64>>,
    /// Threads for cloud (default 10, as the seed); for `threads`, the thread counts.
    pub threads: Option<usize>,
    /// Sizes.
    pub plan: Plan,
}

impl Selection {
    /// Whether row `name` is selected.
    pub fn wants(&self, name: &str) -> bool {
        self.rows.is_empty()
            || self.rows.iter().any(|f| match f.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => f == name,
            })
    }

    /// The parameters `b` sweeps.
    pub fn params_of(&self, b: Bench) -> Vec<u64> {
        match (&self.params, self.threads) {
            (Some(p), _) if b.param_arg().is_some() => p.clone(),
            (_, Some(n)) if b == Bench::Threads => vec![n as u64],
            _ => b.params(&self.plan),
        }
    }

    /// Cloud's thread count.
    pub fn cloud_threads(&self) -> usize {
        self.threads.unwrap_or(10)
    }

    /// The rows `S` runs `b` as: its own (knob at the default, `None`) if selected, then, if
    /// `b` sweeps knobs and `S` has one, one row per value of the knob, each selected by `S`'s
    /// own name or by the swept row's name (`--protocol 'fable[learn-limit=3]'`).
    pub fn rows_for<S: Subject>(&self, b: Bench) -> Vec<(String, Option<u32>)> {
        let own = self.wants(S::NAME);
        let mut v = Vec::new();
        if own {
            v.push((S::NAME.to_string(), None));
        }
        if let (true, Some(k)) = (b.sweeps_knob(), S::KNOB) {
            for &x in k.values {
                let name = subject::knob_row(S::NAME, &k, x);
                if own || self.wants(&name) {
                    v.push((name, Some(x)));
                }
            }
        }
        v
    }
}

impl Selection {
    /// Where row `name` stands in the order the rows were asked for: the index of the first
    /// filter that selects it (by its own name, its subject's name for a knob row
    /// `fable[learn-limit=3]`, or a user-loop row's subject, `user-loop-thin-nested` → `thin`).
    /// Every row ranks 0 when no filter was given.
    pub fn rank(&self, name: &str) -> usize {
        let base = name.split_once('[').map_or(name, |(b, _)| b);
        let subject = name
            .strip_prefix("user-loop-")
            .map(|r| r.strip_suffix("-nested").unwrap_or(r));
        let hits = |f: &str, n: &str| match f.strip_suffix('*') {
            Some(prefix) => n.starts_with(prefix),
            None => f == n,
        };
        self.rows
            .iter()
            .position(|f| hits(f, name) || hits(f, base) || subject.is_some_and(|s| hits(f, s)))
            .unwrap_or(self.rows.len())
    }

    /// Puts `records` in the order asked for: by bench as in `benches`, then by row as in
    /// `rows` ([`Selection::rank`]); a stable sort, so a filter's rows keep their natural order.
    pub fn order(&self, records: &mut [Record]) {
        let bench = |name: &str| {
            self.benches
                .iter()
                .position(|b| b.name() == name)
                .unwrap_or(usize::MAX)
        };
        records.sort_by_cached_key(|r| (bench(&r.bench), self.rank(&r.protocol)));
    }
}

/// The closest of `candidates` to `name`, if close enough to be a likely typo: a candidate
/// that `name` begins (`parking` → `parking-lot`), or one within an edit distance of 1 for
/// names of up to 3 characters, else of a third of the name's length (at least 2).
pub fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let len = name.chars().count();
    let limit = if len <= 3 { 1 } else { (len / 3).max(2) };
    candidates
        .into_iter()
        .map(|c| {
            let d = if len >= 3 && c.starts_with(name) {
                1
            } else {
                distance(name, c)
            };
            (d, c)
        })
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// Edit distance (optimal string alignment): insertions, deletions, substitutions and
/// transpositions of adjacent characters each count 1 (`snyc` is 1 from `sync`).
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // d[i][j]: distance between a[..i] and b[..j].
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j - 1] + cost)
                .min(d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// "unknown WHAT "NAME" (did you mean "X"?)\nvalid: A, B, …" — the text of a usage error.
pub fn unknown(what: &str, name: &str, valid: &[&str], more: &str) -> String {
    let hint = suggest(name, valid.iter().copied())
        .map(|s| format!(" (did you mean {s:?}?)"))
        .unwrap_or_default();
    format!(
        "unknown {what} {name:?}{hint}\nvalid: {}{more}",
        valid.join(", ")
    )
}

/// Checks every row filter of `--protocol` against the rows that exist; `java_rows` names the
/// HotSpot rows of the JDKs found (called only if a filter starts with `hot`).
///
/// Returns warnings to print, or the error for the first filter that selects nothing:
/// an unknown name (with a close match suggested), a knob value the bench does not sweep
/// (`fable[learn-limit=99]`), a knob on a protocol without one, a prefix pattern `x*` that
/// matches no row. HotSpot filters (`hotspot*`, `hotspot21-lm2`) that match nothing when no
/// JDK was found are warnings, not errors: the same command line runs on machines with and
/// without a JDK.
pub fn check_rows(
    rows: &[String],
    java_rows: &mut dyn FnMut() -> Vec<String>,
) -> Result<Vec<String>, String> {
    let all = crate::report::all_rows();
    let mut names: Vec<String> = vec!["none".to_string()];
    names.extend(all.iter().map(|(n, _)| n.clone()));
    let mut java: Option<Vec<String>> = None;
    let mut warnings = Vec::new();
    // Short list for the message: everything but the generated families, which are named once.
    let mut valid: Vec<String> = vec!["none".to_string()];
    valid.extend(subject::subject_names().iter().map(|(n, _)| n.to_string()));
    valid.extend(syslock::ROWS.iter().map(|r| r.name.to_string()));
    let knobs = subject::knobs();
    for (n, k) in &knobs {
        valid.push(subject::knob_family(n, k));
    }
    valid.push("user-loop-ROW[-nested]".to_string());
    for f in rows {
        let hot = f.starts_with("hot");
        if hot && java.is_none() {
            java = Some(java_rows());
        }
        let java = java.as_deref().unwrap_or(&[]);
        let matches = |n: &String| match f.strip_suffix('*') {
            Some(prefix) => n.starts_with(prefix),
            None => n == f,
        };
        if names.iter().any(matches) || java.iter().any(matches) {
            continue;
        }
        if hot && java.is_empty() {
            warnings.push(format!(
                "--protocol {f}: no HotSpot row (no JDK found, or --no-java); left out"
            ));
            continue;
        }
        if let Some((base, rest)) = f.split_once('[') {
            if all.iter().any(|(n, _)| n == base) {
                let knob = knobs.iter().find(|(n, _)| *n == base).map(|(_, k)| k);
                return Err(match knob {
                    None => format!(
                        "{base} has no knob ({f:?}); protocols with one: {}",
                        knobs.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                    ),
                    Some(k) => {
                        let given = rest.trim_end_matches(']');
                        let values: Vec<String> = k.values.iter().map(u32::to_string).collect();
                        match given.split_once('=') {
                            Some((kn, _)) if kn == k.name => format!(
                                "{f:?}: {base}'s {} is swept over {} only",
                                k.name,
                                values.join(", ")
                            ),
                            _ => format!(
                                "{f:?}: {base}'s knob is {}, with values {}",
                                k.name,
                                values.join(", ")
                            ),
                        }
                    }
                });
            }
        }
        let mut candidates: Vec<&str> = valid.iter().map(String::as_str).collect();
        candidates.extend(names.iter().map(String::as_str));
        candidates.extend(java.iter().map(String::as_str));
        let hint = suggest(f.trim_end_matches('*'), candidates.iter().copied())
            .map(|s| format!(" (did you mean {s:?}?)"))
            .unwrap_or_default();
        let java_list = if java.is_empty() {
            ", hotspotNN-MODE (with a JDK)".to_string()
        } else {
            format!(", {}", java.join(", "))
        };
        let what = if f.ends_with('*') {
            "row pattern (matches no row)"
        } else {
            "protocol"
        };
        return Err(format!(
            "unknown {what} {f:?}{hint}\nvalid: {}{java_list}; a trailing * matches a prefix; \
             `objmon-bench list` names every row",
            valid.join(", ")
        ));
    }
    Ok(warnings)
}

/// A row that could not run a bench, and why.
#[derive(Clone, Debug)]
pub struct Skip {
    /// Bench name.
    pub bench: &'static str,
    /// Row name.
    pub row: &'static str,
    /// Why.
    pub reason: &'static str,
}

/// Everything one run measured.
#[derive(Default)]
pub struct Outcome {
    /// The figures.
    pub records: Vec<Record>,
    /// The rows skipped, with reasons.
    pub skips: Vec<Skip>,
}

/// Runs the Rust side of `sel` (everything but HotSpot).
///
/// Progress goes to stderr: in a terminal, a bar with an ETA that fits in 80 columns; in a log
/// (stderr not a terminal), one line per finished bench, so a long `report` is not silent.
pub fn run(sel: &Selection) -> Outcome {
    let total = count_jobs(sel);
    let terminal = std::io::stderr().is_terminal();
    let bar = ProgressBar::new(total as u64);
    // 8 + 1 + 22 + 1 + 9 (pos/len) + 5 + 4 (eta) = 50 columns; `wide_msg` takes (and is cut
    // to) what is left of the line, so the bar never wraps.
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:20}] {pos}/{len} eta {eta} {wide_msg}",
        )
        .expect("template")
        .progress_chars("=> "),
    );
    let mut out = Outcome::default();
    let t0 = Instant::now();
    for (i, &b) in sel.benches.iter().enumerate() {
        let (t, before) = (Instant::now(), out.records.len());
        run_bench(sel, b, &bar, &mut out);
        let rows = out.records.len() - before;
        let line = format!(
            "[{}/{}] {}: {rows} row{} in {:.1} s ({:.0} s so far)",
            i + 1,
            sel.benches.len(),
            b.name(),
            if rows == 1 { "" } else { "s" },
            t.elapsed().as_secs_f64(),
            t0.elapsed().as_secs_f64()
        );
        if terminal {
            bar.println(line);
        } else {
            eprintln!("{line}");
        }
    }
    bar.finish_and_clear();
    out
}

/// Runs one bench of `sel` into `out`.
fn run_bench(sel: &Selection, b: Bench, bar: &ProgressBar, out: &mut Outcome) {
    if b == Bench::UserLoop {
        bar.set_message(b.name());
        let wants = |row: &str, subject: &str| sel.wants(row) || sel.wants(subject);
        out.records.extend(crate::userloop::run(&sel.plan, &wants));
        bar.inc(1);
        return;
    }
    if b.subject_free() {
        if sel.wants("none") {
            bar.set_message(format!("{} none", b.name()));
            let v = bench::run::<subject::SolEmpty>(b, 0, 1, &sel.plan, None);
            out.records.extend(Record::from_values(
                b.name(),
                "none",
                Kind::SpeedOfLight.as_str(),
                1,
                0,
                &v,
            ));
            bar.inc(1);
        }
        return;
    }
    if b.interleaved() {
        run_interleaved(sel, b, bar, out);
        return;
    }
    let mut v = Visit {
        sel,
        bench: b,
        bar,
        out,
    };
    subject::visit_subjects(&mut v);
    if b == Bench::SystemMonitor {
        for (i, row) in syslock::ROWS.iter().enumerate() {
            if !sel.wants(row.name) {
                continue;
            }
            bar.set_message(format!("{} {}", b.name(), row.name));
            let v = syslock::run(i, sel.plan.system_calls, sel.plan.reps);
            out.records.extend(Record::from_values(
                b.name(),
                row.name,
                Kind::SystemLock.as_str(),
                1,
                0,
                &v,
            ));
            bar.inc(1);
        }
    }
}

/// One figure a subject makes in a bench: its row, the knob value, the parameter, threads.
struct Figure {
    row: String,
    knob: Option<u32>,
    param: u64,
    threads: usize,
}

impl Figure {
    /// The record of this figure's `values` in bench `b`, its subject of kind `kind`.
    fn record(&self, b: Bench, kind: Kind, values: &[f64]) -> Option<Record> {
        Record::from_values(
            b.name(),
            &self.row,
            kind.as_str(),
            self.threads,
            self.param,
            values,
        )
    }
}

/// The figures `S` makes in bench `b` as `sel` asks, each selected row at each parameter;
/// none (the skip recorded in `skips`) if `S` cannot run `b`.
fn figures_of<S: Subject>(sel: &Selection, b: Bench, skips: &mut Vec<Skip>) -> Vec<Figure> {
    let rows = sel.rows_for::<S>(b);
    if rows.is_empty() {
        return Vec::new();
    }
    if let Some(reason) = b.skip_reason::<S>() {
        skips.push(Skip {
            bench: b.name(),
            row: S::NAME,
            reason,
        });
        return Vec::new();
    }
    let params = sel.params_of(b);
    let mut v = Vec::new();
    for (row, knob) in rows {
        for &param in &params {
            let threads = b.threads(param, sel.cloud_threads());
            v.push(Figure {
                row: row.clone(),
                knob,
                param,
                threads,
            });
        }
    }
    v
}

/// Runs an [interleaved](Bench::interleaved) bench: every selected row's [`bench::Job`] is
/// made first, then all of them run round by round ([`bench::interleave`]); records come out
/// in the rows' usual order.
fn run_interleaved(sel: &Selection, b: Bench, bar: &ProgressBar, out: &mut Outcome) {
    struct Jobs<'a> {
        sel: &'a Selection,
        bench: Bench,
        figures: Vec<(Figure, Kind)>,
        jobs: Vec<Box<dyn bench::Job>>,
        skips: Vec<Skip>,
    }
    impl SubjectVisitor for Jobs<'_> {
        fn visit<S: Subject>(&mut self) {
            let b = self.bench;
            for f in figures_of::<S>(self.sel, b, &mut self.skips) {
                let plan = &self.sel.plan;
                self.jobs
                    .push(bench::job::<S>(b, f.param, f.threads, plan, f.knob));
                self.figures.push((f, S::KIND));
            }
        }
    }
    let mut j = Jobs {
        sel,
        bench: b,
        figures: Vec::new(),
        jobs: Vec::new(),
        skips: Vec::new(),
    };
    subject::visit_subjects(&mut j);
    out.skips.append(&mut j.skips);
    bar.set_message(format!(
        "{} ({} rows, round by round)",
        b.name(),
        j.jobs.len()
    ));
    let values = bench::interleave(&mut j.jobs, sel.plan.reps, sel.plan.figure_budget);
    drop(j.jobs);
    for ((f, kind), v) in j.figures.iter().zip(values) {
        out.records.extend(f.record(b, *kind, &v));
        bar.inc(1);
    }
}

struct Visit<'a> {
    sel: &'a Selection,
    bench: Bench,
    bar: &'a ProgressBar,
    out: &'a mut Outcome,
}

impl SubjectVisitor for Visit<'_> {
    fn visit<S: Subject>(&mut self) {
        let b = self.bench;
        for f in figures_of::<S>(self.sel, b, &mut self.out.skips) {
            self.bar
                .set_message(format!("{} {} {}", b.name(), f.row, f.param));
            let v = bench::run::<S>(b, f.param, f.threads, &self.sel.plan, f.knob);
            self.out.records.extend(f.record(b, S::KIND, &v));
            self.bar.inc(1);
        }
    }
}

/// Whether `b` has anything to do with the rows `sel` selects: a figure to measure, or a
/// selected row it skips (the skip note says why). `false` means the bench would print
/// nothing of the selection (a subject-free bench and no `--protocol none`, say).
pub fn bench_has_rows(sel: &Selection, b: Bench) -> bool {
    struct Any<'a>(&'a Selection, Bench, bool);
    impl SubjectVisitor for Any<'_> {
        fn visit<S: Subject>(&mut self) {
            self.2 |= !self.0.rows_for::<S>(self.1).is_empty();
        }
    }
    if b == Bench::UserLoop {
        return crate::userloop::names().iter().any(|row| {
            let subject = row.strip_prefix(crate::userloop::PREFIX).unwrap_or(row);
            let subject = subject.strip_suffix("-nested").unwrap_or(subject);
            sel.wants(row) || sel.wants(subject)
        });
    }
    if b.subject_free() {
        return sel.wants("none");
    }
    if b == Bench::SystemMonitor && syslock::ROWS.iter().any(|r| sel.wants(r.name)) {
        return true;
    }
    let mut any = Any(sel, b, false);
    subject::visit_subjects(&mut any);
    any.2
}

/// Figures [`run`] will measure (the progress bar's length).
fn count_jobs(sel: &Selection) -> usize {
    struct Count<'a>(&'a Selection, Bench, usize);
    impl SubjectVisitor for Count<'_> {
        fn visit<S: Subject>(&mut self) {
            if self.1.skip_reason::<S>().is_none() {
                self.2 += self.0.rows_for::<S>(self.1).len() * self.0.params_of(self.1).len();
            }
        }
    }
    sel.benches
        .iter()
        .map(|&b| {
            if b == Bench::UserLoop {
                1
            } else if b.subject_free() {
                usize::from(sel.wants("none"))
            } else {
                let mut c = Count(sel, b, 0);
                subject::visit_subjects(&mut c);
                let extra = if b == Bench::SystemMonitor {
                    syslock::ROWS.iter().filter(|r| sel.wants(r.name)).count()
                } else {
                    0
                };
                c.2 + extra
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        let names = [
            "thin",
            "thin-seed",
            "fable",
            "sync",
            "no-sync",
            "parking-lot",
            "fat",
        ];
        let s = |n| suggest(n, names);
        assert_eq!(s("thinn"), Some("thin"));
        assert_eq!(s("fabel"), Some("fable"));
        assert_eq!(s("snyc"), Some("sync"));
        assert_eq!(s("parking"), Some("parking-lot"));
        assert_eq!(s("nosuch"), None);
        assert_eq!(s("xyz"), None);
        assert_eq!(distance("kitten", "sitting"), 3);
    }

    #[test]
    fn rank_follows_the_filters() {
        let mut sel = tiny(&["thin", "fable*", "std-mutex"]);
        sel.rows.push("zzz".into());
        assert_eq!(sel.rank("thin"), 0);
        assert_eq!(sel.rank("user-loop-thin-nested"), 0);
        assert_eq!(sel.rank("fable-rseq[learn-limit=2]"), 1);
        assert_eq!(sel.rank("user-loop-std-mutex"), 2);
        assert_eq!(sel.rank("thin-seed"), 4);
    }
    use crate::bench::Plan;
    use std::time::Duration;

    fn tiny(rows: &[&str]) -> Selection {
        Selection {
            benches: vec![Bench::AllocLock, Bench::Sync],
            rows: rows.iter().map(|r| r.to_string()).collect(),
            params: Some(vec![2]),
            threads: None,
            plan: Plan {
                reps: 1,
                pairs: 2_000,
                figure_budget: Duration::from_secs(10),
                ..Plan::new(true, None)
            },
        }
    }

    /// Every subject with a knob gets one AllocLock row per knob value (and only AllocLock
    /// sweeps), selected by the subject's name; a swept row can be selected alone; the
    /// progress bar counts exactly the figures measured.
    #[test]
    fn knob_sweep_rows() {
        struct Knobbed(Vec<(&'static str, objmon::vm::Knob)>);
        impl SubjectVisitor for Knobbed {
            fn visit<S: Subject>(&mut self) {
                if let Some(k) = S::KNOB {
                    self.0.push((S::NAME, k));
                }
            }
        }
        let mut knobbed = Knobbed(Vec::new());
        subject::visit_subjects(&mut knobbed);
        assert!(
            !knobbed.0.is_empty(),
            "no protocol has a knob: nothing swept"
        );
        for (name, k) in knobbed.0 {
            let sel = tiny(&[name]);
            let out = run(&sel);
            assert_eq!(out.records.len(), count_jobs(&sel), "{name}");
            let rows = |bench: &str| -> Vec<String> {
                out.records
                    .iter()
                    .filter(|r| r.bench == bench)
                    .map(|r| r.protocol.clone())
                    .collect()
            };
            let mut want = vec![name.to_string()];
            want.extend(k.values.iter().map(|&v| subject::knob_row(name, &k, v)));
            assert_eq!(rows("alloc-lock"), want);
            assert_eq!(rows("sync"), vec![name.to_string()]);

            let one = subject::knob_row(name, &k, k.values[0]);
            let sel = tiny(&[&one]);
            let out = run(&sel);
            assert_eq!(out.records.len(), 1, "{one}");
            assert_eq!(out.records[0].protocol, one);
            assert_eq!(count_jobs(&sel), 1);
        }
    }
}
