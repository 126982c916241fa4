//! The catalog of benches: each bench's name, the seed figure it reproduces, what one
//! operation is, its parameter sweep and the CLI arguments it takes ([`Bench`], [`Plan`]).

use crate::subject::Subject;
use std::time::Duration;

/// One benchmark of the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bench {
    /// Seed 000 Table 2 NoSync: the loop with an increment, no locking.
    NoSync,
    /// Seed 000 Sync: one unlocked object locked and unlocked per iteration.
    Sync,
    /// Seed 000 NestedSync: the object is already held once (nested level 1).
    NestedSync,
    /// Uncontended lock+unlock of every protocol, anchor and limit, each in the loop a user
    /// writes, all rows interleaved round by round (see `userloop.rs`).
    UserLoop,
    /// Seed 000 MultiSync n: n objects synchronized per iteration (working set n).
    MultiSync,
    /// Seed 000 Call: a non-synchronized (not inlined) method call per iteration.
    Call,
    /// Seed 000 CallSync: a synchronized method per iteration.
    CallSync,
    /// Seed 000 NestedCallSync: a synchronized method on an object already held.
    NestedCallSync,
    /// Seed 000 Threads n: n threads lock one object in a tight loop.
    Threads,
    /// Seed 002 §5.1 Cloud: 10 threads randomly lock 1,000,000 objects for a fixed time.
    Cloud,
    /// Cloud with n objects, n = 1 … 10^6 (does the cost per acquisition stay flat as the
    /// cloud grows?).
    CloudGrowth,
    /// Seed 002 §5.1 ProdCons: the producer allocates, locks once, enqueues; the consumer
    /// dequeues, locks once, drops.
    ProdCons,
    /// Seed 002 §5.3 AllocLock k: allocate an object, lock it k times, drop it.
    AllocLock,
    /// Seed 003 'mutex test': a synchronized method called 300,000 times.
    MutexTest,
    /// Seed 003 'tree test': a balanced tree of 65,535 nodes traversed through synchronized
    /// methods.
    TreeTest,
    /// Seed 004 §5.1: one thread waits on the object (forcing the fat monitor where the
    /// protocol has one) while another calls a synchronized method on it, uncontended.
    SystemMonitor,
    /// Two threads hand a turn back and forth with wait / notifyAll (not in the seeds).
    WaitNotify,
}

/// All benchmarks in report order.
pub const ALL: [Bench; 17] = [
    Bench::NoSync,
    Bench::Sync,
    Bench::NestedSync,
    Bench::UserLoop,
    Bench::MultiSync,
    Bench::Call,
    Bench::CallSync,
    Bench::NestedCallSync,
    Bench::Threads,
    Bench::Cloud,
    Bench::CloudGrowth,
    Bench::ProdCons,
    Bench::AllocLock,
    Bench::MutexTest,
    Bench::TreeTest,
    Bench::SystemMonitor,
    Bench::WaitNotify,
];

/// Most threads a bench may run: one per thread id of the library
/// ([`objmon::vm::MAX_THREAD_ID`], 15 bits as in seed 000 §2.3). Every locker attaches to
/// the runtime and holds an id while it runs; the thread that starts them holds none.
pub const MAX_THREADS: u64 = objmon::vm::MAX_THREAD_ID as u64;

/// Most objects in a working set (`multi-sync`, `cloud-growth`, `stress --objects`): ten
/// times the seeds' largest (Cloud's 10^6), a few hundred MB at most with the largest
/// subjects' objects, each in a 16-byte-aligned [`Slot`](super::Slot).
pub const MAX_OBJECTS: u64 = 10_000_000;

/// Most locks per object in `alloc-lock` (seed 002 sweeps k = 1…15): with k ≤ 1000 a quick
/// plan's repetition still allocates ~1000 objects (10^6 pairs / (k + 1)), so the figure is
/// a mean over many objects rather than one object's locks.
pub const MAX_LOCKS: u64 = 1_000;

/// Most timed repetitions per figure (`--reps`): the median and spread of more repetitions
/// do not move, and each repetition is also cut to the figure's time budget
/// ([`Plan::figure_budget`]).
pub const MAX_REPS: u64 = 1_000;

/// One numeric argument of `run` as a bench takes it: what the value means there and the
/// largest value it takes (the smallest is 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgSpec {
    /// What the value is, for messages (`n, objects in the working set`).
    pub what: &'static str,
    /// The largest valid value.
    pub max: u64,
}

impl ArgSpec {
    pub(super) const fn new(what: &'static str, max: u64) -> Self {
        ArgSpec { what, max }
    }

    /// Whether `v` is valid here.
    pub fn accepts(self, v: u64) -> bool {
        (1..=self.max).contains(&v)
    }
}

impl std::fmt::Display for ArgSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}, 1 to {}", self.what, self.max)
    }
}

/// Sizes of one run (`--quick` or full).
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Timed repetitions per figure (after one warm-up).
    pub reps: usize,
    /// Lock+unlock pairs per repetition in the single-threaded loops.
    pub pairs: u64,
    /// Cloud: how long each repetition runs.
    pub cloud_time: Duration,
    /// Cloud: objects in the cloud.
    pub cloud_objects: usize,
    /// Cloud growth: how long each repetition runs (per cloud size).
    pub growth_time: Duration,
    /// ProdCons: objects produced per repetition.
    pub productions: u64,
    /// Tree test: traversals per repetition.
    pub traversals: u32,
    /// System monitor: synchronized calls per repetition.
    pub system_calls: u64,
    /// Wait-notify: hand-overs per repetition.
    pub handovers: u32,
    /// Time one figure may take: when the warm-up shows that `reps` runs would exceed it,
    /// fewer are timed (at least one; the record says how many). Keeps a pathological row
    /// (say, a revocation storm) from eating the whole `--quick` budget.
    pub figure_budget: Duration,
    /// Whether this is the quick plan.
    pub quick: bool,
}

impl Plan {
    /// The plan for `quick` (CI smoke runs, about 2½ minutes for the whole report on 2 cores)
    /// or full.
    pub fn new(quick: bool, reps: Option<usize>) -> Self {
        if quick {
            Plan {
                reps: reps.unwrap_or(5),
                pairs: 1_000_000,
                cloud_time: Duration::from_millis(100),
                cloud_objects: 1_000_000,
                growth_time: Duration::from_millis(20),
                productions: 50_000,
                traversals: 5,
                system_calls: 400_000,
                handovers: 2_000,
                figure_budget: Duration::from_secs(3),
                quick,
            }
        } else {
            Plan {
                reps: reps.unwrap_or(7),
                pairs: 4_000_000,
                cloud_time: Duration::from_secs(1),
                cloud_objects: 1_000_000,
                growth_time: Duration::from_millis(200),
                productions: 1_000_000,
                traversals: 50,
                system_calls: 8_000_000,
                handovers: 20_000,
                figure_budget: Duration::from_secs(30),
                quick,
            }
        }
    }
}

impl Bench {
    /// CLI name.
    pub fn name(self) -> &'static str {
        match self {
            Bench::NoSync => "no-sync",
            Bench::Sync => "sync",
            Bench::NestedSync => "nested-sync",
            Bench::UserLoop => crate::userloop::BENCH,
            Bench::MultiSync => "multi-sync",
            Bench::Call => "call",
            Bench::CallSync => "call-sync",
            Bench::NestedCallSync => "nested-call-sync",
            Bench::Threads => "threads",
            Bench::Cloud => "cloud",
            Bench::CloudGrowth => "cloud-growth",
            Bench::ProdCons => "prod-cons",
            Bench::AllocLock => "alloc-lock",
            Bench::MutexTest => "mutex-test",
            Bench::TreeTest => "tree-test",
            Bench::SystemMonitor => "system-monitor",
            Bench::WaitNotify => "wait-notify",
        }
    }

    /// Looks a bench up by CLI name.
    pub fn by_name(name: &str) -> Option<Bench> {
        ALL.iter().copied().find(|b| b.name() == name)
    }

    /// Where the experiment comes from and what one operation is.
    pub fn describe(self) -> (&'static str, &'static str) {
        match self {
            Bench::NoSync => (
                "seed 000 (thin locks) Table 2",
                "ns per loop iteration, no lock",
            ),
            Bench::Sync => ("seed 000 (thin locks) Table 2", "ns per lock+unlock"),
            Bench::NestedSync => ("seed 000 (thin locks) Table 2", "ns per nested lock+unlock"),
            Bench::UserLoop => (
                "objmon's own, no seed figure",
                "ns per lock+unlock in the loop a user writes; rows interleaved round by round",
            ),
            Bench::MultiSync => (
                "seed 000 (thin locks) Table 2",
                "ns per lock+unlock, param = objects in the working set",
            ),
            Bench::Call => ("seed 000 (thin locks) Table 2", "ns per plain call"),
            Bench::CallSync => ("seed 000 (thin locks) Table 2", "ns per synchronized call"),
            Bench::NestedCallSync => (
                "seed 000 (thin locks) Table 2",
                "ns per nested synchronized call",
            ),
            Bench::Threads => (
                "seed 000 (thin locks) Table 2",
                "ns per lock+unlock (wall time / all pairs), param = threads on one object",
            ),
            Bench::Cloud => (
                "seed 002 (FABLE biased locking) §5.1 Fig. 8",
                "ns per acquisition (wall / all acquisitions of all threads)",
            ),
            Bench::CloudGrowth => (
                "objmon's own, after seed 002 (FABLE biased locking) §5.1 Fig. 8",
                "ns per acquisition (wall / all acquisitions), param = objects in the cloud",
            ),
            Bench::ProdCons => (
                "seed 002 (FABLE biased locking) §5.1 Fig. 11",
                "ns per object produced and consumed",
            ),
            Bench::AllocLock => (
                "seed 002 (FABLE biased locking) §5.3 Fig. 16",
                "ns per iteration (allocate, lock k times, drop), param = k",
            ),
            Bench::MutexTest => ("seed 003 (CACAO) Motivation", "ns per synchronized call"),
            Bench::TreeTest => (
                "seed 003 (CACAO) Motivation",
                "ns per synchronized node visit",
            ),
            Bench::SystemMonitor => (
                "seed 004 (tasuki) §5.1 Table 2",
                "ns per synchronized call while another thread waits on the object",
            ),
            Bench::WaitNotify => (
                "objmon's own, no seed figure",
                "ns per hand-over (wait + notifyAll)",
            ),
        }
    }

    /// The parameter values a run sweeps (`--param` overrides).
    pub fn params(self, plan: &Plan) -> Vec<u64> {
        match self {
            // The full plan gives the growth curve at every decade; quick
            // runs sample it (`--param` gives any other set).
            Bench::MultiSync if plan.quick => vec![1, 100, 10_000, 1_000_000],
            Bench::MultiSync => vec![1, 10, 100, 1_000, 10_000, 100_000, 1_000_000],
            Bench::CloudGrowth if plan.quick => vec![1, 1_000, 1_000_000],
            Bench::CloudGrowth => vec![1, 10, 100, 1_000, 10_000, 100_000, 1_000_000],
            Bench::Threads if plan.quick => vec![1, 2, 4],
            Bench::Threads => vec![1, 2, 4, 8, 16],
            Bench::AllocLock if plan.quick => vec![1, 2, 3, 5, 8, 12, 15],
            Bench::AllocLock => (1..=15).collect(),
            _ => vec![0],
        }
    }

    /// What `run --param` means for this bench and the values it takes; `None` for a bench
    /// without a parameter (its `--param` would be ignored, so the CLI refuses it).
    pub fn param_arg(self) -> Option<ArgSpec> {
        match self {
            Bench::MultiSync => Some(ArgSpec::new("n, objects in the working set", MAX_OBJECTS)),
            Bench::CloudGrowth => Some(ArgSpec::new("n, objects in the cloud", MAX_OBJECTS)),
            Bench::Threads => Some(ArgSpec::new("n, threads on one object", MAX_THREADS)),
            Bench::AllocLock => Some(ArgSpec::new("k, locks per allocated object", MAX_LOCKS)),
            _ => None,
        }
    }

    /// What `run --threads` means for this bench and the values it takes; `None` for a bench
    /// whose thread count is fixed (its `--threads` would be ignored, so the CLI refuses it).
    pub fn threads_arg(self) -> Option<ArgSpec> {
        match self {
            Bench::Threads => Some(ArgSpec::new("threads on one object", MAX_THREADS)),
            Bench::Cloud | Bench::CloudGrowth => Some(ArgSpec::new("lockers", MAX_THREADS)),
            _ => None,
        }
    }

    /// Threads the bench runs (for the record), given its parameter.
    pub fn threads(self, param: u64, cloud_threads: usize) -> usize {
        match self {
            Bench::Threads => param as usize,
            Bench::Cloud | Bench::CloudGrowth => cloud_threads,
            Bench::ProdCons | Bench::SystemMonitor | Bench::WaitNotify => 2,
            _ => 1,
        }
    }

    /// Whether the bench also runs every value of a subject's knob as extra rows
    /// ([`Subject::KNOB`]; `fable[learn-limit=N]`): AllocLock, as seed 002 §5.3 Figure 16
    /// sweeps FABLE's learn limit N = 1…10 over k. (The seed's Figure 9 sweeps it on Cloud
    /// too; not reproduced here.)
    pub fn sweeps_knob(self) -> bool {
        self == Bench::AllocLock
    }

    /// Whether the figure does not depend on the subject (runs once, as row `none`).
    pub fn subject_free(self) -> bool {
        matches!(self, Bench::NoSync | Bench::Call)
    }

    /// Why `S` cannot run this bench, if it cannot.
    pub fn skip_reason<S: Subject>(self) -> Option<&'static str> {
        let nested = matches!(self, Bench::NestedSync | Bench::NestedCallSync);
        let threaded = matches!(
            self,
            Bench::Threads
                | Bench::Cloud
                | Bench::CloudGrowth
                | Bench::ProdCons
                | Bench::WaitNotify
        );
        if S::CONTENDED_ONLY && self != Bench::Threads {
            Some("differs only where threads contend: threads bench only")
        } else if nested && !S::REENTRANT {
            Some("not reentrant")
        } else if threaded && !S::EXCLUSIVE {
            Some("excludes no other thread")
        } else if self == Bench::WaitNotify && !S::WAIT {
            Some("has no wait/notify")
        } else {
            None
        }
    }
}
