//! Plinth's own steps where Fuel's provision and deletion graphs call cobbler and fuel-agent (each a
//! row of `docs/FUEL.md`). Tasks are recognised by what they run, not only by their ids, so a graph
//! that renames them keeps the mapping, and a task that only shares an id keeps its own definition:
//!
//! | Fuel's task | what it ran | Plinth's step |
//! |---|---|---|
//! | `system_provision` (shell) | `/usr/bin/provision` (fuel-agent) | a `provision` task: image, root device hints and options from the cluster's `provision` settings |
//! | `cobbler_disable_netboot` (master_shell) | `netboot disable <node>` | a `boot_device` task: the node boots from its disk (through its BMC, and the boot listener's answer) |
//! | `cobbler_enable_netboot` (master_shell) | `netboot enable <node>` | a `boot_device` task: the node boots from the network |
//! | `build_deploy_image` (puppet, master) | `build_image.pp` (fuel-agent's image build) | skipped: the image is built beforehand (`make-image --format disk`) and served |
//! | `upload_provision_info(_master)` (upload_file) | fuel-agent's input file | skipped: the provision task takes its parameters directly |
//! | `generate_ironic_bootstrap_keys` (shell) | keys for Fuel's Ironic | skipped: Plinth has no Ironic to give keys to |
//! | `move_to_bootstrap` | Astute's reboot into bootstrap | Plinth's `move_to_bootstrap` (its Fuel parameters are not used) |
//! | `node_erase` (erase_node) | Astute's erase of the running system's disks | Plinth's `erase_node`, allowed to erase the running system's disk as Astute did |
//!
//! Both cobbler steps skip a node that is no enrolled server (the controller cannot choose how it
//! boots), as Fuel's cobbler had nothing to do for a node it did not know.

use super::merge::MergedGraph;
use crate::model::{Task, TaskType};
use serde_json::{json, Map, Value};

/// Puts Plinth's steps in place of Fuel's (see the module's text).
pub(crate) fn map_fuel_steps(graph: &mut MergedGraph) {
    for merged in &mut graph.tasks {
        map_task(&mut merged.task);
    }
}

fn command(task: &Task) -> String {
    match task.parameters.get("cmd") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

fn skip(task: &mut Task, why: &str) {
    task.task_type = TaskType::Skipped;
    task.condition = None;
    task.parameters = Map::from_iter([("reason".to_string(), json!(why))]);
}

fn map_task(task: &mut Task) {
    match &task.task_type {
        TaskType::Shell if command(task).trim() == "/usr/bin/provision" => {
            let timeout = task.parameters.get("timeout").cloned();
            task.task_type = TaskType::Provision;
            let mut p = Map::new();
            for (name, expr) in [
                ("image", "$.provision.image"),
                ("root_device", "$.provision.root_device"),
                ("grow_last_partition", "$.provision.grow_last_partition"),
                ("ssh_authorized_keys", "$.provision.ssh_authorized_keys"),
            ] {
                p.insert(name.to_string(), json!({ "yaql_exp": expr }));
            }
            if let Some(t) = timeout {
                p.insert("timeout".into(), t);
            }
            task.parameters = p;
        }
        TaskType::MasterShell => {
            let cmd = command(task);
            let device = if cmd.contains("provision/netboot disable") {
                "disk"
            } else if cmd.contains("provision/netboot enable") {
                "pxe"
            } else {
                return;
            };
            let timeout = task.parameters.get("timeout").cloned();
            task.task_type = TaskType::BootDevice;
            task.parameters = Map::from_iter([
                ("device".to_string(), json!(device)),
                ("without_enrollment".to_string(), json!("skip")),
            ]);
            if let Some(t) = timeout {
                task.parameters.insert("timeout".into(), t);
            }
        }
        TaskType::Puppet
            if task
                .parameters
                .get("puppet_manifest")
                .and_then(Value::as_str)
                .is_some_and(|m| m.ends_with("provision/build_image.pp")) =>
        {
            skip(
                task,
                "Fuel's image build: Plinth serves an image built beforehand (make-image --format disk)",
            );
        }
        TaskType::UploadFile
            if matches!(
                task.parameters.get("path").and_then(Value::as_str),
                Some("/tmp/provision.yaml" | "/tmp/provision.json")
            ) =>
        {
            skip(
                task,
                "fuel-agent's input file: Plinth's provision task takes its parameters directly",
            );
        }
        TaskType::Shell if task.id == "generate_ironic_bootstrap_keys" => {
            skip(task, "keys for Fuel's Ironic: Plinth has no Ironic");
        }
        TaskType::MoveToBootstrap => {
            task.parameters.remove("slave_name");
            task.parameters.remove("provisioning_info");
        }
        TaskType::EraseNode if task.version.is_some() => {
            task.parameters
                .entry("allow_running_system")
                .or_insert(json!(true));
        }
        _ => {}
    }
}
