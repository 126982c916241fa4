//! The table of `cacao` and `cacao-seed` (seed 003's `struct entry` chains): the bucket's
//! test-and-set lock, the entries, the overflow pool of doubling never-freed chunks, and the
//! chain work done under the bucket lock — `lockMutexForObject`'s search (`entry_for`:
//! `claimEntry`, `allocEntry`), `freeEntry`, unlinking and unpinning.

use super::*;

impl TasLock {
    pub(crate) fn new() -> Self {
        Self(AtomicBool::new(false))
    }

    #[inline]
    pub(crate) fn lock(&self) -> TasGuard<'_> {
        if self
            .0
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_slow();
        }
        TasGuard(self)
    }

    /// Retries the test-and-set itself (a read-modify-write reads the latest value, where a
    /// plain load may read an old one for a while), with exponential back-off between tries
    /// and yielding once the holder looks preempted. The test-and-set is a compare-and-swap
    /// (same cost as an exchange on x86 and ARMv8.1; with `AtomicBool::swap` the loom models
    /// of this loop do not see the holder's release).
    #[cold]
    pub(super) fn lock_slow(&self) {
        let mut step = 0u32;
        loop {
            if step < 6 {
                for _ in 0..(1u32 << step) {
                    spin_hint();
                }
                step += 1;
            } else {
                yield_now();
            }
            if self
                .0
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }
}

impl Drop for TasGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.0 .0.store(false, Ordering::Release);
    }
}

impl Entry {
    pub(super) fn new(next: u32) -> Self {
        Self {
            obj: AtomicUsize::new(0),
            mon: AtomicU32::new(0),
            users: AtomicU32::new(0),
            next: AtomicU32::new(next),
        }
    }
    #[inline]
    pub(super) fn obj(&self) -> usize {
        self.obj.load(Ordering::Relaxed)
    }
    #[inline]
    pub(super) fn next(&self) -> u32 {
        self.next.load(Ordering::Relaxed)
    }
    #[inline]
    pub(super) fn users(&self) -> u32 {
        self.users.load(Ordering::Relaxed)
    }
    /// Acquire, pairing with the Release stores of `mon`: a reader without the bucket lock
    /// (the fast paths) then also sees the monitor table's chunk that holds the monitor.
    #[inline]
    pub(super) fn index(&self) -> Option<MonitorIndex> {
        MonitorIndex::new(self.mon.load(Ordering::Acquire))
    }
    pub(super) fn set_users(&self, n: u32) {
        self.users.store(n, Ordering::Relaxed);
    }
}

impl EntryPool {
    /// Chunk and offset of entry `i`.
    #[inline]
    pub(super) fn locate(i: u32) -> (usize, usize) {
        let q = i / POOL_ENTRIES + 1;
        let k = 31 - q.leading_zeros();
        let base = POOL_ENTRIES * ((1 << k) - 1);
        (k as usize, (i - base) as usize)
    }

    pub(super) fn new(limit: u32) -> Self {
        let pool = Self {
            chunks: (0..POOL_CHUNKS)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            grown: AtomicUsize::new(0),
            limit: limit.max(POOL_ENTRIES),
        };
        pool.grow().expect("the first chunk is always allowed");
        pool
    }

    /// Entries in all chunks allocated so far.
    pub(super) fn len(&self) -> u32 {
        POOL_ENTRIES * ((1 << self.grown.load(Ordering::Relaxed)) - 1)
    }

    /// Under the pool lock (or in `new`): allocates the next chunk, its entries chained in
    /// index order; returns its first index, or `None` at the limit.
    pub(super) fn grow(&self) -> Option<u32> {
        let k = self.grown.load(Ordering::Relaxed);
        let base = self.len();
        if k >= POOL_CHUNKS || base >= self.limit {
            return None;
        }
        let n = POOL_ENTRIES << k;
        let chunk: Box<[Entry]> = (0..n)
            .map(|j| Entry::new(if j + 1 < n { base + j + 1 } else { NIL }))
            .collect();
        self.chunks[k].store(Box::into_raw(chunk) as *mut Entry, Ordering::Release);
        self.grown.store(k + 1, Ordering::Relaxed);
        Some(base)
    }

    #[inline]
    pub(super) fn get(&self, i: u32) -> &Entry {
        let (k, off) = Self::locate(i);
        let chunk = self.chunks[k].load(Ordering::Acquire);
        assert!(!chunk.is_null(), "overflow entry {i} was never allocated");
        // SAFETY: index `i` came from a chain or the free list, which only ever hold indices
        // of allocated chunks (`grow` chains a chunk's entries only after allocating it, and
        // publishes the chunk with a Release store that our Acquire load saw — non-null
        // checked); chunk `k` is a leaked `Box<[Entry]>` of `POOL_ENTRIES << k` entries freed
        // only by `Drop for EntryPool` (`&mut self`), so it outlives `&self`; `locate` gives
        // `off < POOL_ENTRIES << k`.
        unsafe { &*chunk.add(off) }
    }
}

impl Drop for EntryPool {
    fn drop(&mut self) {
        for (k, c) in self.chunks.iter().enumerate() {
            let p = c.load(Ordering::Relaxed);
            if !p.is_null() {
                let n = (POOL_ENTRIES as usize) << k;
                // SAFETY: `p` came from `Box::into_raw` of a boxed slice of `n` entries in
                // `grow`, and is freed once, here (`&mut self`: no reference into it is left).
                drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, n)) });
            }
        }
    }
}

impl CacaoState {
    pub(super) fn new(monitor_capacity: u32) -> Self {
        Self {
            buckets: (0..1usize << BUCKET_BITS)
                .map(|_| Bucket {
                    lock: TasLock::new(),
                    first: Entry::new(NIL),
                })
                .collect(),
            pool: EntryPool::new(monitor_capacity),
            pool_lock: TasLock::new(),
            free_head: AtomicU32::new(0),
        }
    }

    /// The bucket of an address: the 2n low bits above the alignment, folded into n.
    #[inline]
    pub fn bucket_of(addr: usize) -> usize {
        let a = addr >> std::mem::align_of::<HostWord>().trailing_zeros();
        (a ^ (a >> BUCKET_BITS)) & ((1 << BUCKET_BITS) - 1)
    }

    #[inline]
    pub(super) fn bucket(&self, o: usize) -> &Bucket {
        &self.buckets[Self::bucket_of(o)]
    }

    /// Overflow entries in use (for tests and reports).
    pub fn overflow_in_use(&self) -> usize {
        let _g = self.pool_lock.lock();
        let mut free = 0;
        let mut i = self.free_head.load(Ordering::Relaxed);
        while i != NIL {
            free += 1;
            i = self.pool.get(i).next();
        }
        self.pool.len() as usize - free
    }

    /// Bytes of the table and of the pool's chunks allocated so far (monitors not
    /// included).
    pub fn table_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.buckets)
            + self.pool.len() as usize * std::mem::size_of::<Entry>()
    }

    /// Under `b`'s lock: the entry of `o` in `b`'s chain.
    pub(super) fn find<'s>(&'s self, b: &'s Bucket, o: usize) -> Option<&'s Entry> {
        if b.first.obj() == o {
            return Some(&b.first);
        }
        let mut i = b.first.next();
        while i != NIL {
            let e = self.pool.get(i);
            if e.obj() == o {
                return Some(e);
            }
            i = e.next();
        }
        None
    }

    /// Under `b`'s lock: `lockMutexForObject`'s search — `o`'s entry, else the first entry if
    /// it is free (claimEntry, keeping its monitor), else a new overflow entry (allocEntry).
    /// `true` with it: the first entry was claimed with its monitor taken, which `t` now
    /// owns (it took it to claim, rule M of the module documentation).
    pub(super) fn entry_for<'s, const S: bool>(
        &'s self,
        rt: &Runtime<CacaoLocks<S>>,
        t: &ThreadContext<CacaoLocks<S>>,
        b: &'s Bucket,
        o: usize,
    ) -> Result<(&'s Entry, bool), MonitorError> {
        if let Some(e) = self.find(b, o) {
            return Ok((e, false));
        }
        // `o` gets an entry here: it becomes this runtime's address first, and another live
        // runtime's entry for it is `ForeignHeader` (`binding.rs`). Every
        // failure below gives the claim back.
        rt.monitors().claim(o)?;
        let f = &b.first;
        if f.users() == 0 {
            let taken = match f.index() {
                // claimEntry: only with the monitor taken (rule M): an owner of the earlier
                // object holds no pin, only the monitor; blocked entrants and waiters pin.
                Some(i) => {
                    let m = rt.monitors().get(i);
                    !m.is_owned_by(t.core()) && m.try_enter(t.core()) == Ok(true)
                }
                None => {
                    // The location's first use (or its first after a reclaim): the only time
                    // it gets a monitor. A pair with no monitor changes without one.
                    let idx = rt
                        .monitors()
                        .allocate()
                        .inspect_err(|_| rt.monitors().release(o))?;
                    f.mon.store(idx.get(), Ordering::Release);
                    f.obj.store(o, Ordering::Relaxed);
                    rt.monitors().bind(idx, o);
                    // A stale reader of an earlier pair may hold a just-freed monitor for the
                    // few instructions of its validation: then the caller enters it as a
                    // pinned entrant.
                    let m = rt.monitors().get(idx);
                    return Ok((f, m.try_enter(t.core()) == Ok(true)));
                }
            };
            if taken {
                // The earlier object (if any) has no entry here any more.
                let old = f.obj();
                if old != 0 {
                    rt.monitors().release(old);
                }
                f.obj.store(o, Ordering::Relaxed);
                f.index().inspect(|&i| rt.monitors().bind(i, o));
                return Ok((f, true));
            }
        }
        let Some(i) = self.alloc_entry() else {
            rt.monitors().release(o);
            return Err(MonitorError::MonitorTableFull);
        };
        let idx = match rt.monitors().allocate() {
            Ok(idx) => idx,
            Err(e) => {
                self.free_entry(i);
                rt.monitors().release(o);
                return Err(e);
            }
        };
        let e = self.pool.get(i);
        rt.monitors().bind(idx, o);
        e.obj.store(o, Ordering::Relaxed);
        e.mon.store(idx.get(), Ordering::Release);
        e.set_users(0);
        e.next.store(f.next(), Ordering::Relaxed);
        f.next.store(i, Ordering::Relaxed);
        Ok((e, false))
    }

    /// Gives a monitor nobody uses back to the table. A stale lock-free reader (see
    /// `Cacao::first_lock`) may still hold the monitor for the few instructions of its
    /// validation: wait for that to end.
    pub(super) fn free_monitor<const S: bool>(rt: &Runtime<CacaoLocks<S>>, idx: MonitorIndex) {
        while !rt.monitors().get(idx).is_idle() {
            yield_now();
        }
        rt.monitors().free(idx);
    }

    pub(super) fn alloc_entry(&self) -> Option<u32> {
        let _g = self.pool_lock.lock();
        let mut i = self.free_head.load(Ordering::Relaxed);
        if i == NIL {
            i = self.pool.grow()?;
        }
        self.free_head
            .store(self.pool.get(i).next(), Ordering::Relaxed);
        Some(i)
    }

    pub(super) fn free_entry(&self, i: u32) {
        let e = self.pool.get(i);
        e.obj.store(0, Ordering::Relaxed);
        e.mon.store(0, Ordering::Relaxed);
        let _g = self.pool_lock.lock();
        e.next
            .store(self.free_head.load(Ordering::Relaxed), Ordering::Relaxed);
        self.free_head.store(i, Ordering::Relaxed);
    }

    /// Under `b`'s lock: takes `o`'s entry out of the table (`o` is dead: nobody is inside
    /// an operation on it). An overflow entry's monitor goes back to the monitor table if
    /// nobody pins it, else it is leaked (it is still someone's lock). The first entry is left
    /// empty, not refilled from the chain (`entry_for` searches the chain before it claims
    /// the first entry; a refill would carry an overflow owner's pin into a first entry,
    /// whose owner holds none). Its monitor goes back to the table only if we can take it
    /// and nobody pins it (rule M: the pair changes with the monitor's lock held). Otherwise
    /// (a forgotten guard holds it, a stale reader is validating under it, or threads are
    /// inside an operation on the dead object) the entry keeps the monitor and its pins with
    /// `obj` cleared — a value no validation accepts — and is claimed again once the monitor
    /// is free and unpinned (never, for a forgotten guard: then the monitor is leaked).
    pub(super) fn remove<const S: bool>(&self, rt: &Runtime<CacaoLocks<S>>, b: &Bucket, o: usize) {
        let Some(e) = self.find(b, o) else { return };
        rt.monitors().release(o);
        if !std::ptr::eq(e, &b.first) {
            if let Some(idx) = e.index() {
                if e.users() == 0 {
                    Self::free_monitor(rt, idx);
                }
            }
            self.unlink(b, e);
            return;
        }
        let Some(idx) = e.index() else { return };
        let m = rt.monitors().get(idx);
        if e.users() == 0 && m.system_lock().try_lock() {
            e.mon.store(0, Ordering::Relaxed);
            e.obj.store(0, Ordering::Relaxed);
            // SAFETY: we hold the system lock (the `try_lock` just above); nobody owns the
            // monitor through it, since everyone else's `enter` / `try_enter` failed.
            unsafe { m.system_lock().unlock() };
            Self::free_monitor(rt, idx);
        } else {
            e.obj.store(0, Ordering::Relaxed);
        }
    }

    /// Under `b`'s lock: unlinks overflow entry `e` and returns it to the pool.
    pub(super) fn unlink(&self, b: &Bucket, e: &Entry) {
        let mut prev = &b.first;
        loop {
            let i = prev.next();
            debug_assert_ne!(i, NIL, "overflow entry is in its chain");
            if i == NIL {
                return;
            }
            let cur = self.pool.get(i);
            if std::ptr::eq(cur, e) {
                prev.next.store(cur.next(), Ordering::Relaxed);
                self.free_entry(i);
                return;
            }
            prev = cur;
        }
    }

    /// Under `b`'s lock: one user of `e` is gone; an overflow entry nobody uses is freed with
    /// its monitor (`freeEntry`), the first entry keeps its monitor.
    pub(super) fn unpin<const S: bool>(&self, rt: &Runtime<CacaoLocks<S>>, b: &Bucket, e: &Entry) {
        let n = e.users() - 1;
        e.set_users(n);
        if n == 0 && !std::ptr::eq(e, &b.first) {
            if let Some(idx) = e.index() {
                Self::free_monitor(rt, idx);
            }
            rt.monitors().release(e.obj());
            self.unlink(b, e);
        }
    }
}

impl std::fmt::Debug for CacaoState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacaoState")
            .field("buckets", &self.buckets.len())
            .field("pool", &self.pool.len())
            .finish_non_exhaustive()
    }
}
