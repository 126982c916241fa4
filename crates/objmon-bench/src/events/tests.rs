//! Tests of `record`'s trace and the report's picture: the JSON parsed back and held to what
//! Perfetto needs (tracks named, `ts` non-decreasing per track, slices nested, every flow
//! start finished inside slices), each kind the scenario must produce present, contended
//! enters naming another recorded thread; the SVG parsed as XML. Nothing here asserts a
//! time: where an event needs threads to meet (a contended enter), the scenario runs again
//! until it shows, a bounded number of rounds.

use super::chrome;
use super::figures;
use super::recording::{self, Events, Run, Spec, Workload};
use super::section::{fmt_ns, percentiles};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Rounds a scenario may take to show what it must (each is a few ms).
const ROUNDS: usize = 30;

fn spec(workload: Workload, ops: u64) -> Spec {
    Spec {
        workload,
        threads: 4,
        ops,
        events: Events::EnterWait(Duration::ZERO),
    }
}

/// Runs `spec` on `protocol` until its trace holds every kind of `must` (and, if `must` names
/// `MonitorEnter`, a contended enter that names its previous owner); returns that trace.
fn recorded(protocol: &str, spec: Spec, must: &[&str]) -> (Run, Value) {
    for _ in 0..ROUNDS {
        let run = recording::run(protocol, spec).expect("a catalog protocol");
        let (v, _) = chrome::trace(&run);
        // Through the text, as a reader gets it.
        let v: Value = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
        let names = kinds(&v);
        let named_enter = !must.contains(&"MonitorEnter")
            || events(&v)
                .any(|e| e["name"] == "MonitorEnter" && !e["args"]["previous_owner_tid"].is_null());
        if must.iter().all(|k| names.contains(*k)) && named_enter {
            return (run, v);
        }
    }
    panic!("{protocol}: {ROUNDS} runs of {spec:?} never showed all of {must:?}");
}

fn events(v: &Value) -> impl Iterator<Item = &Value> {
    v["traceEvents"].as_array().expect("traceEvents").iter()
}

fn kinds(v: &Value) -> BTreeSet<String> {
    events(v)
        .filter(|e| e["ph"] != "M")
        .filter_map(|e| e["name"].as_str().map(String::from))
        .collect()
}

/// Everything Perfetto needs of the file, checked.
fn check_trace(v: &Value) {
    assert!(v.is_object());
    assert!(v["displayTimeUnit"].is_string(), "displayTimeUnit");
    let tracks: BTreeMap<u64, String> = events(v)
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| {
            (
                e["tid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(!tracks.is_empty());
    let mut last: BTreeMap<u64, f64> = BTreeMap::new();
    // Open slices per track: their ends.
    let mut open: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    let mut slices: BTreeMap<u64, Vec<(f64, f64)>> = BTreeMap::new();
    let mut starts: BTreeMap<u64, &Value> = BTreeMap::new();
    let mut finishes: BTreeMap<u64, &Value> = BTreeMap::new();
    const EPS: f64 = 1e-6;
    for e in events(v).filter(|e| e["ph"] != "M") {
        let ph = e["ph"].as_str().expect("ph");
        let ts = e["ts"].as_f64().expect("ts, a number of µs");
        assert!(ts >= 0.0);
        assert_eq!(e["pid"], 1);
        if ph == "C" {
            continue;
        }
        let tid = e["tid"].as_u64().expect("tid");
        assert!(
            tracks.contains_key(&tid),
            "an event on an unnamed track: {e}"
        );
        let prev = last.insert(tid, ts).unwrap_or(0.0);
        assert!(ts >= prev, "ts decreases on track {tid}: {prev} then {e}");
        match ph {
            "X" => {
                let end = ts + e["dur"].as_f64().expect("dur");
                let stack = open.entry(tid).or_default();
                while stack.last().is_some_and(|&top| top <= ts + EPS) {
                    stack.pop();
                }
                if let Some(&top) = stack.last() {
                    assert!(end <= top + EPS, "slices overlap without nesting: {e}");
                }
                stack.push(end);
                slices.entry(tid).or_default().push((ts, end));
            }
            "i" => assert_eq!(e["s"], "t"),
            "s" => assert!(starts.insert(e["id"].as_u64().unwrap(), e).is_none()),
            "f" => {
                assert_eq!(e["bp"], "e");
                assert!(finishes.insert(e["id"].as_u64().unwrap(), e).is_none());
            }
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
    let enclosed = |e: &Value| {
        let (tid, ts) = (e["tid"].as_u64().unwrap(), e["ts"].as_f64().unwrap());
        slices
            .get(&tid)
            .is_some_and(|s| s.iter().any(|&(a, b)| a <= ts + EPS && ts <= b + EPS))
    };
    assert_eq!(
        starts.keys().collect::<Vec<_>>(),
        finishes.keys().collect::<Vec<_>>(),
        "every flow start has its finish and back"
    );
    for (id, s) in &starts {
        let f = finishes[id];
        assert!(
            s["ts"].as_f64() <= f["ts"].as_f64(),
            "flow {id} goes back in time"
        );
        assert_eq!((&s["cat"], &s["name"]), (&f["cat"], &f["name"]));
        assert!(enclosed(s), "flow start outside any slice: {s}");
        assert!(enclosed(f), "flow finish outside any slice: {f}");
    }
    // A contended enter names another recorded thread (or nobody).
    for e in events(v).filter(|e| e["name"] == "MonitorEnter") {
        assert_eq!(e["ph"], "X");
        let p = &e["args"]["previous_owner_tid"];
        if let Some(p) = p.as_u64() {
            assert_ne!(Some(p), e["tid"].as_u64(), "{e}");
            assert!(
                tracks.contains_key(&p),
                "previous owner is not a track: {e}"
            );
        }
        assert!(e["args"]["parked"].is_boolean());
        assert!(e["args"]["object"].as_str().unwrap().starts_with("0x"));
    }
    for e in events(v).filter(|e| e["name"] == "MonitorWait") {
        assert!(
            e["args"]["outcome"].is_string() && e["dur"].is_number(),
            "{e}"
        );
    }
}

#[test]
fn prod_cons_trace_on_thin_reads_back() {
    let must = [
        "MonitorEnter",
        "MonitorWait",
        "MonitorNotify",
        "MonitorInflate",
        "MonitorStatistics",
    ];
    let (run, v) = recorded("thin", spec(Workload::ProdCons, 300), &must);
    check_trace(&v);
    let flows = events(&v).filter(|e| e["ph"] == "s").count();
    assert!(flows > 0, "a wait notified by another thread is a flow");
    // Every worker is a track, named by what it does.
    for t in &run.tracks {
        assert!(events(&v).any(|e| e["ph"] == "M"
            && e["tid"].as_u64() == Some(u64::from(t.id.get()))
            && e["args"]["name"].as_str().unwrap().starts_with(&t.name)));
    }
}

#[test]
fn prod_cons_trace_on_biased_has_its_revocations() {
    // Each object is biased to its producer (KKO biases at the first lock), then locked by a
    // consumer: a revocation. (FABLE learns not to bias them: no revocation to insist on.)
    let must = ["MonitorWait", "MonitorInflate", "BiasRevoke"];
    let (_, v) = recorded("biased", spec(Workload::ProdCons, 300), &must);
    check_trace(&v);
    let (_, v) = recorded("fable", spec(Workload::ProdCons, 300), &must[..2]);
    check_trace(&v);
}

#[test]
fn prod_cons_trace_on_tasuki_has_its_deflations() {
    let must = ["MonitorEnter", "MonitorWait", "MonitorDeflate"];
    let (_, v) = recorded("tasuki", spec(Workload::ProdCons, 300), &must);
    check_trace(&v);
}

/// `threads` under `thin` at threshold 0 records contended enters: the bench's lockers run on
/// a runtime with the recorder (not the process-wide one of `set_event_sink`), and `thin`
/// reports an enter that wins its inflated monitor in the spin.
#[test]
fn threads_trace_on_thin_has_contended_enters() {
    let (run, v) = recorded(
        "thin",
        spec(Workload::Threads, 300_000),
        &["MonitorEnter", "MonitorInflate"],
    );
    check_trace(&v);
    assert_eq!(run.tracks.len(), 4);
}

#[test]
fn timeline_svg_is_well_formed() {
    let run = |p| recording::run(p, spec(Workload::ProdCons, 200)).unwrap();
    let (a, b) = (run("thin"), run("fable"));
    let svg = figures::timeline(&[&a, &b], 40);
    let doc = roxmltree::Document::parse(&svg).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    let bars = root
        .descendants()
        .filter(|n| n.has_tag_name("rect") && n.children().any(|c| c.has_tag_name("title")))
        .count();
    let texts: String = root
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    assert!(texts.contains("producer 0") && texts.contains("consumer 1"));
    assert!(texts.contains("thin") && texts.contains("fable"));
    // A run without a contended enter or wait still draws (it says so) — and one with has
    // bars, which any prod-cons run with waits has.
    if a.events.iter().any(|e| e.kind().name() == "MonitorWait") {
        assert!(bars > 0, "{svg}");
    }
    let empty = Run {
        events: Vec::new(),
        ..a.clone()
    };
    let svg = figures::timeline(&[&empty], 40);
    roxmltree::Document::parse(&svg).expect("well-formed XML");
    assert!(svg.contains("no contended enter or wait recorded"));
}

#[test]
fn percentiles_by_nearest_rank() {
    assert_eq!(percentiles(&mut []), None);
    let mut v: Vec<u64> = (1..=100).rev().collect();
    assert_eq!(percentiles(&mut v), Some([50, 99, 100]));
    assert_eq!(percentiles(&mut [7]), Some([7, 7, 7]));
    assert_eq!(fmt_ns(850), "850 ns");
    assert_eq!(fmt_ns(12_345), "12.3 µs");
    assert_eq!(fmt_ns(4_560_000), "4.56 ms");
}

#[test]
fn threshold_is_a_human_duration() {
    use super::parse_threshold;
    assert_eq!(parse_threshold("1ms"), Ok(Duration::from_millis(1)));
    assert_eq!(parse_threshold("250us"), Ok(Duration::from_micros(250)));
    assert_eq!(parse_threshold("0"), Ok(Duration::ZERO));
    assert!(parse_threshold("fast").is_err());
}

/// A threshold above every enter and wait leaves the other kinds.
#[test]
fn a_threshold_keeps_the_other_kinds() {
    let s = Spec {
        events: Events::EnterWait(Duration::from_secs(3600)),
        ..spec(Workload::ProdCons, 100)
    };
    let run = recording::run("thin", s).unwrap();
    let names: BTreeSet<&str> = run.events.iter().map(|e| e.kind().name()).collect();
    assert!(!names.contains("MonitorEnter") && !names.contains("MonitorWait"));
    assert!(names.contains("MonitorNotify") && names.contains("MonitorStatistics"));
    let off = recording::run(
        "thin",
        Spec {
            events: Events::Off,
            ..s
        },
    )
    .unwrap();
    assert!(off.events.is_empty());
}
