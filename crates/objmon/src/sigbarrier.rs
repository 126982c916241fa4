//! The signal barrier: interrupt one thread with a signal whose handler restarts any owner
//! section the thread was inside, and wait until the handler has run. What the biased
//! protocols' `-signal` flavors use in place of `membarrier(PRIVATE_EXPEDITED_RSEQ)`, so that
//! their owner step needs no arming store (see docs/soundness.md §9, "Revocation").
//!
//! Owns: the process's one handler for [`signal`] (installed once, only over the default
//! disposition), the table of owner sections it restarts (the `objmon_bias_cs` ELF section:
//! one `(start, post-commit, abort)` triple per inlined section part — a section may have
//! two, each ending with its own committing store —, gathered by the linker), and
//! [`Target`], the per-thread kernel id and acknowledgement word a revoker signals and waits
//! on. Knows nothing of protocols or headers: a section is any code range that may be
//! restarted at its abort address.
//!
//! Why it is a barrier. A revoker marks the header (a CAS), then [`interrupt`]s the owner and
//! waits for the handler's acknowledgement. The handler runs on the owner's own thread, at
//! an instruction boundary, after the kernel entry that delivered it (which drains the
//! owner's store buffer): if the owner was inside a section — after the section's load of
//! the header, before its committing store — the handler moves it to the section's abort
//! address, so that store never happens; a section that had committed is visible to the
//! revoker once it sees the acknowledgement (the handler's `SeqCst` increment follows the
//! commit in the owner's program order); a section begun after the handler reads the mark.
//! The same argument as the rseq barrier's, for one thread, with no store to arm anything:
//! the owner's step is Figure 4's load, compare and store and nothing else.
//!
//! Costs: nothing on the owner's path; a revocation pays a signal round trip to the owner
//! (a `rt_tgsigqueueinfo`, the owner's handler, a futex wake: tens of µs when the owner
//! runs, more when it must be scheduled). An owner at a safepoint (parked, waiting, in
//! native) is not signalled at all: the revoker's `safe` test says so first.
//!
//! Host contract (the flavors' runtimes are made only by the `unsafe`
//! `Runtime::new_unchecked`, which states it): the signal ([`signal`], `SIGRTMIN + 6` where
//! glibc leaves it free) must be left to objmon (the handler installs only over `SIG_DFL` and
//! the flavors bias nothing otherwise) and not be blocked on attached threads that bias: a
//! thread that blocks it at attach never biases; one that blocks it later delays its
//! revokers until it unblocks it. And every signal handler of the host that runs on such a
//! thread keeps the signal blocked from its entry until it returns (in its `sa_mask`, never
//! unblocked inside). The handler here sees only the innermost interrupted context: nested
//! inside a host handler that interrupted a section, it would find the host handler's
//! instruction pointer, restart nothing and acknowledge, and the section would commit over
//! the revoker's mark when the host handler returned. Nothing tells that case apart here (an
//! `SA_NODEFER` handler with an empty mask runs with the section's own mask; its stack may
//! be any), so the host keeps the signal out instead: blocked while its handler runs, the
//! signal is delivered as the handler returns, over the restored section context.
//! A blocking system call the owner is in returns `EINTR` where `SA_RESTART` does not
//! restart it (futex and sleep waits, among others), as with any signal.
//!
//! x86-64 Linux with glibc only (the section table is built by the owner step's `asm!`);
//! elsewhere [`install`] answers `false` and the flavors bias nothing. Under loom the barrier
//! is modelled by the caller (the owner's section under a mutex the revoker takes once).

#[cfg(all(
    not(loom),
    target_arch = "x86_64",
    target_os = "linux",
    target_env = "gnu"
))]
mod imp {
    use crate::spin::Spin;
    use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU8, Ordering};

    /// One owner section: a signal at an instruction in `start..commit` resumes at `abort`.
    /// Written by the owner step's `asm!` (`.quad start, commit, abort` in `objmon_bias_cs`).
    #[repr(C)]
    struct Entry {
        start: usize,
        commit: usize,
        abort: usize,
    }

    // The table always exists, so that the linker defines its bounds even in a program that
    // runs no signal flavor: one empty entry (start 0) that matches no address.
    std::arch::global_asm!(
        ".pushsection objmon_bias_cs, \"awR\"",
        ".balign 8",
        ".quad 0, 0, 0",
        ".popsection",
    );

    extern "C" {
        #[link_name = "__start_objmon_bias_cs"]
        static TABLE_START: [Entry; 0];
        #[link_name = "__stop_objmon_bias_cs"]
        static TABLE_STOP: [Entry; 0];
    }

    /// The section table, as the linker gathered it.
    fn table() -> &'static [Entry] {
        // SAFETY: the linker defines `__start_objmon_bias_cs` / `__stop_objmon_bias_cs` as
        // the bounds of the output section of that name, which holds only `Entry` triples
        // (three 8-byte words, 8-aligned: every fragment is `.balign 8` and 24 bytes long, so
        // no padding falls between fragments), written at link time and never at run time.
        unsafe {
            let a = std::ptr::addr_of!(TABLE_START) as *const Entry;
            let b = std::ptr::addr_of!(TABLE_STOP) as *const Entry;
            std::slice::from_raw_parts(a, (b as usize - a as usize) / std::mem::size_of::<Entry>())
        }
    }

    /// The abort address of the section `ip` is inside, if any.
    fn abort_for(ip: usize) -> Option<usize> {
        table()
            .iter()
            .find(|e| e.start != 0 && (e.start..e.commit).contains(&ip))
            .map(|e| e.abort)
    }

    /// Whether `ip` is inside an owner section (async-signal-safe: reads link-time data).
    pub fn in_owner_section(ip: usize) -> bool {
        abort_for(ip).is_some()
    }

    /// How many owner sections the program holds (the empty entry aside).
    pub(crate) fn sections() -> usize {
        table().iter().filter(|e| e.start != 0).count()
    }

    /// Every section of this program (the test binary: every owner step the library's
    /// tests inline) ends with its committing store: the bytes just before `commit` encode
    /// a 64-bit `mov` of a register to memory (`REX.W 89 /r`, a base register with no
    /// displacement or a zero 8-bit one, or a SIB byte). A section whose range ended one
    /// instruction early or late would let the handler restart a thread after its store (a
    /// count stored twice) or not restart one before it (a store over a revoker's mark);
    /// the known-word step has two ranges per section (`biased/fastpath.rs`). The one
    /// exception is `a_thread_inside_a_section_is_restarted`'s synthetic section, which ends
    /// with its jump to itself (`eb fe`).
    #[cfg(test)]
    #[test]
    fn every_section_ends_with_its_committing_store() {
        let ends_with_store = |c: usize| {
            // SAFETY: `c` is a section's post-commit address in this program's text, and
            // every section has at least its store (or the test's 2-byte jump) before it:
            // the 3 or 4 bytes before `c` are mapped, readable code.
            let b = |k: usize| unsafe { *((c - k) as *const u8) };
            let rex = |x: u8| x & 0xf8 == 0x48;
            // REX.W 89 modrm (mod 00, rm neither 100 = SIB nor 101 = rip): 3 bytes.
            let plain = rex(b(3)) && b(2) == 0x89 && b(1) >> 6 == 0 && !matches!(b(1) & 7, 4 | 5);
            // REX.W 89 modrm (mod 01, rm 101 = rbp / r13) disp8 0: 4 bytes.
            let disp = rex(b(4)) && b(3) == 0x89 && b(2) >> 6 == 1 && b(2) & 7 == 5 && b(1) == 0;
            // REX.W 89 modrm (mod 00, rm 100) SIB: 4 bytes (base rsp / r12).
            let sib = rex(b(4)) && b(3) == 0x89 && b(2) >> 6 == 0 && b(2) & 7 == 4;
            plain || disp || sib
        };
        let mut stores = 0;
        for e in table().iter().filter(|e| e.start != 0) {
            assert!(
                e.start < e.commit,
                "{:#x}..{:#x}: empty range",
                e.start,
                e.commit
            );
            // SAFETY: as above, the two bytes before `commit`.
            let spin = unsafe { *((e.commit - 2) as *const [u8; 2]) } == [0xeb, 0xfe];
            if spin {
                continue;
            }
            assert!(
                ends_with_store(e.commit),
                "section {:#x}..{:#x} does not end with a register-to-memory mov",
                e.start,
                e.commit
            );
            stores += 1;
        }
        assert!(
            stores >= 4,
            "the owner steps' sections are in the table ({stores})"
        );
    }

    /// The signal: `SIGRTMIN + 6` (glibc keeps the first real-time signals for itself and
    /// reports the first free one as `SIGRTMIN`).
    pub(crate) fn signal() -> i32 {
        libc::SIGRTMIN() + 6
    }

    /// The signal, for a host's `sa_mask` (see the crate's `vm::barrier_signal`).
    pub fn barrier_signal() -> Option<i32> {
        Some(signal())
    }

    /// The kernel's `siginfo_t` for `SI_QUEUE` on x86-64 (`_sifields._rt`): what the
    /// revoker sends and the handler reads; 128 bytes as the kernel expects.
    #[repr(C)]
    struct QueueInfo {
        signo: i32,
        errno: i32,
        code: i32,
        _pad: i32,
        pid: i32,
        uid: u32,
        value: usize,
        _rest: [u64; 12],
    }

    /// The handler: restart a section in flight, then acknowledge through the word the
    /// revoker named. Sound only under the host contract (module docs): `uc` must be the
    /// context of the code the section runs in, not of a host handler nested over it. Async-signal-safe: reads the (immutable) table, one atomic add, one
    /// futex system call; `errno` is preserved.
    extern "C" fn on_signal(_sig: i32, info: *mut libc::siginfo_t, uc: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid `siginfo_t` and `ucontext_t` to an `SA_SIGINFO`
        // handler for the handler's duration; `REG_RIP` of the context is where the thread
        // resumes, and writing it is how a handler redirects it (the kernel restores the
        // registers from this context on `rt_sigreturn`). The acknowledgement word is taken
        // only from a `SI_QUEUE` signal of this process whose value is the address of one
        // of `ACKS`' words (checked): a static, alive for the whole process, so a late
        // signal (its revoker gone) writes only a word no longer waited on. `errno` is the
        // thread's own.
        unsafe {
            let saved = *libc::__errno_location();
            let uc = &mut *(uc as *mut libc::ucontext_t);
            let ip = &mut uc.uc_mcontext.gregs[libc::REG_RIP as usize];
            if let Some(abort) = abort_for(*ip as usize) {
                *ip = abort as i64;
            }
            let q = &*(info as *const QueueInfo);
            let acks = ACKS.as_ptr_range();
            if q.code == libc::SI_QUEUE
                && q.pid == libc::getpid()
                && (acks.start as usize..acks.end as usize).contains(&q.value)
                && q.value.is_multiple_of(std::mem::align_of::<AtomicU32>())
            {
                let ack = &*(q.value as *const AtomicU32);
                ack.fetch_add(1, Ordering::SeqCst);
                libc::syscall(
                    libc::SYS_futex,
                    ack.as_ptr(),
                    libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                    i32::MAX,
                );
            }
            *libc::__errno_location() = saved;
        }
    }

    /// 0 not tried, 1 installed, 2 refused.
    static INSTALLED: AtomicU8 = AtomicU8::new(0);

    /// Installs the handler (once per process); `false` if the signal has another
    /// disposition already or the kernel refuses, or the program holds no section.
    pub(crate) fn install() -> bool {
        match INSTALLED.load(Ordering::Acquire) {
            1 => return true,
            2 => return false,
            _ => {}
        }
        static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        if INSTALLED.load(Ordering::Acquire) != 0 {
            return INSTALLED.load(Ordering::Acquire) == 1;
        }
        let ok = sections() > 0 && set_handler();
        INSTALLED.store(if ok { 1 } else { 2 }, Ordering::Release);
        ok
    }

    fn set_handler() -> bool {
        // SAFETY: `sigaction` with a zeroed, then filled `struct sigaction` (a plain C
        // struct) and a valid signal number; the old disposition is read first so that a
        // handler the host installed is never replaced.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal(), std::ptr::null(), &mut old) != 0 {
                return false;
            }
            if old.sa_sigaction != libc::SIG_DFL {
                return old.sa_sigaction == on_signal as *const () as usize;
            }
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | libc::SA_ONSTACK;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(signal(), &sa, std::ptr::null_mut()) == 0
        }
    }

    /// Whether the calling thread can take the signal now (installed, not blocked here).
    pub(crate) fn thread_ready() -> bool {
        if !install() {
            return false;
        }
        // SAFETY: `pthread_sigmask` with a null new set only reads the calling thread's
        // mask into `set`, a local `sigset_t`.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut set) == 0
                && libc::sigismember(&set, signal()) == 0
        }
    }

    /// The handlers' acknowledgement words, one per thread id (ids are process-wide and at
    /// most `MAX_THREAD_ID`): static, so that a signal delivered after its revoker stopped
    /// waiting (the owner went to a safepoint) still writes live memory.
    static ACKS: [AtomicU32; crate::thread::MAX_THREAD_ID as usize + 1] =
        [const { AtomicU32::new(0) }; crate::thread::MAX_THREAD_ID as usize + 1];

    /// A thread a revoker may signal: its kernel id (set on the thread itself) and its
    /// thread id, which names its acknowledgement word.
    #[derive(Debug)]
    pub(crate) struct Target {
        tid: AtomicI32,
        id: u16,
    }

    impl Target {
        /// The target of the thread with process-wide id `id` (not yet recorded).
        pub(crate) fn new(id: u16) -> Self {
            Self {
                tid: AtomicI32::new(0),
                id,
            }
        }

        /// Records the calling thread as this target.
        pub(crate) fn set_current(&self) {
            // SAFETY: `gettid` has no arguments and cannot fail.
            let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
            self.tid.store(tid, Ordering::Relaxed);
        }
    }

    /// What [`interrupt`] found.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) enum Delivery {
        /// The handler ran on the thread after the call began (or `safe` said the thread
        /// cannot be inside a section).
        Done,
        /// The thread is gone (or never recorded): it runs no section any more.
        Gone,
        /// The kernel refused the signal (a seccomp filter): nothing was ordered.
        Refused,
    }

    /// Interrupts `t`'s thread and waits until its handler has run — or until `safe()`
    /// says the thread cannot be inside a section (at a safepoint that only the caller can
    /// end). Call it after the store the owner must see (the revoker's mark).
    pub(crate) fn interrupt(t: &Target, safe: impl Fn() -> bool) -> Delivery {
        let tid = t.tid.load(Ordering::Relaxed);
        if tid == 0 {
            return Delivery::Gone;
        }
        if safe() {
            return Delivery::Done;
        }
        // SeqCst: read after the caller's mark (its CAS), so that an increment past it is
        // a handler run that began after the mark was in place... or late from an earlier
        // revoker, which began after that revoker's mark and so after an earlier marked
        // state: as good (the owner is past every section it was in then, and a section
        // begun after it read a mark or our word).
        let ack = &ACKS[usize::from(t.id)];
        let a0 = ack.load(Ordering::SeqCst);
        let mut q = QueueInfo {
            signo: signal(),
            errno: 0,
            code: libc::SI_QUEUE,
            _pad: 0,
            // SAFETY: `getpid` / `getuid` cannot fail.
            pid: unsafe { libc::getpid() },
            uid: unsafe { libc::getuid() },
            value: ack as *const AtomicU32 as usize,
            _rest: [0; 12],
        };
        // SAFETY: `rt_tgsigqueueinfo(tgid, tid, sig, info)` with our own process id, a
        // thread id of it, our installed signal and a 128-byte `siginfo_t` of `SI_QUEUE`
        // (allowed within one's own process). A thread id reused by another thread of the
        // process only sends that thread our handler: it restarts a section of its own, if
        // it is in one, and acknowledges `t`'s word — harmless (the word is
        // shared by ids, not threads: the wait below ends early only when some handler
        // ran after our mark, see above).
        let r = unsafe {
            libc::syscall(
                libc::SYS_rt_tgsigqueueinfo,
                libc::getpid(),
                tid,
                signal(),
                &mut q as *mut QueueInfo,
            )
        };
        if r != 0 {
            // SAFETY: `errno` of this thread, just set by the failed call.
            let e = unsafe { *libc::__errno_location() };
            return if e == libc::ESRCH {
                Delivery::Gone
            } else {
                Delivery::Refused
            };
        }
        let mut spins = Spin::new();
        for i in 0u32.. {
            let a = ack.load(Ordering::SeqCst);
            if a != a0 || safe() {
                return Delivery::Done;
            }
            if i < 64 {
                spins.snooze();
            } else {
                // SAFETY: FUTEX_WAIT reads the word (a live `AtomicU32`) and sleeps while it
                // still holds `a`, at most the timeout (a local `timespec`); any return is
                // fine: the loop re-checks.
                unsafe {
                    let ts = libc::timespec {
                        tv_sec: 0,
                        tv_nsec: 200_000,
                    };
                    libc::syscall(
                        libc::SYS_futex,
                        ack.as_ptr(),
                        libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                        a,
                        &ts as *const libc::timespec,
                    );
                }
            }
        }
        unreachable!("the wait loop returns")
    }
}

#[cfg(not(all(
    not(loom),
    target_arch = "x86_64",
    target_os = "linux",
    target_env = "gnu"
)))]
mod imp {
    /// No signal barrier here (the flavors bias nothing): no signal to mask.
    pub fn barrier_signal() -> Option<i32> {
        None
    }
    /// No owner sections here.
    pub fn in_owner_section(_: usize) -> bool {
        false
    }
    /// No signal barrier here: the flavors bias nothing.
    pub(crate) fn install() -> bool {
        cfg!(loom)
    }
    // Under loom the engine's `rseq_ready` answers for itself and never asks.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn thread_ready() -> bool {
        cfg!(loom)
    }
    /// See the x86-64 Linux version.
    #[derive(Debug)]
    pub(crate) struct Target;
    impl Target {
        pub(crate) fn new(_: u16) -> Self {
            Self
        }
        pub(crate) fn set_current(&self) {}
    }
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) enum Delivery {
        Done,
        #[allow(dead_code)]
        Gone,
        #[allow(dead_code)]
        Refused,
    }
    /// Under loom the caller models the barrier (the owner's section under a mutex it
    /// takes); elsewhere nothing biases, so nothing calls this.
    pub(crate) fn interrupt(_: &Target, _: impl Fn() -> bool) -> Delivery {
        Delivery::Done
    }
}

pub(crate) use imp::*;

#[cfg(all(
    test,
    not(loom),
    target_arch = "x86_64",
    target_os = "linux",
    target_env = "gnu"
))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Arc};
    use std::time::Duration;

    /// Spins inside a section of its own (`2: jmp 2b`, listed in the table) until a signal
    /// restarts it at its abort address, which leaves the loop.
    fn spin_in_section(entered: &AtomicBool) {
        entered.store(true, Ordering::SeqCst);
        // SAFETY: an endless jump to itself inside a section whose table entry sends a
        // signal barrier's handler to `3:`, which falls out of the block; registers only.
        unsafe {
            std::arch::asm!(
                "2:",
                "jmp 2b",
                "4:",
                ".pushsection objmon_bias_cs, \"awR\"",
                ".balign 8",
                ".quad 2b, 4b, 3f",
                ".popsection",
                "3:",
                options(att_syntax, nostack),
            );
        }
    }

    /// The handler finds a section in the table and moves a thread caught inside it to the
    /// abort address; without that, the thread spins forever (the test fails at its
    /// timeout). Also: the acknowledgement ends `interrupt`'s wait.
    #[test]
    fn a_thread_inside_a_section_is_restarted() {
        assert!(install(), "the handler installs over SIG_DFL");
        assert!(sections() >= 1, "the table holds this test's section");
        let target = Arc::new(Target::new(4242));
        let entered = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        {
            let (target, entered) = (target.clone(), entered.clone());
            std::thread::spawn(move || {
                target.set_current();
                assert!(thread_ready());
                spin_in_section(&entered);
                tx.send(()).unwrap();
            });
        }
        while !entered.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(10));
        assert_eq!(interrupt(&target, || false), Delivery::Done);
        rx.recv_timeout(Duration::from_secs(20))
            .expect("the signal restarted the section at its abort address");
    }

    /// A thread that has exited is reported gone (or, if the kernel reused its id for a
    /// thread of ours, handled): never a wait without end.
    #[test]
    fn an_exited_thread_is_gone() {
        assert!(install());
        let target = Arc::new(Target::new(4243));
        {
            let target = target.clone();
            std::thread::spawn(move || target.set_current())
                .join()
                .unwrap();
        }
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || tx.send(interrupt(&target, || false)).unwrap());
        let d = rx.recv_timeout(Duration::from_secs(20)).expect("no hang");
        assert!(matches!(d, Delivery::Gone | Delivery::Done), "{d:?}");
    }

    /// A thread that blocks the signal may not bias (`thread_ready` says no).
    #[test]
    fn a_thread_that_blocks_the_signal_is_not_ready() {
        assert!(install());
        std::thread::spawn(|| {
            assert!(thread_ready());
            // SAFETY: blocks one signal in this thread's mask (a local `sigset_t`).
            unsafe {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, signal());
                libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            }
            assert!(!thread_ready());
        })
        .join()
        .unwrap();
    }
}
