//! The worker threads of a case and the objects they share.
//!
//! A worker runs phases on command: [`Cmd::Begin`] takes a read guard of the slots and a
//! phase handle; each [`Cmd::Act`] is one call of the safe API, answered with what the call
//! returned ([`Out`]); [`Cmd::End`] drops what is left and both guards, so that the driver
//! can take the slots mutably (swap, replace, box moves) between phases. Guards live in a
//! phase-local `Vec`, so they can be dropped in any order or passed to `mem::forget`.
//!
//! Invariant checked here, beside the driver's model: [`Truth`], one per logical object,
//! records which worker identity is inside the object's critical section and how deep. A
//! worker marks itself in right after a call gave it the lock and out right before it gives
//! a level back, so a lock granted while another identity is in is two owners, whatever the
//! timing. Bursts also bump a counter with a load and a separate store, which loses
//! increments if two threads are in at once.

use crate::kit::Kit;
use objmon::vm::ThreadId;
use objmon::{MonitorError, WaitOutcome};
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// Where a slot's object lives: in the `Vec` itself or in a `Box` of its own.
pub enum Place<S> {
    /// Inline.
    Inline(S),
    /// Boxed.
    Boxed(Box<S>),
}

impl<S> Deref for Place<S> {
    type Target = S;
    fn deref(&self) -> &S {
        match self {
            Place::Inline(s) => s,
            Place::Boxed(b) => b,
        }
    }
}

impl<S> std::ops::DerefMut for Place<S> {
    fn deref_mut(&mut self) -> &mut S {
        match self {
            Place::Inline(s) => s,
            Place::Boxed(b) => b,
        }
    }
}

/// Who is inside one logical object's critical section, as the workers saw it.
#[derive(Default)]
pub struct Truth {
    /// Identity inside (0 = nobody) in the high half, levels in the low half: one atomic,
    /// so that marking costs a bias owner's burst little beside its lock.
    held: AtomicU64,
    /// Bumped by bursts.
    pub bumps: AtomicU64,
}

impl Truth {
    fn acquired(&self, l: usize, me: u32, levels: u32) -> Result<(), String> {
        let mut cur = self.held.load(Ordering::Acquire);
        loop {
            let (who, n) = ((cur >> 32) as u32, cur as u32);
            if who != 0 && who != me {
                return Err(format!(
                    "two owners: object #{l} granted to thread T{me} while T{who} is inside it ({n} level(s))"
                ));
            }
            let new = (u64::from(me) << 32) | u64::from(n + levels);
            match self
                .held
                .compare_exchange(cur, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    crate::signal::granted();
                    return Ok(());
                }
                Err(c) => cur = c,
            }
        }
    }
    fn releasing(&self) {
        let _ = self
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| {
                let n = (cur as u32).saturating_sub(1);
                Some(if n == 0 {
                    0
                } else {
                    (cur & !0xffff_ffff) | u64::from(n)
                })
            });
    }
    fn take_all(&self) -> u32 {
        self.held.swap(0, Ordering::AcqRel) as u32
    }
}

/// What a case's threads share: the runtime (in the kit), the objects, the truth records.
pub struct Shared<K: Kit> {
    /// The surface and its runtime.
    pub kit: K,
    /// The objects, by slot.
    pub slots: RwLock<Vec<Place<K::Slot>>>,
    /// One per logical object (objects get numbers in creation order).
    pub truth: Vec<Truth>,
    /// The case's event sink's behaviours (`crate::sink`), if it has one.
    pub(crate) hostile: Option<Vec<crate::sink::Hostile>>,
    /// What the sink saw, by worker identity, until the driver checks it.
    pub(crate) seen: std::sync::Mutex<Vec<(u32, crate::sink::Seen)>>,
    /// The sink's own objects (locked only inside the sink; never moved).
    pub(crate) own: Vec<K::Slot>,
}

/// Logical objects a case may create.
pub const MAX_OBJECTS: usize = 64;

/// One call, resolved by the driver to slots and guard positions.
#[derive(Clone, Copy, Debug)]
pub enum Act {
    /// Lock slot `s` (logical `l`), pushing a guard.
    Lock { s: usize, l: usize },
    /// Lock slot `s` (logical `l`), which this worker holds, on a non-reentrant surface:
    /// the call must panic (answered as [`Out::Panicked`]) and take nothing.
    Relock { s: usize, l: usize },
    /// Try-lock (`ms` = 0) or try-lock-for `ms`.
    TryLock { s: usize, l: usize, ms: u64 },
    /// Drop guard `gi` (position in the worker's guards) of object `l`.
    Unlock { gi: usize },
    /// `mem::forget` guard `gi`.
    Forget { gi: usize },
    /// Wait on `s` (through guard `gi` if given; `held`: the model says it is held).
    Wait {
        s: usize,
        l: usize,
        gi: Option<usize>,
        ms: Option<u64>,
        held: bool,
    },
    /// Notify on `s` (through guard `gi` if given).
    Notify {
        s: usize,
        gi: Option<usize>,
        all: bool,
    },
    /// Owner queries of `s`.
    Query { s: usize },
    /// Identity hash of `s`.
    Hash { s: usize },
    /// Peeked identity hash of `s`.
    Peek { s: usize },
    /// Unstructured enter.
    Enter { s: usize, l: usize },
    /// Unstructured exit (`held`: the model says this handle holds it unstructured).
    Exit { s: usize, l: usize, held: bool },
    /// Read and clear the interrupt status.
    Interrupted,
    /// Poll.
    Poll,
    /// `n` lock / unlock pairs.
    Burst { s: usize, l: usize, n: u32 },
}

/// What a call returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Out {
    /// It returned, nothing to report.
    Done,
    /// A try-lock: whether it got the lock.
    Got(bool),
    /// holds, lock count (each if the surface tells), is_locked.
    Query(Option<bool>, Option<u32>, bool),
    /// An identity hash.
    Hash(Result<u32, MonitorError>),
    /// A peeked hash.
    Peek(Option<u32>),
    /// A wait's result and how long it took.
    Waited(Result<WaitOutcome, MonitorError>, Duration),
    /// A call that failed.
    Err(MonitorError),
    /// A flag (interrupted).
    Flag(bool),
    /// The surface has no such call.
    Unsupported,
    /// The call panicked (asked only where a panic is the documented answer), with this
    /// message.
    Panicked(String),
}

thread_local! {
    /// This thread is making a call whose documented answer is a panic: the panic hook
    /// stays quiet (the driver checks the message instead).
    static EXPECTED_PANIC: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Installs (once) the panic hook that stays quiet for the panics this thread expects.
fn quiet_hook() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // Cleared here: a sink's panic is caught by objmon, not by us.
            if !EXPECTED_PANIC.with(|c| c.replace(false)) {
                prev(info)
            }
        }));
    });
}

/// Panics without the panic hook's report (the hostile event sink, `crate::sink`).
pub(crate) fn panic_quietly(msg: &'static str) -> ! {
    quiet_hook();
    EXPECTED_PANIC.with(|c| c.set(true));
    std::panic::panic_any(msg)
}

/// Runs `f`, whose documented answer is a panic, without the panic hook's report of it.
fn expecting_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    quiet_hook();
    EXPECTED_PANIC.with(|c| c.set(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    EXPECTED_PANIC.with(|c| c.set(false));
    r.map_err(|p| {
        p.downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(a panic without a message)".into())
    })
}

/// A command to a worker.
pub enum Cmd {
    /// Start a phase.
    Begin,
    /// Make a call.
    Act(Act),
    /// Make a call "in native" (`ThreadHandle::in_native`; the driver sends it only on the
    /// vm surface, and only for a call that cannot block).
    Native(Act),
    /// End the phase, dropping leftover guards newest first if `true`.
    End(bool),
    /// End the thread; in a thread-local destructor try-lock `(slot, logical, identity)`.
    Quit(Option<(usize, usize, u32)>),
}

/// A worker's message to the driver.
pub enum Msg {
    /// Started: its thread id on the runtime (if the surface tells) and pthread.
    Ready(Option<ThreadId>, libc::pthread_t),
    /// A call's result, or a violation of [`Truth`].
    Out(Result<Out, String>),
    /// The phase ended.
    Ended,
    /// The thread-local destructor's try-lock: got it, or a violation.
    Tls(Result<bool, String>),
}

/// A worker thread's body: identity `me`, commands from `rx`, messages to `tx`.
pub fn run<K: Kit>(sh: Arc<Shared<K>>, me: u32, rx: Receiver<Cmd>, tx: Sender<Msg>) {
    let anchor = sh.kit.anchor();
    // SAFETY: pthread_self has no preconditions.
    let pt = unsafe { libc::pthread_self() };
    let _ = tx.send(Msg::Ready(K::id(&anchor), pt));
    let tap = crate::sink::CaseTap::install(&sh, me);
    loop {
        match rx.recv() {
            Ok(Cmd::Begin) => {}
            Ok(Cmd::Quit(tls)) => {
                crate::sink::CaseTap::<K>::uninstall();
                if let Some((s, l, ident)) = tls {
                    at_exit(sh.clone(), s, l, ident, tx.clone());
                }
                break;
            }
            Ok(_) | Err(_) => {
                crate::sink::CaseTap::<K>::uninstall();
                return;
            }
        }
        let slots = sh.slots.read().unwrap();
        if let Some(t) = &tap {
            t.phase(Some(&slots));
        }
        let th = sh.kit.attach();
        let mut guards: Vec<(usize, K::G<'_>)> = Vec::new();
        let mut unstructured: Vec<usize> = Vec::new();
        let lifo = loop {
            match rx.recv() {
                Ok(Cmd::Act(a)) => {
                    let r = act::<K>(&sh, &slots, &th, &mut guards, &mut unstructured, me, a);
                    if tx.send(Msg::Out(r)).is_err() {
                        return;
                    }
                }
                Ok(Cmd::Native(a)) => {
                    let mut run =
                        || act::<K>(&sh, &slots, &th, &mut guards, &mut unstructured, me, a);
                    let r = K::native(&th, &mut run)
                        .unwrap_or_else(|| Err("in native: the surface has no in_native".into()));
                    if tx.send(Msg::Out(r)).is_err() {
                        return;
                    }
                }
                Ok(Cmd::End(lifo)) => break lifo,
                _ => return,
            }
        };
        while !guards.is_empty() {
            let (l, g) = guards.remove(if lifo { guards.len() - 1 } else { 0 });
            sh.truth[l].releasing();
            drop(g);
        }
        drop(guards);
        // Dropping the phase handle releases its unstructured levels.
        for l in unstructured {
            sh.truth[l].releasing();
        }
        drop(th);
        if let Some(t) = &tap {
            t.phase(None);
        }
        drop(slots);
        if tx.send(Msg::Ended).is_err() {
            return;
        }
    }
    drop(tap);
    crate::sink::CaseTap::<K>::uninstall();
    drop(anchor);
}

fn act<'a, 'e: 'a, K: Kit>(
    sh: &Shared<K>,
    slots: &'e [Place<K::Slot>],
    th: &'a K::Th<'e>,
    guards: &mut Vec<(usize, K::G<'a>)>,
    unstructured: &mut Vec<usize>,
    me: u32,
    a: Act,
) -> Result<Out, String> {
    let t = &sh.truth;
    Ok(match a {
        Act::Lock { s, l } => match K::lock(th, &slots[s]) {
            Ok(g) => {
                t[l].acquired(l, me, 1)?;
                guards.push((l, g));
                Out::Done
            }
            Err(e) => Out::Err(e),
        },
        Act::Relock { s, l } => match expecting_panic(|| K::lock(th, &slots[s])) {
            Err(msg) => Out::Panicked(msg),
            Ok(Ok(g)) => {
                drop(g);
                return Err(format!(
                    "a second guard: T{me} locked #{l} (slot {s}) again while holding it, on a \
                     surface that is not reentrant (documented: it panics)"
                ));
            }
            Ok(Err(e)) => Out::Err(e),
        },
        Act::TryLock { s, l, ms } => {
            let r = if ms == 0 {
                K::try_lock(th, &slots[s])
            } else {
                K::try_lock_for(th, &slots[s], Duration::from_millis(ms))
            };
            match r {
                Ok(Some(g)) => {
                    t[l].acquired(l, me, 1)?;
                    guards.push((l, g));
                    Out::Got(true)
                }
                Ok(None) => Out::Got(false),
                Err(e) => Out::Err(e),
            }
        }
        Act::Unlock { gi } => {
            let (l, g) = guards.remove(gi);
            t[l].releasing();
            drop(g);
            Out::Done
        }
        Act::Forget { gi } => {
            let (_, g) = guards.remove(gi);
            std::mem::forget(g);
            Out::Done
        }
        Act::Wait { s, l, gi, ms, held } => {
            let levels = if held { t[l].take_all() } else { 0 };
            let g = gi.map(|i| &mut guards[i].1);
            let start = Instant::now();
            let r = K::wait(th, g, &slots[s], ms.map(Duration::from_millis));
            let elapsed = start.elapsed();
            match r {
                None => {
                    if held {
                        t[l].acquired(l, me, levels)?;
                    }
                    Out::Unsupported
                }
                Some(r) => {
                    if held {
                        t[l].acquired(l, me, levels)?;
                    }
                    Out::Waited(r, elapsed)
                }
            }
        }
        Act::Notify { s, gi, all } => {
            let g = gi.map(|i| &guards[i].1);
            match K::notify(th, g, &slots[s], all) {
                None => Out::Unsupported,
                Some(Ok(())) => Out::Done,
                Some(Err(e)) => Out::Err(e),
            }
        }
        Act::Query { s } => Out::Query(
            K::holds(th, &slots[s]),
            K::count(th, &slots[s]),
            K::is_locked(th, &slots[s]),
        ),
        Act::Hash { s } => match K::hash(th, &slots[s]) {
            Some(h) => Out::Hash(h),
            None => Out::Unsupported,
        },
        Act::Peek { s } => match K::peek(th, &slots[s]) {
            Some(h) => Out::Peek(h),
            None => Out::Unsupported,
        },
        Act::Enter { s, l } => match K::enter_u(th, &slots[s]) {
            Some(Ok(())) => {
                t[l].acquired(l, me, 1)?;
                unstructured.push(l);
                Out::Done
            }
            Some(Err(e)) => Out::Err(e),
            None => Out::Unsupported,
        },
        Act::Exit { s, l, held } => {
            // Marked out first when a level is given back; re-marked if the exit failed.
            if held {
                t[l].releasing();
            }
            match K::exit_u(th, &slots[s]) {
                Some(Ok(())) => {
                    if let Some(i) = unstructured.iter().position(|&o| o == l) {
                        unstructured.swap_remove(i);
                    }
                    Out::Done
                }
                Some(Err(e)) => {
                    if held {
                        t[l].acquired(l, me, 1)?;
                    }
                    Out::Err(e)
                }
                None => Out::Unsupported,
            }
        }
        Act::Interrupted => match K::interrupted(th) {
            Some(f) => Out::Flag(f),
            None => Out::Unsupported,
        },
        Act::Poll => {
            K::poll(th);
            Out::Done
        }
        Act::Burst { s, l, n } => {
            for i in 0..n {
                let g = if i % 4 == 3 {
                    match K::try_lock_for(th, &slots[s], Duration::from_secs(5)) {
                        Ok(Some(g)) => g,
                        Ok(None) => return Err(format!("burst on #{l}: try_lock_for(5 s) failed")),
                        Err(e) => return Ok(Out::Err(e)),
                    }
                } else {
                    match K::lock(th, &slots[s]) {
                        Ok(g) => g,
                        Err(e) => return Ok(Out::Err(e)),
                    }
                };
                t[l].acquired(l, me, 1)?;
                let v = t[l].bumps.load(Ordering::Relaxed);
                std::hint::spin_loop();
                t[l].bumps.store(v + 1, Ordering::Relaxed);
                t[l].releasing();
                drop(g);
            }
            Out::Done
        }
    })
}

thread_local! {
    static AT_EXIT: std::cell::RefCell<Option<AtExit>> = const { std::cell::RefCell::new(None) };
}

/// Work run by a thread-local destructor of an exiting worker.
struct AtExit(Option<Box<dyn FnOnce()>>);

impl Drop for AtExit {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f()
        }
    }
}

fn at_exit<K: Kit>(sh: Arc<Shared<K>>, s: usize, l: usize, me: u32, tx: Sender<Msg>) {
    let f = move || {
        let slots = sh.slots.read().unwrap();
        let th = sh.kit.attach();
        let r = match K::try_lock_for(&th, &slots[s], Duration::from_secs(1)) {
            Ok(Some(g)) => (|| {
                sh.truth[l].acquired(l, me, 1)?;
                if K::REENTRANT {
                    let inner =
                        K::lock(&th, &slots[s]).map_err(|e| format!("nested lock: {e:?}"))?;
                    sh.truth[l].acquired(l, me, 1)?;
                    sh.truth[l].releasing();
                    drop(inner);
                } else if let Ok(Some(inner)) = K::try_lock(&th, &slots[s]) {
                    drop(inner);
                    return Err(format!(
                        "a second guard: a thread-local destructor's try_lock of #{l} (slot {s}), \
                         which it holds, succeeded on a surface that is not reentrant"
                    ));
                }
                sh.truth[l].releasing();
                drop(g);
                Ok(true)
            })(),
            Ok(None) => Ok(false),
            Err(e) => Err(format!("try_lock in a thread-local destructor: {e:?}")),
        };
        drop(th);
        drop(slots);
        let _ = tx.send(Msg::Tls(r));
    };
    AT_EXIT.with(|c| *c.borrow_mut() = Some(AtExit(Some(Box::new(f)))));
}
