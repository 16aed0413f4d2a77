//! What the agent lends task executors besides the task itself: its state directory, the programs it
//! runs for puppet and reboot tasks, the controller's files (for `copy_files` and `sync`), the
//! journal (so a reboot waits until its `running` report is acknowledged) and the tracker that holds and
//! records the commands tasks run.

use super::BoxFuture;
use crate::journal::SharedJournal;
use crate::tracking::Tracker;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The default reboot command: systemd reboots the node, stopping the agent cleanly first.
pub const DEFAULT_REBOOT_COMMAND: [&str; 2] = ["systemctl", "reboot"];
/// Where the kernel tells the current boot's id.
pub const DEFAULT_BOOT_ID_PATH: &str = "/proc/sys/kernel/random/boot_id";
/// The default puppet program (looked up in `PATH`).
pub const DEFAULT_PUPPET: &str = "puppet";

pub use plinth_common::wire::{FileManifest as Manifest, ManifestFile as RemoteFile};

/// A file pulled into a staged temporary file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pulled {
    /// The SHA-256 the controller announced.
    pub announced_sha256: String,
    /// The SHA-256 of the bytes received.
    pub sha256: String,
    /// Bytes received.
    pub size: u64,
}

/// Why the controller's files cannot be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileSourceError {
    /// The controller has no such file or directory.
    #[error("the controller has no file {0}")]
    NotFound(String),
    /// Anything else (network, refused, local write failure).
    #[error("{0}")]
    Failed(String),
}

/// The controller's files, as `copy_files` and `sync` pull them.
pub trait FileSource: Send + Sync {
    /// The manifest of a served file or directory (`GET /agent/v1/files/{path}?manifest=true`).
    fn manifest<'a>(&'a self, path: &'a str) -> BoxFuture<'a, Result<Manifest, FileSourceError>>;

    /// Streams a served file's bytes into `into` (`GET /agent/v1/files/{path}`), hashing them on the way
    /// and failing as soon as more than `max_size` bytes (what the signed manifest says) arrive.
    fn pull<'a>(
        &'a self,
        path: &'a str,
        max_size: u64,
        into: &'a mut tokio::fs::File,
    ) -> BoxFuture<'a, Result<Pulled, FileSourceError>>;

    /// Streams a served file's bytes into `into` as they arrive, from one controller and without
    /// starting over (what reads them cannot go back: an image written to a disk), failing as soon as
    /// more than `max_size` bytes arrive.
    fn stream<'a>(
        &'a self,
        path: &'a str,
        _max_size: u64,
        _into: &'a mut (dyn tokio::io::AsyncWrite + Unpin + Send),
    ) -> BoxFuture<'a, Result<Pulled, FileSourceError>> {
        Box::pin(async move {
            Err(FileSourceError::Failed(format!(
                "cannot stream {path}: this file source cannot"
            )))
        })
    }
}

/// A file source for an agent without a controller: every request fails.
#[derive(Debug, Default)]
pub struct NoFiles;

impl FileSource for NoFiles {
    fn manifest<'a>(&'a self, _path: &'a str) -> BoxFuture<'a, Result<Manifest, FileSourceError>> {
        Box::pin(async {
            Err(FileSourceError::Failed(
                "no controller to pull files from".into(),
            ))
        })
    }

    fn pull<'a>(
        &'a self,
        _path: &'a str,
        _max_size: u64,
        _into: &'a mut tokio::fs::File,
    ) -> BoxFuture<'a, Result<Pulled, FileSourceError>> {
        Box::pin(async {
            Err(FileSourceError::Failed(
                "no controller to pull files from".into(),
            ))
        })
    }
}

/// Why the controller did not set the node's boot device.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BootError {
    /// The node is no enrolled server: the controller cannot choose how it boots.
    #[error("{0}")]
    NotEnrolled(String),
    /// Anything else (its BMC failed, the controller could not be reached).
    #[error("{0}")]
    Failed(String),
}

/// What the controller does for the node itself (`boot_device` and `move_to_bootstrap` tasks).
pub trait NodeActions: Send + Sync {
    /// Asks the controller to set where the node boots next.
    fn boot<'a>(
        &'a self,
        request: &'a plinth_common::wire::BootRequest,
    ) -> BoxFuture<'a, Result<plinth_common::wire::BootAnswer, BootError>>;
}

/// Node actions for an agent without a controller: every request fails.
#[derive(Debug, Default)]
pub struct NoActions;

impl NodeActions for NoActions {
    fn boot<'a>(
        &'a self,
        _request: &'a plinth_common::wire::BootRequest,
    ) -> BoxFuture<'a, Result<plinth_common::wire::BootAnswer, BootError>> {
        Box::pin(async { Err(BootError::Failed("no controller to ask".to_string())) })
    }
}

/// How reboot tasks reboot the node and tell that it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RebootSettings {
    /// The program and its arguments (default `systemctl reboot`).
    pub command: Vec<String>,
    /// The file holding the current boot's id (default the kernel's).
    pub boot_id_path: PathBuf,
    /// How long to wait for the `running` report to be acknowledged before rebooting.
    pub report_wait: Duration,
}

impl Default for RebootSettings {
    fn default() -> Self {
        RebootSettings {
            command: DEFAULT_REBOOT_COMMAND
                .iter()
                .map(|s| s.to_string())
                .collect(),
            boot_id_path: PathBuf::from(DEFAULT_BOOT_ID_PATH),
            report_wait: Duration::from_secs(10),
        }
    }
}

/// Everything executors borrow from the agent.
pub struct Services {
    /// The agent's state directory (reboot markers, puppet summaries and logs live under it).
    pub state_dir: PathBuf,
    /// The puppet program.
    pub puppet: PathBuf,
    /// Reboots.
    pub reboot: RebootSettings,
    /// The controller's files.
    pub files: Arc<dyn FileSource>,
    /// The journal, when results are being sent (a reboot waits for its report's acknowledgement).
    pub journal: Option<SharedJournal>,
    /// Holds and records the commands tasks run (see [`crate::tracking`]).
    pub tracker: Arc<Tracker>,
    /// What the controller does for the node itself (its boot device).
    pub node: Arc<dyn NodeActions>,
    /// What a `provision` task puts into the installed system so it comes up as this node; `None`
    /// where the agent runs without a controller.
    pub install: Option<InstallSource>,
}

/// The agent's own settings, as a provisioned system needs them to reach the same controllers with
/// the same trust (the node key and state are copied from the state directory).
#[derive(Debug, Clone)]
pub struct InstallSource {
    /// The controllers' URLs.
    pub controllers: Vec<String>,
    /// The controller's task list signing key, as text.
    pub public_key: String,
    /// How the agent trusts the controller's TLS certificate.
    pub trust: crate::config::ServerTrust,
    /// The running agent's binary.
    pub binary: PathBuf,
}

impl Services {
    /// Services for an agent with no controller: files cannot be pulled, nothing waits for
    /// acknowledgements. Used by tests and by tools that run tasks locally.
    pub fn local(state_dir: PathBuf) -> Services {
        Services {
            tracker: Arc::new(Tracker::detect(&state_dir)),
            state_dir,
            puppet: PathBuf::from(DEFAULT_PUPPET),
            reboot: RebootSettings::default(),
            files: Arc::new(NoFiles),
            journal: None,
            node: Arc::new(NoActions),
            install: None,
        }
    }
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("state_dir", &self.state_dir)
            .field("puppet", &self.puppet)
            .field("reboot", &self.reboot)
            .finish_non_exhaustive()
    }
}
