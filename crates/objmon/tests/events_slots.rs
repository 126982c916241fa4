//! The process's registry of event sinks: 255 runtimes with a sink can be alive at once; the
//! 256th panics with a message that says so, and a slot freed by a runtime's drop is taken by
//! the next one. Its own test binary (one test): the registry is process-wide.
#![cfg(not(loom))]

use objmon::events::{EventSink, Recorder};
use objmon::vm::{Config, Runtime, Thin};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

fn with_sink(sink: &Arc<dyn EventSink>) -> Arc<Runtime<Thin>> {
    Runtime::<Thin>::new(Config {
        events: Some(sink.clone()),
        monitor_capacity: 16,
        max_threads: 4,
        ..Config::default()
    })
}

#[test]
fn the_256th_runtime_with_a_sink_panics_and_a_freed_slot_is_reused() {
    let sink: Arc<dyn EventSink> = Arc::new(Recorder::new());
    let mut alive: Vec<_> = (0..255).map(|_| with_sink(&sink)).collect();
    // Runtimes without a sink take no slot.
    let plain = Runtime::<Thin>::new(Config {
        monitor_capacity: 16,
        max_threads: 4,
        ..Config::default()
    });
    let full =
        std::panic::catch_unwind(AssertUnwindSafe(|| with_sink(&sink))).expect_err("a 256th slot");
    let msg = full
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| full.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    assert!(msg.contains("more than 255 runtimes"), "{msg}");
    // The failed install left every slot as it was: drop one runtime, and one more fits.
    drop(alive.pop());
    alive.push(with_sink(&sink));
    let again = std::panic::catch_unwind(AssertUnwindSafe(|| with_sink(&sink)));
    assert!(again.is_err(), "the registry holds 255 sinks, not more");
    // The runtimes still work, and deliver to the sink.
    let me = alive[254].attach().unwrap();
    let h = objmon::vm::LockWord::default();
    drop(me.enter(&h).unwrap());
    drop(me);
    drop(alive);
    drop(plain);
    assert_eq!(Arc::strong_count(&sink), 1, "every slot let go of its sink");
}
