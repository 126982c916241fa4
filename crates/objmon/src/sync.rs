//! One place that decides whether the crate's atomics, mutexes and threads are the real ones
//! or loom's model-checked stand-ins (`RUSTFLAGS="--cfg loom"`). Everything else in the crate
//! imports from here, so a loom model exercises exactly the code that ships.

/// Reference counts are not what the models are about (and loom's `Arc` cannot be a method
/// receiver), so std's `Arc` is used in both builds.
pub(crate) use std::sync::Arc;

#[cfg(not(loom))]
pub(crate) use std::sync::{
    atomic::{
        fence, AtomicBool, AtomicPtr, AtomicU16, AtomicU32, AtomicU64, AtomicUsize, Ordering,
    },
    Mutex, MutexGuard,
};

#[cfg(loom)]
pub(crate) use loom::sync::{
    atomic::{
        fence, AtomicBool, AtomicPtr, AtomicU16, AtomicU32, AtomicU64, AtomicUsize, Ordering,
    },
    Mutex, MutexGuard,
};

/// Locks a mutex of this crate. Our mutexes guard only short bookkeeping sections that do not
/// call out to user code, so a poisoned one still holds consistent data: take it anyway.
#[inline]
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    #[cfg(not(loom))]
    {
        m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
    #[cfg(loom)]
    {
        m.lock().unwrap()
    }
}

/// A hint to the CPU that we are in a spin-wait loop (`pause` on x86); a yield under loom so
/// that the model can schedule the thread we are waiting for.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(not(loom))]
    std::hint::spin_loop();
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// `x`, computed here: the compiler must have the value in a register before any memory
/// operation that follows in program order (an empty `asm!` block that takes and returns it
/// and, without `nomem`, counts as touching memory, so no store is moved ahead of it). For a
/// locked instruction's operand that a fast path would otherwise compute after its plain
/// stores: `thin`'s lock stores its record and then compare-and-swaps `w | me`; with the
/// `or` scheduled after the two stores, a user's lock+unlock loop took 5.7 ns on the 2-core
/// AMD EPYC (Zen 5) VM, with it before them 5.2 (`examples/user_loop time 20000000 thin`,
/// the same instructions otherwise). Elsewhere (other targets, loom) `x` itself.
#[inline(always)]
pub(crate) fn computed_before_stores(x: u32) -> u32 {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    {
        let mut x = x;
        // SAFETY: the block is empty (a comment naming the register): it reads and writes no
        // memory, touches no flags and no stack, and leaves `x` as it was.
        unsafe {
            std::arch::asm!("/* {0:e} */", inout(reg) x, options(nostack, preserves_flags));
        }
        x
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom))))]
    {
        x
    }
}

/// Gives up the processor for a moment (contention back-off).
#[inline]
pub(crate) fn yield_now() {
    #[cfg(not(loom))]
    std::thread::yield_now();
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// Whether `deadline` has passed. Under loom the real clock would make executions differ, so
/// it never has: a timeout fires only through the parker's modelled timed park.
#[inline]
pub(crate) fn deadline_passed(deadline: Option<std::time::Instant>) -> bool {
    #[cfg(not(loom))]
    {
        deadline.is_some_and(|d| std::time::Instant::now() >= d)
    }
    #[cfg(loom)]
    {
        let _ = deadline;
        false
    }
}

/// Whether at least `nanos` have passed since `since`. Under loom: always (deterministic, and
/// it makes the models explore the paths taken after a long wait).
#[inline]
pub(crate) fn waited_at_least(since: std::time::Instant, nanos: u32) -> bool {
    #[cfg(not(loom))]
    {
        since.elapsed().as_nanos() >= u128::from(nanos)
    }
    #[cfg(loom)]
    {
        let _ = (since, nanos);
        true
    }
}

/// Declares a constructor that is a `const fn` in the shipped build and a plain `fn` under loom
/// (whose atomics cannot be built in a constant). Headers use it so that a
/// [`Monitor`](crate::Monitor) can live in a `static`.
macro_rules! const_unless_loom {
    ($(#[$m:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty $body:block) => {
        #[cfg(not(loom))]
        $(#[$m])* $vis const fn $name($($arg: $ty),*) -> $ret $body
        #[cfg(loom)]
        $(#[$m])* $vis fn $name($($arg: $ty),*) -> $ret $body
    };
}
pub(crate) use const_unless_loom;
