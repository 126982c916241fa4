//! Errors returned by monitor operations. Misuse is always one of these, never undefined
//! behaviour and never a hang.

use std::fmt;

/// What went wrong in a monitor operation. The names follow the Java exceptions a JVM would
/// throw for the same misuse, so a runtime can map them one to one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MonitorError {
    /// The calling thread does not own the monitor it tried to exit, wait on or notify
    /// (Java's `IllegalMonitorStateException`).
    IllegalMonitorState,
    /// The wait was interrupted, or the thread's interrupt status was already set when it
    /// called wait; the status has been cleared (Java's `InterruptedException`).
    Interrupted,
    /// The timeout is out of range: negative, nanoseconds outside `0..=999_999`, or so far in
    /// the future that the clock cannot represent the deadline (Java's
    /// `IllegalArgumentException`).
    InvalidTimeout,
    /// `Config::max_threads` threads are attached (retired ids count), or every thread id of
    /// the process (32767, shared by all runtimes) is in use.
    TooManyThreads,
    /// `Config::monitor_capacity` monitors are in use, or every index of the process (2^23 − 1,
    /// seed 000 §2.3, shared by all runtimes in chunks of 1024) is.
    MonitorTableFull,
    /// The recursion count of a fat monitor would exceed `u32::MAX`.
    RecursionOverflow,
    /// No attached thread has this id.
    NoSuchThread,
    /// A lock operation was made inside
    /// [`ThreadHandle::in_native`](crate::vm::ThreadHandle::in_native), where a protocol whose
    /// revocation counts on native threads not locking (`biased`, `fable`) refuses it.
    InNative,
    /// The header belongs to another runtime: it names a fat monitor that this runtime's
    /// table has not bound to it, or a lock owner this runtime does not know. A header must
    /// be used with one runtime only (`docs/soundness.md` §6); where using it with a second
    /// one is detected, the operation fails with this and changes nothing.
    ForeignHeader,
}

impl fmt::Display for MonitorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::IllegalMonitorState => "current thread does not own the monitor",
            Self::Interrupted => "wait interrupted",
            Self::InvalidTimeout => "timeout value is out of range",
            Self::TooManyThreads => "no free thread id: too many attached threads",
            Self::MonitorTableFull => "monitor table is full",
            Self::RecursionOverflow => "monitor recursion count overflow",
            Self::NoSuchThread => "no attached thread has this id",
            Self::InNative => "monitor operation made while the thread is in native code",
            Self::ForeignHeader => "the header belongs to another runtime",
        })
    }
}

impl std::error::Error for MonitorError {}
