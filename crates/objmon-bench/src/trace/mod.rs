//! Monitor traces of real Java programs: the parser of the recorder's format
//! (`java/agent/FORMAT.md`, in [`format`](mod@format)), the seeds' characterization of a
//! program's locking (seed 000 Table 1 and Figure 3; seed 003 Tables 2–5, in
//! [`characterize`](mod@characterize)), and [`replay`] of a trace's threads against an objmon
//! runtime or an anchor ([`replay_anchor`]: `objmon::Monitor<()>`, `std::sync::Mutex`,
//! `parking_lot::ReentrantMutex`), all through one driver.
//!
//! Every figure is computed from the operation events sorted by their global sequence number,
//! which the recorder takes while the object's monitor is held: per object this is the order
//! the JVM performed the operations in, and across objects an interleaving consistent with
//! every monitor's ownership.

mod characterize;
mod driver;
mod format;
mod replay_cli;
mod replay_plan;
#[cfg(test)]
pub(crate) mod tests;

pub use characterize::*;
pub use driver::*;
pub use format::*;
pub use replay_cli::*;
pub use replay_plan::*;
