//! Automatic attachment: a thread is attached to a runtime on its first monitor operation and
//! detached when it exits. This is what lets [`Monitor`](crate::Monitor) and
//! [`RawMonitor`](crate::RawMonitor) need no [`ThreadHandle`](crate::vm::ThreadHandle).
//!
//! Owns [`Auto`], one thread's automatic attachment to one runtime, and the per-thread list
//! of them. It shares the thread's identity on that runtime with any handle the thread got
//! from [`Runtime::attach`] (one OS thread, one id), and counts the lock levels taken through
//! it that are not yet released (`core.guards`).
//!
//! The rules that keep a guard's pointer to its `Auto` valid:
//!
//! - an `Auto` is reached only from the thread that made it: through this file's
//!   thread-locals, and through guards that are neither `Send` nor `Sync`;
//! - it is freed only when no lock level taken through it is outstanding (`guards == 0`);
//! - at thread exit the reaper (a thread-local's destructor) frees every `Auto` with no
//!   outstanding level and marks the others *orphans*, freed by the drop of their last guard
//!   (a guard kept in another thread-local that is destroyed later). An orphan whose guard was
//!   passed to `mem::forget` is never freed: its id stays taken, so no later thread inherits
//!   the lock (as a handle's forgotten guard retires its id, `handle.rs`).
//!
//! Thread-locals are torn down in an order nobody controls, so a monitor may be locked from
//! another thread-local's destructor after the reaper ran. The list is therefore a raw
//! pointer in a thread-local *without* a destructor (usable until the thread is gone), and an
//! `Auto` made after the reaper ran is an orphan from birth: freed when its levels are all
//! released. Nested locks in such a destructor still find it, so reentrancy holds there too.

use crate::handle::{Attachment, HandleCore};
use crate::protocol::Protocol;
use crate::runtime::Runtime;
use crate::sync::Arc;
use crate::MonitorError;
use std::cell::Cell;
use std::ptr::{self, NonNull};
use std::rc::Rc;
use std::thread::LocalKey;

/// A thread-local cell caching one `Auto` for a fast path (a process-wide runtime's).
pub type Cache<P> = LocalKey<Cell<*const Auto<P>>>;

/// One thread's automatic attachment to one runtime.
pub struct Auto<P: Protocol> {
    /// The runtime and the context (its `guards` count is unused: see `levels`).
    pub(crate) core: HandleCore<P>,
    /// The thread's identity: dropped with the `Auto` (the detach, unless a handle of the
    /// same identity lives on).
    _att: Rc<Attachment<P>>,
    /// Twice the lock levels taken through this and not yet released, plus [`ORPHAN`]. One
    /// word, so that a guard's drop is a decrement and one compare. Protocols that know what
    /// a thread holds (`P::KNOWS_HOLDS`: the lock stack tells) count nothing and are asked
    /// instead, keeping the count's upkeep off their fast paths.
    levels: Cell<usize>,
    /// The fast-path cache that points here, cleared when this is freed.
    cache: Option<&'static Cache<P>>,
}

/// In [`Auto::levels`]: the reaper has run; the `Auto` is freed when nothing is outstanding.
const ORPHAN: usize = 1;
/// In [`Auto::levels`]: one outstanding lock level.
const LEVEL: usize = 2;

/// One entry of the per-thread list, type-erased (a thread may use several protocols).
struct Entry {
    /// The runtime's address: the key.
    rt: usize,
    auto: *const (),
    reap: Reap,
}

/// Frees an `Auto` if it has no outstanding level (true), else marks it an orphan.
type Reap = unsafe fn(*const ()) -> bool;

thread_local! {
    /// This thread's automatic attachments (null until the first). No destructor, so it can be
    /// used from other thread-locals' destructors: the reaper below does the clean-up.
    static AUTOS: Cell<*mut Vec<Entry>> = const { Cell::new(ptr::null_mut()) };
    /// The last `find` hit, `(runtime address, Auto)`: a thread that uses one runtime of its
    /// own skips the list. Cleared when that `Auto` is freed.
    static LAST: Cell<(usize, *const ())> = const { Cell::new((0, ptr::null())) };
    /// Whether the reaper has run (the thread is exiting).
    static REAPED: Cell<bool> = const { Cell::new(false) };
    /// Its destructor is the thread-exit detach of every automatic attachment.
    static REAPER: Reaper = const { Reaper };
}

struct Reaper;

impl Drop for Reaper {
    fn drop(&mut self) {
        REAPED.with(|r| r.set(true));
        let list = AUTOS.with(Cell::get);
        if list.is_null() {
            return;
        }
        // Take the entries out first: freeing one edits the list (`release`).
        // SAFETY: `list` was made by `Box::into_raw` in `list_mut` and is freed only here or
        // in `release` when empty, on this thread; no reference into it is live across calls.
        let entries: Vec<(*const (), Reap)> =
            unsafe { (*list).iter().map(|e| (e.auto, e.reap)).collect() };
        for (auto, reap) in entries {
            // SAFETY: `auto` is a live `Auto` of this thread: entries are removed when their
            // `Auto` is freed, and `reap` is the function stored with it for its type.
            unsafe { reap(auto) };
        }
        free_list_if_empty();
    }
}

/// The per-thread list, made on first use.
fn list_mut() -> *mut Vec<Entry> {
    AUTOS.with(|l| {
        if l.get().is_null() {
            l.set(Box::into_raw(Box::new(Vec::new())));
        }
        l.get()
    })
}

fn free_list_if_empty() {
    AUTOS.with(|l| {
        let list = l.get();
        // SAFETY: as in `Reaper::drop`; freed only once the reaper has run (no later
        // attachment would find it otherwise) and when empty.
        if !list.is_null() && REAPED.with(Cell::get) && unsafe { (*list).is_empty() } {
            l.set(ptr::null_mut());
            // SAFETY: made by `Box::into_raw` in `list_mut`; the pointer was cleared above.
            drop(unsafe { Box::from_raw(list) });
        }
    });
}

/// The calling thread's automatic attachment to `rt`, if it has one.
#[inline]
pub(crate) fn find<P: Protocol>(rt: &Arc<Runtime<P>>) -> Option<NonNull<Auto<P>>> {
    let key = Arc::as_ptr(rt) as usize;
    let (last_key, last) = LAST.with(Cell::get);
    if last_key == key {
        // A live runtime's address names that runtime, of type `P`; the entry was cleared if
        // its `Auto` was freed.
        return NonNull::new(last as *mut Auto<P>);
    }
    find_in_list(key)
}

#[cold]
fn find_in_list<P: Protocol>(key: usize) -> Option<NonNull<Auto<P>>> {
    let list = AUTOS.with(Cell::get);
    if list.is_null() {
        return None;
    }
    // SAFETY: as in `Reaper::drop`.
    let found = unsafe { (*list).iter().find(|e| e.rt == key).map(|e| e.auto) }?;
    LAST.with(|l| l.set((key, found)));
    NonNull::new(found as *mut Auto<P>)
}

/// The calling thread's automatic attachment to `rt`, made now if it has none (and recorded in
/// `cache`, if given). Panics if every thread id of `rt` is taken: a monitor operation has no
/// error to return for it.
#[cold]
#[inline(never)]
pub(crate) fn find_or_attach<P: Protocol>(
    rt: &Arc<Runtime<P>>,
    cache: Option<&'static Cache<P>>,
) -> NonNull<Auto<P>> {
    let auto = match find(rt) {
        Some(a) => a,
        None => attach(rt, cache),
    };
    if let Some(c) = cache {
        c.with(|c| c.set(auto.as_ptr()));
    }
    auto
}

fn attach<P: Protocol>(rt: &Arc<Runtime<P>>, cache: Option<&'static Cache<P>>) -> NonNull<Auto<P>> {
    let att = match rt.attachment() {
        Ok(att) => att,
        Err(e) => attach_failed(e, rt),
    };
    // Registering the reaper fails once it has run: then this is an orphan from birth.
    let reaper_armed = !REAPED.with(Cell::get) && REAPER.try_with(|_| ()).is_ok();
    let auto = Box::new(Auto {
        core: HandleCore::of(&att),
        _att: att,
        levels: Cell::new(if reaper_armed { 0 } else { ORPHAN }),
        cache,
    });
    let auto = NonNull::from(Box::leak(auto));
    // SAFETY: `list_mut` is this thread's live list (see `Reaper::drop`).
    unsafe {
        (*list_mut()).push(Entry {
            rt: Arc::as_ptr(rt) as usize,
            auto: auto.as_ptr() as *const (),
            reap: reap::<P>,
        })
    };
    auto
}

#[cold]
fn attach_failed<P: Protocol>(e: MonitorError, rt: &Runtime<P>) -> ! {
    panic!(
        "objmon: cannot attach this thread to the {} runtime: {e} (Config::max_threads = {})",
        P::NAME,
        rt.threads().max_threads()
    )
}

/// The reaper's step for one `Auto`: free it if nothing is outstanding, else orphan it.
///
/// # Safety
/// `auto` is a live `Auto<P>` of the calling thread.
unsafe fn reap<P: Protocol>(auto: *const ()) -> bool {
    let auto = auto as *const Auto<P>;
    // SAFETY: the caller's promise.
    let a = unsafe { &*auto };
    if !a.holds_any() {
        // SAFETY: live, of this thread, nothing outstanding.
        unsafe { release(auto) };
        true
    } else {
        a.levels.set(a.levels.get() | ORPHAN);
        false
    }
}

/// Frees `auto`: out of the list and the cache, then dropped (which may detach the thread).
///
/// # Safety
/// `auto` is a live `Auto<P>` of the calling thread with no outstanding level, made by
/// `attach`; nothing uses it afterwards.
unsafe fn release<P: Protocol>(auto: *const Auto<P>) {
    let list = AUTOS.with(Cell::get);
    if !list.is_null() {
        // SAFETY: as in `Reaper::drop`.
        unsafe { (*list).retain(|e| e.auto != auto as *const ()) };
    }
    LAST.with(|l| {
        if l.get().1 == auto as *const () {
            l.set((0, ptr::null()));
        }
    });
    // SAFETY: the caller's promise.
    let a = unsafe { &*auto };
    if let Some(c) = a.cache {
        // `try_with`: the cache has no destructor, but be safe in any teardown order.
        let _ = c.try_with(|c| {
            if c.get() == auto {
                c.set(ptr::null());
            }
        });
    }
    // SAFETY: made by `Box::leak` in `attach`; removed from every place that names it above.
    drop(unsafe { Box::from_raw(auto as *mut Auto<P>) });
    free_list_if_empty();
}

impl<P: Protocol> Auto<P> {
    /// Whether a lock level taken through this (or, for `KNOWS_HOLDS` protocols, any lock of
    /// this thread) is outstanding.
    fn holds_any(&self) -> bool {
        if P::KNOWS_HOLDS {
            P::may_hold_any(&self.core.rt, &self.core.cx)
        } else {
            self.levels.get() >= LEVEL
        }
    }

    /// One more lock level outstanding (a guard was made).
    #[inline(always)]
    pub(crate) fn took(&self) {
        if !P::KNOWS_HOLDS {
            self.levels.set(self.levels.get() + LEVEL);
        }
    }

    /// One lock level released (its guard dropped after the unlock): frees an orphan whose
    /// last level this was.
    ///
    /// # Safety
    /// `this` is a live `Auto` of the calling thread with an outstanding level (from `took`)
    /// that this call gives back; nothing uses `this` afterwards unless it has levels left.
    #[inline(always)]
    pub(crate) unsafe fn gave_back(this: NonNull<Self>) {
        // SAFETY: the caller's promise.
        let a = unsafe { this.as_ref() };
        let left = if P::KNOWS_HOLDS {
            a.levels.get()
        } else {
            let left = a.levels.get() - LEVEL;
            a.levels.set(left);
            left
        };
        if left == ORPHAN {
            a.orphan_released();
        }
    }

    /// After an operation that took no level (a failed `try_lock`, a lock that failed): an
    /// orphan from birth (made after the reaper ran) with nothing outstanding is freed now,
    /// since no `gave_back` will come for it.
    ///
    /// # Safety
    /// `this` is a live `Auto` of the calling thread; nothing uses it afterwards (the caller
    /// fetches it anew for its next operation).
    #[inline]
    pub(crate) unsafe fn settle(this: NonNull<Self>) {
        // SAFETY: the caller's promise.
        let a = unsafe { this.as_ref() };
        if a.levels.get() == ORPHAN {
            a.orphan_released();
        }
    }

    /// The rare end of `gave_back`: an orphan (its thread is exiting) may have nothing left.
    #[cold]
    #[inline(never)]
    fn orphan_released(&self) {
        if !self.holds_any() {
            // SAFETY: an orphan of this thread with nothing outstanding; `gave_back`'s caller
            // uses it no more.
            unsafe { release(self as *const Self) };
        }
    }
}
