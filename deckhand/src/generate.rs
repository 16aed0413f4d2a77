//! Generated sites.
