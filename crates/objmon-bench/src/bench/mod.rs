//! The seeds' experiments, each written once and generic over
//! [`Subject`](crate::subject::Subject): the catalog of benches ([`catalog`](mod@catalog)),
//! how a bench runs and interleaves its rows ([`run`](mod@run)), and one file per family of
//! workloads (seed 000's; seed 002's; seed 003's tree, seed 004's waits and wait/notify).
//!
//! Every workload returns one value per repetition in **ns per operation** (an operation is
//! one lock+unlock pair unless the bench says otherwise), timed around the measured loop only:
//! runtime creation, object allocation for the working set and thread start-up are outside the
//! clock (threads start behind a barrier). One untimed warm-up repetition precedes the timed
//! ones, so first-touch page faults and first inflations are not in the figures.

mod catalog;
mod run;
mod seed000;
mod seed002;
#[cfg(test)]
pub(crate) mod tests;
mod waits;

pub use catalog::*;
pub use run::*;
pub use seed002::*;
pub use waits::*;

/// An object as a heap holds it: at least 16 bytes, the smallest Java object with a
/// compressed class pointer, so that working sets of tiny headers are not unrealistically
/// dense in the cache.
#[repr(align(16))]
pub struct Slot<O>(pub O);
