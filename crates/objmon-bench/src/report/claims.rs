//! The seed papers' claims, each beside this run's ratio and its verdict (see
//! [`crate::claim`]).

use super::results::Results;

use crate::claim::{self, Ratio};
use crate::doc::Block;
use crate::record::Record;
use crate::subject::{self};

/// A paper's ratio `lo`–`hi` against this run's: held within a factor 2 of it, held and more,
/// did not hold, or the repetitions disagree (see [`claim`]).
pub(super) fn headline_verdict(ours: &Ratio, lo: f64, hi: f64) -> String {
    let (low, high) = (lo / 2.0, hi * 2.0);
    if ours.disagrees(&[low, high]) {
        ours.disagree_text()
    } else if ours.median < low {
        format!(
            "did not hold ({}× short of the paper's)",
            claim::fmt(lo / ours.median)
        )
    } else if ours.median > high {
        format!(
            "held and more ({}× beyond the paper's)",
            claim::fmt(ours.median / hi)
        )
    } else {
        "held (within a factor 2 of the paper's)".to_string()
    }
}

fn claim_row(seed: &str, claim: &str, ours: String, how: &str) -> Vec<String> {
    vec![seed.into(), claim.into(), ours, how.into()]
}

pub(super) fn claims(d: &mut Vec<Block>, r: &Results) {
    d.push(Block::H(2, "The papers' claims beside this run".into()));
    d.push(Block::P(
        "Left: the paper's words and numbers (quoted, not used in any computation). Right: the \
         same ratio from this run, `median (min–max)` over the repetitions (per-round ratios where \
         the rows ran round by round: Cloud, Threads; else the ratio of the medians, its range \
         from the fastest ÷ the slowest repetition to the slowest ÷ the fastest). 'not measured' means a row is not in this build \
         (protocols appear here as they are added to objmon::vm::visit_all)."
            .into(),
    ));
    let mut rows = Vec::new();
    rows.push(claim_row(
        "000 §3.3",
        "Sync: thin locks 3.7× faster than JDK 1.1.1 (monitor cache)",
        claim::text(r.claim("sync", "monitor-cache", "thin", 0).as_ref()),
        "monitor-cache ÷ thin, sync",
    ));
    rows.push(claim_row(
        "000 §3.3",
        "Sync: thin locks 1.8× faster than IBM 1.1.2 hot (always fat) locks",
        claim::text(r.claim("sync", "fat", "thin", 0).as_ref()),
        "fat ÷ thin, sync",
    ));
    rows.push(claim_row(
        "000 §3.3",
        "CallSync: speed-ups 'still large, but slightly lower' than Sync",
        claim::text(r.claim("call-sync", "monitor-cache", "thin", 0).as_ref()),
        "monitor-cache ÷ thin, call-sync",
    ));
    let ms = r.params_of("multi-sync");
    if let (Some(&lo), Some(&hi)) = (ms.first(), ms.last()) {
        rows.push(claim_row(
            "000 §3.3",
            "MultiSync: thin locks scale linearly in the working set (ns per lock flat)",
            claim::text(
                r.get("multi-sync", "thin", hi)
                    .zip(r.get("multi-sync", "thin", lo))
                    .and_then(|(a, b)| Ratio::of_records(a, b))
                    .as_ref(),
            ),
            &format!("thin at n={hi} ÷ thin at n={lo}"),
        ));
    }
    rows.push(claim_row(
        "002 §5.1 Fig. 8",
        "Cloud: FABLE 8×–55× faster than simple biased locking",
        claim::text(r.claim("cloud", "biased", "fable", 0).as_ref()),
        "biased ÷ fable, ns per acquisition",
    ));
    rows.push(claim_row(
        "002 §5.1 Fig. 8",
        "Cloud: FABLE within ~10% of thin locks",
        claim::text(r.claim("cloud", "fable", "thin", 0).as_ref()),
        "fable ÷ thin",
    ));
    rows.push(claim_row(
        "002 §5.1 Fig. 11",
        "ProdCons: FABLE ~6× better than Bias-Async",
        claim::text(r.claim("prod-cons", "biased", "fable", 0).as_ref()),
        "biased ÷ fable",
    ));
    rows.push(claim_row(
        "002 §5.1 Fig. 11",
        "ProdCons: FABLE about 3× slower than thin locks",
        claim::text(r.claim("prod-cons", "fable", "thin", 0).as_ref()),
        "fable ÷ thin",
    ));
    let worst = r
        .params_of("alloc-lock")
        .into_iter()
        .filter_map(|k| r.claim("alloc-lock", "fable", "thin", k).map(|x| (x, k)))
        .max_by(|a, b| a.0.median.total_cmp(&b.0.median));
    rows.push(claim_row(
        "002 §5.3 Fig. 16",
        "AllocLock: FABLE up to 50% slower (1.5×) than thin locks",
        claim::text(worst.as_ref().map(|w| &w.0)),
        &match worst {
            Some((_, k)) => format!("max over k of fable ÷ thin (worst at k={k})"),
            None => "max over k of fable ÷ thin".into(),
        },
    ));
    for (name, k) in subject::knobs() {
        let worst = k
            .values
            .iter()
            .flat_map(|&v| {
                let row = subject::knob_row(name, &k, v);
                r.params_of("alloc-lock")
                    .into_iter()
                    .filter_map(move |p| r.claim("alloc-lock", &row, "thin", p).map(|x| (x, v, p)))
            })
            .max_by(|a, b| a.0.median.total_cmp(&b.0.median));
        rows.push(claim_row(
            "002 §5.3 Fig. 16",
            &format!(
                "AllocLock, {name} at every {} ({}): up to 50% slower than thin locks",
                k.name, k.seed
            ),
            claim::text(worst.as_ref().map(|w| &w.0)),
            &match worst {
                Some((_, v, p)) => format!(
                    "max over {} and k of {} ÷ thin (worst at {}={v}, k={p})",
                    k.name,
                    subject::knob_family(name, &k),
                    k.name
                ),
                None => format!("max over {} and k of {name}[…] ÷ thin", k.name),
            },
        ));
    }
    for (name, k) in subject::knobs() {
        // §5.3: k = N makes every other object bias on its second acquisition; compare
        // N = k with its neighbours N = k ± 1 at the same k. Only k ≥ 3 can show it: the
        // saving is the k − 2 acquisitions after the second.
        let row = |v: u32| subject::knob_row(name, &k, v);
        let dips: Vec<String> = r
            .params_of("alloc-lock")
            .into_iter()
            .filter(|&p| p >= 3)
            .filter_map(|p| {
                let n = u32::try_from(p).ok().filter(|n| k.values.contains(n))?;
                let at = r.get("alloc-lock", &row(n), p)?;
                let nb: Vec<&Record> = [n.checked_sub(1), n.checked_add(1)]
                    .into_iter()
                    .flatten()
                    .filter(|m| k.values.contains(m))
                    .filter_map(|m| r.get("alloc-lock", &row(m), p))
                    .collect();
                // The neighbours' mean as one record: median, fastest and slowest of the mean.
                let mean =
                    |f: fn(&Record) -> f64| nb.iter().map(|x| f(x)).sum::<f64>() / nb.len() as f64;
                let nb_mean = Record {
                    median: mean(|x| x.median),
                    min: mean(|x| x.min),
                    max: mean(|x| x.max),
                    ..at.clone()
                };
                (!nb.is_empty())
                    .then(|| Ratio::of_records(at, &nb_mean))
                    .flatten()
                    .map(|x| format!("k={p}: {}", x.text()))
            })
            .collect();
        rows.push(claim_row(
            "002 §5.3 Fig. 16",
            &format!(
                "AllocLock, {name}: resonance at k = N (§3.1's per-thread count: every other \
                 object biases on its 2nd acquisition, so k = N runs faster than expected; \
                 {name} counts per object, so ≈ 1× is its expected answer)"
            ),
            if dips.is_empty() {
                "not measured".into()
            } else {
                dips.join(", ")
            },
            &format!(
                "{} at k = N ÷ mean of {} at N ± 1, same k, for k ≥ 3 (below 1× = a dip)",
                subject::knob_family(name, &k),
                k.name
            ),
        ));
    }
    // A call cost with its range: from the fastest row repetition − the slowest loop's to
    // the slowest − the fastest.
    let cost = |bench: &str, row: &str| {
        let a = r.get(bench, row, 0)?;
        let b = r.get(bench, "sol-empty", 0)?;
        Some(format!(
            "{:.1} ns ({:.1}–{:.1})",
            a.median - b.median,
            a.min - b.max,
            a.max - b.min
        ))
    };
    let cost_text = |bench: &str| match (cost(bench, "cacao"), cost(bench, "thin")) {
        (Some(c), Some(t)) => format!("{c} per call (thin: {t})"),
        (Some(c), None) => format!("{c} per call"),
        _ => "not measured".into(),
    };
    rows.push(claim_row(
        "003 Results",
        "mutex test: CACAO's call cost (synchronized − plain) 0.40 µs on a 289 MHz Alpha, 1.2–37 µs for the JDKs of the day",
        cost_text("mutex-test"),
        "cacao − sol-empty (same loop, no-op lock)",
    ));
    rows.push(claim_row(
        "003 Results",
        "tree test: call cost 0.99 µs, higher than the mutex test because it 'violates the locality of monitor operations'",
        cost_text("tree-test"),
        "cacao − sol-empty",
    ));
    rows.push(claim_row(
        "004 §5.1 Table 2",
        "tasuki lock ~30% less time than a double-atomic lock (28.8–31.6%)",
        r.claim(
            "system-monitor",
            "syslock-tasuki-fig7",
            "syslock-double-atomic",
            0,
        )
        .map_or("not measured".into(), |x| {
            let m = x.median;
            if m <= 1.0 {
                format!("{:.1}% less time ({})", 100.0 * (1.0 - m), x.text())
            } else {
                format!("{:.1}% more time ({})", 100.0 * (m - 1.0), x.text())
            }
        }),
        "1 − tasuki-fig7 ÷ double-atomic, bare system locks",
    ));
    rows.push(claim_row(
        "004 §4",
        "Figure 7 (one fence) beats Figure 5 (two fences) on a multiprocessor",
        claim::text(
            r.claim(
                "system-monitor",
                "syslock-tasuki-fig5",
                "syslock-tasuki-fig7",
                0,
            )
            .as_ref(),
        ),
        "fig5 ÷ fig7",
    ));
    rows.push(claim_row(
        "004 §4 (objmon)",
        "Figure 7 with its release fence moved to the suspender (membarrier) beats Figure 7",
        claim::text(
            r.claim(
                "system-monitor",
                "syslock-tasuki-membarrier",
                "syslock-tasuki-fig7",
                0,
            )
            .as_ref(),
        ),
        "membarrier ÷ fig7",
    ));
    rows.push(claim_row(
        "004 §1 Table 1",
        "an extra atomic op per iteration more than doubles a loop on a 4-way",
        claim::text(r.claim("sync", "sol-cas-cas", "sol-cas-store", 0).as_ref()),
        "sol-cas-cas ÷ sol-cas-store, sync",
    ));
    for hs in r
        .rows_of("sync")
        .iter()
        .filter(|n| n.starts_with("hotspot"))
    {
        rows.push(claim_row(
            "—",
            &format!("objmon thin vs {hs} on Sync (no paper claim)"),
            claim::text(r.claim("sync", hs, "thin", 0).as_ref()),
            &format!("{hs} ÷ thin"),
        ));
    }
    d.push(Block::Table(
        vec![
            "seed".into(),
            "paper's claim (quoted)".into(),
            "this run".into(),
            "computed as".into(),
        ],
        rows,
    ));
}
