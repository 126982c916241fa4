//! Running a bench's workload on one protocol with monitor events on: what `objmon-bench
//! record` writes out and what the report's "Monitor events" section measures.
//!
//! Owns: the recorded workloads ([`Workload`]), the runtime they run on, the names of their
//! threads (the trace's tracks), and one run's timing with events off or on ([`Events`]).
//! Not: the trace file (`chrome.rs`), the picture (`figures.rs`), the report (`section.rs`).
//!
//! **Which runtime.** The runtime is built here, `Runtime::<P>::new_unchecked` with
//! `Config::events` set to a [`Recorder`]. The bench's own subjects
//! (`subject::Proto::runtime`) build theirs with `Config::default()`, no sink, and
//! `objmon::set_event_sink` reaches only the process-wide runtimes behind `Monitor<T>`, never
//! a `Runtime<P>` a bench builds: a sink installed that way records nothing of a bench.
//!
//! **Workloads** (each worker attaches, then all start together behind a barrier; the time
//! is that of the slowest worker, start to end):
//! - `threads`: seed 000's Threads n as `bench::seed000::contended` runs it: n lockers lock
//!   one object `ops` times each, a racy counter inside checking exclusion.
//! - `prod-cons`: seed 002's ProdCons (a producer allocates an object, locks it once and
//!   hands it over; a consumer locks it once and drops it), the hand-over through a bounded
//!   queue ([`QUEUE_CAP`]) guarded by a monitor of the protocol, as a Java program's
//!   synchronized queue: wait while full or empty, notifyAll after each put and take. (The
//!   bench's own hand-over is a channel, which no monitor sees: its run has no contended
//!   enter and no wait to record.) n threads: n/2 producers, the rest consumers, at least one
//!   of each; `ops` objects per producer.
//!
//! **Events.** [`Events::Off`]: no sink. [`Events::Jfr`]: JFR's default thresholds
//! ([`EventKind::default_threshold`], 20 ms for enters and waits). [`Events::EnterWait`]:
//! enters and waits shorter than the duration are dropped, every other kind is kept (they
//! have no extent a threshold could meaningfully cut, and a trace without its notifies and
//! inflations cannot be read). The recorded events come back in delivery order, followed by
//! one `MonitorStatistics` of the runtime at the end.
//!
//! Unknown protocol names are the caller's to reject (`run` returns `None`).

use objmon::events::{now_nanos, Event, EventKind, EventSink, Recorder};
use objmon::vm::{Config, Protocol, ProtocolVisitor, Runtime, ThreadId};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

/// Objects the prod-cons queue holds at most: small, so that producers wait too.
pub const QUEUE_CAP: usize = 16;

/// Longest single wait of a prod-cons thread (it looks again after it; no wait is lost, the
/// bound only keeps a bug from hanging the run).
const WAIT_BOUND: Duration = Duration::from_millis(100);

/// A workload `record` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Seed 000's Threads n: n lockers on one object.
    Threads,
    /// Seed 002's ProdCons through a monitor-guarded queue.
    ProdCons,
}

impl Workload {
    /// Every workload, in the order `record --help` names them.
    pub const ALL: [Workload; 2] = [Workload::Threads, Workload::ProdCons];

    /// The bench name (`threads`, `prod-cons`).
    pub fn name(self) -> &'static str {
        match self {
            Workload::Threads => "threads",
            Workload::ProdCons => "prod-cons",
        }
    }

    /// The workload of bench `name`, if `record` runs it.
    pub fn by_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|w| w.name() == name)
    }

    /// Fewest threads it runs (prod-cons: a producer and a consumer).
    pub fn min_threads(self) -> usize {
        match self {
            Workload::Threads => 1,
            Workload::ProdCons => 2,
        }
    }

    /// Operations per thread when none are asked (a trace of a few MB at threshold 0).
    /// `threads` needs many: 20,000 pairs per thread take ~0.1 ms, less than starting the
    /// next thread, so the lockers never meet and nothing is contended; on a loaded 2-core
    /// machine even 100,000 often run one thread after the other. A million take some
    /// 30–80 ms, long enough for the lockers to meet.
    pub fn default_ops(self) -> u64 {
        match self {
            Workload::Threads => 1_000_000,
            Workload::ProdCons => 5_000,
        }
    }

    /// Operations of a run of `threads` threads doing `ops` each (the divisor of ns per op):
    /// lock+unlock pairs, or objects produced.
    pub fn total_ops(self, threads: usize, ops: u64) -> u64 {
        match self {
            Workload::Threads => threads as u64 * ops,
            Workload::ProdCons => producers(threads) as u64 * ops,
        }
    }
}

/// Producers of a prod-cons run of `threads` threads.
fn producers(threads: usize) -> usize {
    (threads / 2).max(1)
}

/// Which events a run records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Events {
    /// No sink on the runtime.
    Off,
    /// JFR's default thresholds (20 ms for enters and waits, 0 for the rest).
    Jfr,
    /// Enters and waits of at least this long; every event of the other kinds.
    EnterWait(Duration),
}

impl Events {
    fn recorder(self) -> Option<Arc<Recorder>> {
        match self {
            Events::Off => None,
            Events::Jfr => Some(Arc::new(
                EventKind::ALL.iter().fold(Recorder::new(), |r, &k| {
                    r.with_threshold(k, k.default_threshold())
                }),
            )),
            Events::EnterWait(d) => Some(Arc::new(
                Recorder::new()
                    .with_threshold(EventKind::MonitorEnter, d)
                    .with_threshold(EventKind::MonitorWait, d),
            )),
        }
    }
}

/// What to run.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// The workload.
    pub workload: Workload,
    /// Threads (at least [`Workload::min_threads`]).
    pub threads: usize,
    /// Operations per thread (prod-cons: objects per producer).
    pub ops: u64,
    /// Which events to record.
    pub events: Events,
}

/// One thread of a run: a track of the trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Track {
    /// Its id on the run's runtime.
    pub id: ThreadId,
    /// What it does: `locker 0`, `producer 1`, `consumer 0`.
    pub name: String,
}

/// One finished run.
#[derive(Clone, Debug)]
pub struct Run {
    /// The protocol's catalog name.
    pub protocol: &'static str,
    /// What ran.
    pub spec: Spec,
    /// The workers, in start order.
    pub tracks: Vec<Track>,
    /// The events recorded (none with [`Events::Off`]), the runtime's statistics last.
    pub events: Vec<Event>,
    /// [`now_nanos`] before the first worker started: the trace's time 0.
    pub start_nanos: u64,
    /// Start to end of the slowest worker.
    pub elapsed: Duration,
}

impl Run {
    /// Nanoseconds per operation ([`Workload::total_ops`]).
    pub fn ns_per_op(&self) -> f64 {
        let n = self
            .spec
            .workload
            .total_ops(self.spec.threads, self.spec.ops);
        self.elapsed.as_nanos() as f64 / n.max(1) as f64
    }

    /// The name of thread `id`'s track, if it is one of the run's workers.
    pub fn track_name(&self, id: ThreadId) -> Option<&str> {
        self.tracks
            .iter()
            .find(|t| t.id == id)
            .map(|t| t.name.as_str())
    }
}

/// Runs `spec` on the protocol named `protocol`; `None` if there is no such protocol.
pub fn run(protocol: &str, spec: Spec) -> Option<Run> {
    struct V<'a>(&'a str, Spec, Option<Run>);
    impl ProtocolVisitor for V<'_> {
        fn visit<P: Protocol>(&mut self) {
            if P::NAME == self.0 && self.2.is_none() {
                self.2 = Some(run_on::<P>(self.1));
            }
        }
    }
    let mut v = V(protocol, spec, None);
    objmon::vm::visit_all(&mut v);
    v.2
}

/// Runs `spec` on `P`.
pub fn run_on<P: Protocol>(spec: Spec) -> Run {
    assert!(
        spec.threads >= spec.workload.min_threads(),
        "{} runs at least {} threads",
        spec.workload.name(),
        spec.workload.min_threads()
    );
    let rec = spec.events.recorder();
    let config = Config {
        events: rec.clone().map(|r| r as Arc<dyn EventSink>),
        ..Config::default()
    };
    // SAFETY: this program installs no signal handler of its own (std's fault handlers run
    // only on a fault, which no owner section makes): the -signal flavors' contract
    // (`Runtime::new_unchecked`) holds; the other protocols have none.
    let rt = unsafe { Runtime::<P>::new_unchecked(config) };
    let start_nanos = now_nanos();
    let (tracks, elapsed) = match spec.workload {
        Workload::Threads => threads::<P>(&rt, spec.threads, spec.ops),
        Workload::ProdCons => prod_cons::<P>(&rt, spec.threads, spec.ops),
    };
    let mut events = rec.map(|r| r.take()).unwrap_or_default();
    if spec.events != Events::Off {
        events.push(rt.statistics_event());
    }
    Run {
        protocol: P::NAME,
        spec,
        tracks,
        events,
        start_nanos,
        elapsed,
    }
}

/// The tracks in start order, and the span from the earliest start to the latest end.
fn finish(mut spans: Vec<(usize, Track, Instant, Instant)>) -> (Vec<Track>, Duration) {
    spans.sort_by_key(|s| s.0);
    let t0 = spans.iter().map(|s| s.2).min();
    let t1 = spans.iter().map(|s| s.3).max();
    let elapsed = t0.zip(t1).map_or(Duration::ZERO, |(a, b)| b - a);
    (spans.into_iter().map(|s| s.1).collect(), elapsed)
}

fn threads<P: Protocol>(rt: &Arc<Runtime<P>>, n: usize, each: u64) -> (Vec<Track>, Duration) {
    let o = P::Header::default();
    let counter = AtomicU64::new(0);
    let start = Barrier::new(n);
    let spans = std::thread::scope(|s| {
        let hs: Vec<_> = (0..n)
            .map(|i| {
                let (o, counter, start) = (&o, &counter, &start);
                s.spawn(move || {
                    let t = rt.attach().expect("attach");
                    let track = Track {
                        id: t.id(),
                        name: format!("locker {i}"),
                    };
                    start.wait();
                    let t0 = Instant::now();
                    for _ in 0..each {
                        let g = t.enter(o).expect("enter");
                        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                        drop(g);
                    }
                    (i, track, t0, Instant::now())
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("locker"))
            .collect::<Vec<_>>()
    });
    assert_eq!(
        counter.into_inner(),
        n as u64 * each,
        "{}: lost update",
        P::NAME
    );
    let mut o = o;
    rt.reclaim(&mut o);
    finish(spans)
}

/// The prod-cons queue: its monitor's header and the objects, touched only by the monitor's
/// owner (the `Mutex` is never contended: it only makes the sharing safe).
struct Queue<H> {
    lock: H,
    items: Mutex<VecDeque<Box<H>>>,
    producers_left: AtomicUsize,
}

impl<H> Queue<H> {
    fn items(&self) -> std::sync::MutexGuard<'_, VecDeque<Box<H>>> {
        self.items.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn prod_cons<P: Protocol>(rt: &Arc<Runtime<P>>, n: usize, each: u64) -> (Vec<Track>, Duration) {
    let producers = producers(n);
    let q = Queue {
        lock: P::Header::default(),
        items: Mutex::new(VecDeque::new()),
        producers_left: AtomicUsize::new(producers),
    };
    let start = Barrier::new(n);
    let spans = std::thread::scope(|s| {
        let hs: Vec<_> = (0..n)
            .map(|i| {
                let (q, start) = (&q, &start);
                s.spawn(move || {
                    let t = rt.attach().expect("attach");
                    let producer = i < producers;
                    let track = Track {
                        id: t.id(),
                        name: if producer {
                            format!("producer {i}")
                        } else {
                            format!("consumer {}", i - producers)
                        },
                    };
                    start.wait();
                    let t0 = Instant::now();
                    if producer {
                        for _ in 0..each {
                            let o = Box::new(P::Header::default());
                            drop(t.enter(&*o).expect("enter"));
                            let g = t.enter(&q.lock).expect("enter");
                            while q.items().len() >= QUEUE_CAP {
                                g.wait(Some(WAIT_BOUND)).expect("wait");
                            }
                            q.items().push_back(o);
                            g.notify_all().expect("notifyAll");
                        }
                        let g = t.enter(&q.lock).expect("enter");
                        q.producers_left.fetch_sub(1, Ordering::Relaxed);
                        g.notify_all().expect("notifyAll");
                    } else {
                        loop {
                            let g = t.enter(&q.lock).expect("enter");
                            let got = loop {
                                if let Some(o) = q.items().pop_front() {
                                    break Some(o);
                                }
                                if q.producers_left.load(Ordering::Relaxed) == 0 {
                                    break None;
                                }
                                g.wait(Some(WAIT_BOUND)).expect("wait");
                            };
                            let Some(mut o) = got else { break };
                            g.notify_all().expect("notifyAll");
                            drop(g);
                            drop(t.enter(&*o).expect("enter"));
                            rt.reclaim(&mut o);
                        }
                    }
                    (i, track, t0, Instant::now())
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("prod-cons thread"))
            .collect::<Vec<_>>()
    });
    let mut q = q;
    assert!(
        q.items().is_empty(),
        "{}: objects left in the queue",
        P::NAME
    );
    rt.reclaim(&mut q.lock);
    finish(spans)
}
