//! How to reach a BMC: Plinth's own YAML form and Ironic's `driver_info`.

use crate::Secret;
use reqwest::Url;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::path::PathBuf;

/// The IPMI port when none is given.
pub const DEFAULT_IPMI_PORT: u16 = 623;

/// How to reach one server's BMC, by driver.
///
/// In Plinth's YAML (deserialised with unknown keys refused):
///
/// ```yaml
/// driver: redfish            # or ipmi
/// address: https://10.0.0.5  # redfish: a URL (http or https) or a bare host; ipmi: a host
/// username: admin
/// password: secret
/// system_id: /redfish/v1/Systems/1  # redfish, optional: else the BMC's only system
/// verify_tls: true                  # redfish, optional (default true)
/// ca_cert: /etc/plinth/bmc-ca.pem   # redfish, optional: the CA that signed the BMC's certificate
/// port: 623                         # ipmi, optional (default 623)
/// ```
///
/// From Ironic's node records, see [`BmcConfig::from_ironic`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawConfig")]
pub enum BmcConfig {
    /// A Redfish BMC, over HTTP(S).
    Redfish(RedfishConfig),
    /// An IPMI 2.0 BMC, over RMCP+ (`lanplus`) through ipmitool.
    Ipmi(IpmiConfig),
}

/// A Redfish BMC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedfishConfig {
    /// The BMC's base URL, `http` or `https`, without a path (`https://10.0.0.5`,
    /// `http://127.0.0.1:8000`).
    pub address: Url,
    /// The ComputerSystem to drive, as a path (`/redfish/v1/Systems/1`); when `None`, the BMC's
    /// `/redfish/v1/Systems` must list exactly one, which is used.
    pub system_id: Option<String>,
    /// Whether the BMC's TLS certificate is checked (against the system's roots, or [`Self::ca_cert`]).
    pub verify_tls: bool,
    /// A PEM file of the CA (or the certificate itself) to trust instead of the system's roots.
    pub ca_cert: Option<PathBuf>,
    /// The BMC user.
    pub username: String,
    /// The user's password.
    pub password: Secret,
}

/// An IPMI BMC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpmiConfig {
    /// The BMC's host name or IP address.
    pub address: String,
    /// Its UDP port (623 unless said otherwise).
    pub port: u16,
    /// The BMC user.
    pub username: String,
    /// The user's password.
    pub password: Secret,
}

/// A BMC configuration that cannot be used. Its messages name the key at fault and never quote a
/// password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The driver is not one Plinth drives.
    #[error("unknown BMC driver {0:?}: Plinth drives redfish and ipmi (also named ipmitool)")]
    UnknownDriver(String),
    /// A key the driver needs is missing.
    #[error("missing key `{0}`")]
    Missing(String),
    /// A key's value cannot be used.
    #[error("key `{key}`: {reason}")]
    Invalid {
        /// The key.
        key: String,
        /// What is wrong with its value.
        reason: String,
    },
}

fn invalid(key: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.to_string(),
        reason: reason.into(),
    }
}

impl BmcConfig {
    /// Reads an Ironic node's `driver` and `driver_info` as `openstack baremetal node create` files
    /// give them. `redfish`: `redfish_address` (a URL, or a bare host meaning `https://host`),
    /// `redfish_system_id` (optional), `redfish_username`, `redfish_password`, `redfish_verify_ca`
    /// (optional: a boolean, a string such as `"True"` or `"false"`, or the path of a CA file).
    /// `ipmi` (or `ipmitool`): `ipmi_address`, `ipmi_port` (optional, a number or a string),
    /// `ipmi_username`, `ipmi_password`. Other keys (`deploy_kernel`, ...) are left alone.
    pub fn from_ironic(
        driver: &str,
        driver_info: &Map<String, Value>,
    ) -> Result<BmcConfig, ConfigError> {
        let info = Info(driver_info);
        match driver {
            "redfish" => {
                let address = redfish_address("redfish_address", info.string("redfish_address")?)?;
                let (verify_tls, ca_cert) = match driver_info.get("redfish_verify_ca") {
                    None | Some(Value::Null) => (true, None),
                    Some(Value::Bool(b)) => (*b, None),
                    Some(Value::String(s)) => match parse_bool(s) {
                        Some(b) => (b, None),
                        None if s.starts_with('/') => (true, Some(PathBuf::from(s))),
                        None => {
                            return Err(invalid(
                                "redfish_verify_ca",
                                format!(
                                "expected true, false or the absolute path of a CA file, got {s:?}"
                            ),
                            ))
                        }
                    },
                    Some(_) => {
                        return Err(invalid(
                            "redfish_verify_ca",
                            "expected true, false or the absolute path of a CA file",
                        ))
                    }
                };
                Ok(BmcConfig::Redfish(RedfishConfig {
                    address,
                    system_id: info
                        .optional_string("redfish_system_id")?
                        .map(|s| system_id("redfish_system_id", s))
                        .transpose()?,
                    verify_tls,
                    ca_cert,
                    username: info.string("redfish_username")?,
                    password: info.password("redfish_password")?,
                }))
            }
            "ipmi" | "ipmitool" => {
                if let Some(v) = info.optional_string("ipmi_protocol_version")? {
                    if v != "2.0" {
                        return Err(invalid(
                            "ipmi_protocol_version",
                            format!(
                                "{v:?} is not supported: Plinth speaks IPMI 2.0 (lanplus) only"
                            ),
                        ));
                    }
                }
                let port = match driver_info.get("ipmi_port") {
                    None | Some(Value::Null) => DEFAULT_IPMI_PORT,
                    Some(Value::Number(n)) => n
                        .as_u64()
                        .and_then(|n| u16::try_from(n).ok())
                        .filter(|n| *n > 0)
                        .ok_or_else(|| invalid("ipmi_port", format!("{n} is not a port number")))?,
                    Some(Value::String(s)) => port("ipmi_port", s)?,
                    Some(_) => return Err(invalid("ipmi_port", "expected a port number")),
                };
                Ok(BmcConfig::Ipmi(IpmiConfig {
                    address: ipmi_address("ipmi_address", info.string("ipmi_address")?)?,
                    port,
                    username: info.string("ipmi_username")?,
                    password: info.password("ipmi_password")?,
                }))
            }
            other => Err(ConfigError::UnknownDriver(other.to_string())),
        }
    }

    /// The BMC's address as it appears in messages: the Redfish base URL or the IPMI `host:port`.
    pub fn address(&self) -> String {
        match self {
            BmcConfig::Redfish(c) => c.address.as_str().trim_end_matches('/').to_string(),
            BmcConfig::Ipmi(c) => format!("{}:{}", c.address, c.port),
        }
    }

    /// The BMC user.
    pub fn username(&self) -> &str {
        match self {
            BmcConfig::Redfish(c) => &c.username,
            BmcConfig::Ipmi(c) => &c.username,
        }
    }
}

/// `driver_info` read key by key.
struct Info<'a>(&'a Map<String, Value>);

impl Info<'_> {
    fn optional_string(&self, key: &str) -> Result<Option<String>, ConfigError> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(invalid(key, "expected a string")),
        }
    }

    fn string(&self, key: &str) -> Result<String, ConfigError> {
        match self.optional_string(key)? {
            Some(s) if !s.trim().is_empty() => Ok(s),
            Some(_) => Err(invalid(key, "is empty")),
            None => Err(ConfigError::Missing(key.to_string())),
        }
    }

    fn password(&self, key: &str) -> Result<Secret, ConfigError> {
        match self.0.get(key) {
            None | Some(Value::Null) => Err(ConfigError::Missing(key.to_string())),
            Some(Value::String(s)) => Ok(Secret::new(s.as_str())),
            // Never quote the value: it is a password.
            Some(_) => Err(invalid(key, "expected a string")),
        }
    }
}

/// Ironic's and Python's usual spellings of a boolean.
fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "t" | "yes" | "y" | "on" | "1" => Some(true),
        "false" | "f" | "no" | "n" | "off" | "0" => Some(false),
        _ => None,
    }
}

fn port(key: &str, s: &str) -> Result<u16, ConfigError> {
    s.trim()
        .parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| {
            invalid(
                key,
                format!("expected a port number from 1 to 65535, got {s:?}"),
            )
        })
}

/// A Redfish base URL from a URL or a bare host (`10.0.0.5`, `bmc.example:8443`, `[fd00::5]`),
/// which means HTTPS as in Ironic.
fn redfish_address(key: &str, text: String) -> Result<Url, ConfigError> {
    let text = text.trim();
    let full = if text.contains("://") {
        text.to_string()
    } else {
        format!("https://{text}")
    };
    let url = Url::parse(&full)
        .map_err(|e| invalid(key, format!("{text:?} is not a URL or host: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(
            key,
            format!("the scheme must be http or https, not {:?}", url.scheme()),
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid(key, format!("{text:?} names no host")));
    }
    if !url.username().is_empty() || url.password().is_some() {
        // Never echo the URL: it holds a password.
        return Err(invalid(
            key,
            "must not carry credentials: give them as the username and password",
        ));
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(invalid(
            key,
            format!("{text:?} has a path: give the BMC's base address (https://host[:port]) and the system as system_id"),
        ));
    }
    Ok(url)
}

/// A system's path: `/redfish/v1/Systems/x`, or a bare id `x` meaning that path.
fn system_id(key: &str, s: String) -> Result<String, ConfigError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(invalid(key, "is empty"));
    }
    if s.contains("://") {
        return Err(invalid(
            key,
            "expected a path such as /redfish/v1/Systems/1, not a URL",
        ));
    }
    Ok(if s.starts_with('/') {
        s.to_string()
    } else {
        format!("/redfish/v1/Systems/{s}")
    })
}

fn ipmi_address(key: &str, s: String) -> Result<String, ConfigError> {
    let s = s.trim();
    if s.starts_with('-') || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid(key, format!("{s:?} is not a host name or address")));
    }
    Ok(s.to_string())
}

/// Plinth's YAML form as written, before it is checked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    driver: String,
    address: String,
    username: String,
    password: Secret,
    #[serde(default)]
    system_id: Option<String>,
    #[serde(default)]
    verify_tls: Option<bool>,
    #[serde(default)]
    ca_cert: Option<PathBuf>,
    #[serde(default)]
    port: Option<u16>,
}

impl TryFrom<RawConfig> for BmcConfig {
    type Error = ConfigError;

    fn try_from(raw: RawConfig) -> Result<BmcConfig, ConfigError> {
        let only_redfish = |key: &str, given: bool| {
            if given {
                Err(invalid(key, "applies to the redfish driver only"))
            } else {
                Ok(())
            }
        };
        if raw.username.trim().is_empty() {
            return Err(invalid("username", "is empty"));
        }
        match raw.driver.as_str() {
            "redfish" => {
                if raw.port.is_some() {
                    return Err(invalid(
                        "port",
                        "applies to the ipmi driver only: give a Redfish BMC's port in its address (https://host:port)",
                    ));
                }
                Ok(BmcConfig::Redfish(RedfishConfig {
                    address: redfish_address("address", raw.address)?,
                    system_id: raw
                        .system_id
                        .map(|s| system_id("system_id", s))
                        .transpose()?,
                    verify_tls: raw.verify_tls.unwrap_or(true),
                    ca_cert: raw.ca_cert,
                    username: raw.username,
                    password: raw.password,
                }))
            }
            "ipmi" | "ipmitool" => {
                only_redfish("system_id", raw.system_id.is_some())?;
                only_redfish("verify_tls", raw.verify_tls.is_some())?;
                only_redfish("ca_cert", raw.ca_cert.is_some())?;
                if raw.port == Some(0) {
                    return Err(invalid(
                        "port",
                        "expected a port number from 1 to 65535, got 0",
                    ));
                }
                Ok(BmcConfig::Ipmi(IpmiConfig {
                    address: ipmi_address("address", raw.address)?,
                    port: raw.port.unwrap_or(DEFAULT_IPMI_PORT),
                    username: raw.username,
                    password: raw.password,
                }))
            }
            other => Err(ConfigError::UnknownDriver(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ironic(driver: &str, info: Value) -> Result<BmcConfig, ConfigError> {
        BmcConfig::from_ironic(driver, info.as_object().unwrap())
    }

    fn redfish(c: BmcConfig) -> RedfishConfig {
        match c {
            BmcConfig::Redfish(r) => r,
            other => panic!("not redfish: {other:?}"),
        }
    }

    fn ipmi(c: BmcConfig) -> IpmiConfig {
        match c {
            BmcConfig::Ipmi(i) => i,
            other => panic!("not ipmi: {other:?}"),
        }
    }

    #[test]
    fn ironic_redfish() {
        let c = redfish(
            ironic(
                "redfish",
                json!({
                    "redfish_address": "https://10.0.0.5",
                    "redfish_system_id": "/redfish/v1/Systems/abc",
                    "redfish_username": "admin",
                    "redfish_password": "pw",
                    "redfish_verify_ca": "False",
                    "deploy_kernel": "http://images/k",
                }),
            )
            .unwrap(),
        );
        assert_eq!(c.address.as_str(), "https://10.0.0.5/");
        assert_eq!(c.system_id.as_deref(), Some("/redfish/v1/Systems/abc"));
        assert!(!c.verify_tls);
        assert_eq!(c.username, "admin");
        assert_eq!(c.password.expose(), "pw");
        assert!(format!("{c:?}").contains("password: ***"), "{c:?}");

        // A bare host means HTTPS; verify_ca defaults to true; a bare id is a path under Systems.
        let c = redfish(
            ironic(
                "redfish",
                json!({"redfish_address": "10.0.0.6:8443", "redfish_system_id": "1",
                       "redfish_username": "u", "redfish_password": "p"}),
            )
            .unwrap(),
        );
        assert_eq!(c.address.as_str(), "https://10.0.0.6:8443/");
        assert_eq!(c.system_id.as_deref(), Some("/redfish/v1/Systems/1"));
        assert!(c.verify_tls && c.ca_cert.is_none());

        for (v, want) in [
            (json!(true), true),
            (json!("true"), true),
            (json!("True"), true),
            (json!(false), false),
            (json!("false"), false),
        ] {
            let c = redfish(
                ironic(
                    "redfish",
                    json!({"redfish_address": "http://127.0.0.1:8000", "redfish_username": "u",
                           "redfish_password": "p", "redfish_verify_ca": v}),
                )
                .unwrap(),
            );
            assert_eq!(c.verify_tls, want);
        }
        let c = redfish(
            ironic(
                "redfish",
                json!({"redfish_address": "h", "redfish_username": "u", "redfish_password": "p",
                       "redfish_verify_ca": "/etc/ssl/bmc.pem"}),
            )
            .unwrap(),
        );
        assert!(c.verify_tls);
        assert_eq!(c.ca_cert, Some(PathBuf::from("/etc/ssl/bmc.pem")));
    }

    #[test]
    fn ironic_ipmi() {
        for (driver, port, want) in [
            ("ipmi", json!(null), 623),
            ("ipmitool", json!(6230), 6230),
            ("ipmi", json!("6231"), 6231),
        ] {
            let c = ipmi(
                ironic(
                    driver,
                    json!({"ipmi_address": "10.0.0.7", "ipmi_port": port, "ipmi_username": "root",
                           "ipmi_password": "calvin"}),
                )
                .unwrap(),
            );
            assert_eq!(
                (c.address.as_str(), c.port, c.username.as_str()),
                ("10.0.0.7", want, "root")
            );
            assert_eq!(c.password.expose(), "calvin");
        }
    }

    #[test]
    fn ironic_errors_name_the_key_and_not_the_password() {
        let cases = [
            (
                "redfish",
                json!({"redfish_username": "u", "redfish_password": "p"}),
                "missing key `redfish_address`",
            ),
            (
                "redfish",
                json!({"redfish_address": "h", "redfish_password": "p"}),
                "missing key `redfish_username`",
            ),
            (
                "redfish",
                json!({"redfish_address": "h", "redfish_username": "u"}),
                "missing key `redfish_password`",
            ),
            (
                "redfish",
                json!({"redfish_address": "ftp://h", "redfish_username": "u", "redfish_password": "p"}),
                "key `redfish_address`: the scheme must be http or https",
            ),
            (
                "redfish",
                json!({"redfish_address": "https://h/redfish/v1", "redfish_username": "u", "redfish_password": "p"}),
                "key `redfish_address`",
            ),
            (
                "redfish",
                json!({"redfish_address": "h", "redfish_username": "u", "redfish_password": "p", "redfish_verify_ca": "maybe"}),
                "key `redfish_verify_ca`",
            ),
            (
                "ipmi",
                json!({"ipmi_username": "u", "ipmi_password": "p"}),
                "missing key `ipmi_address`",
            ),
            (
                "ipmi",
                json!({"ipmi_address": "h", "ipmi_port": "x", "ipmi_username": "u", "ipmi_password": "p"}),
                "key `ipmi_port`",
            ),
            (
                "ipmi",
                json!({"ipmi_address": "h", "ipmi_port": 70000, "ipmi_username": "u", "ipmi_password": "p"}),
                "key `ipmi_port`",
            ),
            (
                "ipmi",
                json!({"ipmi_address": "h", "ipmi_username": "u", "ipmi_password": 31337}),
                "key `ipmi_password`: expected a string",
            ),
            (
                "ipmi",
                json!({"ipmi_address": "h", "ipmi_username": "u", "ipmi_password": "p", "ipmi_protocol_version": "1.5"}),
                "key `ipmi_protocol_version`",
            ),
            ("ilo", json!({}), "unknown BMC driver \"ilo\""),
        ];
        for (driver, info, want) in cases {
            let e = ironic(driver, info).unwrap_err().to_string();
            assert!(e.contains(want), "{e} lacks {want}");
            assert!(!e.contains("31337"), "{e}");
        }
        let e = ironic(
            "redfish",
            json!({"redfish_address": "https://admin:hunter2@h", "redfish_username": "u", "redfish_password": "p"}),
        )
        .unwrap_err()
        .to_string();
        assert!(!e.contains("hunter2"), "{e}");
    }

    #[test]
    fn yaml_form() {
        let c: BmcConfig = serde_yaml_ng::from_str(
            "driver: redfish\naddress: http://127.0.0.1:8000\nusername: a\npassword: b\nverify_tls: false\n",
        )
        .unwrap();
        let r = redfish(c);
        assert_eq!(r.address.as_str(), "http://127.0.0.1:8000/");
        assert!(!r.verify_tls && r.system_id.is_none());

        let c: BmcConfig = serde_yaml_ng::from_str(
            "driver: ipmi\naddress: 10.0.0.8\nusername: a\npassword: 1234\n",
        )
        .unwrap();
        let i = ipmi(c);
        assert_eq!((i.port, i.password.expose()), (623, "1234"));

        for (text, want) in [
            (
                "driver: redfish\naddress: h\nusername: a\npassword: b\nadress: x\n",
                "unknown field `adress`",
            ),
            (
                "driver: redfish\naddress: h\nusername: a\npassword: b\nport: 1\n",
                "key `port`: applies to the ipmi driver only",
            ),
            (
                "driver: ipmi\naddress: h\nusername: a\npassword: b\nverify_tls: false\n",
                "key `verify_tls`: applies to the redfish driver only",
            ),
            (
                "driver: idrac\naddress: h\nusername: a\npassword: b\n",
                "unknown BMC driver \"idrac\"",
            ),
            (
                "driver: ipmi\nusername: a\npassword: b\n",
                "missing field `address`",
            ),
            (
                "driver: ipmi\naddress: h\nusername: a\npassword: 2.71828\n",
                "the password must be a string",
            ),
        ] {
            let e = serde_yaml_ng::from_str::<BmcConfig>(text)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{e} lacks {want}");
            assert!(!e.contains("2.71828"), "{e}");
        }
    }
}
