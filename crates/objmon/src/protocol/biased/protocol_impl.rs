//! The [`Protocol`] implementation of the biased engine: the entry points the runtime calls,
//! each a thin shell over the fast paths (`dispatch.rs`), the slow paths (`slow.rs`), the
//! identity hash (`biased_hash.rs`) and the thread's in-native poisoning.

use super::*;

impl<F: Flavor> Protocol for Biasing<F> {
    const NAME: &'static str = F::NAME;
    const SUMMARY: &'static str = F::SUMMARY;
    const HEADER_LOCK_BITS: u32 = 56;
    // The signal barrier sees only the innermost interrupted context: a host handler that
    // lets the barrier signal nest inside it hides the owner's section (`sigbarrier.rs`).
    const HOST_SIGNAL_CONTRACT: bool = F::SIGNAL;

    type Header = BiasWord;
    type State = BiasState;
    type ThreadState = BiasThread;
    type Hint = ();

    fn new_state(_: &Config) -> BiasState {
        // `fable`, `fable-rseq` and `fable-signal` count per object, the seed's FABLE per
        // thread (§3.1).
        let rule = if Self::SEED {
            LearnRule::PerThread
        } else {
            LearnRule::PerObject
        };
        let barrier_init = if F::SIGNAL {
            crate::sigbarrier::install
        } else if F::RSEQ {
            crate::membarrier::init_rseq
        } else {
            crate::membarrier::init
        };
        BiasState::new(barrier_init, rule)
    }

    fn new_thread_state(id: ThreadId, _: &Config) -> BiasThread {
        let owner = u64::from(id.get()) << OWNER_SHIFT;
        #[cfg(not(loom))]
        let cs = if F::RSEQ && !F::SIGNAL {
            crate::rseq::initial_cs_field()
        } else {
            0
        };
        #[cfg(loom)]
        let cs = 0;
        let t = BiasThread::new(id, free_thin(F::STICKY, !Self::SEED, owner), cs);
        if F::SIGNAL {
            // On the attaching thread itself (`attach`): the kernel id its revokers signal.
            t.sig.set_current();
        }
        t
    }

    /// The learn limit, for the flavor that learns (`fable`); `biased` has no knob.
    const KNOB: Option<crate::protocol::Knob> = if F::LEARN { Some(LEARN_LIMIT) } else { None };

    /// Sets the learn limit N through [`Biasing::configure`], keeping the revocation in use
    /// (re-applying it is idempotent: the barrier's registration is cached).
    fn set_knob(rt: &Rt<F>, value: u32) -> Result<(), KnobError> {
        let k = Self::KNOB.ok_or(KnobError::NoKnob)?;
        if !(k.min..=k.max).contains(&value) {
            return Err(KnobError::OutOfRange);
        }
        let revocation = rt.state().revocation();
        let used = Self::configure(
            rt,
            BiasConfig {
                revocation,
                learn_limit: value,
            },
        );
        debug_assert_eq!(used, revocation, "the mode in use stays available");
        Ok(())
    }

    /// One load of the header, then one bit test (the state's low bit, set in learn and
    /// thin) sends it to the thin test and CAS or to the bias owner's step: each side runs
    /// only its own test. The CAS never touches a biased header (the thin test wants state
    /// 11). Fewer µops per lock + unlock is what seed 002 §5.1's Cloud, which misses the
    /// cache on every header, pays for (docs/benchmarks.md, "Biased-family notes moved out
    /// of the code").
    /// The signal flavors' owner step takes its first test exact and its store from the
    /// handle's word (`signal_known_step`).
    #[inline(always)]
    unsafe fn lock(rt: &Rt<F>, t: &Cx<F>, word: u64, h: &BiasWord) -> Result<(), MonitorError> {
        Self::lock_with(rt, t, word, h)
    }

    /// The signal flavors' thread bits for a handle to keep in a register: `my_bias` (the
    /// owner id and generation, fixed for the context). 0 (unused) for the other flavors
    /// and where the signal section is not built.
    #[inline(always)]
    fn handle_word(t: &Cx<F>) -> u64 {
        if F::SIGNAL && cfg!(all(not(loom), target_arch = "x86_64", target_os = "linux")) {
            Self::my_bias(t)
        } else {
            0
        }
    }

    unsafe fn try_enter(rt: &Rt<F>, t: &Cx<F>, h: &BiasWord) -> Result<bool, MonitorError> {
        Self::enter_slow(rt, t, h, true)
    }

    /// One load, one bit test to the bias owner's step or the thin / learn unlock, for the
    /// reason given at [`lock`](Protocol::lock), the owner's step with the handle's word.
    #[inline(always)]
    unsafe fn unlock(
        rt: &Rt<F>,
        t: &Cx<F>,
        word: u64,
        _: (),
        h: &BiasWord,
    ) -> Result<(), MonitorError> {
        Self::unlock_with(rt, t, word, h)
    }

    unsafe fn wait(
        rt: &Rt<F>,
        t: &Cx<F>,
        h: &BiasWord,
        deadline: Option<Instant>,
    ) -> Result<WaitOutcome, MonitorError> {
        let m = Self::fat_for_wait(rt, t, h)?;
        Self::safe(t, || m.wait(t.core_arc(), deadline))
    }

    unsafe fn notify(rt: &Rt<F>, t: &Cx<F>, h: &BiasWord, all: bool) -> Result<(), MonitorError> {
        Self::fat_for_wait(rt, t, h)?.notify(t.core(), all)
    }

    fn lock_count(rt: &Rt<F>, t: &Cx<F>, h: &BiasWord) -> u32 {
        let w = h.0.load(Ordering::Acquire);
        match w & STATE_MASK {
            FAT => Self::monitor_of(rt, w).map_or(0, |m| m.count_for(t.core())),
            BIASED if w & OWNER_MASK != 0 && w & (OWNER_MASK | GEN_MASK) == Self::my_bias(t) => {
                if F::RECORDS {
                    t.local().rec.own_count(addr(h))
                } else {
                    rc(w) as u32
                }
            }
            BIASED => 0,
            _ if w & OWNER_MASK == Self::my_owner(t) => rc(w) as u32,
            _ => 0,
        }
    }

    fn owner_of(rt: &Rt<F>, h: &BiasWord) -> Option<ThreadId> {
        let w = h.0.load(Ordering::Acquire);
        if w & STATE_MASK == FAT {
            return Self::monitor_of(rt, w).ok().and_then(FatMonitor::owner);
        }
        let held = if w & STATE_MASK == BIASED && w & OWNER_MASK != 0 {
            Self::bias_held(rt, h, w)
        } else {
            rc(w) > 0
        };
        if !held {
            return None;
        }
        ThreadId::from_raw(((w & OWNER_MASK) >> OWNER_SHIFT) as u32)
    }

    fn reclaim(rt: &Rt<F>, h: &mut BiasWord) {
        let w = h.0.load(Ordering::Relaxed);
        if w & STATE_MASK == FAT {
            let idx = MonitorIndex::new(((w & INDEX_MASK) >> INDEX_SHIFT) as u32).expect("index");
            rt.monitors().free_if_bound(idx);
        }
        Self::forget_identity_hash(rt, h);
        // Dead while held once (a forgotten guard): its owner's record of it goes, so that a
        // new object at this address is not unlocked blind.
        if w & (STATE_LOW | RC_MASK) == STATE_LOW | RC_ONE {
            Self::forget_record(rt, w, addr(h));
        }
        h.0.store(w & HOST, Ordering::Relaxed);
    }

    const HASH_BITS: u32 = 32;

    /// See [`biased_hash`](crate::protocol::biased_hash).
    unsafe fn identity_hash(rt: &Rt<F>, t: &Cx<F>, h: &BiasWord) -> Result<u32, MonitorError> {
        Self::identity_hash_impl(rt, t, h)
    }

    fn peek_identity_hash(rt: &Rt<F>, h: &BiasWord) -> Option<u32> {
        Self::peek_identity_hash_impl(rt, h)
    }

    /// The lock records naming `from` now name `to` (see [`Runtime::relocate`]).
    fn relocate_records(rt: &Rt<F>, from: *const BiasWord, to: &BiasWord) {
        Self::rewrite_records(rt, from, to);
        // Moved while held once: its owner's record names the old address (`forget_record`).
        Self::forget_record(rt, to.0.load(Ordering::Relaxed), from as usize);
    }

    /// The lock records (records variant): biased holds, which no header shows, with their
    /// counts. A racy snapshot from another thread; empty for the header variant.
    fn held_records(_rt: &Rt<F>, t: &Cx<F>) -> Vec<(usize, u32)> {
        crate::introspect::count_runs(Self::locked_objects(t).into_iter().map(|p| p as usize))
    }

    #[inline]
    unsafe fn poll(rt: &Rt<F>, t: &Cx<F>) {
        Self::poll_self(rt, t);
    }

    /// `SAFE` (revokers rewrite our biases in place meanwhile), and the cached bias and
    /// thin-free bits of the thread's line poisoned, so that every fast path that could act
    /// as an owner fails its first test and goes to a slow path, which refuses
    /// (`Err(InNative)`) or, for an unlock, releases under the thread's revoker mutex. The
    /// fast paths pay nothing: they compare with those bits anyway.
    unsafe fn enter_native(_: &Rt<F>, t: &Cx<F>) {
        let local = t.local();
        if local.sp.enter_native() {
            let rec = &local.rec;
            // Only this thread writes these bits: plain loads and stores.
            let b = rec.bias.load(Ordering::Relaxed);
            local.saved_bias.store(b, Ordering::Relaxed);
            rec.bias.store(NO_BIAS, Ordering::Relaxed);
            let f = rec.thin_free.load(Ordering::Relaxed);
            local.saved_thin_free.store(f, Ordering::Relaxed);
            rec.thin_free.store(NO_BIAS, Ordering::Relaxed);
            rec.nest_once.store(NO_NEST, Ordering::Relaxed);
            local.learn_key.store(NO_BIAS, Ordering::Relaxed);
        }
    }

    /// `RUNNING` again (after any revocation of our biases in progress: `leave_safe` takes
    /// the revoker mutex), then the cached bits restored. Biases revoked in place meanwhile
    /// need nothing more: a revoked word is thin (marked stale if we held it, so that our
    /// next unlock buries the records, as after any revocation).
    unsafe fn leave_native(_: &Rt<F>, t: &Cx<F>) {
        let local = t.local();
        if local.sp.leave_native() {
            let rec = &local.rec;
            rec.bias
                .store(local.saved_bias.load(Ordering::Relaxed), Ordering::Relaxed);
            rec.thin_free.store(
                local.saved_thin_free.load(Ordering::Relaxed),
                Ordering::Relaxed,
            );
            rec.nest_once.store(rec.unlock_once, Ordering::Relaxed);
            local.learn_key.store(local.learn_guess, Ordering::Relaxed);
        }
    }

    unsafe fn on_detach(rt: &Rt<F>, t: &Cx<F>) {
        t.local().sp.exit();
        for (i, c) in t.local().transitions.iter().enumerate() {
            rt.state().transitions[i].fetch_add(c.swap(0, Ordering::Relaxed), Ordering::Relaxed);
        }
    }
}
