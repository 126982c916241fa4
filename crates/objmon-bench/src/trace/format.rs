//! The recorder's trace format (`java/agent/FORMAT.md`): operation kinds, events, threads,
//! and the parser that reads a trace file into a [`Trace`].

use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
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
