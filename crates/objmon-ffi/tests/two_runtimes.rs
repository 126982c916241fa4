//! One `objmon_header` used with two runtimes of the same
//! protocol never has two owners. A thread of runtime A holds the header (thin, then
//! inflated by a wait); a thread of runtime B must not acquire it: `objmon_try_enter`
//! answers "not acquired" or `OBJMON_E_FOREIGN_HEADER`, and `objmon_lock_count` is 0. Every
//! protocol, each under a watchdog. Before the fix, B's first thread had A's first thread's
//! id and took the lock as its own on every 8-byte-word protocol.
#![allow(non_camel_case_types)]

use objmon_ffi::*;
use std::ffi::CString;
use std::sync::mpsc;
use std::time::Duration;

struct Rt(*mut objmon_runtime);
unsafe impl Send for Rt {}
unsafe impl Sync for Rt {}
struct H(*mut objmon_header);
unsafe impl Send for H {}
unsafe impl Sync for H {}

fn runtime(name: &str) -> Rt {
    let n = CString::new(name).unwrap();
    let mut rt = std::ptr::null_mut();
    // SAFETY: a NUL-terminated name, NULL config, a valid out pointer.
    assert_eq!(
        unsafe { objmon_runtime_new(n.as_ptr(), std::ptr::null(), &mut rt) },
        objmon_status::OBJMON_OK
    );
    Rt(rt)
}

fn attach(rt: &Rt) -> *mut objmon_thread {
    let mut t = std::ptr::null_mut();
    // SAFETY: a live runtime, a valid out pointer.
    assert_eq!(
        unsafe { objmon_thread_attach(rt.0, &mut t) },
        objmon_status::OBJMON_OK
    );
    t
}

fn detach(t: *mut objmon_thread) {
    let mut released = 0usize;
    // SAFETY: our own live handle, on its thread.
    unsafe { objmon_thread_detach(t, &mut released) };
}

/// A's thread holds `h` (inflated first if `inflate`); B's thread tries it.
fn check(name: &'static str, inflate: bool) {
    let (ra, rb) = (runtime(name), runtime(name));
    // An all-zero header is a valid unlocked header for every protocol (C ABI rule).
    let h = H(Box::into_raw(Box::new(unsafe {
        std::mem::zeroed::<objmon_header>()
    })));
    // SAFETY: live runtime, valid header.
    assert_eq!(
        unsafe { objmon_header_init(ra.0, h.0) },
        objmon_status::OBJMON_OK
    );
    let (held_tx, held_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        let (ra, h) = (&ra, &h);
        s.spawn(move || {
            let t = attach(ra);
            // SAFETY (the calls below): our own handle on its thread, a live header.
            assert_eq!(unsafe { objmon_enter(t, h.0) }, objmon_status::OBJMON_OK);
            if inflate {
                let mut o = objmon_wait_outcome::OBJMON_NOTIFIED;
                assert_eq!(
                    unsafe { objmon_wait(t, h.0, 1_000_000, &mut o) },
                    objmon_status::OBJMON_OK
                );
            }
            held_tx.send(()).unwrap();
            go_rx.recv().unwrap();
            assert_eq!(
                unsafe { objmon_exit(t, h.0) },
                objmon_status::OBJMON_OK,
                "{name}: A's own release"
            );
            detach(t);
        });
        held_rx.recv().unwrap();
        let t = attach(&rb);
        let mut acquired = false;
        // SAFETY (the calls below): our own handle on its thread, a live header.
        let r = unsafe { objmon_try_enter(t, h.0, &mut acquired) };
        assert!(
            (r == objmon_status::OBJMON_OK && !acquired)
                || r == objmon_status::OBJMON_E_FOREIGN_HEADER,
            "{name}: B's try_enter of A's held lock: {r:?}, acquired {acquired}"
        );
        assert_eq!(
            unsafe { objmon_lock_count(t, h.0) },
            0,
            "{name}: B counts A's lock"
        );
        detach(t);
        go_tx.send(()).unwrap();
    });
    // SAFETY: made by Box above, no longer used; the runtimes are ours.
    unsafe {
        drop(Box::from_raw(h.0));
        objmon_runtime_free(ra.0);
        objmon_runtime_free(rb.0);
    }
}

fn every_protocol(inflate: bool) {
    let mut failed = Vec::new();
    for name in objmon::protocol::names() {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(|| check(name, inflate));
            let _ = tx.send(r.is_ok());
        });
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(true) => {}
            Ok(false) => failed.push(name),
            Err(_) => failed.push(name), // hung
        }
    }
    assert!(
        failed.is_empty(),
        "two runtimes share a header on {failed:?}"
    );
}

#[test]
fn a_header_held_in_one_runtime_is_not_taken_by_another() {
    every_protocol(false);
}

#[test]
fn an_inflated_header_of_one_runtime_is_not_taken_by_another() {
    every_protocol(true);
}
