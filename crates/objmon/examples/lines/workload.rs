//! The workload half of `lines`: the harness (marker cells, one line per thread, role and
//! edge), the five scenarios and the kinds they run on; runs under valgrind, started with
//! `OBJMON_LINES_CHILD` set (`child`).

use super::*;

/// One 64-byte line of the harness.
#[repr(C, align(64))]
pub(crate) struct Cell(AtomicU64);

/// The harness's cells: the hand-off's turn counters, then `marks[thread][role][edge]`.
#[repr(C, align(64))]
pub(crate) struct Harness {
    arrived: Cell,
    acquired: Cell,
    marks: [[[Cell; 2]; 2]; 2],
}

pub(crate) static HARNESS: Harness = Harness {
    arrived: Cell(AtomicU64::new(0)),
    acquired: Cell(AtomicU64::new(0)),
    marks: [
        [
            [Cell(AtomicU64::new(0)), Cell(AtomicU64::new(0))],
            [Cell(AtomicU64::new(0)), Cell(AtomicU64::new(0))],
        ],
        [
            [Cell(AtomicU64::new(0)), Cell(AtomicU64::new(0))],
            [Cell(AtomicU64::new(0)), Cell(AtomicU64::new(0))],
        ],
    ],
};

/// A region edge: a plain store to thread `t`'s cell for `role` and `edge` (0 begin, 1 end).
#[inline(always)]
pub(crate) fn mark(t: usize, role: usize, edge: usize) {
    HARNESS.marks[t][role][edge].0.store(1, Ordering::Relaxed);
}

/// A lock object on a line of its own (two objects never share a line).
#[repr(C, align(128))]
#[derive(Default)]
pub(crate) struct Padded<T>(T);

/// What a workload is.
#[derive(Clone, Debug)]
pub struct Spec {
    pub kind: String,
    pub scenario: String,
    pub warm: usize,
    pub iters: usize,
    pub sleep_ms: u64,
}

impl Spec {
    pub(crate) fn to_env(&self) -> String {
        format!(
            "{} {} {} {} {}",
            self.kind, self.scenario, self.warm, self.iters, self.sleep_ms
        )
    }

    fn from_env(s: &str) -> Spec {
        let v: Vec<&str> = s.split_whitespace().collect();
        assert_eq!(v.len(), 5, "{CHILD_ENV}: KIND SCENARIO WARM ITERS SLEEP_MS");
        Spec {
            kind: v[0].into(),
            scenario: v[1].into(),
            warm: v[2].parse().expect("warm"),
            iters: v[3].parse().expect("iters"),
            sleep_ms: v[4].parse().expect("sleep"),
        }
    }
}

pub(crate) fn addr<T: ?Sized>(r: &T) -> usize {
    r as *const T as *const u8 as usize
}

/// Prints what the analysis needs to label lines: the objects, the runtime, the harness, the
/// program's mappings (for `static` and for `addr2line`).
pub(crate) fn describe(objects: &[(usize, usize)], runtime: Option<(usize, usize)>) {
    let mut out = String::new();
    for &(a, n) in objects {
        writeln!(out, "lines-object {a:x} {n}").unwrap();
    }
    if let Some((a, n)) = runtime {
        writeln!(out, "lines-runtime {a:x} {n}").unwrap();
    }
    writeln!(
        out,
        "lines-harness {:x} {}",
        addr(&HARNESS),
        std::mem::size_of::<Harness>()
    )
    .unwrap();
    for t in 0..2 {
        for role in 0..2 {
            for edge in 0..2 {
                let a = addr(&HARNESS.marks[t][role][edge]);
                writeln!(out, "lines-mark {a:x} {t} {role} {edge}").unwrap();
            }
        }
    }
    let exe = std::env::current_exe().ok();
    let exe = exe.and_then(|p| p.canonicalize().ok());
    if let (Some(exe), Ok(maps)) = (exe, std::fs::read_to_string("/proc/self/maps")) {
        for l in maps.lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() >= 6 && Path::new(f[5]) == exe {
                let (s, e) = f[0].split_once('-').unwrap();
                writeln!(out, "lines-map {s} {e} {}", f[2]).unwrap();
            }
        }
    }
    print!("{out}");
    std::io::stdout().flush().unwrap();
}

pub(crate) fn describe_stack(t: usize) {
    let local = 0u8;
    println!("lines-stack {t} {:x}", addr(std::hint::black_box(&local)));
    std::io::stdout().flush().unwrap();
}

/// One thread's part of `uncontended` or `nested`, yielding between regions. Both threads
/// are attached (one lock
/// each) before either starts and stay attached until both are done: otherwise the second
/// could attach into the memory the first detached from, and its own record would look
/// shared.
pub(crate) fn own_object<G>(
    t: usize,
    sp: &Spec,
    start: &Barrier,
    nested: bool,
    lock: impl Fn() -> G,
) {
    describe_stack(t);
    drop(lock());
    start.wait();
    let outer = nested.then(&lock);
    for _ in 0..sp.warm + sp.iters {
        mark(t, 0, 0);
        let g = lock();
        drop(g);
        mark(t, 0, 1);
        // Valgrind runs one thread at a time: a yield lets the other run its next region
        // now, so that the regions interleave as on two cores (and a monitor the other
        // thread gave back and this one took looks like what it is: reuse, seen at once).
        std::thread::yield_now();
    }
    drop(outer);
    start.wait();
}

/// Objects a scenario uses: 0 and 1 (each thread's own, or 0 shared), then for `fresh`
/// one per region of each thread (thread `t`'s region `i`: `2 + t * regions + i`).
pub(crate) fn objects(sp: &Spec) -> usize {
    if sp.scenario == "fresh" {
        2 + 2 * (sp.warm + sp.iters)
    } else {
        2
    }
}

/// One thread's part of `fresh`: each region locks and unlocks an object never locked before
/// (an allocation's first lock), yielding between regions as `own_object`.
pub(crate) fn fresh<G>(t: usize, sp: &Spec, start: &Barrier, lock: impl Fn(usize) -> G) {
    describe_stack(t);
    drop(lock(t));
    start.wait();
    let n = sp.warm + sp.iters;
    for i in 0..n {
        mark(t, 0, 0);
        drop(lock(2 + t * n + i));
        mark(t, 0, 1);
        std::thread::yield_now();
    }
    start.wait();
}

/// One thread's part of `alternate`: the threads take turns on one object, each locking
/// and unlocking it once after the other's unlock, nobody waiting.
pub(crate) fn alternate<G>(t: usize, sp: &Spec, start: &Barrier, lock: impl Fn() -> G) {
    describe_stack(t);
    start.wait();
    let turn = &HARNESS.arrived.0;
    for r in 0..(sp.warm + sp.iters) as u64 * 2 {
        if (r % 2) as usize == t {
            while turn.load(Ordering::Acquire) != r {
                std::thread::yield_now();
            }
            mark(t, 0, 0);
            drop(lock());
            mark(t, 0, 1);
            turn.store(r + 1, Ordering::Release);
        }
    }
}

/// One thread's part of `handoff` (thread 0 holds the lock first: `held`).
pub(crate) fn handoff<G>(t: usize, sp: &Spec, start: &Barrier, lock: impl Fn() -> G) {
    describe_stack(t);
    let mut g = (t == 0).then(&lock);
    start.wait();
    let (arrived, acquired) = (&HARNESS.arrived.0, &HARNESS.acquired.0);
    for r in 0..(sp.warm + sp.iters) as u64 * 2 {
        if (r % 2) as usize == t {
            while arrived.load(Ordering::Acquire) != r + 1 {
                std::thread::yield_now();
            }
            std::thread::sleep(Duration::from_millis(sp.sleep_ms));
            mark(t, 0, 0);
            drop(g.take());
            mark(t, 0, 1);
        } else {
            while acquired.load(Ordering::Acquire) != r {
                std::thread::yield_now();
            }
            arrived.store(r + 1, Ordering::Release);
            mark(t, 1, 0);
            g = Some(lock());
            mark(t, 1, 1);
            acquired.store(r + 1, Ordering::Release);
        }
    }
    drop(g);
}

/// One thread's part of a scenario, given the thread's way to lock object `o`.
pub(crate) struct Body<'a> {
    t: usize,
    sp: &'a Spec,
    start: &'a Barrier,
}

impl Body<'_> {
    fn go<G>(self, lock: impl Fn(usize) -> G) {
        let (t, sp) = (self.t, self.sp);
        match sp.scenario.as_str() {
            "uncontended" => own_object(t, sp, self.start, false, || lock(t)),
            "nested" => own_object(t, sp, self.start, true, || lock(t)),
            "alternate" => alternate(t, sp, self.start, || lock(0)),
            "fresh" => fresh(t, sp, self.start, lock),
            "handoff" => handoff(t, sp, self.start, || lock(0)),
            s => panic!("no scenario {s}"),
        }
    }
}

/// A kind of lock with its two objects: runs a thread's body with that thread's way to lock
/// (a protocol's attaches first). Generic, not boxed: a boxed guard would add the
/// allocator's lines to every region.
pub(crate) trait Kind: Sync {
    fn with_lock(&self, body: Body<'_>);
}

/// Runs `sp`'s scenario on two threads.
pub(crate) fn two_threads<K: Kind>(sp: &Spec, kind: &K) {
    let start = Barrier::new(2);
    std::thread::scope(|s| {
        for t in 0..2 {
            let start = &start;
            s.spawn(move || kind.with_lock(Body { t, sp, start }));
        }
    });
}

pub(crate) struct OnRuntime<'a, P: Protocol> {
    rt: &'a std::sync::Arc<Runtime<P>>,
    hs: &'a [Padded<P::Header>],
}

impl<P: Protocol> Kind for OnRuntime<'_, P>
where
    P::Header: Sync,
{
    fn with_lock(&self, body: Body<'_>) {
        let me = self.rt.attach().unwrap();
        body.go(|o| me.enter(&self.hs[o].0).unwrap());
    }
}

/// A lock that needs no attachment.
pub(crate) trait PlainLock: Sync + Default {
    type G<'a>
    where
        Self: 'a;
    fn lock(&self) -> Self::G<'_>;
}

impl PlainLock for objmon::Monitor<()> {
    type G<'a> = objmon::MonitorGuard<'a, ()>;
    fn lock(&self) -> Self::G<'_> {
        objmon::Monitor::lock(self)
    }
}

impl PlainLock for parking_lot::Mutex<()> {
    type G<'a> = parking_lot::MutexGuard<'a, ()>;
    fn lock(&self) -> Self::G<'_> {
        parking_lot::Mutex::lock(self)
    }
}

impl PlainLock for parking_lot::ReentrantMutex<()> {
    type G<'a> = parking_lot::ReentrantMutexGuard<'a, ()>;
    fn lock(&self) -> Self::G<'_> {
        parking_lot::ReentrantMutex::lock(self)
    }
}

impl PlainLock for std::sync::Mutex<()> {
    type G<'a> = std::sync::MutexGuard<'a, ()>;
    fn lock(&self) -> Self::G<'_> {
        std::sync::Mutex::lock(self).unwrap()
    }
}

/// The objects of a [`PlainLock`] ([`objects`]).
pub(crate) struct Plain<M>(Vec<Padded<M>>);

impl<M: PlainLock> Kind for Plain<M> {
    fn with_lock(&self, body: Body<'_>) {
        body.go(|o| self.0[o].0.lock());
    }
}

impl<M: PlainLock> Plain<M> {
    fn run(sp: &Spec) {
        let k = Plain((0..objects(sp)).map(|_| Padded::<M>::default()).collect());
        let n = std::mem::size_of::<M>();
        let objs: Vec<_> = k.0.iter().map(|o| (addr(&o.0), n)).collect();
        describe(&objs, None);
        two_threads(sp, &k);
    }
}

pub(crate) struct ProtocolWorkload {
    spec: Spec,
    done: bool,
}

impl ProtocolVisitor for ProtocolWorkload {
    fn visit<P: Protocol>(&mut self) {
        if P::NAME != self.spec.kind {
            return;
        }
        self.done = true;
        // SAFETY: this program installs no signal handler of its own and never moves or
        // frees a header while it is held (both live to the end of the scope that uses
        // them): the contracts of `new_unchecked` hold.
        let rt = unsafe { Runtime::<P>::new_unchecked(Config::default()) };
        let hs: Vec<Padded<P::Header>> = (0..objects(&self.spec))
            .map(|_| Padded::default())
            .collect();
        let n = std::mem::size_of::<P::Header>();
        let objs: Vec<_> = hs.iter().map(|o| (addr(&o.0), n)).collect();
        describe(&objs, Some((addr(&*rt), std::mem::size_of::<Runtime<P>>())));
        two_threads(&self.spec, &OnRuntime { rt: &rt, hs: &hs });
    }
}

/// Runs the workload `OBJMON_LINES_CHILD` names.
pub fn child(spec: &str) {
    let sp = Spec::from_env(spec);
    match sp.kind.as_str() {
        "monitor" => Plain::<objmon::Monitor<()>>::run(&sp),
        "parking_lot" if sp.scenario == "nested" => {
            Plain::<parking_lot::ReentrantMutex<()>>::run(&sp)
        }
        "parking_lot" => Plain::<parking_lot::Mutex<()>>::run(&sp),
        "std" => {
            assert!(sp.scenario != "nested", "std::sync::Mutex is not reentrant");
            Plain::<std::sync::Mutex<()>>::run(&sp)
        }
        _ => {
            let mut w = ProtocolWorkload {
                spec: sp.clone(),
                done: false,
            };
            objmon::vm::visit_all(&mut w);
            assert!(w.done, "no kind named {}", sp.kind);
        }
    }
}
