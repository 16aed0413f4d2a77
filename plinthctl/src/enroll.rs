//! `plinthctl nodes enroll | enrolled | release | unenroll`: servers known before they boot.

use crate::client::Client;
use crate::inputs::read_text;
use crate::output::{list, opt, Format};
use crate::rows::{self, Row};
use anyhow::{Context, Result};
use plinth_api::enrollment::{EnrollAnswer, EnrollmentRecord};
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
