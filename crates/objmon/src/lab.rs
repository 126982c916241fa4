//! Building blocks for people who study locking protocols: the pieces under the fat monitor,
//! usable and measurable on their own (the benchmark harness's system-lock rows use them).
//! Neither a Rust user nor an embedder needs this module.

pub use crate::tasuki::{SystemLockConfig, SystemLockVariant, TasukiLock};

/// The bytes of one fat monitor as the monitor table stores it (its queues' heap blocks not
/// counted): what an inflation costs in memory.
pub fn fat_monitor_bytes() -> usize {
    crate::table::MonitorTable::monitor_bytes()
}
