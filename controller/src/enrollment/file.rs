//! Enrollment files: Plinth's own YAML and Ironic's, as `openstack baremetal create` reads it.
//!
//! Plinth's (`nodes:`, each with `name`, `macs`, and optionally `serial`, `uuid`, `tags`, `labels`,
//! `rack`, `profile` and `bmc`) is read strictly: an unknown key is an error that names it and the keys
//! that are allowed. Ironic's (`nodes:`, each with `name`, `driver`, `driver_info`, `properties`,
//! `ports` with their `address`, and optionally `extra` and `traits`) is read as Ironic reads it: keys
//! Plinth has no use for (`resource_class`, `network_interface`, ...) are ignored, and so is a
//! `chassis:` list. In it, `extra`'s text values become labels (a `rack` among them the rack too),
//! `traits` become tags, and `properties` the expected hardware (`cpus`, `memory_mb`, `local_gb`,
//! `cpu_arch`, and `boot_mode` from `capabilities`).
//!
//! Every error names the node (its place in the file and its name) and the field.

use crate::store::NewEnrollment;
use plinth_api::enrollment::{BmcView, BootMode, HardwareProfile};
use plinth_bmc::{BmcConfig, ConfigError};
use plinth_common::wire::normalize_mac;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};

/// The formats an enrollment file can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Plinth's own.
    Plinth,
    /// Ironic's (`openstack baremetal create`).
    Ironic,
}

impl Format {
    /// Its name, as `?format=` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Plinth => "plinth",
            Format::Ironic => "ironic",
        }
    }

    /// The format of this name.
    pub fn parse(name: &str) -> Option<Format> {
        match name {
            "plinth" => Some(Format::Plinth),
            "ironic" => Some(Format::Ironic),
            _ => None,
        }
    }
}

/// One server read from a file, its BMC password still in clear (the caller seals it into
/// `server.bmc_secret`).
#[derive(Debug, Clone)]
pub struct Enrollee {
    /// The server, its `bmc_secret` not yet set and its time 0.
    pub server: NewEnrollment,
    /// The BMC's password.
    pub password: Option<String>,
}

/// What is wrong with an enrollment file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    /// The text is not YAML (or JSON) of the format's shape; the message has the line and column.
    #[error("{format} enrollment file: {message}")]
    Shape {
        /// The format it was read as.
        format: &'static str,
        /// The parser's message.
        message: String,
    },
    /// A node's field is wrong.
    #[error("node {index} ({name}): {field}: {message}")]
    Field {
        /// Its place in the file, from 1.
        index: usize,
        /// Its name (or `?`).
        name: String,
        /// The field.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// The file has no nodes.
    #[error("the enrollment file has no nodes")]
    Empty,
}

/// Reads an enrollment file; its format is `format`, or guessed when `None`: Ironic's when a node has
/// `driver`, `driver_info` or `ports`, Plinth's otherwise.
pub fn read(text: &str, format: Option<Format>) -> Result<(Format, Vec<Enrollee>), FileError> {
    let format = match format {
        Some(f) => f,
        None => guess(text),
    };
    let shape = |e: serde_yaml_ng::Error| FileError::Shape {
        format: format.as_str(),
        message: e.to_string(),
    };
    let nodes = match format {
        Format::Plinth => {
            let file: PlinthFile = serde_yaml_ng::from_str(text).map_err(shape)?;
            file.nodes
                .into_iter()
                .enumerate()
                .map(|(i, n)| n.into_enrollee(i + 1))
                .collect::<Result<Vec<_>, _>>()?
        }
        Format::Ironic => {
            let file: IronicFile = serde_yaml_ng::from_str(text).map_err(shape)?;
            file.nodes
                .into_iter()
                .enumerate()
                .map(|(i, n)| n.into_enrollee(i + 1))
                .collect::<Result<Vec<_>, _>>()?
        }
    };
    if nodes.is_empty() {
        return Err(FileError::Empty);
    }
    check_unique(&nodes)?;
    Ok((format, nodes))
}

fn guess(text: &str) -> Format {
    let Ok(value) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text) else {
        return Format::Plinth;
    };
    let ironic = value
        .get("nodes")
        .and_then(|n| n.as_sequence())
        .is_some_and(|nodes| {
            nodes.iter().any(|n| {
                ["driver", "driver_info", "ports"]
                    .iter()
                    .any(|k| n.get(k).is_some())
            })
        });
    if ironic {
        Format::Ironic
    } else {
        Format::Plinth
    }
}

/// No two nodes of a file share a name, MAC, serial or UUID.
fn check_unique(nodes: &[Enrollee]) -> Result<(), FileError> {
    let mut seen: HashMap<(String, &str), usize> = HashMap::new();
    for (i, n) in nodes.iter().map(|n| &n.server).enumerate() {
        let keys = std::iter::once(("name", n.name.as_str()))
            .chain(n.macs.iter().map(|m| ("macs", m.as_str())))
            .chain(n.serial.as_deref().map(|s| ("serial", s)))
            .chain(n.uuid.as_deref().map(|u| ("uuid", u)));
        for (field, value) in keys {
            if let Some(first) = seen.insert((value.to_string(), field), i) {
                return Err(field_error(
                    i + 1,
                    &n.name,
                    field,
                    format!(
                        "{value} is given to node {} ({}) as well",
                        first + 1,
                        nodes[first].server.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn field_error(index: usize, name: &str, field: &str, message: String) -> FileError {
    FileError::Field {
        index,
        name: name.to_string(),
        field: field.to_string(),
        message,
    }
}

/// A node's name: 1 to 63 letters, digits, `-`, `_` and `.`, as host names and Ironic's names are.
fn check_name(index: usize, name: &str) -> Result<(), FileError> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(field_error(
            index,
            if name.is_empty() { "?" } else { name },
            "name",
            "must be 1 to 63 letters, digits, '-', '_' or '.'".into(),
        ))
    }
}

fn macs(index: usize, name: &str, field: &str, given: &[String]) -> Result<Vec<String>, FileError> {
    let mut out: Vec<String> = Vec::with_capacity(given.len());
    for mac in given {
        let m = normalize_mac(mac).ok_or_else(|| {
            field_error(
                index,
                name,
                field,
                format!("{mac:?} is not a MAC address (six hex pairs, as 52:54:00:12:34:56)"),
            )
        })?;
        if !out.contains(&m) {
            out.push(m);
        }
    }
    Ok(out)
}

fn lower_uuid(uuid: Option<String>) -> Option<String> {
    uuid.map(|u| u.trim().to_ascii_lowercase())
        .filter(|u| !u.is_empty())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlinthFile {
    nodes: Vec<PlinthNode>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlinthNode {
    name: String,
    #[serde(default)]
    macs: Vec<String>,
    #[serde(default)]
    serial: Option<String>,
    #[serde(default)]
    uuid: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    rack: Option<String>,
    #[serde(default)]
    profile: HardwareProfile,
    #[serde(default)]
    bmc: Option<BmcConfig>,
}

impl PlinthNode {
    fn into_enrollee(self, index: usize) -> Result<Enrollee, FileError> {
        check_name(index, &self.name)?;
        let macs = macs(index, &self.name, "macs", &self.macs)?;
        let (bmc, password) = match &self.bmc {
            Some(config) => {
                let (view, password) = super::bmc_view(config);
                (Some(view), Some(password))
            }
            None => (None, None),
        };
        finish(
            NewEnrollment {
                name: self.name,
                macs,
                serial: self.serial.filter(|s| !s.trim().is_empty()),
                uuid: lower_uuid(self.uuid),
                tags: self.tags,
                labels: self.labels,
                rack: self.rack,
                profile: self.profile,
                bmc,
                bmc_secret: None,
                now_ms: 0,
            },
            password,
            index,
        )
    }
}

/// Checks what every format shares: something to match an agent by.
fn finish(e: NewEnrollment, password: Option<String>, index: usize) -> Result<Enrollee, FileError> {
    if e.macs.is_empty() && e.serial.is_none() && e.uuid.is_none() && e.bmc.is_none() {
        return Err(field_error(
            index,
            &e.name,
            "macs",
            "no MAC, serial, UUID or BMC: nothing to know its agent by".into(),
        ));
    }
    Ok(Enrollee {
        server: e,
        password,
    })
}

#[derive(Deserialize)]
struct IronicFile {
    #[serde(default)]
    nodes: Vec<IronicNode>,
}

#[derive(Deserialize)]
struct IronicNode {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    driver: Option<String>,
    #[serde(default)]
    driver_info: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    properties: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    ports: Vec<IronicPort>,
    #[serde(default)]
    extra: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    traits: Vec<String>,
}

#[derive(Deserialize)]
struct IronicPort {
    address: String,
}

impl IronicNode {
    fn into_enrollee(self, index: usize) -> Result<Enrollee, FileError> {
        let name = self.name.clone().unwrap_or_default();
        check_name(index, &name)?;
        let given: Vec<String> = self.ports.into_iter().map(|p| p.address).collect();
        let macs = macs(index, &name, "ports.address", &given)?;
        let driver = self.driver.as_deref().unwrap_or("");
        let (bmc, password) = ironic_bmc(index, &name, driver, &self.driver_info)?;
        let profile = ironic_profile(index, &name, &self.properties)?;
        let labels: BTreeMap<String, String> = self
            .extra
            .iter()
            .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
            .collect();
        let rack = labels.get("rack").cloned();
        finish(
            NewEnrollment {
                name,
                macs,
                serial: None,
                uuid: None,
                tags: self.traits,
                labels,
                rack,
                profile,
                bmc: Some(bmc),
                bmc_secret: None,
                now_ms: 0,
            },
            password,
            index,
        )
    }
}

/// A text or number of Ironic's `properties`, as Ironic accepts both.
fn info_text(info: &serde_json::Map<String, serde_json::Value>, key: &str) -> Option<String> {
    match info.get(key)? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Ironic's `driver` and `driver_info` as a BMC (read by [`BmcConfig::from_ironic`]), shown and
/// kept apart from its password.
fn ironic_bmc(
    index: usize,
    name: &str,
    driver: &str,
    info: &serde_json::Map<String, serde_json::Value>,
) -> Result<(BmcView, Option<String>), FileError> {
    let config = BmcConfig::from_ironic(driver, info).map_err(|e| {
        let field = match &e {
            ConfigError::UnknownDriver(_) => "driver".to_string(),
            ConfigError::Missing(key) | ConfigError::Invalid { key, .. } => {
                format!("driver_info.{key}")
            }
            _ => "driver_info".to_string(),
        };
        field_error(index, name, &field, e.to_string())
    })?;
    let (view, password) = super::bmc_view(&config);
    Ok((view, Some(password)))
}

/// Ironic's `properties` as the expected hardware: numbers may be given as texts, as Ironic accepts.
fn ironic_profile(
    index: usize,
    name: &str,
    props: &serde_json::Map<String, serde_json::Value>,
) -> Result<HardwareProfile, FileError> {
    let number = |key: &str| -> Result<Option<u64>, FileError> {
        match info_text(props, key) {
            None => Ok(None),
            Some(text) => text.parse::<u64>().map(Some).map_err(|_| {
                field_error(
                    index,
                    name,
                    &format!("properties.{key}"),
                    format!("{text:?} is not a whole number"),
                )
            }),
        }
    };
    let boot_mode = info_text(props, "capabilities").and_then(|caps| {
        caps.split(',')
            .find_map(|c| match c.trim().split_once(':') {
                Some(("boot_mode", "uefi")) => Some(BootMode::Uefi),
                Some(("boot_mode", "bios")) => Some(BootMode::Legacy),
                _ => None,
            })
    });
    Ok(HardwareProfile {
        cpus: number("cpus")?.map(|c| u32::try_from(c).unwrap_or(u32::MAX)),
        memory_mb: number("memory_mb")?,
        disk_gb: number("local_gb")?,
        arch: info_text(props, "cpu_arch"),
        boot_mode,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLINTH: &str = "\
nodes:
  - name: rack1-n01
    macs: [52:54:00:AA:00:01, 52-54-00-aa-00-02]
    labels: {zone: a}
    tags: [compute]
    rack: rack1
    profile: {cpus: 4, memory_mb: 8192}
    bmc: {driver: redfish, address: 'https://10.0.0.5', username: admin, password: s3cret, verify_tls: false}
  - name: rack1-n02
    serial: ABC123
    bmc: {driver: ipmi, address: 10.0.0.6, port: 6230, username: admin, password: s3cret}
";

    #[test]
    fn plinth_files_read_with_macs_normalised() {
        let (format, nodes) = read(PLINTH, None).unwrap();
        assert_eq!(format, Format::Plinth);
        assert_eq!(
            nodes[0].server.macs,
            ["52:54:00:aa:00:01", "52:54:00:aa:00:02"]
        );
        assert_eq!(nodes[0].password.as_deref(), Some("s3cret"));
        assert!(nodes[0].server.bmc.as_ref().unwrap().password_set);
        assert_eq!(nodes[1].server.bmc.as_ref().unwrap().port, Some(6230));
        assert_eq!(nodes[1].server.serial.as_deref(), Some("ABC123"));
    }

    #[test]
    fn mistakes_name_the_node_and_the_field() {
        let cases = [
            (PLINTH.replace("macs: [", "mac: ["), "unknown field `mac`"),
            (PLINTH.replace("52-54-00-aa-00-02", "52-54-00-aa-00"), "node 1 (rack1-n01): macs"),
            (PLINTH.replace("ABC123", "ABC123\n    macs: [52:54:00:aa:00:01]"), "node 2 (rack1-n02): macs: 52:54:00:aa:00:01 is given to node 1 (rack1-n01) as well"),
            (PLINTH.replace("'https://10.0.0.5'", "'https://10.0.0.5/x'"), "has a path"),
            (PLINTH.replace("    serial: ABC123\n", "").replace("    bmc: {driver: ipmi, address: 10.0.0.6, port: 6230, username: admin, password: s3cret}\n", ""), "node 2 (rack1-n02): macs: no MAC, serial, UUID or BMC"),
            (PLINTH.replace("rack1-n02", "rack1 n02"), "node 2 (rack1 n02): name"),
        ];
        for (text, expected) in cases {
            let err = read(&text, None).unwrap_err().to_string();
            assert!(err.contains(expected), "{err} lacks {expected}");
        }
    }

    #[test]
    fn ironic_files_read_as_ironic_reads_them() {
        let text = r#"{"nodes": [{"name": "node-0", "driver": "redfish",
            "driver_info": {"redfish_address": "http://127.0.0.1:8000", "redfish_system_id": "/redfish/v1/Systems/abc",
                            "redfish_username": "admin", "redfish_password": "password", "redfish_verify_ca": "False"},
            "properties": {"cpus": "2", "memory_mb": 4096, "local_gb": 10, "cpu_arch": "x86_64", "capabilities": "boot_mode:uefi"},
            "resource_class": "baremetal",
            "extra": {"rack": "r1", "note": "x", "n": 3},
            "traits": ["CUSTOM_GPU"],
            "ports": [{"address": "52:54:00:12:34:56", "pxe_enabled": true}]},
           {"name": "node-1", "driver": "ipmi",
            "driver_info": {"ipmi_address": "127.0.0.1", "ipmi_port": "6231", "ipmi_username": "admin", "ipmi_password": "password"},
            "ports": [{"address": "52:54:00:12:34:57"}]}],
          "chassis": [{"description": "ignored"}]}"#;
        let (format, nodes) = read(text, None).unwrap();
        assert_eq!(format, Format::Ironic);
        let n0 = &nodes[0].server;
        assert_eq!(n0.macs, ["52:54:00:12:34:56"]);
        assert_eq!(n0.rack.as_deref(), Some("r1"));
        assert_eq!(n0.labels.len(), 2, "text values only: {:?}", n0.labels);
        assert_eq!(n0.tags, ["CUSTOM_GPU"]);
        assert_eq!(n0.profile.cpus, Some(2));
        assert_eq!(n0.profile.boot_mode, Some(BootMode::Uefi));
        let bmc = n0.bmc.as_ref().unwrap();
        assert_eq!(bmc.verify_tls, Some(false));
        assert_eq!(bmc.system_id.as_deref(), Some("/redfish/v1/Systems/abc"));
        let n1 = nodes[1].server.bmc.as_ref().unwrap();
        assert_eq!(
            (n1.driver, n1.port),
            (plinth_api::enrollment::BmcDriver::Ipmi, Some(6231))
        );
        assert_eq!(nodes[1].password.as_deref(), Some("password"));

        let wrong = text.replace("\"driver\": \"ipmi\"", "\"driver\": \"idrac\"");
        let err = read(&wrong, None).unwrap_err().to_string();
        assert!(
            err.contains("node 2 (node-1): driver: unknown BMC driver \"idrac\""),
            "{err}"
        );
        let missing = text.replace("\"ipmi_address\": \"127.0.0.1\", ", "");
        let err = read(&missing, None).unwrap_err().to_string();
        assert!(
            err.contains("node 2 (node-1): driver_info.ipmi_address: missing key"),
            "{err}"
        );
        assert!(!err.contains("password\""), "{err}");
    }
}
