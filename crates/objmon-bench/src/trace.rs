//! Monitor traces of real Java programs: the parser of the recorder's format
//! (`java/agent/FORMAT.md`), the seeds' characterization of a program's locking (seed 000
//! Table 1 and Figure 3; seed 003 Tables 2–5), and [`replay`] of a trace's threads against an
//! objmon runtime or an anchor ([`replay_anchor`]: `objmon::Monitor<()>`, `std::sync::Mutex`,
//! `parking_lot::ReentrantMutex`), all through one driver.
//!
//! Every figure is computed from the operation events sorted by their global sequence number,
//! which the recorder takes while the object's monitor is held: per object this is the order
//! the JVM performed the operations in, and across objects an interleaving consistent with
//! every monitor's ownership.

use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;

/// The kind of a recorded monitor operation (FORMAT.md's kinds 1–9).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Kind {
    /// `monitorenter` of a synchronized block (recorded after it succeeded).
    Enter,
    /// `monitorexit` (recorded before it).
    Exit,
    /// Entry of a synchronized method.
    MethodEnter,
    /// Normal return of a synchronized method.
    MethodExit,
    /// A synchronized method left by an exception.
    MethodExitExc,
    /// `wait` begins (the monitor is about to be released).
    Wait,
    /// `wait` ended (the monitor is held again).
    WaitEnd,
    /// `notify`.
    Notify,
    /// `notifyAll`.
    NotifyAll,
}

impl Kind {
    fn from_code(c: u8) -> Option<Kind> {
        Some(match c {
            1 => Kind::Enter,
            2 => Kind::Exit,
            3 => Kind::MethodEnter,
            4 => Kind::MethodExit,
            5 => Kind::MethodExitExc,
            6 => Kind::Wait,
            7 => Kind::WaitEnd,
            8 => Kind::Notify,
            9 => Kind::NotifyAll,
            _ => return None,
        })
    }

    /// A lock operation (the monitor's recursion count goes up by one).
    pub fn is_lock(self) -> bool {
        matches!(self, Kind::Enter | Kind::MethodEnter)
    }

    /// An unlock operation (the count goes down by one).
    pub fn is_unlock(self) -> bool {
        matches!(self, Kind::Exit | Kind::MethodExit | Kind::MethodExitExc)
    }
}

/// How a `wait` ended (WAIT_END's outcome byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum WaitOutcome {
    /// Returned normally: notified, timed out or woken spuriously (not observable which).
    Returned,
    /// Threw `InterruptedException`.
    Interrupted,
    /// Threw something else (e.g. `IllegalMonitorStateException`).
    Threw,
}

/// One recorded monitor operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Event {
    /// Global sequence number (unique; see the module docs).
    pub seq: u64,
    /// `System.nanoTime()` at the record.
    pub time: i64,
    /// Recorder thread id (an index into [`Trace::threads`]).
    pub tid: u32,
    /// What happened.
    pub kind: Kind,
    /// Object id (≥ 1).
    pub obj: u64,
    /// For [`Kind::Wait`]: the timeout in ms (0 = none) and extra ns.
    pub timeout_ms: i64,
    /// For [`Kind::Wait`]: the timeout's nanosecond part.
    pub timeout_ns: i64,
    /// For [`Kind::WaitEnd`]: how it ended.
    pub outcome: Option<WaitOutcome>,
}

/// A recorded thread.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ThreadInfo {
    /// Recorder thread id.
    pub tid: u32,
    /// `Thread.threadId()`.
    pub java_id: u64,
    /// `Thread.getName()` at its first event.
    pub name: String,
}

/// A parsed trace.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    /// Agent options string from the header.
    pub options: String,
    /// Threads, in order of their THREAD_INFO records.
    pub threads: Vec<ThreadInfo>,
    /// Every operation event, sorted by `seq`.
    pub events: Vec<Event>,
    /// Object id → class id (from OBJ_NEW).
    pub object_class: HashMap<u64, u32>,
    /// Class id → name (from CLASS_DEF).
    pub class_names: HashMap<u32, String>,
    /// The recorder's STATS record.
    pub stats: BTreeMap<String, u64>,
    /// The END record was present (the JVM exited normally).
    pub complete: bool,
}

/// A malformed trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError(pub String);

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bad trace: {}", self.0)
    }
}

impl std::error::Error for TraceError {}

struct Reader<'a> {
    d: &'a [u8],
    p: usize,
}

impl<'a> Reader<'a> {
    fn u8(&mut self) -> Result<u8, TraceError> {
        let b = *self
            .d
            .get(self.p)
            .ok_or_else(|| TraceError(format!("truncated at byte {}", self.p)))?;
        self.p += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64, TraceError> {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let b = self.u8()?;
            if shift >= 64 {
                return Err(TraceError(format!("varint too long at byte {}", self.p)));
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
        }
    }

    fn zigzag(&mut self) -> Result<i64, TraceError> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], TraceError> {
        let end = self
            .p
            .checked_add(n)
            .filter(|&e| e <= self.d.len())
            .ok_or_else(|| TraceError(format!("truncated string at byte {}", self.p)))?;
        let s = &self.d[self.p..end];
        self.p = end;
        Ok(s)
    }

    fn string(&mut self) -> Result<String, TraceError> {
        let n = self.varint()? as usize;
        Ok(String::from_utf8_lossy(self.bytes(n)?).into_owned())
    }
}

/// Parses a trace (FORMAT.md, version 1).
pub fn parse(data: &[u8]) -> Result<Trace, TraceError> {
    if data.len() < 8 || &data[..8] != b"OBJMONT1" {
        return Err(TraceError("no OBJMONT1 magic".into()));
    }
    let mut r = Reader { d: data, p: 8 };
    let version = r.varint()?;
    if version != 1 {
        return Err(TraceError(format!("unsupported version {version}")));
    }
    r.varint()?; // start nanoTime
    r.varint()?; // start wall-clock ms
    let mut t = Trace {
        options: r.string()?,
        ..Trace::default()
    };
    while r.p < data.len() && !t.complete {
        match r.u8()? {
            1 => {
                let tid = r.varint()? as u32;
                let len = r.varint()? as usize;
                let body = r.bytes(len)?;
                parse_block(tid, body, &mut t)?;
            }
            2 => {
                let tid = r.varint()? as u32;
                let java_id = r.varint()?;
                let name = r.string()?;
                t.threads.push(ThreadInfo { tid, java_id, name });
            }
            3 => {
                let n = r.varint()?;
                for _ in 0..n {
                    let k = r.string()?;
                    let v = r.varint()?;
                    t.stats.insert(k, v);
                }
            }
            0xff => t.complete = true,
            tag => {
                return Err(TraceError(format!(
                    "unknown record tag {tag} at byte {}",
                    r.p - 1
                )))
            }
        }
    }
    t.events.sort_by_key(|e| e.seq);
    if t.events.windows(2).any(|w| w[0].seq == w[1].seq) {
        return Err(TraceError("duplicate sequence numbers".into()));
    }
    Ok(t)
}

fn parse_block(tid: u32, body: &[u8], t: &mut Trace) -> Result<(), TraceError> {
    let mut r = Reader { d: body, p: 0 };
    let (mut seq, mut time) = (0u64, 0i64);
    while r.p < body.len() {
        let code = r.u8()?;
        match code {
            0x40 => {
                let obj = r.varint()?;
                let class = r.varint()? as u32;
                t.object_class.insert(obj, class);
            }
            0x41 => {
                let class = r.varint()? as u32;
                let name = r.string()?;
                t.class_names.insert(class, name);
            }
            _ => {
                let kind = Kind::from_code(code).ok_or_else(|| {
                    TraceError(format!("unknown event kind {code} (thread {tid})"))
                })?;
                seq = seq.wrapping_add(r.varint()?);
                time = time.wrapping_add(r.zigzag()?);
                let obj = r.varint()?;
                let mut e = Event {
                    seq,
                    time,
                    tid,
                    kind,
                    obj,
                    timeout_ms: 0,
                    timeout_ns: 0,
                    outcome: None,
                };
                match kind {
                    Kind::Wait => {
                        e.timeout_ms = r.zigzag()?;
                        e.timeout_ns = r.zigzag()?;
                    }
                    Kind::WaitEnd => {
                        e.outcome = Some(match r.u8()? {
                            0 => WaitOutcome::Returned,
                            1 => WaitOutcome::Interrupted,
                            _ => WaitOutcome::Threw,
                        });
                    }
                    _ => {}
                }
                t.events.push(e);
            }
        }
    }
    Ok(())
}

/// Reads and parses a trace file.
pub fn read(path: &Path) -> Result<Trace, Box<dyn std::error::Error>> {
    Ok(parse(&std::fs::read(path)?)?)
}

impl Trace {
    /// The class name of an object (`?` if unknown).
    pub fn class_of(&self, obj: u64) -> &str {
        self.object_class
            .get(&obj)
            .and_then(|c| self.class_names.get(c))
            .map_or("?", String::as_str)
    }

    /// Distinct thread ids that have events, ascending.
    pub fn thread_ids(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .events
            .iter()
            .map(|e| e.tid)
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        v.sort_unstable();
        v
    }

    /// Allocation bytecodes executed in instrumented classes (sum of `allocs.tid.*`), if the
    /// recorder counted them (a lower bound of the objects allocated).
    pub fn allocations(&self) -> Option<u64> {
        let mut any = false;
        let mut sum = 0;
        for (k, v) in &self.stats {
            if k.starts_with("allocs.tid.") {
                any = true;
                sum += v;
            }
        }
        (any && self.options.split(',').all(|o| o != "alloc=0")).then_some(sum)
    }
}

/// Seed 003's CACAO hash table simulated over a trace (Tables 3 and 4): 1024 first chain
/// entries indexed by the object id's low bits, overflow chains, and the first entry never
/// freed (its mutex keeps its holder when the count drops to zero).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Cacao {
    /// `monitorenter` calls (Table 3's "Line 6").
    pub enter_calls: u64,
    /// Handled by the inlined fast path: first entry holds the object and this thread is the
    /// holder (Table 3's "Line 10").
    pub enter_fast: u64,
    /// Locks whose mutex count was zero before locking (Table 3's "count 0").
    pub enter_count_zero: u64,
    /// `lockMutexForObject` calls (Table 3's "Line 12").
    pub enter_slow: u64,
    /// `monitorexit` calls (Table 4's "Line 6").
    pub exit_calls: u64,
    /// Handled by the fast path: first entry holds the object (Table 4's "Line 8").
    pub exit_fast: u64,
    /// `unlockMutexForObject` calls (Table 4's "Line 10").
    pub exit_slow: u64,
    /// Longest overflow chain seen.
    pub max_chain: usize,
}

impl Cacao {
    /// Table 3's ratio 12/6, percent.
    pub fn enter_slow_pct(&self) -> f64 {
        pct(self.enter_slow, self.enter_calls)
    }
    /// Table 4's ratio 10/6, percent.
    pub fn exit_slow_pct(&self) -> f64 {
        pct(self.exit_slow, self.exit_calls)
    }
}

fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// Buckets of the simulated CACAO table (seed 003 uses 1024).
pub const CACAO_BUCKETS: usize = 1024;

#[derive(Clone, Copy, Default)]
struct Mutex {
    obj: u64, // 0 = none
    holder: u32,
    count: u32,
}

/// Simulates CACAO's monitor table over the trace (lock and unlock operations in `seq` order;
/// a wait releases its entry's count and its end restores it, uncounted).
///
/// One deviation from the paper's code, for correctness: `lockMutexForObject` looks for the
/// object in the overflow chain before claiming a free first entry (the paper's code could
/// then hold one object in two entries).
pub fn simulate_cacao(t: &Trace) -> Cacao {
    let mut c = Cacao::default();
    let mut first = vec![Mutex::default(); CACAO_BUCKETS];
    let mut chains: Vec<Vec<Mutex>> = vec![Vec::new(); CACAO_BUCKETS];
    let mut saved: HashMap<(u32, u64), u32> = HashMap::new();
    let bucket = |o: u64| (o as usize) & (CACAO_BUCKETS - 1);
    for e in &t.events {
        let h = bucket(e.obj);
        let (o, me) = (e.obj, e.tid);
        if e.kind.is_lock() || e.kind == Kind::WaitEnd {
            let relock = e.kind == Kind::WaitEnd;
            let restore = if relock {
                match saved.remove(&(me, o)) {
                    Some(n) => n,
                    None => continue,
                }
            } else {
                1
            };
            if !relock {
                c.enter_calls += 1;
            }
            let f = &mut first[h];
            if f.obj == o && f.holder == me && !relock {
                c.enter_fast += 1;
                if f.count == 0 {
                    c.enter_count_zero += 1;
                }
                f.count += 1;
                continue;
            }
            if !relock {
                c.enter_slow += 1;
            }
            // lockMutexForObject
            let m: &mut Mutex = if f.obj == o {
                f
            } else if let Some(i) = chains[h].iter().position(|m| m.obj == o) {
                &mut chains[h][i]
            } else if f.obj == 0 || f.count == 0 {
                *f = Mutex {
                    obj: o,
                    holder: 0,
                    count: 0,
                };
                f
            } else {
                chains[h].push(Mutex {
                    obj: o,
                    holder: 0,
                    count: 0,
                });
                c.max_chain = c.max_chain.max(chains[h].len());
                chains[h].last_mut().expect("just pushed")
            };
            if m.count == 0 {
                if !relock {
                    c.enter_count_zero += 1;
                }
                m.holder = me;
                m.count = restore;
            } else {
                // Held: by this thread (nested), or, never in a legal trace, by another.
                m.count += restore;
                m.holder = me;
            }
        } else if e.kind.is_unlock() || e.kind == Kind::Wait {
            let wait = e.kind == Kind::Wait;
            if !wait {
                c.exit_calls += 1;
            }
            let f = &mut first[h];
            if f.obj == o {
                if wait {
                    saved.insert((me, o), f.count);
                    f.count = 0;
                } else {
                    c.exit_fast += 1;
                    f.count = f.count.saturating_sub(1);
                }
                continue;
            }
            if !wait {
                c.exit_slow += 1;
            }
            if let Some(i) = chains[h].iter().position(|m| m.obj == o) {
                if wait {
                    saved.insert((me, o), chains[h][i].count);
                    chains[h][i].count = 0;
                } else {
                    chains[h][i].count = chains[h][i].count.saturating_sub(1);
                }
                if chains[h][i].count == 0 {
                    chains[h].remove(i);
                }
            }
        }
    }
    c
}

/// Miss rates of an LRU cache of `size` monitors over every lock and unlock operation in
/// `seq` order (seed 003 Table 5), percent.
pub fn lru_miss_rate(t: &Trace, size: usize) -> f64 {
    let mut cache: Vec<u64> = Vec::with_capacity(size);
    let (mut n, mut miss) = (0u64, 0u64);
    for e in t
        .events
        .iter()
        .filter(|e| e.kind.is_lock() || e.kind.is_unlock())
    {
        n += 1;
        match cache.iter().position(|&o| o == e.obj) {
            Some(i) => {
                let o = cache.remove(i);
                cache.insert(0, o);
            }
            None => {
                miss += 1;
                if cache.len() == size {
                    cache.pop();
                }
                cache.insert(0, e.obj);
            }
        }
    }
    pct(miss, n)
}

/// The cache sizes of seed 003 Table 5.
pub const LRU_SIZES: [usize; 4] = [1, 2, 4, 8];

/// A program's locking, as the seeds tabulate it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Characterization {
    /// Workload name.
    pub name: String,
    /// Threads that performed a monitor operation.
    pub threads: usize,
    /// Allocation bytecodes executed in instrumented classes (lower bound of seed 000's
    /// "Objects"), if counted.
    pub allocations: Option<u64>,
    /// Objects locked at least once (seed 000's "Sync'd Objects", seed 003's "Objects with
    /// mutex").
    pub synchronized_objects: u64,
    /// Lock operations: `monitorenter` plus synchronized-method entries (seed 000's "Syncs").
    pub lock_ops: u64,
    /// Of which synchronized-method entries.
    pub method_lock_ops: u64,
    /// Unlock operations (exits, normal and exceptional).
    pub unlock_ops: u64,
    /// Of which synchronized methods left by an exception.
    pub exceptional_exits: u64,
    /// Lock + unlock operations (seed 003's "Monitor operations").
    pub monitor_ops: u64,
    /// `lock_ops / synchronized_objects` (seed 000's "Syncs/S.Obj.").
    pub ops_per_object: f64,
    /// Lock operations by the nesting depth they reach: `[0]` depth 1 (the object was
    /// unlocked: seed 000's "First"), `[1]` depth 2 ("Second"), ...; the last bucket holds
    /// depths ≥ its index + 1.
    pub depth_histogram: Vec<u64>,
    /// Deepest nesting seen.
    pub max_depth: u32,
    /// Percent of lock operations on unlocked objects (depth 1).
    pub unlocked_pct: f64,
    /// Objects locked by more than one thread.
    pub multi_thread_objects: u64,
    /// Acquisitions (depth 1) by a thread other than the object's previous locker: what a
    /// biased lock would revoke or rebias.
    pub owner_changes: u64,
    /// Most monitors held at once, all threads together (seed 003's "Parallel Mutexes").
    pub max_held: u64,
    /// Most monitors held at once by one thread.
    pub max_held_one_thread: u64,
    /// `wait` calls.
    pub waits: u64,
    /// Of which with a timeout.
    pub timed_waits: u64,
    /// Waits that a NOTIFY/NOTIFY_ALL by another thread on the object preceded (in `seq`
    /// order, between the wait's begin and end).
    pub waits_notified: u64,
    /// Waits that returned normally without such a notify after at least their timeout
    /// (probably timed out).
    pub waits_timed_out: u64,
    /// Waits ended by an interrupt.
    pub waits_interrupted: u64,
    /// `notify` calls.
    pub notifies: u64,
    /// `notifyAll` calls.
    pub notify_alls: u64,
    /// Seed 003 Tables 3–4.
    pub cacao: Cacao,
    /// Seed 003 Table 5: LRU miss rates (percent) for [`LRU_SIZES`].
    pub lru_miss_pct: Vec<f64>,
    /// The most locked classes: (class, lock operations), top 5.
    pub top_classes: Vec<(String, u64)>,
    /// Lock/unlock sequences that did not balance per thread and object (0 in a sound
    /// recording).
    pub anomalies: u64,
}

/// Depth histogram buckets (depth 1 … 7, and ≥ 8).
pub const DEPTH_BUCKETS: usize = 8;

/// Characterizes a trace.
pub fn characterize(name: &str, t: &Trace) -> Characterization {
    let mut c = Characterization {
        name: name.to_string(),
        threads: t.thread_ids().len(),
        allocations: t.allocations(),
        depth_histogram: vec![0; DEPTH_BUCKETS],
        ..Characterization::default()
    };
    // (tid, obj) -> depth; obj -> (holder, count); obj -> lockers.
    let mut depth: HashMap<(u32, u64), u32> = HashMap::new();
    let mut held_by: HashMap<u32, u64> = HashMap::new();
    let mut lockers: HashMap<u64, (u32, bool)> = HashMap::new(); // first locker, >1 thread
    let mut last_locker: HashMap<u64, u32> = HashMap::new();
    let mut held_total = 0u64;
    let mut waiting: HashMap<(u32, u64), (u32, Event, bool)> = HashMap::new();
    let mut by_class: HashMap<&str, u64> = HashMap::new();
    for e in &t.events {
        let key = (e.tid, e.obj);
        match e.kind {
            k if k.is_lock() => {
                c.lock_ops += 1;
                if k == Kind::MethodEnter {
                    c.method_lock_ops += 1;
                }
                *by_class.entry(t.class_of(e.obj)).or_default() += 1;
                let d = depth.entry(key).or_default();
                *d += 1;
                let d = *d;
                c.depth_histogram[(d as usize - 1).min(DEPTH_BUCKETS - 1)] += 1;
                c.max_depth = c.max_depth.max(d);
                if d == 1 {
                    held_total += 1;
                    let h = held_by.entry(e.tid).or_default();
                    *h += 1;
                    c.max_held_one_thread = c.max_held_one_thread.max(*h);
                    c.max_held = c.max_held.max(held_total);
                    if last_locker.insert(e.obj, e.tid).is_some_and(|p| p != e.tid) {
                        c.owner_changes += 1;
                    }
                }
                let l = lockers.entry(e.obj).or_insert((e.tid, false));
                if l.0 != e.tid {
                    l.1 = true;
                }
            }
            k if k.is_unlock() => {
                c.unlock_ops += 1;
                if k == Kind::MethodExitExc {
                    c.exceptional_exits += 1;
                }
                match depth.get_mut(&key) {
                    Some(d) if *d > 0 => {
                        *d -= 1;
                        if *d == 0 {
                            held_total -= 1;
                            *held_by.entry(e.tid).or_default() -= 1;
                        }
                    }
                    _ => c.anomalies += 1,
                }
            }
            Kind::Wait => {
                c.waits += 1;
                if e.timeout_ms > 0 || e.timeout_ns > 0 {
                    c.timed_waits += 1;
                }
                let d = depth.insert(key, 0).unwrap_or(0);
                if d > 0 {
                    held_total -= 1;
                    *held_by.entry(e.tid).or_default() -= 1;
                }
                waiting.insert(key, (d, *e, false));
            }
            Kind::WaitEnd => {
                if let Some((d, begin, notified)) = waiting.remove(&key) {
                    if d > 0 {
                        depth.insert(key, d);
                        held_total += 1;
                        let h = held_by.entry(e.tid).or_default();
                        *h += 1;
                        c.max_held = c.max_held.max(held_total);
                    }
                    let timeout = begin.timeout_ms as i128 * 1_000_000 + begin.timeout_ns as i128;
                    match e.outcome {
                        Some(WaitOutcome::Interrupted) => c.waits_interrupted += 1,
                        _ if notified => c.waits_notified += 1,
                        Some(WaitOutcome::Returned)
                            if timeout > 0 && i128::from(e.time - begin.time) >= timeout =>
                        {
                            c.waits_timed_out += 1
                        }
                        _ => {}
                    }
                }
            }
            Kind::Notify | Kind::NotifyAll => {
                if e.kind == Kind::Notify {
                    c.notifies += 1;
                } else {
                    c.notify_alls += 1;
                }
                for ((tid, obj), w) in waiting.iter_mut() {
                    if *obj == e.obj && *tid != e.tid {
                        w.2 = true;
                    }
                }
            }
            _ => {}
        }
    }
    c.synchronized_objects = lockers.len() as u64;
    c.multi_thread_objects = lockers.values().filter(|l| l.1).count() as u64;
    c.monitor_ops = c.lock_ops + c.unlock_ops;
    c.ops_per_object = if c.synchronized_objects == 0 {
        0.0
    } else {
        c.lock_ops as f64 / c.synchronized_objects as f64
    };
    c.unlocked_pct = pct(c.depth_histogram[0], c.lock_ops);
    c.cacao = simulate_cacao(t);
    c.lru_miss_pct = LRU_SIZES.iter().map(|&s| lru_miss_rate(t, s)).collect();
    let mut top: Vec<(String, u64)> = by_class
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    top.truncate(5);
    c.top_classes = top;
    c
}

/// The seeds' published rows for their javac (the one program they share with ours), printed
/// beside ours: (source, objects, synchronized objects, lock operations, ops/object).
pub(crate) const SEED_TABLE1: &[(&str, &str, &str, &str, &str)] = &[
    (
        "seed 000 Table 1: javac (JDK 1.1)",
        "345687",
        "24735",
        "856666",
        "34.6",
    ),
    (
        "seed 000 Table 1: median of 21 programs",
        "–",
        "–",
        "–",
        "22.7",
    ),
    (
        "seed 003 Table 2: javac (Toba sources)",
        "111504",
        "13695",
        "420147 (840292 ops)",
        "30.7",
    ),
    (
        "seed 003 Table 2: Jigsaw (HTTP server)",
        "215411",
        "23804",
        "≈427846 (855691 ops)",
        "18.0",
    ),
];

/// Seed 003 Tables 3 and 4 (CACAO's monitor table, 1024 buckets): program, then enter calls,
/// fast, count 0, slow, slow %, exit calls, fast, slow, slow % (cells joined by ` | `).
pub(crate) const SEED_CACAO: [(&str, &str); 3] = [
    (
        "javac",
        "420147 | 405978 | 381019 | 14169 | 3.372% | 420146 | 419815 | 331 | 0.078%",
    ),
    (
        "Biss",
        "384350 | 370171 | 425038 | 14179 | 3.689% | 384368 | 383281 | 1087 | 0.282%",
    ),
    (
        "Jigsaw",
        "426695 | 391680 | 294957 | 35015 | 8.206% | 428997 | 416890 | 12107 | 2.822%",
    ),
];

/// Seed 003 Table 5 (LRU monitor cache miss rates for [`LRU_SIZES`] entries): program, then
/// the rates (cells joined by ` | `).
pub(crate) const SEED_LRU: [(&str, &str); 3] = [
    ("javac", "15.076% | 9.757% | 4.931% | 3.193%"),
    ("Biss", "13.488% | 8.349% | 4.765% | 3.141%"),
    ("Jigsaw", "43.694% | 37.700% | 22.680% | 5.182%"),
];

fn fmt_opt(v: Option<u64>) -> String {
    v.map_or_else(|| "–".to_string(), |x| x.to_string())
}

/// Renders the characterization tables (seed 000 Table 1 and Figure 3, seed 003 Tables 2–5)
/// for several programs, with the seeds' published javac/Jigsaw figures beside them.
pub fn render_markdown(rows: &[Characterization]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "### Programs (seed 000 Table 1, seed 003 Table 2)\n");
    let _ = writeln!(
        s,
        "| program | threads | allocations | sync'd objects | lock ops | of which sync. methods | \
         ops / sync'd object | multi-thread objects | owner changes | most held at once (one thread) |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for c in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {:.1} | {} | {} | {} ({}) |",
            c.name,
            c.threads,
            fmt_opt(c.allocations),
            c.synchronized_objects,
            c.lock_ops,
            c.method_lock_ops,
            c.ops_per_object,
            c.multi_thread_objects,
            c.owner_changes,
            c.max_held,
            c.max_held_one_thread
        );
    }
    for (src, objs, sync, ops, per) in SEED_TABLE1 {
        let _ = writeln!(s, "| *{src}* | | {objs} | {sync} | {ops} | | {per} | | | |");
    }
    let _ = writeln!(
        s,
        "\n*allocations*: allocation bytecodes run in instrumented classes (a lower bound of \
         objects allocated). Seed 003's Jigsaw held at most 25 monitors at once, javac 5.\n"
    );

    let _ = writeln!(
        s,
        "### Nesting depth of lock operations (seed 000 Figure 3)\n"
    );
    let _ = write!(s, "| program | on unlocked object (First) |");
    for d in 2..=DEPTH_BUCKETS {
        if d == DEPTH_BUCKETS {
            let _ = write!(s, " ≥{d} |");
        } else {
            let _ = write!(s, " depth {d} |");
        }
    }
    let _ = writeln!(s, " max depth |");
    let _ = writeln!(s, "|---|{}---:|", "---:|".repeat(DEPTH_BUCKETS));
    for c in rows {
        let _ = write!(s, "| {} |", c.name);
        for (i, n) in c.depth_histogram.iter().enumerate() {
            if i == 0 {
                let _ = write!(s, " {:.1}% ({n}) |", c.unlocked_pct);
            } else {
                let _ = write!(s, " {:.2}% |", pct(*n, c.lock_ops));
            }
        }
        let _ = writeln!(s, " {} |", c.max_depth);
    }
    let _ = writeln!(
        s,
        "| *seed 000: 21 programs* | *median 80%, at least 45%* | *most of the rest* | | | | | | | *≤ 4* |"
    );

    let _ = writeln!(s, "\n### wait / notify\n");
    let _ = writeln!(
        s,
        "| program | waits | with timeout | notified | probably timed out | interrupted | notify | notifyAll | exceptional method exits |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for c in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            c.name,
            c.waits,
            c.timed_waits,
            c.waits_notified,
            c.waits_timed_out,
            c.waits_interrupted,
            c.notifies,
            c.notify_alls,
            c.exceptional_exits
        );
    }

    let _ = writeln!(
        s,
        "\n### CACAO's monitor table, {CACAO_BUCKETS} buckets (seed 003 Tables 3 and 4)\n"
    );
    let _ = writeln!(
        s,
        "| program | enter: calls (line 6) | fast (line 10) | count 0 | slow (line 12) | slow % | exit: calls (line 6) | fast (line 8) | slow (line 10) | slow % |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for c in rows {
        let k = &c.cacao;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {:.3}% | {} | {} | {} | {:.3}% |",
            c.name,
            k.enter_calls,
            k.enter_fast,
            k.enter_count_zero,
            k.enter_slow,
            k.enter_slow_pct(),
            k.exit_calls,
            k.exit_fast,
            k.exit_slow,
            k.exit_slow_pct()
        );
    }
    for (p, row) in SEED_CACAO {
        let _ = writeln!(s, "| *seed 003: {p}* | {row} |");
    }

    let _ = writeln!(s, "\n### LRU monitor cache miss rates (seed 003 Table 5)\n");
    let _ = writeln!(
        s,
        "| program | 1 entry | 2 entries | 4 entries | 8 entries |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|");
    for c in rows {
        let _ = write!(s, "| {} |", c.name);
        for m in &c.lru_miss_pct {
            let _ = write!(s, " {m:.3}% |");
        }
        let _ = writeln!(s);
    }
    for (p, row) in SEED_LRU {
        let _ = writeln!(s, "| *seed 003: {p}* | {row} |");
    }

    let _ = writeln!(s, "\n### Most locked classes\n");
    for c in rows {
        let list: Vec<String> = c
            .top_classes
            .iter()
            .map(|(k, v)| format!("`{k}` {:.1}%", pct(*v, c.lock_ops)))
            .collect();
        let _ = writeln!(s, "- {}: {}", c.name, list.join(", "));
    }
    s
}

/// `objmon-bench trace FILE...`: prints the characterization of each trace (named after its
/// file stem) as Markdown. Returns the process exit code.
pub fn cli_trace(paths: &[std::path::PathBuf]) -> i32 {
    let mut rows = Vec::new();
    for p in paths {
        match read(p) {
            Ok(t) => {
                let name = p.file_stem().map_or_else(
                    || p.display().to_string(),
                    |s| s.to_string_lossy().into_owned(),
                );
                if !t.complete {
                    eprintln!("note: {} has no END record (cut short)", p.display());
                }
                rows.push(characterize(&name, &t));
            }
            Err(e) => {
                eprintln!("{}: {e}", p.display());
                return 1;
            }
        }
    }
    print!("{}", render_markdown(&rows));
    0
}

/// Replays `plan` `reps` times on every protocol of the catalog, then every anchor
/// ([`ANCHORS`]), whose name is in `protocols` (all if empty), in that order: one result per
/// repetition.
pub fn replay_all(
    plan: &ReplayPlan,
    protocols: &[String],
    reps: usize,
    stall: std::time::Duration,
) -> Vec<Vec<ReplayResult>> {
    struct V<'a> {
        plan: &'a ReplayPlan,
        protocols: &'a [String],
        reps: usize,
        stall: std::time::Duration,
        out: Vec<Vec<ReplayResult>>,
    }
    impl objmon::vm::ProtocolVisitor for V<'_> {
        fn visit<P: objmon::Protocol>(&mut self) {
            if !self.protocols.is_empty() && !self.protocols.iter().any(|p| p == P::NAME) {
                return;
            }
            let runs = (0..self.reps.max(1))
                .map(|_| replay::<P>(self.plan, self.stall))
                .collect();
            self.out.push(runs);
        }
    }
    let mut v = V {
        plan,
        protocols,
        reps,
        stall,
        out: Vec::new(),
    };
    objmon::vm::visit_all(&mut v);
    for a in ANCHORS {
        if !protocols.is_empty() && !protocols.iter().any(|p| p == a) {
            continue;
        }
        let runs = (0..reps.max(1))
            .filter_map(|_| replay_anchor(a, plan, stall))
            .collect();
        v.out.push(runs);
    }
    v.out
}

fn median(v: &mut [f64]) -> f64 {
    crate::record::median(v).unwrap_or(f64::NAN)
}

/// Renders replay results (one row per protocol: medians over the repetitions with min–max).
pub fn render_replay_markdown(name: &str, plan: &ReplayPlan, runs: &[Vec<ReplayResult>]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "### Replay of `{name}`: {} threads, {} objects, {} operations ({} unmatched dropped, {} threads cut at an unended wait)\n",
        plan.threads.len(),
        plan.objects,
        plan.ops,
        plan.unmatched,
        plan.unended_waits
    );
    let _ = writeln!(
        s,
        "| protocol | wall ns/op (median) | min – max | thread ns/op | inflations | deflations | revocations | peak live monitors | waits bounded | errors |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    // Median of a counter over the repetitions; `—` where the row has no such counter.
    fn med_opt<T: Into<f64> + Copy>(v: impl Iterator<Item = Option<T>>) -> String {
        let v: Option<Vec<f64>> = v.map(|x| x.map(Into::into)).collect();
        match v {
            Some(mut v) if !v.is_empty() => format!("{}", median(&mut v)),
            _ => "—".into(),
        }
    }
    for r in runs {
        let Some(first) = r.first() else { continue };
        let mut wall: Vec<f64> = r.iter().map(|x| x.ns_per_op).collect();
        let mut th: Vec<f64> = r.iter().map(|x| x.thread_ns_per_op).collect();
        let (lo, hi) = wall
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
        let infl = med_opt(r.iter().map(|x| x.inflations.map(|v| v as f64)));
        let defl = med_opt(r.iter().map(|x| x.deflations.map(|v| v as f64)));
        let revo = med_opt(r.iter().map(|x| x.revocations.map(|v| v as f64)));
        let peak = med_opt(r.iter().map(|x| x.peak_live_monitors.map(|v| v as f64)));
        let bounded: u64 = r.iter().map(|x| x.waits_bounded).sum();
        let errors: u64 = r.iter().map(|x| x.errors).sum();
        let _ = writeln!(
            s,
            "| {} | {:.1} | {:.1} – {:.1} | {:.1} | {infl} | {defl} | {revo} | {peak} | {} | {} |",
            first.protocol,
            median(&mut wall),
            lo,
            hi,
            median(&mut th),
            bounded,
            errors
        );
    }
    s
}

/// `objmon-bench replay TRACE [--protocol NAME]... [--reps N] [--wait-cap-ms MS]`: replays the
/// trace on each protocol and anchor (`monitor`, `std-mutex`, `parking-lot`) and prints a
/// Markdown table. Returns the process exit code.
pub fn cli_replay(path: &Path, protocols: &[String], reps: usize, wait_cap_ms: u64) -> i32 {
    let t = match read(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{}: {e}", path.display());
            return 1;
        }
    };
    let mut valid: Vec<&str> = objmon::vm::names();
    valid.extend(ANCHORS);
    if let Some(bad) = protocols.iter().find(|n| !valid.contains(&n.as_str())) {
        eprintln!("{}", crate::runner::unknown("protocol", bad, &valid, ""));
        return 2;
    }
    let p = plan(&t, std::time::Duration::from_millis(wait_cap_ms));
    let runs = replay_all(&p, protocols, reps, std::time::Duration::from_secs(20));
    if runs.is_empty() {
        eprintln!("no protocol matched {protocols:?}; `objmon-bench list` names them");
        return 2;
    }
    let name = path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    print!("{}", render_replay_markdown(&name, &p, &runs));
    i32::from(runs.iter().flatten().any(|r| r.errors != 0))
}

// ---- replay ---------------------------------------------------------------------------------

/// One operation of a replayed thread (objects by dense index into the replay's headers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// monitorenter / synchronized-method entry.
    Lock(u32),
    /// monitorexit / synchronized-method exit (normal or exceptional).
    Unlock(u32),
    /// A recorded wait that ended: wait until `need` notifies of the object have been replayed
    /// (the notifies the program had made on it before this wait ended), at most `bound`.
    Wait {
        /// Object.
        obj: u32,
        /// Notifies on the object that precede the wait's end in the recording.
        need: u64,
        /// Most time this wait may take (a safety net: the replay's notifies normally end it).
        bound: std::time::Duration,
    },
    /// notify (`all == false`) or notifyAll.
    Notify {
        /// Object.
        obj: u32,
        /// notifyAll.
        all: bool,
    },
}

/// A trace turned into per-thread operation lists.
#[derive(Clone, Debug, Default)]
pub struct ReplayPlan {
    /// Distinct objects (headers to allocate).
    pub objects: usize,
    /// Per recorded thread: its id and operations in its own order.
    pub threads: Vec<(u32, Vec<Op>)>,
    /// Lock + unlock + wait + notify operations replayed.
    pub ops: u64,
    /// Unlocks and waits dropped because the thread did not hold the object in the trace
    /// (it locked it before recording began).
    pub unmatched: u64,
    /// Threads cut at a wait that had not ended when the JVM exited.
    pub unended_waits: u64,
}

/// Builds the replay plan: each thread's operations in its own order; a wait's `need` is the
/// number of notify/notifyAll calls on its object that precede its end in `seq` order, so the
/// replay honours the recorded wait/notify order (a wait that timed out in the program needs
/// no further notify and returns at once, after releasing and re-acquiring the monitor), and
/// `wait_cap` bounds every wait so that a replay can never hang on one.
pub fn plan(t: &Trace, wait_cap: std::time::Duration) -> ReplayPlan {
    let mut dense: HashMap<u64, u32> = HashMap::new();
    let mut per: BTreeMap<u32, Vec<Op>> = BTreeMap::new();
    let mut depth: HashMap<(u32, u64), u32> = HashMap::new();
    let mut notifies: HashMap<u64, u64> = HashMap::new();
    let mut open_wait: HashMap<u32, usize> = HashMap::new(); // tid -> op index
    let mut cut: HashSet<u32> = HashSet::new();
    let mut p = ReplayPlan::default();
    for e in &t.events {
        if cut.contains(&e.tid) {
            continue;
        }
        let n = dense.len() as u32;
        let obj = *dense.entry(e.obj).or_insert(n);
        let ops = per.entry(e.tid).or_default();
        let d = depth.entry((e.tid, e.obj)).or_default();
        match e.kind {
            k if k.is_lock() => {
                *d += 1;
                ops.push(Op::Lock(obj));
            }
            k if k.is_unlock() => {
                if *d == 0 {
                    p.unmatched += 1;
                } else {
                    *d -= 1;
                    ops.push(Op::Unlock(obj));
                }
            }
            Kind::Wait => {
                if *d == 0 {
                    p.unmatched += 1;
                } else {
                    open_wait.insert(e.tid, ops.len());
                    ops.push(Op::Wait {
                        obj,
                        need: 0,
                        bound: wait_cap,
                    });
                }
            }
            Kind::WaitEnd => {
                if let Some(i) = open_wait.remove(&e.tid) {
                    ops[i] = Op::Wait {
                        obj,
                        need: notifies.get(&e.obj).copied().unwrap_or(0),
                        bound: wait_cap,
                    };
                }
            }
            Kind::Notify | Kind::NotifyAll => {
                if *d > 0 {
                    *notifies.entry(e.obj).or_default() += 1;
                    ops.push(Op::Notify {
                        obj,
                        all: e.kind == Kind::NotifyAll,
                    });
                } else {
                    p.unmatched += 1;
                }
            }
            _ => {}
        }
    }
    // A wait still open at exit: the thread never got past it; cut the thread there.
    for (tid, i) in open_wait {
        if let Some(ops) = per.get_mut(&tid) {
            ops.truncate(i);
            p.unended_waits += 1;
        }
        cut.insert(tid);
    }
    p.objects = dense.len();
    p.ops = per.values().map(|v| v.len() as u64).sum();
    p.threads = per.into_iter().filter(|(_, v)| !v.is_empty()).collect();
    p
}

/// What one replay of a trace on one protocol or anchor measured.
#[derive(Clone, Debug, Serialize)]
pub struct ReplayResult {
    /// Protocol catalog name, or the anchor's row name (`monitor`, `std-mutex`, `parking-lot`).
    pub protocol: String,
    /// Replayed threads.
    pub threads: usize,
    /// Operations replayed.
    pub ops: u64,
    /// Wall time from the start barrier until every thread finished, ns.
    pub wall_ns: u64,
    /// `wall_ns / ops`.
    pub ns_per_op: f64,
    /// Summed per-thread time outside waits, divided by the operations: the cost of one
    /// operation as the threads saw it.
    pub thread_ns_per_op: f64,
    /// Time the threads spent in waits, ns (summed).
    pub wait_ns: u64,
    /// Waits that ran to their bound before the recorded notifies arrived.
    pub waits_bounded: u64,
    /// Inflations (all causes), from the runtime's counters; `None` for the anchors (no
    /// runtime of their own: `monitor` uses the default protocol's process-wide runtime,
    /// whose counters the public API does not reach).
    pub inflations: Option<u64>,
    /// Deflations (`None` as for `inflations`).
    pub deflations: Option<u64>,
    /// Bias revocations (all kinds) of the biased protocols (`BiasState::revocations`);
    /// `None` for protocols without biasing and for the anchors.
    pub revocations: Option<u64>,
    /// Most fat monitors alive at once (sampled every millisecond); `None` for the anchors.
    pub peak_live_monitors: Option<usize>,
    /// Operations the protocol refused (an error; 0 on a sound plan).
    pub errors: u64,
}

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

/// The anchors' row names, in the order [`replay_all`] runs them (after the protocols).
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a trace in the recorder's format (the test's own small writer).
    #[derive(Default)]
    pub(crate) struct Writer {
        out: Vec<u8>,
        blocks: HashMap<u32, (Vec<u8>, u64, i64)>,
        seq: u64,
        time: i64,
    }

    fn varint(b: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            b.push((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        b.push(v as u8);
    }

    fn zigzag(b: &mut Vec<u8>, v: i64) {
        varint(b, ((v << 1) ^ (v >> 63)) as u64);
    }

    impl Writer {
        pub(crate) fn new() -> Self {
            let mut w = Writer::default();
            w.out.extend_from_slice(b"OBJMONT1");
            varint(&mut w.out, 1);
            varint(&mut w.out, 0);
            varint(&mut w.out, 0);
            varint(&mut w.out, 4);
            w.out.extend_from_slice(b"test");
            w
        }

        pub(crate) fn class(&mut self, tid: u32, class: u32, name: &str) {
            let b = &mut self.blocks.entry(tid).or_default().0;
            b.push(0x41);
            varint(b, u64::from(class));
            varint(b, name.len() as u64);
            b.extend_from_slice(name.as_bytes());
        }

        pub(crate) fn obj(&mut self, tid: u32, obj: u64, class: u32) {
            let b = &mut self.blocks.entry(tid).or_default().0;
            b.push(0x40);
            varint(b, obj);
            varint(b, u64::from(class));
        }

        /// One operation: kind code (1–9), object; `extra` for WAIT (ms, ns) / WAIT_END (outcome).
        pub(crate) fn op(&mut self, tid: u32, kind: u8, obj: u64, extra: (i64, i64)) {
            self.seq += 1;
            self.time += 1000;
            let (seq, time) = (self.seq, self.time);
            let (b, ls, lt) = self.blocks.entry(tid).or_default();
            b.push(kind);
            varint(b, seq - *ls);
            zigzag(b, time - *lt);
            *ls = seq;
            *lt = time;
            varint(b, obj);
            if kind == 6 {
                zigzag(b, extra.0);
                zigzag(b, extra.1);
            } else if kind == 7 {
                b.push(extra.0 as u8);
            }
        }

        /// Flushes every thread's block (in tid order) and writes STATS and END.
        pub(crate) fn finish(mut self) -> Vec<u8> {
            let mut tids: Vec<u32> = self.blocks.keys().copied().collect();
            tids.sort_unstable();
            for tid in tids {
                let (b, _, _) = self.blocks.remove(&tid).expect("listed");
                self.out.push(2);
                varint(&mut self.out, u64::from(tid));
                varint(&mut self.out, u64::from(tid) + 100);
                varint(&mut self.out, 1);
                self.out.push(b'T');
                self.out.push(1);
                varint(&mut self.out, u64::from(tid));
                varint(&mut self.out, b.len() as u64);
                self.out.extend_from_slice(&b);
            }
            self.out.push(3);
            varint(&mut self.out, 1);
            varint(&mut self.out, 12);
            self.out.extend_from_slice(b"allocs.tid.1");
            varint(&mut self.out, 77);
            self.out.push(0xff);
            self.out
        }
    }

    /// Thread 1: a block on A nested twice, a synchronized method on B throwing, a timed wait
    /// on C that times out; thread 2 then locks A and notifies thread 1 waiting on C.
    pub(crate) fn small() -> Vec<u8> {
        let mut w = Writer::new();
        w.class(1, 1, "A");
        w.obj(1, 1, 1);
        w.op(1, 1, 1, (0, 0)); // enter A
        w.op(1, 1, 1, (0, 0)); // enter A (nested)
        w.op(1, 2, 1, (0, 0));
        w.op(1, 2, 1, (0, 0));
        w.class(1, 2, "B");
        w.obj(1, 2, 2);
        w.op(1, 3, 2, (0, 0)); // menter B
        w.op(1, 5, 2, (0, 0)); // exceptional exit
        w.obj(1, 3, 2);
        w.op(1, 1, 3, (0, 0)); // enter C
        w.op(1, 6, 3, (0, 0)); // wait(0): released
        w.op(2, 1, 3, (0, 0)); // thread 2 enters C
        w.op(2, 8, 3, (0, 0)); // notify
        w.op(2, 2, 3, (0, 0));
        w.op(2, 1, 1, (0, 0)); // thread 2 locks A: A is multi-thread
        w.op(2, 2, 1, (0, 0));
        w.op(1, 7, 3, (0, 0)); // wait returns, C held again
        w.op(1, 6, 3, (0, 1)); // wait(0, 1ns): times out
        w.op(1, 7, 3, (0, 0));
        w.op(1, 2, 3, (0, 0));
        w.finish()
    }

    #[test]
    fn parses_what_the_writer_wrote() {
        let t = parse(&small()).expect("parses");
        assert!(t.complete);
        assert_eq!(t.events.len(), 17);
        assert!(t.events.windows(2).all(|w| w[0].seq < w[1].seq));
        assert_eq!(t.threads.len(), 2);
        assert_eq!(t.class_of(3), "B");
        assert_eq!(t.allocations(), Some(77));
        let w = t
            .events
            .iter()
            .find(|e| e.kind == Kind::Wait && e.timeout_ns == 1);
        assert!(w.is_some());
        assert_eq!(t.events.last().map(|e| e.kind), Some(Kind::Exit));
    }

    #[test]
    fn rejects_garbage_and_truncation() {
        assert!(parse(b"NOTATRACE").is_err());
        let mut d = small();
        d.truncate(d.len() - 20);
        assert!(parse(&d).is_err() || !parse(&d).expect("ok").complete);
    }

    #[test]
    fn characterizes_the_small_trace() {
        let t = parse(&small()).expect("parses");
        let c = characterize("small", &t);
        assert_eq!(c.lock_ops, 6);
        assert_eq!(c.method_lock_ops, 1);
        assert_eq!(c.unlock_ops, 6);
        assert_eq!(c.exceptional_exits, 1);
        assert_eq!(c.synchronized_objects, 3);
        assert_eq!(c.depth_histogram[0], 5);
        assert_eq!(c.depth_histogram[1], 1);
        assert_eq!(c.max_depth, 2);
        assert_eq!(c.multi_thread_objects, 2); // A and C
        assert_eq!(c.owner_changes, 2); // C then A acquired by thread 2
        assert_eq!(c.waits, 2);
        assert_eq!(c.waits_notified, 1);
        assert_eq!(c.waits_timed_out, 1);
        assert_eq!(c.notifies, 1);
        assert_eq!(c.anomalies, 0);
        // Thread 1 holds C while thread 2 holds... nothing else: at most 2 at once
        // (A nested counts once).
        assert_eq!(c.max_held, 1);
        let k = &c.cacao;
        assert_eq!(k.enter_calls, 6);
        assert_eq!(k.exit_calls, 6);
        // Nested enter of A, and nothing else, hits the first entry with this thread.
        assert_eq!(k.enter_fast, 1);
        assert_eq!(k.exit_fast, 6);
        // LRU over 12 lock/unlock ops: objects A A A A B B C | C C | A A | C.
        assert!((lru_miss_rate(&t, 1) - 100.0 * 5.0 / 12.0).abs() < 1e-9);
        let md = render_markdown(&[c]);
        assert!(md.contains("| small |"));
    }

    #[test]
    fn cacao_first_entry_stays_with_its_holder() {
        // One thread locks D twice in a row: the second lock is the fast path (line 10) with
        // count 0, as in seed 003's Table 3.
        let mut w = Writer::new();
        for _ in 0..2 {
            w.op(1, 1, 5, (0, 0));
            w.op(1, 2, 5, (0, 0));
        }
        // 5 + 1024 collides with 5 while 5 is held: goes to the chain (slow both ways).
        w.op(1, 1, 5, (0, 0));
        w.op(1, 1, 5 + 1024, (0, 0));
        w.op(1, 2, 5 + 1024, (0, 0));
        w.op(1, 2, 5, (0, 0));
        let t = parse(&w.finish()).expect("parses");
        let k = simulate_cacao(&t);
        assert_eq!(k.enter_calls, 4);
        assert_eq!(k.enter_fast, 2);
        assert_eq!(k.enter_slow, 2);
        assert_eq!(k.enter_count_zero, 4);
        assert_eq!(k.exit_slow, 1);
        assert_eq!(k.max_chain, 1);
    }

    #[test]
    fn plan_honours_the_recorded_notify_order() {
        let t = parse(&small()).expect("parses");
        let p = plan(&t, std::time::Duration::from_millis(50));
        assert_eq!(p.unmatched, 0);
        assert_eq!(p.ops, 17 - 2); // the two WAIT_ENDs fold into their waits
        let t1 = &p.threads[0].1;
        let waits: Vec<(u64, std::time::Duration)> = t1
            .iter()
            .filter_map(|o| match o {
                Op::Wait { need, bound, .. } => Some((*need, *bound)),
                _ => None,
            })
            .collect();
        // The first wait ended after thread 2's notify; the second needs nothing more.
        assert_eq!(waits.len(), 2);
        assert_eq!(waits[0].0, 1);
        assert_eq!(waits[1].0, 1);
        assert_eq!(waits[1].1, std::time::Duration::from_millis(50));
    }

    #[test]
    fn replays_the_small_trace_on_every_protocol() {
        let t = parse(&small()).expect("parses");
        let p = plan(&t, std::time::Duration::from_millis(20));
        let runs = replay_all(&p, &[], 1, std::time::Duration::from_secs(30));
        assert_eq!(runs.len(), objmon::vm::names().len() + ANCHORS.len());
        for r in runs.iter().flatten() {
            assert_eq!(r.errors, 0, "{}", r.protocol);
            assert_eq!(r.ops, 15);
        }
        let md = render_replay_markdown("small", &p, &runs);
        assert!(md.contains("| fat |"));
        for a in ANCHORS {
            assert!(md.contains(&format!("| {a} |")), "{a}");
        }
    }

    #[test]
    fn anchors_are_selected_by_name_and_report_no_runtime_counters() {
        let t = parse(&small()).expect("parses");
        let p = plan(&t, std::time::Duration::from_millis(20));
        let names: Vec<String> = ["std-mutex", "thin", "biased"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let runs = replay_all(&p, &names, 2, std::time::Duration::from_secs(30));
        let rows: Vec<&str> = runs.iter().map(|r| r[0].protocol.as_str()).collect();
        assert_eq!(rows, ["thin", "biased", "std-mutex"]);
        for r in runs.iter().flatten() {
            assert_eq!(r.errors, 0, "{}", r.protocol);
            assert_eq!(r.ops, p.ops);
            match r.protocol.as_str() {
                "std-mutex" => {
                    assert_eq!(r.inflations, None);
                    assert_eq!(r.revocations, None);
                    assert_eq!(r.peak_live_monitors, None);
                }
                "thin" => {
                    assert!(r.inflations.is_some());
                    assert_eq!(r.revocations, None);
                }
                _ => assert!(r.revocations.is_some(), "{}", r.protocol),
            }
        }
        let md = render_replay_markdown("small", &p, &runs);
        assert!(md.contains("| std-mutex |") && md.contains("—"));
    }

    /// Exits out of LIFO order across objects, and a wait at depth 2 that another thread's
    /// notify ends: every anchor releases every level in the wait. Thread 2 enters A only after
    /// thread 1's notify of B, which thread 1 makes holding A twice just before its wait; an
    /// anchor that released one level only would keep thread 2 out of A, and thread 1's wait
    /// would run to its bound.
    #[test]
    fn anchors_replay_unstructured_exits_and_nested_waits() {
        let mut w = Writer::new();
        w.op(1, 1, 1, (0, 0)); // enter A
        w.op(1, 1, 2, (0, 0)); // enter B
        w.op(1, 2, 1, (0, 0)); // exit A (B still held: not LIFO)
        w.op(1, 2, 2, (0, 0)); // exit B
        w.op(2, 1, 2, (0, 0)); // thread 2 enters B
        w.op(2, 6, 2, (0, 0)); // and waits on it
        w.op(1, 1, 1, (0, 0)); // enter A
        w.op(1, 3, 1, (0, 0)); // menter A (depth 2)
        w.op(1, 1, 2, (0, 0)); // enter B
        w.op(1, 8, 2, (0, 0)); // notify B: thread 2 may go on
        w.op(1, 2, 2, (0, 0)); // exit B
        w.op(1, 6, 1, (0, 0)); // wait(0) on A at depth 2
        w.op(2, 7, 2, (0, 0)); // thread 2's wait returns
        w.op(2, 2, 2, (0, 0));
        w.op(2, 1, 1, (0, 0)); // thread 2 enters A: thread 1 must have released both levels
        w.op(2, 8, 1, (0, 0)); // notify A
        w.op(2, 2, 1, (0, 0));
        w.op(1, 7, 1, (0, 0)); // wait returns, depth 2 again
        w.op(1, 4, 1, (0, 0));
        w.op(1, 2, 1, (0, 0));
        let t = parse(&w.finish()).expect("parses");
        let p = plan(&t, std::time::Duration::from_secs(2));
        assert_eq!(p.unmatched, 0);
        let names: Vec<String> = ANCHORS.iter().map(|s| s.to_string()).collect();
        let runs = replay_all(&p, &names, 3, std::time::Duration::from_secs(30));
        assert_eq!(runs.len(), ANCHORS.len());
        for r in runs.iter().flatten() {
            assert_eq!(r.errors, 0, "{}", r.protocol);
            assert_eq!(r.ops, 18);
            assert_eq!(r.waits_bounded, 0, "{}", r.protocol);
        }
    }

    /// The recorder's own exactness trace (java/agent/test/counts.trace, recorded from
    /// `MonitorCounts` with `alloc=0`; re-record with java/agent/test/run.sh and copy
    /// `counts.trace`/`expected.txt`): this parser must find the counts the program wrote.
    #[test]
    fn the_recorded_exactness_trace_has_the_programs_counts() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../java/agent/test");
        let t = read(&dir.join("counts.trace")).expect("checked-in trace parses");
        assert!(t.complete);
        let expected = std::fs::read_to_string(dir.join("counts.expected")).expect("expected");
        let mut counts: HashMap<(String, String), u64> = HashMap::new();
        let mut max_depth: HashMap<String, u32> = HashMap::new();
        let mut lockers: HashMap<String, HashSet<u32>> = HashMap::new();
        let mut depth: HashMap<(u32, u64), u32> = HashMap::new();
        for e in &t.events {
            let class = t.class_of(e.obj).to_string();
            let kind = match e.kind {
                Kind::Enter => "ENTER",
                Kind::Exit => "EXIT",
                Kind::MethodEnter => "MENTER",
                Kind::MethodExit => "MEXIT",
                Kind::MethodExitExc => "MEXIT_EXC",
                Kind::Wait => "WAIT",
                Kind::WaitEnd => "WAIT_END",
                Kind::Notify => "NOTIFY",
                Kind::NotifyAll => "NOTIFY_ALL",
            };
            *counts.entry((class.clone(), kind.into())).or_default() += 1;
            let d = depth.entry((e.tid, e.obj)).or_default();
            match e.kind {
                k if k.is_lock() => {
                    *d += 1;
                    let m = max_depth.entry(class.clone()).or_default();
                    *m = (*m).max(*d);
                    lockers.entry(class.clone()).or_default().insert(e.tid);
                }
                k if k.is_unlock() => *d = d.saturating_sub(1),
                Kind::Wait if e.timeout_ms == 2 && e.timeout_ns == 0 => {
                    *counts
                        .entry((class, "WAIT_TIMEOUT_2MS".into()))
                        .or_default() += 1;
                }
                Kind::WaitEnd if e.outcome == Some(WaitOutcome::Interrupted) => {
                    *counts
                        .entry((class, "WAIT_INTERRUPTED".into()))
                        .or_default() += 1;
                }
                _ => {}
            }
        }
        let mut checked = 0;
        for line in expected.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            let [class, what, n] = f[..] else { continue };
            let want: u64 = n.parse().expect("count");
            let got = match what {
                "maxdepth" => u64::from(max_depth.get(class).copied().unwrap_or(0)),
                "threads" => lockers.get(class).map_or(0, |s| s.len() as u64),
                _ => counts
                    .get(&(class.to_string(), what.to_string()))
                    .copied()
                    .unwrap_or(0),
            };
            assert_eq!(got, want, "{class} {what}");
            checked += 1;
        }
        assert_eq!(checked, 34);
        let c = characterize("counts", &t);
        assert_eq!(c.anomalies, 0);
        // And it replays on every protocol and anchor without an error.
        let p = plan(&t, std::time::Duration::from_millis(20));
        let runs = replay_all(&p, &[], 1, std::time::Duration::from_secs(60));
        assert_eq!(runs.len(), objmon::vm::names().len() + ANCHORS.len());
        for r in runs.iter().flatten() {
            assert_eq!(r.errors, 0, "{}", r.protocol);
            assert_eq!(r.ops, p.ops, "{}", r.protocol);
        }
    }
}
