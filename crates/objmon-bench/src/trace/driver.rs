//! The replay driver ([`replay`], [`replay_anchor`]) and what it runs on: an objmon protocol,
//! or an anchor (`objmon::Monitor<()>`, `std::sync::Mutex`, `parking_lot::ReentrantMutex`),
//! all behind one pair of traits.

use super::replay_plan::{Op, ReplayPlan, ReplayResult};

/// An operation a replay target refused.
#[derive(Debug)]
struct Refused;

/// The runtime counters a replay target exposes (`None`: it has no such thing).
#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    inflations: Option<u64>,
    deflations: Option<u64>,
    revocations: Option<u64>,
    live_monitors: Option<usize>,
}

/// What the replay driver ([`replay_on`]) needs of a lock: the plan's objects (indexed by the
/// plan's dense object index) and a per-thread handle that performs the operations. One
/// implementation per protocol of the catalog ([`ProtoTarget`]) and one per anchor.
trait ReplayTarget: Sync {
    /// The calling thread's handle (it lives on that thread only).
    type Thread<'a>: ReplayThread
    where
        Self: 'a;
    /// Row name.
    fn name(&self) -> &'static str;
    /// Attaches the calling thread (`None`: refused).
    fn attach(&self) -> Option<Self::Thread<'_>>;
    /// The counters now.
    fn counters(&self) -> Counters;
}

/// One replayed thread's operations (objects by dense index).
trait ReplayThread {
    fn lock(&mut self, o: u32) -> Result<(), Refused>;
    fn unlock(&mut self, o: u32) -> Result<(), Refused>;
    /// Java's `wait` with a timeout: releases every level this thread holds on `o`, waits,
    /// takes them back.
    fn wait(&mut self, o: u32, timeout: std::time::Duration) -> Result<(), Refused>;
    fn notify(&mut self, o: u32, all: bool) -> Result<(), Refused>;
}

/// An objmon protocol: a fresh runtime and one header per object.
struct ProtoTarget<P: objmon::Protocol> {
    rt: std::sync::Arc<objmon::vm::Runtime<P>>,
    headers: Vec<P::Header>,
}

impl<P: objmon::Protocol> ProtoTarget<P> {
    fn new(objects: usize) -> Self {
        Self {
            // SAFETY: this program installs no signal handler of its own (std's fault handlers run
            // only on a fault, which no owner section makes): the -signal flavors' contract
            // (`Runtime::new_unchecked`) holds; the other protocols have none.
            rt: unsafe { objmon::vm::Runtime::<P>::new_unchecked(Default::default()) },
            headers: (0..objects).map(|_| P::Header::default()).collect(),
        }
    }
}

struct ProtoThread<'a, P: objmon::Protocol> {
    me: objmon::vm::ThreadHandle<'a, P>,
    headers: &'a [P::Header],
}

impl<P: objmon::Protocol> ReplayTarget for ProtoTarget<P> {
    type Thread<'a> = ProtoThread<'a, P>;

    fn name(&self) -> &'static str {
        P::NAME
    }

    fn attach(&self) -> Option<ProtoThread<'_, P>> {
        let me = self.rt.attach().ok()?;
        Some(ProtoThread {
            me,
            headers: &self.headers,
        })
    }

    fn counters(&self) -> Counters {
        let s = self.rt.stats_snapshot();
        // Every biased flavor (`biased`, `fable`, their `-seed`/`-rseq` variants) keeps its
        // runtime-wide state in one `BiasState`; `P::State: 'static` because `P: 'static`.
        let any: &dyn std::any::Any = self.rt.state();
        let revocations = any
            .downcast_ref::<objmon::protocol::biased::BiasState>()
            .map(|b| b.revocations().total());
        Counters {
            inflations: Some(s.inflations()),
            deflations: Some(s.deflations),
            revocations,
            live_monitors: Some(s.live_monitors),
        }
    }
}

impl<P: objmon::Protocol> ReplayThread for ProtoThread<'_, P> {
    fn lock(&mut self, o: u32) -> Result<(), Refused> {
        self.me
            .monitor_enter(&self.headers[o as usize])
            .map_err(|_| Refused)
    }

    fn unlock(&mut self, o: u32) -> Result<(), Refused> {
        self.me
            .monitor_exit(&self.headers[o as usize])
            .map_err(|_| Refused)
    }

    fn wait(&mut self, o: u32, timeout: std::time::Duration) -> Result<(), Refused> {
        self.me
            .wait(&self.headers[o as usize], Some(timeout))
            .map(|_| ())
            .map_err(|_| Refused)
    }

    fn notify(&mut self, o: u32, all: bool) -> Result<(), Refused> {
        let h = &self.headers[o as usize];
        let r = if all {
            self.me.notify_all(h)
        } else {
            self.me.notify(h)
        };
        r.map_err(|_| Refused)
    }
}

/// `monitor`: one `objmon::Monitor<()>` per object (the default protocol on its process-wide
/// runtime, as `Monitor::new` gives a user). Each thread keeps its guards in a stack of
/// `(object, guard)`; an exit drops the topmost guard of its object, so the trace's
/// unstructured exits (out of LIFO order across objects) need nothing special — guards are
/// independent values. A wait waits on any guard of the object: `MonitorGuard::wait` releases
/// every level, as Java does.
struct MonitorTarget {
    objs: Vec<objmon::Monitor<()>>,
}

struct MonitorThread<'a> {
    objs: &'a [objmon::Monitor<()>],
    held: Vec<(u32, objmon::MonitorGuard<'a, ()>)>,
}

impl ReplayTarget for MonitorTarget {
    type Thread<'a> = MonitorThread<'a>;

    fn name(&self) -> &'static str {
        "monitor"
    }

    fn attach(&self) -> Option<MonitorThread<'_>> {
        Some(MonitorThread {
            objs: &self.objs,
            held: Vec::new(),
        })
    }

    fn counters(&self) -> Counters {
        Counters::default()
    }
}

/// Index in `held` of the topmost entry of object `o`.
fn top_of<G>(held: &[(u32, G)], o: u32) -> Result<usize, Refused> {
    held.iter().rposition(|(x, _)| *x == o).ok_or(Refused)
}

impl ReplayThread for MonitorThread<'_> {
    fn lock(&mut self, o: u32) -> Result<(), Refused> {
        let g = self.objs[o as usize].lock();
        self.held.push((o, g));
        Ok(())
    }

    fn unlock(&mut self, o: u32) -> Result<(), Refused> {
        let i = top_of(&self.held, o)?;
        drop(self.held.remove(i));
        Ok(())
    }

    fn wait(&mut self, o: u32, timeout: std::time::Duration) -> Result<(), Refused> {
        let i = top_of(&self.held, o)?;
        self.held[i]
            .1
            .wait(Some(timeout))
            .map(|_| ())
            .map_err(|_| Refused)
    }

    fn notify(&mut self, o: u32, all: bool) -> Result<(), Refused> {
        let g = &self.held[top_of(&self.held, o)?].1;
        if all {
            g.notify_all();
        } else {
            g.notify();
        }
        Ok(())
    }
}

/// `std-mutex`: `std::sync::Mutex<()>` + `Condvar` per object (as the bench's `std-mutex`
/// row). std's mutex is not reentrant, so each thread keeps `(object, depth, guard)` for the
/// objects it holds: only the outermost enter locks and the outermost exit unlocks. A wait
/// at any depth hands the one guard to the condvar, which releases the mutex entirely and
/// takes it back — Java's semantics (every level released), the depth kept aside meanwhile.
struct StdTarget {
    objs: Vec<(std::sync::Mutex<()>, std::sync::Condvar)>,
}

type StdHeld<'a> = (u32, u32, Option<std::sync::MutexGuard<'a, ()>>);

struct StdThread<'a> {
    objs: &'a [(std::sync::Mutex<()>, std::sync::Condvar)],
    held: Vec<StdHeld<'a>>,
}

impl ReplayTarget for StdTarget {
    type Thread<'a> = StdThread<'a>;

    fn name(&self) -> &'static str {
        "std-mutex"
    }

    fn attach(&self) -> Option<StdThread<'_>> {
        Some(StdThread {
            objs: &self.objs,
            held: Vec::new(),
        })
    }

    fn counters(&self) -> Counters {
        Counters::default()
    }
}

impl StdThread<'_> {
    fn find(&self, o: u32) -> Option<usize> {
        self.held.iter().rposition(|(x, _, _)| *x == o)
    }
}

impl ReplayThread for StdThread<'_> {
    fn lock(&mut self, o: u32) -> Result<(), Refused> {
        if let Some(i) = self.find(o) {
            self.held[i].1 += 1;
        } else {
            let g = self.objs[o as usize]
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            self.held.push((o, 1, Some(g)));
        }
        Ok(())
    }

    fn unlock(&mut self, o: u32) -> Result<(), Refused> {
        let i = self.find(o).ok_or(Refused)?;
        self.held[i].1 -= 1;
        if self.held[i].1 == 0 {
            drop(self.held.remove(i));
        }
        Ok(())
    }

    fn wait(&mut self, o: u32, timeout: std::time::Duration) -> Result<(), Refused> {
        let i = self.find(o).ok_or(Refused)?;
        let g = self.held[i].2.take().ok_or(Refused)?;
        let (g, _) = self.objs[o as usize]
            .1
            .wait_timeout(g, timeout)
            .unwrap_or_else(|e| e.into_inner());
        self.held[i].2 = Some(g);
        Ok(())
    }

    fn notify(&mut self, o: u32, all: bool) -> Result<(), Refused> {
        self.find(o).ok_or(Refused)?;
        let cv = &self.objs[o as usize].1;
        if all {
            cv.notify_all();
        } else {
            cv.notify_one();
        }
        Ok(())
    }
}

/// A `parking-lot` object: the scheme of the bench's `parking-lot` row (`subject::ParkingLot`,
/// whose fields are private to it): `parking_lot::ReentrantMutex<()>`, and a side
/// `Mutex<()>` + `Condvar` for wait/notify, taken while the reentrant mutex is held.
#[derive(Default)]
struct PlObj {
    m: parking_lot::ReentrantMutex<()>,
    side: parking_lot::Mutex<()>,
    cv: parking_lot::Condvar,
}

/// `parking-lot`: every enter takes the reentrant mutex (its own recursion count measured),
/// the guards kept in a per-thread stack of `(object, guard)` like `monitor`'s. A wait at
/// depth `d` takes the side mutex, drops `d - 1` guards, releases the last level while the
/// condvar releases the side mutex (a notifier needs the reentrant mutex, then the side one,
/// so it cannot slip in between), then re-takes the `d - 1` levels: Java's semantics at every
/// depth, not only at depth 1 as the bench's row.
struct PlTarget {
    objs: Vec<PlObj>,
}

struct PlThread<'a> {
    objs: &'a [PlObj],
    held: Vec<(u32, parking_lot::ReentrantMutexGuard<'a, ()>)>,
}

impl ReplayTarget for PlTarget {
    type Thread<'a> = PlThread<'a>;

    fn name(&self) -> &'static str {
        "parking-lot"
    }

    fn attach(&self) -> Option<PlThread<'_>> {
        Some(PlThread {
            objs: &self.objs,
            held: Vec::new(),
        })
    }

    fn counters(&self) -> Counters {
        Counters::default()
    }
}

impl ReplayThread for PlThread<'_> {
    fn lock(&mut self, o: u32) -> Result<(), Refused> {
        let g = self.objs[o as usize].m.lock();
        self.held.push((o, g));
        Ok(())
    }

    fn unlock(&mut self, o: u32) -> Result<(), Refused> {
        let i = top_of(&self.held, o)?;
        drop(self.held.remove(i));
        Ok(())
    }

    fn wait(&mut self, o: u32, timeout: std::time::Duration) -> Result<(), Refused> {
        let obj = &self.objs[o as usize];
        let mut side = obj.side.lock();
        // Keep the topmost level, drop the others (the mutex stays held by the kept one).
        let mut last = None;
        let mut extra = 0usize;
        let mut i = self.held.len();
        while i > 0 {
            i -= 1;
            if self.held[i].0 == o {
                let (_, g) = self.held.remove(i);
                if last.is_none() {
                    last = Some(g);
                } else {
                    drop(g);
                    extra += 1;
                }
            }
        }
        let mut g = last.ok_or(Refused)?;
        parking_lot::ReentrantMutexGuard::unlocked(&mut g, || {
            obj.cv.wait_for(&mut side, timeout);
            drop(side);
        });
        for _ in 0..extra {
            self.held.push((o, obj.m.lock()));
        }
        self.held.push((o, g));
        Ok(())
    }

    fn notify(&mut self, o: u32, all: bool) -> Result<(), Refused> {
        top_of(&self.held, o)?;
        let obj = &self.objs[o as usize];
        let _side = obj.side.lock();
        if all {
            obj.cv.notify_all();
        } else {
            obj.cv.notify_one();
        }
        Ok(())
    }
}

/// The anchors' row names, in the order [`replay_all`](super::replay_all) runs them (after the protocols).
pub const ANCHORS: [&str; 3] = ["monitor", "std-mutex", "parking-lot"];

/// Replays `plan` on anchor `name` (one of [`ANCHORS`]; `None` for another name).
pub fn replay_anchor(
    name: &str,
    plan: &ReplayPlan,
    stall: std::time::Duration,
) -> Option<ReplayResult> {
    let n = plan.objects;
    Some(match name {
        "monitor" => replay_on(
            &MonitorTarget {
                objs: (0..n).map(|_| objmon::Monitor::new(())).collect(),
            },
            plan,
            stall,
        ),
        "std-mutex" => replay_on(
            &StdTarget {
                objs: (0..n).map(|_| Default::default()).collect(),
            },
            plan,
            stall,
        ),
        "parking-lot" => replay_on(
            &PlTarget {
                objs: (0..n).map(|_| PlObj::default()).collect(),
            },
            plan,
            stall,
        ),
        _ => return None,
    })
}

/// Replays `plan` on a fresh runtime of protocol `P` (see [`replay_on`] for the driver).
pub fn replay<P: objmon::Protocol>(plan: &ReplayPlan, stall: std::time::Duration) -> ReplayResult {
    replay_on(&ProtoTarget::<P>::new(plan.objects), plan, stall)
}

/// The replay driver, shared by the protocols and the anchors: one OS thread per trace thread,
/// each attached, running its operations in order after a common start barrier.
///
/// A replay cannot deadlock on a wait (every wait is bounded). A lock-order inversion that the
/// program's own interleaving (or a lock not in the trace) avoided could still deadlock;
/// the watchdog then reports it on stderr and ends the process with status 3 after `stall`
/// without progress.
fn replay_on<T: ReplayTarget>(
    target: &T,
    plan: &ReplayPlan,
    stall: std::time::Duration,
) -> ReplayResult {
    use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
    use std::sync::Barrier;
    use std::time::{Duration, Instant};

    let notified: Vec<AtomicU64> = (0..plan.objects).map(|_| AtomicU64::new(0)).collect();
    let progress = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let peak = AtomicUsize::new(0);
    let barrier = Barrier::new(plan.threads.len() + 1);
    let (wait_ns, bounded, busy_ns, errors) = (
        AtomicU64::new(0),
        AtomicU64::new(0),
        AtomicU64::new(0),
        AtomicU64::new(0),
    );
    let before = target.counters();
    // Wall time = last worker's end - first worker's start, in ns since `base` (measured by the
    // workers themselves: the coordinating thread may be descheduled after the barrier).
    let base = Instant::now();
    let (first_start, last_end) = (AtomicU64::new(u64::MAX), AtomicU64::new(0));
    std::thread::scope(|s| {
        let mut workers = Vec::with_capacity(plan.threads.len());
        for (_, ops) in &plan.threads {
            let (notified, progress, barrier) = (&notified, &progress, &barrier);
            let (wait_ns, bounded, busy_ns, errors) = (&wait_ns, &bounded, &busy_ns, &errors);
            let (first_start, last_end) = (&first_start, &last_end);
            workers.push(s.spawn(move || {
                let Some(mut me) = target.attach() else {
                    errors.fetch_add(1, Ordering::Relaxed);
                    barrier.wait();
                    return;
                };
                barrier.wait();
                let t0 = Instant::now();
                first_start.fetch_min(t0.duration_since(base).as_nanos() as u64, Ordering::Relaxed);
                let mut waited = Duration::ZERO;
                let mut err = 0u64;
                for (i, op) in ops.iter().enumerate() {
                    let r = match *op {
                        Op::Lock(o) => me.lock(o),
                        Op::Unlock(o) => me.unlock(o),
                        Op::Notify { obj, all } => {
                            let r = me.notify(obj, all);
                            // Under the monitor: a waiter that checks the count under the same
                            // monitor sees it (Release pairs with the waiter's Acquire).
                            notified[obj as usize].fetch_add(1, Ordering::Release);
                            r
                        }
                        Op::Wait { obj, need, bound } => {
                            let w0 = Instant::now();
                            let deadline = w0 + bound;
                            let mut r = Ok(());
                            let mut first = true;
                            loop {
                                // Acquire: pairs with the notifier's Release (both under the
                                // object's monitor).
                                if notified[obj as usize].load(Ordering::Acquire) >= need {
                                    if first {
                                        // Already notified: still release and re-acquire, as
                                        // the program's wait did.
                                        r = me.wait(obj, Duration::ZERO);
                                    }
                                    break;
                                }
                                let now = Instant::now();
                                if now >= deadline {
                                    bounded.fetch_add(1, Ordering::Relaxed);
                                    break;
                                }
                                first = false;
                                // Re-check every millisecond: a `notify` may have woken another
                                // waiter whose count was not yet reached.
                                let step = (deadline - now).min(Duration::from_millis(1));
                                if let Err(e) = me.wait(obj, step) {
                                    r = Err(e);
                                    break;
                                }
                            }
                            waited += w0.elapsed();
                            r
                        }
                    };
                    if r.is_err() {
                        err += 1;
                    }
                    if i % 256 == 0 {
                        progress.fetch_add(1, Ordering::Relaxed);
                    }
                }
                let t1 = Instant::now();
                last_end.fetch_max(t1.duration_since(base).as_nanos() as u64, Ordering::Relaxed);
                let total = t1 - t0;
                busy_ns.fetch_add(
                    total.saturating_sub(waited).as_nanos() as u64,
                    Ordering::Relaxed,
                );
                wait_ns.fetch_add(waited.as_nanos() as u64, Ordering::Relaxed);
                errors.fetch_add(err, Ordering::Relaxed);
                // Detach / drop the guards: releases what the thread still held at the
                // trace's end.
                drop(me);
            }));
        }
        // Watchdog and live-monitor sampler.
        let (progress2, done2, peak2) = (&progress, &done, &peak);
        s.spawn(move || {
            let mut last = (progress2.load(Ordering::Relaxed), Instant::now());
            while !done2.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(1));
                if let Some(live) = target.counters().live_monitors {
                    peak2.fetch_max(live, Ordering::Relaxed);
                }
                let p = progress2.load(Ordering::Relaxed);
                if p != last.0 {
                    last = (p, Instant::now());
                } else if last.1.elapsed() > stall {
                    eprintln!(
                        "replay on {}: no progress for {stall:?}: a lock-order deadlock the \
                         recorded interleaving avoided; this trace needs the original schedule",
                        target.name()
                    );
                    std::process::exit(3);
                }
            }
        });
        barrier.wait();
        for w in workers {
            if w.join().is_err() {
                errors.fetch_add(1, Ordering::Relaxed);
            }
        }
        // Release: the watchdog's Acquire load sees it and stops.
        done.store(true, Ordering::Release);
    });
    let after = target.counters();
    let ops = plan.ops.max(1);
    let wall = Duration::from_nanos(
        last_end
            .load(Ordering::Relaxed)
            .saturating_sub(first_start.load(Ordering::Relaxed)),
    );
    let delta = |a: Option<u64>, b: Option<u64>| Some(a? - b?);
    ReplayResult {
        protocol: target.name().to_string(),
        threads: plan.threads.len(),
        ops: plan.ops,
        wall_ns: wall.as_nanos() as u64,
        ns_per_op: wall.as_nanos() as f64 / ops as f64,
        thread_ns_per_op: busy_ns.load(Ordering::Relaxed) as f64 / ops as f64,
        wait_ns: wait_ns.load(Ordering::Relaxed),
        waits_bounded: bounded.load(Ordering::Relaxed),
        inflations: delta(after.inflations, before.inflations),
        deflations: delta(after.deflations, before.deflations),
        revocations: delta(after.revocations, before.revocations),
        peak_live_monitors: after.live_monitors.map(|_| peak.load(Ordering::Relaxed)),
        errors: errors.load(Ordering::Relaxed),
    }
}
