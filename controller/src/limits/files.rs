//! The open-file limit. Every agent holds one connection, and every connection is a file descriptor, so a
//! controller serving tens of thousands of agents needs far more than the usual soft limit of 1024. The
//! controller raises its soft limit to the hard one at start (the systemd unit sets the hard limit with
//! `LimitNOFILE=`); nothing else in the process needs a lower bound.

use nix::sys::resource::{getrlimit, setrlimit, Resource};

/// The soft and hard open-file limits before and after [`raise_open_files`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFiles {
    /// The soft limit found at start.
    pub before: u64,
    /// The soft limit now (the hard limit when raising it succeeded).
    pub after: u64,
    /// The hard limit.
    pub hard: u64,
}

/// Raises the soft open-file limit to the hard limit.
pub fn raise_open_files() -> nix::Result<OpenFiles> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
    }
    let (after, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    Ok(OpenFiles {
        before: soft,
        after,
        hard,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_ends_at_the_hard_limit() {
        let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("read the limit");
        // Start from a shell's usual soft limit, 1024 (high enough for the other tests of this process).
        let low = 1024.min(hard);
        setrlimit(Resource::RLIMIT_NOFILE, low, hard).expect("lower the soft limit");
        let got = raise_open_files().expect("raise the limit");
        assert_eq!(got.before, low);
        assert_eq!(got.after, hard);
        assert_eq!(getrlimit(Resource::RLIMIT_NOFILE).expect("read").0, hard);
    }
}
