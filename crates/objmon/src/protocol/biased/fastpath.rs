//! The bias owner's fast step, four ways (docs/soundness.md §9, "What each fast path executes"): the lock
//! records push / pop (`biased`, `fable`), the header count in an rseq section
//! (`biased-rseq`, `fable-rseq`), the same in a section a revoker's signal restarts
//! (`biased-signal`, `fable-signal`; through a handle with the known word first, "The known
//! word") and the header count behind the `in_op` Dekker (the seed flavors). What `enter` /
//! `exit` call once the header's state bit says biased.

use super::*;

impl<F: Flavor> Biasing<F> {
    /// Whether `w` is biased to `t`, not being revoked, and (header variant) has room for
    /// one more hold: the bias owner's fast step can run on it.
    #[inline(always)]
    pub(super) fn mine_free(t: &Cx<F>, w: u64) -> bool {
        if F::RECORDS {
            w & !HOST == Self::my_bias(t)
        } else {
            (w & !HOST) ^ Self::my_bias(t) < RC_LIMIT
        }
    }

    /// The bias owner's plain-store step (Figure 4, first cases): +1 (`lock`) or −1 hold on a
    /// header biased to `t`. `None` when done; else the word seen (the step did not apply,
    /// the header changed under it, or — records variant — the records are full or the
    /// unlock is not the innermost record).
    ///
    /// `w` is a recent load of the header (the caller's: a fast path has just tested it for
    /// a thin or learn word, and loading it again would be one more µop in the Cloud's
    /// window — see [`lock`](Protocol::lock)). The step re-loads it after publishing, so an
    /// old `w` only makes it back out.
    ///
    /// A lock by the records and rseq flavors also forgets the thin record if it names `h`
    /// (`LockRecords::last`): their unlock trusts that record before it looks at the
    /// header, and a header biased to us can sit at its address — safe code moved it there
    /// after a guard of the recorded thin word was forgotten (`mem::swap`, `mem::replace`).
    /// A load and a branch; the signal flavors, whose unlock tries the owner's section
    /// first, need it only once the word stops being biased while held, which a revoker
    /// or `revoke_now` sees to (`LockRecords::clear_last`).
    #[inline(always)]
    pub(super) fn biased_step(t: &Cx<F>, h: &BiasWord, w: u64, lock: bool) -> Option<u64> {
        if F::RECORDS {
            Self::record_step(t, h, w, lock)
        } else {
            Self::header_step(t, h, w, lock)
        }
    }

    /// Records variant: push (lock) or pop (unlock) a lock record; the header is only read.
    #[inline(always)]
    pub(super) fn record_step(t: &Cx<F>, h: &BiasWord, w: u64, lock: bool) -> Option<u64> {
        let r = &t.local().rec;
        if w & !HOST != r.bias.load(Ordering::Relaxed) {
            return Some(w);
        }
        let top = r.top.load(Ordering::Relaxed);
        let a = addr(h);
        let (slot, mark, new_top) = if lock {
            let Some(s) = r.slots.get(top) else {
                return Some(w);
            };
            (s, a, top + 1)
        } else {
            let Some(s) = top.checked_sub(1).and_then(|i| r.slots.get(i)) else {
                return Some(w);
            };
            if s.load(Ordering::Relaxed) != a {
                return Some(w);
            }
            (s, a | REC_RELEASING, top - 1)
        };
        // The owner's half of the Dekker: the record (or its releasing mark) first, then the
        // header again. A barrier revoker either sees the record here or its mark is seen
        // below (module docs).
        // Release (a plain `mov` on x86): see `LockRecords::settled_count`.
        slot.store(mark, Ordering::Release);
        owner_barrier();
        let w2 = h.0.load(Ordering::Relaxed);
        if w2 != w {
            // Being revoked: back out (an unpushed slot above the top is cleared, so that no
            // revoker takes it for a push in flight; a popped one is restored and counted).
            slot.store(if lock { 0 } else { a }, Ordering::Release);
            return Some(w2);
        }
        // Commit. Release (a plain `mov` on x86): a revoker that reads this top with acquire
        // and so finds the hold released sees the critical section that preceded it.
        r.top.store(new_top, Ordering::Release);
        if lock {
            // See `biased_step`.
            r.forget_if_last(a);
        }
        None
    }

    /// rseq variant, the bias owner's step (Figure 4's first cases): inside an rseq critical
    /// section, load the header, test that it is biased to `t`, not revoking, with rc < 255
    /// (lock) or ≥ 1 (unlock) — `w − bias` (− 256 to unlock) below 0xff00, a subtract and a
    /// compare: host bits aside, the word is within 0xfeff above the bias bits; `NO_BIAS`
    /// is chosen so that no word is within reach of it — and add ±256 to it in memory, the
    /// instruction that commits. `None` when done; else the word now (the test failed, or the kernel
    /// restarted the section: preemption, migration, a signal, a revoker's
    /// `membarrier(PRIVATE_EXPEDITED_RSEQ)`). Before the section, one store arms it (the
    /// descriptor's address into this thread's `rseq.rseq_cs`).
    ///
    /// Why this is sound against a barrier revoker with no `in_op`: the revoker marks the
    /// word (CAS), then the rseq barrier. A section that read the unmarked word either
    /// committed before the barrier reached its CPU — the revoker's re-read sees its `add`:
    /// over the mark (the mark is gone, it tries again) or after it (the mark kept, the
    /// count ±1: the revoker takes that count) — or is restarted — on its CPU by the barrier's
    /// IPI, or, descheduled, when it next returns to user space — and never stores. A
    /// section that starts after the barrier reads the mark and fails. Only the owner runs
    /// it: `t` is the caller's own context, and the rseq offset is cached (by
    /// `rseq_ready`) before the bias bits, without which the test fails.
    #[inline(always)]
    pub(super) fn rseq_step(t: &Cx<F>, h: &BiasWord, lock: bool) -> Option<u64> {
        let r = &t.local().rec;
        if lock && !F::SIGNAL {
            // See `biased_step`.
            r.forget_if_last(addr(h));
        }
        #[cfg(loom)]
        {
            let _cpu = crate::sync::lock(&r.cpu);
            // Acquire, as x86-64's plain load is: a signal flavor's unlock that fails on a
            // revoker's mark or thin word then reads the thin record the revoker cleared
            // before it (`LockRecords::clear_last`).
            let w = h.0.load(Ordering::Acquire);
            let x = w.wrapping_sub(r.bias.load(Ordering::Relaxed));
            let x = if lock { x } else { x.wrapping_sub(RC_ONE) };
            if x >= RC_LIMIT {
                return Some(w);
            }
            // The commit, `add` / `sub` to memory: a read-modify-write that is not atomic
            // (its load and store may straddle a revoker's mark CAS, losing the mark, or
            // follow it, keeping the mark with the count changed); the store as a swap, as
            // in `header_step` (loom's modification order).
            let cur = h.0.load(Ordering::Relaxed);
            h.0.swap(
                if lock { cur + RC_ONE } else { cur - RC_ONE },
                Ordering::Relaxed,
            );
            None
        }
        #[cfg(all(not(loom), target_arch = "x86_64", target_os = "linux"))]
        {
            let line = r as *const LockRecords;
            if F::SIGNAL {
                return if Self::signal_known_step(h, line, Self::my_bias(t), lock) {
                    None
                } else {
                    Some(h.0.load(Ordering::Relaxed))
                };
            }
            // The lock and unlock sections differ in the test's adjustment (unlock: rc ≥ 1,
            // so 256 less) and the commit's sign.
            macro_rules! section {
                ($($test:literal),+; $commit:literal) => {
                    std::arch::asm!(
                        "mov {coff}({line}), {cs}",
                        "lea 3f(%rip), {t}",
                        "mov {t}, ({cs})",
                        "2:",
                        $($test,)+
                        "sub {boff}({line}), {t}",
                        "cmp $0xfeff, {t}",
                        "ja {fail}",
                        $commit,
                        "4:",
                        ".pushsection __rseq_cs, \"aw\"",
                        ".balign 32",
                        "3:",
                        ".long 0, 0",
                        ".quad 2b, 4b - 2b, 5f",
                        ".popsection",
                        ".pushsection __rseq_failure, \"ax\"",
                        ".byte 0x0f, 0xb9, 0x3d",
                        ".long 0x53053053",
                        "5:",
                        "jmp {fail}",
                        ".popsection",
                        line = in(reg) line,
                        h = in(reg) h.0.as_ptr(),
                        coff = const std::mem::offset_of!(LockRecords, rseq_cs),
                        boff = const std::mem::offset_of!(LockRecords, bias),
                        cs = out(reg) _,
                        t = out(reg) _,
                        fail = label { return Some(h.0.load(Ordering::Relaxed)); },
                        options(att_syntax, nostack),
                    )
                };
            }
            // SAFETY: `line` is this thread's records line (borrowed for the call; `t` is
            // the caller's own context, `Protocol`'s contract), whose `rseq_cs` field —
            // read first — holds the address of this thread's `rseq.rseq_cs` in glibc's
            // TLS, or of a scratch word of this thread where glibc reserved none (set at
            // attach on this thread, `initial_cs_field`): a word of this thread, alive for
            // its whole life, that only this thread (and, for `rseq.rseq_cs`, the kernel)
            // writes. The section arms only when the area is registered, and the test
            // passes only then (the bias bits are cached after `rseq_ready`). The rseq ABI lets user code point `rseq_cs` at a descriptor of its own
            // (`struct rseq_cs`: version 0, flags 0, start, post-commit offset, abort
            // address; 32-byte aligned, in `__rseq_cs`); the abort handler is preceded by
            // glibc's signature `RSEQ_SIG` = 0x53053053 (in a `ud1`, as the kernel's
            // selftests encode it) and jumps to `fail`. The section reads and writes only
            // `h`'s word (an `AtomicU64` borrowed for the call) and reads `bias`; the
            // commit is its last instruction, an `add` / `sub` to memory (not `lock`ed: a
            // revoker's mark CAS may land before it or inside it; `revoke_by_barrier` takes
            // either). x86-64: TSO gives its store release order; the block is a compiler
            // barrier both ways.
            unsafe {
                if lock {
                    section!("mov ({h}), {t}"; "addq $0x100, ({h})");
                } else {
                    section!("mov ({h}), {t}", "sub $0x100, {t}"; "subq $0x100, ({h})");
                }
            }
            None
        }
        #[cfg(all(not(loom), not(all(target_arch = "x86_64", target_os = "linux"))))]
        {
            // No rseq here: `rseq_ready` says no, the bias bits are never cached.
            let _ = (r, lock);
            Some(h.0.load(Ordering::Relaxed))
        }
    }

    /// Signal variant, the bias owner's step (Figure 4's first case, nothing else): load the
    /// header, test that it is biased to us, not revoking, with rc < 255 (lock) or ≥ 1
    /// (unlock), store it ± 256. The load, the test and the store are one section, listed
    /// in the `objmon_bias_cs` table as `(start, commit, abort)`; nothing arms it. A revoker
    /// marks the header, then signals us (`crate::sigbarrier::interrupt`) and waits for our
    /// handler, which moves a thread caught between the load and the store to the abort
    /// address: a section that read the unmarked word either stored before the handler ran
    /// (the revoker's re-read, after the handler's acknowledgement, sees the store: over the
    /// mark, which is gone, so it tries again) or never stores; one that starts after the
    /// handler reads the mark and fails. `true` when done; `false` when the test failed or
    /// the section was aborted (the caller loads the header again if it needs it: an unlock
    /// that finds its thin record does not).
    ///
    /// `k` is [`my_bias`](Self::my_bias): the handle's word (`handle_word`, passed to
    /// `lock` / `unlock`), which a user's loop keeps in a register. The test comes
    /// first exact:
    ///
    /// - lock: the header equals the line's bias bits (biased to us, rc 0, host bits clear,
    ///   not revoking, and — the bits being cached and not poisoned — not in native) →
    ///   store `k + 256`;
    /// - unlock: the header minus 256 equals them (rc 1) → store `k`.
    ///
    /// The stored value comes from the register, not from the loaded word: the line's bias
    /// bits are `NO_BIAS` (which no header equals) or `my_bias` (`BiasThread`'s invariant:
    /// only `enter_slow_loop` caches them; `enter_native` / `leave_native`, and `exit_slow`'s
    /// unlock in native, swap them with `NO_BIAS` and back), and `my_bias` is `k` (a function
    /// of the thread's owner id and generation, both fixed for its context). So when the
    /// test passes, the header is `k` (lock) or `k + 256` (unlock), and the store is the
    /// word ± 256, as the general test would store it (nor does the unlock's test accept a
    /// poisoned line: no header is `NO_BIAS + 256` either). Any other word — nested, host
    /// bits set, marked, thin, learn,
    /// fat — takes the general test (load, subtract the bias bits, compare with 0xfeff), out
    /// of line after the function's body, with its own commit store. Why: a store whose value is the loaded word ± 256
    /// makes a user's lock/unlock loop one chain through memory (load → add → store → load,
    /// two cycles per lock+unlock on this machine whatever the code), while a store from a
    /// register only waits for its test's branch, which is predicted: `biased_fastpath
    /// probe` measures both shapes (`known-word` against `signal-section`, the general test
    /// alone).
    #[cfg(all(not(loom), target_arch = "x86_64", target_os = "linux"))]
    #[inline(always)]
    fn signal_known_step(h: &BiasWord, line: *const LockRecords, k: u64, lock: bool) -> bool {
        // `{known}` holds the value the fast store writes; `{t}` the general test's
        // difference. Two table entries: the fast part (2 to 4, its store the last
        // instruction) and the general part (6 to 8, likewise), each aborting to 5. The
        // general part is in the function's own section after its body (`.subsection 1`):
        // in a section of its own, far away, a nested hold (which takes it) cost 0.91 ns
        // per lock+unlock against 0.82 here (`examples/user_loop time`). Two costs of that
        // placement: the general part lies outside the function's symbol and unwind
        // information (it calls nothing and cannot panic, so nothing unwinds from it, but a
        // debugger's or a sampling profiler's backtrace taken there stops short); and
        // `.subsection` is not among the directives Rust promises for `asm!` (LLVM's
        // assembler, which Rust uses, supports it; one that did not would fail the build,
        // not miscompile). `.subsection 0` returns to where every function body is.
        macro_rules! section {
            ($fast:literal, $test:literal, $commit:literal) => {
                std::arch::asm!(
                    "2:",
                    "mov ({h}), {w}",
                    $fast,
                    "jne 6f",
                    "mov {known}, ({h})",
                    "4:",
                    ".pushsection objmon_bias_cs, \"awR\"",
                    ".balign 8",
                    ".quad 2b, 4b, 5f",
                    ".quad 6f, 8f, 5f",
                    ".popsection",
                    ".subsection 1",
                    "6:",
                    $test,
                    "cmp $0xfeff, {t}",
                    "ja {fail}",
                    $commit,
                    "mov {w}, ({h})",
                    "8:",
                    "jmp 4b",
                    ".subsection 0",
                    ".pushsection objmon_bias_abort, \"ax\"",
                    "5:",
                    "jmp {fail}",
                    ".popsection",
                    line = in(reg) line,
                    h = in(reg) h.0.as_ptr(),
                    known = in(reg) if lock { k.wrapping_add(RC_ONE) } else { k },
                    boff = const std::mem::offset_of!(LockRecords, bias),
                    t = out(reg) _,
                    w = out(reg) _,
                    fail = label { return false; },
                    options(att_syntax, nostack),
                )
            };
        }
        // SAFETY: `line` is this thread's records line (borrowed by the caller for the call;
        // `t` is the caller's own context, `Protocol`'s contract); the asm reads its `bias`
        // field and reads and writes only `h`'s word (an `AtomicU64` borrowed for the call).
        // The section's two table entries each name a first instruction, the address after
        // a committing store (a plain `mov`, the last instruction of its part) and an abort
        // stub that jumps to `fail`; only the signal barrier's handler uses them, on this
        // thread. The fast store writes the loaded word ± 256 (see above: `k` is `my_bias`,
        // the caller's contract through `lock` / `unlock`). Registers only, no stack
        // (`nostack`); the block is a compiler barrier both ways, and x86-64's TSO gives the
        // stores release order.
        unsafe {
            if lock {
                section!(
                    "cmp {boff}({line}), {w}",
                    "mov {w}, {t}\n sub {boff}({line}), {t}",
                    "add $0x100, {w}"
                );
            } else {
                section!(
                    "lea -0x100({w}), {t}\n cmp {boff}({line}), {t}",
                    "sub {boff}({line}), {t}",
                    "sub $0x100, {w}"
                );
            }
        }
        true
    }

    /// The signal flavors' owner step as `enter` / `exit` run it first: `true` when done;
    /// `false` otherwise, with nothing loaded after the failed test (the caller loads the
    /// header if it needs it). Elsewhere than x86-64 Linux (and under loom) the rseq step's
    /// model or refusal.
    ///
    /// `known`: the handle's word (`handle_word`: `my_bias` where the section is built).
    #[inline(always)]
    pub(super) fn signal_done(t: &Cx<F>, h: &BiasWord, known: u64, lock: bool) -> bool {
        #[cfg(all(not(loom), target_arch = "x86_64", target_os = "linux"))]
        {
            let line = &t.local().rec as *const LockRecords;
            Self::signal_known_step(h, line, known, lock)
        }
        #[cfg(not(all(not(loom), target_arch = "x86_64", target_os = "linux")))]
        {
            let _ = known;
            Self::rseq_step(t, h, lock).is_none()
        }
    }

    /// Header variant (Figures 3 and 4): store the header ± 256, bracketed by `in_op`.
    #[inline(always)]
    pub(super) fn header_step(t: &Cx<F>, h: &BiasWord, w: u64, lock: bool) -> Option<u64> {
        if F::RSEQ {
            return Self::rseq_step(t, h, lock);
        }
        // After the branch: an atomic load is not removed when unused (it was, before it,
        // one dead instruction on each side of the rseq step).
        let me = Self::cached_bias(t);
        let ok = |w: u64| {
            let x = (w & !HOST) ^ me;
            if lock {
                x < RC_LIMIT
            } else {
                x.wrapping_sub(RC_ONE) < RC_LIMIT
            }
        };
        // A filter first, so that thin and learn words pay nothing for the Dekker below.
        if !ok(w) {
            return Some(w);
        }
        let sp = &t.local().sp;
        sp.in_op.store(addr(h), Ordering::Relaxed);
        owner_barrier();
        // The Dekker read: after `in_op` is published, a barrier revoker's mark is either
        // visible here or the revoker sees `in_op` and waits for the store below.
        let w2 = h.0.load(Ordering::Relaxed);
        if w2 != w {
            sp.in_op.store(0, Ordering::Relaxed);
            return Some(w2);
        }
        let new = if lock { w + RC_ONE } else { w - RC_ONE };
        #[cfg(not(loom))]
        h.0.store(new, Ordering::Relaxed);
        // Loom keeps modification order as a partial order and so misses C++'s rule that a
        // read-modify-write sits right after the value it read ([atomics.order]): a revoker's
        // mark CAS could then "stay newest" over this later plain store. A swap gives the
        // model that ordering; the hardware (and C++) give it to the store.
        #[cfg(loom)]
        h.0.swap(new, Ordering::Relaxed);
        // Release: a barrier revoker that sees `in_op` cleared sees this store.
        sp.in_op.store(0, Ordering::Release);
        None
    }

    /// The non-seed flavors' unlock of a learn or thin word that is not the last level
    /// (or anything `exit`'s inline tests did not take): nested (rc 2..=255, ours, not
    /// stale), one level off with a store, then what `exit_slow` does after its store (a
    /// hash parked meanwhile is settled at rc 1); else `exit_slow`.
    ///
    /// Out of line on purpose. Inline, this path (with the parked-hash check's barrier
    /// and its `membarrier::init`) made the guard's `drop_in_place` too big for LLVM to inline
    /// into a user's loop where guards of the protocol are dropped in many places (the
    /// bench crate): every unlock then paid a call, the spills around it, and the handle's
    /// guard count upkeep (`guards` + 1 / − 1, read-modify-writes of one word from two
    /// functions, which LLVM folds away only when both are inline): `user-loop-biased`
    /// 3.73 → 2.35 ns, `user-loop-biased-rseq` 3.74 → 2.03 (one run each). The nested
    /// unlock pays a call instead (`user_loop fable nested`: 67 → 65 instructions, the
    /// call's set-up now off the other paths).
    #[inline(never)]
    pub(super) fn exit_nested(
        rt: &Rt<F>,
        t: &Cx<F>,
        h: &BiasWord,
        w: u64,
    ) -> Result<(), MonitorError> {
        if F::RSEQ && w == SETTLE {
            Self::settle_nested(rt, t, h, h.0.load(Ordering::Relaxed));
            return Ok(());
        }
        let rec = &t.local().rec;
        let x = (w & NEST_MASK).wrapping_sub(rec.unlock_once);
        if x.wrapping_sub(RC_ONE) < 254 << RC_SHIFT {
            let new = w - RC_ONE;
            // Nobody else writes a held thin or learn word (see `exit`).
            h.0.store(new, Ordering::Release);
            Self::unnest_look(rt, t, h, new);
            return Ok(());
        }
        Self::exit_slow(rt, t, h)
    }

    /// The nested unlock's parked-hash check (`unnest_look`) when it may find something (or
    /// the thread's side of the Dekker is a fence): the full check, which settles a hash
    /// parked for `h` if `new` is one level.
    #[cold]
    #[inline(never)]
    pub(super) fn settle_nested(rt: &Rt<F>, t: &Cx<F>, h: &BiasWord, new: u64) {
        Self::settle_parked_hash_after(rt, t, h, new);
    }
}
