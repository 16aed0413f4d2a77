//! Drydock's compiled nodes as Plinth's enrollment document (`nodes:`, as `plinthctl nodes enroll`
//! takes it): the name, the boot MACs, tags, labels (`owner_data`), rack, the firmware the hardware
//! profile expects, and the out-of-band controller with its credential. A node is known to its agent
//! by its MACs, else by its BMC's address (which the agent reads in band); one with neither is left
//! out, with the reason.

use super::drydock::{Site, SiteNode};
use serde_json::{json, Map, Value};

/// A node the enrollment leaves out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotEnrolled {
    /// The node.
    pub name: String,
    /// Why, in a sentence.
    pub reason: String,
}

/// The BMC of a node, as the enrollment document writes it, when Plinth can drive it.
fn bmc(node: &SiteNode) -> Result<Option<Value>, String> {
    let Some(oob) = &node.oob else {
        return Ok(None);
    };
    let driver = match oob.kind.as_str() {
        "ipmi" => "ipmi",
        "redfish" => "redfish",
        // libvirt, manual: nothing Plinth drives.
        _ => return Ok(None),
    };
    let address = oob.address.as_ref().ok_or_else(|| {
        format!(
            "its oob network {} has no static address in `addressing`",
            oob.parameters
                .get("network")
                .map(Value::to_string)
                .unwrap_or_else(|| "(none named)".into())
        )
    })?;
    let mut out = Map::new();
    out.insert("driver".into(), json!(driver));
    out.insert(
        "address".into(),
        json!(if driver == "redfish" && !address.contains("://") {
            format!("https://{address}")
        } else {
            address.clone()
        }),
    );
    if let Some(account) = &oob.account {
        out.insert("username".into(), json!(account));
    }
    if let Some(credential) = &oob.credential {
        out.insert("password".into(), json!(credential));
    }
    Ok(Some(Value::Object(out)))
}

/// The enrollment document of `site`'s nodes, and the nodes it leaves out.
pub fn enrollment_document(site: &Site) -> (Value, Vec<NotEnrolled>) {
    let mut nodes = Vec::new();
    let mut left = Vec::new();
    for node in &site.nodes {
        let bmc = match bmc(node) {
            Ok(b) => b,
            Err(reason) => {
                left.push(NotEnrolled {
                    name: node.name.clone(),
                    reason,
                });
                continue;
            }
        };
        if node.macs.is_empty() && bmc.is_none() {
            left.push(NotEnrolled {
                name: node.name.clone(),
                reason: "it has no boot MAC (`metadata.boot_mac`, or an interface slave written as \
                         a MAC) and no IPMI or Redfish controller whose address its agent could name"
                    .into(),
            });
            continue;
        }
        let mut entry = Map::new();
        entry.insert("name".into(), json!(node.name));
        if !node.macs.is_empty() {
            entry.insert("macs".into(), json!(node.macs));
        }
        if !node.tags.is_empty() {
            entry.insert("tags".into(), json!(node.tags));
        }
        if !node.labels.is_empty() {
            entry.insert("labels".into(), json!(node.labels));
        }
        if let Some(rack) = &node.rack {
            entry.insert("rack".into(), json!(rack));
        }
        // Drydock's `bios` is Plinth's `legacy`.
        let mode = match node.boot_mode.as_deref() {
            Some("bios") => Some("legacy"),
            Some("uefi") => Some("uefi"),
            _ => None,
        };
        if let Some(mode) = mode {
            entry.insert("profile".into(), json!({ "boot_mode": mode }));
        }
        if let Some(bmc) = bmc {
            entry.insert("bmc".into(), bmc);
        }
        nodes.push(Value::Object(entry));
    }
    (json!({ "nodes": nodes }), left)
}
