//! The installed system's network, as the controller gives it ([`NetworkConfig`]), written as
//! systemd-networkd `.network` files that match interfaces by MAC address, so the configuration follows
//! the hardware whatever the kernel names the interfaces.
//!
//! Each interface gets `/etc/systemd/network/10-plinth-<mac>.network`. systemd-networkd applies the
//! first file (in lexical order) that matches an interface, so these win over the image's own
//! (`make-image` writes `90-ethernet-dhcp.network`, DHCP on any Ethernet interface), which still
//! serves the interfaces not named. Files of an earlier `write_network` that this one does not write
//! again are removed.

use super::files::place_file;
use super::InstalledError;
use crate::executor::nofollow::{Dir, Kind};
use serde::{Deserialize, Serialize};
use std::ffi::OsStr;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// Where the files go, inside the installed system.
const NETWORK_DIR: &str = "etc/systemd/network";
/// The prefix of the files written here.
const PREFIX: &str = "10-plinth-";

/// A node's network in its installed system, as the controller sends it (JSON or YAML):
///
/// ```yaml
/// interfaces:
///   - mac: "52:54:00:7a:00:01"
///     dhcp: true
///   - mac: "52:54:00:7a:00:02"
///     addresses: ["10.20.0.11/24", "fd00::11/64"]
///     gateway: 10.20.0.1
///     dns: [10.20.0.2]
/// ```
///
/// Unknown keys are refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkConfig {
    /// One entry per interface to configure; interfaces not named keep the image's configuration.
    #[serde(default)]
    pub interfaces: Vec<InterfaceConfig>,
}

/// One interface's configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterfaceConfig {
    /// The interface's MAC address (`aa:bb:cc:dd:ee:ff`, any case).
    pub mac: String,
    /// Whether it takes addresses by DHCP (IPv4 and IPv6); may be combined with static addresses.
    #[serde(default)]
    pub dhcp: bool,
    /// Static addresses with their prefix length (`10.20.0.11/24`, `fd00::11/64`).
    #[serde(default)]
    pub addresses: Vec<String>,
    /// The default gateway, when it has one.
    #[serde(default)]
    pub gateway: Option<IpAddr>,
    /// DNS servers.
    #[serde(default)]
    pub dns: Vec<IpAddr>,
}

/// What [`write_network`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetworkOutcome {
    /// The files were written (their paths on this machine).
    Written(Vec<PathBuf>),
    /// The installed system has no systemd-networkd: nothing was written (its own network
    /// configuration applies).
    NoNetworkd,
}

/// A MAC address in lower case, checked.
fn mac(field: &str, text: &str) -> Result<String, InstalledError> {
    let parts: Vec<&str> = text.split(':').collect();
    let ok = parts.len() == 6
        && parts
            .iter()
            .all(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit()));
    if !ok {
        return Err(InstalledError::invalid(
            field,
            format!("{text:?} is not a MAC address (six pairs of hex digits with colons)"),
        ));
    }
    Ok(text.to_ascii_lowercase())
}

/// An address with its prefix length, checked.
fn address(field: &str, text: &str) -> Result<String, InstalledError> {
    let bad = || {
        InstalledError::invalid(
            field,
            format!("{text:?} is not an address with its prefix length (10.0.0.5/24, fd00::5/64)"),
        )
    };
    let (ip, len) = text.split_once('/').ok_or_else(bad)?;
    let ip: IpAddr = ip.parse().map_err(|_| bad())?;
    let len: u8 = len.parse().map_err(|_| bad())?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    if len > max {
        return Err(bad());
    }
    Ok(format!("{ip}/{len}"))
}

/// The `.network` file of one interface.
fn network_file(i: usize, iface: &InterfaceConfig) -> Result<(String, String), InstalledError> {
    let field = format!("interfaces[{i}]");
    let mac = mac(&format!("{field}.mac"), &iface.mac)?;
    if !iface.dhcp && iface.addresses.is_empty() {
        return Err(InstalledError::invalid(
            field,
            format!("{mac}: neither dhcp nor addresses: say how it gets an address"),
        ));
    }
    let mut text = format!(
        "# Written by the Plinth agent when it installed this system.\n[Match]\nMACAddress={mac}\n\n[Network]\n"
    );
    if iface.dhcp {
        text.push_str("DHCP=yes\n");
    }
    for (j, a) in iface.addresses.iter().enumerate() {
        text.push_str(&format!(
            "Address={}\n",
            address(&format!("{field}.addresses[{j}]"), a)?
        ));
    }
    if let Some(gw) = iface.gateway {
        text.push_str(&format!("Gateway={gw}\n"));
    }
    for dns in &iface.dns {
        text.push_str(&format!("DNS={dns}\n"));
    }
    Ok((format!("{PREFIX}{}.network", mac.replace(':', "")), text))
}

/// Whether the installed system has systemd-networkd.
fn has_networkd(root: &Path) -> bool {
    [
        "usr/lib/systemd/systemd-networkd",
        "lib/systemd/systemd-networkd",
    ]
    .iter()
    .any(|p| std::fs::symlink_metadata(root.join(p)).is_ok())
}

/// Writes `config` into the installed system whose root is mounted at `root` as systemd-networkd
/// files (see the module's text). Every entry is checked before anything is written; a system without
/// systemd-networkd is left as it is ([`NetworkOutcome::NoNetworkd`]).
pub fn write_network(
    root: &Path,
    config: &NetworkConfig,
) -> Result<NetworkOutcome, InstalledError> {
    let mut files = Vec::new();
    for (i, iface) in config.interfaces.iter().enumerate() {
        let (name, text) = network_file(i, iface)?;
        if files.iter().any(|(n, _)| *n == name) {
            return Err(InstalledError::invalid(
                format!("interfaces[{i}].mac"),
                format!("{} is configured twice", iface.mac),
            ));
        }
        files.push((name, text));
    }
    if !has_networkd(root) {
        return Ok(NetworkOutcome::NoNetworkd);
    }
    let mut written = Vec::new();
    for (name, text) in &files {
        let inside = Path::new("/").join(NETWORK_DIR).join(name);
        written.push(place_file(root, &inside, text.as_bytes(), 0o644)?);
    }
    remove_stale(root, &files)?;
    Ok(NetworkOutcome::Written(written))
}

/// Removes this module's files that `files` does not name.
fn remove_stale(root: &Path, files: &[(String, String)]) -> Result<(), InstalledError> {
    let dir_path = root.join(NETWORK_DIR);
    let Some(top) =
        Dir::open(root, None).map_err(|e| InstalledError::io(root, "cannot open it", e))?
    else {
        return Ok(());
    };
    let Some(dir) = top
        .walk(Path::new(NETWORK_DIR), None, false)
        .map_err(|e| InstalledError::io(&dir_path, "cannot open it", e))?
    else {
        return Ok(());
    };
    for (name, kind) in dir
        .entries()
        .map_err(|e| InstalledError::io(&dir_path, "cannot list it", e))?
    {
        let text = name.to_string_lossy();
        let ours = text.starts_with(PREFIX) && text.ends_with(".network");
        if ours && kind != Kind::Directory && !files.iter().any(|(n, _)| OsStr::new(n) == name) {
            dir.unlink(&name)
                .map_err(|e| InstalledError::io(dir_path.join(&name), "cannot remove it", e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_static_and_a_dhcp_interface_read_from_yaml() {
        let config: NetworkConfig = serde_yaml_ng::from_str(
            "interfaces:\n  - mac: 52:54:00:7A:00:01\n    dhcp: true\n  - mac: 52:54:00:7a:00:02\n    addresses: [10.20.0.11/24, 'fd00::11/64']\n    gateway: 10.20.0.1\n    dns: [10.20.0.2]\n",
        )
        .unwrap();
        let (name, text) = network_file(0, &config.interfaces[0]).unwrap();
        assert_eq!(name, "10-plinth-5254007a0001.network");
        assert!(text.contains("MACAddress=52:54:00:7a:00:01\n"), "{text}");
        assert!(text.contains("DHCP=yes\n"), "{text}");
        let (_, text) = network_file(1, &config.interfaces[1]).unwrap();
        assert!(text.ends_with(
            "Address=10.20.0.11/24\nAddress=fd00::11/64\nGateway=10.20.0.1\nDNS=10.20.0.2\n"
        ));
        assert!(!text.contains("DHCP"), "{text}");
    }

    #[test]
    fn bad_entries_are_named() {
        let unknown =
            serde_yaml_ng::from_str::<NetworkConfig>("interfaces:\n  - mac: a\n    vlan: 3\n");
        assert!(unknown.unwrap_err().to_string().contains("vlan"));
        let iface = |mac: &str, addresses: &[&str], dhcp| InterfaceConfig {
            mac: mac.to_string(),
            dhcp,
            addresses: addresses.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        let e = network_file(2, &iface("52:54:00:00:00", &[], true)).unwrap_err();
        assert!(e.to_string().starts_with("interfaces[2].mac: "), "{e}");
        let e = network_file(0, &iface("52:54:00:00:00:01", &["10.0.0.1/33"], false)).unwrap_err();
        assert!(
            e.to_string().starts_with("interfaces[0].addresses[0]: "),
            "{e}"
        );
        let e = network_file(0, &iface("52:54:00:00:00:01", &[], false)).unwrap_err();
        assert!(e.to_string().contains("neither dhcp nor addresses"), "{e}");
    }
}
