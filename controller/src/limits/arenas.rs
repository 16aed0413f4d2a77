//! glibc's malloc arenas. By default glibc gives threads up to eight arenas per core, and memory freed in
//! one arena serves only that arena's threads: the controller's blocking jobs (results, reports, the
//! end of a deployment) each leave their own high-water mark, so resident memory ends at about twice the
//! heap it ever held at once (measured in docs/BENCHMARKS.md, "A fleet of 100,000"). The controller
//! caps the arenas at start, before any thread is made, unless `MALLOC_ARENA_MAX` is set in its
//! environment (glibc reads that itself). Other C libraries are left alone.
//!
//! glibc also keeps the pages of freed memory resident until the top of a heap is free. A large
//! deployment's start (its resolution, every node's data) and end (every task's state) are short peaks
//! of hundreds of MiB: once each is over, the engine calls [`give_back`], and the freed pages go back to
//! the system instead of staying resident until the controller stops.

/// Arenas the controller asks for: one for the runtime's threads and one for the blocking jobs, which
/// spend most of their time in the database, not in the allocator.
pub const ARENAS: i32 = 2;

/// What [`cap_arenas`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arenas {
    /// Capped at this many.
    Capped(i32),
    /// `MALLOC_ARENA_MAX` is set: glibc follows it.
    FromEnvironment,
    /// glibc refused the setting, or this is not glibc.
    Unchanged,
}

/// Caps glibc's malloc arenas at [`ARENAS`] unless `MALLOC_ARENA_MAX` is set. Call it first thing in
/// `main`, before threads start.
pub fn cap_arenas() -> Arenas {
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return Arenas::FromEnvironment;
    }
    set(ARENAS)
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set(n: i32) -> Arenas {
    // SAFETY: mallopt only changes an allocator parameter; M_ARENA_MAX takes any positive count and
    // affects arenas made after it, so calling it while other threads allocate is harmless too.
    if unsafe { libc::mallopt(libc::M_ARENA_MAX, n) } == 1 {
        Arenas::Capped(n)
    } else {
        Arenas::Unchanged
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set(_: i32) -> Arenas {
    Arenas::Unchanged
}

/// Returns the freed memory of every arena to the system (glibc's `malloc_trim`); whether any was.
/// It walks the heap, so call it after a peak has passed, not on a hot path.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn give_back() -> bool {
    // SAFETY: malloc_trim only releases free pages of glibc's own heaps; it takes the arenas' locks, so
    // other threads may allocate meanwhile.
    unsafe { libc::malloc_trim(0) == 1 }
}

/// Other C libraries: nothing to do.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn give_back() -> bool {
    false
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;

    #[test]
    fn glibc_takes_the_cap() {
        // The environment decides when it says; otherwise glibc accepts the count.
        let want = if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
            Arenas::FromEnvironment
        } else {
            Arenas::Capped(ARENAS)
        };
        assert_eq!(cap_arenas(), want);
    }

    #[test]
    fn freed_small_allocations_go_back_to_the_system() {
        // A peak of small blocks (below the size glibc maps on its own), freed: their pages stay in
        // the heap until given back.
        let blocks: Vec<Vec<u8>> = (0..100_000).map(|i| vec![(i % 251) as u8; 1_000]).collect();
        drop(std::hint::black_box(blocks));
        assert!(
            give_back(),
            "100 MB of freed blocks: glibc had pages to give back"
        );
    }
}
