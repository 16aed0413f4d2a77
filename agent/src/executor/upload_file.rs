//! `upload_file` tasks: a file whose content travels in the task, written atomically with its mode and
//! owner (see [`super::placement`]). A file that already has the content, mode and owner is left alone.
//!
//! Parameters: `path` (absolute, required), `data` (string, required; Fuel's `content` is accepted
//! too), `encoding` (`text`, the default, or `base64` for binary content), `permissions` (octal, default
//! `0644`), `dir_permissions` (for missing parent directories, default `0755`), `owner` (`user`,
//! `user:group` or `:group`; Fuel's `user_owner` and `group_owner` are accepted too), `overwrite` (default
//! true; false leaves an existing file as it is), `timeout` (default 60 s), `retries` (default 3),
//! `interval` (default 2 s).

use super::params;
use super::placement::{self, Owner};
use super::{AttemptContext, BoxFuture, Outcome, ParamError, Prepared, RetryPolicy, TaskExecutor};
use base64::Engine;
use plinth_common::wire::{ResultStatus, TaskSpec};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::time::Duration;

/// The policy of an upload_file task that sets none (Fuel's: 60 s, 3 retries).
pub const DEFAULTS: RetryPolicy = RetryPolicy {
    attempts: 4,
    interval: Duration::from_secs(2),
    timeout: Duration::from_secs(60),
};

/// Default file permissions.
pub const DEFAULT_MODE: u32 = 0o644;
/// Default permissions of directories made for a file.
pub const DEFAULT_DIR_MODE: u32 = 0o755;

/// Reads an upload_file task's parameters.
pub fn prepare(task: &TaskSpec) -> Result<Prepared, ParamError> {
    let path = absolute_path(task, "path")?;
    let data_field = if task.parameters.contains_key("data") {
        "data"
    } else {
        "content"
    };
    let text = match task.parameters.get(data_field) {
        Some(serde_json::Value::String(s)) => s.clone(),
        None | Some(serde_json::Value::Null) => {
            return Err(params::error(
                task,
                "data",
                "is required for upload_file tasks",
            ))
        }
        Some(_) => return Err(params::error(task, data_field, "must be a string")),
    };
    let data = match params::optional_string(task, "encoding")?.as_deref() {
        None | Some("text") => text.into_bytes(),
        Some("base64") => base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| params::error(task, data_field, format!("is not base64: {e}")))?,
        Some(other) => {
            return Err(params::error(
                task,
                "encoding",
                format!("{other:?} is not `text` or `base64`"),
            ))
        }
    };
    let mode = params::optional_mode(task, "permissions")?.unwrap_or(DEFAULT_MODE);
    let dir_mode = params::optional_mode(task, "dir_permissions")?.unwrap_or(DEFAULT_DIR_MODE);
    let owner = owner(task)?;
    let overwrite = params::optional_bool(task, "overwrite")?.unwrap_or(true);
    let policy = RetryPolicy::from_task(task, DEFAULTS)?;
    Ok(Prepared {
        policy,
        executor: Box::new(UploadFile {
            file: DesiredFile {
                path,
                data,
                mode,
                dir_mode,
                owner,
            },
            overwrite,
            timeout: policy.timeout,
        }),
    })
}

/// An absolute path parameter.
pub fn absolute_path(task: &TaskSpec, field: &str) -> Result<PathBuf, ParamError> {
    let path = PathBuf::from(params::required_string(task, field)?);
    if !path.is_absolute() || path.file_name().is_none() {
        return Err(params::error(
            task,
            field,
            format!("{} is not an absolute file path", path.display()),
        ));
    }
    Ok(path)
}

/// The owner from `owner`, or Fuel's `user_owner` and `group_owner`. Names are looked up when the task
/// is prepared, so an unknown user fails the task before anything is written.
pub fn owner(task: &TaskSpec) -> Result<Owner, ParamError> {
    if let Some(text) = params::optional_string(task, "owner")? {
        return Owner::parse(&text).map_err(|e| params::error(task, "owner", e));
    }
    let user = params::optional_string(task, "user_owner")?;
    let group = params::optional_string(task, "group_owner")?;
    let text = match (user, group) {
        (None, None) => return Ok(Owner::default()),
        (u, g) => format!("{}:{}", u.unwrap_or_default(), g.unwrap_or_default()),
    };
    Owner::parse(&text).map_err(|e| params::error(task, "user_owner", e))
}

/// A file as a task wants it.
#[derive(Debug, Clone)]
pub struct DesiredFile {
    /// Where.
    pub path: PathBuf,
    /// The content.
    pub data: Vec<u8>,
    /// Permission bits.
    pub mode: u32,
    /// Permission bits of directories made for it.
    pub dir_mode: u32,
    /// Owner to give it.
    pub owner: Owner,
}

/// A prepared upload_file task.
#[derive(Debug, Clone)]
pub struct UploadFile {
    file: DesiredFile,
    overwrite: bool,
    timeout: Duration,
}

impl TaskExecutor for UploadFile {
    fn run<'a>(&'a self, ctx: &'a AttemptContext) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let file = self.file.clone();
            let overwrite = self.overwrite;
            let work = tokio::task::spawn_blocking(move || place(&file, overwrite));
            let path = self.file.path.display().to_string();
            tokio::select! {
                r = work => match r {
                    Ok(outcome) => outcome,
                    Err(e) => Outcome::simple(ResultStatus::Failed, format!("writing {path} failed: {e}")),
                },
                _ = tokio::time::sleep(self.timeout) => Outcome::simple(
                    ResultStatus::TimedOut,
                    format!("writing {path} took longer than {}s", self.timeout.as_secs_f64()),
                ),
                _ = ctx.shutdown.wait() => Outcome::simple(
                    ResultStatus::Interrupted,
                    format!("the agent stopped while {path} was written (it holds the old or the new content)"),
                ),
            }
        })
    }
}

fn place(file: &DesiredFile, overwrite: bool) -> Outcome {
    let path = file.path.display();
    let sha256 = hex::encode(Sha256::digest(&file.data));
    let mut details = serde_json::json!({
        "path": path.to_string(),
        "size": file.data.len(),
        "sha256": sha256,
        "mode": format!("{:04o}", file.mode),
        "changed": false,
    });
    let fail = |e: std::io::Error| {
        Outcome::simple(ResultStatus::Failed, format!("cannot write {path}: {e}"))
    };
    let (dir, name) = match placement::destination(&file.path, Some(file.dir_mode)) {
        Ok(Some(found)) => found,
        Ok(None) => return fail(std::io::ErrorKind::NotFound.into()),
        Err(e) => return fail(e),
    };
    if !overwrite && !matches!(dir.kind(&name), Ok(None)) {
        let mut o = Outcome::simple(
            ResultStatus::Succeeded,
            format!("{path} exists and overwrite is false: left as it is"),
        );
        o.details = details;
        return o;
    }
    if placement::in_place(&dir, &name, &sha256, file.mode, file.owner) {
        let mut o = Outcome::simple(
            ResultStatus::Succeeded,
            format!("{path} already has this content, mode and owner"),
        );
        o.details = details;
        return o;
    }
    let written = placement::Staged::create_in(dir, &name).and_then(|mut staged| {
        std::io::Write::write_all(staged.file(), &file.data)?;
        staged.commit(file.mode, file.owner)
    });
    match written {
        Ok(()) => {
            details["changed"] = true.into();
            let mut o = Outcome::simple(
                ResultStatus::Succeeded,
                format!(
                    "wrote {path} ({} bytes, mode {:04o})",
                    file.data.len(),
                    file.mode
                ),
            );
            o.details = details;
            o
        }
        Err(e) => fail(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::Services;
    use crate::testutil::task;
    use plinth_common::wire::TaskKind;
    use serde_json::json;
    use std::os::unix::fs::MetadataExt;
    use std::sync::Arc;

    async fn run(params: serde_json::Value) -> Outcome {
        let dir = tempfile::tempdir().unwrap();
        let prepared = prepare(&task("up", TaskKind::UploadFile, params)).unwrap();
        let (_t, sd) = crate::shutdown::channel();
        let ctx = AttemptContext {
            work_dir: dir.path().to_path_buf(),
            kill_grace: Duration::from_millis(100),
            deployment_id: 1,
            revision: 1,
            task_id: "up".into(),
            attempt: 1,
            shutdown: sd,
            noop: false,
            services: Arc::new(Services::local(dir.path().join("state"))),
        };
        prepared.executor.run(&ctx).await
    }

    #[tokio::test]
    async fn writes_content_with_mode_then_leaves_it_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("etc/app/app.conf");
        let me = format!(
            "{}:{}",
            nix::unistd::Uid::current(),
            nix::unistd::Gid::current()
        );
        let params = json!({"path": path, "data": "key = value\n", "permissions": "0600",
                            "dir_permissions": "0750", "owner": me});
        let o = run(params.clone()).await;
        assert_eq!(o.status, ResultStatus::Succeeded, "{o:?}");
        assert_eq!(o.details["changed"], true);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "key = value\n");
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o7777, 0o600);
        let again = run(params).await;
        assert_eq!(again.status, ResultStatus::Succeeded);
        assert_eq!(again.details["changed"], false, "{again:?}");
        assert!(again.message.contains("already has"), "{}", again.message);
    }

    #[tokio::test]
    async fn base64_content_and_overwrite_false() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("blob");
        let o = run(json!({"path": path, "data": "AAEC/w==", "encoding": "base64"})).await;
        assert_eq!(o.status, ResultStatus::Succeeded, "{o:?}");
        assert_eq!(std::fs::read(&path).unwrap(), vec![0, 1, 2, 255]);
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o644);
        let o = run(json!({"path": path, "data": "other", "overwrite": false})).await;
        assert_eq!(o.status, ResultStatus::Succeeded);
        assert_eq!(std::fs::read(&path).unwrap(), vec![0, 1, 2, 255]);
    }

    #[tokio::test]
    async fn an_unwritable_place_fails_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), "").unwrap();
        let path = dir.path().join("file/below");
        let o = run(json!({"path": path, "data": "x"})).await;
        assert_eq!(o.status, ResultStatus::Failed);
        assert!(o.message.contains("file/below"), "{}", o.message);
    }

    #[test]
    fn parameters_are_checked() {
        let p = prepare(&task(
            "u",
            TaskKind::UploadFile,
            json!({"path": "/a", "data": ""}),
        ))
        .unwrap();
        assert_eq!(p.policy, DEFAULTS);
        for (params, field) in [
            (json!({"data": "x"}), "path"),
            (json!({"path": "relative", "data": "x"}), "path"),
            (json!({"path": "/a"}), "data"),
            (json!({"path": "/a", "data": 5}), "data"),
            (
                json!({"path": "/a", "data": "%%", "encoding": "base64"}),
                "data",
            ),
            (
                json!({"path": "/a", "data": "x", "encoding": "rot13"}),
                "encoding",
            ),
            (
                json!({"path": "/a", "data": "x", "permissions": "rwx"}),
                "permissions",
            ),
            (
                json!({"path": "/a", "data": "x", "owner": "no-such-user-xyz"}),
                "owner",
            ),
            (
                json!({"path": "/a", "data": "x", "user_owner": "no-such-user-xyz"}),
                "user_owner",
            ),
            (
                json!({"path": "/a", "data": "x", "overwrite": "maybe"}),
                "overwrite",
            ),
        ] {
            let e = prepare(&task("u", TaskKind::UploadFile, params.clone())).unwrap_err();
            assert_eq!(e.field, field, "{params}");
        }
        // Fuel's spelling.
        assert!(prepare(&task(
            "u",
            TaskKind::UploadFile,
            json!({"path": "/a", "content": "x"})
        ))
        .is_ok());
    }
}
