//! Pulling one file the controller serves into place: skipped when the destination already has the
//! content (by SHA-256), mode and owner; otherwise streamed into a temporary file beside the destination,
//! its hash checked against the one the controller announced (and the manifest's), then given its mode
//! and owner and renamed into place (see [`super::placement`]).

use super::nofollow::Dir;
use super::placement::{self, Owner, Staged};
use super::services::{FileSource, Manifest, RemoteFile};
use plinth_common::signing::manifest_digest;
use plinth_common::wire::TaskSpec;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// What pulling one file did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placed {
    /// The destination already was the file.
    Unchanged,
    /// The file was written; its size.
    Written(u64),
}

/// How to place a file.
#[derive(Debug, Clone, Copy)]
pub struct Placement {
    /// Permission bits to give instead of the served ones.
    pub mode: Option<u32>,
    /// Permission bits of directories made on the way.
    pub dir_mode: u32,
    /// Owner to give.
    pub owner: Owner,
}

/// Where a pulled file goes: its open directory (reached without following planted links, see
/// [`super::nofollow`]) and its name there.
#[derive(Debug)]
pub struct Destination {
    /// The directory.
    pub dir: Dir,
    /// The file's name in it.
    pub name: OsString,
}

impl Destination {
    /// The destination's path, for messages.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join(&self.name)
    }

    /// The destination of the absolute file path `dest`, making missing directories with `dir_mode`.
    pub fn of(dest: &Path, dir_mode: u32) -> Result<Destination, String> {
        match placement::destination(dest, Some(dir_mode)) {
            Ok(Some((dir, name))) => Ok(Destination { dir, name }),
            Ok(None) => Err(format!(
                "cannot write {}: no such directory",
                dest.display()
            )),
            Err(e) => Err(format!("cannot write {}: {e}", dest.display())),
        }
    }
}

/// Pulls `src` into `dest`. `expected` is the file's manifest entry.
pub async fn pull_into_place(
    source: &dyn FileSource,
    src: &str,
    expected: &RemoteFile,
    dest: Destination,
    how: Placement,
) -> Result<Placed, String> {
    let mode = how.mode.unwrap_or(expected.mode & 0o7777);
    let shown = dest.path();
    let staged = {
        let (sha, owner) = (expected.sha256.clone(), how.owner);
        tokio::task::spawn_blocking(move || {
            if placement::in_place(&dest.dir, &dest.name, &sha, mode, owner) {
                return Ok(None);
            }
            Staged::create_in(dest.dir, &dest.name).map(Some)
        })
        .await
        .map_err(|e| format!("cannot write {}: {e}", shown.display()))?
        .map_err(|e| format!("cannot write {}: {e}", shown.display()))?
    };
    let Some(staged) = staged else {
        return Ok(Placed::Unchanged);
    };
    let mut handle = staged
        .async_handle()
        .map_err(|e| format!("cannot write {}: {e}", shown.display()))?;
    let pulled = source
        .pull(src, expected.size, &mut handle)
        .await
        .map_err(|e| e.to_string())?;
    drop(handle);
    if pulled.sha256 != pulled.announced_sha256 {
        return Err(format!(
            "{src}: SHA-256 of the {} bytes received is {}, the controller announced {}",
            pulled.size, pulled.sha256, pulled.announced_sha256
        ));
    }
    if pulled.sha256 != expected.sha256 {
        return Err(format!(
            "{src}: the {} bytes received have SHA-256 {}, the signed manifest says {}: not installed",
            pulled.size, pulled.sha256, expected.sha256
        ));
    }
    // The mode is the signed manifest's (or the task's own), never one a server announces.
    tokio::task::spawn_blocking(move || staged.commit(mode, how.owner))
        .await
        .map_err(|e| format!("cannot write {}: {e}", shown.display()))?
        .map_err(|e| format!("cannot write {}: {e}", shown.display()))?;
    Ok(Placed::Written(pulled.size))
}

/// The manifest digest the signed list sealed for `src` (see [`TaskSpec::manifests`]), looked up
/// under the same normalised path the controller sealed it under.
pub fn sealed_digest(task: &TaskSpec, src: &str) -> Option<String> {
    let key = src
        .split('/')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("/");
    task.manifests.get(&key).cloned()
}

/// Checks a manifest the controller sent for `src` against the digest its signed list sealed: nothing
/// of a source is installed unless its manifest is exactly the one signed.
pub fn check_sealed(src: &str, manifest: &Manifest, sealed: Option<&str>) -> Result<(), String> {
    let Some(sealed) = sealed else {
        return Err(format!(
            "{src}: the signed task list carries no manifest digest for it (the controller could not read it when it published the list): nothing installed"
        ));
    };
    let got = manifest_digest(manifest);
    if got != sealed {
        return Err(format!(
            "{src}: the manifest the controller sent (digest {got}) is not the one the signed task list names ({sealed}): nothing installed"
        ));
    }
    Ok(())
}

/// True when `path` is made only of plain relative components (no root, `.`, `..`).
pub fn plain_relative(path: &str) -> bool {
    let p = Path::new(path);
    !path.is_empty()
        && !path.contains('\0')
        && p.components().all(|c| matches!(c, Component::Normal(_)))
}

#[cfg(test)]
pub(crate) mod fake {
    //! An in-memory file source for tests.

    use super::super::services::{FileSourceError, Manifest, Pulled, RemoteFile};
    use super::super::{BoxFuture, FileSource};
    use plinth_common::wire::TaskSpec;

    /// Runs a future that never waits (the fake's answers are ready at once).
    fn futures_lite_block<T>(f: BoxFuture<'_, T>) -> T {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut f = f;
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => v,
            std::task::Poll::Pending => unreachable!("the fake's manifests are ready at once"),
        }
    }
    use sha2::{Digest, Sha256};
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    /// Files by path, with modes; `corrupt` paths are served with a wrong announced hash.
    #[derive(Default)]
    pub struct FakeFiles {
        pub files: Mutex<BTreeMap<String, (Vec<u8>, u32)>>,
        pub corrupt: Mutex<Vec<String>>,
        pub pulls: Mutex<Vec<String>>,
    }

    impl FakeFiles {
        pub fn add(&self, path: &str, data: &[u8], mode: u32) {
            self.files
                .lock()
                .unwrap()
                .insert(path.to_string(), (data.to_vec(), mode));
        }

        /// Seals `task`'s sources as the controller does when it publishes a list: each source's
        /// manifest digest as these files are now.
        pub fn seal(&self, task: &mut TaskSpec) {
            let srcs: Vec<String> = match task.parameters.get("files") {
                Some(serde_json::Value::Array(files)) => files
                    .iter()
                    .filter_map(|f| f["src"].as_str().map(str::to_string))
                    .collect(),
                _ => task
                    .parameters
                    .get("src")
                    .and_then(|s| s.as_str())
                    .map(str::to_string)
                    .into_iter()
                    .collect(),
            };
            for src in srcs {
                let key = src.trim_matches('/').to_string();
                let manifest = futures_lite_block(self.manifest(&key));
                if let Ok(m) = manifest {
                    task.manifests
                        .insert(key, plinth_common::signing::manifest_digest(&m));
                }
            }
        }

        fn entry(path: &str, data: &[u8], mode: u32) -> RemoteFile {
            RemoteFile {
                path: path.to_string(),
                size: data.len() as u64,
                sha256: hex::encode(Sha256::digest(data)),
                mode,
            }
        }
    }

    impl FileSource for FakeFiles {
        fn manifest<'a>(
            &'a self,
            path: &'a str,
        ) -> BoxFuture<'a, Result<Manifest, FileSourceError>> {
            let files = self.files.lock().unwrap();
            let answer = if let Some((data, mode)) = files.get(path) {
                let name = path.rsplit('/').next().unwrap_or(path);
                Ok(Manifest {
                    kind: plinth_common::wire::ManifestKind::File,
                    path: String::new(),
                    files: vec![Self::entry(name, data, *mode)],
                })
            } else {
                let prefix = format!("{path}/");
                let found: Vec<RemoteFile> = files
                    .iter()
                    .filter_map(|(p, (d, m))| {
                        p.strip_prefix(&prefix).map(|rel| Self::entry(rel, d, *m))
                    })
                    .collect();
                if found.is_empty() {
                    Err(FileSourceError::NotFound(path.to_string()))
                } else {
                    Ok(Manifest {
                        kind: plinth_common::wire::ManifestKind::Directory,
                        path: String::new(),
                        files: found,
                    })
                }
            };
            Box::pin(async move { answer })
        }

        fn pull<'a>(
            &'a self,
            path: &'a str,
            _max_size: u64,
            into: &'a mut tokio::fs::File,
        ) -> BoxFuture<'a, Result<Pulled, FileSourceError>> {
            Box::pin(async move {
                use tokio::io::AsyncWriteExt;
                self.pulls.lock().unwrap().push(path.to_string());
                let Some((data, mode)) = self.files.lock().unwrap().get(path).cloned() else {
                    return Err(FileSourceError::NotFound(path.to_string()));
                };
                into.write_all(&data).await.unwrap();
                into.flush().await.unwrap();
                let sha = hex::encode(Sha256::digest(&data));
                let announced = if self.corrupt.lock().unwrap().iter().any(|c| c == path) {
                    "0".repeat(64)
                } else {
                    sha.clone()
                };
                let _ = mode;
                Ok(Pulled {
                    announced_sha256: announced,
                    sha256: sha,
                    size: data.len() as u64,
                })
            })
        }
    }
}
