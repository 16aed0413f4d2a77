//! The expected profile: what a `check_hardware` task's parameters ask of the node, read strictly (an
//! unknown key, a wrong type or a bad comparison is a [`ProfileError`] naming the field).

use super::bound::Bound;
use serde_json::{Map, Value};

/// The most disks or NICs a profile may list (the matching is quadratic in them).
pub const MAX_ITEMS: usize = 256;

/// The parameters of the retry policy, which every task type reads beside its own.
const POLICY_KEYS: [&str; 3] = ["timeout", "retries", "interval"];

/// The profile's own keys.
const PROFILE_KEYS: [&str; 5] = ["cpus", "memory_mb", "disks", "nics", "arch"];

/// What the node is expected to have. Every field left out is not checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Profile {
    /// Logical CPUs (hardware threads), as the facts' `cpu.threads`.
    pub cpus: Option<Bound>,
    /// Memory in MiB, as the facts' `memory.total_bytes` (the kernel's `MemTotal`) in whole MiB.
    pub memory_mb: Option<Bound>,
    /// Disks, each matched to a distinct disk of the node.
    pub disks: Vec<DiskWant>,
    /// NICs, each matched to a distinct physical NIC of the node.
    pub nics: Vec<NicWant>,
    /// The machine's architecture (`x86_64`, `aarch64`, ...; `amd64` and `arm64` are read as those).
    pub arch: Option<String>,
}

/// One expected disk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiskWant {
    /// Its size in whole GiB, compared exactly (`>= 100` holds for 100 GiB and more).
    pub size_gb: Option<Bound>,
    /// Whether it spins.
    pub rotational: Option<bool>,
}

/// One expected NIC.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NicWant {
    /// Its link speed in Mb/s (a NIC whose link is down reports none).
    pub speed_mbps: Option<Bound>,
    /// Whether its link is up.
    pub link_up: Option<bool>,
}

/// A parameter of the profile that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("parameter `{field}`: {message}")]
pub struct ProfileError {
    /// The parameter, with its place in a list (`disks[1].size_gb`; lists count from 0).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

fn bad(field: impl Into<String>, message: impl Into<String>) -> ProfileError {
    ProfileError {
        field: field.into(),
        message: message.into(),
    }
}

impl Profile {
    /// Reads a task's parameters. The retry policy's keys (`timeout`, `retries`, `interval`) are left
    /// to the policy; any other key that is not the profile's is refused, and so is a profile that
    /// asks for nothing.
    pub fn parse(params: &Map<String, Value>) -> Result<Profile, ProfileError> {
        if let Some(unknown) = params
            .keys()
            .find(|k| !PROFILE_KEYS.contains(&k.as_str()) && !POLICY_KEYS.contains(&k.as_str()))
        {
            return Err(bad(
                unknown.as_str(),
                format!(
                    "is no parameter of check_hardware tasks (they are: {}, {})",
                    PROFILE_KEYS.join(", "),
                    POLICY_KEYS.join(", ")
                ),
            ));
        }
        let present = |key: &str| params.get(key).filter(|v| !v.is_null());
        let profile = Profile {
            cpus: present("cpus").map(|v| bound("cpus", v)).transpose()?,
            memory_mb: present("memory_mb")
                .map(|v| bound("memory_mb", v))
                .transpose()?,
            disks: list(present("disks"), "disks", disk_want)?,
            nics: list(present("nics"), "nics", nic_want)?,
            arch: present("arch").map(arch).transpose()?,
        };
        if profile == Profile::default() {
            return Err(bad(
                "profile",
                format!(
                    "asks for nothing: give at least one of {}",
                    PROFILE_KEYS.join(", ")
                ),
            ));
        }
        Ok(profile)
    }
}

fn bound(field: &str, value: &Value) -> Result<Bound, ProfileError> {
    Bound::parse(value).map_err(|m| bad(field, m))
}

fn flag(field: &str, value: &Value) -> Result<bool, ProfileError> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" => Ok(true),
        Value::String(s) if s == "false" => Ok(false),
        other => Err(bad(field, format!("must be true or false, got {other}"))),
    }
}

fn arch(value: &Value) -> Result<String, ProfileError> {
    match value.as_str().map(str::trim) {
        Some(a) if !a.is_empty() && !a.contains(char::is_whitespace) => Ok(canonical_arch(a)),
        _ => Err(bad(
            "arch",
            format!("must be an architecture's name such as x86_64, got {value}"),
        )),
    }
}

/// The kernel's name of an architecture, for the Debian names that differ (`amd64`, `arm64`).
pub fn canonical_arch(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    match lower.as_str() {
        "amd64" => "x86_64".to_string(),
        "arm64" => "aarch64".to_string(),
        _ => lower,
    }
}

/// Reads a list of mappings, each by `item` (given the mapping and its field prefix, `disks[0]`).
fn list<T>(
    value: Option<&Value>,
    field: &str,
    item: fn(&Map<String, Value>, &str) -> Result<T, ProfileError>,
) -> Result<Vec<T>, ProfileError> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let Some(entries) = value.as_array() else {
        return Err(bad(
            field,
            format!("must be a list of mappings, got {value}"),
        ));
    };
    if entries.len() > MAX_ITEMS {
        return Err(bad(
            field,
            format!("lists {} entries; at most {MAX_ITEMS}", entries.len()),
        ));
    }
    entries
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let here = format!("{field}[{i}]");
            match entry {
                Value::Object(map) => item(map, &here),
                other => Err(bad(here, format!("must be a mapping, got {other}"))),
            }
        })
        .collect()
}

/// Refuses a key of a list entry that is not one of `known`.
fn only(map: &Map<String, Value>, here: &str, known: &[&str]) -> Result<(), ProfileError> {
    match map.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(bad(
            format!("{here}.{k}"),
            format!("is unknown (known: {})", known.join(", ")),
        )),
        None => Ok(()),
    }
}

/// The entry `key` of a list entry read by `read`; `None` when absent or null.
fn entry<T>(
    map: &Map<String, Value>,
    here: &str,
    key: &str,
    read: fn(&str, &Value) -> Result<T, ProfileError>,
) -> Result<Option<T>, ProfileError> {
    map.get(key)
        .filter(|v| !v.is_null())
        .map(|v| read(&format!("{here}.{key}"), v))
        .transpose()
}

fn disk_want(map: &Map<String, Value>, here: &str) -> Result<DiskWant, ProfileError> {
    only(map, here, &["size_gb", "rotational"])?;
    Ok(DiskWant {
        size_gb: entry(map, here, "size_gb", bound)?,
        rotational: entry(map, here, "rotational", flag)?,
    })
}

fn nic_want(map: &Map<String, Value>, here: &str) -> Result<NicWant, ProfileError> {
    only(map, here, &["speed_mbps", "link_up"])?;
    Ok(NicWant {
        speed_mbps: entry(map, here, "speed_mbps", bound)?,
        link_up: entry(map, here, "link_up", flag)?,
    })
}
