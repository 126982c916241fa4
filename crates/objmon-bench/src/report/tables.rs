//! How the report writes figures: a cell (`median [min–max]`), a number, the wide and
//! per-parameter tables, and the bars and series a plot is drawn from.

use super::results::Results;

use crate::doc::Block;
use crate::plot;
use crate::record::Record;
use std::path::Path;

/// A figure as a table cell: median and the repetitions' range.
pub fn cell(r: Option<&Record>) -> String {
    match r {
        None => "—".to_string(),
        Some(r) => format!("{} [{}–{}]", num(r.median), num(r.min), num(r.max)),
    }
}

/// A number with precision that suits its size.
pub fn num(x: f64) -> String {
    if x >= 1000.0 {
        format!("{x:.0}")
    } else if x >= 100.0 {
        format!("{x:.1}")
    } else if x >= 10.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

pub(super) fn ratio_text(r: Option<f64>) -> String {
    r.map_or("not measured".to_string(), |x| format!("{x:.2}×"))
}

/// A table with one row per subject and one column per bench (single-parameter benches).
pub(super) fn wide_table(d: &mut Vec<Block>, r: &Results, benches: &[&str]) {
    let rows_order: Vec<String> = r
        .row_order()
        .into_iter()
        .filter(|row| benches.iter().any(|b| r.get(b, row, 0).is_some()))
        .collect();
    let mut header = vec!["row".to_string()];
    header.extend(benches.iter().map(|b| b.to_string()));
    let rows = rows_order
        .iter()
        .map(|row| {
            let mut v = vec![row.clone()];
            v.extend(benches.iter().map(|b| cell(r.get(b, row, 0))));
            v
        })
        .collect();
    d.push(Block::Table(header, rows));
}

/// A table with one row per subject and one column per parameter value.
pub(super) fn param_table(d: &mut Vec<Block>, r: &Results, bench: &str, pname: &str) {
    let params = r.params_of(bench);
    let mut header = vec![format!("row \\ {pname}")];
    header.extend(params.iter().map(u64::to_string));
    let rows = r
        .rows_of(bench)
        .iter()
        .map(|row| {
            let mut v = vec![row.clone()];
            v.extend(params.iter().map(|&p| cell(r.get(bench, row, p))));
            v
        })
        .collect();
    d.push(Block::Table(header, rows));
}

pub(super) fn bars_of(
    r: &Results,
    bench: &str,
    param: u64,
    f: impl Fn(f64) -> f64,
) -> Vec<plot::Bar> {
    r.rows_of(bench)
        .into_iter()
        .filter_map(|row| {
            let x = r.get(bench, &row, param)?;
            let (a, b) = (f(x.min), f(x.max));
            Some((row, f(x.median), a.min(b), a.max(b)))
        })
        .collect()
}

pub(super) fn series_of(r: &Results, bench: &str) -> Vec<plot::Series> {
    r.rows_of(bench)
        .into_iter()
        .map(|row| {
            let pts = r
                .records
                .iter()
                .filter(|x| x.bench == bench && x.protocol == row)
                .map(|x| (x.param as f64, x.median, x.min, x.max))
                .collect();
            (row, pts)
        })
        .collect()
}

pub(super) fn figure(
    d: &mut Vec<Block>,
    out: &Path,
    file: &str,
    caption: &str,
    res: plot::PlotResultPub,
) {
    match res {
        Ok(()) if out.join(file).is_file() => d.push(Block::Img(file.into(), caption.into())),
        Ok(()) => {}
        Err(e) => d.push(Block::P(format!("(figure {file} failed: {e})"))),
    }
}
