//! SVG plots for the report (plotters' SVG backend): horizontal bars with min–max whiskers
//! (one bar per row, like seed 000 Figure 4 and seed 002 Figures 8 and 11) and line charts
//! over a parameter with min–max error bars (seed 000 MultiSync / Threads, seed 002 Fig. 16).

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use std::path::Path;

/// Pixels kept right of a line chart for its legend.
const LEGEND_WIDTH: u32 = 190;

/// One bar: label, median, min, max.
pub type Bar = (String, f64, f64, f64);

/// One line: label and its points (x, median, min, max).
pub type Series = (String, Vec<(f64, f64, f64, f64)>);

type PlotResult = Result<(), Box<dyn std::error::Error>>;

/// Horizontal bars, one per row, with a whisker from the fastest to the slowest repetition.
pub fn bars(path: &Path, title: &str, x_desc: &str, rows: &[Bar]) -> PlotResult {
    if rows.is_empty() {
        return Ok(());
    }
    let n = rows.len();
    let height = 90 + 22 * n as u32;
    let root = SVGBackend::new(path, (820, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let xmax = rows
        .iter()
        .map(|r| r.3.max(r.1))
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.08;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(170)
        // An integer range is inclusive in plotters: 0..n-1 gives exactly n bands.
        .build_cartesian_2d(0f64..xmax, (0..n.saturating_sub(1).max(1)).into_segmented())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc(x_desc)
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) | SegmentValue::Exact(i) if *i < n => {
                // Row 0 at the top, as a table reads.
                rows[n - 1 - *i].0.clone()
            }
            _ => String::new(),
        })
        .label_style(("sans-serif", 12))
        .draw()?;
    for (i, (label, med, min, max)) in rows.iter().enumerate() {
        let y = n - 1 - i;
        let color = color_for(label, i);
        chart.draw_series(std::iter::once(Rectangle::new(
            [
                (0.0, SegmentValue::Exact(y)),
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
    root.present()?;
    Ok(())
}

/// A line per row over a parameter, with min–max error bars; log scales on request.
pub fn lines(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    log_x: bool,
) -> PlotResult {
    let pts = series.iter().flat_map(|s| s.1.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, _, lo, hi) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(lo);
        y1 = y1.max(hi);
    }
    if series.is_empty() || x0 > x1 {
        return Ok(());
    }
    if x0 == x1 {
        x1 = x0 + 1.0;
    }
    let (y0, y1) = ((y0 * 0.8).max(1e-3), y1 * 1.25);
    let root = SVGBackend::new(path, (1000, 540)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .margin_right(LEGEND_WIDTH)
        .x_label_area_size(36)
        .y_label_area_size(60);
    // Log y always: rows span orders of magnitude (a biased fast path vs a futex hand-off).
    if log_x {
        let mut chart = builder.build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .label_style(("sans-serif", 12))
            .draw()?;
        draw_series_into(&mut chart, series)?;
        legend(&mut chart)?;
    } else {
        let mut chart = builder.build_cartesian_2d(x0..x1, (y0..y1).log_scale())?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .label_style(("sans-serif", 12))
            .draw()?;
        draw_series_into(&mut chart, series)?;
        legend(&mut chart)?;
    }
    root.present()?;
    Ok(())
}

fn draw_series_into<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    series: &[Series],
) -> PlotResult
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for (i, (label, pts)) in series.iter().enumerate() {
        let color = color_for(label, i);
        let style =
            ShapeStyle::from(&color).stroke_width(if label.starts_with("sol-") { 1 } else { 2 });
        chart
            .draw_series(LineSeries::new(pts.iter().map(|p| (p.0, p.1)), style))?
            .label(label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
        chart.draw_series(
            pts.iter()
                .map(|p| ErrorBar::new_vertical(p.0, p.2, p.1, p.3, color.filled(), 6)),
        )?;
    }
    Ok(())
}

fn legend<'a, X, Y>(chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>) -> PlotResult
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    // The legend sits in the right margin, clear of the lines.
    let (w, _) = chart.plotting_area().dim_in_pixel();
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::Coordinate(w as i32 + 12, 0))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 11))
        .draw()?;
    Ok(())
}

/// Colours by row group, so a reader finds the anchors and floors at a glance: greys for
/// speed-of-light, warm for HotSpot, distinct palette colours for protocols and anchors.
fn color_for(label: &str, i: usize) -> RGBColor {
    if label.starts_with("sol-") || label == "none" {
        let g = 120 + 30 * (i % 3) as u8;
        RGBColor(g, g, g)
    } else if label.starts_with("hotspot") {
        let k = (label.len() * 37 + i * 13) % 5;
        [
            RGBColor(230, 120, 20),
            RGBColor(200, 80, 40),
            RGBColor(240, 170, 40),
            RGBColor(180, 60, 90),
            RGBColor(210, 140, 90),
        ][k]
    } else {
        let c = Palette99::pick(i);
        let (r, g, b) = c.rgb();
        RGBColor(r, g, b)
    }
}

/// A plot's outcome as the report keeps it (the error as text).
pub type PlotResultPub = Result<(), String>;
