//! Nailgun's endpoints that have no counterpart in Plinth: each answers in Nailgun's error shape
//! (`501`, with `message`) one sentence that names what Plinth offers instead, so `fuel2` prints it.
//! docs/FUEL.md lists them.

use crate::api::error::ApiError;
use axum::http::StatusCode;

const NETWORKS: &str = "Plinth configures no networks, templates or VIPs: a node keeps the addresses \
its operating system gives it (`fuel2 node show` lists them from its facts); put network settings in \
the environment's settings (`fuel2 env settings upload`) for your tasks to read";

const DISKS_AND_INTERFACES: &str = "Plinth lays out no disks and bonds no interfaces: the provision \
task writes the image to the disk the root device hints choose (docs/PROVISIONING.md), and a node's \
disks and interfaces are in its facts (`fuel2 node show`)";

const HEALTH: &str = "Plinth runs no OSTF health checks: put checks in a graph of their own \
(`fuel2 graph upload --env ID --type health --file checks.yaml`) and run it \
(`fuel2 graph execute --env ID --type health`)";

const SNAPSHOTS: &str =
    "Plinth makes no diagnostic snapshots: `plinth-controller backup` keeps the \
controller's state, and each node's agent logs to the node's journal";

const VMS: &str =
    "Plinth spawns no virtual machines: enroll each server (or VM) by its BMC and MACs \
(`plinthctl enroll`), and its agent registers it";

const OPENSTACK_CONFIG: &str =
    "Plinth keeps no OpenStack configuration overrides: change them in the \
environment's settings (`fuel2 env settings upload`) and redeploy (`fuel2 env redeploy`)";

/// Each path (as the Nailgun router writes it, under `/api/v1`) with what Plinth offers instead.
pub const PATHS: [(&str, &str); 16] = [
    ("/networks", NETWORKS),
    ("/networks/{id}", NETWORKS),
    ("/clusters/{id}/network_configuration/neutron", NETWORKS),
    (
        "/clusters/{id}/network_configuration/neutron/verify",
        NETWORKS,
    ),
    ("/clusters/{id}/network_configuration/template", NETWORKS),
    ("/clusters/{id}/network_configuration/ips/vips", NETWORKS),
    ("/transactions/{id}/network_configuration", NETWORKS),
    (
        "/clusters/{id}/network_configuration/ips/{ip}/vips",
        NETWORKS,
    ),
    ("/nodes/{id}/disks", DISKS_AND_INTERFACES),
    ("/nodes/{id}/disks/defaults", DISKS_AND_INTERFACES),
    ("/nodes/{id}/interfaces", DISKS_AND_INTERFACES),
    (
        "/nodes/{id}/interfaces/default_assignment",
        DISKS_AND_INTERFACES,
    ),
    ("/logs/package", SNAPSHOTS),
    ("/clusters/{id}/spawn_vms", VMS),
    ("/openstack-config", OPENSTACK_CONFIG),
    ("/openstack-config/{id}", OPENSTACK_CONFIG),
];

/// OSTF's own root (`/ostf/...`, outside `/api/v1`), where `fuel2 health` goes.
pub const OSTF: (&str, &str) = ("/ostf/{*rest}", HEALTH);

/// The answer: 501 and the sentence.
pub async fn answer(offered: &'static str) -> ApiError {
    ApiError::new(StatusCode::NOT_IMPLEMENTED, "not_in_plinth", offered)
}
