//! The event adversary (`src/sink.rs`): cases with a hostile event sink pass on every
//! protocol; and what it found in the core, as `#[ignore]`d reproducers that assert the
//! documented behaviour, so they fail while each finding is open (`cargo test --release -p
//! objmon-fuzz --test events -- --ignored`).
//!
//! Owns only these tests; the checks themselves are the sink's.

use objmon::events::{Event, Recorder};
use objmon::vm::{Config, LockWord, Runtime};
use objmon::Fat;
use objmon_fuzz::Hostile::*;
use objmon_fuzz::{Case, Op::*, Step::*, Surface};
use std::sync::Arc;

/// A contended case with waits and notifies, under every hostile behaviour at once, on every
/// surface of every protocol.
#[test]
fn a_hostile_sink_leaves_every_protocol_correct() {
    let before = objmon_fuzz::sink::stats();
    for t in objmon_fuzz::targets() {
        for surface in [Surface::Vm, Surface::Monitor, Surface::LockApi] {
            let case = Case {
                surface,
                steps: vec![
                    Events(Panics(3)),
                    Events(LocksOther(1)),
                    Events(Relocks(2)),
                    Events(Sleeps(2)),
                    Do(0, Lock(0)),
                    Do(1, Lock(0)),
                    Do(2, Lock(0)),
                    Do(0, Unlock(0)),
                    Do(1, Wait(0, None)),
                    Do(2, Unlock(0)),
                    Do(1, Unlock(0)),
                    Do(0, Lock(0)),
                    Do(0, Wait(0, Some(1))),
                    Do(0, NotifyAll(0)),
                    Do(0, Unlock(0)),
                ],
            };
            if let Err(e) = t.run(&case, t.adversary(false, false)) {
                panic!("{}: {e}", t.name);
            }
        }
    }
    let after = objmon_fuzz::sink::stats();
    assert!(after.checked > before.checked, "no event was checked");
    assert!(after.panics > before.panics && after.locks > before.locks);
}

/// Found by objmon-fuzz (`--protocol fat --surface monitor`, seed 1, 29 cases): an event
/// names the address at which the object's fat monitor was bound, not the header's address
/// now. Safe code may move a `fat` header (here `mem::swap`, as of two `Monitor`s): a notify
/// on the header now in `h[1]` is reported as on `h[0]`, where another object is, and
/// `EventSink::object_tag` is asked about that one. `EventSite::object` says "its header's
/// address".
#[test]
#[ignore = "a documented limit (EventSite::object): an event names the address a safely moved object left; what a fix must pass"]
fn event_names_the_address_a_moved_object_left() {
    let rec = Arc::new(Recorder::new());
    let rt = Runtime::<Fat>::new(Config {
        events: Some(rec.clone()),
        ..Config::default()
    });
    let t = rt.attach().unwrap();
    let mut h = [LockWord::new(0), LockWord::new(0)];
    drop(t.enter(&h[0]).unwrap()); // binds a fat monitor to h[0]'s address
    let (a, b) = h.split_at_mut(1);
    std::mem::swap(&mut a[0], &mut b[0]); // safe code moves the object to h[1]
    let g = t.enter(&h[1]).unwrap();
    g.notify_all().unwrap();
    drop(g);
    let named: Vec<usize> = rec
        .take()
        .iter()
        .filter(|e| matches!(e, Event::MonitorNotify { .. }))
        .map(|e| e.site().unwrap().object)
        .collect();
    assert_eq!(
        named,
        [&h[1] as *const LockWord as usize],
        "the notify on h[1] names h[0] ({:#x}), the address its object left",
        &h[0] as *const LockWord as usize
    );
}

/// Found by objmon-fuzz (`--protocol tasuki`, seed 1, `Monitor` surface, shrunk to the case
/// below): `tasuki`'s contended enter reports its `MonitorEnter` when it owns the object's
/// fat monitor (`enter_slow`'s `m.enter`), and then may still wait in `contend` for the
/// flat owner's release: the sink runs while the thread does not hold the object, though an
/// enter "is delivered while the thread holds the monitor" (`events.rs`), and the event's
/// duration ends before the thread owns the lock. Timing-dependent: it failed within a few
/// hundred replays on a 2-core VM; fixed: the events wait until the enter returns.
#[test]
fn tasuki_reports_an_enter_before_the_object_is_held() {
    let case = Case {
        surface: Surface::Monitor,
        steps: vec![
            Events(Calm),
            Do(0, Lock(2)),
            Do(1, Lock(3)),
            Do(2, Unlock(0)),
            Do(2, Lock(3)),
            Do(2, Lock(0)),
            Do(0, Query(2)),
            Do(0, Lock(3)),
        ],
    };
    replay_strictly("tasuki", &case, 2_000);
}

/// Found by objmon-fuzz (the CI invocation, `--total-seconds 180 --seed 1`, on `biased-seed`
/// after 146 cases, shrunk to the case below): a biased-family spinner's episode ends when
/// the word turns fat (`biased/slow.rs`, `enter_slow_loop`: `spin.filter(..)`), and its
/// `MonitorEnter` is delivered then, before the thread has entered the fat monitor, so the
/// sink runs while another thread holds the object (and the monitor's contended enter may
/// report a second one). `thin` defers that report to its unblock. Reproduced within a few
/// replays on a 2-core VM; fixed: the report now waits until the enter returns.
#[test]
fn biased_spinner_reports_an_enter_before_the_object_is_held() {
    let case = Case {
        surface: Surface::Monitor,
        steps: vec![Events(Calm), Do(2, Lock(2)), Do(0, Lock(2)), Do(1, Lock(2))],
    };
    replay_strictly("biased-seed", &case, 2_000);
}

/// Replays `case` on `protocol` `times` times with every event promise checked
/// (`Adversary::strict_events`), panicking at the first failure.
fn replay_strictly(protocol: &str, case: &Case, times: u32) {
    let t = objmon_fuzz::targets()
        .into_iter()
        .find(|t| t.name == protocol)
        .unwrap();
    let adv = objmon_fuzz::Adversary {
        strict_events: true,
        ..t.adversary(false, false)
    };
    for _ in 0..times {
        if let Err(e) = t.run(case, adv) {
            panic!("{e}");
        }
    }
}
