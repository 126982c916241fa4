//! The report's first screen: which protocol to use, and how it compares with
//! `parking_lot::Mutex`, `std::sync::Mutex` and HotSpot.
//!
//! Contract: [`first_screen`] pushes one heading, one short paragraph, one figure ([`FIGURE`]:
//! two panels of bars, uncontended and contended) and one table, in that order and nothing
//! else, so that together they fit the first 1280×900 pixels of a browser. Every figure is
//! this run's: uncontended is the `sync` bench (one thread locks and unlocks one object; HotSpot
//! runs the same loop in Java), contended is `threads` at [`CONTENDED_THREADS`] threads on one
//! object. The rows are [`picks`]: objmon's default protocol (what `Monitor<T>` uses), the
//! fastest of the bias owners sound in any program ([`BIAS_OWNERS`], by uncontended median),
//! `lightweight`; then the anchors `parking_lot::Mutex`, `std::sync::Mutex` and the newest
//! JDK's default HotSpot locking. A pick whose uncontended figure did not run is left out; a
//! figure missing from one panel reads "did not run" there. Ratios follow [`crate::claim`].

use super::results::Results;
use super::tables::cell;

use crate::claim;
use crate::doc::Block;
use crate::plot;
use objmon::vm::Protocol;
use std::path::Path;

/// The figure's file, beside the report.
pub const FIGURE: &str = "first-screen.svg";

/// The bench of the uncontended figure.
pub const UNCONTENDED: &str = "sync";

/// The bench and thread count of the contended figure.
pub const CONTENDED: &str = "threads";
/// Threads on one object in the contended figure (every plan runs 2).
pub const CONTENDED_THREADS: u64 = 2;

/// The bias owners a program may use without a promise about its signal handlers (the
/// `-signal` flavors need one) and that are not kept as their seed wrote them.
pub const BIAS_OWNERS: [&str; 4] = ["biased", "fable", "biased-rseq", "fable-rseq"];

/// The anchor every ratio of the table is to.
const PARKING_LOT: &str = "parking-lot-mutex";

/// One row of the first screen.
#[derive(Clone, Debug, PartialEq)]
pub struct Pick {
    /// The row's name in the rest of the report.
    pub row: String,
    /// Its name in the chart.
    pub label: String,
    /// Why it is here.
    pub role: String,
    /// Whether it is an anchor (drawn below a rule).
    pub anchor: bool,
}

/// The rows of the first screen, in order (see the module's contract).
pub fn picks(r: &Results) -> Vec<Pick> {
    let ran = |row: &str| r.get(UNCONTENDED, row, 0).is_some();
    let pick = |row: &str, label: String, role: String, anchor: bool| Pick {
        row: row.into(),
        label,
        role,
        anchor,
    };
    let mut v = Vec::new();
    let default = <objmon::DefaultProtocol as Protocol>::NAME;
    v.push(pick(
        default,
        format!("{default} (default)"),
        "objmon's default: what Monitor<T> uses".into(),
        false,
    ));
    let owners: Vec<&str> = BIAS_OWNERS.iter().copied().filter(|b| ran(b)).collect();
    if let Some(best) = owners
        .iter()
        .filter_map(|b| r.get(UNCONTENDED, b, 0))
        .min_by(|a, b| a.median.total_cmp(&b.median))
    {
        v.push(pick(
            &best.protocol,
            best.protocol.clone(),
            "the fastest sound bias owner (see above)".into(),
            false,
        ));
    }
    v.push(pick(
        "lightweight",
        "lightweight".into(),
        "HotSpot's lock stack (objmon::vm only)".into(),
        false,
    ));
    v.push(pick(
        PARKING_LOT,
        "parking_lot::Mutex".into(),
        "anchor: parking_lot::Mutex<()>".into(),
        true,
    ));
    v.push(pick(
        "std-mutex",
        "std::sync::Mutex".into(),
        "anchor: std::sync::Mutex<()>".into(),
        true,
    ));
    if let Some((row, major, mode)) = hotspot_default(r) {
        v.push(pick(
            &row,
            format!("HotSpot {major}"),
            format!("anchor: HotSpot {major}'s default ({mode})"),
            true,
        ));
    }
    v.retain(|p| ran(&p.row));
    v
}

/// The newest JDK's default locking among the HotSpot rows that ran: its row, the JDK's feature
/// release and the mode in words. JDK 23 and later lock lightweight by default
/// (`LockingMode=2`), 21 and 22 stack-lock (`LockingMode=1`); older JDKs have a `default` row.
fn hotspot_default(r: &Results) -> Option<(String, u32, &'static str)> {
    r.rows_of(UNCONTENDED)
        .into_iter()
        .filter_map(|row| {
            let (major, mode) = row.strip_prefix("hotspot")?.split_once('-')?;
            let major: u32 = major.parse().ok()?;
            let words = match mode {
                "default" => "stack-locking",
                "lm2" if major >= 23 => "lightweight locking",
                "lm1" if (21..23).contains(&major) => "stack-locking",
                _ => return None,
            };
            Some((row, major, words))
        })
        .max_by_key(|h| h.1)
}

/// Pushes the first screen (see the module's contract); nothing if no pick ran.
pub fn first_screen(d: &mut Vec<Block>, r: &Results, out: &Path) {
    let picks = picks(r);
    if picks.is_empty() {
        return;
    }
    let t = CONTENDED_THREADS;
    let reps = r.get(UNCONTENDED, &picks[0].row, 0).map_or(0, |x| x.reps);
    d.push(Block::H(
        2,
        "Which protocol to use: the picks beside parking_lot, std and HotSpot".into(),
    ));
    let owners: Vec<&str> = BIAS_OWNERS
        .iter()
        .copied()
        .filter(|b| r.get(UNCONTENDED, b, 0).is_some())
        .collect();
    d.push(Block::P(format!(
        "Lower is better. Uncontended: one thread locks and unlocks one object (bench sync); \
         contended: {t} threads on one object (bench threads: wall time ÷ all lock+unlock \
         pairs); HotSpot runs the same loops in Java. The bias owner shown is the fastest \
         uncontended of {}: sound in any program, unlike the -signal flavors (which need a \
         promise about the host's signal handlers) and not kept as a seed wrote it.",
        owners.join(", ")
    )));
    let figs = |bench: &str, p: u64| -> Vec<Option<(f64, f64, f64)>> {
        picks
            .iter()
            .map(|k| r.get(bench, &k.row, p).map(|x| (x.median, x.min, x.max)))
            .collect()
    };
    let rows: Vec<plot::PanelRow> = picks
        .iter()
        .enumerate()
        .map(|(i, p)| plot::PanelRow {
            label: p.label.clone(),
            row: p.row.clone(),
            rule_above: p.anchor && i > 0 && !picks[i - 1].anchor,
        })
        .collect();
    let x_desc = "ns per lock+unlock (lower is better)".to_string();
    let panels = [
        (
            "Uncontended: one thread, one object".to_string(),
            x_desc.clone(),
            figs(UNCONTENDED, 0),
        ),
        (
            format!("Contended: {t} threads on one object"),
            x_desc,
            figs(CONTENDED, t),
        ),
    ];
    let title = "objmon's picks and the anchors, this run";
    match plot::bar_panels(&out.join(FIGURE), title, &rows, &panels) {
        Ok(()) if out.join(FIGURE).is_file() => d.push(Block::Img(
            FIGURE.into(),
            format!("Bar: median of {reps} repetitions; whisker: fastest to slowest; ratios in the table read median (min–max)."),
        )),
        Ok(()) => {}
        Err(e) => d.push(Block::P(format!("(figure {FIGURE} failed: {e})"))),
    }
    let ratio = |bench: &str, row: &str, p: u64| {
        if row == PARKING_LOT {
            "1".to_string()
        } else {
            claim::text(r.claim(bench, row, PARKING_LOT, p).as_ref())
        }
    };
    let table = picks
        .iter()
        .map(|k| {
            vec![
                k.row.clone(),
                k.role.clone(),
                cell(r.get(UNCONTENDED, &k.row, 0)),
                cell(r.get(CONTENDED, &k.row, t)),
                ratio(UNCONTENDED, &k.row, 0),
                ratio(CONTENDED, &k.row, t),
            ]
        })
        .collect();
    d.push(Block::Table(
        vec![
            "row".into(),
            "what it is".into(),
            "uncontended, ns".into(),
            format!("{t} threads, ns"),
            "÷ parking_lot, uncontended".into(),
            format!("÷ parking_lot, {t} threads"),
        ],
        table,
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Record;

    fn results() -> Results {
        let rec = |bench: &str, row: &str, kind: &str, p: u64, v: f64| {
            Record::from_values(bench, row, kind, 1, p, &[v * 0.95, v, v * 1.05]).unwrap()
        };
        let mut records = Vec::new();
        for (row, kind, u, c) in [
            ("thin", "protocol", 3.5, 18.0),
            ("thin-fig7", "protocol", 1.0, 10.0),
            ("lightweight", "protocol", 7.0, 12.0),
            ("biased", "protocol", 2.0, 30.0),
            ("fable", "protocol", 2.7, 30.0),
            ("fable-rseq", "protocol", 2.1, 35.0),
            ("biased-signal", "protocol", 0.8, 30.0),
            ("biased-seed", "protocol", 0.9, 30.0),
            ("parking-lot-mutex", "anchor", 5.7, 12.0),
            ("std-mutex", "anchor", 5.0, 30.0),
            ("hotspot17-default", "hotspot", 6.0, 7.0),
            ("hotspot25-lm1", "hotspot", 6.5, 7.5),
            ("hotspot25-lm2", "hotspot", 6.9, 6.0),
        ] {
            records.push(rec("sync", row, kind, 0, u));
            if !row.starts_with("hotspot25") {
                records.push(rec("threads", row, kind, 2, c));
            }
        }
        Results::new(records)
    }

    /// The picks: the default, the fastest sound bias owner (not a `-signal` or `-seed` one,
    /// however fast), lightweight, then the anchors and the newest JDK's default locking.
    #[test]
    fn picks_the_rows_a_user_would() {
        let rows: Vec<String> = picks(&results()).into_iter().map(|p| p.row).collect();
        assert_eq!(
            rows,
            [
                "thin",
                "biased",
                "lightweight",
                "parking-lot-mutex",
                "std-mutex",
                "hotspot25-lm2"
            ]
        );
    }

    /// The first section of the HTML (up to the second heading of level 2) holds the chart
    /// and the table of the picked rows, with their figures and ratios.
    #[test]
    fn the_first_section_has_the_chart_and_the_table() {
        let dir = std::env::temp_dir().join(format!("objmon-first-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut d = vec![Block::H(1, "objmon-bench report".into())];
        first_screen(&mut d, &results(), &dir);
        d.push(Block::H(2, "This run".into()));
        let html = crate::doc::html("t", &d);
        let svg = std::fs::read_to_string(dir.join(FIGURE)).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let first = html.split("<h2>").nth(1).unwrap();
        assert!(first.contains(&format!("<img src=\"{FIGURE}\"")), "{first}");
        assert_eq!(first.matches("<table>").count(), 1, "{first}");
        for row in [
            "thin",
            "biased",
            "lightweight",
            "parking-lot-mutex",
            "std-mutex",
            "hotspot25-lm2",
        ] {
            assert!(
                first.contains(&format!("<td class=\"t\">{row}</td>")),
                "{row}: {first}"
            );
        }
        assert!(!first.contains("biased-signal") && !first.contains("thin-fig7"));
        // thin ÷ parking_lot::Mutex uncontended, 3.5 / 5.7, with its range.
        assert!(first.contains("0.61× (0.56–0.68)"), "{first}");
        // HotSpot 25 ran no threads bench here: its contended cells are empty.
        assert!(
            svg.contains("did not run") && svg.contains("HotSpot 25"),
            "{svg}"
        );
        assert!(svg.contains("parking_lot::Mutex") && svg.contains("thin (default)"));
    }
}
