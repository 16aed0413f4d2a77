//! Power: each enrolled server's BMC read by a bounded, jittered loop, and operators' power and boot
//! device actions. A BMC that is slow, refuses the credentials or does not answer shows as `unknown`
//! with its error, is tried again later with backoff, and holds up nothing else.

use serde::Deserialize;
use std::time::Duration;

/// The config file's `[power]` table.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerFile {
    /// How often each BMC is read, in seconds (60 when absent; 0 turns the loop off).
    pub interval_secs: Option<u64>,
    /// How long one BMC request may take, in seconds (10 when absent).
    pub timeout_secs: Option<u64>,
    /// How many BMCs are talked to at once (16 when absent).
    pub concurrency: Option<usize>,
}

/// How BMCs are read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PowerSettings {
    /// How often each BMC is read; `None` when the loop is off.
    pub interval: Option<Duration>,
    /// How long one BMC request may take.
    pub timeout: Duration,
    /// How many BMCs are talked to at once.
    pub concurrency: usize,
}

impl Default for PowerSettings {
    fn default() -> Self {
        PowerSettings {
            interval: Some(Duration::from_secs(60)),
            timeout: Duration::from_secs(10),
            concurrency: 16,
        }
    }
}

impl PowerSettings {
    /// The settings of a `[power]` table; the error names the key.
    pub fn from_file(file: PowerFile) -> Result<PowerSettings, String> {
        let d = PowerSettings::default();
        let timeout = match file.timeout_secs {
            Some(0) => return Err("power.timeout_secs must be at least 1".into()),
            Some(s) => Duration::from_secs(s),
            None => d.timeout,
        };
        let concurrency = match file.concurrency {
            Some(0) => return Err("power.concurrency must be at least 1".into()),
            Some(n) => n,
            None => d.concurrency,
        };
        Ok(PowerSettings {
            interval: match file.interval_secs {
                Some(0) => None,
                Some(s) => Some(Duration::from_secs(s)),
                None => d.interval,
            },
            timeout,
            concurrency,
        })
    }
}

pub mod poller;

use crate::enrollment::secrets::Sealer;
use crate::enrollment::{bmc_config, StoredBmcError};
use crate::store::{EnrollmentRecord, PowerReading, Store, StoreError};
use plinth_api::enrollment::{PowerState, PowerView};
use plinth_bmc::{Bmc, BmcError};

/// Why a power action or read failed.
#[derive(Debug, thiserror::Error)]
pub enum PowerError {
    /// The store failed (or has no such server).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The stored BMC cannot be driven.
    #[error(transparent)]
    Stored(#[from] StoredBmcError),
    /// The BMC refused or failed.
    #[error(transparent)]
    Bmc(#[from] BmcError),
}

/// An enrolled server's BMC, its password opened by `sealer`, ready to drive with `timeout` (the
/// configured `power.timeout_secs`); reads the store: call it off the async workers.
pub fn connect(
    store: &dyn Store,
    sealer: &Sealer,
    timeout: Duration,
    name: &str,
) -> Result<(EnrollmentRecord, Bmc), PowerError> {
    let (e, sealed) = store.enrollment_secret(name)?;
    let bmc = driver(sealer, timeout, &e, sealed.as_deref())?;
    Ok((e, bmc))
}

fn driver(
    sealer: &Sealer,
    timeout: Duration,
    e: &EnrollmentRecord,
    sealed: Option<&str>,
) -> Result<Bmc, PowerError> {
    let config = bmc_config(&e.name, e.bmc.as_ref(), sealed, sealer)?;
    Ok(Bmc::new(config)?.with_timeout(timeout))
}

/// What a read of a BMC gives: its state, or `unknown` with the error (which never holds the
/// password: the driver scrubs it).
pub fn reading(enrollment_id: u64, read: Result<PowerState, String>, now_ms: i64) -> PowerReading {
    let power = match read {
        Ok(state) => PowerView {
            state,
            error: None,
            checked_ms: now_ms,
        },
        Err(error) => PowerView {
            state: PowerState::Unknown,
            error: Some(error),
            checked_ms: now_ms,
        },
    };
    PowerReading {
        enrollment_id,
        power,
    }
}

/// Reads a BMC's power state.
pub async fn read_state(bmc: &Bmc) -> Result<PowerState, BmcError> {
    Ok(match bmc.power_state().await? {
        plinth_bmc::PowerState::On => PowerState::On,
        plinth_bmc::PowerState::Off => PowerState::Off,
    })
}
