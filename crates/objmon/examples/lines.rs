//! Cache lines per acquisition and per hand-off, counted by valgrind's lackey, not guessed.
//!
//! The program is its own driver: run without `OBJMON_LINES_CHILD` in its environment it
//! starts itself under `valgrind --tool=lackey --trace-mem=yes --trace-sched=yes
//! --fair-sched=yes` once per (kind, scenario), with `OBJMON_LINES_CHILD` naming the
//! workload, and reads lackey's trace back: every load and store (an access that straddles a
//! line counts both lines) attributed to the valgrind thread that the scheduler trace says is
//! running (`SCHED[n]: acquired lock`), and to 64-byte lines.
//!
//! ```sh
//! cargo build --release -p objmon --example lines
//! target/release/examples/lines                       # every kind, every scenario
//! target/release/examples/lines --kinds thin,fat --scenarios handoff --sites
//! target/release/examples/lines --markdown            # the table of docs/benchmarks.md
//! ```
//!
//! Workloads (always two threads, so that "shared" is measured): a region is the code between
//! two stores to a marker cell of the harness (one 64-byte line per thread, role and edge);
//! the first `--warm` regions of each thread and role are dropped, the next ones counted.
//!
//! - `uncontended`: each thread locks and unlocks its own object (one region: lock+unlock);
//! - `nested`: each thread holds its own object and locks and unlocks it again (the region is
//!   the inner lock+unlock; `parking_lot` uses `ReentrantMutex` here, `std` has none);
//! - `fresh`: each thread locks and unlocks, region by region, objects never locked before
//!   (an allocation's first lock: `fat` inflates here, every protocol's first use);
//! - `alternate`: both threads on one object, taking turns: each locks and unlocks it once
//!   after the other's unlock, nobody waiting (ownership moves, no contention);
//! - `handoff`: both threads on one object, ownership alternating: the waiter announces
//!   itself and calls lock; the owner waits for that, sleeps `--sleep-ms` (so the waiter
//!   reaches its spin or park), and unlocks. Regions: `release` (the owner's unlock call) and
//!   `acquire` (the waiter's whole lock call, its spin or park included).
//!
//! Per region: the distinct lines stored to (S or M) and loaded from (L or M). A line is
//! *shared* when both threads touched it inside counted regions: coherence traffic on more
//! cores. Lines are labelled `header` (the lock object's own bytes: its header word, or the
//! whole `Monitor` / `Mutex`), `runtime` (the `Runtime<P>` struct), `static` (the program's
//! data), `stack` (a thread's stack or TLS), `heap` (anything else: fat monitors, thread
//! records, the monitor table); with `--sites` each shared line written is also named by the
//! code that stored to it (`addr2line` on the storing instruction).
//!
//! Kinds: every `objmon::vm::names()` protocol on its own runtime (`Runtime::<P>` through
//! `ThreadHandle::enter`, the guard dropped), `monitor` (`objmon::Monitor<()>`, the default
//! protocol on the process-wide runtime), `parking_lot` and `std` (`std::sync::Mutex`).
//!
//! Figures are means over the counted regions (both threads pooled); the hand-off's depend
//! on what the waiter does in `--sleep-ms` under valgrind's speed (spin, yield, park), which
//! the output names by the lines it wrote. The harness's own cells (markers, the hand-off's
//! turn counters) are excluded by address. `tests/lines.rs` runs one kind, tiny, as a test.
//!
//! The analysis is in this file too (`measure`), so that the test includes it by path and
//! runs its own binary as the workload (`OBJMON_LINES_CHILD` set, `lines_child` selected).

use objmon::vm::{Config, Protocol, ProtocolVisitor, Runtime};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::Duration;

/// The environment variable that makes the program a workload: `KIND SCENARIO WARM ITERS
/// SLEEP_MS`.
pub const CHILD_ENV: &str = "OBJMON_LINES_CHILD";

/// The scenarios, in table order.
pub const SCENARIOS: [&str; 5] = ["uncontended", "nested", "fresh", "alternate", "handoff"];

/// The kinds beside the protocols.
pub const ANCHORS: [&str; 3] = ["monitor", "parking_lot", "std"];

// ---------------------------------------------------------------------------------------
// The workload (runs under valgrind)
// ---------------------------------------------------------------------------------------

/// One 64-byte line of the harness.
#[repr(C, align(64))]
struct Cell(AtomicU64);

/// The harness's cells: the hand-off's turn counters, then `marks[thread][role][edge]`.
#[repr(C, align(64))]
struct Harness {
    arrived: Cell,
    acquired: Cell,
    marks: [[[Cell; 2]; 2]; 2],
}

static HARNESS: Harness = Harness {
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
fn mark(t: usize, role: usize, edge: usize) {
    HARNESS.marks[t][role][edge].0.store(1, Ordering::Relaxed);
}

/// A lock object on a line of its own (two objects never share a line).
#[repr(C, align(128))]
#[derive(Default)]
struct Padded<T>(T);

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
    fn to_env(&self) -> String {
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

fn addr<T: ?Sized>(r: &T) -> usize {
    r as *const T as *const u8 as usize
}

/// Prints what the analysis needs to label lines: the objects, the runtime, the harness, the
/// program's mappings (for `static` and for `addr2line`).
fn describe(objects: &[(usize, usize)], runtime: Option<(usize, usize)>) {
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

fn describe_stack(t: usize) {
    let local = 0u8;
    println!("lines-stack {t} {:x}", addr(std::hint::black_box(&local)));
    std::io::stdout().flush().unwrap();
}

/// One thread's part of `uncontended` or `nested`, yielding between regions. Both threads
/// are attached (one lock
/// each) before either starts and stay attached until both are done: otherwise the second
/// could attach into the memory the first detached from, and its own record would look
/// shared.
fn own_object<G>(t: usize, sp: &Spec, start: &Barrier, nested: bool, lock: impl Fn() -> G) {
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
fn objects(sp: &Spec) -> usize {
    if sp.scenario == "fresh" {
        2 + 2 * (sp.warm + sp.iters)
    } else {
        2
    }
}

/// One thread's part of `fresh`: each region locks and unlocks an object never locked before
/// (an allocation's first lock), yielding between regions as `own_object`.
fn fresh<G>(t: usize, sp: &Spec, start: &Barrier, lock: impl Fn(usize) -> G) {
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
fn alternate<G>(t: usize, sp: &Spec, start: &Barrier, lock: impl Fn() -> G) {
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
fn handoff<G>(t: usize, sp: &Spec, start: &Barrier, lock: impl Fn() -> G) {
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
struct Body<'a> {
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
trait Kind: Sync {
    fn with_lock(&self, body: Body<'_>);
}

/// Runs `sp`'s scenario on two threads.
fn two_threads<K: Kind>(sp: &Spec, kind: &K) {
    let start = Barrier::new(2);
    std::thread::scope(|s| {
        for t in 0..2 {
            let start = &start;
            s.spawn(move || kind.with_lock(Body { t, sp, start }));
        }
    });
}

struct OnRuntime<'a, P: Protocol> {
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
trait PlainLock: Sync + Default {
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
struct Plain<M>(Vec<Padded<M>>);

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

struct ProtocolWorkload {
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

// ---------------------------------------------------------------------------------------
// The analysis (runs valgrind, reads the trace)
// ---------------------------------------------------------------------------------------

/// Whether `valgrind --tool=lackey` runs here.
pub fn lackey_available() -> bool {
    Command::new("valgrind")
        .args(["--tool=lackey", "--help"])
        .output()
        .map(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains("trace-mem"))
        .unwrap_or(false)
}

/// What the workload printed about its addresses.
#[derive(Default, Debug)]
struct Layout {
    objects: Vec<(u64, u64)>,
    runtime: Option<(u64, u64)>,
    harness: (u64, u64),
    marks: HashMap<u64, (usize, usize, usize)>,
    stacks: Vec<u64>,
    /// The program's mappings: start, end, file offset.
    maps: Vec<(u64, u64, u64)>,
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s, 16).unwrap_or_else(|_| panic!("hex {s}"))
}

impl Layout {
    fn parse(stdout: &str) -> Layout {
        let mut l = Layout::default();
        for line in stdout.lines() {
            // A test harness may print its own words before ours on the line.
            let Some(i) = line.find("lines-") else {
                continue;
            };
            let f: Vec<&str> = line[i..].split_whitespace().collect();
            match f.first().copied() {
                Some("lines-object") => l.objects.push((hex(f[1]), f[2].parse().unwrap())),
                Some("lines-runtime") => l.runtime = Some((hex(f[1]), f[2].parse().unwrap())),
                Some("lines-harness") => l.harness = (hex(f[1]), f[2].parse().unwrap()),
                Some("lines-mark") => {
                    let k = (
                        f[2].parse().unwrap(),
                        f[3].parse().unwrap(),
                        f[4].parse().unwrap(),
                    );
                    l.marks.insert(hex(f[1]), k);
                }
                Some("lines-stack") => l.stacks.push(hex(f[2])),
                Some("lines-map") => l.maps.push((hex(f[1]), hex(f[2]), hex(f[3]))),
                _ => {}
            }
        }
        l
    }

    fn excluded(&self, line: u64) -> bool {
        let (a, n) = self.harness;
        line >= a >> 6 && line <= (a + n - 1) >> 6
    }

    /// The label of a line (see the opening).
    fn label(&self, line: u64) -> &'static str {
        let (lo, hi) = (line << 6, (line << 6) + 63);
        let within = |a: u64, n: u64| a <= hi && a + n > lo;
        if self.objects.iter().any(|&(a, n)| within(a, n)) {
            "header"
        } else if self.runtime.is_some_and(|(a, n)| within(a, n)) {
            "runtime"
        } else if self.maps.iter().any(|&(s, e, _)| lo >= s && lo < e) {
            "static"
        } else if self
            .stacks
            .iter()
            .any(|&s| lo + (4 << 20) >= s && lo <= s + (256 << 10))
        {
            "stack"
        } else {
            "heap"
        }
    }

    /// The address `addr2line` wants for a run-time instruction address.
    fn file_address(&self, ip: u64) -> Option<u64> {
        let base = self.maps.iter().find(|m| m.2 == 0)?.0;
        self.maps
            .iter()
            .any(|&(s, e, _)| ip >= s && ip < e)
            .then(|| ip - base)
    }
}

/// One line's accesses inside one region.
#[derive(Clone, Default)]
struct Touch {
    /// Up to 6 distinct storing instructions (`OBJMON_LINES_ADDRS`).
    store_ips: Vec<u64>,
    loads: u32,
    stores: u32,
    /// The first instruction that stored to it, and that loaded from it.
    store_ip: u64,
    load_ip: u64,
    /// The bytes of the line loaded and stored (bit `i`: byte `i`).
    loaded: u64,
    stored: u64,
}

/// The bytes of line `l` that an access of `n` bytes at `a` covers.
fn byte_mask(l: u64, a: u64, n: u64) -> u64 {
    let lo = a.max(l << 6) - (l << 6);
    let hi = (a + n).min((l + 1) << 6) - (l << 6);
    let ones = |k: u64| if k >= 64 { u64::MAX } else { (1u64 << k) - 1 };
    ones(hi) & !ones(lo)
}

/// One thread's accesses to a line two threads touch: valgrind thread, bytes loaded, bytes
/// stored, first loading and storing instructions, the distinct storing instructions.
type Detail = (usize, u64, u64, u64, u64, Vec<u64>);

/// One region's touches, by line.
type Touches = HashMap<u64, Touch>;

/// The regions of one (thread, role), in order.
type Regions = Vec<Touches>;

/// Everything read from one trace.
struct Trace {
    regions: BTreeMap<(usize, usize), Regions>,
    /// Which valgrind threads touched each line inside regions (bit `tid % 64`), counted
    /// regions only (filled after the warm-up cut).
    touched_by: HashMap<u64, u64>,
    /// The same for stores only.
    written_by: HashMap<u64, u64>,
    /// Lines touched by two threads that never touch a byte the other stores to: false
    /// sharing (two threads' own data placed in one line), not counted as shared.
    falsely: std::collections::HashSet<u64>,
    /// Per line touched by two threads: each thread's bytes loaded and stored and its first
    /// loading and storing instructions (`OBJMON_LINES_ADDRS`).
    detail: HashMap<u64, Vec<Detail>>,
    /// Marks seen from a valgrind thread other than the one the thread's first mark came
    /// from (an attribution error; expected 0).
    misattributed: usize,
}

fn parse_trace(log: &Path, layout: &Layout, warm: usize) -> Trace {
    let f = BufReader::with_capacity(1 << 20, std::fs::File::open(log).expect("lackey log"));
    let mut tid = 0usize;
    let mut ip = 0u64;
    // Per valgrind thread: the open region's (thread, role) and its touches.
    let mut open: HashMap<usize, ((usize, usize), Touches)> = HashMap::new();
    // Per region: the valgrind thread that ran it (for `touched_by`).
    let mut regions: BTreeMap<(usize, usize), Vec<(usize, Touches)>> = BTreeMap::new();
    let mut thread_of: HashMap<usize, usize> = HashMap::new();
    let mut misattributed = 0;
    for line in f.split(b'\n') {
        let line = line.expect("read log");
        match line.first() {
            Some(b'I') => {
                let s = &line[1..];
                let s = std::str::from_utf8(s).unwrap().trim_start();
                ip = u64::from_str_radix(s.split(',').next().unwrap(), 16).unwrap_or(0);
            }
            Some(b' ') if line.len() > 3 => {
                let kind = line[1];
                if !matches!(kind, b'L' | b'S' | b'M') {
                    continue;
                }
                let s = std::str::from_utf8(&line[3..]).unwrap();
                let Some((a, n)) = s.split_once(',') else {
                    continue;
                };
                let a = u64::from_str_radix(a.trim(), 16).unwrap_or(0);
                let n: u64 = n.trim().parse().unwrap_or(1).max(1);
                let store = kind != b'L';
                if store {
                    if let Some(&(t, role, edge)) = layout.marks.get(&a) {
                        let first = *thread_of.entry(t).or_insert(tid);
                        if first != tid {
                            misattributed += 1;
                        }
                        if edge == 0 {
                            open.insert(tid, ((t, role), HashMap::new()));
                        } else if let Some((k, touches)) = open.remove(&tid) {
                            regions.entry(k).or_default().push((tid, touches));
                        }
                        continue;
                    }
                }
                if let Some((_, touches)) = open.get_mut(&tid) {
                    for l in (a >> 6)..=((a + n - 1) >> 6) {
                        if layout.excluded(l) {
                            continue;
                        }
                        let e = touches.entry(l).or_default();
                        let m = byte_mask(l, a, n);
                        if kind != b'S' {
                            if e.loads == 0 {
                                e.load_ip = ip;
                            }
                            e.loads += 1;
                            e.loaded |= m;
                        }
                        if store {
                            e.stored |= m;
                            if e.store_ips.len() < 6 && !e.store_ips.contains(&ip) {
                                e.store_ips.push(ip);
                            }
                            if e.stores == 0 {
                                e.store_ip = ip;
                            }
                            e.stores += 1;
                        }
                    }
                }
            }
            Some(b'-') => {
                // `--PID--   SCHED[n]:  acquired lock (...)`
                let s = String::from_utf8_lossy(&line);
                if let Some(i) = s.find("SCHED[") {
                    if s.contains("acquired lock") {
                        let r = &s[i + 6..];
                        if let Some(j) = r.find(']') {
                            tid = r[..j].parse().unwrap_or(tid);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let mut touched_by: HashMap<u64, u64> = HashMap::new();
    let mut written_by: HashMap<u64, u64> = HashMap::new();
    let mut bytes: HashMap<u64, HashMap<usize, (u64, u64)>> = HashMap::new();
    let mut first_ips: HashMap<(u64, usize), (u64, u64)> = HashMap::new();
    let mut all_store_ips: HashMap<(u64, usize), Vec<u64>> = HashMap::new();
    let mut out = BTreeMap::new();
    for (k, rs) in regions {
        let counted: Vec<_> = rs.into_iter().skip(warm).collect();
        for (tid, touches) in &counted {
            for (&l, t) in touches {
                *touched_by.entry(l).or_default() |= 1 << (tid % 64);
                let b = bytes.entry(l).or_default().entry(*tid).or_default();
                b.0 |= t.loaded;
                b.1 |= t.stored;
                let ips = first_ips.entry((l, *tid)).or_default();
                if ips.0 == 0 {
                    ips.0 = t.load_ip;
                }
                if ips.1 == 0 {
                    ips.1 = t.store_ip;
                }
                let all = all_store_ips.entry((l, *tid)).or_default();
                for &ip in &t.store_ips {
                    if all.len() < 6 && !all.contains(&ip) {
                        all.push(ip);
                    }
                }
                if t.stores > 0 {
                    *written_by.entry(l).or_default() |= 1 << (tid % 64);
                }
            }
        }
        out.insert(k, counted.into_iter().map(|(_, t)| t).collect());
    }
    // Falsely shared: touched by two threads, but no byte one of them stores is touched by
    // another.
    let falsely: std::collections::HashSet<u64> = bytes
        .iter()
        .filter(|(_, per)| per.len() >= 2)
        .filter(|(_, per)| {
            !per.iter().any(|(t, &(_, w))| {
                per.iter()
                    .any(|(u, &(r2, w2))| u != t && (w & (r2 | w2)) != 0)
            })
        })
        .map(|(&l, _)| l)
        .collect();
    let detail = bytes
        .into_iter()
        .filter(|(_, per)| per.len() >= 2)
        .map(|(l, per)| {
            let v = per
                .into_iter()
                .map(|(tid, (r, w))| {
                    let (li, si) = first_ips.get(&(l, tid)).copied().unwrap_or_default();
                    let all = all_store_ips.remove(&(l, tid)).unwrap_or_default();
                    (tid, r, w, li, si, all)
                })
                .collect();
            (l, v)
        })
        .collect();
    Trace {
        regions: out,
        touched_by,
        written_by,
        falsely,
        detail,
        misattributed,
    }
}

/// The figures of one role of one run.
#[derive(Clone, Debug, Default)]
pub struct RoleFigures {
    pub role: String,
    pub regions: usize,
    /// Mean distinct lines per region: written, of them shared; read, of them shared.
    pub written: f64,
    pub written_shared: f64,
    /// Mean distinct lines written per region that another thread touches at other bytes
    /// only (false sharing: placement, not protocol).
    pub written_false: f64,
    pub read: f64,
    pub read_shared: f64,
    /// Mean distinct written lines per region by label.
    pub written_by_label: BTreeMap<&'static str, f64>,
    /// Mean distinct read lines per region by label.
    pub read_by_label: BTreeMap<&'static str, f64>,
    /// Shared lines written: label, in what fraction of the regions, the storing site.
    pub shared_sites: Vec<(String, f64, String)>,
}

/// The figures of one (kind, scenario).
#[derive(Clone, Debug, Default)]
pub struct Figures {
    pub kind: String,
    pub scenario: String,
    pub roles: Vec<RoleFigures>,
    pub misattributed: usize,
}

fn role_name(scenario: &str, role: usize) -> &'static str {
    match (scenario, role) {
        ("handoff", 0) => "release",
        ("handoff", _) => "acquire",
        ("nested", _) => "nested lock+unlock",
        ("alternate", _) => "lock+unlock after the other",
        ("fresh", _) => "first lock+unlock",
        _ => "lock+unlock",
    }
}

/// `addr2line` names for instruction addresses: the innermost frame outside the standard
/// library, as `function (file:line)`.
fn symbolize(exe: &Path, layout: &Layout, ips: &[u64]) -> HashMap<u64, String> {
    let mut names = HashMap::new();
    let wanted: Vec<(u64, u64)> = ips
        .iter()
        .filter_map(|&ip| layout.file_address(ip).map(|a| (ip, a)))
        .collect();
    if wanted.is_empty() {
        return names;
    }
    let out = Command::new("addr2line")
        .arg("-a")
        .arg("-f")
        .arg("-C")
        .arg("-i")
        .arg("-e")
        .arg(exe)
        .args(wanted.iter().map(|(_, a)| format!("{a:#x}")))
        .output();
    let Ok(out) = out else {
        return names;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let by_file: HashMap<u64, u64> = wanted.iter().map(|&(ip, a)| (a, ip)).collect();
    let mut cur: Option<u64> = None;
    let mut frames: Vec<(String, String)> = Vec::new();
    let mut func: Option<String> = None;
    let mut flush = |cur: Option<u64>, frames: &mut Vec<(String, String)>| {
        if let Some(a) = cur {
            let pick = frames
                .iter()
                .find(|(_, f)| {
                    !f.starts_with("/rustc/")
                        && !f.contains("/library/")
                        && !f.ends_with("lines.rs")
                })
                .or(frames.first());
            if let (Some((fun, file)), Some(&ip)) = (pick, by_file.get(&a)) {
                let file = file
                    .rsplit_once("crates/")
                    .map(|(_, f)| f.to_string())
                    .or_else(|| {
                        file.find("/src/")
                            .and_then(|i| file[..i].rsplit('/').next().map(|c| (c, &file[i..])))
                            .map(|(c, rest)| format!("{c}{rest}"))
                    })
                    .unwrap_or_else(|| file.clone());
                let fun = fun.split('<').next().unwrap_or(fun).trim_end_matches("::");
                names.insert(ip, format!("{fun} ({file})"));
            }
        }
        frames.clear();
    };
    for l in text.lines() {
        if let Some(a) = l.strip_prefix("0x") {
            flush(cur, &mut frames);
            cur = u64::from_str_radix(a, 16).ok();
            func = None;
        } else if let Some(f) = func.take() {
            let file = l.split(" (discriminator").next().unwrap_or(l).to_string();
            frames.push((f, file));
        } else {
            func = Some(l.to_string());
        }
    }
    flush(cur, &mut frames);
    names
}

/// Runs `spec` under lackey (`exe` with `exe_args` is the workload program; it must run
/// [`child`] when [`CHILD_ENV`] is set) and counts.
pub fn measure(exe: &Path, exe_args: &[&str], spec: &Spec) -> Result<Figures, String> {
    let dir = std::env::temp_dir();
    let log: PathBuf = dir.join(format!(
        "objmon-lines-{}-{}-{}.log",
        std::process::id(),
        spec.kind,
        spec.scenario
    ));
    let out = Command::new("valgrind")
        .arg("--tool=lackey")
        .arg("--trace-mem=yes")
        .arg("--trace-sched=yes")
        .arg("--fair-sched=yes")
        .arg(format!("--log-file={}", log.display()))
        .arg(exe)
        .args(exe_args)
        .env(CHILD_ENV, spec.to_env())
        .output()
        .map_err(|e| format!("valgrind: {e}"))?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&log);
        return Err(format!(
            "{} {}: the workload failed: {}",
            spec.kind,
            spec.scenario,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let layout = Layout::parse(&String::from_utf8_lossy(&out.stdout));
    if layout.marks.is_empty() {
        let _ = std::fs::remove_file(&log);
        return Err(format!(
            "{} {}: no layout printed",
            spec.kind, spec.scenario
        ));
    }
    let trace = parse_trace(&log, &layout, spec.warm);
    let _ = std::fs::remove_file(&log);
    let shared = |l: &u64| {
        trace.touched_by.get(l).is_some_and(|m| m.count_ones() >= 2) && !trace.falsely.contains(l)
    };
    let falsely = |l: &u64| trace.falsely.contains(l);
    let mut fig = Figures {
        kind: spec.kind.clone(),
        scenario: spec.scenario.clone(),
        misattributed: trace.misattributed,
        ..Figures::default()
    };
    let roles: Vec<usize> = {
        let mut r: Vec<usize> = trace.regions.keys().map(|k| k.1).collect();
        r.sort();
        r.dedup();
        r
    };
    let mut ips = Vec::new();
    let mut per_role = Vec::new();
    for role in roles {
        let rs: Vec<&HashMap<u64, Touch>> = trace
            .regions
            .iter()
            .filter(|(k, _)| k.1 == role)
            .flat_map(|(_, v)| v.iter())
            .collect();
        let n = rs.len().max(1) as f64;
        let mut f = RoleFigures {
            role: role_name(&spec.scenario, role).into(),
            regions: rs.len(),
            ..RoleFigures::default()
        };
        // Shared lines written: how many regions wrote each, and its first storing site.
        let mut sites: BTreeMap<u64, (usize, u64)> = BTreeMap::new();
        for r in &rs {
            for (l, t) in r.iter() {
                if t.stores > 0 {
                    f.written += 1.0;
                    *f.written_by_label.entry(layout.label(*l)).or_default() += 1.0;
                    if shared(l) || falsely(l) {
                        if falsely(l) {
                            f.written_false += 1.0;
                        } else {
                            f.written_shared += 1.0;
                        }
                        let e = sites.entry(*l).or_insert((0, t.store_ip));
                        e.0 += 1;
                    }
                }
                if t.loads > 0 {
                    f.read += 1.0;
                    *f.read_by_label.entry(layout.label(*l)).or_default() += 1.0;
                    if shared(l) {
                        f.read_shared += 1.0;
                    }
                }
            }
        }
        f.written /= n;
        f.written_shared /= n;
        f.written_false /= n;
        f.read /= n;
        f.read_shared /= n;
        for v in f
            .written_by_label
            .values_mut()
            .chain(f.read_by_label.values_mut())
        {
            *v /= n;
        }
        ips.extend(sites.values().map(|s| s.1));
        for l in sites.keys() {
            for d in trace.detail.get(l).into_iter().flatten() {
                ips.extend([d.3, d.4]);
                ips.extend(d.5.iter().copied());
            }
        }
        per_role.push((f, sites, n));
    }
    let names = symbolize(exe, &layout, &ips);
    for (mut f, sites, n) in per_role {
        // Lines of the same kind written by the same code are one entry (each thread's own
        // copy of a per-thread line, say), their shares summed.
        let mut merged: BTreeMap<(String, String), usize> = BTreeMap::new();
        for (l, (count, ip)) in sites {
            if std::env::var_os("OBJMON_LINES_ADDRS").is_some() {
                eprintln!(
                    "{} {} {}: line {:#x} ({}) touched by {:#b}, written by {:#b}, {count}/{n} regions, first store {}",
                    spec.kind,
                    spec.scenario,
                    f.role,
                    l << 6,
                    layout.label(l),
                    trace.touched_by.get(&l).copied().unwrap_or(0),
                    trace.written_by.get(&l).copied().unwrap_or(0),
                    names.get(&ip).cloned().unwrap_or_else(|| format!("{ip:#x}"))
                );
                let name = |ip: u64| {
                    names
                        .get(&ip)
                        .cloned()
                        .unwrap_or_else(|| format!("{ip:#x}"))
                };
                for (tid, r, w, li, si, all) in trace.detail.get(&l).into_iter().flatten() {
                    eprintln!(
                        "    thread {tid}: loads {r:#018x} first at {}, stores {w:#018x} first at {}",
                        name(*li),
                        name(*si)
                    );
                    for ip in all {
                        eprintln!("        stores at {}", name(*ip));
                    }
                }
            }
            let label = match layout.label(l) {
                "header" => "header".to_string(),
                "runtime" => {
                    let off = (l << 6) as i64 - layout.runtime.unwrap().0 as i64;
                    format!("runtime {off:+}")
                }
                other => other.to_string(),
            };
            let both = trace
                .written_by
                .get(&l)
                .is_some_and(|m| m.count_ones() >= 2);
            let label = format!(
                "{label}, {}{}",
                if both {
                    "written by both"
                } else {
                    "read by the other"
                },
                if falsely(&l) { ", FALSE sharing" } else { "" }
            );
            let site = names
                .get(&ip)
                .cloned()
                .unwrap_or_else(|| format!("{ip:#x}"));
            *merged.entry((label, site)).or_default() += count;
        }
        for ((label, site), count) in merged {
            f.shared_sites.push((label, count as f64 / n, site));
        }
        fig.roles.push(f);
    }
    Ok(fig)
}

// ---------------------------------------------------------------------------------------
// The driver
// ---------------------------------------------------------------------------------------

fn all_kinds() -> Vec<String> {
    let mut v: Vec<String> = vec!["monitor".into()];
    v.extend(objmon::vm::names().into_iter().map(String::from));
    v.extend(["parking_lot", "std"].map(String::from));
    v
}

fn print_figures(fig: &Figures, sites: bool) {
    for r in &fig.roles {
        let by = |m: &BTreeMap<&str, f64>| {
            m.iter()
                .map(|(k, v)| format!("{k} {v:.1}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        println!(
            "{:<18} {:<12} {:<19} n={:<4} written {:>5.1} (shared {:>4.1}, false {:>3.1})  read {:>5.1} (shared {:>4.1})  written: {}; read: {}",
            fig.kind,
            fig.scenario,
            r.role,
            r.regions,
            r.written,
            r.written_shared,
            r.written_false,
            r.read,
            r.read_shared,
            by(&r.written_by_label),
            by(&r.read_by_label)
        );
        if sites {
            for (label, frac, site) in &r.shared_sites {
                println!(
                    "    shared, written in {:>4.0}% of regions: {label}: {site}",
                    frac * 100.0
                );
            }
        }
    }
    if fig.misattributed > 0 {
        println!(
            "    ({} marks from an unexpected thread)",
            fig.misattributed
        );
    }
}

fn markdown(all: &[Figures]) {
    println!();
    println!("| kind | lock+unlock: written (shared) | read (shared) | nested: written (shared) | first lock: written (shared) | alternating: written (shared) | hand-off release: written (shared) | hand-off acquire: written (shared) | acquire: read (shared) |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut kinds: Vec<&str> = Vec::new();
    for f in all {
        if !kinds.contains(&f.kind.as_str()) {
            kinds.push(&f.kind);
        }
    }
    for k in kinds {
        let get = |sc: &str, role: &str| {
            all.iter()
                .find(|f| f.kind == k && f.scenario == sc)
                .and_then(|f| f.roles.iter().find(|r| r.role == role))
        };
        let w = |r: Option<&RoleFigures>| {
            r.map_or("—".into(), |r| {
                let f = if r.written_false > 0.0 {
                    format!(" +{:.1} false", r.written_false)
                } else {
                    String::new()
                };
                format!("{:.1} ({:.1}{f})", r.written, r.written_shared)
            })
        };
        let rd = |r: Option<&RoleFigures>| {
            r.map_or("—".into(), |r| {
                format!("{:.1} ({:.1})", r.read, r.read_shared)
            })
        };
        println!(
            "| `{k}` | {} | {} | {} | {} | {} | {} | {} | {} |",
            w(get("uncontended", "lock+unlock")),
            rd(get("uncontended", "lock+unlock")),
            w(get("nested", "nested lock+unlock")),
            w(get("fresh", "first lock+unlock")),
            w(get("alternate", "lock+unlock after the other")),
            w(get("handoff", "release")),
            w(get("handoff", "acquire")),
            rd(get("handoff", "acquire")),
        );
    }
}

fn main() {
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        child(&spec);
        return;
    }
    let mut kinds = all_kinds();
    let mut scenarios: Vec<String> = SCENARIOS.map(String::from).to_vec();
    let (mut warm, mut iters, mut rounds, mut sleep_ms) = (20, 200, 8, 30);
    let (mut md, mut sites) = (false, false);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--kinds" => kinds = val().split(',').map(String::from).collect(),
            "--scenarios" => scenarios = val().split(',').map(String::from).collect(),
            "--warm" => warm = val().parse().expect("--warm"),
            "--iters" => iters = val().parse().expect("--iters"),
            "--rounds" => rounds = val().parse().expect("--rounds"),
            "--sleep-ms" => sleep_ms = val().parse().expect("--sleep-ms"),
            "--markdown" => md = true,
            "--sites" => sites = true,
            _ => panic!("unknown argument {a} (see the opening of examples/lines.rs)"),
        }
    }
    assert!(
        lackey_available(),
        "valgrind --tool=lackey is not installed"
    );
    let exe = std::env::current_exe().expect("current_exe");
    let mut all = Vec::new();
    for k in &kinds {
        for sc in &scenarios {
            if k == "std" && sc == "nested" {
                continue;
            }
            let (w, n) = match sc.as_str() {
                "handoff" => (2, rounds),
                "alternate" | "fresh" => (warm.min(5), iters.min(50)),
                _ => (warm, iters),
            };
            let spec = Spec {
                kind: k.clone(),
                scenario: sc.clone(),
                warm: w,
                iters: n,
                sleep_ms,
            };
            match measure(&exe, &[], &spec) {
                Ok(f) => {
                    print_figures(&f, sites);
                    all.push(f);
                }
                Err(e) => println!("{e}"),
            }
        }
    }
    if md {
        markdown(&all);
    }
}
