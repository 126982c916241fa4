//! `events::TracingSink` (feature `tracing`): each event becomes a `tracing` event of target
//! `objmon` with typed fields, seen here by a hand-written subscriber (no subscriber crate).
#![cfg(all(feature = "tracing", not(loom)))]

use objmon::events::{EventKind, TracingSink};
use objmon::vm::{Config, LockWord, Runtime};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Every event's target and fields, as text (`u64` / `bool` / `str` typed values tagged).
#[derive(Default)]
struct Capture(Mutex<Vec<(String, BTreeMap<String, String>)>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_u64(&mut self, f: &Field, v: u64) {
        self.0.insert(f.name().into(), format!("u64:{v}"));
    }
    fn record_bool(&mut self, f: &Field, v: bool) {
        self.0.insert(f.name().into(), format!("bool:{v}"));
    }
    fn record_str(&mut self, f: &Field, v: &str) {
        self.0.insert(f.name().into(), format!("str:{v}"));
    }
    fn record_debug(&mut self, f: &Field, v: &dyn std::fmt::Debug) {
        self.0.insert(f.name().into(), format!("debug:{v:?}"));
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, e: &Event<'_>) {
        let mut fields = BTreeMap::new();
        e.record(&mut Fields(&mut fields));
        let target = e.metadata().target().to_string();
        self.0.lock().unwrap().push((target, fields));
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn tracing_sink_emits_typed_fields_with_target_objmon() {
    let capture = Arc::new(Capture::default());
    let dispatch = tracing::Dispatch::from(capture.clone());
    tracing::dispatcher::with_default(&dispatch, || {
        let sink = TracingSink::new().with_threshold(EventKind::MonitorWait, Duration::ZERO);
        let rt = Runtime::<objmon::Thin>::new(Config {
            events: Some(Arc::new(sink)),
            ..Config::default()
        });
        let h = LockWord::new(0);
        let me = rt.attach().unwrap();
        let g = me.enter(&h).unwrap();
        let _ = g.wait(Some(Duration::from_micros(100))); // inflates, then times out
        drop(g);
        rt.report_statistics();
    });
    let got = capture.0.lock().unwrap();
    let kinds: Vec<&str> = got
        .iter()
        .map(|(t, f)| {
            assert_eq!(t, "objmon");
            f["kind"].as_str()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "str:MonitorInflate",
            "str:MonitorWait",
            "str:MonitorStatistics"
        ]
    );
    let inflate = &got[0].1;
    assert_eq!(inflate["cause"], "debug:WaitNotify");
    assert!(inflate["thread"].starts_with("u64:"));
    let wait = &got[1].1;
    assert_eq!(wait["outcome"], "debug:TimedOut");
    assert!(wait["timeout_ns"].starts_with("u64:"));
    assert!(
        !wait.contains_key("notifier"),
        "None is recorded as nothing"
    );
    assert!(wait["duration_ns"].starts_with("u64:"));
    assert_eq!(got[2].1["inflations"], "u64:1");
}
