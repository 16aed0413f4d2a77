//! `POST /api/v1/plugins/sync` (and Nailgun's `POST /plugins/sync/`, `fuel2 plugins sync`): plugins
//! registered are read again from their files, as Nailgun re-reads its plugins' directories.
//!
//! The files are the plugins directory's (`<data_dir>/plugins/`): each `*.yaml`, `*.yml` or `*.json`
//! there is one plugin document, as `plinthctl plugin register --file` takes it, and belongs to the
//! registered plugin of its `name` and `version`. Syncing replaces those plugins' metadata, roles,
//! volumes and graphs with what their files say now, all in one transaction: a file that does not
//! read, a graph whose checks fail, or a role dropped while a node holds it, refuses the whole sync
//! and is named. Files of plugins not registered are left alone (register them first).

use super::auth::Operator;
use super::body::parse_doc;
use super::error::{ApiError, Json};
use super::plugins::{prepare, Prepared, RegisterPlugin};
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::State;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The plugins directory under the data directory.
pub const PLUGINS_DIR: &str = "plugins";

/// The body: nothing, `null`, `{}`, or `{"ids": [...]}` naming the plugins to sync (all otherwise).
fn requested_ids(body: &[u8]) -> Result<Option<Vec<u64>>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let value: Value = parse_doc(body, false)?;
    match value {
        Value::Null => Ok(None),
        Value::Object(mut map) => {
            if let Some(stranger) = map.keys().find(|k| k.as_str() != "ids") {
                return Err(ApiError::bad_request(format!(
                    "unknown key `{stranger}`: a sync names its plugins by `ids`"
                )));
            }
            match map.remove("ids") {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Array(ids)) => ids
                    .iter()
                    .map(|id| {
                        id.as_u64().ok_or_else(|| {
                            ApiError::bad_request(format!("`ids`: {id} is not a plugin id"))
                        })
                    })
                    .collect::<Result<Vec<u64>, ApiError>>()
                    .map(Some),
                Some(other) => Err(ApiError::bad_request(format!(
                    "`ids` is a list of plugin ids, not {other}"
                ))),
            }
        }
        other => Err(ApiError::bad_request(format!(
            "a sync's body names its plugins as {{\"ids\": [...]}}, not {other}"
        ))),
    }
}

/// One plugin file read and checked.
struct PluginFile {
    path: PathBuf,
    prepared: Prepared,
}

/// Every plugin file of `dir`, by name and version; a file that does not read is an error naming it.
fn read_dir(dir: &Path) -> Result<BTreeMap<(String, String), PluginFile>, ApiError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => {
            return Err(ApiError::internal(format!(
                "the plugins directory {} cannot be read: {e}",
                dir.display()
            )))
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| ["yaml", "yml", "json"].contains(&e))
        })
        .collect();
    paths.sort();
    let mut out: BTreeMap<(String, String), PluginFile> = BTreeMap::new();
    for path in paths {
        let named = |e: ApiError| e.prefixed(&format!("{}: ", path.display()));
        let bytes = std::fs::read(&path)
            .map_err(|e| ApiError::internal(format!("{} cannot be read: {e}", path.display())))?;
        let yaml = path.extension().is_some_and(|e| e != "json");
        let value: Value = parse_doc(&bytes, yaml).map_err(named)?;
        let doc: RegisterPlugin = parse_doc(&bytes, yaml).map_err(named)?;
        let text = String::from_utf8_lossy(&bytes);
        let prepared = prepare(doc, &value, Some(&text), false).map_err(named)?;
        let key = (
            prepared.plugin.name.clone(),
            prepared.plugin.version.clone(),
        );
        if let Some(first) = out.get(&key) {
            return Err(ApiError::bad_request(format!(
                "{} and {} are both plugin {} {}; keep one",
                first.path.display(),
                path.display(),
                key.0,
                key.1
            )));
        }
        out.insert(key, PluginFile { path, prepared });
    }
    Ok(out)
}

/// `POST /api/v1/plugins/sync`: the plugins asked for (all by default) read again from their files.
/// The answer names each plugin synced with its file, and those left as they are for want of one.
#[utoipa::path(
    post,
    path = "/plugins/sync/",
    tag = "plugins",
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "synced: `synced` (id, name, version, file) and `without_file`"),
        (status = "4XX", description = "refused: the error names the file, plugin or node", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn sync(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let ids = requested_ids(&body)?;
    state
        .blocking(move |s| {
            let dir = s.config().data_dir.join(PLUGINS_DIR);
            let mut files = read_dir(&dir)?;
            let registered = s.store.list_plugins()?;
            if let Some(ids) = &ids {
                if let Some(stranger) = ids.iter().find(|id| !registered.iter().any(|p| p.id == **id))
                {
                    return Err(ApiError::not_found(format!("no plugin {stranger}")));
                }
            }
            let mut changes = Vec::new();
            let mut synced = Vec::new();
            let mut without_file = Vec::new();
            for record in registered
                .iter()
                .filter(|p| ids.as_ref().is_none_or(|ids| ids.contains(&p.id)))
            {
                let key = (record.name.clone(), record.version.clone());
                match files.remove(&key) {
                    Some(file) => {
                        synced.push(json!({"id": record.id, "name": record.name,
                            "version": record.version, "file": file.path.display().to_string()}));
                        let Prepared { plugin, graphs, .. } = file.prepared;
                        changes.push((record.id, plugin, graphs));
                    }
                    None if ids.is_some() => {
                        return Err(ApiError::not_found(format!(
                            "plugin {} {} (id {}) has no file in {}: put its document there \
                             (as `plinthctl plugin register --file` takes it) to sync it",
                            record.name,
                            record.version,
                            record.id,
                            dir.display()
                        )));
                    }
                    None => without_file.push(json!({"id": record.id, "name": record.name,
                        "version": record.version})),
                }
            }
            s.store.replace_plugins(&changes)?;
            for change in &changes {
                tracing::info!(plugin = %change.1.name, version = %change.1.version, "plugin synced from its file");
            }
            Ok(Json(json!({"synced": synced, "without_file": without_file})))
        })
        .await
}
