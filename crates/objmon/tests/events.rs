//! Monitor events (`objmon::events`): scripted scenarios whose events are asserted exactly,
//! with threshold 0, on every protocol of `visit_all` (`thin`, `fat`, `stack`, `biased`,
//! `fable` and the rest). Nothing is asserted about time: each step waits for the state it
//! needs (a thread blocked on enter, a waiter in the wait set) through the thread dump, and
//! every scenario runs under the watchdog.
#![cfg(not(loom))]

mod watchdog;

use objmon::events::{Event, EventKind, EventSink, Recorder, RevocationKind, WaitEnd};
use objmon::vm::{
    BlockKind, Config, DeflationPolicy, InflationCause, Protocol, ProtocolVisitor, Runtime,
    ThreadId,
};
use objmon::MonitorError;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A runtime of `P` delivering to `sink` (`new_unchecked`: the scenarios leak no guard, move
/// no header and install no signal handler, so every protocol's contract holds).
fn runtime<P: Protocol>(sink: Arc<dyn EventSink>, deflation: DeflationPolicy) -> Arc<Runtime<P>> {
    let config = Config {
        events: Some(sink),
        deflation,
        ..Config::default()
    };
    // SAFETY: see above.
    unsafe { Runtime::new_unchecked(config) }
}

/// A header that lives as long as the test process (threads of a scenario share it).
fn header<P: Protocol>() -> &'static P::Header {
    Box::leak(Box::default())
}

fn addr<H>(h: &H) -> usize {
    h as *const H as usize
}

/// Waits until thread `id` is published as blocked in `kind` (yielding, no time bound: the
/// watchdog has it).
fn until_blocked<P: Protocol>(rt: &Runtime<P>, id: ThreadId, kinds: &[BlockKind]) {
    loop {
        let dump = rt.thread_dump();
        let t = dump.threads.iter().find(|t| t.id == id);
        if t.and_then(|t| t.blocked_on)
            .is_some_and(|b| kinds.contains(&b.kind))
        {
            return;
        }
        std::thread::yield_now();
    }
}

/// The events of `kind` in `events`.
fn of(events: &[Event], kind: EventKind) -> Vec<&Event> {
    events.iter().filter(|e| e.kind() == kind).collect()
}

fn biased_family(name: &str) -> bool {
    name.starts_with("biased") || name.starts_with("fable")
}

/// Runs `check::<P>` on every protocol, each under the watchdog.
macro_rules! on_every_protocol {
    ($($check:ident),* $(,)?) => {$(
        #[test]
        fn $check() {
            struct V;
            impl ProtocolVisitor for V {
                fn visit<P: Protocol>(&mut self) {
                    eprintln!(concat!(stringify!($check), " on {}"), P::NAME);
                    watchdog::within(60, P::NAME, checks::$check::<P>);
                }
            }
            objmon::vm::visit_all(&mut V);
        }
    )*};
}

on_every_protocol!(
    contended_enter_names_its_previous_owner,
    notified_wait_names_its_notifier,
    timed_out_wait_says_timed_out,
    interrupted_wait_says_interrupted,
    notify_all_reports_how_many_it_woke,
    an_inflation_reports_its_cause_once,
    statistics_match_the_counters,
    a_threshold_filters_enters_and_waits,
    a_panicking_sink_loses_only_its_event,
    a_sink_that_locks_monitors_neither_deadlocks_nor_recurses,
);

mod checks {
    use super::*;

    /// A holds the lock; B enters, is seen blocked, and A lets go: B's one `MonitorEnter`
    /// names A, and says it parked exactly when it slept (on a fat monitor, or `tasuki`'s
    /// contender behind a flat lock) rather than spun in the header (`thin`, the biased
    /// family after the revocation).
    pub fn contended_enter_names_its_previous_owner<P: Protocol>() {
        let rec = Arc::new(Recorder::new());
        let rt = runtime::<P>(rec.clone(), DeflationPolicy::default());
        let h = header::<P>();
        let a = rt.attach().unwrap();
        let g = a.enter(h).unwrap();
        let b_id = Arc::new(Mutex::new(None));
        let b = {
            let (rt, b_id) = (rt.clone(), b_id.clone());
            std::thread::spawn(move || {
                let b = rt.attach().unwrap();
                *b_id.lock().unwrap() = Some(b.id());
                drop(b.enter(h).unwrap());
                b.id()
            })
        };
        let b_id = loop {
            if let Some(id) = *b_id.lock().unwrap() {
                break id;
            }
            std::thread::yield_now();
        };
        until_blocked(&*rt, b_id, &[BlockKind::Enter]);
        drop(g);
        assert_eq!(b.join().unwrap(), b_id);
        let events = rec.take();
        let enters = of(&events, EventKind::MonitorEnter);
        assert_eq!(enters.len(), 1, "{}: {events:#?}", P::NAME);
        let Event::MonitorEnter {
            site,
            previous_owner,
            parked,
        } = enters[0]
        else {
            unreachable!()
        };
        assert_eq!(site.thread, b_id);
        assert_eq!(site.object, addr(h));
        if P::NAME.starts_with("lightweight") {
            // B inflated A's fast-lock with an anonymous owner (a fast-locked word names
            // nobody): B never learnt whom it waited for.
            let _ = previous_owner;
        } else {
            assert_eq!(*previous_owner, Some(a.id()), "{}", P::NAME);
        }
        let spins = matches!(P::NAME, "thin" | "thin-seed") || biased_family(P::NAME);
        assert_eq!(*parked, !spins, "{}: {events:#?}", P::NAME);
        // The biased family revoked A's bias first: once.
        let revokes = of(&events, EventKind::BiasRevoke);
        if biased_family(P::NAME) && !revokes.is_empty() {
            assert_eq!(revokes.len(), 1, "{events:#?}");
            let Event::BiasRevoke { site, kind } = revokes[0] else {
                unreachable!()
            };
            assert_eq!((site.thread, site.object), (b_id, addr(h)));
            // A was running (joining B outside objmon): nothing revokes it in place.
            assert!(
                matches!(kind, RevocationKind::Membarrier | RevocationKind::Sync),
                "{kind:?}"
            );
        }
        let revoked = match rt.statistics_event() {
            Event::MonitorStatistics { revocations, .. } => revocations,
            _ => unreachable!(),
        };
        assert_eq!(revoked, revokes.len() as u64);
        drop(a);
    }

    /// A waiter waits; this thread, once the waiter is in the wait set, notifies it: the
    /// waiter's `MonitorWait` is `Notified` by this thread; the notify woke one.
    pub fn notified_wait_names_its_notifier<P: Protocol>() {
        let rec = Arc::new(Recorder::new());
        let rt = runtime::<P>(rec.clone(), DeflationPolicy::default());
        let h = header::<P>();
        let me = rt.attach().unwrap();
        let (waiter, w_id) = spawn_waiter(&rt, h, None);
        until_blocked(&*rt, w_id, &[BlockKind::Wait]);
        let g = me.enter(h).unwrap();
        g.notify().unwrap();
        drop(g);
        assert_eq!(waiter.join().unwrap(), Ok(objmon::WaitOutcome::Notified));
        let events = rec.take();
        let waits = of(&events, EventKind::MonitorWait);
        assert_eq!(waits.len(), 1, "{events:#?}");
        let Event::MonitorWait {
            site,
            timeout,
            outcome,
            notifier,
        } = waits[0]
        else {
            unreachable!()
        };
        assert_eq!((site.thread, site.object), (w_id, addr(h)));
        assert!(site.monitor.is_some(), "a wait is on a fat monitor");
        assert_eq!(
            (*timeout, *outcome, *notifier),
            (None, WaitEnd::Notified, Some(me.id()))
        );
        let notifies = of(&events, EventKind::MonitorNotify);
        assert_eq!(notifies.len(), 1, "{events:#?}");
        let Event::MonitorNotify { site, all, woken } = notifies[0] else {
            unreachable!()
        };
        assert_eq!((site.thread, *all, *woken), (me.id(), false, 1));
    }

    /// A wait nobody notifies times out: `TimedOut`, the timeout asked, no notifier.
    pub fn timed_out_wait_says_timed_out<P: Protocol>() {
        let rec = Arc::new(Recorder::new());
        let rt = runtime::<P>(rec.clone(), DeflationPolicy::default());
        let h = header::<P>();
        let me = rt.attach().unwrap();
        let g = me.enter(h).unwrap();
        let asked = Duration::from_millis(2);
        assert_eq!(g.wait(Some(asked)), Ok(objmon::WaitOutcome::TimedOut));
        drop(g);
        let events = rec.take();
        let waits = of(&events, EventKind::MonitorWait);
        assert_eq!(waits.len(), 1, "{events:#?}");
        let Event::MonitorWait {
            site,
            timeout,
            outcome,
            notifier,
        } = waits[0]
        else {
            unreachable!()
        };
        assert_eq!(
            (site.thread, *outcome, *notifier),
            (me.id(), WaitEnd::TimedOut, None)
        );
        assert_eq!(*timeout, Some(asked));
    }

    /// A waiter interrupted in the wait set: `Interrupted`, no notifier.
    pub fn interrupted_wait_says_interrupted<P: Protocol>() {
        let rec = Arc::new(Recorder::new());
        let rt = runtime::<P>(rec.clone(), DeflationPolicy::default());
        let h = header::<P>();
        let (waiter, w_id) = spawn_waiter(&rt, h, None);
        until_blocked(&*rt, w_id, &[BlockKind::Wait]);
        rt.interrupt(w_id).unwrap();
        assert_eq!(waiter.join().unwrap(), Err(MonitorError::Interrupted));
        let events = rec.take();
        let waits = of(&events, EventKind::MonitorWait);
        assert_eq!(waits.len(), 1, "{events:#?}");
        let Event::MonitorWait {
            site,
            outcome,
            notifier,
            ..
        } = waits[0]
        else {
            unreachable!()
        };
        assert_eq!(
            (site.thread, *outcome, *notifier),
            (w_id, WaitEnd::Interrupted, None)
        );
    }

    /// notifyAll of two waiters: one `MonitorNotify` with `all` and `woken` 2; each waiter's
    /// wait names the notifier.
    pub fn notify_all_reports_how_many_it_woke<P: Protocol>() {
        let rec = Arc::new(Recorder::new());
        let rt = runtime::<P>(rec.clone(), DeflationPolicy::default());
        let h = header::<P>();
        let me = rt.attach().unwrap();
        let (w1, id1) = spawn_waiter(&rt, h, None);
        let (w2, id2) = spawn_waiter(&rt, h, None);
        until_blocked(&*rt, id1, &[BlockKind::Wait]);
        until_blocked(&*rt, id2, &[BlockKind::Wait]);
        let g = me.enter(h).unwrap();
        g.notify_all().unwrap();
        drop(g);
        for w in [w1, w2] {
            assert_eq!(w.join().unwrap(), Ok(objmon::WaitOutcome::Notified));
        }
        let events = rec.take();
        let notifies = of(&events, EventKind::MonitorNotify);
        assert_eq!(notifies.len(), 1, "{events:#?}");
        let Event::MonitorNotify { site, all, woken } = notifies[0] else {
            unreachable!()
        };
        assert_eq!((site.thread, *all, *woken), (me.id(), true, 2));
        let mut waiters: Vec<ThreadId> = of(&events, EventKind::MonitorWait)
            .into_iter()
            .map(|e| match e {
                Event::MonitorWait { site, notifier, .. } => {
                    assert_eq!(*notifier, Some(me.id()));
                    site.thread
                }
                _ => unreachable!(),
            })
            .collect();
        waiters.sort();
        let mut expected = vec![id1, id2];
        expected.sort();
        assert_eq!(waiters, expected);
    }

    /// A (timed) wait on a fresh object inflates it once, for the wait set (`fat`: on first
    /// use; `cacao*` and `monitor-cache` have no header to inflate): one
    /// `MonitorInflate` with that cause, by this thread, naming the monitor; the events
    /// match the counters. With a deflating policy (`stack`, `lightweight*`: at exit;
    /// `tasuki` deflates at exit by itself), the exit's deflation is reported too.
    pub fn an_inflation_reports_its_cause_once<P: Protocol>() {
        let rec = Arc::new(Recorder::new());
        let rt = runtime::<P>(rec.clone(), DeflationPolicy::AtExit { keep: 0 });
        let h = header::<P>();
        let me = rt.attach().unwrap();
        let g = me.enter(h).unwrap();
        let _ = g.wait(Some(Duration::from_micros(10)));
        drop(g);
        let events = rec.take();
        let stats = rt.stats_snapshot();
        let inflates = of(&events, EventKind::MonitorInflate);
        assert_eq!(inflates.len() as u64, stats.inflations(), "{events:#?}");
        let expected = match P::NAME {
            "fat" => Some(InflationCause::FirstUse),
            "cacao" | "cacao-seed" | "monitor-cache" => None,
            _ => Some(InflationCause::WaitNotify),
        };
        match expected {
            None => assert!(inflates.is_empty(), "{events:#?}"),
            Some(c) => {
                assert_eq!(inflates.len(), 1, "{events:#?}");
                let Event::MonitorInflate { site, cause } = inflates[0] else {
                    unreachable!()
                };
                assert_eq!((site.thread, site.object, *cause), (me.id(), addr(h), c));
                assert!(site.monitor.is_some());
            }
        }
        let deflates = of(&events, EventKind::MonitorDeflate);
        assert_eq!(deflates.len() as u64, stats.deflations, "{events:#?}");
        if matches!(P::NAME, "stack" | "tasuki") || P::NAME.starts_with("lightweight") {
            assert_eq!(deflates.len(), 1, "{}: {events:#?}", P::NAME);
            let Event::MonitorDeflate { site } = deflates[0] else {
                unreachable!()
            };
            assert_eq!((site.thread, site.object), (me.id(), addr(h)));
        }
        assert_eq!(of(&events, EventKind::MonitorWait).len(), 1, "{events:#?}");
    }

    /// `MonitorStatistics` on request: the counters of `stats_snapshot`.
    pub fn statistics_match_the_counters<P: Protocol>() {
        let rec = Arc::new(Recorder::new());
        let rt = runtime::<P>(rec.clone(), DeflationPolicy::default());
        let h = header::<P>();
        let me = rt.attach().unwrap();
        let g = me.enter(h).unwrap();
        let _ = g.wait(Some(Duration::from_micros(10)));
        drop(g);
        let _ = rec.take();
        rt.report_statistics();
        let events = rec.take();
        assert_eq!(events.len(), 1, "{events:#?}");
        let s = rt.stats_snapshot();
        let Event::MonitorStatistics {
            live_monitors,
            inflations,
            deflations,
            ..
        } = events[0]
        else {
            panic!("{events:#?}")
        };
        assert_eq!(events[0].site(), None);
        assert_eq!(
            (live_monitors, inflations, deflations),
            (s.live_monitors as u64, s.inflations(), s.deflations)
        );
    }

    /// A sink whose thresholds are an hour sees no enter and no wait (nor anything else
    /// shorter: inflations and notifies take no hour either).
    pub fn a_threshold_filters_enters_and_waits<P: Protocol>() {
        let rec = Arc::new(Recorder::new().with_thresholds(Duration::from_secs(3600)));
        let rt = runtime::<P>(rec.clone(), DeflationPolicy::default());
        let h = header::<P>();
        let me = rt.attach().unwrap();
        let (waiter, w_id) = spawn_waiter(&rt, h, Some(Duration::from_millis(1)));
        let _ = waiter.join().unwrap();
        let g = me.enter(h).unwrap();
        let (b, b_id) = spawn_enterer(&rt, h);
        until_blocked(&*rt, b_id, &[BlockKind::Enter]);
        g.notify_all().unwrap();
        drop(g);
        b.join().unwrap();
        let _ = w_id;
        let events = rec.take();
        assert!(events.is_empty(), "{events:#?}");
    }

    /// A sink that panics on every event: the operations go on as without events.
    pub fn a_panicking_sink_loses_only_its_event<P: Protocol>() {
        struct Panics(AtomicU32);
        impl EventSink for Panics {
            fn event(&self, _: &Event) {
                self.0.fetch_add(1, Ordering::Relaxed);
                panic!("a sink's panic (expected by the test)");
            }
            fn threshold(&self, _: EventKind) -> Duration {
                Duration::ZERO
            }
        }
        let sink = Arc::new(Panics(AtomicU32::new(0)));
        let rt = runtime::<P>(sink.clone(), DeflationPolicy::default());
        let h = header::<P>();
        let me = rt.attach().unwrap();
        let (waiter, w_id) = spawn_waiter(&rt, h, None);
        until_blocked(&*rt, w_id, &[BlockKind::Wait]);
        let g = me.enter(h).unwrap();
        g.notify().unwrap();
        drop(g);
        assert_eq!(waiter.join().unwrap(), Ok(objmon::WaitOutcome::Notified));
        // Still a working monitor, owned by nobody.
        let g = me.enter(h).unwrap();
        assert_eq!(
            g.wait(Some(Duration::from_micros(1))),
            Ok(objmon::WaitOutcome::TimedOut)
        );
        drop(g);
        assert_eq!(rt.owner_of(h), None);
        assert!(
            sink.0.load(Ordering::Relaxed) >= 2,
            "the wait and the notify reached it"
        );
    }

    /// A sink that, in each call, locks the event's own object (held or just released by
    /// this thread), waits on it briefly (an event of its own, dropped) and notifies it: no
    /// deadlock, no recursion, and the events it raised are not delivered.
    pub fn a_sink_that_locks_monitors_neither_deadlocks_nor_recurses<P: Protocol>() {
        thread_local! {
            static INSIDE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        }
        struct Relocks<P: Protocol> {
            rt: Mutex<Option<Arc<Runtime<P>>>>,
            h: &'static P::Header,
            reentered: AtomicBool,
            calls: AtomicU32,
        }
        impl<P: Protocol> EventSink for Relocks<P> {
            fn event(&self, _: &Event) {
                // (A panic here would be caught: record, assert outside.)
                if INSIDE.with(|i| i.replace(true)) {
                    self.reentered.store(true, Ordering::SeqCst);
                }
                self.calls.fetch_add(1, Ordering::Relaxed);
                let rt = self.rt.lock().unwrap().clone();
                if let Some(rt) = rt {
                    let t = rt.attach().unwrap();
                    let g = t.enter(self.h).unwrap();
                    let _ = g.wait(Some(Duration::from_micros(1)));
                    g.notify_all().unwrap();
                }
                INSIDE.with(|i| i.set(false));
            }
            fn threshold(&self, _: EventKind) -> Duration {
                Duration::ZERO
            }
        }
        let h = header::<P>();
        let sink = Arc::new(Relocks::<P> {
            rt: Mutex::new(None),
            h,
            reentered: AtomicBool::new(false),
            calls: AtomicU32::new(0),
        });
        let rt = runtime::<P>(sink.clone(), DeflationPolicy::default());
        *sink.rt.lock().unwrap() = Some(rt.clone());
        let me = rt.attach().unwrap();
        let (waiter, w_id) = spawn_waiter(&rt, h, None);
        until_blocked(&*rt, w_id, &[BlockKind::Wait]);
        let g = me.enter(h).unwrap();
        g.notify().unwrap();
        drop(g);
        assert_eq!(waiter.join().unwrap(), Ok(objmon::WaitOutcome::Notified));
        // The waiter's wait and our notify at least (and an inflation, a deflation), but
        // nothing raised inside the sink.
        let calls = sink.calls.load(Ordering::Relaxed);
        assert!(calls >= 2, "{calls} calls");
        assert!(
            !sink.reentered.load(Ordering::SeqCst),
            "a sink call inside a sink call"
        );
        *sink.rt.lock().unwrap() = None; // the runtime would keep itself alive
    }

    /// A thread that enters `h` and waits (for `timeout`, or until notified); returns its id
    /// once it is attached.
    #[allow(clippy::type_complexity)]
    pub fn spawn_waiter<P: Protocol>(
        rt: &Arc<Runtime<P>>,
        h: &'static P::Header,
        timeout: Option<Duration>,
    ) -> (
        std::thread::JoinHandle<Result<objmon::WaitOutcome, MonitorError>>,
        ThreadId,
    ) {
        let (tx, rx) = std::sync::mpsc::channel();
        let rt = rt.clone();
        let j = std::thread::spawn(move || {
            let t = rt.attach().unwrap();
            tx.send(t.id()).unwrap();
            let g = t.enter(h).unwrap();
            let r = g.wait(timeout);
            drop(g);
            r
        });
        (j, rx.recv().unwrap())
    }

    /// A thread that enters and exits `h`; returns its id once it is attached.
    pub fn spawn_enterer<P: Protocol>(
        rt: &Arc<Runtime<P>>,
        h: &'static P::Header,
    ) -> (std::thread::JoinHandle<()>, ThreadId) {
        let (tx, rx) = std::sync::mpsc::channel();
        let rt = rt.clone();
        let j = std::thread::spawn(move || {
            let t = rt.attach().unwrap();
            tx.send(t.id()).unwrap();
            drop(t.enter(h).unwrap());
        });
        (j, rx.recv().unwrap())
    }
}

/// Off by default: a runtime without a sink has none, and reports nothing anywhere.
#[test]
fn events_are_off_by_default() {
    let rt = Runtime::<objmon::Thin>::with_defaults();
    assert!(rt.event_sink().is_none());
    assert!(Config::default().events.is_none());
    rt.report_statistics(); // nowhere to go: nothing happens
}

/// A sink's object tag is put in every site.
#[test]
fn a_sink_tags_objects() {
    struct Tags(Recorder);
    impl EventSink for Tags {
        fn event(&self, e: &Event) {
            self.0.event(e)
        }
        fn threshold(&self, _: EventKind) -> Duration {
            Duration::ZERO
        }
        fn object_tag(&self, object: usize) -> Option<u64> {
            Some(object as u64 ^ 0x5a5a)
        }
    }
    let sink = Arc::new(Tags(Recorder::new()));
    let rt = Runtime::<objmon::Thin>::new(Config {
        events: Some(sink.clone()),
        ..Config::default()
    });
    let h = objmon::vm::LockWord::new(0);
    let me = rt.attach().unwrap();
    me.enter(&h).unwrap().notify().unwrap();
    let events = sink.0.take();
    assert!(!events.is_empty());
    for e in &events {
        let s = e.site().unwrap();
        assert_eq!(s.object_tag, Some(addr(&h) as u64 ^ 0x5a5a));
    }
}

/// `thin`, `thin-seed` and the biased family inflate at the first contention and keep the
/// monitor (a notifyAll inflates it here); a later
/// contender that gets the monitor in its bounded spin, without parking, still had to wait:
/// that is a `MonitorEnter` too (`parked: false`, on the monitor), as `fat`'s. Two threads
/// take turns on an inflated header, each holding it until the other has announced its
/// enter, round after round until such an enter shows (the watchdog bounds the rounds:
/// nothing here asserts a time). Every enter names the other thread, or nobody (the owner
/// had just left when the contender looked).
#[test]
fn an_enter_won_in_the_monitors_spin_is_reported() {
    struct V;
    impl ProtocolVisitor for V {
        fn visit<P: Protocol>(&mut self) {
            if matches!(P::NAME, "thin" | "thin-seed") || biased_family(P::NAME) {
                watchdog::within(60, P::NAME, spun_enter_is_reported::<P>);
            }
        }
    }
    objmon::vm::visit_all(&mut V);
}

fn spun_enter_is_reported<P: Protocol>() {
    let rec = Arc::new(Recorder::new());
    let rt = runtime::<P>(rec.clone(), DeflationPolicy::default());
    let h = header::<P>();
    {
        let me = rt.attach().unwrap();
        me.enter(h).unwrap().notify_all().unwrap(); // inflated, for good
    }
    let _ = rec.take();
    let want = [AtomicBool::new(false), AtomicBool::new(false)];
    let stop = AtomicBool::new(false);
    let ids: Mutex<[Option<ThreadId>; 2]> = Mutex::new([None, None]);
    let mut rounds = 0u32;
    loop {
        rounds += 1;
        std::thread::scope(|s| {
            for i in 0..2 {
                let (rt, want, stop, ids) = (&rt, &want, &stop, &ids);
                s.spawn(move || {
                    let t = rt.attach().unwrap();
                    ids.lock().unwrap()[i] = Some(t.id());
                    for _ in 0..2_000 {
                        want[i].store(true, Ordering::SeqCst);
                        let g = t.enter(h).unwrap();
                        want[i].store(false, Ordering::SeqCst);
                        // Hold it until the other thread is about to enter (bounded: it may
                        // have finished its turns).
                        let mut k = 0u32;
                        while !want[1 - i].load(Ordering::SeqCst)
                            && !stop.load(Ordering::Relaxed)
                            && k < 20_000
                        {
                            std::hint::spin_loop();
                            k += 1;
                        }
                        drop(g);
                    }
                    stop.store(true, Ordering::Relaxed);
                });
            }
        });
        stop.store(false, Ordering::Relaxed);
        let [Some(a), Some(b)] = *ids.lock().unwrap() else {
            unreachable!()
        };
        let events = rec.take();
        let mut spun = false;
        for e in of(&events, EventKind::MonitorEnter) {
            let Event::MonitorEnter {
                site,
                previous_owner,
                parked,
            } = e
            else {
                unreachable!()
            };
            let other = if site.thread == a { b } else { a };
            assert!(site.thread == a || site.thread == b, "{e:?}");
            assert!(
                previous_owner.is_none() || *previous_owner == Some(other),
                "{}: {e:?}",
                P::NAME
            );
            assert_eq!(site.object, addr(h));
            spun |= !*parked && site.monitor.is_some();
        }
        if spun {
            eprintln!("{}: a spun enter reported in round {rounds}", P::NAME);
            return;
        }
    }
}
