//! An agent's request that the controller set its node's next boot device (`POST /agent/v1/boot`):
//! what `boot_device` and `move_to_bootstrap` tasks ask for. The controller sets it through the
//! node's BMC when its enrollment has one, and in what its boot listener answers the node's network
//! boot either way.

use serde::{Deserialize, Serialize};

/// Where the node boots next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NextBoot {
    /// The network: the discovery image (the node's agent makes a new key there).
    Pxe,
    /// The local disk.
    Disk,
}

/// `POST /agent/v1/boot`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BootRequest {
    /// The device.
    pub device: NextBoot,
    /// For the next boot only (else from now on).
    #[serde(default)]
    pub once: bool,
}

/// The controller's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootAnswer {
    /// True when the node's BMC was set; false when only the boot listener's answer changed (the node
    /// has no BMC, and boots from the network first).
    pub bmc: bool,
    /// What was done, in a sentence.
    pub message: String,
}
