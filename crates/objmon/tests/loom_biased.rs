//! Loom models of biased locking (seed 002): the bias owner's plain-store fast path against
//! each revocation path — synchronous pair handshake, asynchronous pair handshake, and the
//! membarrier revocation — for the three owner steps: the header count in an rseq section
//! (`biased-rseq`, `fable-rseq`: Figure 4's load, compare and store; the barrier is
//! `membarrier(PRIVATE_EXPEDITED_RSEQ)`, which restarts a section it lands in), the owner's
//! lock records (`biased`, `fable`: the owner's lock and unlock store
//! nothing to the header) and the header count behind the `in_op` Dekker (`biased-seed`,
//! Figures 3 and 4). The records models cover an owner in the middle of a lock and of an
//! unlock, nested holds, an unstructured (out-of-order) exit and the records overflowing
//! into a thin count.
//!
//! Loom cannot model `membarrier(2)`. Under `--cfg loom` the barrier is replaced by what it
//! guarantees: a `SeqCst` fence on the revoker side where it calls the barrier, and a `SeqCst`
//! fence at the owner's compiler barrier (the point where the kernel's IPI, or a context
//! switch, would order the owner's accesses). The rseq section (inline asm) is modelled as
//! the same load, compare and store under a per-thread `cpu` mutex that the barrier takes
//! once after its fence. Everything else is the shipped code.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p objmon --release
//! --test loom_biased`.
#![cfg(loom)]

mod common;

use common::critical;

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use objmon::protocol::biased::{
    BiasMode, Biasing, Flavor, Kko, KkoRseq, KkoSeed, KkoSignal, LOCK_RECORDS,
};
use objmon::protocol::fable::{FableRseqHeuristics, FableSignalHeuristics};
use objmon::vm::{BiasConfig, BiasWord, Config, Revocation, Runtime, ThreadHandle};

fn model(f: impl Fn() + Sync + Send + 'static) {
    model_with(3, f)
}

/// `bound`: the default preemption bound (three-thread models use 2 to stay small).
fn model_with(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = common::builder(bound);
    // Spin-waits with a yield per round (handshakes, thin contention) make long but finite
    // executions.
    b.max_branches = 10_000;
    b.check(f);
}

fn config() -> Config {
    common::config(2)
}

/// What the threads' critical sections share: who is inside, how many ran, and how many of
/// the other threads (revokers, which lock the owner's biased object) are done.
#[derive(Clone)]
struct Race {
    inside: Arc<AtomicBool>,
    count: Arc<AtomicUsize>,
    done: Arc<AtomicUsize>,
}

impl Race {
    fn new() -> Self {
        Race {
            inside: Arc::new(AtomicBool::new(false)),
            count: Arc::new(AtomicUsize::new(0)),
            done: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// One critical section of the calling thread.
    fn critical(&self) {
        critical(&self.inside, &self.count);
    }

    /// Critical sections run so far.
    fn ran(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Another thread: it attaches, locks `h` `times` times (the first revokes whatever bias
    /// it meets), each with a critical section, and then (if `says_done`) counts itself done
    /// with Release. Models that never wait for it pass `false`, which keeps that write out
    /// of their interleavings.
    fn spawn_locker<F: Flavor, H>(
        &self,
        rt: &std::sync::Arc<Runtime<Biasing<F>>>,
        h: H,
        times: usize,
        says_done: bool,
    ) -> thread::JoinHandle<()>
    where
        H: std::ops::Deref<Target = BiasWord> + Send + 'static,
    {
        let (rt, race) = (rt.clone(), self.clone());
        thread::spawn(move || {
            let me = rt.attach().unwrap();
            for _ in 0..times {
                let g = me.enter(&h).unwrap();
                race.critical();
                drop(g);
            }
            if says_done {
                race.done.fetch_add(1, Ordering::Release);
            }
        })
    }

    /// The owner cooperates with handshake revokers until `n` of them are done: polls,
    /// yielding between (nothing to wait for under the barrier, which needs no poll).
    fn poll_until_done<F: Flavor>(
        &self,
        me: &ThreadHandle<'_, Biasing<F>>,
        mode: Revocation,
        n: usize,
    ) {
        if mode != Revocation::Membarrier {
            self.poll_until_done_always(me, n);
        }
    }

    /// As [`poll_until_done`](Self::poll_until_done), whatever the revocation.
    fn poll_until_done_always<F: Flavor>(&self, me: &ThreadHandle<'_, Biasing<F>>, n: usize) {
        while self.done.load(Ordering::Acquire) < n {
            me.poll();
            thread::yield_now();
        }
    }
}

/// The owner (main thread) holds a bias on `h`; it locks and unlocks once more through the
/// fast path while a second thread revokes and locks. Handshake modes: the owner polls until
/// the revoker is done (it must cooperate); barrier mode: it never polls.
fn owner_vs_revoker<F: Flavor>(mode: Revocation) {
    model(move || {
        let rt = runtime::<F>(mode);
        let h = Arc::new(BiasWord::default());
        let race = Race::new();
        let me = rt.attach().unwrap();
        // Learn limit 1: two acquisitions bias a FABLE lock; one a KKO lock.
        drop(me.enter(&h).unwrap());
        drop(me.enter(&h).unwrap());
        assert_eq!(h.mode(), BiasMode::Biased);

        let revoker = race.spawn_locker(&rt, h.clone(), 1, true);

        let g = me.enter(&h).unwrap();
        race.critical();
        drop(g);
        race.poll_until_done(&me, mode, 1);
        revoker.join().unwrap();
        assert_eq!(race.ran(), 2);
        assert_eq!(rt.owner_of(&h), None);
        assert_eq!(me.lock_count(&h), 0);
        assert_eq!(rt.state().revocations().total(), 1);
    });
}

/// The owner holds its biased lock (count 2) across the revocation and releases after: the
/// revoker must hand it a thin lock with the same count, and get the lock only after.
fn held_across_revocation<F: Flavor>(mode: Revocation) {
    model(move || {
        let rt = runtime::<F>(mode);
        let h = Arc::new(BiasWord::default());
        let released = Arc::new(AtomicBool::new(false));
        let me = rt.attach().unwrap();
        drop(me.enter(&h).unwrap());
        drop(me.enter(&h).unwrap());
        let g1 = me.enter(&h).unwrap();
        let g2 = me.enter(&h).unwrap();
        let (rt2, h2, released2) = (rt.clone(), h.clone(), released.clone());
        let revoker = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            let g = me.enter(&h2).unwrap();
            assert!(released2.load(Ordering::Relaxed), "entered a held lock");
            drop(g);
        });
        if mode != Revocation::Membarrier {
            while h.mode() == BiasMode::Biased {
                me.poll();
                thread::yield_now();
            }
        }
        drop(g2);
        assert_eq!(me.lock_count(&h), 1);
        released.store(true, Ordering::Relaxed);
        drop(g1);
        revoker.join().unwrap();
    });
}

#[test]
fn kko_fast_path_vs_membarrier_revocation() {
    owner_vs_revoker::<KkoRseq>(Revocation::Membarrier);
}

#[test]
fn kko_fast_path_vs_sync_handshake() {
    owner_vs_revoker::<KkoRseq>(Revocation::SyncHandshake);
}

#[test]
fn kko_fast_path_vs_async_handshake() {
    owner_vs_revoker::<KkoRseq>(Revocation::AsyncHandshake);
}

#[test]
fn fable_fast_path_vs_membarrier_revocation() {
    owner_vs_revoker::<FableRseqHeuristics>(Revocation::Membarrier);
}

#[test]
fn kko_held_across_membarrier_revocation() {
    held_across_revocation::<KkoRseq>(Revocation::Membarrier);
}

#[test]
fn kko_held_across_sync_handshake() {
    held_across_revocation::<KkoRseq>(Revocation::SyncHandshake);
}

#[test]
fn kko_held_across_async_handshake() {
    held_across_revocation::<KkoRseq>(Revocation::AsyncHandshake);
}

/// Two revokers of the same owner at once (each also locks): they are serialized by the
/// owner's revoker mutex, so neither loses the other's update; exactly one revocation happens.
fn two_revokers<F: Flavor>(mode: Revocation) {
    // (`mode` stays a parameter so the handshake variant can be added once loom schedules
    // spinners fairly.)
    model_with(2, move || {
        let rt = runtime::<F>(mode);
        let h = Arc::new(BiasWord::default());
        let race = Race::new();
        let me = rt.attach().unwrap();
        drop(me.enter(&h).unwrap());
        drop(me.enter(&h).unwrap());
        let revokers: Vec<_> = (0..2)
            .map(|_| race.spawn_locker(&rt, h.clone(), 1, true))
            .collect();
        race.poll_until_done(&me, mode, 2);
        for r in revokers {
            r.join().unwrap();
        }
        assert_eq!(race.ran(), 2);
        assert_eq!(rt.owner_of(&h), None);
        assert_eq!(rt.state().revocations().total(), 1);
    });
}

#[test]
fn kko_two_revokers_membarrier() {
    two_revokers::<KkoRseq>(Revocation::Membarrier);
}

// Not modelled: two revokers against a handshake owner. Both revokers spin (one on the
// owner's revoker mutex, one for the owner's poll) and loom's yield lets the two spinners
// alternate forever without ever scheduling the owner, which no real scheduler does; the
// model then exceeds its branch limit without finding a bug. The unit test
// `mutual_revocation_does_not_deadlock` covers concurrent handshake revokers on real threads.

/// FABLE learn mode under contention: two threads lock a fresh object twice each (clear →
/// learn, the guess's re-acquire, a second thread waiting for a held learn lock and turning
/// it thin, the learn unlock's plain store against that CAS).
#[test]
fn fable_learn_mode_contention() {
    model(|| {
        let rt = Runtime::<Biasing<FableRseqHeuristics>>::new(config());
        Biasing::<FableRseqHeuristics>::configure(
            &rt,
            BiasConfig {
                revocation: Revocation::Membarrier,
                learn_limit: 5,
            },
        );
        let h = Arc::new(BiasWord::default());
        let race = Race::new();
        let other = race.spawn_locker(&rt, h.clone(), 2, false);
        let me = rt.attach().unwrap();
        for _ in 0..2 {
            let g = me.enter(&h).unwrap();
            race.critical();
            drop(g);
        }
        other.join().unwrap();
        assert_eq!(race.ran(), 4);
        assert_eq!(rt.owner_of(&h), None);
    });
}

/// A runtime of flavor `F` revoking by `mode`, learn limit 1 (two acquisitions bias a FABLE
/// lock, one a KKO lock).
fn runtime<F: Flavor>(mode: Revocation) -> std::sync::Arc<Runtime<Biasing<F>>> {
    runtime_with::<F>(config(), mode)
}

/// [`runtime`] with `config`.
fn runtime_with<F: Flavor>(
    config: Config,
    mode: Revocation,
) -> std::sync::Arc<Runtime<Biasing<F>>> {
    // SAFETY: this test binary installs no signal handler of its own (std's fault handlers
    // run only on a fault, which no owner section makes): the -signal flavors' contract
    // (`Runtime::new_unchecked`) holds; the other protocols have none.
    let rt = unsafe { Runtime::<Biasing<F>>::new_unchecked(config) };
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

/// Nested: the owner holds `h` once (record 0) and locks and unlocks it again (a push and a
/// pop at record 1) while a second thread revokes and locks; then it releases the outer
/// hold. The revoker must count the outer hold, and the inner one exactly when its push
/// committed before the mark.
fn nested_vs_revoker<F: Flavor>(mode: Revocation) {
    model(move || {
        let rt = runtime::<F>(mode);
        let h = Arc::new(BiasWord::default());
        let race = Race::new();
        let me = rt.attach().unwrap();
        drop(me.enter(&h).unwrap());
        drop(me.enter(&h).unwrap());
        let outer = me.enter(&h).unwrap();
        let revoker = race.spawn_locker(&rt, h.clone(), 1, true);
        let inner = me.enter(&h).unwrap();
        assert_eq!(me.lock_count(&h), 2);
        drop(inner);
        assert_eq!(me.lock_count(&h), 1);
        race.critical();
        drop(outer);
        race.poll_until_done(&me, mode, 1);
        revoker.join().unwrap();
        assert_eq!(race.ran(), 2);
        assert_eq!(rt.owner_of(&h), None);
        assert_eq!(me.lock_count(&h), 0);
    });
}

#[test]
fn records_nested_vs_membarrier_revocation() {
    nested_vs_revoker::<Kko>(Revocation::Membarrier);
}

#[test]
fn records_nested_vs_sync_handshake() {
    nested_vs_revoker::<Kko>(Revocation::SyncHandshake);
}

#[test]
fn records_nested_vs_async_handshake() {
    nested_vs_revoker::<Kko>(Revocation::AsyncHandshake);
}

/// Unstructured exit out of order: the owner holds `h` then `g`, both biased, and releases
/// `h` first (its record is not the innermost: the slow unlock marks it releasing below the
/// top and buries it) while a second thread revokes `h` and locks it.
fn out_of_order_vs_revoker<F: Flavor>(mode: Revocation) {
    model(move || {
        let rt = runtime::<F>(mode);
        let h = Box::leak(Box::new(BiasWord::default()));
        let g = Box::leak(Box::new(BiasWord::default()));
        let race = Race::new();
        let me = rt.attach().unwrap();
        for o in [&*h, &*g] {
            drop(me.enter(o).unwrap());
            drop(me.enter(o).unwrap());
        }
        me.monitor_enter(h).unwrap();
        me.monitor_enter(g).unwrap();
        let revoker = race.spawn_locker(&rt, &*h, 1, true);
        race.critical();
        me.monitor_exit(h).unwrap();
        assert_eq!(me.lock_count(h), 0);
        assert_eq!(g.mode(), BiasMode::Biased, "g keeps its bias");
        me.monitor_exit(g).unwrap();
        race.poll_until_done(&me, mode, 1);
        revoker.join().unwrap();
        assert_eq!(race.ran(), 2);
        assert_eq!(rt.owner_of(h), None);
    });
}

#[test]
fn records_out_of_order_exit_vs_membarrier_revocation() {
    out_of_order_vs_revoker::<Kko>(Revocation::Membarrier);
}

#[test]
fn records_out_of_order_exit_vs_sync_handshake() {
    out_of_order_vs_revoker::<Kko>(Revocation::SyncHandshake);
}

/// The owner's records are full (one hold of `h` and holds of other objects): its next
/// lock of `h` moves the holds into a thin count with a CAS while a second thread's
/// barrier revocation marks the header.
#[test]
fn records_overflow_vs_membarrier_revocation() {
    model(|| {
        let rt = runtime::<Kko>(Revocation::Membarrier);
        let h: &'static BiasWord = Box::leak(Box::new(BiasWord::default()));
        let others: &'static [BiasWord] =
            Box::leak((0..LOCK_RECORDS - 1).map(|_| BiasWord::default()).collect());
        let race = Race::new();
        let me = rt.attach().unwrap();
        drop(me.enter(h).unwrap());
        let outer = me.enter(h).unwrap();
        let held: Vec<_> = others.iter().map(|o| me.enter(o).unwrap()).collect();
        let revoker = race.spawn_locker(&rt, h, 1, false);
        let inner = me.enter(h).unwrap();
        assert_eq!(h.mode(), BiasMode::Thin);
        assert_eq!(me.lock_count(h), 2);
        race.critical();
        drop(inner);
        drop(outer);
        revoker.join().unwrap();
        drop(held);
        assert_eq!(race.ran(), 2);
        assert_eq!(rt.owner_of(h), None);
    });
}

/// The records variant (`biased`, the count in HotSpot-style lock records) against the
/// barrier: the owner's record push / pop Dekker.
#[test]
fn records_fast_path_vs_membarrier_revocation() {
    owner_vs_revoker::<Kko>(Revocation::Membarrier);
}

#[test]
fn records_held_across_membarrier_revocation() {
    held_across_revocation::<Kko>(Revocation::Membarrier);
}

/// The rseq owner step (`biased`, `fable`: Figure 4's load / compare / store of the header
/// count in an rseq section) holding the object nested (rc 2 → 1 → 0) while a second
/// thread revokes it by the rseq barrier; modelled as the section running under the
/// owner's `cpu` mutex, which the barrier takes once (it lands before or after a section,
/// never inside: inside, the kernel restarts the section, which is as if it had not begun).
#[test]
fn rseq_nested_vs_membarrier_revocation() {
    nested_vs_revoker::<KkoRseq>(Revocation::Membarrier);
}

#[test]
fn rseq_fable_nested_vs_membarrier_revocation() {
    nested_vs_revoker::<FableRseqHeuristics>(Revocation::Membarrier);
}

/// The rseq variant's unstructured exit (no records: the header count) against the barrier.
#[test]
fn rseq_out_of_order_exit_vs_membarrier_revocation() {
    out_of_order_vs_revoker::<KkoRseq>(Revocation::Membarrier);
}

/// The seed's layout (count in the header, Figures 3 and 4): the owner's plain header
/// stores against each revocation.
#[test]
fn seed_header_count_vs_membarrier_revocation() {
    owner_vs_revoker::<KkoSeed>(Revocation::Membarrier);
}

#[test]
fn seed_header_count_vs_sync_handshake() {
    owner_vs_revoker::<KkoSeed>(Revocation::SyncHandshake);
}

#[test]
fn seed_header_count_vs_async_handshake() {
    owner_vs_revoker::<KkoSeed>(Revocation::AsyncHandshake);
}

#[test]
fn seed_header_count_held_across_membarrier_revocation() {
    held_across_revocation::<KkoSeed>(Revocation::Membarrier);
}

/// Hybrid (asynchronous handshake, then the barrier): under loom the wait is always over,
/// so the revoker withdraws the request at once unless the polling owner claimed it first —
/// the race between the owner's claim and the revoker's withdrawal, both ways.
#[test]
fn hybrid_fast_path_vs_revocation() {
    owner_vs_revoker::<KkoRseq>(Revocation::Hybrid);
}

#[test]
fn hybrid_held_across_revocation() {
    held_across_revocation::<KkoRseq>(Revocation::Hybrid);
}

/// Hybrid against an owner that never polls while it holds the lock nested: the barrier
/// revokes without it, and the count survives.
#[test]
fn hybrid_owner_never_polls() {
    model(|| {
        let rt = runtime::<KkoRseq>(Revocation::Hybrid);
        let h = Arc::new(BiasWord::default());
        let released = Arc::new(AtomicBool::new(false));
        let me = rt.attach().unwrap();
        drop(me.enter(&h).unwrap());
        let g1 = me.enter(&h).unwrap();
        let (rt2, h2, released2) = (rt.clone(), h.clone(), released.clone());
        let revoker = thread::spawn(move || {
            let me = rt2.attach().unwrap();
            let g = me.enter(&h2).unwrap();
            assert!(released2.load(Ordering::Relaxed), "entered a held lock");
            drop(g);
        });
        let g2 = me.enter(&h).unwrap();
        drop(g2);
        assert_eq!(me.lock_count(&h), 1);
        released.store(true, Ordering::Relaxed);
        drop(g1);
        revoker.join().unwrap();
        assert_eq!(rt.state().revocations().total(), 1);
    });
}

// ---------------------------------------------------------------------------------------------
// A bias owner at a safepoint (in native, or detached) while a revocation is
// under way.

/// The bias owner goes native and, there, tries to lock its biased object while a second
/// thread revokes the bias (by `mode`) and locks it. In native the owner counts as being at a
/// safepoint, so the revoker rewrites the header in place with no barrier and no handshake: a
/// fast path of the owner there (plain stores) could race it and make two owners. The owner's
/// attempt must be refused (`InNative`), and if it ever succeeded the critical sections must
/// still exclude each other.
fn native_lock_vs_in_place_revocation<F: Flavor>(mode: Revocation) {
    model(move || {
        let rt = runtime::<F>(mode);
        let h = Arc::new(BiasWord::default());
        let race = Race::new();
        let me = rt.attach().unwrap();
        drop(me.enter(&h).unwrap());
        drop(me.enter(&h).unwrap());
        assert_eq!(h.mode(), BiasMode::Biased);
        let revoker = race.spawn_locker(&rt, h.clone(), 1, true);
        let refused = me.in_native(|| match me.enter(&h) {
            Ok(g) => {
                race.critical();
                drop(g);
                false
            }
            Err(e) => {
                assert_eq!(e, objmon::MonitorError::InNative);
                true
            }
        });
        // Back from native: cooperate with a handshake revoker that posted before we left.
        race.poll_until_done_always(&me, 1);
        revoker.join().unwrap();
        assert!(refused, "a lock made in native was granted");
        assert_eq!(race.ran(), 1);
        assert_eq!(rt.owner_of(&h), None);
    });
}

#[test]
fn kko_native_lock_vs_sync_handshake() {
    native_lock_vs_in_place_revocation::<KkoRseq>(Revocation::SyncHandshake);
}

#[test]
fn kko_native_lock_vs_membarrier() {
    native_lock_vs_in_place_revocation::<KkoRseq>(Revocation::Membarrier);
}

#[test]
fn fable_native_lock_vs_async_handshake() {
    native_lock_vs_in_place_revocation::<FableRseqHeuristics>(Revocation::AsyncHandshake);
}

#[test]
fn seed_native_lock_vs_sync_handshake() {
    native_lock_vs_in_place_revocation::<KkoSeed>(Revocation::SyncHandshake);
}

/// The bias owner goes native (it never polled while running) and polls there while a second
/// thread revokes by handshake: the revoker may post its request while the owner runs, then
/// see it at a safepoint. It must revoke in place (`OwnerSafe`) after withdrawing the request;
/// the owner's poll in native must claim nothing — a callback claimed there would run on a
/// header its revoker may already have let go of, and its late `REQ_NONE` could erase a later
/// revoker's request.
fn owner_goes_native_with_request_posted<F: Flavor>(mode: Revocation) {
    model(move || {
        let rt = runtime::<F>(mode);
        let h = Arc::new(BiasWord::default());
        let race = Race::new();
        let me = rt.attach().unwrap();
        drop(me.enter(&h).unwrap());
        drop(me.enter(&h).unwrap());
        let revoker = race.spawn_locker(&rt, h.clone(), 1, true);
        me.in_native(|| race.poll_until_done_always(&me, 1));
        revoker.join().unwrap();
        let g = me.enter(&h).unwrap();
        race.critical();
        drop(g);
        assert_eq!(race.ran(), 2);
        let rv = rt.state().revocations();
        assert_eq!(
            rv.count(objmon::vm::RevocationKind::OwnerSafe),
            1,
            "a request was claimed in native ({} async)",
            rv.count(objmon::vm::RevocationKind::Async)
        );
    });
}

#[test]
fn kko_owner_goes_native_with_async_request_posted() {
    owner_goes_native_with_request_posted::<KkoRseq>(Revocation::AsyncHandshake);
}

#[test]
fn fable_owner_goes_native_with_async_request_posted() {
    owner_goes_native_with_request_posted::<FableRseqHeuristics>(Revocation::AsyncHandshake);
}

#[test]
fn kko_owner_goes_native_with_sync_request_posted() {
    owner_goes_native_with_request_posted::<KkoRseq>(Revocation::SyncHandshake);
}

/// The bias owner detaches while a second thread revokes its bias by handshake (it never
/// polls: the revoker must finish on `EXITED`, or on finding the id free or reused), and a new
/// thread attaches under the same id (next generation) and locks the object too: the recycled
/// id must not match the old bias, the critical sections exclude each other, and the one
/// revocation is counted once (a revoker that finds the owner detached rewrites the header
/// without the owner's mutex, racing one that found it `EXITED`: only one may count it).
fn detached_owner_vs_id_reuse<F: Flavor>(mode: Revocation) {
    model_with(2, move || {
        let rt = runtime_with::<F>(
            Config {
                max_threads: 2,
                ..config()
            },
            mode,
        );
        let h = Arc::new(BiasWord::default());
        let race = Race::new();
        let me = rt.attach().unwrap();
        let old = me.id();
        drop(me.enter(&h).unwrap());
        drop(me.enter(&h).unwrap());
        let revoker = race.spawn_locker(&rt, h.clone(), 1, false);
        drop(me); // detach: EXITED, then the id is free
        let again = rt.attach().unwrap();
        if again.id() == old {
            assert_eq!(
                again.lock_count(&h),
                0,
                "the old bias is not the new thread's"
            );
        }
        let g = again.enter(&h).unwrap();
        race.critical();
        drop(g);
        revoker.join().unwrap();
        assert_eq!(race.ran(), 2);
        assert_eq!(rt.owner_of(&h), None);
        assert_eq!(
            rt.state().revocations().total(),
            1,
            "one revocation, counted once"
        );
    });
}

#[test]
fn kko_detached_owner_vs_id_reuse_async() {
    detached_owner_vs_id_reuse::<KkoRseq>(Revocation::AsyncHandshake);
}

#[test]
fn fable_detached_owner_vs_id_reuse_sync() {
    detached_owner_vs_id_reuse::<FableRseqHeuristics>(Revocation::SyncHandshake);
}

/// FABLE under the pair handshakes (§3.3 is FABLE's own revocation): the owner's fast path
/// and a held bias against each.
#[test]
fn fable_fast_path_vs_sync_handshake() {
    owner_vs_revoker::<FableRseqHeuristics>(Revocation::SyncHandshake);
}

#[test]
fn fable_fast_path_vs_async_handshake() {
    owner_vs_revoker::<FableRseqHeuristics>(Revocation::AsyncHandshake);
}

#[test]
fn fable_held_across_async_handshake() {
    held_across_revocation::<FableRseqHeuristics>(Revocation::AsyncHandshake);
}

/// The signal flavors (`biased-signal`, `fable-signal`): the same section as the rseq
/// step's, entered without the dispatch's load (the section's load is the only one), and a
/// revoker that restarts it by a signal to the owner; modelled as the rseq barrier is (the
/// section under the owner's `cpu` mutex, which the revoker takes once: the handler lands
/// before or after a section, or restarts it, which is as if it had not begun).
#[test]
fn signal_fast_path_vs_revocation() {
    owner_vs_revoker::<KkoSignal>(Revocation::Membarrier);
}

#[test]
fn signal_nested_vs_revocation() {
    nested_vs_revoker::<KkoSignal>(Revocation::Membarrier);
}

#[test]
fn signal_fable_nested_vs_revocation() {
    nested_vs_revoker::<FableSignalHeuristics>(Revocation::Membarrier);
}

#[test]
fn signal_out_of_order_exit_vs_revocation() {
    out_of_order_vs_revoker::<KkoSignal>(Revocation::Membarrier);
}

#[test]
fn signal_fast_path_vs_sync_handshake() {
    owner_vs_revoker::<KkoSignal>(Revocation::SyncHandshake);
}
