//! With the feature `lock_api_04`: `RawMonitor` is also lock_api 0.4's raw mutex, so that
//! code naming 0.4 (here parking_lot 0.12's re-export, `parking_lot::lock_api`) still works.
//! `cargo test -p objmon --features lock_api_04 --test lock_api_04`.
#![cfg(all(not(loom), feature = "lock_api_04"))]

mod watchdog;

use objmon::{Fable, RawMonitor};
use parking_lot::lock_api::Mutex;
use std::time::Duration;

#[test]
fn lock_api_04_mutex() {
    watchdog::within(30, "lock_api 0.4", || {
        let m: Mutex<RawMonitor, Vec<u32>> = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for i in 0..4 {
                let m = &m;
                s.spawn(move || {
                    for _ in 0..100 {
                        m.lock().push(i);
                    }
                });
            }
        });
        assert_eq!(m.lock().len(), 400);
        let g = m.lock();
        assert!(m.is_locked());
        assert!(m.try_lock().is_none(), "held (by us): no second `&mut`");
        drop(g);
        assert!(m.try_lock_for(Duration::from_millis(1)).is_some());

        let f: Mutex<RawMonitor<Fable>, u8> = Mutex::new(1);
        *f.lock() += 1;
        assert_eq!(*f.lock(), 2);
    });
}
