//! Builds tests/c/api_soundness.c (the C API's contracts) and runs
//! it once per protocol, each run under a watchdog.

mod cbuild;

use std::process::Command;
use std::time::Duration;

#[test]
fn c_api_contracts_hold_on_every_protocol() {
    let exe = cbuild::compile_c("api_soundness");
    let mut failed = Vec::new();
    for name in objmon::protocol::names() {
        let mut cmd = Command::new(&exe);
        cmd.arg(name);
        let out = cbuild::run_with_watchdog(cmd, Duration::from_secs(60));
        print!("{}", String::from_utf8_lossy(&out.stdout));
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
        if !out.status.success() {
            failed.push(name);
        }
    }
    assert!(failed.is_empty(), "C API contracts broken on {failed:?}");
}
