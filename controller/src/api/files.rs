//! The files agents pull for `copy_files` and `sync` tasks: `GET /agent/v1/files/{path}` under the
//! files root (`<data_dir>/files`, which may be a symbolic link to a directory elsewhere).
//!
//! - A file answers its bytes with `X-Plinth-Sha256` (lowercase hex) and `X-Plinth-Mode` (octal
//!   permission bits); the agent checks the hash of what it received.
//! - `?manifest=true` answers `{"type": "file"|"directory", "path", "files": [{path, size, sha256,
//!   mode}]}`: for a directory every regular file below it (paths relative to it, sorted), for a file
//!   one entry named by its file name.
//!
//! Only accepted nodes may read, over the same mutually authenticated channel as every agent request.
//! A path that is absolute, holds `.` or `..` components, or is empty is refused (400); a path that
//! does not exist, or that leaves the root through a symbolic link, is not found (404). Inside a
//! directory, symbolic links to files in the root are served as the files they point to; links that
//! leave the root, and links to directories, are left out.

use super::auth::Agent;
use super::error::{ApiError, Query};
use crate::state::AppState;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path as UrlPath, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// The files root's name inside the data directory.
pub const FILES_DIR: &str = "files";
/// The query of a file request.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileQuery {
    /// Answer the manifest instead of the bytes.
    #[serde(default)]
    pub manifest: bool,
}

pub use plinth_common::wire::{
    FileManifest as Manifest, ManifestFile as ManifestEntry, ManifestKind, MAX_MANIFEST_FILES,
    MODE_HEADER, SHA256_HEADER,
};

/// `GET /agent/v1/files/{*path}`.
pub async fn get(
    State(state): State<Arc<AppState>>,
    agent: Agent,
    path: Result<UrlPath<String>, PathRejection>,
    Query(query): Query<FileQuery>,
) -> Result<Response, ApiError> {
    if !agent.node.accepted() {
        return Err(ApiError::forbidden("this node is not accepted"));
    }
    let UrlPath(path) = path.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let relative = check_relative(&path)?;
    let root = state.config().data_dir.join(FILES_DIR);
    let want_manifest = query.manifest;
    let requested = path.clone();
    let found = tokio::task::spawn_blocking(move || -> Result<Found, ApiError> {
        let target = resolve(&root, &relative)?;
        if want_manifest {
            return manifest(&target.root, &target.path, requested).map(Found::Manifest);
        }
        if target.path.is_dir() {
            return Err(ApiError::bad_request(format!(
                "{requested} is a directory: ask for its manifest (?manifest=true) and its files"
            )));
        }
        let entry = describe(&target.path, name_of(&target.path))?;
        Ok(Found::File(target.path, entry))
    })
    .await
    .map_err(|e| ApiError::internal(format!("worker failed: {e}")))??;
    match found {
        Found::Manifest(m) => Ok(axum::Json(m).into_response()),
        Found::File(path, entry) => {
            tracing::debug!(node = agent.node.id, path = %path.display(), size = entry.size, "serving a file");
            serve(&path, &entry).await
        }
    }
}

enum Found {
    Manifest(Manifest),
    File(PathBuf, ManifestEntry),
}

/// A requested path found inside the root.
struct Target {
    /// The canonical root.
    root: PathBuf,
    /// The canonical path.
    path: PathBuf,
}

/// The path as plain components: no root, no `.` or `..`, not empty.
fn check_relative(path: &str) -> Result<PathBuf, ApiError> {
    if path.contains('\0') {
        return Err(ApiError::bad_request("the path holds a NUL byte"));
    }
    let p = Path::new(path);
    if p.is_absolute() {
        return Err(ApiError::bad_request(format!(
            "{path}: absolute paths are refused; paths are relative to the files root"
        )));
    }
    let mut out = PathBuf::new();
    for part in path.split('/') {
        match part {
            "" => {}
            "." | ".." => {
                return Err(ApiError::bad_request(format!(
                    "{path}: `.` and `..` components are refused"
                )))
            }
            _ => out.push(part),
        }
    }
    if out.as_os_str().is_empty() || out.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(ApiError::bad_request(format!("{path:?} names no file")));
    }
    Ok(out)
}

/// Finds `relative` under `root`, following links only while they stay inside it.
fn resolve(root: &Path, relative: &Path) -> Result<Target, ApiError> {
    let root = std::fs::canonicalize(root).map_err(|_| {
        ApiError::not_found(format!(
            "no files are served: the files root {} does not exist",
            root.display()
        ))
    })?;
    let missing = || ApiError::not_found(format!("no file {}", relative.display()));
    let path = std::fs::canonicalize(root.join(relative)).map_err(|_| missing())?;
    if !path.starts_with(&root) {
        tracing::warn!(path = %relative.display(), "refused a file request that leaves the files root");
        return Err(missing());
    }
    Ok(Target { root, path })
}

/// The manifest of a file or a directory.
fn manifest(root: &Path, target: &Path, requested: String) -> Result<Manifest, ApiError> {
    if !target.is_dir() {
        return Ok(Manifest {
            kind: ManifestKind::File,
            path: requested,
            files: vec![describe(target, name_of(target))?],
        });
    }
    let mut files = Vec::new();
    let mut pending = vec![target.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir)
            .map_err(|e| ApiError::internal(format!("cannot read {}: {e}", dir.display())))?;
        for entry in entries {
            let entry = entry
                .map_err(|e| ApiError::internal(format!("cannot read {}: {e}", dir.display())))?;
            let path = entry.path();
            let kind = entry
                .file_type()
                .map_err(|e| ApiError::internal(format!("cannot read {}: {e}", path.display())))?;
            if kind.is_dir() {
                pending.push(path);
                continue;
            }
            let real = if kind.is_symlink() {
                match std::fs::canonicalize(&path) {
                    Ok(real) if real.starts_with(root) && real.is_file() => real,
                    _ => {
                        tracing::warn!(path = %path.display(), "left out of a manifest: a link that leaves the files root or points to a directory");
                        continue;
                    }
                }
            } else if kind.is_file() {
                path.clone()
            } else {
                continue;
            };
            let name = path
                .strip_prefix(target)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            files.push(describe(&real, name)?);
            if files.len() > MAX_MANIFEST_FILES {
                return Err(ApiError::bad_request(format!(
                    "{requested} holds more than {MAX_MANIFEST_FILES} files"
                )));
            }
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Manifest {
        kind: ManifestKind::Directory,
        path: requested,
        files,
    })
}

fn name_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Size, hash and mode of a regular file.
fn describe(path: &Path, name: String) -> Result<ManifestEntry, ApiError> {
    let fail =
        |e: std::io::Error| ApiError::internal(format!("cannot read {}: {e}", path.display()));
    let mut file = std::fs::File::open(path).map_err(fail)?;
    let meta = file.metadata().map_err(fail)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(fail)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        size += n as u64;
    }
    Ok(ManifestEntry {
        path: name,
        size,
        sha256: hex::encode(hasher.finalize()),
        mode: meta.permissions().mode() & 0o7777,
    })
}

/// Streams a file with its hash and mode in the headers. A file that changes between hashing and
/// sending arrives with a hash that does not match, and the agent tries again.
async fn serve(path: &Path, entry: &ManifestEntry) -> Result<Response, ApiError> {
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|e| ApiError::internal(format!("cannot read {}: {e}", path.display())))?;
    let stream = futures_util::stream::unfold(file, |mut file| async move {
        use tokio::io::AsyncReadExt;
        let mut buf = vec![0u8; 64 * 1024];
        match file.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok::<_, std::io::Error>(buf), file))
            }
            Err(e) => Some((Err(e), file)),
        }
    });
    let mut response = Response::new(Body::from_stream(stream));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    let values = [
        (SHA256_HEADER, entry.sha256.clone()),
        (MODE_HEADER, format!("{:04o}", entry.mode)),
    ];
    for (name, value) in values {
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.insert(name, v);
        }
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_must_be_plain_and_relative() {
        assert_eq!(check_relative("a/b.txt").unwrap(), PathBuf::from("a/b.txt"));
        assert_eq!(check_relative("a//b/").unwrap(), PathBuf::from("a/b"));
        for bad in [
            "",
            "/",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "./a",
            "a/.",
            "a\0b",
        ] {
            let e = check_relative(bad).unwrap_err();
            assert_eq!(e.status, StatusCode::BAD_REQUEST, "{bad:?}");
        }
    }

    #[test]
    fn links_that_leave_the_root_are_not_found_and_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("files");
        std::fs::create_dir_all(root.join("mods/sub")).unwrap();
        std::fs::write(root.join("mods/a.pp"), "a").unwrap();
        std::fs::write(root.join("mods/sub/b.pp"), "bb").unwrap();
        std::fs::set_permissions(
            root.join("mods/sub/b.pp"),
            std::fs::Permissions::from_mode(0o750),
        )
        .unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("mods/leak")).unwrap();
        std::os::unix::fs::symlink(root.join("mods/a.pp"), root.join("mods/alias.pp")).unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("up")).unwrap();

        let e = resolve(&root, Path::new("mods/leak")).err().unwrap();
        assert_eq!(e.status, StatusCode::NOT_FOUND);
        let e = resolve(&root, Path::new("up/secret")).err().unwrap();
        assert_eq!(e.status, StatusCode::NOT_FOUND);
        let e = resolve(&root, Path::new("nothing")).err().unwrap();
        assert_eq!(e.status, StatusCode::NOT_FOUND);

        let t = resolve(&root, Path::new("mods")).unwrap();
        let m = manifest(&t.root, &t.path, "mods".into()).unwrap();
        assert_eq!(m.kind, ManifestKind::Directory);
        let names: Vec<&str> = m.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(names, ["a.pp", "alias.pp", "sub/b.pp"]);
        assert_eq!(m.files[2].mode, 0o750);
        assert_eq!(m.files[2].size, 2);
        assert_eq!(
            m.files[0].sha256,
            "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
        );

        let t = resolve(&root, Path::new("mods/sub/b.pp")).unwrap();
        let m = manifest(&t.root, &t.path, "mods/sub/b.pp".into()).unwrap();
        assert_eq!(m.kind, ManifestKind::File);
        assert_eq!(m.files[0].path, "b.pp");

        let e = resolve(&dir.path().join("absent"), Path::new("x"))
            .err()
            .unwrap();
        assert_eq!(e.status, StatusCode::NOT_FOUND);
    }
}
