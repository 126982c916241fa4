//! `contended`: contended locking over the space a user meets, not one point.
//!
//! **What.** One lock shared by `t` threads; each loops `lock → critical section → unlock →
//! work between locks`, for every cell of threads × critical section × work between. The
//! critical section works ON the data behind the lock: `empty` (only the hand-off
//! bookkeeping, below), `50ns` and `1us` (a multiply-add chain over the 8 `u64`s behind the
//! lock). Work between locks is `none`, `100ns` or `1us` of thread-local arithmetic kept
//! alive with `black_box`. Both work loops are calibrated once at start, single-threaded
//! (iterations per target ns). Rows are user-facing types written as a user writes them
//! (`let g = m.lock(); …; drop(g)`): `Monitor<T>` (the default protocol), `Monitor<T, Thin>`,
//! `Monitor<T, Fable>`, `Monitor<T, Tasuki>`; `lightweight` through the vm API
//! (`Runtime::new_unchecked`, unsafe: `Monitor` refuses the protocol; no guard is ever
//! leaked here, which is its contract); anchors `parking_lot::Mutex`,
//! `parking_lot::ReentrantMutex` (data in `Cell`s, as for `Monitor`) and `std::sync::Mutex`.
//!
//! **Timing.** A cell-rep spawns its threads; each takes the lock once (attachment, bias
//! revocation, inflation happen before the clock), then all meet at a barrier. The main
//! thread reads `Instant` there, sleeps `--millis`, raises a stop flag; each thread reads
//! `Instant` when it sees the flag. **ns per lock+unlock** = (latest thread end − start) /
//! acquisitions of all threads: the aggregate (lower is better; a critical section of
//! `c` ns puts a floor of `c` under it).
//!
//! **Fairness.** One acquisition in [`SAMPLE`] per thread is timed from the `lock()` call to
//! the guard in hand, with the TSC (`_rdtsc`, calibrated against `Instant` at start; `Instant`
//! off x86_64); the longest wait is the max over the sampled ones; long waits are the sampled ones over
//! [`LONG_WAIT`], per million sampled acquisitions (pooled over reps). Share = fewest / most
//! acquisitions of one thread. A hand-off is an acquisition by another thread than the
//! previous holder: `last_owner` lives in the protected data and the critical section
//! compares and updates it (that compare is all `empty` does).
//!
//! **Stability.** Repetitions interleave: rep 1 of every (cell, row), then rep 2, … (rows
//! rotated each rep), so a burst of load hits every row alike. A cell's figure is the median
//! over reps, with min–max; spread = (max − min) / median, and a cell above [`UNSTABLE_PCT`]
//! is flagged unstable and never called a winner. The summary gives, per row and thread
//! count, the geometric mean over cells of the ratio to `parking_lot::Mutex` (min–max), and
//! of the per-cell long-wait rate's ratio (each cell weighs the same; the rate pooled over
//! the cells is printed beside it, but there each lock weighs the cells by its own
//! throughput, since acquisitions are sampled at a fixed rate).
//!
//! Parts (`contended/`): `matrix.rs` the axes and the `Config`, `work.rs` the protected data,
//! the work loops and the clock, `subjects.rs` the rows' locks, `drive.rs` a cell-rep and the
//! run, `stats.rs` the figures over reps and the summary, `render.rs` table, CSV and JSON,
//! `section.rs` the report's section.

mod drive;
mod matrix;
mod render;
mod section;
mod stats;
mod subjects;
mod work;

pub use drive::run;
pub use matrix::{Between, Config, Cs, Row};
pub use render::{print_csv, print_json, print_table};
pub use section::section;
pub use work::Calibration;

/// Most threads `--threads` takes.
pub const MAX_THREADS: u64 = 256;

/// Shortest and longest `--millis`.
pub const MIN_MILLIS: u64 = 10;
/// See [`MIN_MILLIS`].
pub const MAX_MILLIS: u64 = 60_000;

/// One acquisition in `SAMPLE` of each thread has its wait timed.
pub const SAMPLE: u64 = 8;

/// A sampled wait longer than this is a long wait, counted beside the longest: the hand-off
/// bound of `parking_lot` (its fair unlock, every 0.5 ms on average), WebKit and CPython. With
/// more threads than cores the longest wait of a rep is one or two scheduler slices (a yield
/// or a preemption of a few ms) whichever lock; how often a thread waits past the bound is
/// what a lock's policy moves. (A percentile is not: 99.9 % of the sampled acquisitions wait
/// under 0.1 µs in every cell, most of them re-taking a lock nobody else asked for.)
pub const LONG_WAIT: std::time::Duration = std::time::Duration::from_millis(1);

/// Spread (%) above which a cell is unstable.
pub const UNSTABLE_PCT: f64 = 25.0;

/// `u64`s behind the lock.
const SLOTS: usize = 8;

/// No previous holder (before the first acquisition).
const NOBODY: usize = usize::MAX;
