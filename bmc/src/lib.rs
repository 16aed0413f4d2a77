//! Power control of servers through their BMCs: Redfish over HTTP(S), and IPMI 2.0 (`lanplus`) through
//! the `ipmitool` binary.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use plinth_bmc::{Bmc, BmcConfig, BootDevice, PowerAction};
//! let config: BmcConfig = serde_json::from_str(
//!     r#"{"driver": "redfish", "address": "https://10.0.0.5", "username": "admin", "password": "pw"}"#,
//! )?;
//! let bmc = Bmc::new(config)?;
//! bmc.set_boot_device(BootDevice::Pxe, true, None).await?;
//! bmc.power(PowerAction::Reset).await?;
//! println!("{:?}", bmc.power_state().await?);
//! # Ok(()) }
//! ```
//!
//! Every operation is bounded by a timeout ([`DEFAULT_TIMEOUT`] unless set with
//! [`Bmc::with_timeout`]); passwords are held as [`Secret`] and reach neither logs nor errors.

mod config;
mod error;
mod ipmi;
mod redfish;
mod secret;

pub use config::{BmcConfig, ConfigError, IpmiConfig, RedfishConfig, DEFAULT_IPMI_PORT};
pub use error::BmcError;
pub use reqwest::Url;
pub use secret::Secret;

use std::future::Future;
use std::time::Duration;

/// How long an operation may take when no other timeout is set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether a server is powered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PowerState {
    /// Powered on (or powering on).
    On,
    /// Powered off (or powering off).
    Off,
}

/// What to do with a server's power.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PowerAction {
    /// Power on (Redfish `On`, ipmi `chassis power on`).
    On,
    /// Cut the power at once (Redfish `ForceOff`, ipmi `chassis power off`).
    Off,
    /// Ask the operating system to shut down (Redfish `GracefulShutdown`, ipmi `chassis power soft`).
    SoftOff,
    /// Hard reset (Redfish `ForceRestart`, ipmi `chassis power reset`).
    Reset,
}

/// The device to boot from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BootDevice {
    /// The network (Redfish `Pxe`, ipmi `pxe`).
    Pxe,
    /// The local disk (Redfish `Hdd`, ipmi `disk`).
    Disk,
}

/// The firmware's boot mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BootMode {
    /// UEFI.
    Uefi,
    /// Legacy BIOS.
    Legacy,
}

/// One server's BMC, ready to be driven. Cheap to share behind an `Arc`: operations take `&self`.
#[derive(Debug)]
pub struct Bmc {
    driver: Driver,
    address: String,
    timeout: Duration,
}

#[derive(Debug)]
enum Driver {
    Redfish(redfish::Redfish),
    Ipmi(ipmi::Ipmi),
}

impl Bmc {
    /// Prepares to drive the BMC `config` describes. Nothing is sent yet; a Redfish BMC's CA file is
    /// read now.
    pub fn new(config: BmcConfig) -> Result<Bmc, BmcError> {
        let address = config.address();
        let driver = match config {
            BmcConfig::Redfish(c) => Driver::Redfish(redfish::Redfish::new(c, &address)?),
            BmcConfig::Ipmi(c) => Driver::Ipmi(ipmi::Ipmi::new(c, &address)),
        };
        Ok(Bmc {
            driver,
            address,
            timeout: DEFAULT_TIMEOUT,
        })
    }

    /// The same BMC with another bound on each operation.
    pub fn with_timeout(mut self, timeout: Duration) -> Bmc {
        self.timeout = timeout;
        self
    }

    /// The bound on each operation.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The BMC's address as messages give it.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Whether the server is powered. A Redfish BMC's `PoweringOn` and `PoweringOff` read as where
    /// they are going.
    pub async fn power_state(&self) -> Result<PowerState, BmcError> {
        let state = self
            .bounded(async {
                match &self.driver {
                    Driver::Redfish(r) => r.power_state().await,
                    Driver::Ipmi(i) => i.power_state().await,
                }
            })
            .await?;
        tracing::debug!(bmc = %self.address, ?state, "BMC power state");
        Ok(state)
    }

    /// Acts on the server's power. A Redfish BMC is first asked its state, and `On`, `Off` and
    /// `SoftOff` send nothing when the server is already there (some BMCs refuse them then).
    pub async fn power(&self, action: PowerAction) -> Result<(), BmcError> {
        tracing::info!(bmc = %self.address, ?action, "BMC power action");
        self.bounded(async {
            match &self.driver {
                Driver::Redfish(r) => r.power(action).await,
                Driver::Ipmi(i) => i.power(action).await,
            }
        })
        .await
    }

    /// Sets the device the server boots from: for the next boot only when `once`, else for every
    /// boot; in the given firmware mode when `mode` is set. Through ipmitool, `None` means legacy BIOS
    /// as IPMI's boot flags have no "unchanged" (`efiboot` is sent for UEFI only).
    pub async fn set_boot_device(
        &self,
        device: BootDevice,
        once: bool,
        mode: Option<BootMode>,
    ) -> Result<(), BmcError> {
        tracing::info!(bmc = %self.address, ?device, once, ?mode, "BMC boot device");
        self.bounded(async {
            match &self.driver {
                Driver::Redfish(r) => r.set_boot_device(device, once, mode).await,
                Driver::Ipmi(i) => i.set_boot_device(device, once, mode).await,
            }
        })
        .await
    }

    /// Runs `operation` within the timeout; what it left under way is dropped (ipmitool is killed).
    async fn bounded<T>(
        &self,
        operation: impl Future<Output = Result<T, BmcError>>,
    ) -> Result<T, BmcError> {
        match tokio::time::timeout(self.timeout, operation).await {
            Ok(result) => result,
            Err(_) => Err(BmcError::Timeout {
                bmc: self.address.clone(),
                after: self.timeout,
            }),
        }
    }
}

/// The first `max` bytes of `text` (cut at a character boundary), marked when cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
