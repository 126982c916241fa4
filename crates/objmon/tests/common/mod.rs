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
