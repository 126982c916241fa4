//! The reference model: Java monitor semantics per logical object (owner, levels, wait set,
//! pending notifications, identity hash) and per worker (guards, unstructured holds, what it
//! is blocked in, interrupt status).
//!
//! Invariants the driver keeps with it: an object's `count` is every level its `owner`
//! holds (guards + unstructured + forgotten); `owner == 0` iff `count == 0`; a waiter's
//! levels are parked in its [`Busy::Waiting`] until it returns; `pending` never exceeds the
//! waiters. An object moved while held (only forgotten levels can be held across a phase
//! end) is `tainted`: its owner still holds it and nobody else may get it, but its exact
//! count is not checked (the move is what the protocols may not expect).

/// What a worker is doing while the driver goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Busy {
    /// Ready for a command.
    Idle,
    /// In an untimed wait on `l`, its levels parked.
    Waiting {
        /// The object.
        l: usize,
        /// Levels held before the wait.
        count: u32,
        /// Of which forgotten.
        forgotten: u32,
        /// Interrupted meanwhile.
        interrupted: bool,
    },
    /// Blocked locking `l` (unstructured if `u`).
    Acquiring {
        /// The object.
        l: usize,
        /// Unstructured enter.
        u: bool,
    },
    /// Blocked in a notify of `l` (all waiters if `all`) that takes the mutex, which another
    /// thread holds (lock_api's condvar, notified without the mutex).
    Notifying {
        /// The object.
        l: usize,
        /// `notify_all`.
        all: bool,
    },
    /// In a burst on `l`.
    Burst {
        /// The object.
        l: usize,
    },
}

/// One logical object.
#[derive(Clone, Debug, Default)]
pub struct Obj {
    /// Identity holding it, 0 = nobody.
    pub owner: u32,
    /// Levels held.
    pub count: u32,
    /// Of which passed to `mem::forget` (held for good).
    pub forgotten: u32,
    /// Moved while held.
    pub tainted: bool,
    /// The identity hash, once asked.
    pub hash: Option<u32>,
    /// Notifications not yet delivered to the waiters.
    pub pending: u32,
    /// Lock / unlock pairs that bursts made.
    pub bursts: u64,
    /// Dropped by the adversary.
    pub dead: bool,
    /// Hashed while another thread held it, under a protocol whose owner's release does not
    /// settle a hash parked then (`Target::loose_hash_limit`): a move before the next hash
    /// call may lose that hash (`docs/soundness.md` §6).
    pub loose: bool,
    /// Moved to (or made at) an address where a loose hash may still be parked for the
    /// object that was there: until its own next hash call adopts a hash, it may show that
    /// one (the other half of the same limit: "loses or inherits").
    pub inherit: bool,
    /// Moved by the adversary since it was made: an event of its monitor may name it by the
    /// address it had when the monitor was bound to it (`crate::sink`, `STALE_EVENT_OBJECT`).
    pub moved: bool,
    /// Hashed while another thread held it, under a protocol whose owner's release settles
    /// the parked hash (`thin`): until the owner's last release, a move (possible only with
    /// that hold forgotten) makes the object `loose`.
    pub loose_settles: bool,
}

/// One worker as the model sees it.
#[derive(Clone, Debug)]
pub struct WorkerModel {
    /// Its identity (a new one for each thread).
    pub ident: u32,
    /// The objects of its guards, oldest first (as the worker's own `Vec`).
    pub guards: Vec<usize>,
    /// Unstructured levels of this phase's handle, per object.
    pub unstructured: Vec<(usize, u32)>,
    /// What it is doing.
    pub busy: Busy,
    /// Its interrupt status.
    pub interrupt: bool,
    /// It ends its thread at the next phase end (try-locking this slot at exit, if any).
    pub exit: Option<Option<u8>>,
    /// Its thread forgot a guard on a process-wide runtime: counted in the id budget
    /// (`kit::retire_id`).
    pub retires_id: bool,
}

impl WorkerModel {
    /// A fresh worker with identity `ident`.
    pub fn new(ident: u32) -> Self {
        Self {
            ident,
            guards: Vec::new(),
            unstructured: Vec::new(),
            busy: Busy::Idle,
            interrupt: false,
            exit: None,
            retires_id: false,
        }
    }
    /// Its unstructured levels on `l`.
    pub fn unstructured_on(&self, l: usize) -> u32 {
        self.unstructured
            .iter()
            .find(|(o, _)| *o == l)
            .map_or(0, |(_, n)| *n)
    }
    /// Adds `d` unstructured levels on `l` (negative to remove).
    pub fn add_unstructured(&mut self, l: usize, d: i32) {
        match self.unstructured.iter_mut().position(|(o, _)| *o == l) {
            Some(i) => {
                let n = (self.unstructured[i].1 as i32 + d) as u32;
                if n == 0 {
                    self.unstructured.swap_remove(i);
                } else {
                    self.unstructured[i].1 = n;
                }
            }
            None => {
                if d > 0 {
                    self.unstructured.push((l, d as u32));
                }
            }
        }
    }
    /// Position of its newest guard on `l`.
    pub fn guard_on(&self, l: usize) -> Option<usize> {
        self.guards.iter().rposition(|&o| o == l)
    }
}

/// The whole model of a case.
#[derive(Debug, Default)]
pub struct Model {
    /// Objects by logical number.
    pub objs: Vec<Obj>,
    /// Workers by index.
    pub workers: Vec<WorkerModel>,
    /// A hash was parked loose in this case: an entry by address may outlive the object it
    /// was made for at that address (`Obj::inherit`).
    pub loose_parked: bool,
    /// A guard was forgotten in this case under a protocol that counts a bias owner's holds
    /// by address (`RECORDS_BY_ADDRESS`): a header biased to that owner that comes to the
    /// address later, by any move, inherits the hold (documented), so no moved object's lock
    /// state is known any more.
    pub forgot_by_address: bool,
}

impl Model {
    /// Workers waiting on `l`.
    pub fn waiters(&self, l: usize) -> impl Iterator<Item = usize> + '_ {
        self.workers
            .iter()
            .enumerate()
            .filter(move |(_, w)| matches!(w.busy, Busy::Waiting { l: o, .. } if o == l))
            .map(|(i, _)| i)
    }
    /// Whether a worker other than `but` waits on `l` with forgotten levels: once notified it
    /// takes `l` back with levels nobody releases, so a thread that would need `l` after it
    /// (another waiter, a blocked locker) could be left blocked for good, by the schedule.
    pub fn forgotten_waiter(&self, l: usize, but: usize) -> bool {
        self.workers.iter().enumerate().any(|(i, w)| {
            i != but && matches!(w.busy, Busy::Waiting { l: o, forgotten, .. } if o == l && forgotten > 0)
        })
    }
    /// Workers blocked locking `l` (or taking its mutex for a notify).
    pub fn blocked(&self, l: usize) -> impl Iterator<Item = usize> + '_ {
        self.workers
            .iter()
            .enumerate()
            .filter(move |(_, w)| {
                matches!(w.busy, Busy::Acquiring { l: o, .. } | Busy::Notifying { l: o, .. } if o == l)
            })
            .map(|(i, _)| i)
    }
    /// Workers that must get `l` once it is free: blocked lockers, and waiters if a
    /// notification is pending or they were interrupted.
    pub fn candidates(&self, l: usize) -> Vec<usize> {
        let pending = self.objs[l].pending > 0;
        self.workers
            .iter()
            .enumerate()
            .filter(|(_, w)| match w.busy {
                Busy::Acquiring { l: o, .. } | Busy::Notifying { l: o, .. } => o == l,
                Busy::Waiting {
                    l: o, interrupted, ..
                } => o == l && (pending || interrupted),
                _ => false,
            })
            .map(|(i, _)| i)
            .collect()
    }
    /// The worker whose identity is `ident`, if it is alive.
    pub fn worker_of(&self, ident: u32) -> Option<usize> {
        self.workers.iter().position(|w| w.ident == ident)
    }
    /// Whether a lock of `l` by worker `w` would return at once.
    pub fn lock_is_immediate(&self, w: usize, l: usize) -> bool {
        let o = &self.objs[l];
        o.owner == 0 || o.owner == self.workers[w].ident
    }
    /// Whether a lock of `l` by worker `w` may block and is sure to end: the owner is an
    /// idle worker whose every level on `l` is a guard it will drop by the phase end.
    pub fn lock_may_block(&self, l: usize) -> bool {
        let o = &self.objs[l];
        if self.forgotten_waiter(l, usize::MAX) {
            // Once notified, that waiter takes the lock back with levels nobody releases.
            return false;
        }
        match self.worker_of(o.owner) {
            Some(x) => {
                let x = &self.workers[x];
                x.busy == Busy::Idle && o.forgotten == 0 && x.unstructured_on(l) == 0
            }
            None => false,
        }
    }
    /// Takes one level of `l` off its owner.
    pub fn release(&mut self, l: usize) {
        let o = &mut self.objs[l];
        o.count -= 1;
        if o.count == 0 {
            o.owner = 0;
            o.loose_settles = false;
        }
    }
    /// Gives one level of `l` to identity `ident`.
    pub fn acquire(&mut self, l: usize, ident: u32) {
        let o = &mut self.objs[l];
        o.owner = ident;
        o.count += 1;
    }
    /// Keeps `pending` within the waiters.
    pub fn clamp_pending(&mut self, l: usize) {
        let n = self.waiters(l).count() as u32;
        let o = &mut self.objs[l];
        o.pending = o.pending.min(n);
    }
}
