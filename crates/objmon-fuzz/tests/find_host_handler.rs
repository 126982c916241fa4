//! The fuzzer finds the hole that the `-signal` protocols' host contract closes: a host
//! signal handler that leaves objmon's barrier signal unblocked lets a revocation nest inside
//! it while it interrupted a bias owner's section, and the section's commit then lands over
//! the revoked word (two owners; `crates/objmon/tests/signal_host.rs` is the focused test).
//! A process of its own: `unmask_barrier` is process-wide.
//!
//! Ignored: timing-dependent (a host handler has to catch the owner inside its few
//! instructions of section), and three minutes long at most. Run with
//! `cargo test --release -p objmon-fuzz --test find_host_handler -- --ignored`.

use std::time::Duration;

#[test]
#[ignore = "timing-dependent search, up to 3 minutes"]
fn finds_two_owners_under_an_unmasked_host_handler() {
    objmon_fuzz::signal::unmask_barrier();
    let mut found = Vec::new();
    for t in objmon_fuzz::targets().iter().filter(|t| t.is_signal()) {
        for seed in 1..=2 {
            let o = objmon_fuzz::Options {
                seed,
                budget: Duration::from_secs(45),
                len: 48,
                signals_everywhere: false,
                moves_everywhere: false,
                no_moves: false,
                lenient_moved: false,
                shrink: Duration::from_secs(5),
                surface: None,
            };
            if let Some(f) = objmon_fuzz::fuzz(t, &o).finding {
                assert!(f.message.contains("two owners"), "{}", f.message);
                found.push(t.name);
                break;
            }
        }
    }
    assert!(!found.is_empty(), "no finding on either -signal protocol");
}
