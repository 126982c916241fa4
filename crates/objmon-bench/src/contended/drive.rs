//! Running the matrix: one cell-rep ([`Rep`]: spawn the threads, take the lock once each,
//! meet at a barrier, loop until the stop flag, account per thread; `contended.rs`,
//! "Timing"), a row's fresh lock for it, and the whole run with its reps interleaved.

use super::matrix::{Config, Row};
use super::stats::CellResult;
use super::subjects::{Lightweight, Subject};
use super::work::{between, Calibration, Plain, Shared};
use super::{LONG_WAIT, SAMPLE};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// One thread's account of a cell-rep.
struct ThreadOut {
    acquisitions: u64,
    hand_offs: u64,
    longest_wait_ticks: u64,
    /// Sampled acquisitions, and those of them that waited over [`LONG_WAIT`].
    samples: u64,
    long_waits: u64,
    end: Instant,
}

/// One cell-rep of one row.
#[derive(Clone, Copy, Debug)]
pub struct Rep {
    /// Wall ns / acquisitions of all threads.
    pub ns_per_acq: f64,
    /// The longest sampled wait, ns.
    pub longest_wait_ns: f64,
    /// Sampled acquisitions of all threads.
    pub samples: u64,
    /// Those of them that waited longer than [`LONG_WAIT`].
    pub long_waits: u64,
    /// Fewest / most acquisitions of one thread.
    pub share: f64,
    /// Hand-offs per second.
    pub hand_offs_per_s: f64,
}

/// Runs `threads` threads on `s` for `duration` (see `contended.rs`, "Timing").
fn drive<S: Subject>(
    s: &S,
    threads: usize,
    cs: u64,
    btw: u64,
    duration: Duration,
    ticks_per_ns: f64,
) -> Rep {
    let long_ticks = (LONG_WAIT.as_nanos() as f64 * ticks_per_ns) as u64;
    let start = Barrier::new(threads + 1);
    let stop = AtomicBool::new(false);
    let (t0, outs) = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..threads)
            .map(|me| {
                let (start, stop) = (&start, &stop);
                sc.spawn(move || {
                    let local = s.local();
                    s.round(&local, me, cs, false); // attach, revoke, inflate: off the clock
                    let mut out = ThreadOut {
                        acquisitions: 0,
                        hand_offs: 0,
                        longest_wait_ticks: 0,
                        samples: 0,
                        long_waits: 0,
                        end: Instant::now(),
                    };
                    let mut x = me as u64;
                    start.wait();
                    while !stop.load(Ordering::Relaxed) {
                        let timed = out.acquisitions.is_multiple_of(SAMPLE);
                        let (w, h) = s.round(&local, me, cs, timed);
                        if timed {
                            out.longest_wait_ticks = out.longest_wait_ticks.max(w);
                            out.samples += 1;
                            out.long_waits += u64::from(w > long_ticks);
                        }
                        out.hand_offs += u64::from(h);
                        out.acquisitions += 1;
                        x = between(x, btw);
                    }
                    out.end = Instant::now();
                    black_box(x);
                    out
                })
            })
            .collect();
        start.wait();
        let t0 = Instant::now();
        std::thread::sleep(duration);
        stop.store(true, Ordering::Relaxed);
        let outs: Vec<ThreadOut> = hs
            .into_iter()
            .map(|h| h.join().expect("bench thread"))
            .collect();
        (t0, outs)
    });
    let wall = outs
        .iter()
        .map(|o| o.end.saturating_duration_since(t0))
        .max()
        .unwrap_or_default()
        .as_nanos() as f64;
    let total: u64 = outs.iter().map(|o| o.acquisitions).sum();
    let most = outs.iter().map(|o| o.acquisitions).max().unwrap_or(0);
    let fewest = outs.iter().map(|o| o.acquisitions).min().unwrap_or(0);
    let hand_offs: u64 = outs.iter().map(|o| o.hand_offs).sum();
    let longest = outs.iter().map(|o| o.longest_wait_ticks).max().unwrap_or(0);
    Rep {
        ns_per_acq: wall / total.max(1) as f64,
        longest_wait_ns: longest as f64 / ticks_per_ns,
        samples: outs.iter().map(|o| o.samples).sum(),
        long_waits: outs.iter().map(|o| o.long_waits).sum(),
        share: if most == 0 {
            0.0
        } else {
            fewest as f64 / most as f64
        },
        hand_offs_per_s: hand_offs as f64 / (wall / 1e9),
    }
}

/// One cell-rep of `row` on a fresh lock.
fn rep(row: Row, threads: usize, cs: u64, btw: u64, d: Duration, cal: &Calibration) -> Rep {
    let tpn = cal.ticks_per_ns;
    match row {
        Row::Monitor => {
            let m: objmon::Monitor<Shared> = objmon::Monitor::new(Shared::new());
            drive(&m, threads, cs, btw, d, tpn)
        }
        Row::Thin => {
            let m = objmon::Monitor::<_, objmon::Thin>::with_protocol(Shared::new());
            drive(&m, threads, cs, btw, d, tpn)
        }
        Row::Fable => {
            let m = objmon::Monitor::<_, objmon::Fable>::with_protocol(Shared::new());
            drive(&m, threads, cs, btw, d, tpn)
        }
        Row::Tasuki => {
            let m = objmon::Monitor::<_, objmon::Tasuki>::with_protocol(Shared::new());
            drive(&m, threads, cs, btw, d, tpn)
        }
        Row::Lightweight => drive(&Lightweight::new(), threads, cs, btw, d, tpn),
        Row::ParkingLot => drive(
            &parking_lot::Mutex::new(Plain::new()),
            threads,
            cs,
            btw,
            d,
            tpn,
        ),
        Row::ParkingLotReentrant => drive(
            &parking_lot::ReentrantMutex::new(Shared::new()),
            threads,
            cs,
            btw,
            d,
            tpn,
        ),
        Row::StdMutex => drive(
            &std::sync::Mutex::new(Plain::new()),
            threads,
            cs,
            btw,
            d,
            tpn,
        ),
    }
}

/// Runs the matrix, reps interleaved (progress on stderr); cells in (threads, cs, between,
/// row) order.
pub fn run(cfg: &Config, cal: &Calibration) -> Vec<CellResult> {
    let mut cells = Vec::new();
    for &t in &cfg.threads {
        for &c in &cfg.cs {
            for &b in &cfg.between {
                cells.push((t, c, b));
            }
        }
    }
    let n_rows = cfg.rows.len();
    let mut reps: Vec<Vec<Vec<Rep>>> = vec![vec![Vec::new(); n_rows]; cells.len()];
    for r in 0..cfg.reps {
        eprintln!(
            "contended: rep {}/{} ({} cells x {} rows x {} ms)",
            r + 1,
            cfg.reps,
            cells.len(),
            n_rows,
            cfg.duration.as_millis()
        );
        for (ci, &(t, c, b)) in cells.iter().enumerate() {
            for k in 0..n_rows {
                let ri = (k + r) % n_rows;
                let (csi, bi) = (cal.cs_iters(c), cal.between_iters(b));
                reps[ci][ri].push(rep(cfg.rows[ri], t, csi, bi, cfg.duration, cal));
            }
        }
    }
    let mut out = Vec::new();
    for (ci, &(t, c, b)) in cells.iter().enumerate() {
        for (ri, &row) in cfg.rows.iter().enumerate() {
            out.push(CellResult::new(t, c, b, row, &reps[ci][ri]));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_runs_and_counts() {
        let cal = Calibration {
            cs_ns_per_iter: 1.0,
            between_ns_per_iter: 1.0,
            ticks_per_ns: 1.0,
        };
        for row in Row::ALL {
            let r = rep(row, 2, 4, 4, Duration::from_millis(5), &cal);
            assert!(r.ns_per_acq > 0.0 && r.ns_per_acq.is_finite(), "{row:?}");
            assert!((0.0..=1.0).contains(&r.share), "{row:?}");
            assert!(r.samples > 0 && r.long_waits <= r.samples, "{row:?}");
        }
    }
}
