//! The process-wide memory barrier (Linux `membarrier`) behind every asymmetric Dekker of the
//! crate: one side pays a compiler barrier on its fast path ([`owner_barrier`]), the other a
//! system call that makes every running thread of the process execute a full barrier
//! ([`process_barrier`]). Used by the bias revocation (`revoke.rs`), the parked identity hash
//! (`hash.rs`) and the system lock's release (`tasuki.rs`). It knows nothing of protocols.
//!
//! `MEMBARRIER_CMD_PRIVATE_EXPEDITED` makes every running thread of the process execute a full
//! memory barrier before the call returns (threads not running have passed one in the context
//! switch). So a compiler barrier between two plain accesses acts, against a thread that calls
//! the barrier between its own two accesses, as if both sides had a `SeqCst` fence. The command
//! needs `MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED` once per process, which can take tens of
//! milliseconds after threads exist: call [`init`] at start-up. Under loom the barrier is
//! modelled as what it implies: a `SeqCst` fence on the calling side *and* at the other side's
//! compiler barrier.

use crate::sync::Ordering;

#[cfg(not(loom))]
mod barrier {
    use std::sync::atomic::{AtomicU8, Ordering};

    const CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

    /// 0 = not tried, 1 = registered, 2 = refused (or failed after registering).
    static REGISTERED: AtomicU8 = AtomicU8::new(0);

    #[cfg(target_os = "linux")]
    fn sys(cmd: libc::c_int) -> bool {
        // SAFETY: membarrier(2) takes (cmd, flags, cpu_id) by value and touches no user
        // memory; an unknown command or an old kernel only returns an error.
        unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0, 0) == 0 }
    }

    #[cfg(not(target_os = "linux"))]
    fn sys(_: libc::c_int) -> bool {
        false
    }

    #[inline]
    pub fn init() -> bool {
        match REGISTERED.load(Ordering::Acquire) {
            1 => true,
            2 => false,
            _ => register(),
        }
    }

    #[cold]
    fn register() -> bool {
        let ok = sys(CMD_REGISTER_PRIVATE_EXPEDITED);
        REGISTERED.store(if ok { 1 } else { 2 }, Ordering::Release);
        ok
    }

    /// `false` if the kernel refused (a seccomp filter installed after the registration):
    /// later [`init`]s answer `false` too, so that new runtimes do not pick the barrier.
    pub fn barrier() -> bool {
        let ok = sys(CMD_PRIVATE_EXPEDITED);
        if !ok {
            REGISTERED.store(2, Ordering::Release);
        }
        ok
    }

    const CMD_PRIVATE_EXPEDITED_RSEQ: libc::c_int = 1 << 7;
    const CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ: libc::c_int = 1 << 8;

    /// As [`REGISTERED`], for the `_RSEQ` commands.
    static REGISTERED_RSEQ: AtomicU8 = AtomicU8::new(0);

    #[inline]
    pub fn init_rseq() -> bool {
        match REGISTERED_RSEQ.load(Ordering::Acquire) {
            1 => true,
            2 => false,
            _ => register_rseq(),
        }
    }

    #[cold]
    fn register_rseq() -> bool {
        let ok =
            crate::rseq::offset().is_some() && init() && sys(CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ);
        REGISTERED_RSEQ.store(if ok { 1 } else { 2 }, Ordering::Release);
        ok
    }

    /// The plain barrier, and every rseq critical section of the process that is running
    /// (on any CPU) restarted at its abort handler.
    pub fn barrier_rseq() -> bool {
        let ok = sys(CMD_PRIVATE_EXPEDITED_RSEQ);
        if !ok {
            REGISTERED.store(2, Ordering::Release);
            REGISTERED_RSEQ.store(2, Ordering::Release);
        }
        ok
    }
}

#[cfg(loom)]
mod barrier {
    /// Registered, unless the environment says `OBJMON_LOOM_SYMMETRIC=1`: then the models run
    /// as a process without `membarrier` would, so that the symmetric fallbacks (e.g. `thin`'s
    /// permanent look mark and the fence of its nested unlock) are checked as well (`.ci/run`
    /// runs `loom_hash`'s thin models both ways). Read once, outside loom's model.
    pub fn init() -> bool {
        static SYMMETRIC: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        !*SYMMETRIC
            .get_or_init(|| std::env::var_os("OBJMON_LOOM_SYMMETRIC").is_some_and(|v| v == "1"))
    }
    pub fn barrier() -> bool {
        crate::sync::fence(crate::sync::Ordering::SeqCst);
        true
    }
    pub fn init_rseq() -> bool {
        true
    }
    /// The fence; the restart of the owner's section is modelled by the caller, which
    /// takes the owner's `RseqCpu` (`biased.rs`): a section runs under it, so the barrier
    /// falls either before a section or after it, never inside.
    pub fn barrier_rseq() -> bool {
        barrier()
    }
}

/// Registers this process for `membarrier(PRIVATE_EXPEDITED)` (once; later calls return the
/// cached answer). Call it at start-up, before spawning threads: registration with many
/// threads alive can take tens of milliseconds. `false` if the kernel refuses (not Linux,
/// kernel < 4.14, seccomp); the biased runtimes then bias nothing
/// ([`Revocation::NoBias`](crate::vm::Revocation::NoBias)).
#[inline]
pub fn init() -> bool {
    barrier::init()
}

/// The revoker's half of the asymmetric Dekker: a full barrier on every running thread.
/// `false` if the kernel refused it (then nothing was ordered: the caller must not rely on it).
#[inline]
#[must_use]
pub(crate) fn process_barrier() -> bool {
    barrier::barrier()
}

/// Registers this process for `membarrier(PRIVATE_EXPEDITED_RSEQ)` (once) if glibc
/// registered rseq for its threads; `false` otherwise. See [`init`] for when to call it.
#[inline]
pub fn init_rseq() -> bool {
    barrier::init_rseq()
}

/// [`process_barrier`], and every rseq critical section running anywhere in the process
/// restarted: after it, no bias owner's rseq step that began before it can commit. `false`
/// if the kernel refused.
#[inline]
#[must_use]
pub(crate) fn process_barrier_rseq() -> bool {
    barrier::barrier_rseq()
}

/// The owner's half: a compiler barrier, which the revoker's [`process_barrier`] turns into
/// a full one. Under loom, modelled as the `SeqCst` fence it amounts to when the process is
/// registered, and as nothing when it is not (`OBJMON_LOOM_SYMMETRIC=1`): then no
/// `membarrier` completes it, and the caller's symmetric fallback must order its side.
#[inline(always)]
pub(crate) fn owner_barrier() {
    #[cfg(not(loom))]
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
    #[cfg(loom)]
    if barrier::init() {
        crate::sync::fence(Ordering::SeqCst);
    }
}
