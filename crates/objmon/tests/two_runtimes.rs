//! One header used with two runtimes (of the same protocol) must never have
//! two owners. A thread of runtime A holds the header; a thread of runtime B must not also
//! hold it: its `enter` waits for A's release or fails, its `try_enter` answers "held" or
//! fails, and once one runtime inflated the header the other gets an error, never a monitor of
//! its own table that belongs to some other object. Every check runs on every protocol
//! (`visit_all`) under a watchdog, so a hang fails instead of hanging.
//!
//! Before the fix, thread ids were per runtime: B's first thread had A's first thread's id and
//! took A's thin lock as a nested lock of its own; an inflated header's index was decoded in
//! B's table (a panic for an index B never allocated, or another object's monitor).
#![cfg(not(loom))]

mod watchdog;

/// Like `every_protocol!`, but runs every protocol and then names all that failed.
macro_rules! every_protocol_all {
    ($($check:ident),* $(,)?) => {$(
        #[test]
        fn $check() {
            struct V(Vec<&'static str>);
            impl objmon::vm::ProtocolVisitor for V {
                fn visit<P: objmon::Protocol>(&mut self) {
                    // `OBJMON_ONLY=name` runs one protocol (to study one failure at a time).
                    if std::env::var("OBJMON_ONLY").is_ok_and(|n| n != P::NAME) {
                        return;
                    }
                    eprintln!(concat!(stringify!($check), " on {}"), P::NAME);
                    let r = std::panic::catch_unwind(|| {
                        watchdog::within(60, P::NAME, checks::$check::<P>)
                    });
                    if r.is_err() {
                        self.0.push(P::NAME);
                    }
                }
            }
            let mut v = V(Vec::new());
            objmon::vm::visit_all(&mut v);
            assert!(v.0.is_empty(), "{} fails on {:?}", stringify!($check), v.0);
        }
    )*};
}

every_protocol_all!(
    thin_held_by_a_is_not_held_by_b,
    inflated_by_a_is_not_held_by_b,
    inflated_by_a_is_no_monitor_of_b,
);

mod checks {
    use objmon::vm::{MonitorError, Protocol, Runtime};
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::sync::mpsc;
    use std::thread;
    use std::time::Duration;

    /// B's view of a header that A's thread holds: never held by B.
    fn b_must_not_hold<P: Protocol>(
        b: &objmon::vm::ThreadHandle<'_, P>,
        h: &P::Header,
        a_holds: &AtomicBool,
        release_a: mpsc::Sender<()>,
    ) {
        match b.try_enter(h) {
            Ok(Some(_)) => panic!("{}: try_enter of runtime B took A's held lock", P::NAME),
            Ok(None) | Err(MonitorError::ForeignHeader) => {}
            Err(e) => panic!("{}: try_enter: unexpected {e:?}", P::NAME),
        }
        assert!(!b.holds_lock(h), "{}: B holds A's lock", P::NAME);
        assert_eq!(b.lock_count(h), 0, "{}: B counts A's lock", P::NAME);
        assert!(matches!(
            b.notify(h),
            Err(MonitorError::IllegalMonitorState | MonitorError::ForeignHeader)
        ));
        // `enter` may wait for A's release (A lets go 50 ms from now) or fail; never succeed
        // while A holds.
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(50));
            let _ = release_a.send(());
        });
        match b.enter(h) {
            Ok(g) => {
                assert!(!a_holds.load(SeqCst), "{}: two owners", P::NAME);
                drop(g);
            }
            Err(MonitorError::ForeignHeader) => {}
            Err(e) => panic!("{}: enter: unexpected {e:?}", P::NAME),
        }
    }

    /// A's first thread holds `h` (inflated first if `inflate`); B's first thread (the same
    /// small id before the fix) tries it.
    fn held_by_a<P: Protocol>(inflate: bool) {
        // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
        // run only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let ra = unsafe { Runtime::<P>::new_unchecked(Default::default()) };
        // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
        // run only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rb = unsafe { Runtime::<P>::new_unchecked(Default::default()) };
        let h = P::Header::default();
        let a_holds = AtomicBool::new(false);
        let (held_tx, held_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        thread::scope(|s| {
            let (ra, h, a_holds) = (&ra, &h, &a_holds);
            s.spawn(move || {
                let me = ra.attach().unwrap();
                me.monitor_enter(h).unwrap();
                if inflate {
                    me.wait(h, Some(Duration::from_millis(1))).unwrap();
                }
                a_holds.store(true, SeqCst);
                held_tx.send(()).unwrap();
                go_rx.recv().unwrap();
                a_holds.store(false, SeqCst);
                assert_eq!(me.monitor_exit(h), Ok(()), "{}: A's own release", P::NAME);
            });
            held_rx.recv().unwrap();
            let b = rb.attach().unwrap();
            b_must_not_hold(&b, h, a_holds, go_tx);
        });
    }

    pub fn thin_held_by_a_is_not_held_by_b<P: Protocol>() {
        held_by_a::<P>(false);
    }

    pub fn inflated_by_a_is_not_held_by_b<P: Protocol>() {
        held_by_a::<P>(true);
    }

    /// A inflated `h` and released it; B has a monitor of its own bound to another header
    /// (`h2`), at the index A's header names. B must not enter that monitor for `h`: an error,
    /// or (a protocol whose header names no monitor) a lock that A then sees as held.
    pub fn inflated_by_a_is_no_monitor_of_b<P: Protocol>() {
        // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
        // run only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let ra = unsafe { Runtime::<P>::new_unchecked(Default::default()) };
        // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
        // run only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rb = unsafe { Runtime::<P>::new_unchecked(Default::default()) };
        let h = P::Header::default();
        let h2 = P::Header::default();
        let (inflated_tx, inflated_rx) = mpsc::channel();
        let (b_done_tx, b_done_rx) = mpsc::channel::<bool>();
        let (a_done_tx, a_done_rx) = mpsc::channel::<()>();
        thread::scope(|s| {
            let (ra, h_a) = (&ra, &h);
            s.spawn(move || {
                let me = ra.attach().unwrap();
                let h = h_a;
                {
                    let g = me.enter(h).unwrap();
                    g.wait(Some(Duration::from_millis(1))).unwrap();
                }
                inflated_tx.send(()).unwrap();
                // While B holds `h` (if it could take it), A must not.
                if b_done_rx.recv().unwrap() {
                    match me.try_enter(h) {
                        Ok(Some(_)) => panic!("{}: A took the lock B holds", P::NAME),
                        Ok(None) | Err(MonitorError::ForeignHeader) => {}
                        Err(e) => panic!("{}: A's try_enter: unexpected {e:?}", P::NAME),
                    }
                }
                a_done_tx.send(()).unwrap();
            });
            let b = rb.attach().unwrap();
            {
                let g = b.enter(&h2).unwrap();
                g.wait(Some(Duration::from_millis(1))).unwrap();
            }
            inflated_rx.recv().unwrap();
            match b.try_enter(&h) {
                Ok(Some(g)) => {
                    assert!(b.holds_lock(&h));
                    b_done_tx.send(true).unwrap();
                    a_done_rx.recv().unwrap();
                    drop(g);
                }
                Ok(None) => panic!("{}: nobody holds `h`, yet B's try_enter failed", P::NAME),
                Err(MonitorError::ForeignHeader) => {
                    assert!(!b.holds_lock(&h));
                    assert_eq!(b.lock_count(&h), 0);
                    assert!(matches!(
                        b.notify(&h),
                        Err(MonitorError::IllegalMonitorState | MonitorError::ForeignHeader)
                    ));
                    assert_eq!(b.enter(&h).err(), Some(MonitorError::ForeignHeader));
                    b_done_tx.send(false).unwrap();
                    a_done_rx.recv().unwrap();
                }
                Err(e) => panic!("{}: B's try_enter: unexpected {e:?}", P::NAME),
            }
            // B's own monitor still serves B's own header.
            let g = b.enter(&h2).unwrap();
            drop(g);
        });
    }
}
