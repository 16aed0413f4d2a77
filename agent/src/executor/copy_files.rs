//! `copy_files` tasks: files the controller serves (from its files root) copied to paths on the node,
//! pulled over the agent's authenticated channel, checked by SHA-256 and written atomically, keeping the
//! served mode unless the task sets one (see [`super::transfer`]). Files already in place are left
//! alone.
//!
//! Parameters: `files` (required: a list of `{src, dst}`, where `src` is a file's path relative to the
//! controller's files root and `dst` an absolute path on the node; each may set its own `permissions`,
//! `dir_permissions` and `owner`), `permissions` (octal; default: the served file's mode),
//! `dir_permissions` (default `0755`), `owner` (`user[:group]`), `timeout` (default 300 s), `retries`
//! (default 3), `interval` (default 2 s).

use super::params;
use super::placement::Owner;
use super::transfer::{
    check_sealed, plain_relative, pull_into_place, sealed_digest, Destination, Placed, Placement,
};
use super::upload_file::{self, DEFAULT_DIR_MODE};
use super::{AttemptContext, BoxFuture, Outcome, ParamError, Prepared, RetryPolicy, TaskExecutor};
use plinth_common::wire::{ResultStatus, TaskSpec};
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

/// The policy of a copy_files task that sets none: upload's retries, sync's timeout.
pub const DEFAULTS: RetryPolicy = RetryPolicy {
    attempts: 4,
    interval: Duration::from_secs(2),
    timeout: Duration::from_secs(300),
};

/// One file to copy.
#[derive(Debug, Clone)]
pub struct CopySpec {
    /// Path under the controller's files root.
    pub src: String,
    /// Absolute destination.
    pub dst: PathBuf,
    /// How to place it.
    pub placement: Placement,
    /// The digest of its manifest, from the signed list.
    pub sealed: Option<String>,
}

/// Reads a copy_files task's parameters.
pub fn prepare(task: &TaskSpec) -> Result<Prepared, ParamError> {
    let mode = params::optional_mode(task, "permissions")?;
    let dir_mode = params::optional_mode(task, "dir_permissions")?.unwrap_or(DEFAULT_DIR_MODE);
    let owner = upload_file::owner(task)?;
    let list = match task.parameters.get("files") {
        Some(Value::Array(list)) if !list.is_empty() => list,
        Some(Value::Array(_)) => return Err(params::error(task, "files", "is empty")),
        None | Some(Value::Null) => {
            return Err(params::error(
                task,
                "files",
                "is required for copy_files tasks",
            ))
        }
        Some(_) => {
            return Err(params::error(
                task,
                "files",
                "must be a list of {src, dst} maps",
            ))
        }
    };
    let mut files = Vec::new();
    for (i, item) in list.iter().enumerate() {
        let field = format!("files[{i}]");
        let Value::Object(map) = item else {
            return Err(params::error(task, &field, "must be a {src, dst} map"));
        };
        // Each entry is read with the same readers as a task's parameters.
        let entry = TaskSpec {
            id: task.id.clone(),
            kind: task.kind,
            parameters: map.clone(),
            skip_reason: None,
            waits_for: vec![],
            gated: false,
            manifests: Default::default(),
        };
        let named = |e: ParamError| params::error(task, &format!("{field}.{}", e.field), e.message);
        let src = params::required_string(&entry, "src").map_err(named)?;
        let src = src.trim_start_matches('/').to_string();
        if !plain_relative(&src) {
            return Err(params::error(
                task,
                &format!("{field}.src"),
                format!("{src:?} must be a path under the controller's files root, without `..`"),
            ));
        }
        let dst = upload_file::absolute_path(&entry, "dst").map_err(named)?;
        let own = upload_file::owner(&entry).map_err(named)?;
        files.push(CopySpec {
            sealed: sealed_digest(task, &src),
            src,
            dst,
            placement: Placement {
                mode: params::optional_mode(&entry, "permissions")
                    .map_err(named)?
                    .or(mode),
                dir_mode: params::optional_mode(&entry, "dir_permissions")
                    .map_err(named)?
                    .unwrap_or(dir_mode),
                owner: if own == Owner::default() { owner } else { own },
            },
        });
    }
    let policy = RetryPolicy::from_task(task, DEFAULTS)?;
    Ok(Prepared {
        policy,
        executor: Box::new(CopyFiles {
            files,
            timeout: policy.timeout,
        }),
    })
}

/// A prepared copy_files task.
#[derive(Debug, Clone)]
pub struct CopyFiles {
    files: Vec<CopySpec>,
    timeout: Duration,
}

impl TaskExecutor for CopyFiles {
    fn run<'a>(&'a self, ctx: &'a AttemptContext) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let mut done = Vec::new();
            tokio::select! {
                r = self.copy_all(ctx, &mut done) => r,
                _ = tokio::time::sleep(self.timeout) => Outcome::simple(
                    ResultStatus::TimedOut,
                    format!("copying took longer than {}s", self.timeout.as_secs_f64()),
                ),
                _ = ctx.shutdown.wait() => Outcome::simple(
                    ResultStatus::Interrupted,
                    "the agent stopped while files were copied (each holds its old or its new content)",
                ),
            }
        })
    }
}

impl CopyFiles {
    async fn copy_all(&self, ctx: &AttemptContext, done: &mut Vec<Value>) -> Outcome {
        let source = ctx.services.files.as_ref();
        let mut written = 0usize;
        for spec in &self.files {
            let manifest = match source.manifest(&spec.src).await {
                Ok(m) => m,
                Err(e) => return failed(format!("{}: {e}", spec.src), done),
            };
            if let Err(e) = check_sealed(&spec.src, &manifest, spec.sealed.as_deref()) {
                return failed(e, done);
            }
            let Some(remote) = manifest
                .files
                .first()
                .filter(|_| manifest.kind == plinth_common::wire::ManifestKind::File)
            else {
                return failed(
                    format!(
                        "{} is a directory on the controller: copy_files copies files (use a sync task)",
                        spec.src
                    ),
                    done,
                );
            };
            let (dst, dir_mode) = (spec.dst.clone(), spec.placement.dir_mode);
            let dest = match tokio::task::spawn_blocking(move || Destination::of(&dst, dir_mode))
                .await
            {
                Ok(Ok(dest)) => dest,
                Ok(Err(e)) => return failed(e, done),
                Err(e) => return failed(format!("cannot write {}: {e}", spec.dst.display()), done),
            };
            match pull_into_place(source, &spec.src, remote, dest, spec.placement).await {
                Ok(placed) => {
                    if matches!(placed, Placed::Written(_)) {
                        written += 1;
                    }
                    done.push(serde_json::json!({
                        "src": spec.src,
                        "dst": spec.dst.display().to_string(),
                        "sha256": remote.sha256,
                        "changed": matches!(placed, Placed::Written(_)),
                    }));
                }
                Err(e) => return failed(e, done),
            }
        }
        let mut o = Outcome::simple(
            ResultStatus::Succeeded,
            format!(
                "{} file(s) in place, {written} written, {} already there",
                self.files.len(),
                self.files.len() - written
            ),
        );
        o.details = serde_json::json!({ "files": done });
        o
    }
}

fn failed(message: String, done: &[Value]) -> Outcome {
    let mut o = Outcome::simple(ResultStatus::Failed, message);
    o.details = serde_json::json!({ "files": done });
    o
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

    async fn run(files: Arc<FakeFiles>, params: Value, state: &std::path::Path) -> Outcome {
        let mut t = task("cp", TaskKind::CopyFiles, params);
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
            task_id: "cp".into(),
            attempt: 1,
            shutdown: sd,
            noop: false,
            services: Arc::new(services),
        };
        prepared.executor.run(&ctx).await
    }

    #[tokio::test]
    async fn copies_keep_the_mode_and_skip_what_is_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let fake = Arc::new(FakeFiles::default());
        fake.add("bin/tool.sh", b"#!/bin/sh\necho hi\n", 0o750);
        fake.add("etc/app.conf", b"a=1\n", 0o644);
        let params = json!({"files": [
            {"src": "bin/tool.sh", "dst": dir.path().join("opt/tool.sh")},
            {"src": "/etc/app.conf", "dst": dir.path().join("etc/app.conf"), "permissions": "0600"},
        ]});
        let o = run(fake.clone(), params.clone(), dir.path()).await;
        assert_eq!(o.status, ResultStatus::Succeeded, "{o:?}");
        let tool = dir.path().join("opt/tool.sh");
        assert_eq!(std::fs::read(&tool).unwrap(), b"#!/bin/sh\necho hi\n");
        assert_eq!(std::fs::metadata(&tool).unwrap().mode() & 0o7777, 0o750);
        let conf = dir.path().join("etc/app.conf");
        assert_eq!(std::fs::metadata(&conf).unwrap().mode() & 0o7777, 0o600);
        assert!(o.message.contains("2 written"), "{}", o.message);

        let o = run(fake.clone(), params, dir.path()).await;
        assert_eq!(o.status, ResultStatus::Succeeded);
        assert!(
            o.message.contains("0 written, 2 already there"),
            "{}",
            o.message
        );
        assert_eq!(
            fake.pulls.lock().unwrap().len(),
            2,
            "unchanged files are not pulled again"
        );
    }

    #[tokio::test]
    async fn a_bad_checksum_or_a_missing_file_fails_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let fake = Arc::new(FakeFiles::default());
        fake.add("x", b"data", 0o644);
        fake.corrupt.lock().unwrap().push("x".into());
        let dst = dir.path().join("x");
        let o = run(
            fake.clone(),
            json!({"files": [{"src": "x", "dst": dst}]}),
            dir.path(),
        )
        .await;
        assert_eq!(o.status, ResultStatus::Failed);
        assert!(o.message.contains("SHA-256"), "{}", o.message);
        assert!(!dst.exists());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "no temporary file left"
        );

        let o = run(
            fake,
            json!({"files": [{"src": "nope", "dst": dst}]}),
            dir.path(),
        )
        .await;
        assert_eq!(o.status, ResultStatus::Failed);
        assert!(o.message.contains("no file nope"), "{}", o.message);
    }

    #[tokio::test]
    async fn only_the_signed_manifest_is_installed() {
        let dir = tempfile::tempdir().unwrap();
        let fake = Arc::new(FakeFiles::default());
        fake.add("tool", b"genuine", 0o755);
        let dst = dir.path().join("tool");
        let mut t = task(
            "cp",
            TaskKind::CopyFiles,
            json!({"files": [{"src": "tool", "dst": dst}]}),
        );
        fake.seal(&mut t);
        let prepared = prepare(&t).unwrap();
        let mut services = Services::local(dir.path().to_path_buf());
        // The server now answers with a set-uid file the list was not signed with.
        fake.add("tool", b"evil", 0o4755);
        services.files = fake.clone();
        let (_t, sd) = crate::shutdown::channel();
        let ctx = AttemptContext {
            work_dir: dir.path().to_path_buf(),
            kill_grace: Duration::from_millis(100),
            deployment_id: 1,
            revision: 1,
            task_id: "cp".into(),
            attempt: 1,
            shutdown: sd,
            noop: false,
            services: Arc::new(services),
        };
        let o = prepared.executor.run(&ctx).await;
        assert_eq!(o.status, ResultStatus::Failed);
        assert!(
            o.message.contains("not the one the signed task list names"),
            "{}",
            o.message
        );
        assert!(!dst.exists());
        assert!(fake.pulls.lock().unwrap().is_empty(), "no byte was pulled");

        // A list that sealed nothing for a source installs nothing of it.
        let unsealed = prepare(&task(
            "cp",
            TaskKind::CopyFiles,
            json!({"files": [{"src": "tool", "dst": dst}]}),
        ))
        .unwrap();
        let o = unsealed.executor.run(&ctx).await;
        assert_eq!(o.status, ResultStatus::Failed);
        assert!(o.message.contains("no manifest digest"), "{}", o.message);
        assert!(!dst.exists());
    }

    #[test]
    fn parameters_are_checked() {
        for (params, field) in [
            (json!({}), "files"),
            (json!({"files": []}), "files"),
            (json!({"files": "a"}), "files"),
            (json!({"files": ["a"]}), "files[0]"),
            (json!({"files": [{"dst": "/a"}]}), "files[0].src"),
            (
                json!({"files": [{"src": "../etc/shadow", "dst": "/a"}]}),
                "files[0].src",
            ),
            (
                json!({"files": [{"src": "a", "dst": "rel"}]}),
                "files[0].dst",
            ),
            (
                json!({"files": [{"src": "a", "dst": "/a", "permissions": "x"}]}),
                "files[0].permissions",
            ),
        ] {
            let e = prepare(&task("c", TaskKind::CopyFiles, params.clone())).unwrap_err();
            assert_eq!(e.field, field, "{params}");
        }
    }
}
