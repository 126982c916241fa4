//! Tests of the parser, the characterization and the replays, on traces written by a small
//! writer of the recorder's format.

use super::*;
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Builds a trace in the recorder's format (the test's own small writer).
#[derive(Default)]
pub(crate) struct Writer {
    out: Vec<u8>,
    blocks: HashMap<u32, (Vec<u8>, u64, i64)>,
    seq: u64,
    time: i64,
}

fn varint(b: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        b.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    b.push(v as u8);
}

fn zigzag(b: &mut Vec<u8>, v: i64) {
    varint(b, ((v << 1) ^ (v >> 63)) as u64);
}

impl Writer {
    pub(crate) fn new() -> Self {
        let mut w = Writer::default();
        w.out.extend_from_slice(b"OBJMONT1");
        varint(&mut w.out, 1);
        varint(&mut w.out, 0);
        varint(&mut w.out, 0);
        varint(&mut w.out, 4);
        w.out.extend_from_slice(b"test");
        w
    }

    pub(crate) fn class(&mut self, tid: u32, class: u32, name: &str) {
        let b = &mut self.blocks.entry(tid).or_default().0;
        b.push(0x41);
        varint(b, u64::from(class));
        varint(b, name.len() as u64);
        b.extend_from_slice(name.as_bytes());
    }

    pub(crate) fn obj(&mut self, tid: u32, obj: u64, class: u32) {
        let b = &mut self.blocks.entry(tid).or_default().0;
        b.push(0x40);
        varint(b, obj);
        varint(b, u64::from(class));
    }

    /// One operation: kind code (1–9), object; `extra` for WAIT (ms, ns) / WAIT_END (outcome).
    pub(crate) fn op(&mut self, tid: u32, kind: u8, obj: u64, extra: (i64, i64)) {
        self.seq += 1;
        self.time += 1000;
        let (seq, time) = (self.seq, self.time);
        let (b, ls, lt) = self.blocks.entry(tid).or_default();
        b.push(kind);
        varint(b, seq - *ls);
        zigzag(b, time - *lt);
        *ls = seq;
        *lt = time;
        varint(b, obj);
        if kind == 6 {
            zigzag(b, extra.0);
            zigzag(b, extra.1);
        } else if kind == 7 {
            b.push(extra.0 as u8);
        }
    }

    /// Flushes every thread's block (in tid order) and writes STATS and END.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        let mut tids: Vec<u32> = self.blocks.keys().copied().collect();
        tids.sort_unstable();
        for tid in tids {
            let (b, _, _) = self.blocks.remove(&tid).expect("listed");
            self.out.push(2);
            varint(&mut self.out, u64::from(tid));
            varint(&mut self.out, u64::from(tid) + 100);
            varint(&mut self.out, 1);
            self.out.push(b'T');
            self.out.push(1);
            varint(&mut self.out, u64::from(tid));
            varint(&mut self.out, b.len() as u64);
            self.out.extend_from_slice(&b);
        }
        self.out.push(3);
        varint(&mut self.out, 1);
        varint(&mut self.out, 12);
        self.out.extend_from_slice(b"allocs.tid.1");
        varint(&mut self.out, 77);
        self.out.push(0xff);
        self.out
    }
}

/// Thread 1: a block on A nested twice, a synchronized method on B throwing, a timed wait
/// on C that times out; thread 2 then locks A and notifies thread 1 waiting on C.
pub(crate) fn small() -> Vec<u8> {
    let mut w = Writer::new();
    w.class(1, 1, "A");
    w.obj(1, 1, 1);
    w.op(1, 1, 1, (0, 0)); // enter A
    w.op(1, 1, 1, (0, 0)); // enter A (nested)
    w.op(1, 2, 1, (0, 0));
    w.op(1, 2, 1, (0, 0));
    w.class(1, 2, "B");
    w.obj(1, 2, 2);
    w.op(1, 3, 2, (0, 0)); // menter B
    w.op(1, 5, 2, (0, 0)); // exceptional exit
    w.obj(1, 3, 2);
    w.op(1, 1, 3, (0, 0)); // enter C
    w.op(1, 6, 3, (0, 0)); // wait(0): released
    w.op(2, 1, 3, (0, 0)); // thread 2 enters C
    w.op(2, 8, 3, (0, 0)); // notify
    w.op(2, 2, 3, (0, 0));
    w.op(2, 1, 1, (0, 0)); // thread 2 locks A: A is multi-thread
    w.op(2, 2, 1, (0, 0));
    w.op(1, 7, 3, (0, 0)); // wait returns, C held again
    w.op(1, 6, 3, (0, 1)); // wait(0, 1ns): times out
    w.op(1, 7, 3, (0, 0));
    w.op(1, 2, 3, (0, 0));
    w.finish()
}

#[test]
fn parses_what_the_writer_wrote() {
    let t = parse(&small()).expect("parses");
    assert!(t.complete);
    assert_eq!(t.events.len(), 17);
    assert!(t.events.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(t.threads.len(), 2);
    assert_eq!(t.class_of(3), "B");
    assert_eq!(t.allocations(), Some(77));
    let w = t
        .events
        .iter()
        .find(|e| e.kind == Kind::Wait && e.timeout_ns == 1);
    assert!(w.is_some());
    assert_eq!(t.events.last().map(|e| e.kind), Some(Kind::Exit));
}

#[test]
fn rejects_garbage_and_truncation() {
    assert!(parse(b"NOTATRACE").is_err());
    let mut d = small();
    d.truncate(d.len() - 20);
    assert!(parse(&d).is_err() || !parse(&d).expect("ok").complete);
}

#[test]
fn characterizes_the_small_trace() {
    let t = parse(&small()).expect("parses");
    let c = characterize("small", &t);
    assert_eq!(c.lock_ops, 6);
    assert_eq!(c.method_lock_ops, 1);
    assert_eq!(c.unlock_ops, 6);
    assert_eq!(c.exceptional_exits, 1);
    assert_eq!(c.synchronized_objects, 3);
    assert_eq!(c.depth_histogram[0], 5);
    assert_eq!(c.depth_histogram[1], 1);
    assert_eq!(c.max_depth, 2);
    assert_eq!(c.multi_thread_objects, 2); // A and C
    assert_eq!(c.owner_changes, 2); // C then A acquired by thread 2
    assert_eq!(c.waits, 2);
    assert_eq!(c.waits_notified, 1);
    assert_eq!(c.waits_timed_out, 1);
    assert_eq!(c.notifies, 1);
    assert_eq!(c.anomalies, 0);
    // Thread 1 holds C while thread 2 holds... nothing else: at most 2 at once
    // (A nested counts once).
    assert_eq!(c.max_held, 1);
    let k = &c.cacao;
    assert_eq!(k.enter_calls, 6);
    assert_eq!(k.exit_calls, 6);
    // Nested enter of A, and nothing else, hits the first entry with this thread.
    assert_eq!(k.enter_fast, 1);
    assert_eq!(k.exit_fast, 6);
    // LRU over 12 lock/unlock ops: objects A A A A B B C | C C | A A | C.
    assert!((lru_miss_rate(&t, 1) - 100.0 * 5.0 / 12.0).abs() < 1e-9);
    let md = render_markdown(&[c]);
    assert!(md.contains("| small |"));
}

#[test]
fn cacao_first_entry_stays_with_its_holder() {
    // One thread locks D twice in a row: the second lock is the fast path (line 10) with
    // count 0, as in seed 003's Table 3.
    let mut w = Writer::new();
    for _ in 0..2 {
        w.op(1, 1, 5, (0, 0));
        w.op(1, 2, 5, (0, 0));
    }
    // 5 + 1024 collides with 5 while 5 is held: goes to the chain (slow both ways).
    w.op(1, 1, 5, (0, 0));
    w.op(1, 1, 5 + 1024, (0, 0));
    w.op(1, 2, 5 + 1024, (0, 0));
    w.op(1, 2, 5, (0, 0));
    let t = parse(&w.finish()).expect("parses");
    let k = simulate_cacao(&t);
    assert_eq!(k.enter_calls, 4);
    assert_eq!(k.enter_fast, 2);
    assert_eq!(k.enter_slow, 2);
    assert_eq!(k.enter_count_zero, 4);
    assert_eq!(k.exit_slow, 1);
    assert_eq!(k.max_chain, 1);
}

#[test]
fn plan_honours_the_recorded_notify_order() {
    let t = parse(&small()).expect("parses");
    let p = plan(&t, std::time::Duration::from_millis(50));
    assert_eq!(p.unmatched, 0);
    assert_eq!(p.ops, 17 - 2); // the two WAIT_ENDs fold into their waits
    let t1 = &p.threads[0].1;
    let waits: Vec<(u64, std::time::Duration)> = t1
        .iter()
        .filter_map(|o| match o {
            Op::Wait { need, bound, .. } => Some((*need, *bound)),
            _ => None,
        })
        .collect();
    // The first wait ended after thread 2's notify; the second needs nothing more.
    assert_eq!(waits.len(), 2);
    assert_eq!(waits[0].0, 1);
    assert_eq!(waits[1].0, 1);
    assert_eq!(waits[1].1, std::time::Duration::from_millis(50));
}

#[test]
fn replays_the_small_trace_on_every_protocol() {
    let t = parse(&small()).expect("parses");
    let p = plan(&t, std::time::Duration::from_millis(20));
    let runs = replay_all(&p, &[], 1, std::time::Duration::from_secs(30));
    assert_eq!(runs.len(), objmon::vm::names().len() + ANCHORS.len());
    for r in runs.iter().flatten() {
        assert_eq!(r.errors, 0, "{}", r.protocol);
        assert_eq!(r.ops, 15);
    }
    let md = render_replay_markdown("small", &p, &runs);
    assert!(md.contains("| fat |"));
    for a in ANCHORS {
        assert!(md.contains(&format!("| {a} |")), "{a}");
    }
}

#[test]
fn anchors_are_selected_by_name_and_report_no_runtime_counters() {
    let t = parse(&small()).expect("parses");
    let p = plan(&t, std::time::Duration::from_millis(20));
    let names: Vec<String> = ["std-mutex", "thin", "biased"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let runs = replay_all(&p, &names, 2, std::time::Duration::from_secs(30));
    let rows: Vec<&str> = runs.iter().map(|r| r[0].protocol.as_str()).collect();
    assert_eq!(rows, ["thin", "biased", "std-mutex"]);
    for r in runs.iter().flatten() {
        assert_eq!(r.errors, 0, "{}", r.protocol);
        assert_eq!(r.ops, p.ops);
        match r.protocol.as_str() {
            "std-mutex" => {
                assert_eq!(r.inflations, None);
                assert_eq!(r.revocations, None);
                assert_eq!(r.peak_live_monitors, None);
            }
            "thin" => {
                assert!(r.inflations.is_some());
                assert_eq!(r.revocations, None);
            }
            _ => assert!(r.revocations.is_some(), "{}", r.protocol),
        }
    }
    let md = render_replay_markdown("small", &p, &runs);
    assert!(md.contains("| std-mutex |") && md.contains("—"));
}

/// Exits out of LIFO order across objects, and a wait at depth 2 that another thread's
/// notify ends: every anchor releases every level in the wait. Thread 2 enters A only after
/// thread 1's notify of B, which thread 1 makes holding A twice just before its wait; an
/// anchor that released one level only would keep thread 2 out of A, and thread 1's wait
/// would run to its bound.
#[test]
fn anchors_replay_unstructured_exits_and_nested_waits() {
    let mut w = Writer::new();
    w.op(1, 1, 1, (0, 0)); // enter A
    w.op(1, 1, 2, (0, 0)); // enter B
    w.op(1, 2, 1, (0, 0)); // exit A (B still held: not LIFO)
    w.op(1, 2, 2, (0, 0)); // exit B
    w.op(2, 1, 2, (0, 0)); // thread 2 enters B
    w.op(2, 6, 2, (0, 0)); // and waits on it
    w.op(1, 1, 1, (0, 0)); // enter A
    w.op(1, 3, 1, (0, 0)); // menter A (depth 2)
    w.op(1, 1, 2, (0, 0)); // enter B
    w.op(1, 8, 2, (0, 0)); // notify B: thread 2 may go on
    w.op(1, 2, 2, (0, 0)); // exit B
    w.op(1, 6, 1, (0, 0)); // wait(0) on A at depth 2
    w.op(2, 7, 2, (0, 0)); // thread 2's wait returns
    w.op(2, 2, 2, (0, 0));
    w.op(2, 1, 1, (0, 0)); // thread 2 enters A: thread 1 must have released both levels
    w.op(2, 8, 1, (0, 0)); // notify A
    w.op(2, 2, 1, (0, 0));
    w.op(1, 7, 1, (0, 0)); // wait returns, depth 2 again
    w.op(1, 4, 1, (0, 0));
    w.op(1, 2, 1, (0, 0));
    let t = parse(&w.finish()).expect("parses");
    let p = plan(&t, std::time::Duration::from_secs(2));
    assert_eq!(p.unmatched, 0);
    let names: Vec<String> = ANCHORS.iter().map(|s| s.to_string()).collect();
    let runs = replay_all(&p, &names, 3, std::time::Duration::from_secs(30));
    assert_eq!(runs.len(), ANCHORS.len());
    for r in runs.iter().flatten() {
        assert_eq!(r.errors, 0, "{}", r.protocol);
        assert_eq!(r.ops, 18);
        assert_eq!(r.waits_bounded, 0, "{}", r.protocol);
    }
}

/// The recorder's own exactness trace (java/agent/test/counts.trace, recorded from
/// `MonitorCounts` with `alloc=0`; re-record with java/agent/test/run.sh and copy
/// `counts.trace`/`expected.txt`): this parser must find the counts the program wrote.
#[test]
fn the_recorded_exactness_trace_has_the_programs_counts() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../java/agent/test");
    let t = read(&dir.join("counts.trace")).expect("checked-in trace parses");
    assert!(t.complete);
    let expected = std::fs::read_to_string(dir.join("counts.expected")).expect("expected");
    let mut counts: HashMap<(String, String), u64> = HashMap::new();
    let mut max_depth: HashMap<String, u32> = HashMap::new();
    let mut lockers: HashMap<String, HashSet<u32>> = HashMap::new();
    let mut depth: HashMap<(u32, u64), u32> = HashMap::new();
    for e in &t.events {
        let class = t.class_of(e.obj).to_string();
        let kind = match e.kind {
            Kind::Enter => "ENTER",
            Kind::Exit => "EXIT",
            Kind::MethodEnter => "MENTER",
            Kind::MethodExit => "MEXIT",
            Kind::MethodExitExc => "MEXIT_EXC",
            Kind::Wait => "WAIT",
            Kind::WaitEnd => "WAIT_END",
            Kind::Notify => "NOTIFY",
            Kind::NotifyAll => "NOTIFY_ALL",
        };
        *counts.entry((class.clone(), kind.into())).or_default() += 1;
        let d = depth.entry((e.tid, e.obj)).or_default();
        match e.kind {
            k if k.is_lock() => {
                *d += 1;
                let m = max_depth.entry(class.clone()).or_default();
                *m = (*m).max(*d);
                lockers.entry(class.clone()).or_default().insert(e.tid);
            }
            k if k.is_unlock() => *d = d.saturating_sub(1),
            Kind::Wait if e.timeout_ms == 2 && e.timeout_ns == 0 => {
                *counts
                    .entry((class, "WAIT_TIMEOUT_2MS".into()))
                    .or_default() += 1;
            }
            Kind::WaitEnd if e.outcome == Some(WaitOutcome::Interrupted) => {
                *counts
                    .entry((class, "WAIT_INTERRUPTED".into()))
                    .or_default() += 1;
            }
            _ => {}
        }
    }
    let mut checked = 0;
    for line in expected.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let [class, what, n] = f[..] else { continue };
        let want: u64 = n.parse().expect("count");
        let got = match what {
            "maxdepth" => u64::from(max_depth.get(class).copied().unwrap_or(0)),
            "threads" => lockers.get(class).map_or(0, |s| s.len() as u64),
            _ => counts
                .get(&(class.to_string(), what.to_string()))
                .copied()
                .unwrap_or(0),
        };
        assert_eq!(got, want, "{class} {what}");
        checked += 1;
    }
    assert_eq!(checked, 34);
    let c = characterize("counts", &t);
    assert_eq!(c.anomalies, 0);
    // And it replays on every protocol and anchor without an error.
    let p = plan(&t, std::time::Duration::from_millis(20));
    let runs = replay_all(&p, &[], 1, std::time::Duration::from_secs(60));
    assert_eq!(runs.len(), objmon::vm::names().len() + ANCHORS.len());
    for r in runs.iter().flatten() {
        assert_eq!(r.errors, 0, "{}", r.protocol);
        assert_eq!(r.ops, p.ops, "{}", r.protocol);
    }
}
