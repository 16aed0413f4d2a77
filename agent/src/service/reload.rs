//! Reloading the configuration on SIGHUP (`systemctl reload plinth-agent`). The file and the kernel
//! command line are read again and validated; a configuration that does not load is logged and the
//! running one kept. Facts are collected again and the node registers again with its new name, tags,
//! labels, rack and token. Timings (`poll_wait_secs`, `heartbeat_secs`, backoff, `kill_grace_secs`),
//! `work_dir`, `puppet`, `reboot_command` and `boot_id_path` apply from the next poll or list. The
//! controllers' addresses and keys (`controller`/`controllers`, `controller_public_key`, `controller_cert`, `ca_cert`) and
//! `state_dir` and `metrics_textfile` need a restart: a change to them is logged and not applied.

use super::registration::Registrar;
use super::signals::ReloadRequests;
use super::systemd::Systemd;
use crate::cmdline::{self, KernelCmdline, DEFAULT_CMDLINE_PATH};
use crate::config::{Overrides, Settings};
use crate::facts;
use crate::shutdown::Shutdown;
use plinth_common::wire::Registration;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::watch;

/// Where the configuration is read from, as the command line said.
#[derive(Debug, Clone)]
pub struct ReloadSource {
    /// The configuration file.
    pub config: PathBuf,
    /// The kernel command line file.
    pub cmdline: PathBuf,
    /// The command-line overrides.
    pub overrides: Overrides,
}

/// The keys a reload cannot change: the returned settings keep the running values for them, and the
/// names of those the new configuration changes are returned.
pub fn merge(running: &Settings, mut new: Settings) -> (Settings, Vec<&'static str>) {
    let mut ignored = Vec::new();
    if new.controllers != running.controllers {
        ignored.push("controller/controllers");
        new.controllers = running.controllers.clone();
    }
    if new.controller_key != running.controller_key {
        ignored.push("controller_public_key");
        new.controller_key = running.controller_key;
    }
    if new.trust != running.trust {
        ignored.push("controller_cert/ca_cert");
        new.trust = running.trust.clone();
    }
    if new.state_dir != running.state_dir {
        ignored.push("state_dir");
        new.state_dir = running.state_dir.clone();
    }
    if new.metrics_textfile != running.metrics_textfile {
        ignored.push("metrics_textfile");
        new.metrics_textfile = running.metrics_textfile.clone();
    }
    (new, ignored)
}

/// Reads the kernel command line; the default path may be missing (containers), a given one may not.
pub fn read_cmdline(path: &Path) -> Result<KernelCmdline, String> {
    match cmdline::read(path) {
        Ok(c) => Ok(c),
        Err(e) if path == Path::new(DEFAULT_CMDLINE_PATH) => {
            tracing::debug!(error = %e, "no kernel command line");
            Ok(KernelCmdline::default())
        }
        Err(e) => Err(format!(
            "cannot read kernel command line {}: {e}",
            path.display()
        )),
    }
}

/// What the node registers with.
pub fn registration(settings: &Settings, facts: plinth_common::wire::Facts) -> Registration {
    Registration {
        agent_version: crate::AGENT_VERSION.to_string(),
        name: settings.name.clone(),
        facts,
        tags: settings.tags.clone(),
        labels: settings.labels.clone(),
        rack: settings.rack.clone(),
        enrollment_token: settings.enrollment_token.clone(),
        protocol: plinth_common::wire::PROTOCOL_VERSION,
    }
}

/// Serves reload requests until the agent stops.
pub async fn run(
    mut requests: ReloadRequests,
    source: ReloadSource,
    live: watch::Sender<Settings>,
    registrar: Arc<Registrar>,
    systemd: Systemd,
    shutdown: Shutdown,
) {
    loop {
        tokio::select! {
            r = requests.recv() => if r.is_none() { return },
            _ = shutdown.wait() => return,
        }
        systemd.reloading();
        match load(&source) {
            Err(e) => {
                tracing::error!(error = %e, "configuration not reloaded; the running one is kept");
            }
            Ok((new, cmdline)) => {
                let running = live.borrow().clone();
                let (settings, ignored) = merge(&running, new);
                if !ignored.is_empty() {
                    tracing::warn!(keys = ?ignored, "these settings changed but need a restart; they are not applied");
                }
                let sources = facts::Sources::live(cmdline);
                let facts = tokio::task::spawn_blocking(move || facts::collect(&sources))
                    .await
                    .unwrap_or_default();
                registrar.replace(registration(&settings, facts));
                live.send_replace(settings);
                match registrar.register().await {
                    Ok(_) => tracing::info!("configuration reloaded; registered again"),
                    Err(e) => {
                        tracing::warn!(error = %e, "configuration reloaded; registering again failed, it is retried")
                    }
                }
            }
        }
        systemd.ready("configuration reloaded");
    }
}

fn load(source: &ReloadSource) -> Result<(Settings, KernelCmdline), String> {
    let cmdline = read_cmdline(&source.cmdline)?;
    let settings =
        Settings::load(&source.config, &cmdline, &source.overrides).map_err(|e| e.to_string())?;
    Ok((settings, cmdline))
}

#[cfg(test)]
mod tests {
    use super::*;
    use plinth_common::signing;

    fn settings(extra: &str) -> Settings {
        let key =
            signing::public_key_to_text(&signing::signing_key_from_seed([7; 32]).verifying_key());
        let text = format!(
            "controller = \"https://c:1\"\ncontroller_public_key = \"{key}\"\n\
             controller_cert = \"/c.pem\"\n{extra}"
        );
        let file = crate::config::FileConfig::parse(&text, Path::new("a.toml")).unwrap();
        Settings::resolve(
            file,
            Path::new("a.toml"),
            &KernelCmdline::default(),
            &Overrides::default(),
        )
        .unwrap()
    }

    #[test]
    fn live_keys_apply_and_restart_keys_are_kept() {
        let running = settings("tags = [\"a\"]\n");
        let mut new =
            settings("tags = [\"a\", \"b\"]\nheartbeat_secs = 3\nstate_dir = \"/other\"\n");
        new.controllers = vec![reqwest::Url::parse("https://elsewhere:2").unwrap()];
        let (merged, ignored) = merge(&running, new);
        assert_eq!(merged.tags, vec!["a", "b"]);
        assert_eq!(merged.heartbeat, std::time::Duration::from_secs(3));
        assert_eq!(merged.controllers, running.controllers);
        assert_eq!(merged.state_dir, running.state_dir);
        assert_eq!(ignored, vec!["controller/controllers", "state_dir"]);
    }
}
