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
//! object that nobody can lock, and hangs. Each call and its check: `calls.rs`; the blocking
//! half (waits, notifies, interrupts, settling, a phase's end): `phases.rs`.

use crate::kit::Kit;
use crate::model::{Model, Obj, WorkerModel};
use crate::signal::Storm;
use crate::step::{Case, Op, Step};
use crate::worker::{self, Act, Cmd, Msg, Out, Place, Shared, Truth, MAX_OBJECTS};
use objmon::vm::ThreadId;
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
    /// The calls sent now run "in native" (`Op::Native`).
    pub(crate) native: bool,
    pub(crate) strict_events: bool,
    /// A forgotten guard keeps this case's runtime, which has a sink, alive for good
    /// (`sink::SINK_SLOT_BUDGET`).
    pub(crate) keeps_slot: bool,
    /// Spurious wake-ups seen.
    pub spurious: u32,
}

pub(crate) type R = Result<(), String>;

/// The protocols whose bias owner counts its holds in lock records by header address: a
/// forgotten biased hold stays with the address, not the value (`biased.rs`, "A forgotten
/// guard, then a move"). Their default adversary asks nothing more of an object moved while
/// held (`Adversary::lenient_moved`), nor of one swapped with it.
pub(crate) const RECORDS_BY_ADDRESS: [&str; 2] = ["biased", "fable"];

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
    /// Ask of monitor events everything their documentation promises, also what a
    /// documented limit leaves out (`crate::sink`: `STALE_EVENT_OBJECT`).
    pub strict_events: bool,
}

/// Runs `case` on surface `K`; `Err` names the first violation.
pub fn run<K: Kit>(case: &Case, adv: Adversary) -> R {
    let mut d = Driver::<K>::new(&case.steps)?;
    d.lenient_moved = adv.lenient_moved;
    d.strict_events = adv.strict_events;
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
    fn new(steps: &[Step]) -> Result<Self, String> {
        // Before any runtime of the process is made (the process-wide ones take their sink
        // at their creation), whether or not this case has a sink.
        let global = crate::sink::install_global();
        let hostile: Vec<_> = steps
            .iter()
            .filter_map(|s| match s {
                Step::Events(h) => Some(*h),
                _ => None,
            })
            .collect();
        let hostile =
            (!hostile.is_empty() && (global || K::ID_BUDGET.is_none())).then_some(hostile);
        if hostile.is_some() {
            crate::sink::CASES.fetch_add(1, Ordering::Relaxed);
        }
        let kit = K::new(hostile.as_ref().map(|_| crate::sink::router()));
        let own = vec![kit.slot(), kit.slot()];
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
            hostile,
            seen: Default::default(),
            own,
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
            native: false,
            strict_events: false,
            keeps_slot: false,
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
            // The sink is made with the runtime (`Driver::new`).
            Step::Events(_) => {}
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
        self.m.objs[l].moved = true;
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
        let (cmd, native) = if self.native {
            (Cmd::Native(a), " in native")
        } else {
            (Cmd::Act(a), "")
        };
        self.log(format!("T{}{native}: {a:?}", self.m.workers[w].ident));
        self.threads[w]
            .tx
            .send(cmd)
            .map_err(|_| format!("worker T{} is gone", self.m.workers[w].ident))
    }

    pub(crate) fn answer(&mut self, w: usize, a: Act) -> Result<Out, String> {
        match self.threads[w].rx.recv_timeout(HANG) {
            Ok(Msg::Out(Ok(o))) => {
                self.check_events(w, crate::sink::Call::Act(a, &o))?;
                Ok(o)
            }
            Ok(Msg::Out(r)) => r,
            Ok(_) => fail("worker protocol error"),
            Err(_) => fail(format!(
                "hang: T{}'s {a:?} did not return in {HANG:?} (the model says it returns at once)",
                self.m.workers[w].ident
            )),
        }
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
}
