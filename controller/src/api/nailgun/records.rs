//! Plinth's records in Nailgun's shapes: clusters, nodes, releases, plugins, graphs and transactions.

use crate::store::{
    ClusterRecord, DeploymentRecord, DeploymentStatus, GraphOwner, GraphRecord, NodeRecord,
    PluginRecord, ReleaseRecord,
};
use serde_json::{json, Map, Value};

/// Nailgun's name of a graph owner's model (`relations[].model`) and its collection in paths.
pub fn owner_model(owner: GraphOwner) -> &'static str {
    match owner {
        GraphOwner::Release(_) => "release",
        GraphOwner::Plugin(_) => "plugin",
        GraphOwner::Cluster(_) => "cluster",
    }
}

/// A cluster as Nailgun's `GET /clusters/`.
pub fn cluster(c: &ClusterRecord) -> Value {
    let status = serde_json::to_value(c.data.status).unwrap_or(Value::Null);
    json!({
        "id": c.id,
        "name": c.name,
        "status": status,
        "release_id": c.release_id,
        "fuel_version": concat!("plinth-", env!("CARGO_PKG_VERSION")),
        "is_customized": false,
        "changes": [],
        "mode": "ha_compact",
        "net_provider": null,
        "pending_release_id": null,
        "ui_settings": {},
        "components": [],
        "is_locked": status == "deployment",
    })
}

/// The first address of an interface, without its prefix length.
fn first_address(nic: &Value) -> Option<(String, Option<String>)> {
    let cidr = nic.get("addresses")?.as_array()?.first()?.as_str()?;
    let (ip, prefix) = match cidr.split_once('/') {
        Some((ip, p)) => (ip.to_string(), Some(p.to_string())),
        None => (cidr.to_string(), None),
    };
    Some((ip, prefix))
}

/// A node's `meta` (Nailgun's hardware inventory) from the facts its agent reported.
pub fn meta(facts: &Value) -> Value {
    let nics = facts.get("nics").and_then(Value::as_array);
    let interfaces: Vec<Value> = nics
        .into_iter()
        .flatten()
        .filter(|n| !n.get("virtual_device").and_then(Value::as_bool).unwrap_or(false))
        .map(|n| {
            let addr = first_address(n);
            json!({
                "name": n.get("name"),
                "mac": n.get("mac"),
                "ip": addr.as_ref().map(|a| a.0.clone()),
                "prefix": addr.and_then(|a| a.1),
                "driver": n.get("driver"),
                "current_speed": n.get("speed_mbps"),
                "mtu": n.get("mtu"),
                "state": n.get("link_up").and_then(Value::as_bool).map(|up| if up { "up" } else { "down" }),
                "pxe": n.get("pxe").and_then(Value::as_bool).unwrap_or(false),
            })
        })
        .collect();
    let dmi = facts.get("dmi").cloned().unwrap_or(Value::Null);
    json!({
        "system": {
            "manufacturer": dmi.get("system_vendor"),
            "product": dmi.get("product_name"),
            "fqdn": facts.get("hostname"),
            "kernel": facts.get("kernel"),
            "os": facts.get("os"),
            "dmi": dmi,
        },
        "interfaces": interfaces,
        "disks": facts.get("disks").cloned().unwrap_or(json!([])),
        "cpu": facts.get("cpu").cloned().unwrap_or(json!({})),
        "memory": facts.get("memory").cloned().unwrap_or(json!({})),
        "numa_topology": {},
    })
}

/// A node as Nailgun's `GET /nodes/`: the facts give `meta`, `ip`, `mac`, `manufacturer`, `os_platform`.
pub fn node(n: &NodeRecord, online: bool, effective_tags: &[String]) -> Value {
    let meta = meta(&n.facts);
    let boot = meta["interfaces"]
        .as_array()
        .and_then(|all| {
            all.iter()
                .find(|i| i["pxe"] == json!(true))
                .or_else(|| all.iter().find(|i| !i["ip"].is_null()))
                .or_else(|| all.first())
        })
        .cloned()
        .unwrap_or(Value::Null);
    let hostname = n
        .facts
        .get("hostname")
        .and_then(Value::as_str)
        .unwrap_or(&n.name)
        .to_string();
    let progress = match n.status.as_str() {
        "ready" => 100,
        _ => 0,
    };
    json!({
        "id": n.id,
        "uid": n.id.to_string(),
        "name": n.name,
        "hostname": hostname,
        "fqdn": hostname,
        "status": n.status.as_str(),
        "online": online,
        "cluster": n.cluster_id,
        "roles": n.roles,
        "pending_roles": n.pending_roles,
        "tags": effective_tags,
        "primary_tags": n.model.primary_tags,
        "pending_addition": n.model.pending_addition,
        "pending_deletion": n.model.pending_deletion,
        "error_type": n.model.error_type,
        "error_msg": null,
        "progress": progress,
        "ip": boot.get("ip"),
        "mac": boot.get("mac"),
        "manufacturer": meta["system"]["manufacturer"],
        "platform_name": meta["system"]["product"],
        "os_platform": n.facts.get("os").and_then(|o| o.get("id")),
        "kernel_params": null,
        "group_id": null,
        "labels": n.labels,
        "admission": n.admission,
        "meta": meta,
    })
}

/// A release as Nailgun's `GET /releases/`.
pub fn release(r: &ReleaseRecord) -> Value {
    let roles: Vec<&String> = r
        .data
        .get("roles_metadata")
        .and_then(Value::as_object)
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    let os = r
        .data
        .get("operating_system")
        .cloned()
        .unwrap_or(json!("ubuntu"));
    json!({
        "id": r.id,
        "name": r.name,
        "version": r.version,
        "state": "available",
        "operating_system": os,
        "description": r.data.get("description"),
        "roles": roles,
        "is_deployable": true,
    })
}

/// A plugin as Nailgun's `GET /plugins/`: `releases`, `package_version` and the rest from its metadata.
pub fn plugin(p: &PluginRecord) -> Value {
    let md = p.data.get("metadata").cloned().unwrap_or(Value::Null);
    let field = |k: &str| md.get(k).cloned().unwrap_or(Value::Null);
    json!({
        "id": p.id,
        "name": p.name,
        "version": p.version,
        "title": md.get("title").cloned().unwrap_or(json!(p.name)),
        "description": field("description"),
        "package_version": field("package_version"),
        "releases": md.get("releases").cloned().unwrap_or(json!([])),
        "fuel_version": field("fuel_version"),
        "authors": field("authors"),
        "licenses": field("licenses"),
        "homepage": field("homepage"),
        "groups": field("groups"),
        "is_hotpluggable": md.get("is_hotpluggable").cloned().unwrap_or(json!(false)),
    })
}

/// A graph as Nailgun's `GET /graphs/`, with its `relations`.
pub fn graph(g: &GraphRecord) -> Value {
    let mut map = Map::new();
    map.insert("id".into(), json!(g.id));
    map.insert(
        "name".into(),
        json!(g.body.name.clone().unwrap_or_else(|| g.graph_type.clone())),
    );
    map.insert("tasks".into(), Value::Array(g.body.tasks.clone()));
    map.insert("node_filter".into(), json!(g.body.node_filter));
    map.insert(
        "relations".into(),
        json!([{
            "type": g.graph_type,
            "model": owner_model(g.owner),
            "model_id": g.owner.id(),
        }]),
    );
    Value::Object(map)
}

/// Nailgun's status of a transaction.
pub fn transaction_status(s: DeploymentStatus) -> &'static str {
    match s {
        DeploymentStatus::Running => "running",
        DeploymentStatus::Success | DeploymentStatus::SuccessWithFailures => "ready",
        DeploymentStatus::Failed | DeploymentStatus::Cancelled => "error",
    }
}

/// Milliseconds since the epoch as Nailgun writes a time: `YYYY-MM-DDTHH:MM:SS` (UTC); `null` out of
/// range.
pub fn iso_time(ms: i64) -> Value {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| Value::String(t.format("%Y-%m-%dT%H:%M:%S").to_string()))
        .unwrap_or(Value::Null)
}

/// A deployment as Nailgun's transaction (`GET /transactions/`).
pub fn transaction(d: &DeploymentRecord) -> Value {
    let status = transaction_status(d.status);
    let message = match d.status {
        DeploymentStatus::Running => None,
        DeploymentStatus::Success => Some("Deployment finished successfully".to_string()),
        DeploymentStatus::SuccessWithFailures => {
            Some("Deployment finished; some nodes failed within the tolerated limits".to_string())
        }
        DeploymentStatus::Failed => Some("Deployment failed".to_string()),
        DeploymentStatus::Cancelled => Some("Deployment was stopped".to_string()),
    };
    let noop = d
        .options
        .get("noop")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let force = d
        .options
        .get("force")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    json!({
        "id": d.id,
        "uuid": format!("plinth-deployment-{}", d.id),
        "name": "deployment",
        "status": status,
        "progress": if d.status == DeploymentStatus::Running { 0 } else { 100 },
        "message": message,
        "cluster": d.cluster_id,
        "graph_type": d.graph_type,
        "dry_run": false,
        "noop_run": noop,
        "force": force,
        "parent_id": null,
        "result": {"status": d.status.as_str(), "nodes": d.node_ids},
        "time_start": iso_time(d.created_at_ms),
        "time_end": d.finished_at_ms.map(iso_time),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_read_as_utc_dates() {
        assert_eq!(iso_time(0), "1970-01-01T00:00:00");
        assert_eq!(iso_time(1_700_000_000_000), "2023-11-14T22:13:20");
        assert_eq!(iso_time(951_782_400_000), "2000-02-29T00:00:00");
    }

    #[test]
    fn meta_takes_interfaces_from_facts_and_skips_virtual_ones() {
        let facts = json!({"hostname": "n1", "nics": [
            {"name": "lo", "virtual_device": true, "addresses": ["127.0.0.1/8"]},
            {"name": "eth0", "mac": "52:54:00:12:34:56", "addresses": ["10.20.0.5/24"], "virtual_device": false}
        ]});
        let m = meta(&facts);
        assert_eq!(m["interfaces"].as_array().unwrap().len(), 1);
        assert_eq!(m["interfaces"][0]["ip"], "10.20.0.5");
        assert_eq!(m["interfaces"][0]["prefix"], "24");
        assert_eq!(m["system"]["fqdn"], "n1");
    }
}
