//! Builds tests/c/toy_vm.c with the system C compiler against the static library and the
//! generated header, and runs it over every protocol: the C path is tested on every CI run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `cmd`, killing it if it is still running after `limit`: a hung protocol must fail the
/// test, not stall CI.
fn run_with_watchdog(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > limit {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "toy_vm still running after {limit:?} (a hang); it printed:\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// Builds the static library. `cargo test` builds only the rlib, so run cargo once more, in a
/// target directory of this test's own (no wait on the outer build's lock, never stale).
fn build_static_lib() -> PathBuf {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ffi-build");
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "-p",
            "objmon-ffi",
            "--lib",
            "--target-dir",
        ])
        .arg(&target)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building libobjmon_ffi.a failed");
    target.join("debug/libobjmon_ffi.a")
}

#[test]
fn c_toy_vm_runs_on_every_protocol() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = build_static_lib();
    assert!(
        lib.exists(),
        "static library not built at {}",
        lib.display()
    );
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("toy_vm");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread"])
        .arg("-I")
        .arg(dir.join("include"))
        .arg(dir.join("tests/c/toy_vm.c"))
        .arg(&lib)
        .args(["-ldl", "-lm", "-o"])
        .arg(&out)
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}"));
    assert!(status.success(), "toy_vm.c did not compile");
    let run = run_with_watchdog(Command::new(&out), Duration::from_secs(240));
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
