//! Builds tests/c/toy_vm.c with the system C compiler against the static library and the
//! generated header, and runs it over every protocol: the C path is tested on every CI run.

mod cbuild;

use std::process::Command;
use std::time::Duration;

#[test]
fn c_toy_vm_runs_on_every_protocol() {
    let exe = cbuild::compile_c("toy_vm");
    let run = cbuild::run_with_watchdog(Command::new(&exe), Duration::from_secs(240));
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(run.status.success(), "toy_vm failed: {stderr}");
    for name in objmon::protocol::names() {
        assert!(
            stdout.lines().any(|l| l.starts_with(name)),
            "{name} did not run"
        );
    }
}
