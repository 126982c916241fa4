//! The report's timeline picture: recorded runs drawn as SVG, one panel per run, its threads
//! as rows, contended enters and waits as bars, notifies, inflations, deflations and bias
//! revocations as ticks (in the upper half of their row, so that the bars show beneath).
//!
//! Owns: the choice of the window each panel shows and the drawing. Not: the runs
//! (`recording.rs`), the report's text (`section.rs`).
//!
//! **Window.** A whole run holds thousands of bars, too many to tell apart, so each panel shows
//! a stretch from the middle of its run (past the start-up): from the start of the middle
//! enter or wait (in start order) to the start of the `bars`-th after it, at least 1 µs. Bars
//! that reach past the window are cut at its edge; each panel's title says where the window
//! is and how many of the run's enters and waits it shows. Times on the axis are µs from the
//! window's start.
//!
//! Hand-written SVG (no plotting library: bars on rows are not a chart `plotters` draws), each
//! bar with a `<title>` (its kind, duration and partner) that a browser shows on hover. Text is
//! XML-escaped; the document is well formed (the tests parse it).

use super::recording::Run;
use objmon::events::Event;
use std::fmt::Write;

const WIDTH: f64 = 960.0;
const LEFT: f64 = 150.0;
const RIGHT: f64 = 20.0;
const ROW: f64 = 16.0;
const BAR: f64 = 10.0;
const TITLE: f64 = 22.0;
const AXIS: f64 = 26.0;
const GAP: f64 = 12.0;
const LEGEND: f64 = 26.0;

/// Colours: a contended enter that only spun, one that parked, a wait, and the ticks.
const SPUN: &str = "#f28e2b";
const PARKED: &str = "#e15759";
const WAIT: &str = "#4e79a7";
const TICKS: [(&str, &str); 4] = [
    ("MonitorNotify", "#59a14f"),
    ("MonitorInflate", "#b07aa1"),
    ("MonitorDeflate", "#76b7b2"),
    ("BiasRevoke", "#9c755f"),
];

/// XML text or attribute value.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One run's window: start and end, ns since the run's start, and how many of its enters and
/// waits it shows of how many.
fn window(run: &Run, bars: usize) -> Option<(u64, u64, usize, usize)> {
    let mut starts: Vec<u64> = run
        .events
        .iter()
        .filter(|e| matches!(e, Event::MonitorEnter { .. } | Event::MonitorWait { .. }))
        .filter_map(|e| e.site())
        .map(|s| s.start_nanos.saturating_sub(run.start_nanos))
        .collect();
    if starts.is_empty() {
        return None;
    }
    starts.sort_unstable();
    let n = starts.len();
    let first = (n / 2).min(n.saturating_sub(bars.max(1)));
    let last = (first + bars.max(1)).min(n - 1);
    let (w0, w1) = (starts[first], starts[last].max(starts[first] + 1_000));
    let shown = starts.iter().filter(|&&s| s >= w0 && s < w1).count();
    Some((w0, w1, shown, n))
}

/// The picture of `runs` (one panel each, top to bottom), each showing about `bars` enters
/// and waits.
pub fn timeline(runs: &[&Run], bars: usize) -> String {
    let height: f64 = runs
        .iter()
        .map(|r| TITLE + r.tracks.len().max(1) as f64 * ROW + AXIS + GAP)
        .sum::<f64>()
        + LEGEND;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {WIDTH} {height:.0}\" font-family=\"sans-serif\" font-size=\"11\">"
    );
    let _ = writeln!(
        s,
        "<rect x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"{height:.0}\" fill=\"white\"/>"
    );
    let plot = WIDTH - LEFT - RIGHT;
    let mut y = 0.0;
    for run in runs {
        panel(&mut s, run, bars, y, plot);
        y += TITLE + run.tracks.len().max(1) as f64 * ROW + AXIS + GAP;
    }
    legend(&mut s, y + 14.0);
    s.push_str("</svg>\n");
    s
}

fn panel(s: &mut String, run: &Run, bars: usize, y0: f64, plot: f64) {
    let rows = run.tracks.len().max(1) as f64;
    let Some((w0, w1, shown, total)) = window(run, bars) else {
        let _ = writeln!(
            s,
            "<text x=\"4\" y=\"{:.1}\" font-weight=\"bold\">{}: {} with {} threads: no \
             contended enter or wait recorded</text>",
            y0 + 15.0,
            esc(run.protocol),
            esc(run.spec.workload.name()),
            run.spec.threads
        );
        return;
    };
    let span = (w1 - w0) as f64;
    let _ = writeln!(
        s,
        "<text x=\"4\" y=\"{:.1}\" font-weight=\"bold\">{}: {} with {} threads, {:.1} µs \
         from {:.2} ms into the run ({} of its {} enters and waits)</text>",
        y0 + 15.0,
        esc(run.protocol),
        esc(run.spec.workload.name()),
        run.spec.threads,
        span / 1e3,
        w0 as f64 / 1e6,
        shown,
        total
    );
    let top = y0 + TITLE;
    let x_of = |ns: u64| LEFT + (ns.clamp(w0, w1) - w0) as f64 / span * plot;
    for (i, t) in run.tracks.iter().enumerate() {
        let ry = top + i as f64 * ROW;
        let fill = if i % 2 == 0 { "#f6f6f6" } else { "#ffffff" };
        let _ = writeln!(
            s,
            "<rect x=\"{LEFT}\" y=\"{ry:.1}\" width=\"{plot:.1}\" height=\"{ROW}\" fill=\"{fill}\"/>\n\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT - 6.0,
            ry + ROW - 4.0,
            esc(&t.name)
        );
    }
    let row_of = |id| run.tracks.iter().position(|t| t.id == id);
    let name_of = |id| run.track_name(id).unwrap_or("another thread").to_string();
    for e in &run.events {
        let Some(site) = e.site() else { continue };
        let Some(row) = row_of(site.thread) else {
            continue;
        };
        let start = site.start_nanos.saturating_sub(run.start_nanos);
        let end = start + u64::try_from(site.duration.as_nanos()).unwrap_or(u64::MAX);
        let ry = top + row as f64 * ROW;
        let (colour, what) = match e {
            Event::MonitorEnter {
                previous_owner,
                parked,
                ..
            } => (
                if *parked { PARKED } else { SPUN },
                format!(
                    "MonitorEnter, {}, previous owner {}",
                    if *parked { "parked" } else { "spun" },
                    previous_owner.map_or("unknown".into(), name_of)
                ),
            ),
            Event::MonitorWait {
                outcome, notifier, ..
            } => (
                WAIT,
                format!(
                    "MonitorWait, {outcome:?}, notifier {}",
                    notifier.map_or("none".into(), name_of)
                ),
            ),
            _ => {
                if start < w0 || start >= w1 {
                    continue;
                }
                let name = e.kind().name();
                let colour = TICKS.iter().find(|t| t.0 == name).map_or("#333", |t| t.1);
                let x = x_of(start);
                let _ = writeln!(
                    s,
                    "<rect x=\"{:.2}\" y=\"{:.1}\" width=\"1.5\" height=\"{:.1}\" fill=\"{colour}\">\
                     <title>{name} at {:.2} µs</title></rect>",
                    x - 0.75,
                    ry,
                    ROW / 2.0,
                    (start - w0) as f64 / 1e3
                );
                continue;
            }
        };
        if end < w0 || start >= w1 {
            continue;
        }
        let (x0, x1) = (x_of(start), x_of(end));
        let _ = writeln!(
            s,
            "<rect x=\"{x0:.2}\" y=\"{:.1}\" width=\"{:.2}\" height=\"{BAR}\" fill=\"{colour}\">\
             <title>{} ({:.2} µs)</title></rect>",
            ry + (ROW - BAR) / 2.0,
            (x1 - x0).max(1.0),
            esc(&what),
            (end - start) as f64 / 1e3
        );
    }
    // The axis: five ticks, µs from the window's start.
    let ay = top + rows * ROW;
    let _ = writeln!(
        s,
        "<line x1=\"{LEFT}\" y1=\"{ay:.1}\" x2=\"{:.1}\" y2=\"{ay:.1}\" stroke=\"#444\"/>",
        LEFT + plot
    );
    for k in 0..=4 {
        let x = LEFT + plot * f64::from(k) / 4.0;
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{ay:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#444\"/>\n\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"{}\">{:.1} µs</text>",
            ay + 4.0,
            ay + 16.0,
            if k == 4 { "end" } else { "middle" },
            span / 1e3 * f64::from(k) / 4.0
        );
    }
}

fn legend(s: &mut String, y: f64) {
    let mut x = 10.0;
    let items = [
        ("contended enter, spun", SPUN),
        ("contended enter, parked", PARKED),
        ("wait", WAIT),
    ]
    .into_iter()
    .chain(TICKS.iter().map(|&(n, c)| (n, c)));
    for (name, colour) in items {
        let _ = writeln!(
            s,
            "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"12\" height=\"{BAR}\" fill=\"{colour}\"/>\n\
             <text x=\"{:.1}\" y=\"{y:.1}\">{}</text>",
            y - BAR + 1.0,
            x + 16.0,
            esc(name)
        );
        x += 26.0 + 6.5 * name.len() as f64;
    }
}
