//! SVG plots for the report (plotters' SVG backend): horizontal bars with min–max whiskers
//! (one bar per row, like seed 000 Figure 4 and seed 002 Figures 8 and 11) and line charts
//! over a parameter with min–max error bars (seed 000 MultiSync / Threads, seed 002 Fig. 16).

use plotters::coord::ranged1d::{SegmentValue, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// Pixels kept right of a line chart for its legend.
const LEGEND_WIDTH: u32 = 190;
/// Pixels per legend entry.
const LEGEND_ROW: u32 = 17;

/// One bar: label, median, min, max.
pub type Bar = (String, f64, f64, f64);

/// One line: label and its points (x, median, min, max).
pub type Series = (String, Vec<(f64, f64, f64, f64)>);

type PlotResult = Result<(), Box<dyn std::error::Error>>;

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

/// From this many lines on, [`lines`] draws small multiples instead of one chart: 28 curves
/// in one plot area (MultiSync, Threads, AllocLock with every row) are a tangle in which no
/// curve can be followed, and a 28-entry legend is a colour-matching puzzle.
pub const SMALL_MULTIPLES_AT: usize = 20;

/// Rows drawn in every panel of a small-multiples chart as thin, dotted reference
/// lines (the locks a Rust user would otherwise pick), so that panels can be compared with
/// each other, not only through their shared axes.
const REFERENCES: [&str; 2] = ["std-mutex", "parking-lot-mutex"];

/// The families of rows that share a panel, in panel order: the seeds' own lineages (a
/// monitor per object; an inflating header word; lock records on the stack; an owner's
/// fast path), then the things they are measured against. Rows of one family answer one
/// question (which variant of this design is fastest here?); the reference lines and the
/// shared axes answer the other (how does this design compare?).
const FAMILIES: [&str; 6] = [
    "fat family: a monitor per object",
    "thin family: an inflating header word",
    "stack family: lock records on the stack",
    "bias family: a fast path for one owner",
    "Rust anchors and speed-of-light floors",
    "HotSpot (dashed)",
];

/// The panel of row `label` ([`FAMILIES`] index; `FAMILIES.len()` for a row of no family):
/// by its subject's name, so a knob row (`fable[learn-limit=3]`) or a user-loop row
/// (`user-loop-thin-nested`) sits with its subject.
fn family_of(label: &str) -> usize {
    let name = label.split('[').next().unwrap_or(label);
    let name = name.strip_prefix("user-loop-").unwrap_or(name);
    let name = name.strip_suffix("-nested").unwrap_or(name);
    let is = |prefixes: &[&str]| prefixes.iter().any(|p| name.starts_with(p));
    if matches!(name, "fat" | "monitor-cache" | "cacao" | "cacao-seed") {
        0
    } else if is(&["thin", "tasuki"]) {
        1
    } else if is(&["stack", "lightweight"]) {
        2
    } else if is(&["biased", "fable"]) {
        3
    } else if matches!(name, "monitor" | "std-mutex" | "none") || is(&["parking-lot", "sol-"]) {
        4
    } else if is(&["hotspot"]) {
        5
    } else {
        FAMILIES.len()
    }
}

/// A line per row over a parameter, with min–max error bars; log scales on request. From
/// [`SMALL_MULTIPLES_AT`] rows on, one panel per family of rows (see [`FAMILIES`]) on shared
/// axes, each row in its colour of every other chart.
pub fn lines(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    log_x: bool,
) -> PlotResult {
    let Some(range) = Range::of(series, log_x) else {
        return Ok(());
    };
    if series.len() >= SMALL_MULTIPLES_AT {
        return small_multiples(path, title, x_desc, y_desc, series, log_x, range);
    }
    // Tall enough for the legend: a knob sweep adds a row per value.
    let height = 540.max(60 + LEGEND_ROW * series.len() as u32);
    let root = SVGBackend::new(path, (1000, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let panel = Panel {
        title,
        title_size: 16,
        x_desc,
        y_desc,
        series: series.iter().collect(),
        refs: Vec::new(),
    };
    panel.draw(&root, log_x, range)?;
    root.present()?;
    Ok(())
}

/// Both axes' ranges of a line chart, from every point's whisker, with a margin so that the
/// whiskers stay inside the plot area.
#[derive(Clone, Copy)]
struct Range {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
    /// Every x is a whole number (threads, k): the linear axis labels only whole numbers.
    whole_x: bool,
}

impl Range {
    fn of(series: &[Series], log_x: bool) -> Option<Range> {
        let pts = series.iter().flat_map(|s| s.1.iter());
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        let mut whole_x = true;
        for &(x, _, lo, hi) in pts {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(lo);
            y1 = y1.max(hi);
            whole_x &= x.fract() == 0.0;
        }
        if x0 > x1 {
            return None;
        }
        if x0 == x1 {
            x1 = x0 + 1.0;
        }
        let (x0, x1) = if log_x {
            (x0 / 1.25, x1 * 1.25)
        } else {
            let pad = (x1 - x0) * 0.03;
            (x0 - pad, x1 + pad)
        };
        Some(Range {
            x0,
            x1,
            y0: (y0 * 0.8).max(1e-3),
            y1: y1 * 1.25,
            whole_x,
        })
    }
}

/// One plot area with its legend in its right margin: a whole line chart, or one panel of
/// small multiples.
struct Panel<'s> {
    title: &'s str,
    title_size: u32,
    x_desc: &'s str,
    y_desc: &'s str,
    /// The rows this panel is about.
    series: Vec<&'s Series>,
    /// Reference rows, drawn thin and dotted, without whiskers.
    refs: Vec<&'s Series>,
}

impl Panel<'_> {
    fn draw(&self, area: &Area<'_>, log_x: bool, r: Range) -> PlotResult {
        let mut builder = ChartBuilder::on(area);
        builder
            .caption(self.title, ("sans-serif", self.title_size))
            .margin(10)
            .margin_right(LEGEND_WIDTH)
            .x_label_area_size(36)
            .y_label_area_size(60);
        // Log y always: rows span orders of magnitude (a biased fast path vs a futex hand-off).
        let y = (r.y0..r.y1).log_scale();
        if log_x {
            let mut chart = builder.build_cartesian_2d((r.x0..r.x1).log_scale(), y)?;
            self.mesh_and_lines(&mut chart, &|v| log_tick(*v))?;
        } else {
            let mut chart = builder.build_cartesian_2d(r.x0..r.x1, y)?;
            let whole = |v: &f64| {
                if !r.whole_x || v.fract() == 0.0 {
                    tick(*v)
                } else {
                    String::new()
                }
            };
            self.mesh_and_lines(&mut chart, &whole)?;
        }
        self.legend(area)
    }

    fn mesh_and_lines<'a, X, Y>(
        &self,
        chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
        x_fmt: &dyn Fn(&f64) -> String,
    ) -> PlotResult
    where
        X: Ranged<ValueType = f64> + ValueFormatter<f64>,
        Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        chart
            .configure_mesh()
            .x_label_formatter(x_fmt)
            .y_label_formatter(&|v| log_tick(*v))
            .x_desc(self.x_desc)
            .y_desc(self.y_desc)
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 13))
            .draw()?;
        for s in &self.refs {
            let xy: Vec<(f64, f64)> = s.1.iter().map(|p| (p.0, p.1)).collect();
            chart.draw_series(DashedLineSeries::new(xy, 2, 3, ref_style(&s.0)))?;
        }
        let colors = series_colors(&self.series);
        for (s, &color) in self.series.iter().zip(&colors) {
            let (label, pts) = (&s.0, &s.1);
            let style = line_style(label, color);
            let xy: Vec<(f64, f64)> = pts.iter().map(|p| (p.0, p.1)).collect();
            if label.starts_with("hotspot") {
                chart.draw_series(DashedLineSeries::new(xy, 6, 4, style))?;
            } else {
                chart.draw_series(LineSeries::new(xy, style))?;
            }
            chart.draw_series(
                pts.iter()
                    .map(|p| ErrorBar::new_vertical(p.0, p.2, p.1, p.3, color.filled(), 6)),
            )?;
        }
        Ok(())
    }

    /// The legend, drawn on the whole area in its right margin (plotters' own legend is
    /// clipped to the plotting area, where it would hide lines).
    fn legend(&self, area: &Area<'_>) -> PlotResult {
        let (w, _) = area.dim_in_pixel();
        let x = w as i32 - LEGEND_WIDTH as i32 + 8;
        let colors = series_colors(&self.series);
        // (label, style, dash and gap in pixels; 0 for a solid line)
        let rows = self.series.iter().zip(colors).map(|(s, c)| {
            let style = line_style(&s.0, c);
            let dash = if s.0.starts_with("hotspot") {
                (6, 4)
            } else {
                (0, 0)
            };
            (s.0.clone(), style, dash)
        });
        let refs = self
            .refs
            .iter()
            .map(|s| (format!("{} (ref)", s.0), ref_style(&s.0), (2, 3)));
        for (i, (label, style, (dash, gap))) in rows.chain(refs).enumerate() {
            let y = 40 + LEGEND_ROW as i32 * i as i32;
            if dash == 0 {
                area.draw(&PathElement::new(vec![(x, y), (x + 20, y)], style))?;
            } else {
                let mut x0 = x;
                while x0 < x + 20 {
                    let x1 = (x0 + dash).min(x + 20);
                    area.draw(&PathElement::new(vec![(x0, y), (x1, y)], style))?;
                    x0 = x1 + gap;
                }
            }
            area.draw(&Text::new(
                label,
                (x + 26, y - 7),
                ("sans-serif", 13).into_font(),
            ))?;
        }
        Ok(())
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// Width of one panel of small multiples (two side by side; the report's page scales the
/// image down to its 1100-pixel column).
const PANEL_WIDTH: u32 = 620;
/// Smallest height of one panel.
const PANEL_HEIGHT: u32 = 330;

/// [`lines`] as small multiples: a 2-column grid of panels, one per family with rows here
/// (see [`FAMILIES`]), all on the same axes, each with the [`REFERENCES`] rows as thin lines.
fn small_multiples(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    log_x: bool,
    range: Range,
) -> PlotResult {
    let mut panels: Vec<(String, Vec<&Series>)> = Vec::new();
    for f in 0..=FAMILIES.len() {
        let members: Vec<&Series> = series.iter().filter(|s| family_of(&s.0) == f).collect();
        if !members.is_empty() {
            let name = FAMILIES.get(f).copied().unwrap_or("other rows");
            panels.push((name.to_string(), members));
        }
    }
    let refs: Vec<&Series> = REFERENCES
        .iter()
        .filter_map(|r| series.iter().find(|s| s.0 == *r))
        .collect();
    let cols = 2;
    let rows = panels.len().div_ceil(cols);
    let entries = panels.iter().map(|p| p.1.len()).max().unwrap_or(0) + refs.len();
    let panel_h = PANEL_HEIGHT.max(70 + LEGEND_ROW * entries as u32);
    let title_h = 40;
    let root = SVGBackend::new(
        path,
        (PANEL_WIDTH * cols as u32, title_h + panel_h * rows as u32),
    )
    .into_drawing_area();
    root.fill(&WHITE)?;
    let body = root.titled(title, ("sans-serif", 18))?;
    let areas = body.split_evenly((rows, cols));
    for ((name, members), area) in panels.iter().zip(&areas) {
        // A panel of anchors draws them as its own rows, not again as references.
        let own_refs = refs
            .iter()
            .filter(|r| !members.iter().any(|m| m.0 == r.0))
            .copied()
            .collect();
        let panel = Panel {
            title: name,
            title_size: 14,
            x_desc,
            y_desc,
            series: members.clone(),
            refs: own_refs,
        };
        panel.draw(area, log_x, range)?;
    }
    root.present()?;
    Ok(())
}

/// A reference row: its own colour (not a paler one: pale lines vanish on white), thin and
/// dotted, so that it reads as a backdrop to the panel's rows.
fn ref_style(label: &str) -> ShapeStyle {
    ShapeStyle::from(&color_for(label)).stroke_width(1)
}

/// Thin lines for the floors and for knob sweeps (many curves of one family), thick for the
/// rows a reader compares.
fn line_style(label: &str, color: RGBColor) -> ShapeStyle {
    let thin = label.starts_with("sol-") || is_knob_row(label);
    ShapeStyle::from(&color).stroke_width(if thin { 1 } else { 2 })
}

/// A knob sweep's row (`fable[learn-limit=3]`, see `subject::knob_row`).
fn is_knob_row(label: &str) -> bool {
    label.ends_with(']') && label.contains('[')
}

/// Each series' colour: [`color_for`], except that the rows of one knob sweep share a hue
/// and run from light (lowest value) to dark (highest), as one family of curves.
fn series_colors(series: &[&Series]) -> Vec<RGBColor> {
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
const PALETTE: [RGBColor; 24] = [
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
fn color_for(label: &str) -> RGBColor {
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
fn log_tick(v: f64) -> String {
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

/// A plot's outcome as the report keeps it (the error as text).
pub type PlotResultPub = Result<(), String>;

#[cfg(test)]
mod tests {
    use super::*;

    /// A row has one colour in every chart, whatever its place in the chart; the catalog's
    /// protocols and anchors all differ; none is pale on white.
    #[test]
    fn one_colour_per_row() {
        assert_eq!(color_for("user-loop-thin"), color_for("thin"));
        assert_ne!(color_for("user-loop-thin-nested"), color_for("thin"));
        let names: Vec<&str> = crate::subject::subject_names()
            .iter()
            .map(|(n, _)| *n)
            .filter(|n| !n.starts_with("sol-"))
            .collect();
        assert!(
            names.len() <= PALETTE.len(),
            "palette too small for {names:?}"
        );
        let colours: Vec<RGBColor> = names.iter().map(|n| color_for(n)).collect();
        for (i, a) in colours.iter().enumerate() {
            assert!(!colours[..i].contains(a), "{} shares a colour", names[i]);
            let luma = 0.299 * f64::from(a.0) + 0.587 * f64::from(a.1) + 0.114 * f64::from(a.2);
            assert!(luma < 190.0, "{} is pale ({luma})", names[i]);
        }
    }

    /// The log axes read 1, 10, 1k, not 1e3.
    #[test]
    fn log_axis_labels() {
        let path = std::env::temp_dir().join(format!("objmon-plot-{}.svg", std::process::id()));
        let s: Vec<Series> = vec![
            (
                "thin".into(),
                vec![(1.0, 5.0, 4.0, 6.0), (1e4, 2e4, 1e4, 3e4)],
            ),
            (
                "fat".into(),
                vec![(1.0, 50.0, 40.0, 60.0), (1e4, 5e5, 4e5, 6e5)],
            ),
        ];
        lines(&path, "t", "x", "y", &s, true).unwrap();
        let svg: String = std::fs::read_to_string(&path)
            .unwrap()
            .split_whitespace()
            .collect();
        std::fs::remove_file(&path).unwrap();
        assert!(svg.contains(">1k<") && svg.contains(">100k<"), "{svg}");
        assert!(!svg.contains("e3<") && !svg.contains("e4<"));
    }

    /// 20+ lines become one panel per family on shared axes: every family's title, each row
    /// in its one colour, and the reference rows in the other families' panels; fewer lines
    /// stay one chart.
    #[test]
    fn small_multiples_by_family() {
        let path = std::env::temp_dir().join(format!("objmon-sm-{}.svg", std::process::id()));
        let names = crate::subject::subject_names();
        let mut s: Vec<Series> = names
            .iter()
            .map(|(n, _)| {
                (
                    n.to_string(),
                    vec![(1.0, 5.0, 4.0, 6.0), (4.0, 9.0, 8.0, 10.0)],
                )
            })
            .collect();
        s.push(("hotspot25-lm2".into(), vec![(1.0, 7.0, 6.0, 8.0)]));
        assert!(s.len() >= SMALL_MULTIPLES_AT);
        for (n, _) in &names {
            assert!(family_of(n) < FAMILIES.len(), "{n} has no family");
        }
        assert_eq!(family_of("fable[learn-limit=3]"), family_of("fable"));
        assert_eq!(family_of("user-loop-thin-nested"), family_of("thin"));
        let svg_of = |s: &[Series]| {
            lines(&path, "t", "threads", "ns", s, false).unwrap();
            let svg = std::fs::read_to_string(&path).unwrap();
            std::fs::remove_file(&path).unwrap();
            svg
        };
        let svg = svg_of(&s);
        for f in FAMILIES {
            assert!(svg.contains(f), "no panel {f}");
        }
        // Five panels with references (the anchors' own panel draws them as its rows).
        assert_eq!(svg.matches("std-mutex (ref)").count(), FAMILIES.len() - 1);
        let hex = |c: RGBColor| format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
        assert!(svg.contains(&hex(color_for("thin"))));
        // Whole-number x (threads): no "1.5" tick.
        assert!(!svg.contains(">1.5<"));
        let few = svg_of(&s[..5]);
        assert!(!few.contains(FAMILIES[0]) && !few.contains("(ref)"));
    }

    /// ProdCons' bars on a log axis: rows a thousand times apart both readable.
    #[test]
    fn log_bars() {
        let path = std::env::temp_dir().join(format!("objmon-bars-{}.svg", std::process::id()));
        let rows: Vec<Bar> = vec![
            ("thin".into(), 20.0, 18.0, 25.0),
            ("fat".into(), 20_000.0, 15_000.0, 30_000.0),
        ];
        bars_log(&path, "t", "ns", &rows).unwrap();
        let svg: String = std::fs::read_to_string(&path)
            .unwrap()
            .split_whitespace()
            .collect();
        std::fs::remove_file(&path).unwrap();
        assert!(svg.contains(">100<") && svg.contains(">10k<"), "{svg}");
    }

    #[test]
    fn log_ticks() {
        assert_eq!(tick(1.0), "1");
        assert_eq!(tick(10.0), "10");
        assert_eq!(tick(1000.0), "1k");
        assert_eq!(tick(20_000.0), "20k");
        assert_eq!(tick(1e6), "1M");
        assert_eq!(tick(2.5e9), "2.5G");
        assert_eq!(tick(0.1), "0.1");
        assert_eq!(log_tick(200.0), "200");
        assert_eq!(log_tick(5000.0), "5k");
        assert_eq!(log_tick(700.0), "");
        assert_eq!(log_tick(1000.0), "1k");
    }
}
