//! The fast-locking family with two live runtimes (docs/soundness.md §7). A `lightweight*`
//! contender inflates a fast-lock for its owner with an anonymous monitor; it skips the scan
//! of its runtime's lock stacks only while its runtime is the only fast-locking runtime alive
//! in the process (`FastLocking::only_runtime`). These checks run with two: runtime B's
//! contender must wait for runtime A's fast-lock, never inflate it (A's owner would then find
//! B's monitor in its header: its wait and exit would fail, and B would block forever on a
//! monitor nobody claims), and gets `ForeignHeader` once A inflated it.
//!
//! `lightweight`, `lightweight-seed` and `lightweight-table` share `MarkWord`, so the pairs
//! include mixed ones: the count is of the whole family, not of one protocol (a count per
//! protocol would be 1 in each runtime of `lightweight_and_lightweight_seed`, and B would
//! inflate A's fast-lock).
#![cfg(not(loom))]

mod watchdog;

/// A runtime of `P`, made with `Runtime::new_unchecked` because some of the protocols here
/// (`lightweight*`) ask the host never to move or free a header held through a leaked guard.
fn hosted<P: objmon::vm::Protocol>(
    config: objmon::vm::Config,
) -> std::sync::Arc<objmon::vm::Runtime<P>> {
    // SAFETY: the contract of `new_unchecked` (lightweight's: no header held through a
    // leaked guard is moved or freed unreported). The tests here that leak a guard and then
    // move or free its header do so on purpose, to check that what the protocol does then
    // stays memory-safe; no data is guarded by these headers, so two owners could not race.
    unsafe { objmon::vm::Runtime::new_unchecked(config) }
}

use objmon::vm::{MonitorError, Protocol};
use objmon::{Lightweight, LightweightSeed, LightweightTable};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// A's thread fast-locks `h`; B's thread enters it (and contends); A then inflates it with a
/// wait and releases it once B has its answer: `ForeignHeader`.
fn b_contends_for_a_fast_lock<A, B>()
where
    A: Protocol<Header = objmon::vm::MarkWord>,
    B: Protocol<Header = objmon::vm::MarkWord>,
{
    let ra = hosted::<A>(Default::default());
    let rb = hosted::<B>(Default::default());
    let h = objmon::vm::MarkWord::default();
    let (held_tx, held_rx) = mpsc::channel();
    let (entering_tx, entering_rx) = mpsc::channel();
    let (answer_tx, answer_rx) = mpsc::channel();
    thread::scope(|s| {
        let (ra, rb, h) = (&ra, &rb, &h);
        s.spawn(move || {
            held_rx.recv().unwrap();
            let b = rb.attach().unwrap();
            entering_tx.send(()).unwrap();
            answer_tx.send(b.enter(h).map(drop)).unwrap();
        });
        let me = ra.attach().unwrap();
        me.monitor_enter(h).unwrap();
        held_tx.send(()).unwrap();
        entering_rx.recv().unwrap();
        // Give B time to reach its contended loop (no assertion depends on it: earlier, B
        // meets A's monitor instead of A's fast-lock and answers the same).
        thread::sleep(Duration::from_millis(20));
        assert_eq!(
            me.wait(h, Some(Duration::from_millis(1))),
            Ok(objmon::WaitOutcome::TimedOut),
            "{} -> {}: A's wait on its own lock",
            A::NAME,
            B::NAME
        );
        let answer = answer_rx.recv().unwrap();
        assert_eq!(
            answer,
            Err(MonitorError::ForeignHeader),
            "{} -> {}: B's enter of A's lock",
            A::NAME,
            B::NAME
        );
        assert_eq!(me.monitor_exit(h), Ok(()), "A's own release");
    });
}

macro_rules! pairs {
    ($($(#[$attr:meta])* $name:ident: $a:ty, $b:ty;)*) => {$(
        #[test]
        $(#[$attr])*
        fn $name() {
            watchdog::within(60, stringify!($name), b_contends_for_a_fast_lock::<$a, $b>);
        }
    )*};
}

pairs! {
    lightweight_and_lightweight: Lightweight, Lightweight;
    lightweight_seed_and_lightweight_seed: LightweightSeed, LightweightSeed;
    lightweight_table_and_lightweight_table: LightweightTable, LightweightTable;
    lightweight_and_lightweight_seed: Lightweight, LightweightSeed;
    lightweight_seed_and_lightweight: LightweightSeed, Lightweight;
    // A header shared by an index-in-word variant and the table variant (found while
    // writing these checks): `lightweight-table`'s B found no entry of its own for A's
    // monitor word, took it for an orphan, deflated it in place and took the lock while A
    // waited on its monitor (two owners); `lightweight-seed`'s B decoded the table's
    // index-less monitor word and panicked (mark.rs: "a monitor word holds a monitor
    // index"). Each now reads the other kind of monitor word as another runtime's.
    lightweight_and_lightweight_table: Lightweight, LightweightTable;
    lightweight_table_and_lightweight_seed: LightweightTable, LightweightSeed;
    lightweight_table_and_lightweight: LightweightTable, Lightweight;
    lightweight_seed_and_lightweight_table: LightweightSeed, LightweightTable;
}
