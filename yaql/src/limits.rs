//! Evaluation limits, like YAQL's `limitIterators` and `memoryQuota`, plus a step budget and a
//! nesting bound so that no expression runs away.

/// Bounds on one evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest collection an expression may build (YAQL's `limitIterators`).
    pub max_collection: usize,
    /// Largest string, in bytes, an expression may build (YAQL's `memoryQuota`).
    pub memory_quota: usize,
    /// Most evaluation steps (nodes evaluated plus items visited) per evaluation.
    pub max_steps: u64,
    /// Deepest nesting of evaluations (lambda calls and recursion included).
    pub max_depth: usize,
}

impl Limits {
    /// The limits YAQL's own test suite assumes: 100 items, 20,000 bytes.
    pub const YAQL_TESTS: Limits = Limits {
        max_collection: 100,
        memory_quota: 20_000,
        max_steps: 1_000_000,
        max_depth: 150,
    };
}

impl Default for Limits {
    /// Generous bounds for deployment data: 1,000,000 items, 16 MiB strings, 50 million steps.
    fn default() -> Self {
        Limits {
            max_collection: 1_000_000,
            memory_quota: 16 << 20,
            max_steps: 50_000_000,
            max_depth: 150,
        }
    }
}
