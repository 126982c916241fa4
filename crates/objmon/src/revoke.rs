//! Bias revocation machinery shared by the biased protocols (seed 002 §3.3): per-thread
//! safepoint state, the synchronous and asynchronous *pair handshake*, the process-wide
//! barrier (Linux `membarrier`) behind the asymmetric Dekker revocation, and the counters.
//!
//! ## Thread states (per attached thread, `Safepoint::state`)
//!
//! | state     | meaning                                                            | set by |
//! |-----------|--------------------------------------------------------------------|--------|
//! | `RUNNING` | may be inside a biased fast path: only it writes its biased headers | itself (leaving a safe state, under `mutex`) or its revoker (ending a sync handshake) |
//! | `SAFE`    | parked, waiting, blocked on a fat monitor or "in native": never inside a fast path | itself |
//! | `STOPPED` | stopped at a safepoint by a synchronous pair handshake              | itself, at a poll |
//! | `EXITED`  | detached: will never run a fast path again                          | itself |
//!
//! A revoker of thread T holds `T.mutex` for the whole revocation, so two revokers of the same
//! owner are serialized; T leaves `SAFE` only under `T.mutex`, so a revoker that saw `SAFE`
//! finishes before T runs again. Every state change and request is `SeqCst`: these are slow
//! paths, and the Dekker between "revoker posts a request, reads the state" and "target
//! stores SAFE, reads the request" needs it.
//!
//! Requests: `REQ_SYNC` (stop at the next poll), `REQ_ASYNC` (run the callback at the next
//! poll), `REQ_RUNNING` (the target claimed an asynchronous request with a CAS and is running
//! it). A revoker takes back an unclaimed request with a CAS before it lets go of the header:
//! a hybrid one after [`HYBRID_WAIT_NS`] (it falls back to the barrier), and any one that
//! finds the target `SAFE` or `EXITED` meanwhile (it revokes in place). Claim and withdrawal
//! cannot both succeed, so the callback never runs on a header whose revoker has moved on,
//! and no late `REQ_NONE` of a callback can erase a later revoker's request. A poll claims
//! nothing unless its thread is `RUNNING` (a thread in native that polls, or a poll made with
//! another thread's context against the contract, is a no-op): a target that a revoker has
//! seen `SAFE` stays so until the revoker lets go of its mutex, so it claims nothing then.
//!
//! **In native** (`Safepoint::enter_native`) is `SAFE` with a depth (nested
//! `in_native` leaves at the outermost exit only). The biased protocols refuse lock operations
//! made in native (their fast paths would run unseen by an in-place revoker); see `biased.rs`.
//! A thread becomes `SAFE` for a revocation or a blocking call through `SafeScope`, which
//! leaves on drop, unwinding included, and does nothing in native (already `SAFE`).
//!
//! Deadlock freedom (§3.3: "ensuring deadlock freedom when two or more threads attempt to
//! simultaneously safepoint each other"): a revoker is itself `SAFE` for the whole
//! revocation (it runs no fast path meanwhile), so if A revokes B while B revokes A, each finds
//! the other `SAFE` and revokes in place. (Polling instead would not do: both could stop at
//! their polls, each waiting for the other to end a handshake.)
//!
//! ## The barrier (revocation (c), no cooperation)
//!
//! The owner pays a compiler barrier, the revoker `membarrier` (`membarrier.rs`: what the
//! barrier guarantees, and how loom models it). Runtimes of the biased protocols call
//! [`init`](crate::membarrier::init) on creation.

use crate::spin::Spin;
use crate::sync::{lock, AtomicU32, AtomicU64, AtomicUsize, Mutex, Ordering};
use std::time::Instant;

/// `Safepoint::state`: may be inside a fast path.
pub(crate) const RUNNING: u32 = 0;
/// Parked / waiting / blocked / in native.
pub(crate) const SAFE: u32 = 1;
/// Stopped by a synchronous pair handshake.
pub(crate) const STOPPED: u32 = 2;
/// Detached.
pub(crate) const EXITED: u32 = 3;

const REQ_NONE: u32 = 0;
const REQ_SYNC: u32 = 1;
const REQ_ASYNC: u32 = 2;
/// The owner has claimed an asynchronous request and is running its callback: the revoker
/// can no longer withdraw it (hybrid) and waits for `REQ_NONE`.
const REQ_RUNNING: u32 = 3;

/// How long a hybrid revocation waits for the owner's poll before it falls back to the
/// barrier: a few µs, about what `membarrier` itself costs on a small machine, so a polling
/// owner is revoked without interrupting every core and a non-polling one costs at most
/// this much extra.
pub const HYBRID_WAIT_NS: u32 = 5_000;

/// How a runtime revokes a bias held by another thread.
///
/// The default is [`Membarrier`](Self::Membarrier), which needs nothing from the owner. Where
/// the kernel refuses the barrier (not Linux, a kernel before 4.14, a seccomp filter) a
/// runtime that asks for it (or for [`Hybrid`](Self::Hybrid)) gets [`NoBias`](Self::NoBias)
/// — visibly, in [`BiasState::set`](crate::protocol::biased::BiasState::set)'s answer and
/// [`BiasState::revocation`](crate::protocol::biased::BiasState::revocation) — rather than a
/// handshake: a handshake waits for the owner's next poll, and an owner that blocks in `std`
/// or in C code without saying so never polls, so its revoker would wait forever even on a
/// lock nobody holds. Nothing else is safe without the barrier: the owner's fast path makes
/// plain stores with no fence, so rewriting its biased header while it runs could make two
/// owners, and no one but the owner knows whether it is inside that fast path. The handshakes
/// stay available to a host that asks for them by name and keeps their contract (poll in long
/// loops, block only inside `in_native`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Revocation {
    /// §3.3 synchronous pair handshake: stop the owner at its next safepoint
    /// (`beginPairHandshake`), revoke with a CAS, resume it (`endPairHandshake`).
    SyncHandshake,
    /// §3.3 asynchronous pair handshake: the owner runs the revocation itself at its next
    /// safepoint and never stops; if it is at a safepoint already the revoker runs it.
    AsyncHandshake,
    /// Asymmetric Dekker on `membarrier(PRIVATE_EXPEDITED)`: needs nothing from the owner,
    /// which may spin without polling or sit in a system call.
    Membarrier,
    /// The asynchronous pair handshake for `HYBRID_WAIT_NS`; if the owner has not polled
    /// by then, the request is withdrawn and the barrier revokes. Needs the barrier (falls
    /// back to `NoBias` where the kernel refuses it, as `Membarrier` does).
    Hybrid,
    /// Bias nothing, so that nothing ever needs revoking: KKO's clear → biased becomes
    /// clear → thin, FABLE's learn → biased at the learn limit becomes learn → thin (Figure
    /// 5's other way out of learn mode), and every lock is a thin lock. What `Membarrier` and
    /// `Hybrid` fall back to where the kernel refuses the barrier, as long as no thread of
    /// the runtime has biased anything yet (a runtime's first configuration is at creation,
    /// so in practice always); a runtime that already biased objects under another mode
    /// falls back to the synchronous handshake instead, which only the handshake can revoke.
    NoBias,
}

impl Revocation {
    pub(crate) fn from_u32(v: u32) -> Self {
        match v {
            0 => Self::SyncHandshake,
            1 => Self::AsyncHandshake,
            2 => Self::Membarrier,
            3 => Self::Hybrid,
            _ => Self::NoBias,
        }
    }
}

pub use crate::events::RevocationKind;

const KINDS: usize = 5;
const BUCKETS: usize = 256;

/// Revocation and state-transition counters of one runtime (relaxed; slow paths only).
#[derive(Debug)]
pub struct RevocationStats {
    by_kind: [AtomicU64; KINDS],
    /// Latency histogram: bucket `4 * floor(log2 ns) + next two bits`.
    latency: [AtomicU64; BUCKETS],
    /// Barrier retries: an owner's in-flight plain store overwrote the revoker's mark.
    retries: AtomicU64,
}

impl Default for RevocationStats {
    fn default() -> Self {
        Self {
            by_kind: std::array::from_fn(|_| AtomicU64::new(0)),
            latency: std::array::from_fn(|_| AtomicU64::new(0)),
            retries: AtomicU64::new(0),
        }
    }
}

fn bucket_of(ns: u64) -> usize {
    let ns = ns.max(1);
    let lg = 63 - ns.leading_zeros() as usize;
    let sub = if lg >= 2 { (ns >> (lg - 2)) & 3 } else { 0 } as usize;
    (lg * 4 + sub).min(BUCKETS - 1)
}

fn bucket_floor(b: usize) -> u64 {
    let (lg, sub) = (b / 4, (b % 4) as u64);
    if lg >= 2 {
        (1u64 << lg) | (sub << (lg - 2))
    } else {
        1u64 << lg
    }
}

impl RevocationStats {
    pub(crate) fn record(&self, kind: RevocationKind, since: Instant) {
        self.by_kind[kind as usize].fetch_add(1, Ordering::Relaxed);
        let ns = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.latency[bucket_of(ns)].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn retried(&self) {
        self.retries.fetch_add(1, Ordering::Relaxed);
    }

    /// Revocations counted under `kind`.
    pub fn count(&self, kind: RevocationKind) -> u64 {
        self.by_kind[kind as usize].load(Ordering::Relaxed)
    }

    /// All revocations.
    pub fn total(&self) -> u64 {
        self.by_kind.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// Barrier rounds repeated because the owner was mid-store.
    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    /// The `q`-quantile (0..=1) of revocation latency in nanoseconds, as the lower bound of
    /// its histogram bucket (buckets are a quarter of a power of two wide); `None` if no
    /// revocation was recorded.
    pub fn latency_quantile_ns(&self, q: f64) -> Option<u64> {
        let counts: Vec<u64> = self
            .latency
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect();
        let n: u64 = counts.iter().sum();
        if n == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, c) in counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(bucket_floor(b));
            }
        }
        None
    }
}

/// Counts a revocation of `kind` (begun at `since`) of the bias on the object whose header
/// is at `object`, by revoker `by`, in `st` and the runtime's counters, and reports it as a
/// [`BiasRevoke`](crate::events::Event::BiasRevoke) (events on). Called once per
/// revocation, after the revoker let go of its target's mutex: the sink may lock monitors.
pub(crate) fn revoked<P: crate::protocol::Protocol>(
    rt: &crate::runtime::Runtime<P>,
    st: &RevocationStats,
    kind: RevocationKind,
    since: Instant,
    by: crate::thread::ThreadId,
    object: usize,
) {
    st.record(kind, since);
    rt.stats().revoked();
    if crate::events::on(rt.events()) {
        let took = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let o = crate::events::Origin {
            start_nanos: crate::events::now_nanos().saturating_sub(took),
            thread: by,
            object,
            monitor: 0,
        };
        crate::events::deliver(
            rt.events(),
            crate::events::EventKind::BiasRevoke,
            o,
            |site| crate::events::Event::BiasRevoke { site, kind },
        );
    }
}

/// A thread's safepoint and handshake state (see the module documentation).
#[derive(Debug)]
pub struct Safepoint {
    pub(crate) state: AtomicU32,
    request: AtomicU32,
    /// Asynchronous request: the header to revoke (an address) and the bias word seen.
    op_header: AtomicUsize,
    op_word: AtomicU64,
    /// Held by a revoker of this thread for the whole revocation.
    mutex: Mutex<()>,
    /// Address of the header this thread is running a biased fast path on, 0 if none: the
    /// owner's half of the asymmetric Dekker.
    pub(crate) in_op: AtomicUsize,
    /// How deeply the thread is in native (`in_native` nests); written only by the thread.
    native: AtomicU32,
}

impl Default for Safepoint {
    fn default() -> Self {
        Self {
            state: AtomicU32::new(RUNNING),
            request: AtomicU32::new(REQ_NONE),
            op_header: AtomicUsize::new(0),
            op_word: AtomicU64::new(0),
            mutex: Mutex::new(()),
            in_op: AtomicUsize::new(0),
            native: AtomicU32::new(0),
        }
    }
}

/// What a revoker does once the owner cannot be inside a fast path on the header:
/// `(header address, bias word seen)`.
pub(crate) type Revoke<'a> = &'a dyn Fn(usize, u64);

impl Safepoint {
    /// Safepoint poll: one relaxed load (a plain `mov`) when nothing is requested.
    #[inline]
    pub(crate) fn poll(&self, exec: Revoke<'_>) {
        if self.request.load(Ordering::Relaxed) != REQ_NONE {
            self.poll_slow(exec);
        }
    }

    #[cold]
    fn poll_slow(&self, exec: Revoke<'_>) {
        // A no-op unless RUNNING: in native (`SAFE`) the thread's revokers work in place and
        // take back their requests, so a claim here would run a callback on a header its
        // revoker has let go of. Only this thread leaves RUNNING (a revoker only returns a
        // STOPPED thread to it, and we are not stopped), so the load is exact.
        if self.state.load(Ordering::SeqCst) != RUNNING {
            return;
        }
        match self.request.load(Ordering::SeqCst) {
            // beginPairHandshake on the target side: announce the stop, then wait for the
            // revoker's endPairHandshake (it resets the state and clears the request).
            REQ_SYNC
                if self
                    .state
                    .compare_exchange(RUNNING, STOPPED, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok() =>
            {
                // Wait on the state, not the request: the revoker clears the request
                // first and then resets the state, so a later revoker's fresh request is
                // never mistaken for this one.
                let mut spins = Spin::new();
                while self.state.load(Ordering::SeqCst) == STOPPED {
                    spins.snooze();
                }
            }
            REQ_ASYNC
                if self
                    .request
                    .compare_exchange(REQ_ASYNC, REQ_RUNNING, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok() =>
            {
                // The callback of asyncPairHandshake, run by the owner itself: it is at a
                // safepoint, so not inside a fast path. Claimed first, so that a hybrid
                // revoker cannot withdraw the request (and let the header go) under us.
                exec(
                    self.op_header.load(Ordering::SeqCst),
                    self.op_word.load(Ordering::SeqCst),
                );
                self.request.store(REQ_NONE, Ordering::SeqCst);
            }
            _ => {}
        }
    }

    /// Enters a safe state (parking, waiting, native). The thread must not be inside a fast
    /// path and must make no biased access until [`leave_safe`](Self::leave_safe).
    #[inline]
    fn enter_safe(&self) {
        self.state.store(SAFE, Ordering::SeqCst);
    }

    /// Leaves the safe state, after any revocation of this thread in progress.
    fn leave_safe(&self) {
        let _g = lock(&self.mutex);
        self.state.store(RUNNING, Ordering::SeqCst);
    }

    /// The calling thread (this safepoint's) becomes `SAFE` until the scope drops, unwinding
    /// included; a no-op in native (already `SAFE`, and it must stay so).
    pub(crate) fn safe_scope(&self) -> SafeScope<'_> {
        if self.state.load(Ordering::Relaxed) == RUNNING {
            self.enter_safe();
            // No sink runs while safe: it might lock a biased object (`events.rs`).
            crate::events::hold();
            SafeScope(Some(self))
        } else {
            SafeScope(None)
        }
    }

    /// The thread goes native (JNI's transition): `SAFE` at the outermost level. Returns
    /// whether this was the outermost (`in_native` nests).
    pub(crate) fn enter_native(&self) -> bool {
        let d = self.native.load(Ordering::Relaxed);
        self.native.store(d + 1, Ordering::Relaxed);
        if d == 0 {
            self.enter_safe();
        }
        d == 0
    }

    /// The thread returns from native: `RUNNING` again at the outermost level (waiting for a
    /// revocation of its biases in progress). Returns whether this was the outermost.
    pub(crate) fn leave_native(&self) -> bool {
        let d = self.native.load(Ordering::Relaxed);
        debug_assert!(d > 0, "leave_native without enter_native");
        self.native.store(d.saturating_sub(1), Ordering::Relaxed);
        if d == 1 {
            self.leave_safe();
        }
        d == 1
    }

    /// Whether the thread is in native (its own question).
    #[inline]
    pub(crate) fn in_native(&self) -> bool {
        self.native.load(Ordering::Relaxed) != 0
    }

    /// The thread detaches: revokers treat it as permanently safe.
    /// No mutex: a revoker holding it may be waiting for this very thread to poll; seeing
    /// `EXITED` lets it finish.
    pub(crate) fn exit(&self) {
        self.state.store(EXITED, Ordering::SeqCst);
    }

    /// Takes this thread's revoker mutex. The caller must be in a safe state (see
    /// [`enter_safe`](Self::enter_safe)) while it revokes, so that revokers waiting on each
    /// other never form a cycle: each sees the other `SAFE` and proceeds in place.
    pub(crate) fn lock_for_revoke(&self) -> crate::sync::MutexGuard<'_, ()> {
        let mut spins = Spin::new();
        loop {
            if let Some(g) = try_lock(&self.mutex) {
                return g;
            }
            spins.snooze();
        }
    }

    /// Whether the thread is at a safepoint or gone (`Some(kind)` to count it under).
    /// Exact while the caller holds [`lock_for_revoke`](Self::lock_for_revoke).
    pub(crate) fn quiescent(&self) -> Option<RevocationKind> {
        match self.state.load(Ordering::SeqCst) {
            SAFE => Some(RevocationKind::OwnerSafe),
            EXITED => Some(RevocationKind::OwnerExited),
            _ => None,
        }
    }

    /// Runs `exec(header, word)` at a moment when `self`'s thread (the bias owner) cannot be
    /// inside a fast path on any header, by pair handshake `kind` (`SyncHandshake`,
    /// `AsyncHandshake`, or `Hybrid`: asynchronous for [`HYBRID_WAIT_NS`]). The caller is
    /// itself in a safe state (so mutual revocations cannot deadlock). Returns the kind it was
    /// counted under, or `None` if a hybrid request was withdrawn unrun (the caller then
    /// revokes by the barrier). The caller holds `self`'s revoker mutex (`_held`).
    pub(crate) fn handshake(
        &self,
        _held: &crate::sync::MutexGuard<'_, ()>,
        kind: Revocation,
        header: usize,
        word: u64,
        exec: Revoke<'_>,
    ) -> Option<RevocationKind> {
        let s = self.state.load(Ordering::SeqCst);
        if s == SAFE || s == EXITED {
            exec(header, word);
            return Some(if s == SAFE {
                RevocationKind::OwnerSafe
            } else {
                RevocationKind::OwnerExited
            });
        }
        let req = if kind != Revocation::SyncHandshake {
            self.op_header.store(header, Ordering::SeqCst);
            self.op_word.store(word, Ordering::SeqCst);
            REQ_ASYNC
        } else {
            REQ_SYNC
        };
        self.request.store(req, Ordering::SeqCst);
        let posted = std::time::Instant::now();
        let mut spins = Spin::new();
        loop {
            let s = self.state.load(Ordering::SeqCst);
            // Read after the state: an owner that finished the callback cleared the request
            // before it could store SAFE.
            let r = self.request.load(Ordering::SeqCst);
            if r == REQ_NONE {
                // The owner ran the asynchronous callback.
                return Some(RevocationKind::Async);
            }
            match s {
                STOPPED => {
                    exec(header, word);
                    // endPairHandshake: clear the request, then release the owner (it waits
                    // on the state), all before the mutex goes: the next revoker sees neither
                    // a stale request nor a stale STOPPED.
                    self.request.store(REQ_NONE, Ordering::SeqCst);
                    self.state.store(RUNNING, Ordering::SeqCst);
                    return Some(RevocationKind::Sync);
                }
                SAFE | EXITED
                    if r != REQ_RUNNING
                        && self
                            .request
                            .compare_exchange(r, REQ_NONE, Ordering::SeqCst, Ordering::SeqCst)
                            .is_ok() =>
                {
                    // It reached a safe state without polling; it cannot leave it while we
                    // hold the mutex. The request is withdrawn (a CAS: a claim made while it
                    // was still running wins, and we wait for its `REQ_NONE` instead), so no
                    // poll can run the callback after we let go of the header.
                    exec(header, word);
                    return Some(if s == SAFE {
                        RevocationKind::OwnerSafe
                    } else {
                        RevocationKind::OwnerExited
                    });
                }
                _ if kind == Revocation::Hybrid
                    && r == REQ_ASYNC
                    && crate::sync::waited_at_least(posted, HYBRID_WAIT_NS)
                    && self
                        .request
                        .compare_exchange(REQ_ASYNC, REQ_NONE, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok() =>
                {
                    // Withdrawn before the owner claimed it: the barrier's turn.
                    return None;
                }
                _ => {}
            }
            spins.snooze();
        }
    }
}

/// A stretch at a safepoint (see [`Safepoint::safe_scope`]): back to `RUNNING` on drop.
#[must_use]
pub(crate) struct SafeScope<'a>(Option<&'a Safepoint>);

impl Drop for SafeScope<'_> {
    fn drop(&mut self) {
        if let Some(sp) = self.0 {
            sp.leave_safe();
            // Running again: the events of the scope are delivered now.
            crate::events::release();
        }
    }
}

fn try_lock(m: &Mutex<()>) -> Option<crate::sync::MutexGuard<'_, ()>> {
    match m.try_lock() {
        Ok(g) => Some(g),
        #[cfg(not(loom))]
        Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(_) => None,
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotone_and_cover() {
        let mut last = 0;
        for ns in [1u64, 2, 3, 4, 5, 7, 8, 100, 1000, 12345, 1 << 40] {
            let b = bucket_of(ns);
            assert!(b >= last);
            last = b;
            assert!(bucket_floor(b) <= ns, "{ns} -> {}", bucket_floor(b));
        }
    }

    /// A poll claims nothing unless its thread is running: a thread in native that polls (or a
    /// poll against the contract) must not run a callback whose revoker, having seen the
    /// thread at a safepoint, withdraws the request and lets go of the header.
    #[test]
    fn poll_is_a_no_op_unless_running() {
        let sp = Safepoint::default();
        sp.op_header.store(8, Ordering::SeqCst);
        sp.request.store(REQ_ASYNC, Ordering::SeqCst);
        let ran = std::cell::Cell::new(false);
        assert!(sp.enter_native());
        sp.poll(&|_, _| ran.set(true));
        assert!(!ran.get(), "a safe thread's poll ran the callback");
        assert_eq!(sp.request.load(Ordering::SeqCst), REQ_ASYNC, "not claimed");
        // The revoker's withdrawal still succeeds, so it may revoke in place and let go.
        assert!(sp
            .request
            .compare_exchange(REQ_ASYNC, REQ_NONE, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok());
        assert!(sp.leave_native());
        sp.request.store(REQ_ASYNC, Ordering::SeqCst);
        sp.poll(&|_, _| ran.set(true));
        assert!(ran.get(), "a running thread's poll runs it");
        assert_eq!(sp.request.load(Ordering::SeqCst), REQ_NONE);
    }

    #[test]
    fn quantiles() {
        let s = RevocationStats::default();
        assert_eq!(s.latency_quantile_ns(0.5), None);
        for ns in [100u64, 100, 100, 100_000] {
            s.latency[bucket_of(ns)].fetch_add(1, Ordering::Relaxed);
        }
        assert_eq!(
            s.latency_quantile_ns(0.5),
            Some(bucket_floor(bucket_of(100)))
        );
        assert_eq!(
            s.latency_quantile_ns(0.99),
            Some(bucket_floor(bucket_of(100_000)))
        );
    }
}
