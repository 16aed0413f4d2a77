//! Plinth's node agent: reports what the machine is, pulls signed task lists from the controller, verifies
//! them, runs them in order and reports every result, losing none.
//!
//! | module | owns |
//! |---|---|
//! | [`config`] | the configuration file and its merge with the kernel command line |
//! | [`cmdline`] | parsing the kernel command line (`plinth.*`, `BOOTIF=`, `ip=`) |
//! | [`identity`] | the node key pair, made on first boot, and its fingerprint |
//! | [`facts`] | hardware and system facts, one submodule per source |
//! | [`transport`] | the mutually authenticated TLS client, the endpoints, long-poll and backoff |
//! | [`verify`] | task list verification with the persisted revision and the accepted list |
//! | [`journal`] | the append-only results journal, its ack log and compaction |
//! | [`executor`] | running one attempt of one task, one module per task type |
//! | [`runner`] | running a verified list in order with retries, gates and skips |
//! | [`sender`] | uploading journaled results until the controller acknowledges them |
//! | [`metrics`] | the agent's own metrics, written for node_exporter's textfile collector |
//! | [`service`] | the long-running agent: registration, polling, heartbeats, systemd, signals |
//! | [`shutdown`] | the stop signal every long-running part listens to |
//! | [`tracking`] | the cgroup or process group each task command runs in, its durable record, and ending what a killed agent left running |
//! | [`fsutil`] | durable file writes (temp file, fsync, rename, fsync directory) |
//! | [`image`] | putting the agent into a provisioning image's root file system |
//! | [`root_device`] | choosing the disk an image is written to, by Ironic's root device hints |
//! | [`imaging`] | writing an OS image onto a disk as it downloads (raw, qcow2; gzip, xz, zstd), wiping and erasing disks |
//! | [`installed`] | preparing a system written to the disk: partition table, root file system, host name, network, keys, boot entry |
//!
//! Architecture invariant: nothing from a task list runs before the list's signature, node key, revision,
//! expiry and nonce are verified and its revision is durably persisted; no result is sent before it is in
//! the journal.

pub mod cmdline;
pub mod config;
pub mod executor;
pub mod facts;
pub mod fsutil;
pub mod identity;
pub mod image;
pub mod imaging;
pub mod installed;
pub mod journal;
pub mod metrics;
pub mod root_device;
pub mod runner;
pub mod sender;
pub mod service;
pub mod shutdown;
pub mod tracking;
pub mod transport;
pub mod verify;

#[cfg(test)]
mod testutil;

/// The agent's version, reported at registration.
pub const AGENT_VERSION: &str = env!("CARGO_PKG_VERSION");
