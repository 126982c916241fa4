//! `monitor-cache`: the JDK 1.1 design that seed 000 measures thin locks against (§1: "Monitors
//! are kept outside of the objects to avoid the space cost, and are looked up in a monitor
//! cache ... the monitor cache itself must be locked during lookups to prevent race conditions
//! with concurrent modifiers"; §3: "JDK111"). It is the historical baseline for the papers'
//! ratios, so it is built the way a careful VM would build it, not as a strawman:
//!
//! - one cache lock (a futex mutex: one compare-and-swap to lock, one exchange to unlock when
//!   uncontended), held only for the look-up and the pin bookkeeping, never while blocking;
//! - the cache is a hash map from the object's address to its monitor binding with a cheap
//!   multiplicative hash of the address (no SipHash), so a look-up is a few instructions;
//! - a monitor stays bound to its object after the last unlock (cached: relocking the same
//!   object allocates nothing); bindings are swept back to the monitor table's free list only
//!   when the cache holds [`CACHE_SIZE`] bindings and a new object needs one — which is the
//!   behaviour seed 000 §3 observes ("the monitor cache thrashes its free list when the
//!   working set of monitors exceeds the size of the monitor cache") — or when the monitor
//!   table is full;
//! - every operation, nested ones included, looks the monitor up under the cache lock (§3:
//!   "The vanilla JDK111 is still much slower, because it must perform a lookup in the monitor
//!   cache"); the monitor itself is the same `FatMonitor` every protocol uses (tasuki entry
//!   lock, JLS wait set), so the comparison isolates the cost of the cache.
//!
//! Header ([`HostWord`]): one 32-bit word the locking paths never read or write.
//!
//! | bits  | meaning                                                                  |
//! |-------|--------------------------------------------------------------------------|
//! | 31..8 | identity hash (24 bits, 0 = none), installed by one compare-and-swap     |
//! | 7..0  | host bits — otherwise the word only gives the object a stable address    |
//!
//! Identity hash as in `cacao`: any thread, any lock state, one compare-and-swap, no cost
//! beyond the word (whose host now keeps 8 of its 32 bits).
//!
//! Lock bits per object: 0. Memory when many objects are locked at once: per bound object one
//! monitor (64 bytes on x86-64,
//! `MonitorTable::monitor_bytes`) and one cache
//! slot (16 bytes, [`MonitorCacheState::slot_bytes`], plus the map's control byte, at a load
//! factor of at most 7/8); unlocked objects stay bound until a sweep, so the cache holds up to
//! `max(CACHE_SIZE, objects locked at once)` bindings: k objects locked at once cost about
//! 130 · max(128, k) bytes.
//!
//! A thread that must wait for the monitor *pins* the binding (a `users` count under the cache
//! lock: owner, blocked entrants, waiters), so a sweep or a reclaim never unbinds a monitor in
//! use; a sweep or reclaim also leaves a binding whose monitor is not idle, because the
//! last exit drops the owner's pin under the cache lock and releases the monitor after it
//! (`exit`). Atomic operations per path: every enter and exit: the cache lock's
//! compare-and-swap and exchange, plus the monitor's (enter: one compare-and-swap; nested:
//! none; last exit: no read-modify-write, and a SeqCst fence only on the seed's Figure 7
//! system lock, `tasuki.rs`).
//!
//! Measurements (contended, uncontended, where the time goes): docs/benchmarks.md.
//!
//! **One runtime per address**: the cache names nothing in the header, so
//! a new binding first claims the object's address for this runtime in the process-wide set
//! (`MonitorTable::claim`, `binding.rs`), and a sweep or reclaim releases it with the binding.
//! Another live runtime's binding of the address is `ForeignHeader`. A cache miss costs a
//! claim and, at its sweep, a release (about 235 instructions together); hits cost nothing.

use super::cacao::HostWord;
use super::Protocol;
use crate::binding::AddrHasher;
use crate::monitor::{FatMonitor, WaitOutcome};
use crate::protocol::ThreadContext;
use crate::runtime::{Config, Runtime};
use crate::sync::{lock, Mutex, MutexGuard};
use crate::table::MonitorIndex;
use crate::thread::ThreadId;
use crate::MonitorError;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::time::Instant;

/// Bindings the cache holds before binding a new object sweeps the unused ones away.
#[cfg(not(loom))]
pub const CACHE_SIZE: usize = 128;
/// Bindings the cache holds before a sweep (tiny under loom, so that the models sweep).
#[cfg(loom)]
pub const CACHE_SIZE: usize = 1;

/// A cached monitor of one object.
struct Binding {
    idx: MonitorIndex,
    /// Threads that own the monitor, are blocked entering it, or wait in its wait set.
    users: u32,
}

type Map = HashMap<usize, Binding, BuildHasherDefault<AddrHasher>>;

/// The runtime-wide state of `monitor-cache`: the cache and its lock.
pub struct MonitorCacheState {
    cache: Mutex<Map>,
}

impl MonitorCacheState {
    /// Bytes of one cache slot (key and binding), not counting the map's control byte.
    pub fn slot_bytes() -> usize {
        std::mem::size_of::<(usize, Binding)>()
    }

    /// Objects with a monitor bound in the cache now.
    pub fn bound(&self) -> usize {
        lock(&self.cache).len()
    }
}

impl std::fmt::Debug for MonitorCacheState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MonitorCacheState")
            .field("bound", &self.bound())
            .finish()
    }
}

/// The `monitor-cache` protocol (see the module documentation).
#[derive(Debug)]
pub enum MonitorCache {}

impl MonitorCache {
    /// Gives every unused binding's monitor back to the monitor table: no pins, and the
    /// monitor idle (an owner drops its pin at its last exit just before it releases the
    /// monitor, with the cache lock no longer held; see `exit`).
    fn sweep(rt: &Runtime<Self>, c: &mut Map) -> usize {
        let before = c.len();
        c.retain(|&o, b| {
            if b.users == 0 && rt.monitors().get(b.idx).is_idle() {
                rt.monitors().free(b.idx);
                rt.monitors().release(o);
                false
            } else {
                true
            }
        });
        before - c.len()
    }

    /// Under the cache lock: `o`'s binding, binding a monitor first if it has none.
    fn binding<'c>(
        rt: &Runtime<Self>,
        c: &'c mut MutexGuard<'_, Map>,
        o: usize,
    ) -> Result<&'c mut Binding, MonitorError> {
        if !c.contains_key(&o) {
            // The address becomes this runtime's before it gets an entry here; another live
            // runtime's entry for it is `ForeignHeader` (`binding.rs`).
            rt.monitors().claim(o)?;
            if c.len() >= CACHE_SIZE {
                Self::sweep(rt, c);
            }
            let idx = match rt.monitors().allocate() {
                Ok(idx) => Ok(idx),
                Err(MonitorError::MonitorTableFull) if Self::sweep(rt, c) > 0 => {
                    rt.monitors().allocate()
                }
                Err(e) => Err(e),
            };
            let idx = idx.inspect_err(|_| rt.monitors().release(o))?;
            rt.monitors().bind(idx, o);
            c.insert(o, Binding { idx, users: 0 });
        }
        Ok(c.get_mut(&o).expect("just bound"))
    }

    /// Looks `o` up under the cache lock; pins it unless `t` already owns it.
    fn lookup_and_pin<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        o: usize,
    ) -> Result<&'r FatMonitor, MonitorError> {
        let mut c = lock(&rt.state().cache);
        let b = Self::binding(rt, &mut c, o)?;
        let m = rt.monitors().get(b.idx);
        if !m.is_owned_by(t.core()) {
            b.users += 1;
        }
        Ok(m)
    }

    /// Under the cache lock: `o`'s monitor if `t` owns it.
    fn owned<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        o: usize,
    ) -> Result<&'r FatMonitor, MonitorError> {
        let c = lock(&rt.state().cache);
        c.get(&o)
            .map(|b| rt.monitors().get(b.idx))
            .filter(|m| m.is_owned_by(t.core()))
            .ok_or(MonitorError::IllegalMonitorState)
    }
}

impl Protocol for MonitorCache {
    const NAME: &'static str = "monitor-cache";
    const SUMMARY: &'static str =
        "JDK 1.1: monitors outside the object, looked up in a cache locked on every operation";
    const HEADER_LOCK_BITS: u32 = 0;

    type Header = HostWord;
    type State = MonitorCacheState;
    type ThreadState = ();
    type Hint = ();

    fn new_state(_: &Config) -> MonitorCacheState {
        MonitorCacheState {
            cache: Mutex::new(Map::default()),
        }
    }
    fn new_thread_state(_: ThreadId, _: &Config) {}

    unsafe fn lock(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        _: u64,
        h: &HostWord,
    ) -> Result<(), MonitorError> {
        Self::lookup_and_pin(rt, t, h.addr())?.enter(t.core_arc())
    }

    unsafe fn try_enter(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &HostWord,
    ) -> Result<bool, MonitorError> {
        let o = h.addr();
        let m = Self::lookup_and_pin(rt, t, o)?;
        if m.is_owned_by(t.core()) {
            return m.enter(t.core_arc()).map(|()| true);
        }
        if m.try_enter(t.core())? {
            return Ok(true);
        }
        let mut c = lock(&rt.state().cache);
        c.get_mut(&o).expect("a pinned binding stays").users -= 1;
        Ok(false)
    }

    /// Looks the monitor up under the cache lock (seed 000 §3) and releases it after the
    /// cache lock: at the last level the owner's pin goes under the cache lock, and the
    /// monitor, still ours, keeps the binding from a sweep or a reclaim until we release it
    /// (both free only idle monitors). Not holding the cache lock across the release keeps
    /// the release's barrier, its read of the entry queue (a miss on the monitor's line when
    /// contended) and any wake-up out of the one lock every operation of every thread takes
    /// (with it inside, 8 threads on one object spend half their time in `exit`).
    unsafe fn unlock(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        _: u64,
        _: (),
        h: &HostWord,
    ) -> Result<(), MonitorError> {
        let m = {
            let mut c = lock(&rt.state().cache);
            let b = c
                .get_mut(&h.addr())
                .ok_or(MonitorError::IllegalMonitorState)?;
            let m = rt.monitors().get(b.idx);
            match m.count_for(t.core()) {
                0 => return Err(MonitorError::IllegalMonitorState),
                1 => b.users -= 1,
                _ => {}
            }
            m
        };
        m.exit(t.core())
    }

    unsafe fn wait(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &HostWord,
        deadline: Option<Instant>,
    ) -> Result<WaitOutcome, MonitorError> {
        // The waiter stays a user of the binding, so no sweep takes the monitor away.
        Self::owned(rt, t, h.addr())?.wait(t.core_arc(), deadline)
    }

    unsafe fn notify(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &HostWord,
        all: bool,
    ) -> Result<(), MonitorError> {
        Self::owned(rt, t, h.addr())?.notify(t.core(), all)
    }

    fn lock_count(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &HostWord) -> u32 {
        Self::owned(rt, t, h.addr()).map_or(0, |m| m.count_for(t.core()))
    }

    fn owner_of(rt: &Runtime<Self>, h: &HostWord) -> Option<ThreadId> {
        let c = lock(&rt.state().cache);
        c.get(&h.addr())
            .and_then(|b| rt.monitors().get(b.idx).owner())
    }

    /// Unbinds the dead object's monitor: its address may be reused by a new object. A
    /// monitor still in use (a forgotten guard) is leaked, not freed.
    fn reclaim(rt: &Runtime<Self>, h: &mut HostWord) {
        let mut c = lock(&rt.state().cache);
        if let Some(b) = c.remove(&h.addr()) {
            if b.users == 0 && rt.monitors().get(b.idx).is_idle() {
                rt.monitors().free(b.idx);
            }
            // The entry is gone (its monitor freed or leaked): so is the claim.
            rt.monitors().release(h.addr());
        }
        drop(c);
        h.clear_hash();
    }

    const HASH_BITS: u32 = HostWord::HASH_BITS;

    /// As `cacao`: one compare-and-swap into the [`HostWord`]'s hash bits (31..8).
    unsafe fn identity_hash(
        _rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &HostWord,
    ) -> Result<u32, MonitorError> {
        Ok(h.hash(|| crate::hash::fresh(t.core(), Self::HASH_BITS)))
    }

    fn peek_identity_hash(_rt: &Runtime<Self>, h: &HostWord) -> Option<u32> {
        h.peek_hash()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::vm::Runtime;

    /// A monitor stays cached after the last unlock: relocking allocates nothing.
    #[test]
    fn monitors_stay_cached() {
        let rt = Runtime::<MonitorCache>::with_defaults();
        let me = rt.attach().unwrap();
        let h = HostWord::new(7);
        for _ in 0..100 {
            drop(me.enter(&h).unwrap());
        }
        assert_eq!(rt.monitors().allocations(), 1);
        assert_eq!(rt.state().bound(), 1);
        assert_eq!(h.bits(), 7);
    }

    /// Seed 000 §3: beyond the cache size, binding a new object sweeps the unused bindings
    /// back to the free list (and the working set thrashes it); locked ones survive.
    #[test]
    fn full_cache_sweeps_unused_bindings() {
        let rt = Runtime::<MonitorCache>::with_defaults();
        let me = rt.attach().unwrap();
        let hs: Vec<HostWord> = (0..CACHE_SIZE as u32 + 1).map(HostWord::new).collect();
        let held = me.enter(&hs[0]).unwrap();
        for h in &hs[1..CACHE_SIZE] {
            drop(me.enter(h).unwrap());
        }
        assert_eq!(rt.state().bound(), CACHE_SIZE);
        drop(me.enter(&hs[CACHE_SIZE]).unwrap());
        assert_eq!(rt.state().bound(), 2, "the held one and the new one");
        assert_eq!(rt.stats_snapshot().live_monitors, 2);
        assert_eq!(rt.owner_of(&hs[0]), Some(me.id()));
        drop(held);
    }

    /// An address bound in runtime A's cache is `ForeignHeader` to runtime
    /// B, which keeps no binding, monitor or claim from the attempt; sweeps and reclaims give
    /// the claim back with the binding, so B may then use the address.
    #[test]
    fn a_binding_claims_its_address() {
        let ra = Runtime::<MonitorCache>::with_defaults();
        let rb = Runtime::<MonitorCache>::with_defaults();
        let (a, b) = (ra.attach().unwrap(), rb.attach().unwrap());
        let mut h = HostWord::new(0);
        drop(a.enter(&h).unwrap());
        assert_eq!(ra.monitors().claimed(), 1);
        assert_eq!(b.enter(&h).err(), Some(MonitorError::ForeignHeader));
        assert_eq!(b.try_enter(&h).err(), Some(MonitorError::ForeignHeader));
        assert_eq!(rb.state().bound(), 0);
        assert_eq!(rb.stats_snapshot().live_monitors, 0);
        assert_eq!(rb.monitors().claimed(), 0);
        ra.reclaim(&mut h);
        assert_eq!(ra.monitors().claimed(), 0);
        drop(b.enter(&h).unwrap());
        assert_eq!(a.enter(&h).err(), Some(MonitorError::ForeignHeader));
        // A sweep unbinds (and unclaims) every unused binding.
        let hs: Vec<HostWord> = (0..CACHE_SIZE as u32 + 1).map(HostWord::new).collect();
        for h in &hs {
            drop(b.enter(h).unwrap());
        }
        assert_eq!(rb.monitors().claimed(), rb.state().bound());
        assert!(ra.monitors().claimed() == 0 && a.enter(&h).is_ok());
    }

    /// A full monitor table is relieved by sweeping unused bindings before giving up.
    #[test]
    fn full_table_sweeps_before_failing() {
        let rt = Runtime::<MonitorCache>::new(crate::vm::Config {
            monitor_capacity: 2,
            ..crate::vm::Config::default()
        });
        let me = rt.attach().unwrap();
        let hs: Vec<HostWord> = (0..3).map(HostWord::new).collect();
        let a = me.enter(&hs[0]).unwrap();
        drop(me.enter(&hs[1]).unwrap());
        drop(me.enter(&hs[2]).unwrap()); // sweeps hs[1]'s binding
        let _b = me.enter(&hs[1]).unwrap(); // sweeps hs[2]'s
        assert_eq!(
            me.enter(&hs[2]).map(|_| ()),
            Err(MonitorError::MonitorTableFull)
        );
        drop(a);
    }
}
