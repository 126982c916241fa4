//! Tests of the section on the compiled-in small trace and on made-up HotSpot files.

use super::hotspot::*;
use super::*;

/// Text of every block, for searching.
fn text(d: &[Block]) -> String {
    crate::doc::markdown(d)
}

/// A fresh empty directory under the system's temp dir.
fn empty_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("objmon-realprog-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn small_trace_through_the_section() {
    let dir = empty_dir("none");
    let mut d = Vec::new();
    build(&mut d, &dir, 2);
    let md = text(&d);
    // No trace: one line names the command that records them, and the checked-in trace
    // fills the section.
    assert_eq!(md.matches(RECORD_COMMAND).count(), 1, "{md}");
    assert!(md.contains("h2-small"));
    // Every protocol of the catalog and every anchor has a replay row and a speed-up.
    for n in objmon::vm::names().into_iter().chain(trace::ANCHORS) {
        assert!(md.contains(&format!("| {n} | ")), "no row for {n} in\n{md}");
    }
    for h in [
        "Speed-up over `monitor-cache`",
        "Speed-up over `fat`",
        "FABLE vs biased vs thin",
        "seed 000 Table 1",
        "seed 003: Jigsaw",
        "No HotSpot wall times",
    ] {
        assert!(md.contains(h), "no {h:?} in\n{md}");
    }
    // The checked-in trace is multi-threaded: FABLE vs biased has rows, and the replay
    // refused nothing.
    assert!(
        md.contains("| h2-small (698 owner changes) | fable | "),
        "{md}"
    );
    assert!(md.contains("operations refused: 0)"), "{md}");
    // Speed-ups are medians with their spread; `monitor-cache` over itself is exactly 1.
    assert!(md.contains("| monitor-cache | 1.00× [1.00–1.00] | 1.00× [1.00–1.00] |"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn small_trace_characterized_exactly() {
    let p = small_program();
    let c = trace::characterize(&p.name, &p.trace);
    assert_eq!(c.lock_ops, 43_247);
    assert_eq!(c.synchronized_objects, 7_143);
    assert_eq!(c.multi_thread_objects, 61);
    assert_eq!(c.anomalies, 0);
    assert!(p.trace.complete);
}

#[test]
fn hotspot_tsv_read_with_skips() {
    let t = "# workload\tmode\tflags\twall_s\tnote\n\
             h2\thotspot25-lm0\t-XX:LockingMode=0\t3.5 3.1 3.3\t\n\
             h2\thotspot17-biased\t-XX:+UseBiasedLocking\t\tno JDK at /x\n";
    let rows = parse_hotspot(t);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].times, vec![3.5, 3.1, 3.3]);
    assert!(rows[1].times.is_empty());
    assert_eq!(rows[1].note, "no JDK at /x");
    let s = Spread::of(rows[0].times.iter().copied()).unwrap();
    assert_eq!((s.median, s.min, s.max), (3.3, 3.1, 3.5));
}

#[test]
fn traces_and_hotspot_from_a_directory() {
    let dir = empty_dir("dir");
    std::fs::write(dir.join("h2.trace"), SMALL_TRACE).unwrap();
    std::fs::write(dir.join("h2-copy.trace"), SMALL_TRACE).unwrap();
    std::fs::write(dir.join("broken.trace"), b"not a trace").unwrap();
    std::fs::write(
        dir.join("hotspot-h2.tsv"),
        "h2\thotspot25-lm2\t-XX:LockingMode=2\t3.0 3.2 2.9\t\n",
    )
    .unwrap();
    let mut d = Vec::new();
    build(&mut d, &dir, 1);
    let md = text(&d);
    assert!(!md.contains(RECORD_COMMAND), "{md}");
    assert!(md.contains("broken.trace: unreadable"));
    // The HotSpot row, its analogue and the analogue's replayed locking time.
    assert!(
        md.contains("| h2 | hotspot25-lm2 | -XX:LockingMode=2 | 3.000 [2.900–3.200] s (3 runs) | lightweight | "),
        "{md}"
    );
    assert!(md.contains(" ms |"));
    // Two multi-threaded programs: seed 002's geometric mean over them.
    assert!(
        md.contains("| geometric mean over 2 programs | fable |  | "),
        "{md}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
