//! Loom models of the biased engine's record of its last inline thin lock (`biased`,
//! `fable`: `LockRecords::last`, written just before the thin CAS, trusted by the unlock's
//! blind store): against a revoker of another object of the owner's (revocation writes only
//! biased words, never the recorded thin one), against a hasher (which waits for a single
//! hold's release, while the owner may inflate the word itself and must forget the record),
//! a `reclaim` clearing the owner's record with a CAS while the owner writes it with plain
//! stores, and a record made stale by safe code (a forgotten guard, then `mem::swap`)
//! against a revoker of the header swapped in (every non-seed flavor's kind of step).
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p objmon --release
//! --test loom_biased_record`.
#![cfg(loom)]

mod common;

use common::critical;

use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use objmon::protocol::biased::{BiasMode, Biasing, Flavor, Kko, KkoRseq, KkoSignal};
use objmon::protocol::fable::{FableHeuristics, FableSignalHeuristics};
use objmon::vm::{BiasConfig, BiasWord, Config, Protocol, Revocation, Runtime};

fn config() -> Config {
    common::config(2)
}

fn runtime<F: Flavor>() -> std::sync::Arc<Runtime<Biasing<F>>> {
    // SAFETY: the signal flavors' contract (`Runtime::new_unchecked`): a model installs no
    // signal handler (its barrier is modelled, no signal is sent).
    let rt = unsafe { Runtime::<Biasing<F>>::new_unchecked(config()) };
    let mode = Revocation::Membarrier;
    assert_eq!(
        Biasing::<F>::configure(
            &rt,
            BiasConfig {
                revocation: mode,
                learn_limit: 1,
            }
        ),
        mode
    );
    rt
}

/// Single-threaded set-up: `h` biased to `me` (learn limit 1: two acquisitions bias a FABLE
/// lock, one a KKO lock), given up (`revoke_now`: thin, rc 0), then locked and unlocked once
/// more, so that it is a free thin word the inline thin CAS takes (KKO's Figure 4 wants
/// owner 0, which that unlock leaves).
fn make_thin<F: Flavor>(
    rt: &Runtime<Biasing<F>>,
    me: &objmon::vm::ThreadHandle<Biasing<F>>,
    h: &BiasWord,
) {
    drop(me.enter(h).unwrap());
    drop(me.enter(h).unwrap());
    assert_eq!(h.mode(), BiasMode::Biased);
    Biasing::<F>::revoke_now(rt, me.context(), h).unwrap();
    drop(me.enter(h).unwrap());
    assert_eq!(h.mode(), BiasMode::Thin);
    assert_eq!(rt.owner_of(h), None);
}

/// The owner holds thin `y` by the recorded CAS, then locks and unlocks its biased `x` (the
/// records step) while a second thread revokes `x` and then contends for `y`; the owner's
/// unlock of `y` is the blind store. Mutual exclusion on both; both end free, `y` thin with
/// its host bits.
fn record_vs_revoker<F: Flavor>() {
    let mut b = common::builder(2);
    b.max_branches = 100_000;
    b.check(|| {
        let rt = runtime::<F>();
        let x = Arc::new(BiasWord::new(0x11));
        let y = Arc::new(BiasWord::new(0x22));
        let (in_x, in_y) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        // One count per lock: the two critical sections may overlap.
        let (nx, ny) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let me = rt.attach().unwrap();
        make_thin(&rt, &me, &y);
        drop(me.enter(&x).unwrap());
        drop(me.enter(&x).unwrap());
        assert_eq!(x.mode(), BiasMode::Biased);

        let (rt2, x2, y2, in_x2, in_y2, nx2, ny2) = (
            rt.clone(),
            x.clone(),
            y.clone(),
            in_x.clone(),
            in_y.clone(),
            nx.clone(),
            ny.clone(),
        );
        let revoker = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            let g = me.enter(&x2).unwrap();
            critical(&in_x2, &nx2);
            drop(g);
            let g = me.enter(&y2).unwrap();
            critical(&in_y2, &ny2);
            drop(g);
        });

        let gy = me.enter(&y).unwrap();
        let gx = me.enter(&x).unwrap();
        critical(&in_x, &nx);
        drop(gx);
        critical(&in_y, &ny);
        drop(gy);
        revoker.join().unwrap();
        assert_eq!(nx.load(Ordering::Relaxed), 2);
        assert_eq!(ny.load(Ordering::Relaxed), 2);
        assert_eq!(rt.owner_of(&x), None);
        assert_eq!(rt.owner_of(&y), None);
        assert_eq!(me.lock_count(&y), 0);
        assert_eq!(y.host_bits(), 0x22);
        assert_eq!(x.host_bits(), 0x11);
    });
}

#[test]
fn kko_record_vs_revoker() {
    record_vs_revoker::<Kko>();
}

#[test]
fn fable_record_vs_revoker() {
    record_vs_revoker::<FableHeuristics>();
}

/// Safe code moved the recorded thin word away (a guard forgotten, then `mem::swap`) and put
/// a header biased to the owner at its address. The owner holds that header twice while a
/// second thread revokes it and contends; the owner's inner unlock must not store the
/// recorded thin word over the revoked one: the records and rseq flavors forget the record
/// at the biased lock, and a revoker clears it before it marks the word (the signal
/// flavors, whose unlock reaches the record only after a failed section). Mutual exclusion;
/// the header ends free with its own host bits.
fn stale_record_vs_revoker<F: Flavor>() {
    let mut b = common::builder(2);
    b.max_branches = 100_000;
    b.check(|| {
        let rt = runtime::<F>();
        let me = rt.attach().unwrap();
        let x: &'static mut BiasWord = Box::leak(Box::new(BiasWord::new(0x11)));
        let mut y = BiasWord::new(0x22);
        make_thin(&rt, &me, x);
        drop(me.enter(&y).unwrap());
        drop(me.enter(&y).unwrap());
        assert_eq!(y.mode(), BiasMode::Biased);
        std::mem::forget(me.enter(x).unwrap()); // the thin record now names `x`'s address
        std::mem::swap(x, &mut y);
        let h: &'static BiasWord = x;
        let inside = Arc::new(AtomicBool::new(false));
        let n = Arc::new(AtomicUsize::new(0));
        let (rt2, inside2, n2) = (rt.clone(), inside.clone(), n.clone());
        let revoker = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            let g = me.enter(h).unwrap();
            critical(&inside2, &n2);
            drop(g);
        });
        let outer = me.enter(h).unwrap();
        drop(me.enter(h).unwrap());
        critical(&inside, &n);
        drop(outer);
        revoker.join().unwrap();
        assert_eq!(n.load(Ordering::Relaxed), 2);
        assert_eq!(rt.owner_of(h), None);
        assert_eq!(me.lock_count(h), 0);
        assert_eq!(h.host_bits(), 0x22);
    });
}

#[test]
fn kko_stale_record_vs_revoker() {
    stale_record_vs_revoker::<Kko>();
}

#[test]
fn kko_rseq_stale_record_vs_revoker() {
    stale_record_vs_revoker::<KkoRseq>();
}

#[test]
fn kko_signal_stale_record_vs_revoker() {
    stale_record_vs_revoker::<KkoSignal>();
}

#[test]
fn fable_signal_stale_record_vs_revoker() {
    stale_record_vs_revoker::<FableSignalHeuristics>();
}

/// The owner holds thin `y` by the recorded CAS and hashes it itself (it inflates: the
/// record must be forgotten, or the unlock would store the thin word over the fat one)
/// while a second thread hashes it too (it waits for the release, or finds it fat). Both
/// see one hash; the lock ends fat, free, with its host bits.
fn record_vs_hasher<F: Flavor>() {
    let mut b = common::builder(2);
    b.max_branches = 100_000;
    b.check(|| {
        let rt = runtime::<F>();
        let y = Arc::new(BiasWord::new(0x22));
        let me = rt.attach().unwrap();
        make_thin(&rt, &me, &y);
        let seen = Arc::new(AtomicU32::new(0));
        let (rt2, y2, seen2) = (rt.clone(), y.clone(), seen.clone());
        let hasher = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            seen2.store(me.identity_hash(&y2).unwrap(), Ordering::Relaxed);
        });
        let g = me.enter(&y).unwrap();
        let v = me.identity_hash(&y).unwrap();
        assert_eq!(y.mode(), BiasMode::Fat);
        drop(g);
        hasher.join().unwrap();
        assert_eq!(seen.load(Ordering::Relaxed), v, "one hash");
        assert_eq!(y.mode(), BiasMode::Fat, "not unlocked blind");
        assert_eq!(rt.owner_of(&y), None);
        assert_eq!(y.host_bits(), 0x22);
    });
}

#[test]
fn kko_record_vs_hasher() {
    record_vs_hasher::<Kko>();
}

#[test]
fn fable_record_vs_hasher() {
    record_vs_hasher::<FableHeuristics>();
}

/// `fable`'s learn words are recorded too (clear → learn, and the guess's counted
/// re-acquisition): the owner takes a fresh object (clear → learn, recorded) and unlocks it
/// blind, twice (the second one the counted re-acquisition, learn limit 2), while a second
/// thread contends (it waits while the guess holds the word, then turns it thin) and hashes
/// it. Mutual exclusion; the word ends free (thin or learn, or fat if hashed while held),
/// with its host bits.
#[test]
fn fable_learn_record_vs_second_thread() {
    let mut b = common::builder(2);
    b.max_branches = 100_000;
    b.check(|| {
        let rt = runtime::<FableHeuristics>();
        Biasing::<FableHeuristics>::configure(
            &rt,
            BiasConfig {
                revocation: Revocation::Membarrier,
                learn_limit: 2,
            },
        );
        let y = Arc::new(BiasWord::new(0x22));
        let inside = Arc::new(AtomicBool::new(false));
        let n = Arc::new(AtomicUsize::new(0));
        let (rt2, y2, inside2, n2) = (rt.clone(), y.clone(), inside.clone(), n.clone());
        let other = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            let g = me.enter(&y2).unwrap();
            critical(&inside2, &n2);
            drop(g);
            me.identity_hash(&y2).unwrap();
        });
        let me = rt.attach().unwrap();
        for _ in 0..2 {
            let g = me.enter(&y).unwrap();
            critical(&inside, &n);
            drop(g);
        }
        other.join().unwrap();
        assert_eq!(n.load(Ordering::Relaxed), 3);
        assert_eq!(rt.owner_of(&y), None);
        assert_eq!(me.lock_count(&y), 0);
        assert_ne!(
            y.mode(),
            BiasMode::Biased,
            "never biased by the learn-mode record"
        );
        assert_eq!(y.host_bits(), 0x22);
    });
}

/// Thread A locks `x` by the recorded thin CAS and forgets it (an object that dies held);
/// with `a_locks_y` it then locks `y` (its record names `y` now) while the main thread
/// reclaims `x` — the reclaim's CAS on A's record races with A's plain stores of it — and
/// locks the new object at `x`'s address. A's exit of `x` must fail and leave the main
/// thread's lock alone (a record left naming `x` would unlock it blind), and A's blind exit
/// of `y` still works.
fn reclaim_vs_owner<F: Flavor>(a_locks_y: bool) {
    common::builder(3).check(move || {
        let rt = runtime::<F>();
        let xp: *mut BiasWord = Box::into_raw(Box::new(BiasWord::new(0x11)));
        let xa = xp as usize;
        let y = Arc::new(BiasWord::new(0x22));
        {
            let me = rt.attach().unwrap();
            // SAFETY: `xp` is live; no other thread exists yet.
            make_thin(&rt, &me, unsafe { &*xp });
            make_thin(&rt, &me, &y);
        }
        let stage = Arc::new(AtomicU32::new(0));
        let (rt2, y2, stage2) = (rt.clone(), y.clone(), stage.clone());
        let a = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            // SAFETY: the object is live (freed only after this thread is joined); it is
            // borrowed afresh for each call, none across the main thread's reclaim.
            let x = || unsafe { &*(xa as *const BiasWord) };
            // SAFETY: `me` is this thread's handle; after stage 1 we use `x` only with the
            // exit the protocol must refuse.
            unsafe {
                Biasing::<F>::enter(&rt2, me.context(), x()).unwrap();
                stage2.store(1, Ordering::Release);
                if a_locks_y {
                    Biasing::<F>::enter(&rt2, me.context(), &y2).unwrap();
                }
                while stage2.load(Ordering::Acquire) != 2 {
                    thread::yield_now();
                }
                assert!(
                    Biasing::<F>::exit(&rt2, me.context(), x()).is_err(),
                    "x is another thread's now"
                );
                if a_locks_y {
                    Biasing::<F>::exit(&rt2, me.context(), &y2).unwrap();
                }
            }
        });
        while stage.load(Ordering::Acquire) != 1 {
            thread::yield_now();
        }
        // SAFETY: `xp` is live (freed below); A does not touch it between stages 1 and 2.
        rt.reclaim(unsafe { &mut *xp });
        let me = rt.attach().unwrap();
        // SAFETY: as above; A touches it from now on only with the exit it must refuse.
        let x = unsafe { &*xp };
        let g = me.enter(x).unwrap();
        stage.store(2, Ordering::Release);
        a.join().unwrap();
        assert_eq!(
            rt.owner_of(x),
            Some(me.id()),
            "A's exit left our lock alone"
        );
        drop(g);
        assert_eq!(rt.owner_of(x), None);
        assert_eq!(x.host_bits(), 0x11);
        assert_eq!(rt.owner_of(&y), None);
        assert_eq!(y.mode(), BiasMode::Thin, "A's blind exit of y");
        assert_eq!(y.host_bits(), 0x22);
        drop(me);
        // SAFETY: A is joined and our guard dropped: nobody uses `xp` any more.
        drop(unsafe { Box::from_raw(xp) });
    });
}

#[test]
fn fable_reclaim_clears_the_owners_record() {
    reclaim_vs_owner::<FableHeuristics>(false);
}

#[test]
fn fable_reclaim_vs_the_owners_next_thin_lock() {
    reclaim_vs_owner::<FableHeuristics>(true);
}

#[test]
fn kko_reclaim_clears_the_owners_record() {
    reclaim_vs_owner::<Kko>(false);
}
