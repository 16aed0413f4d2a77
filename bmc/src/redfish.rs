//! The Redfish driver: the ComputerSystem's `PowerState`, its `#ComputerSystem.Reset` action and its
//! `Boot` override, over HTTP(S) with basic authentication.

use crate::{
    truncate, BmcError, BootDevice, BootMode, PowerAction, PowerState, RedfishConfig, Secret, Url,
};
use reqwest::header::{ACCEPT, ETAG, IF_MATCH, LOCATION};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::sync::OnceLock;

/// The most of an answer read: a BMC's largest usual document is a few KiB.
const MAX_BODY: usize = 1 << 20;

/// Where a Redfish service lists its systems.
const SYSTEMS: &str = "/redfish/v1/Systems";

#[derive(Debug)]
pub(crate) struct Redfish {
    http: reqwest::Client,
    base: Url,
    system_id: Option<String>,
    username: String,
    password: Secret,
    bmc: String,
    /// The ComputerSystem's URL, once known.
    system: OnceLock<Url>,
}

/// An answer that was a success.
struct Reply {
    etag: Option<String>,
    body: Vec<u8>,
}

impl Redfish {
    pub(crate) fn new(config: RedfishConfig, bmc: &str) -> Result<Redfish, BmcError> {
        let setup = |reason: String| BmcError::Setup {
            bmc: bmc.to_string(),
            reason,
        };
        // reqwest is built without a crypto provider of its own: rustls' ring is Plinth's everywhere.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("plinth-bmc/", env!("CARGO_PKG_VERSION")))
            // A redirect could carry the credentials elsewhere; a BMC that redirects is told so.
            .redirect(reqwest::redirect::Policy::none())
            .http1_only()
            .pool_idle_timeout(std::time::Duration::from_secs(30))
            .pool_max_idle_per_host(1);
        if !config.verify_tls {
            builder = builder.tls_danger_accept_invalid_certs(true);
        } else if let Some(path) = &config.ca_cert {
            let pem = std::fs::read(path)
                .map_err(|e| setup(format!("cannot read the CA file {}: {e}", path.display())))?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .ok()
                .filter(|certs| !certs.is_empty())
                .ok_or_else(|| setup(format!("{} holds no PEM certificate", path.display())))?;
            builder = builder.tls_certs_only(certs);
        }
        let http = builder
            .build()
            .map_err(|e| setup(format!("cannot build the HTTP client: {e}")))?;
        Ok(Redfish {
            http,
            base: config.address,
            system_id: config.system_id,
            username: config.username,
            password: config.password,
            bmc: bmc.to_string(),
            system: OnceLock::new(),
        })
    }

    pub(crate) async fn power_state(&self) -> Result<PowerState, BmcError> {
        let system = self.system_url().await?;
        let (_, doc) = self.get_json(&system).await?;
        self.state_of(&doc)
    }

    pub(crate) async fn power(&self, action: PowerAction) -> Result<(), BmcError> {
        let system = self.system_url().await?;
        let (_, doc) = self.get_json(&system).await?;
        let now = self.state_of(&doc).ok();
        let (reset_type, already) = match action {
            PowerAction::On => ("On", now == Some(PowerState::On)),
            PowerAction::Off => ("ForceOff", now == Some(PowerState::Off)),
            PowerAction::SoftOff => ("GracefulShutdown", now == Some(PowerState::Off)),
            PowerAction::Reset => ("ForceRestart", false),
        };
        if already {
            tracing::debug!(bmc = %self.bmc, ?action, "the server is already there");
            return Ok(());
        }
        let target = match doc
            .get("Actions")
            .and_then(|a| a.get("#ComputerSystem.Reset"))
            .and_then(|r| r.get("target"))
            .and_then(Value::as_str)
        {
            Some(target) => self.resolve(target)?,
            None => self.resolve(&format!(
                "{}/Actions/ComputerSystem.Reset",
                system.path().trim_end_matches('/')
            ))?,
        };
        self.call(
            Method::POST,
            &target,
            Some(&json!({ "ResetType": reset_type })),
            None,
        )
        .await?;
        Ok(())
    }

    pub(crate) async fn set_boot_device(
        &self,
        device: BootDevice,
        once: bool,
        mode: Option<BootMode>,
    ) -> Result<(), BmcError> {
        let system = self.system_url().await?;
        // Some BMCs want the system's ETag back to accept a change.
        let (etag, _) = self.get_json(&system).await?;
        let mut boot = json!({
            "BootSourceOverrideTarget": match device {
                BootDevice::Pxe => "Pxe",
                BootDevice::Disk => "Hdd",
            },
            "BootSourceOverrideEnabled": if once { "Once" } else { "Continuous" },
        });
        if let Some(mode) = mode {
            boot["BootSourceOverrideMode"] = json!(match mode {
                BootMode::Uefi => "UEFI",
                BootMode::Legacy => "Legacy",
            });
        }
        self.call(
            Method::PATCH,
            &system,
            Some(&json!({ "Boot": boot })),
            etag.as_deref(),
        )
        .await?;
        Ok(())
    }

    /// The ComputerSystem's URL: the configured one, else the only member of the service's systems.
    async fn system_url(&self) -> Result<Url, BmcError> {
        if let Some(url) = self.system.get() {
            return Ok(url.clone());
        }
        let url = match &self.system_id {
            Some(path) => self.resolve(path)?,
            None => {
                let (_, list) = self.get_json(&self.resolve(SYSTEMS)?).await?;
                let members = list
                    .get("Members")
                    .and_then(Value::as_array)
                    .ok_or_else(|| self.answer(format!("{SYSTEMS} has no Members list")))?;
                let ids = members
                    .iter()
                    .map(|m| m.get("@odata.id").and_then(Value::as_str))
                    .collect::<Option<Vec<&str>>>()
                    .ok_or_else(|| {
                        self.answer(format!("a member of {SYSTEMS} has no @odata.id"))
                    })?;
                match ids.as_slice() {
                    [] => {
                        return Err(BmcError::Systems {
                            bmc: self.bmc.clone(),
                            reason: format!("lists no system under {SYSTEMS}"),
                        })
                    }
                    [only] => self.resolve(only)?,
                    several => {
                        let mut named: Vec<String> =
                            several.iter().take(8).map(|s| truncate(s, 120)).collect();
                        if several.len() > named.len() {
                            named.push("...".to_string());
                        }
                        return Err(BmcError::Systems {
                            bmc: self.bmc.clone(),
                            reason: format!(
                                "lists {} systems ({}): say which with system_id",
                                several.len(),
                                named.join(", ")
                            ),
                        });
                    }
                }
            }
        };
        let _ = self.system.set(url.clone());
        Ok(url)
    }

    fn state_of(&self, system: &Value) -> Result<PowerState, BmcError> {
        match system.get("PowerState").and_then(Value::as_str) {
            Some("On" | "PoweringOn" | "Paused") => Ok(PowerState::On),
            Some("Off" | "PoweringOff") => Ok(PowerState::Off),
            Some(other) => {
                Err(self.answer(format!("unknown PowerState {:?}", truncate(other, 60))))
            }
            None => Err(self.answer("the system has no PowerState")),
        }
    }

    /// A reference the BMC gave (a path or a URL) as a URL on the BMC itself: the credentials go
    /// nowhere else.
    fn resolve(&self, reference: &str) -> Result<Url, BmcError> {
        let url = self.base.join(reference).map_err(|e| {
            self.answer(format!("{:?} is not a path: {e}", truncate(reference, 120)))
        })?;
        let same = url.scheme() == self.base.scheme()
            && url.host_str() == self.base.host_str()
            && url.port_or_known_default() == self.base.port_or_known_default();
        if !same {
            return Err(self.answer(format!(
                "{:?} points away from the BMC",
                truncate(reference, 120)
            )));
        }
        Ok(url)
    }

    async fn get_json(&self, url: &Url) -> Result<(Option<String>, Value), BmcError> {
        let reply = self.call(Method::GET, url, None, None).await?;
        let doc = serde_json::from_slice(&reply.body)
            .map_err(|e| self.answer(format!("{} is not JSON: {e}", url.path())))?;
        Ok((reply.etag, doc))
    }

    /// One request; an answer other than 2xx is an error.
    async fn call(
        &self,
        method: Method,
        url: &Url,
        body: Option<&Value>,
        if_match: Option<&str>,
    ) -> Result<Reply, BmcError> {
        tracing::debug!(bmc = %self.bmc, %method, path = url.path(), "Redfish request");
        let mut request = self
            .http
            .request(method.clone(), url.clone())
            .basic_auth(&self.username, Some(self.password.expose()))
            .header(ACCEPT, "application/json")
            .header("OData-Version", "4.0");
        if let Some(body) = body {
            request = request.json(body);
        }
        if let Some(tag) = if_match {
            request = request.header(IF_MATCH, tag);
        }
        let mut response = request.send().await.map_err(|e| self.transport(&e))?;
        let status = response.status();
        let etag = header(&response, ETAG);
        let location = header(&response, LOCATION);
        let (body, cut) = self.read_body(&mut response).await?;
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Err(BmcError::Credentials {
                bmc: self.bmc.clone(),
                username: self.username.clone(),
                detail: format!("HTTP {}: {}", status.as_u16(), self.message(&body)),
            });
        }
        if status.is_redirection() {
            return Err(BmcError::Http {
                bmc: self.bmc.clone(),
                status: status.as_u16(),
                message: format!(
                    "{method} {} redirects to {}: give that address",
                    url.path(),
                    self.password
                        .redact(&truncate(location.as_deref().unwrap_or("nowhere"), 200))
                ),
            });
        }
        if !status.is_success() {
            return Err(BmcError::Http {
                bmc: self.bmc.clone(),
                status: status.as_u16(),
                message: format!("{method} {}: {}", url.path(), self.message(&body)),
            });
        }
        if cut {
            return Err(self.answer(format!(
                "{} is larger than {} KiB",
                url.path(),
                MAX_BODY / 1024
            )));
        }
        Ok(Reply { etag, body })
    }

    /// Reads at most [`MAX_BODY`] bytes of the answer; the flag says it was longer.
    async fn read_body(
        &self,
        response: &mut reqwest::Response,
    ) -> Result<(Vec<u8>, bool), BmcError> {
        let mut body = Vec::new();
        if response
            .content_length()
            .is_some_and(|n| n > MAX_BODY as u64)
        {
            return Ok((body, true));
        }
        while let Some(chunk) = response.chunk().await.map_err(|e| self.transport(&e))? {
            let room = MAX_BODY - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                return Ok((body, true));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((body, false))
    }

    /// The Redfish error message of an error answer (its extended messages, else its message), else the
    /// start of the body; redacted and cut short.
    fn message(&self, body: &[u8]) -> String {
        let text = match serde_json::from_slice::<Value>(body) {
            Ok(doc) => {
                let error = doc.get("error");
                let extended: Vec<&str> = error
                    .and_then(|e| e.get("@Message.ExtendedInfo"))
                    .and_then(Value::as_array)
                    .map(|infos| {
                        infos
                            .iter()
                            .filter_map(|i| i.get("Message").and_then(Value::as_str))
                            .filter(|m| !m.trim().is_empty())
                            .take(8)
                            .collect()
                    })
                    .unwrap_or_default();
                if !extended.is_empty() {
                    extended.join("; ")
                } else if let Some(m) = error.and_then(|e| e.get("message")).and_then(Value::as_str)
                {
                    m.to_string()
                } else {
                    String::from_utf8_lossy(body).into_owned()
                }
            }
            Err(_) => String::from_utf8_lossy(body).into_owned(),
        };
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if text.is_empty() {
            return "(no message)".to_string();
        }
        truncate(&self.password.redact(&text), 500)
    }

    /// Why a request got no answer.
    fn transport(&self, error: &reqwest::Error) -> BmcError {
        let mut reason = error.to_string();
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            let text = cause.to_string();
            if !reason.contains(&text) {
                reason.push_str(": ");
                reason.push_str(&text);
            }
            source = cause.source();
        }
        if reason.contains("certificate") {
            reason.push_str(
                " (the BMC's TLS certificate is not trusted: give its CA as ca_cert, or set verify_tls to false)",
            );
        }
        BmcError::Unreachable {
            bmc: self.bmc.clone(),
            reason: truncate(&self.password.redact(&reason), 1000),
        }
    }

    fn answer(&self, reason: impl Into<String>) -> BmcError {
        BmcError::Answer {
            bmc: self.bmc.clone(),
            reason: self.password.redact(&reason.into()),
        }
    }
}

fn header(response: &reqwest::Response, name: reqwest::header::HeaderName) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(system_id: Option<&str>) -> Redfish {
        Redfish::new(
            RedfishConfig {
                address: Url::parse("https://10.0.0.5").unwrap(),
                system_id: system_id.map(str::to_string),
                verify_tls: true,
                ca_cert: None,
                username: "admin".into(),
                password: Secret::new("hunter2"),
            },
            "https://10.0.0.5",
        )
        .unwrap()
    }

    #[test]
    fn error_messages() {
        let r = client(None);
        let extended = br#"{"error": {"code": "Base.1.0.GeneralError", "message": "general",
            "@Message.ExtendedInfo": [{"Message": "The action is not supported."}, {"Message": "Try again, hunter2."}]}}"#;
        assert_eq!(
            r.message(extended),
            "The action is not supported.; Try again, ***."
        );
        assert_eq!(r.message(br#"{"error": {"message": "Nope"}}"#), "Nope");
        assert_eq!(
            r.message(b"<html>\n  Bad\n gateway</html>"),
            "<html> Bad gateway</html>"
        );
        assert_eq!(r.message(b""), "(no message)");
        assert_eq!(r.message(br#"{"error": 5}"#), r#"{"error": 5}"#);
        assert!(r.message(&vec![b'x'; 10_000]).len() < 600);
    }

    #[test]
    fn states() {
        let r = client(None);
        for (text, want) in [
            ("On", PowerState::On),
            ("PoweringOn", PowerState::On),
            ("Off", PowerState::Off),
            ("PoweringOff", PowerState::Off),
        ] {
            assert_eq!(r.state_of(&json!({ "PowerState": text })).unwrap(), want);
        }
        for doc in [
            json!({}),
            json!({"PowerState": 3}),
            json!({"PowerState": "Exploded"}),
            json!([1]),
        ] {
            assert!(
                matches!(r.state_of(&doc), Err(BmcError::Answer { .. })),
                "{doc}"
            );
        }
    }

    #[test]
    fn references_stay_on_the_bmc() {
        let r = client(None);
        assert_eq!(
            r.resolve("/redfish/v1/Systems/1").unwrap().as_str(),
            "https://10.0.0.5/redfish/v1/Systems/1"
        );
        assert!(r
            .resolve("https://10.0.0.5:443/redfish/v1/Systems/1")
            .is_ok());
        for away in [
            "https://evil.example/redfish",
            "//evil.example/x",
            "http://10.0.0.5/x",
            "https://10.0.0.5:8443/x",
        ] {
            assert!(
                matches!(r.resolve(away), Err(BmcError::Answer { .. })),
                "{away}"
            );
        }
    }
}
