//! Printing a run: the tables per thread count with the winner of each cell and the
//! summary (`print_table`), CSV and JSON.

use super::matrix::Config;
use super::stats::{summarize, winner, CellResult, Summary};
use super::work::Calibration;
use super::{LONG_WAIT, UNSTABLE_PCT};
use serde::Serialize;

/// A figure in 3 significant digits (or an integer).
fn num(x: f64) -> String {
    if !x.is_finite() {
        "-".into()
    } else if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// Prints the tables and the summary.
pub fn print_table(cfg: &Config, cal: &Calibration, cells: &[CellResult]) {
    println!(
        "calibration: critical section {:.2} ns/iter, between {:.2} ns/iter, {:.3} TSC ticks/ns; \
         {} ms per cell-rep, {} reps interleaved",
        cal.cs_ns_per_iter,
        cal.between_ns_per_iter,
        cal.ticks_per_ns,
        cfg.duration.as_millis(),
        cfg.reps
    );
    let w = 14;
    for &t in &cfg.threads {
        println!();
        println!(
            "threads {t}: ns per lock+unlock (wall / acquisitions of all threads), median \
             (spread%); * unstable (spread > {UNSTABLE_PCT:.0}%)"
        );
        let mut head = format!("{:<6} {:<7}", "cs", "between");
        for r in &cfg.rows {
            head += &format!(" {:>w$}", short(r.name()));
        }
        println!("{head} {:>w$}", "winner");
        for &c in &cfg.cs {
            for &b in &cfg.between {
                let group: Vec<&CellResult> = cells
                    .iter()
                    .filter(|x| x.threads == t && x.cs == c.name() && x.between == b.name())
                    .collect();
                let mut line = format!("{:<6} {:<7}", c.name(), b.name());
                for x in &group {
                    let mark = if x.unstable { "*" } else { "" };
                    let s = format!("{} ({:.0}%){mark}", num(x.median_ns), x.spread_pct);
                    line += &format!(" {s:>w$}");
                }
                let win = winner(&group).map_or("unstable", |x| short(x.row));
                println!("{line} {win:>w$}");
            }
        }
        println!(
            "threads {t}: longest sampled wait µs (median over reps) / long waits (over {} ms) \
             per million sampled acquisitions / worst share (fewest / most acquisitions of a \
             thread) / hand-offs per ms",
            LONG_WAIT.as_millis()
        );
        println!("{head}");
        for &c in &cfg.cs {
            for &b in &cfg.between {
                let mut line = format!("{:<6} {:<7}", c.name(), b.name());
                for x in cells
                    .iter()
                    .filter(|x| x.threads == t && x.cs == c.name() && x.between == b.name())
                {
                    let s = format!(
                        "{}/{}/{:.2}/{}",
                        num(x.wait_median_us),
                        num(x.long_ppm()),
                        x.share_min,
                        num(x.hand_offs_per_s / 1e3)
                    );
                    line += &format!(" {s:>w$}");
                }
                println!("{line}");
            }
        }
    }
    println!();
    let sums = summarize(cells);
    if sums.is_empty() {
        println!("summary: no parking_lot row selected, so no ratios (add --row parking_lot)");
        return;
    }
    println!(
        "summary: ratio to parking_lot::Mutex of the median ns per lock+unlock, geometric mean \
         over cells [min .. max]; longest sampled wait, geometric-mean ratio to parking_lot's; \
         long waits per sampled acquisition, geometric mean of the cells' ratios to \
         parking_lot's (cells where either waited long; counts + 1/2) and pooled over all \
         cells (each lock weighing its cells by its throughput); the longest of any cell"
    );
    println!(
        "{:<22} {:>7} {:>6} {:>8} {:>17} {:>9} {:>10} {:>10} {:>10} {:>12}",
        "row",
        "threads",
        "cells",
        "ratio",
        "[min .. max]",
        "unstable",
        "wait ratio",
        "long ratio",
        "pooled",
        "longest µs"
    );
    for s in &sums {
        println!(
            "{:<22} {:>7} {:>6} {:>8.2} {:>17} {:>9} {:>10.2} {:>10.2} {:>10.2} {:>12}",
            s.row,
            s.threads,
            s.cells,
            s.ratio_geomean,
            format!("[{:.2} .. {:.2}]", s.ratio_min, s.ratio_max),
            s.unstable_cells,
            s.wait_ratio_geomean,
            s.long_ratio,
            s.long_ratio_pooled,
            num(s.wait_max_us)
        );
    }
}

/// A column heading short enough for the table.
fn short(name: &str) -> &str {
    match name {
        "parking_lot_reentrant" => "pl_reentrant",
        n => n,
    }
}

/// CSV: the cells, a blank line, the summary.
pub fn print_csv(cells: &[CellResult]) {
    println!(
        "threads,cs,between,row,reps,median_ns,min_ns,max_ns,spread_pct,unstable,\
         wait_median_us,wait_max_us,samples,long_waits,share_min,hand_offs_per_s"
    );
    for c in cells {
        println!(
            "{},{},{},{},{},{:.3},{:.3},{:.3},{:.1},{},{:.2},{:.2},{},{},{:.3},{:.0}",
            c.threads,
            c.cs,
            c.between,
            c.row,
            c.reps,
            c.median_ns,
            c.min_ns,
            c.max_ns,
            c.spread_pct,
            c.unstable,
            c.wait_median_us,
            c.wait_max_us,
            c.samples,
            c.long_waits,
            c.share_min,
            c.hand_offs_per_s
        );
    }
    println!();
    println!(
        "summary_row,threads,cells,unstable_cells,ratio_geomean,ratio_min,ratio_max,\
         wait_ratio_geomean,long_ratio,long_ratio_pooled,wait_max_us"
    );
    for s in summarize(cells) {
        println!(
            "{},{},{},{},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.2}",
            s.row,
            s.threads,
            s.cells,
            s.unstable_cells,
            s.ratio_geomean,
            s.ratio_min,
            s.ratio_max,
            s.wait_ratio_geomean,
            s.long_ratio,
            s.long_ratio_pooled,
            s.wait_max_us
        );
    }
}

/// JSON: one object per line, `{"cell": …}` then `{"summary": …}`.
pub fn print_json(cells: &[CellResult]) {
    #[derive(Serialize)]
    #[serde(rename_all = "snake_case")]
    enum Line<'a> {
        Cell(&'a CellResult),
        Summary(&'a Summary),
    }
    let line = |l: Line<'_>| serde_json::to_string(&l).expect("serializes");
    for c in cells {
        println!("{}", line(Line::Cell(c)));
    }
    for s in &summarize(cells) {
        println!("{}", line(Line::Summary(s)));
    }
}
