//! `objmon-bench stress`: random mixes of nested locking, unstructured exits, wait with and
//! without timeout, notify, notifyAll, interrupt and thread attach / detach, over many objects
//! and more threads than cores, with the invariants checked continuously:
//!
//! - **mutual exclusion**: every object has a shadow owner word; whoever takes the outermost
//!   level swaps its id in and must find 0, and a non-atomic counter per object must add up;
//! - **no lost notification**: waiters wait (sometimes without timeout) for tokens on channel
//!   objects; a poster thread keeps posting tokens with notify / notifyAll to every channel that
//!   has waiters, so an untimed waiter that never wakes means a lost wake-up;
//! - **no thread stuck**: a watchdog fails the run when a worker makes no progress for longer
//!   than the deadline (a hang: lost wake-up, leaked lock, deadlock inside objmon);
//! - **an object's identity hash never changes**: workers hash plain and channel objects
//!   (sometimes while holding them, nested) and every answer must equal the first one recorded
//!   for the object; peek may say `None` (a stack-locked object) but never another value; at
//!   the end, with every thread detached, peek must give each recorded hash back.
//! - **no false deadlock**: locks are taken in one global order, so a detector thread running
//!   `Runtime::find_deadlocks` all along must never report one.
//!
//! Every run is determined by its seed (per-thread random streams; the interleaving is the OS's),
//! and a violation report names the command that repeats it.

use objmon::vm::{MonitorError, Protocol, ProtocolVisitor, Runtime, ThreadId, WaitOutcome};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

/// Settings of one stress run.
#[derive(Clone, Debug)]
pub struct StressConfig {
    /// Protocol name (catalog name).
    pub protocol: String,
    /// How long to run.
    pub duration: Duration,
    /// Worker threads (more than cores on purpose).
    pub threads: usize,
    /// Objects to lock.
    pub objects: usize,
    /// Seed of the per-thread random streams.
    pub seed: u64,
    /// A worker with no progress for this long is a violation.
    pub watchdog: Duration,
}

/// What one run did.
#[derive(Clone, Debug, Default)]
pub struct StressReport {
    /// Lock levels taken (all kinds).
    pub locks: u64,
    /// Waits that ended (notified, timed out or interrupted).
    pub waits: u64,
    /// Tokens consumed by waiters.
    pub tokens: u64,
    /// Interrupts sent.
    pub interrupts: u64,
    /// Detach / re-attach cycles.
    pub reattaches: u64,
    /// Fat monitors alive at the end.
    pub live_monitors: usize,
    /// Identity-hash calls.
    pub hashes: u64,
}

/// A broken invariant, with what is needed to repeat the run.
#[derive(Clone, Debug)]
pub struct Violation {
    /// Which invariant.
    pub kind: &'static str,
    /// What was seen.
    pub detail: String,
    /// The run's settings.
    pub config: StressConfig,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.config;
        if self.kind == "usage" {
            return write!(f, "{}", self.detail);
        }
        write!(
            f,
            "VIOLATION ({}) on {}: {}\n  repeat: objmon-bench stress --protocol {} --seconds {} \
             --threads {} --objects {} --seed {}",
            self.kind,
            c.protocol,
            self.detail,
            c.protocol,
            c.duration.as_secs().max(1),
            c.threads,
            c.objects,
            c.seed
        )
    }
}

/// xorshift64*: a small, fast, seedable stream (quality is ample for choosing operations).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Channel objects for wait / notify live after the plain objects.
const CHANNELS: usize = 4;

struct Shared<P: Protocol> {
    rt: std::sync::Arc<Runtime<P>>,
    headers: Vec<P::Header>,
    /// Shadow owner per object (raw thread id, 0 = free), maintained by the lock holders.
    shadow: Vec<AtomicU32>,
    /// Increments per object, read-modify-written non-atomically under the object's lock.
    counts: Vec<AtomicU64>,
    /// Tokens and registered waiters per channel (touched only under the channel's lock).
    tokens: Vec<AtomicU32>,
    waiters: Vec<AtomicU32>,
    /// Raw ids of the attached workers (for interrupts), 0 = none.
    ids: Vec<AtomicU32>,
    /// Nanoseconds since `start` of each worker's last progress.
    heartbeat: Vec<AtomicU64>,
    increments: AtomicU64,
    stop: AtomicBool,
    violation: Mutex<Option<(&'static str, String)>>,
    stats: [AtomicU64; 5],
    start: Instant,
    /// The first identity hash seen per object, 0 = none yet.
    hashes: Vec<AtomicU32>,
    hash_calls: AtomicU64,
}

impl<P: Protocol> Shared<P> {
    fn fail(&self, kind: &'static str, detail: String) {
        let mut v = self.violation.lock().unwrap();
        if v.is_none() {
            // Printed at once too: a violation can be followed by a hang that never returns.
            eprintln!("stress: first violation ({kind}): {detail}");
            *v = Some((kind, detail));
        }
        self.stop.store(true, Ordering::SeqCst);
    }

    fn beat(&self, w: usize) {
        self.heartbeat[w].store(self.start.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    /// Outermost level taken: claim the shadow owner.
    fn claim(&self, i: usize, me: u32) {
        let prev = self.shadow[i].swap(me, Ordering::SeqCst);
        if prev != 0 {
            self.fail(
                "mutual exclusion",
                format!("object {i}: thread {me} entered while {prev} held it"),
            );
        }
    }

    /// About to release the outermost level.
    fn unclaim(&self, i: usize, me: u32) {
        let prev = self.shadow[i].swap(0, Ordering::SeqCst);
        if prev != me {
            self.fail(
                "mutual exclusion",
                format!("object {i}: thread {me} released while shadow said {prev}"),
            );
        }
    }

    /// `v` is object `i`'s identity hash as just returned (`peeked`: by a peek): it must be
    /// the first one recorded.
    fn hashed(&self, i: usize, v: u32, what: &str) {
        if let Err(first) =
            self.hashes[i].compare_exchange(0, v, Ordering::SeqCst, Ordering::SeqCst)
        {
            if first != v {
                self.fail(
                    "identity hash changed",
                    format!("object {i}: {what} gave {v:#x}, first seen {first:#x}"),
                );
            }
        }
    }

    fn bump(&self, i: usize) {
        let c = self.counts[i].load(Ordering::Relaxed);
        std::hint::spin_loop();
        self.counts[i].store(c + 1, Ordering::Relaxed);
        self.increments.fetch_add(1, Ordering::Relaxed);
    }
}

fn check<T>(s: &Shared<impl Protocol>, what: &str, r: Result<T, MonitorError>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            s.fail("unexpected error", format!("{what}: {e:?}"));
            None
        }
    }
}

/// One worker: attach, run random operations until stopped, sometimes detach and re-attach.
fn worker<P: Protocol>(s: &Shared<P>, w: usize, seed: u64) {
    let mut rng = Rng::new(seed ^ (w as u64 + 1).wrapping_mul(0xA24B_AED4_963E_E407));
    let plain = s.headers.len() - CHANNELS;
    while !s.stop.load(Ordering::Relaxed) {
        let Some(me) = check(s, "attach", s.rt.attach()) else {
            return;
        };
        let my = u32::from(me.id().get());
        s.ids[w].store(my, Ordering::SeqCst);
        let _ = me.interrupted();
        let ops = 50 + rng.below(500);
        for _ in 0..ops {
            if s.stop.load(Ordering::Relaxed) {
                break;
            }
            s.beat(w);
            // A stale interrupt aimed at an earlier wait must not leak into this operation's
            // checks; a fresh one may still arrive during a wait (that is the point).
            let _ = me.interrupted();
            match rng.below(100) {
                // Nested structured locking of 1..=3 objects in index order (no deadlock).
                0..=49 => {
                    let mut objs: Vec<usize> =
                        (0..1 + rng.below(3)).map(|_| rng.below(plain)).collect();
                    objs.sort_unstable();
                    objs.dedup();
                    let mut guards = Vec::new();
                    for &i in &objs {
                        let depth = 1 + rng.below(3);
                        for d in 0..depth {
                            let Some(g) = check(s, "enter", me.enter(&s.headers[i])) else {
                                return;
                            };
                            guards.push(g);
                            if d == 0 {
                                s.claim(i, my);
                            }
                        }
                        if me.lock_count(&s.headers[i]) != depth as u32 {
                            s.fail(
                                "lock count",
                                format!(
                                    "object {i}: count {} after {depth} enters",
                                    me.lock_count(&s.headers[i])
                                ),
                            );
                        }
                        s.bump(i);
                    }
                    for &i in objs.iter().rev() {
                        s.unclaim(i, my);
                        while guards
                            .last()
                            .is_some_and(|g| std::ptr::eq(g.header(), &s.headers[i]))
                        {
                            guards.pop();
                        }
                    }
                    s.stats[0].fetch_add(1, Ordering::Relaxed);
                }
                // Unstructured: enter two objects, exit them in a random order.
                50..=64 => {
                    let (mut a, mut b) = (rng.below(plain), rng.below(plain));
                    if a > b {
                        std::mem::swap(&mut a, &mut b);
                    }
                    check(s, "monitor_enter", me.monitor_enter(&s.headers[a]));
                    s.claim(a, my);
                    if b != a {
                        check(s, "monitor_enter", me.monitor_enter(&s.headers[b]));
                        s.claim(b, my);
                    }
                    s.bump(a);
                    let mut order = vec![a];
                    if b != a {
                        order.push(b);
                        if rng.below(2) == 0 {
                            order.reverse(); // out-of-order exit: enter a, b; exit a, b
                        }
                    }
                    for i in order {
                        s.unclaim(i, my);
                        check(s, "monitor_exit", me.monitor_exit(&s.headers[i]));
                    }
                    s.stats[0].fetch_add(1, Ordering::Relaxed);
                }
                // Wait for a token on a channel, with or without timeout.
                65..=79 => {
                    let c = rng.below(CHANNELS);
                    let h = &s.headers[plain + c];
                    let Some(g) = check(s, "enter", me.enter(h)) else {
                        return;
                    };
                    s.waiters[c].fetch_add(1, Ordering::Relaxed);
                    let timeout = match rng.below(3) {
                        0 => None,
                        _ => Some(Duration::from_micros(50 + rng.below(2000) as u64)),
                    };
                    let got = loop {
                        if s.tokens[c].load(Ordering::Relaxed) > 0 {
                            s.tokens[c].fetch_sub(1, Ordering::Relaxed);
                            break true;
                        }
                        if s.stop.load(Ordering::Relaxed) {
                            break false;
                        }
                        // Untimed waits still re-check `stop` now and then; a wake-up that
                        // never comes while tokens are posted is caught by the watchdog,
                        // since the poster keeps posting to channels with waiters.
                        let t = timeout.or(Some(Duration::from_secs(3600)));
                        match g.wait(t) {
                            Ok(WaitOutcome::Notified) => s.stats[1].fetch_add(1, Ordering::Relaxed),
                            Ok(WaitOutcome::TimedOut) => {
                                s.stats[1].fetch_add(1, Ordering::Relaxed);
                                if timeout.is_some() {
                                    break false;
                                }
                                0
                            }
                            Err(MonitorError::Interrupted) => {
                                s.stats[1].fetch_add(1, Ordering::Relaxed);
                                break false;
                            }
                            Err(e) => {
                                s.fail("unexpected error", format!("wait: {e:?}"));
                                break false;
                            }
                        };
                        s.beat(w);
                    };
                    if me.lock_count(h) != 1 {
                        s.fail(
                            "wait",
                            format!("channel {c}: lock count {} after wait", me.lock_count(h)),
                        );
                    }
                    s.waiters[c].fetch_sub(1, Ordering::Relaxed);
                    if got {
                        s.stats[2].fetch_add(1, Ordering::Relaxed);
                    }
                    drop(g);
                }
                // Interrupt another worker.
                80..=84 => {
                    let other = s.ids[rng.below(s.ids.len())].load(Ordering::SeqCst);
                    if let Some(id) = ThreadId::new(other as u16) {
                        // The target may have detached meanwhile: NoSuchThread is fine.
                        let _ = s.rt.interrupt(id);
                        s.stats[3].fetch_add(1, Ordering::Relaxed);
                    }
                }
                // Misuse must be an error: exit / notify something we do not hold.
                85..=89 => {
                    let i = rng.below(plain);
                    let h = &s.headers[i];
                    let ims = Err(MonitorError::IllegalMonitorState);
                    if !me.holds_lock(h) && (me.monitor_exit(h) != ims || me.notify(h) != ims) {
                        s.fail(
                            "misuse",
                            format!("object {i}: exit/notify without owning did not fail"),
                        );
                    }
                }
                // Identity hash of a plain or channel object, half the time while holding it
                // (nested); the lock count must not change.
                90..=93 => {
                    let i = rng.below(s.headers.len());
                    let h = &s.headers[i];
                    let depth = rng.below(3);
                    let mut guards = Vec::new();
                    for _ in 0..depth {
                        let Some(g) = check(s, "enter", me.enter(h)) else {
                            return;
                        };
                        guards.push(g);
                    }
                    if depth > 0 && i < plain {
                        s.claim(i, my);
                    }
                    let Some(v) = check(s, "identity_hash", me.identity_hash(h)) else {
                        return;
                    };
                    s.hashed(i, v, "identity_hash");
                    if let Some(p) = s.rt.peek_identity_hash(h) {
                        s.hashed(i, p, "peek");
                    }
                    if me.lock_count(h) != depth as u32 {
                        s.fail(
                            "identity hash",
                            format!(
                                "object {i}: count {} after hashing at depth {depth}",
                                me.lock_count(h)
                            ),
                        );
                    }
                    if depth > 0 && i < plain {
                        s.bump(i);
                        s.unclaim(i, my);
                    }
                    drop(guards);
                    s.hash_calls.fetch_add(1, Ordering::Relaxed);
                }
                // Try-lock.
                _ => {
                    let i = rng.below(plain);
                    if let Some(Some(g)) = check(s, "try_enter", me.try_enter(&s.headers[i])) {
                        s.claim(i, my);
                        s.bump(i);
                        s.unclaim(i, my);
                        drop(g);
                    }
                }
            }
        }
        // Detach, sometimes still holding unstructured locks: detach must release them.
        let i = rng.below(plain);
        let hold = rng.below(4) == 0;
        if hold {
            check(s, "monitor_enter", me.monitor_enter(&s.headers[i]));
            s.claim(i, my);
            s.bump(i);
            s.unclaim(i, my); // detach releases it right after this
        }
        s.ids[w].store(0, Ordering::SeqCst);
        let released = me.detach();
        if released != usize::from(hold) {
            s.fail(
                "detach",
                format!("released {released} levels, expected {}", usize::from(hold)),
            );
        }
        s.stats[4].fetch_add(1, Ordering::Relaxed);
        s.beat(w);
    }
}

/// Runs the deadlock detector over and over until the stop: every worker takes its locks in
/// one global order (plain objects by index, a channel alone), so no cycle exists, and any
/// report is a false positive of the detector.
fn detector<P: Protocol>(s: &Shared<P>) {
    while !s.stop.load(Ordering::Relaxed) {
        if let Some(d) = s.rt.find_deadlocks().first() {
            s.fail("deadlock reported", format!("with no cycle possible:\n{d}"));
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// Keeps posting tokens to channels that have waiters, alternating notify and notifyAll,
/// until every worker has finished (untimed waiters rely on it to the end).
fn poster<P: Protocol>(s: &Shared<P>, running: &AtomicUsize) {
    let Ok(me) = s.rt.attach() else {
        s.fail("unexpected error", "poster attach".into());
        return;
    };
    let plain = s.headers.len() - CHANNELS;
    let mut n = 0u64;
    while running.load(Ordering::SeqCst) > 0 {
        for c in 0..CHANNELS {
            let h = &s.headers[plain + c];
            let Some(g) = check(s, "enter", me.enter(h)) else {
                return;
            };
            if s.waiters[c].load(Ordering::Relaxed) > 0 {
                s.tokens[c].fetch_add(1, Ordering::Relaxed);
                n += 1;
                let r = if n.is_multiple_of(3) {
                    g.notify_all()
                } else {
                    g.notify()
                };
                check(s, "notify", r);
            }
            drop(g);
        }
        thread::sleep(Duration::from_micros(200));
    }
}

/// Runs one stress test of protocol `P`.
pub fn run_protocol<P: Protocol>(config: &StressConfig) -> Result<StressReport, Violation> {
    // SAFETY: this program installs no signal handler of its own (std's fault handlers run
    // only on a fault, which no owner section makes): the -signal flavors' contract
    // (`Runtime::new_unchecked`) holds; the other protocols have none.
    let rt = unsafe { Runtime::<P>::new_unchecked(Default::default()) };
    let n = config.objects.max(2) + CHANNELS;
    let s = Shared {
        headers: (0..n).map(|_| P::Header::default()).collect(),
        shadow: (0..n).map(|_| AtomicU32::new(0)).collect(),
        counts: (0..n).map(|_| AtomicU64::new(0)).collect(),
        tokens: (0..CHANNELS).map(|_| AtomicU32::new(0)).collect(),
        waiters: (0..CHANNELS).map(|_| AtomicU32::new(0)).collect(),
        ids: (0..config.threads).map(|_| AtomicU32::new(0)).collect(),
        heartbeat: (0..config.threads).map(|_| AtomicU64::new(0)).collect(),
        increments: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        violation: Mutex::new(None),
        stats: Default::default(),
        start: Instant::now(),
        hashes: (0..n).map(|_| AtomicU32::new(0)).collect(),
        hash_calls: AtomicU64::new(0),
        rt,
    };
    let running = AtomicUsize::new(config.threads);
    thread::scope(|sc| {
        for w in 0..config.threads {
            let (s, running) = (&s, &running);
            let seed = config.seed;
            sc.spawn(move || {
                worker(s, w, seed);
                running.fetch_sub(1, Ordering::SeqCst);
            });
        }
        sc.spawn(|| poster(&s, &running));
        sc.spawn(|| detector(&s));
        // Watchdog on this thread.
        let end = Instant::now() + config.duration;
        loop {
            thread::sleep(Duration::from_millis(20));
            if Instant::now() >= end {
                s.stop.store(true, Ordering::SeqCst);
            }
            let now = s.start.elapsed().as_nanos() as u64;
            let limit = config.watchdog.as_nanos() as u64;
            if let Some(w) = (0..config.threads)
                .find(|&w| now.saturating_sub(s.heartbeat[w].load(Ordering::Relaxed)) > limit)
            {
                if running.load(Ordering::SeqCst) > 0 {
                    // A hung worker cannot be joined (the scope would wait for it forever):
                    // report now and leave the process.
                    let v = Violation {
                        kind: "thread stuck",
                        detail: format!(
                            "worker {w} (thread id {}) made no progress for {:?}",
                            s.ids[w].load(Ordering::SeqCst),
                            config.watchdog
                        ),
                        config: config.clone(),
                    };
                    eprintln!("{v}");
                    std::process::exit(2);
                }
            }
            if s.stop.load(Ordering::SeqCst) && running.load(Ordering::SeqCst) == 0 {
                return;
            }
        }
    });
    if let Some((kind, detail)) = s.violation.into_inner().unwrap() {
        return Err(Violation {
            kind,
            detail,
            config: config.clone(),
        });
    }
    let total: u64 = s.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum();
    let expected = s.increments.load(Ordering::Relaxed);
    if total != expected {
        return Err(Violation {
            kind: "mutual exclusion",
            detail: format!("lost updates: {total} counted, {expected} made"),
            config: config.clone(),
        });
    }
    if let Some(i) = (0..n).find(|&i| s.rt.owner_of(&s.headers[i]).is_some()) {
        return Err(Violation {
            kind: "leaked lock",
            detail: format!(
                "object {i} still owned by {:?} after every thread detached",
                s.rt.owner_of(&s.headers[i])
            ),
            config: config.clone(),
        });
    }
    // Everybody is detached, so nothing is locked: peek is exact.
    if let Some(i) = (0..n).find(|&i| {
        let v = s.hashes[i].load(Ordering::Relaxed);
        v != 0 && s.rt.peek_identity_hash(&s.headers[i]) != Some(v)
    }) {
        return Err(Violation {
            kind: "identity hash changed",
            detail: format!(
                "object {i}: peek {:?} at the end, {:#x} recorded",
                s.rt.peek_identity_hash(&s.headers[i]),
                s.hashes[i].load(Ordering::Relaxed)
            ),
            config: config.clone(),
        });
    }
    let st = |i: usize| s.stats[i].load(Ordering::Relaxed);
    Ok(StressReport {
        locks: st(0),
        waits: st(1),
        tokens: st(2),
        interrupts: st(3),
        reattaches: st(4),
        live_monitors: s.rt.stats_snapshot().live_monitors,
        hashes: s.hash_calls.load(Ordering::Relaxed),
    })
}

/// Runs the stress test on the protocol named in `config` ("all": every protocol in turn);
/// returns the reports by protocol, or the first violation.
pub fn run(config: &StressConfig) -> Result<Vec<(&'static str, StressReport)>, Violation> {
    struct V<'a> {
        config: &'a StressConfig,
        out: Vec<Result<(&'static str, StressReport), Violation>>,
    }
    impl ProtocolVisitor for V<'_> {
        fn visit<P: Protocol>(&mut self) {
            if self.config.protocol != "all" && self.config.protocol != P::NAME {
                return;
            }
            let c = StressConfig {
                protocol: P::NAME.to_string(),
                ..self.config.clone()
            };
            self.out.push(run_protocol::<P>(&c).map(|r| (P::NAME, r)));
        }
    }
    let mut v = V {
        config,
        out: Vec::new(),
    };
    objmon::vm::visit_all(&mut v);
    if v.out.is_empty() {
        return Err(Violation {
            kind: "usage",
            detail: format!(
                "unknown protocol {:?} (have: {:?})",
                config.protocol,
                objmon::protocol::names()
            ),
            config: config.clone(),
        });
    }
    v.out.into_iter().collect()
}
