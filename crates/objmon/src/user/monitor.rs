//! [`Monitor<T>`]: a value behind a Java-style monitor (reentrant lock, wait, notify), in one
//! type with its header, for Rust programs. No attach, no handle: the calling thread is
//! attached on its first operation (`attach.rs`).
//!
//! Owns the value's access rules: a guard gives `&T` (the lock is reentrant, so two guards of
//! one thread may coexist: shared access only, as `parking_lot::ReentrantMutexGuard`), the
//! value is reached only while the lock is held, and the monitor gives its fat monitor back
//! when dropped.

use super::attach::Auto;
use super::global::{sealed, Global, MonitorProtocol, RuntimeRef};
use crate::monitor::WaitOutcome;
use crate::park::deadline_after;
use crate::protocol::Protocol;
use crate::runtime::Runtime;
use crate::sync::Arc;
use crate::MonitorError;
use std::cell::UnsafeCell;
use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

/// The protocol of [`Monitor::new`] when none is named: `thin`, chosen by measurement.
///
/// `thin` has the smallest header (4 bytes: `Monitor<u32>` is 8 bytes) and the fastest first
/// lock of the general-purpose protocols: one CAS and a release store, at the bare CAS +
/// store loop's speed. The biased protocols are faster still for a value only one thread
/// ever locks, but pay a revocation (a `membarrier`, milliseconds with many threads) the
/// first time another thread comes: a poor default. Contended, it goes to its fat monitor
/// once inflated. The figures: `docs/benchmarks.md`, "Choosing the default protocol" and
/// "Contended matrix".
pub type DefaultProtocol = crate::protocol::thin::Thin;

/// A value of type `T` behind a Java-style monitor: a reentrant lock with `wait`, `notify`
/// and `notifyAll`, out of a few bits of a header word stored beside the value.
///
/// `size_of::<Monitor<u64>>()` is 16 bytes: the default protocol's 4-byte header and the
/// value. Nothing is allocated until the lock is contended or waited on (then a fat monitor,
/// given back when the `Monitor` drops). Any number of monitors cost nothing more.
///
/// ```
/// use objmon::Monitor;
/// use std::cell::RefCell;
/// use std::sync::Arc;
///
/// // A queue: consumers wait until it is non-empty, producers notify.
/// let queue = Arc::new(Monitor::new(RefCell::new(Vec::<u32>::new())));
/// let consumer = {
///     let queue = queue.clone();
///     std::thread::spawn(move || {
///         let mut q = queue.lock();
///         q.wait_while(|v| v.borrow().is_empty()).unwrap(); // releases the lock while waiting
///         let item = q.borrow_mut().pop().unwrap();
///         item
///     })
/// };
/// {
///     let q = queue.lock();
///     q.borrow_mut().push(42);
///     q.notify_all();
/// }
/// assert_eq!(consumer.join().unwrap(), 42);
/// ```
///
/// **Mutation.** A guard gives `&T`: the lock is reentrant (a thread may hold two guards of one
/// monitor), so it cannot give `&mut T`. Put the mutable parts in a `Cell` or `RefCell` (the
/// monitor makes them safe to share: `Monitor<T>` is `Sync` when `T` is `Send`), or use
/// `lock_api::Mutex<objmon::RawMonitor, T>` for a non-reentrant lock that gives `&mut T`.
///
/// **Panics.** `lock` and the guard's `notify` cannot fail for a reason a program can act on;
/// they panic with a message if a runtime resource is exhausted (the monitor table when more
/// than `Config::monitor_capacity` monitors are inflated at once, thread ids when more than
/// `Config::max_threads` threads use one runtime at once) or if called inside
/// [`ThreadHandle::in_native`](crate::vm::ThreadHandle::in_native) of `biased` / `fable`.
///
/// **What the types forbid.** A guard stays on its thread (the lock is its thread's):
///
/// ```compile_fail,E0277
/// let m = objmon::Monitor::new(0u32);
/// let g = m.lock();
/// std::thread::scope(|s| {
///     s.spawn(move || drop(g)); // `MonitorGuard` is not `Send`
/// });
/// ```
///
/// a monitor shares its value between threads only if the value may move between them:
///
/// ```compile_fail,E0277
/// let m = std::sync::Arc::new(objmon::Monitor::new(std::rc::Rc::new(0u32)));
/// std::thread::spawn(move || drop(m)); // `Rc` is not `Send`, so the monitor is not `Sync`
/// ```
///
/// and no reference into the value lives across a `wait`, which lets other threads in:
///
/// ```compile_fail,E0502
/// let m = objmon::Monitor::new(std::cell::RefCell::new(0u32));
/// let mut g = m.lock();
/// let r = g.borrow_mut(); // borrows the guard
/// g.wait(None).unwrap(); // needs the guard mutably
/// drop(r);
/// ```
///
/// **Protocols and runtimes.** `P` picks the locking protocol (any of [the
/// catalog](crate#which-protocol) but the two that find a monitor by the header's address:
/// see [`MonitorProtocol`]); `R` where the runtime lives: [`Global`], the protocol's
/// process-wide runtime (zero-sized), or `Arc<Runtime<P>>` from
/// [`with_runtime`](Monitor::with_runtime).
pub struct Monitor<T: ?Sized, P: Protocol = DefaultProtocol, R: RuntimeRef<P> = Global> {
    header: P::Header,
    rt: R,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only by the thread that holds the lock (guards are neither
// `Send` nor `Sync`), and the protocols give the lock to one thread at a time with
// acquire/release ordering between holders; so moving the monitor moves a `T` (needs `T:
// Send`), and sharing it hands a `T` from thread to thread, never two at once (`T: Send`, as
// `std::sync::Mutex` and `parking_lot::ReentrantMutex`). The header and runtime reference are
// `Send + Sync` themselves.
unsafe impl<T: ?Sized + Send, P: Protocol, R: RuntimeRef<P> + Send> Send for Monitor<T, P, R> {}
// SAFETY: see `Send` above.
unsafe impl<T: ?Sized + Send, P: Protocol, R: RuntimeRef<P> + Sync> Sync for Monitor<T, P, R> {}

impl<T> Monitor<T> {
    /// A monitor holding `value`, with the default protocol on its process-wide runtime.
    /// `const`, so a monitor can be a `static`. (Another protocol:
    /// [`with_protocol`](Monitor::with_protocol); `new` names the default one so that
    /// `Monitor::new(v)` needs no type annotation.)
    ///
    /// ```
    /// use objmon::Monitor;
    /// static COUNTER: Monitor<std::cell::Cell<u64>> = Monitor::new(std::cell::Cell::new(0));
    /// let c = COUNTER.lock();
    /// c.set(c.get() + 1);
    /// ```
    pub const fn new(value: T) -> Self {
        Self::with_protocol(value)
    }
}

impl<T, P: MonitorProtocol> Monitor<T, P, Global> {
    /// A monitor holding `value`, with protocol `P` on its process-wide runtime. `const`.
    ///
    /// ```
    /// use objmon::{Fable, Monitor};
    /// let m = Monitor::<_, Fable>::with_protocol(String::from("biased to me"));
    /// assert_eq!(m.lock().len(), 12);
    /// ```
    pub const fn with_protocol(value: T) -> Self {
        Self {
            header: <P as sealed::MonitorProtocol>::UNLOCKED,
            rt: Global,
            value: UnsafeCell::new(value),
        }
    }
}

impl<T, P: MonitorProtocol> Monitor<T, P, Arc<Runtime<P>>> {
    /// A monitor holding `value`, on the runtime `rt` (for hosts that run several runtimes,
    /// or want one with their own [`Config`](crate::vm::Config)). The monitor keeps `rt`
    /// alive, and so does every thread that used a monitor of `rt`, until it exits (its
    /// automatic attachment holds the runtime): a pool thread that touches many short-lived
    /// runtimes keeps them all.
    ///
    /// ```
    /// use objmon::{Monitor, Fable};
    /// use objmon::vm::Runtime;
    /// let rt = Runtime::<Fable>::with_defaults();
    /// let m = Monitor::with_runtime(&rt, 5u32);
    /// assert_eq!(*m.lock(), 5);
    /// assert_eq!(rt.stats_snapshot().attached_threads, 1);
    /// ```
    pub fn with_runtime(rt: &Arc<Runtime<P>>, value: T) -> Self {
        Self {
            header: P::Header::default(),
            rt: rt.clone(),
            value: UnsafeCell::new(value),
        }
    }
}

impl<T, P: Protocol, R: RuntimeRef<P>> Monitor<T, P, R> {
    /// The value, unlocked for good.
    pub fn into_inner(self) -> T {
        let mut me = ManuallyDrop::new(self);
        me.give_back();
        // SAFETY: `me` is never used or dropped again: `rt` is dropped below and `header` needs
        // no drop after `give_back` (atomics; the monitor it named went back to the runtime).
        unsafe {
            std::ptr::drop_in_place(&mut me.rt);
            std::ptr::read(&me.value).into_inner()
        }
    }
}

impl<T: ?Sized, P: Protocol, R: RuntimeRef<P>> Monitor<T, P, R> {
    /// Locks the monitor (Java's `synchronized`), blocking while another thread holds it.
    /// Reentrant: a thread that holds it gets another guard at once. Unlocked when the guard
    /// drops, also when the critical section panics.
    ///
    /// Panics only when a runtime resource is exhausted (see the type's documentation).
    // `always`: only `#[inline]`, LLVM left it out of line in a user's loop (a call and
    // three pushes and pops per lock: `user-loop-monitor` 6.45 against 5.75 ns;
    // objmon-bench's `monitor_lock_inlines_into_a_users_loop`), as `ThreadHandle::enter` is.
    #[inline(always)]
    pub fn lock(&self) -> MonitorGuard<'_, T, P, R> {
        let auto = sealed::RuntimeRef::current(&self.rt);
        // SAFETY: `current` returns this thread's live attachment (`attach.rs`: reached only
        // from its thread, freed only with no outstanding level).
        let a = unsafe { auto.as_ref() };
        // SAFETY: the context is the calling thread's own (an `Auto` never leaves its
        // thread); the header is borrowed by the guard for as long as the lock is held
        // through it; not in native (a `Monitor` operation is not a handle's `in_native`
        // closure, and the protocols that care refuse it there with `InNative`).
        if let Err(e) = unsafe { a.core.enter(&self.header) } {
            // SAFETY: this thread's attachment, not used again here.
            unsafe { Auto::settle(auto) };
            failed(e, "lock")
        }
        a.took();
        MonitorGuard::new(self, auto)
    }

    /// Locks the monitor if no other thread holds it; `None` if one does. Never waits.
    #[inline]
    pub fn try_lock(&self) -> Option<MonitorGuard<'_, T, P, R>> {
        let auto = sealed::RuntimeRef::current(&self.rt);
        // SAFETY: as in `lock`.
        let a = unsafe { auto.as_ref() };
        // SAFETY: as in `lock`.
        match unsafe { P::try_enter(&a.core.rt, &a.core.cx, &self.header) } {
            Ok(true) => {
                a.took();
                Some(MonitorGuard::new(self, auto))
            }
            Ok(false) => {
                // SAFETY: this thread's attachment, not used again here.
                unsafe { Auto::settle(auto) };
                None
            }
            Err(e) => {
                // SAFETY: as above.
                unsafe { Auto::settle(auto) };
                failed(e, "try_lock")
            }
        }
    }

    /// Locks the monitor, waiting at most `timeout` for another thread to release it.
    ///
    /// The protocols have no timed enter, so this retries [`try_lock`](Self::try_lock) with a
    /// back-off (spins, then yields, then sleeps of at most a millisecond): it is not queued
    /// behind the waiters of [`lock`](Self::lock) and can be overtaken by them.
    pub fn try_lock_for(&self, timeout: Duration) -> Option<MonitorGuard<'_, T, P, R>> {
        match deadline_after(timeout) {
            Some(d) => self.try_lock_until(d),
            None => Some(self.lock()),
        }
    }

    /// Locks the monitor, waiting until `deadline` at most (see
    /// [`try_lock_for`](Self::try_lock_for)).
    pub fn try_lock_until(&self, deadline: Instant) -> Option<MonitorGuard<'_, T, P, R>> {
        let mut got = None;
        super::poll_until(deadline, || {
            got = self.try_lock();
            got.is_some()
        });
        got
    }

    /// Whether some thread holds the lock (a snapshot: it may change at once).
    pub fn is_locked(&self) -> bool {
        match sealed::RuntimeRef::runtime(&self.rt) {
            Some(rt) => P::owner_of(rt, &self.header).is_some(),
            None => false,
        }
    }

    /// Whether the calling thread holds the lock (Java's `Thread.holdsLock`).
    pub fn is_owned_by_current_thread(&self) -> bool {
        match sealed::RuntimeRef::current_if_attached(&self.rt) {
            // SAFETY: as in `lock`.
            Some(auto) => unsafe {
                let a = auto.as_ref();
                P::holds_lock(&a.core.rt, &a.core.cx, &self.header)
            },
            None => false,
        }
    }

    /// The value, without locking: `&mut self` proves no other reference exists.
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }

    /// A raw pointer to the value (for FFI; using it races unless the lock is held).
    pub fn data_ptr(&self) -> *mut T {
        self.value.get()
    }

    /// Gives the header's fat monitor (if any) back to the runtime.
    fn give_back(&mut self) {
        if let Some(rt) = sealed::RuntimeRef::runtime(&self.rt) {
            P::reclaim(rt, &mut self.header);
        }
    }
}

impl<T: ?Sized, P: Protocol, R: RuntimeRef<P>> Drop for Monitor<T, P, R> {
    fn drop(&mut self) {
        self.give_back();
    }
}

impl<T: Default, P: MonitorProtocol> Default for Monitor<T, P, Global> {
    fn default() -> Self {
        Self::with_protocol(T::default())
    }
}

impl<T, P: MonitorProtocol> From<T> for Monitor<T, P, Global> {
    fn from(value: T) -> Self {
        Self::with_protocol(value)
    }
}

impl<T: ?Sized + fmt::Debug, P: Protocol, R: RuntimeRef<P>> fmt::Debug for Monitor<T, P, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Monitor");
        d.field("protocol", &P::NAME);
        match self.try_lock() {
            Some(g) => d.field("data", &&*g),
            None => d.field("data", &format_args!("<locked>")),
        };
        d.finish()
    }
}

#[cold]
#[inline(never)]
fn failed(e: MonitorError, op: &str) -> ! {
    match e {
        MonitorError::InNative => panic!(
            "objmon: Monitor::{op} inside ThreadHandle::in_native: this protocol refuses \
             monitor operations of a thread in native"
        ),
        e => panic!("objmon: Monitor::{op} failed: {e}"),
    }
}

/// A held lock of a [`Monitor`]: derefs to the value; dropping it unlocks one level.
///
/// Neither `Send` nor `Sync`: the lock is its thread's. `wait` releases the lock until
/// notified (every level, as Java does), then takes it back.
#[must_use = "dropping the guard unlocks at once"]
pub struct MonitorGuard<'a, T: ?Sized, P: Protocol = DefaultProtocol, R: RuntimeRef<P> = Global> {
    monitor: &'a Monitor<T, P, R>,
    /// The thread's attachment, kept alive by this guard's outstanding level.
    auto: NonNull<Auto<P>>,
    /// Not `Send`, not `Sync` (`NonNull` already makes it so; said twice for the reader).
    _not_send: PhantomData<*const ()>,
}

impl<'a, T: ?Sized, P: Protocol, R: RuntimeRef<P>> MonitorGuard<'a, T, P, R> {
    #[inline(always)]
    fn new(monitor: &'a Monitor<T, P, R>, auto: NonNull<Auto<P>>) -> Self {
        Self {
            monitor,
            auto,
            _not_send: PhantomData,
        }
    }

    #[inline(always)]
    fn auto(&self) -> &Auto<P> {
        // SAFETY: this guard's outstanding level keeps its thread's attachment alive
        // (`attach.rs`), and the guard never leaves that thread.
        unsafe { self.auto.as_ref() }
    }

    /// The monitor this guard locks.
    pub fn monitor(&self) -> &'a Monitor<T, P, R> {
        self.monitor
    }

    /// Java's `Object.wait`: releases the lock (all levels), waits until notified,
    /// interrupted or `timeout` elapses (`None`: no timeout; `Some(Duration::ZERO)` releases
    /// and re-acquires), then takes the lock back. May return `Notified` without a notify
    /// (a spurious wake-up is allowed by Java and happens here too rarely to rely on either
    /// way): re-check the condition, or use [`wait_while`](Self::wait_while).
    ///
    /// `Err(Interrupted)` if the thread was interrupted
    /// ([`Runtime::interrupt`](crate::vm::Runtime::interrupt)); `Err(InvalidTimeout)` if the
    /// deadline is not representable.
    ///
    /// ```
    /// use objmon::{Monitor, WaitOutcome};
    /// use std::time::Duration;
    /// let m = Monitor::new(());
    /// let mut g = m.lock();
    /// assert_eq!(g.wait(Some(Duration::from_millis(1))).unwrap(), WaitOutcome::TimedOut);
    /// ```
    pub fn wait(&mut self, timeout: Option<Duration>) -> Result<WaitOutcome, MonitorError> {
        let deadline = match timeout {
            None => None,
            Some(d) => Some(deadline_after(d).ok_or(MonitorError::InvalidTimeout)?),
        };
        self.wait_deadline(deadline)
    }

    /// `Object.wait` until `deadline` at most (see [`wait`](Self::wait)).
    pub fn wait_until(&mut self, deadline: Instant) -> Result<WaitOutcome, MonitorError> {
        self.wait_deadline(Some(deadline))
    }

    fn wait_deadline(&mut self, deadline: Option<Instant>) -> Result<WaitOutcome, MonitorError> {
        let a = self.auto();
        // SAFETY: as in `Monitor::lock`; the wait returns holding the lock as before.
        unsafe { P::wait(&a.core.rt, &a.core.cx, &self.monitor.header, deadline) }
    }

    /// Java's `Object.wait(long millis, int nanos)`, with its argument checks: negative
    /// `millis` or `nanos` outside `0..=999_999` is `InvalidTimeout`; `(0, 0)` waits without
    /// timeout.
    pub fn wait_java(&mut self, millis: i64, nanos: i32) -> Result<WaitOutcome, MonitorError> {
        if millis < 0 || !(0..=999_999).contains(&nanos) {
            return Err(MonitorError::InvalidTimeout);
        }
        let timeout = (millis != 0 || nanos != 0)
            .then(|| Duration::from_millis(millis as u64) + Duration::from_nanos(nanos as u64));
        self.wait(timeout)
    }

    /// Waits while `condition` holds (checked with the lock held, before each wait): the loop
    /// every use of `wait` should be. `Err(Interrupted)` if the thread is interrupted.
    pub fn wait_while(
        &mut self,
        mut condition: impl FnMut(&T) -> bool,
    ) -> Result<(), MonitorError> {
        while condition(self) {
            self.wait_deadline(None)?;
        }
        Ok(())
    }

    /// Waits while `condition` holds, at most `timeout`: `TimedOut` if it still held when the
    /// time was up, `Notified` once it does not.
    pub fn wait_while_for(
        &mut self,
        timeout: Duration,
        mut condition: impl FnMut(&T) -> bool,
    ) -> Result<WaitOutcome, MonitorError> {
        let deadline = deadline_after(timeout).ok_or(MonitorError::InvalidTimeout)?;
        while condition(self) {
            if self.wait_deadline(Some(deadline))? == WaitOutcome::TimedOut {
                return Ok(if condition(self) {
                    WaitOutcome::TimedOut
                } else {
                    WaitOutcome::Notified
                });
            }
        }
        Ok(WaitOutcome::Notified)
    }

    /// Java's `Object.notify`: wakes one thread waiting on this monitor, if any.
    pub fn notify(&self) {
        let a = self.auto();
        // SAFETY: as in `Monitor::lock`.
        if let Err(e) = unsafe { P::notify(&a.core.rt, &a.core.cx, &self.monitor.header, false) } {
            failed(e, "notify")
        }
    }

    /// Java's `Object.notifyAll`: wakes every thread waiting on this monitor.
    pub fn notify_all(&self) {
        let a = self.auto();
        // SAFETY: as in `Monitor::lock`.
        if let Err(e) = unsafe { P::notify(&a.core.rt, &a.core.cx, &self.monitor.header, true) } {
            failed(e, "notify_all")
        }
    }
}

impl<T: ?Sized, P: Protocol, R: RuntimeRef<P>> Deref for MonitorGuard<'_, T, P, R> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the lock is held by this thread while the guard lives; other threads reach
        // the value only under the lock, and this thread's other guards give `&T` only.
        unsafe { &*self.monitor.value.get() }
    }
}

impl<T: ?Sized, P: Protocol, R: RuntimeRef<P>> Drop for MonitorGuard<'_, T, P, R> {
    // `always`: the guard's drop is the user's unlock (see `handle.rs`'s guard).
    #[inline(always)]
    fn drop(&mut self) {
        let r = self.auto().core.exit(&self.monitor.header);
        debug_assert!(r.is_ok(), "guard exit failed: {r:?}");
        // SAFETY: this guard's level was taken with `took` in `lock`, is given back once here,
        // and the guard does not use `auto` afterwards.
        unsafe { Auto::gave_back(self.auto) };
    }
}

impl<T: ?Sized + fmt::Debug, P: Protocol, R: RuntimeRef<P>> fmt::Debug
    for MonitorGuard<'_, T, P, R>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display, P: Protocol, R: RuntimeRef<P>> fmt::Display
    for MonitorGuard<'_, T, P, R>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}
