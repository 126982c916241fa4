//! `objmon-bench contended` as a user meets it: a tiny slice prints its cells and the
//! summary in every format; a bad value is a usage error (exit code 2). No timing is checked.

use std::process::{Command, Output};

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_objmon-bench"))
        .arg("contended")
        .args(args)
        .output()
        .expect("objmon-bench runs")
}

const SLICE: &[&str] = &[
    "--threads",
    "2",
    "--cs",
    "empty",
    "--between",
    "none",
    "--millis",
    "20",
    "--reps",
    "2",
    "--row",
    "thin",
    "--row",
    "parking_lot",
];

fn slice(format: &str) -> String {
    let mut args = SLICE.to_vec();
    args.extend(["--format", format]);
    let out = bench(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {err}");
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn a_slice_prints_its_cells_and_the_summary() {
    let t = slice("table");
    assert!(t.contains("threads 2: ns per lock+unlock"), "{t}");
    let cell = t
        .lines()
        .find(|l| l.starts_with("empty  none"))
        .unwrap_or_else(|| panic!("no cell line in:\n{t}"));
    assert!(cell.contains('%'), "{cell}");
    assert!(t.contains("summary: ratio to parking_lot::Mutex"), "{t}");
    let thin = t
        .lines()
        .find(|l| l.starts_with("thin ") && l.contains('['))
        .unwrap_or_else(|| panic!("no summary line for thin in:\n{t}"));
    assert!(thin.split_whitespace().nth(1) == Some("2"), "{thin}");

    let csv = slice("csv");
    let mut lines = csv.lines();
    assert!(lines.next().unwrap().starts_with("threads,cs,between,row,"));
    assert!(csv.contains("\n2,empty,none,thin,2,"), "{csv}");
    assert!(csv.contains("\n2,empty,none,parking_lot,2,"), "{csv}");
    assert!(csv.contains("\nsummary_row,threads,"), "{csv}");
    assert!(csv.contains("\nthin,2,1,"), "{csv}");

    let json = slice("json");
    let cells = json.lines().filter(|l| l.starts_with("{\"cell\":")).count();
    let sums = json
        .lines()
        .filter(|l| l.starts_with("{\"summary\":"))
        .count();
    assert_eq!((cells, sums), (2, 2), "{json}");
}

#[test]
fn bad_values_exit_2() {
    for args in [
        &["--threads", "0"][..],
        &["--threads", "2,x"],
        &["--threads", "2,2"],
        &["--cs", "5ns"],
        &["--between", "forever"],
        &["--row", "nosuch"],
        &["--row", "thin,thin"],
        &["--millis", "1"],
        &["--reps", "0"],
        &["--format", "xml"],
    ] {
        let out = bench(args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "{args:?} printed on stdout");
    }
}
