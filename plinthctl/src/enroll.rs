//! `plinthctl nodes enroll | enrolled | release | unenroll`: servers known before they boot.

use crate::client::Client;
use crate::inputs::read_text;
use crate::output::{list, opt, Format};
use crate::rows::{self, Row};
use anyhow::{Context, Result};
use plinth_api::enrollment::{
    BootDevice, BootDeviceRequest, BootMode, EnrollAnswer, EnrollmentRecord, PowerAction,
    PowerAnswer, PowerRequest,
};
use reqwest::Method;
use std::path::Path;

impl Row for EnrollmentRecord {
    const HEADER: &'static [&'static str] =
        &["name", "macs", "rack", "bmc", "power", "node", "boot"];
    fn cells(&self) -> Vec<String> {
        let power = match &self.power.error {
            Some(error) => format!("{} ({error})", self.power.state.as_str()),
            None => self.power.state.as_str().to_string(),
        };
        vec![
            self.name.clone(),
            list(&self.macs),
            opt(self.rack.as_deref()),
            self.bmc.as_ref().map_or_else(
                || "-".into(),
                |b| format!("{} {}", b.driver.as_str(), b.address),
            ),
            power,
            opt(self.node_id),
            self.boot.as_str().to_string(),
        ]
    }
}

/// Enrolls the servers of a file.
pub async fn enroll(client: &Client, file: &Path, format: Option<&str>, f: Format) -> Result<()> {
    let text = read_text(file)?;
    let path = match format {
        Some(format) => format!("/enrollments?format={format}"),
        None => "/enrollments".to_string(),
    };
    let answer = client
        .call_text(Method::POST, &path, "application/yaml", text)
        .await
        .with_context(|| format!("cannot enroll the servers of {}", file.display()))?;
    let answer: EnrollAnswer = serde_json::from_value(answer)?;
    eprintln!(
        "{} servers enrolled from {} ({} format)",
        answer.enrolled.len(),
        file.display(),
        answer.format
    );
    rows::print(f, &answer.enrolled);
    Ok(())
}

/// Lists enrolled servers, or shows one.
pub async fn show(client: &Client, name: Option<&str>, f: Format) -> Result<()> {
    match name {
        Some(name) => rows::print_one(
            f,
            &client
                .get::<EnrollmentRecord>(&format!("/enrollments/{name}"))
                .await?,
        ),
        None => rows::print(
            f,
            &client.get::<Vec<EnrollmentRecord>>("/enrollments").await?,
        ),
    }
    Ok(())
}

/// Opens an enrolled server to a new agent key.
pub async fn release(client: &Client, name: &str, f: Format) -> Result<()> {
    let e: EnrollmentRecord = client
        .send::<(), _>(Method::POST, &format!("/enrollments/{name}/release"), None)
        .await?;
    eprintln!("{name}: the next agent that claims it takes its node");
    rows::print_one(f, &e);
    Ok(())
}

/// Forgets an enrolled server.
pub async fn unenroll(client: &Client, name: &str) -> Result<()> {
    client
        .call(Method::DELETE, &format!("/enrollments/{name}"), None)
        .await?;
    eprintln!("{name}: enrollment deleted");
    Ok(())
}

/// `plinthctl nodes power ACTION`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PowerVerb {
    /// Power on.
    On,
    /// Power off at once.
    Off,
    /// Ask the operating system to shut down.
    SoftOff,
    /// Restart at once.
    Reset,
    /// Read the power state from the BMC.
    Status,
}

/// `pxe` or `disk`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceArg {
    /// The network.
    Pxe,
    /// The local disk.
    Disk,
}

/// `uefi` or `legacy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ModeArg {
    /// UEFI.
    Uefi,
    /// Legacy BIOS.
    Legacy,
}

/// The enrolled server's name for a NODE argument: a name as it is, a number as the id of the node an
/// agent became.
async fn server_name(client: &Client, node: &str) -> Result<String> {
    let Ok(id) = node.parse::<u64>() else {
        return Ok(node.to_string());
    };
    let all: Vec<EnrollmentRecord> = client.get("/enrollments").await?;
    all.into_iter()
        .find(|e| e.node_id == Some(id))
        .map(|e| e.name)
        .with_context(|| format!("node {id} is no enrolled server's"))
}

impl Row for PowerAnswer {
    const HEADER: &'static [&'static str] = &["name", "power", "error"];
    fn cells(&self) -> Vec<String> {
        vec![
            self.name.clone(),
            self.power.state.as_str().to_string(),
            opt(self.power.error.as_deref()),
        ]
    }
}

/// Powers servers, or reads their state, one after the other; every server is tried, and the
/// command fails at the end when any did.
pub async fn power(client: &Client, verb: PowerVerb, nodes: &[String], f: Format) -> Result<()> {
    let mut answers = Vec::new();
    let mut failed = Vec::new();
    for node in nodes {
        let name = server_name(client, node).await?;
        let path = format!("/enrollments/{name}/power");
        let answer = match verb {
            PowerVerb::Status => client.get::<PowerAnswer>(&path).await,
            _ => {
                let action = match verb {
                    PowerVerb::On => PowerAction::On,
                    PowerVerb::Off => PowerAction::Off,
                    PowerVerb::SoftOff => PowerAction::SoftOff,
                    _ => PowerAction::Reset,
                };
                client
                    .send::<_, PowerAnswer>(Method::PUT, &path, Some(&PowerRequest { action }))
                    .await
            }
        };
        match answer {
            Ok(a) => answers.push(a),
            Err(e) => {
                eprintln!("{name}: {e:#}");
                failed.push(name);
            }
        }
    }
    rows::print(f, &answers);
    if !failed.is_empty() {
        anyhow::bail!("the BMC of {} failed", failed.join(", "));
    }
    Ok(())
}

/// Sets a server's boot device.
pub async fn boot_device(
    client: &Client,
    node: &str,
    device: DeviceArg,
    once: bool,
    mode: Option<ModeArg>,
    f: Format,
) -> Result<()> {
    let name = server_name(client, node).await?;
    let body = BootDeviceRequest {
        device: match device {
            DeviceArg::Pxe => BootDevice::Pxe,
            DeviceArg::Disk => BootDevice::Disk,
        },
        once,
        mode: mode.map(|m| match m {
            ModeArg::Uefi => BootMode::Uefi,
            ModeArg::Legacy => BootMode::Legacy,
        }),
    };
    let e: EnrollmentRecord = client
        .send(
            Method::PUT,
            &format!("/enrollments/{name}/boot-device"),
            Some(&body),
        )
        .await?;
    rows::print_one(f, &e);
    Ok(())
}
