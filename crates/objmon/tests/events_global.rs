//! `objmon::set_event_sink`: the sink of the process-wide runtimes behind `Monitor<T>`, set
//! once before their first use (one test: the process's runtimes are shared). Scripted: a
//! waiter notified by this thread, its wait naming the notifier.
#![cfg(not(loom))]

mod watchdog;

use objmon::events::{Event, EventKind, Recorder, SetSinkError, WaitEnd};
use objmon::Monitor;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn the_process_wide_sink_sees_monitor_events_and_is_set_once() {
    let rec = Arc::new(Recorder::new());
    objmon::set_event_sink(rec.clone()).unwrap();
    assert_eq!(
        objmon::set_event_sink(rec.clone()),
        Err(SetSinkError::AlreadySet)
    );
    watchdog::within(60, "global sink", move || {
        let m = Arc::new(Monitor::new(std::cell::Cell::new(false)));
        let waiter = {
            let m = m.clone();
            std::thread::spawn(move || {
                let mut g = m.lock();
                g.wait_while(|ready| !ready.get()).unwrap();
            })
        };
        // Until the waiter waits (then it has released the lock): notify it.
        loop {
            let g = m.lock();
            let rt = objmon::vm::global_runtime::<objmon::Thin>();
            let waiting = rt.thread_dump().threads.iter().any(|t| {
                t.blocked_on
                    .is_some_and(|b| b.kind == objmon::vm::BlockKind::Wait)
            });
            if waiting {
                g.set(true);
                g.notify_all();
                break;
            }
            drop(g);
            std::thread::sleep(Duration::from_millis(1));
        }
        waiter.join().unwrap();
        let events = rec.take();
        let waits: Vec<_> = events
            .iter()
            .filter(|e| e.kind() == EventKind::MonitorWait)
            .collect();
        assert_eq!(waits.len(), 1, "{events:#?}");
        let Event::MonitorWait {
            outcome, notifier, ..
        } = waits[0]
        else {
            unreachable!()
        };
        assert_eq!(*outcome, WaitEnd::Notified);
        assert!(notifier.is_some());
        assert!(events.iter().any(|e| e.kind() == EventKind::MonitorInflate));
    });
}
