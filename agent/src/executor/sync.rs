//! `sync` tasks: a directory (or a file) the controller serves mirrored into a directory on the node,
//! like Fuel's `rsync -c -r --delete`: every served file is pulled when its content, mode or owner
//! differs (checked by SHA-256, written atomically, mode kept; see [`super::transfer`]), and, for a
//! directory, whatever the destination holds that the source does not is removed (unless `delete` is
//! false).
//!
//! Parameters: `src` (required: a path relative to the controller's files root), `dst` (required: an
//! absolute directory on the node; a served file lands in it under its own name), `delete` (default
//! true), `dir_permissions` (default `0755`), `owner` (`user[:group]`), `timeout` (default 300 s),
//! `retries` (default 10), `interval` (default 2 s).

use super::nofollow::{Dir, Kind};
use super::params;
use super::transfer::{
    check_sealed, plain_relative, pull_into_place, sealed_digest, Destination, Placed, Placement,
};
use super::upload_file::{self, DEFAULT_DIR_MODE};
use super::{AttemptContext, BoxFuture, Outcome, ParamError, Prepared, RetryPolicy, TaskExecutor};
use plinth_common::wire::{ResultStatus, TaskSpec};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The policy of a sync task that sets none (Fuel's: 300 s, 10 retries).
pub const DEFAULTS: RetryPolicy = RetryPolicy {
    attempts: 11,
    interval: Duration::from_secs(2),
    timeout: Duration::from_secs(300),
};

/// Reads a sync task's parameters.
pub fn prepare(task: &TaskSpec) -> Result<Prepared, ParamError> {
    let src = params::required_string(task, "src")?;
    let src = src.trim_matches('/').to_string();
    if !plain_relative(&src) {
        return Err(params::error(
            task,
            "src",
            format!("{src:?} must be a path under the controller's files root, without `..`"),
        ));
    }
    let dst = PathBuf::from(params::required_string(task, "dst")?);
    if !dst.is_absolute() {
        return Err(params::error(
            task,
            "dst",
            format!("{} is not an absolute directory", dst.display()),
        ));
    }
    let delete = params::optional_bool(task, "delete")?.unwrap_or(true);
    let dir_mode = params::optional_mode(task, "dir_permissions")?.unwrap_or(DEFAULT_DIR_MODE);
    let owner = upload_file::owner(task)?;
    let policy = RetryPolicy::from_task(task, DEFAULTS)?;
    Ok(Prepared {
        policy,
        executor: Box::new(Sync {
            sealed: sealed_digest(task, &src),
            src,
            dst,
            delete,
            placement: Placement {
                mode: None,
                dir_mode,
                owner,
            },
            timeout: policy.timeout,
        }),
    })
}

/// A prepared sync task.
#[derive(Debug, Clone)]
pub struct Sync {
    src: String,
    sealed: Option<String>,
    dst: PathBuf,
    delete: bool,
    placement: Placement,
    timeout: Duration,
}

impl TaskExecutor for Sync {
    fn run<'a>(&'a self, ctx: &'a AttemptContext) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            tokio::select! {
                r = self.sync(ctx) => r,
                _ = tokio::time::sleep(self.timeout) => Outcome::simple(
                    ResultStatus::TimedOut,
                    format!("sync of {} took longer than {}s", self.src, self.timeout.as_secs_f64()),
                ),
                _ = ctx.shutdown.wait() => Outcome::simple(
                    ResultStatus::Interrupted,
                    format!("the agent stopped during the sync of {} (each file holds its old or its new content)", self.src),
                ),
            }
        })
    }
}

impl Sync {
    async fn sync(&self, ctx: &AttemptContext) -> Outcome {
        let fail = |m: String| Outcome::simple(ResultStatus::Failed, m);
        let source = ctx.services.files.as_ref();
        let manifest = match source.manifest(&self.src).await {
            Ok(m) => m,
            Err(e) => return fail(format!("{}: {e}", self.src)),
        };
        if let Err(e) = check_sealed(&self.src, &manifest, self.sealed.as_deref()) {
            return fail(e);
        }
        let directory = manifest.kind == plinth_common::wire::ManifestKind::Directory;
        let mut wanted = BTreeSet::new();
        for f in &manifest.files {
            if !plain_relative(&f.path) {
                return fail(format!(
                    "the controller's manifest of {} lists {:?}, which is not a plain relative path",
                    self.src, f.path
                ));
            }
            wanted.insert(f.path.clone());
        }
        // The destination is opened once; everything below it is reached through it, never through a
        // link (a link where a directory belongs is replaced by the directory, as rsync does).
        let top = {
            let (dst, mode) = (self.dst.clone(), self.placement.dir_mode);
            match tokio::task::spawn_blocking(move || Dir::open(&dst, Some(mode))).await {
                Ok(Ok(Some(dir))) => dir,
                Ok(Ok(None)) => return fail(format!("cannot make {}", self.dst.display())),
                Ok(Err(e)) => return fail(format!("cannot write {}: {e}", self.dst.display())),
                Err(e) => return fail(format!("cannot write {}: {e}", self.dst.display())),
            }
        };
        let (mut written, mut bytes) = (0usize, 0u64);
        for f in &manifest.files {
            let src = if directory {
                format!("{}/{}", self.src, f.path)
            } else {
                self.src.clone()
            };
            let dest = {
                let (top, rel, mode) = (
                    top.try_clone(),
                    PathBuf::from(&f.path),
                    self.placement.dir_mode,
                );
                let shown = self.dst.join(&f.path);
                let found = tokio::task::spawn_blocking(move || -> std::io::Result<_> {
                    let parent = rel.parent().unwrap_or(Path::new(""));
                    let name = rel.file_name().unwrap_or_default().to_os_string();
                    let dir = top?.walk(parent, Some(mode), true)?;
                    Ok(dir.map(|dir| Destination { dir, name }))
                })
                .await;
                match found {
                    Ok(Ok(Some(dest))) => dest,
                    Ok(Ok(None)) => return fail(format!("cannot make {}", shown.display())),
                    Ok(Err(e)) => return fail(format!("cannot write {}: {e}", shown.display())),
                    Err(e) => return fail(format!("cannot write {}: {e}", shown.display())),
                }
            };
            match pull_into_place(source, &src, f, dest, self.placement).await {
                Ok(Placed::Written(n)) => {
                    written += 1;
                    bytes += n;
                }
                Ok(Placed::Unchanged) => {}
                Err(e) => return fail(e),
            }
        }
        let removed = if directory && self.delete {
            match tokio::task::spawn_blocking(move || remove_extra(&top, &wanted)).await {
                Ok(Ok(removed)) => removed,
                Ok(Err(e)) => return fail(e),
                Err(e) => return fail(format!("removing extra files failed: {e}")),
            }
        } else {
            Vec::new()
        };
        let mut o = Outcome::simple(
            ResultStatus::Succeeded,
            format!(
                "{} synced into {}: {} file(s), {written} written ({bytes} bytes), {} removed",
                self.src,
                self.dst.display(),
                manifest.files.len(),
                removed.len()
            ),
        );
        o.details = serde_json::json!({
            "files": manifest.files.len(),
            "written": written,
            "bytes": bytes,
            "removed": removed,
        });
        o
    }
}

/// Removes what `top` holds beyond `wanted` (relative file paths): extra files and links, and
/// directories no wanted file lives in. Nothing is followed: links are removed as links, and
/// directories are walked through their open descriptors. Returns what was removed.
fn remove_extra(top: &Dir, wanted: &BTreeSet<String>) -> Result<Vec<String>, String> {
    let mut removed = Vec::new();
    let mut pending = vec![(PathBuf::new(), top.try_clone().map_err(|e| e.to_string())?)];
    while let Some((rel, dir)) = pending.pop() {
        let entries = dir
            .entries()
            .map_err(|e| format!("cannot read {}: {e}", dir.path().display()))?;
        for (name, kind) in entries {
            let rel_path = rel.join(&name);
            let key = rel_path.to_string_lossy().into_owned();
            if kind == Kind::Directory {
                let prefix = format!("{key}/");
                if wanted.iter().any(|w| w.starts_with(&prefix)) {
                    match dir.child(&name, None, false) {
                        Ok(Some(sub)) => pending.push((rel_path, sub)),
                        Ok(None) => {}
                        Err(e) => return Err(format!("cannot read {e}")),
                    }
                } else {
                    dir.remove_tree(&name)
                        .map_err(|e| format!("cannot remove {e}"))?;
                    removed.push(format!("{key}/"));
                }
            } else if !wanted.contains(&key) {
                dir.unlink(&name)
                    .map_err(|e| format!("cannot remove {e}"))?;
                removed.push(key);
            }
        }
    }
    removed.sort();
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::transfer::fake::FakeFiles;
    use crate::executor::Services;
    use crate::testutil::task;
    use plinth_common::wire::TaskKind;
    use serde_json::json;
    use std::os::unix::fs::MetadataExt;
    use std::sync::Arc;

    async fn run(files: Arc<FakeFiles>, params: serde_json::Value, state: &Path) -> Outcome {
        let mut t = task("sync", TaskKind::Sync, params);
        files.seal(&mut t);
        let prepared = prepare(&t).unwrap();
        let mut services = Services::local(state.to_path_buf());
        services.files = files;
        let (_t, sd) = crate::shutdown::channel();
        let ctx = AttemptContext {
            work_dir: state.to_path_buf(),
            kill_grace: Duration::from_millis(100),
            deployment_id: 1,
            revision: 1,
            task_id: "sync".into(),
            attempt: 1,
            shutdown: sd,
            noop: false,
            services: Arc::new(services),
        };
        prepared.executor.run(&ctx).await
    }

    #[tokio::test]
    async fn mirrors_a_directory_and_removes_what_the_source_lacks() {
        let dir = tempfile::tempdir().unwrap();
        let fake = Arc::new(FakeFiles::default());
        fake.add("modules/ntp/manifests/init.pp", b"class ntp {}\n", 0o644);
        fake.add("modules/ntp/files/run.sh", b"#!/bin/sh\n", 0o755);
        fake.add("modules/other.txt", b"x", 0o600);
        let dst = dir.path().join("etc/puppet/modules");
        std::fs::create_dir_all(dst.join("old/deep")).unwrap();
        std::fs::write(dst.join("old/deep/stale.pp"), "stale").unwrap();
        std::fs::write(dst.join("leftover"), "x").unwrap();
        std::os::unix::fs::symlink("/etc", dst.join("link")).unwrap();
        let params = json!({"src": "modules", "dst": dst});

        let o = run(fake.clone(), params.clone(), dir.path()).await;
        assert_eq!(o.status, ResultStatus::Succeeded, "{o:?}");
        assert_eq!(
            std::fs::read_to_string(dst.join("ntp/manifests/init.pp")).unwrap(),
            "class ntp {}\n"
        );
        assert_eq!(
            std::fs::metadata(dst.join("ntp/files/run.sh"))
                .unwrap()
                .mode()
                & 0o7777,
            0o755
        );
        assert_eq!(
            std::fs::metadata(dst.join("other.txt")).unwrap().mode() & 0o7777,
            0o600
        );
        assert_eq!(o.details["removed"], json!(["leftover", "link", "old/"]));
        assert!(!dst.join("old").exists() && !dst.join("leftover").exists());
        assert!(
            std::path::Path::new("/etc").exists(),
            "a link is removed, not followed"
        );
        assert_eq!(o.details["written"], 3);

        // Nothing changed: nothing pulled, nothing removed.
        fake.pulls.lock().unwrap().clear();
        let o = run(fake.clone(), params.clone(), dir.path()).await;
        assert_eq!(o.details["written"], 0, "{o:?}");
        assert!(fake.pulls.lock().unwrap().is_empty());

        // A changed file on the controller is pulled again; a local edit is put back.
        fake.add("modules/other.txt", b"changed", 0o600);
        std::fs::write(dst.join("ntp/manifests/init.pp"), "edited").unwrap();
        let o = run(fake.clone(), params, dir.path()).await;
        assert_eq!(o.details["written"], 2, "{o:?}");
        assert_eq!(
            std::fs::read_to_string(dst.join("other.txt")).unwrap(),
            "changed"
        );
    }

    #[tokio::test]
    async fn a_single_file_lands_in_the_directory_and_delete_false_keeps_extras() {
        let dir = tempfile::tempdir().unwrap();
        let fake = Arc::new(FakeFiles::default());
        fake.add("keys/id.pub", b"ssh-ed25519 AAAA", 0o644);
        let dst = dir.path().join("keys");
        std::fs::create_dir_all(&dst).unwrap();
        std::fs::write(dst.join("mine"), "m").unwrap();
        let o = run(
            fake.clone(),
            json!({"src": "keys/id.pub", "dst": dst}),
            dir.path(),
        )
        .await;
        assert_eq!(o.status, ResultStatus::Succeeded, "{o:?}");
        assert!(dst.join("id.pub").exists() && dst.join("mine").exists());
        let o = run(
            fake,
            json!({"src": "keys", "dst": dst, "delete": false}),
            dir.path(),
        )
        .await;
        assert_eq!(o.status, ResultStatus::Succeeded);
        assert!(dst.join("mine").exists());
    }

    #[tokio::test]
    async fn links_in_the_destination_are_replaced_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "mine").unwrap();
        let fake = Arc::new(FakeFiles::default());
        fake.add("tree/a/x.conf", b"x", 0o644);
        fake.add("tree/b", b"b", 0o644);
        let dst = dir.path().join("dst");
        std::fs::create_dir_all(&dst).unwrap();
        std::os::unix::fs::symlink(outside.path(), dst.join("a")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("keep"), dst.join("b")).unwrap();
        let o = run(fake, json!({"src": "tree", "dst": dst}), dir.path()).await;
        assert_eq!(o.status, ResultStatus::Succeeded, "{o:?}");
        assert!(std::fs::symlink_metadata(dst.join("a")).unwrap().is_dir());
        assert!(std::fs::symlink_metadata(dst.join("b")).unwrap().is_file());
        assert_eq!(std::fs::read_to_string(dst.join("a/x.conf")).unwrap(), "x");
        // Nothing outside the destination was written or removed.
        let names: Vec<_> = std::fs::read_dir(outside.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["keep"]);
        assert_eq!(
            std::fs::read_to_string(outside.path().join("keep")).unwrap(),
            "mine"
        );
    }

    #[tokio::test]
    async fn a_missing_source_fails() {
        let dir = tempfile::tempdir().unwrap();
        let o = run(
            Arc::new(FakeFiles::default()),
            json!({"src": "nothing", "dst": dir.path()}),
            dir.path(),
        )
        .await;
        assert_eq!(o.status, ResultStatus::Failed);
        assert!(o.message.contains("no file nothing"), "{}", o.message);
    }

    #[test]
    fn parameters_and_defaults() {
        let p = prepare(&task("s", TaskKind::Sync, json!({"src": "a", "dst": "/b"}))).unwrap();
        assert_eq!(p.policy.attempts, 11);
        assert_eq!(p.policy.timeout, Duration::from_secs(300));
        for (params, field) in [
            (json!({"dst": "/b"}), "src"),
            (json!({"src": "../x", "dst": "/b"}), "src"),
            (json!({"src": "a"}), "dst"),
            (json!({"src": "a", "dst": "b"}), "dst"),
            (json!({"src": "a", "dst": "/b", "delete": 1}), "delete"),
        ] {
            let e = prepare(&task("s", TaskKind::Sync, params.clone())).unwrap_err();
            assert_eq!(e.field, field, "{params}");
        }
    }
}
