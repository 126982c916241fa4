//! Runs one case: spawns the workers, plays the steps in order, checks every answer against
//! the model ([`crate::model`]), moves objects between phases, and turns a hang into a
//! failure.
//!
//! Design: the driver is the only scheduler. A call the model says returns at once is
//! waited for ([`HANG`] at most); one that may block (a lock of an object another idle
//! worker holds by guard, an untimed wait) leaves its worker busy, and after each step the
//! driver *settles*: for every object the model says is free while some worker must get it
//! (a blocked locker, a notified or interrupted waiter), it waits for one of them to report
//! the lock — so the model never races the threads, and a lost wakeup is a failure. Steps
//! whose preconditions do not hold (a lock that would block forever, a guard that does not
//! exist) are skipped, which keeps every shrunk case meaningful.
//!
//! Checked: two owners (the workers' [`Truth`](crate::worker::Truth) records and lost burst
//! increments), try-lock answers, `holds_lock` / `is_owned_by_current_thread`, `lock_count`
//! and `is_locked`, identity hashes stable per object across moves and none inherited by a
//! fresh object, a timed wait that returns early, wait outcomes (interrupted only if
//! interrupted; a spurious wake-up, which the docs allow, is counted, not failed), a free
//! object that nobody can lock, and hangs.

use crate::kit::Kit;
use crate::model::{Busy, Model, Obj, WorkerModel};
use crate::signal::Storm;
use crate::step::{Case, Op, Step};
use crate::worker::{self, Act, Cmd, Msg, Out, Place, Shared, Truth, MAX_OBJECTS};
use objmon::vm::ThreadId;
use objmon::MonitorError;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// How long a call the model says must return may take before it is a hang.
pub const HANG: Duration = Duration::from_secs(5);

/// Most slots a case may grow to.
const MAX_SLOTS: usize = 6;

pub(crate) struct Thread {
    pub(crate) tx: Sender<Cmd>,
    pub(crate) rx: Receiver<Msg>,
    pub(crate) tid: Option<ThreadId>,
    pub(crate) pt: libc::pthread_t,
    pub(crate) join: Option<std::thread::JoinHandle<()>>,
}

/// One case in progress.
pub struct Driver<K: Kit> {
    pub(crate) sh: Arc<Shared<K>>,
    pub(crate) threads: Vec<Thread>,
    pub(crate) m: Model,
    pub(crate) slot_of: Vec<usize>,
    pub(crate) phase: bool,
    pub(crate) next_ident: u32,
    pub(crate) storm: Option<Storm>,
    pub(crate) trace: Vec<String>,
    pub(crate) lenient_moved: bool,
    /// Spurious wake-ups seen.
    pub spurious: u32,
}

pub(crate) type R = Result<(), String>;

/// The protocols whose bias owner counts its holds in lock records by header address: a
/// forgotten biased hold stays with the address, not the value (`biased.rs`, "A forgotten
/// guard, then a move"). Their default adversary asks nothing more of an object moved while
/// held (`Adversary::lenient_moved`), nor of one swapped with it.
pub(crate) const RECORDS_BY_ADDRESS: [&str; 2] = ["biased", "fable"];

/// The protocols whose owner's release does not settle a hash parked *loose* (the hasher
/// waited `HASH_WAIT_BOUND` for an owner holding the object once): a header moved between
/// that release and the next hash call loses or inherits the hash (`docs/soundness.md` §6,
/// "A hash under a single running hold"). The model accepts that, and only that, for an
/// object hashed while another thread held it. (`thin` settles it at the release.)
const LOOSE_HASH_LIMIT: [&str; 9] = [
    "thin-seed",
    "biased",
    "biased-seed",
    "fable",
    "fable-seed",
    "biased-rseq",
    "fable-rseq",
    "biased-signal",
    "fable-signal",
];

/// What the panic of a non-reentrant surface's lock by its holder says (`RawMonitor`).
pub(crate) const RELOCK_PANIC: &str = "locked again by the thread that holds it";

/// Locks by the holder on a non-reentrant surface whose documented panic was seen, in this
/// process.
pub(crate) static RELOCKS_CHECKED: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(0);

/// The protocols whose owner's release settles a hash parked loose (`thin`, with
/// `membarrier`): the hash is parked by address until that release, so an owner that never
/// releases (its guard forgotten) leaves the entry there, and a move of the header before the
/// next hash call leaves the moved object without it: its `peek_identity_hash` may answer
/// `None`, and an object arriving at the old address may peek it, until their next hash
/// calls (`docs/soundness.md` §6). The hash itself never changes: a hash chosen under a hold
/// of a thread that once had one parked is pinned to the header's host bits, so the moved
/// object's next hash call draws the same value; the model checks that strictly.
const LOOSE_UNTIL_RELEASE: [&str; 1] = ["thin"];

pub(crate) fn fail<T>(msg: impl Into<String>) -> Result<T, String> {
    Err(msg.into())
}

/// What the adversary may do besides calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Adversary {
    /// The host signal adversary.
    pub signals: bool,
    /// Moves of live objects (swap, replace, box moves), and frees of objects held through
    /// a forgotten guard. Off for the protocols that find a monitor by the header's address,
    /// whose hosts must report every move (`Runtime::relocate`, an `unsafe fn`), and for
    /// those made on the promise that a header held through a leaked guard never moves nor
    /// is freed (`Protocol::HOST_MOVE_CONTRACT`).
    pub moves: bool,
    /// An object moved while held (a forgotten guard) is left alone from then on: nothing
    /// is asked of it, so the fuzzer goes on to what the move did to the others.
    pub lenient_moved: bool,
}

/// Runs `case` on surface `K`; `Err` names the first violation.
pub fn run<K: Kit>(case: &Case, adv: Adversary) -> R {
    let mut d = Driver::<K>::new(case.steps.len())?;
    d.lenient_moved = adv.lenient_moved;
    let r = d.play(&case.steps, adv);
    match r {
        Ok(()) => d.finish(),
        Err(e) => {
            d.storm.take();
            let tail = d.trace.len().saturating_sub(12);
            Err(format!(
                "{e}\n  on {} ({} surface); last steps run:\n    {}",
                K::PROTOCOL,
                K::SURFACE,
                d.trace[tail..].join("\n    ")
            ))
        }
    }
}

impl<K: Kit> Driver<K> {
    fn new(_len: usize) -> Result<Self, String> {
        let kit = K::new();
        let slots = (0..crate::step::SLOTS as usize)
            .map(|i| {
                if i % 2 == 0 {
                    Place::Inline(kit.slot())
                } else {
                    Place::Boxed(Box::new(kit.slot()))
                }
            })
            .collect::<Vec<_>>();
        let n = slots.len();
        let sh = Arc::new(Shared {
            kit,
            slots: RwLock::new(slots),
            truth: (0..MAX_OBJECTS).map(|_| Truth::default()).collect(),
        });
        let mut d = Self {
            sh,
            threads: Vec::new(),
            m: Model {
                objs: vec![Obj::default(); n],
                workers: Vec::new(),
                loose_parked: false,
                forgot_by_address: false,
            },
            slot_of: (0..n).collect(),
            phase: false,
            next_ident: 1,
            storm: None,
            trace: Vec::new(),
            lenient_moved: false,
            spurious: 0,
        };
        for _ in 0..crate::step::WORKERS {
            let t = d.spawn()?;
            d.m.workers.push(WorkerModel::new(d.next_ident - 1));
            d.threads.push(t);
        }
        Ok(d)
    }

    pub(crate) fn spawn(&mut self) -> Result<Thread, String> {
        let ident = self.next_ident;
        self.next_ident += 1;
        let (tx, crx) = channel();
        let (ctx, rx) = channel();
        let sh = self.sh.clone();
        let join = std::thread::Builder::new()
            .name(format!("fuzz-T{ident}"))
            .spawn(move || worker::run(sh, ident, crx, ctx))
            .map_err(|e| format!("spawn: {e}"))?;
        match rx.recv_timeout(HANG) {
            Ok(Msg::Ready(tid, pt)) => {
                if let Some(s) = &self.storm {
                    s.add(pt);
                }
                Ok(Thread {
                    tx,
                    rx,
                    tid,
                    pt,
                    join: Some(join),
                })
            }
            _ => fail(format!("worker T{ident} did not start (attach hung?)")),
        }
    }

    fn play(&mut self, steps: &[Step], adv: Adversary) -> R {
        for st in steps {
            if !adv.moves && matches!(st, Step::Swap(..) | Step::Replace(_) | Step::Rebox(_)) {
                continue;
            }
            self.step(*st, adv)?;
        }
        self.end(true)
    }

    fn finish(mut self) -> R {
        self.storm.take();
        for i in 0..self.threads.len() {
            self.quit(i, None)?;
        }
        for (l, o) in self.m.objs.iter().enumerate() {
            let b = self.sh.truth[l].bumps.load(Ordering::Relaxed);
            if b != o.bursts {
                return fail(format!(
                    "two owners: bursts on #{l} made {} lock/unlock pairs but the counter they bump \
                     under the lock reads {b} (increments lost to a concurrent holder)",
                    o.bursts
                ));
            }
        }
        Ok(())
    }

    fn step(&mut self, st: Step, adv: Adversary) -> R {
        let signals = adv.signals;
        let n = self.slot_of.len();
        match st {
            Step::Do(w, op) => {
                let w = w as usize % self.threads.len();
                if !matches!(op, Op::Burst(..) | Op::Interrupt(_)) {
                    self.join_bursts()?;
                }
                self.begin();
                self.op(w, op)?;
                self.settle()?;
            }
            Step::End(lifo) => self.end(lifo)?,
            Step::Swap(a, b) => {
                let (a, b) = (a as usize % n, b as usize % n);
                if a == b {
                    return Ok(());
                }
                self.end(true)?;
                self.log(format!(
                    "mem::swap(slot {a} = #{}, slot {b} = #{})",
                    self.slot_of[a], self.slot_of[b]
                ));
                let mut slots = self.sh.slots.write().unwrap();
                let (x, y) = slots.split_at_mut(b.max(a));
                std::mem::swap(&mut *x[a.min(b)], &mut *y[0]);
                drop(slots);
                self.slot_of.swap(a, b);
                let (la, lb) = (self.slot_of[a], self.slot_of[b]);
                if RECORDS_BY_ADDRESS.contains(&K::PROTOCOL)
                    && (self.m.objs[la].count > 0 || self.m.objs[lb].count > 0)
                {
                    // A forgotten biased hold stays with the address: the header swapped in
                    // inherits it if it is biased to the same thread (documented), so neither
                    // object's lock state is known any more.
                    self.m.objs[la].tainted = true;
                    self.m.objs[lb].tainted = true;
                }
                self.taint(la);
                self.taint(lb);
            }
            Step::Replace(a) => {
                let a = a as usize % n;
                if n >= MAX_SLOTS || self.m.objs.len() >= MAX_OBJECTS {
                    return Ok(());
                }
                self.end(true)?;
                if !adv.moves && self.m.objs[self.slot_of[a]].count > 0 {
                    // Held through a forgotten guard: freeing it breaks the promise of the
                    // protocols that do not move live objects (`Target::movable`).
                    return Ok(());
                }
                let fresh = self.m.objs.len();
                self.log(format!(
                    "mem::replace(slot {a} = #{}, fresh #{fresh}); old one pushed as slot {n}",
                    self.slot_of[a]
                ));
                let mut slots = self.sh.slots.write().unwrap();
                let realloc = slots.len() == slots.capacity();
                let old = std::mem::replace(&mut *slots[a], self.sh.kit.slot());
                let inline: Vec<usize> = (0..n)
                    .filter(|&i| matches!(slots[i], Place::Inline(_)))
                    .collect();
                slots.push(Place::Inline(old));
                drop(slots);
                self.m.objs.push(Obj::default());
                self.slot_of.push(self.slot_of[a]);
                self.slot_of[a] = fresh;
                self.arrived(fresh);
                self.taint(self.slot_of[n]);
                if realloc {
                    for i in inline {
                        self.taint(self.slot_of[i]);
                    }
                }
            }
            Step::Fresh(a) => {
                let a = a as usize % n;
                if self.m.objs.len() >= MAX_OBJECTS {
                    return Ok(());
                }
                self.end(true)?;
                if !adv.moves && self.m.objs[self.slot_of[a]].count > 0 {
                    // Held through a forgotten guard: freeing it breaks the promise of the
                    // protocols that do not move live objects (`Target::movable`).
                    return Ok(());
                }
                let fresh = self.m.objs.len();
                self.log(format!(
                    "drop slot {a} = #{} in place, fresh #{fresh}",
                    self.slot_of[a]
                ));
                let mut slots = self.sh.slots.write().unwrap();
                self.sh.kit.retire(&mut slots[a]);
                *slots[a] = self.sh.kit.slot();
                drop(slots);
                self.m.objs[self.slot_of[a]].dead = true;
                self.m.objs.push(Obj::default());
                self.slot_of[a] = fresh;
                self.arrived(fresh);
            }
            Step::Rebox(a) => {
                let a = a as usize % n;
                self.end(true)?;
                let mut slots = self.sh.slots.write().unwrap();
                let p = std::mem::replace(&mut slots[a], Place::Inline(self.sh.kit.slot()));
                let boxed = matches!(p, Place::Boxed(_));
                slots[a] = match p {
                    Place::Inline(s) => Place::Boxed(Box::new(s)),
                    Place::Boxed(b) => Place::Inline(*b),
                };
                drop(slots);
                let what = if boxed {
                    "out of its Box"
                } else {
                    "into a Box"
                };
                self.log(format!("move slot {a} = #{} {what}", self.slot_of[a]));
                self.taint(self.slot_of[a]);
            }
            Step::ThreadExit(w, tls) => {
                let w = w as usize % self.threads.len();
                self.m.workers[w].exit = Some(tls);
            }
            Step::SignalsAt(w) => {
                if !signals {
                    return Ok(());
                }
                let w = w as usize % self.threads.len();
                self.log(format!(
                    "signal adversary on, at T{} only",
                    self.m.workers[w].ident
                ));
                self.storm.take();
                self.storm = Some(Storm::start(vec![self.threads[w].pt]));
            }
            Step::AwaitCaught => {
                if !signals || self.storm.is_none() {
                    return Ok(());
                }
                let t0 = std::time::Instant::now();
                while !crate::signal::caught() && t0.elapsed() < Duration::from_millis(20) {
                    std::thread::sleep(Duration::from_micros(20));
                }
                let caught = crate::signal::caught();
                self.log(format!(
                    "{} the host handler busy over an owner section",
                    if caught { "found" } else { "did not find" }
                ));
            }
            Step::Signals(on) => {
                if !signals {
                    return Ok(());
                }
                self.log(format!(
                    "signal adversary {}",
                    if on { "on" } else { "off" }
                ));
                if on && self.storm.is_none() {
                    self.storm = Some(Storm::start(self.threads.iter().map(|t| t.pt).collect()));
                } else if !on {
                    self.storm.take();
                }
            }
        }
        Ok(())
    }

    fn taint(&mut self, l: usize) {
        if self.m.objs[l].count > 0 || self.m.forgot_by_address {
            self.m.objs[l].tainted = true;
        }
        self.arrived(l);
    }

    /// `l` now sits at an address another object may have left a loose hash at: until its
    /// next hash call it may show that hash (`LOOSE_HASH_LIMIT`; an object that already has
    /// a settled hash shows its own).
    fn arrived(&mut self, l: usize) {
        let unsettled = self.m.objs.iter().any(|o| o.loose_settles);
        let o = &mut self.m.objs[l];
        if o.loose_settles {
            o.loose = true;
        }
        if (self.m.loose_parked || unsettled) && (o.hash.is_none() || o.loose) {
            o.inherit = true;
        }
    }

    pub(crate) fn log(&mut self, s: String) {
        self.trace.push(s);
    }

    pub(crate) fn begin(&mut self) {
        if !self.phase {
            for t in &self.threads {
                let _ = t.tx.send(Cmd::Begin);
            }
            self.phase = true;
        }
    }

    /// Sends `a` to worker `w` and waits for its answer.
    pub(crate) fn call(&mut self, w: usize, a: Act) -> Result<Out, String> {
        self.send(w, a)?;
        self.answer(w, a)
    }

    pub(crate) fn send(&mut self, w: usize, a: Act) -> R {
        self.log(format!("T{}: {a:?}", self.m.workers[w].ident));
        self.threads[w]
            .tx
            .send(Cmd::Act(a))
            .map_err(|_| format!("worker T{} is gone", self.m.workers[w].ident))
    }

    pub(crate) fn answer(&mut self, w: usize, a: Act) -> Result<Out, String> {
        match self.threads[w].rx.recv_timeout(HANG) {
            Ok(Msg::Out(r)) => r,
            Ok(_) => fail("worker protocol error"),
            Err(_) => fail(format!(
                "hang: T{}'s {a:?} did not return in {HANG:?} (the model says it returns at once)",
                self.m.workers[w].ident
            )),
        }
    }

    fn op(&mut self, w: usize, op: Op) -> R {
        if let Op::Interrupt(t) = op {
            return self.interrupt(t as usize % self.threads.len());
        }
        let slot = match op {
            Op::Lock(s) | Op::TryLock(s) | Op::TryLockFor(s, _) | Op::Wait(s, _) => Some(s),
            Op::Notify(s) | Op::NotifyAll(s) | Op::Query(s) | Op::Hash(s) | Op::Peek(s) => Some(s),
            Op::Enter(s) | Op::Exit(s) | Op::Burst(s, _) => Some(s),
            _ => None,
        };
        if let Some(s) = slot {
            let l = self.slot_of[s as usize % self.slot_of.len()];
            if self.lenient_moved && self.m.objs[l].tainted {
                return Ok(());
            }
        }
        if self.m.workers[w].busy != Busy::Idle {
            return Ok(());
        }
        let me = self.m.workers[w].ident;
        let n = self.slot_of.len();
        let sl = |s: u8| s as usize % n;
        match op {
            Op::Lock(s) | Op::Enter(s) => {
                let s = sl(s);
                let l = self.slot_of[s];
                let u = matches!(op, Op::Enter(_));
                if u && K::SURFACE != "vm" {
                    return Ok(());
                }
                let a = if u {
                    Act::Enter { s, l }
                } else {
                    Act::Lock { s, l }
                };
                if self.m.objs[l].tainted && self.m.objs[l].owner == me {
                    // Moved while held: only what the others see is checked.
                } else if !K::REENTRANT && self.m.objs[l].owner == me {
                    // Not reentrant: the documented answer is a panic that takes nothing
                    // ("a panic says what went wrong": the message must say so).
                    let a = Act::Relock { s, l };
                    match self.call(w, a)? {
                        Out::Panicked(msg) if msg.contains(RELOCK_PANIC) => {
                            RELOCKS_CHECKED.fetch_add(1, Ordering::Relaxed);
                        }
                        o => {
                            let surface = K::SURFACE;
                            return fail(format!(
                                "T{me} locked #{l} (slot {s}), which it holds, on the \
                                 non-reentrant {surface} surface: expected the documented \
                                 panic (\"{RELOCK_PANIC}\"), got {o:?}"
                            ));
                        }
                    }
                } else if self.m.lock_is_immediate(w, l) {
                    match self.call(w, a)? {
                        Out::Done => self.locked(w, l, u),
                        Out::Err(e) => return fail(format!("{a:?} by T{me} failed: {e:?}")),
                        o => return fail(format!("{a:?}: unexpected {o:?}")),
                    }
                } else if self.m.lock_may_block(l) {
                    self.send(w, a)?;
                    self.m.workers[w].busy = Busy::Acquiring { l, u };
                }
            }
            Op::TryLock(s) | Op::TryLockFor(s, _) => {
                let s = sl(s);
                let l = self.slot_of[s];
                let ms = if let Op::TryLockFor(_, ms) = op {
                    ms as u64
                } else {
                    0
                };
                self.try_lock(w, s, l, ms)?;
            }
            Op::Unlock(g) => {
                let gs = &self.m.workers[w].guards;
                if gs.is_empty() {
                    return Ok(());
                }
                let gi = gs.len() - 1 - g as usize % gs.len();
                let l = gs[gi];
                self.call(w, Act::Unlock { gi })?;
                self.m.workers[w].guards.remove(gi);
                self.m.release(l);
            }
            Op::Forget(g) => {
                let gs = &self.m.workers[w].guards;
                if gs.is_empty() {
                    return Ok(());
                }
                let gi = gs.len() - 1 - g as usize % gs.len();
                let l = gs[gi];
                if self.m.waiters(l).next().is_some() || self.m.blocked(l).next().is_some() {
                    return Ok(()); // they would block for good
                }
                if let Some(budget) = K::ID_BUDGET {
                    // This thread's id is retired for good from its first forgotten guard on a
                    // process-wide runtime: within the process's budget, or no forget.
                    if !self.m.workers[w].retires_id {
                        if !crate::kit::retire_id(K::PROTOCOL, budget) {
                            return Ok(());
                        }
                        self.m.workers[w].retires_id = true;
                    }
                }
                self.call(w, Act::Forget { gi })?;
                self.m.workers[w].guards.remove(gi);
                self.m.objs[l].forgotten += 1;
                self.m.forgot_by_address |= RECORDS_BY_ADDRESS.contains(&K::PROTOCOL);
            }
            Op::Wait(s, t) => self.wait(w, sl(s), t)?,
            Op::Notify(s) | Op::NotifyAll(s) => {
                let s = sl(s);
                let l = self.slot_of[s];
                let all = matches!(op, Op::NotifyAll(_));
                self.notify(w, s, l, all)?;
            }
            Op::Query(s) => self.query(w, sl(s))?,
            Op::Hash(s) => {
                let s = sl(s);
                let l = self.slot_of[s];
                let me = self.m.workers[w].ident;
                let held_by_other = self.m.objs[l].count > 0 && self.m.objs[l].owner != me;
                let loose_before = self.m.objs[l].loose || self.m.objs[l].inherit;
                match self.call(w, Act::Hash { s })? {
                    // The documented limit (`LOOSE_HASH_LIMIT`): a hash parked loose and
                    // lost by a move is replaced by a new one, or one parked for the object
                    // that was at this address is adopted; the object keeps that one.
                    Out::Hash(Ok(h)) if loose_before => {
                        let settles = LOOSE_UNTIL_RELEASE.contains(&K::PROTOCOL);
                        if let Some(x) = self.m.objs[l].hash.filter(|&x| settles && x != h) {
                            return fail(format!(
                                "identity hash changed: #{l} (now slot {s}) hashed {x:#x} before, {h:#x} now (moved while a forgotten hold kept its parked hash at the old address)"
                            ));
                        }
                        self.m.objs[l].hash = Some(h);
                        self.m.objs[l].loose = held_by_other && !settles;
                        self.m.objs[l].loose_settles = held_by_other && settles;
                        self.m.objs[l].inherit = false;
                        self.m.loose_parked |= held_by_other && !settles;
                    }
                    Out::Hash(Ok(h)) => match self.m.objs[l].hash {
                        _ if held_by_other && LOOSE_HASH_LIMIT.contains(&K::PROTOCOL) => {
                            self.m.objs[l].hash = Some(h);
                            self.m.objs[l].loose = true;
                            self.m.loose_parked = true;
                        }
                        Some(x) if x != h => {
                            return fail(format!(
                                "identity hash changed: #{l} (now slot {s}) hashed {x:#x} before, {h:#x} now"
                            ))
                        }
                        // `thin` settles a loose hash at the owner's release; until then it
                        // is parked by address, and a move under a forgotten guard leaves it
                        // behind for `peek` (`LOOSE_UNTIL_RELEASE`).
                        _ if held_by_other && LOOSE_UNTIL_RELEASE.contains(&K::PROTOCOL) => {
                            self.m.objs[l].hash = Some(h);
                            self.m.objs[l].loose_settles = true;
                        }
                        _ => self.m.objs[l].hash = Some(h),
                    },
                    Out::Hash(Err(MonitorError::MonitorTableFull)) | Out::Unsupported => {}
                    o => return fail(format!("identity_hash of #{l}: {o:?}")),
                }
            }
            Op::Peek(s) => {
                let s = sl(s);
                let l = self.slot_of[s];
                if let Out::Peek(p) = self.call(w, Act::Peek { s })? {
                    let want = self.m.objs[l].hash;
                    // `stack` keeps a stack-locked object's hash in its owner's lock record,
                    // which only a safepoint may read: `peek` answers `None` meanwhile
                    // (documented on `Stack`'s `peek_identity_hash`).
                    let in_record = K::PROTOCOL == "stack" && self.m.objs[l].count > 0;
                    // Under the loose-hash limit, a hash parked by address may be lost by a
                    // move or seen by the object moved to that address.
                    let loose = self.m.objs.iter().any(|o| o.loose) || self.m.objs[l].inherit;
                    if p != want && !(in_record && p.is_none()) && !loose {
                        return fail(format!(
                            "peek_identity_hash of #{l} (slot {s}) is {p:x?}, but its hash is {want:x?}{}",
                            if want.is_none() { " (never asked: inherited from an object that was at this address?)" } else { "" }
                        ));
                    }
                }
            }
            Op::Exit(s) => {
                let s = sl(s);
                let l = self.slot_of[s];
                let held = self.m.workers[w].unstructured_on(l) > 0;
                match (self.call(w, Act::Exit { s, l, held })?, held) {
                    (Out::Done, true) => {
                        self.m.workers[w].add_unstructured(l, -1);
                        self.m.release(l);
                    }
                    (Out::Err(MonitorError::IllegalMonitorState) | Out::Unsupported, false) => {}
                    (o, _) => {
                        return fail(format!(
                            "monitor_exit of #{l} by T{me} holding {} unstructured level(s): {o:?}",
                            self.m.workers[w].unstructured_on(l)
                        ))
                    }
                }
            }
            Op::Interrupted => {
                if let Out::Flag(f) = self.call(w, Act::Interrupted)? {
                    let want = std::mem::take(&mut self.m.workers[w].interrupt);
                    if f != want {
                        return fail(format!(
                            "interrupted() of T{me} is {f}, the model says {want}"
                        ));
                    }
                }
            }
            Op::Poll => {
                self.call(w, Act::Poll)?;
            }
            Op::Burst(s, k) => {
                let s = sl(s);
                let l = self.slot_of[s];
                let o = &self.m.objs[l];
                if o.count != 0 || self.m.waiters(l).next().is_some() {
                    return Ok(());
                }
                let n = k as u32 * 8;
                self.send(w, Act::Burst { s, l, n })?;
                self.m.objs[l].bursts += n as u64;
                self.m.workers[w].busy = Busy::Burst { l };
            }
            Op::Interrupt(_) => unreachable!(),
        }
        Ok(())
    }

    pub(crate) fn locked(&mut self, w: usize, l: usize, u: bool) {
        let me = self.m.workers[w].ident;
        self.m.acquire(l, me);
        if u {
            self.m.workers[w].add_unstructured(l, 1);
        } else {
            self.m.workers[w].guards.push(l);
        }
    }

    fn try_lock(&mut self, w: usize, s: usize, l: usize, ms: u64) -> R {
        let me = self.m.workers[w].ident;
        let o = self.m.objs[l].clone();
        let want = o.owner == 0 || (o.owner == me && K::REENTRANT);
        let got = match self.call(w, Act::TryLock { s, l, ms })? {
            Out::Got(g) => g,
            o => return fail(format!("try_lock of #{l}: {o:?}")),
        };
        if !K::REENTRANT && o.owner == me {
            if got && !o.tainted {
                return fail(format!(
                    "a second guard: T{me}'s try_lock of #{l} (slot {s}), which it holds, \
                     succeeded on the non-reentrant {} surface (documented: `None`)",
                    K::SURFACE
                ));
            }
            // Moved while held through a forgotten guard: the owner's own view is not
            // checked (the forgotten guard gives no access any more).
            if got {
                self.locked(w, l, false);
            }
            return Ok(());
        }
        if got && !want {
            return fail(format!(
                "two owners: T{me}'s try_lock of #{l} (slot {s}) succeeded while T{} holds it \
                 ({} level(s), {} forgotten{})",
                o.owner,
                o.count,
                o.forgotten,
                if o.tainted { ", moved while held" } else { "" }
            ));
        }
        if !got && want {
            if o.owner == me {
                return fail(format!(
                    "T{me} holds #{l} but its reentrant try_lock failed"
                ));
            }
            // Free per the model: it must be acquirable, allowing for a busy back-off.
            match self.call(w, Act::TryLock { s, l, ms: 1000 })? {
                Out::Got(true) => {}
                _ => {
                    return fail(format!(
                        "#{l} (slot {s}) is free per the model (nobody holds it), but T{me} \
                         cannot lock it in 1 s{}",
                        if o.forgotten > 0 {
                            ""
                        } else {
                            " (a released lock stays held?)"
                        }
                    ))
                }
            }
        }
        if got || want {
            self.locked(w, l, false);
        }
        Ok(())
    }

    fn query(&mut self, w: usize, s: usize) -> R {
        let l = self.slot_of[s];
        let me = self.m.workers[w].ident;
        let o = self.m.objs[l].clone();
        let mine = o.owner == me;
        let Out::Query(holds, count, locked) = self.call(w, Act::Query { s })? else {
            return fail("query: unexpected answer");
        };
        let whose = if o.owner == 0 {
            "nobody".to_string()
        } else {
            format!("T{}", o.owner)
        };
        // Moved while held: the owner's own view is not checked, only the others'.
        let lenient = o.tainted && mine;
        if holds.is_some_and(|h| h != mine) && !lenient {
            let holds = holds.unwrap_or_default();
            return fail(format!(
                "holds_lock / is_owned_by_current_thread of #{l} (slot {s}) by T{me} is {holds}; \
                 the model says {whose} holds it ({} level(s))",
                o.count
            ));
        }
        if let Some(c) = count {
            let want = if mine { o.count } else { 0 };
            let ok = lenient || c == want;
            if !ok {
                return fail(format!(
                    "lock_count of #{l} by T{me} is {c}, the model says {want}"
                ));
            }
        }
        // The lightweight protocols' and `stack`'s `owner_of` answer `None` for an object
        // whose owner exited with a forgotten guard (their word names a lock stack entry or a
        // lock record, not a thread id; documented there).
        let anonymous_exited = (K::PROTOCOL.starts_with("lightweight") || K::PROTOCOL == "stack")
            && o.owner != 0
            && !self.m.workers.iter().any(|w| w.ident == o.owner);
        let excused = anonymous_exited && !locked;
        if locked != (o.count > 0) && !excused {
            return fail(format!(
                "is_locked / owner_of of #{l} (slot {s}) says {locked}; the model says {whose} holds it"
            ));
        }
        Ok(())
    }
}
