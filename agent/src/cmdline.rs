//! The kernel command line: the `plinth.*` keys an image or a PXE menu passes to the agent, and the
//! `BOOTIF=` / `ip=` keys that say which interface booted the node.
//!
//! Keys: `plinth.controller=URL[,URL...]` (several controllers, in preference order), `plinth.name=NAME`, `plinth.tags=a,b`, `plinth.labels=k=v,k2=v2`,
//! `plinth.rack=NAME`, `plinth.token=TOKEN`, and the controller's trust for images that carry none
//! (network boot): `plinth.key=KEY` (its task list signing key) and `plinth.tls=sha256:HEX` (the pin of
//! its TLS key). Values may be double-quoted. Unknown `plinth.*` keys and malformed values are kept
//! as warnings: the kernel command line is not the agent's to reject. The exceptions are the controllers,
//! the key and the pin, which are kept as written and checked by [`crate::config::Settings::resolve`]:
//! an agent given a bad one stops, naming it, rather than trust something else.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

/// Where the running kernel's command line is read from by default.
pub const DEFAULT_CMDLINE_PATH: &str = "/proc/cmdline";

/// What the kernel command line says to the agent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelCmdline {
    /// `plinth.controller=`: the controllers' URLs as written (comma-separated there), in order; empty
    /// when the key is absent. Checked by [`crate::config::Settings::resolve`].
    pub controllers: Vec<String>,
    /// `plinth.tags=`, in order, without duplicates.
    pub tags: Vec<String>,
    /// `plinth.labels=`.
    pub labels: BTreeMap<String, String>,
    /// `plinth.name=`.
    pub name: Option<String>,
    /// `plinth.rack=`.
    pub rack: Option<String>,
    /// `plinth.token=`.
    pub token: Option<String>,
    /// `plinth.key=`: the controller's task list signing key, as written (checked by
    /// [`crate::config::Settings::resolve`]).
    pub key: Option<String>,
    /// `plinth.tls=`: the pin of the controller's TLS key, `sha256:<hex>`, as written (checked by
    /// [`crate::config::Settings::resolve`]).
    pub tls: Option<String>,
    /// The MAC address named by `BOOTIF=` (pxelinux form `01-aa-bb-..`), lowercase with colons.
    pub boot_mac: Option<String>,
    /// The interface named by `ip=` (`ip=<client>:<server>:<gw>:<mask>:<host>:<dev>:<proto>` or
    /// `ip=<dev>:<proto>`).
    pub boot_interface: Option<String>,
    /// Things that were ignored, for the log.
    pub warnings: Vec<String>,
}

impl KernelCmdline {
    /// True when the command line says which interface booted the node.
    pub fn names_boot_interface(&self) -> bool {
        self.boot_mac.is_some() || self.boot_interface.is_some()
    }

    /// Whether the interface with this name and MAC booted the node; `None` when the command line does not
    /// say.
    pub fn is_boot_interface(&self, name: &str, mac: Option<&str>) -> Option<bool> {
        if !self.names_boot_interface() {
            return None;
        }
        let by_mac = match (&self.boot_mac, mac) {
            (Some(boot), Some(mac)) => boot.eq_ignore_ascii_case(mac),
            _ => false,
        };
        let by_name = self.boot_interface.as_deref() == Some(name);
        Some(by_mac || by_name)
    }
}

/// Reads and parses a kernel command line file.
pub fn read(path: &Path) -> io::Result<KernelCmdline> {
    let text = std::fs::read_to_string(path)?;
    Ok(parse(&text))
}

/// Parses kernel command line text.
pub fn parse(text: &str) -> KernelCmdline {
    let mut out = KernelCmdline::default();
    for word in split_words(text) {
        let (key, value) = match word.split_once('=') {
            Some((k, v)) => (k, v),
            None => (word.as_str(), ""),
        };
        match key {
            "plinth.controller" => {
                out.controllers = value
                    .split(',')
                    .map(str::trim)
                    .filter(|u| !u.is_empty())
                    .map(str::to_string)
                    .collect();
                if out.controllers.is_empty() {
                    out.warnings
                        .push(format!("kernel command line: {key} is empty; ignored"));
                }
            }
            "plinth.rack" => out.rack = non_empty(value, key, &mut out.warnings),
            "plinth.name" => out.name = non_empty(value, key, &mut out.warnings),
            "plinth.token" => out.token = non_empty(value, key, &mut out.warnings),
            "plinth.key" => out.key = non_empty(value, key, &mut out.warnings),
            "plinth.tls" => out.tls = non_empty(value, key, &mut out.warnings),
            "plinth.tags" => {
                for tag in value.split(',').map(str::trim).filter(|t| !t.is_empty()) {
                    if !out.tags.iter().any(|t| t == tag) {
                        out.tags.push(tag.to_string());
                    }
                }
            }
            "plinth.labels" => {
                for pair in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    match pair.split_once('=') {
                        Some((k, v)) if !k.trim().is_empty() => {
                            out.labels.insert(k.trim().to_string(), v.trim().to_string());
                        }
                        _ => out.warnings.push(format!(
                            "kernel command line: plinth.labels entry {pair:?} is not key=value; ignored"
                        )),
                    }
                }
            }
            "BOOTIF" => match parse_bootif(value) {
                Some(mac) => out.boot_mac = Some(mac),
                None => out.warnings.push(format!(
                    "kernel command line: BOOTIF={value} is not a MAC address; ignored"
                )),
            },
            "ip" => {
                if let Some(dev) = parse_ip_device(value) {
                    out.boot_interface = Some(dev);
                }
            }
            _ if key.starts_with("plinth.") => out
                .warnings
                .push(format!("kernel command line: unknown key {key}; ignored")),
            _ => {}
        }
    }
    out
}

fn non_empty(value: &str, key: &str, warnings: &mut Vec<String>) -> Option<String> {
    let v = value.trim();
    if v.is_empty() {
        warnings.push(format!("kernel command line: {key} is empty; ignored"));
        None
    } else {
        Some(v.to_string())
    }
}

/// Splits on whitespace; double quotes group words (as the kernel does) and are removed.
fn split_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_quotes = false;
    let mut has_word = false;
    for c in text.chars() {
        match c {
            '"' => {
                in_quotes = !in_quotes;
                has_word = true;
            }
            c if c.is_whitespace() && !in_quotes => {
                if has_word {
                    words.push(std::mem::take(&mut current));
                    has_word = false;
                }
            }
            c => {
                current.push(c);
                has_word = true;
            }
        }
    }
    if has_word {
        words.push(current);
    }
    words
}

/// `BOOTIF=01-aa-bb-cc-dd-ee-ff` (ARP type 1 then the MAC) or a plain MAC with `-` or `:`.
fn parse_bootif(value: &str) -> Option<String> {
    let parts: Vec<&str> = value.split(['-', ':']).collect();
    let mac_parts = match parts.len() {
        7 => &parts[1..],
        6 => &parts[..],
        _ => return None,
    };
    if mac_parts
        .iter()
        .all(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        Some(mac_parts.join(":").to_ascii_lowercase())
    } else {
        None
    }
}

/// The device field of `ip=`: the sixth field of the long form, or the first of `ip=<dev>:<proto>`.
fn parse_ip_device(value: &str) -> Option<String> {
    if value.starts_with('[') {
        // IPv6 literal forms: the device is still the sixth colon-separated field outside brackets,
        // which is rare enough on PXE command lines that we do not guess.
        return None;
    }
    let fields: Vec<&str> = value.split(':').collect();
    let dev = if fields.len() >= 6 {
        fields[5]
    } else if fields.len() == 2 && fields[0].parse::<std::net::IpAddr>().is_err() {
        fields[0]
    } else {
        return None;
    };
    (!dev.is_empty()).then(|| dev.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plinth_keys_are_read() {
        let c = parse(
            "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro plinth.controller=https://10.0.0.1:8443 \
             plinth.tags=compute,ceph-osd,compute plinth.labels=row=a,pdu=2 plinth.rack=r12 plinth.token=s3cret quiet\n",
        );
        assert_eq!(c.controllers, vec!["https://10.0.0.1:8443"]);
        assert_eq!(c.tags, vec!["compute", "ceph-osd"]);
        assert_eq!(c.labels.get("row").map(String::as_str), Some("a"));
        assert_eq!(c.labels.get("pdu").map(String::as_str), Some("2"));
        assert_eq!(c.rack.as_deref(), Some("r12"));
        assert_eq!(c.token.as_deref(), Some("s3cret"));
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }

    #[test]
    fn the_controllers_key_and_tls_pin_are_kept_as_written() {
        let pin = format!("sha256:{}", "0f".repeat(32));
        let c = parse(&format!(
            "plinth.controller=https://10.0.2.2:7443 plinth.key=AAAA/+== plinth.tls={pin}"
        ));
        assert_eq!(c.key.as_deref(), Some("AAAA/+=="));
        assert_eq!(c.tls.as_deref(), Some(pin.as_str()));
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        // Malformed values are the configuration's to refuse; empty ones are ignored here.
        let c = parse("plinth.tls=sha256:xyz plinth.key=");
        assert_eq!(c.tls.as_deref(), Some("sha256:xyz"));
        assert_eq!(c.key, None);
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    }

    #[test]
    fn several_controllers_are_comma_separated_in_order() {
        // Quoted, the list may have spaces after its commas; empty entries are skipped.
        let c = parse(r#"plinth.controller="https://b:8443, https://a:8443,,https://c:1/base""#);
        assert_eq!(
            c.controllers,
            vec!["https://b:8443", "https://a:8443", "https://c:1/base"]
        );
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        // A later key replaces an earlier one, as for every single-valued key.
        let c = parse("plinth.controller=https://a:1,https://b:2 plinth.controller=https://c:3");
        assert_eq!(c.controllers, vec!["https://c:3"]);
        let c = parse("plinth.controller=,");
        assert!(c.controllers.is_empty());
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
        assert!(
            c.warnings[0].contains("plinth.controller"),
            "{:?}",
            c.warnings
        );
    }

    #[test]
    fn quotes_group_words() {
        let c = parse(r#"plinth.labels="site=north hall,row=b" plinth.rack="rack 7""#);
        assert_eq!(c.labels.get("site").map(String::as_str), Some("north hall"));
        assert_eq!(c.rack.as_deref(), Some("rack 7"));
    }

    #[test]
    fn bad_and_unknown_keys_become_warnings() {
        let c = parse("plinth.colour=red plinth.labels=novalue plinth.rack= BOOTIF=zz");
        assert_eq!(c.warnings.len(), 4, "{:?}", c.warnings);
        assert!(c.warnings[0].contains("plinth.colour"));
        assert_eq!(c.rack, None);
    }

    #[test]
    fn boot_interface_from_bootif_and_ip() {
        let c = parse("BOOTIF=01-52-54-00-AB-cd-EF");
        assert_eq!(c.boot_mac.as_deref(), Some("52:54:00:ab:cd:ef"));
        assert_eq!(
            c.is_boot_interface("eth0", Some("52:54:00:ab:cd:ef")),
            Some(true)
        );
        assert_eq!(
            c.is_boot_interface("eth1", Some("52:54:00:00:00:01")),
            Some(false)
        );

        let c = parse("ip=10.0.0.5:10.0.0.1:10.0.0.1:255.255.255.0:node5:eno1:none");
        assert_eq!(c.boot_interface.as_deref(), Some("eno1"));
        assert_eq!(c.is_boot_interface("eno1", None), Some(true));

        let c = parse("ip=ens3:dhcp");
        assert_eq!(c.boot_interface.as_deref(), Some("ens3"));

        let c = parse("ip=dhcp");
        assert_eq!(c.boot_interface, None);
        assert_eq!(c.is_boot_interface("eth0", Some("52:54:00:ab:cd:ef")), None);
    }
}
