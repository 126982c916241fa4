//! HotSpot's wall times of the same programs (`hotspot-NAME.tsv`, written by
//! `java/workloads/hotspot.sh`), read and set beside the replays.

use super::{Replayed, Spread, HOTSPOT_ANALOGUES};

use crate::doc::Block;
use std::path::{Path, PathBuf};

/// One line of a `hotspot-NAME.tsv` (written by `java/workloads/hotspot.sh`).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct HotspotRow {
    pub(super) workload: String,
    pub(super) mode: String,
    pub(super) flags: String,
    /// Wall time of each run, s (empty when skipped).
    pub(super) times: Vec<f64>,
    /// Why skipped (empty otherwise).
    pub(super) note: String,
}

/// Parses hotspot.sh's TSV: `workload mode flags wall_s note`, `#` lines are comments.
pub(super) fn parse_hotspot(text: &str) -> Vec<HotspotRow> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Some(HotspotRow {
                workload: f.first()?.to_string(),
                mode: f.get(1)?.to_string(),
                flags: f.get(2).unwrap_or(&"").to_string(),
                times: f
                    .get(3)
                    .unwrap_or(&"")
                    .split_whitespace()
                    .filter_map(|t| t.parse().ok())
                    .collect(),
                note: f.get(4).unwrap_or(&"").trim().to_string(),
            })
        })
        .collect()
}

/// Every `hotspot-*.tsv` in `dir`, by file name.
fn read_hotspot(dir: &Path) -> Vec<HotspotRow> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name().is_some_and(|n| {
                        let n = n.to_string_lossy();
                        n.starts_with("hotspot-") && n.ends_with(".tsv")
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|t| parse_hotspot(&t))
        .collect()
}

/// HotSpot's wall times of the same workloads, beside the locking time the replay of the
/// mode's objmon analogue takes.
pub(super) fn hotspot(d: &mut Vec<Block>, dir: &Path, rs: &[Replayed]) {
    d.push(Block::H(
        3,
        "HotSpot wall times of the same workloads".into(),
    ));
    let rows = read_hotspot(dir);
    if rows.is_empty() {
        d.push(Block::P(format!(
            "No HotSpot wall times in {}: `java/workloads/hotspot.sh NAME` runs workload NAME \
             without the recorder on each HotSpot locking mode and writes {}/hotspot-NAME.tsv.",
            dir.display(),
            dir.display()
        )));
        return;
    }
    d.push(Block::P(
        "The workloads run without the recorder on each HotSpot locking mode found \
         (`java/workloads/hotspot.sh`): wall time of the whole JVM run, median [min–max] over \
         the runs. Beside it, the objmon protocol closest to the mode (LockingMode=0: monitors \
         only ≈ `fat`; 1 and JDK 17's default: stack-locking ≈ `stack`; 2: lightweight ≈ \
         `lightweight`; JDK 17 +UseBiasedLocking ≈ `biased`) and the time its replay of the \
         workload's trace took (replayed operations × wall ns/op, median [min–max]), when a \
         trace of the same name was replayed above: how much of the wall time locking can \
         account for."
            .into(),
    ));
    let table = rows
        .iter()
        .map(|h| {
            let wall = if h.times.is_empty() {
                format!("skipped: {}", h.note)
            } else {
                format!(
                    "{} s ({} runs)",
                    Spread::cell(Spread::of(h.times.iter().copied())),
                    h.times.len()
                )
            };
            let analogue = HOTSPOT_ANALOGUES
                .iter()
                .find(|(m, _)| h.mode.starts_with(m))
                .map(|(_, p)| *p);
            let replayed = analogue
                .and_then(|p| {
                    let r = rs.iter().find(|r| r.name == h.workload)?;
                    let ops = r.plan.ops as f64;
                    let s = r.ns_per_op(p)?;
                    Some(format!(
                        "{} ms",
                        Spread::cell(Some(Spread {
                            median: s.median * ops / 1e6,
                            min: s.min * ops / 1e6,
                            max: s.max * ops / 1e6,
                        }))
                    ))
                })
                .unwrap_or_else(|| "—".into());
            vec![
                h.workload.clone(),
                h.mode.clone(),
                if h.flags.is_empty() {
                    "(none)".into()
                } else {
                    h.flags.clone()
                },
                wall,
                analogue.unwrap_or("—").to_string(),
                replayed,
            ]
        })
        .collect();
    d.push(Block::Table(
        [
            "workload",
            "mode",
            "flags",
            "wall time",
            "objmon analogue",
            "its replayed locking time",
        ]
        .map(String::from)
        .to_vec(),
        table,
    ));
}
