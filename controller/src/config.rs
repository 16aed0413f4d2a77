//! The controller's configuration: command-line flags, then environment variables, then the config file,
//! then defaults, in that order of precedence.

use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The config file's contents (TOML). Every key is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Data directory.
    pub data_dir: Option<PathBuf>,
    /// The database: a `postgres://` URL; the embedded SQLite file in the data directory when absent.
    pub database_url: Option<String>,
    /// Listen address.
    pub listen: Option<SocketAddr>,
    /// A plain-HTTP address serving Nailgun's operator API for Fuel's `fuel2` (off when absent).
    pub nailgun_listen: Option<SocketAddr>,
    /// A plain-HTTP address serving Prometheus metrics (`/metrics`, no token; off when absent).
    pub metrics_listen: Option<SocketAddr>,
    /// The URL other controllers sharing the database reach this one at (`https://host:port`);
    /// from `listen` when absent.
    pub advertise_url: Option<String>,
    /// TLS certificate chain (PEM). With `tls_key`, replaces the self-signed certificate.
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    pub tls_key: Option<PathBuf>,
    /// Extra names and addresses for the self-signed certificate.
    pub tls_names: Option<Vec<String>>,
    /// Admit every new node without an operator (for labs and the quickstart).
    pub auto_accept: Option<bool>,
    /// A secret that admits the nodes presenting it at registration.
    pub enrollment_token: Option<String>,
    /// The name of the node whose agent runs on the controller's own host and takes the tasks a graph
    /// places on `master` (Fuel's master node).
    pub master_node: Option<String>,
    /// After how long without a poll or heartbeat a node counts as offline, in seconds.
    pub offline_after_secs: Option<u64>,
    /// How long a signed task list stays valid after it is fetched, in seconds.
    pub list_ttl_secs: Option<u64>,
    /// How long a phase may run before nodes that have not finished fail it, in seconds.
    pub phase_timeout_secs: Option<u64>,
    /// How long a token issued through the Keystone-style endpoint stays valid, in seconds
    /// (Keystone's default: 3600).
    pub keystone_token_lifetime_secs: Option<u64>,
    /// How many of a phase's task lists are stored first, in one transaction, and handed out, so that
    /// the first nodes of a large phase start while the rest are written (each further transaction
    /// twice as many).
    pub lists_per_write: Option<usize>,
    /// Log format: `text` or `json`.
    pub log_format: Option<String>,
    /// The most nodes waiting as discovered; registrations of new nodes beyond it are refused (503).
    pub max_discovered_nodes: Option<u64>,
    /// New registrations allowed per source address per minute (bursts of a quarter of it).
    pub registrations_per_minute: Option<u32>,
    /// The most connections at once that are neither from an accepted node nor yet authenticated as
    /// an operator; the oldest not yet authenticated makes room for a new one.
    pub max_untrusted_connections: Option<usize>,
    /// The most such connections from one address.
    pub max_connections_per_address: Option<usize>,
    /// Network boot: the plain-HTTP boot listener (off when absent).
    pub netboot: Option<crate::netboot::NetbootFile>,
    /// Power: how BMCs are read.
    pub power: Option<crate::power::PowerFile>,
}

/// The effective configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the database, keys, certificate and token live.
    pub data_dir: PathBuf,
    /// A PostgreSQL URL to keep the records in, instead of the SQLite file in `data_dir`.
    pub database_url: Option<String>,
    /// Where to listen.
    pub listen: SocketAddr,
    /// Where to serve Nailgun's operator API over plain HTTP, if anywhere.
    pub nailgun_listen: Option<SocketAddr>,
    /// Where to serve Prometheus metrics over plain HTTP, if anywhere.
    pub metrics_listen: Option<SocketAddr>,
    /// The URL other controllers reach this one at, when configured.
    pub advertise_url: Option<String>,
    /// Configured certificate and key, if any.
    pub tls_files: Option<(PathBuf, PathBuf)>,
    /// Extra names for the self-signed certificate (the file's, then the flags').
    pub tls_names: Vec<String>,
    /// Admit new nodes automatically.
    pub auto_accept: bool,
    /// Enrollment token, if any.
    pub enrollment_token: Option<String>,
    /// The node whose agent takes the tasks placed on `master`, by name; `None`: no agent does.
    pub master_node: Option<String>,
    /// Offline threshold.
    pub offline_after: Duration,
    /// Task list validity.
    pub list_ttl: Duration,
    /// Phase timeout.
    pub phase_timeout: Duration,
    /// How long a Keystone-style token stays valid.
    pub keystone_token_lifetime: Duration,
    /// How many of a phase's lists are stored and handed out first (then twice as many at a time).
    pub lists_per_write: usize,
    /// Unauthenticated traffic's bounds.
    pub limits: Limits,
    /// Network boot, when on.
    pub netboot: Option<crate::netboot::Netboot>,
    /// How the power loop reads BMCs.
    pub power: crate::power::PowerSettings,
}

/// Bounds on what unauthenticated peers can make the controller hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most discovered nodes.
    pub max_discovered_nodes: u64,
    /// New registrations per source address per minute.
    pub registrations_per_minute: u32,
    /// The most untrusted connections at once.
    pub max_untrusted_connections: usize,
    /// The most untrusted connections from one address.
    pub max_connections_per_address: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_discovered_nodes: 10_000,
            registrations_per_minute: 600,
            max_untrusted_connections: 1024,
            max_connections_per_address: 64,
        }
    }
}

/// Defaults.
pub const DEFAULT_LISTEN: &str = "0.0.0.0:7443";
/// Default data directory.
pub const DEFAULT_DATA_DIR: &str = "/var/lib/plinth-controller";
/// How many of a phase's lists are stored and handed out first, by default (each further slice is
/// twice the one before): at 10 µs a list stored, the first 2,000 nodes of a 40,000-node phase start
/// after about 20 ms of writing, not 400.
pub const DEFAULT_LISTS_PER_WRITE: usize = 2_000;
/// Default config file.
pub const DEFAULT_CONFIG_FILE: &str = "/etc/plinth/controller.toml";

/// Configuration errors.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid.
    #[error("config file {path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong (names the key and line).
        message: String,
    },
    /// A setting is wrong.
    #[error("{0}")]
    Setting(String),
}

/// The boot listener's settings: on when `--netboot-listen` or `[netboot] listen` is given.
fn netboot(
    over: &Overrides,
    file: Option<crate::netboot::NetbootFile>,
    data_dir: &Path,
) -> Result<Option<crate::netboot::Netboot>, ConfigError> {
    let file = file.unwrap_or_default();
    let Some(listen) = over.netboot_listen.or(file.listen) else {
        return Ok(None);
    };
    let max_connections = file
        .max_connections
        .unwrap_or(crate::netboot::DEFAULT_MAX_CONNECTIONS);
    if max_connections == 0 {
        return Err(ConfigError::Setting(
            "netboot.max_connections must be at least 1".into(),
        ));
    }
    for (key, url, scheme) in [
        ("netboot.url", &file.url, "http://"),
        ("netboot.controller_url", &file.controller_url, "https://"),
    ] {
        if let Some(url) = url {
            if !url.starts_with(scheme) || url.chars().any(|c| c.is_whitespace()) {
                return Err(ConfigError::Setting(format!(
                    "{key} {url:?} must be a {scheme} URL without spaces"
                )));
            }
        }
    }
    Ok(Some(crate::netboot::Netboot {
        listen,
        url: file.url,
        images: over
            .netboot_images
            .clone()
            .or(file.images)
            .unwrap_or_else(|| data_dir.join("netboot")),
        controller_url: file.controller_url,
        kernel_args: file.kernel_args.unwrap_or_default(),
        pass_enrollment_token: file.pass_enrollment_token.unwrap_or(false),
        max_connections,
    }))
}

/// Reads the config file. A missing file is fine only when it was not named explicitly.
pub fn read_file(path: &Path, explicit: bool) -> Result<FileConfig, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => toml::from_str(&text).map_err(|e| ConfigError::Invalid {
            path: path.to_path_buf(),
            message: e.to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
            Ok(FileConfig::default())
        }
        Err(source) => Err(ConfigError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// What flags and environment gave (clap merges those two).
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    /// `--data-dir` / `PLINTH_DATA_DIR`.
    pub data_dir: Option<PathBuf>,
    /// `--database-url` / `PLINTH_DATABASE_URL`.
    pub database_url: Option<String>,
    /// `--listen` / `PLINTH_LISTEN`.
    pub listen: Option<SocketAddr>,
    /// `--nailgun-listen` / `PLINTH_NAILGUN_LISTEN`.
    pub nailgun_listen: Option<SocketAddr>,
    /// `--metrics-listen` / `PLINTH_METRICS_LISTEN`.
    pub metrics_listen: Option<SocketAddr>,
    /// `--advertise-url` / `PLINTH_ADVERTISE_URL`.
    pub advertise_url: Option<String>,
    /// `--auto-accept` / `PLINTH_AUTO_ACCEPT`.
    pub auto_accept: Option<bool>,
    /// `--enrollment-token` / `PLINTH_ENROLLMENT_TOKEN`.
    pub enrollment_token: Option<String>,
    /// `--master-node` / `PLINTH_MASTER_NODE`.
    pub master_node: Option<String>,
    /// `--phase-timeout` / `PLINTH_PHASE_TIMEOUT`.
    pub phase_timeout_secs: Option<u64>,
    /// `--offline-after` / `PLINTH_OFFLINE_AFTER`.
    pub offline_after_secs: Option<u64>,
    /// `--lists-per-write` / `PLINTH_LISTS_PER_WRITE`.
    pub lists_per_write: Option<usize>,
    /// `--tls-name` / `PLINTH_TLS_NAMES`: added to the file's `tls_names`.
    pub tls_names: Vec<String>,
    /// `--max-discovered-nodes` / `PLINTH_MAX_DISCOVERED_NODES`.
    pub max_discovered_nodes: Option<u64>,
    /// `--registrations-per-minute` / `PLINTH_REGISTRATIONS_PER_MINUTE`.
    pub registrations_per_minute: Option<u32>,
    /// `--max-untrusted-connections` / `PLINTH_MAX_UNTRUSTED_CONNECTIONS`.
    pub max_untrusted_connections: Option<usize>,
    /// `--max-connections-per-address` / `PLINTH_MAX_CONNECTIONS_PER_ADDRESS`.
    pub max_connections_per_address: Option<usize>,
    /// `--netboot-listen` / `PLINTH_NETBOOT_LISTEN`: turns the boot listener on here.
    pub netboot_listen: Option<SocketAddr>,
    /// `--netboot-images` / `PLINTH_NETBOOT_IMAGES`.
    pub netboot_images: Option<PathBuf>,
}

impl Config {
    /// The names the controller's certificate should carry: `tls_names`, and the listen address when it
    /// is one address (not `0.0.0.0` or `::`), since agents and operators then reach it there.
    pub fn certificate_names(&self) -> Vec<String> {
        let mut names = self.tls_names.clone();
        let ip = self.listen.ip();
        if !ip.is_unspecified() && !names.contains(&ip.to_string()) {
            names.push(ip.to_string());
        }
        names
    }

    /// Merges flags/environment over the file over defaults.
    pub fn merge(over: Overrides, file: FileConfig) -> Result<Config, ConfigError> {
        let tls_files = match (file.tls_cert, file.tls_key) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            _ => {
                return Err(ConfigError::Setting(
                    "tls_cert and tls_key go together: give both or neither".into(),
                ))
            }
        };
        let listen = match over.listen.or(file.listen) {
            Some(l) => l,
            // The default is a valid socket address literal.
            None => DEFAULT_LISTEN
                .parse()
                .map_err(|e| ConfigError::Setting(format!("{e}")))?,
        };
        let positive = |name: &str, v: u64| {
            if v == 0 {
                Err(ConfigError::Setting(format!(
                    "{name} must be at least 1 second"
                )))
            } else {
                Ok(Duration::from_secs(v))
            }
        };
        let data_dir = over
            .data_dir
            .clone()
            .or(file.data_dir.clone())
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
        let netboot = netboot(&over, file.netboot.clone(), &data_dir)?;
        let power = crate::power::PowerSettings::from_file(file.power.clone().unwrap_or_default())
            .map_err(ConfigError::Setting)?;
        Ok(Config {
            netboot,
            power,
            data_dir,
            database_url: over
                .database_url
                .or(file.database_url)
                .filter(|u| !u.is_empty()),
            listen,
            nailgun_listen: over.nailgun_listen.or(file.nailgun_listen),
            metrics_listen: over.metrics_listen.or(file.metrics_listen),
            advertise_url: over
                .advertise_url
                .or(file.advertise_url)
                .filter(|u| !u.is_empty()),
            tls_files,
            tls_names: file
                .tls_names
                .unwrap_or_default()
                .into_iter()
                .chain(over.tls_names)
                .collect(),
            auto_accept: over.auto_accept.or(file.auto_accept).unwrap_or(false),
            enrollment_token: over
                .enrollment_token
                .or(file.enrollment_token)
                .filter(|t| !t.is_empty()),
            master_node: over
                .master_node
                .or(file.master_node)
                .map(|n| n.trim().to_string())
                .filter(|n| !n.is_empty()),
            offline_after: positive(
                "offline_after_secs",
                over.offline_after_secs
                    .or(file.offline_after_secs)
                    .unwrap_or(60),
            )?,
            list_ttl: positive("list_ttl_secs", file.list_ttl_secs.unwrap_or(600))?,
            keystone_token_lifetime: positive(
                "keystone_token_lifetime_secs",
                file.keystone_token_lifetime_secs.unwrap_or(3600),
            )?,
            phase_timeout: positive(
                "phase_timeout_secs",
                over.phase_timeout_secs
                    .or(file.phase_timeout_secs)
                    .unwrap_or(3600),
            )?,
            lists_per_write: match over
                .lists_per_write
                .or(file.lists_per_write)
                .unwrap_or(DEFAULT_LISTS_PER_WRITE)
            {
                0 => {
                    return Err(ConfigError::Setting(
                        "lists_per_write must be at least 1".into(),
                    ))
                }
                n => n,
            },
            limits: {
                let d = Limits::default();
                let at_least_one = |name: &str, v: u64| {
                    if v == 0 {
                        Err(ConfigError::Setting(format!("{name} must be at least 1")))
                    } else {
                        Ok(v)
                    }
                };
                Limits {
                    max_discovered_nodes: over
                        .max_discovered_nodes
                        .or(file.max_discovered_nodes)
                        .unwrap_or(d.max_discovered_nodes),
                    registrations_per_minute: at_least_one(
                        "registrations_per_minute",
                        u64::from(
                            over.registrations_per_minute
                                .or(file.registrations_per_minute)
                                .unwrap_or(d.registrations_per_minute),
                        ),
                    )? as u32,
                    max_untrusted_connections: at_least_one(
                        "max_untrusted_connections",
                        over.max_untrusted_connections
                            .or(file.max_untrusted_connections)
                            .unwrap_or(d.max_untrusted_connections) as u64,
                    )? as usize,
                    max_connections_per_address: at_least_one(
                        "max_connections_per_address",
                        over.max_connections_per_address
                            .or(file.max_connections_per_address)
                            .unwrap_or(d.max_connections_per_address)
                            as u64,
                    )? as usize,
                }
            },
        })
    }
}

/// The configuration in force while the controller runs, shared by what reads it: SIGHUP replaces it
/// whole, and each reader takes the one of its moment.
#[derive(Debug)]
pub struct LiveConfig(std::sync::RwLock<Config>);

impl LiveConfig {
    /// The configuration the controller starts with.
    pub fn new(config: Config) -> LiveConfig {
        LiveConfig(std::sync::RwLock::new(config))
    }

    /// The configuration in force now.
    pub fn get(&self) -> Config {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Puts a reloaded configuration in force.
    pub fn set(&self, config: Config) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = config;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_url_comes_from_the_flag_or_the_file_and_sqlite_is_the_default() {
        let none = Config::merge(Overrides::default(), FileConfig::default()).unwrap();
        assert_eq!(none.database_url, None, "SQLite in the data directory");
        let file: FileConfig = toml::from_str("database_url = \"postgres://db/file\"").unwrap();
        let from_file = Config::merge(Overrides::default(), file).unwrap();
        assert_eq!(
            from_file.database_url.as_deref(),
            Some("postgres://db/file")
        );
        let file: FileConfig = toml::from_str("database_url = \"postgres://db/file\"").unwrap();
        let over = Overrides {
            database_url: Some("postgres://db/flag".into()),
            ..Default::default()
        };
        assert_eq!(
            Config::merge(over, file).unwrap().database_url.as_deref(),
            Some("postgres://db/flag")
        );
        let empty = Overrides {
            database_url: Some(String::new()),
            ..Default::default()
        };
        assert_eq!(
            Config::merge(empty, FileConfig::default())
                .unwrap()
                .database_url,
            None,
            "an empty PLINTH_DATABASE_URL means SQLite"
        );
    }

    #[test]
    fn flags_beat_file_beat_defaults() {
        let file: FileConfig = toml::from_str(
            "listen = \"127.0.0.1:9000\"\nauto_accept = true\nphase_timeout_secs = 5",
        )
        .unwrap();
        let over = Overrides {
            listen: Some("127.0.0.1:9001".parse().unwrap()),
            ..Default::default()
        };
        let c = Config::merge(over, file).unwrap();
        assert_eq!(c.listen.port(), 9001);
        assert!(c.auto_accept);
        assert_eq!(c.phase_timeout, Duration::from_secs(5));
        assert_eq!(c.offline_after, Duration::from_secs(60));
        assert_eq!(c.nailgun_listen, None, "the Nailgun port is off by default");
    }

    #[test]
    fn lists_per_write_defaults_and_refuses_zero() {
        let c = Config::merge(Overrides::default(), FileConfig::default()).unwrap();
        assert_eq!(c.lists_per_write, DEFAULT_LISTS_PER_WRITE);
        let file: FileConfig = toml::from_str("lists_per_write = 200").unwrap();
        let over = Overrides {
            lists_per_write: Some(3),
            ..Default::default()
        };
        assert_eq!(Config::merge(over, file).unwrap().lists_per_write, 3);
        let file: FileConfig = toml::from_str("lists_per_write = 0").unwrap();
        let err = Config::merge(Overrides::default(), file)
            .unwrap_err()
            .to_string();
        assert!(err.contains("lists_per_write"), "{err}");
    }

    #[test]
    fn the_nailgun_port_comes_from_the_file_or_the_flag() {
        let file: FileConfig = toml::from_str("nailgun_listen = \"127.0.0.1:8000\"").unwrap();
        let c = Config::merge(Overrides::default(), file).unwrap();
        assert_eq!(c.nailgun_listen, Some("127.0.0.1:8000".parse().unwrap()));
        let file: FileConfig = toml::from_str("nailgun_listen = \"127.0.0.1:8000\"").unwrap();
        let over = Overrides {
            nailgun_listen: Some("127.0.0.1:8001".parse().unwrap()),
            ..Default::default()
        };
        let c = Config::merge(over, file).unwrap();
        assert_eq!(c.nailgun_listen.map(|a| a.port()), Some(8001));
    }

    #[test]
    fn unknown_keys_and_half_tls_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(&p, "listne = \"x\"\n").unwrap();
        let err = read_file(&p, true).unwrap_err().to_string();
        assert!(err.contains("listne") && err.contains("c.toml"), "{err}");
        let file: FileConfig = toml::from_str("tls_cert = \"/a\"").unwrap();
        assert!(Config::merge(Overrides::default(), file).is_err());
        assert!(read_file(&dir.path().join("missing.toml"), true).is_err());
        assert!(read_file(&dir.path().join("missing.toml"), false).is_ok());
    }

    #[test]
    fn certificate_names_add_flags_to_the_file_and_a_single_listen_address() {
        let file = FileConfig {
            tls_names: Some(vec!["ctl.example".into()]),
            listen: Some("10.20.0.2:7443".parse().unwrap()),
            ..FileConfig::default()
        };
        let over = Overrides {
            tls_names: vec!["10.20.0.3".into()],
            ..Overrides::default()
        };
        let c = Config::merge(over, file).unwrap();
        assert_eq!(
            c.certificate_names(),
            vec!["ctl.example", "10.20.0.3", "10.20.0.2"]
        );
        let any = Config::merge(Overrides::default(), FileConfig::default()).unwrap();
        assert!(any.certificate_names().is_empty(), "0.0.0.0 names nothing");
    }
}
