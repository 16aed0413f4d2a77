//! Files the controller serves to agents for `copy_files` and `sync` tasks:
//! `GET /agent/v1/files/{path}` answers the bytes (with [`SHA256_HEADER`] and [`MODE_HEADER`]), and
//! `?manifest=true` answers a [`FileManifest`].

use serde::{Deserialize, Serialize};

/// The header carrying a served file's SHA-256 (lowercase hex).
pub const SHA256_HEADER: &str = "x-plinth-sha256";
/// The header carrying a served file's permission bits, in octal.
pub const MODE_HEADER: &str = "x-plinth-mode";
/// The most files one manifest lists.
pub const MAX_MANIFEST_FILES: usize = 100_000;

/// Whether a served path is one file or a directory tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ManifestKind {
    /// One file: the manifest lists it alone, under its own name.
    File,
    /// A directory: the manifest lists every regular file under it.
    Directory,
}

/// One file of a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestFile {
    /// Relative to the requested directory (for a requested file: its name).
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256 of the content, lowercase hex.
    pub sha256: String,
    /// Permission bits.
    pub mode: u32,
}

/// The controller's description of a served path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileManifest {
    /// A file or a directory.
    #[serde(rename = "type")]
    pub kind: ManifestKind,
    /// The requested path.
    #[serde(default)]
    pub path: String,
    /// The files (for a file: one entry).
    pub files: Vec<ManifestFile>,
}
