//! The agent's configuration: the TOML file (by default `/etc/plinth/agent.toml`) merged with the kernel
//! command line and the command-line flags into validated [`Settings`].
//!
//! Precedence: a `plinth.controller=`, `plinth.name=`, `plinth.rack=` or `plinth.token=` on the kernel
//! command line replaces the file's `controller`/`controllers`, `name`, `rack` or `enrollment_token`; tags are the union of both (file's first); labels
//! are merged, the kernel command line winning for a key both set. `--state-dir` replaces `state_dir`.
//!
//! Trust in the controller follows the same rule: `plinth.key=` replaces the file's
//! `controller_public_key`, and `plinth.tls=sha256:<hex>` (the pin of the controller's TLS key,
//! [`ServerTrust::KeyPin`]) replaces the file's `controller_cert` or `ca_cert`. A network boot image
//! carries neither and takes both from the command line its boot server wrote; whoever writes the kernel
//! command line controls the machine's boot anyway, so trusting it adds no one to trust. A malformed
//! `plinth.key=` or `plinth.tls=` stops the agent, naming the key: it never falls back to the file's.
//!
//! Controllers: the file gives one (`controller = "https://a:8443"`) or several (`controllers = [...]`),
//! never both; the kernel command line gives one or several, comma-separated. The list's order is the
//! order of preference (see [`crate::transport::failover`]); an entry given twice is refused.

use crate::cmdline::KernelCmdline;
use crate::executor::services::{RebootSettings, DEFAULT_PUPPET};
use ed25519_dalek::VerifyingKey;
use plinth_common::signing;
use plinth_common::wire::MAX_POLL_WAIT_SECS;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the configuration file is read from by default.
pub const DEFAULT_CONFIG_PATH: &str = "/etc/plinth/agent.toml";
/// Where the agent keeps its key, revision, accepted list and journal by default.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/plinth-agent";
/// Default for `poll_wait_secs`.
pub const DEFAULT_POLL_WAIT_SECS: u64 = 25;
/// Default for `heartbeat_secs`.
pub const DEFAULT_HEARTBEAT_SECS: u64 = 15;
/// Default for `backoff_min_ms`.
pub const DEFAULT_BACKOFF_MIN_MS: u64 = 500;
/// Default for `backoff_max_ms`.
pub const DEFAULT_BACKOFF_MAX_MS: u64 = 60_000;
/// Default for `kill_grace_secs`.
pub const DEFAULT_KILL_GRACE_SECS: u64 = 10;

/// Why the configuration cannot be used. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not valid TOML or has a key of the wrong type or an unknown key.
    #[error("config file {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message (with line, column and key).
        message: String,
    },
    /// A required key is missing from the file and the kernel command line.
    #[error("config file {path}: `{key}` is required")]
    Missing {
        /// The file.
        path: PathBuf,
        /// The key.
        key: &'static str,
    },
    /// A key of the kernel command line has a value the agent cannot use.
    #[error("kernel command line: `{key}`: {message}")]
    InvalidCmdline {
        /// The key.
        key: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A key has a value the agent cannot use.
    #[error("config file {path}: `{key}`: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The key.
        key: &'static str,
        /// What is wrong.
        message: String,
    },
}

/// The configuration file exactly as written. Every key is optional here; [`Settings::resolve`] decides
/// what is required.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// The node's name for operators (the controller uses the hostname when absent).
    pub name: Option<String>,
    /// The controller's base URL (`https://host:port`).
    pub controller: Option<String>,
    /// Several controllers' base URLs, in order of preference (instead of `controller`).
    pub controllers: Option<Vec<String>>,
    /// The controller's task list signing key, base64 as `plinth-controller key show` prints it.
    pub controller_public_key: Option<String>,
    /// PEM file with the controller's TLS certificate, pinned exactly.
    pub controller_cert: Option<PathBuf>,
    /// PEM file with CA certificates that verify the controller's certificate (instead of pinning).
    pub ca_cert: Option<PathBuf>,
    /// The pin of the controller's TLS key, `sha256:<hex>` (as `plinth.tls=` gives it; instead of
    /// `controller_cert` or `ca_cert`). A provisioned system gets the pin its discovery image booted
    /// with.
    pub controller_tls_key: Option<String>,
    /// State directory.
    pub state_dir: Option<PathBuf>,
    /// Working directory of tasks.
    pub work_dir: Option<PathBuf>,
    /// Tags of this node.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Labels of this node.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// The rack the node sits in.
    pub rack: Option<String>,
    /// An enrollment token that admits the node.
    pub enrollment_token: Option<String>,
    /// How long the controller may hold a poll open, in seconds.
    pub poll_wait_secs: Option<u64>,
    /// Seconds between heartbeats.
    pub heartbeat_secs: Option<u64>,
    /// Smallest backoff cap after an error, in milliseconds.
    pub backoff_min_ms: Option<u64>,
    /// Largest backoff cap after repeated errors, in milliseconds.
    pub backoff_max_ms: Option<u64>,
    /// Seconds between SIGTERM and SIGKILL when a task's process group is stopped.
    pub kill_grace_secs: Option<u64>,
    /// The puppet program puppet tasks run.
    pub puppet: Option<PathBuf>,
    /// The program and arguments reboot tasks run.
    pub reboot_command: Option<Vec<String>>,
    /// The file holding the current boot's id (a reboot task is done when it changes).
    pub boot_id_path: Option<PathBuf>,
    /// Where to write the agent's metrics for node_exporter's textfile collector (a `.prom` file in
    /// its directory); not written when absent.
    pub metrics_textfile: Option<PathBuf>,
}

impl FileConfig {
    /// Reads and parses a configuration file.
    pub fn load(path: &Path) -> Result<FileConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        FileConfig::parse(&text, path)
    }

    /// Parses configuration text; `path` is only used in messages.
    pub fn parse(text: &str, path: &Path) -> Result<FileConfig, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim_end().to_string(),
        })
    }
}

/// How the agent decides to trust the controller's TLS certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerTrust {
    /// Accept exactly the end-entity certificate in this PEM file.
    Pinned(PathBuf),
    /// Verify the certificate chain and host name against the CA certificates in this PEM file.
    Ca(PathBuf),
    /// Accept an end-entity certificate whose SubjectPublicKeyInfo (DER) has this SHA-256, whatever its
    /// names and dates, as `Pinned` does (`plinth.tls=sha256:<hex>`, see
    /// [`plinth_common::signing::tls_key_pin`]).
    KeyPin([u8; 32]),
}

/// Values given on the agent's own command line, which win over everything.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--state-dir`.
    pub state_dir: Option<PathBuf>,
    /// `--metrics-textfile`.
    pub metrics_textfile: Option<PathBuf>,
}

/// The validated configuration the agent runs with.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The file it came from (for messages).
    pub source: PathBuf,
    /// The node's name, when configured.
    pub name: Option<String>,
    /// The controllers' base URLs, without a trailing slash, in order of preference: never empty, no
    /// two alike.
    pub controllers: Vec<reqwest::Url>,
    /// The pinned task list signing key.
    pub controller_key: VerifyingKey,
    /// How the controller's TLS certificate is trusted.
    pub trust: ServerTrust,
    /// State directory.
    pub state_dir: PathBuf,
    /// Working directory of tasks.
    pub work_dir: PathBuf,
    /// Tags (file's, then kernel command line's, without duplicates).
    pub tags: Vec<String>,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Rack.
    pub rack: Option<String>,
    /// Enrollment token.
    pub enrollment_token: Option<String>,
    /// How long the controller may hold a poll open.
    pub poll_wait: Duration,
    /// Interval between heartbeats.
    pub heartbeat: Duration,
    /// Smallest backoff cap.
    pub backoff_min: Duration,
    /// Largest backoff cap.
    pub backoff_max: Duration,
    /// Grace between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// The puppet program.
    pub puppet: PathBuf,
    /// How reboot tasks reboot the node and tell that it did.
    pub reboot: RebootSettings,
    /// Where the agent's metrics are written for node_exporter's textfile collector, if anywhere
    /// (read at start only).
    pub metrics_textfile: Option<PathBuf>,
}

impl Settings {
    /// Reads the file and resolves it with the kernel command line and overrides.
    pub fn load(
        path: &Path,
        cmdline: &KernelCmdline,
        overrides: &Overrides,
    ) -> Result<Settings, ConfigError> {
        let file = FileConfig::load(path)?;
        Settings::resolve(file, path, cmdline, overrides)
    }

    /// Merges and validates; see the module documentation for precedence.
    pub fn resolve(
        file: FileConfig,
        path: &Path,
        cmdline: &KernelCmdline,
        overrides: &Overrides,
    ) -> Result<Settings, ConfigError> {
        let invalid = |key: &'static str, message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            key,
            message,
        };
        let missing = |key: &'static str| ConfigError::Missing {
            path: path.to_path_buf(),
            key,
        };

        let controllers = controller_list(file.controller, file.controllers, cmdline, path)?;

        let controller_key = match (&cmdline.key, file.controller_public_key) {
            (Some(text), _) => {
                signing::public_key_from_text(text).map_err(|e| ConfigError::InvalidCmdline {
                    key: "plinth.key",
                    message: e.to_string(),
                })?
            }
            (None, Some(text)) => signing::public_key_from_text(&text)
                .map_err(|e| invalid("controller_public_key", e.to_string()))?,
            (None, None) => {
                return Err(missing(
                    "controller_public_key` (or `plinth.key=` on the kernel command line)",
                ))
            }
        };

        let file_trust = match (file.controller_cert, file.ca_cert, file.controller_tls_key) {
            (Some(pinned), None, None) => Some(ServerTrust::Pinned(pinned)),
            (None, Some(ca), None) => Some(ServerTrust::Ca(ca)),
            (None, None, Some(pin)) => Some(ServerTrust::KeyPin(
                signing::tls_key_pin_from_text(&pin)
                    .map_err(|e| invalid("controller_tls_key", e.to_string()))?,
            )),
            (None, None, None) => None,
            _ => {
                return Err(invalid(
                    "controller_cert",
                    "set one of controller_cert (pinned), ca_cert or controller_tls_key".into(),
                ))
            }
        };
        let trust =
            match (&cmdline.tls, file_trust) {
                (Some(text), _) => {
                    ServerTrust::KeyPin(signing::tls_key_pin_from_text(text).map_err(|e| {
                        ConfigError::InvalidCmdline {
                            key: "plinth.tls",
                            message: e.to_string(),
                        }
                    })?)
                }
                (None, Some(trust)) => trust,
                (None, None) => return Err(missing(
                    "controller_cert` or `ca_cert` (or `plinth.tls=` on the kernel command line)",
                )),
            };

        let state_dir = overrides
            .state_dir
            .clone()
            .or(file.state_dir)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_STATE_DIR));
        let work_dir = file.work_dir.unwrap_or_else(|| state_dir.join("work"));

        let mut tags: Vec<String> = Vec::new();
        for tag in file.tags.iter().chain(cmdline.tags.iter()) {
            let tag = tag.trim();
            if tag.is_empty() || tag.contains(|c: char| c.is_whitespace() || c == ',') {
                return Err(invalid(
                    "tags",
                    format!("{tag:?} is not a tag (no spaces or commas)"),
                ));
            }
            if !tags.iter().any(|t| t == tag) {
                tags.push(tag.to_string());
            }
        }
        let mut labels = file.labels;
        for (k, v) in &cmdline.labels {
            labels.insert(k.clone(), v.clone());
        }
        if let Some(k) = labels.keys().find(|k| k.trim().is_empty()) {
            return Err(invalid("labels", format!("label key {k:?} is empty")));
        }

        let poll_wait_secs = file.poll_wait_secs.unwrap_or(DEFAULT_POLL_WAIT_SECS);
        if poll_wait_secs > MAX_POLL_WAIT_SECS {
            return Err(invalid(
                "poll_wait_secs",
                format!("{poll_wait_secs} is above the controller's limit of {MAX_POLL_WAIT_SECS}"),
            ));
        }
        let heartbeat_secs = file.heartbeat_secs.unwrap_or(DEFAULT_HEARTBEAT_SECS);
        if heartbeat_secs == 0 {
            return Err(invalid("heartbeat_secs", "must be at least 1".into()));
        }
        let backoff_min_ms = file.backoff_min_ms.unwrap_or(DEFAULT_BACKOFF_MIN_MS);
        let backoff_max_ms = file.backoff_max_ms.unwrap_or(DEFAULT_BACKOFF_MAX_MS);
        if backoff_min_ms == 0 {
            return Err(invalid("backoff_min_ms", "must be at least 1".into()));
        }
        if backoff_max_ms < backoff_min_ms {
            return Err(invalid(
                "backoff_max_ms",
                format!("{backoff_max_ms} is below backoff_min_ms ({backoff_min_ms})"),
            ));
        }

        let mut reboot = RebootSettings::default();
        if let Some(command) = file.reboot_command {
            if command.first().is_none_or(|p| p.trim().is_empty()) {
                return Err(invalid(
                    "reboot_command",
                    "must name a program, such as [\"systemctl\", \"reboot\"]".into(),
                ));
            }
            reboot.command = command;
        }
        if let Some(path) = file.boot_id_path {
            reboot.boot_id_path = path;
        }

        let metrics_textfile = overrides.metrics_textfile.clone().or(file.metrics_textfile);
        if let Some(path) = &metrics_textfile {
            if path.extension().is_none_or(|e| e != "prom") || path.file_name().is_none() {
                return Err(invalid(
                    "metrics_textfile",
                    format!(
                        "{} does not end in .prom: node_exporter's textfile collector reads only such files",
                        path.display()
                    ),
                ));
            }
        }

        let name = cmdline.name.clone().or(file.name);
        if let Some(n) = &name {
            if n.trim().is_empty() || n.chars().any(char::is_control) {
                return Err(invalid("name", format!("{n:?} is not a usable node name")));
            }
        }

        Ok(Settings {
            source: path.to_path_buf(),
            name,
            controllers,
            controller_key,
            trust,
            state_dir,
            work_dir,
            tags,
            labels,
            rack: cmdline.rack.clone().or(file.rack),
            enrollment_token: cmdline.token.clone().or(file.enrollment_token),
            poll_wait: Duration::from_secs(poll_wait_secs),
            heartbeat: Duration::from_secs(heartbeat_secs),
            backoff_min: Duration::from_millis(backoff_min_ms),
            backoff_max: Duration::from_millis(backoff_max_ms),
            kill_grace: Duration::from_secs(
                file.kill_grace_secs.unwrap_or(DEFAULT_KILL_GRACE_SECS),
            ),
            puppet: file.puppet.unwrap_or_else(|| PathBuf::from(DEFAULT_PUPPET)),
            reboot,
            metrics_textfile,
        })
    }
}

/// The controllers to use: the kernel command line's when it names any, else the file's `controller` or
/// `controllers` (one of them, not both), each checked by [`parse_controller_url`], none twice.
fn controller_list(
    single: Option<String>,
    several: Option<Vec<String>>,
    cmdline: &KernelCmdline,
    path: &Path,
) -> Result<Vec<reqwest::Url>, ConfigError> {
    let in_file = |key: &'static str, message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        key,
        message,
    };
    let (file_key, file_entries) = match (single, several) {
        (Some(_), Some(_)) => {
            return Err(in_file(
                "controllers",
                "set either `controller` (one URL) or `controllers` (a list), not both".into(),
            ))
        }
        (Some(one), None) => ("controller", vec![one]),
        (None, Some(list)) if list.is_empty() => {
            return Err(in_file(
                "controllers",
                "is empty: give at least one URL, such as [\"https://10.20.0.2:8443\"]".into(),
            ))
        }
        (None, Some(list)) => ("controllers", list),
        (None, None) => ("controller", Vec::new()),
    };
    // Where the entries come from: the kernel command line (`None`) or the file's key.
    let (entries, file_key) = if !cmdline.controllers.is_empty() {
        (cmdline.controllers.clone(), None)
    } else if !file_entries.is_empty() {
        (file_entries, Some(file_key))
    } else {
        return Err(ConfigError::Missing {
            path: path.to_path_buf(),
            // Printed between backquotes: "`controller` or `controllers` is required".
            key: "controller` or `controllers",
        });
    };
    let fail = |message: String| match file_key {
        Some(key) => in_file(key, message),
        None => ConfigError::InvalidCmdline {
            key: "plinth.controller",
            message,
        },
    };
    let mut urls: Vec<reqwest::Url> = Vec::with_capacity(entries.len());
    for entry in &entries {
        let url = parse_controller_url(entry).map_err(|m| fail(format!("{entry:?}: {m}")))?;
        if urls.contains(&url) {
            return Err(fail(format!("{entry:?} is given twice")));
        }
        urls.push(url);
    }
    Ok(urls)
}

/// Accepts only `https://host[:port][/base]` without query or credentials.
fn parse_controller_url(text: &str) -> Result<reqwest::Url, String> {
    let mut url = reqwest::Url::parse(text).map_err(|e| e.to_string())?;
    if url.scheme() != "https" {
        return Err("must be an https:// URL".into());
    }
    if url.host_str().is_none() {
        return Err("has no host".into());
    }
    if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
        return Err("must not carry a query, fragment or credentials".into());
    }
    let path = url.path().trim_end_matches('/').to_string();
    url.set_path(&path);
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmdline;

    fn key() -> String {
        signing::public_key_to_text(&signing::signing_key_from_seed([7; 32]).verifying_key())
    }

    fn file(text: &str) -> FileConfig {
        FileConfig::parse(text, Path::new("agent.toml")).unwrap()
    }

    fn base() -> String {
        format!(
            "controller = \"https://ctl.example:8443/\"\ncontroller_public_key = \"{}\"\n\
             controller_cert = \"/etc/plinth/controller.pem\"\n",
            key()
        )
    }

    fn urls(s: &Settings) -> Vec<&str> {
        s.controllers.iter().map(reqwest::Url::as_str).collect()
    }

    fn resolve(text: &str, cmdline: &str) -> Result<Settings, ConfigError> {
        Settings::resolve(
            file(text),
            Path::new("agent.toml"),
            &cmdline::parse(cmdline),
            &Overrides::default(),
        )
    }

    #[test]
    fn minimal_file_gets_defaults() {
        let s = resolve(&base(), "").unwrap();
        assert_eq!(urls(&s), vec!["https://ctl.example:8443/"]);
        assert_eq!(
            s.trust,
            ServerTrust::Pinned("/etc/plinth/controller.pem".into())
        );
        assert_eq!(s.state_dir, PathBuf::from(DEFAULT_STATE_DIR));
        assert_eq!(s.work_dir, PathBuf::from(DEFAULT_STATE_DIR).join("work"));
        assert_eq!(s.poll_wait, Duration::from_secs(25));
        assert_eq!(s.heartbeat, Duration::from_secs(15));
        assert!(s.tags.is_empty());
    }

    #[test]
    fn unknown_key_is_rejected_with_its_name_and_file() {
        let err = FileConfig::parse("contoller = \"x\"\n", Path::new("/etc/a.toml")).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("/etc/a.toml"), "{msg}");
        assert!(msg.contains("contoller"), "{msg}");
    }

    #[test]
    fn wrong_type_names_the_line() {
        let err =
            FileConfig::parse("poll_wait_secs = \"soon\"\n", Path::new("a.toml")).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("poll_wait_secs") && msg.contains("line 1"),
            "{msg}"
        );
    }

    #[test]
    fn kernel_command_line_replaces_controller_rack_token_and_merges_tags_labels() {
        let text = format!(
            "{}name = \"file-name\"\ntags = [\"compute\", \"ssd\"]\nrack = \"r1\"\nenrollment_token = \"file\"\n\
             [labels]\nrow = \"a\"\npdu = \"1\"\n",
            base()
        );
        let s = resolve(
            &text,
            "plinth.controller=https://10.0.0.9:9443 plinth.tags=ssd,gpu plinth.labels=pdu=2,zone=z \
             plinth.rack=r9 plinth.token=kernel plinth.name=node-9",
        )
        .unwrap();
        assert_eq!(s.name.as_deref(), Some("node-9"));
        assert_eq!(urls(&s), vec!["https://10.0.0.9:9443/"]);
        assert_eq!(s.tags, vec!["compute", "ssd", "gpu"]);
        assert_eq!(s.labels.get("row").map(String::as_str), Some("a"));
        assert_eq!(s.labels.get("pdu").map(String::as_str), Some("2"));
        assert_eq!(s.labels.get("zone").map(String::as_str), Some("z"));
        assert_eq!(s.rack.as_deref(), Some("r9"));
        assert_eq!(s.enrollment_token.as_deref(), Some("kernel"));
    }

    #[test]
    fn controller_may_come_from_the_kernel_command_line_alone() {
        let text = format!(
            "controller_public_key = \"{}\"\nca_cert = \"/etc/plinth/ca.pem\"\nstate_dir = \"/srv/s\"\n",
            key()
        );
        let s = resolve(&text, "plinth.controller=https://c:1").unwrap();
        assert_eq!(urls(&s), vec!["https://c:1/"]);
        assert_eq!(s.trust, ServerTrust::Ca("/etc/plinth/ca.pem".into()));
        assert_eq!(s.work_dir, PathBuf::from("/srv/s/work"));
    }

    /// The file's settings without any controller.
    fn without_controller() -> String {
        format!(
            "controller_public_key = \"{}\"\ncontroller_cert = \"/etc/plinth/controller.pem\"\n",
            key()
        )
    }

    #[test]
    fn several_controllers_keep_their_order() {
        let text = format!(
            "{}controllers = [\"https://b.example:8443/\", \"https://a.example:8443\", \"https://10.0.0.3:1/base/\"]\n",
            without_controller()
        );
        let s = resolve(&text, "").unwrap();
        assert_eq!(
            urls(&s),
            vec![
                "https://b.example:8443/",
                "https://a.example:8443/",
                "https://10.0.0.3:1/base"
            ]
        );
        // One in the list is as good as `controller`.
        let text = format!("{}controllers = [\"https://a:1\"]\n", without_controller());
        assert_eq!(urls(&resolve(&text, "").unwrap()), vec!["https://a:1/"]);
    }

    #[test]
    fn the_kernel_command_line_list_replaces_the_files() {
        let text = format!(
            "{}controllers = [\"https://a:1\", \"https://b:2\"]\n",
            without_controller()
        );
        let s = resolve(&text, "plinth.controller=https://c:3,https://d:4").unwrap();
        assert_eq!(urls(&s), vec!["https://c:3/", "https://d:4/"]);
        // A single controller in the file is replaced by a list as well.
        let s = resolve(&base(), "plinth.controller=https://c:3,https://d:4").unwrap();
        assert_eq!(urls(&s), vec!["https://c:3/", "https://d:4/"]);
        // And a list by a single one.
        let s = resolve(&text, "plinth.controller=https://e:5").unwrap();
        assert_eq!(urls(&s), vec!["https://e:5/"]);
    }

    #[test]
    fn controller_and_controllers_together_are_refused_naming_both() {
        let text = format!("{}controllers = [\"https://b:2\"]\n", base());
        let err = resolve(&text, "").unwrap_err().to_string();
        assert!(
            err.contains("`controller`") && err.contains("`controllers`"),
            "{err}"
        );
        assert!(err.contains("agent.toml"), "{err}");
        // Even when the kernel command line would replace them: the file is wrong.
        let err = resolve(&text, "plinth.controller=https://c:3")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not both"), "{err}");
    }

    #[test]
    fn a_missing_controller_names_both_keys() {
        let err = resolve(&without_controller(), "").unwrap_err().to_string();
        assert!(
            err.contains("`controller` or `controllers` is required"),
            "{err}"
        );
    }

    #[test]
    fn every_bad_controller_entry_is_named_with_its_field() {
        let list = |entries: &str| format!("{}controllers = [{entries}]\n", without_controller());
        let cases: Vec<(String, &str, &str)> = vec![
            (list(""), "`controllers`", "is empty"),
            (
                list("\"https://a:1\", \"http://b:2\""),
                "`controllers`",
                "\"http://b:2\": must be an https:// URL",
            ),
            (
                list("\"https://a:1\", \"not a url\""),
                "`controllers`",
                "\"not a url\"",
            ),
            (
                list("\"https://a:1\", \"https://u:p@b:2\""),
                "`controllers`",
                "\"https://u:p@b:2\": must not carry",
            ),
            (
                list("\"https://a:1\", \"https://b:2\", \"https://A:1/\""),
                "`controllers`",
                "\"https://A:1/\" is given twice",
            ),
        ];
        for (text, field, entry) in cases {
            let err = resolve(&text, "").unwrap_err().to_string();
            assert!(err.contains(field), "{field}: {err}");
            assert!(err.contains(entry), "{entry}: {err}");
            assert!(err.contains("agent.toml"), "{err}");
        }
    }

    #[test]
    fn bad_kernel_command_line_entries_name_the_key_and_entry() {
        for (cmdline, entry) in [
            (
                "plinth.controller=https://a:1,http://b:2",
                "\"http://b:2\": must be an https:// URL",
            ),
            (
                "plinth.controller=https://a:1,https://b:2,https://a:1",
                "\"https://a:1\" is given twice",
            ),
        ] {
            let err = resolve(&base(), cmdline).unwrap_err().to_string();
            assert!(err.starts_with("kernel command line"), "{err}");
            assert!(err.contains("`plinth.controller`"), "{err}");
            assert!(err.contains(entry), "{entry}: {err}");
        }
    }

    /// A netboot image's configuration: nothing about the controller.
    const EMPTY: &str = "# nothing about the controller\n";

    fn pin() -> String {
        signing::tls_key_pin(b"the controller's SubjectPublicKeyInfo")
    }

    #[test]
    fn the_kernel_command_line_alone_may_give_the_controller_its_key_and_tls_pin() {
        let s = resolve(
            EMPTY,
            &format!(
                "plinth.controller=https://10.0.2.2:7443 plinth.key={} plinth.tls={} plinth.token=t",
                key(),
                pin()
            ),
        )
        .unwrap();
        assert_eq!(urls(&s), vec!["https://10.0.2.2:7443/"]);
        assert_eq!(signing::public_key_to_text(&s.controller_key), key());
        assert_eq!(
            s.trust,
            ServerTrust::KeyPin(signing::tls_key_pin_digest(
                b"the controller's SubjectPublicKeyInfo"
            ))
        );
        assert_eq!(s.enrollment_token.as_deref(), Some("t"));
    }

    #[test]
    fn the_kernel_command_lines_key_and_pin_replace_the_files() {
        let other =
            signing::public_key_to_text(&signing::signing_key_from_seed([9; 32]).verifying_key());
        let s = resolve(&base(), &format!("plinth.key={other} plinth.tls={}", pin())).unwrap();
        assert_eq!(signing::public_key_to_text(&s.controller_key), other);
        assert!(matches!(s.trust, ServerTrust::KeyPin(_)), "{:?}", s.trust);
        // Either alone replaces only its own part.
        let s = resolve(&base(), &format!("plinth.key={other}")).unwrap();
        assert_eq!(
            s.trust,
            ServerTrust::Pinned("/etc/plinth/controller.pem".into())
        );
        let ca = format!(
            "{}ca_cert = \"/ca.pem\"\n",
            without_controller().replace("controller_cert = \"/etc/plinth/controller.pem\"\n", "")
        );
        let s = resolve(
            &ca,
            &format!("plinth.controller=https://c:1 plinth.tls={}", pin()),
        )
        .unwrap();
        assert_eq!(signing::public_key_to_text(&s.controller_key), key());
        assert!(matches!(s.trust, ServerTrust::KeyPin(_)), "{:?}", s.trust);
        // A file that is wrong stays wrong.
        let both = format!("{}ca_cert = \"/ca.pem\"\n", base());
        let err = resolve(&both, &format!("plinth.tls={}", pin()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("set one of controller_cert"), "{err}");
    }

    #[test]
    fn a_missing_key_or_trust_names_the_file_key_and_the_kernel_command_line_key() {
        let err = resolve(EMPTY, "plinth.controller=https://c:1")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`controller_public_key`") && err.contains("`plinth.key=`"),
            "{err}"
        );
        let err = resolve(
            EMPTY,
            &format!("plinth.controller=https://c:1 plinth.key={}", key()),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("`controller_cert` or `ca_cert`") && err.contains("`plinth.tls=`"),
            "{err}"
        );
    }

    #[test]
    fn a_bad_key_or_pin_on_the_kernel_command_line_stops_the_agent_naming_it() {
        let hex64 = "ab".repeat(32);
        for (cmdline, name, why) in [
            (
                "plinth.key=bm90IGEga2V5".to_string(),
                "`plinth.key`",
                "not an ed25519 public key",
            ),
            (
                format!("plinth.tls={hex64}"),
                "`plinth.tls`",
                "does not start with sha256:",
            ),
            (
                format!("plinth.tls=sha256:{}", &hex64[..40]),
                "`plinth.tls`",
                "40 hex characters",
            ),
            (
                format!("plinth.tls=sha256:{}", "g".repeat(64)),
                "`plinth.tls`",
                "not a TLS key pin",
            ),
        ] {
            // Even with a usable key and certificate in the file: no falling back to them.
            let err = resolve(&base(), &cmdline).unwrap_err().to_string();
            assert!(err.starts_with("kernel command line"), "{cmdline}: {err}");
            assert!(err.contains(name) && err.contains(why), "{cmdline}: {err}");
        }
    }

    #[test]
    fn state_dir_override_wins() {
        let text = format!("{}state_dir = \"/a\"\n", base());
        let s = Settings::resolve(
            file(&text),
            Path::new("agent.toml"),
            &KernelCmdline::default(),
            &Overrides {
                state_dir: Some("/b".into()),
                ..Overrides::default()
            },
        )
        .unwrap();
        assert_eq!(s.state_dir, PathBuf::from("/b"));
    }

    #[test]
    fn metrics_textfile_is_off_by_default_and_the_flag_wins() {
        assert_eq!(resolve(&base(), "").unwrap().metrics_textfile, None);
        let text = format!("{}metrics_textfile = \"/a/plinth_agent.prom\"\n", base());
        assert_eq!(
            resolve(&text, "").unwrap().metrics_textfile,
            Some(PathBuf::from("/a/plinth_agent.prom"))
        );
        let s = Settings::resolve(
            file(&text),
            Path::new("agent.toml"),
            &KernelCmdline::default(),
            &Overrides {
                metrics_textfile: Some("/b/plinth_agent.prom".into()),
                ..Overrides::default()
            },
        )
        .unwrap();
        assert_eq!(
            s.metrics_textfile,
            Some(PathBuf::from("/b/plinth_agent.prom"))
        );
        let text = format!("{}metrics_textfile = \"/a/agent.txt\"\n", base());
        let err = resolve(&text, "").unwrap_err().to_string();
        assert!(
            err.contains("metrics_textfile") && err.contains(".prom"),
            "{err}"
        );
    }

    #[test]
    fn every_invalid_value_is_named() {
        let cases: Vec<(String, &str)> = vec![
            (
                "controller_public_key = \"x\"\ncontroller_cert = \"c\"\n".into(),
                "controller",
            ),
            (base().replace("https://", "http://"), "controller"),
            (
                base().replace(&key(), "bm90IGEga2V5"),
                "controller_public_key",
            ),
            (
                format!(
                    "controller = \"https://c\"\ncontroller_public_key = \"{}\"\n",
                    key()
                ),
                "controller_cert",
            ),
            (format!("{}ca_cert = \"x\"\n", base()), "controller_cert"),
            (format!("{}poll_wait_secs = 31\n", base()), "poll_wait_secs"),
            (format!("{}heartbeat_secs = 0\n", base()), "heartbeat_secs"),
            (
                format!("{}backoff_min_ms = 10\nbackoff_max_ms = 5\n", base()),
                "backoff_max_ms",
            ),
            (format!("{}tags = [\"a b\"]\n", base()), "tags"),
            (format!("{}name = \" \"\n", base()), "name"),
            (format!("{}reboot_command = []\n", base()), "reboot_command"),
        ];
        for (text, key) in cases {
            let err = resolve(&text, "").unwrap_err().to_string();
            assert!(err.contains(&format!("`{key}`")), "{key}: {err}");
            assert!(err.contains("agent.toml"), "{err}");
        }
    }
}
