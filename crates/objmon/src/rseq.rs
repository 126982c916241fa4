//! Restartable sequences (Linux `rseq`, registered for every thread by glibc ≥ 2.35): where
//! this thread's `struct rseq` is. The biased protocols' bias owner runs its plain
//! load / compare / store inside an rseq critical section, which the kernel aborts (sends
//! to its abort handler) when the thread is preempted, migrated or signalled inside it, and
//! which `membarrier(PRIVATE_EXPEDITED_RSEQ)` aborts on every CPU that runs one: after that
//! barrier no section that began before it can still commit, so a revoker needs nothing
//! from the owner (see docs/soundness.md §9, "Revocation").
//!
//! Not under loom (the models never run a bias owner's rseq step).

use std::sync::OnceLock;

/// `__rseq_offset` (the `struct rseq` of the calling thread is at the thread pointer
/// plus this), if glibc exports it and registered rseq (`__rseq_size > 0`); looked up
/// at run time, so that the crate links against any libc.
pub(crate) fn offset() -> Option<isize> {
    static OFF: OnceLock<Option<(isize, bool)>> = OnceLock::new();
    OFF.get_or_init(lookup)
        .and_then(|(o, reg)| reg.then_some(o))
}

/// `__rseq_offset` even where glibc did not register rseq (under valgrind, which
/// refuses the system call): the area is reserved in every thread's TLS all the same.
pub(crate) fn offset_unregistered() -> Option<isize> {
    static OFF: OnceLock<Option<(isize, bool)>> = OnceLock::new();
    OFF.get_or_init(lookup).map(|(o, _)| o)
}

#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
fn lookup() -> Option<(isize, bool)> {
    // SAFETY: dlsym with RTLD_DEFAULT and NUL-terminated names only looks symbols up;
    // when found, `__rseq_offset` is a `const ptrdiff_t` and `__rseq_size` a
    // `const unsigned int` (glibc's <sys/rseq.h>), both set before `main` and never
    // written again, so reading them is a plain read of immutable data.
    unsafe {
        let off = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr());
        let size = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr());
        if off.is_null() || size.is_null() {
            return None;
        }
        Some((*(off as *const isize), *(size as *const u32) != 0))
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu")))]
fn lookup() -> Option<(isize, bool)> {
    None
}

/// The address of the calling thread's `rseq.rseq_cs` field (`off` is `__rseq_offset`):
/// the thread pointer (`%fs:0` holds it on x86-64) plus `off + 8`.
pub(crate) fn cs_field(off: isize) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let tp: usize;
        // SAFETY: on x86-64 Linux the word at `%fs:0` is the thread control block's
        // pointer to itself (the TLS ABI requires it); reading it writes nothing.
        unsafe {
            std::arch::asm!(
                "mov {tp}, qword ptr fs:[0]",
                tp = out(reg) tp,
                options(nostack, readonly, preserves_flags)
            );
        }
        tp.wrapping_add_signed(off + 8)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = off;
        0
    }
}

/// Where the calling thread's bias-owner step stores its section's descriptor: its
/// `rseq.rseq_cs` wherever glibc reserved an rseq area (registered or not: an
/// unregistered area is never looked at by the kernel), else a word of the thread's own
/// (the step runs, and fails its test, until the thread knows it may bias). Called on
/// the thread itself (`new_thread_state`, from `attach`).
pub(crate) fn initial_cs_field() -> usize {
    thread_local! {
        // No destructor: static TLS, alive until the thread's TCB is freed.
        static SCRATCH: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }
    match offset_unregistered() {
        Some(off) if cfg!(target_arch = "x86_64") => cs_field(off),
        _ => SCRATCH.with(|c| c.as_ptr() as usize),
    }
}

/// Whether the calling thread's rseq area is registered: its `cpu_id` field (offset 4)
/// holds a CPU number, not `RSEQ_CPU_ID_UNINITIALIZED` (−1) or
/// `RSEQ_CPU_ID_REGISTRATION_FAILED` (−2).
pub(crate) fn thread_registered() -> bool {
    #[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
    if let Some(off) = offset() {
        let cpu: u32;
        // SAFETY: `%fs:off` is this thread's `struct rseq`, which glibc allocated in
        // the thread's static TLS block for the thread's whole life (`__rseq_offset`
        // is relative to the thread pointer, `%fs` base on x86-64); a 4-byte load of
        // its `cpu_id` reads memory of this thread and writes nothing.
        unsafe {
            std::arch::asm!(
                "mov {cpu:e}, dword ptr fs:[{off} + 4]",
                off = in(reg) off,
                cpu = out(reg) cpu,
                options(nostack, readonly, preserves_flags)
            );
        }
        return cpu < 0xffff_fffe;
    }
    false
}
