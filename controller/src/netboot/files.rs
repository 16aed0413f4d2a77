//! The boot files (`vmlinuz`, `initrd.img`) held in memory once each, so that a rack booting at once
//! is served from one copy without touching the disk for each client. A file is read again when its
//! size or modification time changes (a new image dropped in place).

use bytes::Bytes;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// The files the boot listener serves: these names, in the images directory, and nothing else.
pub const BOOT_FILES: &[&str] = &["vmlinuz", "initrd.img"];

/// Why a boot file cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// Not one of [`BOOT_FILES`].
    #[error("not a boot file")]
    NotBootFile,
    /// The images directory lacks it, or it cannot be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

#[derive(Clone)]
struct Held {
    len: u64,
    modified: Option<SystemTime>,
    bytes: Bytes,
}

/// The images directory and what was read from it.
pub struct BootFiles {
    dir: PathBuf,
    held: Mutex<HashMap<&'static str, Held>>,
}

impl BootFiles {
    /// Boot files from `dir`.
    pub fn new(dir: &Path) -> BootFiles {
        BootFiles {
            dir: dir.to_path_buf(),
            held: Mutex::new(HashMap::new()),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file called `name`, when it is a boot file: from memory, or read now (blocking: call it off
    /// the async workers).
    pub fn get(&self, name: &str) -> Result<Bytes, FileError> {
        let name: &'static str = BOOT_FILES
            .iter()
            .find(|f| **f == name)
            .ok_or(FileError::NotBootFile)?;
        let path = self.dir.join(name);
        let read = |source| FileError::Read {
            path: path.clone(),
            source,
        };
        let meta = std::fs::metadata(&path).map_err(read)?;
        let (len, modified) = (meta.len(), meta.modified().ok());
        if let Some(h) = self
            .held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
        {
            if h.len == len && h.modified == modified {
                return Ok(h.bytes.clone());
            }
        }
        let bytes = Bytes::from(std::fs::read(&path).map_err(read)?);
        self.held.lock().unwrap_or_else(|p| p.into_inner()).insert(
            name,
            Held {
                len: bytes.len() as u64,
                modified,
                bytes: bytes.clone(),
            },
        );
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_boot_files_are_served_and_a_new_image_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("vmlinuz"), b"kernel-1").unwrap();
        std::fs::write(dir.path().join("secret"), b"no").unwrap();
        let files = BootFiles::new(dir.path());
        assert_eq!(&files.get("vmlinuz").unwrap()[..], b"kernel-1");
        for bad in [
            "secret",
            "../vmlinuz",
            "vmlinuz/",
            "",
            "initrd.img/../secret",
        ] {
            assert!(
                matches!(files.get(bad), Err(FileError::NotBootFile)),
                "{bad}"
            );
        }
        assert!(matches!(
            files.get("initrd.img"),
            Err(FileError::Read { .. })
        ));
        std::fs::write(dir.path().join("vmlinuz"), b"kernel-two").unwrap();
        assert_eq!(&files.get("vmlinuz").unwrap()[..], b"kernel-two");
    }
}
