//! `objmon-bench memory-probe`: each kind, in a fresh process as the report runs it, sees at
//! least its values' own size resident per object (a probe that measured nothing, or memory
//! reused from an earlier allocation, would show about 0), and only the monitors have a
//! wait row. (In one test process the allocator reuses freed memory, which is why the report
//! runs each kind in a child.)

use std::process::Command;

#[test]
fn every_kind_sees_its_values() {
    let kinds = [
        "monitor",
        "monitor-tasuki",
        "monitor-fable",
        "parking-lot-mutex",
        "parking-lot",
        "std-mutex",
    ];
    for kind in kinds {
        let out = Command::new(env!("CARGO_BIN_EXE_objmon-bench"))
            .args(["memory-probe", kind, "200000"])
            .output()
            .expect("run objmon-bench");
        assert!(out.status.success(), "{kind}: {out:?}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let size_of = v["size_of"].as_f64().expect("size_of");
        let allocated = v["allocated"].as_f64().expect("allocated");
        assert!(
            allocated >= 0.9 * size_of,
            "{kind}: {allocated} bytes per object resident, size_of {size_of}"
        );
        assert_eq!(
            v["waited_once"].is_number(),
            kind.starts_with("monitor"),
            "{kind}"
        );
    }
    let bad = Command::new(env!("CARGO_BIN_EXE_objmon-bench"))
        .args(["memory-probe", "nosuch", "10"])
        .output()
        .expect("run objmon-bench");
    assert_eq!(
        bad.status.code(),
        Some(2),
        "an unknown kind is a usage error"
    );
}
