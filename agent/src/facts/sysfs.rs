//! Small readers for sysfs, procfs and other one-value files: every failure (missing, unreadable,
//! permission denied, empty) reads as `None`.

use std::path::Path;

/// The file's content, trimmed; `None` when missing, unreadable or empty.
pub fn read_trimmed(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let text = text.trim_matches(|c: char| c.is_whitespace() || c == '\0');
    (!text.is_empty()).then(|| text.to_string())
}

/// The file's content as an unsigned number.
pub fn read_u64(path: &Path) -> Option<u64> {
    read_trimmed(path)?.parse().ok()
}

/// The file's content as a signed number.
pub fn read_i64(path: &Path) -> Option<i64> {
    read_trimmed(path)?.parse().ok()
}

/// The last component of a symbolic link's target (`device/driver` → `e1000e`).
pub fn link_name(path: &Path) -> Option<String> {
    let target = std::fs::read_link(path).ok()?;
    target.file_name().map(|n| n.to_string_lossy().into_owned())
}

/// The names in a directory, sorted; empty when it cannot be read.
pub fn list_dir(path: &Path) -> Vec<String> {
    let mut names: Vec<String> = match std::fs::read_dir(path) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}
