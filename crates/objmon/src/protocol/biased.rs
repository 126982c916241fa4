//! `biased`: KKO biased locking as built in Jikes RVM (seed 002 §2.2) — bias on first
//! acquire, never rebias — and the engine it shares with [`fable`](super::fable) (seed 002
//! §3): the header, the fast paths, the thin and fat slow paths, and bias revocation three
//! ways (see `crate::revoke`). Three owner steps, chosen by [`Flavor::RECORDS`] and
//! [`Flavor::RSEQ`]:
//!
//! - **the header in an rseq section** (`biased-rseq`, `fable-rseq`, issue 13): Figure 4's
//!   first case exactly — load the header, compare, store it ± 256 — run as a Linux
//!   restartable sequence, which the kernel restarts if the thread is preempted, migrated
//!   or signalled inside it, and which a revoker's `membarrier(PRIVATE_EXPEDITED_RSEQ)`
//!   restarts on every CPU: no Dekker, one store to arm the section;
//! - **the header in a section a revoker's signal restarts** (`biased-signal`,
//!   `fable-signal`, issue 13 item 3): the same load, compare and store, the load the only
//!   one of the header on the owner's path and nothing armed before it; a revoker
//!   interrupts the owner with a signal whose handler moves it out of a section in flight
//!   (`crate::sigbarrier`) instead of the process-wide rseq barrier. Sound only while every
//!   host signal handler on a locking thread blocks that signal (the handler sees only the
//!   innermost interrupted context), so these two are made only by the `unsafe`
//!   `Runtime::new_unchecked` and are no `MonitorProtocol`;
//! - **lock records** (`biased`, [`Fable`](super::fable::Fable); HotSpot 17's scheme, the
//!   portable default): the bias owner keeps one
//!   record per biased hold in a small per-thread array ([`LOCK_RECORDS`] slots and a top),
//!   and its lock and unlock **store nothing to the header**;
//! - **the header behind a Dekker** (`biased-seed`, [`FableSeed`](super::fable::FableSeed);
//!   Figures 3, 4, 6 and 7 as written): the owner's lock / unlock store the header ± 256,
//!   bracketed by `in_op`.
//!
//! Measured, by the bias owner, through the public API (`me.enter(&h)` / guard drop in the
//! user's loop, `examples/biased_fastpath.rs`; callgrind instructions per lock + unlock,
//! plain / nested, on main after the handle became `Freeze` (`handle.rs`: its pointers stay
//! in registers) and the thin record was added (the records flavors' unlock checks it
//! first: +3); atomic read-modify-writes: none, fences: none, in every variant):
//!
//! | variant                  | instructions | stores (lock + unlock)                 |
//! |--------------------------|--------------|----------------------------------------|
//! | `biased-signal`, `fable-signal` | 18 / 18; through a handle 13 / 24 | 2: header ×2 |
//! | `biased-rseq`, `fable-rseq` | 32 / 32   | 4: header ×2, `rseq_cs` ×2             |
//! | `biased-seed`, `fable-seed` | 39 / 39   | 6: header ×2, `in_op` ×4               |
//! | `biased`, `fable` (records) | 50 / 50, 51 / 51 | 4: record ×2, top ×2             |
//!
//! against 16 for the bare load / compare / store pair written the same way (`pair`). In
//! time (one quiet run of `objmon-bench run --bench user-loop --reps 9`, thread CPU time,
//! 2026-11-25): `biased` 2.39 ns, `biased-rseq` 1.78, `biased-seed` 1.70, `fable` 2.60,
//! `fable-rseq` 1.88, `fable-seed` 1.77 per lock + unlock against 0.502 for the plain pair
//! (`user-loop-sol-plain-pair`): 3.4–5.2×, not issue 13's 1.5×.
//!
//! The signal flavors (this machine, an Intel Xeon; the same quiet run): `biased-signal`
//! 0.787 ns, `fable-signal` 0.823, against the plain pair's 0.502: 1.57× and 1.64× (issue
//! 13 asks 1.5×; 2.1× before the handle became `Freeze`, when a user's loop reloaded the
//! handle's two pointers before each step: 24 instructions). On `sync` (wall clock,
//! `--bench sync --reps 9`, same session): `biased-signal` 0.769 ns, `fable-signal` 0.765,
//! `hotspot17-biased` 1.055, `biased-rseq` 1.79. What made the difference was not the rseq arming
//! store (the signal step after the dispatch's own load took 4.5 ns in `biased_fastpath
//! time` beside `biased-rseq`'s 4.7, a loaded machine) but the second load of the header:
//! the section's load is the only one (32 → 27 instructions), and everything but the
//! section is one call away (27 → 24; inline, `fable-signal`'s enter was too big for the
//! harness's `sync` loop, which called it: 2.53 ns there). The price was the thin and learn
//! paths: 69 instructions per thin lock + unlock against 31 for `biased-rseq` (83 before the
//! thin record), 66 for `fable-signal` and 82 per learn-mode lock + unlock (`fable`: 25 and
//! 41), which made `fable-signal` the one FABLE whose AllocLock sweep left seed 002 §5.3's
//! 1.5× of thin (1.82× at learn-limit 7, k = 5, in a CI `report --quick`; issue 13 item 6).
//! Now, after the failed section, the thin CAS and the counted learn step are inline in
//! `enter` (`enter_signal_rest`) and the thin record's blind store and the combined unlock
//! in `exit`, as in `fable`; nested holds, clear → learn / biased and the slow paths stay one
//! call away, which keeps `enter` small enough for the harness's loops to inline
//! (`Subject::lock` of `fable-signal` is not out of line in the bench binary; with all of
//! `enter_word` inline it was). Callgrind, `biased_fastpath` (before → after): thin lock +
//! unlock `fable-signal` 66 → 45, `biased-signal` 69 → 44; a learn-mode lock + unlock
//! (`alloc3 − alloc2`) 82 → 56; AllocLock k = 2 per object 187 → 160 (`biased-signal` 113 →
//! 116, k = 1 105 → 104: clear → learn / biased is still a call); the bias owner 18 / 18
//! plain / nested, unchanged (`user_loop` 16). What is left above `fable`'s thin path: the
//! failed section (its load, subtract, compare each way, and the header loaded again after
//! it) and, in a user's loop, two spilled registers each way around the paths that call.
//! A learn object held around the loop (`user_loop fable-signal nested`) pays for the
//! inline tests before its call: 108 → 118 (75 since "Nested learn and thin holds"). In time (`objmon-bench run --bench alloc-lock
//! --quick --reps 9 --protocol thin --protocol fable-signal --protocol fable`, the old and
//! new binaries interleaved, three rounds each, a quiet spell on the 2-core VM): the
//! learn-limit sweep's worst `fable-signal[…]` ÷ thin (medians) 1.48 / 1.48 / 1.50 before,
//! 1.39 / 1.46 / 1.45 after, its geometric mean over N and k 1.10–1.12 → 1.08–1.10; `fable`'s
//! (unchanged code, the control) 1.26–1.31 and 0.91–0.95 in both. The worst cells are at
//! k = 8 with N ≥ 6; the CI's 1.82× was a loaded run. The bias owner's rows, same spell:
//! `sync` `fable-signal` 0.818–0.831 ns before, 0.818 after; `user-loop-fable-signal` and
//! its nested row, minima 0.71–0.74 ns before and 0.73–0.78 after (medians 0.74–0.82 and
//! 0.76–0.98, noisy) — perhaps 2–4% slower although `biased_fastpath`, `user_loop` and the
//! bench's own loop (`handle_costs_nothing_over_its_context`: 16) count the same
//! instructions as before (code layout?; not settled). What is left above the pair on the
//! owner's path: the handle's two loads and the records line's address, per step.
//!
//! **Memory operations, the records flavors' floor** (2026-11-29, the 2-core AMD EPYC
//! (Zen 5) VM; `perf annotate` of `examples/user_loop biased plain`): the records step's
//! lock loads the header, the line's bias bits and the top, stores the record, re-loads the
//! header (the Dekker) and stores the top: 4 loads, 2 stores; its unlock loads the thin
//! record (`last`), the header, the bias bits, the top and the slot, marks the slot, re-loads
//! the header and stores the top: 6 loads, 2 stores. 14 memory operations per lock+unlock
//! against the plain pair's 4 (2 loads, 2 stores). On this machine the pair runs at one
//! cycle (0.24 ns) and the signal step, 6 operations, at 1.5 (0.36 ns): about four memory
//! operations a cycle, which puts the records step's floor at 3.5 cycles, 3.5× the pair,
//! before any other work — measured 4.3–4.8× (`user-loop-biased` 1.05–1.09 ns). Issue 13's
//! 1.5× is out of this design's reach: a record and a top each way, and the Dekker's
//! re-loads, are what lets a revoker count the owner's holds without a safepoint walk of
//! its frames (HotSpot 17's biased exit stores nothing because its revoker walks them).
//!
//! **The known word** (issue 13 item 3, 2026-11-29). Through a handle (`enter_with` /
//! `exit_with`, the handle's word being `my_bias`), the signal flavors'
//! section first compares the header with the line's bias bits exactly (lock: rc 0; unlock:
//! rc 1; host bits clear) and then stores the other word *from a register*
//! (`fastpath.rs`, `signal_known_step`); any other word takes the general test out of line.
//! The step's store then no longer depends on its load: with `w ± 256` stored, a user's
//! lock/unlock loop is one chain through memory (load → add → store → load), two cycles per
//! lock+unlock on the AMD VM whatever the code, 2.0× the pair that stores constants
//! (`objmon-bench`'s `sol-plain-pair`). `biased_fastpath probe` (each loop at four offsets of
//! a 64-byte line, ratio to that pair): the old section 2.29–2.33×, the known word
//! 1.53–1.54× at three offsets and 2.02× at one. Through the public API
//! (`examples/user_loop.rs time`, 7 interleaved rounds): 0.567 → 0.36 ns for both flavors
//! (the ± 256 pair 0.53); `objmon-bench run --bench user-loop` (the old and new binaries
//! alternating twice): `biased-signal` 0.95 → 0.364 / 0.367, `fable-signal` 0.55 → 0.360 /
//! 0.364, `sol-plain-pair` 0.237–0.239: 1.51–1.54×. Its price is the nested hold, which now
//! takes the general part and its two jumps: 18 → 24 instructions, 0.56 → 0.82 ns
//! (`user_loop`). The general part lives in the function's own section after its body
//! (`.subsection 1`): in a section of its own it cost 0.91 ns. What is left to the pair:
//! the load of the bias bits, which is the thread's in-native poison and cannot stay in a
//! register (see "Why the bias bits are not cached in the handle" in docs/benchmarks.md);
//! only the store's value can. Without a handle's word (`Protocol::enter` called directly,
//! the slow paths' retries) the step computes `my_bias` itself (three loads, none of them
//! of what the loop stores); the C ABI passes the word (`objmon-ffi`'s `Th`). The step
//! without the known test (the general test alone) is gone: `biased_fastpath probe`'s
//! `signal-section` keeps its shape for comparison.
//!
//! Until `exit_nested` the records and rseq flavors measured 3.73 and 3.74 ns there (the
//! seed ones 1.95): the cost was not their step but the guard's drop, which LLVM left out of
//! line in a crate with many guard drop sites, and with it the handle's guard count — a
//! call, 5 pushes / 4 pops and an `incq` / `decq` of one word from two functions per lock +
//! unlock (70 instructions and ~15 stores in the bench's loop; 50 and 4 now). What remains
//! is no serialising instruction, fence, TLS lookup or atomic (there are none on these
//! paths): hand-written assembly replicas of the loops (`biased_fastpath probe`: thread CPU
//! time, best of 15 rounds on this 2-core VM) take 0.45–0.9 ns for the pair, ~1.0 for a HotSpot-like owner (load,
//! test, one record store to a fixed slot; load, test), 1.05–1.2 for the rseq step without
//! its two arming stores and 1.7 with them, 1.75–1.85 for the records step (1.65–1.7
//! without the Dekker's re-loads, 1.8 with the record at a fixed slot): the loops are bound
//! by µops and stores per iteration. HotSpot 17's biased exit stores nothing and reads only
//! the mark word (`MacroAssembler::biased_locking_exit`: load, and, compare, branch; it
//! need not check the owner: a revoked bias is never rebiased), and its enter stores no
//! count: its revocation walks the owner's frames at a safepoint, which a Rust host cannot
//! offer, so here the count (records or header) and, for the barrier revocation, its Dekker
//! are the price. In the same run `sync`'s `hotspot17-biased` row took 3.07 ns (wall,
//! median; 1.58 min) against `biased-rseq`'s 3.04 (2.03 min) in the same harness.
//!
//! Files: this one (the header layout, the flavors, the configuration and per-thread state,
//! the `Protocol` entry points with their inline fast paths); `biased/fastpath.rs` (the bias
//! owner's step, three ways); `biased/revocation.rs` (the revoker's side and the owner's
//! poll); `biased/slow.rs` (inflation, the slow lock and unlock paths, wait's monitor);
//! `biased/records.rs` (the lock records and the thread's cached fast-path bits, one cache
//! line); `biased/tests.rs` (unit tests); `biased_hash.rs` (identity hashes);
//! `crate::revoke` (safepoints, handshakes, the barrier).
//!
//! Header ([`BiasWord`], 64 bits; Figures 3 and 6 widened so that a bias carries a
//! generation):
//!
//! | bits   | biased (00)          | learn (01, `fable`) | thin (11)          | fat (10)             |
//! |--------|----------------------|---------------------|--------------------|----------------------|
//! | 63..34 | owner generation (30 bits) | 62..42: the guess's learn tag; 41..34: the word's learn count (`LearnRule::PerObject`; else 0) | 0 | 0 |
//! | 33..19 | bias owner id (0 = clear) | bias guess id  | owner id (sticky in `fable`) | monitor index (23 bits, 41..19) |
//! | 18     | revoking (barrier revocation in progress) | 0 | stale: revoked while held, the owner still has records of it (records variant) | — |
//! | 17..16 | state 00             | state 01            | state 11           | state 10             |
//! | 15..8  | rc (header variant; 0 with records) | rc   | rc                 | —                    |
//! | 7..0   | host bits            | host bits           | host bits          | host bits            |
//!
//! Bits 63..34 are zero in every state but biased (the identity hash of issue 7 may use
//! them there) and learn (62..42: the guess's learn tag, which tells it from a later holder
//! of its id; 41..34: `fable`'s per-object learn count; `slow.rs`; bit 63 stays clear, as
//! the poisoned `NO_BIAS` / `NO_NEST` tests need); both variants use the same layout.
//!
//! State values as in §3.2: biased is 00, so "biased to me" is one compare against the
//! thread's bias bits; learn and thin share the low state bit, so one unlock path serves
//! both. The all-zero lock field is *clear* (biased to nobody): an object starts there.
//!
//! A bias names the owner's id *and* the low 30 bits of its [`generation`](crate::vm::ThreadCore::generation),
//! so an id recycled after a detach does not match the old bias (it would take 2^30 reuses of
//! one id; even then the old owner is gone, so the match is a rebias, not a race).
//!
//! ## Fast paths (what each executes)
//!
//! Every fast path reads the thread's bias and owner bits from one thread-local line (the
//! records' line, cached there at attach / on the first slow path), never a thread-local
//! variable or the `ThreadCore`.
//!
//! Both lock and unlock load the header once and branch on the state's low bit (set in
//! learn and thin) to the thin / learn test or to the bias owner's: each case runs only its
//! own test, and no CAS ever touches a biased header. Testing for the bias first cost every
//! thin acquisition a second load and compare of the header on each side, and on the Cloud
//! (§5.1), where every header misses the cache, the time per acquisition grows with the
//! µops per lock + unlock: the out-of-order window overlaps the next iterations' misses, and
//! fewer of them fit (`examples/cloud_probe.rs`: 16 `nop`s make `thin`'s own loop about
//! 1.2–1.3× slower).
//!
//! - **biased lock by the owner, records variant**: load the header, test the state's low
//!   bit (clear), compare with the bias bits; load the top; store the header's address
//!   into the slot at the top (a store-release: a plain `mov` on x86); compiler barrier;
//!   load the header again and compare with the first load; store top + 1 (store-release).
//!   **Unlock**: load the header, test the state's low bit, compare with the bias bits;
//!   load the top and the slot below it, compare with the header's address (the innermost
//!   record; else out of line); store the address | 1 ("releasing") into it; compiler
//!   barrier; re-load and compare the header; store top − 1. No atomic
//!   read-modify-write, no fence, **no store to the header**: two stores to the thread's own
//!   line and three loads each way. HotSpot 17 stores one lock record (on the stack) and
//!   nothing else; the second store (the top) and the header re-load are the price of a
//!   revocation that needs no help from the owner (below). On x86 each store-release is a
//!   plain `mov`; on AArch64 an `stlr`.
//! - **biased lock / unlock by the owner, rseq variant** (Figure 4's first case): load the
//!   header, test the state's low bit (the dispatch every variant shares); then, in asm:
//!   load the address of the thread's `rseq.rseq_cs` from its line, store the section's
//!   descriptor there (arming it); *section*: load the header, subtract the bias bits
//!   (a memory operand on the line; −256 more to unlock) and compare with 0xff00 — biased
//!   to me, not revoking, rc < 255 (lock) or ≥ 1 (unlock) —, add ±256 to the header in
//!   memory (the commit, the section's last instruction: a plain `add` / `sub`, not
//!   `lock`ed). Eight instructions after the dispatch to lock, nine to unlock, two stores,
//!   no fence; the abort handler and a failed test go to the slow path.
//! - biased lock / unlock by the owner, header variant (Figure 4's first case): load the
//!   header, test the state's low bit, one xor and one compare (rc < 255 for lock,
//!   rc ≥ 1 for unlock); store the header's address to the thread's `in_op` (plain), a
//!   compiler barrier, load the header again and compare, store the header ± 256
//!   (plain), store 0 to `in_op` (store-release): three plain stores (one to the header),
//!   two loads.
//! - thin lock (Figure 4's second case for `biased-seed`: thin and free; Figure 7's for
//!   `fable-seed`: thin, rc 0, sticky owner = me; the rseq and records variants take any free thin
//!   word, one AND more — see below): one load, one compare-and-swap. The expected bits come
//!   from the thread's line (`thin_free`, poisoned in native; an xor with them replaces the
//!   copy of the word the test needs anyway, so the count is unchanged).
//! - a fresh object's acquisitions (rseq and records variants; not the seed ones): FABLE's clear → learn, the bias
//!   guess re-acquiring in learn mode below the learn limit (one call away, `learn_again`), a
//!   second thread taking a free learn lock (→ thin): one load, one CAS, inline; biasing (KKO's clear → biased, FABLE's
//!   learn → biased at the limit): one call, one record push, one CAS. Figure 7 leaves all
//!   of these to the slow path; see `fresh_enter` for what that cost on Cloud and AllocLock.
//! - unlock of the last level (Figure 7's combined learn / thin test, one mask and compare):
//!   one releasing store. Figure 7 uses a CAS because Jikes lets other threads CAS the status
//!   word (hashing, GC); here nothing else writes a *held* thin or learn word — contenders
//!   spin, a second thread turns learn into thin only once the guess has released it, only
//!   the owner inflates — so seed 000 §2.3.2's store is enough.
//!   `biased` clears the owner (Figure 4), `fable` keeps it (§3.2 sticky owner). A stale
//!   thin word (bit 18) fails the test and goes out of line, where the owner buries its
//!   records of the object.
//! - **the record of the last inline thin / learn lock** (non-seed flavors; issue 13 item
//!   6, as `thin`'s `ThinThread::last`): `enter`'s thin CAS and `fresh_enter`'s learn CASes
//!   (clear → learn, the guess's counted re-acquisition; sticky flavors) first store the
//!   header's address and the word their unlock will store (`LockRecords::last`,
//!   `last_word`: two plain stores to the thread's line, *before* the locked instruction —
//!   after it, they delayed the next CAS in `thin`); a failed CAS forgets it. The unlock
//!   checks it before anything else (one load, one compare: the bias owner pays these
//!   three instructions, `cmp` + `jne` included) and, equal, stores `last_word` blind
//!   (Release) and forgets the record: the header is not loaded right after the CAS, which
//!   on the Cloud (every header a cache miss) cost more than the µops. The signal flavors
//!   keep the owner's section first: the record is checked after its failed test.
//!   **Invariant**: while the record names `a`, the word at `a` is `last_word + RC_ONE`,
//!   held once by this thread; kept because nobody else writes a held thin or learn word
//!   (contenders spin and inflate only what they won, revokers write biased words only, a
//!   hasher waits for a single hold's release; a thread in native or at a safepoint keeps
//!   its thin words) and every write of ours to a word we hold forgets it first (the inline
//!   nested locks, `enter_slow` — nested, overflow, biasing at the learn limit —, and
//!   `inflate_own` — wait / notify, our own hash, contention); `reclaim` and
//!   `relocate_records` clear it with a CAS (`forget_record`: a dead or moved header held
//!   once). Safe code can also move the recorded header away (a forgotten guard, then
//!   `mem::swap` / `mem::replace`) and put another at its address, which may be biased to
//!   us: so a lock that biases a header (`bias_to_me`) and, in the records and rseq
//!   flavors, whose unlock checks the record before the header, every biased lock
//!   (`biased_step`) forget a record naming it; and before a biased word is rewritten
//!   while we may hold it — a revoker's mark or in-place CAS, our own `revoke_now` — the
//!   record naming it is cleared (`LockRecords::clear_last`; the signal flavors' unlock
//!   reaches the record only after its section failed on that rewrite). Loom:
//!   `tests/loom_biased_record.rs`.
//!
//!   Measured (2-core Xeon VM shared with other jobs, load ~4–5; interleaved runs of the
//!   builds before and after): Cloud (§5.1), `fable` ÷ `thin` in thread CPU time
//!   (`REAL=1 cargo run --release -p objmon --example cloud_probe`, five rounds each)
//!   1.26–1.35 (median 1.34) before, 1.01–1.05 (1.04) after; `objmon-bench run --bench
//!   cloud --quick --protocol thin --protocol fable` (wall time, ten runs each) median 1.26
//!   (1.09–1.35) before, 1.15 (1.10–1.30) after. AllocLock (§5.3), `objmon-bench run
//!   --bench alloc-lock --quick --protocol thin --protocol fable --param 1 --param 2
//!   --param 5` (four runs each), `fable` ÷ `thin` at k = 1 / 2 / 5: 1.24–1.27 / 1.29–1.40 /
//!   1.35–1.44 before, 0.94–1.00 / 0.94–1.24 / 0.97–1.02 after (the learn record: a fresh
//!   object's unlock is now blind too). Instructions per lock + unlock (callgrind,
//!   `(I(2·10⁵) − I(10⁵)) / 10⁵`): `biased_fastpath fable plain` 48 → 51, `biased plain`
//!   48 → 50, `fable thin` 27 → 25, `fable alloc` 113 → 113; `user_loop fable plain`
//!   45 → 48, `biased plain` 44 → 47 (the record's `mov`, `cmp`, `je` ahead of the owner's
//!   unlock), `biased-signal` / `fable-signal plain` 16 → 16; `cloud_probe alloc fable:K`,
//!   K = 1 / 2 / 5: 246 / 299 / 458 → 249 / 301 / 457. The rseq flavors bias nothing under
//!   valgrind; their owner's unlock gains the same three instructions ahead of the section.
//! - nested lock / unlock of a thin or learn lock the caller holds: one load, one compare
//!   (a subtract from the thread's `nest_once` / `unlock_once` of bits 33..8, `NEST_MASK`:
//!   rc 1..=254 to lock, 2..=255 to unlock), one store — for the same reason. In the
//!   non-seed variants the lock is inline (after the thin test failed, so a free thin word
//!   pays nothing for it; `fable-signal`'s one call away, see below) and forgets the thin
//!   record only if it names the word; the unlock is inline in the rseq and signal variants
//!   and one call away in the records ones (`exit_nested`: inline there, the guard's drop
//!   outgrew what LLVM inlines into a user's loop); either way it is followed by the
//!   owner's half of the parked-hash Dekker (a compiler barrier, the side table's count,
//!   out of line only if it may hold an entry). Out of line in the seed variants, as in
//!   Jikes. `nest_once` is poisoned in native, so that a nested acquisition there reaches
//!   the slow path and is refused. A learn-mode recursion does not count towards biasing
//!   (§3.1: "non-recursively"), so a FABLE object held around a loop stays in learn mode
//!   and its nested acquisitions take this path; see "Nested learn and thin holds" below.
//!
//! ## Nested learn and thin holds
//!
//! What the nested lock + unlock of a learn or thin word the thread holds cost, and why (issue
//! 13: ≤ 3× `user-loop-sol-plain-pair` asked; `thin`'s is 2.5×):
//!
//! - **A learn word missed the nested step.** `nested_step` compared bits 63..8 of the word
//!   with `nest_once`, and a learn word carries its guess's learn tag and count above bit 33,
//!   so every nested lock of a held learn word failed it and went on to `fresh_enter`'s own
//!   nested test (after the counted step's; in the signal flavors behind a call that pushed
//!   three registers). Both tests now read bits 33..8 only (`NEST_MASK`, as `exit_nested`
//!   always did: the holder of a held word is alive, so its id alone names it), and
//!   `fresh_enter`'s is gone.
//! - **A third store.** The nested lock stored 0 to the thin record (`LockRecords::last`)
//!   every time, and the unlock loaded it back right after, as `thin`'s did until main
//!   a8286f0. Now `forget_if_last`: a load and a branch, no store once the record is gone.
//!   Measured on `fable-signal` with the nested lock inline: 63 instructions, 3.6 ns; the
//!   same with the store instead, 62 instructions, 4.9 ns.
//! - **The parked-hash check saved four registers.** `exit_nested` asked `membarrier::init`
//!   (a load of a global, and the registration's call, never taken but paid for) whether
//!   the owner's barrier is a fence, on every unlock down to one level — the nested loop's
//!   every unlock. The answer is cached on the thread's line at attach
//!   (`LockRecords::hash_fence`, as `thin`'s `LOOK_SYMMETRIC`), and the count is read at
//!   every nested unlock (a compare fewer than testing the level first).
//!
//! Callgrind instructions per lock + unlock (`valgrind --tool=callgrind` of the example at
//! N = 10⁵ and 2·10⁵, `(I(2·10⁵) − I(10⁵)) / 10⁵`), before → after:
//! `examples/user_loop NAME nested` (a fresh object held around the loop: learn for FABLE,
//! biased for KKO; under valgrind the rseq flavors bias nothing, so `biased-rseq`'s is thin)
//! `fable` 80 → 50, `fable-rseq` 80 → 41, `fable-signal` 118 → 75, `biased-rseq` (thin) 63 →
//! 41; `examples/biased_fastpath NAME thin-nested` `biased` 67 → 54, `fable` 70 → 54,
//! `biased-rseq` 67 → 44, `fable-rseq` 68 → 43, `biased-signal` 103 → 63, `fable-signal`
//! 112 → 83. The bias owner's loops unchanged: `user_loop biased-signal` / `fable-signal`
//! plain 16, `biased_fastpath` 18 (`biased`, `fable` 50, 51). What the inline nested unlock
//! of the rseq and signal flavors costs elsewhere (register allocation in `exit`):
//! `biased_fastpath` thin `fable-signal` 45 → 47, `biased-signal` 44 → 45; a learn-mode
//! lock + unlock (`alloc3 − alloc2`) `fable-signal` 56 → 58, AllocLock k = 2 160 → 164;
//! `biased-rseq` alloc 121 → 122; the records flavors' unchanged.
//!
//! Time (2-core Xeon VM, quiet: `uptime` load 0.6–0.9; old and new binaries alternating
//! twice): `examples/user_loop time 20000000 fable-signal fable fable-rseq biased-signal`
//! (medians of 7 rounds; its bare pair, with the count arithmetic, 0.93–0.98 ns):
//! `fable-signal nested` 7.68–7.72 → 5.76–5.94 ns, `fable nested` 4.41–4.49 → 2.89,
//! `fable-rseq nested` 4.75–4.76 → 2.12–2.18; the bias owner's rows: `fable-signal`
//! 0.77–0.78 both, `biased-signal` 0.77 → 0.82 here but 0.818 / 0.824 → 0.737 / 0.754 in
//! the harness (`objmon-bench run --bench user-loop --protocol 'user-loop-fable*' --protocol
//! 'user-loop-biased-signal*' --protocol user-loop-sol-plain-pair --reps 9`, medians, same
//! spell; its `fable-seed` rows, whose paths did not change, 1.95–1.98 → 1.61–1.67): code
//! layout, the same 16 instructions. `examples/biased_fastpath time-nested
//! 10000000` (its loop stores and reloads the header's reference every iteration; pair 0.77
//! ns): thin nested `biased` 3.73–3.81 → 3.52–3.55, `biased-rseq` 4.02–4.07 → 3.39–3.40,
//! `biased-signal` 7.02–7.43 → 3.46–3.58, `fable` 3.45–3.48 → 3.55–3.58, `fable-rseq`
//! 4.17–4.21 → 2.09–2.37, `fable-signal` 6.64–6.91 → 5.37–5.75; learn nested `fable`
//! 4.38–4.46 → 3.34–3.46, `fable-rseq` 4.58–4.69 → 2.07–2.16, `fable-signal` 7.39–7.41 →
//! 5.32–5.97. Against `user-loop-sol-plain-pair` (0.49–0.51 ns): `fable-rseq` ~4.3×, `fable`
//! ~5.8×, `fable-signal` ~12× — issue 13's 3× is **not** reached. What is left: in the
//! records flavors the unlock's call (`exit_nested`: its argument set-up, the call, the
//! mask and compare again); in `fable-signal` the nested lock's call (`enter_after_step`:
//! inline after the counted learn step, it made `enter` too big for the bench's
//! `Subject::lock`, which then called it: `sync` 0.79 → 2.4 ns); and, everywhere, a failed
//! test or two before the nested one (the owner's section, the thin test, the record) and
//! the store-to-load forwarding of the header between the lock's store and the unlock's
//! load across those calls (`perf annotate`: the hot instructions are the loads of the
//! header after a store to it).
//!
//! **The harness's `-nested` rows of the FABLE flavors are bimodal** (`objmon-bench run
//! --bench user-loop --protocol 'user-loop-fable*' --reps 9`: most reps at the bias owner's
//! 0.75–2.4 ns, a max of 4.4–16.7 ns): an artefact of the row, not of the lock. The row takes
//! its outer hold once per rep — an untimed warm-up, then 9 timed reps — on the same
//! header, and each outer hold is a non-recursive acquisition that counts towards biasing
//! (§3.1): hold 1 is clear → learn, holds 2–5 the guess's counted re-acquisitions, hold 6
//! biases (learn limit 5). So the warm-up and the first **four** timed reps time the nested
//! learn path, the last five the bias owner's nested step, and the median (the 5th of 9) is
//! always a biased rep: the row's figure never shows the learn path, its max does (and how
//! many slow reps it has depends on the learn limit). Per rep (`fable-signal`, 2·10⁶
//! iterations, before this change): 7.6 7.1 7.1 6.8 7.6 | 0.81 0.82 0.84 0.84 ns; the
//! rows' max, the slowest learn rep, in the runs above: `fable-signal` 8.9 → 6.2 ns,
//! `fable` 4.4–4.8 → 2.9–3.0, `fable-rseq` 4.5 → 2.1–2.2 (`fable-seed`, unchanged, 12–17).
//! Fixed in `objmon-bench` since: every protocol row's object gets `userloop::WARM_UP`
//! (256) plain lock+unlock pairs before its first round, so the `-nested` rows time the
//! bias owner's nested step in every round (test `warm_up_biases_a_fable_object`). The
//! learn path has no row of its own there; `biased_fastpath time-nested` times it.
//!
//! Out of line (records variant): an unlock whose record is not the innermost (unstructured
//! exits in any order) marks that record releasing, re-checks the header and buries it (a
//! tombstone, dropped once it reaches the top); a lock with all [`LOCK_RECORDS`] slots in
//! use moves the holds into a thin count (the object stays thin: never rebias); wait /
//! notify inflate with the records' count and bury them.
//!
//! ## Revocation
//!
//! Another thread that finds the header biased to a live thread T revokes: biased(T, n) →
//! thin(T, n), n = T's holds (its records of the header, or rc), T still the owner; then it
//! contends for the thin lock as usual (spin, then inflate). Revokers of T are serialized by
//! T's revoker mutex. If T is at a safepoint (parked, waiting, blocked on a fat monitor, in
//! native) or has detached, the revoker rewrites the header in place with a CAS. Otherwise,
//! by the runtime's [`Revocation`]:
//! - `SyncHandshake` / `AsyncHandshake` (§3.3): T stops at its next poll / runs the CAS itself
//!   there. T polls in every slow path and in [`ThreadHandle::poll`](crate::vm::ThreadHandle::poll).
//! - `Membarrier`, records variant — an asymmetric Dekker on each record:
//!   the revoker CASes the header to *revoking*, calls `membarrier()` (every running thread
//!   executes a full fence; a descheduled one passed one in the context switch), then reads
//!   T's top and records with acquire loads until they are *settled*: no slot at the top
//!   holds the header's address (a push in flight) and none below it is marked releasing (a
//!   pop in flight), and the top re-read after the scan equals the first read. It stores
//!   thin(T, n | stale if n > 0), n the records naming the header. T's side: a push stores
//!   the record *then* re-loads the header (compiler barrier between), a pop marks the
//!   record releasing *then* re-loads; either way, if the revoker's load of that slot
//!   missed T's store, T's re-load sees the mark (the barrier orders both pairs) and backs
//!   out — clearing a pushed slot, restoring a popped one — and waits for the thin word.
//!   After the barrier no fast path of T on the header can commit, so its records below the
//!   top stay put (pops are LIFO); pushes and pops of other headers move the top but never
//!   those records. Every owner store to a slot or the top is a store-release and every
//!   revoker load an acquire, so a slot value seen implies a top at least as new: a top
//!   re-read equal to the first means the scan saw one consistent state (loom found the
//!   revoker that read a pop's releasing mark under a stale top without this). The owner
//!   never writes a biased header in a fast path, so the marked word is the revoker's to
//!   replace with a plain store. T's records of a header revoked while held are duplicates
//!   of the thin count: the *stale* bit sends T's next unlock out of line to bury them.
//! - `Membarrier`, header variant: the same Dekker against `in_op`: CAS the mark, barrier,
//!   wait while T's `in_op` names the header, re-read: if the mark survived, store thin(T,
//!   rc); if T's in-flight store overwrote it, repeat.
//! - `Membarrier`, rseq variant: the same steps with `membarrier(PRIVATE_EXPEDITED_RSEQ)`
//!   and no `in_op`: after that barrier every owner section that read the unmarked word has
//!   either committed (its `add` is visible to the re-read: it either stored over the mark,
//!   which the re-read finds gone, so the revoker repeats, or — its load after the mark —
//!   kept the mark with the count ±1, which the revoker takes as the count) or been
//!   restarted — on its CPU by the barrier's IPI, or, descheduled,
//!   when it next returns to user space — and can no longer store; a section begun after
//!   the barrier reads the mark and fails its test. So a surviving mark means no owner
//!   store can land, and the revoker stores thin(T, rc). The section is armed before it
//!   begins (the descriptor's address stored into T's `rseq.rseq_cs`), which the kernel
//!   reads at each preemption, signal and barrier IPI. A thread whose rseq area glibc did
//!   not register (glibc < 2.35, `glibc.pthread.rseq=0`, valgrind) never caches its bias
//!   bits, so it biases nothing to itself (its objects go thin, as under `NoBias`); where
//!   the kernel refuses the `_RSEQ` barrier command (before Linux 5.10), the runtime falls
//!   back as for a refused barrier ([`Revocation::NoBias`]). x86-64 Linux only (elsewhere
//!   these flavors bias nothing); under loom the section is modelled by a per-thread mutex
//!   that the barrier takes once.
//! - `Membarrier`, signal variant (`biased-signal`, `fable-signal`): the rseq variant's
//!   steps, with the barrier replaced by one aimed at T alone (`crate::sigbarrier`): unless
//!   T is at a safepoint (then it cannot be in a section until the revoker lets go of its
//!   mutex), the revoker sends T a real-time signal (`SIGRTMIN + 6`, `rt_tgsigqueueinfo`)
//!   and waits for its handler's acknowledgement. The handler, on T, looks the interrupted
//!   instruction up in the table of owner sections (`objmon_bias_cs`, one entry per inlined
//!   step: start, the address after the committing store, abort) and moves T to the abort
//!   address if it is inside one. So, as after the rseq barrier, a section that read the
//!   unmarked word has either stored (the revoker's re-read after the acknowledgement sees
//!   it) or never will; a section begun after the handler reads the mark. Nothing is armed,
//!   so the owner's step is Figure 4's load, compare and store only; a revocation costs a
//!   signal round trip to T instead of a `membarrier` (T is interrupted only when it may be
//!   in a section: T's own preemptions restart nothing). The handler installs only over
//!   `SIG_DFL`; a thread that blocks the signal never caches its bias bits (it biases
//!   nothing); x86-64 Linux with glibc only. Under valgrind it works as natively.
//! - `Hybrid`: the asynchronous handshake for `HYBRID_WAIT_NS`;
//!   if T has not claimed the request by then (T claims it with a CAS before running the
//!   callback, so a withdrawn request is never run and a claimed one never withdrawn), the
//!   revoker withdraws it with a CAS and revokes by the barrier. A polling owner is revoked
//!   without interrupting every core; a non-polling one costs the wait extra.
//!
//! T never has to reach a safepoint for the barrier revocation; a descheduled T delays the
//! wait (only while a push or pop of that very header is in flight), never breaks it.
//!
//! **Host contract for the handshakes.** A thread that blocks outside objmon (a channel, a
//! sleep, I/O, a join) must do it inside [`ThreadHandle::in_native`](crate::vm::ThreadHandle::in_native)
//! and should call [`ThreadHandle::poll`](crate::vm::ThreadHandle::poll) in long loops that take no
//! lock — as JNI code and JIT-compiled loops do in a JVM — or a handshake revoker waits for it.
//! The barrier revocation needs neither, which is why it is the default
//! ([`BiasConfig::default`]): the conformance suite, like most Rust hosts, blocks in `std`
//! without telling anyone. Where the kernel refuses the barrier the default does *not* fall
//! back to a handshake (a revoker would wait forever for an owner that blocks in `std` or in a
//! C host, even on a lock nobody holds): the runtime biases nothing
//! ([`Revocation::NoBias`]) and every lock is thin. A host that asks for a handshake by name
//! takes this contract on. If the barrier fails after the registration succeeded (a seccomp
//! filter installed later), the revoker withdraws its mark, the runtime switches to the
//! handshake (visibly: [`BiasState::revocation`]) and this contract applies from then on.
//!
//! **In native.** [`ThreadHandle::in_native`](crate::vm::ThreadHandle::in_native) makes the thread
//! `SAFE`, so its revokers rewrite its biases in place, with no barrier and no handshake. A
//! biased fast path of its own there (plain stores) could then race an in-place revoker and
//! make two owners. So `enter_native` poisons the cached bits its fast paths compare with
//! (the bias bits and `thin_free`, to `NO_BIAS`): every acquisition fails its first test and
//! reaches a slow path, which refuses it with `Err(MonitorError::InNative)`; `wait` and
//! `notify` refuse too. An unlock is made, not refused (a guard dropped in native would
//! otherwise leak its lock): a thin or fat one as usual (nobody else writes a held thin word);
//! a biased one in `exit_slow` under the thread's own revoker mutex, which every revoker holds
//! for its whole revocation, so no revoker rewrites or counts the thread's records meanwhile,
//! and the next one sees the release. `leave_native` waits for a revocation in progress and
//! restores the bits; a bias revoked meanwhile is a thin word (marked stale if held), handled
//! as after any revocation. `poll` in native is a no-op (see `crate::revoke`).
//!
//! Anything else that writes a biased header is the owner itself (inflation for wait /
//! notify, count or record overflow: a CAS, which fails against a concurrent revoker's mark)
//! or a revoker; contenders, inflation on contention and `reclaim` see only thin, learn or
//! fat words. [`revoke_now`](Biasing::revoke_now) is the entry point for other header
//! writers (the identity hash): it leaves the header unbiased.
//!
//! **Moving objects.** The records hold header addresses. An unlocked header may move
//! freely; a host that moves a locked one (a copying GC behind the borrow checker's back)
//! must report it at a safepoint with [`Runtime::relocate`](crate::vm::Runtime::relocate); the records are GC
//! roots ([`locked_objects`](Biasing::locked_objects)). Records are never dereferenced: a
//! missed relocation is a wrong count, never undefined behaviour.
//!
//! **A forgotten guard, then a move (records flavors: `biased`, `fable`).** Safe code can
//! move a header that is still locked: `mem::forget` a guard (or leak it), and the borrow
//! ends with the hold. In these two flavors a biased hold is a record of the header's
//! *address*, and the lock writes nothing to the header, so the hold stays with the
//! address, not with the value: the moved value is no longer held (another thread may lock
//! it; nothing reaches its data through the forgotten guard). What comes to the address:
//!
//! - a fresh header (`mem::replace`, `mem::swap` with a new one, a new `Box` in the freed
//!   place), or any header not biased to the owner: not held. The owner buries its records of
//!   an address when it biases the header there (`bias_to_me`: a header that is not biased
//!   has no biased holds), so they never count for it;
//! - **a header already biased to the same thread** (`mem::swap` of two such headers): its
//!   word is the very word the record was made for, and nothing tells them apart. It counts
//!   as held by that thread, once, for good — `holds_lock` / `is_owned_by_current_thread`
//!   answer `true`, and another thread's lock waits until that thread exits (detaches). Never
//!   two owners, never undefined behaviour. A per-object tag in the biased word would only
//!   narrow this (the bits it could use are finite, so two headers biased to one thread can
//!   share a tag) at a cost on every lock and unlock; the header-count flavors (`biased-rseq`,
//!   `biased-seed`, and FABLE's) keep the hold in the word, which moves with the value.
//!
//! The record of the last inline thin lock (`LockRecords::last`, every non-seed flavor) is
//! not trusted across such a move: see its invariant above.

use super::fable::{LearnRule, LEARN_LIMIT};
use super::{KnobError, Protocol, HOST_BITS_MASK};
use crate::membarrier::{owner_barrier, process_barrier, process_barrier_rseq};
use crate::monitor::{FatMonitor, WaitOutcome};
use crate::protocol::ThreadContext;
use crate::revoke::{Revocation, RevocationKind, RevocationStats, Safepoint};
use crate::runtime::{Config, InflationCause, Runtime};
use crate::spin::Spin;
use crate::sync::{AtomicU32, AtomicU64, Ordering};
use crate::table::MonitorIndex;
use crate::thread::ThreadId;
use crate::MonitorError;
use records::{free_thin, LockRecords, NO_BIAS, NO_NEST, REC_RELEASING, REC_TOMB};
use std::marker::PhantomData;

mod dispatch;
mod fastpath;
mod records;
mod revocation;
mod slow;
pub use records::LOCK_RECORDS;
use std::time::Instant;

pub(crate) const HOST: u64 = HOST_BITS_MASK as u64;
const RC_SHIFT: u32 = 8;
const RC_ONE: u64 = 1 << RC_SHIFT;
const RC_MASK: u64 = 0xff << RC_SHIFT;
/// `(word ^ bias) < RC_LIMIT` ⇔ biased to me, not revoking, rc < 255.
const RC_LIMIT: u64 = 0xff << RC_SHIFT;
pub(crate) const STATE_MASK: u64 = 3 << 16;
pub(crate) const BIASED: u64 = 0;
const LEARN: u64 = 1 << 16;
pub(crate) const FAT: u64 = 2 << 16;
const THIN: u64 = 3 << 16;
/// Set in learn and thin: the combined unlock path tests only this bit (§3.2).
const STATE_LOW: u64 = 1 << 16;
const REVOKING: u64 = 1 << 18;
/// Bit 18 in a thin word (records variant): revoked while held, so the owner still has lock
/// records for this header, which its next unlock buries. Inside the mask of the inline
/// unlock test, so that unlock goes out of line.
const STALE: u64 = REVOKING;
const OWNER_SHIFT: u32 = 19;
pub(crate) const OWNER_MASK: u64 = 0x7fff << OWNER_SHIFT;
/// What the nested lock and unlock tests read of a learn or thin word (bits 33..8 but 17):
/// owner, stale, the state's low bit and rc — not a learn word's tag and count, nor the
/// state bit that tells learn from thin (`nested_step`, `exit_nested`).
const NEST_MASK: u64 = STATE_LOW | REVOKING | OWNER_MASK | RC_MASK;
/// No header word (a thin word has bits 63..34 clear): what `exit` passes `exit_nested`
/// after its inline nested unlock when the parked-hash check must run out of line.
const SETTLE: u64 = u64::MAX;
const GEN_SHIFT: u32 = 34;
const GEN_BITS: u64 = (1 << 30) - 1;
const GEN_MASK: u64 = GEN_BITS << GEN_SHIFT;
pub(crate) const INDEX_SHIFT: u32 = 19;
const INDEX_MASK: u64 = 0x7f_ffff << INDEX_SHIFT;

/// The 64-bit header of the biased protocols: see the module documentation for the layout.
pub struct BiasWord(pub(crate) AtomicU64);

impl Default for BiasWord {
    /// A clear (never locked) header with all host bits clear.
    fn default() -> Self {
        Self::new(0)
    }
}

impl BiasWord {
    crate::sync::const_unless_loom! {
        /// A clear header carrying `host_bits` in its low byte.
        pub fn new(host_bits: u8) -> Self {
            Self(AtomicU64::new(host_bits as u64))
        }
    }

    /// The host's 8 bits (never changed by the protocols).
    #[inline]
    pub fn host_bits(&self) -> u8 {
        (self.0.load(Ordering::Relaxed) & HOST) as u8
    }

    /// The whole word, for introspection and tests (a racy snapshot).
    #[inline]
    pub fn raw(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// The lock state in the word now (a racy snapshot).
    pub fn mode(&self) -> BiasMode {
        let w = self.raw();
        match w & STATE_MASK {
            BIASED if w & OWNER_MASK == 0 => BiasMode::Clear,
            BIASED => BiasMode::Biased,
            LEARN => BiasMode::Learn,
            THIN => BiasMode::Thin,
            _ => BiasMode::Fat,
        }
    }
}

impl std::fmt::Debug for BiasWord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BiasWord({:#018x})", self.raw())
    }
}

/// The states of Figure 5 (seed 002).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BiasMode {
    /// Never locked.
    Clear,
    /// Biased to a thread (possibly being revoked).
    Biased,
    /// `fable` learn mode: a bias guess and a count.
    Learn,
    /// Thin lock.
    Thin,
    /// Fat monitor installed.
    Fat,
}

/// State transitions counted per runtime (Figure 5's arrows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transition {
    /// KKO: first acquire biases.
    ClearToBiased,
    /// FABLE: first acquire starts learning.
    ClearToLearn,
    /// FABLE: the guess re-acquired often enough.
    LearnToBiased,
    /// FABLE: a second thread acquired in learn mode.
    LearnToThin,
    /// Revocation.
    BiasedToThin,
    /// The bias owner inflated (wait / notify, count overflow).
    BiasedToFat,
    /// Inflation from learn mode (wait / notify, count overflow).
    LearnToFat,
    /// Inflation of a thin lock (contention, wait / notify, count overflow).
    ThinToFat,
}

const TRANSITIONS: usize = 8;

/// The two heuristics over one engine: KKO (`biased`) and FABLE (`fable`).
pub trait Flavor: Send + Sync + 'static {
    /// Catalog name.
    const NAME: &'static str;
    /// One line for reports.
    const SUMMARY: &'static str;
    /// Clear → learn (FABLE §3.1) instead of clear → biased (KKO).
    const LEARN: bool;
    /// Thin unlock keeps the owner (FABLE §3.2 "sticky owner") instead of clearing it.
    const STICKY: bool;
    /// Where a biased lock's recursion count lives: `true`, in the owner's
    /// lock records (HotSpot 17; the bias owner never writes the header; module docs);
    /// `false`, in the header's rc field (seed 002 Figures 3 and 4, the owner stores ±256).
    const RECORDS: bool;
    /// Header variant only: the bias owner's ±256 store runs inside an rseq critical
    /// section (the kernel restarts it when the thread is preempted or a revoker's
    /// `membarrier(PRIVATE_EXPEDITED_RSEQ)` lands in it), so it is Figure 4's load, compare
    /// and store with no Dekker around it; `false`: the `in_op` Dekker (module docs).
    const RSEQ: bool = false;
    /// With [`RSEQ`](Self::RSEQ): the section is never armed; a revoker restarts it by a
    /// signal to the owner (`crate::sigbarrier`) instead of the rseq barrier, so the owner's
    /// step is Figure 4's load, compare and store with no store before it (module docs).
    /// Such a flavor is sound only while the host keeps the signal-handler contract
    /// ([`Protocol::HOST_SIGNAL_CONTRACT`], [`Runtime::new_unchecked`](crate::vm::Runtime::new_unchecked)).
    const SIGNAL: bool = false;
}

/// KKO heuristics (seed 002 §2.2.1): bias on first acquire, never rebias; the bias owner's
/// step is Figure 4's load, compare and store of the header count in an rseq section (module
/// docs): `biased-rseq`, beside `biased` (records) and `biased-seed` (the `in_op` Dekker).
///
/// Measured (`examples/biased_fastpath.rs`, callgrind instructions per lock + unlock by the
/// bias owner through `me.enter(&h)` / guard drop, in the user's own loop; the bare load /
/// compare / store pair written the same way: 16): **35** plain, 35 nested (28 calling the
/// protocol directly: the handle and guard add 7); 4 plain stores (the header and the
/// section's `rseq_cs` word, each way), no atomic read-modify-write, no fence. Thin lock +
/// unlock (the CAS path, after a revocation): 31; AllocLock k = 2 (§5.3): 127 per object.
/// Time (an earlier run; the engine's module docs have the latest): `user-loop-biased-rseq` 2.03 ns against 0.51 for the plain pair (3.74 before
/// `exit_nested`; module docs).
#[derive(Debug)]
pub enum KkoRseq {}

impl Flavor for KkoRseq {
    const NAME: &'static str = "biased-rseq";
    const SUMMARY: &'static str =
        "KKO biased locking: bias on first acquire, never rebias; owner's load/compare/store in rseq";
    const LEARN: bool = false;
    const STICKY: bool = false;
    const RECORDS: bool = false;
    const RSEQ: bool = true;
}

/// KKO heuristics, the bias owner's step Figure 4's load, compare and store of the header
/// count in a section that no store arms: a revoker restarts it with a signal to the owner
/// (`biased-signal`; module docs, "Revocation").
///
/// Measured (`examples/biased_fastpath.rs`, callgrind instructions per lock + unlock by the
/// bias owner through `me.enter(&h)` / guard drop, in the user's own loop; the pair: 16):
/// **18** plain, 18 nested; 2 plain stores (the header, each way), no atomic
/// read-modify-write, no fence. Thin lock + unlock (after a revocation): 45 (44 before the
/// nested unlock went inline; module docs, "Nested learn and thin holds") — the section's
/// failed test and a second load each way, then the thin CAS / the blind unlock store inline
/// (69 when they were one call away); AllocLock k = 2: 116 per object (clear → biased one
/// call away). Time: `user-loop-biased-signal` 0.787
/// ns against 0.502 for the plain pair and 1.78 for `biased-rseq`; `sync` 0.769 against
/// `hotspot17-biased` 1.055 (module docs).
#[derive(Debug)]
pub enum KkoSignal {}

impl Flavor for KkoSignal {
    const NAME: &'static str = "biased-signal";
    const SUMMARY: &'static str =
        "KKO biased locking: owner's load/compare/store in a section a revoker's signal restarts";
    const LEARN: bool = false;
    const STICKY: bool = false;
    const RECORDS: bool = false;
    const RSEQ: bool = true;
    const SIGNAL: bool = true;
}

/// KKO heuristics with the bias owner's count in lock records (HotSpot 17's scheme): the
/// owner never writes a biased header (`biased`).
///
/// Measured (`examples/biased_fastpath.rs`, callgrind instructions per lock + unlock by the
/// bias owner through `me.enter(&h)` / guard drop, in the user's own loop; the bare load /
/// compare / store pair written the same way: 16): **53** plain, 53 nested (47 directly); 4
/// plain stores (the record and the top, each way), no atomic read-modify-write, no fence.
/// Thin: 32; AllocLock k = 2: 182 per object.
/// Time (an earlier run; the engine's module docs have the latest): `user-loop-biased` 2.35 ns against 0.51 for the plain pair (3.73 before
/// `exit_nested`; module docs).
#[derive(Debug)]
pub enum Kko {}

impl Flavor for Kko {
    const NAME: &'static str = "biased";
    const SUMMARY: &'static str =
        "KKO biased locking: bias on first acquire, never rebias; count in lock records";
    const LEARN: bool = false;
    const STICKY: bool = false;
    const RECORDS: bool = true;
}

/// KKO heuristics with the recursion count in the header, as seed 002 Figures 3 and 4 have
/// it (the bias owner's lock and unlock store the header ± 256, behind the `in_op` Dekker).
///
/// Measured (`examples/biased_fastpath.rs`, callgrind instructions per lock + unlock by the
/// bias owner through `me.enter(&h)` / guard drop, in the user's own loop; the bare load /
/// compare / store pair written the same way: 16): **43** plain, 43 nested (39 directly); 6
/// plain stores (the header and `in_op` twice, each way), no atomic read-modify-write, no
/// fence. Thin: 30; AllocLock k = 2: 221 per object (Figure 4 has no inline fresh path).
/// Time (an earlier run; the engine's module docs have the latest): `user-loop-biased-seed` 2.61 ns (1.95 in the run before) against 0.51 for the
/// plain pair.
#[derive(Debug)]
pub enum KkoSeed {}

impl Flavor for KkoSeed {
    const NAME: &'static str = "biased-seed";
    const SUMMARY: &'static str =
        "KKO biased locking, count in the header as seed 002 Figures 3-4 have it";
    const LEARN: bool = false;
    const STICKY: bool = false;
    const RECORDS: bool = false;
}

/// A biased-locking protocol with heuristics `F` (see the module documentation).
pub struct Biasing<F: Flavor> {
    _never: std::convert::Infallible,
    _f: PhantomData<F>,
}

/// `biased`: KKO biased locking (seed 002 §2.2) with the bias owner's count in lock records
/// (HotSpot 17's scheme: the owner never writes a biased header; [`Kko`] has the measured
/// counts). Portable wherever `membarrier` works.
///
/// A forgotten guard's biased hold stays with the header's address, not its value: moved
/// away (`mem::swap`, `mem::replace`), the value is no longer held, and a header biased to
/// the same thread swapped into that address counts as held by it for good (the module
/// documentation, "A forgotten guard, then a move"). Never two owners.
pub type Biased = Biasing<Kko>;

/// `biased-seed`: KKO biased locking with the count in the header (Figures 3 and 4).
pub type BiasedSeed = Biasing<KkoSeed>;

/// `biased-rseq`: KKO biased locking, the count in the header, the owner's Figure 4 step in a
/// Linux restartable sequence ([`KkoRseq`]; x86-64 Linux with glibc's rseq registration,
/// elsewhere it biases nothing).
pub type BiasedRseq = Biasing<KkoRseq>;

/// `biased-signal`: KKO biased locking, the count in the header, the owner's Figure 4 step
/// in a section a revoker restarts by a signal to the owner ([`KkoSignal`]; x86-64 Linux
/// with glibc, elsewhere it biases nothing).
pub type BiasedSignal = Biasing<KkoSignal>;

/// Per-runtime settings of the biased protocols.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BiasConfig {
    /// How biases held by other threads are revoked.
    pub revocation: Revocation,
    /// FABLE's learn limit N (§3.1; default [`DEFAULT_LEARN_LIMIT`]); ignored by `biased`.
    pub learn_limit: u32,
}

/// FABLE's learn limit when nobody sets one: §3.1 "we arbitrarily chose learnCount==5".
pub const DEFAULT_LEARN_LIMIT: u32 = 5;

impl Default for BiasConfig {
    /// Membarrier revocation; where the kernel refuses the barrier, [`Revocation::NoBias`]
    /// (see [`BiasState::set`]); learn limit 5.
    fn default() -> Self {
        Self {
            revocation: Revocation::Membarrier,
            learn_limit: DEFAULT_LEARN_LIMIT,
        }
    }
}

/// Runtime-wide state of the biased protocols: settings and counters.
#[derive(Debug)]
pub struct BiasState {
    revocation: AtomicU32,
    learn_limit: AtomicU32,
    /// [`LearnRule::PerObject`] (else `PerThread`): read with the learn limit.
    per_object_learning: crate::sync::AtomicBool,
    /// The guess's counted re-acquisitions of a learn word (its count before it) that
    /// `fresh_enter` takes inline: below min(N, the count's maximum) − 1 under `PerObject`,
    /// none (0) under `PerThread` (`slow.rs`, `learn_inline_below`).
    learn_inline: AtomicU64,
    revocations: RevocationStats,
    transitions: [AtomicU64; TRANSITIONS],
    /// Test hook ([`simulate_barrier_failure`](Self::simulate_barrier_failure)).
    barrier_fails: crate::sync::AtomicBool,
    /// Some thread has cached its bias bits (so may have biased objects): from then on a
    /// refused barrier falls back to a handshake, never to [`Revocation::NoBias`].
    may_have_biases: crate::sync::AtomicBool,
    /// Makes the flavor's barrier available (once per process) and says whether it is:
    /// `membarrier`'s registration, its `_RSEQ` one ([`Flavor::RSEQ`]: available only where
    /// glibc registered rseq), or the signal handler's installation ([`Flavor::SIGNAL`]).
    barrier_init: fn() -> bool,
}

impl BiasState {
    fn new(barrier_init: fn() -> bool, rule: LearnRule) -> Self {
        let s = Self {
            barrier_init,
            per_object_learning: crate::sync::AtomicBool::new(rule == LearnRule::PerObject),
            learn_inline: AtomicU64::new(0),
            revocation: AtomicU32::new(0),
            learn_limit: AtomicU32::new(DEFAULT_LEARN_LIMIT),
            revocations: RevocationStats::default(),
            transitions: std::array::from_fn(|_| AtomicU64::new(0)),
            barrier_fails: crate::sync::AtomicBool::new(false),
            may_have_biases: crate::sync::AtomicBool::new(false),
        };
        s.set(BiasConfig::default());
        s
    }

    /// Applies `c`; returns the revocation actually used. Where the kernel refuses the
    /// barrier, `Membarrier` and `Hybrid` give [`Revocation::NoBias`] (never a handshake the
    /// host did not ask for: its revoker would wait for an owner's poll that may never come,
    /// also on a lock nobody holds); in a runtime whose threads have already biased objects
    /// (under a handshake the host chose), they give that handshake's fallback as before
    /// (`SyncHandshake`, `AsyncHandshake`), which alone can revoke those biases. Safe at any
    /// time — every mode works against every owner, and revokers of one owner are serialized
    /// whatever their mode — but meant for start-up, before threads attach.
    pub fn set(&self, c: BiasConfig) -> Revocation {
        self.set_with(c, self.barrier_init)
    }

    /// [`set`](Self::set) as if the kernel refused `membarrier` (seccomp, an old kernel): a
    /// test hook, so that the fallback can be tested on any machine.
    #[doc(hidden)]
    pub fn set_without_barrier(&self, c: BiasConfig) -> Revocation {
        self.set_with(c, || false)
    }

    /// Test hook: from now on every `membarrier` call of this runtime fails, as if a seccomp
    /// filter had been installed after the registration succeeded.
    #[doc(hidden)]
    pub fn simulate_barrier_failure(&self) {
        self.barrier_fails.store(true, Ordering::Relaxed);
    }

    /// [`set`](Self::set) with the barrier's availability supplied (tests of the fallback).
    fn set_with(&self, c: BiasConfig, barrier_available: impl FnOnce() -> bool) -> Revocation {
        let needs_barrier = matches!(c.revocation, Revocation::Membarrier | Revocation::Hybrid);
        let refused = needs_barrier && !barrier_available();
        let r = match c.revocation {
            _ if refused && !self.may_have_biases.load(Ordering::SeqCst) => Revocation::NoBias,
            Revocation::Membarrier if refused => Revocation::SyncHandshake,
            Revocation::Hybrid if refused => Revocation::AsyncHandshake,
            r => r,
        };
        self.revocation.store(r as u32, Ordering::Relaxed);
        self.learn_limit
            .store(c.learn_limit.max(1), Ordering::Relaxed);
        self.refresh_learn_inline();
        r
    }

    /// The barrier failed after the registration had succeeded (a seccomp filter installed
    /// later): the runtime revokes by the handshake from now on, visibly in
    /// [`revocation`](Self::revocation) (`Membarrier` → `SyncHandshake`, `Hybrid` →
    /// `AsyncHandshake`); new runtimes of the process bias nothing (`membarrier::init` answers
    /// `false` from now on).
    fn barrier_failed(&self) {
        let fallback = |r: Revocation| match r {
            Revocation::Membarrier => Some(Revocation::SyncHandshake),
            Revocation::Hybrid => Some(Revocation::AsyncHandshake),
            _ => None,
        };
        let _ = self
            .revocation
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                fallback(Revocation::from_u32(v)).map(|r| r as u32)
            });
    }

    /// The revocation in use.
    pub fn revocation(&self) -> Revocation {
        Revocation::from_u32(self.revocation.load(Ordering::Relaxed))
    }

    /// FABLE's learn limit.
    #[inline]
    pub fn learn_limit(&self) -> u32 {
        self.learn_limit.load(Ordering::Relaxed)
    }

    /// FABLE's learn rule (seed 002 §3.1; see [`LearnRule`]).
    #[inline]
    pub fn learn_rule(&self) -> LearnRule {
        // Relaxed, as the learn limit: a heuristic's setting, ordering nothing; a stale read
        // only changes which count decides one acquisition (either count is a valid word).
        if self.per_object_learning.load(Ordering::Relaxed) {
            LearnRule::PerObject
        } else {
            LearnRule::PerThread
        }
    }

    /// Sets FABLE's learn rule; later learn-mode acquisitions use it (objects already
    /// counting keep their counts, which `PerThread` ignores). Meant for start-up and for
    /// measuring the rules side by side; `biased` has no learn mode and ignores it.
    pub fn set_learn_rule(&self, rule: LearnRule) {
        self.per_object_learning
            .store(rule == LearnRule::PerObject, Ordering::Relaxed);
        self.refresh_learn_inline();
    }

    /// Recomputes `learn_inline` from the learn limit and rule (Relaxed, as they: a
    /// heuristic's setting; a stale value only sends one acquisition out of line, or counts
    /// it under the old limit).
    fn refresh_learn_inline(&self) {
        let v = slow::learn_inline_below(self.learn_rule(), self.learn_limit());
        self.learn_inline.store(v, Ordering::Relaxed);
    }

    /// Revocations by kind and their latency.
    pub fn revocations(&self) -> &RevocationStats {
        &self.revocations
    }

    /// How many times transition `t` happened in threads that have detached, plus the
    /// revocations (counted here by whichever thread performed them). Attached threads count
    /// their own transitions privately: see [`Biasing::transitions`].
    pub fn transitions_shared(&self, t: Transition) -> u64 {
        self.transitions[t as usize].load(Ordering::Relaxed)
    }

    fn count(&self, t: Transition) {
        self.transitions[t as usize].fetch_add(1, Ordering::Relaxed);
    }
}

/// Per-thread state of the biased protocols.
#[derive(Debug)]
pub struct BiasThread {
    sp: Safepoint,
    /// FABLE §3.1 learnCount (only its thread touches it).
    learn_count: AtomicU32,
    /// FABLE: this thread as a learn word's bias guess, rc 1 — its learn tag (drawn at
    /// attach, distinct from the tags of the last 2^21 − 1 attached threads, so of the earlier
    /// holders of its id in that span), state learn, its id
    /// (`slow.rs`, `learn_guess_for`). Immutable.
    learn_guess: u64,
    /// `learn_guess`, or [`NO_BIAS`] while the thread is in native (poisoned with the records
    /// line's bits: `fresh_enter`'s inline learn steps then fail their test). Only its
    /// thread writes it.
    learn_key: AtomicU64,
    /// Transitions this thread made, written only by it (load + store, no read-modify-write:
    /// clear → learn happens once per new object, a shared counter would be a hot line).
    transitions: [AtomicU64; TRANSITIONS],
    /// Lock records of the records variant (own cache lines: revokers read them).
    rec: LockRecords,
    /// The cached bias and thin-free bits while they are poisoned in native (only its thread
    /// touches them).
    saved_bias: AtomicU64,
    saved_thin_free: AtomicU64,
    /// `count_without_rseq` was called: the thread biases without a registered rseq area.
    rseq_forced: crate::sync::AtomicBool,
    /// Signal flavors: where a revoker signals this thread (`crate::sigbarrier`).
    sig: crate::sigbarrier::Target,
}

impl BiasThread {
    fn new(id: ThreadId, thin_free: u64, rseq_cs: usize) -> Self {
        let learn_guess = slow::learn_guess_for(u64::from(id.get()) << OWNER_SHIFT);
        Self {
            learn_guess,
            learn_key: AtomicU64::new(learn_guess),
            rseq_forced: crate::sync::AtomicBool::new(false),
            sig: crate::sigbarrier::Target::new(id.get()),
            sp: Safepoint::default(),
            learn_count: AtomicU32::new(0),
            transitions: std::array::from_fn(|_| AtomicU64::new(0)),
            rec: LockRecords::new(id, thin_free, rseq_cs),
            saved_bias: AtomicU64::new(NO_BIAS),
            saved_thin_free: AtomicU64::new(NO_BIAS),
        }
    }

    #[inline]
    fn count(&self, t: Transition) {
        let c = &self.transitions[t as usize];
        c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }
}

type Cx<F> = ThreadContext<Biasing<F>>;
type Rt<F> = Runtime<Biasing<F>>;

#[inline]
pub(crate) fn addr(h: &BiasWord) -> usize {
    h as *const BiasWord as usize
}

#[inline]
pub(crate) fn rc(w: u64) -> u64 {
    (w & RC_MASK) >> RC_SHIFT
}

impl<F: Flavor> Biasing<F> {
    /// Leaves `h` unbiased (thin, learn, fat or clear), revoking a bias held by another
    /// thread (by the runtime's revocation) or giving up `t`'s own (a CAS to a thin word
    /// with `t`'s count; `t` keeps every hold). The entry point for anything else that wants
    /// to write the header (seed 002 §2.2: "anything else that writes the header revokes
    /// first"), such as an identity hash. The header may be biased again afterwards only by
    /// KKO's clear → biased or FABLE's learn → biased, never from thin (never rebias).
    ///
    /// # Errors
    /// [`MonitorError::ForeignHeader`] if the bias belongs to a live thread of another
    /// runtime (the header is used with two runtimes; docs/soundness.md §7): nothing changed.
    pub fn revoke_now(rt: &Rt<F>, t: &Cx<F>, h: &BiasWord) -> Result<(), MonitorError> {
        let mut spins = Spin::new();
        loop {
            Self::poll_self(rt, t);
            let w = h.0.load(Ordering::Acquire);
            if w & STATE_MASK != BIASED || w & OWNER_MASK == 0 {
                return Ok(());
            }
            if w & REVOKING != 0 {
                spins.snooze();
                continue;
            }
            if w & (OWNER_MASK | GEN_MASK) != Self::my_bias(t) {
                Self::revoke(rt, t, h, w)?;
                continue;
            }
            // Ours, perhaps held: a thin record naming `h` is stale (`LockRecords::clear_last`).
            t.local().rec.forget_if_last(addr(h));
            let n = if F::RECORDS {
                u64::from(t.local().rec.own_count(addr(h)))
            } else {
                rc(w)
            };
            let new = if n == 0 && !F::STICKY {
                (w & HOST) | THIN
            } else {
                (w & (HOST | OWNER_MASK)) | THIN | (n << RC_SHIFT)
            };
            if Self::cas(h, w, new) {
                if F::RECORDS {
                    t.local().rec.bury(addr(h));
                }
                t.local().count(Transition::BiasedToThin);
                return Ok(());
            }
        }
    }

    /// GC hook: the headers `t` holds biased, one entry per hold, oldest first (records
    /// variant; empty for the header variant, whose holds are in the headers). GC roots.
    pub fn locked_objects(t: &Cx<F>) -> Vec<*const BiasWord> {
        let rec = &t.local().rec;
        let top = rec.top.load(Ordering::Relaxed);
        rec.slots[..top]
            .iter()
            .map(|s| s.load(Ordering::Relaxed))
            .filter(|&v| v != REC_TOMB && v != 0 && v & REC_RELEASING == 0)
            .map(|v| v as *const BiasWord)
            .collect()
    }

    /// [`Runtime::relocate`]'s part here: the object whose header was at `from` now has its
    /// header at `to` (the host copied the word verbatim). Rewrites every lock record. Call only while every attached
    /// thread is stopped outside this crate's calls (a safepoint): records are otherwise
    /// written only by their own threads. Records are never dereferenced, so a missed
    /// relocation is a wrong count, never undefined behaviour.
    fn rewrite_records(rt: &Rt<F>, from: *const BiasWord, to: &BiasWord) {
        for cx in rt.threads().snapshot() {
            for s in &cx.local().rec.slots {
                if s.load(Ordering::Relaxed) == from as usize {
                    s.store(addr(to), Ordering::Release);
                }
            }
        }
    }

    /// `w`, the word of the header at `a`, dies or moves: if it is thin or learn and held
    /// once, its owner may have recorded `a` as its last inline lock (`LockRecords::last`); clear
    /// that record. A CAS on another thread's record, which it writes with plain stores: if
    /// it has recorded another word since, the CAS fails and that record stays. Relaxed: the
    /// owner's next use of the address (a new object there) is ordered after this call by
    /// whatever handed it the new object, and then reads 0 or a later record (coherence).
    #[cold]
    fn forget_record(rt: &Rt<F>, w: u64, a: usize) {
        if Self::SEED || w & (STATE_LOW | RC_MASK) != STATE_LOW | RC_ONE {
            return;
        }
        let raw = ((w & OWNER_MASK) >> OWNER_SHIFT) as u32;
        let cx = ThreadId::from_raw(raw).and_then(|id| rt.threads().get(id));
        if let Some(cx) = cx {
            cx.local().rec.clear_last(a);
        }
    }

    /// Applies `c` to `rt` (see [`BiasState::set`]); returns the revocation in use.
    pub fn configure(rt: &Rt<F>, c: BiasConfig) -> Revocation {
        rt.state().set(c)
    }

    /// How many times transition `tr` happened in `rt` (attached threads' private counts,
    /// read racily, plus detached threads' and revocations).
    pub fn transitions(rt: &Rt<F>, tr: Transition) -> u64 {
        rt.state().transitions_shared(tr)
            + rt.threads()
                .snapshot()
                .iter()
                .map(|c| c.local().transitions[tr as usize].load(Ordering::Relaxed))
                .sum::<u64>()
    }

    /// Thread `t`'s bias bits: owner id and generation, state biased, rc 0.
    #[inline(always)]
    pub(crate) fn my_bias(t: &Cx<F>) -> u64 {
        Self::my_owner(t) | ((u64::from(t.core().generation()) & GEN_BITS) << GEN_SHIFT)
    }

    #[inline(always)]
    pub(crate) fn my_owner(t: &Cx<F>) -> u64 {
        t.local().rec.owner
    }

    /// [`my_bias`](Self::my_bias) from the thread's cache line: one load. `NO_BIAS` (matching
    /// nothing) until the thread's first slow path.
    #[inline(always)]
    fn cached_bias(t: &Cx<F>) -> u64 {
        t.local().rec.bias.load(Ordering::Relaxed)
    }

    /// Seed 002's own fast paths exactly (Figures 4 and 7: the seed flavors); the others
    /// add the inline paths of `fresh_enter` and of nested thin / learn holds.
    const SEED: bool = !F::RECORDS && !F::RSEQ;

    /// rseq flavors: caches where the calling thread's `rseq.rseq_cs` is, if glibc
    /// registered rseq for it; `false` otherwise (the thread then never biases anything:
    /// its owner step needs the section). Called by `t`'s own thread (`enter_slow`).
    fn rseq_ready(t: &Cx<F>) -> bool {
        #[cfg(loom)]
        {
            let _ = t;
            true
        }
        #[cfg(not(loom))]
        {
            if F::SIGNAL {
                // The handler is installed and this thread does not block its signal.
                return crate::sigbarrier::thread_ready();
            }
            cfg!(all(target_arch = "x86_64", target_os = "linux"))
                && (crate::rseq::offset().is_some() && crate::rseq::thread_registered()
                    || t.local().rseq_forced.load(Ordering::Relaxed))
        }
    }

    /// Measurement hook for instruction counters that cannot run rseq (valgrind refuses
    /// the `rseq` system call, so glibc registers nothing and the rseq flavors would bias
    /// nothing under it): the calling thread runs its owner step in a section the kernel
    /// does not know about, as if rseq were registered. Returns whether it could (glibc
    /// exports `__rseq_offset`). A no-op for the other flavors.
    ///
    /// # Safety
    ///
    /// `t` is the calling thread's own context, and no other thread may ever revoke a bias
    /// held by this thread by the barrier (which can no longer restart its sections): use
    /// it in a single-threaded measurement, or with a handshake revocation only.
    #[doc(hidden)]
    pub unsafe fn count_without_rseq(t: &Cx<F>) -> bool {
        if F::RSEQ && !F::SIGNAL && cfg!(all(target_arch = "x86_64", target_os = "linux")) {
            t.local().rseq_forced.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// Whether `t` may bias an object to itself: it has cached its bias bits, which it does
    /// (in `enter_slow`) only where the runtime biases ([`Revocation::NoBias`] never does).
    /// Slow paths only (the fast ones test the cached bits themselves).
    #[inline]
    fn may_bias(t: &Cx<F>) -> bool {
        Self::cached_bias(t) != NO_BIAS
    }
}

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
    const KNOB: Option<super::Knob> = if F::LEARN { Some(LEARN_LIMIT) } else { None };

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
    /// 11). Why (seed 002 §5.1 Cloud, measured with `examples/cloud_probe.rs`): a Cloud
    /// locker misses the cache on every header, and the out-of-order window overlaps the
    /// misses of the next iterations, so the time per acquisition grows with the µops per
    /// lock + unlock (16 `nop`s added to `thin`'s loop make it about 1.2–1.3× slower). The
    /// bias test first, as before, cost every thin acquisition a second load of the header
    /// and a second test on each side; the thin test first made the bias owner pay for it
    /// instead (Sync 2.7 → 3.3 ns).
    #[inline(always)]
    unsafe fn enter(rt: &Rt<F>, t: &Cx<F>, h: &BiasWord) -> Result<(), MonitorError> {
        Self::lock_with(rt, t, None, h)
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

    /// [`enter`](Protocol::enter), the signal flavors' owner step with its first test exact
    /// and its store from the handle's word (`signal_known_step`).
    #[inline(always)]
    unsafe fn enter_with(
        rt: &Rt<F>,
        t: &Cx<F>,
        word: u64,
        h: &BiasWord,
    ) -> Result<(), MonitorError> {
        Self::lock_with(rt, t, Some(word), h)
    }

    unsafe fn try_enter(rt: &Rt<F>, t: &Cx<F>, h: &BiasWord) -> Result<bool, MonitorError> {
        Self::enter_slow(rt, t, h, true)
    }

    /// One load, one bit test to the bias owner's step or the thin / learn unlock, for the
    /// reason given at [`enter`](Protocol::enter).
    #[inline(always)]
    unsafe fn exit(rt: &Rt<F>, t: &Cx<F>, h: &BiasWord) -> Result<(), MonitorError> {
        Self::unlock_with(rt, t, None, h)
    }

    /// [`exit`](Protocol::exit) with the handle's word, as [`enter_with`](Self::enter_with).
    #[inline(always)]
    unsafe fn exit_with(
        rt: &Rt<F>,
        t: &Cx<F>,
        word: u64,
        h: &BiasWord,
    ) -> Result<(), MonitorError> {
        Self::unlock_with(rt, t, Some(word), h)
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

    /// See [`biased_hash`](super::biased_hash).
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

impl<F: Flavor> std::fmt::Debug for Biasing<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(F::NAME)
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
