//! Why preparing an installed system failed, naming the disk, partition or file and the cause.

use std::path::PathBuf;

/// Why a step of preparing the installed system failed.
#[derive(Debug, thiserror::Error)]
pub enum InstalledError {
    /// A device or file could not be opened, read, written or asked something.
    #[error("{path}: {action}: {source}")]
    Io {
        /// The disk, partition or file.
        path: PathBuf,
        /// What was being done.
        action: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// The disk's partition table cannot be used as it is.
    #[error("{disk}: {message}")]
    Table {
        /// The disk.
        disk: PathBuf,
        /// What is wrong with its table.
        message: String,
    },
    /// A tool the step runs failed or is missing.
    #[error("{device}: {tool}: {message}")]
    Tool {
        /// The disk or partition it ran on.
        device: PathBuf,
        /// The tool.
        tool: String,
        /// Its exit status and what it said, or why it could not run.
        message: String,
    },
    /// No partition holds the root file system, or none matches the selector.
    #[error("{disk}: no root file system: {why}")]
    NoRoot {
        /// The disk.
        disk: PathBuf,
        /// What was looked for.
        why: String,
    },
    /// More than one partition could be the root file system.
    #[error("{disk}: more than one partition could be the root file system ({}): {why}", list(.candidates))]
    AmbiguousRoot {
        /// The disk.
        disk: PathBuf,
        /// The partitions that could be.
        candidates: Vec<PathBuf>,
        /// How they were found.
        why: String,
    },
    /// A path would leave the installed system's root, or goes through a symbolic link.
    #[error("{path}: refused: {why}")]
    Refused {
        /// The path asked for.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// A value given to write (host name, key, network setting) is not valid.
    #[error("{field}: {message}")]
    Invalid {
        /// Which value.
        field: String,
        /// What is wrong with it.
        message: String,
    },
}

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl InstalledError {
    /// An I/O error on `path` while doing `action`.
    pub(crate) fn io(
        path: impl Into<PathBuf>,
        action: impl Into<String>,
        source: std::io::Error,
    ) -> InstalledError {
        InstalledError::Io {
            path: path.into(),
            action: action.into(),
            source,
        }
    }

    /// A value that is not valid.
    pub(crate) fn invalid(field: impl Into<String>, message: impl Into<String>) -> InstalledError {
        InstalledError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }
}
