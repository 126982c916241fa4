//! Shared by the loom model files (`tests/loom*.rs`); not a test target of its own.

/// A loom model builder with preemption bound `default_bound`, or `LOOM_MAX_PREEMPTIONS` when
/// that is set (to explore deeper by hand).
pub fn builder(default_bound: usize) -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(
        std::env::var("LOOM_MAX_PREEMPTIONS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default_bound),
    );
    b
}

/// The system lock of most models: the default release (seed 004's Figure 7 with the
/// suspender's `membarrier`, modelled as a fence on both sides; Figure 7 itself under
/// `OBJMON_LOOM_SYMMETRIC=1`), suspending at once (no spin, no yields: a model explores every
/// interleaving, and a spin only multiplies them).
#[allow(dead_code)] // not every model file uses it
pub fn system_lock() -> objmon::vm::SystemLockConfig {
    objmon::vm::SystemLockConfig {
        variant: objmon::vm::SystemLockVariant::Figure7Membarrier,
        spin_limit: 0,
        spin_yields: 0,
        queue_first: false,
        fair_handoff: None,
    }
}

/// The runtime of most models: 4 thread ids, `monitor_capacity` monitors, [`system_lock`].
#[allow(dead_code)] // not every model file uses it
pub fn config(monitor_capacity: u32) -> objmon::vm::Config {
    objmon::vm::Config {
        max_threads: 4,
        monitor_capacity,
        system_lock: system_lock(),
        ..objmon::vm::Config::default()
    }
}

/// The models' critical section: a non-atomic-style increment of `count`; two owners at once
/// (`inside` already set) is a failure.
#[allow(dead_code)] // not every model file uses it
pub fn critical(inside: &loom::sync::atomic::AtomicBool, count: &loom::sync::atomic::AtomicUsize) {
    use loom::sync::atomic::Ordering;
    assert!(!inside.swap(true, Ordering::Relaxed), "two owners at once");
    let c = count.load(Ordering::Relaxed);
    count.store(c + 1, Ordering::Relaxed);
    inside.store(false, Ordering::Relaxed);
}

/// A runtime of `P`, made with `Runtime::new_unchecked` because some protocols the models
/// run (`lightweight*`) ask the host never to move or free a header held through a leaked
/// guard.
#[allow(dead_code)] // not every model file uses it
pub fn hosted<P: objmon::vm::Protocol>(
    config: objmon::vm::Config,
) -> std::sync::Arc<objmon::vm::Runtime<P>> {
    // SAFETY: the contract of `new_unchecked`: no model moves or frees a header held through
    // a leaked guard without reporting it (the models that move headers do so unlocked, or
    // through `reclaim`).
    unsafe { objmon::vm::Runtime::new_unchecked(config) }
}

/// Moves the object out of `h` (all other holders gone), as safe Rust may move an unlocked
/// header: the moved object keeps hash `v`, the fresh one left in its place has none.
#[allow(dead_code)] // not every model file uses it
pub fn hash_follows_the_move<P: objmon::vm::Protocol>(
    rt: &objmon::vm::Runtime<P>,
    h: loom::sync::Arc<P::Header>,
    v: u32,
) -> P::Header {
    let mut owned = loom::sync::Arc::try_unwrap(h).ok().expect("threads joined");
    let moved = std::mem::take(&mut owned);
    assert_eq!(
        rt.peek_identity_hash(&owned),
        None,
        "a fresh object sees the hash"
    );
    assert_eq!(
        rt.peek_identity_hash(&moved),
        Some(v),
        "the hash did not follow"
    );
    moved
}
