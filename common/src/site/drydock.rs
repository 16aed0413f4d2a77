//! Drydock's view of a rendered site: `drydock/BaremetalNode/v1` documents compiled with their host
//! profiles (`drydock/HostProfile/v1`, each inheriting from the profile its `host_profile` names) and
//! their hardware profile (`drydock/HardwareProfile/v1`), as Drydock's ingester and its node model
//! compile them. The result is what Plinth enrols: each node's name, tags, labels (Drydock's
//! `owner_data`, which Shipyard's `node_labels` select), rack, boot MACs, out-of-band controller and
//! expected firmware.
//!
//! Inheritance is Drydock's: a simple field (`hardware_profile`, `oob.type`, `rack`, `image`,
//! `kernel`, `primary_network`) is the child's when it sets one, else the parent's (`!` clears it);
//! `tags` are the child's then the parent's not already there (a child's `!tag` drops the parent's);
//! `owner_data`, the other `oob` parameters and `kernel_params` are the parent's mapping with the
//! child's keys over it (a child's `!key` drops the parent's); interfaces merge by name (a child's
//! interface takes its parent's `device_link` when it gives none, and merges `slaves` and
//! `networks` as lists). As in Drydock's ingester, an interface whose value is null is left out of
//! the document's own interfaces and does not remove its parent's.

use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};

const NODE: &str = "drydock/BaremetalNode/v1";
const HOST_PROFILE: &str = "drydock/HostProfile/v1";
const HARDWARE_PROFILE: &str = "drydock/HardwareProfile/v1";
const REGION: &str = "drydock/Region/v1";

/// What keeps a site's nodes from compiling, as Drydock would refuse them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DrydockError {
    /// A node or profile names a host profile the site does not have.
    #[error("{schema} {name:?}: its host_profile {parent:?} is not in the site")]
    MissingHostProfile {
        /// The document's schema.
        schema: &'static str,
        /// The document naming it.
        name: String,
        /// The profile named.
        parent: String,
    },
    /// Host profiles that inherit from one another in a circle.
    #[error("drydock/HostProfile/v1: the host profiles {0} inherit from one another in a circle")]
    ProfileCycle(String),
    /// A node without a hardware profile, or naming one the site does not have.
    #[error("drydock/BaremetalNode/v1 {node:?}: {message}")]
    HardwareProfile {
        /// The node.
        node: String,
        /// What is wrong.
        message: String,
    },
    /// A node with no address.
    #[error("drydock/BaremetalNode/v1 {0:?}: a BaremetalNode needs at least 1 assigned address (`addressing`)")]
    NoAddress(String),
    /// A field of the wrong kind.
    #[error("{schema} {name:?}: {field}: {message}")]
    Field {
        /// The document's schema.
        schema: &'static str,
        /// The document.
        name: String,
        /// The field's path in `data`.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// Two documents of one schema with one name.
    #[error("{schema} {name:?} is given twice")]
    Duplicate {
        /// The schema.
        schema: &'static str,
        /// The name.
        name: String,
    },
}

/// A node's out-of-band controller, as its compiled `oob` says.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Oob {
    /// `ipmi`, `redfish`, `libvirt`, `manual`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// The node's address on the `oob.network` network (its `addressing` entry for it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// `oob.account`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// `oob.credential` (a secret: substituted from a `deckhand/Passphrase` on real sites).
    #[serde(skip)]
    pub credential: Option<String>,
    /// The other parameters (`network`, `libvirt_uri`, ...).
    pub parameters: Map<String, Value>,
}

/// One interface of a compiled node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interface {
    /// Its device name (`bond0`, `pxe`).
    pub name: String,
    /// The network link it uses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_link: Option<String>,
    /// Its hardware slaves: device aliases, names or MACs.
    pub slaves: Vec<String>,
    /// The networks it carries.
    pub networks: Vec<String>,
}

/// A `drydock/BaremetalNode/v1` compiled with its profiles.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SiteNode {
    /// The document's name: the node's host name.
    pub name: String,
    /// The host profile it names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_profile: Option<String>,
    /// The hardware profile it compiles to.
    pub hardware_profile: String,
    /// Tags (`metadata.tags`, inherited).
    pub tags: Vec<String>,
    /// Drydock's `owner_data` (inherited), which Shipyard's `node_labels` match.
    pub labels: BTreeMap<String, String>,
    /// The rack (`metadata.rack`, inherited).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rack: Option<String>,
    /// MACs of its boot interfaces: `metadata.boot_mac`, and interface slaves written as MACs,
    /// lowercase with colons.
    pub macs: Vec<String>,
    /// Its addresses by network (`None`: DHCP).
    pub addressing: Vec<(String, Option<String>)>,
    /// Its out-of-band controller.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oob: Option<Oob>,
    /// The firmware the hardware profile expects (`bios` or `uefi`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot_mode: Option<String>,
    /// The hardware profile's vendor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// `platform.image`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// `platform.kernel`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The network its default route is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary_network: Option<String>,
    /// Its interfaces, compiled.
    pub interfaces: Vec<Interface>,
}

/// The site's region (`drydock/Region/v1`), when it has one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Region {
    /// Its name.
    pub name: String,
    /// The SSH keys Drydock puts on every node.
    pub authorized_keys: Vec<String>,
}

/// A site's nodes and region, compiled.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Site {
    /// Every `drydock/BaremetalNode/v1`, in document order.
    pub nodes: Vec<SiteNode>,
    /// The region.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<Region>,
}

/// The host-level fields a node or a profile sets itself, before inheritance.
#[derive(Debug, Clone, Default)]
struct HostFields {
    parent: Option<String>,
    hardware_profile: Option<String>,
    oob_type: Option<String>,
    oob: Option<Map<String, Value>>,
    rack: Option<String>,
    image: Option<String>,
    kernel: Option<String>,
    primary_network: Option<String>,
    tags: Option<Vec<String>>,
    owner_data: Option<Map<String, Value>>,
    interfaces: Option<Vec<Interface>>,
}

fn text_at(data: &Value, path: &[&str]) -> Option<String> {
    let mut at = data;
    for key in path {
        at = at.get(key)?;
    }
    match at {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn strings(value: Option<&Value>) -> Option<Vec<String>> {
    value.and_then(Value::as_array).map(|items| {
        items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    })
}

impl HostFields {
    /// Reads the fields as Drydock's ingester does (`process_host_common_fields`).
    fn read(data: &Value) -> HostFields {
        let oob = data.get("oob").and_then(Value::as_object);
        let interfaces = data.get("interfaces").and_then(Value::as_object).map(|m| {
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(name, v)| Interface {
                    name: name.clone(),
                    device_link: text_at(v, &["device_link"]),
                    slaves: strings(v.get("slaves")).unwrap_or_default(),
                    networks: strings(v.get("networks")).unwrap_or_default(),
                })
                .collect()
        });
        HostFields {
            parent: text_at(data, &["host_profile"]),
            hardware_profile: text_at(data, &["hardware_profile"]),
            oob_type: oob
                .and_then(|o| o.get("type"))
                .and_then(|t| t.as_str().map(str::to_string)),
            oob: oob.map(|o| {
                o.iter()
                    .filter(|(k, _)| k.as_str() != "type")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            }),
            rack: text_at(data, &["metadata", "rack"]),
            image: text_at(data, &["platform", "image"]),
            kernel: text_at(data, &["platform", "kernel"]),
            primary_network: text_at(data, &["primary_network"]),
            tags: strings(data.pointer("/metadata/tags")),
            owner_data: data
                .pointer("/metadata/owner_data")
                .and_then(Value::as_object)
                .cloned(),
            interfaces,
        }
    }

    /// This document's fields over `parent`'s compiled ones (Drydock's `apply_inheritance`).
    fn over(mut self, parent: &HostFields) -> HostFields {
        let field = |own: Option<String>, theirs: &Option<String>| match own {
            Some(v) if v == "!" => None,
            Some(v) => Some(v),
            None => theirs.clone(),
        };
        self.hardware_profile = field(self.hardware_profile, &parent.hardware_profile);
        self.oob_type = field(self.oob_type, &parent.oob_type);
        self.rack = field(self.rack, &parent.rack);
        self.image = field(self.image, &parent.image);
        self.kernel = field(self.kernel, &parent.kernel);
        self.primary_network = field(self.primary_network, &parent.primary_network);
        self.oob = merge_maps(self.oob, parent.oob.as_ref());
        self.owner_data = merge_maps(self.owner_data, parent.owner_data.as_ref());
        self.tags = merge_lists(self.tags, parent.tags.as_ref());
        self.interfaces = merge_interfaces(self.interfaces, parent.interfaces.as_ref());
        self
    }
}

/// Drydock's `merge_lists`: the child's values not starting with `!`, then the parent's not
/// dropped by the child's `!value` and not there yet.
fn merge_lists(child: Option<Vec<String>>, parent: Option<&Vec<String>>) -> Option<Vec<String>> {
    let (child, parent) = match (child, parent) {
        (None, parent) => return parent.cloned(),
        (child, None) => return child,
        (Some(c), Some(p)) => (c, p),
    };
    let mut out: Vec<String> = child
        .iter()
        .filter(|x| !x.starts_with('!'))
        .cloned()
        .collect();
    for x in parent {
        if !child.contains(&format!("!{x}")) && !out.contains(x) {
            out.push(x.clone());
        }
    }
    Some(out)
}

/// Drydock's `merge_dicts`: the parent's keys the child does not drop with `!key`, then the
/// child's keys not starting with `!` over them.
fn merge_maps(
    child: Option<Map<String, Value>>,
    parent: Option<&Map<String, Value>>,
) -> Option<Map<String, Value>> {
    let (child, parent) = match (child, parent) {
        (None, parent) => return parent.cloned(),
        (child, None) => return child,
        (Some(c), Some(p)) => (c, p),
    };
    let mut out: Map<String, Value> = parent
        .iter()
        .filter(|(k, _)| !child.contains_key(&format!("!{k}")))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, v) in child {
        if !k.starts_with('!') {
            out.insert(k, v);
        }
    }
    Some(out)
}

/// Drydock's `HostInterface.merge_lists`: the parent's interfaces (merged with the child's of the
/// same name, dropped by a child's `!name`), then the child's own.
fn merge_interfaces(
    child: Option<Vec<Interface>>,
    parent: Option<&Vec<Interface>>,
) -> Option<Vec<Interface>> {
    let (child, parent) = match (child, parent) {
        (None, parent) => return parent.cloned(),
        (child, None) => return child,
        (Some(c), Some(p)) => (c, p),
    };
    if child.is_empty() {
        return Some(parent.clone());
    }
    let mut out = Vec::new();
    for p in parent {
        if child.iter().any(|c| c.name == format!("!{}", p.name)) {
            continue;
        }
        match child.iter().find(|c| c.name == p.name) {
            Some(c) => out.push(Interface {
                name: c.name.clone(),
                device_link: match &c.device_link {
                    Some(l) if l == "!" => None,
                    Some(l) => Some(l.clone()),
                    None => p.device_link.clone(),
                },
                slaves: merge_lists(Some(c.slaves.clone()), Some(&p.slaves)).unwrap_or_default(),
                networks: merge_lists(Some(c.networks.clone()), Some(&p.networks))
                    .unwrap_or_default(),
            }),
            None => out.push(p.clone()),
        }
    }
    for c in &child {
        if !c.name.starts_with('!') && !parent.iter().any(|p| p.name == c.name) {
            out.push(c.clone());
        }
    }
    Some(out)
}

/// A MAC written in any usual form, as lowercase with colons; `None` when it is not one.
fn as_mac(text: &str) -> Option<String> {
    let hex: String = text
        .chars()
        .filter(|c| !matches!(c, ':' | '-' | '.'))
        .collect();
    let separated = text.len() != hex.len();
    if hex.len() != 12 || !hex.chars().all(|c| c.is_ascii_hexdigit()) || !separated {
        return None;
    }
    let lower = hex.to_ascii_lowercase();
    Some(
        (0..6)
            .map(|i| &lower[i * 2..i * 2 + 2])
            .collect::<Vec<_>>()
            .join(":"),
    )
}

fn name_of(doc: &Value) -> String {
    text_at(doc, &["metadata", "name"]).unwrap_or_default()
}

/// Compiles every `drydock/BaremetalNode/v1` of `documents` (rendered documents: `schema`,
/// `metadata.name`, `data`) as Drydock does.
pub fn compile(documents: &[Value]) -> Result<Site, DrydockError> {
    let of = |schema: &'static str| -> Result<HashMap<String, &Value>, DrydockError> {
        let mut out = HashMap::new();
        for doc in documents
            .iter()
            .filter(|d| d.get("schema").and_then(Value::as_str) == Some(schema))
        {
            let name = name_of(doc);
            if out
                .insert(name.clone(), doc.get("data").unwrap_or(&Value::Null))
                .is_some()
            {
                return Err(DrydockError::Duplicate { schema, name });
            }
        }
        Ok(out)
    };
    let profiles = of(HOST_PROFILE)?;
    let hardware = of(HARDWARE_PROFILE)?;
    let mut compiled: HashMap<String, HostFields> = HashMap::new();
    let mut names: Vec<&String> = profiles.keys().collect();
    names.sort();
    for name in names {
        compile_profile(name, &profiles, &mut compiled, &mut Vec::new())?;
    }
    let mut nodes = Vec::new();
    for doc in documents
        .iter()
        .filter(|d| d.get("schema").and_then(Value::as_str) == Some(NODE))
    {
        let name = name_of(doc);
        let data = doc.get("data").unwrap_or(&Value::Null);
        nodes.push(compile_node(&name, data, &compiled, &hardware)?);
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = nodes.iter().find(|n| !seen.insert(n.name.clone())) {
        return Err(DrydockError::Duplicate {
            schema: NODE,
            name: dup.name.clone(),
        });
    }
    let region = documents
        .iter()
        .find(|d| d.get("schema").and_then(Value::as_str) == Some(REGION))
        .map(|doc| Region {
            name: name_of(doc),
            authorized_keys: strings(doc.pointer("/data/authorized_keys")).unwrap_or_default(),
        });
    Ok(Site { nodes, region })
}

fn compile_profile(
    name: &str,
    profiles: &HashMap<String, &Value>,
    compiled: &mut HashMap<String, HostFields>,
    path: &mut Vec<String>,
) -> Result<HostFields, DrydockError> {
    if let Some(done) = compiled.get(name) {
        return Ok(done.clone());
    }
    if path.iter().any(|p| p == name) {
        path.push(name.to_string());
        return Err(DrydockError::ProfileCycle(path.join(" → ")));
    }
    let data = profiles.get(name).copied().unwrap_or(&Value::Null);
    let own = HostFields::read(data);
    path.push(name.to_string());
    let result = match own.parent.clone() {
        None => own,
        Some(parent) => {
            if !profiles.contains_key(&parent) {
                return Err(DrydockError::MissingHostProfile {
                    schema: HOST_PROFILE,
                    name: name.to_string(),
                    parent,
                });
            }
            let theirs = compile_profile(&parent, profiles, compiled, path)?;
            own.over(&theirs)
        }
    };
    path.pop();
    compiled.insert(name.to_string(), result.clone());
    Ok(result)
}

fn compile_node(
    name: &str,
    data: &Value,
    profiles: &HashMap<String, HostFields>,
    hardware: &HashMap<String, &Value>,
) -> Result<SiteNode, DrydockError> {
    let own = HostFields::read(data);
    let host_profile = own.parent.clone();
    let fields = match &host_profile {
        None => own,
        Some(parent) => {
            let theirs = profiles
                .get(parent)
                .ok_or_else(|| DrydockError::MissingHostProfile {
                    schema: NODE,
                    name: name.to_string(),
                    parent: parent.clone(),
                })?;
            own.over(theirs)
        }
    };
    let mut addressing = Vec::new();
    for (i, entry) in data
        .get("addressing")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let network = text_at(entry, &["network"]).ok_or_else(|| DrydockError::Field {
            schema: NODE,
            name: name.to_string(),
            field: format!("addressing[{i}].network"),
            message: "a network name is required".into(),
        })?;
        match text_at(entry, &["address"]).as_deref() {
            Some("dhcp") => addressing.push((network, None)),
            Some(a) if !a.is_empty() => addressing.push((network, Some(a.to_string()))),
            _ => {}
        }
    }
    if addressing.is_empty() {
        return Err(DrydockError::NoAddress(name.to_string()));
    }
    let hardware_profile =
        fields
            .hardware_profile
            .clone()
            .ok_or_else(|| DrydockError::HardwareProfile {
                node: name.to_string(),
                message:
                    "hardware profile not set (neither the node nor its host profiles name one)"
                        .into(),
            })?;
    let hw = hardware
        .get(&hardware_profile)
        .ok_or_else(|| DrydockError::HardwareProfile {
            node: name.to_string(),
            message: format!("its hardware profile {hardware_profile:?} is not in the site"),
        })?;
    let interfaces = fields.interfaces.clone().unwrap_or_default();
    let mut macs: Vec<String> = text_at(data, &["metadata", "boot_mac"])
        .and_then(|m| as_mac(&m))
        .into_iter()
        .collect();
    for mac in interfaces
        .iter()
        .flat_map(|i| &i.slaves)
        .filter_map(|s| as_mac(s))
    {
        if !macs.contains(&mac) {
            macs.push(mac);
        }
    }
    let oob = fields.oob_type.clone().map(|kind| {
        let mut parameters = fields.oob.clone().unwrap_or_default();
        let take = |p: &mut Map<String, Value>, key: &str| {
            p.remove(key).and_then(|v| v.as_str().map(str::to_string))
        };
        let account = take(&mut parameters, "account");
        let credential = take(&mut parameters, "credential");
        let address = parameters
            .get("network")
            .and_then(Value::as_str)
            .and_then(|net| addressing.iter().find(|(n, _)| n == net))
            .and_then(|(_, a)| a.clone());
        Oob {
            kind,
            address,
            account,
            credential,
            parameters,
        }
    });
    let labels = fields
        .owner_data
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| {
            let text = match v {
                Value::String(s) => s,
                other => other.to_string(),
            };
            (k, text)
        })
        .collect();
    Ok(SiteNode {
        name: name.to_string(),
        host_profile,
        hardware_profile,
        tags: fields.tags.clone().unwrap_or_default(),
        labels,
        rack: fields.rack.clone(),
        macs,
        addressing,
        oob,
        boot_mode: text_at(hw, &["boot_mode"]),
        vendor: text_at(hw, &["vendor"]),
        image: fields.image.clone(),
        kernel: fields.kernel.clone(),
        primary_network: fields.primary_network.clone(),
        interfaces,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(schema: &str, name: &str, data: Value) -> Value {
        json!({"schema": schema, "metadata": {"name": name}, "data": data})
    }

    #[test]
    fn a_node_inherits_through_two_profiles_as_drydock_compiles_it() {
        let docs = [
            doc(
                HOST_PROFILE,
                "base",
                json!({
                    "hardware_profile": "generic",
                    "oob": {"type": "ipmi", "network": "oob", "account": "root"},
                    "metadata": {"tags": ["a", "b"], "owner_data": {"x": "1", "y": "2"}, "rack": "r0"},
                    "interfaces": {"pxe": {"device_link": "pxe", "slaves": ["nic0"], "networks": ["pxe"]}}
                }),
            ),
            doc(
                HOST_PROFILE,
                "cp",
                json!({
                    "host_profile": "base",
                    "oob": {"credential": "s3cret"},
                    "metadata": {"tags": ["!a", "c"], "owner_data": {"!y": "", "z": "3"}},
                    "interfaces": {"pxe": {"slaves": ["52-54-00-AA-BB-01"]}, "bond0": {"networks": ["oam"]}}
                }),
            ),
            doc(
                HARDWARE_PROFILE,
                "generic",
                json!({"vendor": "Dell", "boot_mode": "uefi"}),
            ),
            doc(
                NODE,
                "n1",
                json!({
                    "host_profile": "cp",
                    "addressing": [{"network": "oob", "address": "10.0.0.5"}, {"network": "pxe", "address": "dhcp"}],
                    "metadata": {"rack": "r7", "boot_mac": "52:54:00:aa:bb:02"}
                }),
            ),
        ];
        let site = compile(&docs).unwrap();
        let n = &site.nodes[0];
        assert_eq!(n.tags, ["c", "b"]);
        assert_eq!(
            n.labels,
            BTreeMap::from([("x".into(), "1".into()), ("z".into(), "3".into())])
        );
        assert_eq!(n.rack.as_deref(), Some("r7"));
        assert_eq!(n.macs, ["52:54:00:aa:bb:02", "52:54:00:aa:bb:01"]);
        let oob = n.oob.as_ref().unwrap();
        assert_eq!(
            (oob.kind.as_str(), oob.address.as_deref()),
            ("ipmi", Some("10.0.0.5"))
        );
        assert_eq!(oob.account.as_deref(), Some("root"));
        assert_eq!(oob.credential.as_deref(), Some("s3cret"));
        assert_eq!(n.boot_mode.as_deref(), Some("uefi"));
        assert_eq!(n.interfaces[0].name, "pxe");
        assert_eq!(n.interfaces[0].device_link.as_deref(), Some("pxe"));
        assert_eq!(n.interfaces[0].slaves, ["52-54-00-AA-BB-01", "nic0"]);
        assert_eq!(n.interfaces[1].name, "bond0");
        assert_eq!(n.addressing[1], ("pxe".to_string(), None));
    }

    #[test]
    fn what_drydock_refuses_is_refused_naming_the_document() {
        let hw = doc(HARDWARE_PROFILE, "generic", json!({}));
        let node = |data: Value| doc(NODE, "n1", data);
        let cases = [
            (
                vec![node(
                    json!({"host_profile": "nope", "addressing": [{"network": "a", "address": "1.2.3.4"}]}),
                )],
                "host_profile \"nope\" is not in the site",
            ),
            (
                vec![hw.clone(), node(json!({"hardware_profile": "generic"}))],
                "at least 1 assigned address",
            ),
            (
                vec![node(
                    json!({"addressing": [{"network": "a", "address": "1.2.3.4"}]}),
                )],
                "hardware profile not set",
            ),
            (
                vec![node(
                    json!({"hardware_profile": "other", "addressing": [{"network": "a", "address": "1.2.3.4"}]}),
                )],
                "\"other\" is not in the site",
            ),
            (
                vec![
                    doc(HOST_PROFILE, "p", json!({"host_profile": "q"})),
                    doc(HOST_PROFILE, "q", json!({"host_profile": "p"})),
                ],
                "in a circle",
            ),
        ];
        for (docs, expected) in cases {
            let e = compile(&docs).unwrap_err().to_string();
            assert!(e.contains(expected), "{e}");
        }
    }

    #[test]
    fn macs_are_read_in_their_usual_forms_and_nothing_else_is_one() {
        assert_eq!(
            as_mac("52:54:00:AA:bb:01").as_deref(),
            Some("52:54:00:aa:bb:01")
        );
        assert_eq!(
            as_mac("5254.00aa.bb01").as_deref(),
            Some("52:54:00:aa:bb:01")
        );
        assert_eq!(as_mac("pxe_nic01"), None);
        assert_eq!(as_mac("0000:01:00.0"), None);
        assert_eq!(as_mac("525400aabb01"), None);
    }
}
