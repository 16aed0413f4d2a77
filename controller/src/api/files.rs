//! The files agents pull for `copy_files` and `sync` tasks: `GET /agent/v1/files/{path}` under the
//! files root (`<data_dir>/files`, which may be a symbolic link to a directory elsewhere; see
//! [`crate::file_catalog`]).
//!
//! - A file answers its bytes with `X-Plinth-Sha256` (lowercase hex) and `X-Plinth-Mode` (octal
//!   permission bits); the agent checks what it received against the manifest its signed list names.
//! - `?manifest=true` answers `{"type": "file"|"directory", "path", "files": [{path, size, sha256,
//!   mode}]}`: for a directory every regular file below it (paths relative to it, sorted), for a file
//!   one entry named by its file name. For a source the node's list sealed, the answer is the sealed
//!   manifest; when the files changed since, `409`.
//!
//! Only accepted nodes may read, and each only what its current list names: the sources of its
//! `copy_files` and `sync` tasks, and the files below a `sync` source (403 otherwise, before the
//! files root is looked at). A path that is absolute, holds `.` or `..` components, or is empty is
//! refused (400); a path that does not exist, or that leaves the root through a symbolic link, is not
//! found (404).

use super::auth::Agent;
use super::error::{ApiError, Query};
use crate::file_catalog::{check_relative, sources, FileError};
use crate::state::AppState;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path as UrlPath, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use plinth_common::wire::{TaskKind, TaskList};
use serde::Deserialize;
use std::path::{Path, PathBuf};
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

impl From<FileError> for ApiError {
    fn from(e: FileError) -> ApiError {
        match e {
            FileError::BadPath(m) => ApiError::bad_request(m),
            FileError::NotFound(m) => ApiError::not_found(m),
            e @ FileError::TooMany(_) => ApiError::bad_request(e.to_string()),
            FileError::Io(m) => ApiError::internal(m),
        }
    }
}

/// Where a requested path falls in a node's list: the source it is or lies below, and the digest the
/// list sealed for that source (none when the source could not be described at publication).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InScope {
    /// The source named by the list.
    pub source: String,
    /// The sealed manifest digest, if any.
    pub digest: Option<String>,
}

/// Whether `list` names `requested` (normalised, relative): a source of one of its file tasks (first
/// choice, so that its own sealed digest is found), or a path below a `sync` source.
pub fn scope(list: &TaskList, requested: &str) -> Option<InScope> {
    let found = |below: bool| {
        list.tasks.iter().find_map(|task| {
            if below && task.kind != TaskKind::Sync {
                return None;
            }
            sources(task)
                .into_iter()
                .find(|s| {
                    if below {
                        requested
                            .strip_prefix(s.as_str())
                            .is_some_and(|rest| rest.starts_with('/'))
                    } else {
                        requested == s
                    }
                })
                .map(|source| InScope {
                    digest: task.manifests.get(&source).cloned(),
                    source,
                })
        })
    };
    found(false).or_else(|| found(true))
}

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
    let requested = relative.to_string_lossy().into_owned();
    let in_scope = state
        .agents
        .board
        .current(agent.node.id)
        .and_then(|list| scope(&list, &requested));
    let Some(in_scope) = in_scope else {
        tracing::warn!(node = agent.node.id, path = %requested, "refused a file its current task list does not name");
        return Err(ApiError::forbidden(format!(
            "{requested}: this node's current task list names no such file"
        )));
    };
    let catalog = state.engine.files.clone();
    if query.manifest {
        if in_scope.source != requested {
            return Err(ApiError::forbidden(format!(
                "{requested}: manifests are served for the sources a task list names ({})",
                in_scope.source
            )));
        }
        let answer = tokio::task::spawn_blocking(move || match &in_scope.digest {
            Some(digest) => match catalog.sealed_manifest(&requested, digest)? {
                Some(bytes) => Ok((*bytes).clone()),
                None => Err(ApiError::conflict(format!(
                    "{requested} changed on the controller since this node's list was published: deploy again to install the new content"
                ))),
            },
            None => {
                let m = catalog.manifest(&requested)?;
                Ok(serde_json::to_vec(&m).unwrap_or_default())
            }
        })
        .await
        .map_err(|e| ApiError::internal(format!("worker failed: {e}")))??;
        let mut response = Response::new(Body::from(answer));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        return Ok(response);
    }
    let found =
        tokio::task::spawn_blocking(move || -> Result<(PathBuf, ManifestEntry), ApiError> {
            let target = catalog.resolve(&relative)?;
            if target.path.is_dir() {
                return Err(ApiError::bad_request(format!(
                "{requested} is a directory: ask for its manifest (?manifest=true) and its files"
            )));
            }
            let name = target
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let entry = catalog.describe(&target.path, name)?;
            Ok((target.path, entry))
        })
        .await
        .map_err(|e| ApiError::internal(format!("worker failed: {e}")))??;
    let (path, entry) = found;
    tracing::debug!(node = agent.node.id, path = %path.display(), size = entry.size, "serving a file");
    serve(&path, &entry).await
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
    use plinth_common::wire::{TaskSpec, TASK_LIST_FORMAT};

    #[test]
    fn a_node_reads_only_what_its_list_names() {
        let task = |kind, params: serde_json::Value, sealed: &[(&str, &str)]| TaskSpec {
            id: "t".into(),
            kind,
            parameters: params.as_object().cloned().unwrap(),
            skip_reason: None,
            waits_for: vec![],
            gated: false,
            manifests: sealed
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let list = TaskList {
            format: TASK_LIST_FORMAT,
            node_key: "k".into(),
            node_id: 1,
            deployment_id: 1,
            phase: "deploy".into(),
            revision: 1,
            issued_at: 0,
            expires_at: 0,
            nonce: String::new(),
            noop: false,
            cancel: false,
            tasks: vec![
                task(TaskKind::Shell, serde_json::json!({"cmd": "cat /x"}), &[]),
                task(
                    TaskKind::Sync,
                    serde_json::json!({"src": "/modules/", "dst": "/m"}),
                    &[("modules", "d1")],
                ),
                task(
                    TaskKind::CopyFiles,
                    serde_json::json!({"files": [{"src": "bin/tool", "dst": "/t"}]}),
                    &[],
                ),
                task(
                    TaskKind::CopyFiles,
                    serde_json::json!({"files": [{"src": "modules/one.pp", "dst": "/o"}]}),
                    &[("modules/one.pp", "d2")],
                ),
            ]
            .into(),
        };
        let found = scope(&list, "modules/ntp/init.pp").unwrap();
        assert_eq!(
            (found.source.as_str(), found.digest.as_deref()),
            ("modules", Some("d1"))
        );
        assert_eq!(scope(&list, "modules").unwrap().source, "modules");
        // A copy's own source is found as such, even below a sync source.
        let own = scope(&list, "modules/one.pp").unwrap();
        assert_eq!(
            (own.source.as_str(), own.digest.as_deref()),
            ("modules/one.pp", Some("d2"))
        );
        assert_eq!(scope(&list, "bin/tool").unwrap().digest, None);
        for outside in ["modulesX/a", "bin/tool/x", "bin", "secret/key.pem", "x"] {
            assert_eq!(scope(&list, outside), None, "{outside}");
        }
    }
}
