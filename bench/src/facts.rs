//! The facts a simulated agent reports. By default only its host name; with `--facts-file`, a real
//! machine's facts (as `plinth-agent facts` prints them) made the agent's own: its host name, and every
//! MAC address, serial number, UUID and WWN changed by its number, so that what the controller stores,
//! holds and compresses is a fleet's facts, not one machine's repeated.

use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::path::Path;

/// Reads a facts file (one JSON object).
pub fn read_template(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the facts file {}", path.display()))?;
    let facts: Value = serde_json::from_str(&text)
        .with_context(|| format!("the facts file {} is not JSON", path.display()))?;
    anyhow::ensure!(
        facts.is_object(),
        "the facts file {} holds no JSON object",
        path.display()
    );
    Ok(facts)
}

/// Agent `seed`'s facts: `template` made its own, or only its host name without one.
pub fn for_agent(template: Option<&Value>, seed: usize) -> Value {
    let hostname = format!("sim-{seed}");
    let Some(template) = template else {
        return json!({ "hostname": hostname });
    };
    let mut facts = template.clone();
    own(&mut facts, seed);
    facts["hostname"] = json!(hostname);
    facts
}

/// Changes every identifying string below `value` by `seed`.
fn own(value: &mut Value, seed: usize) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                match (key.as_str(), v.as_str()) {
                    ("mac", Some(mac)) => *v = json!(own_mac(mac, seed)),
                    (
                        "product_serial" | "board_serial" | "serial" | "wwn" | "wwn_with_extension",
                        Some(s),
                    ) => *v = json!(format!("{s}-{seed:08x}")),
                    ("product_uuid", Some(_)) => {
                        *v = json!(format!("00000000-0000-4000-8000-{seed:012x}"))
                    }
                    _ => own(v, seed),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| own(v, seed)),
        _ => {}
    }
}

/// A MAC address with its last three octets the agent's number.
fn own_mac(mac: &str, seed: usize) -> String {
    let octets: Vec<&str> = mac.split(':').collect();
    if octets.len() != 6 {
        return format!("{mac}-{seed}");
    }
    let n = seed as u32;
    format!(
        "{}:{}:{}:{:02x}:{:02x}:{:02x}",
        octets[0],
        octets[1],
        octets[2],
        (n >> 16) & 0xff,
        (n >> 8) & 0xff,
        n & 0xff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_agent_reports_the_machine_as_its_own() {
        let template = json!({
            "hostname": "vm", "dmi": {"product_serial": "ABC", "product_uuid": "x", "system_vendor": "QEMU"},
            "disks": [{"name": "vda", "serial": "S1", "wwn": null}],
            "nics": [{"name": "eth0", "mac": "02:fc:00:00:00:01"}, {"name": "lo", "mac": null}]
        });
        let a = for_agent(Some(&template), 1);
        let b = for_agent(Some(&template), 70_000);
        assert_eq!(a["hostname"], "sim-1");
        assert_eq!(b["nics"][0]["mac"], "02:fc:00:01:11:70");
        assert_ne!(a["dmi"]["product_serial"], b["dmi"]["product_serial"]);
        assert_ne!(a["dmi"]["product_uuid"], b["dmi"]["product_uuid"]);
        assert_ne!(a["disks"][0]["serial"], b["disks"][0]["serial"]);
        assert_eq!(
            a["dmi"]["system_vendor"], "QEMU",
            "what is not an identity stays"
        );
        assert_eq!(a["nics"][1]["mac"], Value::Null);
        assert_eq!(for_agent(None, 3), json!({"hostname": "sim-3"}));
    }
}
