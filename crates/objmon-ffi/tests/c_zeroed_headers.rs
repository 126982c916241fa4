//! Runs tests/c/zeroed_headers.c, which locks headers straight from `calloc`
//! (never initialised) on every protocol, one process per protocol, each killed if it hangs.

mod cbuild;

use std::process::Command;
use std::time::Duration;

/// Protocols on which an all-zero header may still hang (each listed one must fail, so the
/// list cannot rot). Empty: all-zero is a valid unlocked header for every
/// protocol (`lightweight*`: stored lock bits `00` are "unlocked"; `stack`: the zero word is
/// read as unlocked and INFLATING is `0b100`).
const EXPECTED_TO_FAIL: &[&str] = &[];

#[test]
fn calloc_headers_work_on_every_protocol() {
    let exe = cbuild::compile_c("zeroed_headers");
    let names = objmon::protocol::names();
    // One process per protocol, all at once: an expected hang costs its timeout only once.
    let results: Vec<(&str, Result<bool, String>)> = std::thread::scope(|s| {
        let runs: Vec<_> = names
            .iter()
            .map(|&name| {
                let exe = &exe;
                s.spawn(move || {
                    let limit = if EXPECTED_TO_FAIL.contains(&name) {
                        10
                    } else {
                        60
                    };
                    let mut cmd = Command::new(exe);
                    cmd.arg(name);
                    let (out, hung) = match cbuild::run_watched(cmd, Duration::from_secs(limit)) {
                        cbuild::Run::Done(o) => (o, false),
                        cbuild::Run::Hung(o) => (o, true),
                    };
                    let text = format!(
                        "{}{}",
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    );
                    if hung {
                        (
                            name,
                            Err(format!("hung after {limit} s; it printed:\n{text}")),
                        )
                    } else if out.status.success() {
                        (name, Ok(true))
                    } else {
                        (name, Err(format!("failed ({}):\n{text}", out.status)))
                    }
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let mut problems = Vec::new();
    for (name, r) in results {
        let expected_fail = EXPECTED_TO_FAIL.contains(&name);
        match (r, expected_fail) {
            (Ok(_), false) => println!("{name}: ok"),
            (Err(e), true) => println!("{name}: fails as expected (waits for its fix): {e}"),
            (Ok(_), true) => problems.push(format!(
                "{name} passes now: remove it from EXPECTED_TO_FAIL in tests/c_zeroed_headers.rs"
            )),
            (Err(e), false) => problems.push(format!("{name}: {e}")),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
