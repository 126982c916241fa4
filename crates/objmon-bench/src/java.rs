//! HotSpot rows: finds every JDK on the machine, compiles `java/ObjmonBench.java` into
//! `target/objmon-java/` with each, and runs it in every locking mode that JDK accepts.
//!
//! Modes (each probed with `java <flags> -version`; a JVM that refuses a flag skips the mode):
//! `default` (no flag; only on JDKs without `LockingMode`), `biased` (`-XX:+UseBiasedLocking`,
//! JDK ≤ 17), `lm0` / `lm1` / `lm2` (`-XX:LockingMode=0/1/2`: monitors only / legacy
//! stack-locking / lightweight lock-stack locking, JDK 21+). Every run has
//! `-XX:-EliminateLocks` so that no synchronized block is elided or coarsened, and keeps the
//! synchronized methods out of line (`CompileCommand=dontinline`), as the Rust side does.

use crate::bench::{Bench, Plan};
use crate::record::Record;
use crate::runner::Selection;
use crate::subject::Kind;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One JDK found on the machine.
#[derive(Clone, Debug)]
pub struct Jdk {
    /// `JAVA_HOME`.
    pub home: PathBuf,
    /// Feature release (17, 21, 25, ...).
    pub major: u32,
    /// The full `java -version` first line.
    pub version: String,
}

/// A locking mode of one JDK.
#[derive(Clone, Debug)]
pub struct Mode {
    /// Row name: `hotspot<major>-<mode>`.
    pub row: String,
    /// Extra JVM flags.
    pub flags: Vec<String>,
    /// What the mode is.
    pub summary: &'static str,
}

/// What the HotSpot part produced.
#[derive(Default)]
pub struct JavaOutcome {
    /// Figures.
    pub records: Vec<Record>,
    /// JDKs and modes found, with their flags (for the report).
    pub modes: Vec<(Jdk, Mode)>,
    /// Anything skipped or odd, in words.
    pub notes: Vec<String>,
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap_or_else(|_| PathBuf::from("."))
}

/// Every JDK (a `javac` next to a `java`) on `PATH` or under `/usr/lib/jvm`, one per
/// canonical home, newest first.
pub fn find_jdks() -> Vec<Jdk> {
    let mut homes: Vec<PathBuf> = Vec::new();
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let javac = dir.join("javac");
            if let Ok(real) = javac.canonicalize() {
                if let Some(home) = real.parent().and_then(Path::parent) {
                    homes.push(home.to_path_buf());
                }
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir("/usr/lib/jvm") {
        for e in rd.flatten() {
            if let Ok(home) = e.path().canonicalize() {
                homes.push(home);
            }
        }
    }
    let mut seen = BTreeMap::new();
    for home in homes {
        if !home.join("bin/javac").is_file() || !home.join("bin/java").is_file() {
            continue;
        }
        if seen.contains_key(&home) {
            continue;
        }
        if let Some((major, version)) = java_version(&home) {
            seen.insert(
                home.clone(),
                Jdk {
                    home,
                    major,
                    version,
                },
            );
        }
    }
    let mut v: Vec<Jdk> = seen.into_values().collect();
    v.sort_by(|a, b| b.major.cmp(&a.major).then(a.home.cmp(&b.home)));
    v
}

fn java_version(home: &Path) -> Option<(u32, String)> {
    let out = Command::new(home.join("bin/java"))
        .arg("-version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stderr).to_string();
    let first = text.lines().next()?.to_string();
    let quoted = first.split('"').nth(1)?;
    let mut parts = quoted.split(['.', '-', '+']);
    let a: u32 = parts.next()?.parse().ok()?;
    let major = if a == 1 {
        parts.next()?.parse().ok()?
    } else {
        a
    };
    Some((major, first))
}

fn accepts(jdk: &Jdk, flags: &[String]) -> bool {
    Command::new(jdk.home.join("bin/java"))
        .args(flags)
        .arg("-XX:-EliminateLocks")
        .arg("-version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The locking modes `jdk` accepts.
pub fn modes(jdk: &Jdk) -> Vec<Mode> {
    let lm = |n: u32| vec![format!("-XX:LockingMode={n}")];
    let row = |m: &str| format!("hotspot{}-{m}", jdk.major);
    let mut out = Vec::new();
    if accepts(jdk, &lm(2)) {
        let summaries = [
            "LockingMode=0: every lock is an ObjectMonitor",
            "LockingMode=1: legacy stack-locking (displaced header)",
            "LockingMode=2: lightweight locking (per-thread lock stack)",
        ];
        for (n, s) in summaries.into_iter().enumerate() {
            if accepts(jdk, &lm(n as u32)) {
                out.push(Mode {
                    row: row(&format!("lm{n}")),
                    flags: lm(n as u32),
                    summary: s,
                });
            }
        }
    } else {
        out.push(Mode {
            row: row("default"),
            flags: Vec::new(),
            summary: "the JDK's default locking (stack-locking on JDK 15-20)",
        });
        let biased = vec!["-XX:+UseBiasedLocking".to_string()];
        if jdk.major >= 15 && accepts(jdk, &biased) {
            out.push(Mode {
                row: row("biased"),
                flags: biased,
                summary: "-XX:+UseBiasedLocking: biased locking (KKO-style, with rebiasing)",
            });
        }
    }
    out
}

fn list(v: &[u64]) -> String {
    v.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

/// Compiles and runs the Java benchmarks on every JDK and mode that `sel` selects.
pub fn run(sel: &Selection) -> JavaOutcome {
    let mut out = JavaOutcome::default();
    let jdks = find_jdks();
    if jdks.is_empty() {
        out.notes.push(
            "No JDK found (no javac on PATH or under /usr/lib/jvm): HotSpot rows skipped."
                .to_string(),
        );
        return out;
    }
    let source = workspace_root().join("java/ObjmonBench.java");
    if !source.is_file() {
        out.notes.push(format!(
            "{} not found: HotSpot rows skipped.",
            source.display()
        ));
        return out;
    }
    for jdk in jdks {
        if jdk.major < 11 {
            out.notes.push(format!(
                "{} ({}) is older than 11 (the benchmarks use Java 11 APIs): skipped.",
                jdk.version,
                jdk.home.display()
            ));
            continue;
        }
        let modes: Vec<Mode> = modes(&jdk)
            .into_iter()
            .filter(|m| sel.wants(&m.row))
            .collect();
        if modes.is_empty() {
            continue;
        }
        let classes = workspace_root()
            .join("target/objmon-java")
            .join(format!("jdk{}", jdk.major));
        let _ = std::fs::create_dir_all(&classes);
        let javac = Command::new(jdk.home.join("bin/javac"))
            .arg("-d")
            .arg(&classes)
            .arg(&source)
            .stdin(Stdio::null())
            .output();
        match javac {
            Ok(o) if o.status.success() => {}
            Ok(o) => {
                out.notes.push(format!(
                    "javac of {} failed: {}",
                    jdk.version,
                    String::from_utf8_lossy(&o.stderr).trim()
                ));
                continue;
            }
            Err(e) => {
                out.notes
                    .push(format!("javac of {} did not start: {e}", jdk.version));
                continue;
            }
        }
        for mode in modes {
            match run_mode(&jdk, &mode, &classes, sel) {
                Ok((recs, note)) => {
                    out.records.extend(recs);
                    out.notes.extend(note.map(|n| format!("{}: {n}", mode.row)));
                }
                Err(e) => out.notes.push(format!("{}: {e}", mode.row)),
            }
            out.modes.push((jdk.clone(), mode));
        }
    }
    out
}

/// Runs one mode: its figures, and a note if the JVM failed or was stopped.
fn run_mode(
    jdk: &Jdk,
    mode: &Mode,
    classes: &Path,
    sel: &Selection,
) -> Result<(Vec<Record>, Option<String>), String> {
    // Quick runs give the JVMs a fifth of the loop sizes and three repetitions: JVM start-up
    // and JIT warm-up dominate otherwise, and five modes would eat most of the 3 minutes.
    let quick_plan = Plan {
        reps: 3,
        pairs: sel.plan.pairs / 5,
        productions: sel.plan.productions / 2,
        ..sel.plan
    };
    let plan: &Plan = if sel.plan.quick {
        &quick_plan
    } else {
        &sel.plan
    };
    let benches: Vec<&str> = sel.benches.iter().map(|b| b.name()).collect();
    let mut cmd = Command::new(jdk.home.join("bin/java"));
    cmd.args(&mode.flags)
        .arg("-XX:-EliminateLocks")
        .arg("-XX:CompileCommand=quiet")
        .arg("-XX:CompileCommand=dontinline,ObjmonBench$Obj::*")
        .arg("-XX:CompileCommand=dontinline,ObjmonBench$Node::*")
        .arg("-cp")
        .arg(classes)
        .arg("ObjmonBench")
        .arg(format!("reps={}", plan.reps.max(1)))
        .arg(format!("pairs={}", plan.pairs))
        .arg(format!("benches={}", benches.join(",")))
        .arg(format!("multi={}", list(&sel.params_of(Bench::MultiSync))))
        .arg(format!("threads={}", list(&sel.params_of(Bench::Threads))))
        .arg(format!("alloc={}", list(&sel.params_of(Bench::AllocLock))))
        .arg(format!("cloud_objects={}", plan.cloud_objects))
        .arg(format!("cloud_threads={}", sel.cloud_threads()))
        .arg(format!("cloud_ms={}", plan.cloud_time.as_millis()))
        .arg(format!("productions={}", plan.productions))
        .arg(format!("traversals={}", plan.traversals))
        .arg(format!("system_calls={}", plan.system_calls))
        .arg(format!("handovers={}", plan.handovers))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("java did not start: {e}"))?;
    // A hung or slow JVM must not hang the report: past the limit it is killed, and what it
    // printed so far is kept.
    let limit = if plan.quick {
        Duration::from_secs(40)
    } else {
        Duration::from_secs(1800)
    };
    let t0 = Instant::now();
    let mut killed = false;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if t0.elapsed() > limit => {
                let _ = child.kill();
                killed = true;
                break;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(e.to_string()),
        }
    }
    let o = child.wait_with_output().map_err(|e| e.to_string())?;
    let recs = parse(&String::from_utf8_lossy(&o.stdout), &mode.row);
    let note = if killed {
        Some(format!(
            "killed after {} s; kept the {} figures it had printed",
            limit.as_secs(),
            recs.len()
        ))
    } else if !o.status.success() {
        Some(format!(
            "JVM exited with {}: {}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .filter(|l| !l.contains("deprecated"))
                .collect::<Vec<_>>()
                .join(" ")
        ))
    } else {
        None
    };
    Ok((recs, note))
}

/// Parses the `R bench threads param values...` lines of one JVM run.
pub fn parse(stdout: &str, row: &str) -> Vec<Record> {
    stdout
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            if w.next()? != "R" {
                return None;
            }
            let bench = w.next()?;
            let threads: usize = w.next()?.parse().ok()?;
            let param: u64 = w.next()?.parse().ok()?;
            let v: Vec<f64> = w.filter_map(|x| x.parse().ok()).collect();
            Record::from_values(bench, row, Kind::Hotspot.as_str(), threads, param, &v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_result_lines() {
        let r = parse(
            "noise\nR sync 1 0 3.0 1.0 2.0\nR threads 4 4 9\nR bad x\n",
            "hotspot17-default",
        );
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].bench.as_str(), r[0].median), ("sync", 2.0));
        assert_eq!((r[1].threads, r[1].param), (4, 4));
        assert_eq!(r[1].kind, "hotspot");
    }
}
