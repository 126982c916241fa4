//! `lightweight`, `lightweight-seed`, `lightweight-table`: a thread's lock stack names the
//! headers it fast-locked by address, and a fast-locked word names no owner (seed 001's
//! anonymous owner). After `mem::forget` of a guard and `mem::swap` of two monitors, the
//! forgetful thread's stack names an address that now holds another header; if another
//! thread locks that header, the forgetful thread's next lock of it takes the recursive fast
//! path (its stack's top is that address) and both hold it.
//!
//! Found by probing the forget + swap pattern on every protocol; fails on f46a3d1 and still
//! fails: the word cannot tell whose fast-lock it is, so no check of the header can close
//! it; the fix needs the owner in the fast-locked word or the protocols made unreachable
//! from safe code (`docs/soundness.md`, "State outside the header"). Run with `--ignored`.
#![cfg(not(loom))]

mod watchdog;

use objmon::{Lightweight, LightweightTable, Monitor, MonitorProtocol};
use std::cell::Cell;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;
use watchdog::within;

fn forget_swap_then_both_lock<P: MonitorProtocol>() {
    let (mut m1, mut m2) = (
        Monitor::<Cell<u64>, P>::with_protocol(Cell::new(0)),
        Monitor::<Cell<u64>, P>::with_protocol(Cell::new(0)),
    );
    std::mem::forget(m1.lock());
    std::mem::swap(&mut m1, &mut m2);
    let (held_tx, held_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let two_owners = thread::scope(|s| {
        let m1 = &m1;
        s.spawn(move || {
            let g = m1.lock();
            held_tx.send(()).unwrap();
            done_rx.recv().unwrap();
            drop(g);
        });
        held_rx.recv().unwrap();
        let got = m1.try_lock_for(Duration::from_millis(100)).is_some();
        done_tx.send(()).unwrap();
        got
    });
    assert!(!two_owners, "{}: two owners", std::any::type_name::<P>());
    std::mem::forget(m2); // held by the forgotten guard
}

#[test]
#[ignore = "known hole: the anonymous fast-lock cannot be validated (module docs)"]
fn lightweight_no_two_owners_after_forget_and_swap() {
    within(30, "lightweight", forget_swap_then_both_lock::<Lightweight>);
}

#[test]
#[ignore = "known hole: the anonymous fast-lock cannot be validated (module docs)"]
fn lightweight_table_no_two_owners_after_forget_and_swap() {
    within(
        30,
        "lightweight-table",
        forget_swap_then_both_lock::<LightweightTable>,
    );
}
