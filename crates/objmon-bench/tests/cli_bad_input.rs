//! Every argument of `objmon-bench` is checked for the subcommand and bench it is given to:
//! a value that would panic, abort, be silently ignored or print a meaningless figure is a
//! usage error (exit code 2, `error: …` on stderr naming the argument, nothing on stdout, no
//! panic), and small valid runs still work. Every child runs under a watchdog, so a hang is
//! a failure, not a stuck test.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest a child may run before it is killed and the test fails.
const LIMIT: Duration = Duration::from_secs(60);

struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `objmon-bench args`, killing it (and failing) after [`LIMIT`].
fn run(args: &[&str]) -> Out {
    let mut child = Command::new(env!("CARGO_BIN_EXE_objmon-bench"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("objmon-bench starts");
    // Drain both pipes on threads, so that a chatty child never blocks on a full pipe.
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if t0.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("objmon-bench {args:?}: still running after {LIMIT:?}; killed");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Out {
        code: status.code(),
        stdout: out.join().expect("stdout reader"),
        stderr: err.join().expect("stderr reader"),
    }
}

/// A trace checked into the repository.
const TRACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/h2-small.trace");

/// A path inside the test's own scratch directory (made on first use).
fn scratch(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("objmon-cli-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir.join(name).to_str().expect("utf-8 path").to_string()
}

#[test]
fn bad_input_is_a_usage_error() {
    let not_a_trace = scratch("not-a-trace.trace");
    std::fs::write(&not_a_trace, b"not a trace").unwrap();
    let a_file = scratch("a-file");
    std::fs::write(&a_file, b"a file, not a directory").unwrap();
    let under_a_file = format!("{a_file}/report");
    let missing_dir = scratch("no-such-dir/traces");
    let missing_file = scratch("no-such.trace");
    let dir = std::env::temp_dir();
    let dir = dir.to_str().unwrap();

    // (arguments, what stderr must name: the offending argument, and the bench if any)
    let cases: &[(&[&str], &[&str])] = &[
        // run --param: out of every bench's range, or of the given bench's, or not a number.
        (&["run", "--bench", "threads", "--param", "0"], &["--param"]),
        (
            &["run", "--bench", "threads", "--param", "32768"],
            &["--param", "threads", "32767"],
        ),
        (
            &["run", "--bench", "multi-sync", "--param", "0"],
            &["--param"],
        ),
        (
            &["run", "--bench", "multi-sync", "--param", "10000001"],
            &["--param"],
        ),
        (
            &["run", "--bench", "cloud-growth", "--param", "0"],
            &["--param"],
        ),
        (
            &["run", "--bench", "alloc-lock", "--param", "1001"],
            &["--param", "alloc-lock", "1000"],
        ),
        (
            &[
                "run",
                "--bench",
                "alloc-lock",
                "--param",
                "18446744073709551615",
            ],
            &["--param"],
        ),
        (
            &["run", "--bench", "multi-sync", "--param=-1"],
            &["--param"],
        ),
        (
            &["run", "--bench", "multi-sync", "--param", ""],
            &["--param"],
        ),
        (
            &["run", "--bench", "multi-sync", "--param", "1,2"],
            &["--param"],
        ),
        (
            &[
                "run",
                "--bench",
                "multi-sync",
                "--param",
                "3",
                "--param",
                "3",
            ],
            &["--param", "twice"],
        ),
        // run --param to a bench without a parameter (it would be ignored).
        (
            &["run", "--bench", "sync", "--param", "3"],
            &["--param", "sync", "multi-sync"],
        ),
        (
            &["run", "--bench", "cloud", "--param", "3"],
            &["--param", "cloud"],
        ),
        (&["run", "--param", "3"], &["--param", "no --bench"]),
        (
            &[
                "run", "--bench", "threads", "--bench", "sync", "--param", "2",
            ],
            &["--param", "sync"],
        ),
        // run --threads: out of range, or to a bench with a fixed thread count.
        (
            &["run", "--bench", "threads", "--threads", "0"],
            &["--threads"],
        ),
        (
            &["run", "--bench", "threads", "--threads", "100000"],
            &["--threads", "32767"],
        ),
        (
            &["run", "--bench", "cloud", "--threads", "32768"],
            &["--threads"],
        ),
        (
            &["run", "--bench", "sync", "--threads", "4"],
            &["--threads", "sync", "cloud"],
        ),
        (
            &["run", "--bench", "prod-cons", "--threads", "4"],
            &["--threads", "prod-cons"],
        ),
        (&["run", "--threads", "4"], &["--threads", "no --bench"]),
        (
            &[
                "run",
                "--bench",
                "threads",
                "--threads",
                "2",
                "--param",
                "2",
            ],
            &["--threads", "--param"],
        ),
        // run --bench, --protocol, --reps, --format.
        (&["run", "--bench", "nosuch"], &["bench", "nosuch"]),
        (
            &["run", "--bench", "sync", "--bench", "sync"],
            &["--bench", "twice"],
        ),
        (&["run", "--protocol", "nosuch"], &["protocol", "nosuch"]),
        (
            &["run", "--bench", "no-sync", "--protocol", "thin"],
            &["--protocol", "no-sync", "none"],
        ),
        (
            &[
                "run",
                "--bench",
                "sync",
                "--bench",
                "call",
                "--protocol",
                "thin",
            ],
            &["--protocol", "call"],
        ),
        (
            &[
                "run",
                "--bench",
                "sync",
                "--protocol",
                "fable[learn-limit=3]",
            ],
            &["--protocol", "sync"],
        ),
        (&["run", "--reps", "0"], &["--reps"]),
        (&["run", "--reps", "1001"], &["--reps", "1000"]),
        (&["run", "--format", "xml"], &["--format"]),
        // report.
        (&["report", "--reps", "0"], &["--reps"]),
        (&["report", "--reps", "99999999999999999999"], &["--reps"]),
        (&["report", "--traces", &missing_dir], &["--traces"]),
        (&["report", "--traces", &a_file], &["--traces"]),
        (&["report", "--quick", "--out", &under_a_file], &["--out"]),
        // stress.
        (&["stress", "--seconds", "0"], &["--seconds"]),
        (&["stress", "--seconds", "86401"], &["--seconds"]),
        (
            &["stress", "--seconds", "18446744073709551615"],
            &["--seconds"],
        ),
        (&["stress", "--watchdog", "0"], &["--watchdog"]),
        (
            &["stress", "--watchdog", "18446744073709551615"],
            &["--watchdog"],
        ),
        (&["stress", "--objects", "0"], &["--objects"]),
        (&["stress", "--objects", "1"], &["--objects"]),
        (&["stress", "--objects", "10000001"], &["--objects"]),
        (&["stress", "--threads", "0"], &["--threads"]),
        (&["stress", "--threads", "32767"], &["--threads", "32766"]),
        (
            &["stress", "--protocol", "nosuch", "--seconds", "1"],
            &["protocol", "nosuch"],
        ),
        (&["stress", "--seed=-1"], &["--seed"]),
        // profile.
        (&["profile", "--millis", "0"], &["--millis"]),
        (&["profile", "--millis", "99"], &["--millis", "100"]),
        (
            &["profile", "--millis", "18446744073709551615"],
            &["--millis"],
        ),
        (
            &["profile", "--protocol", "nosuch"],
            &["protocol", "nosuch"],
        ),
        // replay.
        (&["replay", &missing_file], &["<FILE>", "no-such.trace"]),
        (&["replay", dir], &["<FILE>", "not a file"]),
        (&["replay", &not_a_trace], &["<FILE>", "OBJMONT1"]),
        (&["replay", TRACE, "--reps", "0"], &["--reps"]),
        (&["replay", TRACE, "--reps", "1001"], &["--reps"]),
        (&["replay", TRACE, "--wait-cap-ms", "0"], &["--wait-cap-ms"]),
        (
            &["replay", TRACE, "--wait-cap-ms", "10001"],
            &["--wait-cap-ms"],
        ),
        (
            &["replay", TRACE, "--wait-cap-ms", "18446744073709551615"],
            &["--wait-cap-ms"],
        ),
        (
            &["replay", TRACE, "--protocol", "thinn"],
            &["protocol", "thinn", "thin"],
        ),
        // trace.
        (&["trace"], &["<FILES>"]),
        (&["trace", &missing_file], &["<FILES>", "no-such.trace"]),
        (&["trace", TRACE, &not_a_trace], &["<FILES>", "OBJMONT1"]),
        // memory-probe (the report's child).
        (&["memory-probe", "monitor", "0"], &["<N>"]),
        (&["memory-probe", "nosuch", "10"], &["kind", "nosuch"]),
        // No such subcommand or flag.
        (&["nosuch"], &["nosuch"]),
        (&["list", "--threads", "4"], &["--threads"]),
    ];
    let mut failures = Vec::new();
    for &(args, want) in cases {
        let out = run(args);
        let err = &out.stderr;
        let mut why = Vec::new();
        if out.code != Some(2) {
            why.push(format!("exit code {:?}, not 2", out.code));
        }
        if !err.starts_with("error: ") {
            why.push("stderr does not begin with `error: `".to_string());
        }
        if err.contains("panicked") {
            why.push("a panic".to_string());
        }
        if !out.stdout.is_empty() {
            why.push(format!("stdout not empty: {:?}", out.stdout));
        }
        for w in want {
            if !err.contains(w) {
                why.push(format!("stderr does not name {w:?}"));
            }
        }
        if !why.is_empty() {
            failures.push(format!("{args:?}: {}\n{err}", why.join("; ")));
        }
    }
    let _ = std::fs::remove_dir_all(std::path::Path::new(&a_file).parent().unwrap());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Small valid runs of every subcommand still work: exit code 0, the figures on stdout.
#[test]
fn small_valid_runs_still_work() {
    fn run_with<'a>(extra: &[&'a str]) -> Vec<&'a str> {
        let mut a = vec![
            "run",
            "--quick",
            "--reps",
            "1",
            "--no-java",
            "--format",
            "csv",
        ];
        a.extend(extra);
        a
    }
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            run_with(&["--bench", "sync", "--protocol", "thin"]),
            "sync,thin,",
        ),
        (
            run_with(&["--bench", "no-sync", "--protocol", "none"]),
            "no-sync,none,",
        ),
        (
            run_with(&[
                "--bench",
                "no-sync",
                "--bench",
                "sync",
                "--protocol",
                "none",
                "--protocol",
                "thin",
            ]),
            "sync,thin,",
        ),
        (
            run_with(&["--bench", "threads", "--param", "2", "--protocol", "thin"]),
            "threads,thin,",
        ),
        (
            run_with(&["--bench", "threads", "--threads", "2", "--protocol", "thin"]),
            "threads,thin,",
        ),
        (
            run_with(&["--bench", "cloud", "--threads", "2", "--protocol", "thin"]),
            "cloud,thin,",
        ),
        (
            run_with(&[
                "--bench",
                "multi-sync",
                "--param",
                "10",
                "--protocol",
                "thin",
            ]),
            "multi-sync,thin,",
        ),
        (
            run_with(&[
                "--bench",
                "alloc-lock",
                "--param",
                "1",
                "--protocol",
                "thin",
            ]),
            "alloc-lock,thin,",
        ),
        (
            vec!["profile", "--protocol", "thin", "--millis", "100"],
            "thin |",
        ),
        (
            vec![
                "stress",
                "--protocol",
                "thin",
                "--seconds",
                "1",
                "--threads",
                "2",
                "--objects",
                "2",
            ],
            "thin ",
        ),
        (
            vec![
                "replay",
                TRACE,
                "--protocol",
                "thin",
                "--reps",
                "1",
                "--wait-cap-ms",
                "10",
            ],
            "| thin |",
        ),
        (vec!["trace", TRACE], "h2-small"),
        (vec!["list"], "alloc-lock"),
    ];
    let mut failures = Vec::new();
    for (args, want) in &cases {
        let t0 = Instant::now();
        let out = run(args);
        if out.code != Some(0) || out.stderr.contains("panicked") || !out.stdout.contains(want) {
            failures.push(format!(
                "{args:?}: exit code {:?}, {:?} in stdout: {}\nstdout:\n{}\nstderr:\n{}",
                out.code,
                want,
                out.stdout.contains(want),
                out.stdout,
                out.stderr
            ));
        }
        eprintln!("{args:?}: {:.2} s", t0.elapsed().as_secs_f64());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A reader that closes the pipe after the first bytes (`objmon-bench list | head -c 1`):
/// the process ends by the signal, as a C tool does, with no panic on stderr.
#[test]
fn a_closed_stdout_ends_the_process_without_a_panic() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_objmon-bench"))
        .arg("list")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("objmon-bench starts");
    let mut first = [0u8; 1];
    child
        .stdout
        .take()
        .expect("piped")
        .read_exact(&mut first)
        .expect("list prints something");
    // The read end is dropped here: the child's next write meets a closed pipe.
    let start = Instant::now();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("piped")
        .read_to_string(&mut stderr)
        .expect("stderr readable");
    let status = child.wait().expect("child waited for");
    assert!(
        start.elapsed() < LIMIT,
        "list did not end after its reader left"
    );
    assert!(
        !stderr.contains("panicked"),
        "objmon-bench list panicked on a closed stdout: {stderr}"
    );
    assert_ne!(status.code(), Some(101), "exit code of a Rust panic");
}
