//! `cargo bench -p objmon-bench`: criterion timings of every protocol's uncontended fast
//! paths, through `objmon::vm::visit_all` (a new protocol is benchmarked with no change here).
//!
//! Per protocol: `enter+exit` on an unlocked object (seed 000 Sync), a nested `enter+exit`
//! with the object already held (NestedSync), `try_enter+exit`, and `enter+exit` of a freshly
//! made header (first lock of an object: seed 002's learn / bias transitions). The bare
//! compare-and-swap + release store is the floor.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use objmon::vm::{Protocol, ProtocolVisitor, Runtime};
use std::sync::atomic::{AtomicU32, Ordering};

struct FastPaths<'a>(&'a mut Criterion);

impl ProtocolVisitor for FastPaths<'_> {
    fn visit<P: Protocol>(&mut self) {
        // SAFETY: this program installs no signal handler of its own (std's fault handlers run
        // only on a fault, which no owner section makes): the -signal flavors' contract
        // (`Runtime::new_unchecked`) holds; the other protocols have none.
        let rt = unsafe { Runtime::<P>::new_unchecked(Default::default()) };
        let me = rt.attach().expect("attach");
        // SAFETY (every `unsafe` call below): `cx` is this thread's own context, from the
        // handle `me` attached here; criterion runs the closures on this thread; no call is
        // made in native; every header outlives its holds.
        let (rtr, cx) = (&*rt, me.context());
        let mut g = self.0.benchmark_group(P::NAME);

        // `black_box` once, outside the timed closure: per call it would add a store and a
        // load that a user's loop does not have.
        let owned = P::Header::default();
        let h = black_box(&owned);
        g.bench_function("enter+exit", |b| {
            b.iter(|| {
                unsafe { P::enter(rtr, cx, h) }.unwrap();
                unsafe { P::exit(rtr, cx, h) }.unwrap();
            })
        });

        unsafe { P::enter(rtr, cx, h) }.unwrap();
        g.bench_function("nested enter+exit", |b| {
            b.iter(|| {
                unsafe { P::enter(rtr, cx, h) }.unwrap();
                unsafe { P::exit(rtr, cx, h) }.unwrap();
            })
        });
        unsafe { P::exit(rtr, cx, h) }.unwrap();

        g.bench_function("try_enter+exit", |b| {
            b.iter(|| {
                assert!(unsafe { P::try_enter(rtr, cx, h) }.unwrap());
                unsafe { P::exit(rtr, cx, h) }.unwrap();
            })
        });

        g.bench_function("new object enter+exit", |b| {
            b.iter(|| {
                let mut fresh = P::Header::default();
                unsafe { P::enter(rtr, cx, black_box(&fresh)) }.unwrap();
                unsafe { P::exit(rtr, cx, black_box(&fresh)) }.unwrap();
                rtr.reclaim(&mut fresh);
            })
        });
        g.finish();
    }
}

fn fast_paths(c: &mut Criterion) {
    c.bench_function("speed-of-light/cas+release-store", |b| {
        let owned = AtomicU32::new(0);
        let w = black_box(&owned);
        b.iter(|| {
            let _ = w.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed);
            w.store(0, Ordering::Release);
        })
    });
    c.bench_function("speed-of-light/cas+cas", |b| {
        let owned = AtomicU32::new(0);
        let w = black_box(&owned);
        b.iter(|| {
            let _ = w.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed);
            let _ = w.compare_exchange(1, 0, Ordering::Release, Ordering::Relaxed);
        })
    });
    objmon::vm::visit_all(&mut FastPaths(c));
}

criterion_group!(benches, fast_paths);
criterion_main!(benches);
