//! What the corpus tests share: where the corpus is, Fuel's task files under a folder, every
//! `yaql_exp` of Fuel's library, and a Fuel cluster (release, settings, nodes) of any size.

#![allow(dead_code)]

use plinth_common::model::{
    parse_release_fixture, parse_tasks, Cluster, Graph, Node, Release, Task,
};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{json, Value};
use serde_yaml_ng::Value as Y;
use std::fmt;
use std::path::{Path, PathBuf};

/// The corpus beside the checkout.
pub fn corpus() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/corpus")).to_path_buf()
}

/// Every task of every `tasks.yaml` under `dir`, files in path order.
pub fn tasks_under(dir: &Path) -> Vec<Task> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("corpus folder")
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.file_name().is_some_and(|n| n == "tasks.yaml") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut files);
    files
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).expect("readable");
            parse_tasks(&text, &f.display().to_string()).expect("loads")
        })
        .collect()
}

/// Collects the strings under `yaql_exp` keys while deserializing, so that documents with
/// duplicate keys (Fuel has some) still load.
struct Collect<'o> {
    out: &'o mut Vec<String>,
    take: bool,
}

impl<'de> DeserializeSeed<'de> for Collect<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Collect<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        if self.take {
            self.out.push(v.to_string());
        }
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq
            .next_element_seed(Collect {
                out: &mut *self.out,
                take: false,
            })?
            .is_some()
        {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Y>()? {
            let take = key.as_str() == Some("yaql_exp");
            map.next_value_seed(Collect {
                out: &mut *self.out,
                take,
            })?;
        }
        Ok(())
    }
}

/// The YAML files under `dir`, in path order.
pub fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            yaml_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(p);
        }
    }
}

/// Every `yaql_exp` of Fuel's library (206), in file order, as written.
pub fn fuel_yaql_exps() -> Vec<String> {
    let mut files = Vec::new();
    yaml_files(&corpus().join("fuel-library"), &mut files);
    let mut exprs = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            let seed = Collect {
                out: &mut exprs,
                take: false,
            };
            if let Err(e) = seed.deserialize(doc) {
                panic!("{}: {e}", f.display());
            }
        }
    }
    exprs
}

/// `attributes_metadata.editable` of the fixture's first release.
fn editable(fixture: &Value) -> Value {
    fn find(v: &Value) -> Option<Value> {
        match v {
            Value::Object(m) => m
                .get("attributes_metadata")
                .and_then(|a| a.get("editable"))
                .cloned()
                .or_else(|| m.values().find_map(find)),
            Value::Array(a) => a.iter().find_map(find),
            _ => None,
        }
    }
    find(fixture).expect("the fixture has editable attributes")
}

/// Fuel's release (`openstack.yaml`, with every `tasks.yaml` of the library as its default graph)
/// and a cluster with its defaults: ceilometer on (the mongo role needs it), ironic off. Fuel's
/// expressions also read what Nailgun's network and service serializers computed (`network_scheme`,
/// `rabbit`, `nova`, ...), which Plinth does not compute: the cluster supplies them, here as empty
/// sections, as an operator running Fuel's graph would.
pub fn fuel_release_and_cluster() -> (Release, Cluster) {
    let text = std::fs::read_to_string(corpus().join("fuel-web/openstack.yaml")).expect("fixture");
    let mut release = parse_release_fixture(&text, "openstack.yaml").expect("release");
    let tasks = tasks_under(&corpus().join("fuel-library/deployment"));
    release
        .graphs
        .insert("default".into(), Graph::with_tasks(tasks));
    let fixture: Value = serde_yaml_ng::from_str(&text).expect("YAML");
    let mut settings = editable(&fixture);
    settings["additional_components"]["ironic"]["value"] = json!(false);
    settings["additional_components"]["ceilometer"]["value"] = json!(true);
    for section in [
        "base_syslog",
        "cinder",
        "repo_setup",
        "quantum",
        "horizon",
        "keystone",
        "glance",
        "mysql",
        "configuration",
        "rabbit",
        "swift",
        "test_vm_image",
        "nova",
    ] {
        settings[section] = json!({});
    }
    settings["network_scheme"] =
        json!({"transformations": [], "roles": {}, "endpoints": {}, "interfaces": {}});
    for service in [
        "ceilometer",
        "murano",
        "heat",
        "sahara",
        "ironic",
        "murano-cfapi",
    ] {
        settings[service] = json!({"enabled": false});
    }
    let cluster = Cluster {
        name: "fuel".into(),
        release: release.name.clone(),
        settings,
        ..Cluster::default()
    };
    (release, cluster)
}

/// New nodes with these pending roles, ids from `first_id` on.
pub fn fuel_nodes(first_id: u64, roles: &[(&str, usize)]) -> Vec<Node> {
    let mut nodes = Vec::new();
    for (role, count) in roles {
        for _ in 0..*count {
            let id = first_id + nodes.len() as u64;
            let mut n = Node::new(id, format!("node-{id}"), &[]);
            n.pending_roles = vec![role.to_string()];
            n.pending_addition = true;
            nodes.push(n);
        }
    }
    nodes
}

/// `count` nodes as a Fuel deployment has them: 3 controllers, 3 mongo, a tenth cinder, the rest
/// computes (ids from 1).
pub fn fuel_cluster_nodes(count: u64) -> Vec<Node> {
    (1..=count)
        .map(|id| {
            let role = match id {
                1..=3 => "controller",
                4..=6 => "mongo",
                _ if id % 10 == 0 => "cinder",
                _ => "compute",
            };
            let mut n = Node::new(id, format!("node-{id}"), &[]);
            n.pending_roles = vec![role.to_string()];
            n
        })
        .collect()
}

/// The data of a Fuel deployment of `nodes` (Fuel's release and cluster settings).
pub fn fuel_deploy_data(nodes: &[Node]) -> plinth_common::deploy::DeployData {
    let (release, cluster) = fuel_release_and_cluster();
    let catalog = plinth_common::tags::Catalog::new(&release, &[], Some(&cluster));
    let tags = plinth_common::tags::cluster_tags(nodes, &catalog);
    plinth_common::deploy::DeployData::build(1, &cluster, &release, nodes, &tags)
}

/// What node 1 (the first controller) of a 1,000-node Fuel cluster sees: `$` now, and `$` when
/// it was last deployed, with the first 900 nodes.
pub fn fuel_node_one_of_1000() -> (Value, Value) {
    let nodes = fuel_cluster_nodes(1000);
    let now = fuel_deploy_data(&nodes);
    let before = fuel_deploy_data(&nodes[..900]);
    let state = |d: &plinth_common::deploy::DeployData| d.state(1).expect("node 1").merged();
    (state(&now), state(&before))
}
