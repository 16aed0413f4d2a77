//! The task list a node runs: what the controller signs and the agent verifies.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// The version of the task list format. An agent refuses any other.
pub const TASK_LIST_FORMAT: u32 = 1;

/// One node's work for one phase of one deployment. Signed as a whole by the controller
/// (see [`crate::signing`]); the agent runs nothing from a list that fails any check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskList {
    /// Always [`TASK_LIST_FORMAT`].
    pub format: u32,
    /// The fingerprint of the node key this list is for.
    pub node_key: String,
    /// The node's numeric id in the controller.
    pub node_id: u64,
    /// The deployment this list belongs to.
    pub deployment_id: u64,
    /// The phase (for example `deploy`).
    pub phase: String,
    /// Grows with every list issued to this node; the agent runs only a revision above the last it accepted.
    pub revision: u64,
    /// When the list was signed, in seconds since the Unix epoch.
    pub issued_at: i64,
    /// After this time (seconds since the Unix epoch) the agent refuses the list.
    pub expires_at: i64,
    /// The nonce the agent sent with the poll this list answers.
    pub nonce: String,
    /// Run puppet in no-op mode.
    #[serde(default)]
    pub noop: bool,
    /// An order to stop: the node ends the list of this deployment it is running (its running task
    /// terminated, the rest not started) and runs nothing in its place. Such a list has no tasks.
    #[serde(default, skip_serializing_if = "is_false")]
    pub cancel: bool,
    /// The tasks, in the order to run them.
    pub tasks: Tasks,
}

/// A list's tasks, shared: a phase publishes thousands of lists with a few distinct sets of tasks, and
/// lists given the same set hold one copy (cloning one is a reference count). Read through `Deref` as a
/// `Vec<TaskSpec>`; a write through `DerefMut` copies them first when they are shared (copy on write),
/// so a change to one list never shows in another. Serialised as the plain JSON array of tasks.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tasks(Arc<Vec<TaskSpec>>);

impl Tasks {
    /// Whether two lists hold the very same copy (not only equal tasks).
    pub fn shares(&self, other: &Tasks) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// An identity of this copy, equal for lists that share it (for grouping lists by their tasks).
    pub fn copy_id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }
}

impl Deref for Tasks {
    type Target = Vec<TaskSpec>;
    fn deref(&self) -> &Vec<TaskSpec> {
        &self.0
    }
}

impl DerefMut for Tasks {
    fn deref_mut(&mut self) -> &mut Vec<TaskSpec> {
        Arc::make_mut(&mut self.0)
    }
}

impl From<Vec<TaskSpec>> for Tasks {
    fn from(tasks: Vec<TaskSpec>) -> Tasks {
        Tasks(Arc::new(tasks))
    }
}

impl FromIterator<TaskSpec> for Tasks {
    fn from_iter<I: IntoIterator<Item = TaskSpec>>(iter: I) -> Tasks {
        Tasks::from(iter.into_iter().collect::<Vec<_>>())
    }
}

impl<'a> IntoIterator for &'a Tasks {
    type Item = &'a TaskSpec;
    type IntoIter = std::slice::Iter<'a, TaskSpec>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl IntoIterator for Tasks {
    type Item = TaskSpec;
    type IntoIter = std::vec::IntoIter<TaskSpec>;
    fn into_iter(self) -> Self::IntoIter {
        Arc::unwrap_or_clone(self.0).into_iter()
    }
}

impl Serialize for Tasks {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.as_slice().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Tasks {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Tasks, D::Error> {
        Vec::<TaskSpec>::deserialize(d).map(Tasks::from)
    }
}

impl TaskList {
    /// A list for a node and phase as a deployment's run makes it, before it is published: revision,
    /// signing times and nonce are given later (by the store and at each poll), not no-op, not an order to
    /// stop.
    pub fn unpublished(
        node_key: impl Into<String>,
        node_id: u64,
        deployment_id: u64,
        phase: impl Into<String>,
        tasks: Tasks,
    ) -> TaskList {
        TaskList {
            format: TASK_LIST_FORMAT,
            node_key: node_key.into(),
            node_id,
            deployment_id,
            phase: phase.into(),
            revision: 0,
            issued_at: 0,
            expires_at: 0,
            nonce: String::new(),
            noop: false,
            cancel: false,
            tasks,
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The kinds of task an agent runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskKind {
    /// A shell command.
    Shell,
    /// `puppet apply` of a manifest.
    Puppet,
    /// Write a file with given content.
    UploadFile,
    /// Copy files served by the controller.
    CopyFiles,
    /// Synchronise a directory served by the controller.
    Sync,
    /// Reboot the node and wait for it to come back.
    Reboot,
    /// Write an operating system image to the node's disk and reboot into it (see PROVISIONING.md).
    Provision,
    /// Wipe a disk's signatures (or the whole disk) on the way out.
    EraseNode,
    /// Compare the node's hardware with an expected profile (CPUs, memory, disks, NICs, architecture).
    CheckHardware,
    /// Make the node boot its discovery image next, and reboot it.
    MoveToBootstrap,
    /// Set the node's next boot device through its BMC (the controller does it for the agent).
    BootDevice,
    /// A task that was skipped on purpose: a no-op kept for ordering.
    Skipped,
    /// A stage anchor: a no-op kept for ordering.
    Stage,
    /// A group anchor: a no-op kept for ordering.
    Group,
}

impl TaskKind {
    /// True for the kinds that do nothing on the node.
    pub fn is_noop(self) -> bool {
        matches!(self, TaskKind::Skipped | TaskKind::Stage | TaskKind::Group)
    }
}

/// One task of a list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// The task id, unique within the list.
    pub id: String,
    /// What kind of task it is.
    #[serde(rename = "type")]
    pub kind: TaskKind,
    /// The task's parameters, with computed fields already evaluated.
    #[serde(default)]
    pub parameters: serde_json::Map<String, serde_json::Value>,
    /// Set when the task stays in the list only to keep ordering: it is reported skipped with this reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_reason: Option<String>,
    /// Tasks on other nodes that must finish before this one starts, or a concurrency limit the
    /// controller enforces: the agent asks the controller before it starts the task.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waits_for: Vec<CrossDependency>,
    /// True when the controller gates this task (cross-node dependencies or a concurrency limit).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gated: bool,
    /// For `copy_files` and `sync` tasks: each source's path (relative to the files root, without
    /// leading or trailing `/`) and the digest of its manifest ([`crate::signing::manifest_digest`]),
    /// fixed when the list was published. Signed with the list, so every byte and mode the task
    /// installs is: the agent refuses a manifest with another digest and a file with another hash.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub manifests: std::collections::BTreeMap<String, String>,
}

/// A task on another node that must finish first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrossDependency {
    /// The other node's id.
    pub node_id: u64,
    /// The task on that node.
    pub task: String,
}
