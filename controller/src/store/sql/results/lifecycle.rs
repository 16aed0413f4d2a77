//! Where a node is in its life, from what its `provision` task reports: `provisioning` while it writes
//! the image, `provisioned` (with the image, the disk and when) once the installed system reported
//! back. The agent marks a provision task's results with `details.provision` (see the agent's
//! `executor::provision`); every other result passes through untouched, so this costs the hot path one
//! map lookup per result.

use super::super::access::{args, sql_id, to_json, Tx};
use super::super::nodes::nodes_by_id;
use crate::store::StoreResult;
use plinth_api::records::ProvisionedImage;
use plinth_common::wire::{ResultStatus, TaskResult, PROVISION_DETAILS_KEY};

/// Records what `r` (a new result of node `node_id`) says of the node's life, if anything.
pub(crate) fn record(t: &dyn Tx, node_id: u64, r: &TaskResult) -> StoreResult<()> {
    let Some(details) = r.details.get(PROVISION_DETAILS_KEY) else {
        return Ok(());
    };
    match r.status {
        ResultStatus::Running => {
            t.exec(
                "UPDATE nodes SET status = 'provisioning' WHERE id = $1",
                args![sql_id(node_id)],
            )?;
        }
        ResultStatus::Succeeded => {
            let Ok(mut image) = serde_json::from_value::<ProvisionedImage>(details.clone()) else {
                return Ok(());
            };
            image.deployment_id = r.deployment_id;
            image.at_ms = r
                .started_at_ms
                .saturating_add(i64::try_from(r.duration_ms).unwrap_or(0));
            let Some(node) = nodes_by_id(t, &[node_id])?.pop() else {
                return Ok(());
            };
            let mut model = node.model;
            model.provisioned = Some(image);
            // A node provisioned now is no longer in error for what failed before.
            model.clear_error();
            t.exec(
                "UPDATE nodes SET status = 'provisioned', model = $2 WHERE id = $1",
                args![sql_id(node_id), &to_json(&model)],
            )?;
        }
        _ => {}
    }
    Ok(())
}
