//! Giving freed memory back to the system at once, after the few moments that free a great deal of it.
//!
//! The controller's allocator (jemalloc, see `main.rs`) gives freed pages back about a second after
//! they are freed. A large deployment's start frees most of what it built (the resolution's trees,
//! every node's state as text) within that second, while it goes on to build more: the pages freed
//! are still counted in the process's memory when the next ones are made. After such a drop the engine
//! calls [`give_back`], which returns them then. The binary registers how ([`on_give_back`]); a build
//! without jemalloc, or a test, registers nothing and the call does nothing.

use std::sync::OnceLock;

static GIVE_BACK: OnceLock<fn()> = OnceLock::new();

/// Registers how freed memory is given back to the system (once, at start-up; later calls are
/// ignored).
pub fn on_give_back(give_back: fn()) {
    let _ = GIVE_BACK.set(give_back);
}

/// Gives the memory freed so far back to the system now, if the binary said how. It costs about as
/// much as the pages it returns (a system call per run of free pages), so it is called after a large
/// drop, not on any path that runs per request.
pub fn give_back() {
    if let Some(give_back) = GIVE_BACK.get() {
        give_back();
    }
}
