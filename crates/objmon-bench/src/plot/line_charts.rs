//! Line charts over a parameter: one chart, or small multiples (one panel per family of
//! rows, with reference lines) once there are too many rows to follow in one.

use super::style::{line_style, log_tick, ref_style, series_colors, tick};
use super::{PlotResult, Series, LEGEND_ROW, LEGEND_WIDTH};

use plotters::coord::ranged1d::ValueFormatter;
use plotters::prelude::*;
use std::path::Path;

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
pub(super) const FAMILIES: [&str; 6] = [
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
pub(super) fn family_of(label: &str) -> usize {
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
