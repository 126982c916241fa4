//! `examples/lines/` as a test: one protocol (`thin`), a handful of regions per scenario,
//! under valgrind's lackey; it checks that the counting runs and gives plausible figures (a
//! lock+unlock writes at least one line, the header's; a hand-off's release writes at least
//! one line the acquirer also touches), never a time. Without `valgrind --tool=lackey` it
//! says so and passes.
//!
//! The workload is this test binary itself: `measure` starts it under valgrind with the
//! workload named in `OBJMON_LINES_CHILD` and `lines_child` selected, and that test runs the
//! workload only when the variable is set (otherwise it does nothing).

#[path = "../examples/lines/main.rs"]
#[allow(dead_code)]
mod lines;

#[test]
fn lines_child() {
    if let Ok(spec) = std::env::var(lines::CHILD_ENV) {
        lines::child(&spec);
    }
}

#[test]
fn lines_counts_thin() {
    if std::env::var_os(lines::CHILD_ENV).is_some() {
        return;
    }
    if !lines::lackey_available() {
        eprintln!("lines_counts_thin: skipped, valgrind --tool=lackey is not installed");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let args = ["--exact", "lines_child", "--nocapture", "--test-threads=1"];
    for (scenario, warm, iters) in [("uncontended", 2, 5), ("handoff", 1, 2)] {
        let spec = lines::Spec {
            kind: "thin".into(),
            scenario: scenario.into(),
            warm,
            iters,
            sleep_ms: 20,
        };
        let f = lines::measure(&exe, &args, &spec).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(f.misattributed, 0, "{f:?}");
        assert!(!f.roles.is_empty(), "{scenario}: no regions found: {f:?}");
        for r in &f.roles {
            assert_eq!(r.regions, 2 * iters, "{scenario} {}: {f:?}", r.role);
            assert!(r.written >= 1.0, "{scenario} {}: {f:?}", r.role);
            assert!(r.written < 1000.0, "{scenario} {}: {f:?}", r.role);
        }
        if scenario == "uncontended" {
            let header = f.roles[0].written_by_label.get("header").copied();
            assert_eq!(header, Some(1.0), "{f:?}");
        } else {
            let release = f.roles.iter().find(|r| r.role == "release").unwrap();
            assert!(release.written_shared >= 1.0, "{f:?}");
        }
    }
}
