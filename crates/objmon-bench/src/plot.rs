//! SVG plots for the report (plotters' SVG backend): horizontal bars with min–max whiskers
//! (one bar per row, like seed 000 Figure 4 and seed 002 Figures 8 and 11) and line charts
//! over a parameter with min–max error bars (seed 000 MultiSync / Threads, seed 002 Fig. 16).

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
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
    X: Ranged<ValueType = f64> + plotters::coord::ranged1d::ValueFormatter<f64>,
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
    // Whiskers inside the plot area: a margin left and right of the first and last points.
    let (x0, x1) = if log_x {
        (x0 / 1.25, x1 * 1.25)
    } else {
        let pad = (x1 - x0) * 0.03;
        (x0 - pad, x1 + pad)
    };
    let (y0, y1) = ((y0 * 0.8).max(1e-3), y1 * 1.25);
    // Tall enough for the legend: a knob sweep adds a row per value.
    let height = 540.max(60 + LEGEND_ROW * series.len() as u32);
    let root = SVGBackend::new(path, (1000, height)).into_drawing_area();
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
            .x_label_formatter(&|v| log_tick(*v))
            .y_label_formatter(&|v| log_tick(*v))
            .x_desc(x_desc)
            .y_desc(y_desc)
            .label_style(("sans-serif", 12))
            .draw()?;
        draw_series_into(&mut chart, series)?;
    } else {
        let mut chart = builder.build_cartesian_2d(x0..x1, (y0..y1).log_scale())?;
        chart
            .configure_mesh()
            .y_label_formatter(&|v| log_tick(*v))
            .x_desc(x_desc)
            .y_desc(y_desc)
            .label_style(("sans-serif", 12))
            .draw()?;
        draw_series_into(&mut chart, series)?;
    }
    legend(&root, series)?;
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
    let colors = series_colors(series);
    for ((label, pts), &color) in series.iter().zip(&colors) {
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
fn series_colors(series: &[Series]) -> Vec<RGBColor> {
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

/// The legend, drawn on the whole image in the right margin (plotters' own legend is clipped
/// to the plotting area, where it would hide lines).
fn legend(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    series: &[Series],
) -> PlotResult {
    let (w, _) = root.dim_in_pixel();
    let x = w as i32 - LEGEND_WIDTH as i32 + 8;
    let colors = series_colors(series);
    for (i, ((label, _), &color)) in series.iter().zip(&colors).enumerate() {
        let y = 40 + LEGEND_ROW as i32 * i as i32;
        let style = line_style(label, color);
        if label.starts_with("hotspot") {
            root.draw(&PathElement::new(vec![(x, y), (x + 8, y)], style))?;
            root.draw(&PathElement::new(vec![(x + 12, y), (x + 20, y)], style))?;
        } else {
            root.draw(&PathElement::new(vec![(x, y), (x + 20, y)], style))?;
        }
        root.draw(&Text::new(
            label.clone(),
            (x + 26, y - 6),
            ("sans-serif", 12).into_font(),
        ))?;
    }
    Ok(())
}

/// Strong, mutually distinct colours (none pale on white), for protocols and anchors.
const PALETTE: [RGBColor; 20] = [
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
