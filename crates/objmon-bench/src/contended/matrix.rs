//! The matrix's axes and what to measure: the critical sections ([`Cs`]), the work between
//! locks ([`Between`]), the rows ([`Row`]: the locks under test, as a user writes them) and
//! the [`Config`] of a run (threads × critical section × work between, rows, duration, reps).

use serde::Serialize;
use std::time::Duration;

/// The critical section.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum, Serialize)]
pub enum Cs {
    /// Only the hand-off bookkeeping.
    #[value(name = "empty")]
    Empty,
    /// ~50 ns on the protected data.
    #[value(name = "50ns")]
    Ns50,
    /// ~1 µs on the protected data.
    #[value(name = "1us")]
    Us1,
}

/// The work between locks.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum, Serialize)]
pub enum Between {
    /// Lock again at once.
    #[value(name = "none")]
    None,
    /// ~100 ns of thread-local arithmetic.
    #[value(name = "100ns")]
    Ns100,
    /// ~1 µs of thread-local arithmetic.
    #[value(name = "1us")]
    Us1,
}

/// A row: a user-facing lock type.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum, Serialize)]
pub enum Row {
    /// `objmon::Monitor<T>` (the default protocol).
    #[value(name = "monitor")]
    Monitor,
    /// `objmon::Monitor<T, Thin>`.
    #[value(name = "thin")]
    Thin,
    /// `objmon::Monitor<T, Fable>`.
    #[value(name = "fable")]
    Fable,
    /// `objmon::Monitor<T, Tasuki>`.
    #[value(name = "tasuki")]
    Tasuki,
    /// `lightweight` through `objmon::vm` (`Runtime::new_unchecked`).
    #[value(name = "lightweight")]
    Lightweight,
    /// `parking_lot::Mutex<T>`: the denominator of the ratios.
    #[value(name = "parking_lot")]
    ParkingLot,
    /// `parking_lot::ReentrantMutex<T>` (data in `Cell`s).
    #[value(name = "parking_lot_reentrant")]
    ParkingLotReentrant,
    /// `std::sync::Mutex<T>`.
    #[value(name = "std_mutex")]
    StdMutex,
}

impl Cs {
    /// Every critical section, in matrix order.
    pub const ALL: [Cs; 3] = [Cs::Empty, Cs::Ns50, Cs::Us1];
    pub(super) fn target_ns(self) -> f64 {
        match self {
            Cs::Empty => 0.0,
            Cs::Ns50 => 50.0,
            Cs::Us1 => 1000.0,
        }
    }
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Cs::Empty => "empty",
            Cs::Ns50 => "50ns",
            Cs::Us1 => "1us",
        }
    }
}

impl Between {
    /// Every work between locks, in matrix order.
    pub const ALL: [Between; 3] = [Between::None, Between::Ns100, Between::Us1];
    pub(super) fn target_ns(self) -> f64 {
        match self {
            Between::None => 0.0,
            Between::Ns100 => 100.0,
            Between::Us1 => 1000.0,
        }
    }
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Between::None => "none",
            Between::Ns100 => "100ns",
            Between::Us1 => "1us",
        }
    }
}

impl Row {
    /// Every row, in table order.
    pub const ALL: [Row; 8] = [
        Row::Monitor,
        Row::Thin,
        Row::Fable,
        Row::Tasuki,
        Row::Lightweight,
        Row::ParkingLot,
        Row::ParkingLotReentrant,
        Row::StdMutex,
    ];
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Row::Monitor => "monitor",
            Row::Thin => "thin",
            Row::Fable => "fable",
            Row::Tasuki => "tasuki",
            Row::Lightweight => "lightweight",
            Row::ParkingLot => "parking_lot",
            Row::ParkingLotReentrant => "parking_lot_reentrant",
            Row::StdMutex => "std_mutex",
        }
    }
}

/// What to measure.
pub struct Config {
    /// Thread counts.
    pub threads: Vec<usize>,
    /// Critical sections.
    pub cs: Vec<Cs>,
    /// Work between locks.
    pub between: Vec<Between>,
    /// Rows, in column order.
    pub rows: Vec<Row>,
    /// Duration of one cell-rep.
    pub duration: Duration,
    /// Repetitions per cell and row.
    pub reps: usize,
}
