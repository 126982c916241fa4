//! `contended`: contended locking over the space a user meets, not one point.
//!
//! **What.** One lock shared by `t` threads; each loops `lock → critical section → unlock →
//! work between locks`, for every cell of threads × critical section × work between. The
//! critical section works ON the data behind the lock: `empty` (only the hand-off
//! bookkeeping, below), `50ns` and `1us` (a multiply-add chain over the 8 `u64`s behind the
//! lock). Work between locks is `none`, `100ns` or `1us` of thread-local arithmetic kept
//! alive with `black_box`. Both work loops are calibrated once at start, single-threaded
//! (iterations per target ns). Rows are user-facing types written as a user writes them
//! (`let g = m.lock(); …; drop(g)`): `Monitor<T>` (the default protocol), `Monitor<T, Thin>`,
//! `Monitor<T, Fable>`, `Monitor<T, Tasuki>`; `lightweight` through the vm API
//! (`Runtime::new_unchecked`, unsafe: `Monitor` refuses the protocol; no guard is ever
//! leaked here, which is its contract); anchors `parking_lot::Mutex`,
//! `parking_lot::ReentrantMutex` (data in `Cell`s, as for `Monitor`) and `std::sync::Mutex`.
//!
//! **Timing.** A cell-rep spawns its threads; each takes the lock once (attachment, bias
//! revocation, inflation happen before the clock), then all meet at a barrier. The main
//! thread reads `Instant` there, sleeps `--millis`, raises a stop flag; each thread reads
//! `Instant` when it sees the flag. **ns per lock+unlock** = (latest thread end − start) /
//! acquisitions of all threads: the aggregate (lower is better; a critical section of
//! `c` ns puts a floor of `c` under it).
//!
//! **Fairness.** One acquisition in [`SAMPLE`] per thread is timed from the `lock()` call to
//! the guard in hand, with the TSC (`_rdtsc`, calibrated against `Instant` at start; `Instant`
//! off x86_64); the longest wait is the max over the sampled ones. Share = fewest / most
//! acquisitions of one thread. A hand-off is an acquisition by another thread than the
//! previous holder: `last_owner` lives in the protected data and the critical section
//! compares and updates it (that compare is all `empty` does).
//!
//! **Stability.** Repetitions interleave: rep 1 of every (cell, row), then rep 2, … (rows
//! rotated each rep), so a burst of load hits every row alike. A cell's figure is the median
//! over reps, with min–max; spread = (max − min) / median, and a cell above [`UNSTABLE_PCT`]
//! is flagged unstable and never called a winner. The summary gives, per row and thread
//! count, the geometric mean over cells of the ratio to `parking_lot::Mutex` (min–max).

use serde::Serialize;
use std::cell::{Cell, UnsafeCell};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// Most threads `--threads` takes.
pub const MAX_THREADS: u64 = 256;

/// Shortest and longest `--millis`.
pub const MIN_MILLIS: u64 = 10;
/// See [`MIN_MILLIS`].
pub const MAX_MILLIS: u64 = 60_000;

/// One acquisition in `SAMPLE` of each thread has its wait timed.
pub const SAMPLE: u64 = 8;

/// Spread (%) above which a cell is unstable.
pub const UNSTABLE_PCT: f64 = 25.0;

/// `u64`s behind the lock.
const SLOTS: usize = 8;

/// No previous holder (before the first acquisition).
const NOBODY: usize = usize::MAX;

/// The critical section.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum, Serialize)]
pub enum Cs {
    /// Only the hand-off bookkeeping.
    #[value(name = "empty")]
    Empty,
    /// ~50 ns on the protected data.
    #[value(name = "50ns")]
    Ns50,
    /// ~1 µs on the protected data.
    #[value(name = "1us")]
    Us1,
}

/// The work between locks.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum, Serialize)]
pub enum Between {
    /// Lock again at once.
    #[value(name = "none")]
    None,
    /// ~100 ns of thread-local arithmetic.
    #[value(name = "100ns")]
    Ns100,
    /// ~1 µs of thread-local arithmetic.
    #[value(name = "1us")]
    Us1,
}

/// A row: a user-facing lock type.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum, Serialize)]
pub enum Row {
    /// `objmon::Monitor<T>` (the default protocol).
    #[value(name = "monitor")]
    Monitor,
    /// `objmon::Monitor<T, Thin>`.
    #[value(name = "thin")]
    Thin,
    /// `objmon::Monitor<T, Fable>`.
    #[value(name = "fable")]
    Fable,
    /// `objmon::Monitor<T, Tasuki>`.
    #[value(name = "tasuki")]
    Tasuki,
    /// `lightweight` through `objmon::vm` (`Runtime::new_unchecked`).
    #[value(name = "lightweight")]
    Lightweight,
    /// `parking_lot::Mutex<T>`: the denominator of the ratios.
    #[value(name = "parking_lot")]
    ParkingLot,
    /// `parking_lot::ReentrantMutex<T>` (data in `Cell`s).
    #[value(name = "parking_lot_reentrant")]
    ParkingLotReentrant,
    /// `std::sync::Mutex<T>`.
    #[value(name = "std_mutex")]
    StdMutex,
}

impl Cs {
    /// Every critical section, in matrix order.
    pub const ALL: [Cs; 3] = [Cs::Empty, Cs::Ns50, Cs::Us1];
    fn target_ns(self) -> f64 {
        match self {
            Cs::Empty => 0.0,
            Cs::Ns50 => 50.0,
            Cs::Us1 => 1000.0,
        }
    }
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Cs::Empty => "empty",
            Cs::Ns50 => "50ns",
            Cs::Us1 => "1us",
        }
    }
}

impl Between {
    /// Every work between locks, in matrix order.
    pub const ALL: [Between; 3] = [Between::None, Between::Ns100, Between::Us1];
    fn target_ns(self) -> f64 {
        match self {
            Between::None => 0.0,
            Between::Ns100 => 100.0,
            Between::Us1 => 1000.0,
        }
    }
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Between::None => "none",
            Between::Ns100 => "100ns",
            Between::Us1 => "1us",
        }
    }
}

impl Row {
    /// Every row, in table order.
    pub const ALL: [Row; 8] = [
        Row::Monitor,
        Row::Thin,
        Row::Fable,
        Row::Tasuki,
        Row::Lightweight,
        Row::ParkingLot,
        Row::ParkingLotReentrant,
        Row::StdMutex,
    ];
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Row::Monitor => "monitor",
            Row::Thin => "thin",
            Row::Fable => "fable",
            Row::Tasuki => "tasuki",
            Row::Lightweight => "lightweight",
            Row::ParkingLot => "parking_lot",
            Row::ParkingLotReentrant => "parking_lot_reentrant",
            Row::StdMutex => "std_mutex",
        }
    }
}

/// What to measure.
pub struct Config {
    /// Thread counts.
    pub threads: Vec<usize>,
    /// Critical sections.
    pub cs: Vec<Cs>,
    /// Work between locks.
    pub between: Vec<Between>,
    /// Rows, in column order.
    pub rows: Vec<Row>,
    /// Duration of one cell-rep.
    pub duration: Duration,
    /// Repetitions per cell and row.
    pub reps: usize,
}

// ---------------------------------------------------------------------------------------
// Statistics.

/// The median (mean of the middle two for an even count); NaN for none.
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if !v.len().is_multiple_of(2) {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// `(max − min) / median`, in percent (0 for one value).
pub fn spread_pct(xs: &[f64]) -> f64 {
    let (lo, hi) = min_max(xs);
    let m = median(xs);
    if m > 0.0 {
        100.0 * (hi - lo) / m
    } else {
        0.0
    }
}

/// The least and greatest of `xs` (NaN, NaN for none).
pub fn min_max(xs: &[f64]) -> (f64, f64) {
    xs.iter().fold((f64::NAN, f64::NAN), |(lo, hi), &x| {
        (lo.min(x), hi.max(x)) // f64::min/max ignore a NaN operand
    })
}

/// The geometric mean of positive `xs` (NaN for none).
pub fn geomean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp()
}

/// Records that `me` acquired the lock whose previous holder is in `last`; true if that is
/// a hand-off (a previous holder, and not `me`).
#[inline(always)]
pub fn hand_off(last: &Cell<usize>, me: usize) -> bool {
    let prev = last.get();
    if prev == me {
        return false;
    }
    last.set(me);
    prev != NOBODY
}

// ---------------------------------------------------------------------------------------
// Work loops and clocks.

/// The critical section: the hand-off bookkeeping, then `iters` multiply-adds on the
/// protected slots. Returns whether the acquisition was a hand-off.
#[inline(always)]
fn section(slots: &[Cell<u64>], last: &Cell<usize>, me: usize, iters: u64) -> bool {
    let h = hand_off(last, me);
    for i in 0..iters {
        let s = &slots[i as usize % SLOTS];
        s.set(s.get().wrapping_mul(0x5851_f42d_4c95_7f2d).wrapping_add(i));
    }
    h
}

/// Work between locks: `iters` steps of thread-local arithmetic, each through `black_box`.
#[inline(always)]
fn between(mut x: u64, iters: u64) -> u64 {
    for i in 0..iters {
        x = black_box(x.wrapping_mul(0x2545_f491_4f6c_dd1d).wrapping_add(i));
    }
    x
}

/// Nanoseconds per iteration of `f(n)`: the least of 5 timings of `n` iterations.
fn ns_per_iter(f: impl Fn(u64)) -> f64 {
    let n = 200_000;
    f(n);
    (0..5)
        .map(|_| {
            let t = Instant::now();
            f(n);
            t.elapsed().as_nanos() as f64 / n as f64
        })
        .fold(f64::INFINITY, f64::min)
}

/// Iterations of the two work loops per target: calibrated once.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Calibration {
    /// ns per critical-section iteration.
    pub cs_ns_per_iter: f64,
    /// ns per between-locks iteration.
    pub between_ns_per_iter: f64,
    /// TSC ticks per ns (1 when the clock is `Instant`).
    pub ticks_per_ns: f64,
}

impl Calibration {
    /// Times the work loops and the TSC (~100 ms).
    pub fn measure() -> Self {
        let data = Shared::new();
        let cs_ns_per_iter = ns_per_iter(|n| {
            section(&data.slots, &data.last, 0, n);
        });
        black_box(&data);
        let between_ns_per_iter = ns_per_iter(|n| {
            black_box(between(1, n));
        });
        let (i0, t0) = (Instant::now(), ticks());
        std::thread::sleep(Duration::from_millis(50));
        let (i1, t1) = (Instant::now(), ticks());
        let ticks_per_ns = if cfg!(target_arch = "x86_64") {
            (t1 - t0) as f64 / (i1 - i0).as_nanos() as f64
        } else {
            1.0
        };
        Calibration {
            cs_ns_per_iter,
            between_ns_per_iter,
            ticks_per_ns,
        }
    }
    fn iters(per_iter: f64, target_ns: f64) -> u64 {
        if target_ns == 0.0 {
            0
        } else {
            ((target_ns / per_iter).round() as u64).max(1)
        }
    }
    fn cs_iters(&self, cs: Cs) -> u64 {
        Self::iters(self.cs_ns_per_iter, cs.target_ns())
    }
    fn between_iters(&self, b: Between) -> u64 {
        Self::iters(self.between_ns_per_iter, b.target_ns())
    }
}

/// The wait clock: the TSC on x86_64, else ns since the first call.
#[inline(always)]
fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` exists on every x86_64 CPU and only reads the time-stamp counter.
        #[allow(unused_unsafe)]
        unsafe {
            std::arch::x86_64::_rdtsc()
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

// ---------------------------------------------------------------------------------------
// The protected data and the rows.

/// The data behind a reentrant lock (which gives `&T`): in `Cell`s, as a user writes it.
struct Shared {
    slots: [Cell<u64>; SLOTS],
    last: Cell<usize>,
}

impl Shared {
    fn new() -> Self {
        Shared {
            slots: std::array::from_fn(|i| Cell::new(i as u64)),
            last: Cell::new(NOBODY),
        }
    }
}

/// The data behind a non-reentrant mutex (which gives `&mut T`).
struct Plain {
    slots: [u64; SLOTS],
    last: usize,
}

impl Plain {
    fn new() -> Self {
        Plain {
            slots: std::array::from_fn(|i| i as u64),
            last: NOBODY,
        }
    }
    /// The critical section on `&mut` data (`Cell::from_mut` costs nothing).
    #[inline(always)]
    fn section(&mut self, me: usize, iters: u64) -> bool {
        let slots = Cell::from_mut(&mut self.slots[..]).as_slice_of_cells();
        section(slots, Cell::from_mut(&mut self.last), me, iters)
    }
}

/// A lock under test: per-thread state, and one round (lock, critical section, unlock).
trait Subject: Sync {
    /// What a thread keeps between rounds (the vm API's thread handle).
    type Local<'a>
    where
        Self: 'a;
    fn local(&self) -> Self::Local<'_>;
    /// One lock, critical section of `cs` iterations, unlock; `timed`: the wait in ticks
    /// (else 0), and whether it was a hand-off.
    fn round(&self, l: &Self::Local<'_>, me: usize, cs: u64, timed: bool) -> (u64, bool);
}

/// Times `$lock` (an expression giving the guard) when `$timed`.
macro_rules! timed_lock {
    ($timed:expr, $lock:expr) => {{
        let t0 = if $timed { ticks() } else { 0 };
        let g = $lock;
        let w = if $timed { ticks().wrapping_sub(t0) } else { 0 };
        (g, w)
    }};
}

impl<P: objmon::MonitorProtocol> Subject for objmon::Monitor<Shared, P> {
    type Local<'a> = ();
    fn local(&self) {}
    #[inline(always)]
    fn round(&self, _: &(), me: usize, cs: u64, timed: bool) -> (u64, bool) {
        let (g, w) = timed_lock!(timed, self.lock());
        let h = section(&g.slots, &g.last, me, cs);
        drop(g);
        (w, h)
    }
}

impl Subject for parking_lot::ReentrantMutex<Shared> {
    type Local<'a> = ();
    fn local(&self) {}
    #[inline(always)]
    fn round(&self, _: &(), me: usize, cs: u64, timed: bool) -> (u64, bool) {
        let (g, w) = timed_lock!(timed, self.lock());
        let h = section(&g.slots, &g.last, me, cs);
        drop(g);
        (w, h)
    }
}

impl Subject for parking_lot::Mutex<Plain> {
    type Local<'a> = ();
    fn local(&self) {}
    #[inline(always)]
    fn round(&self, _: &(), me: usize, cs: u64, timed: bool) -> (u64, bool) {
        let (mut g, w) = timed_lock!(timed, self.lock());
        let h = g.section(me, cs);
        drop(g);
        (w, h)
    }
}

impl Subject for std::sync::Mutex<Plain> {
    type Local<'a> = ();
    fn local(&self) {}
    #[inline(always)]
    fn round(&self, _: &(), me: usize, cs: u64, timed: bool) -> (u64, bool) {
        let (g, w) = timed_lock!(timed, self.lock());
        let mut g = g.expect("no thread panics holding the lock");
        let h = g.section(me, cs);
        drop(g);
        (w, h)
    }
}

/// `lightweight` through the vm API: a header beside the data, entered with a thread handle.
struct Lightweight {
    rt: Arc<objmon::vm::Runtime<objmon::Lightweight>>,
    header: <objmon::Lightweight as objmon::Protocol>::Header,
    data: UnsafeCell<Plain>,
}

// SAFETY: `data` is reached only inside `round`, while the thread holds `header`'s lock,
// which the protocol gives to one thread at a time with acquire/release ordering.
unsafe impl Sync for Lightweight {}

impl Lightweight {
    fn new() -> Self {
        // SAFETY: `lightweight`'s contract is that no header held through a leaked guard is
        // moved or freed; `round` drops every guard it takes, and the header does not move
        // while threads use it (they borrow `self`).
        let rt = unsafe { objmon::vm::Runtime::new_unchecked(Default::default()) };
        Lightweight {
            rt,
            header: Default::default(),
            data: UnsafeCell::new(Plain::new()),
        }
    }
}

impl Subject for Lightweight {
    type Local<'a> = objmon::vm::ThreadHandle<'a, objmon::Lightweight>;
    fn local(&self) -> Self::Local<'_> {
        self.rt.attach().expect("attach")
    }
    #[inline(always)]
    fn round(&self, me_h: &Self::Local<'_>, me: usize, cs: u64, timed: bool) -> (u64, bool) {
        let (g, w) = timed_lock!(timed, me_h.enter(&self.header).expect("enter"));
        // SAFETY: this thread holds the header's lock until `g` drops (see `Sync` above).
        let h = unsafe { &mut *self.data.get() }.section(me, cs);
        drop(g);
        (w, h)
    }
}

// ---------------------------------------------------------------------------------------
// One cell-rep.

/// One thread's account of a cell-rep.
struct ThreadOut {
    acquisitions: u64,
    hand_offs: u64,
    longest_wait_ticks: u64,
    end: Instant,
}

/// One cell-rep of one row.
#[derive(Clone, Copy, Debug)]
pub struct Rep {
    /// Wall ns / acquisitions of all threads.
    pub ns_per_acq: f64,
    /// The longest sampled wait, ns.
    pub longest_wait_ns: f64,
    /// Fewest / most acquisitions of one thread.
    pub share: f64,
    /// Hand-offs per second.
    pub hand_offs_per_s: f64,
}

/// Runs `threads` threads on `s` for `duration` (see the module's "Timing").
fn drive<S: Subject>(
    s: &S,
    threads: usize,
    cs: u64,
    btw: u64,
    duration: Duration,
    ticks_per_ns: f64,
) -> Rep {
    let start = Barrier::new(threads + 1);
    let stop = AtomicBool::new(false);
    let (t0, outs) = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..threads)
            .map(|me| {
                let (start, stop) = (&start, &stop);
                sc.spawn(move || {
                    let local = s.local();
                    s.round(&local, me, cs, false); // attach, revoke, inflate: off the clock
                    let mut out = ThreadOut {
                        acquisitions: 0,
                        hand_offs: 0,
                        longest_wait_ticks: 0,
                        end: Instant::now(),
                    };
                    let mut x = me as u64;
                    start.wait();
                    while !stop.load(Ordering::Relaxed) {
                        let timed = out.acquisitions.is_multiple_of(SAMPLE);
                        let (w, h) = s.round(&local, me, cs, timed);
                        out.longest_wait_ticks = out.longest_wait_ticks.max(w);
                        out.hand_offs += u64::from(h);
                        out.acquisitions += 1;
                        x = between(x, btw);
                    }
                    out.end = Instant::now();
                    black_box(x);
                    out
                })
            })
            .collect();
        start.wait();
        let t0 = Instant::now();
        std::thread::sleep(duration);
        stop.store(true, Ordering::Relaxed);
        let outs: Vec<ThreadOut> = hs
            .into_iter()
            .map(|h| h.join().expect("bench thread"))
            .collect();
        (t0, outs)
    });
    let wall = outs
        .iter()
        .map(|o| o.end.saturating_duration_since(t0))
        .max()
        .unwrap_or_default()
        .as_nanos() as f64;
    let total: u64 = outs.iter().map(|o| o.acquisitions).sum();
    let most = outs.iter().map(|o| o.acquisitions).max().unwrap_or(0);
    let fewest = outs.iter().map(|o| o.acquisitions).min().unwrap_or(0);
    let hand_offs: u64 = outs.iter().map(|o| o.hand_offs).sum();
    let longest = outs.iter().map(|o| o.longest_wait_ticks).max().unwrap_or(0);
    Rep {
        ns_per_acq: wall / total.max(1) as f64,
        longest_wait_ns: longest as f64 / ticks_per_ns,
        share: if most == 0 {
            0.0
        } else {
            fewest as f64 / most as f64
        },
        hand_offs_per_s: hand_offs as f64 / (wall / 1e9),
    }
}

/// One cell-rep of `row` on a fresh lock.
fn rep(row: Row, threads: usize, cs: u64, btw: u64, d: Duration, cal: &Calibration) -> Rep {
    let tpn = cal.ticks_per_ns;
    match row {
        Row::Monitor => {
            let m: objmon::Monitor<Shared> = objmon::Monitor::new(Shared::new());
            drive(&m, threads, cs, btw, d, tpn)
        }
        Row::Thin => {
            let m = objmon::Monitor::<_, objmon::Thin>::with_protocol(Shared::new());
            drive(&m, threads, cs, btw, d, tpn)
        }
        Row::Fable => {
            let m = objmon::Monitor::<_, objmon::Fable>::with_protocol(Shared::new());
            drive(&m, threads, cs, btw, d, tpn)
        }
        Row::Tasuki => {
            let m = objmon::Monitor::<_, objmon::Tasuki>::with_protocol(Shared::new());
            drive(&m, threads, cs, btw, d, tpn)
        }
        Row::Lightweight => drive(&Lightweight::new(), threads, cs, btw, d, tpn),
        Row::ParkingLot => drive(
            &parking_lot::Mutex::new(Plain::new()),
            threads,
            cs,
            btw,
            d,
            tpn,
        ),
        Row::ParkingLotReentrant => drive(
            &parking_lot::ReentrantMutex::new(Shared::new()),
            threads,
            cs,
            btw,
            d,
            tpn,
        ),
        Row::StdMutex => drive(
            &std::sync::Mutex::new(Plain::new()),
            threads,
            cs,
            btw,
            d,
            tpn,
        ),
    }
}

// ---------------------------------------------------------------------------------------
// The matrix.

/// One (threads, cs, between, row) over its reps.
#[derive(Clone, Debug, Serialize)]
pub struct CellResult {
    /// Threads.
    pub threads: usize,
    /// Critical section.
    pub cs: &'static str,
    /// Work between locks.
    pub between: &'static str,
    /// Row name.
    pub row: &'static str,
    /// Repetitions.
    pub reps: usize,
    /// Median ns per lock+unlock (aggregate).
    pub median_ns: f64,
    /// Least over reps.
    pub min_ns: f64,
    /// Greatest over reps.
    pub max_ns: f64,
    /// (max − min) / median, %.
    pub spread_pct: f64,
    /// Spread above [`UNSTABLE_PCT`].
    pub unstable: bool,
    /// Median over reps of the longest sampled wait, µs.
    pub wait_median_us: f64,
    /// Longest sampled wait of all reps, µs.
    pub wait_max_us: f64,
    /// Worst over reps of fewest / most acquisitions of one thread.
    pub share_min: f64,
    /// Median hand-offs per second.
    pub hand_offs_per_s: f64,
}

impl CellResult {
    fn new(threads: usize, cs: Cs, btw: Between, row: Row, reps: &[Rep]) -> Self {
        let ns: Vec<f64> = reps.iter().map(|r| r.ns_per_acq).collect();
        let waits: Vec<f64> = reps.iter().map(|r| r.longest_wait_ns / 1e3).collect();
        let (min_ns, max_ns) = min_max(&ns);
        let spread = spread_pct(&ns);
        CellResult {
            threads,
            cs: cs.name(),
            between: btw.name(),
            row: row.name(),
            reps: reps.len(),
            median_ns: median(&ns),
            min_ns,
            max_ns,
            spread_pct: spread,
            unstable: spread > UNSTABLE_PCT,
            wait_median_us: median(&waits),
            wait_max_us: min_max(&waits).1,
            share_min: min_max(&reps.iter().map(|r| r.share).collect::<Vec<_>>()).0,
            hand_offs_per_s: median(&reps.iter().map(|r| r.hand_offs_per_s).collect::<Vec<_>>()),
        }
    }
}

/// Runs the matrix, reps interleaved (progress on stderr); cells in (threads, cs, between,
/// row) order.
pub fn run(cfg: &Config, cal: &Calibration) -> Vec<CellResult> {
    let mut cells = Vec::new();
    for &t in &cfg.threads {
        for &c in &cfg.cs {
            for &b in &cfg.between {
                cells.push((t, c, b));
            }
        }
    }
    let n_rows = cfg.rows.len();
    let mut reps: Vec<Vec<Vec<Rep>>> = vec![vec![Vec::new(); n_rows]; cells.len()];
    for r in 0..cfg.reps {
        eprintln!(
            "contended: rep {}/{} ({} cells x {} rows x {} ms)",
            r + 1,
            cfg.reps,
            cells.len(),
            n_rows,
            cfg.duration.as_millis()
        );
        for (ci, &(t, c, b)) in cells.iter().enumerate() {
            for k in 0..n_rows {
                let ri = (k + r) % n_rows;
                let (csi, bi) = (cal.cs_iters(c), cal.between_iters(b));
                reps[ci][ri].push(rep(cfg.rows[ri], t, csi, bi, cfg.duration, cal));
            }
        }
    }
    let mut out = Vec::new();
    for (ci, &(t, c, b)) in cells.iter().enumerate() {
        for (ri, &row) in cfg.rows.iter().enumerate() {
            out.push(CellResult::new(t, c, b, row, &reps[ci][ri]));
        }
    }
    out
}

/// One row at one thread count, against `parking_lot::Mutex`.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Row name.
    pub row: &'static str,
    /// Threads.
    pub threads: usize,
    /// Cells with both this row and `parking_lot`.
    pub cells: usize,
    /// Cells where this row or `parking_lot` is unstable.
    pub unstable_cells: usize,
    /// Geometric mean over cells of median ns / `parking_lot`'s.
    pub ratio_geomean: f64,
    /// Least ratio.
    pub ratio_min: f64,
    /// Greatest ratio.
    pub ratio_max: f64,
    /// Geometric mean over cells of median longest wait / `parking_lot`'s.
    pub wait_ratio_geomean: f64,
    /// Longest sampled wait of any cell, µs.
    pub wait_max_us: f64,
}

/// The summary per (row, threads); empty without `parking_lot` rows.
pub fn summarize(cells: &[CellResult]) -> Vec<Summary> {
    let base = Row::ParkingLot.name();
    let find = |t: usize, c: &str, b: &str| {
        cells
            .iter()
            .find(|x| x.threads == t && x.cs == c && x.between == b && x.row == base)
    };
    let mut keys: Vec<(&'static str, usize)> = Vec::new();
    for c in cells {
        if !keys.contains(&(c.row, c.threads)) {
            keys.push((c.row, c.threads));
        }
    }
    keys.iter()
        .filter_map(|&(row, t)| {
            let pairs: Vec<(&CellResult, &CellResult)> = cells
                .iter()
                .filter(|c| c.row == row && c.threads == t)
                .filter_map(|c| find(t, c.cs, c.between).map(|b| (c, b)))
                .collect();
            if pairs.is_empty() {
                return None;
            }
            let ratios: Vec<f64> = pairs
                .iter()
                .map(|(c, b)| c.median_ns / b.median_ns)
                .collect();
            let waits: Vec<f64> = pairs
                .iter()
                .filter(|(c, b)| c.wait_median_us > 0.0 && b.wait_median_us > 0.0)
                .map(|(c, b)| c.wait_median_us / b.wait_median_us)
                .collect();
            let (lo, hi) = min_max(&ratios);
            Some(Summary {
                row,
                threads: t,
                cells: pairs.len(),
                unstable_cells: pairs
                    .iter()
                    .filter(|(c, b)| c.unstable || b.unstable)
                    .count(),
                ratio_geomean: geomean(&ratios),
                ratio_min: lo,
                ratio_max: hi,
                wait_ratio_geomean: geomean(&waits),
                wait_max_us: min_max(&pairs.iter().map(|(c, _)| c.wait_max_us).collect::<Vec<_>>())
                    .1,
            })
        })
        .collect()
}

/// The winner of the cells of one (threads, cs, between): the row of the lowest median,
/// unless that cell is unstable (then none).
pub fn winner<'a>(group: &[&'a CellResult]) -> Option<&'a CellResult> {
    let best = group
        .iter()
        .min_by(|a, b| a.median_ns.total_cmp(&b.median_ns))?;
    (!best.unstable).then_some(*best)
}

/// A figure in 3 significant digits (or an integer).
fn num(x: f64) -> String {
    if !x.is_finite() {
        "-".into()
    } else if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// Prints the tables and the summary.
pub fn print_table(cfg: &Config, cal: &Calibration, cells: &[CellResult]) {
    println!(
        "calibration: critical section {:.2} ns/iter, between {:.2} ns/iter, {:.3} TSC ticks/ns; \
         {} ms per cell-rep, {} reps interleaved",
        cal.cs_ns_per_iter,
        cal.between_ns_per_iter,
        cal.ticks_per_ns,
        cfg.duration.as_millis(),
        cfg.reps
    );
    let w = 14;
    for &t in &cfg.threads {
        println!();
        println!(
            "threads {t}: ns per lock+unlock (wall / acquisitions of all threads), median \
             (spread%); * unstable (spread > {UNSTABLE_PCT:.0}%)"
        );
        let mut head = format!("{:<6} {:<7}", "cs", "between");
        for r in &cfg.rows {
            head += &format!(" {:>w$}", short(r.name()));
        }
        println!("{head} {:>w$}", "winner");
        for &c in &cfg.cs {
            for &b in &cfg.between {
                let group: Vec<&CellResult> = cells
                    .iter()
                    .filter(|x| x.threads == t && x.cs == c.name() && x.between == b.name())
                    .collect();
                let mut line = format!("{:<6} {:<7}", c.name(), b.name());
                for x in &group {
                    let mark = if x.unstable { "*" } else { "" };
                    let s = format!("{} ({:.0}%){mark}", num(x.median_ns), x.spread_pct);
                    line += &format!(" {s:>w$}");
                }
                let win = winner(&group).map_or("unstable", |x| short(x.row));
                println!("{line} {win:>w$}");
            }
        }
        println!(
            "threads {t}: longest sampled wait µs (median over reps) / worst share (fewest / \
             most acquisitions of a thread) / hand-offs per ms"
        );
        println!("{head}");
        for &c in &cfg.cs {
            for &b in &cfg.between {
                let mut line = format!("{:<6} {:<7}", c.name(), b.name());
                for x in cells
                    .iter()
                    .filter(|x| x.threads == t && x.cs == c.name() && x.between == b.name())
                {
                    let s = format!(
                        "{}/{:.2}/{}",
                        num(x.wait_median_us),
                        x.share_min,
                        num(x.hand_offs_per_s / 1e3)
                    );
                    line += &format!(" {s:>w$}");
                }
                println!("{line}");
            }
        }
    }
    println!();
    let sums = summarize(cells);
    if sums.is_empty() {
        println!("summary: no parking_lot row selected, so no ratios (add --row parking_lot)");
        return;
    }
    println!(
        "summary: ratio to parking_lot::Mutex of the median ns per lock+unlock, geometric mean \
         over cells [min .. max]; longest wait, geometric-mean ratio to parking_lot's, and \
         the longest of any cell"
    );
    println!(
        "{:<22} {:>7} {:>6} {:>8} {:>17} {:>9} {:>10} {:>12}",
        "row", "threads", "cells", "ratio", "[min .. max]", "unstable", "wait ratio", "longest µs"
    );
    for s in &sums {
        println!(
            "{:<22} {:>7} {:>6} {:>8.2} {:>17} {:>9} {:>10.2} {:>12}",
            s.row,
            s.threads,
            s.cells,
            s.ratio_geomean,
            format!("[{:.2} .. {:.2}]", s.ratio_min, s.ratio_max),
            s.unstable_cells,
            s.wait_ratio_geomean,
            num(s.wait_max_us)
        );
    }
}

/// A column heading short enough for the table.
fn short(name: &str) -> &str {
    match name {
        "parking_lot_reentrant" => "pl_reentrant",
        n => n,
    }
}

/// CSV: the cells, a blank line, the summary.
pub fn print_csv(cells: &[CellResult]) {
    println!(
        "threads,cs,between,row,reps,median_ns,min_ns,max_ns,spread_pct,unstable,\
         wait_median_us,wait_max_us,share_min,hand_offs_per_s"
    );
    for c in cells {
        println!(
            "{},{},{},{},{},{:.3},{:.3},{:.3},{:.1},{},{:.2},{:.2},{:.3},{:.0}",
            c.threads,
            c.cs,
            c.between,
            c.row,
            c.reps,
            c.median_ns,
            c.min_ns,
            c.max_ns,
            c.spread_pct,
            c.unstable,
            c.wait_median_us,
            c.wait_max_us,
            c.share_min,
            c.hand_offs_per_s
        );
    }
    println!();
    println!(
        "summary_row,threads,cells,unstable_cells,ratio_geomean,ratio_min,ratio_max,\
         wait_ratio_geomean,wait_max_us"
    );
    for s in summarize(cells) {
        println!(
            "{},{},{},{},{:.3},{:.3},{:.3},{:.3},{:.2}",
            s.row,
            s.threads,
            s.cells,
            s.unstable_cells,
            s.ratio_geomean,
            s.ratio_min,
            s.ratio_max,
            s.wait_ratio_geomean,
            s.wait_max_us
        );
    }
}

/// JSON: one object per line, `{"cell": …}` then `{"summary": …}`.
pub fn print_json(cells: &[CellResult]) {
    #[derive(Serialize)]
    #[serde(rename_all = "snake_case")]
    enum Line<'a> {
        Cell(&'a CellResult),
        Summary(&'a Summary),
    }
    let line = |l: Line<'_>| serde_json::to_string(&l).expect("serializes");
    for c in cells {
        println!("{}", line(Line::Cell(c)));
    }
    for s in &summarize(cells) {
        println!("{}", line(Line::Summary(s)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_spread_geomean() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(min_max(&[2.0, 5.0, 1.0]), (1.0, 5.0));
        assert_eq!(spread_pct(&[90.0, 100.0, 110.0]), 20.0);
        assert_eq!(spread_pct(&[7.0]), 0.0);
        assert!((geomean(&[1.0, 4.0]) - 2.0).abs() < 1e-12);
        assert!((geomean(&[0.5, 2.0, 1.0]) - 1.0).abs() < 1e-12);
        assert!(geomean(&[]).is_nan());
    }

    #[test]
    fn hand_offs_count_changes_of_holder() {
        let last = Cell::new(NOBODY);
        let owners = [0, 0, 1, 1, 0, 2, 2, 2, 1];
        let n = owners.iter().filter(|&&me| hand_off(&last, me)).count();
        assert_eq!(n, 4, "the first acquisition has no previous holder");
        assert_eq!(last.get(), 1);
    }

    fn cell(row: Row, cs: Cs, ns: f64, spread: f64) -> CellResult {
        CellResult {
            threads: 2,
            cs: cs.name(),
            between: "none",
            row: row.name(),
            reps: 3,
            median_ns: ns,
            min_ns: ns,
            max_ns: ns,
            spread_pct: spread,
            unstable: spread > UNSTABLE_PCT,
            wait_median_us: ns,
            wait_max_us: ns,
            share_min: 1.0,
            hand_offs_per_s: 0.0,
        }
    }

    #[test]
    fn summary_is_the_geomean_of_ratios_to_parking_lot() {
        let cells = [
            cell(Row::Thin, Cs::Empty, 20.0, 5.0),
            cell(Row::ParkingLot, Cs::Empty, 10.0, 5.0),
            cell(Row::Thin, Cs::Us1, 500.0, 40.0),
            cell(Row::ParkingLot, Cs::Us1, 1000.0, 5.0),
        ];
        let s = summarize(&cells);
        let thin = s.iter().find(|s| s.row == "thin").unwrap();
        assert_eq!(thin.cells, 2);
        assert!((thin.ratio_geomean - 1.0).abs() < 1e-12); // sqrt(2 * 0.5)
        assert_eq!((thin.ratio_min, thin.ratio_max), (0.5, 2.0));
        assert_eq!(thin.unstable_cells, 1);
        assert_eq!(thin.wait_max_us, 500.0);
        let pl = s.iter().find(|s| s.row == "parking_lot").unwrap();
        assert_eq!(pl.ratio_geomean, 1.0);
        assert!(
            summarize(&cells[..1]).is_empty(),
            "no parking_lot, no summary"
        );
    }

    #[test]
    fn an_unstable_cell_is_never_the_winner() {
        let a = cell(Row::Thin, Cs::Empty, 5.0, 30.0);
        let b = cell(Row::ParkingLot, Cs::Empty, 10.0, 5.0);
        assert!(winner(&[&a, &b]).is_none());
        let a = cell(Row::Thin, Cs::Empty, 5.0, 10.0);
        assert_eq!(winner(&[&a, &b]).unwrap().row, "thin");
    }

    #[test]
    fn every_row_runs_and_counts() {
        let cal = Calibration {
            cs_ns_per_iter: 1.0,
            between_ns_per_iter: 1.0,
            ticks_per_ns: 1.0,
        };
        for row in Row::ALL {
            let r = rep(row, 2, 4, 4, Duration::from_millis(5), &cal);
            assert!(r.ns_per_acq > 0.0 && r.ns_per_acq.is_finite(), "{row:?}");
            assert!((0.0..=1.0).contains(&r.share), "{row:?}");
        }
    }
}
