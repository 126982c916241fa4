//! Shared by the C test drivers (`tests/c_*.rs`); not a test target of its own: builds the
//! static library and a C program against the generated header, and runs programs under a
//! watchdog so that a hang fails a test instead of stalling CI.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How a watched run ended.
pub enum Run {
    /// It exited by itself.
    Done(Output),
    /// It was still running after the limit and was killed; what it printed until then.
    Hung(Output),
}

/// Runs `cmd`, killing it if it is still running after `limit`.
pub fn run_watched(mut cmd: Command, limit: Duration) -> Run {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Drain the pipes on threads: a chatty child must not block on a full pipe.
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let so = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut so, &mut v).ok();
        v
    });
    let se = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut se, &mut v).ok();
        v
    });
    let t0 = Instant::now();
    let mut hung = false;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > limit {
            hung = true;
            child.kill().unwrap();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = Output {
        status,
        stdout: so.join().unwrap(),
        stderr: se.join().unwrap(),
    };
    if hung {
        Run::Hung(out)
    } else {
        Run::Done(out)
    }
}

/// As [`run_watched`], panicking on a hang with what the program printed.
pub fn run_with_watchdog(cmd: Command, limit: Duration) -> Output {
    match run_watched(cmd, limit) {
        Run::Done(o) => o,
        Run::Hung(out) => panic!(
            "still running after {limit:?} (a hang); it printed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// The static library of this very build: cargo compiles the library target once with all
/// of its crate types (`staticlib` among them) and leaves `libobjmon_ffi.a` beside the test
/// executables in `deps/`. Only when it is not there (a test binary run outside cargo) is it
/// built once more, in a target directory of these tests' own (no wait on the outer build's
/// lock).
pub fn build_static_lib() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    if let Some(lib) = exe.parent().map(|deps| deps.join("libobjmon_ffi.a")) {
        if lib.exists() {
            return lib;
        }
    }
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
    let lib = target.join("debug/libobjmon_ffi.a");
    assert!(
        lib.exists(),
        "static library not built at {}",
        lib.display()
    );
    lib
}

/// Compiles `tests/c/<name>.c` against the header and the static library; returns the
/// executable.
pub fn compile_c(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = build_static_lib();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread"])
        .arg("-I")
        .arg(dir.join("include"))
        .arg(dir.join(format!("tests/c/{name}.c")))
        .arg(&lib)
        .args(["-ldl", "-lm", "-o"])
        .arg(&out)
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}"));
    assert!(status.success(), "{name}.c did not compile");
    out
}
