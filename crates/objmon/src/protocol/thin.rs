//! `thin` and `thin-seed`: the thin locks of Bacon, Konuru, Murthy and Serrano (seed 000 §2.3).
//! `thin-seed` ([`ThinSeed`]) has the seed's fast paths as written; `thin` ([`Thin`]) the
//! faster ones of issue 13 item 2 ("Fast paths" below). Everything else is shared.
//!
//! Header ([`LockWord`], Figure 1 and Figure 2 of the seed):
//!
//! | bits   | thin (bit 31 = 0)                        | inflated (bit 31 = 1)          |
//! |--------|------------------------------------------|--------------------------------|
//! | 31     | monitor shape bit = 0                    | monitor shape bit = 1          |
//! | 30..16 | owner thread index (15 bits), 0 = free   | monitor index (23 bits, 30..8) |
//! | 15..8  | count = locks − 1 (8 bits)               | ″                              |
//! | 7..0   | host bits (constant while live)          | host bits                      |
//!
//! The owner-only-modifies discipline (§2.3): while a thread owns the thin lock, no other thread
//! writes the lock field, so the owner nests, unnests and unlocks with plain loads and stores.
//!
//! Atomic operations per fast path, `thin-seed` (§2.3 as written):
//! - lock an unlocked object (§2.3.1): one load, one compare-and-swap of
//!   `host → host | (index << 16)` (the index kept pre-shifted in the thread context);
//! - unlock (§2.3.2): one load, one compare, one store (Release) — no atomic read-modify-write;
//! - nested lock / unlock (§2.3.3): the failed CAS (lock only), one xor-compare with
//!   `255 << 8`, one store of `word ± 256` — out of line (`enter_slow`, `exit_slow`).
//!
//! ## Fast paths (`thin`, issue 13 item 2)
//!
//! - **lock**: one load of the word; held by us with count < 255 → §2.3.3's xor-compare
//!   (tested first) and one plain store of `word + 256` *before* any CAS (the seed fails a
//!   CAS first), a load of the record and, if it names this word, a store forgetting it;
//!   the word as found goes back to the guard as the unlock's hint. Free → two plain stores
//!   of the thread's record of its last fast lock ([`ThinThread`]: the word's address and
//!   host bits), then one CAS (§2.3.1; a failed one forgets the record). No call either
//!   way; the thread's id comes from the handle's word (a register).
//! - **unlock of a nested guard** (its hint, `exit_hinted`): one load of the word; equal to
//!   the hint plus one → one plain store of the hint (`word − 256`, from a register) and the
//!   owner barrier below; otherwise the general unlock.
//! - **unlock**: one load of the record and one compare with the word's address; equal →
//!   one blind store (Release) of the recorded host bits and one plain store forgetting the
//!   record — the word is not loaded after the CAS (§2.3's "the owner alone writes it": the
//!   record *is* the word). Otherwise §2.3.2's load / compare / store, or §2.3.3's
//!   decrement inline; the decrement to one level also passes the side table's owner
//!   barrier (a compiler barrier and one load, see "Identity hash") and calls the cold
//!   settle only if the table is not empty.
//! - slow paths (`enter_slow`, `exit_slow`, `hash_slow`, `settle_parked`) are
//!   `#[cold] #[inline(never)]`, so the user's loop keeps no spills for them.
//!
//! **The record's invariant** (`ThinThread::last`): while it names address `a`, the word at
//! `a` is `host | me` — thin, held once by this thread, as its CAS left it (outside this
//! thread's `enter`, which records just before its CAS and forgets after a failed one; the
//! unlock, the record's reader, runs only outside it; a `forget_record` CAS landing in that
//! window only forgets). Kept by: every
//! write of ours to a word we hold forgets it first (the nested lock, `enter_slow`, every
//! inflation, `fat_for_wait`); becoming `BLOCKED` forgets it (a hasher or a starving
//! contender may then inflate our words for us); `reclaim` and `relocate_records` clear it
//! in the owner's context with a CAS (a dead or moved header held once: its address may
//! soon hold another object, which a blind store would unlock). So the blind store changes
//! nothing the seed's load / compare / store would not: the word *was* `host | me`. The
//! identity-hash protocols are untouched: a hash is parked (non-loose) only under a nested
//! hold, which forgot the record, and is settled by the (now inline) decrement; a hasher
//! facing a single hold waits for the release or inflates for a `BLOCKED` owner, whose
//! record is gone. The one use it cannot survive is an exit, by an unsafe caller, of an
//! address whose held header was moved or freed by safe code without `relocate` /
//! `reclaim` under a forgotten guard (the guard API cannot exit it); loom:
//! `loom_thin_fastpath`.
//!
//! Measured (issue 13 item 2; 2-core Intel Xeon VM, thread CPU time, medians of
//! interleaved rounds, one run each):
//!
//! | path (public API, guard drop)  | instructions `thin` / `thin-seed` | `user-loop` ns `thin` / `thin-seed` | `examples/user_loop` ns |
//! |--------------------------------|-----------------------------------|-------------------------------------|-------------------------|
//! | lock + unlock, uncontended     | 17 / 23                           | 9.30 / 12.94                        | 9.25 / 12.91            |
//! | nested lock + unlock           | 28 / 64 (26 before `forget_if_last`) | 1.21–1.26 / 13.87               | 1.30 / 13.74            |
//!
//! In the same runs: `user-loop-sol-cas-store` 8.87 ns (`thin` 1.05×, `thin-seed` 1.46×),
//! `user-loop-sol-plain-pair` 0.50 ns (constant stores, no arithmetic: `thin` nested
//! 2.4×, after the parked-hash check moved to the thread's own `look` mark below — 3.9×
//! with 31 instructions before it; the example's figures are from before it); the example's bare CAS + release store 9.01 ns (`thin` 1.03×), its bare load /
//! compare / store pair with the count arithmetic 0.92 ns (`thin` nested 1.53×), its CAS
//! with the seed's unlock load / compare before the store 13.1 ns (1.45×: the load of the
//! word after the locked instruction is what the blind store saves).
//!
//! Two findings of issue 13's last round: the record's two stores go *before* the CAS
//! (after it, the next lock's locked instruction waited for them: `thin` was 1.25× the CAS
//! loop, 11.5 against 9.2 ns), and the handle has no interior mutability inline
//! (`handle.rs`'s `HandleCore`: a user's loop keeps its pointers in registers; 25 → 21
//! instructions plain, 38 → 34 nested). Then the nested unlock's parked-hash check (hash.rs)
//! moved from the runtime's side-table count and Dekker mode (the count test, two loads,
//! two branches) to a mark on the thread's own line (`ThinThread::look`, one load and a
//! branch): 31 → 26 instructions, `user-loop-thin-nested` 1.93 → 1.20 ns (against the
//! pair's 0.50; two runs on one day, the second with CI running beside it).
//!
//! That 1.20 did not hold: after later merges the same 26 instructions read 1.6–1.9 ns,
//! with a spread of 1.2–2.0 *within* one process (each row's header and handle are made
//! once). The nested lock stored 0 to `last` every time, and the unlock loaded it back
//! right after: a third store per nested lock + unlock, and a load forwarded from it. Now
//! the nested lock forgets the record only when it names this word (`forget_if_last`: a
//! load and a branch, no store once the record is gone): 26 → 28 instructions, 2 stores
//! like the pair. Same day, quiet, old and new binaries alternating twice (`objmon-bench run
//! --bench user-loop --protocol 'user-loop-thin*' --protocol user-loop-sol-plain-pair
//! --reps 9`): `user-loop-thin-nested` 1.61 [1.45–2.02] / 1.89 [1.45–2.02] → 1.26
//! [1.17–1.34] / 1.21 [1.12–1.36] ns, against the pair's 0.506 / 0.476: 2.5× (issue 13
//! asks 3×). In `examples/user_loop time` built with `-C llvm-args=-align-loops=64` (both
//! binaries): 1.70–1.75 → 1.30 ns, the spread gone (min–max 1.25–1.33).
//!
//! Two more (2026-11-29, the 2-core AMD EPYC (Zen 5) VM; `examples/user_loop time 20000000
//! thin`, old and new binaries alternating twice, medians of 7): the thread's `me` comes
//! from the handle's word ([`Protocol::handle_word`]), which a user's loop keeps in a
//! register — the nested lock + unlock loaded it from the context twice (7 loads, now 5;
//! instructions 17 / 28 unchanged): nested 0.98–1.01 → 0.70–0.79 ns (`objmon-bench`'s
//! placement-averaged `user-loop-thin-nested`, 15 repetitions, three alternations:
//! 0.79–0.82 → 0.77–0.80, the pair 0.24–0.25); and the CAS's new word `w | me` is computed
//! before the record's two stores (`sync::computed_before_stores`): the compiler had
//! scheduled the `or` after them once `me` was a register, and the plain lock + unlock took
//! 5.70–5.74 ns instead of 5.21–5.26 (bare CAS + store 4.87: 1.10×). The same load of `me`
//! placed after the stores cost the same 0.5 ns; before them (as `l.me` was loaded first
//! until then), nothing.
//!
//! Then the nested lock's hint (same day): the nested lock returns the word it found
//! ([`Protocol::enter_hinted`]), the guard keeps it, and the guard's unlock
//! ([`Protocol::exit_hinted`]) stores it back if the word is still that plus one — the store
//! `exit_with`'s nested unlock makes (the loaded word minus one), from a register, so that a
//! nested loop chains through memory alone (load → store → load) and loads no `last`; and
//! the nested test comes before the free test, so that the nested path is laid out
//! straight (with three or four taken branches per lock+unlock, one code placement in four
//! ran at 0.95 ns). Callgrind 17 / 28 → 22 / 19 instructions plain / nested; `objmon-bench
//! run --bench user-loop` (placement-averaged, three alternations): `thin-nested` 0.82–0.87
//! → 0.48–0.57 ns against the pair's 0.24–0.25 (2.0–2.3×), `thin` 1.10× the CAS row before
//! and after (docs/benchmarks.md, "`user-loop-thin-nested`, … fifth session").
//!
//! What each idea bought when it came (one idea taken out of `thin` at a time, a build-time
//! switch not kept; ns ratios from one loaded run each, against the same process's bare
//! loops, which then stored and reloaded the object's reference every iteration — a delay
//! that hid the record stores' cost, so these ratios are not comparable with the above):
//!
//! | variant                                       | instr. plain / nested | plain ÷ CAS+store | nested ÷ pair |
//! |-----------------------------------------------|-----------------------|-------------------|---------------|
//! | `thin`                                        | 25 / 38               | 1.05×             | 2.3×          |
//! | without the blind unlock (load/compare/store) | 22 / 35               | 1.41×             | 2.0×          |
//! | nested lock / unlock out of line (calls)      | 24 / 83               | 1.02×             | 4.5×          |
//! | nested check after a failed CAS (inline)      | 25 / 43               | 1.08×             | 13.2×         |
//!
//! So the blind store is what brings the uncontended pair to the CAS limit (the load of the
//! word after the locked instruction costs ~40%, though it is 3 instructions fewer); the
//! nested lock needs both the check before any CAS (a failed `lock cmpxchg` costs about what
//! a successful one does) and the inline paths (the calls and their spills double it).
//!
//! Instructions: callgrind, `(I(2·10⁶) − I(10⁶)) / 10⁶`:
//!
//! ```sh
//! cargo build --release -p objmon --example user_loop
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/user_loop thin nested 1000000   # and 2000000
//! target/release/examples/user_loop time                       # ns, thin and thin-seed
//! cargo run --release -p objmon-bench -- run --bench user-loop --protocol thin \
//!     --protocol user-loop-sol-cas-store --protocol user-loop-sol-plain-pair
//! ```
//!
//! Inflation (by the thread that owns the thin lock, so the discipline holds — or for it, by
//! a hasher, while it is blocked and writes nothing; see "Identity hash"): on count overflow
//! (the 257th lock, §2.3: "excessive" = 257), on wait / notify, and on contention: the
//! contender spins until the owner releases, takes the thin lock, and inflates it (§2.3.4). A
//! fat lock stays fat for the object's lifetime (until `reclaim`). If the monitor table is
//! full, contention inflation is skipped (the thin lock is still held correctly); overflow
//! and wait / notify then fail with `MonitorTableFull`.
//!
//! The contender's spin (§2.3.4 leaves it to "standard back-off techniques") is `spin.rs`'s
//! policy: exponential pauses, then yields. Deviation from §2.3.4 (issue 11 item 17): a
//! contender that has waited about a millisecond, finding the owner blocked inside objmon
//! (spinning or parked for another lock, waiting: [`ThinThread`]) or detached, inflates the
//! lock *for* the owner — a monitor entered in the owner's name with its count, installed by
//! CAS while the owner provably writes nothing — and queues on the monitor, whose hand-off
//! bounds overtaking. Against an owner that keeps running and re-locking, nothing bounds how
//! long a contender is overtaken before the first contended acquisition: it may not write the
//! held word, so nobody can hand it the lock (`spin.rs` says what was tried;
//! `examples/fairness.rs` measures it). After that acquisition the lock is fat and the
//! monitor's bounded hand-off applies.
//!
//! ## Contended path (`thin`, issue 13 item 4)
//!
//! Under contention the lock inflates once (the first contended acquisition, §2.3.4) and
//! stays fat: `examples/contended.rs` with `CONTENDED_STATS=1` counts one contention
//! inflation and no deflation per run at 2, 4 and 8 threads. From then on every enter and
//! exit is the fat monitor's, and what `thin` adds to it decides the figure:
//!
//! - before (both, `thin-seed` until its fix below): fast path → `enter_slow` →
//!   `enter_contended`, which becomes `BLOCKED` (a SeqCst swap) before the monitor's enter
//!   and leaves it (a SeqCst CAS) *inside the critical section* after it — two locked
//!   instructions per acquisition on top of the monitor's one. perf (cpu-clock; the VM has
//!   no cache-miss counters): 64% of the samples in `enter_contended`, 41% of those at those
//!   two instructions.
//! - `thin` and `thin-seed`: `enter_slow` sends an inflated word to `enter_fat` — the monitor's
//!   `try_enter` inline, then (cold) its bounded spin, both `RUNNING`: they write none of our
//!   thin words and wait for nothing unbounded, so a hasher or starving contender loses at
//!   most that spin (a few µs) before it sees us `BLOCKED`; only the enter that may suspend
//!   is wrapped in `block` / `unblock`, and it goes straight to the suspend
//!   (`FatMonitor::enter_spun`: before, a thread about to sleep spun the monitor's 64 pauses
//!   twice, once in `spin_enter` and again in the monitor's enter) (loom: `loom_thin_fastpath`,
//!   `thin_suspending_inflated_enter_vs_hasher`). The shape test is in `enter_slow`, not in
//!   the fast path: there it cost 2–3 instructions per uncontended lock+unlock, and the same
//!   test in the unlock fast path (straight to the monitor, no reload) 9–10 (callgrind,
//!   `user_loop`: 36 / 51 instead of 25 / 38) for 2 saved on the inflated pair. What is left
//!   is the monitor's try-lock CAS and its Figure 7 release fence (perf: 67% and 72% of
//!   `enter_fat` and `exit_slow` samples), as in `fat` — the fence is gone from the default
//!   release since (`tasuki.rs`, `Figure7Membarrier`: 11.9 → 7.4 ns per inflated
//!   lock+unlock on one thread); the fairness is the monitor's (`examples/fairness.rs`:
//!   the long waits are the pre-inflation phase's, as in `thin-seed`).
//! - `thin-seed` kept the `BLOCKED` bracket until this session's fix (issue 13 item 4,
//!   "no protocol worse than 2× `parking_lot` at 8 threads"): nothing in seed 000 asks for
//!   it — §2.3.4 says only that "subsequent attempts to lock the object will use the fat
//!   lock, and if there is contention the fat lock discipline will handle the necessary
//!   queuing"; the bracket is this crate's identity-hash protocol's. Diagnosis
//!   (`examples/contended 7 8 thin-seed`, 2 cores both running it): perf, 32% of the samples
//!   in `enter_contended`, half of them at the unblock CAS (after the owner's stores to the
//!   monitor's line, which the spinners keep reading: the holder stalls there inside its
//!   critical section) and at the monitor's line; 24% in the monitor's spin; 0.0002 context
//!   switches per lock+unlock (no convoy; `perf stat -e context-switches`); callgrind, one
//!   thread on an inflated lock (`contended inflated thin-seed N`): 167 instructions per
//!   lock+unlock, now 121 (`thin` 123; 117 with the shape test before §2.3.3's nested
//!   test, see `enter_slow`).
//! - **The seed's own cost, kept** (`thin-seed`): §2.3.1 / §2.3.3 — every lock "will begin
//!   by performing the compare-and-swap operation", which fails on an inflated word but still
//!   takes the header's line exclusive, so each enter pulls the line every other thread reads
//!   (their shape test, their unlock's load; and in a real object the fields beside the
//!   header) away from them. perf after the fix: 54% of `run_loop`'s samples (13% of all) sit
//!   right after that `lock cmpxchg`. `thin` loads and tests the word first (issue 13 item 2)
//!   and pays no RMW on the header once it is fat. Experiment (not kept: it reorders §2.3.1):
//!   `thin-seed` with a load and shape test before its CAS, interleaved 3× with the fixed
//!   binary at load 5.0–5.2 (`examples/contended 5 2,4,8 thin,thin-seed,parking_lot`): 8
//!   threads 0.82–1.37× `parking_lot` wall, 1.19–1.31× CPU, like `thin` (1.02–1.40×)
//!   beside it; the fixed `thin-seed` 1.56–1.81× wall, 1.54–2.00× CPU.
//! - `ThreadCore` (`thread.rs`) now keeps `id`, read by the monitor's enter and exit, off the
//!   cache line of the parker and tasuki words a waker writes.
//!
//! Measured (2-core VM; `parking_lot::Mutex` in the same run; wall ratios; with the shape
//! tests still in the fast paths, 2 instructions fewer per inflated pair than now, whose
//! cost is the monitor's two locked instructions and their cache-line transfers):
//!
//! | run | 2 threads `thin` / `thin-seed` | 4 threads | 8 threads |
//! |-----|-------------------------------|-----------|-----------|
//! | `objmon-bench run --bench threads` (load 1.1, one run, 7 reps) | 1.19× / 3.36× | 1.19× / 3.36× | 1.17× / 4.21× |
//! | the same, load 5.8–7.3, 3 runs (`fat`: 1.32–1.85×, 1.47–2.01×, 1.17–2.17×) | 1.37–1.82× / 2.08–3.83× | 0.88–1.72× / 3.53–5.35× | 1.04–2.10× / 4.19–5.35× |
//! | `examples/contended 7 2,4,8` (load 11–12, 3 runs) | 0.92–1.10× / 2.17–2.87× | 0.82–1.21× / 2.25–2.63× | 0.58–0.85× / 1.75–2.39× |
//! | the same, CPU time per lock+unlock | 0.90–0.92× / 1.99–2.43× | 1.03–1.35× / 2.83–3.14× | 0.96–1.10× / 2.91–3.40× |
//!
//! With the final code (shape test in `enter_slow`), `examples/contended 5 2,4,8
//! parking_lot,fat,thin,thin-seed`, one run: `thin` 0.82× / 1.00× / 1.12× wall and 0.88× /
//! 0.99× / 1.08× CPU at 2 / 4 / 8 threads, `thin-seed` 2.11× / 3.01× / 3.02× wall, `fat`
//! 1.11× / 1.24× / 1.19×; `objmon-bench run --bench threads` right after, at load 10,
//! varied 1.4–2.6× for `thin` and `fat` alike.
//!
//! Before (`thin` as `thin-seed` is now, same example, 3 runs at load 6–8): 1.64–3.38× /
//! 1.84–2.52× / 1.89–2.70× wall. Instructions per lock+unlock of an inflated lock, one
//! thread (callgrind, `contended inflated KIND N` at two `N`): `thin` 136 (119 with the
//! shape tests in the fast paths, see above), `thin-seed` 182,
//! `fat` 106, `parking_lot::Mutex` 11 — the monitor layer (table look-up, owner and count,
//! the tasuki lock's Figure 7 release) is most of the rest.
//!
//! Slow-path shape (`thin-seed`; `thin` tests the nested lock inline): the nested lock
//! (§2.3.3) is tested first in `enter_slow`, which then calls the out-of-line contention
//! loop, so that the nested lock and unlock pair costs fewer instructions than before issue
//! 11 (71 against 98, callgrind; 82 now, through the guard API) although the unlock that goes
//! down to one level now also looks at the side table (a compiler barrier and one load, see
//! "Identity hash").
//!
//! Identity hash (32 bits, 0 = none): the 32-bit word has no room, so the hash lives in the
//! fat monitor (`FatMonitor::identity_hash`) and hashing inflates the object, which then
//! stays fat (thin locks never deflate): **a hashed object costs a monitor**, and with the
//! monitor table full hashing fails with `MonitorTableFull` (there is nowhere else to keep a
//! hash that moves with the object). By the word the hasher finds:
//!
//! | word                              | the hasher                                            |
//! |-----------------------------------|-------------------------------------------------------|
//! | inflated                          | reads the monitor's hash (one load each); else installs one |
//! | free                              | one CAS to the inflated word with a fresh, unowned monitor holding the hash |
//! | held by itself                    | inflates as for wait                                  |
//! | held by another thread, nested    | parks the hash (with a monitor holding it) in the side table, returns at once |
//! | held once by another thread       | inflates for it if it is blocked in objmon or detached; else waits for the release, at most `HASH_WAIT_BOUND` (1 s), then parks a *loose* entry |
//!
//! Why (issue 11 item 7). A hasher may not write a held thin word, and its owner unlocks with
//! seed 000 §2.3.2's load / compare / store, which looks at nothing but the word: the owner
//! may have compared already when the hasher writes anything anywhere, so no mark and no
//! request reaches an owner's *last* unlock reliably, and a hash the hasher keeps by address
//! is lost when safe Rust then moves the unlocked header (`mem::replace`; the header is
//! borrowed only while held). So a hash must be in the header before the owner's last slow
//! path. A lock held *nested* has one: every operation of its owner on it is out of line
//! until it is down to one level, and that decrement (`exit_slow`) — like every inflation by
//! the owner — stores, passes a barrier and looks at the side table; the hasher inserts, passes a barrier and
//! re-reads the word (a Dekker, `hash.rs`), and the owner then inflates into the parked
//! monitor, which already holds the hash, so it needs no free slot. A lock held *once* has
//! none: there the hasher waits (with the contenders' spin policy) unless the owner is
//! blocked inside objmon — spinning or parked for another lock, or waiting — when it has
//! promised not to write its thin words ([`ThinThread`]: `BLOCKED`, entered and left by its
//! slow paths only) and the hasher claims that state, inflates the lock for it (a monitor
//! entered for the owner with its count, holding the hash) and hands it back. So hashing
//! never deadlocks on monitors (a hasher that waits is itself `BLOCKED`, so two hashers of
//! each other's objects, or a hasher and a contender, let each other through) and never
//! costs a fast path anything. **What it may wait for**: an owner holding the lock exactly
//! once and running or blocked *outside* objmon (a channel, a join, I/O) — the hash returns
//! when that owner releases the lock or next blocks in objmon, or after `HASH_WAIT_BOUND`
//! (1 s): that owner may be waiting for the hasher, so the hasher then parks a *loose* entry
//! (`hash.rs`, `Parked::loose`), live whatever the word says and adopted by the next hash
//! call — the one case where a hash can still be lost (or inherited) by a header moved
//! without [`Runtime::relocate`] (or freed and its address reused) between the owner's
//! release and that call. Java's `hashCode` never waits; closing that last gap would take an
//! atomic read-modify-write in the unlock fast path (seed 000's design point is that it has
//! none), so it is left, documented.
//! Once the monitor holds the hash, reading it is one load of the word and one of the
//! monitor. The fast paths do not change. A moving GC reports moves with
//! [`Runtime::relocate`] (parked hashes are keyed by address).

use super::{LockWord, Protocol, HOST_BITS_MASK};
use crate::hash;
use crate::monitor::{FatMonitor, WaitOutcome};
use crate::protocol::ThreadContext;
use crate::runtime::{Config, InflationCause, Runtime};
use crate::spin::Spin;
use crate::spin_episode::SpinEpisode;
use crate::sync::{spin_hint, AtomicU32, AtomicUsize, Ordering};
use crate::table::MonitorIndex;
use crate::tasuki::Contenders;
use crate::thread::ThreadId;
use crate::MonitorError;
use std::time::Instant;

/// Monitor shape bit: 1 = inflated.
const SHAPE: u32 = 1 << 31;
const OWNER_SHIFT: u32 = 16;
const OWNER_MASK: u32 = 0x7fff << OWNER_SHIFT;
const COUNT_SHIFT: u32 = 8;
const COUNT_MASK: u32 = 0xff << COUNT_SHIFT;
/// One nested lock in the count field.
const COUNT_ONE: u32 = 1 << COUNT_SHIFT;
/// `thin`'s hint ([`Protocol::enter_hinted`]) of a nested lock, above the 32 bits of the word
/// it found.
const HINT_NESTED: u64 = 1 << 32;
/// The lock field: everything but the host bits.
const LOCK_MASK: u32 = !HOST_BITS_MASK;
const INDEX_SHIFT: u32 = 8;
const INDEX_MASK: u32 = 0x7f_ffff << INDEX_SHIFT;

/// The thin-lock protocols (see the module documentation): [`Thin`] (`SEED = false`, the
/// fast paths of issue 13) and [`ThinSeed`] (`SEED = true`, seed 000 §2.3's paths as written).
#[derive(Debug)]
pub enum ThinLocks<const SEED: bool> {}

/// `thin`: seed 000's thin locks with issue 13's fast paths — the nested lock and unlock
/// inline without an atomic, and the blind-store unlock after the thread's last fast lock
/// (module documentation, "Fast paths"). Measured per lock+unlock through the guard API
/// (callgrind, `examples/user_loop.rs`): uncontended 22 instructions, one CAS and a blind
/// release store (no load of the word after the CAS), 1.10× `user-loop-sol-cas-store` (2-core
/// AMD EPYC VM); nested 19 instructions, no atomic read-modify-write, two stores, the
/// unlock's value from the lock's hint (a register), 2.0–2.3× `user-loop-sol-plain-pair`
/// (module documentation, "Measured").
/// Contended (module documentation, "Contended path"): an inflated word goes straight to its
/// monitor, `BLOCKED` only around an enter that may suspend; 127 instructions per inflated
/// lock+unlock (`examples/contended inflated thin`, callgrind): one CAS and no fence on the
/// default system lock (`tasuki.rs`, `Figure7Membarrier`), 7.4 ns on one thread against
/// `parking_lot::Mutex`'s 9.2; 0.78–0.86× `parking_lot::Mutex` at 2, 4 and 8 threads in two
/// runs of `objmon-bench run --bench threads --quick` (2-core AMD EPYC, 2026-11-29; `thin-fig7`,
/// on seed 004's Figure 7 release with its fence, 1.21–1.39× in the same runs;
/// docs/benchmarks.md, "The release without a fence"). Before, on Figure 7: 124 instructions,
/// 11.9 ns on one thread, 1.17–1.19× in one quiet run. On the 2-core Intel Xeon (Figure 7), shared with other jobs (load 3–11, never quiet), wall ratios to
/// `parking_lot::Mutex` in the same run at 2 / 4 / 8 threads: `examples/contended.rs` (5
/// runs of 7 rounds) 0.57–1.14× / 0.78–1.16× / 0.78–1.66×; `objmon-bench run --bench
/// threads --reps 7` (5 runs) 0.54–1.81× / 0.88–1.96× / 0.92–1.57×.
pub type Thin = ThinLocks<false>;

/// `thin-seed`: seed 000 §2.3's fast paths as written — the nested lock after a failed CAS,
/// out of line; the unlock a load, a compare and a store. Measured as for [`Thin`]:
/// uncontended 23 instructions, one CAS then load / compare / release store, 1.42× a bare
/// CAS + release store; nested 82 instructions (a failed CAS and two out-of-line calls),
/// 19.5× a bare load/compare/store pair. Contended: once inflated (§2.3.4) the same
/// monitor path as [`Thin`] (`enter_fat`: `BLOCKED` only around a suspend), after the seed's
/// compare-and-swap, which fails on the inflated word — the seed's own cost (module docs,
/// "Contended path"): 121 instructions per inflated lock+unlock on one thread (`thin` 123).
/// Before issue 13 item 4 it was `BLOCKED` / unblocked (two SeqCst read-modify-writes, the
/// second inside the critical section) around every inflated enter: 167 instructions,
/// 4.4× / 6.8× / 6.6× `parking_lot::Mutex` wall at 2 / 4 / 8 threads in a run at load 1.4
/// (`examples/contended 5 2,4,8 thin,thin-seed,monitor-cache,parking_lot`).
///
/// Measured, binaries before and after the fix interleaved (3 runs each, alternating, of
/// `examples/contended 5 2,4,8 thin,thin-seed,monitor-cache,parking_lot`; 2-core Intel
/// Xeon VM, load 5.6–6.4 from other builds, so both cores ran these threads only part of
/// the time; ratios to `parking_lot::Mutex` in the same run, wall / thread CPU):
///
/// | threads | before                                   | after                                    |
/// |---------|------------------------------------------|------------------------------------------|
/// | 2       | 2.45–2.79× / 2.52–3.07×                  | 1.64–2.03× / 1.65–2.30×                  |
/// | 4       | 2.97–3.48× / 2.68–3.04×                  | 1.93–2.60× / 1.67–2.03×                  |
/// | 8       | 3.23–4.15× / 2.48–2.76× (114–116 ns)     | 2.19–2.78× / 1.78–2.04× (72–76 ns)       |
///
/// (`thin` in the same runs: 0.83–1.12× wall at 8 threads.) `objmon-bench run --bench
/// threads --param 2 --param 4 --param 8 --reps 7 --no-java --protocol thin --protocol
/// thin-seed --protocol monitor-cache --protocol parking-lot-mutex`, the two binaries
/// alternating 4× each at load 5.6–7.7: `thin-seed` 3.8–4.7× / 3.2–4.9× / 4.2–7.8× before
/// (112–135 ns at 8 threads), 1.4–2.8× / 1.5–2.7× / 2.5–3.7× after (66–70 ns; `parking_lot`
/// itself varied 17–29 ns); `thin` 0.75–1.16× at 8 threads. What is left above `thin` is
/// the failed compare-and-swap on the header's line per enter (seed 000 §2.3.1, §2.3.3).
pub type ThinSeed = ThinLocks<true>;

#[inline]
fn monitor_of<const S: bool>(
    rt: &Runtime<ThinLocks<S>>,
    w: u32,
) -> Result<&FatMonitor, MonitorError> {
    let idx = MonitorIndex::new((w & INDEX_MASK) >> INDEX_SHIFT);
    // Another runtime's index: `ForeignHeader` (table.rs, one index space).
    rt.monitors()
        .checked(idx.expect("inflated lock word holds a monitor index"))
}

/// Locks held in a thin word owned by the caller: count + 1.
#[inline]
fn thin_locks(w: u32) -> u32 {
    ((w & COUNT_MASK) >> COUNT_SHIFT) + 1
}

impl<const SEED: bool> ThinLocks<SEED> {
    /// Inflates a thin lock that `t` owns with `count` locks (§2.3.4, §2.3.3 overflow, wait).
    /// Only the owner may do this: it alone writes the lock field.
    fn inflate<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
        w: u32,
        count: u32,
        cause: InflationCause,
    ) -> Result<&'r FatMonitor, MonitorError> {
        debug_assert_eq!(w & (SHAPE | OWNER_MASK), t.core().id_shifted16());
        // The word stops being `host | me`: forget a record of it.
        t.local().forget_last();
        let idx = rt.monitors().allocate()?;
        rt.monitors().bind(idx, h as *const LockWord as usize);
        let m = rt.monitors().get(idx);
        m.enter_inflated(t.core_arc(), count)?;
        // Release: whoever reads the new word with Acquire sees the monitor set up.
        h.0.store(
            SHAPE | (idx.get() << INDEX_SHIFT) | (w & HOST_BITS_MASK),
            Ordering::Release,
        );
        rt.stats().inflated(cause);
        // A hash parked while we held it nested goes into the monitor now, before the header
        // can move (hash.rs: the owner's half of the Dekker).
        if rt.side_hashes().owner_must_look(*rt.state()) {
            Self::adopt_parked(rt, h, m, None);
        }
        Ok(m)
    }

    /// The lock fast path failed: nested (§2.3.3; `thin-seed` only, `thin` tests it inline),
    /// else contended.
    #[cold]
    #[inline(never)]
    fn enter_slow(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<(), MonitorError> {
        // Forget a record of `h` before anything else: we may write `h` (nested, overflow),
        // and an inflated word here may be a header that safe code moved in over a word we
        // locked once and forgot (`mem::forget` of its guard, then `mem::swap`): its unlock
        // must not trust a record of the word that was here (`thin-seed` keeps none).
        if !SEED {
            t.local().forget_last();
        }
        let w = h.0.load(Ordering::Relaxed);
        if !SEED && w & SHAPE != 0 {
            // Inflated (contended before): straight to the monitor. Tested here, not in the
            // fast path, where the branch cost 2–3 instructions per uncontended lock+unlock.
            return Self::enter_fat(rt, t, w);
        }
        let me = t.core().id_shifted16();
        // §2.3.3: shape 0, owner = me, count < 255, in one xor and one compare.
        if (w ^ me) < (255 << COUNT_SHIFT) {
            h.0.store(w + COUNT_ONE, Ordering::Relaxed);
            return Ok(());
        }
        if SEED && w & SHAPE != 0 {
            // `thin-seed`, inflated: straight to the monitor as `thin` (issue 13 item 4).
            // Seed 000 §2.3.4 says only that "subsequent attempts to lock the object will use
            // the fat lock"; the `BLOCKED` bracket it used to pay around every such enter
            // (`enter_contended`) is this crate's (the identity hash's), not the seed's, and
            // cost it 5–6.5× `parking_lot` at 8 threads (module docs). Tested after §2.3.3's
            // nested test, the seed's next case after the failed CAS: the nested lock+unlock
            // stays at 65 instructions (`user_loop thin-seed nested`; 64 before the fix, 68
            // with this test first), the inflated pair 121 (117 with it first).
            return Self::enter_fat(rt, t, w);
        }
        Self::enter_contended(rt, t, h)
    }

    #[inline(never)]
    fn enter_contended(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<(), MonitorError> {
        let me = t.core().id_shifted16();
        let mut spin_policy = Spin::new();
        // While we spin for (or park on) a lock held by another thread we write none of the
        // thin words we hold: `BLOCKED` (a hasher may inflate them for us), entered at the
        // first spin and left before any write of a word of ours.
        let mut blocked = false;
        // Published while we spin (introspection); ended before blocking on a monitor.
        let mut spin = None;
        loop {
            let w = h.0.load(Ordering::Acquire);
            if w & SHAPE != 0 {
                drop(spin.take());
                if !blocked {
                    Self::block(t);
                }
                let r = monitor_of(rt, w).and_then(|m| m.enter(t.core_arc()));
                Self::unblock(t);
                return r;
            }
            if w & LOCK_MASK == 0 {
                // Unlocked: the owner released while we spun.
                if h.0
                    .compare_exchange(w, w | me, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    if blocked {
                        Self::won_contended(rt, t, h, w | me);
                    }
                    return Ok(());
                }
                continue;
            }
            if w & OWNER_MASK == me {
                // Ours (we are not blocked: we hold it, so no spin came before). §2.3.3, or
                // count overflow: the 257th lock inflates, carrying all the locks over.
                debug_assert!(!blocked);
                if (w ^ me) < (255 << COUNT_SHIFT) {
                    h.0.store(w + COUNT_ONE, Ordering::Relaxed);
                    return Ok(());
                }
                Self::inflate(rt, t, h, w, 257, InflationCause::RecursionOverflow)?;
                return Ok(());
            }
            // §2.3.4: held by another thread; only it may change the word. Spin (`spin.rs`:
            // the policy, and why a contender cannot be handed the lock before inflation).
            if !blocked {
                Self::block(t);
                blocked = true;
            }
            spin.get_or_insert_with(|| SpinEpisode::begin(rt.monitors(), t.core(), h.addr()))
                .observe((w & OWNER_MASK) >> OWNER_SHIFT);
            spin_policy.snooze();
            if spin_policy.starving_checkpoint()
                && Self::inflate_for_blocked_owner(rt, h, w, None, InflationCause::Contention)
                    .unwrap_or(false)
            {
                // Its owner is blocked in objmon (or gone) and we have waited long: the lock
                // is fat now, and we queue on its monitor (hand-off) instead of spinning.
                continue;
            }
        }
    }

    /// The lock word `w` is inflated (`thin` and `thin-seed`). Enter its monitor, and
    /// become `BLOCKED` only if that means suspending: re-entering, taking a free monitor
    /// and the monitor's bounded spin (`TasukiLock::spin`, a few µs) write none of our thin
    /// words and wait for nothing unbounded, so they stay `RUNNING` (and, `thin`, keep the
    /// record of the last fast lock: nobody else may write our words while we run).
    /// `enter_contended` (a thread that spun on the thin word when it was inflated) pays
    /// `block` / `unblock`, two SeqCst read-modify-writes, around its one inflated enter, as
    /// `thin-seed` did around every one before issue 13 item 4 (module docs).
    #[inline]
    fn enter_fat(rt: &Runtime<Self>, t: &ThreadContext<Self>, w: u32) -> Result<(), MonitorError> {
        // Acquire: the fast path's load was Relaxed; the inflater's Release store of `w`
        // published the monitor (table slot, binding) we are about to use.
        crate::sync::fence(Ordering::Acquire);
        let m = monitor_of(rt, w)?;
        if m.try_enter(t.core())? {
            return Ok(());
        }
        Self::enter_fat_contended(t, m)
    }

    /// [`enter_fat`](Self::enter_fat) found the monitor held by another thread: its bounded
    /// spin, `RUNNING`; then `BLOCKED` around the enter that may suspend.
    #[cold]
    #[inline(never)]
    fn enter_fat_contended(t: &ThreadContext<Self>, m: &FatMonitor) -> Result<(), MonitorError> {
        // `thin`: `parking_lot`'s contenders (no spin while threads are suspended, a woken
        // thread spins again); `thin-seed`: seed 004's (`tasuki.rs`, `Contenders`).
        let c = if SEED {
            Contenders::Seed
        } else {
            Contenders::QueueFirst
        };
        if m.spin_enter_with(t.core(), c) {
            return Ok(());
        }
        // We may sleep on the monitor: a hasher or a starving contender may then inflate
        // the thin words we hold for us (`ThinThread`), so announce it.
        // The monitor's spin is spent: straight to the suspend (`enter_spun`, no second
        // spin). Not the owner: `try_enter` would have re-entered.
        Self::block(t);
        m.enter_spun_with(t.core_arc(), c);
        Self::unblock(t);
        Ok(())
    }

    /// We took `h` (now `w`, held once) after spinning, in the blocked state: leave it, then
    /// §2.3.4, make the lock fat — unless a hasher inflated it for us meanwhile. A full table
    /// leaves it thin, which is still correct.
    fn won_contended(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &LockWord, w: u32) {
        Self::unblock(t);
        if h.0.load(Ordering::Relaxed) == w {
            let _ = Self::inflate(rt, t, h, w, 1, InflationCause::Contention);
        }
    }

    /// The unlock's one store, of `new`: the word minus one (§2.3.3, a word we hold nested)
    /// or the host bits (a release: the blind store of the record's, or §2.3.2's). Then our
    /// half of the side table's Dekker (hash.rs), on our own line: a hasher that parks for a
    /// word we hold nested, or parks loose for one we hold once, sets `look` before its
    /// barrier (`membarrier`: ours is a compiler barrier), so either it sees this store or we
    /// see its mark. A symmetric runtime's threads keep `look` set for good, and
    /// `unlock_looks` pays the fence where one is needed. One store for every case: with a
    /// second call site, the guard's drop no longer inlined into a user's loop.
    #[inline(always)]
    fn unlock_store(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &LockWord, new: u32) {
        // Release: our critical section before the next owner's Acquire CAS (a plain store on
        // x86-64 and a `stlr` on AArch64 for a nested unlock too, which needs no ordering).
        h.0.store(new, Ordering::Release);
        crate::membarrier::owner_barrier();
        if t.local().look.load(Ordering::Relaxed) != 0 {
            Self::unlock_looks(rt, t, h, new);
        }
    }

    /// The unlock fast path did not apply: inflated, nested (`thin-seed`), or not ours.
    /// `thin` comes here only for an `h` that is not `ThinThread::last`, so the record stays.
    #[cold]
    #[inline(never)]
    fn exit_slow(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<(), MonitorError> {
        let w = h.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            return monitor_of(rt, w)?.exit(t.core());
        }
        if w & OWNER_MASK != t.core().id_shifted16() {
            return Err(MonitorError::IllegalMonitorState);
        }
        if w & COUNT_MASK != 0 {
            h.0.store(w - COUNT_ONE, Ordering::Relaxed);
            if w & COUNT_MASK == COUNT_ONE && rt.side_hashes().owner_must_look(*rt.state()) {
                // Down to one level: our next unlock may be the fast path, which looks at
                // nothing but the word. Settle a hash parked meanwhile (hash.rs).
                Self::settle_parked(rt, t, h);
            }
        } else {
            h.0.store(w & HOST_BITS_MASK, Ordering::Release);
        }
        Ok(())
    }

    /// The fat monitor for wait / notify: the installed one, or inflate the thin lock that
    /// `t` owns. `IllegalMonitorState` if `t` does not own a thin lock.
    fn fat_for_wait<'r>(
        rt: &'r Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<&'r FatMonitor, MonitorError> {
        let w = h.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            return monitor_of(rt, w);
        }
        // We inflate `h`: forget a record of it.
        t.local().forget_last();
        if w & OWNER_MASK != t.core().id_shifted16() {
            return Err(MonitorError::IllegalMonitorState);
        }
        Self::inflate(rt, t, h, w, thin_locks(w), InflationCause::WaitNotify)
    }
}

impl<const SEED: bool> Protocol for ThinLocks<SEED> {
    const NAME: &'static str = if SEED { "thin-seed" } else { "thin" };
    const SUMMARY: &'static str = if SEED {
        "24-bit thin lock as in seed 000 §2.3: CAS lock, load/compare/store unlock, inflate forever"
    } else {
        "24-bit thin lock, CAS lock, blind-store unlock, inline nesting, inflate forever"
    };
    const HEADER_LOCK_BITS: u32 = 24;

    type Header = LockWord;
    /// Whether the process is registered for `membarrier` (`membarrier::init`): the side
    /// table's Dekker is then asymmetric (`SideHashes::owner_must_look`).
    type State = bool;
    type ThreadState = ThinThread;
    /// `HINT_NESTED | w` from a nested lock that found `w` (`thin-seed`: always 0).
    type Hint = u64;

    fn new_state(_: &Config) -> bool {
        crate::membarrier::init()
    }
    fn new_thread_state(id: ThreadId, _: &Config) -> ThinThread {
        ThinThread::new(id)
    }

    /// The thread's id pre-shifted into the owner field (`ThinThread::me`): a handle keeps it
    /// in a register, so neither fast path loads it from the context (a nested lock+unlock
    /// loaded it twice).
    #[inline(always)]
    fn handle_word(t: &ThreadContext<Self>) -> u64 {
        u64::from(t.local().me)
    }

    /// §2.3.1: CAS `old = word & 0xff` → `old | index << 16`. `thin` (not `thin-seed`) first
    /// tests the loaded word for §2.3.3's nested lock (no CAS then), and records the word of a
    /// successful CAS in the thread (`ThinThread::last`) for the blind unlock.
    #[inline]
    unsafe fn enter(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<(), MonitorError> {
        // SAFETY: the caller's contract; the word is `handle_word(t)`.
        unsafe { Self::enter_with(rt, t, Self::handle_word(t), h) }
    }

    /// [`enter`](Protocol::enter) with `me` from the handle (`word`).
    #[inline]
    unsafe fn enter_with(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        word: u64,
        h: &LockWord,
    ) -> Result<(), MonitorError> {
        // SAFETY: the caller's contract, which is `enter_hinted`'s.
        unsafe { Self::enter_hinted(rt, t, word, h) }.map(|_| ())
    }

    /// [`enter_with`](Protocol::enter_with); a nested lock (§2.3.3) returns
    /// `HINT_NESTED` and the word it found (owner me, count c), which the guard's unlock
    /// stores back if the word is still that plus one (`exit_hinted`). Every other lock: 0.
    #[inline]
    unsafe fn enter_hinted(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        word: u64,
        h: &LockWord,
    ) -> Result<u64, MonitorError> {
        if SEED {
            if h.try_lock_unlocked(t.core().id_shifted16()) {
                return Ok(0);
            }
            return Self::enter_slow(rt, t, h).map(|()| 0);
        }
        let l = t.local();
        // `ThinThread::me`, as `handle_word` derived it (the caller's contract).
        let me = word as u32;
        let w = h.0.load(Ordering::Relaxed);
        if (w ^ me) < (255 << COUNT_SHIFT) {
            // §2.3.3 before any CAS: shape 0, owner = me, count < 255. Tested first so that
            // the compiler lays the nested path out straight (the plain path's CAS costs
            // ~4.5 ns; a taken branch there is nothing). Ours, so the load saw
            // our own last write (or an inflation for us, ordered by our `unblock`). The word
            // changes: if it is `last`, that must be forgotten — only then: a store of the
            // record on every nested lock, reloaded by the unlock right after, was a third
            // store per nested lock + unlock (the pair has two).
            h.0.store(w + COUNT_ONE, Ordering::Relaxed);
            l.forget_if_last(addr(h));
            // The word as found, for the nested unlock to store back (`exit_hinted`).
            return Ok(HINT_NESTED | u64::from(w));
        } else if w & LOCK_MASK == 0 {
            // The CAS's new word before the record's stores (`computed_before_stores`: after
            // them, a lock+unlock took 0.5 ns more).
            let new = crate::sync::computed_before_stores(w | me);
            // Record the word *before* the CAS makes it `w | me` (only we write it then,
            // §2.3); a failed CAS forgets it again. Only this thread's unlock reads the
            // record, and it cannot run before this enter returns (`ThinThread::last`). Two
            // stores before the locked instruction leave the store buffer with it; after it
            // (as first written), the next lock's CAS had to wait for them and the
            // unlock's: `user-loop-thin` 1.25× → 1.0x× `user-loop-sol-cas-store`
            // (module docs, "Measured").
            l.last.store(addr(h), Ordering::Relaxed);
            l.host.store(w, Ordering::Relaxed);
            // Acquire: the critical section after the previous owner's Release unlock.
            if h.0
                .compare_exchange(w, new, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return Ok(0);
            }
            l.forget_last();
        }
        Self::enter_slow(rt, t, h).map(|()| 0)
    }

    unsafe fn try_enter(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<bool, MonitorError> {
        // No path here records `h` for the blind unlock, and the word here may not be the one
        // a record of `h` describes (a forgotten guard's header swapped away): forget it.
        if !SEED {
            t.local().forget_if_last(addr(h));
        }
        let me = t.core().id_shifted16();
        loop {
            let w = h.0.load(Ordering::Acquire);
            if w & SHAPE != 0 {
                return monitor_of(rt, w)?.try_enter(t.core());
            }
            if w & LOCK_MASK == 0 {
                match h
                    .0
                    .compare_exchange(w, w | me, Ordering::Acquire, Ordering::Relaxed)
                {
                    Ok(_) => return Ok(true),
                    // Lost to another locker or the word changed: look again.
                    Err(_) => continue,
                }
            }
            if w & OWNER_MASK == me {
                Self::enter_slow(rt, t, h)?;
                return Ok(true);
            }
            return Ok(false);
        }
    }

    /// §2.3.2: if the word is exactly "mine, count 0", store the host bits back. `thin` (not
    /// `thin-seed`) first stores blind if `h` is the word of its last fast lock, and unnests
    /// (§2.3.3) inline.
    #[inline]
    unsafe fn exit(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<(), MonitorError> {
        // SAFETY: the caller's contract; the word is `handle_word(t)`.
        unsafe { Self::exit_with(rt, t, Self::handle_word(t), h) }
    }

    /// [`exit`](Protocol::exit) with `me` from the handle (`word`).
    #[inline]
    unsafe fn exit_with(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        word: u64,
        h: &LockWord,
    ) -> Result<(), MonitorError> {
        // SAFETY: the caller's contract; 0 is no hint.
        unsafe { Self::exit_hinted(rt, t, word, 0, h) }
    }

    /// [`exit_with`](Protocol::exit_with); with a nested lock's hint (the word it found,
    /// `enter_hinted`), if the word is that plus one — ours, held nested, as that lock left
    /// it — the unlock stores the hint: the same store as `exit_with`'s nested unlock (the
    /// loaded word minus one), its value taken from a register instead of computed from the
    /// load, so that a user's nested loop chains one step to the next through memory alone
    /// (load → store → load) rather than through an add and a subtract too. Nor does it load
    /// `last` first: a word held nested is never `last`. One body for both (`exit_with`
    /// passes no hint): with a second copy of the unlock for the hinted case, the guard's
    /// drop was too big to inline (17 → 36 instructions per plain lock+unlock).
    #[inline]
    unsafe fn exit_hinted(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        word: u64,
        hint: u64,
        h: &LockWord,
    ) -> Result<(), MonitorError> {
        if SEED {
            let w = h.0.load(Ordering::Relaxed);
            if w & LOCK_MASK == t.core().id_shifted16() {
                h.0.store(w & HOST_BITS_MASK, Ordering::Release);
                return Ok(());
            }
            return Self::exit_slow(rt, t, h);
        }
        let l = t.local();
        // The word the unlock stores (`unlock_store` below, one call site).
        let new = 'store: {
            if hint & HINT_NESTED != 0 {
                // `hint` is `HINT_NESTED | w0` from our nested lock of `h` (the contract), w0
                // ours with a count below 255: w0 + 1 does not carry out of the count field,
                // and a word equal to it is ours, held nested — the case the nested unlock
                // below stores w − 1 = w0 for; here from a register. Such a word is never
                // `last` (that is held once): no load of the record.
                let w0 = hint as u32;
                if h.0.load(Ordering::Relaxed) == w0 + COUNT_ONE {
                    break 'store w0;
                }
                // Changed since (inflated by a wait, or guards dropped out of order): the
                // general unlock, from a fresh load — without the `last` test: `last` names
                // `h` only after a fresh CAS on `h`, which needs `h` free, and `h` has been
                // held (thin, or fat for good) since the nested lock that forgot it.
            } else if l.last.load(Ordering::Relaxed) == addr(h) {
                // `ThinThread::last`'s invariant: the word is `host | me`, ours once.
                l.forget_last();
                break 'store l.host.load(Ordering::Relaxed);
            }
            let w = h.0.load(Ordering::Relaxed);
            // Shape 0, owner = me: the xor leaves the count and the host bits.
            let x = w ^ word as u32;
            // §2.3.3 first: mine, count in 1..=255 (a count of 0 wraps around). Tested before
            // §2.3.2, whose single holds mostly take the blind store above: the nested unlock
            // then pays one test, not two.
            if x.wrapping_sub(COUNT_ONE) < (255 << COUNT_SHIFT) {
                break 'store w - COUNT_ONE;
            }
            if x <= HOST_BITS_MASK {
                // §2.3.2: mine, count 0.
                break 'store w & HOST_BITS_MASK;
            }
            return Self::exit_slow(rt, t, h);
        };
        Self::unlock_store(rt, t, h, new);
        Ok(())
    }

    unsafe fn wait(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
        deadline: Option<Instant>,
    ) -> Result<WaitOutcome, MonitorError> {
        let m = Self::fat_for_wait(rt, t, h)?;
        Self::blocked(t, || m.wait(t.core_arc(), deadline))
    }

    unsafe fn notify(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
        all: bool,
    ) -> Result<(), MonitorError> {
        Self::fat_for_wait(rt, t, h)?.notify(t.core(), all)
    }

    fn lock_count(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &LockWord) -> u32 {
        let w = h.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            monitor_of(rt, w).map_or(0, |m| m.count_for(t.core()))
        } else if w & OWNER_MASK == t.core().id_shifted16() {
            thin_locks(w)
        } else {
            0
        }
    }

    fn owner_of(rt: &Runtime<Self>, h: &LockWord) -> Option<ThreadId> {
        let w = h.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            monitor_of(rt, w).ok().and_then(FatMonitor::owner)
        } else {
            ThreadId::from_raw((w & OWNER_MASK) >> OWNER_SHIFT)
        }
    }

    fn reclaim(rt: &Runtime<Self>, h: &mut LockWord) {
        let w = h.0.load(Ordering::Relaxed);
        // Dead while held once (a forgotten guard): its owner's record of it goes, so that a
        // new object at this address is never unlocked blind by that owner.
        Self::forget_record(rt, w, addr(h));
        if w & SHAPE != 0 {
            let idx = MonitorIndex::new((w & INDEX_MASK) >> INDEX_SHIFT).expect("index");
            rt.monitors().free_if_bound(idx);
        }
        // The object is dead: a hash parked for it goes with it (the monitor's went with the
        // monitor, see `MonitorTable::free`).
        if let Some(p) = rt.side_hashes().forget(addr(h)) {
            rt.monitors().free(p.monitor);
        }
        h.0.store(w & HOST_BITS_MASK, Ordering::Relaxed);
    }

    /// The word moved while held once (a forgotten guard): its owner's record names the old
    /// address, which may hold another object soon. Forget it (the next unlock loads).
    fn relocate_records(rt: &Runtime<Self>, from: *const LockWord, to: &LockWord) {
        Self::forget_record(rt, to.0.load(Ordering::Relaxed), from as usize);
    }

    /// Detached: a hasher may inflate the thin locks it still holds (forgotten guards).
    unsafe fn on_detach(_rt: &Runtime<Self>, t: &ThreadContext<Self>) {
        t.local().state.store(EXITED, Ordering::SeqCst);
    }

    const HASH_BITS: u32 = 32;

    /// See the module documentation. Fast: an inflated word whose monitor has the hash.
    unsafe fn identity_hash(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<u32, MonitorError> {
        let w = h.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            if let Some(v) = monitor_of(rt, w)?.identity_hash() {
                return Ok(v);
            }
        }
        Self::hash_slow(rt, t, h)
    }

    fn peek_identity_hash(rt: &Runtime<Self>, h: &LockWord) -> Option<u32> {
        // The table first, the word second (see `SideHashes::may_hold_any`).
        let parked = rt.side_hashes().may_hold_any();
        let w = h.0.load(Ordering::Acquire);
        if w & SHAPE != 0 {
            if let Some(v) = monitor_of(rt, w).ok()?.identity_hash() {
                return Some(v);
            }
        }
        if !parked {
            return None;
        }
        let side = rt.side_hashes().lock();
        // Under the table's mutex: a hash is either still parked or already in the monitor;
        // a parked one counts only while its entry is live (hash.rs `Parked::owner`).
        let w = h.0.load(Ordering::Acquire);
        let p = side.get(addr(h));
        if w & SHAPE != 0 {
            let m = monitor_of(rt, w).ok()?;
            return m.identity_hash().or(p
                .filter(|p| p.loose || m.owner_raw() == p.owner)
                .map(|p| p.hash));
        }
        p.filter(|p| p.loose || held_nested_by(w, p.owner))
            .map(|p| p.hash)
    }
}

#[inline]
fn addr(h: &LockWord) -> usize {
    h as *const LockWord as usize
}

/// The raw thread id in a thin word's owner field.
#[inline]
fn owner_raw(w: u32) -> u32 {
    (w & OWNER_MASK) >> OWNER_SHIFT
}

/// A thin word held by thread `owner` (raw id), at any count.
#[inline]
fn held_by(w: u32, owner: u32) -> bool {
    w & SHAPE == 0 && owner_raw(w) == owner && w & LOCK_MASK != 0
}

/// A thin word held by thread `owner` (raw id) with at least two levels: every operation of
/// that owner on it is a slow path until it is down to one level again.
#[inline]
fn held_nested_by(w: u32, owner: u32) -> bool {
    w & SHAPE == 0 && owner_raw(w) == owner && w & COUNT_MASK != 0
}

/// [`ThinThread::state`]: may be running a thin fast or slow path on the locks it holds.
const RUNNING: u32 = 0;
/// Blocked inside objmon (spinning for, or parked on, another lock; waiting): writes none of
/// the thin words it holds until it leaves this state.
const BLOCKED: u32 = 1;
/// Blocked, and a hasher is inflating one of its thin locks on its behalf.
const CLAIMED: u32 = 2;
/// Detached: never writes a thin word again.
const EXITED: u32 = 3;

/// Per-thread state of `thin`: whether another thread may write the thin words this thread
/// holds (module documentation, "Identity hash"; written by slow paths only), and the
/// thread's record of its last fast lock (module documentation, "Fast paths").
#[derive(Debug)]
pub struct ThinThread {
    state: AtomicU32,
    /// The thread id, pre-shifted into the owner field (`ThreadCore::id_shifted16`), kept
    /// here so that a fast path reaches it with one load from the context.
    me: u32,
    /// `thin` (not `thin-seed`): the address of the word this thread last locked with the
    /// §2.3.1 compare-and-swap, 0 for none. **Invariant**: while `last == a`, the word at `a`
    /// is `host | me` — thin, held once by this thread, as the CAS left it — so the unlock of
    /// `a` may store `host` blind. (The fast lock writes the record just *before* its CAS and
    /// forgets it if the CAS fails: the invariant holds whenever this thread is outside
    /// `enter`, which is the only time its unlock, the record's one reader, can run.) Written by this thread (Relaxed: only it reads it, except
    /// `reclaim` / `relocate_records`, which clear it with a CAS); cleared before any write of
    /// ours to a word we hold that might be `last` (the nested lock, every slow path), before
    /// we become `BLOCKED` (others may then inflate our words), and when the word dies or moves.
    last: AtomicUsize,
    /// The host bits of the word at `last` (constant while it lives, seed 000 §2.3).
    host: AtomicU32,
    /// Nonzero: `thin`'s nested unlock must call `nested_look` (its only test of the
    /// parked-hash side table, on this thread's own line). [`LOOK_PARKED`]: a hasher parked
    /// a hash for a word this thread held nested (set under the side table's mutex before
    /// the hasher's barrier; cleared there by this thread once none of its entries is left).
    /// [`LOOK_SYMMETRIC`]: set for good when the process has no `membarrier` (the owner's
    /// side of the Dekker is then a fence, paid out of line).
    look: AtomicU32,
}

/// `ThinThread::look`: a hash may be parked for a word this thread holds nested.
const LOOK_PARKED: u32 = 1;
/// `ThinThread::look`: the side table's Dekker is symmetric (no `membarrier`).
const LOOK_SYMMETRIC: u32 = 2;
/// `ThinThread::look`: a hash may be parked loose (`hash.rs`, `Parked::loose`) for a word this
/// thread holds once; its release settles it (`settle_loose`). Set under the side table's
/// mutex before the hasher's barrier, cleared there by this thread once none is left. Never
/// set in a symmetric runtime (the release would need a fence).
const LOOK_LOOSE: u32 = 4;

impl ThinThread {
    fn new(id: ThreadId) -> Self {
        Self {
            state: AtomicU32::new(RUNNING),
            me: u32::from(id.get()) << OWNER_SHIFT,
            last: AtomicUsize::new(0),
            host: AtomicU32::new(0),
            // `membarrier::init` answers `false` for good once it has (revoke.rs): a runtime made
            // asymmetric may get a symmetric thread (a fence too many), never the reverse.
            look: AtomicU32::new(if crate::membarrier::init() {
                0
            } else {
                LOOK_SYMMETRIC
            }),
        }
    }

    /// Forgets the last fast lock: the next unlock loads the word.
    #[inline(always)]
    fn forget_last(&self) {
        self.last.store(0, Ordering::Relaxed);
    }

    /// Forgets the last fast lock if it was the word at `a` (the one this thread is about
    /// to write); a record of another word stays true.
    #[inline(always)]
    fn forget_if_last(&self, a: usize) {
        if self.last.load(Ordering::Relaxed) == a {
            self.forget_last();
        }
    }
}

impl<const SEED: bool> ThinLocks<SEED> {
    /// Enters the blocked state: until [`unblock`](Self::unblock) the caller writes none of
    /// the thin words it holds.
    fn block(t: &ThreadContext<Self>) {
        // Blocked, our words may be inflated for us: none of them is `host | me` for sure.
        t.local().forget_last();
        t.local().state.store(BLOCKED, Ordering::SeqCst);
    }

    /// Leaves the blocked state, after a hasher's inflation on our behalf (a few hundred
    /// instructions, no blocking) has finished.
    fn unblock(t: &ThreadContext<Self>) {
        let s = &t.local().state;
        while s
            .compare_exchange(BLOCKED, RUNNING, Ordering::SeqCst, Ordering::Relaxed)
            .is_err()
        {
            spin_hint();
        }
    }

    /// `f` in the blocked state (`f` writes no thin word the caller holds).
    fn blocked<R>(t: &ThreadContext<Self>, f: impl FnOnce() -> R) -> R {
        Self::block(t);
        let r = f();
        Self::unblock(t);
        r
    }

    /// `w`, the word of the header at `a`, dies or moves: if it is held once, its owner may
    /// have recorded `a` as its last fast lock (`ThinThread::last`); clear that record. A CAS
    /// on another thread's record, which it writes with plain stores: if it has recorded
    /// another word since, the CAS fails and that record stays. Relaxed: the owner's next use
    /// of the address (a new object there) is ordered after this call by whatever handed it
    /// the new object, and then reads 0 or a later record (coherence).
    #[cold]
    fn forget_record(rt: &Runtime<Self>, w: u32, a: usize) {
        if SEED || w & SHAPE != 0 || w & COUNT_MASK != 0 {
            return;
        }
        let cx = ThreadId::from_raw(owner_raw(w)).and_then(|id| rt.threads().get(id));
        if let Some(cx) = cx {
            let _ = cx
                .local()
                .last
                .compare_exchange(a, 0, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// The hash of an object whose word shows none yet.
    #[cold]
    #[inline(never)]
    fn hash_slow(
        rt: &Runtime<Self>,
        t: &ThreadContext<Self>,
        h: &LockWord,
    ) -> Result<u32, MonitorError> {
        let me = t.core().id_shifted16();
        let fresh = || hash::fresh(t.core(), Self::HASH_BITS);
        let mut spin = Spin::new();
        let mut waited_since: Option<Instant> = None;
        loop {
            let w = h.0.load(Ordering::Acquire);
            if w & SHAPE != 0 {
                // Inflated (by us just now, or by an owner): the monitor's hash, or one parked
                // for it that its owner has not settled yet, or a fresh one.
                let m = monitor_of(rt, w)?;
                if let Some(v) = m.identity_hash() {
                    return Ok(v);
                }
                return Ok(Self::adopt_parked(rt, h, m, Some(&fresh)));
            }
            if w & LOCK_MASK == 0 {
                // Free: nobody owns it, so a compare-and-swap straight to the inflated word
                // with an unowned monitor that already holds the hash breaks no discipline
                // (lockers CAS from the free word too, and fail). A full table: an error
                // (the hash has nowhere to live that moves with the object).
                if let Some(adopted) = Self::adopt_loose(rt, h, w) {
                    match adopted {
                        Some(v) => return Ok(v),
                        None => continue,
                    }
                }
                let idx = rt.monitors().allocate()?;
                rt.monitors().bind(idx, addr(h));
                let m = rt.monitors().get(idx);
                let v = m.install_hash(fresh());
                if h.0
                    .compare_exchange(
                        w,
                        SHAPE | (idx.get() << INDEX_SHIFT) | (w & HOST_BITS_MASK),
                        Ordering::AcqRel,
                        Ordering::Relaxed,
                    )
                    .is_ok()
                {
                    rt.stats().inflated(InflationCause::IdentityHash);
                    return Ok(v);
                }
                // A locker got there first: look again.
                rt.monitors().free(idx);
                continue;
            }
            if w & OWNER_MASK == me {
                // Ours: inflate it as for wait; the next round reads the monitor.
                Self::inflate(rt, t, h, w, thin_locks(w), InflationCause::IdentityHash)?;
                continue;
            }
            if w & COUNT_MASK != 0 {
                // Held nested by another thread: its next unlock is a slow path, which
                // settles a parked hash. Park it.
                if let Some(v) = Self::park(rt, h, &fresh, false)? {
                    return Ok(v);
                }
                continue;
            }
            let since = *waited_since.get_or_insert_with(Instant::now);
            if hash::waited_enough(since) {
                // Waited long enough: the owner may be waiting for us (a join, a channel).
                // Never wait for good; park a loose entry (`hash.rs`, `Parked::loose`).
                if let Some(v) = Self::park(rt, h, &fresh, true)? {
                    return Ok(v);
                }
                continue;
            }
            // Held once by another thread, whose next unlock may be the plain-store fast
            // path: nothing we write reaches it reliably (it may have compared already). If it
            // is blocked in objmon or gone, inflate for it; else wait for it to let go.
            if Self::inflate_for_blocked_owner(
                rt,
                h,
                w,
                Some(&fresh),
                InflationCause::IdentityHash,
            )? {
                continue;
            }
            Self::blocked(t, || spin.snooze());
        }
    }

    /// Parks a hash for `h`, held nested by another thread (under the table's mutex, with a
    /// monitor that holds it). `None`: the word changed, look again.
    /// With `loose` (after [`hash::HASH_WAIT_BOUND`]), a lock held once will do, and the
    /// entry is live whatever the word says (`Parked::loose`).
    fn park(
        rt: &Runtime<Self>,
        h: &LockWord,
        fresh: &dyn Fn() -> u32,
        loose: bool,
    ) -> Result<Option<u32>, MonitorError> {
        let a = addr(h);
        let mut table = rt.side_hashes().lock();
        let w = h.0.load(Ordering::Acquire);
        if w & SHAPE != 0 || w & LOCK_MASK == 0 || (!loose && w & COUNT_MASK == 0) {
            return Ok(None);
        }
        let owner = owner_raw(w);
        // A loose entry is settled by its owner's release where that release looks at its
        // mark: `thin` with `membarrier` (the owner's side is then a compiler barrier).
        let release_looks = loose && !SEED && *rt.state();
        if !loose || release_looks {
            // Before the park's barrier: the owner's nested unlock (and, for a loose entry,
            // its release) looks at its own `look` (see `exit`). Under the table's mutex,
            // where the owner clears it.
            let mark = if loose { LOOK_LOOSE } else { LOOK_PARKED };
            Self::mark(rt, owner, mark);
        }
        table.park(
            rt.monitors(),
            a,
            owner,
            loose,
            |p| p.owner == owner || p.loose,
            fresh,
            *rt.state(),
            release_looks,
            || {
                let w = h.0.load(Ordering::Acquire);
                if loose {
                    held_by(w, owner)
                } else {
                    held_nested_by(w, owner)
                }
            },
        )
    }

    /// The free word `w` of `h` and a loose entry parked for `h` (`Parked::loose`: its owner
    /// released with the inline store, which never settles): one CAS to the inflated word with
    /// the entry's monitor, which holds the hash. `None`: no loose entry, go on; `Some(None)`:
    /// the word changed, look again.
    fn adopt_loose(rt: &Runtime<Self>, h: &LockWord, w: u32) -> Option<Option<u32>> {
        if !rt.side_hashes().may_hold_any() {
            return None;
        }
        let mut table = rt.side_hashes().lock();
        let p = table.get(addr(h)).filter(|p| p.loose)?;
        let fat = SHAPE | (p.monitor.get() << INDEX_SHIFT) | (w & HOST_BITS_MASK);
        if h.0
            .compare_exchange(w, fat, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return Some(None);
        }
        table.remove(addr(h));
        rt.stats().inflated(InflationCause::IdentityHash);
        Some(Some(p.hash))
    }

    /// `m` (named by `h`'s word) has no hash: it takes the one parked for `h` if that entry is
    /// live (its owner holds `m`: it inflated while the hash was parked), else `fresh()`
    /// (`None`: leave it without). Under the table's mutex: a monitor's hash is installed
    /// only there, so a parked hash and the monitor's never disagree.
    fn adopt_parked(
        rt: &Runtime<Self>,
        h: &LockWord,
        m: &FatMonitor,
        fresh: Option<&dyn Fn() -> u32>,
    ) -> u32 {
        rt.side_hashes().lock().adopt_into(
            rt.monitors(),
            addr(h),
            m,
            |p| p.loose || m.owner_raw() == p.owner,
            fresh,
        )
    }

    /// We hold `h` once now, after a decrement: if a hash was parked for it, inflate into the
    /// entry's monitor (it holds the hash) so that the header carries it.
    #[cold]
    #[inline(never)]
    fn settle_parked(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &LockWord) {
        let mut table = rt.side_hashes().lock();
        let Some((p, _)) = table.take_for_owner(rt.monitors(), addr(h), t.core_arc()) else {
            return;
        };
        let w = h.0.load(Ordering::Relaxed);
        debug_assert_eq!(w & LOCK_MASK, t.core().id_shifted16());
        // We hold the thin lock: only we write the word.
        h.0.store(
            SHAPE | (p.monitor.get() << INDEX_SHIFT) | (w & HOST_BITS_MASK),
            Ordering::Release,
        );
        rt.stats().inflated(InflationCause::IdentityHash);
    }

    /// Sets `mark` in the `look` of the thread with raw id `owner` (if it is attached); the
    /// caller holds the side table's mutex, under which owners clear their marks.
    fn mark(rt: &Runtime<Self>, owner: u32, mark: u32) {
        if let Some(cx) = ThreadId::from_raw(owner).and_then(|id| rt.threads().get(id)) {
            cx.local().look.fetch_or(mark, Ordering::Relaxed);
        }
    }

    /// We released `h`, held once, and a hash may have been parked loose for it meanwhile
    /// (`LOOK_LOOSE`). We still borrow `h`, so its header cannot move yet: put the parked hash
    /// where it moves with the header — the free word goes to the entry's monitor, which
    /// holds the hash; a word inflated since takes it into its monitor — or, if another
    /// thread holds the word by now, hand the entry to that thread as a hasher parks one
    /// (mark, barrier, re-read: its release settles it). Then forget the mark if no loose
    /// entry of ours is left. All under the side table's mutex.
    #[cold]
    #[inline(never)]
    fn settle_loose(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &LockWord) {
        let (a, me) = (addr(h), t.core().raw_id());
        let mut table = rt.side_hashes().lock();
        if let Some(mut p) = table.get(a).filter(|p| p.loose && p.owner == me) {
            loop {
                let w = h.0.load(Ordering::Acquire);
                if w & SHAPE != 0 {
                    // Inflated since our release (an inflater looks here too, under this
                    // mutex: whoever comes first gives the monitor the parked hash).
                    table.remove(a);
                    rt.monitors().free(p.monitor);
                    if let Ok(m) = monitor_of(rt, w) {
                        if m.identity_hash().is_none() {
                            m.install_hash(p.hash);
                        }
                    }
                    break;
                }
                if w & LOCK_MASK == 0 {
                    let fat = SHAPE | (p.monitor.get() << INDEX_SHIFT) | (w & HOST_BITS_MASK);
                    if h.0
                        .compare_exchange(w, fat, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok()
                    {
                        table.remove(a);
                        rt.stats().inflated(InflationCause::IdentityHash);
                        break;
                    }
                    continue;
                }
                // Locked by another thread since our release: its release settles it.
                p.owner = owner_raw(w);
                table.insert(a, p);
                Self::mark(rt, p.owner, LOOK_LOOSE);
                hash::SideHashes::hasher_barrier(true);
                if held_by(h.0.load(Ordering::Acquire), p.owner) {
                    break;
                }
            }
        }
        if !table.owns_loose(me) {
            t.local().look.fetch_and(!LOOK_LOOSE, Ordering::Relaxed);
        }
    }

    /// `thin`'s unlock found its `ThinThread::look` set after storing `now`: a hash may be
    /// parked for a word we hold (nested, or once and loose), or the runtime's Dekker is
    /// symmetric. A release (`now` free) settles a loose entry of `h` (`settle_loose`); a
    /// nested unlock goes on in [`nested_look`](Self::nested_look).
    #[cold]
    #[inline(never)]
    fn unlock_looks(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &LockWord, now: u32) {
        if now & LOCK_MASK != 0 {
            Self::nested_look(rt, t, h, now);
        } else if t.local().look.load(Ordering::Relaxed) & LOOK_LOOSE != 0 {
            Self::settle_loose(rt, t, h);
        }
    }

    /// `thin`'s nested unlock found its `ThinThread::look` set: a hash may be parked for a
    /// word we hold nested, or the runtime's Dekker is symmetric. `now` is the word our
    /// unlock just stored. Down to one level (our next unlock may be a fast path, which
    /// looks at nothing but the word and this mark), settle a hash parked meanwhile (hash.rs),
    /// as `thin-seed` does in `exit_slow`; then, in an asymmetric runtime, forget the mark if
    /// no entry of ours is left — under the table's mutex, where hashers set it.
    fn nested_look(rt: &Runtime<Self>, t: &ThreadContext<Self>, h: &LockWord, now: u32) {
        let asymmetric = *rt.state();
        if !asymmetric {
            // The owner's half of the symmetric Dekker, between our store and our look.
            crate::sync::fence(Ordering::SeqCst);
        }
        if now & COUNT_MASK == 0 && rt.side_hashes().may_hold_any() {
            Self::settle_parked(rt, t, h);
        }
        if asymmetric {
            let table = rt.side_hashes().lock();
            if !table.owns_any(t.core().raw_id()) {
                t.local().look.fetch_and(!LOOK_PARKED, Ordering::Relaxed);
            }
        }
    }

    /// `w`: `h` held once by another thread. If that thread is blocked in objmon (claimed
    /// here, so that it cannot leave the state meanwhile) or detached, inflate the lock on its
    /// behalf with a monitor holding the hash: `Ok(true)`, look again. `Ok(false)`: it runs.
    fn inflate_for_blocked_owner(
        rt: &Runtime<Self>,
        h: &LockWord,
        w: u32,
        fresh: Option<&dyn Fn() -> u32>,
        cause: InflationCause,
    ) -> Result<bool, MonitorError> {
        let owner = owner_raw(w);
        let cx = rt
            .threads()
            .owner_context(owner, || h.0.load(Ordering::SeqCst) == w)?;
        // No context: the id was retired with this lock held (handle.rs); it never runs again.
        let claim = match &cx {
            None => None,
            Some(cx) => {
                let s = &cx.local().state;
                match s.compare_exchange(BLOCKED, CLAIMED, Ordering::SeqCst, Ordering::SeqCst) {
                    Ok(_) => Some(s),
                    Err(EXITED) => None,
                    Err(_) => return Ok(false),
                }
            }
        };
        let r = (|| {
            let idx = rt.monitors().allocate()?;
            rt.monitors().bind(idx, addr(h));
            let m = rt.monitors().get(idx);
            m.enter_inflated_for(owner, thin_locks(w))?;
            if let Some(f) = fresh {
                m.install_hash(f());
            }
            // The owner writes nothing while blocked; lockers and other hashers CAS too.
            if h.0
                .compare_exchange(
                    w,
                    SHAPE | (idx.get() << INDEX_SHIFT) | (w & HOST_BITS_MASK),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                rt.stats().inflated(cause);
                // A hash parked while it held `h` nested goes into the monitor, as at the
                // owner's own inflation.
                if m.identity_hash().is_none() && rt.side_hashes().owner_must_look(*rt.state()) {
                    Self::adopt_parked(rt, h, m, None);
                }
            } else {
                m.abandon_fresh();
                rt.monitors().free(idx);
            }
            Ok(true)
        })();
        if let Some(s) = claim {
            s.store(BLOCKED, Ordering::SeqCst);
        }
        r
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::vm::Runtime;

    fn parts(w: u32) -> (u32, u32, u32, u32) {
        (
            w >> 31,
            (w & OWNER_MASK) >> OWNER_SHIFT,
            (w & COUNT_MASK) >> COUNT_SHIFT,
            w & 0xff,
        )
    }

    /// Seed 000 §2.3: "When the object is locked, the count field represents the number of
    /// locks minus one"; unlocked, the whole lock field is 0.
    #[test]
    fn count_field_is_locks_minus_one() {
        let rt = Runtime::<Thin>::with_defaults();
        let me = rt.attach().unwrap();
        let h = LockWord::new(0x5a);
        assert_eq!(h.raw(), 0x5a);
        let mut gs = Vec::new();
        for locks in 1..=256u32 {
            gs.push(me.enter(&h).unwrap());
            assert_eq!(
                parts(h.raw()),
                (0, u32::from(me.id().get()), locks - 1, 0x5a)
            );
        }
        drop(gs);
        assert_eq!(h.raw(), 0x5a, "unlocked: lock field 0, host bits kept");
    }

    /// §2.3: "excessive" nesting is 257 — the 257th lock inflates, carrying the count over.
    #[test]
    fn lock_257_inflates_and_stays_fat() {
        let rt = Runtime::<Thin>::with_defaults();
        let me = rt.attach().unwrap();
        let h = LockWord::new(0xa5);
        let mut gs: Vec<_> = (0..256).map(|_| me.enter(&h).unwrap()).collect();
        assert_eq!(h.raw() >> 31, 0);
        gs.push(me.enter(&h).unwrap());
        assert_eq!(h.raw() >> 31, 1, "shape bit set");
        assert_eq!(h.raw() & 0xff, 0xa5);
        assert_eq!(me.lock_count(&h), 257);
        assert_eq!(rt.stats_snapshot().inflations_recursion, 1);
        drop(gs);
        // §2.3: "Once an object's lock is inflated, it remains inflated".
        assert_eq!(h.raw() >> 31, 1);
        assert_eq!(rt.owner_of(&h), None);
        drop(me.enter(&h).unwrap());
        assert_eq!(rt.stats_snapshot().inflations(), 1);
    }

    /// §2.3.4: a contender inflates after the owner releases; host bits survive.
    #[test]
    fn contention_inflates() {
        let rt = Runtime::<Thin>::with_defaults();
        let h = LockWord::new(0x3c);
        let me = rt.attach().unwrap();
        let g = me.enter(&h).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                let other = rt.attach().unwrap();
                drop(other.enter(&h).unwrap());
            });
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert_eq!(
                h.raw() >> 31,
                0,
                "the contender never writes an owned thin lock"
            );
            drop(g);
        });
        assert_eq!(h.raw() >> 31, 1);
        assert_eq!(h.raw() & 0xff, 0x3c);
        assert_eq!(rt.stats_snapshot().inflations_contention, 1);
    }

    /// A contender of an inflated lock held until it sleeps in it
    /// (`enter_fat_contended`: `spin_enter`, then `FatMonitor::enter_spun`, which does not
    /// spin again) and gets it at the release; with profiling on (`spin_enter` does not
    /// spin, `enter_spun` does), that enter is profiled once.
    #[test]
    fn inflated_contender_sleeps_then_enters_and_is_profiled() {
        for profiling in [false, true] {
            let rt = Runtime::<Thin>::new(Config {
                profiling,
                ..Config::default()
            });
            let h = LockWord::new(0);
            let me = rt.attach().unwrap();
            me.enter(&h).unwrap().notify().unwrap();
            assert_eq!(h.raw() >> 31, 1, "inflated by notify");
            let g = me.enter(&h).unwrap();
            std::thread::scope(|s| {
                s.spawn(|| {
                    let other = rt.attach().unwrap();
                    drop(other.enter(&h).unwrap());
                });
                // Released only once the contender sleeps in the monitor's entry queue.
                let m = monitor_of(&rt, h.raw()).unwrap();
                while !m.system_lock().has_waiters() {
                    std::thread::yield_now();
                }
                drop(g);
            });
            let enters: u64 = rt
                .contention_profile()
                .iter()
                .map(|p| p.contended_enters)
                .sum();
            assert_eq!(enters, u64::from(profiling));
            assert_eq!(rt.owner_of(&h), None);
        }
    }

    /// wait and notify inflate (a thin lock has no wait set), keeping the count.
    #[test]
    fn wait_inflates_with_count() {
        let rt = Runtime::<Thin>::with_defaults();
        let me = rt.attach().unwrap();
        let h = LockWord::new(0);
        let _a = me.enter(&h).unwrap();
        let b = me.enter(&h).unwrap();
        b.notify().unwrap();
        assert_eq!(h.raw() >> 31, 1);
        assert_eq!(me.lock_count(&h), 2);
        assert_eq!(rt.stats_snapshot().inflations_wait_notify, 1);
    }

    /// Hashing a free object inflates it with one CAS (the monitor holds the hash, host bits
    /// stay); a lock another thread holds *nested* parks the hash with a monitor of its own,
    /// and the owner's decrement to one level inflates into that monitor, so that the hash is
    /// in the header before the owner's plain-store unlock can free it.
    #[test]
    fn hash_inflates_or_parks_until_the_owner_settles() {
        let rt = Runtime::<Thin>::with_defaults();
        let me = rt.attach().unwrap();
        let h = LockWord::new(0x5a);
        let v = me.identity_hash(&h).unwrap();
        assert_eq!(h.raw() >> 31, 1, "inflated to hold the hash");
        assert_eq!(h.raw() & 0xff, 0x5a);
        assert_eq!(monitor_of(&rt, h.raw()).unwrap().identity_hash(), Some(v));
        drop(me.enter(&h).unwrap());
        assert_eq!(me.identity_hash(&h), Ok(v));
        assert_eq!(rt.stats_snapshot().inflations_identity_hash, 1);

        let h2 = LockWord::new(0xa5);
        let g = me.enter(&h2).unwrap();
        let g2 = me.enter(&h2).unwrap();
        let w = std::thread::scope(|s| {
            s.spawn(|| rt.attach().unwrap().identity_hash(&h2).unwrap())
                .join()
                .unwrap()
        });
        assert_eq!(
            h2.raw() >> 31,
            0,
            "held by another thread: the word is not touched"
        );
        let p = rt.side_hashes().lock().get(addr(&h2)).expect("parked");
        assert_eq!((p.hash, p.owner), (w, me.context().core().raw_id()));
        assert_eq!(rt.peek_identity_hash(&h2), Some(w));
        drop(g2);
        assert_eq!(h2.raw() >> 31, 1, "settled by the owner's decrement");
        assert!(rt.side_hashes().lock().is_empty(), "moved into the monitor");
        assert_eq!(me.lock_count(&h2), 1);
        drop(g);
        assert_eq!(h2.raw() & 0xff, 0xa5);
        assert_eq!(rt.owner_of(&h2), None);
        assert_eq!(me.identity_hash(&h2), Ok(w));
        assert_eq!(rt.peek_identity_hash(&h2), Some(w));
    }

    /// A lock another thread holds once: the hasher waits for the release (the owner's
    /// unlock may be the fast path, which only looks at the word), unless the owner is
    /// blocked in objmon, where the hasher inflates for it.
    #[test]
    fn hash_of_a_single_hold_waits_or_inflates_for_a_blocked_owner() {
        let rt = Runtime::<Thin>::with_defaults();
        let me = rt.attach().unwrap();
        let (o, p) = (LockWord::new(0x11), LockWord::new(0x22));
        let g = me.enter(&o).unwrap();
        let gp = me.enter(&p).unwrap();
        std::thread::scope(|s| {
            let other = s.spawn(|| {
                let b = rt.attach().unwrap();
                let g = b.enter(&o).unwrap();
                let v = b.identity_hash(&p).unwrap();
                drop(g);
                v
            });
            // `other` blocks on `o` until we release it; hashing `p` (held once by us)
            // meanwhile must wait for us, so release `o` while still holding `p`, which
            // the hasher then waits for.
            drop(g);
            std::thread::sleep(std::time::Duration::from_millis(5));
            drop(gp);
            let v = other.join().unwrap();
            assert_eq!(me.identity_hash(&p), Ok(v));
        });
        // An owner blocked in objmon: `b` holds `o` once and blocks on `p`, which we hold;
        // our hash of `o` inflates `o` for it.
        let gp = me.enter(&p).unwrap();
        let o2 = LockWord::new(0x33);
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::channel();
            let (rt, o2, p) = (&rt, &o2, &p);
            s.spawn(move || {
                let b = rt.attach().unwrap();
                let g = b.enter(o2).unwrap();
                tx.send(()).unwrap();
                drop(b.enter(p).unwrap());
                assert_eq!(b.lock_count(o2), 1);
                drop(g);
            });
            rx.recv().unwrap();
            let v = me.identity_hash(o2).unwrap();
            assert_eq!(o2.raw() >> 31, 1, "inflated for its owner");
            assert_eq!(o2.raw() & 0xff, 0x33);
            drop(gp);
            assert_eq!(me.identity_hash(o2), Ok(v));
        });
        assert_eq!(rt.owner_of(&o2), None);
    }

    /// Issue 11 item 17: a contender that has waited long for a thin lock whose owner is
    /// blocked in objmon inflates it for that owner and queues on the monitor (where the
    /// hand-off bounds overtaking) instead of spinning until the owner comes back.
    #[test]
    fn starving_contender_inflates_for_a_blocked_owner() {
        let rt = Runtime::<Thin>::with_defaults();
        let me = rt.attach().unwrap();
        let (o, p) = (LockWord::new(0x44), LockWord::new(0));
        let gp = me.enter(&p).unwrap();
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::channel();
            let (rt, o, p) = (&rt, &o, &p);
            let owner = s.spawn(move || {
                let a = rt.attach().unwrap();
                let g = a.enter(o).unwrap();
                tx.send(a.id()).unwrap();
                drop(a.enter(p).unwrap()); // blocks: we hold `p`
                assert_eq!(a.lock_count(o), 1);
                drop(g);
            });
            let owner_id = rx.recv().unwrap();
            let contender = s.spawn(move || {
                let b = rt.attach().unwrap();
                drop(b.enter(o).unwrap());
            });
            let since = std::time::Instant::now();
            while o.raw() >> 31 == 0 && since.elapsed().as_secs() < 20 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            assert_eq!(o.raw() >> 31, 1, "still thin while its owner is blocked");
            assert_eq!(o.raw() & 0xff, 0x44);
            assert_eq!(rt.owner_of(o), Some(owner_id), "inflated for its owner");
            drop(gp);
            owner.join().unwrap();
            contender.join().unwrap();
        });
        assert_eq!(rt.owner_of(&o), None);
        assert_eq!(
            rt.stats_snapshot().inflations_contention,
            2,
            "`o` for its owner, `p`"
        );
    }

    /// Issue 13: the record of the last fast lock (`ThinThread::last`) names a header a
    /// moving GC moved while held once: after `relocate` the old address may hold another
    /// object, which our exit must not unlock blind; the moved header unlocks (by its load /
    /// compare / store).
    #[test]
    fn relocate_clears_the_record_of_a_moved_held_object() {
        let rt = Runtime::<Thin>::with_defaults();
        let me = rt.attach().unwrap();
        let old = LockWord::new(0x44);
        let new = LockWord::new(0);
        // SAFETY: our own context; the move while held is reported with `relocate`, at a
        // test's safepoint (no other thread in objmon) after a verbatim copy.
        unsafe {
            Thin::enter(&rt, me.context(), &old).unwrap();
            assert_eq!(
                me.context().local().last.load(Ordering::Relaxed),
                addr(&old)
            );
            new.0.store(old.raw(), Ordering::Relaxed);
            rt.relocate(&old, &new);
        }
        assert_eq!(me.context().local().last.load(Ordering::Relaxed), 0);
        // The old address gets a new object, which another thread locks.
        old.0.store(0x55, Ordering::Relaxed);
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::channel();
            let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
            let (rt, old) = (&rt, &old);
            s.spawn(move || {
                let other = rt.attach().unwrap();
                let g = other.enter(old).unwrap();
                tx.send(other.id()).unwrap();
                go_rx.recv().unwrap();
                drop(g);
            });
            let other = rx.recv().unwrap();
            // SAFETY: our own context; both words live for the calls.
            unsafe {
                assert_eq!(
                    Thin::exit(rt, me.context(), old),
                    Err(MonitorError::IllegalMonitorState)
                );
                assert_eq!(
                    rt.owner_of(old),
                    Some(other),
                    "the other thread's lock stays"
                );
                Thin::exit(rt, me.context(), &new).unwrap();
            }
            go_tx.send(()).unwrap();
        });
        assert_eq!(new.raw(), 0x44);
        assert_eq!(old.raw(), 0x55);
    }

    /// Issue 13: the record follows the thread's last fast lock and is forgotten by a nested
    /// lock, a blind unlock, and blocking; `thin-seed` never records.
    #[test]
    fn the_record_of_the_last_fast_lock() {
        let rt = Runtime::<Thin>::with_defaults();
        let me = rt.attach().unwrap();
        let last = || me.context().local().last.load(Ordering::Relaxed);
        let (a, b) = (LockWord::new(0x11), LockWord::new(0x22));
        let ga = me.enter(&a).unwrap();
        assert_eq!(last(), addr(&a));
        assert_eq!(me.context().local().host.load(Ordering::Relaxed), 0x11);
        let gb = me.enter(&b).unwrap();
        assert_eq!(last(), addr(&b));
        drop(ga); // not the record: load / compare / store
        assert_eq!((last(), a.raw()), (addr(&b), 0x11));
        let gb2 = me.enter(&b).unwrap();
        assert_eq!(last(), 0, "nested: forgotten");
        drop(gb2);
        drop(gb);
        assert_eq!(b.raw(), 0x22);
        drop(me.enter(&a).unwrap());
        assert_eq!((last(), a.raw()), (0, 0x11), "blind unlock: forgotten");
        let _g = me.enter(&a).unwrap();
        Thin::block(me.context());
        assert_eq!(last(), 0, "blocked: forgotten");
        Thin::unblock(me.context());

        let rt = Runtime::<ThinSeed>::with_defaults();
        let me = rt.attach().unwrap();
        drop(me.enter(&b).unwrap());
        let _g = me.enter(&b).unwrap();
        assert_eq!(me.context().local().last.load(Ordering::Relaxed), 0);
    }

    /// The nested lock's hint (`enter_hinted` → the guard → `exit_hinted`): the unlock of a
    /// guard whose lock was nested stores the word that lock found — and only if the word is
    /// still that plus one. Guards dropped out of order, and a wait's inflation under a
    /// nested guard, leave a hint that no longer matches: those unlocks must take the
    /// general path (storing the hint there would undo the wrong level, or write a thin
    /// word over a fat one).
    #[test]
    fn the_nested_hint() {
        let rt = Runtime::<Thin>::with_defaults();
        let me = rt.attach().unwrap();
        let cx = me.context();
        let word = Thin::handle_word(cx);
        let mine = u32::from(me.id().get()) << OWNER_SHIFT;
        let h = LockWord::new(0x5a);
        // SAFETY (all `unsafe` below): our own context, outside `in_native`; `h` outlives
        // every hold, each released before the end.
        let first = unsafe { Thin::enter_hinted(&rt, cx, word, &h) }.unwrap();
        assert_eq!(first, 0, "a fresh CAS gives no hint");
        let hint = unsafe { Thin::enter_hinted(&rt, cx, word, &h) }.unwrap();
        assert_eq!(
            hint,
            HINT_NESTED | u64::from(0x5a | mine),
            "the word as found"
        );
        assert_eq!(h.raw(), 0x5a | mine | COUNT_ONE);
        unsafe { Thin::exit_hinted(&rt, cx, word, hint, &h) }.unwrap();
        assert_eq!(h.raw(), 0x5a | mine);
        unsafe { Thin::exit_hinted(&rt, cx, word, first, &h) }.unwrap();
        assert_eq!(h.raw(), 0x5a);

        // Out of order through guards: the outer guard (no hint) takes a level off, count 2
        // → 1; then each nested guard's hint (the inner's count 1, the middle's count 0)
        // expects one more than the word holds, and its unlock is the general one.
        let g0 = me.enter(&h).unwrap();
        let g1 = me.enter(&h).unwrap();
        let g2 = me.enter(&h).unwrap();
        assert_eq!(h.raw(), 0x5a | mine | (2 * COUNT_ONE));
        drop(g0);
        assert_eq!(h.raw(), 0x5a | mine | COUNT_ONE);
        drop(g2); // hint: count 1 found, expects 2, finds 1: general unlock → count 0
        assert_eq!(h.raw(), 0x5a | mine);
        assert_eq!(me.lock_count(&h), 1);
        drop(g1); // hint: count 0 found, expects 1, finds 0: general unlock → free
        assert_eq!(h.raw(), 0x5a);
        assert_eq!(rt.owner_of(&h), None);

        // A wait's inflation under a nested guard: the hint meets a fat word.
        let g0 = me.enter(&h).unwrap();
        let g1 = me.enter(&h).unwrap();
        g1.notify().unwrap();
        assert_eq!(h.raw() >> 31, 1, "inflated");
        drop(g1);
        assert_eq!(me.lock_count(&h), 1);
        drop(g0);
        assert_eq!(rt.owner_of(&h), None);
        std::thread::scope(|s| {
            s.spawn(|| drop(rt.attach().unwrap().enter(&h).unwrap()));
        });
        assert_eq!(h.raw() & 0xff, 0x5a);
    }

    /// A parked hash follows its object when a moving GC reports the move.
    #[test]
    fn parked_hash_is_relocated() {
        let rt = Runtime::<Thin>::with_defaults();
        let me = rt.attach().unwrap();
        let old = LockWord::new(0x11);
        // SAFETY (the direct calls): `me` is this thread's handle; the move of `old` while
        // held is reported with `relocate`, as the contract asks.
        unsafe {
            Thin::enter(&rt, me.context(), &old).unwrap();
            Thin::enter(&rt, me.context(), &old).unwrap();
        }
        let v = std::thread::scope(|s| {
            s.spawn(|| rt.attach().unwrap().identity_hash(&old).unwrap())
                .join()
                .unwrap()
        });
        let new = LockWord::new(0);
        new.0.store(old.raw(), Ordering::Relaxed); // the GC copies the word verbatim
                                                   // SAFETY: a test's safepoint: no other thread is inside objmon, and the word was
                                                   // copied verbatim.
        unsafe { rt.relocate(&old, &new) };
        assert_eq!(rt.peek_identity_hash(&new), Some(v));
        assert_eq!(rt.peek_identity_hash(&old), None);
        unsafe {
            Thin::exit(&rt, me.context(), &new).unwrap();
            Thin::exit(&rt, me.context(), &new).unwrap();
        }
        assert_eq!(me.identity_hash(&new), Ok(v));
        assert_eq!(new.raw() & 0xff, 0x11);
        assert_eq!(rt.owner_of(&new), None);
    }
}
