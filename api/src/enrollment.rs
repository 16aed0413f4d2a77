//! Enrolled servers: known before they first boot, by their MACs (or DMI serial or UUID), with a name,
//! labels, a rack, an expected hardware profile and a BMC the controller powers them through.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An enrolled server as the API shows it. Its BMC's password is never in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EnrollmentRecord {
    /// Numeric id.
    pub id: u64,
    /// The name the node takes when its agent calls in.
    pub name: String,
    /// Its network interfaces' MAC addresses, lowercase with colons.
    pub macs: Vec<String>,
    /// Its DMI (SMBIOS) serial number, when enrolled with one.
    #[serde(default)]
    pub serial: Option<String>,
    /// Its DMI system UUID (lowercase), when enrolled with one.
    #[serde(default)]
    pub uuid: Option<String>,
    /// Tags the node gets.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Labels the node gets.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// The rack it sits in.
    #[serde(default)]
    pub rack: Option<String>,
    /// The hardware it is expected to have.
    #[serde(default)]
    pub profile: HardwareProfile,
    /// Its BMC, without the password.
    #[serde(default)]
    pub bmc: Option<BmcView>,
    /// The node its agent became, once one called in.
    #[serde(default)]
    pub node_id: Option<u64>,
    /// What the boot listener tells it to boot.
    pub boot: BootTarget,
    /// True while a new agent key may take the node over: set when the controller boots it from the
    /// network or an operator releases it, cleared when an agent takes it.
    #[serde(default)]
    pub rekey: bool,
    /// Its power state as last read from its BMC.
    pub power: PowerView,
    /// When it was enrolled (ms since the epoch).
    pub enrolled_at_ms: i64,
}

/// The hardware a server is expected to have (Ironic's `properties`). Every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct HardwareProfile {
    /// Logical CPUs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u32>,
    /// Memory in MiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u64>,
    /// Size of the root disk in GiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_gb: Option<u64>,
    /// CPU architecture (`x86_64`, `aarch64`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// Firmware boot mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot_mode: Option<BootMode>,
}

/// A BMC as stored and shown: everything but its password.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BmcView {
    /// `redfish` or `ipmi`.
    pub driver: BmcDriver,
    /// Redfish: the service's URL (`https://10.0.0.5`); IPMI: the BMC's host name or address.
    pub address: String,
    /// The user name.
    #[serde(default)]
    pub username: Option<String>,
    /// IPMI: the UDP port (623 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Redfish: the ComputerSystem's path (`/redfish/v1/Systems/1`); the only system when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_id: Option<String>,
    /// Redfish: whether the BMC's TLS certificate is verified (true when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_tls: Option<bool>,
    /// Redfish: a CA file (on the controller) that verifies the BMC's certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_cert: Option<String>,
    /// Whether a password is kept for it (the password itself never leaves the controller).
    #[serde(default)]
    pub password_set: bool,
}

/// The BMC protocols Plinth speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum BmcDriver {
    /// DMTF Redfish over HTTPS.
    Redfish,
    /// IPMI 2.0 over LAN (lanplus).
    Ipmi,
}

impl BmcDriver {
    /// The name used in files and answers.
    pub fn as_str(self) -> &'static str {
        match self {
            BmcDriver::Redfish => "redfish",
            BmcDriver::Ipmi => "ipmi",
        }
    }
}

/// What the boot listener serves a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum BootTarget {
    /// The discovery image (kernel and initramfs with the agent).
    Discovery,
    /// Its local disk: it is provisioned.
    Disk,
}

impl BootTarget {
    /// The name used in the store and answers.
    pub fn as_str(self) -> &'static str {
        match self {
            BootTarget::Discovery => "discovery",
            BootTarget::Disk => "disk",
        }
    }
}

/// A server's power state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum PowerState {
    /// Powered on.
    On,
    /// Powered off.
    Off,
    /// Not known: never read, no BMC, or the BMC did not answer (see the error).
    Unknown,
}

impl PowerState {
    /// The name used in the store and answers.
    pub fn as_str(self) -> &'static str {
        match self {
            PowerState::On => "on",
            PowerState::Off => "off",
            PowerState::Unknown => "unknown",
        }
    }
}

/// A server's power state as last read, with the BMC's error when it failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PowerView {
    /// The state.
    pub state: PowerState,
    /// Why it is `unknown`, when the BMC failed.
    #[serde(default)]
    pub error: Option<String>,
    /// When it was last read (ms since the epoch; 0 when never).
    #[serde(default)]
    pub checked_ms: i64,
}

/// A power action, as `PUT /enrollments/{name}/power` takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum PowerAction {
    /// Power on.
    On,
    /// Power off at once (Redfish `ForceOff`).
    Off,
    /// Ask the operating system to shut down (Redfish `GracefulShutdown`).
    SoftOff,
    /// Restart at once (Redfish `ForceRestart`).
    Reset,
}

/// `PUT /enrollments/{name}/power`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PowerRequest {
    /// What to do.
    pub action: PowerAction,
}

/// A boot device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum BootDevice {
    /// The network (PXE).
    Pxe,
    /// The local disk.
    Disk,
}

/// A firmware boot mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum BootMode {
    /// UEFI.
    Uefi,
    /// Legacy BIOS.
    Legacy,
}

/// `PUT /enrollments/{name}/boot-device`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BootDeviceRequest {
    /// The device.
    pub device: BootDevice,
    /// For the next boot only (else until changed).
    #[serde(default)]
    pub once: bool,
    /// The firmware mode; the enrolled profile's `boot_mode` when absent.
    #[serde(default)]
    pub mode: Option<BootMode>,
}

/// The answer of `POST /enrollments`: the servers enrolled, in the file's order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EnrollAnswer {
    /// The file's format as read: `plinth` or `ironic`.
    pub format: String,
    /// The enrolled servers.
    pub enrolled: Vec<EnrollmentRecord>,
}

/// The answer of a power action or a power status read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PowerAnswer {
    /// The enrolled server's name.
    pub name: String,
    /// Its power state now.
    pub power: PowerView,
}
