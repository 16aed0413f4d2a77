//! Servers known before they first boot: enrollment files read ([`file`]), BMC passwords sealed at
//! rest ([`secrets`]). The store keeps the enrollments (`store::sql::enrollments`), and matches agents
//! to them as they register.

pub mod file;
pub mod secrets;

use crate::store::NewEnrollment;
use file::Enrollee;
use plinth_api::enrollment::{BmcDriver, BmcView};
use plinth_bmc::{BmcConfig, IpmiConfig, RedfishConfig, Secret};
use secrets::{Sealer, SecretError};

/// An enrollee as the store writes it, its password sealed.
pub fn to_new(e: Enrollee, sealer: &Sealer, now_ms: i64) -> Result<NewEnrollment, SecretError> {
    let mut server = e.server;
    if let Some(password) = &e.password {
        server.bmc_secret = Some(sealer.seal(&server.name, password)?);
    }
    server.now_ms = now_ms;
    Ok(server)
}

/// A BMC as stored and shown, and its password apart.
pub fn bmc_view(config: &BmcConfig) -> (BmcView, String) {
    match config {
        BmcConfig::Redfish(r) => (
            BmcView {
                driver: BmcDriver::Redfish,
                address: r.address.as_str().trim_end_matches('/').to_string(),
                username: Some(r.username.clone()),
                port: None,
                system_id: r.system_id.clone(),
                verify_tls: Some(r.verify_tls),
                ca_cert: r.ca_cert.as_ref().map(|p| p.display().to_string()),
                password_set: true,
            },
            r.password.expose().to_string(),
        ),
        BmcConfig::Ipmi(i) => (
            BmcView {
                driver: BmcDriver::Ipmi,
                address: i.address.clone(),
                username: Some(i.username.clone()),
                port: Some(i.port),
                system_id: None,
                verify_tls: None,
                ca_cert: None,
                password_set: true,
            },
            i.password.expose().to_string(),
        ),
    }
}

/// Why a stored BMC cannot be driven.
#[derive(Debug, thiserror::Error)]
pub enum StoredBmcError {
    /// The server was enrolled without a BMC.
    #[error("{0} was enrolled without a BMC")]
    NoBmc(String),
    /// Its password cannot be opened.
    #[error("{name}: {source}")]
    Secret {
        /// The enrolled server.
        name: String,
        /// Why.
        source: SecretError,
    },
    /// The stored address no longer reads as one.
    #[error("{name}: the stored BMC address {address:?} is not a URL")]
    Address {
        /// The enrolled server.
        name: String,
        /// The address.
        address: String,
    },
}

/// A stored BMC with its password opened, ready to drive.
pub fn bmc_config(
    name: &str,
    view: Option<&BmcView>,
    sealed: Option<&str>,
    sealer: &Sealer,
) -> Result<BmcConfig, StoredBmcError> {
    let view = view.ok_or_else(|| StoredBmcError::NoBmc(name.to_string()))?;
    let password = match sealed {
        Some(sealed) => sealer
            .open(name, sealed)
            .map_err(|source| StoredBmcError::Secret {
                name: name.to_string(),
                source,
            })?,
        None => String::new(),
    };
    let username = view.username.clone().unwrap_or_default();
    Ok(match view.driver {
        BmcDriver::Redfish => BmcConfig::Redfish(RedfishConfig {
            address: plinth_bmc::Url::parse(&view.address).map_err(|_| {
                StoredBmcError::Address {
                    name: name.to_string(),
                    address: view.address.clone(),
                }
            })?,
            system_id: view.system_id.clone(),
            verify_tls: view.verify_tls.unwrap_or(true),
            ca_cert: view.ca_cert.as_ref().map(std::path::PathBuf::from),
            username,
            password: Secret::new(password),
        }),
        BmcDriver::Ipmi => BmcConfig::Ipmi(IpmiConfig {
            address: view.address.clone(),
            port: view.port.unwrap_or(plinth_bmc::DEFAULT_IPMI_PORT),
            username,
            password: Secret::new(password),
        }),
    })
}
