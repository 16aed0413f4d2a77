//! The files root (`<data_dir>/files`) as agents see it: paths resolved inside the root, manifests of
//! files and directories, a hash cache so a file is hashed once per version, and sealing: the digest
//! of every file task's source manifest written into the task when its list is published, so the
//! signature over the list covers every byte and mode the task installs.
//!
//! A file's version is its device, inode, size, modification and change times: any write, `chmod`,
//! rename over it or replacement changes one of them, and the file is hashed again when next asked.

use plinth_common::signing::manifest_digest;
use plinth_common::wire::{
    FileManifest, ManifestFile, ManifestKind, TaskKind, TaskList, TaskSpec, Tasks,
    MAX_MANIFEST_FILES,
};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// How many file hashes the cache keeps before it starts afresh.
pub const MAX_CACHED_HASHES: usize = 200_000;
/// How many sealed manifests are kept to answer agents without walking the tree again.
pub const MAX_SEALED_MANIFESTS: usize = 256;

/// Why a path cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    /// The path is empty, absolute, or has `.` or `..` components.
    #[error("{0}")]
    BadPath(String),
    /// No such file inside the root (or it leaves the root through a link).
    #[error("{0}")]
    NotFound(String),
    /// A directory holds more than [`MAX_MANIFEST_FILES`] files.
    #[error("{0} holds more than {MAX_MANIFEST_FILES} files")]
    TooMany(String),
    /// Reading failed.
    #[error("{0}")]
    Io(String),
}

/// A file's version: what changes whenever its content or mode may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Version {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    mode: u32,
}

impl Version {
    fn of(meta: &std::fs::Metadata) -> Version {
        Version {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            mode: meta.mode() & 0o7777,
        }
    }
}

/// A requested path found inside the root.
#[derive(Debug, Clone)]
pub struct Target {
    /// The canonical root.
    pub root: PathBuf,
    /// The canonical path.
    pub path: PathBuf,
}

/// Sealed manifests' JSON bytes by digest, with when each was last used.
type Sealed = BTreeMap<String, (u64, Arc<Vec<u8>>)>;

/// The files root and its caches.
#[derive(Debug)]
pub struct FileCatalog {
    root: PathBuf,
    hashes: Mutex<HashMap<PathBuf, (Version, String)>>,
    sealed: Mutex<Sealed>,
    uses: AtomicU64,
    hashed: AtomicU64,
}

impl FileCatalog {
    /// A catalog of the files under `root` (which need not exist yet).
    pub fn new(root: PathBuf) -> FileCatalog {
        FileCatalog {
            root,
            hashes: Mutex::default(),
            sealed: Mutex::default(),
            uses: AtomicU64::new(0),
            hashed: AtomicU64::new(0),
        }
    }

    /// How many times a file's content was read to hash it (a cache miss).
    pub fn files_hashed(&self) -> u64 {
        self.hashed.load(Ordering::Relaxed)
    }

    /// Finds `relative` (already checked by [`check_relative`]) under the root, following links
    /// only while they stay inside it.
    pub fn resolve(&self, relative: &Path) -> Result<Target, FileError> {
        let root = std::fs::canonicalize(&self.root).map_err(|_| {
            FileError::NotFound(format!(
                "no files are served: the files root {} does not exist",
                self.root.display()
            ))
        })?;
        let missing = || FileError::NotFound(format!("no file {}", relative.display()));
        let path = std::fs::canonicalize(root.join(relative)).map_err(|_| missing())?;
        if !path.starts_with(&root) {
            tracing::warn!(path = %relative.display(), "refused a file request that leaves the files root");
            return Err(missing());
        }
        Ok(Target { root, path })
    }

    /// The manifest of the file or directory `requested` (a path relative to the root).
    pub fn manifest(&self, requested: &str) -> Result<FileManifest, FileError> {
        let relative = check_relative(requested)?;
        let target = self.resolve(&relative)?;
        self.manifest_of(&target, requested.trim_matches('/').to_string())
    }

    /// The manifest of a resolved target.
    pub fn manifest_of(
        &self,
        target: &Target,
        requested: String,
    ) -> Result<FileManifest, FileError> {
        if !target.path.is_dir() {
            return Ok(FileManifest {
                kind: ManifestKind::File,
                path: requested,
                files: vec![self.describe(&target.path, name_of(&target.path))?],
            });
        }
        let mut files = Vec::new();
        let mut pending = vec![target.path.clone()];
        let io = |p: &Path, e: std::io::Error| {
            FileError::Io(format!("cannot read {}: {e}", p.display()))
        };
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(&dir).map_err(|e| io(&dir, e))? {
                let entry = entry.map_err(|e| io(&dir, e))?;
                let path = entry.path();
                let kind = entry.file_type().map_err(|e| io(&path, e))?;
                if kind.is_dir() {
                    pending.push(path);
                    continue;
                }
                let real = if kind.is_symlink() {
                    match std::fs::canonicalize(&path) {
                        Ok(real) if real.starts_with(&target.root) && real.is_file() => real,
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
                    .strip_prefix(&target.path)
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_default();
                files.push(self.describe(&real, name)?);
                if files.len() > MAX_MANIFEST_FILES {
                    return Err(FileError::TooMany(requested));
                }
            }
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(FileManifest {
            kind: ManifestKind::Directory,
            path: requested,
            files,
        })
    }

    /// Size, hash and mode of a regular file, hashed only when this version was not seen before.
    pub fn describe(&self, path: &Path, name: String) -> Result<ManifestFile, FileError> {
        let fail =
            |e: std::io::Error| FileError::Io(format!("cannot read {}: {e}", path.display()));
        let meta = std::fs::metadata(path).map_err(fail)?;
        let version = Version::of(&meta);
        let cached = self
            .hashes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(path)
            .filter(|(v, _)| *v == version)
            .map(|(_, sha)| sha.clone());
        let sha256 = match cached {
            Some(sha) => sha,
            None => {
                let mut file = std::fs::File::open(path).map_err(fail)?;
                let mut hasher = Sha256::new();
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = file.read(&mut buf).map_err(fail)?;
                    if n == 0 {
                        break;
                    }
                    hasher.update(&buf[..n]);
                }
                let sha = hex::encode(hasher.finalize());
                self.hashed.fetch_add(1, Ordering::Relaxed);
                // Only a version that did not change while it was read is remembered.
                let after = file.metadata().map(|m| Version::of(&m)).ok();
                if after == Some(version) {
                    let mut hashes = self.hashes.lock().unwrap_or_else(|p| p.into_inner());
                    if hashes.len() >= MAX_CACHED_HASHES {
                        hashes.clear();
                    }
                    hashes.insert(path.to_path_buf(), (version, sha.clone()));
                }
                sha
            }
        };
        Ok(ManifestFile {
            path: name,
            size: version.size,
            sha256,
            mode: version.mode,
        })
    }

    /// Writes into every `copy_files` and `sync` task the digest of each source's manifest as the
    /// files root holds it now. A source that cannot be described gets no digest: the agent then fails
    /// the task saying so, as it would have failed to pull it.
    pub fn seal(&self, tasks: &mut [TaskSpec]) {
        for task in tasks.iter_mut() {
            for src in sources(task) {
                match self.manifest(&src) {
                    Ok(m) => {
                        let digest = self.remember(&m);
                        task.manifests.insert(src, digest);
                    }
                    Err(e) => {
                        tracing::warn!(task = %task.id, source = %src, error = %e, "a file task's source cannot be sealed; the task will fail on the node")
                    }
                }
            }
        }
    }

    /// Seals the lists about to be published: each shared copy of tasks once, and only a copy with a
    /// file task is copied at all (lists sharing a copy keep sharing the sealed one).
    pub fn seal_lists(&self, lists: &mut [TaskList]) {
        // By the original copy's identity: (the original, kept alive so that its identity is not
        // reused by a copy made meanwhile; the sealed one).
        let mut sealed: HashMap<usize, (Tasks, Tasks)> = HashMap::new();
        for list in lists.iter_mut() {
            let copy = list.tasks.copy_id();
            if let Some((_, done)) = sealed.get(&copy) {
                list.tasks = done.clone();
                continue;
            }
            let original = list.tasks.clone();
            if list.tasks.iter().any(|t| !sources(t).is_empty()) {
                // A copy of its own (copy on write), sealed once for every list that shares it.
                self.seal(&mut list.tasks);
            }
            sealed.insert(copy, (original, list.tasks.clone()));
        }
    }

    /// Keeps a manifest's bytes under its digest, to answer agents from; returns the digest.
    pub fn remember(&self, manifest: &FileManifest) -> String {
        let digest = manifest_digest(manifest);
        // Serialising plain data cannot fail.
        let bytes = Arc::new(serde_json::to_vec(manifest).unwrap_or_default());
        let tick = self.uses.fetch_add(1, Ordering::Relaxed);
        let mut sealed = self.sealed.lock().unwrap_or_else(|p| p.into_inner());
        sealed.insert(digest.clone(), (tick, bytes));
        while sealed.len() > MAX_SEALED_MANIFESTS {
            let oldest = sealed
                .iter()
                .min_by_key(|(_, (t, _))| *t)
                .map(|(d, _)| d.clone());
            match oldest {
                Some(d) => sealed.remove(&d),
                None => break,
            };
        }
        digest
    }

    /// The manifest of `requested` whose digest is `digest`, as JSON bytes: from the sealed ones when
    /// kept, else described afresh. `Ok(None)` when the files changed since it was sealed.
    pub fn sealed_manifest(
        &self,
        requested: &str,
        digest: &str,
    ) -> Result<Option<Arc<Vec<u8>>>, FileError> {
        {
            let tick = self.uses.fetch_add(1, Ordering::Relaxed);
            let mut sealed = self.sealed.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((t, bytes)) = sealed.get_mut(digest) {
                *t = tick;
                return Ok(Some(bytes.clone()));
            }
        }
        let manifest = self.manifest(requested)?;
        if manifest_digest(&manifest) != digest {
            return Ok(None);
        }
        self.remember(&manifest);
        Ok(self
            .sealed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(digest)
            .map(|(_, b)| b.clone()))
    }
}

/// The sources a file task pulls, as paths relative to the files root (`copy_files`' `files[].src`,
/// `sync`'s `src`, a `provision` task's served `image`), normalised as agents and [`check_relative`] read them.
pub fn sources(task: &TaskSpec) -> Vec<String> {
    let norm = |s: &str| {
        s.split('/')
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join("/")
    };
    match task.kind {
        TaskKind::Sync => task
            .parameters
            .get("src")
            .and_then(|v| v.as_str())
            .map(|s| vec![norm(s)])
            .unwrap_or_default(),
        TaskKind::CopyFiles => task
            .parameters
            .get("files")
            .and_then(|v| v.as_array())
            .into_iter()
            .flatten()
            .filter_map(|f| f.get("src").and_then(|s| s.as_str()))
            .map(norm)
            .collect(),
        // A served image (an `https://` URL carries its own checksum instead).
        TaskKind::Provision => task
            .parameters
            .get("image")
            .and_then(|v| v.as_str())
            .filter(|s| !s.contains("://"))
            .map(|s| vec![norm(s)])
            .unwrap_or_default(),
        _ => Vec::new(),
    }
    .into_iter()
    .filter(|s| !s.is_empty())
    .collect()
}

/// The path as plain components: no root, no `.` or `..`, not empty.
pub fn check_relative(path: &str) -> Result<PathBuf, FileError> {
    if path.contains('\0') {
        return Err(FileError::BadPath("the path holds a NUL byte".into()));
    }
    if Path::new(path).is_absolute() {
        return Err(FileError::BadPath(format!(
            "{path}: absolute paths are refused; paths are relative to the files root"
        )));
    }
    let mut out = PathBuf::new();
    for part in path.split('/') {
        match part {
            "" => {}
            "." | ".." => {
                return Err(FileError::BadPath(format!(
                    "{path}: `.` and `..` components are refused"
                )))
            }
            _ => out.push(part),
        }
    }
    if out.as_os_str().is_empty() || out.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(FileError::BadPath(format!("{path:?} names no file")));
    }
    Ok(out)
}

fn name_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

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
            assert!(
                matches!(check_relative(bad), Err(FileError::BadPath(_))),
                "{bad:?}"
            );
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
        let c = FileCatalog::new(root.clone());

        for missing in ["mods/leak", "up/secret", "nothing"] {
            assert!(
                matches!(c.manifest(missing), Err(FileError::NotFound(_))),
                "{missing}"
            );
        }
        let m = c.manifest("mods").unwrap();
        assert_eq!(m.kind, ManifestKind::Directory);
        let names: Vec<&str> = m.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(names, ["a.pp", "alias.pp", "sub/b.pp"]);
        assert_eq!(m.files[2].mode, 0o750);
        assert_eq!(m.files[2].size, 2);
        assert_eq!(
            m.files[0].sha256,
            "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
        );
        let m = c.manifest("mods/sub/b.pp").unwrap();
        assert_eq!(m.kind, ManifestKind::File);
        assert_eq!(m.files[0].path, "b.pp");
        let absent = FileCatalog::new(dir.path().join("absent"));
        assert!(matches!(absent.manifest("x"), Err(FileError::NotFound(_))));
    }

    #[test]
    fn a_file_is_hashed_once_per_version() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("m")).unwrap();
        std::fs::write(dir.path().join("m/a"), "a").unwrap();
        std::fs::write(dir.path().join("m/b"), "b").unwrap();
        let c = FileCatalog::new(dir.path().to_path_buf());
        let first = c.manifest("m").unwrap();
        assert_eq!(c.files_hashed(), 2);
        for _ in 0..5 {
            assert_eq!(c.manifest("m").unwrap(), first);
        }
        assert_eq!(c.files_hashed(), 2, "unchanged files are not read again");
        // A new version (content, or only its mode) is hashed again.
        std::fs::write(dir.path().join("m/a"), "changed").unwrap();
        let second = c.manifest("m").unwrap();
        assert_eq!(c.files_hashed(), 3);
        assert_ne!(second.files[0].sha256, first.files[0].sha256);
        std::fs::set_permissions(
            dir.path().join("m/b"),
            std::fs::Permissions::from_mode(0o4755),
        )
        .unwrap();
        assert_eq!(c.manifest("m").unwrap().files[1].mode, 0o4755);
    }

    /// A task of a kind with its parameters, not sealed yet.
    fn spec(kind: TaskKind, params: serde_json::Value) -> TaskSpec {
        TaskSpec {
            id: "t".into(),
            kind,
            parameters: params.as_object().cloned().unwrap(),
            skip_reason: None,
            waits_for: vec![],
            gated: false,
            manifests: BTreeMap::new(),
        }
    }

    #[test]
    fn sealing_writes_each_sources_digest_and_keeps_the_manifest() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("mods")).unwrap();
        std::fs::write(dir.path().join("mods/a.pp"), "a").unwrap();
        std::fs::write(dir.path().join("tool"), "t").unwrap();
        let c = FileCatalog::new(dir.path().to_path_buf());
        let mut tasks = vec![
            spec(
                TaskKind::Sync,
                serde_json::json!({"src": "/mods/", "dst": "/x"}),
            ),
            spec(
                TaskKind::CopyFiles,
                serde_json::json!({"files": [{"src": "tool", "dst": "/t"}, {"src": "gone", "dst": "/g"}]}),
            ),
            spec(TaskKind::Shell, serde_json::json!({"cmd": "true"})),
        ];
        c.seal(&mut tasks);
        let digest = tasks[0].manifests["mods"].clone();
        assert_eq!(digest, manifest_digest(&c.manifest("mods").unwrap()));
        assert_eq!(tasks[1].manifests.keys().collect::<Vec<_>>(), ["tool"]);
        assert!(tasks[2].manifests.is_empty());
        let bytes = c.sealed_manifest("mods", &digest).unwrap().unwrap();
        let m: FileManifest = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(manifest_digest(&m), digest);
        // A changed tree no longer matches what was sealed.
        std::fs::write(dir.path().join("mods/a.pp"), "evil").unwrap();
        let fresh = FileCatalog::new(dir.path().to_path_buf());
        assert_eq!(fresh.sealed_manifest("mods", &digest).unwrap(), None);
    }

    #[test]
    fn lists_sharing_their_tasks_are_sealed_once_and_keep_sharing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("mods")).unwrap();
        std::fs::write(dir.path().join("mods/a.pp"), "a").unwrap();
        let c = FileCatalog::new(dir.path().to_path_buf());
        let with_files = Tasks::from(vec![spec(
            TaskKind::Sync,
            serde_json::json!({"src": "/mods/", "dst": "/x"}),
        )]);
        let without = Tasks::from(vec![spec(
            TaskKind::Shell,
            serde_json::json!({"cmd": "true"}),
        )]);
        let list = |node_id: u64, tasks: &Tasks| {
            TaskList::unpublished(format!("k{node_id}"), node_id, 1, "deploy", tasks.clone())
        };
        let mut lists = vec![
            list(1, &with_files),
            list(2, &without),
            list(3, &with_files),
        ];
        c.seal_lists(&mut lists);
        let digest = manifest_digest(&c.manifest("mods").unwrap());
        for i in [0, 2] {
            assert_eq!(
                lists[i].tasks[0].manifests["mods"], digest,
                "list {i} sealed"
            );
        }
        assert!(
            lists[0].tasks.shares(&lists[2].tasks),
            "one sealed copy for both"
        );
        assert!(
            with_files[0].manifests.is_empty(),
            "the run's own copy is left as it was"
        );
        assert!(
            lists[1].tasks.shares(&without),
            "a list with no file task is not copied"
        );
    }
}
