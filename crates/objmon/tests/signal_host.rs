//! A host's own signal handler on a thread that biases: the test plays a host that installs
//! an ordinary, async-signal-safe handler (busy ~2 ms, like a sampling profiler's) and
//! signals the bias owner with it over and over, while another thread revokes the bias by
//! locking the object. An in-critical-section counter catches two owners. The bias owner's
//! step of the fast flavors (`biased-rseq`, `fable-rseq`, `biased-signal`, `fable-signal`)
//! is a section that a revocation must restart if it lands before the section's committing
//! store.
//!
//! `biased-rseq` / `fable-rseq` hold whatever the handler masks (the kernel aborts an rseq
//! section at the first signal delivery). `biased-signal` / `fable-signal` hold when the
//! host keeps their contract (`Runtime::new_unchecked`: the handler blocks the barrier
//! signal, which then arrives when the handler returns, over the section itself); the
//! ignored test breaks it and shows the two owners that follow.
//!
//! Each signal has one handler and one kind of target: SIGUSR2's keeps the contract and is
//! sent only to signal-flavor owners of the tests that keep it; SIGUSR1's masks nothing and
//! is sent to rseq owners, and to signal-flavor owners only by the ignored test.
#![cfg(not(loom))]

mod watchdog;

use objmon::protocol::biased::{BiasMode, Biasing, Flavor, KkoRseq, KkoSignal};
use objmon::protocol::fable::{FableRseqHeuristics, FableSignalHeuristics};
use objmon::vm::{BiasConfig, BiasWord, Revocation, Runtime};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;
use watchdog::within;

/// How long the host's handler stays busy.
const BUSY: Duration = Duration::from_millis(2);

/// The time on the monotonic clock, in ns (`clock_gettime` is async-signal-safe).
fn now_ns() -> u64 {
    // SAFETY: `clock_gettime` writes the local `timespec` and has no other effect.
    let mut ts = unsafe { std::mem::zeroed::<libc::timespec>() };
    // SAFETY: as above; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One signal-flavor owner section in the program (`objmon_bias_cs`: start, post-commit,
/// abort), as the owner step's `asm!` lists it.
#[repr(C)]
struct SignalSection {
    start: usize,
    commit: usize,
    abort: usize,
}

/// One rseq owner section (`__rseq_cs`: the kernel's `struct rseq_cs`).
#[repr(C)]
struct RseqSection {
    version: u32,
    flags: u32,
    start: u64,
    post_commit_offset: u64,
    abort: u64,
}

extern "C" {
    #[link_name = "__start_objmon_bias_cs"]
    static SIGNAL_START: [SignalSection; 0];
    #[link_name = "__stop_objmon_bias_cs"]
    static SIGNAL_STOP: [SignalSection; 0];
    #[link_name = "__start___rseq_cs"]
    static RSEQ_START: [RseqSection; 0];
    #[link_name = "__stop___rseq_cs"]
    static RSEQ_STOP: [RseqSection; 0];
}

/// Whether the handler caught the owner inside one of its steps' sections: `ip` inside a
/// signal-flavor section, or inside an rseq section or at its abort address (the kernel
/// moves an rseq section it aborts there before the handler runs).
fn caught(ip: usize) -> bool {
    // SAFETY: the linker defines the bounds of both output sections, which hold only
    // entries of these layouts (24 and 32 bytes, 8- and 32-aligned, written at link time
    // and never at run time); reading them is a read of immutable data.
    unsafe {
        let a = std::ptr::addr_of!(SIGNAL_START) as *const SignalSection;
        let b = std::ptr::addr_of!(SIGNAL_STOP) as *const SignalSection;
        let sig = std::slice::from_raw_parts(a, (b as usize - a as usize) / 24);
        let a = std::ptr::addr_of!(RSEQ_START) as *const RseqSection;
        let b = std::ptr::addr_of!(RSEQ_STOP) as *const RseqSection;
        let rseq = std::slice::from_raw_parts(a, (b as usize - a as usize) / 32);
        sig.iter()
            .any(|e| e.start != 0 && (e.start..e.commit).contains(&ip))
            || rseq.iter().any(|e| {
                let ip = ip as u64;
                e.version == 0
                    && (ip == e.abort || (e.start..e.start + e.post_commit_offset).contains(&ip))
            })
    }
}

/// The host's handler: async-signal-safe (reads the clock, the interrupted context and
/// immutable data, and spins), and touches no memory of the program. It stays busy for
/// [`BUSY`] when it caught the owner inside a section, and returns at once otherwise: a
/// sampling profiler that happens to be slow at the moments that matter, so that a few
/// dozen trials meet the race (a handler busy on every signal meets it too, about once in
/// a hundred trials).
extern "C" fn linger(_: libc::c_int, _: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid `ucontext_t` to an `SA_SIGINFO` handler for the
    // handler's duration; only its saved instruction pointer is read.
    let ip =
        unsafe { (*(uc as *const libc::ucontext_t)).uc_mcontext.gregs[libc::REG_RIP as usize] };
    // Not again right after lingering: a signal that came meanwhile is delivered as the
    // handler returns, at the same instruction, and the owner would never move on.
    let t0 = now_ns();
    if !caught(ip as usize) || t0 < LINGERED_UNTIL.load(Ordering::Relaxed) + 500_000 {
        return;
    }
    LINGERS.fetch_add(1, Ordering::Relaxed);
    LINGERING.store(true, Ordering::SeqCst);
    while now_ns() - t0 < BUSY.as_nanos() as u64 {
        std::hint::spin_loop();
    }
    LINGERING.store(false, Ordering::SeqCst);
    LINGERED_UNTIL.store(now_ns(), Ordering::Relaxed);
}

/// When [`linger`] last stopped lingering (ns), and how many times it lingered: lock-free
/// atomics, async-signal-safe.
static LINGERED_UNTIL: AtomicU64 = AtomicU64::new(0);
static LINGERS: AtomicU64 = AtomicU64::new(0);
/// Whether [`linger`] is lingering over a section now: when the revoker locks.
static LINGERING: AtomicBool = AtomicBool::new(false);

/// Installs [`linger`] for `sig`, its mask blocking the signals of `mask` while it runs.
fn install_host_handler(sig: libc::c_int, mask: &[libc::c_int]) {
    // SAFETY: `sigaction` with a zeroed, then filled `struct sigaction` (a plain C struct,
    // a local) and valid signal numbers; `linger` is async-signal-safe.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = linger as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        for &s in mask {
            libc::sigaddset(&mut sa.sa_mask, s);
        }
        assert_eq!(libc::sigaction(sig, &sa, std::ptr::null_mut()), 0);
    }
}

/// A runtime revoking by its barrier (learn limit 1), or `None` where this machine has none.
///
/// # Safety
/// As `Runtime::new_unchecked`: for a signal flavor, every handler that runs on the
/// runtime's threads keeps the barrier signal blocked (or the caller means to show what
/// follows when one does not, in an ignored test).
unsafe fn runtime<F: Flavor>() -> Option<Arc<Runtime<Biasing<F>>>> {
    // SAFETY: the caller's.
    let rt = unsafe { Runtime::<Biasing<F>>::new_unchecked(Default::default()) };
    let used = Biasing::<F>::configure(
        &rt,
        BiasConfig {
            revocation: Revocation::Membarrier,
            learn_limit: 1,
        },
    );
    (used == Revocation::Membarrier).then_some(rt)
}

/// What one trial saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// One owner at a time, and the trial ended.
    Clean,
    /// Two threads inside the critical section at once.
    TwoOwners,
    /// The trial did not end within its time (a lock state broken so that a thread waits
    /// for good).
    Hung,
}

/// One trial: a fresh object biased to a fresh owner thread, which locks and unlocks it in
/// a loop; a pinger sends the owner `sig` every 50 µs or so; after `delay`, and once the
/// host's handler lingers over the owner's section (or 500 ms have passed), a revoker locks
/// the object and holds it 8 ms.
fn trial<F: Flavor>(rt: &Arc<Runtime<Biasing<F>>>, sig: libc::c_int, delay: Duration) -> Outcome {
    let h = Arc::new(BiasWord::default());
    let inside = Arc::new(AtomicU32::new(0));
    let two = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let pinger_gone = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = mpsc::channel::<u64>();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    // Enters the critical section: another thread inside is two owners.
    let critical = |inside: &AtomicU32, two: &AtomicBool, hold: Duration| {
        if inside.fetch_add(1, Ordering::SeqCst) != 0 {
            two.store(true, Ordering::SeqCst);
        }
        if !hold.is_zero() {
            let t0 = now_ns();
            while now_ns() - t0 < hold.as_nanos() as u64 {
                if inside.load(Ordering::SeqCst) != 1 {
                    two.store(true, Ordering::SeqCst);
                }
                std::hint::spin_loop();
            }
        }
        inside.fetch_sub(1, Ordering::SeqCst);
    };
    let owner = {
        let (rt, h, inside, two, stop, pinger_gone, done_tx) = (
            rt.clone(),
            h.clone(),
            inside.clone(),
            two.clone(),
            stop.clone(),
            pinger_gone.clone(),
            done_tx.clone(),
        );
        thread::spawn(move || {
            let me = rt.attach().unwrap();
            for _ in 0..3 {
                drop(me.enter(&h).unwrap());
            }
            assert_eq!(h.mode(), BiasMode::Biased, "{}", F::NAME);
            // SAFETY: `pthread_self` has no preconditions.
            ready_tx
                .send(unsafe { libc::pthread_self() } as u64)
                .unwrap();
            while !stop.load(Ordering::Relaxed) && !two.load(Ordering::Relaxed) {
                match me.enter(&h) {
                    Ok(g) => {
                        critical(&inside, &two, Duration::ZERO);
                        drop(g);
                    }
                    Err(_) => break,
                }
            }
            // The pinger signals this thread by its `pthread_t`: stay alive until it stops.
            while !pinger_gone.load(Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(1));
            }
            let _ = done_tx.send(());
        })
    };
    let tid = ready_rx.recv().unwrap() as libc::pthread_t;
    let pinger = {
        let (stop, pinger_gone) = (stop.clone(), pinger_gone.clone());
        thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                // SAFETY: `tid` is the owner thread, alive until `pinger_gone` is set (it
                // waits for it before it returns); `sig` has a handler installed.
                unsafe { libc::pthread_kill(tid, sig) };
                thread::sleep(Duration::from_micros(20));
            }
            pinger_gone.store(true, Ordering::SeqCst);
        })
    };
    let revoker = {
        let (rt, h, inside, two, done_tx) = (
            rt.clone(),
            h.clone(),
            inside.clone(),
            two.clone(),
            done_tx.clone(),
        );
        thread::spawn(move || {
            let me = rt.attach().unwrap();
            thread::sleep(delay);
            // Revoke while the host's handler lingers over the owner's section (if it does
            // within the time: a trial where it does not is clean whatever the protocol).
            let t0 = now_ns();
            while !LINGERING.load(Ordering::SeqCst) && now_ns() - t0 < 500_000_000 {
                std::hint::spin_loop();
            }
            if let Ok(g) = me.enter(&h) {
                critical(&inside, &two, Duration::from_millis(8));
                drop(g);
            }
            let _ = done_tx.send(());
        })
    };
    drop(done_tx);
    // The revoker, then (after `stop`) the owner.
    let hung = done_rx.recv_timeout(Duration::from_secs(2)).is_err();
    stop.store(true, Ordering::SeqCst);
    let hung = hung || done_rx.recv_timeout(Duration::from_secs(2)).is_err();
    pinger.join().unwrap();
    if !hung {
        // Both are done; a panic in either (an unlock that found the word broken) is
        // already a failure the flags or the counter name.
        let _ = owner.join();
        let _ = revoker.join();
    }
    if two.load(Ordering::SeqCst) {
        Outcome::TwoOwners
    } else if hung {
        Outcome::Hung
    } else {
        Outcome::Clean
    }
}

/// Runs `trials` trials with the revocation at varied times; the outcomes that were not
/// clean.
///
/// # Safety
/// As [`runtime`], for the handler of `sig`.
unsafe fn broken_trials<F: Flavor>(sig: libc::c_int, trials: u32) -> Option<Vec<Outcome>> {
    // One test at a time: the handler and its statics are the process's.
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: the caller's.
    let rt = unsafe { runtime::<F>()? };
    let bad: Vec<Outcome> = (0..trials)
        .map(|i| trial::<F>(&rt, sig, Duration::from_micros(100 * u64::from(i % 7))))
        .filter(|&o| o != Outcome::Clean)
        .collect();
    eprintln!(
        "{}: {} of {trials} trials broken: {bad:?} (the handler lingered {} times)",
        F::NAME,
        bad.len(),
        LINGERS.swap(0, Ordering::Relaxed)
    );
    Some(bad)
}

const TRIALS: u32 = 40;

/// A host's SIGUSR1 handler that blocks nothing interrupting a signal-flavor bias owner,
/// against the contract of `Runtime::new_unchecked`: a revocation landing while the handler
/// runs over the owner's section makes two owners. Ignored: it fails, which is what the
/// contract is for.
///
/// Failed on f46a3d1 (where it ran as a test, the flavors safe to use then): `biased-signal`
/// 5 and 4 of 40 trials, `fable-signal` 4 and 4 of 40 (two runs; two owners each time): the
/// barrier signal, nested inside the host's handler, saw the handler's instruction pointer,
/// restarted nothing and acknowledged, and the section's commit stored over the revoked
/// word when the handler returned.
fn host_handler_unmasked_breaks_the_contract<F: Flavor>() {
    install_host_handler(libc::SIGUSR1, &[]);
    // SAFETY: not kept, on purpose (the handler masks nothing): this shows the failure.
    let Some(bad) = (unsafe { broken_trials::<F>(libc::SIGUSR1, TRIALS) }) else {
        eprintln!("{}: no barrier here, skipped", F::NAME);
        return;
    };
    assert!(bad.is_empty(), "{}: {bad:?}", F::NAME);
}

#[test]
#[ignore = "breaks the contract of Runtime::new_unchecked on purpose: fails with two owners"]
fn a_host_handler_that_lets_the_barrier_nest_biased_signal() {
    within(
        120,
        "biased-signal",
        host_handler_unmasked_breaks_the_contract::<KkoSignal>,
    );
}

#[test]
#[ignore = "breaks the contract of Runtime::new_unchecked on purpose: fails with two owners"]
fn a_host_handler_that_lets_the_barrier_nest_fable_signal() {
    within(
        120,
        "fable-signal",
        host_handler_unmasked_breaks_the_contract::<FableSignalHeuristics>,
    );
}

/// The same host, keeping the contract: its SIGUSR2 handler has the barrier signal in its
/// `sa_mask`. The barrier signal waits until the handler returns and is delivered over the
/// section itself, which it restarts: never two owners. (On f46a3d1 the same trials with
/// the unmasked handler made two owners, above.)
fn host_handler_masking_the_barrier<F: Flavor>() {
    let Some(barrier) = objmon::vm::barrier_signal() else {
        eprintln!("{}: no barrier here, skipped", F::NAME);
        return;
    };
    install_host_handler(libc::SIGUSR2, &[barrier]);
    // SAFETY: SIGUSR2's handler blocks the barrier signal and calls nothing that unblocks
    // it; it is the only handler this test sends the runtime's threads (SIGUSR1's goes to
    // other runtimes' threads), and std's fault handlers run only on a fault, which no
    // owner section makes.
    let Some(bad) = (unsafe { broken_trials::<F>(libc::SIGUSR2, TRIALS) }) else {
        eprintln!("{}: no barrier here, skipped", F::NAME);
        return;
    };
    assert!(bad.is_empty(), "{}: {bad:?}", F::NAME);
}

#[test]
fn a_host_handler_masking_the_barrier_biased_signal() {
    within(
        120,
        "biased-signal",
        host_handler_masking_the_barrier::<KkoSignal>,
    );
}

#[test]
fn a_host_handler_masking_the_barrier_fable_signal() {
    within(
        120,
        "fable-signal",
        host_handler_masking_the_barrier::<FableSignalHeuristics>,
    );
}

/// Kernel rseq aborts the section at the first signal delivery, the host's included: the
/// host handler masking nothing never makes two owners (the handler lingers when it finds
/// the owner at a section's abort address, where the kernel sent it).
fn host_handler_unmasked_rseq<F: Flavor>() {
    install_host_handler(libc::SIGUSR1, &[]);
    // SAFETY: the rseq flavors ask nothing of the host.
    let Some(bad) = (unsafe { broken_trials::<F>(libc::SIGUSR1, TRIALS) }) else {
        eprintln!("{}: no rseq barrier here, skipped", F::NAME);
        return;
    };
    assert!(bad.is_empty(), "{}: {bad:?}", F::NAME);
}

#[test]
fn a_host_handler_over_a_section_biased_rseq() {
    within(120, "biased-rseq", host_handler_unmasked_rseq::<KkoRseq>);
}

#[test]
fn a_host_handler_over_a_section_fable_rseq() {
    within(
        120,
        "fable-rseq",
        host_handler_unmasked_rseq::<FableRseqHeuristics>,
    );
}
