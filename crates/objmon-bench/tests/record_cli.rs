//! `objmon-bench record` as a user runs it: a tiny run writes a trace-event JSON file that
//! parses back with its tracks and events and says so on stdout; bad input is a usage error
//! (exit 2) that writes no file. Nothing here asserts a time.

use serde_json::Value;
use std::process::{Command, Output};

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_objmon-bench"))
        .args(args)
        .output()
        .expect("objmon-bench runs")
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("objmon-record-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn record_writes_a_trace_perfetto_opens() {
    let path = tmp("prod-cons.json");
    let out = bench(&[
        "record",
        "--bench",
        "prod-cons",
        "--protocol",
        "thin",
        "--trace",
        path.to_str().unwrap(),
        "--threads",
        "2",
        "--ops",
        "200",
        "--threshold",
        "0",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("wrote") && stdout.contains("MonitorNotify"),
        "{stdout}"
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).expect("JSON");
    assert!(v["displayTimeUnit"].is_string());
    let events = v["traceEvents"].as_array().expect("traceEvents");
    let tracks: Vec<&str> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    assert_eq!(tracks.len(), 2, "{tracks:?}");
    assert!(tracks.iter().any(|t| t.starts_with("producer 0")));
    assert!(tracks.iter().any(|t| t.starts_with("consumer 0")));
    // Every put notifies: 200 of them at least, each an instant on a named track, in µs.
    let notifies = events
        .iter()
        .filter(|e| e["name"] == "MonitorNotify")
        .inspect(|e| assert!(e["ph"] == "i" && e["ts"].is_number()))
        .count();
    assert!(notifies >= 200, "{notifies}");
    assert_eq!(v["otherData"]["protocol"], "thin");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn record_rejects_bad_input() {
    let path = tmp("never.json");
    let p = path.to_str().unwrap();
    for (args, want) in [
        (
            vec!["--bench", "cloud", "--protocol", "thin"],
            "unknown bench \"cloud\"",
        ),
        (
            vec!["--bench", "threads", "--protocol", "thinn"],
            "unknown protocol \"thinn\"",
        ),
        (
            vec![
                "--bench",
                "prod-cons",
                "--protocol",
                "thin",
                "--threads",
                "1",
            ],
            "at least 2 threads",
        ),
        (
            vec![
                "--bench",
                "threads",
                "--protocol",
                "thin",
                "--threshold",
                "soon",
            ],
            "--threshold",
        ),
    ] {
        let mut all = vec!["record", "--trace", p];
        all.extend(args);
        let out = bench(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {err}");
        assert!(err.contains(want), "{all:?}: {want:?} not in {err}");
        assert!(!path.exists(), "{all:?} wrote the file");
    }
}
