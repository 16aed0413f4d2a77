//! Reading facts back from a file, as `plinth-agent facts` prints them.

use plinth_common::wire::Facts;
use std::path::{Path, PathBuf};

/// Why a facts file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FactsFileError {
    /// The file could not be read.
    #[error("cannot read the facts file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not facts as `plinth-agent facts` prints them.
    #[error("the facts file {path} is not the JSON `plinth-agent facts` prints: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The cause, with its line and column.
        source: serde_json::Error,
    },
}

/// Reads the facts in `path` (the whole object `plinth-agent facts` prints).
pub fn read_file(path: &Path) -> Result<Facts, FactsFileError> {
    let text = std::fs::read(path).map_err(|source| FactsFileError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_slice(&text).map_err(|source| FactsFileError::Parse {
        path: path.to_path_buf(),
        source,
    })
}
