//! The `objmon-bench` command line as a user meets it: bad input is a usage error (exit code 2,
//! the valid names, the closest one), never an empty table with exit code 0 or a panic; a
//! valid selection prints its rows in the order asked for.

use std::process::{Command, Output};

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_objmon-bench"))
        .args(args)
        .output()
        .expect("objmon-bench runs")
}

/// Runs `args`, asserts exit code 2, an empty stdout and that stderr holds every one of `want`.
fn usage_error(args: &[&str], want: &[&str]) {
    let out = bench(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?} printed on stdout");
    for w in want {
        assert!(err.contains(w), "{args:?}: {w:?} not in:\n{err}");
    }
}

#[test]
fn unknown_protocol_suggests_the_closest() {
    usage_error(
        &["run", "--quick", "--protocol", "thinn"],
        &[
            "unknown protocol \"thinn\"",
            "did you mean \"thin\"?",
            "valid:",
            "fable",
        ],
    );
    usage_error(
        &["run", "--quick", "--protocol", "nosuch"],
        &["unknown protocol \"nosuch\"", "valid:", "std-mutex"],
    );
}

#[test]
fn unknown_pattern_is_an_error() {
    usage_error(
        &["run", "--quick", "--protocol", "nosuch*"],
        &["matches no row", "\"nosuch*\""],
    );
}

#[test]
fn unknown_bench_suggests_the_closest() {
    usage_error(
        &["run", "--quick", "--bench", "snyc"],
        &[
            "unknown bench \"snyc\"",
            "did you mean \"sync\"?",
            "alloc-lock",
        ],
    );
}

#[test]
fn knob_values_are_checked() {
    usage_error(
        &["run", "--quick", "--protocol", "fable[learn-limit=99]"],
        &["learn-limit", "1, 2, 3"],
    );
    usage_error(
        &["run", "--quick", "--protocol", "thin[learn-limit=2]"],
        &["thin has no knob", "fable"],
    );
}

/// Valid names that no selected bench runs: an error, not an empty table.
#[test]
fn a_selection_that_measures_nothing_is_an_error() {
    usage_error(
        &[
            "run",
            "--quick",
            "--bench",
            "sync",
            "--protocol",
            "fable[learn-limit=3]",
            "--no-java",
        ],
        &["measures nothing", "alloc-lock"],
    );
}

#[test]
fn zero_counts_are_refused_by_the_parser() {
    usage_error(
        &["run", "--quick", "--threads", "0"],
        &["--threads", "not in 1..="],
    );
    usage_error(
        &["run", "--quick", "--reps", "0"],
        &["--reps", "not in 1..="],
    );
    usage_error(&["stress", "--threads", "0"], &["--threads", "not in 1..="]);
}

#[test]
fn profile_and_stress_name_unknown_protocols() {
    usage_error(
        &["profile", "--protocol", "nosuch"],
        &["unknown protocol \"nosuch\"", "thin"],
    );
    usage_error(
        &["stress", "--protocol", "fabel", "--seconds", "1"],
        &["unknown protocol \"fabel\"", "did you mean \"fable\"?"],
    );
    let out = bench(&["stress", "--protocol", "nosuch", "--seconds", "1"]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("VIOLATION"));
}

#[test]
fn report_out_is_checked_before_any_work() {
    let file = std::env::temp_dir().join(format!("objmon-cli-test-{}", std::process::id()));
    std::fs::write(&file, b"a file, not a directory").unwrap();
    let out = file.join("report");
    let t = std::time::Instant::now();
    usage_error(
        &["report", "--quick", "--out", out.to_str().unwrap()],
        &["--out", "cannot write"],
    );
    std::fs::remove_file(&file).unwrap();
    // Not a functional requirement, a hint that nothing ran: a report takes minutes.
    assert!(t.elapsed().as_secs() < 30);
}

#[test]
fn hotspot_pattern_without_java_is_a_warning() {
    let out = bench(&[
        "run",
        "--quick",
        "--reps",
        "1",
        "--bench",
        "sync",
        "--protocol",
        "hotspot*",
        "--protocol",
        "thin",
        "--no-java",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("warning: --protocol hotspot*"), "{err}");
}

/// Rows print in the order of `--protocol`, benches in the order of `--bench`; with stderr
/// not a terminal, one progress line per finished bench.
#[test]
fn rows_print_in_the_order_asked_for() {
    let out = bench(&[
        "run",
        "--quick",
        "--reps",
        "1",
        "--bench",
        "sync",
        "--bench",
        "nested-sync",
        "--protocol",
        "parking-lot",
        "--protocol",
        "thin",
        "--protocol",
        "fat",
        "--no-java",
        "--format",
        "csv",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<(&str, &str)> = text
        .lines()
        .skip(1)
        .map(|l| {
            let mut f = l.split(',');
            (f.next().unwrap(), f.next().unwrap())
        })
        .collect();
    let want: Vec<(&str, &str)> = ["sync", "nested-sync"]
        .into_iter()
        .flat_map(|b| ["parking-lot", "thin", "fat"].map(|p| (b, p)))
        .collect();
    assert_eq!(rows, want, "{text}");
    assert!(err.contains("[1/2] sync: 3 rows"), "{err}");
    assert!(err.contains("[2/2] nested-sync: 3 rows"), "{err}");
}

/// `replay --protocol` with an unknown name is a usage error naming the valid ones, as
/// everywhere else in the CLI.
#[test]
fn replay_rejects_an_unknown_protocol() {
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../java/agent/test/counts.trace"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_objmon-bench"))
        .args(["replay", trace, "--protocol", "thinn"])
        .output()
        .expect("run objmon-bench");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did you mean \"thin\""), "{err}");
    assert!(err.contains("std-mutex"), "{err}");
}
