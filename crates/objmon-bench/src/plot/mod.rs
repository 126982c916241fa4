//! SVG plots for the report (plotters' SVG backend): horizontal bars with min–max whiskers
//! (one bar per row, like seed 000 Figure 4 and seed 002 Figures 8 and 11) and line charts
//! over a parameter with min–max error bars (seed 000 MultiSync / Threads, seed 002 Fig. 16).
//! This file draws the bars and bar panels; [`line_charts`] the line charts; [`style`] the colours,
//! line styles and tick labels both share.

mod line_charts;
mod style;
#[cfg(test)]
mod tests;

use line_charts::family_of;
pub use line_charts::*;
pub use style::tick;
use style::{color_for, log_tick};

use plotters::coord::ranged1d::{SegmentValue, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// Pixels kept right of a line chart for its legend.
pub(super) const LEGEND_WIDTH: u32 = 190;
/// Pixels per legend entry.
pub(super) const LEGEND_ROW: u32 = 17;

/// One bar: label, median, min, max.
pub type Bar = (String, f64, f64, f64);

/// One line: label and its points (x, median, min, max).
pub type Series = (String, Vec<(f64, f64, f64, f64)>);

pub(super) type PlotResult = Result<(), Box<dyn std::error::Error>>;

/// Horizontal bars, one per row, with a whisker from the fastest to the slowest repetition.
pub fn bars(path: &Path, title: &str, x_desc: &str, rows: &[Bar]) -> PlotResult {
    bars_on(path, title, x_desc, rows, false)
}

/// [`bars`] on a log axis, for rows that span orders of magnitude (ProdCons: a lock-free
/// hand-off next to an inflating one); bars start at the axis' left end.
pub fn bars_log(path: &Path, title: &str, x_desc: &str, rows: &[Bar]) -> PlotResult {
    bars_on(path, title, x_desc, rows, true)
}

fn bars_on(path: &Path, title: &str, x_desc: &str, rows: &[Bar], log: bool) -> PlotResult {
    if rows.is_empty() {
        return Ok(());
    }
    let n = rows.len();
    let height = 90 + 22 * n as u32;
    let root = SVGBackend::new(path, (820, height)).into_drawing_area();
    root.fill(&WHITE)?;
    // Whiskers inside the plot area: the axis spans every repetition's figure, with a margin.
    let xmax = rows
        .iter()
        .map(|r| r.3.max(r.1))
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * if log { 1.5 } else { 1.08 };
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(170);
    // An integer range is inclusive in plotters: 0..n-1 gives exactly n bands.
    let y = (0..n.saturating_sub(1).max(1)).into_segmented();
    if log {
        let xmin = rows
            .iter()
            .map(|r| r.2.min(r.1))
            .filter(|&v| v > 0.0)
            .fold(f64::MAX, f64::min)
            .min(xmax / 10.0)
            / 1.5;
        let mut chart = builder.build_cartesian_2d((xmin..xmax).log_scale(), y)?;
        draw_bars(&mut chart, x_desc, rows, xmin, true)?;
    } else {
        let mut chart = builder.build_cartesian_2d(0f64..xmax, y)?;
        draw_bars(&mut chart, x_desc, rows, 0.0, false)?;
    }
    root.present()?;
    Ok(())
}

type Bands = plotters::coord::ranged1d::SegmentedCoord<plotters::coord::types::RangedCoordusize>;

fn draw_bars<'a, X>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Bands>>,
    x_desc: &str,
    rows: &[Bar],
    base: f64,
    log: bool,
) -> PlotResult
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let n = rows.len();
    let x_fmt = |v: &f64| if log { log_tick(*v) } else { tick(*v) };
    let y_fmt = |v: &SegmentValue<usize>| match v {
        SegmentValue::CenterOf(i) | SegmentValue::Exact(i) if *i < n => {
            // Row 0 at the top, as a table reads.
            rows[n - 1 - *i].0.clone()
        }
        _ => String::new(),
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc(x_desc)
        .y_labels(n)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style(("sans-serif", 12))
        .draw()?;
    // A rule between families (fat, thin, stack, bias, anchors, HotSpot): 28 bars read as
    // six groups. Bars need no panels: each is labelled, none hides another.
    let right = chart.x_range().end;
    for i in 1..n {
        if family_of(&rows[i].0) != family_of(&rows[i - 1].0) {
            let y = SegmentValue::Exact(n - i);
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(base, y.clone()), (right, y)],
                RGBColor(120, 120, 120).stroke_width(1),
            )))?;
        }
    }
    for (i, (label, med, min, max)) in rows.iter().enumerate() {
        let y = n - 1 - i;
        let color = color_for(label);
        chart.draw_series(std::iter::once(Rectangle::new(
            [
                (base, SegmentValue::Exact(y)),
                (*med, SegmentValue::Exact(y + 1)),
            ],
            color.mix(0.75).filled(),
        )))?;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![
                (*min, SegmentValue::CenterOf(y)),
                (*max, SegmentValue::CenterOf(y)),
            ],
            BLACK.stroke_width(1),
        )))?;
    }
    Ok(())
}

/// One row of [`bar_panels`]: its label, the row name that fixes its colour ([`color_for`]),
/// and whether a rule separates it from the row above (objmon's rows from the anchors).
pub struct PanelRow {
    /// Label left of the first panel.
    pub label: String,
    /// Row name for the colour.
    pub row: String,
    /// A rule above this row.
    pub rule_above: bool,
}

/// One panel of [`bar_panels`]: title, axis description, and per row (in [`PanelRow`] order)
/// its figure as (median, min, max), `None` where the row did not run.
pub type BarPanel = (String, String, Vec<Option<(f64, f64, f64)>>);

/// Width of [`bar_panels`]' charts: the report's text column.
pub const PANELS_WIDTH: u32 = 1080;

/// Side-by-side panels of horizontal bars over the same rows, each panel on its own linear
/// axis from 0 (figures an order of magnitude apart stay readable): bar = median, whisker =
/// fastest to slowest repetition, the median written at the bar's end. Labels left of the
/// first panel only.
pub fn bar_panels(path: &Path, title: &str, rows: &[PanelRow], panels: &[BarPanel]) -> PlotResult {
    let n = rows.len();
    if n == 0 || panels.is_empty() {
        return Ok(());
    }
    let label_w = 170u32;
    let height = 84 + 32 * n as u32;
    let base = SVGBackend::new(path, (PANELS_WIDTH, height)).into_drawing_area();
    base.fill(&WHITE)?;
    let root = base.titled(title, ("sans-serif", 17))?;
    let panel_w = (PANELS_WIDTH - label_w) / panels.len() as u32;
    let mut areas = Vec::new();
    let mut rest = root;
    for i in 0..panels.len() - 1 {
        let (a, b) = rest.split_horizontally(panel_w + if i == 0 { label_w } else { 0 });
        areas.push(a);
        rest = b;
    }
    areas.push(rest);
    for (i, ((ptitle, x_desc, figs), area)) in panels.iter().zip(&areas).enumerate() {
        let xmax = figs
            .iter()
            .flatten()
            .map(|f| f.2.max(f.0))
            .fold(0.0f64, f64::max)
            .max(1e-9)
            * 1.22; // room for the figure written at the whisker's end
        let mut builder = ChartBuilder::on(area);
        builder
            .caption(ptitle, ("sans-serif", 16))
            .margin(6)
            .margin_right(16)
            .x_label_area_size(38)
            .y_label_area_size(if i == 0 { label_w } else { 6 });
        let y = (0..n.saturating_sub(1).max(1)).into_segmented();
        let mut chart = builder.build_cartesian_2d(0f64..xmax, y)?;
        let y_fmt = |v: &SegmentValue<usize>| match v {
            SegmentValue::CenterOf(k) | SegmentValue::Exact(k) if i == 0 && *k < n => {
                rows[n - 1 - *k].label.clone()
            }
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .disable_y_mesh()
            .light_line_style(TRANSPARENT)
            .x_desc(x_desc.as_str())
            .y_labels(n)
            .x_labels(6)
            .x_label_formatter(&|v: &f64| tick(*v))
            .y_label_formatter(&y_fmt)
            .label_style(("sans-serif", 14))
            .draw()?;
        for (k, row) in rows.iter().enumerate() {
            let y = n - 1 - k;
            if row.rule_above && k > 0 {
                let at = SegmentValue::Exact(y + 1);
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(0.0, at.clone()), (xmax, at)],
                    RGBColor(150, 150, 150).stroke_width(1),
                )))?;
            }
            let text = |s: String, x: f64, color: RGBColor| {
                Text::new(
                    s,
                    (x, SegmentValue::CenterOf(y)),
                    ("sans-serif", 13)
                        .into_font()
                        .color(&color)
                        .pos(Pos::new(HPos::Left, VPos::Center)),
                )
            };
            let Some((med, min, max)) = figs.get(k).copied().flatten() else {
                chart.draw_series(std::iter::once(text(
                    "did not run".into(),
                    xmax * 0.01,
                    RGBColor(120, 120, 120),
                )))?;
                continue;
            };
            let mut bar = Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(y)),
                    (med, SegmentValue::Exact(y + 1)),
                ],
                color_for(&row.row).mix(0.8).filled(),
            );
            bar.set_margin(5, 5, 0, 0);
            chart.draw_series(std::iter::once(bar))?;
            chart.draw_series(std::iter::once(PathElement::new(
                vec![
                    (min, SegmentValue::CenterOf(y)),
                    (max, SegmentValue::CenterOf(y)),
                ],
                BLACK.stroke_width(1),
            )))?;
            chart.draw_series(std::iter::once(text(
                figure_text(med),
                med.max(max) + xmax * 0.012,
                RGBColor(30, 30, 30),
            )))?;
        }
    }
    base.present()?;
    Ok(())
}

/// A bar's figure: 3 significant digits (`2.04`, `17.9`, `123`).
fn figure_text(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// A plot's outcome as the report keeps it (the error as text).
pub type PlotResultPub = Result<(), String>;
