//! The embedded backend: one SQLite file in WAL mode, migrated at open.

use super::schema::MIGRATIONS;
use super::*;
use crate::clock::now_ms;
use plinth_common::json::{Json, Keys};
use rusqlite::{params, Connection, OptionalExtension, Row, Transaction};
use std::path::Path;
use std::sync::Mutex;

/// SQLite-backed [`Store`]. One connection behind a mutex: SQLite serialises writers anyway, and every
/// method is a short transaction.
pub struct SqliteStore {
    conn: Mutex<Connection>,
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        match e {
            rusqlite::Error::SqliteFailure(f, ref msg)
                if f.code == rusqlite::ErrorCode::ConstraintViolation =>
            {
                StoreError::Conflict(msg.clone().unwrap_or_else(|| "constraint violated".into()))
            }
            other => StoreError::Database(other.to_string()),
        }
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> String {
    // The controller's own types always serialise.
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

fn from_json<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

fn id(v: i64) -> u64 {
    u64::try_from(v).unwrap_or_default()
}

fn sql_id(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

const NODE_COLUMNS: &str =
    "id, node_key, public_key, name, admission, status, cluster_id, pending_roles, \
    roles, tags, labels, rack, facts, registered_at, \
    MAX(last_seen, COALESCE((SELECT s.last_seen FROM node_seen s WHERE s.node_id = nodes.id), 0)), \
    COALESCE((SELECT MAX(l.revision) FROM task_lists l WHERE l.node_id = nodes.id), 0), model";

fn admission_text(a: NodeAdmission) -> &'static str {
    match a {
        NodeAdmission::Discovered => "discovered",
        NodeAdmission::Accepted => "accepted",
    }
}

fn node_from_row(row: &Row<'_>) -> rusqlite::Result<Result<NodeRecord, StoreError>> {
    node_record(row, true)
}

/// A node's record from its row; its facts left `null` unless `with_facts`.
fn node_record(
    row: &Row<'_>,
    with_facts: bool,
) -> rusqlite::Result<Result<NodeRecord, StoreError>> {
    let admission: String = row.get(4)?;
    let status: String = row.get(5)?;
    let pending: String = row.get(7)?;
    let roles: String = row.get(8)?;
    let tags: String = row.get(9)?;
    let labels: String = row.get(10)?;
    let facts: String = row.get(12)?;
    let model: String = row.get(16)?;
    let base = (
        row.get::<_, i64>(0)?,
        row.get::<_, String>(1)?,
        row.get::<_, String>(2)?,
        row.get::<_, String>(3)?,
        row.get::<_, Option<i64>>(6)?,
        row.get::<_, Option<String>>(11)?,
        row.get::<_, i64>(13)?,
        row.get::<_, i64>(14)?,
        row.get::<_, i64>(15)?,
    );
    Ok((|| {
        Ok(NodeRecord {
            id: id(base.0),
            node_key: base.1,
            public_key: base.2,
            name: base.3,
            admission: match admission.as_str() {
                "accepted" => NodeAdmission::Accepted,
                "discovered" => NodeAdmission::Discovered,
                other => return Err(StoreError::Corrupt(format!("node admission {other:?}"))),
            },
            status: match status.as_str() {
                "discover" => NodeStatus::Discover,
                "deploying" => NodeStatus::Deploying,
                "ready" => NodeStatus::Ready,
                "error" => NodeStatus::Error,
                other => return Err(StoreError::Corrupt(format!("node status {other:?}"))),
            },
            cluster_id: base.4.map(id),
            pending_roles: from_json(&pending, "node pending_roles")?,
            roles: from_json(&roles, "node roles")?,
            tags: from_json(&tags, "node tags")?,
            labels: from_json(&labels, "node labels")?,
            rack: base.5,
            facts: if with_facts {
                from_json(&facts, "node facts")?
            } else {
                serde_json::Value::Null
            },
            registered_at_ms: base.6,
            last_seen_ms: base.7,
            revision: id(base.8),
            model: from_json(&model, "node model")?,
        })
    })())
}

fn query_nodes(
    tx: &Connection,
    where_clause: &str,
    args: &[&dyn rusqlite::ToSql],
) -> StoreResult<Vec<NodeRecord>> {
    let mut stmt = tx.prepare_cached(&format!(
        "SELECT {NODE_COLUMNS} FROM nodes {where_clause} ORDER BY id"
    ))?;
    let rows = stmt.query_map(args, node_from_row)?;
    let mut out = Vec::new();
    for row in rows {
        out.push(row??);
    }
    Ok(out)
}

/// As [`query_nodes`], each node's facts read apart as the compact tree a deployment holds, their
/// keys shared through `keys` (the records' own facts are `null`): a deployment's start reads every
/// node of the cluster, and the facts as `serde_json` trees were its largest part.
fn query_nodes_compact(
    tx: &Connection,
    where_clause: &str,
    args: &[&dyn rusqlite::ToSql],
    keys: &mut Keys,
) -> StoreResult<(Vec<NodeRecord>, Vec<Json>)> {
    let mut stmt = tx.prepare_cached(&format!(
        "SELECT {NODE_COLUMNS} FROM nodes {where_clause} ORDER BY id"
    ))?;
    let mut rows = stmt.query(args)?;
    let (mut nodes, mut facts) = (Vec::new(), Vec::new());
    while let Some(row) = rows.next()? {
        let text: String = row.get(12)?;
        facts.push(super::compact_facts(&text, keys)?);
        nodes.push(node_record(row, false)??);
    }
    Ok((nodes, facts))
}

fn one_node(tx: &Connection, node_id: u64) -> StoreResult<NodeRecord> {
    query_nodes(tx, "WHERE id = ?1", &[&sql_id(node_id)])?
        .pop()
        .ok_or_else(|| StoreError::NotFound {
            kind: "node",
            id: node_id.to_string(),
        })
}

fn deployment_from_row(row: &Row<'_>) -> rusqlite::Result<Result<DeploymentRecord, StoreError>> {
    let status: String = row.get(3)?;
    let node_ids: String = row.get(4)?;
    let options: String = row.get(5)?;
    let state: String = row.get(6)?;
    let state_gz: Option<Vec<u8>> = row.get(9)?;
    let base = (
        row.get::<_, i64>(0)?,
        row.get::<_, i64>(1)?,
        row.get::<_, String>(2)?,
        row.get::<_, i64>(7)?,
        row.get::<_, Option<i64>>(8)?,
    );
    Ok((|| {
        Ok(DeploymentRecord {
            id: id(base.0),
            cluster_id: id(base.1),
            graph_type: base.2,
            status: DeploymentStatus::parse(&status)
                .ok_or_else(|| StoreError::Corrupt(format!("deployment status {status:?}")))?,
            node_ids: from_json(&node_ids, "deployment node_ids")?,
            options: from_json(&options, "deployment options")?,
            state: super::compressed::stored_json(state_gz, &state, "deployment state")?,
            created_at_ms: base.3,
            finished_at_ms: base.4,
        })
    })())
}

/// A deployment's columns as [`deployment_from_row`] reads them: its orchestration state is `state_gz`
/// (compressed) where it was written so, else the text in `state`.
const DEPLOYMENT_COLUMNS: &str =
    "id, cluster_id, graph_type, status, node_ids, options, state, created_at, finished_at, state_gz";
/// [`DEPLOYMENT_COLUMNS`] with the orchestration state left out (read as JSON `null`), for lists:
/// the state places every node in the strategy, megabytes for a large fleet.
const DEPLOYMENT_LIST_COLUMNS: &str =
    "id, cluster_id, graph_type, status, node_ids, options, 'null', created_at, finished_at, NULL";

fn query_deployments(
    tx: &Connection,
    columns: &str,
    where_clause: &str,
    args: &[&dyn rusqlite::ToSql],
) -> StoreResult<Vec<DeploymentRecord>> {
    let mut stmt = tx.prepare_cached(&format!(
        "SELECT {columns} FROM deployments {where_clause} ORDER BY id DESC"
    ))?;
    let rows = stmt.query_map(args, deployment_from_row)?;
    let mut out = Vec::new();
    for row in rows {
        out.push(row??);
    }
    Ok(out)
}

/// One deployment with these columns; `NotFound` when there is none.
fn deployment_by_id(tx: &Connection, columns: &str, dep_id: u64) -> StoreResult<DeploymentRecord> {
    query_deployments(tx, columns, "WHERE id = ?1", &[&sql_id(dep_id)])?
        .pop()
        .ok_or_else(|| StoreError::NotFound {
            kind: "deployment",
            id: dep_id.to_string(),
        })
}

fn graph_from_row(row: &Row<'_>) -> rusqlite::Result<Result<GraphRecord, StoreError>> {
    let kind: String = row.get(1)?;
    let owner_id = id(row.get(2)?);
    let tasks: String = row.get(5)?;
    let base = (
        row.get::<_, i64>(0)?,
        row.get::<_, String>(3)?,
        row.get::<_, Option<String>>(4)?,
        row.get::<_, Option<String>>(6)?,
    );
    Ok((|| {
        let owner = match kind.as_str() {
            "release" => GraphOwner::Release(owner_id),
            "plugin" => GraphOwner::Plugin(owner_id),
            "cluster" => GraphOwner::Cluster(owner_id),
            other => return Err(StoreError::Corrupt(format!("graph owner kind {other:?}"))),
        };
        Ok(GraphRecord {
            id: id(base.0),
            owner,
            graph_type: base.1,
            body: GraphBody {
                name: base.2,
                tasks: from_json(&tasks, "graph tasks")?,
                node_filter: base.3,
            },
        })
    })())
}

impl SqliteStore {
    /// Opens (creating if needed) the database file and runs pending migrations.
    pub fn open(path: &Path) -> StoreResult<Self> {
        let conn = Connection::open(path)?;
        Self::setup(conn)
    }

    /// An in-memory database, for tests and dry runs.
    pub fn in_memory() -> StoreResult<Self> {
        Self::setup(Connection::open_in_memory()?)
    }

    fn setup(mut conn: Connection) -> StoreResult<Self> {
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // FULL: a commit is on disk (the WAL fsynced) before it returns, so nothing acknowledged to an
        // agent or an operator is lost at power loss.
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        let applied: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        let applied = usize::try_from(applied).unwrap_or(0);
        if applied > MIGRATIONS.len() {
            return Err(StoreError::Database(format!(
                "the database has schema version {applied}, newer than this controller's {}",
                MIGRATIONS.len()
            )));
        }
        for (n, sql) in MIGRATIONS.iter().enumerate().skip(applied) {
            let tx = conn.transaction()?;
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", (n + 1) as i64)?;
            tx.commit()?;
        }
        Ok(SqliteStore {
            conn: Mutex::new(conn),
        })
    }

    /// Runs `f` in one transaction: committed if it returns `Ok`, rolled back otherwise.
    fn tx<T>(&self, f: impl FnOnce(&Transaction<'_>) -> StoreResult<T>) -> StoreResult<T> {
        let mut conn = self
            .conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let tx = conn.transaction()?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    }
}

/// How many nodes wait to be accepted (on every registration of a new discovered node).
const COUNT_DISCOVERED: &str = "SELECT COUNT(*) FROM nodes WHERE admission = 'discovered'";
/// Whether another node has a name (on every registration of a new node).
const COUNT_NAME_TAKEN: &str = "SELECT COUNT(*) FROM nodes WHERE name = ?1 AND id != ?2";

impl Store for SqliteStore {
    fn register_nodes(
        &self,
        regs: &[(&NodeRegistration, NodeAdmission)],
    ) -> StoreResult<Vec<StoreResult<NodeRecord>>> {
        self.tx(|tx| {
            regs.iter()
                .map(|(reg, admission)| match register_one(tx, reg, *admission) {
                    // Refused before it wrote anything: the others go on.
                    Err(e @ StoreError::Full(_)) => Ok(Err(e)),
                    other => other.map(Ok),
                })
                .collect()
        })
    }

    fn modify_node(
        &self,
        node_id: u64,
        change: &mut dyn FnMut(&mut NodeRecord) -> StoreResult<()>,
    ) -> StoreResult<NodeRecord> {
        self.tx(|tx| model::modify_node(tx, node_id, change))
    }

    fn update_release_data(
        &self,
        release_id: u64,
        change: &mut dyn FnMut(&mut ReleaseRecord) -> StoreResult<()>,
    ) -> StoreResult<ReleaseRecord> {
        self.tx(|tx| model::update_release_data(tx, release_id, change))
    }

    fn modify_cluster(
        &self,
        cluster_id: u64,
        change: &mut dyn FnMut(&mut ClusterRecord, &[NodeRecord]) -> StoreResult<()>,
    ) -> StoreResult<ClusterRecord> {
        self.tx(|tx| model::modify_cluster(tx, cluster_id, change))
    }

    fn create_plugin(
        &self,
        plugin: &NewPlugin,
        graphs: &std::collections::BTreeMap<String, GraphBody>,
    ) -> StoreResult<PluginRecord> {
        self.tx(|tx| model::create_plugin(tx, plugin, graphs))
    }

    fn list_plugins(&self) -> StoreResult<Vec<PluginRecord>> {
        self.tx(|tx| model::list_plugins(tx))
    }

    fn get_plugin(&self, plugin_id: u64) -> StoreResult<PluginRecord> {
        self.tx(|tx| model::plugin_row(tx, plugin_id))
    }

    fn delete_plugin(&self, plugin_id: u64) -> StoreResult<()> {
        self.tx(|tx| model::delete_plugin(tx, plugin_id))
    }

    fn save_task_states(&self, blobs: &[StateBlob], rows: &[StateRow]) -> StoreResult<()> {
        self.tx(|tx| model::save_task_states(tx, blobs, rows))
    }

    fn state_blobs(
        &self,
        hashes: &[String],
    ) -> StoreResult<Vec<(String, plinth_common::json::Json)>> {
        self.tx(|tx| model::state_blobs(tx, hashes))
    }

    fn deployment_inputs(&self, dep_id: u64) -> StoreResult<serde_json::Value> {
        self.tx(|tx| {
            let row: Option<(String, Option<Vec<u8>>)> = tx
                .query_row(
                    "SELECT inputs, inputs_gz FROM deployments WHERE id = ?1",
                    [sql_id(dep_id)],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            let (text, packed) = row.ok_or_else(|| StoreError::NotFound {
                kind: "deployment",
                id: dep_id.to_string(),
            })?;
            super::compressed::stored_json(packed, &text, "deployment inputs")
        })
    }

    fn task_states(&self, node_ids: &[u64]) -> StoreResult<Vec<(u64, String, serde_json::Value)>> {
        self.tx(|tx| model::task_states(tx, node_ids))
    }

    fn cluster_snapshot(
        &self,
        cluster_id: u64,
        graph_types: &[&str],
        old_states: bool,
    ) -> StoreResult<ClusterRecords> {
        self.tx(|tx| {
            let cluster = cluster_row(tx, cluster_id)?;
            let release = release_row(tx, cluster.release_id)?;
            let plugins = cluster
                .data
                .plugins
                .iter()
                .map(|p| model::plugin_row(tx, *p))
                .collect::<StoreResult<Vec<_>>>()?;
            let owners = std::iter::once(GraphOwner::Release(release.id))
                .chain(plugins.iter().map(|p| GraphOwner::Plugin(p.id)))
                .chain(std::iter::once(GraphOwner::Cluster(cluster.id)));
            let mut graphs = Vec::new();
            for owner in owners {
                for graph_type in graph_types {
                    match graph_row(tx, owner, graph_type) {
                        Ok(g) => graphs.push(g),
                        Err(StoreError::NotFound { kind: "graph", .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            let (nodes, node_facts) = query_nodes_compact(
                tx,
                "WHERE cluster_id = ?1",
                &[&sql_id(cluster_id)],
                &mut Keys::default(),
            )?;
            let old_states = if old_states {
                let ids: Vec<u64> = nodes.iter().map(|n| n.id).collect();
                old_states_from(model::task_states(tx, &ids)?, |h| model::state_blobs(tx, h))?
            } else {
                plinth_common::deploy::OldStates::new()
            };
            Ok(ClusterRecords {
                cluster,
                release,
                plugins,
                graphs,
                nodes,
                node_facts,
                old_states,
            })
        })
    }

    fn old_states(&self, node_ids: &[u64]) -> StoreResult<plinth_common::deploy::OldStates> {
        self.tx(|tx| {
            old_states_from(model::task_states(tx, node_ids)?, |h| {
                model::state_blobs(tx, h)
            })
        })
    }

    fn list_nodes(&self) -> StoreResult<Vec<NodeRecord>> {
        self.tx(|tx| query_nodes(tx, "", &[]))
    }

    fn node_names(&self) -> StoreResult<Vec<(u64, String)>> {
        self.tx(|tx| {
            let mut stmt = tx.prepare_cached("SELECT id, name FROM nodes ORDER BY id")?;
            let rows = stmt.query_map([], |row| Ok((id(row.get(0)?), row.get::<_, String>(1)?)))?;
            let mut out = Vec::new();
            for row in rows {
                out.push(row?);
            }
            Ok(out)
        })
    }

    fn list_nodes_page(&self, f: &NodeFilter) -> StoreResult<Vec<NodeRecord>> {
        let mut clauses = vec!["id > ?1".to_string()];
        let mut args: Vec<Box<dyn rusqlite::ToSql>> = vec![Box::new(sql_id(f.after_id))];
        if let Some(status) = f.status {
            args.push(Box::new(status.as_str()));
            clauses.push(format!("status = ?{}", args.len()));
        }
        if let Some(admission) = f.admission {
            args.push(Box::new(admission_text(admission)));
            clauses.push(format!("admission = ?{}", args.len()));
        }
        if let Some(cluster) = f.cluster_id {
            args.push(Box::new(sql_id(cluster)));
            clauses.push(format!("cluster_id = ?{}", args.len()));
        }
        if let Some(tag) = &f.tag {
            args.push(Box::new(tag.clone()));
            let n = args.len();
            clauses.push(format!(
                "(EXISTS (SELECT 1 FROM json_each(nodes.tags) WHERE value = ?{n}) \
                 OR EXISTS (SELECT 1 FROM json_each(nodes.roles) WHERE value = ?{n}) \
                 OR EXISTS (SELECT 1 FROM json_each(nodes.pending_roles) WHERE value = ?{n}) \
                 OR EXISTS (SELECT 1 FROM json_each(nodes.model, '$.tags_added') WHERE value = ?{n}))"
            ));
        }
        if let Some(name) = &f.name {
            args.push(Box::new(name.to_ascii_lowercase()));
            clauses.push(format!("instr(lower(name), ?{}) > 0", args.len()));
        }
        args.push(Box::new(i64::try_from(f.limit).unwrap_or(i64::MAX)));
        let sql = format!(
            "WHERE {} ORDER BY id LIMIT ?{}",
            clauses.join(" AND "),
            args.len()
        );
        let refs: Vec<&dyn rusqlite::ToSql> = args.iter().map(|a| a.as_ref()).collect();
        self.tx(|tx| {
            let mut stmt = tx.prepare_cached(&format!("SELECT {NODE_COLUMNS} FROM nodes {sql}"))?;
            let rows = stmt.query_map(refs.as_slice(), node_from_row)?;
            let mut out = Vec::new();
            for row in rows {
                out.push(row??);
            }
            Ok(out)
        })
    }

    fn get_node(&self, node_id: u64) -> StoreResult<NodeRecord> {
        self.tx(|tx| one_node(tx, node_id))
    }

    fn set_admission(&self, node_id: u64, admission: NodeAdmission) -> StoreResult<NodeRecord> {
        self.tx(|tx| {
            one_node(tx, node_id)?;
            tx.execute(
                "UPDATE nodes SET admission = ?2 WHERE id = ?1",
                params![sql_id(node_id), admission_text(admission)],
            )?;
            one_node(tx, node_id)
        })
    }

    fn delete_node(&self, node_id: u64) -> StoreResult<()> {
        self.tx(|tx| {
            let node = one_node(tx, node_id)?;
            if node.status == NodeStatus::Deploying {
                return Err(StoreError::Conflict(format!(
                    "node {node_id} takes part in a running deployment"
                )));
            }
            tx.execute("DELETE FROM nodes WHERE id = ?1", [sql_id(node_id)])?;
            tx.execute(
                "DELETE FROM node_seen WHERE node_id = ?1",
                [sql_id(node_id)],
            )?;
            tx.execute("DELETE FROM refusals WHERE node_id = ?1", [sql_id(node_id)])?;
            Ok(())
        })
    }

    fn touch_nodes(&self, seen: &[(u64, i64)]) -> StoreResult<()> {
        self.tx(|tx| {
            let mut stmt = tx.prepare_cached(
                "INSERT INTO node_seen (node_id, last_seen) \
                 SELECT ?1, ?2 WHERE EXISTS (SELECT 1 FROM nodes WHERE id = ?1) \
                 ON CONFLICT (node_id) DO UPDATE SET last_seen = MAX(last_seen, excluded.last_seen)",
            )?;
            for (node_id, at) in seen {
                stmt.execute(params![sql_id(*node_id), at])?;
            }
            Ok(())
        })
    }

    fn assign_nodes(&self, cluster_id: u64, nodes: &[NodeAssignment]) -> StoreResult<()> {
        self.tx(|tx| {
            cluster_row(tx, cluster_id)?;
            for a in nodes {
                let node = one_node(tx, a.id)?;
                if let Some(other) = node.cluster_id.filter(|c| *c != cluster_id) {
                    return Err(StoreError::Conflict(format!(
                        "node {} belongs to cluster {other}",
                        a.id
                    )));
                }
                let mut fields = node.model.clone();
                if node.cluster_id.is_none() {
                    fields.pending_addition = true;
                }
                tx.execute(
                    "UPDATE nodes SET cluster_id = ?2, pending_roles = ?3, model = ?4 WHERE id = ?1",
                    params![sql_id(a.id), sql_id(cluster_id), to_json(&a.roles), to_json(&fields)],
                )?;
            }
            Ok(())
        })
    }

    fn unassign_nodes(&self, cluster_id: u64, node_ids: &[u64]) -> StoreResult<()> {
        self.tx(|tx| {
            for node_id in node_ids {
                let node = one_node(tx, *node_id)?;
                if node.cluster_id != Some(cluster_id) {
                    return Err(StoreError::Conflict(format!("node {node_id} is not in cluster {cluster_id}")));
                }
                if node.status == NodeStatus::Deploying {
                    return Err(StoreError::Conflict(format!("node {node_id} takes part in a running deployment")));
                }
                tx.execute(
                    "UPDATE nodes SET cluster_id = NULL, pending_roles = '[]', roles = '[]', status = 'discover', model = '{}' WHERE id = ?1",
                    [sql_id(*node_id)],
                )?;
            }
            Ok(())
        })
    }

    fn create_release(
        &self,
        release: &NewRelease,
        graphs: &std::collections::BTreeMap<String, GraphBody>,
    ) -> StoreResult<ReleaseRecord> {
        self.tx(|tx| {
            tx.execute(
                "INSERT INTO releases (name, version, data) VALUES (?1, ?2, ?3)",
                params![release.name, release.version, to_json(&release.data)],
            )
            .map_err(|e| match StoreError::from(e) {
                StoreError::Conflict(_) => StoreError::Conflict(format!(
                    "release {} {} exists already",
                    release.name, release.version
                )),
                other => other,
            })?;
            let release_id = id(tx.last_insert_rowid());
            for (graph_type, graph) in graphs {
                insert_graph(tx, GraphOwner::Release(release_id), graph_type, graph)?;
            }
            release_row(tx, release_id)
        })
    }

    fn list_releases(&self) -> StoreResult<Vec<ReleaseRecord>> {
        self.tx(|tx| {
            let ids: Vec<i64> = tx
                .prepare("SELECT id FROM releases ORDER BY id")?
                .query_map([], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            ids.into_iter().map(|i| release_row(tx, id(i))).collect()
        })
    }

    fn get_release(&self, release_id: u64) -> StoreResult<ReleaseRecord> {
        self.tx(|tx| release_row(tx, release_id))
    }

    fn create_cluster(&self, cluster: &NewCluster) -> StoreResult<ClusterRecord> {
        self.tx(|tx| {
            release_row(tx, cluster.release_id)?;
            tx.execute(
                "INSERT INTO clusters (name, release_id, settings, generated) VALUES (?1, ?2, ?3, ?4)",
                params![
                    cluster.name,
                    sql_id(cluster.release_id),
                    to_json(&cluster.settings),
                    to_json(&cluster.generated)
                ],
            )
            .map_err(|e| match StoreError::from(e) {
                StoreError::Conflict(_) => {
                    StoreError::Conflict(format!("cluster {:?} exists already", cluster.name))
                }
                other => other,
            })?;
            let cluster_id = id(tx.last_insert_rowid());
            // Attributes made before the cluster had its id name it now (Nailgun's `{cluster.id}`).
            let mut settings = cluster.settings.clone();
            let mut generated = cluster.generated.clone();
            plinth_common::model::format_cluster_id(&mut settings, cluster_id);
            plinth_common::model::format_cluster_id(&mut generated, cluster_id);
            if settings != cluster.settings || generated != cluster.generated {
                tx.execute(
                    "UPDATE clusters SET settings = ?2, generated = ?3 WHERE id = ?1",
                    params![sql_id(cluster_id), to_json(&settings), to_json(&generated)],
                )?;
            }
            cluster_row(tx, cluster_id)
        })
    }

    fn list_clusters(&self) -> StoreResult<Vec<ClusterRecord>> {
        self.tx(|tx| {
            let ids: Vec<i64> = tx
                .prepare("SELECT id FROM clusters ORDER BY id")?
                .query_map([], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            ids.into_iter().map(|i| cluster_row(tx, id(i))).collect()
        })
    }

    fn get_cluster(&self, cluster_id: u64) -> StoreResult<ClusterRecord> {
        self.tx(|tx| cluster_row(tx, cluster_id))
    }

    fn list_graphs(&self, owner: GraphOwner) -> StoreResult<Vec<GraphRecord>> {
        self.tx(|tx| {
            owner_exists(tx, owner)?;
            let mut stmt = tx.prepare_cached(
                "SELECT id, owner_kind, owner_id, graph_type, name, tasks, node_filter FROM graphs \
                 WHERE owner_kind = ?1 AND owner_id = ?2 ORDER BY graph_type",
            )?;
            let rows = stmt.query_map(params![owner.kind(), sql_id(owner.id())], graph_from_row)?;
            let mut out = Vec::new();
            for row in rows {
                out.push(row??);
            }
            Ok(out)
        })
    }

    fn get_graph(&self, owner: GraphOwner, graph_type: &str) -> StoreResult<GraphRecord> {
        self.tx(|tx| graph_row(tx, owner, graph_type))
    }

    fn put_graph(
        &self,
        owner: GraphOwner,
        graph_type: &str,
        graph: &GraphBody,
        replace: bool,
    ) -> StoreResult<GraphRecord> {
        self.tx(|tx| {
            owner_exists(tx, owner)?;
            let exists = graph_row(tx, owner, graph_type).is_ok();
            if exists && !replace {
                return Err(StoreError::Conflict(format!(
                    "{} {} has a graph of type {graph_type:?} already",
                    owner.kind(),
                    owner.id()
                )));
            }
            insert_graph(tx, owner, graph_type, graph)?;
            graph_row(tx, owner, graph_type)
        })
    }

    fn list_all_graphs(&self) -> StoreResult<Vec<GraphRecord>> {
        self.tx(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT id, owner_kind, owner_id, graph_type, name, tasks, node_filter FROM graphs ORDER BY id",
            )?;
            let rows = stmt.query_map([], graph_from_row)?;
            let mut out = Vec::new();
            for row in rows {
                out.push(row??);
            }
            Ok(out)
        })
    }

    fn graph_by_id(&self, graph_id: u64) -> StoreResult<GraphRecord> {
        self.tx(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT id, owner_kind, owner_id, graph_type, name, tasks, node_filter FROM graphs WHERE id = ?1",
            )?;
            match stmt.query_row([sql_id(graph_id)], graph_from_row).optional()? {
                Some(r) => r,
                None => Err(StoreError::NotFound {
                    kind: "graph",
                    id: graph_id.to_string(),
                }),
            }
        })
    }

    fn delete_graph(&self, owner: GraphOwner, graph_type: &str) -> StoreResult<()> {
        self.tx(|tx| {
            graph_row(tx, owner, graph_type)?;
            tx.execute(
                "DELETE FROM graphs WHERE owner_kind = ?1 AND owner_id = ?2 AND graph_type = ?3",
                params![owner.kind(), sql_id(owner.id()), graph_type],
            )?;
            Ok(())
        })
    }

    fn create_deployment(&self, new: &NewDeployment) -> StoreResult<DeploymentRecord> {
        self.tx(|tx| {
            cluster_row(tx, new.cluster_id)?;
            let running: Option<i64> = tx
                .query_row(
                    "SELECT id FROM deployments WHERE cluster_id = ?1 AND status = 'running'",
                    [sql_id(new.cluster_id)],
                    |r| r.get(0),
                )
                .optional()?;
            if let Some(running) = running {
                return Err(StoreError::Conflict(format!(
                    "cluster {} has a running deployment ({running})",
                    new.cluster_id
                )));
            }
            model::save_primaries(tx, &new.primaries)?;
            tx.execute(
                "INSERT INTO deployments (cluster_id, graph_type, status, node_ids, options, state, created_at, inputs_gz, state_gz) \
                 VALUES (?1, ?2, 'running', ?3, ?4, '', ?5, ?6, ?7)",
                params![sql_id(new.cluster_id), new.graph_type, to_json(&new.node_ids), to_json(&new.options), new.now_ms, new.inputs.as_bytes(), new.state.as_bytes()],
            )?;
            let dep_id = id(tx.last_insert_rowid());
            if new.deploys {
                tx.execute(
                    "UPDATE clusters SET data = json_set(data, '$.status', 'deployment') WHERE id = ?1",
                    [sql_id(new.cluster_id)],
                )?;
                let mut stmt = tx.prepare_cached("UPDATE nodes SET status = 'deploying' WHERE id = ?1")?;
                for node in &new.node_ids {
                    stmt.execute([sql_id(*node)])?;
                }
            }
            // Its state is the one just written: not read back.
            deployment_by_id(tx, DEPLOYMENT_LIST_COLUMNS, dep_id)
        })
    }

    fn get_deployment(&self, dep_id: u64) -> StoreResult<DeploymentRecord> {
        self.tx(|tx| deployment_by_id(tx, DEPLOYMENT_COLUMNS, dep_id))
    }

    fn list_deployments(&self, cluster_id: Option<u64>) -> StoreResult<Vec<DeploymentRecord>> {
        self.tx(|tx| match cluster_id {
            Some(c) => query_deployments(
                tx,
                DEPLOYMENT_LIST_COLUMNS,
                "WHERE cluster_id = ?1",
                &[&sql_id(c)],
            ),
            None => query_deployments(tx, DEPLOYMENT_LIST_COLUMNS, "", &[]),
        })
    }

    fn running_deployments(&self) -> StoreResult<Vec<DeploymentRecord>> {
        self.tx(|tx| query_deployments(tx, DEPLOYMENT_COLUMNS, "WHERE status = 'running'", &[]))
    }

    fn publish_lists(
        &self,
        deployment_id: u64,
        lists: &mut [TaskList],
        state: &serde_json::Value,
        events: &[DeploymentEvent],
    ) -> StoreResult<()> {
        let state = super::compressed::packed(state, "the deployment's state")?;
        self.tx(|tx| {
            set_state(tx, deployment_id, Some(&state), DeploymentStatus::Running)?;
            append_events(tx, deployment_id, events)?;
            insert_lists(tx, deployment_id, lists)
        })
    }

    fn finish_deployment(&self, dep_id: u64, end: &DeploymentEnd<'_>) -> StoreResult<()> {
        let state = super::compressed::packed(end.state, "the deployment's state")?;
        self.tx(|tx| finish(tx, dep_id, Some(&state), end.events, &Ending::of(end)))
    }

    fn record_progress(&self, dep_id: u64, p: &mut Progress<'_>) -> StoreResult<()> {
        self.tx(|tx| {
            let status: String = tx
                .query_row(
                    "SELECT status FROM deployments WHERE id = ?1",
                    [sql_id(dep_id)],
                    |r| r.get(0),
                )
                .optional()?
                .ok_or_else(|| StoreError::NotFound {
                    kind: "deployment",
                    id: dep_id.to_string(),
                })?;
            if status != DeploymentStatus::Running.as_str() {
                return Err(StoreError::Conflict(format!(
                    "deployment {dep_id} is not running (it is {status})"
                )));
            }
            insert_lists(tx, dep_id, p.lists)?;
            if !p.task_rows.is_empty() {
                model::save_task_states(tx, &[], p.task_rows)?;
            }
            match p.end {
                Some(end) => finish(tx, dep_id, p.state, p.events, &end),
                None => {
                    if p.state.is_some() {
                        set_state(tx, dep_id, p.state, DeploymentStatus::Running)?;
                    }
                    append_events(tx, dep_id, p.events)
                }
            }
        })
    }

    fn append_events(&self, dep_id: u64, events: &[DeploymentEvent]) -> StoreResult<()> {
        self.tx(|tx| append_events(tx, dep_id, events))
    }

    fn events(&self, deployment_id: u64, after: u64) -> StoreResult<Vec<(u64, DeploymentEvent)>> {
        self.tx(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT seq, event FROM events WHERE deployment_id = ?1 AND seq > ?2 ORDER BY seq",
            )?;
            let rows = stmt.query_map(params![sql_id(deployment_id), sql_id(after)], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (seq, text) = row?;
                out.push((id(seq), from_json(&text, "event")?));
            }
            Ok(out)
        })
    }

    fn issued_list(&self, node_id: u64, revision: u64) -> StoreResult<Option<TaskList>> {
        self.tx(|tx| {
            let mut stmt = tx.prepare_cached(&format!(
                "{} WHERE l.node_id = ?1 AND l.revision = ?2",
                cluster::LISTS
            ))?;
            let mut rows = stmt.query_map(
                params![sql_id(node_id), sql_id(revision)],
                cluster::list_row,
            )?;
            rows.next()
                .transpose()?
                .map(|row| cluster::join_row(&mut bodies::Joiner::default(), row))
                .transpose()
        })
    }

    fn published_lists(&self, deployment_id: u64) -> StoreResult<Vec<TaskList>> {
        self.tx(|tx| {
            let mut stmt = tx.prepare_cached(&format!(
                "{} WHERE l.deployment_id = ?1 ORDER BY l.node_id, l.revision",
                cluster::LISTS
            ))?;
            let rows = stmt
                .query_map([sql_id(deployment_id)], cluster::list_row)?
                .collect::<Result<Vec<_>, _>>()?;
            let mut joiner = bodies::Joiner::default();
            rows.into_iter()
                .map(|row| cluster::join_row(&mut joiner, row))
                .collect()
        })
    }

    fn store_result_batches(
        &self,
        batches: &[(u64, &[TaskResult])],
    ) -> StoreResult<Vec<Vec<Stored>>> {
        self.tx(|tx| {
            batches
                .iter()
                .map(|(node_id, results)| store_node_results(tx, *node_id, results))
                .collect()
        })
    }

    fn record_refusals(&self, node_id: u64, refusals: &[NewRefusal]) -> StoreResult<()> {
        self.tx(|tx| {
            let mut insert = tx.prepare_cached(
                "INSERT INTO refusals (node_id, at_ms, kind, deployment_id, reason, detail) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for r in refusals {
                insert.execute(params![
                    sql_id(node_id),
                    r.at_ms,
                    r.kind,
                    r.deployment_id.map(sql_id),
                    r.reason,
                    to_json(&r.detail)
                ])?;
            }
            tx.execute(
                "DELETE FROM refusals WHERE node_id = ?1 AND seq NOT IN \
                 (SELECT seq FROM refusals WHERE node_id = ?1 ORDER BY seq DESC LIMIT ?2)",
                params![sql_id(node_id), MAX_REFUSALS_PER_NODE as i64],
            )?;
            Ok(())
        })
    }

    fn node_refusals(&self, node_id: u64) -> StoreResult<Vec<RefusalRecord>> {
        self.tx(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT seq, at_ms, kind, deployment_id, reason, detail FROM refusals \
                 WHERE node_id = ?1 ORDER BY seq DESC",
            )?;
            let rows = stmt.query_map([sql_id(node_id)], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<i64>>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (seq, at_ms, kind, dep, reason, detail) = row?;
                out.push(RefusalRecord {
                    seq: id(seq),
                    node_id,
                    refusal: NewRefusal {
                        kind,
                        deployment_id: dep.map(id),
                        reason,
                        detail: from_json(&detail, "refusal")?,
                        at_ms,
                    },
                });
            }
            Ok(out)
        })
    }

    fn deployment_results(&self, deployment_id: u64) -> StoreResult<Vec<(u64, TaskResult)>> {
        self.tx(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT node_id, result FROM results WHERE deployment_id = ?1 ORDER BY seq",
            )?;
            let rows = stmt.query_map([sql_id(deployment_id)], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (node, text) = row?;
                out.push((id(node), from_json(&text, "task result")?));
            }
            Ok(out)
        })
    }

    fn put_strategy(
        &self,
        cluster_id: u64,
        name: &str,
        document: &serde_json::Value,
        source: &serde_json::Value,
        replace: bool,
    ) -> StoreResult<StrategyRecord> {
        self.tx(|tx| {
            cluster_row(tx, cluster_id)?;
            let exists = strategy_row(tx, cluster_id, name).is_ok();
            if exists && !replace {
                return Err(StoreError::Conflict(format!(
                    "cluster {cluster_id} has a strategy named {name:?} already"
                )));
            }
            tx.execute(
                "INSERT INTO strategies (cluster_id, name, document, source) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (cluster_id, name) DO UPDATE SET document = excluded.document, \
                 source = excluded.source",
                params![sql_id(cluster_id), name, to_json(document), to_json(source)],
            )?;
            strategy_row(tx, cluster_id, name)
        })
    }

    fn list_strategies(&self, cluster_id: u64) -> StoreResult<Vec<StrategyRecord>> {
        self.tx(|tx| {
            cluster_row(tx, cluster_id)?;
            let names: Vec<String> = tx
                .prepare_cached("SELECT name FROM strategies WHERE cluster_id = ?1 ORDER BY name")?
                .query_map([sql_id(cluster_id)], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            names
                .iter()
                .map(|n| strategy_row(tx, cluster_id, n))
                .collect()
        })
    }

    fn get_strategy(&self, cluster_id: u64, name: &str) -> StoreResult<StrategyRecord> {
        self.tx(|tx| strategy_row(tx, cluster_id, name))
    }

    fn put_configuration(&self, record: &ConfigurationRecord) -> StoreResult<ConfigurationRecord> {
        self.tx(|tx| {
            cluster_row(tx, record.cluster_id)?;
            tx.execute(
                "INSERT INTO deployment_configurations (cluster_id, name, configuration, source) \
                 VALUES (?1, ?2, ?3, ?4) ON CONFLICT (cluster_id) DO UPDATE SET name = excluded.name, \
                 configuration = excluded.configuration, source = excluded.source",
                params![
                    sql_id(record.cluster_id),
                    record.name,
                    to_json(&record.configuration),
                    to_json(&record.source)
                ],
            )?;
            configuration_row(tx, record.cluster_id)
        })
    }

    fn get_configuration(&self, cluster_id: u64) -> StoreResult<ConfigurationRecord> {
        self.tx(|tx| configuration_row(tx, cluster_id))
    }

    fn delete_configuration(&self, cluster_id: u64) -> StoreResult<()> {
        self.tx(|tx| {
            configuration_row(tx, cluster_id)?;
            tx.execute(
                "DELETE FROM deployment_configurations WHERE cluster_id = ?1",
                [sql_id(cluster_id)],
            )?;
            Ok(())
        })
    }

    fn delete_strategy(&self, cluster_id: u64, name: &str) -> StoreResult<()> {
        self.tx(|tx| {
            strategy_row(tx, cluster_id, name)?;
            tx.execute(
                "DELETE FROM strategies WHERE cluster_id = ?1 AND name = ?2",
                params![sql_id(cluster_id), name],
            )?;
            Ok(())
        })
    }

    fn create_token(&self, name: &str, hash: &str, role: TokenRole) -> StoreResult<TokenRecord> {
        self.tx(|tx| {
            let taken: bool = tx
                .prepare_cached("SELECT 1 FROM tokens WHERE name = ?1 AND revoked_at IS NULL")?
                .exists([name])?;
            if taken {
                return Err(StoreError::Conflict(format!(
                    "a token named {name:?} exists: revoke it first, or choose another name"
                )));
            }
            tx.execute(
                "INSERT INTO tokens (name, hash, role) VALUES (?1, ?2, ?3)",
                params![name, hash, to_json(&role).trim_matches('"')],
            )?;
            Ok(TokenRecord {
                id: id(tx.last_insert_rowid()),
                name: name.into(),
                hash: hash.into(),
                role,
                revoked_at_ms: None,
            })
        })
    }

    fn list_tokens(&self) -> StoreResult<Vec<TokenRecord>> {
        self.tx(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT id, name, hash, role, revoked_at FROM tokens ORDER BY id",
            )?;
            let rows = stmt.query_map([], token_from_row)?;
            let mut out = Vec::new();
            for row in rows {
                out.push(row??);
            }
            Ok(out)
        })
    }

    fn token_by_hash(&self, hash: &str) -> StoreResult<Option<TokenRecord>> {
        self.tx(|tx| {
            tx.prepare_cached(
                "SELECT id, name, hash, role, revoked_at FROM tokens WHERE hash = ?1",
            )?
            .query_row([hash], token_from_row)
            .optional()?
            .transpose()
        })
    }

    fn revoke_token(&self, name: &str, now_ms: i64) -> StoreResult<usize> {
        self.tx(|tx| {
            let n = tx.execute(
                "UPDATE tokens SET revoked_at = ?2 WHERE name = ?1 AND revoked_at IS NULL",
                params![name, now_ms],
            )?;
            if n == 0 {
                return Err(StoreError::NotFound {
                    kind: "token",
                    id: format!("{name:?} (not revoked)"),
                });
            }
            Ok(n)
        })
    }

    fn beat_controller(&self, beat: &ControllerBeat) -> StoreResult<()> {
        self.tx(|tx| cluster::beat(tx, beat))
    }

    fn controllers(&self) -> StoreResult<Vec<ControllerRecord>> {
        self.tx(|tx| cluster::controllers(tx))
    }

    fn claim_lease(
        &self,
        holder: &str,
        held: Option<u64>,
        now_ms: i64,
        ttl_ms: i64,
    ) -> StoreResult<Option<u64>> {
        self.tx(|tx| cluster::claim(tx, holder, held, now_ms, ttl_ms))
    }

    fn release_lease(&self, holder: &str, token: u64) -> StoreResult<()> {
        self.tx(|tx| cluster::release(tx, holder, token))
    }

    fn lease(&self) -> StoreResult<Option<LeaseRecord>> {
        self.tx(|tx| cluster::lease(tx))
    }

    fn request_cancel(&self, dep_id: u64, by: &str) -> StoreResult<DeploymentRecord> {
        self.tx(|tx| {
            let changed = tx.execute(
                "UPDATE deployments SET cancel_by = ?2 WHERE id = ?1 AND status = 'running'",
                params![sql_id(dep_id), by],
            )?;
            let dep = deployment_by_id(tx, DEPLOYMENT_COLUMNS, dep_id)?;
            if changed == 0 {
                return Err(StoreError::Conflict(format!(
                    "deployment {dep_id} is not running (it is {})",
                    dep.status.as_str()
                )));
            }
            Ok(dep)
        })
    }

    fn cancel_requests(&self) -> StoreResult<Vec<(u64, String)>> {
        self.tx(|tx| cluster::cancel_requests(tx))
    }

    fn running_ids(&self) -> StoreResult<Vec<u64>> {
        self.tx(|tx| cluster::running_ids(tx))
    }

    fn lists_after(
        &self,
        revision: u64,
        whole: &dyn Fn(u64) -> bool,
    ) -> StoreResult<Vec<Published>> {
        self.tx(|tx| cluster::lists_after(tx, revision, whole))
    }

    fn results_of_nodes(
        &self,
        deployment_id: u64,
        node_ids: &[u64],
    ) -> StoreResult<Vec<(u64, Vec<TaskResult>)>> {
        self.tx(|tx| {
            node_ids
                .iter()
                .map(|n| Ok((*n, cluster::node_results(tx, deployment_id, *n)?)))
                .filter(|r| !matches!(r, Ok((_, rs)) if rs.is_empty()))
                .collect()
        })
    }
}

fn token_from_row(r: &Row<'_>) -> rusqlite::Result<StoreResult<TokenRecord>> {
    let (tid, name, hash, role, revoked) = (
        r.get::<_, i64>(0)?,
        r.get::<_, String>(1)?,
        r.get::<_, String>(2)?,
        r.get::<_, String>(3)?,
        r.get::<_, Option<i64>>(4)?,
    );
    let role = match role.as_str() {
        "admin" => TokenRole::Admin,
        "read_only" => TokenRole::ReadOnly,
        other => return Ok(Err(StoreError::Corrupt(format!("token role {other:?}")))),
    };
    Ok(Ok(TokenRecord {
        id: id(tid),
        name,
        hash,
        role,
        revoked_at_ms: revoked,
    }))
}

fn release_row(tx: &Connection, release_id: u64) -> StoreResult<ReleaseRecord> {
    let row = tx
        .query_row(
            "SELECT id, name, version, data FROM releases WHERE id = ?1",
            [sql_id(release_id)],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                ))
            },
        )
        .optional()?
        .ok_or_else(|| StoreError::NotFound {
            kind: "release",
            id: release_id.to_string(),
        })?;
    Ok(ReleaseRecord {
        id: id(row.0),
        name: row.1,
        version: row.2,
        data: from_json(&row.3, "release data")?,
    })
}

fn cluster_row(tx: &Connection, cluster_id: u64) -> StoreResult<ClusterRecord> {
    let row = tx
        .query_row(
            "SELECT id, name, release_id, settings, data, generated FROM clusters WHERE id = ?1",
            [sql_id(cluster_id)],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                ))
            },
        )
        .optional()?
        .ok_or_else(|| StoreError::NotFound {
            kind: "cluster",
            id: cluster_id.to_string(),
        })?;
    Ok(ClusterRecord {
        id: id(row.0),
        name: row.1,
        release_id: id(row.2),
        settings: from_json(&row.3, "cluster settings")?,
        generated: from_json(&row.5, "cluster generated attributes")?,
        data: from_json(&row.4, "cluster data")?,
    })
}

/// Inserts lists, each with the next revision of the controller-wide counter.
fn insert_lists(tx: &Connection, deployment_id: u64, lists: &mut [TaskList]) -> StoreResult<()> {
    if lists.is_empty() {
        return Ok(());
    }
    // The lists' revisions in one step of the counter: the next `n`, in the lists' order.
    let n = i64::try_from(lists.len()).unwrap_or(i64::MAX);
    let last: i64 = tx
        .prepare_cached(
            "UPDATE counters SET value = value + ?1 WHERE name = 'revision' RETURNING value",
        )?
        .query_row([n], |r| r.get(0))?;
    // Every node must exist; its revision is its latest list's, so nothing of its row is written.
    let mut known = tx.prepare_cached("SELECT 1 FROM nodes WHERE id = ?1")?;
    for (i, list) in lists.iter_mut().enumerate() {
        let revision = last - n + 1 + i64::try_from(i).unwrap_or(0);
        if !known.exists([sql_id(list.node_id)])? {
            return Err(StoreError::NotFound {
                kind: "node",
                id: list.node_id.to_string(),
            });
        }
        list.revision = id(revision);
    }
    let split = bodies::split(lists);
    let mut body = tx.prepare_cached(
        "INSERT INTO task_bodies (hash, tasks) VALUES (?1, ?2) ON CONFLICT (hash) DO NOTHING",
    )?;
    for (hash, tasks) in &split.bodies {
        body.execute(params![hash, tasks])?;
    }
    let mut insert = tx.prepare_cached(
        "INSERT INTO task_lists (deployment_id, node_id, revision, list, tasks_hash) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for ((list, header), hash) in lists.iter().zip(&split.headers).zip(&split.hashes) {
        insert.execute(params![
            sql_id(deployment_id),
            sql_id(list.node_id),
            sql_id(list.revision),
            header,
            hash
        ])?;
    }
    Ok(())
}

/// Ends a deployment (see [`Store::finish_deployment`]).
fn finish(
    tx: &Connection,
    dep_id: u64,
    state: Option<&CompressedJson>,
    events: &[DeploymentEvent],
    end: &Ending<'_>,
) -> StoreResult<()> {
    set_state(tx, dep_id, state, end.status)?;
    // A cancelled deployment, and a custom graph (seed 002), leave the cluster's status as it was.
    let cluster_status = match end.status {
        DeploymentStatus::Success => Some("operational"),
        DeploymentStatus::SuccessWithFailures => Some("partially_deployed"),
        DeploymentStatus::Failed | DeploymentStatus::Running => Some("error"),
        DeploymentStatus::Cancelled => None,
    };
    if let Some(cluster_status) = cluster_status.filter(|_| end.deploys) {
        tx.execute(
            "UPDATE clusters SET data = json_set(data, '$.status', ?2) \
             WHERE id = (SELECT cluster_id FROM deployments WHERE id = ?1)",
            params![sql_id(dep_id), cluster_status],
        )?;
    }
    append_events(tx, dep_id, events)?;
    // Only a deployment that deploys moves pending roles and marks nodes ready.
    let (succeeded, untouched): (&[u64], Vec<u64>) = if end.deploys {
        (end.succeeded, end.untouched.to_vec())
    } else {
        (&[], [end.succeeded, end.untouched].concat())
    };
    for node_id in succeeded {
        let node = one_node(tx, *node_id)?;
        let mut roles = node.roles.clone();
        for role in &node.pending_roles {
            if !roles.contains(role) {
                roles.push(role.clone());
            }
        }
        let mut fields = node.model.clone();
        fields.pending_addition = false;
        fields.error_type = None;
        tx.execute(
            "UPDATE nodes SET status = 'ready', roles = ?2, pending_roles = '[]', model = ?3 WHERE id = ?1",
            params![sql_id(*node_id), to_json(&roles), to_json(&fields)],
        )?;
    }
    for node_id in end.failed {
        let mut fields = one_node(tx, *node_id)?.model;
        fields.error_type = Some("deploy".into());
        tx.execute(
            "UPDATE nodes SET status = 'error', model = ?2 WHERE id = ?1",
            params![sql_id(*node_id), to_json(&fields)],
        )?;
    }
    for node_id in &untouched {
        tx.execute(
            "UPDATE nodes SET status = CASE WHEN roles = '[]' THEN 'discover' ELSE 'ready' END \
             WHERE id = ?1 AND status = 'deploying'",
            [sql_id(*node_id)],
        )?;
    }
    Ok(())
}

/// Writes a deployment's orchestration state (compressed; `None` writes `null`) and status.
fn set_state(
    tx: &Connection,
    dep_id: u64,
    state: Option<&CompressedJson>,
    status: DeploymentStatus,
) -> StoreResult<()> {
    let finished = (status != DeploymentStatus::Running).then(now_ms);
    let (text, packed) = super::compressed::columns(state);
    let changed = tx.execute(
        "UPDATE deployments SET state = ?2, state_gz = ?3, status = ?4, finished_at = COALESCE(finished_at, ?5) \
         WHERE id = ?1",
        params![sql_id(dep_id), text, packed, status.as_str(), finished],
    )?;
    if changed == 0 {
        return Err(StoreError::NotFound {
            kind: "deployment",
            id: dep_id.to_string(),
        });
    }
    Ok(())
}

fn append_events(tx: &Connection, dep_id: u64, events: &[DeploymentEvent]) -> StoreResult<()> {
    let mut stmt =
        tx.prepare_cached("INSERT INTO events (deployment_id, event) VALUES (?1, ?2)")?;
    for e in events {
        stmt.execute(params![sql_id(dep_id), to_json(e)])?;
    }
    Ok(())
}

fn strategy_row(tx: &Connection, cluster_id: u64, name: &str) -> StoreResult<StrategyRecord> {
    let row: Option<(String, String)> = tx
        .query_row(
            "SELECT document, source FROM strategies WHERE cluster_id = ?1 AND name = ?2",
            params![sql_id(cluster_id), name],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let (doc, source) = row.ok_or_else(|| StoreError::NotFound {
        kind: "strategy",
        id: format!("{name:?} of cluster {cluster_id}"),
    })?;
    Ok(StrategyRecord {
        cluster_id,
        name: name.to_string(),
        document: from_json(&doc, "strategy")?,
        source: from_json(&source, "strategy source")?,
    })
}

fn configuration_row(tx: &Connection, cluster_id: u64) -> StoreResult<ConfigurationRecord> {
    let row: Option<(String, String, String)> = tx
        .query_row(
            "SELECT name, configuration, source FROM deployment_configurations WHERE cluster_id = ?1",
            [sql_id(cluster_id)],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    let (name, configuration, source) = row.ok_or_else(|| StoreError::NotFound {
        kind: "deployment configuration",
        id: format!("of cluster {cluster_id}"),
    })?;
    Ok(ConfigurationRecord {
        cluster_id,
        name,
        configuration: from_json(&configuration, "deployment configuration")?,
        source: from_json(&source, "deployment configuration source")?,
    })
}

fn insert_graph(
    tx: &Connection,
    owner: GraphOwner,
    graph_type: &str,
    graph: &GraphBody,
) -> StoreResult<()> {
    tx.execute(
        "INSERT INTO graphs (owner_kind, owner_id, graph_type, name, tasks, node_filter) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
         ON CONFLICT (owner_kind, owner_id, graph_type) DO UPDATE SET \
         name = excluded.name, tasks = excluded.tasks, node_filter = excluded.node_filter",
        params![
            owner.kind(),
            sql_id(owner.id()),
            graph_type,
            graph.name,
            to_json(&graph.tasks),
            graph.node_filter
        ],
    )?;
    Ok(())
}

fn owner_exists(tx: &Connection, owner: GraphOwner) -> StoreResult<()> {
    match owner {
        GraphOwner::Release(r) => release_row(tx, r).map(|_| ()),
        GraphOwner::Cluster(c) => cluster_row(tx, c).map(|_| ()),
        GraphOwner::Plugin(p) => model::plugin_row(tx, p).map(|_| ()),
    }
}

fn graph_row(tx: &Connection, owner: GraphOwner, graph_type: &str) -> StoreResult<GraphRecord> {
    owner_exists(tx, owner)?;
    let mut stmt = tx.prepare_cached(
        "SELECT id, owner_kind, owner_id, graph_type, name, tasks, node_filter FROM graphs \
         WHERE owner_kind = ?1 AND owner_id = ?2 AND graph_type = ?3",
    )?;
    let row = stmt
        .query_row(
            params![owner.kind(), sql_id(owner.id()), graph_type],
            graph_from_row,
        )
        .optional()?;
    match row {
        Some(r) => r,
        None => Err(StoreError::NotFound {
            kind: "graph",
            id: format!("{graph_type:?} of {} {}", owner.kind(), owner.id()),
        }),
    }
}

mod cluster;
mod model;
#[cfg(test)]
mod query_plans;
#[cfg(test)]
mod tests;

/// Stores one node's results in the caller's transaction (see [`Store::store_results`]).
fn store_node_results(
    tx: &Connection,
    node_id: u64,
    results: &[TaskResult],
) -> StoreResult<Vec<Stored>> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO results (node_id, deployment_id, revision, task_id, attempt, status, result) \
                 SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 \
                 WHERE EXISTS (SELECT 1 FROM deployments WHERE id = ?2 AND status = 'running') \
                 ON CONFLICT DO NOTHING",
    )?;
    let mut exists = tx.prepare_cached(
        "SELECT 1 FROM results WHERE node_id = ?1 AND deployment_id = ?2 AND revision = ?3 \
                 AND task_id = ?4 AND attempt = ?5 AND status = ?6",
    )?;
    let mut out = Vec::with_capacity(results.len());
    for r in results {
        let status = to_json(&r.status);
        let status = status.trim_matches('"');
        let key = params![
            sql_id(node_id),
            sql_id(r.deployment_id),
            sql_id(r.revision),
            r.task_id,
            r.attempt,
            status,
        ];
        let inserted = insert.execute(params![
            sql_id(node_id),
            sql_id(r.deployment_id),
            sql_id(r.revision),
            r.task_id,
            r.attempt,
            status,
            to_json(r)
        ])?;
        out.push(if inserted > 0 {
            Stored::New
        } else if exists.exists(key)? {
            Stored::Duplicate
        } else {
            Stored::Final
        });
    }
    Ok(out)
}

/// Registers one node in a registration's transaction (see [`Store::register_node`]).
fn register_one(
    tx: &Connection,
    reg: &NodeRegistration,
    admission: NodeAdmission,
) -> StoreResult<NodeRecord> {
    let existing: Option<i64> = tx
        .query_row(
            "SELECT id FROM nodes WHERE node_key = ?1",
            [&reg.node_key],
            |r| r.get(0),
        )
        .optional()?;
    let node_id = match existing {
        Some(node_id) => {
            let node = one_node(tx, id(node_id))?;
            if node.admission == NodeAdmission::Accepted {
                let fields = with_reported(&node, reg);
                tx.execute(
                    "UPDATE nodes SET facts = ?2, last_seen = ?3, model = ?4 WHERE id = ?1",
                    params![node_id, to_json(&reg.facts), reg.now_ms, to_json(&fields)],
                )?;
            } else {
                tx.execute(
                        "UPDATE nodes SET facts = ?2, tags = ?3, labels = ?4, rack = ?5, last_seen = ?6 \
                         WHERE id = ?1",
                        params![node_id, to_json(&reg.facts), to_json(&reg.tags), to_json(&reg.labels), reg.rack, reg.now_ms],
                    )?;
            }
            node_id
        }
        None => {
            if admission == NodeAdmission::Discovered {
                let waiting: i64 = tx.query_row(COUNT_DISCOVERED, [], |r| r.get(0))?;
                if u64::try_from(waiting).unwrap_or(0) >= reg.max_discovered {
                    return Err(StoreError::Full(format!(
                            "{waiting} nodes are waiting to be accepted, the most this controller keeps \
                             (max_discovered_nodes): accept or delete some first"
                        )));
                }
            }
            tx.execute(
                    "INSERT INTO nodes (node_key, public_key, name, admission, facts, tags, labels, rack, \
                     registered_at, last_seen) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)",
                    params![
                        reg.node_key,
                        reg.public_key,
                        reg.name,
                        admission_text(admission),
                        to_json(&reg.facts),
                        to_json(&reg.tags),
                        to_json(&reg.labels),
                        reg.rack,
                        reg.now_ms
                    ],
                )?;
            let new_id = tx.last_insert_rowid();
            // Names are unique: a second machine with the same hostname gets its id appended.
            let taken: i64 =
                tx.query_row(COUNT_NAME_TAKEN, params![reg.name, new_id], |r| r.get(0))?;
            if taken > 0 {
                tx.execute(
                    "UPDATE nodes SET name = ?2 WHERE id = ?1",
                    params![new_id, format!("{}-{new_id}", reg.name)],
                )?;
            }
            new_id
        }
    };
    one_node(tx, id(node_id))
}
