//! `plinthctl cluster settings get|set|edit`: a cluster's settings (Nailgun's editable attributes)
//! through `/clusters/{id}/attributes`, shown and edited as YAML.

use crate::client::Client;
use crate::output::Format;
use anyhow::{anyhow, bail, Context, Result};
use plinth_api::answers::Attributes;
use plinth_api::requests::AttributesBody;
use reqwest::Method;
use serde_json::{json, Value};

/// `get CLUSTER [SECTION]`: the settings (or one section) as YAML (JSON with `-o json`).
pub async fn get(client: &Client, cluster: u64, section: Option<&str>, f: Format) -> Result<()> {
    let v: Attributes = client
        .get(&format!("/clusters/{cluster}/attributes"))
        .await?;
    let editable = &v.editable;
    let shown = match section {
        Some(name) => editable
            .get(name)
            .ok_or_else(|| anyhow!("cluster {cluster} has no settings section {name:?}"))?,
        None => editable,
    };
    match f {
        Format::Json => println!("{}", serde_json::to_string_pretty(shown)?),
        Format::Table => print!("{}", serde_yaml_ng::to_string(shown)?),
    }
    Ok(())
}

/// `set CLUSTER SECTION.ATTRIBUTE=VALUE...`: each value read as YAML (`true`, `2`, `[a, b]`), kept as
/// text where the setting holds text; sent as one `PATCH`.
pub async fn set(client: &Client, cluster: u64, assignments: &[String]) -> Result<()> {
    let current: Attributes = client
        .get(&format!("/clusters/{cluster}/attributes"))
        .await?;
    let mut patch = serde_json::Map::new();
    for a in assignments {
        let (path, text) = a
            .split_once('=')
            .ok_or_else(|| anyhow!("{a:?}: write SECTION.ATTRIBUTE=VALUE"))?;
        let (section, attr) = path
            .split_once('.')
            .ok_or_else(|| anyhow!("{path:?}: write SECTION.ATTRIBUTE"))?;
        let now = current
            .editable
            .get(section)
            .and_then(|s| s.get(attr))
            .and_then(|a| a.get("value"));
        let value = match now {
            Some(Value::String(_)) => Value::String(text.to_string()),
            _ => serde_yaml_ng::from_str(text)
                .with_context(|| format!("{a:?}: the value is not YAML"))?,
        };
        let entry = patch
            .entry(section)
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        entry[attr] = json!({ "value": value });
    }
    client
        .send::<_, Attributes>(
            Method::PATCH,
            &format!("/clusters/{cluster}/attributes"),
            Some(&AttributesBody { editable: patch }),
        )
        .await?;
    eprintln!(
        "cluster {cluster}: {} setting(s) changed",
        assignments.len()
    );
    Ok(())
}

/// The file being edited: made new (readable by its owner only, as settings hold passwords), removed
/// when dropped.
struct EditFile(std::path::PathBuf);

impl EditFile {
    fn create(cluster: u64, text: &str) -> Result<EditFile> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let path = std::env::temp_dir().join(format!(
            "plinthctl-cluster-{cluster}-settings-{}.yaml",
            std::process::id()
        ));
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .with_context(|| format!("cannot make {}", path.display()))?;
        let file = EditFile(path);
        f.write_all(text.as_bytes())?;
        Ok(file)
    }

    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for EditFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `edit CLUSTER`: the settings in `$VISUAL`/`$EDITOR` (else `vi`) as YAML, then replaced with `PUT`;
/// unchanged text changes nothing.
pub async fn edit(client: &Client, cluster: u64) -> Result<()> {
    let current: Attributes = client
        .get(&format!("/clusters/{cluster}/attributes"))
        .await?;
    let text = serde_yaml_ng::to_string(&current.editable)?;
    let file = EditFile::create(cluster, &text)?;
    let editor = std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .unwrap_or_else(|_| "vi".into());
    // The editor may carry arguments (`code --wait`): run it through the shell, the file as `$1`.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(file.path())
        .status()
        .with_context(|| format!("cannot run the editor {editor:?}"))?;
    if !status.success() {
        bail!("the editor {editor:?} failed ({status}); nothing changed");
    }
    let edited = std::fs::read_to_string(file.path())?;
    if edited == text {
        eprintln!("cluster {cluster}: settings unchanged");
        return Ok(());
    }
    let value: Value = serde_yaml_ng::from_str(&edited).map_err(|e| match e.location() {
        Some(l) => anyhow!(
            "the edited settings:{}:{}: {e}; nothing changed",
            l.line(),
            l.column()
        ),
        None => anyhow!("the edited settings: {e}; nothing changed"),
    })?;
    let Value::Object(editable) = value else {
        bail!("the edited settings are not a mapping of sections; nothing changed");
    };
    client
        .send::<_, Attributes>(
            Method::PUT,
            &format!("/clusters/{cluster}/attributes"),
            Some(&AttributesBody { editable }),
        )
        .await?;
    eprintln!("cluster {cluster}: settings replaced");
    Ok(())
}
