//! Roles, tags and plugins over the operator API (seeds 000 and 003), with real agents as the nodes.

use plinth_e2e::*;
use serde_json::{json, Value};

fn release_body(name: &str) -> Value {
    json!({
        "name": name, "version": "1",
        "roles_metadata": {
            "controller": {"name": "Controller", "tags": ["controller", "mysql"],
                           "conflicts": ["compute"]},
            "compute": {"name": "Compute"},
            "cinder": {"name": "Cinder",
                       "restrictions": [{"condition": "settings:storage.volumes_lvm.value == false",
                                         "message": "Cinder LVM should be enabled in the environment settings."}]}
        },
        "tags_metadata": {
            "controller": {"has_primary": true},
            "mysql": {"has_primary": true}
        }
    })
}

fn names(tags: &Value) -> Vec<String> {
    tags.as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn roles_tags_and_plugins_follow_the_seeds_rules() {
    let c = Controller::start();
    let _a = Agent::start(&c, "node-a", &[]);
    let _b = Agent::start(&c, "node-b", &[]);
    let nodes = c.api.wait_nodes(2);
    let id_of = |name: &str| nodes.iter().find(|(n, _)| n == name).unwrap().1;
    let (a, b) = (id_of("node-a"), id_of("node-b"));

    // A role naming an undefined tag is refused, and nothing is created.
    let mut bad = release_body("bad");
    bad["roles_metadata"]["compute"]["tags"] = json!(["nova"]);
    let refused = c.api.send("POST", "/releases", Some(&bad));
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"nova\""),
        "{}",
        refused.body
    );
    assert_eq!(c.api.get("/releases").unwrap(), json!([]));

    // Release tags: user-defined ones are writable, role-owned ones are not.
    let release = c.api.ok("POST", "/releases", Some(&release_body("r")));
    let rid = release["id"].as_u64().unwrap();
    let tags = c.api.ok(
        "POST",
        &format!("/releases/{rid}/tags"),
        Some(&json!({"name": "swift"})),
    );
    assert!(names(&tags).contains(&"swift".to_string()));
    let dup = c.api.send(
        "POST",
        &format!("/releases/{rid}/tags"),
        Some(&json!({"name": "swift"})),
    );
    assert_eq!(dup.status, 409);
    let owned = c
        .api
        .send("DELETE", &format!("/releases/{rid}/tags/mysql"), None);
    assert_eq!(owned.status, 403, "{}", owned.body);
    assert!(owned.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("role \"controller\""));
    let modified = c.api.ok(
        "PUT",
        &format!("/releases/{rid}/tags/swift"),
        Some(&json!({"has_primary": true})),
    );
    let swift = modified
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "swift")
        .unwrap();
    assert_eq!(swift["has_primary"], true);
    c.api
        .ok("DELETE", &format!("/releases/{rid}/tags/swift"), None);

    // Role assignment: conflicts and restrictions refuse with the role's message.
    let cluster = c.api.ok(
        "POST",
        "/clusters",
        Some(&json!({"name": "env", "release_id": rid,
                     "settings": {"storage": {"volumes_lvm": {"value": false}}}})),
    );
    let cid = cluster["id"].as_u64().unwrap();
    c.api.ok(
        "PUT",
        &format!("/clusters/{cid}/nodes"),
        Some(&json!({"nodes": [{"id": a, "roles": ["controller"]}]})),
    );
    let conflict = c.api.send(
        "PUT",
        &format!("/clusters/{cid}/nodes"),
        Some(&json!({"nodes": [{"id": b, "roles": ["compute", "controller"]}]})),
    );
    assert_eq!(conflict.status, 409, "{}", conflict.body);
    assert!(conflict.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("conflicts"));
    let restricted = c.api.send(
        "PUT",
        &format!("/clusters/{cid}/nodes"),
        Some(&json!({"nodes": [{"id": b, "roles": ["cinder"]}]})),
    );
    assert_eq!(restricted.status, 409, "{}", restricted.body);
    assert!(restricted.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Cinder LVM should be enabled"));
    let b_node = c.api.get(&format!("/nodes/{b}")).unwrap();
    assert_eq!(
        b_node["cluster_id"],
        Value::Null,
        "a refused assignment changes nothing"
    );

    // Node tags: role tags come with the role; the operator removes and adds.
    let removed = c.api.ok(
        "DELETE",
        &format!("/nodes/{a}/tags"),
        Some(&json!({"tags": ["mysql"]})),
    );
    assert_eq!(removed["tags"], json!(["controller"]));
    let unknown = c.api.send(
        "POST",
        &format!("/nodes/{a}/tags"),
        Some(&json!({"tags": ["nosuch"]})),
    );
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    c.api.ok(
        "POST",
        &format!("/clusters/{cid}/tags"),
        Some(&json!({"name": "rack-a"})),
    );
    let added = c.api.ok(
        "POST",
        &format!("/nodes/{a}/tags"),
        Some(&json!({"tags": ["rack-a", "mysql:1"]})),
    );
    assert_eq!(added["tags"], json!(["controller", "mysql:1", "rack-a"]));
    let in_use = c
        .api
        .send("DELETE", &format!("/clusters/{cid}/tags/rack-a"), None);
    assert_eq!(in_use.status, 409, "{}", in_use.body);
    let cluster_tags = c.api.get(&format!("/clusters/{cid}/tags")).unwrap();
    let rack = cluster_tags
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "rack-a")
        .unwrap();
    assert_eq!(rack["owner"], json!({"kind": "cluster"}));

    // Plugins: a role from a plugin; the plugin cannot be disabled while the role is assigned.
    let plugin = c.api.raw(
        "POST",
        "/plugins",
        Some(&c.api.token),
        Some((
            "application/yaml",
            b"name: zabbix\nversion: 1.0.0\nnode_roles:\n  zabbix-server:\n    name: Zabbix\n\
deployment_tasks:\n  - id: zabbix\n    type: shell\n    roles: [zabbix-server]\n    parameters: {cmd: 'true'}\n"
                .to_vec(),
        )),
    );
    assert_eq!(plugin.status, 201, "{}", plugin.body);
    let pid = plugin.body["id"].as_u64().unwrap();
    let graphs = c
        .api
        .get(&format!("/plugins/{pid}/deployment_graphs"))
        .unwrap();
    assert_eq!(graphs[0]["graph_type"], "default");
    let before = c.api.send(
        "PUT",
        &format!("/clusters/{cid}/nodes"),
        Some(&json!({"nodes": [{"id": b, "roles": ["zabbix-server"]}]})),
    );
    assert_eq!(
        before.status, 404,
        "the role is unknown until the plugin is enabled: {}",
        before.body
    );
    c.api
        .ok("PUT", &format!("/clusters/{cid}/plugins/{pid}"), None);
    c.api.ok(
        "PUT",
        &format!("/clusters/{cid}/nodes"),
        Some(&json!({"nodes": [{"id": b, "roles": ["zabbix-server"]}]})),
    );
    let disable = c
        .api
        .send("DELETE", &format!("/clusters/{cid}/plugins/{pid}"), None);
    assert_eq!(disable.status, 409, "{}", disable.body);
    let message = disable.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("zabbix-server") && message.contains("node-b"),
        "{message}"
    );
    let delete = c.api.send("DELETE", &format!("/plugins/{pid}"), None);
    assert_eq!(
        delete.status, 409,
        "an enabled plugin stays: {}",
        delete.body
    );
    c.api.ok(
        "DELETE",
        &format!("/clusters/{cid}/nodes"),
        Some(&json!({"node_ids": [b]})),
    );
    c.api
        .ok("DELETE", &format!("/clusters/{cid}/plugins/{pid}"), None);
    c.api.ok("DELETE", &format!("/plugins/{pid}"), None);
}
