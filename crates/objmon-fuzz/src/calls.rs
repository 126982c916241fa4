//! The call vocabulary: one [`Op`] of a step, sent to its worker, its answer checked against
//! the model. Locks (by guard or unstructured, with the relock panic of a non-reentrant
//! surface), try-locks with and without a timeout, unlocks and forgotten guards, identity
//! hashes and peeks (with each protocol's documented loose-hash limit), queries, polls of
//! the interrupt flag, and bursts; waits, notifies and interrupts go to `phases.rs`.
//!
//! Invariant: a call the model says returns at once is answered within
//! [`HANG`](crate::driver::HANG) or fails; an answer the model does not allow is an `Err`
//! naming the object and the threads.

use crate::driver::{fail, Driver, R, RECORDS_BY_ADDRESS};
use crate::kit::Kit;
use crate::model::Busy;
use crate::step::{NativeOp, Op};
use crate::worker::{Act, Out};
use objmon::MonitorError;
use std::sync::atomic::Ordering;

/// The protocols whose owner's release does not settle a hash parked *loose* (the hasher
/// waited `HASH_WAIT_BOUND` for an owner holding the object once): a header moved between
/// that release and the next hash call loses or inherits the hash (`docs/soundness.md` §6,
/// "A hash under a single running hold"). The model accepts that, and only that, for an
/// object hashed while another thread held it. (`thin` settles it at the release.)
const LOOSE_HASH_LIMIT: [&str; 9] = [
    "thin-seed",
    "biased",
    "biased-seed",
    "fable",
    "fable-seed",
    "biased-rseq",
    "fable-rseq",
    "biased-signal",
    "fable-signal",
];

/// Calls made inside `in_native`, and of them locks refused there as documented, in this
/// process.
pub(crate) static NATIVE_CALLS: [std::sync::atomic::AtomicU64; 2] =
    [const { std::sync::atomic::AtomicU64::new(0) }; 2];

/// What the panic of a non-reentrant surface's lock by its holder says (`RawMonitor`).
pub(crate) const RELOCK_PANIC: &str = "locked again by the thread that holds it";

/// Locks by the holder on a non-reentrant surface whose documented panic was seen, in this
/// process.
pub(crate) static RELOCKS_CHECKED: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(0);

/// The protocols whose owner's release settles a hash parked loose (`thin`, with
/// `membarrier`): the hash is parked by address until that release, so an owner that never
/// releases (its guard forgotten) leaves the entry there, and a move of the header before the
/// next hash call leaves the moved object without it: its `peek_identity_hash` may answer
/// `None`, and an object arriving at the old address may peek it, until their next hash
/// calls (`docs/soundness.md` §6). The hash itself never changes: a hash chosen under a hold
/// of a thread that once had one parked is pinned to the header's host bits, so the moved
/// object's next hash call draws the same value; the model checks that strictly.
const LOOSE_UNTIL_RELEASE: [&str; 1] = ["thin"];

impl<K: Kit> Driver<K> {
    pub(crate) fn op(&mut self, w: usize, op: Op) -> R {
        if let Op::Interrupt(t) = op {
            return self.interrupt(t as usize % self.threads.len());
        }
        if let Op::Native(n) = op {
            return self.in_native(w, n);
        }
        let slot = match op {
            Op::Lock(s) | Op::TryLock(s) | Op::TryLockFor(s, _) | Op::Wait(s, _) => Some(s),
            Op::Notify(s) | Op::NotifyAll(s) | Op::Query(s) | Op::Hash(s) | Op::Peek(s) => Some(s),
            Op::Enter(s) | Op::Exit(s) | Op::Burst(s, _) => Some(s),
            _ => None,
        };
        if let Some(s) = slot {
            let l = self.slot_of[s as usize % self.slot_of.len()];
            if self.lenient_moved && self.m.objs[l].tainted {
                return Ok(());
            }
        }
        if self.m.workers[w].busy != Busy::Idle {
            return Ok(());
        }
        let me = self.m.workers[w].ident;
        let n = self.slot_of.len();
        let sl = |s: u8| s as usize % n;
        match op {
            Op::Lock(s) | Op::Enter(s) => {
                let s = sl(s);
                let l = self.slot_of[s];
                let u = matches!(op, Op::Enter(_));
                if u && K::SURFACE != "vm" {
                    return Ok(());
                }
                let a = if u {
                    Act::Enter { s, l }
                } else {
                    Act::Lock { s, l }
                };
                if self.m.objs[l].tainted && self.m.objs[l].owner == me {
                    // Moved while held: only what the others see is checked.
                } else if !K::REENTRANT && self.m.objs[l].owner == me {
                    // Not reentrant: the documented answer is a panic that takes nothing
                    // ("a panic says what went wrong": the message must say so).
                    let a = Act::Relock { s, l };
                    match self.call(w, a)? {
                        Out::Panicked(msg) if msg.contains(RELOCK_PANIC) => {
                            RELOCKS_CHECKED.fetch_add(1, Ordering::Relaxed);
                        }
                        o => {
                            let surface = K::SURFACE;
                            return fail(format!(
                                "T{me} locked #{l} (slot {s}), which it holds, on the \
                                 non-reentrant {surface} surface: expected the documented \
                                 panic (\"{RELOCK_PANIC}\"), got {o:?}"
                            ));
                        }
                    }
                } else if self.m.lock_is_immediate(w, l) {
                    match self.call(w, a)? {
                        Out::Done => self.locked(w, l, u),
                        Out::Err(e) => return fail(format!("{a:?} by T{me} failed: {e:?}")),
                        o => return fail(format!("{a:?}: unexpected {o:?}")),
                    }
                } else if self.m.lock_may_block(l) {
                    self.send(w, a)?;
                    self.m.workers[w].busy = Busy::Acquiring { l, u };
                }
            }
            Op::TryLock(s) | Op::TryLockFor(s, _) => {
                let s = sl(s);
                let l = self.slot_of[s];
                let ms = if let Op::TryLockFor(_, ms) = op {
                    ms as u64
                } else {
                    0
                };
                self.try_lock(w, s, l, ms)?;
            }
            Op::Unlock(g) => {
                let gs = &self.m.workers[w].guards;
                if gs.is_empty() {
                    return Ok(());
                }
                let gi = gs.len() - 1 - g as usize % gs.len();
                let l = gs[gi];
                self.call(w, Act::Unlock { gi })?;
                self.m.workers[w].guards.remove(gi);
                self.m.release(l);
            }
            Op::Forget(g) => {
                let gs = &self.m.workers[w].guards;
                if gs.is_empty() {
                    return Ok(());
                }
                let gi = gs.len() - 1 - g as usize % gs.len();
                let l = gs[gi];
                if self.m.waiters(l).next().is_some() || self.m.blocked(l).next().is_some() {
                    return Ok(()); // they would block for good
                }
                if self.sh.hostile.is_some() && K::ID_BUDGET.is_none() && !self.keeps_slot {
                    // The case's runtime, which has a sink, stays alive for good from now.
                    if !crate::sink::keep_slot(K::PROTOCOL) {
                        return Ok(());
                    }
                    self.keeps_slot = true;
                }
                if let Some(budget) = K::ID_BUDGET {
                    // This thread's id is retired for good from its first forgotten guard on a
                    // process-wide runtime: within the process's budget, or no forget.
                    if !self.m.workers[w].retires_id {
                        if !crate::kit::retire_id(K::PROTOCOL, budget) {
                            return Ok(());
                        }
                        self.m.workers[w].retires_id = true;
                    }
                }
                self.call(w, Act::Forget { gi })?;
                self.m.workers[w].guards.remove(gi);
                self.m.objs[l].forgotten += 1;
                self.m.forgot_by_address |= RECORDS_BY_ADDRESS.contains(&K::PROTOCOL);
            }
            Op::Wait(s, t) => self.wait(w, sl(s), t)?,
            Op::Notify(s) | Op::NotifyAll(s) => {
                let s = sl(s);
                let l = self.slot_of[s];
                let all = matches!(op, Op::NotifyAll(_));
                self.notify(w, s, l, all)?;
            }
            Op::Query(s) => self.query(w, sl(s))?,
            Op::Hash(s) => {
                let s = sl(s);
                let l = self.slot_of[s];
                let me = self.m.workers[w].ident;
                let held_by_other = self.m.objs[l].count > 0 && self.m.objs[l].owner != me;
                let loose_before = self.m.objs[l].loose || self.m.objs[l].inherit;
                match self.call(w, Act::Hash { s })? {
                    // The documented limit (`LOOSE_HASH_LIMIT`): a hash parked loose and
                    // lost by a move is replaced by a new one, or one parked for the object
                    // that was at this address is adopted; the object keeps that one.
                    Out::Hash(Ok(h)) if loose_before => {
                        let settles = LOOSE_UNTIL_RELEASE.contains(&K::PROTOCOL);
                        if let Some(x) = self.m.objs[l].hash.filter(|&x| settles && x != h) {
                            return fail(format!(
                                "identity hash changed: #{l} (now slot {s}) hashed {x:#x} before, {h:#x} now (moved while a forgotten hold kept its parked hash at the old address)"
                            ));
                        }
                        self.m.objs[l].hash = Some(h);
                        self.m.objs[l].loose = held_by_other && !settles;
                        self.m.objs[l].loose_settles = held_by_other && settles;
                        self.m.objs[l].inherit = false;
                        self.m.loose_parked |= held_by_other && !settles;
                    }
                    Out::Hash(Ok(h)) => match self.m.objs[l].hash {
                        _ if held_by_other && LOOSE_HASH_LIMIT.contains(&K::PROTOCOL) => {
                            self.m.objs[l].hash = Some(h);
                            self.m.objs[l].loose = true;
                            self.m.loose_parked = true;
                        }
                        Some(x) if x != h => {
                            return fail(format!(
                                "identity hash changed: #{l} (now slot {s}) hashed {x:#x} before, {h:#x} now"
                            ))
                        }
                        // `thin` settles a loose hash at the owner's release; until then it
                        // is parked by address, and a move under a forgotten guard leaves it
                        // behind for `peek` (`LOOSE_UNTIL_RELEASE`).
                        _ if held_by_other && LOOSE_UNTIL_RELEASE.contains(&K::PROTOCOL) => {
                            self.m.objs[l].hash = Some(h);
                            self.m.objs[l].loose_settles = true;
                        }
                        _ => self.m.objs[l].hash = Some(h),
                    },
                    Out::Hash(Err(MonitorError::MonitorTableFull)) | Out::Unsupported => {}
                    o => return fail(format!("identity_hash of #{l}: {o:?}")),
                }
            }
            Op::Peek(s) => {
                let s = sl(s);
                let l = self.slot_of[s];
                if let Out::Peek(p) = self.call(w, Act::Peek { s })? {
                    let want = self.m.objs[l].hash;
                    // `stack` keeps a stack-locked object's hash in its owner's lock record,
                    // which only a safepoint may read: `peek` answers `None` meanwhile
                    // (documented on `Stack`'s `peek_identity_hash`).
                    let in_record = K::PROTOCOL == "stack" && self.m.objs[l].count > 0;
                    // Under the loose-hash limit, a hash parked by address may be lost by a
                    // move or seen by the object moved to that address.
                    let loose = self.m.objs.iter().any(|o| o.loose) || self.m.objs[l].inherit;
                    if p != want && !(in_record && p.is_none()) && !loose {
                        return fail(format!(
                            "peek_identity_hash of #{l} (slot {s}) is {p:x?}, but its hash is {want:x?}{}",
                            if want.is_none() { " (never asked: inherited from an object that was at this address?)" } else { "" }
                        ));
                    }
                }
            }
            Op::Exit(s) => {
                let s = sl(s);
                let l = self.slot_of[s];
                let held = self.m.workers[w].unstructured_on(l) > 0;
                match (self.call(w, Act::Exit { s, l, held })?, held) {
                    (Out::Done, true) => {
                        self.m.workers[w].add_unstructured(l, -1);
                        self.m.release(l);
                    }
                    (Out::Err(MonitorError::IllegalMonitorState) | Out::Unsupported, false) => {}
                    (o, _) => {
                        return fail(format!(
                            "monitor_exit of #{l} by T{me} holding {} unstructured level(s): {o:?}",
                            self.m.workers[w].unstructured_on(l)
                        ))
                    }
                }
            }
            Op::Interrupted => {
                if let Out::Flag(f) = self.call(w, Act::Interrupted)? {
                    let want = std::mem::take(&mut self.m.workers[w].interrupt);
                    if f != want {
                        return fail(format!(
                            "interrupted() of T{me} is {f}, the model says {want}"
                        ));
                    }
                }
            }
            Op::Poll => {
                self.call(w, Act::Poll)?;
            }
            Op::Burst(s, k) => {
                let s = sl(s);
                let l = self.slot_of[s];
                let o = &self.m.objs[l];
                if o.count != 0 || self.m.waiters(l).next().is_some() {
                    return Ok(());
                }
                let n = k as u32 * 8;
                self.send(w, Act::Burst { s, l, n })?;
                self.m.objs[l].bursts += n as u64;
                self.m.workers[w].busy = Busy::Burst { l };
            }
            Op::Interrupt(_) | Op::Native(_) => unreachable!(),
        }
        Ok(())
    }

    /// `n` inside `in_native`: as outside, except that the biased protocols refuse a lock
    /// there with `Err(InNative)` and take nothing.
    fn in_native(&mut self, w: usize, n: NativeOp) -> R {
        if K::SURFACE != "vm" || self.m.workers[w].busy != Busy::Idle {
            return Ok(());
        }
        let refuses = K::PROTOCOL.starts_with("biased") || K::PROTOCOL.starts_with("fable");
        self.native = true;
        NATIVE_CALLS[0].fetch_add(1, Ordering::Relaxed);
        let r = match n {
            NativeOp::TryLock(s) if refuses => {
                let s = s as usize % self.slot_of.len();
                let l = self.slot_of[s];
                if self.lenient_moved && self.m.objs[l].tainted {
                    Ok(())
                } else {
                    match self.call(w, Act::TryLock { s, l, ms: 0 }) {
                        Ok(Out::Err(MonitorError::InNative)) => {
                            NATIVE_CALLS[1].fetch_add(1, Ordering::Relaxed);
                            Ok(())
                        }
                        Ok(o) => fail(format!(
                            "try_enter of #{l} (slot {s}) in native by T{}: {o:?}, expected the \
                             documented Err(InNative)",
                            self.m.workers[w].ident
                        )),
                        Err(e) => Err(e),
                    }
                }
            }
            n => self.op(w, n.op()),
        };
        self.native = false;
        r
    }

    fn try_lock(&mut self, w: usize, s: usize, l: usize, ms: u64) -> R {
        let me = self.m.workers[w].ident;
        let o = self.m.objs[l].clone();
        let want = o.owner == 0 || (o.owner == me && K::REENTRANT);
        let got = match self.call(w, Act::TryLock { s, l, ms })? {
            Out::Got(g) => g,
            o => return fail(format!("try_lock of #{l}: {o:?}")),
        };
        if !K::REENTRANT && o.owner == me {
            if got && !o.tainted {
                return fail(format!(
                    "a second guard: T{me}'s try_lock of #{l} (slot {s}), which it holds, \
                     succeeded on the non-reentrant {} surface (documented: `None`)",
                    K::SURFACE
                ));
            }
            // Moved while held through a forgotten guard: the owner's own view is not
            // checked (the forgotten guard gives no access any more).
            if got {
                self.locked(w, l, false);
            }
            return Ok(());
        }
        if got && !want {
            return fail(format!(
                "two owners: T{me}'s try_lock of #{l} (slot {s}) succeeded while T{} holds it \
                 ({} level(s), {} forgotten{})",
                o.owner,
                o.count,
                o.forgotten,
                if o.tainted { ", moved while held" } else { "" }
            ));
        }
        if !got && want {
            if o.owner == me {
                return fail(format!(
                    "T{me} holds #{l} but its reentrant try_lock failed"
                ));
            }
            // Free per the model: it must be acquirable, allowing for a busy back-off.
            match self.call(w, Act::TryLock { s, l, ms: 1000 })? {
                Out::Got(true) => {}
                _ => {
                    return fail(format!(
                        "#{l} (slot {s}) is free per the model (nobody holds it), but T{me} \
                         cannot lock it in 1 s{}",
                        if o.forgotten > 0 {
                            ""
                        } else {
                            " (a released lock stays held?)"
                        }
                    ))
                }
            }
        }
        if got || want {
            self.locked(w, l, false);
        }
        Ok(())
    }

    fn query(&mut self, w: usize, s: usize) -> R {
        let l = self.slot_of[s];
        let me = self.m.workers[w].ident;
        let o = self.m.objs[l].clone();
        let mine = o.owner == me;
        let Out::Query(holds, count, locked) = self.call(w, Act::Query { s })? else {
            return fail("query: unexpected answer");
        };
        let whose = if o.owner == 0 {
            "nobody".to_string()
        } else {
            format!("T{}", o.owner)
        };
        // Moved while held: the owner's own view is not checked, only the others'.
        let lenient = o.tainted && mine;
        if holds.is_some_and(|h| h != mine) && !lenient {
            let holds = holds.unwrap_or_default();
            return fail(format!(
                "holds_lock / is_owned_by_current_thread of #{l} (slot {s}) by T{me} is {holds}; \
                 the model says {whose} holds it ({} level(s))",
                o.count
            ));
        }
        if let Some(c) = count {
            let want = if mine { o.count } else { 0 };
            let ok = lenient || c == want;
            if !ok {
                return fail(format!(
                    "lock_count of #{l} by T{me} is {c}, the model says {want}"
                ));
            }
        }
        // The lightweight protocols' and `stack`'s `owner_of` answer `None` for an object
        // whose owner exited with a forgotten guard (their word names a lock stack entry or a
        // lock record, not a thread id; documented there).
        let anonymous_exited = (K::PROTOCOL.starts_with("lightweight") || K::PROTOCOL == "stack")
            && o.owner != 0
            && !self.m.workers.iter().any(|w| w.ident == o.owner);
        let excused = anonymous_exited && !locked;
        if locked != (o.count > 0) && !excused {
            return fail(format!(
                "is_locked / owner_of of #{l} (slot {s}) says {locked}; the model says {whose} holds it"
            ));
        }
        Ok(())
    }
}
