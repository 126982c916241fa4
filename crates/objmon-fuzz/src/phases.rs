//! The driver's blocking half: waits and notifies, interrupts, settling the workers the
//! model says must get a lock, bursts, and the end of a phase (every guard dropped, every
//! waiter rescued by a notifyAll, every phase handle dropped, exiting threads replaced).
//!
//! Invariant on return from [`Driver::settle`]: no object the model says is free has a
//! worker that must get it (a blocked locker, a notified or interrupted waiter), so the
//! model's answer to the next step does not depend on timing. On return from
//! [`Driver::end`]: no phase is open, so the slots may be taken mutably.

use crate::driver::{fail, Driver, HANG, R, RECORDS_BY_ADDRESS};
use crate::kit::Kit;
use crate::model::{Busy, WorkerModel};
use crate::worker::{Act, Cmd, Msg, Out};
use objmon::{MonitorError, WaitOutcome};
use std::time::{Duration, Instant};

/// `notify_one`s asked on the `lock_api` surface with two waiters or more, in this process.
pub(crate) static NOTIFY_ONE_OF_MANY: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(0);

impl<K: Kit> Driver<K> {
    pub(crate) fn wait(&mut self, w: usize, s: usize, t: Option<u8>) -> R {
        let l = self.slot_of[s];
        let me = self.m.workers[w].ident;
        let o = self.m.objs[l].clone();
        let ms = t.map(|m| m as u64);
        if o.owner != me {
            if K::SURFACE == "vm" {
                let a = Act::Wait {
                    s,
                    l,
                    gi: None,
                    ms: Some(1),
                    held: false,
                };
                match self.call(w, a)? {
                    Out::Waited(Err(MonitorError::IllegalMonitorState), _) => {}
                    o => {
                        return fail(format!(
                            "wait on #{l} by T{me}, who does not hold it: {o:?}"
                        ))
                    }
                }
            }
            return Ok(());
        }
        let gi = match K::WAIT_BY_GUARD {
            true => match self.m.workers[w].guard_on(l) {
                Some(i) => Some(i),
                None => return Ok(()),
            },
            false => None,
        };
        let contended = self.m.blocked(l).next().is_some() || !self.m.candidates(l).is_empty();
        // A waiter with forgotten levels takes them back when it returns, for good: it and
        // another waiter of `l` could leave each other blocked for good, by the schedule.
        let forgotten = self.m.forgotten_waiter(l, w)
            || (o.forgotten > 0 && self.m.waiters(l).next().is_some());
        if o.tainted || contended || forgotten {
            return Ok(());
        }
        let a = Act::Wait {
            s,
            l,
            gi,
            ms,
            held: true,
        };
        if self.m.workers[w].interrupt {
            self.m.workers[w].interrupt = false;
            return match self.call(w, a)? {
                Out::Waited(Err(MonitorError::Interrupted), _) => Ok(()),
                o => fail(format!(
                    "T{me} was interrupted before its wait on #{l}, which gave {o:?}"
                )),
            };
        }
        match ms {
            Some(ms) => match self.call(w, a)? {
                Out::Waited(Ok(WaitOutcome::TimedOut), el) => {
                    if el < Duration::from_millis(ms) {
                        return fail(format!(
                            "a wait returned early: T{me}'s wait({ms} ms) on #{l} timed out after {el:?}"
                        ));
                    }
                }
                Out::Waited(Ok(WaitOutcome::Notified), _) => self.spurious += 1,
                o => return fail(format!("T{me}'s wait({ms} ms) on #{l}: {o:?}")),
            },
            None => {
                // Some other worker must stay free to notify (or the phase end to rescue).
                let idle = (0..self.threads.len())
                    .filter(|&x| x != w && self.m.workers[x].busy == Busy::Idle);
                if idle.count() == 0 {
                    return Ok(());
                }
                self.send(w, a)?;
                self.m.workers[w].busy = Busy::Waiting {
                    l,
                    count: o.count,
                    forgotten: o.forgotten,
                    interrupted: false,
                };
                let ob = &mut self.m.objs[l];
                (ob.owner, ob.count, ob.forgotten) = (0, 0, 0);
                self.await_release(w, s, l)?;
            }
        }
        Ok(())
    }

    /// Waits until another worker sees `l` unlocked (the waiter `w` gave it up).
    fn await_release(&mut self, w: usize, s: usize, l: usize) -> R {
        let Some(x) =
            (0..self.threads.len()).find(|&x| x != w && self.m.workers[x].busy == Busy::Idle)
        else {
            std::thread::sleep(Duration::from_millis(20));
            return Ok(());
        };
        let start = Instant::now();
        loop {
            let _ = self.threads[x].tx.send(Cmd::Act(Act::Query { s }));
            match self.threads[x].rx.recv_timeout(HANG) {
                Ok(Msg::Out(Ok(Out::Query(_, _, false)))) => {
                    return self.check_events(x, crate::sink::Call::Other)
                }
                Ok(Msg::Out(Ok(Out::Query(..)))) => {}
                _ => {
                    return fail(format!(
                        "hang: T{}'s is_locked of #{l}",
                        self.m.workers[x].ident
                    ))
                }
            }
            if start.elapsed() > HANG {
                return fail(format!(
                    "T{}'s untimed wait on #{l} did not release it in {HANG:?}",
                    self.m.workers[w].ident
                ));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    pub(crate) fn notify(&mut self, w: usize, s: usize, l: usize, all: bool) -> R {
        let me = self.m.workers[w].ident;
        let held = self.m.objs[l].owner == me;
        if K::NOTIFY_UNLOCKED {
            return self.notify_unlocked(w, s, l, all);
        }
        let gi = match K::SURFACE {
            "monitor" => match self.m.workers[w].guard_on(l) {
                Some(i) if held => Some(i),
                _ => return Ok(()),
            },
            _ => None,
        };
        let r = self.call(w, Act::Notify { s, gi, all })?;
        match (r, held) {
            (Out::Done, true) => {}
            (Out::Err(MonitorError::IllegalMonitorState), false) => return Ok(()),
            (o, _) => {
                return fail(format!(
                    "notify{} on #{l} by T{me} (holds it: {held}): {o:?}",
                    if all { "_all" } else { "" }
                ))
            }
        }
        let n = self.m.waiters(l).count() as u32;
        let o = &mut self.m.objs[l];
        o.pending = if all { n } else { o.pending + 1 };
        self.m.clamp_pending(l);
        Ok(())
    }

    /// A notify that needs no lock (lock_api's condvar): a notifier that does not hold the
    /// mutex takes it for the notify when somebody waits (condvar.rs). If another worker
    /// holds it, the notifier blocks until that release (`Busy::Notifying`, a candidate for
    /// the lock like a blocked locker; no wait on the object is asked meanwhile), asked only
    /// when that release is sure to come (`lock_may_block`).
    ///
    /// A `notify_one` with two waiters or more wakes exactly one of them, as Java's notify
    /// (the model's rule: one more pending notification, one waiter of the set returns),
    /// unless another condvar of the process has waiters on a mutex of the same address
    /// stripe: then it wakes the whole wait set (condvar.rs, invariant 4), which the model
    /// cannot follow. So it is asked only while no other object of the case has waiters: the
    /// fuzzer's process has no other condvar waiters (the sink's own objects never wait;
    /// tests of the same process running at once could, rarely).
    fn notify_unlocked(&mut self, w: usize, s: usize, l: usize, all: bool) -> R {
        let me = self.m.workers[w].ident;
        let o = &self.m.objs[l];
        let held = o.owner == me;
        let n = self.m.waiters(l).count() as u32;
        let elsewhere =
            (0..self.m.objs.len()).any(|x| x != l && self.m.waiters(x).next().is_some());
        if o.tainted || (!all && n > 1 && elsewhere) {
            return Ok(());
        }
        if !all && n > 1 {
            NOTIFY_ONE_OF_MANY.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        if !held && n > 0 && o.owner != 0 {
            if self.m.lock_may_block(l) {
                self.send(w, Act::Notify { s, gi: None, all })?;
                self.m.workers[w].busy = Busy::Notifying { l, all };
            }
            return Ok(());
        }
        match self.call(w, Act::Notify { s, gi: None, all })? {
            Out::Done => {}
            o => {
                return fail(format!(
                    "notify{} on #{l} by T{me} (holds it: {held}): {o:?}",
                    if all { "_all" } else { "" }
                ))
            }
        }
        let o = &mut self.m.objs[l];
        o.pending = if all { n } else { o.pending + 1 };
        self.m.clamp_pending(l);
        Ok(())
    }

    pub(crate) fn interrupt(&mut self, t: usize) -> R {
        let Some(tid) = self.threads[t].tid else {
            return Ok(());
        };
        self.log(format!("Runtime::interrupt(T{})", self.m.workers[t].ident));
        match self.sh.kit.interrupt(tid) {
            Some(Ok(())) => {}
            None => return Ok(()),
            Some(Err(e)) => return fail(format!("interrupt of a live thread: {e:?}")),
        }
        match &mut self.m.workers[t].busy {
            Busy::Waiting { interrupted, .. } => *interrupted = true,
            _ => self.m.workers[t].interrupt = true,
        }
        Ok(())
    }

    /// See the module's invariant.
    pub(crate) fn settle(&mut self) -> R {
        loop {
            let mut more = false;
            for l in 0..self.m.objs.len() {
                if self.m.objs[l].count != 0 {
                    continue;
                }
                let c = self.m.candidates(l);
                if !c.is_empty() {
                    self.await_one(l, &c)?;
                    more = true;
                }
            }
            if !more {
                return Ok(());
            }
        }
    }

    fn await_one(&mut self, l: usize, c: &[usize]) -> R {
        let start = Instant::now();
        loop {
            for &i in c {
                if let Ok(msg) = self.threads[i].rx.try_recv() {
                    return self.complete(i, msg);
                }
            }
            if start.elapsed() > HANG {
                let who: Vec<String> = c
                    .iter()
                    .map(|&i| {
                        format!(
                            "T{} ({:?})",
                            self.m.workers[i].ident, self.m.workers[i].busy
                        )
                    })
                    .collect();
                return fail(format!(
                    "lost wakeup / hang: #{l} is free per the model, but none of {} got it in {HANG:?}",
                    who.join(", ")
                ));
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    fn complete(&mut self, i: usize, msg: Msg) -> R {
        let me = self.m.workers[i].ident;
        let busy = std::mem::replace(&mut self.m.workers[i].busy, Busy::Idle);
        let out = match msg {
            Msg::Out(Ok(o)) => o,
            Msg::Out(Err(v)) => return fail(v),
            _ => return fail("worker protocol error"),
        };
        self.log(format!("T{me}: returned {out:?} from {busy:?}"));
        self.check_events(i, crate::sink::Call::Busy(busy, &out))?;
        match (busy, out) {
            (Busy::Acquiring { l, u }, Out::Done) => self.locked(i, l, u),
            // It took the free mutex, notified and let it go.
            (Busy::Notifying { l, all }, Out::Done) => {
                let n = self.m.waiters(l).count() as u32;
                let o = &mut self.m.objs[l];
                o.pending = if all { n } else { o.pending + 1 };
                self.m.clamp_pending(l);
            }
            (
                Busy::Waiting {
                    l,
                    count,
                    forgotten,
                    interrupted,
                },
                Out::Waited(r, _),
            ) => {
                let o = &mut self.m.objs[l];
                (o.owner, o.count, o.forgotten) = (me, count, forgotten);
                match r {
                    Ok(WaitOutcome::Notified) => {
                        if o.pending > 0 {
                            o.pending -= 1;
                        } else if !interrupted {
                            self.spurious += 1;
                        }
                        // Notified and interrupted: the status stays set.
                        self.m.workers[i].interrupt |= interrupted;
                    }
                    Err(MonitorError::Interrupted) if interrupted => {}
                    r => {
                        return fail(format!(
                        "T{me}'s untimed wait on #{l} (interrupted: {interrupted}) returned {r:?}"
                    ))
                    }
                }
                self.m.clamp_pending(l);
            }
            (b, o) => return fail(format!("T{me} in {b:?} answered {o:?}")),
        }
        Ok(())
    }

    pub(crate) fn join_bursts(&mut self) -> R {
        for i in 0..self.threads.len() {
            let Busy::Burst { l } = self.m.workers[i].busy else {
                continue;
            };
            match self.threads[i].rx.recv_timeout(HANG * 3) {
                Ok(Msg::Out(Ok(Out::Done))) => {
                    let call = crate::sink::Call::Busy(Busy::Burst { l }, &Out::Done);
                    self.check_events(i, call)?;
                    self.m.workers[i].busy = Busy::Idle;
                }
                Ok(Msg::Out(Err(v))) => return fail(v),
                Ok(Msg::Out(Ok(o))) => return fail(format!("burst on #{l}: {o:?}")),
                _ => {
                    return fail(format!(
                        "hang: T{}'s burst on #{l} did not finish in {:?}",
                        self.m.workers[i].ident,
                        HANG * 3
                    ))
                }
            }
        }
        Ok(())
    }

    /// Ends the phase (see the module's invariant).
    pub(crate) fn end(&mut self, lifo: bool) -> R {
        if !self.phase {
            return self.exits();
        }
        self.join_bursts()?;
        for _ in 0..64 {
            while let Some(w) = (0..self.threads.len()).find(|&w| {
                self.m.workers[w].busy == Busy::Idle && !self.m.workers[w].guards.is_empty()
            }) {
                let n = self.m.workers[w].guards.len();
                let gi = if lifo { n - 1 } else { 0 };
                let l = self.m.workers[w].guards[gi];
                self.call(w, Act::Unlock { gi })?;
                self.m.workers[w].guards.remove(gi);
                self.m.release(l);
                self.settle()?;
            }
            // Unstructured levels that a blocked locker or a waiter waits for are exited
            // here (the others go with the phase handle).
            if let Some((w, l)) = (0..self.threads.len()).find_map(|w| {
                let x = &self.m.workers[w];
                let l = x.unstructured.iter().map(|&(l, _)| l).find(|&l| {
                    self.m.blocked(l).next().is_some() || self.m.waiters(l).next().is_some()
                });
                (x.busy == Busy::Idle).then_some(()).and(l).map(|l| (w, l))
            }) {
                let Some(s) = self.slot_of.iter().position(|&o| o == l) else {
                    return fail(format!("#{l} has a blocked locker but no slot"));
                };
                match self.call(w, Act::Exit { s, l, held: true })? {
                    Out::Done => {
                        self.m.workers[w].add_unstructured(l, -1);
                        self.m.release(l);
                    }
                    o => return fail(format!("monitor_exit of #{l}: {o:?}")),
                }
                self.settle()?;
                continue;
            }
            let busy = |b: &Busy| *b != Busy::Idle;
            if !self.m.workers.iter().any(|x| busy(&x.busy)) {
                break;
            }
            // A waiter first: a blocked locker waits for what a waiter holds. One whose
            // object an idle worker can lock: a waiter may hold the object another waits on.
            let rescuable = |w: usize| match self.m.workers[w].busy {
                Busy::Waiting { l, .. } => (0..self.threads.len()).any(|x| {
                    self.m.workers[x].busy == Busy::Idle && self.m.lock_is_immediate(x, l)
                }),
                _ => false,
            };
            let w = (0..self.threads.len())
                .find(|&w| rescuable(w))
                .or_else(|| {
                    (0..self.threads.len())
                        .find(|&w| matches!(self.m.workers[w].busy, Busy::Waiting { .. }))
                })
                .or_else(|| (0..self.threads.len()).find(|&w| busy(&self.m.workers[w].busy)));
            self.rescue(w.unwrap_or(0))?;
        }
        if let Some(w) = (0..self.threads.len()).find(|&w| self.m.workers[w].busy != Busy::Idle) {
            return fail(format!(
                "the phase cannot end: T{} stays {:?}",
                self.m.workers[w].ident, self.m.workers[w].busy
            ));
        }
        for t in &self.threads {
            let _ = t.tx.send(Cmd::End(lifo));
        }
        for w in 0..self.threads.len() {
            match self.threads[w].rx.recv_timeout(HANG) {
                Ok(Msg::Ended) => self.check_events(w, crate::sink::Call::Other)?,
                _ => {
                    return fail(format!(
                        "hang: T{}'s phase end (drops its handle with {:?} unstructured)",
                        self.m.workers[w].ident, self.m.workers[w].unstructured
                    ))
                }
            }
            for (l, n) in std::mem::take(&mut self.m.workers[w].unstructured) {
                for _ in 0..n {
                    self.m.release(l);
                }
            }
        }
        self.phase = false;
        self.log("-- phase end --".into());
        self.exits()
    }

    /// Gets busy worker `w` (waiting on an object nobody will notify) going: another
    /// worker locks the object, notifies all and unlocks.
    fn rescue(&mut self, w: usize) -> R {
        let Busy::Waiting { l, .. } = self.m.workers[w].busy else {
            return fail(format!(
                "the phase cannot end: T{} stays {:?}",
                self.m.workers[w].ident, self.m.workers[w].busy
            ));
        };
        let Some(s) = self.slot_of.iter().position(|&o| o == l) else {
            return fail(format!("#{l} has a waiter but no slot"));
        };
        let Some(x) = (0..self.threads.len())
            .find(|&x| self.m.workers[x].busy == Busy::Idle && self.m.lock_is_immediate(x, l))
        else {
            return fail(format!(
                "the phase cannot end: nobody can lock #{l} to notify its waiters"
            ));
        };
        match self.call(x, Act::Lock { s, l })? {
            Out::Done => self.locked(x, l, false),
            o => return fail(format!("lock of #{l} to notify its waiters: {o:?}")),
        }
        self.notify(x, s, l, true)?;
        let gi = self.m.workers[x].guards.len() - 1;
        self.call(x, Act::Unlock { gi })?;
        self.m.workers[x].guards.remove(gi);
        self.m.release(l);
        self.settle()
    }

    /// Ends the threads of the workers marked to exit and starts new ones in their place.
    fn exits(&mut self) -> R {
        for w in 0..self.threads.len() {
            let Some(tls) = self.m.workers[w].exit.take() else {
                continue;
            };
            let n = self.slot_of.len();
            // Not an object the model asks nothing more of (`Adversary::lenient_moved`).
            let tls = tls
                .map(|s| (s as usize % n, self.slot_of[s as usize % n]))
                .filter(|&(_, l)| {
                    self.m.objs[l].count == 0 && !(self.lenient_moved && self.m.objs[l].tainted)
                });
            let id = self.next_ident;
            self.next_ident += 1;
            self.log(format!(
                "T{} exits (thread-local destructor try-locks {tls:?} as T{id})",
                self.m.workers[w].ident
            ));
            self.quit(w, tls.map(|(s, l)| (s, l, id)))?;
            if RECORDS_BY_ADDRESS.contains(&K::PROTOCOL) {
                // A forgotten biased hold lives in its owner's lock records, which end with
                // the thread: held for good if it had become a thin or fat hold, free if it
                // was still biased (`biased.rs`, "A forgotten guard, then a move"). The model
                // cannot tell which, so it asks nothing more of the object.
                let me = self.m.workers[w].ident;
                for o in self
                    .m
                    .objs
                    .iter_mut()
                    .filter(|o| o.owner == me && o.count > 0)
                {
                    o.tainted = true;
                }
            }
            let t = self.spawn()?;
            self.threads[w] = t;
            self.m.workers[w] = WorkerModel::new(self.next_ident - 1);
        }
        Ok(())
    }

    /// Ends worker `w`'s thread.
    pub(crate) fn quit(&mut self, w: usize, tls: Option<(usize, usize, u32)>) -> R {
        if let Some(st) = &self.storm {
            st.remove(self.threads[w].pt);
        }
        let _ = self.threads[w].tx.send(Cmd::Quit(tls));
        if let Some((s, l, _)) = tls {
            match self.threads[w].rx.recv_timeout(HANG) {
                Ok(Msg::Tls(Ok(true))) => {}
                Ok(Msg::Tls(Ok(false))) => {
                    return fail(format!(
                        "#{l} (slot {s}) is free per the model, but a thread-local destructor cannot lock it in 1 s"
                    ))
                }
                Ok(Msg::Tls(Err(v))) => return fail(v),
                _ => return fail(format!("hang: a thread-local destructor locking #{l}")),
            }
        }
        if let Some(j) = self.threads[w].join.take() {
            let _ = j.join();
        }
        Ok(())
    }
}
