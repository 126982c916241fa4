//! The safe face of a protocol: attaching a thread ([`Runtime::attach`]), its
//! [`ThreadHandle`], and the [`HeaderGuard`] of a held lock.
//!
//! This file owns the promises that make the protocols' `unsafe fn` entry points safe to reach
//! (see [`Protocol`]'s "Safety of the operations" and `docs/soundness.md`):
//!
//! - **the calling thread's own context**: a handle is neither `Send` nor `Sync`, and every
//!   handle of one OS thread on one runtime shares one identity ([`Attachment`]), so a call
//!   through a handle always acts as the thread that makes it; attaching twice on one OS thread
//!   gives the same identity, as JNI's `AttachCurrentThread` does;
//! - **in native, no owner's fast path**: [`ThreadHandle::in_native`] brackets `f` with the
//!   protocol's `enter_native` / `leave_native`; a protocol whose revocation trusts a native
//!   thread not to lock (`biased`, `fable`) refuses a lock, wait or notify made in native and
//!   carries out an unlock under its revokers' mutex;
//! - **headers outlive their unstructured holds**: `'env` is invariant, so a header entered
//!   with [`ThreadHandle::monitor_enter`] outlives the handle that releases it at detach;
//! - **ownership never passes to another thread**: a lock level whose guard was forgotten
//!   (`mem::forget`) is counted, and an identity that detaches with one outstanding *retires*
//!   its thread id (never handed out again), so the next thread cannot inherit the lock.

use crate::monitor::WaitOutcome;
use crate::park::deadline_after;
use crate::protocol::Protocol;
use crate::protocol::ThreadContext;
use crate::runtime::Runtime;
use crate::sync::Arc;
use crate::thread::ThreadId;
use crate::MonitorError;
use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// One OS thread's identity on one runtime, shared by all the handles that thread attached
/// there (and by its automatic attachment, `user/attach.rs`). Dropped with the last of them:
/// that is the detach.
pub(crate) struct Attachment<P: Protocol> {
    rt: Arc<Runtime<P>>,
    cx: Arc<ThreadContext<P>>,
    /// A handle of this identity was dropped while lock levels taken through its guards were
    /// still held (a guard passed to `mem::forget`): those locks stay this id's for good.
    leaked: Cell<bool>,
}

impl<P: Protocol> Drop for Attachment<P> {
    fn drop(&mut self) {
        #[cfg(not(loom))]
        current::forget(Arc::as_ptr(&self.rt) as usize);
        if P::KNOWS_HOLDS && P::may_hold_any(&self.rt, &self.cx) {
            self.leaked.set(true);
        }
        // SAFETY: this is the calling thread's own context (the attachment never leaves the
        // thread that made it: `Rc`), it is not in native (`in_native` borrows a handle, so
        // the attachment cannot drop inside it), and nothing uses `cx` after this.
        unsafe { P::on_detach(&self.rt, &self.cx) };
        if self.leaked.get() {
            self.rt.threads().retire(self.cx.id());
        } else {
            self.rt.threads().detach(self.cx.id());
        }
    }
}

/// The calling thread's attachments, by runtime address (not under loom, where model threads
/// share an OS thread). An entry is a weak reference: the handles keep the attachment alive,
/// and the attachment keeps its runtime alive, so a live entry's address names its runtime.
///
/// The list is a raw pointer in a thread-local *without* destructor, so that it still works in
/// other thread-locals' destructors at thread exit (a thread-local with a destructor is gone
/// for those that run after it, and every attach there would make a new identity: two ids on
/// one OS thread, and a self-deadlock between them). A reaper thread-local frees it at exit
/// once it is empty; after that, the last `forget` frees it.
#[cfg(not(loom))]
mod current {
    use std::any::Any;
    use std::cell::Cell;
    use std::ptr;
    use std::rc::{Rc, Weak};

    type List = Vec<(usize, Weak<dyn Any>)>;

    thread_local! {
        static ATTACHED: Cell<*mut List> = const { Cell::new(ptr::null_mut()) };
        static REAPED: Cell<bool> = const { Cell::new(false) };
        static REAPER: Reaper = const { Reaper };
    }

    struct Reaper;

    impl Drop for Reaper {
        fn drop(&mut self) {
            REAPED.with(|r| r.set(true));
            free_if_empty();
        }
    }

    /// Runs `f` on the list, if there is one. No reference into it outlives `f`, and `f`
    /// never reaches this module again (it drops no attachment), so the borrow is unique.
    fn with_list<R>(f: impl FnOnce(&mut List) -> R) -> Option<R> {
        let l = ATTACHED.with(Cell::get);
        // SAFETY: made by `Box::into_raw` in `remember`, freed only in `free_if_empty` (which
        // clears the pointer first), on this thread; see above for uniqueness.
        (!l.is_null()).then(|| f(unsafe { &mut *l }))
    }

    fn free_if_empty() {
        let l = ATTACHED.with(Cell::get);
        if l.is_null() || !REAPED.with(Cell::get) {
            return;
        }
        // SAFETY: as in `with_list`.
        let list = unsafe { &mut *l };
        list.retain(|(_, w)| w.strong_count() > 0);
        if list.is_empty() {
            ATTACHED.with(|a| a.set(ptr::null_mut()));
            // SAFETY: made by `Box::into_raw`; the pointer was cleared above.
            drop(unsafe { Box::from_raw(l) });
        }
    }

    /// The live attachment of this thread to the runtime at `rt`, if any.
    pub(super) fn find(rt: usize) -> Option<Rc<dyn Any>> {
        with_list(|l| {
            l.iter()
                .find(|(r, _)| *r == rt)
                .and_then(|(_, w)| w.upgrade())
        })
        .flatten()
    }

    pub(super) fn remember(rt: usize, att: &Rc<dyn Any>) {
        if ATTACHED.with(Cell::get).is_null() {
            ATTACHED.with(|a| a.set(Box::into_raw(Box::default())));
            if !REAPED.with(Cell::get) {
                // Arms the reaper; fails only once it has run (then `forget` frees the list).
                let _ = REAPER.try_with(|_| ());
            }
        }
        with_list(|l| l.push((rt, Rc::downgrade(att))));
    }

    pub(super) fn forget(rt: usize) {
        with_list(|l| l.retain(|(r, _)| *r != rt));
        free_if_empty();
    }
}

impl<P: Protocol> Runtime<P> {
    /// Attaches the calling thread and returns its handle. Every thread that locks objects of
    /// this runtime needs one; it detaches when its last handle is dropped. Attaching again on
    /// a thread that is attached gives another handle with the same identity (the same
    /// [`ThreadId`], the same locks), as JNI's `AttachCurrentThread` does.
    ///
    /// `TooManyThreads` when every id is in use.
    ///
    /// `'env` is the lifetime of the objects this thread may lock *unstructured*
    /// ([`ThreadHandle::monitor_enter`]): they must outlive the handle, because a detach
    /// releases them.
    ///
    /// ```
    /// use objmon::vm::{Runtime, Thin};
    /// let rt = Runtime::<Thin>::with_defaults();
    /// let a = rt.attach().unwrap();
    /// let b = rt.attach().unwrap();
    /// assert_eq!(a.id(), b.id()); // one OS thread, one identity
    /// ```
    pub fn attach<'env>(self: &Arc<Self>) -> Result<ThreadHandle<'env, P>, MonitorError> {
        Ok(ThreadHandle::new(self.attachment()?))
    }

    /// The calling thread's identity on this runtime: the live one if it has one, else a new
    /// one (`TooManyThreads` when every id is in use).
    pub(crate) fn attachment(self: &Arc<Self>) -> Result<Rc<Attachment<P>>, MonitorError> {
        #[cfg(not(loom))]
        let key = Arc::as_ptr(self) as usize;
        #[cfg(not(loom))]
        if let Some(any) = current::find(key) {
            return Ok(any
                .downcast::<Attachment<P>>()
                .unwrap_or_else(|_| unreachable!("a runtime address names one runtime type")));
        }
        let cx = self
            .threads()
            .attach(|id| P::new_thread_state(id, self.config()))?;
        let att = Rc::new(Attachment {
            rt: self.clone(),
            cx,
            leaked: Cell::new(false),
        });
        #[cfg(not(loom))]
        current::remember(key, &(att.clone() as Rc<dyn std::any::Any>));
        Ok(att)
    }
}

impl<P: Protocol> Runtime<P> {
    /// The calling thread's id on this runtime, if it is attached (a look-up in its list of
    /// attachments: for slow paths that have no context, such as a deflation reported from
    /// a host's `deflate_idle`).
    pub(crate) fn current_thread_id(&self) -> Option<ThreadId> {
        #[cfg(not(loom))]
        {
            let any = current::find(self as *const Self as usize)?;
            let att = any.downcast::<Attachment<P>>().ok()?;
            Some(att.cx.id())
        }
        #[cfg(loom)]
        {
            None
        }
    }
}

/// What a guard needs of its handle (everything but the handle's `'env`); also the core of a
/// thread's automatic attachment (`user/attach.rs`).
///
/// **No interior mutability inline** (here and in [`ThreadHandle`]): the counters a handle
/// updates live behind a `Box`. A type without an `UnsafeCell` in its own bytes is `Freeze`,
/// and a `&ThreadHandle` argument of a user's function is then `noalias readonly` to LLVM:
/// nothing — not even a protocol's inline `asm!`, which clobbers memory (the bias owner's
/// section, `protocol/biased/fastpath.rs`) — may change the runtime and context pointers
/// behind it, so a user's loop loads them once instead of before every lock and unlock.
/// Measured with `examples/user_loop.rs` under callgrind, instructions per lock+unlock:
/// `biased-signal` 24 → 18, `thin` 25 → 21 (nested 38 → 34), `biased` 53 → 48, `tasuki`
/// 27 → 23. `objmon-bench`'s `userloop::tests` count the loop's instructions and fail if a
/// cell comes back inline.
pub(crate) struct HandleCore<P: Protocol> {
    pub(crate) rt: Arc<Runtime<P>>,
    pub(crate) cx: Arc<ThreadContext<P>>,
    /// Lock levels taken through this handle's guards and not yet released: a guard that
    /// drops takes one off; one passed to `mem::forget` never does. Boxed: see above. (A
    /// guard's +1 and its drop's −1 are adjacent in a user's loop, so LLVM folds them away
    /// wherever both are inline, boxed or not.)
    pub(crate) guards: Box<Cell<usize>>,
    /// The protocol's [`handle_word`](Protocol::handle_word) for this thread, computed once:
    /// a user's loop keeps it in a register with the two pointers (immutable, as they are).
    pub(crate) word: u64,
}

impl<P: Protocol> HandleCore<P> {
    /// The core of a new handle of identity `att`.
    pub(crate) fn of(att: &Attachment<P>) -> Self {
        Self {
            rt: att.rt.clone(),
            cx: att.cx.clone(),
            guards: Box::new(Cell::new(0)),
            word: P::handle_word(&att.cx),
        }
    }

    /// Locks `h` through the protocol's [`lock`](Protocol::lock), the hint dropped.
    ///
    /// # Safety
    /// As [`exit`](Self::exit) explains for the context; `h` stays valid (and unmoved) while
    /// held, as the caller's guard or unstructured record keeps it.
    #[inline(always)]
    pub(crate) unsafe fn enter(&self, h: &P::Header) -> Result<(), MonitorError> {
        // SAFETY: the context as in `exit`; `word` is `handle_word` of it (`of`); `h` is
        // the caller's to keep valid.
        unsafe { P::lock(&self.rt, &self.cx, self.word, h) }.map(|_| ())
    }

    /// [`enter`](Self::enter) for a guard: the protocol's hint for the guard's unlock
    /// ([`Protocol::lock`]).
    ///
    /// # Safety
    /// As [`enter`](Self::enter).
    #[inline(always)]
    pub(crate) unsafe fn enter_hinted(&self, h: &P::Header) -> Result<P::Hint, MonitorError> {
        // SAFETY: as in `enter`.
        unsafe { P::lock(&self.rt, &self.cx, self.word, h) }
    }

    /// [`exit`](Self::exit) of a guard's level.
    ///
    /// # Safety
    /// `hint` is none (`Default`) or what [`enter_hinted`](Self::enter_hinted) returned for
    /// `h` through this core: a protocol may trust it (`thin` stores it into the header when
    /// the header equals it plus one; a hint from another thread could name that thread's
    /// word).
    #[inline(always)]
    pub(crate) unsafe fn exit_hinted(
        &self,
        h: &P::Header,
        hint: P::Hint,
    ) -> Result<(), MonitorError> {
        // SAFETY: the context as in `exit` (this core is one thread's); the hint is the
        // caller's promise, which is `Protocol::unlock`'s contract.
        unsafe { P::unlock(&self.rt, &self.cx, self.word, hint, h) }
    }

    #[inline(always)]
    pub(crate) fn exit(&self, h: &P::Header) -> Result<(), MonitorError> {
        // SAFETY: `self.cx` is the calling thread's context: a `HandleCore` lives in a
        // `ThreadHandle`, which is neither `Send` nor `Sync`, and is reached only through it
        // or a guard borrowing it (neither `Send` nor `Sync` either), or in an automatic
        // attachment, reached only through its thread's thread-locals and guards that are
        // neither `Send` nor `Sync` (`user/attach.rs`); in native, the protocol refuses what
        // it must (`Protocol`'s safety contract); `h` is borrowed for the call.
        // `word` is `handle_word` of that context (`of`).
        unsafe { P::unlock(&self.rt, &self.cx, self.word, P::Hint::default(), h) }
    }
}

/// A thread attached to a runtime: the way that thread locks objects.
///
/// Neither `Send` nor `Sync`: a handle is its thread's identity (lock ownership, parking,
/// interrupts). Dropping the thread's last handle (or [`detach`](Self::detach)) releases every
/// lock it still holds through [`monitor_enter`](Self::monitor_enter) — as JNI's
/// `DetachCurrentThread` does — waking whoever waits for them, and frees its id for reuse.
/// Locks held through guards cannot outlive the handle: a guard borrows it. A guard passed to
/// `mem::forget` keeps its lock forever, as a forgotten `std::sync::MutexGuard` does; the id
/// of a thread that detaches so is retired rather than reused, so no later thread inherits the
/// lock.
///
/// `'env` is invariant: a header entered unstructured must outlive the handle, which releases
/// it at detach. This does not compile:
///
/// ```compile_fail,E0597
/// use objmon::vm::{LockWord, Runtime, Thin};
/// let rt = Runtime::<Thin>::with_defaults();
/// let me = rt.attach().unwrap();
/// {
///     let h = Box::new(LockWord::new(0x11));
///     me.monitor_enter(&h).unwrap(); // `h` dies first, the handle would exit it at drop
/// }
/// ```
///
/// nor does sending a handle (or a guard) to another thread:
///
/// ```compile_fail,E0277
/// use objmon::vm::{Runtime, Thin};
/// let rt = Runtime::<Thin>::with_defaults();
/// let me = rt.attach().unwrap();
/// std::thread::scope(|s| {
///     s.spawn(|| me.id()); // `&ThreadHandle` is not `Send`: the handle is not `Sync`
/// });
/// ```
pub struct ThreadHandle<'env, P: Protocol> {
    core: HandleCore<P>,
    att: Rc<Attachment<P>>,
    /// Unstructured holds: header address and how many times it was entered unstructured.
    /// Boxed, so that the handle stays `Freeze` ([`HandleCore`]).
    unstructured: Box<RefCell<Unstructured<P>>>,
    /// Invariant in `'env` (`fn(T) -> T`), so that a shorter-lived header cannot be passed to
    /// `monitor_enter`; `*const ()` makes the handle neither `Send` nor `Sync`.
    _marker: PhantomData<Invariant<'env, P>>,
}

/// A handle's unstructured holds: header address and levels entered unstructured.
type Unstructured<P> = Vec<(*const <P as Protocol>::Header, u32)>;

/// `fn(T) -> T` is invariant in `T`; a raw pointer is neither `Send` nor `Sync`.
type Invariant<'env, P> = (
    fn(&'env <P as Protocol>::Header) -> &'env <P as Protocol>::Header,
    *const (),
);

impl<'env, P: Protocol> ThreadHandle<'env, P> {
    fn new(att: Rc<Attachment<P>>) -> Self {
        Self {
            core: HandleCore::of(&att),
            att,
            unstructured: Box::new(RefCell::new(Vec::new())),
            _marker: PhantomData,
        }
    }

    /// This thread's id.
    #[inline]
    pub fn id(&self) -> ThreadId {
        self.core.cx.id()
    }

    /// The runtime.
    #[inline]
    pub fn runtime(&self) -> &Arc<Runtime<P>> {
        &self.core.rt
    }

    /// The per-thread context, for hosts that call the protocol's `unsafe` paths directly
    /// (the benchmark harness, the C ABI). Calling them with it is sound on this thread only,
    /// outside [`in_native`](Self::in_native); see [`Protocol`].
    #[inline]
    pub fn context(&self) -> &ThreadContext<P> {
        &self.core.cx
    }

    /// Locks `h` (monitorenter / `synchronized`), blocking while another thread owns it, and
    /// returns a guard that unlocks when dropped, also when the critical section panics.
    #[inline(always)]
    pub fn enter<'a>(&'a self, h: &'a P::Header) -> Result<HeaderGuard<'a, P>, MonitorError> {
        // SAFETY: see `HandleCore::exit`: our own context, `h` borrowed by the guard for as
        // long as the lock is held through it.
        let hint = unsafe { self.core.enter_hinted(h)? };
        Ok(self.guard(h, hint))
    }

    /// Locks `h` if no other thread owns it; `Ok(None)` if one does.
    #[inline]
    pub fn try_enter<'a>(
        &'a self,
        h: &'a P::Header,
    ) -> Result<Option<HeaderGuard<'a, P>>, MonitorError> {
        // Not `then_some`: that would build (and drop, i.e. exit) a guard on failure too.
        // SAFETY: as in `enter`.
        if unsafe { P::try_enter(&self.core.rt, &self.core.cx, h)? } {
            Ok(Some(self.guard(h, P::Hint::default())))
        } else {
            Ok(None)
        }
    }

    #[inline(always)]
    fn guard<'a>(&'a self, h: &'a P::Header, hint: P::Hint) -> HeaderGuard<'a, P> {
        if !P::KNOWS_HOLDS {
            self.core.guards.set(self.core.guards.get().wrapping_add(1));
        }
        HeaderGuard {
            th: &self.core,
            h,
            hint,
        }
    }

    /// Unstructured lock (JNI `MonitorEnter`): held until a matching
    /// [`monitor_exit`](Self::monitor_exit) or until this handle is dropped. Exits may come in
    /// any order (enter A, enter B, exit A, exit B).
    pub fn monitor_enter(&self, h: &'env P::Header) -> Result<(), MonitorError> {
        // SAFETY: as in `enter`; `h` lives for `'env`, which outlives this handle.
        unsafe { self.core.enter(h)? };
        self.record_unstructured(h);
        Ok(())
    }

    /// Unstructured try-lock: `Ok(true)` and held as by [`monitor_enter`](Self::monitor_enter)
    /// if no other thread owns `h`.
    pub fn try_monitor_enter(&self, h: &'env P::Header) -> Result<bool, MonitorError> {
        // SAFETY: as in `monitor_enter`.
        let got = unsafe { P::try_enter(&self.core.rt, &self.core.cx, h)? };
        if got {
            self.record_unstructured(h);
        }
        Ok(got)
    }

    fn record_unstructured(&self, h: &'env P::Header) {
        let mut u = self.unstructured.borrow_mut();
        let p = h as *const P::Header;
        match u.iter_mut().find(|(q, _)| *q == p) {
            Some((_, n)) => *n += 1,
            None => u.push((p, 1)),
        }
    }

    /// Unstructured unlock (JNI `MonitorExit`) of one [`monitor_enter`](Self::monitor_enter)
    /// made through this handle. `IllegalMonitorState` if this handle holds no unstructured
    /// lock on `h` (a lock taken with a guard is released by dropping the guard).
    pub fn monitor_exit(&self, h: &'env P::Header) -> Result<(), MonitorError> {
        let mut u = self.unstructured.borrow_mut();
        let p = h as *const P::Header;
        let i = u
            .iter()
            .position(|(q, _)| *q == p)
            .ok_or(MonitorError::IllegalMonitorState)?;
        self.core.exit(h)?;
        u[i].1 -= 1;
        if u[i].1 == 0 {
            u.swap_remove(i);
        }
        Ok(())
    }

    /// Object.wait on `h`, which this thread must own: `None` waits until notified or
    /// interrupted; `Some(d)` at most `d` (`Some(Duration::ZERO)` releases and re-acquires).
    /// `InvalidTimeout` if the deadline is not representable.
    pub fn wait(
        &self,
        h: &P::Header,
        timeout: Option<Duration>,
    ) -> Result<WaitOutcome, MonitorError> {
        let deadline = match timeout {
            None => None,
            Some(d) => Some(deadline_after(d).ok_or(MonitorError::InvalidTimeout)?),
        };
        self.wait_until(h, deadline)
    }

    /// Object.wait until an absolute deadline (`None`: no deadline).
    pub fn wait_until(
        &self,
        h: &P::Header,
        deadline: Option<Instant>,
    ) -> Result<WaitOutcome, MonitorError> {
        // SAFETY: as in `enter`; the wait returns holding `h` as before (or not at all, with
        // `IllegalMonitorState`, if it was not held).
        unsafe { P::wait(&self.core.rt, &self.core.cx, h, deadline) }
    }

    /// Java's `Object.wait(long millis, int nanos)`, with its argument checks: negative
    /// `millis` or `nanos` outside `0..=999_999` is `InvalidTimeout`; `(0, 0)` waits forever.
    pub fn wait_java(
        &self,
        h: &P::Header,
        millis: i64,
        nanos: i32,
    ) -> Result<WaitOutcome, MonitorError> {
        if millis < 0 || !(0..=999_999).contains(&nanos) {
            return Err(MonitorError::InvalidTimeout);
        }
        let timeout = (millis != 0 || nanos != 0)
            .then(|| Duration::from_millis(millis as u64) + Duration::from_nanos(nanos as u64));
        self.wait(h, timeout)
    }

    /// Object.notify on `h`, which this thread must own.
    pub fn notify(&self, h: &P::Header) -> Result<(), MonitorError> {
        // SAFETY: as in `enter`.
        unsafe { P::notify(&self.core.rt, &self.core.cx, h, false) }
    }

    /// Object.notifyAll on `h`, which this thread must own.
    pub fn notify_all(&self, h: &P::Header) -> Result<(), MonitorError> {
        // SAFETY: as in `enter`.
        unsafe { P::notify(&self.core.rt, &self.core.cx, h, true) }
    }

    /// Whether this thread owns `h`'s lock (Java's `Thread.holdsLock`).
    #[inline]
    pub fn holds_lock(&self, h: &P::Header) -> bool {
        P::holds_lock(&self.core.rt, &self.core.cx, h)
    }

    /// How many times this thread holds `h`'s lock (0 if it does not).
    pub fn lock_count(&self, h: &P::Header) -> u32 {
        P::lock_count(&self.core.rt, &self.core.cx, h)
    }

    /// Reads and clears this thread's interrupt status (Java's `Thread.interrupted()`).
    pub fn interrupted(&self) -> bool {
        self.core.cx.core().take_interrupt()
    }

    /// This thread's interrupt status, unchanged (Java's `isInterrupted()`).
    pub fn is_interrupted(&self) -> bool {
        self.core.cx.core().is_interrupted()
    }

    /// Safepoint poll (see [`Protocol::poll`]): call it in long loops that take no lock when
    /// the protocol revokes biases by handshake (`biased`, `fable`); free otherwise.
    #[inline]
    pub fn poll(&self) {
        // SAFETY: as in `enter`.
        unsafe { P::poll(&self.core.rt, &self.core.cx) }
    }

    /// Runs `f` "in native" (JNI's state transition): the thread counts as being at a
    /// safepoint meanwhile, so a revoker never waits for it. Locks held stay held (a
    /// `synchronized` native method), and calls may nest. `f` should not lock this runtime's
    /// monitors; if it does, a protocol that cares (`biased`, `fable`: a bias owner in native
    /// is revoked without its cooperation) refuses the lock, wait or notify with
    /// `Err(InNative)`, never acting as an owner it no longer is. Unlocks are carried out (a
    /// guard dropped inside `f` releases its level), under the revokers' own mutex.
    ///
    /// ```
    /// use objmon::vm::{Runtime, Fable};
    /// let rt = Runtime::<Fable>::with_defaults();
    /// let me = rt.attach().unwrap();
    /// let n = me.in_native(|| 42); // a blocking system call, say
    /// assert_eq!(n, 42);
    /// ```
    pub fn in_native<R>(&self, f: impl FnOnce() -> R) -> R {
        // SAFETY: our own context (as in `enter`); the transition is left by `Leave` below
        // on every path out of `f`, unwinding included.
        unsafe { P::enter_native(&self.core.rt, &self.core.cx) };
        struct Leave<'h, P: Protocol>(&'h HandleCore<P>);
        impl<P: Protocol> Drop for Leave<'_, P> {
            fn drop(&mut self) {
                // SAFETY: our own context, which entered native above.
                unsafe { P::leave_native(&self.0.rt, &self.0.cx) };
            }
        }
        let _leave = Leave(&self.core);
        f()
    }

    /// Detaches this handle now; returns how many unstructured lock levels it still held and
    /// has released. Dropping the handle does the same. The thread detaches from the runtime
    /// with its last handle.
    pub fn detach(self) -> usize {
        let mut me = self;
        me.release_all()
    }

    fn release_all(&mut self) -> usize {
        let held = std::mem::take(self.unstructured.get_mut());
        let mut released = 0;
        for (p, n) in held {
            // SAFETY: `p` was recorded from a `&'env P::Header` in `monitor_enter`; `'env`
            // is invariant and outlives `self` (the handle's type carries it), so the header
            // is still alive and at the same address (it is borrowed, so it cannot move).
            let h = unsafe { &*p };
            for _ in 0..n {
                if self.core.exit(h).is_ok() {
                    released += 1;
                }
            }
        }
        released
    }
}

impl<P: Protocol> Drop for ThreadHandle<'_, P> {
    fn drop(&mut self) {
        self.release_all();
        if self.core.guards.get() != 0 {
            // A forgotten guard: its lock stays with this id, which must never be reused.
            self.att.leaked.set(true);
        }
        // The last handle of this identity drops the attachment: the detach.
    }
}

impl<P: Protocol> std::fmt::Debug for ThreadHandle<'_, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadHandle")
            .field("protocol", &P::NAME)
            .field("id", &self.id())
            .finish_non_exhaustive()
    }
}

/// A held lock (from [`ThreadHandle::enter`]); dropping it unlocks one level.
#[must_use = "dropping the guard unlocks at once"]
pub struct HeaderGuard<'a, P: Protocol> {
    th: &'a HandleCore<P>,
    h: &'a P::Header,
    /// The protocol's hint for this level's unlock ([`Protocol::lock`]; `()` for
    /// most).
    hint: P::Hint,
}

impl<P: Protocol> HeaderGuard<'_, P> {
    /// Object.wait (see [`ThreadHandle::wait`]).
    pub fn wait(&self, timeout: Option<Duration>) -> Result<WaitOutcome, MonitorError> {
        let deadline = match timeout {
            None => None,
            Some(d) => Some(deadline_after(d).ok_or(MonitorError::InvalidTimeout)?),
        };
        // SAFETY: as in `ThreadHandle::enter` (the guard borrows the handle).
        unsafe { P::wait(&self.th.rt, &self.th.cx, self.h, deadline) }
    }

    /// Object.notify.
    pub fn notify(&self) -> Result<(), MonitorError> {
        // SAFETY: as in `ThreadHandle::enter`.
        unsafe { P::notify(&self.th.rt, &self.th.cx, self.h, false) }
    }

    /// Object.notifyAll.
    pub fn notify_all(&self) -> Result<(), MonitorError> {
        // SAFETY: as in `ThreadHandle::enter`.
        unsafe { P::notify(&self.th.rt, &self.th.cx, self.h, true) }
    }

    /// The locked header.
    pub fn header(&self) -> &P::Header {
        self.h
    }
}

impl<P: Protocol> Drop for HeaderGuard<'_, P> {
    // `always`: the guard's drop is the user's monitorexit; out of line it costs a call and
    // the spills around it on every unlock (seen with callgrind: +10 instructions).
    #[inline(always)]
    fn drop(&mut self) {
        if !P::KNOWS_HOLDS {
            self.th.guards.set(self.th.guards.get().wrapping_sub(1));
        }
        // SAFETY: `hint` is what `enter_hinted` returned for `self.h` through `self.th`
        // when this guard was made (`ThreadHandle::enter`; `try_enter` stores none), and a
        // guard's fields move only together.
        let r = unsafe { self.th.exit_hinted(self.h, self.hint) };
        // A guard's lock level is its own: the only way to lose it is a bug in a protocol.
        debug_assert!(r.is_ok(), "guard exit failed: {r:?}");
    }
}

/// Identity hashes.
impl<P: Protocol> ThreadHandle<'_, P> {
    /// `h`'s identity hash (Java's `System.identityHashCode`): installed on the first call,
    /// the same value ever after, from any thread, in every lock state. A value in
    /// `1..2^P::HASH_BITS`. Fails only with `MonitorTableFull` where the protocol must inflate
    /// to store the hash and cannot.
    pub fn identity_hash(&self, h: &P::Header) -> Result<u32, MonitorError> {
        // SAFETY: as in `enter`.
        unsafe { P::identity_hash(&self.core.rt, &self.core.cx, h) }
    }
}
