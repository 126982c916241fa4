//! What every chart shares: one colour per row whatever the chart, the reference rows'
//! style, and the tick labels of linear and log axes.

use super::Series;

use plotters::prelude::*;

/// A reference row: its own colour (not a paler one: pale lines vanish on white), thin and
/// dotted, so that it reads as a backdrop to the panel's rows.
pub(super) fn ref_style(label: &str) -> ShapeStyle {
    ShapeStyle::from(&color_for(label)).stroke_width(1)
}

/// Thin lines for the floors and for knob sweeps (many curves of one family), thick for the
/// rows a reader compares.
pub(super) fn line_style(label: &str, color: RGBColor) -> ShapeStyle {
    let thin = label.starts_with("sol-") || is_knob_row(label);
    ShapeStyle::from(&color).stroke_width(if thin { 1 } else { 2 })
}

/// A knob sweep's row (`fable[learn-limit=3]`, see `subject::knob_row`).
fn is_knob_row(label: &str) -> bool {
    label.ends_with(']') && label.contains('[')
}

/// Each series' colour: [`color_for`], except that the rows of one knob sweep share a hue
/// and run from light (lowest value) to dark (highest), as one family of curves.
pub(super) fn series_colors(series: &[&Series]) -> Vec<RGBColor> {
    let family = |l: &str| l.split('[').next().unwrap_or(l).to_string();
    series
        .iter()
        .map(|(label, _)| {
            if !is_knob_row(label) {
                return color_for(label);
            }
            let f = family(label);
            let members: Vec<&String> = series
                .iter()
                .map(|s| &s.0)
                .filter(|l| is_knob_row(l) && family(l) == f)
                .collect();
            let rank = members.iter().position(|l| *l == label).unwrap_or(0);
            let t = rank as f64 / (members.len().max(2) - 1) as f64;
            let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * t).round() as u8;
            RGBColor(mix(90, 10), mix(150, 40), mix(230, 110))
        })
        .collect()
}

/// Strong, mutually distinct colours (none pale on white), for protocols and anchors.
pub(super) const PALETTE: [RGBColor; 24] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 80, 170),
    RGBColor(23, 160, 180),
    RGBColor(150, 150, 20),
    RGBColor(0, 63, 92),
    RGBColor(122, 40, 60),
    RGBColor(0, 110, 80),
    RGBColor(90, 60, 160),
    RGBColor(200, 90, 0),
    RGBColor(0, 0, 140),
    RGBColor(100, 130, 0),
    RGBColor(170, 0, 110),
    RGBColor(60, 60, 60),
    RGBColor(225, 165, 0),
    RGBColor(160, 100, 40),
    RGBColor(0, 150, 136),
    RGBColor(190, 30, 90),
    RGBColor(70, 100, 200),
    RGBColor(120, 80, 0),
];

/// The colour of row `label`, the same in every chart: greys for speed-of-light, warm for
/// HotSpot, and for protocols and anchors a palette colour fixed by the subject's place in the
/// catalog (a user-loop row takes its subject's colour, darker when nested). Not the row's
/// place in the chart: a row keeps its colour from chart to chart.
pub(super) fn color_for(label: &str) -> RGBColor {
    let stable = |s: &str| {
        // FNV-1a: a fixed index for names outside the catalog.
        s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        }) as usize
    };
    let (name, nested) = match label.strip_prefix("user-loop-") {
        Some(r) => match r.strip_suffix("-nested") {
            Some(s) => (s, true),
            None => (r, false),
        },
        None => (label, false),
    };
    let base = if name.starts_with("sol-") || name == "none" {
        let sol = [
            "none",
            "sol-empty",
            "sol-cas-store",
            "sol-cas-cas",
            "sol-plain-pair",
        ];
        let k = sol.iter().position(|s| *s == name).unwrap_or(stable(name));
        let g = 70 + 20 * (k % 4) as u8;
        RGBColor(g, g, g)
    } else if name.starts_with("hotspot") {
        [
            RGBColor(230, 120, 20),
            RGBColor(140, 70, 20),
            RGBColor(200, 30, 30),
            RGBColor(190, 150, 0),
            RGBColor(110, 110, 0),
        ][stable(name) % 5]
    } else {
        let k = crate::subject::subject_names()
            .iter()
            .filter(|(n, _)| !n.starts_with("sol-"))
            .position(|(n, _)| *n == name)
            .unwrap_or_else(|| stable(name));
        PALETTE[k % PALETTE.len()]
    };
    if nested {
        let d = |c: u8| (f64::from(c) * 0.6) as u8;
        RGBColor(d(base.0), d(base.1), d(base.2))
    } else {
        base
    }
}

/// A log axis' tick label: only at 1, 2 and 5 times a power of ten (plotters puts a tick at
/// every 100, 200, …, 900, whose labels run together), as [`tick`]; blank elsewhere.
pub(super) fn log_tick(v: f64) -> String {
    if v <= 0.0 {
        return String::new();
    }
    let m = v / 10f64.powf(v.log10().floor());
    if [1.0, 2.0, 5.0, 10.0]
        .iter()
        .any(|k| (m - k).abs() < 1e-6 * k)
    {
        tick(v)
    } else {
        String::new()
    }
}

/// A tick label: 1, 10, 100, 1k, 10k, 1M, 1G (and 0.1, 0.01 below 1).
pub fn tick(v: f64) -> String {
    let (scaled, unit) = if v >= 1e9 {
        (v / 1e9, "G")
    } else if v >= 1e6 {
        (v / 1e6, "M")
    } else if v >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let digits = if scaled >= 1.0 || scaled == 0.0 {
        0
    } else {
        (-scaled.log10().floor()) as usize
    };
    let text = format!("{scaled:.digits$}");
    // Ticks between decades (2, 5, 20 …) keep one decimal if they need it.
    let text = if (text.parse::<f64>().unwrap_or(scaled) - scaled).abs() > 1e-9 * scaled.max(1.0) {
        format!("{scaled:.1}")
    } else {
        text
    };
    format!("{text}{unit}")
}
