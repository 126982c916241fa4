//! A thread's lock records (its "stack", HotSpot's `BasicObjectLock`s in an array from the
//! process-wide pool): allocation in stack order, freeing and orphaning, the owner's lookups by
//! header address, and the GC hooks that read or rewrite them at a safepoint
//! ([`Stack::locked_objects`], `relocate`'s record rewrite, the hash of a stack-locked object).

use super::*;

impl LockRecords {
    pub(super) fn new(id: ThreadId) -> Self {
        let records = stack_records::take();
        for r in records {
            r.owner.store(u32::from(id.get()), Ordering::Relaxed);
        }
        Self {
            records,
            top: AtomicUsize::new(0),
        }
    }

    #[inline]
    pub(super) fn top(&self) -> usize {
        self.top.load(Ordering::Relaxed)
    }

    #[inline]
    pub(super) fn word_of(&self, i: usize) -> u64 {
        &self.records[i] as *const LockRecord as usize as u64
    }

    /// Whether `w` is the address of one of these records.
    #[inline]
    pub(super) fn owns_word(&self, w: u64) -> bool {
        let base = self.records.as_ptr() as usize as u64;
        w >= base && w < base + (LOCK_RECORDS * std::mem::size_of::<LockRecord>()) as u64
    }

    #[inline]
    pub(super) fn index_of_word(&self, w: u64) -> usize {
        let base = self.records.as_ptr() as usize as u64;
        ((w - base) / std::mem::size_of::<LockRecord>() as u64) as usize
    }

    /// Owner only: fills record `top` and bumps `top`.
    #[inline]
    pub(super) fn fill(&self, top: usize, a: usize, displaced: u64) {
        let r = &self.records[top];
        r.displaced.store(displaced, Ordering::Relaxed);
        r.obj.store(a, Ordering::Relaxed);
        self.top.store(top + 1, Ordering::Relaxed);
    }

    /// Owner only: frees record `i`, and lowers `top` past free records.
    #[inline]
    pub(super) fn free(&self, i: usize) {
        let r = &self.records[i];
        r.obj.store(0, Ordering::Relaxed);
        r.displaced.store(0, Ordering::Relaxed);
        let mut top = self.top();
        if i + 1 == top {
            while top > 0 && self.records[top - 1].obj.load(Ordering::Relaxed) == 0 {
                top -= 1;
            }
            self.top.store(top, Ordering::Relaxed);
        }
    }

    /// Owner only: the highest record for `a` and whether it is a base record.
    pub(super) fn topmost(&self, a: usize) -> Option<(usize, bool)> {
        (0..self.top()).rev().find_map(|i| {
            let r = &self.records[i];
            (r.obj.load(Ordering::Relaxed) == a)
                .then(|| (i, r.displaced.load(Ordering::Relaxed) != 0))
        })
    }

    /// Whether base record `i` holds the header whose word is `w`: the word names it, or the
    /// word is the monitor it was inflated into (`LockRecord::inflated` holds that monitor's
    /// index). A record inflated for a header that has since moved away fails this: the word
    /// now at its address is another object's.
    pub(super) fn is_current(&self, i: usize, w: u64) -> bool {
        let inflated = self.records[i].inflated.load(Ordering::Relaxed);
        self.word_of(i) == w
            || (inflated != 0
                && w & mark::LOCK_BITS == mark::MONITOR
                && mark::index_of(w).get() == inflated)
    }

    /// Owner only: whether a base record below record `i` is current for the word `w` (the
    /// word names it, or is the monitor inflated from it), whatever address it recorded.
    pub(super) fn base_named_by(&self, i: usize, w: u64) -> bool {
        (0..i).any(|j| {
            self.records[j].displaced.load(Ordering::Relaxed) != 0 && self.is_current(j, w)
        })
    }

    /// Owner only: the base record for `a` below record `i` (the nearest), which recursive
    /// record `i` belongs to.
    pub(super) fn base_below(&self, i: usize, a: usize) -> Option<usize> {
        (0..i).rev().find(|&j| {
            let r = &self.records[j];
            r.obj.load(Ordering::Relaxed) == a && r.displaced.load(Ordering::Relaxed) != 0
        })
    }

    /// Owner only (others: a racy snapshot): the record levels held on the lock whose header
    /// is at `a` and reads `w`, attributed as `exit_slow` attributes them: whether a base
    /// record is current for `w` — the word names it or is the monitor inflated from it —
    /// whatever address it recorded (a header that safe code moved here under a forgotten
    /// guard still names the base record taken at its old address, orphaned there or not);
    /// and how many recursive records taken at `a` belong to a current base: the nearest base
    /// record for `a` below them, else the base record `w` names. A base record that is not
    /// current is an orphan-to-be (the header that named it moved away): neither it nor its
    /// recursive records hold this object.
    pub(super) fn levels(&self, a: usize, w: u64) -> (bool, u32) {
        let (mut base, mut rec) = (false, 0);
        for (i, r) in self.records[..self.top()].iter().enumerate() {
            let obj = r.obj.load(Ordering::Relaxed);
            if r.displaced.load(Ordering::Relaxed) != 0 {
                base |= obj != 0 && self.is_current(i, w);
            } else if obj == a {
                let current = match self.base_below(i, a) {
                    Some(j) => self.is_current(j, w),
                    None => self.base_named_by(i, w),
                };
                rec += u32::from(current);
            }
        }
        (base, rec)
    }

    /// Owner only: base record `i` (for `a`) is named by no header at `a` and was never
    /// inflated, so the header that named it moved away with its lock (a forgotten guard): it
    /// and the recursive records that follow it, up to the next base record for `a`, stay in
    /// use for good, found by no address. The moved header may still name record `i`, which
    /// keeps its displaced header and owner for a contender to inflate.
    pub(super) fn orphan(&self, i: usize, a: usize) {
        self.records[i].obj.store(ORPHAN, Ordering::Release);
        for r in &self.records[i + 1..self.top()] {
            if r.obj.load(Ordering::Relaxed) == a {
                if r.displaced.load(Ordering::Relaxed) != 0 {
                    break;
                }
                r.obj.store(ORPHAN, Ordering::Release);
            }
        }
    }

    /// The locked headers, one per record in use, oldest first (racy unless the owner is
    /// stopped).
    pub fn objects(&self) -> Vec<*const StackWord> {
        self.records
            .iter()
            .map(|r| r.obj.load(Ordering::Acquire))
            .filter(|&a| a != 0 && a != ORPHAN)
            .map(|a| a as *const StackWord)
            .collect()
    }
}

impl Drop for LockRecords {
    fn drop(&mut self) {
        if self.records.iter().all(LockRecord::is_free) {
            // No header names a record of ours: the next thread may have the array.
            stack_records::give_back(self.records);
        } else {
            // A lock held past detach (a forgotten guard, an orphan): a header may still point
            // into the array, and a contender will read it under INFLATING. The array is never
            // reused, and no thread that later gets this id passes for its owner.
            for r in self.records.iter() {
                r.owner.store(ANONYMOUS_OWNER, Ordering::Relaxed);
            }
        }
    }
}

impl std::fmt::Debug for LockRecords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.objects()).finish()
    }
}

impl Stack {
    /// Deflates `h`'s monitor if nobody owns, enters or waits on it (the host's hook for
    /// [`DeflationPolicy::OnRequest`](crate::vm::DeflationPolicy::OnRequest), usable under any
    /// policy). `true` if it did.
    pub fn deflate_idle(rt: &Runtime<Self>, h: &StackWord) -> bool {
        deflate::deflate_idle(rt, &h.0)
    }

    /// GC hook: the headers `t` holds lock records for, one per record, oldest first. Objects
    /// `t` entered through a monitor without a record are found through the monitors.
    pub fn locked_objects(t: &ThreadContext<Self>) -> Vec<*const StackWord> {
        t.local().objects()
    }

    /// [`Runtime::relocate`]'s part here: the object whose header was at `from` now has its
    /// header at `to` (the host copied the word verbatim: a record address stays valid, records never move). Rewrites
    /// every record naming `from`. Call only while every attached thread is stopped outside
    /// this crate's calls (a safepoint). Record `obj` fields are never dereferenced, so a missed
    /// relocation is a wrong answer (`IllegalMonitorState`), never undefined behaviour.
    pub(super) fn rewrite_records(rt: &Runtime<Self>, from: *const StackWord, to: &StackWord) {
        for cx in rt.threads().snapshot() {
            for r in cx.local().records.iter() {
                if r.obj.load(Ordering::Relaxed) == from as usize {
                    r.obj.store(addr(to), Ordering::Release);
                }
            }
        }
    }

    /// GC hook: [`peek_identity_hash`](Protocol::peek_identity_hash) that also reads the hash
    /// of a stack-locked object from its owner's lock record (displaced header), as HotSpot's
    /// GC does. Call only while every attached thread is stopped outside this crate's calls
    /// (a safepoint, as for [`Runtime::relocate`]); otherwise the record may change
    /// under the read and the answer is `None` or wrong.
    pub fn peek_identity_hash_at_safepoint(rt: &Runtime<Self>, h: &StackWord) -> Option<u32> {
        let w = h.0.load(Ordering::Acquire);
        if w & LOCK_BITS != LOCKED {
            return Self::peek_identity_hash(rt, h);
        }
        let threads = rt.threads().snapshot();
        let cx = threads.iter().find(|cx| cx.local().owns_word(w))?;
        let rs = cx.local();
        let d = rs.records[rs.index_of_word(w)]
            .displaced
            .load(Ordering::Acquire);
        Some(mark::hash_of(d)).filter(|&v| v != 0)
    }
}
