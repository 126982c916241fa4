//! The rows' locks: the `Subject` trait (a thread's state, and one round: lock, critical
//! section, unlock, its wait timed when sampled) and its implementations for
//! `Monitor<T, P>`, `parking_lot`'s two locks, `std::sync::Mutex` and `lightweight` through
//! the vm API, each written as a user writes it.

use super::work::{section, ticks, Plain, Shared};
use std::cell::UnsafeCell;
use std::sync::Arc;

/// A lock under test: per-thread state, and one round (lock, critical section, unlock).
pub(super) trait Subject: Sync {
    /// What a thread keeps between rounds (the vm API's thread handle).
    type Local<'a>
    where
        Self: 'a;
    fn local(&self) -> Self::Local<'_>;
    /// One lock, critical section of `cs` iterations, unlock; `timed`: the wait in ticks
    /// (else 0), and whether it was a hand-off.
    fn round(&self, l: &Self::Local<'_>, me: usize, cs: u64, timed: bool) -> (u64, bool);
}

/// Times `$lock` (an expression giving the guard) when `$timed`.
macro_rules! timed_lock {
    ($timed:expr, $lock:expr) => {{
        let t0 = if $timed { ticks() } else { 0 };
        let g = $lock;
        let w = if $timed { ticks().wrapping_sub(t0) } else { 0 };
        (g, w)
    }};
}

impl<P: objmon::MonitorProtocol> Subject for objmon::Monitor<Shared, P> {
    type Local<'a> = ();
    fn local(&self) {}
    #[inline(always)]
    fn round(&self, _: &(), me: usize, cs: u64, timed: bool) -> (u64, bool) {
        let (g, w) = timed_lock!(timed, self.lock());
        let h = section(&g.slots, &g.last, me, cs);
        drop(g);
        (w, h)
    }
}

impl Subject for parking_lot::ReentrantMutex<Shared> {
    type Local<'a> = ();
    fn local(&self) {}
    #[inline(always)]
    fn round(&self, _: &(), me: usize, cs: u64, timed: bool) -> (u64, bool) {
        let (g, w) = timed_lock!(timed, self.lock());
        let h = section(&g.slots, &g.last, me, cs);
        drop(g);
        (w, h)
    }
}

impl Subject for parking_lot::Mutex<Plain> {
    type Local<'a> = ();
    fn local(&self) {}
    #[inline(always)]
    fn round(&self, _: &(), me: usize, cs: u64, timed: bool) -> (u64, bool) {
        let (mut g, w) = timed_lock!(timed, self.lock());
        let h = g.section(me, cs);
        drop(g);
        (w, h)
    }
}

impl Subject for std::sync::Mutex<Plain> {
    type Local<'a> = ();
    fn local(&self) {}
    #[inline(always)]
    fn round(&self, _: &(), me: usize, cs: u64, timed: bool) -> (u64, bool) {
        let (g, w) = timed_lock!(timed, self.lock());
        let mut g = g.expect("no thread panics holding the lock");
        let h = g.section(me, cs);
        drop(g);
        (w, h)
    }
}

/// `lightweight` through the vm API: a header beside the data, entered with a thread handle.
pub(super) struct Lightweight {
    rt: Arc<objmon::vm::Runtime<objmon::Lightweight>>,
    header: <objmon::Lightweight as objmon::Protocol>::Header,
    data: UnsafeCell<Plain>,
}

// SAFETY: `data` is reached only inside `round`, while the thread holds `header`'s lock,
// which the protocol gives to one thread at a time with acquire/release ordering.
unsafe impl Sync for Lightweight {}

impl Lightweight {
    pub(super) fn new() -> Self {
        // SAFETY: `lightweight`'s contract is that no header held through a leaked guard is
        // moved or freed; `round` drops every guard it takes, and the header does not move
        // while threads use it (they borrow `self`).
        let rt = unsafe { objmon::vm::Runtime::new_unchecked(Default::default()) };
        Lightweight {
            rt,
            header: Default::default(),
            data: UnsafeCell::new(Plain::new()),
        }
    }
}

impl Subject for Lightweight {
    type Local<'a> = objmon::vm::ThreadHandle<'a, objmon::Lightweight>;
    fn local(&self) -> Self::Local<'_> {
        self.rt.attach().expect("attach")
    }
    #[inline(always)]
    fn round(&self, me_h: &Self::Local<'_>, me: usize, cs: u64, timed: bool) -> (u64, bool) {
        let (g, w) = timed_lock!(timed, me_h.enter(&self.header).expect("enter"));
        // SAFETY: this thread holds the header's lock until `g` drops (see `Sync` above).
        let h = unsafe { &mut *self.data.get() }.section(me, cs);
        drop(g);
        (w, h)
    }
}
