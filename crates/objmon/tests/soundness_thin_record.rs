//! `thin`'s record of the last fast lock (`ThinThread::last`: the address and host bits of the
//! word a thread last locked with the §2.3.1 compare-and-swap, which its unlock trusts for a
//! blind store) against safe code that makes it stale: a guard passed to `mem::forget` keeps
//! the record naming an address, and `mem::swap` / `mem::replace` / a move out of a `Box` then
//! put another header there. The next lock of that address must not leave the record
//! standing, whatever path it takes (the inflated word's short cut, `try_lock`, the nested
//! lock), so that no unlock blind-stores over a word the record no longer describes.
//!
//! The four checks over an inflated word failed on f46a3d1 (two owners, a queued thread never
//! woken, a panicking unlock): the inflated word's lock went to the monitor before the record
//! was forgotten, and `try_lock` never forgot it, so the nested unlock stored thin-unlocked
//! bits over the inflated word while its monitor stayed owned. The `Box` and `mem::replace`
//! checks passed there too; they pin the other ways in.
#![cfg(not(loom))]

mod watchdog;

use objmon::{Monitor, Thin};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;
use watchdog::within;

type M = Monitor<Cell<u64>, Thin>;

/// Makes `m`'s header inflated from another thread (a timed wait inflates in every protocol).
fn inflate_elsewhere(m: &M) {
    thread::scope(|s| {
        s.spawn(|| {
            let mut g = m.lock();
            g.wait(Some(Duration::from_millis(1))).unwrap();
        });
    });
}

/// What the adversary leaves: the calling thread's record names `m1`'s address while an
/// inflated header sits there.
fn stale_record_over_an_inflated_word(m1: &mut M, m2: &mut M) {
    std::mem::forget(m1.lock());
    inflate_elsewhere(m2);
    std::mem::swap(m1, m2);
}

/// While `outer` is held, no other thread may lock `m`.
fn assert_exclusive(m: &M, what: &str) {
    let other_got_it = thread::scope(|s| s.spawn(|| m.try_lock().is_some()).join().unwrap());
    assert!(
        !other_got_it,
        "{what}: another thread locked a held monitor"
    );
}

#[test]
fn the_nested_unlock_of_an_inflated_word_keeps_it_held() {
    within(30, "thin lock", || {
        let (mut m1, mut m2) = (M::new(Cell::new(0)), M::new(Cell::new(0)));
        stale_record_over_an_inflated_word(&mut m1, &mut m2);
        let outer = m1.lock();
        drop(m1.lock());
        assert_exclusive(&m1, "lock, nested lock + unlock");
        assert!(m1.is_owned_by_current_thread());
        drop(outer);
        assert!(!m1.is_locked(), "released");
    });
}

#[test]
fn try_lock_of_an_inflated_word_keeps_it_held() {
    within(30, "thin try_lock", || {
        let (mut m1, mut m2) = (M::new(Cell::new(0)), M::new(Cell::new(0)));
        stale_record_over_an_inflated_word(&mut m1, &mut m2);
        let outer = m1.try_lock().expect("free");
        drop(m1.try_lock().expect("reentrant"));
        assert_exclusive(&m1, "try_lock, nested try_lock + unlock");
        drop(outer);
        assert!(!m1.is_locked(), "released");
    });
}

/// `try_lock` of a thin word at an address the record names with other host bits: the unlock
/// must store the word's own bits back (here: a moved-in header that was locked and released
/// by another thread, so its word is plain unlocked, and one whose hash was taken).
#[test]
fn try_lock_after_a_replace_releases_the_word_it_locked() {
    within(30, "thin try_lock after replace", || {
        let mut m1 = M::new(Cell::new(0));
        std::mem::forget(m1.lock());
        let old = std::mem::replace(&mut m1, M::new(Cell::new(7)));
        let g = m1.try_lock().expect("a fresh monitor is free");
        drop(g);
        assert!(!m1.is_locked());
        let other_got_it = thread::scope(|s| s.spawn(|| m1.try_lock().is_some()).join().unwrap());
        assert!(other_got_it, "a released monitor stays locked");
        assert_eq!(m1.lock().get(), 7);
        std::mem::forget(old); // still held by the forgotten guard
    });
}

/// Two threads increment one counter under the monitor; with two owners the count comes out
/// short.
#[test]
fn no_two_owners_after_forget_and_swap() {
    within(60, "thin counter", || {
        let (mut m1, mut m2) = (M::new(Cell::new(0)), M::new(Cell::new(0)));
        stale_record_over_an_inflated_word(&mut m1, &mut m2);
        const N: u64 = 200_000;
        let inside = AtomicBool::new(false);
        thread::scope(|s| {
            let (m1, inside) = (&m1, &inside);
            let worker = move |nested: bool| {
                for _ in 0..N {
                    let g = m1.lock();
                    let again = nested.then(|| m1.lock());
                    assert!(!inside.swap(true, Ordering::Relaxed), "two owners");
                    g.set(g.get() + 1);
                    inside.store(false, Ordering::Relaxed);
                    drop(again);
                }
            };
            s.spawn(move || worker(false));
            worker(true);
        });
        assert_eq!(m1.lock().get(), 2 * N);
    });
}

/// A thread queued on the monitor must be woken by the owner's release.
#[test]
fn a_queued_thread_is_woken_after_forget_and_swap() {
    within(30, "thin queued", || {
        let (mut m1, mut m2) = (M::new(Cell::new(0)), M::new(Cell::new(0)));
        stale_record_over_an_inflated_word(&mut m1, &mut m2);
        let outer = m1.lock();
        drop(m1.lock());
        thread::scope(|s| {
            let queued = s.spawn(|| m1.lock().set(1));
            thread::sleep(Duration::from_millis(50));
            drop(outer);
            queued.join().unwrap();
        });
        assert_eq!(m1.lock().get(), 1);
    });
}

/// The same with the header moved out of a `Box` (the record names the freed box's address,
/// which the next box of the same size is likely to get).
#[test]
fn a_record_of_a_box_moved_out_is_not_trusted() {
    within(30, "thin box", || {
        let b = Box::new(M::new(Cell::new(0)));
        std::mem::forget(b.lock());
        let moved: M = *b;
        let other = M::new(Cell::new(0));
        inflate_elsewhere(&other);
        let b2 = Box::new(other);
        let outer = b2.lock();
        drop(b2.lock());
        assert_exclusive(&b2, "boxed");
        drop(outer);
        assert!(!b2.is_locked());
        std::mem::forget(moved);
    });
}
