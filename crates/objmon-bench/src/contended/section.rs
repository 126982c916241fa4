//! The report's "Contended matrix" section: this run's matrix (every row × critical section
//! × work between, at 2 and 4 threads quick, 2 to 16 full) and its summary per row and thread
//! count against `parking_lot::Mutex`: the geometric mean of the time ratios with the range
//! over cells, the unstable cells, the longest-wait ratio and the long-wait ratio. The
//! summary, never one cell: no single loop says which lock is faster.
//!
//! Owns the section's sizes and text; the figures are `stats.rs`'s, the run `drive.rs`'s.

use super::matrix::{Between, Config, Cs, Row};
use super::stats::summarize;
use super::work::Calibration;
use super::{run, LONG_WAIT, UNSTABLE_PCT};
use crate::doc::Block;
use std::time::Duration;

/// What the section runs: `report --quick` (CI) keeps it near 25 s, the full report ~5 min.
pub fn config(quick: bool) -> Config {
    Config {
        threads: if quick { vec![2, 4] } else { vec![2, 4, 8, 16] },
        cs: Cs::ALL.to_vec(),
        between: Between::ALL.to_vec(),
        rows: Row::ALL.to_vec(),
        duration: Duration::from_millis(if quick { 40 } else { 200 }),
        reps: if quick { 3 } else { 5 },
    }
}

/// Runs the matrix of [`config`] and appends the section.
pub fn section(d: &mut Vec<Block>, quick: bool) {
    let cfg = config(quick);
    let cal = Calibration::measure();
    let cells = run(&cfg, &cal);
    blocks(d, &cfg, &cells);
}

/// The section's blocks for a run's cells.
fn blocks(d: &mut Vec<Block>, cfg: &Config, cells: &[super::stats::CellResult]) {
    d.push(Block::H(2, "Contended matrix".into()));
    d.push(Block::P(format!(
        "`objmon-bench contended`: one lock, threads {:?}, each looping lock → critical section \
         on the protected data (empty, 50 ns, 1 µs) → unlock → work between locks (none, \
         100 ns, 1 µs); {} ms per cell-rep, {} reps interleaved across rows. Per row and \
         thread count: the geometric mean over the {} cells of the median ns per lock+unlock \
         over `parking_lot::Mutex`'s, with the least and greatest cell; cells where either \
         spread over more than {UNSTABLE_PCT:.0}% (no winner there); the longest sampled \
         wait's geometric-mean ratio; and the long waits (sampled waits over {} ms) per \
         sampled acquisition over `parking_lot`'s, the geometric mean over the cells where \
         either waited long (each count plus one half). With more \
         threads than cores both wait figures measure the scheduler's slices as much as the \
         lock. The cells themselves: `objmon-bench contended` prints them.",
        cfg.threads,
        cfg.duration.as_millis(),
        cfg.reps,
        cfg.cs.len() * cfg.between.len(),
        LONG_WAIT.as_millis()
    )));
    let rows: Vec<Vec<String>> = summarize(cells)
        .iter()
        .map(|s| {
            vec![
                format!("`{}`", s.row),
                s.threads.to_string(),
                format!("{:.2}", s.ratio_geomean),
                format!("{:.2} – {:.2}", s.ratio_min, s.ratio_max),
                format!("{} of {}", s.unstable_cells, s.cells),
                format!("{:.2}", s.wait_ratio_geomean),
                if s.long_ratio.is_finite() {
                    format!("{:.2}", s.long_ratio)
                } else {
                    "— (no long wait)".into()
                },
            ]
        })
        .collect();
    d.push(Block::Table(
        [
            "row",
            "threads",
            "time ratio",
            "cells",
            "unstable",
            "longest-wait ratio",
            "long-wait ratio",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quick section runs every row at two thread counts, and its table has one line per
    /// (row, threads), the denominator's ratios 1.
    #[test]
    fn the_section_tables_every_row_against_parking_lot() {
        let mut cfg = config(true);
        cfg.duration = Duration::from_millis(10);
        cfg.reps = 1;
        cfg.cs = vec![Cs::Empty];
        cfg.between = vec![Between::None, Between::Ns100];
        let cal = Calibration {
            cs_ns_per_iter: 1.0,
            between_ns_per_iter: 1.0,
            ticks_per_ns: 1.0,
        };
        let cells = run(&cfg, &cal);
        let mut d = Vec::new();
        blocks(&mut d, &cfg, &cells);
        let Some(Block::Table(head, rows)) = d.last() else {
            panic!("the section ends in its table");
        };
        assert_eq!(head.len(), 7);
        assert_eq!(rows.len(), Row::ALL.len() * cfg.threads.len());
        let pl: Vec<_> = rows.iter().filter(|r| r[0] == "`parking_lot`").collect();
        assert_eq!(pl.len(), 2);
        assert!(pl.iter().all(|r| r[2] == "1.00"), "{pl:?}");
    }
}
